//! [`RdmaCmId`] (`struct rdma_cm_id`, `rdma_cm(7)`): one connection or listener of an
//! [`EventChannel`], with its RC QP, and the calls of librdmacm on it: `rdma_bind_addr`,
//! `rdma_resolve_addr`, `rdma_resolve_route`, `rdma_create_qp`, `rdma_connect`,
//! `rdma_listen`, `rdma_get_request`, `rdma_accept`, `rdma_reject`, `rdma_disconnect`,
//! `rdma_destroy_id`.
use std::cell::{RefCell, RefMut};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::{Rc, Weak};
use std::time::Duration;

use super::channel::{to_rts, ChanInner, CmEventType, EventChannel, Path, RdmaCmEvent, QP_ACCESS};
use super::types::{AcceptParams, CmError, CmId, CmState, ConnectParams, ConnectRequest, ConnectResponse};
use crate::context::MacAddr;
use crate::error::{Error, Result};
use crate::pd::ProtectionDomain;
use crate::qp::{AddressVector, Mtu, QpAttr, QpAttrMask, QpBuilder, QpState, QpType, QueuePair};
use crate::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge};

/// How long [`RdmaCmId::resolve_addr`] lets ARP try (rping's and most examples' 2000 ms).
pub const DEFAULT_RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

/// `struct rdma_conn_param` (`rdma_connect(3)`, `rdma_accept(3)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnParam {
    /// Private data: at most 56 bytes in a REQ, 196 in a REP.
    pub private_data: Vec<u8>,
    /// RDMA READs/atomics this side accepts at once as responder.
    pub responder_resources: u8,
    /// RDMA READs/atomics this side issues at once.
    pub initiator_depth: u8,
    /// Transport retries of the peer's QP (connect only, 3 bits).
    pub retry_count: u8,
    /// RNR retries of the peer's QP (3 bits; 7 is infinite).
    pub rnr_retry_count: u8,
}

impl Default for ConnParam {
    /// No private data, 1 READ/atomic each way, 7 retries, infinite RNR retries.
    fn default() -> Self {
        Self {
            private_data: Vec::new(),
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}

impl ConnParam {
    /// [`ConnParam::default`] with `private_data`.
    pub fn with_private_data(data: &[u8]) -> Self {
        Self { private_data: data.to_vec(), ..Self::default() }
    }
}

#[derive(Default)]
pub(crate) struct IdState<'mr> {
    pub(crate) local: Option<SocketAddrV4>,
    pub(crate) remote: Option<SocketAddrV4>,
    pub(crate) dest_mac: Option<MacAddr>,
    pub(crate) addr_resolved: bool,
    /// ARP is resolving the remote address (`AddrResolved` or `AddrError` to come).
    pub(crate) resolving: bool,
    pub(crate) route_resolved: bool,
    /// The path MTU (4096 once the route is resolved; a REQ's for a passive id).
    pub(crate) path_mtu: Option<Mtu>,
    pub(crate) qp: Option<QueuePair<'mr>>,
    /// The engine's connection.
    pub(crate) conn: Option<CmId>,
    pub(crate) listening: Option<u16>,
    /// The REQ a passive id came from.
    pub(crate) request: Option<Box<ConnectRequest>>,
    /// The REP's private data, for the active side's ESTABLISHED.
    pub(crate) conn_private: Vec<u8>,
    destroyed: bool,
}

pub(crate) struct IdInner<'mr> {
    pub(crate) chan: Weak<ChanInner<'mr>>,
    pub(crate) st: RefCell<IdState<'mr>>,
}

fn cm_error(e: CmError) -> Error {
    match e {
        CmError::AlreadyListening(_) | CmError::WrongState { .. } => Error::Busy(e.to_string()),
        _ => Error::InvalidArgument(e.to_string()),
    }
}

impl<'mr> IdInner<'mr> {
    fn chan(&self) -> Result<Rc<ChanInner<'mr>>> {
        self.chan.upgrade().ok_or_else(|| Error::inval("the id's event channel is gone"))
    }

    fn st(&self) -> Result<RefMut<'_, IdState<'mr>>> {
        self.st.try_borrow_mut().map_err(|_| Error::Busy("the id's QP is borrowed (RdmaCmId::qp)".into()))
    }

    /// Active side, on the REP: the QP to RTR and RTS with the peer's QPN and PSN.
    pub(crate) fn ready_active(&self, rep: &ConnectResponse) -> Result<()> {
        let mut st = self.st()?;
        let qp_psn = st.qp.as_ref().ok_or_else(|| Error::inval("the id has no QP"))?.local_psn();
        let remote = st.remote.ok_or_else(|| Error::inval("no remote address"))?;
        let mac = st.dest_mac.ok_or_else(|| Error::inval("no resolved MAC"))?;
        let path = Path {
            av: AddressVector { dest_mac: mac, dest_ip: *remote.ip() },
            mtu: st.path_mtu.unwrap_or(Mtu::Mtu4096),
            dest_qpn: rep.remote_qpn,
            // IBTA's Starting PSN is what the message's sender expects to receive (ib_cm:
            // the active side's rq_psn is its REQ's, its sq_psn the REP's).
            rq_psn: qp_psn,
            sq_psn: rep.starting_psn,
            max_dest_rd_atomic: rep.responder_resources,
            max_rd_atomic: rep.initiator_depth,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: rep.rnr_retry_count,
        };
        let qp = st.qp.as_mut().ok_or_else(|| Error::inval("the id has no QP"))?;
        to_rts(qp, &path)
    }

    /// Moves the QP to ERR (flushing its work requests), as `rdma_disconnect` does.
    pub(crate) fn qp_to_err(&self) {
        if let Ok(mut st) = self.st.try_borrow_mut() {
            if let Some(qp) = st.qp.as_mut() {
                if !matches!(qp.state(), QpState::Reset | QpState::Err) {
                    let _ = qp.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE);
                }
            }
        }
    }

    /// `rdma_destroy_id`'s work: the engine forgets the connection (telling the peer as ib_cm
    /// does) and the listener, the QP is destroyed.
    fn teardown(&self) {
        let Ok(mut st) = self.st.try_borrow_mut() else { return };
        if std::mem::replace(&mut st.destroyed, true) {
            return;
        }
        if let Some(chan) = self.chan.upgrade() {
            if let Ok(mut a) = chan.agent() {
                let now = a.now_ns();
                if let Some(conn) = st.conn.take() {
                    let _ = a.engine.destroy(now, conn);
                    let _ = a.flush();
                    if let Ok(mut c) = chan.conns.try_borrow_mut() {
                        c.remove(&conn.local_comm_id());
                    }
                }
                if let Some(port) = st.listening.take() {
                    let _ = a.engine.unlisten(port);
                    if let Ok(mut l) = chan.listeners.try_borrow_mut() {
                        l.remove(&port);
                    }
                }
            }
        }
        drop(st.qp.take());
    }
}

impl Drop for IdInner<'_> {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A connection id (`struct rdma_cm_id` of `RDMA_PS_TCP`) from [`EventChannel::create_id`],
/// or the new id of a `ConnectRequest` event. Cheap to clone; dropping the last handle is
/// [`destroy`](Self::destroy).
///
/// Active side: [`resolve_addr`](Self::resolve_addr) → `AddrResolved`,
/// [`resolve_route`](Self::resolve_route) → `RouteResolved`, [`create_qp`](Self::create_qp),
/// [`connect`](Self::connect) → `Established` (the QP in RTS) or `Rejected` / `Unreachable`.
/// Passive side: [`bind_addr`](Self::bind_addr), [`listen`](Self::listen), then per request
/// `ConnectRequest` (or [`get_request`](Self::get_request)) → a new id:
/// [`create_qp`](Self::create_qp), [`accept`](Self::accept) → `Established`, or
/// [`reject`](Self::reject). Either side: [`disconnect`](Self::disconnect) →
/// `Disconnected` on both.
#[derive(Clone)]
pub struct RdmaCmId<'mr> {
    pub(crate) inner: Rc<IdInner<'mr>>,
}

impl std::fmt::Debug for RdmaCmId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("RdmaCmId");
        if let Ok(st) = self.inner.st.try_borrow() {
            d.field("local", &st.local).field("remote", &st.remote).field("conn", &st.conn);
        }
        d.finish_non_exhaustive()
    }
}

impl PartialEq for RdmaCmId<'_> {
    /// The same id.
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<'mr> RdmaCmId<'mr> {
    fn chan(&self) -> Result<Rc<ChanInner<'mr>>> {
        self.inner.chan()
    }

    fn event(&self, chan: &ChanInner<'mr>, event: CmEventType, status: i32) {
        chan.push(RdmaCmEvent { event, id: self.clone(), listen_id: None, status, private_data: Vec::new() });
    }

    /// The local address and port (`rdma_get_local_addr(3)`), once bound or resolved.
    pub fn local_addr(&self) -> Option<SocketAddrV4> {
        self.inner.st.try_borrow().ok()?.local
    }

    /// The peer's address and port (`rdma_get_peer_addr(3)`), once resolved or connected.
    pub fn remote_addr(&self) -> Option<SocketAddrV4> {
        self.inner.st.try_borrow().ok()?.remote
    }

    /// The engine's communication ID of the connection, while there is one.
    pub fn comm_id(&self) -> Option<CmId> {
        self.inner.st.try_borrow().ok()?.conn
    }

    /// The connection's CM state (IBTA Vol 1 12.9), while there is one.
    pub fn cm_state(&self) -> Option<CmState> {
        let conn = self.comm_id()?;
        self.chan().ok()?.agent().ok()?.engine.state(conn)
    }

    /// Binds to `addr` (`rdma_bind_addr(3)`): the port's IPv4 address or 0.0.0.0 (meaning
    /// the port's), and a port (0: an ephemeral one).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another IPv4 address (EADDRNOTAVAIL) or an id already
    /// bound; [`Error::Busy`] while the channel is processing.
    pub fn bind_addr(&self, addr: SocketAddrV4) -> Result<()> {
        let chan = self.chan()?;
        let ip = chan.agent()?.port.ip;
        if !addr.ip().is_unspecified() && *addr.ip() != ip {
            return Err(Error::inval(format!("{} is not this port's address ({ip})", addr.ip())));
        }
        let mut st = self.inner.st()?;
        if st.local.is_some() {
            return Err(Error::inval("the id is already bound"));
        }
        let port = if addr.port() == 0 { chan.ephemeral_port() } else { addr.port() };
        st.local = Some(SocketAddrV4::new(ip, port));
        Ok(())
    }

    /// Resolves `dst` to the port's neighbor (`rdma_resolve_addr(3)`) within
    /// [`DEFAULT_RESOLVE_TIMEOUT`]; see [`resolve_addr_timeout`](Self::resolve_addr_timeout).
    ///
    /// # Errors
    /// As [`bind_addr`](Self::bind_addr).
    pub fn resolve_addr(&self, src: Option<SocketAddrV4>, dst: SocketAddrV4) -> Result<()> {
        self.resolve_addr_timeout(src, dst, DEFAULT_RESOLVE_TIMEOUT)
    }

    /// Resolves `dst` to the port's neighbor (`rdma_resolve_addr(3)` with `timeout_ms`):
    /// binds the id (to `src` if given, else the port's address and an ephemeral port) and
    /// finds the peer's MAC ([`super::Neighbors`]): a static entry or one ARP learned queues
    /// `AddrResolved` at once; otherwise ARP asks on the port's raw Ethernet path and
    /// [`EventChannel::process`](super::EventChannel::process) queues `AddrResolved` when
    /// the answer comes, or after `timeout` `AddrError` with status `-ETIMEDOUT` (on a
    /// simulated NIC, the simulator's MAC rule and `AddrResolved` instead). A multicast,
    /// broadcast or unspecified `dst` queues `AddrError` with `-EHOSTUNREACH` at once.
    ///
    /// # Errors
    /// As [`bind_addr`](Self::bind_addr).
    pub fn resolve_addr_timeout(&self, src: Option<SocketAddrV4>, dst: SocketAddrV4, timeout: Duration) -> Result<()> {
        let chan = self.chan()?;
        if let Some(src) = src {
            self.bind_addr(src)?;
        } else if self.local_addr().is_none() {
            self.bind_addr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))?;
        }
        let ip = *dst.ip();
        let unicast = !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast());
        let mac = chan.agent()?.neighbors.lookup(ip);
        let mut st = self.inner.st()?;
        st.remote = Some(dst);
        st.dest_mac = mac;
        st.addr_resolved = mac.is_some();
        st.resolving = mac.is_none() && unicast;
        drop(st);
        if mac.is_some() {
            self.event(&chan, CmEventType::AddrResolved, 0);
        } else if !unicast {
            self.event(&chan, CmEventType::AddrError, -libc::EHOSTUNREACH);
        } else {
            chan.agent()?.neighbors.start(ip, timeout);
            chan.resolving.borrow_mut().push(Rc::downgrade(&self.inner));
        }
        Ok(())
    }

    /// Resolves the route (`rdma_resolve_route(3)`): the peer is a neighbor on the port's
    /// link, so the path is the port's (MTU 4096, hop limit 64). Queues `RouteResolved`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before `AddrResolved`.
    pub fn resolve_route(&self) -> Result<()> {
        let chan = self.chan()?;
        let mut st = self.inner.st()?;
        if !st.addr_resolved {
            return Err(Error::inval("resolve_route needs a resolved address (resolve_addr)"));
        }
        st.route_resolved = true;
        st.path_mtu = Some(Mtu::Mtu4096);
        drop(st);
        self.event(&chan, CmEventType::RouteResolved, 0);
        Ok(())
    }

    /// Creates the id's RC QP from `builder` (`rdma_create_qp(3)`; e.g.
    /// `pd.create_qp(&cq).set_max_recv_wr(16)`) and moves it to INIT (P_Key index 0, port 1,
    /// REMOTE_WRITE | REMOTE_READ), so receives can be posted before the connection is up.
    /// The CM moves it to RTR and RTS as the connection is made.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a UD builder, a PD of another context than the
    /// channel's, or an id that has a QP; the builder's errors.
    pub fn create_qp(&self, builder: QpBuilder) -> Result<()> {
        let chan = self.chan()?;
        if self.inner.st()?.qp.is_some() {
            return Err(Error::inval("the id already has a QP"));
        }
        let mut qp = builder.build()?;
        if qp.qp_type() != QpType::Rc {
            return Err(Error::inval("rdma_cm ids of RDMA_PS_TCP connect RC QPs"));
        }
        if !Rc::ptr_eq(&qp.pd().inner.ctx, &chan.agent()?.ctx.inner) {
            return Err(Error::inval("the QP's PD belongs to another context than the event channel's"));
        }
        use QpAttrMask as M;
        let init = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: 1,
            qp_access_flags: QP_ACCESS,
            ..QpAttr::default()
        };
        qp.modify(&init, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS)?;
        self.inner.st()?.qp = Some(qp);
        Ok(())
    }

    /// The id's QP (`rdma_cm_id.qp`), for posting work requests; `None` without one, or
    /// while it is borrowed. Do not hold it across [`EventChannel::process`].
    pub fn qp(&self) -> Option<RefMut<'_, QueuePair<'mr>>> {
        RefMut::filter_map(self.inner.st.try_borrow_mut().ok()?, |s| s.qp.as_mut()).ok()
    }

    /// The QP's number, if the id has one.
    pub fn qp_num(&self) -> Option<u32> {
        self.inner.st.try_borrow().ok()?.qp.as_ref().map(|q| q.qp_num())
    }

    /// Destroys the id's QP (`rdma_destroy_qp(3)`, or `ibv_destroy_qp(3)` on `id->qp`); the
    /// id stays, without a QP. Nothing happens on an id without one.
    ///
    /// # Errors
    /// [`Error::Busy`] while the QP is borrowed ([`qp`](Self::qp)); the QP's destroy errors
    /// (the QP is gone either way).
    pub fn destroy_qp(&self) -> Result<()> {
        let qp = self.inner.st()?.qp.take();
        qp.map_or(Ok(()), QueuePair::destroy)
    }

    /// The PD of the id's QP (`rdma_cm_id.pd`), if it has one. (`rdma_reg_msgs(3)` is
    /// `pd.register(buf, AccessFlags::LOCAL_WRITE)`; the region must be registered before the
    /// id is created for its SGEs to be posted on the id, which borrows them for its life.)
    pub fn pd(&self) -> Option<ProtectionDomain> {
        self.inner.st.try_borrow().ok()?.qp.as_ref().map(|q| q.pd().clone())
    }

    fn qp_for(&self, what: &str) -> Result<RefMut<'_, QueuePair<'mr>>> {
        self.qp().ok_or_else(|| Error::inval(format!("{what} needs the id's QP (create_qp), not borrowed elsewhere")))
    }

    /// `rdma_post_send(3)`: one SEND of `sge` on the id's QP; `wr_id` is the completion's,
    /// `flags` the `IBV_SEND_*` flags (`SIGNALED`, `INLINE`, `SOLICITED`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without a QP; as [`QueuePair::post_send_one`].
    pub fn post_send(&self, wr_id: u64, sge: Sge<'mr>, flags: SendFlags) -> Result<()> {
        self.qp_for("rdma_post_send")?.post_send_one(SendWr::send(wr_id, sge).with_flags(flags))
    }

    /// `rdma_post_recv(3)`: one receive of up to `sge.length` bytes on the id's QP.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without a QP; as [`QueuePair::post_recv_one`].
    pub fn post_recv(&self, wr_id: u64, sge: Sge<'mr>) -> Result<()> {
        self.qp_for("rdma_post_recv")?.post_recv_one(RecvWr::new(wr_id, sge))
    }

    /// `rdma_post_read(3)`: an RDMA READ of `sge.length` bytes at `remote` into `sge`.
    ///
    /// # Errors
    /// As [`post_send`](Self::post_send).
    pub fn post_read(&self, wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr, flags: SendFlags) -> Result<()> {
        self.qp_for("rdma_post_read")?.post_send_one(SendWr::rdma_read(wr_id, sge, remote).with_flags(flags))
    }

    /// `rdma_post_write(3)`: an RDMA WRITE of `sge` to `remote`.
    ///
    /// # Errors
    /// As [`post_send`](Self::post_send).
    pub fn post_write(&self, wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr, flags: SendFlags) -> Result<()> {
        self.qp_for("rdma_post_write")?.post_send_one(SendWr::rdma_write(wr_id, sge, remote).with_flags(flags))
    }

    /// The connection request a passive id came from (its REQ's QPN, PSN, resources, retry
    /// counts and path, IBTA Vol 1 12.6.5), for `struct rdma_cm_event`'s `param.conn`.
    pub fn connect_request(&self) -> Option<ConnectRequest> {
        self.inner.st.try_borrow().ok()?.request.as_deref().cloned()
    }

    /// The resolved path MTU (4096 on an active id after `RouteResolved`; the REQ's on a
    /// passive id), and the peer's MAC, once known.
    pub fn path(&self) -> (Option<Mtu>, Option<MacAddr>) {
        self.inner.st.try_borrow().map_or((None, None), |st| (st.path_mtu, st.dest_mac))
    }

    /// Connects (`rdma_connect(3)`): sends a REQ to the resolved peer's port with the QP's
    /// QPN and first PSN and `param` (IBTA Vol 1 12.6.5, Annex A11), resent per the channel's
    /// [`super::ChannelConfig`]. On the REP the CM moves the QP to RTR and RTS, sends the RTU
    /// and queues `Established`; a REJ queues `Rejected`, silence `Unreachable`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before `RouteResolved`, without a QP, with a connection
    /// already, or for parameters the REQ cannot carry (over 56 bytes of private data).
    pub fn connect(&self, param: &ConnParam) -> Result<()> {
        let chan = self.chan()?;
        let mut st = self.inner.st()?;
        if !st.route_resolved {
            return Err(Error::inval("connect needs a resolved route (resolve_route)"));
        }
        if st.conn.is_some() {
            return Err(Error::inval("the id is already connecting or connected"));
        }
        let (Some(local), Some(remote)) = (st.local, st.remote) else {
            return Err(Error::inval("connect needs resolved addresses"));
        };
        let qp = st.qp.as_ref().ok_or_else(|| Error::inval("connect needs a QP (create_qp)"))?;
        let mut p = ConnectParams::new(local, remote, qp.qp_num(), qp.local_psn());
        p.responder_resources = param.responder_resources;
        p.initiator_depth = param.initiator_depth;
        p.retry_count = param.retry_count;
        p.rnr_retry_count = param.rnr_retry_count;
        p.path_mtu = st.path_mtu.unwrap_or(Mtu::Mtu4096);
        p.cm_response_timeout = chan.config.cm_response_timeout;
        p.max_cm_retries = chan.config.max_cm_retries;
        p.private_data = param.private_data.clone();
        let mut a = chan.agent()?;
        let now = a.now_ns();
        let conn = a.engine.connect(now, &p).map_err(cm_error)?;
        st.conn = Some(conn);
        chan.conns.borrow_mut().insert(conn.local_comm_id(), Rc::downgrade(&self.inner));
        a.flush()
    }

    /// Listens on the bound port (`rdma_listen(3)`); REQs for it come as `ConnectRequest`
    /// events. `backlog` is not enforced (the engine has no limit per listener yet).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the id is not bound ([`bind_addr`](Self::bind_addr));
    /// [`Error::Busy`] if the port has a listener.
    pub fn listen(&self, _backlog: u32) -> Result<()> {
        let chan = self.chan()?;
        let mut st = self.inner.st()?;
        let port = st.local.ok_or_else(|| Error::inval("listen needs a bound id (bind_addr)"))?.port();
        chan.agent()?.engine.listen(port).map_err(cm_error)?;
        st.listening = Some(port);
        chan.listeners.borrow_mut().insert(port, Rc::downgrade(&self.inner));
        Ok(())
    }

    /// Waits for the next connection request of this listener (`rdma_get_request(3)`),
    /// running the channel for at most `budget_cycles` NIC cycles. Other events stay queued.
    ///
    /// # Errors
    /// [`Error::TimedOut`] when the budget runs out; as [`EventChannel::process`].
    pub fn get_request(&self, budget_cycles: u64) -> Result<RdmaCmEvent<'mr>> {
        let chan = EventChannel { inner: self.chan()? };
        let dev = Rc::clone(chan.inner.agent()?.ctx.device());
        let start = dev.now_cycles();
        loop {
            chan.process()?;
            if let Some(ev) = chan.take_request(&self.inner) {
                return Ok(ev);
            }
            if dev.now_cycles().saturating_sub(start) >= budget_cycles {
                return Err(Error::TimedOut(format!("no connection request within {budget_cycles} cycles")));
            }
            dev.poll_progress();
        }
    }

    /// Accepts a connection request (`rdma_accept(3)`) on the id of its `ConnectRequest`:
    /// moves the QP to RTR and RTS with the REQ's QPN, PSN, MTU, retry counts and ACK timeout
    /// (READ/atomic resources the smaller of the REQ's and `param`'s), then sends the REP with
    /// `param.private_data`. `Established` follows on the RTU.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on an id that is not a request's, without a QP, with no MAC
    /// for the peer, or over 196 bytes of private data; QP modify errors.
    pub fn accept(&self, param: &ConnParam) -> Result<()> {
        let chan = self.chan()?;
        let mut st = self.inner.st()?;
        let req = st.request.clone().ok_or_else(|| Error::inval("accept needs the id of a CONNECT_REQUEST"))?;
        let conn = st.conn.ok_or_else(|| Error::inval("the request is gone"))?;
        let mac = st.dest_mac.ok_or_else(|| Error::inval(format!("no MAC known for {}", req.src.ip())))?;
        if param.private_data.len() > super::mad::private_len::REP {
            return Err(Error::inval(format!("{} bytes of private data, a REP carries 196", param.private_data.len())));
        }
        let path = Path {
            av: AddressVector { dest_mac: mac, dest_ip: *req.src.ip() },
            mtu: req.path_mtu,
            dest_qpn: req.remote_qpn,
            // We expect the PSN our REP announces; we send from the one the REQ announced.
            rq_psn: st.qp.as_ref().map_or(0, |q| q.local_psn()),
            sq_psn: req.starting_psn,
            max_dest_rd_atomic: req.responder_resources.min(param.responder_resources),
            max_rd_atomic: req.initiator_depth.min(param.initiator_depth),
            timeout: req.local_ack_timeout,
            retry_cnt: req.retry_count,
            rnr_retry: req.rnr_retry_count,
        };
        let qp = st.qp.as_mut().ok_or_else(|| Error::inval("accept needs a QP (create_qp)"))?;
        to_rts(qp, &path)?;
        let mut ap = AcceptParams::new(qp.qp_num(), qp.local_psn());
        ap.responder_resources = path.max_dest_rd_atomic;
        ap.initiator_depth = path.max_rd_atomic;
        ap.rnr_retry_count = param.rnr_retry_count;
        ap.private_data = param.private_data.clone();
        let mut a = chan.agent()?;
        let now = a.now_ns();
        a.engine.accept(now, conn, &ap).map_err(cm_error)?;
        a.flush()
    }

    /// Rejects a connection request (`rdma_reject(3)`): a REJ with reason 28 (consumer
    /// reject) and `private_data` (at most 148 bytes). The id has no connection afterwards.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on an id with no request or too much private data.
    pub fn reject(&self, private_data: &[u8]) -> Result<()> {
        let chan = self.chan()?;
        let mut st = self.inner.st()?;
        let conn = st.conn.ok_or_else(|| Error::inval("reject needs a connection request"))?;
        let mut a = chan.agent()?;
        let now = a.now_ns();
        a.engine.reject(now, conn, private_data).map_err(cm_error)?;
        st.conn = None;
        chan.conns.borrow_mut().remove(&conn.local_comm_id());
        a.flush()
    }

    /// Disconnects (`rdma_disconnect(3)`): moves the QP to ERR (its outstanding work
    /// requests complete with `IBV_WC_WR_FLUSH_ERR`) and, if the connection is still up,
    /// sends a DREQ; `Disconnected` follows on the DREP. After the peer's `Disconnected` it
    /// only moves the QP.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on an id that never connected.
    pub fn disconnect(&self) -> Result<()> {
        let chan = self.chan()?;
        self.inner.qp_to_err();
        let conn = self.inner.st()?.conn.ok_or_else(|| Error::inval("disconnect needs a connection"))?;
        let mut a = chan.agent()?;
        let now = a.now_ns();
        match a.engine.state(conn) {
            Some(CmState::Established | CmState::RepSent | CmState::RepRcvd) => {
                a.engine.disconnect(now, conn, &[]).map_err(cm_error)?;
                a.flush()
            }
            _ => Ok(()),
        }
    }

    /// Tells the CM of an asynchronous event on the id's QP (`rdma_notify(3)`). Only
    /// `IBV_EVENT_COMM_EST` means anything to it: the QP received its first packet, so the
    /// peer has the REP even if its RTU is lost, and a passive connection waiting in REP Sent
    /// becomes established (IBTA Vol 1 12.9.7.1, `CmEngine::comm_established`) and reports
    /// `Established` at once instead of after the REP's resend. The NIC raises COMM_EST only
    /// for a packet taken in RTR, and `accept` moves the QP on to RTS at once, so an
    /// application calls this when its first receive completes on a connection not yet
    /// reported established.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another event type or an id with no connection;
    /// [`Error::Busy`] if the connection is in no state to take it (not yet accepted, or
    /// disconnecting). On an established connection it does nothing.
    pub fn notify(&self, event: crate::AsyncEventType) -> Result<()> {
        if event != crate::AsyncEventType::CommEst {
            return Err(Error::inval(format!("rdma_notify takes IBV_EVENT_COMM_EST, not {event:?}")));
        }
        let chan = self.chan()?;
        let conn = self.inner.st()?.conn.ok_or_else(|| Error::inval("notify needs a connection"))?;
        let mut a = chan.agent()?;
        let now = a.now_ns();
        a.engine.comm_established(now, conn).map_err(cm_error)?;
        a.flush()
    }

    /// Destroys the id (`rdma_destroy_id(3)`): the engine forgets its connection (a REJ or
    /// DREQ tells the peer, as ib_cm does) or listener, and its QP is destroyed. Other
    /// handles of the id see an id without QP or connection.
    pub fn destroy(self) {
        self.inner.teardown();
    }
}
