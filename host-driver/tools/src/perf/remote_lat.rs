//! One side of a two-sided latency test (`rnic perf write-lat|read-lat|send-lat|atomic-lat --device DEV
//! [HOST]`), as ib_*_lat runs one side per host: the server (no HOST) listens on the TCP port,
//! the client connects; they meet through perftest's exchange ([`super::exchange`]: version,
//! system data, MTU, key exchanges, and after the run one more key exchange and "done"; a
//! latency test has no report exchange).
//!
//! Both sides of write-lat and send-lat are active, as in perftest: the server waits for message
//! `i` (polling its buffer's last byte, or its receive completion), checks it, and answers with
//! its own message `i`; the client posts message `i` and waits for the answer. read-lat's server
//! only waits. Messages are [`fill_lat_message`]'s, every one checked by its receiver; the READ
//! client checks each READ against the server's pattern. Each side measures what it waits for
//! on its device's clock (the simulator's cycles over vfio-user; wall time at the contract clock
//! otherwise): the client's samples are doorbell → answer seen (halved for write and send), the
//! server's (write, send) message seen → next message seen (a full exchange, halved).
//! There is no per-stage breakdown here (the wire is in another process).
use std::rc::Rc;
use std::time::Duration;

use rnic::{
    AccessFlags, ConnectOptions, Context, Endpoint, Error, PortAddr, RecvWr, RemoteBuffer, Result, SendWr, WcOpcode,
    WorkCompletion,
};
use serde::Serialize;

use super::exchange::Key;
use super::lat::{fill_lat_message, lat_stall_cycles, marker, LatOp, LatOptions};
use super::remote::{align_split_start, sim_mac_of, Role, Side};
use super::stages::SideStamps;
use super::stats::{LatencyHistogram, LatencyStats};
use super::{fill_pattern, Mismatch, ATOMIC_ADD, ATOMIC_INIT};

/// Receives each side of a two-sided send-lat keeps posted.
const RX_DEPTH: u32 = 16;

/// Options of one side.
#[derive(Clone, Debug)]
pub struct RemoteLatOptions {
    /// The test (`pcap` and `stages` are ignored: the wire is not in this process).
    pub lat: LatOptions,
    /// The device string.
    pub device: String,
    /// The server's address (client), or None (server).
    pub host: Option<String>,
    /// TCP port of the exchange.
    pub port: u16,
    /// How long the client retries connecting.
    pub connect_timeout: Duration,
    /// Write this side's doorbell and message stamps here (JSON, [`SideStamps`]) for
    /// `rnic perf stages`.
    pub stamps: Option<std::path::PathBuf>,
}

/// The outcome of one side.
#[derive(Clone, Debug, Serialize)]
pub struct RemoteLatReport {
    /// "write-lat", "read-lat", "send-lat" or "atomic-lat".
    pub op: &'static str,
    /// "server" or "client".
    pub role: Role,
    /// The device string.
    pub device: String,
    /// Message size, bytes.
    pub size: u64,
    /// Exchanges asked for.
    pub iters: u64,
    /// Samples this side took.
    pub completed: u64,
    /// Path MTU after the exchange, bytes.
    pub mtu: u32,
    /// Samples are round trips reported halved.
    pub halved: bool,
    /// The latency figures (µs and cycles; flat in the JSON: `t_min_us`, … `p99_9_us`,
    /// `cycles`, `clock_mhz`).
    #[serde(flatten)]
    pub stats: LatencyStats,
    /// The time base is the simulator's cycle count (true) or wall time (false).
    pub sim_clock: bool,
    /// Every message this side received was intact, every exchange completed, no error.
    pub verified: bool,
    /// The first wrong byte this side received.
    pub first_mismatch: Option<Mismatch>,
    /// This side gave up waiting.
    pub timed_out: bool,
    /// The first error.
    pub error: Option<String>,
    /// This side's endpoint.
    pub local: Endpoint,
    /// The peer's endpoint.
    pub remote: Endpoint,
    /// The peer's perftest version string.
    pub peer_version: String,
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::io(rnic::IoKind::Backend, format!("perftest exchange: {what}"), e)
}

/// Runs one side (see the module documentation).
///
/// # Errors
/// Invalid options, a device that cannot be opened, the exchange failing, driver errors during
/// setup. Timeouts, error completions and wrong bytes are in the report.
pub fn run_remote_lat(o: &RemoteLatOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<RemoteLatReport> {
    let l = &o.lat;
    super::lat::check_lat_options(l)?;
    let role = if o.host.is_some() { Role::Client } else { Role::Server };
    let client = role == Role::Client;
    // `read`: one operation at a time, server passive (READ and atomic).
    let (read, send, atomic) = (l.op.one_sided(), l.op == LatOp::Send, l.op == LatOp::Atomic);
    let size = l.size as usize;
    let nic = if client { 0 } else { 1 };
    let Side { dev, sim, exchange: mut x } =
        Side::open(&o.device, &l.sim, nic, o.host.as_deref(), o.port, o.connect_timeout)?;
    let ctx = Context::open_shared(Rc::clone(&dev))?;
    let port = PortAddr::for_sim_nic(nic);
    ctx.set_port_addr(port)?;
    let peer_version = x.version().map_err(|e| io_err("version", e))?;
    x.sys_data().map_err(|e| io_err("system data", e))?;
    let mtu = x.mtu(l.mtu).map_err(|e| io_err("MTU", e))?;

    // [destination | source]; READ: the client's destination, the server's pattern.
    // An atomic's target word must be 8-byte aligned: it starts at the first aligned byte.
    let mut buf = vec![0u8; if read { size + if atomic { 8 } else { 0 } } else { 2 * size }];
    let off = if atomic { buf.as_ptr().align_offset(8) } else { 0 };
    if atomic && !client {
        buf[off..off + 8].copy_from_slice(&ATOMIC_INIT.to_le_bytes());
    } else if read && !client {
        fill_pattern(1, &mut buf);
    }
    let access = match (l.op, client) {
        (LatOp::Write, _) => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        (LatOp::Send, _) | (LatOp::Read, true) => AccessFlags::LOCAL_WRITE,
        (LatOp::Read, false) => AccessFlags::REMOTE_READ,
        (LatOp::Atomic, true) => AccessFlags::LOCAL_WRITE,
        (LatOp::Atomic, false) => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
    };
    let inline = !read && l.size <= u64::from(l.inline_size);
    let sq_depth = if read { 1 } else { l.cq_mod.min(l.iters.try_into().unwrap_or(u32::MAX)).max(1) };
    let rx = if send { RX_DEPTH.min(l.iters.try_into().unwrap_or(u32::MAX)) } else { 0 };
    let pd = ctx.alloc_pd()?;
    let mut hist = LatencyHistogram::new(if l.op.halved() { 0.5 } else { 1.0 });
    let mut mismatch = None;
    let mut error = None;
    let mut timed_out = false;
    let (local, remote) = {
        let len = if atomic { size } else { buf.len() };
        let mr = pd.register(&mut buf[off..off + len], access)?;
        let cq = ctx.create_cq((sq_depth.next_power_of_two() + rx.next_power_of_two()) as usize)?;
        let mut qp = pd
            .create_qp(&cq)
            .set_max_send_wr(sq_depth)
            .set_max_recv_wr(rx)
            .set_max_inline_data(l.inline_size)
            .build()?;
        let local = qp.endpoint()?.with_buffer(&mr);
        let mine = Key {
            lid: 0,
            out_reads: if read { 1 } else { 0 },
            qpn: local.qpn,
            psn: local.psn,
            rkey: mr.rkey(),
            va: mr.addr(),
            gid: Key::gid_of(port.ip),
            srqn: 0,
        };
        let theirs = x.keys(&mine).map_err(|e| io_err("keys", e))?;
        x.keys(&mine).map_err(|e| io_err("keys (2)", e))?;
        let ip = theirs.ipv4().ok_or_else(|| Error::NotSupported("the peer's GID is not IPv4-mapped".into()))?;
        let remote = Endpoint {
            qpn: theirs.qpn,
            psn: theirs.psn,
            mac: sim_mac_of(ip),
            ip,
            buffer: Some(RemoteBuffer { addr: theirs.va, rkey: theirs.rkey, len: l.size }),
        };
        let opts = ConnectOptions {
            path_mtu: mtu,
            access: match l.op {
                LatOp::Write => AccessFlags::REMOTE_WRITE,
                LatOp::Read => AccessFlags::REMOTE_READ,
                LatOp::Send => AccessFlags::empty(),
                LatOp::Atomic => AccessFlags::REMOTE_ATOMIC,
            },
            timeout: l.qp_timeout,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
            ..ConnectOptions::default()
        };
        qp.connect_with(&remote, &opts)?;
        if send {
            let wrs: Vec<RecvWr<'_>> =
                (0..rx).map(|k| Ok(RecvWr::new(u64::from(k), mr.sge(0..size)?))).collect::<Result<_>>()?;
            qp.post_recv(&wrs)?;
        }
        // perftest's handshake after RTR: both sides are ready before the first message.
        x.keys(&mine).map_err(|e| io_err("keys after RTR", e))?;

        let stall = l.budget_cycles.unwrap_or_else(|| lat_stall_cycles(l));
        let rb = remote.buffer.ok_or_else(|| Error::InvalidArgument("no remote buffer".into()))?;
        let mut room_wcs = [WorkCompletion::default(); 16];
        let mut msg = vec![0u8; size];
        let (mut expected, mut got) = (vec![0u8; size], vec![0u8; size]);
        let (mut posted, mut retired, mut received) = (0u64, 0u64, 0u64);
        let mut last_seen: Option<u64> = None;
        let (mut doorbells, mut seen) = (Vec::new(), Vec::new());
        let mut w = Waiter { l, mr: &mr, cq: &cq, dev: &*dev, wcs: [WorkCompletion::default(); 16], rx, stall };
        if client {
            align_split_start(sim.as_ref())?;
        }
        for i in 0..l.iters {
            let signaled = read || (i + 1) % u64::from(l.cq_mod) == 0 || i + 1 == l.iters;
            // The server of write and send answers message i; read's server only waits.
            if !client {
                if read {
                    break;
                }
                let Some(at) = w.wait(i, &mut qp, &mut retired, &mut received, &mut error)? else {
                    timed_out = error.is_none();
                    break;
                };
                seen.push(at);
                if let Some(prev) = last_seen {
                    hist.record(at - prev);
                }
                last_seen = Some(at);
                fill_lat_message(i, 0, &mut expected);
                mr.read_at(0, &mut got)?;
                note(&expected, &got, i, &mut mismatch);
            }
            // Room in the SQ (unsignaled WRs retire with the next signaled one).
            while posted - retired >= u64::from(sq_depth) {
                let k = cq.poll(&mut room_wcs)?;
                for wc in &room_wcs[..k] {
                    if !wc.status.is_success() {
                        error
                            .get_or_insert_with(|| format!("work request {} completed with {:?}", wc.wr_id, wc.status));
                    } else if wc.opcode != WcOpcode::Recv {
                        retired = retired.max(wc.wr_id + 1);
                    }
                }
                if error.is_some() {
                    break;
                }
                dev.poll_progress();
            }
            if error.is_some() {
                break;
            }
            let wr = if read {
                msg.fill(0xEE);
                mr.write_at(0, &msg)?;
                if atomic {
                    SendWr::atomic_fetch_and_add(i, mr.sge(0..size)?, rb.at(0), ATOMIC_ADD)
                } else {
                    SendWr::rdma_read(i, mr.sge(0..size)?, rb.at(0))
                }
            } else {
                fill_lat_message(i, if client { 0 } else { 1 }, &mut msg);
                let sge = mr.sge(size..2 * size)?;
                let wr = if send { SendWr::send(i, sge) } else { SendWr::rdma_write(i, sge, rb.at(0)) };
                if inline {
                    wr.with_inline(&msg)?
                } else {
                    mr.write_at(size, &msg)?;
                    wr
                }
            };
            let t0 = dev.now_cycles();
            doorbells.push(t0);
            qp.post_send(&[wr.signaled(signaled)]).map_err(|p| p.error)?;
            posted += 1;
            if client {
                let Some(at) = w.wait(i, &mut qp, &mut retired, &mut received, &mut error)? else {
                    timed_out = error.is_none();
                    break;
                };
                hist.record(at - t0);
                seen.push(at);
                if atomic {
                    expected.copy_from_slice(&ATOMIC_INIT.wrapping_add(i.wrapping_mul(ATOMIC_ADD)).to_le_bytes());
                } else if read {
                    fill_pattern(1, &mut expected);
                } else {
                    fill_lat_message(i, 1, &mut expected);
                }
                mr.read_at(0, &mut got)?;
                note(&expected, &got, i, &mut mismatch);
                progress(i + 1, l.iters);
            }
        }
        // Before closing: both sides are done (the server of read-lat waits here).
        x.keys(&mine).map_err(|e| io_err("keys after the run", e))?;
        x.close(&mine).map_err(|e| io_err("close", e))?;
        if let Some(path) = &o.stamps {
            let st = SideStamps {
                op: l.op.name().to_owned(),
                role: if client { "client" } else { "server" }.to_owned(),
                ip: port.ip,
                size: l.size,
                mtu: mtu.bytes(),
                device: o.device.clone(),
                doorbells,
                seen,
            };
            let text = serde_json::to_string(&st).map_err(|e| Error::InvalidArgument(format!("stamps: {e}")))?;
            std::fs::write(path, text).map_err(|e| {
                Error::io(rnic::IoKind::Backend, format!("writing the stamps to {}", path.display()), e)
            })?;
        }
        (local, remote)
    };
    let want = match (role, read) {
        (Role::Client, _) => l.iters,
        (Role::Server, true) => 0,
        // The server's samples are the gaps between the messages it saw.
        (Role::Server, false) => l.iters - 1,
    };
    Ok(RemoteLatReport {
        op: l.op.name(),
        role,
        device: o.device.clone(),
        size: l.size,
        iters: l.iters,
        completed: hist.len(),
        mtu: mtu.bytes(),
        halved: l.op.halved(),
        stats: hist.stats(),
        sim_clock: dev.clock_is_simulated(),
        verified: error.is_none() && !timed_out && mismatch.is_none() && hist.len() == want,
        first_mismatch: mismatch,
        timed_out,
        error,
        local,
        remote,
        peer_version,
    })
}

/// What one side waits with.
struct Waiter<'m, 'b> {
    l: &'m LatOptions,
    mr: &'m rnic::MemoryRegion<'b>,
    cq: &'m rnic::CompletionQueue,
    dev: &'m dyn rnic::Device,
    wcs: [WorkCompletion; 16],
    rx: u32,
    stall: u64,
}

impl<'m> Waiter<'m, '_> {
    /// Waits for the event `i` this side expects: the peer's message `i` seen (write: the
    /// polled last byte; send: a receive completion) or, for read, its own READ `i`'s
    /// completion. Returns its cycle; None on an error completion (in `error`) or a stall.
    fn wait(
        &mut self,
        i: u64,
        qp: &mut rnic::QueuePair<'m>,
        retired: &mut u64,
        received: &mut u64,
        error: &mut Option<String>,
    ) -> Result<Option<u64>> {
        let (op, size) = (self.l.op, self.l.size as usize);
        let t0 = self.dev.now_cycles();
        loop {
            let now = self.dev.now_cycles();
            if op == LatOp::Write {
                let mut b = [0u8; 1];
                self.mr.read_at(size - 1, &mut b)?;
                if b[0] == marker(i) {
                    return Ok(Some(now));
                }
            }
            let k = self.cq.poll(&mut self.wcs)?;
            let at = self.dev.now_cycles();
            for wc in &self.wcs[..k] {
                if !wc.status.is_success() {
                    error.get_or_insert_with(|| format!("work request {} completed with {:?}", wc.wr_id, wc.status));
                    return Ok(None);
                }
                if wc.opcode == WcOpcode::Recv {
                    *received += 1;
                    qp.post_recv(&[RecvWr::new(*received + u64::from(self.rx), self.mr.sge(0..size)?)])?;
                    if u64::from(wc.byte_len) != self.l.size {
                        error.get_or_insert_with(|| format!("receive of {} bytes, expected {}", wc.byte_len, size));
                    }
                    if op == LatOp::Send {
                        return Ok(Some(at));
                    }
                } else {
                    *retired = (*retired).max(wc.wr_id + 1);
                    if op.one_sided() && wc.wr_id == i {
                        return Ok(Some(at));
                    }
                }
            }
            self.dev.poll_progress();
            if now.saturating_sub(t0) > self.stall {
                return Ok(None);
            }
        }
    }
}

fn note(expected: &[u8], got: &[u8], i: u64, mismatch: &mut Option<Mismatch>) {
    if mismatch.is_some() || expected == got {
        return;
    }
    if let Some(off) = expected.iter().zip(got).position(|(a, b)| a != b) {
        *mismatch = Some(Mismatch {
            qp: 0,
            offset: off as u64,
            iteration: i,
            expected: expected[off],
            found: got[off],
            count: expected.iter().zip(got).filter(|(a, b)| a != b).count() as u64,
        });
    }
}
