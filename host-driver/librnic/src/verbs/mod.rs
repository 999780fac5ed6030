//! The exported `ibv_*` functions. Each is `rnic_<name>`, given its rdma-core name and
//! version by a `.symver` directive ([`export!`]); `libibverbs.symbols` lists them.
//!
//! This module holds what every verb shares: the process-wide lock and device list, errno,
//! and the objects (the C struct first, the driver object after it). The verbs are in one
//! module per kind of object: [`device`] (devices, contexts, queries, async events),
//! [`pd_mr`], [`cq`] (and completion channels), [`qp`] (and the inline post functions),
//! [`ah`] (address handles), [`srq`], [`strings`], and [`compat`] (sysfs, fork, unsupported verbs).
use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, zeroed};
use std::net::Ipv4Addr;
use std::ptr::{null, null_mut};
use std::sync::{Mutex, MutexGuard};

use rnic::{
    AccessFlags, AddressHandle, AddressVector, AsyncEvent, CompletionChannel, CompletionQueue, Context, DeviceList,
    Error, MacAddr, MemoryRegion, Mtu, ProtectionDomain, QpAttr, QpAttrMask, QpState, QpType, QueuePair, RecvWr,
    SendFlags, SendWr, Sge, SharedReceiveQueue, WorkCompletion, WrOpcode,
};

use crate::abi::*;

/// Gives `rnic_<name>` the symbol `<name>@@<version>`. Call an exported function only from its
/// own module: a call from another one can put its definition in another codegen unit than the
/// `.symver` directive, which the assembler then refuses.
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
    if debugging() {
        eprintln!("librnic: {what}: {e}");
    }
}

/// Whether `RNIC_DEBUG` is set, read once (the CM's progress thread asks every millisecond).
fn debugging() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RNIC_DEBUG").is_some())
}

/// Process-wide state: the device list and its `struct ibv_device`s, which live as long as
/// the process (as libibverbs keeps its devices).
struct Global {
    list: Option<DeviceList>,
    devices: Vec<*mut ibv_device>,
    /// The rdma_cm ports ([`cm`]), one per device an id was bound to.
    cm_ports: Vec<cm::CmPort>,
    /// Whether the CM's progress thread runs.
    cm_progress: bool,
}

// SAFETY: the state (and every verbs object, reached only through it or through pointers the
// program holds) is touched only with `LOCK` held, so the single-threaded driver objects are
// never used by two threads at once.
unsafe impl Send for Global {}

static LOCK: Mutex<Global> =
    Mutex::new(Global { list: None, devices: Vec::new(), cm_ports: Vec::new(), cm_progress: false });

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
    /// The program's QPs, SRQs and CQs by number, for `ibv_async_event.element`.
    qps: Vec<(u32, *mut ibv_qp)>,
    srqs: Vec<(u32, *mut ibv_srq)>,
    cqs: Vec<(u32, *mut ibv_cq)>,
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
    hold: QpHold,
    sq_sig_all: bool,
    qp_type: QpType,
}

/// Who holds a program's QP: the program (`ibv_create_qp`), or an rdma_cm id
/// (`rdma_create_qp`), whose connection manager moves it through RTR and RTS. (The sizes
/// differ; the whole `Qp` is boxed, one per QP.)
#[allow(clippy::large_enum_variant)]
enum QpHold {
    Own(QueuePair<'static>),
    Cm(rnic::cm::RdmaCmId<'static>),
}

impl Qp {
    /// Runs `f` on the driver's QP. EINVAL when an rdma_cm id's QP is gone (its id was
    /// destroyed) or is in use by the connection manager.
    fn with<R>(&mut self, f: impl FnOnce(&mut QueuePair<'static>) -> R) -> Result<R, c_int> {
        match &mut self.hold {
            QpHold::Own(q) => Ok(f(q)),
            QpHold::Cm(id) => match id.qp() {
                Some(mut q) => Ok(f(&mut q)),
                None => Err(EINVAL),
            },
        }
    }
}

#[repr(C)]
struct Ah {
    ibv: ibv_ah,
    ah: AddressHandle,
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

/// Frees a null-terminated list of pointers made with `Box::into_raw(v.into_boxed_slice())`
/// (`ibv_get_device_list`, `rdma_get_devices`).
unsafe fn free_list<T>(list: *mut *mut T) {
    if list.is_null() {
        return;
    }
    let mut n = 0;
    while !(*list.add(n)).is_null() {
        n += 1;
    }
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(list, n + 1)));
}

/// Frees the allocation of a boxed object whose driver object was moved out (the C struct
/// in front of it has no destructor).
unsafe fn free_shell<T>(p: *mut T) {
    std::alloc::dealloc(p as *mut u8, std::alloc::Layout::new::<T>());
}

mod ah;
mod cm;
mod compat;
mod cq;
mod device;
mod pd_mr;
mod qp;
mod srq;
mod strings;

pub use strings::status_strings;
