//! `rnic sim serve`: every NIC of one simulated [`World`] as a vfio-user PCI function on its own
//! Unix socket, `DIR/nicK.sock`.
//!
//! Threads:
//! - **the world thread** owns the [`World`] (it is not `Send`: it is built there). While at
//!   least one client is attached it steps the world freely, [`ServeOptions::batch_cycles`] at a
//!   time, and between batches serves the requests of the socket threads (MMIO, reset) and
//!   publishes the cycle count in every NIC's clock page. With no client attached it sleeps
//!   until a request comes.
//! - **one server thread per socket** runs `vfio_user::Server::run` (one client at a time; when
//!   the client leaves, the NIC is reset, its DMA mappings and eventfds dropped, and the socket
//!   accepts the next client).
//!
//! DMA goes straight from the world thread into the client's memory through the NIC's
//! [`SharedIovaTable`]; MSI-X messages go from the world thread to the client's eventfds through
//! the NIC's [`Msix`]. BAR0 accesses are the NIC's AXI4-Lite MMIO (`World::mmio_read` /
//! `mmio_write`): a failed read (MMIO timeout or error response) answers all ones, as a PCIe
//! read that completes with an error does, because the vfio-user client cannot receive an error
//! for a region read.
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memmap2::{MmapOptions, MmapRaw};
use rnic::pci;
use rnic_sim::{BridgeSpec, InterruptSink, PortOptions, SimConfig, SimError, Topology, World};
use vfio_bindings::bindings::vfio::*;
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, Server, ServerBackend, ServerRegion, SparseArea};

use crate::config_space::ConfigSpace;
use crate::iova::SharedIovaTable;
use crate::msix::Msix;

/// What `rnic sim serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// NICs in the world (one socket each).
    pub nics: usize,
    /// Directory of the sockets `nicK.sock` (created if missing).
    pub socket_dir: PathBuf,
    /// Simulator configuration (link, faults, latencies).
    pub config: SimConfig,
    /// How the NICs are cabled.
    pub topology: Topology,
    /// Cycles stepped between two looks at the request queue while clients are attached
    /// (larger: faster simulation, slower MMIO).
    pub batch_cycles: u64,
    /// Print the speed every this often (None: only at exit).
    pub report_every: Option<Duration>,
    /// Bridged wires: NIC `k`'s Ethernet port is attached to `bridges[k]` (docs/interop.md).
    /// Those NICs must be unconnected ([`Topology::Unconnected`]); the world's fault
    /// injection applies to both directions of each bridge.
    pub bridges: Vec<BridgeSpec>,
    /// Capture every wire (in-process links and bridges, both directions) into this pcap file,
    /// finished when the server stops. Timestamps are simulated time.
    pub pcap: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            nics: 2,
            socket_dir: PathBuf::from("."),
            config: SimConfig::default(),
            topology: Topology::BackToBack,
            batch_cycles: 1,
            report_every: None,
            bridges: Vec::new(),
            pcap: None,
        }
    }
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The socket directory could not be created.
    #[error("cannot create the socket directory {path}: {source} (hint: choose a directory you can write, e.g. --socket-dir /tmp/rnic)")]
    SocketDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A socket path is in use by a live server.
    #[error("{path} is in use by a running server (hint: stop it, or choose another --socket-dir)")]
    SocketInUse {
        /// The socket.
        path: PathBuf,
    },
    /// The socket could not be created.
    #[error("cannot listen on {path}: {message}")]
    Listen {
        /// The socket.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The simulated world could not be built.
    #[error("cannot build the simulated world: {0}")]
    World(#[source] SimError),
    /// Shared memory for a clock page could not be made.
    #[error("cannot create the clock page: {0}")]
    ClockPage(#[source] io::Error),
    /// `nics` is 0.
    #[error("--nics must be at least 1")]
    NoNics,
    /// More bridges than NICs.
    #[error("{bridges} bridges for {nics} NICs: at most one bridge per NIC")]
    TooManyBridges {
        /// Bridges asked for.
        bridges: usize,
        /// NICs served.
        nics: usize,
    },
}

/// Speed of the world so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServeStats {
    /// World cycles (reset included).
    pub cycles: u64,
    /// Wall seconds spent stepping.
    pub wall_seconds: f64,
    /// Cycles per wall second of stepping.
    pub cycles_per_second: f64,
    /// Simulated time over wall time (cycles × 4 ns / stepping seconds).
    pub sim_to_wall: f64,
    /// MSI-X messages delivered to eventfds, over all NICs.
    pub msix_delivered: u64,
    /// Clients attached now.
    pub attached: usize,
}

impl std::fmt::Display for ServeStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles in {:.2} s stepping: {:.0} cycles/s, sim/wall time {:.3e}; {} MSI-X delivered; {} clients attached",
            self.cycles, self.wall_seconds, self.cycles_per_second, self.sim_to_wall, self.msix_delivered, self.attached
        )
    }
}

enum Request {
    Mmio { nic: usize, addr: u16, write: Option<u32>, reply: SyncSender<Result<u32, SimError>> },
    Reset { nic: usize, reply: SyncSender<()> },
    Attach { nic: usize, attached: bool },
    Msix { nic: usize, vector: u16 },
    Stats { reply: SyncSender<ServeStats> },
    Stop,
}

/// The clock page of one NIC: shared memory the world thread writes its cycle count into.
struct ClockPage {
    file: File,
    map: MmapRaw,
}

impl ClockPage {
    fn new(nic: usize) -> io::Result<Self> {
        let name = std::ffi::CString::new(format!("rnic-clock-nic{nic}")).map_err(io::Error::other)?;
        // SAFETY: memfd_create with a valid C string; the result is checked.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(pci::CLOCK_BAR_BYTES)?;
        let map = MmapOptions::new().len(pci::CLOCK_BAR_BYTES as usize).map_raw(&file)?;
        let page = Self { file, map };
        page.word(pci::CLOCK_MAGIC).store(pci::CLOCK_MAGIC_VALUE, Ordering::Release);
        Ok(page)
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: offsets used are 8-byte aligned and inside the page-aligned 4 KiB mapping,
        // which lives as long as `self`; AtomicU64 has the layout of u64.
        unsafe { &*(self.map.as_mut_ptr().add(offset) as *const AtomicU64) }
    }

    fn read(&self, offset: u64, out: &mut [u8]) {
        let c = self.word(pci::CLOCK_CYCLES).load(Ordering::Acquire).to_le_bytes();
        let m = pci::CLOCK_MAGIC_VALUE.to_le_bytes();
        for (i, o) in out.iter_mut().enumerate() {
            *o = match offset + i as u64 {
                a @ 0..=7 => c[a as usize],
                a @ 8..=15 => m[a as usize - 8],
                _ => 0,
            };
        }
    }
}

struct MsixSink(Arc<Mutex<Msix>>);

impl InterruptSink for MsixSink {
    fn msix(&mut self, vector: u16) {
        lock(&self.0).raise(vector);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running `rnic sim serve`.
pub struct ServeHandle {
    requests: Sender<Request>,
    world: Option<JoinHandle<()>>,
    sockets: Vec<PathBuf>,
    msix: Vec<Arc<Mutex<Msix>>>,
    stopped: Arc<AtomicBool>,
}

impl ServeHandle {
    /// The socket of NIC `k`.
    pub fn socket(&self, k: usize) -> Option<&Path> {
        self.sockets.get(k).map(PathBuf::as_path)
    }

    /// The world's speed so far.
    pub fn stats(&self) -> Option<ServeStats> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.requests.send(Request::Stats { reply: tx }).ok()?;
        rx.recv().ok()
    }

    /// Raises MSI-X vector `vector` of NIC `nic` on the world thread, through the same hook the
    /// RTL's interrupt port will drive ([`rnic_sim::Nic::signal_msix`]): a stand-in trigger for
    /// tests until that port exists.
    pub fn trigger_msix(&self, nic: usize, vector: u16) {
        let _ = self.requests.send(Request::Msix { nic, vector });
    }

    /// MSI-X messages delivered to NIC `nic`'s client so far.
    pub fn msix_delivered(&self, nic: usize) -> u64 {
        self.msix.get(nic).map_or(0, |m| lock(m).delivered())
    }

    /// Stops the world thread and removes the sockets (the socket threads end with the process).
    /// Returns the final statistics.
    pub fn stop(mut self) -> Option<ServeStats> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Option<ServeStats> {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return None;
        }
        let stats = self.stats();
        let _ = self.requests.send(Request::Stop);
        if let Some(w) = self.world.take() {
            let _ = w.join();
        }
        for s in &self.sockets {
            let _ = std::fs::remove_file(s);
        }
        stats
    }
}

impl Drop for ServeHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Removes `path` if it is a socket nobody listens on; refuses if a server answers.
fn clear_stale_socket(path: &Path) -> Result<(), ServeError> {
    if !path.exists() {
        return Ok(());
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(ServeError::SocketInUse { path: path.to_owned() }),
        Err(_) => {
            std::fs::remove_file(path).map_err(|e| ServeError::Listen { path: path.to_owned(), message: e.to_string() })
        }
    }
}

/// Starts serving: builds the world on its thread, creates the sockets and their threads, and
/// returns once every socket listens.
///
/// # Errors
/// [`ServeError`]: no NICs, a socket directory or socket that cannot be made or is in use, a
/// world that cannot be built.
pub fn serve(opts: &ServeOptions) -> Result<ServeHandle, ServeError> {
    if opts.nics == 0 {
        return Err(ServeError::NoNics);
    }
    if opts.bridges.len() > opts.nics {
        return Err(ServeError::TooManyBridges { bridges: opts.bridges.len(), nics: opts.nics });
    }
    std::fs::create_dir_all(&opts.socket_dir)
        .map_err(|source| ServeError::SocketDir { path: opts.socket_dir.clone(), source })?;
    let sockets: Vec<PathBuf> = (0..opts.nics).map(|k| opts.socket_dir.join(format!("nic{k}.sock"))).collect();
    for s in &sockets {
        clear_stale_socket(s)?;
    }
    let tables: Vec<SharedIovaTable> = (0..opts.nics).map(|_| SharedIovaTable::default()).collect();
    let msix: Vec<Arc<Mutex<Msix>>> = (0..opts.nics).map(|_| Arc::new(Mutex::new(Msix::new()))).collect();
    let clocks: Vec<Arc<ClockPage>> = (0..opts.nics)
        .map(|k| ClockPage::new(k).map(Arc::new))
        .collect::<io::Result<_>>()
        .map_err(ServeError::ClockPage)?;

    let (tx, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let world_thread = {
        let (opts, tables, msix, clocks) = (opts.clone(), tables.clone(), msix.clone(), clocks.clone());
        std::thread::Builder::new()
            .name("rnic-world".into())
            .spawn(move || {
                let world = World::with_topology(opts.nics, opts.config.clone(), opts.topology).and_then(|mut w| {
                    for k in 0..opts.nics {
                        w.set_dma_memory(k, Box::new(tables[k].clone()))?;
                        w.set_interrupt_sink(k, Box::new(MsixSink(Arc::clone(&msix[k]))))?;
                    }
                    if let Some(path) = &opts.pcap {
                        w.capture_pcap(path)?;
                    }
                    for (k, spec) in opts.bridges.iter().enumerate() {
                        w.attach_port(k, spec.open_for(&opts.config.link)?, PortOptions::default())?;
                    }
                    Ok(w)
                });
                match world {
                    Ok(w) => {
                        let _ = ready_tx.send(Ok(()));
                        world_loop(w, &rx, &opts, &clocks, &msix);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| ServeError::World(SimError::Io(e)))?
    };
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(ServeError::World(e)),
        Err(_) => return Err(ServeError::World(SimError::ModelCreate)),
    }

    let attached = Arc::new(AtomicUsize::new(0));
    for (k, path) in sockets.iter().enumerate() {
        let server = new_server(path, &clocks[k])?;
        let mut backend = NicBackend {
            nic: k,
            requests: tx.clone(),
            table: tables[k].clone(),
            msix: Arc::clone(&msix[k]),
            config: ConfigSpace::new(),
            clock: Arc::clone(&clocks[k]),
            attached: false,
            attached_count: Arc::clone(&attached),
        };
        std::thread::Builder::new()
            .name(format!("rnic-vfio-user-nic{k}"))
            .spawn(move || loop {
                let result = server.run(&mut backend);
                backend.detach();
                if let Err(e) = result {
                    eprintln!("rnic sim serve: nic{k}: the client connection ended with an error: {e}");
                }
            })
            .map_err(|e| ServeError::Listen { path: path.clone(), message: e.to_string() })?;
    }
    Ok(ServeHandle {
        requests: tx,
        world: Some(world_thread),
        sockets,
        msix,
        stopped: Arc::new(AtomicBool::new(false)),
    })
}

fn region(index: u32, size: u64, flags: u32) -> ServerRegion {
    ServerRegion {
        region_info: vfio_region_info {
            argsz: std::mem::size_of::<vfio_region_info>() as u32,
            flags,
            index,
            cap_offset: 0,
            size,
            offset: 0,
        },
        sparse_areas: Vec::new(),
        mmap_fd: None,
    }
}

fn new_server(path: &Path, clock: &ClockPage) -> Result<Server, ServeError> {
    let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
    let mut regions: Vec<ServerRegion> = (0..=VFIO_PCI_VGA_REGION_INDEX).map(|i| region(i, 0, 0)).collect();
    regions[pci::REGS_BAR as usize] = region(pci::REGS_BAR, pci::REGS_BAR_BYTES, rw);
    regions[pci::MSIX_BAR as usize] = region(pci::MSIX_BAR, pci::MSIX_BAR_BYTES, rw);
    let mut clock_region =
        region(pci::CLOCK_BAR, pci::CLOCK_BAR_BYTES, VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_MMAP);
    clock_region.sparse_areas =
        vec![SparseArea { area: vfio_region_sparse_mmap_area { offset: 0, size: pci::CLOCK_BAR_BYTES } }];
    clock_region.mmap_fd = Some(clock.file.as_raw_fd());
    regions[pci::CLOCK_BAR as usize] = clock_region;
    regions[VFIO_PCI_CONFIG_REGION_INDEX as usize] =
        region(VFIO_PCI_CONFIG_REGION_INDEX, crate::config_space::CONFIG_BYTES as u64, rw);
    let eventfd = VFIO_IRQ_INFO_EVENTFD;
    let irqs = vec![
        IrqInfo {
            index: VFIO_PCI_INTX_IRQ_INDEX,
            flags: eventfd | VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED,
            count: 1,
        },
        IrqInfo { index: VFIO_PCI_MSI_IRQ_INDEX, flags: eventfd, count: 0 },
        IrqInfo {
            index: VFIO_PCI_MSIX_IRQ_INDEX,
            flags: eventfd | VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_NORESIZE,
            count: u32::from(pci::MSIX_VECTORS),
        },
        IrqInfo { index: VFIO_PCI_ERR_IRQ_INDEX, flags: eventfd, count: 1 },
        IrqInfo { index: VFIO_PCI_REQ_IRQ_INDEX, flags: eventfd, count: 1 },
    ];
    Server::new(path, true, irqs, regions)
        .map_err(|e| ServeError::Listen { path: path.to_owned(), message: e.to_string() })
}

fn world_loop(
    mut w: World,
    rx: &Receiver<Request>,
    opts: &ServeOptions,
    clocks: &[Arc<ClockPage>],
    msix: &[Arc<Mutex<Msix>>],
) {
    let mut attached = vec![false; opts.nics];
    let mut last_report = Instant::now();
    let publish = |w: &World| {
        for c in clocks {
            c.word(pci::CLOCK_CYCLES).store(w.cycles(), Ordering::Release);
        }
    };
    let stats = |w: &World, attached: &[bool]| {
        let s = w.stats();
        ServeStats {
            cycles: s.cycles,
            wall_seconds: s.wall_seconds,
            cycles_per_second: s.cycles_per_second,
            sim_to_wall: if s.wall_seconds > 0.0 { s.sim_ns as f64 * 1e-9 / s.wall_seconds } else { 0.0 },
            msix_delivered: msix.iter().map(|m| lock(m).delivered()).sum(),
            attached: attached.iter().filter(|&&a| a).count(),
        }
    };
    publish(&w);
    loop {
        let running = attached.iter().any(|&a| a);
        let req = if running {
            match rx.try_recv() {
                Ok(r) => Some(r),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        } else {
            match rx.recv_timeout(opts.report_every.unwrap_or(Duration::from_secs(3600))) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        match req {
            Some(Request::Mmio { nic, addr, write, reply }) => {
                let r = match write {
                    Some(v) => w.mmio_write(nic, addr, v).map(|()| 0),
                    None => w.mmio_read(nic, addr),
                };
                publish(&w);
                let _ = reply.send(r);
                continue;
            }
            Some(Request::Reset { nic, reply }) => {
                let _ = w.reset(nic);
                publish(&w);
                let _ = reply.send(());
                continue;
            }
            Some(Request::Attach { nic, attached: a }) => {
                if let Some(s) = attached.get_mut(nic) {
                    *s = a;
                }
                continue;
            }
            Some(Request::Msix { nic, vector }) => {
                let _ = w.signal_msix(nic, vector);
                continue;
            }
            Some(Request::Stats { reply }) => {
                let _ = reply.send(stats(&w, &attached));
                continue;
            }
            Some(Request::Stop) => {
                for r in w.port_reports() {
                    eprintln!("rnic sim serve: {}", port_line(&r));
                }
                let _ = w.finish();
                return;
            }
            None => {}
        }
        if running {
            w.step_n(opts.batch_cycles.max(1));
            publish(&w);
        }
        if let Some(every) = opts.report_every {
            if last_report.elapsed() >= every {
                last_report = Instant::now();
                eprintln!("rnic sim serve: {}", stats(&w, &attached));
            }
        }
    }
}

/// One line of a bridged port's counters (printed when the server stops): frames each way,
/// what the fault injection did, and what the port's transport refused.
fn port_line(r: &rnic_sim::PortReport) -> String {
    let o = &r.outbound;
    let mut s = format!(
        "nic{} {}: out {} frames (lost {}, duplicated {}, corrupted {}, reordered {}), port sent {} (dropped {})",
        r.nic,
        r.describe,
        o.delivered,
        o.dropped,
        o.duplicated,
        o.corrupted,
        o.reordered,
        r.port.tx_frames,
        r.port.tx_dropped
    );
    if let Some(i) = &r.inbound {
        s += &format!(
            "; in: port received {} (malformed {}), {} delivered to the NIC (lost {}, duplicated {}, corrupted {}, reordered {}, overflow {})",
            r.port.rx_frames, r.port.rx_malformed, i.delivered, i.dropped, i.duplicated, i.corrupted, i.reordered, r.inbound_overflow
        );
    }
    s
}

/// The vfio-user device of one NIC.
struct NicBackend {
    nic: usize,
    requests: Sender<Request>,
    table: SharedIovaTable,
    msix: Arc<Mutex<Msix>>,
    config: ConfigSpace,
    clock: Arc<ClockPage>,
    attached: bool,
    attached_count: Arc<AtomicUsize>,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the simulated world has stopped")
}

impl NicBackend {
    fn attach(&mut self) {
        if !self.attached {
            self.attached = true;
            self.attached_count.fetch_add(1, Ordering::SeqCst);
            let _ = self.requests.send(Request::Attach { nic: self.nic, attached: true });
        }
    }

    /// The client left: nothing of it may be reached any more.
    fn detach(&mut self) {
        // Reset first, so the NIC stops its DMA before the mappings go.
        let _ = self.reset_nic();
        self.table.with(|t| t.unmap_all());
        let _ = lock(&self.msix).set_irqs(VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE, 0, 0, Vec::new());
        lock(&self.msix).reset();
        self.config.reset();
        if self.attached {
            self.attached = false;
            self.attached_count.fetch_sub(1, Ordering::SeqCst);
            let _ = self.requests.send(Request::Attach { nic: self.nic, attached: false });
        }
    }

    fn reset_nic(&self) -> io::Result<()> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.requests.send(Request::Reset { nic: self.nic, reply: tx }).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }

    fn mmio(&self, addr: u16, write: Option<u32>) -> io::Result<Result<u32, SimError>> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.requests.send(Request::Mmio { nic: self.nic, addr, write, reply: tx }).map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }
}

impl ServerBackend for NicBackend {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        self.attach();
        match region {
            pci::REGS_BAR => {
                for (k, chunk) in data.chunks_mut(4).enumerate() {
                    let off = offset + 4 * k as u64;
                    let value = match u16::try_from(off) {
                        Ok(addr) if chunk.len() == 4 && off.is_multiple_of(4) => match self.mmio(addr, None)? {
                            Ok(v) => v,
                            Err(e) => {
                                log::warn!("nic{}: BAR0 read at {off:#x} failed: {e}; answering all ones", self.nic);
                                u32::MAX
                            }
                        },
                        _ => u32::MAX,
                    };
                    chunk.copy_from_slice(&value.to_le_bytes()[..chunk.len()]);
                }
            }
            pci::MSIX_BAR => lock(&self.msix).read(offset, data),
            pci::CLOCK_BAR => self.clock.read(offset, data),
            VFIO_PCI_CONFIG_REGION_INDEX => self.config.read(offset, data),
            _ => data.fill(0),
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        self.attach();
        match region {
            pci::REGS_BAR => {
                for (k, chunk) in data.chunks(4).enumerate() {
                    let off = offset + 4 * k as u64;
                    match u16::try_from(off) {
                        Ok(addr) if chunk.len() == 4 && off.is_multiple_of(4) => {
                            let v = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                            if let Err(e) = self.mmio(addr, Some(v))? {
                                log::warn!("nic{}: BAR0 write of {v:#x} at {off:#x} failed: {e}", self.nic);
                            }
                        }
                        _ => log::warn!(
                            "nic{}: BAR0 write of {} bytes at {off:#x} ignored: 32-bit aligned only",
                            self.nic,
                            chunk.len()
                        ),
                    }
                }
            }
            pci::MSIX_BAR => lock(&self.msix).write(offset, data),
            VFIO_PCI_CONFIG_REGION_INDEX => {
                self.config.write(offset, data);
                let masked = self.config.msix_function_masked();
                lock(&self.msix).set_function_mask(masked);
            }
            _ => {}
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        self.attach();
        let writable = flags.contains(DmaMapFlags::WRITE);
        self.table
            .with(|t| t.map(address, size, offset, fd.as_ref(), writable))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
    }

    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        self.attach();
        if flags.contains(DmaUnmapFlags::UNMAP_ALL) {
            self.table.with(|t| t.unmap_all());
        } else {
            self.table.with(|t| t.unmap(address, size));
        }
        Ok(())
    }

    fn reset(&mut self) -> io::Result<()> {
        self.attach();
        self.reset_nic()?;
        lock(&self.msix).reset();
        self.config.reset();
        Ok(())
    }

    fn set_irqs(&mut self, index: u32, flags: u32, start: u32, count: u32, fds: Vec<File>) -> io::Result<()> {
        self.attach();
        match index {
            VFIO_PCI_MSIX_IRQ_INDEX => lock(&self.msix)
                .set_irqs(flags, start, count, fds)
                .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m)),
            // INTx, ERR and REQ are accepted (QEMU sets them up) and never raised; MSI has no
            // vectors.
            VFIO_PCI_INTX_IRQ_INDEX | VFIO_PCI_ERR_IRQ_INDEX | VFIO_PCI_REQ_IRQ_INDEX => Ok(()),
            _ if count == 0 => Ok(()),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("IRQ index {index} has no vectors"))),
        }
    }
}
