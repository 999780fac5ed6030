//! The RX engine's set of QPs that need a visit of their own (not for a packet): a QP in ERR
//! to flush, or a draining QP (SQD) to check (IBTA Vol 1 10.3.1).
use crate::numbers::Numbers;
use rust_hdl::prelude::*;

// A context command's STATE is read from record bits 2:0.
const _: () = assert!(rnic_contract::qp_context::STATE.lsb == 0);

/// A bit per QP asking the RX engine for a flush or drain-check visit, found by a scan, plus
/// the per-QP SQ-drain arming.
///
/// **Pending visits.** A QP's bit is set by an RQ doorbell (`rq_db`, `rq_db_qpn`: receives
/// posted to a QP in ERR are flushed), by a context command that writes state ERR, by the
/// engine itself (`again`, for the visit's QP `visit_qpn`: a flush goes one WQE per visit, and
/// an armed drain is checked after every visit) and by a drain report (`stop`). A context
/// command that writes RESET clears it. A scan looks at one QP per cycle and stops at a set
/// bit: `sel` / `sel_qpn` offer it until the engine takes it (`take`, which clears the bit,
/// unless a request of the QP acts in the same cycle: then it stays set, for another visit);
/// the scan moves on two cycles later. An offer made before a RESET of its QP may show for two
/// more cycles (the engine's visit then finds the QP in RESET with nothing to do). Doorbells and commands are registered first (their
/// decode does not meet BAR0's write logic in one cycle), and so are the engine's `again` and
/// `drained` (they come from deep in its decisions): all act a cycle late; a RESET acts in its
/// own cycle.
///
/// **SQ drains.** A drain report (`stop`, `stop_qpn`: the scheduler has nothing more to start
/// for a QP in SQD) arms the QP, unless its drain already fired since its last context
/// command; `armed` is the arm bit of `visit_qpn`. `drained` (the engine raised the drain for
/// `visit_qpn`) disarms it and remembers that it fired; any context command of the QP clears
/// both (a report wins over a command in the same cycle: it comes from a context that
/// already said SQD).
///
/// Latency: a set bit is offered 2-65 cycles later (the scan's position); `armed` is
/// combinational from a register. Logic: 64:1 selects by a 6-bit index and 64-bit set/clear
/// masks, ≤ 4 LUT levels.
#[derive(LogicBlock, Default)]
pub struct QpCheckSet {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The context command bus (as the engines see it): fired, opcode, index, state field.
    pub cmd_fire: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_state: Signal<In, Bits<3>>,
    /// An RQ doorbell of QP `rq_db_qpn`.
    pub rq_db: Signal<In, Bit>,
    pub rq_db_qpn: Signal<In, Bits<6>>,
    /// The engine's visit: its QP, a request to visit it again, its drain fired.
    pub visit_qpn: Signal<In, Bits<6>>,
    pub again: Signal<In, Bit>,
    pub drained: Signal<In, Bit>,
    /// The scheduler's drain report.
    pub stop: Signal<In, Bit>,
    pub stop_qpn: Signal<In, Bits<6>>,
    /// The offered QP, and the engine taking it.
    pub sel: Signal<Out, Bit>,
    pub sel_qpn: Signal<Out, Bits<6>>,
    pub take: Signal<In, Bit>,
    /// `visit_qpn`'s drain is armed.
    pub armed: Signal<Out, Bit>,
    pend: DFF<Bits<64>>,
    idx: DFF<Bits<6>>,
    sel_r: DFF<Bit>,
    sel_idx: DFF<Bits<6>>,
    /// `sel_idx` decoded (one bit set), registered beside it.
    sel_hot: DFF<Bits<64>>,
    /// A take clears the offered QP's pending bit a cycle later, from registers (`clr_r`: the
    /// taken bit), except where a request set it in the take's cycle (`set_r`), so that
    /// request still gets its visit; the engine's choice in `Idle` then ends at a register (in
    /// the take's cycle it reached the 64 pending bits at 7 LUT levels). The bit stays visible
    /// one cycle longer; the engine is back in `Idle` 4 cycles after a take at the earliest,
    /// when the scan no longer offers it.
    clr_r: DFF<Bits<64>>,
    set_r: DFF<Bits<64>>,
    db_r: DFF<Bit>,
    db_q_r: DFF<Bits<6>>,
    err_cmd_r: DFF<Bit>,
    any_cmd_r: DFF<Bit>,
    cmd_q_r: DFF<Bits<6>>,
    stop_r: DFF<Bit>,
    stop_q_r: DFF<Bits<6>>,
    again_r: DFF<Bit>,
    drained_r: DFF<Bit>,
    visit_q_r: DFF<Bits<6>>,
    arm: DFF<Bits<64>>,
    done: DFF<Bits<64>>,
    word: Signal<Local, Bits<64>>,
    arm_word: Signal<Local, Bits<64>>,
    set: Signal<Local, Bits<64>>,
    clr: Signal<Local, Bits<64>>,
    rst: Signal<Local, Bits<64>>,
    cmd_clr: Signal<Local, Bits<64>>,
    fired: Signal<Local, Bits<64>>,
    arm_set: Signal<Local, Bits<64>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for QpCheckSet {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, pend, idx, sel_r, sel_idx, sel_hot, clr_r, set_r, db_r, db_q_r, err_cmd_r, any_cmd_r, cmd_q_r,
            stop_r, stop_q_r, again_r, drained_r, visit_q_r, arm, done
        );
        self.db_r.d.next = self.rq_db.val();
        self.db_q_r.d.next = self.rq_db_qpn.val();
        self.err_cmd_r.d.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_state.val() == self.nums.val().qps_err);
        self.any_cmd_r.d.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_qp);
        self.cmd_q_r.d.next = self.cmd_index.val().get_bits::<6>(0);
        self.stop_r.d.next = self.stop.val();
        self.stop_q_r.d.next = self.stop_qpn.val();
        // (The engine's `again` and `drained` come from deep in its decisions: registered.)
        self.again_r.d.next = self.again.val();
        self.drained_r.d.next = self.drained.val();
        self.visit_q_r.d.next = self.visit_qpn.val();

        // The scan: one QP per cycle, held while its bit is offered.
        self.word.next = self.pend.q.val() >> bit_cast::<64, 6>(self.idx.q.val());
        self.sel_r.d.next = self.word.val().get_bit(0);
        self.sel_idx.d.next = self.idx.q.val();
        self.sel_hot.d.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.idx.q.val());
        if !self.sel_r.q.val() {
            self.idx.d.next = self.idx.q.val() + 1;
        }
        self.sel.next = self.sel_r.q.val();
        self.sel_qpn.next = self.sel_idx.q.val();

        // Pending visits: cleared when taken or by RESET (not registered: the same cycle as
        // the command, as the engine's own tables), set by the sources above.
        self.clr_r.d.next = 0.into();
        if self.take.val() {
            self.clr_r.d.next = self.sel_hot.q.val();
        }
        self.clr.next = self.clr_r.q.val() & !self.set_r.q.val();
        self.set.next = 0.into();
        if self.db_r.q.val() {
            self.set.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.db_q_r.q.val());
        }
        if self.err_cmd_r.q.val() {
            self.set.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cmd_q_r.q.val());
        }
        if self.again_r.q.val() {
            self.set.next = self.set.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.visit_q_r.q.val()));
        }
        if self.stop_r.q.val() {
            self.set.next = self.set.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.stop_q_r.q.val()));
        }
        self.rst.next = 0.into();
        if self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_state.val() == self.nums.val().qps_reset)
        {
            self.rst.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cmd_index.val().get_bits::<6>(0));
        }
        self.pend.d.next = ((self.pend.q.val() & !self.clr.val()) | self.set.val()) & !self.rst.val();
        self.set_r.d.next = self.set.val();

        // SQ drains.
        self.arm_word.next = self.arm.q.val() >> bit_cast::<64, 6>(self.visit_qpn.val());
        self.armed.next = self.arm_word.val().get_bit(0);
        self.cmd_clr.next = 0.into();
        if self.any_cmd_r.q.val() {
            self.cmd_clr.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cmd_q_r.q.val());
        }
        self.fired.next = 0.into();
        if self.drained_r.q.val() {
            self.fired.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.visit_q_r.q.val());
        }
        self.arm_set.next = 0.into();
        if self.stop_r.q.val() {
            self.arm_set.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.stop_q_r.q.val());
        }
        // Once drained, a QP stays disarmed until its next context command: a doorbell rung in
        // SQD brings another report, which must not raise the event again.
        self.arm.d.next = (self.arm.q.val() & !self.cmd_clr.val() & !self.fired.val())
            | (self.arm_set.val() & !self.done.q.val() & !self.fired.val());
        self.done.d.next = (self.done.q.val() & !self.cmd_clr.val()) | self.fired.val();
        if self.reset.val() {
            self.arm.d.next = 0.into();
            self.done.d.next = 0.into();
            self.clr_r.d.next = 0.into();
            self.set_r.d.next = 0.into();
        }
    }
}
