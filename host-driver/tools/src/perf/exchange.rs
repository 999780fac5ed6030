//! perftest 4.5's out-of-band exchange over TCP (docs/guests.md §4.6), so that `rnic perf` with
//! `--device` can face an unmodified `ib_write_bw` on the other side.
//!
//! Every step is an *exchange* of two messages of the same size: the client writes its own and
//! then reads the server's; the server reads and then writes. In order: the version (16 bytes,
//! "6.06" NUL-padded), the system data (cycle buffer 4096 and cache line 64, each a 4-byte
//! big-endian int; each side keeps the max), the MTU (2 bytes: the `enum ibv_mtu` value printed
//! with "%d"; each side keeps the smaller), the keys (108 bytes,
//! `LID:out_reads:QPN:PSN:rkey:VA:GID[16]:SRQN:`, hex, exchanged four times), after the run the
//! report (size and iterations as 8-byte big-endian ints; peak Gb/s, average Gb/s and message
//! rate as doubles with big-endian bytes), and at the close one more key exchange and "done\0"
//! from each side.
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rnic::Mtu;

/// perftest's TCP port.
pub const DEFAULT_PORT: u16 = 18515;
/// The version this side announces.
pub const VERSION: &str = "6.06";
/// Oldest peer version accepted (perftest refuses older ones too).
pub const MIN_PEER_VERSION: f64 = 5.70;
/// Bytes of a key message.
pub const KEY_BYTES: usize = 108;

/// One side's connection data, perftest's `struct pingpong_dest` as printed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// Outstanding reads (1 for write and send, 0x80 for read and atomic).
    pub out_reads: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// First PSN (24 bits).
    pub psn: u32,
    /// rkey of the advertised buffer (0 in send tests).
    pub rkey: u32,
    /// Virtual address of the advertised buffer.
    pub va: u64,
    /// GID; RoCEv2 over IPv4 uses the IPv4-mapped form `::ffff:a.b.c.d`.
    pub gid: [u8; 16],
    /// SRQ number (0).
    pub srqn: u32,
}

impl Key {
    /// The IPv4 address of an IPv4-mapped GID.
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        let g = &self.gid;
        (g[..10].iter().all(|&b| b == 0) && g[10] == 0xFF && g[11] == 0xFF)
            .then(|| Ipv4Addr::new(g[12], g[13], g[14], g[15]))
    }

    /// The IPv4-mapped GID of `ip`.
    pub fn gid_of(ip: Ipv4Addr) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[10] = 0xFF;
        g[11] = 0xFF;
        g[12..].copy_from_slice(&ip.octets());
        g
    }

    /// The 108-byte message.
    pub fn encode(&self) -> [u8; KEY_BYTES] {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.va
        );
        for b in self.gid {
            s.push_str(&format!("{b:02x}:"));
        }
        s.push_str(&format!("{:08x}:", self.srqn));
        let mut out = [0u8; KEY_BYTES];
        let n = s.len().min(KEY_BYTES - 1);
        out[..n].copy_from_slice(&s.as_bytes()[..n]);
        out
    }

    /// Parses a key message.
    ///
    /// # Errors
    /// A message naming the field that does not parse.
    pub fn decode(msg: &[u8]) -> Result<Key, String> {
        let text = msg.split(|&b| b == 0).next().unwrap_or_default();
        let text = std::str::from_utf8(text).map_err(|_| "the key message is not ASCII".to_owned())?;
        let f: Vec<&str> = text.split(':').collect();
        if f.len() < 23 {
            return Err(format!("the key message {text:?} has {} fields, perftest sends 23", f.len()));
        }
        let hex = |i: usize, what: &str| {
            u64::from_str_radix(f[i], 16).map_err(|_| format!("key field {what} = {:?} is not hex", f[i]))
        };
        let mut gid = [0u8; 16];
        for (k, g) in gid.iter_mut().enumerate() {
            *g = hex(6 + k, "GID")? as u8;
        }
        Ok(Key {
            lid: hex(0, "LID")? as u16,
            out_reads: hex(1, "out_reads")? as u16,
            qpn: hex(2, "QPN")? as u32,
            psn: hex(3, "PSN")? as u32,
            rkey: hex(4, "rkey")? as u32,
            va: hex(5, "VA")?,
            gid,
            srqn: hex(22, "SRQN")? as u32,
        })
    }
}

/// A bandwidth report as exchanged after the run.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BwReport {
    /// Message size, bytes.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth, Gb/s.
    pub peak_gbps: f64,
    /// Average bandwidth, Gb/s.
    pub avg_gbps: f64,
    /// Message rate, Mpps.
    pub msg_rate_mpps: f64,
}

/// The `enum ibv_mtu` value of an MTU.
pub fn ibv_mtu(m: Mtu) -> u8 {
    match m.bytes() {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    }
}

/// What a side does while it waits for its peer's message: run its in-process NIC (see
/// [`Exchange::with_idle`]).
pub type Idle = Box<dyn FnMut()>;

/// One connection of the exchange.
pub struct Exchange {
    stream: TcpStream,
    client: bool,
    idle: Option<Idle>,
}

impl Exchange {
    /// Connects to the server at `host:port`, retrying until `timeout` (the server may not be
    /// listening yet).
    ///
    /// # Errors
    /// The last connection error after `timeout`.
    pub fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<Self> {
        let start = Instant::now();
        loop {
            match TcpStream::connect((host, port)) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Self { stream, client: true, idle: None });
                }
                Err(e) if start.elapsed() >= timeout => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Listens on `port` (all IPv4 addresses, as perftest) and accepts one client.
    ///
    /// # Errors
    /// The port cannot be bound or the accept fails.
    pub fn accept(port: u16) -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))?;
        let (stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, client: false, idle: None })
    }

    /// Wraps a connected stream (`client`: this side connected).
    pub fn from_stream(stream: TcpStream, client: bool) -> Self {
        Self { stream, client, idle: None }
    }

    /// Runs `idle` whenever this side waits for the peer's message, instead of blocking.
    ///
    /// A side whose NIC is simulated in this process and joined to the peer's by a
    /// synchronised link (SimBricks) must keep its world running while it waits: the peer's
    /// world cannot pass this one's time by more than the link latency, so a peer that needs
    /// simulated time (an MMIO) before it sends its next message would otherwise wait forever.
    pub fn with_idle(mut self, idle: Idle) -> Self {
        self.idle = Some(idle);
        self
    }

    /// Reads exactly `buf.len()` bytes, running the idle hook while none are there.
    fn read_full(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let Some(idle) = self.idle.as_mut() else {
            return self.stream.read_exact(buf);
        };
        self.stream.set_nonblocking(true)?;
        let mut got = 0;
        let r = loop {
            if got == buf.len() {
                break Ok(());
            }
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => break Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed the exchange")),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => idle(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.stream.set_nonblocking(false)?;
        r
    }

    /// One exchange: sends `mine`, returns the peer's message of the same size.
    ///
    /// # Errors
    /// Socket errors (a peer that closed early is `UnexpectedEof`).
    pub fn exchange(&mut self, mine: &[u8]) -> io::Result<Vec<u8>> {
        let mut theirs = vec![0u8; mine.len()];
        if self.client {
            self.stream.write_all(mine)?;
            self.read_full(&mut theirs)?;
        } else {
            self.read_full(&mut theirs)?;
            self.stream.write_all(mine)?;
        }
        Ok(theirs)
    }

    /// The version exchange. Returns the peer's version string.
    ///
    /// # Errors
    /// Socket errors; a peer older than [`MIN_PEER_VERSION`] (`InvalidData`).
    pub fn version(&mut self) -> io::Result<String> {
        let mut mine = [0u8; 16];
        mine[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
        let theirs = self.exchange(&mine)?;
        let v = String::from_utf8_lossy(theirs.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
        match v.trim().parse::<f64>() {
            Ok(n) if n >= MIN_PEER_VERSION => Ok(v),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("peer perftest version {v:?} is older than {MIN_PEER_VERSION}"),
            )),
        }
    }

    /// The system data: (cycle buffer, cache line size), each the max of both sides.
    ///
    /// # Errors
    /// Socket errors.
    pub fn sys_data(&mut self) -> io::Result<(u32, u32)> {
        let a = self.exchange(&4096u32.to_be_bytes())?;
        let b = self.exchange(&64u32.to_be_bytes())?;
        let be = |v: &[u8]| u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        Ok((be(&a).max(4096), be(&b).max(64)))
    }

    /// The MTU exchange: the smaller of both sides' MTUs.
    ///
    /// # Errors
    /// Socket errors; a peer MTU outside 1..=5 (`InvalidData`).
    pub fn mtu(&mut self, mine: Mtu) -> io::Result<Mtu> {
        let m = ibv_mtu(mine);
        let theirs = self.exchange(&[b'0' + m, 0])?;
        let t = theirs[0].wrapping_sub(b'0');
        let bytes = match t.min(m) {
            1 => 256,
            2 => 512,
            3 => 1024,
            4 => 2048,
            5 => 4096,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("peer MTU code {:?} is not 1..5", theirs[0] as char),
                ))
            }
        };
        Mtu::from_bytes(bytes).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "MTU"))
    }

    /// A key exchange.
    ///
    /// # Errors
    /// Socket errors; a message that does not parse (`InvalidData`).
    pub fn keys(&mut self, mine: &Key) -> io::Result<Key> {
        let theirs = self.exchange(&mine.encode())?;
        Key::decode(&theirs).map_err(|m| io::Error::new(io::ErrorKind::InvalidData, m))
    }

    /// The report exchange (five values, each its own exchange).
    ///
    /// # Errors
    /// Socket errors.
    pub fn report(&mut self, mine: &BwReport) -> io::Result<BwReport> {
        let u = |v: Vec<u8>| u64::from_be_bytes(v[..8].try_into().unwrap_or([0; 8]));
        let size = u(self.exchange(&mine.size.to_be_bytes())?);
        let iters = u(self.exchange(&mine.iters.to_be_bytes())?);
        let d = |v: Vec<u8>| f64::from_bits(u(v));
        let peak = d(self.exchange(&mine.peak_gbps.to_bits().to_be_bytes())?);
        let avg = d(self.exchange(&mine.avg_gbps.to_bits().to_be_bytes())?);
        let rate = d(self.exchange(&mine.msg_rate_mpps.to_bits().to_be_bytes())?);
        Ok(BwReport { size, iters, peak_gbps: peak, avg_gbps: avg, msg_rate_mpps: rate })
    }

    /// The close: one more key exchange, then "done\0" written by each side and read from the
    /// other.
    ///
    /// # Errors
    /// Socket errors; a peer that does not say "done" (`InvalidData`).
    pub fn close(&mut self, mine: &Key) -> io::Result<()> {
        self.keys(mine)?;
        let theirs = self.exchange(b"done\0")?;
        if theirs != b"done\0" {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the peer did not end with \"done\""));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_perftests_layout_and_read_back() {
        // The example from docs/guests.md §4.6, as a client of rxe sent it.
        let wire = b"0000:0001:000011:a35222:000002ce:00007f5fd28a1000:00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:4d:02:00000000:";
        let mut msg = [0u8; KEY_BYTES];
        msg[..wire.len()].copy_from_slice(wire);
        assert_eq!(wire.len(), KEY_BYTES - 1, "107 characters and the NUL");
        let k = Key::decode(&msg).unwrap();
        assert_eq!((k.lid, k.out_reads, k.qpn, k.psn, k.rkey, k.va), (0, 1, 0x11, 0xa35222, 0x2ce, 0x7f5f_d28a_1000));
        assert_eq!(k.ipv4(), Some(Ipv4Addr::new(192, 168, 77, 2)));
        assert_eq!(k.encode(), msg, "encoding gives the same bytes");
        assert!(Key::decode(b"0000:0001:zz").is_err());
    }

    #[test]
    fn a_whole_exchange_between_two_sides() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut x = Exchange::from_stream(s, false);
            let v = x.version().unwrap();
            let sys = x.sys_data().unwrap();
            let mtu = x.mtu(Mtu::from_bytes(4096).unwrap()).unwrap();
            let k = Key {
                lid: 0,
                out_reads: 1,
                qpn: 2,
                psn: 0,
                rkey: 0,
                va: 0,
                gid: Key::gid_of(Ipv4Addr::new(192, 0, 2, 2)),
                srqn: 0,
            };
            let theirs = x.keys(&k).unwrap();
            let rep = x.report(&BwReport::default()).unwrap();
            x.close(&k).unwrap();
            (v, sys, mtu.bytes(), theirs.qpn, rep)
        });
        let mut x = Exchange::connect("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        assert_eq!(x.version().unwrap(), "6.06");
        assert_eq!(x.sys_data().unwrap(), (4096, 64));
        assert_eq!(x.mtu(Mtu::from_bytes(1024).unwrap()).unwrap().bytes(), 1024, "the smaller MTU wins");
        let mine = Key {
            lid: 0,
            out_reads: 1,
            qpn: 7,
            psn: 0x123,
            rkey: 9,
            va: 0x1000,
            gid: Key::gid_of(Ipv4Addr::new(192, 0, 2, 1)),
            srqn: 0,
        };
        let theirs = x.keys(&mine).unwrap();
        assert_eq!(theirs.qpn, 2);
        assert_eq!(theirs.ipv4(), Some(Ipv4Addr::new(192, 0, 2, 2)));
        let rep = BwReport { size: 65536, iters: 200, peak_gbps: 1.5, avg_gbps: 1.25, msg_rate_mpps: 0.002 };
        x.report(&rep).unwrap();
        x.close(&mine).unwrap();
        let (v, sys, mtu, qpn, srv_rep) = server.join().unwrap();
        assert_eq!((v.as_str(), sys, mtu, qpn), ("6.06", (4096, 64), 1024, 7));
        assert_eq!(srv_rep, rep, "values cross in big-endian order");
    }
}
