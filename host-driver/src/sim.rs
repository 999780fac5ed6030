//! The simulator backend: a [`Device`] that is one NIC of an [`rnic_sim::World`].
//!
//! The world (N Verilated NICs, their host memories, the wires) is shared as
//! `Rc<RefCell<World>>`; each [`SimDevice`] is a handle `(world, nic index)`. Every blocking
//! MMIO steps the whole world until the NIC answers, and [`Device::poll_progress`] steps it a few
//! cycles, so two hosts polling their CQs in one thread both make progress. A verb never holds
//! the borrow of the world across calls; if the application itself holds a `borrow_mut()` while
//! calling a verb, the verb fails with [`Error::Busy`] instead of panicking.
//!
//! Interrupts: each [`SimDevice::new`] gives its NIC an [`InterruptEvents`] sink (one eventfd per
//! MSI-X vector, written when the RTL's `irq_valid` is taken), replacing the sink of an earlier
//! handle of the same NIC (clones share it). [`Device::wait_interrupts`] runs the world while it
//! waits; the eventfds ([`Device::interrupt_fd`]) become readable only while something runs the
//! world (this thread's verbs, or a caller stepping it).
use std::cell::{RefCell, RefMut};
use std::rc::Rc;

pub use rnic_sim::{FaultConfig, InterruptEvents, SimConfig, SimError, World};

use crate::device::{Device, Iova};
use crate::error::{Error, IoKind, Result};

/// One NIC of a simulated world, as a [`Device`].
#[derive(Clone)]
pub struct SimDevice {
    world: Rc<RefCell<World>>,
    nic: usize,
    progress_cycles: u64,
    /// Last cycle count seen, returned while the world is borrowed (keeps time monotonic).
    last_cycles: std::cell::Cell<u64>,
    /// This NIC's MSI-X messages.
    irq: InterruptEvents,
}

impl std::fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevice").field("nic", &self.nic).field("progress_cycles", &self.progress_cycles).finish()
    }
}

/// Maps a simulator error to the driver's, with `context` saying what the driver was doing.
///
/// | [`SimError`] | [`Error`] |
/// |---|---|
/// | `IovaExhausted` | `NoMemory` (ENOMEM) |
/// | `InvalidArgument`, `Unmapped` | `InvalidArgument` (EINVAL) |
/// | `NoSuchNic` | `NoDevice` (ENODEV) |
/// | `WaveformDisabled` | `NotSupported` (EOPNOTSUPP) |
/// | `MmioTimeout` | `Io` of [`IoKind::MmioTimeout`] (EIO) |
/// | `MmioResponse` | `Io` of [`IoKind::MmioErrorResponse`] |
/// | `MmioAborted` | `Io` of [`IoKind::DeviceLost`] |
/// | `Pcap`, `Io` | `Io` of [`IoKind::File`] |
/// | `Abi`, `ModelCreate`, `Timeout`, others | `Io` of [`IoKind::Backend`] |
pub fn sim_error(context: impl Into<String>, e: SimError) -> Error {
    let context = context.into();
    let kind = match &e {
        SimError::IovaExhausted { .. } => return Error::NoMemory(format!("{context}: {e}")),
        SimError::InvalidArgument(_) | SimError::Unmapped { .. } => {
            return Error::InvalidArgument(format!("{context}: {e}"))
        }
        SimError::NoSuchNic { .. } => return Error::NoDevice(format!("{context}: {e}")),
        SimError::WaveformDisabled => {
            return Error::NotSupported(format!(
                "{context}: {e} (for the rnic tool: cargo build --release -p rnic-tools --features waveform)"
            ))
        }
        SimError::MmioTimeout { .. } => IoKind::MmioTimeout,
        SimError::MmioResponse { .. } => IoKind::MmioErrorResponse,
        SimError::MmioAborted { .. } => IoKind::DeviceLost,
        SimError::Pcap { .. } | SimError::Io(_) => IoKind::File,
        _ => IoKind::Backend,
    };
    Error::io(kind, context, e)
}

impl SimDevice {
    /// NIC `nic` of `world`. Polling advances the world by one cycle per empty poll.
    ///
    /// # Errors
    /// [`Error::NoDevice`] if the world has no NIC `nic`; [`Error::Busy`] if the world is
    /// borrowed.
    pub fn new(world: Rc<RefCell<World>>, nic: usize) -> Result<Self> {
        let count = world.try_borrow().map_err(|_| busy())?.nic_count();
        if nic >= count {
            return Err(Error::NoDevice(format!("the simulated world has {count} NICs, there is no NIC {nic}")));
        }
        let irq = InterruptEvents::new(crate::pci::MSIX_VECTORS)
            .map_err(|e| Error::io(IoKind::Backend, "creating the eventfds of the simulated NIC's MSI-X vectors", e))?;
        world
            .try_borrow_mut()
            .map_err(|_| busy())?
            .set_interrupt_sink(nic, Box::new(irq.clone()))
            .map_err(|e| sim_error("installing the interrupt sink", e))?;
        Ok(Self { world, nic, progress_cycles: 1, last_cycles: std::cell::Cell::new(0), irq })
    }

    /// Sets how many clock cycles [`Device::poll_progress`] advances the world (at least 1).
    /// Larger values make busy-polling cheaper in wall time but blur cycle measurements by up to
    /// that many cycles.
    pub fn with_progress_cycles(mut self, cycles: u64) -> Self {
        self.progress_cycles = cycles.max(1);
        self
    }

    /// The NIC index in the world.
    pub fn nic(&self) -> usize {
        self.nic
    }

    /// The shared world (for stepping, statistics, pcap capture...). Do not hold a borrow of it
    /// while calling verbs.
    pub fn world(&self) -> &Rc<RefCell<World>> {
        &self.world
    }

    fn w(&self) -> Result<RefMut<'_, World>> {
        self.world.try_borrow_mut().map_err(|_| busy())
    }
}

/// Cycles the in-process world runs between two looks at the interrupt eventfds while a verb
/// waits for an interrupt (an interrupt is seen at most this late, in simulated time).
pub const WAIT_STEP_CYCLES: u64 = 16;

fn busy() -> Error {
    Error::Busy("the simulated world is borrowed by the caller while a verb runs".into())
}

/// A world of two NICs cabled back to back (`config`), with a device for each end.
///
/// # Errors
/// The simulator's errors (model creation, invalid configuration) as [`Error::Io`].
pub fn sim_pair(config: SimConfig) -> Result<(Rc<RefCell<World>>, SimDevice, SimDevice)> {
    let world = World::new(2, config).map_err(|e| sim_error("creating a two-NIC simulated world", e))?;
    let world = Rc::new(RefCell::new(world));
    let a = SimDevice::new(Rc::clone(&world), 0)?;
    let b = SimDevice::new(Rc::clone(&world), 1)?;
    Ok((world, a, b))
}

/// One in-process simulated NIC whose Ethernet port is attached to `port` (device string
/// `sim-port:SPEC`, [`crate::DeviceSpec::SimPort`]): a world of one NIC built with `config`
/// (its faults apply to the frames this NIC sends; see [`rnic_sim::PortOptions`]), its port
/// joined to a peer in another process by a SimBricks link (`simbricks:PATH`, or
/// `simbricks-listen:PATH`, which waits for the peer), or bridged to the outside world over
/// UDP, TCP or TAP ([`rnic_sim::BridgeSpec`]). `nic` is the NIC's number in the
/// one-process world this process is half of: it picks the fault RNG stream and the label in
/// captures, so that a split run draws the same faults as the one-process run (NIC 0 is the
/// client of `rnic perf`, NIC 1 the server). Each `poll_progress` runs one cycle, as the
/// one-process world's device does, so a cycle measured on either side of a split run is the
/// cycle the one-process run measures (8 cycles per poll blurred write-lat by 8 cycles per
/// sample and cost no measurable wall time when removed).
///
/// # Errors
/// The simulator's errors as [`Error::Io`]: the port cannot be opened (no peer within the
/// connect timeout, an address in use), an invalid configuration.
pub fn port_device(port: &rnic_sim::BridgeSpec, config: SimConfig, nic: usize) -> Result<SimDevice> {
    let link = config.link.clone();
    let mut world = World::with_topology(1, config, rnic_sim::Topology::Unconnected)
        .map_err(|e| sim_error("creating a one-NIC simulated world", e))?;
    let p = port.open_for(&link).map_err(|e| sim_error(format!("opening the NIC's port {port}"), e))?;
    world
        .attach_port(0, p, rnic_sim::PortOptions { link_index: Some(nic), nic_label: Some(nic) })
        .map_err(|e| sim_error(format!("attaching the NIC's port to {port}"), e))?;
    Ok(SimDevice::new(Rc::new(RefCell::new(world)), 0)?.with_progress_cycles(1))
}

impl Device for SimDevice {
    fn name(&self) -> String {
        let n = self.world.try_borrow().map(|w| w.nic_count()).unwrap_or(0);
        format!("sim NIC {} of {n}", self.nic)
    }

    fn mmio_read32(&self, offset: u16) -> Result<u32> {
        self.w()?.mmio_read(self.nic, offset).map_err(|e| sim_error(format!("MMIO read of BAR0 {offset:#06x}"), e))
    }

    fn mmio_write32(&self, offset: u16, value: u32) -> Result<()> {
        self.w()?
            .mmio_write(self.nic, offset, value)
            .map_err(|e| sim_error(format!("MMIO write of {value:#010x} to BAR0 {offset:#06x}"), e))
    }

    fn alloc_dma(&self, len: usize, align: usize) -> Result<Iova> {
        if len == 0 || !align.is_power_of_two() {
            return Err(Error::inval(format!(
                "DMA allocation of {len} bytes aligned to {align}: need len > 0 and a power-of-two alignment"
            )));
        }
        let mut w = self.w()?;
        let mem = w.memory_mut(self.nic).map_err(|e| sim_error("DMA allocation", e))?;
        mem.alloc(len, align as u64)
            .map(|i| Iova(i.0))
            .map_err(|e| sim_error(format!("DMA allocation of {len} bytes"), e))
    }

    fn free_dma(&self, iova: Iova) -> Result<()> {
        let mut w = self.w()?;
        let mem = w.memory_mut(self.nic).map_err(|e| sim_error("DMA free", e))?;
        mem.unmap(rnic_sim::Iova(iova.0)).map_err(|e| sim_error(format!("freeing DMA memory at {iova}"), e))
    }

    fn dma_read(&self, iova: Iova, out: &mut [u8]) -> Result<()> {
        let w = self.world.try_borrow().map_err(|_| busy())?;
        let mem = w.memory(self.nic).map_err(|e| sim_error("DMA read", e))?;
        mem.read(rnic_sim::Iova(iova.0), out).map_err(|e| sim_error("host read of DMA memory", e))
    }

    fn dma_write(&self, iova: Iova, data: &[u8]) -> Result<()> {
        let mut w = self.w()?;
        let mem = w.memory_mut(self.nic).map_err(|e| sim_error("DMA write", e))?;
        mem.write(rnic_sim::Iova(iova.0), data).map_err(|e| sim_error("host write of DMA memory", e))
    }

    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<Iova> {
        let mut w = self.w()?;
        let mem = w.memory_mut(self.nic).map_err(|e| sim_error("mapping a user buffer", e))?;
        // SAFETY: our caller promises what `map_external` needs: `ptr[..len]` stays valid and
        // unreferenced until `unmap` of the returned IOVA (this trait's contract is the same).
        let iova = unsafe { mem.map_external(ptr, len) };
        iova.map(|i| Iova(i.0)).map_err(|e| sim_error(format!("mapping a user buffer of {len} bytes"), e))
    }

    fn unmap(&self, iova: Iova) -> Result<()> {
        let mut w = self.w()?;
        let mem = w.memory_mut(self.nic).map_err(|e| sim_error("unmapping a user buffer", e))?;
        mem.unmap(rnic_sim::Iova(iova.0)).map_err(|e| sim_error(format!("unmapping the user buffer at {iova}"), e))
    }

    fn poll_progress(&self) {
        if let Ok(mut w) = self.world.try_borrow_mut() {
            w.step_n(self.progress_cycles);
        }
    }

    fn clock_is_simulated(&self) -> bool {
        true
    }

    fn interrupt_vectors(&self) -> u16 {
        self.irq.vectors()
    }

    fn interrupt_fd(&self, vector: u16) -> Option<std::os::fd::RawFd> {
        self.irq.fd(vector)
    }

    fn wait_interrupt(&self, vector: u16, timeout: std::time::Duration) -> Result<u64> {
        if vector >= self.irq.vectors() {
            return Err(Error::inval(format!("the simulated NIC has no MSI-X vector {vector}")));
        }
        Ok(self.wait_interrupts(&[vector], timeout)?.len() as u64)
    }

    /// Runs the world in steps of [`WAIT_STEP_CYCLES`] until one of `vectors` fired or
    /// `timeout` of wall time passed.
    fn wait_interrupts(&self, vectors: &[u16], timeout: std::time::Duration) -> Result<Vec<u16>> {
        let start = std::time::Instant::now();
        loop {
            let fired: Vec<u16> = vectors.iter().copied().filter(|&v| self.irq.take(v) > 0).collect();
            if !fired.is_empty() || start.elapsed() >= timeout {
                return Ok(fired);
            }
            self.w()?.step_n(WAIT_STEP_CYCLES);
        }
    }

    fn now_cycles(&self) -> u64 {
        if let Ok(w) = self.world.try_borrow() {
            self.last_cycles.set(w.cycles());
        }
        self.last_cycles.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Errno;

    #[test]
    fn simulator_errors_map_by_variant() {
        let cases = [
            (SimError::IovaExhausted { len: 1 << 40 }, Errno::ENOMEM, None),
            (SimError::InvalidArgument("zero length".into()), Errno::EINVAL, None),
            (SimError::Unmapped { iova: 0x1000, len: 8 }, Errno::EINVAL, None),
            (SimError::NoSuchNic { index: 3, count: 2 }, Errno::ENODEV, None),
            (SimError::WaveformDisabled, Errno::EOPNOTSUPP, None),
            (
                SimError::MmioTimeout { nic: 0, kind: "read", addr: 0x10, cycles: 9 },
                Errno::EIO,
                Some(IoKind::MmioTimeout),
            ),
            (
                SimError::MmioResponse { nic: 0, kind: "write", addr: 0x10, resp: 3 },
                Errno::EIO,
                Some(IoKind::MmioErrorResponse),
            ),
            (SimError::MmioAborted { nic: 1, addr: 0x10 }, Errno::EIO, Some(IoKind::DeviceLost)),
            (SimError::Pcap { path: "x.pcap".into(), message: "disk full".into() }, Errno::EIO, Some(IoKind::File)),
            (SimError::ModelCreate, Errno::EIO, Some(IoKind::Backend)),
        ];
        for (e, errno, kind) in cases {
            let shown = e.to_string();
            let d = sim_error("doing it", e);
            assert_eq!((d.errno(), d.io_kind()), (errno, kind), "{d}");
            assert!(d.to_string().contains("doing it") && d.to_string().contains(&shown), "{d}");
        }
    }

    #[test]
    fn an_exhausted_iova_space_is_enomem() {
        let (_world, dev, _) = sim_pair(SimConfig::default()).unwrap();
        let mut byte = 0u8;
        // A mapping of usize::MAX bytes cannot fit in the IOVA space; it is refused before
        // anything is mapped, so the one-byte buffer is never read past.
        let e = unsafe { dev.map_user(&mut byte, usize::MAX) }.unwrap_err();
        assert_eq!(e.errno(), Errno::ENOMEM, "{e}");
        assert!(dev.alloc_dma(4096, 4096).is_ok(), "a failed mapping leaves the space usable");
    }
}
