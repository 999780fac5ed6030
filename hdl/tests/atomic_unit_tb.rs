//! `AtomicUnit` in Verilator against a model of host memory and of the RX writer's barriers.
//!
//! The test plays the RX engine (pushing jobs, each with one barrier), the RX writer (a
//! `bar_done` pulse per barrier and a `res_done` pulse per result job, after random delays,
//! in order), the DMA read path (AXI ID 3 reads answered from a memory model after a random
//! latency) and the write-job FIFO (result jobs granted at random, applied to the memory model
//! when granted).
//!
//! - `jobs_wait_for_their_barriers_and_leave_in_order`: 300 random jobs (READs, owed ACKs,
//!   replayed and fresh atomics) on 8 QPs. No job reaches the READ responder before its own
//!   barrier pulse; jobs leave in the order they came; a READ or ACK job leaves unchanged.
//! - `atomics_match_a_memory_model`: 400 FETCH ADDs and COMPARE SWAPs (half of them matching)
//!   on 6 words shared by 4 QPs. Each ATOMIC ACKNOWLEDGE carries the word's value just before
//!   it in the model (so each atomic saw every earlier one), the memory ends as the model's,
//!   no ACKNOWLEDGE leaves before its result write was acknowledged (`res_done`), a failed
//!   compare writes nothing, and the replay table holds each atomic's PSN and original value
//!   at `qpn << 4 | slot`.
//! - `a_new_words_read_does_not_wait_for_the_last_words_writes`: runs of 8 FETCH ADDs on
//!   two words in turn (8 QPs' streams, one word each, as `rnic perf atomic --qps 8`): the
//!   read for the next word goes out while the last word's result writes are outstanding,
//!   and every ACKNOWLEDGE still carries the value before it.
//! - `a_reset_drops_the_old_connections_jobs`: a QP put in RESET while its READ and atomic
//!   wait for their barriers: neither is answered and the atomic's word is never read or
//!   written; another QP's job queued behind them is answered.
mod harness;

use harness::{pack_fields, Dut, Rng};
use rnic_contract::Field;
use rnic_hdl::atomic_unit::AtomicUnit;
use rnic_hdl::records::{ReadRespJob, RespItem, WriteJob};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug, PartialEq)]
struct Job {
    qpn: u64,
    psn: u64,
    iova: u64,
    len: u64,
    atomic: bool,
    ack: bool,
    orig: u64,
    /// An atomic to execute (not a replay).
    exec: bool,
    fadd: bool,
    cmp: u64,
    swp: u64,
    slot: u64,
}

/// A field of a record read from a port (the contract's bit-field reader).
fn field(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

fn encode(j: &Job) -> Vec<u8> {
    let r = ReadRespJob::default();
    let i = RespItem::default();
    let rr = i.get_my_offset_rr();
    pack_fields(
        512,
        &[
            (rr + r.get_my_offset_qpn(), 6, j.qpn),
            (rr + r.get_my_offset_psn(), 24, j.psn),
            (rr + r.get_my_offset_iova(), 64, j.iova),
            (rr + r.get_my_offset_len(), 32, j.len),
            (rr + r.get_my_offset_atomic(), 1, u64::from(j.atomic)),
            (rr + r.get_my_offset_ack(), 1, u64::from(j.ack)),
            (rr + r.get_my_offset_orig(), 64, j.orig),
            (rr + r.get_my_offset_fresh(), 1, u64::from(j.exec)),
            (i.get_my_offset_exec(), 1, u64::from(j.exec)),
            (i.get_my_offset_fadd(), 1, u64::from(j.fadd)),
            (i.get_my_offset_cmp(), 64, j.cmp),
            (i.get_my_offset_swp(), 64, j.swp),
            (i.get_my_offset_slot(), 4, j.slot),
        ],
    )
}

/// What the READ responder receives: (qpn, psn, iova, len, atomic, ack, orig).
type Out = (u64, u64, u64, u64, bool, bool, u64);

fn out_of(j: &Job) -> Out {
    (j.qpn, j.psn, j.iova, j.len, j.atomic, j.ack, j.orig)
}

fn decode_rr(b: &[u8]) -> Out {
    let r = ReadRespJob::default();
    (
        field(b, r.get_my_offset_qpn(), 6),
        field(b, r.get_my_offset_psn(), 24),
        field(b, r.get_my_offset_iova(), 64),
        field(b, r.get_my_offset_len(), 32),
        field(b, r.get_my_offset_atomic(), 1) == 1,
        field(b, r.get_my_offset_ack(), 1) == 1,
        field(b, r.get_my_offset_orig(), 64),
    )
}

/// A result job as the write-job FIFO takes it: (kind, addr, value, res).
fn decode_job(b: &[u8]) -> (u64, u64, u64, bool) {
    let w = WriteJob::default();
    (
        field(b, w.get_my_offset_kind(), 2),
        field(b, w.get_my_offset_addr(), 64),
        field(b, w.get_my_offset_cqe(), 64),
        field(b, w.get_my_offset_res(), 1) == 1,
    )
}

/// The environment around the unit.
struct Tb {
    dut: Dut,
    rng: Rng,
    /// Jobs still to push, each with its barrier.
    input: VecDeque<Job>,
    /// Barriers pushed and not yet pulsed (the cycle each may be pulsed from), in order.
    bars: VecDeque<u64>,
    /// Result jobs granted and not yet pulsed: the cycle each may be pulsed from and the
    /// write it carries, which reaches `mem` only with its pulse (the latest a host may make a
    /// posted write visible), so a read made while a result is outstanding sees the old value.
    ress: VecDeque<(u64, Option<(u64, u64)>)>,
    bars_given: usize,
    ress_given: usize,
    /// Outstanding read: (cycle the beat is ready, address).
    read: Option<(u64, u64)>,
    /// 8-byte words of host memory by address.
    mem: HashMap<u64, u64>,
    reads: Vec<u64>,
    /// Reads issued while result writes (all to one other word) were outstanding.
    reads_past_writes: usize,
    writes: Vec<(u64, u64)>,
    /// Jobs answered, with the number of barrier and result pulses given before each.
    out: Vec<(Out, usize, usize)>,
    clear: Option<u64>,
    now: u64,
}

impl Tb {
    fn new(seed: u64, input: Vec<Job>, mem: HashMap<u64, u64>) -> Tb {
        let mut dut = Dut::build::<AtomicUnit>("atomic_unit").expect("build AtomicUnit");
        dut.reset(2);
        Tb {
            dut,
            rng: Rng::from_env(seed),
            input: input.into(),
            bars: VecDeque::new(),
            ress: VecDeque::new(),
            bars_given: 0,
            ress_given: 0,
            read: None,
            mem,
            reads: Vec::new(),
            reads_past_writes: 0,
            writes: Vec::new(),
            out: Vec::new(),
            clear: None,
            now: 0,
        }
    }

    fn cycle(&mut self) {
        let now = self.now;
        let push = !self.input.is_empty() && self.rng.chance(1, 2);
        let d = &mut self.dut;
        d.set_bit("in_write", false);
        if push && !d.get_bit("in_full") {
            let j = self.input.pop_front().expect("a job to push");
            d.set_wide("in_item", &encode(&j));
            d.set_bit("in_write", true);
            self.bars.push_back(now + self.rng.range(1, 40));
        }
        let bar = self.bars.front().is_some_and(|&t| t <= now) && self.rng.chance(1, 2);
        if bar {
            self.bars.pop_front();
            self.bars_given += 1;
        }
        d.set_bit("bar_done", bar);
        let res = self.ress.front().is_some_and(|&(t, _)| t <= now);
        if res {
            if let Some((_, Some((addr, value)))) = self.ress.pop_front() {
                self.mem.insert(addr, value);
            }
            self.ress_given += 1;
        }
        d.set_bit("res_done", res);
        d.set_bit("clear", self.clear.is_some());
        d.set("clear_qpn", self.clear.take().unwrap_or(0));
        // The read answer.
        let beat = self.read.filter(|&(t, _)| t <= now).map(|(_, a)| a);
        d.set_bit("r_valid", beat.is_some());
        let mut data = vec![0u8; 64];
        if let Some(a) = beat {
            for w in 0..8 {
                let v = self.mem.get(&(a + 8 * w)).copied().unwrap_or(0);
                data[8 * w as usize..8 * w as usize + 8].copy_from_slice(&v.to_le_bytes());
            }
            self.read = None;
        }
        d.set_wide("r_data", &data);
        let ar_ready = self.read.is_none() && self.rng.chance(2, 3);
        d.set_bit("ar_ready", ar_ready);
        let grant = self.rng.chance(1, 2);
        d.set_bit("job_grant", grant);
        let rr_full = self.rng.chance(1, 4);
        d.set_bit("rr_full", rr_full);
        d.eval();
        if d.get_bit("ar_valid") && ar_ready {
            let a = d.get("ar_addr");
            assert_eq!(a % 64, 0, "an atomic's read is one aligned beat");
            // Only the previous atomic's word may have result writes outstanding (then the
            // read is for another word: the ACKNOWLEDGE values check that).
            let mut words: Vec<u64> = self.ress.iter().filter_map(|(_, w)| w.map(|(a, _)| a)).collect();
            words.sort_unstable();
            words.dedup();
            assert!(words.len() <= 1, "cycle {now}: a read issued while writes to {words:x?} are outstanding");
            self.reads_past_writes += usize::from(!self.ress.is_empty());
            self.reads.push(a);
            self.read = Some((now + self.rng.range(2, 70), a));
        }
        if d.get_bit("job_valid") && grant {
            let (kind, addr, value, res_flag) = decode_job(&d.get_wide("job"));
            assert!(res_flag, "a result job carries the res barrier");
            assert!(kind == 3 || kind == 2, "a result job writes 8 bytes or nothing (kind {kind})");
            let write = (kind == 3).then_some((addr, value));
            if let Some(w) = write {
                self.writes.push(w);
            }
            self.ress.push_back((now + self.rng.range(1, 40), write));
        }
        if d.get_bit("rr_write") {
            assert!(!rr_full, "cycle {now}: a job pushed into a full READ responder FIFO");
            let o = decode_rr(&d.get_wide("rr_data"));
            self.out.push((o, self.bars_given, self.ress_given));
        }
        d.tick();
        self.now += 1;
    }

    fn run_until(&mut self, n: usize, limit: u64) {
        while self.out.len() < n {
            assert!(self.now < limit, "only {} of {n} jobs answered in {limit} cycles", self.out.len());
            self.cycle();
        }
        for _ in 0..200 {
            self.cycle();
        }
    }
}

fn read_job(rng: &mut Rng, qpn: u64, psn: u64) -> Job {
    let ack = rng.chance(1, 4);
    Job {
        qpn,
        psn,
        iova: if ack { 0 } else { rng.next_u64() >> 8 },
        len: if ack { 0 } else { rng.range(0, 20_000) },
        atomic: false,
        ack,
        orig: if ack { rng.range(0, 0x7F) } else { 0 },
        exec: false,
        fadd: false,
        cmp: 0,
        swp: 0,
        slot: 0,
    }
}

/// What the unit must do with a job of `jobs_wait_for_their_barriers_and_leave_in_order`.
#[derive(Clone, Copy, Debug)]
enum Fate {
    /// Answered unchanged (a READ or an owed ACK).
    Plain,
    /// Executed: answered with its word's value.
    Exec,
    /// A duplicate of the atomic at this index, one of its QP's 16 newest: answered with that
    /// atomic's original value.
    Replay(usize),
    /// A duplicate of nothing in the replay table (never executed, or 16 or more atomics
    /// ago): dropped.
    Lost,
}

#[test]
fn jobs_wait_for_their_barriers_and_leave_in_order() {
    let mut rng = Rng::from_env(0xA70_0001);
    let mut slots = [0u64; 8];
    // Per QP, the executed atomics by slot: (job index, PSN), and how many were executed.
    let mut table: Vec<Vec<Option<(usize, u64)>>> = vec![vec![None; 16]; 8];
    let mut execs: Vec<Vec<usize>> = vec![Vec::new(); 8];
    let mut fates = Vec::new();
    let jobs: Vec<Job> = (0..300)
        .map(|k| {
            let q = rng.range(0, 7);
            let psn = k as u64 * 3;
            if rng.chance(1, 4) {
                // An atomic: fresh (executed) or a duplicate, of one of the QP's executed
                // atomics (its newest 16 are found, older ones not) or of nothing.
                let exec = rng.chance(1, 2);
                let slot = slots[q as usize];
                let mut dup_psn = psn + 1;
                let mut fate = Fate::Lost;
                if exec {
                    slots[q as usize] = (slot + 1) % 16;
                    table[q as usize][slot as usize] = Some((k, psn));
                    execs[q as usize].push(k);
                    fate = Fate::Exec;
                } else if !execs[q as usize].is_empty() && rng.chance(3, 4) {
                    let e = &execs[q as usize];
                    let m = e[e.len() - 1 - rng.range(0, (e.len() as u64 - 1).min(20)) as usize];
                    dup_psn = m as u64 * 3;
                    if table[q as usize].contains(&Some((m, dup_psn))) {
                        fate = Fate::Replay(m);
                    }
                }
                fates.push(fate);
                Job {
                    qpn: q,
                    psn: if exec { psn } else { dup_psn },
                    iova: 0x1000 + 8 * rng.range(0, 63),
                    len: 0,
                    atomic: true,
                    ack: false,
                    orig: 0,
                    exec,
                    fadd: rng.chance(1, 2),
                    cmp: rng.next_u64(),
                    swp: rng.next_u64(),
                    slot,
                }
            } else {
                fates.push(Fate::Plain);
                read_job(&mut rng, q, psn)
            }
        })
        .collect();
    let answered = fates.iter().filter(|f| !matches!(f, Fate::Lost)).count();
    let replays = fates.iter().filter(|f| matches!(f, Fate::Replay(_))).count();
    let lost = jobs.len() - answered;
    assert!(replays > 10 && lost > 5, "{replays} replays and {lost} lost duplicates exercised");
    let mem: HashMap<u64, u64> = (0..64).map(|w| (0x1000 + 8 * w, rng.next_u64())).collect();
    let mut tb = Tb::new(0xA70_0002, jobs.clone(), mem);
    tb.run_until(answered, 400_000);
    for _ in 0..500 {
        tb.cycle();
    }
    assert_eq!(tb.out.len(), answered, "every job but the lost duplicates answered exactly once");
    // Each job's answer, by job index (the output cursor skips the dropped duplicates).
    let mut at: Vec<Option<usize>> = vec![None; jobs.len()];
    let mut n = 0;
    for (k, f) in fates.iter().enumerate() {
        if !matches!(f, Fate::Lost) {
            at[k] = Some(n);
            n += 1;
        }
    }
    for (k, (j, f)) in jobs.iter().zip(&fates).enumerate() {
        let Some(i) = at[k] else { continue };
        let (o, bars, _) = &tb.out[i];
        assert!(*bars > k, "job {k} ({j:?}) left after only {bars} barrier pulses");
        match *f {
            Fate::Exec => {
                assert_eq!((o.0, o.1, o.4), (j.qpn, j.psn, true), "job {k}: the atomic's ACKNOWLEDGE in its place")
            }
            Fate::Replay(m) => {
                let orig = tb.out[at[m].expect("the original was answered")].0 .6;
                assert_eq!(*o, (j.qpn, j.psn, j.iova, 0, true, false, orig), "job {k}: the duplicate of job {m}");
            }
            _ => assert_eq!(*o, out_of(j), "job {k} left changed or out of order"),
        }
    }
}

#[test]
fn atomics_match_a_memory_model() {
    let mut rng = Rng::from_env(0xA70_0003);
    let words: Vec<u64> = (0..6).map(|k| 0x2_0000 + 0x40 * (k / 2) + 8 * (k % 2) * 3).collect();
    let mem: HashMap<u64, u64> = words.iter().map(|&a| (a, rng.next_u64() >> 1)).collect();
    let mut model = mem.clone();
    let mut slots = [0u64; 4];
    let mut want: Vec<(Job, u64)> = Vec::new();
    let jobs: Vec<Job> = (0..400)
        .map(|k| {
            let q = rng.range(0, 3);
            let a = words[rng.range(0, 5) as usize];
            let fadd = rng.chance(1, 2);
            let cur = model[&a];
            let cmp = if rng.chance(1, 2) { cur } else { rng.next_u64() };
            let swp = if fadd && rng.chance(1, 8) { u64::MAX - rng.range(0, 3) } else { rng.next_u64() };
            let new = if fadd {
                cur.wrapping_add(swp)
            } else if cur == cmp {
                swp
            } else {
                cur
            };
            model.insert(a, new);
            let slot = slots[q as usize];
            slots[q as usize] = (slot + 1) % 16;
            let j = Job {
                qpn: q,
                psn: 100 + k as u64,
                iova: a,
                len: 0,
                atomic: true,
                ack: false,
                orig: 0,
                exec: true,
                fadd,
                cmp,
                swp,
                slot,
            };
            want.push((j.clone(), cur));
            j
        })
        .collect();
    // Then a duplicate of each QP's 16 newest atomics (answered from the replay table with the
    // value the atomic returned, not executed again) and of its 17th newest (dropped).
    let mut dups: Vec<(Job, Option<u64>)> = Vec::new();
    for q in 0..4u64 {
        let mine: Vec<&(Job, u64)> = want.iter().filter(|(j, _)| j.qpn == q).collect();
        for (back, (j, orig)) in mine.iter().rev().take(17).enumerate() {
            let d = Job { exec: false, slot: slots[q as usize], ..j.clone() };
            dups.push((d, (back < 16).then_some(*orig)));
        }
    }
    let mut input = jobs.clone();
    input.extend(dups.iter().map(|(d, _)| d.clone()));
    let found: Vec<(Job, u64)> = dups.iter().filter_map(|(d, o)| o.map(|o| (d.clone(), o))).collect();
    let mut tb = Tb::new(0xA70_0004, input, mem);
    tb.run_until(jobs.len() + found.len(), 800_000);
    for _ in 0..500 {
        tb.cycle();
    }
    assert_eq!(tb.out.len(), jobs.len() + found.len(), "the 17th newest atomic's duplicates are dropped");
    for (k, ((j, orig), (o, _, ress))) in want.iter().zip(&tb.out).enumerate() {
        assert_eq!(
            *o,
            (j.qpn, j.psn, j.iova, 0, true, false, *orig),
            "atomic {k} ({}): ACKNOWLEDGE with the value before it",
            if j.fadd { "FETCH ADD" } else { "COMPARE SWAP" }
        );
        assert!(*ress > k, "atomic {k} answered before its result write was acknowledged");
    }
    for a in &words {
        assert_eq!(tb.mem[a], model[a], "word {a:#x} ends as the model's");
    }
    let failed_cas = want.iter().filter(|(j, orig)| !j.fadd && *orig != j.cmp).count();
    assert_eq!(tb.writes.len(), jobs.len() - failed_cas, "a failed compare writes nothing, every other atomic once");
    assert!(failed_cas > 50 && failed_cas < jobs.len() / 2, "both compare outcomes exercised");
    for (k, ((d, orig), (o, _, _))) in found.iter().zip(&tb.out[jobs.len()..]).enumerate() {
        assert_eq!(*o, (d.qpn, d.psn, d.iova, 0, true, false, *orig), "duplicate {k}: the saved original value");
    }
}

/// `n` FETCH ADDs of random addends, atomic `k` on QP and word `at(k)`, over host memory
/// `init` (word address, value): the jobs, the original value each must return, the memory
/// model after them, and the memory before.
fn fetch_add_stream(
    rng: &mut Rng,
    init: &[(u64, u64)],
    n: usize,
    at: impl Fn(usize) -> (u64, u64),
) -> (Vec<Job>, Vec<u64>, HashMap<u64, u64>, HashMap<u64, u64>) {
    let mem: HashMap<u64, u64> = init.iter().copied().collect();
    let mut model = mem.clone();
    let mut want = Vec::new();
    let jobs = (0..n)
        .map(|k| {
            let (qpn, w) = at(k);
            let swp = rng.range(1, 1 << 20);
            let cur = model[&w];
            model.insert(w, cur.wrapping_add(swp));
            want.push(cur);
            Job {
                qpn,
                psn: k as u64,
                iova: w,
                len: 0,
                atomic: true,
                ack: false,
                orig: 0,
                exec: true,
                fadd: true,
                cmp: 0,
                swp,
                slot: k as u64 % 16,
            }
        })
        .collect();
    (jobs, want, model, mem)
}

/// A stream of FETCH ADDs on one word (with a few on a second word in between): each atomic
/// after the first of a run on a word takes its original value from the previous one while
/// that one's result write is outstanding, instead of reading host memory, and every
/// AtomicAckETH still carries the value before it.
#[test]
fn atomics_on_one_word_are_forwarded_not_reread() {
    let mut rng = Rng::from_env(0xA70_0005);
    let (a, b) = (0x4_0008_u64, 0x4_0100_u64);
    let (jobs, want, model, mem) =
        fetch_add_stream(&mut rng, &[(a, 1000), (b, 5)], 200, |k| (1, if k % 50 == 49 { b } else { a }));
    let mut tb = Tb::new(0xA70_0006, jobs.clone(), mem);
    tb.run_until(jobs.len(), 400_000);
    let got: Vec<u64> = tb.out.iter().map(|(o, _, _)| o.6).collect();
    assert_eq!(got, want, "every ACKNOWLEDGE carries the value before it");
    assert_eq!((tb.mem[&a], tb.mem[&b]), (model[&a], model[&b]), "both words end as the model's");
    assert!(
        tb.reads.len() < jobs.len() / 4,
        "{} reads for {} atomics: the runs on one word were not forwarded",
        tb.reads.len(),
        jobs.len()
    );
}

#[test]
fn a_new_words_read_does_not_wait_for_the_last_words_writes() {
    let mut rng = Rng::from_env(0xA70_0007);
    let (a, b) = (0x6_0010_u64, 0x6_0200_u64);
    let (jobs, want, model, mem) = fetch_add_stream(&mut rng, &[(a, 7), (b, 1 << 40)], 96, |k| {
        let other = (k / 8) % 2 == 1;
        (2 + u64::from(other), if other { b } else { a })
    });
    let mut tb = Tb::new(0xA70_0008, jobs.clone(), mem);
    tb.run_until(jobs.len(), 200_000);
    let got: Vec<u64> = tb.out.iter().map(|(o, _, _)| o.6).collect();
    assert_eq!(got, want, "every ACKNOWLEDGE carries the value before it");
    assert_eq!((tb.mem[&a], tb.mem[&b]), (model[&a], model[&b]), "both words end as the model's");
    assert!(
        tb.reads_past_writes >= 4,
        "only {} of {} reads went out past the other word's outstanding writes",
        tb.reads_past_writes,
        tb.reads.len()
    );
}

#[test]
fn a_reset_drops_the_old_connections_jobs() {
    let mut rng = Rng::from_env(0xA70_0005);
    let old_read = read_job(&mut rng, 5, 10);
    let old_atomic = Job {
        qpn: 5,
        psn: 11,
        iova: 0x3000,
        len: 0,
        atomic: true,
        ack: false,
        orig: 0,
        exec: true,
        fadd: true,
        cmp: 0,
        swp: 1,
        slot: 0,
    };
    let other = read_job(&mut rng, 6, 20);
    let mut tb = Tb::new(0xA70_0006, vec![], HashMap::from([(0x3000, 7)]));
    // Queue the three jobs and hold their barriers back.
    for j in [&old_read, &old_atomic, &other] {
        let d = &mut tb.dut;
        d.set_wide("in_item", &encode(j));
        d.set_bit("in_write", true);
        d.set_bit("rr_full", false);
        d.set_bit("job_grant", true);
        d.eval();
        d.tick();
    }
    tb.dut.set_bit("in_write", false);
    tb.clear = Some(5);
    for _ in 0..3 {
        tb.bars.push_back(tb.now + 5);
    }
    tb.run_until(1, 10_000);
    assert_eq!(tb.out.iter().map(|(o, _, _)| *o).collect::<Vec<_>>(), vec![out_of(&other)]);
    assert!(tb.reads.is_empty() && tb.writes.is_empty(), "the reset QP's atomic touched memory");
    assert_eq!(tb.mem[&0x3000], 7);
}
