//! `AsyncEventQueue` in Verilator against a model of its rules.
//!
//! - `events_leave_in_order_and_a_full_queue_loses_only_what_finds_no_room`: visits every 6-12
//!   cycles decide random sets of QP events (COMM_EST, an error event, LAST_WQE_REACHED,
//!   SQ_DRAINED), an SRQ limit event sometimes comes in the cycle after a visit (with `hold`),
//!   and a consumer pops at random, with long stalls that fill the 64 entries. Properties:
//!   every entry popped is the model's next one, field by field (QP, CQ, WQEs left, type); a
//!   visit's events enter one per cycle in the order COMM_EST, error, LAST_WQE_REACHED,
//!   SQ_DRAINED, never in a `hold` cycle, an SRQ event in its own cycle; an event is lost only
//!   when `room` said no, which happens only with at least 58 entries queued (a push with
//!   `room` always fits: the model's queue never passes 64); nothing is left
//!   over at the end.
//! - `a_lone_event_is_at_the_head_three_cycles_later`: the latency the module states.
mod harness;

use std::collections::VecDeque;

use harness::{Dut, Rng};
use rnic_hdl::event_queue::AsyncEventQueue;

/// An entry: (qpn, cq, left, event type), as `AsyncEventRec` packs it.
type Ev = (u64, u64, u64, u64);

fn pack(e: Ev) -> u64 {
    e.0 | e.1 << 8 | e.2 << 16 | e.3 << 32
}

fn unpack(x: u64) -> Ev {
    (x & 0x3F, (x >> 8) & 0xFF, (x >> 16) & 0xFFFF, (x >> 32) & 0x1F)
}

struct Tb {
    dut: Dut,
}

/// One cycle's inputs.
#[derive(Default, Clone, Copy)]
struct In {
    ce: bool,
    err: Option<u64>,
    lw: bool,
    sd: bool,
    qpn: u64,
    cq: u64,
    hold: bool,
    srq: Option<Ev>,
    pop: bool,
}

impl Tb {
    fn new() -> Tb {
        // (No reset input: the queue starts empty, as its registers do at configuration.)
        let mut dut = Dut::build::<AsyncEventQueue>("async_event_queue").expect("build AsyncEventQueue");
        dut.ticks(2);
        Tb { dut }
    }

    /// One cycle; returns (room before the edge, the head popped if any).
    fn cycle(&mut self, i: In) -> (bool, Option<Ev>) {
        let d = &mut self.dut;
        d.set_bit("set_ce", i.ce);
        d.set_bit("set_err", i.err.is_some());
        d.set("err_type", i.err.unwrap_or(0));
        d.set_bit("set_lw", i.lw);
        d.set_bit("set_sd", i.sd);
        d.set("qpn", i.qpn);
        d.set("cq", i.cq);
        d.set_bit("hold", i.hold);
        d.set_bit("srq_push", i.srq.is_some());
        d.set("srq_data", pack(i.srq.unwrap_or((0, 0, 0, 0))));
        d.eval();
        let room = d.get_bit("room");
        let head = !d.get_bit("empty");
        let data = d.get("data");
        d.set_bit("pop", i.pop && head);
        d.eval();
        d.tick();
        (room, (i.pop && head).then(|| unpack(data)))
    }
}

#[test]
fn events_leave_in_order_and_a_full_queue_loses_only_what_finds_no_room() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xE7E7_0001);
    // The model: latched flags of the last visit, the FIFO's contents.
    let mut pend: VecDeque<Ev> = VecDeque::new();
    let mut fifo: VecDeque<Ev> = VecDeque::new();
    let (mut kept, mut lost, mut popped) = (0u64, 0u64, 0u64);
    let mut next_visit = 3u64;
    let mut after_visit = false;
    let mut stall_until = 0u64;
    for cycle in 0..40_000u64 {
        let ending = cycle >= 38_000;
        let mut i = In::default();
        if !ending && cycle == next_visit {
            next_visit = cycle + rng.range(6, 12);
            i.qpn = rng.range(0, 63);
            i.cq = rng.range(0, 255);
            i.ce = rng.chance(1, 2);
            i.err = rng.chance(1, 2).then(|| *rng.pick(&[2u64, 3]));
            i.lw = rng.chance(1, 3);
            i.sd = rng.chance(1, 3);
        }
        // The cycle after a visit holds the QP events; an SRQ event may come then.
        i.hold = after_visit;
        let srq =
            (after_visit && rng.chance(1, 3)).then(|| (rng.range(0, 63), rng.range(0, 255), rng.range(0, 0xFFFF), 15));
        if cycle > 1000 && cycle % 5000 == 0 {
            stall_until = cycle + 1500;
        }
        i.pop = ending || (cycle >= stall_until && rng.chance(1, 3));
        // The SRQ event goes in only with room (the engine checks it); read `room` first.
        tb.dut.eval();
        let room_now = tb.dut.get_bit("room");
        i.srq = srq.filter(|_| room_now);
        let (room, got) = tb.cycle(i);
        assert_eq!(room, room_now);
        // Model, in the DUT's order within the cycle: the pop, the push, then the latch.
        if let Some(g) = got {
            let want = fifo.pop_front().unwrap_or_else(|| panic!("cycle {cycle}: popped {g:?} from an empty model"));
            assert_eq!(g, want, "cycle {cycle}: head");
            popped += 1;
        }
        if let Some(s) = i.srq {
            fifo.push_back(s);
            kept += 1;
        } else if !i.hold {
            if let Some(e) = pend.pop_front() {
                if room {
                    fifo.push_back(e);
                    kept += 1;
                } else {
                    assert!(fifo.len() >= 58, "cycle {cycle}: no room with {} queued", fifo.len());
                    lost += 1;
                }
            }
        }
        let any = i.ce || i.err.is_some() || i.lw || i.sd;
        if any {
            assert!(pend.is_empty(), "cycle {cycle}: a visit before the last one's events went in");
            if i.ce {
                pend.push_back((i.qpn, i.cq, 0, 4));
            }
            if let Some(t) = i.err {
                pend.push_back((i.qpn, i.cq, 0, t));
            }
            if i.lw {
                pend.push_back((i.qpn, i.cq, 0, 16));
            }
            if i.sd {
                pend.push_back((i.qpn, i.cq, 0, 5));
            }
        }
        after_visit = any;
        assert!(fifo.len() <= 64, "cycle {cycle}: model holds {}", fifo.len());
    }
    assert!(fifo.is_empty() && pend.is_empty(), "left over: {fifo:?} {pend:?}");
    assert!(lost > 0, "the stalls never filled the queue");
    assert_eq!(kept, popped);
    assert!(kept > 4_000, "{kept} events");
}

#[test]
fn a_lone_event_is_at_the_head_three_cycles_later() {
    let mut tb = Tb::new();
    tb.cycle(In { sd: true, qpn: 9, cq: 3, ..In::default() });
    tb.dut.eval();
    assert!(tb.dut.get_bit("empty"), "at the head after one cycle");
    tb.cycle(In::default());
    tb.dut.eval();
    assert!(tb.dut.get_bit("empty"), "at the head after two cycles");
    tb.cycle(In::default());
    tb.dut.eval();
    assert!(!tb.dut.get_bit("empty"), "not at the head after three cycles");
    assert_eq!(tb.cycle(In { pop: true, ..In::default() }).1, Some((9, 3, 0, 5)));
}
