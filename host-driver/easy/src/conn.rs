//! RC connections: [`connect`], [`listen`] / [`Listener::accept`], and what a
//! [`Connection`] does (send / recv of a buffer, read / write of the peer's advertised buffer).
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Endpoint, PortAddr, ProtectionDomain, QueuePair, RecvWr,
    RemoteBuffer, SendWr, WorkCompletion,
};

use crate::error::{xerr, EasyError, Result};
use crate::exchange::{Channel, Hello, PROTOCOL_VERSION, READY};
use crate::region::OwnedMr;

/// How a connection is built. `Default` gives small buffers that suit the simulator.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Bytes of each receive buffer, i.e. the largest message [`Connection::recv`] accepts and
    /// the largest [`Connection::send`] of the peer (default 4096).
    pub msg_size: usize,
    /// Receives kept posted (`ibv_post_recv`), one buffer of `msg_size` each (default 16).
    pub recv_depth: usize,
    /// Bytes of the buffer this side advertises at connect time for the peer's
    /// [`Connection::read`] / [`Connection::write`] (0: none; default 0). A private staging
    /// buffer of the same size is the source / target of this side's own read and write.
    pub rw_size: usize,
    /// This NIC's port address (source MAC and IPv4 of its packets). `None`: the simulator's
    /// convention, NIC 1's address (192.0.2.2) for [`listen`] and NIC 0's (192.0.2.1) for
    /// [`connect`], as `rnic perf --device` does.
    pub port: Option<PortAddr>,
    /// The QP attributes of the RESET→INIT→RTR→RTS transitions (`ibv_modify_qp(3)`):
    /// path MTU, ACK timeout, retry counts, RNR timer, READ depth.
    pub connect: ConnectOptions,
    /// Wall-clock limit of every blocking wait: a TCP connect that keeps being refused, a
    /// completion that does not come (default 60 s).
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

/// A listening endpoint (`krdma_listen`; librdmacm's `rdma_listen` once the CM exists): the
/// device's context and a TCP listener for the exchange.
#[derive(Debug)]
pub struct Listener {
    ctx: Context,
    tcp: TcpListener,
    opts: Options,
}

/// Opens `device` and listens for connections on TCP `addr` (e.g. `"0.0.0.0:7471"`; port 0
/// picks a free one, see [`Listener::local_addr`]).
///
/// # Errors
/// The device cannot be opened; the address cannot be bound ([`EasyError::Exchange`]).
pub fn listen(device: &str, addr: impl ToSocketAddrs, opts: Options) -> Result<Listener> {
    let ctx = open(device, opts.port.unwrap_or(PortAddr::for_sim_nic(1)))?;
    Listener::on_context(&ctx, addr, opts)
}

impl Listener {
    /// Listens on `addr` with an already opened context (whose port address is set).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn on_context(ctx: &Context, addr: impl ToSocketAddrs, opts: Options) -> Result<Listener> {
        let tcp = TcpListener::bind(addr).map_err(xerr("bind"))?;
        Ok(Listener { ctx: ctx.clone(), tcp, opts })
    }

    /// The TCP address listened on.
    ///
    /// # Errors
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> Result<std::net::SocketAddr> {
        self.tcp.local_addr().map_err(xerr("local address"))
    }

    /// The device's context (shared by every accepted connection).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Waits for one client and connects an RC QP to it (`krdma_accept`; `rdma_get_request` +
    /// `rdma_accept` once the CM exists). See [`Connection`] for what is created.
    ///
    /// # Errors
    /// Socket errors, the peer's protocol, verbs errors creating or connecting the QP.
    pub fn accept(&self) -> Result<Connection> {
        let (stream, _) = self.tcp.accept().map_err(xerr("accept"))?;
        Connection::establish(&self.ctx, Channel::new(stream, false)?, self.opts)
    }
}

/// Opens `device` and connects to the listener at TCP `addr` (`krdma_connect`; librdmacm's
/// `rdma_resolve_addr` + `rdma_resolve_route` + `rdma_connect` once the CM exists). Retries the
/// TCP connect until [`Options::timeout`] (the server may not be listening yet).
///
/// # Errors
/// The device cannot be opened; nobody listens within the timeout; the exchange or a verb fails.
pub fn connect(device: &str, addr: impl ToSocketAddrs, opts: Options) -> Result<Connection> {
    let ctx = open(device, opts.port.unwrap_or(PortAddr::for_sim_nic(0)))?;
    connect_on_context(&ctx, addr, opts)
}

/// As [`connect`], with an already opened context.
///
/// # Errors
/// As [`connect`].
pub fn connect_on_context(ctx: &Context, addr: impl ToSocketAddrs, opts: Options) -> Result<Connection> {
    let stream = tcp_connect(addr, opts.timeout)?;
    Connection::establish(ctx, Channel::new(stream, true)?, opts)
}

/// Connects a TCP socket to `addr`, retrying every 50 ms for up to `timeout` while the
/// connection is refused (the server may not be listening yet).
///
/// # Errors
/// [`EasyError::Exchange`]: the address does not resolve, or the last connect error after
/// `timeout`.
pub fn tcp_connect(addr: impl ToSocketAddrs, timeout: Duration) -> Result<TcpStream> {
    let addrs: Vec<_> = addr.to_socket_addrs().map_err(xerr("resolve the address"))?.collect();
    let start = Instant::now();
    loop {
        match TcpStream::connect(&addrs[..]) {
            Ok(s) => return Ok(s),
            Err(e) if start.elapsed() >= timeout => return Err(EasyError::Exchange { what: "connect", source: e }),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// An RC connection (a connected `ibv_qp` of type `IBV_QPT_RC`) with the buffers the easy calls
/// need, all released when it is dropped (`krdma_release`: the QP is reset and destroyed, then
/// the MRs deregistered, the CQs and the PD freed).
///
/// What it holds: a PD; a send CQ and a receive CQ; a send buffer of `msg_size` bytes;
/// `recv_depth` receive buffers of `msg_size` bytes, all posted; with `rw_size` > 0 an
/// advertised buffer (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ) and a private staging buffer of
/// `rw_size` bytes each. Every call waits for its own completion, so a connection has at most
/// one work request of its own outstanding on the send queue.
pub struct Connection {
    // Field order is drop order: the QP before the CQs and the regions it uses.
    qp: QueuePair<'static>,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    send_mr: OwnedMr,
    recv_mr: OwnedMr,
    rw_mr: Option<OwnedMr>,
    staging: Option<OwnedMr>,
    pd: ProtectionDomain,
    ctx: Context,
    chan: Channel,
    local: Endpoint,
    peer: Hello,
    opts: Options,
    next_wr_id: u64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("local", &self.local).field("peer", &self.peer.endpoint).finish()
    }
}

impl Connection {
    /// Builds the QP and buffers on `ctx`, exchanges [`Hello`]s over `chan`, takes the QP to
    /// RTS, posts the receives and waits until the peer did the same.
    ///
    /// # Errors
    /// EINVAL for `msg_size` or `recv_depth` 0; verbs, socket and protocol errors.
    pub fn establish(ctx: &Context, mut chan: Channel, opts: Options) -> Result<Connection> {
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
        let mut qp = pd
            .create_qp(&send_cq)
            .set_recv_cq(&recv_cq)
            .set_max_send_wr(4)
            .set_max_recv_wr(opts.recv_depth as u32)
            .build()?;
        let mut local = qp.endpoint()?;
        local.buffer = rw_mr.as_ref().map(OwnedMr::remote_buffer);
        let mine = Hello { version: PROTOCOL_VERSION, endpoint: local, msg_size: opts.msg_size as u64 };
        let peer = chan.hello(&mine)?;
        qp.connect_with(&peer.endpoint, &opts.connect)?;
        // Receives need INIT or later (ibv_post_recv(3)); the barrier keeps the peer from
        // sending before they are posted.
        for slot in 0..opts.recv_depth {
            let at = slot * opts.msg_size;
            qp.post_recv_one(RecvWr::new(slot as u64, recv_mr.sge(at..at + opts.msg_size)?))?;
        }
        chan.barrier(READY)?;
        Ok(Connection {
            qp,
            send_cq,
            recv_cq,
            send_mr,
            recv_mr,
            rw_mr,
            staging,
            pd,
            ctx: ctx.clone(),
            chan,
            local,
            peer,
            opts,
            next_wr_id: 1 << 32,
        })
    }

    /// This side's endpoint (QPN, first PSN, port address, advertised buffer).
    pub fn local_endpoint(&self) -> &Endpoint {
        &self.local
    }

    /// The peer's endpoint, as it sent it.
    pub fn peer_endpoint(&self) -> &Endpoint {
        &self.peer.endpoint
    }

    /// The buffer the peer advertised (address, rkey, length in bytes), if it set `rw_size`.
    pub fn peer_buffer(&self) -> Option<RemoteBuffer> {
        self.peer.endpoint.buffer
    }

    /// The largest message the peer accepts, bytes (its `msg_size`).
    pub fn peer_msg_size(&self) -> usize {
        self.peer.msg_size as usize
    }

    /// The QP.
    pub fn qp(&self) -> &QueuePair<'static> {
        &self.qp
    }

    /// The device context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The protection domain of the connection's QP and regions.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// The TCP socket of the exchange, still open (for an application's own control messages).
    pub fn tcp(&self) -> &TcpStream {
        self.chan.stream()
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr_id += 1;
        self.next_wr_id
    }

    fn wait(cq: &CompletionQueue, op: &'static str, timeout: Duration) -> Result<WorkCompletion> {
        let start = Instant::now();
        let mut wc = [WorkCompletion::default(); 1];
        loop {
            if cq.poll(&mut wc)? == 1 {
                let w = wc[0];
                if !w.status.is_success() {
                    return Err(EasyError::Completion { op, status: w.status, wr_id: w.wr_id });
                }
                return Ok(w);
            }
            if start.elapsed() >= timeout {
                return Err(EasyError::TimedOut { op, after: timeout });
            }
        }
    }

    fn post_and_wait(&mut self, wr: SendWr<'static>, op: &'static str) -> Result<WorkCompletion> {
        self.qp.post_send_one(wr.signaled(true))?;
        Self::wait(&self.send_cq, op, self.opts.timeout)
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
        let wc = Self::wait(&self.recv_cq, "recv", timeout)?;
        let slot = wc.wr_id as usize;
        let at = slot * self.opts.msg_size;
        let mut data = vec![0u8; (wc.byte_len as usize).min(self.opts.msg_size)];
        self.recv_mr.read_at(at, &mut data)?;
        self.qp.post_recv_one(RecvWr::new(wc.wr_id, self.recv_mr.sge(at..at + self.opts.msg_size)?))?;
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

    /// Releases the connection (`krdma_release`; `rdma_disconnect` + `rdma_destroy_qp` once the
    /// CM exists) and reports the QP's destruction error, which dropping cannot.
    ///
    /// # Errors
    /// The RESET write of the QP's context failed (everything is released anyway).
    pub fn close(self) -> Result<()> {
        let Connection { qp, .. } = self;
        qp.destroy()?;
        Ok(())
    }
}
