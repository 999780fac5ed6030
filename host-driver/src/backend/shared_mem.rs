//! DMA memory for the VFIO backends: each allocation is its own memfd, mmapped here and mapped
//! for the device at an IOVA (vfio-user: `DMA_MAP` with the memfd, so the simulator maps the same
//! pages; kernel VFIO: `VFIO_IOMMU_MAP_DMA` of the mapping's address).
//!
//! IOVAs come from a bump allocator starting at 4 GiB, every mapping page-aligned and followed by
//! an unmapped guard page, never reused within a run (as the in-process simulator's).
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;

use memmap2::{MmapOptions, MmapRaw};

use crate::device::Iova;
use crate::error::{Error, Result};

/// Page size of IOVA mappings.
pub(crate) const PAGE: u64 = 4096;
/// First IOVA handed out.
pub(crate) const IOVA_BASE: u64 = 0x1_0000_0000;
/// IOVAs stay below 2^39 (QEMU's intel-iommu default address width).
pub(crate) const IOVA_LIMIT: u64 = 1 << 39;

/// `len` bytes (rounded up to pages) of zeroed, fd-backed, shared memory.
pub(crate) struct SharedMem {
    pub file: File,
    pub map: MmapRaw,
}

impl SharedMem {
    pub fn new(len: u64, name: &str) -> io::Result<Self> {
        let name = std::ffi::CString::new(name).map_err(io::Error::other)?;
        // SAFETY: memfd_create with a valid C string; the result is checked.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len)?;
        let map = MmapOptions::new().len(len as usize).map_raw(&file)?;
        Ok(Self { file, map })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }
}

/// One allocation or mapped user buffer.
pub(crate) struct Alloc {
    pub mem: SharedMem,
    /// Bytes the caller asked for (the real bytes CPU accesses may touch).
    pub len: usize,
    /// Bytes mapped for the device (`len` rounded up to pages).
    pub span: u64,
    /// For a user buffer mapped through a shared copy: the buffer.
    pub user: Option<*mut u8>,
}

/// IOVA space and the allocations in it.
#[derive(Default)]
pub(crate) struct DmaSpace {
    next: u64,
    pub allocs: BTreeMap<u64, Alloc>,
}

fn round_up(x: u64, to: u64) -> Option<u64> {
    x.checked_add(to - 1).map(|v| v / to * to)
}

impl DmaSpace {
    pub fn new() -> Self {
        Self { next: IOVA_BASE, allocs: BTreeMap::new() }
    }

    /// Reserves IOVA space for `len` bytes aligned to `align`: (iova, span).
    pub fn reserve(&mut self, len: usize, align: usize) -> Result<(u64, u64)> {
        if len == 0 || !align.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "DMA allocation of {len} bytes aligned to {align}: need len > 0 and a power-of-two alignment"
            )));
        }
        let full = || Error::NoMemory(format!("no IOVA space left for {len} bytes"));
        let base = round_up(self.next, (align as u64).max(PAGE)).ok_or_else(full)?;
        let span = round_up(len as u64, PAGE).ok_or_else(full)?;
        let next =
            base.checked_add(span).and_then(|v| v.checked_add(PAGE)).filter(|&n| n <= IOVA_LIMIT).ok_or_else(full)?;
        self.next = next;
        Ok((base, span))
    }

    /// The host address of `[iova, iova + len)` if it lies in the real bytes of one allocation.
    pub fn host_ptr(&self, iova: Iova, len: usize) -> Result<*mut u8> {
        let err = || Error::InvalidArgument(format!("{len} bytes at IOVA {iova} are not inside one DMA allocation"));
        let (&base, a) = self.allocs.range(..=iova.0).next_back().ok_or_else(err)?;
        let off = iova.0 - base;
        if off.checked_add(len as u64).is_none_or(|end| end > a.len as u64) {
            return Err(err());
        }
        // SAFETY: `off + len <= a.len <= mapping length`.
        Ok(unsafe { a.mem.ptr().add(off as usize) })
    }

    pub fn read(&self, iova: Iova, out: &mut [u8]) -> Result<()> {
        let p = self.host_ptr(iova, out.len())?;
        // SAFETY: in bounds of a live shared mapping; the device may write it concurrently, as it
        // may any DMA memory (the copy then sees old or new bytes).
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    pub fn write(&self, iova: Iova, data: &[u8]) -> Result<()> {
        let p = self.host_ptr(iova, data.len())?;
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }
}
