//! `SentPsnTable` in Verilator against a model: per QP, the PSN after the highest request
//! packet reported (mod 2^24), set by INIT_SQ_PSN.
//!
//! - `the_table_keeps_the_highest_psn_sent`: reports at most one per 2 cycles over 8 QPs
//!   (mostly advancing, some go-back-N resends of lower PSNs, wrapping past 2^24), and
//!   INIT_SQ_PSN commands at random times, often in the cycle a report of another QP is being
//!   compared (its write then waits a cycle). Every 40 cycles the reports pause and every QP's
//!   entry is read: it equals the model's. A resend never lowers an entry; a report more than
//!   2^23 behind counts as behind.
//! - `a_report_is_readable_three_cycles_later`: the latency the module states.
//! - `a_resend_behind_a_held_report_does_not_lower_the_entry`: the race the compare's
//!   forwarding closes (a report waiting for the write port, then a resend of its QP).
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::sent_psn::SentPsnTable;

const MASK: u32 = 0xFF_FFFF;

struct Tb {
    dut: Dut,
}

impl Tb {
    fn new() -> Tb {
        // (No reset input: the tables are written by INIT_SQ_PSN before a QP sends.)
        let mut dut = Dut::build::<SentPsnTable>("sent_psn_table").expect("build SentPsnTable");
        dut.ticks(2);
        Tb { dut }
    }

    fn cycle(&mut self, emit: Option<(u64, u32)>, init: Option<(u64, u32)>) {
        let d = &mut self.dut;
        d.set_bit("emit", emit.is_some());
        d.set("emit_qpn", emit.map_or(0, |e| e.0));
        d.set("emit_psn", emit.map_or(0, |e| u64::from(e.1)));
        d.set_bit("init", init.is_some());
        d.set("init_qpn", init.map_or(0, |i| i.0));
        d.set("init_psn", init.map_or(0, |i| u64::from(i.1)));
        d.eval();
        d.tick();
    }

    /// The entry of `q` (two cycles: address, data).
    fn read(&mut self, q: u64) -> u32 {
        self.dut.set("read_qpn", q);
        self.cycle(None, None);
        self.dut.eval();
        self.dut.get("read_psn") as u32
    }
}

/// `p` is ahead of `cur` (mod 2^24, by less than 2^23).
fn ahead(p: u32, cur: u32) -> bool {
    let d = p.wrapping_sub(cur) & MASK;
    d != 0 && d < 1 << 23
}

#[test]
fn the_table_keeps_the_highest_psn_sent() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5E47_0001);
    let mut model = [0u32; 8];
    let mut next = [0u32; 8];
    for q in 0..8u64 {
        let first = (rng.u32() & MASK) | if q == 3 { 0xFF_F000 } else { 0 };
        tb.cycle(None, Some((q, first)));
        tb.cycle(None, None);
        model[q as usize] = first;
        next[q as usize] = first;
    }
    let (mut resends, mut kept, mut inits_met) = (0u32, 0u32, 0u32);
    for round in 0..400u32 {
        let mut last_emit = false;
        // Cycles since each QP's last report: an INIT_SQ_PSN never meets its own QP's report
        // (a QP is initialised before it sends), only other QPs'.
        let mut recent = [99u32; 8];
        let mut since_init = 99u32;
        for _ in 0..40 {
            recent.iter_mut().for_each(|r| *r += 1);
            let emit = (!last_emit && rng.chance(2, 3)).then(|| {
                let q = rng.range(0, 7);
                let p = if rng.chance(1, 8) {
                    // A go-back-N resend: a PSN already sent.
                    resends += 1;
                    model[q as usize].wrapping_sub(rng.range(1, 20) as u32) & MASK
                } else {
                    next[q as usize] = (next[q as usize] + rng.range(1, 4) as u32) & MASK;
                    next[q as usize]
                };
                (q, p)
            });
            last_emit = emit.is_some();
            let quiet: Vec<u64> = (0..8).filter(|&q| recent[q as usize] > 3 && emit.map(|e| e.0) != Some(q)).collect();
            // A command is 17 BAR0 writes: never two within a few cycles.
            since_init += 1;
            let init = (!quiet.is_empty() && since_init > 8 && rng.chance(1, 12)).then(|| {
                since_init = 0;
                let q = *rng.pick(&quiet);
                (q, rng.u32() & MASK)
            });
            if let (Some(i), Some(e)) = (init, emit) {
                assert_ne!(i.0, e.0);
                inits_met += 1;
            }
            if let Some((q, p)) = emit {
                recent[q as usize] = 0;
                if ahead(p, model[q as usize]) {
                    model[q as usize] = p;
                    kept += 1;
                }
            }
            if let Some((q, p)) = init {
                model[q as usize] = p;
                next[q as usize] = p;
            }
            tb.cycle(emit, init);
        }
        // Quiet: the last report and any held write land; then every entry is the model's.
        for _ in 0..4 {
            tb.cycle(None, None);
        }
        for q in 0..8u64 {
            assert_eq!(tb.read(q), model[q as usize], "round {round}: QP {q}");
        }
    }
    assert!(resends > 500 && kept > 4_000 && inits_met > 20, "{resends} resends, {kept} kept, {inits_met} inits");
}

#[test]
fn a_report_is_readable_three_cycles_later() {
    let mut tb = Tb::new();
    tb.cycle(None, Some((5, 100)));
    tb.cycle(None, None);
    tb.dut.set("read_qpn", 5);
    tb.cycle(Some((5, 107)), None);
    tb.dut.eval();
    assert_eq!(tb.dut.get("read_psn"), 100, "one cycle after the report");
    tb.cycle(None, None);
    tb.dut.eval();
    assert_eq!(tb.dut.get("read_psn"), 100, "two cycles after the report");
    tb.cycle(None, None);
    tb.dut.eval();
    assert_eq!(tb.dut.get("read_psn"), 107, "three cycles after the report");
    // A resend of a lower PSN leaves it.
    tb.cycle(Some((5, 103)), None);
    for _ in 0..4 {
        tb.cycle(None, None);
    }
    assert_eq!(tb.read(5), 107);
}

/// A report held by an INIT_SQ_PSN of another QP is written a cycle late; a resend of its QP
/// presented in that cycle reads the table before the write and must still be compared with
/// the held report's PSN (forwarded), or it would lower the entry.
#[test]
fn a_resend_behind_a_held_report_does_not_lower_the_entry() {
    let mut tb = Tb::new();
    tb.cycle(None, Some((0, 1000)));
    tb.cycle(None, Some((1, 50)));
    tb.cycle(None, None);
    tb.cycle(Some((0, 1004)), None); // A
    tb.cycle(None, Some((1, 60))); // A is compared now: the command takes the write port
    tb.cycle(Some((0, 1002)), None); // B, a resend: A is written in this cycle
    for _ in 0..4 {
        tb.cycle(None, None);
    }
    assert_eq!(tb.read(0), 1004, "the resend lowered the entry");
    assert_eq!(tb.read(1), 60);
}
