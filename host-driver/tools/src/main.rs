//! `rnic`: the command-line tool of the rnic driver. See docs/driver.md.
use std::process::ExitCode;

use clap::Parser;
use rnic::{Context, DeviceInfo};
use rnic_tools::cli::{
    self, Cli, Command, CommonArgs, LatArgs, LinkArg, Op, OutputFormat, PerfOp, ServeArgs, SimCmd, StagesArgs,
};
use rnic_tools::output::{self, BwCsvRow, CsvOut, LatCsvRow};
use rnic_tools::perf::lat::{self as lat, LatOp};
use rnic_tools::perf::plot::{self, BwPoint, LatPoint, PlotError};
use rnic_tools::perf::remote::{self, RemoteOptions, RemoteReport};
use rnic_tools::perf::remote_lat::{self, RemoteLatOptions};
use rnic_tools::perf::{self, AtomicType, WriteBwReport};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Perf { op } => match (op.lat(), op.split()) {
            (Some((lop, a)), _) => perf_lat(lop, a),
            (None, Some((o, a))) => perf_bw(o, a),
            (None, None) => match op {
                PerfOp::Stages(a) => perf_stages(&a),
                _ => ExitCode::from(2),
            },
        },
        Command::Info { json, device } => info(json, &device),
        Command::Sim { cmd: SimCmd::Serve(a) } => serve(&a),
    }
}

fn serve(a: &ServeArgs) -> ExitCode {
    if let Err(e) = a.check() {
        eprintln!("rnic sim serve: {e}");
        return ExitCode::from(2);
    }
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
            LinkArg::Unconnected | LinkArg::Bridge => rnic_sim::Topology::Unconnected,
        },
        bridges: a.bridges.clone(),
        pcap: a.pcap.clone(),
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
    for (k, b) in opts.bridges.iter().enumerate() {
        println!("nic{k}: bridged to {b}");
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
            if a.format() == OutputFormat::Json {
                println!(
                    "{}",
                    serde_json::json!({ "op": name, "device": device, "verified": false, "error": e.to_string() })
                );
            }
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(1);
        }
    };
    if a.format() == OutputFormat::Json {
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
        println!("{}", output::address_line(side, ep));
        println!("{}", output::gid_line(ep));
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
    if let (Some(cps), Some(total)) = (r.sim_cycles_per_sec, r.sim_total_cycles) {
        println!(" this side's simulated world: {total} cycles at {cps:.0} cycles/s");
    }
    println!(" verification: {}", if r.verified { "passed" } else { "FAILED" });
    println!("{RULE}");
}

/// Runs a latency test, or its sweep over sizes.
fn perf_lat(op: LatOp, a: &LatArgs) -> ExitCode {
    let name = op.name();
    if let Some(d) = a.device.as_deref().filter(|d| *d != "sim") {
        if a.sweep.all || a.pcap.is_some() || a.plot.is_some() {
            eprintln!("rnic perf {name}: --all, --pcap and --plot are for the in-process run (without --device)");
            return ExitCode::from(2);
        }
        return perf_lat_remote(op, a, d);
    }
    if a.host.is_some() {
        eprintln!("rnic perf {name}: a HOST argument needs --device (vfio-user:PATH or vfio:BDF): without it both hosts run in this process");
        return ExitCode::from(2);
    }
    if op == LatOp::Atomic && a.sweep.all {
        eprintln!("rnic perf {name}: --all: an atomic moves 8 bytes, there are no sizes to sweep");
        return ExitCode::from(2);
    }
    let sizes = a.sweep.sizes(a.size_for(op));
    for &size in &sizes {
        if let Err(e) = lat::check_lat_options(&a.options(op, size)) {
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(2);
        }
    }
    let fmt = a.format();
    let mut csv = CsvOut::default();
    let mut all_ok = true;
    let mut points = Vec::new();
    let mut one = None;
    for (k, &size) in sizes.iter().enumerate() {
        let opts = a.options(op, size);
        let bar = progress_bar(fmt, a.iters, "exchanges");
        let r = lat::run_lat(&opts, &mut |done, _| bar.set_position(done));
        bar.finish_and_clear();
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                if fmt == OutputFormat::Json {
                    println!(
                        "{}",
                        serde_json::json!({ "op": name, "size": size, "verified": false, "error": e.to_string() })
                    );
                }
                eprintln!("rnic perf {name}: {e}");
                return ExitCode::from(1);
            }
        };
        let mut out = std::io::stdout();
        let printed = match fmt {
            OutputFormat::Json => serde_json::to_string(&r).map(|s| println!("{s}")).map_err(|e| e.to_string()),
            OutputFormat::Csv => csv.row(&LatCsvRow::from(&r)).map_err(|e| e.to_string()),
            OutputFormat::Text => (|| {
                if k == 0 {
                    output::lat_header(&r, &mut out)?;
                }
                output::lat_row(&r, &mut out)?;
                if k + 1 == sizes.len() || !r.verified {
                    output::lat_footer(&r, &mut out)?;
                }
                Ok::<(), std::io::Error>(())
            })()
            .map_err(|e| e.to_string()),
        };
        if let Err(e) = printed {
            eprintln!("rnic perf {name}: cannot print the report: {e}");
            return ExitCode::from(1);
        }
        if let Some(e) = &r.error {
            eprintln!("rnic perf {name} --size {size}: {e}");
        }
        if r.timed_out {
            eprintln!("rnic perf {name} --size {size}: gave up after {} of {} exchanges", r.completed, r.iters);
        }
        if let Some(m) = r.first_mismatch {
            eprintln!(
                "rnic perf {name} --size {size}: exchange {}: the {} received a wrong byte at offset {}: expected {:#04x}, found {:#04x}; {} bytes wrong",
                m.iteration,
                if m.qp == 1 { "server" } else { "client" },
                m.offset,
                m.expected,
                m.found,
                m.count
            );
        }
        all_ok &= r.verified;
        points.push(LatPoint { size, typical_us: r.stats.t_typical_us, p99_us: r.stats.p99_us });
        if !a.sweep.all {
            one = Some((r.histogram.counts(), r.stats.cycles, r.mtu));
        }
    }
    if let Some(path) = &a.plot {
        let svg = match &one {
            Some((counts, summary, mtu)) => plot::lat_distribution_svg(
                &format!("rnic perf {name}: {} B, MTU {mtu}, {} samples", sizes[0], summary.samples),
                counts,
                summary,
            ),
            None => plot::lat_sweep_svg(&format!("rnic perf {name} -a: {} samples per size", a.iters), &points),
        };
        if let Err(code) = save_plot(name, path, svg, fmt) {
            return code;
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// One side of a two-sided latency test.
fn perf_lat_remote(op: LatOp, a: &LatArgs, device: &str) -> ExitCode {
    let name = op.name();
    let lat = a.options(op, a.size_for(op));
    if let Err(e) = lat::check_lat_options(&lat) {
        eprintln!("rnic perf {name}: {e}");
        return ExitCode::from(2);
    }
    let opts = RemoteLatOptions {
        lat,
        device: device.to_owned(),
        host: a.host.clone(),
        port: a.port,
        connect_timeout: std::time::Duration::from_secs(30),
        stamps: a.stamps.clone(),
    };
    let fmt = a.format();
    let r = match remote_lat::run_remote_lat(&opts, &mut |_, _| {}) {
        Ok(r) => r,
        Err(e) => {
            if fmt == OutputFormat::Json {
                println!(
                    "{}",
                    serde_json::json!({ "op": name, "device": device, "verified": false, "error": e.to_string() })
                );
            }
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(1);
        }
    };
    match fmt {
        OutputFormat::Json | OutputFormat::Csv => match serde_json::to_string(&r) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rnic perf {name}: cannot encode the report: {e}");
                return ExitCode::from(1);
            }
        },
        OutputFormat::Text => {
            println!("{RULE}");
            println!("                    {name} (rnic, one side: {:?} on {})", r.role, r.device);
            println!(" Mtu             : {}[B]", r.mtu);
            println!(" Data ex. method : Ethernet (perftest exchange, peer version {})", r.peer_version);
            println!("{RULE}");
            println!("{}", output::LAT_COLUMNS);
            if let Err(e) = output::lat_stats_row(r.size, r.completed, &r.stats, &mut std::io::stdout()) {
                eprintln!("rnic perf {name}: cannot print the report: {e}");
                return ExitCode::from(1);
            }
            println!("{RULE}");
            println!(
                " time base: {}; verification: {}",
                if r.sim_clock { "simulated cycles" } else { "wall time" },
                if r.verified { "passed" } else { "FAILED" }
            );
            println!("{RULE}");
        }
    }
    if let Some(e) = &r.error {
        eprintln!("rnic perf {name}: {e}");
    }
    if r.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A progress bar counting `what`, hidden unless the output is the table.
fn progress_bar(fmt: OutputFormat, len: u64, what: &str) -> indicatif::ProgressBar {
    if fmt != OutputFormat::Text {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(&format!("{{spinner}} {{pos}}/{{len}} {what} completed [{{elapsed}}]"))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    b
}

/// Runs a bandwidth test, or its sweep over sizes (`-a`).
fn perf_bw(o: Op, a: &CommonArgs) -> ExitCode {
    let name = o.op.name();
    let sweep = o.sizes.filter(|s| s.all);
    if a.plot.is_some() && sweep.is_none() {
        if o.sizes.is_none() {
            eprintln!("rnic perf {name}: --plot draws a sweep of message sizes, and an atomic moves 8 bytes: there is no sweep to draw (drop --plot)");
        } else {
            eprintln!("rnic perf {name}: --plot draws a sweep of message sizes: add -a/--all (or drop --plot)");
        }
        return ExitCode::from(2);
    }
    match a.device.as_deref() {
        Some(d) if d != "sim" => {
            if sweep.is_some() || a.post_list.is_some() || a.plot.is_some() || a.format() == OutputFormat::Csv {
                eprintln!("rnic perf {name}: --all, --post-list, --plot and --output csv are for the in-process run (without --device)");
                return ExitCode::from(2);
            }
            return perf_remote(o, a, d);
        }
        _ => {}
    }
    match sweep {
        Some(s) => perf_bw_sweep(o, a, &s.sizes(o.size)),
        None => perf_bw_one(o, a),
    }
}

/// `-a`: one run per size, one row each.
fn perf_bw_sweep(o: Op, a: &CommonArgs, sizes: &[u64]) -> ExitCode {
    let name = o.op.name();
    if a.host.is_some() {
        eprintln!("rnic perf {name}: a HOST argument needs --device (vfio-user:PATH or vfio:BDF): without it both hosts run in this process");
        return ExitCode::from(2);
    }
    for &size in sizes {
        if let Err(e) = perf::check_options(&cli::bw_options(Op { size, ..o }, a)) {
            eprintln!("rnic perf {name} --all (size {size}): {e}");
            return ExitCode::from(2);
        }
    }
    let fmt = a.format();
    let mut csv = CsvOut::default();
    let mut all_ok = true;
    let mut points = Vec::new();
    for (k, &size) in sizes.iter().enumerate() {
        let opts = cli::bw_options(Op { size, ..o }, a);
        let bar = progress_bar(fmt, a.iters, "messages");
        let r = perf::run_write_bw(&opts, &mut |done, _| bar.set_position(done));
        bar.finish_and_clear();
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                eprintln!("rnic perf {name} (size {size}): {e}");
                return ExitCode::from(1);
            }
        };
        match fmt {
            OutputFormat::Json => match serde_json::to_string(&r) {
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("rnic perf {name}: cannot encode the report: {e}");
                    return ExitCode::from(1);
                }
            },
            OutputFormat::Csv => {
                if let Err(e) = csv.row(&BwCsvRow::from(&r)) {
                    eprintln!("rnic perf {name}: cannot print the report: {e}");
                    return ExitCode::from(1);
                }
            }
            OutputFormat::Text => {
                if k == 0 {
                    println!("{RULE}");
                    println!(
                        "                    {} BW Test, all sizes (rnic, simulated in Verilator)",
                        bw_title(r.op)
                    );
                    println!(
                        " Number of qps   : {}\t\tTX depth : {}\t\tCQ Moderation : {}\t\tPost list : {}",
                        r.qps,
                        r.tx_depth,
                        r.cq_mod,
                        r.post_list.map_or("off".to_owned(), |l| l.to_string())
                    );
                    println!(" Mtu             : {}[B]", r.mtu);
                    println!("{RULE}");
                    println!(" #bytes     #iterations    BW average[Gb/sec]   MsgRate[Mpps]   verified");
                }
                println!(
                    " {:<10} {:<14} {:<20.2} {:<15.6} {}",
                    r.size,
                    r.iters,
                    r.gbps,
                    r.mpps,
                    if r.verified { "yes" } else { "NO" }
                );
                if k + 1 == sizes.len() {
                    println!("{RULE}");
                }
            }
        }
        if let Some(e) = &r.error {
            eprintln!("rnic perf {name} (size {size}): {e}");
        }
        all_ok &= r.verified;
        points.push(BwPoint { size, gbps: r.gbps, mpps: r.mpps });
    }
    if let Some(path) = &a.plot {
        let title = format!(
            "rnic perf {name} -a: {} QP{}, {} messages per size, MTU {}",
            a.qps,
            if a.qps == 1 { "" } else { "s" },
            a.iters,
            a.mtu.bytes()
        );
        if let Err(code) = save_plot(name, path, plot::bw_sweep_svg(&title, &points), fmt) {
            return code;
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Writes the chart of `--plot` (and says where in the table's output); exit status 1 when it
/// cannot be drawn or written.
fn save_plot(
    name: &str,
    path: &std::path::Path,
    svg: Result<String, PlotError>,
    fmt: OutputFormat,
) -> Result<(), ExitCode> {
    match svg.and_then(|svg| plot::write_svg(path, &svg)) {
        Ok(()) => {
            if fmt == OutputFormat::Text {
                println!(" plot: {}", path.display());
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("rnic perf {name} --plot: {e}");
            Err(ExitCode::from(1))
        }
    }
}

/// perftest's name of a bandwidth test.
fn bw_title(op: &str) -> &'static str {
    match op {
        "send" => "Send",
        "read" => "RDMA_Read",
        "atomic" => "Atomic",
        _ => "RDMA_Write",
    }
}

fn perf_bw_one(o: Op, a: &CommonArgs) -> ExitCode {
    let name = o.op.name();
    if a.host.is_some() {
        eprintln!("rnic perf {name}: a HOST argument needs --device (vfio-user:PATH or vfio:BDF): without it both hosts run in this process");
        return ExitCode::from(2);
    }
    let opts = cli::bw_options(o, a);
    if let Err(e) = perf::check_options(&opts) {
        eprintln!("rnic perf {name}: {e}");
        return ExitCode::from(2);
    }
    let fmt = a.format();
    let bar = progress_bar(fmt, a.iters, "messages");
    let result = perf::run_write_bw(&opts, &mut |done, _| bar.set_position(done));
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            if fmt == OutputFormat::Json {
                println!("{}", serde_json::json!({ "op": name, "verified": false, "error": e.to_string() }));
            }
            eprintln!("rnic perf {name}: {e}");
            return ExitCode::from(1);
        }
    };
    match fmt {
        OutputFormat::Json => match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rnic perf {name}: cannot encode the report: {e}");
                return ExitCode::from(1);
            }
        },
        OutputFormat::Csv => {
            if let Err(e) = CsvOut::default().row(&BwCsvRow::from(&report)) {
                eprintln!("rnic perf {name}: cannot print the report: {e}");
                return ExitCode::from(1);
            }
        }
        OutputFormat::Text => print_table(&report, a),
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

use output::RULE;

fn print_table(r: &WriteBwReport, a: &CommonArgs) {
    println!("{RULE}");
    let title = bw_title(r.op);
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
    if let Some(l) = r.post_list {
        println!(" Post List       : {l}");
    }
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
            println!("{}", output::address_line(side, if pick { &q.client } else { &q.server }));
        }
        println!("{}", output::gid_line(if pick { &r.client } else { &r.server }));
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
        " simulator: {:.0} cycles/s ({} cycles in {:.2} s wall, {} evaluation); Verilator build {:.1} s",
        r.sim_cycles_per_sec, r.sim_total_cycles, r.sim_wall_seconds, r.sim_eval, r.verilator_build_seconds
    );
    println!(
        " doorbells: {} SQ doorbells for {} WRs ({:.2} WRs per doorbell, {} post_send calls)",
        r.doorbells,
        r.iters,
        r.iters as f64 / r.doorbells.max(1) as f64,
        r.post_calls
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
        println!(" waveform (NIC {}): {}", a.waveform_nic.index(), p.display());
    }
    if let Some(p) = &r.state_profile {
        for line in rnic_tools::perf::states::lines(p, r.iters, 8) {
            println!("{line}");
        }
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

/// `rnic perf stages`: the per-stage breakdown of a two-sided latency run.
fn perf_stages(a: &StagesArgs) -> ExitCode {
    let run = || -> Result<perf::stages::Stages, String> {
        let frames = perf::stages::read_frames(&a.pcap)?;
        let mut sides = Vec::new();
        for p in &a.stamps {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let s: perf::stages::SideStamps =
                serde_json::from_str(&text).map_err(|e| format!("{}: not a stamps file: {e}", p.display()))?;
            sides.push(s);
        }
        let mut msgs = perf::stages::SideStamps::host_stamps(&sides)?;
        if let Some(only) = &a.only {
            let ip = sides
                .iter()
                .find(|s| &s.role == only)
                .map(|s| s.ip)
                .ok_or_else(|| format!("--only {only}: no {only}'s stamps given"))?;
            msgs.retain(|m| m.requester == Some(ip));
        }
        let link = rnic_sim::config::LinkConfig { latency_ns: a.latency_ns, ..Default::default() };
        let sim = rnic_sim::SimConfig::default();
        Ok(perf::stages::measure(&frames, &msgs, &link, (sim.dma_read_latency_cycles, sim.dma_write_latency_cycles)))
    };
    let st = match run() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rnic perf stages: {e}");
            return ExitCode::from(2);
        }
    };
    if a.json {
        match serde_json::to_string(&st) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("rnic perf stages: {e}");
                return ExitCode::from(1);
            }
        }
    } else if let Err(e) = output::stages_table(&st, &mut std::io::stdout()) {
        eprintln!("rnic perf stages: {e}");
        return ExitCode::from(1);
    }
    if st.stages.is_empty() {
        eprintln!("rnic perf stages: no message matched the capture");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
