//! `CqWriter` in Verilator against a model of the CQ rings (rnic_contract::cq_context, cqe).
//!
//! - `cqes_land_on_their_own_cq_in_order`: 8 CQs of random sizes (2..1024 CQEs) and bases; a
//!   stream of random write jobs (payloads, CQEs naming a random CQ in `addr`, 8-byte values,
//!   nothing) through a first-word fall-through input with random gaps, and a consumer that takes
//!   them at random. Every job comes out once, in order; a job that is not a CQE comes out bit
//!   for bit unchanged; the `n`-th CQE of a CQ comes out at `BASE + (n mod size) * 32` with the
//!   owner bit `!(n >> LOG_SIZE) & 1` and every other bit as it went in, over several laps.
//!   Midway, some CQs are written again (`WRITE_CQ`, as a re-created CQ is): their count starts
//!   at 0 again and their new base is used, while the others go on.
//!   `in_read` is never high while the output register is full, whatever `out_read` says
//!   (the RX writer's decision does not reach the write-job FIFO's read address).
//!   The consumer reports its consumer index (CQ_CI) at random moments, and a CQE enters the
//!   input only while its CQ has room by the last index the block took (as a driver's program
//!   that keeps within its CQ): no CQE is ever dropped (`cnt_overrun` never pulses).
//! - `armed_cqs_raise_one_event_per_arm`: CQ arming (rnic_contract::regs::CQ_ARM). An
//!   unarmed CQ's CQEs carry no event; an arm with every CQE consumed marks exactly the next
//!   CQE of that CQ (`ev`, with the CQ's vector) and no later one, nor another CQ's; an arm
//!   whose consumer index is behind raises `ev_valid` at once and marks nothing; solicited-only
//!   skips CQEs without SE and fires on one with SE or an error status, and at once only for an
//!   unconsumed solicited CQE; arming for any CQE widens a solicited-only arm; WRITE_CQ disarms.
//! - `overrun_cqes_are_dropped_counted_and_reported` (rnic_contract::regs::CQ_CI): a CQ of 4
//!   takes 4 CQEs; the 5th leaves as a kind-2 job (nothing written, its ACK and release kept),
//!   pulses `cnt_overrun`, and a CQ_ERR event CQE (QP_NUM the CQ) follows on the event CQ of
//!   `async_cq`, once: later CQEs of the CQ are dropped and counted without another event, even
//!   after a CQ_CI, until WRITE_CQ clears the error. A CQ_CI or an arm's index frees room (no
//!   drop), an arm older than the stored index does not take room back; no event when the
//!   overrun CQ is the event CQ or events are disabled; a full event CQ drops the event.
mod harness;

use harness::{pack_fields, Dut, Rng};
use rnic_contract::cq_context as cqc;
use rnic_hdl::cq_writer::CqWriter;
use rnic_hdl::records::WriteJob;
use std::collections::VecDeque;

#[derive(Clone, Copy)]
struct Cq {
    base: u64,
    log_size: u64,
    /// CQEs placed since its last WRITE_CQ.
    n: u64,
}

struct Tb {
    dut: Dut,
    rng: Rng,
}

impl Tb {
    fn write_cq(&mut self, cqn: u64, cq: &Cq) {
        self.write_cq_vec(cqn, cq, 0);
    }

    fn write_cq_vec(&mut self, cqn: u64, cq: &Cq, vector: u64) {
        let mut r = [0u8; 64];
        cqc::VALID.put(&mut r, 1);
        cqc::VECTOR.put(&mut r, vector);
        cqc::LOG_SIZE.put(&mut r, cq.log_size);
        cqc::BASE.put(&mut r, cq.base);
        self.dut.set("cmd_op", 3);
        self.dut.set("cmd_index", cqn);
        self.dut.set_wide("cmd_record", &r);
        let mut t = 0;
        loop {
            self.dut.eval();
            if self.dut.get_bit("cmd_ready") {
                break;
            }
            self.dut.tick();
            t += 1;
            assert!(t < 20, "cmd_ready never high");
        }
        self.dut.set("cmd_fire", 1);
        self.dut.eval();
        self.dut.tick();
        self.dut.set("cmd_fire", 0);
    }
}

/// A random job as packed bytes, and (kind, CQ) for the model.
fn job(rng: &mut Rng, cqs: usize) -> (Vec<u8>, u64, u64) {
    let w = WriteJob::default();
    let kind = *rng.pick(&[0u64, 1, 1, 2, 3]);
    let cqn = rng.range(0, cqs as u64 - 1);
    let addr = if kind == 1 { cqn } else { rng.next_u64() };
    let mut fields = vec![
        (w.get_my_offset_kind(), 2, kind),
        (w.get_my_offset_need_ack(), 1, u64::from(rng.chance(1, 2))),
        (w.get_my_offset_start(), 10, rng.range(0, 1023)),
        (w.get_my_offset_release(), 8, rng.range(0, 255)),
        (w.get_my_offset_off(), 13, rng.range(0, 8191)),
        (w.get_my_offset_plen(), 13, rng.range(0, 8191)),
        (w.get_my_offset_addr(), 64, addr),
    ];
    for k in 0..8 {
        fields.push((w.get_my_offset_cqe() + 32 * k, 32, u64::from(rng.u32())));
        fields.push((w.get_my_offset_ack() + 32 * k, 32, u64::from(rng.u32())));
    }
    (pack_fields(640, &fields), kind, cqn)
}

fn bit(bytes: &[u8], i: usize) -> bool {
    bytes[i / 8] >> (i % 8) & 1 == 1
}

fn field(bytes: &[u8], off: usize, width: usize) -> u64 {
    (0..width).fold(0, |v, k| v | (u64::from(bit(bytes, off + k)) << k))
}

#[test]
fn cqes_land_on_their_own_cq_in_order() {
    let mut dut = Dut::build::<CqWriter>("cq_writer").expect("build CqWriter");
    dut.set_bit("in_empty", true);
    dut.reset(2);
    let mut tb = Tb { dut, rng: Rng::from_env(0xC0E0_0001) };
    let w = WriteJob::default();
    let (off_cqe, off_addr) = (w.get_my_offset_cqe(), w.get_my_offset_addr());
    let owner_bit = off_cqe + 248;
    let mut cqs: Vec<Cq> = (0..8)
        .map(|i| Cq {
            base: 0x1_0000_0000 + (i << 24) + tb.rng.range(0, 1023) * 32,
            log_size: tb.rng.range(1, 10),
            n: 0,
        })
        .collect();
    for (i, cq) in cqs.clone().iter().enumerate() {
        tb.write_cq(i as u64, cq);
    }
    let mut input: VecDeque<(Vec<u8>, u64, u64)> = VecDeque::new();
    // Jobs the block took from its input, in order, not yet out.
    let mut taken: VecDeque<(Vec<u8>, u64, u64)> = VecDeque::new();
    let mut sent = 0usize;
    let total = 6000usize;
    let mut cqes = 0;
    let mut presented = false;
    let mut recreated = false;
    let mut cycle = 0u64;
    // Per CQ: CQEs put in the input, CQEs out (consumed at once), the index the block took.
    let mut made = [0u64; 8];
    let mut out_n = [0u64; 8];
    let mut ci_taken = [0u64; 8];
    let mut reports: VecDeque<(usize, u64)> = VecDeque::new();
    let mut report_cycle: Option<usize> = None;
    let mut overruns = 0usize;
    while sent < total {
        cycle += 1;
        assert!(cycle < 100 * total as u64, "stuck after {sent} jobs");
        let draining = !recreated && sent >= total / 2;
        // Consumer-index reports: one handed over at a time, when the block is ready.
        tb.dut.set_bit("ci_write", false);
        tb.dut.eval();
        if tb.dut.get_bit("ci_ready") {
            if let Some(&(c, ci)) = reports.front() {
                tb.dut.set("ci_data", (c as u64) << rnic_contract::regs::cq_arm::CQN_SHIFT | ci);
                tb.dut.set_bit("ci_write", true);
                report_cycle = Some(c);
                reports.pop_front();
                ci_taken[c] = ci;
            }
        }
        if draining && input.is_empty() && taken.is_empty() && reports.is_empty() && report_cycle.is_none() {
            // Re-created CQs: 0 and 5 start again at a new base (drained first, as the driver
            // only re-creates a CQ nothing completes to).
            recreated = true;
            tb.dut.set_bit("in_empty", true);
            tb.dut.set_bit("out_read", false);
            tb.dut.eval();
            for i in [0usize, 5] {
                cqs[i] = Cq { base: 0x2_0000_0000 + ((i as u64) << 20), log_size: tb.rng.range(1, 10), n: 0 };
                let cq = cqs[i];
                tb.write_cq(i as u64, &cq);
                (made[i], out_n[i], ci_taken[i]) = (0, 0, 0);
            }
        }
        if !draining && input.len() < 4 && tb.rng.chance(3, 4) {
            let j = job(&mut tb.rng, cqs.len());
            let c = j.2 as usize;
            // A CQE only into a CQ with room by the index the block has (else none this cycle).
            if j.1 != 1 || made[c] - ci_taken[c] < 1 << cqs[c].log_size {
                if j.1 == 1 {
                    made[c] += 1;
                }
                cqes += usize::from(j.1 == 1);
                input.push_back(j);
            }
        }
        // A FIFO's head, once shown, stays until it is read; a new head may come late.
        if !presented && !input.is_empty() && tb.rng.chance(4, 5) {
            presented = true;
        }
        tb.dut.set_bit("in_empty", !presented);
        if let Some(head) = input.front() {
            tb.dut.set_wide("in_job", &head.0);
        }
        let take = tb.rng.chance(2, 3);
        tb.dut.set_bit("out_read", take);
        tb.dut.eval();
        overruns += usize::from(tb.dut.get_bit("cnt_overrun"));
        let offered = !tb.dut.get_bit("out_empty");
        let read = tb.dut.get_bit("in_read");
        let out = tb.dut.get_wide("out_job");
        // The input is taken only into an empty output register, never on the strength of a
        // read in the same cycle (the consumer's decision must not reach `in_read`).
        assert!(!(read && offered), "cycle {cycle}: in_read while the output register is full");
        tb.dut.tick();
        report_cycle = None;
        if offered && take {
            let head = taken.pop_front().expect("a job offered that was never taken in");
            check(&mut cqs, &head, &out, off_addr, owner_bit, sent);
            sent += 1;
            if head.1 == 1 {
                // Consumed; reported now and then (the block's view lags).
                let c = head.2 as usize;
                out_n[c] += 1;
                if tb.rng.chance(1, 3) {
                    reports.push_back((c, out_n[c]));
                }
            }
        }
        if reports.is_empty() && tb.rng.chance(1, 50) {
            // A consumer that catches up on every CQ, so no CQ waits for ever.
            for c in 0..cqs.len() {
                reports.push_back((c, out_n[c]));
            }
        }
        if read {
            assert!(presented, "cycle {cycle}: input popped while empty");
            taken.push_back(input.pop_front().unwrap());
            presented = false;
        }
    }
    assert_eq!(overruns, 0, "CQEs dropped although every CQ had room");
    assert!(cqes > total / 3, "only {cqes} CQEs in the stream");
    assert!(cqs.iter().any(|c| c.n > 2 << c.log_size), "no CQ went round its ring twice");
}

fn check(cqs: &mut [Cq], head: &(Vec<u8>, u64, u64), out: &[u8], off_addr: usize, owner_bit: usize, k: usize) {
    let (job, kind, cqn) = head;
    if *kind != 1 {
        assert_eq!(&out[..80], &job[..80], "job {k} (kind {kind}) changed on its way");
        return;
    }
    let cq = &mut cqs[*cqn as usize];
    let slot = cq.n % (1 << cq.log_size);
    let owner = (cq.n >> cq.log_size) & 1 == 0;
    assert_eq!(field(out, off_addr, 64), cq.base + slot * 32, "job {k}: CQE {} of CQ {cqn} at the wrong slot", cq.n);
    assert_eq!(bit(out, owner_bit), owner, "job {k}: CQE {} of CQ {cqn}: owner bit", cq.n);
    for i in 0..640 {
        if i != owner_bit && !(off_addr..off_addr + 64).contains(&i) {
            assert_eq!(bit(out, i), bit(job, i), "job {k}: CQE bit {i} changed");
        }
    }
    cq.n += 1;
}

const NONE: [u64; 0] = [];

/// Arming: a sequential driver (one job or arm at a time) against the rules of CQ_ARM.
struct ArmTb {
    dut: Dut,
    /// Events raised at once (`ev_valid`), as vectors.
    now: Vec<u64>,
}

impl ArmTb {
    fn step(&mut self) {
        self.dut.eval();
        if self.dut.get_bit("ev_valid") {
            let v = self.dut.get("ev_vector");
            self.now.push(v);
        }
        self.dut.tick();
    }

    /// Passes one CQE of `cqn` (with BTH.SE `se` and `status`) through; returns its event
    /// mark: `Some(vector)` if the job carries `ev`.
    fn cqe(&mut self, cqn: u64, se: bool, status: u64) -> Option<u64> {
        let w = WriteJob::default();
        let job = pack_fields(
            640,
            &[
                (w.get_my_offset_kind(), 2, 1),
                (w.get_my_offset_se(), 1, u64::from(se)),
                (w.get_my_offset_addr(), 64, cqn),
                (w.get_my_offset_cqe() + 160, 8, status),
            ],
        );
        self.dut.set_wide("in_job", &job);
        self.dut.set_bit("in_empty", false);
        self.dut.set_bit("out_read", true);
        let mut taken = false;
        for _ in 0..40 {
            self.dut.eval();
            let read = self.dut.get_bit("in_read");
            let offered = !self.dut.get_bit("out_empty");
            let out = self.dut.get_wide("out_job");
            self.step();
            if read {
                taken = true;
                self.dut.set_bit("in_empty", true);
            }
            if offered {
                assert!(taken, "a job came out before one was taken");
                assert_eq!(field(&out, w.get_my_offset_kind(), 2), 1);
                return (field(&out, w.get_my_offset_ev(), 1) == 1)
                    .then(|| field(&out, w.get_my_offset_ev_vector(), 5));
            }
        }
        panic!("the CQE never came out");
    }

    /// Arms CQ `cqn` with consumer index `ci`; returns the events raised at once in the next
    /// 12 cycles.
    fn arm(&mut self, cqn: u64, ci: u64, solicited: bool) -> Vec<u64> {
        use rnic_contract::regs::cq_arm;
        let word = cqn << cq_arm::CQN_SHIFT | u64::from(solicited) * u64::from(cq_arm::SOLICITED) | ci;
        for _ in 0..20 {
            self.dut.eval();
            if self.dut.get_bit("arm_ready") {
                break;
            }
            self.step();
        }
        self.now.clear();
        self.dut.set("arm_data", word);
        self.dut.set_bit("arm_write", true);
        self.step();
        self.dut.set_bit("arm_write", false);
        for _ in 0..12 {
            self.step();
        }
        std::mem::take(&mut self.now)
    }
}

#[test]
fn armed_cqs_raise_one_event_per_arm() {
    let mut dut = Dut::build::<CqWriter>("cq_writer").expect("build CqWriter");
    dut.set_bit("in_empty", true);
    dut.reset(2);
    let mut tb = Tb { dut, rng: Rng::from_env(0xC0E0_0002) };
    let (a, b) = (2u64, 3u64);
    // (CQ a holds 1024: the load test at the end puts many CQEs in it, never consumed.)
    tb.write_cq_vec(a, &Cq { base: 0x1000, log_size: 10, n: 0 }, 7);
    tb.write_cq_vec(b, &Cq { base: 0x9000, log_size: 4, n: 0 }, 9);
    let mut t = ArmTb { dut: tb.dut, now: Vec::new() };

    // Unarmed: nothing.
    assert_eq!(t.cqe(a, false, 0), None, "an unarmed CQ raises no event");
    assert_eq!(t.cqe(a, true, 0), None);
    // Armed with both CQEs consumed: the next CQE of CQ a, once.
    assert_eq!(t.arm(a, 2, false), NONE, "nothing unconsumed: armed, no event yet");
    assert_eq!(t.cqe(b, false, 0), None, "another CQ's CQE does not fire CQ a's arm");
    assert_eq!(t.cqe(a, false, 0), Some(7), "the next CQE fires on the CQ's vector");
    assert_eq!(t.cqe(a, false, 0), None, "one event per arm");
    assert_eq!(t.cqe(b, false, 0), None);
    // An arm behind the producer index (3 CQEs of a placed, 2 consumed) fires at once.
    assert_eq!(t.arm(a, 2, false), [7], "an unconsumed CQE fires at once");
    assert_eq!(t.cqe(a, false, 0), None, "and the arm is used up");
    // Solicited only: a CQE without SE does not fire; one with SE does.
    assert_eq!(t.arm(a, 4, true), NONE);
    assert_eq!(t.cqe(a, false, 0), None, "solicited-only skips a CQE without SE");
    assert_eq!(t.cqe(a, true, 0), Some(7), "and fires on one with SE");
    // ... and on an error CQE (7 CQEs placed and consumed so far).
    assert_eq!(t.arm(a, 7, true), NONE);
    assert_eq!(t.cqe(a, false, 0), None);
    assert_eq!(t.cqe(a, false, 5), Some(7), "an error CQE is solicited");
    // At once only for an unconsumed solicited CQE: CQE 8 is an error, 9 is not solicited.
    assert_eq!(t.cqe(a, false, 0), None);
    assert_eq!(t.arm(a, 9, true), NONE, "CQE 9 is unconsumed but not solicited");
    assert_eq!(t.cqe(a, false, 0), None, "still armed for solicited only");
    assert_eq!(t.arm(a, 8, true), [7], "CQE 8 (an error) is unconsumed and solicited");
    // Widening: solicited-only then any-CQE (11 CQEs, all consumed).
    assert_eq!(t.arm(a, 11, true), NONE);
    assert_eq!(t.arm(a, 11, false), NONE);
    assert_eq!(t.cqe(a, false, 0), Some(7), "the second arm widened the first");
    // The reverse keeps it wide.
    assert_eq!(t.arm(a, 12, false), NONE);
    assert_eq!(t.arm(a, 12, true), NONE);
    assert_eq!(t.cqe(a, false, 0), Some(7), "solicited-only after any-CQE keeps any-CQE");
    // WRITE_CQ disarms (and restarts the count).
    assert_eq!(t.arm(b, 2, false), NONE);
    let mut tb = Tb { dut: t.dut, rng: Rng::from_env(1) };
    tb.write_cq_vec(b, &Cq { base: 0x9000, log_size: 4, n: 0 }, 9);
    let mut t = ArmTb { dut: tb.dut, now: Vec::new() };
    assert_eq!(t.cqe(b, false, 0), None, "a re-written CQ is not armed");
    assert_eq!(t.arm(b, 0, false), [9], "its count restarted: CQE 0 is unconsumed");

    // Under load arms and CQEs alternate: arms written back to back (each fires at once: CQ b
    // has an unconsumed CQE) while CQEs of CQ a wait at the input; both make progress.
    let w = WriteJob::default();
    let job = pack_fields(640, &[(w.get_my_offset_kind(), 2, 1), (w.get_my_offset_addr(), 64, a)]);
    t.dut.set_wide("in_job", &job);
    t.dut.set_bit("out_read", true);
    t.dut.set("arm_data", b << rnic_contract::regs::cq_arm::CQN_SHIFT);
    t.now.clear();
    let (mut cqes_out, mut arms_in) = (0, 0);
    for _ in 0..200 {
        t.dut.set_bit("in_empty", false);
        t.dut.eval();
        let arm = t.dut.get_bit("arm_ready");
        t.dut.set_bit("arm_write", arm);
        t.dut.eval();
        arms_in += usize::from(arm);
        cqes_out += usize::from(!t.dut.get_bit("out_empty"));
        t.step();
    }
    t.dut.set_bit("arm_write", false);
    t.dut.set_bit("in_empty", true);
    assert!(cqes_out >= 15, "CQEs starved by arms: {cqes_out} in 200 cycles");
    assert!(arms_in >= 15 && t.now.len() >= 15, "arms starved by CQEs: {arms_in} taken, {} events", t.now.len());
    assert!(t.now.iter().all(|&v| v == 9));
}

/// Overruns: a sequential driver that passes one job at a time and collects what comes out.
struct OvTb {
    dut: Dut,
    /// `cnt_overrun` pulses seen.
    drops: usize,
}

impl OvTb {
    fn step(&mut self) {
        self.dut.eval();
        self.drops += usize::from(self.dut.get_bit("cnt_overrun"));
        self.dut.tick();
    }

    /// Passes a CQE of `cqn` (with an ACK to send and 3 buffer beats to release) and returns
    /// every job that came out in the next 40 cycles.
    fn cqe(&mut self, cqn: u64, wr_id: u64) -> Vec<Vec<u8>> {
        let w = WriteJob::default();
        let job = pack_fields(
            640,
            &[
                (w.get_my_offset_kind(), 2, 1),
                (w.get_my_offset_need_ack(), 1, 1),
                (w.get_my_offset_release(), 8, 3),
                (w.get_my_offset_addr(), 64, cqn),
                (w.get_my_offset_cqe(), 64, wr_id),
                (w.get_my_offset_ack(), 64, 0xACC0_0000 + wr_id),
            ],
        );
        self.dut.set_wide("in_job", &job);
        self.dut.set_bit("in_empty", false);
        self.dut.set_bit("out_read", true);
        let mut outs = Vec::new();
        for _ in 0..40 {
            self.dut.eval();
            let read = self.dut.get_bit("in_read");
            if !self.dut.get_bit("out_empty") {
                outs.push(self.dut.get_wide("out_job"));
            }
            self.step();
            if read {
                self.dut.set_bit("in_empty", true);
            }
        }
        assert!(self.dut.get_bit("in_empty"), "the CQE was never taken");
        outs
    }

    fn ci(&mut self, cqn: u64, ci: u64) {
        for _ in 0..20 {
            self.dut.eval();
            if self.dut.get_bit("ci_ready") {
                break;
            }
            self.step();
        }
        assert!(self.dut.get_bit("ci_ready"), "ci_ready stuck low");
        self.dut.set("ci_data", cqn << rnic_contract::regs::cq_arm::CQN_SHIFT | ci);
        self.dut.set_bit("ci_write", true);
        self.step();
        self.dut.set_bit("ci_write", false);
        for _ in 0..8 {
            self.step();
        }
    }

    fn arm(&mut self, cqn: u64, ci: u64) {
        self.dut.set("arm_data", cqn << rnic_contract::regs::cq_arm::CQN_SHIFT | ci);
        self.dut.set_bit("arm_write", true);
        self.step();
        self.dut.set_bit("arm_write", false);
        for _ in 0..12 {
            self.step();
        }
    }

    fn write_cq(self, cqn: u64, base: u64, log_size: u64) -> Self {
        let drops = self.drops;
        let mut tb = Tb { dut: self.dut, rng: Rng::from_env(3) };
        tb.write_cq(cqn, &Cq { base, log_size, n: 0 });
        Self { dut: tb.dut, drops }
    }
}

/// The one job out of `outs`, placed as CQE `n` of the CQ at `base` of `log_size` with
/// `wr_id`.
fn placed(outs: &[Vec<u8>], base: u64, log_size: u64, n: u64, wr_id: u64) {
    let w = WriteJob::default();
    assert_eq!(outs.len(), 1, "one job out for CQE {n}");
    let o = &outs[0];
    assert_eq!(field(o, w.get_my_offset_kind(), 2), 1, "CQE {n} written");
    assert_eq!(field(o, w.get_my_offset_addr(), 64), base + (n % (1 << log_size)) * 32, "CQE {n}: slot");
    assert_eq!(field(o, w.get_my_offset_cqe() + 248, 1), !(n >> log_size) & 1, "CQE {n}: owner");
    assert_eq!(field(o, w.get_my_offset_cqe(), 64), wr_id);
}

/// `o` is the dropped CQE `wr_id`: a kind-2 job (nothing written) keeping its ACK and release.
fn dropped(o: &[u8], wr_id: u64) {
    let w = WriteJob::default();
    assert_eq!(field(o, w.get_my_offset_kind(), 2), 2, "a dropped CQE writes nothing");
    assert_eq!(field(o, w.get_my_offset_need_ack(), 1), 1, "its ACK is still sent");
    assert_eq!(field(o, w.get_my_offset_ack(), 64), 0xACC0_0000 + wr_id);
    assert_eq!(field(o, w.get_my_offset_release(), 8), 3, "its buffer beats are still freed");
    assert_eq!(field(o, w.get_my_offset_ev(), 1), 0);
}

/// `o` is a CQ_ERR event CQE for CQ `of`, placed as CQE `n` of the event CQ at `base`.
fn cq_err_event(o: &[u8], base: u64, log_size: u64, n: u64, of: u64) {
    use rnic_contract::{cqe, verbs};
    let w = WriteJob::default();
    let c = w.get_my_offset_cqe();
    assert_eq!(field(o, w.get_my_offset_kind(), 2), 1, "the event is a CQE");
    assert_eq!(field(o, w.get_my_offset_addr(), 64), base + (n % (1 << log_size)) * 32, "event CQE {n}: slot");
    assert_eq!(field(o, c + cqe::OPCODE.lsb, 8), u64::from(verbs::wc_opcode::ASYNC_EVENT));
    assert_eq!(field(o, c + cqe::STATUS.lsb, 8), u64::from(verbs::event_type::CQ_ERR));
    assert_eq!(field(o, c + cqe::QP_NUM.lsb, 24), of, "QP_NUM names the overrun CQ");
    assert_eq!(field(o, c + cqe::WR_ID.lsb, 64), 0);
    assert_eq!(field(o, c + cqe::OWNER.lsb, 1), !(n >> log_size) & 1, "event CQE {n}: owner");
    assert_eq!(field(o, w.get_my_offset_need_ack(), 1), 0);
    assert_eq!(field(o, w.get_my_offset_release(), 8), 0);
}

#[test]
fn overrun_cqes_are_dropped_counted_and_reported() {
    use rnic_contract::regs::async_event_cq;
    let mut dut = Dut::build::<CqWriter>("cq_writer").expect("build CqWriter");
    dut.set_bit("in_empty", true);
    dut.reset(2);
    let (x, e) = (1u64, 5u64);
    let (xb, eb) = (0x1000u64, 0x8000u64);
    let mut t = OvTb { dut, drops: 0 }.write_cq(x, xb, 2).write_cq(e, eb, 1);
    t.dut.set("async_cq", u64::from(async_event_cq::ENABLE >> 23) | e);
    let mut ev_n = 0;

    // Four fit; the fifth is dropped and counted, and CQ_ERR follows on the event CQ.
    for n in 0..4 {
        placed(&t.cqe(x, n), xb, 2, n, n);
    }
    assert_eq!(t.drops, 0);
    let outs = t.cqe(x, 4);
    assert_eq!(outs.len(), 2, "the dropped job and the event");
    dropped(&outs[0], 4);
    cq_err_event(&outs[1], eb, 1, ev_n, x);
    ev_n += 1;
    assert_eq!(t.drops, 1);
    // In error: dropped and counted, no second event, even once room is reported.
    let outs = t.cqe(x, 5);
    assert_eq!(outs.len(), 1, "no second event for the same error");
    dropped(&outs[0], 5);
    t.ci(x, 4);
    let outs = t.cqe(x, 6);
    assert_eq!(outs.len(), 1);
    dropped(&outs[0], 6);
    assert_eq!(t.drops, 3);

    // WRITE_CQ clears the error: the CQ starts again (CQ_CI and the error with it).
    t = t.write_cq(x, xb, 2);
    for n in 0..4 {
        placed(&t.cqe(x, 10 + n), xb, 2, n, 10 + n);
    }
    // CQ_CI frees room: 2 consumed, 2 more fit (the next lap), the third overruns.
    t.ci(x, 2);
    placed(&t.cqe(x, 14), xb, 2, 4, 14);
    placed(&t.cqe(x, 15), xb, 2, 5, 15);
    assert_eq!(t.drops, 3, "no drop while the reported index leaves room");
    let outs = t.cqe(x, 16);
    assert_eq!(outs.len(), 2);
    dropped(&outs[0], 16);
    cq_err_event(&outs[1], eb, 1, ev_n, x);
    ev_n += 1;
    assert_eq!(t.drops, 4);

    // An arm reports its index too; an arm older than the stored index takes no room back.
    t = t.write_cq(x, xb, 2);
    for n in 0..4 {
        placed(&t.cqe(x, 20 + n), xb, 2, n, 20 + n);
    }
    t.arm(x, 3);
    for n in 4..7 {
        placed(&t.cqe(x, 20 + n), xb, 2, n, 20 + n);
    }
    t.ci(x, 5);
    t.arm(x, 4);
    for n in 7..9 {
        placed(&t.cqe(x, 20 + n), xb, 2, n, 20 + n);
    }
    assert_eq!(t.drops, 4, "arms and CQ_CI left room");

    // The event CQ (2 entries, both used, none consumed) is full: the next overrun's event is
    // dropped and counted too, and the event CQ is in error.
    let outs = t.cqe(x, 29);
    assert_eq!(outs.len(), 1, "the event finds its CQ full");
    dropped(&outs[0], 29);
    assert_eq!(t.drops, 6, "the CQE and its event");
    assert_eq!(ev_n, 2);

    // The overrun CQ is the event CQ: only counted. Events disabled: only counted.
    t = t.write_cq(x, xb, 2);
    t.dut.set("async_cq", u64::from(async_event_cq::ENABLE >> 23) | x);
    for n in 0..4 {
        placed(&t.cqe(x, 30 + n), xb, 2, n, 30 + n);
    }
    let outs = t.cqe(x, 34);
    assert_eq!(outs.len(), 1, "no event on the overrun CQ itself");
    dropped(&outs[0], 34);
    t = t.write_cq(x, xb, 2).write_cq(e, eb, 1);
    t.dut.set("async_cq", e);
    for n in 0..4 {
        placed(&t.cqe(x, 40 + n), xb, 2, n, 40 + n);
    }
    let outs = t.cqe(x, 44);
    assert_eq!(outs.len(), 1, "no event while events are disabled");
    dropped(&outs[0], 44);
    assert_eq!(t.drops, 8);
    // Another CQ is untouched by all this.
    t = t.write_cq(3, 0x20000, 3);
    placed(&t.cqe(3, 50), 0x20000, 3, 0, 50);
}
