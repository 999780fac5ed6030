//! A whole RoCEv2 frame over IPv4 (IBTA Vol 1 Annex A17):
//! `Ethernet / IPv4 / UDP(4791) / BTH / [RETH] [AETH] [ImmDt] / payload / pad / ICRC`.
//!
//! Which extension headers follow the BTH is decided by the opcode
//! ([`Opcode::ext_headers`](super::Opcode::ext_headers)). The RC atomics (COMPARE_SWAP,
//! FETCH_ADD: `BTH / AtomicETH`; ATOMIC_ACKNOWLEDGE: `BTH / AETH / AtomicAckETH`, no payload)
//! are frames of their own, [`AtomicPacketRepr`].

use super::{aeth, atomicacketh, atomiceth, immdt, reth};
use super::{
    bth, ethernet, icrc, ipv4, udp, AethPacket, AethRepr, AtomicAckEthPacket, AtomicAckEthRepr, AtomicEthPacket,
    AtomicEthRepr, BthPacket, BthRepr, Error, EtherType, EthernetPacket, EthernetRepr, ExtHeaders, ImmDtPacket,
    ImmDtRepr, Ipv4Packet, Ipv4Repr, Opcode, Result, RethPacket, RethRepr, UdpPacket, UdpRepr,
};

/// The meaning of a whole RoCEv2-over-IPv4 Ethernet frame (without FCS).
///
/// [`RocePacketRepr::emit`] computes every length, the IPv4 checksum, the PadCnt, the pad bytes
/// and the ICRC itself, so those need not be right in the struct; [`RocePacketRepr::fill_lengths`]
/// sets them to what `emit` will write, which is what [`RocePacketRepr::parse`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RocePacketRepr {
    /// Ethernet II header (EtherType 0x0800).
    pub eth: EthernetRepr,
    /// IPv4 header (protocol 17); `payload_len` counts UDP header to ICRC.
    pub ipv4: Ipv4Repr,
    /// UDP header (destination port 4791); `payload_len` counts BTH to ICRC.
    pub udp: UdpRepr,
    /// Base Transport Header; `pad_count` = bytes of zero padding before the ICRC.
    pub bth: BthRepr,
    /// RETH, present for RDMA_WRITE_FIRST, RDMA_WRITE_ONLY(_WITH_IMMEDIATE) and RDMA_READ_REQUEST.
    pub reth: Option<RethRepr>,
    /// AETH, present for ACKNOWLEDGE and RDMA_READ_RESPONSE_FIRST/LAST/ONLY.
    pub aeth: Option<AethRepr>,
    /// ImmDt, present for the *_WITH_IMMEDIATE opcodes.
    pub immdt: Option<ImmDtRepr>,
    /// The payload, without pad bytes.
    pub payload: Vec<u8>,
}

/// The checks of [`RocePacketRepr::parse`] up to and including the BTH: Ethernet length and
/// EtherType; IPv4 header, Total Length, checksum, fragmentation; protocol UDP; UDP Length;
/// port 4791; the ICRC; BTH TVer. Returns the headers and the bytes from the BTH to the ICRC
/// (excluded).
fn parse_to_bth(frame: &[u8]) -> Result<(EthernetRepr, Ipv4Repr, UdpRepr, BthRepr, &[u8])> {
    let eth_packet = EthernetPacket::new_checked(frame)?;
    let eth = EthernetRepr::parse(&eth_packet)?;
    if eth.ethertype != EtherType::IPV4 {
        return Err(Error::NotIpv4(eth.ethertype.0));
    }

    let ip_packet = Ipv4Packet::new_checked(eth_packet.payload())?;
    let ipv4 = Ipv4Repr::parse(&ip_packet)?;
    if ipv4.protocol != ipv4::PROTOCOL_UDP {
        return Err(Error::NotUdp(ipv4.protocol));
    }

    let udp_packet = UdpPacket::new_checked(ip_packet.payload())?;
    if usize::from(udp_packet.len()) != ip_packet.payload().len() {
        return Err(Error::UdpLen { udp_len: udp_packet.len(), available: ip_packet.payload().len() });
    }
    let udp = UdpRepr::parse(&udp_packet)?;
    if udp.dst_port != udp::ROCEV2_PORT {
        return Err(Error::NotRoceV2Port(udp.dst_port));
    }

    // The UDP payload as a slice of `frame` (the packet views borrow it).
    let start = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN;
    let transport = &frame[start..start + udp_packet.payload().len()];
    super::check_len("BTH and ICRC", transport, bth::HEADER_LEN + icrc::ICRC_LEN)?;
    icrc::check(ip_packet.packet())?;

    let headers = &transport[..transport.len() - icrc::ICRC_LEN];
    let bth = BthRepr::parse(&BthPacket::new_unchecked(headers))?;
    Ok((eth, ipv4, udp, bth, headers))
}

impl RocePacketRepr {
    /// Parses and fully validates one Ethernet frame. Bytes after the IPv4 Total Length (e.g.
    /// padding to the 60-byte Ethernet minimum) are ignored; pad byte values are not checked;
    /// the UDP checksum is not checked.
    ///
    /// Checks, in order: Ethernet length and EtherType; IPv4 header, Total Length against the
    /// frame, checksum and fragmentation; protocol UDP; UDP Length equal to the IPv4 payload;
    /// port 4791; the ICRC; BTH TVer; that the opcode is supported; the extension headers;
    /// that PadCnt fits and the payload plus pad is a multiple of 4 bytes.
    ///
    /// # Errors
    /// A distinct [`Error`] variant for each check; never panics.
    pub fn parse(frame: &[u8]) -> Result<RocePacketRepr> {
        let (eth, ipv4, udp, bth, transport_headers) = parse_to_bth(frame)?;
        let bth_packet = BthPacket::new_unchecked(transport_headers);
        let ext = bth.opcode.ext_headers()?;

        let mut rest = bth_packet.payload();
        let reth = if ext.reth {
            let p = RethPacket::new_checked(rest)?;
            rest = &rest[reth::HEADER_LEN..];
            Some(RethRepr::parse(&p)?)
        } else {
            None
        };
        let aeth = if ext.aeth {
            let p = AethPacket::new_checked(rest)?;
            rest = &rest[aeth::HEADER_LEN..];
            Some(AethRepr::parse(&p)?)
        } else {
            None
        };
        let immdt = if ext.immdt {
            let p = ImmDtPacket::new_checked(rest)?;
            rest = &rest[immdt::HEADER_LEN..];
            Some(ImmDtRepr::parse(&p)?)
        } else {
            None
        };

        let pad = usize::from(bth.pad_count);
        if pad > rest.len() || rest.len() % 4 != 0 {
            return Err(Error::PadCount { pad_count: bth.pad_count, data_len: rest.len() });
        }
        let payload = rest[..rest.len() - pad].to_vec();

        Ok(RocePacketRepr { eth, ipv4, udp, bth, reth, aeth, immdt, payload })
    }

    /// The extension headers present in this repr (which [`RocePacketRepr::emit`] writes,
    /// whatever the opcode says).
    pub fn present_ext_headers(&self) -> ExtHeaders {
        ExtHeaders { reth: self.reth.is_some(), aeth: self.aeth.is_some(), immdt: self.immdt.is_some() }
    }

    /// Whether the extension headers present match what the BTH opcode requires.
    ///
    /// # Errors
    /// [`Error::UnsupportedOpcode`] if the opcode is not modelled or its extension headers
    /// differ from those present.
    pub fn check_ext_headers(&self) -> Result<()> {
        if self.bth.opcode.ext_headers()? == self.present_ext_headers() {
            Ok(())
        } else {
            Err(Error::UnsupportedOpcode(self.bth.opcode.0))
        }
    }

    /// Pad bytes needed to align the payload to 4 bytes (0..=3).
    pub fn pad_len(&self) -> usize {
        self.payload.len().wrapping_neg() % 4
    }

    /// Bytes from the start of the BTH to the end of the ICRC.
    fn transport_len(&self) -> usize {
        bth::HEADER_LEN + self.present_ext_headers().len() + self.payload.len() + self.pad_len() + icrc::ICRC_LEN
    }

    /// Length of the emitted frame, in bytes (Ethernet header to ICRC, no FCS, no padding to
    /// the 60-byte Ethernet minimum).
    pub fn buffer_len(&self) -> usize {
        ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + self.transport_len()
    }

    /// Sets `ipv4.payload_len`, `udp.payload_len` and `bth.pad_count` to the values
    /// [`RocePacketRepr::emit`] writes, so that `parse(&r.emit()) == Ok(r)` after this.
    pub fn fill_lengths(&mut self) {
        self.udp.payload_len = self.transport_len();
        self.ipv4.payload_len = udp::HEADER_LEN + self.udp.payload_len;
        // pad_len() is 0..=3.
        self.bth.pad_count = self.pad_len() as u8;
    }

    /// Builds the frame: headers as given, except IPv4 Total Length and checksum, UDP Length,
    /// UDP checksum 0, BTH PadCnt, zero pad bytes and the ICRC, which are computed. The
    /// extension headers present are written in the order RETH, AETH, ImmDt whether or not
    /// the opcode calls for them (see [`RocePacketRepr::check_ext_headers`]), so tests can
    /// build malformed frames on purpose.
    ///
    /// # Panics
    /// If the IPv4 Total Length would exceed 65535 bytes (a payload far beyond the 4096-byte
    /// maximum path MTU).
    pub fn emit(&self) -> Vec<u8> {
        let mut repr = self.clone();
        repr.fill_lengths();
        let mut frame = vec![0u8; repr.buffer_len()];

        let mut eth = EthernetPacket::new_unchecked(&mut frame[..]);
        repr.eth.emit(&mut eth);
        let ip_buf = eth.payload_mut();
        repr.ipv4.emit(&mut Ipv4Packet::new_unchecked(&mut *ip_buf));
        let udp_buf = &mut ip_buf[ipv4::HEADER_LEN..];
        repr.udp.emit(&mut UdpPacket::new_unchecked(&mut *udp_buf));
        let bth_buf = &mut udp_buf[udp::HEADER_LEN..];
        repr.bth.emit(&mut BthPacket::new_unchecked(&mut *bth_buf));

        let mut rest = &mut bth_buf[bth::HEADER_LEN..];
        if let Some(r) = &repr.reth {
            r.emit(&mut RethPacket::new_unchecked(&mut *rest));
            rest = &mut rest[reth::HEADER_LEN..];
        }
        if let Some(a) = &repr.aeth {
            a.emit(&mut AethPacket::new_unchecked(&mut *rest));
            rest = &mut rest[aeth::HEADER_LEN..];
        }
        if let Some(i) = &repr.immdt {
            i.emit(&mut ImmDtPacket::new_unchecked(&mut *rest));
            rest = &mut rest[immdt::HEADER_LEN..];
        }
        rest[..repr.payload.len()].copy_from_slice(&repr.payload);
        // Pad bytes and the ICRC slot are already zero.

        icrc::fill(&mut frame[ethernet::HEADER_LEN..])
            .expect("an emitted frame always holds the IPv4, UDP and BTH headers");
        frame
    }
}

/// An RC atomic frame, which [`RocePacketRepr`] does not carry (IBTA Vol 1 §9.3.4, §9.3.5,
/// §9.4.5): COMPARE_SWAP or FETCH_ADD (`Ethernet / IPv4 / UDP / BTH / AtomicETH / ICRC`) or
/// ATOMIC_ACKNOWLEDGE (`... / BTH / AETH / AtomicAckETH / ICRC`). Atomic packets carry no
/// payload, so PadCnt is 0.
///
/// Like [`RocePacketRepr`], [`AtomicPacketRepr::emit`] computes the lengths, the IPv4
/// checksum and the ICRC; [`AtomicPacketRepr::fill_lengths`] sets them to what `emit`
/// writes, which is what [`AtomicPacketRepr::parse`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtomicPacketRepr {
    /// Ethernet II header (EtherType 0x0800).
    pub eth: EthernetRepr,
    /// IPv4 header (protocol 17); `payload_len` counts UDP header to ICRC.
    pub ipv4: Ipv4Repr,
    /// UDP header (destination port 4791); `payload_len` counts BTH to ICRC.
    pub udp: UdpRepr,
    /// Base Transport Header (opcode 0x12, 0x13 or 0x14; `pad_count` 0).
    pub bth: BthRepr,
    /// AtomicETH, present for COMPARE_SWAP and FETCH_ADD.
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH, present for ATOMIC_ACKNOWLEDGE.
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH, present for ATOMIC_ACKNOWLEDGE (after the AETH).
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
}

impl AtomicPacketRepr {
    /// Whether `opcode` is one of the RC atomic opcodes this type carries (0x12..=0x14).
    pub const fn is_atomic_opcode(opcode: Opcode) -> bool {
        matches!(opcode.0, 0x12..=0x14)
    }

    /// Parses and fully validates one Ethernet frame holding an RC atomic packet. The checks
    /// up to the BTH are those of [`RocePacketRepr::parse`]; then the opcode must be 0x12,
    /// 0x13 or 0x14, its extension headers complete, PadCnt 0 and nothing else before the
    /// ICRC.
    ///
    /// # Errors
    /// As [`RocePacketRepr::parse`]; [`Error::UnsupportedOpcode`] for any other opcode,
    /// [`Error::Truncated`] for a short AtomicETH, AETH or AtomicAckETH, [`Error::PadCount`]
    /// for a non-zero PadCnt or bytes after the extension headers. Never panics.
    pub fn parse(frame: &[u8]) -> Result<AtomicPacketRepr> {
        let (eth, ipv4, udp, bth, headers) = parse_to_bth(frame)?;
        if !Self::is_atomic_opcode(bth.opcode) {
            return Err(Error::UnsupportedOpcode(bth.opcode.0));
        }
        let mut rest = &headers[bth::HEADER_LEN..];
        let (mut atomic_eth, mut aeth, mut atomic_ack_eth) = (None, None, None);
        if bth.opcode == Opcode::RC_ATOMIC_ACKNOWLEDGE {
            let p = AethPacket::new_checked(rest)?;
            aeth = Some(AethRepr::parse(&p)?);
            rest = &rest[aeth::HEADER_LEN..];
            let p = AtomicAckEthPacket::new_checked(rest)?;
            atomic_ack_eth = Some(AtomicAckEthRepr::parse(&p)?);
            rest = &rest[atomicacketh::HEADER_LEN..];
        } else {
            let p = AtomicEthPacket::new_checked(rest)?;
            atomic_eth = Some(AtomicEthRepr::parse(&p)?);
            rest = &rest[atomiceth::HEADER_LEN..];
        }
        if bth.pad_count != 0 || !rest.is_empty() {
            return Err(Error::PadCount { pad_count: bth.pad_count, data_len: rest.len() });
        }
        Ok(AtomicPacketRepr { eth, ipv4, udp, bth, atomic_eth, aeth, atomic_ack_eth })
    }

    /// Whether the extension headers present match the opcode: an AtomicETH alone for
    /// COMPARE_SWAP and FETCH_ADD, an AETH and an AtomicAckETH for ATOMIC_ACKNOWLEDGE.
    ///
    /// # Errors
    /// [`Error::UnsupportedOpcode`] otherwise.
    pub fn check_ext_headers(&self) -> Result<()> {
        let ok = match self.bth.opcode {
            Opcode::RC_COMPARE_SWAP | Opcode::RC_FETCH_ADD => {
                self.atomic_eth.is_some() && self.aeth.is_none() && self.atomic_ack_eth.is_none()
            }
            Opcode::RC_ATOMIC_ACKNOWLEDGE => {
                self.atomic_eth.is_none() && self.aeth.is_some() && self.atomic_ack_eth.is_some()
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::UnsupportedOpcode(self.bth.opcode.0))
        }
    }

    /// The extension headers present, in wire order (AtomicETH, AETH, AtomicAckETH): 28
    /// bytes for a request, 12 for an ATOMIC_ACKNOWLEDGE.
    pub fn ext_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(a) = &self.atomic_eth {
            let mut b = [0u8; atomiceth::HEADER_LEN];
            a.emit(&mut AtomicEthPacket::new_unchecked(&mut b[..]));
            out.extend_from_slice(&b);
        }
        if let Some(a) = &self.aeth {
            let mut b = [0u8; aeth::HEADER_LEN];
            a.emit(&mut AethPacket::new_unchecked(&mut b[..]));
            out.extend_from_slice(&b);
        }
        if let Some(a) = &self.atomic_ack_eth {
            let mut b = [0u8; atomicacketh::HEADER_LEN];
            a.emit(&mut AtomicAckEthPacket::new_unchecked(&mut b[..]));
            out.extend_from_slice(&b);
        }
        out
    }

    /// The same headers as a [`RocePacketRepr`] whose payload is the extension headers'
    /// bytes: both emit the same frame (the extension headers are whole words, so no pad).
    fn as_roce(&self) -> RocePacketRepr {
        RocePacketRepr {
            eth: self.eth,
            ipv4: self.ipv4,
            udp: self.udp,
            bth: self.bth,
            reth: None,
            aeth: None,
            immdt: None,
            payload: self.ext_bytes(),
        }
    }

    /// Length of the emitted frame, in bytes (Ethernet header to ICRC).
    pub fn buffer_len(&self) -> usize {
        self.as_roce().buffer_len()
    }

    /// Sets `ipv4.payload_len`, `udp.payload_len` and `bth.pad_count` (0) to the values
    /// [`AtomicPacketRepr::emit`] writes.
    pub fn fill_lengths(&mut self) {
        let mut r = self.as_roce();
        r.fill_lengths();
        self.ipv4.payload_len = r.ipv4.payload_len;
        self.udp.payload_len = r.udp.payload_len;
        self.bth.pad_count = r.bth.pad_count;
    }

    /// Builds the frame: headers as given, except IPv4 Total Length and checksum, UDP Length,
    /// UDP checksum 0, BTH PadCnt (0) and the ICRC, which are computed. The extension
    /// headers present are written whether or not the opcode calls for them (see
    /// [`AtomicPacketRepr::check_ext_headers`]).
    pub fn emit(&self) -> Vec<u8> {
        self.as_roce().emit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{AckKind, Opcode};
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    // A whole RC ACKNOWLEDGE frame built by scapy 2.6.1 (ICRC computed by scapy.contrib.roce).
    static ACK_FRAME: [u8; 62] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, // eth
        0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x85, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, // ipv4
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, // udp
        0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x0a, 0xbc, // bth
        0x1f, 0x00, 0x00, 0x05, // aeth
        0x02, 0x20, 0xf0, 0x25, // icrc
    ];

    // A whole RC RDMA_WRITE_ONLY frame built by scapy: RETH, one payload byte, three pad bytes.
    static WRITE_FRAME: [u8; 78] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, // eth
        0x45, 0x02, 0x00, 0x40, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x75, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, // ipv4
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x2c, 0x00, 0x00, // udp
        0x0a, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x0a, 0xbc, // bth
        0x00, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x01, // reth
        0xa5, 0x00, 0x00, 0x00, // payload and pad
        0xe3, 0x78, 0x9f, 0x45, // icrc
    ];

    fn base(opcode: Opcode) -> RocePacketRepr {
        RocePacketRepr {
            eth: EthernetRepr {
                src_addr: [2, 0, 0, 0, 0, 1],
                dst_addr: [2, 0, 0, 0, 0, 2],
                ethertype: EtherType::IPV4,
            },
            ipv4: Ipv4Repr {
                src_addr: Ipv4Addr::new(10, 0, 0, 1),
                dst_addr: Ipv4Addr::new(10, 0, 0, 2),
                dscp: 0,
                ecn: 2,
                ident: 0x1234,
                dont_frag: true,
                ttl: 64,
                protocol: ipv4::PROTOCOL_UDP,
                payload_len: 0,
            },
            udp: UdpRepr { src_port: 0xc001, dst_port: udp::ROCEV2_PORT, payload_len: 0 },
            bth: BthRepr {
                opcode,
                solicited: false,
                mig_req: false,
                pad_count: 0,
                pkey: 0xffff,
                fecn: false,
                becn: false,
                dest_qp: 0x12,
                ack_req: false,
                psn: 0xabc,
            },
            reth: None,
            aeth: None,
            immdt: None,
            payload: Vec::new(),
        }
    }

    fn ack() -> RocePacketRepr {
        let mut r = base(Opcode::RC_ACKNOWLEDGE);
        r.aeth = Some(AethRepr { syndrome: 0x1f, msn: 5 });
        r.fill_lengths();
        r
    }

    fn write_only() -> RocePacketRepr {
        let mut r = base(Opcode::RC_RDMA_WRITE_ONLY);
        r.bth.ack_req = true;
        r.reth = Some(RethRepr { virt_addr: 0xdead_beef, rkey: 0x1234_5678, dma_len: 1 });
        r.payload = vec![0xa5];
        r.fill_lengths();
        r
    }

    #[test]
    fn parse_scapy_frames() {
        let a = RocePacketRepr::parse(&ACK_FRAME).unwrap();
        assert_eq!(a, ack());
        assert_eq!(a.aeth.unwrap().kind(), AckKind::Ack { credit: 0x1f });
        assert_eq!(a.ipv4.payload_len, 28);
        assert_eq!(a.udp.payload_len, 20);
        let w = RocePacketRepr::parse(&WRITE_FRAME).unwrap();
        assert_eq!(w, write_only());
        assert_eq!(w.bth.pad_count, 3);
        assert_eq!(w.payload, [0xa5]);
    }

    #[test]
    fn emit_matches_scapy_bytes() {
        assert_eq!(ack().emit(), ACK_FRAME);
        assert_eq!(write_only().emit(), WRITE_FRAME);
        assert_eq!(write_only().buffer_len(), WRITE_FRAME.len());
        // emit fills lengths even when the repr's are stale.
        let mut stale = write_only();
        stale.ipv4.payload_len = 7;
        stale.udp.payload_len = 3;
        stale.bth.pad_count = 0;
        assert_eq!(stale.emit(), WRITE_FRAME);
    }

    // A FETCH_ADD (ack_req) and an ATOMIC_ACKNOWLEDGE on the same addresses as ACK_FRAME,
    // written field by field from IBTA Vol 1 §9.3.4-9.3.5; the ICRC was computed by a
    // separate script (zlib CRC-32 over the masked pseudo-header) that reproduces
    // ACK_FRAME's scapy ICRC.
    static FETCH_ADD_FRAME: [u8; 86] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, // eth
        0x45, 0x02, 0x00, 0x48, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x6d, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, // ipv4
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x34, 0x00, 0x00, // udp
        0x14, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x0a, 0xbc, // bth
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x08, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // AtomicETH
        0xb1, 0x0e, 0x5e, 0xca, // icrc
    ];

    static ATOMIC_ACK_FRAME: [u8; 70] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, // eth
        0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x7d, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, // ipv4
        0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, // udp
        0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x0a, 0xbc, // bth
        0x1f, 0x00, 0x00, 0x05, // aeth
        0x80, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78, // AtomicAckETH
        0xf8, 0xe3, 0x99, 0x15, // icrc
    ];

    fn atomic_base(opcode: Opcode) -> AtomicPacketRepr {
        let b = base(opcode);
        let mut r = AtomicPacketRepr {
            eth: b.eth,
            ipv4: b.ipv4,
            udp: b.udp,
            bth: b.bth,
            atomic_eth: None,
            aeth: None,
            atomic_ack_eth: None,
        };
        r.fill_lengths();
        r
    }

    fn fetch_add() -> AtomicPacketRepr {
        let mut r = atomic_base(Opcode::RC_FETCH_ADD);
        r.bth.ack_req = true;
        r.atomic_eth = Some(AtomicEthRepr { virt_addr: 0x7f12_3456_7808, rkey: 0xdead_beef, swap_add: 1, compare: 0 });
        r.fill_lengths();
        r
    }

    fn atomic_ack() -> AtomicPacketRepr {
        let mut r = atomic_base(Opcode::RC_ATOMIC_ACKNOWLEDGE);
        r.aeth = Some(AethRepr { syndrome: 0x1f, msn: 5 });
        r.atomic_ack_eth = Some(AtomicAckEthRepr { orig_data: 0x8000_0000_1234_5678 });
        r.fill_lengths();
        r
    }

    #[test]
    fn atomic_frames_parse_and_emit() {
        assert_eq!(fetch_add().emit(), FETCH_ADD_FRAME);
        assert_eq!(fetch_add().buffer_len(), 86);
        assert_eq!(fetch_add().ext_bytes().len(), 28);
        assert_eq!(AtomicPacketRepr::parse(&FETCH_ADD_FRAME), Ok(fetch_add()));
        assert_eq!(atomic_ack().emit(), ATOMIC_ACK_FRAME);
        assert_eq!(atomic_ack().ext_bytes().len(), 12);
        assert_eq!(AtomicPacketRepr::parse(&ATOMIC_ACK_FRAME), Ok(atomic_ack()));
        assert_eq!(fetch_add().ipv4.payload_len, 52);
        assert_eq!(atomic_ack().udp.payload_len, 28);
        assert_eq!(fetch_add().check_ext_headers(), Ok(()));
        assert_eq!(atomic_ack().check_ext_headers(), Ok(()));

        // A COMPARE_SWAP is the same frame with another opcode.
        let mut cs = fetch_add();
        cs.bth.opcode = Opcode::RC_COMPARE_SWAP;
        cs.atomic_eth.as_mut().unwrap().compare = 0x0123_4567_89ab_cdef;
        assert_eq!(AtomicPacketRepr::parse(&cs.emit()), Ok(cs));
    }

    #[test]
    fn atomic_frame_errors() {
        let parse = AtomicPacketRepr::parse;
        // RocePacketRepr does not carry atomics; AtomicPacketRepr carries nothing else.
        assert_eq!(RocePacketRepr::parse(&FETCH_ADD_FRAME), Err(Error::UnsupportedOpcode(0x14)));
        assert_eq!(parse(&ACK_FRAME), Err(Error::UnsupportedOpcode(0x11)));

        // An AtomicETH 4 bytes short (Total Length and ICRC consistent).
        let mut short = fetch_add();
        short.bth.opcode = Opcode::RC_FETCH_ADD;
        let mut f = short.as_roce();
        f.payload.truncate(24);
        assert_eq!(parse(&f.emit()), Err(Error::Truncated { header: "AtomicETH", need: 28, have: 24 }));
        // ... or 4 bytes too long.
        let mut f = fetch_add().as_roce();
        f.payload.extend_from_slice(&[0; 4]);
        assert_eq!(parse(&f.emit()), Err(Error::PadCount { pad_count: 0, data_len: 4 }));
        // An ATOMIC_ACKNOWLEDGE without its AtomicAckETH.
        let mut f = atomic_ack().as_roce();
        f.payload.truncate(4);
        assert_eq!(parse(&f.emit()), Err(Error::Truncated { header: "AtomicAckETH", need: 8, have: 0 }));
        // A flipped bit in the operands fails the ICRC.
        let mut f = FETCH_ADD_FRAME;
        f[70] ^= 0x40;
        assert!(matches!(parse(&f), Err(Error::Icrc { .. })));

        let mut r = fetch_add();
        r.aeth = Some(AethRepr { syndrome: 0, msn: 0 });
        assert_eq!(r.check_ext_headers(), Err(Error::UnsupportedOpcode(0x14)));
        let mut r = atomic_ack();
        r.atomic_ack_eth = None;
        assert_eq!(r.check_ext_headers(), Err(Error::UnsupportedOpcode(0x12)));
    }

    #[test]
    fn ethernet_padding_is_ignored() {
        let mut f = ACK_FRAME.to_vec();
        f.extend_from_slice(&[0; 4]);
        assert_eq!(RocePacketRepr::parse(&f), Ok(ack()));
    }

    /// Rewrites the IPv4 checksum after a test edits the header.
    fn fix_ip_checksum(f: &mut [u8]) {
        let mut ip = Ipv4Packet::new_unchecked(&mut f[14..34]);
        ip.fill_checksum();
    }

    #[test]
    fn distinct_errors() {
        let parse = RocePacketRepr::parse;
        assert!(matches!(parse(&ACK_FRAME[..10]), Err(Error::Truncated { .. })));

        let mut f = ACK_FRAME;
        f[12] = 0x86;
        f[13] = 0xdd;
        assert_eq!(parse(&f), Err(Error::NotIpv4(0x86dd)));

        // IPv4 Total Length longer than the frame.
        assert_eq!(parse(&ACK_FRAME[..61]), Err(Error::Ipv4TotalLen { total_len: 48, available: 47 }));

        let mut f = ACK_FRAME;
        f[24] ^= 0xff;
        assert!(matches!(parse(&f), Err(Error::Ipv4Checksum { .. })));

        let mut f = ACK_FRAME;
        f[23] = 6;
        fix_ip_checksum(&mut f);
        assert_eq!(parse(&f), Err(Error::NotUdp(6)));

        // IPv4 Total Length shorter than UDP Length says.
        let mut f = ACK_FRAME;
        f[17] -= 4;
        fix_ip_checksum(&mut f);
        assert_eq!(parse(&f), Err(Error::UdpLen { udp_len: 28, available: 24 }));
        // UDP Length shorter than the IPv4 payload.
        let mut f = ACK_FRAME;
        f[39] -= 4;
        assert_eq!(parse(&f), Err(Error::UdpLen { udp_len: 24, available: 28 }));

        let mut f = ACK_FRAME;
        f[37] = 0xb8;
        assert_eq!(parse(&f), Err(Error::NotRoceV2Port(4792)));

        let mut f = ACK_FRAME;
        f[56] ^= 0x01; // MSN
        assert!(matches!(parse(&f), Err(Error::Icrc { found: 0x25f0_2002, .. })));

        // A consistent frame (right ICRC) with a bad TVer, opcode or PadCnt.
        let mut f = ACK_FRAME;
        f[43] |= 0x02;
        icrc::fill(&mut f[14..]).unwrap();
        assert_eq!(parse(&f), Err(Error::BthVersion(2)));

        let mut f = ACK_FRAME;
        f[42] = 0x13;
        icrc::fill(&mut f[14..]).unwrap();
        assert_eq!(parse(&f), Err(Error::UnsupportedOpcode(0x13)));

        let mut f = ACK_FRAME;
        f[43] |= 0x10; // PadCnt 1, but no payload after the AETH
        icrc::fill(&mut f[14..]).unwrap();
        assert_eq!(parse(&f), Err(Error::PadCount { pad_count: 1, data_len: 0 }));

        // Unaligned: a SEND_ONLY with 1 payload byte and PadCnt 0 (a 3-byte-short frame).
        let mut r = base(Opcode::RC_SEND_ONLY);
        r.payload = vec![1, 2, 3, 4];
        let mut f = r.emit();
        f.truncate(f.len() - 7); // drop 3 payload bytes and the ICRC ...
        f.extend_from_slice(&[0; 4]); // ... and add a new ICRC slot
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[38..40].copy_from_slice(&(total - 20).to_be_bytes());
        fix_ip_checksum(&mut f);
        icrc::fill(&mut f[14..]).unwrap();
        assert_eq!(parse(&f), Err(Error::PadCount { pad_count: 0, data_len: 1 }));

        // The opcode calls for a RETH the frame is too short to hold.
        let mut r = base(Opcode::RC_SEND_ONLY);
        r.payload = vec![0; 8];
        let mut f = r.emit();
        f[42] = Opcode::RC_RDMA_WRITE_FIRST.0;
        icrc::fill(&mut f[14..]).unwrap();
        assert_eq!(parse(&f), Err(Error::Truncated { header: "RETH", need: 16, have: 8 }));
    }

    #[test]
    fn ext_header_consistency() {
        assert_eq!(write_only().check_ext_headers(), Ok(()));
        let mut r = write_only();
        r.reth = None;
        assert_eq!(r.check_ext_headers(), Err(Error::UnsupportedOpcode(0x0a)));
    }

    fn supported_opcode() -> impl Strategy<Value = Opcode> {
        prop_oneof![(0x00u8..=0x11), (0x20u8..=0x2b)].prop_map(Opcode)
    }

    prop_compose! {
        fn roce_repr()(
            opcode in supported_opcode(),
            macs in any::<([u8; 6], [u8; 6])>(),
            addrs in any::<([u8; 4], [u8; 4])>(),
            dscp in 0u8..64, ecn in 0u8..4, ident in any::<u16>(), dont_frag in any::<bool>(),
            ttl in any::<u8>(), src_port in any::<u16>(),
            flags in any::<[bool; 6]>(), pkey in any::<u16>(),
            dest_qp in 0u32..=bth::MASK_24, psn in 0u32..=bth::MASK_24,
            reth in any::<(u64, u32, u32)>(),
            aeth in (any::<u8>(), 0u32..=bth::MASK_24),
            imm in any::<u32>(),
            payload in prop_oneof![
                4 => proptest::collection::vec(any::<u8>(), 0..64),
                1 => proptest::collection::vec(any::<u8>(), 0..=4096),
            ],
        ) -> RocePacketRepr {
            let ext = opcode.ext_headers().unwrap();
            let mut r = RocePacketRepr {
                eth: EthernetRepr { src_addr: macs.0, dst_addr: macs.1, ethertype: EtherType::IPV4 },
                ipv4: Ipv4Repr {
                    src_addr: addrs.0.into(), dst_addr: addrs.1.into(), dscp, ecn, ident,
                    dont_frag, ttl, protocol: ipv4::PROTOCOL_UDP, payload_len: 0,
                },
                udp: UdpRepr { src_port, dst_port: udp::ROCEV2_PORT, payload_len: 0 },
                bth: BthRepr {
                    opcode, solicited: flags[0], mig_req: flags[1], pad_count: 0, pkey,
                    fecn: flags[2], becn: flags[3], dest_qp, ack_req: flags[4], psn,
                },
                reth: ext.reth.then_some(RethRepr { virt_addr: reth.0, rkey: reth.1, dma_len: reth.2 }),
                aeth: ext.aeth.then_some(AethRepr { syndrome: aeth.0, msn: aeth.1 }),
                immdt: ext.immdt.then_some(ImmDtRepr { data: imm }),
                payload,
            };
            r.fill_lengths();
            r
        }
    }

    proptest! {
        #[test]
        fn emit_then_parse_round_trips(r in roce_repr()) {
            let frame = r.emit();
            prop_assert_eq!(frame.len(), r.buffer_len());
            prop_assert_eq!(frame.len() % 4, (14 + 20 + 8) % 4); // IB packets are whole words
            prop_assert_eq!(RocePacketRepr::parse(&frame), Ok(r));
        }

        #[test]
        fn parse_then_emit_round_trips(r in roce_repr(), ecn in 0u8..4, ttl in any::<u8>()) {
            // Changing the variant fields keeps the ICRC valid; emit reproduces the frame.
            let mut frame = r.emit();
            frame[15] = (frame[15] & 0xfc) | ecn;
            frame[22] = ttl;
            fix_ip_checksum(&mut frame);
            let parsed = RocePacketRepr::parse(&frame).unwrap();
            prop_assert_eq!(parsed.emit(), frame);
        }

        #[test]
        fn payload_bit_flip_fails_icrc(r in roce_repr(), pick in any::<prop::sample::Index>(), bit in 0u8..8) {
            prop_assume!(!r.payload.is_empty());
            let mut frame = r.emit();
            let start = frame.len() - 4 - r.pad_len() - r.payload.len();
            frame[start + pick.index(r.payload.len())] ^= 1 << bit;
            prop_assert!(
                matches!(RocePacketRepr::parse(&frame), Err(Error::Icrc { .. })),
                "a flipped payload bit must fail the ICRC"
            );
        }

        #[test]
        fn any_bit_flip_is_caught_or_harmless(r in roce_repr(), pick in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut frame = r.emit();
            let at = pick.index(frame.len());
            frame[at] ^= 1 << bit;
            let result = RocePacketRepr::parse(&frame);
            match at {
                // MAC addresses: not checked by anything.
                0..=11 => prop_assert!(result.is_ok()),
                // TOS and TTL: masked from the ICRC, caught by the IPv4 checksum.
                15 | 22 => prop_assert!(matches!(result, Err(Error::Ipv4Checksum { .. })), "{:?}", result),
                // UDP checksum (not verified) and BTH byte 4 (FECN, BECN, reserved; masked).
                40 | 41 | 46 => prop_assert!(result.is_ok(), "{:?}", result),
                // Everything else is covered by the IPv4 checksum, a length check or the ICRC.
                _ => prop_assert!(result.is_err(), "flip at byte {} bit {} accepted", at, bit),
            }
        }

        #[test]
        fn truncation_is_an_error(r in roce_repr(), cut in any::<prop::sample::Index>()) {
            let frame = r.emit();
            let len = cut.index(frame.len());
            prop_assert!(RocePacketRepr::parse(&frame[..len]).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = RocePacketRepr::parse(&bytes);
        }

        #[test]
        fn mostly_valid_bytes_never_panic(r in roce_repr(), edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
            let mut frame = r.emit();
            let len = frame.len();
            for (i, v) in edits {
                frame[i.index(len)] = v;
            }
            // Keep the headers self-consistent so parsing gets past the cheap checks.
            fix_ip_checksum(&mut frame);
            let _ = icrc::fill(&mut frame[14..]);
            let _ = RocePacketRepr::parse(&frame);
        }
    }
}
