//! [`World`]: N NICs on one clock, their hosts, and the wires between them.
//!
//! Every [`World::step`] advances all NICs by one cycle, then moves frames: finished TX frames go
//! onto their link, frames that start serialising go to the pcap capture, frames that arrive are
//! queued at the receiving NIC's RX port for the next cycle. Blocking operations (MMIO, reset)
//! step the whole world while they wait, so one NIC's register access never freezes the others.
//!
//! A NIC's port can instead be attached to something outside the world ([`World::attach_port`],
//! [`crate::port`]): a NIC in another process over SimBricks, a switch, a bridge to QEMU or a
//! TAP device. The world then never runs past the instant up to which the port knows every
//! frame that can reach the NIC (synchronised ports), or past wall-clock time (real-time ports).
//!
//! With `SimConfig::threads` > 1 the NICs are stepped on several threads, in windows of cycles
//! no longer than the wires' lookahead (the shortest time a frame needs from one NIC to
//! another), with the same results as on one thread (module `lanes`).
//!
//! The world owns everything and has no lifetime parameters: a driver can hold it as
//! `Rc<RefCell<World>>` with one device handle (an index) per NIC.
mod gang;
mod lanes;

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::{EvalMode, SimConfig, CYCLE_NS};
use crate::host_memory::HostMemory;
use crate::mmio::{MmioCompletion, MmioRequest};
use crate::nic::{Nic, NicCore, NicStats};
use crate::pcap::PcapTap;
use crate::port::{ExternalPort, PortLane, PortOptions, PortReport, PortTiming, CYCLE_PS};
use crate::stream::{RxFrame, TxFrame};
use crate::wire::{Flying, Link, LinkStats, StartedFrame};
use crate::SimError;

/// How the NICs' Ethernet ports are connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Topology {
    /// NICs 2k and 2k+1 are cabled back to back (a full-duplex wire = two links); with an odd
    /// count the last NIC is unconnected. The default.
    #[default]
    BackToBack,
    /// Every NIC's TX is wired to its own RX.
    Loopback,
    /// No wires: transmitted frames wait in a per-NIC outbox ([`World::take_tx_frames`]) and
    /// frames can be injected with [`World::inject_rx_frame`].
    Unconnected,
}

/// Frames an unconnected port keeps before dropping the oldest.
pub const OUTBOX_FRAMES: usize = 65_536;

/// Statistics of one link direction, with its ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkReport {
    /// Transmitting NIC.
    pub from: usize,
    /// Receiving NIC.
    pub to: usize,
    /// Counters.
    pub stats: LinkStats,
    /// Wire busy time in ns.
    pub busy_ns: u64,
}

/// Statistics of a world.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldStats {
    /// Clock cycles simulated.
    pub cycles: u64,
    /// Simulated time in ns (`cycles * 4`).
    pub sim_ns: u64,
    /// Wall-clock seconds spent stepping the world.
    pub wall_seconds: f64,
    /// Simulator speed: cycles per wall-clock second (0 before any step).
    pub cycles_per_second: f64,
    /// Per NIC.
    pub nics: Vec<NicStats>,
    /// Per link direction.
    pub links: Vec<LinkReport>,
    /// Frames dropped from full outboxes of unconnected ports.
    pub outbox_dropped: u64,
    /// Per attached external port.
    pub ports: Vec<PortReport>,
    /// Threads stepping the NICs (`SimConfig::threads`, 1 when the wires leave no lookahead).
    pub threads: usize,
    /// How the verilated NICs are evaluated: `SimConfig::eval`, or [`EvalMode::Reference`] when
    /// the shim was built without the fast path ([`crate::ffi::fast_cycle_built`]).
    pub eval: EvalMode,
}

/// N simulated NICs with their hosts and wires, on one clock.
pub struct World {
    config: SimConfig,
    topology: Topology,
    nics: Vec<Nic>,
    links: Vec<Link>,
    /// Index of the link each NIC transmits on.
    tx_link: Vec<Option<usize>>,
    outboxes: Vec<VecDeque<TxFrame>>,
    outbox_dropped: u64,
    /// NIC i's external port, if attached.
    ports: Vec<Option<PortLane>>,
    /// The first port failure not yet reported.
    port_error: Option<SimError>,
    /// Real-time pacing: (wall instant, cycle) when it started, and the simulated ns since then
    /// known not to be ahead of wall-clock time.
    pace: Option<(Instant, u64, u64)>,
    cycle: u64,
    wall: Duration,
    pcap: Option<PcapTap>,
    pcap_error: Option<SimError>,
    /// Worker threads beyond the caller's (`SimConfig::threads` - 1), if stepping in parallel.
    pool: Option<gang::Gang>,
    /// Whether the next windows run on the gang or on the caller (same results, faster one).
    tuner: lanes::Tuner,
    /// Longest window of cycles the in-process wires allow without exchanging frames.
    window: u64,
    /// Frames that started on each in-process link during a window, handed to its receiving end
    /// at the window's end (parallel stepping).
    transit: Vec<Vec<Flying>>,
    scratch_tx: Vec<TxFrame>,
    scratch_rx: Vec<RxFrame>,
    scratch_started: Vec<StartedFrame>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("nics", &self.nics.len())
            .field("topology", &self.topology)
            .field("cycle", &self.cycle)
            .finish_non_exhaustive()
    }
}

impl World {
    /// `n` NICs cabled [`Topology::BackToBack`], each reset (the reset takes
    /// `config.reset_cycles` cycles, so [`cycles`](Self::cycles) does not start at 0).
    ///
    /// # Errors
    /// Invalid configuration or a model that cannot be created.
    pub fn new(n: usize, config: SimConfig) -> Result<Self, SimError> {
        Self::with_topology(n, config, Topology::BackToBack)
    }

    /// `n` NICs connected as `topology`, each reset.
    ///
    /// # Errors
    /// `n == 0`, invalid link or fault parameters, or a model that cannot be created.
    pub fn with_topology(n: usize, config: SimConfig, topology: Topology) -> Result<Self, SimError> {
        if n == 0 {
            return Err(SimError::InvalidArgument("a world needs at least one NIC".into()));
        }
        let nics = (0..n).map(|_| Nic::with_config(&config)).collect::<Result<Vec<_>, _>>()?;
        Self::from_nics(nics, config, topology)
    }

    /// A world of NICs around the given cores (Rust fakes in tests of the models), connected as
    /// `topology`, each reset.
    ///
    /// # Errors
    /// No cores, or invalid link or fault parameters.
    pub fn with_cores(cores: Vec<Box<dyn NicCore>>, config: SimConfig, topology: Topology) -> Result<Self, SimError> {
        let nics = cores.into_iter().map(|c| Nic::with_core(c, &config)).collect();
        Self::from_nics(nics, config, topology)
    }

    fn from_nics(nics: Vec<Nic>, config: SimConfig, topology: Topology) -> Result<Self, SimError> {
        let n = nics.len();
        if n == 0 {
            return Err(SimError::InvalidArgument("a world needs at least one NIC".into()));
        }
        let mut pairs = Vec::new();
        match topology {
            Topology::BackToBack => {
                for a in (0..n.saturating_sub(1)).step_by(2) {
                    pairs.push((a, a + 1));
                    pairs.push((a + 1, a));
                }
            }
            Topology::Loopback => pairs.extend((0..n).map(|i| (i, i))),
            Topology::Unconnected => {}
        }
        let mut links = Vec::new();
        let mut tx_link = vec![None; n];
        for (idx, &(from, to)) in pairs.iter().enumerate() {
            links.push(Link::new(from, to, idx, &config.link, &config.faults)?);
            tx_link[from] = Some(idx);
        }
        if config.threads == 0 {
            return Err(SimError::InvalidArgument("SimConfig::threads must be at least 1".into()));
        }
        // A frame pushed during a window reaches its receiver after the window ends if the
        // window is no longer than the shortest transit (minimum frame + latency).
        let window = links.iter().map(|l| l.tx.min_transit_bits() / l.tx.bits_per_cycle()).min().unwrap_or(u64::MAX);
        let threads = config.threads.min(n);
        let pool = if threads > 1 && window > 0 {
            let pool = gang::Gang::new(threads - 1)
                .map_err(|e| SimError::InvalidArgument(format!("cannot start {threads} simulator threads: {e}")))?;
            Some(pool)
        } else {
            None
        };
        let mut w = Self {
            config,
            topology,
            nics,
            transit: links.iter().map(|_| Vec::new()).collect(),
            links,
            tx_link,
            outboxes: (0..n).map(|_| Default::default()).collect(),
            outbox_dropped: 0,
            ports: (0..n).map(|_| None).collect(),
            port_error: None,
            pace: None,
            cycle: 0,
            wall: Duration::ZERO,
            pcap: None,
            pcap_error: None,
            pool,
            tuner: lanes::Tuner::default(),
            window,
            scratch_tx: Vec::new(),
            scratch_rx: Vec::new(),
            scratch_started: Vec::new(),
        };
        w.reset_all();
        Ok(w)
    }

    /// The configuration the world was built with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The topology.
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Number of NICs.
    pub fn nic_count(&self) -> usize {
        self.nics.len()
    }

    fn check(&self, i: usize) -> Result<(), SimError> {
        if i < self.nics.len() {
            Ok(())
        } else {
            Err(SimError::NoSuchNic { index: i, count: self.nics.len() })
        }
    }

    /// NIC `i`.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn nic(&self, i: usize) -> Result<&Nic, SimError> {
        self.check(i)?;
        Ok(&self.nics[i])
    }

    /// NIC `i`, mutably (for non-blocking MMIO, waveforms, direct frame injection).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn nic_mut(&mut self, i: usize) -> Result<&mut Nic, SimError> {
        self.check(i)?;
        Ok(&mut self.nics[i])
    }

    /// The host memory of NIC `i`, to read (e.g. poll a CQE from a `run_until` predicate).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn memory(&self, i: usize) -> Result<&HostMemory, SimError> {
        Ok(self.nic(i)?.memory())
    }

    /// The host memory of NIC `i`, to map buffers and allocate or write rings.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn memory_mut(&mut self, i: usize) -> Result<&mut HostMemory, SimError> {
        Ok(self.nic_mut(i)?.memory_mut())
    }

    /// Makes NIC `i`'s DMA reach `memory` instead of its own [`HostMemory`] (see
    /// [`Nic::set_dma_memory`]).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn set_dma_memory(&mut self, i: usize, memory: Box<dyn crate::DmaMemory + Send>) -> Result<(), SimError> {
        self.nic_mut(i)?.set_dma_memory(memory);
        Ok(())
    }

    /// Sends NIC `i`'s MSI-X messages to `sink` (see [`Nic::set_interrupt_sink`]).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn set_interrupt_sink(&mut self, i: usize, sink: Box<dyn crate::InterruptSink + Send>) -> Result<(), SimError> {
        self.nic_mut(i)?.set_interrupt_sink(sink);
        Ok(())
    }

    /// Raises MSI-X vector `vector` of NIC `i` now (the hook [`Nic::signal_msix`]; a stand-in
    /// trigger until the RTL's interrupt port exists).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn signal_msix(&mut self, i: usize, vector: u16) -> Result<(), SimError> {
        self.nic_mut(i)?.signal_msix(vector);
        Ok(())
    }

    /// Clock cycles since the world was created (reset cycles included).
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// Simulated time in ns (`cycles * 4`).
    pub fn now_ns(&self) -> u64 {
        self.cycle * CYCLE_NS
    }

    /// Advances every NIC and wire by one clock cycle.
    pub fn step(&mut self) {
        let t = Instant::now();
        self.step_inner();
        self.wall += t.elapsed();
    }

    /// Advances `k` cycles. With several threads, in windows of up to the wires' lookahead.
    pub fn step_n(&mut self, k: u64) {
        let t = Instant::now();
        if self.pool.is_some() {
            self.step_windows(k);
        } else {
            for _ in 0..k {
                self.step_inner();
            }
        }
        self.wall += t.elapsed();
    }

    /// Threads stepping the NICs: `SimConfig::threads` (at most one per NIC), or 1 when the
    /// wires leave no lookahead.
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, gang::Gang::threads)
    }

    /// True when a world with several threads currently hands its windows to them. It measures
    /// both schedules as it runs and keeps the faster: on a machine whose other cores are busy,
    /// stepping every NIC on the caller's thread can be faster than handing one-cycle windows
    /// over. The results are identical either way.
    pub fn stepping_in_parallel(&self) -> bool {
        self.pool.is_some() && self.tuner.on_gang()
    }

    /// Cycles the NICs may run in parallel between two exchanges of frames: the shortest time a
    /// frame needs from one NIC to another, in cycles (`u64::MAX` without in-process wires).
    pub fn lookahead_cycles(&self) -> u64 {
        self.window
    }

    /// Steps until `done(self)` is true (checked before each cycle), at most `max_cycles` cycles.
    /// Returns the cycles stepped.
    ///
    /// # Errors
    /// [`SimError::Timeout`] if `done` stayed false.
    pub fn run_until(&mut self, mut done: impl FnMut(&World) -> bool, max_cycles: u64) -> Result<u64, SimError> {
        let t = Instant::now();
        let mut n = 0;
        let result = loop {
            if done(self) {
                break Ok(n);
            }
            if n >= max_cycles {
                break Err(SimError::Timeout { cycles: n });
            }
            if let Some(e) = self.port_error.take() {
                break Err(e);
            }
            self.step_inner();
            n += 1;
        };
        self.wall += t.elapsed();
        result
    }

    fn step_inner(&mut self) {
        if self.pool.is_some() {
            self.step_windows(1);
            return;
        }
        let now = self.cycle;
        self.pace_to(now + 1);
        for (i, nic) in self.nics.iter_mut().enumerate() {
            if let Some(l) = self.tx_link[i] {
                nic.set_tx_ready(self.links[l].tx_ready(nic.tx_partial_bytes()));
            } else if let Some(p) = &self.ports[i] {
                nic.set_tx_ready(p.out.tx_ready(nic.tx_partial_bytes()));
            }
            nic.cycle();
        }
        // Finished TX frames onto their links (or ports, or outboxes).
        for i in 0..self.nics.len() {
            self.nics[i].drain_tx_frames_into(&mut self.scratch_tx);
            if self.scratch_tx.is_empty() {
                continue;
            }
            match (self.tx_link[i], &mut self.ports[i]) {
                (Some(l), _) => {
                    for f in self.scratch_tx.drain(..) {
                        self.links[l].push(f.data, f.end_cycle);
                    }
                }
                (None, Some(p)) => {
                    for f in self.scratch_tx.drain(..) {
                        p.out.push(f.data, f.end_cycle);
                    }
                }
                (None, None) => {
                    let ob = &mut self.outboxes[i];
                    for f in self.scratch_tx.drain(..) {
                        if ob.len() >= OUTBOX_FRAMES {
                            ob.pop_front();
                            self.outbox_dropped += 1;
                        }
                        ob.push_back(f);
                    }
                }
            }
        }
        // Wires: serialisation starts (captured) and arrivals (queued for the next cycle).
        let capturing = self.pcap.is_some();
        for l in 0..self.links.len() {
            let link = &mut self.links[l];
            let started = if capturing { Some(&mut self.scratch_started) } else { None };
            link.advance(now, started, &mut self.scratch_rx);
            let to = link.to;
            for f in self.scratch_rx.drain(..) {
                self.nics[to].push_rx(f);
            }
        }
        if self.ports.iter().any(Option::is_some) {
            for p in self.ports.iter_mut().flatten() {
                p.end_cycle_out(now, if capturing { Some(&mut self.scratch_started) } else { None });
            }
            self.serve_ports(now + 1);
            for (i, p) in self.ports.iter_mut().enumerate() {
                if let Some(p) = p {
                    let started = if capturing { Some(&mut self.scratch_started) } else { None };
                    p.end_cycle_in(now, started, &mut self.nics[i]);
                }
            }
        }
        if capturing && !self.scratch_started.is_empty() {
            self.write_capture();
        }
        self.cycle += 1;
    }

    /// At the instant simulated time reached cycle `end`: hands the ports the frames that left
    /// the wires and tells them the time, then takes from them every frame due by that instant
    /// (to present from cycle `end` on), blocking on synchronised ports until they know them.
    fn serve_ports(&mut self, end: u64) {
        let now_ps = end * CYCLE_PS;
        for i in 0..self.ports.len() {
            let Some(p) = &mut self.ports[i] else {
                continue;
            };
            if let Err(e) = p.flush(now_ps) {
                self.fail_port(i, e);
            }
        }
        let until = end * CYCLE_PS;
        for i in 0..self.ports.len() {
            let Some(p) = &mut self.ports[i] else {
                continue;
            };
            if let Err(e) = p.receive(until, end - 1) {
                self.fail_port(i, e);
            }
        }
    }

    fn fail_port(&mut self, i: usize, e: SimError) {
        if let Some(p) = &mut self.ports[i] {
            if !p.failed {
                p.failed = true;
                let e = SimError::Port(format!("NIC {i}, {}: {e}", p.port.describe()));
                self.port_error.get_or_insert(e);
            }
        }
    }

    /// Real time: waits until wall-clock time has reached simulated cycle `cycle` (counted from
    /// the attachment of the first real-time port).
    fn pace_to(&mut self, cycle: u64) {
        let Some((origin, c0, ok_ns)) = &mut self.pace else {
            return;
        };
        let sim_ns = cycle.saturating_sub(*c0) * CYCLE_NS;
        if sim_ns <= *ok_ns {
            return;
        }
        let wall = origin.elapsed().as_nanos() as u64;
        if wall < sim_ns {
            std::thread::sleep(Duration::from_nanos(sim_ns - wall));
        }
        *ok_ns = origin.elapsed().as_nanos() as u64;
    }

    fn write_capture(&mut self) {
        // Frames of different links that started in the same cycle, in time order.
        self.scratch_started.sort_by_key(|s| (s.start_bits, s.link));
        if let Some(tap) = &mut self.pcap {
            for s in &self.scratch_started {
                if let Err(e) = tap.write(s.start_ns, &s.data) {
                    // Stop capturing; the error is reported by `finish`.
                    self.pcap_error.get_or_insert(e);
                    self.pcap = None;
                    break;
                }
            }
        }
        self.scratch_started.clear();
    }

    /// Performs an MMIO on NIC `i`, stepping the world until it completes.
    fn mmio(&mut self, i: usize, req: MmioRequest) -> Result<MmioCompletion, SimError> {
        self.check(i)?;
        let ticket = self.nics[i].mmio_submit(req);
        let limit = self.config.mmio_timeout_cycles;
        let kind = if req.is_write() { "write" } else { "read" };
        let t = Instant::now();
        let mut waited = 0;
        let result = loop {
            if let Some(c) = self.nics[i].mmio_take(ticket) {
                break Ok(c);
            }
            if waited >= limit {
                self.nics[i].mmio_cancel(ticket);
                break Err(SimError::MmioTimeout { nic: i, kind, addr: req.addr(), cycles: waited });
            }
            if let Some(e) = self.port_error.take() {
                self.nics[i].mmio_cancel(ticket);
                break Err(e);
            }
            self.step_inner();
            waited += 1;
        };
        self.wall += t.elapsed();
        let c = result?;
        if c.aborted {
            return Err(SimError::MmioAborted { nic: i, addr: req.addr() });
        }
        if c.resp != 0 {
            return Err(SimError::MmioResponse { nic: i, kind, addr: req.addr(), resp: c.resp as u8 });
        }
        Ok(c)
    }

    /// Writes `value` to the BAR0 register at byte offset `addr` of NIC `i`, stepping the whole
    /// world until the write response arrives (at most `mmio_timeout_cycles` cycles).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`], [`SimError::MmioTimeout`], [`SimError::MmioResponse`] (non-OKAY
    /// response), [`SimError::MmioAborted`].
    pub fn mmio_write(&mut self, i: usize, addr: u16, value: u32) -> Result<(), SimError> {
        self.mmio(i, MmioRequest::Write { addr, value, strb: 0xF }).map(|_| ())
    }

    /// Reads the BAR0 register at byte offset `addr` of NIC `i`, stepping the whole world until
    /// the read data arrives (at most `mmio_timeout_cycles` cycles).
    ///
    /// # Errors
    /// As [`mmio_write`](Self::mmio_write).
    pub fn mmio_read(&mut self, i: usize, addr: u16) -> Result<u32, SimError> {
        self.mmio(i, MmioRequest::Read { addr }).map(|c| c.value)
    }

    /// Resets NIC `i` (`reset` high for `reset_cycles` cycles) while the world keeps stepping.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn reset(&mut self, i: usize) -> Result<(), SimError> {
        self.check(i)?;
        self.nics[i].begin_reset();
        let t = Instant::now();
        while self.nics[i].in_reset() {
            self.step_inner();
        }
        self.wall += t.elapsed();
        Ok(())
    }

    /// Resets every NIC at once.
    pub fn reset_all(&mut self) {
        for n in &mut self.nics {
            n.begin_reset();
        }
        let t = Instant::now();
        while self.nics.iter().any(Nic::in_reset) {
            self.step_inner();
        }
        self.wall += t.elapsed();
    }

    /// Frames NIC `i` transmitted on an unconnected port, oldest first (empty for a wired port).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn take_tx_frames(&mut self, i: usize) -> Result<Vec<TxFrame>, SimError> {
        self.check(i)?;
        Ok(self.outboxes[i].drain(..).collect())
    }

    /// Queues a frame (no FCS) at NIC `i`'s RX port, as if it had just arrived from a wire.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn inject_rx_frame(&mut self, i: usize, data: Vec<u8>, bad_fcs: bool) -> Result<(), SimError> {
        self.nic_mut(i)?.push_rx_frame(data, bad_fcs);
        Ok(())
    }

    /// True when no frame is on a wire or waiting at an RX port, and no DMA or MMIO is in flight.
    pub fn is_quiet(&self) -> bool {
        self.links.iter().all(|l| l.in_flight() == 0)
            && self.ports.iter().flatten().all(PortLane::is_quiet)
            && self.nics.iter().all(Nic::is_quiet)
    }

    /// Attaches NIC `i`'s Ethernet port to `port` (see [`crate::port`]): from the next cycle on,
    /// the frames it transmits are paced on the world's outbound wire (the link parameters and
    /// fault injection of the world, latency 0) and handed to the port, and the frames the port
    /// delivers reach its receiver. A real-time port also starts pacing the world to wall-clock
    /// time.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`]; [`SimError::InvalidArgument`] if NIC `i` is wired to a NIC of this
    /// world or already has a port, or the wire parameters are invalid.
    pub fn attach_port(&mut self, i: usize, port: Box<dyn ExternalPort>, opts: PortOptions) -> Result<(), SimError> {
        self.check(i)?;
        if self.tx_link[i].is_some() || self.links.iter().any(|l| l.to == i) {
            return Err(SimError::InvalidArgument(format!(
                "NIC {i} is wired to a NIC of this world ({:?}); attach ports to unconnected NICs",
                self.topology
            )));
        }
        if self.ports[i].is_some() {
            return Err(SimError::InvalidArgument(format!("NIC {i} already has a port")));
        }
        let lane = PortLane::new(i, port, opts, &self.config)?;
        if lane.timing == PortTiming::RealTime && self.pace.is_none() {
            self.pace = Some((Instant::now(), self.cycle, 0));
        }
        self.ports[i] = Some(lane);
        // Tell the peer where this side starts, before anything waits for it.
        if let Some(p) = &mut self.ports[i] {
            if let Err(e) = p.flush(self.cycle * CYCLE_PS) {
                self.ports[i] = None;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Detaches NIC `i`'s port (without closing it) and returns it; the NIC is unconnected
    /// again. Frames still on the outbound wire are lost.
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn detach_port(&mut self, i: usize) -> Result<Option<Box<dyn ExternalPort>>, SimError> {
        self.check(i)?;
        let lane = self.ports[i].take();
        if self.ports.iter().all(|p| p.as_ref().is_none_or(|p| p.timing != PortTiming::RealTime)) {
            self.pace = None;
        }
        Ok(lane.map(|l| l.port))
    }

    /// Closes every attached port (a SimBricks peer gets its terminate message); the ports stay
    /// attached but take and deliver nothing more.
    ///
    /// # Errors
    /// The first close error, or a port failure not yet reported.
    pub fn close_ports(&mut self) -> Result<(), SimError> {
        let mut first = self.port_error.take();
        for p in self.ports.iter_mut().flatten() {
            if let Err(e) = p.port.close() {
                first.get_or_insert(e);
            }
            p.failed = true;
        }
        first.map_or(Ok(()), Err)
    }

    /// The first port failure since the last call (a port that fails is no longer used: its
    /// NIC is cut off). `mmio_read`/`mmio_write`/`run_until` also return it.
    pub fn take_port_error(&mut self) -> Option<SimError> {
        self.port_error.take()
    }

    /// NIC `i`'s port, if attached (for its counters and state).
    pub fn port(&self, i: usize) -> Option<&dyn ExternalPort> {
        self.ports.get(i).and_then(Option::as_ref).map(|p| p.port.as_ref())
    }

    /// Statistics of the attached ports.
    pub fn port_reports(&self) -> Vec<PortReport> {
        self.ports.iter().enumerate().filter_map(|(i, p)| p.as_ref().map(|p| p.report(i))).collect()
    }

    /// Starts capturing every wire into the pcap file `path` (replacing a capture in progress,
    /// which is finished first).
    ///
    /// # Errors
    /// [`SimError::Pcap`] if the file cannot be created, or the previous capture failed.
    pub fn capture_pcap(&mut self, path: &Path) -> Result<(), SimError> {
        self.finish_capture()?;
        self.pcap = Some(PcapTap::create(path)?);
        Ok(())
    }

    /// Frames captured so far by the current capture.
    pub fn captured_frames(&self) -> u64 {
        self.pcap.as_ref().map_or(0, PcapTap::frames)
    }

    fn finish_capture(&mut self) -> Result<(), SimError> {
        if let Some(mut tap) = self.pcap.take() {
            tap.finish()?;
        }
        match self.pcap_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Flushes and closes the pcap capture and every waveform dump. The world can keep running.
    /// (Dropping the world does the same, without reporting errors.)
    ///
    /// # Errors
    /// The first pcap write or flush error since the capture started.
    pub fn finish(&mut self) -> Result<(), SimError> {
        for n in &mut self.nics {
            n.stop_waveform();
        }
        self.finish_capture()?;
        self.port_error.take().map_or(Ok(()), Err)
    }

    /// Starts an FST waveform dump of NIC `i` (needs the `waveform` feature).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`], [`SimError::WaveformDisabled`], I/O errors.
    pub fn dump_waveform(&mut self, i: usize, path: &Path) -> Result<(), SimError> {
        self.nic_mut(i)?.dump_waveform(path)
    }

    /// Statistics of the links, with their ends.
    pub fn link_reports(&self) -> Vec<LinkReport> {
        self.links
            .iter()
            .map(|l| LinkReport {
                from: l.from,
                to: l.to,
                stats: l.stats(),
                busy_ns: l.bits_to_ns(l.stats().busy_bits),
            })
            .collect()
    }

    /// Statistics and simulator speed.
    pub fn stats(&self) -> WorldStats {
        let wall = self.wall.as_secs_f64();
        WorldStats {
            cycles: self.cycle,
            sim_ns: self.now_ns(),
            wall_seconds: wall,
            cycles_per_second: if wall > 0.0 { self.cycle as f64 / wall } else { 0.0 },
            nics: self.nics.iter().map(Nic::stats).collect(),
            links: self.link_reports(),
            outbox_dropped: self.outbox_dropped,
            ports: self.port_reports(),
            threads: self.threads(),
            eval: if crate::ffi::fast_cycle_built() { self.config.eval } else { EvalMode::Reference },
        }
    }
}
