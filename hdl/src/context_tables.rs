//! One read port's copy of the QP-context and key tables, kept current by context commands.
use crate::numbers::Numbers;
use crate::records::{MrEntryRec, QpContextRec};
use rust_hdl::prelude::*;

/// The QP context table and the memory-region key table (64 entries each, block RAM), written
/// by [`rnic_contract::regs::CMD`] commands (`WRITE_QP`, `WRITE_MR`) in the cycle `cmd_fire`
/// is high. Each engine that reads them owns one instance, so every reader has its own read
/// port and the copies never differ.
///
/// Reads are synchronous: `qp`/`mr` show the entry addressed in the previous cycle.
#[derive(LogicBlock, Default)]
pub struct ContextTables {
    pub clock: Signal<In, Clock>,
    pub cmd_fire: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub qp_addr: Signal<In, Bits<6>>,
    pub qp: Signal<Out, QpContextRec>,
    pub mr_addr: Signal<In, Bits<6>>,
    pub mr: Signal<Out, MrEntryRec>,
    qp_ram: RAM<Bits<448>, 6>,
    mr_ram: RAM<Bits<256>, 6>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for ContextTables {
    #[hdl_gen]
    fn update(&mut self) {
        self.qp_ram.read_clock.next = self.clock.val();
        self.qp_ram.write_clock.next = self.clock.val();
        self.mr_ram.read_clock.next = self.clock.val();
        self.mr_ram.write_clock.next = self.clock.val();
        self.qp_ram.read_address.next = self.qp_addr.val();
        self.mr_ram.read_address.next = self.mr_addr.val();
        self.qp.next = self.qp_ram.read_data.val().into();
        self.mr.next = self.mr_ram.read_data.val().into();
        self.qp_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_qp);
        self.qp_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.qp_ram.write_data.next = bit_cast::<448, 512>(self.cmd_record.val());
        self.mr_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_mr);
        self.mr_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.mr_ram.write_data.next = bit_cast::<256, 512>(self.cmd_record.val());
    }
}
