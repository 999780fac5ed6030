//! `SqDoorbells` in Verilator against a reference model of what a scheduler may rely on.
//!
//! - `every_doorbell_is_served_with_the_newest_index`: random doorbells (up to one per cycle,
//!   many QPs, bursts on one QP), rearms, RESET clears and SQD pokes, and a consumer that reads at random
//!   times. Properties: a doorbell is never lost (after the last doorbell of a QP, the QP is
//!   offered at least once more with exactly that index, unless a clear came later); every
//!   offer carries the QP's newest index at the time the offer was read, or one overtaken by a
//!   doorbell taking effect in the same cycle as the read (which re-arms the QP); a doorbell
//!   and a rearm count from the cycle after they are presented (the block registers both); a
//!   cleared QP with no later doorbell, rearm or poke is never offered (a poke acts in its own
//!   cycle, like a clear); no QP is offered twice for
//!   one arming.
//! - `ready_qps_are_served_round_robin`: with all 64 QPs kept ready, every QP is offered once in
//!   every 64 offers.
//! - `a_qp_rung_again_when_served_does_not_starve_its_group`: a QP rung again in the cycle it is
//!   served does not keep the QPs of its group (or any other) waiting (it did with a
//!   lowest-first pick in the group).
//! - `others_says_whether_another_qp_is_ready`: the `others` output against the ready set.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::doorbell::SqDoorbells;

struct Tb {
    dut: Dut,
    rng: Rng,
    /// A context command's poke (RTS or SQD) for the next cycle.
    poke: Option<u8>,
}

#[derive(Clone, Copy, Default)]
struct Qp {
    /// Newest index written by a doorbell (0 after a clear).
    pi: u16,
    /// Armed (a doorbell, rearm or clear happened after the last read of this QP, or never read).
    armed: bool,
    /// A clear came after the last doorbell/rearm: it must not be offered.
    cleared: bool,
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<SqDoorbells>("sq_doorbells").expect("build SqDoorbells");
        dut.reset(2);
        Tb { dut, rng: Rng::from_env(seed), poke: None }
    }

    /// One cycle with the given inputs; returns the offer (qpn, pi) if `read` consumed one.
    fn cycle(&mut self, db: Option<(u8, u16)>, rearm: Option<u8>, clear: Option<u8>, read: bool) -> Option<(u8, u16)> {
        let d = &mut self.dut;
        d.set_bit("db_write", db.is_some());
        let (q, pi) = db.unwrap_or((0, 0));
        d.set("db_data", (u64::from(q) << 16) | u64::from(pi));
        d.set_bit("rearm", rearm.is_some());
        d.set("rearm_qpn", u64::from(rearm.unwrap_or(0)));
        d.set_bit("clear", clear.is_some());
        d.set("clear_qpn", u64::from(clear.unwrap_or(0)));
        let poke = self.poke.take();
        d.set_bit("poke", poke.is_some());
        d.set("poke_qpn", u64::from(poke.unwrap_or(0)));
        d.eval();
        let offered = !d.get_bit("empty");
        let data = d.get("data");
        d.set_bit("read", read && offered);
        d.eval();
        d.tick();
        if read && offered {
            Some(((data >> 16) as u8, data as u16))
        } else {
            None
        }
    }
}

#[test]
fn every_doorbell_is_served_with_the_newest_index() {
    let mut tb = Tb::new(0xD00B_E110);
    let mut model = [Qp::default(); 64];
    let mut pi_next = [0u16; 64];
    let mut prev_rearm: Option<u8> = None;
    let mut prev_db: Option<(u8, u16)> = None;
    for cycle in 0..60_000u64 {
        let draining = cycle >= 55_000;
        let db = if !draining && tb.rng.chance(1, 3) {
            // Bursts: half of the doorbells go to QPs 0..3.
            let q = if tb.rng.chance(1, 2) { tb.rng.range(0, 3) } else { tb.rng.range(0, 63) } as usize;
            pi_next[q] = pi_next[q].wrapping_add(tb.rng.range(1, 5) as u16);
            Some((q as u8, pi_next[q]))
        } else {
            None
        };
        let rearm = (cycle < 54_000 && tb.rng.chance(1, 40)).then(|| tb.rng.range(0, 63) as u8);
        // A clear comes alone (BAR0 answers one write before it takes the next: never with a
        // doorbell, nor the cycle after one).
        let clear = (!draining && db.is_none() && prev_db.is_none() && tb.rng.chance(1, 200))
            .then(|| tb.rng.range(0, 63) as u8);
        // A poke (a context command writing SQD) comes alone too, and never with a
        // clear (one command per cycle).
        let poke = (!draining && clear.is_none() && db.is_none() && prev_db.is_none() && tb.rng.chance(1, 150))
            .then(|| tb.rng.range(0, 63) as u8);
        tb.poke = poke;
        let read = draining || tb.rng.chance(1, 2);
        let got = tb.cycle(db, rearm, clear, read);
        if let Some((q, pi)) = got {
            let m = &mut model[q as usize];
            assert!(m.armed, "cycle {cycle}: QP {q} offered without a doorbell or rearm since its last offer");
            assert!(!m.cleared, "cycle {cycle}: QP {q} offered after a clear");
            assert_eq!(pi, m.pi, "cycle {cycle}: QP {q} offered with index {pi}, newest is {}", m.pi);
            m.armed = false;
            // A doorbell taking effect in the cycle of the read (presented the cycle before)
            // re-arms the QP: its index was not seen.
            if let Some((dq, dpi)) = prev_db {
                if dq == q {
                    m.pi = dpi;
                    m.armed = true;
                }
            }
        }
        // Inputs of this cycle take effect after the read (a set wins over the read).
        if let Some(c) = clear {
            model[c as usize] = Qp { pi: 0, armed: false, cleared: true };
            pi_next[c as usize] = 0;
        }
        // A poke acts in its own cycle: the QP is offered again with its newest index.
        if let Some(p) = poke {
            model[p as usize].armed = true;
            model[p as usize].cleared = false;
        }
        // A doorbell is taken a cycle late (registered in the block).
        if let Some((q, pi)) = prev_db {
            if got.map(|g| g.0) != Some(q) {
                model[q as usize] = Qp { pi, armed: true, cleared: false };
            }
        }
        prev_db = db;
        // A rearm is taken a cycle late (registered in the block).
        if let Some(q) = prev_rearm {
            model[q as usize].armed = true;
            model[q as usize].cleared = false;
        }
        prev_rearm = rearm;
    }
    for (q, m) in model.iter().enumerate() {
        assert!(!m.armed, "QP {q}: doorbell with index {} never offered", m.pi);
    }
}

#[test]
fn ready_qps_are_served_round_robin() {
    let mut tb = Tb::new(0xD00B_E111);
    for q in 0..64u8 {
        tb.cycle(Some((q, 1)), None, None, false);
    }
    let mut last = [0u64; 64];
    let mut count = [0u64; 64];
    let mut offers = 0u64;
    let mut rearm = None;
    for _ in 0..20_000 {
        if let Some((q, _)) = tb.cycle(None, rearm.take(), None, true) {
            offers += 1;
            if last[q as usize] != 0 {
                let gap = offers - last[q as usize];
                assert_eq!(gap, 64, "QP {q} offered again after {gap} offers");
            }
            last[q as usize] = offers;
            count[q as usize] += 1;
            rearm = Some(q);
        }
    }
    assert!(offers > 5_000, "only {offers} offers in 20000 cycles");
    for (q, &n) in count.iter().enumerate() {
        assert!(n + 1 >= offers / 64, "QP {q} offered {n} times in {offers} offers");
    }
}

/// The scheduler's pattern that starved QPs: QP `busy` is rung again in the cycle it is served
/// (a program that keeps its send queue full), the others of its group and one of another group
/// are rung once. Each of them is offered within a few offers of `busy`, whatever the group.
#[test]
fn a_qp_rung_again_when_served_does_not_starve_its_group() {
    let mut tb = Tb::new(0xD00B_E113);
    for busy in [0u8, 2, 5, 7, 13, 40, 63] {
        let g = busy & !7;
        let waiting: Vec<u8> = (g..g + 8).filter(|&q| q != busy).chain([(busy + 8) % 64]).collect();
        let mut pi = 1u16;
        tb.cycle(Some((busy, pi)), None, None, false);
        for &q in &waiting {
            tb.cycle(Some((q, 1)), None, None, false);
        }
        let mut left = waiting.clone();
        let mut busy_offers = 0;
        let mut db = None;
        for _ in 0..2_000 {
            match tb.cycle(db.take(), None, None, true) {
                Some((q, _)) if q == busy => {
                    busy_offers += 1;
                    pi += 1;
                    db = Some((busy, pi));
                }
                Some((q, _)) => {
                    assert!(left.contains(&q), "QP {q} offered twice for one doorbell");
                    left.retain(|&x| x != q);
                }
                None => {}
            }
            if left.is_empty() {
                break;
            }
        }
        assert!(left.is_empty(), "busy QP {busy}: QPs {left:?} never offered ({busy_offers} offers of QP {busy})");
        assert!(busy_offers <= waiting.len() + 1, "busy QP {busy} was offered {busy_offers} times before the others");
        // Drain: nothing else is ready but `busy`'s last doorbell.
        for _ in 0..40 {
            tb.cycle(None, None, None, true);
        }
    }
}

/// `others` is set (a cycle behind the ready set) when a QP other than the offered one is ready,
/// and clear when the offered QP is the only one.
#[test]
fn others_says_whether_another_qp_is_ready() {
    let mut tb = Tb::new(0xD00B_E114);
    tb.cycle(Some((9, 1)), None, None, false);
    for _ in 0..12 {
        tb.cycle(None, None, None, false);
    }
    assert!(!tb.dut.get_bit("empty"), "QP 9 is offered");
    assert!(!tb.dut.get_bit("others"), "only QP 9 is ready");
    tb.cycle(Some((9, 2)), None, None, false);
    for _ in 0..3 {
        tb.cycle(None, None, None, false);
    }
    assert!(!tb.dut.get_bit("others"), "QP 9 rung again is still the only one");
    tb.cycle(Some((33, 1)), None, None, false);
    tb.cycle(None, None, None, false);
    tb.cycle(None, None, None, false);
    assert!(tb.dut.get_bit("others"), "QP 33 is ready besides the offered QP 9");
    // Take QP 9: QP 33 is offered next, alone.
    let mut got = Vec::new();
    for _ in 0..30 {
        if let Some((q, _)) = tb.cycle(None, None, None, true) {
            got.push(q);
        }
    }
    assert_eq!(got, vec![9, 33]);
    assert!(!tb.dut.get_bit("others"), "nothing is ready");
}

/// A doorbell into an idle set is offered in the 4th to 11th cycle after the one it is
/// presented in (input register, ready set, search of up to 8 groups, candidate, index read),
/// with its index; nothing is offered from an idle set.
#[test]
fn a_doorbell_into_an_idle_set_is_offered_4_to_11_cycles_later() {
    let mut tb = Tb::new(0xD00B_E112);
    let mut seen = Vec::new();
    for k in 0..200u16 {
        let q = tb.rng.range(0, 63) as u8;
        // Idle for a random while, so the search stands at a random group.
        for _ in 0..tb.rng.range(0, 20) {
            assert_eq!(tb.cycle(None, None, None, true), None, "offer from an idle set");
        }
        let mut lat = 0u64;
        let mut got = tb.cycle(Some((q, k)), None, None, true);
        while got.is_none() {
            lat += 1;
            assert!(lat <= 11, "doorbell {k} (QP {q}) not offered within 11 cycles");
            got = tb.cycle(None, None, None, true);
        }
        assert_eq!(got, Some((q, k)), "doorbell {k}: wrong offer");
        assert!(lat >= 4, "doorbell {k} (QP {q}) offered {lat} cycles later, ahead of its input register");
        seen.push(lat);
    }
    assert_eq!(seen.iter().min(), Some(&4), "the shortest latency is 4 cycles");
    assert_eq!(seen.iter().max(), Some(&11), "the longest latency is 11 cycles (7 groups searched first)");
}
