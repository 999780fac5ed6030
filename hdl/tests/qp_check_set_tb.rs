//! `QpCheckSet` in Verilator against a model of the visits it must offer and of SQ-drain
//! arming.
//!
//! - `every_request_is_offered_and_reset_forgets`: random RQ doorbells, context commands (ERR
//!   asks for a visit, RESET forgets one, others do neither), the engine's own requests
//!   (`again`) and drain reports, and an engine that takes an offer at random times (and is
//!   busy for 4-12 cycles after each). Properties: an offered QP has a request the model holds
//!   (doorbells, commands, reports and `again` count from the cycle after they are presented,
//!   RESET in its own cycle; an offer made before a RESET may show for two more cycles);
//!   a taken QP is not offered again without a new request;
//!   every request is offered in the end, unless a RESET came after it; each offer arrives
//!   within 66 free cycles of the engine (the scan's length, plus the two cycles after a take).
//! - `a_drain_is_armed_by_a_report_until_it_fires_once_per_command`: a report arms its QP (a
//!   cycle late), `armed` shows the arm bit of `visit_qpn`; `drained` disarms it, and a later
//!   report of that QP arms nothing until a context command of the QP (any state); `drained`
//!   and a command act a cycle late (registered); a command
//!   disarms too; a report and a command in the same cycle leave the QP armed.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::qp_check_set::QpCheckSet;

struct Tb {
    dut: Dut,
}

#[derive(Default, Clone, Copy)]
struct In {
    /// A context command: (QP, state).
    cmd: Option<(u64, u64)>,
    rq_db: Option<u64>,
    visit: u64,
    again: bool,
    drained: bool,
    stop: Option<u64>,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<QpCheckSet>("qp_check_set").expect("build QpCheckSet");
        dut.reset(2);
        Tb { dut }
    }

    /// Sets the inputs and evaluates; returns (offered QP, armed).
    fn show(&mut self, i: In) -> (Option<u64>, bool) {
        let d = &mut self.dut;
        d.set_bit("cmd_fire", i.cmd.is_some());
        d.set("cmd_op", 1);
        d.set("cmd_index", i.cmd.map_or(0, |c| c.0));
        d.set("cmd_state", i.cmd.map_or(0, |c| c.1));
        d.set_bit("rq_db", i.rq_db.is_some());
        d.set("rq_db_qpn", i.rq_db.unwrap_or(0));
        d.set("visit_qpn", i.visit);
        d.set_bit("again", i.again);
        d.set_bit("drained", i.drained);
        d.set_bit("stop", i.stop.is_some());
        d.set("stop_qpn", i.stop.unwrap_or(0));
        d.set_bit("take", false);
        d.eval();
        let sel = d.get_bit("sel").then(|| d.get("sel_qpn"));
        (sel, d.get_bit("armed"))
    }

    fn tick(&mut self, take: bool) {
        self.dut.set_bit("take", take);
        self.dut.eval();
        self.dut.tick();
    }
}

#[test]
fn every_request_is_offered_and_reset_forgets() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xC4EC_0001);
    let mut pend = [false; 64];
    // Requests presented last cycle (registered in the block): they count from this cycle.
    let mut late: Vec<u64> = Vec::new();
    let mut busy_until = 0u64;
    let mut starve = 0u64;
    // The cycle of each QP's last RESET: an offer made before it may still show for two cycles
    // (the engine's visit then finds the QP in RESET with nothing to do).
    let mut reset_at = [None::<u64>; 64];
    let mut offers = 0u64;
    for cycle in 0..60_000u64 {
        let ending = cycle >= 58_000;
        let mut i = In { visit: rng.range(0, 63), ..In::default() };
        if !ending {
            // One BAR0 write per cycle: a doorbell or a command, never both.
            if rng.chance(1, 30) {
                i.rq_db = Some(rng.range(0, 63));
            } else if rng.chance(1, 40) {
                i.cmd = Some((rng.range(0, 63), *rng.pick(&[0u64, 1, 2, 3, 6])));
            }
            i.again = rng.chance(1, 25);
            i.stop = rng.chance(1, 60).then(|| rng.range(0, 63));
        }
        let (sel, _) = tb.show(i);
        // The engine looks at the offer only when it is free (in `Idle`).
        let can_take = cycle >= busy_until;
        let take = can_take && sel.is_some() && (ending || rng.chance(1, 2));
        if let (true, Some(q)) = (can_take, sel) {
            let stale = reset_at[q as usize].is_some_and(|r| cycle <= r + 2);
            assert!(pend[q as usize] || stale, "cycle {cycle}: QP {q} offered without a request");
        }
        if can_take && sel.is_none() && pend.iter().any(|&p| p) {
            starve += 1;
            assert!(starve <= 66, "cycle {cycle}: requests wait {starve} free cycles with no offer");
        } else {
            starve = 0;
        }
        tb.tick(take);
        // The model: a take acts now.
        if take {
            pend[sel.unwrap() as usize] = false;
            offers += 1;
            busy_until = cycle + rng.range(4, 12);
        }
        // Requests act after the take of their cycle (a set wins over a clear), those presented
        // last cycle now, a RESET after them; this cycle's registered ones next cycle.
        for q in late.drain(..) {
            pend[q as usize] = true;
        }
        match i.cmd {
            Some((q, 0)) => {
                pend[q as usize] = false;
                reset_at[q as usize] = Some(cycle);
            }
            Some((q, 6)) => late.push(q),
            _ => {}
        }
        if let Some(q) = i.rq_db {
            late.push(q);
        }
        if let Some(q) = i.stop {
            late.push(q);
        }
        if i.again {
            late.push(i.visit);
        }
    }
    assert!(pend.iter().all(|&p| !p) && late.is_empty(), "requests never offered: {pend:?}");
    assert!(offers > 2_000, "{offers} offers");
}

#[test]
fn a_drain_is_armed_by_a_report_until_it_fires_once_per_command() {
    let mut tb = Tb::new();
    let armed = |tb: &mut Tb, q: u64| tb.show(In { visit: q, ..In::default() }).1;
    let step = |tb: &mut Tb, i: In| {
        tb.show(i);
        tb.tick(false);
    };
    assert!(!armed(&mut tb, 5));
    step(&mut tb, In { stop: Some(5), ..In::default() });
    assert!(!armed(&mut tb, 5), "a report arms a cycle late");
    step(&mut tb, In::default());
    assert!(armed(&mut tb, 5) && !armed(&mut tb, 4), "QP 5 armed, QP 4 not");
    // It fires: disarmed, and a later report (a doorbell in SQD) arms nothing.
    step(&mut tb, In { visit: 5, drained: true, ..In::default() });
    assert!(armed(&mut tb, 5), "`drained` acts a cycle late");
    step(&mut tb, In::default());
    assert!(!armed(&mut tb, 5));
    step(&mut tb, In { stop: Some(5), ..In::default() });
    step(&mut tb, In::default());
    assert!(!armed(&mut tb, 5), "armed again after it fired, with no command since");
    // A command of the QP (here RTS) clears what it remembers; the next report arms.
    step(&mut tb, In { cmd: Some((5, 3)), ..In::default() });
    step(&mut tb, In { stop: Some(5), ..In::default() });
    step(&mut tb, In::default());
    assert!(armed(&mut tb, 5), "a report after a command arms");
    // A command disarms (a cycle late: commands are registered).
    step(&mut tb, In { cmd: Some((5, 3)), ..In::default() });
    step(&mut tb, In::default());
    assert!(!armed(&mut tb, 5), "a command disarms");
    // A report and a command that act in the same cycle: the report wins.
    step(&mut tb, In { cmd: Some((7, 3)), stop: Some(7), ..In::default() });
    step(&mut tb, In::default());
    assert!(armed(&mut tb, 7), "report and command together: armed");
    // The report asked for a check visit of QP 7 too.
    let mut seen = false;
    for _ in 0..70 {
        if let (Some(7), _) = tb.show(In::default()) {
            seen = true;
            tb.tick(true);
            break;
        }
        tb.tick(false);
    }
    assert!(seen, "no check visit of QP 7 offered after its report");
}
