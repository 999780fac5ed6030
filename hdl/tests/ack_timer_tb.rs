//! `AckTimer` in Verilator: the local ACK timeout and the RNR wait of each requester QP
//! (IBTA Vol 1 9.7.6.1.3, 9.7.5.2.8), as the completer sees them on `to_write` / `to_qpn`.
//!
//! The block sweeps its 64 QPs one per cycle, so a deadline is met within one sweep
//! (64 cycles) of the time it names, and the change that sets a deadline is seen within one
//! sweep too. A QP that goes from idle to waiting without a retired WQE (the first send)
//! counts from the sweep's last visit, up to 64 cycles before the send. So every window
//! below is `[due - 64, due + SLACK]`.
//!
//! - `a_stalled_qp_times_out_once_per_timeout`: QPs in RTS with TIMEOUT 1..3 and WQEs
//!   outstanding time out 4.096 µs × 2^TIMEOUT (1024 << TIMEOUT cycles) after their last
//!   progress, then again every period; idle QPs, TIMEOUT 0 and QPs not in RTS never do.
//! - `progress_sending_and_an_owed_resend_hold_the_timer`: retired WQEs, a moved READ
//!   progress byte, the scheduler sending the QP's packets and a go-back-N request waiting
//!   each push the deadline out; the timeout comes one period after the last of them.
//! - `an_rnr_wait_ends_after_its_timer_code`: RNR timer codes 1..10 (IBTA Vol 1 Table 45,
//!   written here in µs) end when the table says, with `rnr_end` (bit 7 of `to_qpn`) set, and hold the
//!   QP's ACK timer meanwhile.
//! - `a_context_write_ends_the_old_connections_rnr_wait`: a QP re-created during an RNR wait
//!   never sees that wait end; its new connection's ACK timer runs from its own start.
//! - `a_full_timeout_fifo_delays_but_never_loses_a_timeout`: with `to_full` held nothing is
//!   written; once it drops, every timeout and RNR end that came due is written.
mod harness;

use harness::{Dut, Rng};
use rnic_contract::qp_context;
use rnic_contract::regs::cmd_op;
use rnic_contract::verbs::qp_state;
use rnic_hdl::ack_timer::AckTimer;

/// A deadline is met within one sweep of its time, and a change is seen within one sweep
/// plus the registered inputs.
const SLACK: u64 = 2 * 64 + 4;

/// IBTA Vol 1 Table 45, the RNR NAK timer field: code → µs.
const RNR_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840, 5_120, 7_680,
    10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
];

/// Cycles of the 250 MHz clock in `us` µs.
fn cycles_of_us(us: u64) -> u64 {
    us * 250
}

/// The local ACK timeout of TIMEOUT `t` in cycles: 4.096 µs × 2^t at 250 MHz.
fn period(t: u64) -> u64 {
    4096 * (1 << t) / 4
}

/// What the block wrote to the timeout FIFO: (cycle, QPN, an RNR wait's end).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fired {
    at: u64,
    qpn: u64,
    rnr: bool,
}

struct Tb {
    dut: Dut,
    fired: Vec<Fired>,
    /// Inputs that last one cycle, cleared after each tick.
    pulses: Vec<&'static str>,
    full: bool,
}

impl Tb {
    /// Built, reset, and every QP's context written once (state RESET: no timer), as the
    /// driver does before a QP is used.
    fn new() -> Tb {
        let mut dut = Dut::build::<AckTimer>("ack_timer").expect("build AckTimer");
        dut.reset(2);
        let mut tb = Tb { dut, fired: Vec::new(), pulses: Vec::new(), full: false };
        for q in 0..64 {
            tb.write_qp(q, qp_state::RESET, 0);
            tb.tick();
        }
        tb.run(200);
        tb.fired.clear();
        tb
    }

    fn now(&self) -> u64 {
        self.dut.cycles()
    }

    fn pulse(&mut self, port: &'static str) {
        self.dut.set_bit(port, true);
        self.pulses.push(port);
    }

    /// A WRITE_QP context command for `q` with `state` and TIMEOUT `t` (this cycle).
    fn write_qp(&mut self, q: u64, state: u8, t: u64) {
        let mut rec = [0u8; 64];
        qp_context::STATE.put(&mut rec, u64::from(state));
        qp_context::TIMEOUT.put(&mut rec, t);
        self.dut.set("cmd_op", u64::from(cmd_op::WRITE_QP));
        self.dut.set("cmd_index", q);
        self.dut.set_wide("cmd_record", &rec);
        self.pulse("cmd_fire");
    }

    /// The scheduler's count of WQEs sent for `q` (this cycle).
    fn sent(&mut self, q: u64, n: u64) {
        self.dut.set("sent_addr", q);
        self.dut.set("sent_data", n & 0xFFFF);
        self.pulse("sent_we");
    }

    /// The completer's retired count and READ progress byte for `q` (this cycle).
    fn acked(&mut self, q: u64, n: u64, progress: u64) {
        self.dut.set("acked_addr", q);
        self.dut.set("acked_data", (n & 0xFFFF) | (progress & 0xFF) << 16);
        self.pulse("acked_we");
    }

    fn rnr_arm(&mut self, q: u64, code: u64) {
        self.dut.set("rnr_qpn", q);
        self.dut.set("rnr_code", code);
        self.pulse("rnr_arm");
    }

    fn rw_set(&mut self, q: u64) {
        self.dut.set("rw_set_qpn", q);
        self.pulse("rw_set");
    }

    fn rw_clr(&mut self, q: u64) {
        self.dut.set("rw_clr_qpn", q);
        self.pulse("rw_clr");
    }

    fn tx(&mut self, q: Option<u64>) {
        self.dut.set_bit("tx_active", q.is_some());
        self.dut.set("tx_qpn", q.unwrap_or(0));
    }

    /// One cycle: what the block writes (nothing while `full`), then the clock edge.
    fn tick(&mut self) {
        self.dut.set_bit("to_full", self.full);
        self.dut.eval();
        if self.dut.get_bit("to_write") {
            assert!(!self.full, "to_write while to_full at cycle {}", self.now());
            let v = self.dut.get("to_qpn");
            assert_eq!(v & 0x40, 0, "to_qpn {v:#x}: bit 6 is never set");
            self.fired.push(Fired { at: self.now(), qpn: v & 0x3F, rnr: v & 0x80 != 0 });
        }
        self.dut.tick();
        for p in self.pulses.drain(..) {
            self.dut.set_bit(p, false);
        }
    }

    fn run(&mut self, n: u64) {
        for _ in 0..n {
            self.tick();
        }
    }

    /// The timeouts (not RNR ends) of `q` so far.
    fn timeouts(&self, q: u64) -> Vec<u64> {
        self.fired.iter().filter(|f| f.qpn == q && !f.rnr).map(|f| f.at).collect()
    }

    fn rnr_ends(&self, q: u64) -> Vec<u64> {
        self.fired.iter().filter(|f| f.qpn == q && f.rnr).map(|f| f.at).collect()
    }

    /// Puts `q` in RTS with TIMEOUT `t`; a sweep later (the NIC's first request leaves more
    /// than 64 cycles after the doorbell) `sent` WQEs sent, then `acked` retired. Returns the
    /// cycle of its last change.
    fn start(&mut self, q: u64, t: u64, sent: u64, acked: u64) -> u64 {
        self.write_qp(q, qp_state::RTS, t);
        self.run(70);
        self.sent(q, sent);
        self.tick();
        self.acked(q, acked, 0);
        let at = self.now();
        self.tick();
        at
    }
}

fn within(at: u64, due: u64, what: &str) {
    assert!(at + 64 >= due && at <= due + SLACK, "{what}: at cycle {at}, due at {due} (window -64..{SLACK})");
}

#[test]
fn a_stalled_qp_times_out_once_per_timeout() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC7_0001);
    // (qpn, TIMEOUT, cycle of the last change) of stalled QPs in RTS.
    let mut stalled = Vec::new();
    let mut qpns: Vec<u64> = (0..64).collect();
    for i in 0..6 {
        let q = qpns.swap_remove(rng.range(0, qpns.len() as u64 - 1) as usize);
        let t = 1 + i % 3;
        let n = rng.range(2, 9);
        // (0 retired: the first send of an idle QP.)
        let at = tb.start(q, t, n, rng.range(0, n - 1));
        stalled.push((q, t, at));
        tb.run(rng.range(0, 300));
    }
    // Never due: idle (all retired), TIMEOUT 0 (disabled), and stalled but not in RTS.
    let idle = qpns.pop().unwrap();
    tb.start(idle, 1, 5, 5);
    let disabled = qpns.pop().unwrap();
    tb.start(disabled, 0, 5, 1);
    let rtr = qpns.pop().unwrap();
    tb.write_qp(rtr, qp_state::RTR, 1);
    tb.tick();
    tb.sent(rtr, 4);
    tb.tick();
    let end = tb.now() + 40_000;
    while tb.now() < end {
        tb.tick();
    }
    for &(q, t, at) in &stalled {
        let got = tb.timeouts(q);
        let p = period(t);
        assert!(got.len() as u64 >= (end - at) / (p + 64) - 1, "QP {q} (TIMEOUT {t}): {} timeouts", got.len());
        within(got[0], at + p, &format!("QP {q} (TIMEOUT {t}), first timeout"));
        for w in got.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap >= p && gap <= p + 64, "QP {q} (TIMEOUT {t}): timeouts {gap} cycles apart, period {p}");
        }
    }
    for q in [idle, disabled, rtr] {
        assert!(tb.timeouts(q).is_empty(), "QP {q} timed out: {:?}", tb.timeouts(q));
    }
    assert!(tb.fired.iter().all(|f| !f.rnr), "an RNR end without an RNR wait");
}

#[test]
fn progress_sending_and_an_owed_resend_hold_the_timer() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC7_0002);
    let (q, t) = (rng.range(0, 63), 1);
    let p = period(t);
    let mut retired = 0;
    tb.start(q, t, 100, retired);
    // Held by progress of each kind in turn, each well within a period of the last.
    let mut last = tb.now();
    for k in 0..24u64 {
        tb.run(rng.range(100, p - 3 * 64));
        match k % 4 {
            0 => {
                retired += 1;
                tb.acked(q, retired, k);
            }
            1 => tb.acked(q, retired, k), // only the READ progress byte moved
            2 => {
                // The scheduler sends the QP's packets for a while (a long message).
                tb.tx(Some(q));
                tb.run(rng.range(p, 2 * p));
                tb.tx(None);
            }
            _ => {
                // A go-back-N request waits for the scheduler longer than a period.
                tb.rw_set(q);
                tb.tick();
                tb.run(rng.range(p, 2 * p));
                tb.rw_clr(q);
            }
        }
        last = tb.now();
        tb.tick();
        assert!(tb.timeouts(q).is_empty(), "step {k}: timed out at {:?}", tb.timeouts(q));
    }
    // Another QP's sending does not hold this one.
    let other = (q + 1) % 64;
    tb.tx(Some(other));
    tb.run(p + SLACK + 1);
    tb.tx(None);
    let got = tb.timeouts(q);
    assert_eq!(got.len(), 1, "{got:?}");
    within(got[0], last + p, "the timeout after the last hold");
}

#[test]
fn an_rnr_wait_ends_after_its_timer_code() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC7_0003);
    // Codes 1..=10 on ten stalled QPs with TIMEOUT 1, which would time out every 2048 cycles.
    let mut armed = Vec::new();
    for code in 1..=10u64 {
        let q = code * 5 + rng.range(0, 4);
        tb.start(q, 1, 9, 3);
        tb.run(rng.range(0, 200));
        tb.rnr_arm(q, code);
        armed.push((q, code, tb.now()));
        tb.tick();
    }
    tb.run(cycles_of_us(RNR_US[10]) + 2 * SLACK);
    for &(q, code, at) in &armed {
        let wait = cycles_of_us(RNR_US[code as usize]);
        let ends = tb.rnr_ends(q);
        assert_eq!(ends.len(), 1, "QP {q} code {code}: RNR ends {ends:?}");
        within(ends[0], at + wait, &format!("QP {q}, RNR code {code}"));
        // Held during the wait; after it the ACK timer runs again from the RNR end.
        let during: Vec<u64> = tb.timeouts(q).into_iter().filter(|&c| c > at && c <= ends[0]).collect();
        assert!(during.is_empty(), "QP {q} code {code}: timed out during its RNR wait at {during:?}");
        if let Some(&next) = tb.timeouts(q).iter().find(|&&c| c > ends[0]) {
            assert!(next >= ends[0] + period(1), "QP {q}: timed out {} cycles after its RNR end", next - ends[0]);
        }
    }
}

#[test]
fn a_context_write_ends_the_old_connections_rnr_wait() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC7_0004);
    for round in 0..6u64 {
        let q = rng.range(0, 63);
        // The old connection: stalled, then an RNR NAK (code 2..5: 20 to 60 µs).
        tb.start(q, 1, 7, 2);
        tb.run(rng.range(0, 100));
        let code = rng.range(2, 5);
        tb.rnr_arm(q, code);
        let armed = tb.now();
        tb.tick();
        // Re-created (RESET, then a new connection in RTS with TIMEOUT 2) before it ends;
        // the new connection has sent nothing yet.
        tb.run(rng.range(1, cycles_of_us(RNR_US[code as usize]) - 200));
        tb.write_qp(q, qp_state::RESET, 0);
        tb.tick();
        tb.sent(q, 0);
        tb.tick();
        tb.acked(q, 0, 0);
        tb.tick();
        tb.write_qp(q, qp_state::RTS, 2);
        tb.tick();
        tb.run(cycles_of_us(RNR_US[code as usize]) + SLACK);
        assert!(
            tb.rnr_ends(q).iter().all(|&c| c < armed),
            "round {round}: the old connection's RNR wait (code {code}) ended on QP {q}: {:?}",
            tb.rnr_ends(q)
        );
        let before = tb.timeouts(q).len();
        // The new connection stalls: its own timeout, from its own last change.
        tb.sent(q, 3);
        tb.tick();
        tb.acked(q, 1, 0);
        let at = tb.now();
        tb.tick();
        tb.run(period(2) + SLACK + 1);
        let got: Vec<u64> = tb.timeouts(q).into_iter().skip(before).collect();
        assert_eq!(got.len(), 1, "round {round}: QP {q}'s new connection: {got:?}");
        within(got[0], at + period(2), &format!("round {round}: the new connection's timeout"));
        tb.write_qp(q, qp_state::RESET, 0);
        tb.tick();
    }
}

#[test]
fn a_full_timeout_fifo_delays_but_never_loses_a_timeout() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0xAC7_0005);
    let a = rng.range(0, 31);
    let b = 32 + rng.range(0, 31);
    let at = tb.start(a, 1, 4, 1);
    tb.start(b, 3, 4, 1);
    tb.rnr_arm(b, 1);
    let armed = tb.now();
    tb.tick();
    // Full from before either is due until well after.
    tb.full = true;
    tb.run(period(1) + 3000);
    assert!(tb.fired.is_empty(), "{:?}", tb.fired);
    tb.full = false;
    let freed = tb.now();
    tb.run(SLACK);
    let ta = tb.timeouts(a);
    assert_eq!(ta.len(), 1, "{ta:?}");
    within(ta[0], freed, "QP a's timeout once the FIFO has room");
    assert!(armed + cycles_of_us(RNR_US[1]) < freed && at + period(1) < freed);
    let rb = tb.rnr_ends(b);
    assert_eq!(rb.len(), 1, "{rb:?}");
    within(rb[0], freed, "QP b's RNR end once the FIFO has room");
    assert!(tb.timeouts(b).is_empty(), "QP b timed out: {:?}", tb.timeouts(b));
}
