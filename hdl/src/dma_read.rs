//! DMA read issuer: AXI4 read-address channel for WQE fetches and payload reads.
use rust_hdl::prelude::*;

/// Issues AXI4 read bursts for the TX side.
///
/// Four sources: atomics' one-beat reads (AXI ID 3, before send-WQE fetches), send-WQE fetches (`wqe_len + 1` 64-byte beats, at most 8, AXI ID 1, from the
/// scheduler), receive-WQE fetches (`rq_len + 1` beats, AXI ID 2, from the RX engine; the
/// callers keep a fetch inside one 4 KiB page: WQEs are at most 512 bytes and aligned to their
/// size) and payload read jobs
/// `(addr, len)` (AXI ID 0, from the job FIFO). A payload job reads the beats
/// `[addr & !63, addr + len)` as INCR bursts of 64-byte beats (`arsize` 6) that never cross a
/// 4 KiB boundary (AXI4 A3.4.1), at most 64 beats each. Data returns on the R channel in
/// order per ID; the top level routes ID 1 to the scheduler, ID 2 to the RX engine and ID 0 to
/// the assembler, which
/// consumes exactly `ceil(((addr & 63) + len) / 64)` beats per job.
///
/// WQE fetches go first between bursts (send, then receive); an AR on the bus stays unchanged
/// until accepted (AXI4 A3.2.1).
///
/// Payload reads are paced: at most 256 beats (16 KiB) are requested and not yet taken by the
/// assembler (`pay_beat`), enough to keep the wire busy across the read latency (a 100 GbE wire
/// takes 50 bytes per cycle; 256 beats cover 320 cycles). Without the window the issuer ran up
/// to the host's 64 outstanding bursts (4,096 beats) ahead of the wire, and since read data
/// returns in request order, a receive-WQE fetch or an atomic's read waited behind them for up
/// to 5,000 cycles while the RX buffer overflowed.
///
/// Timing: a payload job costs one cycle to pop and one to size its first burst (the length
/// to the 4 KiB boundary is computed from registers, never in the cycle that issues); after
/// that one AR per cycle while `arready`. Every burst after the first starts on a 4 KiB
/// boundary, so the next length is `min(beats left, 64)` and is ready in the cycle after an
/// AR is accepted. Logic depth: at most 5 LUT levels per stage.
#[derive(LogicBlock, Default)]
pub struct DmaReadIssuer {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub wqe_valid: Signal<In, Bit>,
    pub wqe_addr: Signal<In, Bits<64>>,
    /// Beats of the send-WQE fetch minus one (AXI `arlen`).
    pub wqe_len: Signal<In, Bits<3>>,
    pub wqe_ready: Signal<Out, Bit>,
    pub rq_valid: Signal<In, Bit>,
    pub rq_addr: Signal<In, Bits<64>>,
    /// Beats of the receive-WQE fetch minus one (AXI `arlen`), taken with `rq_addr`.
    pub rq_len: Signal<In, Bits<3>>,
    pub rq_ready: Signal<Out, Bit>,
    /// An atomic's read: one 64-byte beat at `at_addr` (64-byte aligned), AXI ID 3, from
    /// [`crate::atomic_unit::AtomicUnit`]; `at_ready` is the AR's acceptance.
    pub at_valid: Signal<In, Bit>,
    pub at_addr: Signal<In, Bits<64>>,
    pub at_ready: Signal<Out, Bit>,
    /// A payload beat (AXI ID 0) was taken by the assembler this cycle.
    pub pay_beat: Signal<In, Bit>,
    pub rj_empty: Signal<In, Bit>,
    pub rj_addr: Signal<In, Bits<64>>,
    pub rj_len: Signal<In, Bits<13>>,
    pub rj_read: Signal<Out, Bit>,
    pub arvalid: Signal<Out, Bit>,
    pub arready: Signal<In, Bit>,
    pub araddr: Signal<Out, Bits<64>>,
    pub arlen: Signal<Out, Bits<8>>,
    pub arid: Signal<Out, Bits<4>>,
    busy: DFF<Bit>,
    holding: DFF<Bit>,
    /// A receive-WQE AR was presented and not taken: present it again.
    hold_rq: DFF<Bit>,
    /// An atomic's AR was presented and not taken: present it again.
    hold_at: DFF<Bit>,
    /// Payload beats requested (ID 0) and not yet taken (`pay_beat`), and whether another
    /// burst may go (a register: a cycle late, so at most 64 beats past the window).
    pay_out: DFF<Bits<10>>,
    pay_room: DFF<Bit>,
    pay_add: Signal<Local, Bits<10>>,
    /// A receive-WQE fetch taken from the RX engine and not yet issued (`rq_ready` is its
    /// inverse, a register, so the RX engine's handshake never passes through this block's
    /// arbitration).
    rq_pend: DFF<Bit>,
    rq_addr_q: DFF<Bits<64>>,
    rq_len_q: DFF<Bits<3>>,
    cur: DFF<Bits<64>>,
    beats: DFF<Bits<8>>,
    /// The next burst's length in beats (1..=64), valid while `sized`.
    burst: DFF<Bits<8>>,
    /// `burst` holds the length of the next burst of the current job.
    sized: DFF<Bit>,
    beats_left: Signal<Local, Bits<8>>,
    job_beats: Signal<Local, Bits<16>>,
    to_4k: Signal<Local, Bits<8>>,
}

impl Logic for DmaReadIssuer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, busy, holding, hold_rq, hold_at, pay_out, pay_room, rq_pend, rq_addr_q, rq_len_q, cur, beats,
            burst, sized
        );
        self.job_beats.next =
            (bit_cast::<16, 6>(self.rj_addr.val().get_bits::<6>(0)) + bit_cast::<16, 13>(self.rj_len.val()) + 63) >> 6;
        // Sizing the first burst of a job: the beats up to the 4 KiB boundary.
        self.to_4k.next = 64_u64 - bit_cast::<8, 6>(self.cur.q.val().get_bits::<6>(6));
        self.beats_left.next = self.beats.q.val() - self.burst.q.val();
        self.wqe_ready.next = false;
        self.at_ready.next = false;
        self.rq_ready.next = !self.rq_pend.q.val();
        if self.rq_valid.val() & !self.rq_pend.q.val() {
            self.rq_pend.d.next = true;
            self.rq_addr_q.d.next = self.rq_addr.val();
            self.rq_len_q.d.next = self.rq_len.val();
        }
        self.rj_read.next = false;
        self.pay_add.next = 0.into();
        self.arvalid.next = false;
        self.araddr.next = self.wqe_addr.val();
        self.arlen.next = 0.into();
        self.arid.next = 1.into();
        if self.hold_rq.q.val()
            | (self.rq_pend.q.val() & !self.wqe_valid.val() & !self.holding.q.val() & !self.hold_at.q.val())
        {
            self.arvalid.next = true;
            self.araddr.next = self.rq_addr_q.q.val();
            self.arlen.next = bit_cast::<8, 3>(self.rq_len_q.q.val());
            self.arid.next = 2.into();
            if self.arready.val() {
                self.rq_pend.d.next = false;
            }
        } else if self.hold_at.q.val() | (self.at_valid.val() & !self.wqe_valid.val() & !self.holding.q.val()) {
            self.arvalid.next = true;
            self.araddr.next = self.at_addr.val();
            self.arid.next = 3.into();
            self.at_ready.next = self.arready.val();
        } else if self.wqe_valid.val() & !self.holding.q.val() {
            self.arvalid.next = true;
            self.arlen.next = bit_cast::<8, 3>(self.wqe_len.val());
            self.wqe_ready.next = self.arready.val();
        } else if self.busy.q.val() & !self.sized.q.val() {
            self.sized.d.next = true;
            self.burst.d.next = self.beats.q.val();
            if self.beats.q.val() > self.to_4k.val() {
                self.burst.d.next = self.to_4k.val();
            }
        } else if self.busy.q.val() {
            // (Waiting for room in the window holds the job: nothing else is popped.)
            if self.pay_room.q.val() | self.holding.q.val() {
                self.arvalid.next = true;
                self.araddr.next = self.cur.q.val();
                self.arlen.next = self.burst.q.val() - 1;
                self.arid.next = 0.into();
                if self.arready.val() {
                    self.pay_add.next = bit_cast::<10, 8>(self.burst.q.val());
                    self.cur.d.next = self.cur.q.val() + (bit_cast::<64, 8>(self.burst.q.val()) << 6);
                    self.beats.d.next = self.beats_left.val();
                    // The next burst starts on a 4 KiB boundary: min(beats left, 64).
                    self.burst.d.next = self.beats_left.val();
                    if self.beats_left.val().get_bit(7) | self.beats_left.val().get_bit(6) {
                        self.burst.d.next = 64.into();
                    }
                    if self.beats_left.val() == 0 {
                        self.busy.d.next = false;
                        self.sized.d.next = false;
                    }
                }
            }
        } else if !self.rj_empty.val() {
            self.rj_read.next = true;
            self.cur.d.next = self.rj_addr.val() & 0xFFFF_FFFF_FFFF_FFC0_u64;
            self.beats.d.next = self.job_beats.val().get_bits::<8>(0);
            self.busy.d.next = self.rj_len.val() != 0;
            self.sized.d.next = false;
        }
        // Payload beats asked for and not yet taken by the assembler; room for another burst of
        // up to 64 while at most PAY_WINDOW - 64 are.
        self.pay_out.d.next = self.pay_out.q.val() + self.pay_add.val() - bit_cast::<10, 1>(self.pay_beat.val().into());
        self.pay_room.d.next = self.pay_out.q.val() <= 192;
        // A payload AR presented but not taken must be presented again, unchanged.
        self.holding.d.next = self.arvalid.val() & !self.arready.val() & (self.arid.val() == 0);
        self.hold_rq.d.next = self.arvalid.val() & !self.arready.val() & (self.arid.val() == 2);
        self.hold_at.d.next = self.arvalid.val() & !self.arready.val() & (self.arid.val() == 3);
        if self.reset.val() {
            self.busy.d.next = false;
            self.holding.d.next = false;
            self.hold_rq.d.next = false;
            self.hold_at.d.next = false;
            self.pay_out.d.next = 0.into();
            self.rq_pend.d.next = false;
            self.sized.d.next = false;
        }
    }
}
