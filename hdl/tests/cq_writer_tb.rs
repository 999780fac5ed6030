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
//! - `armed_cqs_raise_one_event_per_arm`: CQ arming (rnic_contract::regs::CQ_ARM). An
//!   unarmed CQ's CQEs carry no event; an arm with every CQE consumed marks exactly the next
//!   CQE of that CQ (`ev`, with the CQ's vector) and no later one, nor another CQ's; an arm
//!   whose consumer index is behind raises `ev_valid` at once and marks nothing; solicited-only
//!   skips CQEs without SE and fires on one with SE or an error status, and at once only for an
//!   unconsumed solicited CQE; arming for any CQE widens a solicited-only arm; WRITE_CQ disarms.
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
    while sent < total {
        cycle += 1;
        assert!(cycle < 100 * total as u64, "stuck after {sent} jobs");
        let draining = !recreated && sent >= total / 2;
        if draining && input.is_empty() && taken.is_empty() {
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
            }
        }
        if !draining && input.len() < 4 && tb.rng.chance(3, 4) {
            let j = job(&mut tb.rng, cqs.len());
            cqes += usize::from(j.1 == 1);
            input.push_back(j);
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
        let offered = !tb.dut.get_bit("out_empty");
        let read = tb.dut.get_bit("in_read");
        let out = tb.dut.get_wide("out_job");
        // The input is taken only into an empty output register, never on the strength of a
        // read in the same cycle (the consumer's decision must not reach `in_read`).
        assert!(!(read && offered), "cycle {cycle}: in_read while the output register is full");
        tb.dut.tick();
        if offered && take {
            let head = taken.pop_front().expect("a job offered that was never taken in");
            check(&mut cqs, &head, &out, off_addr, owner_bit, sent);
            sent += 1;
        }
        if read {
            assert!(presented, "cycle {cycle}: input popped while empty");
            taken.push_back(input.pop_front().unwrap());
            presented = false;
        }
    }
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
    tb.write_cq_vec(a, &Cq { base: 0x1000, log_size: 4, n: 0 }, 7);
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
