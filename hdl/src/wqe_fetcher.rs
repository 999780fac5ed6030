//! The requester's WQE fetcher: send WQEs read from the SQ ring by DMA (AXI ID 1), several per
//! read, into a 32-beat prefetch buffer that [`crate::tx_scheduler::TxScheduler`] takes them
//! from.
//!
//! Two machines issue the reads, never at once:
//! - a **fresh fetch**, sized and issued by the scheduler's own states (`FetchLimits`,
//!   `FetchSaturate`, `FetchMinima`, `FetchSize`, `FetchWqe`: the `size_*` and `fetch_wait`
//!   inputs), from the WQE the scheduler needs next (`ci`, at `wqe_addr`), after the buffer's
//!   contents were discarded (`discard`);
//! - the **fetch-ahead** machine ([`AheadStep`]), which appends the WQEs posted after the
//!   buffer's last one while the scheduler goes on taking the buffered ones (`append`, or by
//!   itself once a fresh fetch is accepted), so an append costs the WQE path no cycle.
//!
//! Both size a burst in the same four registered steps (WQEs posted, to the ring's end, to
//! the 4 KiB page's end (a burst never crosses one, AXI4 A3.4.1), in the send window of
//! [`rnic_contract::LOG_MAX_INFLIGHT_WQES`], and the buffer's room; each saturated at 8 WQEs;
//! pairwise minima; the least): bursts of at most 8 beats (8, 4 or 2 WQEs of 64, 128 or 256
//! bytes; a 512-byte WQE alone, its first 5 beats: slots 5..7 hold only inline data past 256
//! bytes, which the scheduler reads as payload).
//!
//! Split out of the scheduler in stop 34 (issue 13, part 1): the same behaviour, cycle for
//! cycle (every `tx_scheduler_tb` and system test unchanged), with the takes decided here from
//! the scheduler's registered intents and `pf_avail != 0` / `pf_drop != 0` kept as registers,
//! for timing; its own testbench is `hdl/tests/wqe_fetcher_tb.rs`.
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Beats the prefetch buffer holds (64 bytes each).
pub const BUFFER_BEATS: u64 = 32;

/// A beat of the prefetch buffer: 64 bytes of the SQ ring as the DMA returned them, and
/// whether the read failed (AXI `SLVERR`/`DECERR` on that beat).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct WqeBeat {
    pub data: Bits<512>,
    pub err: Bit,
}

/// The fetch-ahead machine of [`WqeFetcher`]: it appends the next posted WQEs to the prefetch
/// buffer while the scheduler goes on taking the buffered ones. The scheduler starts it from
/// `NextWqe` (`append`: WQEs posted past the buffer's last, room for a burst, none running),
/// and it starts itself the cycle after a fresh fetch is accepted (`ah_kick`) if more WQEs are
/// posted. It sizes the burst with the same registers and steps as a fresh fetch (the
/// scheduler fetches only while this one is idle, and this one starts only from `NextWqe`
/// or after a fresh fetch's acceptance, so they never size at once) and issues it. Latency:
/// 7 cycles from `append` to the read request, then `Done`. 512-byte WQEs are appended too
/// (one per burst, its first 5 slots; before stop 33 they were only ever fetched fresh, a DMA
/// round trip per WQE).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum AheadStep {
    /// Nothing to append.
    Idle,
    /// The append's first WQE (`fci`, the index after the buffer's last) as a slot offset.
    Off,
    /// Its address (`f_addr`); the fetch is marked an append (`pf_app`).
    Addr,
    /// As `FetchLimits`: each limit in WQEs, registered.
    Limits,
    /// As `FetchSaturate`: saturated at 8 WQEs.
    Saturate,
    /// As `FetchMinima`: pairwise minima.
    Minima,
    /// As `FetchSize`: the burst in WQEs and beats; none (the buffer filled meanwhile) ends it.
    Size,
    /// The read request waits for the DMA read issuer; as it is accepted, `pf_n` and `pf_next`
    /// count the appended WQEs.
    Issue,
    /// One cycle more, so `pf_n` (through `pf_inc`) and `pf_total` count the burst (both two
    /// cycles after the acceptance) before anything that waits for this machine to be idle
    /// reads them.
    Done,
}

/// Reads send WQEs ahead into a 32-beat buffer and hands their beats to the scheduler.
///
/// **The served QP** (the scheduler's registers): `qpn`, its consumer index `ci` (the next WQE
/// the scheduler needs, mod 2^16), producer index `pi`, the SQ's `sq_base` (bytes),
/// `sq_log_stride` (a WQE is `64 << sq_log_stride` bytes, 0..=3), `sq_mask` (ring size − 1),
/// and WQEs recorded and not retired, `in_flight` (this cycle) and `in_flight_r` (registered).
///
/// **Controls** (one-cycle strobes from the scheduler's states): `size_limits`,
/// `size_saturate`, `size_minima`, `size_size` (its `Fetch*` sizing steps for a fresh fetch; in
/// `size_size` a burst of at least one WQE is requested, `size_zero` says there was no room),
/// `fetch_wait` (`FetchWqe`: the request waits for `ar_ready`), `discard` (everything buffered
/// or in flight is discarded, the held beats popped, the awaited ones dropped as they arrive),
/// `append` (start the fetch-ahead machine at `next_ci`), `cmd_fire` (a context command: the
/// buffered WQEs may belong to an old connection, `head_ok` falls). Takes, each from the
/// scheduler's registers only: `pop_wait` (`WaitWqeBeats`: the head beat is taken if
/// `beat_ok`), `pop_next` (`NextWqe` takes a one-beat WQE at the head if `beat_ok`),
/// `last_slot` (`WaitWqeBeats` is at the WQE's last beat: taking it takes the WQE, `head_ci`
/// moves on). No take comes in the cycle after a `discard` (the scheduler is then sizing the
/// fetch it discarded for): that cycle counts only dropped beats.
///
/// **Status** (registers only, so nothing in the scheduler waits on its own inputs through
/// this block): `head_ok`, `head_qpn`, `head_ci` (the buffer's WQEs, if any, are the next of
/// `head_qpn` from index `head_ci` on, counted or on their way), `next_ci` (the index after the
/// buffer's last WQE), `burst_room` (the fetch-ahead machine is idle and the buffer has room
/// for a burst of 8 beats), `ahead_idle`, `beat_ok` (a beat is at the head and none is to be
/// discarded), `beat` / `beat_err` (the head beat and its read error), `drop_due` (a discarded
/// beat is popped this cycle), `wqe_addr` (the address of WQE `ci`, two cycles after `ci`).
///
/// **DMA** (AXI ID 1): `ar_valid` / `ar_ready` / `ar_addr` / `ar_len` (beats − 1) request a
/// burst; the returned beats come in order at `r_valid` / `r_data` / `r_err`, without
/// back-pressure (the buffer's room is reserved as a burst is sized).
///
/// Latency: a fresh fetch is requested 5 cycles after `discard` (4 sizing steps, the request
/// registered), an append 7 after `append`; a beat is at the head (`beat_ok`) 2 cycles after it
/// arrives. Initiation interval: one beat in and one out per cycle. LUT levels
/// (`docs/resources.md`): the counters' updates are split over registered steps (`pf_acc`,
/// `rd_r`, `pf_split`), so neither the DMA issuer's `ar_ready` nor the scheduler's take intent
/// reaches an adder. The take intent does reach `pf_fifo`'s read address (a pop picks the
/// next slot) and the counters' selects, so it must come from few flops: the scheduler
/// registers its queue checks' conjunctions (`hit_go`, `one_slot_r`), and `pop_next` is 2
/// levels from its state register, `rd` 3, the RAM's read address 4.
#[derive(LogicBlock, Default)]
pub struct WqeFetcher {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub qpn: Signal<In, Bits<6>>,
    pub ci: Signal<In, Bits<16>>,
    pub pi: Signal<In, Bits<16>>,
    pub sq_base: Signal<In, Bits<64>>,
    pub sq_log_stride: Signal<In, Bits<3>>,
    pub sq_mask: Signal<In, Bits<16>>,
    pub in_flight: Signal<In, Bits<16>>,
    pub in_flight_r: Signal<In, Bits<16>>,
    pub size_limits: Signal<In, Bit>,
    pub size_saturate: Signal<In, Bit>,
    pub size_minima: Signal<In, Bit>,
    pub size_size: Signal<In, Bit>,
    pub size_zero: Signal<Out, Bit>,
    pub fetch_wait: Signal<In, Bit>,
    pub discard: Signal<In, Bit>,
    pub append: Signal<In, Bit>,
    pub pop_wait: Signal<In, Bit>,
    pub pop_next: Signal<In, Bit>,
    pub last_slot: Signal<In, Bit>,
    pub cmd_fire: Signal<In, Bit>,
    pub head_ok: Signal<Out, Bit>,
    pub head_qpn: Signal<Out, Bits<6>>,
    pub head_ci: Signal<Out, Bits<16>>,
    pub next_ci: Signal<Out, Bits<16>>,
    pub burst_room: Signal<Out, Bit>,
    pub ahead_idle: Signal<Out, Bit>,
    pub beat_ok: Signal<Out, Bit>,
    pub beat: Signal<Out, Bits<512>>,
    pub beat_err: Signal<Out, Bit>,
    pub drop_due: Signal<Out, Bit>,
    pub wqe_addr: Signal<Out, Bits<64>>,
    pub ar_valid: Signal<Out, Bit>,
    pub ar_ready: Signal<In, Bit>,
    pub ar_addr: Signal<Out, Bits<64>>,
    pub ar_len: Signal<Out, Bits<3>>,
    pub r_valid: Signal<In, Bit>,
    pub r_data: Signal<In, Bits<512>>,
    pub r_err: Signal<In, Bit>,
    /// The buffer: every kept beat the DMA returns lands in `pf_fifo` (32 beats, LUT RAM),
    /// with its read error.
    pf_fifo: ResetFifo<WqeBeat, 5, 6, 1>,
    /// The buffer's WQEs: `pf_n` consecutive WQEs of QP `pf_qpn` from index `pf_ci` on (the
    /// next one the scheduler takes). `pf_total`: beats asked for and not yet taken (in flight
    /// or buffered), `pf_drop` of them to discard (a fetch that is no longer wanted: another
    /// QP, a rewind, a context command); `pf_stale`: a context command came.
    pf_qpn: DFF<Bits<6>>,
    pf_ci: DFF<Bits<16>>,
    pf_n: DFF<Bits<6>>,
    pf_total: DFF<Bits<6>>,
    /// Beats of the fetch the DMA issuer accepted last cycle, added to `pf_total` a cycle
    /// late so `ar_ready` does not reach the counter's adder (`pf_total` counts a burst two
    /// cycles after its acceptance: the scheduler is in `WaitWqeBeats` then, and the
    /// fetch-ahead machine in `Done`).
    pf_acc: DFF<Bits<6>>,
    /// `pf_acc − 1`, so a take's decrement of `pf_total` needs no second adder.
    pf_acc_m1: DFF<Bits<6>>,
    /// A beat left the buffer's head last cycle (taken or dropped), subtracted from `pf_total`
    /// a cycle late, so the scheduler's take intent does not reach the counter's adder: the
    /// beats asked for and not taken are `pf_total − rd_r` (`tot_now`), and every reader of
    /// `pf_total` subtracts it.
    rd_r: DFF<Bit>,
    tot_now: Signal<Local, Bits<6>>,
    /// The amount a discard moves out of `pf_total` into `pf_drop`'s complement: the pending
    /// take and a beat dropped now.
    dis_sub: Signal<Local, Bits<6>>,
    /// `pf_h != 0` and `pf_h != 1`, so a discard's `drop_nz` is decided without an adder.
    h_nz: Signal<Local, Bit>,
    h_ne1: Signal<Local, Bit>,
    pf_drop: DFF<Bits<6>>,
    /// Beats of discarded fetches still to arrive: dropped as they come, never written into
    /// `pf_fifo`, so they take no room from the next QP's first fetch (before, a QP that
    /// stepped aside with a burst in flight left the next QP a 2-WQE fetch and a 10-cycle
    /// stall at its tenth WQE: `rnic perf read|atomic --qps 8 --post-list 16`).
    pf_drop_in: DFF<Bits<6>>,
    /// Beats written into `pf_fifo` and not taken (exact: a write counts in its cycle).
    pf_h: DFF<Bits<6>>,
    /// A discard was decided last cycle (every committed beat into `pf_drop`): this cycle
    /// moves the ones still due from `pf_drop` to `pf_drop_in` and from `pf_total`, from
    /// registers (deciding and splitting in one cycle put 10 LUT levels before `pf_drop_in`).
    pf_split: DFF<Bit>,
    pf_stale: DFF<Bit>,
    /// The index after the buffer's last WQE (set as a fetch is accepted).
    pf_next: DFF<Bits<16>>,
    /// The fetch being sized is an append from `fci` (at `f_addr`) rather than a fresh fetch
    /// from `ci`.
    pf_app: DFF<Bit>,
    /// The fetch-ahead machine's step ([`AheadStep`]).
    ah: DFF<AheadStep>,
    /// A fresh fetch was accepted last cycle: the fetch-ahead machine appends the next burst
    /// at once if more WQEs are posted, so a QP's first burst is not drained before the second
    /// is asked for.
    ah_kick: DFF<Bit>,
    /// WQEs of an append accepted last cycle, added to `pf_n` now (with a take: one less).
    pf_inc: DFF<Bits<4>>,
    pf_n_inc: Signal<Local, Bits<6>>,
    pf_n_inc_m1: Signal<Local, Bits<6>>,
    /// An append's first WQE, its byte offset in the ring and its address.
    fci: DFF<Bits<16>>,
    f_off: DFF<Bits<64>>,
    f_addr: DFF<Bits<64>>,
    /// WQE `ci`'s byte offset in the ring and its address, over two registers (`ci` moves at
    /// least two cycles before a fresh fetch: the scheduler's `CheckSq` and `NextWqe` come
    /// between).
    wqe_off: DFF<Bits<64>>,
    wqe_addr_r: DFF<Bits<64>>,
    /// The first index and address of the fetch being sized: `fci`/`f_addr` for an append,
    /// `ci`/`wqe_addr` otherwise.
    fci_now: Signal<Local, Bits<16>>,
    f_addr_now: Signal<Local, Bits<64>>,
    /// Beats in the buffer (arrived, not taken): its `empty` from a register; a write is
    /// counted a cycle late (`pf_wr_r`), when the FIFO shows it.
    pf_avail: DFF<Bits<6>>,
    pf_wr_r: DFF<Bit>,
    /// `pf_avail != 0` and `pf_drop != 0`, updated with them.
    avail_nz: DFF<Bit>,
    drop_nz: DFF<Bit>,
    drop_pop6: Signal<Local, Bits<6>>,
    /// A burst is requested (`ar_valid`).
    ar_pend: DFF<Bit>,
    /// Sizing a burst: each limit in WQEs, saturated at 8 WQEs, pairwise minima, and the
    /// burst in WQEs and beats.
    pf_raw_post: DFF<Bits<16>>,
    pf_raw_ring: DFF<Bits<16>>,
    pf_raw_page: DFF<Bits<16>>,
    pf_raw_win: DFF<Bits<16>>,
    pf_lim_post: DFF<Bits<4>>,
    pf_lim_ring: DFF<Bits<4>>,
    pf_lim_page: DFF<Bits<4>>,
    pf_lim_win: DFF<Bits<4>>,
    pf_lim_room: DFF<Bits<4>>,
    pf_m1: DFF<Bits<4>>,
    pf_m2: DFF<Bits<4>>,
    pf_m3: DFF<Bits<4>>,
    pf_k: DFF<Bits<4>>,
    pf_kb: DFF<Bits<4>>,
    /// A returned beat is kept (written into `pf_fifo`): no discarded beat is still due.
    wr_keep: Signal<Local, Bit>,
    drop_pop: Signal<Local, Bit>,
    pf_add: Signal<Local, Bits<6>>,
    pf_posted: Signal<Local, Bits<16>>,
    pf_ring: Signal<Local, Bits<16>>,
    pf_page: Signal<Local, Bits<16>>,
    pf_win: Signal<Local, Bits<16>>,
    pf_room: Signal<Local, Bits<6>>,
    pf_burst: Signal<Local, Bits<4>>,
    pf_kb_m1: Signal<Local, Bits<4>>,
    pf_ksel: Signal<Local, Bits<4>>,
    /// The head beat is taken this cycle; it is a WQE's last (the WQE is taken).
    pop: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    /// A beat leaves the buffer's head (taken or dropped); the counters it decrements, both
    /// ways.
    rd: Signal<Local, Bit>,
    tot_keep: Signal<Local, Bits<6>>,
    tot_dec: Signal<Local, Bits<6>>,
    h_keep: Signal<Local, Bits<6>>,
    h_dec: Signal<Local, Bits<6>>,
    avail_keep: Signal<Local, Bits<6>>,
    avail_dec: Signal<Local, Bits<6>>,
    no_keep: Signal<Local, Bit>,
    no_wr_r: Signal<Local, Bit>,
}

// The fetch limit `64 - in_flight` is the contract's send window.
const _: () = assert!(rnic_contract::LOG_MAX_INFLIGHT_WQES == 6);

impl Logic for WqeFetcher {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            pf_qpn,
            pf_ci,
            pf_n,
            pf_total,
            pf_acc,
            pf_acc_m1,
            rd_r,
            pf_drop,
            pf_drop_in,
            pf_h,
            pf_split,
            pf_stale,
            pf_next,
            pf_app,
            ah,
            ah_kick,
            pf_inc,
            fci,
            f_off,
            f_addr,
            wqe_off,
            wqe_addr_r,
            pf_avail,
            pf_wr_r,
            avail_nz,
            drop_nz,
            ar_pend,
            pf_raw_post,
            pf_raw_ring,
            pf_raw_page,
            pf_raw_win,
            pf_lim_post,
            pf_lim_ring,
            pf_lim_page,
            pf_lim_win,
            pf_lim_room,
            pf_m1,
            pf_m2,
            pf_m3,
            pf_k,
            pf_kb
        );
        clock!(self, clock, pf_fifo);
        self.pf_fifo.reset.next = self.reset.val();

        // The buffer: every beat in unless it is one to drop; stale beats out as soon as they
        // are at the head; the scheduler takes the others (`pop`).
        self.wr_keep.next = self.r_valid.val() & (self.pf_drop_in.q.val() == 0);
        self.pf_fifo.write.next = self.wr_keep.val();
        self.pf_fifo.data_in.next.data = self.r_data.val();
        self.pf_fifo.data_in.next.err = self.r_err.val();
        self.beat.next = self.pf_fifo.data_out.val().data;
        self.beat_err.next = self.pf_fifo.data_out.val().err;
        // (`avail_nz` and `drop_nz` are `pf_avail != 0` and `pf_drop != 0`, kept as registers
        // beside the counters, so the head's verdicts are one LUT from flops.)
        self.beat_ok.next = self.avail_nz.q.val() & !self.drop_nz.q.val();
        self.drop_pop.next = self.avail_nz.q.val() & self.drop_nz.q.val();
        self.drop_due.next = self.drop_pop.val();
        // The scheduler's takes, decided here from its registered intents and the buffer's
        // registers, so the pop reaches the counters and the FIFO's read port in few levels
        // (the scheduler derives the same from `beat_ok` for its own registers).
        self.pop.next = self.beat_ok.val() & (self.pop_wait.val() | self.pop_next.val());
        self.take.next = self.beat_ok.val() & (self.pop_next.val() | self.last_slot.val());
        self.pf_fifo.read.next = self.drop_pop.val() | self.pop.val();
        self.pf_add.next = 0.into();
        if self.ar_pend.q.val() & self.ar_ready.val() {
            // A fetch (fresh or an append) is accepted.
            self.pf_add.next = bit_cast::<6, 4>(self.pf_kb.q.val());
        }
        self.pf_acc.d.next = self.pf_add.val();
        self.pf_acc_m1.d.next = self.pf_add.val() - 1;
        // Each counter a beat taken decrements is formed both ways from registers, and the
        // take (`rd`, late: the scheduler's intent passes through it) only chooses.
        self.rd.next = self.drop_pop.val() | self.pop.val();
        self.rd_r.d.next = self.rd.val();
        self.tot_keep.next = self.pf_total.q.val() + self.pf_acc.q.val();
        self.tot_dec.next = self.pf_total.q.val() + self.pf_acc_m1.q.val();
        self.tot_now.next = self.pf_total.q.val() - bit_cast::<6, 1>(self.rd_r.q.val().into());
        self.h_keep.next = self.pf_h.q.val() + bit_cast::<6, 1>(self.wr_keep.val().into());
        // (The inverted bits are Locals: in Verilog an inverted operand would be widened
        // before the inversion.)
        self.no_keep.next = !self.wr_keep.val();
        self.no_wr_r.next = !self.pf_wr_r.q.val();
        self.h_dec.next = self.pf_h.q.val() - bit_cast::<6, 1>(self.no_keep.val().into());
        self.avail_keep.next = self.pf_avail.q.val() + bit_cast::<6, 1>(self.pf_wr_r.q.val().into());
        self.avail_dec.next = self.pf_avail.q.val() - bit_cast::<6, 1>(self.no_wr_r.val().into());
        self.pf_total.d.next = self.tot_keep.val();
        if self.rd_r.q.val() {
            self.pf_total.d.next = self.tot_dec.val();
        }
        self.pf_drop.d.next = self.pf_drop.q.val() - bit_cast::<6, 1>(self.drop_pop.val().into());
        self.pf_drop_in.d.next =
            self.pf_drop_in.q.val() - bit_cast::<6, 1>((self.r_valid.val() & (self.pf_drop_in.q.val() != 0)).into());
        // (A beat written in cycle t is counted from t + 2: never before the FIFO shows it.)
        self.pf_wr_r.d.next = self.wr_keep.val();
        self.pf_h.d.next = self.h_keep.val();
        if self.rd.val() {
            self.pf_h.d.next = self.h_dec.val();
        }
        self.pf_split.d.next = false;
        self.pf_avail.d.next = self.avail_keep.val();
        self.avail_nz.d.next = self.avail_keep.val() != 0;
        if self.rd.val() {
            self.pf_avail.d.next = self.avail_dec.val();
            self.avail_nz.d.next = self.avail_dec.val() != 0;
        }
        // `pf_drop` less a dropped beat is zero if it equals the beat dropped (0 or 1);
        // likewise `pf_total` (a discard's new `pf_drop`).
        self.drop_pop6.next = bit_cast::<6, 1>(self.drop_pop.val().into());
        self.drop_nz.d.next = self.pf_drop.q.val() != self.drop_pop6.val();
        self.dis_sub.next = self.drop_pop6.val() + bit_cast::<6, 1>(self.rd_r.q.val().into());
        self.h_nz.next = self.pf_h.q.val() != 0;
        self.h_ne1.next = self.pf_h.q.val() != 1;

        // Status for the scheduler's queue checks, from registers.
        self.head_ok.next = (self.pf_n.q.val() != 0) & !self.pf_stale.q.val();
        self.head_qpn.next = self.pf_qpn.q.val();
        self.head_ci.next = self.pf_ci.q.val();
        self.next_ci.next = self.pf_next.q.val();
        self.burst_room.next = (self.ah.q.val() == AheadStep::Idle)
            & ((self.pf_total.q.val() <= 24) | (self.rd_r.q.val() & (self.pf_total.q.val() == 25)));
        self.ahead_idle.next = self.ah.q.val() == AheadStep::Idle;
        self.size_zero.next = self.pf_m3.q.val() == 0;

        // Addresses: WQE `ci` at sq_base + (ci mod size) * (64 << sq_log_stride), and an
        // append's first WQE (`fci`) likewise, each over two registers.
        self.wqe_off.d.next = (bit_cast::<64, 16>(self.ci.val() & self.sq_mask.val())
            << bit_cast::<64, 3>(self.sq_log_stride.val()))
            << 6;
        self.wqe_addr_r.d.next = self.sq_base.val() + self.wqe_off.q.val();
        self.wqe_addr.next = self.wqe_addr_r.q.val();
        self.f_off.d.next = (bit_cast::<64, 16>(self.fci.q.val() & self.sq_mask.val())
            << bit_cast::<64, 3>(self.sq_log_stride.val()))
            << 6;
        self.f_addr.d.next = self.sq_base.val() + self.f_off.q.val();
        self.fci_now.next = self.ci.val();
        self.f_addr_now.next = self.wqe_addr_r.q.val();
        if self.pf_app.q.val() {
            self.fci_now.next = self.fci.q.val();
            self.f_addr_now.next = self.f_addr.q.val();
        }
        // The request is a register (set as a burst is sized), so the DMA issuer's ready
        // answers a flop.
        self.ar_valid.next = self.ar_pend.q.val();
        self.ar_addr.next = self.f_addr_now.val();
        self.pf_kb_m1.next = self.pf_kb.q.val() - 1;
        self.ar_len.next = self.pf_kb_m1.val().get_bits::<3>(0);

        // Burst limits: WQEs posted, slots to the ring's end minus one, to the page's end, room
        // in the send window, room in the buffer; 8 beats at most.
        self.pf_posted.next = self.pi.val() - self.fci_now.val();
        self.pf_ring.next = !self.fci_now.val() & self.sq_mask.val();
        self.pf_page.next = (bit_cast::<16, 13>(4096.into())
            - bit_cast::<16, 12>(self.f_addr_now.val().get_bits::<12>(0)))
            >> (bit_cast::<16, 3>(self.sq_log_stride.val()) + 6);
        self.pf_win.next = bit_cast::<16, 7>(64.into()) - self.in_flight.val();
        self.pf_room.next =
            (bit_cast::<6, 6>(32.into()) - self.tot_now.val()) >> bit_cast::<6, 3>(self.sq_log_stride.val());
        self.pf_burst.next = bit_cast::<4, 4>(8.into()) >> bit_cast::<4, 3>(self.sq_log_stride.val());
        if self.sq_log_stride.val() == 3 {
            self.pf_burst.next = 1.into();
            self.pf_room.next = 0.into();
            if self.tot_now.val() <= 27 {
                self.pf_room.next = 1.into();
            }
        }
        // The burst's WQEs: the least of the three minima (`FetchSize`).
        self.pf_ksel.next = self.pf_m1.q.val();
        if (self.pf_m2.q.val() < self.pf_m1.q.val()) & (self.pf_m2.q.val() <= self.pf_m3.q.val()) {
            self.pf_ksel.next = self.pf_m2.q.val();
        } else if self.pf_m3.q.val() < self.pf_m1.q.val() {
            self.pf_ksel.next = self.pf_m3.q.val();
        }

        // A fresh fetch: the scheduler discards the buffer, sizes, requests, waits.
        self.ah_kick.d.next = false;
        if self.discard.val() {
            // Whatever the buffer still holds or awaits is discarded: the held beats popped,
            // the awaited ones (split off next cycle, `pf_split`) dropped as they arrive (they
            // come before the new fetch's: one AXI ID, in order), so only the held ones still
            // take room when the fetch is sized.
            self.pf_drop.d.next = self.pf_total.q.val() - self.dis_sub.val();
            self.drop_nz.d.next = self.pf_total.q.val() != self.dis_sub.val();
            self.pf_split.d.next = true;
            self.pf_n.d.next = 0.into();
            self.pf_stale.d.next = false;
            self.pf_app.d.next = false;
        }
        if self.append.val() {
            self.fci.d.next = self.pf_next.q.val();
            self.ah.d.next = AheadStep::Off;
        }
        if self.size_size.val() & (self.pf_m3.q.val() != 0) {
            self.ar_pend.d.next = true;
        }
        if self.fetch_wait.val() & self.ar_ready.val() {
            self.ar_pend.d.next = false;
            self.pf_next.d.next = self.fci_now.val() + bit_cast::<16, 4>(self.pf_k.q.val());
            self.pf_qpn.d.next = self.qpn.val();
            self.pf_ci.d.next = self.ci.val();
            self.pf_n.d.next = bit_cast::<6, 4>(self.pf_k.q.val());
            self.ah_kick.d.next = true;
        }
        if self.take.val() {
            // (`pf_n` counts the take below, with any append.)
            self.pf_ci.d.next = self.pf_ci.q.val() + 1;
        }

        // Sizing a burst, shared by a fresh fetch (`size_*`) and the fetch-ahead machine
        // (`Limits` .. `Size`), never both at once: 1, each limit in WQEs, registered.
        if self.size_limits.val() | (self.ah.q.val() == AheadStep::Limits) {
            self.pf_raw_post.d.next = self.pf_posted.val();
            self.pf_raw_ring.d.next = self.pf_ring.val();
            self.pf_raw_page.d.next = self.pf_page.val();
            self.pf_raw_win.d.next = self.pf_win.val();
        }
        if self.size_saturate.val() | (self.ah.q.val() == AheadStep::Saturate) {
            // 2: each limit saturated at 8 WQEs (and the buffer's room).
            self.pf_lim_post.d.next = self.pf_raw_post.q.val().get_bits::<4>(0);
            if self.pf_raw_post.q.val() >= 8 {
                self.pf_lim_post.d.next = 8.into();
            }
            self.pf_lim_ring.d.next = self.pf_raw_ring.q.val().get_bits::<4>(0) + 1;
            if self.pf_raw_ring.q.val() >= 7 {
                self.pf_lim_ring.d.next = 8.into();
            }
            self.pf_lim_page.d.next = self.pf_raw_page.q.val().get_bits::<4>(0);
            if self.pf_raw_page.q.val() >= 8 {
                self.pf_lim_page.d.next = 8.into();
            }
            self.pf_lim_win.d.next = self.pf_raw_win.q.val().get_bits::<4>(0);
            if self.pf_raw_win.q.val() >= 8 {
                self.pf_lim_win.d.next = 8.into();
            }
            self.pf_lim_room.d.next = self.pf_room.val().get_bits::<4>(0);
            if self.pf_room.val() >= 8 {
                self.pf_lim_room.d.next = 8.into();
            }
        }
        if self.size_minima.val() | (self.ah.q.val() == AheadStep::Minima) {
            // 3: pairwise minima.
            self.pf_m1.d.next = self.pf_lim_post.q.val();
            if self.pf_lim_ring.q.val() < self.pf_lim_post.q.val() {
                self.pf_m1.d.next = self.pf_lim_ring.q.val();
            }
            self.pf_m2.d.next = self.pf_lim_page.q.val();
            if self.pf_lim_win.q.val() < self.pf_lim_page.q.val() {
                self.pf_m2.d.next = self.pf_lim_win.q.val();
            }
            self.pf_m3.d.next = self.pf_lim_room.q.val();
            if self.pf_burst.val() < self.pf_lim_room.q.val() {
                self.pf_m3.d.next = self.pf_burst.val();
            }
        }
        if self.size_size.val() | (self.ah.q.val() == AheadStep::Size) {
            // 4: the burst in WQEs and beats.
            self.pf_k.d.next = self.pf_ksel.val();
            self.pf_kb.d.next = self.pf_ksel.val() << bit_cast::<4, 3>(self.sq_log_stride.val());
            if self.sq_log_stride.val() == 3 {
                self.pf_kb.d.next = 5.into();
            }
        }

        // The fetch-ahead machine ([`AheadStep`]).
        self.pf_inc.d.next = 0.into();
        match self.ah.q.val() {
            AheadStep::Idle => {
                if self.ah_kick.q.val() & (self.pf_next.q.val() != self.pi.val()) & (self.in_flight_r.val() < 40) {
                    self.fci.d.next = self.pf_next.q.val();
                    self.ah.d.next = AheadStep::Off;
                }
            }
            AheadStep::Off => {
                // (`f_off` is registered from `fci` this cycle.)
                self.ah.d.next = AheadStep::Addr;
            }
            AheadStep::Addr => {
                // (`f_addr` is registered from `f_off` this cycle.)
                self.pf_app.d.next = true;
                self.ah.d.next = AheadStep::Limits;
            }
            AheadStep::Limits => {
                self.ah.d.next = AheadStep::Saturate;
            }
            AheadStep::Saturate => {
                self.ah.d.next = AheadStep::Minima;
            }
            AheadStep::Minima => {
                self.ah.d.next = AheadStep::Size;
            }
            AheadStep::Size => {
                if self.pf_m3.q.val() == 0 {
                    // No room after all.
                    self.pf_app.d.next = false;
                    self.ah.d.next = AheadStep::Idle;
                } else {
                    self.ar_pend.d.next = true;
                    self.ah.d.next = AheadStep::Issue;
                }
            }
            AheadStep::Issue => {
                if self.ar_ready.val() {
                    // Appended: `pf_n` counts the burst next cycle (`pf_inc`, below); the
                    // buffer's head is still the scheduler's next WQE.
                    self.ar_pend.d.next = false;
                    self.pf_next.d.next = self.fci_now.val() + bit_cast::<16, 4>(self.pf_k.q.val());
                    self.pf_app.d.next = false;
                    self.pf_inc.d.next = self.pf_k.q.val();
                    self.ah.d.next = AheadStep::Done;
                }
            }
            AheadStep::Done => {
                self.ah.d.next = AheadStep::Idle;
            }
        }
        // `pf_n`: a WQE the scheduler takes (one less) and an append accepted last cycle
        // (`pf_inc` more), in one place, the take only choosing between two sums of registers
        // (a discard, or a fresh fetch, sets it above and never meets either: both need the
        // fetch-ahead machine idle since the scheduler's queue checks).
        self.pf_n_inc.next = self.pf_n.q.val() + bit_cast::<6, 4>(self.pf_inc.q.val());
        self.pf_n_inc_m1.next = self.pf_n.q.val() + bit_cast::<6, 4>(self.pf_inc.q.val()) - 1;
        if self.take.val() {
            self.pf_n.d.next = self.pf_n_inc_m1.val();
        } else if self.pf_inc.q.val() != 0 {
            self.pf_n.d.next = self.pf_n_inc.val();
        }
        if self.cmd_fire.val() {
            self.pf_stale.d.next = true;
        }
        if self.pf_split.q.val() {
            // The discard's second cycle: every buffered beat is one to discard, so those not
            // yet written (`pf_drop` − `pf_h`, less one arriving now unless it is dropped
            // already) are dropped as they arrive and leave `pf_drop` and `pf_total`, which
            // keep the written ones (less a pop now). (No fetch is accepted in these cycles:
            // the discard needs the fetch-ahead machine idle.)
            self.pf_drop_in.d.next = self.pf_drop_in.q.val() + self.pf_drop.q.val()
                - self.pf_h.q.val()
                - bit_cast::<6, 1>(self.r_valid.val().into());
            // (`pf_total` counts a pop now next cycle, through `rd_r`; `drop_nz` is `pf_drop`'s
            // new value != 0, from `pf_h` and the two bits, without the adders.)
            self.pf_drop.d.next = self.h_keep.val();
            self.pf_total.d.next = self.h_keep.val();
            self.drop_nz.d.next = self.wr_keep.val() | self.h_nz.val();
            // (The scheduler takes nothing in this cycle: it is sizing the fetch it discarded
            // for. So a pop here is a dropped beat, `drop_pop`, from registers, and the
            // scheduler's take intent stays out of `drop_nz`'s input.)
            if self.drop_pop.val() {
                self.pf_drop.d.next = self.h_dec.val();
                self.drop_nz.d.next = (self.wr_keep.val() & self.h_nz.val()) | (self.no_keep.val() & self.h_ne1.val());
            }
        }
        if self.reset.val() {
            self.ar_pend.d.next = false;
            self.ah.d.next = AheadStep::Idle;
            self.pf_app.d.next = false;
            self.pf_n.d.next = 0.into();
            self.pf_total.d.next = 0.into();
            self.pf_acc.d.next = 0.into();
            self.pf_acc_m1.d.next = 63.into();
            self.rd_r.d.next = false;
            self.pf_drop.d.next = 0.into();
            self.pf_drop_in.d.next = 0.into();
            self.pf_h.d.next = 0.into();
            self.pf_split.d.next = false;
            self.pf_avail.d.next = 0.into();
            self.avail_nz.d.next = false;
            self.drop_nz.d.next = false;
            // (The buffer is emptied by the reset itself: `ResetFifo`.)
        }
    }
}
