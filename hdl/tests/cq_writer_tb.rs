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
        let mut r = [0u8; 64];
        cqc::VALID.put(&mut r, 1);
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
        tb.dut.tick();
        if offered && take {
            let head = taken.pop_front().expect("a job offered that was never taken in");
            check(&mut cqs, &head, &out, off_cqe, off_addr, owner_bit, sent);
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

fn check(
    cqs: &mut [Cq],
    head: &(Vec<u8>, u64, u64),
    out: &[u8],
    off_cqe: usize,
    off_addr: usize,
    owner_bit: usize,
    k: usize,
) {
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
