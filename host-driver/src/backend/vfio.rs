//! The `vfio:DDDD:BB:DD.F` backend: a PCI function bound to `vfio-pci`, through the kernel's VFIO
//! (type-1 IOMMU) with the `pci-driver` crate: a board in a host with an IOMMU, or the simulated
//! NIC inside a QEMU guest (`vfio-user-pci` + an emulated Intel IOMMU, docs/guests.md §2).
//!
//! - **MMIO**: BAR0 mmapped; 32-bit volatile loads and stores.
//! - **DMA memory**: each allocation is a memfd mmapped here and mapped in the IOMMU
//!   (`VFIO_IOMMU_MAP_DMA`) at a new IOVA below 2^39. Application buffers are mapped in place:
//!   the pages that hold `[ptr, ptr + len)` are mapped at a new page-aligned IOVA and the returned
//!   IOVA points at `ptr`'s byte in its page (an IOMMU maps whole pages, so the rest of the first
//!   and last page are reachable too, as with any VFIO driver). The kernel pins them, counted
//!   against `ulimit -l`.
//! - **Doorbell ordering**: descriptor stores, then a sequentially consistent fence (`mfence` on
//!   x86-64, `dmb ish` on Arm), then the doorbell store to the uncached BAR mapping.
//! - **Interrupts**: MSI-X vectors 0..n bound to eventfds (`VFIO_DEVICE_SET_IRQS`).
//! - **Time**: wall time at the contract's clock, or, for the simulated NIC in a guest, the
//!   simulator's clock page (BAR4).
//!
//! Not testable on a host without VFIO; exercised in the QEMU guest of docs/guests.md.
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pci_driver::backends::vfio::VfioPciDevice;
use pci_driver::device::PciDevice;
use pci_driver::regions::{MappedOwningPciRegion, Permissions};

use super::shared_mem::{Alloc, DmaSpace, SharedMem, PAGE};
use super::OpenError;
use crate::device::{Device, Iova};
use crate::error::{Error, IoKind, Result};
use crate::pci;

/// One PCI function bound to vfio-pci. See the module documentation.
pub struct VfioDevice {
    bdf: String,
    dev: VfioPciDevice,
    bar0: MappedOwningPciRegion,
    clock: Option<MappedOwningPciRegion>,
    space: RefCell<DmaSpace>,
    /// Mapped user buffers: IOVA → (page-aligned IOVA base, span).
    users: RefCell<std::collections::BTreeMap<u64, (u64, u64)>>,
    /// Mapped user buffers: IOVA → (buffer, length), for CPU access through the device.
    user_bufs: RefCell<std::collections::BTreeMap<u64, (*mut u8, usize)>>,
    started: Instant,
    eventfds: Vec<File>,
}

impl std::fmt::Debug for VfioDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioDevice").field("bdf", &self.bdf).finish_non_exhaustive()
    }
}

fn sysfs(bdf: &str) -> PathBuf {
    PathBuf::from("/sys/bus/pci/devices").join(bdf)
}

/// The checks that turn the usual setup mistakes into [`OpenError`]s before VFIO is touched.
fn preflight(bdf: &str) -> std::result::Result<(), OpenError> {
    let dir = sysfs(bdf);
    if !dir.exists() {
        return Err(OpenError::NoSuchPciDevice { bdf: bdf.to_owned() });
    }
    let group = std::fs::read_link(dir.join("iommu_group"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| OpenError::NoIommuGroup { bdf: bdf.to_owned() })?;
    let driver = std::fs::read_link(dir.join("driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    if driver.as_deref() != Some("vfio-pci") {
        return Err(OpenError::NotBoundToVfio { bdf: bdf.to_owned(), driver });
    }
    let node = PathBuf::from("/dev/vfio").join(&group);
    match std::fs::OpenOptions::new().read(true).write(true).open(&node) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(OpenError::VfioPermission { path: node }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(OpenError::NoIommuGroup { bdf: bdf.to_owned() }),
        // Busy (another process has the group) and the like: let VFIO report it.
        Err(_) => Ok(()),
    }
}

/// RLIMIT_MEMLOCK in bytes (u64::MAX for unlimited).
fn memlock_limit() -> u64 {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit with a valid out pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return u64::MAX;
    }
    r.rlim_cur
}

impl VfioDevice {
    /// Opens the PCI function `bdf` (`DDDD:BB:DD.F`), maps BAR0, enables memory space and bus
    /// mastering and binds MSI-X vectors to eventfds.
    ///
    /// # Errors
    /// `Error::Open` with [`OpenError::NoSuchPciDevice`], [`OpenError::NoIommuGroup`],
    /// [`OpenError::NotBoundToVfio`], [`OpenError::VfioPermission`] or [`OpenError::Vfio`].
    pub fn open(bdf: &str) -> Result<Self> {
        preflight(bdf)?;
        let vfio = |op: &'static str| {
            move |source: std::io::Error| Error::from(OpenError::Vfio { bdf: bdf.to_owned(), op, source })
        };
        let dev = VfioPciDevice::open(sysfs(bdf)).map_err(vfio("open"))?;
        let bar = dev
            .bar(pci::REGS_BAR as usize)
            .ok_or_else(|| vfio("BAR0")(std::io::Error::other("the device has no BAR0")))?;
        let bar0 = bar.map(..pci::REGS_BAR_BYTES, Permissions::ReadWrite).map_err(vfio("mmap of BAR0"))?;
        let cmd = dev.config().command();
        cmd.memory_space_enable().write(true).map_err(vfio("config write"))?;
        cmd.bus_master_enable().write(true).map_err(vfio("config write"))?;
        let clock = dev
            .bar(pci::CLOCK_BAR as usize)
            .and_then(|b| b.map(..pci::CLOCK_BAR_BYTES, Permissions::Read).ok())
            .filter(|m| {
                // SAFETY: 8-byte aligned offset inside the page-sized mapping.
                unsafe { &*(m.as_ptr().add(pci::CLOCK_MAGIC) as *const AtomicU64) }.load(Ordering::Acquire)
                    == pci::CLOCK_MAGIC_VALUE
            });
        let interrupts = dev.interrupts();
        let msix = interrupts.msi_x();
        let vectors = msix.max().min(usize::from(pci::MSIX_VECTORS));
        let mut eventfds: Vec<File> = Vec::with_capacity(vectors);
        for _ in 0..vectors {
            // SAFETY: eventfd(2); checked.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(vfio("eventfd")(std::io::Error::last_os_error()));
            }
            // SAFETY: a fresh descriptor.
            eventfds.push(unsafe { File::from_raw_fd(fd) });
        }
        if vectors > 0 {
            let fds: Vec<RawFd> = eventfds.iter().map(AsRawFd::as_raw_fd).collect();
            msix.enable(&fds).map_err(vfio("MSI-X enable"))?;
        }
        Ok(Self {
            bdf: bdf.to_owned(),
            dev,
            bar0,
            clock,
            space: RefCell::new(DmaSpace::new()),
            users: RefCell::new(Default::default()),
            user_bufs: RefCell::new(Default::default()),
            started: Instant::now(),
            eventfds,
        })
    }

    fn check_offset(&self, offset: u16) -> Result<*mut u32> {
        if !offset.is_multiple_of(4) {
            return Err(Error::InvalidArgument(format!("BAR0 offset {offset:#x} is not 32-bit aligned")));
        }
        // SAFETY: offset < 64 KiB = the mapping's length.
        Ok(unsafe { self.bar0.as_mut_ptr().add(usize::from(offset)) } as *mut u32)
    }

    fn iommu_map(&self, iova: u64, span: u64, ptr: *const u8) -> Result<()> {
        // SAFETY: `ptr[..span]` is a live mapping that stays until `iommu_unmap` (our memfds) or
        // until `unmap` (user buffers, by `map_user`'s contract).
        unsafe { self.dev.iommu().map(iova, span as usize, ptr, Permissions::ReadWrite) }.map_err(|e| {
            let limit = memlock_limit();
            if e.raw_os_error() == Some(libc::ENOMEM) && limit != u64::MAX {
                Error::from(OpenError::MemlockLimit { limit_kib: limit / 1024, needed_kib: span.div_ceil(1024) })
            } else {
                Error::io(
                    IoKind::Backend,
                    format!("{}: VFIO_IOMMU_MAP_DMA of {span} bytes at IOVA {iova:#x}", self.bdf),
                    e,
                )
            }
        })
    }

    fn iommu_unmap(&self, iova: u64, span: u64) -> Result<()> {
        self.dev
            .iommu()
            .unmap(iova, span as usize)
            .map_err(|e| Error::io(IoKind::Backend, format!("{}: VFIO_IOMMU_UNMAP_DMA at IOVA {iova:#x}", self.bdf), e))
    }
}

impl Device for VfioDevice {
    fn name(&self) -> String {
        format!("vfio:{}", self.bdf)
    }

    fn mmio_read32(&self, offset: u16) -> Result<u32> {
        let p = self.check_offset(offset)?;
        // SAFETY: aligned, inside the BAR mapping.
        Ok(u32::from_le(unsafe { p.read_volatile() }))
    }

    fn mmio_write32(&self, offset: u16, value: u32) -> Result<()> {
        let p = self.check_offset(offset)?;
        fence(Ordering::SeqCst);
        // SAFETY: aligned, inside the BAR mapping.
        unsafe { p.write_volatile(value.to_le()) };
        Ok(())
    }

    fn alloc_dma(&self, len: usize, align: usize) -> Result<Iova> {
        let (iova, span) = self.space.borrow_mut().reserve(len, align)?;
        let mem =
            SharedMem::new(span, "rnic-dma").map_err(|e| Error::NoMemory(format!("memfd of {span} bytes: {e}")))?;
        self.iommu_map(iova, span, mem.ptr())?;
        self.space.borrow_mut().allocs.insert(iova, Alloc { mem, len, span, user: None });
        Ok(Iova(iova))
    }

    fn free_dma(&self, iova: Iova) -> Result<()> {
        let span = self.space.borrow().allocs.get(&iova.0).map(|a| a.span);
        let span = span.ok_or_else(|| Error::InvalidArgument(format!("no DMA allocation starts at IOVA {iova}")))?;
        self.iommu_unmap(iova.0, span)?;
        self.space.borrow_mut().allocs.remove(&iova.0);
        Ok(())
    }

    fn dma_read(&self, iova: Iova, out: &mut [u8]) -> Result<()> {
        fence(Ordering::Acquire);
        if let Some(p) = self.user_ptr(iova, out.len()) {
            // SAFETY: inside a mapped user buffer (map_user's contract keeps it valid).
            unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
            return Ok(());
        }
        self.space.borrow().read(iova, out)
    }

    fn dma_write(&self, iova: Iova, data: &[u8]) -> Result<()> {
        if let Some(p) = self.user_ptr(iova, data.len()) {
            // SAFETY: as in `dma_read`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
            return Ok(());
        }
        self.space.borrow().write(iova, data)
    }

    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<Iova> {
        if ptr.is_null() || len == 0 {
            return Err(Error::InvalidArgument("mapping a null or empty buffer".into()));
        }
        let in_page = ptr as u64 % PAGE;
        let pages = (in_page + len as u64).div_ceil(PAGE) * PAGE;
        let (base, span) = self.space.borrow_mut().reserve(pages as usize, PAGE as usize)?;
        // SAFETY: the page containing `ptr` starts `in_page` bytes before it.
        self.iommu_map(base, span, unsafe { ptr.sub(in_page as usize) })?;
        let iova = base + in_page;
        self.users.borrow_mut().insert(iova, (base, span));
        self.user_bufs.borrow_mut().insert(iova, (ptr, len));
        Ok(Iova(iova))
    }

    fn unmap(&self, iova: Iova) -> Result<()> {
        let (base, span) = *self
            .users
            .borrow()
            .get(&iova.0)
            .ok_or_else(|| Error::InvalidArgument(format!("no user buffer is mapped at IOVA {iova}")))?;
        self.iommu_unmap(base, span)?;
        self.users.borrow_mut().remove(&iova.0);
        self.user_bufs.borrow_mut().remove(&iova.0);
        Ok(())
    }

    fn poll_progress(&self) {
        std::hint::spin_loop();
    }

    fn now_cycles(&self) -> u64 {
        match &self.clock {
            // SAFETY: 8-byte aligned offset inside the page-sized mapping.
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

impl VfioDevice {
    /// The CPU address of `[iova, iova + len)` inside a mapped user buffer, if it is one.
    fn user_ptr(&self, iova: Iova, len: usize) -> Option<*mut u8> {
        let bufs = self.user_bufs.borrow();
        let (&start, &(ptr, blen)) = bufs.range(..=iova.0).next_back()?;
        let off = iova.0 - start;
        (off + len as u64 <= blen as u64).then(|| {
            // SAFETY: inside the buffer.
            unsafe { ptr.add(off as usize) }
        })
    }
}

impl Drop for VfioDevice {
    fn drop(&mut self) {
        let _ = self.dev.interrupts().msi_x().disable();
    }
}
