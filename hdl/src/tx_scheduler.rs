//! The requester's work-queue engine: doorbell → QP context → WQE fetch → lkey check →
//! segmentation into request packets. (The responder's READ responses and the
//! acknowledgements owed behind them are sent by [`crate::response_gen::ResponseGen`], which
//! writes the same FIFOs in the cycles this engine leaves free.)
//!
//! One state machine, [`TxsState`], serves one QP at a time. By role:
//! - **Scheduling.** `Idle` takes a go-back-N request or an SQ doorbell; `LoadQp` → `TakeQp` load the QP's context and transport state. Per WQE,
//!   `CheckSq` (or the state issuing the last packet of the WQE before) registers the queue
//!   checks and `NextWqe` acts on them: the next WQE from the prefetch buffer (a one-beat WQE
//!   at the buffer's head is taken by `NextWqe` itself), a fetch, `Idle` on an empty SQ,
//!   `SkipRetired` past WQEs a rewind was overtaken on, or `SaveAndYield` (save the transport
//!   state, give way to a rewind or another QP).
//! - **WQE fetch**, in [`crate::wqe_fetcher::WqeFetcher`] (since stop 34), which owns the
//!   32-beat prefetch buffer: `NextWqe` discards the buffer for a fresh fetch, then
//!   `FetchLimits` → `FetchSaturate` → `FetchMinima` → `FetchSize` step the fetcher's sizing of a
//!   burst of up to 8 WQEs (`FetchLimits` also steps aside while 32 or more WQEs are in flight
//!   and another QP has work); `FetchWqe` waits for the read's acceptance; `WaitWqeBeats`
//!   takes the WQE's beats. While the buffer still holds the next WQE but has room for a burst
//!   and more WQEs are posted, `NextWqe` starts the fetcher's append machine
//!   ([`crate::wqe_fetcher::AheadStep`]: the address after the buffered WQEs, then the same
//!   sizing steps from there) and takes the WQE at once.
//! - **Checks.** Per SGE `LookupLkey` → `CheckLkey` → `CheckRoom` → `CheckBounds` (key, PD,
//!   access, offset, room, bounds; SGE 0's key entry is addressed as slot 0 is taken, so it
//!   starts at `CheckLkey`); a gather list then `KeepSge` → `SelectSge` → `LoadSge`
//!   for the next SGE, and `SumList` → `SizeList` → `CountList` after the last. `ActOnChecks`
//!   starts the WQE, makes it wait for an issue slot (`WaitIssueSlot`: max_rd_atomic, a fence,
//!   the SEND window) or completes it with an error (`CompleteError`).
//! - **Request issue.** `CopyListRead` / `CopyListWrite` copy a READ's gather list to the RX
//!   engine; `RecordWqe` records the WQE in the in-flight table; `WalkList` / `WalkListRead`
//!   walk a gather list to the restart byte of a go-back-N; then per packet `SizePacket` →
//!   `IssuePacket` (`RecordWqe` sizes the first packet itself; `SizePiece` → `IssuePiece` for
//!   each piece of a packet that spans gather entries; `IssueInline` for the second to fourth
//!   beat of inline data from the fetched WQE), on to `NextWqe` after the last.
//!
//! A 64-byte WRITE from the prefetch buffer takes 7 cycles, one per state: `NextWqe`,
//! `CheckLkey`, `CheckRoom`, `CheckBounds`, `ActOnChecks`, `RecordWqe`, `IssuePacket` (11
//! before stop 28); the append of the next burst runs beside them (until stop 29 it took 7
//! more states every 8 WQEs). The prefetch buffer holds 32 beats, so an append started while
//! 16 or more one-beat WQEs are buffered arrives (7 + 64 cycles of DMA read latency) before
//! they are used up; a QP's first fetch is followed by an append at once.
use crate::context_tables::ContextTables;
use crate::head_check::HeadCheck;
use crate::numbers::Numbers;
use crate::records::{
    DoorbellRec, InflightRec, KeyRec, LocalCompletion, MrEntryRec, QpContextRec, RewindRec, ScatterEntryRec,
    SgeLanesRec, SgeRec, SqDynRec, TxJob, UdWqeRec, WqeOpClass, WqeRec,
};
use crate::wqe_fetcher::WqeFetcher;
use rust_hdl::prelude::*;

/// The [`TxScheduler`]'s state (see the module documentation for the flow).
///
/// The states were numbered before they were named: each variant's `(was N)` is that number,
/// which is also what [`TxScheduler::dbg_state`] reports in the engine status register
/// ([`rnic_contract::regs::status::TX_STATE_SHIFT`]). The variants are declared in that order
/// (the encoding follows declaration order); number 17 was unused, 18 is since stop 32 (16,
/// unused from stop 32, is `IssueInline` since stop 33).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TxsState {
    // Scheduling.
    /// (was 0) Waiting for work: a go-back-N request first, then an SQ doorbell (a QP from
    /// the ready set).
    Idle,
    /// (was 1) The QP's context and transport state are being read.
    LoadQp,
    /// (was 2) They are readable: context, next PSN, ci and READs sent into registers (a
    /// rewind's PSN and ci instead, unless it is stale); a QP in neither RTS nor ERR is left.
    TakeQp,
    /// (was 3) Between WQEs: the queue checks are registered (SQ empty, send window, the next
    /// WQE in the prefetch buffer, WQEs retired behind a rewind, rewinds waiting). (After a
    /// WQE's last packet the checks are registered as it issues, and this state is skipped.)
    CheckSq,
    // WQE fetch.
    /// (was 4) The WQE fetch (AXI ID 1) waits for the DMA read issuer to accept it.
    FetchWqe,
    /// (was 5) Takes the WQE's beats from the prefetch buffer: slot 0 into `wqe` (SGE 0 or the
    /// inline length to check first; its key-table entry is addressed from the beat),
    /// slots 1..4 into `ext0`..`ext3`; then `CheckLkey`.
    WaitWqeBeats,
    // Checks (IBTA Vol 1 10.6.3): one SGE's key, offset, room and bounds.
    /// (was 6) A gather list's next SGE: its key-table entry is being read.
    LookupLkey,
    /// (was 7) Key verdict (valid, tag, PD, LOCAL_WRITE for a READ) and the offset into the
    /// region; the message is sized (packets in two halves); the WQE's SGE count is checked
    /// against its size.
    CheckLkey,
    // Request issue.
    /// (was 8) Hands the sized packet's job, and its payload read (or, inline data of up to
    /// 256 bytes, its first inline beat), to the assembler; a rewind for this QP stops the WQE
    /// here.
    IssuePacket,
    /// (was 9) Records the WQE in the in-flight table and saves `{PSN after it, ci + 1}`,
    /// before its first packet leaves; sizes that packet as `SizePacket` does.
    RecordWqe,
    // Errors and yielding.
    /// (was 10) A WQE that failed its checks (or is flushed in the error state) waits until
    /// every earlier WQE has retired, then writes its error completion.
    CompleteError,
    /// (was 11) Saves the transport state and goes idle, giving way to a rewind or another QP
    /// (or, on entering the error state, goes on to flush the SQ).
    SaveAndYield,
    // Checks, continued.
    /// (was 12) Room in the region past the offset and the translated address (inline data:
    /// the WQE's second slot, and its length against the WQE size); packet count and the
    /// issue-slot verdict.
    CheckRoom,
    /// (was 13) Acts on the checks: skips a retired WQE, waits for an issue slot, fails the WQE
    /// (error completion), or sets the message up and starts it.
    ActOnChecks,
    // Request issue, continued.
    /// (was 14) Sizes the next packet (the path MTU or what is left of the message) and whether
    /// it lies inside the current gather entry (a WQE's first packet is sized in `RecordWqe`,
    /// unless a go-back-N walks its gather list first).
    SizePacket,
    // Scheduling, continued.
    /// (was 15) Acts on the queue checks: skip retired WQEs, idle on an empty SQ, take the WQE
    /// from the prefetch buffer (a one-beat WQE at its head is taken here, and `CheckLkey`
    /// follows), size a fetch, or save and step aside (window full).
    NextWqe,
    // Request issue, continued.
    /// (16) The second to fourth payload beats of an inline packet go into the inline-data
    /// FIFO, one per cycle from `ext1`..`ext3` (see `il_write`). (Code 16 was `LoadResponse`
    /// until stop 32, when the responder's packets moved to
    /// [`crate::response_gen::ResponseGen`].)
    IssueInline,
    /// (was 18) Unused: `IssueResponse` until stop 32, kept so the later states keep their
    /// encoding (the order of declaration), which timing closure was done against.
    Unused18,
    // Scheduling, continued.
    /// (was 19) The WQE waits for an issue slot: a READ or atomic beyond max_rd_atomic, a
    /// fenced WQE behind READs or atomics, a SEND with 32 WQEs in flight, a READ with a gather
    /// list while 4 are outstanding; steps aside for a rewind or another QP.
    WaitIssueSlot,
    // Checks, continued.
    /// (was 20) The bounds verdict is registered; a gather list's SGE goes on to `KeepSge`.
    CheckBounds,
    // Request issue, continued.
    /// (was 21) Sizes the next piece of a packet that spans gather entries.
    SizePiece,
    /// (was 22) Hands that piece's payload read job and piece record on.
    IssuePiece,
    // Scheduling, continued.
    /// (was 23) Skips the WQEs the completer retired behind an overtaken rewind: resumes after
    /// the last retired one.
    SkipRetired,
    // Gather list: checks.
    /// (was 24) Keeps the checked SGE (if not empty) in the gather list; on to the next SGE or
    /// the list's sum.
    KeepSge,
    /// (was 25) The next SGE's index settles (its slot and lane are chosen in `LoadSge`).
    SelectSge,
    /// (was 26) Sizes the message from the list's summed length.
    SizeList,
    /// (was 27) Packet count and issue-slot verdict for the list (also the way back from
    /// `WaitIssueSlot`, where only the slot check is redone).
    CountList,
    // Request issue: go-back-N into a gathered message.
    /// (was 28) Walks the gather list to the restart byte: skips a whole entry, or steps into
    /// one.
    WalkList,
    /// (was 29) The entry after the new one is being read.
    WalkListRead,
    // Gather list: checks, continued.
    /// (was 30) Loads the next SGE from the fetched slots, then back to `LookupLkey`.
    LoadSge,
    /// (was 31) The whole list checked: its summed length and verdict replace SGE 0's.
    SumList,
    // Request issue: a READ's gather list to the RX engine's READ list table.
    /// (was 32) Reads entry `cp_i` of the gather list.
    CopyListRead,
    /// (was 33) Writes it to the READ list table (two cycles per entry), then `RecordWqe`.
    CopyListWrite,
    // WQE fetch: sizing a burst (in the order FetchLimits, FetchSaturate, FetchMinima,
    // FetchSize).
    /// (was 34) Each limit in WQEs registered (posted, to the ring's end, to the 4 KiB page's
    /// end, send window); steps aside instead while 32 or more are in flight and another QP
    /// has work.
    FetchLimits,
    /// (was 35) Pairwise minima of the saturated limits.
    FetchMinima,
    /// (was 36) The fetch in WQEs and beats, once the buffer has room for a WQE; then
    /// `FetchWqe`.
    FetchSize,
    /// (was 37) Each limit saturated at 8 WQEs (and the prefetch buffer's room).
    FetchSaturate,
}

/// Processes SQ doorbells one QP at a time.
///
/// For a doorbell `(qpn, pi)` it loads the QP's context and transport state (next PSN, SQ
/// consumer index `ci`), then for each WQE from `ci` up to `pi`:
/// 1. waits until fewer than `2^LOG_MAX_INFLIGHT_WQES` WQEs of the QP are unacknowledged;
/// 2. fetches the WQE by DMA (AXI ID 1) from `sq_base + (ci mod size) << (6 + SQ_LOG_STRIDE)`:
///    `min(2^SQ_LOG_STRIDE, 5)` beats, the first slot and the slots holding SGEs 1..15;
/// 3. checks the opcode (RDMA WRITE, SEND, either with immediate, RDMA READ, or an atomic) and
///    every local SGE against the key table: valid entry, tag, PD, bounds, and LOCAL_WRITE for a
///    READ's or atomic's destination (IBTA Vol 1 10.6.3), 8 bytes for an atomic, keeping the
///    translated non-empty SGEs in a 16-entry gather list; inline data (`IBV_SEND_INLINE`) is
///    not checked: up to 256 bytes go from the WQE slots fetched, longer data is read from the
///    WQE's second slot; a failure becomes an error completion
///    (`IBV_WC_LOC_QP_OP_ERR`, `IBV_WC_LOC_PROT_ERR`, `IBV_WC_LOC_LEN_ERR`) written in SQ order
///    by the completer, before any packet of the WQE is sent;
/// 4. for an RDMA READ with several local SGEs, waits while 4 READs or atomics of the QP are
///    outstanding (the RX engine keeps 4 READ lists per QP, used in turn by READ number), then
///    copies the checked list into the RX engine's READ list table (2 cycles per entry), where
///    the responses are scattered over it;
/// 5. records the WQE in the in-flight table for the completer (first and last PSN) and stores
///    `{PSN after it, ci + 1}`, before any of its packets leaves;
/// 6. emits one [`TxJob`] per packet (WRITE or SEND FIRST/MIDDLE/LAST/ONLY by path MTU, RETH
///    on a WRITE's first, ImmDt on the last of a message with immediate, AckReq on the last and
///    on every 16th; for a READ one READ REQUEST with a RETH; for an atomic one COMPARE SWAP
///    or FETCH ADD with an AtomicETH), and for each gather-list entry the packet's payload
///    touches, a payload read job for the DMA read issuer and a piece record for the assembler
///    (one of each for a packet inside one entry; for inline data of up to 256 bytes, an inline
///    piece record and its beats, `il_write`, and no read job). `IBV_SEND_SOLICITED` sets BTH.SE on the last packet of a SEND or a WRITE
///    with immediate; `IBV_SEND_FENCE` makes the WQE wait (like a READ beyond `max_rd_atomic`)
///    until every earlier READ and atomic of the QP has completed.
///
/// The responder's packets (READ responses, ATOMIC ACKNOWLEDGEs, ACKNOWLEDGEs owed behind
/// them) are [`crate::response_gen::ResponseGen`]'s: it claims a cycle of the job, payload-read
/// and piece FIFOs a cycle ahead with `job_hold` (this engine's `job_room` is low in that
/// cycle), never while `job_lock` says a request packet and its pieces are going in.
///
/// Go-back-N (IBTA Vol 1 9.7.5.1.2): a rewind request from the completer for the QP being
/// served stops the WQE at the next packet boundary, and the engine resends from the WQE and
/// PSN the completer names, up to the QP's saved producer index.
///
/// A doorbell for a QP that is not in RTS is ignored (the WQEs stay posted).
///
/// Timing: 4 cycles to load a QP, then per WQE 3 cycles + DMA read latency + (beats − 1) + 6
/// cycles when it must be fetched, 7 for a one-beat WQE in the prefetch buffer (which the
/// fetch-ahead machine, [`crate::wqe_fetcher::AheadStep`], keeps filled in parallel), 4 for a one-SGE RDMA WRITE
/// there that the head check ([`crate::head_check::HeadCheck`]) checked while the WQE before it was issued (an
/// inline one of up to 256 bytes: its slots + 4, and 1 per inline beat after the first), +7 per
/// SGE after the first,
/// +4 once for a list; one packet job every 2 cycles
/// (+2 per extra piece of a packet spanning entries) while the job FIFOs have room (a 64 KiB WRITE at MTU 4096 is queued
/// in 32 cycles; the shortest packet, 256 bytes, is 5 beats on the wire). Every stage is at most
/// 6 LUT levels: the queue checks are registered before they are acted on, the key and bounds
/// checks are spread over three cycles (offset, then room in the region, then the verdict) and
/// each packet's length is sized in the cycle before it is emitted. Tables: QP context (TX copy), key table (TX copy) and transport state in block
/// RAM, 64 entries each; context commands are taken in any cycle the engine does not write its
/// transport state.
#[derive(LogicBlock, Default)]
pub struct TxScheduler {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The state machine's state, for the engine status register (rnic_contract::regs::STATUS):
    /// the number each [`TxsState`] variant documents as `(was N)`.
    pub dbg_state: Signal<Out, Bits<6>>,
    /// Ready QPs from [`crate::doorbell::SqDoorbells`] (first-word fall-through view:
    /// `qpn << 16 | newest producer index`).
    pub db_empty: Signal<In, Bit>,
    pub db_data: Signal<In, Bits<32>>,
    pub db_read: Signal<Out, Bit>,
    /// A QP other than the offered one is ready ([`crate::doorbell::SqDoorbells`]'s `others`).
    /// While the offer is the QP being served (rung again), the scheduler takes it so that the
    /// next QP is offered, and puts the served QP back into the ready set when it leaves it
    /// (`self_rung`): otherwise the served QP's own offer hides every other QP's doorbell, and a
    /// QP that keeps its send queue full starves the others (a READ stream on one QP kept a
    /// second QP's READs waiting for 50 000 cycles).
    pub db_others: Signal<In, Bit>,
    /// Puts QP `rearm_qpn` back into the ready set: it stepped aside while it waited (for
    /// in-flight room, a READ slot or its error's turn) so other QPs can be served.
    pub rearm: Signal<Out, Bit>,
    pub rearm_qpn: Signal<Out, Bits<6>>,
    /// A one-cycle pulse: QP `sq_stop_qpn`, whose context says SQ_DRAIN
    /// ([`rnic_contract::qp_context::SQ_DRAIN`]), has nothing more to start: every WQE up to
    /// the producer index it had taken before the drain was started (resends may follow). The
    /// completer raises `IBV_EVENT_SQ_DRAINED` once they have all completed.
    pub sq_stop: Signal<Out, Bit>,
    pub sq_stop_qpn: Signal<Out, Bits<6>>,
    // Go-back-N requests from the completer (first-word fall-through FIFO).
    pub rw_empty: Signal<In, Bit>,
    pub rw_data: Signal<In, RewindRec>,
    pub rw_read: Signal<Out, Bit>,
    // Context commands.
    pub cmd_fire: Signal<In, Bit>,
    /// A context command is pending at BAR0 (it fires when both engines are ready).
    pub cmd_valid: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub cmd_ready: Signal<Out, Bit>,
    // Completer's count of retired WQEs for `cur_qpn` (read port of its table).
    pub acked_addr: Signal<Out, Bits<6>>,
    pub acked_data: Signal<In, Bits<16>>,
    /// The completer's count of READ WQEs retired for `cur_qpn` (mod 128).
    pub acked_reads: Signal<In, Bits<7>>,
    /// The PSN after the last WQE the completer retired for `cur_qpn`.
    pub acked_psn: Signal<In, Bits<24>>,
    /// Our count of WQEs handed to the wire (recorded in the in-flight table), for the
    /// completer (second read port); WQEs completed in the error state are not counted.
    pub sent_addr: Signal<In, Bits<6>>,
    pub sent_data: Signal<Out, Bits<16>>,
    // WQE fetch on the DMA read channel.
    pub wqe_ar_valid: Signal<Out, Bit>,
    pub wqe_ar_ready: Signal<In, Bit>,
    pub wqe_ar_addr: Signal<Out, Bits<64>>,
    /// Beats of the WQE fetch minus one.
    pub wqe_ar_len: Signal<Out, Bits<3>>,
    pub wqe_r_valid: Signal<In, Bit>,
    pub wqe_r_data: Signal<In, Bits<512>>,
    /// The beat's DMA read was answered with an error (AXI RRESP SLVERR or DECERR: an IOMMU
    /// fault, an unmapped ring): its data is not the WQE.
    pub wqe_r_err: Signal<In, Bit>,
    // Packet jobs: `job_afull` / `rj_afull` are the job FIFOs' almost-full flags (see `job_room`).
    pub job_afull: Signal<In, Bit>,
    pub job_write: Signal<Out, Bit>,
    pub job: Signal<Out, TxJob>,
    pub rj_afull: Signal<In, Bit>,
    pub rj_write: Signal<Out, Bit>,
    pub rj_addr: Signal<Out, Bits<64>>,
    pub rj_len: Signal<Out, Bits<13>>,
    /// Payload pieces for the assembler, written with each payload read job:
    /// `skip | len << 6 | last << 19` (the piece's first byte in its beat, its length in bytes,
    /// and whether it ends the packet's payload). `pg_afull`: that FIFO's almost-full flag.
    ///
    /// Bit 20 of the record marks an **inline piece**: its beats come from the inline-data
    /// FIFO (`il_write`), not from a payload read, and no read job is written for it.
    pub pg_afull: Signal<In, Bit>,
    pub pg_write: Signal<Out, Bit>,
    pub pg_data: Signal<Out, Bits<21>>,
    /// Inline data (`IBV_SEND_INLINE`) of at most 256 bytes, the whole payload of one packet
    /// (the path MTU is at least 256), goes to the assembler from the WQE beats this block
    /// already fetched (`ext0`..`ext3`), not by a second DMA read of the SQ ring: one 64-byte
    /// beat per cycle (`il_data`, the inline bytes from offset `64 k`), `ceil(len / 64)` beats
    /// per inline piece, in the order of the pieces. `il_afull`: that FIFO's almost-full flag
    /// (registered here; the FIFO needs 3 entries of margin). Longer inline data (a 512-byte
    /// WQE holds 448 bytes, past the 4 beats kept) is still read from the ring.
    pub il_afull: Signal<In, Bit>,
    pub il_write: Signal<Out, Bit>,
    pub il_data: Signal<Out, Bits<512>>,
    // In-flight table write port.
    pub if_we: Signal<Out, Bit>,
    pub if_addr: Signal<Out, Bits<12>>,
    pub if_data: Signal<Out, InflightRec>,
    /// Write port of the RX engine's READ list table: the checked, translated SGE list of a
    /// READ with several local SGEs, entry `k` at `qpn << 6 | (s mod 4) << 4 | k`, `s` the
    /// READ's number among the QP's READs and atomics.
    pub rl_we: Signal<Out, Bit>,
    pub rl_waddr: Signal<Out, Bits<12>>,
    pub rl_wdata: Signal<Out, ScatterEntryRec>,
    // Local error completions.
    pub lc_full: Signal<In, Bit>,
    pub lc_write: Signal<Out, Bit>,
    pub lc_data: Signal<Out, LocalCompletion>,
    // Write bus of the WQEs-sent counts, for the ACK timer's copy.
    pub sent_we: Signal<Out, Bit>,
    pub sent_waddr: Signal<Out, Bits<6>>,
    pub sent_wdata: Signal<Out, Bits<16>>,
    // Counter pulses.
    pub cnt_tx_req: Signal<Out, Bit>,
    pub cnt_local_err: Signal<Out, Bit>,
    /// The READ/atomic responder's packet generator ([`crate::response_gen::ResponseGen`])
    /// writes the FIFOs in the next cycle: `job_room` is low then.
    pub job_hold: Signal<In, Bit>,
    /// This engine is issuing a request packet or its pieces (`IssuePacket`, `SizePiece`,
    /// `IssuePiece`): the responder's generator must not write next cycle.
    pub job_lock: Signal<Out, Bit>,
    /// Per QP, the number of go-back-N rewinds taken, mod 2 (bit `qpn`): a queued request job
    /// stamped with another value is stale, and the assembler drops it ([`TxJob`] `drop_ok`).
    pub req_epoch: Signal<Out, Bits<64>>,
    /// Packets of QP `cur_qpn` are being emitted (for the ACK timer).
    pub tx_active: Signal<Out, Bit>,
    pub tx_qpn: Signal<Out, Bits<6>>,
    /// A request packet of QP `emit_qpn` was handed to the assembler: `emit_psn` is the PSN
    /// after it (after a READ request, after its responses). Registered; the RX engine keeps
    /// the newest per QP and ignores an ACK, NAK or response for a PSN not yet sent (a ghost).
    pub emit_we: Signal<Out, Bit>,
    pub emit_qpn: Signal<Out, Bits<6>>,
    pub emit_psn: Signal<Out, Bits<24>>,
    tables: ContextTables,
    /// Each QP's send-queue state ([`SqDynRec`]), and the same words for the RX engine's
    /// reads of `ci` (`sent_addr` / `sent_data`).
    dyn_ram: RAM<SqDynRec, 6>,
    sent_ram: RAM<SqDynRec, 6>,
    /// The WQE's gather list after the key checks: each non-empty SGE translated, in order
    /// (16 entries).
    sge_ram: RAM<ScatterEntryRec, 4>,
    /// Beats of the WQE fetch received (`WaitWqeBeats`).
    wb: DFF<Bits<3>>,
    /// The SGE being checked (`WaitWqeBeats` to `LoadSge`): index, address, length, lkey.
    g_idx: DFF<Bits<5>>,
    g_addr: DFF<Bits<64>>,
    g_len: DFF<Bits<32>>,
    g_lkey: DFF<Bits<32>>,
    /// The WQE carries inline data (IBV_SEND_INLINE) / more than one SGE (and no inline data).
    inline_r: DFF<Bit>,
    /// `CheckRoom` (or `WaitWqeBeats` on the head check's inline path): the inline data (1 to
    /// 256 bytes) goes from `ext0`..`ext3` (`il_write`);
    /// its beats minus one; `IssueInline`: the next beat; `il_afull` registered.
    il_r: DFF<Bit>,
    il_nm1: DFF<Bits<2>>,
    il_k: DFF<Bits<2>>,
    il_room: DFF<Bit>,
    /// A payload piece goes out this cycle (its piece record, and its read job unless inline).
    piece: Signal<Local, Bit>,
    len_m1: Signal<Local, Bits<32>>,
    multi_r: DFF<Bit>,
    /// Gather list: every non-empty SGE passed its checks so far, their summed length, and
    /// how many were stored in `sge_ram`.
    all_ok: DFF<Bit>,
    sum_len: DFF<Bits<37>>,
    n_valid: DFF<Bits<5>>,
    /// WQE-shape errors found in `LookupLkey` / `CheckRoom`: more SGEs than the WQE size holds, a sum over
    /// 2^31 bytes, inline data longer than the WQE holds (LOC_LEN_ERR); inline data or several
    /// SGEs for a READ or atomic (LOC_QP_OP_ERR).
    nsge_bad: DFF<Bit>,
    len_bad: DFF<Bit>,
    shape_bad: DFF<Bit>,
    /// UD QP (IBTA Vol 1 9.8), found in `CheckRoom` / `CountList`: the WQE is not a SEND or
    /// SEND_WITH_IMM (LOC_QP_OP_ERR), or its message is longer than one path-MTU packet
    /// (LOC_LEN_ERR).
    ud_op_bad: DFF<Bit>,
    ud_long: DFF<Bit>,
    /// Sending: the gather-list entry at `cur_iova` (`e_idx`) and its bytes left.
    e_idx: DFF<Bits<4>>,
    sge_rem: DFF<Bits<32>>,
    /// The sized packet fits in the current entry / ends exactly at its end (`SizePacket`).
    fits_r: DFF<Bit>,
    exh_r: DFF<Bit>,
    /// A packet spanning entries: its bytes not yet given a piece, and the next piece
    /// (`SizePiece`, `IssuePiece`).
    pkt_left: DFF<Bits<13>>,
    pc_len: DFF<Bits<13>>,
    pc_last: DFF<Bit>,
    pc_exh: DFF<Bit>,
    /// Resuming mid-message with a gather list: bytes still to skip (`WalkList`, `WalkListRead`).
    walk: DFF<Bits<32>>,
    walk_pend: DFF<Bit>,
    /// `walk >= sge_rem`, registered (`WalkList` acts on it; both move only in `ActOnChecks` and `WalkList`).
    walk_ge: DFF<Bit>,
    /// max_rd_atomic as a READ limit (1..=16), registered from the loaded context (it changes
    /// in `TakeQp`, long before `CheckRoom` compares against it).
    rd_limit_r: DFF<Bits<7>>,
    /// READs and atomics outstanding (`reads_sent - acked_reads`), registered: a cycle late,
    /// it can only overstate them (the completer's count only grows, and `reads_sent` moves
    /// in `TakeQp`, `RecordWqe` and `SkipRetired`, never in the cycle before the verdict of
    /// `CheckRoom` or `CountList`).
    reads_out_r: DFF<Bits<7>>,
    /// The gather-list entry being copied to the RX engine's READ list table (`CopyListRead`,
    /// `CopyListWrite`).
    cp_i: DFF<Bits<5>>,
    /// The WQE's slots 1..4 as fetched (SGEs 1..15, four per slot): registers, not a RAM (four
    /// 512-bit words would take 15 block RAMs).
    ext0: DFF<Bits<512>>,
    ext1: DFF<Bits<512>>,
    ext2: DFF<Bits<512>>,
    ext3: DFF<Bits<512>>,
    state: DFF<TxsState>,
    /// The WQE's opcode classes, registered when the WQE arrives.
    wop: DFF<WqeOpClass>,
    /// RETH of the next READ request: the remote address past what was already answered.
    rd_va: DFF<Bits<64>>,
    /// A pending command puts the QP being served in RESET (registered): the engine leaves
    /// the QP at its next wait or WQE boundary, and the command is held until it has.
    rst_here_r: DFF<Bit>,
    /// `cmd_valid` was high in the previous cycle without firing (commands are taken from
    /// their second cycle, once `rst_here_r` has seen them).
    cmd_seen_r: DFF<Bit>,
    rst_cmd: Signal<Local, Bit>,
    /// Rewinds applied per QP, mod 2 (`req_epoch`), and the flip of the served QP's bit,
    /// registered from `TakeQp` (a rewind it applies, not one it finds overtaken: then the
    /// engine resumes after everything already queued, which must still go out).
    rw_epoch: DFF<Bits<64>>,
    rw_flip_r: DFF<Bit>,
    /// It shifted down to the served QP's bit.
    ep_sh: Signal<Local, Bits<64>>,
    /// The emission report, registered (see `emit_we`).
    emit_we_r: DFF<Bit>,
    emit_qpn_r: DFF<Bits<6>>,
    emit_psn_r: DFF<Bits<24>>,
    /// READ WQEs handed to the wire (mod 128, transport-state bits 25..31), and whether the
    /// fetched READ must wait for `max_rd_atomic` (registered in `CheckRoom` or `CountList`).
    reads_sent: DFF<Bits<7>>,
    rd_full: DFF<Bit>,
    /// The fetched WQE is a SEND waiting for the SEND window (32 in flight; registered with
    /// `rd_full`): it waits without stepping aside for another QP's doorbell, so at most about
    /// one QP's window of SENDs is in flight towards the responder (with every waiting QP
    /// stepping aside, 8 QPs put 8 windows of 1 KiB SENDs in flight and overran the
    /// responder's receive buffer on a perfect wire).
    send_wait: DFF<Bit>,
    /// Between WQEs, the next one will have to wait for a READ slot: the prefetch buffer's
    /// head is a READ or atomic (its first beat shown), `max_rd_atomic` READs and atomics are
    /// outstanding, and another QP has work (no rewind of this QP waits). Registered every
    /// cycle, so `NextWqe` steps aside at once instead of taking the WQE through its checks
    /// to `WaitIssueSlot` (5 cycles) and appending WQEs it cannot send (the next QP's `Idle`
    /// then waits for that append): a READ or atomic stream over 8 QPs changes QP every
    /// `max_rd_atomic` WQEs. A wrong guess only costs a visit.
    rd_blk_r: DFF<Bit>,
    /// No READ or atomic slot free while another QP has work, registered (`rd_blk_r` without
    /// the head WQE's terms); `rd_wait_now` is it before the register.
    rd_wait_r: DFF<Bit>,
    rd_wait_now: Signal<Local, Bit>,
    /// 32 or more of the QP's WQEs are in flight (from `in_flight_r`: 2 cycles old): a SEND
    /// waits (`WaitIssueSlot`) until fewer are ([`rnic_contract::LOG_MAX_INFLIGHT_SENDS`]); past 32 a
    /// QP fetches more only while no other QP has work (`FetchLimits`, where the flag is the count
    /// as of `CheckSq`), so QPs share the scheduler and one QP alone gets the whole 64. (At 16,
    /// stop 30's threshold, the WRITE, READ and atomic figures were the same cycle for cycle.)
    send_win_full: DFF<Bit>,
    /// The completer has retired WQEs this engine is about to resend (`CheckSq`).
    behind: DFF<Bit>,
    /// The same, registered every cycle: `CompleteError` skips a WQE the completer has
    /// completed since `CheckSq` (flushed on entering ERR, while this engine re-fetched it
    /// after a rewind), instead of waiting for a retired count that has passed it.
    done_ahead: DFF<Bit>,
    /// The WQE fetcher: the prefetch buffer, fresh fetches sized by the `Fetch*` states, the
    /// fetch-ahead machine ([`crate::wqe_fetcher::AheadStep`]).
    fetch: WqeFetcher,
    /// A beat of the WQE being taken came with a read error (`WaitWqeBeats`): it completes with
    /// IBV_WC_LOC_QP_OP_ERR, marked fatal (the RX engine raises QP_FATAL), and sends nothing.
    wqe_bad: DFF<Bit>,
    /// Fetch ahead: `pf_more` (registered in `CheckSq`) says WQEs are posted after the
    /// buffer's last, the buffer has room for a burst (8 of its 32 beats), fewer than 40 WQEs
    /// are in flight and no append is under way.
    pf_more: DFF<Bit>,
    /// The fetch-ahead machine was idle when the queue checks were registered (with `pf_hit`
    /// and `pf_more`): it can only start in `NextWqe`, so the buffer counts those checks saw
    /// are final.
    ah_idle_r: DFF<Bit>,
    /// The state register holds `NextWqe`: set wherever a state moves to it (and cleared
    /// where a later assignment of the same cycle overrides that), so `NextWqe`'s fetch
    /// decisions start at one flop instead of a decode of the state (the discard reaches the
    /// fetcher's `drop_nz` in 6 LUT levels, not 7).
    at_nw: DFF<Bit>,
    /// `NextWqe` with no retired WQEs to skip and the window open: with `hit_go`, `miss_go` or
    /// `app_go` it takes, fetches or appends.
    next_in: Signal<Local, Bit>,
    /// The queue checks' conjunctions `NextWqe`'s fetch decisions need, registered with them
    /// (so `NextWqe`'s take reaches the fetcher's counters and its buffer from a few flops,
    /// 2 LUT levels, not through a tree of seven checks): the SQ not empty and the next WQE
    /// buffered (`hit_go`), not buffered with no append under way (`miss_go`), buffered with
    /// more posted and room for an append (`app_go`). `q_open`, `hit_now`: the SQ not empty
    /// and the next WQE buffered, as the checks are registered.
    hit_go: DFF<Bit>,
    miss_go: DFF<Bit>,
    app_go: DFF<Bit>,
    q_open: Signal<Local, Bit>,
    hit_now: Signal<Local, Bit>,
    more_now: Signal<Local, Bit>,
    /// The next WQE is in the buffer (registered in `CheckSq`).
    pf_hit: DFF<Bit>,
    /// The packet-job and payload-job FIFOs have room: their almost-full flags (at most one
    /// free slot), registered, and no claim of the response generator (`job_hold`) for the
    /// cycle it is valid in; safe for one job per cycle.
    job_room: DFF<Bit>,
    /// The rewind FIFO's empty flag, a cycle late: a FIFO is read only in a state
    /// that is not re-entered within two cycles, so the late flag never offers a read twice;
    /// the FIFO's head decides nothing in the cycle it is read.
    rw_empty_r: DFF<Bit>,
    /// The WQE's packet count in two halves (`CheckLkey`): whole MTUs, and a partial one.
    nq_r: DFF<Bits<24>>,
    npart_r: DFF<Bit>,
    /// The local SGE lies inside its region (`CheckBounds`, from the registers of `CheckRoom`).
    bounds_r: DFF<Bit>,
    /// A rewind for another QP waits at the head of the rewind FIFO (`CheckSq`, and every cycle),
    /// and another QP's doorbell is offered (registered): a waiting QP steps aside for either
    /// (saving its state and re-arming its ready bit), so neither a rewind nor another QP's
    /// work waits behind it.
    rw_other: DFF<Bit>,
    rw_waiting: DFF<Bit>,
    db_other: DFF<Bit>,
    /// The engine is serving QP `cur_qpn` (from taking its doorbell or rewind in `Idle` until it
    /// is back in `Idle`; not while it only answers READs from `Idle`).
    serving: DFF<Bit>,
    /// The served QP's own doorbell was taken while serving it (see `db_others`): `Idle` puts it
    /// back into the ready set.
    self_rung: DFF<Bit>,
    /// The served QP's producer index may be extended in place by its own doorbell: set in
    /// `LoadQp`, cleared by any context command from then on (a move to SQD, among others, bounds the visit
    /// by the producer index it saved).
    ext_ok: DFF<Bit>,
    /// A context command fired while the engine was in `LoadQp`: `TakeQp` reads the context
    /// again.
    cmd_in_load: DFF<Bit>,
    /// Context commands may be taken this cycle (see `cmd_ready`).
    cmd_ok: DFF<Bit>,
    cur_qpn: DFF<Bits<6>>,
    pi: DFF<Bits<16>>,
    ctx: DFF<QpContextRec>,
    next_psn: DFF<Bits<24>>,
    ci: DFF<Bits<16>>,
    wqe: DFF<WqeRec>,
    rem: DFF<Bits<32>>,
    total: DFF<Bits<32>>,
    cur_iova: DFF<Bits<64>>,
    first: DFF<Bit>,
    status: DFF<Bits<8>>,
    wqe_psn: DFF<Bits<24>>,
    rewind: DFF<Bit>,
    rw_ci: DFF<Bits<16>>,
    rw_psn: DFF<Bits<24>>,
    rw_restart: DFF<Bits<24>>,
    skip_pending: DFF<Bit>,
    flush_req: DFF<Bit>,
    err: DFF<Bit>,
    // Validation pipeline (`CheckLkey`, `CheckRoom`, `ActOnChecks`) and the sized packet
    // (`SizePacket`).
    off_r: DFF<Bits<64>>,
    len_r: DFF<Bits<32>>,
    va_ok: DFF<Bit>,
    key_ok_r: DFF<Bit>,
    off_ok: DFF<Bit>,
    room: DFF<Bits<64>>,
    base_iova: DFF<Bits<64>>,
    skip_bytes_r: DFF<Bits<64>>,
    skip_nz: DFF<Bit>,
    skip_ok: DFF<Bit>,
    mtu_r: DFF<Bits<32>>,
    // Queue checks (`CheckSq`, acted on in `NextWqe`) and the WQE's address.
    sq_empty: DFF<Bit>,
    window_ok: DFF<Bit>,
    /// `in_flight`, registered (the 16-bit difference and a compare after it are too deep for
    /// one cycle).
    in_flight_r: DFF<Bits<16>>,
    rw_mine: DFF<Bit>,
    /// Packets of the WQE being sent (its last PSN is `wqe_psn + npkts - 1`).
    npkts: DFF<Bits<24>>,
    /// A go-back-N request for the current QP waits (sampled every cycle).
    rw_pending: DFF<Bit>,
    plen_r: DFF<Bits<32>>,
    last_r: DFF<Bit>,
    mr: Signal<Local, MrEntryRec>,
    qp_now: Signal<Local, QpContextRec>,
    cmd_qp: Signal<Local, QpContextRec>,
    dyn_now: Signal<Local, SqDynRec>,
    /// The SGE's lkey, by field ([`rnic_contract::mr_entry::key`]).
    lkey: Signal<Local, KeyRec>,
    /// The key of SGE 0 in the prefetch buffer's head beat (`WaitWqeBeats`' first beat).
    beat_lkey: Signal<Local, Bits<32>>,
    beat_key: Signal<Local, KeyRec>,
    len: Signal<Local, Bits<32>>,
    off: Signal<Local, Bits<64>>,
    key_ok: Signal<Local, Bit>,
    bounds_ok: Signal<Local, Bit>,
    mtu: Signal<Local, Bits<32>>,
    plen: Signal<Local, Bits<32>>,
    is_last: Signal<Local, Bit>,
    sq_mask: Signal<Local, Bits<16>>,
    send_flags: Signal<Local, Bits<8>>,
    skip_pkts: Signal<Local, Bits<24>>,
    skip_bytes: Signal<Local, Bits<64>>,
    rw_behind: Signal<Local, Bits<16>>,
    psn_lo: Signal<Local, Bits<4>>,
    is_send: Signal<Local, Bit>,
    wqe_psn_lo: Signal<Local, Bits<4>>,
    pkt_in_msg: Signal<Local, Bits<4>>,
    is_read: Signal<Local, Bit>,
    has_imm: Signal<Local, Bit>,
    wop_now: Signal<Local, WqeOpClass>,
    is_atomic: Signal<Local, Bit>,
    se_now: Signal<Local, Bit>,
    is_fadd: Signal<Local, Bit>,
    op_now: Signal<Local, Bits<8>>,
    /// The QP is UD ([`rnic_contract::qp_context::QP_TYPE`]); the WQE as a UD SEND reads it
    /// (`UdWqeRec`: [`rnic_contract::wqe::UD_REMOTE_QPN`] .. `UD_DEST_MAC`, in the bytes an
    /// RDMA WQE uses for its remote address and atomic operands).
    ud: Signal<Local, Bit>,
    wqe_bits: Signal<Local, Bits<512>>,
    ud_wqe: Signal<Local, UdWqeRec>,
    wqe_qkey: Signal<Local, Bits<32>>,
    ud_qkey: Signal<Local, Bits<32>>,
    req_op: Signal<Local, Bits<8>>,
    rd_limit: Signal<Local, Bits<7>>,
    mra: Signal<Local, Bits<8>>,
    cmd_we: Signal<Local, Bit>,
    own_we: Signal<Local, Bit>,
    st_psn: Signal<Local, Bits<24>>,
    st_ci: Signal<Local, Bits<16>>,
    st_err: Signal<Local, Bit>,
    st_reads: Signal<Local, Bits<7>>,
    psn_after: Signal<Local, Bits<24>>,
    ci_next: Signal<Local, Bits<16>>,
    in_flight: Signal<Local, Bits<16>>,
    reads_next: Signal<Local, Bits<7>>,
    reads_out: Signal<Local, Bits<7>>,
    mtu_mask: Signal<Local, Bits<32>>,
    mtu_mask12: Signal<Local, Bits<12>>,
    len_lo12: Signal<Local, Bits<12>>,
    fetch_m1: Signal<Local, Bits<3>>,
    /// `fetch_m1`, registered: the stride is the served QP's, loaded in `TakeQp` at least two
    /// cycles before a WQE is taken (`CheckSq` comes between), and the beat count's compare
    /// then starts at a register on its way into `pf_n` (7 LUT levels from `ctx` otherwise).
    fetch_m1_r: DFF<Bits<3>>,
    /// `fetch_m1 == 0` (one-slot WQEs), registered the same way.
    one_slot_r: DFF<Bit>,
    /// `inline_max`, registered (`ctx` is loaded in `TakeQp`, cycles before `CheckRoom`
    /// compares a WQE's inline length with it).
    inline_max_r: DFF<Bits<32>>,
    /// The head WQE beat of the prefetch buffer, and whether `WaitWqeBeats` may take it.
    wqe_ok: Signal<Local, Bit>,
    wqe_beat: Signal<Local, Bits<512>>,
    /// The same beat as a WQE's first (its slot 0).
    beat_rec: Signal<Local, WqeRec>,
    /// IBV_SEND_INLINE in that beat's send flags.
    beat_inline: Signal<Local, Bit>,
    /// The doorbell offered (`db_data`), by field.
    db_rec: Signal<Local, DoorbellRec>,
    pf_pop: Signal<Local, Bit>,
    /// `NextWqe` takes the head beat (a one-beat WQE, buffered); the beat taken is a WQE's
    /// slot 0.
    take_now: Signal<Local, Bit>,
    /// `take_now` but for the beat being there (from registers only).
    take_want: Signal<Local, Bit>,
    first_beat: Signal<Local, Bit>,
    drop_pop: Signal<Local, Bit>,
    sge_limit: Signal<Local, Bits<8>>,
    inline_max: Signal<Local, Bits<32>>,
    ext_lane: Signal<Local, SgeRec>,
    ext_beat: Signal<Local, Bits<512>>,
    ext_lanes: Signal<Local, SgeLanesRec>,
    ext_sel: Signal<Local, Bits<4>>,
    nxt_iova: Signal<Local, Bits<64>>,
    nxt_len: Signal<Local, Bits<32>>,
    e_next: Signal<Local, Bits<4>>,
    advance: Signal<Local, Bit>,
    pg_len: Signal<Local, Bits<13>>,
    pg_last: Signal<Local, Bit>,
    pg_skip: Signal<Local, Bits<6>>,
    ext_slot: Signal<Local, Bits<2>>,
    g_m1: Signal<Local, Bits<5>>,
    g_p1: Signal<Local, Bits<8>>,
    /// The head check ([`crate::head_check::HeadCheck`]): the checks of the WQE at the
    /// prefetch buffer's head, run while the WQE before it is acted on, recorded and issued.
    hc: HeadCheck,
    /// `NextWqe` found the head check ready for an inline RDMA WRITE that fits its fast path
    /// (at most 256 bytes and what the WQE holds; 0 bytes sends no inline beat): `WaitWqeBeats` goes on to `ActOnChecks`
    /// with it after the WQE's last slot (its pops give the check itself up).
    fast_inl: DFF<Bit>,
    /// The head check is given up this cycle (the buffer's head moves, a context command, a
    /// QP load).
    hc_kill: Signal<Local, Bit>,
    /// `NextWqe` takes the head WQE with the head check's verdicts.
    hc_fast: Signal<Local, Bit>,
    /// This cycle goes to `ActOnChecks` with the head check's flags.
    hc_take: Signal<Local, Bit>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

// The send window below (`in_flight < 64`, the fetch limit `64 - in_flight`) and the in-flight
// table's address (`qpn << 6 | index mod 64`, `if_addr`) are the contract's window.
// A message's last packet with immediate is its request opcode `| 1` (IBTA Vol 1 Table 38).
const _: () = {
    use rnic_contract::bth::opcode as o;
    assert!(
        o::RDMA_WRITE_LAST | 1 == o::RDMA_WRITE_LAST_WITH_IMMEDIATE
            && o::RDMA_WRITE_ONLY | 1 == o::RDMA_WRITE_ONLY_WITH_IMMEDIATE
            && o::SEND_LAST | 1 == o::SEND_LAST_WITH_IMMEDIATE
            && o::SEND_ONLY | 1 == o::SEND_ONLY_WITH_IMMEDIATE
    );
};
const _: () = assert!(rnic_contract::LOG_MAX_INFLIGHT_WQES == 6 && rnic_contract::LOG_NUM_QPS == 6);
// A WQE's beats fetched (`fetch_m1` + 1): the whole WQE up to 4 slots, 5 for 8 (the last SGE
// ends in slot 4; later slots hold only inline data, read as payload).
const _: () = {
    use rnic_contract::wqe;
    assert!((wqe::sge_offset(wqe::MAX_SGE - 1) + 16).div_ceil(wqe::BYTES) == 5 && wqe::MAX_LOG_STRIDE == 3);
};
// A SEND's window (`in_flight >= 32` holds it in `WaitIssueSlot`).
const _: () = assert!(rnic_contract::LOG_MAX_INFLIGHT_SENDS == 5);

impl Logic for TxScheduler {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            pf_more,
            ah_idle_r,
            hit_go,
            miss_go,
            at_nw,
            app_go,
            one_slot_r,
            pf_hit,
            cur_qpn,
            pi,
            ctx,
            next_psn,
            ci,
            wqe,
            rem,
            total,
            cur_iova,
            first,
            status,
            wqe_psn,
            rewind,
            rw_ci,
            rw_psn,
            rw_restart,
            skip_pending,
            flush_req,
            err,
            off_r,
            len_r,
            va_ok,
            key_ok_r,
            off_ok,
            room,
            base_iova,
            skip_bytes_r,
            skip_nz,
            skip_ok,
            mtu_r,
            plen_r,
            last_r,
            sq_empty,
            window_ok,
            in_flight_r,
            rw_mine,
            npkts,
            rw_pending,
            wop,
            rd_va,
            reads_sent,
            rd_full,
            send_wait,
            rd_blk_r,
            rd_wait_r,
            send_win_full,
            behind,
            done_ahead,
            job_room,
            rw_empty_r,
            nq_r,
            npart_r,
            bounds_r,
            rw_other,
            rw_waiting,
            db_other,
            serving,
            self_rung,
            ext_ok,
            cmd_in_load,
            fetch_m1_r,
            inline_max_r,
            cmd_ok,
            wb,
            g_idx,
            g_addr,
            g_len,
            g_lkey,
            inline_r,
            il_r,
            il_nm1,
            il_k,
            il_room,
            multi_r,
            all_ok,
            sum_len,
            n_valid,
            nsge_bad,
            len_bad,
            shape_bad,
            wqe_bad,
            ud_op_bad,
            ud_long,
            e_idx,
            sge_rem,
            fits_r,
            exh_r,
            pkt_left,
            pc_len,
            pc_last,
            pc_exh,
            walk,
            walk_pend,
            walk_ge,
            ext0,
            ext1,
            ext2,
            ext3,
            cp_i,
            rd_limit_r,
            reads_out_r,
            emit_we_r,
            rw_epoch,
            rw_flip_r,
            emit_qpn_r,
            emit_psn_r,
            rst_here_r,
            cmd_seen_r,
            fast_inl
        );
        self.db_rec.next = self.db_data.val().into();
        self.db_other.d.next = !self.db_empty.val() & (self.db_rec.val().qpn != self.cur_qpn.q.val());
        self.rw_waiting.d.next = !self.rw_empty.val() & (self.rw_data.val().qpn != self.cur_qpn.q.val());
        self.rearm.next = false;
        self.rearm_qpn.next = self.cur_qpn.q.val();
        self.sq_stop.next = false;
        self.sq_stop_qpn.next = self.cur_qpn.q.val();
        self.job_room.d.next =
            !self.job_afull.val() & !self.rj_afull.val() & !self.pg_afull.val() & !self.job_hold.val();
        self.rw_empty_r.d.next = self.rw_empty.val();
        self.rw_pending.d.next = !self.rw_empty.val() & (self.rw_data.val().qpn == self.cur_qpn.q.val());
        self.dyn_ram.read_clock.next = self.clock.val();
        self.dyn_ram.write_clock.next = self.clock.val();
        self.sent_ram.read_clock.next = self.clock.val();
        self.sent_ram.write_clock.next = self.clock.val();
        self.sge_ram.read_clock.next = self.clock.val();
        self.sge_ram.write_clock.next = self.clock.val();

        // Table reads: addresses follow the current QP and WQE.
        clock!(self, clock, tables, fetch);
        self.fetch.reset.next = self.reset.val();
        self.tables.qp_addr.next = self.cur_qpn.q.val();
        self.dyn_ram.read_address.next = self.cur_qpn.q.val();
        self.lkey.next = self.g_lkey.q.val().into();
        self.tables.mr_addr.next = self.lkey.val().index;
        self.acked_addr.next = self.cur_qpn.q.val();
        self.sent_ram.read_address.next = self.sent_addr.val();
        self.sent_data.next = self.sent_ram.read_data.val().ci;
        self.qp_now.next = self.tables.qp.val();
        self.mr.next = self.tables.mr.val();
        self.dyn_now.next = self.dyn_ram.read_data.val();

        // Context commands write the tables; transport state only when asked to (INIT_SQ_PSN).
        self.cmd_qp.next = bit_cast::<448, 512>(self.cmd_record.val()).into();
        self.tables.cmd_fire.next = self.cmd_fire.val();
        self.tables.cmd_op.next = self.cmd_op.val();
        self.tables.cmd_index.next = self.cmd_index.val();
        self.tables.cmd_record.next = self.cmd_record.val();
        // Commands are taken when this engine cannot write its transport state in the same
        // cycle (`RecordWqe`, `CompleteError`, `SaveAndYield` and `SkipRetired` do): the flag is
        // registered from the states that cannot lead to one of those next cycle, so the handshake starts at a flop.
        self.cmd_ok.d.next = !((self.state.q.val() == TxsState::TakeQp)
            | (self.state.q.val() == TxsState::RecordWqe)
            | (self.state.q.val() == TxsState::CompleteError)
            | (self.state.q.val() == TxsState::SaveAndYield)
            | (self.state.q.val() == TxsState::ActOnChecks)
            | (self.state.q.val() == TxsState::NextWqe)
            | (self.state.q.val() == TxsState::WaitIssueSlot)
            | (self.state.q.val() == TxsState::SkipRetired)
            | (self.state.q.val() == TxsState::CopyListWrite)
            | (self.state.q.val() == TxsState::FetchLimits));
        // A command that puts the QP being served in RESET waits until this engine has left
        // the QP, its fetch-ahead machine included (the driver frees the QP's rings once the
        // command is taken, so nothing may be fetched from them afterwards); waiting states give way to it (see `rst_here_r`). The
        // checks are registered, and a command is taken only from its second cycle, so the
        // handshake still starts at registers.
        self.cmd_seen_r.d.next = self.cmd_valid.val() & !self.cmd_fire.val();
        self.rst_here_r.d.next = self.cmd_valid.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_qp.val().state == self.nums.val().qps_reset)
            & (self.cmd_index.val().get_bits::<6>(0) == self.cur_qpn.q.val())
            & ((self.state.q.val() != TxsState::Idle) | !self.fetch.ahead_idle.val());
        self.cmd_ready.next = self.cmd_ok.q.val() & self.cmd_seen_r.q.val() & !self.rst_here_r.q.val();
        // The transport state is written by a context command (INIT_SQ_PSN) or by this engine
        // (`own_we`, in states that refuse commands); the two enables are ORed after the state
        // machine, so a command's write enable does not pass through its multiplexers.
        // INIT_SQ_PSN sets the first PSN; a context written in RESET starts the QP's transport
        // state afresh too (no error flag, ci 0), so nothing of the last connection survives.
        self.rst_cmd.next = self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.cmd_qp.val().state == self.nums.val().qps_reset);
        self.cmd_we.next = (self.cmd_fire.val()
            & (self.cmd_op.val() == self.nums.val().cmd_write_qp)
            & self.cmd_qp.val().init_sq_psn.any())
            | self.rst_cmd.val();
        self.own_we.next = false;
        // The transport-state word this engine saves (`RecordWqe`, `CompleteError`,
        // `SaveAndYield`, `SkipRetired`): the current
        // registers unless a state names other values; packed once, after the state machine.
        self.st_psn.next = self.next_psn.q.val();
        self.st_ci.next = self.ci.q.val();
        self.st_err.next = self.err.q.val();
        self.st_reads.next = self.reads_sent.q.val();
        self.dyn_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.dyn_ram.write_data.next.next_psn = self.cmd_qp.val().sq_psn;
        self.dyn_ram.write_data.next.err = 0.into();
        self.dyn_ram.write_data.next.reads_sent = 0.into();
        self.dyn_ram.write_data.next.ci = 0.into();
        self.dyn_ram.write_data.next.pi = 0.into();

        // Derived values.
        self.len.next = self.g_len.q.val();
        self.off.next = self.g_addr.q.val() - self.mr.val().va;
        self.key_ok.next = self.mr.val().valid.any()
            & (self.mr.val().tag == self.lkey.val().tag)
            & (self.lkey.val().above == 0)
            & (self.mr.val().pd == self.ctx.q.val().pd);
        self.bounds_ok.next =
            self.va_ok.q.val() & self.off_ok.q.val() & (bit_cast::<64, 32>(self.len_r.q.val()) <= self.room.q.val());
        self.mtu.next = bit_cast::<32, 8>(128.into()) << bit_cast::<32, 3>(self.ctx.q.val().path_mtu);
        self.mtu_r.d.next = self.mtu.val();
        self.is_last.next = self.last_r.q.val();
        self.plen.next = self.plen_r.q.val();
        // Resuming a WQE mid-message after a sequence NAK: the packets before the restart PSN
        // already arrived.
        self.skip_pkts.next = self.rw_restart.q.val() - self.next_psn.q.val();
        self.skip_bytes.next =
            bit_cast::<64, 24>(self.skip_pkts.val()) << (bit_cast::<64, 3>(self.ctx.q.val().path_mtu) + 7);
        self.rw_behind.next = self.acked_data.val() - self.rw_ci.q.val();
        // max_rd_atomic, taken as 1..=16.
        // Packets of a message, ceil(len / MTU), in two registered halves: len >> log2(MTU)
        // and whether bits below the MTU remain (a shifted-constant mask, 12 bits).
        self.mtu_mask.next = !(bit_cast::<32, 12>(0xFFF.into()) << (bit_cast::<32, 3>(self.ctx.q.val().path_mtu) + 7));
        self.mtu_mask12.next = self.mtu_mask.val().get_bits::<12>(0);
        self.len_lo12.next = self.len.val().get_bits::<12>(0);
        self.mra.next = self.ctx.q.val().max_rd_atomic;
        self.rd_limit.next = bit_cast::<7, 5>(self.mra.val().get_bits::<5>(0));
        if self.mra.val() > 16 {
            self.rd_limit.next = 16.into();
        }
        if self.mra.val() == 0 {
            self.rd_limit.next = 1.into();
        }
        self.rd_limit_r.d.next = self.rd_limit.val();
        self.reads_out.next = self.reads_sent.q.val() - self.acked_reads.val();
        self.reads_out_r.d.next = self.reads_out.val();
        // Sums packed into the transport-state word are formed at their own width first:
        // `bit_cast` to a wider type masks at the wider width, so a carry would spill into the
        // next field (TOOLCHAIN-NOTES).
        self.psn_after.next = self.wqe_psn.q.val() + self.npkts.q.val();
        self.ci_next.next = self.ci.q.val() + 1;
        // WQEs recorded and not yet retired, mod 2^16 (a Local, so the difference wraps at 16
        // bits before it is compared).
        self.in_flight.next = self.ci.q.val() - self.acked_data.val();
        self.done_ahead.d.next = self.in_flight.val().get_bit(15);
        self.reads_next.next = self.reads_sent.q.val();
        if self.is_read.val() {
            self.reads_next.next = self.reads_sent.q.val() + 1;
        }
        // (A shifted constant, not `(1 << n) - 1`: no carry chain before the address adder.)
        self.sq_mask.next = !(bit_cast::<16, 16>(0xFFFF.into()) << bit_cast::<16, 4>(self.ctx.q.val().sq_log_size));

        // WQE geometry by SQ_LOG_STRIDE: beats fetched (slots 0..4 at most: SGE 15 ends in slot
        // 4; later slots hold only inline data past 256 bytes, which is read as payload), SGEs and
        // inline bytes the WQE holds (rnic_contract::wqe).
        self.fetch_m1.next = 0.into();
        self.sge_limit.next = 1.into();
        self.inline_max.next = 0.into();
        if self.ctx.q.val().sq_log_stride == 1 {
            self.fetch_m1.next = 1.into();
            self.sge_limit.next = self.nums.val().wqe_sges_1;
            self.inline_max.next = self.nums.val().wqe_inline_1;
        }
        if self.ctx.q.val().sq_log_stride == 2 {
            self.fetch_m1.next = 3.into();
            self.sge_limit.next = self.nums.val().wqe_sges_2;
            self.inline_max.next = self.nums.val().wqe_inline_2;
        }
        if self.ctx.q.val().sq_log_stride == 3 {
            self.fetch_m1.next = 4.into();
            self.sge_limit.next = self.nums.val().wqe_sges_3;
            self.inline_max.next = self.nums.val().wqe_inline_3;
        }
        self.fetch_m1_r.d.next = self.fetch_m1.val();
        self.one_slot_r.d.next = self.fetch_m1.val() == 0;
        self.inline_max_r.d.next = self.inline_max.val();
        // The WQE fetcher: the served QP, its ring, and the main machine's fetch steps.
        self.fetch.qpn.next = self.cur_qpn.q.val();
        self.fetch.ci.next = self.ci.q.val();
        self.fetch.pi.next = self.pi.q.val();
        self.fetch.sq_base.next = self.ctx.q.val().sq_base;
        self.fetch.sq_log_stride.next = self.ctx.q.val().sq_log_stride;
        self.fetch.sq_mask.next = self.sq_mask.val();
        self.fetch.in_flight.next = self.in_flight.val();
        self.fetch.in_flight_r.next = self.in_flight_r.q.val();
        self.fetch.size_limits.next = self.state.q.val() == TxsState::FetchLimits;
        self.fetch.size_saturate.next = self.state.q.val() == TxsState::FetchSaturate;
        self.fetch.size_minima.next = self.state.q.val() == TxsState::FetchMinima;
        self.fetch.size_size.next = self.state.q.val() == TxsState::FetchSize;
        self.fetch.fetch_wait.next = self.state.q.val() == TxsState::FetchWqe;
        // `NextWqe`'s fetch decisions (its branches below), flat from registers: the next WQE
        // is wanted and not buffered (with no append under way): discard and fetch it; it is
        // buffered and more are posted: append.
        self.next_in.next = self.at_nw.q.val() & !self.behind.q.val() & self.window_ok.q.val();
        self.fetch.discard.next = self.next_in.val() & self.miss_go.q.val();
        // (No fetch-ahead for a QP about to step aside for want of a READ slot: its beats would
        // only be dropped, and the next QP's fetch would wait for the append to issue.
        // `rd_blk_r` is `rd_wait_r` with the head WQE's terms, so it needs no term of its own.)
        self.fetch.append.next = self.next_in.val() & self.app_go.q.val() & !self.rd_wait_r.q.val();
        self.fetch.cmd_fire.next = self.cmd_fire.val();
        self.fetch.ar_ready.next = self.wqe_ar_ready.val();
        self.fetch.r_valid.next = self.wqe_r_valid.val();
        self.fetch.r_data.next = self.wqe_r_data.val();
        self.fetch.r_err.next = self.wqe_r_err.val();
        self.wqe_ar_valid.next = self.fetch.ar_valid.val();
        self.wqe_ar_addr.next = self.fetch.ar_addr.val();
        self.wqe_ar_len.next = self.fetch.ar_len.val();
        self.wqe_beat.next = self.fetch.beat.val();
        self.beat_rec.next = self.wqe_beat.val().into();
        self.beat_lkey.next = self.beat_rec.val().sge0_lkey;
        self.beat_key.next = self.beat_lkey.val().into();
        self.beat_inline.next = (self.beat_rec.val().send_flags & self.nums.val().sf_inline) != 0;
        if ((self.state.q.val() == TxsState::WaitWqeBeats) & (self.wb.q.val() == 0))
            | (self.state.q.val() == TxsState::NextWqe)
        {
            // A WQE's first beat: its SGE 0 key is read as the beat arrives (`g_lkey` holds it
            // from the next cycle), so `CheckLkey` follows the last beat.
            self.tables.mr_addr.next = self.beat_key.val().index;
        }
        self.wqe_ok.next = self.fetch.beat_ok.val();
        self.drop_pop.next = self.fetch.drop_due.val();
        // `NextWqe` takes a one-beat WQE that is at the buffer's head itself (no
        // `WaitWqeBeats`).
        self.take_want.next =
            self.next_in.val() & self.hit_go.q.val() & !self.rd_blk_r.q.val() & self.one_slot_r.q.val();
        self.take_now.next = self.take_want.val() & self.wqe_ok.val();
        self.pf_pop.next = ((self.state.q.val() == TxsState::WaitWqeBeats) & self.wqe_ok.val()) | self.take_now.val();
        self.first_beat.next =
            self.take_now.val() | ((self.state.q.val() == TxsState::WaitWqeBeats) & (self.wb.q.val() == 0));
        // The same takes, as intents from registers only (the fetcher pops if `beat_ok`).
        self.fetch.pop_wait.next = self.state.q.val() == TxsState::WaitWqeBeats;
        self.fetch.pop_next.next = self.take_want.val();
        self.fetch.last_slot.next =
            (self.state.q.val() == TxsState::WaitWqeBeats) & (self.wb.q.val() == self.fetch_m1_r.q.val());
        // Slots 1..4 of the WQE as they arrive; SGE k >= 1 is lane (k-1) mod 4 of slot
        // 1 + (k-1) / 4.
        if self.pf_pop.val() {
            // A read error on any of the WQE's beats spoils the WQE.
            self.wqe_bad.d.next = self.wqe_bad.q.val() | self.fetch.beat_err.val();
            if self.first_beat.val() {
                self.wqe_bad.d.next = self.fetch.beat_err.val();
            }
        }
        if (self.state.q.val() == TxsState::WaitWqeBeats) & self.wqe_ok.val() {
            if self.wb.q.val() == 1 {
                self.ext0.d.next = self.wqe_beat.val();
            }
            if self.wb.q.val() == 2 {
                self.ext1.d.next = self.wqe_beat.val();
            }
            if self.wb.q.val() == 3 {
                self.ext2.d.next = self.wqe_beat.val();
            }
            if self.wb.q.val() == 4 {
                self.ext3.d.next = self.wqe_beat.val();
            }
        }
        self.g_m1.next = self.g_idx.q.val() - 1;
        self.g_p1.next = bit_cast::<8, 5>(self.g_idx.q.val()) + 1;
        self.ext_slot.next = self.g_m1.val().get_bits::<2>(2);
        self.ext_beat.next = self.ext0.q.val();
        if self.ext_slot.val() == 1 {
            self.ext_beat.next = self.ext1.q.val();
        }
        if self.ext_slot.val() == 2 {
            self.ext_beat.next = self.ext2.q.val();
        }
        if self.ext_slot.val() == 3 {
            self.ext_beat.next = self.ext3.q.val();
        }
        self.walk_ge.d.next = self.walk.q.val() >= self.sge_rem.q.val();
        self.ext_sel.next = bit_cast::<4, 2>(self.g_m1.val().get_bits::<2>(0));
        self.ext_lanes.next = self.ext_beat.val().into();
        self.ext_lane.next = self.ext_lanes.val().lane0.into();
        if self.ext_sel.val() == 1 {
            self.ext_lane.next = self.ext_lanes.val().lane1.into();
        }
        if self.ext_sel.val() == 2 {
            self.ext_lane.next = self.ext_lanes.val().lane2.into();
        }
        if self.ext_sel.val() == 3 {
            self.ext_lane.next = self.ext_lanes.val().lane3.into();
        }
        // The checked gather list: entry `n_valid` written in `KeepSge`; the entry after the
        // current one is always being read, so moving on costs no cycle.
        self.sge_ram.write_enable.next = (self.state.q.val() == TxsState::KeepSge) & (self.g_len.q.val() != 0);
        self.sge_ram.write_address.next = self.n_valid.q.val().get_bits::<4>(0);
        self.sge_ram.write_data.next.iova = self.base_iova.q.val();
        self.sge_ram.write_data.next.length = self.g_len.q.val();
        self.e_next.next = self.e_idx.q.val() + 1;
        self.sge_ram.read_address.next = self.e_next.val();
        // `CopyListRead` / `CopyListWrite` copy a READ's list to the RX engine, entry `cp_i`
        // (read in the first, written in the second).
        self.rl_we.next = false;
        self.rl_waddr.next = bit_cast::<12, 6>(self.cur_qpn.q.val()) << 6
            | bit_cast::<12, 2>(self.reads_sent.q.val().get_bits::<2>(0)) << 4
            | bit_cast::<12, 4>(self.cp_i.q.val().get_bits::<4>(0));
        self.rl_wdata.next = self.sge_ram.read_data.val();
        if (self.state.q.val() == TxsState::CopyListRead) | (self.state.q.val() == TxsState::CopyListWrite) {
            self.sge_ram.read_address.next = self.cp_i.q.val().get_bits::<4>(0);
        }
        self.nxt_iova.next = self.sge_ram.read_data.val().iova;
        self.nxt_len.next = self.sge_ram.read_data.val().length;
        self.advance.next = false;
        self.pg_skip.next = self.cur_iova.q.val().get_bits::<6>(0);
        if self.il_r.q.val() {
            // Inline beats start at the data's first byte, whatever the ring's alignment.
            self.pg_skip.next = 0.into();
        }
        self.pg_len.next = self.plen.val().get_bits::<13>(0);
        self.pg_last.next = true;

        // Outputs, default idle.
        self.db_read.next = false;
        self.rw_read.next = false;
        self.job_write.next = false;
        self.piece.next = false;
        self.il_room.d.next = !self.il_afull.val();
        self.len_m1.next = self.len_r.q.val() - 1;
        self.rj_addr.next = self.cur_iova.q.val();
        self.rj_len.next = self.plen.val().get_bits::<13>(0);
        // The WQE's opcode classes (ibv_wr_opcode), registered as the WQE arrives (the seven
        // opcodes the NIC implements are the lowest: `numbers`).
        self.op_now.next = self.beat_rec.val().opcode;
        self.wop_now.next.send =
            (self.op_now.val() == self.nums.val().wr_send) | (self.op_now.val() == self.nums.val().wr_send_with_imm);
        self.wop_now.next.imm = (self.op_now.val() == self.nums.val().wr_rdma_write_with_imm)
            | (self.op_now.val() == self.nums.val().wr_send_with_imm);
        self.wop_now.next.read_or_atomic = (self.op_now.val() == self.nums.val().wr_rdma_read)
            | (self.op_now.val() == self.nums.val().wr_atomic_cmp_and_swp)
            | (self.op_now.val() == self.nums.val().wr_atomic_fetch_and_add);
        self.wop_now.next.implemented = self.op_now.val() <= self.nums.val().wr_atomic_fetch_and_add;
        self.wop_now.next.atomic = (self.op_now.val() == self.nums.val().wr_atomic_cmp_and_swp)
            | (self.op_now.val() == self.nums.val().wr_atomic_fetch_and_add);
        self.wop_now.next.fetch_add = self.op_now.val() == self.nums.val().wr_atomic_fetch_and_add;
        // No READ or atomic slot free while another QP has work (and no rewind of this one
        // waits): a READ or atomic at the buffer's head steps aside (`rd_blk_r`), and so does
        // the QP when its next WQE is not at the head yet (`rd_wait_r`, stop 39: with READs
        // taken by the head check every 4 cycles it reaches the next before the prefetch has
        // it, and would otherwise take it through the checks once it came, then wait).
        self.rd_wait_now.next = (self.reads_out.val() >= self.rd_limit_r.q.val())
            & !self.db_empty.val()
            & (self.db_rec.val().qpn != self.cur_qpn.q.val())
            & !(!self.rw_empty.val() & (self.rw_data.val().qpn == self.cur_qpn.q.val()));
        self.rd_wait_r.d.next = self.rd_wait_now.val();
        self.rd_blk_r.d.next = self.wqe_ok.val() & self.wop_now.val().read_or_atomic & self.rd_wait_now.val();
        self.is_send.next = self.wop.q.val().send;
        self.in_flight_r.d.next = self.in_flight.val();
        self.send_win_full.d.next = self.in_flight_r.q.val() >= 32;
        self.has_imm.next = self.wop.q.val().imm;
        self.is_read.next = self.wop.q.val().read_or_atomic;
        self.emit_we_r.d.next = false;
        self.emit_qpn_r.d.next = self.cur_qpn.q.val();
        self.emit_psn_r.d.next = self.next_psn.q.val() + 1;
        if self.is_read.val() {
            self.emit_psn_r.d.next = self.wqe_psn.q.val() + self.npkts.q.val();
        }
        self.emit_we.next = self.emit_we_r.q.val();
        self.emit_qpn.next = self.emit_qpn_r.q.val();
        self.emit_psn.next = self.emit_psn_r.q.val();
        self.is_atomic.next = self.wop.q.val().atomic;
        self.is_fadd.next = self.wop.q.val().fetch_add;
        // Request opcodes (IBTA Vol 1 Table 38): RDMA WRITE or SEND FIRST/MIDDLE/LAST/ONLY;
        // the last packet of a message with immediate is the next opcode (LAST/ONLY WITH
        // IMMEDIATE, carrying an ImmDt: `| 1`, asserted below); an RDMA READ is one READ
        // REQUEST with a RETH and no payload, whose responses use the next ceil(len / MTU)
        // PSNs.
        self.req_op.next = self.nums.val().op_rdma_write_middle;
        if self.first.q.val() & self.is_last.val() {
            self.req_op.next = self.nums.val().op_rdma_write_only;
        } else if self.first.q.val() {
            self.req_op.next = self.nums.val().op_rdma_write_first;
        } else if self.is_last.val() {
            self.req_op.next = self.nums.val().op_rdma_write_last;
        }
        if self.is_send.val() {
            self.req_op.next = self.nums.val().op_send_middle;
            if self.first.q.val() & self.is_last.val() {
                self.req_op.next = self.nums.val().op_send_only;
            } else if self.first.q.val() {
                self.req_op.next = self.nums.val().op_send_first;
            } else if self.is_last.val() {
                self.req_op.next = self.nums.val().op_send_last;
            }
        }
        self.job.next.opcode = self.req_op.val();
        if self.has_imm.val() & self.is_last.val() {
            self.job.next.opcode = self.req_op.val() | 1;
        }
        if self.is_read.val() {
            self.job.next.opcode = self.nums.val().op_rdma_read_request;
        }
        // An atomic is one COMPARE SWAP or FETCH ADD with an AtomicETH, one
        // PSN, answered by one ATOMIC ACKNOWLEDGE (9.4.5).
        if self.is_atomic.val() {
            self.job.next.opcode = self.nums.val().op_compare_swap;
            if self.is_fadd.val() {
                self.job.next.opcode = self.nums.val().op_fetch_add;
            }
        }
        // AckReq on the last packet of a message and on every 16th packet of a long one, so
        // the responder acknowledges a long message while it is still arriving (9.7.5.1.1).
        self.psn_lo.next = self.next_psn.q.val().get_bits::<4>(0);
        self.wqe_psn_lo.next = self.wqe_psn.q.val().get_bits::<4>(0);
        self.pkt_in_msg.next = self.psn_lo.val() - self.wqe_psn_lo.val();
        self.job.next.ackreq = bit_cast::<1, 1>((self.is_last.val() | (self.pkt_in_msg.val() == 15)).into());
        self.job.next.has_reth = bit_cast::<1, 1>(
            (((self.first.q.val() & !self.is_send.val()) | self.is_read.val()) & !self.is_atomic.val()).into(),
        );
        self.job.next.has_atomic_eth = bit_cast::<1, 1>(self.is_atomic.val().into());
        self.job.next.has_atomic_ack = 0.into();
        // AtomicETH: Swap Data (CMP_AND_SWP) or Add Data (FETCH_AND_ADD), Compare Data.
        self.job.next.at_swap = self.wqe.q.val().swap;
        self.job.next.at_cmp = self.wqe.q.val().compare_add;
        if self.is_fadd.val() {
            self.job.next.at_swap = self.wqe.q.val().compare_add;
            self.job.next.at_cmp = 0.into();
        }
        self.job.next.has_ext4 =
            bit_cast::<1, 1>((self.has_imm.val() & self.is_last.val() & !self.is_read.val()).into());
        self.job.next.ext4 = self.wqe.q.val().imm_data;
        // IBV_SEND_SOLICITED: BTH.SE on the last packet of a SEND or a WRITE with immediate
        // (the packets that complete a receive, 9.2.3, ibv_post_send(3)).
        self.send_flags.next = self.wqe.q.val().send_flags;
        self.se_now.next = ((self.send_flags.val() & self.nums.val().sf_solicited) != 0)
            & self.is_last.val()
            & (self.is_send.val() | self.has_imm.val())
            & !self.is_read.val();
        self.job.next.se = bit_cast::<1, 1>(self.se_now.val().into());
        self.job.next.psn = self.next_psn.q.val();
        self.job.next.dest_qpn = self.ctx.q.val().dest_qpn;
        self.job.next.pkey = self.ctx.q.val().pkey;
        self.job.next.udp_sport = self.ctx.q.val().udp_sport;
        self.job.next.dest_ip = self.ctx.q.val().dest_ip;
        self.job.next.dest_mac = self.ctx.q.val().dest_mac;
        self.job.next.reth_va = self.rd_va.q.val();
        self.job.next.reth_rkey = self.wqe.q.val().rkey;
        self.job.next.reth_len = self.total.q.val();
        if self.is_read.val() {
            // A READ resumed after a partial answer asks only for the rest.
            self.job.next.reth_len = self.rem.q.val();
        }
        self.job.next.plen = self.plen.val().get_bits::<13>(0);
        self.job.next.pay_skip = self.cur_iova.q.val().get_bits::<6>(0);
        self.job.next.rsvd1 = 0.into();
        // Stamped with the QP's rewind count: dropped by the assembler if a rewind is taken
        // before it leaves (everything queued then is at or past the rewind's PSN).
        self.ep_sh.next = self.rw_epoch.q.val() >> bit_cast::<64, 6>(self.cur_qpn.q.val());
        self.job.next.drop_ok = 1.into();
        self.job.next.epoch = self.ep_sh.val().get_bits::<1>(0);
        self.job.next.rsvd2 = 0.into();
        // The last packet of a new READ's or atomic's response: counted when it is sent.
        self.job.next.rsp_last = 0.into();
        self.job.next.rsp_qpn = self.cur_qpn.q.val();
        self.job.next.has_deth = 0.into();
        // A UD SEND (IBTA Vol 1 9.8): one SEND ONLY (0x64, 0x65 with immediate) to the WQE's
        // address and QP, with a DETH carrying the WQE's Q_Key (the QP's own when bit 31 of
        // the WQE's is set, 10.2.5) and this QP as source, no AckReq; the assembler reports it
        // once sent, and that retires it.
        self.ud.next = self.ctx.q.val().qp_type.any();
        self.wqe_bits.next = self.wqe.q.val().into();
        self.ud_wqe.next = self.wqe_bits.val().into();
        self.wqe_qkey.next = self.ud_wqe.val().remote_qkey;
        self.ud_qkey.next = self.wqe_qkey.val();
        if self.wqe_qkey.val().get_bit(31) {
            self.ud_qkey.next = self.ctx.q.val().dest_ip;
        }
        if self.ud.val() {
            self.job.next.opcode = self.nums.val().op_ud_send_only;
            if self.has_imm.val() {
                self.job.next.opcode = self.nums.val().op_ud_send_only_with_immediate;
            }
            self.job.next.ackreq = 0.into();
            self.job.next.has_reth = 0.into();
            self.job.next.has_deth = 1.into();
            self.job.next.dest_qpn = self.ud_wqe.val().remote_qpn;
            self.job.next.dest_ip = self.ud_wqe.val().dest_ip;
            self.job.next.dest_mac = self.ud_wqe.val().dest_mac;
            self.job.next.reth_rkey = self.ud_qkey.val();
            self.job.next.rsp_qpn = self.cur_qpn.q.val();
            // A UD SEND is never resent: always sent (and reported).
            self.job.next.drop_ok = 0.into();
        }
        self.if_we.next = false;
        self.if_addr.next =
            bit_cast::<12, 6>(self.cur_qpn.q.val()) << 6 | bit_cast::<12, 6>(self.ci.q.val().get_bits::<6>(0));
        self.if_data.next.wr_id = self.wqe.q.val().wr_id;
        self.if_data.next.byte_len = self.total.q.val();
        self.if_data.next.last_psn = self.wqe_psn.q.val() + self.npkts.q.val() - 1;
        self.if_data.next.signaled =
            bit_cast::<1, 1>(((self.send_flags.val() & self.nums.val().sf_signaled) != 0).into());
        self.if_data.next.rd_list =
            bit_cast::<1, 1>((self.is_read.val() & !self.is_atomic.val() & self.multi_r.q.val()).into());
        self.if_data.next.rsvd = 0.into();
        self.if_data.next.first_psn = self.wqe_psn.q.val();
        // The completion's opcode (ibv_wc_opcode).
        self.if_data.next.wc_opcode = self.nums.val().wco_rdma_write;
        if self.is_send.val() {
            self.if_data.next.wc_opcode = self.nums.val().wco_send;
        }
        if self.is_read.val() {
            self.if_data.next.wc_opcode = self.nums.val().wco_rdma_read;
        }
        if self.is_atomic.val() {
            self.if_data.next.wc_opcode = self.nums.val().wco_comp_swap;
            if self.is_fadd.val() {
                self.if_data.next.wc_opcode = self.nums.val().wco_fetch_add;
            }
        }
        self.if_data.next.local_iova = self.base_iova.q.val();
        self.lc_write.next = false;
        self.lc_data.next.wr_id = self.wqe.q.val().wr_id;
        self.lc_data.next.qpn = bit_cast::<8, 6>(self.cur_qpn.q.val());
        self.lc_data.next.status = self.status.q.val();
        self.lc_data.next.wc_opcode = self.if_data.val().wc_opcode;
        self.lc_data.next.fatal = self.wqe_bad.q.val().into();
        self.lc_data.next.rsvd = 0.into();
        self.cnt_tx_req.next = false;
        self.cnt_local_err.next = false;
        // A WQE's slot 0 (`WaitWqeBeats`' first beat, or `NextWqe` taking it): the WQE, and SGE
        // 0 (or the inline length) to check first.
        if self.pf_pop.val() & self.first_beat.val() {
            self.wqe.d.next = self.wqe_beat.val().into();
            self.wop.d.next = self.wop_now.val();
            self.g_idx.d.next = 0.into();
            self.g_addr.d.next = self.beat_rec.val().sge0_addr;
            self.g_lkey.d.next = self.beat_lkey.val();
            self.g_len.d.next = 0.into();
            // NUM_SGE > 0, or IBV_SEND_INLINE: SGE 0's length field is the length.
            if (self.beat_rec.val().num_sge != 0) | self.beat_inline.val() {
                self.g_len.d.next = self.beat_rec.val().sge0_length;
            }
            self.inline_r.d.next = self.beat_inline.val();
            self.multi_r.d.next = (self.beat_rec.val().num_sge > 1) & !self.beat_inline.val();
            self.all_ok.d.next = true;
            self.sum_len.d.next = 0.into();
            self.n_valid.d.next = 0.into();
            // Entry 0 of the gather list is read while the list is built.
            self.e_idx.d.next = 15.into();
        }
        // The queue checks `NextWqe` acts on, registered in `CheckSq` and in the states that
        // send a WQE's packets, so that its last packet goes straight on to `NextWqe`.
        self.q_open.next = self.ci.q.val() != self.pi.q.val();
        self.hit_now.next = self.fetch.head_ok.val()
            & (self.fetch.head_qpn.val() == self.cur_qpn.q.val())
            & (self.fetch.head_ci.val() == self.ci.q.val());
        self.more_now.next = self.fetch.burst_room.val()
            & (self.fetch.next_ci.val() != self.pi.q.val())
            & (self.in_flight_r.q.val() < 40);
        if (self.state.q.val() == TxsState::CheckSq)
            | (self.state.q.val() == TxsState::IssuePacket)
            | (self.state.q.val() == TxsState::IssuePiece)
            | (self.state.q.val() == TxsState::IssueInline)
        {
            self.sq_empty.d.next = !self.q_open.val();
            self.window_ok.d.next = self.in_flight.val() < 64;
            self.pf_hit.d.next = self.hit_now.val();
            self.ah_idle_r.d.next = self.fetch.ahead_idle.val();
            self.pf_more.d.next = self.more_now.val();
            self.hit_go.d.next = self.q_open.val() & self.hit_now.val();
            self.miss_go.d.next = self.q_open.val() & !self.hit_now.val() & self.fetch.ahead_idle.val();
            self.app_go.d.next = self.q_open.val() & self.hit_now.val() & self.more_now.val();
            self.behind.d.next = self.in_flight.val().get_bit(15);
            self.rw_mine.d.next = !self.rw_empty.val() & (self.rw_data.val().qpn == self.cur_qpn.q.val());
            self.rw_other.d.next = !self.rw_empty.val() & (self.rw_data.val().qpn != self.cur_qpn.q.val());
        }
        // Packet sizing (`SizePacket`, and `RecordWqe` for a WQE's first packet): the path MTU
        // or what is left of the message; whether the packet lies inside the current gather
        // entry, and ends at its end. (A walk to a restart point resizes in `SizePacket`.)
        if (self.state.q.val() == TxsState::SizePacket) | (self.state.q.val() == TxsState::RecordWqe) {
            self.last_r.d.next = self.rem.q.val() <= self.mtu_r.q.val();
            self.plen_r.d.next = self.mtu_r.q.val();
            self.fits_r.d.next = self.mtu_r.q.val() <= self.sge_rem.q.val();
            self.exh_r.d.next = self.mtu_r.q.val() == self.sge_rem.q.val();
            if self.rem.q.val() <= self.mtu_r.q.val() {
                self.plen_r.d.next = self.rem.q.val();
                self.fits_r.d.next = self.rem.q.val() <= self.sge_rem.q.val();
                self.exh_r.d.next = self.rem.q.val() == self.sge_rem.q.val();
            }
            if self.is_read.val() {
                // One request packet, no payload.
                self.last_r.d.next = true;
                self.plen_r.d.next = 0.into();
            }
        }
        self.tx_active.next = (self.state.q.val() == TxsState::IssuePacket)
            | (self.state.q.val() == TxsState::IssueInline)
            | (self.state.q.val() == TxsState::SizePacket)
            | (self.state.q.val() == TxsState::RecordWqe)
            | (self.state.q.val() == TxsState::SizePiece)
            | (self.state.q.val() == TxsState::IssuePiece);
        self.tx_qpn.next = self.cur_qpn.q.val();
        // A request packet's job and its pieces go into the FIFOs as one run (see `job_lock`).
        self.req_epoch.next = self.rw_epoch.q.val();
        self.rw_flip_r.d.next = false;
        if self.rw_flip_r.q.val() {
            self.rw_epoch.d.next =
                self.rw_epoch.q.val() ^ (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 6>(self.cur_qpn.q.val()));
        }
        self.job_lock.next = (self.state.q.val() == TxsState::IssuePacket)
            | (self.state.q.val() == TxsState::SizePiece)
            | (self.state.q.val() == TxsState::IssuePiece);

        // Message sizing, from the SGE's length (one SGE or inline data, `CheckLkey`) or the
        // gather list's sum (`SizeList`): packets in the message, ceil(len / MTU), in two registered
        // halves: len >> log2(MTU) and whether bits below the MTU remain.
        if (self.state.q.val() == TxsState::CheckLkey) | (self.state.q.val() == TxsState::SizeList) {
            self.len_r.d.next = self.len.val();
            self.nq_r.d.next = bit_cast::<24, 32>(self.len.val() >> (bit_cast::<32, 3>(self.ctx.q.val().path_mtu) + 7));
            self.npart_r.d.next = (self.len_lo12.val() & self.mtu_mask12.val()) != 0;
        }
        if (self.state.q.val() == TxsState::CheckRoom) | (self.state.q.val() == TxsState::CountList) {
            // Packets in the message: ceil(len / MTU), and one for a zero-length message.
            self.npkts.d.next = self.nq_r.q.val() + bit_cast::<24, 1>(self.npart_r.q.val().into());
            self.ud_op_bad.d.next = self.ctx.q.val().qp_type.any() & !self.is_send.val();
            self.ud_long.d.next = self.ctx.q.val().qp_type.any()
                & ((self.nq_r.q.val() > 1) | ((self.nq_r.q.val() == 1) & self.npart_r.q.val()));
            if self.len_r.q.val() == 0 {
                self.npkts.d.next = 1.into();
            }
            // A READ or atomic waits for a slot (max_rd_atomic); a fenced WQE
            // (IBV_SEND_FENCE) waits until every earlier READ and atomic has completed. A READ
            // with several SGEs also waits while 4 are outstanding: the RX engine keeps 4 READ
            // lists per QP, used in turn by READ number, and the 4th before it may still be
            // filling its list. A SEND waits while 32 WQEs are in flight (the responder's
            // visit per SEND is slower than the wire for short SENDs).
            self.send_wait.d.next = self.is_send.val() & self.send_win_full.q.val();
            self.rd_full.d.next = (self.is_read.val() & (self.reads_out_r.q.val() >= self.rd_limit_r.q.val()))
                | (self.is_send.val() & self.send_win_full.q.val())
                | (((self.send_flags.val() & self.nums.val().sf_fence) != 0) & (self.reads_out_r.q.val() != 0))
                | (self.is_read.val() & self.multi_r.q.val() & (self.reads_out_r.q.val() >= 4));
            self.behind.d.next = self.in_flight.val().get_bit(15);
            self.skip_ok.d.next = self.skip_pending.q.val()
                & self.skip_nz.q.val()
                & (self.skip_bytes_r.q.val() < bit_cast::<64, 32>(self.len_r.q.val()));
            // An atomic writes its result into one SGE; neither it nor a READ carries inline
            // data.
            self.shape_bad.d.next =
                self.is_read.val() & (self.inline_r.q.val() | (self.is_atomic.val() & self.multi_r.q.val()));
        }

        // The head check ([`HeadCheck`]): the WQE at the buffer's head is checked while the one
        // before it is acted on, recorded and issued. (`take_now` is `NextWqe` taking it.)
        clock!(self, clock, hc);
        self.hc.reset.next = self.reset.val();
        self.hc.beat.next = self.wqe_beat.val();
        self.hc.beat_ok.next = self.wqe_ok.val();
        self.hc.one_slot.next = self.one_slot_r.q.val();
        self.hc.ud.next = self.ctx.q.val().qp_type.any();
        self.hc.start.next = self.state.q.val() == TxsState::ActOnChecks;
        self.hc.key_slot.next = self.state.q.val() == TxsState::RecordWqe;
        self.hc_kill.next =
            self.drop_pop.val() | self.pf_pop.val() | self.cmd_fire.val() | (self.state.q.val() == TxsState::LoadQp);
        self.hc.kill.next = self.hc_kill.val();
        self.hc.mr.next = self.mr.val();
        self.hc.pd.next = self.ctx.q.val().pd;
        self.hc.path_mtu.next = self.ctx.q.val().path_mtu;
        self.hc.inline_max.next = self.inline_max.val();
        if self.hc.mr_read.val() {
            self.tables.mr_addr.next = self.hc.mr_index.val();
        }
        self.hc_fast.next = self.take_now.val() & self.hc.ready.val() & !self.skip_pending.q.val();
        self.hc_take.next = false;
        self.at_nw.d.next = false;

        match self.state.q.val() {
            TxsState::Idle => {
                self.rewind.d.next = false;
                self.serving.d.next = false;
                if self.self_rung.q.val() {
                    // The last QP served was rung while it was served: back into the ready set.
                    self.rearm.next = true;
                    self.self_rung.d.next = false;
                }
                self.flush_req.d.next = false;
                if !self.fetch.ahead_idle.val() {
                    // The last QP's append is still being issued (with its context): wait.
                } else if !self.rw_empty_r.q.val() {
                    // Go back N: resend from WQE `ci` at PSN `psn` up to the last doorbell.
                    self.rw_read.next = true;
                    self.rewind.d.next = true;
                    self.cur_qpn.d.next = self.rw_data.val().qpn;
                    self.rw_ci.d.next = self.rw_data.val().ci;
                    self.rw_psn.d.next = self.rw_data.val().first_psn;
                    self.rw_restart.d.next = self.rw_data.val().restart;
                    self.flush_req.d.next = self.rw_data.val().flush.any();
                    self.serving.d.next = true;
                    self.state.d.next = TxsState::LoadQp;
                } else if !self.db_empty.val() {
                    self.db_read.next = true;
                    self.cur_qpn.d.next = self.db_rec.val().qpn;
                    self.pi.d.next = self.db_rec.val().pi;
                    if self.db_rec.val().qpn_hi == 0 {
                        self.serving.d.next = true;
                        self.state.d.next = TxsState::LoadQp;
                    }
                }
            }
            TxsState::LoadQp => {
                // (A command in this cycle or the next clears it below: the context `TakeQp`
                // loads may be the one from before the command.)
                self.ext_ok.d.next = true;
                self.state.d.next = TxsState::TakeQp;
            }
            TxsState::TakeQp => {
                self.ctx.d.next = self.qp_now.val();
                self.next_psn.d.next = self.dyn_now.val().next_psn;
                self.ci.d.next = self.dyn_now.val().ci;
                self.reads_sent.d.next = self.dyn_now.val().reads_sent;
                // A rewind older than the completer's progress (ACKs retired WQEs after it was
                // asked for) is stale: resume from the saved state instead.
                self.rw_behind.next = self.acked_data.val() - self.rw_ci.q.val();
                self.skip_pending.d.next = self.rewind.q.val();
                if self.rewind.q.val() {
                    // A rewind serves the QP's posted WQEs up to its saved producer index.
                    self.pi.d.next = self.dyn_now.val().pi;
                }
                if self.qp_now.val().sq_drain.any() {
                    // SQD (IBTA Vol 1 10.3.1): serve only the WQEs taken before the drain, up
                    // to the producer index saved with this QP's state; a doorbell rung since
                    // waits in the ready set's table for the move back to RTS (and the
                    // driver's doorbell after it).
                    self.pi.d.next = self.dyn_now.val().pi;
                }
                if self.rewind.q.val()
                    & !self.flush_req.q.val()
                    & !self.dyn_now.val().err.any()
                    & ((self.rw_behind.val() == 0) | self.rw_behind.val().get_bit(15))
                {
                    self.next_psn.d.next = self.rw_psn.q.val();
                    self.ci.d.next = self.rw_ci.q.val();
                    // Everything of this QP still queued for the assembler is at or past the
                    // rewind's PSN (none of it was sent): stale from now on.
                    self.rw_flip_r.d.next = !self.cmd_in_load.q.val();
                    // Every READ from the rewind point on is to be sent again.
                    self.reads_sent.d.next = self.acked_reads.val();
                }
                // In the error state (set by the NIC after an error completion, or by the driver
                // with modify_qp to ERR) every WQE completes with IBV_WC_WR_FLUSH_ERR.
                self.err.d.next =
                    self.dyn_now.val().err.any() | self.flush_req.q.val() | (self.qp_now.val().state == 6);
                if self.flush_req.q.val() {
                    // Remember the error state before anything else.
                    self.rewind.d.next = false;
                    self.state.d.next = TxsState::SaveAndYield;
                } else if (self.qp_now.val().state == 3) | (self.qp_now.val().state == 6) {
                    self.state.d.next = TxsState::CheckSq;
                } else {
                    self.state.d.next = TxsState::Idle;
                }
                if self.cmd_in_load.q.val() {
                    // A context command fired in `LoadQp`, as the context was read: what this
                    // state loaded may be from before it (a RESET of this QP is held back
                    // only from `TakeQp` on, `rst_here_r`). Read it again.
                    self.rewind.d.next = self.rewind.q.val();
                    self.state.d.next = TxsState::LoadQp;
                }
            }
            TxsState::CheckSq => {
                // (The queue checks are registered below.)
                self.state.d.next = TxsState::NextWqe;
                self.at_nw.d.next = true;
            }
            TxsState::NextWqe => {
                // A new WQE: inline data from `ext0`..`ext3` only once `CheckRoom`, or the head
                // check's inline path in `WaitWqeBeats`, says so (the one-slot fast path passes
                // neither).
                self.il_r.d.next = false;
                if self.behind.q.val() {
                    // A rewind was overtaken: an ACK or response arrived after it and retired
                    // WQEs from the rewind point on. Skip them: go on after the last retired.
                    self.state.d.next = TxsState::SkipRetired;
                } else if self.sq_empty.q.val() {
                    // Draining (SQD): nothing more to start; tell the completer.
                    self.sq_stop.next = self.ctx.q.val().sq_drain.any();
                    self.state.d.next = TxsState::Idle;
                } else if self.window_ok.q.val()
                    & self.pf_hit.q.val()
                    & (self.rd_blk_r.q.val() | (self.rd_wait_r.q.val() & !self.wqe_ok.val()))
                {
                    // It is a READ or atomic with no slot free, and another QP has work: step
                    // aside now, as `WaitIssueSlot` would after the WQE's checks. Likewise
                    // with no slot free when the next WQE is not at the buffer's head yet
                    // (whatever it is: another QP waits, and this one has its READs out).
                    self.rearm.next = true;
                    self.state.d.next = TxsState::SaveAndYield;
                } else if self.window_ok.q.val() & self.pf_hit.q.val() {
                    // The WQE is in the prefetch buffer (or on its way): no fetch. A one-beat
                    // WQE already at the buffer's head is taken here (below), its key-table
                    // entry addressed from the beat.
                    // (If the buffer has room for more, `pf_more`, the fetch-ahead machine
                    // reads the next posted WQEs behind the buffered ones while this one goes
                    // on: `fetch.append`, above.)
                    self.wb.d.next = 0.into();
                    self.state.d.next = TxsState::WaitWqeBeats;
                    // An inline WRITE the head check passed: its checks are taken after its
                    // last slot (the pops in `WaitWqeBeats` discard the check, not its result).
                    self.fast_inl.d.next = self.hc.ready.val()
                        & self.hc.is_inline.val()
                        & self.hc.inline_ok.val()
                        & !self.skip_pending.q.val();
                    if self.take_now.val() {
                        // (The fetcher counts the take itself: `last_slot`, `pop_next`.)
                        self.state.d.next = TxsState::CheckLkey;
                    }
                    if self.hc_fast.val() {
                        // The head check has checked it: on to `ActOnChecks` with the flags
                        // `CheckLkey`, `CheckRoom` and `CheckBounds` would have registered
                        // (an RDMA WRITE or READ: one SGE, RC, not inline or fenced, no rewind
                        // to skip into).
                        self.state.d.next = TxsState::ActOnChecks;
                        self.off_r.d.next = self.hc.off.val();
                        self.va_ok.d.next = self.hc.va_ok.val();
                        self.key_ok_r.d.next = self.hc.key_ok.val();
                        self.off_ok.d.next = self.hc.off_ok.val();
                        self.room.d.next = self.hc.room.val();
                        self.base_iova.d.next = self.hc.base.val();
                        self.bounds_r.d.next = self.hc.bounds.val();
                        self.hc_take.next = true;
                    }
                } else if self.window_ok.q.val() & !self.ah_idle_r.q.val() {
                    // An append is being sized or issued: once it is, the WQE may be in the
                    // buffer (and a discard must count its beats).
                    self.state.d.next = TxsState::CheckSq;
                } else if self.window_ok.q.val() {
                    // Fetch it and the WQEs after it: whatever the buffer still holds or
                    // awaits is discarded, the held beats popped, the awaited ones (split off
                    // next cycle, `pf_split`) dropped as they arrive (they come before this
                    // fetch's: one AXI ID, in order), so only the held ones still take room
                    // when `FetchSaturate` sizes the fetch. (With 32 or more in flight,
                    // `FetchLimits` steps aside instead if another QP waits.)
                    self.state.d.next = TxsState::FetchLimits;
                } else if self.rw_mine.q.val() {
                    // The window is full because packets were lost: save the state (with the
                    // doorbell's producer index) and let the rewind take over.
                    self.state.d.next = TxsState::SaveAndYield;
                } else if self.rw_other.q.val() | self.db_other.q.val() {
                    // Another QP's rewind waits (and this QP's own may queue behind it), or
                    // another QP has work: save, step aside, and come back through the ready
                    // set.
                    self.rearm.next = true;
                    self.state.d.next = TxsState::SaveAndYield;
                } else {
                    self.state.d.next = TxsState::CheckSq;
                }
            }
            TxsState::FetchLimits => {
                // Sizing a fetch, 1: each limit in WQEs, registered (below, shared with the
                // fetch-ahead machine).
                self.state.d.next = TxsState::FetchSaturate;
                if self.send_win_full.q.val() & (self.rw_other.q.val() | self.db_other.q.val()) {
                    // 32 or more in flight (as of `CheckSq`) and another QP has work: step aside
                    // as with a smaller window, rather than fetch WQEs a READ waiting for its
                    // slot would give up to the next QP's fetch.
                    self.rearm.next = true;
                    self.state.d.next = TxsState::SaveAndYield;
                }
            }
            TxsState::FetchSaturate => {
                // 2: each limit saturated at 8 WQEs (below).
                self.state.d.next = TxsState::FetchMinima;
            }
            TxsState::FetchMinima => {
                // 3: pairwise minima (below).
                self.state.d.next = TxsState::FetchSize;
            }
            TxsState::FetchSize => {
                // 4: the fetch (sized below), once the buffer has room for a WQE (discarded
                // beats leave it as they arrive).
                if self.fetch.size_zero.val() {
                    self.state.d.next = TxsState::FetchLimits;
                } else {
                    // (The fetcher raises its read request.)
                    self.state.d.next = TxsState::FetchWqe;
                }
            }
            TxsState::FetchWqe => {
                self.wb.d.next = 0.into();
                self.fast_inl.d.next = false;
                if self.wqe_ar_ready.val() {
                    self.state.d.next = TxsState::WaitWqeBeats;
                }
            }
            TxsState::WaitWqeBeats => {
                // The WQE's beats: slot 0 into `wqe` (and SGE 0, or the inline length, to
                // check first), slots 1..4 into `ext0`..`ext3`.
                if self.wqe_ok.val() {
                    // (Slot 0 is taken below, as in `NextWqe`.)
                    self.wb.d.next = self.wb.q.val() + 1;
                    if self.wb.q.val() == self.fetch_m1_r.q.val() {
                        // (The fetcher counts the take itself: `last_slot`, `pop_next`.)
                        // SGE 0's key-table entry was addressed in this WQE's first beat.
                        self.state.d.next = TxsState::CheckLkey;
                        if self.fast_inl.q.val() & (self.wb.q.val() != 0) {
                            // An inline WRITE the head check passed: on to `ActOnChecks` with
                            // the flags `CheckLkey`, `CheckRoom` and `CheckBounds` would have
                            // registered (no key, one packet from `ext0`..`ext3`).
                            self.state.d.next = TxsState::ActOnChecks;
                            self.base_iova.d.next = self.fetch.wqe_addr.val() + 64;
                            self.bounds_r.d.next = true;
                            self.hc_take.next = true;
                            self.il_r.d.next = self.hc.len.val() != 0;
                            self.il_nm1.d.next = self.hc.len_m1.val().get_bits::<2>(6);
                        }
                    }
                }
            }
            TxsState::LookupLkey => {
                // (A gather list's next SGE: its key-table entry is addressed from `g_lkey`.)
                self.state.d.next = TxsState::CheckLkey;
            }
            TxsState::CheckLkey => {
                self.nsge_bad.d.next = !self.inline_r.q.val() & (self.wqe.q.val().num_sge > self.sge_limit.val());
                // The MR entry is readable: the offset into the region, first.
                self.off_r.d.next = self.off.val();
                self.va_ok.d.next = self.g_addr.q.val() >= self.mr.val().va;
                // A READ's local buffer is written by the NIC: its region must grant LOCAL_WRITE.
                self.key_ok_r.d.next = self.key_ok.val()
                    & (!self.is_read.val() | ((self.mr.val().access & self.nums.val().acc_local_write) != 0));
                self.skip_bytes_r.d.next = self.skip_bytes.val();
                self.skip_nz.d.next = self.skip_pkts.val() != 0;
                self.state.d.next = TxsState::CheckRoom;
            }
            TxsState::CheckRoom => {
                // Then what is left of the region past the offset, and the translated address.
                self.off_ok.d.next = self.off_r.q.val() <= self.mr.val().length;
                self.room.d.next = self.mr.val().length - self.off_r.q.val();
                self.base_iova.d.next = self.mr.val().iova + self.off_r.q.val();
                // Inline data starts at the WQE's second slot in the SQ ring (read from there
                // only past 256 bytes, `il_r`).
                // A message over 2^31 bytes (`max_msg_sz`): IBV_WC_LOC_LEN_ERR.
                self.len_bad.d.next = self.len_r.q.val() > self.nums.val().max_msg_sz;
                self.il_r.d.next = false;
                if self.inline_r.q.val() {
                    self.base_iova.d.next = self.fetch.wqe_addr.val() + 64;
                    self.len_bad.d.next = self.len_r.q.val() > self.inline_max_r.q.val();
                    // Up to 256 bytes: one packet (a path MTU of 256 or more; PATH_MTU 0, not a
                    // valid IB MTU, keeps the read from the ring), whose beats are
                    // `ext0`..`ext3`.
                    self.il_r.d.next =
                        (self.len_r.q.val() != 0) & (self.len_r.q.val() <= 256) & (self.ctx.q.val().path_mtu != 0);
                }
                self.il_nm1.d.next = self.len_m1.val().get_bits::<2>(6);
                self.state.d.next = TxsState::CheckBounds;
            }
            TxsState::CheckBounds => {
                // The bounds verdict, registered: `ActOnChecks` only combines flags.
                self.bounds_r.d.next = self.bounds_ok.val();
                self.state.d.next = TxsState::ActOnChecks;
                if self.multi_r.q.val() & !self.nsge_bad.q.val() {
                    self.state.d.next = TxsState::KeepSge;
                }
            }
            TxsState::KeepSge => {
                // A gather-list entry checked: keep it (if not empty) and go on to the next.
                self.sum_len.d.next = self.sum_len.q.val() + bit_cast::<37, 32>(self.g_len.q.val());
                if self.g_len.q.val() != 0 {
                    if !(self.key_ok_r.q.val() & self.bounds_r.q.val()) {
                        self.all_ok.d.next = false;
                    }
                    self.n_valid.d.next = self.n_valid.q.val() + 1;
                }
                self.g_idx.d.next = self.g_idx.q.val() + 1;
                self.state.d.next = TxsState::SelectSge;
                if self.g_p1.val() == self.wqe.q.val().num_sge {
                    self.state.d.next = TxsState::SumList;
                }
            }
            TxsState::SelectSge => {
                // (The next SGE's index settles: its slot and lane are chosen in `LoadSge`.)
                self.state.d.next = TxsState::LoadSge;
            }
            TxsState::LoadSge => {
                self.g_addr.d.next = self.ext_lane.val().addr;
                self.g_len.d.next = self.ext_lane.val().length;
                self.g_lkey.d.next = self.ext_lane.val().lkey;
                self.state.d.next = TxsState::LookupLkey;
            }
            TxsState::SumList => {
                // The whole list: its length is the message's; its verdict replaces SGE 0's.
                self.g_len.d.next = self.sum_len.q.val().get_bits::<32>(0);
                self.len_bad.d.next = self.sum_len.q.val() > bit_cast::<37, 32>(self.nums.val().max_msg_sz);
                self.key_ok_r.d.next = self.all_ok.q.val();
                self.bounds_r.d.next = true;
                self.state.d.next = TxsState::SizeList;
            }
            TxsState::SizeList => {
                self.state.d.next = TxsState::CountList;
            }
            TxsState::CountList => {
                self.state.d.next = TxsState::ActOnChecks;
            }
            TxsState::ActOnChecks => {
                if self.behind.q.val() {
                    // This WQE was retired while it was fetched or waited for a READ slot
                    // (a rewind overtaken by late responses): skip to the first unretired one.
                    self.state.d.next = TxsState::SkipRetired;
                } else if self.rd_full.q.val() & !self.err.q.val() {
                    // max_rd_atomic READs await their responses: this one waits.
                    self.state.d.next = TxsState::WaitIssueSlot;
                } else {
                    self.rem.d.next = self.len_r.q.val();
                    self.total.d.next = self.len_r.q.val();
                    self.wqe_psn.d.next = self.next_psn.q.val();
                    self.cur_iova.d.next = self.base_iova.q.val();
                    self.sge_rem.d.next = self.len_r.q.val();
                    self.e_idx.d.next = 0.into();
                    self.walk_pend.d.next = false;
                    if self.multi_r.q.val() {
                        // Gather list: start at its entry 0.
                        self.cur_iova.d.next = self.nxt_iova.val();
                        self.sge_rem.d.next = self.nxt_len.val();
                    }
                    self.first.d.next = true;
                    self.skip_pending.d.next = false;
                    self.rd_va.d.next = self.wqe.q.val().remote_addr;
                    if self.skip_ok.q.val() {
                        self.rem.d.next = self.len_r.q.val() - self.skip_bytes_r.q.val().get_bits::<32>(0);
                        self.cur_iova.d.next = self.base_iova.q.val() + self.skip_bytes_r.q.val();
                        self.sge_rem.d.next = self.len_r.q.val() - self.skip_bytes_r.q.val().get_bits::<32>(0);
                        self.rd_va.d.next = self.wqe.q.val().remote_addr + self.skip_bytes_r.q.val();
                        self.first.d.next = false;
                        self.next_psn.d.next = self.rw_restart.q.val();
                        if self.multi_r.q.val() {
                            // Walk the list to the restart point (`WalkList`, `WalkListRead`).
                            self.cur_iova.d.next = self.nxt_iova.val();
                            self.sge_rem.d.next = self.nxt_len.val();
                            self.walk.d.next = self.skip_bytes_r.q.val().get_bits::<32>(0);
                            self.walk_pend.d.next = true;
                        }
                    }
                    self.state.d.next = TxsState::RecordWqe;
                    self.cp_i.d.next = 0.into();
                    if self.is_read.val() & self.multi_r.q.val() & (self.n_valid.q.val() != 0) {
                        // A READ with several SGEs: its list goes to the RX engine first.
                        self.state.d.next = TxsState::CopyListRead;
                    }
                    if self.err.q.val() {
                        self.status.d.next = self.nums.val().wc_wr_flush_err;
                        self.state.d.next = TxsState::CompleteError;
                    } else if self.wqe_bad.q.val() {
                        // The WQE could not be read (IBTA Vol 1 11.6.3: a local work queue
                        // catastrophic error): IBV_WC_LOC_QP_OP_ERR, and QP_FATAL.
                        self.status.d.next = self.nums.val().wc_loc_qp_op_err;
                        self.state.d.next = TxsState::CompleteError;
                    } else if !self.wop.q.val().implemented | self.shape_bad.q.val() | self.ud_op_bad.q.val() {
                        // An opcode this NIC does not implement, a READ or atomic with inline
                        // data, an atomic with several SGEs, or anything but a SEND on a UD
                        // QP: IBV_WC_LOC_QP_OP_ERR.
                        self.status.d.next = self.nums.val().wc_loc_qp_op_err;
                        self.state.d.next = TxsState::CompleteError;
                    } else if self.nsge_bad.q.val() | self.len_bad.q.val() | self.ud_long.q.val() {
                        // More SGEs than the WQE holds, over 2^31 bytes, more inline data
                        // than the WQE holds, or a UD message over the path MTU:
                        // IBV_WC_LOC_LEN_ERR.
                        self.status.d.next = self.nums.val().wc_loc_len_err;
                        self.state.d.next = TxsState::CompleteError;
                    } else if self.is_atomic.val() & (self.len_r.q.val() != 8) {
                        // An atomic's local buffer is one 8-byte word (ibv_post_send(3)).
                        self.status.d.next = self.nums.val().wc_loc_len_err;
                        self.state.d.next = TxsState::CompleteError;
                    } else if (self.len_r.q.val() != 0)
                        & !self.inline_r.q.val()
                        & !(self.key_ok_r.q.val() & self.bounds_r.q.val())
                    {
                        self.status.d.next = self.nums.val().wc_loc_prot_err;
                        self.state.d.next = TxsState::CompleteError;
                    }
                }
            }
            TxsState::SizePacket => {
                // The next packet is sized (below, as in `RecordWqe`).
                self.state.d.next = TxsState::IssuePacket;
            }
            TxsState::IssuePacket => {
                if self.rw_pending.q.val() {
                    // Go back N at once: the WQE is recorded, so whatever of it is not sent
                    // is resent by the rewind (or, if the rewind is stale, recovered like a
                    // loss).
                    self.state.d.next = TxsState::Idle;
                } else if self.job_room.q.val() & (self.il_room.q.val() | !self.il_r.q.val()) {
                    self.job_write.next = true;
                    self.emit_we_r.d.next = true;
                    self.piece.next = (self.plen.val() != 0) & self.fits_r.q.val();
                    self.cnt_tx_req.next = true;
                    self.next_psn.d.next = self.next_psn.q.val() + 1;
                    self.rem.d.next = self.rem.q.val() - self.plen.val();
                    self.cur_iova.d.next = self.cur_iova.q.val() + bit_cast::<64, 32>(self.plen.val());
                    self.sge_rem.d.next = self.sge_rem.q.val() - self.plen.val();
                    self.first.d.next = false;
                    // The packet used up its gather entry: the next one follows.
                    self.advance.next = self.fits_r.q.val() & self.exh_r.q.val() & !self.is_last.val();
                    if self.is_read.val() {
                        // The responses take the READ's remaining PSNs.
                        self.next_psn.d.next = self.wqe_psn.q.val() + self.npkts.q.val();
                    }
                    self.state.d.next = TxsState::SizePacket;
                    if self.is_last.val() {
                        // The queue checks were registered this cycle: on to the next WQE.
                        self.state.d.next = TxsState::NextWqe;
                        self.at_nw.d.next = true;
                    }
                    self.il_k.d.next = 1.into();
                    if self.il_r.q.val() & (self.il_nm1.q.val() != 0) {
                        // (An inline packet is its WQE's only one.)
                        self.state.d.next = TxsState::IssueInline;
                        self.at_nw.d.next = false;
                    }
                    if !self.fits_r.q.val() & (self.plen.val() != 0) {
                        // The packet spans entries: its payload goes as pieces (`SizePiece`, `IssuePiece`).
                        self.pkt_left.d.next = self.plen.val().get_bits::<13>(0);
                        self.cur_iova.d.next = self.cur_iova.q.val();
                        self.sge_rem.d.next = self.sge_rem.q.val();
                        self.state.d.next = TxsState::SizePiece;
                        self.at_nw.d.next = false;
                    }
                }
            }
            TxsState::IssueInline => {
                // The inline packet's next beat (`il_write`, `il_data` below); the queue
                // checks are registered in each of these cycles too.
                if self.il_room.q.val() {
                    self.il_k.d.next = self.il_k.q.val() + 1;
                    if self.il_k.q.val() == self.il_nm1.q.val() {
                        self.state.d.next = TxsState::NextWqe;
                        self.at_nw.d.next = true;
                    }
                }
            }
            TxsState::SizePiece => {
                // The next piece: what is left of the packet, or of the entry.
                self.pc_len.d.next = self.pkt_left.q.val();
                self.pc_last.d.next = true;
                if bit_cast::<32, 13>(self.pkt_left.q.val()) > self.sge_rem.q.val() {
                    self.pc_len.d.next = self.sge_rem.q.val().get_bits::<13>(0);
                    self.pc_last.d.next = false;
                }
                self.pc_exh.d.next = bit_cast::<32, 13>(self.pkt_left.q.val()) >= self.sge_rem.q.val();
                self.state.d.next = TxsState::IssuePiece;
            }
            TxsState::IssuePiece => {
                if self.job_room.q.val() {
                    self.piece.next = true;
                    self.rj_len.next = self.pc_len.q.val();
                    self.pg_len.next = self.pc_len.q.val();
                    self.pg_last.next = self.pc_last.q.val();
                    self.pkt_left.d.next = self.pkt_left.q.val() - self.pc_len.q.val();
                    self.cur_iova.d.next = self.cur_iova.q.val() + bit_cast::<64, 13>(self.pc_len.q.val());
                    self.sge_rem.d.next = self.sge_rem.q.val() - bit_cast::<32, 13>(self.pc_len.q.val());
                    self.advance.next = self.pc_exh.q.val() & !(self.pc_last.q.val() & self.is_last.val());
                    self.state.d.next = TxsState::SizePiece;
                    if self.pc_last.q.val() {
                        self.state.d.next = TxsState::SizePacket;
                        if self.is_last.val() {
                            self.state.d.next = TxsState::NextWqe;
                            self.at_nw.d.next = true;
                        }
                    }
                }
            }
            TxsState::RecordWqe => {
                // Record the WQE before its first packet leaves, so the completer can act on
                // a NAK or timeout for any of its packets; the saved state is the one after it.
                self.if_we.next = true;
                self.own_we.next = true;
                self.st_psn.next = self.psn_after.val();
                self.st_ci.next = self.ci_next.val();
                self.st_reads.next = self.reads_next.val();
                if self.is_read.val() {
                    self.reads_sent.d.next = self.reads_sent.q.val() + 1;
                }
                self.ci.d.next = self.ci.q.val() + 1;
                // The first packet is sized here (below, as in `SizePacket`).
                self.state.d.next = TxsState::IssuePacket;
                if self.walk_pend.q.val() {
                    self.state.d.next = TxsState::WalkList;
                }
            }
            TxsState::CopyListRead => {
                // Copy the READ's checked list to the RX engine's READ list table: entry
                // `cp_i` is read here...
                self.state.d.next = TxsState::CopyListWrite;
            }
            TxsState::CopyListWrite => {
                // ...and written here, two cycles per entry.
                self.rl_we.next = true;
                self.cp_i.d.next = self.cp_i.q.val() + 1;
                self.state.d.next = TxsState::CopyListRead;
                if (self.cp_i.q.val() + 1) == self.n_valid.q.val() {
                    self.state.d.next = TxsState::RecordWqe;
                }
            }
            TxsState::WalkList => {
                // Resuming mid-message with a gather list: skip whole entries, then into one.
                if self.walk_ge.q.val() {
                    self.walk.d.next = self.walk.q.val() - self.sge_rem.q.val();
                    self.advance.next = true;
                    self.state.d.next = TxsState::WalkListRead;
                } else {
                    self.cur_iova.d.next = self.cur_iova.q.val() + bit_cast::<64, 32>(self.walk.q.val());
                    self.sge_rem.d.next = self.sge_rem.q.val() - self.walk.q.val();
                    self.walk_pend.d.next = false;
                    self.state.d.next = TxsState::SizePacket;
                }
            }
            TxsState::WalkListRead => {
                // The entry after the new one is being read.
                self.state.d.next = TxsState::WalkList;
            }
            TxsState::CompleteError => {
                // Errors complete in SQ order: wait until every earlier WQE has retired.
                if !self.rw_empty.val() & (self.rw_data.val().qpn == self.cur_qpn.q.val()) {
                    self.state.d.next = TxsState::SaveAndYield;
                } else if self.done_ahead.q.val() {
                    // The completer has completed this WQE already (it was in flight when the
                    // QP entered ERR, and this engine was fetching it again after a rewind):
                    // no second completion; go on after the last one retired.
                    self.state.d.next = TxsState::SkipRetired;
                } else if (self.rw_waiting.q.val() | self.db_other.q.val()) & (self.acked_data.val() != self.ci.q.val())
                {
                    // Still waiting, and another QP's rewind or doorbell is queued: step aside.
                    self.rearm.next = true;
                    self.state.d.next = TxsState::SaveAndYield;
                } else if (self.acked_data.val() == self.ci.q.val()) & !self.lc_full.val() {
                    self.lc_write.next = true;
                    self.cnt_local_err.next = self.status.q.val() != 5;
                    // A local error puts the QP in the error state for the WQEs behind it.
                    self.err.d.next = true;
                    self.own_we.next = true;
                    self.st_ci.next = self.ci_next.val();
                    self.st_err.next = true;
                    self.ci.d.next = self.ci.q.val() + 1;
                    self.state.d.next = TxsState::CheckSq;
                }
            }
            TxsState::SaveAndYield => {
                // Save {next PSN, ci, pi} and yield to a pending rewind (`Idle` waits for an
                // append of this QP's to be issued before it serves another).
                self.own_we.next = true;
                self.state.d.next = TxsState::Idle;
                if self.flush_req.q.val() {
                    // Entered the error state: flush the WQEs not yet sent.
                    self.flush_req.d.next = false;
                    self.state.d.next = TxsState::CheckSq;
                }
            }
            TxsState::SkipRetired => {
                self.ci.d.next = self.acked_data.val();
                self.next_psn.d.next = self.acked_psn.val();
                self.reads_sent.d.next = self.acked_reads.val();
                self.skip_pending.d.next = false;
                self.own_we.next = true;
                self.st_psn.next = self.acked_psn.val();
                self.st_ci.next = self.acked_data.val();
                self.st_reads.next = self.acked_reads.val();
                self.state.d.next = TxsState::CheckSq;
            }
            TxsState::WaitIssueSlot => {
                // Wait for a READ slot (max_rd_atomic), stepping aside for another QP
                // and yielding to a rewind; the checks are redone from `CheckRoom`.
                if self.rw_pending.q.val() {
                    self.state.d.next = TxsState::SaveAndYield;
                } else if self.rw_waiting.q.val() | (self.db_other.q.val() & !self.send_wait.q.val()) {
                    self.rearm.next = true;
                    self.state.d.next = TxsState::SaveAndYield;
                } else if self.multi_r.q.val() {
                    // A gather list's checks are done: only the slot check is redone.
                    self.state.d.next = TxsState::CountList;
                } else {
                    self.state.d.next = TxsState::CheckRoom;
                }
            }
            _ => {
                // The codes no state uses (18: a response state of the scheduler until stop 32)
                // are never entered.
                self.state.d.next = TxsState::Idle;
            }
        }
        if self.rst_here_r.q.val() {
            // The driver is resetting this QP: leave it at the next WQE boundary or wait (the
            // command then writes its state afresh, whatever is saved here).
            self.rearm.next = false;
            if (self.state.q.val() == TxsState::CheckSq)
                | (self.state.q.val() == TxsState::CompleteError)
                | (self.state.q.val() == TxsState::ActOnChecks)
                | (self.state.q.val() == TxsState::NextWqe)
                | (self.state.q.val() == TxsState::WaitIssueSlot)
            {
                self.state.d.next = TxsState::Idle;
                self.at_nw.d.next = false;
            }
        }
        if self.hc_take.val() {
            // A WQE the head check passed goes from `NextWqe` (one slot) or `WaitWqeBeats`
            // (inline) straight to `ActOnChecks`: the flags `CheckLkey`, `CheckRoom` and
            // `CheckBounds` would have registered, from its registers.
            self.nsge_bad.d.next = false;
            self.len_bad.d.next = self.hc.len_big.val();
            self.len_r.d.next = self.hc.len.val();
            self.nq_r.d.next = self.hc.nq.val();
            self.npart_r.d.next = self.hc.npart.val();
            self.npkts.d.next = self.hc.npkts.val();
            self.ud_op_bad.d.next = false;
            self.ud_long.d.next = false;
            self.send_wait.d.next = false;
            // A READ waits for a slot (max_rd_atomic), as `CheckRoom` decides it: one-SGE and
            // unfenced, so that is its only term. (`reads_out_r` is current here: `reads_sent`
            // moves in `TakeQp`, `RecordWqe` and `SkipRetired`, each two or more states before
            // `NextWqe`.)
            self.rd_full.d.next = self.hc.is_read.val() & (self.reads_out_r.q.val() >= self.rd_limit_r.q.val());
            self.behind.d.next = self.in_flight.val().get_bit(15);
            self.skip_ok.d.next = false;
            self.shape_bad.d.next = false;
        }
        if self.advance.val() {
            self.cur_iova.d.next = self.nxt_iova.val();
            self.sge_rem.d.next = self.nxt_len.val();
            self.e_idx.d.next = self.e_next.val();
        }
        // An inline packet's one piece has no read job: its beats go to the inline-data FIFO,
        // the first here, the others in `IssueInline`.
        self.pg_write.next = self.piece.val();
        self.rj_write.next = self.piece.val() & !self.il_r.q.val();
        self.pg_data.next = bit_cast::<21, 6>(self.pg_skip.val())
            | (bit_cast::<21, 13>(self.pg_len.val()) << 6)
            | (bit_cast::<21, 1>(self.pg_last.val().into()) << 19)
            | (bit_cast::<21, 1>(self.il_r.q.val().into()) << 20);
        self.il_write.next = (self.piece.val() & self.il_r.q.val())
            | ((self.state.q.val() == TxsState::IssueInline) & self.il_room.q.val());
        self.il_data.next = self.ext0.q.val();
        if self.state.q.val() == TxsState::IssueInline {
            self.il_data.next = self.ext1.q.val();
            if self.il_k.q.val() == 2 {
                self.il_data.next = self.ext2.q.val();
            }
            if self.il_k.q.val() == 3 {
                self.il_data.next = self.ext3.q.val();
            }
        }
        if self.own_we.val() {
            self.dyn_ram.write_address.next = self.cur_qpn.q.val();
            self.dyn_ram.write_data.next.next_psn = self.st_psn.val();
            self.dyn_ram.write_data.next.err = self.st_err.val().into();
            self.dyn_ram.write_data.next.reads_sent = self.st_reads.val();
            self.dyn_ram.write_data.next.ci = self.st_ci.val();
            self.dyn_ram.write_data.next.pi = self.pi.q.val();
        }
        self.dyn_ram.write_enable.next = self.own_we.val() | self.cmd_we.val();
        // The RX engine's copy counts the WQEs recorded in the in-flight table: none while in
        // the error state, whose WQEs complete through the local-completion FIFO (the completer
        // would otherwise take a WQE whose completion is still queued there for one in flight,
        // and flush its stale in-flight slot). The ACK timer's copy counts them all.
        self.sent_ram.write_enable.next = self.dyn_ram.write_enable.val() & !(self.own_we.val() & self.st_err.val());
        self.sent_ram.write_address.next = self.dyn_ram.write_address.val();
        self.sent_ram.write_data.next = self.dyn_ram.write_data.val();
        self.sent_we.next = self.dyn_ram.write_enable.val();
        self.sent_waddr.next = self.dyn_ram.write_address.val();
        self.sent_wdata.next = self.dyn_ram.write_data.val().ci;
        // The status register shows each state's old number (its `(was N)`), so a status
        // read stays comparable with earlier captures and notes. (Assigned first: the codes no
        // state uses would otherwise leave it unassigned, a latch.)
        self.dbg_state.next = 0.into();
        match self.state.q.val() {
            TxsState::Idle => self.dbg_state.next = 0.into(),
            TxsState::LoadQp => self.dbg_state.next = 1.into(),
            TxsState::TakeQp => self.dbg_state.next = 2.into(),
            TxsState::CheckSq => self.dbg_state.next = 3.into(),
            TxsState::FetchWqe => self.dbg_state.next = 4.into(),
            TxsState::WaitWqeBeats => self.dbg_state.next = 5.into(),
            TxsState::LookupLkey => self.dbg_state.next = 6.into(),
            TxsState::CheckLkey => self.dbg_state.next = 7.into(),
            TxsState::IssuePacket => self.dbg_state.next = 8.into(),
            TxsState::IssueInline => self.dbg_state.next = 16.into(),
            TxsState::RecordWqe => self.dbg_state.next = 9.into(),
            TxsState::CompleteError => self.dbg_state.next = 10.into(),
            TxsState::SaveAndYield => self.dbg_state.next = 11.into(),
            TxsState::CheckRoom => self.dbg_state.next = 12.into(),
            TxsState::ActOnChecks => self.dbg_state.next = 13.into(),
            TxsState::SizePacket => self.dbg_state.next = 14.into(),
            TxsState::NextWqe => self.dbg_state.next = 15.into(),
            TxsState::WaitIssueSlot => self.dbg_state.next = 19.into(),
            TxsState::CheckBounds => self.dbg_state.next = 20.into(),
            TxsState::SizePiece => self.dbg_state.next = 21.into(),
            TxsState::IssuePiece => self.dbg_state.next = 22.into(),
            TxsState::SkipRetired => self.dbg_state.next = 23.into(),
            TxsState::KeepSge => self.dbg_state.next = 24.into(),
            TxsState::SelectSge => self.dbg_state.next = 25.into(),
            TxsState::SizeList => self.dbg_state.next = 26.into(),
            TxsState::CountList => self.dbg_state.next = 27.into(),
            TxsState::WalkList => self.dbg_state.next = 28.into(),
            TxsState::WalkListRead => self.dbg_state.next = 29.into(),
            TxsState::LoadSge => self.dbg_state.next = 30.into(),
            TxsState::SumList => self.dbg_state.next = 31.into(),
            TxsState::CopyListRead => self.dbg_state.next = 32.into(),
            TxsState::CopyListWrite => self.dbg_state.next = 33.into(),
            TxsState::FetchLimits => self.dbg_state.next = 34.into(),
            TxsState::FetchMinima => self.dbg_state.next = 35.into(),
            TxsState::FetchSize => self.dbg_state.next = 36.into(),
            TxsState::FetchSaturate => self.dbg_state.next = 37.into(),
            _ => {}
        }
        if self.cmd_fire.val() {
            self.ext_ok.d.next = false;
        }
        self.cmd_in_load.d.next = self.cmd_fire.val() & (self.state.q.val() == TxsState::LoadQp);
        // The served QP is offered again (rung while served). Another QP waits: take the
        // offer, so the other QP is offered and `db_other` lets this one step aside for it; the
        // served QP goes back into the ready set from `Idle`. No other QP waits: take the offer
        // and serve the new WQEs in this visit (its producer index is the newest), so the
        // fetch-ahead machine goes on appending instead of the SQ running dry, a trip through
        // `Idle` and a fresh 64-cycle WQE read per batch the host posts; not while a rewind or
        // an SQ drain bounds the visit by a saved producer index, nor before `TakeQp` has set
        // it, nor after a context command (`ext_ok`: the move to SQD may have come after
        // `TakeQp` loaded the context). (`Idle` still puts the QP back into the ready set, in
        // case it leaves with work.)
        if self.serving.q.val()
            & (self.state.q.val() != TxsState::Idle)
            & !self.db_empty.val()
            & (self.db_rec.val().qpn == self.cur_qpn.q.val())
        {
            if self.db_others.val() {
                self.db_read.next = true;
                self.self_rung.d.next = true;
            } else if (self.state.q.val() != TxsState::LoadQp)
                & (self.state.q.val() != TxsState::TakeQp)
                & self.ext_ok.q.val()
                & !self.rewind.q.val()
                & !self.ctx.q.val().sq_drain.any()
                & (self.db_rec.val().qpn_hi == 0)
            {
                self.db_read.next = true;
                self.self_rung.d.next = true;
                self.pi.d.next = self.db_rec.val().pi;
            }
        }
        if self.reset.val() {
            self.state.d.next = TxsState::Idle;
            self.at_nw.d.next = false;
            self.rw_epoch.d.next = 0.into();
            self.rw_flip_r.d.next = false;
            self.serving.d.next = false;
            self.self_rung.d.next = false;
        }
    }
}
