//! RC connections: [`connect`], [`listen`] / [`Listener::accept`], and what a
//! [`Connection`] does (send / recv of a buffer, read / write of the peer's advertised buffer).
//! The two sides meet in band, through the port's connection manager ([`crate::cm`]).
use std::cell::{Cell, RefMut};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rnic::cm::{CmEventType, ConnParam, RdmaCmId};
use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Endpoint, PortAddr, ProtectionDomain, QpBuilder, QueuePair,
    RecvWr, RemoteBuffer, SendWr, WcStatus, WorkCompletion,
};

use crate::cm::{ipv4_of, Advert, Cm};
use crate::error::{EasyError, Result};
use crate::region::OwnedMr;

/// How often (wall time) a wait for a completion also runs the CM, to answer the peer's
/// DREQ and notice `DISCONNECTED`.
const PUMP_EVERY: Duration = Duration::from_millis(1);
/// How long a QP moved to ERR by the peer's disconnect is given to flush its work requests
/// before a wait with nothing to flush reports [`EasyError::Disconnected`].
const FLUSH_GRACE: Duration = Duration::from_millis(100);
/// The longest [`Connection::close`] waits for the DREP (or the peer's own DREQ).
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How a connection is built. `Default` gives small buffers that suit the simulator.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Bytes of each receive buffer, i.e. the largest message [`Connection::recv`] accepts and
    /// the largest [`Connection::send`] of the peer (default 4096). Sent to the peer in the
    /// private data of the REQ / REP ([`Advert`]).
    pub msg_size: usize,
    /// Receives kept posted (`ibv_post_recv`), one buffer of `msg_size` each (default 16).
    pub recv_depth: usize,
    /// Bytes of the buffer this side advertises at connect time, in the REQ's or REP's private
    /// data, for the peer's [`Connection::read`] / [`Connection::write`] (0: none; default 0).
    /// A private staging buffer of the same size is the source / target of this side's own
    /// read and write.
    pub rw_size: usize,
    /// This NIC's port address (source MAC and IPv4 of its packets, the CM's address). `None`:
    /// the simulator's convention, NIC 1's address (192.0.2.2) for [`listen`] and NIC 0's
    /// (192.0.2.1) for [`connect`], as `rnic perf --device` does.
    pub port: Option<PortAddr>,
    /// What the CM negotiates for the QPs (`struct rdma_conn_param`): `retry_cnt` and
    /// `rnr_retry` (the REQ's retry counts), `max_rd_atomic` (initiator depth) and
    /// `max_dest_rd_atomic` (responder resources). The CM sets the rest as rdma_cm does:
    /// path MTU 4096 (the port's), ACK timeout 14, RNR timer 12, access REMOTE_WRITE |
    /// REMOTE_READ (docs/cm.md).
    pub connect: ConnectOptions,
    /// Wall-clock limit of every blocking wait: a connect that keeps being refused or
    /// unanswered, a connection request that does not come, a completion (default 60 s).
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            msg_size: 4096,
            recv_depth: 16,
            rw_size: 0,
            port: None,
            connect: ConnectOptions::default(),
            timeout: Duration::from_secs(60),
        }
    }
}

impl Options {
    fn conn_param(&self, advert: &Advert) -> ConnParam {
        ConnParam {
            private_data: advert.encode(),
            responder_resources: self.connect.max_dest_rd_atomic,
            initiator_depth: self.connect.max_rd_atomic,
            retry_count: self.connect.retry_cnt,
            rnr_retry_count: self.connect.rnr_retry,
        }
    }
}

/// Opens the device named by a device string (`sim`, `vfio-user:PATH`, `vfio:BDF`; see
/// `rnic::open_device`) and sets its port address (`ibv_open_device(3)`).
///
/// # Errors
/// The device cannot be opened (a missing socket, another contract), or its port address not
/// written.
pub fn open(device: &str, port: PortAddr) -> Result<Context> {
    let ctx = Context::open_shared(rnic::open_device(device)?)?;
    ctx.set_port_addr(port)?;
    Ok(ctx)
}

/// A listening endpoint (`krdma_listen`; `rdma_bind_addr` + `rdma_listen`): an id of the
/// port's CM listening on a port. Dropping it stops listening.
#[derive(Debug)]
pub struct Listener {
    cm: Rc<Cm>,
    id: RdmaCmId<'static>,
    opts: Options,
}

/// Opens `device` and listens for connections on `addr` (`"0.0.0.0:7471"` or the port's own
/// IPv4 address; port 0 picks a free one, see [`Listener::local_addr`]). Clients connect to the
/// port's IPv4 address (192.0.2.2 on NIC 1 of `rnic sim serve` by default) and this port.
///
/// # Errors
/// The device cannot be opened; the address is not the port's; the port has a listener.
pub fn listen(device: &str, addr: impl ToSocketAddrs, opts: Options) -> Result<Listener> {
    let ctx = open(device, opts.port.unwrap_or(PortAddr::for_sim_nic(1)))?;
    Listener::on_context(&ctx, addr, opts)
}

impl Listener {
    /// Listens on `addr` with an already opened context (whose port address is set), through
    /// the context's CM ([`Cm::for_context`]).
    ///
    /// # Errors
    /// As [`listen`].
    pub fn on_context(ctx: &Context, addr: impl ToSocketAddrs, opts: Options) -> Result<Listener> {
        let addr = ipv4_of(addr)?;
        let cm = Cm::for_context(ctx)?;
        let id = cm.listen(addr)?;
        Ok(Listener { cm, id, opts })
    }

    /// The address listened on: the port's IPv4 address and the CM port
    /// (`rdma_get_local_addr(3)`), what a client connects to.
    ///
    /// # Errors
    /// None today (the id is always bound); kept for the call's shape.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.id
            .local_addr()
            .map(SocketAddr::V4)
            .ok_or_else(|| rnic::Error::InvalidArgument("the listener is not bound".into()).into())
    }

    /// The device's context (shared by every accepted connection).
    pub fn context(&self) -> &Context {
        self.cm.context()
    }

    /// The port's CM, which this listener and its connections share.
    pub fn cm(&self) -> &Rc<Cm> {
        &self.cm
    }

    /// Waits for one client and connects an RC QP to it (`krdma_accept`; `rdma_get_request`,
    /// `rdma_create_qp`, `rdma_accept` and the wait for `ESTABLISHED`): the REQ's private data
    /// brings the client's [`Advert`], the REP takes this side's. See [`Connection`] for what
    /// is created.
    ///
    /// # Errors
    /// [`EasyError::TimedOut`] after [`Options::timeout`]; [`EasyError::Protocol`] if the
    /// client's private data is no advertisement (the request is then rejected, reason 28);
    /// verbs errors creating or connecting the QP.
    pub fn accept(&self) -> Result<Connection> {
        let parts = Parts::new(self.context(), &self.opts)?;
        let mine = parts.advert(&self.opts);
        let param = self.opts.conn_param(&mine);
        let mut peer = None;
        // A receive completion polled while waiting for the RTU (a lost RTU) is kept for the
        // first recv.
        let early = std::cell::RefCell::new(Vec::new());
        let (id, _) = self.cm.accept_qp_with(
            &self.id,
            &parts.builder(&self.opts),
            &param,
            self.opts.timeout,
            |id, pdata| {
                peer = Some(Advert::decode(pdata)?);
                parts.post_receives(id, &self.opts)?;
                Ok(mine.encode())
            },
            || {
                let mut wc = [WorkCompletion::default(); 1];
                if parts.recv_cq.poll(&mut wc)? == 1 {
                    early.borrow_mut().push(wc[0]);
                }
                Ok(!early.borrow().is_empty())
            },
        )?;
        let peer = peer.ok_or_else(|| EasyError::Protocol("no advertisement from the client".into()))?;
        let c = Connection::new(&self.cm, id, parts, peer, self.opts)?;
        c.early.borrow_mut().extend(early.into_inner());
        Ok(c)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.cm.forget(&self.id);
    }
}

/// Opens `device` and connects to the listener at `addr` (`krdma_connect`;
/// `rdma_resolve_addr` + `rdma_resolve_route` + `rdma_create_qp` + `rdma_connect`, then
/// `ESTABLISHED`): `addr` is the server port's IPv4 address (192.0.2.2 on NIC 1 of `rnic sim
/// serve`) and the port it listens on. The REQ's private data carries this side's [`Advert`],
/// the REP's the server's. A REQ refused with REJ reason 8 (nobody listens yet) or
/// unanswered (the server's CM is not up yet) is retried until [`Options::timeout`].
///
/// # Errors
/// The device cannot be opened; [`EasyError::Unreachable`] for a loopback address or one
/// with no neighbor; [`EasyError::Rejected`] (reason 8 still refused at the timeout, or any
/// other REJ); [`EasyError::TimedOut`]; [`EasyError::Protocol`] if the REP's private data is
/// no advertisement; verbs errors.
pub fn connect(device: &str, addr: impl ToSocketAddrs, opts: Options) -> Result<Connection> {
    let ctx = open(device, opts.port.unwrap_or(PortAddr::for_sim_nic(0)))?;
    connect_on_context(&ctx, addr, opts)
}

/// As [`connect`], with an already opened context (through its CM, [`Cm::for_context`]).
///
/// # Errors
/// As [`connect`].
pub fn connect_on_context(ctx: &Context, addr: impl ToSocketAddrs, opts: Options) -> Result<Connection> {
    let dst = ipv4_of(addr)?;
    let cm = Cm::for_context(ctx)?;
    let parts = Parts::new(ctx, &opts)?;
    let mine = parts.advert(&opts);
    let (id, rep) = cm.connect_qp(dst, &parts.builder(&opts), &opts.conn_param(&mine), opts.timeout, |id| {
        parts.post_receives(id, &opts)
    })?;
    let peer = match Advert::decode(&rep) {
        Ok(p) => p,
        Err(e) => {
            let _ = id.disconnect();
            return Err(e);
        }
    };
    Connection::new(&cm, id, parts, peer, opts)
}

/// Connects a TCP socket to `addr`, retrying every 50 ms for up to `timeout` while the
/// connection is refused (the server may not be listening yet). For programs with an
/// out-of-band exchange of their own (`rc_pingpong`, as `ibv_rc_pingpong`); the easy
/// connections do not use TCP.
///
/// # Errors
/// [`EasyError::Exchange`]: the address does not resolve, or the last connect error after
/// `timeout`.
pub fn tcp_connect(addr: impl ToSocketAddrs, timeout: Duration) -> Result<TcpStream> {
    let addrs: Vec<_> = addr.to_socket_addrs().map_err(crate::error::xerr("resolve the address"))?.collect();
    let start = Instant::now();
    loop {
        match TcpStream::connect(&addrs[..]) {
            Ok(s) => return Ok(s),
            Err(e) if start.elapsed() >= timeout => return Err(EasyError::Exchange { what: "connect", source: e }),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// A connection's verbs objects before its QP exists.
struct Parts {
    pd: ProtectionDomain,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    send_mr: OwnedMr,
    recv_mr: OwnedMr,
    rw_mr: Option<OwnedMr>,
    staging: Option<OwnedMr>,
}

impl Parts {
    fn new(ctx: &Context, opts: &Options) -> Result<Parts> {
        if opts.msg_size == 0 || opts.recv_depth == 0 {
            return Err(
                rnic::Error::InvalidArgument("Options::msg_size and recv_depth must be at least 1".into()).into()
            );
        }
        let pd = ctx.alloc_pd()?;
        let send_cq = ctx.create_cq(4)?;
        let recv_cq = ctx.create_cq(opts.recv_depth)?;
        let send_mr = OwnedMr::new(&pd, opts.msg_size, AccessFlags::LOCAL_WRITE)?;
        let recv_mr = OwnedMr::new(&pd, opts.msg_size * opts.recv_depth, AccessFlags::LOCAL_WRITE)?;
        let (rw_mr, staging) = if opts.rw_size > 0 {
            let remote = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
            (
                Some(OwnedMr::new(&pd, opts.rw_size, remote)?),
                Some(OwnedMr::new(&pd, opts.rw_size, AccessFlags::LOCAL_WRITE)?),
            )
        } else {
            (None, None)
        };
        Ok(Parts { pd, send_cq, recv_cq, send_mr, recv_mr, rw_mr, staging })
    }

    fn builder(&self, opts: &Options) -> QpBuilder {
        self.pd
            .create_qp(&self.send_cq)
            .set_recv_cq(&self.recv_cq)
            .set_max_send_wr(4)
            .set_max_recv_wr(opts.recv_depth as u32)
    }

    fn advert(&self, opts: &Options) -> Advert {
        Advert { msg_size: opts.msg_size as u64, buffer: self.rw_mr.as_ref().map(OwnedMr::remote_buffer) }
    }

    /// Posts every receive buffer on the id's QP (in INIT: before the REQ or REP goes out, so
    /// the peer can send as soon as it is connected).
    fn post_receives(&self, id: &RdmaCmId<'static>, opts: &Options) -> Result<()> {
        let mut qp = id.qp().ok_or_else(|| rnic::Error::Busy("the id's QP is borrowed".into()))?;
        for slot in 0..opts.recv_depth {
            let at = slot * opts.msg_size;
            qp.post_recv_one(RecvWr::new(slot as u64, self.recv_mr.sge(at..at + opts.msg_size)?))?;
        }
        Ok(())
    }
}

/// An RC connection (a connected `ibv_qp` of type `IBV_QPT_RC`, the QP of an `rdma_cm_id`)
/// with the buffers the easy calls need, all released when it is dropped (`krdma_release`:
/// the id is destroyed, which sends a DREQ to a still connected peer and destroys the QP;
/// then the MRs are deregistered, the CQs and the PD freed). [`close`](Self::close)
/// disconnects first and waits for the peer's answer; prefer it when this is the context's
/// last connection, since dropping that one also drops the port's CM (its QP1) right after
/// posting the DREQ, which may then never leave the NIC.
///
/// What it holds: a PD; a send CQ and a receive CQ; a send buffer of `msg_size` bytes;
/// `recv_depth` receive buffers of `msg_size` bytes, all posted; with `rw_size` > 0 an
/// advertised buffer (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ) and a private staging buffer of
/// `rw_size` bytes each. Every call waits for its own completion, so a connection has at most
/// one work request of its own outstanding on the send queue. While it waits it also runs
/// the CM every millisecond, so the peer's disconnect ends the wait with
/// [`EasyError::Disconnected`].
pub struct Connection {
    // Field order is drop order: the id (and its QP) before the CQs and the regions it uses.
    id: RdmaCmId<'static>,
    cm: Rc<Cm>,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    send_mr: OwnedMr,
    recv_mr: OwnedMr,
    rw_mr: Option<OwnedMr>,
    staging: Option<OwnedMr>,
    pd: ProtectionDomain,
    ctx: Context,
    local: Endpoint,
    peer: Endpoint,
    peer_msg_size: u64,
    opts: Options,
    next_wr_id: u64,
    /// When the CM reported `DISCONNECTED` for the id.
    disconnected: Cell<Option<Instant>>,
    /// Receive completions polled by `accept` before the connection was established.
    early: std::cell::RefCell<std::collections::VecDeque<WorkCompletion>>,
    last_pump: Cell<Instant>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("local", &self.local).field("peer", &self.peer).finish()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.cm.forget(&self.id);
        // rdma_destroy_id: a DREQ if still connected, the QP destroyed even if the CM's
        // mailbox or a caller still holds a handle of the id.
        self.id.clone().destroy();
    }
}

impl Connection {
    fn new(cm: &Rc<Cm>, id: RdmaCmId<'static>, parts: Parts, peer: Advert, opts: Options) -> Result<Connection> {
        let (local, peer_ep) = {
            let qp = id.qp().ok_or_else(|| rnic::Error::Busy("the id's QP is borrowed".into()))?;
            let mut local = qp.endpoint()?;
            local.buffer = parts.rw_mr.as_ref().map(OwnedMr::remote_buffer);
            let a = qp.query_qp();
            let peer_ep = Endpoint {
                qpn: a.dest_qp_num,
                psn: a.rq_psn,
                mac: a.ah_attr.dest_mac,
                ip: a.ah_attr.dest_ip,
                buffer: peer.buffer,
            };
            (local, peer_ep)
        };
        let Parts { pd, send_cq, recv_cq, send_mr, recv_mr, rw_mr, staging } = parts;
        Ok(Connection {
            id,
            cm: Rc::clone(cm),
            send_cq,
            recv_cq,
            send_mr,
            recv_mr,
            rw_mr,
            staging,
            pd,
            ctx: cm.context().clone(),
            local,
            peer: peer_ep,
            peer_msg_size: peer.msg_size,
            opts,
            next_wr_id: 1 << 32,
            disconnected: Cell::new(None),
            early: Default::default(),
            last_pump: Cell::new(Instant::now()),
        })
    }

    /// This side's endpoint (QPN, first PSN, port address, advertised buffer).
    pub fn local_endpoint(&self) -> &Endpoint {
        &self.local
    }

    /// The peer's endpoint: its QPN, first PSN, MAC and IPv4 address as the CM set them in
    /// this side's QP (from the REQ or REP), and the buffer its [`Advert`] named.
    pub fn peer_endpoint(&self) -> &Endpoint {
        &self.peer
    }

    /// The buffer the peer advertised (address, rkey, length in bytes), if it set `rw_size`.
    pub fn peer_buffer(&self) -> Option<RemoteBuffer> {
        self.peer.buffer
    }

    /// The largest message the peer accepts, bytes (its `msg_size`).
    pub fn peer_msg_size(&self) -> usize {
        self.peer_msg_size as usize
    }

    /// The QP (held by the connection's CM id; do not keep the borrow across other calls of
    /// this connection).
    ///
    /// # Errors
    /// [`rnic::Error::Busy`] while it is borrowed already.
    pub fn qp(&self) -> Result<RefMut<'_, QueuePair<'static>>> {
        self.id.qp().ok_or_else(|| rnic::Error::Busy("the connection's QP is borrowed".into()).into())
    }

    /// The connection's CM id (`struct rdma_cm_id`).
    pub fn cm_id(&self) -> &RdmaCmId<'static> {
        &self.id
    }

    /// The port's CM, shared with the context's other connections and listeners.
    pub fn cm(&self) -> &Rc<Cm> {
        &self.cm
    }

    /// The device context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The protection domain of the connection's QP and regions.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// Whether the peer has disconnected (`RDMA_CM_EVENT_DISCONNECTED` for this id), running
    /// the CM once to find out.
    ///
    /// # Errors
    /// As `EventChannel::process`.
    pub fn is_disconnected(&self) -> Result<bool> {
        self.pump()?;
        Ok(self.disconnected.get().is_some())
    }

    /// Runs the CM and takes this id's `DISCONNECTED`, if it came.
    fn pump(&self) -> Result<()> {
        self.last_pump.set(Instant::now());
        self.cm.pump()?;
        if self.cm.take_for(&self.id, &[CmEventType::Disconnected]).is_some() && self.disconnected.get().is_none() {
            self.disconnected.set(Some(Instant::now()));
        }
        Ok(())
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr_id += 1;
        self.next_wr_id
    }

    fn wait(&self, recv: bool, op: &'static str, timeout: Duration) -> Result<WorkCompletion> {
        let cq = if recv { &self.recv_cq } else { &self.send_cq };
        let start = Instant::now();
        let mut wc = [WorkCompletion::default(); 1];
        loop {
            let early = if recv { self.early.borrow_mut().pop_front() } else { None };
            let got = match early {
                Some(w) => Some(w),
                None => (cq.poll(&mut wc)? == 1).then_some(wc[0]),
            };
            if let Some(w) = got {
                if !w.status.is_success() {
                    // A flush after the peer's DREQ moved the QP to ERR is the disconnect.
                    if w.status == WcStatus::WrFlushErr {
                        self.pump()?;
                        if self.disconnected.get().is_some() {
                            return Err(EasyError::Disconnected { op });
                        }
                    }
                    return Err(EasyError::Completion { op, status: w.status, wr_id: w.wr_id });
                }
                return Ok(w);
            }
            if let Some(at) = self.disconnected.get() {
                if at.elapsed() >= FLUSH_GRACE {
                    return Err(EasyError::Disconnected { op });
                }
            }
            if start.elapsed() >= timeout {
                return Err(EasyError::TimedOut { op, after: timeout });
            }
            if self.last_pump.get().elapsed() >= PUMP_EVERY {
                self.pump()?;
            }
        }
    }

    fn post_and_wait(&mut self, wr: SendWr<'static>, op: &'static str) -> Result<WorkCompletion> {
        if self.disconnected.get().is_some() {
            return Err(EasyError::Disconnected { op });
        }
        self.qp()?.post_send_one(wr.signaled(true))?;
        self.wait(false, op, self.opts.timeout)
    }

    /// Sends `data` as one message into the peer's next posted receive (`krdma_send`): copies
    /// it into the send buffer, posts an `IBV_WR_SEND` (`ibv_post_send(3)`) and waits for its
    /// completion (`ibv_poll_cq(3)`, `IBV_WC_SEND`), i.e. until the peer's NIC acknowledged it.
    /// A zero-length message is allowed.
    ///
    /// # Errors
    /// [`EasyError::MessageTooLong`] over the peer's `msg_size` or this side's;
    /// [`EasyError::Completion`] for an error status (e.g. `IBV_WC_RETRY_EXC_ERR` when the peer
    /// is gone); [`EasyError::TimedOut`].
    pub fn send(&mut self, data: &[u8]) -> Result<()> {
        let max = self.peer_msg_size().min(self.opts.msg_size);
        if data.len() > max {
            return Err(EasyError::MessageTooLong { len: data.len(), max });
        }
        let sge = if data.is_empty() {
            None
        } else {
            self.send_mr.write_at(0, data)?;
            Some(self.send_mr.sge(0..data.len())?)
        };
        let id = self.wr_id();
        self.post_and_wait(SendWr::send(id, sge), "send").map(|_| ())
    }

    /// Waits for the next message (`krdma_receive`): polls the receive CQ (`IBV_WC_RECV`),
    /// copies the message out of its receive buffer, and posts that buffer again
    /// (`ibv_post_recv(3)`) before returning, so `recv_depth` receives stay posted.
    ///
    /// # Errors
    /// [`EasyError::Completion`] for an error status (`IBV_WC_WR_FLUSH_ERR` once the QP is in
    /// the error state, `IBV_WC_LOC_LEN_ERR` for a message longer than `msg_size`);
    /// [`EasyError::TimedOut`] after [`Options::timeout`].
    pub fn recv(&mut self) -> Result<Vec<u8>> {
        self.recv_timeout(self.opts.timeout)
    }

    /// As [`recv`](Self::recv), waiting at most `timeout` (wall time).
    ///
    /// # Errors
    /// As [`recv`](Self::recv).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Vec<u8>> {
        let wc = self.wait(true, "recv", timeout)?;
        let slot = wc.wr_id as usize;
        let at = slot * self.opts.msg_size;
        let mut data = vec![0u8; (wc.byte_len as usize).min(self.opts.msg_size)];
        self.recv_mr.read_at(at, &mut data)?;
        let sge = self.recv_mr.sge(at..at + self.opts.msg_size)?;
        self.qp()?.post_recv_one(RecvWr::new(wc.wr_id, sge))?;
        Ok(data)
    }

    fn rw_range(&self, remote_offset: u64, len: usize) -> Result<RemoteBuffer> {
        let buf = self.peer_buffer().ok_or(EasyError::NoBuffer("remote"))?;
        let staging = self.staging.as_ref().ok_or(EasyError::NoBuffer("staging"))?;
        if remote_offset.checked_add(len as u64).is_none_or(|end| end > buf.len) {
            return Err(EasyError::OutOfBounds { what: "remote", offset: remote_offset, len, size: buf.len });
        }
        if len > staging.len() {
            return Err(EasyError::OutOfBounds { what: "staging", offset: 0, len, size: staging.len() as u64 });
        }
        Ok(buf)
    }

    /// Writes `data` into the peer's advertised buffer at byte `remote_offset`
    /// (`krdma_write`): copies it into the staging buffer, posts one `IBV_WR_RDMA_WRITE`
    /// (`ibv_post_send(3)` with the peer's address and rkey) and waits for its completion
    /// (`IBV_WC_RDMA_WRITE`). The peer's CPU is not involved; it sees the bytes with
    /// [`local_read`](Self::local_read).
    ///
    /// # Errors
    /// [`EasyError::NoBuffer`] unless both sides set `rw_size`; [`EasyError::OutOfBounds`] past
    /// the peer's buffer or this side's staging buffer (checked before posting: the peer's NIC
    /// would answer a NAK, `IBV_WC_REM_ACCESS_ERR`); [`EasyError::Completion`];
    /// [`EasyError::TimedOut`].
    pub fn write(&mut self, remote_offset: u64, data: &[u8]) -> Result<()> {
        let buf = self.rw_range(remote_offset, data.len())?;
        let staging = self.staging.as_ref().ok_or(EasyError::NoBuffer("staging"))?;
        staging.write_at(0, data)?;
        let sge = staging.sge(0..data.len())?;
        let id = self.wr_id();
        self.post_and_wait(SendWr::rdma_write(id, sge, buf.at(remote_offset)), "write").map(|_| ())
    }

    /// Reads `len` bytes of the peer's advertised buffer at byte `remote_offset`
    /// (`krdma_read`): one `IBV_WR_RDMA_READ` into the staging buffer, waits for its
    /// completion (`IBV_WC_RDMA_READ`), and returns a copy.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn read(&mut self, remote_offset: u64, len: usize) -> Result<Vec<u8>> {
        let buf = self.rw_range(remote_offset, len)?;
        let staging = self.staging.as_ref().ok_or(EasyError::NoBuffer("staging"))?;
        let sge = (len > 0).then(|| staging.sge(0..len)).transpose()?;
        let id = self.wr_id();
        self.post_and_wait(SendWr::rdma_read(id, sge, buf.at(remote_offset)), "read")?;
        let mut out = vec![0u8; len];
        self.staging.as_ref().ok_or(EasyError::NoBuffer("staging"))?.read_at(0, &mut out)?;
        Ok(out)
    }

    fn local_buf(&self, offset: usize, len: usize) -> Result<&OwnedMr> {
        let mr = self.rw_mr.as_ref().ok_or(EasyError::NoBuffer("local"))?;
        if offset.checked_add(len).is_none_or(|end| end > mr.len()) {
            return Err(EasyError::OutOfBounds { what: "local", offset: offset as u64, len, size: mr.len() as u64 });
        }
        Ok(mr)
    }

    /// Copies `len` bytes at `offset` out of this side's advertised buffer (what the peer wrote
    /// there).
    ///
    /// # Errors
    /// [`EasyError::NoBuffer`] without `rw_size`; [`EasyError::OutOfBounds`].
    pub fn local_read(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.local_buf(offset, len)?.read_at(offset, &mut out)?;
        Ok(out)
    }

    /// Copies `data` into this side's advertised buffer at `offset` (for the peer to read).
    ///
    /// # Errors
    /// As [`local_read`](Self::local_read).
    pub fn local_write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.local_buf(offset, data.len())?.write_at(offset, data)?;
        Ok(())
    }

    /// Releases the connection (`krdma_release`): disconnects (`rdma_disconnect(3)`: the QP
    /// to ERR and, unless the peer disconnected first, a DREQ), waits up to 2 s (and at most
    /// [`Options::timeout`]) for `DISCONNECTED` (the peer's DREP, or its own DREQ) so the DREQ
    /// has reached the peer before this process may leave, then drops everything
    /// (`rdma_destroy_id`, the regions, CQs and PD). A peer that is gone already costs the
    /// wait and is not an error.
    ///
    /// # Errors
    /// The CM refused the disconnect or could not run.
    pub fn close(self) -> Result<()> {
        self.pump()?;
        if self.disconnected.get().is_none() {
            self.id.disconnect()?;
            let id = self.id.clone();
            match self.cm.wait("DISCONNECTED", CLOSE_WAIT.min(self.opts.timeout), |e| {
                e.id == id && e.event == CmEventType::Disconnected
            }) {
                Ok(_) | Err(EasyError::TimedOut { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
