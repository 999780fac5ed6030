//! Payload scatter: one received packet's payload split over a list of translated entries,
//! one write job per piece.
//!
//! Two roles of the RX engine ([`crate::rx_engine::RxEngine`]) place a packet's payload over
//! several host buffers, and both did it with a copy of the same loop until stop 39 (issue 13,
//! part 1):
//! - the **responder's receive scatter** (IBTA Vol 1 9.7.4.1.3, 10.8.3; ibv_post_recv(3)): a
//!   SEND's payload over the checked scatter entries of its receive WQE (`sg_ram`);
//! - the **completer's READ-response scatter** (IBTA Vol 1 9.7.4.1.4; ibv_post_send(3)
//!   `sg_list` of an IBV_WR_RDMA_READ): a READ response's payload over the READ's local SGE
//!   list (`rdl_ram`).
//!
//! The engine keeps the list and the cursor's home (its per-QP tables) and asks this block to
//! walk one packet; the block owns the walk. Its testbench is `hdl/tests/scatter_tb.rs`.
use crate::records::ScatterEntryRec;
use rust_hdl::prelude::*;

/// Where [`Scatter`]'s walk of a packet is.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum ScatterStep {
    /// No packet: `start` begins one: at `Piece`, the split taken from the inputs, or, with
    /// `load_entry`, at `Split`, the cursor taken from the list entry at `entry`.
    Idle,
    /// After an entry change: the cursor is the list entry at `entry` (its IOVA and length).
    Entry,
    /// Does the entry end before the payload does (or is it used up); the piece's byte offset
    /// into the packet.
    Split,
    /// One piece: `min(entry left, payload left)` bytes as a job (when the write-job FIFO has
    /// room); then the next entry, or the walk's end.
    Piece,
    /// The engine reads its list at the next entry (`advance` was pulsed): the data shows at
    /// `entry` in the next cycle.
    ReadEntry,
}

/// Walks one packet's payload over a list of `{IOVA, length}` entries.
///
/// **Protocol.** In the cycle `start` is high (the block is `Idle`) it samples the packet
/// (`plen` payload bytes after `hlen` header bytes, `nbeats` buffer beats, `ack`: its last
/// piece carries the packet's ACK request) and the cursor: the current entry's next address
/// `addr_in` and bytes left `rem_in`, or, with `load_entry`, the entry at `entry` past
/// `used_in` bytes already filled. Then, per piece, it shows the piece (`p_addr`, `p_off`,
/// `p_plen`, `p_release`, `p_ack`: a payload write job, `kind` 0, for the engine to pass to the
/// RX writer) and raises `job_write` in a cycle `job_room` is high. When a piece uses up its
/// entry (or the entry was already used up), `advance` pulses: the engine steps its entry index
/// so that `entry` shows the next entry two cycles later (one block-RAM read). `done` pulses
/// with the last piece's `job_write`; in that cycle `next_addr`, `next_rem` and `next_used` give
/// the cursor after the packet (its entry is the engine's index after every `advance`).
///
/// The last piece (and only it) frees the packet's `nbeats` buffer beats and carries `ack`, so
/// the RX writer frees packet-buffer space in order. `p_off` is `hlen` plus the payload bytes
/// earlier pieces took (0..8191).
///
/// **Timing.** Latency from `start` to the first piece: 1 cycle (2 with `load_entry`); each
/// piece 2 cycles (split, job) when `job_room` is high, and each entry change 2 more (list
/// read, entry taken): the same cycles the engine's own loops took. The piece's outputs are
/// registers or a 2-way mux of them; `job_write`, `advance` and `done` decode the step, two
/// registered verdicts and `job_room`; `next_addr` and `next_used` add the piece to a register.
/// ≤ 6 LUT levels (`scripts/synth.sh`).
///
/// A zero-length entry in the list (the engine never writes one) would be stepped over like a
/// used-up one; `plen` 0 is never started (a packet with no payload has nothing to scatter).
#[derive(LogicBlock, Default)]
pub struct Scatter {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Begin a packet (sampled only while `Idle`).
    pub start: Signal<In, Bit>,
    /// Take the cursor from `entry` and `used_in` rather than `addr_in` / `rem_in`.
    pub load_entry: Signal<In, Bit>,
    /// The current entry's next host address (IOVA) and bytes left in it.
    pub addr_in: Signal<In, Bits<64>>,
    pub rem_in: Signal<In, Bits<32>>,
    /// Bytes of the current entry already filled (`load_entry`).
    pub used_in: Signal<In, Bits<32>>,
    /// The packet: payload bytes, header bytes before the payload, buffer beats, ACK request.
    pub plen: Signal<In, Bits<13>>,
    pub hlen: Signal<In, Bits<7>>,
    pub nbeats: Signal<In, Bits<8>>,
    pub ack: Signal<In, Bit>,
    /// The list entry at the engine's current index (a block-RAM read: valid from the second
    /// cycle after an `advance`).
    pub entry: Signal<In, ScatterEntryRec>,
    /// The write-job FIFO can take a job this cycle.
    pub job_room: Signal<In, Bit>,
    /// The piece: a payload job of `p_plen` bytes from byte `p_off` of the packet to `p_addr`;
    /// `p_release` buffer beats to free after it (the last piece's only) and its ACK request.
    pub p_addr: Signal<Out, Bits<64>>,
    pub p_off: Signal<Out, Bits<13>>,
    pub p_plen: Signal<Out, Bits<13>>,
    pub p_release: Signal<Out, Bits<8>>,
    pub p_ack: Signal<Out, Bit>,
    /// Write the piece's job this cycle.
    pub job_write: Signal<Out, Bit>,
    /// Step the entry index (the current entry is used up).
    pub advance: Signal<Out, Bit>,
    /// The packet's last piece is written this cycle; the cursor after it follows.
    pub done: Signal<Out, Bit>,
    pub next_addr: Signal<Out, Bits<64>>,
    pub next_rem: Signal<Out, Bits<32>>,
    pub next_used: Signal<Out, Bits<32>>,
    /// The walk is under way (not `Idle`).
    pub busy: Signal<Out, Bit>,
    step: DFF<ScatterStep>,
    /// The cursor: the current entry's next address, bytes left in it and bytes filled.
    addr: DFF<Bits<64>>,
    rem: DFF<Bits<32>>,
    used: DFF<Bits<32>>,
    /// Payload bytes placed and left; the next piece's offset into the packet.
    off: DFF<Bits<13>>,
    left: DFF<Bits<13>>,
    hoff: DFF<Bits<13>>,
    /// The packet's header length, buffer beats and ACK request, as sampled at `start`.
    hlen_r: DFF<Bits<7>>,
    nbeats_r: DFF<Bits<8>>,
    ack_r: DFF<Bit>,
    /// `Split`'s verdicts: the entry ends before the payload does (`pc_lt`), is used up
    /// (`pc_zero`); `rem_sc`, what it keeps after a piece that does not use it up, so `Piece`
    /// updates `rem` with a mux, not a subtraction behind the piece's own mux.
    pc_lt: DFF<Bit>,
    pc_zero: DFF<Bit>,
    rem_sc: DFF<Bits<32>>,
    /// The piece's length: `rem` when `pc_lt`, else `left`.
    piece: Signal<Local, Bits<32>>,
}

impl Logic for Scatter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, step, addr, rem, used, off, left, hoff, hlen_r, nbeats_r, ack_r, pc_lt, pc_zero, rem_sc
        );
        self.piece.next = bit_cast::<32, 13>(self.left.q.val());
        if self.pc_lt.q.val() {
            self.piece.next = self.rem.q.val();
        }
        self.p_addr.next = self.addr.q.val();
        self.p_off.next = self.hoff.q.val();
        self.p_plen.next = self.piece.val().get_bits::<13>(0);
        self.p_release.next = 0.into();
        self.p_ack.next = false;
        if !self.pc_lt.q.val() {
            self.p_release.next = self.nbeats_r.q.val();
            self.p_ack.next = self.ack_r.q.val();
        }
        self.next_addr.next = self.addr.q.val() + bit_cast::<64, 32>(self.piece.val());
        self.next_rem.next = self.rem_sc.q.val();
        self.next_used.next = self.used.q.val() + self.piece.val();
        self.job_write.next = false;
        self.advance.next = false;
        self.done.next = false;
        self.busy.next = self.step.q.val() != ScatterStep::Idle;
        match self.step.q.val() {
            ScatterStep::Idle => {
                if self.start.val() {
                    self.addr.d.next = self.addr_in.val();
                    self.rem.d.next = self.rem_in.val();
                    self.used.d.next = self.used_in.val();
                    self.off.d.next = 0.into();
                    self.left.d.next = self.plen.val();
                    self.hlen_r.d.next = self.hlen.val();
                    self.nbeats_r.d.next = self.nbeats.val();
                    self.ack_r.d.next = self.ack.val();
                    // `Split`'s work, from the inputs.
                    self.pc_lt.d.next = self.rem_in.val() < bit_cast::<32, 13>(self.plen.val());
                    self.pc_zero.d.next = self.rem_in.val() == 0;
                    self.rem_sc.d.next = self.rem_in.val() - bit_cast::<32, 13>(self.plen.val());
                    self.hoff.d.next = bit_cast::<13, 7>(self.hlen.val());
                    self.step.d.next = ScatterStep::Piece;
                    if self.load_entry.val() {
                        // `Entry`'s work, past the bytes already used, then the split.
                        self.addr.d.next = self.entry.val().iova + bit_cast::<64, 32>(self.used_in.val());
                        self.rem.d.next = self.entry.val().length - self.used_in.val();
                        self.step.d.next = ScatterStep::Split;
                    }
                }
            }
            ScatterStep::Entry => {
                // (`used` is 0 here: an entry is taken whole after an `advance`.)
                self.addr.d.next = self.entry.val().iova;
                self.rem.d.next = self.entry.val().length;
                self.step.d.next = ScatterStep::Split;
            }
            ScatterStep::Split => {
                self.pc_lt.d.next = self.rem.q.val() < bit_cast::<32, 13>(self.left.q.val());
                self.pc_zero.d.next = self.rem.q.val() == 0;
                self.rem_sc.d.next = self.rem.q.val() - bit_cast::<32, 13>(self.left.q.val());
                self.hoff.d.next = bit_cast::<13, 7>(self.hlen_r.q.val()) + self.off.q.val();
                self.step.d.next = ScatterStep::Piece;
            }
            ScatterStep::Piece => {
                if self.pc_zero.q.val() {
                    // The entry is used up (an earlier packet ended at its end): the next one.
                    self.advance.next = true;
                    self.used.d.next = 0.into();
                    self.step.d.next = ScatterStep::ReadEntry;
                } else if self.job_room.val() {
                    self.job_write.next = true;
                    self.addr.d.next = self.next_addr.val();
                    // The piece is the whole entry (`pc_lt`: none left) or the rest of the
                    // payload (`rem_sc` left).
                    self.rem.d.next = self.rem_sc.q.val();
                    self.used.d.next = self.next_used.val();
                    self.off.d.next = self.off.q.val() + self.piece.val().get_bits::<13>(0);
                    self.left.d.next = self.left.q.val() - self.piece.val().get_bits::<13>(0);
                    if self.pc_lt.q.val() {
                        self.rem.d.next = 0.into();
                        self.advance.next = true;
                        self.used.d.next = 0.into();
                        self.step.d.next = ScatterStep::ReadEntry;
                    } else {
                        self.done.next = true;
                        self.step.d.next = ScatterStep::Idle;
                    }
                }
            }
            ScatterStep::ReadEntry => {
                self.step.d.next = ScatterStep::Entry;
            }
        }
        if self.reset.val() {
            self.step.d.next = ScatterStep::Idle;
        }
    }
}
