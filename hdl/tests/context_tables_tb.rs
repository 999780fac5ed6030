//! `ContextTables` in Verilator against a model: one reader's copy of the QP context and key
//! tables (64 entries each), written by `WRITE_QP` / `WRITE_MR` context commands.
//!
//! - `reads_show_the_last_command_for_each_entry`: random commands of every opcode (only
//!   WRITE_QP and WRITE_MR write, and only into their own table; other opcodes and cycles
//!   without `cmd_fire` write nothing) to random entries, and random reads of both tables every
//!   cycle. A read shows the entry addressed the cycle before, as it was before that cycle's
//!   command (a command and a read of one entry in the same cycle: the old value), and the
//!   fields come out where the contract puts them (`rnic_contract::qp_context`,
//!   `rnic_contract::mr_entry`).
mod harness;

use harness::{Dut, Rng};
use rnic_contract::regs::cmd_op;
use rnic_contract::{mr_entry, qp_context};
use rnic_hdl::context_tables::ContextTables;

const QP_BYTES: usize = 448 / 8;
const MR_BYTES: usize = 256 / 8;

#[test]
fn reads_show_the_last_command_for_each_entry() {
    let mut dut = Dut::build::<ContextTables>("context_tables").expect("build ContextTables");
    let mut rng = Rng::from_env(0xC7A8_0001);
    // Fill both tables first, so no read meets an unwritten entry.
    let mut qp = vec![vec![0u8; QP_BYTES]; 64];
    let mut mr = vec![vec![0u8; MR_BYTES]; 64];
    for (op, table) in [(cmd_op::WRITE_QP, &mut qp), (cmd_op::WRITE_MR, &mut mr)] {
        for (i, e) in table.iter_mut().enumerate() {
            *e = rng.bytes(e.len());
            let mut rec = e.clone();
            rec.resize(64, 0);
            dut.set("cmd_op", u64::from(op));
            dut.set("cmd_index", i as u64);
            dut.set_wide("cmd_record", &rec);
            dut.set_bit("cmd_fire", true);
            dut.eval();
            dut.tick();
        }
    }
    dut.set_bit("cmd_fire", false);
    let (mut same_cycle, mut writes) = (0, [0u32; 2]);
    for cycle in 0..20_000 {
        let fire = rng.chance(1, 2);
        let op = *rng.pick(&[cmd_op::WRITE_QP, cmd_op::WRITE_MR, cmd_op::WRITE_CQ, cmd_op::WRITE_SRQ, 0, 7]);
        // Often the entry a read names, to meet a write to it in the same cycle.
        let (qa, ma) = (rng.range(0, 63) as usize, rng.range(0, 63) as usize);
        let idx = if rng.chance(1, 4) { qa } else { rng.range(0, 63) as usize };
        let rec = rng.bytes(64);
        dut.set_bit("cmd_fire", fire);
        dut.set("cmd_op", u64::from(op));
        dut.set("cmd_index", idx as u64);
        dut.set_wide("cmd_record", &rec);
        dut.set("qp_addr", qa as u64);
        dut.set("mr_addr", ma as u64);
        dut.eval();
        // What this cycle's reads must return next cycle: the entries before this command.
        let want = ((qa, qp[qa].clone()), (ma, mr[ma].clone()));
        if fire && op == cmd_op::WRITE_QP {
            qp[idx] = rec[..QP_BYTES].to_vec();
            writes[0] += 1;
            same_cycle += usize::from(idx == qa);
        }
        if fire && op == cmd_op::WRITE_MR {
            mr[idx] = rec[..MR_BYTES].to_vec();
            writes[1] += 1;
        }
        dut.tick();
        dut.eval();
        let got_qp = dut.get_wide("qp");
        let got_mr = dut.get_wide("mr");
        assert_eq!(&got_qp[..QP_BYTES], &want.0 .1[..], "cycle {cycle}: QP entry {}", want.0 .0);
        assert_eq!(&got_mr[..MR_BYTES], &want.1 .1[..], "cycle {cycle}: MR entry {}", want.1 .0);
        // The fields where the contract puts them.
        assert_eq!(qp_context::STATE.get(&got_qp), qp_context::STATE.get(&want.0 .1));
        assert_eq!(mr_entry::IOVA.get(&got_mr), mr_entry::IOVA.get(&want.1 .1));
    }
    assert!(same_cycle > 100 && writes[0] > 1000 && writes[1] > 1000, "{same_cycle} {writes:?}");
}
