//! MSI-X of one NIC (PCI Local Bus Specification 3.0 §6.8.2): the table and PBA in BAR2, and the
//! client's eventfds from vfio-user `SET_IRQS` on the MSI-X index.
//!
//! - Table: [`rnic::pci::MSIX_VECTORS`] entries of 16 bytes at BAR2 offset 0 (message address
//!   low/high, data, vector control). Vector control bit 0 is the per-vector mask; it is set at
//!   reset, as the specification requires. PBA: one bit per vector at BAR2 offset 0x800,
//!   read-only.
//! - `SET_IRQS` with `DATA_EVENTFD | ACTION_TRIGGER` binds eventfds to vectors `start..start+count`
//!   and, as kernel VFIO does for a real function when it enables MSI-X, unmasks those vectors'
//!   table entries; a descriptor of -1 (no file) or `DATA_NONE` with count 0 unbinds and masks.
//!   `ACTION_MASK` / `ACTION_UNMASK` set and clear the same mask bits.
//! - A vector the NIC raises ([`Msix::raise`]) is delivered (8 bytes written to its eventfd) if
//!   it is bound, its mask bit is clear and the function is not masked (config space MSI-X
//!   control bit 14); if it is masked its PBA bit is set instead, and clearing the mask later
//!   delivers it once and clears the bit. A raised vector with no eventfd bound is dropped and
//!   counted.
use std::fs::File;
use std::io::Write;

use rnic::pci;

/// Bytes per MSI-X table entry.
pub const ENTRY_BYTES: u64 = 16;
/// Vector control: mask bit.
pub const VECTOR_MASKED: u32 = 1;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    addr_lo: u32,
    addr_hi: u32,
    data: u32,
    ctrl: u32,
}

/// MSI-X state of one NIC.
#[derive(Debug)]
pub struct Msix {
    table: Vec<Entry>,
    pba: u64,
    eventfds: Vec<Option<File>>,
    function_masked: bool,
    delivered: u64,
    dropped: u64,
}

impl Default for Msix {
    fn default() -> Self {
        Self::new()
    }
}

impl Msix {
    /// After reset: every vector masked, nothing pending, no eventfd bound.
    pub fn new() -> Self {
        let n = usize::from(pci::MSIX_VECTORS);
        Self {
            table: vec![Entry { ctrl: VECTOR_MASKED, ..Entry::default() }; n],
            pba: 0,
            eventfds: (0..n).map(|_| None).collect(),
            function_masked: false,
            delivered: 0,
            dropped: 0,
        }
    }

    /// Function-level reset of the table and PBA (eventfds stay bound: they belong to the
    /// client's `SET_IRQS`, which a device reset does not undo).
    pub fn reset(&mut self) {
        let fds = std::mem::take(&mut self.eventfds);
        *self = Self { eventfds: fds, ..Self::new() };
    }

    /// Messages written to an eventfd.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Raised vectors that had no eventfd (or a bad vector number).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The PBA bits (bit v = vector v pending).
    pub fn pending(&self) -> u64 {
        self.pba
    }

    /// True if vector `v`'s table mask bit is set.
    pub fn vector_masked(&self, v: u16) -> bool {
        self.table.get(usize::from(v)).is_none_or(|e| e.ctrl & VECTOR_MASKED != 0)
    }

    /// Sets the function mask (config space MSI-X message control bit 14); clearing it delivers
    /// what became pending meanwhile.
    pub fn set_function_mask(&mut self, masked: bool) {
        self.function_masked = masked;
        if !masked {
            self.flush_pending();
        }
    }

    /// The NIC raised vector `v`.
    pub fn raise(&mut self, v: u16) {
        let i = usize::from(v);
        if i >= self.table.len() {
            self.dropped += 1;
            return;
        }
        if self.function_masked || self.table[i].ctrl & VECTOR_MASKED != 0 {
            self.pba |= 1 << i;
            return;
        }
        self.deliver(i);
    }

    fn deliver(&mut self, i: usize) {
        match &mut self.eventfds[i] {
            Some(f) => {
                // An eventfd adds the 8-byte value to its counter; a full counter (EAGAIN) still
                // means the client has an event to read.
                let _ = f.write(&1u64.to_le_bytes());
                self.delivered += 1;
            }
            None => self.dropped += 1,
        }
    }

    fn flush_pending(&mut self) {
        if self.function_masked {
            return;
        }
        for i in 0..self.table.len() {
            if self.pba >> i & 1 == 1 && self.table[i].ctrl & VECTOR_MASKED == 0 {
                self.pba &= !(1 << i);
                self.deliver(i);
            }
        }
    }

    fn set_mask(&mut self, i: usize, masked: bool) {
        if masked {
            self.table[i].ctrl |= VECTOR_MASKED;
        } else {
            self.table[i].ctrl &= !VECTOR_MASKED;
            self.flush_pending();
        }
    }

    /// `SET_IRQS` on the MSI-X index: `flags` as in `struct vfio_irq_set`, vectors
    /// `start..start + count`, `fds` one per vector for `DATA_EVENTFD`.
    ///
    /// # Errors
    /// A message naming what is wrong: vectors out of range, the wrong number of descriptors, or
    /// an action this device does not implement.
    pub fn set_irqs(&mut self, flags: u32, start: u32, count: u32, fds: Vec<File>) -> Result<(), String> {
        use vfio_bindings::bindings::vfio::*;
        let n = self.table.len() as u64;
        let (s, c) = (u64::from(start), u64::from(count));
        if s + c > n {
            return Err(format!("MSI-X vectors {start}..{} requested, the device has {n}", s + c));
        }
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        let range = start as usize..(start + count) as usize;
        match (action, data) {
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD) => {
                if fds.len() != count as usize {
                    // The crate passes only the valid descriptors (-1 entries are not sent), so
                    // a shorter list unbinds the vectors it does not cover.
                    if fds.len() > count as usize {
                        return Err(format!("{} eventfds for {count} vectors", fds.len()));
                    }
                }
                let mut fds = fds.into_iter();
                for i in range {
                    match fds.next() {
                        Some(f) => {
                            self.eventfds[i] = Some(f);
                            self.set_mask(i, false);
                        }
                        None => {
                            self.eventfds[i] = None;
                            self.set_mask(i, true);
                        }
                    }
                }
                Ok(())
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) if count == 0 => {
                // Disable MSI-X: unbind and mask everything.
                for i in 0..self.table.len() {
                    self.eventfds[i] = None;
                    self.set_mask(i, true);
                }
                Ok(())
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) => {
                // Fire the vectors from the client (a loopback test).
                for i in range {
                    self.raise(i as u16);
                }
                Ok(())
            }
            (VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_DATA_NONE) => {
                range.for_each(|i| self.set_mask(i, true));
                Ok(())
            }
            (VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_NONE) => {
                range.for_each(|i| self.set_mask(i, false));
                Ok(())
            }
            _ => Err(format!("SET_IRQS flags {flags:#x} on MSI-X are not implemented")),
        }
    }

    /// A read of BAR2 (table or PBA) at `offset`; 4- and 8-byte aligned accesses, others read as
    /// zero (the specification allows only DWORD and QWORD accesses).
    pub fn read(&self, offset: u64, out: &mut [u8]) {
        out.fill(0);
        let pba = u64::from(pci::MSIX_PBA_OFFSET);
        for (k, chunk) in out.chunks_mut(4).enumerate() {
            let off = offset + 4 * k as u64;
            if chunk.len() != 4 || !off.is_multiple_of(4) {
                continue;
            }
            let v = if off < ENTRY_BYTES * self.table.len() as u64 {
                let e = &self.table[(off / ENTRY_BYTES) as usize];
                match off % ENTRY_BYTES {
                    0 => e.addr_lo,
                    4 => e.addr_hi,
                    8 => e.data,
                    _ => e.ctrl,
                }
            } else if off == pba {
                self.pba as u32
            } else if off == pba + 4 {
                (self.pba >> 32) as u32
            } else {
                0
            };
            chunk.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// A write of BAR2 at `offset`: table entries are writable (vector control: only the mask
    /// bit), the PBA is read-only.
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        for (k, chunk) in data.chunks(4).enumerate() {
            let off = offset + 4 * k as u64;
            if chunk.len() != 4 || !off.is_multiple_of(4) || off >= ENTRY_BYTES * self.table.len() as u64 {
                continue;
            }
            let v = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let i = (off / ENTRY_BYTES) as usize;
            match off % ENTRY_BYTES {
                0 => self.table[i].addr_lo = v & !3,
                4 => self.table[i].addr_hi = v,
                8 => self.table[i].data = v,
                _ => self.set_mask(i, v & VECTOR_MASKED != 0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use vfio_bindings::bindings::vfio::*;

    fn eventfd() -> File {
        // SAFETY: eventfd(2) returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor owned by nothing else.
        unsafe { File::from_raw_fd(fd) }
    }

    /// Events counted on an eventfd since the last call (0 if none).
    fn events(f: &File) -> u64 {
        let mut b = [0u8; 8];
        match (&*f).read(&mut b) {
            Ok(8) => u64::from_le_bytes(b),
            _ => 0,
        }
    }

    fn ctrl(m: &Msix, v: u64) -> u32 {
        let mut b = [0u8; 4];
        m.read(v * 16 + 12, &mut b);
        u32::from_le_bytes(b)
    }

    fn pba(m: &Msix) -> u64 {
        let mut b = [0u8; 8];
        m.read(0x800, &mut b);
        u64::from_le_bytes(b)
    }

    const TRIGGER_FDS: u32 = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;

    #[test]
    fn vectors_start_masked_and_set_irqs_binds_and_unmasks() {
        let mut m = Msix::new();
        assert!((0..32).all(|v| ctrl(&m, v) == VECTOR_MASKED), "every vector masked after reset");
        m.raise(3);
        assert_eq!(pba(&m), 1 << 3, "a masked vector goes pending");
        let (a, b) = (eventfd(), eventfd());
        m.set_irqs(TRIGGER_FDS, 3, 2, vec![a.try_clone().unwrap(), b.try_clone().unwrap()]).unwrap();
        assert_eq!(ctrl(&m, 3), 0);
        assert_eq!(ctrl(&m, 4), 0);
        assert_eq!(ctrl(&m, 5), VECTOR_MASKED);
        assert_eq!(events(&a), 1, "the pending vector is delivered when set_irqs unmasks it");
        assert_eq!(pba(&m), 0);
        m.raise(4);
        m.raise(4);
        assert_eq!((events(&a), events(&b)), (0, 2), "each vector reaches its own eventfd");
        assert_eq!(m.delivered(), 3);
    }

    #[test]
    fn per_vector_mask_in_the_table_holds_and_releases_one_message() {
        let mut m = Msix::new();
        let (a, b) = (eventfd(), eventfd());
        m.set_irqs(TRIGGER_FDS, 0, 2, vec![a.try_clone().unwrap(), b.try_clone().unwrap()]).unwrap();
        // Program vector 0's entry and mask it by writing its vector control.
        m.write(0, &0xFEE0_0000u32.to_le_bytes());
        m.write(8, &0x4021u32.to_le_bytes());
        m.write(12, &VECTOR_MASKED.to_le_bytes());
        let mut e = [0u8; 16];
        m.read(0, &mut e);
        assert_eq!(&e[..4], &0xFEE0_0000u32.to_le_bytes());
        assert_eq!(&e[8..12], &0x4021u32.to_le_bytes());
        m.raise(0);
        m.raise(0);
        m.raise(1);
        assert_eq!(events(&a), 0, "vector 0 is masked");
        assert_eq!(events(&b), 1, "vector 1 is not");
        assert_eq!(pba(&m), 1, "only vector 0 pending, once");
        m.write(0x800, &[0xFF; 8]);
        assert_eq!(pba(&m), 1, "the PBA is read-only");
        m.write(12, &0u32.to_le_bytes());
        assert_eq!(events(&a), 1, "unmasking delivers the pending message once");
        assert_eq!(pba(&m), 0);
        // The function mask holds every vector.
        m.set_function_mask(true);
        m.raise(1);
        assert_eq!(events(&b), 0);
        assert_eq!(pba(&m), 2);
        m.set_function_mask(false);
        assert_eq!(events(&b), 1);
        // SET_IRQS MASK / UNMASK act on the same bit.
        m.set_irqs(VFIO_IRQ_SET_ACTION_MASK | VFIO_IRQ_SET_DATA_NONE, 1, 1, vec![]).unwrap();
        assert_eq!(ctrl(&m, 1), VECTOR_MASKED);
        m.raise(1);
        m.set_irqs(VFIO_IRQ_SET_ACTION_UNMASK | VFIO_IRQ_SET_DATA_NONE, 1, 1, vec![]).unwrap();
        assert_eq!(events(&b), 1);
    }

    #[test]
    fn disabling_unbinds_and_bad_requests_are_refused() {
        let mut m = Msix::new();
        let a = eventfd();
        m.set_irqs(TRIGGER_FDS, 0, 1, vec![a.try_clone().unwrap()]).unwrap();
        m.set_irqs(VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE, 0, 0, vec![]).unwrap();
        m.raise(0);
        assert_eq!(events(&a), 0);
        assert_eq!(pba(&m), 1, "masked again after disable");
        assert!(m.set_irqs(TRIGGER_FDS, 30, 3, vec![]).unwrap_err().contains("32"));
        assert!(m.set_irqs(VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_BOOL, 0, 1, vec![]).is_err());
        m.raise(40);
        assert_eq!(m.dropped(), 1, "a vector the device does not have is dropped and counted");
        // Reset keeps the eventfds but masks and clears.
        m.set_irqs(TRIGGER_FDS, 0, 1, vec![a.try_clone().unwrap()]).unwrap();
        let _ = events(&a);
        m.reset();
        assert_eq!(ctrl(&m, 0), VECTOR_MASKED);
        assert_eq!(pba(&m), 0);
    }
}
