//! The responder's count of fresh RDMA READ and atomic responses sent, per QP.
//!
//! The RX engine ([`crate::rx_engine::RxEngine`]) counts the READ and atomic requests it
//! accepts per QP (`racc_ram`); the transmit path reports each fresh response it finishes
//! sending (`done`, from [`crate::tx_assembler::TxAssembler`]). The difference is what the
//! responder still owes: at most `max_dest_rd_atomic` (`ibv_modify_qp(3)`: the responder's
//! resources for incoming RDMA READs and atomics), and an ACK must wait behind the responses
//! owed before it.
//!
//! Split out of the RX engine in stop 34 (issue 13, part 1: each role owns its tables): the
//! same RAMs and logic (but that a report is taken from the queue in a cycle with `init` too,
//! stop 34, for timing); its own testbench is `hdl/tests/resp_done_tb.rs`.
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// The read-modify-write of a count in [`RespDoneTable`].
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum RdoneStep {
    /// Nothing under way: the next `done` report is taken from `rdone_fifo`.
    Idle,
    /// `rdone_b` is read at the report's QP.
    Read,
    /// The count is readable: both copies are written one more.
    Increment,
}

/// Fresh READ / atomic responses sent, by QP (64 QPs, mod 256).
///
/// - `done` / `done_qpn`: a response of QP `done_qpn` finished; queued (4 entries: reports
///   come at most one per response packet, one per 12 cycles) and counted 3 cycles after it leaves
///   the queue (read the count, write it one more).
/// - `init` / `init_qpn`: INIT_RQ_PSN of a context command: QP `init_qpn`'s count is zeroed;
///   this write wins the table's write port (an increment under way waits a cycle; a report
///   is still taken from the queue).
/// - `qpn` / `count`: the count of QP `qpn`, a block-RAM read (`count` shows, one cycle after
///   `qpn` is presented, the count as of that cycle). A report presented in cycle t is seen at
///   `count` from t + 6 (taken from the queue at t + 2, its count read at t + 3 and written at
///   t + 4).
///
/// Two copies of the table are written together: `rdone_a` is read at the engine's QP,
/// `rdone_b` for the increment. ≤ 6 LUT levels (`scripts/synth.sh`).
#[derive(LogicBlock, Default)]
pub struct RespDoneTable {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub done: Signal<In, Bit>,
    pub done_qpn: Signal<In, Bits<6>>,
    pub init: Signal<In, Bit>,
    pub init_qpn: Signal<In, Bits<6>>,
    pub qpn: Signal<In, Bits<6>>,
    pub count: Signal<Out, Bits<8>>,
    rdone_a: RAM<Bits<8>, 6>,
    rdone_b: RAM<Bits<8>, 6>,
    rdone_fifo: ResetFifo<Bits<6>, 2, 3, 1>,
    /// Where the increment of `rdone_q`'s count is (`rdone_b` read, then both copies written).
    rdone_busy: DFF<RdoneStep>,
    rdone_q: DFF<Bits<6>>,
}

impl Logic for RespDoneTable {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rdone_busy, rdone_q);
        clock!(self, clock, rdone_fifo);
        self.rdone_fifo.reset.next = self.reset.val();
        self.rdone_a.read_clock.next = self.clock.val();
        self.rdone_a.write_clock.next = self.clock.val();
        self.rdone_b.read_clock.next = self.clock.val();
        self.rdone_b.write_clock.next = self.clock.val();
        self.rdone_fifo.write.next = self.done.val();
        self.rdone_fifo.data_in.next = self.done_qpn.val();
        self.rdone_fifo.read.next = false;
        self.rdone_a.read_address.next = self.qpn.val();
        self.count.next = self.rdone_a.read_data.val();
        self.rdone_b.read_address.next = self.rdone_q.q.val();
        self.rdone_a.write_enable.next = false;
        self.rdone_a.write_address.next = self.rdone_q.q.val();
        self.rdone_a.write_data.next = self.rdone_b.read_data.val() + 1;
        if self.init.val() {
            self.rdone_a.write_enable.next = true;
            self.rdone_a.write_address.next = self.init_qpn.val();
            self.rdone_a.write_data.next = 0.into();
        } else if self.rdone_busy.q.val() == RdoneStep::Increment {
            // The count is readable: write it back one more.
            self.rdone_a.write_enable.next = true;
            self.rdone_busy.d.next = RdoneStep::Idle;
        } else if self.rdone_busy.q.val() == RdoneStep::Read {
            self.rdone_busy.d.next = RdoneStep::Increment;
        }
        // The next report is taken whatever `init` does (it stalls only the steps after), so
        // the command handshake does not reach the queue's read port.
        if (self.rdone_busy.q.val() == RdoneStep::Idle) & !self.rdone_fifo.empty.val() {
            self.rdone_fifo.read.next = true;
            self.rdone_q.d.next = self.rdone_fifo.data_out.val();
            self.rdone_busy.d.next = RdoneStep::Read;
        }
        self.rdone_b.write_enable.next = self.rdone_a.write_enable.val();
        self.rdone_b.write_address.next = self.rdone_a.write_address.val();
        self.rdone_b.write_data.next = self.rdone_a.write_data.val();
    }
}
