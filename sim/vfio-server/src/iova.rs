//! The client's memory as the NIC reaches it: an IOVA table filled by vfio-user `DMA_MAP`
//! messages, each mapping `[iova, iova + size)` to `size` bytes at `offset` of a file the client
//! passed (a memfd).
//!
//! QEMU behind a vIOMMU maps guest memory **page by page**: one 64 KiB guest mapping arrives as
//! sixteen 4 KiB `DMA_MAP`s at non-contiguous file offsets (docs/guests.md §2). So the table keeps
//! one entry per message, of any size, and an access is split across the entries that cover it.
//! Each file is mmapped **once** (the first time it is seen, whole) and shared by every entry on
//! it, so a 1 GiB region mapped as 262 144 pages costs one mmap, not 262 144 (which would exceed
//! the kernel's default map count). Files are told apart by (device, inode), because every message
//! carries a new descriptor for the same memfd.
//!
//! A client may also pass **its own `/proc/self/mem`** with the offset the buffer's virtual
//! address (rnic's driver does, for a buffer it registers that is not whole pages): that file
//! cannot be mmapped, so the entry reaches the client's memory with `pread`/`pwrite` at the
//! offset, as an IOMMU reaches pinned pages: nothing is copied or remapped on the client's side.
//! The client opened the file itself, so it grants exactly what the client may do to itself.
//!
//! `DMA_MAP` without a file (QEMU sends those for ROM and other memory it cannot share) is
//! accepted and ignored: the device is never pointed at it. `DMA_UNMAP` removes exactly the bytes
//! it names (splitting an entry if needed); `UNMAP_ALL` empties the table.
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, Weak};

use memmap2::{MmapOptions, MmapRaw};
use rnic_sim::DmaMemory;

/// Why a `DMA_MAP` or `DMA_UNMAP` was refused.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum IovaError {
    /// Zero size, or `iova + size` / `offset + size` overflows.
    #[error("DMA map of {size:#x} bytes at IOVA {iova:#x}: empty or wraps around")]
    BadRange {
        /// IOVA.
        iova: u64,
        /// Size in bytes.
        size: u64,
    },
    /// The range overlaps a live mapping.
    #[error("DMA map of {size:#x} bytes at IOVA {iova:#x} overlaps the mapping at {existing:#x}")]
    Overlap {
        /// IOVA.
        iova: u64,
        /// Size in bytes.
        size: u64,
        /// Start of the mapping it overlaps.
        existing: u64,
    },
    /// `offset + size` is past the end of the file.
    #[error("DMA map of {size:#x} bytes at offset {offset:#x} of a {file_len:#x}-byte file")]
    PastEndOfFile {
        /// Offset in the file.
        offset: u64,
        /// Size in bytes.
        size: u64,
        /// The file's size.
        file_len: u64,
    },
    /// The file could not be examined or mapped.
    #[error("DMA map: cannot mmap the client's file: {0}")]
    Mmap(String),
}

/// One mmap of a client file, shared by the entries on it.
struct Mapping {
    map: MmapRaw,
}

/// Where an entry's bytes are.
#[derive(Clone)]
enum Backing {
    /// An mmapped file (a memfd).
    Map(Arc<Mapping>),
    /// A client's `/proc/<pid>/mem`, read and written at the entry's offset.
    Mem(Arc<File>),
}

#[derive(Clone)]
struct Entry {
    len: u64,
    backing: Backing,
    offset: u64,
    writable: bool,
}

/// One piece of an access: its place and length, and whether it may be written.
enum Piece {
    Ptr(*mut u8, usize, bool),
    Mem(Arc<File>, u64, usize, bool),
}

/// `PROC_SUPER_MAGIC` (`statfs(2)`): the file is in procfs.
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

fn is_proc_file(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs(2) on a live descriptor into a zeroed struct; the result is checked.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    r == 0 && st.f_type as i64 == PROC_SUPER_MAGIC
}

/// IOVA → (mapping, offset), one entry per `DMA_MAP`.
#[derive(Default)]
pub struct IovaTable {
    entries: BTreeMap<u64, Entry>,
    files: HashMap<(u64, u64), Weak<Mapping>>,
    /// `DMA_MAP`s without a file, accepted and ignored.
    unbacked_maps: u64,
}

impl std::fmt::Debug for IovaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IovaTable")
            .field("entries", &self.entries.len())
            .field("unbacked_maps", &self.unbacked_maps)
            .finish()
    }
}

impl IovaTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `DMA_MAP`s without a file seen so far (ignored).
    pub fn unbacked_maps(&self) -> u64 {
        self.unbacked_maps
    }

    /// Distinct files currently mmapped.
    pub fn mapped_files(&self) -> usize {
        self.files.values().filter(|w| w.strong_count() > 0).count()
    }

    /// Handles a `DMA_MAP` of `size` bytes at `iova` from `offset` of `file` (`None`: not
    /// shareable; accepted and ignored). `writable` is the map's WRITE flag.
    ///
    /// # Errors
    /// [`IovaError`] for an empty or wrapping range, an overlap with a live entry, a range past
    /// the end of the file, or a file that cannot be mmapped.
    pub fn map(
        &mut self,
        iova: u64,
        size: u64,
        offset: u64,
        file: Option<&File>,
        writable: bool,
    ) -> Result<(), IovaError> {
        let Some(file) = file else {
            self.unbacked_maps += 1;
            return Ok(());
        };
        let bad = IovaError::BadRange { iova, size };
        if size == 0 {
            return Err(bad);
        }
        let end = iova.checked_add(size).ok_or(bad.clone())?;
        let file_end = offset.checked_add(size).ok_or(bad)?;
        if let Some((&s, e)) = self.entries.range(..end).next_back() {
            if s + e.len > iova {
                return Err(IovaError::Overlap { iova, size, existing: s });
            }
        }
        if is_proc_file(file) {
            let f = file.try_clone().map_err(|e| IovaError::Mmap(e.to_string()))?;
            self.entries.insert(iova, Entry { len: size, backing: Backing::Mem(Arc::new(f)), offset, writable });
            return Ok(());
        }
        let meta = file.metadata().map_err(|e| IovaError::Mmap(e.to_string()))?;
        let key = (meta.dev(), meta.ino());
        let cached = self.files.get(&key).and_then(Weak::upgrade).filter(|m| m.map.len() as u64 >= file_end);
        let map = match cached {
            Some(m) => m,
            None => {
                let file_len = meta.len();
                if file_end > file_len {
                    return Err(IovaError::PastEndOfFile { offset, size, file_len });
                }
                let len = usize::try_from(file_len).map_err(|e| IovaError::Mmap(e.to_string()))?;
                let map = MmapOptions::new().len(len).map_raw(file).map_err(|e| IovaError::Mmap(e.to_string()))?;
                let m = Arc::new(Mapping { map });
                self.files.insert(key, Arc::downgrade(&m));
                m
            }
        };
        self.entries.insert(iova, Entry { len: size, backing: Backing::Map(map), offset, writable });
        Ok(())
    }

    /// Handles a `DMA_UNMAP` of `[iova, iova + size)`: every mapped byte in it is removed
    /// (entries partly inside are cut). Returns the bytes that were mapped.
    pub fn unmap(&mut self, iova: u64, size: u64) -> u64 {
        let end = iova.saturating_add(size);
        let starts: Vec<u64> = match self.entries.range(..iova).next_back() {
            Some((&s, e)) if s + e.len > iova => {
                std::iter::once(s).chain(self.entries.range(iova..end).map(|(&s, _)| s)).collect()
            }
            _ => self.entries.range(iova..end).map(|(&s, _)| s).collect(),
        };
        let mut removed = 0;
        for s in starts {
            let Some(e) = self.entries.remove(&s) else { continue };
            let e_end = s + e.len;
            if s < iova {
                self.entries.insert(s, Entry { len: iova - s, ..e.clone() });
            }
            if e_end > end {
                self.entries.insert(end, Entry { len: e_end - end, offset: e.offset + (end - s), ..e.clone() });
            }
            removed += e_end.min(end) - s.max(iova);
        }
        self.files.retain(|_, w| w.strong_count() > 0);
        removed
    }

    /// `UNMAP_ALL`: empties the table.
    pub fn unmap_all(&mut self) {
        self.entries.clear();
        self.files.clear();
    }

    /// The pieces of `[iova, iova + len)` in order, or `None` unless every byte is mapped.
    fn pieces(&self, iova: u64, len: u64) -> Option<Vec<Piece>> {
        let mut out = Vec::with_capacity(1);
        let mut at = iova;
        let end = iova.checked_add(len)?;
        while at < end {
            let (&s, e) = self.entries.range(..=at).next_back()?;
            if at >= s + e.len {
                return None;
            }
            let n = (s + e.len).min(end) - at;
            let off = e.offset.checked_add(at - s)?;
            match &e.backing {
                Backing::Map(m) => {
                    let off = usize::try_from(off).ok()?;
                    // SAFETY: `off + n` is inside the mapping (checked when the entry was made:
                    // the entry lies inside the file, and the mapping covers the file as it
                    // was then).
                    let ptr = unsafe { m.map.as_mut_ptr().add(off) };
                    out.push(Piece::Ptr(ptr, n as usize, e.writable));
                }
                Backing::Mem(f) => out.push(Piece::Mem(Arc::clone(f), off, n as usize, e.writable)),
            }
            at += n;
        }
        Some(out)
    }
}

impl DmaMemory for IovaTable {
    fn is_mapped(&self, iova: u64, len: u64) -> bool {
        self.pieces(iova, len).is_some()
    }

    fn dma_read(&self, iova: u64, out: &mut [u8]) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(pieces) = self.pieces(iova, out.len() as u64) else { return false };
        let mut at = 0;
        for p in pieces {
            match p {
                Piece::Ptr(ptr, n, _) => {
                    // SAFETY: `ptr[..n]` is inside a live shared mapping (see `pieces`); the
                    // client may write it concurrently, as it may on a real bus: the bytes are
                    // then old or new.
                    unsafe { std::ptr::copy_nonoverlapping(ptr, out[at..at + n].as_mut_ptr(), n) };
                    at += n;
                }
                Piece::Mem(f, off, n, _) => {
                    if f.read_exact_at(&mut out[at..at + n], off).is_err() {
                        return false;
                    }
                    at += n;
                }
            }
        }
        true
    }

    fn dma_write_masked(&mut self, iova: u64, data: &[u8], mask: u64) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(pieces) = self.pieces(iova, data.len() as u64) else { return false };
        let mut ok = true;
        let mut at = 0;
        for p in pieces {
            match p {
                Piece::Ptr(_, n, false) | Piece::Mem(_, _, n, false) => {
                    ok = false;
                    at += n;
                }
                Piece::Ptr(ptr, n, true) => {
                    for i in 0..n {
                        if mask >> (at + i) & 1 == 1 {
                            // SAFETY: inside the live mapping, as in `dma_read`.
                            unsafe { ptr.add(i).write_volatile(data[at + i]) };
                        }
                    }
                    at += n;
                }
                Piece::Mem(f, off, n, true) => {
                    // Each run of enabled bytes is one write: the others are left as the
                    // client has them.
                    let mut i = 0;
                    while i < n {
                        if mask >> (at + i) & 1 == 0 {
                            i += 1;
                            continue;
                        }
                        let start = i;
                        while i < n && mask >> (at + i) & 1 == 1 {
                            i += 1;
                        }
                        if f.write_all_at(&data[at + start..at + i], off + start as u64).is_err() {
                            ok = false;
                        }
                    }
                    at += n;
                }
            }
        }
        ok
    }
}

/// An [`IovaTable`] shared between the server thread (which maps and unmaps) and the simulation
/// thread (whose NIC reads and writes through it). An unmap returns only after any DMA access
/// in progress finished, so the client may reuse memory as soon as its `DMA_UNMAP` is answered.
#[derive(Clone, Debug, Default)]
pub struct SharedIovaTable(pub Arc<Mutex<IovaTable>>);

impl SharedIovaTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, IovaTable> {
        // A panic while holding the lock cannot leave the table half-updated in a way that
        // matters more than losing the device: keep serving.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the table.
    pub fn with<R>(&self, f: impl FnOnce(&mut IovaTable) -> R) -> R {
        f(&mut self.lock())
    }
}

impl DmaMemory for SharedIovaTable {
    fn is_mapped(&self, iova: u64, len: u64) -> bool {
        self.lock().is_mapped(iova, len)
    }
    fn dma_read(&self, iova: u64, out: &mut [u8]) -> bool {
        self.lock().dma_read(iova, out)
    }
    fn dma_write_masked(&mut self, iova: u64, data: &[u8], mask: u64) -> bool {
        self.lock().dma_write_masked(iova, data, mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn memfd(len: usize, fill: impl Fn(usize) -> u8) -> File {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..len).map(fill).collect();
        f.write_all(&bytes).unwrap();
        f
    }

    #[test]
    fn qemu_style_page_maps_at_scattered_offsets_read_as_one_range() {
        // Sixteen 4 KiB pages of one file, mapped at consecutive IOVAs from offsets in a shuffled
        // order, as QEMU's vIOMMU sends them.
        let f = memfd(16 * 4096, |i| (i / 4096) as u8);
        let order = [5u64, 3, 15, 0, 9, 1, 12, 7, 2, 14, 4, 11, 6, 13, 8, 10];
        let mut t = IovaTable::new();
        for (k, &page) in order.iter().enumerate() {
            let file = f.try_clone().unwrap(); // a new descriptor per message, like SCM_RIGHTS
            t.map(0x10_0000 + k as u64 * 4096, 4096, page * 4096, Some(&file), true).unwrap();
        }
        assert_eq!(t.len(), 16);
        assert_eq!(t.mapped_files(), 1, "one mmap for every page of the file");
        // A read straddling three entries returns each page's bytes from its own offset.
        let mut out = vec![0u8; 8192 + 2];
        assert!(t.dma_read(0x10_0000 + 4096 - 1, &mut out));
        assert_eq!(out[0], 5);
        assert!(out[1..4097].iter().all(|&b| b == 3));
        assert_eq!(out[4097..4097 + 4096].iter().filter(|&&b| b == 15).count(), 4096);
        assert_eq!(out[8193], 0);
        // A masked write lands in the right page of the file.
        assert!(t.dma_write_masked(0x10_0000 + 4096 + 8, &[0xAB, 0xCD, 0xEF], 0b101));
        let mut b = [0u8; 3];
        assert!(t.dma_read(0x10_0000 + 4096 + 8, &mut b));
        assert_eq!(b, [0xAB, 3, 0xEF]);
        let mut back = vec![0u8; 3];
        use std::os::unix::fs::FileExt;
        f.read_exact_at(&mut back, 3 * 4096 + 8).unwrap();
        assert_eq!(back, [0xAB, 3, 0xEF], "the write reached the client's file at page 3's offset");
    }

    #[test]
    fn holes_unmaps_and_refusals() {
        let f = memfd(4 * 4096, |_| 1);
        let mut t = IovaTable::new();
        t.map(0x1000, 4096, 0, Some(&f), true).unwrap();
        t.map(0x3000, 4096, 4096, Some(&f), true).unwrap();
        assert!(t.is_mapped(0x1000, 4096));
        assert!(!t.is_mapped(0x1000, 4097), "0x2000 is a hole");
        assert!(!t.dma_read(0x1FFF, &mut [0; 2]));
        assert!(!t.dma_write_masked(0x2FFF, &[1, 1], 0b11));
        assert_eq!(
            t.map(0x1800, 4096, 0, Some(&f), true),
            Err(IovaError::Overlap { iova: 0x1800, size: 4096, existing: 0x1000 })
        );
        assert!(matches!(t.map(0x9000, 8192, 3 * 4096, Some(&f), true), Err(IovaError::PastEndOfFile { .. })));
        assert!(matches!(t.map(0x9000, 0, 0, Some(&f), true), Err(IovaError::BadRange { .. })));
        assert!(matches!(t.map(u64::MAX - 10, 4096, 0, Some(&f), true), Err(IovaError::BadRange { .. })));
        // ROM-style maps without a file are accepted and ignored.
        t.map(0xFFFC_0000, 0x40000, 0, None, false).unwrap();
        assert_eq!(t.unbacked_maps(), 1);
        assert!(!t.is_mapped(0xFFFC_0000, 1));
        // Unmapping the middle of an entry cuts it in two.
        assert_eq!(t.unmap(0x1400, 0x400), 0x400);
        assert!(t.is_mapped(0x1000, 0x400) && t.is_mapped(0x1800, 0x800));
        assert!(!t.is_mapped(0x1400, 1) && !t.is_mapped(0x17FF, 1));
        let mut b = [0u8; 1];
        assert!(t.dma_read(0x1800, &mut b), "the tail keeps its file offset");
        // A range over several entries and holes.
        assert_eq!(t.unmap(0, 0x10000), 0x400 + 0x800 + 0x1000);
        assert!(t.is_empty());
        assert_eq!(t.mapped_files(), 0, "the file is unmapped with its last entry");
    }

    #[test]
    fn read_only_maps_refuse_writes() {
        let f = memfd(4096, |_| 9);
        let mut t = IovaTable::new();
        t.map(0x1000, 4096, 0, Some(&f), false).unwrap();
        let mut b = [0u8; 4];
        assert!(t.dma_read(0x1000, &mut b));
        assert_eq!(b, [9; 4]);
        assert!(!t.dma_write_masked(0x1000, &[1; 4], 0xF));
        assert!(t.dma_read(0x1000, &mut b));
        assert_eq!(b, [9; 4]);
        t.unmap_all();
        assert!(!t.is_mapped(0x1000, 1));
    }

    /// A client's `/proc/self/mem` (here this process's) with the buffer's address as the
    /// offset: reads and masked writes reach the buffer itself, across a boundary with a memfd
    /// entry, and a write's disabled bytes keep what the client has there.
    #[test]
    fn proc_mem_entries_reach_the_clients_memory_in_place() {
        let mem = File::options().read(true).write(true).open("/proc/self/mem").unwrap();
        assert!(is_proc_file(&mem) && !is_proc_file(&memfd(16, |_| 0)));
        let mut buf: Vec<u8> = (0..64).collect();
        let mut t = IovaTable::new();
        t.map(0x10_0000, 64, buf.as_ptr() as u64, Some(&mem), true).unwrap();
        // A memfd page right after it: one access spans both kinds.
        let f = memfd(4096, |_| 0xEE);
        t.map(0x10_0040, 4096, 0, Some(&f), true).unwrap();
        assert_eq!(t.mapped_files(), 1, "/proc/self/mem is not mmapped");
        let mut b = [0u8; 8];
        assert!(t.dma_read(0x10_0000 + 60, &mut b));
        assert_eq!(b, [60, 61, 62, 63, 0xEE, 0xEE, 0xEE, 0xEE]);
        // Bytes 1 and 3 disabled.
        assert!(t.dma_write_masked(0x10_0000 + 8, &[0xA0, 0xA1, 0xA2, 0xA3], 0b0101));
        assert_eq!(&buf[8..12], &[0xA0, 9, 0xA2, 11], "written in the buffer itself");
        buf[20] = 0x55;
        assert!(t.dma_read(0x10_0000 + 20, &mut b[..1]));
        assert_eq!(b[0], 0x55, "the client's store is seen at once");
        assert!(!t.dma_read(0x10_0000 + 4096 + 60, &mut b), "past both entries");
        t.unmap(0x10_0000, 64);
        assert!(!t.is_mapped(0x10_0000, 1));
    }
}
