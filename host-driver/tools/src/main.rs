//! `rnic`: the command-line tool of the rnic driver. See docs/driver.md.
use std::process::ExitCode;

use clap::Parser;
use rnic::{Context, DeviceInfo};
use rnic_tools::cli::{self, Cli, Command, CommonArgs, LinkArg, Op, ServeArgs, SimCmd};
use rnic_tools::perf::remote::{self, RemoteOptions, RemoteReport};
use rnic_tools::perf::{self, AtomicType, WriteBwReport};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Perf { op } => {
            let (o, a) = op.split();
            perf_bw(o, a)
        }
        Command::Info { json, device } => info(json, &device),
        Command::Sim { cmd: SimCmd::Serve(a) } => serve(&a),
    }
}

fn serve(a: &ServeArgs) -> ExitCode {
    let opts = rnic_vfio_server::ServeOptions {
        nics: a.nics as usize,
        socket_dir: a.socket_dir.clone(),
        config: rnic_sim::SimConfig {
            faults: rnic_sim::FaultConfig {
                seed: a.seed,
                drop_probability: a.loss,
                corrupt_probability: a.corrupt,
                duplicate_probability: a.dup,
                reorder_probability: a.reorder,
                ..rnic_sim::FaultConfig::default()
            },
            ..rnic_sim::SimConfig::default()
        },
        topology: match a.link {
            LinkArg::BackToBack => rnic_sim::Topology::BackToBack,
            LinkArg::Loopback => rnic_sim::Topology::Loopback,
            LinkArg::Unconnected => rnic_sim::Topology::Unconnected,
        },
        batch_cycles: a.batch_cycles,
        report_every: (a.report_secs > 0).then(|| std::time::Duration::from_secs(a.report_secs)),
    };
    let handle = match rnic_vfio_server::serve(&opts) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("rnic sim serve: {e}");
            return ExitCode::from(1);
        }
    };
    let (tx, rx) = std::sync::mpsc::channel();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = tx.send(());
    }) {
        eprintln!("rnic sim serve: cannot handle SIGINT/SIGTERM: {e}");
        return ExitCode::from(1);
    }
    for k in 0..opts.nics {
        if let Some(p) = handle.socket(k) {
            println!("nic{k}: vfio-user:{}", p.display());
        }
    }
    println!("rnic sim serve: {} NICs ({:?}), serving until interrupted", opts.nics, a.link);
    let _ = rx.recv();
    match handle.stop() {
        Some(s) => println!("rnic sim serve: {s}"),
        None => println!("rnic sim serve: stopped"),
    }
    ExitCode::SUCCESS
}

fn perf_remote(o: Op, a: &CommonArgs, device: &str) -> ExitCode {
    let name = o.op.name();
    let bw = cli::bw_options(o, a);
    if let Err(e) = perf::check_options(&bw).and_then(|()| remote::check_remote(&bw)) {
        eprintln!("rnic perf {name}: {e}");
        return ExitCode::from(2);
    }
    let opts = RemoteOptions {
        bw,
        device: device.to_owned(),
        host: a.host.clone(),
        port: a.port,
        connect_timeout: std::time::Duration::from_secs(30),
    };
    let r = match remote::run_remote(&opts, &mut |_, _| {}) {
        Ok(r) => r,
        Err(e) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({ "op": name, "device": device, "verified": false, "error": e.to_string() })
                );
            }
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(1);
        }
    };
    if a.json {
        match serde_json::to_string(&r) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rnic perf {name}: cannot encode the report: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        print_remote(&r);
    }
    if let Some(e) = &r.error {
        eprintln!("rnic perf {name}: {e}");
    }
    if let Some(m) = r.first_mismatch {
        eprintln!(
            "rnic perf {name}: data mismatch: first wrong byte at offset {} (message {}): expected {:#04x}, found {:#04x}; {} bytes wrong",
            m.offset, m.iteration, m.expected, m.found, m.count
        );
    }
    if r.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_remote(r: &RemoteReport) {
    println!("{RULE}");
    println!(
        "                    {} BW Test (rnic, one side: {:?} on {})",
        if r.op == "read" { "RDMA_Read" } else { "RDMA_Write" },
        r.role,
        r.device
    );
    println!(" Number of qps   : 1\t\tTransport type : IB");
    println!(" Connection type : RC\t\tUsing SRQ      : OFF");
    println!(" TX depth        : {}", r.tx_depth);
    println!(" CQ Moderation   : {}", r.cq_mod);
    println!(" Mtu             : {}[B]", r.mtu);
    println!(" Data ex. method : Ethernet (perftest exchange, peer version {})", r.peer_version);
    println!("{RULE}");
    for (side, ep) in [("local", &r.local), ("remote", &r.remote)] {
        let (rkey, va) = ep.buffer.map_or((0, 0), |b| (b.rkey, b.addr));
        println!(" {side} address: QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x}", ep.qpn, ep.psn, rkey, va);
        println!(" GID: ::ffff:{}  MAC: {}", ep.ip, ep.mac);
    }
    println!("{RULE}");
    println!(" #bytes     #iterations    BW average[Gb/sec]   MsgRate[Mpps]");
    println!(" {:<10} {:<14} {:<20.2} {:.6}", r.size, r.iters, r.gbps, r.mpps);
    println!("{RULE}");
    println!(
        " NIC cycles, first post to last completion: {} ({} time base); {:.2} s wall",
        r.cycles,
        if r.sim_clock { "simulated" } else { "wall" },
        r.wall_seconds
    );
    println!(" verification: {}", if r.verified { "passed" } else { "FAILED" });
    println!("{RULE}");
}

fn perf_bw(o: Op, a: &CommonArgs) -> ExitCode {
    let name = o.op.name();
    match a.device.as_deref() {
        Some(d) if d != "sim" => return perf_remote(o, a, d),
        _ => {}
    }
    if a.host.is_some() {
        eprintln!("rnic perf {name}: a HOST argument needs --device (vfio-user:PATH or vfio:BDF): without it both hosts run in this process");
        return ExitCode::from(2);
    }
    let opts = cli::bw_options(o, a);
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
        print_table(&report, a);
    }
    if report.timed_out {
        let why = match (report.budget_cycles, report.stall_cycles) {
            (Some(b), _) => format!("timed out: the budget of {b} cycles (--timeout-cycles) is spent"),
            (None, Some(w)) => format!("gave up after {} cycles: no completion for {w} cycles", report.cycles),
            (None, None) => "timed out".to_owned(),
        };
        eprintln!(
            "rnic perf {name}: {why}, with {}/{} messages completed (NIC counters: client {:?}, server {:?})",
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
    println!(
        " Max inline data : {}[B]{}",
        r.inline_size,
        if r.size <= u64::from(r.inline_size) { "\t\tmessages sent inline" } else { "" }
    );
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
            Some(rx) => {
                println!(" verification: FAILED ({} of {} messages completed, {rx} received)", r.completed, r.iters)
            }
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

fn info(json: bool, device: &str) -> ExitCode {
    let dev = match rnic::open_device(device) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rnic info: {e}");
            return ExitCode::from(1);
        }
    };
    let name = dev.name();
    let info = match DeviceInfo::read(&*dev) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("rnic info: {e}");
            return ExitCode::from(1);
        }
    };
    let compat = info.check_compatible_for(&name);
    let counters = match &compat {
        Ok(()) => Context::open_shared(dev).and_then(|c| c.counters()).ok(),
        Err(_) => None,
    };
    let b = rnic_sim::build_info();
    if json {
        let v = serde_json::json!({
            "device": name,
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
        let id_ascii: String =
            info.id.to_be_bytes().iter().map(|&c| if c.is_ascii_graphic() { c as char } else { '.' }).collect();
        println!("device          : {name}");
        println!("ID              : {:#010x} \"{id_ascii}\"", info.id);
        println!(
            "VERSION         : {:#010x} (contract {}.{}; driver speaks {:#010x})",
            info.version,
            info.major(),
            info.minor(),
            rnic_contract::regs::VERSION_VALUE
        );
        println!("CAPS            : {:#010x}", info.caps);
        println!("  QPs           : {}", 1u64 << info.log_qps);
        println!("  MR keys       : {}", 1u64 << info.log_mrs);
        println!("  CQs           : {}", 1u64 << info.log_cqs);
        println!("  WQEs in flight: {} per QP", 1u64 << info.log_inflight);
        println!("  datapath      : {} bytes", info.datapath_bytes);
        println!("CLOCK_MHZ       : {}", info.clock_mhz);
        println!("QP_CAPS         : {:#010x}", info.qp_caps);
        println!("  WQEs per SQ/RQ: {} / {}", 1u64 << info.log_max_sq_wr, 1u64 << info.log_max_rq_wr);
        println!("  SGEs          : {} send, {} receive", info.max_send_sge, info.max_recv_sge);
        println!("  max_rd_atomic : {}", info.max_rd_atomic);
        println!("SEND_CAPS       : {} inline bytes", info.max_inline);
        println!("SRQ_CAPS        : {} WQEs, {} SGEs", 1u64 << info.log_max_srq_wr, info.max_srq_sge);
        use rnic_contract::regs::features as f;
        let names = [
            (f::RC, "RC"),
            (f::SRQ, "SRQ"),
            (f::ATOMICS, "atomics"),
            (f::UD, "UD"),
            (f::CQ_EVENTS, "CQ events"),
            (f::RNR_NAK_GEN, "RNR NAKs"),
        ];
        let on: Vec<&str> = names.iter().filter(|(b, _)| info.has_feature(*b)).map(|(_, n)| *n).collect();
        println!("FEATURES        : {:#010x} ({}; ibv_atomic_cap {})", info.features, on.join(", "), info.atomic_cap());
        if name.starts_with("sim ") {
            println!(
                "simulator       : Verilator build {:.1} s, waveform support {}",
                rnic_sim::verilator_build_seconds(),
                if b.waveform { "on" } else { "off" }
            );
        }
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
