//! The NIC's PCI configuration space (the 256-byte type-0 header and capabilities; VFIO config
//! region 7), as a vfio-user client reads and writes it. PCI Local Bus Specification 3.0 §6.1–6.2
//! (header), §6.8.2 (MSI-X capability); layout values in [`rnic::pci`].
//!
//! | offset | field | value / behaviour |
//! |---|---|---|
//! | 0x00 | vendor, device ID | [`pci::VENDOR_ID`], [`pci::DEVICE_ID`] (read-only) |
//! | 0x04 | command | writable: memory space (bit 1), bus master (bit 2), INTx disable (bit 10) |
//! | 0x06 | status | capability list (bit 4) |
//! | 0x08 | revision, class | [`pci::REVISION_ID`], [`pci::CLASS_CODE`] (Ethernet) |
//! | 0x0E | header type | 0 (type 0, single function) |
//! | 0x10 | BAR0 | 64 KiB, 32-bit memory, non-prefetchable: the register map |
//! | 0x18 | BAR2 | 4 KiB, 32-bit memory: MSI-X table (0x000) and PBA (0x800) |
//! | 0x20 | BAR4 | 4 KiB, 32-bit memory: the simulator's clock page |
//! | 0x2C | subsystem vendor, ID | [`pci::SUBSYSTEM_VENDOR_ID`], [`pci::SUBSYSTEM_ID`] |
//! | 0x34 | capabilities pointer | 0x40 |
//! | 0x3C | interrupt line, pin | line writable, pin 1 (INTA#, never raised) |
//! | 0x40 | MSI-X capability | 32 vectors; enable (bit 15) and function mask (bit 14) writable |
//!
//! A BAR answers the sizing protocol: writing all ones reads back the size mask with the type
//! bits; its address bits are writable. Everything else is read-only, and reads past the
//! implemented registers return 0.
use rnic::pci;

/// Bytes of config space exposed (the conventional PCI header and capabilities).
pub const CONFIG_BYTES: usize = 256;

/// Command register: memory space enable.
pub const CMD_MEMORY: u16 = 1 << 1;
/// Command register: bus master enable.
pub const CMD_BUS_MASTER: u16 = 1 << 2;
/// Command register: INTx disable.
pub const CMD_INTX_DISABLE: u16 = 1 << 10;
/// MSI-X message control: MSI-X enable.
pub const MSIX_ENABLE: u16 = 1 << 15;
/// MSI-X message control: function mask.
pub const MSIX_FUNCTION_MASK: u16 = 1 << 14;

const BAR_SIZES: [(usize, u64); 3] =
    [(0x10, pci::REGS_BAR_BYTES), (0x18, pci::MSIX_BAR_BYTES), (0x20, pci::CLOCK_BAR_BYTES)];

/// The config space of one NIC.
#[derive(Clone, Debug)]
pub struct ConfigSpace {
    bytes: [u8; CONFIG_BYTES],
}

impl Default for ConfigSpace {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigSpace {
    /// The config space after reset.
    pub fn new() -> Self {
        let mut b = [0u8; CONFIG_BYTES];
        b[0x00..0x02].copy_from_slice(&pci::VENDOR_ID.to_le_bytes());
        b[0x02..0x04].copy_from_slice(&pci::DEVICE_ID.to_le_bytes());
        b[0x06..0x08].copy_from_slice(&0x0010u16.to_le_bytes()); // capability list
        b[0x08] = pci::REVISION_ID;
        b[0x09..0x0C].copy_from_slice(&pci::CLASS_CODE.to_le_bytes()[..3]);
        b[0x2C..0x2E].copy_from_slice(&pci::SUBSYSTEM_VENDOR_ID.to_le_bytes());
        b[0x2E..0x30].copy_from_slice(&pci::SUBSYSTEM_ID.to_le_bytes());
        b[0x34] = pci::MSIX_CAP_OFFSET;
        b[0x3D] = 1; // INTA#
        let c = pci::MSIX_CAP_OFFSET as usize;
        b[c] = 0x11; // MSI-X capability ID
        b[c + 1] = 0; // end of the list
        b[c + 2..c + 4].copy_from_slice(&(pci::MSIX_VECTORS - 1).to_le_bytes());
        b[c + 4..c + 8].copy_from_slice(&pci::MSIX_BAR.to_le_bytes()); // table at offset 0
        b[c + 8..c + 12].copy_from_slice(&(pci::MSIX_PBA_OFFSET | pci::MSIX_BAR).to_le_bytes());
        Self { bytes: b }
    }

    /// Reads `out.len()` bytes at `offset` (any size and alignment; past the end reads 0).
    pub fn read(&self, offset: u64, out: &mut [u8]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = usize::try_from(offset)
                .ok()
                .and_then(|off| off.checked_add(i))
                .and_then(|a| self.bytes.get(a))
                .copied()
                .unwrap_or(0);
        }
    }

    /// Writes `data` at `offset`; only writable bits change (see the module table).
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        for (i, &v) in data.iter().enumerate() {
            let Some(a) = usize::try_from(offset).ok().and_then(|off| off.checked_add(i)) else { return };
            self.write_byte(a, v);
        }
    }

    fn write_byte(&mut self, a: usize, v: u8) {
        let msix_ctrl_hi = pci::MSIX_CAP_OFFSET as usize + 3;
        let mask: u8 = match a {
            0x04 => (CMD_MEMORY | CMD_BUS_MASTER) as u8,
            0x05 => (CMD_INTX_DISABLE >> 8) as u8,
            0x3C => 0xFF,
            _ if a == msix_ctrl_hi => ((MSIX_ENABLE | MSIX_FUNCTION_MASK) >> 8) as u8,
            _ => {
                if let Some(&(bar, size)) = BAR_SIZES.iter().find(|(bar, _)| (*bar..*bar + 4).contains(&a)) {
                    // Address bits above the size are writable; the low bits read as the type (0:
                    // 32-bit memory, non-prefetchable).
                    let writable = !(size as u32 - 1);
                    let shift = (a - bar) * 8;
                    (writable >> shift) as u8
                } else {
                    0
                }
            }
        };
        let old = self.bytes[a];
        self.bytes[a] = (old & !mask) | (v & mask);
    }

    /// The command register.
    pub fn command(&self) -> u16 {
        u16::from_le_bytes([self.bytes[4], self.bytes[5]])
    }

    /// The MSI-X message control register.
    pub fn msix_control(&self) -> u16 {
        let c = pci::MSIX_CAP_OFFSET as usize + 2;
        u16::from_le_bytes([self.bytes[c], self.bytes[c + 1]])
    }

    /// MSI-X enable bit.
    pub fn msix_enabled(&self) -> bool {
        self.msix_control() & MSIX_ENABLE != 0
    }

    /// MSI-X function mask bit.
    pub fn msix_function_masked(&self) -> bool {
        self.msix_control() & MSIX_FUNCTION_MASK != 0
    }

    /// Function-level reset: back to the state of [`new`](Self::new), BAR addresses included.
    pub fn reset(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(c: &ConfigSpace, off: u64) -> u16 {
        let mut b = [0; 2];
        c.read(off, &mut b);
        u16::from_le_bytes(b)
    }

    fn u32_at(c: &ConfigSpace, off: u64) -> u32 {
        let mut b = [0; 4];
        c.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    #[test]
    fn identity_class_and_capability_list() {
        let c = ConfigSpace::new();
        assert_eq!(u16_at(&c, 0), 0x10EE);
        assert_eq!(u16_at(&c, 2), 0x524E);
        assert_eq!(u32_at(&c, 8) >> 8, 0x02_0000, "class code: Ethernet controller");
        assert_eq!(c.bytes[0x0E], 0, "type-0 header");
        assert_ne!(u16_at(&c, 6) & 0x10, 0, "status says a capability list follows");
        let cap = c.bytes[0x34] as u64;
        assert_eq!(c.bytes[cap as usize], 0x11, "first capability is MSI-X");
        assert_eq!(c.bytes[cap as usize + 1], 0, "and the last");
        assert_eq!(u16_at(&c, cap + 2) & 0x7FF, 31, "table size N-1 = 31");
        assert_eq!(u32_at(&c, cap + 4), 2, "table at BAR2 offset 0");
        assert_eq!(u32_at(&c, cap + 8), 0x800 | 2, "PBA at BAR2 offset 0x800");
        // Unaligned and out-of-range reads.
        let mut b = [0xAA; 3];
        c.read(1, &mut b);
        assert_eq!(b, [0x10, 0x4E, 0x52]);
        let mut b = [0xAA; 4];
        c.read(254, &mut b);
        assert_eq!(b, [0, 0, 0, 0]);
    }

    #[test]
    fn bars_answer_the_sizing_protocol() {
        let mut c = ConfigSpace::new();
        for (off, size) in [(0x10u64, 65536u32), (0x18, 4096), (0x20, 4096)] {
            c.write(off, &u32::MAX.to_le_bytes());
            assert_eq!(u32_at(&c, off), !(size - 1), "BAR at {off:#x}: size mask, 32-bit memory");
            c.write(off, &0xFEDC_BA98u32.to_le_bytes());
            assert_eq!(u32_at(&c, off), 0xFEDC_BA98 & !(size - 1));
        }
        // Unimplemented BARs stay 0.
        for off in [0x14u64, 0x1C, 0x24] {
            c.write(off, &u32::MAX.to_le_bytes());
            assert_eq!(u32_at(&c, off), 0, "BAR at {off:#x} is not implemented");
        }
    }

    #[test]
    fn only_writable_bits_change() {
        let mut c = ConfigSpace::new();
        c.write(0, &[0xFF; 4]);
        assert_eq!(u16_at(&c, 0), 0x10EE, "IDs are read-only");
        c.write(4, &0xFFFFu16.to_le_bytes());
        assert_eq!(c.command(), CMD_MEMORY | CMD_BUS_MASTER | CMD_INTX_DISABLE);
        c.write(8, &[0; 4]);
        assert_eq!(u32_at(&c, 8) >> 8, 0x02_0000, "class is read-only");
        c.write(0x42, &0xFFFFu16.to_le_bytes());
        assert_eq!(c.msix_control(), MSIX_ENABLE | MSIX_FUNCTION_MASK | 31, "table size is read-only");
        assert!(c.msix_enabled() && c.msix_function_masked());
        c.write(0x3C, &[0x0B, 0x07]);
        assert_eq!(c.bytes[0x3C], 0x0B, "interrupt line is writable");
        assert_eq!(c.bytes[0x3D], 1, "interrupt pin is not");
        c.reset();
        assert_eq!(c.command(), 0);
        assert!(!c.msix_enabled());
    }
}
