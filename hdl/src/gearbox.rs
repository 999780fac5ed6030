//! Byte-stream gearbox: packs byte chunks of any alignment into full 64-byte beats.
use rust_hdl::prelude::*;

/// Packs a stream of byte chunks into 64-byte beats.
///
/// Each input chunk is `in_len` (0..=64) bytes taken from `in_data` starting at byte `in_skip`
/// (0..=63; bytes outside the chunk are ignored, so `in_skip + in_len` may exceed 64 only if
/// the caller wants the upper bytes dropped: they read as zeros). Chunks are appended back to
/// back; every full 64 bytes leave as one beat (`out_count` = 64). `in_last` marks the final
/// chunk of a packet: the remaining bytes then leave as a final beat with `out_count` < 64
/// possible and `out_last`. The final chunk must carry at least one byte (`in_len` > 0): the
/// beat before an empty final chunk may already have left without `out_last`. Every user sends
/// a non-empty final chunk. A chunk of the next packet joins the accumulator no earlier than
/// the cycle the previous packet's last beat leaves it, so two packets never share a beat;
/// back to back this costs no cycle, except one when a packet's final chunk leaves more than 64
/// bytes to send (two beats). Bytes of a beat past `out_count` are zero.
///
/// This is how headers are prepended to payload read by DMA at any host alignment (TX) and how
/// payload at any frame offset is realigned to any host address (RX DMA write): the one
/// realignment engine of the NIC.
///
/// Pipeline (register to register at most 5 LUT6 levels in `scripts/synth.sh`; the ports feed
/// registers through one mux level):
/// 1. input register with a skid buffer: `in_ready` is a register (the skid is empty), not a
///    function of `out_ready`;
/// 2. mask: the input beat with only bytes `in_skip..in_skip + in_len` kept, and the rotation
///    `pos - in_skip` that puts them where they go (`pos`: the packet's bytes so far, modulo
///    64, known at input time);
/// 3. merge: the chunk rotated (one 64-way byte rotation) and merged into the 128-byte
///    accumulator at its fill level (a byte mux whose selects come from registers: fill level,
///    output room);
/// 4. output: a two-beat buffer; `out_data`/`out_count`/`out_last`/`out_valid` are registers
///    and `out_ready` only loads the output register.
///
/// Timing: latency 4 cycles (a chunk that completes a beat is at the output 4 cycles after it
/// was taken); initiation interval 1 chunk per cycle; 1 beat per cycle out; the packet-end wait
/// above is the only stall with the output ready (as before). `in_ready` is registered. Storage: skid + input + masked chunk (3 × 64 B), the 128-byte accumulator,
/// 2 output beats.
#[derive(LogicBlock)]
pub struct Gearbox {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_data: Signal<In, Bits<512>>,
    pub in_skip: Signal<In, Bits<7>>,
    pub in_len: Signal<In, Bits<7>>,
    pub in_last: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    // Stage 1: skid (s_*) and input register (a_*).
    s_v: DFF<Bit>,
    s_data: DFF<Bits<512>>,
    s_skip: DFF<Bits<6>>,
    s_len: DFF<Bits<7>>,
    s_last: DFF<Bit>,
    a_v: DFF<Bit>,
    a_data: DFF<Bits<512>>,
    a_skip: DFF<Bits<6>>,
    a_len: DFF<Bits<7>>,
    a_last: DFF<Bit>,
    // Position of the next chunk in its beat (bytes of its packet so far, modulo 64).
    pos: DFF<Bits<6>>,
    // Stage 2: the chunk's bytes (others zeroed) and the rotation that puts them in place.
    b_v: DFF<Bit>,
    b_data: DFF<Bits<512>>,
    b_len: DFF<Bits<7>>,
    b_last: DFF<Bit>,
    b_rot: DFF<Bits<6>>,
    // Stage 3: the accumulator (bytes past `cnt` are zero).
    acc: DFF<Bits<1024>>,
    cnt: DFF<Bits<7>>,
    draining: DFF<Bit>,
    // Stage 4: output beat (h_*) and the second beat (x_*).
    h_v: DFF<Bit>,
    h_data: DFF<Bits<512>>,
    h_count: DFF<Bits<7>>,
    h_last: DFF<Bit>,
    x_v: DFF<Bit>,
    x_data: DFF<Bits<512>>,
    x_count: DFF<Bits<7>>,
    x_last: DFF<Bit>,
    take: Signal<Local, Bit>,
    a_load: Signal<Local, Bit>,
    b_load: Signal<Local, Bit>,
    a_end: Signal<Local, Bits<7>>,
    chunk_mask: Signal<Local, Bits<512>>,
    cnt_hi: Signal<Local, Bit>,
    cnt_lo: Signal<Local, Bits<7>>,
    cnt_zero: Signal<Local, Bit>,
    has_beat: Signal<Local, Bit>,
    emit: Signal<Local, Bit>,
    beat_last: Signal<Local, Bit>,
    beat_count: Signal<Local, Bits<7>>,
    emit_last: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    kept_cnt: Signal<Local, Bits<7>>,
    therm: Signal<Local, Bits<1024>>,
    keep_mask: Signal<Local, Bits<1024>>,
    ins_mask: Signal<Local, Bits<1024>>,
    kept_acc: Signal<Local, Bits<1024>>,
    doubled: Signal<Local, Bits<1024>>,
    rotated: Signal<Local, Bits<1024>>,
    rot: Signal<Local, Bits<512>>,
    rot2: Signal<Local, Bits<1024>>,
    h_load: Signal<Local, Bit>,
    ones512: Constant<Bits<512>>,
    ones1024: Constant<Bits<1024>>,
}

impl Default for Gearbox {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_data: Default::default(),
            in_skip: Default::default(),
            in_len: Default::default(),
            in_last: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out_data: Default::default(),
            out_count: Default::default(),
            out_last: Default::default(),
            s_v: Default::default(),
            s_data: Default::default(),
            s_skip: Default::default(),
            s_len: Default::default(),
            s_last: Default::default(),
            a_v: Default::default(),
            a_data: Default::default(),
            a_skip: Default::default(),
            a_len: Default::default(),
            a_last: Default::default(),
            pos: Default::default(),
            b_v: Default::default(),
            b_data: Default::default(),
            b_len: Default::default(),
            b_last: Default::default(),
            b_rot: Default::default(),
            acc: Default::default(),
            cnt: Default::default(),
            draining: Default::default(),
            h_v: Default::default(),
            h_data: Default::default(),
            h_count: Default::default(),
            h_last: Default::default(),
            x_v: Default::default(),
            x_data: Default::default(),
            x_count: Default::default(),
            x_last: Default::default(),
            take: Default::default(),
            a_load: Default::default(),
            b_load: Default::default(),
            a_end: Default::default(),
            chunk_mask: Default::default(),
            cnt_hi: Default::default(),
            cnt_lo: Default::default(),
            cnt_zero: Default::default(),
            has_beat: Default::default(),
            emit: Default::default(),
            beat_last: Default::default(),
            beat_count: Default::default(),
            emit_last: Default::default(),
            accept: Default::default(),
            kept_cnt: Default::default(),
            therm: Default::default(),
            keep_mask: Default::default(),
            ins_mask: Default::default(),
            kept_acc: Default::default(),
            doubled: Default::default(),
            rotated: Default::default(),
            rot: Default::default(),
            rot2: Default::default(),
            h_load: Default::default(),
            ones512: Constant::new(!Bits::<512>::default()),
            ones1024: Constant::new(!Bits::<1024>::default()),
        }
    }
}

impl Logic for Gearbox {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, s_v, s_data, s_skip, s_len, s_last, a_v, a_data, a_skip, a_len, a_last, pos, b_v, b_data,
            b_len, b_last, b_rot, acc, cnt, draining, h_v, h_data, h_count, h_last, x_v, x_data, x_count, x_last
        );
        // ---- Stage 4: output registers ----
        self.out_valid.next = self.h_v.q.val();
        self.out_data.next = self.h_data.q.val();
        self.out_count.next = self.h_count.q.val();
        self.out_last.next = self.h_last.q.val();

        // ---- Stage 3: what leaves the accumulator, what joins it ----
        self.cnt_hi.next = self.cnt.q.val().get_bit(6);
        self.cnt_lo.next = self.cnt.q.val() & 63;
        self.cnt_zero.next = self.cnt.q.val() == 0;
        self.has_beat.next = self.cnt_hi.val() | (self.draining.q.val() & !self.cnt_zero.val());
        // A beat leaves when the output buffer has room (registers only, not `out_ready`).
        self.emit.next = self.has_beat.val() & !(self.h_v.q.val() & self.x_v.q.val());
        self.beat_last.next = self.draining.q.val() & (!self.cnt_hi.val() | (self.cnt_lo.val() == 0));
        self.beat_count.next = self.cnt.q.val();
        if self.cnt_hi.val() {
            self.beat_count.next = 64.into();
        }
        self.emit_last.next = self.emit.val() & self.beat_last.val();
        // The chunk joins if it fits (at most 63 bytes kept) and, for the first chunk of a
        // packet, once the previous packet has left.
        self.accept.next = self.b_v.q.val()
            & (self.emit.val() | !self.cnt_hi.val())
            & (!self.draining.q.val() | self.cnt_zero.val() | self.emit_last.val());
        self.kept_cnt.next = self.cnt.q.val();
        self.therm.next = !(self.ones1024.val() << (bit_cast::<16, 7>(self.cnt.q.val()) << 3));
        self.keep_mask.next = self.therm.val();
        self.kept_acc.next = self.acc.q.val();
        if self.emit.val() {
            self.kept_cnt.next = self.cnt_lo.val();
            self.keep_mask.next = self.therm.val() >> 512;
            self.kept_acc.next = self.acc.q.val() >> 512;
        }
        if self.emit_last.val() {
            self.kept_cnt.next = 0.into();
            self.keep_mask.next = 0.into();
        }
        // The chunk rotated to its position, in both halves (it may straddle them).
        self.doubled.next =
            bit_cast::<1024, 512>(self.b_data.q.val()) | (bit_cast::<1024, 512>(self.b_data.q.val()) << 512);
        self.rotated.next = self.doubled.val() << (bit_cast::<16, 6>(self.b_rot.q.val()) << 3);
        self.rot.next = self.rotated.val().get_bits::<512>(512);
        self.rot2.next = bit_cast::<1024, 512>(self.rot.val()) | (bit_cast::<1024, 512>(self.rot.val()) << 512);
        self.ins_mask.next = 0.into();
        if self.accept.val() {
            self.ins_mask.next = bit_cast::<1024, 512>(self.ones512.val()) | (self.keep_mask.val() << 512);
        }
        self.acc.d.next = (self.kept_acc.val() & self.keep_mask.val())
            | (self.rot2.val() & self.ins_mask.val() & !self.keep_mask.val());
        self.cnt.d.next = self.kept_cnt.val();
        if self.accept.val() {
            self.cnt.d.next = self.kept_cnt.val() + self.b_len.q.val();
        }
        self.draining.d.next = self.draining.q.val();
        if self.emit_last.val() | (self.draining.q.val() & self.cnt_zero.val()) {
            self.draining.d.next = false;
        }
        if self.accept.val() & self.b_last.q.val() {
            self.draining.d.next = true;
        }

        // ---- Stage 4 load ----
        self.h_load.next = !self.h_v.q.val() | self.out_ready.val();
        if self.h_load.val() {
            self.h_v.d.next = self.x_v.q.val() | self.emit.val();
            self.x_v.d.next = false;
            if self.x_v.q.val() {
                self.h_data.d.next = self.x_data.q.val();
                self.h_count.d.next = self.x_count.q.val();
                self.h_last.d.next = self.x_last.q.val();
            } else {
                self.h_data.d.next = self.acc.q.val().get_bits::<512>(0);
                self.h_count.d.next = self.beat_count.val();
                self.h_last.d.next = self.beat_last.val();
            }
        } else if self.emit.val() {
            self.x_v.d.next = true;
            self.x_data.d.next = self.acc.q.val().get_bits::<512>(0);
            self.x_count.d.next = self.beat_count.val();
            self.x_last.d.next = self.beat_last.val();
        }

        // ---- Stage 2: pre-align the chunk in the input register ----
        self.b_load.next = !self.b_v.q.val() | self.accept.val();
        // Keep bytes skip..skip+len of the input beat (the rest reads as zeros); the merge
        // rotates them by `pos - skip` to where they go in the beat.
        self.a_end.next = bit_cast::<7, 6>(self.a_skip.q.val()) + self.a_len.q.val();
        self.chunk_mask.next = (self.ones512.val() << (bit_cast::<16, 6>(self.a_skip.q.val()) << 3))
            & !(self.ones512.val() << (bit_cast::<16, 7>(self.a_end.val()) << 3));
        if self.b_load.val() {
            self.b_v.d.next = self.a_v.q.val();
            self.b_data.d.next = self.a_data.q.val() & self.chunk_mask.val();
            self.b_len.d.next = self.a_len.q.val();
            self.b_last.d.next = self.a_last.q.val();
            self.b_rot.d.next = self.pos.q.val() - self.a_skip.q.val();
            if self.a_v.q.val() {
                if self.a_last.q.val() {
                    self.pos.d.next = 0.into();
                } else {
                    self.pos.d.next = self.pos.q.val() + self.a_len.q.val().get_bits::<6>(0);
                }
            }
        }

        // ---- Stage 1: input register and skid ----
        self.in_ready.next = !self.s_v.q.val();
        self.take.next = self.in_valid.val() & !self.s_v.q.val();
        self.a_load.next = !self.a_v.q.val() | self.b_load.val();
        if self.a_load.val() {
            self.a_v.d.next = self.s_v.q.val() | self.take.val();
            self.s_v.d.next = false;
            if self.s_v.q.val() {
                self.a_data.d.next = self.s_data.q.val();
                self.a_skip.d.next = self.s_skip.q.val();
                self.a_len.d.next = self.s_len.q.val();
                self.a_last.d.next = self.s_last.q.val();
            } else {
                self.a_data.d.next = self.in_data.val();
                self.a_skip.d.next = self.in_skip.val().get_bits::<6>(0);
                self.a_len.d.next = self.in_len.val();
                self.a_last.d.next = self.in_last.val();
            }
        } else if self.take.val() {
            self.s_v.d.next = true;
            self.s_data.d.next = self.in_data.val();
            self.s_skip.d.next = self.in_skip.val().get_bits::<6>(0);
            self.s_len.d.next = self.in_len.val();
            self.s_last.d.next = self.in_last.val();
        }

        if self.reset.val() {
            self.s_v.d.next = false;
            self.a_v.d.next = false;
            self.b_v.d.next = false;
            self.h_v.d.next = false;
            self.x_v.d.next = false;
            self.pos.d.next = 0.into();
            self.cnt.d.next = 0.into();
            self.acc.d.next = 0.into();
            self.draining.d.next = false;
        }
    }
}
