//! `rnic perf write-lat` / `read-lat` / `send-lat`: ib_write_lat / ib_read_lat / ib_send_lat
//! between two simulated hosts, through the verbs only, with every message checked.
//!
//! - **write-lat** (ping-pong, as ib_write_lat): the client RDMA-WRITEs message `i` into the
//!   server's buffer; the server's host polls the message's last byte, checks the message, and
//!   WRITEs its reply `i` into the client's buffer, whose last byte the client polls. A sample is
//!   the client's round trip from its doorbell to seeing the reply, reported halved.
//! - **send-lat** (ping-pong, as ib_send_lat): the same with SEND / RECV; each side keeps
//!   receives posted and sees a message by its receive completion.
//! - **read-lat** (as ib_read_lat): the client posts one RDMA READ at a time and polls its CQ;
//!   a sample is doorbell → CQE seen, reported whole.
//! - **atomic-lat** (as ib_atomic_lat): the same with one 8-byte fetch-and-add of
//!   [`ATOMIC_ADD`] at a time on a u64 of the server's that starts at [`ATOMIC_INIT`]; atomic
//!   `i` must return `ATOMIC_INIT + i × ATOMIC_ADD`.
//!
//! Message `i` of side `s` (0 client, 1 server) carries pattern `2i + s` ([`fill_pattern`])
//! with its last byte replaced by [`marker`]`(i)`, so consecutive messages always differ in the
//! polled byte. Times are NIC cycles of the simulated 250 MHz clock; the host polls every
//! cycle or two and takes no simulated time to act (its own cost is not modelled).
use std::path::PathBuf;

use rnic::sim::{sim_error, sim_pair, SimConfig};
use rnic::{
    AccessFlags, ConnectOptions, Context, Endpoint, Error, Mtu, PortAddr, RecvWr, Result, SendWr, WcOpcode,
    WorkCompletion,
};
use serde::Serialize;

use super::stages::{self, HostStamps, Stages};
use super::stats::{LatencyHistogram, LatencyStats};
use super::{
    ack_timeout_cycles, fill_pattern, rnr_wait_cycles, BothCounters, Mismatch, ATOMIC_ADD, ATOMIC_BYTES, ATOMIC_INIT,
    MAX_INLINE_SIZE,
};

/// Largest latency message, bytes (each side holds two such buffers).
pub const MAX_LAT_BYTES: u64 = 1 << 28;

/// Default `cq_mod` of the latency tests (perftest's `DEF_CQ_MOD`, 100): one signaled WRITE or
/// SEND in 100; read-lat signals every READ (its completion is what it waits for).
pub const DEFAULT_LAT_CQ_MOD: u32 = 100;

/// Receives each side of send-lat keeps posted.
const SEND_LAT_RX_DEPTH: u32 = 16;

/// The operation a latency test measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LatOp {
    /// RDMA WRITE ping-pong, the last byte polled (ib_write_lat).
    Write,
    /// One RDMA READ at a time (ib_read_lat).
    Read,
    /// SEND / RECV ping-pong (ib_send_lat).
    Send,
    /// One 8-byte IBV_WR_ATOMIC_FETCH_AND_ADD at a time (ib_atomic_lat).
    Atomic,
}

impl LatOp {
    /// "write-lat", "read-lat" or "send-lat", the report's `op`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Write => "write-lat",
            Self::Read => "read-lat",
            Self::Send => "send-lat",
            Self::Atomic => "atomic-lat",
        }
    }

    /// Whether a sample is a ping-pong round trip reported halved (perftest's convention for
    /// WRITE and SEND latency).
    pub fn halved(self) -> bool {
        matches!(self, Self::Write | Self::Send)
    }

    /// One operation at a time from the client, the server passive (READ, atomic).
    pub fn one_sided(self) -> bool {
        !self.halved()
    }
}

/// Parameters of [`run_lat`].
#[derive(Clone, Debug)]
pub struct LatOptions {
    /// What to measure.
    pub op: LatOp,
    /// Message size in bytes, 1 ..= [`MAX_LAT_BYTES`].
    pub size: u64,
    /// Samples (ping-pong exchanges or READs), at least 1.
    pub iters: u64,
    /// Path MTU.
    pub mtu: Mtu,
    /// WRITE and SEND: messages of at most this many bytes are posted with IBV_SEND_INLINE
    /// (0 ..= [`MAX_INLINE_SIZE`]; perftest's `-I`).
    pub inline_size: u32,
    /// WRITE and SEND: signal one work request in `cq_mod` (and the last), 1 ..= 32768;
    /// the SQ holds `cq_mod` WRs. READ signals every one.
    pub cq_mod: u32,
    /// Local ACK timeout exponent of the QPs (4.096 µs × 2^n).
    pub qp_timeout: u8,
    /// A hard cycle budget for the whole run; None: give up only when one exchange makes no
    /// progress for [`lat_stall_cycles`].
    pub budget_cycles: Option<u64>,
    /// Keep the wire capture in this pcap file.
    pub pcap: Option<PathBuf>,
    /// Measure the per-stage breakdown ([`Stages`]) from a capture of the wire (a temporary
    /// file unless `pcap` is given). Skipped when the wire injects faults.
    pub stages: bool,
    /// Simulator parameters.
    pub sim: SimConfig,
}

impl Default for LatOptions {
    fn default() -> Self {
        Self {
            op: LatOp::Write,
            size: 2,
            iters: 1000,
            mtu: Mtu::Mtu4096,
            inline_size: 0,
            cq_mod: DEFAULT_LAT_CQ_MOD,
            qp_timeout: 4,
            budget_cycles: None,
            pcap: None,
            stages: true,
            sim: SimConfig::default(),
        }
    }
}

/// The outcome of [`run_lat`]: perftest's columns in µs at [`rnic_contract::CORE_CLOCK_MHZ`] (from the
/// simulated clock), the same in cycles, and the per-stage breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct LatReport {
    /// "write-lat", "read-lat" or "send-lat".
    pub op: &'static str,
    /// Message size, bytes.
    pub size: u64,
    /// Samples asked for.
    pub iters: u64,
    /// Samples taken (exchanges completed).
    pub completed: u64,
    /// Path MTU, bytes.
    pub mtu: u32,
    /// Messages posted inline when `size ≤ inline_size`.
    pub inline_size: u32,
    /// One signaled WR in `cq_mod` (WRITE, SEND; READ: 1).
    pub cq_mod: u32,
    /// Samples are round trips reported halved (WRITE, SEND) or whole (READ).
    pub halved: bool,
    /// The latency figures (µs and cycles; flat in the JSON: `t_min_us`, … `p99_9_us`,
    /// `cycles`, `clock_mhz`).
    #[serde(flatten)]
    pub stats: LatencyStats,
    /// Every sample, for `--plot` (not in the JSON).
    #[serde(skip)]
    pub histogram: LatencyHistogram,
    /// Every exchange completed, every message arrived intact, no error completion.
    pub verified: bool,
    /// The first wrong byte of a received message (`iteration`: its exchange; `qp` 1 when the
    /// server received it, 0 the client).
    pub first_mismatch: Option<Mismatch>,
    /// The run gave up (budget or stall).
    pub timed_out: bool,
    /// The first error completion or driver error.
    pub error: Option<String>,
    /// Per-stage breakdown (None when not asked for or not measurable, see `stages_note`).
    pub stages: Option<Stages>,
    /// Why there is no breakdown, if there is none.
    pub stages_note: Option<String>,
    /// Simulated cycles from the first doorbell to the last sample.
    pub run_cycles: u64,
    /// Simulated cycles per wall-clock second, whole run.
    pub sim_cycles_per_sec: f64,
    /// Wall seconds the simulator stepped.
    pub sim_wall_seconds: f64,
    /// Frames written to the user's pcap file (0 without `--pcap`).
    pub pcap_frames: u64,
    /// The client's endpoint.
    pub client: Endpoint,
    /// The server's endpoint.
    pub server: Endpoint,
    /// NIC counters after the run.
    pub counters: BothCounters,
}

/// The polled last byte of message `i`: 1 ..= 255, never equal for consecutive `i`.
pub fn marker(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

/// Fills `out` with message `i` of side `side` (0 client, 1 server).
pub fn fill_lat_message(i: u64, side: u64, out: &mut [u8]) {
    fill_pattern(2 * i + side, out);
    if let Some(last) = out.last_mut() {
        *last = marker(i);
    }
}

/// Packets of a message of `size` bytes at `mtu`.
pub(super) fn packets(size: u64, mtu: Mtu) -> u64 {
    size.div_ceil(u64::from(mtu.bytes())).max(1)
}

/// Without a hard budget, the longest one exchange may take before the run gives up, cycles:
/// 2 M of slack, 20× the wire time of two messages at 100 Gb/s, 8 local ACK timeouts, and for
/// SEND 4 RNR waits of the default timer.
pub fn lat_stall_cycles(o: &LatOptions) -> u64 {
    let wire = 20 * 2 * o.size / 50;
    let rnr = if o.op == LatOp::Send { 4 * rnr_wait_cycles(12) } else { 0 };
    2_000_000u64.saturating_add(wire).saturating_add(8 * ack_timeout_cycles(o.qp_timeout)).saturating_add(rnr)
}

/// Checks the options before anything is built.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the option.
pub fn check_lat_options(o: &LatOptions) -> Result<()> {
    let inval = |m: String| Err(Error::InvalidArgument(m));
    if o.size == 0 || o.size > MAX_LAT_BYTES {
        return inval(format!("--size {} must be 1..={MAX_LAT_BYTES} bytes for a latency test", o.size));
    }
    if o.iters == 0 {
        return inval("--iters must be at least 1".into());
    }
    if o.cq_mod == 0 || o.cq_mod > rnic::qp::MAX_SEND_WR {
        return inval(format!("--cq-mod {} must be 1..={}", o.cq_mod, rnic::qp::MAX_SEND_WR));
    }
    if o.inline_size > MAX_INLINE_SIZE {
        return inval(format!("--inline-size {} must be 0..={MAX_INLINE_SIZE}", o.inline_size));
    }
    if o.op.one_sided() && o.inline_size != 0 {
        return inval(format!(
            "--inline-size {}: {} carries no inline data, so --inline-size must be 0",
            o.inline_size,
            if o.op == LatOp::Read { "an RDMA READ" } else { "an atomic" }
        ));
    }
    if o.op == LatOp::Atomic && o.size != ATOMIC_BYTES {
        return inval(format!("--size {}: an atomic moves {ATOMIC_BYTES} bytes, so --size must be 8", o.size));
    }
    Ok(())
}

/// One side's state in a ping-pong.
struct Side<'m, 'b> {
    qp: rnic::QueuePair<'m>,
    cq: rnic::CompletionQueue,
    mr: &'m rnic::MemoryRegion<'b>,
    remote: rnic::RemoteBuffer,
    /// WRs posted, and retired by a signaled completion.
    posted: u64,
    retired: u64,
    /// Cycle stamps per exchange: doorbell, payload seen from the peer, own CQE seen.
    doorbell: Vec<u64>,
    seen: Vec<u64>,
    cqe: Vec<Option<u64>>,
    /// Receives consumed (SEND).
    received: u64,
    /// A signaled WR awaits its completion.
    pending: bool,
}

/// Runs a latency test (see the module documentation).
///
/// # Errors
/// Invalid options ([`check_lat_options`]), simulator or driver setup failures. Timeouts,
/// error completions and wrong bytes are in the report.
pub fn run_lat(o: &LatOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<LatReport> {
    check_lat_options(o)?;
    let size = o.size as usize;
    let faults = !o.sim.faults.is_none();
    let (world, dev_c, dev_s) = sim_pair(o.sim.clone())?;
    let tmp = if o.stages && o.pcap.is_none() && !faults {
        Some(tempfile::Builder::new().prefix("rnic-lat-").suffix(".pcap").tempfile().map_err(|e| {
            Error::io(rnic::IoKind::File, "creating a temporary pcap file for the stage breakdown".to_owned(), e)
        })?)
    } else {
        None
    };
    let cap = o.pcap.clone().or_else(|| tmp.as_ref().map(|t| t.path().to_path_buf()));
    if let Some(p) = &cap {
        world.borrow_mut().capture_pcap(p).map_err(|e| sim_error(format!("pcap capture into {}", p.display()), e))?;
    }
    let client = Context::open_with_port(dev_c, PortAddr::for_sim_nic(0))?;
    let server = Context::open_with_port(dev_s, PortAddr::for_sim_nic(1))?;
    let dev = client.device().clone();
    // `read`: one operation at a time, server passive (READ and atomic).
    let (read, send, atomic) = (o.op.one_sided(), o.op == LatOp::Send, o.op == LatOp::Atomic);
    let inline = !read && o.size <= u64::from(o.inline_size);
    // Each side: [destination | source]; READ: the client's destination, the server's source.
    let mut buf_c = vec![0u8; if read { size } else { 2 * size }];
    // An atomic's target must be 8-byte aligned: the word starts at the first aligned byte.
    let mut buf_s = vec![0u8; if read { size + if atomic { 8 } else { 0 } } else { 2 * size }];
    let off_s = if atomic { buf_s.as_ptr().align_offset(8) } else { 0 };
    if atomic {
        buf_s[off_s..off_s + 8].copy_from_slice(&ATOMIC_INIT.to_le_bytes());
    } else if read {
        fill_pattern(1, &mut buf_s);
    }
    let mut expected = vec![0u8; size];
    let mut got = vec![0u8; size];
    let mut msg = vec![0u8; size];
    let stall = o.budget_cycles.is_none().then(|| lat_stall_cycles(o));
    let sq_depth = if read { 1 } else { o.cq_mod.min(o.iters.try_into().unwrap_or(u32::MAX)).max(1) };
    let (pd_c, pd_s) = (client.alloc_pd()?, server.alloc_pd()?);
    let mut error: Option<String> = None;
    let mut mismatch: Option<Mismatch> = None;
    let mut timed_out = false;
    let mut hist = LatencyHistogram::new(if o.op.halved() { 0.5 } else { 1.0 });
    let run = {
        let (acc_c, acc_s, remote_acc) = match o.op {
            LatOp::Write => (
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
                AccessFlags::REMOTE_WRITE,
            ),
            LatOp::Send => (AccessFlags::LOCAL_WRITE, AccessFlags::LOCAL_WRITE, AccessFlags::empty()),
            LatOp::Read => (AccessFlags::LOCAL_WRITE, AccessFlags::REMOTE_READ, AccessFlags::REMOTE_READ),
            LatOp::Atomic => (
                AccessFlags::LOCAL_WRITE,
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
                AccessFlags::REMOTE_ATOMIC,
            ),
        };
        let mr_c = pd_c.register(&mut buf_c, acc_c)?;
        let server_len = if atomic { 8 } else { buf_s.len() };
        let mr_s = pd_s.register(&mut buf_s[off_s..off_s + server_len], acc_s)?;
        let rx = if send { SEND_LAT_RX_DEPTH.min(o.iters.try_into().unwrap_or(u32::MAX)) } else { 0 };
        let cq_entries = (sq_depth.next_power_of_two() + rx.next_power_of_two()) as usize;
        let mk = |pd: &rnic::ProtectionDomain, cq: &rnic::CompletionQueue| {
            pd.create_qp(cq).set_max_send_wr(sq_depth).set_max_recv_wr(rx).set_max_inline_data(o.inline_size).build()
        };
        let cq_c = client.create_cq(cq_entries)?;
        let cq_s = server.create_cq(cq_entries)?;
        let mut qp_c = mk(&pd_c, &cq_c)?;
        let mut qp_s = mk(&pd_s, &cq_s)?;
        let ep_c = qp_c.endpoint()?.with_buffer(&mr_c);
        let ep_s = qp_s.endpoint()?.with_buffer(&mr_s);
        let opts = ConnectOptions {
            path_mtu: o.mtu,
            access: remote_acc,
            timeout: o.qp_timeout,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
            ..ConnectOptions::default()
        };
        qp_c.connect_with(&ep_s, &opts)?;
        qp_s.connect_with(&ep_c, &opts)?;
        let remote_of =
            |ep: &Endpoint| ep.buffer.ok_or_else(|| Error::InvalidArgument("endpoint without buffer".into()));
        let n = o.iters as usize;
        let mut sides = [
            Side {
                qp: qp_c,
                cq: cq_c,
                mr: &mr_c,
                remote: remote_of(&ep_s)?,
                posted: 0,
                retired: 0,
                doorbell: Vec::with_capacity(n),
                seen: Vec::with_capacity(n),
                cqe: Vec::with_capacity(n),
                received: 0,
                pending: false,
            },
            Side {
                qp: qp_s,
                cq: cq_s,
                mr: &mr_s,
                remote: remote_of(&ep_c)?,
                posted: 0,
                retired: 0,
                doorbell: Vec::with_capacity(n),
                seen: Vec::with_capacity(n),
                cqe: Vec::with_capacity(n),
                received: 0,
                pending: false,
            },
        ];
        if send {
            for s in &mut sides {
                let wrs: Vec<RecvWr<'_>> =
                    (0..rx).map(|k| Ok(RecvWr::new(u64::from(k), s.mr.sge(0..size)?))).collect::<Result<_>>()?;
                s.qp.post_recv(&wrs)?;
            }
        }
        let mut wcs = [WorkCompletion::default(); 16];
        let start = dev.now_cycles();
        let mut end = start;
        'iters: for i in 0..o.iters {
            let signaled = read || (i + 1) % u64::from(o.cq_mod) == 0 || i + 1 == o.iters;
            // The client posts message i (READ: its READ).
            if let Err(e) = post(&mut sides[0], o, i, 0, signaled, inline, &mut msg, &*dev, read) {
                error = Some(e);
                break;
            }
            let t0 = sides[0].doorbell[i as usize];
            // Ping-pong: the server answers; the client waits for the answer (READ: its CQE).
            let mut server_done = read;
            let mut last_progress = dev.now_cycles();
            loop {
                let mut stepped = false;
                for who in 0..2usize {
                    let s = &mut sides[who];
                    // Send completions (and receives) on this side's CQ.
                    let waiting_cqe = s.pending;
                    let waiting_recv = send && (who == 0 || !server_done) && s.seen.len() as u64 <= i;
                    if !(waiting_cqe || waiting_recv || (read && who == 0)) {
                        continue;
                    }
                    let k = s.cq.poll(&mut wcs)?;
                    stepped |= k == 0;
                    let at = dev.now_cycles();
                    for wc in &wcs[..k] {
                        if !wc.status.is_success() {
                            error.get_or_insert_with(|| {
                                format!(
                                    "{} work request {} completed with {:?}",
                                    ["client", "server"][who],
                                    wc.wr_id,
                                    wc.status
                                )
                            });
                        } else if wc.opcode == WcOpcode::Recv {
                            if u64::from(wc.byte_len) != o.size {
                                error.get_or_insert_with(|| {
                                    format!("receive of {} bytes, expected {}", wc.byte_len, o.size)
                                });
                            }
                            s.seen.push(at);
                            s.received += 1;
                            // Keep `rx` receives posted.
                            let wr = RecvWr::new(s.received + u64::from(rx), s.mr.sge(0..size)?);
                            s.qp.post_recv(&[wr])?;
                        } else {
                            s.retired = s.retired.max(wc.wr_id + 1);
                            s.pending = false;
                            if let Some(c) = s.cqe.get_mut(wc.wr_id as usize) {
                                *c = Some(at);
                            }
                            if read && who == 0 && wc.wr_id == i {
                                s.seen.push(at);
                            }
                        }
                    }
                }
                if error.is_some() {
                    end = dev.now_cycles();
                    break 'iters;
                }
                // WRITE: the hosts poll the last byte of their destination.
                let now = dev.now_cycles();
                if o.op == LatOp::Write {
                    for (who, s) in sides.iter_mut().enumerate() {
                        if s.seen.len() as u64 == i && (who == 0 || !server_done) {
                            let mut b = [0u8; 1];
                            s.mr.read_at(size - 1, &mut b)?;
                            if b[0] == marker(i) {
                                s.seen.push(now);
                            }
                        }
                    }
                }
                // The server saw message i: check it and answer.
                if !server_done && sides[1].seen.len() as u64 > i {
                    check_message(sides[1].mr, i, 0, &mut expected, &mut got, 1, &mut mismatch)?;
                    server_done = true;
                    if let Err(e) = post(&mut sides[1], o, i, 1, signaled, inline, &mut msg, &*dev, false) {
                        error = Some(e);
                        break 'iters;
                    }
                    last_progress = dev.now_cycles();
                }
                if server_done && sides[0].seen.len() as u64 > i {
                    let t1 = sides[0].seen[i as usize];
                    if atomic {
                        let want = ATOMIC_INIT.wrapping_add(i.wrapping_mul(ATOMIC_ADD));
                        expected.copy_from_slice(&want.to_le_bytes());
                        sides[0].mr.read_at(0, &mut got)?;
                        note_mismatch(&expected, &got, i, 0, &mut mismatch);
                    } else if read {
                        check_read(sides[0].mr, &mut expected, &mut got, i, &mut mismatch)?;
                    } else {
                        check_message(sides[0].mr, i, 1, &mut expected, &mut got, 0, &mut mismatch)?;
                    }
                    hist.record(t1 - t0);
                    end = t1;
                    progress(i + 1, o.iters);
                    break;
                }
                if !stepped {
                    dev.poll_progress();
                }
                let now = dev.now_cycles();
                let gave_up = match (o.budget_cycles, stall) {
                    (Some(b), _) => now - start > b,
                    (None, Some(w)) => now - last_progress > w,
                    (None, None) => false,
                };
                if gave_up {
                    timed_out = true;
                    end = now;
                    break 'iters;
                }
            }
        }
        // Let the last ACKs and CQEs settle, then collect the remaining signaled completions.
        world.borrow_mut().step_n(2_000);
        for s in &mut sides {
            let k = s.cq.poll(&mut wcs)?;
            for wc in &wcs[..k] {
                if wc.opcode != WcOpcode::Recv && !wc.status.is_success() {
                    error.get_or_insert_with(|| format!("work request {} completed with {:?}", wc.wr_id, wc.status));
                }
            }
        }
        let counters = BothCounters { client: client.counters()?, server: server.counters()? };
        let stamps: Vec<[Vec<u64>; 2]> = sides.iter().map(|s| [s.doorbell.clone(), s.seen.clone()]).collect();
        let cqes: Vec<Vec<Option<u64>>> = sides.iter().map(|s| s.cqe.clone()).collect();
        Run { start, end, counters, ep_c, ep_s, stamps, cqes }
    };
    let pcap_frames = if o.pcap.is_some() { world.borrow().captured_frames() } else { 0 };
    world.borrow_mut().finish().map_err(|e| sim_error("finishing the pcap capture", e))?;
    let completed = hist.len();
    let clean = error.is_none() && !timed_out && mismatch.is_none() && completed == o.iters;
    let (stages, stages_note) = match (&cap, o.stages) {
        (_, false) => (None, None),
        (None, true) => (None, Some("the wire injects faults: the capture cannot be matched to messages".to_owned())),
        (Some(p), true) => match stages::read_frames(p) {
            Ok(frames) => {
                let msgs = host_stamps(o, &run);
                let dma = (o.sim.dma_read_latency_cycles, o.sim.dma_write_latency_cycles);
                (Some(stages::measure(&frames, &msgs, &o.sim.link, dma)), None)
            }
            Err(e) => (None, Some(format!("reading the capture: {e}"))),
        },
    };
    let sim = world.borrow().stats();
    Ok(LatReport {
        op: o.op.name(),
        size: o.size,
        iters: o.iters,
        completed,
        mtu: o.mtu.bytes(),
        inline_size: o.inline_size,
        cq_mod: if read { 1 } else { o.cq_mod },
        halved: o.op.halved(),
        stats: hist.stats(),
        histogram: hist,
        verified: clean,
        first_mismatch: mismatch,
        timed_out,
        error,
        stages,
        stages_note,
        run_cycles: run.end.saturating_sub(run.start),
        sim_cycles_per_sec: sim.cycles_per_second,
        sim_wall_seconds: sim.wall_seconds,
        pcap_frames,
        client: run.ep_c,
        server: run.ep_s,
        counters: run.counters,
    })
}

/// What the measured part of [`run_lat`] hands back once its QPs and MRs are gone.
struct Run {
    start: u64,
    end: u64,
    counters: BothCounters,
    ep_c: Endpoint,
    ep_s: Endpoint,
    /// Per side: doorbell and seen stamps per exchange.
    stamps: Vec<[Vec<u64>; 2]>,
    /// Per side: CQE stamps per WR (signaled ones).
    cqes: Vec<Vec<Option<u64>>>,
}

/// The host stamps of every message, for [`stages::measure`].
fn host_stamps(o: &LatOptions, r: &Run) -> Vec<HostStamps> {
    let read = o.op.one_sided();
    let ips = [PortAddr::for_sim_nic(0).ip, PortAddr::for_sim_nic(1).ip];
    let req_packets = if read { 1 } else { packets(o.size, o.mtu) };
    let resp_packets = if o.op == LatOp::Read { packets(o.size, o.mtu) } else { 1 };
    let mut out = Vec::new();
    for i in 0..r.stamps[0][0].len() {
        for (side, &ip) in ips.iter().enumerate().take(if read { 1 } else { 2 }) {
            let peer = 1 - side;
            let Some(&doorbell) = r.stamps[side][0].get(i) else { continue };
            out.push(HostStamps {
                requester: Some(ip),
                doorbell,
                request_packets: req_packets,
                response_packets: resp_packets,
                delivered: if read { None } else { r.stamps[peer][1].get(i).copied() },
                completed: r.cqes[side].get(i).copied().flatten(),
            });
        }
    }
    out
}

/// Posts message `i` of `side` on `s` (READ: the READ of the server's buffer), stamping the
/// doorbell; waits for SQ room first.
#[allow(clippy::too_many_arguments)]
fn post(
    s: &mut Side<'_, '_>,
    o: &LatOptions,
    i: u64,
    side: u64,
    signaled: bool,
    inline: bool,
    msg: &mut [u8],
    dev: &dyn rnic::Device,
    read: bool,
) -> std::result::Result<(), String> {
    let size = msg.len();
    let depth = s.qp.sq_capacity() as u64;
    let mut wcs = [WorkCompletion::default(); 16];
    let mut waited = 0u64;
    while s.posted - s.retired >= depth {
        let k = s.cq.poll(&mut wcs).map_err(|e| e.to_string())?;
        let at = dev.now_cycles();
        for wc in &wcs[..k] {
            if !wc.status.is_success() {
                return Err(format!("work request {} completed with {:?}", wc.wr_id, wc.status));
            }
            if wc.opcode == WcOpcode::Recv {
                return Err("a receive completed while the sender waited for send queue room".into());
            } else {
                s.retired = s.retired.max(wc.wr_id + 1);
                s.pending = false;
                if let Some(c) = s.cqe.get_mut(wc.wr_id as usize) {
                    *c = Some(at);
                }
            }
        }
        waited += 1;
        if waited > lat_stall_cycles(o) {
            return Err("the send queue never drained".into());
        }
    }
    let e = |e: Error| e.to_string();
    let wr = if read {
        // Clear the destination, so the check proves this READ wrote every byte.
        msg.fill(0xEE);
        s.mr.write_at(0, msg).map_err(e)?;
        if o.op == LatOp::Atomic {
            SendWr::atomic_fetch_and_add(i, s.mr.sge(0..size).map_err(e)?, s.remote.at(0), ATOMIC_ADD)
        } else {
            SendWr::rdma_read(i, s.mr.sge(0..size).map_err(e)?, s.remote.at(0))
        }
    } else {
        fill_lat_message(i, side, msg);
        let sge = s.mr.sge(size..2 * size).map_err(e)?;
        let wr = if o.op == LatOp::Send { SendWr::send(i, sge) } else { SendWr::rdma_write(i, sge, s.remote.at(0)) };
        if inline {
            wr.with_inline(msg).map_err(e)?
        } else {
            s.mr.write_at(size, msg).map_err(e)?;
            wr
        }
    };
    s.doorbell.push(dev.now_cycles());
    s.cqe.push(None);
    s.qp.post_send(&[wr.signaled(signaled)]).map_err(|p| p.error.to_string())?;
    s.posted += 1;
    s.pending |= signaled;
    Ok(())
}

/// Checks the destination of `mr` against message `i` of `side`; records the first mismatch
/// (`qp`: the receiving side).
fn check_message(
    mr: &rnic::MemoryRegion<'_>,
    i: u64,
    side: u64,
    expected: &mut [u8],
    got: &mut [u8],
    receiver: u32,
    mismatch: &mut Option<Mismatch>,
) -> Result<()> {
    fill_lat_message(i, side, expected);
    mr.read_at(0, got)?;
    note_mismatch(expected, got, i, receiver, mismatch);
    Ok(())
}

/// Checks a READ's destination against the server's buffer (pattern 1).
fn check_read(
    mr: &rnic::MemoryRegion<'_>,
    expected: &mut [u8],
    got: &mut [u8],
    i: u64,
    mismatch: &mut Option<Mismatch>,
) -> Result<()> {
    fill_pattern(1, expected);
    mr.read_at(0, got)?;
    note_mismatch(expected, got, i, 0, mismatch);
    Ok(())
}

fn note_mismatch(expected: &[u8], got: &[u8], i: u64, receiver: u32, mismatch: &mut Option<Mismatch>) {
    if mismatch.is_some() || expected == got {
        return;
    }
    let count = expected.iter().zip(got.iter()).filter(|(a, b)| a != b).count() as u64;
    if let Some(off) = expected.iter().zip(got.iter()).position(|(a, b)| a != b) {
        *mismatch = Some(Mismatch {
            qp: receiver,
            offset: off as u64,
            iteration: i,
            expected: expected[off],
            found: got[off],
            count,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_never_repeat_back_to_back_and_are_never_zero() {
        for i in 0..1000 {
            assert_ne!(marker(i), 0);
            assert_ne!(marker(i), marker(i + 1));
        }
        let (mut a, mut b) = ([0u8; 9], [0u8; 9]);
        fill_lat_message(3, 0, &mut a);
        fill_lat_message(3, 1, &mut b);
        assert_eq!((a[8], b[8]), (marker(3), marker(3)));
        assert_ne!(a[..8], b[..8]);
    }

    #[test]
    fn options_are_checked() {
        let ok = LatOptions::default();
        check_lat_options(&ok).unwrap();
        check_lat_options(&LatOptions { op: LatOp::Atomic, size: 8, ..ok.clone() }).unwrap();
        for (bad, flag) in [
            (LatOptions { size: 0, ..ok.clone() }, "--size"),
            (LatOptions { size: MAX_LAT_BYTES + 1, ..ok.clone() }, "--size"),
            (LatOptions { iters: 0, ..ok.clone() }, "--iters"),
            (LatOptions { cq_mod: 0, ..ok.clone() }, "--cq-mod"),
            (LatOptions { op: LatOp::Read, inline_size: 8, ..ok.clone() }, "--inline-size"),
            (LatOptions { op: LatOp::Atomic, size: 16, ..ok.clone() }, "--size 16"),
            (LatOptions { op: LatOp::Atomic, size: 8, inline_size: 8, ..ok.clone() }, "an atomic"),
        ] {
            assert!(check_lat_options(&bad).unwrap_err().to_string().contains(flag), "{bad:?}");
        }
    }
}
