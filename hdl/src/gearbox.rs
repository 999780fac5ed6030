//! Byte-stream gearbox: packs byte chunks of any alignment into full 64-byte beats.
use rust_hdl::prelude::*;

/// Packs a stream of byte chunks into 64-byte beats.
///
/// Each input chunk is `in_len` (0..=64) bytes taken from `in_data` starting at byte `in_skip`
/// (0..=63; bytes outside the chunk are ignored, so `in_skip + in_len` may exceed 64 only if
/// the caller wants the upper bytes dropped). Chunks are appended back to back; every full 64
/// bytes leave as one beat (`out_count` = 64). `in_last` marks the final chunk of a packet: the
/// remaining bytes then leave as a final beat with `out_count` < 64 possible and `out_last`.
/// The final chunk must carry at least one byte (`in_len` > 0): the beat before an empty final
/// chunk may already have left without `out_last`. Every user sends a non-empty final chunk.
/// A chunk of the next packet is accepted no earlier than the cycle the last beat leaves, so
/// two packets never share a beat and back-to-back packets cost no bubble.
///
/// This is how headers are prepended to payload read by DMA at any host alignment (TX) and how
/// payload at any frame offset is realigned to any host address (RX DMA write): the one
/// realignment engine of the NIC.
///
/// Timing: latency 1 cycle (a chunk that completes a beat appears at the output in the next
/// cycle); initiation interval 1 chunk per cycle while the output is ready; `in_ready` depends
/// combinationally on `out_ready`. Storage: a 128-byte accumulator; the datapath is two byte
/// barrel shifters (512 bits by `in_skip`, 1024 bits by the fill level).
#[derive(LogicBlock, Default)]
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
    acc: DFF<Bits<1024>>,
    cnt: DFF<Bits<8>>,
    draining: DFF<Bit>,
    emit: Signal<Local, Bit>,
    kept_cnt: Signal<Local, Bits<8>>,
    kept_acc: Signal<Local, Bits<1024>>,
    chunk: Signal<Local, Bits<1024>>,
    accept: Signal<Local, Bit>,
}

impl Logic for Gearbox {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc, cnt, draining);
        self.out_valid.next =
            (self.cnt.q.val() >= 64) | (self.draining.q.val() & (self.cnt.q.val() != 0));
        self.out_data.next = self.acc.q.val().get_bits::<512>(0);
        self.out_count.next = self.cnt.q.val().get_bits::<7>(0);
        if self.cnt.q.val() >= 64 {
            self.out_count.next = 64.into();
        }
        self.out_last.next = self.draining.q.val() & (self.cnt.q.val() <= 64);
        self.emit.next = self.out_valid.val() & self.out_ready.val();
        self.kept_cnt.next = self.cnt.q.val();
        self.kept_acc.next = self.acc.q.val();
        if self.emit.val() {
            self.kept_cnt.next = self.cnt.q.val() - bit_cast::<8, 7>(self.out_count.val());
            self.kept_acc.next = self.acc.q.val() >> 512;
        }
        // The next packet may start in the cycle the previous one's last beat leaves.
        self.in_ready.next = (!self.draining.q.val() | (self.emit.val() & self.out_last.val()))
            & (self.kept_cnt.val() <= 63);
        self.accept.next = self.in_valid.val() & self.in_ready.val();
        // The chunk: drop `skip` low bytes, keep `len` bytes, place them at the fill level.
        self.chunk.next = ((bit_cast::<1024, 512>(self.in_data.val())
            >> (bit_cast::<1024, 7>(self.in_skip.val()) << 3))
            & ((bit_cast::<1024, 1>(1.into()) << (bit_cast::<1024, 7>(self.in_len.val()) << 3))
                - 1))
            << (bit_cast::<1024, 8>(self.kept_cnt.val()) << 3);
        self.acc.d.next = self.kept_acc.val();
        self.cnt.d.next = self.kept_cnt.val();
        if self.accept.val() {
            self.acc.d.next = self.kept_acc.val() | self.chunk.val();
            self.cnt.d.next = self.kept_cnt.val() + bit_cast::<8, 7>(self.in_len.val());
        }
        self.draining.d.next = self.draining.q.val();
        if self.emit.val() & self.out_last.val() {
            self.draining.d.next = false;
        }
        if self.draining.q.val() & (self.cnt.q.val() == 0) {
            self.draining.d.next = false;
        }
        if self.accept.val() & self.in_last.val() {
            self.draining.d.next = true;
        }
        if self.reset.val() {
            self.cnt.d.next = 0.into();
            self.acc.d.next = 0.into();
            self.draining.d.next = false;
        }
    }
}
