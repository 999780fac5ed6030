//! Helpers around the reference codec (`rnic_firmware_tests::wire`) shared by the block tests.
#![allow(dead_code)]

use super::Rng;
use rnic_firmware_tests::wire::{
    udp, AethRepr, AtomicAckEthRepr, AtomicEthRepr, AtomicPacketRepr, BthRepr, EtherType, EthernetRepr, ImmDtRepr,
    Ipv4Repr, Opcode, RethRepr, RocePacketRepr, UdpRepr,
};
use std::net::Ipv4Addr;

/// Ethernet + IPv4 + UDP + BTH.
pub const BASE_HDR: usize = 54;
pub const ICRC_LEN: usize = 4;

/// A MAC address as the RTL's ports hold it (byte 0 in bits 7:0).
pub fn mac_bits(mac: [u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&mac);
    u64::from_le_bytes(b)
}

/// An IPv4 address as the RTL's ports hold it (first octet in bits 31:24).
pub fn ip_bits(ip: Ipv4Addr) -> u64 {
    u64::from(u32::from(ip))
}

pub fn random_mac(rng: &mut Rng) -> [u8; 6] {
    let b = rng.bytes(6);
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}

pub fn random_ip(rng: &mut Rng) -> Ipv4Addr {
    Ipv4Addr::from(rng.u32())
}

/// A frame as the NIC's header builder writes it: IPv4 ID 0, DF, TTL 64, DSCP/ECN 0, UDP
/// destination 4791, BTH SE = M = 0, FECN = BECN = 0; everything else from `rng`.
pub fn nic_style_repr(rng: &mut Rng, opcode: u8) -> RocePacketRepr {
    RocePacketRepr {
        eth: EthernetRepr { src_addr: random_mac(rng), dst_addr: random_mac(rng), ethertype: EtherType::IPV4 },
        ipv4: Ipv4Repr {
            src_addr: random_ip(rng),
            dst_addr: random_ip(rng),
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
            protocol: 17,
            payload_len: 0,
        },
        udp: UdpRepr { src_port: rng.u32() as u16, dst_port: udp::ROCEV2_PORT, payload_len: 0 },
        bth: BthRepr {
            opcode: Opcode(opcode),
            solicited: false,
            mig_req: false,
            pad_count: 0,
            pkey: rng.u32() as u16,
            fecn: false,
            becn: false,
            dest_qp: rng.u32() & 0xFF_FFFF,
            ack_req: rng.chance(1, 2),
            psn: rng.u32() & 0xFF_FFFF,
        },
        reth: None,
        aeth: None,
        immdt: None,
        payload: Vec::new(),
    }
}

/// Fills the extension headers the opcode calls for with random values.
pub fn add_ext_headers(rng: &mut Rng, r: &mut RocePacketRepr) {
    let ext = r.bth.opcode.ext_headers().expect("supported opcode");
    r.reth = ext.reth.then(|| RethRepr { virt_addr: rng.next_u64(), rkey: rng.u32(), dma_len: rng.u32() });
    r.aeth = ext.aeth.then(|| AethRepr { syndrome: rng.u32() as u8, msn: rng.u32() & 0xFF_FFFF });
    r.immdt = ext.immdt.then(|| ImmDtRepr { data: rng.u32() });
}

/// The extension headers of `r` in wire order, as [`RocePacketRepr::emit`] writes them after
/// the BTH (RETH, then AETH, then ImmDt: 0, 4, 16 or 20 bytes).
pub fn ext_wire_bytes(r: &RocePacketRepr) -> Vec<u8> {
    let mut ext = Vec::new();
    if let Some(reth) = &r.reth {
        ext.extend_from_slice(&reth.virt_addr.to_be_bytes());
        ext.extend_from_slice(&reth.rkey.to_be_bytes());
        ext.extend_from_slice(&reth.dma_len.to_be_bytes());
    }
    if let Some(a) = &r.aeth {
        ext.push(a.syndrome);
        ext.extend_from_slice(&a.msn.to_be_bytes()[1..]);
    }
    if let Some(i) = &r.immdt {
        ext.extend_from_slice(&i.data.to_be_bytes());
    }
    ext
}

/// The ImmDt's 4 wire bytes as the RTL holds them (`RxDesc.imm`, `TxJob.ext4`): first wire
/// byte in bits 7:0.
pub fn imm_bits(i: &ImmDtRepr) -> u64 {
    u64::from(u32::from_le_bytes(i.data.to_be_bytes()))
}

/// The AETH's 4 wire bytes as the RTL holds them (`TxJob.ext4`): the syndrome in bits 7:0,
/// then the MSN big-endian.
pub fn aeth_bits(a: &AethRepr) -> u64 {
    let m = a.msn.to_be_bytes();
    u64::from(u32::from_le_bytes([a.syndrome, m[1], m[2], m[3]]))
}

/// A frame without its 4 ICRC bytes.
pub fn strip_icrc(frame: &[u8]) -> Vec<u8> {
    frame[..frame.len() - ICRC_LEN].to_vec()
}

/// Index of the first differing byte, with a name for where it is in a RoCEv2 frame.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<(usize, &'static str)> {
    let i =
        a.iter().zip(b).position(|(x, y)| x != y).or_else(|| (a.len() != b.len()).then_some(a.len().min(b.len())))?;
    let what = match i {
        0..=5 => "eth dst",
        6..=11 => "eth src",
        12..=13 => "ethertype",
        14 => "ip version/ihl",
        15 => "ip tos",
        16..=17 => "ip total length",
        18..=19 => "ip id",
        20..=21 => "ip flags/fragment",
        22 => "ip ttl",
        23 => "ip protocol",
        24..=25 => "ip checksum",
        26..=29 => "ip src",
        30..=33 => "ip dst",
        34..=35 => "udp sport",
        36..=37 => "udp dport",
        38..=39 => "udp length",
        40..=41 => "udp checksum",
        42 => "bth opcode",
        43 => "bth flags (SE/M/PadCnt/TVer)",
        44..=45 => "bth pkey",
        46 => "bth fecn/becn",
        47..=49 => "bth dest qp",
        50 => "bth ackreq",
        51..=53 => "bth psn",
        _ => "extension headers / payload / pad / icrc",
    };
    Some((i, what))
}

/// Panics with the first differing byte if `got != want`.
pub fn assert_frame_eq(got: &[u8], want: &[u8], ctx: &str) {
    if let Some((i, what)) = first_difference(got, want) {
        panic!(
            "{ctx}: frames differ at byte {i} ({what}): got {:02x?} want {:02x?} (lengths {} / {})",
            &got[i..(i + 8).min(got.len())],
            &want[i..(i + 8).min(want.len())],
            got.len(),
            want.len()
        );
    }
}

/// An atomic frame with the NIC-style fields of [`nic_style_repr`] and random operands:
/// COMPARE SWAP / FETCH ADD (0x13 / 0x14) get an AtomicETH, ATOMIC ACKNOWLEDGE (0x12) an
/// AETH and an AtomicAckETH.
pub fn atomic_repr(rng: &mut Rng, opcode: u8) -> AtomicPacketRepr {
    assert!(matches!(opcode, 0x12..=0x14), "{opcode:#04x} is not an atomic opcode");
    let b = nic_style_repr(rng, opcode);
    let ack = opcode == 0x12;
    let mut r = AtomicPacketRepr {
        eth: b.eth,
        ipv4: b.ipv4,
        udp: b.udp,
        bth: b.bth,
        atomic_eth: (!ack).then(|| AtomicEthRepr {
            virt_addr: rng.next_u64(),
            rkey: rng.u32(),
            swap_add: rng.next_u64(),
            compare: rng.next_u64(),
        }),
        aeth: ack.then(|| AethRepr { syndrome: rng.u32() as u8, msn: rng.u32() & 0xFF_FFFF }),
        atomic_ack_eth: ack.then(|| AtomicAckEthRepr { orig_data: rng.next_u64() }),
    };
    r.fill_lengths();
    r
}

/// Any frame a block test sends or expects: one the codec's [`RocePacketRepr`] carries, or
/// an atomic one ([`AtomicPacketRepr`]: no payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyPacket {
    Roce(RocePacketRepr),
    Atomic(AtomicPacketRepr),
}

impl From<RocePacketRepr> for AnyPacket {
    fn from(r: RocePacketRepr) -> Self {
        AnyPacket::Roce(r)
    }
}

impl From<AtomicPacketRepr> for AnyPacket {
    fn from(r: AtomicPacketRepr) -> Self {
        AnyPacket::Atomic(r)
    }
}

impl AnyPacket {
    /// A NIC-style frame of `opcode` with random extension headers and no payload.
    pub fn random(rng: &mut Rng, opcode: u8) -> AnyPacket {
        if matches!(opcode, 0x12..=0x14) {
            AnyPacket::Atomic(atomic_repr(rng, opcode))
        } else {
            let mut r = nic_style_repr(rng, opcode);
            add_ext_headers(rng, &mut r);
            AnyPacket::Roce(r)
        }
    }

    /// Parses `frame` with the codec: as an atomic frame for opcodes 0x12..=0x14, else as a
    /// [`RocePacketRepr`].
    pub fn parse(frame: &[u8]) -> rnic_firmware_tests::wire::Result<AnyPacket> {
        if frame.len() > 42 && matches!(frame[42], 0x12..=0x14) {
            AtomicPacketRepr::parse(frame).map(AnyPacket::Atomic)
        } else {
            RocePacketRepr::parse(frame).map(AnyPacket::Roce)
        }
    }

    pub fn eth(&self) -> &EthernetRepr {
        match self {
            AnyPacket::Roce(r) => &r.eth,
            AnyPacket::Atomic(r) => &r.eth,
        }
    }
    pub fn eth_mut(&mut self) -> &mut EthernetRepr {
        match self {
            AnyPacket::Roce(r) => &mut r.eth,
            AnyPacket::Atomic(r) => &mut r.eth,
        }
    }
    pub fn ipv4(&self) -> &Ipv4Repr {
        match self {
            AnyPacket::Roce(r) => &r.ipv4,
            AnyPacket::Atomic(r) => &r.ipv4,
        }
    }
    pub fn ipv4_mut(&mut self) -> &mut Ipv4Repr {
        match self {
            AnyPacket::Roce(r) => &mut r.ipv4,
            AnyPacket::Atomic(r) => &mut r.ipv4,
        }
    }
    pub fn udp(&self) -> &UdpRepr {
        match self {
            AnyPacket::Roce(r) => &r.udp,
            AnyPacket::Atomic(r) => &r.udp,
        }
    }
    pub fn bth(&self) -> &BthRepr {
        match self {
            AnyPacket::Roce(r) => &r.bth,
            AnyPacket::Atomic(r) => &r.bth,
        }
    }
    pub fn bth_mut(&mut self) -> &mut BthRepr {
        match self {
            AnyPacket::Roce(r) => &mut r.bth,
            AnyPacket::Atomic(r) => &mut r.bth,
        }
    }
    pub fn opcode(&self) -> u8 {
        self.bth().opcode.0
    }
    /// The extension headers in wire order (0, 4, 12, 16, 20 or 28 bytes).
    pub fn ext_bytes(&self) -> Vec<u8> {
        match self {
            AnyPacket::Roce(r) => ext_wire_bytes(r),
            AnyPacket::Atomic(r) => r.ext_bytes(),
        }
    }
    pub fn ext_len(&self) -> usize {
        self.ext_bytes().len()
    }
    /// The payload (none for an atomic frame).
    pub fn payload(&self) -> &[u8] {
        match self {
            AnyPacket::Roce(r) => &r.payload,
            AnyPacket::Atomic(_) => &[],
        }
    }
    /// Sets the payload (an atomic frame takes only an empty one).
    pub fn set_payload(&mut self, p: Vec<u8>) {
        match self {
            AnyPacket::Roce(r) => r.payload = p,
            AnyPacket::Atomic(_) => assert!(p.is_empty(), "atomic frames carry no payload"),
        }
    }
    pub fn pad_len(&self) -> usize {
        match self {
            AnyPacket::Roce(r) => r.pad_len(),
            AnyPacket::Atomic(_) => 0,
        }
    }
    pub fn emit(&self) -> Vec<u8> {
        match self {
            AnyPacket::Roce(r) => r.emit(),
            AnyPacket::Atomic(r) => r.emit(),
        }
    }
    pub fn buffer_len(&self) -> usize {
        match self {
            AnyPacket::Roce(r) => r.buffer_len(),
            AnyPacket::Atomic(r) => r.buffer_len(),
        }
    }
    pub fn fill_lengths(&mut self) {
        match self {
            AnyPacket::Roce(r) => r.fill_lengths(),
            AnyPacket::Atomic(r) => r.fill_lengths(),
        }
    }
    /// The same packet with its lengths filled in (what [`AnyPacket::parse`] of its frame
    /// returns).
    pub fn filled(&self) -> AnyPacket {
        let mut x = self.clone();
        x.fill_lengths();
        x
    }
    pub fn roce(&self) -> Option<&RocePacketRepr> {
        match self {
            AnyPacket::Roce(r) => Some(r),
            AnyPacket::Atomic(_) => None,
        }
    }
    pub fn atomic(&self) -> Option<&AtomicPacketRepr> {
        match self {
            AnyPacket::Roce(_) => None,
            AnyPacket::Atomic(r) => Some(r),
        }
    }
}

/// A frame cut into 64-byte stream beats: (data, valid bytes, last). The bytes of a last beat
/// past the frame are random (a stream's `tkeep`/count marks them invalid).
pub fn frame_beats(rng: &mut Rng, frame: &[u8]) -> Vec<([u8; 64], usize, bool)> {
    let n = frame.len().div_ceil(64);
    (0..n)
        .map(|k| {
            let part = &frame[64 * k..frame.len().min(64 * k + 64)];
            let mut d = [0u8; 64];
            d.copy_from_slice(&rng.bytes(64));
            d[..part.len()].copy_from_slice(part);
            (d, part.len(), k + 1 == n)
        })
        .collect()
}
