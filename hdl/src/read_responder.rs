//! The READ/atomic responder's packet sequencer: turns the READs, atomics and diverted
//! ACKs the responder accepted into one job per response packet, interleaving the QPs
//! (IBTA Vol 1 9.7.4.1.4 READ responses, 9.7.5.1 response order).
use crate::records::ReadRespJob;
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Where the sequencer is with the QP it serves.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum RrState {
    /// Waiting for a QP in the ready ring; popping one starts a table read.
    Idle,
    /// The QP's table entry is being read.
    Read,
    /// The entry is readable: taken into registers with its path MTU in bytes.
    Take,
    /// The packet is sized: its payload length and whether it is the last.
    Size,
    /// The packet's job goes out and the entry is written back (or retired).
    Emit,
}

/// Sits between the responder's job FIFO ([`ReadRespJob`]: a READ to answer, an ATOMIC
/// ACKNOWLEDGE or an ACKNOWLEDGE owed behind responses) and the packet generator
/// ([`crate::response_gen::ResponseGen`]), and hands it one job per response packet, taking
/// the QPs in turn.
///
/// Each QP has one entry in a 64-entry table: the response it is sending, with the next PSN,
/// the next local address and the bytes still to send. A job at the head of the input is
/// taken into its QP's entry as soon as that entry is free, and the QP joins a ring of QPs
/// with packets to send (each QP at most once in the ring). The sequencer pops a QP from the
/// ring, sends one packet of its entry (at most one path MTU of payload), and puts the QP back
/// at the tail of the ring while its response has packets left, so responses of several QPs
/// leave packet by packet, round-robin: a long READ on one QP no longer holds back every other
/// QP's responses (which would make their requesters' ACK timers expire although the wire is
/// busy with useful data). A QP's own jobs stay in order: a job whose QP's entry is busy waits
/// at the head of the input (responses and ACKs of one QP leave in PSN order, 9.7.5.1), except
/// a replay (a duplicate READ or atomic: `fresh` and `ack` clear) of a PSN at or before the
/// next PSN of the response in progress. Such a replay means the requester went back to that
/// PSN and discards whatever follows it, so it replaces the response in progress at once
/// (duplicate requests, IBTA Vol 1 9.7.5.1) instead of waiting behind packets nobody will
/// accept, and inherits its `fresh` mark, so the `max_dest_rd_atomic` slot of the response it
/// cut short is released once, when the replay's last packet is sent. A replay of a later PSN
/// (go-back-N resends every READ from the point it went back to) waits its turn: replacing
/// the replay in progress with it would cut every earlier response short again, and the
/// requester would only ever get the first packets of the oldest one.
///
/// Output jobs are [`ReadRespJob`]s with `psn` and `iova` of the packet, `len` its payload
/// length (0..=4096 bytes), and `first`/`last` giving its place in the response (both set for
/// an ONLY, an ACKNOWLEDGE or an ATOMIC ACKNOWLEDGE). `clear` (a context command that puts QP
/// `clear_qpn` in RESET) retires its entry: nothing of an old connection is sent after a reset
/// but the packet being emitted in that cycle and those already in the 4-entry output FIFO.
///
/// Timing: a job is taken into the table one cycle after it reaches the head of the input (a
/// replay of a busy QP three, for the PSN comparison: table read, compare, decide); a
/// packet's job leaves 5 cycles after its QP is popped (pop, read, take, size, emit), so the
/// initiation interval is 5 cycles per packet (the packet generator spends at least
/// [`crate::response_gen::RR_MIN_CYCLES`] per response packet). Every path starts and ends at a
/// register or a table port (a 64:1 bit select and a 32-bit compare, ≤ 5 LUT levels). Tables:
/// 64 × 360 bits (entries) in block RAM, a 64-deep ring of QPNs, a 64-bit busy set and a 64-bit
/// in-ring set.
#[derive(LogicBlock, Default)]
pub struct ReadResponder {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The responder's jobs (first-word fall-through FIFO).
    pub in_empty: Signal<In, Bit>,
    pub in_job: Signal<In, ReadRespJob>,
    pub in_read: Signal<Out, Bit>,
    /// A context command put QP `clear_qpn` in RESET.
    pub clear: Signal<In, Bit>,
    pub clear_qpn: Signal<In, Bits<6>>,
    /// One job per response packet, for the packet generator (first-word fall-through FIFO view).
    pub out_empty: Signal<Out, Bit>,
    pub out_job: Signal<Out, ReadRespJob>,
    pub out_read: Signal<In, Bit>,
    /// No entry busy and nothing in the output (for the engine status register).
    pub idle: Signal<Out, Bit>,
    state: DFF<RrState>,
    /// (Not `table`: a Verilog keyword.)
    slots: RAM<ReadRespJob, 6>,
    /// The next PSN of each entry (a copy of `slots`' `psn`, read at the input's head QP).
    next_psn: RAM<Bits<24>, 6>,
    /// `next_psn`'s output belongs to the job at the head: it was there, untaken, in the cycle
    /// before, and no entry was written then. `later_r`: the comparison of that output with the
    /// head's PSN, registered; `later_ok`: it belongs to the head now.
    settled: DFF<Bit>,
    later_r: DFF<Bit>,
    later_ok: DFF<Bit>,
    ring: ResetFifo<Bits<6>, 6, 7, 1>,
    out_fifo: ResetFifo<ReadRespJob, 2, 3, 1>,
    /// QPs whose entry holds a response still sending, and QPs in the ring.
    busy: DFF<Bits<64>>,
    queued: DFF<Bits<64>>,
    /// QPs whose entry holds a new (`fresh`) response, counted against `max_dest_rd_atomic`.
    owes: DFF<Bits<64>>,
    /// The QP being served, its entry, its path MTU in bytes, and the packet's size.
    cur: DFF<Bits<6>>,
    ent: DFF<ReadRespJob>,
    mtu: DFF<Bits<32>>,
    plen: DFF<Bits<32>>,
    last: DFF<Bit>,
    cur_live: DFF<Bit>,
    head_qpn: Signal<Local, Bits<6>>,
    head_busy: Signal<Local, Bit>,
    head_busy_sh: Signal<Local, Bits<64>>,
    head_owes_sh: Signal<Local, Bits<64>>,
    head_replay: Signal<Local, Bit>,
    /// The head replay's PSN is after the response in progress: it waits behind it.
    head_later: Signal<Local, Bit>,
    head_psn_d: Signal<Local, Bits<24>>,
    set_owes: Signal<Local, Bits<64>>,
    clr_owes: Signal<Local, Bits<64>>,
    head_queued_sh: Signal<Local, Bits<64>>,
    cur_busy: Signal<Local, Bits<64>>,
    head_queued: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    set_busy: Signal<Local, Bits<64>>,
    clr_busy: Signal<Local, Bits<64>>,
    set_queued: Signal<Local, Bits<64>>,
    clr_queued: Signal<Local, Bits<64>>,
    ram_ent: Signal<Local, ReadRespJob>,
    pkt: Signal<Local, ReadRespJob>,
    rest: Signal<Local, ReadRespJob>,
    fresh_job: Signal<Local, ReadRespJob>,
}

impl Logic for ReadResponder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, busy, queued, owes, cur, ent, mtu, plen, last, cur_live, settled, later_r, later_ok
        );
        self.slots.read_clock.next = self.clock.val();
        self.slots.write_clock.next = self.clock.val();
        self.next_psn.read_clock.next = self.clock.val();
        self.next_psn.write_clock.next = self.clock.val();
        clock!(self, clock, ring, out_fifo);
        self.out_fifo.reset.next = self.reset.val();
        self.ring.reset.next = self.reset.val();
        self.slots.read_address.next = self.cur.q.val();
        self.ram_ent.next = self.slots.read_data.val();
        self.cur_busy.next = self.busy.q.val() >> bit_cast::<64, 6>(self.cur.q.val());

        // The output FIFO faces the packet generator.
        self.out_empty.next = self.out_fifo.empty.val();
        self.out_job.next = self.out_fifo.data_out.val();
        self.out_fifo.read.next = self.out_read.val();
        self.idle.next = !self.busy.q.val().any() & self.out_fifo.empty.val();

        // The packet's job, and the entry that remains after it.
        self.pkt.next = self.ent.q.val();
        self.pkt.next.len = self.plen.q.val();
        self.pkt.next.last = self.last.q.val().into();
        self.rest.next = self.ent.q.val();
        self.rest.next.psn = self.ent.q.val().psn + 1;
        self.rest.next.iova = self.ent.q.val().iova + bit_cast::<64, 32>(self.plen.q.val());
        self.rest.next.len = self.ent.q.val().len - self.plen.q.val();
        self.rest.next.first = 0.into();
        self.head_qpn.next = self.in_job.val().qpn;
        self.head_owes_sh.next = self.owes.q.val() >> bit_cast::<64, 6>(self.head_qpn.val());
        self.fresh_job.next = self.in_job.val();
        self.fresh_job.next.first = 1.into();
        // A replay that replaces a new response takes over its count against
        // max_dest_rd_atomic (released when its own last packet is sent).
        self.fresh_job.next.fresh = self.in_job.val().fresh | self.head_owes_sh.val().get_bits::<1>(0);
        self.fresh_job.next.last = 0.into();
        self.out_fifo.data_in.next = self.pkt.val();
        self.out_fifo.write.next = false;
        self.ring.write.next = false;
        self.ring.read.next = false;
        self.ring.data_in.next = self.cur.q.val();
        self.slots.write_enable.next = false;
        self.slots.write_address.next = self.cur.q.val();
        self.slots.write_data.next = self.rest.val();
        self.set_busy.next = 0.into();
        self.clr_busy.next = 0.into();
        self.set_queued.next = 0.into();
        self.clr_queued.next = 0.into();
        self.set_owes.next = 0.into();
        self.clr_owes.next = 0.into();

        match self.state.q.val() {
            RrState::Idle => {
                if !self.ring.empty.val() {
                    self.ring.read.next = true;
                    self.cur.d.next = self.ring.data_out.val();
                    self.clr_queued.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.ring.data_out.val());
                    self.state.d.next = RrState::Read;
                }
            }
            RrState::Read => {
                self.state.d.next = RrState::Take;
            }
            RrState::Take => {
                self.ent.d.next = self.ram_ent.val();
                self.mtu.d.next = bit_cast::<32, 8>(128.into()) << bit_cast::<32, 3>(self.ram_ent.val().path_mtu);
                // A QP reset since it was queued has nothing left to send.
                self.cur_live.d.next = self.cur_busy.val().get_bit(0);
                self.state.d.next = RrState::Size;
            }
            RrState::Size => {
                // A zero-length READ, an ACKNOWLEDGE and an atomic are one packet with no payload.
                self.last.d.next = self.ent.q.val().len <= self.mtu.q.val();
                self.plen.d.next = self.mtu.q.val();
                if self.ent.q.val().len <= self.mtu.q.val() {
                    self.plen.d.next = self.ent.q.val().len;
                }
                self.state.d.next = RrState::Emit;
                if !self.cur_live.q.val() {
                    self.state.d.next = RrState::Idle;
                }
            }
            RrState::Emit => {
                if !self.out_fifo.full.val() {
                    self.out_fifo.write.next = true;
                    self.state.d.next = RrState::Idle;
                    if self.last.q.val() {
                        self.clr_busy.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cur.q.val());
                        self.clr_owes.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cur.q.val());
                    } else {
                        self.slots.write_enable.next = true;
                        self.ring.write.next = true;
                        self.set_queued.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cur.q.val());
                    }
                }
            }
        }

        // Taking a new job into its QP's entry: the entry must be free, and the table's write
        // port and the ring's tail must not be in use by Emit this cycle.
        // (Shifted into Locals first: Verilog takes no bit select of an expression.)
        self.head_busy_sh.next = self.busy.q.val() >> bit_cast::<64, 6>(self.head_qpn.val());
        self.head_queued_sh.next = self.queued.q.val() >> bit_cast::<64, 6>(self.head_qpn.val());
        self.head_busy.next = self.head_busy_sh.val().get_bit(0);
        self.head_queued.next = self.head_queued_sh.val().get_bit(0);
        self.head_replay.next = !self.in_job.val().fresh.any() & !self.in_job.val().ack.any();
        // A replay replaces the response in progress only if the requester went back to or
        // before that response's next PSN (it discards everything from there on); a replay
        // of a later PSN (the go-back-N resends several READs) waits for it like any job.
        self.next_psn.read_address.next = self.head_qpn.val();
        self.head_psn_d.next = self.next_psn.read_data.val() - self.in_job.val().psn;
        self.later_r.d.next = self.head_psn_d.val().get_bit(23);
        self.head_later.next = self.later_r.q.val() | !self.later_ok.q.val();
        self.take.next = !self.in_empty.val()
            & (!self.head_busy.val() | (self.head_replay.val() & !self.head_later.val()))
            & (self.state.q.val() != RrState::Emit)
            & ((self.state.q.val() == RrState::Idle) | (self.cur.q.val() != self.head_qpn.val()));
        self.in_read.next = self.take.val();
        if self.take.val() {
            self.slots.write_enable.next = true;
            self.slots.write_address.next = self.head_qpn.val();
            self.slots.write_data.next = self.fresh_job.val();
            self.set_busy.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.head_qpn.val());
            if self.fresh_job.val().fresh.any() {
                self.set_owes.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.head_qpn.val());
            }
            if !self.head_queued.val() {
                self.ring.write.next = true;
                self.ring.data_in.next = self.head_qpn.val();
                self.set_queued.next = bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.head_qpn.val());
            }
        }
        if self.clear.val() {
            self.clr_busy.next =
                self.clr_busy.val() | (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.clear_qpn.val()));
        }
        // Every entry write is mirrored into `next_psn`.
        self.next_psn.write_enable.next = self.slots.write_enable.val();
        self.next_psn.write_address.next = self.slots.write_address.val();
        self.next_psn.write_data.next = self.slots.write_data.val().psn;
        self.settled.d.next = !self.in_empty.val() & !self.take.val() & !self.slots.write_enable.val();
        self.later_ok.d.next = self.settled.q.val() & !self.in_empty.val() & !self.take.val();
        self.busy.d.next = (self.busy.q.val() & !self.clr_busy.val()) | self.set_busy.val();
        self.owes.d.next = (self.owes.q.val() & !self.clr_busy.val() & !self.clr_owes.val()) | self.set_owes.val();
        self.queued.d.next = (self.queued.q.val() & !self.clr_queued.val()) | self.set_queued.val();
        if self.reset.val() {
            self.state.d.next = RrState::Idle;
            self.busy.d.next = 0.into();
            self.queued.d.next = 0.into();
            self.owes.d.next = 0.into();
        }
    }
}
