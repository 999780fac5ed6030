//! The responder's ordered response queue and atomic executor: READ and atomic jobs wait here
//! for the writes accepted before them, atomics run here, and the duplicate-atomic replay table
//! lives here (IBTA Vol 1 9.4.5 atomics, 9.5 ordering, 9.7.5.1.1 duplicate atomics).
use crate::records::{ReadRespJob, RespItem, WriteJob};
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Where the unit's execute stage is with the job at the head of its queue.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum AuState {
    /// Waiting for a job (and room in the completion queue); popping one loads it.
    Idle,
    /// Waiting for the job's write barrier: every write the responder accepted before it is in
    /// host memory (one `bar_done` pulse per job, in queue order).
    Barrier,
    /// An atomic: its original value is forwarded from the previous atomic on the same word
    /// while a result write is outstanding; otherwise it waits until no result write to a word
    /// before the previous atomic's is outstanding (the previous atomic's word is not this
    /// one), then reads.
    Fetch,
    /// The read of the 64-byte beat holding the word is presented (AXI ID 3) until taken.
    Read,
    /// Waiting for that beat; the original value is taken from it.
    Data,
    /// The new value, and whether it is written (COMPARE SWAP only on a match).
    Modify,
    /// The result's job goes to the write-job FIFO when the RX engine leaves it a cycle; the
    /// job moves to the completion queue in the same cycle.
    Write,
    /// A READ or ACK job moves to the completion queue.
    Respond,
}

/// Where the completion stage is with the duplicate atomic at its head (a lookup in the replay
/// table, one slot per three cycles).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum LookStep {
    /// No lookup under way: the head is not a duplicate atomic, or its lookup starts now at
    /// the QP's newest slot.
    Off,
    /// The slot `look_i` is presented to the table's read port.
    Read,
    /// Its entry is compared with the duplicate's PSN; the verdict is registered.
    Compare,
    /// The verdict is acted on: answered, the next older slot, or dropped after 16.
    Act,
}

/// Takes the responder's READ, ATOMIC and owed-ACK jobs ([`RespItem`]) in order, holds each
/// until every write the RX engine accepted before it has reached host memory, executes
/// atomics, and passes each job on to the READ responder's input FIFO.
///
/// Why a unit of its own: a READ's responses are read from host memory and an atomic reads and
/// writes it, so each must see every earlier WRITE and SEND of the same NIC (IBTA Vol 1 9.5:
/// a READ or atomic after a WRITE returns what it stored). The RX engine used to stall until
/// the RX writer was idle, then run the atomic itself (about 140 cycles at the simulator's
/// 64-cycle DMA read and 32-cycle write latencies) while the wire kept filling its packet
/// buffer, and bursts of atomics overflowed it. Now the RX engine pushes the job here together
/// with a barrier job ([`WriteJob`] with `bar`) into the write-job FIFO and goes on with the
/// next packet; the RX writer pulses `bar_done` when everything before the barrier has been
/// acknowledged by the host, so a barrier never waits for writes accepted after it.
///
/// Two stages, each in queue order. The **execute** stage ([`AuState`]) takes a job once its
/// barrier has pulsed. An atomic (`exec`) gets its word's original value, computes the new
/// value (FETCH ADD: `orig + swp` mod 2^64; COMPARE SWAP: `swp` if `orig == cmp`) and writes it
/// through the write-job FIFO (a value job with `res`, or no write when the compare fails);
/// it does not wait for that write. The original value comes from a read of the beat holding
/// the word (one 64-byte beat, AXI ID 3), made only when no result write to this word can be
/// outstanding, so the read sees every earlier atomic's result: the writes still outstanding
/// are all to the previous atomic's word (`wr_old`, the writes granted before the atomics on
/// that word, is zero), and that word is another; or, when the previous atomic
/// worked on the same word and a result write is still outstanding, from that atomic's new
/// value (forwarding: the value host memory will hold once the write lands). A stream of
/// atomics on one word thus costs one read, not one read and one write round trip each.
/// Every job then enters the 16-entry **completion** queue. The completion stage pops its head
/// when the head is a READ or ACK job, or an atomic whose result write the host has
/// acknowledged (`res_done`, one pulse per result job in order): it saves `(psn, orig)` in
/// replay slot `slot` of the atomic's QP and pushes the job (with the AtomicAckETH's original
/// value) to the READ responder, so the requester never learns of a result that is not in
/// memory, and a later READ or atomic sees it. Jobs leave in the order they came, so responses
/// of a QP stay in PSN order (9.7.5.1). A later WRITE may pass an earlier READ or atomic of the
/// same QP (IBTA's ordering rules; `IBV_SEND_FENCE` at the requester orders them). A store by
/// the host CPU to a word while remote atomics on it are in flight is not ordered with them
/// (IBTA Vol 1 9.4.5: atomicity is guaranteed among the HCA's atomics only,
/// `IBV_ATOMIC_HCA`): forwarding happens only while a result write is outstanding, so such a
/// store is seen by the first atomic that reads after the unit's writes have drained.
///
/// Replay table (the responder's duplicate-atomic cache, IBTA Vol 1 9.7.5.1.1): 64 QPs × 16
/// slots × 96 bits (bit 0 valid, 31..8 PSN, 95..32 original value) at `qpn << 4 | slot`. A
/// duplicate atomic comes from the RX engine as an ATOMIC ACKNOWLEDGE job not to execute,
/// with the QP's next slot; it passes its barrier like any job, and at the completion queue's
/// head ([`LookStep`]) the QP's slots are read from the newest down, 3 cycles each: the first
/// whose PSN is the duplicate's gives the original value for its ATOMIC ACKNOWLEDGE, and after
/// 16 misses the duplicate is dropped. In queue order, so an atomic accepted before its
/// duplicate has saved its value by then (until stop 32 the RX engine scanned the table as
/// the duplicate arrived, and missed an original still queued here).
///
/// Reset: `clear` (QP `clear_qpn` put in RESET) flips that QP's epoch bit; a queued job whose
/// stamp no longer matches still consumes its barrier but is neither executed nor answered.
///
/// Timing: 256-entry input queue (8 RAMB36: as many jobs as 16 QPs may owe at
/// `max_dest_rd_atomic` 16, so the RX engine does not stall behind a READ responder busy
/// with one QP's long response). A READ or ACK job takes 3 execute cycles after its barrier
/// pulse at the earliest (pop, barrier, respond) and leaves the completion queue 3 cycles
/// later (the queue's flag is looked at a cycle late, and the stage pops at most every other
/// cycle); a forwarded atomic takes 5 (pop, barrier, fetch, modify, write) plus the write-job
/// FIFO's grant, so back-to-back atomics on one word run at up to 50 M/s per NIC; an atomic
/// on another word makes one DMA read (about 70 cycles at the simulator's 64-cycle read
/// latency), without waiting for the previous word's result writes (it waited for every
/// outstanding write before, ~105 cycles, which held 8 QPs' atomic streams, one word each, to
/// 20 M/s). A duplicate atomic holds the completion queue 3 cycles per replay slot it reads
/// (at most 16). Every path
/// starts and ends at a register or a table port (a 64:1 bit select, a 64-bit compare, a
/// 64-bit add, the 61-bit word-address compare registered the cycle before its use; the read
/// request is a state of its own, so `ar_valid` is a state decode: ≤ 6 LUT levels).
#[derive(LogicBlock, Default)]
pub struct AtomicUnit {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Jobs from the RX engine (pushed with their barrier job in the same cycle).
    pub in_write: Signal<In, Bit>,
    pub in_item: Signal<In, RespItem>,
    pub in_full: Signal<Out, Bit>,
    /// The RX writer's barrier pulses: a `bar` job's and a `res` job's writes are done.
    pub bar_done: Signal<In, Bit>,
    pub res_done: Signal<In, Bit>,
    /// The atomic's read (AXI ID 3 through the DMA read issuer): held until `ar_ready`.
    pub ar_valid: Signal<Out, Bit>,
    pub ar_addr: Signal<Out, Bits<64>>,
    pub ar_ready: Signal<In, Bit>,
    pub r_valid: Signal<In, Bit>,
    pub r_data: Signal<In, Bits<512>>,
    /// The result job for the write-job FIFO; `job_grant` takes it (a cycle the RX engine does
    /// not write the FIFO and it is not full).
    pub job_valid: Signal<Out, Bit>,
    pub job: Signal<Out, WriteJob>,
    pub job_grant: Signal<In, Bit>,
    /// The READ responder's input FIFO.
    pub rr_write: Signal<Out, Bit>,
    pub rr_data: Signal<Out, ReadRespJob>,
    pub rr_full: Signal<In, Bit>,
    /// A context command put QP `clear_qpn` in RESET.
    pub clear: Signal<In, Bit>,
    pub clear_qpn: Signal<In, Bits<6>>,
    /// Nothing queued and no job in progress (for the engine status register).
    pub idle: Signal<Out, Bit>,
    state: DFF<AuState>,
    queue: ResetFifo<RespItem, 8, 9, 1>,
    replay: RAM<Bits<96>, 10>,
    /// The completion queue: the READ responder job (with `orig` for an atomic) and, beside
    /// it, {duplicate atomic to look up: bit 5, atomic executed: bit 4, replay slot: bits
    /// 3..0}; written and read together.
    pend: ResetFifo<ReadRespJob, 4, 5, 1>,
    pend_meta: ResetFifo<Bits<6>, 4, 5, 1>,
    /// The lookup of a duplicate atomic at the completion queue's head: where it is, the slot
    /// being read and how many were read, and the last slot's verdict (registered).
    look: DFF<LookStep>,
    look_i: DFF<Bits<4>>,
    look_n: DFF<Bits<4>>,
    look_hit: DFF<Bit>,
    look_orig: DFF<Bits<64>>,
    entry: Signal<Local, Bits<96>>,
    /// The job in progress and its READ responder job.
    cur: DFF<RespItem>,
    rr: DFF<ReadRespJob>,
    /// The job's QP has not been reset since it was queued.
    live: DFF<Bit>,
    /// Barrier pulses not yet consumed (at most one per queued job); result pulses not yet
    /// consumed by the completion stage (at most one per completion-queue entry).
    bars: DFF<Bits<10>>,
    ress: DFF<Bits<5>>,
    /// Result jobs granted whose `res_done` has not come yet (at most 16), and how many of
    /// them are for words other than `fwd_addr` (granted before the atomics on that word:
    /// the pulses come in grant order, so these are the first to be acknowledged).
    wr_out: DFF<Bits<5>>,
    wr_old: DFF<Bits<5>>,
    /// The completion stage: the queue was not empty last cycle; it popped last cycle (then
    /// it does not pop, so the flag and `ress` are current when it next looks); that pop was
    /// an atomic's (its result pulse is taken from `ress` now).
    pend_ne: DFF<Bit>,
    popped: DFF<Bit>,
    took_res: DFF<Bit>,
    /// The word (address bits 63..3) of the last atomic executed and the value it left there.
    fwd_valid: DFF<Bit>,
    fwd_addr: DFF<Bits<61>>,
    fwd_val: DFF<Bits<64>>,
    /// The current job's word is `fwd_addr` (compared the cycle before).
    hit: DFF<Bit>,
    orig: DFF<Bits<64>>,
    new_val: DFF<Bits<64>>,
    do_write: DFF<Bit>,
    /// Per-QP reset count mod 2.
    epoch: DFF<Bits<64>>,
    in_rr: Signal<Local, ReadRespJob>,
    in_qpn: Signal<Local, Bits<6>>,
    cur_iova: Signal<Local, Bits<64>>,
    in_epoch_sh: Signal<Local, Bits<64>>,
    stamped: Signal<Local, RespItem>,
    head_rr: Signal<Local, ReadRespJob>,
    cur_epoch_sh: Signal<Local, Bits<64>>,
    word: Signal<Local, Bits<512>>,
    bar_take: Signal<Local, Bit>,
    granted: Signal<Local, Bit>,
    pend_rr: Signal<Local, ReadRespJob>,
    pend_m: Signal<Local, Bits<6>>,
}

impl Logic for AtomicUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, cur, rr, live, bars, ress, wr_out, pend_ne, popped, took_res, fwd_valid, fwd_addr,
            wr_old, fwd_val, hit, orig, new_val, do_write, epoch, look, look_i, look_n, look_hit, look_orig
        );
        clock!(self, clock, queue, pend, pend_meta);
        self.pend_meta.reset.next = self.reset.val();
        self.pend.reset.next = self.reset.val();
        self.queue.reset.next = self.reset.val();
        self.replay.read_clock.next = self.clock.val();
        self.replay.write_clock.next = self.clock.val();

        // Input: stamped with the QP's epoch on the way in.
        self.in_rr.next = self.in_item.val().rr.into();
        self.in_qpn.next = self.in_rr.val().qpn;
        self.in_epoch_sh.next = self.epoch.q.val() >> bit_cast::<64, 6>(self.in_qpn.val());
        self.stamped.next = self.in_item.val();
        self.stamped.next.epoch = self.in_epoch_sh.val().get_bits::<1>(0);
        self.queue.data_in.next = self.stamped.val();
        self.queue.write.next = self.in_write.val();
        self.in_full.next = self.queue.full.val();
        self.queue.read.next = false;
        self.idle.next = self.queue.empty.val() & (self.state.q.val() == AuState::Idle) & self.pend.empty.val();

        self.head_rr.next = self.queue.data_out.val().rr.into();
        self.cur_epoch_sh.next = self.epoch.q.val() >> bit_cast::<64, 6>(self.rr.q.val().qpn);
        // The atomic's word in the beat read (address bits 5..3 pick it).
        self.cur_iova.next = self.rr.q.val().iova;
        self.word.next = self.r_data.val() >> (bit_cast::<512, 3>(self.cur_iova.val().get_bits::<3>(3)) << 6);
        self.hit.d.next = self.fwd_valid.q.val() & (self.fwd_addr.q.val() == self.cur_iova.val().get_bits::<61>(3));

        self.ar_valid.next = false;
        self.ar_addr.next = self.cur_iova.val() & 0xFFFF_FFFF_FFFF_FFC0_u64;
        self.job_valid.next = false;
        self.job.next.kind = 2.into();
        if self.do_write.q.val() {
            self.job.next.kind = 3.into();
        }
        self.job.next.need_ack = 0.into();
        self.job.next.se = 0.into();
        self.job.next.ev = 0.into();
        self.job.next.bar = 0.into();
        self.job.next.start = 0.into();
        self.job.next.release = 0.into();
        self.job.next.off = 0.into();
        self.job.next.res = 1.into();
        self.job.next.rsvd1 = 0.into();
        self.job.next.plen = 0.into();
        self.job.next.rsvd2 = 0.into();
        self.job.next.addr = self.cur_iova.val();
        self.job.next.cqe = bit_cast::<256, 64>(self.new_val.q.val());
        self.job.next.ack = 0.into();
        self.job.next.ev_vector = 0.into();
        self.job.next.rsvd3 = 0.into();
        // Into the completion queue: the READ responder job, with the original value.
        self.pend.data_in.next = self.rr.q.val();
        self.pend_meta.data_in.next = bit_cast::<6, 4>(self.cur.q.val().slot);
        if self.rr.q.val().atomic.any() {
            // A duplicate atomic (not to execute): looked up at the completion queue's head.
            self.pend_meta.data_in.next = bit_cast::<6, 4>(self.cur.q.val().slot) | 32_u32.to_bits::<6>();
        }
        if self.cur.q.val().exec.any() {
            self.pend.data_in.next.orig = self.orig.q.val();
            self.pend_meta.data_in.next = bit_cast::<6, 4>(self.cur.q.val().slot) | 16_u32.to_bits::<6>();
        }
        self.pend.write.next = false;
        self.pend_meta.write.next = false;
        self.bar_take.next = false;
        self.granted.next = false;

        match self.state.q.val() {
            AuState::Idle => {
                if !self.queue.empty.val() & !self.pend.full.val() {
                    self.queue.read.next = true;
                    self.cur.d.next = self.queue.data_out.val();
                    self.rr.d.next = self.head_rr.val();
                    self.state.d.next = AuState::Barrier;
                }
            }
            AuState::Barrier => {
                self.live.d.next = self.cur_epoch_sh.val().get_bits::<1>(0) == self.cur.q.val().epoch;
                if self.bars.q.val() != 0 {
                    self.bar_take.next = true;
                    self.state.d.next = AuState::Respond;
                    if self.cur.q.val().exec.any() {
                        self.state.d.next = AuState::Fetch;
                    }
                }
            }
            AuState::Fetch => {
                if !self.live.q.val() {
                    // The QP was reset: the old connection's atomic is not executed.
                    self.state.d.next = AuState::Idle;
                } else if self.wr_out.q.val().any() & self.hit.q.val() {
                    // The last atomic's word, its result write outstanding: forwarded.
                    self.orig.d.next = self.fwd_val.q.val();
                    self.state.d.next = AuState::Modify;
                } else if self.wr_old.q.val().any() {
                    // A result write to a word before the last one is outstanding: a read
                    // now could miss it. (The last word's writes cannot be this word's.)
                } else {
                    self.state.d.next = AuState::Read;
                }
            }
            AuState::Read => {
                self.ar_valid.next = true;
                if self.ar_ready.val() {
                    self.state.d.next = AuState::Data;
                }
            }
            AuState::Data => {
                if self.r_valid.val() {
                    self.orig.d.next = self.word.val().get_bits::<64>(0);
                    self.state.d.next = AuState::Modify;
                }
            }
            AuState::Modify => {
                self.new_val.d.next = self.orig.q.val();
                self.do_write.d.next = false;
                if self.orig.q.val() == self.cur.q.val().cmp {
                    self.new_val.d.next = self.cur.q.val().swp;
                    self.do_write.d.next = true;
                }
                if self.cur.q.val().fadd.any() {
                    self.new_val.d.next = self.orig.q.val() + self.cur.q.val().swp;
                    self.do_write.d.next = true;
                }
                self.state.d.next = AuState::Write;
            }
            AuState::Write => {
                self.job_valid.next = true;
                if self.job_grant.val() {
                    self.granted.next = true;
                    self.fwd_valid.d.next = true;
                    self.fwd_addr.d.next = self.cur_iova.val().get_bits::<61>(3);
                    self.fwd_val.d.next = self.new_val.q.val();
                    self.pend.write.next = true;
                    self.pend_meta.write.next = true;
                    self.state.d.next = AuState::Idle;
                }
            }
            AuState::Respond => {
                if self.live.q.val() {
                    self.pend.write.next = true;
                    self.pend_meta.write.next = true;
                }
                self.state.d.next = AuState::Idle;
            }
        }

        // Completion stage: the head leaves for the READ responder in queue order, an atomic
        // once its result write is acknowledged; the atomic's replay slot is saved then.
        self.pend_rr.next = self.pend.data_out.val();
        self.pend_m.next = self.pend_meta.data_out.val();
        self.pend.read.next = false;
        self.pend_meta.read.next = false;
        self.rr_write.next = false;
        self.rr_data.next = self.pend_rr.val();
        self.replay.write_enable.next = false;
        self.replay.write_address.next =
            bit_cast::<10, 6>(self.pend_rr.val().qpn) << 4 | bit_cast::<10, 4>(self.pend_m.val().get_bits::<4>(0));
        // A duplicate atomic's lookup reads its QP's slots from the newest down (9.7.5.1.1).
        self.replay.read_address.next =
            bit_cast::<10, 6>(self.pend_rr.val().qpn) << 4 | bit_cast::<10, 4>(self.look_i.q.val());
        self.entry.next = self.replay.read_data.val();
        self.look_hit.d.next =
            self.entry.val().get_bit(0) & (self.entry.val().get_bits::<24>(8) == self.pend_rr.val().psn);
        self.look_orig.d.next = self.entry.val().get_bits::<64>(32);
        self.replay.write_data.next = 1_u64.to_bits::<96>()
            | (bit_cast::<96, 24>(self.pend_rr.val().psn) << 8)
            | (bit_cast::<96, 64>(self.pend_rr.val().orig) << 32);
        // (From registers: the queue's flag a cycle late, and never two pops in a row, so the
        // flag and `ress` already count the last pop when the stage looks again.)
        self.pend_ne.d.next = !self.pend.empty.val();
        self.popped.d.next = false;
        self.took_res.d.next = false;
        if self.pend_ne.q.val() & !self.popped.q.val() & self.pend_m.val().get_bit(5) {
            // A duplicate atomic: each slot is read (`Read`), its verdict registered
            // (`Compare`), then acted on (`Act`): the saved original value goes out in the
            // ATOMIC ACKNOWLEDGE, or the next older slot is read; after 16 (more than
            // max_dest_rd_atomic atomics ago: the requester cannot be waiting for it) the
            // duplicate is dropped.
            match self.look.q.val() {
                LookStep::Off => {
                    self.look_i.d.next = self.pend_m.val().get_bits::<4>(0) - 1;
                    self.look_n.d.next = 0.into();
                    self.look.d.next = LookStep::Read;
                }
                LookStep::Read => {
                    self.look.d.next = LookStep::Compare;
                }
                LookStep::Compare => {
                    self.look.d.next = LookStep::Act;
                }
                LookStep::Act => {
                    if self.look_hit.q.val() {
                        if !self.rr_full.val() {
                            self.pend.read.next = true;
                            self.pend_meta.read.next = true;
                            self.rr_write.next = true;
                            self.rr_data.next.orig = self.look_orig.q.val();
                            self.popped.d.next = true;
                            self.look.d.next = LookStep::Off;
                        }
                    } else if self.look_n.q.val() == 15 {
                        self.pend.read.next = true;
                        self.pend_meta.read.next = true;
                        self.popped.d.next = true;
                        self.look.d.next = LookStep::Off;
                    } else {
                        self.look_i.d.next = self.look_i.q.val() - 1;
                        self.look_n.d.next = self.look_n.q.val() + 1;
                        self.look.d.next = LookStep::Read;
                    }
                }
            }
        } else if self.pend_ne.q.val() & !self.popped.q.val() & !self.rr_full.val() {
            if !self.pend_m.val().get_bit(4) {
                self.pend.read.next = true;
                self.pend_meta.read.next = true;
                self.rr_write.next = true;
                self.popped.d.next = true;
            } else if self.ress.q.val().any() {
                self.pend.read.next = true;
                self.pend_meta.read.next = true;
                self.rr_write.next = true;
                self.popped.d.next = true;
                self.took_res.d.next = true;
                self.replay.write_enable.next = true;
            }
        }

        self.bars.d.next = self.bars.q.val() + bit_cast::<10, 1>(self.bar_done.val().into())
            - bit_cast::<10, 1>(self.bar_take.val().into());
        self.ress.d.next = self.ress.q.val() + bit_cast::<5, 1>(self.res_done.val().into())
            - bit_cast::<5, 1>(self.took_res.q.val().into());
        self.wr_out.d.next = self.wr_out.q.val() + bit_cast::<5, 1>(self.granted.val().into())
            - bit_cast::<5, 1>(self.res_done.val().into());
        self.wr_old.d.next =
            self.wr_old.q.val() - bit_cast::<5, 1>((self.res_done.val() & self.wr_old.q.val().any()).into());
        if self.granted.val() & !self.hit.q.val() {
            // An atomic on a new word: every write outstanding before it is to another word.
            self.wr_old.d.next = self.wr_out.q.val() - bit_cast::<5, 1>(self.res_done.val().into());
        }
        if self.clear.val() {
            self.epoch.d.next =
                self.epoch.q.val() ^ (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.clear_qpn.val()));
        }
        if self.reset.val() {
            self.state.d.next = AuState::Idle;
            self.look.d.next = LookStep::Off;
            self.bars.d.next = 0.into();
            self.ress.d.next = 0.into();
            self.wr_out.d.next = 0.into();
            self.wr_old.d.next = 0.into();
            self.pend_ne.d.next = false;
            self.popped.d.next = false;
            self.took_res.d.next = false;
            self.fwd_valid.d.next = false;
            self.epoch.d.next = 0.into();
        }
    }
}
