//! `rnic perf write` / `send` / `read` / `atomic`: ib_write_bw / ib_send_bw / ib_read_bw /
//! ib_atomic_bw-style bandwidth tests between two simulated hosts, through the verbs only (the
//! NIC RTL does the transfer), with an exact check of the result.
use std::path::PathBuf;

use rnic_contract::CORE_CLOCK_MHZ;
use rnic_sim::SimConfig;
use serde::Serialize;

use crate::context::{Context, Counters, PortAddr};
use crate::cq::WorkCompletion;
use crate::error::{Error, Result};
use crate::mr::AccessFlags;
use crate::qp::{ConnectOptions, Endpoint, Mtu, RecvWr, SendWr};
use crate::sim::sim_pair;

/// Largest `size × iters` the test accepts (the server's buffer), in bytes.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;

/// Bytes per NIC clock cycle at 100 Gb/s and 250 MHz (the wire's payload ceiling).
const WIRE_BYTES_PER_CYCLE: u64 = 50;

/// The operation a bandwidth test measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BwOp {
    /// RDMA WRITE into the server's advertised buffer (ib_write_bw).
    #[default]
    Write,
    /// SEND into receive work requests the server posts (ib_send_bw).
    Send,
    /// RDMA READ of the server's buffer into the client's (ib_read_bw).
    Read,
    /// Atomics on one u64 of the server's memory (ib_atomic_bw), of [`WriteBwOptions::atomic_type`].
    Atomic,
}

impl BwOp {
    /// "write", "send", "read" or "atomic", the report's `op`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Send => "send",
            Self::Read => "read",
            Self::Atomic => "atomic",
        }
    }
}

/// The atomic operation of `rnic perf atomic` (ib_atomic_bw's `--atomic_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomicType {
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD` of [`ATOMIC_ADD`]: operation `i` returns
    /// [`ATOMIC_INIT`] + i × [`ATOMIC_ADD`] (mod 2^64).
    #[default]
    FetchAndAdd,
    /// `IBV_WR_ATOMIC_CMP_AND_SWP` chained: operation `i` compares with [`ATOMIC_INIT`] + i and
    /// swaps in [`ATOMIC_INIT`] + i + 1, so each one matches only if every earlier one executed
    /// exactly once, in order.
    CmpAndSwap,
}

impl AtomicType {
    /// "fetch_and_add" or "cmp_and_swap", the report's `atomic_type`.
    pub fn name(self) -> &'static str {
        match self {
            Self::FetchAndAdd => "fetch_and_add",
            Self::CmpAndSwap => "cmp_and_swap",
        }
    }

    /// perftest's spelling: "FETCH_AND_ADD" or "CMP_AND_SWAP".
    pub fn perftest_name(self) -> &'static str {
        match self {
            Self::FetchAndAdd => "FETCH_AND_ADD",
            Self::CmpAndSwap => "CMP_AND_SWAP",
        }
    }

    /// The original value operation `i` must return (the target's value before it).
    pub fn original(self, i: u64) -> u64 {
        match self {
            Self::FetchAndAdd => ATOMIC_INIT.wrapping_add(i.wrapping_mul(ATOMIC_ADD)),
            Self::CmpAndSwap => ATOMIC_INIT.wrapping_add(i),
        }
    }
}

/// The server's target u64 before an atomic run.
pub const ATOMIC_INIT: u64 = 0xFFFF_FFF0_0123_4567;
/// The addend of a fetch-and-add run: carries cross the 32-bit halves, and the sum wraps past
/// 2^64 after 16 operations.
pub const ATOMIC_ADD: u64 = 0x1_0000_0001;
/// Bytes an atomic reads and writes (its message size, as perftest reports it).
pub const ATOMIC_BYTES: u64 = 8;

/// Largest `rx_depth` accepted (the RQ size limit).
pub const MAX_RX_DEPTH: u32 = crate::qp::MAX_RECV_WR;

/// Parameters of [`run_write_bw`] (despite the name, of either operation: see `op`).
#[derive(Clone, Debug)]
pub struct WriteBwOptions {
    /// What to measure (default RDMA WRITE).
    pub op: BwOp,
    /// Message size in bytes (1 ..= 2^31).
    pub size: u64,
    /// Number of messages.
    pub iters: u64,
    /// Path MTU.
    pub mtu: Mtu,
    /// Work requests kept outstanding (the SQ and client CQ size).
    pub tx_depth: u32,
    /// Signal one work request in `cq_mod` (and the last); 1 ..= `tx_depth`.
    pub cq_mod: u32,
    /// SEND only: receive work requests the server keeps posted (its RQ size, perftest's
    /// `--rx-depth`, default 512), 1 ..= [`MAX_RX_DEPTH`]. When they run out, the client's
    /// SENDs are answered with RNR NAKs and retried.
    pub rx_depth: u32,
    /// READ and atomic: READs / atomics outstanding (the client QP's `max_rd_atomic` and the
    /// server's `max_dest_rd_atomic`, perftest's `--outs`, default 16), 1 ..= 16.
    pub outs: u8,
    /// Atomic only: the operation (default fetch-and-add).
    pub atomic_type: AtomicType,
    /// The server's RNR timer code (`min_rnr_timer`, default 12 = 0.64 ms; 1 ..= 31, or 0 =
    /// 655.36 ms): the wait before a SEND that found no receive is resent.
    pub min_rnr_timer: u8,
    /// Cycle budget from the first post to the last completion; `None` for a default derived
    /// from the transfer size ([`default_budget`]).
    pub budget_cycles: Option<u64>,
    /// Capture both directions of the wire into this pcap file.
    pub pcap: Option<PathBuf>,
    /// Dump an FST waveform of the client NIC (NIC 0) into this file.
    pub waveform: Option<PathBuf>,
    /// Local ACK timeout exponent of both QPs (4.096 µs × 2^n). The default, 4 (65.5 µs),
    /// suits the simulated wire's microsecond round trip; perftest's 14 (67 ms) would cost 17 M
    /// simulated cycles per timeout.
    pub qp_timeout: u8,
    /// Simulator parameters (including the wire's fault injection).
    pub sim: SimConfig,
}

impl Default for WriteBwOptions {
    fn default() -> Self {
        Self {
            op: BwOp::Write,
            size: 65536,
            iters: 100,
            mtu: Mtu::Mtu4096,
            tx_depth: 64,
            cq_mod: 16,
            rx_depth: 512,
            outs: 16,
            atomic_type: AtomicType::FetchAndAdd,
            min_rnr_timer: 12,
            budget_cycles: None,
            pcap: None,
            waveform: None,
            qp_timeout: 4,
            sim: SimConfig::default(),
        }
    }
}

/// The first byte of the server's buffer that differs from what was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Offset in the server's buffer.
    pub offset: u64,
    /// Iteration whose message covers it.
    pub iteration: u64,
    /// The byte sent.
    pub expected: u8,
    /// The byte found.
    pub found: u8,
    /// Bytes that differ in total.
    pub count: u64,
}

/// NIC counters of both hosts.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BothCounters {
    /// NIC 0, the requester.
    pub client: Counters,
    /// NIC 1, the responder.
    pub server: Counters,
}

/// The outcome of [`run_write_bw`]. Rates use the modelled clock: `seconds = cycles / 250 MHz`.
#[derive(Clone, Debug, Serialize)]
pub struct WriteBwReport {
    /// "write", "send", "read" or "atomic".
    pub op: &'static str,
    /// Message size in bytes.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// Outstanding work requests.
    pub tx_depth: u32,
    /// One signaled work request in `cq_mod`.
    pub cq_mod: u32,
    /// SEND: receive work requests the server kept posted (null for WRITE).
    pub rx_depth: Option<u32>,
    /// READ and atomic: READs / atomics kept outstanding (`max_rd_atomic`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outs: Option<u8>,
    /// Atomic only: "fetch_and_add" or "cmp_and_swap".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomic_type: Option<&'static str>,
    /// Payload bytes: `size × iters`.
    pub bytes: u64,
    /// NIC cycles from just before the first post to the poll that found the last completion
    /// (for SEND the later of the last send and the last receive completion; to the give-up
    /// time on a timeout or error).
    pub cycles: u64,
    /// Clock the rates are computed at, MHz.
    pub clock_mhz: u64,
    /// Average bandwidth, Gb/s (10^9 bit/s, payload only, as perftest).
    pub gbps: f64,
    /// Message rate, millions per second.
    pub mpps: f64,
    /// Every byte of the server's buffer matched, and every work request completed successfully
    /// (for SEND: every receive too, in order, with `byte_len` = `size`; for atomics: every
    /// original returned was right and the target holds the final value, see
    /// [`check_atomics`]).
    pub verified: bool,
    /// The first wrong byte, if any (atomics: of the originals in the client's buffer, 8 bytes
    /// per operation).
    pub first_mismatch: Option<Mismatch>,
    /// Work requests completed (retired by a successful completion).
    pub completed: u64,
    /// SEND: receive work requests completed successfully at the server (null for WRITE).
    pub received: Option<u64>,
    /// The run hit its cycle budget.
    pub timed_out: bool,
    /// The budget, in cycles.
    pub budget_cycles: u64,
    /// The first error completion or driver error, if any (atomics: also a wrong final value
    /// of the target).
    pub error: Option<String>,
    /// Simulated cycles per wall-clock second, over the whole run (setup included).
    pub sim_cycles_per_sec: f64,
    /// Wall-clock seconds the simulator stepped.
    pub sim_wall_seconds: f64,
    /// All cycles simulated (setup included).
    pub sim_total_cycles: u64,
    /// Wall-clock seconds Verilator took to build the model (from rnic-sim's build).
    pub verilator_build_seconds: f64,
    /// Frames written to the pcap file.
    pub pcap_frames: u64,
    /// The client's endpoint.
    pub client: Endpoint,
    /// The server's endpoint (with its buffer).
    pub server: Endpoint,
    /// Go-back-N restarts of the requester (NIC 0's `retransmits` counter).
    pub retransmits: u32,
    /// NAKs the responder sent (NIC 1's `tx_naks`).
    pub naks: u32,
    /// Local ACK timeouts at the requester (NIC 0's `timeouts`).
    pub timeouts: u32,
    /// RNR NAKs the responder sent (NIC 1's `tx_rnr_naks`: a SEND found no receive posted).
    pub rnr_naks: u32,
    /// NIC counters after the run.
    pub counters: BothCounters,
}

/// The byte pattern of message `iter`: 8-byte chunks of a hash of `(iter, chunk index)`, so
/// every message and every offset differ.
pub fn pattern_byte(iter: u64, offset: u64) -> u8 {
    (mix((iter << 32) ^ (offset / 8)) >> (8 * (offset % 8))) as u8
}

/// Fills `out` with message `iter`'s pattern.
pub fn fill_pattern(iter: u64, out: &mut [u8]) {
    for (c, chunk) in out.chunks_mut(8).enumerate() {
        let v = mix((iter << 32) ^ c as u64).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The default cycle budget: 2 M cycles of slack plus 20× the time the payload needs on a
/// 100 Gb/s wire plus 20 000 cycles per message.
pub fn default_budget(size: u64, iters: u64) -> u64 {
    2_000_000 + 20 * size.saturating_mul(iters) / WIRE_BYTES_PER_CYCLE + 20_000 * iters
}

/// Checks the options.
///
/// # Errors
/// [`Error::InvalidArgument`] with a message for the user.
pub fn check_options(o: &WriteBwOptions) -> Result<()> {
    if o.size == 0 || o.size > 1 << 31 {
        return Err(Error::inval(format!(
            "--size {} must be 1..=2147483648 bytes (a message carries at most 2^31)",
            o.size
        )));
    }
    if o.iters == 0 {
        return Err(Error::inval("--iters must be at least 1"));
    }
    let total = o.size.saturating_mul(o.iters);
    if total > MAX_TOTAL_BYTES {
        return Err(Error::inval(format!(
            "size × iters = {total} bytes exceeds the 1 GiB limit of the server's buffer ({MAX_TOTAL_BYTES} bytes); lower --size or --iters"
        )));
    }
    if o.tx_depth == 0 || o.tx_depth > crate::qp::MAX_SEND_WR {
        return Err(Error::inval(format!("--tx-depth {} must be 1..={}", o.tx_depth, crate::qp::MAX_SEND_WR)));
    }
    if o.cq_mod == 0 || o.cq_mod > o.tx_depth {
        return Err(Error::inval(format!(
            "--cq-mod {} must be 1..=tx-depth ({}): with fewer signaled WRs than that the SQ would fill before any completion",
            o.cq_mod, o.tx_depth
        )));
    }
    if o.min_rnr_timer > 31 {
        return Err(Error::inval(format!("min_rnr_timer must be 0 ..= 31, not {}", o.min_rnr_timer)));
    }
    if o.op == BwOp::Atomic && o.size != ATOMIC_BYTES {
        return Err(Error::inval(format!("an atomic moves {ATOMIC_BYTES} bytes, so size must be {ATOMIC_BYTES}, not {}", o.size)));
    }
    if matches!(o.op, BwOp::Read | BwOp::Atomic) && (o.outs == 0 || o.outs > crate::qp::MAX_RD_ATOMIC) {
        return Err(Error::inval(format!("outs must be 1 ..= {}, not {}", crate::qp::MAX_RD_ATOMIC, o.outs)));
    }
    if o.op == BwOp::Send && (o.rx_depth == 0 || o.rx_depth > MAX_RX_DEPTH) {
        return Err(Error::inval(format!("--rx-depth {} must be 1..={MAX_RX_DEPTH}", o.rx_depth)));
    }
    Ok(())
}

/// Runs the test: two simulated hosts cabled back to back; the client (NIC 0) sends `iters`
/// messages of `size` bytes, message `i` to offset `i × size` of the server's (NIC 1)
/// registered buffer, each with its own byte pattern ([`pattern_byte`]), keeping up to
/// `tx_depth` work requests outstanding and signaling one in `cq_mod` and the last (perftest's
/// `cq_mod`). The source buffer is a ring of `min(tx_depth, iters)` message slots, each
/// refilled only after the completion that retires its previous message. After the last
/// completion (or the budget) the server's buffer is checked byte by byte.
///
/// With [`BwOp::Write`] message `i` is an RDMA WRITE to that offset. With [`BwOp::Send`] it is
/// a SEND: the server posts receive `i` (wr_id `i`, SGE = bytes `i × size ..` of its buffer)
/// before the run, up to `rx_depth` of them, and posts the next one each time it polls a
/// receive completion, which must come in order, successful, with `byte_len` = `size`. With
/// [`BwOp::Read`] message `i` is an RDMA READ of the server's bytes `i × size ..`, which hold
/// pattern `i` from the start, into the client's bytes `i × size ..` (a client buffer as large
/// as the transfer), and the client's buffer is the one checked. With [`BwOp::Atomic`] (`size`
/// 8) operation `i` is an atomic of `atomic_type` on one 8-byte-aligned u64 of the server's
/// memory ([`ATOMIC_INIT`] at the start; the server's region and QP grant REMOTE_ATOMIC), whose
/// original lands in the client's bytes `8 i ..`; afterwards [`check_atomics`] checks the
/// originals and the final value.
///
/// `progress(done, total)` is called as completions arrive.
///
/// # Errors
/// Invalid options ([`check_options`]), simulator or driver setup failures. A timeout, an error
/// completion or wrong bytes are not errors: they are in the report (`verified` false).
pub fn run_write_bw(o: &WriteBwOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<WriteBwReport> {
    check_options(o)?;
    let size = o.size as usize;
    let total = (o.size * o.iters) as usize;
    let budget = o.budget_cycles.unwrap_or_else(|| default_budget(o.size, o.iters));
    let (world, dev_c, dev_s) = sim_pair(o.sim.clone())?;
    if let Some(p) = &o.pcap {
        world.borrow_mut().capture_pcap(p).map_err(|e| Error::io(format!("pcap capture into {}", p.display()), e))?;
    }
    if let Some(p) = &o.waveform {
        world.borrow_mut().dump_waveform(0, p).map_err(|e| match e {
            rnic_sim::SimError::WaveformDisabled => Error::NotSupported(
                "waveforms need the simulator built with waveform support (cargo build --features rnic/waveform)".into(),
            ),
            e => Error::io(format!("waveform dump into {}", p.display()), e),
        })?;
    }
    let client = Context::open_with_port(dev_c, PortAddr::for_sim_nic(0))?;
    let server = Context::open_with_port(dev_s, PortAddr::for_sim_nic(1))?;
    let send = o.op == BwOp::Send;
    let read = o.op == BwOp::Read;
    let atomic = o.op == BwOp::Atomic;
    // WRITE and SEND fill a ring of message slots at the client and are checked in the
    // server's buffer; a READ copies the server's patterns into a client buffer as large as
    // the transfer, checked there; atomics return one original each into a client buffer of
    // 8 bytes per operation, and work on one u64 of the server's.
    let slots = if read || atomic { o.iters as usize } else { o.iters.min(u64::from(o.tx_depth)) as usize };
    // An atomic's target must be 8-byte aligned: the server's region starts at the first
    // aligned byte of a 16-byte buffer.
    let mut server_buf = vec![0u8; if atomic { 2 * ATOMIC_BYTES as usize } else { total }];
    let (server_off, server_len) = if atomic { (server_buf.as_ptr().align_offset(8), ATOMIC_BYTES as usize) } else { (0, total) };
    let mut client_buf = vec![0u8; size * slots];
    if read {
        for (i, chunk) in server_buf.chunks_mut(size).enumerate() {
            fill_pattern(i as u64, chunk);
        }
    }
    if atomic {
        server_buf[server_off..server_off + server_len].copy_from_slice(&ATOMIC_INIT.to_le_bytes());
    }

    let (pd_c, pd_s) = (client.alloc_pd()?, server.alloc_pd()?);
    let run = {
        let server_access = match o.op {
            BwOp::Send => AccessFlags::LOCAL_WRITE,
            BwOp::Write => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
            BwOp::Read => AccessFlags::REMOTE_READ,
            BwOp::Atomic => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
        };
        let server_mr = pd_s.register(&mut server_buf[server_off..server_off + server_len], server_access)?;
        let client_mr = pd_c.register(&mut client_buf, AccessFlags::LOCAL_WRITE)?;
        let rx_depth = if send { o.rx_depth.min(u32::try_from(o.iters).unwrap_or(u32::MAX)) } else { 0 };
        let cq_c = client.create_cq(o.tx_depth as usize)?;
        // The server's CQ covers its SQ of 1 and its RQ (rounded up to a power of two).
        let cq_s = server.create_cq(1 + rx_depth.next_power_of_two() as usize)?;
        let mut qp_c = pd_c.create_qp(&cq_c).set_max_send_wr(o.tx_depth).build()?;
        let mut qp_s = pd_s.create_qp(&cq_s).set_max_send_wr(1).set_max_recv_wr(rx_depth).build()?;
        let ep_c = qp_c.endpoint()?.with_buffer(&client_mr);
        let ep_s = qp_s.endpoint()?.with_buffer(&server_mr);
        let opts = ConnectOptions {
            path_mtu: o.mtu,
            access: match o.op {
                BwOp::Send => AccessFlags::empty(),
                BwOp::Write => AccessFlags::REMOTE_WRITE,
                BwOp::Read => AccessFlags::REMOTE_READ,
                BwOp::Atomic => AccessFlags::REMOTE_ATOMIC,
            },
            timeout: o.qp_timeout,
            max_rd_atomic: o.outs,
            max_dest_rd_atomic: o.outs,
            min_rnr_timer: o.min_rnr_timer,
            ..ConnectOptions::default()
        };
        qp_c.connect_with(&ep_s, &opts)?;
        qp_s.connect_with(&ep_c, &opts)?;
        let remote = ep_s.buffer.ok_or_else(|| Error::inval("server endpoint without buffer"))?;

        let dev = client.device().clone();
        let mut msg = vec![0u8; size];
        let mut wcs = [WorkCompletion::default(); 64];
        let (mut posted, mut completed) = (0u64, 0u64);
        // SEND: receives posted and completed by the server.
        let (mut recv_posted, mut received) = (0u64, 0u64);
        let recv_wr = |i: u64| -> Result<RecvWr<'_>> {
            let at = (i * o.size) as usize;
            Ok(RecvWr::new(i, server_mr.sge(at..at + size)?))
        };
        if send {
            let first: Vec<RecvWr<'_>> = (0..u64::from(rx_depth)).map(recv_wr).collect::<Result<_>>()?;
            qp_s.post_recv(&first)?;
            recv_posted = u64::from(rx_depth);
        }
        let mut error = None;
        let mut timed_out = false;
        let start = dev.now_cycles();
        let mut end = start;
        let mut batch = Vec::with_capacity(o.tx_depth as usize);
        while completed < o.iters || (send && received < o.iters) {
            let room = u64::from(o.tx_depth) - (posted - completed);
            let upto = o.iters.min(posted + room);
            if upto > posted {
                batch.clear();
                for j in posted..upto {
                    let slot = (j % slots as u64) as usize * size;
                    if !read && !atomic {
                        fill_pattern(j, &mut msg);
                        client_mr.write_at(slot, &msg)?;
                    }
                    let signaled = (j + 1) % u64::from(o.cq_mod) == 0 || j + 1 == o.iters;
                    let sge = client_mr.sge(slot..slot + size)?;
                    let wr = match o.op {
                        BwOp::Send => SendWr::send(j, sge),
                        BwOp::Write => SendWr::rdma_write(j, sge, remote.at(j * o.size)),
                        BwOp::Read => SendWr::rdma_read(j, sge, remote.at(j * o.size)),
                        BwOp::Atomic => match o.atomic_type {
                            AtomicType::FetchAndAdd => SendWr::atomic_fetch_and_add(j, sge, remote.at(0), ATOMIC_ADD),
                            AtomicType::CmpAndSwap => {
                                SendWr::atomic_cmp_and_swp(j, sge, remote.at(0), o.atomic_type.original(j), o.atomic_type.original(j + 1))
                            }
                        },
                    };
                    batch.push(wr.signaled(signaled));
                }
                qp_c.post_send(&batch)?;
                posted = upto;
            }
            let n = cq_c.poll(&mut wcs)?;
            for wc in &wcs[..n] {
                if !wc.status.is_success() {
                    error.get_or_insert_with(|| format!("work request {} completed with {:?}", wc.wr_id, wc.status));
                } else {
                    completed = completed.max(wc.wr_id + 1);
                }
            }
            if n > 0 {
                end = dev.now_cycles();
                progress(if send { completed.min(received) } else { completed }, o.iters);
            }
            if send {
                let n = cq_s.poll(&mut wcs)?;
                for wc in &wcs[..n] {
                    if !wc.status.is_success() {
                        error.get_or_insert_with(|| format!("receive {} completed with {:?}", wc.wr_id, wc.status));
                    } else if wc.wr_id != received || u64::from(wc.byte_len) != o.size {
                        error.get_or_insert_with(|| {
                            format!(
                                "receive completion {received}: wr_id {} with byte_len {}, expected wr_id {received} with {} bytes",
                                wc.wr_id, wc.byte_len, o.size
                            )
                        });
                    } else {
                        received += 1;
                    }
                }
                if n > 0 {
                    let more: Vec<RecvWr<'_>> =
                        (recv_posted..o.iters.min(recv_posted + n as u64)).map(recv_wr).collect::<Result<_>>()?;
                    qp_s.post_recv(&more)?;
                    recv_posted += more.len() as u64;
                    end = dev.now_cycles();
                    progress(completed.min(received), o.iters);
                }
            }
            if error.is_some() {
                end = dev.now_cycles();
                break;
            }
            if dev.now_cycles() - start > budget {
                timed_out = true;
                end = dev.now_cycles();
                break;
            }
        }
        // Let the last ACKs and frames settle so the counters are final.
        world.borrow_mut().step_n(2_000);
        let counters = BothCounters { client: client.counters()?, server: server.counters()? };
        let mut target = [0u8; 8];
        if atomic {
            server_mr.read_at(0, &mut target)?;
        }
        (start, end, completed, received, error, timed_out, counters, ep_c, ep_s, u64::from_le_bytes(target))
        // QPs, CQs and MRs are dropped here, QPs first: the buffers are unmapped before use.
    };
    let (start, end, completed, received, mut error, timed_out, counters, ep_c, ep_s, target) = run;
    let pcap_frames = world.borrow().captured_frames();
    world.borrow_mut().finish().map_err(|e| Error::io("finishing the pcap capture / waveform", e))?;

    let first_mismatch = if atomic {
        let (mismatch, wrong_final) = check_atomics(o.atomic_type, &client_buf, target, o.iters);
        if error.is_none() && !timed_out {
            error = wrong_final;
        }
        mismatch
    } else {
        check_buffer(if read { &client_buf } else { &server_buf }, o.size)
    };
    let cycles = end.saturating_sub(start).max(1);
    let seconds = cycles as f64 / (CORE_CLOCK_MHZ as f64 * 1e6);
    let stats = world.borrow().stats();
    let done = if send { completed.min(received) } else { completed };
    Ok(WriteBwReport {
        op: o.op.name(),
        size: o.size,
        iters: o.iters,
        mtu: o.mtu.bytes(),
        tx_depth: o.tx_depth,
        cq_mod: o.cq_mod,
        rx_depth: send.then_some(o.rx_depth),
        outs: (read || atomic).then_some(o.outs),
        atomic_type: atomic.then(|| o.atomic_type.name()),
        bytes: o.size * o.iters,
        cycles,
        clock_mhz: CORE_CLOCK_MHZ,
        gbps: (o.size * done) as f64 * 8.0 / seconds / 1e9,
        mpps: done as f64 / seconds / 1e6,
        verified: first_mismatch.is_none() && error.is_none() && !timed_out && done == o.iters,
        first_mismatch,
        completed,
        received: send.then_some(received),
        timed_out,
        budget_cycles: budget,
        error,
        sim_cycles_per_sec: stats.cycles_per_second,
        sim_wall_seconds: stats.wall_seconds,
        sim_total_cycles: stats.cycles,
        verilator_build_seconds: rnic_sim::verilator_build_seconds(),
        pcap_frames,
        client: ep_c,
        server: ep_s,
        retransmits: counters.client.get("retransmits").unwrap_or(0),
        naks: counters.server.get("tx_naks").unwrap_or(0),
        timeouts: counters.client.get("timeouts").unwrap_or(0),
        rnr_naks: counters.server.get("tx_rnr_naks").unwrap_or(0),
        counters,
    })
}

/// Checks an atomic run of `iters` operations of type `t`: `client` holds the original each
/// operation returned (8 bytes, little-endian, per operation) and `target` the server's u64
/// afterwards. Fetch-and-add: the originals must be exactly the set {[`ATOMIC_INIT`] + k ×
/// [`ATOMIC_ADD`] : k < iters} (each sum seen once: no operation lost or executed twice) and
/// the target [`ATOMIC_INIT`] + iters × [`ATOMIC_ADD`], mod 2^64. Compare-and-swap (chained):
/// operation `i` must have returned [`ATOMIC_INIT`] + i and the target must be
/// [`ATOMIC_INIT`] + iters. Returns the first wrong byte of the originals against the in-order
/// expectation (`None` if they are right) and a message if the target is wrong.
pub fn check_atomics(t: AtomicType, client: &[u8], target: u64, iters: u64) -> (Option<Mismatch>, Option<String>) {
    let got: Vec<u64> =
        client.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let want: Vec<u64> = (0..iters).map(|i| t.original(i)).collect();
    let originals_ok = match t {
        AtomicType::FetchAndAdd => {
            let (mut g, mut w) = (got.clone(), want.clone());
            g.sort_unstable();
            w.sort_unstable();
            g == w
        }
        AtomicType::CmpAndSwap => got == want,
    };
    let mismatch = if originals_ok {
        None
    } else {
        let image: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut first: Option<Mismatch> = None;
        let mut count = 0u64;
        for (k, (&g, &e)) in client.iter().zip(&image).enumerate() {
            if g != e {
                count += 1;
                first.get_or_insert(Mismatch { offset: k as u64, iteration: k as u64 / ATOMIC_BYTES, expected: e, found: g, count: 0 });
            }
        }
        first.map(|m| Mismatch { count, ..m })
    };
    let final_want = t.original(iters);
    let wrong = (target != final_want).then(|| {
        format!(
            "the target holds {target:#018x} after {iters} {} operations, expected {final_want:#018x} (an operation was lost or executed twice)",
            t.name()
        )
    });
    (mismatch, wrong)
}

/// Compares the server's buffer with the patterns sent; the first difference and the count.
pub fn check_buffer(buf: &[u8], size: u64) -> Option<Mismatch> {
    let mut first: Option<Mismatch> = None;
    let mut count = 0u64;
    let mut expect = vec![0u8; size as usize];
    for (iter, got) in buf.chunks(size as usize).enumerate() {
        fill_pattern(iter as u64, &mut expect);
        if got == &expect[..got.len()] {
            continue;
        }
        for (k, (&g, &e)) in got.iter().zip(&expect).enumerate() {
            if g != e {
                count += 1;
                first.get_or_insert(Mismatch {
                    offset: iter as u64 * size + k as u64,
                    iteration: iter as u64,
                    expected: e,
                    found: g,
                    count: 0,
                });
            }
        }
    }
    first.map(|m| Mismatch { count, ..m })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_consistent_and_distinct() {
        let mut a = vec![0u8; 37];
        fill_pattern(5, &mut a);
        for (k, &b) in a.iter().enumerate() {
            assert_eq!(b, pattern_byte(5, k as u64));
        }
        let mut b = vec![0u8; 37];
        fill_pattern(6, &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn check_buffer_finds_the_first_wrong_byte() {
        let size = 10u64;
        let mut buf = vec![0u8; 30];
        for i in 0..3 {
            fill_pattern(i, &mut buf[i as usize * 10..][..10]);
        }
        assert_eq!(check_buffer(&buf, size), None);
        buf[17] ^= 1;
        buf[25] ^= 2;
        let m = check_buffer(&buf, size).unwrap();
        assert_eq!((m.offset, m.iteration, m.count), (17, 1, 2));
        assert_eq!(m.found, m.expected ^ 1);
    }

    #[test]
    fn check_atomics_wants_every_original_once_and_the_final_value() {
        let n = 20u64;
        for t in [AtomicType::FetchAndAdd, AtomicType::CmpAndSwap] {
            let mut buf: Vec<u8> = (0..n).flat_map(|i| t.original(i).to_le_bytes()).collect();
            assert_eq!(check_atomics(t, &buf, t.original(n), n), (None, None), "{t:?}");
            assert!(check_atomics(t, &buf, t.original(n + 1), n).1.unwrap().contains("lost or executed twice"));
            // Operation 3 seeing operation 2's original: one executed twice.
            let two = t.original(2).to_le_bytes();
            buf[24..32].copy_from_slice(&two);
            let m = check_atomics(t, &buf, t.original(n), n).0.unwrap();
            assert_eq!(m.iteration, 3, "{t:?}");
        }
        // Fetch-and-add accepts the set in any order; compare-and-swap does not.
        let mut swapped: Vec<u64> = (0..n).map(|i| AtomicType::FetchAndAdd.original(i)).collect();
        swapped.swap(4, 5);
        let b: Vec<u8> = swapped.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(check_atomics(AtomicType::FetchAndAdd, &b, AtomicType::FetchAndAdd.original(n), n).0, None);
        assert_eq!(AtomicType::FetchAndAdd.original(16), ATOMIC_INIT.wrapping_add(16 * ATOMIC_ADD), "wraps");
        assert!(ATOMIC_INIT.checked_add(16 * ATOMIC_ADD).is_none(), "the sum passes 2^64 within 16 operations");
        let c: Vec<u8> = (0..n).map(|i| AtomicType::CmpAndSwap.original(if i == 4 { 5 } else if i == 5 { 4 } else { i })).flat_map(u64::to_le_bytes).collect();
        assert!(check_atomics(AtomicType::CmpAndSwap, &c, AtomicType::CmpAndSwap.original(n), n).0.is_some());
    }

    #[test]
    fn options_are_checked() {
        let ok = WriteBwOptions::default();
        check_options(&ok).unwrap();
        let too_big = WriteBwOptions { size: 1 << 20, iters: 1025, ..ok.clone() };
        assert!(check_options(&too_big).unwrap_err().to_string().contains("1 GiB"));
        assert!(check_options(&WriteBwOptions { size: 1 << 30, iters: 1, ..ok.clone() }).is_ok());
        assert!(check_options(&WriteBwOptions { cq_mod: 65, ..ok.clone() }).is_err());
        assert!(check_options(&WriteBwOptions { size: 0, ..ok.clone() }).is_err());
        assert!(check_options(&WriteBwOptions { size: u64::MAX, iters: u64::MAX, ..ok.clone() }).is_err());
        let send = WriteBwOptions { op: BwOp::Send, ..ok.clone() };
        check_options(&send).unwrap();
        assert!(check_options(&WriteBwOptions { rx_depth: 0, ..send.clone() }).is_err());
        assert!(check_options(&WriteBwOptions { rx_depth: MAX_RX_DEPTH + 1, ..send }).is_err());
        assert!(check_options(&WriteBwOptions { rx_depth: 0, ..ok.clone() }).is_ok(), "rx_depth only matters for SEND");
        let atomic = WriteBwOptions { op: BwOp::Atomic, size: ATOMIC_BYTES, ..ok };
        check_options(&atomic).unwrap();
        assert!(check_options(&WriteBwOptions { size: 16, ..atomic.clone() }).unwrap_err().to_string().contains("size must be 8"));
        assert!(check_options(&WriteBwOptions { outs: 0, ..atomic.clone() }).is_err());
        assert!(check_options(&WriteBwOptions { outs: 17, ..atomic }).is_err());
    }
}
