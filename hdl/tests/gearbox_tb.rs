//! `Gearbox` in Verilator against a byte-stream model.
//!
//! - `random_chunks_repack_into_packets`: thousands of packets of random chunks (skip 0..63,
//!   len 0..64 with `skip + len <= 64`, random valid gaps, random `out_ready` back-pressure):
//!   per packet, the output bytes equal the concatenation of its chunks; every beat but the last
//!   has `out_count` 64 and `out_last` 0; the last has `out_count` 1..=64 and `out_last` 1; no
//!   beat holds bytes of two packets (the per-packet comparison would see them).
//! - `full_rate_without_backpressure`: with `out_ready` held high a chunk is taken every cycle
//!   except while a packet's last beat is draining.
//! - `overlong_chunk_reads_zeros_past_byte_63`: `skip + len > 64` appends `len` bytes, the ones
//!   past byte 63 of `in_data` as zeros.
//! - `latency_and_registered_ready`: a chunk that completes a beat is at the output 4 cycles
//!   after it was taken; `in_ready` does not follow `out_ready` within a cycle (it is a
//!   register); with the output stalled the gearbox holds what it took (skid, input, merge
//!   stages, accumulator, two output beats) and then drops `in_ready`, losing nothing.
mod harness;

use harness::{Dut, Port, Rng};
use rnic_hdl::gearbox::Gearbox;

struct Chunk {
    data: [u8; 64],
    skip: usize,
    len: usize,
    last: bool,
}

impl Chunk {
    /// The bytes this chunk appends: `len` bytes from `skip`, zeros past byte 63.
    fn bytes(&self) -> Vec<u8> {
        (self.skip..self.skip + self.len).map(|i| if i < 64 { self.data[i] } else { 0 }).collect()
    }
}

struct Pins {
    in_valid: Port,
    in_ready: Port,
    in_data: Port,
    in_skip: Port,
    in_len: Port,
    in_last: Port,
    out_valid: Port,
    out_ready: Port,
    out_data: Port,
    out_count: Port,
    out_last: Port,
}

fn dut() -> (Dut, Pins) {
    let mut dut = Dut::build::<Gearbox>("gearbox").expect("build the gearbox model");
    let pins = Pins {
        in_valid: dut.port("in_valid"),
        in_ready: dut.port("in_ready"),
        in_data: dut.port("in_data"),
        in_skip: dut.port("in_skip"),
        in_len: dut.port("in_len"),
        in_last: dut.port("in_last"),
        out_valid: dut.port("out_valid"),
        out_ready: dut.port("out_ready"),
        out_data: dut.port("out_data"),
        out_count: dut.port("out_count"),
        out_last: dut.port("out_last"),
    };
    dut.reset(2);
    (dut, pins)
}

/// A beat as seen at the output.
#[derive(Debug)]
struct Beat {
    bytes: Vec<u8>,
    last: bool,
}

/// Drives `chunks` (a flat list, packets delimited by `last`) and returns the beats seen, with
/// the number of cycles it took. `p_valid` / `p_ready` are percent chances per cycle.
fn drive(
    dut: &mut Dut,
    p: &Pins,
    chunks: &[Chunk],
    rng: &mut Rng,
    p_valid: u64,
    p_ready: u64,
    expect_beats: usize,
) -> (Vec<Beat>, u64, u64) {
    let mut next = 0usize;
    let mut beats = Vec::new();
    let mut cycles = 0u64;
    let mut stalls_not_ready = 0u64;
    let limit = 20 * (chunks.len() as u64 + expect_beats as u64) + 1000;
    while next < chunks.len() || beats.len() < expect_beats {
        cycles += 1;
        assert!(cycles < limit, "no progress: {next}/{} chunks, {} beats", chunks.len(), beats.len());
        let valid = next < chunks.len() && rng.chance(p_valid, 100);
        let ready = rng.chance(p_ready, 100);
        dut.set_bit(p.in_valid, valid);
        if valid {
            let c = &chunks[next];
            dut.set_wide(p.in_data, &c.data);
            dut.set(p.in_skip, c.skip as u64);
            dut.set(p.in_len, c.len as u64);
            dut.set_bit(p.in_last, c.last);
        } else {
            // Garbage on the idle bus must not matter.
            dut.set_wide(p.in_data, &rng.bytes(64));
            dut.set(p.in_skip, rng.range(0, 63));
            dut.set(p.in_len, rng.range(0, 64));
            dut.set_bit(p.in_last, rng.chance(1, 2));
        }
        dut.set_bit(p.out_ready, ready);
        dut.eval();
        if valid {
            if dut.get_bit(p.in_ready) {
                next += 1;
            } else if ready {
                stalls_not_ready += 1;
            }
        }
        if dut.get_bit(p.out_valid) && ready {
            let n = dut.get(p.out_count) as usize;
            let data = dut.get_wide(p.out_data);
            assert!((1..=64).contains(&n), "out_count {n} outside 1..=64 (beat {})", beats.len());
            beats.push(Beat { bytes: data[..n].to_vec(), last: dut.get_bit(p.out_last) });
        }
        dut.tick();
    }
    // Nothing more may come out.
    dut.set_bit(p.in_valid, false);
    dut.set_bit(p.out_ready, true);
    for _ in 0..4 {
        dut.eval();
        assert!(!dut.get_bit(p.out_valid), "extra output beat after the last expected one");
        dut.tick();
    }
    (beats, cycles, stalls_not_ready)
}

/// Splits the beats into packets by `out_last` and checks the per-beat invariants.
fn packets_of(beats: &[Beat]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for (i, b) in beats.iter().enumerate() {
        if !b.last {
            assert_eq!(b.bytes.len(), 64, "beat {i}: a beat without out_last must be full");
        }
        cur.extend_from_slice(&b.bytes);
        if b.last {
            out.push(std::mem::take(&mut cur));
        }
    }
    assert!(cur.is_empty(), "{} bytes after the last out_last", cur.len());
    out
}

fn random_packets(rng: &mut Rng, n: usize, allow_overlong: bool) -> (Vec<Chunk>, Vec<Vec<u8>>) {
    let mut chunks = Vec::new();
    let mut expected = Vec::new();
    for _ in 0..n {
        let nchunks = match rng.range(0, 9) {
            0 => 1,
            1..=6 => rng.range(1, 6) as usize,
            _ => rng.range(7, 80) as usize,
        };
        let mut bytes = Vec::new();
        for k in 0..nchunks {
            let mut data = [0u8; 64];
            data.copy_from_slice(&rng.bytes(64));
            let skip = rng.range(0, 63) as usize;
            let mut len = match rng.range(0, 7) {
                0 => 0,
                1 => 64 - skip,
                2 => 1,
                _ => rng.range(0, (64 - skip) as u64) as usize,
            };
            if allow_overlong && rng.chance(1, 10) {
                len = rng.range(0, 64) as usize;
            }
            let last = k + 1 == nchunks;
            // A packet's last chunk carries at least one byte unless the packet is empty
            // (the zero-length last chunk after a full beat has its own test).
            if last && len == 0 && !bytes.is_empty() {
                len = (1 + rng.range(0, 9) as usize).min(64 - skip);
            }
            let c = Chunk { data, skip, len, last };
            bytes.extend(c.bytes());
            chunks.push(c);
        }
        // An empty packet produces no beat at all.
        if !bytes.is_empty() {
            expected.push(bytes);
        }
    }
    (chunks, expected)
}

fn beats_for(expected: &[Vec<u8>]) -> usize {
    expected.iter().map(|p| p.len().div_ceil(64)).sum()
}

fn check(got: &[Vec<u8>], expected: &[Vec<u8>], seed: u64) {
    assert_eq!(got.len(), expected.len(), "packet count (seed {seed:#x})");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        if g != e {
            let first = g.iter().zip(e).position(|(a, b)| a != b).unwrap_or(g.len().min(e.len()));
            panic!(
                "packet {i}: {} bytes out, {} expected, first difference at byte {first} (seed {seed:#x})",
                g.len(),
                e.len()
            );
        }
    }
}

#[test]
fn random_chunks_repack_into_packets() {
    let (mut dut, p) = dut();
    for (round, (p_valid, p_ready)) in [(100, 100), (70, 50), (95, 20), (30, 90)].into_iter().enumerate() {
        let seed = 0x6EA2_B0C5 + round as u64;
        let mut rng = Rng::from_env(seed);
        let seed = rng.0;
        let (chunks, expected) = random_packets(&mut rng, 400, false);
        let (beats, cycles, _) = drive(&mut dut, &p, &chunks, &mut rng, p_valid, p_ready, beats_for(&expected));
        check(&packets_of(&beats), &expected, seed);
        eprintln!(
            "gearbox: {} chunks, {} packets, {} beats in {cycles} cycles (valid {p_valid}%, ready {p_ready}%)",
            chunks.len(),
            expected.len(),
            beats.len()
        );
    }
}

#[test]
fn overlong_chunk_reads_zeros_past_byte_63() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0x0F1C_0001);
    let seed = rng.0;
    let (chunks, expected) = random_packets(&mut rng, 200, true);
    let (beats, _, _) = drive(&mut dut, &p, &chunks, &mut rng, 80, 80, beats_for(&expected));
    check(&packets_of(&beats), &expected, seed);
}

#[test]
fn full_rate_without_backpressure() {
    // Long packets, out_ready always high, a chunk offered every cycle: the only cycles a
    // chunk waits are those of a packet's drain (the last beat leaving before the next packet).
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0xF011_0000);
    let mut chunks = Vec::new();
    let mut expected = Vec::new();
    let npk = 50;
    for _ in 0..npk {
        let n = rng.range(20, 40) as usize;
        let mut bytes = Vec::new();
        for k in 0..n {
            let mut data = [0u8; 64];
            data.copy_from_slice(&rng.bytes(64));
            let skip = rng.range(0, 63) as usize;
            let len = rng.range(1, (64 - skip) as u64) as usize;
            let c = Chunk { data, skip, len, last: k + 1 == n };
            bytes.extend(c.bytes());
            chunks.push(c);
        }
        expected.push(bytes);
    }
    let (beats, cycles, stalls) = drive(&mut dut, &p, &chunks, &mut rng, 100, 100, beats_for(&expected));
    check(&packets_of(&beats), &expected, 0);
    // Each packet end costs at most 2 cycles of in_ready low (the last beat and its drain).
    assert!(stalls <= 2 * npk as u64, "{stalls} stalled cycles with out_ready high for {npk} packets");
    assert!(cycles <= chunks.len() as u64 + 3 * npk as u64 + 4, "{cycles} cycles for {} chunks", chunks.len());
}

#[test]
fn latency_and_registered_ready() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0x1A7E_0001);
    // One full beat as one last chunk: taken at cycle 0, out at cycle 4.
    let data = rng.bytes(64);
    dut.set_bit(p.out_ready, true);
    dut.set_bit(p.in_valid, true);
    dut.set_wide(p.in_data, &data);
    dut.set(p.in_skip, 0);
    dut.set(p.in_len, 64);
    dut.set_bit(p.in_last, true);
    dut.eval();
    assert!(dut.get_bit(p.in_ready));
    dut.tick();
    dut.set_bit(p.in_valid, false);
    for cycle in 1..8 {
        dut.eval();
        let v = dut.get_bit(p.out_valid);
        assert_eq!(v, cycle == 4, "cycle {cycle}: out_valid");
        if v {
            assert_eq!(dut.get(p.out_count), 64);
            assert!(dut.get_bit(p.out_last));
            assert_eq!(dut.get_wide(p.out_data), data);
        }
        dut.tick();
    }
    // A stalled output: full chunks offered every cycle; in_ready never changes with out_ready
    // inside a cycle, and goes low once the stages are full.
    let chunks: Vec<Vec<u8>> = (0..12).map(|_| rng.bytes(64)).collect();
    let mut taken = 0usize;
    for _ in 0..12 {
        dut.set_bit(p.in_valid, true);
        dut.set_wide(p.in_data, &chunks[taken]);
        dut.set(p.in_len, 64);
        dut.set_bit(p.in_last, false);
        dut.set_bit(p.out_ready, true);
        dut.eval();
        let r1 = dut.get_bit(p.in_ready);
        dut.set_bit(p.out_ready, false);
        dut.eval();
        let r0 = dut.get_bit(p.in_ready);
        assert_eq!(r0, r1, "in_ready follows out_ready");
        if r0 {
            taken += 1;
        }
        dut.tick();
    }
    // Skid, input and merge stages hold one chunk each, the accumulator one beat, the output
    // buffer two beats.
    assert_eq!(taken, 6, "chunks taken with the output stalled");
    dut.set_bit(p.in_valid, false);
    let mut k = 0usize;
    while k < taken {
        dut.set_bit(p.out_ready, true);
        dut.eval();
        if dut.get_bit(p.out_valid) {
            assert_eq!(dut.get(p.out_count), 64);
            assert_eq!(dut.get_wide(p.out_data), chunks[k], "beat {k}");
            k += 1;
        }
        dut.tick();
        assert!(dut.cycles() < 200, "stuck");
    }
}
