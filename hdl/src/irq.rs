//! The interrupt generator: completion events become MSI-X-style messages on the NIC top
//! (`irq_valid`, `irq_vector`, `irq_ready`), with per-vector masks, pending bits and moderation
//! ([`rnic_contract::regs::IRQ_MASK`], [`rnic_contract::regs::IRQ_PENDING`],
//! [`rnic_contract::regs::IRQ_MODERATION`]).
use rust_hdl::prelude::*;

/// Where the generator is with the next message.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum IrqState {
    /// Waiting for an eligible vector (pending, not masked, not held by moderation).
    Idle,
    /// The lowest eligible vector is registered (one-hot): it is encoded, its pending bit
    /// cleared and, with moderation on, its hold-off bit set.
    Pick,
    /// `irq_valid` is high with `irq_vector` until the PCIe core takes it (`irq_ready`).
    Offer,
}

/// Turns events (vector numbers) into interrupt messages, one per vector and event burst.
///
/// An event on `ev0` or `ev1` (one-cycle pulses, both may fire in one cycle) sets its vector's
/// pending bit. A vector is eligible when it is pending, its bit in `mask` is clear and it is
/// not held off by moderation; the lowest eligible vector is sent: `irq_valid` rises with
/// `irq_vector` and stays until `irq_ready` (the PCIe core's user-interrupt handshake), and its
/// pending bit clears when it is picked, so an event after that sends another message.
/// Several events of one vector before it is sent coalesce into one message. A masked vector
/// keeps its pending bit and is sent once when unmasked (MSI-X's mask and PBA, PCI Local Bus
/// Specification 3.0 6.8.2). `pending` shows the pending bits for BAR0.
///
/// Moderation: `moderation` (units of [`rnic_contract::regs::irq::MODERATION_UNIT_CYCLES`]
/// cycles, 0 = off) cuts time into windows of that length; a vector sent in a window is held
/// off until the window ends, so each vector sends at most one message per window and the
/// events meanwhile leave as one message at the window's end.
///
/// Timing: an event reaches `irq_valid` 4 cycles later (pending, eligible, one-hot pick,
/// encoded) when the output is free; initiation interval 3 cycles per message (Idle, Pick,
/// Offer with `irq_ready` high). Every path starts at a register: the widest logic is the
/// 32-bit lowest-bit isolation `x & -x` into the one-hot register and a 16-bit compare for the
/// window, each within a stage (≤ 5 LUT levels).
#[derive(LogicBlock, Default)]
pub struct IrqGen {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Events (one-cycle pulses with their vector).
    pub ev0_valid: Signal<In, Bit>,
    pub ev0_vector: Signal<In, Bits<5>>,
    pub ev1_valid: Signal<In, Bit>,
    pub ev1_vector: Signal<In, Bits<5>>,
    /// Per-vector masks ([`rnic_contract::regs::IRQ_MASK`]).
    pub mask: Signal<In, Bits<32>>,
    /// Moderation window in units of 256 cycles, 0 = off ([`rnic_contract::regs::IRQ_MODERATION`]).
    pub moderation: Signal<In, Bits<16>>,
    /// The message to the PCIe core, held until `irq_ready`.
    pub irq_valid: Signal<Out, Bit>,
    pub irq_vector: Signal<Out, Bits<5>>,
    pub irq_ready: Signal<In, Bit>,
    /// Pending bits ([`rnic_contract::regs::IRQ_PENDING`]).
    pub pending_out: Signal<Out, Bits<32>>,
    /// 0 Idle, 1 Pick, 2 Offer.
    pub dbg_state: Signal<Out, Bits<2>>,
    state: DFF<IrqState>,
    pending: DFF<Bits<32>>,
    holdoff: DFF<Bits<32>>,
    elig: DFF<Bits<32>>,
    /// The picked vector, one-hot.
    hot: DFF<Bits<32>>,
    ovec: DFF<Bits<5>>,
    /// Moderation: cycles within the unit, units within the window (and that plus one), the
    /// window's end (a registered pulse), moderation on.
    unit: DFF<Bits<8>>,
    win: DFF<Bits<16>>,
    win_p1: DFF<Bits<16>>,
    win_end: DFF<Bit>,
    mod_on: DFF<Bit>,
    set: Signal<Local, Bits<32>>,
    clr: Signal<Local, Bits<32>>,
    hold_set: Signal<Local, Bits<32>>,
}

impl Logic for IrqGen {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, pending, holdoff, elig, hot, ovec, unit, win, win_p1, win_end, mod_on);
        // Events set pending bits; a pick clears its bit (an event in the same cycle wins, so
        // it is not lost).
        self.set.next = 0.into();
        if self.ev0_valid.val() {
            self.set.next = bit_cast::<32, 1>(1.into()) << bit_cast::<32, 5>(self.ev0_vector.val());
        }
        if self.ev1_valid.val() {
            self.set.next = self.set.val() | (bit_cast::<32, 1>(1.into()) << bit_cast::<32, 5>(self.ev1_vector.val()));
        }
        self.clr.next = 0.into();
        self.hold_set.next = 0.into();
        self.pending.d.next = (self.pending.q.val() & !self.clr.val()) | self.set.val();
        self.elig.d.next = self.pending.q.val() & !self.mask.val() & !self.holdoff.q.val();
        self.pending_out.next = self.pending.q.val();

        // Moderation windows: `moderation` units of 256 cycles.
        self.mod_on.d.next = self.moderation.val().any();
        self.unit.d.next = self.unit.q.val() + 1;
        self.win_p1.d.next = self.win.q.val() + 1;
        self.win_end.d.next = false;
        if self.unit.q.val() == 255 {
            self.win.d.next = self.win_p1.q.val();
            if self.win_p1.q.val() >= self.moderation.val() {
                self.win.d.next = 0.into();
                self.win_end.d.next = true;
            }
        }

        self.irq_valid.next = false;
        self.irq_vector.next = self.ovec.q.val();
        self.dbg_state.next = 0.into();
        match self.state.q.val() {
            IrqState::Idle => {
                if self.elig.q.val().any() {
                    // The lowest set bit: x & -x.
                    self.hot.d.next = self.elig.q.val() & ((!self.elig.q.val()) + 1);
                    self.state.d.next = IrqState::Pick;
                }
            }
            IrqState::Pick => {
                self.dbg_state.next = 1.into();
                self.clr.next = self.hot.q.val();
                if self.mod_on.q.val() {
                    self.hold_set.next = self.hot.q.val();
                }
                self.ovec.d.next = bit_cast::<5, 1>((self.hot.q.val() & 0xAAAA_AAAA_u64).any().into())
                    | (bit_cast::<5, 1>((self.hot.q.val() & 0xCCCC_CCCC_u64).any().into()) << 1)
                    | (bit_cast::<5, 1>((self.hot.q.val() & 0xF0F0_F0F0_u64).any().into()) << 2)
                    | (bit_cast::<5, 1>((self.hot.q.val() & 0xFF00_FF00_u64).any().into()) << 3)
                    | (bit_cast::<5, 1>((self.hot.q.val() & 0xFFFF_0000_u64).any().into()) << 4);
                self.state.d.next = IrqState::Offer;
            }
            IrqState::Offer => {
                self.dbg_state.next = 2.into();
                self.irq_valid.next = true;
                if self.irq_ready.val() {
                    self.state.d.next = IrqState::Idle;
                }
            }
        }
        self.pending.d.next = (self.pending.q.val() & !self.clr.val()) | self.set.val();
        self.holdoff.d.next = self.holdoff.q.val() | self.hold_set.val();
        if self.win_end.q.val() {
            self.holdoff.d.next = self.hold_set.val();
        }
        if self.reset.val() {
            self.state.d.next = IrqState::Idle;
            self.pending.d.next = 0.into();
            self.holdoff.d.next = 0.into();
            self.elig.d.next = 0.into();
            self.unit.d.next = 0.into();
            self.win.d.next = 0.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_verilog() {
        let mut b = IrqGen::default();
        b.connect_all();
        let v = generate_verilog(&b);
        assert!(v.contains("module top"));
    }
}
