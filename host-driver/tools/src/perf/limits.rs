//! What `rnic perf`'s bandwidth runs accept and how long they wait: the option checks (before
//! anything is built), the IBTA timers in cycles, and the stall window of a run.
use rnic::{Error, Result};
use rnic_contract::CORE_CLOCK_MHZ;

use super::{
    qp_iters, BwOp, WriteBwOptions, ATOMIC_BYTES, MAX_INLINE_SIZE, MAX_MESSAGE_BYTES, MAX_QPS, MAX_RX_DEPTH, MAX_SGES,
    MAX_TOTAL_BYTES, WIRE_BYTES_PER_CYCLE,
};

/// The RNR timer of each `min_rnr_timer` code, in units of 10 µs (IBTA Vol 1 Table 45: 0 =
/// 655.36 ms, 1 = 0.01 ms, 2 = 0.02 ms, … 12 = 0.64 ms, … 31 = 491.52 ms).
const RNR_TIMER_10US: [u64; 32] = [
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
    6144, 8192, 12288, 16384, 24576, 32768, 49152,
];

/// How long a requester waits after an RNR NAK carrying timer `code` (0 ..= 31; higher bits
/// ignored), in NIC cycles at [`CORE_CLOCK_MHZ`] (IBTA Vol 1 Table 45).
pub fn rnr_wait_cycles(code: u8) -> u64 {
    RNR_TIMER_10US[usize::from(code & 31)] * 10 * CORE_CLOCK_MHZ
}

/// The local ACK timeout of exponent `timeout` (4.096 µs × 2^timeout, IBTA Vol 1 9.7.6.1.3),
/// in NIC cycles at [`CORE_CLOCK_MHZ`]; 0 ..= 31 (higher bits ignored).
pub fn ack_timeout_cycles(timeout: u8) -> u64 {
    (4096 * CORE_CLOCK_MHZ / 1000) << (timeout & 31)
}

/// Timeouts a request may take before it completes in error (`retry_cnt` 7 of the QPs, plus the
/// first try): IBV_WC_RETRY_EXC_ERR after the last, which ends the run as an error.
const TRIES: u64 = 8;

/// Without a hard budget, the longest a run waits for its next completion before it gives up,
/// in NIC cycles: 2 M cycles of slack, plus 20× the wire time (100 Gb/s) of the messages that
/// may pass between two completions (`qps × cq_mod` of them, as every QP may signal its last
/// message of a batch) plus 20 000 cycles for each, plus the 8 local ACK timeouts a request may
/// wait out before it completes with IBV_WC_RETRY_EXC_ERR, plus for SEND 4 RNR waits of the
/// server's `min_rnr_timer` ([`rnr_wait_cycles`]): a SEND that finds no receive waits that long
/// before it is resent, and a receive completion (progress) follows each resend that lands.
pub fn default_stall_cycles(o: &WriteBwOptions) -> u64 {
    let batch = u64::from(o.qps).saturating_mul(u64::from(o.cq_mod));
    let wire = 20 * o.size.saturating_mul(batch) / WIRE_BYTES_PER_CYCLE + 20_000 * batch;
    let retries = TRIES * ack_timeout_cycles(o.qp_timeout);
    let rnr = if o.op == BwOp::Send { 4 * rnr_wait_cycles(o.min_rnr_timer) } else { 0 };
    2_000_000u64.saturating_add(wire).saturating_add(retries).saturating_add(rnr)
}

/// Entries the client's CQ needs: every client QP's SQ in full (the driver rounds an SQ of
/// `tx_depth` up to a power of two, and reserves that many CQ entries per QP, since errors
/// complete even unsignaled work requests).
pub fn client_cq_entries(o: &WriteBwOptions) -> u64 {
    u64::from(o.qps) * u64::from(o.tx_depth.next_power_of_two())
}

/// An [`Error::InvalidArgument`] (EINVAL) with `msg`.
pub(super) fn inval(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// Checks the options, before anything is built.
///
/// # Errors
/// [`Error::InvalidArgument`] with a message for the user naming the option;
/// [`Error::NotSupported`] for a waveform from a simulator built without waveform support.
pub fn check_options(o: &WriteBwOptions) -> Result<()> {
    if o.waveform.is_some() && !rnic_sim::build_info().waveform {
        return Err(Error::NotSupported(
            "--waveform needs the simulator built with waveform support: cargo build --release -p rnic-tools --features waveform".into(),
        ));
    }
    if o.size == 0 || o.size > MAX_MESSAGE_BYTES {
        return Err(inval(format!(
            "--size {} must be 1..={MAX_MESSAGE_BYTES} bytes (a message carries at most 2^31)",
            o.size
        )));
    }
    if o.iters == 0 {
        return Err(inval("--iters must be at least 1"));
    }
    if o.qps == 0 || o.qps > MAX_QPS {
        return Err(inval(format!("--qps {} must be 1..={MAX_QPS}", o.qps)));
    }
    if o.iters < u64::from(o.qps) {
        return Err(inval(format!(
            "--iters {} is fewer than --qps {}: every QP needs at least one message",
            o.iters, o.qps
        )));
    }
    let total = o.size.saturating_mul(o.iters);
    if total > MAX_TOTAL_BYTES {
        return Err(inval(format!(
            "size × iters = {total} bytes exceeds the 1 GiB limit of the server's buffer ({MAX_TOTAL_BYTES} bytes); lower --size or --iters"
        )));
    }
    if o.tx_depth == 0 || o.tx_depth > rnic::qp::MAX_SEND_WR {
        return Err(inval(format!("--tx-depth {} must be 1..={}", o.tx_depth, rnic::qp::MAX_SEND_WR)));
    }
    if let Some(n) = o.post_list {
        if n == 0 || n > o.tx_depth {
            return Err(inval(format!(
                "--post-list {n} must be 1..=tx-depth ({}): a post list must fit in the send queue",
                o.tx_depth
            )));
        }
    }
    if o.cq_mod == 0 || o.cq_mod > o.tx_depth {
        return Err(inval(format!(
            "--cq-mod {} must be 1..=tx-depth ({}): with fewer signaled WRs than that the SQ would fill before any completion",
            o.cq_mod, o.tx_depth
        )));
    }
    let cq_c = client_cq_entries(o);
    if cq_c > rnic::cq::MAX_CQE as u64 {
        return Err(inval(format!(
            "--qps {} × (--tx-depth {} rounded up to a power of two) = {cq_c} exceeds the {} entries of the client's CQ, which all QPs share; lower one of them",
            o.qps,
            o.tx_depth,
            rnic::cq::MAX_CQE
        )));
    }
    if o.min_rnr_timer > 31 {
        return Err(inval(format!("min_rnr_timer must be 0 ..= 31, not {}", o.min_rnr_timer)));
    }
    if o.op == BwOp::Atomic && o.size != ATOMIC_BYTES {
        return Err(inval(format!(
            "an atomic moves {ATOMIC_BYTES} bytes, so size must be {ATOMIC_BYTES}, not {}",
            o.size
        )));
    }
    if matches!(o.op, BwOp::Read | BwOp::Atomic) && (o.outs == 0 || o.outs > rnic::qp::MAX_RD_ATOMIC) {
        return Err(inval(format!("outs must be 1 ..= {}, not {}", rnic::qp::MAX_RD_ATOMIC, o.outs)));
    }
    if o.sges == 0 || o.sges > MAX_SGES {
        return Err(inval(format!("--sges {} must be 1..={MAX_SGES}", o.sges)));
    }
    if o.inline_size > MAX_INLINE_SIZE {
        return Err(inval(format!(
            "--inline-size {} must be 0..={MAX_INLINE_SIZE} (the inline bytes a WQE holds)",
            o.inline_size
        )));
    }
    if o.op == BwOp::Atomic && o.sges != 1 {
        return Err(inval(format!(
            "--sges {}: an atomic takes exactly one SGE (its 8-byte result lands in one; lists are for write, send and read), so --sges must be 1",
            o.sges
        )));
    }
    if matches!(o.op, BwOp::Read | BwOp::Atomic) && o.inline_size != 0 {
        return Err(inval(format!(
            "--inline-size {}: {} carries no inline data (inline is for write and send), so --inline-size must be 0",
            o.inline_size,
            read_or_atomic(o.op)
        )));
    }
    if o.op == BwOp::Send && (o.rx_depth == 0 || o.rx_depth > MAX_RX_DEPTH) {
        return Err(inval(format!("--rx-depth {} must be 1..={MAX_RX_DEPTH}", o.rx_depth)));
    }
    if o.op == BwOp::Send {
        let cq_s = u64::from(o.qps) * server_cq_share(o);
        if cq_s > rnic::cq::MAX_CQE as u64 {
            return Err(inval(format!(
                "--qps {} × (1 + --rx-depth {} rounded up to a power of two) = {cq_s} exceeds the {} entries of the server's CQ, which all QPs share; lower one of them",
                o.qps,
                o.rx_depth,
                rnic::cq::MAX_CQE
            )));
        }
    }
    Ok(())
}

/// "an RDMA READ" or "an atomic", for the messages of [`check_options`].
fn read_or_atomic(op: BwOp) -> &'static str {
    if op == BwOp::Read {
        "an RDMA READ"
    } else {
        "an atomic"
    }
}

/// Receives the server keeps posted per QP: `rx_depth`, but no more than QP 0's messages.
pub(super) fn effective_rx_depth(o: &WriteBwOptions) -> u32 {
    o.rx_depth.min(u32::try_from(qp_iters(o.iters, o.qps, 0)).unwrap_or(u32::MAX))
}

/// CQ entries one server QP may need: its SQ of 1 and its RQ (rounded up to a power of two)
/// for SEND, its SQ of 1 otherwise.
pub(super) fn server_cq_share(o: &WriteBwOptions) -> u64 {
    if o.op == BwOp::Send {
        1 + u64::from(effective_rx_depth(o).next_power_of_two())
    } else {
        1
    }
}
