//! RoCEv2 ICRC datapath: CRC-32 over a 512-bit AXI4-Stream, one beat per clock.
//!
//! The CRC is IEEE 802.3's CRC-32 as used by zlib and the Ethernet FCS: reflected polynomial
//! 0xEDB88320 (0x04C11DB7 bit-reversed), register initialised to all ones, final complement.
//! RoCEv2's ICRC (IBTA Annex A17) is that CRC over the invariant fields, see the ICRC section of
//! the project's PROTOCOL notes.
//!
//! # Register convention
//! Everything here works on the *raw* register: no init, no final inversion, bit 0 of each byte
//! first. zlib's `crc32(d) == !step(0xFFFF_FFFF, d)`; the ICRC on the wire is that value, least
//! significant byte first. See [`reference::step`].
//!
//! # Pieces
//! - [`reference`](mod@reference): the bit-exact software model (`step`, `unzero`, `init_skipping`) and GF(2)
//!   32×32 matrix helpers; the generator and the tests use it.
//! - [`verilog`]: generates the Verilog-2001 cores from the model. [`verilog::cores`] holds
//!   every module once and must be written once into its own file (see [`write_cores`]).
//! - [`blocks`]: rust-hdl blocks that instantiate the cores through `Verilog::Wrapper`, with
//!   empty `cores` text so that several instances never duplicate a module.
//!
//! # Shapes, latency and logic depth
//! All cores are combinational: latency 0 cycles, the caller places the registers.
//!
//! | block / module | ports | function | yosys `abc -lut 6` |
//! |---|---|---|---|
//! | [`blocks::Crc32D512`] / `rnic_crc32_d512` | `state_in[31:0]`, `data[511:0]` → `state_out[31:0]` | `step(state_in, 64 bytes)`, byte `k` = `data[8k+7:8k]` | 1926 LUT6, 4 levels |
//! | [`blocks::Crc32UnzeroTable`] / `rnic_crc32_unzero` | `state_in[31:0]`, `zeros[5:0]` → `state_out[31:0]` | `unzero(state_in, zeros)` | 1119 LUT6, 4 levels |
//! | [`blocks::Crc32Unzero`] / chain of `rnic_crc32_unzero_k0..k5` | same as above | same as above | 709 LUT6, 13 levels |
//! | `rnic_crc32_unzero_k{K}` | `state_in[31:0]`, `enable` → `state_out[31:0]` | `enable ? unzero(state_in, 1 << K) : state_in` | 43 (K=0) to 131 (K=5) LUT6, 2 levels each |
//! | [`blocks::Crc32ResidueZeros`] / `rnic_crc32_residue_zeros` | `zeros[5:0]` → `state_out[31:0]` | `step(residue(), [0; zeros])` (a table) | 32 LUT6, 1 level |
//!
//! Figures from yosys 0.23, `synth -flatten; abc -lut 6; opt_clean; ltp -noff` (the
//! `crc_yosys` test prints them). The 250 MHz budget is about 4–6 LUT6 levels per stage, so
//! `state_out` of [`blocks::Crc32D512`] can feed its own state register directly (the per-beat
//! loop) when its inputs come from registers (the NIC's users register the masked beat first),
//! and the last-beat correction should use [`blocks::Crc32UnzeroTable`] in the cycle after the
//! state register; the 13-level chain needs a register in the middle at that clock. A receiver
//! that only checks the ICRC needs no un-zeroing: see step 4 below.
//!
//! # Per-frame use
//! 1. Start with `0xFFFF_FFFF`, or with [`blocks::init_skipping`]`(n)` (a constant) when the
//!    first `n` bytes of the first beat are zeroed and must not count (e.g. the Ethernet header).
//! 2. Each full beat: `state <= Crc32D512(state, tdata)`.
//! 3. Last beat with `n` valid bytes: zero bytes `n..64`, `state <= Crc32D512(state, masked)`,
//!    then `Crc32UnzeroTable(state, zeros = 64 - n)` (0 when `n = 64`) is the true register;
//!    the ICRC is its complement.
//! 4. Checking a received frame (covered bytes and ICRC run through steps 1–3): it is intact iff
//!    the un-zeroed register equals [`reference::residue`], i.e. iff the register *before*
//!    un-zeroing equals [`blocks::Crc32ResidueZeros`]`(zeros)` — a constant per `zeros`,
//!    available before the CRC, so the check is one 32-bit compare.
pub mod blocks;
pub mod reference;
pub mod verilog;

use std::path::{Path, PathBuf};

/// File name [`write_cores`] uses for the CRC cores.
pub const CORES_FILE: &str = "rnic_crc_cores.v";

/// Writes [`verilog::cores`] into `dir/`[`CORES_FILE`] and returns its path. Call it once per
/// generated design, next to the rust-hdl output, and give both files to the tools.
///
/// # Errors
/// I/O errors writing the file.
pub fn write_cores(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join(CORES_FILE);
    std::fs::write(&path, verilog::cores())?;
    Ok(path)
}
