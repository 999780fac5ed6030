//! RX writer: moves accepted payloads and CQEs to host memory and releases ACKs in order.
use crate::gearbox::Gearbox;
use crate::numbers::Numbers;
use crate::records::{AckJob, WriteJob};
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Executes [`WriteJob`]s from the RX engine, in order, at one AXI beat per cycle.
///
/// A payload job streams `plen` bytes from `off` bytes into its packet (buffer beat
/// `start + off / 64`, byte `off mod 64`; `off` up to 8191, so a receive scattered over several
/// entries takes one job per entry piece, IBTA Vol 1 9.7.4.1.3) through a [`Gearbox`]
/// (a lead chunk of `addr mod 64` empty bytes first, so beats land 64-byte aligned) and issues
/// one 64-byte AXI write per beat with byte strobes covering exactly `[addr, addr + plen)`. A
/// CQE job writes 32 bytes the same way, an atomic's result job 8 bytes. Packet-buffer space is released as soon as the
/// payload has been read. An ACK/NAK attached to a job waits in a small queue until the host
/// has answered every write issued up to and including that job (B responses counted), then
/// goes to the TX arbiter: the requester never sees an ACK for data not yet in memory
/// (IBTA Vol 1 9.7.5.1.2), and the stream never stalls for write responses.
///
/// Timing: one cycle per job for the lead chunk, then one cycle per payload beat of the packet
/// buffer; jobs follow back to back. A chunk's AXI write beat is offered 4 cycles after the
/// gearbox took it (the gearbox's latency). Every gearbox input comes from registers through a
/// compare and a mux (the payload chunk length is `min(bytes left, w_lim)`, `w_lim` registered).
/// Address queue: 4 jobs; ACK queue: 8 ACKs.
///
/// Completion events: a CQE job with `ev` (set by [`crate::cq_writer::CqWriter`] for an armed
/// CQ) queues its vector behind its write in the same queue as the ACKs (an entry may carry
/// both: a receive CQE with its message's ACK); once the host has answered every write up to
/// the CQE's, `ev_valid` pulses for a cycle with `ev_vector` (registered), so an interrupt
/// never overtakes the CQE it announces (PCIe ordering: the MSI-X write follows the CQE's
/// posted write).
#[derive(LogicBlock, Default)]
pub struct RxWriter {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub job_empty: Signal<In, Bit>,
    pub job: Signal<In, WriteJob>,
    pub job_read: Signal<Out, Bit>,
    pub buf_raddr: Signal<Out, Bits<10>>,
    pub buf_rdata: Signal<In, Bits<512>>,
    pub rd_ptr: Signal<Out, Bits<11>>,
    pub awvalid: Signal<Out, Bit>,
    pub awready: Signal<In, Bit>,
    pub awaddr: Signal<Out, Bits<64>>,
    pub wvalid: Signal<Out, Bit>,
    pub wready: Signal<In, Bit>,
    pub wdata: Signal<Out, Bits<512>>,
    pub wstrb: Signal<Out, Bits<64>>,
    pub bvalid: Signal<In, Bit>,
    pub ack_full: Signal<In, Bit>,
    pub ack_write: Signal<Out, Bit>,
    pub ack: Signal<Out, AckJob>,
    pub cnt_tx_ack: Signal<Out, Bit>,
    pub cnt_tx_nak: Signal<Out, Bit>,
    /// A CQ's completion event, its CQE now in host memory: one-cycle pulse, registered.
    pub ev_valid: Signal<Out, Bit>,
    pub ev_vector: Signal<Out, Bits<5>>,
    /// A `bar` / `res` job's writes, and every write before them, are in host memory:
    /// one-cycle pulses, registered, in job order (for [`crate::atomic_unit::AtomicUnit`]).
    pub bar_done: Signal<Out, Bit>,
    pub res_done: Signal<Out, Bit>,
    /// No job waits and every write issued has been acknowledged by the host (registered:
    /// it reflects the cycle before; a job pushed in cycle `t` clears it from `t + 2`).
    pub idle: Signal<Out, Bit>,
    /// What `idle` will be in the next cycle (the input of its register), for a user that
    /// registers its own view of it and must not see it a cycle late.
    pub idle_next: Signal<Out, Bit>,
    /// More ACK-queue entries or jobs wait behind the entry leaving this cycle (for
    /// [`crate::ack_coalescer::AckCoalescer`]: a later ACK may replace the one released).
    pub ack_more: Signal<Out, Bit>,
    gb: Gearbox,
    aq: ResetFifo<Bits<80>, 2, 3, 1>,
    /// ACKs and completion events behind their jobs' writes: bits 255..0 the ACK, 271..256 the
    /// write-response count to wait for, 272 an ACK to send, 273 an event to raise, 278..274
    /// its vector, 279 a `bar` barrier, 280 a `res` barrier.
    pa: ResetFifo<Bits<281>, 3, 4, 1>,
    bar_r: DFF<Bit>,
    res_r: DFF<Bit>,
    pa_any: Signal<Local, Bit>,
    ev_r: DFF<Bit>,
    ev_vec_r: DFF<Bits<5>>,
    pa_go: Signal<Local, Bit>,
    pa_has_ack: Signal<Local, Bit>,
    job_flags: Signal<Local, Bits<281>>,
    state: DFF<Bits<2>>,
    start_r: DFF<Bits<10>>,
    /// The job's byte offset into its packet (`off`).
    off_r: DFF<Bits<13>>,
    release_r: DFF<Bits<8>>,
    w_rem: DFF<Bits<13>>,
    w_first: DFF<Bit>,
    // Longest chunk the next payload beat may carry: 64 - (off mod 64) for the first, then 64.
    w_lim: DFF<Bits<7>>,
    j_cur: DFF<Bits<8>>,
    cqe_r: DFF<Bits<256>>,
    /// Bytes of the CQE-path chunk: 32 for a CQE, 8 for an atomic's result.
    val_len: DFF<Bits<7>>,
    idle_r: DFF<Bit>,
    /// Entries in the ACK queue (written, not yet read).
    pa_cnt: DFF<Bits<4>>,
    idle_c: Signal<Local, Bit>,
    rdp: DFF<Bits<11>>,
    beats_planned: DFF<Bits<16>>,
    b_count: DFF<Bits<16>>,
    out_k: DFF<Bits<8>>,
    aw_done: DFF<Bit>,
    w_done: DFF<Bit>,
    j_kind: Signal<Local, Bits<2>>,
    j_addr: Signal<Local, Bits<64>>,
    j_plen: Signal<Local, Bits<13>>,
    j_off: Signal<Local, Bits<13>>,
    /// Beat of the packet holding byte `off` (`off / 64`).
    j_obeat: Signal<Local, Bits<8>>,
    j_start: Signal<Local, Bits<10>>,
    j_len: Signal<Local, Bits<16>>,
    j_lead: Signal<Local, Bits<7>>,
    j_beats: Signal<Local, Bits<16>>,
    can_start: Signal<Local, Bit>,
    beat_skip: Signal<Local, Bits<7>>,
    beat_len: Signal<Local, Bits<13>>,
    beat_lim: Signal<Local, Bits<13>>,
    beat_last: Signal<Local, Bit>,
    q_base: Signal<Local, Bits<64>>,
    q_lead: Signal<Local, Bits<7>>,
    q_beats: Signal<Local, Bits<8>>,
    strb_lo: Signal<Local, Bits<64>>,
    aw_fire: Signal<Local, Bit>,
    w_fire: Signal<Local, Bit>,
    beat_fire: Signal<Local, Bit>,
    pa_target: Signal<Local, Bits<16>>,
    pa_wait: Signal<Local, Bits<16>>,
    pa_ack: Signal<Local, AckJob>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

// States: 0 take a job (and push its lead chunk), 1 stream payload beats, 2 CQE or 8-byte
// value chunk.

impl Logic for RxWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            start_r,
            off_r,
            release_r,
            w_rem,
            w_first,
            w_lim,
            j_cur,
            cqe_r,
            rdp,
            beats_planned,
            b_count,
            out_k,
            aw_done,
            w_done,
            val_len,
            idle_r
        );
        clock!(self, clock, gb, aq, pa);
        self.pa.reset.next = self.reset.val();
        self.aq.reset.next = self.reset.val();
        dff_setup!(self, clock, ev_r, ev_vec_r, bar_r, res_r, pa_cnt);
        self.gb.reset.next = self.reset.val();
        self.rd_ptr.next = self.rdp.q.val();

        // ---- The job at the head ----
        self.j_kind.next = self.job.val().kind;
        self.j_addr.next = self.job.val().addr;
        self.j_plen.next = self.job.val().plen;
        self.j_off.next = self.job.val().off;
        self.j_obeat.next = bit_cast::<8, 7>(self.j_off.val().get_bits::<7>(6));
        self.j_start.next = self.job.val().start;
        self.j_lead.next = bit_cast::<7, 6>(self.j_addr.val().get_bits::<6>(0));
        self.j_len.next = bit_cast::<16, 13>(self.j_plen.val());
        if self.j_kind.val() == 1 {
            self.j_len.next = 32.into();
        }
        if self.j_kind.val() == 3 {
            self.j_len.next = 8.into();
        }
        self.idle_c.next = (self.state.q.val() == 0)
            & self.job_empty.val()
            & self.aq.empty.val()
            & (self.b_count.q.val() == self.beats_planned.q.val());
        self.idle_r.d.next = self.idle_c.val();
        self.idle.next = self.idle_r.q.val();
        self.idle_next.next = self.idle_c.val();
        self.j_beats.next = (bit_cast::<16, 7>(self.j_lead.val()) + self.j_len.val() + 63) >> 6;
        // The job leaves an entry in the ACK queue: an ACK, an event or a barrier.
        self.pa_any.next = self.job.val().need_ack.any()
            | self.job.val().ev.any()
            | self.job.val().bar.any()
            | self.job.val().res.any();
        self.can_start.next = !self.job_empty.val()
            & !self.aq.full.val()
            & !(self.pa_any.val() & self.pa.full.val())
            & ((self.j_kind.val() == 2) | self.gb.in_ready.val());

        // ---- Gearbox input ----
        self.beat_skip.next = 0.into();
        if self.w_first.q.val() {
            self.beat_skip.next = bit_cast::<7, 6>(self.off_r.q.val().get_bits::<6>(0));
        }
        self.beat_lim.next = bit_cast::<13, 7>(self.w_lim.q.val());
        self.beat_last.next = self.w_rem.q.val() <= self.beat_lim.val();
        if self.beat_last.val() {
            self.beat_len.next = self.w_rem.q.val();
        } else {
            self.beat_len.next = self.beat_lim.val();
        }
        self.gb.in_valid.next = false;
        self.gb.in_data.next = self.buf_rdata.val();
        self.gb.in_skip.next = self.beat_skip.val();
        self.gb.in_len.next = self.beat_len.val().get_bits::<7>(0);
        self.gb.in_last.next = self.beat_last.val();
        self.buf_raddr.next = self.start_r.q.val() + bit_cast::<10, 8>(self.j_cur.q.val());
        self.job_read.next = false;
        self.aq.write.next = false;
        self.aq.data_in.next = bit_cast::<80, 64>(self.j_addr.val() >> 6)
            | (bit_cast::<80, 7>(self.j_lead.val()) << 58)
            | (bit_cast::<80, 16>(self.j_beats.val()) << 65);
        self.pa.write.next = false;
        self.job_flags.next = (bit_cast::<281, 1>(self.job.val().need_ack) << 272)
            | (bit_cast::<281, 1>(self.job.val().ev) << 273)
            | (bit_cast::<281, 5>(self.job.val().ev_vector) << 274)
            | (bit_cast::<281, 1>(self.job.val().bar) << 279)
            | (bit_cast::<281, 1>(self.job.val().res) << 280);
        self.pa.data_in.next = bit_cast::<281, 256>(self.job.val().ack.into())
            | (bit_cast::<281, 16>(self.beats_planned.q.val()) << 256)
            | self.job_flags.val();

        match self.state.q.val().index() {
            0 => {
                if self.can_start.val() {
                    self.job_read.next = true;
                    if self.pa_any.val() {
                        self.pa.write.next = true;
                    }
                    if self.j_kind.val() == 2 {
                        self.rdp.d.next = self.rdp.q.val() + bit_cast::<11, 8>(self.job.val().release);
                    } else {
                        // Lead chunk, and the beats this job will write.
                        self.gb.in_valid.next = true;
                        self.gb.in_data.next = 0.into();
                        self.gb.in_skip.next = 0.into();
                        self.gb.in_len.next = self.j_lead.val();
                        self.gb.in_last.next = false;
                        self.aq.write.next = true;
                        self.beats_planned.d.next = self.beats_planned.q.val() + self.j_beats.val();
                        self.pa.data_in.next = bit_cast::<281, 256>(self.job.val().ack.into())
                            | (bit_cast::<281, 16>(self.beats_planned.q.val() + self.j_beats.val()) << 256)
                            | self.job_flags.val();
                        self.start_r.d.next = self.j_start.val();
                        self.off_r.d.next = self.j_off.val();
                        self.release_r.d.next = self.job.val().release;
                        self.w_rem.d.next = self.j_plen.val();
                        self.w_first.d.next = true;
                        self.w_lim.d.next = 64_u64 - bit_cast::<7, 6>(self.j_off.val().get_bits::<6>(0));
                        self.j_cur.d.next = self.j_obeat.val();
                        // Present the first payload beat's address now: data next cycle.
                        self.buf_raddr.next = self.j_start.val() + bit_cast::<10, 8>(self.j_obeat.val());
                        self.cqe_r.d.next = self.job.val().cqe;
                        self.val_len.d.next = 32.into();
                        if self.j_kind.val() == 3 {
                            self.val_len.d.next = 8.into();
                        }
                        if self.j_kind.val().get_bit(0) {
                            // A CQE or value job reads nothing from the packet buffer: the beats
                            // of its packet (an atomic's header-only frame) are free at once.
                            self.rdp.d.next = self.rdp.q.val() + bit_cast::<11, 8>(self.job.val().release);
                            self.state.d.next = 2.into();
                        } else {
                            self.state.d.next = 1.into();
                        }
                    }
                }
            }
            1 => {
                self.gb.in_valid.next = true;
                if self.gb.in_ready.val() {
                    self.buf_raddr.next = self.start_r.q.val() + bit_cast::<10, 8>(self.j_cur.q.val()) + 1;
                    self.j_cur.d.next = self.j_cur.q.val() + 1;
                    self.w_first.d.next = false;
                    self.w_lim.d.next = 64.into();
                    self.w_rem.d.next = self.w_rem.q.val() - self.beat_len.val();
                    if self.beat_last.val() {
                        self.rdp.d.next = self.rdp.q.val() + bit_cast::<11, 8>(self.release_r.q.val());
                        self.state.d.next = 0.into();
                    }
                }
            }
            2 => {
                self.gb.in_valid.next = true;
                self.gb.in_data.next = bit_cast::<512, 256>(self.cqe_r.q.val());
                self.gb.in_skip.next = 0.into();
                self.gb.in_len.next = self.val_len.q.val();
                self.gb.in_last.next = true;
                if self.gb.in_ready.val() {
                    self.state.d.next = 0.into();
                }
            }
            _ => {
                self.state.d.next = 0.into();
            }
        }

        // ---- AXI writes: one beat per gearbox output beat ----
        self.aq.read.next = false;
        self.q_base.next = bit_cast::<64, 58>(self.aq.data_out.val().get_bits::<58>(0)) << 6;
        self.q_lead.next = self.aq.data_out.val().get_bits::<7>(58);
        self.q_beats.next = self.aq.data_out.val().get_bits::<8>(65);
        self.strb_lo.next = 0.into();
        if self.out_k.q.val() == 0 {
            self.strb_lo.next = (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 7>(self.q_lead.val())) - 1;
        }
        self.awaddr.next = self.q_base.val() + (bit_cast::<64, 8>(self.out_k.q.val()) << 6);
        self.wdata.next = self.gb.out_data.val();
        self.wstrb.next =
            ((bit_cast::<64, 1>(1.into()) << bit_cast::<64, 7>(self.gb.out_count.val())) - 1) & !self.strb_lo.val();
        self.awvalid.next = self.gb.out_valid.val() & !self.aq.empty.val() & !self.aw_done.q.val();
        self.wvalid.next = self.gb.out_valid.val() & !self.aq.empty.val() & !self.w_done.q.val();
        self.aw_fire.next = self.awvalid.val() & self.awready.val();
        self.w_fire.next = self.wvalid.val() & self.wready.val();
        self.beat_fire.next = self.gb.out_valid.val()
            & !self.aq.empty.val()
            & (self.aw_done.q.val() | self.aw_fire.val())
            & (self.w_done.q.val() | self.w_fire.val());
        self.gb.out_ready.next = self.beat_fire.val();
        if self.aw_fire.val() {
            self.aw_done.d.next = true;
        }
        if self.w_fire.val() {
            self.w_done.d.next = true;
        }
        if self.beat_fire.val() {
            self.aw_done.d.next = false;
            self.w_done.d.next = false;
            self.out_k.d.next = self.out_k.q.val() + 1;
            if (self.out_k.q.val() + 1) == self.q_beats.val() {
                self.out_k.d.next = 0.into();
                self.aq.read.next = true;
            }
        }
        if self.bvalid.val() {
            self.b_count.d.next = self.b_count.q.val() + 1;
        }

        // ---- ACKs once their writes are acknowledged ----
        self.pa_target.next = self.pa.data_out.val().get_bits::<16>(256);
        self.pa_wait.next = self.b_count.q.val() - self.pa_target.val();
        self.pa_ack.next = bit_cast::<256, 281>(self.pa.data_out.val()).into();
        self.pa_has_ack.next = self.pa.data_out.val().get_bit(272);
        self.ack.next = self.pa_ack.val();
        self.ack_write.next = false;
        self.pa.read.next = false;
        self.cnt_tx_ack.next = false;
        self.cnt_tx_nak.next = false;
        // An entry leaves once the host answered its writes (and, for an ACK, the ACK FIFO has
        // room): its ACK to the arbiter, its event to the interrupt generator.
        self.pa_go.next = !self.pa.empty.val() & !self.pa_wait.val().get_bit(15) & !self.ack_full.val();
        self.ev_r.d.next = false;
        self.bar_r.d.next = false;
        self.res_r.d.next = false;
        if self.pa_go.val() {
            self.pa.read.next = true;
            self.ev_r.d.next = self.pa.data_out.val().get_bit(273);
            self.bar_r.d.next = self.pa.data_out.val().get_bit(279);
            self.res_r.d.next = self.pa.data_out.val().get_bit(280);
            if self.pa_has_ack.val() {
                self.ack_write.next = true;
                if self.pa_ack.val().syndrome == self.nums.val().syn_ack {
                    self.cnt_tx_ack.next = true;
                } else {
                    self.cnt_tx_nak.next = true;
                }
            }
        }
        self.pa_cnt.d.next = self.pa_cnt.q.val() + bit_cast::<4, 1>(self.pa.write.val().into())
            - bit_cast::<4, 1>(self.pa.read.val().into());
        self.ack_more.next =
            !self.job_empty.val() | (self.pa_cnt.q.val() != bit_cast::<4, 1>(self.pa.read.val().into()));
        self.ev_vec_r.d.next = self.pa.data_out.val().get_bits::<5>(274);
        self.ev_valid.next = self.ev_r.q.val();
        self.ev_vector.next = self.ev_vec_r.q.val();
        self.bar_done.next = self.bar_r.q.val();
        self.res_done.next = self.res_r.q.val();
        if self.reset.val() {
            self.ev_r.d.next = false;
            self.bar_r.d.next = false;
            self.res_r.d.next = false;
            self.state.d.next = 0.into();
            self.rdp.d.next = 0.into();
            self.out_k.d.next = 0.into();
            self.aw_done.d.next = false;
            self.w_done.d.next = false;
            self.beats_planned.d.next = 0.into();
            self.b_count.d.next = 0.into();
            self.pa_cnt.d.next = 0.into();
        }
    }
}
