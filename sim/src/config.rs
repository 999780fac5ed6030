//! Simulation parameters: clock, host (PCIe/DMA) model, wire model, fault injection.

/// Core clock of the NIC in MHz (one cycle = [`CYCLE_NS`] ns).
pub const CLOCK_MHZ: u64 = 250;
/// Length of one clock cycle in ns.
pub const CYCLE_NS: u64 = 4;
/// Width of the DMA and stream data buses in bytes (512 bits).
pub const BUS_BYTES: usize = 64;
/// Page size of the simulated IOMMU in bytes: IOVAs are allocated and checked in pages.
pub const PAGE_BYTES: u64 = 4096;

/// Parameters of a simulation. `Default` gives the documented values (docs/simulator.md).
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Cycles from a DMA read request's AR handshake to its first data beat (default 64 cycles =
    /// 256 ns; a PCIe host read round trip is roughly 0.5–1 µs, set 125–250 to model that).
    pub dma_read_latency_cycles: u64,
    /// Cycles from a DMA write burst's last W beat to its B response (default 32 = 128 ns).
    pub dma_write_latency_cycles: u64,
    /// Read bursts the host accepts before deasserting `arready` (default 64).
    pub dma_max_outstanding_reads: usize,
    /// Write bursts (address accepted, response not yet taken) before deasserting `awready`
    /// (default 64).
    pub dma_max_outstanding_writes: usize,
    /// W beats the host buffers ahead of their AW before deasserting `wready` (default 256 beats
    /// = 16 KiB).
    pub dma_write_buffer_beats: usize,
    /// Cycles `reset` is held high by a reset (default 16).
    pub reset_cycles: u64,
    /// Cycles a blocking MMIO waits for its response before failing (default 100 000 = 400 µs).
    pub mmio_timeout_cycles: u64,
    /// The Ethernet links.
    pub link: LinkConfig,
    /// Seeded fault injection on the links (default: none).
    pub faults: FaultConfig,
    /// Threads that step the NICs of a world (default 1, or the environment variable
    /// `RNIC_SIM_THREADS`). With more than one, the NICs run in parallel in windows of cycles no
    /// longer than the wires' lookahead (minimum frame time + latency: 126 cycles by default),
    /// with exactly the results of one thread; at most one thread per NIC is used.
    pub threads: usize,
    /// How the verilated model is evaluated each cycle (default [`EvalMode::Fast`], or the
    /// environment variable `RNIC_SIM_EVAL` = `fast`, `reference` or `checked`). Every mode gives
    /// the same cycles and outputs; see [`EvalMode`].
    pub eval: EvalMode,
}

/// How the shim evaluates the verilated model in one clock cycle (docs/simulator.md, "One
/// evaluation per cycle").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EvalMode {
    /// Verilator's textbook cycle: inputs with the clock low, `eval()`; clock high, `eval()`.
    /// Verilator re-runs its input-combinational region in both, so most combinational logic is
    /// evaluated three times per cycle.
    Reference,
    /// Skips the passes whose results are known: the clock-low `eval()` when the inputs equal the
    /// last evaluated ones, and the input-combinational pass at the rising edge. Needs a model
    /// whose scheduler the shim knows (Verilator 5.006) built without the `waveform` feature;
    /// otherwise it is `Reference` ([`crate::ffi::fast_cycle_built`]).
    #[default]
    Fast,
    /// `Fast`, plus a second model stepped the `Reference` way with the same inputs; the first
    /// cycle whose outputs differ panics with the cycle and the output word. For tests.
    Checked,
}

impl EvalMode {
    /// `fast`, `reference` or `checked`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Reference => "reference",
            Self::Checked => "checked",
        }
    }

    /// Parses `fast`, `reference` or `checked` (the values of `RNIC_SIM_EVAL`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "fast" => Some(Self::Fast),
            "reference" => Some(Self::Reference),
            "checked" => Some(Self::Checked),
            _ => None,
        }
    }
}

/// `RNIC_SIM_EVAL` from the environment ([`EvalMode::Fast`] when unset or not a known mode).
fn eval_from_env() -> EvalMode {
    std::env::var("RNIC_SIM_EVAL").ok().and_then(|v| EvalMode::parse(&v)).unwrap_or_default()
}

/// `RNIC_SIM_THREADS` from the environment (1 when unset or not a number >= 1).
fn threads_from_env() -> usize {
    std::env::var("RNIC_SIM_THREADS").ok().and_then(|v| v.trim().parse().ok()).filter(|&n| n >= 1).unwrap_or(1)
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            dma_read_latency_cycles: 64,
            dma_write_latency_cycles: 32,
            dma_max_outstanding_reads: 64,
            dma_max_outstanding_writes: 64,
            dma_write_buffer_beats: 256,
            reset_cycles: 16,
            mmio_timeout_cycles: 100_000,
            link: LinkConfig::default(),
            faults: FaultConfig::default(),
            threads: threads_from_env(),
            eval: eval_from_env(),
        }
    }
}

/// One direction of an Ethernet link (a full-duplex wire is two of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// Line rate in Gb/s (default 100). One clock cycle carries `4 * rate_gbps` bits.
    pub rate_gbps: u64,
    /// Propagation plus receive-MAC latency in ns, added after a frame's last bit (default 500).
    pub latency_ns: u64,
    /// Bytes of frames (complete or partly received) the transmit MAC buffers before it
    /// deasserts `tready` (default 16 KiB).
    pub tx_fifo_bytes: usize,
    /// Bytes of wire overhead per frame: preamble+SFD 8, FCS 4, inter-frame gap 12 (default 24).
    pub overhead_bytes: u64,
    /// Frames shorter than this (without FCS) are padded to it for timing (default 60 bytes, the
    /// 64-byte Ethernet minimum with FCS).
    pub min_frame_bytes: u64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self { rate_gbps: 100, latency_ns: 500, tx_fifo_bytes: 16 * 1024, overhead_bytes: 24, min_frame_bytes: 60 }
    }
}

/// Seeded, deterministic fault injection on every link. Probabilities are per frame, in 0.0–1.0;
/// all zero (the default) means a perfect wire.
///
/// Drop, corrupt (one bit flipped, delivered with `tuser` = bad FCS, as a MAC would flag it),
/// duplicate and reorder (a frame takes a slower path and arrives up to `reorder_delay_ns`
/// late, so the frames behind it overtake it, as on a multipath fabric).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Seed of the fault RNG (ChaCha8; each link derives its own stream from it).
    pub seed: u64,
    /// Probability that a frame is lost on the wire (it still occupies wire time).
    pub drop_probability: f64,
    /// Probability that one bit of a frame is flipped; the receiving MAC then flags it bad.
    pub corrupt_probability: f64,
    /// Probability that a frame is delivered twice (the copy follows it on the wire).
    pub duplicate_probability: f64,
    /// Probability that a frame is delayed by 1..=`reorder_delay_ns` extra ns (uniform), so
    /// later frames arrive before it.
    pub reorder_probability: f64,
    /// Longest extra delay of a reordered frame, in ns (default 1000: about three frames of
    /// 4 KiB, or forty of 256 bytes, at 100 Gb/s). Must be at least 1 when reordering is on.
    pub reorder_delay_ns: u64,
    /// Scripted losses: `(nic, n)` drops the `n`-th frame (0-based) that NIC `nic` transmits,
    /// whatever the probabilities say, counting every frame but ARP (so the count does not
    /// depend on whether address resolution ran first). For tests that need one exact loss.
    pub drop_frames: Vec<(usize, u64)>,
    /// Scripted losses by content: `(nic, offset, bytes)` drops the first frame NIC `nic`
    /// transmits whose bytes from `offset` equal `bytes` (e.g. a CM MAD by its attribute ID),
    /// whatever the order in which the NIC sends its QPs' frames. For tests that must lose one
    /// particular message.
    pub drop_first_matching: Vec<(usize, usize, Vec<u8>)>,
}

impl Default for FaultConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            drop_probability: 0.0,
            corrupt_probability: 0.0,
            duplicate_probability: 0.0,
            reorder_probability: 0.0,
            reorder_delay_ns: 1000,
            drop_frames: Vec::new(),
            drop_first_matching: Vec::new(),
        }
    }
}

impl FaultConfig {
    /// True when no fault can happen.
    pub fn is_none(&self) -> bool {
        !(self.drop_probability > 0.0
            || self.corrupt_probability > 0.0
            || self.duplicate_probability > 0.0
            || self.reorder_probability > 0.0
            || !self.drop_frames.is_empty()
            || !self.drop_first_matching.is_empty())
    }
}
