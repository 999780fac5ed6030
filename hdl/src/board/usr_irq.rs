//! The NIC's interrupt output on the XDMA core's user interrupts (PG195 "Interrupt Interface",
//! PG194 "MSI and Internal MSI-X Interrupts").
use rust_hdl::prelude::*;

/// Where the bridge is in one interrupt's handshake.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum UsrIrqState {
    /// No request out; a NIC message is taken into `usr_irq_req` here.
    Idle,
    /// One `usr_irq_req` bit is high, held until the core's `usr_irq_ack` for it.
    Request,
    /// The core sent the message: `irq_ready` tells the NIC it is taken, and the request bit is
    /// low for this cycle and the next, so the next request on it is a new rising edge.
    Release,
}

/// Turns the NIC's MSI-X-style output (`irq_valid` + 5-bit `irq_vector`, held until
/// `irq_ready`; [`crate::irq::IrqGen`]) into the XDMA core's user-interrupt handshake: vector `v`
/// raises `usr_irq_req[v mod 16]` and holds it until `usr_irq_ack` answers that bit (the core
/// sent the MSI-X message of its table entry `v mod 16`), then drops it and gives the NIC
/// `irq_ready` for one cycle. One message per NIC event, in the NIC's order.
///
/// The core offers 16 user interrupts and the build gives the function an MSI-X table of 16
/// entries (constraints/u250/build.tcl), so a driver over VFIO sees 16 vectors and assigns CQs
/// only vectors 0..15; the NIC's vectors 16..31 would alias 0..15 (an extra wake-up, never a
/// lost one).
///
/// Timing: `usr_irq_req` is a register: a message goes out 1 cycle after the NIC offers it; the
/// NIC's `irq_ready` comes 1 cycle after the ack is seen (registered), so one interrupt takes
/// 3 cycles plus the core's ack latency, and the next can start 2 cycles after `irq_ready`.
/// Every output is a register or a decode of the state register (1 LUT level); the ack match is
/// a 16-bit AND-reduce (2 levels).
#[derive(LogicBlock, Default)]
pub struct UsrIrqBridge {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The NIC's message, held until `irq_ready`.
    pub irq_valid: Signal<In, Bit>,
    pub irq_vector: Signal<In, Bits<5>>,
    pub irq_ready: Signal<Out, Bit>,
    /// To and from the XDMA core (`usr_irq_req[15:0]`, `usr_irq_ack[15:0]`).
    pub usr_irq_req: Signal<Out, Bits<16>>,
    pub usr_irq_ack: Signal<In, Bits<16>>,
    state: DFF<UsrIrqState>,
    req: DFF<Bits<16>>,
    acked: Signal<Local, Bits<16>>,
}

impl Logic for UsrIrqBridge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, req);
        self.usr_irq_req.next = self.req.q.val();
        self.irq_ready.next = self.state.q.val() == UsrIrqState::Release;
        self.acked.next = self.usr_irq_ack.val() & self.req.q.val();
        match self.state.q.val() {
            UsrIrqState::Idle => {
                if self.irq_valid.val() {
                    self.req.d.next = bits::<16>(1) << bit_cast::<16, 4>(self.irq_vector.val().get_bits::<4>(0));
                    self.state.d.next = UsrIrqState::Request;
                }
            }
            UsrIrqState::Request => {
                if self.acked.val().any() {
                    self.req.d.next = 0.into();
                    self.state.d.next = UsrIrqState::Release;
                }
            }
            UsrIrqState::Release => {
                self.state.d.next = UsrIrqState::Idle;
            }
        }
        if self.reset.val() {
            self.state.d.next = UsrIrqState::Idle;
            self.req.d.next = 0.into();
        }
    }
}
