//! The C ABI of the verilated NIC (`csrc/nic_shim.cpp`) and [`Model`], its safe owner.
//!
//! Signal encoding in [`NicInputs`]/[`NicOutputs`]: every port of up to 32 bits is a `u32` (the
//! shim masks it to the port's width), 64-bit ports are `u64`, 512-bit ports are `[u32; 16]` with
//! word 0 holding bits 31..0 (Verilator's `VlWide` layout), so byte `i` of a 512-bit bus is
//! `(w[i / 4] >> (8 * (i % 4))) as u8`, which is also the little-endian byte order of the words.
use std::ffi::{c_char, CString};
use std::path::Path;

use crate::config::EvalMode;
use crate::profile::StateProfile;
use crate::SimError;

/// Values the environment drives into the NIC for one clock cycle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)] // field names are the Verilog port names (see hdl/src/top.rs)
pub struct NicInputs {
    pub s_axis_rx_tkeep: u64,
    pub m_axi_rdata: [u32; 16],
    pub s_axis_rx_tdata: [u32; 16],
    pub reset: u32,
    pub s_axil_awaddr: u32,
    pub s_axil_awvalid: u32,
    pub s_axil_wdata: u32,
    pub s_axil_wstrb: u32,
    pub s_axil_wvalid: u32,
    pub s_axil_bready: u32,
    pub s_axil_araddr: u32,
    pub s_axil_arvalid: u32,
    pub s_axil_rready: u32,
    pub m_axi_awready: u32,
    pub m_axi_wready: u32,
    pub m_axi_bid: u32,
    pub m_axi_bresp: u32,
    pub m_axi_bvalid: u32,
    pub m_axi_arready: u32,
    pub m_axi_rid: u32,
    pub m_axi_rresp: u32,
    pub m_axi_rlast: u32,
    pub m_axi_rvalid: u32,
    pub m_axis_tx_tready: u32,
    pub s_axis_rx_tlast: u32,
    pub s_axis_rx_tvalid: u32,
    pub s_axis_rx_tuser: u32,
    pub irq_ready: u32,
}

/// Values the NIC drives during one clock cycle (before its rising edge).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)] // field names are the Verilog port names (see hdl/src/top.rs)
pub struct NicOutputs {
    pub m_axi_awaddr: u64,
    pub m_axi_wstrb: u64,
    pub m_axi_araddr: u64,
    pub m_axis_tx_tkeep: u64,
    pub m_axi_wdata: [u32; 16],
    pub m_axis_tx_tdata: [u32; 16],
    pub s_axil_awready: u32,
    pub s_axil_wready: u32,
    pub s_axil_bresp: u32,
    pub s_axil_bvalid: u32,
    pub s_axil_arready: u32,
    pub s_axil_rdata: u32,
    pub s_axil_rresp: u32,
    pub s_axil_rvalid: u32,
    pub m_axi_awid: u32,
    pub m_axi_awlen: u32,
    pub m_axi_awsize: u32,
    pub m_axi_awburst: u32,
    pub m_axi_awvalid: u32,
    pub m_axi_wlast: u32,
    pub m_axi_wvalid: u32,
    pub m_axi_bready: u32,
    pub m_axi_arid: u32,
    pub m_axi_arlen: u32,
    pub m_axi_arsize: u32,
    pub m_axi_arburst: u32,
    pub m_axi_arvalid: u32,
    pub m_axi_rready: u32,
    pub m_axis_tx_tlast: u32,
    pub m_axis_tx_tvalid: u32,
    pub irq_valid: u32,
    pub irq_vector: u32,
}

/// Opaque C++ object (`RnicNic` in the shim).
#[repr(C)]
struct RawNic {
    _private: [u8; 0],
}

extern "C" {
    fn rnic_nic_abi(inputs_size: *mut u32, outputs_size: *mut u32);
    fn rnic_nic_has_trace() -> u32;
    fn rnic_nic_new() -> *mut RawNic;
    fn rnic_nic_free(nic: *mut RawNic);
    fn rnic_nic_cycle(nic: *mut RawNic, inputs: *const NicInputs, outputs: *mut NicOutputs);
    fn rnic_nic_trace_open(nic: *mut RawNic, path: *const c_char) -> u32;
    fn rnic_nic_trace_close(nic: *mut RawNic);
    fn rnic_nic_set_eval_mode(nic: *mut RawNic, mode: u32) -> u32;
    fn rnic_nic_eval_mismatch(nic: *const RawNic, cycle: *mut u64, word: *mut u32) -> u32;
    fn rnic_nic_state_profile_start(nic: *mut RawNic) -> u32;
    fn rnic_nic_state_profile_read(nic: *const RawNic, tx: *mut u64, rx: *mut u64) -> u32;
}

/// True when the shim was built with the fast evaluation ([`EvalMode::Fast`]): build.rs found a
/// Verilator whose generated scheduler the shim reproduces (5.006, or `RNIC_SIM_FAST_CYCLE=1` at
/// build time) and the model has no waveform support. Without it every mode runs as
/// [`EvalMode::Reference`].
pub fn fast_cycle_built() -> bool {
    env!("RNIC_SIM_FAST_CYCLE_BUILT") == "1"
}

/// True when the model was compiled with waveform support (cargo feature `waveform`).
pub fn has_waveform_support() -> bool {
    // SAFETY: a pure function of the shim without arguments.
    unsafe { rnic_nic_has_trace() != 0 }
}

/// One verilated NIC, exclusively owned. Dropping it frees the C++ model.
pub struct Model {
    raw: *mut RawNic,
    mode: EvalMode,
}

// SAFETY: the C++ model has its own VerilatedContext and no thread affinity; `Model` owns it
// exclusively (no aliases escape), so moving it to another thread is sound. It is not `Sync`.
unsafe impl Send for Model {}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").finish_non_exhaustive()
    }
}

impl Model {
    /// Creates a model (clock low, inputs zero, settled).
    ///
    /// # Errors
    /// [`SimError::Abi`] if the shim's structs disagree with this crate's, [`SimError::ModelCreate`]
    /// if the C++ constructor failed.
    pub fn new() -> Result<Self, SimError> {
        let (mut isz, mut osz) = (0u32, 0u32);
        // SAFETY: both pointers are valid for one u32 write.
        unsafe { rnic_nic_abi(&mut isz, &mut osz) };
        let (want_i, want_o) = (std::mem::size_of::<NicInputs>(), std::mem::size_of::<NicOutputs>());
        if isz as usize != want_i || osz as usize != want_o {
            return Err(SimError::Abi(format!(
                "shim NicInputs/NicOutputs are {isz}/{osz} bytes, Rust expects {want_i}/{want_o}"
            )));
        }
        // SAFETY: no preconditions; returns null on failure, which is checked.
        let raw = unsafe { rnic_nic_new() };
        if raw.is_null() {
            return Err(SimError::ModelCreate);
        }
        Ok(Self { raw, mode: EvalMode::Reference })
    }

    /// Selects how each cycle is evaluated (see [`EvalMode`]); call before the first cycle.
    /// Returns the mode in effect: [`EvalMode::Reference`] when the shim was built without the
    /// fast path ([`fast_cycle_built`]) or the checked mode's second model could not be created.
    pub fn set_eval_mode(&mut self, mode: EvalMode) -> EvalMode {
        let code = match mode {
            EvalMode::Reference => 0,
            EvalMode::Fast => 1,
            EvalMode::Checked => 2,
        };
        // SAFETY: `raw` is live and exclusively borrowed; no cycle is running.
        self.mode = match unsafe { rnic_nic_set_eval_mode(self.raw, code) } {
            1 => EvalMode::Fast,
            2 => EvalMode::Checked,
            _ => EvalMode::Reference,
        };
        self.mode
    }

    /// The evaluation mode in effect.
    pub fn eval_mode(&self) -> EvalMode {
        self.mode
    }

    /// In [`EvalMode::Checked`]: the first cycle (counted from the model's creation) and the
    /// index of the 32-bit word of [`NicOutputs`] at which the fast evaluation's outputs differed
    /// from the reference evaluation's; `None` while they agree (and in the other modes).
    pub fn eval_mismatch(&self) -> Option<(u64, u32)> {
        let (mut cycle, mut word) = (0u64, 0u32);
        // SAFETY: `raw` is live; both pointers are valid for one write.
        (unsafe { rnic_nic_eval_mismatch(self.raw, &mut cycle, &mut word) } != 0).then_some((cycle, word))
    }

    /// Runs one clock cycle: applies `inputs` with the clock low, returns the outputs in effect
    /// during the cycle, then raises the clock.
    #[inline]
    pub fn cycle(&mut self, inputs: &NicInputs, outputs: &mut NicOutputs) {
        // SAFETY: `raw` is a live model owned by `self` (`&mut self` excludes concurrent use);
        // `inputs`/`outputs` are valid references to structs whose layout the constructor
        // checked against the shim's.
        unsafe { rnic_nic_cycle(self.raw, inputs, outputs) }
        if self.mode == EvalMode::Checked {
            if let Some((cycle, word)) = self.eval_mismatch() {
                panic!(
                    "fast evaluation diverged from Verilator's reference evaluation at cycle {cycle}: \
                     output word {word} of NicOutputs differs (run with RNIC_SIM_EVAL=reference)"
                );
            }
        }
    }

    /// Starts dumping an FST waveform of every signal into `path`, from the next cycle on.
    ///
    /// # Errors
    /// [`SimError::WaveformDisabled`] without the `waveform` feature, [`SimError::Io`] if the file
    /// cannot be created.
    pub fn dump_waveform(&mut self, path: &Path) -> Result<(), SimError> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| SimError::Io(std::io::Error::other("waveform path contains NUL")))?;
        // SAFETY: `raw` is live and exclusively borrowed; `c` is a NUL-terminated string that
        // outlives the call (the shim copies it).
        match unsafe { rnic_nic_trace_open(self.raw, c.as_ptr()) } {
            0 => Ok(()),
            1 => Err(SimError::WaveformDisabled),
            _ => Err(SimError::Io(std::io::Error::other(format!("cannot open waveform file {}", path.display())))),
        }
    }

    /// Flushes and closes the waveform dump, if any.
    pub fn stop_waveform(&mut self) {
        // SAFETY: `raw` is live and exclusively borrowed.
        unsafe { rnic_nic_trace_close(self.raw) }
    }

    /// Clears the state profile and counts from the next cycle on ([`crate::profile`]).
    /// Returns false when the model does not keep the engines' state registers (build.rs found
    /// them missing), and then counts nothing.
    pub fn start_state_profile(&mut self) -> bool {
        // SAFETY: `raw` is live and exclusively borrowed.
        unsafe { rnic_nic_state_profile_start(self.raw) != 0 }
    }

    /// The state profile since [`Model::start_state_profile`]; `None` if none was started.
    pub fn state_profile(&self) -> Option<StateProfile> {
        let mut p = StateProfile { tx: [0; 64], rx: [0; 64] };
        // SAFETY: `raw` is live; the shim writes exactly 64 u64 into each array, both owned here.
        let ok = unsafe { rnic_nic_state_profile_read(self.raw, p.tx.as_mut_ptr(), p.rx.as_mut_ptr()) };
        (ok != 0).then_some(p)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: `raw` came from rnic_nic_new, is freed exactly once, here.
        unsafe { rnic_nic_free(self.raw) }
    }
}

/// Byte `i` (0..64) of a 512-bit bus.
#[inline]
pub fn wide_byte(w: &[u32; 16], i: usize) -> u8 {
    (w[i / 4] >> (8 * (i % 4))) as u8
}

/// Copies a 512-bit bus into 64 bytes (byte 0 = bits 7..0).
#[inline]
pub fn wide_to_bytes(w: &[u32; 16], out: &mut [u8; 64]) {
    for (i, word) in w.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
}

/// Builds a 512-bit bus from 64 bytes (byte 0 = bits 7..0).
#[inline]
pub fn bytes_to_wide(b: &[u8; 64], w: &mut [u32; 16]) {
    for (i, word) in w.iter_mut().enumerate() {
        *word = u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    }
}
