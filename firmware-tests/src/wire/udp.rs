//! UDP header (RFC 768): 8 bytes.
//!
//! ```text
//!  0       2       4       6       8
//! +-------+-------+-------+-------+
//! | sport | dport | length| csum  |
//! +-------+-------+-------+-------+
//! ```
//!
//! RoCEv2 (IBTA Vol 1 Annex A17.2) uses destination port 4791, a source port that spreads flows
//! (`0xC000 | hash(QPN)` in practice), a Length that counts the ICRC, and a checksum of 0
//! ("not computed" for IPv4, RFC 768).

use super::{check_len, Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header, in bytes.
pub const HEADER_LEN: usize = 8;

/// The UDP destination port of RoCEv2 (IBTA Vol 1 Annex A17.2.1).
pub const ROCEV2_PORT: u16 = 4791;

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// A read/write view of a UDP datagram (header and payload) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic on a short buffer. Use
    /// [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after [`Packet::check_len`].
    ///
    /// # Errors
    /// As [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 8-byte header and that Length lies between 8 and the
    /// buffer's length. After this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::UdpLen`].
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        check_len("UDP header", data, HEADER_LEN)?;
        let len = self.len();
        if usize::from(len) < HEADER_LEN || usize::from(len) > data.len() {
            return Err(Error::UdpLen { udp_len: len, available: data.len() });
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Destination port (4791 for RoCEv2).
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Length field in bytes: header plus payload (in RoCEv2, the ICRC too).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Checksum field as stored (0 = not computed).
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The payload: bytes 8 to Length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, port: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&port.to_be_bytes());
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, port: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&port.to_be_bytes());
    }

    /// Sets Length, in bytes.
    pub fn set_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
    }

    /// Mutable access to the payload (bytes 8 to Length).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The meaning of a UDP header. The checksum is not represented: [`Repr::emit`] writes 0 as
/// RoCEv2 senders do, and [`Repr::parse`] does not verify it (the ICRC protects the payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length in bytes (Length minus 8).
    pub payload_len: usize,
}

impl Repr {
    /// Reads the header of `packet`.
    ///
    /// # Errors
    /// Those of [`Packet::check_len`].
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// Length of the emitted header: 8 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `packet` (at least 8 bytes) with Length = 8 + `payload_len`
    /// and checksum 0.
    ///
    /// # Panics
    /// If 8 + `payload_len` exceeds 65535 bytes, or the buffer is shorter than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let len = u16::try_from(HEADER_LEN + self.payload_len).expect("UDP length exceeds 65535 bytes");
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // UDP header of a scapy-built RoCEv2 ACK, followed by its BTH, AETH and ICRC.
    static BYTES: [u8; 28] = [
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, // header
        0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x0a, 0xbc, 0x1f, 0x00, 0x00, 0x05, 0x02, 0x20,
        0xf0, 0x25,
    ];

    fn repr() -> Repr {
        Repr { src_port: 0xc001, dst_port: ROCEV2_PORT, payload_len: 20 }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 0xc001);
        assert_eq!(p.dst_port(), 4791);
        assert_eq!(p.len(), 28);
        assert_eq!(p.checksum(), 0);
        assert_eq!(p.payload(), &BYTES[8..]);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = BYTES;
        buf[..8].fill(0xee);
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn lengths() {
        assert!(matches!(Packet::new_checked(&BYTES[..7]), Err(Error::Truncated { .. })));
        assert_eq!(Packet::new_checked(&BYTES[..27]), Err(Error::UdpLen { udp_len: 28, available: 27 }));
        let mut short = BYTES;
        short[5] = 7;
        assert_eq!(Packet::new_checked(&short[..]), Err(Error::UdpLen { udp_len: 7, available: 28 }));
    }
}
