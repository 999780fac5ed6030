//! [`World`]: N NICs on one clock, their hosts, and the wires between them.
//!
//! Every [`World::step`] advances all NICs by one cycle, then moves frames: finished TX frames go
//! onto their link, frames that start serialising go to the pcap capture, frames that arrive are
//! queued at the receiving NIC's RX port for the next cycle. Blocking operations (MMIO, reset)
//! step the whole world while they wait, so one NIC's register access never freezes the others.
//!
//! The world owns everything and has no lifetime parameters: a driver can hold it as
//! `Rc<RefCell<World>>` with one device handle (an index) per NIC.
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::{SimConfig, CYCLE_NS};
use crate::host_memory::HostMemory;
use crate::mmio::{MmioCompletion, MmioRequest};
use crate::nic::{Nic, NicCore, NicStats};
use crate::pcap::PcapTap;
use crate::stream::{RxFrame, TxFrame};
use crate::wire::{Link, LinkStats, StartedFrame};
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
}

/// N simulated NICs with their hosts and wires, on one clock.
pub struct World {
    config: SimConfig,
    topology: Topology,
    nics: Vec<Nic>,
    links: Vec<Link>,
    /// Index of the link each NIC transmits on.
    tx_link: Vec<Option<usize>>,
    outboxes: Vec<std::collections::VecDeque<TxFrame>>,
    outbox_dropped: u64,
    cycle: u64,
    wall: Duration,
    pcap: Option<PcapTap>,
    pcap_error: Option<SimError>,
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
        let mut w = Self {
            config,
            topology,
            nics,
            links,
            tx_link,
            outboxes: (0..n).map(|_| Default::default()).collect(),
            outbox_dropped: 0,
            cycle: 0,
            wall: Duration::ZERO,
            pcap: None,
            pcap_error: None,
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
    pub fn set_dma_memory(&mut self, i: usize, memory: Box<dyn crate::DmaMemory>) -> Result<(), SimError> {
        self.nic_mut(i)?.set_dma_memory(memory);
        Ok(())
    }

    /// Sends NIC `i`'s MSI-X messages to `sink` (see [`Nic::set_interrupt_sink`]).
    ///
    /// # Errors
    /// [`SimError::NoSuchNic`].
    pub fn set_interrupt_sink(&mut self, i: usize, sink: Box<dyn crate::InterruptSink>) -> Result<(), SimError> {
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

    /// Advances `k` cycles.
    pub fn step_n(&mut self, k: u64) {
        let t = Instant::now();
        for _ in 0..k {
            self.step_inner();
        }
        self.wall += t.elapsed();
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
            self.step_inner();
            n += 1;
        };
        self.wall += t.elapsed();
        result
    }

    fn step_inner(&mut self) {
        let now = self.cycle;
        for (i, nic) in self.nics.iter_mut().enumerate() {
            if let Some(l) = self.tx_link[i] {
                nic.set_tx_ready(self.links[l].tx_ready(nic.tx_partial_bytes()));
            }
            nic.cycle();
        }
        // Finished TX frames onto their links (or outboxes).
        for i in 0..self.nics.len() {
            self.nics[i].drain_tx_frames_into(&mut self.scratch_tx);
            if self.scratch_tx.is_empty() {
                continue;
            }
            match self.tx_link[i] {
                Some(l) => {
                    for f in self.scratch_tx.drain(..) {
                        self.links[l].push(f.data, f.end_cycle);
                    }
                }
                None => {
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
        if capturing && !self.scratch_started.is_empty() {
            self.write_capture();
        }
        self.cycle += 1;
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
        self.links.iter().all(|l| l.in_flight() == 0) && self.nics.iter().all(Nic::is_quiet)
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
        self.finish_capture()
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
            .map(|l| LinkReport { from: l.from, to: l.to, stats: l.stats(), busy_ns: l.bits_to_ns(l.stats().busy_bits) })
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
        }
    }
}
