//! `RespDoneTable` (the responder's count of READ / atomic responses sent, per QP) in
//! Verilator against a model.
//!
//! - `every_report_is_counted_once`: `done` reports for 8 QPs in bursts of up to 4
//!   back-to-back (the queue's depth) and at random spacing, INIT_RQ_PSN zeroing QPs at
//!   random times (often in the cycle an increment of another QP writes), for thousands of
//!   reports: after each quiet spell every QP's count equals the model's (mod 256, past
//!   wrap-around).
//! - `a_report_is_readable_six_cycles_later`: the latency the block states (queued, then read
//!   and written one more, then a block-RAM read).
//! - `an_init_delays_an_increment_without_losing_it`: an INIT_RQ_PSN of one QP in the very
//!   cycle another QP's increment would write: both land.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::resp_done::RespDoneTable;

struct Tb {
    dut: Dut,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<RespDoneTable>("resp_done_table").expect("build RespDoneTable");
        dut.reset(3);
        let mut tb = Tb { dut };
        // The tables have no reset: INIT_RQ_PSN zeroes a QP's count before it is used.
        for q in 0..64 {
            tb.cycle(None, Some(q));
        }
        tb
    }

    fn cycle(&mut self, done: Option<u64>, init: Option<u64>) {
        let d = &mut self.dut;
        d.set_bit("done", done.is_some());
        d.set("done_qpn", done.unwrap_or(0));
        d.set_bit("init", init.is_some());
        d.set("init_qpn", init.unwrap_or(0));
        d.eval();
        d.tick();
    }

    /// The count of `q` (two cycles: address, data).
    fn read(&mut self, q: u64) -> u8 {
        self.dut.set("qpn", q);
        self.cycle(None, None);
        self.dut.eval();
        self.dut.get("count") as u8
    }
}

#[test]
fn every_report_is_counted_once() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x2D0E_0001);
    let mut model = [0u8; 8];
    let (mut reports, mut inits) = (0u32, 0u32);
    for round in 0..300u32 {
        // Cycles since each QP's last report: an INIT_RQ_PSN comes while a QP is set up, never
        // while its own responses are being counted.
        let mut recent = [99u32; 8];
        let mut since_init = 99u32;
        let mut burst = 0u32;
        for _ in 0..40 {
            recent.iter_mut().for_each(|r| *r += 1);
            since_init += 1;
            // A burst of up to 4 reports back to back fills the queue; then it must drain
            // (3 cycles per report) before the next burst.
            let done = if burst > 0 {
                burst -= 1;
                Some(rng.range(0, 7))
            } else if rng.chance(1, 10) {
                burst = rng.range(0, 3) as u32;
                Some(rng.range(0, 7))
            } else {
                None
            };
            let quiet: Vec<u64> = (0..8).filter(|&q| recent[q as usize] > 12 && done != Some(q)).collect();
            let init = (!quiet.is_empty() && since_init > 6 && rng.chance(1, 8)).then(|| {
                since_init = 0;
                *rng.pick(&quiet)
            });
            if let Some(q) = done {
                recent[q as usize] = 0;
                model[q as usize] = model[q as usize].wrapping_add(1);
                reports += 1;
            }
            if let Some(q) = init {
                model[q as usize] = 0;
                inits += 1;
            }
            tb.cycle(done, init);
            if burst == 0 && done.is_some() {
                // Let the queue drain before anything else is reported.
                for _ in 0..12 {
                    tb.cycle(None, None);
                }
            }
        }
        for _ in 0..16 {
            tb.cycle(None, None);
        }
        for q in 0..8u64 {
            assert_eq!(tb.read(q), model[q as usize], "round {round}: QP {q}");
        }
    }
    assert!(model.iter().any(|&m| m > 0));
    assert!(reports > 1_000 && inits > 200, "{reports} reports, {inits} inits");
    // Past 256 reports of one QP the count wraps.
    let mut tb = Tb::new();
    for _ in 0..300 {
        tb.cycle(Some(9), None);
        tb.cycle(None, None);
        tb.cycle(None, None);
    }
    for _ in 0..8 {
        tb.cycle(None, None);
    }
    assert_eq!(tb.read(9), (300 % 256) as u8);
}

#[test]
fn a_report_is_readable_six_cycles_later() {
    let mut tb = Tb::new();
    tb.dut.set("qpn", 5);
    tb.cycle(Some(5), None);
    let mut seen = Vec::new();
    for _ in 0..8 {
        tb.dut.eval();
        seen.push(tb.dut.get("count"));
        tb.cycle(None, None);
    }
    // Cycle t presents the report (`seen[k]` is cycle t + 1 + k); `count` shows it from
    // t + 6: queued at t's edge, seen by the queue's `empty` and taken (t + 2), its count read
    // (t + 3), written one more (t + 4), the table read at `qpn` (t + 5) answers (t + 6).
    assert_eq!(seen, vec![0, 0, 0, 0, 0, 1, 1, 1], "count of QP 5 in the cycles after the report");
}

#[test]
fn an_init_delays_an_increment_without_losing_it() {
    let mut tb = Tb::new();
    for _ in 0..3 {
        tb.cycle(Some(2), None);
        tb.cycle(None, None);
        tb.cycle(None, None);
    }
    for _ in 0..6 {
        tb.cycle(None, None);
    }
    // Another report of QP 2, then INIT_RQ_PSN of QP 7 in each cycle of its count's update.
    for hit in 1..=5 {
        tb.cycle(Some(2), None);
        for _ in 1..hit {
            tb.cycle(None, None);
        }
        tb.cycle(None, Some(7));
        for _ in 0..8 {
            tb.cycle(None, None);
        }
        assert_eq!(tb.read(2), 3 + hit as u8, "INIT of QP 7 {hit} cycles after QP 2's report");
    }
    assert_eq!(tb.read(7), 0);
}
