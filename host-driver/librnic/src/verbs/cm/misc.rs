//! The rest of librdmacm's calls: ports and addresses of an id, `rdma_get_devices`,
//! `rdma_migrate_id`, `rdma_set_option`, `rdma_init_qp_attr` (INIT), `rdma_getaddrinfo`,
//! `rdma_event_str`, `rpoll`, and the calls rnic does not support.
use super::*;

unsafe fn port_of(s: &libc::sockaddr_storage) -> u16 {
    (*(s as *const libc::sockaddr_storage as *const libc::sockaddr_in)).sin_port
}

/// `rdma_get_src_port(3)`: the local port, network byte order (0 if unbound).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_src_port(id: *mut rdma_cm_id) -> u16 {
    if id.is_null() {
        return 0;
    }
    port_of(&(*id).route.addr.src_storage)
}
export!(rdma_get_src_port, "RDMACM_1.0");

/// `rdma_get_dst_port(3)`: the peer's port, network byte order.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_dst_port(id: *mut rdma_cm_id) -> u16 {
    if id.is_null() {
        return 0;
    }
    port_of(&(*id).route.addr.dst_storage)
}
export!(rdma_get_dst_port, "RDMACM_1.0");

/// `rdma_get_devices(3)`: the ports' contexts (every device gets its port), null-terminated.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_devices(num_devices: *mut c_int) -> *mut *mut ibv_context {
    let mut g = lock();
    if let Err(e) = load(&mut g) {
        set_errno(errno_of(&e));
        return null_mut();
    }
    let mut out = Vec::new();
    for dev in 0..g.devices.len() {
        match port_for(&mut g, dev) {
            Ok(pi) => out.push(g.cm_ports[pi].ctx),
            Err(e) => {
                set_errno(e);
                return null_mut();
            }
        }
    }
    if !num_devices.is_null() {
        *num_devices = out.len() as c_int;
    }
    out.push(null_mut());
    Box::into_raw(out.into_boxed_slice()) as *mut *mut ibv_context
}
export!(rdma_get_devices, "RDMACM_1.0");

/// `rdma_free_devices(3)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_free_devices(list: *mut *mut ibv_context) {
    free_list(list);
}
export!(rdma_free_devices, "RDMACM_1.0");

/// `rdma_migrate_id(3)`: the id's later events go to `channel`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_migrate_id(id: *mut rdma_cm_id, channel: *mut rdma_event_channel) -> c_int {
    if id.is_null() || channel.is_null() {
        return ret(Err(EINVAL));
    }
    let _g = lock();
    (*id).channel = channel;
    0
}
export!(rdma_migrate_id, "RDMACM_1.0");

/// `rdma_set_option(3)`: `RDMA_OPTION_ID_REUSEADDR` and `RDMA_OPTION_ID_AFONLY` are taken
/// (they change nothing here); the type of service and ACK timeout are not settable (ENOSYS).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_set_option(
    id: *mut rdma_cm_id,
    level: c_int,
    optname: c_int,
    _optval: *mut c_void,
    _optlen: usize,
) -> c_int {
    if id.is_null() {
        return ret(Err(EINVAL));
    }
    match (level, optname) {
        (0, 1) | (0, 2) => 0,
        _ => {
            debug("rdma_set_option", &format!("level {level} option {optname} is not supported"));
            ret(Err(ENOSYS))
        }
    }
}
export!(rdma_set_option, "RDMACM_1.0");

/// `rdma_init_qp_attr(3)` for INIT (P_Key index 0, port 1, remote READ and WRITE): the
/// state a QP made with `ibv_create_qp` needs before its receives are posted. RTR and RTS
/// are not given: rnic's CM connects only the QP of `rdma_create_qp` (EOPNOTSUPP).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_init_qp_attr(
    id: *mut rdma_cm_id,
    attr: *mut ibv_qp_attr,
    mask: *mut c_int,
) -> c_int {
    if id.is_null() || attr.is_null() || mask.is_null() {
        return ret(Err(EINVAL));
    }
    if (*attr).qp_state != 1 {
        debug("rdma_init_qp_attr", &"only IBV_QPS_INIT: rnic's CM moves the QP of rdma_create_qp itself");
        return ret(Err(EOPNOTSUPP));
    }
    (*attr).pkey_index = 0;
    (*attr).port_num = 1;
    (*attr).qp_access_flags = (AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ).bits();
    *mask = (QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS).bits() as c_int;
    0
}
export!(rdma_init_qp_attr, "RDMACM_1.2");

/// `rpoll`: rnic has no rsockets, so every descriptor is a kernel one: `poll(2)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rpoll(fds: *mut libc::pollfd, nfds: libc::nfds_t, timeout: c_int) -> c_int {
    libc::poll(fds, nfds, timeout)
}
export!(rpoll, "RDMACM_1.0");

/// Defines librdmacm calls rnic does not support: they fail with EOPNOTSUPP (and say so
/// under `RNIC_DEBUG`); a pointer-returning one returns null.
macro_rules! unsupported {
    ($($name:ident($($arg:ident: $t:ty),*) -> $r:ty = $v:expr, $ver:literal;)*) => {$(
        paste_unsupported!($name, ($($arg: $t),*), $r, $v, $ver);
    )*};
}
macro_rules! paste_unsupported {
    ($name:ident, ($($arg:ident: $t:ty),*), $r:ty, $v:expr, $ver:literal) => {
        #[export_name = concat!("rnic_", stringify!($name))]
        pub unsafe extern "C" fn $name($(_: $t),*) -> $r {
            debug(stringify!($name), &"not supported by rnic");
            set_errno(EOPNOTSUPP);
            $v
        }
        export!($name, $ver);
    };
}

unsupported! {
    rdma_create_qp_ex(a: *mut rdma_cm_id, b: *mut c_void) -> c_int = -1, "RDMACM_1.0";
    rdma_establish(a: *mut rdma_cm_id) -> c_int = -1, "RDMACM_1.2";
    rdma_create_ep(a: *mut *mut rdma_cm_id, b: *mut rdma_addrinfo, c: *mut ibv_pd, d: *mut ibv_qp_init_attr) -> c_int = -1, "RDMACM_1.0";
    rdma_join_multicast(a: *mut rdma_cm_id, b: *mut libc::sockaddr, c: *mut c_void) -> c_int = -1, "RDMACM_1.0";
    rdma_leave_multicast(a: *mut rdma_cm_id, b: *mut libc::sockaddr) -> c_int = -1, "RDMACM_1.0";
    rdma_join_multicast_ex(a: *mut rdma_cm_id, b: *mut c_void, c: *mut c_void) -> c_int = -1, "RDMACM_1.1";
    rdma_create_srq(a: *mut rdma_cm_id, b: *mut ibv_pd, c: *mut ibv_srq_init_attr) -> c_int = -1, "RDMACM_1.0";
    rdma_create_srq_ex(a: *mut rdma_cm_id, b: *mut c_void) -> c_int = -1, "RDMACM_1.0";
    rdma_set_local_ece(a: *mut rdma_cm_id, b: *mut c_void) -> c_int = -1, "RDMACM_1.3";
    rdma_get_remote_ece(a: *mut rdma_cm_id, b: *mut c_void) -> c_int = -1, "RDMACM_1.3";
}

/// `rdma_destroy_ep(3)` of an id `rdma_create_ep` (unsupported) cannot have made: destroys
/// the id.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_ep(id: *mut rdma_cm_id) {
    destroy_id(id);
}
export!(rdma_destroy_ep, "RDMACM_1.0");

/// `rdma_destroy_srq(3)`: no SRQ can have been made through an id.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_srq(_id: *mut rdma_cm_id) {}
export!(rdma_destroy_srq, "RDMACM_1.0");

/// `RAI_PASSIVE`: the address is the local one to bind and listen on.
const RAI_PASSIVE: c_int = 1;

/// `rdma_getaddrinfo(3)` for IPv4: `node` (a name `getaddrinfo(3)` resolves, or an address;
/// none with `RAI_PASSIVE` is 0.0.0.0) and `service` (a port number) become one
/// `rdma_addrinfo`: the source address if `hints` has `RAI_PASSIVE`, else the destination
/// (and the hints' source, if any). Port space and QP type are the hints' or
/// `RDMA_PS_TCP` / `IBV_QPT_RC`; no route or connect data. Returns 0, or a `getaddrinfo`
/// error code (`EAI_*`, as librdmacm passes them on).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const rdma_addrinfo,
    res: *mut *mut rdma_addrinfo,
) -> c_int {
    if res.is_null() || (node.is_null() && service.is_null()) {
        return libc::EAI_NONAME;
    }
    let h = hints.as_ref();
    let flags = h.map_or(0, |h| h.ai_flags);
    if h.is_some_and(|h| h.ai_family != 0 && h.ai_family != libc::AF_INET) {
        return libc::EAI_FAMILY;
    }
    let port: u16 = if service.is_null() {
        0
    } else {
        match std::ffi::CStr::from_ptr(service).to_str().ok().and_then(|s| s.parse().ok()) {
            Some(p) => p,
            None => return libc::EAI_SERVICE,
        }
    };
    let ip = if node.is_null() {
        Ipv4Addr::UNSPECIFIED
    } else {
        let mut gh: libc::addrinfo = zeroed();
        gh.ai_family = libc::AF_INET;
        let mut out: *mut libc::addrinfo = null_mut();
        let r = libc::getaddrinfo(node, null(), &gh, &mut out);
        if r != 0 {
            return r;
        }
        let sin = &*((*out).ai_addr as *const libc::sockaddr_in);
        let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
        libc::freeaddrinfo(out);
        ip
    };
    let sa = |a: SocketAddrV4| -> *mut libc::sockaddr {
        let p = libc::calloc(1, std::mem::size_of::<libc::sockaddr_in>()) as *mut libc::sockaddr_in;
        if !p.is_null() {
            (*p).sin_family = libc::AF_INET as libc::sa_family_t;
            (*p).sin_port = a.port().to_be();
            (*p).sin_addr.s_addr = u32::from(*a.ip()).to_be();
        }
        p.cast()
    };
    let ai = libc::calloc(1, std::mem::size_of::<rdma_addrinfo>()) as *mut rdma_addrinfo;
    if ai.is_null() {
        return libc::EAI_MEMORY;
    }
    let a = &mut *ai;
    a.ai_flags = flags;
    a.ai_family = libc::AF_INET;
    a.ai_qp_type = h.map_or(QPT_RC, |h| if h.ai_qp_type == 0 { QPT_RC } else { h.ai_qp_type });
    a.ai_port_space = h.map_or(RDMA_PS_TCP, |h| if h.ai_port_space == 0 { RDMA_PS_TCP } else { h.ai_port_space });
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    if flags & RAI_PASSIVE != 0 {
        a.ai_src_addr = sa(SocketAddrV4::new(ip, port));
        a.ai_src_len = len;
    } else {
        a.ai_dst_addr = sa(SocketAddrV4::new(ip, port));
        a.ai_dst_len = len;
        if let Some(src) = h.filter(|h| !h.ai_src_addr.is_null()).and_then(|h| sockaddr_v4(h.ai_src_addr).ok()) {
            a.ai_src_addr = sa(src);
            a.ai_src_len = len;
        }
    }
    *res = ai;
    0
}
export!(rdma_getaddrinfo, "RDMACM_1.0");

/// `rdma_freeaddrinfo(3)`: the list `rdma_getaddrinfo` made.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_freeaddrinfo(res: *mut rdma_addrinfo) {
    let mut p = res;
    while !p.is_null() {
        let next = (*p).ai_next;
        libc::free((*p).ai_src_addr.cast());
        libc::free((*p).ai_dst_addr.cast());
        libc::free((*p).ai_src_canonname.cast());
        libc::free((*p).ai_dst_canonname.cast());
        libc::free((*p).ai_route);
        libc::free((*p).ai_connect);
        libc::free(p.cast());
        p = next;
    }
}
export!(rdma_freeaddrinfo, "RDMACM_1.0");

/// `rdma_event_str(3)`: librdmacm's names of the events.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_event_str(event: c_int) -> *const c_char {
    let s: &'static [u8] = match event {
        0 => b"RDMA_CM_EVENT_ADDR_RESOLVED\0",
        1 => b"RDMA_CM_EVENT_ADDR_ERROR\0",
        2 => b"RDMA_CM_EVENT_ROUTE_RESOLVED\0",
        3 => b"RDMA_CM_EVENT_ROUTE_ERROR\0",
        4 => b"RDMA_CM_EVENT_CONNECT_REQUEST\0",
        5 => b"RDMA_CM_EVENT_CONNECT_RESPONSE\0",
        6 => b"RDMA_CM_EVENT_CONNECT_ERROR\0",
        7 => b"RDMA_CM_EVENT_UNREACHABLE\0",
        8 => b"RDMA_CM_EVENT_REJECTED\0",
        9 => b"RDMA_CM_EVENT_ESTABLISHED\0",
        10 => b"RDMA_CM_EVENT_DISCONNECTED\0",
        11 => b"RDMA_CM_EVENT_DEVICE_REMOVAL\0",
        12 => b"RDMA_CM_EVENT_MULTICAST_JOIN\0",
        13 => b"RDMA_CM_EVENT_MULTICAST_ERROR\0",
        14 => b"RDMA_CM_EVENT_ADDR_CHANGE\0",
        15 => b"RDMA_CM_EVENT_TIMEWAIT_EXIT\0",
        _ => b"UNKNOWN EVENT\0",
    };
    s.as_ptr().cast()
}
export!(rdma_event_str, "RDMACM_1.0");
