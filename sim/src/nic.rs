//! [`Nic`]: one verilated NIC with the host (DMA memory, MMIO) and MAC (TX/RX streams) models
//! that serve its ports, advanced one clock cycle at a time.
//!
//! Cycle semantics: in [`Nic::cycle`], every model first decides its inputs to the NIC from its
//! own state (never from the NIC's outputs of the same cycle); the NIC is evaluated with the clock
//! low, which gives its outputs for the cycle (including combinational responses to the inputs);
//! then each channel transfers if its valid and ready were both high in that cycle; then the
//! clock rises.
use std::path::Path;

use crate::axi_slave::{AxiSlave, DmaConfig, DmaStats};
use crate::config::SimConfig;
use crate::dma::{DmaMemory, InterruptSink};
use crate::ffi::{Model, NicInputs, NicOutputs};
use crate::host_memory::HostMemory;
use crate::mmio::{MmioCompletion, MmioMaster, MmioRequest, MmioStats, MmioTicket};
use crate::profile::StateProfile;
use crate::stream::{RxFrame, RxPresenter, RxStats, TxCollector, TxFrame, TxStats};
use crate::SimError;

/// The clocked hardware inside a [`Nic`]: the verilated RTL ([`Model`]) or, for tests of the
/// models around it, any Rust object with the same ports.
///
/// Cores are `Send`, so a world can step its NICs on several threads (`SimConfig::threads`).
///
/// Contract of [`cycle`](NicCore::cycle), matching the verilated model: `outputs` must be the
/// values driven during this cycle (before the rising edge; they may depend combinationally on
/// `inputs`), and the core's registers then take their values at the edge.
pub trait NicCore: Send {
    /// Runs one clock cycle (see the trait documentation).
    fn cycle(&mut self, inputs: &NicInputs, outputs: &mut NicOutputs);

    /// Starts a waveform dump into `path`.
    ///
    /// # Errors
    /// [`SimError::WaveformDisabled`] by default.
    fn dump_waveform(&mut self, path: &Path) -> Result<(), SimError> {
        let _ = path;
        Err(SimError::WaveformDisabled)
    }

    /// Flushes and closes the waveform dump, if any.
    fn stop_waveform(&mut self) {}

    /// Starts a state profile ([`crate::profile`]); false if the core has none (the default).
    fn start_state_profile(&mut self) -> bool {
        false
    }

    /// The state profile since [`NicCore::start_state_profile`], if one was started.
    fn state_profile(&self) -> Option<StateProfile> {
        None
    }
}

impl NicCore for Model {
    #[inline]
    fn cycle(&mut self, inputs: &NicInputs, outputs: &mut NicOutputs) {
        Model::cycle(self, inputs, outputs);
    }
    fn dump_waveform(&mut self, path: &Path) -> Result<(), SimError> {
        Model::dump_waveform(self, path)
    }
    fn stop_waveform(&mut self) {
        Model::stop_waveform(self);
    }
    fn start_state_profile(&mut self) -> bool {
        Model::start_state_profile(self)
    }
    fn state_profile(&self) -> Option<StateProfile> {
        Model::state_profile(self)
    }
}

/// Statistics of one NIC and its host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NicStats {
    /// Clock cycles simulated.
    pub cycles: u64,
    /// DMA (AXI4 master) traffic and errors.
    pub dma: DmaStats,
    /// MMIO (AXI4-Lite) traffic.
    pub mmio: MmioStats,
    /// Frames the NIC transmitted.
    pub tx: TxStats,
    /// Frames presented to the NIC's receiver.
    pub rx: RxStats,
}

/// One simulated NIC: the verilated RTL plus the models serving its ports.
///
/// Usually owned by a [`crate::World`], which connects the MAC ports to wires and offers
/// blocking MMIO; it can also be driven alone.
pub struct Nic {
    model: Box<dyn NicCore>,
    inputs: NicInputs,
    outputs: NicOutputs,
    cycle: u64,
    reset_remaining: u64,
    reset_cycles: u64,
    memory: HostMemory,
    /// Replaces `memory` as what the DMA reaches (a vfio-user client's shared memory).
    dma_memory: Option<Box<dyn DmaMemory + Send>>,
    /// Where MSI-X messages go; without one they are counted and dropped.
    irq_sink: Option<Box<dyn InterruptSink + Send>>,
    msix_raised: u64,
    dma: AxiSlave,
    mmio: MmioMaster,
    tx: TxCollector,
    rx: RxPresenter,
    tx_ready: bool,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic").field("cycle", &self.cycle).field("in_reset", &self.in_reset()).finish_non_exhaustive()
    }
}

impl Nic {
    /// A NIC with the default [`SimConfig`], not yet reset (call [`reset`](Self::reset)).
    ///
    /// # Errors
    /// If the verilated model cannot be created (see [`Model::new`]).
    pub fn new() -> Result<Self, SimError> {
        Self::with_config(&SimConfig::default())
    }

    /// A NIC with the DMA and reset parameters of `config`, not yet reset.
    ///
    /// # Errors
    /// If the verilated model cannot be created (see [`Model::new`]).
    pub fn with_config(config: &SimConfig) -> Result<Self, SimError> {
        let mut model = Model::new()?;
        model.set_eval_mode(config.eval);
        Ok(Self::with_core(Box::new(model), config))
    }

    /// A NIC around another core than the verilated RTL (a Rust fake in tests), not yet reset.
    pub fn with_core(core: Box<dyn NicCore>, config: &SimConfig) -> Self {
        Self {
            model: core,
            // The PCIe core takes an interrupt request in the cycle it is made.
            inputs: NicInputs { m_axis_tx_tready: 1, irq_ready: 1, ..NicInputs::default() },
            outputs: NicOutputs::default(),
            cycle: 0,
            reset_remaining: 0,
            reset_cycles: config.reset_cycles.max(1),
            memory: HostMemory::new(),
            dma_memory: None,
            irq_sink: None,
            msix_raised: 0,
            dma: AxiSlave::new(DmaConfig::from(config)),
            mmio: MmioMaster::new(),
            tx: TxCollector::new(),
            rx: RxPresenter::new(),
            tx_ready: true,
        }
    }

    /// Resets this NIC alone: holds `reset` high for `reset_cycles` cycles, clocking only this
    /// NIC. Inside a [`crate::World`] use `World::reset` so the other NICs and wires keep time.
    pub fn reset(&mut self) {
        self.begin_reset();
        while self.in_reset() {
            self.cycle();
        }
    }

    /// Starts a reset: the next `reset_cycles` cycles drive `reset` high. DMA bursts in flight and
    /// a partly transmitted frame are forgotten, an MMIO in progress completes as aborted, frames
    /// arriving meanwhile are dropped. Host memory is kept.
    pub fn begin_reset(&mut self) {
        self.reset_remaining = self.reset_cycles;
        self.dma.reset();
        self.tx.reset();
        self.rx.flush();
        self.mmio.abort_active(self.cycle);
    }

    /// True while `reset` is driven high.
    pub fn in_reset(&self) -> bool {
        self.reset_remaining > 0
    }

    /// Clock cycles simulated by this NIC.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// Runs one clock cycle (see the module documentation for the order of events).
    pub fn cycle(&mut self) {
        let now = self.cycle;
        let in_reset = self.reset_remaining > 0;
        let inp = &mut self.inputs;
        inp.reset = u32::from(in_reset);
        let mem: &dyn DmaMemory = match &self.dma_memory {
            Some(m) => m.as_ref(),
            None => &self.memory,
        };
        self.dma.drive(now, mem, inp);
        self.mmio.drive(inp, !in_reset);
        inp.m_axis_tx_tready = u32::from(self.tx_ready);
        if in_reset {
            self.rx.flush();
        }
        self.rx.drive_and_advance(inp);

        self.model.cycle(&self.inputs, &mut self.outputs);

        if !in_reset {
            let mem: &mut dyn DmaMemory = match &mut self.dma_memory {
                Some(m) => m.as_mut(),
                None => &mut self.memory,
            };
            self.dma.observe(now, mem, &self.inputs, &self.outputs);
            // The interrupt port: a request taken (`irq_valid` with `irq_ready`) is an MSI-X
            // message of vector `irq_vector`.
            if self.outputs.irq_valid & self.inputs.irq_ready & 1 == 1 {
                self.signal_msix(self.outputs.irq_vector as u16);
            }
            self.mmio.observe(now, &self.inputs, &self.outputs);
            self.tx.observe(now, &self.inputs, &self.outputs);
        }
        if in_reset {
            self.reset_remaining -= 1;
        }
        self.cycle += 1;
    }

    /// The host memory the NIC's DMA reaches.
    pub fn memory(&self) -> &HostMemory {
        &self.memory
    }

    /// The host memory, for mapping buffers and writing rings.
    pub fn memory_mut(&mut self) -> &mut HostMemory {
        &mut self.memory
    }

    /// Makes the NIC's DMA reach `memory` instead of its own [`HostMemory`] (which stays, unused
    /// by DMA, for [`memory`](Self::memory)). Used by a vfio-user server to serve DMA from the
    /// client's shared memory.
    pub fn set_dma_memory(&mut self, memory: Box<dyn DmaMemory + Send>) {
        self.dma_memory = Some(memory);
    }

    /// Sends the NIC's MSI-X messages to `sink` (replacing an earlier one).
    pub fn set_interrupt_sink(&mut self, sink: Box<dyn InterruptSink + Send>) {
        self.irq_sink = Some(sink);
    }

    /// **The interrupt hook**: MSI-X vector `vector` of this NIC fires. [`cycle`](Self::cycle)
    /// calls it in each cycle the NIC's `irq_valid` output is taken (`irq_ready` is always high:
    /// the modelled PCIe core sends the message at once), with `irq_vector`; the vfio-user
    /// server's loopback trigger calls it directly. Counted in
    /// [`msix_raised`](Self::msix_raised); without a sink the message is dropped.
    pub fn signal_msix(&mut self, vector: u16) {
        self.msix_raised += 1;
        if let Some(s) = &mut self.irq_sink {
            s.msix(vector);
        }
    }

    /// MSI-X messages raised since creation.
    pub fn msix_raised(&self) -> u64 {
        self.msix_raised
    }

    /// Queues an MMIO request; it runs over the next cycles. Poll with
    /// [`mmio_take`](Self::mmio_take).
    pub fn mmio_submit(&mut self, req: MmioRequest) -> MmioTicket {
        self.mmio.submit(req, self.cycle)
    }

    /// The completion of an MMIO request, once it finished (returned only once).
    pub fn mmio_take(&mut self, ticket: MmioTicket) -> Option<MmioCompletion> {
        self.mmio.take(ticket)
    }

    /// Gives up on an MMIO request (see [`MmioMaster::cancel`]).
    pub fn mmio_cancel(&mut self, ticket: MmioTicket) -> bool {
        self.mmio.cancel(ticket)
    }

    /// True when no MMIO request is queued or in progress.
    pub fn mmio_idle(&self) -> bool {
        self.mmio.is_idle()
    }

    /// Sets `m_axis_tx_tready` for the following cycles (the transmit MAC's back-pressure).
    pub fn set_tx_ready(&mut self, ready: bool) {
        self.tx_ready = ready;
    }

    /// Bytes of the frame the NIC is in the middle of transmitting.
    pub fn tx_partial_bytes(&self) -> usize {
        self.tx.partial_bytes()
    }

    /// Removes and returns the frames the NIC finished transmitting, oldest first.
    pub fn take_tx_frames(&mut self) -> Vec<TxFrame> {
        self.tx.drain().collect()
    }

    /// Moves the transmitted frames into `out` (no allocation when there are none).
    pub fn drain_tx_frames_into(&mut self, out: &mut Vec<TxFrame>) {
        if self.tx.completed() > 0 {
            out.extend(self.tx.drain());
        }
    }

    /// Queues a frame (bytes from the destination MAC address, no FCS) for the NIC's receiver;
    /// it is presented back to back with the frames before it, one beat per cycle, with `tuser`
    /// on the last beat if `bad_fcs`.
    pub fn push_rx_frame(&mut self, data: Vec<u8>, bad_fcs: bool) {
        self.push_rx(RxFrame { data, bad_fcs });
    }

    /// As [`push_rx_frame`](Self::push_rx_frame).
    pub fn push_rx(&mut self, frame: RxFrame) {
        if self.in_reset() {
            self.rx.discard(frame);
        } else {
            self.rx.push(frame);
        }
    }

    /// Frames waiting for (or being fed to) the NIC's receiver.
    pub fn rx_queued(&self) -> usize {
        self.rx.queued()
    }

    /// True when no DMA, MMIO or frame is in progress or waiting on this NIC's ports.
    pub fn is_quiet(&self) -> bool {
        self.dma.is_idle() && self.mmio.is_idle() && self.rx.queued() == 0 && self.tx.partial_bytes() == 0
    }

    /// Statistics since creation.
    pub fn stats(&self) -> NicStats {
        NicStats {
            cycles: self.cycle,
            dma: self.dma.stats(),
            mmio: self.mmio.stats(),
            tx: self.tx.stats(),
            rx: self.rx.stats(),
        }
    }

    /// The inputs driven into the NIC in the last cycle (for debugging).
    pub fn last_inputs(&self) -> &NicInputs {
        &self.inputs
    }

    /// The NIC's outputs in the last cycle (for debugging).
    pub fn last_outputs(&self) -> &NicOutputs {
        &self.outputs
    }

    /// Starts an FST waveform of every signal of the NIC into `path` (open it with GTKWave or
    /// Surfer); time is in ps, one cycle = 4000 ps. Replaces a dump already open.
    ///
    /// # Errors
    /// [`SimError::WaveformDisabled`] unless built with the `waveform` feature; I/O errors.
    pub fn dump_waveform(&mut self, path: &Path) -> Result<(), SimError> {
        self.model.dump_waveform(path)
    }

    /// Flushes and closes the waveform dump, if any.
    pub fn stop_waveform(&mut self) {
        self.model.stop_waveform();
    }

    /// Clears the cycles-per-state counts of the NIC's TX scheduler and RX engine and counts
    /// from the next cycle on ([`crate::profile`]).
    ///
    /// # Errors
    /// [`SimError::InvalidArgument`] if the core keeps no state profile (a scripted core, or a
    /// model whose state registers build.rs did not find).
    pub fn start_state_profile(&mut self) -> Result<(), SimError> {
        if self.model.start_state_profile() {
            Ok(())
        } else {
            Err(SimError::InvalidArgument("this NIC core keeps no state profile".into()))
        }
    }

    /// The cycles per state since [`Nic::start_state_profile`]; `None` if none was started.
    pub fn state_profile(&self) -> Option<StateProfile> {
        self.model.state_profile()
    }
}
