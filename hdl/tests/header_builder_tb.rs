//! `HeaderBuilder` in Verilator against the reference codec.
//!
//! - `random_headers_match_the_codec`: random addresses, ports, P_Keys, QPNs, PSNs, AckReq,
//!   opcodes (every RC/UC opcode the codec knows whose extension headers fit in 16 bytes), payload
//!   lengths 0..=8191 and extension headers (none, AETH/ImmDt or RETH, with garbage past
//!   `ext_len`): the header the block builds, followed by the payload, the pad bytes it asks for
//!   (`pad`) and the ICRC, is byte for byte the frame the codec emits; the frame parses (IPv4
//!   checksum, Total Length and UDP Length = headers + plen + pad + ICRC) and its fields match;
//!   `hlen` = 54 + ext_len and `pad` = BTH.PadCnt = (-plen) mod 4.
//! - `checksum_carry_corners`: addresses of all ones / all zeros, and 300 headers whose IPv4
//!   one's-complement sum carries out of 16 bits twice (the second fold matters).
mod harness;

use harness::codec::{self, assert_frame_eq, BASE_HDR};
use harness::{Dut, Rng};
use rnic_firmware_tests::wire::{icrc, Opcode, RocePacketRepr};
use rnic_hdl::header_builder::HeaderBuilder;
use std::net::Ipv4Addr;

/// RC and UC opcodes the codec supports whose extension headers fit the builder's 16 bytes.
fn opcodes() -> Vec<u8> {
    (0x00..=0x11u8)
        .chain(0x20..=0x2b)
        .filter(|op| Opcode(*op).ext_headers().map(|e| e.len() <= 16).unwrap_or(false))
        .collect()
}

/// Drives the builder with `r`'s fields (and `garbage` in the unused extension bytes) and
/// returns `(header bytes[..hlen], hlen, pad)`.
fn build(dut: &mut Dut, r: &RocePacketRepr, garbage: &[u8]) -> (Vec<u8>, usize, usize) {
    // The extension headers in wire order, as the codec writes them after the BTH.
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
    let ext_len = ext.len();
    ext.extend_from_slice(&garbage[ext_len..16]);

    dut.set("src_mac", codec::mac_bits(r.eth.src_addr));
    dut.set("dest_mac", codec::mac_bits(r.eth.dst_addr));
    dut.set("src_ip", codec::ip_bits(r.ipv4.src_addr));
    dut.set("dest_ip", codec::ip_bits(r.ipv4.dst_addr));
    dut.set("udp_sport", u64::from(r.udp.src_port));
    dut.set("pkey", u64::from(r.bth.pkey));
    dut.set("opcode", u64::from(r.bth.opcode.0));
    dut.set("dest_qpn", u64::from(r.bth.dest_qp));
    dut.set("ackreq", u64::from(r.bth.ack_req));
    dut.set("psn", u64::from(r.bth.psn));
    dut.set_wide("ext", &ext);
    dut.set("ext_len", ext_len as u64);
    dut.set("plen", r.payload.len() as u64);
    dut.eval();
    let hlen = dut.get("hlen") as usize;
    let pad = dut.get("pad") as usize;
    let hdr = dut.get_wide("hdr");
    assert_eq!(hdr.len(), 80);
    assert!(hlen <= 80, "hlen {hlen}");
    (hdr[..hlen].to_vec(), hlen, pad)
}

/// The frame the block's outputs describe: header, payload, `pad` zeros, then the ICRC.
fn frame_from(hdr: &[u8], payload: &[u8], pad: usize) -> Vec<u8> {
    let mut f = hdr.to_vec();
    f.extend_from_slice(payload);
    f.extend(std::iter::repeat_n(0u8, pad + codec::ICRC_LEN));
    icrc::fill(&mut f[14..]).expect("frame holds IPv4/UDP/BTH");
    f
}

fn check_one(dut: &mut Dut, r: &RocePacketRepr, rng: &mut Rng, ctx: &str) {
    let garbage = rng.bytes(16);
    let (hdr, hlen, pad) = build(dut, r, &garbage);
    let ext_len = r.present_ext_headers().len();
    assert_eq!(hlen, BASE_HDR + ext_len, "{ctx}: hlen");
    assert_eq!(pad, r.pad_len(), "{ctx}: pad for plen {}", r.payload.len());
    let frame = frame_from(&hdr, &r.payload, pad);
    let want = r.emit();
    assert_frame_eq(&frame, &want, ctx);
    // And independently of emit: the frame parses back to the same meaning.
    let parsed = RocePacketRepr::parse(&frame).unwrap_or_else(|e| panic!("{ctx}: parse: {e}"));
    let mut expect = r.clone();
    expect.fill_lengths();
    assert_eq!(parsed, expect, "{ctx}: parsed fields");
    let total = u16::from_be_bytes([frame[16], frame[17]]) as usize;
    assert_eq!(total, 20 + 8 + 12 + ext_len + r.payload.len() + pad + 4, "{ctx}: IPv4 Total Length");
    assert_eq!(usize::from(u16::from_be_bytes([frame[38], frame[39]])), total - 20, "{ctx}: UDP Length");
    assert_eq!((frame[43] >> 4) & 3, pad as u8, "{ctx}: BTH.PadCnt");
}

#[test]
fn random_headers_match_the_codec() {
    let mut dut = Dut::build::<HeaderBuilder>("header_builder").expect("build the header builder model");
    let mut rng = Rng::from_env(0x4EAD_E2B1);
    let seed = rng.0;
    let ops = opcodes();
    assert!(ops.len() >= 20, "{ops:?}");
    for i in 0..3000 {
        let op = *rng.pick(&ops);
        let mut r = codec::nic_style_repr(&mut rng, op);
        codec::add_ext_headers(&mut rng, &mut r);
        let plen = match rng.range(0, 5) {
            0 => rng.range(0, 8) as usize,
            1 => *rng.pick(&[256usize, 512, 1024, 2048, 4096, 8191]),
            _ => rng.range(0, 8191) as usize,
        };
        r.payload = rng.bytes(plen);
        check_one(&mut dut, &r, &mut rng, &format!("case {i} opcode {op:#04x} plen {plen} (seed {seed:#x})"));
    }
}

/// A destination address whose low half makes the IPv4 header's one's-complement sum carry
/// out of 16 bits twice (the fold of the fold), for a frame of `total_len` bytes.
fn double_carry_dst_lo(src: u32, dst_hi: u16, total_len: usize) -> Option<u16> {
    let s0 = 0x4500 + total_len as u32 + 0x4000 + 0x4011 + (src >> 16) + (src & 0xFFFF) + u32::from(dst_hi);
    (0..=0xFFFFu32).rev().find(|x| {
        let s = s0 + x;
        (s & 0xFFFF) + (s >> 16) > 0xFFFF
    }).map(|x| x as u16)
}

#[test]
fn checksum_carry_corners() {
    let mut dut = Dut::build::<HeaderBuilder>("header_builder").expect("build the header builder model");
    let mut rng = Rng::from_env(0xC0C0);
    let ips = [
        Ipv4Addr::new(255, 255, 255, 255),
        Ipv4Addr::new(0, 0, 0, 0),
        Ipv4Addr::new(255, 255, 0, 0),
        Ipv4Addr::new(0xbf, 0xff, 0xbf, 0xee),
    ];
    for (k, (src, dst)) in ips.iter().flat_map(|a| ips.iter().map(move |b| (*a, *b))).enumerate() {
        for plen in [0usize, 1, 3, 4, 4093, 8191] {
            for op in [0x0Au8, 0x11, 0x04] {
                let mut r = codec::nic_style_repr(&mut rng, op);
                codec::add_ext_headers(&mut rng, &mut r);
                r.ipv4.src_addr = src;
                r.ipv4.dst_addr = dst;
                r.payload = vec![0x5A; plen];
                check_one(&mut dut, &r, &mut rng, &format!("corner {k} {src}->{dst} plen {plen} op {op:#x}"));
            }
        }
    }
    // Sums whose first fold carries again.
    let mut found = 0;
    for i in 0..300 {
        let op = *rng.pick(&[0x0Au8, 0x11, 0x04, 0x07]);
        let mut r = codec::nic_style_repr(&mut rng, op);
        codec::add_ext_headers(&mut rng, &mut r);
        let plen = rng.range(0, 4096) as usize;
        r.payload = rng.bytes(plen);
        let total = 20 + 8 + 12 + r.present_ext_headers().len() + r.payload.len() + r.pad_len() + 4;
        let src = u32::from(r.ipv4.src_addr);
        let dst_hi = (u32::from(r.ipv4.dst_addr) >> 16) as u16;
        if let Some(lo) = double_carry_dst_lo(src, dst_hi, total) {
            r.ipv4.dst_addr = Ipv4Addr::from(u32::from(dst_hi) << 16 | u32::from(lo));
            found += 1;
            check_one(&mut dut, &r, &mut rng, &format!("double carry {i}: {}->{}", r.ipv4.src_addr, r.ipv4.dst_addr));
        }
    }
    assert!(found > 200, "only {found} double-carry cases");
}
