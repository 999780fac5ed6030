//! The CQ writer: places each CQE in its completion queue's ring (IBTA Vol 1 11.4.2.1;
//! ibv_poll_cq(3)), on the RX write-job stream, and decides the CQs' completion events
//! (IBTA Vol 1 11.4.2.2, ibv_req_notify_cq(3)).
use crate::numbers::Numbers;
use crate::records::{CqContextRec, WriteJob};
use rust_hdl::prelude::*;

// The CQ_ERR event CQE below is built at literal offsets (OPCODE at CQE bit 152, STATUS 0 at
// bit 160, QP_NUM at bit 128, event type CQ_ERR 0): they must be the contract's.
const _: () = assert!(
    rnic_contract::verbs::event_type::CQ_ERR == 0
        && rnic_contract::cqe::QP_NUM.lsb == 128
        && rnic_contract::cqe::OPCODE.lsb == 152
        && rnic_contract::cqe::STATUS.lsb == 160
);

/// Where the CQ writer is with the CQE at the head of its input.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum CqwState {
    /// Passing jobs through; a CQE at the head (or a CQ_ERR event waiting) starts a lookup of
    /// its CQ; a consumer index ([`rnic_contract::regs::CQ_CI`]) waiting is stored.
    Pass,
    /// The CQ number is registered: the context, producer index, error flag and known
    /// consumer index are being read.
    Lookup,
    /// They are readable: taken into registers, the CQEs the ring holds (`pi - ci`) counted.
    Take,
    /// The slot address and owner bit are computed, and whether the ring is full.
    Place,
    /// The placed CQE goes to the output register (with its event, if its CQ was armed for it);
    /// or, the ring full or the CQ in error, it is dropped.
    Load,
    /// A CQ arm ([`rnic_contract::regs::CQ_ARM`]): its CQ's context, index and arm state are
    /// being read.
    ArmLookup,
    /// They are readable: the unconsumed CQEs (and those after the last solicited one) counted.
    ArmTake,
    /// The event is raised now (an unconsumed CQE is there) or the CQ armed.
    ArmDecide,
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
/// is not a CQE takes 1 cycle of latency, one per 2 cycles (the register is refilled the cycle
/// after it is read: `in_read` never depends on `out_read`, which is the RX writer's decision);
/// a CQE takes 5 (CQ number registered, table read, taken, slot and owner, loaded), one per 5
/// cycles. Every path starts and ends at a register or a table port (≤ 5 LUT levels). Tables:
/// CQ context (64 × 128 bits), producer index and error flag (64 × 33 bits) and known
/// consumer index (64 × 23 bits) in block RAM. A `WRITE_CQ` command is taken while no CQE is
/// in progress, zeroes the CQ's index and consumer index, clears its error and disarms it.
///
/// Overruns ([`rnic_contract::regs::CQ_CI`]): the consumer index of a `CQ_CI` doorbell (one
/// waits at a time: `ci_ready` is low meanwhile) is stored in the cycle after it is taken if
/// the block is passing jobs, else when it is back to passing (at most 5 cycles); an arm stores
/// its index too, unless it is older than the stored one. In `Take` the CQ's fill
/// `(pi - ci) mod 2^23` is computed, in `Place` compared with the ring size: a CQE that finds
/// the ring full, or its CQ in error, leaves as a job of kind 2 (nothing written; its
/// `release`, ACK and barriers kept), pulses `cnt_overrun`, and sets the CQ's error flag
/// (producer index unchanged, arm state untouched). The first such drop of a CQ error, with
/// `async_cq`'s enable set and another CQ as event CQ, leaves a CQ_ERR event waiting (one
/// register): from `Pass` it goes first, through `Lookup`..`Load` like a CQE (5 cycles, input
/// not read) as an event CQE (OPCODE `ASYNC_EVENT`, STATUS `CQ_ERR`, QP_NUM the overrun CQ),
/// itself dropped and counted if the event CQ is full or in error.
///
/// Completion events: an arm ([`rnic_contract::regs::CQ_ARM`], one pending at a time:
/// `arm_ready` is low while one waits) is served between CQEs, before the next one unless the
/// last one served was an arm (arms and CQEs alternate under load), in 3 cycles
/// (context and arm state read, counts, decision). With the driver's consumer index `ci` it
/// raises the event at once if the CQ holds an unconsumed CQE (`pi != ci`; solicited-only: the
/// last solicited CQE is at or after `ci`), else it arms the CQ. A CQE placed in an armed CQ
/// (solicited-only: a solicited CQE, `se` set by the RX engine or an error status) leaves with
/// `ev` and the CQ's vector in its job and disarms the CQ: the RX writer raises the event once
/// the CQE's write is acknowledged, so the driver finds the CQE when the interrupt arrives. An
/// event raised at once (by an arm) leaves on `ev_valid` / `ev_vector` (one-cycle pulse). Arm
/// state per CQ (armed, solicited-only, the index after its last solicited CQE) is a third
/// 64 × 34-bit block RAM. Every path still starts and ends at a register or table port.
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
    /// CQ arm doorbell from BAR0 (one-cycle pulse, `arm_data` as [`rnic_contract::regs::CQ_ARM`]),
    /// taken only while `arm_ready`.
    pub arm_write: Signal<In, Bit>,
    pub arm_data: Signal<In, Bits<32>>,
    pub arm_ready: Signal<Out, Bit>,
    /// An event raised by an arm (the CQ already held a CQE for it): one-cycle pulse, registered.
    pub ev_valid: Signal<Out, Bit>,
    pub ev_vector: Signal<Out, Bits<5>>,
    /// CQ consumer-index doorbell from BAR0 (one-cycle pulse, `ci_data` as
    /// [`rnic_contract::regs::CQ_CI`]), taken only while `ci_ready`.
    pub ci_write: Signal<In, Bit>,
    pub ci_data: Signal<In, Bits<32>>,
    pub ci_ready: Signal<Out, Bit>,
    /// [`rnic_contract::regs::ASYNC_EVENT_CQ`]: bit 8 enable, bits 7:0 the event CQ.
    pub async_cq: Signal<In, Bits<9>>,
    /// A CQE dropped (its CQ full or in error): one-cycle pulse from registers
    /// ([`rnic_contract::regs::counter::DROP_CQ_OVERRUN`]).
    pub cnt_overrun: Signal<Out, Bit>,
    /// 0 Pass, 1 Lookup, 2 Take, 3 Place, 4 Load, 5 ArmLookup, 6 ArmTake, 7 ArmDecide (for the
    /// engine status register).
    pub dbg_state: Signal<Out, Bits<3>>,
    state: DFF<CqwState>,
    cq_ram: RAM<Bits<128>, 6>,
    /// Per CQ: bits 31..0 the producer index, 32 the CQ is in error (it overran).
    pi_ram: RAM<Bits<33>, 6>,
    /// Per CQ: the last consumer index the driver reported (CQ_CI or CQ_ARM), mod 2^23.
    ci_ram: RAM<Bits<23>, 6>,
    /// The CQ_CI doorbell waiting to be stored.
    ci_pend: DFF<Bit>,
    ci_word: DFF<Bits<32>>,
    /// The CQE being placed: CQEs its ring holds by the known consumer index, its CQ's error
    /// flag, and (from `Place`) whether it is dropped and whether it raises CQ_ERR.
    used: DFF<Bits<23>>,
    err: DFF<Bit>,
    drop: DFF<Bit>,
    raise: DFF<Bit>,
    /// A CQ_ERR event waiting (for CQ `ev_of`), and whether the CQE being placed is it.
    ev_pend: DFF<Bit>,
    ev_of: DFF<Bits<6>>,
    evj: DFF<Bit>,
    /// An arm's consumer index less the stored one (bit 22 set: the arm's is older).
    cid: DFF<Bits<23>>,
    /// `state != Pass`, and `state == Load` for an input job (not a CQ_ERR event), kept beside
    /// the state so that `in_read` is one LUT of registers, `in_empty` and the head's kind
    /// (it feeds the write-job FIFO's read address) and `cmd_ready` is a register (it feeds
    /// the other tables' command paths through `NicTop`'s `cmd_fire`).
    busy: DFF<Bit>,
    ld_rd: DFF<Bit>,
    full_c: Signal<Local, Bit>,
    src: Signal<Local, WriteJob>,
    dropped: Signal<Local, WriteJob>,
    /// Per CQ: bits 31..0 the index after its last solicited CQE, 32 armed, 33 solicited-only.
    arm_ram: RAM<Bits<34>, 6>,
    /// The arm waiting to be served, and whether the last thing served was an arm (then a CQE
    /// waiting goes first: arms and CQEs alternate, neither starves the other).
    arm_pend: DFF<Bit>,
    arm_last: DFF<Bit>,
    arm_word: DFF<Bits<32>>,
    /// The CQ's arm state (read with its context), and for an arm its counts: unconsumed CQEs
    /// `u` and CQEs after the last solicited one `sa` (both mod 2^23).
    armst: DFF<Bits<34>>,
    u: DFF<Bits<23>>,
    sa: DFF<Bits<23>>,
    /// The CQE at the head is solicited (BTH.SE on its message, or an error status); `pi + 1`.
    is_sol: DFF<Bit>,
    pi_next: DFF<Bits<32>>,
    ev_r: DFF<Bit>,
    ev_vec_r: DFF<Bits<5>>,
    in_cqe: Signal<Local, Bits<256>>,
    fire: Signal<Local, Bit>,
    arm_ci: Signal<Local, Bits<23>>,
    arm_sol: Signal<Local, Bit>,
    ram_arm: Signal<Local, Bits<34>>,
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
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for CqWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, ov, oj, cqn, cq, pi, mask, slot_addr, owner, arm_pend, arm_word, armst, u, sa, is_sol,
            pi_next, ev_r, ev_vec_r, arm_last, ci_pend, ci_word, used, err, drop, raise, ev_pend, ev_of, evj, cid,
            busy, ld_rd
        );
        self.ci_ram.read_clock.next = self.clock.val();
        self.ci_ram.write_clock.next = self.clock.val();
        self.arm_ram.read_clock.next = self.clock.val();
        self.arm_ram.write_clock.next = self.clock.val();
        self.cq_ram.read_clock.next = self.clock.val();
        self.cq_ram.write_clock.next = self.clock.val();
        self.pi_ram.read_clock.next = self.clock.val();
        self.pi_ram.write_clock.next = self.clock.val();
        self.head_is_cqe.next = !self.in_empty.val() & (self.in_job.val().kind == 1);
        // (A Local first: yosys takes no bit select of a struct field's slice.)
        self.in_cqn.next = self.in_job.val().addr;

        // Commands: WRITE_CQ writes the context and starts the ring at index 0; taken only
        // while passing, so it never meets this block's own index write.
        self.cmd_ready.next = !self.busy.q.val();
        self.cmd_cq.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_cq);
        self.cq_ram.write_enable.next = self.cmd_cq.val();
        self.cq_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.cq_ram.write_data.next = bit_cast::<128, 512>(self.cmd_record.val());
        self.pi_ram.write_enable.next = self.cmd_cq.val();
        self.pi_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.pi_ram.write_data.next = 0.into();
        self.arm_ram.write_enable.next = self.cmd_cq.val();
        self.arm_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.arm_ram.write_data.next = 0.into();
        self.ci_ram.write_enable.next = self.cmd_cq.val();
        self.ci_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.ci_ram.write_data.next = 0.into();
        self.ci_ram.read_address.next = self.cqn.q.val();
        self.cq_ram.read_address.next = self.cqn.q.val();
        self.pi_ram.read_address.next = self.cqn.q.val();
        self.arm_ram.read_address.next = self.cqn.q.val();
        self.ram_cq.next = self.cq_ram.read_data.val().into();
        self.ram_arm.next = self.arm_ram.read_data.val();

        // Arms: one waits at a time; BAR0 holds the next write until it is taken.
        self.arm_ready.next = !self.arm_pend.q.val();
        if self.arm_write.val() & !self.arm_pend.q.val() {
            self.arm_pend.d.next = true;
            self.arm_word.d.next = self.arm_data.val();
        }
        self.arm_ci.next = self.arm_word.q.val().get_bits::<23>(0);
        // Consumer indices: one waits at a time, like an arm.
        self.ci_ready.next = !self.ci_pend.q.val();
        if self.ci_write.val() & !self.ci_pend.q.val() {
            self.ci_pend.d.next = true;
            self.ci_word.d.next = self.ci_data.val();
        }
        self.cnt_overrun.next = false;
        self.arm_sol.next = self.arm_word.q.val().get_bit(23);
        self.ev_r.d.next = false;
        self.ev_valid.next = self.ev_r.q.val();
        self.ev_vector.next = self.ev_vec_r.q.val();
        // The head CQE's status (a local first, as above).
        self.in_cqe.next = self.in_job.val().cqe;
        // An armed CQ's event: any CQE, or with solicited-only a solicited one.
        self.fire.next = self.armst.q.val().get_bit(32) & (!self.armst.q.val().get_bit(33) | self.is_sol.q.val());

        // The slot and owner of CQE number `pi`.
        self.lap.next = self.pi.q.val() >> bit_cast::<32, 5>(self.cq.q.val().log_size);
        self.full_c.next = self.used.q.val() > self.mask.q.val().get_bits::<23>(0);
        // What is placed: the head job, or a CQ_ERR event CQE (nothing else of it is used: no
        // ACK, no release, no barrier).
        self.src.next = self.in_job.val();
        if self.evj.q.val() {
            self.src.next.kind = 1.into();
            self.src.next.need_ack = 0.into();
            self.src.next.se = 0.into();
            self.src.next.bar = 0.into();
            self.src.next.res = 0.into();
            self.src.next.release = 0.into();
            self.src.next.cqe = (bit_cast::<256, 6>(self.ev_of.q.val()) << 128)
                | (bit_cast::<256, 8>(self.nums.val().wco_async_event) << 152);
        }
        // A dropped CQE: nothing to write, its duties kept (the RX writer's kind 2).
        self.dropped.next = self.in_job.val();
        self.dropped.next.kind = 2.into();
        self.dropped.next.ev = 0.into();
        self.placed.next = self.src.val();
        self.placed.next.addr = self.slot_addr.q.val();
        self.placed.next.ev = bit_cast::<1, 1>(self.fire.val().into());
        self.placed.next.ev_vector = self.cq.q.val().vector;
        self.placed.next.cqe = (self.src.val().cqe & !(bit_cast::<256, 1>(1.into()) << 248))
            | (bit_cast::<256, 1>(self.owner.q.val().into()) << 248);

        // The output register: emptied when read, refilled from the next cycle. Its room is the
        // register alone, never the reader's `out_read`: that decision (the RX writer's
        // `can_start`, its ACK queue's `full`) would otherwise run on through `in_read` into
        // the write-job FIFO's read address. The RX writer takes a job at most every other
        // cycle except a release-only one, so only those lose a cycle.
        self.out_empty.next = !self.ov.q.val();
        self.out_job.next = self.oj.q.val();
        self.room.next = !self.ov.q.val();
        if self.out_read.val() {
            self.ov.d.next = false;
        }
        // The input is read by a job passing through (`Pass`, the head not a CQE) or by the
        // CQE placed or dropped in `Load` (not by a CQ_ERR event), into an empty output register.
        self.in_read.next = self.room.val()
            & ((!self.busy.q.val() & !self.in_empty.val() & !self.head_is_cqe.val()) | self.ld_rd.q.val());
        self.dbg_state.next = 0.into();
        match self.state.q.val() {
            CqwState::Pass => {
                // A consumer index is stored (a command goes first: it may be its CQ's).
                if self.ci_pend.q.val() & !self.cmd_cq.val() {
                    self.ci_pend.d.next = false;
                    self.ci_ram.write_enable.next = true;
                    self.ci_ram.write_address.next = self.ci_word.q.val().get_bits::<6>(24);
                    self.ci_ram.write_data.next = self.ci_word.q.val().get_bits::<23>(0);
                }
                if self.head_is_cqe.val() {
                    // A CQ_ERR event goes first; then a CQE, or an arm first unless the last
                    // one served was an arm (a command goes before all: it may be their CQ's).
                    if !self.cmd_cq.val() {
                        if self.ev_pend.q.val() {
                            self.ev_pend.d.next = false;
                            self.evj.d.next = true;
                            self.cqn.d.next = self.async_cq.val().get_bits::<6>(0);
                            self.state.d.next = CqwState::Lookup;
                            self.busy.d.next = true;
                        } else if self.arm_pend.q.val() & !self.arm_last.q.val() {
                            self.arm_pend.d.next = false;
                            self.arm_last.d.next = true;
                            self.cqn.d.next = self.arm_word.q.val().get_bits::<6>(24);
                            self.state.d.next = CqwState::ArmLookup;
                            self.busy.d.next = true;
                        } else {
                            self.arm_last.d.next = false;
                            self.evj.d.next = false;
                            self.cqn.d.next = self.in_cqn.val().get_bits::<6>(0);
                            self.state.d.next = CqwState::Lookup;
                            self.busy.d.next = true;
                        }
                    }
                } else {
                    if !self.in_empty.val() & self.room.val() {
                        // Not a CQE: through as it is (an arm may start in the same cycle: the
                        // arm states leave the output register alone).
                        self.ov.d.next = true;
                        self.oj.d.next = self.in_job.val();
                    }
                    if self.ev_pend.q.val() & !self.cmd_cq.val() {
                        self.ev_pend.d.next = false;
                        self.evj.d.next = true;
                        self.cqn.d.next = self.async_cq.val().get_bits::<6>(0);
                        self.state.d.next = CqwState::Lookup;
                        self.busy.d.next = true;
                    } else if self.arm_pend.q.val() & !self.cmd_cq.val() {
                        self.arm_pend.d.next = false;
                        self.arm_last.d.next = true;
                        self.cqn.d.next = self.arm_word.q.val().get_bits::<6>(24);
                        self.state.d.next = CqwState::ArmLookup;
                        self.busy.d.next = true;
                    }
                }
            }
            CqwState::Lookup => {
                self.dbg_state.next = 1.into();
                self.state.d.next = CqwState::Take;
            }
            CqwState::Take => {
                self.dbg_state.next = 2.into();
                self.cq.d.next = self.ram_cq.val();
                self.pi.d.next = self.pi_ram.read_data.val().get_bits::<32>(0);
                self.err.d.next = self.pi_ram.read_data.val().get_bit(32);
                self.used.d.next = self.pi_ram.read_data.val().get_bits::<23>(0) - self.ci_ram.read_data.val();
                self.armst.d.next = self.ram_arm.val();
                self.mask.d.next = (bit_cast::<32, 1>(1.into()) << bit_cast::<32, 5>(self.ram_cq.val().log_size)) - 1;
                self.state.d.next = CqwState::Place;
            }
            CqwState::Place => {
                self.dbg_state.next = 3.into();
                self.slot_addr.d.next =
                    self.cq.q.val().base + (bit_cast::<64, 32>(self.pi.q.val() & self.mask.q.val()) << 5);
                self.owner.d.next = !self.lap.val().get_bit(0);
                // An event CQE is solicited (it wakes any arm of the event CQ).
                self.is_sol.d.next =
                    self.evj.q.val() | self.in_job.val().se.any() | self.in_cqe.val().get_bits::<8>(160).any();
                self.pi_next.d.next = self.pi.q.val() + 1;
                self.ld_rd.d.next = !self.evj.q.val();
                // Full: the ring holds 2^LOG_SIZE CQEs the driver has not reported consumed.
                self.drop.d.next = self.full_c.val() | self.err.q.val();
                self.raise.d.next = self.full_c.val()
                    & !self.err.q.val()
                    & !self.evj.q.val()
                    & self.async_cq.val().get_bit(8)
                    & (self.async_cq.val().get_bits::<6>(0) != self.cqn.q.val());
                self.state.d.next = CqwState::Load;
            }
            CqwState::Load => {
                self.dbg_state.next = 4.into();
                // The arm state written with the CQE (enabled below, with room): disarmed by its
                // event; a solicited CQE moves the mark. From registers only.
                self.arm_ram.write_address.next = self.cqn.q.val();
                self.arm_ram.write_data.next = (self.armst.q.val() & 0x2_0000_0000_u64)
                    | (bit_cast::<34, 1>((self.armst.q.val().get_bit(32) & !self.fire.val()).into()) << 32)
                    | bit_cast::<34, 32>(self.armst.q.val().get_bits::<32>(0));
                if self.is_sol.q.val() {
                    self.arm_ram.write_data.next = (self.armst.q.val() & 0x2_0000_0000_u64)
                        | (bit_cast::<34, 1>((self.armst.q.val().get_bit(32) & !self.fire.val()).into()) << 32)
                        | bit_cast::<34, 32>(self.pi_next.q.val());
                }
                self.pi_ram.write_address.next = self.cqn.q.val();
                self.pi_ram.write_data.next = bit_cast::<33, 32>(self.pi_next.q.val());
                if self.drop.q.val() {
                    // Dropped: the index stays, the CQ is in error until its next WRITE_CQ.
                    self.pi_ram.write_data.next =
                        bit_cast::<33, 32>(self.pi.q.val()) | (bit_cast::<33, 1>(1.into()) << 32);
                }
                if self.room.val() {
                    // (`in_read` above: the input job is read unless this is a CQ_ERR event.)
                    self.pi_ram.write_enable.next = true;
                    self.state.d.next = CqwState::Pass;
                    self.busy.d.next = false;
                    self.ld_rd.d.next = false;
                    if self.drop.q.val() {
                        self.cnt_overrun.next = true;
                        self.ov.d.next = !self.evj.q.val();
                        self.oj.d.next = self.dropped.val();
                        if self.raise.q.val() {
                            self.ev_pend.d.next = true;
                            self.ev_of.d.next = self.cqn.q.val();
                        }
                    } else {
                        self.ov.d.next = true;
                        self.oj.d.next = self.placed.val();
                        self.arm_ram.write_enable.next = true;
                    }
                }
            }
            CqwState::ArmLookup => {
                self.dbg_state.next = 5.into();
                self.state.d.next = CqwState::ArmTake;
            }
            CqwState::ArmTake => {
                self.dbg_state.next = 6.into();
                self.cq.d.next = self.ram_cq.val();
                self.armst.d.next = self.ram_arm.val();
                self.u.d.next = self.pi_ram.read_data.val().get_bits::<23>(0) - self.arm_ci.val();
                self.sa.d.next = self.pi_ram.read_data.val().get_bits::<23>(0) - self.ram_arm.val().get_bits::<23>(0);
                self.cid.d.next = self.arm_ci.val() - self.ci_ram.read_data.val();
                self.state.d.next = CqwState::ArmDecide;
            }
            CqwState::ArmDecide => {
                self.dbg_state.next = 7.into();
                // Fire now if a CQE the driver has not consumed qualifies; else arm. Arming for
                // any CQE widens an arm for solicited ones; solicited-only keeps a wide arm wide.
                self.ev_vec_r.d.next = self.cq.q.val().vector;
                // The arm's consumer index is stored unless a newer one is (mod 2^23).
                self.ci_ram.write_enable.next = !self.cid.q.val().get_bit(22);
                self.ci_ram.write_address.next = self.cqn.q.val();
                self.ci_ram.write_data.next = self.arm_ci.val();
                self.arm_ram.write_enable.next = true;
                self.arm_ram.write_address.next = self.cqn.q.val();
                if (self.arm_sol.val() & (self.sa.q.val() < self.u.q.val()))
                    | (!self.arm_sol.val() & self.u.q.val().any())
                {
                    self.ev_r.d.next = true;
                    self.arm_ram.write_data.next = bit_cast::<34, 32>(self.armst.q.val().get_bits::<32>(0));
                } else {
                    self.arm_ram.write_data.next = bit_cast::<34, 32>(self.armst.q.val().get_bits::<32>(0))
                        | (bit_cast::<34, 1>(1.into()) << 32)
                        | (bit_cast::<34, 1>(
                            (self.arm_sol.val() & (!self.armst.q.val().get_bit(32) | self.armst.q.val().get_bit(33)))
                                .into(),
                        ) << 33);
                }
                self.state.d.next = CqwState::Pass;
                self.busy.d.next = false;
            }
        }
        if self.reset.val() {
            self.state.d.next = CqwState::Pass;
            self.ov.d.next = false;
            self.arm_pend.d.next = false;
            self.ev_r.d.next = false;
            self.ci_pend.d.next = false;
            self.ev_pend.d.next = false;
            self.busy.d.next = false;
            self.ld_rd.d.next = false;
        }
    }
}
