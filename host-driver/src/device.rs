//! The [`Device`] trait: everything the driver needs from a NIC and its host, and nothing more.
//!
//! A backend gives the driver what a PCIe function gives a kernel or user-space driver on a real
//! machine: 32-bit access to the BAR0 registers (MMIO), host memory the NIC can reach by DMA at
//! an I/O virtual address ([`Iova`]), a way to map the application's own buffers for DMA, and a
//! notion of time. The driver builds every queue entry and context record itself; the device does
//! the NIC's work in its RTL. Backends:
//! - `rnic::sim::SimDevice` (cargo feature `sim`): one NIC of an in-process Verilator
//!   simulation (`rnic-sim`).
//! - `rnic::backend::VfioUserDevice` (feature `vfio-user`): a NIC behind a vfio-user socket.
//! - `rnic::backend::VfioDevice` (feature `vfio`): a PCI function bound to vfio-pci (a board,
//!   or the simulated NIC inside a QEMU guest).
//!
//! [`crate::backend::open_device`] picks one from a device string.
//!
//! A backend reports its failures as [`Error::Io`] with an [`crate::IoKind`] (MMIO timeout,
//! error response, device lost...), never as a message to be parsed.
use std::rc::Rc;

use crate::error::{Error, Result};

/// An I/O virtual address: the address the NIC uses for DMA (after the IOMMU), as written into
/// WQEs, context records and key-table entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Iova(pub u64);

impl Iova {
    /// The address as a number.
    pub fn addr(self) -> u64 {
        self.0
    }

    /// This address plus `bytes`.
    pub fn offset(self, bytes: u64) -> Iova {
        Iova(self.0.wrapping_add(bytes))
    }
}

impl std::fmt::Display for Iova {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A NIC as the driver sees it: BAR0 registers, DMA memory, progress and time.
///
/// All methods take `&self` (backends use interior mutability): verbs objects share one device
/// through an `Rc<dyn Device>`. Devices are single-threaded (not `Send`), like a verbs context
/// used from one thread. No method panics on bad input; errors are [`Error`]s, usually
/// [`Error::Io`] (EIO) for a backend failure.
pub trait Device {
    /// A short human-readable name ("sim NIC 0 of 2", "0000:03:00.0").
    fn name(&self) -> String;

    /// Reads the 32-bit BAR0 register at byte offset `offset` (see [`rnic_contract::regs`]).
    /// Only for setup and diagnostics: the fast path never reads MMIO.
    ///
    /// # Errors
    /// [`Error::Io`] if the read is not answered.
    fn mmio_read32(&self, offset: u16) -> Result<u32>;

    /// Writes the 32-bit BAR0 register at byte offset `offset`. Returns once the device has
    /// accepted the write (for context commands: once the tables took it, see
    /// [`rnic_contract::regs::CMD`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the write is not answered or answered with an error.
    fn mmio_write32(&self, offset: u16, value: u32) -> Result<()>;

    /// Allocates `len` bytes of zeroed host memory the NIC can reach by DMA, aligned to `align`
    /// bytes (a power of two), for rings and other driver structures. Free with
    /// [`free_dma`](Self::free_dma); [`DmaBuffer`] does that on drop.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `len == 0` or a bad alignment, [`Error::NoMemory`] when no
    /// memory or IOVA space is left.
    fn alloc_dma(&self, len: usize, align: usize) -> Result<Iova>;

    /// Frees memory from [`alloc_dma`](Self::alloc_dma). The NIC's later DMA to it fails.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `iova` is not the start of an allocation.
    fn free_dma(&self, iova: Iova) -> Result<()>;

    /// Copies `out.len()` bytes of DMA memory at `iova` into `out` (a CPU read of a ring).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is not inside one allocation or mapping.
    fn dma_read(&self, iova: Iova, out: &mut [u8]) -> Result<()>;

    /// Copies `data` into DMA memory at `iova` (a CPU write of a WQE).
    ///
    /// # Errors
    /// As [`dma_read`](Self::dma_read).
    fn dma_write(&self, iova: Iova, data: &[u8]) -> Result<()>;

    /// Maps the caller's buffer `ptr[..len]` for DMA at a new contiguous IOVA, so the NIC reads
    /// and writes it in place (memory registration, ARCHITECTURE decision 4).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null pointer or `len == 0`; [`Error::NoMemory`] when no
    /// IOVA space is left.
    ///
    /// # Safety
    /// Until [`unmap`](Self::unmap) of the returned IOVA returns `Ok`, `ptr[..len]` must stay
    /// allocated and valid for reads and writes, and nothing may hold a Rust reference to it:
    /// the NIC reads and writes it behind the compiler's back, whenever the device makes
    /// progress (any method of this trait may make progress). Plain copies through raw
    /// pointers between device calls are fine.
    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<Iova>;

    /// Removes a mapping made by [`map_user`](Self::map_user). After `Ok`, the NIC can no longer
    /// reach the buffer (its DMA to the IOVA fails) and the buffer belongs to its owner again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if no mapping starts at `iova`.
    fn unmap(&self, iova: Iova) -> Result<()>;

    /// Lets the device make progress while the caller spins on host memory (a CQE's owner bit).
    /// On hardware a CPU spin hint; in the simulator it advances the world by a few clock cycles
    /// (see `rnic::sim::SimDevice::with_progress_cycles`). Never fails.
    fn poll_progress(&self);

    /// The device's notion of time in NIC core clock cycles ([`rnic_contract::CORE_CLOCK_MHZ`]),
    /// for bounded waits and measurements. Monotonic.
    fn now_cycles(&self) -> u64;

    /// True when [`now_cycles`](Self::now_cycles) is a simulator's clock (the in-process world,
    /// or the clock page of `rnic sim serve` over vfio-user or in a QEMU guest), false when it
    /// is wall time at the contract clock.
    fn clock_is_simulated(&self) -> bool {
        false
    }

    /// MSI-X vectors whose interrupts reach this process (as eventfds in the VFIO backends);
    /// 0 when the backend delivers none (the in-process simulator).
    fn interrupt_vectors(&self) -> u16 {
        0
    }

    /// Waits until MSI-X vector `vector` fires or `timeout` passes. Returns the number of
    /// interrupts consumed (an eventfd counts several as one read), 0 on timeout.
    ///
    /// # Errors
    /// [`Error::NotSupported`] if the backend delivers no interrupts;
    /// [`Error::InvalidArgument`] for a vector the device does not have.
    fn wait_interrupt(&self, vector: u16, timeout: std::time::Duration) -> Result<u64> {
        let _ = timeout;
        Err(Error::NotSupported(format!("{} delivers no interrupts (MSI-X vector {vector})", self.name())))
    }

    /// The file descriptor that becomes readable when vector `vector` fires (an eventfd, for
    /// poll/epoll), if the backend has one.
    fn interrupt_fd(&self, vector: u16) -> Option<std::os::fd::RawFd> {
        let _ = vector;
        None
    }

    /// Waits until at least one of `vectors` fires or `timeout` passes, and returns the vectors
    /// that fired (each once, however many interrupts it counted; empty on timeout). The
    /// interrupts returned are consumed. The default polls the vectors' eventfds with poll(2)
    /// (the VFIO backends, whose device runs by itself); a backend whose device advances only
    /// when called (the in-process simulator) overrides it to run the device while it waits.
    ///
    /// # Errors
    /// [`Error::NotSupported`] if a vector has no eventfd; [`Error::Io`] if poll(2) fails.
    fn wait_interrupts(&self, vectors: &[u16], timeout: std::time::Duration) -> Result<Vec<u16>> {
        use std::os::fd::BorrowedFd;
        let mut pfds = Vec::with_capacity(vectors.len());
        for &v in vectors {
            let fd = self.interrupt_fd(v).ok_or_else(|| {
                Error::NotSupported(format!("{} delivers no interrupts on MSI-X vector {v}", self.name()))
            })?;
            pfds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `pfds` is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(Vec::new());
            }
            return Err(Error::io(crate::error::IoKind::Backend, "poll(2) of MSI-X eventfds", e));
        }
        let mut fired = Vec::new();
        for (p, &v) in pfds.iter().zip(vectors) {
            if p.revents & libc::POLLIN != 0 {
                // SAFETY: the descriptor belongs to the backend and stays open during this call.
                let fd = unsafe { BorrowedFd::borrow_raw(p.fd) };
                let mut b = [0u8; 8];
                // Non-blocking eventfd: a read empties the counter (EAGAIN if another reader won).
                if read_eventfd(fd, &mut b) {
                    fired.push(v);
                }
            }
        }
        Ok(fired)
    }
}

/// Reads 8 bytes from a non-blocking eventfd; true if it counted something.
fn read_eventfd(fd: std::os::fd::BorrowedFd<'_>, b: &mut [u8; 8]) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `b` is 8 writable bytes; the descriptor is valid for the call.
    let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
    n == 8 && u64::from_ne_bytes(*b) > 0
}

/// Memory from [`Device::alloc_dma`] that is freed when dropped. Holds the device, so it may
/// outlive the verbs object that allocated it.
pub struct DmaBuffer {
    dev: Rc<dyn Device>,
    iova: Iova,
    len: usize,
}

impl std::fmt::Debug for DmaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaBuffer").field("iova", &self.iova).field("len", &self.len).finish()
    }
}

impl DmaBuffer {
    /// Allocates `len` zeroed bytes aligned to `align` on `dev`.
    ///
    /// # Errors
    /// As [`Device::alloc_dma`].
    pub fn new(dev: &Rc<dyn Device>, len: usize, align: usize) -> Result<Self> {
        let iova = dev.alloc_dma(len, align)?;
        Ok(Self { dev: Rc::clone(dev), iova, len })
    }

    /// The buffer's IOVA (what the NIC is told).
    pub fn iova(&self) -> Iova {
        self.iova
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: allocations have at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::inval(format!(
                "DMA buffer access at offset {offset}, {len} bytes, outside its {} bytes",
                self.len
            ))),
        }
    }

    /// Copies bytes at `offset` into `out`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is outside the buffer; backend errors.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        self.dev.dma_read(self.iova.offset(offset as u64), out)
    }

    /// Copies `data` to `offset`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is outside the buffer; backend errors.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        self.dev.dma_write(self.iova.offset(offset as u64), data)
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        // Nothing useful can be done with an error here: the memory is the backend's.
        let _ = self.dev.free_dma(self.iova);
    }
}
