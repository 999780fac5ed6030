//! IPv4 header without options (RFC 791 §3.1): 20 bytes.
//!
//! ```text
//!  0       1       2       3
//! +-------+-------+-------+-------+
//! |ver|ihl|dscp|e| total length   |
//! | identification|flg| frag off  |
//! |  ttl  | proto | hdr checksum  |
//! |        source address         |
//! |      destination address      |
//! +-------+-------+-------+-------+
//! ```
//!
//! In RoCEv2 the Total Length counts the ICRC (IBTA Vol 1 Annex A17.4), and the ICRC covers
//! this header with TOS, TTL and checksum replaced by all ones (see [`super::icrc`]).

use super::{check_len, Error, Result};
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of an IPv4 header without options, in bytes.
pub const HEADER_LEN: usize = 20;

/// IP protocol number of UDP (RFC 768).
pub const PROTOCOL_UDP: u8 = 17;

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the ones' complement
/// sum of its 16-bit big-endian words (an odd last byte is padded with zero).
///
/// Over an IPv4 header whose checksum field is zero this is the value to store in it; over a
/// header with a correct checksum it is 0.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // The loop above leaves at most 16 bits.
    !(sum as u16)
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// A read/write view of an IPv4 packet (header and payload) over a byte buffer.
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

    /// Checks that the buffer holds a 20-byte header whose IHL is 5 words and whose Total
    /// Length lies between 20 and the buffer's length (the buffer may be longer, e.g. with
    /// Ethernet padding). After this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::Ipv4HeaderLen`] or [`Error::Ipv4TotalLen`].
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        check_len("IPv4 header", data, HEADER_LEN)?;
        let header_len = self.header_len();
        if header_len != HEADER_LEN {
            return Err(Error::Ipv4HeaderLen(header_len));
        }
        let total_len = self.total_len();
        if usize::from(total_len) < HEADER_LEN || usize::from(total_len) > data.len() {
            return Err(Error::Ipv4TotalLen { total_len, available: data.len() });
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version field (high nibble of byte 0); 4 for IPv4.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL, low nibble of byte 0, times 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated Services Code Point (6 bits, RFC 2474).
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit Congestion Notification (2 bits, RFC 3168); RoCEv2 congestion control marks
    /// CE = 3 here.
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total Length in bytes: header, payload and, in RoCEv2, the ICRC.
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TOTAL_LEN])
    }

    /// Identification field.
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }

    /// Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & 0x4000 != 0
    }

    /// More Fragments flag.
    pub fn more_frags(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & 0x2000 != 0
    }

    /// Fragment offset, in units of 8 bytes.
    pub fn frag_offset(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::FLG_OFF]) & 0x1fff
    }

    /// Time To Live, in hops.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol number of the payload (17 for UDP).
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum as stored.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// The checksum the header should carry: RFC 1071 over the header with the checksum
    /// field taken as zero.
    pub fn expected_checksum(&self) -> u16 {
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&self.buffer.as_ref()[..HEADER_LEN]);
        header[field::CHECKSUM].fill(0);
        checksum(&header)
    }

    /// Whether the stored header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.buffer.as_ref()[..HEADER_LEN]) == 0
    }

    /// The payload: bytes from the end of the header to Total Length (excludes padding
    /// after the IP packet, includes the RoCEv2 ICRC).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.total_len())]
    }

    /// The whole IP packet: bytes 0 to Total Length.
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version 4 and IHL 5 (a 20-byte header).
    pub fn set_version_and_header_len(&mut self) {
        self.buffer.as_mut()[field::VER_IHL] = 0x45;
    }

    /// Sets DSCP (low 6 bits used) and ECN (low 2 bits used).
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = (dscp << 2) | (ecn & 0x03);
    }

    /// Sets Total Length, in bytes.
    pub fn set_total_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::TOTAL_LEN].copy_from_slice(&len.to_be_bytes());
    }

    /// Sets Identification.
    pub fn set_ident(&mut self, ident: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&ident.to_be_bytes());
    }

    /// Sets the flags and fragment offset (offset in 8-byte units, low 13 bits used).
    pub fn set_flags_and_offset(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let v = (u16::from(dont_frag) << 14) | (u16::from(more_frags) << 13) | (offset & 0x1fff);
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets Time To Live.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the protocol number.
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }

    /// Stores `checksum` in the header checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// Computes and stores the header checksum (RFC 791 §3.1).
    pub fn fill_checksum(&mut self) {
        let c = self.expected_checksum();
        self.set_checksum(c);
    }

    /// Mutable access to the payload (bytes 20 to Total Length).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.total_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The meaning of an IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Differentiated Services Code Point, 6 bits.
    pub dscp: u8,
    /// Explicit Congestion Notification, 2 bits.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment flag (RoCEv2 senders set it).
    pub dont_frag: bool,
    /// Time To Live, in hops.
    pub ttl: u8,
    /// Protocol number of the payload.
    pub protocol: u8,
    /// Payload length in bytes (Total Length minus 20).
    pub payload_len: usize,
}

impl Repr {
    /// Reads and validates the header of `packet`: length checks, version 4, a correct
    /// header checksum and no fragmentation.
    ///
    /// # Errors
    /// Those of [`Packet::check_len`], [`Error::Ipv4Version`], [`Error::Ipv4Checksum`],
    /// [`Error::Ipv4Fragment`].
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Ipv4Version(packet.version()));
        }
        if !packet.verify_checksum() {
            return Err(Error::Ipv4Checksum { found: packet.checksum(), expected: packet.expected_checksum() });
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::Ipv4Fragment { more_frags: packet.more_frags(), offset: packet.frag_offset() });
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            ttl: packet.ttl(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - HEADER_LEN,
        })
    }

    /// Length of the emitted header: 20 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `packet` (which must hold at least 20 bytes), with Total
    /// Length = 20 + `payload_len`, no fragmentation and a correct checksum.
    ///
    /// # Panics
    /// If 20 + `payload_len` exceeds 65535 bytes, or the buffer is shorter than 20 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let total_len = u16::try_from(HEADER_LEN + self.payload_len).expect("IPv4 total length exceeds 65535 bytes");
        packet.set_version_and_header_len();
        packet.set_dscp_ecn(self.dscp, self.ecn);
        packet.set_total_len(total_len);
        packet.set_ident(self.ident);
        packet.set_flags_and_offset(self.dont_frag, false, 0);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The IPv4 header and payload of a RoCEv2 ACK built by scapy 2.6.1 (ECN 2, DF, TTL 64).
    static BYTES: [u8; 48] = [
        0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x85, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, // header
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, // UDP
        0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x0a, 0xbc, // BTH
        0x1f, 0x00, 0x00, 0x05, // AETH
        0x02, 0x20, 0xf0, 0x25, // ICRC
    ];

    fn repr() -> Repr {
        Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 0,
            ecn: 2,
            ident: 0x1234,
            dont_frag: true,
            ttl: 64,
            protocol: PROTOCOL_UDP,
            payload_len: 28,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.ecn(), 2);
        assert_eq!(p.total_len(), 48);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 17);
        assert_eq!(p.checksum(), 0x1485);
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 28);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = BYTES;
        buf[..20].fill(0);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr().emit(&mut p);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn bad_checksum() {
        let mut buf = BYTES;
        buf[11] ^= 1;
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Repr::parse(&p), Err(Error::Ipv4Checksum { found: 0x1484, expected: 0x1485 }));
    }

    #[test]
    fn lengths() {
        assert!(matches!(Packet::new_checked(&BYTES[..19]), Err(Error::Truncated { .. })));
        // Total Length 48 but only 47 bytes.
        assert_eq!(Packet::new_checked(&BYTES[..47]), Err(Error::Ipv4TotalLen { total_len: 48, available: 47 }));
        // Trailing bytes (Ethernet padding) are allowed and excluded from the payload.
        let mut long = BYTES.to_vec();
        long.extend_from_slice(&[0; 6]);
        assert_eq!(Packet::new_checked(&long[..]).unwrap().payload().len(), 28);
        let mut opts = BYTES;
        opts[0] = 0x46;
        assert_eq!(Packet::new_checked(&opts[..]), Err(Error::Ipv4HeaderLen(24)));
        let mut v6 = BYTES;
        v6[0] = 0x65;
        v6[10..12].fill(0);
        let c = checksum(&v6[..20]);
        v6[10..12].copy_from_slice(&c.to_be_bytes());
        let p = Packet::new_checked(&v6[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::Ipv4Version(6)));
    }

    #[test]
    fn fragment_rejected() {
        let mut buf = BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_flags_and_offset(false, true, 0);
        p.fill_checksum();
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::Ipv4Fragment { more_frags: true, offset: 0 }));
    }

    #[test]
    fn rfc1071_odd_length() {
        // RFC 1071 §3 example words 0001 f203 f4f5 f6f7 sum to 0xddf2 (complement 0x220d).
        assert_eq!(checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0x220d);
        assert_eq!(checksum(&[0xff]), 0x00ff);
    }
}
