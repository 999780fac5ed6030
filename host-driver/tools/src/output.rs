//! How `rnic perf` prints the latency tests and the sweeps (`-a`): perftest's tables, JSON
//! lines, and CSV rows (one per size).
use std::io::Write;

use rnic::Endpoint;
use serde::Serialize;

use crate::perf::lat::LatReport;
use crate::perf::stages::Stages;
use crate::perf::stats::{LatencyStats, LatencySummary};
use crate::perf::WriteBwReport;

/// perftest's separator line.
pub const RULE: &str = "---------------------------------------------------------------------------------------";

/// perftest's line of one side's QP and buffer: ` local address: QPN 0x0002 PSN 0x4b7371 RKey
/// 0x00000001 VAddr 0x…` (`side` "local" or "remote"; RKey and VAddr 0 without a buffer).
pub fn address_line(side: &str, ep: &Endpoint) -> String {
    let (rkey, va) = ep.buffer.map_or((0, 0), |b| (b.rkey, b.addr));
    format!(" {side} address: QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}", ep.qpn, ep.psn, rkey, va)
}

/// perftest's line of one side's port: ` GID: ::ffff:IPv4  MAC: …` (RoCEv2's IPv4-mapped GID).
pub fn gid_line(ep: &Endpoint) -> String {
    format!(" GID: ::ffff:{}  MAC: {}", ep.ip, ep.mac)
}

/// perftest's title of a latency test.
fn lat_title(op: &str) -> &'static str {
    match op {
        "read-lat" => "RDMA_Read Latency Test",
        "send-lat" => "Send Latency Test",
        "atomic-lat" => "Atomic FETCH_AND_ADD Latency Test",
        _ => "RDMA_Write Latency Test",
    }
}

/// The header of a latency test (once per run or sweep), as ib_*_lat prints it.
pub fn lat_header(r: &LatReport, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{RULE}")?;
    writeln!(out, "                    {} (rnic, simulated in Verilator)", lat_title(r.op))?;
    writeln!(out, " Number of qps   : 1\t\tTransport type : IB")?;
    writeln!(out, " Connection type : RC\t\tUsing SRQ      : OFF")?;
    writeln!(out, " Mtu             : {}[B]", r.mtu)?;
    writeln!(out, " Link type       : Ethernet (RoCEv2, 100 Gb/s simulated wire)")?;
    if !r.op.starts_with("read") && !r.op.starts_with("atomic") {
        writeln!(out, " Max inline data : {}[B]", r.inline_size)?;
        writeln!(out, " CQ Moderation   : {}", r.cq_mod)?;
    }
    writeln!(out, " Data ex. method : in-process (two simulated hosts)")?;
    writeln!(out, "{RULE}")?;
    for (side, ep) in [("local", &r.client), ("remote", &r.server)] {
        writeln!(out, "{}", address_line(side, ep))?;
        writeln!(out, "{}", gid_line(ep))?;
    }
    writeln!(out, "{RULE}")?;
    writeln!(out, "{LAT_COLUMNS}")
}

/// The column header of a latency test's rows, perftest's.
pub const LAT_COLUMNS: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

/// The row of one latency run under [`LAT_COLUMNS`], as perftest prints it: message size
/// (bytes), samples, then `s`'s figures in µs.
pub fn lat_stats_row(size: u64, samples: u64, s: &LatencyStats, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        " {:<7}{:<15}{:<15.2}{:<15.2}{:<17.2}{:<15.2}{:<16.2}{:<23.2}{:.2}",
        size, samples, s.t_min_us, s.t_max_us, s.t_typical_us, s.t_avg_us, s.t_stdev_us, s.p99_us, s.p99_9_us
    )
}

/// The same figures in cycles at the model clock, under [`lat_stats_row`]'s.
pub fn lat_cycles_row(c: &LatencySummary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        " {:<7}{:<15}{:<15.1}{:<15.1}{:<17.1}{:<15.1}{:<16.1}{:<23.1}{:.1}",
        "", "[cycles]", c.min, c.max, c.typical, c.avg, c.stdev, c.p99, c.p99_9
    )
}

/// One row of a latency test: µs, then the same in cycles at the model clock.
pub fn lat_row(r: &LatReport, out: &mut dyn Write) -> std::io::Result<()> {
    lat_stats_row(r.size, r.completed, &r.stats, out)?;
    lat_cycles_row(&r.stats.cycles, out)
}

/// The per-stage breakdown: one row per stage (min / median / p99 / max cycles) and the model.
pub fn stages_table(s: &Stages, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, " NIC stages, cycles (min / median / p99 / max over the messages measured):")?;
    for st in &s.stages {
        let c = &st.cycles;
        writeln!(
            out,
            "   {:<31} {:>7.0} / {:>7.0} / {:>7.0} / {:>7.0}  ({} msgs) {}",
            st.name, c.min, c.typical, c.p99, c.max, c.samples, st.what
        )?;
    }
    writeln!(
        out,
        "   model: DMA read {} cycles, DMA write {} cycles (included where the host sees a DMA's effect), wire latency {} ns{}",
        s.dma_read_latency_cycles,
        s.dma_write_latency_cycles,
        s.wire_latency_ns,
        if s.unmatched > 0 { format!("; {} messages not matched in the capture", s.unmatched) } else { String::new() }
    )
}

/// The footer of one latency run: what a sample is, the stages, the check.
pub fn lat_footer(r: &LatReport, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{RULE}")?;
    let what = if r.halved {
        "half the round trip of a ping-pong, client doorbell to reply seen"
    } else {
        "doorbell to completion seen"
    };
    writeln!(
        out,
        " a sample: {what}; cycles at {} MHz; {} cycles simulated at {:.0} cycles/s",
        r.stats.clock_mhz, r.run_cycles, r.sim_cycles_per_sec
    )?;
    if let Some(s) = &r.stages {
        stages_table(s, out)?;
    } else if let Some(n) = &r.stages_note {
        writeln!(out, " NIC stages: not measured ({n})")?;
    }
    if r.verified {
        writeln!(out, " verification: all {} exchanges completed, every message intact", r.completed)?;
    } else {
        writeln!(out, " verification: FAILED ({} of {} exchanges)", r.completed, r.iters)?;
    }
    writeln!(out, "{RULE}")
}

/// A CSV row of a latency run.
#[derive(Serialize)]
pub struct LatCsvRow<'a> {
    /// Operation.
    pub op: &'a str,
    /// Bytes.
    pub size: u64,
    /// Samples.
    pub iters: u64,
    /// µs.
    pub t_min_us: f64,
    /// µs.
    pub t_max_us: f64,
    /// µs.
    pub t_typical_us: f64,
    /// µs.
    pub t_avg_us: f64,
    /// µs.
    pub t_stdev_us: f64,
    /// µs.
    pub p99_us: f64,
    /// µs.
    pub p99_9_us: f64,
    /// Cycles.
    pub t_typical_cycles: f64,
    /// Cycles.
    pub p99_cycles: f64,
    /// Median doorbell → TX tlast of the request, cycles (None without the breakdown).
    pub doorbell_to_tx_last_beat: Option<f64>,
    /// Median responder turnaround, cycles.
    pub responder: Option<f64>,
    /// All checks passed.
    pub verified: bool,
}

impl<'a> From<&'a LatReport> for LatCsvRow<'a> {
    fn from(r: &'a LatReport) -> Self {
        let stage =
            |n: &str| r.stages.as_ref().and_then(|s| s.stages.iter().find(|x| x.name == n)).map(|x| x.cycles.typical);
        let s = &r.stats;
        LatCsvRow {
            op: r.op,
            size: r.size,
            iters: r.completed,
            t_min_us: s.t_min_us,
            t_max_us: s.t_max_us,
            t_typical_us: s.t_typical_us,
            t_avg_us: s.t_avg_us,
            t_stdev_us: s.t_stdev_us,
            p99_us: s.p99_us,
            p99_9_us: s.p99_9_us,
            t_typical_cycles: s.cycles.typical,
            p99_cycles: s.cycles.p99,
            doorbell_to_tx_last_beat: stage("doorbell_to_tx_last_beat"),
            responder: stage("responder"),
            verified: r.verified,
        }
    }
}

/// A CSV row of a bandwidth run.
#[derive(Serialize)]
pub struct BwCsvRow<'a> {
    /// Operation.
    pub op: &'a str,
    /// Bytes.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// QPs.
    pub qps: u32,
    /// WRs per post_send (empty: as many as fit).
    pub post_list: Option<u32>,
    /// Signal one in N.
    pub cq_mod: u32,
    /// SQ doorbells rung.
    pub doorbells: u64,
    /// Cycles, first post to last completion.
    pub cycles: u64,
    /// Gb/s.
    pub gbps: f64,
    /// Millions of messages per second.
    pub mpps: f64,
    /// All checks passed.
    pub verified: bool,
}

impl<'a> From<&'a WriteBwReport> for BwCsvRow<'a> {
    fn from(r: &'a WriteBwReport) -> Self {
        BwCsvRow {
            op: r.op,
            size: r.size,
            iters: r.iters,
            qps: r.qps,
            post_list: r.post_list,
            cq_mod: r.cq_mod,
            doorbells: r.doorbells,
            cycles: r.cycles,
            gbps: r.gbps,
            mpps: r.mpps,
            verified: r.verified,
        }
    }
}

/// Writes CSV rows to stdout, the header before the first.
pub struct CsvOut {
    w: csv::Writer<std::io::Stdout>,
}

impl Default for CsvOut {
    fn default() -> Self {
        Self { w: csv::Writer::from_writer(std::io::stdout()) }
    }
}

impl CsvOut {
    /// Writes one row (and the header first, once) and flushes it.
    ///
    /// # Errors
    /// Output errors.
    pub fn row<T: Serialize>(&mut self, row: &T) -> Result<(), csv::Error> {
        self.w.serialize(row)?;
        self.w.flush()?;
        Ok(())
    }
}
