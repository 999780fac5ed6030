//! The out-of-band exchange that connects two RC QPs: one JSON line each way over a TCP socket,
//! as `ibv_rc_pingpong` and perftest exchange QPN/PSN/GID over TCP.
//!
//! rnic has no connection manager yet (librdmacm's `rdma_connect` / `rdma_accept`, whose REQ /
//! REP / RTU MADs travel in band on QP1): until it exists, this module is how two processes
//! learn each other's QP number, first PSN, port MAC and IPv4 address and advertised buffer.
//! The CM is the intended replacement; the rest of the easy API will not change when it lands.
//!
//! Protocol: the client connects; each side writes its [`Hello`] as one line of JSON and reads
//! the peer's (the client writes first); after both QPs reached RTS, each side writes one
//! [`READY`] byte and reads the peer's, so neither sends before the other's receives are
//! posted and its QP is in RTR.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use serde::{Deserialize, Serialize};

use crate::error::{xerr, EasyError, Result};

/// Version of the [`Hello`] message.
pub const PROTOCOL_VERSION: u32 = 1;
/// The byte each side writes once its QP is in RTS.
pub const READY: u8 = b'R';

/// One side's connection data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The QP: number, first PSN, port MAC and IPv4 address, and the advertised buffer
    /// (virtual address, rkey, length in bytes) if any.
    pub endpoint: rnic::Endpoint,
    /// Bytes of each receive buffer this side keeps posted (the largest message it accepts).
    pub msg_size: u64,
}

/// A TCP connection carrying the exchange; it stays open for the connection's life.
#[derive(Debug)]
pub struct Channel {
    reader: BufReader<TcpStream>,
    client: bool,
}

impl Channel {
    /// Wraps a connected stream; `client` is the side that connected (it writes first).
    ///
    /// # Errors
    /// [`EasyError::Exchange`] if the stream cannot be cloned or configured.
    pub fn new(stream: TcpStream, client: bool) -> Result<Self> {
        stream.set_nodelay(true).map_err(xerr("set TCP_NODELAY"))?;
        Ok(Self { reader: BufReader::new(stream), client })
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    fn write_line(&mut self, line: &str) -> Result<()> {
        let s = self.reader.get_mut();
        s.write_all(line.as_bytes()).and_then(|_| s.write_all(b"\n")).map_err(xerr("write"))
    }

    fn read_line(&mut self) -> Result<String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(xerr("read"))?;
        if n == 0 {
            return Err(EasyError::Exchange {
                what: "read",
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the peer closed the connection"),
            });
        }
        Ok(line)
    }

    /// Exchanges one serializable value, as one JSON line each way (the client writes first).
    ///
    /// # Errors
    /// [`EasyError::Exchange`] on socket errors; [`EasyError::Protocol`] if the peer's line does
    /// not parse as a `T`.
    pub fn exchange<T: Serialize + for<'de> Deserialize<'de>>(&mut self, mine: &T) -> Result<T> {
        let line = serde_json::to_string(mine).map_err(|e| EasyError::Protocol(e.to_string()))?;
        let theirs = if self.client {
            self.write_line(&line)?;
            self.read_line()?
        } else {
            let t = self.read_line()?;
            self.write_line(&line)?;
            t
        };
        serde_json::from_str(theirs.trim_end())
            .map_err(|e| EasyError::Protocol(format!("the peer sent {:?}: {e}", theirs.trim_end())))
    }

    /// Exchanges [`Hello`]s and checks the peer's version.
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange); [`EasyError::Protocol`] for another version.
    pub fn hello(&mut self, mine: &Hello) -> Result<Hello> {
        let theirs: Hello = self.exchange(mine)?;
        if theirs.version != PROTOCOL_VERSION {
            return Err(EasyError::Protocol(format!(
                "the peer speaks version {}, this side {PROTOCOL_VERSION}",
                theirs.version
            )));
        }
        Ok(theirs)
    }

    /// Writes one byte and reads the peer's (a barrier: both sides reached the same point).
    ///
    /// # Errors
    /// [`EasyError::Exchange`] on socket errors; [`EasyError::Protocol`] if the peer's byte is not
    /// `byte`.
    pub fn barrier(&mut self, byte: u8) -> Result<()> {
        self.reader.get_mut().write_all(&[byte]).map_err(xerr("write"))?;
        let mut b = [0u8; 1];
        self.reader.read_exact(&mut b).map_err(xerr("read"))?;
        if b[0] != byte {
            return Err(EasyError::Protocol(format!("expected the byte {byte:#04x}, the peer sent {:#04x}", b[0])));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, TcpListener};
    use std::thread;

    use super::*;

    /// A connected (client, server) pair of channels on 127.0.0.1.
    fn pair() -> (Channel, Channel) {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let t = thread::spawn(move || l.accept().unwrap().0);
        let c = TcpStream::connect(addr).unwrap();
        let s = t.join().unwrap();
        (Channel::new(c, true).unwrap(), Channel::new(s, false).unwrap())
    }

    fn hello(qpn: u32, version: u32) -> Hello {
        let endpoint = rnic::Endpoint {
            qpn,
            psn: 0x123456,
            mac: rnic::MacAddr([2, 0, 0, 0, 0, 1]),
            ip: Ipv4Addr::new(192, 0, 2, 1),
            buffer: Some(rnic::RemoteBuffer { addr: 0x7000_0000, rkey: 0x201, len: 4096 }),
        };
        Hello { version, endpoint, msg_size: 256 }
    }

    #[test]
    fn hellos_cross_and_the_barrier_passes() {
        let (mut c, mut s) = pair();
        let t = thread::spawn(move || {
            let got = s.hello(&hello(3, PROTOCOL_VERSION)).unwrap();
            s.barrier(READY).unwrap();
            got
        });
        let got = c.hello(&hello(2, PROTOCOL_VERSION)).unwrap();
        c.barrier(READY).unwrap();
        assert_eq!(got, hello(3, PROTOCOL_VERSION));
        assert_eq!(t.join().unwrap(), hello(2, PROTOCOL_VERSION));
    }

    #[test]
    fn another_version_a_bad_line_a_wrong_byte_and_a_closed_peer_are_errors() {
        let (mut c, mut s) = pair();
        let t = thread::spawn(move || s.hello(&hello(3, PROTOCOL_VERSION + 1)));
        assert!(matches!(c.hello(&hello(2, PROTOCOL_VERSION)), Err(EasyError::Protocol(m)) if m.contains("version")));
        let _ = t.join().unwrap();

        let (mut c, mut s) = pair();
        let t = thread::spawn(move || {
            s.reader.get_mut().write_all(b"{\"not\": \"a hello\"}\n").unwrap();
            s
        });
        let _s = t.join().unwrap();
        assert!(matches!(c.exchange::<Hello>(&hello(2, PROTOCOL_VERSION)), Err(EasyError::Protocol(_))));

        let (mut c, mut s) = pair();
        let t = thread::spawn(move || s.barrier(b'X'));
        assert!(matches!(c.barrier(READY), Err(EasyError::Protocol(_))));
        let _ = t.join().unwrap();

        let (mut c, s) = pair();
        drop(s);
        match c.hello(&hello(2, PROTOCOL_VERSION)) {
            Err(EasyError::Exchange { source, .. }) => assert!(matches!(
                source.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
            )),
            other => panic!("expected a socket error, got {other:?}"),
        }
    }
}
