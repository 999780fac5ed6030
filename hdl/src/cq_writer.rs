//! The CQ writer: places each CQE in its completion queue's ring (IBTA Vol 1 11.4.2.1;
//! ibv_poll_cq(3)), on the RX write-job stream.
use crate::records::{CqContextRec, WriteJob};
use rust_hdl::prelude::*;

/// Where the CQ writer is with the CQE at the head of its input.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum CqwState {
    /// Passing jobs through; a CQE at the head starts a lookup of its CQ.
    Pass,
    /// The CQ number is registered: the context and producer index are being read.
    Lookup,
    /// They are readable: taken into registers.
    Take,
    /// The slot address and owner bit are computed.
    Place,
    /// The placed CQE goes to the output register.
    Load,
}

/// Sits between the engines' write-job FIFO and the [`crate::rx_writer::RxWriter`], and owns
/// every CQ's context (`WRITE_CQ`, [`rnic_contract::cq_context`]) and producer index.
///
/// The engines emit a CQE as a [`WriteJob`] of kind 1 whose `addr` holds the CQ number (bits
/// 7..0) instead of an address. The CQ writer places the `n`-th CQE of a CQ (counting from its
/// `WRITE_CQ`) at `BASE + (n mod 2^LOG_SIZE) * 32` with the owner bit
/// ([`rnic_contract::cqe::OWNER`]) `!(n >> LOG_SIZE) & 1`, so a zeroed ring reads empty and
/// each lap flips the owner's meaning (IBTA Vol 1 11.4.2.1; ibv_poll_cq(3)). Every other job
/// passes through unchanged, so CQEs stay in order with the payload writes before them.
/// Because this block alone moves every CQ's producer index, a CQE can only land on its own
/// CQ's next slot, whichever engine made it.
///
/// Timing: one output register (first-word fall-through view for the RX writer): a job that
/// is not a CQE takes 1 cycle of latency, one per cycle; a CQE takes 5 (CQ number registered,
/// table read, taken, slot and owner, loaded), one per 5 cycles. Every path starts and ends at
/// a register or a table port (≤ 5 LUT levels). Tables: CQ context (64 × 128 bits) and
/// producer index (64 × 32 bits) in block RAM. A `WRITE_CQ` command is taken while no CQE is
/// in progress and zeroes the CQ's index.
#[derive(LogicBlock, Default)]
pub struct CqWriter {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Context commands (`WRITE_CQ` = op 3 is this block's).
    pub cmd_fire: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub cmd_ready: Signal<Out, Bit>,
    /// The engines' write jobs (first-word fall-through FIFO).
    pub in_empty: Signal<In, Bit>,
    pub in_job: Signal<In, WriteJob>,
    pub in_read: Signal<Out, Bit>,
    /// Towards the RX writer (first-word fall-through view of the output register).
    pub out_empty: Signal<Out, Bit>,
    pub out_job: Signal<Out, WriteJob>,
    pub out_read: Signal<In, Bit>,
    /// 0 Pass, 1 Lookup, 2 Take, 3 Place, 4 Load (for the engine status register).
    pub dbg_state: Signal<Out, Bits<3>>,
    state: DFF<CqwState>,
    cq_ram: RAM<Bits<128>, 6>,
    pi_ram: RAM<Bits<32>, 6>,
    /// The output register.
    ov: DFF<Bit>,
    oj: DFF<WriteJob>,
    /// The CQE being placed: its CQ, context, index (and the mask of its ring), slot address
    /// and owner bit.
    cqn: DFF<Bits<6>>,
    cq: DFF<CqContextRec>,
    pi: DFF<Bits<32>>,
    mask: DFF<Bits<32>>,
    slot_addr: DFF<Bits<64>>,
    owner: DFF<Bit>,
    head_is_cqe: Signal<Local, Bit>,
    in_cqn: Signal<Local, Bits<64>>,
    lap: Signal<Local, Bits<32>>,
    ram_cq: Signal<Local, CqContextRec>,
    placed: Signal<Local, WriteJob>,
    cmd_cq: Signal<Local, Bit>,
    room: Signal<Local, Bit>,
}

impl Logic for CqWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, ov, oj, cqn, cq, pi, mask, slot_addr, owner);
        self.cq_ram.read_clock.next = self.clock.val();
        self.cq_ram.write_clock.next = self.clock.val();
        self.pi_ram.read_clock.next = self.clock.val();
        self.pi_ram.write_clock.next = self.clock.val();
        self.head_is_cqe.next = !self.in_empty.val() & (self.in_job.val().kind == 1);
        // (A Local first: yosys takes no bit select of a struct field's slice.)
        self.in_cqn.next = self.in_job.val().addr;

        // Commands: WRITE_CQ writes the context and starts the ring at index 0; taken only
        // while passing, so it never meets this block's own index write.
        self.cmd_ready.next = self.state.q.val() == CqwState::Pass;
        self.cmd_cq.next = self.cmd_fire.val() & (self.cmd_op.val() == 3);
        self.cq_ram.write_enable.next = self.cmd_cq.val();
        self.cq_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.cq_ram.write_data.next = bit_cast::<128, 512>(self.cmd_record.val());
        self.pi_ram.write_enable.next = self.cmd_cq.val();
        self.pi_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.pi_ram.write_data.next = 0.into();
        self.cq_ram.read_address.next = self.cqn.q.val();
        self.pi_ram.read_address.next = self.cqn.q.val();
        self.ram_cq.next = self.cq_ram.read_data.val().into();

        // The slot and owner of CQE number `pi`.
        self.lap.next = self.pi.q.val() >> bit_cast::<32, 5>(self.cq.q.val().log_size);
        self.placed.next = self.in_job.val();
        self.placed.next.addr = self.slot_addr.q.val();
        self.placed.next.cqe = (self.in_job.val().cqe & !(bit_cast::<256, 1>(1.into()) << 248))
            | (bit_cast::<256, 1>(self.owner.q.val().into()) << 248);

        // The output register: emptied when read, refilled in the same cycle.
        self.out_empty.next = !self.ov.q.val();
        self.out_job.next = self.oj.q.val();
        self.room.next = !self.ov.q.val() | self.out_read.val();
        if self.out_read.val() {
            self.ov.d.next = false;
        }
        self.in_read.next = false;
        self.dbg_state.next = 0.into();
        match self.state.q.val() {
            CqwState::Pass => {
                if self.head_is_cqe.val() {
                    if !self.cmd_cq.val() {
                        self.cqn.d.next = self.in_cqn.val().get_bits::<6>(0);
                        self.state.d.next = CqwState::Lookup;
                    }
                } else if !self.in_empty.val() & self.room.val() {
                    // Not a CQE: through as it is.
                    self.in_read.next = true;
                    self.ov.d.next = true;
                    self.oj.d.next = self.in_job.val();
                }
            }
            CqwState::Lookup => {
                self.dbg_state.next = 1.into();
                self.state.d.next = CqwState::Take;
            }
            CqwState::Take => {
                self.dbg_state.next = 2.into();
                self.cq.d.next = self.ram_cq.val();
                self.pi.d.next = self.pi_ram.read_data.val();
                self.mask.d.next = (bit_cast::<32, 1>(1.into()) << bit_cast::<32, 5>(self.ram_cq.val().log_size)) - 1;
                self.state.d.next = CqwState::Place;
            }
            CqwState::Place => {
                self.dbg_state.next = 3.into();
                self.slot_addr.d.next =
                    self.cq.q.val().base + (bit_cast::<64, 32>(self.pi.q.val() & self.mask.q.val()) << 5);
                self.owner.d.next = !self.lap.val().get_bit(0);
                self.state.d.next = CqwState::Load;
            }
            CqwState::Load => {
                self.dbg_state.next = 4.into();
                if self.room.val() {
                    self.in_read.next = true;
                    self.ov.d.next = true;
                    self.oj.d.next = self.placed.val();
                    self.pi_ram.write_enable.next = true;
                    self.pi_ram.write_address.next = self.cqn.q.val();
                    self.pi_ram.write_data.next = self.pi.q.val() + 1;
                    self.state.d.next = CqwState::Pass;
                }
            }
        }
        if self.reset.val() {
            self.state.d.next = CqwState::Pass;
            self.ov.d.next = false;
        }
    }
}
