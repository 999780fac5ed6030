//! librdmacm's connection calls (`rdma_cm(7)`, rdma-core 44's `librdmacm.so.1`) over the
//! driver's connection manager, [`rnic::cm`]: event channels, ids, address and route
//! resolution, `rdma_create_qp`, connect / listen / accept / reject / disconnect, and the
//! events with their private data.
//!
//! **Ports.** librdmacm's channel is not tied to a device; the kernel CM behind it serves
//! every port. Here each device an id binds to gets, on first use, a *port*: a context of
//! its own (the `ibv_context` ids report as `verbs`, on which the program makes its PD, CQs
//! and QP) and the driver's [`EventChannel`] on it (QP1 and the IB CM engine). A background
//! thread, started with the first port, runs every port's CM each millisecond (what Linux's
//! `ib_cm` work queue does): QP1's MADs, timers, QP transitions; it routes each resulting
//! event to the channel of its id and makes that channel's fd readable, so `poll(2)` on
//! `rdma_event_channel.fd` works as with librdmacm.
//!
//! **QPs.** `rdma_create_qp` creates the RC QP through the id (which moves it to INIT, and to
//! RTR and RTS as the connection is made, as librdmacm does) and gives the program an
//! `ibv_qp` usable with every verb; `ibv_destroy_qp` on it is `rdma_destroy_qp`.
//!
//! **Not supported** (they fail with `EOPNOTSUPP`, or `ENOSYS` for options): the UDP and
//! IPoIB port spaces (UD ids need SIDR), QPs the program creates itself and connects with
//! `rdma_init_qp_attr` (beyond INIT) and `rdma_establish`, `rdma_create_ep`, multicast,
//! `rdma_create_srq`, ECE, and rsockets (`rpoll` is `poll(2)`: there are no rsocket
//! descriptors). Addresses are IPv4 (RoCEv2 GIDs are
//! IPv4-mapped); an id bound to 0.0.0.0 uses the first device.
use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::time::Duration;

use rnic::cm::{ChannelConfig, CmEventType, ConnParam, EventChannel, RdmaCmId};

use super::device::open_context;
use super::qp::{destroy_qp, qp_builder, wrap_qp};
use super::*;

const EADDRNOTAVAIL: c_int = 99;
const EAFNOSUPPORT: c_int = 97;
const ENOSYS: c_int = 38;
const ETIMEDOUT: c_int = 110;

/// `RDMA_PS_TCP`, `RDMA_PS_IB`: the port spaces of RC ids.
const RDMA_PS_TCP: c_int = 0x0106;
const RDMA_PS_IB: c_int = 0x013F;
/// `IBV_QPT_RC`.
const QPT_RC: c_int = 2;
/// `IBV_EVENT_COMM_EST`.
const IBV_EVENT_COMM_EST: c_int = 9;

/// One device's CM (see the module doc).
pub(super) struct CmPort {
    /// The list's device.
    dev: usize,
    /// The context the port's ids report as `verbs`.
    ctx: *mut ibv_context,
    chan: EventChannel<'static>,
    /// The ids bound to this port.
    ids: Vec<*mut CmIdObj>,
    /// QP1's counters last reported under `RNIC_DEBUG`.
    seen: (u64, u64, u64, u64),
}

/// `struct rdma_event_channel` and its queue of routed events. The fd is an eventfd,
/// readable while the queue holds events.
#[repr(C)]
struct EvChan {
    c: rdma_event_channel,
    queue: VecDeque<*mut CmEv>,
    /// A channel made for an id created without one (librdmacm's synchronous mode): the
    /// calls on such an id wait for their own event.
    sync: bool,
}

/// `struct rdma_cm_id` and the driver's id, once bound to a port.
#[repr(C)]
struct CmIdObj {
    c: rdma_cm_id,
    id: Option<RdmaCmId<'static>>,
    port: Option<usize>,
    /// `route.path_rec` points here once the route is resolved.
    path: ibv_sa_path_rec,
}

/// `struct rdma_cm_event` and the private data its `param` points into.
#[repr(C)]
struct CmEv {
    c: rdma_cm_event,
    pdata: Vec<u8>,
}

fn ret(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

fn drv<T>(what: &str, r: rnic::Result<T>) -> Result<T, c_int> {
    r.map_err(|e| {
        debug(what, &e);
        errno_of(&e)
    })
}

/// An IPv4 socket address (`AF_INET`, or an IPv4-mapped `AF_INET6`).
unsafe fn sockaddr_v4(p: *const libc::sockaddr) -> Result<SocketAddrV4, c_int> {
    if p.is_null() {
        return Err(EINVAL);
    }
    match c_int::from((*p).sa_family) {
        libc::AF_INET => {
            let s = &*(p as *const libc::sockaddr_in);
            Ok(SocketAddrV4::new(Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr)), u16::from_be(s.sin_port)))
        }
        libc::AF_INET6 => {
            let s = &*(p as *const libc::sockaddr_in6);
            let ip = std::net::Ipv6Addr::from(s.sin6_addr.s6_addr).to_ipv4_mapped().ok_or(EAFNOSUPPORT)?;
            Ok(SocketAddrV4::new(ip, u16::from_be(s.sin6_port)))
        }
        _ => Err(EAFNOSUPPORT),
    }
}

fn put_sockaddr(to: &mut libc::sockaddr_storage, a: SocketAddrV4) {
    // SAFETY: a sockaddr_in fits in a sockaddr_storage, which is aligned for it.
    let s = unsafe { &mut *(to as *mut libc::sockaddr_storage as *mut libc::sockaddr_in) };
    s.sin_family = libc::AF_INET as libc::sa_family_t;
    s.sin_port = a.port().to_be();
    s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
}

fn gid_of(ip: Ipv4Addr) -> ibv_gid {
    ibv_gid { raw: ip.to_ipv6_mapped().octets() }
}

/// Copies the driver id's addresses and path into the program's `rdma_cm_id`.
fn sync_route(o: &mut CmIdObj) {
    let Some(id) = &o.id else { return };
    let a = &mut o.c.route.addr;
    if let Some(l) = id.local_addr() {
        put_sockaddr(&mut a.src_storage, l);
        a.ibaddr.sgid = gid_of(*l.ip());
    }
    if let Some(r) = id.remote_addr() {
        put_sockaddr(&mut a.dst_storage, r);
        a.ibaddr.dgid = gid_of(*r.ip());
    }
    a.ibaddr.pkey = 0xffffu16.to_be();
    if let (Some(mtu), _) = id.path() {
        o.path = ibv_sa_path_rec {
            dgid: a.ibaddr.dgid,
            sgid: a.ibaddr.sgid,
            flow_label: 0,
            hop_limit: 64,
            reversible: 1,
            numb_path: 1,
            pkey: 0xffffu16.to_be(),
            mtu_selector: 2, // exactly
            mtu: mtu as u8,  // rnic::Mtu has enum ibv_mtu's values
            rate_selector: 2,
            rate: 18, // IBV_RATE_100_GBPS... as the NIC's port reports (100 GbE)
            packet_life_time_selector: 2,
            packet_life_time: 16,
            ..Default::default()
        };
        o.c.route.path_rec = &mut o.path;
        o.c.route.num_paths = 1;
    }
}

/// The port of device `dev`, made on first use (see the module doc).
unsafe fn port_for(g: &mut Global, dev: usize) -> Result<usize, c_int> {
    if let Some(i) = g.cm_ports.iter().position(|p| p.dev == dev) {
        return Ok(i);
    }
    let devp = *g.devices.get(dev).ok_or(ENODEV)?;
    let c = open_context(g, devp)?;
    let chan = match EventChannel::with_config(&ctx(c).ctx, channel_config()) {
        Ok(ch) => ch,
        Err(e) => {
            debug("rdma_cm: the port's CM (QP1)", &e);
            drop(Box::from_raw(ctx(c) as *mut Ctx));
            return Err(errno_of(&e));
        }
    };
    for &(ip, mac) in &ctx(c).peers {
        let _ = chan.add_neighbor(ip, mac);
    }
    g.cm_ports.push(CmPort { dev, ctx: c, chan, ids: Vec::new(), seen: (0, 0, 0, 0) });
    if !g.cm_progress {
        g.cm_progress = true;
        let spawned = std::thread::Builder::new().name("rnic-cm".into()).spawn(|| loop {
            std::thread::sleep(Duration::from_millis(1));
            let mut g = lock();
            // SAFETY: the lock is held; the ports' objects are touched only with it.
            unsafe { pump(&mut g) };
        });
        if spawned.is_err() {
            g.cm_progress = false;
        }
    }
    Ok(g.cm_ports.len() - 1)
}

/// The MAC of `ip` for a QP or address handle of context `c` (`ibv_modify_qp`,
/// `ibv_create_ah`): ARP on the port of `c`'s device, through its CM agent (made on first use;
/// it then answers other hosts' ARP too), for up to 2 s (`EventChannel::resolve_neighbor`).
pub(super) unsafe fn neighbor_mac(g: &mut Global, c: &Ctx, ip: Ipv4Addr) -> Option<rnic::MacAddr> {
    let dev = device_for(g, c.ctx.port_addr()?.ip).ok()?;
    let pi = port_for(g, dev).ok()?;
    match g.cm_ports[pi].chan.resolve_neighbor(ip, rnic::cm::id::DEFAULT_RESOLVE_TIMEOUT) {
        Ok(m) => m,
        Err(e) => {
            debug("ARP", &e);
            None
        }
    }
}

/// The CM's timing: rdma_cm's (`ChannelConfig::default`), or with `RNIC_CM_TIMEOUT=N` (0..=20)
/// a CM response timeout and a packet life time of 4.096 µs × 2^N each. The timers run on the
/// NIC's clock, which a simulator runs thousands of times slower than wall time: rdma_cm's
/// 4.3 s before a lost REQ is resent are hours there; `RNIC_CM_TIMEOUT=6` resends after about
/// 0.8 ms of simulated time (200 k cycles). Only between simulated NICs: a REQ announces its
/// response timeout, and a peer in real time (Linux) would resend its REP at that pace and give
/// up long before the simulated side's RTU comes.
fn channel_config() -> ChannelConfig {
    let mut c = ChannelConfig::default();
    if let Some(n) = std::env::var("RNIC_CM_TIMEOUT").ok().and_then(|v| v.parse::<u8>().ok()).filter(|&n| n <= 20) {
        c.cm_response_timeout = n;
        c.packet_life_time = n;
    }
    c
}

/// The device whose port has address `ip` (the first device for 0.0.0.0).
fn device_for(g: &mut Global, ip: Ipv4Addr) -> Result<usize, c_int> {
    load(g).map_err(|e| errno_of(&e))?;
    let list = g.list.as_ref().ok_or(ENODEV)?;
    if list.entries().is_empty() {
        return Err(ENODEV);
    }
    if ip.is_unspecified() {
        return Ok(0);
    }
    list.entries().iter().position(|e| e.port.ip == ip).ok_or_else(|| {
        debug("rdma_bind_addr", &format!("no rnic device has address {ip}"));
        EADDRNOTAVAIL
    })
}

/// The device to reach `dst` from when the program names no source: the first whose port
/// does not have `dst` itself (every port is on one link; a port does not reach its own
/// address over the wire), else the first.
fn source_device(g: &mut Global, dst: Ipv4Addr) -> Result<usize, c_int> {
    device_for(g, Ipv4Addr::UNSPECIFIED)?;
    let list = g.list.as_ref().ok_or(ENODEV)?;
    Ok(list.entries().iter().position(|e| e.port.ip != dst).unwrap_or(0))
}

/// Binds `o` to device `dev`'s port: the driver id is made there.
unsafe fn attach(g: &mut Global, o: *mut CmIdObj, dev: usize) -> Result<(), c_int> {
    if (*o).id.is_some() {
        return Err(EINVAL);
    }
    let pi = port_for(g, dev)?;
    let port = &mut g.cm_ports[pi];
    (*o).id = Some(port.chan.create_id());
    (*o).port = Some(pi);
    (*o).c.verbs = port.ctx;
    (*o).c.port_num = 1;
    port.ids.push(o);
    Ok(())
}

/// The C event type of a driver event.
fn event_code(t: CmEventType) -> c_int {
    match t {
        CmEventType::AddrResolved => 0,
        CmEventType::AddrError => 1,
        CmEventType::RouteResolved => 2,
        CmEventType::ConnectRequest => 4,
        CmEventType::ConnectError => 6,
        CmEventType::Unreachable => 7,
        CmEventType::Rejected => 8,
        CmEventType::Established => 9,
        CmEventType::Disconnected => 10,
        CmEventType::TimewaitExit => 15,
    }
}

unsafe fn chan_of(o: *mut CmIdObj) -> *mut EvChan {
    (*o).c.channel as *mut EvChan
}

/// Queues `ev` on `ch` and makes its fd readable.
unsafe fn push(ch: *mut EvChan, ev: *mut CmEv) {
    (*ch).queue.push_back(ev);
    let one = 1u64;
    // SAFETY: an eventfd and 8 bytes.
    libc::write((*ch).c.fd, (&one as *const u64).cast(), 8);
}

/// Takes the first event of `ch` that `want` accepts; the fd stays readable while others wait.
unsafe fn pop(ch: *mut EvChan, want: impl Fn(&CmEv) -> bool) -> Option<*mut CmEv> {
    let q = &mut (*ch).queue;
    let i = q.iter().position(|&e| want(&*e))?;
    let ev = q.remove(i)?;
    if q.is_empty() {
        let mut pfd = libc::pollfd { fd: (*ch).c.fd, events: libc::POLLIN, revents: 0 };
        if libc::poll(&mut pfd, 1, 0) == 1 {
            let mut n = 0u64;
            libc::read((*ch).c.fd, (&mut n as *mut u64).cast(), 8);
        }
    }
    Some(ev)
}

/// Runs every port's CM once and routes the events it made (with the lock held).
pub(super) unsafe fn pump(g: &mut Global) {
    for pi in 0..g.cm_ports.len() {
        if let Err(e) = g.cm_ports[pi].chan.process() {
            debug("rdma_cm: processing QP1", &e);
        }
        if debugging() {
            if let Ok(st) = g.cm_ports[pi].chan.stats() {
                let now = (st.1.mads_received, st.1.mads_sent, st.1.errors, st.1.unresolved);
                if now != g.cm_ports[pi].seen {
                    g.cm_ports[pi].seen = now;
                    debug("rdma_cm: QP1", &format_args!("{:?} {:?}", st.1, st.0));
                }
            }
        }
        while let Some(ev) = g.cm_ports[pi].chan.poll_cm_event() {
            route(g, pi, &ev);
            g.cm_ports[pi].chan.ack_cm_event(ev);
        }
        ctx(g.cm_ports[pi].ctx).ctx.device().poll_progress();
    }
}

/// Turns a driver event into the program's `struct rdma_cm_event` on its id's channel.
unsafe fn route(g: &mut Global, pi: usize, ev: &rnic::cm::RdmaCmEvent<'static>) {
    let port = &mut g.cm_ports[pi];
    let find = |id: &RdmaCmId<'static>| port.ids.iter().copied().find(|&o| (*o).id.as_ref() == Some(id));
    let mut conn: rdma_conn_param = zeroed();
    let (o, listen) = if ev.event == CmEventType::ConnectRequest {
        let Some(l) = ev.listen_id.as_ref().and_then(find) else { return };
        if (*l).c.channel.is_null() {
            // The listener's channel was destroyed: nobody could take the request. Dropping
            // the driver's new id rejects it (as ib_cm does for a destroyed id).
            return;
        }
        // The new connection's id: the listener's channel, context and port.
        let mut c: rdma_cm_id = zeroed();
        c.verbs = port.ctx;
        c.channel = (*l).c.channel;
        c.context = (*l).c.context;
        c.ps = (*l).c.ps;
        c.port_num = 1;
        c.qp_type = QPT_RC;
        let o = Box::into_raw(Box::new(CmIdObj { c, id: Some(ev.id.clone()), port: Some(pi), path: zeroed() }));
        port.ids.push(o);
        if let Some(r) = ev.id.connect_request() {
            conn.responder_resources = r.responder_resources;
            conn.initiator_depth = r.initiator_depth;
            conn.retry_count = r.retry_count;
            conn.rnr_retry_count = r.rnr_retry_count;
            conn.qp_num = r.remote_qpn;
        }
        (o, &mut (*l).c as *mut rdma_cm_id)
    } else {
        let Some(o) = find(&ev.id) else { return };
        (o, null_mut())
    };
    sync_route(&mut *o);
    let ch = chan_of(o);
    if ch.is_null() {
        return;
    }
    let mut e = Box::new(CmEv { c: zeroed(), pdata: ev.private_data.clone() });
    if !e.pdata.is_empty() {
        conn.private_data = e.pdata.as_ptr().cast();
        conn.private_data_len = e.pdata.len().min(255) as u8;
    }
    e.c.id = &mut (*o).c;
    e.c.listen_id = listen;
    e.c.event = event_code(ev.event);
    e.c.status = ev.status;
    e.c.param.conn = conn;
    debug("rdma_cm", &format_args!("{:?} (status {}) on id {:p}", ev.event, ev.status, o));
    push(ch, Box::into_raw(e));
}

/// Frees an event (its id may be gone: it is not touched).
unsafe fn free_event(ev: *mut CmEv) {
    drop(Box::from_raw(ev));
}

/// Frees the event a synchronous id holds as its current one (`rdma_get_request`'s).
unsafe fn free_current(c: &mut rdma_cm_id) {
    if !c.event.is_null() {
        free_event(c.event as *mut CmEv);
        c.event = null_mut();
    }
}

/// Waits for the next event of `ch` that `want` accepts (every event if `None`), running the
/// CM; `nonblock`: EAGAIN at once if none is queued. Releases the lock while it waits.
unsafe fn wait_event(
    mut g: MutexGuard<'static, Global>,
    ch: *mut EvChan,
    want: Option<*mut rdma_cm_id>,
    nonblock: bool,
) -> Result<*mut CmEv, c_int> {
    loop {
        pump(&mut g);
        if let Some(ev) = pop(ch, |e| want.is_none_or(|id| e.c.id == id)) {
            return Ok(ev);
        }
        if nonblock {
            return Err(EAGAIN);
        }
        let fd = (*ch).c.fd;
        drop(g);
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        libc::poll(&mut pfd, 1, 2);
        g = lock();
    }
}

/// On an id of a synchronous channel, waits for the event its call caused: 0 if it is
/// `ok`, else the event's errno (ECONNREFUSED for a REJ, ETIMEDOUT for no answer).
unsafe fn sync_wait(g: MutexGuard<'static, Global>, o: *mut CmIdObj, ok: c_int) -> Result<(), c_int> {
    let ch = chan_of(o);
    if ch.is_null() || !(*ch).sync {
        return Ok(());
    }
    let ev = wait_event(g, ch, Some(&mut (*o).c), false)?;
    let (code, status) = ((*ev).c.event, (*ev).c.status);
    free_event(ev);
    match code {
        c if c == ok => Ok(()),
        8 => Err(libc::ECONNREFUSED),
        7 => Err(ETIMEDOUT),
        _ if status < 0 => Err(-status),
        _ => Err(EINVAL),
    }
}

/// The driver id of a bound `rdma_cm_id`.
unsafe fn bound<'a>(id: *mut rdma_cm_id) -> Result<(&'a mut CmIdObj, RdmaCmId<'static>), c_int> {
    if id.is_null() {
        return Err(EINVAL);
    }
    let o = obj::<CmIdObj>(id);
    let d = o.id.clone().ok_or_else(|| {
        debug("rdma_cm", &"the id is not bound to a device yet (rdma_bind_addr / rdma_resolve_addr)");
        EINVAL
    })?;
    Ok((o, d))
}

unsafe fn new_channel(sync: bool) -> Result<*mut EvChan, c_int> {
    // A blocking eventfd: a program may make it non-blocking with fcntl (F_SETFL), which
    // makes rdma_get_cm_event non-blocking, as with librdmacm.
    let fd = libc::eventfd(0, libc::EFD_CLOEXEC);
    if fd < 0 {
        return Err(*libc::__errno_location());
    }
    Ok(Box::into_raw(Box::new(EvChan { c: rdma_event_channel { fd }, queue: VecDeque::new(), sync })))
}

#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_create_event_channel() -> *mut rdma_event_channel {
    match new_channel(false) {
        Ok(ch) => &mut (*ch).c,
        Err(e) => {
            set_errno(e);
            null_mut()
        }
    }
}
export!(rdma_create_event_channel, "RDMACM_1.0");

#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_event_channel(channel: *mut rdma_event_channel) {
    if channel.is_null() {
        return;
    }
    let g = lock();
    // Ids still on the channel (librdmacm leaves that to the program) lose it: their later
    // events are dropped, not queued on freed memory.
    for port in &g.cm_ports {
        for &o in &port.ids {
            if (*o).c.channel == channel {
                (*o).c.channel = null_mut();
            }
        }
    }
    let ch = Box::from_raw(channel as *mut EvChan);
    for ev in ch.queue.iter() {
        free_event(*ev);
    }
    libc::close(ch.c.fd);
}
export!(rdma_destroy_event_channel, "RDMACM_1.0");

/// `rdma_create_id(3)`: an id of `RDMA_PS_TCP` (or `RDMA_PS_IB`), RC. With no channel the id
/// is synchronous: its calls wait for their own events.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_create_id(
    channel: *mut rdma_event_channel,
    id: *mut *mut rdma_cm_id,
    context: *mut c_void,
    ps: c_int,
) -> c_int {
    if id.is_null() {
        return ret(Err(EINVAL));
    }
    if ps != RDMA_PS_TCP && ps != RDMA_PS_IB {
        debug("rdma_create_id", &format!("port space {ps:#x}: only RDMA_PS_TCP / RDMA_PS_IB (RC) ids"));
        return ret(Err(EOPNOTSUPP));
    }
    let _g = lock();
    let ch = if channel.is_null() {
        match new_channel(true) {
            Ok(ch) => &mut (*ch).c as *mut rdma_event_channel,
            Err(e) => return ret(Err(e)),
        }
    } else {
        channel
    };
    let mut c: rdma_cm_id = zeroed();
    c.channel = ch;
    c.context = context;
    c.ps = ps;
    c.qp_type = QPT_RC;
    let o = Box::into_raw(Box::new(CmIdObj { c, id: None, port: None, path: zeroed() }));
    *id = &mut (*o).c;
    0
}
export!(rdma_create_id, "RDMACM_1.0");

/// `rdma_destroy_id(3)`: the connection is forgotten (the peer told, as ib_cm does), the
/// listener stops, the id's QP is destroyed in the driver if the program has not destroyed
/// it, and the id's queued events are dropped.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_id(id: *mut rdma_cm_id) -> c_int {
    destroy_id(id)
}
export!(rdma_destroy_id, "RDMACM_1.0");

/// `rdma_destroy_id`'s work (also `rdma_destroy_ep`'s).
unsafe fn destroy_id(id: *mut rdma_cm_id) -> c_int {
    if id.is_null() {
        return ret(Err(EINVAL));
    }
    let mut g = lock();
    let o = id as *mut CmIdObj;
    if let Some(pi) = (*o).port {
        g.cm_ports[pi].ids.retain(|&p| p != o);
    }
    let ch = chan_of(o);
    if !ch.is_null() {
        while let Some(ev) = pop(ch, |e| e.c.id == id) {
            free_event(ev);
        }
    }
    free_current(&mut (*o).c);
    // `id->qp` is not touched: the program may have destroyed it with ibv_destroy_qp (rping
    // does). The driver's id holds the QP until `destroy` (then an `ibv_qp` the program still
    // has fails its verbs with EINVAL, and ibv_destroy_qp frees it).
    let b = Box::from_raw(o);
    if let Some(d) = b.id {
        d.destroy();
    }
    // A synchronous id's channel is its own (a request's id shares its listener's).
    if !ch.is_null() && (*ch).sync && !g.cm_ports.iter().any(|p| p.ids.iter().any(|&i| (*i).c.channel == b.c.channel)) {
        let ch = Box::from_raw(ch);
        for ev in ch.queue.iter() {
            free_event(*ev);
        }
        libc::close(ch.c.fd);
    }
    0
}

/// `rdma_bind_addr(3)`: an IPv4 address of an rnic device (or 0.0.0.0: the first device)
/// and a port (0: an ephemeral one).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_bind_addr(id: *mut rdma_cm_id, addr: *mut libc::sockaddr) -> c_int {
    let mut g = lock();
    let r = (|| {
        let a = sockaddr_v4(addr)?;
        if id.is_null() {
            return Err(EINVAL);
        }
        let dev = device_for(&mut g, *a.ip())?;
        let o = id as *mut CmIdObj;
        attach(&mut g, o, dev)?;
        let (o, d) = bound(id)?;
        drv("rdma_bind_addr", d.bind_addr(a))?;
        sync_route(o);
        Ok(())
    })();
    ret(r)
}
export!(rdma_bind_addr, "RDMACM_1.0");

/// `rdma_resolve_addr(3)`: binds the id if it is not (to `src_addr`'s device, else the
/// first device that does not own `dst_addr`), and finds the peer's MAC: static neighbours
/// (the devices of the list and `RNIC_PEER`), else ARP on the port's raw Ethernet path for
/// up to `timeout_ms` (2000 if not positive; on a simulated NIC the simulator's MAC rule
/// after that). ADDR_RESOLVED or ADDR_ERROR (`-ETIMEDOUT`) follows.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_resolve_addr(
    id: *mut rdma_cm_id,
    src_addr: *mut libc::sockaddr,
    dst_addr: *mut libc::sockaddr,
    timeout_ms: c_int,
) -> c_int {
    let mut g = lock();
    let r = (|| {
        let dst = sockaddr_v4(dst_addr)?;
        let src = if src_addr.is_null() { None } else { Some(sockaddr_v4(src_addr)?) };
        if id.is_null() {
            return Err(EINVAL);
        }
        let o = id as *mut CmIdObj;
        if (*o).id.is_none() {
            let dev = match src {
                Some(s) => device_for(&mut g, *s.ip())?,
                None => source_device(&mut g, *dst.ip())?,
            };
            attach(&mut g, o, dev)?;
        }
        let (o, d) = bound(id)?;
        let src = src.filter(|_| d.local_addr().is_none());
        let timeout = match u64::try_from(timeout_ms) {
            Ok(ms) if ms > 0 => std::time::Duration::from_millis(ms),
            _ => rnic::cm::id::DEFAULT_RESOLVE_TIMEOUT,
        };
        drv("rdma_resolve_addr", d.resolve_addr_timeout(src, dst, timeout))?;
        sync_route(o);
        Ok(())
    })();
    if let Err(e) = r {
        return ret(Err(e));
    }
    ret(sync_wait(g, id as *mut CmIdObj, 0))
}
export!(rdma_resolve_addr, "RDMACM_1.0");

/// `rdma_resolve_route(3)`: the peer is on the port's link; ROUTE_RESOLVED follows and
/// `route.path_rec` describes the path (MTU 4096, hop limit 64).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_resolve_route(id: *mut rdma_cm_id, _timeout_ms: c_int) -> c_int {
    let g = lock();
    let r = (|| {
        let (o, d) = bound(id)?;
        drv("rdma_resolve_route", d.resolve_route())?;
        sync_route(o);
        Ok(())
    })();
    if let Err(e) = r {
        return ret(Err(e));
    }
    ret(sync_wait(g, id as *mut CmIdObj, 2))
}
export!(rdma_resolve_route, "RDMACM_1.0");

/// `rdma_create_qp(3)`: an RC QP on the id, from `pd` (of the id's `verbs`) and the CQs in
/// `qp_init_attr` (which must be given), in INIT; `id->qp` is the program's `ibv_qp`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_create_qp(
    id: *mut rdma_cm_id,
    pd: *mut ibv_pd,
    qp_init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    let _g = lock();
    let r = (|| {
        let (o, d) = bound(id)?;
        if qp_init_attr.is_null() {
            return Err(EINVAL);
        }
        let pd = if pd.is_null() { o.c.pd } else { pd };
        let a = &mut *qp_init_attr;
        if pd.is_null() || a.send_cq.is_null() {
            debug("rdma_create_qp", &"needs a PD and the CQs in qp_init_attr (rnic does not make them)");
            return Err(EINVAL);
        }
        if a.qp_type != QPT_RC {
            debug("rdma_create_qp", &"rnic's rdma_cm ids connect RC QPs");
            return Err(EOPNOTSUPP);
        }
        if (*pd).context != o.c.verbs || !o.c.qp.is_null() {
            return Err(EINVAL);
        }
        drv("rdma_create_qp", d.create_qp(qp_builder(obj::<Pd>(pd), a, QpType::Rc)))?;
        let qp = wrap_qp(pd, a, QpType::Rc, QpHold::Cm(d.clone()));
        if qp.is_null() {
            let _ = d.destroy_qp();
            return Err(EINVAL);
        }
        o.c.qp = qp;
        o.c.pd = pd;
        o.c.send_cq = a.send_cq;
        o.c.recv_cq = if a.recv_cq.is_null() { a.send_cq } else { a.recv_cq };
        o.c.srq = a.srq;
        o.c.send_cq_channel = (*a.send_cq).channel;
        o.c.recv_cq_channel = (*o.c.recv_cq).channel;
        Ok(())
    })();
    ret(r)
}
export!(rdma_create_qp, "RDMACM_1.0");

/// `rdma_destroy_qp(3)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_destroy_qp(id: *mut rdma_cm_id) {
    if id.is_null() {
        return;
    }
    let _g = lock();
    if !(*id).qp.is_null() {
        destroy_qp((*id).qp);
        (*id).qp = null_mut();
    }
}
export!(rdma_destroy_qp, "RDMACM_1.0");

/// `struct rdma_conn_param` (null: librdmacm's defaults) as the driver's.
unsafe fn to_conn_param(p: *const rdma_conn_param) -> ConnParam {
    let Some(p) = p.as_ref() else { return ConnParam::default() };
    let mut c = ConnParam {
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        retry_count: p.retry_count.min(7),
        rnr_retry_count: p.rnr_retry_count.min(7),
        ..ConnParam::default()
    };
    if !p.private_data.is_null() && p.private_data_len > 0 {
        c.private_data =
            std::slice::from_raw_parts(p.private_data.cast::<u8>(), usize::from(p.private_data_len)).to_vec();
    }
    c
}

/// `rdma_connect(3)`: the REQ to the resolved peer with the id's QP; ESTABLISHED (the QP in
/// RTS), REJECTED or UNREACHABLE follows.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_connect(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    let g = lock();
    let r = (|| {
        let (o, d) = bound(id)?;
        if o.c.qp.is_null() {
            debug(
                "rdma_connect",
                &"the id has no QP (rdma_create_qp); rnic does not connect QPs made with ibv_create_qp",
            );
            return Err(EOPNOTSUPP);
        }
        drv("rdma_connect", d.connect(&to_conn_param(conn_param)))
    })();
    if let Err(e) = r {
        return ret(Err(e));
    }
    ret(sync_wait(g, id as *mut CmIdObj, 9))
}
export!(rdma_connect, "RDMACM_1.0");

/// `rdma_listen(3)` on a bound id; CONNECT_REQUEST events follow, each with a new id.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_listen(id: *mut rdma_cm_id, backlog: c_int) -> c_int {
    let _g = lock();
    ret(bound(id).and_then(|(_, d)| drv("rdma_listen", d.listen(backlog.max(0) as u32))))
}
export!(rdma_listen, "RDMACM_1.0");

/// `rdma_get_request(3)` on a synchronous listening id: waits for a connection request and
/// returns its new id (whose `event` is the request until it is accepted or rejected).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_request(listen: *mut rdma_cm_id, id: *mut *mut rdma_cm_id) -> c_int {
    if listen.is_null() || id.is_null() {
        return ret(Err(EINVAL));
    }
    let g = lock();
    let ch = chan_of(listen as *mut CmIdObj);
    if ch.is_null() || !(*ch).sync {
        return ret(Err(EINVAL));
    }
    let listener = listen;
    match wait_event(g, ch, None, false) {
        Ok(ev) if (*ev).c.event == 4 && (*ev).c.listen_id == listener => {
            *id = (*ev).c.id;
            (*(*ev).c.id).event = &mut (*ev).c;
            0
        }
        Ok(ev) => {
            let status = (*ev).c.status;
            free_event(ev);
            ret(Err(if status < 0 { -status } else { EINVAL }))
        }
        Err(e) => ret(Err(e)),
    }
}
export!(rdma_get_request, "RDMACM_1.0");

/// `rdma_accept(3)` on a request's id: its QP to RTR and RTS with the REQ's parameters, then
/// the REP; ESTABLISHED follows on the RTU.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_accept(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    let g = lock();
    let r = (|| {
        let (o, d) = bound(id)?;
        if o.c.qp.is_null() {
            debug("rdma_accept", &"the id has no QP (rdma_create_qp)");
            return Err(EOPNOTSUPP);
        }
        drv("rdma_accept", d.accept(&to_conn_param(conn_param)))?;
        free_current(&mut o.c);
        Ok(())
    })();
    if let Err(e) = r {
        return ret(Err(e));
    }
    ret(sync_wait(g, id as *mut CmIdObj, 9))
}
export!(rdma_accept, "RDMACM_1.0");

unsafe fn reject(id: *mut rdma_cm_id, private_data: *const c_void, len: u8) -> c_int {
    let _g = lock();
    let r = (|| {
        let (o, d) = bound(id)?;
        let pd = if private_data.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(private_data.cast::<u8>(), usize::from(len))
        };
        drv("rdma_reject", d.reject(pd))?;
        free_current(&mut o.c);
        Ok(())
    })();
    ret(r)
}

/// `rdma_reject(3)`: a REJ (reason 28, consumer reject) with the private data.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_reject(id: *mut rdma_cm_id, private_data: *const c_void, len: u8) -> c_int {
    reject(id, private_data, len)
}
export!(rdma_reject, "RDMACM_1.0");

/// `rdma_reject_ece(3)`: as `rdma_reject` (rnic sets no ECE options).
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_reject_ece(id: *mut rdma_cm_id, private_data: *const c_void, len: u8) -> c_int {
    reject(id, private_data, len)
}
export!(rdma_reject_ece, "RDMACM_1.3");

/// `rdma_notify(3)`: `IBV_EVENT_COMM_EST` on a passive connection whose RTU is lost.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_notify(id: *mut rdma_cm_id, event: c_int) -> c_int {
    let _g = lock();
    if event != IBV_EVENT_COMM_EST {
        return ret(Err(EINVAL));
    }
    ret(bound(id).and_then(|(_, d)| drv("rdma_notify", d.notify(rnic::AsyncEventType::CommEst))))
}
export!(rdma_notify, "RDMACM_1.0");

/// `rdma_disconnect(3)`: the QP to ERR (its WRs flush) and a DREQ; DISCONNECTED follows.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_disconnect(id: *mut rdma_cm_id) -> c_int {
    let mut g = lock();
    // (`id->qp`'s `state` is refreshed by its next verb: the program may already have
    // destroyed that `ibv_qp`, so it is not touched here.)
    let r = bound(id).and_then(|(_, d)| drv("rdma_disconnect", d.disconnect()));
    pump(&mut g);
    ret(r)
}
export!(rdma_disconnect, "RDMACM_1.0");

/// `rdma_get_cm_event(3)`: the channel's next event, waiting for it unless the program made
/// the channel's fd non-blocking (then EAGAIN). Give it back with `rdma_ack_cm_event`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_get_cm_event(
    channel: *mut rdma_event_channel,
    event: *mut *mut rdma_cm_event,
) -> c_int {
    if channel.is_null() || event.is_null() {
        return ret(Err(EINVAL));
    }
    let nonblock = libc::fcntl((*channel).fd, libc::F_GETFL) & libc::O_NONBLOCK != 0;
    let g = lock();
    match wait_event(g, channel as *mut EvChan, None, nonblock) {
        Ok(ev) => {
            // As librdmacm: `id->event` is set only by the synchronous calls.
            *event = &mut (*ev).c;
            0
        }
        Err(e) => ret(Err(e)),
    }
}
export!(rdma_get_cm_event, "RDMACM_1.0");

/// `rdma_ack_cm_event(3)`.
#[no_mangle]
pub unsafe extern "C" fn rnic_rdma_ack_cm_event(event: *mut rdma_cm_event) -> c_int {
    if event.is_null() {
        return ret(Err(EINVAL));
    }
    let _g = lock();
    free_event(event as *mut CmEv);
    0
}
export!(rdma_ack_cm_event, "RDMACM_1.0");

mod misc;
