//! A synchronous FIFO that a reset empties.
//!
//! rust-hdl's `SynchronousFIFO` has no reset: its read and write pointers are registers without
//! one, so whatever a FIFO held when the NIC was reset came out afterwards (a stale receive WQE
//! served to the next program after `rnic sim serve` reset the NIC for a new client, stop 26;
//! every other FIFO, packet jobs and receive descriptors included, could do the same). This one
//! has the same ports, cycle behaviour and block-RAM mapping, plus `reset`: while it is high the
//! pointers go to zero, so the FIFO is empty in the cycle after the first reset cycle and
//! nothing written before comes out.
use rust_hdl::prelude::*;

/// A FIFO of `2^N` entries of `D` (`NP1` = `N + 1`, the pointer width: the extra bit tells full
/// from empty, as in Cummings' FIFO paper), with a synchronous, active-high `reset`.
///
/// Same behaviour as rust-hdl's `SynchronousFIFO<D, N, NP1, BLOCK_SIZE>` when `reset` is low
/// (`reset_fifo_tb` steps both with the same random traffic and compares every output, every
/// cycle): `data_out` shows the head entry while `empty` is low (first-word fall-through; the
/// RAM read address runs one entry ahead on a read); a write is seen by `empty` and the fill
/// levels one cycle late (the write pointer is delayed a cycle for the read side, so an entry
/// is never read in the cycle it is written); `full` compares the read pointer with the
/// undelayed write pointer; `almost_full` is a fill level (from the delayed write pointer) of
/// at least `2^N − BLOCK_SIZE`, `almost_empty` one below `BLOCK_SIZE`. A write while `full` and
/// a read while `empty` are ignored (and latched in `overflow` / `underflow` until reset).
/// Logic: the pointer compares and increments, ≤ 3 LUT levels for `N` ≤ 8.
#[derive(LogicBlock)]
pub struct ResetFifo<D: Synth, const N: usize, const NP1: usize, const BLOCK_SIZE: u32> {
    pub clock: Signal<In, Clock>,
    /// Synchronous, active high: empties the FIFO.
    pub reset: Signal<In, Bit>,
    pub read: Signal<In, Bit>,
    pub data_out: Signal<Out, D>,
    pub empty: Signal<Out, Bit>,
    pub almost_empty: Signal<Out, Bit>,
    pub underflow: Signal<Out, Bit>,
    pub write: Signal<In, Bit>,
    pub data_in: Signal<In, D>,
    pub full: Signal<Out, Bit>,
    pub almost_full: Signal<Out, Bit>,
    pub overflow: Signal<Out, Bit>,
    ram: RAM<D, N>,
    /// Read and write pointers (`NP1` bits: the entry and a wrap bit), and the write pointer a
    /// cycle late (what the read side compares with).
    rd_ptr: DFF<Bits<NP1>>,
    wr_ptr: DFF<Bits<NP1>>,
    wr_ptr_late: DFF<Bits<NP1>>,
    underflow_r: DFF<Bit>,
    overflow_r: DFF<Bit>,
    is_empty: Signal<Local, Bit>,
    /// Full as the write side sees it (read pointer against the undelayed write pointer).
    is_full_w: Signal<Local, Bit>,
    /// Full as the read side sees it (both pointers as `empty` sees them).
    is_full_r: Signal<Local, Bit>,
    fill: Signal<Local, Bits<NP1>>,
    fill_w: Signal<Local, Bits<NP1>>,
    mask: Constant<Bits<NP1>>,
    size: Constant<Bits<NP1>>,
    block: Constant<Bits<NP1>>,
    almost_full_level: Constant<Bits<NP1>>,
}

impl<D: Synth, const N: usize, const NP1: usize, const BLOCK_SIZE: u32> Default for ResetFifo<D, N, NP1, BLOCK_SIZE> {
    fn default() -> Self {
        assert_eq!(N + 1, NP1, "ResetFifo: NP1 must be N + 1");
        assert!(NP1 < 32 && u128::from(BLOCK_SIZE) <= (1u128 << N), "ResetFifo: bad size");
        Self {
            clock: Default::default(),
            reset: Default::default(),
            read: Default::default(),
            data_out: Default::default(),
            empty: Default::default(),
            almost_empty: Default::default(),
            underflow: Default::default(),
            write: Default::default(),
            data_in: Default::default(),
            full: Default::default(),
            almost_full: Default::default(),
            overflow: Default::default(),
            ram: Default::default(),
            rd_ptr: Default::default(),
            wr_ptr: Default::default(),
            wr_ptr_late: Default::default(),
            underflow_r: Default::default(),
            overflow_r: Default::default(),
            is_empty: Default::default(),
            is_full_w: Default::default(),
            is_full_r: Default::default(),
            fill: Default::default(),
            fill_w: Default::default(),
            mask: Constant::new(((1u32 << N) - 1).to_bits()),
            size: Constant::new(Bits::<N>::count().to_bits()),
            block: Constant::new(BLOCK_SIZE.to_bits()),
            almost_full_level: Constant::new((Bits::<N>::count() - u128::from(BLOCK_SIZE)).to_bits()),
        }
    }
}

impl<D: Synth, const N: usize, const NP1: usize, const BLOCK_SIZE: u32> Logic for ResetFifo<D, N, NP1, BLOCK_SIZE> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rd_ptr, wr_ptr, wr_ptr_late, underflow_r, overflow_r);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.wr_ptr_late.d.next = self.wr_ptr.q.val();
        self.is_empty.next = self.rd_ptr.q.val() == self.wr_ptr_late.q.val();
        // Read side.
        self.is_full_r.next = !self.is_empty.val()
            & ((self.rd_ptr.q.val() & self.mask.val()) == (self.wr_ptr_late.q.val() & self.mask.val()));
        self.fill.next = ((self.wr_ptr_late.q.val() & self.mask.val()) + self.size.val()
            - (self.rd_ptr.q.val() & self.mask.val()))
            & self.mask.val();
        if self.is_full_r.val() {
            self.fill.next = self.size.val();
        }
        self.almost_empty.next = self.fill.val() < self.block.val();
        self.empty.next = self.is_empty.val();
        self.data_out.next = self.ram.read_data.val();
        self.ram.read_address.next = bit_cast::<N, NP1>(self.rd_ptr.q.val() & self.mask.val());
        self.rd_ptr.d.next = self.rd_ptr.q.val();
        if self.read.val() & !self.is_empty.val() {
            self.rd_ptr.d.next = self.rd_ptr.q.val() + 1;
            // The RAM reads the next entry now, so it is out in the cycle after the read.
            self.ram.read_address.next = bit_cast::<N, NP1>((self.rd_ptr.q.val() + 1) & self.mask.val());
        }
        self.underflow_r.d.next = self.underflow_r.q.val() | (self.is_empty.val() & self.read.val());
        self.underflow.next = self.underflow_r.q.val();
        // Write side.
        self.is_full_w.next =
            !self.is_empty.val() & ((self.rd_ptr.q.val() & self.mask.val()) == (self.wr_ptr.q.val() & self.mask.val()));
        self.fill_w.next = ((self.wr_ptr_late.q.val() & self.mask.val()) + self.size.val()
            - (self.rd_ptr.q.val() & self.mask.val()))
            & self.mask.val();
        if self.is_full_w.val() {
            self.fill_w.next = self.size.val();
        }
        self.almost_full.next = self.fill_w.val() >= self.almost_full_level.val();
        self.full.next = self.is_full_w.val();
        self.ram.write_address.next = bit_cast::<N, NP1>(self.wr_ptr.q.val() & self.mask.val());
        self.ram.write_data.next = self.data_in.val();
        self.ram.write_enable.next = false;
        self.wr_ptr.d.next = self.wr_ptr.q.val();
        if self.write.val() & !self.is_full_w.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
            self.ram.write_enable.next = true;
        }
        self.overflow_r.d.next = self.overflow_r.q.val() | (self.is_full_w.val() & self.write.val());
        self.overflow.next = self.overflow_r.q.val();
        if self.reset.val() {
            self.rd_ptr.d.next = 0.into();
            self.wr_ptr.d.next = 0.into();
            self.wr_ptr_late.d.next = 0.into();
            self.underflow_r.d.next = false;
            self.overflow_r.d.next = false;
        }
    }
}
