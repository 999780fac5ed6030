//! The raw send path: a frame the driver staged in BAR0 goes to the MAC between two RoCE
//! frames ([`rnic_contract::regs::raw`]).
use rust_hdl::prelude::*;

/// Sits between [`crate::icrc::IcrcInsert`] and the MAC and puts the driver's raw frames
/// ([`rnic_contract::regs::RAW_TX_SEND`]) into the stream.
///
/// `send_valid` with `send_data` (the frame's beat, byte 0 in bits 7:0) and `send_len` (bytes)
/// is taken into a one-frame holding register when it is free (`send_ready`). A held frame
/// goes out at the next frame boundary of the RoCE stream, as one beat of
/// `max(send_len, MIN_FRAME_BYTES)` bytes (at most 64; `tlast` set), before the next RoCE
/// frame; a RoCE frame is never interrupted. Otherwise the RoCE stream passes through.
///
/// Timing: the RoCE stream passes combinationally (0 cycles; its ready is the MAC's unless a
/// raw frame is going out); a held frame waits at most for the end of the RoCE frame in
/// progress. The output is a two-input mux of registered data (≤ 2 LUT levels).
#[derive(LogicBlock)]
pub struct RawTxMux {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub send_valid: Signal<In, Bit>,
    pub send_ready: Signal<Out, Bit>,
    pub send_data: Signal<In, Bits<512>>,
    pub send_len: Signal<In, Bits<7>>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_data: Signal<In, Bits<512>>,
    pub in_count: Signal<In, Bits<7>>,
    pub in_last: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    held: DFF<Bit>,
    frame: DFF<Bits<512>>,
    len: DFF<Bits<7>>,
    /// A RoCE frame is part-way out.
    mid: DFF<Bit>,
    c_min: Constant<Bits<7>>,
    c_max: Constant<Bits<7>>,
}

impl Default for RawTxMux {
    fn default() -> Self {
        use rnic_contract::regs::raw;
        Self {
            clock: Default::default(),
            reset: Default::default(),
            send_valid: Default::default(),
            send_ready: Default::default(),
            send_data: Default::default(),
            send_len: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_data: Default::default(),
            in_count: Default::default(),
            in_last: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out_data: Default::default(),
            out_count: Default::default(),
            out_last: Default::default(),
            held: Default::default(),
            frame: Default::default(),
            len: Default::default(),
            mid: Default::default(),
            c_min: Constant::new(u64::from(raw::MIN_FRAME_BYTES).to_bits()),
            c_max: Constant::new(u64::from(raw::MAX_FRAME_BYTES).to_bits()),
        }
    }
}

impl Logic for RawTxMux {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, held, frame, len, mid);
        self.send_ready.next = !self.held.q.val();
        if self.send_valid.val() & !self.held.q.val() {
            self.held.d.next = true;
            self.frame.d.next = self.send_data.val();
            self.len.d.next = self.send_len.val();
            if self.send_len.val() < self.c_min.val() {
                self.len.d.next = self.c_min.val();
            }
            if self.send_len.val() > self.c_max.val() {
                self.len.d.next = self.c_max.val();
            }
        }
        self.out_data.next = self.in_data.val();
        self.out_count.next = self.in_count.val();
        self.out_last.next = self.in_last.val();
        self.out_valid.next = self.in_valid.val();
        self.in_ready.next = self.out_ready.val();
        if self.held.q.val() & !self.mid.q.val() {
            self.out_data.next = self.frame.q.val();
            self.out_count.next = self.len.q.val();
            self.out_last.next = true;
            self.out_valid.next = true;
            self.in_ready.next = false;
            if self.out_ready.val() {
                self.held.d.next = false;
            }
        } else if self.in_valid.val() & self.out_ready.val() {
            self.mid.d.next = !self.in_last.val();
        }
        if self.reset.val() {
            self.held.d.next = false;
            self.mid.d.next = false;
        }
    }
}
