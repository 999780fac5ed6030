//! Local ACK timeout: one timer per QP, swept round-robin.
use crate::numbers::Numbers;
use crate::records::{AckProgressRec, QpContextRec, RnrWaitRec, TimerEventRec};
use rust_hdl::prelude::*;

/// Detects requester QPs that have unacknowledged WQEs and made no progress for the QP's local
/// ACK timeout, 4.096 µs × 2^TIMEOUT (IBTA Vol 1 9.7.6.1.3, ibv_modify_qp(3) `timeout`), which
/// at the 250 MHz model clock is exactly `1024 << TIMEOUT` cycles. TIMEOUT 0 disables it, and
/// only QPs in RTS run a timer.
///
/// It keeps its own copies of each QP's count of WQEs sent and WQEs retired, written from the
/// scheduler's and the RX engine's write buses (`sent_*`, `acked_*`), and visits one QP per
/// cycle: while a QP is idle or progressing (its retired count, or the READ response it
/// expects next, moved since the last visit) its
/// deadline is pushed out, and so it is while the scheduler is sending the QP's packets (the
/// timeout counts from the last request sent, so a long message is not timed out while it is
/// still leaving); when the deadline passes with WQEs outstanding it pushes the QPN
/// into the timeout FIFO and re-arms. Resolution: one 64-cycle sweep (256 ns).
///
/// It also times RNR waits (IBTA Vol 1 9.7.5.2.8): the completer arms one with the RNR NAK's
/// timer code, the QP's ACK timer is held meanwhile, and when the time from the table in
/// PROTOCOL.md has passed (resolution: the 64-cycle sweep) the QPN goes into the same FIFO with
/// `rnr_end` set ([`TimerEventRec`]), and the completer resends.
///
/// A QP whose go-back-N request waits for the scheduler is held too, and progress is any
/// forward move of the acknowledged PSN (the low byte of it in the completer's `acked_data`), not only a
/// retired WQE (IBTA Vol 1 9.7.6.1.3). A context write for a QP ends any RNR wait of its
/// number, so nothing of a previous connection holds the next one's timer.
///
/// Tables: deadlines (48-bit cycle counts), last retired counts, timeout exponents and RNR
/// waits, 64 entries each, plus the two snooped copies.
#[derive(LogicBlock, Default)]
pub struct AckTimer {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub cmd_fire: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub sent_we: Signal<In, Bit>,
    pub sent_addr: Signal<In, Bits<6>>,
    pub sent_data: Signal<In, Bits<16>>,
    pub acked_we: Signal<In, Bit>,
    pub acked_addr: Signal<In, Bits<6>>,
    /// The retired-WQE count and the low byte of the last PSN acknowledged (a READ
    /// response's progress).
    pub acked_data: Signal<In, AckProgressRec>,
    pub to_full: Signal<In, Bit>,
    /// The scheduler is emitting packets of QP `tx_qpn`.
    pub tx_active: Signal<In, Bit>,
    pub tx_qpn: Signal<In, Bits<6>>,
    /// RNR wait requests from the completer: QP `rnr_qpn` got an RNR NAK with timer code
    /// `rnr_code` and resends after that time (IBTA Vol 1 9.7.5.2.8, the table in PROTOCOL.md).
    pub rnr_arm: Signal<In, Bit>,
    pub rnr_qpn: Signal<In, Bits<6>>,
    pub rnr_code: Signal<In, Bits<5>>,
    /// The completer asked the scheduler to go back N (or flush) for QP `rw_set_qpn`, and the
    /// scheduler took such a request for QP `rw_clr_qpn`: while a QP's request waits, its
    /// ACK timer is held (the requester owes the resend; the responder owes nothing yet).
    pub rw_set: Signal<In, Bit>,
    pub rw_set_qpn: Signal<In, Bits<6>>,
    pub rw_clr: Signal<In, Bit>,
    pub rw_clr_qpn: Signal<In, Bits<6>>,
    /// A local ACK timeout, or the end of an RNR wait (`rnr_end`), of QP `to_qpn.qpn`.
    pub to_write: Signal<Out, Bit>,
    pub to_qpn: Signal<Out, TimerEventRec>,
    sent_ram: RAM<Bits<16>, 6>,
    acked_ram: RAM<AckProgressRec, 6>,
    snap_ram: RAM<AckProgressRec, 6>,
    deadline_ram: RAM<Bits<48>, 6>,
    exp_ram: RAM<Bits<8>, 6>,
    /// Per QP: an RNR wait pending and when it ends.
    rnr_ram: RAM<RnrWaitRec, 6>,
    /// QPs with a go-back-N request waiting for the scheduler.
    rw_pend: DFF<Bits<64>>,
    rw_set_r: DFF<Bit>,
    rw_set_qpn_r: DFF<Bits<6>>,
    rw_clr_r: DFF<Bit>,
    rw_clr_qpn_r: DFF<Bits<6>>,
    rw_mask_set: Signal<Local, Bits<64>>,
    rw_mask_clr: Signal<Local, Bits<64>>,
    /// A context command writing the QP context of `cmd_index` (registered), to end an RNR
    /// wait armed by a previous connection on that QP number.
    cmd_qp_r: DFF<Bit>,
    cmd_idx_r: DFF<Bits<6>>,
    rnr_arm_r: DFF<Bit>,
    rnr_qpn_r: DFF<Bits<6>>,
    now: DFF<Bits<48>>,
    scan: DFF<Bits<6>>,
    visit: DFF<Bits<6>>,
    valid: DFF<Bit>,
    tx_active_r: DFF<Bit>,
    tx_qpn_r: DFF<Bits<6>>,
    /// The QP context a context command writes.
    cmd_qp: Signal<Local, QpContextRec>,
    exp: Signal<Local, Bits<8>>,
    period: Signal<Local, Bits<48>>,
    late: Signal<Local, Bits<48>>,
    rnr_cycles: Signal<Local, Bits<48>>,
    rnr_pend: Signal<Local, Bit>,
    rnr_late: Signal<Local, Bits<48>>,
    rnr_fresh: Signal<Local, Bit>,
    rw_pend_now: Signal<Local, Bit>,
    rw_pend_sh: Signal<Local, Bits<64>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for AckTimer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            now,
            scan,
            visit,
            valid,
            tx_active_r,
            tx_qpn_r,
            rnr_arm_r,
            rnr_qpn_r,
            rw_pend,
            cmd_qp_r,
            cmd_idx_r,
            rw_set_r,
            rw_set_qpn_r,
            rw_clr_r,
            rw_clr_qpn_r
        );
        // (Taken a cycle late, from registers: both are decided deep in their engines; a set
        // and a clear of one QP a cycle apart keep their order.)
        self.rw_set_r.d.next = self.rw_set.val();
        self.rw_set_qpn_r.d.next = self.rw_set_qpn.val();
        self.rw_clr_r.d.next = self.rw_clr.val();
        self.rw_clr_qpn_r.d.next = self.rw_clr_qpn.val();
        self.rw_mask_set.next = 0.into();
        if self.rw_set_r.q.val() {
            self.rw_mask_set.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.rw_set_qpn_r.q.val());
        }
        self.rw_mask_clr.next = 0.into();
        if self.rw_clr_r.q.val() {
            self.rw_mask_clr.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.rw_clr_qpn_r.q.val());
        }
        self.rw_pend.d.next = (self.rw_pend.q.val() & !self.rw_mask_clr.val()) | self.rw_mask_set.val();
        self.cmd_qp_r.d.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_qp);
        self.cmd_idx_r.d.next = self.cmd_index.val().get_bits::<6>(0);
        self.rnr_arm_r.d.next = self.rnr_arm.val();
        self.rnr_qpn_r.d.next = self.rnr_qpn.val();
        self.rnr_ram.read_clock.next = self.clock.val();
        self.rnr_ram.write_clock.next = self.clock.val();
        // RNR timer codes in cycles at 250 MHz (IBTA Vol 1 Table 45: 0 = 655.36 ms, 1 = 0.01 ms,
        // …, 31 = 491.52 ms).
        self.rnr_cycles.next = 0.into();
        match self.rnr_code.val().index() {
            0 => {
                self.rnr_cycles.next = 163_840_000.into();
            }
            1 => {
                self.rnr_cycles.next = 2_500.into();
            }
            2 => {
                self.rnr_cycles.next = 5_000.into();
            }
            3 => {
                self.rnr_cycles.next = 7_500.into();
            }
            4 => {
                self.rnr_cycles.next = 10_000.into();
            }
            5 => {
                self.rnr_cycles.next = 15_000.into();
            }
            6 => {
                self.rnr_cycles.next = 20_000.into();
            }
            7 => {
                self.rnr_cycles.next = 30_000.into();
            }
            8 => {
                self.rnr_cycles.next = 40_000.into();
            }
            9 => {
                self.rnr_cycles.next = 60_000.into();
            }
            10 => {
                self.rnr_cycles.next = 80_000.into();
            }
            11 => {
                self.rnr_cycles.next = 120_000.into();
            }
            12 => {
                self.rnr_cycles.next = 160_000.into();
            }
            13 => {
                self.rnr_cycles.next = 240_000.into();
            }
            14 => {
                self.rnr_cycles.next = 320_000.into();
            }
            15 => {
                self.rnr_cycles.next = 480_000.into();
            }
            16 => {
                self.rnr_cycles.next = 640_000.into();
            }
            17 => {
                self.rnr_cycles.next = 960_000.into();
            }
            18 => {
                self.rnr_cycles.next = 1_280_000.into();
            }
            19 => {
                self.rnr_cycles.next = 1_920_000.into();
            }
            20 => {
                self.rnr_cycles.next = 2_560_000.into();
            }
            21 => {
                self.rnr_cycles.next = 3_840_000.into();
            }
            22 => {
                self.rnr_cycles.next = 5_120_000.into();
            }
            23 => {
                self.rnr_cycles.next = 7_680_000.into();
            }
            24 => {
                self.rnr_cycles.next = 10_240_000.into();
            }
            25 => {
                self.rnr_cycles.next = 15_360_000.into();
            }
            26 => {
                self.rnr_cycles.next = 20_480_000.into();
            }
            27 => {
                self.rnr_cycles.next = 30_720_000.into();
            }
            28 => {
                self.rnr_cycles.next = 40_960_000.into();
            }
            29 => {
                self.rnr_cycles.next = 61_440_000.into();
            }
            30 => {
                self.rnr_cycles.next = 81_920_000.into();
            }
            31 => {
                self.rnr_cycles.next = 122_880_000.into();
            }
            _ => {}
        }
        self.tx_active_r.d.next = self.tx_active.val();
        self.tx_qpn_r.d.next = self.tx_qpn.val();
        self.sent_ram.read_clock.next = self.clock.val();
        self.sent_ram.write_clock.next = self.clock.val();
        self.acked_ram.read_clock.next = self.clock.val();
        self.acked_ram.write_clock.next = self.clock.val();
        self.snap_ram.read_clock.next = self.clock.val();
        self.snap_ram.write_clock.next = self.clock.val();
        self.deadline_ram.read_clock.next = self.clock.val();
        self.deadline_ram.write_clock.next = self.clock.val();
        self.exp_ram.read_clock.next = self.clock.val();
        self.exp_ram.write_clock.next = self.clock.val();

        self.now.d.next = self.now.q.val() + 1;
        // Snooped copies.
        self.sent_ram.write_enable.next = self.sent_we.val();
        self.sent_ram.write_address.next = self.sent_addr.val();
        self.sent_ram.write_data.next = self.sent_data.val();
        self.acked_ram.write_enable.next = self.acked_we.val();
        self.acked_ram.write_address.next = self.acked_addr.val();
        self.acked_ram.write_data.next = self.acked_data.val();
        // The timeout exponent, kept only while the QP is in RTS.
        self.cmd_qp.next = self.cmd_record.val().get_bits::<448>(0).into();
        self.exp_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_qp);
        self.exp_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.exp_ram.write_data.next = 0.into();
        if self.cmd_qp.val().state == self.nums.val().qps_rts {
            self.exp_ram.write_data.next = bit_cast::<8, 5>(self.cmd_qp.val().timeout);
        }

        // Sweep: address QP `scan` now, judge it (as `visit`) next cycle.
        self.scan.d.next = self.scan.q.val() + 1;
        self.visit.d.next = self.scan.q.val();
        self.valid.d.next = true;
        self.sent_ram.read_address.next = self.scan.q.val();
        self.acked_ram.read_address.next = self.scan.q.val();
        self.snap_ram.read_address.next = self.scan.q.val();
        self.deadline_ram.read_address.next = self.scan.q.val();
        self.exp_ram.read_address.next = self.scan.q.val();
        self.exp.next = self.exp_ram.read_data.val();
        self.period.next = bit_cast::<48, 11>(1024.into()) << bit_cast::<48, 8>(self.exp.val());
        self.late.next = self.now.q.val() - self.deadline_ram.read_data.val();
        self.rw_pend_sh.next = self.rw_pend.q.val() >> bit_cast::<64, 6>(self.visit.q.val());
        self.rw_pend_now.next = self.rw_pend_sh.val().get_bit(0);

        // RNR waits: armed by the completer (that write has the port), ended by the sweep.
        self.rnr_ram.read_address.next = self.scan.q.val();
        self.rnr_pend.next = self.rnr_ram.read_data.val().pending.any();
        self.rnr_late.next = self.now.q.val() - self.rnr_ram.read_data.val().end;
        // Armed in the cycle the visited entry was read: the read saw the old value.
        self.rnr_fresh.next = self.rnr_arm_r.q.val() & (self.rnr_qpn_r.q.val() == self.visit.q.val());
        self.rnr_ram.write_enable.next = self.rnr_arm.val();
        self.rnr_ram.write_address.next = self.rnr_qpn.val();
        self.rnr_ram.write_data.next.end = self.now.q.val() + self.rnr_cycles.val();
        self.rnr_ram.write_data.next.pending = 1.into();
        if self.cmd_qp_r.q.val() {
            // A QP context written (reset, new connection): no RNR wait of the old connection
            // survives it (a command and an RNR arm for one QP never meet: a QP being written
            // takes no packets).
            self.rnr_ram.write_enable.next = true;
            self.rnr_ram.write_address.next = self.cmd_idx_r.q.val();
            self.rnr_ram.write_data.next.end = 0.into();
            self.rnr_ram.write_data.next.pending = 0.into();
        }

        self.snap_ram.write_enable.next = false;
        self.snap_ram.write_address.next = self.visit.q.val();
        self.snap_ram.write_data.next = self.acked_ram.read_data.val();
        self.deadline_ram.write_enable.next = false;
        self.deadline_ram.write_address.next = self.visit.q.val();
        self.deadline_ram.write_data.next = self.now.q.val() + self.period.val();
        self.to_write.next = false;
        self.to_qpn.next.qpn = self.visit.q.val();
        self.to_qpn.next.rsvd = 0.into();
        self.to_qpn.next.rnr_end = 0.into();
        if self.valid.q.val() & (self.rnr_pend.val() | self.rnr_fresh.val()) {
            // Waiting out an RNR NAK: the ACK timer is held; at the end the completer resends.
            self.snap_ram.write_enable.next = true;
            self.deadline_ram.write_enable.next = true;
            if !self.rnr_late.val().get_bit(47)
                & !self.to_full.val()
                & !self.rnr_arm.val()
                & !self.rnr_fresh.val()
                & !self.cmd_qp_r.q.val()
            {
                self.to_write.next = true;
                self.to_qpn.next.rnr_end = 1.into();
                self.rnr_ram.write_enable.next = true;
                self.rnr_ram.write_address.next = self.visit.q.val();
                self.rnr_ram.write_data.next.end = 0.into();
                self.rnr_ram.write_data.next.pending = 0.into();
            }
        } else if self.valid.q.val() {
            if (self.exp.val() == 0)
                | (self.sent_ram.read_data.val() == self.acked_ram.read_data.val().acked)
                | (self.acked_ram.read_data.val() != self.snap_ram.read_data.val())
                | (self.tx_active_r.q.val() & (self.tx_qpn_r.q.val() == self.visit.q.val()))
                | self.rw_pend_now.val()
            {
                // Idle, disabled, progressing, still sending or owing a resend: re-arm.
                self.snap_ram.write_enable.next = true;
                self.deadline_ram.write_enable.next = true;
            } else if !self.late.val().get_bit(47) & !self.to_full.val() {
                self.to_write.next = true;
                self.deadline_ram.write_enable.next = true;
            }
        }
        if self.reset.val() {
            self.valid.d.next = false;
        }
    }
}
