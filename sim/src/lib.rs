//! Cycle-accurate simulation of the rnic NIC.
//!
//! The NIC's generated Verilog is compiled by Verilator (in `build.rs`) into a C++ model behind a
//! small C ABI ([`ffi`]). Around it, plain Rust models serve its ports: the host's DMA memory
//! ([`HostMemory`] through an AXI4 slave, [`axi_slave`]), BAR0 MMIO (an AXI4-Lite master,
//! [`mmio`]) and the MAC streams ([`stream`]). A [`World`] clocks N NICs together and carries
//! their frames over paced 100 Gb/s [`wire`]s, optionally into a pcap file.
//!
//! Time is counted in cycles of the 250 MHz core clock (4 ns). See docs/simulator.md.
//!
//! ```no_run
//! use rnic_sim::{SimConfig, World};
//! let mut world = World::new(2, SimConfig::default())?;
//! assert_eq!(world.mmio_read(0, 0x0000)?, 0x524E_4943);
//! let ring = world.memory_mut(0)?.alloc(4096, 4096)?; // a ring the NIC can DMA
//! world.memory_mut(0)?.write_u64(ring, 42)?;
//! world.step_n(1000);
//! assert_eq!(world.memory(0)?.read_u64(ring)?, 42);
//! println!("{:.2} M cycles/s", world.stats().cycles_per_second / 1e6);
//! # Ok::<(), rnic_sim::SimError>(())
//! ```
#![warn(missing_docs)]

pub mod axi_slave;
pub mod bridge;
pub mod config;
pub mod dma;
mod error;
pub mod ffi;
pub mod host_memory;
pub mod irq_events;
pub mod mmio;
pub mod nic;
pub mod pcap;
pub mod port;
pub mod profile;
pub mod simbricks;
pub mod stream;
pub mod wire;
pub mod world;

pub use axi_slave::DmaStats;
pub use bridge::{BridgeSpec, TapPort, TcpBridgeListener, TcpPort, UdpPort, BRIDGE_CONNECT_TIMEOUT};
pub use config::{EvalMode, FaultConfig, LinkConfig, SimConfig, CLOCK_MHZ, CYCLE_NS};
pub use dma::{DmaMemory, InterruptSink};
pub use error::SimError;
pub use host_memory::{HostMemory, Iova};
pub use irq_events::InterruptEvents;
pub use mmio::{MmioCompletion, MmioRequest, MmioStats, MmioTicket};
pub use nic::{Nic, NicCore, NicStats};
pub use port::{ExternalPort, PortFrame, PortOptions, PortReport, PortStats, PortTiming};
pub use profile::{StateCount, StateProfile};
pub use simbricks::{SimbricksListener, SimbricksParams, SimbricksPort, SyncMode};
pub use stream::{RxFrame, RxStats, TxFrame, TxStats};
pub use wire::{Link, LinkStats};
pub use world::{LinkReport, Topology, World, WorldStats};

/// How long building the model took, from `build.rs` (wall-clock seconds on the build machine).
///
/// `build.rs` skips verilating when the Verilog, flags and Verilator are unchanged since the last
/// build (and the runtime when Verilator and the tracing flag are unchanged); the seconds reported
/// are then those of the last real build, and the `*_cached` flags are set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildInfo {
    /// `rnic_hdl::generate` (Rust to Verilog).
    pub generate_seconds: f64,
    /// `verilator --cc --build`: Verilog to C++ and C++ compile of the model.
    pub verilate_seconds: f64,
    /// Compiling Verilator's runtime (verilated.o, ...).
    pub runtime_seconds: f64,
    /// Compiling the C ABI shim.
    pub shim_seconds: f64,
    /// All of the above.
    pub total_seconds: f64,
    /// The model was built with waveform (FST) support.
    pub waveform: bool,
    /// This build reused the previously verilated model.
    pub model_cached: bool,
    /// This build reused the previously compiled Verilator runtime.
    pub runtime_cached: bool,
}

const BUILD_STATS: &str = include_str!(concat!(env!("OUT_DIR"), "/build_stats.json"));

fn json_number(key: &str) -> f64 {
    let pat = format!("\"{key}\":");
    BUILD_STATS
        .find(&pat)
        .map(|p| &BUILD_STATS[p + pat.len()..])
        .and_then(|rest| rest.split([',', '\n', '}']).next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Timings of the build of this crate's model (see [`BuildInfo`]).
pub fn build_info() -> BuildInfo {
    BuildInfo {
        generate_seconds: json_number("generate_seconds"),
        verilate_seconds: json_number("verilate_seconds"),
        runtime_seconds: json_number("runtime_seconds"),
        shim_seconds: json_number("shim_seconds"),
        total_seconds: json_number("total_seconds"),
        waveform: BUILD_STATS.contains("\"waveform\": true"),
        model_cached: BUILD_STATS.contains("\"model_cached\": true"),
        runtime_cached: BUILD_STATS.contains("\"runtime_cached\": true"),
    }
}

/// Wall-clock seconds Verilator took to build the model (verilating, compiling the model and its
/// runtime), measured by `build.rs`.
pub fn verilator_build_seconds() -> f64 {
    let b = build_info();
    b.verilate_seconds + b.runtime_seconds
}

/// The build statistics as JSON, exactly as `build.rs` wrote them.
pub fn build_stats_json() -> &'static str {
    BUILD_STATS
}

/// True when the model was built with the `waveform` feature.
pub fn has_waveform_support() -> bool {
    ffi::has_waveform_support()
}
