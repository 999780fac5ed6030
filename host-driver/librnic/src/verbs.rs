//! The exported `ibv_*` functions. Each is `rnic_<name>`, given its rdma-core name and
//! version by a `.symver` directive ([`export!`]); `libibverbs.symbols` lists them.
use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, zeroed};
use std::net::Ipv4Addr;
use std::ptr::{null, null_mut};
use std::sync::{Mutex, MutexGuard};

use rnic::{
    AccessFlags, AddressVector, CompletionChannel, CompletionQueue, Context, DeviceList, Error, MacAddr, MemoryRegion,
    Mtu, ProtectionDomain, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr, SendFlags, SendWr, Sge, SharedReceiveQueue,
    WorkCompletion, WrOpcode,
};

use crate::abi::*;

/// Gives `rnic_<name>` the symbol `<name>@@<version>`.
macro_rules! export {
    ($name:ident, $ver:literal) => {
        std::arch::global_asm!(concat!(".symver rnic_", stringify!($name), ", ", stringify!($name), "@@", $ver));
    };
}

const EINVAL: c_int = 22;
const EAGAIN: c_int = 11;
const EBUSY: c_int = 16;
const EOPNOTSUPP: c_int = 95;
const ENODEV: c_int = 19;

extern "C" {
    fn __errno_location() -> *mut c_int;
}

fn set_errno(e: c_int) {
    // SAFETY: glibc's thread-local errno.
    unsafe { *__errno_location() = e };
}

fn errno_of(e: &Error) -> c_int {
    e.errno() as c_int
}

/// Reports `e` on stderr when `RNIC_DEBUG` is set (the C API has only errno).
fn debug(what: &str, e: &dyn std::fmt::Display) {
    if std::env::var_os("RNIC_DEBUG").is_some() {
        eprintln!("librnic: {what}: {e}");
    }
}

/// Process-wide state: the device list and its `struct ibv_device`s, which live as long as
/// the process (as libibverbs keeps its devices).
struct Global {
    list: Option<DeviceList>,
    devices: Vec<*mut ibv_device>,
}

// SAFETY: the state (and every verbs object, reached only through it or through pointers the
// program holds) is touched only with `LOCK` held, so the single-threaded driver objects are
// never used by two threads at once.
unsafe impl Send for Global {}

static LOCK: Mutex<Global> = Mutex::new(Global { list: None, devices: Vec::new() });

fn lock() -> MutexGuard<'static, Global> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn load(g: &mut Global) -> Result<(), Error> {
    if g.list.is_some() {
        return Ok(());
    }
    let list = DeviceList::from_env()?;
    for e in list.entries() {
        // SAFETY: all-zero is a valid ibv_device.
        let mut d: Box<ibv_device> = Box::new(unsafe { zeroed() });
        d.node_type = 1; // IBV_NODE_CA
        d.transport_type = 0; // IBV_TRANSPORT_IB (RoCE devices report IB)
        copy_cstr(&mut d.name, &e.name);
        copy_cstr(&mut d.dev_name, &e.name);
        g.devices.push(Box::into_raw(d));
    }
    g.list = Some(list);
    Ok(())
}

fn copy_cstr(to: &mut [c_char], s: &str) {
    for (i, b) in s.bytes().take(to.len() - 1).enumerate() {
        to[i] = b as c_char;
    }
}

fn device_index(g: &Global, dev: *mut ibv_device) -> Option<usize> {
    g.devices.iter().position(|&d| d == dev)
}

// ---- objects: the C struct first, the driver object after it ----

#[repr(C)]
struct Ctx {
    v: verbs_context,
    ctx: Context,
    /// Known neighbours: the devices of the list and `RNIC_PEER`.
    peers: Vec<(Ipv4Addr, MacAddr)>,
}

#[repr(C)]
struct Pd {
    ibv: ibv_pd,
    pd: ProtectionDomain,
}

#[repr(C)]
struct Mr {
    ibv: ibv_mr,
    mr: MemoryRegion<'static>,
}

#[repr(C)]
struct Cq {
    ibv: ibv_cq,
    cq: CompletionQueue,
}

#[repr(C)]
struct Chan {
    ibv: ibv_comp_channel,
    ch: CompletionChannel,
    /// The CQs created with this channel: (CQ number, the program's `ibv_cq`).
    cqs: Vec<(u32, *mut ibv_cq)>,
}

#[repr(C)]
struct Qp {
    ibv: ibv_qp,
    qp: QueuePair<'static>,
    sq_sig_all: bool,
}

#[repr(C)]
struct Srq {
    ibv: ibv_srq,
    srq: SharedReceiveQueue<'static>,
}

unsafe fn ctx<'a>(c: *mut ibv_context) -> &'a mut Ctx {
    &mut *((c as *mut u8).sub(offset_of!(verbs_context, context)) as *mut Ctx)
}

unsafe fn obj<'a, T>(p: *mut impl Sized) -> &'a mut T {
    &mut *(p as *mut T)
}

/// Frees the allocation of a boxed object whose driver object was moved out (the C struct
/// in front of it has no destructor).
unsafe fn free_shell<T>(p: *mut T) {
    std::alloc::dealloc(p as *mut u8, std::alloc::Layout::new::<T>());
}

// ---- devices ----

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
    if list.is_null() {
        return;
    }
    let mut n = 0;
    while !(*list.add(n)).is_null() {
        n += 1;
    }
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(list, n + 1)));
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
    let (Some(i), Some(list)) = (device_index(&g, dev), &g.list) else {
        set_errno(ENODEV);
        return null_mut();
    };
    let c = match list.open(i) {
        Ok(c) => c,
        Err(e) => {
            debug("ibv_open_device", &e);
            set_errno(errno_of(&e));
            return null_mut();
        }
    };
    let mut peers: Vec<(Ipv4Addr, MacAddr)> = list.entries().iter().map(|e| (e.port.ip, e.port.mac)).collect();
    peers.extend(env_peers());
    let mut b: Box<Ctx> = Box::new(Ctx { v: zeroed(), ctx: c, peers });
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
    &mut (*p).v.context
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

// ---- PD and MR ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_alloc_pd(c: *mut ibv_context) -> *mut ibv_pd {
    if c.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    match ctx(c).ctx.alloc_pd() {
        Ok(pd) => {
            let handle = pd.pdn();
            Box::into_raw(Box::new(Pd { ibv: ibv_pd { context: c, handle }, pd })) as *mut ibv_pd
        }
        Err(e) => {
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_alloc_pd, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int {
    if pd.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = pd as *mut Pd;
    // Moved out; written back in place if refused (the program keeps its pointer).
    let q = std::ptr::read(&(*p).pd);
    match q.dealloc() {
        Ok(()) => {
            free_shell(p);
            0
        }
        Err(r) => {
            debug("ibv_dealloc_pd", &r);
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).pd, r.object);
            e
        }
    }
}
export!(ibv_dealloc_pd, "IBVERBS_1.1");

/// `IBV_ACCESS_OPTIONAL_RANGE`: access bits a provider may ignore.
const ACCESS_OPTIONAL_RANGE: u32 = 0x3ff0_0000;

fn access_of(access: c_int) -> Result<AccessFlags, c_int> {
    let a = access as u32 & !ACCESS_OPTIONAL_RANGE;
    AccessFlags::from_bits(a).ok_or(EOPNOTSUPP)
}

unsafe fn reg_mr(pd: *mut ibv_pd, addr: *mut c_void, len: usize, iova: u64, access: c_int) -> *mut ibv_mr {
    if pd.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    if iova != addr as u64 {
        // The NIC translates the buffer's own virtual address (the MR entry's VA).
        set_errno(EOPNOTSUPP);
        return null_mut();
    }
    let flags = match access_of(access) {
        Ok(f) => f,
        Err(e) => {
            set_errno(e);
            return null_mut();
        }
    };
    let _g = lock();
    let p = obj::<Pd>(pd);
    match MemoryRegion::register_raw(&p.pd, addr as *mut u8, len, flags) {
        Ok(mr) => {
            let ibv = ibv_mr {
                context: p.ibv.context,
                pd,
                addr,
                length: len,
                handle: mr.lkey(),
                lkey: mr.lkey(),
                rkey: mr.rkey(),
            };
            Box::into_raw(Box::new(Mr { ibv, mr })) as *mut ibv_mr
        }
        Err(e) => {
            debug("ibv_reg_mr", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, len: usize, access: c_int) -> *mut ibv_mr {
    reg_mr(pd, addr, len, addr as u64, access)
}
export!(ibv_reg_mr, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr_iova(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: c_int,
) -> *mut ibv_mr {
    reg_mr(pd, addr, len, iova, access)
}
export!(ibv_reg_mr_iova, "IBVERBS_1.7");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr_iova2(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: u32,
) -> *mut ibv_mr {
    reg_mr(pd, addr, len, iova, access as c_int)
}
export!(ibv_reg_mr_iova2, "IBVERBS_1.8");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dereg_mr(mr: *mut ibv_mr) -> c_int {
    if mr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let b = Box::from_raw(mr as *mut Mr);
    match b.mr.deregister() {
        Ok(()) => 0,
        Err(e) => errno_of(&e),
    }
}
export!(ibv_dereg_mr, "IBVERBS_1.1");

/// `ibv_rereg_mr(3)` flags.
const REREG_CHANGE_TRANSLATION: c_int = 1;
const REREG_CHANGE_PD: c_int = 2;
const REREG_CHANGE_ACCESS: c_int = 4;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_rereg_mr(
    mr: *mut ibv_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    access: c_int,
) -> c_int {
    if mr.is_null() || flags & !(REREG_CHANGE_TRANSLATION | REREG_CHANGE_PD | REREG_CHANGE_ACCESS) != 0 {
        return EINVAL;
    }
    let _g = lock();
    let m = obj::<Mr>(mr);
    let access = if flags & REREG_CHANGE_ACCESS != 0 {
        match access_of(access) {
            Ok(a) => Some(a),
            Err(e) => return e,
        }
    } else {
        None
    };
    if flags & REREG_CHANGE_PD != 0 {
        if pd.is_null() {
            return EINVAL;
        }
        if let Err(e) = m.mr.rereg(Some(&obj::<Pd>(pd).pd), access) {
            return errno_of(&e);
        }
        m.ibv.pd = pd;
    } else if flags & REREG_CHANGE_TRANSLATION == 0 {
        if let Err(e) = m.mr.rereg(None, access) {
            return errno_of(&e);
        }
    }
    if flags & REREG_CHANGE_TRANSLATION != 0 {
        if let Err(e) = m.mr.rereg_translation_raw(addr as *mut u8, len, access) {
            return errno_of(&e);
        }
        m.ibv.addr = addr;
        m.ibv.length = len;
    }
    0
}
export!(ibv_rereg_mr, "IBVERBS_1.1");

// ---- CQ ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_cq(
    c: *mut ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut ibv_cq {
    if c.is_null() || cqe <= 0 {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    // Twice the entries asked for (rounded up to a power of two by the driver): the driver
    // refuses a QP whose SQ and RQ could overrun its CQs, and programs size CQs as their
    // queue depths without that rounding.
    let want = (cqe as usize).saturating_mul(2).min(rnic::cq::MAX_CQE).max(cqe as usize);
    let made = if channel.is_null() {
        ctx(c).ctx.create_cq(want)
    } else {
        ctx(c).ctx.create_cq_with_channel(want, &obj::<Chan>(channel).ch)
    };
    match made {
        Ok(cq) => {
            let mut ibv: ibv_cq = zeroed();
            ibv.context = c;
            ibv.channel = channel;
            ibv.cq_context = cq_context;
            ibv.handle = cq.cqn();
            ibv.cqe = cq.capacity() as c_int;
            let cqn = cq.cqn();
            let p = Box::into_raw(Box::new(Cq { ibv, cq })) as *mut ibv_cq;
            if !channel.is_null() {
                let ch = obj::<Chan>(channel);
                ch.cqs.push((cqn, p));
                ch.ibv.refcnt += 1;
            }
            p
        }
        Err(e) => {
            debug("ibv_create_cq", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_cq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_resize_cq(cq: *mut ibv_cq, cqe: c_int) -> c_int {
    if cq.is_null() || cqe <= 0 {
        return EINVAL;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    match c.cq.resize(cqe as usize) {
        Ok(()) => {
            c.ibv.cqe = c.cq.capacity() as c_int;
            0
        }
        Err(e) => errno_of(&e),
    }
}
export!(ibv_resize_cq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_cq(cq: *mut ibv_cq) -> c_int {
    if cq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = cq as *mut Cq;
    let channel = (*p).ibv.channel;
    let q = std::ptr::read(&(*p).cq);
    match q.destroy() {
        Ok(()) => {
            if !channel.is_null() {
                let ch = obj::<Chan>(channel);
                ch.cqs.retain(|c| c.1 != cq);
                ch.ibv.refcnt -= 1;
            }
            free_shell(p);
            0
        }
        Err(r) => {
            debug("ibv_destroy_cq", &r);
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).cq, r.object);
            e
        }
    }
}
export!(ibv_destroy_cq, "IBVERBS_1.1");

unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    if cq.is_null() || n < 0 || (n > 0 && wc.is_null()) {
        return -EINVAL;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    let mut buf = [WorkCompletion::default(); 16];
    let mut done = 0usize;
    while done < n as usize {
        let k = (n as usize - done).min(buf.len());
        let got = match c.cq.poll(&mut buf[..k]) {
            Ok(g) => g,
            Err(e) => return -errno_of(&e),
        };
        for w in &buf[..got] {
            *wc.add(done) = ibv_wc {
                wr_id: w.wr_id,
                status: c_int::from(w.status.as_raw()),
                opcode: c_int::from(w.opcode.as_raw()),
                byte_len: w.byte_len,
                imm_data: w.imm_data.to_be(),
                qp_num: w.qp_num,
                wc_flags: u32::from(w.wc_flags.bits()),
                ..Default::default()
            };
            done += 1;
        }
        if got < k {
            break;
        }
    }
    done as c_int
}

/// `ibv_req_notify_cq(3)` (inline in the header, through `ibv_context_ops`): arms the CQ
/// ([`CompletionQueue::req_notify`]). Returns 0 or an errno value (EINVAL: no channel).
unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, solicited: c_int) -> c_int {
    if cq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    match obj::<Cq>(cq).cq.req_notify(solicited != 0) {
        Ok(()) => 0,
        Err(e) => {
            debug("ibv_req_notify_cq", &e);
            errno_of(&e)
        }
    }
}

// ---- completion channels ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_comp_channel(c: *mut ibv_context) -> *mut ibv_comp_channel {
    if c.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    match ctx(c).ctx.create_comp_channel() {
        Ok(ch) => {
            let ibv = ibv_comp_channel { context: c, fd: ch.fd(), refcnt: 0 };
            Box::into_raw(Box::new(Chan { ibv, ch, cqs: Vec::new() })) as *mut ibv_comp_channel
        }
        Err(e) => {
            debug("ibv_create_comp_channel", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_comp_channel, "IBVERBS_1.0");

/// `ibv_destroy_comp_channel(3)`: 0, or EBUSY while CQs use the channel.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_comp_channel(channel: *mut ibv_comp_channel) -> c_int {
    if channel.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = channel as *mut Chan;
    if (*p).ibv.refcnt != 0 || !(*p).cqs.is_empty() {
        return EBUSY;
    }
    drop(Box::from_raw(p));
    0
}
export!(ibv_destroy_comp_channel, "IBVERBS_1.0");

/// `ibv_get_cq_event(3)`: waits for the next event of a CQ of `channel` (or, if the program
/// made the channel's fd non-blocking, fails with EAGAIN when none is there), and stores the
/// CQ and its `cq_context`. Returns 0, or -1 with errno. The global lock is released every
/// 20 ms of waiting, so other threads' verbs run meanwhile.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_cq_event(
    channel: *mut ibv_comp_channel,
    cq: *mut *mut ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    if channel.is_null() || cq.is_null() || cq_context.is_null() {
        set_errno(EINVAL);
        return -1;
    }
    let nonblock = libc::fcntl((*channel).fd, libc::F_GETFL) & libc::O_NONBLOCK != 0;
    let slice = if nonblock { std::time::Duration::ZERO } else { std::time::Duration::from_millis(20) };
    loop {
        let _g = lock();
        let ch = obj::<Chan>(channel);
        match ch.ch.get_cq_event_timeout(slice) {
            Ok(Some(q)) => {
                let Some(&(_, p)) = ch.cqs.iter().find(|c| c.0 == q.cqn()) else {
                    // A CQ of this channel that librnic did not create cannot exist.
                    set_errno(EINVAL);
                    return -1;
                };
                drop(q);
                *cq = p;
                *cq_context = (*p).cq_context;
                return 0;
            }
            Ok(None) if nonblock => {
                set_errno(EAGAIN);
                return -1;
            }
            Ok(None) => {}
            Err(e) => {
                debug("ibv_get_cq_event", &e);
                set_errno(errno_of(&e));
                return -1;
            }
        }
    }
}
export!(ibv_get_cq_event, "IBVERBS_1.1");

/// `ibv_ack_cq_events(3)`: acknowledges `nevents` events of `cq` (ibv_destroy_cq refuses with
/// EBUSY while some are not).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_ack_cq_events(cq: *mut ibv_cq, nevents: u32) {
    if cq.is_null() {
        return;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    c.cq.ack_cq_events(nevents);
    c.ibv.comp_events_completed = c.ibv.comp_events_completed.wrapping_add(nevents);
}
export!(ibv_ack_cq_events, "IBVERBS_1.1");

// ---- QP ----

fn state_of(s: c_int) -> Option<QpState> {
    Some(match s {
        0 => QpState::Reset,
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => return None,
    })
}

fn mtu_of(m: c_int) -> Option<Mtu> {
    Some(match m {
        1 => Mtu::Mtu256,
        2 => Mtu::Mtu512,
        3 => Mtu::Mtu1024,
        4 => Mtu::Mtu2048,
        5 => Mtu::Mtu4096,
        _ => return None,
    })
}

/// `IBV_QPT_RC`.
const QPT_RC: c_int = 2;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_qp(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    if pd.is_null() || attr.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let a = &mut *attr;
    if a.qp_type != QPT_RC {
        // UD needs the RTL of issue 15; UC, XRC and raw packet QPs are not planned.
        set_errno(EOPNOTSUPP);
        return null_mut();
    }
    if a.send_cq.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    let p = obj::<Pd>(pd);
    let scq = &obj::<Cq>(a.send_cq).cq;
    let rcq = if a.recv_cq.is_null() { scq } else { &obj::<Cq>(a.recv_cq).cq };
    let mut b =
        p.pd.create_qp(scq)
            .set_recv_cq(rcq)
            .set_max_send_wr(a.cap.max_send_wr.max(1))
            .set_max_send_sge(a.cap.max_send_sge.max(1))
            .set_max_inline_data(a.cap.max_inline_data)
            .set_sq_sig_all(a.sq_sig_all != 0);
    if a.srq.is_null() {
        b = b.set_max_recv_wr(a.cap.max_recv_wr).set_max_recv_sge(a.cap.max_recv_sge.max(1));
    } else {
        b = b.set_srq(&obj::<Srq>(a.srq).srq);
    }
    let qp = match b.build() {
        Ok(q) => q,
        Err(e) => {
            debug("ibv_create_qp", &e);
            set_errno(errno_of(&e));
            return null_mut();
        }
    };
    let cap = qp.query_qp().cap;
    a.cap = ibv_qp_cap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    };
    let mut ibv: ibv_qp = zeroed();
    ibv.context = p.ibv.context;
    ibv.qp_context = a.qp_context;
    ibv.pd = pd;
    ibv.send_cq = a.send_cq;
    ibv.recv_cq = if a.recv_cq.is_null() { a.send_cq } else { a.recv_cq };
    ibv.srq = a.srq;
    ibv.handle = qp.qp_num();
    ibv.qp_num = qp.qp_num();
    ibv.state = 0;
    ibv.qp_type = QPT_RC;
    Box::into_raw(Box::new(Qp { ibv, qp, sq_sig_all: a.sq_sig_all != 0 })) as *mut ibv_qp
}
export!(ibv_create_qp, "IBVERBS_1.1");

/// The peer's IPv4 address and MAC of a RoCEv2 address vector: the IPv4-mapped destination
/// GID, and the MAC of a known neighbour.
fn av_of(c: &Ctx, ah: &ibv_ah_attr) -> Result<AddressVector, c_int> {
    if ah.is_global == 0 {
        // RoCE has no LIDs: the destination is the GID (ibv_rc_pingpong -g, perftest -x).
        return Err(EINVAL);
    }
    let ip = std::net::Ipv6Addr::from(ah.grh.dgid.raw).to_ipv4_mapped().ok_or(EINVAL)?;
    let mac = c.peers.iter().find(|(p, _)| *p == ip).map(|(_, m)| *m).ok_or_else(|| {
        debug("ibv_modify_qp", &format!("no MAC known for peer {ip}: set RNIC_PEER=IP,MAC"));
        EINVAL
    })?;
    Ok(AddressVector { dest_mac: mac, dest_ip: ip })
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int {
    if qp.is_null() || attr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let a = &*attr;
    let mask = match QpAttrMask::from_bits(mask as u32) {
        Some(m) => m,
        None => return EINVAL,
    };
    let mut r = QpAttr::default();
    if mask.contains(QpAttrMask::STATE) {
        match state_of(a.qp_state) {
            Some(s) => r.qp_state = s,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::CUR_STATE) {
        match state_of(a.cur_qp_state) {
            Some(s) => r.cur_qp_state = s,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::PATH_MTU) {
        match mtu_of(a.path_mtu) {
            Some(m) => r.path_mtu = m,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::ACCESS_FLAGS) {
        match AccessFlags::from_bits(a.qp_access_flags) {
            Some(f) => r.qp_access_flags = f,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::AV) {
        match av_of(ctx(q.ibv.context), &a.ah_attr) {
            Ok(av) => r.ah_attr = av,
            Err(e) => return e,
        }
    }
    r.pkey_index = a.pkey_index;
    r.port_num = a.port_num;
    r.dest_qp_num = a.dest_qp_num;
    r.rq_psn = a.rq_psn;
    r.sq_psn = a.sq_psn;
    r.max_rd_atomic = a.max_rd_atomic;
    r.max_dest_rd_atomic = a.max_dest_rd_atomic;
    r.min_rnr_timer = a.min_rnr_timer;
    r.timeout = a.timeout;
    r.retry_cnt = a.retry_cnt;
    r.rnr_retry = a.rnr_retry;
    match q.qp.modify(&r, mask) {
        Ok(()) => {
            q.ibv.state = q.qp.state() as c_int;
            0
        }
        Err(e) => {
            debug("ibv_modify_qp", &e);
            errno_of(&e)
        }
    }
}
export!(ibv_modify_qp, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    _mask: c_int,
    init: *mut ibv_qp_init_attr,
) -> c_int {
    if qp.is_null() || attr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let a = q.qp.query_qp();
    let cap = ibv_qp_cap {
        max_send_wr: a.cap.max_send_wr,
        max_recv_wr: a.cap.max_recv_wr,
        max_send_sge: a.cap.max_send_sge,
        max_recv_sge: a.cap.max_recv_sge,
        max_inline_data: a.cap.max_inline_data,
    };
    let mut ah = ibv_ah_attr { is_global: 1, port_num: 1, ..Default::default() };
    ah.grh.dgid.raw = a.ah_attr.dest_ip.to_ipv6_mapped().octets();
    ah.grh.sgid_index = 1;
    ah.grh.hop_limit = 64;
    *attr = ibv_qp_attr {
        qp_state: a.qp_state as c_int,
        cur_qp_state: a.cur_qp_state as c_int,
        path_mtu: a.path_mtu as c_int,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.qp_access_flags.bits(),
        cap,
        ah_attr: ah,
        pkey_index: a.pkey_index,
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        ..Default::default()
    };
    if !init.is_null() {
        let i = &mut *init;
        i.qp_context = q.ibv.qp_context;
        i.send_cq = q.ibv.send_cq;
        i.recv_cq = q.ibv.recv_cq;
        i.srq = q.ibv.srq;
        i.cap = cap;
        i.qp_type = QPT_RC;
        i.sq_sig_all = c_int::from(q.sq_sig_all);
    }
    0
}
export!(ibv_query_qp, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_qp(qp: *mut ibv_qp) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let b = Box::from_raw(qp as *mut Qp);
    match b.qp.destroy() {
        Ok(()) => 0,
        Err(e) => errno_of(&e),
    }
}
export!(ibv_destroy_qp, "IBVERBS_1.1");

/// SGEs of a C work request, unchecked (the NIC checks keys and bounds).
unsafe fn sges(list: *mut ibv_sge, n: c_int) -> Result<Vec<Sge<'static>>, c_int> {
    if n < 0 || (n > 0 && list.is_null()) {
        return Err(EINVAL);
    }
    Ok((0..n as usize).map(|i| *list.add(i)).map(|s| Sge::raw(s.addr, s.length, s.lkey)).collect())
}

/// `IBV_SEND_INLINE`.
const SEND_INLINE: u32 = 8;

/// One C send WR as the driver's.
unsafe fn send_wr(w: &ibv_send_wr) -> Result<SendWr<'static>, c_int> {
    let op = u32::try_from(w.opcode).ok().and_then(WrOpcode::from_raw).ok_or(EINVAL)?;
    let list = sges(w.sg_list, w.num_sge)?;
    let flags = SendFlags::from_bits(w.send_flags as u8).filter(|_| w.send_flags <= 0xF).ok_or(EINVAL)?;
    let mut wr = SendWr::send(w.wr_id, None).with_opcode(op);
    if flags.contains(SendFlags::INLINE) && w.send_flags & SEND_INLINE != 0 {
        // The bytes are copied now, as IBV_SEND_INLINE promises.
        let mut data = Vec::new();
        for s in &list {
            if s.length > 0 {
                data.extend_from_slice(std::slice::from_raw_parts(s.addr as *const u8, s.length as usize));
            }
        }
        wr = wr.with_inline(&data).map_err(|e| errno_of(&e))?;
    } else {
        wr = wr.with_sg_list(&list).map_err(|e| errno_of(&e))?;
    }
    let wr = SendWr { flags, ..wr };
    let wr = match op {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            SendWr { remote: Some(rnic::RemoteAddr { addr: w.wr.rdma.remote_addr, rkey: w.wr.rdma.rkey }), ..wr }
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => SendWr {
            remote: Some(rnic::RemoteAddr { addr: w.wr.atomic.remote_addr, rkey: w.wr.atomic.rkey }),
            compare_add: w.wr.atomic.compare_add,
            swap: w.wr.atomic.swap,
            ..wr
        },
        WrOpcode::Send | WrOpcode::SendWithImm => wr,
    };
    Ok(wr.with_imm(u32::from_be(w.imm_data)))
}

unsafe extern "C" fn post_send(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let mut ptrs = Vec::new();
    let mut wrs = Vec::new();
    let mut stop = None;
    let mut p = wr;
    while !p.is_null() {
        match send_wr(&*p) {
            Ok(w) => {
                ptrs.push(p);
                wrs.push(w);
            }
            Err(e) => {
                stop = Some((p, e));
                break;
            }
        }
        p = (*p).next;
    }
    let r = q.qp.post_send(&wrs);
    q.ibv.state = q.qp.state() as c_int;
    let (at, e) = match (r, stop) {
        (Ok(()), None) => return 0,
        (Ok(()), Some((p, e))) => (p, e),
        (Err(pe), _) => {
            debug("ibv_post_send", &pe);
            (ptrs[pe.bad_wr], errno_of(&pe.error))
        }
    };
    if !bad.is_null() {
        *bad = at;
    }
    e
}

unsafe fn recv_wrs(
    wr: *mut ibv_recv_wr,
) -> (Vec<*mut ibv_recv_wr>, Vec<RecvWr<'static>>, Option<(*mut ibv_recv_wr, c_int)>) {
    let (mut ptrs, mut wrs) = (Vec::new(), Vec::new());
    let mut p = wr;
    while !p.is_null() {
        let w = &*p;
        match sges(w.sg_list, w.num_sge).and_then(|l| RecvWr::with_sg_list(w.wr_id, &l).map_err(|e| errno_of(&e))) {
            Ok(r) => {
                ptrs.push(p);
                wrs.push(r);
            }
            Err(e) => return (ptrs, wrs, Some((p, e))),
        }
        p = w.next;
    }
    (ptrs, wrs, None)
}

unsafe fn finish_recv(
    r: Result<(), rnic::PostError>,
    ptrs: &[*mut ibv_recv_wr],
    stop: Option<(*mut ibv_recv_wr, c_int)>,
    bad: *mut *mut ibv_recv_wr,
) -> c_int {
    let (at, e) = match (r, stop) {
        (Ok(()), None) => return 0,
        (Ok(()), Some(s)) => s,
        (Err(pe), _) => (ptrs[pe.bad_wr], errno_of(&pe.error)),
    };
    if !bad.is_null() {
        *bad = at;
    }
    e
}

unsafe extern "C" fn post_recv(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let (ptrs, wrs, stop) = recv_wrs(wr);
    let r = q.qp.post_recv(&wrs);
    finish_recv(r, &ptrs, stop, bad)
}

unsafe extern "C" fn post_srq_recv(srq: *mut ibv_srq, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    if srq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let s = obj::<Srq>(srq);
    let (ptrs, wrs, stop) = recv_wrs(wr);
    let r = s.srq.post_recv(&wrs);
    finish_recv(r, &ptrs, stop, bad)
}

// ---- SRQ ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_srq(pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    if pd.is_null() || attr.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    let p = obj::<Pd>(pd);
    let a = &mut *attr;
    match p.pd.create_srq(a.attr.max_wr, a.attr.max_sge) {
        Ok(srq) => {
            let q = srq.query();
            a.attr.max_wr = q.max_wr;
            a.attr.max_sge = q.max_sge;
            let mut ibv: ibv_srq = zeroed();
            ibv.context = p.ibv.context;
            ibv.srq_context = a.srq_context;
            ibv.pd = pd;
            ibv.handle = srq.srq_num();
            Box::into_raw(Box::new(Srq { ibv, srq })) as *mut ibv_srq
        }
        Err(e) => {
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_srq, "IBVERBS_1.1");

/// `IBV_SRQ_MAX_WR`, `IBV_SRQ_LIMIT`.
const SRQ_MAX_WR: c_int = 1;
const SRQ_LIMIT: c_int = 2;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_modify_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr, mask: c_int) -> c_int {
    if srq.is_null() || attr.is_null() {
        return EINVAL;
    }
    if mask & SRQ_MAX_WR != 0 {
        return EOPNOTSUPP;
    }
    let _g = lock();
    if mask & SRQ_LIMIT != 0 {
        if let Err(e) = obj::<Srq>(srq).srq.arm_limit((*attr).srq_limit) {
            return errno_of(&e);
        }
    }
    0
}
export!(ibv_modify_srq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    if srq.is_null() || attr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Srq>(srq).srq.query();
    *attr = ibv_srq_attr { max_wr: q.max_wr, max_sge: q.max_sge, srq_limit: q.srq_limit };
    0
}
export!(ibv_query_srq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_srq(srq: *mut ibv_srq) -> c_int {
    if srq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = srq as *mut Srq;
    let q = std::ptr::read(&(*p).srq);
    match q.destroy() {
        Ok(()) => {
            free_shell(p);
            0
        }
        Err(r) => {
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).srq, r.object);
            e
        }
    }
}
export!(ibv_destroy_srq, "IBVERBS_1.1");

// ---- async events ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_async_event(c: *mut ibv_context, ev: *mut ibv_async_event) -> c_int {
    if c.is_null() || ev.is_null() {
        return -1;
    }
    // Blocking wait for the NIC's event queue needs an interrupt / event fd (issue 15); poll
    // once instead and report EAGAIN when nothing is there.
    let _g = lock();
    match ctx(c).ctx.poll_async_event() {
        Ok(Some(e)) => {
            (*ev).element = null_mut();
            (*ev).event_type = e.event_type() as c_int;
            0
        }
        Ok(None) => {
            set_errno(11);
            -1
        }
        Err(e) => {
            set_errno(errno_of(&e));
            -1
        }
    }
}
export!(ibv_get_async_event, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_ack_async_event(_ev: *mut ibv_async_event) {}
export!(ibv_ack_async_event, "IBVERBS_1.1");

// ---- strings ----

/// NUL-terminated copies of the status, event, port-state and node-type strings.
pub fn status_strings() -> (Vec<String>, Vec<String>) {
    let wc = (0..30u8).map(|i| rnic::WcStatus::from_raw(i).to_string()).collect();
    let ev = (0..30u32).map(|i| rnic::AsyncEventType::str_of(i).to_string()).collect();
    (wc, ev)
}

/// A static C string for `s` (the strings are `'static` and few; each is leaked once).
fn cstr_static(s: &'static str) -> *const c_char {
    use std::collections::HashMap;
    static CACHE: Mutex<Option<HashMap<&'static str, usize>>> = Mutex::new(None);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let m = c.get_or_insert_with(HashMap::new);
    *m.entry(s).or_insert_with(|| {
        let b = std::ffi::CString::new(s).unwrap_or_default().into_boxed_c_str();
        Box::leak(b).as_ptr() as usize
    }) as *const c_char
}

#[no_mangle]
pub extern "C" fn rnic_ibv_wc_status_str(status: c_int) -> *const c_char {
    let s = u8::try_from(status).map_or("unknown", |v| rnic::WcStatus::from_raw(v).as_str());
    cstr_static(s)
}
export!(ibv_wc_status_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_event_type_str(e: c_int) -> *const c_char {
    cstr_static(u32::try_from(e).map_or("unknown", rnic::AsyncEventType::str_of))
}
export!(ibv_event_type_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_port_state_str(s: c_int) -> *const c_char {
    let t = match s {
        0 => "no state change (NOP)",
        1 => "down",
        2 => "init",
        3 => "armed",
        4 => "active",
        5 => "active defer",
        _ => "unknown",
    };
    cstr_static(t)
}
export!(ibv_port_state_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_node_type_str(t: c_int) -> *const c_char {
    let s = match t {
        1 => "InfiniBand channel adapter",
        2 => "InfiniBand switch",
        3 => "InfiniBand router",
        4 => "iWARP NIC",
        5 => "usNIC",
        6 => "usNIC UDP",
        7 => "unspecified",
        _ => "unknown",
    };
    cstr_static(s)
}
export!(ibv_node_type_str, "IBVERBS_1.1");

/// `enum ibv_rate` → multiple of 2.5 Gb/s (-1 where rdma-core defines none) and Mb/s, as
/// rdma-core 44 converts them (checked against it by `tests/abi.rs`).
const RATES: [(c_int, c_int, c_int); 22] = [
    (2, 1, 2500),
    (3, 4, 10000),
    (4, 12, 30000),
    (5, 2, 5000),
    (6, 8, 20000),
    (7, 16, 40000),
    (8, 24, 60000),
    (9, 32, 80000),
    (10, 48, 120000),
    (11, -1, 14062),
    (12, -1, 56250),
    (13, -1, 112500),
    (14, -1, 168750),
    (15, -1, 25781),
    (16, -1, 103125),
    (17, -1, 206250),
    (18, -1, 309375),
    (19, 11, 28125),
    (20, 20, 53125),
    (21, 160, 425000),
    (22, 240, 637500),
    (23, 320, 850000),
];

#[no_mangle]
pub extern "C" fn rnic_ibv_rate_to_mult(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.1)
}
export!(ibv_rate_to_mult, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_mult_to_ibv_rate(mult: c_int) -> c_int {
    RATES.iter().find(|r| r.1 == mult && mult > 0).map_or(0, |r| r.0)
}
export!(mult_to_ibv_rate, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_ibv_rate_to_mbps(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}
export!(ibv_rate_to_mbps, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_mbps_to_ibv_rate(mbps: c_int) -> c_int {
    RATES.iter().find(|r| r.2 == mbps).map_or(0, |r| r.0)
}
export!(mbps_to_ibv_rate, "IBVERBS_1.1");

// ---- sysfs and fork: nothing to read or protect ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_sysfs_path() -> *const c_char {
    cstr_static("/sys")
}
export!(ibv_get_sysfs_path, "IBVERBS_1.0");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_read_sysfs_file(
    _dir: *const c_char,
    _file: *const c_char,
    _buf: *mut c_char,
    _size: usize,
) -> c_int {
    // The devices are not kernel devices: no sysfs attributes (ibv_devinfo then omits
    // board_id).
    set_errno(2);
    -1
}
export!(ibv_read_sysfs_file, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_ibv_fork_init() -> c_int {
    // User buffers are mapped by the device backend, not pinned by a kernel: fork needs no
    // MADV_DONTFORK here.
    0
}
export!(ibv_fork_init, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_is_fork_initialized() -> c_int {
    0 // IBV_FORK_DISABLED
}
export!(ibv_is_fork_initialized, "IBVERBS_1.13");

#[no_mangle]
pub extern "C" fn rnic_ibv_dontfork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}
export!(ibv_dontfork_range, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_dofork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}
export!(ibv_dofork_range, "IBVERBS_1.1");

// ---- not supported: the symbols exist so that programs load; each fails cleanly ----

macro_rules! unsupported_int {
    ($rname:ident, $name:ident, $ver:literal, $ret:expr) => {
        #[no_mangle]
        pub extern "C" fn $rname() -> c_int {
            set_errno(EOPNOTSUPP);
            $ret
        }
        export!($name, $ver);
    };
}

macro_rules! unsupported_p {
    ($rname:ident, $name:ident, $ver:literal) => {
        #[no_mangle]
        pub extern "C" fn $rname() -> *mut c_void {
            set_errno(EOPNOTSUPP);
            null_mut()
        }
        export!($name, $ver);
    };
}

// UD address handles (issue 15).
unsupported_p!(rnic_ibv_create_ah, ibv_create_ah, "IBVERBS_1.1");
unsupported_int!(rnic_ibv_destroy_ah, ibv_destroy_ah, "IBVERBS_1.1", EOPNOTSUPP);
unsupported_p!(rnic_ibv_create_ah_from_wc, ibv_create_ah_from_wc, "IBVERBS_1.1");
unsupported_int!(rnic_ibv_init_ah_from_wc, ibv_init_ah_from_wc, "IBVERBS_1.1", -1);
unsupported_int!(rnic_ibv_resolve_eth_l2_from_gid, ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1", -1);
// Multicast (UD).
unsupported_int!(rnic_ibv_attach_mcast, ibv_attach_mcast, "IBVERBS_1.1", EOPNOTSUPP);
unsupported_int!(rnic_ibv_detach_mcast, ibv_detach_mcast, "IBVERBS_1.1", EOPNOTSUPP);
// Kernel-command copies (there is no kernel command).
unsupported_int!(rnic_ibv_copy_path_rec_from_kern, ibv_copy_path_rec_from_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_path_rec_to_kern, ibv_copy_path_rec_to_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_qp_attr_from_kern, ibv_copy_qp_attr_from_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_ah_attr_from_kern, ibv_copy_ah_attr_from_kern, "IBVERBS_1.1", 0);
// Extended QP (the new post-send API), import/export, ECE, dmabuf, DM.
unsupported_p!(rnic_ibv_qp_to_qp_ex, ibv_qp_to_qp_ex, "IBVERBS_1.6");
unsupported_p!(rnic_ibv_import_device, ibv_import_device, "IBVERBS_1.10");
unsupported_p!(rnic_ibv_import_mr, ibv_import_mr, "IBVERBS_1.10");
unsupported_p!(rnic_ibv_import_pd, ibv_import_pd, "IBVERBS_1.10");
unsupported_int!(rnic_ibv_query_ece, ibv_query_ece, "IBVERBS_1.10", EOPNOTSUPP);
unsupported_int!(rnic_ibv_set_ece, ibv_set_ece, "IBVERBS_1.10", EOPNOTSUPP);
unsupported_int!(rnic_ibv_unimport_mr, ibv_unimport_mr, "IBVERBS_1.10", 0);
unsupported_int!(rnic_ibv_unimport_pd, ibv_unimport_pd, "IBVERBS_1.10", 0);
unsupported_p!(rnic_ibv_reg_dmabuf_mr, ibv_reg_dmabuf_mr, "IBVERBS_1.12");
unsupported_p!(rnic_ibv_import_dm, ibv_import_dm, "IBVERBS_1.13");
unsupported_int!(rnic_ibv_unimport_dm, ibv_unimport_dm, "IBVERBS_1.13", 0);
unsupported_int!(rnic_ibv_query_qp_data_in_order, ibv_query_qp_data_in_order, "IBVERBS_1.14", 0);
