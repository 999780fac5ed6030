//! Devices and contexts: the device list, `ibv_open_device` (which plugs the inline fast
//! paths into `ibv_context_ops`), the device, port, GID and P_Key queries, and async events.
use super::cq::{poll_cq, req_notify_cq};
use super::qp::{post_recv, post_send, post_srq_recv};
use super::*;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_list(num: *mut c_int) -> *mut *mut ibv_device {
    let mut g = lock();
    if let Err(e) = load(&mut g) {
        debug("ibv_get_device_list", &e);
        set_errno(errno_of(&e));
        return null_mut();
    }
    let n = g.devices.len();
    if !num.is_null() {
        *num = n as c_int;
    }
    let mut v: Vec<*mut ibv_device> = g.devices.clone();
    v.push(null_mut());
    let b = v.into_boxed_slice();
    Box::into_raw(b) as *mut *mut ibv_device
}
export!(ibv_get_device_list, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_free_device_list(list: *mut *mut ibv_device) {
    free_list(list);
}
export!(ibv_free_device_list, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_name(dev: *mut ibv_device) -> *const c_char {
    if dev.is_null() {
        return null();
    }
    (*dev).name.as_ptr()
}
export!(ibv_get_device_name, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_index(dev: *mut ibv_device) -> c_int {
    let g = lock();
    device_index(&g, dev).map_or(-1, |i| i as c_int)
}
export!(ibv_get_device_index, "IBVERBS_1.9");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_device_guid(dev: *mut ibv_device) -> u64 {
    let g = lock();
    match (device_index(&g, dev), &g.list) {
        (Some(i), Some(l)) => l.entries()[i].guid.to_be(),
        _ => 0,
    }
}
export!(ibv_get_device_guid, "IBVERBS_1.1");

/// Neighbours from `RNIC_PEER` (`IP,MAC[;IP,MAC…]`): the MAC to put in a QP's address
/// vector for a peer GID, until the NIC answers ARP (issue 15).
fn env_peers() -> Vec<(Ipv4Addr, MacAddr)> {
    let Ok(s) = std::env::var("RNIC_PEER") else { return Vec::new() };
    s.split(';')
        .filter_map(|p| {
            let (ip, mac) = p.trim().split_once(',')?;
            let ip: Ipv4Addr = ip.trim().parse().ok()?;
            let b: Vec<u8> = mac.trim().split(':').filter_map(|x| u8::from_str_radix(x, 16).ok()).collect();
            let m: [u8; 6] = b.try_into().ok()?;
            Some((ip, MacAddr(m)))
        })
        .collect()
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_open_device(dev: *mut ibv_device) -> *mut ibv_context {
    let g = lock();
    match open_context(&g, dev) {
        Ok(c) => c,
        Err(e) => {
            set_errno(e);
            null_mut()
        }
    }
}

/// `ibv_open_device`'s work, with the lock held: a new context of `dev` (one of the list's
/// devices), its neighbours and its `ibv_context_ops`. ENODEV for a device not in the list.
pub(super) unsafe fn open_context(g: &Global, dev: *mut ibv_device) -> Result<*mut ibv_context, c_int> {
    let (Some(i), Some(list)) = (device_index(g, dev), &g.list) else {
        return Err(ENODEV);
    };
    let c = list.open(i).map_err(|e| {
        debug("ibv_open_device", &e);
        errno_of(&e)
    })?;
    let mut peers: Vec<(Ipv4Addr, MacAddr)> = list.entries().iter().map(|e| (e.port.ip, e.port.mac)).collect();
    peers.extend(env_peers());
    let mut b: Box<Ctx> =
        Box::new(Ctx { v: zeroed(), ctx: c, peers, qps: Vec::new(), srqs: Vec::new(), cqs: Vec::new() });
    b.v.query_port = Some(query_port_ex);
    b.v.sz = std::mem::size_of::<verbs_context>();
    let cx = &mut b.v.context;
    cx.device = dev;
    cx.cmd_fd = -1;
    cx.async_fd = -1;
    cx.num_comp_vectors = 1;
    cx.abi_compat = VERBS_ABI_IS_EXTENDED;
    cx.ops.poll_cq = Some(poll_cq);
    cx.ops.req_notify_cq = Some(req_notify_cq);
    cx.ops.post_send = Some(post_send);
    cx.ops.post_recv = Some(post_recv);
    cx.ops.post_srq_recv = Some(post_srq_recv);
    let p = Box::into_raw(b);
    Ok(&mut (*p).v.context)
}
export!(ibv_open_device, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_close_device(c: *mut ibv_context) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = ctx(c) as *mut Ctx;
    drop(Box::from_raw(p));
    0
}
export!(ibv_close_device, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_device(c: *mut ibv_context, out: *mut ibv_device_attr) -> c_int {
    if c.is_null() || out.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let a = ctx(c).ctx.query_device();
    let mut d: ibv_device_attr = zeroed();
    copy_cstr(&mut d.fw_ver, &a.fw_ver);
    d.node_guid = a.node_guid.to_be();
    d.sys_image_guid = a.sys_image_guid.to_be();
    d.max_mr_size = a.max_mr_size;
    d.page_size_cap = a.page_size_cap;
    d.vendor_id = a.vendor_id;
    d.vendor_part_id = a.vendor_part_id;
    d.hw_ver = a.hw_ver;
    let i = |v: u32| v.min(i32::MAX as u32) as c_int;
    d.max_qp = i(a.max_qp);
    d.max_qp_wr = i(a.max_qp_wr);
    d.device_cap_flags = a.device_cap_flags.bits();
    d.max_sge = i(a.max_sge);
    d.max_sge_rd = i(a.max_sge_rd);
    d.max_cq = i(a.max_cq);
    d.max_cqe = i(a.max_cqe);
    d.max_mr = i(a.max_mr);
    d.max_pd = i(a.max_pd);
    d.max_qp_rd_atom = i(a.max_qp_rd_atom);
    d.max_res_rd_atom = i(a.max_res_rd_atom);
    d.max_qp_init_rd_atom = i(a.max_qp_init_rd_atom);
    d.atomic_cap = a.atomic_cap as c_int;
    d.max_ah = i(a.max_ah);
    d.max_srq = i(a.max_srq);
    d.max_srq_wr = i(a.max_srq_wr);
    d.max_srq_sge = i(a.max_srq_sge);
    d.max_pkeys = a.max_pkeys;
    d.local_ca_ack_delay = a.local_ca_ack_delay;
    d.phys_port_cnt = a.phys_port_cnt;
    *out = d;
    0
}
export!(ibv_query_device, "IBVERBS_1.1");

unsafe fn fill_port(c: *mut ibv_context, port: u8, out: *mut ibv_port_attr, len: usize) -> c_int {
    if c.is_null() || out.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = match ctx(c).ctx.query_port(port) {
        Ok(p) => p,
        Err(e) => return errno_of(&e),
    };
    let a = ibv_port_attr {
        state: p.state as c_int,
        max_mtu: p.max_mtu as c_int,
        active_mtu: p.active_mtu as c_int,
        gid_tbl_len: p.gid_tbl_len as c_int,
        port_cap_flags: p.port_cap_flags,
        max_msg_sz: p.max_msg_sz,
        pkey_tbl_len: p.pkey_tbl_len,
        lid: p.lid,
        max_vl_num: p.max_vl_num,
        active_width: p.active_width,
        active_speed: p.active_speed,
        phys_state: p.phys_state,
        link_layer: p.link_layer,
        ..Default::default()
    };
    let n = len.min(std::mem::size_of::<ibv_port_attr>());
    std::ptr::copy_nonoverlapping(&a as *const ibv_port_attr as *const u8, out as *mut u8, n);
    0
}

/// `verbs_context.query_port`, which the inline `ibv_query_port` calls with the caller's
/// `sizeof(struct ibv_port_attr)`.
unsafe extern "C" fn query_port_ex(c: *mut ibv_context, port: u8, out: *mut ibv_port_attr, len: usize) -> c_int {
    fill_port(c, port, out, len)
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_port(c: *mut ibv_context, port: u8, out: *mut ibv_port_attr) -> c_int {
    fill_port(c, port, out, COMPAT_PORT_ATTR_LEN)
}
export!(ibv_query_port, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_gid(c: *mut ibv_context, port: u8, index: c_int, gid: *mut [u8; 16]) -> c_int {
    if c.is_null() || gid.is_null() || index < 0 {
        return -1;
    }
    let _g = lock();
    match ctx(c).ctx.query_gid(port, index as u32) {
        Ok(g) => {
            *gid = g.0;
            0
        }
        Err(e) => {
            set_errno(errno_of(&e));
            -1
        }
    }
}
export!(ibv_query_gid, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_gid_type(c: *mut ibv_context, port: u8, index: u32, ty: *mut u32) -> c_int {
    if c.is_null() || ty.is_null() {
        return EINVAL;
    }
    let _g = lock();
    // This private call answers in `enum ibv_gid_type_sysfs` (0 IB / RoCE v1, 1 RoCE v2),
    // not `enum ibv_gid_type`.
    match ctx(c).ctx.query_gid_type(port, index) {
        Ok(t) => {
            *ty = match t {
                rnic::GidType::RoceV2 => 1,
                _ => 0,
            };
            0
        }
        Err(e) => errno_of(&e),
    }
}
export!(ibv_query_gid_type, "IBVERBS_PRIVATE_34");

#[no_mangle]
pub unsafe extern "C" fn rnic__ibv_query_gid_ex(
    c: *mut ibv_context,
    port: u32,
    index: u32,
    entry: *mut ibv_gid_entry,
    flags: u32,
    len: usize,
) -> c_int {
    if c.is_null() || entry.is_null() || flags != 0 || len < std::mem::size_of::<ibv_gid_entry>() {
        return EINVAL;
    }
    let _g = lock();
    let port8 = u8::try_from(port).unwrap_or(0);
    let cx = &ctx(c).ctx;
    match (cx.query_gid(port8, index), cx.query_gid_type(port8, index)) {
        (Ok(g), Ok(t)) if !g.is_zero() => {
            *entry = ibv_gid_entry {
                gid: ibv_gid { raw: g.0 },
                gid_index: index,
                port_num: port,
                gid_type: t as u32,
                ndev_ifindex: 0,
            };
            0
        }
        (Ok(_), Ok(_)) => 61, // ENODATA: an empty entry
        (Err(e), _) | (_, Err(e)) => errno_of(&e),
    }
}
export!(_ibv_query_gid_ex, "IBVERBS_1.11");

#[no_mangle]
pub unsafe extern "C" fn rnic__ibv_query_gid_table(
    c: *mut ibv_context,
    entries: *mut ibv_gid_entry,
    max: usize,
    flags: u32,
    len: usize,
) -> isize {
    if c.is_null() || entries.is_null() || flags != 0 || len < std::mem::size_of::<ibv_gid_entry>() {
        return -(EINVAL as isize);
    }
    let _g = lock();
    let cx = &ctx(c).ctx;
    let mut n = 0;
    for index in 0..rnic::query::GID_TABLE_LEN {
        if n == max {
            break;
        }
        if let Ok(g) = cx.query_gid(1, index) {
            if !g.is_zero() {
                *entries.add(n) = ibv_gid_entry {
                    gid: ibv_gid { raw: g.0 },
                    gid_index: index,
                    port_num: 1,
                    gid_type: 2,
                    ndev_ifindex: 0,
                };
                n += 1;
            }
        }
    }
    n as isize
}
export!(_ibv_query_gid_table, "IBVERBS_1.11");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_pkey(c: *mut ibv_context, port: u8, index: c_int, pkey: *mut u16) -> c_int {
    if c.is_null() || pkey.is_null() {
        return -1;
    }
    let _g = lock();
    match ctx(c).ctx.query_pkey(port, u16::try_from(index).unwrap_or(u16::MAX)) {
        Ok(k) => {
            *pkey = k.to_be();
            0
        }
        Err(e) => {
            set_errno(errno_of(&e));
            -1
        }
    }
}
export!(ibv_query_pkey, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_pkey_index(c: *mut ibv_context, port: u8, pkey: u16) -> c_int {
    if c.is_null() || port != 1 || u16::from_be(pkey) != 0xFFFF {
        return -1;
    }
    0
}
export!(ibv_get_pkey_index, "IBVERBS_1.5");

// ---- async events ----

/// How long one wait of `ibv_get_async_event` holds the library lock before letting other
/// threads' verbs in.
const ASYNC_WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

/// `ibv_get_async_event(3)`: blocks until the next asynchronous event and fills `ev`:
/// `element.qp` / `element.srq` / `element.cq` is the program's own `ibv_qp` / `ibv_srq` /
/// `ibv_cq` of the event (`IBV_EVENT_CQ_ERR`: the CQ that overran; null if the program has
/// destroyed it since), `event_type` the `enum ibv_event_type` value. The wait
/// runs in slices of [`ASYNC_WAIT_SLICE`] with the library lock released between them, so other
/// threads keep using the context meanwhile. `async_fd` is -1 (there is no fd to make
/// non-blocking or to poll): a program that must not block calls this from its own thread, as
/// ibv_asyncwatch does. Returns -1 with errno EINVAL for null arguments, or the backend's errno.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_async_event(c: *mut ibv_context, ev: *mut ibv_async_event) -> c_int {
    if c.is_null() || ev.is_null() {
        set_errno(EINVAL);
        return -1;
    }
    loop {
        let _g = lock();
        let cx = ctx(c);
        match cx.ctx.get_async_event_timeout(ASYNC_WAIT_SLICE) {
            Ok(Some(e)) => {
                let (element, event_type) = match e {
                    AsyncEvent::Qp { event_type, qp_num } => (
                        cx.qps.iter().find(|(n, _)| *n == qp_num).map_or(null_mut(), |(_, p)| *p as *mut c_void),
                        event_type,
                    ),
                    AsyncEvent::SrqLimitReached { srq_num, .. } => (
                        cx.srqs.iter().find(|(n, _)| *n == srq_num).map_or(null_mut(), |(_, p)| *p as *mut c_void),
                        e.event_type(),
                    ),
                    AsyncEvent::CqErr { cq_num } => (
                        cx.cqs.iter().find(|(n, _)| *n == cq_num).map_or(null_mut(), |(_, p)| *p as *mut c_void),
                        e.event_type(),
                    ),
                };
                (*ev).element = element;
                (*ev).event_type = event_type as c_int;
                return 0;
            }
            Ok(None) => {}
            Err(e) => {
                set_errno(errno_of(&e));
                return -1;
            }
        }
        drop(_g);
        std::thread::yield_now();
    }
}
export!(ibv_get_async_event, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_ack_async_event(_ev: *mut ibv_async_event) {}
export!(ibv_ack_async_event, "IBVERBS_1.1");
