//! The requester's record of what it has sent: per QP, the PSN after the highest request
//! packet ever emitted, against which the completer recognises a response to nothing it sent
//! (a forged or stale ACK, NAK or READ response; IBTA Vol 1 9.7.5.1.1: a response whose PSN is
//! not outstanding is dropped).
use rust_hdl::prelude::*;

/// Keeps, per QP, the PSN after the highest request packet the scheduler reported sending
/// (mod 2^24: a report is kept only if it is ahead of the entry by less than 2^23, so a
/// go-back-N resend, which reports lower PSNs, never lowers it, or the ACKs of the first
/// sending would look like ghosts). INIT_SQ_PSN (`init`, `init_qpn`, `init_psn`: the QP's first
/// PSN) sets the entry.
///
/// A report (`emit`, `emit_qpn`, `emit_psn` = the PSN after the packet; at most one per 2
/// cycles) is registered while its QP's entry is read from one copy of the table, compared the
/// next cycle and written to both copies; an INIT_SQ_PSN in that cycle wins the write port and
/// the report waits one cycle in a holding register. The compare takes the last cycle's write
/// instead of the table when it was to the same QP (the read did not see it): without this, a
/// report compared while the one before it of the same QP waited in the holding register (or
/// while an INIT_SQ_PSN of its QP was written) was compared with a stale entry, and a resend
/// could lower the entry (`sent_psn_tb` reproduces it). The other copy is read at `read_qpn` for
/// the completer: `read_psn` is its entry one cycle later (synchronous block RAM).
///
/// Latency: a report is visible at `read_psn` 3 cycles after it is presented (4 if an
/// INIT_SQ_PSN took the write port). Initiation interval: 1 report per 2 cycles. Logic: a 6-bit
/// compare and a 24-bit select, then a 24-bit subtract and compare, ≤ 6 LUT levels.
#[derive(LogicBlock, Default)]
pub struct SentPsnTable {
    pub clock: Signal<In, Clock>,
    /// The scheduler's report: a request packet of QP `emit_qpn` left; `emit_psn` is the PSN
    /// after it.
    pub emit: Signal<In, Bit>,
    pub emit_qpn: Signal<In, Bits<6>>,
    pub emit_psn: Signal<In, Bits<24>>,
    /// INIT_SQ_PSN of QP `init_qpn`: its entry becomes `init_psn`.
    pub init: Signal<In, Bit>,
    pub init_qpn: Signal<In, Bits<6>>,
    pub init_psn: Signal<In, Bits<24>>,
    /// The completer's read port.
    pub read_qpn: Signal<In, Bits<6>>,
    pub read_psn: Signal<Out, Bits<24>>,
    /// The completer's copy and the copy read at the report's QP.
    read_ram: RAM<Bits<24>, 6>,
    max_ram: RAM<Bits<24>, 6>,
    /// The report being compared (one cycle after it was presented).
    em_v: DFF<Bit>,
    em_q: DFF<Bits<6>>,
    em_p: DFF<Bits<24>>,
    /// A report that met an INIT_SQ_PSN, waiting for the write port.
    hold_v: DFF<Bit>,
    hold_q: DFF<Bits<6>>,
    hold_p: DFF<Bits<24>>,
    /// Last cycle's write, forwarded to the compare: the table read for a report does not see
    /// a write in its own cycle (a held report, or an INIT_SQ_PSN, of the same QP).
    lw_v: DFF<Bit>,
    lw_q: DFF<Bits<6>>,
    lw_p: DFF<Bits<24>>,
    cur: Signal<Local, Bits<24>>,
    diff: Signal<Local, Bits<24>>,
    ahead: Signal<Local, Bit>,
    we: Signal<Local, Bit>,
    wa: Signal<Local, Bits<6>>,
    wd: Signal<Local, Bits<24>>,
}

impl Logic for SentPsnTable {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, em_v, em_q, em_p, hold_v, hold_q, hold_p, lw_v, lw_q, lw_p);
        self.read_ram.read_clock.next = self.clock.val();
        self.read_ram.write_clock.next = self.clock.val();
        self.max_ram.read_clock.next = self.clock.val();
        self.max_ram.write_clock.next = self.clock.val();
        self.read_ram.read_address.next = self.read_qpn.val();
        self.read_psn.next = self.read_ram.read_data.val();
        self.max_ram.read_address.next = self.emit_qpn.val();
        self.em_v.d.next = self.emit.val();
        self.em_q.d.next = self.emit_qpn.val();
        self.em_p.d.next = self.emit_psn.val();
        self.cur.next = self.max_ram.read_data.val();
        if self.lw_v.q.val() & (self.lw_q.q.val() == self.em_q.q.val()) {
            self.cur.next = self.lw_p.q.val();
        }
        self.diff.next = self.em_p.q.val() - self.cur.val();
        self.ahead.next = self.em_v.q.val() & !self.diff.val().get_bit(23) & self.diff.val().any();
        self.we.next = false;
        self.wa.next = self.em_q.q.val();
        self.wd.next = self.em_p.q.val();
        if self.init.val() {
            self.we.next = true;
            self.wa.next = self.init_qpn.val();
            self.wd.next = self.init_psn.val();
            if self.ahead.val() {
                self.hold_v.d.next = true;
                self.hold_q.d.next = self.em_q.q.val();
                self.hold_p.d.next = self.em_p.q.val();
            }
        } else if self.hold_v.q.val() {
            self.we.next = true;
            self.wa.next = self.hold_q.q.val();
            self.wd.next = self.hold_p.q.val();
            self.hold_v.d.next = self.ahead.val();
            self.hold_q.d.next = self.em_q.q.val();
            self.hold_p.d.next = self.em_p.q.val();
        } else {
            self.we.next = self.ahead.val();
        }
        self.lw_v.d.next = self.we.val();
        self.lw_q.d.next = self.wa.val();
        self.lw_p.d.next = self.wd.val();
        // Both copies are written with the same address and data in the same cycle.
        self.read_ram.write_enable.next = self.we.val();
        self.read_ram.write_address.next = self.wa.val();
        self.read_ram.write_data.next = self.wd.val();
        self.max_ram.write_enable.next = self.we.val();
        self.max_ram.write_address.next = self.wa.val();
        self.max_ram.write_data.next = self.wd.val();
    }
}
