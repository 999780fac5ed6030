//! `rnic perf write|read --device DEV [HOST]`: one side of a two-sided run, as perftest runs one
//! side per host. Without HOST this side is the server: it listens on TCP (default port 18515),
//! advertises its buffer and waits; with HOST it is the client: it connects, runs the transfer and
//! measures. The two sides meet through perftest 4.5's exchange ([`super::exchange`]), so either
//! side can later face an unmodified `ib_write_bw` / `ib_read_bw`.
//!
//! Checks: the WRITE server checks every byte of its buffer against the patterns
//! ([`check_qp_buffer`]) once the client reports; the READ client checks its buffer
//! ([`check_qp_slots`]); the WRITE client and the READ server check that every work request
//! completed successfully / that their buffer was not changed. Each side prints its own
//! `verified`.
//!
//! With `--device sim-port:SPEC` this side's NIC is simulated in this process, its Ethernet
//! port on a SimBricks link (`simbricks-listen:PATH` on one side, `simbricks:PATH` on the other)
//! or a bridge; the run's fault options (`--seed`, `--loss`, …) apply to the frames this NIC
//! sends, drawn as the one-process run draws them for the same NIC (client NIC 0, server NIC
//! 1). The exchange's TCP connection is made before the device is opened (the SimBricks
//! handshake waits for the peer), and while a side waits for the peer's message its world keeps
//! running ([`Exchange::with_idle`]). So that the run does not depend on how long the peers
//! took to talk over TCP, the client starts its transfer on a simulated cycle that is a
//! multiple of [`SPLIT_START_ALIGN`]: on a synchronised link the split run is deterministic
//! (the same seed gives the same cycles, frames and completions every time).
//!
//! Port addresses: the server uses `PortAddr::for_sim_nic(1)` (192.0.2.2) and the client
//! `for_sim_nic(0)` (192.0.2.1); the peer's MAC is derived from its GID's IPv4 address by the
//! same rule (02:00:00:00:00:<last octet>), because rnic does not resolve addresses (ARP) yet.
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rnic::sim::SimConfig;
use rnic::{
    AccessFlags, ConnectOptions, Context, Counters, Endpoint, Error, MacAddr, PortAddr, RemoteBuffer, Result, SendWr,
    WorkCompletion,
};
use rnic_contract::CORE_CLOCK_MHZ;
use serde::Serialize;

use super::exchange::{BwReport, Exchange, Idle, Key};
use super::{check_qp_buffer, check_qp_slots, default_stall_cycles, fill_pattern, BwOp, Mismatch, WriteBwOptions};

/// Which side a two-sided run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Listens, advertises its buffer, waits.
    Server,
    /// Connects, transfers, measures.
    Client,
}

/// Options of one side.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// The run's parameters (op, size, iters, mtu, tx_depth, cq_mod, qp_timeout, outs,
    /// budget_cycles; `qps`, `sges` and `inline_size` must be 1, 1 and 0).
    pub bw: WriteBwOptions,
    /// The device string.
    pub device: String,
    /// The server's address (client), or None (server).
    pub host: Option<String>,
    /// TCP port of the exchange.
    pub port: u16,
    /// How long the client retries connecting.
    pub connect_timeout: Duration,
}

/// The outcome of one side.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteReport {
    /// "write" or "read".
    pub op: &'static str,
    /// "server" or "client".
    pub role: Role,
    /// The device string.
    pub device: String,
    /// Message size, bytes.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// Path MTU after the exchange (the smaller of both sides'), bytes.
    pub mtu: u32,
    /// Outstanding work requests (client).
    pub tx_depth: u32,
    /// One signaled work request in `cq_mod` (client).
    pub cq_mod: u32,
    /// `size × iters`.
    pub bytes: u64,
    /// Client: NIC cycles from the first post to the last completion (the simulator's clock
    /// over vfio-user, wall time at the contract clock otherwise). Server: the client's, from
    /// its report.
    pub cycles: u64,
    /// Clock the rates use, MHz.
    pub clock_mhz: u64,
    /// Average Gb/s (payload; the server shows the client's figure).
    pub gbps: f64,
    /// Message rate, millions per second.
    pub mpps: f64,
    /// What this side could check held (see the module documentation).
    pub verified: bool,
    /// The first wrong byte of the checked buffer, if any.
    pub first_mismatch: Option<Mismatch>,
    /// Client: work requests completed successfully.
    pub completed: u64,
    /// The client gave up waiting for completions.
    pub timed_out: bool,
    /// The first error.
    pub error: Option<String>,
    /// This side's endpoint.
    pub local: Endpoint,
    /// The peer's endpoint.
    pub remote: Endpoint,
    /// The peer's perftest version string.
    pub peer_version: String,
    /// The time base is the simulator's cycle count (true) or wall time (false).
    pub sim_clock: bool,
    /// MSI-X vectors bound to eventfds on this side's device.
    pub interrupt_vectors: u16,
    /// Wall seconds of the transfer (client) or of the wait (server).
    pub wall_seconds: f64,
    /// With `sim-port:`: this side's world, simulated cycles per wall second while it stepped
    /// (its NIC and its share of the SimBricks synchronisation).
    pub sim_cycles_per_sec: Option<f64>,
    /// With `sim-port:`: cycles this side's world ran in all (setup, run, exchange waits).
    pub sim_total_cycles: Option<u64>,
    /// This NIC's counters after the run.
    pub counters: Counters,
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::io(rnic::IoKind::Backend, format!("perftest exchange: {what}"), e)
}

/// The MAC of a simulated port from its IPv4 address (`PortAddr::for_sim_nic`'s rule).
pub fn sim_mac_of(ip: Ipv4Addr) -> MacAddr {
    rnic::PortAddr::sim_mac_of(ip)
}

/// Checks what a two-sided run supports.
///
/// # Errors
/// [`Error::NotSupported`] naming the option.
pub fn check_remote(o: &WriteBwOptions) -> Result<()> {
    if !matches!(o.op, BwOp::Write | BwOp::Read) {
        return Err(Error::NotSupported(format!(
            "rnic perf {} with --device: only write and read run two-sided so far",
            o.op.name()
        )));
    }
    if o.qps != 1 || o.sges != 1 || o.inline_size != 0 || o.pcap.is_some() || o.waveform.is_some() || o.state_profile {
        return Err(Error::NotSupported(
            "with --device: --qps, --sges, --inline-size, --pcap, --waveform and --state-profile are for the in-process run (leave them at their defaults)".into(),
        ));
    }
    Ok(())
}

/// The client of a `sim-port:` run starts its transfer on a cycle that is a multiple of this
/// (4.1 µs at 250 MHz): a multiple of the ACK timers' 64-cycle sweep and of the interrupt
/// moderation unit (256 cycles), so the NICs' periodic work has the same phase on every run.
pub const SPLIT_START_ALIGN: u64 = 1024;

/// Cycles a `sim-port:` side's world runs each time it finds no message from its peer.
const IDLE_STEP_CYCLES: u64 = 256;

/// One side's device and its perftest exchange, opened in the order the device needs.
///
/// For `sim-port:SPEC` the NIC is built here, alone in its world, with `sim`'s fault
/// configuration for NIC `nic` (client 0, server 1); the TCP exchange is connected first
/// (the SimBricks handshake of the port waits for the peer's), and the exchange steps the world
/// [`IDLE_STEP_CYCLES`] at a time while it waits for a peer message. Any other device string is
/// opened with [`rnic::open_device`] before the exchange is connected.
pub(super) struct Side {
    /// The device this side drives.
    pub dev: Rc<dyn rnic::Device>,
    /// With `sim-port:`: the in-process world, for stepping and its speed.
    pub sim: Option<rnic::sim::SimDevice>,
    /// The connected exchange.
    pub exchange: Exchange,
}

impl Side {
    /// Opens the side: `host` Some = client (connects to `host:port` for up to
    /// `connect_timeout`), None = server (accepts on `port`).
    ///
    /// # Errors
    /// A device string that does not parse, a device that cannot be opened (`Error::Open` with
    /// a hint), the TCP connection failing.
    pub fn open(
        device: &str,
        sim: &SimConfig,
        nic: usize,
        host: Option<&str>,
        port: u16,
        connect_timeout: Duration,
    ) -> Result<Self> {
        let connect = || match host {
            Some(h) => {
                Exchange::connect(h, port, connect_timeout).map_err(|e| io_err(&format!("connecting to {h}:{port}"), e))
            }
            None => Exchange::accept(port).map_err(|e| io_err(&format!("listening on port {port}"), e)),
        };
        match device.parse::<rnic::DeviceSpec>()? {
            rnic::DeviceSpec::SimPort(spec) => {
                let bridge = spec
                    .parse::<rnic_sim::BridgeSpec>()
                    .map_err(|e| Error::InvalidArgument(format!("device string {device}: {e}")))?;
                // Connect first: opening the port waits for the peer's.
                let exchange = connect()?;
                let sd = rnic::sim::port_device(&bridge, sim.clone(), nic)?;
                let world = Rc::clone(sd.world());
                let idle: Idle = Box::new(move || {
                    if let Ok(mut w) = world.try_borrow_mut() {
                        w.step_n(IDLE_STEP_CYCLES);
                    }
                });
                Ok(Self { dev: Rc::new(sd.clone()), sim: Some(sd), exchange: exchange.with_idle(idle) })
            }
            _ => {
                // The device first, so that a device that cannot be opened fails before the peer
                // is involved.
                let dev = rnic::open_device(device)?;
                Ok(Self { dev, sim: None, exchange: connect()? })
            }
        }
    }
}

/// With `sim-port:` (`sim` Some), runs the world to the next multiple of [`SPLIT_START_ALIGN`]
/// cycles: the client calls this just before its first timed post. Otherwise does nothing.
///
/// # Errors
/// [`Error::Busy`] if the world is borrowed (never between calls of the driver).
pub(super) fn align_split_start(sim: Option<&rnic::sim::SimDevice>) -> Result<()> {
    if let Some(sd) = sim {
        let mut w = sd.world().try_borrow_mut().map_err(|_| Error::Busy("the simulated world".into()))?;
        let skew = w.cycles() % SPLIT_START_ALIGN;
        if skew != 0 {
            w.step_n(SPLIT_START_ALIGN - skew);
        }
    }
    Ok(())
}

/// Runs one side (see the module documentation).
///
/// # Errors
/// Options [`check_remote`] refuses, a device that cannot be opened (`Error::Open` with a hint),
/// the exchange failing, driver errors during setup. Error completions, timeouts and wrong bytes
/// are in the report.
pub fn run_remote(o: &RemoteOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<RemoteReport> {
    let b = &o.bw;
    super::check_options(b)?;
    check_remote(b)?;
    let role = if o.host.is_some() { Role::Client } else { Role::Server };
    let write = b.op == BwOp::Write;
    let size = b.size as usize;
    let total = size * b.iters as usize;
    let nic = if role == Role::Client { 0 } else { 1 };
    let Side { dev, sim, exchange: mut x } =
        Side::open(&o.device, &b.sim, nic, o.host.as_deref(), o.port, o.connect_timeout)?;
    let ctx = Context::open_shared(Rc::clone(&dev))?;
    let port = PortAddr::for_sim_nic(nic);
    ctx.set_port_addr(port)?;
    let peer_version = x.version().map_err(|e| io_err("version", e))?;
    x.sys_data().map_err(|e| io_err("system data", e))?;
    let mtu = x.mtu(b.mtu).map_err(|e| io_err("MTU", e))?;

    // Buffers: the client's WRITE source is a ring of tx_depth slots, its READ target holds
    // every message; the server's buffer holds every message (READ: the patterns from the start).
    let slots =
        if role == Role::Client && write { b.iters.min(u64::from(b.tx_depth)) as usize } else { b.iters as usize };
    let mut buf = vec![0u8; size * slots];
    if role == Role::Server && !write {
        for (k, chunk) in buf.chunks_mut(size).enumerate() {
            fill_pattern(k as u64, chunk);
        }
    }
    let access = match (role, write) {
        (Role::Server, true) => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        (Role::Server, false) => AccessFlags::REMOTE_READ,
        (Role::Client, _) => AccessFlags::LOCAL_WRITE,
    };
    let pd = ctx.alloc_pd()?;
    let outcome = {
        let mr = pd.register(&mut buf, access)?;
        let cq = ctx.create_cq(super::client_cq_entries(b) as usize)?;
        let mut qp = pd.create_qp(&cq).set_max_send_wr(if role == Role::Client { b.tx_depth } else { 1 }).build()?;
        let local = qp.endpoint()?.with_buffer(&mr);
        let mine = Key {
            lid: 0,
            out_reads: if write { 1 } else { 0x80 },
            qpn: local.qpn,
            psn: local.psn,
            rkey: mr.rkey(),
            va: mr.addr(),
            gid: Key::gid_of(port.ip),
            srqn: 0,
        };
        let theirs = x.keys(&mine).map_err(|e| io_err("keys", e))?;
        x.keys(&mine).map_err(|e| io_err("keys (2)", e))?;
        let ip = theirs.ipv4().ok_or_else(|| {
            Error::NotSupported(format!(
                "the peer's GID {:02x?} is not an IPv4-mapped (RoCEv2 over IPv4) GID",
                theirs.gid
            ))
        })?;
        let remote = Endpoint {
            qpn: theirs.qpn,
            psn: theirs.psn,
            mac: sim_mac_of(ip),
            ip,
            buffer: Some(RemoteBuffer { addr: theirs.va, rkey: theirs.rkey, len: total as u64 }),
        };
        let opts = ConnectOptions {
            path_mtu: mtu,
            access: if write { AccessFlags::REMOTE_WRITE } else { AccessFlags::REMOTE_READ },
            timeout: b.qp_timeout,
            max_rd_atomic: b.outs,
            max_dest_rd_atomic: b.outs,
            ..ConnectOptions::default()
        };
        qp.connect_with(&remote, &opts)?;
        // perftest's "additional handshake" after RTR.
        x.keys(&mine).map_err(|e| io_err("keys after RTR", e))?;

        let t0 = Instant::now();
        let mut run = ClientRun::default();
        if role == Role::Client {
            align_split_start(sim.as_ref())?;
            run = client_loop(b, &*dev, &mut qp, &cq, &mr, &remote, progress)?;
        }
        // Before the reports (bandwidth tests); the server waits here while the client runs.
        x.keys(&mine).map_err(|e| io_err("keys before the reports", e))?;
        let cycles = run.end.saturating_sub(run.start).max(1);
        let seconds = cycles as f64 / (CORE_CLOCK_MHZ as f64 * 1e6);
        let done = run.completed;
        let mine_rep = match role {
            Role::Client => BwReport {
                size: b.size,
                iters: b.iters,
                peak_gbps: (b.size * done) as f64 * 8.0 / seconds / 1e9,
                avg_gbps: (b.size * done) as f64 * 8.0 / seconds / 1e9,
                msg_rate_mpps: done as f64 / seconds / 1e6,
            },
            Role::Server => BwReport { size: b.size, iters: b.iters, ..BwReport::default() },
        };
        let peer_rep = x.report(&mine_rep).map_err(|e| io_err("reports", e))?;
        x.close(&mine).map_err(|e| io_err("close", e))?;
        let wall = t0.elapsed().as_secs_f64();
        let counters = ctx.counters()?;
        let rep = if role == Role::Client { mine_rep } else { peer_rep };
        let cycles = if role == Role::Client {
            cycles
        } else if rep.avg_gbps > 0.0 {
            ((rep.size * rep.iters) as f64 * 8.0 / (rep.avg_gbps * 1e9) * CORE_CLOCK_MHZ as f64 * 1e6).round() as u64
        } else {
            0
        };
        // The checked buffer, read through the MR (the device's view of it).
        let contents = mr.to_vec();
        Outcome { run, local, remote, rep, cycles, wall, counters, contents }
        // QP, CQ and MR dropped here, QP first.
    };
    let Outcome { run, local, remote, rep, cycles, wall, counters, contents } = outcome;
    let first_mismatch = match (role, write) {
        (Role::Server, true) => check_qp_buffer(&contents, b.size, 0, 1),
        (Role::Client, false) => check_qp_slots(&contents, b.size, 1, 0, 1),
        (Role::Server, false) => check_qp_buffer(&contents, b.size, 0, 1),
        (Role::Client, true) => None,
    };
    let completed_ok = match role {
        Role::Client => run.error.is_none() && !run.timed_out && run.completed == b.iters,
        Role::Server => rep.iters == b.iters,
    };
    Ok(RemoteReport {
        op: b.op.name(),
        role,
        device: o.device.clone(),
        size: b.size,
        iters: b.iters,
        mtu: mtu.bytes(),
        tx_depth: b.tx_depth,
        cq_mod: b.cq_mod,
        bytes: b.size * b.iters,
        cycles,
        clock_mhz: CORE_CLOCK_MHZ,
        gbps: rep.avg_gbps,
        mpps: rep.msg_rate_mpps,
        verified: completed_ok && first_mismatch.is_none(),
        first_mismatch,
        completed: run.completed,
        timed_out: run.timed_out,
        error: run.error,
        local,
        remote,
        peer_version,
        sim_clock: dev.clock_is_simulated(),
        interrupt_vectors: dev.interrupt_vectors(),
        wall_seconds: wall,
        sim_cycles_per_sec: sim
            .as_ref()
            .and_then(|sd| sd.world().try_borrow().ok().map(|w| w.stats().cycles_per_second)),
        sim_total_cycles: sim.as_ref().and_then(|sd| sd.world().try_borrow().ok().map(|w| w.cycles())),
        counters,
    })
}

struct Outcome {
    run: ClientRun,
    local: Endpoint,
    remote: Endpoint,
    rep: BwReport,
    cycles: u64,
    wall: f64,
    counters: Counters,
    contents: Vec<u8>,
}

#[derive(Default)]
struct ClientRun {
    start: u64,
    end: u64,
    completed: u64,
    timed_out: bool,
    error: Option<String>,
}

fn client_loop<'m>(
    b: &WriteBwOptions,
    dev: &dyn rnic::Device,
    qp: &mut rnic::QueuePair<'m>,
    cq: &rnic::CompletionQueue,
    mr: &'m rnic::MemoryRegion<'_>,
    remote: &Endpoint,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ClientRun> {
    let write = b.op == BwOp::Write;
    let size = b.size as usize;
    let slots = (mr.len() / size) as u64;
    let rb = remote.buffer.ok_or_else(|| Error::InvalidArgument("the server advertised no buffer".into()))?;
    let stall = b.budget_cycles.is_none().then(|| default_stall_cycles(b));
    let mut msg = vec![0u8; size];
    let mut wcs = [WorkCompletion::default(); 64];
    let mut batch = Vec::with_capacity(b.tx_depth as usize);
    let (mut posted, mut completed) = (0u64, 0u64);
    let mut r = ClientRun { start: dev.now_cycles(), ..ClientRun::default() };
    r.end = r.start;
    let mut last_progress = r.start;
    while completed < b.iters {
        let room = u64::from(b.tx_depth) - (posted - completed);
        let upto = b.iters.min(posted + room);
        if upto > posted {
            batch.clear();
            for k in posted..upto {
                let slot = (k % slots) as usize * size;
                if write {
                    fill_pattern(k, &mut msg);
                    mr.write_at(slot, &msg)?;
                }
                let signaled = (k + 1) % u64::from(b.cq_mod) == 0 || k + 1 == b.iters;
                let sge = mr.sge(slot..slot + size)?;
                let wr = if write {
                    SendWr::rdma_write(k, sge, rb.at(k * b.size))
                } else {
                    SendWr::rdma_read(k, sge, rb.at(k * b.size))
                };
                batch.push(wr.signaled(signaled));
            }
            qp.post_send(&batch)?;
            posted = upto;
        }
        let got = cq.poll(&mut wcs)?;
        for wc in &wcs[..got] {
            if !wc.status.is_success() {
                r.error.get_or_insert_with(|| format!("work request {} completed with {:?}", wc.wr_id, wc.status));
            } else {
                completed = completed.max(wc.wr_id + 1);
            }
        }
        let now = dev.now_cycles();
        if got > 0 {
            r.end = now;
            last_progress = now;
            progress(completed, b.iters);
        }
        if r.error.is_some() {
            r.end = now;
            break;
        }
        let gave_up = match (b.budget_cycles, stall) {
            (Some(budget), _) => now - r.start > budget,
            (None, Some(window)) => now - last_progress > window,
            (None, None) => false,
        };
        if gave_up {
            r.timed_out = true;
            r.end = now;
            break;
        }
    }
    r.completed = completed;
    Ok(r)
}
