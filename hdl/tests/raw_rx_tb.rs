//! `RawRxQueue` in Verilator: the raw receive queue against a model of
//! rnic_contract::regs::raw.
//!
//! - `keeps_non_roce_frames_to_the_port`: a random stream (random gaps, no back-pressure) of
//!   one-beat RoCE-shaped frames (IPv4 UDP 4791), ARP broadcasts, other one-beat frames to the
//!   port's MAC (IPv4 TCP, IPv4 UDP to another port, other EtherTypes), frames to other MACs,
//!   longer non-RoCE frames and frames with a bad FCS, read by a reader that pops at random
//!   times: the queue holds exactly the one-beat non-RoCE frames to the port or broadcast with
//!   a good FCS that found a free slot (8 slots, the fullness as the hardware sees it), in
//!   order, with their lengths (from `tkeep`) and bytes; every other frame for the queue is
//!   counted in `cnt_drop`; `took` pulses once per kept frame, [`LATENCY`] cycles after its
//!   beat; `taken` counts them; a frame not for the queue (RoCE, another MAC) gives neither.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::raw_rx::{RawRxQueue, LATENCY};
use std::collections::VecDeque;

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x07];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Roce,
    Arp,
    Ours,
    OtherMac,
    Long,
    BadFcs,
}

struct Frame {
    kind: Kind,
    bytes: Vec<u8>,
}

fn make(rng: &mut Rng, kind: Kind) -> Frame {
    let len = match kind {
        Kind::Long => rng.range(65, 200) as usize,
        _ => rng.range(14, 65) as usize,
    };
    let mut b = rng.bytes(len.max(40));
    b.truncate(len.max(40));
    let dst: [u8; 6] = match kind {
        Kind::Arp => [0xFF; 6],
        Kind::OtherMac => {
            let mut m = MAC;
            m[5] ^= 1 + (rng.u32() as u8 % 255);
            m
        }
        _ => {
            if rng.chance(1, 4) {
                [0xFF; 6]
            } else {
                MAC
            }
        }
    };
    b[..6].copy_from_slice(&dst);
    match kind {
        Kind::Roce => {
            b[12..14].copy_from_slice(&[0x08, 0x00]);
            b[23] = 17;
            b[36..38].copy_from_slice(&4791u16.to_be_bytes());
        }
        Kind::Arp => b[12..14].copy_from_slice(&[0x08, 0x06]),
        _ => {
            // Anything but a RoCE header: another EtherType, IPv4 TCP, or UDP to another port.
            match rng.range(0, 3) {
                0 => {
                    b[12..14].copy_from_slice(&[0x08, 0x00]);
                    b[23] = 6;
                    b[36..38].copy_from_slice(&4791u16.to_be_bytes());
                }
                1 => {
                    b[12..14].copy_from_slice(&[0x08, 0x00]);
                    b[23] = 17;
                    b[36..38].copy_from_slice(&4792u16.to_be_bytes());
                }
                _ => b[12..14].copy_from_slice(&[0x86, 0xDD]),
            }
        }
    }
    let n = if kind == Kind::Long { len } else { len.clamp(40, 64) };
    b.truncate(n);
    Frame { kind, bytes: b }
}

/// The queue as the hardware sees it.
#[derive(Default)]
struct Model {
    /// Slots written and popped (the occupancy the hardware's room check sees).
    wr: u64,
    rd: u64,
    queue: VecDeque<Vec<u8>>,
    want_took: u64,
    want_drops: u64,
    /// Cycles at which `took` / `cnt_drop` must pulse.
    took_at: VecDeque<u64>,
    drop_at: VecDeque<u64>,
}

/// The decision in cycle `c` on the frame whose first beat came in cycle `c - 1`.
fn decide(q: &mut Model, kind: Kind, bytes: Vec<u8>, c: u64) {
    // A long frame is dropped at its last beat (counted where that beat is sent).
    if matches!(kind, Kind::Roce | Kind::OtherMac | Kind::Long) {
        return;
    }
    if matches!(kind, Kind::Arp | Kind::Ours) && q.wr - q.rd < 8 {
        q.wr += 1;
        q.queue.push_back(bytes);
        q.want_took += 1;
        q.took_at.push_back(c + LATENCY as u64 - 1);
    } else {
        q.want_drops += 1;
        q.drop_at.push_back(c + LATENCY as u64 - 1);
    }
}

#[test]
fn keeps_non_roce_frames_to_the_port() {
    let mut dut = Dut::build::<RawRxQueue>("raw_rx_queue").expect("build RawRxQueue");
    let mut rng = Rng::from_env(0x2A57_0001);
    let seed = rng.0;
    let mac = MAC.iter().enumerate().fold(0u64, |m, (i, b)| m | u64::from(*b) << (8 * i));
    dut.set("mac", mac);
    dut.reset(2);

    let kinds = [Kind::Roce, Kind::Arp, Kind::Ours, Kind::OtherMac, Kind::Long, Kind::BadFcs];
    let mut q = Model::default();
    let (mut got_drops, mut got_took) = (0u64, 0u64);
    // The frame whose first beat entered last cycle, decided this cycle.
    let mut stage: Option<(Kind, Vec<u8>)> = None;
    // Beats to send: data, tkeep, tlast, tuser, and on a first beat its frame.
    type Beat = ([u8; 64], u64, bool, bool, Option<(Kind, Vec<u8>)>, Kind);
    let mut beats: VecDeque<Beat> = VecDeque::new();
    let mut read = 0usize;
    let mut counts = [0usize; 6];
    for round in 0..3usize {
        let (p_in, p_pop) = [(70u64, 40u64), (90, 5), (30, 90)][round];
        for _ in 0..4000 {
            let c = dut.cycles();
            // A new frame when the previous one is all in.
            if beats.is_empty() && rng.chance(p_in, 100) {
                let k = *rng.pick(&kinds);
                let f = make(&mut rng, k);
                counts[kinds.iter().position(|x| *x == k).unwrap()] += 1;
                let nb = f.bytes.len().div_ceil(64);
                for i in 0..nb {
                    let part = &f.bytes[64 * i..f.bytes.len().min(64 * i + 64)];
                    let mut d = [0u8; 64];
                    d[..part.len()].copy_from_slice(part);
                    let keep = if part.len() == 64 { u64::MAX } else { (1u64 << part.len()) - 1 };
                    let last = i + 1 == nb;
                    let first = (i == 0).then(|| (f.kind, f.bytes.clone()));
                    beats.push_back((d, keep, last, last && f.kind == Kind::BadFcs, first, f.kind));
                }
            }
            // The decision on the frame whose first beat came last cycle.
            if let Some((kind, bytes)) = stage.take() {
                decide(&mut q, kind, bytes, c);
            }
            let beat = if rng.chance(4, 5) { beats.pop_front() } else { None };
            dut.set_bit("tvalid", beat.is_some());
            if let Some((d, keep, last, user, first, kind)) = beat {
                if last && kind == Kind::Long {
                    q.want_drops += 1;
                    q.drop_at.push_back(c + LATENCY as u64);
                }
                dut.set_wide("tdata", &d);
                dut.set("tkeep", keep);
                dut.set_bit("tlast", last);
                dut.set_bit("tuser", user);
                stage = first;
            } else {
                dut.set_wide("tdata", &rng.bytes(64));
                dut.set("tkeep", rng.next_u64());
                dut.set_bit("tlast", rng.chance(1, 2));
                dut.set_bit("tuser", rng.chance(1, 2));
            }
            dut.set_bit("pop", false);
            dut.eval();
            let hv = dut.get_bit("head_valid");
            if hv {
                let front = q
                    .queue
                    .front()
                    .unwrap_or_else(|| panic!("cycle {c}: head_valid on an empty queue (seed {seed:#x})"));
                let len = dut.get("head_len") as usize;
                assert_eq!(len, front.len(), "cycle {c}: head length (seed {seed:#x})");
                let data = dut.get_wide("head_data");
                assert_eq!(&data[..len], &front[..], "cycle {c}: head bytes (seed {seed:#x})");
            }
            let pop = hv && rng.chance(p_pop, 100);
            dut.set_bit("pop", pop);
            dut.eval();
            if pop {
                q.queue.pop_front();
                q.rd += 1;
                read += 1;
            }
            if dut.get_bit("took") {
                got_took += 1;
                assert_eq!(q.took_at.pop_front(), Some(c), "cycle {c}: took pulse timing (seed {seed:#x})");
            }
            if dut.get_bit("cnt_drop") {
                got_drops += 1;
                assert_eq!(q.drop_at.pop_front(), Some(c), "cycle {c}: drop pulse timing (seed {seed:#x})");
            }
            dut.tick();
        }
    }
    // Drain (the last frame's decision first).
    for _ in 0..200 {
        if let Some((kind, bytes)) = stage.take() {
            decide(&mut q, kind, bytes, dut.cycles());
        }
        dut.set_bit("tvalid", false);
        dut.eval();
        let hv = dut.get_bit("head_valid");
        dut.set_bit("pop", hv);
        dut.eval();
        if hv {
            q.queue.pop_front();
            read += 1;
        }
        if dut.get_bit("took") {
            got_took += 1;
            q.took_at.pop_front();
        }
        if dut.get_bit("cnt_drop") {
            got_drops += 1;
            q.drop_at.pop_front();
        }
        dut.tick();
    }
    dut.set_bit("pop", false);
    dut.eval();
    assert!(q.queue.is_empty() && !dut.get_bit("head_valid"), "frames left unread (seed {seed:#x})");
    assert_eq!((got_took, got_drops), (q.want_took, q.want_drops), "took / drop pulses (seed {seed:#x})");
    assert_eq!(dut.get("taken"), q.want_took & 0xFFFF, "taken count");
    assert_eq!(read as u64, q.want_took);
    assert!(counts.iter().all(|n| *n > 50), "every kind of frame sent: {counts:?}");
    assert!(q.want_drops > 100 && q.want_took > 300, "drops {}, taken {}", q.want_drops, q.want_took);
}
