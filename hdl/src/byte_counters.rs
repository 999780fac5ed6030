//! Byte counts of the frames on each side of the MAC, for the BAR0 counters.
use rust_hdl::prelude::*;

/// Counts the bytes of every frame the NIC sends and receives, as 64-bit totals
/// ([`rnic_contract::regs::counter::TX_BYTES_LO`], `RX_BYTES_LO`): Ethernet header through
/// ICRC, as the MAC takes and delivers them (no preamble, FCS or inter-frame gap).
///
/// TX: the byte count of each beat the MAC accepts (`tx_fire`, `tx_count` 1..=64). RX: each
/// beat's `tkeep` (contiguous from byte 0, AXI4-Stream packed), counted by popcount.
///
/// `reset` clears the totals, and a beat in flight across it is not added: the totals count
/// only beats presented after it (testbench `hdl/tests/byte_counters_tb.rs`).
///
/// Pipeline: RX 4 stages (`tkeep` registered; eight 8-bit popcounts; their sum; the 64-bit
/// add), TX 2 (the beat's count; the add): a beat is in the totals 4 (RX) or 2 (TX) cycles
/// after it passed. One beat per cycle on each side; at most 4 LUT levels per stage, plus the
/// adders' carry chains.
#[derive(LogicBlock, Default)]
pub struct ByteCounters {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub tx_fire: Signal<In, Bit>,
    pub tx_count: Signal<In, Bits<7>>,
    pub rx_valid: Signal<In, Bit>,
    pub rx_keep: Signal<In, Bits<64>>,
    /// TX bytes in bits 63:0, RX bytes in bits 127:64 (wrapping at 2^64).
    pub bytes: Signal<Out, Bits<128>>,
    tx_beat: DFF<Bits<7>>,
    tx_total: DFF<Bits<64>>,
    rx_keep_r: DFF<Bits<64>>,
    /// Eight 4-bit popcounts of `rx_keep_r`, one per byte of it.
    rx_nibbles: DFF<Bits<32>>,
    rx_beat: DFF<Bits<7>>,
    rx_total: DFF<Bits<64>>,
    /// Each pipeline stage holds a beat presented since the last reset cycle: a beat in
    /// flight across a reset is not added after it (the stages' data are not reset: a reset
    /// gate on the popcount stage made it 7 LUT levels).
    tx_live: DFF<Bit>,
    rx_live1: DFF<Bit>,
    rx_live2: DFF<Bit>,
    rx_live3: DFF<Bit>,
    k: Signal<Local, Bits<64>>,
    pc: Signal<Local, Bits<32>>,
    n: Signal<Local, Bits<32>>,
}

impl Logic for ByteCounters {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, tx_beat, tx_total, rx_keep_r, rx_nibbles, rx_beat, rx_total, tx_live, rx_live1, rx_live2,
            rx_live3
        );
        self.tx_live.d.next = !self.reset.val();
        self.rx_live1.d.next = !self.reset.val();
        self.rx_live2.d.next = self.rx_live1.q.val() & !self.reset.val();
        self.rx_live3.d.next = self.rx_live2.q.val() & !self.reset.val();
        self.tx_beat.d.next = 0.into();
        if self.tx_fire.val() {
            self.tx_beat.d.next = self.tx_count.val();
        }
        if self.tx_live.q.val() {
            self.tx_total.d.next = self.tx_total.q.val() + bit_cast::<64, 7>(self.tx_beat.q.val());
        }
        self.rx_keep_r.d.next = 0.into();
        if self.rx_valid.val() {
            self.rx_keep_r.d.next = self.rx_keep.val();
        }
        // Popcount of each byte of the mask: the sum of its eight bits.
        self.k.next = self.rx_keep_r.q.val();
        self.pc.next = ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(0))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(1))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(2))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(3))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(4))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(5))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(6))
            + bit_cast::<32, 1>(self.k.val().get_bits::<1>(7)))
            << 0)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(8))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(9))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(10))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(11))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(12))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(13))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(14))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(15)))
                << 4)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(16))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(17))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(18))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(19))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(20))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(21))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(22))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(23)))
                << 8)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(24))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(25))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(26))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(27))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(28))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(29))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(30))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(31)))
                << 12)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(32))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(33))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(34))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(35))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(36))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(37))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(38))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(39)))
                << 16)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(40))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(41))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(42))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(43))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(44))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(45))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(46))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(47)))
                << 20)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(48))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(49))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(50))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(51))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(52))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(53))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(54))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(55)))
                << 24)
            | ((bit_cast::<32, 1>(self.k.val().get_bits::<1>(56))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(57))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(58))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(59))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(60))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(61))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(62))
                + bit_cast::<32, 1>(self.k.val().get_bits::<1>(63)))
                << 28);
        self.rx_nibbles.d.next = self.pc.val();
        self.n.next = self.rx_nibbles.q.val();
        self.rx_beat.d.next = (bit_cast::<7, 4>(self.n.val().get_bits::<4>(0))
            + bit_cast::<7, 4>(self.n.val().get_bits::<4>(4))
            + bit_cast::<7, 4>(self.n.val().get_bits::<4>(8))
            + bit_cast::<7, 4>(self.n.val().get_bits::<4>(12)))
            + (bit_cast::<7, 4>(self.n.val().get_bits::<4>(16))
                + bit_cast::<7, 4>(self.n.val().get_bits::<4>(20))
                + bit_cast::<7, 4>(self.n.val().get_bits::<4>(24))
                + bit_cast::<7, 4>(self.n.val().get_bits::<4>(28)));
        if self.rx_live3.q.val() {
            self.rx_total.d.next = self.rx_total.q.val() + bit_cast::<64, 7>(self.rx_beat.q.val());
        }
        self.bytes.next =
            bit_cast::<128, 64>(self.tx_total.q.val()) | (bit_cast::<128, 64>(self.rx_total.q.val()) << 64);
        if self.reset.val() {
            self.tx_total.d.next = 0.into();
            self.rx_total.d.next = 0.into();
        }
    }
}
