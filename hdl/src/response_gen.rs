//! The READ/atomic responder's packet generator: one transmit job per response packet the
//! [`crate::read_responder::ReadResponder`] sequences, put into the cycles the requester's
//! scheduler leaves free (IBTA Vol 1 9.7.4.1.4 READ responses, 9.5.3 ATOMIC ACKNOWLEDGE,
//! 9.7.5.1 ACKNOWLEDGEs owed behind responses).
//!
//! Until stop 32 the scheduler ([`crate::tx_scheduler::TxScheduler`]) sent these packets
//! itself, in two states it entered only between WQEs, while idle or while an error completion
//! waited; now the requester and the responder each own their packet stream, and `top` merges
//! the two into the assembler's FIFOs.
use crate::numbers::Numbers;
use crate::records::{ReadRespJob, TxJob};
use rust_hdl::prelude::*;

/// Turns each response packet ([`ReadRespJob`] with `first`/`last` and the packet's `psn`,
/// `iova` and `len`) into a [`TxJob`] for the TX assembler, with a payload read job
/// (`rj_addr`, `rj_len`: `len` bytes at `iova`) and a piece record (`pg_data`: offset in the
/// first beat, length, last piece) when it carries payload:
/// - READ RESPONSE FIRST / MIDDLE / LAST / ONLY (0x0D / 0x0E / 0x0F / 0x10), the AETH (ACK
///   syndrome 0x1F, the MSN) on FIRST, LAST and ONLY (9.7.4.1.4);
/// - ATOMIC ACKNOWLEDGE (0x12): AETH and AtomicAckETH with the original value `orig` (9.5.3);
/// - ACKNOWLEDGE (0x11, AETH only) with the syndrome in `orig` bits 7:0, counted as a sent
///   ACK (`cnt_tx_ack`, syndrome 0x1F) or NAK (`cnt_tx_nak`).
///
/// The last packet of a `fresh` response carries `rsp_last` (the assembler reports it sent, and
/// the responder releases the `max_dest_rd_atomic` slot).
///
/// **Sharing the job stream with the scheduler.** The assembler takes jobs, payload reads and
/// pieces from three FIFOs in one order, so the two writers must not interleave inside a
/// packet (a request packet that spans gather entries is a job, then one piece per entry over
/// several cycles). The generator decides a cycle ahead: `hold` (combinational from its
/// registers) tells the scheduler that the next cycle's FIFO write is the generator's (the
/// scheduler registers it into its room flag, so it does not write then), and is raised only
/// while the scheduler reports `req_lock` low (not issuing a packet or its pieces) and the three
/// FIFOs had room; the write itself (`write`, registered) comes the cycle after, with the job
/// from registers, so `top`'s merge multiplexer selects on a flop.
///
/// Pacing: at most one packet per [`RR_MIN_CYCLES`] cycles: the requester's completer takes
/// 7 cycles per READ response (its visit; 8 for the one that completes its READ, stop 39: 10
/// and 11 before, when the pacing was 12), so at path MTU 256 and 512 an unpaced stream, or
/// one paced at exactly that rate plus the wire's duplicates, overflows its packet buffer; from
/// MTU 1024 up the wire is slower than that anyway. The FIFOs' almost-full flags must leave
/// room for two writes after they rise, as for the scheduler alone: the room flag both see
/// counts the writes up to three cycles back, and any three cycles hold at most two writes
/// (the scheduler writes at most every second cycle, never in the cycle of ours, nor in the
/// one before: it is then in a locked state).
///
/// A context command that resets a QP does not reach this block: the one job it holds goes out
/// (as the job in the scheduler's registers did before), like those already in the
/// sequencer's 4-entry output FIFO.
///
/// Timing: a job is taken (`in_read`) in the cycle it is at the head of the input when nothing
/// is held (or the held one is written that cycle); `hold` the cycle after at the earliest,
/// the write the cycle after `hold`: 2 cycles from input to FIFO write, initiation interval
/// [`RR_MIN_CYCLES`] cycles. Every path is a register, a few LUTs, a register (the job's
/// fields are its input's fields or constants; `hold` is an AND of 8 register bits and the
/// scheduler's lock, a decode of its state register).
#[derive(LogicBlock, Default)]
pub struct ResponseGen {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Response packets from the sequencer (first-word fall-through FIFO view).
    pub in_empty: Signal<In, Bit>,
    pub in_job: Signal<In, ReadRespJob>,
    pub in_read: Signal<Out, Bit>,
    /// The assembler FIFOs' almost-full flags (job, payload read, piece).
    pub job_afull: Signal<In, Bit>,
    pub rj_afull: Signal<In, Bit>,
    pub pg_afull: Signal<In, Bit>,
    /// The scheduler is issuing a request packet or its pieces: no write of ours may follow.
    pub req_lock: Signal<In, Bit>,
    /// The next cycle's write into the FIFOs is ours (for the scheduler's room flag).
    pub hold: Signal<Out, Bit>,
    /// This cycle a job goes into the job FIFO (registered), with a payload read job and a
    /// piece when `rj_write`.
    pub write: Signal<Out, Bit>,
    pub job: Signal<Out, TxJob>,
    pub rj_write: Signal<Out, Bit>,
    pub rj_addr: Signal<Out, Bits<64>>,
    pub rj_len: Signal<Out, Bits<13>>,
    /// `{inline 20 (always 0 here), last 19, len 18:6, skip 5:0}` as the scheduler's pieces.
    pub pg_data: Signal<Out, Bits<21>>,
    /// An ACKNOWLEDGE with syndrome 0x1F went out / one with a NAK syndrome.
    pub cnt_tx_ack: Signal<Out, Bit>,
    pub cnt_tx_nak: Signal<Out, Bit>,
    /// A job is held in `rr`.
    held: DFF<Bit>,
    rr: DFF<ReadRespJob>,
    /// Room in all three FIFOs, registered.
    room: DFF<Bit>,
    /// The held job is written this cycle.
    emit_r: DFF<Bit>,
    /// Cycles before the next write may be decided.
    gap: DFF<Bits<4>>,
    /// The held job carries payload (`len` ≠ 0), registered as it is taken.
    pay_r: DFF<Bit>,
    go: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    op: Signal<Local, Bits<8>>,
    syn: Signal<Local, Bits<8>>,
    msn: Signal<Local, Bits<24>>,
    orig: Signal<Local, Bits<64>>,
    iova: Signal<Local, Bits<64>>,
    len: Signal<Local, Bits<32>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

/// Minimum cycles between two response packets (see [`ResponseGen`]).
pub const RR_MIN_CYCLES: u64 = 9;

impl Logic for ResponseGen {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, held, rr, room, emit_r, gap, pay_r);
        self.room.d.next = !self.job_afull.val() & !self.rj_afull.val() & !self.pg_afull.val();
        if self.gap.q.val() != 0 {
            self.gap.d.next = self.gap.q.val() - 1;
        }
        // Decide a cycle ahead (see the block's documentation).
        self.go.next = self.held.q.val()
            & self.room.q.val()
            & (self.gap.q.val() == 0)
            & !self.req_lock.val()
            & !self.emit_r.q.val();
        self.hold.next = self.go.val();
        self.emit_r.d.next = self.go.val();
        if self.go.val() {
            // RR_MIN_CYCLES - 1 cycles (hdl_gen takes no Rust constants).
            self.gap.d.next = 8.into();
        }
        // Take the next packet when nothing is held or the held one leaves now.
        self.take.next = !self.in_empty.val() & (!self.held.q.val() | self.emit_r.q.val());
        self.in_read.next = self.take.val();
        if self.emit_r.q.val() {
            self.held.d.next = false;
        }
        if self.take.val() {
            self.held.d.next = true;
            self.rr.d.next = self.in_job.val();
            self.pay_r.d.next = self.in_job.val().len != 0;
        }
        // The packet's job, from the held response.
        self.op.next = self.nums.val().op_rdma_read_response_middle;
        if self.rr.q.val().first.any() & self.rr.q.val().last.any() {
            self.op.next = self.nums.val().op_rdma_read_response_only;
        } else if self.rr.q.val().first.any() {
            self.op.next = self.nums.val().op_rdma_read_response_first;
        } else if self.rr.q.val().last.any() {
            self.op.next = self.nums.val().op_rdma_read_response_last;
        }
        self.msn.next = self.rr.q.val().msn;
        // (Locals first: yosys takes no bit select of a struct field's slice.)
        self.orig.next = self.rr.q.val().orig;
        self.iova.next = self.rr.q.val().iova;
        self.len.next = self.rr.q.val().len;
        // AETH syndrome: ACK (0x1F) on READ responses; an ACKNOWLEDGE job carries its own.
        self.syn.next = self.nums.val().syn_ack;
        if self.rr.q.val().ack.any() {
            self.syn.next = self.orig.val().get_bits::<8>(0);
        }
        // Every field is assigned (no latch); those a response does not use are zero.
        self.job.next.opcode = self.op.val();
        self.job.next.ackreq = 0.into();
        self.job.next.has_reth = 0.into();
        self.job.next.has_atomic_eth = 0.into();
        self.job.next.has_atomic_ack = 0.into();
        self.job.next.se = 0.into();
        self.job.next.has_deth = 0.into();
        self.job.next.reth_va = 0.into();
        self.job.next.reth_rkey = 0.into();
        self.job.next.reth_len = 0.into();
        self.job.next.rsvd1 = 0.into();
        // A response is never dropped for a rewind of the requester (same QP numbers).
        self.job.next.drop_ok = 0.into();
        self.job.next.epoch = 0.into();
        self.job.next.at_swap = 0.into();
        self.job.next.at_cmp = 0.into();
        self.job.next.rsvd2 = 0.into();
        self.job.next.has_ext4 = bit_cast::<1, 1>((self.rr.q.val().first.any() | self.rr.q.val().last.any()).into());
        if self.rr.q.val().ack.any() {
            // An ACKNOWLEDGE (0x11, AETH only), queued behind the responses the QP owed before it.
            self.job.next.opcode = self.nums.val().op_acknowledge;
            self.job.next.has_ext4 = 1.into();
        }
        if self.rr.q.val().atomic.any() {
            // ATOMIC ACKNOWLEDGE (0x12): AETH and AtomicAckETH with the original value.
            self.job.next.opcode = self.nums.val().op_atomic_acknowledge;
            self.job.next.has_atomic_ack = 1.into();
            self.job.next.at_swap = self.rr.q.val().orig;
        }
        // The AETH (wire order): the syndrome, then the MSN big-endian.
        self.job.next.ext4 = (bit_cast::<32, 8>(self.msn.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<32, 8>(self.msn.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<32, 8>(self.msn.val().get_bits::<8>(0)) << 24)
            | bit_cast::<32, 8>(self.syn.val());
        self.job.next.psn = self.rr.q.val().psn;
        self.job.next.dest_qpn = self.rr.q.val().dest_qpn;
        self.job.next.pkey = self.rr.q.val().pkey;
        self.job.next.udp_sport = self.rr.q.val().udp_sport;
        self.job.next.dest_ip = self.rr.q.val().dest_ip;
        self.job.next.dest_mac = self.rr.q.val().dest_mac;
        self.job.next.plen = self.len.val().get_bits::<13>(0);
        self.job.next.pay_skip = self.iova.val().get_bits::<6>(0);
        // The last packet of a new READ's or atomic's response: counted when it is sent.
        self.job.next.rsp_last = bit_cast::<1, 1>((self.rr.q.val().last.any() & self.rr.q.val().fresh.any()).into());
        self.job.next.rsp_qpn = self.rr.q.val().qpn;
        self.write.next = self.emit_r.q.val();
        self.rj_write.next = self.emit_r.q.val() & self.pay_r.q.val();
        self.rj_addr.next = self.rr.q.val().iova;
        self.rj_len.next = self.len.val().get_bits::<13>(0);
        self.pg_data.next = bit_cast::<21, 6>(self.iova.val().get_bits::<6>(0))
            | (bit_cast::<21, 13>(self.len.val().get_bits::<13>(0)) << 6)
            | (bit_cast::<21, 1>(1.into()) << 19);
        self.cnt_tx_ack.next =
            self.emit_r.q.val() & self.rr.q.val().ack.any() & (self.syn.val() == self.nums.val().syn_ack);
        self.cnt_tx_nak.next =
            self.emit_r.q.val() & self.rr.q.val().ack.any() & (self.syn.val() != self.nums.val().syn_ack);
        if self.reset.val() {
            self.held.d.next = false;
            self.emit_r.d.next = false;
            self.gap.d.next = 0.into();
        }
    }
}
