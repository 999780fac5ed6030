//! `rnic`: the command-line tool of the rnic driver. See docs/driver.md.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use rnic::perf::{self, AtomicType, BwOp, WriteBwOptions, WriteBwReport};
use rnic::{Context, DeviceInfo, Mtu, SimDevice};

/// rnic: tools for the rnic RoCEv2 NIC (simulated in Verilator).
#[derive(Parser, Debug)]
#[command(name = "rnic", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bandwidth tests between two simulated hosts (perftest-style).
    Perf {
        #[command(subcommand)]
        op: PerfOp,
    },
    /// Read the identification registers (ID, VERSION, CAPS, CLOCK_MHZ) and counters of a
    /// simulated NIC.
    Info {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum PerfOp {
    /// RDMA WRITE bandwidth, like ib_write_bw: client NIC 0 writes into server NIC 1's buffer.
    Write(WriteArgs),
    /// SEND bandwidth, like ib_send_bw: server NIC 1 posts receives into its buffer, client
    /// NIC 0 sends.
    Send(SendArgs),
    /// RDMA READ bandwidth, like ib_read_bw: client NIC 0 reads server NIC 1's buffer into its
    /// own.
    Read(ReadArgs),
    /// Atomic rate, like ib_atomic_bw: client NIC 0 performs 8-byte atomics
    /// (IBV_WR_ATOMIC_FETCH_AND_ADD or IBV_WR_ATOMIC_CMP_AND_SWP) on one u64 of server NIC 1's
    /// memory; every original returned and the final value are checked.
    Atomic(AtomicArgs),
}

/// `--atomic-type` (perftest's `-A, --atomic_type`).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum AtomicTypeArg {
    /// IBV_WR_ATOMIC_FETCH_AND_ADD.
    #[value(name = "fetch_and_add", alias = "FETCH_AND_ADD")]
    FetchAndAdd,
    /// IBV_WR_ATOMIC_CMP_AND_SWP, chained (operation i swaps init + i for init + i + 1).
    #[value(name = "cmp_and_swap", alias = "CMP_AND_SWAP")]
    CmpAndSwap,
}

#[derive(Args, Debug)]
struct AtomicArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The atomic operation.
    #[arg(long, short = 'A', value_enum, default_value = "fetch_and_add")]
    atomic_type: AtomicTypeArg,
    /// Atomics the client keeps outstanding (its max_rd_atomic and the server's
    /// max_dest_rd_atomic; perftest's --outs), 1 ..= 16.
    #[arg(long, short = 'o', default_value_t = 16)]
    outs: u8,
}

#[derive(Args, Debug)]
struct ReadArgs {
    #[command(flatten)]
    common: WriteArgs,
    /// READs the client keeps outstanding (its max_rd_atomic and the server's
    /// max_dest_rd_atomic; perftest's --outs), 1 ..= 16.
    #[arg(long, short = 'o', default_value_t = 16)]
    outs: u8,
}

#[derive(Args, Debug)]
struct SendArgs {
    #[command(flatten)]
    common: WriteArgs,
    /// Receive work requests the server keeps posted (its RQ size; perftest's --rx-depth).
    #[arg(long, short = 'r', default_value_t = 512)]
    rx_depth: u32,
    /// The server's RNR timer code (its min_rnr_timer, IBTA table: 1 = 0.01 ms … 12 = 0.64 ms …
    /// 0 = 655.36 ms): how long the client waits before resending a SEND that found no receive.
    #[arg(long, default_value_t = 12)]
    min_rnr_timer: u8,
}

fn parse_mtu(s: &str) -> Result<Mtu, String> {
    s.parse::<u32>()
        .ok()
        .and_then(Mtu::from_bytes)
        .ok_or_else(|| format!("path MTU must be 256, 512, 1024, 2048 or 4096, not {s}"))
}

#[derive(Args, Debug)]
struct WriteArgs {
    /// Message size in bytes.
    #[arg(long, short = 's', default_value_t = 65536)]
    size: u64,
    #[command(flatten)]
    common: CommonArgs,
}

/// The options every `rnic perf` operation takes.
#[derive(Args, Debug)]
struct CommonArgs {
    /// Number of messages, over all QPs.
    #[arg(long, short = 'n', default_value_t = 100)]
    iters: u64,
    /// Connected RC QP pairs (perftest's -q), 1 ..= 16: the messages are spread over them
    /// round-robin, each QP with its own buffers and its own --tx-depth (and --outs /
    /// --rx-depth) window, all posting concurrently; at most --iters.
    #[arg(long, short = 'q', default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(perf::MAX_QPS)))]
    qps: u32,
    /// write, send and read: post each message as a list of N SGEs, 1 ..= 16: the message is
    /// split in order into N pieces of unequal lengths (the last takes the remainder) with a
    /// few odd bytes between them, in the source buffer for write and send (the check proves
    /// the NIC gathered them in order) and in the destination buffer for read (the check
    /// proves the NIC scattered the response into them in order and left the bytes between
    /// them alone). A message shorter than N bytes is N − size zero-length pieces among
    /// one-byte ones. atomic takes 1 only.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(perf::MAX_SGES)))]
    sges: u32,
    /// write and send (perftest's -I): the client QPs take up to B bytes of inline data
    /// (max_inline_data), 0 ..= 448, and messages of at most B bytes are posted with
    /// IBV_SEND_INLINE (copied into the WQE at post time; the NIC reads them from the SQ).
    /// read and atomic take 0 only.
    #[arg(long, short = 'I', alias = "inline_size", value_name = "B", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(perf::MAX_INLINE_SIZE)))]
    inline_size: u32,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    #[arg(long, short = 'm', default_value = "4096", value_parser = parse_mtu)]
    mtu: Mtu,
    /// Work requests kept outstanding per QP. The default, 64, is 4× the NIC's window of 16
    /// unacknowledged WQEs per QP, so the SQ still holds WQEs for the NIC while the host polls
    /// and refills (perftest uses 128).
    #[arg(long, short = 't', default_value_t = 64)]
    tx_depth: u32,
    /// Signal one work request in N (perftest's --cq-mod); at most --tx-depth.
    #[arg(long, short = 'Q', default_value_t = 16)]
    cq_mod: u32,
    /// Cycle budget from the first post to the last completion (default: derived from the
    /// transfer size); the run fails when it is exceeded.
    #[arg(long)]
    timeout_cycles: Option<u64>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Capture the wire (both directions) into this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Dump an FST waveform of the client NIC into this file (needs `--features waveform`).
    #[arg(long)]
    waveform: Option<PathBuf>,
    /// Probability that the wire loses a frame (each direction).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Probability that the wire delivers a frame twice.
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    /// Probability that the wire flips one bit of a frame (the receiving MAC flags its FCS).
    #[arg(long, default_value_t = 0.0)]
    corrupt: f64,
    /// Probability that the wire delays a frame by up to --reorder-delay-ns, so later frames
    /// overtake it.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Longest extra delay of a reordered frame, in ns.
    #[arg(long, default_value_t = 1000)]
    reorder_delay_ns: u64,
    /// Seed of the wire's fault injection (runs are deterministic for a given seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Local ACK timeout exponent of the QPs (4.096 us x 2^N).
    #[arg(long, default_value_t = 4)]
    qp_timeout: u8,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Perf { op: PerfOp::Write(a) } => perf_bw(Op::plain(BwOp::Write, a.size), a.common),
        Command::Perf { op: PerfOp::Send(a) } => {
            perf_bw(Op { rx_depth: a.rx_depth, min_rnr_timer: a.min_rnr_timer, ..Op::plain(BwOp::Send, a.common.size) }, a.common.common)
        }
        Command::Perf { op: PerfOp::Read(a) } => perf_bw(Op { outs: a.outs, ..Op::plain(BwOp::Read, a.common.size) }, a.common.common),
        Command::Perf { op: PerfOp::Atomic(a) } => {
            let atomic_type = match a.atomic_type {
                AtomicTypeArg::FetchAndAdd => AtomicType::FetchAndAdd,
                AtomicTypeArg::CmpAndSwap => AtomicType::CmpAndSwap,
            };
            perf_bw(Op { outs: a.outs, atomic_type, ..Op::plain(BwOp::Atomic, perf::ATOMIC_BYTES) }, a.common)
        }
        Command::Info { json } => info(json),
    }
}

/// The operation-specific settings of a `rnic perf` run.
struct Op {
    op: BwOp,
    size: u64,
    rx_depth: u32,
    outs: u8,
    min_rnr_timer: u8,
    atomic_type: AtomicType,
}

impl Op {
    /// `op` with messages of `size` bytes and the defaults of the other settings.
    fn plain(op: BwOp, size: u64) -> Self {
        Op { op, size, rx_depth: 512, outs: 16, min_rnr_timer: 12, atomic_type: AtomicType::FetchAndAdd }
    }
}

fn perf_bw(o: Op, a: CommonArgs) -> ExitCode {
    let name = o.op.name();
    let opts = WriteBwOptions {
        op: o.op,
        rx_depth: o.rx_depth,
        outs: o.outs,
        atomic_type: o.atomic_type,
        sges: a.sges,
        inline_size: a.inline_size,
        min_rnr_timer: o.min_rnr_timer,
        size: o.size,
        iters: a.iters,
        qps: a.qps,
        mtu: a.mtu,
        tx_depth: a.tx_depth,
        cq_mod: a.cq_mod,
        budget_cycles: a.timeout_cycles,
        pcap: a.pcap.clone(),
        waveform: a.waveform.clone(),
        qp_timeout: a.qp_timeout,
        sim: rnic_sim::SimConfig {
            faults: rnic_sim::FaultConfig {
                seed: a.seed,
                drop_probability: a.loss,
                corrupt_probability: a.corrupt,
                duplicate_probability: a.dup,
                reorder_probability: a.reorder,
                reorder_delay_ns: a.reorder_delay_ns,
                ..rnic_sim::FaultConfig::default()
            },
            ..rnic_sim::SimConfig::default()
        },
    };
    if let Err(e) = perf::check_options(&opts) {
        eprintln!("rnic perf {name}: {e}");
        return ExitCode::from(2);
    }
    let bar = if a.json {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(a.iters);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} messages completed [{elapsed}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    };
    let result = perf::run_write_bw(&opts, &mut |done, _| bar.set_position(done));
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            if a.json {
                println!("{}", serde_json::json!({ "op": name, "verified": false, "error": e.to_string() }));
            }
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(1);
        }
    };
    if a.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rnic perf {name}: cannot encode the report: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        print_table(&report, &a);
    }
    if report.timed_out {
        eprintln!(
            "rnic perf {name}: timed out after {} cycles with {}/{} messages completed (NIC counters: client {:?}, server {:?})",
            report.budget_cycles,
            report.completed,
            report.iters,
            report.counters.client.iter().filter(|(_, v)| *v != 0).collect::<Vec<_>>(),
            report.counters.server.iter().filter(|(_, v)| *v != 0).collect::<Vec<_>>()
        );
    }
    if let Some(e) = &report.error {
        eprintln!("rnic perf {name}: {e}");
    }
    if let Some(m) = report.first_mismatch {
        let whose = if report.qps > 1 { format!(" of QP {}'s buffer", m.qp) } else { String::new() };
        eprintln!(
            "rnic perf {name}: data mismatch: first wrong byte at offset {}{whose} (message {}, byte {}): expected {:#04x}, found {:#04x}; {} bytes wrong",
            m.offset,
            m.iteration,
            m.offset % report.size,
            m.expected,
            m.found,
            m.count
        );
    }
    if report.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

const RULE: &str = "---------------------------------------------------------------------------------------";

fn print_table(r: &WriteBwReport, a: &CommonArgs) {
    println!("{RULE}");
    let title = match r.op {
        "send" => "Send",
        "read" => "RDMA_Read",
        "atomic" => "Atomic",
        _ => "RDMA_Write",
    };
    println!("                    {title} BW Test (rnic, simulated in Verilator)");
    println!(" Number of qps   : {}\t\tTransport type : IB", r.qps);
    println!(" Connection type : RC\t\tUsing SRQ      : OFF");
    println!(" TX depth        : {}", r.tx_depth);
    if let Some(rx) = r.rx_depth {
        println!(" RX depth        : {rx}");
    }
    if let Some(outs) = r.outs {
        println!(" Outstand reads  : {outs}");
    }
    if r.atomic_type.is_some() {
        println!(" Atomic Type     : {}", atomic_type_of(r).perftest_name());
    }
    println!(" CQ Moderation   : {}", r.cq_mod);
    println!(" Mtu             : {}[B]", r.mtu);
    println!(" Link type       : Ethernet (RoCEv2, 100 Gb/s simulated wire)");
    println!(" Max inline data : {}[B]{}", r.inline_size, if r.size <= u64::from(r.inline_size) { "\t\tmessages sent inline" } else { "" });
    println!(" SGEs per WR     : {}", r.sges);
    println!(" Data ex. method : in-process (two simulated hosts)");
    println!("{RULE}");
    // One line per QP and side, as perftest prints them.
    for (side, pick) in [("local", true), ("remote", false)] {
        for q in &r.per_qp {
            let ep = if pick { &q.client } else { &q.server };
            let (rkey, va) = ep.buffer.map_or((0, 0), |b| (b.rkey, b.addr));
            println!(" {side} address: QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}", ep.qpn, ep.psn, rkey, va);
        }
        let ep = if pick { &r.client } else { &r.server };
        println!(" GID: ::ffff:{}  MAC: {}", ep.ip, ep.mac);
    }
    println!("{RULE}");
    println!(" #bytes     #iterations    BW average[Gb/sec]   MsgRate[Mpps]");
    println!(" {:<10} {:<14} {:<20.2} {:.6}", r.size, r.iters, r.gbps, r.mpps);
    println!("{RULE}");
    println!(
        " NIC cycles, first post to last completion: {} ({:.3} us at {} MHz)",
        r.cycles,
        r.cycles as f64 / r.clock_mhz as f64,
        r.clock_mhz
    );
    println!(
        " simulator: {:.0} cycles/s ({} cycles in {:.2} s wall); Verilator build {:.1} s",
        r.sim_cycles_per_sec, r.sim_total_cycles, r.sim_wall_seconds, r.verilator_build_seconds
    );
    if let Some(p) = &a.pcap {
        println!(" pcap: {} frames in {}", r.pcap_frames, p.display());
    }
    if a.loss > 0.0 || a.dup > 0.0 || a.corrupt > 0.0 || a.reorder > 0.0 || r.retransmits > 0 || r.rnr_naks > 0 {
        println!(
            " recovery: {} retransmissions, {} NAKs ({} RNR), {} timeouts (loss {}, dup {}, corrupt {}, reorder {}, seed {})",
            r.retransmits, r.naks, r.rnr_naks, r.timeouts, a.loss, a.dup, a.corrupt, a.reorder, a.seed
        );
    }
    if let Some(p) = &a.waveform {
        println!(" waveform (NIC 0): {}", p.display());
    }
    if r.verified && r.op == "atomic" && r.qps == 1 {
        println!(
            " verification: all {} originals returned once and the target holds {:#018x}",
            r.iters,
            atomic_type_of(r).original(r.iters)
        );
    } else if r.verified && r.op == "atomic" {
        println!(
            " verification: all {} originals returned once and each of the {} QPs' targets holds its final value",
            r.iters, r.qps
        );
    } else if r.verified {
        let whose = if r.qps > 1 { ", each QP's in its own buffer" } else { "" };
        let how = if r.size <= u64::from(r.inline_size) {
            ", every message sent inline".to_owned()
        } else if r.sges > 1 && r.op == "read" {
            format!(", every message scattered into {} SGEs", r.sges)
        } else if r.sges > 1 {
            format!(", every message gathered from {} SGEs", r.sges)
        } else {
            String::new()
        };
        println!(" verification: all {} bytes match{whose}{how}", r.bytes);
    } else {
        for q in r.per_qp.iter().filter(|q| !q.verified && r.qps > 1) {
            println!(" QP {}: FAILED ({} of {} messages completed)", q.qp, q.completed, q.iters);
        }
        match r.received {
            Some(rx) => println!(" verification: FAILED ({} of {} messages completed, {rx} received)", r.completed, r.iters),
            None => println!(" verification: FAILED ({} of {} messages completed)", r.completed, r.iters),
        }
    }
    println!("{RULE}");
}

/// The atomic type a report names.
fn atomic_type_of(r: &WriteBwReport) -> AtomicType {
    if r.atomic_type == Some(AtomicType::CmpAndSwap.name()) {
        AtomicType::CmpAndSwap
    } else {
        AtomicType::FetchAndAdd
    }
}

fn info(json: bool) -> ExitCode {
    let world = match rnic_sim::World::new(1, rnic_sim::SimConfig::default()) {
        Ok(w) => std::rc::Rc::new(std::cell::RefCell::new(w)),
        Err(e) => {
            eprintln!("rnic info: cannot create the simulated NIC: {e}");
            return ExitCode::from(1);
        }
    };
    let dev = match SimDevice::new(world, 0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rnic info: {e}");
            return ExitCode::from(1);
        }
    };
    let info = match DeviceInfo::read(&dev) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("rnic info: {e}");
            return ExitCode::from(1);
        }
    };
    let compat = info.check_compatible();
    let counters = match &compat {
        Ok(()) => Context::open(dev).and_then(|c| c.counters()).ok(),
        Err(_) => None,
    };
    let b = rnic_sim::build_info();
    if json {
        let v = serde_json::json!({
            "device": "sim NIC 0 of 1",
            "info": info,
            "compatible": compat.is_ok(),
            "error": compat.as_ref().err().map(|e| e.to_string()),
            "counters": counters,
            "driver_contract_version": rnic_contract::regs::VERSION_VALUE,
            "verilator_build_seconds": rnic_sim::verilator_build_seconds(),
            "waveform_support": b.waveform,
        });
        println!("{v}");
    } else {
        let id_ascii: String = info.id.to_be_bytes().iter().map(|&c| if c.is_ascii_graphic() { c as char } else { '.' }).collect();
        println!("device          : sim NIC 0 of 1 (Verilated RTL)");
        println!("ID              : {:#010x} \"{id_ascii}\"", info.id);
        println!("VERSION         : {:#010x} (contract {}.{}; driver speaks {:#010x})", info.version, info.major(), info.minor(), rnic_contract::regs::VERSION_VALUE);
        println!("CAPS            : {:#010x}", info.caps);
        println!("  QPs           : {}", 1u64 << info.log_qps);
        println!("  MR keys       : {}", 1u64 << info.log_mrs);
        println!("  CQs           : {}", 1u64 << info.log_cqs);
        println!("  WQEs in flight: {} per QP", 1u64 << info.log_inflight);
        println!("  datapath      : {} bytes", info.datapath_bytes);
        println!("CLOCK_MHZ       : {}", info.clock_mhz);
        println!("simulator       : Verilator build {:.1} s, waveform support {}", rnic_sim::verilator_build_seconds(), if b.waveform { "on" } else { "off" });
        match &compat {
            Ok(()) => println!("compatible      : yes"),
            Err(e) => println!("compatible      : NO: {e}"),
        }
        if let Some(c) = counters {
            println!("counters:");
            for (n, v) in c.iter() {
                println!("  {n:<17}: {v}");
            }
        }
    }
    if compat.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
