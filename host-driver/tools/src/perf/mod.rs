//! `rnic perf write` / `send` / `read` / `atomic`: ib_write_bw / ib_send_bw / ib_read_bw /
//! ib_atomic_bw-style bandwidth tests between two simulated hosts, through the verbs only (the
//! NIC RTL does the transfer), with an exact check of the result.
use std::path::PathBuf;

use rnic::sim::{sim_error, sim_pair, SimConfig};
use rnic::{
    AccessFlags, ConnectOptions, Context, Counters, Endpoint, Mtu, PortAddr, RecvWr, Result, SendWr, Sge,
    WorkCompletion,
};
use rnic_contract::CORE_CLOCK_MHZ;
use serde::Serialize;

pub mod exchange;
pub mod lat;
mod layout;
mod limits;
pub mod plot;
pub mod remote;
pub mod remote_lat;
pub mod stages;
pub mod states;
pub mod stats;
mod verify;

pub use layout::{atomic_init, fill_pattern, gather_pieces, pattern_byte, qp_iters, slot_stride, Piece, GAP_BYTE};
pub use limits::{ack_timeout_cycles, check_options, client_cq_entries, default_stall_cycles, rnr_wait_cycles};
use limits::{effective_rx_depth, inval, server_cq_share};
pub use verify::{check_atomics, check_atomics_from, check_buffer, check_qp_buffer, check_qp_slots, Mismatch};

/// Largest message the test sends, in bytes (2^31, the most a message carries).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 31;

/// Largest size of perftest's `-a` sweep, bytes (2^23 = 8 MiB).
pub const SWEEP_MAX_BYTES: u64 = 1 << 23;

/// The sizes of perftest's `-a` sweep up to `max`: 2, 4, 8, … (powers of two from 2^1) that are
/// at most `max` and at most [`SWEEP_MAX_BYTES`].
pub fn sweep_sizes(max: u64) -> Vec<u64> {
    (1..=23).map(|k| 1u64 << k).filter(|&s| s <= max.min(SWEEP_MAX_BYTES)).collect()
}

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

    /// The original value operation `i` must return (the target's value before it), for a
    /// target that starts at [`ATOMIC_INIT`].
    pub fn original(self, i: u64) -> u64 {
        self.original_from(ATOMIC_INIT, i)
    }

    /// The original value operation `i` must return on a target that starts at `init`.
    pub fn original_from(self, init: u64, i: u64) -> u64 {
        match self {
            Self::FetchAndAdd => init.wrapping_add(i.wrapping_mul(ATOMIC_ADD)),
            Self::CmpAndSwap => init.wrapping_add(i),
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
pub const MAX_RX_DEPTH: u32 = rnic::qp::MAX_RECV_WR;

/// Most QP pairs a run connects ([`WriteBwOptions::qps`], perftest's `-q`): one QP per NIC
/// per pair, so every QP context but QPN 0 and 1 (IBTA's special QPs, which the driver never
/// hands out).
pub const MAX_QPS: u32 = (1 << rnic_contract::LOG_NUM_QPS) - 2;

/// Most SGEs a message is posted as ([`WriteBwOptions::sges`]): what the NIC gathers (or a
/// READ scatters into) per WQE.
pub const MAX_SGES: u32 = rnic::qp::MAX_SEND_SGE;

/// Largest [`WriteBwOptions::inline_size`]: the inline bytes a WQE holds.
pub const MAX_INLINE_SIZE: u32 = rnic::qp::MAX_INLINE_DATA;

/// Parameters of [`run_write_bw`] (despite the name, of either operation: see `op`).
#[derive(Clone, Debug)]
pub struct WriteBwOptions {
    /// What to measure (default RDMA WRITE).
    pub op: BwOp,
    /// Message size in bytes (1 ..= 2^31).
    pub size: u64,
    /// Number of messages, over all QPs.
    pub iters: u64,
    /// Connected RC QP pairs (1 ..= [`MAX_QPS`], at most `iters`; perftest's `-q`). Iteration
    /// `j` goes to QP `j mod qps`; each QP has its own buffers at both ends, its own
    /// `tx_depth` / `outs` / `rx_depth` window, and all post concurrently.
    pub qps: u32,
    /// Path MTU.
    pub mtu: Mtu,
    /// Work requests kept outstanding per QP (its SQ size; the client's CQ, shared by all QPs,
    /// holds `qps × tx_depth.next_power_of_two()`, [`client_cq_entries`]).
    pub tx_depth: u32,
    /// Signal one work request in `cq_mod` (and the last) of each QP; 1 ..= `tx_depth`.
    pub cq_mod: u32,
    /// perftest's `-l`/`--post_list`: each `post_send` call carries exactly this many work
    /// requests (one doorbell for them; fewer only for a QP's last messages), 1 ..= `tx_depth`,
    /// and a QP posts only when it has room for that many. None: each pass of the host loop
    /// posts as many as the QP has room for, in one call.
    pub post_list: Option<u32>,
    /// SEND only: receive work requests the server keeps posted per QP (its RQ size, perftest's
    /// `--rx-depth`, default 512), 1 ..= [`MAX_RX_DEPTH`]. When they run out, the client's
    /// SENDs are answered with RNR NAKs and retried.
    pub rx_depth: u32,
    /// READ and atomic: READs / atomics outstanding (the client QP's `max_rd_atomic` and the
    /// server's `max_dest_rd_atomic`, perftest's `--outs`, default 16), 1 ..= 16.
    pub outs: u8,
    /// Atomic only: the operation (default fetch-and-add).
    pub atomic_type: AtomicType,
    /// WRITE, SEND and READ: SGEs each message is posted as (1 ..= [`MAX_SGES`], default 1),
    /// split as [`gather_pieces`] describes over a slot of [`slot_stride`] bytes of the
    /// client's buffer (the WRITE or SEND source, the READ destination); the client QPs are
    /// built with `max_send_sge` = `sges`. Atomics take 1 only.
    pub sges: u32,
    /// WRITE and SEND (perftest's `-I, --inline_size`): the client QPs are built with
    /// `max_inline_data` = `inline_size` (0 ..= [`MAX_INLINE_SIZE`], default 0), and when
    /// `size ≤ inline_size` every message is posted with `IBV_SEND_INLINE`: its bytes are
    /// copied into the WQE at post time from a scratch buffer that the next message reuses at
    /// once, and the NIC reads them from the SQ ring (not from the client's registered buffer,
    /// which stays untouched). READ and atomics take 0 only.
    pub inline_size: u32,
    /// The server's RNR timer code (`min_rnr_timer`, default 12 = 0.64 ms; 1 ..= 31, or 0 =
    /// 655.36 ms): the wait before a SEND that found no receive is resent.
    pub min_rnr_timer: u8,
    /// A hard cycle budget from the first post to the last completion: the run gives up when
    /// it is spent. `None` (the default) bounds the run by progress instead: it gives up only
    /// when no completion arrives for [`default_stall_cycles`] cycles, so a run slowed by RNR
    /// waits or retransmissions finishes however long it takes, and a stalled one ends soon.
    pub budget_cycles: Option<u64>,
    /// Capture both directions of the wire into this pcap file.
    pub pcap: Option<PathBuf>,
    /// Dump an FST waveform of NIC `waveform_nic` (0: the client, 1: the server) into this
    /// file.
    pub waveform: Option<PathBuf>,
    /// Which NIC `waveform` records: 0 the client, 1 the server.
    pub waveform_nic: usize,
    /// Count the cycles each NIC's TX scheduler and RX engine spend in each state over the
    /// measured run ([`states`]; the report's `state_profile`).
    pub state_profile: bool,
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
            qps: 1,
            mtu: Mtu::Mtu4096,
            tx_depth: 64,
            cq_mod: 16,
            post_list: None,
            rx_depth: 512,
            outs: 16,
            atomic_type: AtomicType::FetchAndAdd,
            sges: 1,
            inline_size: 0,
            min_rnr_timer: 12,
            budget_cycles: None,
            pcap: None,
            waveform: None,
            waveform_nic: 0,
            state_profile: false,
            qp_timeout: 4,
            sim: SimConfig::default(),
        }
    }
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
    /// Messages, over all QPs.
    pub iters: u64,
    /// Connected QP pairs the messages were spread over, round-robin.
    pub qps: u32,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// Outstanding work requests per QP.
    pub tx_depth: u32,
    /// One signaled work request in `cq_mod` (per QP).
    pub cq_mod: u32,
    /// Work requests per `post_send` call ([`WriteBwOptions::post_list`]; null: as many as
    /// there was room for).
    pub post_list: Option<u32>,
    /// `post_send` calls that carried work requests (one SQ doorbell each), over all QPs.
    pub post_calls: u64,
    /// MMIO writes the client NIC received from the first post to the last completion: its SQ
    /// doorbells (the client rings no other register while the test runs).
    pub doorbells: u64,
    /// SEND: receive work requests the server kept posted per QP (null otherwise).
    pub rx_depth: Option<u32>,
    /// READ and atomic: READs / atomics kept outstanding (`max_rd_atomic`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outs: Option<u8>,
    /// Atomic only: "fetch_and_add" or "cmp_and_swap".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomic_type: Option<&'static str>,
    /// SGEs each message was posted as ([`WriteBwOptions::sges`]; 1 for atomics).
    pub sges: u32,
    /// The client QPs' `max_inline_data` ([`WriteBwOptions::inline_size`]): messages of at
    /// most this many bytes were posted inline (0: none).
    pub inline_size: u32,
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
    /// Every QP verified (see [`QpReport::verified`]): every byte of the server's buffers
    /// matched, and every work request completed successfully
    /// (for SEND: every receive too, in order, with `byte_len` = `size`; for atomics: every
    /// original returned was right and the target holds the final value, see
    /// [`check_atomics`]).
    pub verified: bool,
    /// The first wrong byte, if any (atomics: of the originals in the client's buffer, 8 bytes
    /// per operation).
    pub first_mismatch: Option<Mismatch>,
    /// Work requests completed (retired by a successful completion), over all QPs.
    pub completed: u64,
    /// SEND: receive work requests completed successfully at the server, over all QPs (null
    /// otherwise).
    pub received: Option<u64>,
    /// The run gave up: its hard budget was spent, or (without one) no completion arrived for
    /// `stall_cycles`.
    pub timed_out: bool,
    /// The hard budget from the first post, in cycles ([`WriteBwOptions::budget_cycles`];
    /// null without one).
    pub budget_cycles: Option<u64>,
    /// Without a hard budget: the longest wait for the next completion before the run gives up,
    /// in cycles ([`default_stall_cycles`]; null with a hard budget).
    pub stall_cycles: Option<u64>,
    /// The first error completion or driver error, if any (atomics: also a wrong final value
    /// of the target).
    pub error: Option<String>,
    /// Simulated cycles per wall-clock second, over the whole run (setup included).
    pub sim_cycles_per_sec: f64,
    /// Wall-clock seconds the simulator stepped.
    pub sim_wall_seconds: f64,
    /// How the simulator evaluated the RTL each cycle (`fast`, `reference`, `checked`:
    /// `RNIC_SIM_EVAL`, docs/simulator.md).
    pub sim_eval: &'static str,
    /// All cycles simulated (setup included).
    pub sim_total_cycles: u64,
    /// Wall-clock seconds Verilator took to build the model (from rnic-sim's build).
    pub verilator_build_seconds: f64,
    /// Frames written to the pcap file.
    pub pcap_frames: u64,
    /// With [`WriteBwOptions::state_profile`]: cycles per engine state of both NICs over the
    /// measured run (null otherwise).
    pub state_profile: Option<states::StateProfiles>,
    /// The client's endpoint of QP 0 (with its buffer).
    pub client: Endpoint,
    /// The server's endpoint of QP 0 (with its buffer).
    pub server: Endpoint,
    /// Each QP pair's outcome, in QP order (`qps` entries).
    pub per_qp: Vec<QpReport>,
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

/// The outcome of one QP pair of a run.
#[derive(Clone, Debug, Serialize)]
pub struct QpReport {
    /// Index of the pair, 0 ..= qps − 1: it carried iterations `qp`, `qp + qps`, …
    pub qp: u32,
    /// Messages this QP carried ([`qp_iters`]).
    pub iters: u64,
    /// Its work requests completed successfully.
    pub completed: u64,
    /// SEND: its receives completed successfully at the server (null otherwise).
    pub received: Option<u64>,
    /// Atomic only: the final value of this QP's target word (it started at [`atomic_init`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<u64>,
    /// Every one of its work requests (and receives) completed successfully, and its own
    /// buffer (atomics: its originals and its target word) holds exactly what it should.
    pub verified: bool,
    /// The first wrong byte of this QP's buffer, if any.
    pub first_mismatch: Option<Mismatch>,
    /// The client QP's endpoint (with its buffer).
    pub client: Endpoint,
    /// The server QP's endpoint (with its buffer).
    pub server: Endpoint,
}

/// Runs the test: two simulated hosts cabled back to back, connected by `qps` RC QP pairs; the
/// client (NIC 0) sends `iters` messages of `size` bytes, iteration `j` on QP `q = j mod qps` as
/// that QP's message `k = j / qps`, to offset `k × size` of the server's (NIC 1) buffer of QP
/// `q` (each QP has its own registered buffer, with its own rkey, at both ends), each message
/// with its own byte pattern ([`pattern_byte`] of `j`). Each QP keeps up to `tx_depth` work
/// requests outstanding and signals one in `cq_mod` of its own and its last (perftest's
/// `cq_mod`); every pass of the loop posts to every QP that has room (one doorbell each), then
/// polls the client's CQ, which all QPs share. A QP's source buffer is a ring of
/// `min(tx_depth, its messages)` message slots, each refilled only after the completion that
/// retires its previous message. After the last completion (or the budget) every QP's buffer
/// is checked byte by byte against the iterations that QP carried ([`check_qp_buffer`]), so a
/// message that landed in another QP's buffer is found.
///
/// With [`BwOp::Write`] message `k` of QP `q` is an RDMA WRITE to that offset. With
/// [`BwOp::Send`] it is a SEND: the server posts receive `k` of each QP (wr_id `j`, SGE = bytes
/// `k × size ..` of the QP's buffer) before the run, up to `rx_depth` per QP, and posts the
/// next ones each time it polls receive completions (its CQ is shared too), which must come in
/// order per QP, successful, with `byte_len` = `size`. With [`BwOp::Read`] it is an RDMA READ of
/// the server's bytes `k × size ..` of the QP's buffer, which hold pattern `j` from the start,
/// into slot `k` of the client's buffer of that QP (one slot per message, so the buffer is as
/// large as the QP's transfer), and the client's buffers are the ones checked. With
/// [`BwOp::Atomic`] (`size` 8)
/// operation `k` of QP `q` is an atomic of `atomic_type` on QP `q`'s own 8-byte-aligned u64 of
/// the server's memory ([`atomic_init`]`(q)` at the start, registered on its own with
/// REMOTE_ATOMIC), whose original lands in the client's bytes `8 k ..` of that QP's buffer;
/// afterwards [`check_atomics_from`] checks each QP's originals and final value.
///
/// WRITE and SEND with `sges` > 1: each slot of the client's ring is [`slot_stride`] bytes and
/// holds the message's pieces ([`gather_pieces`]: in order, of unequal lengths, separated by
/// odd gaps of [`GAP_BYTE`]), and the message is posted as one SGE per piece, so the server's
/// buffer verifies only if the NIC gathered exactly the pieces, in order. READ with `sges` > 1:
/// each slot of the client's buffer is [`slot_stride`] bytes, initially all [`GAP_BYTE`], and
/// the READ is posted with one SGE per piece, so the client's buffer verifies
/// ([`check_qp_slots`]) only if the NIC scattered the response into exactly the pieces, in
/// order, and wrote no gap byte. With `size ≤
/// inline_size` the messages are posted inline instead (the gather list is not used: the bytes
/// are copied into the WQE at post time from one scratch buffer refilled for every message).
///
/// Every completion must carry the QP number of the QP that posted its wr_id (otherwise the
/// run fails with an error naming both).
///
/// `progress(done, total)` is called as completions arrive.
///
/// # Errors
/// Invalid options ([`check_options`]), simulator or driver setup failures. A timeout, an error
/// completion or wrong bytes are not errors: they are in the report (`verified` false).
pub fn run_write_bw(o: &WriteBwOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<WriteBwReport> {
    check_options(o)?;
    let size = o.size as usize;
    let nq = o.qps as usize;
    let qps64 = u64::from(o.qps);
    let stall = o.budget_cycles.is_none().then(|| default_stall_cycles(o));
    let (world, dev_c, dev_s) = sim_pair(o.sim.clone())?;
    if let Some(p) = &o.pcap {
        world.borrow_mut().capture_pcap(p).map_err(|e| sim_error(format!("pcap capture into {}", p.display()), e))?;
    }
    if let Some(p) = &o.waveform {
        world
            .borrow_mut()
            .dump_waveform(o.waveform_nic, p)
            .map_err(|e| sim_error(format!("waveform dump into {}", p.display()), e))?;
    }
    let client = Context::open_with_port(dev_c, PortAddr::for_sim_nic(0))?;
    let server = Context::open_with_port(dev_s, PortAddr::for_sim_nic(1))?;
    let send = o.op == BwOp::Send;
    let read = o.op == BwOp::Read;
    let atomic = o.op == BwOp::Atomic;
    // Messages per QP (iteration j is QP j % qps's message j / qps).
    let n: Vec<u64> = (0..o.qps).map(|q| qp_iters(o.iters, o.qps, q)).collect();
    // WRITE and SEND fill a ring of message slots per QP at the client and are checked in the
    // server's buffers; a READ copies the server's patterns into client buffers as large as
    // each QP's transfer, checked there; atomics return one original each into a client buffer
    // of 8 bytes per operation per QP, and each QP works on its own u64 of the server's.
    // A WRITE, SEND or READ slot holds the message's pieces and the gaps between them (`--sges`).
    let stride = slot_stride(o.size, o.sges) as usize;
    let pieces = gather_pieces(o.size, o.sges);
    let inline = !read && !atomic && o.size <= u64::from(o.inline_size);
    let client_lens: Vec<usize> = n
        .iter()
        .map(|&nq| match o.op {
            BwOp::Atomic => size * nq as usize,
            BwOp::Read => stride * nq as usize,
            BwOp::Write | BwOp::Send => stride * nq.min(u64::from(o.tx_depth)) as usize,
        })
        .collect();
    let server_lens: Vec<usize> =
        n.iter().map(|&nq| if atomic { ATOMIC_BYTES as usize } else { size * nq as usize }).collect();
    let server_total: usize = server_lens.iter().sum();
    // An atomic's target must be 8-byte aligned: the server's words start at the first
    // aligned byte of a buffer 8 bytes longer than they need.
    let mut server_buf = vec![0u8; server_total + if atomic { ATOMIC_BYTES as usize } else { 0 }];
    let server_off = if atomic { server_buf.as_ptr().align_offset(8) } else { 0 };
    // The gaps between pieces hold GAP_BYTE for good (only the pieces are rewritten).
    let mut client_buf = vec![if o.sges > 1 { GAP_BYTE } else { 0 }; client_lens.iter().sum()];
    let starts =
        |lens: &[usize]| -> Vec<usize> { lens.iter().scan(0, |at, &l| Some(std::mem::replace(at, *at + l))).collect() };
    let (client_starts, server_starts) = (starts(&client_lens), starts(&server_lens));
    for q in 0..nq {
        let part = &mut server_buf[server_off + server_starts[q]..][..server_lens[q]];
        if read {
            for (k, chunk) in part.chunks_mut(size).enumerate() {
                fill_pattern(q as u64 + k as u64 * qps64, chunk);
            }
        }
        if atomic {
            part.copy_from_slice(&atomic_init(q as u32).to_le_bytes());
        }
    }

    let (pd_c, pd_s) = (client.alloc_pd()?, server.alloc_pd()?);
    let run = {
        let server_access = match o.op {
            BwOp::Send => AccessFlags::LOCAL_WRITE,
            BwOp::Write => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
            BwOp::Read => AccessFlags::REMOTE_READ,
            BwOp::Atomic => AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
        };
        let server_mrs = split_parts(&mut server_buf[server_off..server_off + server_total], &server_lens)
            .into_iter()
            .map(|part| pd_s.register(part, server_access))
            .collect::<Result<Vec<_>>>()?;
        let client_mrs = split_parts(&mut client_buf, &client_lens)
            .into_iter()
            .map(|part| pd_c.register(part, AccessFlags::LOCAL_WRITE))
            .collect::<Result<Vec<_>>>()?;
        let rx_depth = if send { effective_rx_depth(o) } else { 0 };
        // One CQ per side, shared by all its QPs (as perftest): the client's covers every SQ,
        // the server's every SQ of 1 and RQ.
        let cq_c = client.create_cq(client_cq_entries(o) as usize)?;
        let cq_s = server.create_cq(nq * server_cq_share(o) as usize)?;
        let mut qps_c = Vec::with_capacity(nq);
        let mut qps_s = Vec::with_capacity(nq);
        for _ in 0..nq {
            qps_c.push(
                pd_c.create_qp(&cq_c)
                    .set_max_send_wr(o.tx_depth)
                    .set_max_send_sge(o.sges)
                    .set_max_inline_data(o.inline_size)
                    .build()?,
            );
            qps_s.push(pd_s.create_qp(&cq_s).set_max_send_wr(1).set_max_recv_wr(rx_depth).build()?);
        }
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
        let mut eps = Vec::with_capacity(nq);
        let mut remotes = Vec::with_capacity(nq);
        for q in 0..nq {
            let ep_c = qps_c[q].endpoint()?.with_buffer(&client_mrs[q]);
            let ep_s = qps_s[q].endpoint()?.with_buffer(&server_mrs[q]);
            qps_c[q].connect_with(&ep_s, &opts)?;
            qps_s[q].connect_with(&ep_c, &opts)?;
            remotes.push(ep_s.buffer.ok_or_else(|| inval("server endpoint without buffer"))?);
            eps.push((ep_c, ep_s));
        }
        let qpn_c: Vec<u32> = eps.iter().map(|(c, _)| c.qpn).collect();
        let qpn_s: Vec<u32> = eps.iter().map(|(_, s)| s.qpn).collect();

        let dev = client.device().clone();
        let mut msg = vec![0u8; size];
        let mut wcs = [WorkCompletion::default(); 64];
        // Per QP: WRs posted and completed; SEND: receives posted and completed by the server.
        let (mut posted, mut completed) = (vec![0u64; nq], vec![0u64; nq]);
        let (mut recv_posted, mut received) = (vec![0u64; nq], vec![0u64; nq]);
        let recv_wr = |q: usize, k: u64| -> Result<RecvWr<'_>> {
            let at = (k * o.size) as usize;
            Ok(RecvWr::new(q as u64 + k * qps64, server_mrs[q].sge(at..at + size)?))
        };
        if send {
            for q in 0..nq {
                let upto = n[q].min(u64::from(rx_depth));
                let first: Vec<RecvWr<'_>> = (0..upto).map(|k| recv_wr(q, k)).collect::<Result<_>>()?;
                qps_s[q].post_recv(&first)?;
                recv_posted[q] = upto;
            }
        }
        let done = |completed: &[u64], received: &[u64]| -> u64 {
            (0..nq).map(|q| if send { completed[q].min(received[q]) } else { completed[q] }).sum()
        };
        let mut error = None;
        let mut timed_out = false;
        let mmio_writes = || world.borrow().stats().nics[0].mmio.writes;
        let mut post_calls = 0u64;
        let writes_before = mmio_writes();
        if o.state_profile {
            states::start(&mut world.borrow_mut())?;
        }
        let start = dev.now_cycles();
        let mut end = start;
        // The last completion (client or server), for the stall check.
        let mut last_progress = start;
        let mut batch = Vec::with_capacity(o.tx_depth as usize);
        let mut sgl: Vec<Sge<'_>> = Vec::with_capacity(pieces.len());
        let mut new_rx = vec![0u64; nq];
        while (0..nq).any(|q| completed[q] < n[q] || (send && received[q] < n[q])) {
            for q in 0..nq {
                let room = u64::from(o.tx_depth) - (posted[q] - completed[q]);
                let upto = match o.post_list.map(u64::from) {
                    None => n[q].min(posted[q] + room),
                    // Whole lists only; the last, shorter list when the rest fits.
                    Some(l) => {
                        let left = n[q] - posted[q];
                        if left >= l {
                            posted[q] + room.min(left) / l * l
                        } else if left <= room {
                            n[q]
                        } else {
                            posted[q]
                        }
                    }
                };
                if upto <= posted[q] {
                    continue;
                }
                batch.clear();
                let slot_len = if atomic { size } else { stride };
                let slots = (client_lens[q] / slot_len) as u64;
                let (mr, remote) = (&client_mrs[q], &remotes[q]);
                for k in posted[q]..upto {
                    let j = q as u64 + k * qps64;
                    let slot = (k % slots) as usize * slot_len;
                    if !read && !atomic {
                        fill_pattern(j, &mut msg);
                        if !inline {
                            for p in &pieces {
                                mr.write_at(slot + p.offset as usize, &msg[p.msg_offset as usize..][..p.len as usize])?;
                            }
                        }
                    }
                    let signaled = (k + 1) % u64::from(o.cq_mod) == 0 || k + 1 == n[q];
                    let sge = mr.sge(slot..slot + size)?;
                    let init = atomic_init(q as u32);
                    // With `--sges` > 1 a WRITE or SEND gathers from the slot's pieces and a
                    // READ scatters into them.
                    let listed = o.sges > 1 && !inline && !atomic;
                    if listed {
                        sgl.clear();
                        for p in &pieces {
                            let at = slot + p.offset as usize;
                            sgl.push(mr.sge(at..at + p.len as usize)?);
                        }
                    }
                    let wr = match o.op {
                        BwOp::Send | BwOp::Write => {
                            let wr = if send {
                                SendWr::send(j, sge)
                            } else {
                                SendWr::rdma_write(j, sge, remote.at(k * o.size))
                            };
                            if inline {
                                // Copied into the WR now; `msg` is refilled for the next one.
                                wr.with_inline(&msg)?
                            } else if listed {
                                wr.with_sg_list(&sgl)?
                            } else {
                                wr
                            }
                        }
                        BwOp::Read => {
                            let wr = SendWr::rdma_read(j, sge, remote.at(k * o.size));
                            if listed {
                                wr.with_sg_list(&sgl)?
                            } else {
                                wr
                            }
                        }
                        BwOp::Atomic => match o.atomic_type {
                            AtomicType::FetchAndAdd => SendWr::atomic_fetch_and_add(j, sge, remote.at(0), ATOMIC_ADD),
                            AtomicType::CmpAndSwap => SendWr::atomic_cmp_and_swp(
                                j,
                                sge,
                                remote.at(0),
                                o.atomic_type.original_from(init, k),
                                o.atomic_type.original_from(init, k + 1),
                            ),
                        },
                    };
                    batch.push(wr.signaled(signaled));
                }
                for list in batch.chunks(o.post_list.map_or(batch.len(), |l| l as usize)) {
                    qps_c[q].post_send(list)?;
                    post_calls += 1;
                }
                posted[q] = upto;
            }
            let got = cq_c.poll(&mut wcs)?;
            for wc in &wcs[..got] {
                let q = (wc.wr_id % qps64) as usize;
                if wc.wr_id >= o.iters || wc.qp_num != qpn_c[q] {
                    error.get_or_insert_with(|| {
                        format!(
                            "completion of wr_id {} on QP {:#x}, but that wr_id was posted on QP {:#x} (QP numbers {:x?})",
                            wc.wr_id, wc.qp_num, qpn_c[q], qpn_c
                        )
                    });
                } else if !wc.status.is_success() {
                    error.get_or_insert_with(|| {
                        format!("work request {} (QP {q}) completed with {:?}", wc.wr_id, wc.status)
                    });
                } else {
                    completed[q] = completed[q].max(wc.wr_id / qps64 + 1);
                }
            }
            if got > 0 {
                end = dev.now_cycles();
                last_progress = end;
                progress(done(&completed, &received), o.iters);
            }
            if send {
                let got = cq_s.poll(&mut wcs)?;
                new_rx.iter_mut().for_each(|x| *x = 0);
                for wc in &wcs[..got] {
                    let q = (wc.wr_id % qps64) as usize;
                    let want = q as u64 + received[q] * qps64;
                    if !wc.status.is_success() {
                        error.get_or_insert_with(|| {
                            format!("receive {} (QP {q}) completed with {:?}", wc.wr_id, wc.status)
                        });
                    } else if wc.wr_id != want || wc.qp_num != qpn_s[q] || u64::from(wc.byte_len) != o.size {
                        error.get_or_insert_with(|| {
                            format!(
                                "receive completion {} of QP {q}: wr_id {} on QP {:#x} with byte_len {}, expected wr_id {want} on QP {:#x} with {} bytes",
                                received[q], wc.wr_id, wc.qp_num, wc.byte_len, qpn_s[q], o.size
                            )
                        });
                    } else {
                        received[q] += 1;
                        new_rx[q] += 1;
                    }
                }
                if got > 0 {
                    for q in 0..nq {
                        let upto = n[q].min(recv_posted[q] + new_rx[q]);
                        if upto > recv_posted[q] {
                            let more: Vec<RecvWr<'_>> =
                                (recv_posted[q]..upto).map(|k| recv_wr(q, k)).collect::<Result<_>>()?;
                            qps_s[q].post_recv(&more)?;
                            recv_posted[q] = upto;
                        }
                    }
                    end = dev.now_cycles();
                    last_progress = end;
                    progress(done(&completed, &received), o.iters);
                }
            }
            if error.is_some() {
                end = dev.now_cycles();
                break;
            }
            let now = dev.now_cycles();
            let gave_up = match (o.budget_cycles, stall) {
                (Some(budget), _) => now - start > budget,
                (None, Some(window)) => now - last_progress > window,
                (None, None) => false,
            };
            if gave_up {
                timed_out = true;
                end = dev.now_cycles();
                break;
            }
        }
        let doorbells = mmio_writes() - writes_before;
        // The profile ends with the measured run, before the settling below.
        let state_profile = if o.state_profile { states::read(&world.borrow()) } else { None };
        // Let the last ACKs and frames settle so the counters are final.
        world.borrow_mut().step_n(2_000);
        let counters = BothCounters { client: client.counters()?, server: server.counters()? };
        let mut targets = vec![0u64; nq];
        if atomic {
            for (t, mr) in targets.iter_mut().zip(&server_mrs) {
                let mut word = [0u8; 8];
                mr.read_at(0, &mut word)?;
                *t = u64::from_le_bytes(word);
            }
        }
        RunOutcome {
            start,
            end,
            completed,
            received,
            error,
            timed_out,
            counters,
            eps,
            targets,
            post_calls,
            doorbells,
            state_profile,
        }
        // QPs, CQs and MRs are dropped here, QPs first: the buffers are unmapped before use.
    };
    let RunOutcome {
        start,
        end,
        completed,
        received,
        mut error,
        timed_out,
        counters,
        eps,
        targets,
        post_calls,
        doorbells,
        state_profile,
    } = run;
    let pcap_frames = world.borrow().captured_frames();
    world.borrow_mut().finish().map_err(|e| sim_error("finishing the pcap capture / waveform", e))?;

    // Each QP's check, on its own buffer.
    let mut per_qp = Vec::with_capacity(nq);
    for q in 0..nq {
        let qu = q as u32;
        let client_part = &client_buf[client_starts[q]..][..client_lens[q]];
        let server_part = &server_buf[server_off + server_starts[q]..][..server_lens[q]];
        let mismatch = if atomic {
            let (m, wrong_final) = check_atomics_from(o.atomic_type, atomic_init(qu), client_part, targets[q], n[q]);
            if error.is_none() && !timed_out {
                if let Some(w) = wrong_final {
                    error = Some(if nq > 1 { format!("QP {q}: {w}") } else { w });
                }
            }
            m.map(|m| Mismatch { qp: qu, iteration: q as u64 + m.iteration * qps64, ..m })
        } else if read {
            check_qp_slots(client_part, o.size, o.sges, qu, o.qps)
        } else {
            check_qp_buffer(server_part, o.size, qu, o.qps)
        };
        let done_q = if send { completed[q].min(received[q]) } else { completed[q] };
        let wrong_final = atomic && targets[q] != o.atomic_type.original_from(atomic_init(qu), n[q]);
        per_qp.push(QpReport {
            qp: qu,
            iters: n[q],
            completed: completed[q],
            received: send.then_some(received[q]),
            target: atomic.then_some(targets[q]),
            verified: mismatch.is_none() && !wrong_final && done_q == n[q],
            first_mismatch: mismatch,
            client: eps[q].0,
            server: eps[q].1,
        });
    }
    let first_mismatch = per_qp
        .iter()
        .find_map(|r| r.first_mismatch)
        .map(|m| Mismatch { count: per_qp.iter().filter_map(|r| r.first_mismatch).map(|m| m.count).sum(), ..m });
    let cycles = end.saturating_sub(start).max(1);
    let seconds = cycles as f64 / (CORE_CLOCK_MHZ as f64 * 1e6);
    let stats = world.borrow().stats();
    let completed: u64 = completed.iter().sum();
    let received: u64 = received.iter().sum();
    let done: u64 = per_qp.iter().map(|r| r.received.map_or(r.completed, |rx| r.completed.min(rx))).sum();
    let clean = error.is_none() && !timed_out;
    if !clean {
        for r in &mut per_qp {
            r.verified = false;
        }
    }
    Ok(WriteBwReport {
        op: o.op.name(),
        size: o.size,
        iters: o.iters,
        qps: o.qps,
        mtu: o.mtu.bytes(),
        tx_depth: o.tx_depth,
        cq_mod: o.cq_mod,
        post_list: o.post_list,
        post_calls,
        doorbells,
        rx_depth: send.then_some(o.rx_depth),
        outs: (read || atomic).then_some(o.outs),
        atomic_type: atomic.then(|| o.atomic_type.name()),
        sges: o.sges,
        inline_size: o.inline_size,
        bytes: o.size * o.iters,
        cycles,
        clock_mhz: CORE_CLOCK_MHZ,
        gbps: (o.size * done) as f64 * 8.0 / seconds / 1e9,
        mpps: done as f64 / seconds / 1e6,
        verified: clean && done == o.iters && per_qp.iter().all(|r| r.verified),
        first_mismatch,
        completed,
        received: send.then_some(received),
        timed_out,
        budget_cycles: o.budget_cycles,
        stall_cycles: stall,
        error,
        sim_cycles_per_sec: stats.cycles_per_second,
        sim_wall_seconds: stats.wall_seconds,
        sim_eval: stats.eval.name(),
        sim_total_cycles: stats.cycles,
        verilator_build_seconds: rnic_sim::verilator_build_seconds(),
        pcap_frames,
        state_profile,
        client: eps[0].0,
        server: eps[0].1,
        per_qp,
        retransmits: counters.client.get("retransmits").unwrap_or(0),
        naks: counters.server.get("tx_naks").unwrap_or(0),
        timeouts: counters.client.get("timeouts").unwrap_or(0),
        rnr_naks: counters.server.get("tx_rnr_naks").unwrap_or(0),
        counters,
    })
}

/// What the measured part of [`run_write_bw`] hands back once its QPs, CQs and MRs are gone.
struct RunOutcome {
    /// NIC cycle just before the first post.
    start: u64,
    /// NIC cycle of the poll that found the last completion (or of the give-up).
    end: u64,
    /// Per QP: WRs completed successfully.
    completed: Vec<u64>,
    /// Per QP: receives completed successfully (SEND).
    received: Vec<u64>,
    /// The first error.
    error: Option<String>,
    /// The budget ran out.
    timed_out: bool,
    /// Both NICs' counters after the run.
    counters: BothCounters,
    /// Per QP: (client, server) endpoints.
    eps: Vec<(Endpoint, Endpoint)>,
    /// Both NICs' state profiles over the measured run (`--state-profile`).
    state_profile: Option<states::StateProfiles>,
    /// Atomic: per QP, the final value of its target word.
    targets: Vec<u64>,
    /// `post_send` calls with work requests.
    post_calls: u64,
    /// MMIO writes to the client NIC during the measured loop.
    doorbells: u64,
}

/// Splits `buf` into consecutive disjoint parts of `lens` bytes (which must not exceed it).
fn split_parts<'a>(mut buf: &'a mut [u8], lens: &[usize]) -> Vec<&'a mut [u8]> {
    let mut parts = Vec::with_capacity(lens.len());
    for &l in lens {
        let (head, tail) = std::mem::take(&mut buf).split_at_mut(l);
        parts.push(head);
        buf = tail;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(check_options(&WriteBwOptions { size: 16, ..atomic.clone() })
            .unwrap_err()
            .to_string()
            .contains("size must be 8"));
        assert!(check_options(&WriteBwOptions { outs: 0, ..atomic.clone() }).is_err());
        assert!(check_options(&WriteBwOptions { outs: 17, ..atomic }).is_err());
    }

    #[test]
    fn sges_and_inline_size_are_checked() {
        let ok = WriteBwOptions::default();
        for op in [BwOp::Write, BwOp::Send] {
            check_options(&WriteBwOptions { op, sges: MAX_SGES, inline_size: MAX_INLINE_SIZE, ..ok.clone() }).unwrap();
            for bad in
                [WriteBwOptions { op, sges: 0, ..ok.clone() }, WriteBwOptions { op, sges: MAX_SGES + 1, ..ok.clone() }]
            {
                assert!(check_options(&bad).unwrap_err().to_string().contains("--sges"));
            }
            let big = WriteBwOptions { op, inline_size: MAX_INLINE_SIZE + 1, ..ok.clone() };
            assert!(check_options(&big).unwrap_err().to_string().contains("--inline-size"));
        }
        // READ scatters into up to MAX_SGES pieces; an atomic's result takes one SGE.
        let read = WriteBwOptions { op: BwOp::Read, size: 64, ..ok.clone() };
        for sges in [2, MAX_SGES] {
            check_options(&WriteBwOptions { sges, ..read.clone() }).unwrap();
        }
        for bad in [0, MAX_SGES + 1] {
            assert!(check_options(&WriteBwOptions { sges: bad, ..read.clone() })
                .unwrap_err()
                .to_string()
                .contains("--sges"));
        }
        let atomic = WriteBwOptions { op: BwOp::Atomic, size: ATOMIC_BYTES, ..ok.clone() };
        check_options(&atomic).unwrap();
        let e = check_options(&WriteBwOptions { sges: 2, ..atomic.clone() }).unwrap_err().to_string();
        assert!(e.contains("--sges 2: an atomic takes exactly one SGE"), "{e}");
        for (op, one) in [("an RDMA READ", read), ("an atomic", atomic)] {
            let e = check_options(&WriteBwOptions { inline_size: 8, ..one }).unwrap_err().to_string();
            assert!(e.contains(&format!("--inline-size 8: {op} carries no inline data")), "{e}");
        }
    }

    #[test]
    fn the_client_cq_covers_every_sq_as_the_driver_rounds_it() {
        // 3 QPs of 5 WRs: SQs of 8, so 24 entries (not 3 × 5 = 15, rounded to 16).
        let o = WriteBwOptions { qps: 3, tx_depth: 5, cq_mod: 5, iters: 3, size: 8, ..WriteBwOptions::default() };
        assert_eq!(client_cq_entries(&o), 24);
        check_options(&o).unwrap();
        assert_eq!(client_cq_entries(&WriteBwOptions { qps: 16, tx_depth: 4096, ..o.clone() }), 1 << 16);
        let e = check_options(&WriteBwOptions { qps: 9, iters: 9, tx_depth: 4097, ..o }).unwrap_err().to_string();
        assert!(e.contains("client's CQ") && e.contains("rounded up"), "{e}");
    }

    #[test]
    fn timers_in_cycles_follow_the_ibta_tables() {
        // 250 MHz: 10 µs = 2 500 cycles; code 12 = 0.64 ms; code 0 = 655.36 ms; 31 = 491.52 ms.
        assert_eq!(rnr_wait_cycles(1), 2_500);
        assert_eq!(rnr_wait_cycles(12), 160_000);
        assert_eq!(rnr_wait_cycles(31), 122_880_000);
        assert_eq!(rnr_wait_cycles(0), 163_840_000);
        // 4.096 µs × 2^n: 1 024 cycles × 2^n.
        assert_eq!(ack_timeout_cycles(0), 1_024);
        assert_eq!(ack_timeout_cycles(4), 16_384);
        assert_eq!(ack_timeout_cycles(14), 16_777_216);
    }

    #[test]
    fn the_stall_window_covers_rnr_waits_and_retries() {
        let send = WriteBwOptions {
            op: BwOp::Send,
            size: 63,
            iters: 20,
            rx_depth: 1,
            tx_depth: 4,
            cq_mod: 2,
            ..WriteBwOptions::default()
        };
        let write = WriteBwOptions { op: BwOp::Write, ..send.clone() };
        // A SEND may wait out RNR timers between two completions; a WRITE never meets one.
        assert_eq!(default_stall_cycles(&send) - default_stall_cycles(&write), 4 * rnr_wait_cycles(12));
        let slow = WriteBwOptions { min_rnr_timer: 0, ..send.clone() };
        assert!(default_stall_cycles(&slow) > 4 * rnr_wait_cycles(0));
        // Every try of a request, up to retry exhaustion (an error completion ends the run).
        assert!(default_stall_cycles(&write) > 8 * ack_timeout_cycles(write.qp_timeout));
        let lazy = WriteBwOptions { qp_timeout: 14, ..write.clone() };
        assert!(default_stall_cycles(&lazy) > 8 * ack_timeout_cycles(14));
        // The messages between two signaled completions, over all QPs.
        let big = WriteBwOptions { size: 1 << 20, qps: 4, cq_mod: 16, tx_depth: 16, ..write.clone() };
        assert!(default_stall_cycles(&big) > 20 * (64 << 20) / WIRE_BYTES_PER_CYCLE);
        // Never overflows.
        let huge = WriteBwOptions { size: MAX_MESSAGE_BYTES, qps: 16, cq_mod: 32768, qp_timeout: 31, ..send };
        assert!(default_stall_cycles(&huge) > 0);
    }

    #[test]
    fn qps_are_checked() {
        let ok = WriteBwOptions::default();
        check_options(&WriteBwOptions { qps: MAX_QPS, ..ok.clone() }).unwrap();
        for qps in [0, MAX_QPS + 1] {
            assert!(
                check_options(&WriteBwOptions { qps, ..ok.clone() }).unwrap_err().to_string().contains("--qps"),
                "{qps}"
            );
        }
        let few = check_options(&WriteBwOptions { qps: 4, iters: 3, ..ok.clone() }).unwrap_err().to_string();
        assert!(few.contains("every QP needs at least one message"), "{few}");
        // The shared CQs: 16 × 4096 fits the client's 65 536 entries, 16 × 4097 does not.
        check_options(&WriteBwOptions { qps: 16, tx_depth: 4096, ..ok.clone() }).unwrap();
        assert!(check_options(&WriteBwOptions { qps: 16, tx_depth: 4097, ..ok.clone() })
            .unwrap_err()
            .to_string()
            .contains("client's CQ"));
        let send = WriteBwOptions { op: BwOp::Send, iters: 1 << 20, size: 64, ..ok };
        check_options(&WriteBwOptions { qps: 2, rx_depth: 16384, ..send.clone() }).unwrap();
        assert!(check_options(&WriteBwOptions { qps: 2, rx_depth: 16385, ..send })
            .unwrap_err()
            .to_string()
            .contains("server's CQ"));
    }
}
