//! `AckCoalescer` in Verilator: what leaves for the ACK FIFO, checked against what arrived.
//!
//! Every arriving ACK carries a unique PSN (its arrival number), so each sent ACK names the
//! arrival it is. The properties (IBTA Vol 1 9.7.5.1.1: ACKs are cumulative, so a plain ACK
//! may stand for the plain ACKs of its QP before it):
//! - ACKs leave in arrival order, and only when the ACK FIFO has room;
//! - an arrival that never leaves was replaced by the very next arrival, a plain ACK (AETH
//!   syndrome type 0) to the same peer QP (destination QPN and IP); a NAK or RNR NAK always
//!   leaves, and so does every arrival followed by one of another peer;
//! - one sent ACK replaces at most `ACK_COALESCE_MAX` others, and nothing waits more than
//!   `ACK_HOLD_CYCLES` + 2 cycles (plus the cycles the FIFO was full) for the ACK that covers
//!   it;
//! - with nothing held and `more` low, an arrival leaves in the next cycle (from the input
//!   register); a held ACK leaves once `more` is seen low (a cycle late); a NAK and a `prompt`
//!   ACK (a SEND's) leave within two cycles (plus the FIFO's full cycles); an arrival that
//!   must go to a full FIFO waits in the input register and `full` stays high;
//! - `cnt_tx_ack` / `cnt_tx_nak` pulse once per ACK / NAK sent, and `holding` is high exactly
//!   while an arrival is neither sent nor replaced.
//!
//! - `random_traffic_keeps_order_and_covers_everything`: 20 000 cycles of random arrivals over
//!   3 peer QPs (two with the same QPN at different IPs), 1 in 8 a NAK or RNR NAK, 1 in 6
//!   prompt, `more` and the FIFO's `full` at random.
//! - `a_lone_ack_passes_in_the_next_cycle` and `a_run_of_one_qp_sends_one_ack_per_16`: the
//!   latencies and the two bounds, directed.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::ack_coalescer::{AckCoalescer, ACK_COALESCE_MAX, ACK_HOLD_CYCLES};
use rnic_hdl::records::AckJob;
use rust_hdl::prelude::*;

/// Peer QPs the traffic goes to: (destination QPN, destination IP).
const PEERS: [(u64, u64); 3] = [(0x11, 0xC000_0202), (0x11, 0xC000_0203), (0x4_2222, 0xC000_0202)];

#[derive(Clone, Copy, Debug)]
struct Arrival {
    peer: usize,
    syndrome: u64,
    prompt: bool,
    cycle: u64,
}

impl Arrival {
    fn plain(&self) -> bool {
        self.syndrome >> 5 == 0
    }
}

struct Tb {
    dut: Dut,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<AckCoalescer>("ack_coalescer").expect("build AckCoalescer");
        dut.set_bit("in_write", false);
        dut.set_bit("more", false);
        dut.set_bit("out_full", false);
        dut.reset(2);
        Tb { dut }
    }

    /// One cycle: inputs (the arrival is handed over only if `full` is low, as the RX writer
    /// does), then what left (the arrival number carried in the PSN), then the clock edge.
    fn cycle(&mut self, arrival: Option<(u64, &Arrival)>, more: bool, full: bool) -> Cycle {
        let d = &mut self.dut;
        d.set_bit("more", more);
        d.set_bit("out_full", full);
        d.set_bit("in_write", false);
        d.eval();
        let arrival = arrival.filter(|_| !d.get_bit("full"));
        d.set_bit("in_write", arrival.is_some());
        if let Some((n, a)) = arrival {
            let job = AckJob {
                dest_mac: 0x02_0000_0000_02_u64.to_bits(),
                dest_ip: PEERS[a.peer].1.to_bits(),
                udp_sport: 0xC000_u64.to_bits(),
                pkey: 0xFFFF_u64.to_bits(),
                dest_qpn: PEERS[a.peer].0.to_bits(),
                psn: n.to_bits(),
                syndrome: a.syndrome.to_bits(),
                msn: n.to_bits(),
                prompt: u64::from(a.prompt).to_bits(),
                rsvd: 0_u64.to_bits(),
            };
            let bits: Bits<256> = job.into();
            d.set_bits("in_ack", bits);
        }
        d.eval();
        let sent = d.get_bit("out_write").then(|| {
            let job: AckJob = d.get_bits::<256>("out_ack").into();
            (job.psn.index() as u64, job.syndrome.index() as u64)
        });
        let out = Cycle {
            taken: arrival.is_some(),
            sent,
            ack: d.get_bit("cnt_tx_ack"),
            nak: d.get_bit("cnt_tx_nak"),
            holding: d.get_bit("holding"),
        };
        d.tick();
        out
    }
}

/// What one cycle did.
struct Cycle {
    taken: bool,
    sent: Option<(u64, u64)>,
    ack: bool,
    nak: bool,
    holding: bool,
}

fn syndrome(rng: &mut Rng) -> u64 {
    match rng.range(0, 15) {
        0 => 0x60 | rng.range(0, 3),  // NAK: sequence error .. remote operational error
        1 => 0x20 | rng.range(0, 31), // RNR NAK with its timer
        2 => rng.range(0, 30),        // ACK with a credit count
        _ => 0x1F,                    // ACK, unlimited credits
    }
}

#[test]
fn random_traffic_keeps_order_and_covers_everything() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC0C_0001);
    let mut arrivals: Vec<Arrival> = Vec::new();
    let mut sent: Vec<(u64, u64)> = Vec::new(); // (arrival number, cycle)
    let mut full_cycles: Vec<u64> = Vec::new();
    let (mut acks, mut naks) = (0u64, 0u64);
    let total = 20_000u64;
    let mut cycle = 0u64;
    let mut want: Option<Arrival> = None;
    let mut last_sent: Option<u64> = None;
    // Bursty: phases of dense single-peer traffic, mixed traffic and quiet.
    while cycle < total + 200 {
        let phase = (cycle / 500) % 4;
        let live = cycle < total;
        let full = live && rng.chance(1, 10);
        let more = live && phase != 3 && rng.chance(4, 5);
        if want.is_none() && live && phase != 3 && rng.chance(if phase == 0 { 2 } else { 1 }, 3) {
            want = Some(Arrival {
                peer: if phase == 0 { 0 } else { rng.range(0, 2) as usize },
                syndrome: syndrome(&mut rng),
                prompt: rng.chance(1, 6),
                cycle,
            });
        }
        let n = arrivals.len() as u64;
        // Held: the latest arrival before this cycle, unless it has left.
        let held_model = n > 0 && sent.last().map(|s| s.0) != Some(n - 1);
        let c = tb.cycle(want.as_ref().map(|a| (n, a)), more, full);
        assert_eq!(c.holding, held_model, "cycle {cycle}: holding");
        if c.taken {
            let mut a = want.take().unwrap();
            a.cycle = cycle;
            arrivals.push(a);
        }
        if full {
            full_cycles.push(cycle);
            assert!(c.sent.is_none(), "cycle {cycle}: an ACK written into a full FIFO");
        }
        // The counters pulse a cycle after the ACK they count.
        let expect = last_sent.map_or((false, false), |syn: u64| (syn == 0x1F, syn != 0x1F));
        assert_eq!((c.ack, c.nak), expect, "cycle {cycle}: counters");
        last_sent = c.sent.map(|s| s.1);
        if let Some((psn, syn)) = c.sent {
            let arr = &arrivals[psn as usize];
            assert_eq!(syn, arr.syndrome, "cycle {cycle}: ACK {psn} left with another syndrome");
            sent.push((psn, cycle));
        }
        cycle += 1;
    }
    // Order, and each arrival sent or replaced by the next arrival, which is sent or replaced
    // in turn.
    let sent_set: std::collections::BTreeMap<u64, u64> = sent.iter().copied().collect();
    for w in sent.windows(2) {
        assert!(w[0].0 < w[1].0, "ACK {} left after ACK {}", w[1].0, w[0].0);
    }
    let mut run = 0u64;
    let mut replaced = 0u64;
    for (i, a) in arrivals.iter().enumerate() {
        if sent_set.contains_key(&(i as u64)) {
            run = 0;
            acks += u64::from(a.syndrome == 0x1F);
            naks += u64::from(a.syndrome != 0x1F);
            let left = sent_set[&(i as u64)];
            let stalled = full_cycles.iter().filter(|&&c| c >= a.cycle && c <= left).count() as u64;
            if a.prompt || !a.plain() {
                assert!(left - a.cycle <= 2 + stalled, "arrival {i} ({a:?}) held until cycle {left}");
            }
            continue;
        }
        replaced += 1;
        let next = arrivals.get(i + 1).unwrap_or_else(|| panic!("arrival {i} ({a:?}) never left"));
        assert!(a.plain(), "NAK {i} ({a:?}) was dropped");
        assert!(next.plain() && next.peer == a.peer, "arrival {i} ({a:?}) dropped for {next:?}");
        run += 1;
        assert!(run <= ACK_COALESCE_MAX, "arrival {i}: {run} ACKs replaced by one");
        // The ACK that covers it leaves within the hold time (plus the FIFO's full cycles).
        let cover = (i + 1..arrivals.len()).find(|j| sent_set.contains_key(&(*j as u64))).expect("covered");
        let left = sent_set[&(cover as u64)];
        let stalled = full_cycles.iter().filter(|&&c| c >= a.cycle && c <= left).count() as u64;
        let bound = if a.prompt { 2 } else { ACK_HOLD_CYCLES + 2 };
        assert!(left - a.cycle <= bound + stalled, "arrival {i} ({a:?}) covered only at cycle {left}");
    }
    assert!(
        replaced > 1000 && acks > 1000 && naks > 100,
        "the traffic exercised little: {replaced} replaced, {acks} ACKs, {naks} NAKs sent"
    );
}

#[test]
fn a_lone_ack_passes_in_the_next_cycle() {
    let mut tb = Tb::new();
    let a = Arrival { peer: 1, syndrome: 0x1F, prompt: false, cycle: 0 };
    for n in 0..5 {
        let c = tb.cycle(Some((n, &a)), false, false);
        assert!(c.taken && c.sent.is_none());
        let c = tb.cycle(None, false, false);
        assert_eq!(c.sent, Some((n, 0x1F)), "ACK {n} with nothing behind it leaves from the input register");
        let c = tb.cycle(None, false, false);
        assert!(c.ack && !c.nak && c.sent.is_none(), "tx_acks counts it a cycle later");
        for _ in 0..2 {
            assert_eq!(tb.cycle(None, false, false).sent, None);
        }
    }
    // Held while more is high, out once more is seen low (a cycle late).
    assert!(tb.cycle(Some((9, &a)), true, false).taken);
    for _ in 0..3 {
        let c = tb.cycle(None, true, false);
        assert!(c.sent.is_none() && c.holding);
    }
    assert_eq!(tb.cycle(None, false, false).sent, None, "more is seen a cycle late");
    assert_eq!(tb.cycle(None, false, false).sent, Some((9, 0x1F)));
    assert!(!tb.cycle(None, false, false).holding, "nothing held after it left");
    // A NAK is never held.
    let nak = Arrival { peer: 1, syndrome: 0x60, prompt: false, cycle: 0 };
    assert!(tb.cycle(Some((10, &nak)), true, false).taken);
    assert_eq!(tb.cycle(None, true, false).sent, Some((10, 0x60)));
    // Nor is a prompt ACK, also when it replaces a held one.
    let prompt = Arrival { prompt: true, ..a };
    assert!(tb.cycle(Some((11, &prompt)), true, false).taken);
    assert_eq!(tb.cycle(None, true, false).sent, Some((11, 0x1F)));
    assert!(tb.cycle(Some((12, &a)), true, false).taken);
    let c = tb.cycle(Some((13, &prompt)), true, false);
    assert!(!c.taken && c.sent.is_none(), "12 held; 13 waits while the input register is taken");
    assert!(tb.cycle(Some((13, &prompt)), true, false).taken);
    assert_eq!(tb.cycle(None, true, false).sent, Some((13, 0x1F)), "ACK 12 replaced, 13 sent");
    assert!(!tb.cycle(None, true, false).holding, "nothing held");
    // An arrival that must go to a full FIFO waits in the input register (and blocks the next).
    assert!(tb.cycle(Some((14, &nak)), true, false).taken);
    for _ in 0..3 {
        let c = tb.cycle(Some((15, &a)), true, true);
        assert!(!c.taken && c.sent.is_none() && c.holding);
    }
    assert_eq!(tb.cycle(None, true, false).sent, Some((14, 0x60)));
    // `full` is the FIFO's a cycle late: an ACK handed over as the FIFO fills waits too.
    assert!(tb.cycle(Some((16, &nak)), true, true).taken, "the FIFO was not full in the last cycle");
    let c = tb.cycle(None, true, true);
    assert!(c.sent.is_none() && c.holding, "it waits for room");
    assert_eq!(tb.cycle(None, true, false).sent, Some((16, 0x60)));
}

#[test]
fn a_run_of_one_qp_sends_one_ack_per_16() {
    let mut tb = Tb::new();
    let a = Arrival { peer: 2, syndrome: 0x1F, prompt: false, cycle: 0 };
    let mut sent = Vec::new();
    let mut n = 0u64;
    while n < 64 {
        let c = tb.cycle(Some((n, &a)), true, false);
        n += u64::from(c.taken);
        sent.extend(c.sent.map(|s| s.0));
    }
    for _ in 0..3 {
        sent.extend(tb.cycle(None, false, false).sent.map(|s| s.0));
    }
    // Each sent ACK replaced the 15 before it; the last arrives behind the 16th and is sent
    // when nothing more comes.
    assert_eq!(sent, vec![15, 31, 47, 63], "one ACK per {} of one QP", ACK_COALESCE_MAX + 1);
    // Arrivals spaced out beyond the hold time each leave on their own.
    let mut sent = Vec::new();
    for n in 100..104u64 {
        assert!(tb.cycle(Some((n, &a)), true, false).taken);
        for _ in 0..ACK_HOLD_CYCLES + 2 {
            sent.extend(tb.cycle(None, true, false).sent.map(|s| s.0));
        }
    }
    assert_eq!(sent, vec![100, 101, 102, 103], "an ACK waits at most {ACK_HOLD_CYCLES} + 1 cycles");
}
