//! `IcrcInsert` in Verilator against the reference codec's ICRC.
//!
//! - `codec_frames_get_their_icrc`: frames emitted by the codec (every opcode family, payloads
//!   0..=4096 bytes) are fed without their 4 ICRC bytes, with random input gaps, random
//!   `out_ready` back-pressure and garbage past `in_count`; every output frame equals the
//!   codec's frame byte for byte (and parses). Codec frames are 54 + 4k bytes (+2 mod 4), so their
//!   last beats hold 2, 6, ..., 62 bytes, 62 spilling the ICRC into an extra beat.
//! - `every_last_beat_count_1_to_64`: codec headers followed by raw bytes so that the last input
//!   beat holds each of 1..=64 bytes (61..=64 spill the ICRC into an extra beat) several times;
//!   the expected ICRC is `wire::icrc::compute` over the same bytes.
//! - `full_rate_one_bubble_per_spill`: with `out_ready` high the block takes a beat every cycle
//!   but one per frame whose ICRC spills.
//! - `latency_is_four_cycles`: a beat taken in cycle t is on the output register in cycle
//!   t + [`LATENCY`] (4) while `out_ready` is high, and `out_ready` low holds the whole pipeline
//!   (nothing is lost, `in_ready` drops once the output register is full).
mod harness;

use harness::codec::{self, assert_frame_eq};
use harness::{Dut, Port, Rng};
use rnic_firmware_tests::wire::{icrc, RocePacketRepr};
use rnic_hdl::icrc::{IcrcInsert, LATENCY};

struct Pins {
    in_valid: Port,
    in_ready: Port,
    in_data: Port,
    in_count: Port,
    in_last: Port,
    out_valid: Port,
    out_ready: Port,
    out_data: Port,
    out_count: Port,
    out_last: Port,
}

fn dut() -> (Dut, Pins) {
    let mut dut = Dut::build::<IcrcInsert>("icrc_insert").expect("build the ICRC inserter model");
    let p = Pins {
        in_valid: dut.port("in_valid"),
        in_ready: dut.port("in_ready"),
        in_data: dut.port("in_data"),
        in_count: dut.port("in_count"),
        in_last: dut.port("in_last"),
        out_valid: dut.port("out_valid"),
        out_ready: dut.port("out_ready"),
        out_data: dut.port("out_data"),
        out_count: dut.port("out_count"),
        out_last: dut.port("out_last"),
    };
    dut.reset(2);
    (dut, p)
}

/// Streams `frames` (without ICRC) through the block; returns the output frames and cycles.
fn run(dut: &mut Dut, p: &Pins, frames: &[Vec<u8>], rng: &mut Rng, p_valid: u64, p_ready: u64) -> (Vec<Vec<u8>>, u64) {
    // Input beats: (data, count, last).
    let mut beats: Vec<([u8; 64], usize, bool)> = Vec::new();
    for f in frames {
        let n = f.len().div_ceil(64);
        for k in 0..n {
            let part = &f[64 * k..f.len().min(64 * k + 64)];
            let mut data = [0u8; 64];
            data.copy_from_slice(&rng.bytes(64)); // garbage past the count
            data[..part.len()].copy_from_slice(part);
            beats.push((data, part.len(), k + 1 == n));
        }
    }
    let mut next = 0;
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut cycles = 0u64;
    while out.len() < frames.len() {
        cycles += 1;
        assert!(
            cycles < 50 * beats.len() as u64 + 1000,
            "no progress: {next}/{} beats in, {} frames out",
            beats.len(),
            out.len()
        );
        let valid = next < beats.len() && rng.chance(p_valid, 100);
        let ready = rng.chance(p_ready, 100);
        dut.set_bit(p.in_valid, valid);
        if valid {
            let (d, c, l) = &beats[next];
            dut.set_wide(p.in_data, d);
            dut.set(p.in_count, *c as u64);
            dut.set_bit(p.in_last, *l);
        } else {
            dut.set_wide(p.in_data, &rng.bytes(64));
            dut.set(p.in_count, rng.range(1, 64));
            dut.set_bit(p.in_last, rng.chance(1, 2));
        }
        dut.set_bit(p.out_ready, ready);
        dut.eval();
        if valid && dut.get_bit(p.in_ready) {
            next += 1;
        }
        if ready && dut.get_bit(p.out_valid) {
            let n = dut.get(p.out_count) as usize;
            let last = dut.get_bit(p.out_last);
            assert!((1..=64).contains(&n), "out_count {n}");
            assert!(last || n == 64, "a beat without out_last holds {n} bytes");
            cur.extend_from_slice(&dut.get_wide(p.out_data)[..n]);
            if last {
                out.push(std::mem::take(&mut cur));
            }
        }
        dut.tick();
    }
    assert_eq!(next, beats.len(), "frames came out before all input beats were taken");
    dut.set_bit(p.in_valid, false);
    dut.set_bit(p.out_ready, true);
    for _ in 0..3 {
        dut.eval();
        assert!(!dut.get_bit(p.out_valid), "extra output beat");
        dut.tick();
    }
    (out, cycles)
}

fn codec_frames(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    let ops = [0x04u8, 0x06, 0x07, 0x08, 0x0A, 0x0C, 0x10, 0x11, 0x03, 0x0B, 0x24, 0x2A];
    (0..n)
        .map(|_| {
            let op = *rng.pick(&ops);
            let mut r = codec::nic_style_repr(rng, op);
            codec::add_ext_headers(rng, &mut r);
            // Random TOS/TTL/ID too: the ICRC must mask TOS and TTL, not assume the NIC's values.
            r.ipv4.dscp = (rng.u32() & 63) as u8;
            r.ipv4.ecn = (rng.u32() & 3) as u8;
            r.ipv4.ttl = rng.u32() as u8;
            r.ipv4.ident = rng.u32() as u16;
            r.bth.fecn = rng.chance(1, 2);
            r.bth.becn = rng.chance(1, 2);
            let plen = match rng.range(0, 3) {
                0 => rng.range(0, 80) as usize,
                1 => *rng.pick(&[256usize, 1024, 4096]),
                _ => rng.range(0, 4096) as usize,
            };
            r.payload = rng.bytes(plen);
            r.emit()
        })
        .collect()
}

#[test]
fn codec_frames_get_their_icrc() {
    let (mut dut, p) = dut();
    for (round, (pv, pr)) in [(100, 100), (60, 40), (90, 15)].into_iter().enumerate() {
        let mut rng = Rng::from_env(0x1C2C_0000 + round as u64);
        let seed = rng.0;
        let frames = codec_frames(&mut rng, 150);
        let inputs: Vec<Vec<u8>> = frames.iter().map(|f| codec::strip_icrc(f)).collect();
        let (out, cycles) = run(&mut dut, &p, &inputs, &mut rng, pv, pr);
        for (i, (got, want)) in out.iter().zip(&frames).enumerate() {
            assert_frame_eq(got, want, &format!("frame {i} (seed {seed:#x}, valid {pv}%, ready {pr}%)"));
            RocePacketRepr::parse(got).unwrap_or_else(|e| panic!("frame {i}: {e}"));
        }
        eprintln!("icrc_insert: {} frames in {cycles} cycles (valid {pv}%, ready {pr}%)", frames.len());
    }
}

/// A frame of `len` bytes (without ICRC) starting with a codec header, and its ICRC'd form.
fn raw_frame(rng: &mut Rng, len: usize) -> (Vec<u8>, Vec<u8>) {
    let op = *rng.pick(&[0x0Au8, 0x11, 0x04]);
    let mut r = codec::nic_style_repr(rng, op);
    codec::add_ext_headers(rng, &mut r);
    let mut f = codec::strip_icrc(&r.emit());
    f.resize(len, 0);
    let tail = f.len().min(70);
    let fill = rng.bytes(len - tail);
    f[tail..].copy_from_slice(&fill);
    let mut with = f.clone();
    with.extend_from_slice(&[0; 4]);
    icrc::fill(&mut with[14..]).unwrap();
    (f, with)
}

#[test]
fn every_last_beat_count_1_to_64() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0x1C2C_1111);
    let seed = rng.0;
    let mut inputs = Vec::new();
    let mut wants = Vec::new();
    for rep in 0..4 {
        for last in 1..=64usize {
            // 1..=4 full beats before the last one.
            let beats = 1 + (rep + last) % 4;
            let len = 64 * beats + last;
            let (f, w) = raw_frame(&mut rng, len);
            inputs.push(f);
            wants.push(w);
        }
        // Single-beat frames, 54..=64 bytes.
        for len in 54..=64 {
            let (f, w) = raw_frame(&mut rng, len);
            inputs.push(f);
            wants.push(w);
        }
    }
    let (out, _) = run(&mut dut, &p, &inputs, &mut rng, 85, 60);
    assert_eq!(out.len(), wants.len());
    for (i, (got, want)) in out.iter().zip(&wants).enumerate() {
        assert_frame_eq(
            got,
            want,
            &format!(
                "frame {i}: {} bytes, last beat {} (seed {seed:#x})",
                inputs[i].len(),
                (inputs[i].len() - 1) % 64 + 1
            ),
        );
    }
}

#[test]
fn full_rate_one_bubble_per_spill() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0x1C2C_2222);
    let mut inputs = Vec::new();
    let mut spills = 0u64;
    let mut beats = 0u64;
    for i in 0..200 {
        let len = 54 + rng.range(0, 600) as usize + i % 3;
        let (f, _) = raw_frame(&mut rng, len);
        beats += f.len().div_ceil(64) as u64;
        if (f.len() - 1) % 64 + 1 > 60 {
            spills += 1;
        }
        inputs.push(f);
    }
    let (out, cycles) = run(&mut dut, &p, &inputs, &mut rng, 100, 100);
    assert_eq!(out.len(), inputs.len());
    assert!(spills > 5);
    // The last frame's beats leave LATENCY cycles after they enter.
    assert!(cycles <= beats + spills + LATENCY as u64 + 1, "{cycles} cycles for {beats} beats and {spills} spills");
}

#[test]
fn latency_is_four_cycles() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0x1C2C_3333);
    // A 3-beat frame: beats taken in cycles 0, 1, 2 appear in cycles LATENCY, +1, +2.
    let (f, want) = raw_frame(&mut rng, 64 * 2 + 20);
    dut.set_bit(p.out_ready, true);
    let mut seen = Vec::new();
    for cycle in 0..(LATENCY + 6) {
        let k = cycle;
        let valid = k < 3;
        dut.set_bit(p.in_valid, valid);
        if valid {
            let part = &f[64 * k..f.len().min(64 * k + 64)];
            let mut data = rng.bytes(64);
            data[..part.len()].copy_from_slice(part);
            dut.set_wide(p.in_data, &data);
            dut.set(p.in_count, part.len() as u64);
            dut.set_bit(p.in_last, k == 2);
        }
        dut.eval();
        if valid {
            assert!(dut.get_bit(p.in_ready), "cycle {cycle}: not ready with out_ready high");
        }
        if dut.get_bit(p.out_valid) {
            seen.push(cycle);
            let n = dut.get(p.out_count) as usize;
            let beat = dut.get_wide(p.out_data);
            let k = seen.len() - 1;
            assert_eq!(&beat[..n], &want[64 * k..64 * k + n], "beat {k}");
        }
        dut.tick();
    }
    assert_eq!(seen, vec![LATENCY, LATENCY + 1, LATENCY + 2], "cycles of the output beats");

    // Back-pressure: with out_ready low the block fills (the output register and the three
    // stages hold one beat each), then refuses; nothing is lost when out_ready returns.
    let (f, want) = raw_frame(&mut rng, 64 * 7 + 33);
    dut.set_bit(p.out_ready, false);
    let mut taken = 0;
    for _ in 0..10 {
        let k = taken;
        let valid = k < 8;
        dut.set_bit(p.in_valid, valid);
        if valid {
            let part = &f[64 * k..f.len().min(64 * k + 64)];
            let mut data = rng.bytes(64);
            data[..part.len()].copy_from_slice(part);
            dut.set_wide(p.in_data, &data);
            dut.set(p.in_count, part.len() as u64);
            dut.set_bit(p.in_last, k == 7);
        }
        dut.eval();
        if valid && dut.get_bit(p.in_ready) {
            taken += 1;
        }
        dut.tick();
    }
    assert_eq!(taken, LATENCY, "beats taken while out_ready is low");
    let mut out = Vec::new();
    for cycle in 0..40 {
        let k = taken;
        let valid = k < 8;
        let ready = cycle % 3 != 1;
        dut.set_bit(p.in_valid, valid);
        if valid {
            let part = &f[64 * k..f.len().min(64 * k + 64)];
            let mut data = rng.bytes(64);
            data[..part.len()].copy_from_slice(part);
            dut.set_wide(p.in_data, &data);
            dut.set(p.in_count, part.len() as u64);
            dut.set_bit(p.in_last, k == 7);
        }
        dut.set_bit(p.out_ready, ready);
        dut.eval();
        if valid && dut.get_bit(p.in_ready) {
            taken += 1;
        }
        if ready && dut.get_bit(p.out_valid) {
            let n = dut.get(p.out_count) as usize;
            out.extend_from_slice(&dut.get_wide(p.out_data)[..n]);
        }
        dut.tick();
    }
    assert_eq!(taken, 8);
    assert_frame_eq(&out, &want, "frame held back by out_ready");
}
