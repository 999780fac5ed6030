//! The board shell for an AMD Alveo U250: the NIC core between the PCIe bridge (BAR0 and DMA)
//! and the 100G MAC on QSFP0, with the clock-domain crossings written in rust-hdl.
//!
//! ```text
//!  PCIe x16 ─ xdma_0 (AXI bridge) ─┬─ m_axib (BAR0, 512-bit) ─ Bar0Bridge ─ s_axil ─┐
//!                                  └─ s_axib (DMA, 512-bit) ◄──────────── m_axi ──┤ NicTop
//!                                     axi_aclk 250 MHz = core clock                │ 250 MHz
//!  QSFP0 ─ cmac_usplus_0 ─ rx 322 MHz ─ MacRxCdc (drop whole frames) ─ s_axis_rx ─┤
//!                        ◄─ tx 322 MHz ─ MacTxCdc (store and forward) ◄ m_axis_tx ┘
//! ```
//!
//! [`generate`] writes the board's Verilog (top module `top`, the core inside it) and the
//! CRC cores file; `constraints/u250/` has the pins, clocks, CDC constraints and the Vivado
//! build script.
pub mod bar0;
pub mod cdc;
pub mod u250;
pub mod usr_irq;
pub mod vendor;

use std::path::{Path, PathBuf};

/// Writes the U250 board design into `dir`: `rnic_u250.v` (top module `top`) and the CRC cores.
///
/// # Errors
/// I/O errors creating the directory or writing the files.
pub fn generate(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    use rust_hdl::prelude::*;
    std::fs::create_dir_all(dir)?;
    let mut board = u250::U250Top::default();
    board.connect_all();
    let top_v = dir.join("rnic_u250.v");
    std::fs::write(&top_v, generate_verilog(&board))?;
    let crc_v = crate::crc::write_cores(dir)?;
    Ok(vec![top_v, crc_v])
}
