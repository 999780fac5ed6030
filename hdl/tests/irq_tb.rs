//! `IrqGen` in Verilator: events (vector numbers on two inputs) against a model of MSI-X-style
//! delivery (rnic_contract::regs::IRQ_MASK, IRQ_PENDING, IRQ_MODERATION).
//!
//! - `one_message_per_event_burst_masks_defer_and_ready_holds`: an event becomes one message on
//!   its vector; events of a vector before its message coalesce; two vectors in one cycle give
//!   two messages, lowest first; an event after a message gives another; a masked vector sends
//!   nothing, shows in `pending_out`, and sends exactly one message when unmasked; with
//!   `irq_ready` low the message is held (valid and vector stable) and sent once.
//! - `moderation_sends_a_vector_once_per_window`: with a window of 2 units (512 cycles), a
//!   vector raised every 40 cycles sends one message per window (gaps of at least a window after
//!   the first), its last event is still delivered, and another vector is not held by it.
mod harness;

use harness::Dut;
use rnic_contract::regs::irq::MODERATION_UNIT_CYCLES;
use rnic_hdl::irq::IrqGen;

struct Tb {
    dut: Dut,
    /// (cycle, vector) of every message taken.
    msgs: Vec<(u64, u64)>,
    ready: bool,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<IrqGen>("irq_gen").expect("build IrqGen");
        dut.set("irq_ready", 1);
        dut.reset(2);
        Tb { dut, msgs: Vec::new(), ready: true }
    }

    /// One cycle with these events (vector numbers) on ev0 / ev1.
    fn cycle(&mut self, ev0: Option<u64>, ev1: Option<u64>) {
        self.dut.set_bit("ev0_valid", ev0.is_some());
        self.dut.set("ev0_vector", ev0.unwrap_or(0));
        self.dut.set_bit("ev1_valid", ev1.is_some());
        self.dut.set("ev1_vector", ev1.unwrap_or(0));
        self.dut.set_bit("irq_ready", self.ready);
        self.dut.eval();
        if self.dut.get_bit("irq_valid") && self.ready {
            let v = self.dut.get("irq_vector");
            self.msgs.push((self.dut.cycles(), v));
        }
        self.dut.tick();
    }

    fn idle(&mut self, n: usize) {
        for _ in 0..n {
            self.cycle(None, None);
        }
    }

    fn vectors(&self) -> Vec<u64> {
        self.msgs.iter().map(|m| m.1).collect()
    }
}

#[test]
fn one_message_per_event_burst_masks_defer_and_ready_holds() {
    let mut tb = Tb::new();
    tb.idle(5);
    assert!(tb.msgs.is_empty(), "no event, no message");

    tb.cycle(Some(3), None);
    let t0 = tb.dut.cycles();
    tb.idle(20);
    assert_eq!(tb.vectors(), [3], "one event, one message on its vector");
    assert!(tb.msgs[0].0 - t0 <= 4, "latency {} cycles", tb.msgs[0].0 - t0);

    // Coalescing: three events of vector 3 in two cycles before its message.
    tb.msgs.clear();
    tb.cycle(Some(3), Some(3));
    tb.cycle(Some(3), None);
    tb.idle(20);
    assert_eq!(tb.vectors(), [3], "events of one vector before its message coalesce");

    // Two vectors in one cycle: both sent, lowest first.
    tb.msgs.clear();
    tb.cycle(Some(17), Some(2));
    tb.idle(20);
    assert_eq!(tb.vectors(), [2, 17]);

    // An event after the message sends another one.
    tb.msgs.clear();
    tb.cycle(Some(6), None);
    tb.idle(10);
    tb.cycle(None, Some(6));
    tb.idle(10);
    assert_eq!(tb.vectors(), [6, 6]);

    // A masked vector keeps its event pending and sends it once when unmasked; others pass.
    tb.msgs.clear();
    tb.dut.set("mask", 1 << 4);
    tb.cycle(Some(4), None);
    tb.cycle(Some(4), None);
    tb.idle(30);
    tb.cycle(None, Some(9));
    tb.idle(10);
    assert_eq!(tb.vectors(), [9], "vector 4 is masked, 9 is not");
    tb.dut.eval();
    assert_eq!(tb.dut.get("pending_out"), 1 << 4, "vector 4 pending while masked");
    tb.dut.set("mask", 0);
    tb.idle(20);
    assert_eq!(tb.vectors(), [9, 4], "unmasking sends the pending vector once");
    tb.dut.eval();
    assert_eq!(tb.dut.get("pending_out"), 0);

    // irq_ready low: the message waits with a stable vector, and is sent once.
    tb.msgs.clear();
    tb.ready = false;
    tb.cycle(Some(30), None);
    tb.idle(6);
    for _ in 0..10 {
        tb.dut.eval();
        assert!(tb.dut.get_bit("irq_valid"), "the message is held while irq_ready is low");
        assert_eq!(tb.dut.get("irq_vector"), 30);
        tb.cycle(None, None);
    }
    tb.ready = true;
    tb.idle(20);
    assert_eq!(tb.vectors(), [30], "taken once when ready");
}

#[test]
fn moderation_sends_a_vector_once_per_window() {
    let mut tb = Tb::new();
    let units = 2u64;
    let window = units * u64::from(MODERATION_UNIT_CYCLES);
    tb.dut.set("moderation", units);
    tb.idle(3);
    let start = tb.dut.cycles();
    let span = 8 * window;
    let mut last_event = 0;
    while tb.dut.cycles() - start < span {
        if (tb.dut.cycles() - start) % 40 == 0 {
            last_event = tb.dut.cycles();
            tb.cycle(Some(1), None);
        } else {
            tb.cycle(None, None);
        }
    }
    // Another vector in the middle of vector 1's hold-off goes at once.
    let before = tb.msgs.len();
    tb.cycle(None, Some(12));
    let t12 = tb.dut.cycles();
    tb.idle(2 * window as usize);
    let m12: Vec<_> = tb.msgs.iter().filter(|m| m.1 == 12).collect();
    assert_eq!(m12.len(), 1, "vector 12 sent once");
    assert!(m12[0].0 - t12 <= 4, "vector 12 is not held by vector 1's moderation");
    let ones: Vec<u64> = tb.msgs.iter().filter(|m| m.1 == 1).map(|m| m.0).collect();
    assert!(before >= 8 && before <= 10, "{before} messages for {} events over 8 windows", span / 40);
    for w in ones.windows(2) {
        assert!(w[1] - w[0] >= window - 8, "messages of vector 1 {} cycles apart (window {window})", w[1] - w[0]);
    }
    assert!(*ones.last().unwrap() > last_event, "the last event is delivered after it happened");
    tb.dut.eval();
    assert_eq!(tb.dut.get("pending_out"), 0, "nothing left pending");

    // Moderation off again: every event goes at once.
    tb.dut.set("moderation", 0);
    tb.idle(2 * window as usize);
    tb.msgs.clear();
    for _ in 0..5 {
        tb.cycle(Some(1), None);
        tb.idle(8);
    }
    assert_eq!(tb.vectors(), [1, 1, 1, 1, 1]);
}
