//! [`EventChannel`] (`rdma_create_event_channel(3)`, `rdma_get_cm_event(3)`,
//! `rdma_ack_cm_event(3)`): where the rdma_cm events of a port's connection ids arrive, and
//! the progress function that makes them happen.
//!
//! The channel owns the port's CM agent: QP1 (UD, QPN 1, Q_Key `GSI_QKEY`) and the
//! [`CmEngine`](super::CmEngine) whose MADs it carries (see `port.rs` and docs/cm.md). Nothing
//! in the driver runs behind the caller's back, so the CM moves only in
//! [`EventChannel::process`]: it takes QP1's completions, feeds the received MADs to the
//! engine, runs its timers, sends what it queued, moves the ids' RC QPs through INIT → RTR →
//! RTS as the exchange goes, and queues the resulting events.
//! [`EventChannel::get_cm_event`] calls it while it waits. A program on hardware calls it
//! when QP1's CQ has completions or the engine's next timeout ([`EventChannel::next_timeout_ns`])
//! is due, from a thread of its own or its poll loop; with the in-process simulator a test
//! calls it for each host it pumps (both hosts share one clock, the world's cycles).
use std::cell::{Cell, RefCell, RefMut};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::{Rc, Weak};

use super::engine::CmConfig;
use super::id::{IdInner, IdState, RdmaCmId};
use super::port::{Agent, AgentStats};
use super::types::{CmEvent, CmStats, ConnectRequest};
use crate::context::Context;
use crate::error::{Error, IoKind, Result};
use crate::mr::AccessFlags;
use crate::qp::{AddressVector, QpAttr, QpAttrMask, QpState, QueuePair};

/// `enum rdma_cm_event_type` (`rdma_cm(7)`): what an [`RdmaCmEvent`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmEventType {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`: [`RdmaCmId::resolve_addr`] found the peer's MAC.
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR`: it did not (status `-EHOSTUNREACH`).
    AddrError,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`: [`RdmaCmId::resolve_route`] made the path.
    RouteResolved,
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`: a REQ for a listening id; `id` is the new connection,
    /// `listen_id` the listener, `private_data` the client's (up to 56 bytes, zero-padded).
    ConnectRequest,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`: the id's QP could not be moved to RTR/RTS with the
    /// peer's parameters (status the errno); the connection was rejected.
    ConnectError,
    /// `RDMA_CM_EVENT_UNREACHABLE`: the REQ or REP went unanswered through every retry
    /// (status `-ETIMEDOUT`).
    Unreachable,
    /// `RDMA_CM_EVENT_REJECTED`: the peer sent a REJ; status is its reason (IBTA Vol 1
    /// Table 112: 8 no listener, 28 the consumer's), `private_data` its 148 bytes.
    Rejected,
    /// `RDMA_CM_EVENT_ESTABLISHED`: the connection is up (the QP is in RTS). On the active
    /// side `private_data` is the REP's (196 bytes, zero-padded).
    Established,
    /// `RDMA_CM_EVENT_DISCONNECTED`: a DREQ arrived, or ours was answered (or went
    /// unanswered); the QP has been moved to ERR.
    Disconnected,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`: the connection left TimeWait; its QP may be reused.
    TimewaitExit,
}

/// One event (`struct rdma_cm_event`). Give it back with [`EventChannel::ack_cm_event`].
#[derive(Debug)]
pub struct RdmaCmEvent<'mr> {
    /// What happened.
    pub event: CmEventType,
    /// The id it is about (for `ConnectRequest`: the new id of the connection).
    pub id: RdmaCmId<'mr>,
    /// For `ConnectRequest`: the listening id.
    pub listen_id: Option<RdmaCmId<'mr>>,
    /// 0, a negative errno, or a REJ's reason (`Rejected`).
    pub status: i32,
    /// The private data the peer's message carried (REQ, REP or REJ), empty otherwise.
    pub private_data: Vec<u8>,
}

/// How a channel's CM agent times its exchanges (the REQ fields of IBTA Vol 1 12.6.5 it
/// fills, and the engine's [`CmConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    /// CM response timeout exponent of the REQs we send (4.096 µs × 2^n; rdma_cm: 20).
    pub cm_response_timeout: u8,
    /// CM retries of the REQs we send (rdma_cm: 15).
    pub max_cm_retries: u8,
    /// Packet life time exponent (4.096 µs × 2^n; rdma_cm on RoCE: 16): retransmissions
    /// wait twice this on top of the response timeout, TimeWait lasts twice this.
    pub packet_life_time: u8,
}

impl Default for ChannelConfig {
    /// rdma_cm's values: 20, 15 and 16 (a REQ resent every 4.8 s, TimeWait 537 ms).
    fn default() -> Self {
        Self { cm_response_timeout: 20, max_cm_retries: 15, packet_life_time: 16 }
    }
}

pub(crate) struct ChanInner<'mr> {
    pub(crate) agent: RefCell<Agent>,
    pub(crate) config: ChannelConfig,
    /// Connections by the engine's local communication ID.
    pub(crate) conns: RefCell<BTreeMap<u32, Weak<IdInner<'mr>>>>,
    /// Listening ids by port.
    pub(crate) listeners: RefCell<HashMap<u16, Weak<IdInner<'mr>>>>,
    /// Ids whose address ARP is resolving.
    pub(crate) resolving: RefCell<Vec<Weak<IdInner<'mr>>>>,
    /// REQs from addresses ARP is resolving: reported once their MAC is known.
    deferred: RefCell<Vec<ConnectRequest>>,
    events: RefCell<VecDeque<RdmaCmEvent<'mr>>>,
    unacked: Cell<usize>,
    next_port: Cell<u16>,
    efd: OwnedFd,
}

impl<'mr> ChanInner<'mr> {
    pub(crate) fn agent(&self) -> Result<RefMut<'_, Agent>> {
        self.agent.try_borrow_mut().map_err(|_| Error::Busy("the CM channel is processing".into()))
    }

    /// Queues an event and makes the fd readable.
    pub(crate) fn push(&self, ev: RdmaCmEvent<'mr>) {
        self.events.borrow_mut().push_back(ev);
        let one = 1u64;
        // SAFETY: an eventfd and 8 bytes; a full counter (EAGAIN) is still readable.
        unsafe { libc::write(self.efd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Makes the fd unreadable (no events queued).
    fn clear_fd(&self) {
        let mut n = 0u64;
        // SAFETY: an eventfd and 8 bytes; EAGAIN (already zero) is fine.
        unsafe { libc::read(self.efd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }

    /// An ephemeral source port (rdma_cm's range: 32768…60999, as Linux's).
    pub(crate) fn ephemeral_port(&self) -> u16 {
        let p = self.next_port.get();
        self.next_port.set(if p >= 60999 { 32768 } else { p + 1 });
        p
    }
}

/// An rdma_cm event channel of one port (`struct rdma_event_channel`). Cheap to clone; ids
/// keep it alive.
///
/// librdmacm's channel is not tied to a device: the kernel CM behind it serves every port.
/// rnic has no kernel part, so the channel is the port's CM: creating it creates QP1 on the
/// context's port, and there is one per context (a second fails with `NoMemory`, QP 1 being
/// taken).
#[derive(Clone)]
pub struct EventChannel<'mr> {
    pub(crate) inner: Rc<ChanInner<'mr>>,
}

impl std::fmt::Debug for EventChannel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel").field("fd", &self.fd()).finish_non_exhaustive()
    }
}

impl AsRawFd for EventChannel<'_> {
    fn as_raw_fd(&self) -> RawFd {
        self.fd()
    }
}

impl<'mr> EventChannel<'mr> {
    /// The CM of `ctx`'s port with rdma_cm's timing ([`ChannelConfig::default`]).
    ///
    /// # Errors
    /// As [`with_config`](Self::with_config).
    pub fn new(ctx: &Context) -> Result<Self> {
        Self::with_config(ctx, ChannelConfig::default())
    }

    /// The CM of `ctx`'s port: creates QP1 (a UD QP with QP number 1 and Q_Key
    /// `GSI_QKEY`, 0x8001_0000, in RTS, IBTA Vol 1 13.5 and Annex A17) with its own PD, a
    /// 32-entry CQ and 16 receive buffers of 40 + 4096 bytes posted, and a CM engine whose CA GUID is
    /// the port's EUI-64.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the context has no port address or a timing exponent is
    /// over 31 (retries over 15); [`Error::NoMemory`] if QP 1 exists already (another channel
    /// on this context) or no CQ, PD or DMA memory is left; backend errors.
    pub fn with_config(ctx: &Context, config: ChannelConfig) -> Result<Self> {
        if config.cm_response_timeout > 31 || config.packet_life_time > 31 || config.max_cm_retries > 15 {
            return Err(Error::inval(format!("{config:?}: exponents are 5 bits, retries 4 bits")));
        }
        let port =
            ctx.port_addr().ok_or_else(|| Error::inval("the port address is not set (Context::set_port_addr)"))?;
        let seed = u32::from(port.ip) ^ (ctx.device().now_cycles() as u32).rotate_left(16);
        let mut cm = CmConfig::new(crate::query::eui64(port.mac), seed | 1);
        cm.packet_life_time = config.packet_life_time;
        let agent = Agent::new(ctx, cm)?;
        // SAFETY: eventfd(2) returns a new descriptor or -1 (checked).
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(Error::io(
                IoKind::Backend,
                "eventfd for the CM event channel",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        let efd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self {
            inner: Rc::new(ChanInner {
                agent: RefCell::new(agent),
                config,
                conns: RefCell::new(BTreeMap::new()),
                listeners: RefCell::new(HashMap::new()),
                resolving: RefCell::new(Vec::new()),
                deferred: RefCell::new(Vec::new()),
                events: RefCell::new(VecDeque::new()),
                unacked: Cell::new(0),
                next_port: Cell::new(32768 + (seed % 28000) as u16),
                efd,
            }),
        })
    }

    /// The channel's file descriptor (`rdma_event_channel.fd`): an eventfd, readable (POLLIN)
    /// while events wait in the channel. It does not wake up for MADs arriving on QP1: a poll
    /// loop calls [`process`](Self::process) when QP1's CQ may have completions (here: every
    /// turn, or at [`next_timeout_ns`](Self::next_timeout_ns)), then waits on this fd.
    pub fn fd(&self) -> RawFd {
        self.inner.efd.as_raw_fd()
    }

    /// Creates a connection id (`rdma_create_id(3)` with `RDMA_PS_TCP`, an RC QP).
    pub fn create_id(&self) -> RdmaCmId<'mr> {
        RdmaCmId { inner: Rc::new(IdInner { chan: Rc::downgrade(&self.inner), st: RefCell::new(IdState::default()) }) }
    }

    /// The MAC of `ip` for a QP's or an address handle's path (what the kernel's
    /// `ib_resolve_eth_dmac` does for `ibv_modify_qp(3)` and `ibv_create_ah(3)` on RoCE):
    /// a static entry or one ARP learned at once, else ARP on the port's raw path, running the
    /// channel (`process`) until the answer or `timeout`; then, on a simulated NIC, the
    /// simulator's rule (a peer process answers ARP only once its own port agent exists:
    /// `ibv_rc_pingpong`'s server resolves its client while the client waits for it). Blocks
    /// for up to `timeout`. `None`: no answer.
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing; errors of [`Self::process`].
    pub fn resolve_neighbor(
        &self,
        ip: std::net::Ipv4Addr,
        timeout: std::time::Duration,
    ) -> Result<Option<crate::MacAddr>> {
        if let Some(m) = self.inner.agent()?.neighbors.lookup(ip) {
            return Ok(Some(m));
        }
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Ok(None);
        }
        self.inner.agent()?.neighbors.start(ip, timeout);
        loop {
            self.process()?;
            let a = self.inner.agent()?;
            if let Some(m) = a.neighbors.lookup(ip) {
                return Ok(Some(m));
            }
            if !a.neighbors.is_resolving(ip) {
                return Ok(a.neighbors.sim_fallback(ip));
            }
            drop(a);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// ARP's counters on this channel's port ([`super::arp`]).
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing.
    pub fn arp_stats(&self) -> Result<super::ArpStats> {
        Ok(self.inner.agent()?.neighbors.stats())
    }

    /// Adds a static neighbor (IPv4 → MAC) for address resolution; see [`super::Neighbors`].
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing.
    pub fn add_neighbor(&self, ip: std::net::Ipv4Addr, mac: crate::MacAddr) -> Result<()> {
        self.inner.agent()?.neighbors.add(ip, mac);
        Ok(())
    }

    /// The engine's counters and the agent's (MADs received and sent on QP1, unresolved
    /// destinations, QP1 errors).
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing.
    pub fn stats(&self) -> Result<(CmStats, AgentStats)> {
        let a = self.inner.agent()?;
        Ok((a.engine.stats(), a.stats))
    }

    /// QP1's QP number (always 1).
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing.
    pub fn gsi_qp_num(&self) -> Result<u32> {
        Ok(self.inner.agent()?.qpn())
    }

    /// When (ns on the device's clock, [`crate::Device::now_cycles`] at the core clock) the
    /// engine next needs [`process`](Self::process) for a timer, if it has one.
    ///
    /// # Errors
    /// [`Error::Busy`] while the channel is processing.
    pub fn next_timeout_ns(&self) -> Result<Option<u64>> {
        Ok(self.inner.agent()?.engine.next_timeout())
    }

    /// Runs the CM once without waiting: QP1's completions, due timers, MADs to send, QP
    /// transitions, events. Returns how many events it queued.
    ///
    /// # Errors
    /// [`Error::Busy`] when called from inside itself or while an id's QP is borrowed by
    /// the caller; QP1's backend errors.
    pub fn process(&self) -> Result<usize> {
        let before = self.inner.events.borrow().len();
        let mut evs = self.inner.agent()?.process()?;
        self.address_resolutions()?;
        // Every engine event is dispatched even if one fails; the first failure is returned.
        let mut failed = None;
        while !evs.is_empty() {
            for ev in evs {
                if let Err(e) = self.dispatch(ev) {
                    failed.get_or_insert(e);
                }
            }
            let mut a = self.inner.agent()?;
            a.flush()?;
            evs = std::iter::from_fn(|| a.engine.poll_event()).collect();
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(self.inner.events.borrow().len() - before),
        }
    }

    /// Reports the address resolutions ARP ended: `AddrResolved` for an answer (or, on a
    /// simulated NIC, the simulator's rule after a timeout), `AddrError` with `-ETIMEDOUT`
    /// otherwise, to every id waiting for that address.
    fn address_resolutions(&self) -> Result<()> {
        // Each ended resolution's MAC: ARP's answer, else the simulator's rule (simulated NIC).
        let ended: Vec<_> = {
            let mut a = self.inner.agent()?;
            let ended = std::mem::take(&mut a.resolved);
            ended.into_iter().map(|(ip, mac)| (ip, mac.or_else(|| a.neighbors.sim_fallback(ip)))).collect()
        };
        if ended.is_empty() {
            return Ok(());
        }
        let waiting: Vec<_> = self.inner.resolving.borrow().iter().filter_map(Weak::upgrade).collect();
        for &(ip, mac) in &ended {
            for inner in &waiting {
                let id = RdmaCmId { inner: Rc::clone(inner) };
                let mut st = inner.st.borrow_mut();
                if !st.resolving || st.remote.map(|r| *r.ip()) != Some(ip) {
                    continue;
                }
                st.resolving = false;
                st.dest_mac = mac;
                st.addr_resolved = mac.is_some();
                drop(st);
                let (ev, status) = if mac.is_some() {
                    (CmEventType::AddrResolved, 0)
                } else {
                    (CmEventType::AddrError, -libc::ETIMEDOUT)
                };
                self.inner.push(RdmaCmEvent { event: ev, id, listen_id: None, status, private_data: Vec::new() });
            }
        }
        self.inner.resolving.borrow_mut().retain(|w| w.upgrade().is_some_and(|i| i.st.borrow().resolving));
        // REQs that waited for their sender's MAC.
        for (ip, mac) in ended {
            let (now_ready, rest): (Vec<_>, Vec<_>) =
                self.inner.deferred.take().into_iter().partition(|r| *r.src.ip() == ip);
            *self.inner.deferred.borrow_mut() = rest;
            for req in now_ready {
                self.request_with_mac(Box::new(req), mac)?;
            }
        }
        Ok(())
    }

    /// Takes the next event if one is queued (`rdma_get_cm_event(3)` on a non-blocking
    /// channel); does not run the CM.
    pub fn poll_cm_event(&self) -> Option<RdmaCmEvent<'mr>> {
        let mut q = self.inner.events.borrow_mut();
        let ev = q.pop_front()?;
        if q.is_empty() {
            self.inner.clear_fd();
        }
        self.inner.unacked.set(self.inner.unacked.get() + 1);
        Some(ev)
    }

    /// Waits for the next event (`rdma_get_cm_event(3)`), running the CM
    /// ([`process`](Self::process)) and letting the device progress while it waits, for at
    /// most `budget_cycles` NIC cycles.
    ///
    /// # Errors
    /// [`Error::TimedOut`] when the budget runs out; as [`process`](Self::process).
    pub fn get_cm_event(&self, budget_cycles: u64) -> Result<RdmaCmEvent<'mr>> {
        let dev = std::rc::Rc::clone(self.inner.agent()?.ctx.device());
        let start = dev.now_cycles();
        loop {
            self.process()?;
            if let Some(ev) = self.poll_cm_event() {
                return Ok(ev);
            }
            if dev.now_cycles().saturating_sub(start) >= budget_cycles {
                return Err(Error::TimedOut(format!("no rdma_cm event within {budget_cycles} cycles")));
            }
            dev.poll_progress();
        }
    }

    /// Gives an event back (`rdma_ack_cm_event(3)`). Events hold their ids alive.
    pub fn ack_cm_event(&self, event: RdmaCmEvent<'mr>) {
        drop(event);
        self.inner.unacked.set(self.inner.unacked.get().saturating_sub(1));
    }

    /// Events taken and not yet acknowledged.
    pub fn unacked_events(&self) -> usize {
        self.inner.unacked.get()
    }

    fn id_of(&self, comm_id: u32) -> Option<RdmaCmId<'mr>> {
        self.inner.conns.borrow().get(&comm_id).and_then(Weak::upgrade).map(|inner| RdmaCmId { inner })
    }

    fn forget(&self, comm_id: u32) {
        self.inner.conns.borrow_mut().remove(&comm_id);
    }

    fn event(&self, event: CmEventType, id: RdmaCmId<'mr>, status: i32, private_data: Vec<u8>) {
        self.inner.push(RdmaCmEvent { event, id, listen_id: None, status, private_data });
    }

    /// Turns one engine event into an rdma_cm event, doing what librdmacm does on the way
    /// (QP transitions, the RTU).
    fn dispatch(&self, ev: CmEvent) -> Result<()> {
        let comm = ev.id().local_comm_id();
        match ev {
            CmEvent::ConnectRequest(req) => self.connect_request(req)?,
            CmEvent::ConnectResponse(rep) => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                let ready = id.inner.ready_active(&rep);
                let now = self.inner.agent()?.now_ns();
                match ready {
                    Ok(()) => {
                        id.inner.st.borrow_mut().conn_private = rep.private_data.clone();
                        let mut a = self.inner.agent()?;
                        a.engine.establish(now, rep.id).map_err(|e| Error::inval(e.to_string()))?;
                    }
                    Err(e) => {
                        let _ = self.inner.agent()?.engine.reject(now, rep.id, &[]);
                        self.forget(comm);
                        id.inner.st.borrow_mut().conn = None;
                        self.event(CmEventType::ConnectError, id, -(e.errno() as i32), Vec::new());
                    }
                }
            }
            CmEvent::Established { .. } => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                let pdata = std::mem::take(&mut id.inner.st.borrow_mut().conn_private);
                self.event(CmEventType::Established, id, 0, pdata);
            }
            CmEvent::Rejected { reason, private_data, .. } => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                self.forget(comm);
                id.inner.st.borrow_mut().conn = None;
                self.event(CmEventType::Rejected, id, i32::from(reason), private_data);
            }
            CmEvent::Unreachable { .. } => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                self.forget(comm);
                id.inner.st.borrow_mut().conn = None;
                self.event(CmEventType::Unreachable, id, -(libc::ETIMEDOUT), Vec::new());
            }
            CmEvent::Disconnected { .. } => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                id.inner.qp_to_err();
                self.event(CmEventType::Disconnected, id, 0, Vec::new());
            }
            CmEvent::TimewaitExit { .. } => {
                let Some(id) = self.id_of(comm) else { return Ok(()) };
                self.forget(comm);
                id.inner.st.borrow_mut().conn = None;
                self.event(CmEventType::TimewaitExit, id, 0, Vec::new());
            }
        }
        Ok(())
    }

    /// A REQ for one of our listeners: a new id, reported to the listener's owner.
    fn connect_request(&self, req: Box<ConnectRequest>) -> Result<()> {
        if self.inner.listeners.borrow().get(&req.dst.port()).is_none_or(|l| l.upgrade().is_none()) {
            let now = self.inner.agent()?.now_ns();
            let _ = self.inner.agent()?.engine.reject(now, req.id, &[]);
            return Ok(());
        }
        // The sender's MAC: known (a static entry, or ARP learned it from the client's own
        // request), else ARP is asked and the REQ waits for the answer (the REP must reach it).
        let src = *req.src.ip();
        let mac = {
            let mut a = self.inner.agent()?;
            let m = a.neighbors.lookup(src);
            if m.is_none() && !(src.is_unspecified() || src.is_broadcast() || src.is_multicast()) {
                a.neighbors.start(src, super::id::DEFAULT_RESOLVE_TIMEOUT);
                drop(a);
                self.inner.deferred.borrow_mut().push(*req);
                return Ok(());
            }
            m
        };
        self.request_with_mac(req, mac)
    }

    /// Reports a REQ whose sender's MAC is `mac` to its listener (a REJ if the listener is gone
    /// or the MAC unknown).
    fn request_with_mac(&self, req: Box<ConnectRequest>, mac: Option<crate::MacAddr>) -> Result<()> {
        let listener = self.inner.listeners.borrow().get(&req.dst.port()).and_then(Weak::upgrade);
        let (Some(listener), Some(_)) = (listener, mac) else {
            let now = self.inner.agent()?.now_ns();
            let _ = self.inner.agent()?.engine.reject(now, req.id, &[]);
            return Ok(());
        };
        let id = self.create_id();
        {
            let mut st = id.inner.st.borrow_mut();
            st.local = Some(req.dst);
            st.remote = Some(req.src);
            st.dest_mac = mac;
            st.route_resolved = true;
            st.path_mtu = Some(req.path_mtu);
            st.conn = Some(req.id);
            st.request = Some(req.clone());
        }
        self.inner.conns.borrow_mut().insert(req.id.local_comm_id(), Rc::downgrade(&id.inner));
        self.inner.push(RdmaCmEvent {
            event: CmEventType::ConnectRequest,
            id,
            listen_id: Some(RdmaCmId { inner: listener }),
            status: 0,
            private_data: req.private_data.clone(),
        });
        Ok(())
    }

    /// Takes the first queued `ConnectRequest` event of `listener`, if any.
    pub(crate) fn take_request(&self, listener: &Rc<IdInner<'mr>>) -> Option<RdmaCmEvent<'mr>> {
        let mut q = self.inner.events.borrow_mut();
        let i = q.iter().position(|e| {
            e.event == CmEventType::ConnectRequest
                && e.listen_id.as_ref().is_some_and(|l| Rc::ptr_eq(&l.inner, listener))
        })?;
        let ev = q.remove(i);
        if q.is_empty() {
            self.inner.clear_fd();
        }
        self.inner.unacked.set(self.inner.unacked.get() + 1);
        ev
    }
}

/// What an RC QP needs for RTR and RTS (`rdma_init_qp_attr(3)`'s values for the connection).
pub(crate) struct Path {
    pub(crate) av: AddressVector,
    pub(crate) mtu: crate::Mtu,
    pub(crate) dest_qpn: u32,
    /// The PSN the QP expects first: the one this side announced (REQ or REP).
    pub(crate) rq_psn: u32,
    /// The PSN the QP sends first: the one the peer announced.
    pub(crate) sq_psn: u32,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
}

/// Moves an RC QP in INIT to RTR and RTS along `p` (what librdmacm's `ucma_modify_qp_rtr` and
/// `ucma_modify_qp_rts` do).
pub(crate) fn to_rts(qp: &mut QueuePair<'_>, p: &Path) -> Result<()> {
    use QpAttrMask as M;
    let max = qp.pd().inner.ctx.info.max_rd_atomic.max(1);
    let attr = QpAttr {
        ah_attr: p.av,
        path_mtu: p.mtu,
        dest_qp_num: p.dest_qpn,
        rq_psn: p.rq_psn,
        max_dest_rd_atomic: p.max_dest_rd_atomic.clamp(1, max),
        min_rnr_timer: 12,
        sq_psn: p.sq_psn,
        timeout: p.timeout,
        retry_cnt: p.retry_cnt,
        rnr_retry: p.rnr_retry,
        max_rd_atomic: p.max_rd_atomic.clamp(1, max),
        ..QpAttr::default()
    };
    let rtr = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    qp.modify(&QpAttr { qp_state: QpState::Rtr, ..attr }, rtr)?;
    let rts = M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC;
    qp.modify(&QpAttr { qp_state: QpState::Rts, ..attr }, rts)
}

/// The access an id's QP grants its peer (rdma_cm: REMOTE_WRITE and REMOTE_READ).
pub(crate) const QP_ACCESS: AccessFlags = AccessFlags::REMOTE_WRITE.union(AccessFlags::REMOTE_READ);
