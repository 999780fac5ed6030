//! `RxIngress` in Verilator against frames from the reference codec.
//!
//! The block's verdict on a frame (a descriptor, or a drop counter pulse, with `cnt_rx_frame`)
//! comes exactly [`LATENCY`] cycles after the frame's `tlast` beat, while the next frames are
//! already coming in; the testbench streams frames and checks each verdict in the cycle it is
//! due (no pulse may come at any other cycle), reads accepted frames back through the buffer's
//! read port while later frames arrive, and releases their space as the RX engine would.
//!
//! Accepted opcodes are the RC opcodes 0x00..=0x14: SEND FIRST/MIDDLE/LAST/ONLY and LAST/ONLY
//! WITH IMMEDIATE (ImmDt), RDMA WRITE FIRST/ONLY (RETH), MIDDLE/LAST, LAST WITH IMMEDIATE
//! (ImmDt), ONLY WITH IMMEDIATE (RETH + ImmDt), RDMA READ REQUEST (RETH), READ RESPONSE
//! FIRST/LAST/ONLY (AETH) and MIDDLE, ACKNOWLEDGE (AETH), ATOMIC ACKNOWLEDGE (AETH +
//! AtomicAckETH), COMPARE SWAP and FETCH ADD (AtomicETH); the atomics are built and parsed by
//! the codec's `AtomicPacketRepr` (the harness's `AnyPacket` holds either kind). A descriptor's
//! RETH fields are compared only for opcodes with a RETH, its AETH fields only for opcodes
//! with an AETH, `imm` only for the four WITH IMMEDIATE opcodes; for COMPARE SWAP / FETCH ADD
//! `reth_va`, `reth_rkey` (the AtomicETH's VA and R_Key), `at_swap` (Swap/Add Data) and
//! `at_cmp` (Compare Data); for ATOMIC ACKNOWLEDGE the AETH fields and `at_swap` (Original
//! Remote Data). Every other field an opcode does not define is left undefined (`reth_len` of
//! an atomic too).
//!
//! UD SEND ONLY (0x64, 0x65; IBTA Vol 1 9.8, DETH 9.3.3) is accepted too, as the SEND ONLY it
//! resembles with `ud` set (`ud_send_only_frames_become_ud_descriptors`; the codec does not
//! model DETH, so those frames are RC SEND ONLY frames with the DETH in their payload and the
//! opcode and ICRC rewritten). The bench and the model are in `rx_ingress/mod.rs`.
//!
//! - `codec_places_extension_headers` (no Verilator): the reference itself: for each accepted
//!   opcode the codec emits the RETH / AETH / ImmDt IBTA Vol 1 Table 38 lists, in that order
//!   after the BTH, so the ImmDt is at frame bytes 54..58, or 70..74 after a RETH; the
//!   AtomicETH at 54..82 (VA, R_Key, Swap/Add, Compare, big-endian), the ATOMIC ACKNOWLEDGE's
//!   AETH at 54..58 and AtomicAckETH at 58..66.
//! - `valid_frames_become_descriptors`: frames of every accepted opcode (payload 0..=4096,
//!   every pad; none for READ REQUEST, ACKNOWLEDGE and the atomics, a whole MTU for
//!   FIRST/MIDDLE) with random
//!   addresses, TOS/TTL/ID, FECN/BECN (fields the ICRC masks), back to back or with idle cycles,
//!   each produce exactly one descriptor whose fields match the codec's parse (opcode, `hlen` =
//!   54 + 0/4/12/16/20/28, AckReq, plen, dest QP, PSN, RETH, AETH, `imm` = the ImmDt's wire
//!   bytes with the first in bits 7:0, the atomic operands as numbers), whose `start`
//!   continues where the previous frame ended (mod the 1024-beat buffer)
//!   and `nbeats` covers Total Length; reading `nbeats` beats back through
//!   `buf_raddr`/`buf_rdata` gives the frame's bytes; `cnt_rx_frame` pulses once per frame and
//!   no error counter pulses.
//! - `every_opcode_at_beat_edges`: each accepted opcode with payloads 0..=80 and lengths that
//!   end the frame just before, on and after the second and third beat boundaries (an RDMA
//!   WRITE ONLY WITH IMMEDIATE's ImmDt is in the second beat: taken from that beat when it is
//!   the frame's last, from a register when the frame is longer), all descriptors as above.
//! - `atomic_frames_become_descriptors`: ATOMIC ACKNOWLEDGE (70-byte frame, headers end at byte
//!   66) and COMPARE SWAP / FETCH ADD (86 bytes, AtomicETH to byte 82): headers ending in the
//!   second beat, which is also the last one (operands taken from that beat) or, with 1..=70
//!   bytes of Ethernet padding, not (operands kept in a register); operand corners (all ones,
//!   all zeros, single bytes); back to back with other frames or with idle cycles: each
//!   descriptor carries the AtomicETH / AtomicAckETH fields as above.
//! - `only_rc_opcodes_up_to_fetch_add_are_accepted`: all 256 opcodes, each followed by a good
//!   frame: exactly 0x00..=0x14 are accepted; 0x15..=0x1F, UC (with their own extension
//!   headers), UD, CNP and the rest are `cnt_malformed`, and the next frame is unaffected.
//! - `back_to_back_frames_without_reading`: frames on consecutive cycles, nothing released until
//!   all are in; every descriptor and every stored frame is right.
//! - `ethernet_padding_is_ignored`: frames followed by 1..70 bytes of Ethernet padding (padding
//!   beats included) are accepted with the Total Length's beat count, and the next frame starts
//!   right after them in the buffer.
//! - `icrc_errors_are_counted_and_dropped`: one flipped bit anywhere the ICRC covers (payload,
//!   extension headers, BTH, ICRC itself, pad) → `cnt_icrc`, no descriptor, and the buffer
//!   space is reused by the next frame, also when that frame follows on the next cycle (before
//!   the verdict).
//! - `malformed_frames_are_counted_and_dropped`: bad IPv4 checksum, wrong UDP port, truncated
//!   frame (`tlast` before Total Length), `tuser` = 1, not IPv4, unsupported opcode
//!   (0x15..=0x1A: RESYNC, reserved), UDP Length ≠ Total Length − 20, TVer ≠ 0, IPv4
//!   fragment, IPv4 options, not UDP, Total Length past the largest frame → `cnt_malformed`,
//!   no descriptor.
//! - `extension_headers_must_fit_in_the_frame`: a SEND ONLY of `n` bytes relabelled as each
//!   opcode with 4 or 16 bytes of extension headers is accepted (descriptor = the codec's
//!   parse) iff they fit (`n` >= their length), else `cnt_malformed`; relabelled as ATOMIC
//!   ACKNOWLEDGE (12 bytes) or COMPARE SWAP / FETCH ADD (28 bytes) with `n` up to the headers'
//!   length: accepted with `n` = that length, `cnt_malformed` when shorter (including a
//!   SEND's pad that would make up the 28 bytes).
//! - `write_only_with_immediate_headers_must_fit_in_the_frame`: the same for RDMA WRITE ONLY
//!   WITH IMMEDIATE (20 bytes, headers of 64..67 bytes with the pad), including a Total Length
//!   of 64 with PadCnt 1..3.
//! - `overflow_when_buffer_or_descriptor_fifo_full`: with `rd_ptr` held the buffer fills and the
//!   frame that does not fit is counted in `cnt_overflow`; with `desc_full` a good frame is
//!   counted as overflow; once space is released, frames are accepted again.
mod harness;
mod rx_ingress;

use harness::codec::{self, AnyPacket};
use harness::Rng;
use rnic_firmware_tests::wire::RocePacketRepr;
use rx_ingress::*;

#[test]
fn valid_frames_become_descriptors() {
    let mut tb = Tb::new(0x2F1E_0001);
    let seed = tb.rng.0;
    for i in 0..600 {
        tb.p_idle = if i < 300 { 0 } else { 30 };
        let r = good_repr(&mut tb.rng);
        let ctx = format!("frame {i} opcode {:#04x} plen {} (seed {seed:#x})", r.opcode(), r.payload().len());
        send_good(&mut tb, &r, 0, true, &ctx);
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 600);
}

#[test]
fn codec_places_extension_headers() {
    // The reference the descriptors are checked against: for each accepted opcode the codec
    // emits exactly the extension headers IBTA Vol 1 Table 38 lists, in order RETH, AETH, ImmDt
    // right after the BTH, so an ImmDt is at frame bytes 54..58, or 70..74 after a RETH.
    let mut rng = Rng::from_env(0x2F1E_0007);
    for op in ACCEPTED {
        for _ in 0..20 {
            let plen = random_plen(&mut rng, op).min(100);
            let p = good_repr_of(&mut rng, op, plen);
            let ctx = format!("opcode {op:#04x}");
            if let AnyPacket::Atomic(a) = &p {
                let f = p.emit();
                assert_eq!(f[42], op, "{ctx}: opcode");
                assert_eq!(f.len(), 54 + ext_len_of(op) + 4, "{ctx}: frame length");
                if let Some(e) = &a.atomic_eth {
                    assert!(HAS_ATOMIC_ETH.contains(&op), "{ctx}: AtomicETH");
                    assert_eq!(&f[54..62], &e.virt_addr.to_be_bytes(), "{ctx}: AtomicETH VA");
                    assert_eq!(&f[62..66], &e.rkey.to_be_bytes(), "{ctx}: AtomicETH R_Key");
                    assert_eq!(&f[66..74], &e.swap_add.to_be_bytes(), "{ctx}: AtomicETH Swap/Add");
                    assert_eq!(&f[74..82], &e.compare.to_be_bytes(), "{ctx}: AtomicETH Compare");
                }
                if let (Some(x), Some(o)) = (&a.aeth, &a.atomic_ack_eth) {
                    assert_eq!(op, ATOMIC_ACK, "{ctx}: AETH + AtomicAckETH");
                    assert_eq!(f[54], x.syndrome, "{ctx}: AETH syndrome");
                    assert_eq!(&f[58..66], &o.orig_data.to_be_bytes(), "{ctx}: AtomicAckETH");
                }
                assert_eq!(AnyPacket::parse(&f), Ok(p.filled()), "{ctx}: round trip");
                continue;
            }
            let r = p.roce().unwrap();
            assert_eq!(r.reth.is_some(), HAS_RETH.contains(&op), "{ctx}: RETH");
            assert_eq!(r.aeth.is_some(), HAS_AETH.contains(&op), "{ctx}: AETH");
            assert_eq!(r.immdt.is_some(), HAS_IMM.contains(&op), "{ctx}: ImmDt");
            let f = r.emit();
            let ext = codec::ext_wire_bytes(r);
            assert_eq!(&f[54..54 + ext.len()], &ext[..], "{ctx}: extension header bytes");
            assert_eq!(&f[54 + ext.len()..54 + ext.len() + plen], &r.payload[..], "{ctx}: payload");
            if let Some(i) = &r.immdt {
                let at = if op == WRITE_ONLY_IMM { 70 } else { 54 };
                let wire = u64::from(u32::from_le_bytes(f[at..at + 4].try_into().unwrap()));
                assert_eq!(wire, codec::imm_bits(i), "{ctx}: ImmDt at byte {at}");
            }
            if let Some(reth) = &r.reth {
                assert_eq!(&f[54..62], &reth.virt_addr.to_be_bytes(), "{ctx}: RETH VA");
            }
            if let Some(a) = &r.aeth {
                assert_eq!(f[54], a.syndrome, "{ctx}: AETH syndrome");
            }
            assert_eq!(
                RocePacketRepr::parse(&f).as_ref(),
                Ok(&{
                    let mut x = r.clone();
                    x.fill_lengths();
                    x
                }),
                "{ctx}: round trip"
            );
        }
    }
}

#[test]
fn every_opcode_at_beat_edges() {
    // Each accepted opcode with payloads that put the frame's end on every side of the beat
    // boundaries (the ImmDt of a WRITE ONLY with immediate sits in the second beat: read from
    // the last beat itself for frames of two beats, from a register for longer ones).
    let mut tb = Tb::new(0x2F1E_0008);
    let seed = tb.rng.0;
    let mut n = 0;
    for (k, op) in ACCEPTED.into_iter().enumerate() {
        tb.p_idle = if k % 2 == 0 { 0 } else { 30 };
        let plens: Vec<usize> = if matches!(op, ACK | READ_REQUEST | ATOMIC_ACK | CMP_SWAP | FETCH_ADD) {
            vec![0; 8]
        } else {
            (0..=80).chain([100, 125, 126, 127, 128, 129, 130, 190, 191, 192, 193, 4093, 4096]).collect()
        };
        for plen in plens {
            let r = good_repr_of(&mut tb.rng, op, plen);
            let ctx = format!("opcode {op:#04x} plen {plen} frame {} bytes (seed {seed:#x})", r.buffer_len());
            send_good(&mut tb, &r, 0, true, &ctx);
            n += 1;
        }
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), n);
    for op in ACCEPTED {
        assert!(tb.accepted.iter().any(|d| d.opcode == u64::from(op)), "no descriptor for {op:#04x}");
    }
}

#[test]
fn only_rc_opcodes_up_to_fetch_add_are_accepted() {
    // All 256 opcodes, each followed by a good frame: 0x00..=0x14 and UD SEND ONLY (0x64,
    // 0x65) become descriptors, every other (RESYNC, reserved, UC, the other UD opcodes, CNP,
    // manufacturer-specific) is malformed.
    let mut tb = Tb::new(0x2F1E_0009);
    let seed = tb.rng.0;
    for op in 0..=255u8 {
        tb.p_idle = if op % 3 == 0 { 20 } else { 0 };
        let ctx = format!("opcode {op:#04x} (seed {seed:#x})");
        if ACCEPTED.contains(&op) {
            let plen = random_plen(&mut tb.rng, op);
            let r = good_repr_of(&mut tb.rng, op, plen);
            send_good(&mut tb, &r, 0, true, &ctx);
        } else if op == 0x64 || op == 0x65 {
            let plen = tb.rng.range(0, 300) as usize;
            send_ud(&mut tb, op, plen, &ctx);
        } else {
            let f = unsupported_frame(&mut tb.rng, op);
            send_bad(&mut tb, &f, false, "malformed", &ctx);
        }
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after {ctx}"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 256 + ACCEPTED.len() + 2);
    assert_eq!(tb.verdicts, 512);
}

/// UD SEND ONLY frames, with and without ImmDt (whose bytes 62..66 straddle the first beat's
/// end), payloads 0..=80 and around the beat edges up to 4096, back to back with RC frames:
/// each a `ud` descriptor of the SEND ONLY it resembles, its DETH and ImmDt in place, its
/// bytes read back from the buffer.
#[test]
fn ud_send_only_frames_become_ud_descriptors() {
    let mut tb = Tb::new(0x0D_1001);
    let seed = tb.rng.0;
    for op in [0x64u8, 0x65] {
        for plen in (0..=80).chain([120, 127, 128, 129, 1000, 4093, 4096]) {
            let ctx = format!("opcode {op:#04x} plen {plen} (seed {seed:#x})");
            tb.p_idle = if plen % 5 == 0 { 7 } else { 0 };
            send_ud(&mut tb, op, plen, &ctx);
            if plen % 7 == 0 {
                let r = good_repr(&mut tb.rng);
                send_good(&mut tb, &r, 0, true, &format!("RC frame after {ctx}"));
            }
        }
    }
    tb.flush();
}

#[test]
fn back_to_back_frames_without_reading() {
    // Frames arrive on consecutive cycles while the engine releases nothing until they are
    // all in: all fit (< BEATS beats) and each descriptor is right.
    let mut tb = Tb::new(0x2F1E_0002);
    let mut frames = Vec::new();
    let mut total = 0;
    loop {
        let r = good_repr(&mut tb.rng);
        let nb = r.buffer_len().div_ceil(64);
        if total + nb > BEATS as usize {
            break;
        }
        total += nb;
        frames.push(r);
    }
    for (i, r) in frames.iter().enumerate() {
        send_good(&mut tb, r, 0, false, &format!("frame {i} of {}, {total} beats in all", frames.len()));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), frames.len());
    // Read everything back once more, late.
    let descs = tb.accepted.clone();
    for (i, (r, d)) in frames.iter().zip(&descs).enumerate() {
        tb.reads.push_back(ReadJob {
            start: d.start,
            nbeats: d.nbeats,
            next: 0,
            data: Vec::new(),
            frame: r.emit(),
            release: true,
            ctx: format!("frame {i} read back late"),
        });
    }
    tb.flush();
    assert_eq!(tb.rd_ptr, total as u64);
}

#[test]
fn ethernet_padding_is_ignored() {
    let mut tb = Tb::new(0x2F1E_0003);
    for i in 0..200 {
        tb.p_idle = if i % 4 == 3 { 20 } else { 0 };
        let mut r = good_repr(&mut tb.rng);
        if i % 2 == 0 {
            // Short frames: an ACK (62 bytes) or an ATOMIC ACKNOWLEDGE (70), padded.
            let op = *tb.rng.pick(&[ACK, ATOMIC_ACK]);
            r = AnyPacket::random(&mut tb.rng, op);
        }
        let pad = tb.rng.range(1, 70) as usize;
        send_good(&mut tb, &r, pad, true, &format!("frame {i} with {pad} bytes of padding"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 200);
}

#[test]
fn icrc_errors_are_counted_and_dropped() {
    let mut tb = Tb::new(0x2F1E_0004);
    for i in 0..300 {
        // Half the time the next frame follows on the next cycle, before the verdict.
        tb.p_idle = if i % 2 == 0 { 0 } else { 25 };
        let r = good_repr(&mut tb.rng);
        let mut f = r.emit();
        // A byte the ICRC covers and no other check reads: payload, pad, ICRC, RETH, AETH,
        // BTH P_Key / dest QP / PSN / AckReq byte, IPv4 addresses.
        let region = tb.rng.range(0, 5);
        let pos = match region {
            0 if f.len() > 58 + 16 && !r.payload().is_empty() => {
                tb.rng.range(54 + r.ext_len() as u64, f.len() as u64 - 5) as usize
            }
            1 => f.len() - 1 - tb.rng.range(0, 3) as usize,
            2 => *tb.rng.pick(&[44usize, 45, 47, 48, 49, 50, 51, 52, 53]),
            3 if r.ext_len() > 0 => 54 + tb.rng.range(0, r.ext_len() as u64 - 1) as usize,
            _ => 34 + tb.rng.range(0, 1) as usize, // UDP source port
        };
        let bit = tb.rng.range(0, 7);
        f[pos] ^= 1 << bit;
        send_bad(&mut tb, &f, false, "icrc", &format!("frame {i}: bit {bit} of byte {pos} flipped"));
        // The dropped frame's space is reused by the next good frame (checked by `next_start`).
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after bad frame {i}"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 300);
    assert_eq!(tb.verdicts, 600);
}

#[test]
fn malformed_frames_are_counted_and_dropped() {
    let mut tb = Tb::new(0x2F1E_0005);
    for i in 0..400 {
        tb.p_idle = if i % 3 == 0 { 20 } else { 0 };
        let r = good_repr(&mut tb.rng);
        let mut f = r.emit();
        let case = i % 12;
        let mut tuser = false;
        let what = match case {
            0 => {
                f[24 + tb.rng.range(0, 1) as usize] ^= 1 << tb.rng.range(0, 7);
                "bad IPv4 checksum"
            }
            1 => {
                let port = loop {
                    let p = tb.rng.u32() as u16;
                    if p != 4791 {
                        break p;
                    }
                };
                f[36..38].copy_from_slice(&port.to_be_bytes());
                refill_icrc(&mut f);
                "wrong UDP destination port"
            }
            2 => {
                let cut = tb.rng.range(1, (f.len() - 54).min(70) as u64) as usize;
                f.truncate(f.len() - cut);
                "truncated frame"
            }
            3 => {
                tuser = true;
                "tuser (bad FCS)"
            }
            4 => {
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                "EtherType not IPv4"
            }
            5 => {
                // A well-formed RoCE frame with an opcode the NIC does not implement: RESYNC
                // or a reserved one right after the atomics.
                let op = *tb.rng.pick(&[0x15u8, 0x16, 0x17, 0x18, 0x19, 0x1A]);
                f = unsupported_frame(&mut tb.rng, op);
                "unsupported opcode"
            }
            6 => {
                let l = u16::from_be_bytes([f[38], f[39]]) + 4;
                f[38..40].copy_from_slice(&l.to_be_bytes());
                refill_icrc(&mut f);
                "UDP Length != Total Length - 20"
            }
            7 => {
                f[43] |= 1 + tb.rng.range(0, 14) as u8;
                refill_icrc(&mut f);
                "BTH TVer != 0"
            }
            8 => {
                f[20] |= 0x20; // More Fragments
                fix_ip_checksum(&mut f);
                refill_icrc(&mut f);
                "IPv4 fragment"
            }
            9 => {
                f[14] = 0x46; // IHL 6: options
                fix_ip_checksum(&mut f);
                refill_icrc(&mut f);
                "IPv4 header with options"
            }
            10 => {
                f[23] = 6; // TCP
                fix_ip_checksum(&mut f);
                "not UDP"
            }
            _ => {
                // Total Length past the largest frame (here: one more than the frame has,
                // which also makes it truncated), or wrapping the 16-bit end of frame.
                let l = *tb.rng.pick(&[5107u16, 5200, 65_522, 65_535]);
                f[16..18].copy_from_slice(&l.to_be_bytes());
                f[38..40].copy_from_slice(&(l.wrapping_sub(20)).to_be_bytes());
                fix_ip_checksum(&mut f);
                "IPv4 Total Length too large"
            }
        };
        send_bad(&mut tb, &f, tuser, "malformed", &format!("frame {i}: {what}"));
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after malformed frame {i} ({what})"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 400);
}

#[test]
fn extension_headers_must_fit_in_the_frame() {
    let mut tb = Tb::new(0x2F1E_000A);
    let seed = tb.rng.0;
    let (mut good, mut bad) = (0, 0);
    for (k, op) in ACCEPTED.into_iter().enumerate() {
        let ext = ext_len_of(op);
        if ext == 0 || op == WRITE_ONLY_IMM {
            continue;
        }
        tb.p_idle = if k % 2 == 0 { 0 } else { 25 };
        let (g, b) = relabel_sweep(&mut tb, op, &format!("seed {seed:#x}"));
        good += g;
        bad += b;
    }
    tb.flush();
    // Seven opcodes with 4 extension bytes, three with 16 (`n` up to 8 past them); the
    // atomics (12, 28, 28 bytes) only with `n` = their length.
    assert_eq!((good, bad), (10 * 9 + 3, 7 * 4 + 3 * 16 + 12 + 28 + 28), "(accepted, malformed)");
}

/// RDMA WRITE ONLY WITH IMMEDIATE is the one opcode whose headers (44 + 20 + PadCnt bytes
/// after the Ethernet header) can reach 64 bytes or more: a frame whose RETH + ImmDt run past
/// Total Length (Total Length 44..60, or 64 with PadCnt 1..3) must be malformed, not accepted
/// with a wrapped `plen` (a 6-bit header-length compare got this wrong).
#[test]
fn write_only_with_immediate_headers_must_fit_in_the_frame() {
    let mut tb = Tb::new(0x2F1E_000B);
    let seed = tb.rng.0;
    let (good, bad) = relabel_sweep(&mut tb, WRITE_ONLY_IMM, &format!("seed {seed:#x}"));
    tb.flush();
    assert_eq!((good, bad), (9, 20), "(accepted, malformed)");
}

#[test]
fn overflow_when_buffer_or_descriptor_fifo_full() {
    let mut tb = Tb::new(0x2F1E_0006);
    for round in 0..6 {
        // Fill the buffer without releasing, frames back to back.
        let mut held = 0u64;
        loop {
            let r = good_repr(&mut tb.rng);
            let nb = r.buffer_len().div_ceil(64) as u64;
            if held + nb > BEATS {
                send_bad(&mut tb, &r.emit(), false, "overflow", &format!("round {round}: {nb} beats with {held} held"));
                // One-beat frames fill what is left, back to back; the next one overflows.
                loop {
                    let small = AnyPacket::random(&mut tb.rng, ACK);
                    let ctx = format!("round {round}: an ACK with {held} held");
                    if held == BEATS {
                        send_bad(&mut tb, &small.emit(), false, "overflow", &ctx);
                        break;
                    }
                    send_good(&mut tb, &small, 0, false, &ctx);
                    held += 1;
                }
                break;
            }
            send_good(&mut tb, &r, 0, false, &format!("round {round}: filling, {held} held"));
            held += nb;
        }
        tb.flush();
        // The descriptor FIFO full: a good frame that fits is an overflow too.
        tb.release(held);
        let r = good_repr(&mut tb.rng);
        tb.dut.set_bit(tb.p.desc_full, true);
        send_bad(&mut tb, &r.emit(), false, "overflow", &format!("round {round}: desc_full"));
        tb.flush();
        tb.dut.set_bit(tb.p.desc_full, false);
        // And once space is back, frames pass again.
        send_good(&mut tb, &r, 0, true, &format!("round {round}: after release"));
        tb.flush();
    }
}

#[test]
fn atomic_frames_become_descriptors() {
    // The atomics' headers end in the second beat (byte 66 or 82): operands from the last beat
    // itself, or (with Ethernet padding making a third beat) from a register.
    let mut tb = Tb::new(0x2F1E_000C);
    let seed = tb.rng.0;
    let mut n = 0;
    for i in 0..600 {
        tb.p_idle = if i % 4 < 2 { 0 } else { 30 };
        let op = *tb.rng.pick(&[ATOMIC_ACK, CMP_SWAP, FETCH_ADD]);
        let mut r = good_repr_of(&mut tb.rng, op, 0);
        if let AnyPacket::Atomic(a) = &mut r {
            let corner = match i % 9 {
                0 => Some(u64::MAX),
                1 => Some(0),
                2 => Some(0xA5u64 << (8 * (i / 9 % 8))),
                _ => None,
            };
            if let Some(v) = corner {
                if let Some(e) = a.atomic_eth.as_mut() {
                    e.swap_add = v;
                    e.compare = !v;
                    e.virt_addr = v & !7;
                }
                if let Some(o) = a.atomic_ack_eth.as_mut() {
                    o.orig_data = v;
                }
            }
        }
        let eth_pad = if i % 3 == 0 { tb.rng.range(1, 70) as usize } else { 0 };
        let ctx = format!("atomic {i} opcode {op:#04x} with {eth_pad} bytes of padding (seed {seed:#x})");
        send_good(&mut tb, &r, eth_pad, true, &ctx);
        n += 1;
        if i % 2 == 1 {
            let g = good_repr(&mut tb.rng);
            send_good(&mut tb, &g, 0, true, &format!("good frame after {ctx}"));
            n += 1;
        }
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), n);
    for op in [ATOMIC_ACK, CMP_SWAP, FETCH_ADD] {
        assert!(tb.accepted.iter().any(|d| d.opcode == u64::from(op) && d.hlen == 54 + ext_len_of(op) as u64));
    }
}
