//! rust-hdl blocks around the generated CRC-32 cores (see [`super::verilog`]).
//!
//! Each block is a `Verilog::Wrapper` whose `code` instantiates the cores and whose `cores` is
//! empty: the modules themselves come once from [`super::verilog::cores`], written into a separate
//! file. (rust-hdl emits a wrapper's `cores` text once per *instance*, so two instances would
//! declare the same module twice.) Each block also carries a simulation model built on
//! [`super::reference`], so rust-hdl's own simulator can run designs that contain it.
use super::reference;
use rust_hdl::prelude::*;

/// Reads a 512-bit beat as 64 bytes (byte `k` = bits `8k+7..8k`).
fn beat_bytes(data: &Bits<512>) -> [u8; 64] {
    let mut out = [0u8; 64];
    for w in 0..8 {
        let word = data.get_bits::<64>(64 * w).to_u64();
        out[8 * w..8 * w + 8].copy_from_slice(&word.to_le_bytes());
    }
    out
}

/// One 64-byte beat of CRC-32: `state_out = step(state_in, data)`, combinational (0 cycles).
///
/// Ports: `state_in: Bits<32>` (the raw CRC register, see [`reference::step`]), `data:
/// Bits<512>` (byte `k` of the beat in bits `8k+7..8k`, byte 0 first on the wire), `state_out:
/// Bits<32>`. Start a frame with `0xFFFF_FFFF` (or [`init_skipping`]), feed `state_out` back
/// through a register, and complement the final register to get the zlib/Ethernet CRC.
///
/// Logic: 32 parities of ≤ 544 inputs; yosys `abc -lut 6` maps it to ~1920 LUT6 in 4 levels.
#[derive(LogicBlock, Default)]
pub struct Crc32D512 {
    pub state_in: Signal<In, Bits<32>>,
    pub data: Signal<In, Bits<512>>,
    pub state_out: Signal<Out, Bits<32>>,
}

impl Logic for Crc32D512 {
    fn update(&mut self) {
        let s = reference::step(self.state_in.val().to_u32(), &beat_bytes(&self.data.val()));
        self.state_out.next = Bits::<32>::from(u64::from(s));
    }

    fn connect(&mut self) {
        self.state_out.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    rnic_crc32_d512 core(.state_in(state_in), .data(data), .state_out(state_out));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// Undoes `zeros` (0..=63) trailing zero bytes: `state_out = unzero(state_in, zeros)`,
/// combinational (0 cycles), a chain of the six `rnic_crc32_unzero_k{K}` stages with `enable =
/// zeros[K]`.
///
/// Use: for a last beat with `n` valid bytes, zero bytes `n..64`, run [`Crc32D512`] on the whole
/// beat, then feed its `state_out` here with `zeros = 64 - n` (for `n = 64`, `zeros = 0`).
///
/// Logic: six 32×32 GF(2) matrices in series, each output bit a parity of ≤ 32 bits behind a
/// 2:1 mux: yosys `abc -lut 6` gives 731 LUT6 but 13 levels, too deep for one 250 MHz cycle.
/// Prefer [`Crc32UnzeroTable`] (same ports and function, 4 levels), or register between stages.
#[derive(LogicBlock, Default)]
pub struct Crc32Unzero {
    pub state_in: Signal<In, Bits<32>>,
    pub zeros: Signal<In, Bits<6>>,
    pub state_out: Signal<Out, Bits<32>>,
}

impl Logic for Crc32Unzero {
    fn update(&mut self) {
        let s = reference::unzero(self.state_in.val().to_u32(), self.zeros.val().index());
        self.state_out.next = Bits::<32>::from(u64::from(s));
    }

    fn connect(&mut self) {
        self.state_out.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    wire [31:0] s1, s2, s3, s4, s5;
    rnic_crc32_unzero_k0 stage0(.state_in(state_in), .enable(zeros[0]), .state_out(s1));
    rnic_crc32_unzero_k1 stage1(.state_in(s1), .enable(zeros[1]), .state_out(s2));
    rnic_crc32_unzero_k2 stage2(.state_in(s2), .enable(zeros[2]), .state_out(s3));
    rnic_crc32_unzero_k3 stage3(.state_in(s3), .enable(zeros[3]), .state_out(s4));
    rnic_crc32_unzero_k4 stage4(.state_in(s4), .enable(zeros[4]), .state_out(s5));
    rnic_crc32_unzero_k5 stage5(.state_in(s5), .enable(zeros[5]), .state_out(state_out));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// Same ports and function as [`Crc32Unzero`] (`state_out = unzero(state_in, zeros)`,
/// combinational, 0 cycles), built as one `rnic_crc32_unzero` module: a 64-entry table picks the
/// 32×32 matrix for `zeros`, and each output bit is the parity of `state_in` under its row.
///
/// Logic: yosys `abc -lut 6` gives ~1160 LUT6 in 4 levels (each mask bit is a 6-input function
/// of `zeros`, then a 32-term AND-parity), against 731 LUT6 in 13 levels for the chain: the one
/// to use at 250 MHz.
#[derive(LogicBlock, Default)]
pub struct Crc32UnzeroTable {
    pub state_in: Signal<In, Bits<32>>,
    pub zeros: Signal<In, Bits<6>>,
    pub state_out: Signal<Out, Bits<32>>,
}

impl Logic for Crc32UnzeroTable {
    fn update(&mut self) {
        let s = reference::unzero(self.state_in.val().to_u32(), self.zeros.val().index());
        self.state_out.next = Bits::<32>::from(u64::from(s));
    }

    fn connect(&mut self) {
        self.state_out.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    rnic_crc32_unzero core(.state_in(state_in), .zeros(zeros), .state_out(state_out));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// The register a zero-padded last beat must leave for the frame to be intact:
/// `state_out = step(residue(), [0; zeros])`, combinational (0 cycles), a 64-entry table of
/// constants (`rnic_crc32_residue_zeros`, one LUT6 per output bit).
///
/// Use (the receiver's check without un-zeroing): after the last beat with `n` valid bytes,
/// zero-padded and run through [`Crc32D512`], the frame is intact iff the register equals this
/// block's output for `zeros = 64 - n` (0 for `n = 64`). That is the same test as
/// `Crc32UnzeroTable(register, zeros) == residue()`, because un-zeroing is the inverse of
/// appending zeros; the table depends only on `zeros`, so it can be looked up (and registered)
/// while the CRC is still being computed, and the check is one 32-bit compare.
#[derive(LogicBlock, Default)]
pub struct Crc32ResidueZeros {
    pub zeros: Signal<In, Bits<6>>,
    pub state_out: Signal<Out, Bits<32>>,
}

impl Logic for Crc32ResidueZeros {
    fn update(&mut self) {
        let s = reference::zeros(reference::residue(), self.zeros.val().index());
        self.state_out.next = Bits::<32>::from(u64::from(s));
    }

    fn connect(&mut self) {
        self.state_out.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    rnic_crc32_residue_zeros core(.zeros(zeros), .state_out(state_out));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// The register to start a frame's CRC with when its first `n_leading` bytes are zeroed by the
/// hardware and must not count: `init_skipping(n) = unzero(0xFFFF_FFFF, n)`.
///
/// After those `n` zero bytes the register is exactly `0xFFFF_FFFF`, as if the CRC started at
/// byte `n`: `step(init_skipping(n), [0; n] ++ rest) == step(0xFFFF_FFFF, rest)`. Example: the
/// ICRC starts after the 14-byte Ethernet header; zero bytes 0..14 of the first beat and start
/// [`Crc32D512`] with `init_skipping(14)` (a constant). The ICRC's *masked* fields (TTL, TOS, UDP
/// checksum, …) are different: they are replaced by ones and do count.
#[must_use]
pub fn init_skipping(n_leading: usize) -> u32 {
    reference::init_skipping(n_leading)
}
