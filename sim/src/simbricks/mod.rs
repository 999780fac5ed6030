//! SimBricks' Ethernet adapter protocol: a NIC's port linked to a NIC in another simulator
//! process, to SimBricks' own switch model (`net_switch`), to ns-3 through its SimBricks adapter,
//! or to anything else that speaks SimBricks' network interface.
//!
//! Implemented from SimBricks' `lib/simbricks/base` and `lib/simbricks/network` (protocol
//! version 1), both roles:
//!
//! * the **listener** ([`SimbricksListener::bind`] then [`SimbricksListener::accept`]) creates the
//!   shared-memory pool (a memfd of `2 × entries × entry_bytes` bytes, both rings), listens on a
//!   Unix socket, and sends its intro with the pool's file descriptor (`SCM_RIGHTS`);
//! * the **connecter** ([`SimbricksPort::connect`]) connects, sends its intro, and maps the pool
//!   it receives.
//!
//! Then each side produces into one ring and consumes the other (module `queue`). Messages
//! ([`proto`]): network packets (type 0x40, the frame without FCS), syncs (0x00) and terminate
//! (0x01), each with a timestamp in ps: the instant it takes effect at the receiver, i.e. the
//! sender's time plus the link latency. With synchronisation on (both sides ask for it), a side
//! sends a sync whenever `sync_interval` has passed since its last message, and may simulate up
//! to the timestamp of the last message it received: since timestamps never decrease, no frame
//! can still arrive before it. The link latency is each side's lookahead.
//!
//! Timing against the in-process wire: the world paces and delays frames on its own outbound
//! wire (latency 0), so a frame's sender time is the instant its last bit left the wire, and it
//! reaches the peer at that instant plus the latency; an in-process link with the same latency
//! delivers it at the same instant. A split world thus runs the same cycles as the one-process
//! world ([`crate::port`]).
pub mod proto;
mod queue;

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memmap2::MmapMut;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

use crate::config::LinkConfig;
use crate::port::{ExternalPort, PortFrame, PortStats, PortTiming};
use crate::SimError;
use proto::{ConnecterIntro, ListenerIntro, FLAG_SYNC, FLAG_SYNC_FORCE, MSG_NET_PACKET, MSG_SYNC, MSG_TERMINATE};
use queue::Queue;

/// Whether a side synchronises (SimBricks' `SimbricksBaseIfSyncMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// Never: frames are taken as they come (not deterministic).
    Disabled,
    /// If the peer wants it too.
    Optional,
    /// Always; the handshake fails if the peer does not synchronise. The default: a split run
    /// is deterministic only with synchronisation.
    #[default]
    Required,
}

/// Parameters of a SimBricks network interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimbricksParams {
    /// Link latency (propagation and the far MAC) in ps, added to every message this side sends,
    /// and its lookahead. Default: the world's [`LinkConfig::latency_ns`] (500 ns), which makes
    /// a split pair match the one-process pair. Must be > 0.
    pub link_latency_ps: u64,
    /// Longest time between two messages this side sends, in ps (a sync fills the gap). At most
    /// the latency; default: the latency (SimBricks' default).
    pub sync_interval_ps: u64,
    /// Synchronisation.
    pub sync: SyncMode,
    /// Listener only: slots per ring (default 1024; SimBricks' own default is 8192).
    pub queue_entries: usize,
    /// Listener only: bytes per slot, a 64-byte header and the frame (default 64 + 9216: jumbo
    /// frames; SimBricks' network default is 1600, frames of at most 1536 bytes). A multiple of 64.
    pub entry_bytes: usize,
    /// How long `connect` retries while the socket does not exist or refuses, and how long
    /// `accept` waits (default 60 s).
    pub connect_timeout: Duration,
    /// How long a synchronised wait may last without any message from the peer before it fails
    /// (default 600 s: a peer may be a slow simulator).
    pub peer_timeout: Duration,
}

impl SimbricksParams {
    /// Defaults matching the world's wire: latency and sync interval = `link.latency_ns`.
    pub fn for_link(link: &LinkConfig) -> Self {
        let latency = link.latency_ns.saturating_mul(1000);
        Self {
            link_latency_ps: latency,
            sync_interval_ps: latency,
            sync: SyncMode::Required,
            queue_entries: 1024,
            entry_bytes: 64 + 9216,
            connect_timeout: Duration::from_secs(60),
            peer_timeout: Duration::from_secs(600),
        }
    }

    fn check(&self) -> Result<(), SimError> {
        if self.link_latency_ps == 0 {
            return Err(SimError::InvalidArgument(
                "a SimBricks link needs a latency > 0 (it is the lookahead that lets both sides advance)".into(),
            ));
        }
        if self.sync != SyncMode::Disabled
            && (self.sync_interval_ps == 0 || self.sync_interval_ps > self.link_latency_ps)
        {
            return Err(SimError::InvalidArgument(format!(
                "SimBricks sync interval {} ps must be in 1..=latency ({} ps)",
                self.sync_interval_ps, self.link_latency_ps
            )));
        }
        if self.entry_bytes < 128 || !self.entry_bytes.is_multiple_of(64) || self.queue_entries == 0 {
            return Err(SimError::InvalidArgument(format!(
                "SimBricks queues of {} entries of {} bytes (need >= 1 entry, a multiple of 64 bytes >= 128)",
                self.queue_entries, self.entry_bytes
            )));
        }
        Ok(())
    }

    fn flags(&self) -> u64 {
        match self.sync {
            SyncMode::Disabled => 0,
            SyncMode::Optional => FLAG_SYNC,
            SyncMode::Required => FLAG_SYNC | FLAG_SYNC_FORCE,
        }
    }

    /// SimBricks' rule: sync if both want it; fail if one side insists and the other refuses.
    fn negotiate(&self, peer_flags: u64) -> Result<bool, String> {
        let (sync, force) = (peer_flags & FLAG_SYNC != 0, peer_flags & FLAG_SYNC_FORCE != 0);
        match self.sync {
            SyncMode::Disabled if force => Err("the peer requires synchronisation, this side has it disabled".into()),
            SyncMode::Disabled => Ok(false),
            SyncMode::Required if !sync && !force => {
                Err("this side requires synchronisation, the peer offers none".into())
            }
            _ => Ok(sync || force),
        }
    }
}

impl Default for SimbricksParams {
    fn default() -> Self {
        Self::for_link(&LinkConfig::default())
    }
}

fn io_err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> SimError {
    SimError::Port(format!("{what}: {e}"))
}

/// A bound SimBricks listener: peers can connect from now on; [`accept`](Self::accept) takes one.
#[derive(Debug)]
pub struct SimbricksListener {
    path: PathBuf,
    listener: UnixListener,
    params: SimbricksParams,
}

impl SimbricksListener {
    /// Listens on the Unix socket `path` (a stale socket file there is replaced).
    ///
    /// # Errors
    /// Invalid parameters, or the socket cannot be bound.
    pub fn bind(path: &Path, params: SimbricksParams) -> Result<Self, SimError> {
        params.check()?;
        if std::fs::symlink_metadata(path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type())) {
            let _ = std::fs::remove_file(path);
        }
        let listener =
            UnixListener::bind(path).map_err(|e| io_err(format!("SimBricks: binding {}", path.display()), e))?;
        Ok(Self { path: path.to_path_buf(), listener, params })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits (at most `connect_timeout`) for a peer, creates the shared-memory pool, and runs the
    /// handshake. The socket file is removed once the peer is connected.
    ///
    /// # Errors
    /// No peer in time, a peer that speaks another version or protocol, or that cannot agree on
    /// synchronisation; I/O failures.
    pub fn accept(self) -> Result<SimbricksPort, SimError> {
        let what = format!("SimBricks listener {}", self.path.display());
        self.listener.set_nonblocking(true).map_err(|e| io_err(&what, e))?;
        let deadline = Instant::now() + self.params.connect_timeout;
        let stream = loop {
            match self.listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(SimError::Port(format!(
                            "{what}: no peer connected within {:?}",
                            self.params.connect_timeout
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(io_err(&what, e)),
            }
        };
        let _ = std::fs::remove_file(&self.path);
        stream.set_nonblocking(false).map_err(|e| io_err(&what, e))?;
        stream.set_read_timeout(Some(self.params.connect_timeout)).map_err(|e| io_err(&what, e))?;
        let p = &self.params;
        let ring = (p.queue_entries * p.entry_bytes) as u64;
        let fd = rustix::fs::memfd_create("rnic-simbricks", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| io_err(format!("{what}: memfd_create"), e))?;
        let file = std::fs::File::from(fd);
        file.set_len(2 * ring).map_err(|e| io_err(format!("{what}: sizing the shared pool"), e))?;
        // SAFETY: the memfd is ours; the peer maps it too and accesses it only through the
        // queues' owner-byte protocol (see `queue`).
        let map =
            unsafe { MmapMut::map_mut(&file) }.map_err(|e| io_err(format!("{what}: mapping the shared pool"), e))?;
        let pool = Arc::new(map);
        // Incoming (connecter-to-listener) ring first, then outgoing, as SimBricks lays them out.
        let (eb, n) = (p.entry_bytes as u64, p.queue_entries as u64);
        let intro = ListenerIntro {
            version: proto::VERSION,
            flags: p.flags(),
            l2c: (ring, eb, n),
            c2l: (0, eb, n),
            upper_proto: proto::PROTO_ID_NET,
            upper_off: proto::LISTENER_INTRO_BYTES as u64,
        };
        let bytes = intro.encode();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [file.as_fd()];
        control.push(SendAncillaryMessage::ScmRights(&fds));
        let sent = rustix::net::sendmsg(&stream, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL)
            .map_err(|e| io_err(format!("{what}: sending the intro"), e))?;
        if sent != bytes.len() {
            return Err(SimError::Port(format!("{what}: short intro send ({sent} of {} bytes)", bytes.len())));
        }
        let (msg, _) = recv_intro(&stream, false).map_err(|e| SimError::Port(format!("{what}: {e}")))?;
        let peer = ConnecterIntro::decode(&msg)
            .ok_or_else(|| SimError::Port(format!("{what}: connecter intro of {} bytes is too short", msg.len())))?;
        check_peer(peer.version, peer.upper_proto).map_err(|e| SimError::Port(format!("{what}: {e}")))?;
        let sync = p.negotiate(peer.flags).map_err(|e| SimError::Port(format!("{what}: {e}")))?;
        let rx = Queue::new(Arc::clone(&pool), 0, eb, n).map_err(|e| SimError::Port(format!("{what}: {e}")))?;
        let tx = Queue::new(pool, ring, eb, n).map_err(|e| SimError::Port(format!("{what}: {e}")))?;
        SimbricksPort::new(what, stream, self.params, sync, rx, tx)
    }
}

/// Receives one intro message (up to 2048 bytes, as SimBricks reads it) and the file
/// descriptor attached to it, if `want_fd`.
fn recv_intro(stream: &UnixStream, want_fd: bool) -> Result<(Vec<u8>, Option<OwnedFd>), String> {
    let mut buf = vec![0u8; 2048];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let r = rustix::net::recvmsg(stream, &mut [IoSliceMut::new(&mut buf)], &mut control, RecvFlags::CMSG_CLOEXEC)
        .map_err(|e| format!("receiving the peer's intro: {e}"))?;
    if r.bytes == 0 {
        return Err("the peer closed the socket before its intro".into());
    }
    buf.truncate(r.bytes);
    let mut fd = None;
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = m {
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    if want_fd && fd.is_none() {
        return Err("the listener's intro carries no shared-memory file descriptor".into());
    }
    Ok((buf, fd))
}

fn check_peer(version: u64, upper: u64) -> Result<(), String> {
    if version != proto::VERSION {
        return Err(format!("peer speaks SimBricks protocol version {version}, this side {}", proto::VERSION));
    }
    if upper != proto::PROTO_ID_NET {
        return Err(format!(
            "peer's upper-layer protocol is {upper}, not the network protocol ({})",
            proto::PROTO_ID_NET
        ));
    }
    Ok(())
}

/// A connected SimBricks network interface: an [`ExternalPort`] for [`crate::World::attach_port`].
pub struct SimbricksPort {
    what: String,
    stream: UnixStream,
    params: SimbricksParams,
    sync: bool,
    rx: Queue,
    tx: Queue,
    /// Frames received but not yet due.
    pending: std::collections::VecDeque<PortFrame>,
    /// Timestamp of the last message received: every message before it is known.
    horizon: u64,
    /// Time of this side's last message (ps), `None` before the first.
    last_out: Option<u64>,
    closed: bool,
    stats: PortStats,
}

impl std::fmt::Debug for SimbricksPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimbricksPort").field("what", &self.what).field("sync", &self.sync).finish_non_exhaustive()
    }
}

impl SimbricksPort {
    /// Connects to the SimBricks listener at `path` (retrying for `connect_timeout` while the
    /// socket does not exist yet or refuses), and runs the handshake: the queue geometry comes
    /// from the listener.
    ///
    /// # Errors
    /// No listener in time; a listener speaking another version or protocol, or one that cannot
    /// agree on synchronisation; a pool that does not hold the queues it announces.
    pub fn connect(path: &Path, params: SimbricksParams) -> Result<Self, SimError> {
        params.check()?;
        let what = format!("SimBricks connecter {}", path.display());
        let deadline = Instant::now() + params.connect_timeout;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused)
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(io_err(&what, e)),
            }
        };
        stream.set_read_timeout(Some(params.connect_timeout)).map_err(|e| io_err(&what, e))?;
        let intro = ConnecterIntro {
            version: proto::VERSION,
            flags: params.flags(),
            upper_proto: proto::PROTO_ID_NET,
            upper_off: proto::CONNECTER_INTRO_BYTES as u64,
        };
        let bytes = intro.encode();
        let sent = rustix::net::send(&stream, &bytes, SendFlags::NOSIGNAL)
            .map_err(|e| io_err(format!("{what}: sending the intro"), e))?;
        if sent != bytes.len() {
            return Err(SimError::Port(format!("{what}: short intro send")));
        }
        let fail = |e: String| SimError::Port(format!("{what}: {e}"));
        let (msg, fd) = recv_intro(&stream, true).map_err(fail)?;
        let peer = ListenerIntro::decode(&msg)
            .ok_or_else(|| fail(format!("listener intro of {} bytes is too short", msg.len())))?;
        check_peer(peer.version, peer.upper_proto).map_err(fail)?;
        let sync = params.negotiate(peer.flags).map_err(fail)?;
        let file = std::fs::File::from(fd.ok_or_else(|| fail("no pool descriptor".into()))?);
        // SAFETY: the pool is shared with the listener, accessed only through the queues'
        // owner-byte protocol (see `queue`).
        let map =
            unsafe { MmapMut::map_mut(&file) }.map_err(|e| io_err(format!("{what}: mapping the shared pool"), e))?;
        let pool = Arc::new(map);
        let rx = Queue::new(Arc::clone(&pool), peer.l2c.0, peer.l2c.1, peer.l2c.2).map_err(fail)?;
        let tx = Queue::new(pool, peer.c2l.0, peer.c2l.1, peer.c2l.2).map_err(fail)?;
        Self::new(what, stream, params, sync, rx, tx)
    }

    fn new(
        what: String,
        stream: UnixStream,
        params: SimbricksParams,
        sync: bool,
        rx: Queue,
        tx: Queue,
    ) -> Result<Self, SimError> {
        stream.set_nonblocking(true).map_err(|e| io_err(&what, e))?;
        Ok(Self {
            what,
            stream,
            params,
            sync,
            rx,
            tx,
            pending: Default::default(),
            horizon: 0,
            last_out: None,
            closed: false,
            stats: PortStats::default(),
        })
    }

    /// True when both sides synchronise (decided in the handshake).
    pub fn synchronized(&self) -> bool {
        self.sync
    }

    /// Largest frame the peer's slots hold, in bytes (larger frames are dropped and counted).
    pub fn max_frame_bytes(&self) -> usize {
        self.tx.max_packet()
    }

    /// The queue geometry: (incoming slots, incoming slot bytes, outgoing slots, outgoing slot
    /// bytes).
    pub fn queues(&self) -> (usize, usize, usize, usize) {
        (self.rx.entries(), self.rx.entry_bytes(), self.tx.entries(), self.tx.entry_bytes())
    }

    /// True once the peer sent its terminate message or closed the socket.
    pub fn peer_left(&self) -> bool {
        self.stats.peer_left
    }

    /// Reads every message the peer has handed over.
    fn drain(&mut self) {
        while let Some(m) = self.rx.poll() {
            self.horizon = self.horizon.max(m.timestamp);
            match m.kind {
                MSG_SYNC => self.stats.syncs_received += 1,
                MSG_TERMINATE => {
                    self.stats.peer_left = true;
                    self.horizon = u64::MAX;
                }
                MSG_NET_PACKET => match m.data {
                    Ok(data) if data.len() >= 14 => {
                        self.stats.rx_frames += 1;
                        self.stats.rx_bytes += data.len() as u64;
                        self.pending.push_back(PortFrame { at_ps: m.timestamp, data });
                    }
                    _ => self.stats.rx_malformed += 1,
                },
                _ => self.stats.rx_malformed += 1,
            }
        }
    }

    /// The peer closed its end of the socket (it died, or left without a terminate message).
    fn socket_closed(&self) -> bool {
        let mut b = [0u8; 1];
        matches!(rustix::net::recv(&self.stream, &mut b, RecvFlags::PEEK | RecvFlags::DONTWAIT), Ok((0, _)))
    }

    /// Sends one message, waiting while the ring is full (the peer consumes as it advances).
    fn push(&mut self, kind: u8, at_ps: u64, data: &[u8]) -> Result<bool, SimError> {
        if self.stats.peer_left {
            return Ok(false);
        }
        let ts = at_ps.saturating_add(self.params.link_latency_ps);
        let t0 = Instant::now();
        let mut spins = 0u32;
        while !self.tx.try_send(kind, ts, data) {
            if !self.sync {
                return Ok(false);
            }
            // Keep consuming: a peer waiting for our messages frees no slot otherwise.
            self.drain();
            if self.stats.peer_left {
                return Ok(false);
            }
            spins += 1;
            backoff(spins);
            if spins.is_multiple_of(1024) {
                if self.socket_closed() {
                    self.stats.peer_left = true;
                    return Err(SimError::Port(format!("{}: the peer closed the connection", self.what)));
                }
                if t0.elapsed() > self.params.peer_timeout {
                    return Err(SimError::Port(format!(
                        "{}: the peer consumed nothing for {:?} (its queue stays full)",
                        self.what, self.params.peer_timeout
                    )));
                }
            }
        }
        self.stats.wait_us += t0.elapsed().as_micros() as u64 * u64::from(spins > 0);
        self.last_out = Some(at_ps);
        Ok(true)
    }
}

/// Waiting without burning a shared core: spin briefly, then yield (the peer may need this
/// core), then sleep.
fn backoff(spins: u32) {
    if spins < 64 {
        std::hint::spin_loop();
    } else if spins < 4096 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(20));
    }
}

impl ExternalPort for SimbricksPort {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn timing(&self) -> PortTiming {
        PortTiming::Synchronized
    }

    fn send(&mut self, frame: &[u8], at_ps: u64) -> Result<(), SimError> {
        if frame.len() > self.tx.max_packet() || self.closed {
            self.stats.tx_dropped += 1;
            return Ok(());
        }
        if self.push(MSG_NET_PACKET, at_ps, frame)? {
            self.stats.tx_frames += 1;
            self.stats.tx_bytes += frame.len() as u64;
        } else {
            self.stats.tx_dropped += 1;
        }
        Ok(())
    }

    fn advance(&mut self, now_ps: u64) -> Result<(), SimError> {
        if !self.sync || self.closed {
            return Ok(());
        }
        let due = self.last_out.is_none_or(|t| now_ps.saturating_sub(t) >= self.params.sync_interval_ps);
        if due && self.push(MSG_SYNC, now_ps, &[])? {
            self.stats.syncs_sent += 1;
        }
        Ok(())
    }

    fn receive(&mut self, until_ps: u64, out: &mut Vec<PortFrame>) -> Result<(), SimError> {
        self.drain();
        if self.sync && self.horizon <= until_ps && !self.closed {
            let t0 = Instant::now();
            let mut last_msg = t0;
            let mut spins = 0u32;
            while self.horizon <= until_ps {
                let before = self.horizon;
                self.drain();
                if self.horizon != before {
                    last_msg = Instant::now();
                    spins = 0;
                    continue;
                }
                spins += 1;
                backoff(spins);
                if spins.is_multiple_of(256) {
                    if self.socket_closed() {
                        self.drain();
                        if self.horizon > until_ps {
                            break;
                        }
                        self.stats.peer_left = true;
                        self.horizon = u64::MAX;
                        return Err(SimError::Port(format!(
                            "{}: the peer closed the connection without a terminate message",
                            self.what
                        )));
                    }
                    if last_msg.elapsed() > self.params.peer_timeout {
                        return Err(SimError::Port(format!(
                            "{}: no message from the peer for {:?} (waiting to pass {} ps)",
                            self.what, self.params.peer_timeout, until_ps
                        )));
                    }
                }
            }
            self.stats.wait_us += t0.elapsed().as_micros() as u64;
        }
        while let Some(f) = self.pending.front() {
            if self.sync && f.at_ps > until_ps {
                break;
            }
            let Some(mut f) = self.pending.pop_front() else {
                break;
            };
            if !self.sync {
                f.at_ps = until_ps;
            }
            out.push(f);
        }
        Ok(())
    }

    fn horizon_ps(&mut self) -> u64 {
        self.drain();
        if self.sync && !self.closed {
            self.horizon
        } else {
            u64::MAX
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn close(&mut self) -> Result<(), SimError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if !self.stats.peer_left {
            // As SimBricks does: a terminate message at the end of time.
            // SimBricks stamps it "now + latency" with now = u64::MAX, which wraps: a receiver in
            // sync mode takes it at once.
            let ts = u64::MAX.wrapping_add(self.params.link_latency_ps);
            let t0 = Instant::now();
            while !self.tx.try_send(MSG_TERMINATE, ts, &[]) {
                self.drain();
                if self.stats.peer_left || self.socket_closed() || t0.elapsed() > Duration::from_secs(5) {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        Ok(())
    }
}

impl Drop for SimbricksPort {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
