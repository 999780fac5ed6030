//! The pages of the process that hold registered buffers, moved onto shared memory while a
//! registration needs them, for the vfio-user backend (which can share only fd-backed memory
//! with the NIC's process).
//!
//! An IOMMU maps whole pages, so a real device reaches every byte of the pages a buffer
//! touches. Here, to let the simulator's process reach a buffer the program allocated (malloc,
//! a `Vec`, a stack or data-segment array), the pages holding it are **moved in place**: their
//! bytes are copied into a new memfd, which is then mapped over the same addresses
//! (`mmap(MAP_SHARED | MAP_FIXED)`). The program keeps its pointers and sees the NIC's writes at
//! once; everything else on those pages (other heap objects, malloc's own records) keeps its
//! bytes. A page that two registrations share (two small buffers of one heap page) is moved
//! once and counted; when the last registration on it goes, the page is moved back onto private
//! anonymous memory (same bytes), so nothing outlives the registration: a later `fork` or
//! `madvise(MADV_DONTNEED)` (glibc's heap trimming) sees ordinary memory again.
//!
//! The move is a copy followed by a remap: a store another thread makes to one of those pages
//! in between is lost. librnic's verbs run under one lock, so only the program's own threads
//! can do that, and only to memory near a buffer it is registering. Pages near the calling
//! thread's stack pointer are never moved (the call itself writes them); the caller falls
//! back to a copy for them.
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;

use super::shared_mem::{SharedMem, PAGE};

const PAGE_BYTES: usize = PAGE as usize;

/// How far from the current stack pointer (bytes, either way) pages are left alone.
const STACK_GUARD: usize = 256 * 1024;

/// One page moved onto shared memory.
struct Page {
    mem: Rc<SharedMem>,
    /// Its byte offset in `mem`.
    off: u64,
    /// Registrations that need it.
    refs: u32,
}

/// A run of pages contiguous both in the process and in one memfd: one `DMA_MAP`.
pub(crate) struct Run {
    /// First page's address in the process.
    pub va: usize,
    /// Bytes (whole pages).
    pub len: u64,
    pub mem: Rc<SharedMem>,
    /// Byte offset of the first page in `mem`'s file.
    pub off: u64,
}

/// The moved pages, by address.
#[derive(Default)]
pub(crate) struct UserPages {
    pages: BTreeMap<usize, Page>,
}

/// `[lo, hi)`: the pages holding `len` bytes at `addr`.
pub(crate) fn page_span(addr: usize, len: usize) -> Option<(usize, usize)> {
    let lo = addr & !(PAGE_BYTES - 1);
    let end = addr.checked_add(len)?;
    let hi = end.checked_add(PAGE_BYTES - 1)? & !(PAGE_BYTES - 1);
    Some((lo, hi))
}

/// True if `[lo, hi)` comes within [`STACK_GUARD`] of this thread's stack pointer.
fn near_stack(lo: usize, hi: usize) -> bool {
    let marker = 0u8;
    let sp = std::ptr::addr_of!(marker) as usize;
    lo < sp.saturating_add(STACK_GUARD) && sp.saturating_sub(STACK_GUARD) < hi
}

impl UserPages {
    /// Takes a reference on each page of `[lo, hi)` (page-aligned), moving the pages not yet
    /// moved onto shared memory, and returns the runs that cover the range in order.
    ///
    /// # Errors
    /// `WouldBlock` for a range near this thread's stack; the memfd or mmap error otherwise.
    /// Nothing is referenced on error (pages already moved by the call stay, unreferenced,
    /// and go back to private memory).
    ///
    /// # Safety
    /// Every page of `[lo, hi)` is mapped readable and writable memory of this process that
    /// no other thread writes during the call.
    pub unsafe fn pin(&mut self, lo: usize, hi: usize) -> io::Result<Vec<Run>> {
        if near_stack(lo, hi) {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "buffer near the stack pointer"));
        }
        let mut at = lo;
        while at < hi {
            if self.pages.contains_key(&at) {
                at += PAGE_BYTES;
                continue;
            }
            let mut end = at;
            while end < hi && !self.pages.contains_key(&end) {
                end += PAGE_BYTES;
            }
            // SAFETY: forwarded from this function's contract.
            if let Err(e) = unsafe { self.move_run(at, end) } {
                // SAFETY: as above; the pages moved so far are unreferenced.
                unsafe { self.release(lo, hi, false) };
                return Err(e);
            }
            at = end;
        }
        for p in (lo..hi).step_by(PAGE_BYTES) {
            if let Some(page) = self.pages.get_mut(&p) {
                page.refs += 1;
            }
        }
        Ok(self.runs(lo, hi))
    }

    /// Drops a reference on each page of `[lo, hi)` (taken by [`pin`](Self::pin)); pages no
    /// registration needs go back to private anonymous memory, unless they are near this
    /// thread's stack (they stay shared and unreferenced until a later call).
    ///
    /// # Safety
    /// As [`pin`](Self::pin); the device no longer reaches the pages' registration (its
    /// `DMA_UNMAP` was answered).
    pub unsafe fn unpin(&mut self, lo: usize, hi: usize) {
        // SAFETY: forwarded.
        unsafe { self.release(lo, hi, true) }
    }

    /// Pages moved onto shared memory, and of those, the ones registrations hold.
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        (self.pages.len(), self.pages.values().filter(|p| p.refs > 0).count())
    }

    unsafe fn release(&mut self, lo: usize, hi: usize, drop_ref: bool) {
        for p in (lo..hi).step_by(PAGE_BYTES) {
            let Some(page) = self.pages.get_mut(&p) else { continue };
            if drop_ref {
                page.refs = page.refs.saturating_sub(1);
            }
            if page.refs > 0 || near_stack(p, p + PAGE_BYTES) {
                continue;
            }
            let page = self.pages.remove(&p).expect("just found");
            // SAFETY: `p` is a page of this process (the contract) now backed by the memfd; a
            // private anonymous page replaces it and gets its bytes from the memfd's own
            // mapping, which `page.mem` keeps alive.
            unsafe {
                let m = libc::mmap(
                    p as *mut libc::c_void,
                    PAGE_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
                if m == libc::MAP_FAILED {
                    // Leave it shared (same bytes): still correct memory for the program.
                    self.pages.insert(p, page);
                    continue;
                }
                std::ptr::copy_nonoverlapping(page.mem.ptr().add(page.off as usize), p as *mut u8, PAGE_BYTES);
            }
        }
    }

    /// Moves `[lo, hi)` (no page of it moved yet) onto one new memfd.
    unsafe fn move_run(&mut self, lo: usize, hi: usize) -> io::Result<()> {
        let len = hi - lo;
        let mem = Rc::new(SharedMem::new(len as u64, "rnic-user")?);
        // SAFETY: `lo[..len]` is readable (the contract); the memfd's mapping is another
        // object of `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(lo as *const u8, mem.ptr(), len) };
        // SAFETY: replaces this process's pages `[lo, hi)` (the contract) with the memfd,
        // which holds the same bytes.
        let m = unsafe {
            libc::mmap(
                lo as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                std::os::fd::AsRawFd::as_raw_fd(&mem.file),
                0,
            )
        };
        if m == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        for (i, p) in (lo..hi).step_by(PAGE_BYTES).enumerate() {
            self.pages.insert(p, Page { mem: Rc::clone(&mem), off: (i * PAGE_BYTES) as u64, refs: 0 });
        }
        Ok(())
    }

    /// The runs covering `[lo, hi)`, all of whose pages are moved.
    fn runs(&self, lo: usize, hi: usize) -> Vec<Run> {
        let mut out: Vec<Run> = Vec::new();
        for (&p, page) in self.pages.range(lo..hi) {
            match out.last_mut() {
                Some(r) if r.va + r.len as usize == p && Rc::ptr_eq(&r.mem, &page.mem) && r.off + r.len == page.off => {
                    r.len += PAGE;
                }
                _ => out.push(Run { va: p, len: PAGE, mem: Rc::clone(&page.mem), off: page.off }),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heap buffer of `pages` pages, page-aligned, filled with a pattern.
    fn heap(pages: usize) -> Vec<u64> {
        let mut v = Vec::with_capacity(pages * PAGE_BYTES / 8 + PAGE_BYTES / 8);
        v.resize(v.capacity(), 0u64);
        for (i, w) in v.iter_mut().enumerate() {
            *w = i as u64 * 0x9E37_79B9;
        }
        v
    }

    fn aligned_start(v: &mut [u64]) -> usize {
        let a = v.as_mut_ptr() as usize;
        (a + PAGE_BYTES - 1) & !(PAGE_BYTES - 1)
    }

    #[test]
    fn moved_pages_keep_their_bytes_and_share_them_with_the_memfd() {
        let mut v = heap(4);
        let before = v.clone();
        let base = aligned_start(&mut v);
        let mut u = UserPages::default();
        // A 100-byte buffer straddling the first two pages: both move, as one run.
        let (lo, hi) = page_span(base + PAGE_BYTES - 50, 100).unwrap();
        assert_eq!((lo, hi), (base, base + 2 * PAGE_BYTES));
        // SAFETY: pages of `v`, which nothing else touches.
        let runs = unsafe { u.pin(lo, hi) }.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].va, runs[0].len, runs[0].off), (base, 2 * PAGE, 0));
        assert_eq!(v, before, "moving the pages changed their bytes");
        // A store through the memfd (as the NIC's process makes) is seen by the program.
        // SAFETY: inside the run's mapping.
        unsafe { *runs[0].mem.ptr().add(8) = 0xAB };
        let byte = unsafe { *((base + 8) as *const u8) };
        assert_eq!(byte, 0xAB);
        // And a store by the program reaches the memfd.
        unsafe { *((base + PAGE_BYTES + 16) as *mut u8) = 0xCD };
        assert_eq!(unsafe { *runs[0].mem.ptr().add(PAGE_BYTES + 16) }, 0xCD);
        assert_eq!(u.counts(), (2, 2));
        let snapshot = v.clone();
        unsafe { u.unpin(lo, hi) };
        assert_eq!(u.counts(), (0, 0));
        // Back on private memory with the same bytes; the memfd no longer sees the program's
        // stores.
        assert_eq!(v, snapshot, "moving the pages back changed their bytes");
        unsafe { *((base + 24) as *mut u8) = 0xEF };
        assert_ne!(unsafe { *runs[0].mem.ptr().add(24) }, 0xEF);
    }

    #[test]
    fn a_page_two_buffers_share_moves_once_and_returns_with_the_last() {
        let mut v = heap(3);
        let base = aligned_start(&mut v);
        let mut u = UserPages::default();
        let a = page_span(base + 10, 20).unwrap();
        let b = page_span(base + 100, 20).unwrap();
        let c = page_span(base + 200, PAGE_BYTES).unwrap(); // first and second page
        unsafe {
            let ra = u.pin(a.0, a.1).unwrap();
            let rb = u.pin(b.0, b.1).unwrap();
            assert!(Rc::ptr_eq(&ra[0].mem, &rb[0].mem), "the shared page moved twice");
            let rc = u.pin(c.0, c.1).unwrap();
            // The first page is the old memfd's, the second a new one: two runs.
            assert_eq!(rc.len(), 2);
            assert!(Rc::ptr_eq(&rc[0].mem, &ra[0].mem));
            assert_eq!(u.counts(), (2, 2));
            u.unpin(a.0, a.1);
            u.unpin(c.0, c.1);
            assert_eq!(u.counts(), (1, 1), "the first page is still b's");
            *rb[0].mem.ptr().add(100) = 0x5A;
            assert_eq!(*((base + 100) as *const u8), 0x5A);
            u.unpin(b.0, b.1);
            assert_eq!(u.counts(), (0, 0));
        }
    }

    #[test]
    fn pages_near_the_stack_are_refused() {
        let buf = [7u8; 64];
        let (lo, hi) = page_span(buf.as_ptr() as usize, buf.len()).unwrap();
        let mut u = UserPages::default();
        let e = unsafe { u.pin(lo, hi) }.err().expect("a stack buffer was moved");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(u.counts(), (0, 0));
    }
}
