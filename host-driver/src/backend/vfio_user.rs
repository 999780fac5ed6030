//! The `vfio-user:PATH` backend: the NIC behind a vfio-user socket (`rnic sim serve`), through
//! rust-vmm's `vfio_user::Client`.
//!
//! - **MMIO**: `REGION_READ` / `REGION_WRITE` of BAR0, one message each; a write returns when
//!   the server has performed it (the client waits for the reply).
//! - **DMA memory**: every allocation is its own memfd, mapped here and given to the server with
//!   `DMA_MAP` (the server mmaps the same pages), so rings and CQEs are shared memory.
//! - **Application buffers** ([`Device::map_user`]): vfio-user can only share fd-backed memory,
//!   and the rust-vmm server implements no `DMA_READ` / `DMA_WRITE`, so a buffer the application
//!   allocated (a `Vec`, malloc) cannot be reached as it is.
//!   - A buffer of **whole pages** (page-aligned address and length, as perftest's and
//!     `ibv_rc_pingpong`'s `memalign`ed buffers are) that overlaps no other such registration
//!     is **moved onto shared memory in place**: its bytes are copied into a new memfd, which
//!     is then mapped over the same addresses (`mmap(MAP_SHARED | MAP_FIXED)`) and `DMA_MAP`ped.
//!     The program keeps its pointer and sees the NIC's writes at once, as with a real device
//!     (ib_write_lat polls its buffer for the peer's WRITE). The pages stay on the memfd after
//!     deregistration (same contents; a `fork` would share them with the child).
//!   - Any other buffer (a `malloc`ed struct, a `Vec`, an array on the stack: rping's
//!     advertisement and ping buffers) is **reached through the process's own
//!     `/proc/self/mem`**: the driver opens it once and `DMA_MAP`s the pages holding the
//!     buffer with that descriptor and the pages' virtual address as the offset. The server
//!     cannot mmap such a file, so it reads and writes the program's memory with
//!     `pread`/`pwrite` at that offset (`rnic-vfio-server`'s `iova.rs`): the NIC sees the
//!     program's stores and the program the NIC's at once, nothing is copied or remapped, as
//!     with pinned pages behind an IOMMU. The descriptor grants the server what the process
//!     may do to itself, no more; it is closed when the device is.
//!   - If `/proc/self/mem` cannot be opened (or the server refuses it), the buffer is
//!     registered through a shared copy: at `map_user` its bytes are copied into a new memfd
//!     that is `DMA_MAP`ped in its place; while it is mapped, the CPU reaches it through
//!     [`Device::dma_read`] / [`Device::dma_write`] at its IOVA (which is what
//!     `MemoryRegion::read_at` / `write_at` do); at `unmap`, after the `DMA_UNMAP` is answered
//!     (the NIC can no longer reach it), the copy's bytes are copied back into the buffer.
//! - **Doorbell ordering**: descriptors are plain stores into shared memory; every MMIO write is
//!   preceded by a sequentially consistent fence and sent over the socket (a system call), and
//!   the server performs it only after receiving it, so the NIC's DMA of the descriptors happens
//!   after the stores are visible.
//! - **Interrupts**: one eventfd per MSI-X vector, given to the server with `SET_IRQS`;
//!   [`Device::wait_interrupt`] waits on one.
//! - **Time**: the simulator's cycle count from its clock page (BAR4, mmapped); without one,
//!   wall time at the contract's clock.
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};

use super::shared_mem::{Alloc, DmaSpace, SharedMem, PAGE};
use super::OpenError;
use crate::device::{Device, Iova};
use crate::error::{Error, IoKind, Result};
use crate::pci;

/// VFIO region index of the PCI config space.
const CONFIG_REGION: u32 = 7;
/// VFIO IRQ index of MSI-X.
const MSIX_INDEX: u32 = 2;
/// `VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER`.
const SET_TRIGGER_EVENTFDS: u32 = 4 | 32;
/// How long the server has to answer the version negotiation.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One NIC behind a vfio-user socket. See the module documentation.
pub struct VfioUserDevice {
    path: PathBuf,
    client: RefCell<vfio_user::Client>,
    space: RefCell<DmaSpace>,
    clock: Option<MmapRaw>,
    started: Instant,
    eventfds: Vec<File>,
    /// Buffers moved onto shared memory in place (see the module documentation): IOVA ->
    /// (address, length in bytes).
    in_place: RefCell<std::collections::BTreeMap<u64, (usize, usize)>>,
    /// `/proc/self/mem`, opened on first use (`None` inside: it could not be).
    proc_mem: std::cell::OnceCell<Option<File>>,
    /// Buffers reached through `/proc/self/mem`: first IOVA of their pages -> the pages'
    /// address range `[lo, hi)`.
    proc_maps: RefCell<std::collections::BTreeMap<u64, (usize, usize)>>,
}

impl std::fmt::Debug for VfioUserDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioUserDevice").field("path", &self.path).finish_non_exhaustive()
    }
}

fn eventfd() -> std::io::Result<File> {
    // SAFETY: eventfd(2); the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl VfioUserDevice {
    /// Connects to the vfio-user server at `path`, enables memory space and bus mastering in
    /// its config space, binds one eventfd per MSI-X vector and maps its clock page.
    ///
    /// # Errors
    /// `Error::Open` with [`OpenError::SocketMissing`], [`OpenError::ConnectionRefused`],
    /// [`OpenError::ServerBusy`] or [`OpenError::Protocol`].
    pub fn open(path: &Path) -> Result<Self> {
        let p = path.to_owned();
        let protocol = |message: String| Error::from(OpenError::Protocol { path: p.clone(), message });
        if !path.exists() {
            return Err(OpenError::SocketMissing { path: p }.into());
        }
        // The rust-vmm client blocks for ever if the server does not answer (it serves one
        // client at a time): connect on a helper thread and give up after a while.
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(vfio_user::Client::new(&owned));
        });
        let mut client = match rx.recv_timeout(CONNECT_TIMEOUT) {
            Ok(Ok(c)) => c,
            Ok(Err(vfio_user::Error::Connect(e))) => {
                return Err(match e.kind() {
                    std::io::ErrorKind::NotFound => OpenError::SocketMissing { path: p }.into(),
                    std::io::ErrorKind::ConnectionRefused => OpenError::ConnectionRefused { path: p }.into(),
                    _ => protocol(format!("cannot connect: {e}")),
                })
            }
            Ok(Err(e)) => return Err(protocol(e.to_string())),
            Err(_) => return Err(OpenError::ServerBusy { path: p, seconds: CONNECT_TIMEOUT.as_secs() }.into()),
        };
        match client.region(pci::REGS_BAR) {
            Some(r) if r.size >= pci::REGS_BAR_BYTES => {}
            Some(r) => {
                return Err(protocol(format!(
                    "BAR0 is {} bytes, the register map needs {}",
                    r.size,
                    pci::REGS_BAR_BYTES
                )))
            }
            None => return Err(protocol("the device has no BAR0".into())),
        }
        // Memory space + bus master.
        let mut cmd = [0u8; 2];
        client.region_read(CONFIG_REGION, 4, &mut cmd).map_err(|e| protocol(format!("config read: {e}")))?;
        let cmd = u16::from_le_bytes(cmd) | 0b110;
        client
            .region_write(CONFIG_REGION, 4, &cmd.to_le_bytes())
            .map_err(|e| protocol(format!("config write: {e}")))?;
        // MSI-X: one eventfd per vector the device has.
        let vectors = client.get_irq_info(MSIX_INDEX).map(|i| i.count).unwrap_or(0).min(u32::from(pci::MSIX_VECTORS));
        let eventfds = (0..vectors)
            .map(|_| eventfd())
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| protocol(format!("eventfd: {e}")))?;
        // The rust-vmm server announces max_msg_fds = 1 in its version capabilities (and a
        // message with more than 16 is cut): bind the vectors one message each.
        for (k, f) in eventfds.iter().enumerate() {
            client
                .set_irqs(MSIX_INDEX, SET_TRIGGER_EVENTFDS, k as u32, 1, &[f.as_raw_fd()])
                .map_err(|e| protocol(format!("SET_IRQS of MSI-X vector {k}: {e}")))?;
        }
        // The simulator's clock page, if the device has one.
        let clock = client.region(pci::CLOCK_BAR).and_then(|r| {
            let fo = r.file_offset.as_ref()?;
            let map = MmapOptions::new()
                .offset(fo.start())
                .len(pci::CLOCK_BAR_BYTES as usize)
                .map_raw_read_only(fo.file())
                .ok()?;
            // SAFETY: 8-byte aligned offsets inside a live page-sized mapping.
            let magic = unsafe { &*(map.as_ptr().add(pci::CLOCK_MAGIC) as *const AtomicU64) }.load(Ordering::Acquire);
            (magic == pci::CLOCK_MAGIC_VALUE).then_some(map)
        });
        Ok(Self {
            path: p,
            client: RefCell::new(client),
            space: RefCell::new(DmaSpace::new()),
            clock,
            started: Instant::now(),
            eventfds,
            in_place: RefCell::default(),
            proc_mem: std::cell::OnceCell::new(),
            proc_maps: RefCell::default(),
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the device publishes the simulator's cycle count (a simulated NIC).
    pub fn has_sim_clock(&self) -> bool {
        self.clock.is_some()
    }

    fn io(&self, context: impl Into<String>, e: vfio_user::Error) -> Error {
        Error::io(IoKind::DeviceLost, format!("{}: {}", self.path.display(), context.into()), e)
    }

    fn client(&self) -> Result<std::cell::RefMut<'_, vfio_user::Client>> {
        self.client.try_borrow_mut().map_err(|_| Error::Busy("the vfio-user connection is in use".into()))
    }

    /// Shares `len` bytes of new memory with the device at a new IOVA.
    fn map_new(&self, len: usize, align: usize, user: Option<*mut u8>) -> Result<Iova> {
        let (iova, span) = self.space.borrow_mut().reserve(len, align)?;
        let mem =
            SharedMem::new(span, "rnic-dma").map_err(|e| Error::NoMemory(format!("memfd of {span} bytes: {e}")))?;
        if let Some(src) = user {
            // SAFETY: `map_user`'s contract: `src[..len]` is valid for reads; the mapping has
            // `span >= len` bytes and is a different object.
            unsafe { std::ptr::copy_nonoverlapping(src, mem.ptr(), len) };
        }
        self.client()?
            .dma_map(0, iova, span, mem.file.as_raw_fd())
            .map_err(|e| self.io(format!("DMA_MAP of {span} bytes at IOVA {iova:#x}"), e))?;
        self.space.borrow_mut().allocs.insert(iova, Alloc { mem, len, span, user });
        Ok(Iova(iova))
    }

    /// Moves a buffer of whole pages onto a memfd at the same addresses and maps that for the
    /// device; `Ok(None)` when the buffer does not qualify (not whole pages, overlapping
    /// another in-place buffer) or the kernel refuses the mapping, so the caller falls back to
    /// a shared copy.
    ///
    /// # Safety
    /// As [`Device::map_user`]; in addition no other thread may write `ptr[..len]` during the
    /// call (its bytes are copied, then the pages replaced).
    unsafe fn map_user_in_place(&self, ptr: *mut u8, len: usize) -> Result<Option<Iova>> {
        let (addr, page) = (ptr as usize, PAGE as usize);
        if !addr.is_multiple_of(page) || !len.is_multiple_of(page) {
            return Ok(None);
        }
        let end = addr.checked_add(len).ok_or_else(|| Error::InvalidArgument("buffer wraps around".into()))?;
        if self.in_place.borrow().values().any(|&(a, l)| a < end && addr < a + l) {
            return Ok(None);
        }
        let (iova, span) = self.space.borrow_mut().reserve(len, page)?;
        let mem =
            SharedMem::new(span, "rnic-user").map_err(|e| Error::NoMemory(format!("memfd of {span} bytes: {e}")))?;
        // SAFETY: `ptr[..len]` is readable (the caller's contract); the memfd mapping has
        // `span == len` bytes and is a different object.
        unsafe { std::ptr::copy_nonoverlapping(ptr, mem.ptr(), len) };
        // SAFETY: replaces the caller's pages `ptr[..len]` (page-aligned, its own allocation by
        // the contract) with a shared mapping of the memfd, which holds the same bytes.
        let m = unsafe {
            libc::mmap(
                ptr.cast(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                mem.file.as_raw_fd(),
                0,
            )
        };
        if m == libc::MAP_FAILED {
            return Ok(None);
        }
        self.client()?
            .dma_map(0, iova, span, mem.file.as_raw_fd())
            .map_err(|e| self.io(format!("DMA_MAP of {span} bytes at IOVA {iova:#x}"), e))?;
        self.space.borrow_mut().allocs.insert(iova, Alloc { mem, len, span, user: None });
        self.in_place.borrow_mut().insert(iova, (addr, len));
        Ok(Some(Iova(iova)))
    }

    /// Maps the pages holding `ptr[..len]` for the device through `/proc/self/mem` (see the
    /// module documentation); `Ok(None)` if that file cannot be opened or the server refuses
    /// it, so the caller falls back to a shared copy.
    fn map_user_proc(&self, ptr: *mut u8, len: usize) -> Result<Option<Iova>> {
        let Some(mem) =
            self.proc_mem.get_or_init(|| File::options().read(true).write(true).open("/proc/self/mem").ok())
        else {
            return Ok(None);
        };
        let page = PAGE as usize;
        let addr = ptr as usize;
        let end = addr.checked_add(len).ok_or_else(|| Error::InvalidArgument("buffer wraps around".into()))?;
        let (lo, hi) = (addr & !(page - 1), end.div_ceil(page) * page);
        let (base, span) = self.space.borrow_mut().reserve(hi - lo, page)?;
        if self.client()?.dma_map(lo as u64, base, span, mem.as_raw_fd()).is_err() {
            return Ok(None);
        }
        self.proc_maps.borrow_mut().insert(base, (lo, hi));
        Ok(Some(Iova(base + (addr - lo) as u64)))
    }

    /// The buffer reached through `/proc/self/mem` that holds `[iova, iova + len)`: its first
    /// IOVA and the address `iova` stands for.
    fn proc_at(&self, iova: Iova, len: usize) -> Option<(u64, usize)> {
        let m = self.proc_maps.borrow();
        let (&base, &(lo, hi)) = m.range(..=iova.0).next_back()?;
        let off = usize::try_from(iova.0 - base).ok()?;
        (off.checked_add(len)? <= hi - lo).then_some((base, lo + off))
    }

    fn unmap_any(&self, iova: Iova) -> Result<Alloc> {
        let span = self
            .space
            .borrow()
            .allocs
            .get(&iova.0)
            .map(|a| a.span)
            .ok_or_else(|| Error::InvalidArgument(format!("no DMA mapping starts at IOVA {iova}")))?;
        self.client()?.dma_unmap(iova.0, span).map_err(|e| self.io(format!("DMA_UNMAP at IOVA {iova}"), e))?;
        self.space
            .borrow_mut()
            .allocs
            .remove(&iova.0)
            .ok_or_else(|| Error::InvalidArgument(format!("IOVA {iova} vanished")))
    }
}

impl Device for VfioUserDevice {
    fn name(&self) -> String {
        format!("vfio-user:{}", self.path.display())
    }

    fn mmio_read32(&self, offset: u16) -> Result<u32> {
        let mut b = [0u8; 4];
        self.client()?
            .region_read(pci::REGS_BAR, u64::from(offset), &mut b)
            .map_err(|e| self.io(format!("MMIO read of BAR0 {offset:#06x}"), e))?;
        Ok(u32::from_le_bytes(b))
    }

    fn mmio_write32(&self, offset: u16, value: u32) -> Result<()> {
        // Descriptor stores before the doorbell (see the module documentation).
        fence(Ordering::SeqCst);
        self.client()?
            .region_write(pci::REGS_BAR, u64::from(offset), &value.to_le_bytes())
            .map_err(|e| self.io(format!("MMIO write of {value:#010x} to BAR0 {offset:#06x}"), e))
    }

    fn alloc_dma(&self, len: usize, align: usize) -> Result<Iova> {
        self.map_new(len, align, None)
    }

    fn free_dma(&self, iova: Iova) -> Result<()> {
        self.unmap_any(iova).map(drop)
    }

    fn dma_read(&self, iova: Iova, out: &mut [u8]) -> Result<()> {
        fence(Ordering::Acquire);
        if let Some((_, va)) = self.proc_at(iova, out.len()) {
            // SAFETY: inside the pages of a live registration of this process's memory
            // (valid while registered, by `map_user`'s contract).
            unsafe { std::ptr::copy_nonoverlapping(va as *const u8, out.as_mut_ptr(), out.len()) };
            return Ok(());
        }
        self.space.borrow().read(iova, out)
    }

    fn dma_write(&self, iova: Iova, data: &[u8]) -> Result<()> {
        if let Some((_, va)) = self.proc_at(iova, data.len()) {
            // SAFETY: as in `dma_read`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), va as *mut u8, data.len()) };
            return Ok(());
        }
        self.space.borrow().write(iova, data)
    }

    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<Iova> {
        if ptr.is_null() || len == 0 {
            return Err(Error::InvalidArgument("mapping a null or empty buffer".into()));
        }
        // SAFETY: forwarded from this function's contract.
        if let Some(iova) = unsafe { self.map_user_in_place(ptr, len) }? {
            return Ok(iova);
        }
        if let Some(iova) = self.map_user_proc(ptr, len)? {
            return Ok(iova);
        }
        self.map_new(len, PAGE as usize, Some(ptr))
    }

    fn unmap(&self, iova: Iova) -> Result<()> {
        if let Some((base, _)) = self.proc_at(iova, 1) {
            let (lo, hi) = self.proc_maps.borrow_mut().remove(&base).expect("just found");
            let span = (hi - lo) as u64;
            return self
                .client()?
                .dma_unmap(base, span)
                .map_err(|e| self.io(format!("DMA_UNMAP at IOVA {base:#x}"), e));
        }
        let a = self.unmap_any(iova)?;
        self.in_place.borrow_mut().remove(&iova.0);
        if let Some(dst) = a.user {
            // SAFETY: `map_user`'s contract keeps `dst[..len]` valid until this returns; the
            // device can no longer write the copy (its DMA_UNMAP was answered).
            unsafe { std::ptr::copy_nonoverlapping(a.mem.ptr(), dst, a.len) };
        }
        Ok(())
    }

    fn poll_progress(&self) {
        // The device runs on its own; let the simulator's threads have the CPU.
        std::thread::yield_now();
    }

    fn now_cycles(&self) -> u64 {
        match &self.clock {
            // SAFETY: 8-byte aligned offset inside a live page-sized mapping.
            Some(m) => unsafe { &*(m.as_ptr().add(pci::CLOCK_CYCLES) as *const AtomicU64) }.load(Ordering::Acquire),
            None => self.started.elapsed().as_nanos() as u64 * rnic_contract::CORE_CLOCK_MHZ / 1000,
        }
    }

    fn clock_is_simulated(&self) -> bool {
        self.clock.is_some()
    }

    fn interrupt_vectors(&self) -> u16 {
        self.eventfds.len() as u16
    }

    fn wait_interrupt(&self, vector: u16, timeout: Duration) -> Result<u64> {
        super::wait_eventfd(self.eventfds.get(usize::from(vector)), vector, timeout)
    }

    fn interrupt_fd(&self, vector: u16) -> Option<RawFd> {
        self.eventfds.get(usize::from(vector)).map(AsRawFd::as_raw_fd)
    }
}

impl Drop for VfioUserDevice {
    fn drop(&mut self) {
        // Every verbs object is gone (they hold the device). Hand the NIC back: the server resets
        // it and drops the mappings when the connection closes.
        if let Ok(c) = self.client.try_borrow() {
            let _ = c.shutdown();
        }
    }
}
