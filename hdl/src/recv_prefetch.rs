//! Receive-WQE prefetch: the responder's receive WQEs read ahead, several per DMA read.
//!
//! A SEND's first packet (and a WRITE with immediate's last) needs the receive WQE at its
//! ring's consumer index (IBTA Vol 1 9.7.4.1.3, 10.8.3.3). Read one at a time, each WQE cost the
//! RX engine a DMA round trip (64 cycles in the simulator's model) in the middle of the packet's
//! visit, and 64-byte SENDs ran at 3 M messages/s. This block sits between the RX engine's
//! receive-WQE read port and the DMA read issuer: a read that misses its buffer fetches the
//! requested WQE and the posted ones after it, up to 8 beats, in one burst; the following
//! requests of the same ring take theirs from the buffer without a DMA read.
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Beats a burst reads at most (the buffer holds one burst).
pub const PREFETCH_BEATS: u64 = 8;

/// The [`RecvWqePrefetch`] block's state.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum RecvPrefetchState {
    /// Waiting for a request; its fields are registered as it arrives, and one for the
    /// buffer's head WQE goes straight to `Accept`.
    Idle,
    /// The request is compared with the buffer's tag (ring base, stride, consumer index of its
    /// head WQE); the burst a miss would read is bounded (posted WQEs, ring end, 4 KiB page).
    Compare,
    /// The verdict: a hit goes on to skip the buffered WQEs before the one asked for, a miss
    /// to empty the buffer.
    Route,
    /// A hit: the beats of the WQEs before the requested one are discarded.
    Skip,
    /// A miss: every beat buffered or still in flight is discarded.
    Drain,
    /// A burst's bounds, pairwise.
    Bound,
    /// The burst's WQE count is the smallest of its bounds.
    Size,
    /// The burst's AR waits for the DMA read issuer.
    Issue,
    /// The request is accepted (`req_ready` for one cycle); its first beat, if buffered, is
    /// read out.
    Accept,
    /// The WQE's beats go to the RX engine, one per cycle once they are in the buffer.
    Serve,
    /// After a WQE is served: the index after the buffer's last WQE, and whether the ring has
    /// posted WQEs from there on and the buffer room for another burst (a top-up).
    TopIndex,
    /// A top-up: its first WQE's address; then `Compare` and `Route` bound it as a miss's
    /// burst, which `Issue` appends to the buffer.
    TopAddr,
}

/// Reads the responder's receive WQEs ahead, several per DMA read, and hands them to the RX
/// engine one request at a time.
///
/// **Requests** (`req_valid`, held until `req_ready`; from [`crate::rx_engine::RxEngine`]'s
/// `FetchRecvWqe`): the WQE at `req_addr`, `req_nb + 1` beats of 64 bytes (1, 2 or 4: the
/// ring's stride), which is entry `req_ci` (the consumer index, mod 2^16) of the ring at
/// `req_base` with index mask `req_mask` (ring size − 1); `req_pi` is the ring's producer index,
/// so `req_pi − req_ci` WQEs from this one on are posted. After `req_ready` the WQE's beats
/// come out at `r_valid` / `r_data` in order, one per cycle as they are available, without
/// back-pressure (the engine takes each in the cycle it is valid).
///
/// **The buffer** (a 16-entry FIFO of 64-byte beats, at most [`PREFETCH_BEATS`] used) holds
/// one burst: consecutive WQEs of one ring, tagged with the ring's base, its stride and the
/// consumer index of the WQE at its head. A request is a **hit** when it names the same ring
/// and stride and its index is the head's or a later one still buffered (or in flight): the
/// beats of the WQEs before it are discarded and its own are served; nothing is read from
/// host memory. Otherwise it is a **miss**: the buffer is emptied (beats still in flight
/// included) and one burst reads the requested WQE and as many after it as are posted, up to
/// the ring's end, the 4 KiB page's end (AXI4 A3.4.1; WQEs are aligned to their size) and 8
/// beats. Only posted WQEs are read, and a WQE is served at most once from the buffer: a
/// request for a WQE that was served before (a SEND's first packet again after go-back-N)
/// misses and reads it again. A posted WQE belongs to the NIC until its completion, so what
/// the buffer holds cannot change underneath it; `flush` (any context command: a QP or SRQ
/// reset, a ring moved) drops the tag, so the next request misses.
///
/// **Timing**: a hit on the buffer's head WQE (the WQE after the last one served, the usual
/// case) is recognised in `Idle` as it arrives and accepted the next cycle (until stop 38 it
/// went through `Compare` and `Route` too, 3 cycles); a hit further in is accepted 4 cycles
/// after it is presented plus one per discarded beat (`Skip`), and the first beat follows
/// in the cycle after the acceptance if it is buffered (`Accept` reads it into the output
/// register; 2 cycles until stop 38). A miss adds the drain, one cycle to size the burst and
/// the AR handshake; the beats then follow the DMA read's latency. Initiation interval: one
/// request at a time. `reset` empties the buffer (a [`crate::reset_fifo::ResetFifo`]). Logic:
/// 16-bit subtracts and compares and 64-bit equalities, between registers (the head hit's
/// compares the request's fields, which the RX engine drives from its registers, with the
/// tag's), ≤ 6 LUT levels.
#[derive(LogicBlock, Default)]
pub struct RecvWqePrefetch {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Any context command: the buffer's contents may no longer be the ring's.
    pub flush: Signal<In, Bit>,
    pub req_valid: Signal<In, Bit>,
    pub req_addr: Signal<In, Bits<64>>,
    pub req_base: Signal<In, Bits<64>>,
    pub req_ci: Signal<In, Bits<16>>,
    pub req_pi: Signal<In, Bits<16>>,
    pub req_mask: Signal<In, Bits<16>>,
    /// Beats of one WQE minus one: 0, 1 or 3.
    pub req_nb: Signal<In, Bits<2>>,
    pub req_ready: Signal<Out, Bit>,
    pub r_valid: Signal<Out, Bit>,
    pub r_data: Signal<Out, Bits<512>>,
    /// The burst's AR (to [`crate::dma_read::DmaReadIssuer`]'s receive-WQE port, AXI ID 2):
    /// `ar_len` is its beats minus one.
    pub ar_valid: Signal<Out, Bit>,
    pub ar_addr: Signal<Out, Bits<64>>,
    pub ar_len: Signal<Out, Bits<3>>,
    pub ar_ready: Signal<In, Bit>,
    /// A beat of receive-WQE read data (AXI ID 2), in order.
    pub in_valid: Signal<In, Bit>,
    pub in_data: Signal<In, Bits<512>>,
    /// One cycle per request served from the buffer (`hit`) or by a new burst (`miss`).
    pub hit: Signal<Out, Bit>,
    pub miss: Signal<Out, Bit>,
    state: DFF<RecvPrefetchState>,
    fifo: ResetFifo<Bits<512>, 4, 5, 1>,
    /// The request (or a top-up's first WQE), registered.
    l_addr: DFF<Bits<64>>,
    l_base: DFF<Bits<64>>,
    l_ci: DFF<Bits<16>>,
    l_pi: DFF<Bits<16>>,
    l_mask: DFF<Bits<16>>,
    l_nb: DFF<Bits<2>>,
    /// The buffer's tag: valid, ring base, beats per WQE minus one, the head WQE's index, and
    /// the WQEs buffered or in flight from the head on.
    tag_valid: DFF<Bit>,
    tag_base: DFF<Bits<64>>,
    tag_nb: DFF<Bits<2>>,
    head_ci: DFF<Bits<16>>,
    n_left: DFF<Bits<5>>,
    /// Beats read from host memory (accepted ARs) and not yet taken out of the FIFO.
    owed: DFF<Bits<5>>,
    /// The burst being sized is a top-up (appended; the buffer is not emptied).
    topup: DFF<Bit>,
    /// `Compare`: the request's distance from the head, and whether the ring is the tag's.
    k_r: DFF<Bits<16>>,
    same_r: DFF<Bit>,
    /// `Compare`: posted WQEs from the request on, WQEs to the ring's end minus one, beats to
    /// the page's end minus one.
    avail_r: DFF<Bits<16>>,
    to_end_r: DFF<Bits<16>>,
    page_r: DFF<Bits<6>>,
    /// `Route`: each bound saturated at 8 WQEs; `Bound`: the smaller of two pairs; `Size`: the
    /// burst's WQEs.
    a_sat: DFF<Bits<4>>,
    e_sat: DFF<Bits<4>>,
    p_sat: DFF<Bits<4>>,
    cap: DFF<Bits<4>>,
    m1: DFF<Bits<4>>,
    m2: DFF<Bits<4>>,
    n_r: DFF<Bits<4>>,
    /// Beats to discard (`Skip`) and to serve after this one (`Serve`).
    skip_left: DFF<Bits<5>>,
    serve_left: DFF<Bits<2>>,
    /// `TopIndex`: the index after the buffer's last WQE masked into the ring, and whether a
    /// top-up is worth sizing.
    idx_r: DFF<Bits<16>>,
    more_r: DFF<Bit>,
    /// The beat to the engine, registered.
    o_valid: DFF<Bit>,
    o_data: DFF<Bits<512>>,
    k5: Signal<Local, Bits<5>>,
    pop: Signal<Local, Bit>,
    beats: Signal<Local, Bits<5>>,
    page_w: Signal<Local, Bits<7>>,
    idx_off: Signal<Local, Bits<64>>,
    /// `Idle`: the request names the buffer's head WQE (the one after the last served), so it
    /// is a hit with nothing to skip, accepted next cycle without `Compare` and `Route`.
    head_hit: Signal<Local, Bit>,
    /// `Accept`, `Serve`: the WQE's beats left after the one at the buffer's head.
    left: Signal<Local, Bits<2>>,
}

impl Logic for RecvWqePrefetch {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, l_addr, l_base, l_ci, l_pi, l_mask, l_nb, tag_valid, tag_base, tag_nb, head_ci, n_left,
            owed, topup, k_r, same_r, avail_r, to_end_r, page_r, a_sat, e_sat, p_sat, cap, m1, m2, n_r, skip_left,
            serve_left, idx_r, more_r, o_valid, o_data
        );
        clock!(self, clock, fifo);
        self.fifo.reset.next = self.reset.val();
        self.fifo.write.next = self.in_valid.val();
        self.fifo.data_in.next = self.in_data.val();
        self.pop.next = false;
        self.req_ready.next = self.state.q.val() == RecvPrefetchState::Accept;
        self.ar_valid.next = self.state.q.val() == RecvPrefetchState::Issue;
        self.ar_addr.next = self.l_addr.q.val();
        self.hit.next = false;
        self.miss.next = false;
        // Beats of the burst: its WQEs times the stride.
        self.beats.next = bit_cast::<5, 4>(self.n_r.q.val());
        if self.l_nb.q.val() == 1 {
            self.beats.next = bit_cast::<5, 4>(self.n_r.q.val()) << 1;
        } else if self.l_nb.q.val() == 3 {
            self.beats.next = bit_cast::<5, 4>(self.n_r.q.val()) << 2;
        }
        self.ar_len.next = bit_cast::<3, 5>(self.beats.val() - 1);
        self.k5.next = self.k_r.q.val().get_bits::<5>(0);
        self.page_w.next = bit_cast::<7, 6>(self.page_r.q.val()) + 1;
        // A top-up's first WQE: base + index * stride.
        self.idx_off.next = bit_cast::<64, 16>(self.idx_r.q.val()) << 6;
        if self.l_nb.q.val() == 1 {
            self.idx_off.next = bit_cast::<64, 16>(self.idx_r.q.val()) << 7;
        } else if self.l_nb.q.val() == 3 {
            self.idx_off.next = bit_cast::<64, 16>(self.idx_r.q.val()) << 8;
        }
        self.o_valid.d.next = false;
        self.o_data.d.next = self.fifo.data_out.val();
        self.head_hit.next = false;
        self.r_valid.next = self.o_valid.q.val();
        self.r_data.next = self.o_data.q.val();
        match self.state.q.val() {
            RecvPrefetchState::Idle => {
                self.topup.d.next = false;
                // (`Route`'s hit with `k` = 0, decided from the request as it arrives; not in
                // a cycle that flushes the tag.)
                self.head_hit.next = self.tag_valid.q.val()
                    & self.n_left.q.val().any()
                    & !self.flush.val()
                    & (self.req_base.val() == self.tag_base.q.val())
                    & (self.req_nb.val() == self.tag_nb.q.val())
                    & (self.req_ci.val() == self.head_ci.q.val());
                self.l_addr.d.next = self.req_addr.val();
                self.l_base.d.next = self.req_base.val();
                self.l_ci.d.next = self.req_ci.val();
                self.l_pi.d.next = self.req_pi.val();
                self.l_mask.d.next = self.req_mask.val();
                self.l_nb.d.next = self.req_nb.val();
                if self.req_valid.val() {
                    self.state.d.next = RecvPrefetchState::Compare;
                    if self.head_hit.val() {
                        self.hit.next = true;
                        self.state.d.next = RecvPrefetchState::Accept;
                    }
                }
            }
            RecvPrefetchState::Compare => {
                self.k_r.d.next = self.l_ci.q.val() - self.head_ci.q.val();
                self.same_r.d.next = self.tag_valid.q.val()
                    & (self.l_base.q.val() == self.tag_base.q.val())
                    & (self.l_nb.q.val() == self.tag_nb.q.val());
                self.avail_r.d.next = self.l_pi.q.val() - self.l_ci.q.val();
                self.to_end_r.d.next = self.l_mask.q.val() - (self.l_ci.q.val() & self.l_mask.q.val());
                self.page_r.d.next = !self.l_addr.q.val().get_bits::<6>(6);
                self.state.d.next = RecvPrefetchState::Route;
            }
            RecvPrefetchState::Route => {
                // The bounds of a burst, each saturated at 8 WQEs (at least 1: a request's own
                // WQE is always read).
                self.a_sat.d.next = bit_cast::<4, 16>(self.avail_r.q.val());
                if self.avail_r.q.val() >= 8 {
                    self.a_sat.d.next = 8.into();
                } else if !self.avail_r.q.val().any() {
                    self.a_sat.d.next = 1.into();
                }
                self.e_sat.d.next = bit_cast::<4, 16>(self.to_end_r.q.val()) + 1;
                if self.to_end_r.q.val() >= 7 {
                    self.e_sat.d.next = 8.into();
                }
                // WQEs to the page's end and per burst of 8 beats, by stride.
                self.p_sat.d.next = 8.into();
                self.cap.d.next = 8.into();
                if self.l_nb.q.val() == 1 {
                    self.cap.d.next = 4.into();
                    if self.page_w.val() < 16 {
                        self.p_sat.d.next = bit_cast::<4, 7>(self.page_w.val() >> 1);
                    }
                } else if self.l_nb.q.val() == 3 {
                    self.cap.d.next = 2.into();
                    if self.page_w.val() < 32 {
                        self.p_sat.d.next = bit_cast::<4, 7>(self.page_w.val() >> 2);
                    }
                } else if self.page_w.val() < 8 {
                    self.p_sat.d.next = bit_cast::<4, 7>(self.page_w.val());
                }
                if self.topup.q.val() {
                    self.state.d.next = RecvPrefetchState::Bound;
                } else if self.same_r.q.val()
                    & !self.k_r.q.val().get_bits::<11>(5).any()
                    & (self.k5.val() < self.n_left.q.val())
                {
                    // A hit: skip the WQEs before it.
                    self.hit.next = true;
                    self.skip_left.d.next = self.k5.val();
                    if self.l_nb.q.val() == 1 {
                        self.skip_left.d.next = self.k5.val() << 1;
                    } else if self.l_nb.q.val() == 3 {
                        self.skip_left.d.next = self.k5.val() << 2;
                    }
                    self.n_left.d.next = self.n_left.q.val() - self.k5.val();
                    self.head_ci.d.next = self.l_ci.q.val();
                    self.state.d.next = RecvPrefetchState::Skip;
                    if self.k5.val() == 0 {
                        // It is the buffer's head (the usual case: the WQE after the last one
                        // served): nothing to skip.
                        self.state.d.next = RecvPrefetchState::Accept;
                    }
                } else {
                    self.miss.next = true;
                    self.tag_valid.d.next = false;
                    self.state.d.next = RecvPrefetchState::Drain;
                }
            }
            RecvPrefetchState::Skip => {
                if !self.skip_left.q.val().any() {
                    self.state.d.next = RecvPrefetchState::Accept;
                } else if !self.fifo.empty.val() {
                    self.pop.next = true;
                    self.skip_left.d.next = self.skip_left.q.val() - 1;
                }
            }
            RecvPrefetchState::Drain => {
                if !self.owed.q.val().any() {
                    self.state.d.next = RecvPrefetchState::Bound;
                } else if !self.fifo.empty.val() {
                    self.pop.next = true;
                }
            }
            RecvPrefetchState::Bound => {
                self.m1.d.next = self.a_sat.q.val();
                if self.e_sat.q.val() < self.a_sat.q.val() {
                    self.m1.d.next = self.e_sat.q.val();
                }
                self.m2.d.next = self.p_sat.q.val();
                if self.cap.q.val() < self.p_sat.q.val() {
                    self.m2.d.next = self.cap.q.val();
                }
                self.state.d.next = RecvPrefetchState::Size;
            }
            RecvPrefetchState::Size => {
                self.n_r.d.next = self.m1.q.val();
                if self.m2.q.val() < self.m1.q.val() {
                    self.n_r.d.next = self.m2.q.val();
                }
                self.state.d.next = RecvPrefetchState::Issue;
            }
            RecvPrefetchState::Issue => {
                if self.ar_ready.val() {
                    if self.topup.q.val() {
                        // Appended behind what the buffer holds.
                        self.owed.d.next = self.owed.q.val() + self.beats.val();
                        self.n_left.d.next = self.n_left.q.val() + bit_cast::<5, 4>(self.n_r.q.val());
                        self.state.d.next = RecvPrefetchState::Idle;
                    } else {
                        self.owed.d.next = self.beats.val();
                        self.tag_valid.d.next = true;
                        self.tag_base.d.next = self.l_base.q.val();
                        self.tag_nb.d.next = self.l_nb.q.val();
                        self.head_ci.d.next = self.l_ci.q.val();
                        self.n_left.d.next = bit_cast::<5, 4>(self.n_r.q.val());
                        self.state.d.next = RecvPrefetchState::Accept;
                    }
                }
            }
            RecvPrefetchState::Accept => {
                // The WQE's beats are served from here on (below), the first one now if it is
                // in the buffer.
                self.serve_left.d.next = self.l_nb.q.val();
                self.state.d.next = RecvPrefetchState::Serve;
            }
            RecvPrefetchState::Serve => {}
            RecvPrefetchState::TopIndex => {
                // The buffer now holds `n_left` WQEs from `head_ci` on; the next to read is
                // the one after them, if it is posted (`l_pi` is the producer index the
                // request saw) and the FIFO has room for a whole burst.
                self.l_ci.d.next = self.head_ci.q.val() + bit_cast::<16, 5>(self.n_left.q.val());
                self.idx_r.d.next =
                    (self.head_ci.q.val() + bit_cast::<16, 5>(self.n_left.q.val())) & self.l_mask.q.val();
                self.more_r.d.next = self.tag_valid.q.val()
                    & ((self.head_ci.q.val() + bit_cast::<16, 5>(self.n_left.q.val())) != self.l_pi.q.val())
                    & (self.owed.q.val() <= 8);
                self.state.d.next = RecvPrefetchState::TopAddr;
            }
            RecvPrefetchState::TopAddr => {
                self.l_addr.d.next = self.l_base.q.val() + self.idx_off.val();
                self.topup.d.next = true;
                self.state.d.next = RecvPrefetchState::Idle;
                if self.more_r.q.val() & self.tag_valid.q.val() {
                    self.state.d.next = RecvPrefetchState::Compare;
                }
            }
        }
        // `Accept` and `Serve`: a beat of the WQE out per cycle while the buffer has one; after
        // the last (`left` = 0) the next WQE is the head.
        self.left.next = self.serve_left.q.val();
        if self.state.q.val() == RecvPrefetchState::Accept {
            self.left.next = self.l_nb.q.val();
        }
        if ((self.state.q.val() == RecvPrefetchState::Accept) | (self.state.q.val() == RecvPrefetchState::Serve))
            & !self.fifo.empty.val()
        {
            self.pop.next = true;
            self.o_valid.d.next = true;
            self.serve_left.d.next = self.left.val() - 1;
            if !self.left.val().any() {
                self.head_ci.d.next = self.head_ci.q.val() + 1;
                self.n_left.d.next = self.n_left.q.val() - 1;
                self.state.d.next = RecvPrefetchState::TopIndex;
            }
        }
        self.fifo.read.next = self.pop.val();
        if self.pop.val() {
            self.owed.d.next = self.owed.q.val() - 1;
        }
        if self.flush.val() {
            self.tag_valid.d.next = false;
            // A top-up not yet issued is dropped: the ring it would read may be gone.
            if (self.topup.q.val()
                & (self.state.q.val() != RecvPrefetchState::Idle)
                & !((self.state.q.val() == RecvPrefetchState::Issue) & self.ar_ready.val()))
                | (self.state.q.val() == RecvPrefetchState::TopAddr)
            {
                self.state.d.next = RecvPrefetchState::Idle;
            }
        }
        if self.reset.val() {
            // (The FIFO is emptied by the reset itself: `ResetFifo`.)
            self.state.d.next = RecvPrefetchState::Idle;
            self.tag_valid.d.next = false;
            self.owed.d.next = 0.into();
            self.n_left.d.next = 0.into();
            self.o_valid.d.next = false;
            self.topup.d.next = false;
        }
    }
}
