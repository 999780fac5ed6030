//! The NIC as a PCI function: identity, BARs, MSI-X layout and the simulator's clock page, shared
//! by the device side (`rnic sim serve`, crate `rnic-vfio-server`) and the driver's VFIO and
//! vfio-user backends. See docs/pcie.md.
//!
//! The IDs are those of the Xilinx/AMD PCIe IP the U250 board top instantiates (vendor 0x10EE)
//! with a device ID of our choosing, until the project has IDs of its own.

/// PCI vendor ID (Xilinx/AMD, the FPGA's PCIe IP).
pub const VENDOR_ID: u16 = 0x10EE;
/// PCI device ID ("RN").
pub const DEVICE_ID: u16 = 0x524E;
/// Subsystem vendor ID.
pub const SUBSYSTEM_VENDOR_ID: u16 = 0x10EE;
/// Subsystem ID.
pub const SUBSYSTEM_ID: u16 = 0x0001;
/// Revision ID.
pub const REVISION_ID: u8 = 0x01;
/// Class code: network controller (0x02), Ethernet (0x00), programming interface 0x00, as
/// RoCE NICs report it.
pub const CLASS_CODE: u32 = 0x02_0000;

/// BAR of the register map ([`rnic_contract::regs`]), 32-bit non-prefetchable memory.
pub const REGS_BAR: u32 = 0;
/// Size of the register BAR in bytes (2^[`rnic_contract::regs::ADDR_BITS`] = 64 KiB).
pub const REGS_BAR_BYTES: u64 = 1 << rnic_contract::regs::ADDR_BITS;
/// BAR that holds the MSI-X table (at offset 0) and the PBA (at [`MSIX_PBA_OFFSET`]).
pub const MSIX_BAR: u32 = 2;
/// Size of the MSI-X BAR in bytes.
pub const MSIX_BAR_BYTES: u64 = 4096;
/// MSI-X vectors (the NIC's `irq_vector` output is 5 bits wide).
pub const MSIX_VECTORS: u16 = rnic_contract::regs::IRQ_VECTORS as u16;
/// Offset of the PBA in the MSI-X BAR.
pub const MSIX_PBA_OFFSET: u32 = 0x800;
/// Config-space offset of the MSI-X capability.
pub const MSIX_CAP_OFFSET: u8 = 0x40;

/// BAR of the simulator's clock page: only a simulated NIC has it (a board does not). The page
/// is shared memory (mmap-able over vfio-user) that the simulator updates as it runs.
pub const CLOCK_BAR: u32 = 4;
/// Size of the clock BAR in bytes.
pub const CLOCK_BAR_BYTES: u64 = 4096;
/// Offset in the clock page of the simulated world's cycle count (u64, little-endian, written
/// atomically; NIC core clock cycles).
pub const CLOCK_CYCLES: usize = 0;
/// Offset in the clock page of [`CLOCK_MAGIC_VALUE`] (u64).
pub const CLOCK_MAGIC: usize = 8;
/// "RNICSIMC": marks a live clock page.
pub const CLOCK_MAGIC_VALUE: u64 = u64::from_le_bytes(*b"RNICSIMC");
