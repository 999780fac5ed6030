//! The host's memory as the NIC sees it through the (simulated) IOMMU: a set of mappings at
//! IOVAs, each backed either by a buffer the driver owns ([`HostMemory::map_external`]) or by
//! memory the model owns ([`HostMemory::alloc`], for rings and other driver structures).
//!
//! IOVAs come from a bump allocator starting at [`IOVA_BASE`]: every mapping starts on a 4 KiB
//! page, is followed by at least one unmapped guard page, and no IOVA is reused within a run, so
//! runs are deterministic and a DMA that overruns a buffer hits unmapped space.
//!
//! Like an IOMMU, a mapping authorises whole pages: DMA may touch
//! `[iova, iova + round_up(len, 4 KiB))`. Owned allocations are backed for that whole range. For
//! an external buffer the bytes past `len` in its last page do not exist: DMA reads them as zero
//! and DMA writes to them are discarded and reported as errors (see [`crate::axi_slave`]).
use std::collections::BTreeMap;

use crate::config::PAGE_BYTES;
use crate::dma::DmaMemory;
use crate::SimError;

/// First IOVA handed out (4 GiB, so 32-bit truncation bugs in the NIC are visible).
pub const IOVA_BASE: u64 = 0x1_0000_0000;

/// An I/O virtual address: the address the NIC uses for DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Iova(pub u64);

impl Iova {
    /// The address as a number (what goes into WQEs and context registers).
    pub fn addr(self) -> u64 {
        self.0
    }

    /// This address plus `bytes` (wrapping is impossible in practice: the allocator stays far
    /// below 2^64).
    pub fn offset(self, bytes: u64) -> Iova {
        Iova(self.0.wrapping_add(bytes))
    }
}

impl std::fmt::Display for Iova {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

enum Backing {
    /// Model-owned memory, `round_up(len, page)` bytes.
    Owned(Vec<u8>),
    /// The driver's buffer: `len` bytes at `ptr` (see `map_external`'s safety contract).
    External { ptr: *mut u8 },
}

struct Region {
    /// Bytes of real memory (the mapped length).
    len: usize,
    /// Bytes of IOVA space the mapping authorises (`len` rounded up to a page).
    span: u64,
    backing: Backing,
}

/// A resolved access: which region, at which byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub base: u64,
    pub offset: u64,
}

/// Memory of one simulated host, addressed by IOVA.
pub struct HostMemory {
    regions: BTreeMap<u64, Region>,
    next: u64,
}

// SAFETY: the raw pointers are the driver's buffers mapped with `map_external`, whose contract
// gives the simulator exclusive use of them while the world steps; a world stepping its NICs on
// several threads (`SimConfig::threads`) touches each NIC's memory from one thread at a time,
// while the caller is blocked in the step.
unsafe impl Send for HostMemory {}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMemory")
            .field("mappings", &self.regions.len())
            .field("next_iova", &format_args!("{:#x}", self.next))
            .finish()
    }
}

impl Default for HostMemory {
    fn default() -> Self {
        Self::new()
    }
}

fn round_up(x: u64, to: u64) -> Option<u64> {
    x.checked_add(to - 1).map(|v| v / to * to)
}

impl HostMemory {
    /// An empty IOVA space.
    pub fn new() -> Self {
        Self { regions: BTreeMap::new(), next: IOVA_BASE }
    }

    /// Reserves IOVA space for `len` bytes aligned to `align` (a power of two; at least a page).
    fn reserve(&mut self, len: usize, align: u64) -> Result<(u64, u64), SimError> {
        if len == 0 {
            return Err(SimError::InvalidArgument("a mapping needs at least one byte".into()));
        }
        if !align.is_power_of_two() {
            return Err(SimError::InvalidArgument(format!("alignment {align} is not a power of two")));
        }
        let align = align.max(PAGE_BYTES);
        let exhausted = || SimError::IovaExhausted { len: len as u64 };
        let base = round_up(self.next, align).ok_or_else(exhausted)?;
        let span = round_up(len as u64, PAGE_BYTES).ok_or_else(exhausted)?;
        // One unmapped guard page after every mapping.
        let next = base.checked_add(span).and_then(|v| v.checked_add(PAGE_BYTES)).ok_or_else(exhausted)?;
        self.next = next;
        Ok((base, span))
    }

    /// Allocates `len` bytes of zeroed, model-owned memory at a new IOVA aligned to `align` bytes
    /// (a power of two; anything up to 4 KiB gives page alignment). For rings and other structures
    /// the driver shares with the NIC; access them with [`read`](Self::read) and
    /// [`write`](Self::write).
    ///
    /// # Errors
    /// [`SimError::InvalidArgument`] for `len == 0` or a bad alignment,
    /// [`SimError::IovaExhausted`] when the IOVA space has no room for `len` bytes.
    pub fn alloc(&mut self, len: usize, align: u64) -> Result<Iova, SimError> {
        let (base, span) = self.reserve(len, align)?;
        let bytes = usize::try_from(span).map_err(|_| SimError::IovaExhausted { len: len as u64 })?;
        self.regions.insert(base, Region { len: bytes, span, backing: Backing::Owned(vec![0; bytes]) });
        Ok(Iova(base))
    }

    /// Maps the driver's buffer `ptr[..len]` at a new page-aligned IOVA, so the NIC's DMA reads
    /// and writes it in place (a registered `Vec<u8>` really changes when the NIC writes).
    ///
    /// # Errors
    /// [`SimError::InvalidArgument`] for a null `ptr` or `len == 0`, [`SimError::IovaExhausted`]
    /// when the IOVA space has no room for `len` bytes.
    ///
    /// # Safety
    /// Until [`unmap`](Self::unmap) of the returned IOVA (or until this `HostMemory` is dropped),
    /// `ptr[..len]` must stay allocated, valid for reads and writes, and must not be accessed by
    /// anything else while the simulator runs (a `step` of the world or a `read`/`write` here):
    /// like real DMA, the NIC writes it behind the borrow checker's back, possibly from one of the
    /// world's worker threads (`SimConfig::threads`). Reading it between steps is fine.
    pub unsafe fn map_external(&mut self, ptr: *mut u8, len: usize) -> Result<Iova, SimError> {
        if ptr.is_null() {
            return Err(SimError::InvalidArgument("null buffer".into()));
        }
        let (base, span) = self.reserve(len, PAGE_BYTES)?;
        self.regions.insert(base, Region { len, span, backing: Backing::External { ptr } });
        Ok(Iova(base))
    }

    /// Removes the mapping that starts at `iova`. Owned memory is freed; an external buffer is
    /// released to its owner. Later DMA to it fails with DECERR. The IOVA is never reused.
    ///
    /// # Errors
    /// [`SimError::Unmapped`] if no mapping starts at `iova`.
    pub fn unmap(&mut self, iova: Iova) -> Result<(), SimError> {
        self.regions.remove(&iova.0).map(|_| ()).ok_or(SimError::Unmapped { iova: iova.0, len: 0 })
    }

    /// Number of live mappings.
    pub fn mapping_count(&self) -> usize {
        self.regions.len()
    }

    /// Length in bytes of the mapping that starts at `iova`, if any.
    pub fn mapping_len(&self, iova: Iova) -> Option<usize> {
        self.regions.get(&iova.0).map(|r| r.len)
    }

    /// Finds the mapping whose authorised span contains `[iova, iova + len)` entirely.
    pub(crate) fn resolve(&self, iova: u64, len: u64) -> Option<Resolved> {
        let (&base, region) = self.regions.range(..=iova).next_back()?;
        let offset = iova - base;
        let end = offset.checked_add(len)?;
        (end <= region.span).then_some(Resolved { base, offset })
    }

    /// Real memory bytes of the region at `base` (0 if it is gone).
    fn region_len(&self, base: u64) -> usize {
        self.regions.get(&base).map_or(0, |r| r.len)
    }

    /// Copies `out.len()` bytes at `iova` into `out` (driver access, e.g. polling a CQE).
    ///
    /// # Errors
    /// [`SimError::Unmapped`] unless the whole range lies in the real bytes of one mapping.
    pub fn read(&self, iova: Iova, out: &mut [u8]) -> Result<(), SimError> {
        let err = || SimError::Unmapped { iova: iova.0, len: out.len() };
        let r = self.resolve(iova.0, out.len() as u64).ok_or_else(err)?;
        if r.offset as usize + out.len() > self.region_len(r.base) {
            return Err(err());
        }
        self.copy_out(r, out);
        Ok(())
    }

    /// Copies `data` to `iova` (driver access, e.g. writing a WQE).
    ///
    /// # Errors
    /// [`SimError::Unmapped`] unless the whole range lies in the real bytes of one mapping.
    pub fn write(&mut self, iova: Iova, data: &[u8]) -> Result<(), SimError> {
        let err = || SimError::Unmapped { iova: iova.0, len: data.len() };
        let r = self.resolve(iova.0, data.len() as u64).ok_or_else(err)?;
        if r.offset as usize + data.len() > self.region_len(r.base) {
            return Err(err());
        }
        self.copy_in(r, data);
        Ok(())
    }

    /// Reads a little-endian `u32` at `iova`.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_u32(&self, iova: Iova) -> Result<u32, SimError> {
        let mut b = [0u8; 4];
        self.read(iova, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian `u64` at `iova`.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_u64(&self, iova: Iova) -> Result<u64, SimError> {
        let mut b = [0u8; 8];
        self.read(iova, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian `u32` at `iova`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn write_u32(&mut self, iova: Iova, v: u32) -> Result<(), SimError> {
        self.write(iova, &v.to_le_bytes())
    }

    /// Writes a little-endian `u64` at `iova`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn write_u64(&mut self, iova: Iova, v: u64) -> Result<(), SimError> {
        self.write(iova, &v.to_le_bytes())
    }

    /// DMA read of `out.len()` bytes at a resolved position; bytes past the region's real memory
    /// (the tail of an external buffer's last page) read as zero.
    pub(crate) fn read_resolved(&self, r: Resolved, out: &mut [u8]) {
        let real = self.region_len(r.base);
        let start = (r.offset as usize).min(real);
        let n = real.saturating_sub(start).min(out.len());
        self.copy_out(Resolved { base: r.base, offset: start as u64 }, &mut out[..n]);
        out[n..].fill(0);
    }

    /// DMA write of the bytes of `data` whose bit is set in `mask` (bit i = `data[i]`), at a
    /// resolved position. Returns false if a selected byte lies past the region's real memory
    /// (it is discarded); the others are written.
    pub(crate) fn write_resolved_masked(&mut self, r: Resolved, data: &[u8], mask: u64) -> bool {
        let real = self.region_len(r.base);
        let mut ok = true;
        let mut i = 0usize;
        // Write maximal runs of selected bytes with one copy each.
        while i < data.len() {
            if mask >> i & 1 == 0 {
                i += 1;
                continue;
            }
            let start = i;
            while i < data.len() && mask >> i & 1 == 1 {
                i += 1;
            }
            let off = r.offset as usize + start;
            let end = off + (i - start);
            let fit_end = end.min(real);
            if fit_end < end {
                ok = false;
            }
            if off < fit_end {
                self.copy_in(Resolved { base: r.base, offset: off as u64 }, &data[start..start + (fit_end - off)]);
            }
        }
        ok
    }

    /// Copies real bytes out of a region. The caller checked the range is inside `len`.
    fn copy_out(&self, r: Resolved, out: &mut [u8]) {
        let Some(region) = self.regions.get(&r.base) else {
            return out.fill(0);
        };
        let off = r.offset as usize;
        debug_assert!(off + out.len() <= region.len);
        match &region.backing {
            Backing::Owned(v) => out.copy_from_slice(&v[off..off + out.len()]),
            Backing::External { ptr } => {
                // SAFETY: `off + out.len() <= len` (checked by every caller) and `map_external`'s
                // contract keeps `ptr[..len]` valid and not concurrently accessed; `out` is a
                // distinct Rust slice, so the ranges do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(ptr.add(off), out.as_mut_ptr(), out.len()) }
            }
        }
    }

    /// Copies bytes into a region's real memory. The caller checked the range is inside `len`.
    fn copy_in(&mut self, r: Resolved, data: &[u8]) {
        let Some(region) = self.regions.get_mut(&r.base) else {
            return;
        };
        let off = r.offset as usize;
        debug_assert!(off + data.len() <= region.len);
        match &mut region.backing {
            Backing::Owned(v) => v[off..off + data.len()].copy_from_slice(data),
            Backing::External { ptr } => {
                // SAFETY: as in `copy_out`: in bounds of the live, unaliased external buffer;
                // `data` is a separate Rust slice.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.add(off), data.len()) }
            }
        }
    }
}

impl DmaMemory for HostMemory {
    fn is_mapped(&self, iova: u64, len: u64) -> bool {
        self.resolve(iova, len).is_some()
    }

    fn dma_read(&self, iova: u64, out: &mut [u8]) -> bool {
        match self.resolve(iova, out.len() as u64) {
            Some(r) => {
                self.read_resolved(r, out);
                true
            }
            None => false,
        }
    }

    fn dma_write_masked(&mut self, iova: u64, data: &[u8], mask: u64) -> bool {
        match self.resolve(iova, data.len() as u64) {
            Some(r) => self.write_resolved_masked(r, data, mask),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_allocator_is_page_aligned_with_guard_pages() {
        let mut m = HostMemory::new();
        let a = m.alloc(100, 64).unwrap();
        let b = m.alloc(4096, 1).unwrap();
        let c = m.alloc(10, 65536).unwrap();
        assert_eq!(a, Iova(IOVA_BASE));
        assert_eq!(b, Iova(IOVA_BASE + 2 * 4096));
        assert_eq!(c.0 % 65536, 0);
        assert!(m.resolve(IOVA_BASE + 4096, 1).is_none(), "guard page must be unmapped");
        assert!(m.alloc(0, 8).is_err());
        assert!(m.alloc(8, 3).is_err());
    }

    #[test]
    fn read_write_bounds() {
        let mut m = HostMemory::new();
        let a = m.alloc(64, 64).unwrap();
        m.write_u64(a.offset(8), 0x1122_3344_5566_7788).unwrap();
        assert_eq!(m.read_u64(a.offset(8)).unwrap(), 0x1122_3344_5566_7788);
        assert_eq!(m.read_u32(a.offset(12)).unwrap(), 0x1122_3344);
        // Owned memory is backed for the whole page.
        assert!(m.write(a.offset(4090), &[1; 6]).is_ok());
        assert!(m.write(a.offset(4090), &[1; 7]).is_err());
        assert!(m.read(Iova(5), &mut [0; 1]).is_err());
        m.unmap(a).unwrap();
        assert!(m.read(a, &mut [0; 1]).is_err());
        assert!(m.unmap(a).is_err());
    }

    #[test]
    fn external_buffer_is_changed_in_place() {
        let mut buf = vec![0u8; 100];
        let mut m = HostMemory::new();
        // SAFETY: `buf` outlives the mapping (unmapped below) and is not touched meanwhile.
        let iova = unsafe { m.map_external(buf.as_mut_ptr(), buf.len()) }.unwrap();
        m.write(iova.offset(10), b"hello").unwrap();
        // Past the buffer's end (inside its page): rejected for the driver.
        assert!(m.write(iova.offset(98), &[0; 3]).is_err());
        let r = m.resolve(iova.0 + 96, 8).unwrap();
        assert!(!m.write_resolved_masked(r, &[7; 8], 0xFF), "bytes past the buffer must be reported");
        let mut tail = [9u8; 8];
        m.read_resolved(r, &mut tail);
        assert_eq!(tail, [7, 7, 7, 7, 0, 0, 0, 0]);
        m.unmap(iova).unwrap();
        assert_eq!(&buf[10..15], b"hello");
        assert_eq!(&buf[96..100], &[7, 7, 7, 7]);
    }
}
