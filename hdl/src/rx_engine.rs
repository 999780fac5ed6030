//! The RX engine: the RC responder (IBTA Vol 1 9.7: RDMA WRITE, SEND, RDMA READ and atomic
//! requests) and the requester's completer (ACKs, NAKs and READ / atomic responses → CQEs).
//!
//! One state machine, [`RxState`], handles one thing at a time. Its states, by role:
//! - **every visit**: [`RxState::Idle`] takes the work (a local completion, a QP to flush, an
//!   ACK timeout, an asynchronous event, a packet), [`RxState::ReadQpState`] and
//!   [`RxState::LoadQpState`] load the QP's context and transport state,
//!   [`RxState::WriteBack`] stores it again;
//! - **responder**: [`RxState::CheckRegion`], [`RxState::Decide`] (the verdict: payload, ACK,
//!   NAK, RNR NAK or drop), [`RxState::QueueResponse`] (READs, atomics and owed ACKs to the
//!   atomic unit, which also answers a duplicate atomic from its replay table);
//! - **receive scatter**: [`RxState::FetchRecvWqe`], [`RxState::TakeRecvWqe`], the entry checks
//!   [`RxState::SgeReadKey`] .. [`RxState::SgeFits`];
//! - **receive scatter and READ-response scatter**: [`RxState::Scatter`], while the
//!   [`crate::scatter::Scatter`] block walks a packet's payload over the list (the receive's
//!   entries or the READ's SGE list), one job per piece;
//! - **completer**: the response checks [`RxState::RspHead`] .. [`RxState::RspAct`],
//!   [`RxState::ResumeRead`], the retire loop [`RxState::RetireLoad`],
//!   [`RxState::RetireCompare`], [`RxState::Retire`];
//! - **completions**: [`RxState::CompletionWait`], [`RxState::CompletionRoute`],
//!   [`RxState::WriteCqe`] (every CQE: send, receive, local completion, event);
//! - **flush** of a QP in ERR: [`RxState::FlushStep`], [`RxState::FlushRecvWqe`].
//!
//! The paths through them (after `Idle`, `ReadQpState`, `LoadQpState`; each ends in
//! `WriteBack`, then `Idle`, unless said otherwise):
//! - a request: `CheckRegion`, `Decide`; an accepted or duplicate READ, an accepted atomic and
//!   an ACK owed behind READ responses (from `WriteBack`) and a duplicate atomic go on to
//!   `QueueResponse`;
//! - a SEND's first packet (or a WRITE with immediate's last) whose receive WQE is not yet
//!   checked: `Decide`, `FetchRecvWqe`, `TakeRecvWqe`, `SgeReadKey` .. `SgeVerdict` per entry
//!   (`SgeSelect` takes the next), with several entries `SgeFirstNonzero` and `SgeFits`, then
//!   `Decide` again; a packet that passes an entry's end: `Scatter`, then the message's
//!   last packet goes straight on to `WriteCqe` for its receive CQE;
//! - an ACK or NAK: `CheckRegion`, `Decide`, then the retire loop: `RetireLoad`,
//!   `RetireCompare`, `Retire` per WQE (`WriteCqe` for a signaled or failed one, then
//!   `RetireLoad` again, or `WriteBack` when the WQE ended at an ACK's PSN), `ResumeRead` for a
//!   READ it covers whose responses are missing;
//! - a READ or atomic response: `CheckRegion`, `Decide` (which also register its first two
//!   checks), `RspOrder`, `RspAct` (into an SGE list: `Scatter`); one checked again after the
//!   WQEs before its READ retired comes back through `RspHead`, `RspRange`; the READ's last
//!   response goes on to `Retire` (its READ is the head WQE, already read, and its last PSN
//!   this one's, so `RetireCompare` has nothing to find), one that implicitly
//!   acknowledges earlier WQEs to `RetireLoad`;
//! - an ACK timeout: the retire loop (QP in RTS) or `WriteBack`;
//! - a local completion or an asynchronous event: `CompletionWait`, `CompletionRoute`,
//!   `WriteCqe`;
//! - a flush visit: `FlushStep`, then the retire loop (send WQEs), or `FetchRecvWqe`,
//!   `TakeRecvWqe`, `FlushRecvWqe` and a receive CQE, or `Idle` (nothing left).
//!
//! A QP on an SRQ takes the SRQ's indices in `CheckRegion` and writes its consumer index back
//! in `WriteBack`; `Idle` then checks the SRQ's limit.
use crate::context_tables::ContextTables;
use crate::event_queue::AsyncEventQueue;
use crate::numbers::{Numbers, Zero};
use crate::qp_check_set::QpCheckSet;
use crate::records::{
    AckJob, AckProgressRec, AckedRec, AckedTxRec, AethSynRec, CqeRec, DethRec, DoorbellRec, InflightRec, KeyRec,
    LocalCompletion, MrEntryRec, OpClass, QpContextRec, ReadRespJob, RecvWqeRec, RespDynRec, RespItem, RewindRec,
    RxDesc, ScatterEntryRec, SgeLanesRec, SgeRec, SrqLimitRec, TimerEventRec, WriteJob,
};
use crate::resp_done::RespDoneTable;
use crate::scatter::Scatter;
use crate::sent_psn::SentPsnTable;
use rust_hdl::prelude::*;

/// The states of [`RxEngine`]'s state machine (the paths through them, by role, are in the
/// module's documentation). A visit (one packet, ACK timeout, local completion,
/// asynchronous event or flush step) runs from [`RxState::Idle`] through
/// [`RxState::ReadQpState`] and [`RxState::LoadQpState`], the states of its role, and (but for a
/// flush step with nothing to do) [`RxState::WriteBack`] back to `Idle`. The number in
/// parentheses is the state's code in `dbg_state` (bits 5:0 of
/// [`rnic_contract::regs::STATUS`]) and its encoding: its number from when the states were
/// numbered, then its role. The variants are declared in that order, with the unused codes as
/// `UnusedN`, so the encoding is the numbering the engine's timing closure was done against.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum RxState {
    /// (0, every visit) Waiting; takes, in this order, a local completion from the scheduler, a QP marked
    /// for flushing, an ACK or RNR timeout, an asynchronous event, a received packet. Queues
    /// the SRQ limit event the last packet raised.
    Idle,
    /// (1, every visit) The QP's tables (context, key table, responder and completer state, RQ indices,
    /// emission PSN) are read at `qpn`.
    ReadQpState,
    /// (2, every visit) They answer: the context and transport state are loaded, and the visit takes its
    /// path; a packet's first checks (rkey, RETH offset, PSN delta, segment lengths) are
    /// registered.
    LoadQpState,
    /// (3, completions) A cycle's pause on the way to the CQE of a local completion, an event
    /// or a flushed receive WQE, or to the retire loop for an ACK timeout.
    CompletionWait,
    /// (4, completions) A local completion's fields are loaded; it, a receive completion or an event goes
    /// to [`RxState::WriteCqe`], an ACK, NAK, response or timeout to the retire loop.
    CompletionRoute,
    /// (5, responder) Request checks, 2: the region's room past the RETH offset, the payload against the
    /// open WRITE or receive, an empty RQ (an SRQ's indices are loaded here), READs and
    /// atomics outstanding against `max_dest_rd_atomic`.
    CheckRegion,
    /// (6, responder) The packet's verdict (9.7, 9.9.3): its job goes out (payload, ACK, NAK sequence
    /// error / invalid request / remote access error, RNR NAK, or a drop); an ACK or NAK goes
    /// on to the completer, a READ response to its checks, a READ or atomic to the atomic
    /// unit, a SEND or WRITE with immediate without a checked receive WQE to its fetch.
    Decide,
    /// (7, receive scatter) The receive WQE at the RQ consumer index is requested (AXI ID 2), all its beats.
    FetchRecvWqe,
    /// (8, receive scatter) Its beats arrive: wr_id, num_sge and the scatter entries.
    TakeRecvWqe,
    /// (9, every visit) The responder and completer state (and an SRQ's consumer index) are written back
    /// and the QP's events raised; then `Idle`, the ACK owed behind READ responses
    /// ([`RxState::QueueResponse`]) or a READ response's second check ([`RxState::RspHead`]).
    /// Repeats while a class C error's flush request finds the go-back-N FIFO full.
    WriteBack,
    /// (10, completer) Retire loop, 1: the in-flight WQE at `acked` is read; with none outstanding, the
    /// write-back.
    RetireLoad,
    /// (11, completer) 3: the head WQE's fate: retired (a CQE if signaled), failed (NAK code, retries or
    /// RNR retries exhausted, bad response, flush), an RNR wait armed, a go-back-N rewind
    /// asked for, or its READ resumed.
    Retire,
    /// (12, completions) The CQE (a 32-byte job) of a retired or failed send WQE, a receive, a local
    /// completion or an event; an error moves the QP to ERR and asks for the flushes.
    WriteCqe,
    /// (13, receive scatter) Scatter entry check, 1: the key table is read at the entry's lkey; the entries to
    /// check (num_sge, at most what the stride holds).
    SgeReadKey,
    /// (14, receive scatter) 2: the lkey (valid, PD, LOCAL_WRITE) and the entry's offset into its region.
    SgeCheckKey,
    /// (15, receive scatter) 3: the region's room past that offset; the translated address.
    SgeRoom,
    /// (16, receive scatter) 4: the entry lies inside its region or is empty; a nonzero one is kept in
    /// `sg_ram`. Then the next entry, the first nonzero one, or the verdict again.
    SgeVerdict,
    /// (17, completer) READ / atomic response checks, 1: the head WQE is what the response answers; the
    /// response's offset in its PSN range; the PSN expected. Registered in `CheckRegion` for
    /// every packet; this state is for a response checked again after the WQEs before its
    /// READ retired.
    RspHead,
    /// (18, completer) 2: inside the range; the distance from the expected PSN; byte offsets.
    /// Registered in `Decide` for every packet, and here on the way from `RspHead`.
    RspRange,
    /// (19) Unused: `AtomicReplayRead` until stop 32, when the duplicate-atomic lookup moved
    /// to [`crate::atomic_unit::AtomicUnit`]; kept so the later states keep their encoding.
    Unused19,
    /// (20, completer) 3: in order or not; the opcode and length its place requires; where the payload
    /// goes.
    RspOrder,
    /// (21, completer) 4: the verdict: written, dropped, the READ resumed, or the WQEs it implicitly
    /// acknowledges retired first.
    RspAct,
    /// (22, completer) The scheduler is asked to resume the head READ at its first missing response
    /// (9.7.5.1.3), once per PSN.
    ResumeRead,
    /// (23) Unused: `AtomicReplayMatch` until stop 32 (see `Unused19`).
    Unused23,
    /// (24, responder) A READ, an atomic (new or replayed) or an ACK owed behind READ responses goes to
    /// the atomic unit, with a barrier job into the write-job FIFO.
    QueueResponse,
    /// (25, receive scatter) A UD SEND's receive WQE is checked: the first 40 bytes of its
    /// first nonzero entry are the GRH area (IBTA Vol 1 9.8.4.? / Annex A17.4.5.3: for RoCEv2
    /// over IPv4 the IPv4 header in its last 20 bytes); one job copies the packet's IPv4
    /// header there, and the message then starts 40 bytes into the entry (`SgeFits` again,
    /// then `Decide`). An entry shorter than 40 bytes completes the receive with
    /// IBV_WC_LOC_LEN_ERR.
    UdGrh,
    /// (26, completions) The asynchronous event at the event queue's head is taken: its
    /// fields are loaded and it is popped. (`Idle` only chooses it: popping there put the
    /// queue's empty flag, the choice and the queue's read address in one 7-level path.)
    EventTake,
    /// (27) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused27,
    /// (28) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused28,
    /// (29) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused29,
    /// (30) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused30,
    /// (31) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused31,
    /// (32, completer) Retire loop, 2: is the head WQE's last PSN covered (serial compare, registered).
    RetireCompare,
    /// (33, flush) One flush step: a QP the driver just moved to ERR has the scheduler flush its send
    /// queue; then each outstanding send WQE completes (retire loop), then each posted
    /// receive WQE is fetched.
    FlushStep,
    /// (34, flush) The fetched receive WQE completes with IBV_WC_WR_FLUSH_ERR.
    FlushRecvWqe,
    /// (35, receive scatter) The next scatter entry is taken from the WQE's beats (then `SgeReadKey` ..
    /// `SgeVerdict` check it).
    SgeSelect,
    /// (36, receive scatter) Several entries: the message starts in the first nonzero one.
    SgeFirstNonzero,
    /// (37, receive scatter) The packet fits that entry, or the entries together; back to the verdict.
    SgeFits,
    /// (38) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused38,
    /// (39) Unused: the variants are declared in the order of their numbers, with these
    /// gaps, so the state register's encoding is that numbering, which the engine's
    /// timing closure was done against (a compact encoding added 7-LUT-level paths).
    Unused39,
    /// (40, receive scatter and READ-response scatter) The packet's payload is walked over its
    /// list (the receive's `sg_ram` entries or the READ's `rdl_ram` list) by
    /// [`crate::scatter::Scatter`], one payload job per piece; its last piece goes on to the
    /// state in `sc_next`.
    Scatter,
}

/// Decides what each received packet does, in order, and keeps the transport state.
///
/// **Responder** (IBTA Vol 1 9.7): for an RDMA WRITE request on a QP in RTR or RTS:
/// - the PSN must equal the expected PSN, else the packet is dropped (`cnt_drop_psn`);
/// - FIRST/ONLY: the RETH's rkey must name a valid key-table entry with the same tag and PD
///   as the QP, the region and the QP must grant REMOTE_WRITE, and `[va, va + len)` must lie
///   inside the region (a zero-length WRITE skips the key check, 9.4.4); MIDDLE/LAST must
///   continue an open message with exactly the segment lengths its RETH implies. A violation
///   writes nothing, is counted (`cnt_drop_key` / `cnt_drop_inv_req`) and answered with NAK
///   remote access error / invalid request;
/// - an accepted packet becomes a payload [`WriteJob`] for the [`crate::rx_writer::RxWriter`]
///   with the translated address, and, with AckReq or on a message's last packet, an ACK
///   carrying the new MSN.
///
/// **Receive scatter** (IBTA Vol 1 9.7.4.1.3, 10.8.3; ibv_post_recv(3)): a SEND's first packet
/// (and a WRITE with immediate's last) fetches the receive WQE at the RQ consumer index, all
/// `64 << RQ_LOG_STRIDE` bytes of it (1, 2 or 4 beats). For a SEND every scatter entry among the
/// first `min(num_sge, 3 / 7 / 15)` with a nonzero length must name a valid key of the QP's PD
/// granting LOCAL_WRITE and lie inside its region, else the receive completes with
/// IBV_WC_LOC_PROT_ERR and nothing is written; the nonzero entries are kept translated in
/// `sg_ram` ({IOVA, length} at `qpn << 4 | k`). The message fills them in order: the responder
/// state holds the address and room left in the current entry, its slot, and the bytes left in
/// all of them; a packet longer than the latter completes the receive with IBV_WC_LOC_LEN_ERR,
/// and so does a SEND into a WQE whose num_sge is more than its stride holds (a malformed WQE:
/// the driver never writes one).
/// A packet that fits the current entry is one payload job, as with one entry; one that passes
/// an entry's end becomes one job per piece (`min(entry left, payload left)` bytes at byte
/// offset `hlen + bytes placed` of the packet), the last of them freeing the packet's beats and
/// carrying its ACK request.
///
/// **READ responses into an SGE list** (IBTA Vol 1 9.7.4.1.4; ibv_post_send(3) `sg_list` of
/// an IBV_WR_RDMA_READ): a READ whose in-flight record has `rd_list` set has its local SGEs,
/// checked and translated by the scheduler, in `rdl_ram` (4 lists per QP, used in turn by READ
/// number; the scheduler sends such a READ only while fewer than 4 READs or atomics of the QP
/// are outstanding, so the list is its own).
/// Responses are written only in PSN order, so a per-QP cursor (entry, bytes of it filled,
/// in the completer state) always points at the response's first byte: each in-order response
/// becomes one payload job per entry it touches, like a scattered SEND packet, and a response
/// replayed after a loss lands where the lost one would have.
///
/// **Completer**: for an ACK/NAK on a QP in RTS, retires in-flight WQEs in SQ order while
/// their last PSN is covered (24-bit serial comparison, 9.7.5.1.3): successful ones produce a
/// CQE if signaled; a NAK with an error code completes the WQE holding the NAKed PSN with
/// `IBV_WC_REM_INV_REQ_ERR`, `REM_ACCESS_ERR` or `REM_OP_ERR`. Local errors from the
/// scheduler become CQEs the same way. Each CQE is a 32-byte [`WriteJob`] with the owner bit
/// of [`rnic_contract::cqe::OWNER`].
///
/// Every packet produces exactly one job that frees its buffer beats, after any others of the
/// same packet (a scattered packet's earlier pieces free nothing), so the writer frees
/// packet-buffer space in order.
///
/// Timing: 6 cycles per request packet (issue, table read, first checks, region room, decide,
/// write back), fewer than the writer's 1 + payload beats from MTU 512 up (a 256-byte packet
/// takes 5 beats, so at MTU 256 this engine sets the pace: 256 bytes per 6 cycles, 85 Gb/s);
/// an ACK costs 6 cycles plus 3 per WQE retired (plus 1 per CQE), and 3 more to find the
/// end when its PSN falls inside a WQE rather than at the end of the last it retires; a READ
/// or atomic response that completes its READ costs 9 (issue, table read, first checks,
/// region and response check 1, decide and check 2, response checks 3 and 4, retire, write
/// back; 12 until stop 39, when checks 1 and 2 had states of their own and the retire loop
/// compared the READ's last PSN again). A receive WQE costs its DMA fetch plus 4
/// cycles for entry 0 and 5 for each further entry checked (entry select, key read, offset,
/// room, verdict) plus 2 to pick the first nonzero entry; a packet that crosses scatter entries
/// costs 2 cycles per piece (piece length compare, job) plus 2 per entry change (`sg_ram`
/// read) on top of the 6; a READ response into an SGE list costs 2 cycles per piece plus
/// 2 per entry change (`rdl_ram` read) on top of its checks, plus 1 on the READ's first
/// response. The checks are registered in stages so no decision path is deeper than 6 LUT
/// levels: a piece's length is a mux of registers chosen by a comparison registered the cycle
/// before.
#[derive(LogicBlock, Default)]
pub struct RxEngine {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The state machine's state as its number (the one in parentheses in [`RxState`]), for the
    /// engine status register (rnic_contract::regs::STATUS).
    pub dbg_state: Signal<Out, Bits<6>>,
    pub desc_empty: Signal<In, Bit>,
    pub desc: Signal<In, RxDesc>,
    pub desc_read: Signal<Out, Bit>,
    pub lc_empty: Signal<In, Bit>,
    pub lc: Signal<In, LocalCompletion>,
    pub lc_read: Signal<Out, Bit>,
    /// Local ACK timeouts from the [`crate::ack_timer::AckTimer`] (QPN, FIFO head).
    pub to_empty: Signal<In, Bit>,
    pub to_qpn: Signal<In, TimerEventRec>,
    pub to_read: Signal<Out, Bit>,
    /// Write bus of the retired-WQE counts, for the timer's copy.
    pub acked_we: Signal<Out, Bit>,
    pub acked_waddr: Signal<Out, Bits<6>>,
    /// The retired-WQE count and the low byte of the newest PSN acknowledged (an ACK, NAK or
    /// in-order READ response moved it): either moving is progress for the timer.
    pub acked_wdata: Signal<Out, AckProgressRec>,
    pub cnt_timeout: Signal<Out, Bit>,
    pub cmd_fire: Signal<In, Bit>,
    /// A context command is pending at BAR0 (it fires when both engines are ready).
    pub cmd_valid: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub cmd_ready: Signal<Out, Bit>,
    pub acked_raddr: Signal<In, Bits<6>>,
    pub acked_rdata: Signal<Out, Bits<16>>,
    /// RDMA READs retired by the completer for the QP at `acked_raddr` (mod 128), for the
    /// scheduler's `max_rd_atomic` check.
    pub acked_rreads: Signal<Out, Bits<7>>,
    /// The PSN after the last WQE retired for that QP: where the scheduler resumes if a
    /// rewind it took is overtaken by a late ACK or response.
    pub acked_rpsn: Signal<Out, Bits<24>>,
    pub sent_addr: Signal<Out, Bits<6>>,
    pub sent_data: Signal<In, Bits<16>>,
    pub if_we: Signal<In, Bit>,
    pub if_waddr: Signal<In, Bits<12>>,
    pub if_wdata: Signal<In, InflightRec>,
    /// Write port of the READ list table (from the scheduler): `{iova 63..0, length 95..64}`
    /// of entry `k` of QP `qpn`'s READ number `s` (counting its READs and atomics) with several
    /// SGEs, at `qpn << 6 | (s mod 4) << 4 | k`.
    pub rl_we: Signal<In, Bit>,
    pub rl_waddr: Signal<In, Bits<12>>,
    pub rl_wdata: Signal<In, ScatterEntryRec>,
    /// The write-job FIFO's almost-full flag (at most one free slot); see `job_room`.
    pub job_afull: Signal<In, Bit>,
    pub job_write: Signal<Out, Bit>,
    pub job: Signal<Out, WriteJob>,
    pub cnt_roce_ok: Signal<Out, Bit>,
    pub cnt_unknown_qp: Signal<Out, Bit>,
    pub cnt_drop_key: Signal<Out, Bit>,
    pub cnt_drop_psn: Signal<Out, Bit>,
    pub cnt_drop_inv_req: Signal<Out, Bit>,
    pub cnt_dup: Signal<Out, Bit>,
    pub cnt_retransmit: Signal<Out, Bit>,
    /// Counter pulses by NAK code: sequence NAKs queued, NAKs received per AETH code.
    pub cnt_tx_nak_seq: Signal<Out, Bit>,
    pub cnt_rx_nak_seq: Signal<Out, Bit>,
    pub cnt_rx_nak_inv_req: Signal<Out, Bit>,
    pub cnt_rx_nak_rem_access: Signal<Out, Bit>,
    pub cnt_rx_nak_rem_op: Signal<Out, Bit>,
    /// Go-back-N request to the scheduler ([`RewindRec`]): resend WQE `ci`, whose first PSN
    /// is `first_psn`, from PSN `restart`; or, with `flush`, flush the QP (it entered the error
    /// state).
    pub rw_full: Signal<In, Bit>,
    pub rw_write: Signal<Out, Bit>,
    pub rw_data: Signal<Out, RewindRec>,
    pub cnt_rx_ack: Signal<Out, Bit>,
    pub cnt_cqe: Signal<Out, Bit>,
    /// Arms the RNR wait of QP `rnr_qpn` with the RNR NAK's timer code (in the ACK timer).
    pub rnr_arm: Signal<Out, Bit>,
    pub rnr_qpn: Signal<Out, Bits<6>>,
    pub rnr_code: Signal<Out, Bits<5>>,
    /// RNR NAKs sent (no receive WQE for a SEND) and received.
    pub cnt_tx_rnr: Signal<Out, Bit>,
    /// A UD SEND dropped: no receive WQE posted ([`rnic_contract::regs::counter::DROP_NO_RWQE`]).
    pub cnt_drop_no_rwqe: Signal<Out, Bit>,
    pub cnt_rx_rnr: Signal<Out, Bit>,
    /// RQ doorbell from BAR0: `qpn << 16 | producer index` (stored at once).
    pub rq_db_write: Signal<In, Bit>,
    pub rq_db_data: Signal<In, Bits<32>>,
    /// [`rnic_contract::regs::ASYNC_EVENT_CQ`]: bit 8 enable, bits 7:0 the CQ of the
    /// QP-affiliated asynchronous events.
    pub async_cq: Signal<In, Bits<9>>,
    /// Receive-WQE read, through [`crate::recv_prefetch::RecvWqePrefetch`]: the WQE at
    /// `rq_ar_addr`, entry `rq_ar_ci` of the ring at `rq_ar_base` (index mask `rq_ar_mask`,
    /// producer index `rq_ar_pi`: the QP's RQ or its SRQ).
    pub rq_ar_valid: Signal<Out, Bit>,
    pub rq_ar_addr: Signal<Out, Bits<64>>,
    /// Beats of the receive WQE minus one.
    pub rq_ar_len: Signal<Out, Bits<3>>,
    pub rq_ar_base: Signal<Out, Bits<64>>,
    pub rq_ar_ci: Signal<Out, Bits<16>>,
    pub rq_ar_pi: Signal<Out, Bits<16>>,
    pub rq_ar_mask: Signal<Out, Bits<16>>,
    pub rq_ar_ready: Signal<In, Bit>,
    pub rq_r_valid: Signal<In, Bit>,
    pub rq_r_data: Signal<In, Bits<512>>,
    /// READs accepted or replayed, atomics to execute or replay and ACKs owed behind
    /// responses, for [`crate::atomic_unit::AtomicUnit`] (its queue's full flag; each job goes
    /// with a barrier job into the write-job FIFO in the same cycle).
    pub rr_full: Signal<In, Bit>,
    pub rr_write: Signal<Out, Bit>,
    pub rr_item: Signal<Out, RespItem>,
    /// The engine is in its idle state, where it never writes the write-job FIFO: the atomic
    /// unit may push its result job this cycle.
    pub job_free: Signal<Out, Bit>,
    /// The assembler sent the last packet of a new READ's or atomic's response of local QP
    /// `rsp_done_qpn` ([`crate::tx_assembler::TxAssembler`]): the QP owes one fewer.
    pub rsp_done: Signal<In, Bit>,
    pub rsp_done_qpn: Signal<In, Bits<6>>,
    /// Fresh READ / atomic responses sent, by QP (mod 256), against `racc_ram` (accepted): the
    /// difference is what the responder still owes (`max_dest_rd_atomic`, and whether an ACK
    /// must wait behind responses); read at the packet's QP (`rd_done_data`).
    rdone: RespDoneTable,
    rd_done_data: Signal<Local, Bits<8>>,
    /// The scheduler's emission report: a request packet of QP `emit_qpn` left, `emit_psn` is
    /// the PSN after it (see [`crate::tx_scheduler::TxScheduler`]).
    pub emit_we: Signal<In, Bit>,
    pub emit_qpn: Signal<In, Bits<6>>,
    pub emit_psn: Signal<In, Bits<24>>,
    /// The scheduler's drain report: QP `sq_stop_qpn`, draining (SQD), starts no further WQE
    /// (see [`crate::tx_scheduler::TxScheduler::sq_stop`]).
    pub sq_stop: Signal<In, Bit>,
    pub sq_stop_qpn: Signal<In, Bits<6>>,
    /// The PSN after the highest request packet sent, per QP (INIT_SQ_PSN writes the first
    /// PSN): an ACK, NAK or response for a PSN at or past it answers nothing we sent (a ghost)
    /// and is dropped (`cnt_drop_psn`).
    sent_psns: SentPsnTable,
    /// The packet's QP's emission PSN (`LoadQpState`) and the packet's PSN is at or past it
    /// (`CheckRegion`).
    emit_now_r: DFF<Bits<24>>,
    ghost_r: DFF<Bit>,
    /// READ responses: the PSN where the head READ's response stream may (re)start with FIRST
    /// or ONLY besides its first PSN: where the completer last asked for it to be resumed
    /// (completer state bits 132..155, valid bit 156; cleared when a WQE retires). The opcode
    /// and AETH of a response fit its place (`RspOrder`); one that does not completes the READ
    /// with IBV_WC_BAD_RESP_ERR (`rsp_bad`, IBTA Vol 1 9.9.2, as rxe's completer does).
    rd_rs: DFF<Bits<24>>,
    rd_rs_ok: DFF<Bit>,
    /// The newest PSN acknowledged (by an ACK's or NAK's cover PSN, or an in-order READ
    /// response; completer state bits 157..180, INIT_SQ_PSN sets it to the first PSN - 1): its
    /// low byte goes to the ACK timer, for which any forward move is progress (IBTA Vol 1
    /// 9.7.6.1.3: the timer restarts on forward progress, not only when a WQE retires).
    ack_hi: DFF<Bits<24>>,
    ack_fwd_r: DFF<Bit>,
    ack_d: Signal<Local, Bits<24>>,
    r_opc_ok: DFF<Bit>,
    rsp_bad: DFF<Bit>,
    r_start: Signal<Local, Bit>,
    r_end: Signal<Local, Bit>,
    ghost_d: Signal<Local, Bits<24>>,
    /// The READ responder's job inside `rr_item`.
    rr_data: Signal<Local, ReadRespJob>,
    tables: ContextTables,
    /// The responder's state per QP ([`RespDynRec`]); `rdyn_zero` is its all-zero record.
    rdyn_ram: RAM<RespDynRec, 6>,
    rdyn_zero: Zero<RespDynRec>,
    /// What `WriteBack` and a context command write into it.
    rdyn_wb: Signal<Local, RespDynRec>,
    rdyn_init: Signal<Local, RespDynRec>,
    rqpi_ram: RAM<Bits<16>, 6>,
    /// Shared receive queues, by SRQ number: consumer index, and {limit 15..0, event CQ 23..16}
    /// (rnic_contract::srq_context).
    srqci_ram: RAM<Bits<16>, 6>,
    /// Fresh READs and atomics accepted as responder, by QP (mod 256).
    racc_ram: RAM<Bits<8>, 6>,
    rd_acc: DFF<Bits<8>>,
    /// The READ / atomic handed to the TX side is a new request (not a replay).
    rr_fresh: DFF<Bit>,
    /// The job handed to the TX side is an ACKNOWLEDGE with syndrome `rr_syn_r`: the NAK
    /// invalid request of a READ / atomic beyond `max_dest_rd_atomic`, or an ACK or NAK
    /// diverted because the QP still owes READ responses (`ack_div`).
    rr_nak: DFF<Bit>,
    rr_syn_r: DFF<Bits<8>>,
    /// A pending command puts the QP this engine works on in RESET (registered): the command
    /// is held until the engine is back in `Idle` (see `cmd_ready`).
    rst_here_r: DFF<Bit>,
    cmd_seen_r: DFF<Bit>,
    rst_cmd: Signal<Local, Bit>,
    /// The packet's ACK or NAK was taken off its write job because the QP has READ / atomic
    /// responses still to send (`pend_rd_r`, `CheckRegion`): it goes through the READ FIFO
    /// behind them instead (`WriteBack` → `QueueResponse`), so responses leave in PSN order
    /// (IBTA Vol 1 9.7.5.1).
    ack_div: DFF<Bit>,
    ack_psn_r: DFF<Bits<24>>,
    ack_msn_r: DFF<Bits<24>>,
    pend_rd_r: DFF<Bit>,
    /// `max_dest_rd_atomic` of them are outstanding (`CheckRegion`, acted on in `Decide`).
    rd_over_r: DFF<Bit>,
    srq_ram: RAM<Bits<24>, 6>,
    /// Asynchronous events waiting to be written as event CQEs: the QP events decided in
    /// `WriteBack` (COMM_EST, the error event, LAST_WQE_REACHED) and `FlushStep`
    /// (SQ_DRAINED), the SRQ limit events pushed in `Idle`; served from `Idle`.
    evq: AsyncEventQueue,
    /// The visit's QP's SQ drain is armed (`LoadQpState`, from [`QpCheckSet::armed`]): then
    /// every visit that writes its state back asks for a check visit again, so the ACK that
    /// retires the last outstanding WQE leads to `FlushStep` raising IBV_EVENT_SQ_DRAINED.
    sqd_here: DFF<Bit>,
    /// `FlushStep` decided SQ_DRAINED for the visit's QP: handed to the event queue the next
    /// cycle (`Idle`, where `qpn` still names the QP), so the decision's depth does not meet
    /// the queue's latches in one cycle.
    sd_req: DFF<Bit>,
    /// `Decide`: the packet's RETH or AtomicETH is refused (the access half of `class_c`),
    /// for the choice of the error event in `WriteBack`.
    acc_r: DFF<Bit>,
    /// The error event `WriteBack` raises when the QP's error flag rose (ibv_event_type; 0:
    /// none), chosen from registers: `err_was` is the flag as loaded (`LoadQpState`).
    ev_type: Signal<Local, Bits<5>>,
    err_was: DFF<Bit>,
    /// COMM_EST: the QP already raised it in this RTR (responder state bit 364, cleared by
    /// INIT_RQ_PSN and RESET); `ce_fire`: this packet is a request with the expected PSN on a
    /// QP in RTR (`Decide`).
    ce_done: DFF<Bit>,
    ce_fire: DFF<Bit>,
    ce_bit: Signal<Local, Bit>,
    /// The packet's QP takes receive WQEs from an SRQ: its indices were loaded from the SRQ's
    /// (`CheckRegion`) and go back there (`WriteBack`); then the limit is checked (`Idle`).
    srq_took: DFF<Bit>,
    srq_lim: DFF<SrqLimitRec>,
    ev_chk: DFF<Bit>,
    /// This packet took a WQE from the SRQ (only then is its limit checked).
    srq_inc: DFF<Bit>,
    ev_fire_r: DFF<Bit>,
    /// Serving an asynchronous event (`ReadQpState`, `LoadQpState`, `CompletionWait`,
    /// `CompletionRoute`, `WriteCqe`, `WriteBack`) to this CQ.
    src_ev: DFF<Bit>,
    ev_cq: DFF<Bits<8>>,
    /// The completer's state per QP ([`AckedRec`]), and the scheduler's view of it
    /// ([`AckedTxRec`]); `acked_zero` is the all-zero record.
    acked_ram: RAM<AckedRec, 6>,
    acked_tx_ram: RAM<AckedTxRec, 6>,
    acked_zero: Zero<AckedRec>,
    /// The word `acked_ram` is written with, for the copies made of it.
    acked_w: Signal<Local, AckedRec>,
    acked_w_hi: Signal<Local, Bits<24>>,
    inflight_ram: RAM<Bits<224>, 12>,
    state: DFF<RxState>,
    /// The write-job FIFO has room for a job this cycle: its almost-full flag (at most one free
    /// slot), registered. Safe for one job per cycle: a flag taken a cycle late still leaves
    /// room for the job written in that cycle.
    job_room: DFF<Bit>,
    /// QPs to look at for flushing (IBTA Vol 1 10.3.1: a QP in ERR completes every WQE with
    /// IBV_WC_WR_FLUSH_ERR, on the RQ too) or for an SQ drain check, and the drains' arming:
    /// served from `Idle` (`src_fl`) one WQE at a time, after local completions and before
    /// timeouts and packets.
    chk: QpCheckSet,
    src_fl: DFF<Bit>,
    /// The covering PSN precedes the head in-flight WQE's last PSN (24-bit serial compare),
    /// registered in `RetireCompare` so `Retire` acts on a flag, not on a subtraction.
    psn_before_r: DFF<Bit>,
    /// An atomic request's form (no payload, aligned VA) and the CQ write-back flag, a
    /// cycle ahead of their use.
    at_form_r: DFF<Bit>,
    pz_r: DFF<Bit>,
    /// The CQ producer-index table's write, registered.
    /// Context commands may be taken this cycle (see `cmd_ready`).
    cmd_ok_r: DFF<Bit>,
    src_lc: DFF<Bit>,
    src_to: DFF<Bit>,
    retries: DFF<Bits<3>>,
    qp_err: DFF<Bit>,
    pkt: DFF<RxDesc>,
    lcr: DFF<LocalCompletion>,
    qpn: DFF<Bits<6>>,
    qpn_ok: DFF<Bit>,
    ctx: DFF<QpContextRec>,
    epsn: DFF<Bits<24>>,
    msn: DFF<Bits<24>>,
    wr_addr: DFF<Bits<64>>,
    wr_rem: DFF<Bits<32>>,
    /// What `Decide` leaves in `wr_rem` for an accepted WRITE (`reth_len` or `wr_rem`, less
    /// the payload) and SEND start (`sge_len` less the payload), registered every cycle: their
    /// inputs hold for at least the cycle before `Decide` (`wr_rem` is loaded in
    /// `LoadQpState`, `sge_len` in the receive-entry states before `SgeFits` or
    /// `SgeVerdict`), and the subtractions then stay out of `Decide`'s mux (7 LUT levels
    /// from `wr_rem` into itself otherwise).
    wrem_wr_r: DFF<Bits<32>>,
    wrem_send_r: DFF<Bits<32>>,
    in_write: DFF<Bit>,
    nak_sent: DFF<Bit>,
    acked: DFF<Bits<16>>,
    sent: DFF<Bits<16>>,
    // Completer.
    status: DFF<Bits<8>>,
    cqe_wr_id: DFF<Bits<64>>,
    cqe_len: DFF<Bits<32>>,
    // Request checks, registered in stages (`LoadQpState`, `CheckRegion`, then the decision
    // in `Decide`).
    off_r: DFF<Bits<64>>,
    va_ok: DFF<Bit>,
    key_ok_r: DFF<Bit>,
    seq_ok_r: DFF<Bit>,
    /// Segment-length flags for `seq_ok`, registered in `LoadQpState` from the table's path MTU:
    /// payload = MTU, payload ≤ MTU (and not 0), RETH length > MTU, payload = RETH length.
    len_eq_mtu_r: DFF<Bit>,
    len_le_mtu_r: DFF<Bit>,
    len_nz_r: DFF<Bit>,
    reth_gt_mtu_r: DFF<Bit>,
    len_eq_reth_r: DFF<Bit>,
    mtu_now: Signal<Local, Bits<32>>,
    psn_delta_r: DFF<Bits<24>>,
    off_ok: DFF<Bit>,
    room: DFF<Bits<64>>,
    w_addr_r: DFF<Bits<64>>,
    cover_r: DFF<Bits<24>>,
    /// PSN of the last sequence NAK the requester acted on (responder-state bits 164..188),
    /// valid when `last_nak_ok` (bit 163; cleared by INIT and by a timeout retry).
    last_nak: DFF<Bits<24>>,
    last_nak_ok: DFF<Bit>,
    /// The NAK being handled names a different PSN than the last one acted on.
    nak_moved: DFF<Bit>,
    // Receive queue (responder for SEND): RQ indices, the open receive WQE, its completion.
    in_send: DFF<Bit>,
    rq_ci: DFF<Bits<16>>,
    rq_pi: DFF<Bits<16>>,
    recv_len: DFF<Bits<32>>,
    recv_wr_id: DFF<Bits<64>>,
    rwqe: DFF<RecvWqeRec>,
    rwqe_ready: DFF<Bit>,
    sge_len: DFF<Bits<32>>,
    rq_addr_r: DFF<Bits<64>>,
    src_recv: DFF<Bit>,
    cqe_opcode: DFF<Bits<8>>,
    recv_need_ack: DFF<Bit>,
    recv_syn: DFF<Bits<8>>,
    // Decision inputs registered a state ahead, so `Decide` only combines flags.
    bounds_ok_r: DFF<Bit>,
    sge_ok_r: DFF<Bit>,
    send_fits_r: DFF<Bit>,
    rq_empty_r: DFF<Bit>,
    c_unknown: DFF<Bit>,
    c_dup: DFF<Bit>,
    c_gap: DFF<Bit>,
    /// Path MTU in bytes, taken from the QP context as it is loaded.
    mtu_r: DFF<Bits<32>>,
    /// Opcode classes of `pkt` ([`OpClass`]); `opc_none` is the all-false record.
    opc: DFF<OpClass>,
    opc_none: Zero<OpClass>,
    /// Responder atomics: the job is an ATOMIC ACKNOWLEDGE (`at_mode`), of an atomic to execute
    /// (`at_exec`; else a replay, which the atomic unit looks up); the QP's next replay-table
    /// slot (responder-state bits 320..323).
    at_mode: DFF<Bit>,
    at_exec: DFF<Bit>,
    at_slot: DFF<Bits<4>>,
    // Receive completion extras: ImmDt and wc_flags.
    cqe_imm: DFF<Bits<32>>,
    cqe_flags: DFF<Bits<8>>,
    /// The CQE's SRC_QP: a UD receive's sender (the DETH's source QP), else 0.
    cqe_srcqp: DFF<Bits<24>>,
    /// UD: the GRH area of this packet's receive WQE is written (`UdGrh`); its Q_Key differs
    /// from the QP's (registered in `CheckRegion`).
    grh_done: DFF<Bit>,
    /// `UdGrh`'s inputs, registered every cycle from the entry registers (which settle in
    /// `SgeVerdict`, at least two cycles before `UdGrh`), so that state's decision and job start
    /// at registers: no nonzero entry or the first shorter than 40 bytes; the GRH's address
    /// (entry + 20); the message's start (entry + 40), the entry's and all entries' bytes after
    /// the GRH.
    grh_short: DFF<Bit>,
    /// `UdGrh` found no room for the GRH: the receive completes IBV_WC_LOC_LEN_ERR (not a
    /// drop).
    grh_bad: DFF<Bit>,
    grh_addr: DFF<Bits<64>>,
    grh_msg: DFF<Bits<64>>,
    grh_len: DFF<Bits<32>>,
    grh_tot: DFF<Bits<36>>,
    /// The message and the GRH area fit the WQE's entries together (checked before anything is
    /// written, so a datagram that is dropped writes nothing).
    grh_fits: DFF<Bit>,
    qkey_bad: DFF<Bit>,
    /// The packet's DETH, as the ingress left it in `reth_va`.
    deth: Signal<Local, DethRec>,
    /// Requester side of an RDMA READ: the next response PSN expected for the READ at the
    /// head of the in-flight table (completer state bits 32..56), valid when `rd_valid` (bit
    /// 21; cleared each time a WQE retires, when the head's first PSN is expected).
    rd_next: DFF<Bits<24>>,
    rd_valid: DFF<Bit>,
    /// READ WQEs retired (mod 128; completer state bits 24..31).
    reads_done: DFF<Bits<7>>,
    /// The PSN after the last WQE retired (completer state bits 64..87).
    acked_psn: DFF<Bits<24>>,
    /// `LoadQpState`: every request packet this QP sent is acknowledged (the PSN after the last
    /// WQE retired is the PSN after the highest packet ever sent, [`SentPsnTable`]). An SQ
    /// drain needs it besides `sent == acked`: a go-back-N rewind lowers `sent` to the rewind
    /// point, which is `acked`, while the WQEs after it still wait to be resent.
    all_acked_r: DFF<Bit>,
    /// The timeout being handled is the end of an RNR wait; RNR NAKs counted against
    /// RNR_RETRY since the last progress, and an RNR wait in progress (completer state bits
    /// 88..90, 91).
    src_rnr: DFF<Bit>,
    rnr_cnt: DFF<Bits<3>>,
    rnr_wait: DFF<Bit>,
    /// The RNR arm request, registered (`Retire` decides, the timer hears it a cycle later).
    arm_r: DFF<Bit>,
    arm_code_r: DFF<Bits<5>>,
    /// The packet is a sequence NAK that may rewind (no RNR wait running), and a rewind is
    /// still allowed (RETRY_CNT, progress, or the end of an RNR wait); registered every cycle
    /// from registers the retire loop's `RetireLoad` and `RetireCompare` do not change, so
    /// `Retire` sees them whether the loop started at `RetireLoad` or at `RetireCompare`.
    seq_nak_r: DFF<Bit>,
    retry_ok_r: DFF<Bit>,
    /// `RetireCompare`: the packet is a NAK to ignore (older than the head WQE, or a second
    /// copy of the sequence NAK already acted on), registered so `Retire`'s rewind request
    /// does not wait on a 24-bit subtraction.
    nak_drop_r: DFF<Bit>,
    /// No send WQE is outstanding (`sent` − `acked` is zero, or negative as a 16-bit serial
    /// number): kept beside `acked`, set where `acked` is loaded or advanced, so the retire
    /// loop's `RetireLoad` and the flush decide on a flag rather than on a subtraction.
    none_out: DFF<Bit>,
    /// `RetireCompare`: the head WQE ends exactly at the covering PSN of an ACK or a READ /
    /// atomic response, and no NAK, RNR NAK, timeout, error or bad response is being acted
    /// on: once it retires, the next WQE (first PSN one later) cannot be covered, so the
    /// loop ends at `WriteBack` instead of reading it (3 cycles less per ACK or response).
    stop_r: DFF<Bit>,
    /// What `stop_r` needs besides the PSN match.
    stop_ok: Signal<Local, Bit>,
    /// A READ response waits for the WQEs before its READ to retire (implicit ACK), then is
    /// checked again (`rsp_retired`); `rsp_final` lets the retire loop complete the READ.
    rsp_pending: DFF<Bit>,
    rsp_retired: DFF<Bit>,
    rsp_final: DFF<Bit>,
    // READ response checks, registered in `CheckRegion` / `RspHead`, `Decide` / `RspRange`
    // and `RspOrder`.
    r_head_read: DFF<Bit>,
    r_a: DFF<Bits<24>>,
    r_b: DFF<Bits<24>>,
    r_exp: DFF<Bits<24>>,
    r_in: DFF<Bit>,
    r_eq: DFF<Bit>,
    r_d: DFF<Bits<24>>,
    r_off: DFF<Bits<32>>,
    r_boff: DFF<Bits<32>>,
    r_len_ok: DFF<Bit>,
    r_ahead: DFF<Bit>,
    r_past: DFF<Bit>,
    r_addr: DFF<Bits<64>>,
    r_exp_dup: DFF<Bit>,
    /// PSNs a READ request uses: ceil(len / MTU), at least 1 (registered in `CheckRegion`).
    rd_npkts: DFF<Bits<24>>,
    /// `rr_full`, a cycle late: only this engine writes the READ FIFO (in `QueueResponse`, then it
    /// leaves), so the late copy is exact there.
    rr_full_r: DFF<Bit>,
    /// READ length in whole MTUs (`LoadQpState`) and whether it is zero, for `rd_npkts`.
    rd_q: DFF<Bits<24>>,
    rd_part: DFF<Bit>,
    rd_zero: DFF<Bit>,
    /// `Retire` → `ResumeRead`: a READ covered by an ACK asks to be resumed (registered
    /// restart PSN and whether that PSN was already asked for).
    rd_rw_psn: DFF<Bits<24>>,
    rd_rw_dup: DFF<Bit>,
    // Receive scatter (IBTA Vol 1 9.7.4.1.3, 10.8.3; ibv_post_recv(3)).
    /// The fetched receive WQE's beats as scatter-entry lanes: entries 0..2 (beat 0, lanes
    /// 1..3; lane 0 holds wr_id and num_sge, kept in `rwqe`), 3..6, 7..10, 11..14 (beats 1..3).
    sgb0: DFF<SgeLanesRec>,
    sgb1: DFF<SgeLanesRec>,
    sgb2: DFF<SgeLanesRec>,
    sgb3: DFF<SgeLanesRec>,
    /// Beat of the receive-WQE fetch expected next; beats of the fetch minus one (1, 2 or 4
    /// beats: the QP's RQ stride) and the entries that stride holds (3, 7, 15).
    rq_beat: DFF<Bits<2>>,
    rq_nb: DFF<Bits<2>>,
    sg_cap: DFF<Bits<5>>,
    /// Entry being checked (`sg_i`, its 16 bytes in `cur_sge`), entries to check
    /// (`min(num_sge, sg_cap)`), whether another follows, and how many nonzero ones passed so
    /// far (`sg_n`: their slot in `sg_ram`).
    sg_i: DFF<Bits<5>>,
    sg_cnt: DFF<Bits<5>>,
    /// The WQE's num_sge is more than its stride holds (`SgeReadKey`): a SEND into it completes
    /// with IBV_WC_LOC_LEN_ERR, like a message longer than its entries.
    sg_over: DFF<Bit>,
    sg_more: DFF<Bit>,
    sg_n: DFF<Bits<5>>,
    cur_sge: DFF<SgeRec>,
    /// The receive-WQE beat arriving, as scatter-entry lanes.
    rq_lanes: Signal<Local, SgeLanesRec>,
    /// Sum of the entries' lengths (36 bits: 15 entries of up to 2^32 - 1 bytes), and the
    /// first nonzero entry (translated address, length): where the message starts.
    sg_tot: DFF<Bits<36>>,
    first_addr: DFF<Bits<64>>,
    first_len: DFF<Bits<32>>,
    /// The nonzero scatter entries of each QP's open receive, translated and checked, in
    /// order at `qpn << 4 | k`: {IOVA 63..0, length 95..64}. Written when a SEND's first packet
    /// checks its receive WQE; read when a packet's payload passes the end of an entry.
    sg_ram: RAM<ScatterEntryRec, 10>,
    /// Per QP (responder state bits 208..211 and 328..363): the slot in `sg_ram` of the entry
    /// `wr_addr`/`wr_rem` point into, and the bytes left in the whole receive buffer.
    sg_cur: DFF<Bits<4>>,
    tot_rem: DFF<Bits<36>>,
    /// The packet fits what is left of the receive buffer (its entries together).
    tot_fits_r: DFF<Bit>,
    /// The scatter of a packet that passes an entry's end (state `Scatter`): the walk itself,
    /// which pulses `start` in the state's first cycle (`sc_go`); the list is the READ's
    /// (`sc_list`) or the receive's; the cursor it starts from (`sc_addr`, `sc_room`: the
    /// entry's next address and bytes left); the packet's ACK request; the state after its last
    /// piece.
    scat: Scatter,
    sc_go: DFF<Bit>,
    sc_list: DFF<Bit>,
    sc_addr: DFF<Bits<64>>,
    sc_room: DFF<Bits<32>>,
    sc_ack: DFF<Bit>,
    sc_next: DFF<RxState>,
    /// `LoadQpState`: the packet's payload is shorter than / as long as what is left of the open
    /// WRITE; the RQ ring's index mask and RQ_LOG_STRIDE, from the context as it is loaded.
    wr_lt_r: DFF<Bit>,
    wr_eq_r: DFF<Bit>,
    rq_mask_r: DFF<Bits<16>>,
    rq_sh_r: DFF<Bits<3>>,
    // Combinational views.
    rd_wr_rem: Signal<Local, Bits<32>>,
    rq_idx: Signal<Local, Bits<64>>,
    rq_off: Signal<Local, Bits<64>>,
    cur_addr: Signal<Local, Bits<64>>,
    sg_inext: Signal<Local, Bits<5>>,
    sg_first: Signal<Local, Bit>,
    entry_ok: Signal<Local, Bit>,
    plen36: Signal<Local, Bits<36>>,
    sge_len36: Signal<Local, Bits<36>>,
    sg_rd: Signal<Local, ScatterEntryRec>,
    // READ response scatter (IBTA Vol 1 9.7.4.1.4, ibv_post_send(3) sg_list of an RDMA READ).
    /// The checked, translated SGE lists of each QP's READs with several local SGEs, written
    /// by the scheduler as it sends a READ: {IOVA 63..0, length 95..64} at
    /// `qpn << 6 | (s mod 4) << 4 | k` for READ number `s` (the scheduler sends one only while
    /// fewer than 4 READs or atomics of the QP are outstanding, so READ `s - 4` has retired and
    /// its list is free). The head READ's number is `reads_done`.
    rdl_ram: RAM<ScatterEntryRec, 12>,
    /// Per QP (completer state): the list entry the next response byte goes to and the bytes
    /// of it already filled (reset while the READ has no response yet, `rd_valid` clear).
    rl_k: DFF<Bits<4>>,
    rl_used: DFF<Bits<32>>,
    /// The cursor was taken in `RspOrder` (a response after the READ's first, into
    /// `sc_addr` / `sc_room`): the scatter need not read the list entry first.
    rl_pre: DFF<Bit>,
    /// The response's payload goes through the READ list (state `Scatter`).
    r_list: DFF<Bit>,
    rl_rd: Signal<Local, ScatterEntryRec>,
    qp_now: Signal<Local, QpContextRec>,
    mr_now: Signal<Local, MrEntryRec>,
    rdyn_now: Signal<Local, RespDynRec>,
    is_send_start: Signal<Local, Bit>,
    is_send_cont: Signal<Local, Bit>,
    is_send_end: Signal<Local, Bit>,
    is_write_op: Signal<Local, Bit>,
    is_rnr: Signal<Local, Bit>,
    /// The receive SGE's lkey and the request's rkey, by field
    /// ([`rnic_contract::mr_entry::key`]).
    lkey: Signal<Local, KeyRec>,
    lkey_ok: Signal<Local, Bit>,
    sge_ok: Signal<Local, Bit>,
    send_fits: Signal<Local, Bit>,
    rq_mask: Signal<Local, Bits<16>>,
    cmd_qp: Signal<Local, QpContextRec>,
    srq_left: Signal<Local, Bits<16>>,
    rd_lim: Signal<Local, Bits<8>>,
    mdra: Signal<Local, Bits<8>>,
    srq_addr: Signal<Local, Bits<8>>,
    entry: Signal<Local, InflightRec>,
    /// The completer's `acked` as the tables answer it in `LoadQpState`.
    acked_ld: Signal<Local, Bits<16>>,
    rkey: Signal<Local, KeyRec>,
    op: Signal<Local, Bits<8>>,
    is_first_or_only: Signal<Local, Bit>,
    is_last_or_only: Signal<Local, Bit>,
    mtu: Signal<Local, Bits<32>>,
    plen32: Signal<Local, Bits<32>>,
    off: Signal<Local, Bits<64>>,
    key_ok: Signal<Local, Bit>,
    bounds_ok: Signal<Local, Bit>,
    seq_ok: Signal<Local, Bit>,
    cover_psn: Signal<Local, Bits<24>>,
    psn_diff: Signal<Local, Bits<24>>,
    nak_code: Signal<Local, Bits<5>>,
    is_nak: Signal<Local, Bit>,
    cqe: Signal<Local, CqeRec>,
    zero_cqe: Zero<CqeRec>,
    cqn: Signal<Local, Bits<8>>,
    cqe_cq: Signal<Local, Bits<64>>,
    mr_access: Signal<Local, Bits<4>>,
    qp_access: Signal<Local, Bits<4>>,
    aeth_syn: Signal<Local, AethSynRec>,
    lc_qpn: Signal<Local, Bits<8>>,
    desc_qpn: Signal<Local, Bits<24>>,
    w_addr: Signal<Local, Bits<64>>,
    psn_delta: Signal<Local, Bits<24>>,
    reply: Signal<Local, AckJob>,
    restart_psn: Signal<Local, Bits<24>>,
    /// The go-back-N request that flushes the QP's send queue instead (it entered ERR).
    rw_flush: Signal<Local, RewindRec>,
    /// The RQ doorbell word (`rq_db_data`), by field.
    rq_db: Signal<Local, DoorbellRec>,
    /// `sent` − `acked` as the QP's tables give them (`LoadQpState`), and `sent` − `acked` − 1
    /// (what is outstanding once `acked` advances).
    out_load: Signal<Local, Bits<16>>,
    out_m1: Signal<Local, Bits<16>>,
    seq_progress: Signal<Local, Bit>,
    nak_stale: Signal<Local, Bit>,
    nak_repeat: Signal<Local, Bit>,
    nak_age: Signal<Local, Bits<24>>,
    fatal: Signal<Local, Bit>,
    is_reth: Signal<Local, Bit>,
    is_write_imm: Signal<Local, Bit>,
    has_imm: Signal<Local, Bit>,
    is_read_req: Signal<Local, Bit>,
    is_read_resp: Signal<Local, Bit>,
    is_rsp_last: Signal<Local, Bit>,
    needs_rwqe: Signal<Local, Bit>,
    entry_is_read: Signal<Local, Bit>,
    rd_restart: Signal<Local, Bits<24>>,
    mtu_mask: Signal<Local, Bits<32>>,
    /// A READ's length is not a whole number of MTUs (`LoadQpState`, from the table's context).
    part_now: Signal<Local, Bit>,
    rlen: Signal<Local, Bits<32>>,
    last_plus1: Signal<Local, Bits<24>>,
    /// The access right the request needs (REMOTE_WRITE, REMOTE_READ or REMOTE_ATOMIC).
    access_need: Signal<Local, Bits<4>>,
    access_ok: Signal<Local, Bit>,
    is_atomic_req: Signal<Local, Bit>,
    is_fadd: Signal<Local, Bit>,
    is_atomic_ack: Signal<Local, Bit>,
    entry_is_atomic: Signal<Local, Bit>,
    /// Bytes a request's RETH or AtomicETH covers at the responder (8 for an atomic).
    req_len: Signal<Local, Bits<32>>,
    /// This engine asks for another visit of the current QP ([`QpCheckSet::again`]).
    fl_eng: Signal<Local, Bit>,
    /// `Decide` answers a responder class C error (see there); `cls_c`: `WriteBack` still has
    /// to ask for the flushes.
    class_c: Signal<Local, Bit>,
    cls_c: DFF<Bit>,
    va_low: Signal<Local, Bits<3>>,
    va_req: Signal<Local, Bits<64>>,
    /// `WriteBack` takes the next received packet itself, as `Idle` would in the next cycle:
    /// the visit ends plainly (no diverted ACK, response recheck, flush request, SRQ count,
    /// event or error of its own), nothing `Idle` serves before packets waits, and no context
    /// command waits (a RESET of the QP being served is taken only once the engine passes
    /// through `Idle`: a stream of back-to-back packets would hold it off for as long as it
    /// lasts).
    wb_pkt: Signal<Local, Bit>,
    /// A visit starts this cycle (`Idle`, or `WriteBack` with `wb_pkt`): its flags are cleared.
    visit_start: Signal<Local, Bit>,
    /// As of the last cycle: nothing `Idle` serves before packets waited (no local
    /// completion, flush or check, timeout, event or context command), and a descriptor was
    /// there and not read (so one is there now: only this engine reads them). Registered so
    /// that the descriptor FIFO's read in `WriteBack` starts at flops (with the FIFO's `empty`
    /// and the queues' flags in the same cycle, its read pointer was 7 LUT levels deep). Seen
    /// a cycle late, an item that just arrived waits one more visit; a waiting one sends the
    /// next `WriteBack` through `Idle`.
    idle_clear_r: DFF<Bit>,
    desc_avail_r: DFF<Bit>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

// The in-flight table holds 2^LOG_MAX_INFLIGHT_WQES entries per QP (12 address bits:
// `qpn << 6 | retired index mod 64`).
const _: () = assert!(rnic_contract::LOG_MAX_INFLIGHT_WQES + rnic_contract::LOG_NUM_QPS == 12);

// The opcode-class table in `update` matches BTH opcodes by literal (a `match` arm must be
// one): they are the contract's.
const _: () = assert!(crate::numbers::BTH_OPCODE_LITERALS);

impl Logic for RxEngine {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            src_lc,
            src_to,
            retries,
            qp_err,
            pkt,
            lcr,
            qpn,
            qpn_ok,
            ctx,
            epsn,
            msn,
            wr_addr,
            wr_rem,
            wrem_wr_r,
            wrem_send_r,
            in_write,
            nak_sent,
            acked,
            sent,
            status,
            cqe_wr_id,
            cqe_len,
            off_r,
            va_ok,
            key_ok_r,
            seq_ok_r,
            len_eq_mtu_r,
            len_le_mtu_r,
            len_nz_r,
            reth_gt_mtu_r,
            len_eq_reth_r,
            psn_delta_r,
            off_ok,
            room,
            w_addr_r,
            cover_r,
            last_nak,
            nak_moved,
            last_nak_ok,
            in_send,
            rq_ci,
            rq_pi,
            recv_len,
            recv_wr_id,
            rwqe,
            rwqe_ready,
            sge_len,
            rq_addr_r,
            src_recv,
            cqe_opcode,
            recv_need_ack,
            recv_syn,
            bounds_ok_r,
            sge_ok_r,
            send_fits_r,
            rq_empty_r,
            c_unknown,
            c_dup,
            c_gap,
            mtu_r,
            opc,
            cqe_imm,
            cqe_flags,
            cqe_srcqp,
            grh_done,
            grh_short,
            grh_bad,
            grh_addr,
            grh_msg,
            grh_len,
            grh_tot,
            grh_fits,
            qkey_bad,
            rd_next,
            rd_valid,
            rsp_pending,
            rsp_retired,
            rsp_final,
            r_head_read,
            r_a,
            r_b,
            r_exp,
            r_in,
            r_eq,
            r_d,
            r_off,
            r_boff,
            r_len_ok,
            r_ahead,
            r_past,
            r_addr,
            rd_npkts,
            reads_done,
            rr_full_r,
            rd_q,
            rd_part,
            rd_zero,
            rd_rw_psn,
            rd_rw_dup,
            r_exp_dup,
            acked_psn,
            all_acked_r,
            src_rnr,
            rnr_cnt,
            rnr_wait,
            arm_r,
            arm_code_r,
            seq_nak_r,
            retry_ok_r,
            nak_drop_r,
            none_out,
            stop_r,
            at_mode,
            at_slot,
            at_exec,
            cls_c,
            job_room,
            psn_before_r,
            src_fl,
            srq_took,
            srq_lim,
            ev_chk,
            srq_inc,
            rd_acc,
            rr_fresh,
            rr_nak,
            rr_syn_r,
            rst_here_r,
            cmd_seen_r,
            ack_div,
            ack_psn_r,
            ack_msn_r,
            pend_rd_r,
            rd_over_r,
            ev_fire_r,
            src_ev,
            ev_cq,
            sqd_here,
            sd_req,
            acc_r,
            err_was,
            ce_done,
            ce_fire,
            at_form_r,
            pz_r,
            cmd_ok_r,
            sgb0,
            sgb1,
            sgb2,
            sgb3,
            rq_beat,
            rq_nb,
            sg_cap,
            sg_i,
            sg_cnt,
            sg_over,
            sg_more,
            sg_n,
            cur_sge,
            sg_tot,
            first_addr,
            first_len,
            sg_cur,
            tot_rem,
            tot_fits_r,
            sc_go,
            sc_list,
            sc_addr,
            sc_room,
            sc_ack,
            sc_next,
            wr_lt_r,
            wr_eq_r,
            rq_mask_r,
            rq_sh_r,
            rl_k,
            rl_used,
            rl_pre,
            r_list,
            emit_now_r,
            ghost_r,
            rd_rs,
            rd_rs_ok,
            r_opc_ok,
            rsp_bad,
            ack_hi,
            ack_fwd_r,
            idle_clear_r,
            desc_avail_r
        );
        // The QPs to visit for a flush or a drain check: RQ doorbells, context commands (ERR
        // sets, RESET clears, any clears a drain's arming), the scheduler's drain reports.
        self.chk.reset.next = self.reset.val();
        self.chk.cmd_fire.next = self.cmd_fire.val();
        self.chk.cmd_op.next = self.cmd_op.val();
        self.chk.cmd_index.next = self.cmd_index.val();
        self.chk.cmd_state.next = self.cmd_record.val().get_bits::<3>(0);
        self.chk.rq_db.next = self.rq_db_write.val();
        self.rq_db.next = self.rq_db_data.val().into();
        self.chk.rq_db_qpn.next = self.rq_db.val().qpn;
        self.chk.visit_qpn.next = self.qpn.q.val();
        self.chk.stop.next = self.sq_stop.val();
        self.chk.stop_qpn.next = self.sq_stop_qpn.val();
        self.chk.take.next = false;
        self.chk.drained.next = false;
        self.fl_eng.next = false;
        self.job_room.d.next = !self.job_afull.val();
        self.job_free.next = self.state.q.val() == RxState::Idle;
        self.arm_r.d.next = false;
        self.rnr_arm.next = self.arm_r.q.val();
        self.rnr_qpn.next = self.qpn.q.val();
        self.rr_full_r.d.next = self.rr_full.val();
        self.rqpi_ram.read_clock.next = self.clock.val();
        self.rqpi_ram.write_clock.next = self.clock.val();
        // RQ producer index: from the RQ doorbell, or 0 when a context command puts the QP in
        // RESET (created, reset or destroyed): its ring starts empty, and INIT -> RTR
        // (INIT_RQ_PSN) starts the consumer index at 0 too. (BAR0 takes one MMIO write per
        // cycle, so the two writes never coincide.)
        self.rqpi_ram.write_enable.next = self.rq_db_write.val();
        self.rqpi_ram.write_address.next = self.rq_db.val().qpn;
        self.rqpi_ram.write_data.next = self.rq_db.val().pi;
        if self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_qp.val().state == self.nums.val().qps_reset)
        {
            self.rqpi_ram.write_enable.next = true;
            self.rqpi_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
            self.rqpi_ram.write_data.next = 0.into();
        }
        self.rqpi_ram.read_address.next = self.qpn.q.val();
        self.rdyn_ram.read_clock.next = self.clock.val();
        self.rdyn_ram.write_clock.next = self.clock.val();
        self.acked_ram.read_clock.next = self.clock.val();
        self.acked_ram.write_clock.next = self.clock.val();
        self.acked_tx_ram.read_clock.next = self.clock.val();
        self.acked_tx_ram.write_clock.next = self.clock.val();
        self.inflight_ram.read_clock.next = self.clock.val();
        self.inflight_ram.write_clock.next = self.clock.val();

        // ---- Table reads follow the registers ----
        self.rkey.next = self.pkt.q.val().reth_rkey.into();
        clock!(self, clock, tables);
        self.tables.qp_addr.next = self.qpn.q.val();
        self.rdyn_ram.read_address.next = self.qpn.q.val();
        self.acked_ram.read_address.next = self.qpn.q.val();
        // The scatter entry being checked (`cur_sge`): its address and lkey.
        self.lkey.next = self.cur_sge.q.val().lkey.into();
        self.cur_addr.next = self.cur_sge.q.val().addr;
        self.sg_inext.next = self.sg_i.q.val() + 1;
        self.sg_first.next = self.sg_i.q.val() == 0;
        self.plen36.next = bit_cast::<36, 13>(self.pkt.q.val().plen);
        self.rq_lanes.next = self.rq_r_data.val().into();
        self.sge_len36.next = bit_cast::<36, 32>(self.sge_len.q.val());
        // Scatter-entry table: written in `SgeVerdict`, read at the QP's current entry.
        self.sg_ram.read_clock.next = self.clock.val();
        self.sg_ram.write_clock.next = self.clock.val();
        self.sg_ram.read_address.next =
            bit_cast::<10, 6>(self.qpn.q.val()) << 4 | bit_cast::<10, 4>(self.sg_cur.q.val());
        self.sg_ram.write_enable.next = false;
        self.sg_ram.write_address.next =
            bit_cast::<10, 6>(self.qpn.q.val()) << 4 | bit_cast::<10, 4>(self.sg_n.q.val().get_bits::<4>(0));
        self.sg_ram.write_data.next.iova = self.w_addr_r.q.val();
        self.sg_ram.write_data.next.length = self.sge_len.q.val();
        self.sg_rd.next = self.sg_ram.read_data.val();
        // READ list table: written by the scheduler, read at the QP's current entry.
        self.rdl_ram.read_clock.next = self.clock.val();
        self.rdl_ram.write_clock.next = self.clock.val();
        self.rdl_ram.write_enable.next = self.rl_we.val();
        self.rdl_ram.write_address.next = self.rl_waddr.val();
        self.rdl_ram.write_data.next = self.rl_wdata.val();
        self.rdl_ram.read_address.next = bit_cast::<12, 6>(self.qpn.q.val()) << 6
            | bit_cast::<12, 2>(self.reads_done.q.val().get_bits::<2>(0)) << 4
            | bit_cast::<12, 4>(self.rl_k.q.val());
        self.rl_rd.next = self.rdl_ram.read_data.val();
        // The scatter entry checked in `SgeReadKey` .. `SgeVerdict` lies inside its region, or is
        // empty.
        self.entry_ok.next = (self.sge_len.q.val() == 0)
            | (self.key_ok_r.q.val()
                & self.va_ok.q.val()
                & self.off_ok.q.val()
                & (bit_cast::<64, 32>(self.sge_len.q.val()) <= self.room.q.val()));
        // The scatter walk: started a cycle after `Decide` / `RspAct` chose it, from the cursor
        // they registered, over the list `sc_list` names.
        clock!(self, clock, scat);
        self.scat.reset.next = self.reset.val();
        self.scat.start.next = self.sc_go.q.val();
        self.scat.load_entry.next = self.sc_list.q.val() & !self.rl_pre.q.val();
        self.scat.addr_in.next = self.sc_addr.q.val();
        self.scat.rem_in.next = self.sc_room.q.val();
        self.scat.used_in.next = self.rl_used.q.val();
        self.scat.plen.next = self.pkt.q.val().plen;
        self.scat.hlen.next = self.pkt.q.val().hlen;
        self.scat.nbeats.next = self.pkt.q.val().nbeats;
        self.scat.ack.next = self.sc_ack.q.val();
        self.scat.entry.next = self.sg_rd.val();
        if self.sc_list.q.val() {
            self.scat.entry.next = self.rl_rd.val();
        }
        self.scat.job_room.next = self.job_room.q.val();
        self.sc_go.d.next = false;
        // The QP's RQ stride: beats of a receive-WQE fetch (minus one) and entries it holds.
        match self.ctx.q.val().rq_log_stride.index() {
            0 => {
                self.rq_nb.d.next = 0.into();
                self.sg_cap.d.next = 3.into();
            }
            1 => {
                self.rq_nb.d.next = 1.into();
                self.sg_cap.d.next = 7.into();
            }
            _ => {
                self.rq_nb.d.next = 3.into();
                self.sg_cap.d.next = 15.into();
            }
        }
        self.tables.mr_addr.next = self.rkey.val().index;
        if (self.state.q.val() == RxState::SgeReadKey)
            | (self.state.q.val() == RxState::SgeCheckKey)
            | (self.state.q.val() == RxState::SgeRoom)
        {
            self.tables.mr_addr.next = self.lkey.val().index;
        }
        self.sent_addr.next = self.qpn.q.val();
        self.cqn.next = self.ctx.q.val().send_cq;
        if self.src_recv.q.val() {
            self.cqn.next = self.ctx.q.val().recv_cq;
        }
        if self.src_ev.q.val() {
            self.cqn.next = self.ev_cq.q.val();
        }
        // The in-flight table at the head WQE: in `LoadQpState` at the `acked` the tables
        // answer, so the head WQE is there from `CheckRegion` on.
        self.acked_ld.next = self.acked_ram.read_data.val().acked;
        self.inflight_ram.read_address.next =
            bit_cast::<12, 6>(self.qpn.q.val()) << 6 | bit_cast::<12, 6>(self.acked.q.val().get_bits::<6>(0));
        if self.state.q.val() == RxState::LoadQpState {
            self.inflight_ram.read_address.next =
                bit_cast::<12, 6>(self.qpn.q.val()) << 6 | bit_cast::<12, 6>(self.acked_ld.val().get_bits::<6>(0));
        }
        self.acked_tx_ram.read_address.next = self.acked_raddr.val();
        self.acked_rdata.next = self.acked_tx_ram.read_data.val().acked;
        self.acked_rreads.next = self.acked_tx_ram.read_data.val().reads_done;
        self.acked_rpsn.next = self.acked_tx_ram.read_data.val().acked_psn;
        self.qp_now.next = self.tables.qp.val();
        self.mr_now.next = self.tables.mr.val();
        self.rdyn_now.next = self.rdyn_ram.read_data.val();
        self.rd_wr_rem.next = self.rdyn_now.val().wr_rem;
        self.entry.next = self.inflight_ram.read_data.val().into();
        // An SRQ's index comes from the QP's context: read at the SRQ number in `LoadQpState`
        // (when the context is the table's output), for `CheckRegion`.
        self.srq_addr.next = self.ctx.q.val().srqn;
        if self.state.q.val() == RxState::LoadQpState {
            self.srq_addr.next = self.qp_now.val().srqn;
        }
        if (self.state.q.val() == RxState::LoadQpState) & self.qp_now.val().use_srq.any() {
            self.rqpi_ram.read_address.next = self.srq_addr.val().get_bits::<6>(0);
        }
        if self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_srq)
            & self.cmd_record.val().get_bit(24)
        {
            // A new SRQ: its ring starts empty.
            self.rqpi_ram.write_enable.next = true;
            self.rqpi_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
            self.rqpi_ram.write_data.next = 0.into();
        }
        clock!(self, clock, evq, chk, sent_psns);
        self.evq.reset.next = self.reset.val();
        self.srqci_ram.read_clock.next = self.clock.val();
        self.srqci_ram.write_clock.next = self.clock.val();
        self.srq_ram.read_clock.next = self.clock.val();
        self.srq_ram.write_clock.next = self.clock.val();
        self.srqci_ram.read_address.next = self.srq_addr.val().get_bits::<6>(0);
        self.srq_ram.read_address.next = self.srq_addr.val().get_bits::<6>(0);
        // Written by a command (a new SRQ's consumer index, its limit and event CQ) or by this
        // engine (`WriteBack`: the consumer index; `Idle`: disarm), never in the same cycle (no
        // command is taken in `WriteBack` or the cycle after it).
        self.srqci_ram.write_enable.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_srq)
            & self.cmd_record.val().get_bit(24);
        self.srqci_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.srqci_ram.write_data.next = 0.into();
        self.srq_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == self.nums.val().cmd_write_srq);
        self.srq_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.srq_ram.write_data.next = self.cmd_record.val().get_bits::<24>(0);
        // The limit check, from registers: fewer than `limit` WQEs left after this packet.
        self.srq_left.next = self.rq_pi.q.val() - self.rq_ci.q.val();
        self.ev_fire_r.d.next = self.srq_took.q.val()
            & (self.srq_lim.q.val().limit != 0)
            & (self.srq_left.val() < self.srq_lim.q.val().limit);
        // The event queue: the SRQ limit event of the last packet's SRQ (pushed from `Idle`),
        // the QP events of a visit (`WriteBack`, `FlushStep`), held back in the cycle after
        // `WriteBack`, when the SRQ event may come (`ev_chk`).
        self.evq.srq_push.next = false;
        self.evq.srq_data.next.qpn = self.srq_addr.val().get_bits::<6>(0);
        self.evq.srq_data.next.rsvd0 = 0.into();
        self.evq.srq_data.next.rsvd1 = 0.into();
        self.evq.srq_data.next.cq = self.srq_lim.q.val().event_cq;
        self.evq.srq_data.next.left = self.srq_left.val();
        self.evq.srq_data.next.event_type = self.nums.val().ev_srq_limit_reached;
        self.evq.hold.next = self.ev_chk.q.val();
        self.evq.pop.next = false;
        self.evq.set_ce.next = false;
        self.evq.set_err.next = false;
        self.evq.set_lw.next = false;
        self.evq.set_sd.next = self.sd_req.q.val();
        self.sd_req.d.next = false;
        self.evq.qpn.next = self.qpn.q.val();
        self.evq.cq.next = self.async_cq.val().get_bits::<8>(0);
        self.ce_bit.next = self.ce_done.q.val() | self.ce_fire.q.val();
        // Which error event the QP's error flag rising raises (regs::ASYNC_EVENT_CQ): none for
        // the driver's own move to ERR (a flush visit); a responder class C error of `Decide`
        // (`cls_c`) QP_ACCESS_ERR after a refused RETH / AtomicETH (NAK remote access error),
        // else QP_REQ_ERR (NAK invalid request); a receive error IBV_WC_LOC_PROT_ERR (4)
        // QP_ACCESS_ERR, IBV_WC_LOC_LEN_ERR QP_REQ_ERR; QP_FATAL for a send WQE the scheduler
        // could not read (a local work queue catastrophic error, IBTA Vol 1 11.6.3: the DMA read
        // was answered with an error); none for any other requester error: its error
        // completion reports it (rxe and mlx5 raise no event for retries exhausted or a remote
        // NAK).
        self.ev_type.next = 0.into();
        if self.src_fl.q.val() {
            self.ev_type.next = 0.into();
        } else if self.cls_c.q.val() {
            self.ev_type.next = self.nums.val().ev_qp_req_err;
            if self.acc_r.q.val() {
                self.ev_type.next = self.nums.val().ev_qp_access_err;
            }
        } else if self.src_recv.q.val() {
            self.ev_type.next = self.nums.val().ev_qp_req_err;
            if self.status.q.val() == self.nums.val().wc_loc_prot_err {
                self.ev_type.next = self.nums.val().ev_qp_access_err;
            }
        } else if self.src_lc.q.val() & self.lcr.q.val().fatal.any() {
            // A send WQE the scheduler could not read: QP_FATAL.
            self.ev_type.next = self.nums.val().ev_qp_fatal;
        }
        self.evq.err_type.next = self.ev_type.val();
        // Responder READ/atomic slots: accepted (here) minus fully answered (the scheduler).
        self.racc_ram.read_clock.next = self.clock.val();
        self.racc_ram.write_clock.next = self.clock.val();
        self.racc_ram.read_address.next = self.qpn.q.val();
        self.racc_ram.write_enable.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_record.val().get_bit(4); // INIT_RQ_PSN
        self.racc_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.racc_ram.write_data.next = 0.into();
        // Responses sent (`RespDoneTable`): zeroed by INIT_RQ_PSN, one more per `rsp_done`.
        clock!(self, clock, rdone);
        self.rdone.reset.next = self.reset.val();
        self.rdone.done.next = self.rsp_done.val();
        self.rdone.done_qpn.next = self.rsp_done_qpn.val();
        self.rdone.init.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_record.val().get_bit(4);
        self.rdone.init_qpn.next = self.cmd_index.val().get_bits::<6>(0);
        self.rdone.qpn.next = self.qpn.q.val();
        self.rd_done_data.next = self.rdone.count.val();
        self.mdra.next = self.ctx.q.val().max_dest_rd_atomic;
        self.rd_lim.next = self.mdra.val();
        if self.mdra.val() > 16 {
            self.rd_lim.next = 16.into();
        }
        if self.mdra.val() == 0 {
            self.rd_lim.next = 1.into();
        }

        // In-flight table: written by the scheduler.
        self.inflight_ram.write_enable.next = self.if_we.val();
        self.inflight_ram.write_address.next = self.if_waddr.val();
        self.inflight_ram.write_data.next = self.if_wdata.val().into();

        // ---- Context commands (tables written in any cycle but write-back) ----
        // Commands in any cycle but the write-back (`WriteBack`). A command that lands between a
        // QP's load and its write-back is overwritten by it: commands that write the transport
        // state (INIT_SQ_PSN, INIT_RQ_PSN) come while a QP is being set up and takes no
        // traffic, and the flush handler writes back only a QP it changed (one in ERR).
        // (A flop: set in the states that cannot reach `WriteBack` next cycle, so the command
        // handshake, and every table write enable behind it, starts at a register.)
        self.cmd_ok_r.d.next = !((self.state.q.val() == RxState::LoadQpState)
            | (self.state.q.val() == RxState::Decide)
            | (self.state.q.val() == RxState::WriteBack)
            | (self.state.q.val() == RxState::RetireLoad)
            | (self.state.q.val() == RxState::Retire)
            | (self.state.q.val() == RxState::WriteCqe)
            | (self.state.q.val() == RxState::RspAct)
            | (self.state.q.val() == RxState::ResumeRead)
            | (self.state.q.val() == RxState::QueueResponse)
            | (self.state.q.val() == RxState::Scatter));
        self.cmd_qp.next = bit_cast::<448, 512>(self.cmd_record.val()).into();
        // A command that puts the QP this engine is working on in RESET waits until the engine
        // is back in `Idle` (nothing more is fetched from the QP's rings, which the driver
        // frees once the command is taken); registered, taken from its second cycle.
        self.cmd_seen_r.d.next = self.cmd_valid.val() & !self.cmd_fire.val();
        self.rst_here_r.d.next = self.cmd_valid.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_qp.val().state == self.nums.val().qps_reset)
            & (self.cmd_index.val().get_bits::<6>(0) == self.qpn.q.val())
            & (self.state.q.val() != RxState::Idle);
        self.cmd_ready.next = self.cmd_ok_r.q.val() & self.cmd_seen_r.q.val() & !self.rst_here_r.q.val();
        self.tables.cmd_fire.next = self.cmd_fire.val();
        self.tables.cmd_op.next = self.cmd_op.val();
        self.tables.cmd_index.next = self.cmd_index.val();
        self.tables.cmd_record.next = self.cmd_record.val();
        // A context written in RESET (created, reset, destroyed) starts the QP's responder and
        // completer state afresh, as INIT_RQ_PSN / INIT_SQ_PSN do: no error flag, no open
        // message, nothing to flush survives into the next connection on this number.
        self.rst_cmd.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_qp.val().state == self.nums.val().qps_reset);
        self.rdyn_ram.write_enable.next = (self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_qp.val().init_rq_psn.any())
            | self.rst_cmd.val();
        self.rdyn_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.rdyn_init.next = self.rdyn_zero.val();
        self.rdyn_init.next.epsn = self.cmd_qp.val().rq_psn;
        self.rdyn_ram.write_data.next = self.rdyn_init.val();
        // The state `WriteBack` saves: this visit's registers.
        self.rdyn_wb.next = self.rdyn_zero.val();
        self.rdyn_wb.next.epsn = self.epsn.q.val();
        self.rdyn_wb.next.msn = self.msn.q.val();
        self.rdyn_wb.next.wr_addr = self.wr_addr.q.val();
        self.rdyn_wb.next.wr_rem = self.wr_rem.q.val();
        self.rdyn_wb.next.in_write = bit_cast::<1, 1>(self.in_write.q.val().into());
        self.rdyn_wb.next.nak_sent = bit_cast::<1, 1>(self.nak_sent.q.val().into());
        self.rdyn_wb.next.in_send = bit_cast::<1, 1>(self.in_send.q.val().into());
        self.rdyn_wb.next.last_nak_ok = bit_cast::<1, 1>(self.last_nak_ok.q.val().into());
        self.rdyn_wb.next.last_nak = self.last_nak.q.val();
        self.rdyn_wb.next.rq_ci = self.rq_ci.q.val();
        self.rdyn_wb.next.sg_cur = self.sg_cur.q.val();
        self.rdyn_wb.next.recv_len = self.recv_len.q.val();
        self.rdyn_wb.next.recv_wr_id = self.recv_wr_id.q.val();
        self.rdyn_wb.next.at_slot = self.at_slot.q.val();
        self.rdyn_wb.next.tot_rem = self.tot_rem.q.val();
        self.rdyn_wb.next.ce_done = bit_cast::<1, 1>(self.ce_bit.val().into());
        self.acked_ram.write_enable.next = (self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_qp.val().init_sq_psn.any())
            | self.rst_cmd.val();
        self.acked_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        // (The PSN after the last WQE retired starts at the first PSN: nothing sent, all acked.)
        self.acked_ram.write_data.next = self.acked_zero.val();
        self.acked_ram.write_data.next.ack_hi = self.cmd_qp.val().sq_psn - 1;
        self.acked_ram.write_data.next.acked_psn = self.cmd_qp.val().sq_psn;
        // What the requester has sent, per QP (the scheduler's reports; INIT_SQ_PSN).
        self.sent_psns.emit.next = self.emit_we.val();
        self.sent_psns.emit_qpn.next = self.emit_qpn.val();
        self.sent_psns.emit_psn.next = self.emit_psn.val();
        self.sent_psns.init.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_qp.val().init_sq_psn.any();
        self.sent_psns.init_qpn.next = self.cmd_index.val().get_bits::<6>(0);
        self.sent_psns.init_psn.next = self.cmd_qp.val().sq_psn;
        self.sent_psns.read_qpn.next = self.qpn.q.val();

        // ---- Request checks (valid in `LoadQpState`, when the tables answer) ----
        self.op.next = self.pkt.q.val().opcode;
        // Opcode classes ([`OpClass`]), registered: `pkt` is loaded in `Idle`, so they hold
        // from `LoadQpState` on (IBTA Vol 1 Table 38).
        self.opc.d.next = self.opc_none.val();
        match self.op.val().index() {
            0 => {
                // 0x00 SEND FIRST
                self.opc.d.next.send_first = true;
            }
            1 => {
                // 0x01 SEND MIDDLE
                self.opc.d.next.send_cont = true;
            }
            2 => {
                // 0x02 SEND LAST
                self.opc.d.next.send_cont = true;
                self.opc.d.next.send_last = true;
            }
            3 => {
                // 0x03 SEND LAST with Immediate
                self.opc.d.next.send_cont = true;
                self.opc.d.next.send_last = true;
                self.opc.d.next.imm = true;
            }
            4 => {
                // 0x04 SEND ONLY
                self.opc.d.next.send_first = true;
                self.opc.d.next.send_last = true;
            }
            5 => {
                // 0x05 SEND ONLY with Immediate
                self.opc.d.next.send_first = true;
                self.opc.d.next.send_last = true;
                self.opc.d.next.imm = true;
            }
            6 => {
                // 0x06 RDMA WRITE FIRST
                self.opc.d.next.write_first = true;
                self.opc.d.next.write = true;
                self.opc.d.next.reth = true;
            }
            7 => {
                // 0x07 RDMA WRITE MIDDLE
                self.opc.d.next.write = true;
            }
            8 => {
                // 0x08 RDMA WRITE LAST
                self.opc.d.next.write_last = true;
                self.opc.d.next.write = true;
            }
            9 => {
                // 0x09 RDMA WRITE LAST with Immediate
                self.opc.d.next.write_last = true;
                self.opc.d.next.write = true;
                self.opc.d.next.write_imm = true;
                self.opc.d.next.imm = true;
            }
            10 => {
                // 0x0A RDMA WRITE ONLY
                self.opc.d.next.write_first = true;
                self.opc.d.next.write_last = true;
                self.opc.d.next.write = true;
                self.opc.d.next.reth = true;
            }
            11 => {
                // 0x0B RDMA WRITE ONLY with Immediate
                self.opc.d.next.write_first = true;
                self.opc.d.next.write_last = true;
                self.opc.d.next.write = true;
                self.opc.d.next.write_imm = true;
                self.opc.d.next.imm = true;
                self.opc.d.next.reth = true;
            }
            12 => {
                // 0x0C RDMA READ REQUEST
                self.opc.d.next.read_req = true;
                self.opc.d.next.reth = true;
            }
            13 => {
                // 0x0D RDMA READ RESPONSE FIRST
                self.opc.d.next.read_resp = true;
            }
            14 => {
                // 0x0E RDMA READ RESPONSE MIDDLE
                self.opc.d.next.read_resp = true;
            }
            15 => {
                // 0x0F RDMA READ RESPONSE LAST
                self.opc.d.next.read_resp = true;
                self.opc.d.next.resp_last = true;
            }
            16 => {
                // 0x10 RDMA READ RESPONSE ONLY
                self.opc.d.next.read_resp = true;
                self.opc.d.next.resp_last = true;
            }
            18 => {
                // 0x12 ATOMIC ACKNOWLEDGE: a response (like READ RESPONSE ONLY)
                self.opc.d.next.read_resp = true;
                self.opc.d.next.resp_last = true;
                self.opc.d.next.atomic_ack = true;
            }
            19 => {
                // 0x13 COMPARE SWAP
                self.opc.d.next.reth = true;
                self.opc.d.next.atomic = true;
            }
            20 => {
                // 0x14 FETCH ADD
                self.opc.d.next.reth = true;
                self.opc.d.next.atomic = true;
                self.opc.d.next.fetch_add = true;
            }
            _ => {}
        }
        self.is_first_or_only.next = self.opc.q.val().write_first;
        self.is_last_or_only.next = self.opc.q.val().write_last;
        self.is_write_op.next = self.opc.q.val().write;
        self.is_send_start.next = self.opc.q.val().send_first;
        self.is_send_cont.next = self.opc.q.val().send_cont;
        self.is_send_end.next = self.opc.q.val().send_last;
        self.is_write_imm.next = self.opc.q.val().write_imm;
        self.has_imm.next = self.opc.q.val().imm;
        self.is_read_req.next = self.opc.q.val().read_req;
        self.is_read_resp.next = self.opc.q.val().read_resp;
        self.is_rsp_last.next = self.opc.q.val().resp_last;
        self.is_reth.next = self.opc.q.val().reth;
        self.is_atomic_req.next = self.opc.q.val().atomic;
        self.is_fadd.next = self.opc.q.val().fetch_add;
        self.is_atomic_ack.next = self.opc.q.val().atomic_ack;
        self.req_len.next = self.pkt.q.val().reth_len;
        if self.is_atomic_req.val() {
            self.req_len.next = 8.into();
        }
        // A SEND's first packet and a WRITE with immediate's last consume a receive WQE.
        self.needs_rwqe.next = self.is_send_start.val() | self.is_write_imm.val();
        // Receive WQE `ci` at rq_base + (ci mod size) * (64 << RQ_LOG_STRIDE): the ring mask
        // and the stride are registered with the context (`LoadQpState`), the shift is a 3-way
        // choice of constants, so the address is one AND-mux and an adder from registers.
        self.rq_mask.next = self.rq_mask_r.q.val();
        self.rq_idx.next = bit_cast::<64, 16>(self.rq_ci.q.val() & self.rq_mask.val());
        match self.rq_sh_r.q.val().index() {
            0 => {
                self.rq_off.next = self.rq_idx.val() << 6;
            }
            1 => {
                self.rq_off.next = self.rq_idx.val() << 7;
            }
            _ => {
                self.rq_off.next = self.rq_idx.val() << 8;
            }
        }
        self.rq_addr_r.d.next = self.ctx.q.val().rq_base + self.rq_off.val();
        self.rq_ar_valid.next = self.state.q.val() == RxState::FetchRecvWqe;
        // The whole receive WQE (64 << RQ_LOG_STRIDE bytes: 1, 2 or 4 beats).
        self.rq_ar_len.next = bit_cast::<3, 2>(self.rq_nb.q.val());
        self.rq_ar_addr.next = self.rq_addr_r.q.val();
        self.rq_ar_base.next = self.ctx.q.val().rq_base;
        self.rq_ar_ci.next = self.rq_ci.q.val();
        self.rq_ar_pi.next = self.rq_pi.q.val();
        self.rq_ar_mask.next = self.rq_mask.val();
        // The receive SGE: a valid key of this PD granting LOCAL_WRITE, inside its region.
        self.lkey_ok.next = self.mr_now.val().valid.any()
            & (self.mr_now.val().tag == self.lkey.val().tag)
            & (self.lkey.val().above == 0)
            & (self.mr_now.val().pd == self.ctx.q.val().pd)
            & ((self.mr_now.val().access & self.nums.val().acc_local_write) != 0);
        self.sge_ok.next = self.sge_ok_r.q.val();
        self.mtu.next = self.mtu_r.q.val();
        self.plen32.next = bit_cast::<32, 13>(self.pkt.q.val().plen);
        self.wrem_wr_r.d.next = self.wr_rem.q.val() - self.plen32.val();
        if self.is_first_or_only.val() {
            self.wrem_wr_r.d.next = self.pkt.q.val().reth_len - self.plen32.val();
        }
        self.wrem_send_r.d.next = self.sge_len.q.val() - self.plen32.val();
        self.mtu_now.next = bit_cast::<32, 8>(128.into()) << bit_cast::<32, 3>(self.qp_now.val().path_mtu);
        self.send_fits.next = self.send_fits_r.q.val();
        self.off.next = self.pkt.q.val().reth_va - self.mr_now.val().va;
        self.mr_access.next = self.mr_now.val().access;
        self.qp_access.next = self.qp_now.val().access;
        // REMOTE_WRITE for a WRITE, REMOTE_READ for a READ, granted by the region and the QP.
        self.access_need.next = self.nums.val().acc_remote_write;
        if self.is_read_req.val() {
            self.access_need.next = self.nums.val().acc_remote_read;
        }
        if self.is_atomic_req.val() {
            self.access_need.next = self.nums.val().acc_remote_atomic;
        }
        self.access_ok.next = (self.mr_access.val() & self.qp_access.val() & self.access_need.val()) != 0;
        self.key_ok.next = self.mr_now.val().valid.any()
            & (self.mr_now.val().tag == self.rkey.val().tag)
            & (self.rkey.val().above == 0)
            & (self.mr_now.val().pd == self.qp_now.val().pd)
            & self.access_ok.val();
        self.bounds_ok.next = self.bounds_ok_r.q.val();
        // Per opcode (a parallel case, not a chain of ifs: its depth does not grow with the
        // opcodes): the segment rules of IBTA Vol 1 9.8.3.
        self.seq_ok.next = false;
        match self.op.val().index() {
            0 => {
                // SEND FIRST
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.len_eq_mtu_r.q.val();
            }
            1 => {
                // SEND MIDDLE
                self.seq_ok.next = self.in_send.q.val() & self.len_eq_mtu_r.q.val();
            }
            2 => {
                // SEND LAST
                self.seq_ok.next = self.in_send.q.val() & self.len_nz_r.q.val() & self.len_le_mtu_r.q.val();
            }
            3 => {
                // SEND LAST WITH IMMEDIATE
                self.seq_ok.next = self.in_send.q.val() & self.len_nz_r.q.val() & self.len_le_mtu_r.q.val();
            }
            4 => {
                // SEND ONLY
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.len_le_mtu_r.q.val();
            }
            5 => {
                // SEND ONLY WITH IMMEDIATE
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.len_le_mtu_r.q.val();
            }
            6 => {
                // RDMA WRITE FIRST
                self.seq_ok.next = !self.in_write.q.val()
                    & !self.in_send.q.val()
                    & self.len_eq_mtu_r.q.val()
                    & self.reth_gt_mtu_r.q.val();
            }
            7 => {
                // RDMA WRITE MIDDLE
                self.seq_ok.next = self.in_write.q.val() & self.len_eq_mtu_r.q.val() & self.wr_lt_r.q.val();
            }
            8 => {
                // RDMA WRITE LAST
                self.seq_ok.next = self.in_write.q.val() & self.wr_eq_r.q.val();
            }
            9 => {
                // RDMA WRITE LAST WITH IMMEDIATE
                self.seq_ok.next = self.in_write.q.val() & self.wr_eq_r.q.val();
            }
            10 => {
                // RDMA WRITE ONLY
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.len_eq_reth_r.q.val();
            }
            11 => {
                // RDMA WRITE ONLY WITH IMMEDIATE
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.len_eq_reth_r.q.val();
            }
            12 => {
                // RDMA READ REQUEST: starts no message of its own, no payload
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.pz_r.q.val();
            }
            19 => {
                // COMPARE SWAP
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.at_form_r.q.val();
            }
            20 => {
                // FETCH ADD
                self.seq_ok.next = !self.in_write.q.val() & !self.in_send.q.val() & self.at_form_r.q.val();
            }
            _ => {}
        }
        // An atomic carries no payload and names a naturally aligned 8-byte word (9.4.5; a
        // misaligned one is an invalid request). (A Local: yosys takes no bit select of a
        // struct field's slice.)
        self.va_req.next = self.pkt.q.val().reth_va;
        self.va_low.next = self.va_req.val().get_bits::<3>(0);
        // (No payload, and an aligned VA, registered a state ahead: `pkt` holds from
        // `ReadQpState`.)
        self.pz_r.d.next = self.plen32.val() == 0;
        self.at_form_r.d.next = (self.plen32.val() == 0) & (self.va_low.val() == 0);
        // PSN relative to the expected one: 0 new, 2^23..2^24-1 duplicate, else ahead (a gap).
        self.psn_delta.next = self.pkt.q.val().psn - self.rdyn_now.val().epsn;
        // Where an accepted request's payload goes.
        self.w_addr.next = self.wr_addr.q.val();
        if self.is_reth.val() {
            self.w_addr.next = self.mr_now.val().iova + self.off_r.q.val();
        }

        // ---- Completer ----
        self.aeth_syn.next = self.pkt.q.val().aeth_syndrome.into();
        // Only an ACKNOWLEDGE can be a NAK (a READ response's AETH is always an ACK, and READ
        // RESPONSE MIDDLE has none).
        self.is_nak.next = (self.aeth_syn.val().kind == self.nums.val().syn_type_nak)
            & (self.op.val() == self.nums.val().op_acknowledge);
        self.is_rnr.next = (self.aeth_syn.val().kind == self.nums.val().syn_type_rnr)
            & (self.op.val() == self.nums.val().op_acknowledge);
        self.nak_code.next = self.aeth_syn.val().value;
        self.rnr_code.next = self.arm_code_r.q.val();
        self.cover_psn.next = self.pkt.q.val().psn;
        // A NAK, and a READ response (an implicit ACK of what precedes its READ, 9.7.5.1.3),
        // cover the PSNs before theirs.
        if self.is_nak.val() | self.is_rnr.val() | self.is_read_resp.val() {
            self.cover_psn.next = self.pkt.q.val().psn - 1;
        }
        self.psn_diff.next = self.cover_r.q.val() - self.entry.val().last_psn;
        self.out_load.next = self.sent_data.val() - self.acked_ram.read_data.val().acked;
        self.out_m1.next = self.sent.q.val() + !self.acked.q.val();
        self.seq_progress.next = !self.src_to.q.val() & self.nak_moved.q.val();
        self.seq_nak_r.d.next =
            !self.rnr_wait.q.val() & self.is_nak.val() & (self.nak_code.val() == self.nums.val().nak_psn_seq_err);
        self.retry_ok_r.d.next = (self.retries.q.val() < self.ctx.q.val().retry_cnt)
            | (self.seq_progress.val() & (self.ctx.q.val().retry_cnt != 0))
            | self.src_rnr.q.val();
        self.stop_ok.next = !self.is_nak.val()
            & !self.is_rnr.val()
            & !self.src_to.q.val()
            & !self.src_fl.q.val()
            & !self.qp_err.q.val()
            & !self.rsp_bad.q.val();
        self.nak_age.next = self.pkt.q.val().psn - self.entry.val().first_psn;
        self.nak_stale.next = self.nak_age.val().get_bit(23);
        self.nak_repeat.next = (self.nak_code.val() == self.nums.val().nak_psn_seq_err)
            & self.last_nak_ok.q.val()
            & !self.nak_moved.q.val();
        self.fatal.next = (self.status.q.val() != self.nums.val().wc_success)
            & (self.status.q.val() != self.nums.val().wc_wr_flush_err);
        // A CQE job names its CQ in `addr`; the CQ writer places it and sets its owner bit
        // ([`crate::cq_writer::CqWriter`]).
        self.cqe_cq.next = bit_cast::<64, 8>(self.cqn.val());
        self.cqe.next = self.zero_cqe.val();
        self.cqe.next.wr_id = self.cqe_wr_id.q.val();
        self.cqe.next.byte_len = self.cqe_len.q.val();
        self.cqe.next.qp_num = bit_cast::<24, 6>(self.qpn.q.val());
        self.cqe.next.opcode = self.cqe_opcode.q.val();
        self.cqe.next.status = self.status.q.val();
        self.cqe.next.imm_data = self.cqe_imm.q.val();
        self.cqe.next.wc_flags = self.cqe_flags.q.val();
        self.cqe.next.src_qp = self.cqe_srcqp.q.val();
        self.deth.next = self.pkt.q.val().reth_va.into();
        self.grh_short.d.next = (self.sg_n.q.val() == 0) | (self.first_len.q.val() < 40);
        self.grh_addr.d.next = self.first_addr.q.val() + 20;
        self.grh_msg.d.next = self.first_addr.q.val() + 40;
        self.grh_len.d.next = self.first_len.q.val() - 40;
        self.grh_tot.d.next = self.sg_tot.q.val() - 40;
        self.grh_fits.d.next = (self.plen36.val() + 40) <= self.sg_tot.q.val();

        // ---- The job for the writer (fields per state below) ----
        self.reply.next.dest_mac = self.ctx.q.val().dest_mac;
        self.reply.next.dest_ip = self.ctx.q.val().dest_ip;
        self.reply.next.udp_sport = self.ctx.q.val().udp_sport;
        self.reply.next.pkey = self.ctx.q.val().pkey;
        self.reply.next.dest_qpn = self.ctx.q.val().dest_qpn;
        self.reply.next.psn = self.pkt.q.val().psn;
        self.reply.next.syndrome = self.nums.val().syn_ack;
        self.reply.next.msn = self.msn.q.val();
        // A SEND's ACK leaves at once: the requester's SEND window is short.
        self.reply.next.prompt = (self.is_send_start.val() | self.is_send_cont.val() | self.is_send_end.val()).into();
        self.reply.next.rsvd = 0.into();
        self.job.next.kind = 2.into();
        self.job.next.need_ack = 0.into();
        self.job.next.bar = 0.into();
        self.job.next.res = 0.into();
        self.job.next.se = 0.into();
        self.job.next.ev = 0.into();
        self.job.next.ev_vector = 0.into();
        self.job.next.start = self.pkt.q.val().start;
        self.job.next.release = self.pkt.q.val().nbeats;
        self.job.next.off = bit_cast::<13, 7>(self.pkt.q.val().hlen);
        self.job.next.rsvd1 = 0.into();
        self.job.next.plen = self.pkt.q.val().plen;
        self.job.next.rsvd2 = 0.into();
        self.job.next.addr = self.w_addr_r.q.val();
        self.job.next.cqe = self.cqe.val().into();
        self.job.next.rsvd3 = 0.into();
        self.job_write.next = false;

        self.lc_qpn.next = self.lc.val().qpn;
        self.desc_qpn.next = self.desc.val().dest_qpn;
        self.desc_read.next = false;
        self.lc_read.next = false;
        self.to_read.next = false;
        self.cnt_timeout.next = false;
        self.cnt_roce_ok.next = false;
        self.cnt_unknown_qp.next = false;
        self.cnt_drop_key.next = false;
        self.cnt_drop_psn.next = false;
        self.cnt_drop_inv_req.next = false;
        self.cnt_dup.next = false;
        self.cnt_retransmit.next = false;
        self.cnt_tx_nak_seq.next = false;
        self.cnt_rx_nak_seq.next = false;
        self.cnt_rx_nak_inv_req.next = false;
        self.cnt_rx_nak_rem_access.next = false;
        self.cnt_rx_nak_rem_op.next = false;
        self.rw_write.next = false;
        // A sequence NAK names the first missing PSN; a timeout resends the whole WQE, or a
        // READ from its first missing response.
        // READs and atomics wait for responses.
        self.entry_is_atomic.next = (self.entry.val().wc_opcode == self.nums.val().wco_comp_swap)
            | (self.entry.val().wc_opcode == self.nums.val().wco_fetch_add);
        self.entry_is_read.next =
            (self.entry.val().wc_opcode == self.nums.val().wco_rdma_read) | self.entry_is_atomic.val();
        self.last_plus1.next = self.entry.val().last_psn + 1;
        self.r_start.next =
            (self.r_a.q.val() == 0) | (self.rd_rs_ok.q.val() & (self.rd_rs.q.val() == self.pkt.q.val().psn));
        self.r_end.next = self.r_a.q.val() == self.r_b.q.val();
        self.ghost_d.next = self.pkt.q.val().psn - self.emit_now_r.q.val();
        self.ack_d.next = self.cover_r.q.val() - self.ack_hi.q.val();
        self.rd_restart.next = self.entry.val().first_psn;
        if self.rd_valid.q.val() {
            self.rd_restart.next = self.rd_next.q.val();
        }
        self.restart_psn.next = self.pkt.q.val().psn;
        if self.src_to.q.val() {
            self.restart_psn.next = self.rd_restart.val();
        }
        self.rw_data.next.qpn = self.qpn.q.val();
        self.rw_data.next.rsvd0 = 0.into();
        self.rw_data.next.ci = self.acked.q.val();
        self.rw_data.next.first_psn = self.entry.val().first_psn;
        self.rw_data.next.restart = self.restart_psn.val();
        self.rw_data.next.flush = 0.into();
        // The flush request of a QP that entered the error state.
        self.rw_flush.next.qpn = self.qpn.q.val();
        self.rw_flush.next.rsvd0 = 0.into();
        self.rw_flush.next.ci = 0.into();
        self.rw_flush.next.first_psn = 0.into();
        self.rw_flush.next.restart = 0.into();
        self.rw_flush.next.flush = 1.into();
        self.cnt_rx_ack.next = false;
        self.cnt_cqe.next = false;
        self.cnt_tx_rnr.next = false;
        self.cnt_drop_no_rwqe.next = false;
        self.cnt_rx_rnr.next = false;
        // The READ the responder answers: from the requester's QP context and the RETH.
        self.rr_write.next = false;
        self.rr_data.next.dest_mac = self.ctx.q.val().dest_mac;
        self.rr_data.next.dest_ip = self.ctx.q.val().dest_ip;
        self.rr_data.next.udp_sport = self.ctx.q.val().udp_sport;
        self.rr_data.next.pkey = self.ctx.q.val().pkey;
        self.rr_data.next.dest_qpn = self.ctx.q.val().dest_qpn;
        self.rr_data.next.psn = self.pkt.q.val().psn;
        // (Written in `QueueResponse`, after `Decide` moved the MSN for a new READ; a replay
        // keeps it.)
        self.rr_data.next.msn = self.msn.q.val();
        self.rr_data.next.path_mtu = self.ctx.q.val().path_mtu;
        self.rr_data.next.rsvd0 = 0.into();
        self.rr_data.next.first = 0.into();
        self.rr_data.next.last = 0.into();
        self.rr_data.next.iova = self.w_addr_r.q.val();
        self.rr_data.next.len = self.pkt.q.val().reth_len;
        self.rr_data.next.atomic = bit_cast::<1, 1>(self.at_mode.q.val().into());
        // (An atomic's original value is the atomic unit's: from host memory, or from its
        // replay table for a duplicate.)
        self.rr_data.next.orig = 0.into();
        self.rr_data.next.rsvd1 = 0.into();
        self.rr_data.next.fresh = bit_cast::<1, 1>(self.rr_fresh.q.val().into());
        self.rr_data.next.ack = bit_cast::<1, 1>(self.rr_nak.q.val().into());
        if self.ack_div.q.val() {
            self.rr_data.next.psn = self.ack_psn_r.q.val();
            self.rr_data.next.msn = self.ack_msn_r.q.val();
        }
        if self.rr_nak.q.val() {
            self.rr_data.next.orig = bit_cast::<64, 8>(self.rr_syn_r.q.val());
            self.rr_data.next.len = 0.into();
        }
        self.rr_data.next.qpn = self.qpn.q.val();
        if self.at_mode.q.val() {
            self.rr_data.next.len = 0.into();
        }
        // The job for the atomic unit: the READ responder's job, and an atomic's operands.
        self.rr_item.next.rr = self.rr_data.val().into();
        self.rr_item.next.exec = bit_cast::<1, 1>(self.at_exec.q.val().into());
        self.rr_item.next.fadd = bit_cast::<1, 1>(self.is_fadd.val().into());
        self.rr_item.next.epoch = 0.into();
        self.rr_item.next.slot = self.at_slot.q.val();
        self.rr_item.next.rsvd0 = 0.into();
        self.rr_item.next.cmp = self.pkt.q.val().at_cmp;
        self.rr_item.next.swp = self.pkt.q.val().at_swap;
        self.rr_item.next.rsvd1 = 0.into();
        // PSNs of a READ: ceil(len / MTU), one for a zero-length READ (9.7.4.1.4), from the
        // whole MTUs and the remainder taken in `LoadQpState` (the context is the table's output).
        // The bits below the path MTU (4095 at most): a shifted constant, one LUT level.
        self.mtu_mask.next = !(bit_cast::<32, 12>(0xFFF.into()) << (bit_cast::<32, 3>(self.qp_now.val().path_mtu) + 7));
        self.rlen.next = self.pkt.q.val().reth_len;
        self.part_now.next = (self.rlen.val().get_bits::<12>(0) & self.mtu_mask.val().get_bits::<12>(0)) != 0;

        // A responder class C error in `Decide` (IBTA Vol 1 9.9.3): NAK remote access error (a
        // refused RETH or AtomicETH), NAK invalid request (opcode out of sequence, or a READ or
        // atomic beyond max_dest_rd_atomic), on a request with the expected PSN.
        self.class_c.next = !self.c_unknown.q.val()
            & (self.op.val() != self.nums.val().op_acknowledge)
            & !self.is_read_resp.val()
            & !self.c_dup.q.val()
            & !self.c_gap.q.val()
            & ((self.is_reth.val() & (self.req_len.val() != 0) & !(self.key_ok_r.q.val() & self.bounds_ok.val()))
                | !self.seq_ok_r.q.val()
                | ((self.is_read_req.val() | self.is_atomic_req.val()) & self.rd_over_r.q.val()));
        self.idle_clear_r.d.next = self.lc_empty.val()
            & !self.chk.sel.val()
            & self.to_empty.val()
            & self.evq.empty.val()
            & !self.cmd_valid.val();
        self.wb_pkt.next = !self.ack_div.q.val()
            & !self.rsp_pending.q.val()
            & !self.cls_c.q.val()
            & !self.srq_took.q.val()
            & !self.ev_chk.q.val()
            & !self.ce_fire.q.val()
            & !self.qp_err.q.val()
            & self.idle_clear_r.q.val()
            & self.desc_avail_r.q.val();
        // A visit starts: in `Idle`, or in `WriteBack` taking the next packet itself. The
        // visit's flags start clear (the states below may set them in the same cycle).
        self.visit_start.next =
            (self.state.q.val() == RxState::Idle) | ((self.state.q.val() == RxState::WriteBack) & self.wb_pkt.val());
        if self.visit_start.val() {
            self.src_to.d.next = false;
            self.src_rnr.d.next = false;
            self.src_recv.d.next = false;
            self.rwqe_ready.d.next = false;
            self.cqe_opcode.d.next = self.nums.val().wco_rdma_write;
            self.cqe_flags.d.next = 0.into();
            self.cqe_srcqp.d.next = 0.into();
            self.grh_done.d.next = false;
            self.grh_bad.d.next = false;
            self.cqe_imm.d.next = 0.into();
            self.rsp_pending.d.next = false;
            self.rsp_retired.d.next = false;
            self.rsp_final.d.next = false;
            self.rsp_bad.d.next = false;
            self.at_mode.d.next = false;
            self.at_exec.d.next = false;
            self.src_fl.d.next = false;
            self.src_ev.d.next = false;
            self.srq_took.d.next = false;
            self.srq_inc.d.next = false;
            self.ev_chk.d.next = false;
            self.ce_fire.d.next = false;
            self.rr_fresh.d.next = false;
            self.rr_nak.d.next = false;
        }
        // READ / atomic response checks 1 and 2 (IBTA Vol 1 9.7.5.1.4), registered in
        // `CheckRegion` and `Decide` for every packet (a response takes them on to `RspOrder`;
        // nothing else reads them), and again in `RspHead` and `RspRange` when a response is
        // checked again after the WQEs before its READ retired. The head WQE (`entry`) is read
        // at the `acked` the tables answered in `LoadQpState`, so it is there in `CheckRegion`.
        if (self.state.q.val() == RxState::CheckRegion) | (self.state.q.val() == RxState::RspHead) {
            // 1: the head WQE, the response's place in it, and the PSN expected next. (An
            // ATOMIC ACKNOWLEDGE answers an atomic, a READ RESPONSE a READ.)
            self.r_head_read.d.next = self.entry_is_read.val()
                & (self.entry_is_atomic.val() == self.is_atomic_ack.val())
                & !self.none_out.q.val();
            self.r_a.d.next = self.pkt.q.val().psn - self.entry.val().first_psn;
            self.r_b.d.next = self.entry.val().last_psn - self.entry.val().first_psn;
            self.r_exp.d.next = self.rd_restart.val();
            self.r_past.d.next = !self.psn_diff.val().get_bit(23) & !self.none_out.q.val();
        }
        if (self.state.q.val() == RxState::Decide) | (self.state.q.val() == RxState::RspRange) {
            // 2: inside the READ's PSN range; distance from the expected PSN; byte offsets.
            self.r_in.d.next = self.r_a.q.val() <= self.r_b.q.val();
            self.r_d.d.next = self.pkt.q.val().psn - self.r_exp.q.val();
            self.r_off.d.next =
                bit_cast::<32, 24>(self.r_a.q.val()) << (bit_cast::<32, 3>(self.ctx.q.val().path_mtu) + 7);
            self.r_boff.d.next =
                bit_cast::<32, 24>(self.r_b.q.val()) << (bit_cast::<32, 3>(self.ctx.q.val().path_mtu) + 7);
        }
        match self.state.q.val() {
            RxState::Idle => {
                if self.ev_chk.q.val() & self.ev_fire_r.q.val() & self.evq.room.val() {
                    // The SRQ the last packet took from fell below its limit: disarm it and
                    // queue the event (with no room it stays armed and fires on a later WQE).
                    self.evq.srq_push.next = true;
                    self.srq_ram.write_enable.next = true;
                    self.srq_ram.write_address.next = self.srq_addr.val().get_bits::<6>(0);
                    self.srq_ram.write_data.next = bit_cast::<24, 8>(self.srq_lim.q.val().event_cq) << 16;
                }
                if !self.lc_empty.val() {
                    self.lc_read.next = true;
                    self.src_lc.d.next = true;
                    self.lcr.d.next = self.lc.val();
                    self.qpn.d.next = self.lc_qpn.val().get_bits::<6>(0);
                    self.qpn_ok.d.next = true;
                    self.state.d.next = RxState::ReadQpState;
                } else if self.chk.sel.val() {
                    // A QP to flush (or to check): served before new packets, so traffic on
                    // other QPs cannot starve it.
                    self.src_lc.d.next = false;
                    self.src_fl.d.next = true;
                    self.chk.take.next = true;
                    self.qpn.d.next = self.chk.sel_qpn.val();
                    self.qpn_ok.d.next = true;
                    self.state.d.next = RxState::ReadQpState;
                } else if !self.to_empty.val() {
                    self.to_read.next = true;
                    self.src_lc.d.next = false;
                    self.src_to.d.next = true;
                    self.src_rnr.d.next = self.to_qpn.val().rnr_end.any();
                    self.qpn.d.next = self.to_qpn.val().qpn;
                    self.qpn_ok.d.next = true;
                    self.state.d.next = RxState::ReadQpState;
                } else if !self.evq.empty.val() {
                    // An asynchronous event: an event CQE (through `WriteCqe`) on its event CQ.
                    self.src_lc.d.next = false;
                    self.src_ev.d.next = true;
                    self.state.d.next = RxState::EventTake;
                } else if !self.desc_empty.val() {
                    self.desc_read.next = true;
                    self.src_lc.d.next = false;
                    self.pkt.d.next = self.desc.val();
                    self.qpn.d.next = self.desc_qpn.val().get_bits::<6>(0);
                    self.qpn_ok.d.next = self.desc_qpn.val().get_bits::<18>(6) == 0;
                    self.state.d.next = RxState::ReadQpState;
                }
            }
            RxState::EventTake => {
                // The event at the queue's head (it stays there until this pop): an SRQ limit
                // event (QP_NUM the SRQ number, BYTE_LEN the WQEs left) or a QP event (QP_NUM
                // the QP).
                self.evq.pop.next = true;
                self.ev_cq.d.next = self.evq.data.val().cq;
                self.qpn.d.next = self.evq.data.val().qpn;
                self.qpn_ok.d.next = true;
                self.cqe_wr_id.d.next = 0.into();
                self.cqe_len.d.next = bit_cast::<32, 16>(self.evq.data.val().left);
                self.cqe_opcode.d.next = self.nums.val().wco_async_event;
                self.status.d.next = bit_cast::<8, 5>(self.evq.data.val().event_type);
                self.recv_need_ack.d.next = false;
                self.state.d.next = RxState::ReadQpState;
            }
            RxState::ReadQpState => {
                self.state.d.next = RxState::LoadQpState;
            }
            RxState::LoadQpState => {
                // Every packet leaves exactly one job (which frees its buffer space in order);
                // the tables keep answering while the job FIFO is full.
                self.ctx.d.next = self.qp_now.val();
                self.mtu_r.d.next = self.mtu_now.val();
                // The segment-length flags `seq_ok` combines in `CheckRegion`.
                self.len_eq_mtu_r.d.next = self.plen32.val() == self.mtu_now.val();
                self.len_le_mtu_r.d.next = self.plen32.val() <= self.mtu_now.val();
                self.len_nz_r.d.next = self.plen32.val() != 0;
                self.reth_gt_mtu_r.d.next = self.pkt.q.val().reth_len > self.mtu_now.val();
                self.len_eq_reth_r.d.next = self.plen32.val() == self.pkt.q.val().reth_len;
                self.epsn.d.next = self.rdyn_now.val().epsn;
                self.msn.d.next = self.rdyn_now.val().msn;
                self.wr_addr.d.next = self.rdyn_now.val().wr_addr;
                self.wr_rem.d.next = self.rdyn_now.val().wr_rem;
                // The segment-length checks against what is left of an open WRITE, as flags
                // (`CheckRegion` combines them per opcode); the RQ ring's mask and stride.
                self.wr_lt_r.d.next = self.plen32.val() < self.rd_wr_rem.val();
                self.wr_eq_r.d.next = self.plen32.val() == self.rd_wr_rem.val();
                self.rq_mask_r.d.next =
                    !(bit_cast::<16, 16>(0xFFFF.into()) << bit_cast::<16, 4>(self.qp_now.val().rq_log_size));
                self.rq_sh_r.d.next = self.qp_now.val().rq_log_stride;
                self.in_write.d.next = self.rdyn_now.val().in_write.any();
                self.nak_sent.d.next = self.rdyn_now.val().nak_sent.any();
                self.last_nak.d.next = self.rdyn_now.val().last_nak;
                self.last_nak_ok.d.next = self.rdyn_now.val().last_nak_ok.any();
                self.in_send.d.next = self.rdyn_now.val().in_send.any();
                self.rq_ci.d.next = self.rdyn_now.val().rq_ci;
                self.recv_len.d.next = self.rdyn_now.val().recv_len;
                self.recv_wr_id.d.next = self.rdyn_now.val().recv_wr_id;
                self.at_slot.d.next = self.rdyn_now.val().at_slot;
                self.sg_cur.d.next = self.rdyn_now.val().sg_cur;
                self.tot_rem.d.next = self.rdyn_now.val().tot_rem;
                self.rq_pi.d.next = self.rqpi_ram.read_data.val();
                self.rd_acc.d.next = self.racc_ram.read_data.val();
                self.nak_moved.d.next = self.pkt.q.val().psn != self.rdyn_now.val().last_nak;
                self.acked.d.next = self.acked_ram.read_data.val().acked;
                self.retries.d.next = self.acked_ram.read_data.val().retries;
                self.qp_err.d.next = self.acked_ram.read_data.val().qp_err.any();
                self.err_was.d.next = self.acked_ram.read_data.val().qp_err.any();
                self.ce_done.d.next = self.rdyn_now.val().ce_done.any();
                self.rd_valid.d.next = self.acked_ram.read_data.val().rd_valid.any();
                self.rd_next.d.next = self.acked_ram.read_data.val().rd_next;
                self.reads_done.d.next = self.acked_ram.read_data.val().reads_done;
                self.acked_psn.d.next = self.acked_ram.read_data.val().acked_psn;
                self.rnr_cnt.d.next = self.acked_ram.read_data.val().rnr_cnt;
                self.rnr_wait.d.next = self.acked_ram.read_data.val().rnr_wait.any() & !self.src_rnr.q.val();
                self.rl_k.d.next = self.acked_ram.read_data.val().rl_k;
                self.rl_used.d.next = self.acked_ram.read_data.val().rl_used;
                self.rd_rs.d.next = self.acked_ram.read_data.val().rd_rs;
                self.rd_rs_ok.d.next = self.acked_ram.read_data.val().rd_rs_ok.any();
                self.ack_hi.d.next = self.acked_ram.read_data.val().ack_hi;
                self.emit_now_r.d.next = self.sent_psns.read_psn.val();
                self.all_acked_r.d.next = self.sent_psns.read_psn.val() == self.acked_ram.read_data.val().acked_psn;
                self.sent.d.next = self.sent_data.val();
                self.none_out.d.next = (self.out_load.val() == 0) | self.out_load.val().get_bit(15);
                self.sqd_here.d.next = self.chk.armed.val();
                if self.src_lc.q.val() {
                    self.state.d.next = RxState::CompletionWait;
                } else if self.src_fl.q.val() {
                    self.state.d.next = RxState::FlushStep;
                } else if self.src_ev.q.val() {
                    self.state.d.next = RxState::CompletionWait;
                } else if self.src_to.q.val() {
                    self.state.d.next = RxState::WriteBack;
                    if self.qp_now.val().state == 3 {
                        self.state.d.next = RxState::CompletionWait;
                    }
                    // A timeout of a QP the driver moved to ERR: flush what it waits for.
                    self.fl_eng.next = self.qp_now.val().state == 6;
                } else {
                    // A request or an ACK: register the checks on what the tables answered.
                    self.off_r.d.next = self.off.val();
                    self.va_ok.d.next = self.pkt.q.val().reth_va >= self.mr_now.val().va;
                    self.key_ok_r.d.next = self.key_ok.val();
                    self.psn_delta_r.d.next = self.psn_delta.val();
                    self.cover_r.d.next = self.cover_psn.val();
                    self.rd_q.d.next = bit_cast::<24, 32>(
                        self.pkt.q.val().reth_len >> (bit_cast::<32, 3>(self.qp_now.val().path_mtu) + 7),
                    );
                    self.rd_zero.d.next = self.pkt.q.val().reth_len == 0;
                    self.rd_part.d.next = self.part_now.val();
                    self.state.d.next = RxState::CheckRegion;
                }
            }
            RxState::CheckRegion => {
                // What is left of the region past the offset; where the payload goes.
                self.off_ok.d.next = self.off_r.q.val() <= self.mr_now.val().length;
                self.room.d.next = self.mr_now.val().length - self.off_r.q.val();
                self.w_addr_r.d.next = self.w_addr.val();
                self.bounds_ok_r.d.next = self.va_ok.q.val()
                    & (self.off_r.q.val() <= self.mr_now.val().length)
                    & (bit_cast::<64, 32>(self.req_len.val()) <= (self.mr_now.val().length - self.off_r.q.val()));
                self.send_fits_r.d.next = self.plen32.val() <= self.wr_rem.q.val();
                self.tot_fits_r.d.next = self.plen36.val() <= self.tot_rem.q.val();
                self.rq_empty_r.d.next = self.rq_ci.q.val() == self.rq_pi.q.val();
                self.rd_over_r.d.next = (self.rd_acc.q.val() - self.rd_done_data.val()) >= self.rd_lim.val();
                self.pend_rd_r.d.next = self.rd_acc.q.val() != self.rd_done_data.val();
                if self.ctx.q.val().use_srq.any() {
                    // Receive WQEs come from the SRQ: its indices (read at the SRQ number).
                    self.srq_took.d.next = true;
                    self.rq_ci.d.next = self.srqci_ram.read_data.val();
                    self.rq_pi.d.next = self.rqpi_ram.read_data.val();
                    self.rq_empty_r.d.next = self.srqci_ram.read_data.val() == self.rqpi_ram.read_data.val();
                    self.srq_lim.d.next = self.srq_ram.read_data.val().into();
                }
                // A QP in ERR (the driver's state, or this NIC's after an error completion)
                // takes no packets; they make it flush instead.
                // A UD QP takes only the ACKs of its own sent datagrams (no packet-buffer beats,
                // from the assembler), not packets from the wire.
                self.c_unknown.d.next = !self.qpn_ok.q.val()
                    | !((self.ctx.q.val().state == 2) | (self.ctx.q.val().state == 3))
                    | self.qp_err.q.val()
                    | (self.ctx.q.val().qp_type.any() & (self.pkt.q.val().nbeats != 0) & !self.pkt.q.val().ud.any())
                    | (!self.ctx.q.val().qp_type.any() & self.pkt.q.val().ud.any());
                // UD (IBTA Vol 1 9.8.3): no PSN checks; the Q_Key must be the QP's (10.2.5).
                self.qkey_bad.d.next = self.pkt.q.val().ud.any() & (self.deth.val().qkey != self.ctx.q.val().dest_ip);
                self.c_dup.d.next = self.psn_delta_r.q.val().get_bit(23) & !self.pkt.q.val().ud.any();
                // An ACK, NAK or response must answer a PSN already sent: at or past the PSN
                // after the last request packet sent it is a ghost.
                self.ghost_r.d.next = !self.ghost_d.val().get_bit(23);
                self.ack_fwd_r.d.next = !self.ack_d.val().get_bit(23) & (self.ack_d.val() != 0);
                self.c_gap.d.next = (self.psn_delta_r.q.val() != 0) & !self.pkt.q.val().ud.any();
                self.seq_ok_r.d.next = self.seq_ok.val();
                self.rd_npkts.d.next = self.rd_q.q.val() + bit_cast::<24, 1>(self.rd_part.q.val().into());
                if self.rd_zero.q.val() {
                    self.rd_npkts.d.next = 1.into();
                }
                self.state.d.next = RxState::Decide;
            }
            RxState::Decide => {
                // COMM_EST (IBTA Vol 1 11.6.3.1): a request with the expected PSN on a QP in
                // RTR; `WriteBack` raises it if the QP has not yet in this RTR.
                self.ce_fire.d.next = !self.c_unknown.q.val()
                    & !self.pkt.q.val().ud.any()
                    & !self.c_dup.q.val()
                    & !self.c_gap.q.val()
                    & (self.ctx.q.val().state == 2)
                    & (self.op.val() != self.nums.val().op_acknowledge)
                    & !self.is_read_resp.val();
                self.acc_r.d.next =
                    self.is_reth.val() & (self.req_len.val() != 0) & !(self.key_ok_r.q.val() & self.bounds_ok.val());
                if self.job_room.q.val() {
                    self.job_write.next = true;
                    self.state.d.next = RxState::WriteBack;
                    if self.class_c.val() {
                        // A responder class C error (NAK invalid request or remote access
                        // error, IBTA Vol 1 9.9.3, as rxe and ConnectX do): the QP goes to ERR
                        // with the NAK; in `WriteBack` the scheduler is asked to flush its send
                        // queue and the QP is marked for this engine's flush of its receive
                        // WQEs (IBV_WC_WR_FLUSH_ERR); later packets of the connection are
                        // dropped.
                        self.qp_err.d.next = true;
                        self.cls_c.d.next = true;
                    }
                    if self.c_unknown.q.val() {
                        self.cnt_unknown_qp.next = true;
                        self.fl_eng.next = self.qpn_ok.q.val() & ((self.ctx.q.val().state == 6) | self.qp_err.q.val());
                    } else if ((self.op.val() == self.nums.val().op_acknowledge) | self.is_read_resp.val())
                        & self.ghost_r.q.val()
                    {
                        // A ghost: an ACK, NAK or response for a PSN this QP never sent.
                        self.cnt_drop_psn.next = true;
                    } else if self.op.val() == self.nums.val().op_acknowledge {
                        if self.ctx.q.val().state == 3 {
                            if self.ack_fwd_r.q.val() {
                                self.ack_hi.d.next = self.cover_r.q.val();
                            }
                            self.cnt_rx_ack.next = self.pkt.q.val().nbeats != 0;
                            self.cnt_rx_rnr.next = self.is_rnr.val();
                            self.cnt_rx_nak_seq.next =
                                self.is_nak.val() & (self.nak_code.val() == self.nums.val().nak_psn_seq_err);
                            self.cnt_rx_nak_inv_req.next =
                                self.is_nak.val() & (self.nak_code.val() == self.nums.val().nak_inv_req);
                            self.cnt_rx_nak_rem_access.next =
                                self.is_nak.val() & (self.nak_code.val() == self.nums.val().nak_rem_access);
                            self.cnt_rx_nak_rem_op.next =
                                self.is_nak.val() & (self.nak_code.val() == self.nums.val().nak_rem_op);
                            self.state.d.next = RxState::RetireLoad;
                        } else {
                            self.cnt_unknown_qp.next = true;
                        }
                    } else if self.is_read_resp.val() {
                        // A READ response for our requester: checked against the READ at the
                        // head of the in-flight table (checks 1 and 2 were registered in
                        // `CheckRegion` and this state), then `RspOrder`, `RspAct`.
                        if self.ctx.q.val().state == 3 {
                            self.job_write.next = false;
                            self.state.d.next = RxState::RspOrder;
                        } else {
                            self.cnt_unknown_qp.next = true;
                        }
                    } else if self.c_dup.q.val() & self.is_read_req.val() {
                        // A duplicate RDMA READ is answered again from its own RETH (reads have
                        // no side effect, 9.7.5.1.1), after the same key checks; the expected
                        // PSN does not move. A requester resuming a partly answered READ sends
                        // one of these for the rest.
                        self.cnt_dup.next = true;
                        if (self.pkt.q.val().reth_len == 0) | (self.key_ok_r.q.val() & self.bounds_ok.val()) {
                            self.state.d.next = RxState::QueueResponse;
                        }
                    } else if self.c_dup.q.val() & self.is_atomic_req.val() {
                        // A duplicate atomic is never executed again: it is answered with the
                        // original value saved when it ran (9.7.5.1.1). The atomic unit, which
                        // keeps the replay table, looks it up in order behind the atomics
                        // before it (an ATOMIC ACKNOWLEDGE job, not to execute).
                        self.cnt_dup.next = true;
                        self.at_mode.d.next = true;
                        self.state.d.next = RxState::QueueResponse;
                    } else if self.c_dup.q.val() {
                        // Duplicate (9.7.5.1.1): not executed again; the last packet of a
                        // message is answered with an ACK of everything received so far.
                        self.cnt_dup.next = true;
                        self.job.next.need_ack =
                            bit_cast::<1, 1>((self.pkt.q.val().ackreq.any() | self.is_last_or_only.val()).into());
                        self.reply.next.psn = self.epsn.q.val() - 1;
                    } else if self.c_gap.q.val() {
                        // Ahead of the expected PSN: one sequence-error NAK per gap, carrying
                        // the expected PSN, then silence until it arrives (9.7.5.1.2).
                        self.cnt_drop_psn.next = true;
                        if !self.nak_sent.q.val() {
                            self.cnt_tx_nak_seq.next = true;
                            self.nak_sent.d.next = true;
                            self.job.next.need_ack = 1.into();
                            self.reply.next.syndrome = self.nums.val().syn_nak_psn_seq_err;
                            self.reply.next.psn = self.epsn.q.val();
                        }
                    } else if self.is_reth.val()
                        & (self.req_len.val() != 0)
                        & !(self.key_ok_r.q.val() & self.bounds_ok.val())
                    {
                        self.cnt_drop_key.next = true;
                        self.job.next.need_ack = 1.into();
                        self.reply.next.syndrome = self.nums.val().syn_nak_rem_access;
                        // Then the QP goes to ERR (class C, below): the packets behind it are
                        // dropped.
                        self.nak_sent.d.next = true;
                    } else if !self.seq_ok_r.q.val() {
                        self.cnt_drop_inv_req.next = true;
                        self.job.next.need_ack = 1.into();
                        self.reply.next.syndrome = self.nums.val().syn_nak_inv_req;
                        self.nak_sent.d.next = true;
                    } else if (self.is_read_req.val() | self.is_atomic_req.val()) & self.rd_over_r.q.val() {
                        // max_dest_rd_atomic READs / atomics still have responses to send: too
                        // many outstanding, NAK invalid request (9.7.5.2.2; ibv_modify_qp(3)),
                        // sent by the response generator after those responses (`QueueResponse`), so it does
                        // not overtake them.
                        self.cnt_drop_inv_req.next = true;
                        self.nak_sent.d.next = true;
                        self.rr_nak.d.next = true;
                        self.rr_syn_r.d.next = self.nums.val().syn_nak_inv_req;
                        self.state.d.next = RxState::QueueResponse;
                    } else if self.is_read_req.val() {
                        // Accepted RDMA READ: the response generator answers it with READ RESPONSE
                        // packets; the request's PSN range is used up and the MSN counts it.
                        self.rd_acc.d.next = self.rd_acc.q.val() + 1;
                        self.rr_fresh.d.next = true;
                        self.cnt_roce_ok.next = true;
                        self.state.d.next = RxState::QueueResponse;
                        self.epsn.d.next = self.epsn.q.val() + self.rd_npkts.q.val();
                        self.msn.d.next = self.msn.q.val() + 1;
                        self.nak_sent.d.next = false;
                    } else if self.is_atomic_req.val() {
                        // Accepted atomic: handed to the atomic unit in `QueueResponse`, which
                        // executes it once every earlier write is in host memory and answers it.
                        self.rd_acc.d.next = self.rd_acc.q.val() + 1;
                        self.rr_fresh.d.next = true;
                        self.cnt_roce_ok.next = true;
                        self.epsn.d.next = self.epsn.q.val() + 1;
                        self.msn.d.next = self.msn.q.val() + 1;
                        self.nak_sent.d.next = false;
                        self.at_mode.d.next = true;
                        self.at_exec.d.next = true;
                        self.state.d.next = RxState::QueueResponse;
                    } else if self.qkey_bad.q.val() {
                        // A UD SEND with another Q_Key: dropped silently (IBTA Vol 1 10.2.5),
                        // counted as a key violation.
                        self.cnt_drop_key.next = true;
                    } else if self.needs_rwqe.val() & !self.rwqe_ready.q.val() & self.rq_empty_r.q.val() {
                        // No receive WQE posted: RNR NAK with the QP's minimal RNR timer
                        // (9.7.5.2.8); the packet is not executed and the PSN stays expected.
                        // A UD SEND is dropped and counted instead (9.8.3).
                        if self.pkt.q.val().ud.any() {
                            self.cnt_drop_no_rwqe.next = true;
                        } else {
                            self.cnt_tx_rnr.next = true;
                            self.job.next.need_ack = 1.into();
                            self.reply.next.syndrome =
                                bit_cast::<8, 5>(self.ctx.q.val().min_rnr_timer) | self.nums.val().syn_rnr_nak;
                        }
                    } else if self.pkt.q.val().ud.any() & self.rwqe_ready.q.val() & !self.grh_done.q.val() {
                        // A UD SEND's receive WQE is checked: its GRH area first (`UdGrh`).
                        self.job_write.next = false;
                        self.state.d.next = RxState::UdGrh;
                    } else if self.needs_rwqe.val() & !self.rwqe_ready.q.val() {
                        // Fetch and check the receive WQE, then decide again.
                        self.job_write.next = false;
                        self.state.d.next = RxState::FetchRecvWqe;
                    } else if self.pkt.q.val().ud.any()
                        & self.sge_ok.val()
                        & !self.grh_bad.q.val()
                        & !self.sg_over.q.val()
                        & !self.tot_fits_r.q.val()
                    {
                        // A UD SEND longer than its receive WQE takes: dropped and counted, the
                        // WQE kept (IBTA Vol 1 10.8.3.3 class D, as rxe does); the QP stays.
                        self.cnt_drop_no_rwqe.next = true;
                    } else if (self.is_send_start.val() & !self.sge_ok.val())
                        | ((self.is_send_start.val() | self.is_send_cont.val()) & !self.tot_fits_r.q.val())
                    {
                        // The receive WQE cannot take the message: it completes in error
                        // (IBV_WC_LOC_PROT_ERR for a bad scatter entry, IBV_WC_LOC_LEN_ERR for a
                        // message longer than its entries together) and the requester gets NAK
                        // remote operational error
                        // or invalid request (9.7.5.2.4, 10.8.3.3). Nothing is written.
                        self.cnt_drop_inv_req.next = true;
                        self.nak_sent.d.next = true;
                        self.src_recv.d.next = true;
                        self.recv_need_ack.d.next = true;
                        self.status.d.next = self.nums.val().wc_loc_len_err;
                        self.recv_syn.d.next = self.nums.val().syn_nak_inv_req;
                        self.cqe_wr_id.d.next = self.recv_wr_id.q.val();
                        if self.is_send_start.val() {
                            self.cqe_wr_id.d.next = self.rwqe.q.val().wr_id;
                            if !self.sge_ok.val() {
                                self.status.d.next = self.nums.val().wc_loc_prot_err;
                                self.recv_syn.d.next = self.nums.val().syn_nak_rem_op;
                            }
                        }
                        self.cqe_len.d.next = 0.into();
                        self.cqe_opcode.d.next = self.nums.val().wco_recv;
                        if self.pkt.q.val().ud.any() {
                            // UD: no NAK (9.8.3).
                            self.recv_need_ack.d.next = false;
                        }
                        // (An SRQ's WQE was taken at the message's first packet.)
                        if !self.ctx.q.val().use_srq.any() | self.is_send_start.val() {
                            self.rq_ci.d.next = self.rq_ci.q.val() + 1;
                            self.srq_inc.d.next = self.ctx.q.val().use_srq.any();
                        }
                        self.in_send.d.next = false;
                        self.state.d.next = RxState::WriteCqe;
                    } else {
                        // Accepted: the payload goes out, the responder state moves on.
                        self.cnt_roce_ok.next = true;
                        if self.pkt.q.val().plen != 0 {
                            self.job.next.kind = 0.into();
                        }
                        self.job.next.need_ack =
                            bit_cast::<1, 1>((self.pkt.q.val().ackreq.any() | self.is_last_or_only.val()).into());
                        self.epsn.d.next = self.epsn.q.val() + 1;
                        if self.is_last_or_only.val() | self.is_send_end.val() {
                            self.msn.d.next = self.msn.q.val() + 1;
                            self.reply.next.msn = self.msn.q.val() + 1;
                        }
                        self.wr_addr.d.next = self.w_addr_r.q.val() + bit_cast::<64, 32>(self.plen32.val());
                        self.wr_rem.d.next = self.wrem_wr_r.q.val();
                        self.in_write.d.next = self.is_write_op.val() & !self.is_last_or_only.val();
                        if self.is_first_or_only.val() {
                            // The WRITE's total length, for a completion with immediate.
                            self.recv_len.d.next = self.pkt.q.val().reth_len;
                        }
                        if self.is_write_imm.val() {
                            // RDMA WRITE with immediate: the receive WQE completes with
                            // IBV_WC_RECV_RDMA_WITH_IMM, the WRITE's length and the ImmDt, and
                            // carries the ACK (ibv_poll_cq(3); 9.7.4.1.3).
                            self.job.next.need_ack = 0.into();
                            self.src_recv.d.next = true;
                            self.recv_need_ack.d.next = true;
                            self.recv_syn.d.next = self.nums.val().syn_ack;
                            self.status.d.next = self.nums.val().wc_success;
                            self.cqe_opcode.d.next = self.nums.val().wco_recv_rdma_with_imm;
                            self.cqe_wr_id.d.next = self.rwqe.q.val().wr_id;
                            self.cqe_len.d.next = self.recv_len.q.val();
                            if self.is_first_or_only.val() {
                                self.cqe_len.d.next = self.pkt.q.val().reth_len;
                            }
                            self.cqe_imm.d.next = self.pkt.q.val().imm;
                            self.cqe_flags.d.next = 2.into();
                            self.rq_ci.d.next = self.rq_ci.q.val() + 1;
                            self.srq_inc.d.next = self.ctx.q.val().use_srq.any();
                            self.state.d.next = RxState::WriteCqe;
                        }
                        if self.is_send_start.val() | self.is_send_cont.val() {
                            // The message scatters into the receive WQE's buffer.
                            self.in_send.d.next = !self.is_send_end.val();
                            self.recv_len.d.next = self.recv_len.q.val() + self.plen32.val();
                            self.cqe_wr_id.d.next = self.recv_wr_id.q.val();
                            self.cqe_len.d.next = self.recv_len.q.val() + self.plen32.val();
                            if self.is_send_start.val() & self.ctx.q.val().use_srq.any() {
                                // An SRQ's WQE is taken when the message starts: a message
                                // starting on another QP meanwhile takes the next one.
                                self.rq_ci.d.next = self.rq_ci.q.val() + 1;
                                self.srq_inc.d.next = true;
                            }
                            if self.is_send_start.val() {
                                self.wr_rem.d.next = self.wrem_send_r.q.val();
                                self.recv_wr_id.d.next = self.rwqe.q.val().wr_id;
                                self.recv_len.d.next = self.plen32.val();
                                self.cqe_wr_id.d.next = self.rwqe.q.val().wr_id;
                                self.cqe_len.d.next = self.plen32.val();
                            }
                            if self.is_send_end.val() {
                                // The receive completion follows the payload and carries the ACK.
                                self.job.next.need_ack = 0.into();
                                self.src_recv.d.next = true;
                                self.recv_need_ack.d.next = true;
                                self.recv_syn.d.next = self.nums.val().syn_ack;
                                self.status.d.next = self.nums.val().wc_success;
                                self.cqe_opcode.d.next = self.nums.val().wco_recv;
                                if self.has_imm.val() {
                                    self.cqe_imm.d.next = self.pkt.q.val().imm;
                                    self.cqe_flags.d.next = 2.into();
                                }
                                if !self.ctx.q.val().use_srq.any() {
                                    // A QP's own RQ: its WQE is retired with the message.
                                    self.rq_ci.d.next = self.rq_ci.q.val() + 1;
                                }
                                self.state.d.next = RxState::WriteCqe;
                            }
                            // What is left of the receive buffer after this packet.
                            self.tot_rem.d.next = self.tot_rem.q.val() - self.plen36.val();
                            if self.is_send_start.val() {
                                self.tot_rem.d.next = self.sg_tot.q.val() - self.plen36.val();
                                self.sg_cur.d.next = 0.into();
                            }
                            if !self.send_fits.val() {
                                // The payload passes the end of the current entry: it goes out
                                // in pieces, one job per entry (`Scatter`), then on to the
                                // state chosen above; the walk leaves the entry's cursor in
                                // `wr_addr` / `wr_rem`.
                                self.job_write.next = false;
                                self.sc_go.d.next = true;
                                self.sc_list.d.next = false;
                                self.sc_addr.d.next = self.w_addr_r.q.val();
                                self.sc_room.d.next = self.wr_rem.q.val();
                                if self.is_send_start.val() {
                                    self.sc_room.d.next = self.sge_len.q.val();
                                }
                                self.sc_ack.d.next = self.pkt.q.val().ackreq.any() & !self.is_send_end.val();
                                self.sc_next.d.next = RxState::WriteBack;
                                if self.is_send_end.val() {
                                    self.sc_next.d.next = RxState::WriteCqe;
                                }
                                self.state.d.next = RxState::Scatter;
                            }
                        }
                        if self.pkt.q.val().ud.any() {
                            // A UD receive (9.8.3, ibv_poll_cq(3)): no ACK; BYTE_LEN counts the
                            // 40-byte GRH area, WC_FLAGS has IBV_WC_GRH, SRC_QP the sender.
                            self.job.next.need_ack = 0.into();
                            self.recv_need_ack.d.next = false;
                            self.cqe_len.d.next = self.plen32.val() + 40;
                            self.cqe_flags.d.next = 1.into();
                            if self.has_imm.val() {
                                self.cqe_flags.d.next = 3.into();
                            }
                            self.cqe_srcqp.d.next = self.deth.val().src_qp;
                        }
                        self.nak_sent.d.next = false;
                    }
                }
            }
            RxState::CompletionWait => {
                self.state.d.next = RxState::CompletionRoute;
            }
            RxState::CompletionRoute => {
                if self.src_lc.q.val() {
                    self.cqe_opcode.d.next = self.lcr.q.val().wc_opcode;
                    self.cqe_wr_id.d.next = self.lcr.q.val().wr_id;
                    self.cqe_len.d.next = 0.into();
                    self.status.d.next = self.lcr.q.val().status;
                    self.state.d.next = RxState::WriteCqe;
                } else if self.src_recv.q.val() | self.src_ev.q.val() {
                    self.state.d.next = RxState::WriteCqe;
                } else {
                    self.state.d.next = RxState::RetireLoad;
                }
            }
            RxState::FetchRecvWqe => {
                // Fetch the receive WQE at the RQ consumer index (AXI ID 2), all its beats.
                self.rq_beat.d.next = 0.into();
                self.sg_i.d.next = 0.into();
                self.sg_n.d.next = 0.into();
                if self.rq_ar_ready.val() {
                    self.state.d.next = RxState::TakeRecvWqe;
                }
            }
            RxState::TakeRecvWqe => {
                // Its beats in order: beat 0 holds wr_id, num_sge and entries 0..2 (entry 0 is
                // checked first), beat k >= 1 entries 4k-1..4k+2.
                if self.rq_r_valid.val() {
                    self.rq_beat.d.next = self.rq_beat.q.val() + 1;
                    match self.rq_beat.q.val().index() {
                        0 => {
                            self.rwqe.d.next = self.rq_r_data.val().into();
                            self.sgb0.d.next = self.rq_r_data.val().into();
                            self.cur_sge.d.next = self.rq_lanes.val().lane1.into();
                        }
                        1 => {
                            self.sgb1.d.next = self.rq_r_data.val().into();
                        }
                        2 => {
                            self.sgb2.d.next = self.rq_r_data.val().into();
                        }
                        _ => {
                            self.sgb3.d.next = self.rq_r_data.val().into();
                        }
                    }
                    if self.rq_beat.q.val() == self.rq_nb.q.val() {
                        self.state.d.next = RxState::SgeReadKey;
                        if self.src_fl.q.val() {
                            self.state.d.next = RxState::FlushRecvWqe;
                        }
                    }
                }
            }
            RxState::SgeReadKey => {
                // The key table is read at the scatter entry's lkey; the entries to check are
                // the WQE's num_sge, at most what its stride holds.
                self.sg_cnt.d.next = self.sg_cap.q.val();
                self.sg_over.d.next = true;
                if self.rwqe.q.val().num_sge <= bit_cast::<8, 5>(self.sg_cap.q.val()) {
                    self.sg_cnt.d.next = bit_cast::<5, 8>(self.rwqe.q.val().num_sge);
                    self.sg_over.d.next = false;
                }
                self.state.d.next = RxState::SgeCheckKey;
            }
            RxState::SgeCheckKey => {
                // A WRITE with immediate keeps its RETH checks and address: its receive WQE
                // gives only the wr_id.
                if self.is_send_start.val() {
                    self.off_r.d.next = self.cur_addr.val() - self.mr_now.val().va;
                    self.va_ok.d.next = self.cur_addr.val() >= self.mr_now.val().va;
                    self.key_ok_r.d.next = self.lkey_ok.val();
                }
                self.sge_len.d.next = 0.into();
                if self.rwqe.q.val().num_sge != 0 {
                    self.sge_len.d.next = self.cur_sge.q.val().length;
                }
                self.sg_more.d.next = self.sg_inext.val() < self.sg_cnt.q.val();
                self.state.d.next = RxState::SgeRoom;
            }
            RxState::SgeRoom => {
                if self.is_send_start.val() {
                    self.off_ok.d.next = self.off_r.q.val() <= self.mr_now.val().length;
                    self.room.d.next = self.mr_now.val().length - self.off_r.q.val();
                    self.w_addr_r.d.next = self.mr_now.val().iova + self.off_r.q.val();
                }
                self.state.d.next = RxState::SgeVerdict;
            }
            RxState::SgeVerdict => {
                // The scatter entry lies inside its region (or is empty), as every entry before
                // it; the packet fits it.
                self.sge_ok_r.d.next = self.entry_ok.val() & (self.sg_first.val() | self.sge_ok_r.q.val());
                self.send_fits_r.d.next = self.plen32.val() <= self.sge_len.q.val();
                self.tot_fits_r.d.next = (self.plen32.val() <= self.sge_len.q.val()) & !self.sg_over.q.val();
                self.sg_tot.d.next = self.sg_tot.q.val() + self.sge_len36.val();
                if self.sg_first.val() {
                    self.sg_tot.d.next = self.sge_len36.val();
                }
                if self.is_send_start.val() & (self.sge_len.q.val() != 0) {
                    // A nonzero entry: kept, translated, for the packets of the message.
                    self.sg_ram.write_enable.next = true;
                    self.sg_n.d.next = self.sg_n.q.val() + 1;
                    if self.sg_n.q.val() == 0 {
                        self.first_addr.d.next = self.w_addr_r.q.val();
                        self.first_len.d.next = self.sge_len.q.val();
                    }
                }
                self.rwqe_ready.d.next = true;
                self.state.d.next = RxState::Decide;
                if self.is_send_start.val() & self.sg_more.q.val() {
                    // The next entry.
                    self.sg_i.d.next = self.sg_inext.val();
                    self.state.d.next = RxState::SgeSelect;
                } else if !self.sg_first.val() {
                    self.state.d.next = RxState::SgeFirstNonzero;
                }
            }
            RxState::SgeSelect => {
                // Entry `sg_i` from the WQE's beats, then its checks (`SgeReadKey` ..
                // `SgeVerdict`).
                match self.sg_i.q.val().index() {
                    1 => {
                        self.cur_sge.d.next = self.sgb0.q.val().lane2.into();
                    }
                    2 => {
                        self.cur_sge.d.next = self.sgb0.q.val().lane3.into();
                    }
                    3 => {
                        self.cur_sge.d.next = self.sgb1.q.val().lane0.into();
                    }
                    4 => {
                        self.cur_sge.d.next = self.sgb1.q.val().lane1.into();
                    }
                    5 => {
                        self.cur_sge.d.next = self.sgb1.q.val().lane2.into();
                    }
                    6 => {
                        self.cur_sge.d.next = self.sgb1.q.val().lane3.into();
                    }
                    7 => {
                        self.cur_sge.d.next = self.sgb2.q.val().lane0.into();
                    }
                    8 => {
                        self.cur_sge.d.next = self.sgb2.q.val().lane1.into();
                    }
                    9 => {
                        self.cur_sge.d.next = self.sgb2.q.val().lane2.into();
                    }
                    10 => {
                        self.cur_sge.d.next = self.sgb2.q.val().lane3.into();
                    }
                    11 => {
                        self.cur_sge.d.next = self.sgb3.q.val().lane0.into();
                    }
                    12 => {
                        self.cur_sge.d.next = self.sgb3.q.val().lane1.into();
                    }
                    13 => {
                        self.cur_sge.d.next = self.sgb3.q.val().lane2.into();
                    }
                    14 => {
                        self.cur_sge.d.next = self.sgb3.q.val().lane3.into();
                    }
                    _ => {
                        self.cur_sge.d.next = self.sgb0.q.val().lane1.into();
                    }
                }
                self.state.d.next = RxState::SgeReadKey;
            }
            RxState::UdGrh => {
                // The GRH area: the first nonzero entry's first 40 bytes; the packet's IPv4
                // header (frame bytes 14..34) into its last 20 (the first 20 are left as they
                // are: reserved for RoCEv2 over IPv4, Annex A17.4.5.3). The message follows it.
                self.grh_done.d.next = true;
                if !self.sge_ok.val() {
                    // A bad entry: IBV_WC_LOC_PROT_ERR in `Decide`.
                    self.state.d.next = RxState::Decide;
                } else if self.grh_short.q.val() {
                    // No room for the GRH: IBV_WC_LOC_LEN_ERR in `Decide`.
                    self.tot_fits_r.d.next = false;
                    self.grh_bad.d.next = true;
                    self.state.d.next = RxState::Decide;
                } else if !self.grh_fits.q.val() {
                    // Longer than the entries take: dropped in `Decide`, nothing written.
                    self.tot_fits_r.d.next = false;
                    self.state.d.next = RxState::Decide;
                } else if self.job_room.q.val() {
                    self.job_write.next = true;
                    self.job.next.kind = 0.into();
                    self.job.next.off = 14.into();
                    self.job.next.plen = 20.into();
                    self.job.next.addr = self.grh_addr.q.val();
                    self.job.next.release = 0.into();
                    self.job.next.need_ack = 0.into();
                    self.w_addr_r.d.next = self.grh_msg.q.val();
                    self.sge_len.d.next = self.grh_len.q.val();
                    self.sg_tot.d.next = self.grh_tot.q.val();
                    self.state.d.next = RxState::SgeFits;
                }
            }
            RxState::SgeFirstNonzero => {
                // Several entries: the message starts in the first nonzero one.
                self.w_addr_r.d.next = self.first_addr.q.val();
                self.sge_len.d.next = self.first_len.q.val();
                self.state.d.next = RxState::SgeFits;
            }
            RxState::SgeFits => {
                // The packet fits that entry, or the entries together.
                self.send_fits_r.d.next = self.plen32.val() <= self.sge_len.q.val();
                self.tot_fits_r.d.next = (self.plen36.val() <= self.sg_tot.q.val()) & !self.sg_over.q.val();
                self.state.d.next = RxState::Decide;
            }
            RxState::Scatter => {
                // The walk's pieces go out as the engine's payload jobs; the engine steps the
                // list's index (the receive's `sg_cur` or the READ's `rl_k`) on each entry
                // change, and takes the cursor back after the last piece.
                self.job.next.kind = 0.into();
                self.job.next.off = self.scat.p_off.val();
                self.job.next.plen = self.scat.p_plen.val();
                self.job.next.addr = self.scat.p_addr.val();
                self.job.next.release = self.scat.p_release.val();
                self.job.next.need_ack = bit_cast::<1, 1>(self.scat.p_ack.val().into());
                self.job_write.next = self.scat.job_write.val();
                if self.scat.advance.val() {
                    if self.sc_list.q.val() {
                        self.rl_k.d.next = self.rl_k.q.val() + 1;
                    } else {
                        self.sg_cur.d.next = self.sg_cur.q.val() + 1;
                    }
                }
                if self.scat.done.val() {
                    if self.sc_list.q.val() {
                        self.rl_used.d.next = self.scat.next_used.val();
                    } else {
                        self.wr_addr.d.next = self.scat.next_addr.val();
                        self.wr_rem.d.next = self.scat.next_rem.val();
                    }
                    self.state.d.next = self.sc_next.q.val();
                }
            }
            RxState::WriteBack => {
                // Write back the transport state (and an SRQ's consumer index).
                self.racc_ram.write_enable.next = self.qpn_ok.q.val();
                self.racc_ram.write_address.next = self.qpn.q.val();
                self.racc_ram.write_data.next = self.rd_acc.q.val();
                if self.srq_took.q.val() {
                    self.srqci_ram.write_enable.next = true;
                    self.srqci_ram.write_address.next = self.srq_addr.val().get_bits::<6>(0);
                    self.srqci_ram.write_data.next = self.rq_ci.q.val();
                    self.ev_chk.d.next = self.srq_inc.q.val();
                }
                self.rdyn_ram.write_enable.next = self.qpn_ok.q.val();
                self.rdyn_ram.write_address.next = self.qpn.q.val();
                self.rdyn_ram.write_data.next = self.rdyn_wb.val();
                // Asynchronous events of the QP (regs::ASYNC_EVENT_CQ), into the event queue:
                // COMM_EST once per RTR; the error event and, on an SRQ, LAST_WQE_REACHED when
                // the QP's error flag rose during this visit (a repeat of this state raises
                // nothing again).
                self.ce_done.d.next = self.ce_bit.val();
                self.ce_fire.d.next = false;
                self.err_was.d.next = self.qp_err.q.val();
                if self.qpn_ok.q.val() & self.async_cq.val().get_bit(8) {
                    self.evq.set_ce.next = self.ce_fire.q.val() & !self.ce_done.q.val();
                    if self.qp_err.q.val() & !self.err_was.q.val() {
                        self.evq.set_err.next = self.ev_type.val() != 0;
                        self.evq.set_lw.next = self.ctx.q.val().use_srq.any();
                    }
                }
                self.acked_ram.write_enable.next = self.qpn_ok.q.val();
                self.acked_ram.write_address.next = self.qpn.q.val();
                self.acked_ram.write_data.next = self.acked_zero.val();
                self.acked_ram.write_data.next.acked = self.acked.q.val();
                self.acked_ram.write_data.next.retries = self.retries.q.val();
                self.acked_ram.write_data.next.qp_err = self.qp_err.q.val().into();
                self.acked_ram.write_data.next.rd_valid = self.rd_valid.q.val().into();
                self.acked_ram.write_data.next.reads_done = self.reads_done.q.val();
                self.acked_ram.write_data.next.rd_next = self.rd_next.q.val();
                self.acked_ram.write_data.next.acked_psn = self.acked_psn.q.val();
                self.acked_ram.write_data.next.rnr_cnt = self.rnr_cnt.q.val();
                self.acked_ram.write_data.next.rnr_wait = self.rnr_wait.q.val().into();
                self.acked_ram.write_data.next.rl_k = self.rl_k.q.val();
                self.acked_ram.write_data.next.rl_used = self.rl_used.q.val();
                self.acked_ram.write_data.next.rd_rs = self.rd_rs.q.val();
                self.acked_ram.write_data.next.rd_rs_ok = self.rd_rs_ok.q.val().into();
                self.acked_ram.write_data.next.ack_hi = self.ack_hi.q.val();
                // Only the completer moves the CQ producer index.
                self.state.d.next = RxState::Idle;
                if self.ack_div.q.val() {
                    // The packet's ACK or NAK follows the READ responses owed before it.
                    self.rr_nak.d.next = true;
                    self.state.d.next = RxState::QueueResponse;
                } else if self.rsp_pending.q.val() {
                    // The WQEs before the READ have retired: check the response again.
                    self.rsp_pending.d.next = false;
                    self.state.d.next = RxState::RspHead;
                }
                if self.wb_pkt.val() {
                    // The next packet at once (one cycle per visit less): `Idle`'s packet
                    // branch, which it would take next cycle (its resets are shared, above
                    // the state machine). The tables are written at the end of this cycle and
                    // read from the next, so the packet's visit sees this write-back.
                    self.desc_read.next = true;
                    self.src_lc.d.next = false;
                    self.pkt.d.next = self.desc.val();
                    self.qpn.d.next = self.desc_qpn.val().get_bits::<6>(0);
                    self.qpn_ok.d.next = self.desc_qpn.val().get_bits::<18>(6) == 0;
                    self.state.d.next = RxState::ReadQpState;
                }
                // A class C error of `Decide`: the scheduler flushes the send queue (waiting here,
                // the write-back repeated, while its FIFO is full), the engine the receive WQEs.
                if self.cls_c.q.val() {
                    self.rw_data.next = self.rw_flush.val();
                    if self.rw_full.val() {
                        self.state.d.next = RxState::WriteBack;
                    } else {
                        self.rw_write.next = true;
                        self.fl_eng.next = true;
                        self.cls_c.d.next = false;
                    }
                }
            }
            RxState::RetireLoad => {
                // The in-flight entry at `acked` is being read. Only WQEs the scheduler has
                // recorded (serially between acked and sent) are retired.
                if self.none_out.q.val() {
                    self.state.d.next = RxState::WriteBack;
                } else {
                    self.state.d.next = RxState::RetireCompare;
                }
            }
            RxState::RetireCompare => {
                // The in-flight entry is readable: is the head WQE covered?
                self.psn_before_r.d.next = self.psn_diff.val().get_bit(23);
                self.stop_r.d.next = (self.cover_r.q.val() == self.entry.val().last_psn) & self.stop_ok.val();
                self.nak_drop_r.d.next =
                    !self.src_to.q.val() & self.is_nak.val() & (self.nak_stale.val() | self.nak_repeat.val());
                self.state.d.next = RxState::Retire;
            }
            RxState::Retire => {
                self.cqe_opcode.d.next = self.entry.val().wc_opcode;
                self.cqe_wr_id.d.next = self.entry.val().wr_id;
                self.cqe_len.d.next = self.entry.val().byte_len;
                self.status.d.next = self.nums.val().wc_success;
                if self.qp_err.q.val() {
                    // The QP is in the error state: every outstanding WQE completes with
                    // IBV_WC_WR_FLUSH_ERR, signaled or not (ibv_poll_cq(3)).
                    self.status.d.next = self.nums.val().wc_wr_flush_err;
                    self.cqe_len.d.next = 0.into();
                    self.state.d.next = RxState::WriteCqe;
                } else if self.rsp_bad.q.val() {
                    // A response whose opcode or AETH does not fit its place in the READ:
                    // IBV_WC_BAD_RESP_ERR, and the QP goes to the error state (9.9.2).
                    self.status.d.next = self.nums.val().wc_bad_resp_err;
                    self.cqe_len.d.next = 0.into();
                    self.state.d.next = RxState::WriteCqe;
                } else if !self.src_to.q.val() & self.is_rnr.val() & self.psn_before_r.q.val() {
                    // RNR NAK for this WQE: the responder had no receive WQE. Wait the time its
                    // timer code names (the ACK timer holds that wait), then resend; RNR_RETRY
                    // such retries (7 = infinite), then IBV_WC_RNR_RETRY_EXC_ERR (9.7.5.2.8).
                    if self.rnr_wait.q.val() {
                        self.state.d.next = RxState::WriteBack;
                    } else if (self.ctx.q.val().rnr_retry != 7) & (self.rnr_cnt.q.val() >= self.ctx.q.val().rnr_retry) {
                        self.status.d.next = self.nums.val().wc_rnr_retry_exc_err;
                        self.cqe_len.d.next = 0.into();
                        self.state.d.next = RxState::WriteCqe;
                    } else {
                        self.arm_r.d.next = true;
                        self.arm_code_r.d.next = self.nak_code.val();
                        self.rnr_cnt.d.next = self.rnr_cnt.q.val() + 1;
                        self.rnr_wait.d.next = true;
                        self.state.d.next = RxState::WriteBack;
                    }
                } else if self.nak_drop_r.q.val() {
                    // A NAK older than the oldest WQE still outstanding (overtaken by a later
                    // ACK), or a second copy of the sequence NAK already acted on: nothing to
                    // do (the responder sends one sequence NAK per gap, 9.7.5.1.2).
                    self.state.d.next = RxState::WriteBack;
                } else if self.src_to.q.val() | (self.seq_nak_r.q.val() & self.psn_before_r.q.val()) {
                    // (While an RNR wait runs, sequence NAKs are the echo of the RNR'd packet:
                    // the resend waits for the RNR timer.)
                    // Local ACK timeout or PSN sequence NAK: go back to the oldest WQE not yet
                    // acknowledged, at most RETRY_CNT times without progress (7 is not
                    // infinite); then the WQE fails with IBV_WC_RETRY_EXC_ERR. A sequence NAK
                    // naming a new PSN is progress (everything before it arrived, 9.7.5.1.2):
                    // it starts a new count, so a long message on a lossy or reordering path
                    // fails only if one point of it is retried RETRY_CNT times.
                    if self.retry_ok_r.q.val() {
                        if !self.rw_full.val() {
                            self.rw_write.next = true;
                            self.cnt_retransmit.next = true;
                            self.cnt_timeout.next = self.src_to.q.val() & !self.src_rnr.q.val();
                            self.retries.d.next = self.retries.q.val() + 1;
                            if self.seq_progress.val() {
                                self.retries.d.next = 1.into();
                            }
                            if self.src_rnr.q.val() {
                                // The end of an RNR wait: counted against RNR_RETRY already.
                                self.retries.d.next = self.retries.q.val();
                            }
                            self.last_nak.d.next = self.pkt.q.val().psn;
                            self.last_nak_ok.d.next = !self.src_to.q.val();
                            if self.entry_is_read.val() {
                                // The READ's responses may start again here.
                                self.rd_rs.d.next = self.restart_psn.val();
                                self.rd_rs_ok.d.next = true;
                            }
                            self.state.d.next = RxState::WriteBack;
                        }
                    } else {
                        self.cnt_timeout.next = self.src_to.q.val();
                        self.status.d.next = self.nums.val().wc_retry_exc_err;
                        self.cqe_len.d.next = 0.into();
                        self.state.d.next = RxState::WriteCqe;
                    }
                } else if !self.psn_before_r.q.val() & self.entry_is_read.val() & !self.rsp_final.q.val() {
                    // An ACK (or a later response) covers a READ whose responses have not all
                    // arrived: they were lost or are late. Ask once per missing PSN for the
                    // READ to be resumed from the first missing response (9.7.5.1.3); a
                    // timeout covers a lost resumption.
                    self.rd_rw_psn.d.next = self.rd_restart.val();
                    self.rd_rw_dup.d.next = self.last_nak_ok.q.val() & (self.last_nak.q.val() == self.rd_restart.val());
                    self.state.d.next = RxState::ResumeRead;
                } else if !self.psn_before_r.q.val() {
                    self.retries.d.next = 0.into();
                    self.rnr_cnt.d.next = 0.into();
                    // Covered by the ACK: retired successfully.
                    if self.entry.val().signaled.any() {
                        self.state.d.next = RxState::WriteCqe;
                    } else {
                        self.acked.d.next = self.acked.q.val() + 1;
                        self.none_out.d.next = (self.out_m1.val() == 0) | self.out_m1.val().get_bit(15);
                        self.acked_psn.d.next = self.last_plus1.val();
                        self.rd_valid.d.next = false;
                        self.rd_rs_ok.d.next = false;
                        if self.entry_is_read.val() {
                            self.reads_done.d.next = self.reads_done.q.val() + 1;
                        }
                        self.state.d.next = RxState::RetireLoad;
                        if self.stop_r.q.val() {
                            self.state.d.next = RxState::WriteBack;
                        }
                    }
                } else if self.is_nak.val() & (self.nak_code.val() != 0) & (self.nak_code.val() < 4) {
                    // The WQE holding the NAKed PSN fails: REM_INV_REQ 9, REM_ACCESS 10, REM_OP 11.
                    self.status.d.next = bit_cast::<8, 5>(self.nak_code.val()) + self.nums.val().wc_rem_nak_base;
                    self.cqe_len.d.next = 0.into();
                    self.state.d.next = RxState::WriteCqe;
                } else {
                    self.state.d.next = RxState::WriteBack;
                }
            }
            RxState::WriteCqe => {
                if self.src_ev.q.val() {
                    // An SRQ limit event's CQE (no ACK, no error).
                    self.job.next.kind = 1.into();
                    self.job.next.release = 0.into();
                    self.job.next.addr = self.cqe_cq.val();
                    self.job.next.need_ack = 0.into();
                    if self.job_room.q.val() {
                        self.job_write.next = true;
                        self.state.d.next = RxState::WriteBack;
                    }
                } else if self.src_recv.q.val() {
                    // A receive completion (IBV_WC_RECV), carrying the message's ACK or NAK: the
                    // host sees the CQE only after the payload before it is written.
                    self.job.next.kind = 1.into();
                    self.job.next.release = 0.into();
                    self.job.next.addr = self.cqe_cq.val();
                    self.job.next.need_ack = bit_cast::<1, 1>(self.recv_need_ack.q.val().into());
                    // BTH.SE of the message's last packet: a solicited completion (CQ events).
                    self.job.next.se = self.pkt.q.val().se;
                    self.reply.next.syndrome = self.recv_syn.q.val();
                    self.rw_data.next = self.rw_flush.val();
                    if self.job_room.q.val() & !(self.fatal.val() & self.rw_full.val()) {
                        self.job_write.next = true;
                        self.cnt_cqe.next = true;
                        self.state.d.next = RxState::WriteBack;
                        if self.fatal.val() & !self.pkt.q.val().ud.any() {
                            // A receive error moves the QP to ERR (IBTA Vol 1 10.8.3.3): its
                            // send queue and remaining receives are flushed. A UD QP's (a bad
                            // entry, no room for the GRH) completes its WQE and stays, so one
                            // malformed receive cannot take down QP1.
                            self.qp_err.d.next = true;
                            self.rw_write.next = true;
                            self.fl_eng.next = true;
                        }
                    }
                } else {
                    self.job.next.kind = 1.into();
                    self.job.next.release = 0.into();
                    self.job.next.addr = self.cqe_cq.val();
                    // An error other than a flush puts the QP in the error state: the completer
                    // flushes what is in flight, the scheduler what is not yet sent.
                    self.rw_data.next = self.rw_flush.val();
                    if self.job_room.q.val() & !(self.fatal.val() & !self.src_lc.q.val() & self.rw_full.val()) {
                        self.job_write.next = true;
                        self.cnt_cqe.next = true;
                        self.acked.d.next = self.acked.q.val() + 1;
                        self.none_out.d.next = (self.out_m1.val() == 0) | self.out_m1.val().get_bit(15);
                        self.rd_valid.d.next = false;
                        self.rd_rs_ok.d.next = false;
                        if !self.src_lc.q.val() {
                            self.acked_psn.d.next = self.last_plus1.val();
                        }
                        if self.entry_is_read.val() & !self.src_lc.q.val() {
                            self.reads_done.d.next = self.reads_done.q.val() + 1;
                        }
                        if self.fatal.val() {
                            self.qp_err.d.next = true;
                            // A local error's scheduler knows already.
                            self.rw_write.next = !self.src_lc.q.val();
                            // The receive queue is flushed too.
                            self.fl_eng.next = true;
                        }
                        if self.src_lc.q.val() | self.stop_r.q.val() {
                            self.state.d.next = RxState::WriteBack;
                        } else {
                            self.state.d.next = RxState::RetireLoad;
                        }
                    }
                }
            }
            RxState::QueueResponse => {
                // The READ, atomic or owed ACK goes to the atomic unit, and in the same cycle
                // a barrier job (no write, nothing released) into the write-job FIFO: the unit
                // holds the job until every write accepted before it is in host memory, so a
                // READ returns and an atomic reads what an earlier WRITE stored (IBTA Vol 1
                // 9.5), while this engine goes on with the next packet.
                self.job.next.kind = 2.into();
                self.job.next.need_ack = 0.into();
                self.job.next.release = 0.into();
                self.job.next.bar = 1.into();
                if !self.rr_full_r.q.val() & self.job_room.q.val() {
                    self.rr_write.next = true;
                    self.job_write.next = true;
                    self.ack_div.d.next = false;
                    if self.at_exec.q.val() {
                        // The atomic's result goes to this replay slot.
                        self.at_slot.d.next = self.at_slot.q.val() + 1;
                    }
                    self.state.d.next = RxState::WriteBack;
                }
            }
            RxState::ResumeRead => {
                // The resumption asked for in `Retire` or `RspAct`, from registers.
                if !self.rd_rw_dup.q.val() & !self.rw_full.val() {
                    self.rw_write.next = true;
                    self.rw_data.next.restart = self.rd_rw_psn.q.val();
                    self.cnt_retransmit.next = true;
                    self.last_nak.d.next = self.rd_rw_psn.q.val();
                    self.last_nak_ok.d.next = true;
                    self.rd_rs.d.next = self.rd_rw_psn.q.val();
                    self.rd_rs_ok.d.next = true;
                }
                self.state.d.next = RxState::WriteBack;
            }
            RxState::FlushStep => {
                // Flush, one step per visit (the QP's bit is set again until nothing is left):
                // a QP in ERR (moved there by the driver, or by an error completion) first
                // completes its outstanding send WQEs, then each posted receive WQE, with
                // IBV_WC_WR_FLUSH_ERR (ibv_modify_qp(3), ibv_poll_cq(3); IBTA Vol 1 10.3.1).
                // Nothing to do (not in ERR, or nothing left): no write-back.
                self.state.d.next = RxState::Idle;
                if (self.ctx.q.val().state == 6) & !self.qp_err.q.val() {
                    // Just moved to ERR by the driver: the scheduler flushes what it has not
                    // sent, this engine what is in flight. No error event (the driver knows),
                    // but LAST_WQE_REACHED for a QP on an SRQ (`WriteBack`).
                    self.rw_data.next = self.rw_flush.val();
                    self.state.d.next = RxState::FlushStep;
                    if !self.rw_full.val() {
                        self.rw_write.next = true;
                        self.qp_err.d.next = true;
                        self.fl_eng.next = true;
                        self.state.d.next = RxState::CompletionWait;
                    }
                } else if self.qp_err.q.val() {
                    if !self.none_out.q.val() {
                        self.fl_eng.next = true;
                        self.state.d.next = RxState::CompletionWait;
                    } else if (self.rq_ci.q.val() != self.rq_pi.q.val()) & !self.ctx.q.val().use_srq.any() {
                        // (An SRQ's WQEs belong to the SRQ: a QP in ERR flushes none.)
                        self.state.d.next = RxState::FetchRecvWqe;
                    }
                } else if self.ctx.q.val().sq_drain.any()
                    & self.sqd_here.q.val()
                    & self.none_out.q.val()
                    & (self.all_acked_r.q.val() | self.ctx.q.val().qp_type.any())
                {
                    // SQD, the requester stopped, and every WQE it started has completed: the
                    // SQ is drained (IBTA Vol 1 10.3.1). Disarm; IBV_EVENT_SQ_DRAINED if asked
                    // for (`en_sqd_async_notify`) and events are enabled.
                    self.chk.drained.next = true;
                    self.sd_req.d.next = self.ctx.q.val().sqd_notify.any() & self.async_cq.val().get_bit(8);
                }
            }
            RxState::FlushRecvWqe => {
                // A receive WQE flushed: its completion on the receive CQ, no ACK.
                self.src_recv.d.next = true;
                self.recv_need_ack.d.next = false;
                self.status.d.next = self.nums.val().wc_wr_flush_err;
                self.cqe_opcode.d.next = self.nums.val().wco_recv;
                self.cqe_wr_id.d.next = self.rwqe.q.val().wr_id;
                self.cqe_len.d.next = 0.into();
                self.rq_ci.d.next = self.rq_ci.q.val() + 1;
                self.fl_eng.next = true;
                self.state.d.next = RxState::CompletionWait;
            }
            RxState::RspHead => {
                // READ response checks, 1 (registered above the state machine, in `CheckRegion`
                // too), when the response is checked again after the WQEs before its READ
                // retired.
                self.state.d.next = RxState::RspRange;
            }
            RxState::RspRange => {
                // 2 (registered above the state machine, in `Decide` too).
                self.state.d.next = RxState::RspOrder;
            }
            RxState::RspOrder => {
                // 3: in order or not; the length a response at this place must have (the
                // path MTU, or what is left on the last); where its payload goes.
                // A READ with an SGE list that is already being answered: its cursor
                // (what `Scatter` would read first) is taken now, from the list entry read since
                // `LoadQpState`.
                self.rl_pre.d.next = self.rd_valid.q.val();
                self.sc_addr.d.next = self.rl_rd.val().iova + bit_cast::<64, 32>(self.rl_used.q.val());
                self.sc_room.d.next = self.rl_rd.val().length - self.rl_used.q.val();
                self.r_eq.d.next = self.r_d.q.val() == 0;
                self.r_ahead.d.next = !self.r_d.q.val().get_bit(23) & (self.r_d.q.val() != 0);
                self.r_len_ok.d.next = (self.r_a.q.val() != self.r_b.q.val()) & (self.plen32.val() == self.mtu.val());
                if self.is_rsp_last.val() {
                    self.r_len_ok.d.next = (self.r_a.q.val() == self.r_b.q.val())
                        & (self.plen32.val() == (self.entry.val().byte_len - self.r_boff.q.val()));
                }
                if self.is_atomic_ack.val() {
                    // One packet; the original value rides in the AtomicAckETH, not as payload.
                    self.r_len_ok.d.next = (self.r_a.q.val() == self.r_b.q.val()) & (self.plen32.val() == 0);
                }
                // The opcode fits the response's place (IBTA Vol 1 9.7.5.1.4: FIRST/ONLY start a
                // response stream, at the READ's first PSN or where it was resumed; MIDDLE/LAST
                // continue one; LAST/ONLY end the READ); FIRST/LAST/ONLY and ATOMIC
                // ACKNOWLEDGE carry an AETH of type ACK.
                self.r_opc_ok.d.next = false;
                match self.op.val().index() {
                    13 => {
                        self.r_opc_ok.d.next = self.r_start.val() & !self.r_end.val();
                    }
                    14 => {
                        self.r_opc_ok.d.next = (self.r_a.q.val() != 0) & !self.r_end.val();
                    }
                    15 => {
                        self.r_opc_ok.d.next = (self.r_a.q.val() != 0) & self.r_end.val();
                    }
                    16 => {
                        self.r_opc_ok.d.next = self.r_start.val() & self.r_end.val();
                    }
                    18 => {
                        self.r_opc_ok.d.next = self.r_end.val();
                    }
                    _ => {}
                }
                if (self.op.val() != self.nums.val().op_rdma_read_response_middle)
                    & (self.aeth_syn.val().kind != self.nums.val().syn_type_ack)
                {
                    self.r_opc_ok.d.next = false;
                }
                self.r_addr.d.next = self.entry.val().local_iova + bit_cast::<64, 32>(self.r_off.q.val());
                self.r_exp_dup.d.next = self.last_nak_ok.q.val() & (self.last_nak.q.val() == self.r_exp.q.val());
                // A READ with several SGEs: its first response starts at entry 0 (the cursor
                // is read at entry `rl_k` from here on).
                self.r_list.d.next = self.entry.val().rd_list.any() & (self.pkt.q.val().plen != 0);
                if !self.rd_valid.q.val() {
                    self.rl_k.d.next = 0.into();
                    self.rl_used.d.next = 0.into();
                }
                self.state.d.next = RxState::RspAct;
            }
            RxState::RspAct => {
                // 4: act. Every response leaves one job (its payload, or nothing).
                if self.job_room.q.val() {
                    self.job_write.next = true;
                    self.state.d.next = RxState::WriteBack;
                    if !self.r_head_read.q.val() | !self.r_in.q.val() {
                        if self.r_past.q.val() & self.r_head_read.q.val() {
                            // A later READ's response while the head READ still misses some:
                            // dropped, and the head READ resumed (once per PSN) without a trip
                            // through the retire loop, so a burst of them is dropped at the
                            // pace they arrive.
                            self.cnt_dup.next = true;
                            self.rd_rw_psn.d.next = self.r_exp.q.val();
                            self.rd_rw_dup.d.next = self.r_exp_dup.q.val();
                            self.state.d.next = RxState::ResumeRead;
                        } else if self.r_past.q.val() & !self.rsp_retired.q.val() {
                            // Past the head WQE: first retire what it implicitly acknowledges.
                            self.job_write.next = false;
                            self.rsp_pending.d.next = true;
                            self.rsp_retired.d.next = true;
                            self.state.d.next = RxState::RetireLoad;
                        } else {
                            // For no READ outstanding (late or duplicate): dropped.
                            self.cnt_dup.next = true;
                        }
                    } else if !self.r_eq.q.val() {
                        if self.r_ahead.q.val() {
                            // Responses missing before it: dropped, and the READ resumed once
                            // from the first missing one (go-back-N, 9.7.5.1.3).
                            self.cnt_drop_psn.next = true;
                            self.rd_rw_psn.d.next = self.r_exp.q.val();
                            self.rd_rw_dup.d.next = self.r_exp_dup.q.val();
                            self.state.d.next = RxState::ResumeRead;
                        } else {
                            self.cnt_dup.next = true;
                        }
                    } else if !self.r_opc_ok.q.val() {
                        // The peer broke the response sequence: nothing is written; the retire
                        // loop completes the READ with IBV_WC_BAD_RESP_ERR.
                        self.cnt_drop_inv_req.next = true;
                        self.rsp_bad.d.next = true;
                        self.state.d.next = RxState::RetireLoad;
                    } else if !self.r_len_ok.q.val() {
                        // A response of the wrong length is never written (it could reach
                        // past the READ's buffer).
                        self.cnt_drop_inv_req.next = true;
                    } else {
                        self.cnt_roce_ok.next = true;
                        if self.pkt.q.val().plen != 0 {
                            self.job.next.kind = 0.into();
                        }
                        if self.is_atomic_ack.val() {
                            // The original remote value goes to the local buffer, little-endian.
                            self.job.next.kind = 3.into();
                            self.job.next.cqe = bit_cast::<256, 64>(self.pkt.q.val().at_swap);
                        }
                        self.job.next.addr = self.r_addr.q.val();
                        self.rd_next.d.next = self.pkt.q.val().psn + 1;
                        self.rd_valid.d.next = true;
                        self.ack_hi.d.next = self.pkt.q.val().psn;
                        if self.is_rsp_last.val() {
                            // The READ is complete: the retire loop writes its completion
                            // after the payload. Its READ is the head WQE and this PSN is the
                            // READ's last (`r_a == r_b`), so `RetireCompare`'s verdict is
                            // known: covered, not before it, no NAK; straight to `Retire`.
                            self.rsp_final.d.next = true;
                            self.cover_r.d.next = self.pkt.q.val().psn;
                            self.psn_before_r.d.next = false;
                            self.stop_r.d.next = self.stop_ok.val();
                            self.nak_drop_r.d.next = false;
                            self.state.d.next = RxState::Retire;
                        }
                        if self.r_list.q.val() {
                            // The payload scatters over the READ's SGE list (`Scatter`, from
                            // the list entry at `rl_k` unless `RspOrder` took the cursor),
                            // one job per piece, then on to `Retire` or `WriteBack`.
                            self.job_write.next = false;
                            self.sc_go.d.next = true;
                            self.sc_list.d.next = true;
                            self.sc_ack.d.next = false;
                            self.sc_next.d.next = RxState::WriteBack;
                            if self.is_rsp_last.val() {
                                self.sc_next.d.next = RxState::Retire;
                            }
                            self.state.d.next = RxState::Scatter;
                        }
                    }
                }
            }
            _ => {}
        }
        self.job.next.ack = self.reply.val().into();
        if self.job_write.val() & self.job.val().need_ack.any() & self.pend_rd_r.q.val() & !self.src_fl.q.val() {
            // Not from the writer: behind the READ responses this QP still owes.
            self.job.next.need_ack = 0.into();
            self.ack_div.d.next = true;
            self.rr_syn_r.d.next = self.reply.val().syndrome;
            // The ACK's own PSN and MSN (a sequence NAK names the expected PSN, not the
            // packet's; a duplicate's ACK the PSN before the expected one).
            self.ack_psn_r.d.next = self.reply.val().psn;
            self.ack_msn_r.d.next = self.reply.val().msn;
        }
        // (After the state machine: `desc_read` is final here.)
        self.desc_avail_r.d.next = !self.desc_empty.val() & !self.desc_read.val();
        // Another visit of this QP: a flush goes on one WQE per visit, and a visit of a QP
        // whose SQ drain is armed asks for a check visit.
        self.chk.again.next = self.fl_eng.val()
            | ((self.state.q.val() == RxState::WriteBack) & self.sqd_here.q.val() & !self.src_fl.q.val());
        self.acked_tx_ram.write_enable.next = self.acked_ram.write_enable.val();
        self.acked_tx_ram.write_address.next = self.acked_ram.write_address.val();
        self.acked_w.next = self.acked_ram.write_data.val();
        self.acked_w_hi.next = self.acked_w.val().ack_hi;
        self.acked_wdata.next.acked = self.acked_w.val().acked;
        self.acked_wdata.next.ack_hi_lo = self.acked_w_hi.val().get_bits::<8>(0);
        self.acked_tx_ram.write_data.next.acked = self.acked_w.val().acked;
        self.acked_tx_ram.write_data.next.reads_done = self.acked_w.val().reads_done;
        self.acked_tx_ram.write_data.next.rsvd0 = 0.into();
        self.acked_tx_ram.write_data.next.acked_psn = self.acked_w.val().acked_psn;
        self.acked_we.next = self.acked_ram.write_enable.val();
        self.acked_waddr.next = self.acked_ram.write_address.val();
        // The state as its number (in parentheses in `RxState`'s documentation), for the status
        // register: the numbers the states had before they were named. (The 6-bit state has
        // codes no variant uses: without this default yosys infers a latch.)
        self.dbg_state.next = 0.into();
        match self.state.q.val() {
            RxState::Idle => self.dbg_state.next = 0.into(),
            RxState::ReadQpState => self.dbg_state.next = 1.into(),
            RxState::LoadQpState => self.dbg_state.next = 2.into(),
            RxState::WriteBack => self.dbg_state.next = 9.into(),
            RxState::CheckRegion => self.dbg_state.next = 5.into(),
            RxState::Decide => self.dbg_state.next = 6.into(),
            RxState::QueueResponse => self.dbg_state.next = 24.into(),
            RxState::FetchRecvWqe => self.dbg_state.next = 7.into(),
            RxState::TakeRecvWqe => self.dbg_state.next = 8.into(),
            RxState::SgeReadKey => self.dbg_state.next = 13.into(),
            RxState::SgeCheckKey => self.dbg_state.next = 14.into(),
            RxState::SgeRoom => self.dbg_state.next = 15.into(),
            RxState::SgeVerdict => self.dbg_state.next = 16.into(),
            RxState::SgeSelect => self.dbg_state.next = 35.into(),
            RxState::SgeFirstNonzero => self.dbg_state.next = 36.into(),
            RxState::SgeFits => self.dbg_state.next = 37.into(),
            RxState::Scatter => self.dbg_state.next = 40.into(),
            RxState::RetireLoad => self.dbg_state.next = 10.into(),
            RxState::Retire => self.dbg_state.next = 11.into(),
            RxState::RspHead => self.dbg_state.next = 17.into(),
            RxState::RspRange => self.dbg_state.next = 18.into(),
            RxState::RspOrder => self.dbg_state.next = 20.into(),
            RxState::RspAct => self.dbg_state.next = 21.into(),
            RxState::ResumeRead => self.dbg_state.next = 22.into(),
            RxState::RetireCompare => self.dbg_state.next = 32.into(),
            RxState::CompletionWait => self.dbg_state.next = 3.into(),
            RxState::CompletionRoute => self.dbg_state.next = 4.into(),
            RxState::WriteCqe => self.dbg_state.next = 12.into(),
            RxState::FlushStep => self.dbg_state.next = 33.into(),
            RxState::FlushRecvWqe => self.dbg_state.next = 34.into(),
            RxState::UdGrh => self.dbg_state.next = 25.into(),
            _ => {}
        }
        if self.reset.val() {
            self.state.d.next = RxState::Idle;
        }
    }
}
