//! SQ doorbells: a producer index per QP and a ready set the requester scheduler drains.
use rust_hdl::prelude::*;

/// Takes every SQ doorbell at once and offers the QPs that have work to the scheduler.
///
/// A doorbell (`qpn << 16 | producer index`, a posted MMIO write on PCIe) is never refused:
/// it overwrites the QP's producer index in a 64-entry table and sets the QP's bit in a ready
/// set. Later doorbells of the same QP coalesce into the table (the scheduler serves every WQE
/// up to the newest index, so nothing is lost). The scheduler sees a first-word fall-through
/// FIFO: `empty`, `data` = `qpn << 16 | newest producer index`, `read`. Reading clears the
/// QP's bit; a doorbell or a `rearm` in the same cycle sets it again, so a QP whose doorbell
/// raced with its service is served once more (its index may then equal its consumer index,
/// which the scheduler treats as no work).
///
/// `rearm` puts a QP the scheduler stepped aside from (waiting for in-flight room, a READ
/// slot, or its error's turn) back into the set, so other QPs' doorbells pass a waiting QP.
/// `clear` (a context command that puts the QP in RESET) drops its bit and zeroes its index,
/// so nothing of a QP's last connection survives a reset. `poke` (a context command that puts
/// the QP in SQD) sets its bit with its index unchanged: the scheduler then starts the SQ
/// drain even if nothing was rung.
///
/// The search visits one group of 8 QPs per cycle, round-robin, and picks in the group the
/// first ready QP after the one it picked there last (each group keeps its own pointer), or
/// else the lowest; after a pick it moves on to the next group. So with every QP ready, each
/// is offered once in every 64 offers, and a QP that is rung again as soon as it is served
/// cannot starve the others of its group (a lowest-first pick did: a busy QP 2 kept QP 3
/// waiting for as long as it was busy).
///
/// `others` says that a QP other than the offered one is ready. A scheduler that is serving the
/// offered QP (rung again while served) takes the offer when `others` is set, so that the next
/// QP is offered and the scheduler sees it waiting; without that, the offer of the served QP
/// would hide every other doorbell until the served QP runs out of work. Latency: a doorbell into an idle set is offered 4-11 cycles after the cycle it is
/// presented in (input register, ready set, search, index read); after a read the next QP is
/// offered at least 3 cycles later.
/// Initiation interval: one QP per 3 cycles. Logic: a 16-bit priority pick (the group's QPs
/// after its pointer, then all of them) and a 64-bit set/clear, ≤ 6 LUT levels.
///
/// Registered inputs: a doorbell (`db_write`, `db_data`) is taken into a register first and
/// acts from the next cycle, and `read` only sets a register: `empty` rises the cycle after a
/// read (from that register), and the read's clearing of the QP's ready bit, the end of its
/// offer and the next search happen the cycle after. So neither BAR0's address decode nor the
/// scheduler's state decoding reaches the 64-bit ready set or the search in the same cycle.
/// A doorbell or rearm of the QP in the cycle of the read keeps its bit (a set wins over the
/// read, as before), and one in the cycle after does too.
#[derive(LogicBlock, Default)]
pub struct SqDoorbells {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A doorbell from BAR0: one cycle pulse with `db_data` = `qpn << 16 | producer index`.
    pub db_write: Signal<In, Bit>,
    pub db_data: Signal<In, Bits<32>>,
    /// The scheduler stepped aside from QP `rearm_qpn`: offer it again later.
    pub rearm: Signal<In, Bit>,
    pub rearm_qpn: Signal<In, Bits<6>>,
    /// A context command put QP `clear_qpn` in RESET: forget its doorbells.
    pub clear: Signal<In, Bit>,
    pub clear_qpn: Signal<In, Bits<6>>,
    /// A context command put QP `poke_qpn` in SQD: offer it (index unchanged).
    pub poke: Signal<In, Bit>,
    pub poke_qpn: Signal<In, Bits<6>>,
    /// First-word fall-through view for the scheduler.
    pub empty: Signal<Out, Bit>,
    pub data: Signal<Out, Bits<32>>,
    pub read: Signal<In, Bit>,
    /// A QP other than the offered one is ready (registered: a cycle behind the ready set).
    pub others: Signal<Out, Bit>,
    /// Newest producer index per QP.
    pi_ram: RAM<Bits<16>, 6>,
    ready: DFF<Bits<64>>,
    /// The group of 8 QPs searched this cycle.
    grp: DFF<Bits<3>>,
    /// The QP picked for the scheduler, and whether its index has been read (`shown`).
    cand: DFF<Bits<6>>,
    cand_valid: DFF<Bit>,
    shown: DFF<Bit>,
    rearm_r: DFF<Bit>,
    rearm_qpn_r: DFF<Bits<6>>,
    /// The doorbell input, registered.
    db_w_r: DFF<Bit>,
    db_d_r: DFF<Bits<32>>,
    /// A read of the candidate happened last cycle; and whether a doorbell or rearm of that
    /// QP came in the same cycle (then its bit stays set).
    rd_r: DFF<Bit>,
    rd_set_r: DFF<Bit>,
    /// Per group of 8 QPs (bits 3g..3g+2), the QP the search picked there last.
    rr: DFF<Bits<24>>,
    /// The ready set masked to the QPs after their group's pointer (registered with `ready`).
    eligible: DFF<Bits<64>>,
    /// A pick happened last cycle (its group's pointer moves to it this cycle).
    picked_r: DFF<Bit>,
    others_r: DFF<Bit>,
    ready_next: Signal<Local, Bits<64>>,
    /// Bit position of the picked group's pointer in `rr` (3 × group).
    rr_at: Signal<Local, Bits<5>>,
    after_ptr: Signal<Local, Bits<64>>,
    el_shifted: Signal<Local, Bits<64>>,
    group_el: Signal<Local, Bits<8>>,
    pick_el: Signal<Local, Bits<3>>,
    rearm_hit: Signal<Local, Bit>,
    poke_hit: Signal<Local, Bit>,
    searching: Signal<Local, Bit>,
    set_mask: Signal<Local, Bits<64>>,
    clr_mask: Signal<Local, Bits<64>>,
    shifted: Signal<Local, Bits<64>>,
    group: Signal<Local, Bits<8>>,
    pick: Signal<Local, Bits<3>>,
    db_hit: Signal<Local, Bit>,
    clr_hit: Signal<Local, Bit>,
}

impl Logic for SqDoorbells {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            ready,
            grp,
            cand,
            cand_valid,
            shown,
            rearm_r,
            rearm_qpn_r,
            db_w_r,
            db_d_r,
            rd_r,
            rd_set_r,
            rr,
            eligible,
            picked_r,
            others_r
        );
        // (The doorbell is taken into a register: BAR0's address decode ends there.)
        self.db_w_r.d.next = self.db_write.val();
        self.db_d_r.d.next = self.db_data.val();
        self.pi_ram.read_clock.next = self.clock.val();
        self.pi_ram.write_clock.next = self.clock.val();
        // The table: a doorbell writes its QP's index; a reset command zeroes it (BAR0 takes
        // one write per cycle and answers each before taking the next, so the two never
        // coincide even with the doorbell a cycle late).
        self.pi_ram.write_enable.next = self.db_w_r.q.val() | self.clear.val();
        self.pi_ram.write_address.next = self.db_d_r.q.val().get_bits::<6>(16);
        self.pi_ram.write_data.next = self.db_d_r.q.val().get_bits::<16>(0);
        if self.clear.val() {
            self.pi_ram.write_address.next = self.clear_qpn.val();
            self.pi_ram.write_data.next = 0.into();
        }
        self.pi_ram.read_address.next = self.cand.q.val();

        // The ready set: cleared by a read or a reset, set by a doorbell or a rearm (a set wins
        // over a read in the same cycle).
        self.set_mask.next = 0.into();
        if self.db_w_r.q.val() {
            self.set_mask.next =
                bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.db_d_r.q.val().get_bits::<6>(16));
        }
        // (A rearm is taken a cycle late, from registers: it is decided deep in the scheduler.)
        self.rearm_r.d.next = self.rearm.val();
        self.rearm_qpn_r.d.next = self.rearm_qpn.val();
        if self.rearm_r.q.val() {
            self.set_mask.next =
                self.set_mask.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.rearm_qpn_r.q.val()));
        }
        if self.poke.val() {
            self.set_mask.next =
                self.set_mask.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.poke_qpn.val()));
        }
        // A read clears its QP's bit a cycle later (the candidate is still `cand` then), unless
        // a doorbell, rearm or poke of the QP came with the read.
        self.clr_mask.next = 0.into();
        if self.rd_r.q.val() & !self.rd_set_r.q.val() {
            self.clr_mask.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cand.q.val());
        }
        if self.clear.val() {
            self.clr_mask.next =
                self.clr_mask.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.clear_qpn.val()));
        }
        self.ready_next.next = (self.ready.q.val() & !self.clr_mask.val()) | self.set_mask.val();
        self.ready.d.next = self.ready_next.val();
        // Each group's QPs after its pointer (a pointer is at most 2 cycles old when its group is
        // searched again: the search has visited the 7 other groups in between).
        // (Masked to 8 bits before each group's shift: Verilog widens the shift to 64 bits.)
        self.after_ptr.next = ((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(0)))
            & bit_cast::<64, 8>(0xFF.into()))
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(3)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 8)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(6)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 16)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(9)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 24)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(12)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 32)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(15)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 40)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(18)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 48)
            | (((bit_cast::<64, 8>(0xFE.into()) << bit_cast::<64, 3>(self.rr.q.val().get_bits::<3>(21)))
                & bit_cast::<64, 8>(0xFF.into()))
                << 56);
        self.eligible.d.next = self.ready_next.val() & self.after_ptr.val();
        // The group of the last pick moves its pointer to it.
        self.picked_r.d.next = false;
        self.rr_at.next = (bit_cast::<5, 3>(self.cand.q.val().get_bits::<3>(3)) << 1)
            + bit_cast::<5, 3>(self.cand.q.val().get_bits::<3>(3));
        if self.picked_r.q.val() {
            self.rr.d.next = (self.rr.q.val() & !(bit_cast::<24, 3>(7.into()) << bit_cast::<24, 5>(self.rr_at.val())))
                | (bit_cast::<24, 3>(self.cand.q.val().get_bits::<3>(0)) << bit_cast::<24, 5>(self.rr_at.val()));
        }
        self.others_r.d.next =
            (self.ready.q.val() & !(bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cand.q.val()))).any();
        self.others.next = self.others_r.q.val();

        // The search: the lowest set bit of this cycle's group.
        self.shifted.next = self.ready.q.val() >> (bit_cast::<64, 3>(self.grp.q.val()) << 3);
        self.group.next = self.shifted.val().get_bits::<8>(0);
        self.pick.next = 0.into();
        if self.group.val().get_bit(7) {
            self.pick.next = 7.into();
        }
        if self.group.val().get_bit(6) {
            self.pick.next = 6.into();
        }
        if self.group.val().get_bit(5) {
            self.pick.next = 5.into();
        }
        if self.group.val().get_bit(4) {
            self.pick.next = 4.into();
        }
        if self.group.val().get_bit(3) {
            self.pick.next = 3.into();
        }
        if self.group.val().get_bit(2) {
            self.pick.next = 2.into();
        }
        if self.group.val().get_bit(1) {
            self.pick.next = 1.into();
        }
        if self.group.val().get_bit(0) {
            self.pick.next = 0.into();
        }
        // The first ready QP after the group's pointer, if any, goes first.
        self.el_shifted.next = self.eligible.q.val() >> (bit_cast::<64, 3>(self.grp.q.val()) << 3);
        self.group_el.next = self.el_shifted.val().get_bits::<8>(0);
        self.pick_el.next = 7.into();
        if self.group_el.val().get_bit(6) {
            self.pick_el.next = 6.into();
        }
        if self.group_el.val().get_bit(5) {
            self.pick_el.next = 5.into();
        }
        if self.group_el.val().get_bit(4) {
            self.pick_el.next = 4.into();
        }
        if self.group_el.val().get_bit(3) {
            self.pick_el.next = 3.into();
        }
        if self.group_el.val().get_bit(2) {
            self.pick_el.next = 2.into();
        }
        if self.group_el.val().get_bit(1) {
            self.pick_el.next = 1.into();
        }
        if self.group_el.val().any() {
            self.pick.next = self.pick_el.val();
        }
        // The cycle after a read the search goes on (its group is the one after the
        // candidate's, whose stale bit it cannot see); a new pick replaces the candidate.
        self.searching.next = !self.cand_valid.q.val() | self.rd_r.q.val();
        if self.rd_r.q.val() {
            self.cand_valid.d.next = false;
        }
        if self.searching.val() {
            self.grp.d.next = self.grp.q.val() + 1;
            if self.group.val().any() {
                self.cand.d.next = (bit_cast::<6, 3>(self.grp.q.val()) << 3) | bit_cast::<6, 3>(self.pick.val());
                self.cand_valid.d.next = true;
                self.picked_r.d.next = true;
            }
        }
        // The index is read the cycle after the pick; then the candidate is offered. A
        // doorbell for the candidate hides it for a cycle, so the offer carries the index it
        // wrote (the table's read port sees a write one cycle late); a reset drops it.
        self.db_hit.next = self.db_w_r.q.val() & (self.db_d_r.q.val().get_bits::<6>(16) == self.cand.q.val());
        self.clr_hit.next = self.clear.val() & (self.clear_qpn.val() == self.cand.q.val());
        self.rearm_hit.next = self.rearm_r.q.val() & (self.rearm_qpn_r.q.val() == self.cand.q.val());
        self.poke_hit.next = self.poke.val() & (self.poke_qpn.val() == self.cand.q.val());
        self.shown.d.next = self.cand_valid.q.val() & !self.db_hit.val() & !self.clr_hit.val() & !self.rd_r.q.val();
        if self.clr_hit.val() & !self.rd_r.q.val() {
            self.cand_valid.d.next = false;
        }
        // The read itself only reaches these two registers.
        self.rd_r.d.next = self.read.val() & self.shown.q.val() & !self.rd_r.q.val();
        self.rd_set_r.d.next = self.db_hit.val() | self.rearm_hit.val() | self.poke_hit.val();
        self.empty.next = !self.shown.q.val() | self.rd_r.q.val();
        self.data.next = (bit_cast::<32, 6>(self.cand.q.val()) << 16) | bit_cast::<32, 16>(self.pi_ram.read_data.val());
        if self.reset.val() {
            self.ready.d.next = 0.into();
            self.eligible.d.next = 0.into();
            self.rr.d.next = 0.into();
            self.picked_r.d.next = false;
            self.cand_valid.d.next = false;
            self.shown.d.next = false;
            self.db_w_r.d.next = false;
            self.rd_r.d.next = false;
        }
    }
}
