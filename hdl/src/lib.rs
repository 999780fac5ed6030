//! The rnic NIC as rust-hdl blocks, and the generator that writes its Verilog.
//!
//! One clock domain (250 MHz), 512-bit datapaths. The top level [`top::NicTop`] has the standard
//! edges: an AXI4-Lite slave for BAR0, an AXI4 master for DMA, and AXI4-Stream TX/RX to a MAC.
//! [`generate`] writes the Verilog of the top level and of the cores that are generated from Rust
//! code rather than expressed in rust-hdl (the CRC XOR trees).
#![allow(clippy::needless_range_loop)]

pub mod ack_coalescer;
pub mod ack_timer;
pub mod atomic_unit;
pub mod board;
pub mod bswap;
pub mod byte_counters;
pub mod context_tables;
pub mod counter_strobes;
pub mod cq_writer;
pub mod crc;
pub mod dma_read;
pub mod doorbell;
pub mod event_queue;
pub mod gearbox;
pub mod head_check;
pub mod header_builder;
pub mod icrc;
pub mod irq;
pub mod numbers;
pub mod qp_check_set;
pub mod raw_rx;
pub mod raw_tx;
pub mod read_responder;
pub mod records;
pub mod recv_prefetch;
pub mod regs;
pub mod reset_fifo;
pub mod resp_done;
pub mod response_gen;
pub mod rx_engine;
pub mod rx_ingress;
pub mod rx_writer;
pub mod scatter;
pub mod sent_psn;
pub mod top;
pub mod tx_arbiter;
pub mod tx_assembler;
pub mod tx_scheduler;
pub mod wqe_fetcher;

use std::path::{Path, PathBuf};

/// Name of the Verilog top module (rust-hdl always calls it `top`).
pub const TOP_MODULE: &str = "top";

/// The files [`generate`] wrote.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Verilog sources, in the order a tool should read them.
    pub sources: Vec<PathBuf>,
}

/// Writes the NIC's Verilog into `dir` (created if missing).
///
/// # Errors
/// I/O errors creating the directory or writing the files.
pub fn generate(dir: &Path) -> std::io::Result<Generated> {
    use rust_hdl::prelude::*;
    std::fs::create_dir_all(dir)?;
    let mut nic = top::NicTop::default();
    nic.connect_all();
    let top_v = dir.join("rnic_nic.v");
    std::fs::write(&top_v, generate_verilog(&nic))?;
    // The CRC cores are instantiated by wrapper blocks that do not carry them: written once.
    let crc_v = crc::write_cores(dir)?;
    Ok(Generated { sources: vec![top_v, crc_v] })
}
