//! A software model of the RoCEv2 wire format, in the style of smoltcp's `wire` module.
//!
//! Every header has a zero-copy `Packet<T: AsRef<[u8]>>` view over a byte buffer (getters on
//! `AsRef<[u8]>`, setters on `AsMut<[u8]>`, `new_checked` that never panics) and a `Repr`
//! struct holding the header's meaning, with `parse`, `emit` and `buffer_len`. All multi-byte
//! fields are big-endian (network order) unless a docstring says otherwise; all lengths are in
//! bytes.
//!
//! | module | header | bytes | spec |
//! |---|---|---|---|
//! | [`ethernet`] | Ethernet II | 14 | IEEE 802.3 |
//! | [`ipv4`] | IPv4 without options | 20 | RFC 791 |
//! | [`udp`] | UDP | 8 | RFC 768 |
//! | [`bth`] | Base Transport Header | 12 | IBTA Vol 1 §9.2 |
//! | [`reth`] | RDMA Extended Transport Header | 16 | IBTA Vol 1 §9.3.3 |
//! | [`aeth`] | ACK Extended Transport Header | 4 | IBTA Vol 1 §9.3.5 |
//! | [`immdt`] | Immediate Data | 4 | IBTA Vol 1 §9.3.4 |
//! | [`atomiceth`] | Atomic Extended Transport Header | 28 | IBTA Vol 1 §9.3.4 |
//! | [`atomicacketh`] | Atomic Acknowledge Extended Transport Header | 8 | IBTA Vol 1 §9.3.5 |
//! | [`icrc`] | Invariant CRC | 4 | IBTA Vol 1 Annex A17.4 (RoCEv2) |
//! | [`roce`] | a whole RoCEv2 frame ([`RocePacketRepr`]; an atomic one: [`AtomicPacketRepr`]) | - | IBTA Vol 1 Annex A17 |
//!
//! The layouts follow IBTA Vol 1 chapter 9 and Annex A17; the tests of this crate check
//! these codecs against tshark's dissector and scapy's RoCE layer.

pub mod aeth;
pub mod atomicacketh;
pub mod atomiceth;
pub mod bth;
pub mod ethernet;
pub mod icrc;
pub mod immdt;
pub mod ipv4;
pub mod reth;
pub mod roce;
pub mod udp;

pub use aeth::{AckKind, Packet as AethPacket, Repr as AethRepr};
pub use atomicacketh::{Packet as AtomicAckEthPacket, Repr as AtomicAckEthRepr};
pub use atomiceth::{Packet as AtomicEthPacket, Repr as AtomicEthRepr};
pub use bth::{ExtHeaders, Opcode, Packet as BthPacket, Repr as BthRepr};
pub use ethernet::{EtherType, Packet as EthernetPacket, Repr as EthernetRepr};
pub use immdt::{Packet as ImmDtPacket, Repr as ImmDtRepr};
pub use ipv4::{Packet as Ipv4Packet, Repr as Ipv4Repr};
pub use reth::{Packet as RethPacket, Repr as RethRepr};
pub use roce::{AtomicPacketRepr, RocePacketRepr};
pub use udp::{Packet as UdpPacket, Repr as UdpRepr};

/// Why a buffer could not be read as the header or frame that was asked for.
///
/// Every parse and `new_checked` in [`crate::wire`] reports failures through this type; none of
/// them panics on any input. Lengths are in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the fixed-size header (or trailer) that must be there.
    #[error("{header} truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Which header or trailer was being read.
        header: &'static str,
        /// Bytes the header needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The Ethernet II EtherType is not IPv4 (0x0800); RoCEv2 over IPv6 is not modelled.
    #[error("EtherType {0:#06x} is not IPv4 (0x0800)")]
    NotIpv4(u16),
    /// The IPv4 version nibble is not 4 (RFC 791 §3.1).
    #[error("IPv4 version field is {0}, not 4")]
    Ipv4Version(u8),
    /// The IPv4 IHL is not 5 words: options are not modelled (RFC 791 §3.1).
    #[error("IPv4 header length is {0} bytes; only 20 (no options) is supported")]
    Ipv4HeaderLen(usize),
    /// The IPv4 Total Length is smaller than the header or larger than the bytes that follow
    /// the Ethernet header (RFC 791 §3.1; RoCEv2 counts the ICRC in it).
    #[error("IPv4 total length {total_len} does not fit the {available} bytes available")]
    Ipv4TotalLen {
        /// The Total Length field, in bytes.
        total_len: u16,
        /// Bytes from the start of the IPv4 header to the end of the buffer.
        available: usize,
    },
    /// The IPv4 header checksum does not verify (RFC 791 §3.1, RFC 1071).
    #[error("IPv4 header checksum {found:#06x} is wrong: expected {expected:#06x}")]
    Ipv4Checksum {
        /// The checksum on the wire.
        found: u16,
        /// The checksum the header should carry.
        expected: u16,
    },
    /// The IPv4 packet is a fragment (MF set or a non-zero fragment offset); RoCEv2 packets
    /// are never fragmented.
    #[error("IPv4 packet is a fragment (more fragments {more_frags}, offset {offset} x 8 bytes)")]
    Ipv4Fragment {
        /// The MF flag.
        more_frags: bool,
        /// The fragment offset, in units of 8 bytes.
        offset: u16,
    },
    /// The IPv4 protocol is not UDP (17).
    #[error("IPv4 protocol {0} is not UDP (17)")]
    NotUdp(u8),
    /// The UDP Length is below 8 or disagrees with the bytes the IPv4 header gives it
    /// (RFC 768; RoCEv2 counts the ICRC in it).
    #[error("UDP length {udp_len} disagrees with the {available} bytes after the IPv4 header")]
    UdpLen {
        /// The UDP Length field, in bytes.
        udp_len: u16,
        /// Bytes the IPv4 Total Length leaves for the UDP datagram (or the buffer holds).
        available: usize,
    },
    /// The UDP destination port is not the RoCEv2 port 4791 (IBTA Annex A17.2).
    #[error("UDP destination port {0} is not RoCEv2 (4791)")]
    NotRoceV2Port(u16),
    /// The BTH TVer (transport header version) is not 0 (IBTA Vol 1 §9.2).
    #[error("BTH transport version {0} is not 0")]
    BthVersion(u8),
    /// The BTH opcode needs an extension header this codec does not model (IETH, UD/DETH,
    /// RD, CNP), is reserved (IBTA Vol 1 §9.2, table 38), or is an atomic one given to
    /// [`RocePacketRepr`] (atomics are [`AtomicPacketRepr`]'s), or the extension headers
    /// present do not match the opcode.
    #[error("BTH opcode {0:#04x} is not supported by this codec")]
    UnsupportedOpcode(u8),
    /// The BTH PadCnt does not fit or does not align the payload: payload plus pad must be a
    /// multiple of 4 bytes and the pad must fit in it (IBTA Vol 1 §9.2, §9.8.2).
    #[error("BTH pad count {pad_count} is inconsistent with {data_len} bytes of payload and pad")]
    PadCount {
        /// The PadCnt field, 0..=3.
        pad_count: u8,
        /// Bytes between the last transport header and the ICRC (payload plus pad).
        data_len: usize,
    },
    /// The ICRC does not match the packet (IBTA Vol 1 Annex A17.4.2).
    #[error("ICRC {found:#010x} is wrong: computed {computed:#010x}")]
    Icrc {
        /// The ICRC on the wire, read least-significant byte first.
        found: u32,
        /// The ICRC computed over the packet.
        computed: u32,
    },
}

/// Shorthand for results of this module.
pub type Result<T> = core::result::Result<T, Error>;

/// Checks that `buffer` holds at least `need` bytes for `header`.
pub(crate) fn check_len(header: &'static str, buffer: &[u8], need: usize) -> Result<()> {
    if buffer.len() < need {
        Err(Error::Truncated { header, need, have: buffer.len() })
    } else {
        Ok(())
    }
}
