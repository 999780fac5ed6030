//! Ethernet II header (IEEE 802.3 §3.2, DIX framing): 14 bytes, no VLAN tag, no FCS.
//!
//! ```text
//!  0                   6                   12      14
//! +-------------------+-------------------+-------+
//! | destination MAC   | source MAC        | type  |
//! +-------------------+-------------------+-------+
//! ```

use super::{check_len, Result};
use core::fmt;

/// An Ethernet II EtherType (16 bits, IEEE 802.3 §3.2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4 (0x0800), the only network layer RoCEv2 frames in this model use.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// IPv6 (0x86DD).
    pub const IPV6: EtherType = EtherType(0x86DD);
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// A 48-bit MAC address in wire order.
pub type MacAddress = [u8; 6];

mod field {
    use core::ops::Range;
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// Length of the Ethernet II header, in bytes.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// A read/write view of an Ethernet II frame (header and payload) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking its length; accessors may panic if it is shorter than
    /// [`HEADER_LEN`]. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 14-byte header.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the whole header; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter than [`HEADER_LEN`].
    pub fn check_len(&self) -> Result<()> {
        check_len("Ethernet header", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address (bytes 0..6).
    pub fn dst_addr(&self) -> MacAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        a
    }

    /// Source MAC address (bytes 6..12).
    pub fn src_addr(&self) -> MacAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        a
    }

    /// EtherType (bytes 12..14, big-endian).
    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Everything after the 14-byte header (the IPv4 packet plus any Ethernet padding).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, addr: MacAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr);
    }

    /// Sets the source MAC address.
    pub fn set_src_addr(&mut self, addr: MacAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&ethertype.0.to_be_bytes());
    }

    /// Mutable access to everything after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source MAC address.
    pub src_addr: MacAddress,
    /// Destination MAC address.
    pub dst_addr: MacAddress,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Reads the header of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if the header is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr { src_addr: packet.src_addr(), dst_addr: packet.dst_addr(), ethertype: packet.ethertype() })
    }

    /// Length of the emitted header: 14 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `packet`, which must hold at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_dst_addr(self.dst_addr);
        packet.set_src_addr(self.src_addr);
        packet.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    static BYTES: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd, // payload
    ];

    fn repr() -> Repr {
        Repr { src_addr: [2, 0, 0, 0, 0, 1], dst_addr: [2, 0, 0, 0, 0, 2], ethertype: EtherType::IPV4 }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.dst_addr(), [2, 0, 0, 0, 0, 2]);
        assert_eq!(p.src_addr(), [2, 0, 0, 0, 0, 1]);
        assert_eq!(p.ethertype(), EtherType::IPV4);
        assert_eq!(p.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = [0u8; 18];
        buf[14..].copy_from_slice(&BYTES[14..]);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr().emit(&mut p);
        assert_eq!(buf, BYTES);
        assert_eq!(repr().buffer_len(), 14);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..13]),
            Err(Error::Truncated { header: "Ethernet header", need: 14, have: 13 })
        );
    }
}
