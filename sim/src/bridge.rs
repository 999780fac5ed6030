//! Bridged wires: a NIC's Ethernet port exchanging plain frames with the world outside the
//! simulator, as QEMU's network back ends do:
//!
//! * [`UdpPort`]: one Ethernet frame per UDP datagram, no header (QEMU
//!   `-netdev socket,udp=HOST:PORT,localaddr=HOST:PORT`, or `-netdev dgram`);
//! * [`TcpPort`]: a TCP stream in which each frame is preceded by its length as 4 bytes
//!   big-endian (QEMU `-netdev socket,listen=...`/`connect=...`, or `-netdev stream`), on the
//!   listening or the connecting side;
//! * [`TapPort`]: a Linux TAP device (`/dev/net/tun`, `IFF_TAP | IFF_NO_PI`; needs
//!   `CAP_NET_ADMIN`).
//!
//! A [`BridgeSpec`] also names the two ends of a SimBricks Ethernet link
//! ([`crate::SimbricksPort`], `simbricks:PATH` and `simbricks-listen:PATH`): a
//! [`PortTiming::Synchronized`] port, for another simulator process (a second rnic world, or
//! SimBricks' own switch) rather than the world outside.
//!
//! The UDP, TCP and TAP bridges are [`PortTiming::RealTime`] ports: the world paces itself to never run ahead of
//! wall-clock time, and serialises arriving frames onto an inbound wire of its own (line rate,
//! fault injection) before the NIC sees them (see [`crate::port`]). Frames are carried without
//! FCS. Sends never block: a frame the transport cannot take now is dropped and counted, as a
//! full switch queue would drop it.
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::port::{ExternalPort, PortFrame, PortStats, PortTiming};
use crate::simbricks::{SimbricksListener, SimbricksParams, SimbricksPort};
use crate::{LinkConfig, SimError};

/// Shortest frame accepted from outside: an Ethernet header, in bytes.
pub const MIN_FRAME_BYTES: usize = 14;
/// Longest frame accepted from outside, in bytes (a jumbo frame is 9018 with header; QEMU's
/// largest packet is 69 632): longer TCP length fields mean the stream lost its framing.
pub const MAX_FRAME_BYTES: usize = 65_536;
/// Bytes a [`TcpPort`] buffers towards a slow peer before it drops frames (4 MiB).
pub const TCP_TX_BUFFER_BYTES: usize = 4 << 20;
/// Receive buffer a [`UdpPort`] asks the kernel for, in bytes (32 MiB). The world is thousands
/// of times slower than wall-clock time and its thread shares the CPU, so a peer's burst (rxe
/// answering 16 outstanding 64 KiB READs at once: 1 MiB) must wait in the socket until the
/// world takes it; Linux's default (`net.core.rmem_default`, 208 KiB) lost a third of such
/// bursts. `SO_RCVBUFFORCE` (needs `CAP_NET_ADMIN`) is tried first, then `SO_RCVBUF` (capped
/// by `net.core.rmem_max`).
pub const UDP_RX_BUFFER_BYTES: usize = 32 << 20;

fn port_err(what: &str, e: impl std::fmt::Display) -> SimError {
    SimError::Port(format!("{what}: {e}"))
}

/// A NIC port bridged to a UDP socket, one Ethernet frame per datagram.
#[derive(Debug)]
pub struct UdpPort {
    what: String,
    socket: UdpSocket,
    peer: SocketAddr,
    buf: Vec<u8>,
    stats: PortStats,
}

impl UdpPort {
    /// Binds `local` and exchanges frames with `peer` (datagrams from other addresses are
    /// ignored and counted as malformed). For QEMU: `-netdev
    /// socket,id=n0,udp=LOCAL,localaddr=PEER`.
    ///
    /// # Errors
    /// The socket cannot be bound.
    pub fn bind(local: SocketAddr, peer: SocketAddr) -> Result<Self, SimError> {
        let what = format!("UDP bridge {local} <-> {peer}");
        let socket = UdpSocket::bind(local).map_err(|e| port_err(&what, e))?;
        socket.set_nonblocking(true).map_err(|e| port_err(&what, e))?;
        set_rx_buffer(&socket, UDP_RX_BUFFER_BYTES);
        let what = format!("UDP bridge {} <-> {peer}", socket.local_addr().map_err(|e| port_err(&what, e))?);
        Ok(Self { what, socket, peer, buf: vec![0; MAX_FRAME_BYTES], stats: PortStats::default() })
    }

    /// The bound local address (useful after binding port 0).
    ///
    /// # Errors
    /// As `UdpSocket::local_addr`.
    pub fn local_addr(&self) -> Result<SocketAddr, SimError> {
        self.socket.local_addr().map_err(|e| port_err(&self.what, e))
    }
}

/// Asks for `bytes` of receive buffer (see [`UDP_RX_BUFFER_BYTES`]); the kernel may give less,
/// which only makes bursts likelier to overflow, so failures are not errors.
fn set_rx_buffer(socket: &UdpSocket, bytes: usize) {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: setsockopt(2) on a socket we own, with a c_int option value of its size.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return;
        }
    }
}

/// The receive buffer the kernel gave `socket`, in bytes (Linux reports twice the value set,
/// its bookkeeping overhead included).
fn rx_buffer(socket: &UdpSocket) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt(2) into a c_int of the given size.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        usize::try_from(v).unwrap_or(0)
    } else {
        0
    }
}

impl UdpPort {
    /// The socket's receive buffer in bytes, as the kernel reports it (`SO_RCVBUF`).
    pub fn rx_buffer_bytes(&self) -> usize {
        rx_buffer(&self.socket)
    }
}

impl ExternalPort for UdpPort {
    fn describe(&self) -> String {
        self.what.clone()
    }
    fn timing(&self) -> PortTiming {
        PortTiming::RealTime
    }
    fn send(&mut self, frame: &[u8], _at_ps: u64) -> Result<(), SimError> {
        match self.socket.send_to(frame, self.peer) {
            Ok(_) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += frame.len() as u64;
            }
            // No listener yet (ICMP port unreachable), or a full socket buffer: the frame is lost.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::ConnectionRefused) => {
                self.stats.tx_dropped += 1
            }
            Err(e) => return Err(port_err(&self.what, e)),
        }
        Ok(())
    }
    fn advance(&mut self, _now_ps: u64) -> Result<(), SimError> {
        Ok(())
    }
    fn receive(&mut self, until_ps: u64, out: &mut Vec<PortFrame>) -> Result<(), SimError> {
        loop {
            match self.socket.recv_from(&mut self.buf) {
                Ok((n, from)) => {
                    if from != self.peer || n < MIN_FRAME_BYTES {
                        self.stats.rx_malformed += 1;
                        continue;
                    }
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                    out.push(PortFrame { at_ps: until_ps, data: self.buf[..n].to_vec() });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                // An ICMP error from an earlier send surfaces here on Linux: not fatal.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(port_err(&self.what, e)),
            }
        }
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
    fn close(&mut self) -> Result<(), SimError> {
        Ok(())
    }
}

/// A bound TCP bridge waiting for its peer (QEMU `-netdev socket,connect=ADDR`).
#[derive(Debug)]
pub struct TcpBridgeListener {
    listener: TcpListener,
}

impl TcpBridgeListener {
    /// Listens on `addr` (port 0 picks a free port; see [`local_addr`](Self::local_addr)).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(addr: SocketAddr) -> Result<Self, SimError> {
        let listener = TcpListener::bind(addr).map_err(|e| port_err(&format!("TCP bridge listening on {addr}"), e))?;
        Ok(Self { listener })
    }

    /// The bound address.
    ///
    /// # Errors
    /// As `TcpListener::local_addr`.
    pub fn local_addr(&self) -> Result<SocketAddr, SimError> {
        self.listener.local_addr().map_err(|e| port_err("TCP bridge", e))
    }

    /// Waits at most `timeout` for the peer to connect.
    ///
    /// # Errors
    /// No peer in time; I/O errors.
    pub fn accept(self, timeout: Duration) -> Result<TcpPort, SimError> {
        let what = format!("TCP bridge listening on {}", self.local_addr()?);
        self.listener.set_nonblocking(true).map_err(|e| port_err(&what, e))?;
        let deadline = Instant::now() + timeout;
        loop {
            match self.listener.accept() {
                Ok((s, peer)) => return TcpPort::from_stream(s, format!("TCP bridge (listener) <- {peer}")),
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    return Err(SimError::Port(format!("{what}: no peer connected within {timeout:?}")))
                }
                Err(e) => return Err(port_err(&what, e)),
            }
        }
    }
}

/// A NIC port bridged to a TCP stream with QEMU's socket framing: each frame preceded by its
/// length (4 bytes, big-endian).
#[derive(Debug)]
pub struct TcpPort {
    what: String,
    stream: TcpStream,
    inbuf: Vec<u8>,
    outbuf: VecDeque<u8>,
    stats: PortStats,
}

impl TcpPort {
    /// Connects to `addr` (retrying for `timeout` while it refuses), e.g. QEMU's
    /// `-netdev socket,listen=ADDR`.
    ///
    /// # Errors
    /// No listener within `timeout`; I/O errors.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Self, SimError> {
        let what = format!("TCP bridge (connecter) -> {addr}");
        let deadline = Instant::now() + timeout;
        loop {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => return Self::from_stream(s, what),
                Err(e) if e.kind() == ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(port_err(&what, e)),
            }
        }
    }

    fn from_stream(stream: TcpStream, what: String) -> Result<Self, SimError> {
        stream.set_nonblocking(true).map_err(|e| port_err(&what, e))?;
        stream.set_nodelay(true).map_err(|e| port_err(&what, e))?;
        Ok(Self { what, stream, inbuf: Vec::new(), outbuf: VecDeque::new(), stats: PortStats::default() })
    }

    fn flush(&mut self) -> Result<(), SimError> {
        while !self.outbuf.is_empty() && !self.stats.peer_left {
            let (a, _) = self.outbuf.as_slices();
            match self.stream.write(a) {
                Ok(0) => self.stats.peer_left = true,
                Ok(n) => drop(self.outbuf.drain(..n)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {
                    self.stats.peer_left = true
                }
                Err(e) => return Err(port_err(&self.what, e)),
            }
        }
        Ok(())
    }
}

impl ExternalPort for TcpPort {
    fn describe(&self) -> String {
        self.what.clone()
    }
    fn timing(&self) -> PortTiming {
        PortTiming::RealTime
    }
    fn send(&mut self, frame: &[u8], _at_ps: u64) -> Result<(), SimError> {
        if self.stats.peer_left || self.outbuf.len() + frame.len() + 4 > TCP_TX_BUFFER_BYTES {
            self.stats.tx_dropped += 1;
            return Ok(());
        }
        self.outbuf.extend((frame.len() as u32).to_be_bytes());
        self.outbuf.extend(frame);
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        self.flush()
    }
    fn advance(&mut self, _now_ps: u64) -> Result<(), SimError> {
        self.flush()
    }
    fn receive(&mut self, until_ps: u64, out: &mut Vec<PortFrame>) -> Result<(), SimError> {
        let mut chunk = [0u8; 16 * 1024];
        while !self.stats.peer_left {
            match self.stream.read(&mut chunk) {
                Ok(0) => self.stats.peer_left = true,
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => self.stats.peer_left = true,
                Err(e) => return Err(port_err(&self.what, e)),
            }
        }
        let mut at = 0;
        while self.inbuf.len() - at >= 4 {
            let len = u32::from_be_bytes([self.inbuf[at], self.inbuf[at + 1], self.inbuf[at + 2], self.inbuf[at + 3]])
                as usize;
            if len > MAX_FRAME_BYTES {
                return Err(SimError::Port(format!(
                    "{}: length field {len} exceeds {MAX_FRAME_BYTES} bytes: the stream is not QEMU socket framing",
                    self.what
                )));
            }
            if self.inbuf.len() - at - 4 < len {
                break;
            }
            let frame = &self.inbuf[at + 4..at + 4 + len];
            if len < MIN_FRAME_BYTES {
                self.stats.rx_malformed += 1;
            } else {
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += len as u64;
                out.push(PortFrame { at_ps: until_ps, data: frame.to_vec() });
            }
            at += 4 + len;
        }
        self.inbuf.drain(..at);
        Ok(())
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
    fn close(&mut self) -> Result<(), SimError> {
        let _ = self.flush();
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        Ok(())
    }
}

/// A NIC port bridged to a Linux TAP device: frames the NIC sends enter the host's network
/// stack on that interface, frames the host sends out of it reach the NIC.
#[derive(Debug)]
pub struct TapPort {
    name: String,
    fd: OwnedFd,
    buf: Vec<u8>,
    stats: PortStats,
}

const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

impl IfReq {
    fn new(name: &str) -> Result<Self, SimError> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
            return Err(SimError::InvalidArgument(format!("TAP interface name {name:?} (1 to 15 bytes)")));
        }
        let mut r = Self { name: [0; libc::IFNAMSIZ], flags: 0, _pad: [0; 22] };
        r.name[..name.len()].copy_from_slice(name.as_bytes());
        Ok(r)
    }
    fn name(&self) -> String {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(self.name.len());
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }
}

impl TapPort {
    /// Creates (or attaches to) the TAP interface `name` (`%d` in it picks a free number). The
    /// interface stays down until [`set_up`](Self::set_up) or `ip link set NAME up`.
    ///
    /// # Errors
    /// No `/dev/net/tun`, no `CAP_NET_ADMIN`, a bad name.
    pub fn open(name: &str) -> Result<Self, SimError> {
        let mut req = IfReq::new(name)?;
        req.flags = IFF_TAP | IFF_NO_PI;
        let what = format!("TAP {name}");
        let file =
            std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun").map_err(|e| port_err(&what, e))?;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which `IfReq` lays out (name,
        // then the flags union member, padded to 40 bytes); the fd is a tun device.
        let r = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) };
        if r < 0 {
            return Err(port_err(&what, std::io::Error::last_os_error()));
        }
        let fd = OwnedFd::from(file);
        rustix::fs::fcntl_setfl(&fd, rustix::fs::OFlags::NONBLOCK).map_err(|e| port_err(&what, e))?;
        Ok(Self { name: req.name(), fd, buf: vec![0; MAX_FRAME_BYTES], stats: PortStats::default() })
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Brings the interface up (`IFF_UP`), as `ip link set NAME up` does.
    ///
    /// # Errors
    /// No `CAP_NET_ADMIN`.
    pub fn set_up(&self) -> Result<(), SimError> {
        let what = format!("TAP {}", self.name);
        // SAFETY: a plain datagram socket, owned at once.
        let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return Err(port_err(&what, std::io::Error::last_os_error()));
        }
        // SAFETY: `s` is a new descriptor nobody else owns.
        let s = unsafe { OwnedFd::from_raw_fd(s) };
        let mut req = IfReq::new(&self.name)?;
        // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write one `struct ifreq` (see `open`).
        unsafe {
            if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req as *mut IfReq) < 0 {
                return Err(port_err(&what, std::io::Error::last_os_error()));
            }
            req.flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS as _, &mut req as *mut IfReq) < 0 {
                return Err(port_err(&what, std::io::Error::last_os_error()));
            }
        }
        Ok(())
    }
}

impl ExternalPort for TapPort {
    fn describe(&self) -> String {
        format!("TAP {}", self.name)
    }
    fn timing(&self) -> PortTiming {
        PortTiming::RealTime
    }
    fn send(&mut self, frame: &[u8], _at_ps: u64) -> Result<(), SimError> {
        match rustix::io::write(&self.fd, frame) {
            Ok(_) => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += frame.len() as u64;
            }
            // Interface down (EIO) or its queue full: lost, as on a real wire.
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::IO) => self.stats.tx_dropped += 1,
            Err(e) => return Err(port_err(&self.describe(), e)),
        }
        Ok(())
    }
    fn advance(&mut self, _now_ps: u64) -> Result<(), SimError> {
        Ok(())
    }
    fn receive(&mut self, until_ps: u64, out: &mut Vec<PortFrame>) -> Result<(), SimError> {
        loop {
            match rustix::io::read(&self.fd, &mut self.buf) {
                Ok(n) if n < MIN_FRAME_BYTES => self.stats.rx_malformed += 1,
                Ok(n) => {
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                    out.push(PortFrame { at_ps: until_ps, data: self.buf[..n].to_vec() });
                }
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(e) => return Err(port_err(&self.describe(), e)),
            }
        }
    }
    fn stats(&self) -> PortStats {
        self.stats
    }
    fn close(&mut self) -> Result<(), SimError> {
        Ok(())
    }
}

/// How long [`BridgeSpec::open`] waits for a TCP peer (to accept, or to start listening).
pub const BRIDGE_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// A bridged wire named on a command line (`rnic sim serve --bridge SPEC`), parsed by
/// [`FromStr`](std::str::FromStr):
///
/// | SPEC | port | QEMU's side |
/// |---|---|---|
/// | `udp:LOCALPORT:PEERPORT` | [`UdpPort`] on 127.0.0.1 | `-netdev socket,udp=127.0.0.1:LOCALPORT,localaddr=127.0.0.1:PEERPORT` |
/// | `udp:LOCALADDR,PEERADDR` | [`UdpPort`], addresses `HOST:PORT` | likewise |
/// | `tcp:HOST:PORT` | [`TcpPort::connect`] | `-netdev socket,listen=HOST:PORT` |
/// | `tcp-listen:[HOST:]PORT` | [`TcpBridgeListener`] (host 127.0.0.1 by default) | `-netdev socket,connect=HOST:PORT` |
/// | `tap:NAME` | [`TapPort`], brought up | a TAP back end, or the host's stack |
/// | `simbricks:PATH` | [`SimbricksPort::connect`] to a SimBricks listener's socket | (another simulator process: `rnic`, SimBricks' `net_switch`) |
/// | `simbricks-listen:PATH` | [`SimbricksListener`] creating the socket and shared memory, waiting for one peer | likewise |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BridgeSpec {
    /// One frame per UDP datagram between `local` and `peer`.
    Udp {
        /// Address bound.
        local: SocketAddr,
        /// The only address frames go to and are accepted from.
        peer: SocketAddr,
    },
    /// QEMU socket framing over TCP, connecting to a listener.
    TcpConnect(SocketAddr),
    /// QEMU socket framing over TCP, listening for one peer.
    TcpListen(SocketAddr),
    /// A Linux TAP interface.
    Tap(String),
    /// A SimBricks Ethernet link, connecting to the listener at this Unix socket path.
    Simbricks(PathBuf),
    /// A SimBricks Ethernet link, listening at this Unix socket path (its shared memory at
    /// `PATH.shm`) for one peer.
    SimbricksListen(PathBuf),
}

fn socket_addr(s: &str, what: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("{what} {s:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{what} {s:?} resolves to no address"))
}

fn port_number(s: &str, what: &str) -> Result<u16, String> {
    s.parse::<u16>().map_err(|_| format!("{what} {s:?} is not a port number 0..=65535"))
}

impl std::str::FromStr for BridgeSpec {
    type Err = String;

    /// Parses the forms of the table above; the error says which part is wrong.
    fn from_str(s: &str) -> Result<Self, String> {
        let localhost = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            format!("{s:?}: want udp:…, tcp:…, tcp-listen:…, tap:NAME, simbricks:PATH or simbricks-listen:PATH")
        })?;
        match kind {
            "udp" => {
                if let Some((l, p)) = rest.split_once(',') {
                    return Ok(Self::Udp {
                        local: socket_addr(l, "local address")?,
                        peer: socket_addr(p, "peer address")?,
                    });
                }
                let (l, p) = rest
                    .split_once(':')
                    .ok_or_else(|| format!("{s:?}: want udp:LOCALPORT:PEERPORT or udp:LOCALADDR,PEERADDR"))?;
                let peer = port_number(p, "peer port")?;
                if peer == 0 {
                    return Err(format!("{s:?}: the peer port must not be 0"));
                }
                Ok(Self::Udp { local: localhost(port_number(l, "local port")?), peer: localhost(peer) })
            }
            "tcp" => Ok(Self::TcpConnect(socket_addr(rest, "TCP peer")?)),
            "tcp-listen" => match port_number(rest, "TCP port") {
                Ok(p) => Ok(Self::TcpListen(localhost(p))),
                Err(_) => Ok(Self::TcpListen(socket_addr(rest, "TCP listen address")?)),
            },
            "tap" => {
                IfReq::new(rest).map_err(|e| e.to_string())?;
                Ok(Self::Tap(rest.to_owned()))
            }
            "simbricks" | "simbricks-listen" if rest.is_empty() => Err(format!("{s:?}: no socket path after {kind}:")),
            "simbricks" => Ok(Self::Simbricks(PathBuf::from(rest))),
            "simbricks-listen" => Ok(Self::SimbricksListen(PathBuf::from(rest))),
            _ => Err(format!(
                "{s:?}: unknown bridge kind {kind:?} (udp, tcp, tcp-listen, tap, simbricks, simbricks-listen)"
            )),
        }
    }
}

impl std::fmt::Display for BridgeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Udp { local, peer } => write!(f, "udp:{local},{peer}"),
            Self::TcpConnect(a) => write!(f, "tcp:{a}"),
            Self::TcpListen(a) => write!(f, "tcp-listen:{a}"),
            Self::Tap(n) => write!(f, "tap:{n}"),
            Self::Simbricks(p) => write!(f, "simbricks:{}", p.display()),
            Self::SimbricksListen(p) => write!(f, "simbricks-listen:{}", p.display()),
        }
    }
}

impl BridgeSpec {
    /// Opens the port for a world with the default wire ([`LinkConfig::default`]); see
    /// [`open_for`](Self::open_for).
    ///
    /// # Errors
    /// As [`open_for`](Self::open_for).
    pub fn open(&self) -> Result<Box<dyn ExternalPort>, SimError> {
        self.open_for(&LinkConfig::default())
    }

    /// Opens the port: binds the UDP socket, connects to (or waits up to
    /// [`BRIDGE_CONNECT_TIMEOUT`] for) the TCP peer, creates and brings up the TAP
    /// interface, or joins the SimBricks link with `link`'s latency as its latency and
    /// lookahead ([`SimbricksParams::for_link`]; a listener waits up to its connect timeout, 60 s,
    /// for the peer).
    ///
    /// # Errors
    /// [`SimError::Port`] naming the address: it cannot be bound, no TCP or SimBricks peer in
    /// time, no `CAP_NET_ADMIN` for a TAP; [`SimError::InvalidArgument`] for a SimBricks link of
    /// latency 0.
    pub fn open_for(&self, link: &LinkConfig) -> Result<Box<dyn ExternalPort>, SimError> {
        Ok(match self {
            Self::Simbricks(p) => Box::new(SimbricksPort::connect(p, SimbricksParams::for_link(link))?),
            Self::SimbricksListen(p) => {
                Box::new(SimbricksListener::bind(p, SimbricksParams::for_link(link))?.accept()?)
            }
            Self::Udp { local, peer } => Box::new(UdpPort::bind(*local, *peer)?),
            Self::TcpConnect(a) => Box::new(TcpPort::connect(*a, BRIDGE_CONNECT_TIMEOUT)?),
            Self::TcpListen(a) => Box::new(TcpBridgeListener::bind(*a)?.accept(BRIDGE_CONNECT_TIMEOUT)?),
            Self::Tap(n) => {
                let t = TapPort::open(n)?;
                t.set_up()?;
                Box::new(t)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_specs_parse_their_documented_forms() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            "udp:40001:40002".parse(),
            Ok(BridgeSpec::Udp { local: a("127.0.0.1:40001"), peer: a("127.0.0.1:40002") })
        );
        assert_eq!(
            "udp:127.0.0.2:5,127.0.0.3:6".parse(),
            Ok(BridgeSpec::Udp { local: a("127.0.0.2:5"), peer: a("127.0.0.3:6") })
        );
        assert_eq!("tcp:127.0.0.1:9000".parse(), Ok(BridgeSpec::TcpConnect(a("127.0.0.1:9000"))));
        assert_eq!("tcp-listen:9001".parse(), Ok(BridgeSpec::TcpListen(a("127.0.0.1:9001"))));
        assert_eq!("tcp-listen:0.0.0.0:9001".parse(), Ok(BridgeSpec::TcpListen(a("0.0.0.0:9001"))));
        assert_eq!("tap:rnic%d".parse(), Ok(BridgeSpec::Tap("rnic%d".into())));
        // Display round-trips.
        assert_eq!("simbricks:/tmp/a.sock".parse(), Ok(BridgeSpec::Simbricks("/tmp/a.sock".into())));
        assert_eq!("simbricks-listen:b.sock".parse(), Ok(BridgeSpec::SimbricksListen("b.sock".into())));
        for s in ["udp:1:2", "tcp:127.0.0.1:3", "tcp-listen:4", "tap:x", "simbricks:/x", "simbricks-listen:y"] {
            let b: BridgeSpec = s.parse().unwrap();
            assert_eq!(b.to_string().parse::<BridgeSpec>(), Ok(b));
        }
    }

    #[test]
    fn bad_bridge_specs_say_what_is_wrong() {
        for (s, want) in [
            ("udp", "want udp:"),
            ("udp:40001", "udp:LOCALPORT:PEERPORT"),
            ("udp:x:40002", "local port \"x\""),
            ("udp:40001:70000", "peer port \"70000\""),
            ("udp:40001:0", "must not be 0"),
            ("udp:127.0.0.1:1,nohost", "peer address"),
            ("tcp:nohost", "TCP peer"),
            ("tcp-listen:x", "TCP listen address"),
            ("tap:", "TAP interface name"),
            ("tap:a-name-far-too-long", "TAP interface name"),
            ("pipe:/tmp/x", "unknown bridge kind \"pipe\""),
            ("simbricks:", "no socket path after simbricks:"),
            ("simbricks-listen:", "no socket path after simbricks-listen:"),
        ] {
            let e = s.parse::<BridgeSpec>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn a_udp_spec_opens_a_port_that_carries_frames() {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let spec = BridgeSpec::Udp { local: "127.0.0.1:0".parse().unwrap(), peer: peer.local_addr().unwrap() };
        let mut port = spec.open().unwrap();
        assert_eq!(port.timing(), PortTiming::RealTime);
        let direct = UdpPort::bind("127.0.0.1:0".parse().unwrap(), peer.local_addr().unwrap()).unwrap();
        // As root (SO_RCVBUFFORCE) the whole 32 MiB; otherwise at least the default 208 KiB.
        assert!(direct.rx_buffer_bytes() >= 212_992, "{}", direct.rx_buffer_bytes());
        if unsafe { libc::geteuid() } == 0 {
            assert!(direct.rx_buffer_bytes() >= UDP_RX_BUFFER_BYTES, "{}", direct.rx_buffer_bytes());
        }
        let frame = [0xabu8; 60];
        port.send(&frame, 0).unwrap();
        let mut buf = [0u8; 128];
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let (n, from) = peer.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &frame[..]);
        peer.send_to(&[0x11; 42], from).unwrap();
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while out.is_empty() && Instant::now() < deadline {
            port.receive(7, &mut out).unwrap();
        }
        assert_eq!(out, vec![PortFrame { at_ps: 7, data: vec![0x11; 42] }]);
    }
}
