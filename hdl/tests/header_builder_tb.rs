//! `HeaderBuilder` in Verilator against the reference codec.
//!
//! The builder is a 4-stage pipeline with valid/ready on both sides; every test streams its
//! requests through it (random `in_valid` gaps and `out_ready` back-pressure unless it measures
//! timing) and checks the headers in order, each with the `tag` it was sent with.
//!
//! Frames are the codec's `RocePacketRepr`, or its `AtomicPacketRepr` for the atomics (COMPARE
//! SWAP / FETCH ADD: a 28-byte AtomicETH; ATOMIC ACKNOWLEDGE: AETH + AtomicAckETH, 12 bytes;
//! no payload), through the harness's `AnyPacket`. The header record (`hdr`) is 88 bytes.
//!
//! - `random_headers_match_the_codec`: random addresses, ports, P_Keys, QPNs, PSNs, AckReq,
//!   opcodes (every RC/UC opcode the codec knows, 0x00..=0x14 and 0x20..=0x2B), payload
//!   lengths 0..=8191 (none for the atomics) and extension headers (none, AETH or ImmDt
//!   (`ext_len` 4), AETH + AtomicAckETH (12), RETH (16), RETH + ImmDt (20, RDMA WRITE ONLY
//!   WITH IMMEDIATE), AtomicETH (28), with garbage past `ext_len` in the 28-byte `ext`): the
//!   header the block builds, followed by the payload, the pad bytes it asks for (`pad`) and
//!   the ICRC, is byte for byte the frame the codec emits; the frame parses (IPv4 checksum,
//!   Total Length and UDP Length = headers + plen + pad + ICRC) and its fields match; `hlen` =
//!   54 + ext_len and `pad` = BTH.PadCnt = (-plen) mod 4.
//! - `checksum_carry_corners`: addresses of all ones / all zeros (with every `ext_len`: 0, 4,
//!   12, 16, 20, 28), and 300 headers whose IPv4 one's-complement sum carries out of 16 bits
//!   twice (the second fold matters; atomics among them).
//! - `atomic_extension_headers`: 12-byte (ATOMIC ACKNOWLEDGE) and 28-byte (COMPARE SWAP, FETCH
//!   ADD) extension headers back to back with 0-, 4-, 16- and 20-byte ones, so a stage never
//!   keeps a previous header's bytes 74..82: each header (82 or 66 bytes) is the codec's.
//! - `latency_and_rate`: with `out_ready` high a request taken in cycle `t` is at the output in
//!   cycle `t + 4`; offered every cycle, 4 of every 5 cycles take one (`in_ready` waits for a
//!   free stage, never for `out_ready`); a stalled output fills the pipeline (4 requests taken,
//!   then `in_ready` low) and loses nothing when it drains.
mod harness;

use harness::codec::{self, assert_frame_eq, AnyPacket, BASE_HDR};
use harness::{Dut, Rng};
use rnic_firmware_tests::wire::{icrc, AtomicPacketRepr, Opcode};
use rnic_hdl::header_builder::HeaderBuilder;
use std::net::Ipv4Addr;

/// Extension header bytes the builder takes (`ext`): at most an AtomicETH.
const EXT_BYTES: usize = 28;

/// Bytes of the header record (`hdr`): 54 + 28 extension bytes + 6 spare.
const HDR_BYTES: usize = 88;

/// Every RC and UC opcode the codec supports: `RocePacketRepr`'s (RETH + ImmDt at most) and
/// the atomics.
fn opcodes() -> Vec<u8> {
    (0x00..=0x14u8)
        .chain(0x20..=0x2b)
        .filter(|op| {
            AtomicPacketRepr::is_atomic_opcode(Opcode(*op))
                || Opcode(*op).ext_headers().map(|e| e.len() <= EXT_BYTES).unwrap_or(false)
        })
        .collect()
}

/// Puts `r`'s fields (and `garbage` in the unused extension bytes) on the builder's inputs.
fn drive(dut: &mut Dut, r: &AnyPacket, garbage: &[u8], tag: u64) {
    // The extension headers in wire order, as the codec writes them after the BTH.
    let mut ext = r.ext_bytes();
    let ext_len = ext.len();
    assert!(ext_len <= EXT_BYTES, "{ext_len} extension bytes");
    ext.extend_from_slice(&garbage[ext_len..EXT_BYTES]);

    dut.set("src_mac", codec::mac_bits(r.eth().src_addr));
    dut.set("dest_mac", codec::mac_bits(r.eth().dst_addr));
    dut.set("src_ip", codec::ip_bits(r.ipv4().src_addr));
    dut.set("dest_ip", codec::ip_bits(r.ipv4().dst_addr));
    dut.set("udp_sport", u64::from(r.udp().src_port));
    dut.set("pkey", u64::from(r.bth().pkey));
    dut.set("opcode", u64::from(r.opcode()));
    dut.set("dest_qpn", u64::from(r.bth().dest_qp));
    dut.set("ackreq", u64::from(r.bth().ack_req));
    dut.set("psn", u64::from(r.bth().psn));
    dut.set_wide("ext", &ext);
    dut.set("ext_len", ext_len as u64);
    dut.set("plen", r.payload().len() as u64);
    dut.set("tag_in", tag);
}

/// Random junk on every input (what an idle bus may carry).
fn drive_junk(dut: &mut Dut, rng: &mut Rng) {
    for (name, w) in [
        ("src_mac", 48),
        ("dest_mac", 48),
        ("src_ip", 32),
        ("dest_ip", 32),
        ("udp_sport", 16),
        ("pkey", 16),
        ("opcode", 8),
        ("dest_qpn", 24),
        ("ackreq", 1),
        ("psn", 24),
        ("ext_len", 5),
        ("plen", 13),
        ("tag_in", 48),
    ] {
        dut.set(name, rng.next_u64() & ((1u64 << w) - 1));
    }
    dut.set_wide("ext", &rng.bytes(EXT_BYTES));
}

/// The header at the output: `(header bytes[..hlen], hlen, pad, tag)`.
fn read_out(dut: &mut Dut) -> (Vec<u8>, usize, usize, u64) {
    let hlen = dut.get("hlen") as usize;
    let pad = dut.get("pad") as usize;
    let tag = dut.get("tag_out");
    let hdr = dut.get_wide("hdr");
    assert_eq!(hdr.len(), HDR_BYTES);
    assert!(hlen <= BASE_HDR + EXT_BYTES, "hlen {hlen}");
    (hdr[..hlen].to_vec(), hlen, pad, tag)
}

/// The frame the block's outputs describe: header, payload, `pad` zeros, then the ICRC.
fn frame_from(hdr: &[u8], payload: &[u8], pad: usize) -> Vec<u8> {
    let mut f = hdr.to_vec();
    f.extend_from_slice(payload);
    f.extend(std::iter::repeat_n(0u8, pad + codec::ICRC_LEN));
    icrc::fill(&mut f[14..]).expect("frame holds IPv4/UDP/BTH");
    f
}

fn check_one(out: (Vec<u8>, usize, usize, u64), r: &AnyPacket, tag: u64, ctx: &str) {
    let (hdr, hlen, pad, got_tag) = out;
    assert_eq!(got_tag, tag, "{ctx}: tag_out");
    let ext_len = r.ext_len();
    assert_eq!(hlen, BASE_HDR + ext_len, "{ctx}: hlen");
    assert_eq!(pad, r.pad_len(), "{ctx}: pad for plen {}", r.payload().len());
    let frame = frame_from(&hdr, r.payload(), pad);
    let want = r.emit();
    assert_frame_eq(&frame, &want, ctx);
    // And independently of emit: the frame parses back to the same meaning.
    let parsed = AnyPacket::parse(&frame).unwrap_or_else(|e| panic!("{ctx}: parse: {e}"));
    assert_eq!(parsed, r.filled(), "{ctx}: parsed fields");
    let total = u16::from_be_bytes([frame[16], frame[17]]) as usize;
    assert_eq!(total, 20 + 8 + 12 + ext_len + r.payload().len() + pad + 4, "{ctx}: IPv4 Total Length");
    assert_eq!(usize::from(u16::from_be_bytes([frame[38], frame[39]])), total - 20, "{ctx}: UDP Length");
    assert_eq!((frame[43] >> 4) & 3, pad as u8, "{ctx}: BTH.PadCnt");
}

/// Streams `cases` through the builder (`p_in` / `p_out`: percent chances per cycle that a
/// request is offered / the output is ready) and checks every header in order.
fn run(dut: &mut Dut, rng: &mut Rng, cases: &[(AnyPacket, String)], p_in: u64, p_out: u64) {
    let garbage: Vec<Vec<u8>> = cases.iter().map(|_| rng.bytes(EXT_BYTES)).collect();
    let tags: Vec<u64> = cases.iter().map(|_| rng.next_u64() & 0xFFFF_FFFF_FFFF).collect();
    let (mut next_in, mut next_out, mut cycles) = (0usize, 0usize, 0u64);
    while next_out < cases.len() {
        cycles += 1;
        assert!(cycles < 100 * cases.len() as u64 + 1000, "no progress: {next_out} headers out");
        let valid = next_in < cases.len() && rng.chance(p_in, 100);
        dut.set_bit("in_valid", valid);
        if valid {
            drive(dut, &cases[next_in].0, &garbage[next_in], tags[next_in]);
        } else {
            drive_junk(dut, rng);
        }
        let ready = rng.chance(p_out, 100);
        dut.set_bit("out_ready", ready);
        dut.eval();
        if valid && dut.get_bit("in_ready") {
            next_in += 1;
        }
        if ready && dut.get_bit("out_valid") {
            assert!(next_out < next_in, "a header out before its request went in");
            let (r, ctx) = &cases[next_out];
            check_one(read_out(dut), r, tags[next_out], ctx);
            next_out += 1;
        }
        dut.tick();
    }
    dut.set_bit("in_valid", false);
    dut.set_bit("out_ready", true);
    for _ in 0..8 {
        dut.eval();
        assert!(!dut.get_bit("out_valid"), "a header out of nothing");
        dut.tick();
    }
}

fn builder() -> Dut {
    let mut dut = Dut::build::<HeaderBuilder>("header_builder").expect("build the header builder model");
    dut.set_bit("in_valid", false);
    dut.set_bit("out_ready", false);
    dut.reset(2);
    dut
}

#[test]
fn random_headers_match_the_codec() {
    let mut dut = builder();
    let mut rng = Rng::from_env(0x4EAD_E2B1);
    let seed = rng.0;
    let ops = opcodes();
    assert!(ops.len() >= 30, "{ops:?}");
    // RETH + ImmDt (ext_len 20): RDMA WRITE ONLY WITH IMMEDIATE, RC and UC.
    assert!(ops.contains(&0x0B) && ops.contains(&0x2B), "{ops:?}");
    // AETH + AtomicAckETH (12) and AtomicETH (28).
    assert!(ops.contains(&0x12) && ops.contains(&0x13) && ops.contains(&0x14), "{ops:?}");
    let mut cases = Vec::new();
    for i in 0..3000 {
        let op = *rng.pick(&ops);
        let mut r = AnyPacket::random(&mut rng, op);
        let plen = match rng.range(0, 5) {
            _ if r.atomic().is_some() => 0,
            0 => rng.range(0, 8) as usize,
            1 => *rng.pick(&[256usize, 512, 1024, 2048, 4096, 8191]),
            _ => rng.range(0, 8191) as usize,
        };
        r.set_payload(rng.bytes(plen));
        cases.push((r, format!("case {i} opcode {op:#04x} plen {plen} (seed {seed:#x})")));
    }
    for (k, (p_in, p_out)) in [(100, 100), (70, 40), (30, 90)].into_iter().enumerate() {
        let part = &cases[k * 1000..(k + 1) * 1000];
        run(&mut dut, &mut rng, part, p_in, p_out);
    }
}

/// A destination address whose low half makes the IPv4 header's one's-complement sum carry
/// out of 16 bits twice (the fold of the fold), for a frame of `total_len` bytes.
fn double_carry_dst_lo(src: u32, dst_hi: u16, total_len: usize) -> Option<u16> {
    let s0 = 0x4500 + total_len as u32 + 0x4000 + 0x4011 + (src >> 16) + (src & 0xFFFF) + u32::from(dst_hi);
    (0..=0xFFFFu32)
        .rev()
        .find(|x| {
            let s = s0 + x;
            (s & 0xFFFF) + (s >> 16) > 0xFFFF
        })
        .map(|x| x as u16)
}

#[test]
fn checksum_carry_corners() {
    let mut dut = builder();
    let mut rng = Rng::from_env(0xC0C0);
    let mut cases = Vec::new();
    let ips = [
        Ipv4Addr::new(255, 255, 255, 255),
        Ipv4Addr::new(0, 0, 0, 0),
        Ipv4Addr::new(255, 255, 0, 0),
        Ipv4Addr::new(0xbf, 0xff, 0xbf, 0xee),
    ];
    for (k, (src, dst)) in ips.iter().flat_map(|a| ips.iter().map(move |b| (*a, *b))).enumerate() {
        for plen in [0usize, 1, 3, 4, 4093, 8191] {
            for op in [0x0Au8, 0x11, 0x04, 0x0B, 0x05, 0x12, 0x13] {
                let mut r = AnyPacket::random(&mut rng, op);
                r.ipv4_mut().src_addr = src;
                r.ipv4_mut().dst_addr = dst;
                if r.atomic().is_some() && plen != 0 {
                    continue;
                }
                r.set_payload(vec![0x5A; plen]);
                cases.push((r, format!("corner {k} {src}->{dst} plen {plen} op {op:#x}")));
            }
        }
    }
    // Sums whose first fold carries again.
    let mut found = 0;
    for i in 0..300 {
        let op = *rng.pick(&[0x0Au8, 0x11, 0x04, 0x07, 0x0B, 0x09, 0x12, 0x14]);
        let mut r = AnyPacket::random(&mut rng, op);
        if r.atomic().is_none() {
            let plen = rng.range(0, 4096) as usize;
            r.set_payload(rng.bytes(plen));
        }
        let total = 20 + 8 + 12 + r.ext_len() + r.payload().len() + r.pad_len() + 4;
        let src = u32::from(r.ipv4().src_addr);
        let dst_hi = (u32::from(r.ipv4().dst_addr) >> 16) as u16;
        if let Some(lo) = double_carry_dst_lo(src, dst_hi, total) {
            r.ipv4_mut().dst_addr = Ipv4Addr::from(u32::from(dst_hi) << 16 | u32::from(lo));
            found += 1;
            let ctx = format!("double carry {i} op {op:#04x}: {}->{}", r.ipv4().src_addr, r.ipv4().dst_addr);
            cases.push((r, ctx));
        }
    }
    assert!(found > 200, "only {found} double-carry cases");
    run(&mut dut, &mut rng, &cases, 80, 80);
}

#[test]
fn latency_and_rate() {
    let mut dut = builder();
    let mut rng = Rng::from_env(0x1A7E);
    let cases: Vec<AnyPacket> = (0..40)
        .map(|k| {
            // Every fifth an atomic (82 or 66 bytes of header).
            let op = [0x0A, 0x0A, 0x13, 0x0A, 0x12][k % 5];
            let mut r = AnyPacket::random(&mut rng, op);
            if r.atomic().is_none() {
                let plen = rng.range(0, 300) as usize;
                r.set_payload(rng.bytes(plen));
            }
            r
        })
        .collect();
    let garbage = rng.bytes(EXT_BYTES);
    // Offered every cycle with the output always ready: each request leaves 4 cycles after it
    // was taken, and at most one cycle in five takes none.
    dut.set_bit("out_ready", true);
    let mut taken_at = Vec::new();
    let mut outs = 0usize;
    let mut cycle = 0usize;
    while outs < cases.len() {
        assert!(cycle < 2 * cases.len() + 10, "no progress");
        let k = taken_at.len();
        let valid = k < cases.len();
        dut.set_bit("in_valid", valid);
        if valid {
            drive(&mut dut, &cases[k], &garbage, k as u64);
        } else {
            drive_junk(&mut dut, &mut rng);
        }
        dut.eval();
        if valid && dut.get_bit("in_ready") {
            taken_at.push(cycle);
        }
        let want = outs < taken_at.len() && taken_at[outs] + 4 == cycle;
        assert_eq!(dut.get_bit("out_valid"), want, "cycle {cycle}: out_valid");
        if want {
            check_one(read_out(&mut dut), &cases[outs], outs as u64, &format!("back to back {outs}"));
            outs += 1;
        }
        dut.tick();
        cycle += 1;
    }
    let span = taken_at[cases.len() - 1] - taken_at[0] + 1;
    assert!(span * 4 <= cases.len() * 5 + 4, "{} requests taken over {span} cycles", cases.len());
    // A stalled output: four requests fill the stages, then in_ready drops; nothing is lost.
    dut.set_bit("out_ready", false);
    let mut taken = 0usize;
    for cycle in 0..10 {
        dut.set_bit("in_valid", true);
        drive(&mut dut, &cases[taken], &garbage, 100 + taken as u64);
        dut.eval();
        if dut.get_bit("in_ready") {
            taken += 1;
        }
        assert_eq!(dut.get_bit("out_valid"), cycle >= 4, "stalled, cycle {cycle}: out_valid");
        dut.tick();
    }
    assert_eq!(taken, 4, "requests held by a stalled pipeline");
    dut.set_bit("in_valid", false);
    dut.set_bit("out_ready", true);
    for k in 0..4 {
        dut.eval();
        assert!(dut.get_bit("out_valid"), "drain {k}");
        check_one(read_out(&mut dut), &cases[k], 100 + k as u64, &format!("drain {k}"));
        dut.tick();
    }
    dut.eval();
    assert!(!dut.get_bit("out_valid"), "drained");
}

#[test]
fn atomic_extension_headers() {
    // Atomics between headers of every other length, so that each `ext_len` follows each
    // other one through the stages (a 28-byte AtomicETH after a 0-byte header, a 12-byte one
    // after a 28-byte one, ...).
    let mut dut = builder();
    let mut rng = Rng::from_env(0xA7_0312);
    let seed = rng.0;
    let others = [0x04u8, 0x11, 0x0A, 0x0B, 0x05];
    let mut cases = Vec::new();
    for i in 0..600 {
        let op = if i % 2 == 0 { *rng.pick(&[0x12u8, 0x13, 0x14]) } else { *rng.pick(&others) };
        let mut r = AnyPacket::random(&mut rng, op);
        if r.atomic().is_none() {
            let plen = rng.range(0, 100) as usize;
            r.set_payload(rng.bytes(plen));
        }
        let want_hlen = match op {
            0x13 | 0x14 => 82,
            0x12 => 66,
            _ => 54 + r.ext_len(),
        };
        assert_eq!(54 + r.ext_len(), want_hlen, "opcode {op:#04x}");
        cases.push((r, format!("atomic mix {i} opcode {op:#04x} (seed {seed:#x})")));
    }
    run(&mut dut, &mut rng, &cases[..300], 100, 100);
    run(&mut dut, &mut rng, &cases[300..], 60, 60);
}
