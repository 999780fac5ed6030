//! The error type of the simulator.
use std::path::PathBuf;

/// Everything that can go wrong in the simulator. No operation panics on bad input; it returns
/// one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The C++ shim's port structs disagree with the Rust ones (stale build).
    #[error("simulator ABI mismatch: {0}")]
    Abi(String),
    /// The C++ model could not be constructed.
    #[error("cannot construct the verilated NIC model")]
    ModelCreate,
    /// A NIC index outside `0..n`.
    #[error("no NIC {index} (the world has {count})")]
    NoSuchNic {
        /// The index asked for.
        index: usize,
        /// Number of NICs in the world.
        count: usize,
    },
    /// An MMIO did not complete within the allowed number of cycles.
    #[error("MMIO {kind} at BAR0 offset {addr:#06x} on NIC {nic} not answered within {cycles} cycles")]
    MmioTimeout {
        /// NIC index.
        nic: usize,
        /// `"read"` or `"write"`.
        kind: &'static str,
        /// BAR0 byte offset.
        addr: u16,
        /// Cycles waited.
        cycles: u64,
    },
    /// An MMIO completed with a non-OKAY AXI response (2 = SLVERR, 3 = DECERR).
    #[error("MMIO {kind} at BAR0 offset {addr:#06x} on NIC {nic} answered with AXI response {resp}")]
    MmioResponse {
        /// NIC index.
        nic: usize,
        /// `"read"` or `"write"`.
        kind: &'static str,
        /// BAR0 byte offset.
        addr: u16,
        /// The AXI response code.
        resp: u8,
    },
    /// An MMIO was aborted because the NIC was reset while it was in progress.
    #[error("MMIO at BAR0 offset {addr:#06x} on NIC {nic} aborted by a reset")]
    MmioAborted {
        /// NIC index.
        nic: usize,
        /// BAR0 byte offset.
        addr: u16,
    },
    /// A `run_until` predicate did not become true within the allowed number of cycles.
    #[error("condition not reached within {cycles} cycles")]
    Timeout {
        /// Cycles run.
        cycles: u64,
    },
    /// A host-memory access outside every mapping (driver side, not DMA).
    #[error("host memory access at IOVA {iova:#x}, {len} bytes, is not inside one mapping")]
    Unmapped {
        /// IOVA of the access.
        iova: u64,
        /// Length of the access in bytes.
        len: usize,
    },
    /// An invalid argument (zero length, bad alignment, a fault probability outside 0–1, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The IOVA space has no room left for a mapping of `len` bytes (IOVAs are never reused,
    /// so a long run of maps and unmaps, or one huge mapping, can use it up).
    #[error("IOVA space exhausted: no room for a mapping of {len} bytes")]
    IovaExhausted {
        /// Bytes asked for.
        len: u64,
    },
    /// Waveforms need the `waveform` cargo feature.
    #[error("waveform dumps need rnic-sim built with the `waveform` feature")]
    WaveformDisabled,
    /// A pcap file could not be written.
    #[error("pcap {path}: {message}")]
    Pcap {
        /// The capture file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// An external port (SimBricks, bridge) failed: handshake, peer gone, transport error.
    #[error("port: {0}")]
    Port(String),
    /// Other I/O errors.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
