//! The command line of `rnic` (clap): every option with its range, checked while the arguments
//! are parsed, before anything is built. A value out of range (or not a number) is a usage
//! error: clap prints `error: invalid value 'V' for '--flag <V>': …` and the tool exits with
//! status 2. Negative numbers are read as values (`--loss -1` is a bad `--loss`, not an unknown
//! flag `-1`). Checks that involve two options (`--cq-mod` against `--tx-depth`, the CQ sizes of
//! `--qps` × depths, `--size` × `--iters`) are [`perf::check_options`]'s, also before the world
//! is built, also with status 2.
use std::ops::RangeInclusive;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use rnic::Mtu;

use crate::perf::{self, AtomicType, BwOp, WriteBwOptions};

/// rnic: tools for the rnic RoCEv2 NIC (simulated in Verilator).
#[derive(Parser, Debug)]
#[command(name = "rnic", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Bandwidth tests between two simulated hosts (perftest-style).
    Perf {
        /// The operation measured.
        #[command(subcommand)]
        op: PerfOp,
    },
    /// Read the identification registers (ID, VERSION, CAPS, CLOCK_MHZ) and counters of a
    /// NIC (by default a new simulated one).
    Info {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The device: sim, sim-port:SPEC, vfio-user:PATH or vfio:DDDD:BB:DD.F (docs/pcie.md).
        #[arg(long, env = "RNIC_DEVICE", default_value = "sim")]
        device: String,
    },
    /// The simulator.
    Sim {
        /// What to do.
        #[command(subcommand)]
        cmd: SimCmd,
    },
}

/// `rnic sim <cmd>`.
#[derive(Subcommand, Debug)]
pub enum SimCmd {
    /// Serve each NIC of one simulated world as a vfio-user PCI device on DIR/nicK.sock (for
    /// `--device vfio-user:DIR/nicK.sock` and QEMU's vfio-user-pci). Runs until interrupted,
    /// then prints the simulator's speed.
    Serve(ServeArgs),
}

/// How the served NICs are cabled.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkArg {
    /// NICs 2k and 2k+1 back to back.
    BackToBack,
    /// Every NIC's TX to its own RX.
    Loopback,
    /// No wires.
    Unconnected,
    /// No wires between the NICs; NIC k's port is bridged to the outside by the k-th
    /// `--bridge` (e.g. a QEMU guest's `-netdev socket`; docs/interop.md).
    Bridge,
}

/// `rnic sim serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Simulated NICs, 1 ..= 16.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub nics: u32,
    /// Directory of the sockets nic0.sock, nic1.sock, ... (created if missing).
    #[arg(long)]
    pub socket_dir: PathBuf,
    /// How the NICs are cabled.
    #[arg(long, value_enum, default_value = "back-to-back")]
    pub link: LinkArg,
    /// Probability, 0 ..= 1, that the wire loses a frame.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub loss: f64,
    /// Probability, 0 ..= 1, that the wire delivers a frame twice.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub dup: f64,
    /// Probability, 0 ..= 1, that the wire flips one bit of a frame.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub corrupt: f64,
    /// Probability, 0 ..= 1, that the wire delays a frame so later ones overtake it.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub reorder: f64,
    /// Seed of the wire's fault injection.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Cycles the world steps between two looks at the NICs' requests while clients are
    /// attached, 1 ..= 100000 (larger: faster simulation, slower MMIO).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch_cycles: u64,
    /// Print the simulator's speed every S seconds (0: only at exit).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub report_secs: u64,
    /// With --link bridge: attach the next NIC's Ethernet port (nic0 first) to SPEC, one
    /// Ethernet frame per message: udp:LOCALPORT:PEERPORT (127.0.0.1; QEMU -netdev
    /// socket,udp=127.0.0.1:LOCALPORT,localaddr=127.0.0.1:PEERPORT), udp:LOCALADDR,PEERADDR,
    /// tcp:HOST:PORT (QEMU's socket framing, to a listener), tcp-listen:[HOST:]PORT (waits up to
    /// 60 s for the peer) or tap:NAME. --loss/--dup/--corrupt/--reorder apply to both
    /// directions; the world never runs ahead of wall-clock time.
    #[arg(long = "bridge", value_name = "SPEC", value_parser = parse_bridge)]
    pub bridges: Vec<rnic_sim::BridgeSpec>,
    /// Capture every wire, both directions, into this pcap file (written when the server
    /// stops; timestamps are simulated time).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
}

impl ServeArgs {
    /// Checks that involve two options: `--link bridge` needs 1 ..= `--nics` `--bridge`s, and
    /// `--bridge` needs `--link bridge`.
    ///
    /// # Errors
    /// A message naming the options (the tool exits 2 with it).
    pub fn check(&self) -> Result<(), String> {
        match (self.link, self.bridges.len()) {
            (LinkArg::Bridge, 0) => Err("--link bridge needs at least one --bridge SPEC".into()),
            (LinkArg::Bridge, n) if n > self.nics as usize => {
                Err(format!("{n} --bridge options for --nics {}: at most one bridge per NIC", self.nics))
            }
            (LinkArg::Bridge, _) | (_, 0) => Ok(()),
            (link, _) => Err(format!("--bridge needs --link bridge (not {link:?})")),
        }
    }
}

fn parse_bridge(s: &str) -> Result<rnic_sim::BridgeSpec, String> {
    s.parse()
}

/// `rnic perf <op>`.
#[derive(Subcommand, Debug)]
pub enum PerfOp {
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
    /// RDMA WRITE latency, like ib_write_lat: ping-pong of WRITEs, each host polling the last
    /// byte of its buffer; half the round trip.
    WriteLat(LatArgs),
    /// RDMA READ latency, like ib_read_lat: one READ at a time, doorbell to completion.
    ReadLat(LatArgs),
    /// SEND latency, like ib_send_lat: ping-pong of SENDs, each host polling its receive
    /// completions; half the round trip.
    SendLat(LatArgs),
    /// Atomic latency, like ib_atomic_lat: one 8-byte fetch-and-add at a time, doorbell to
    /// completion (--size 8 only).
    AtomicLat(LatArgs),
    /// The per-stage NIC latency of a two-sided latency run: joins the sides' `--stamps` files
    /// with the wire capture of `rnic sim serve --pcap` (docs/performance.md).
    Stages(StagesArgs),
}

/// `rnic perf stages`.
#[derive(Args, Debug)]
pub struct StagesArgs {
    /// The wire capture of the run (`rnic sim serve --pcap FILE`, written when it stops).
    #[arg(long)]
    pub pcap: PathBuf,
    /// A side's stamps (`rnic perf *-lat --device … --stamps FILE`): the client's, and for
    /// write-lat and send-lat also the server's.
    #[arg(long, required = true)]
    pub stamps: Vec<PathBuf>,
    /// Measure only the messages this side posted (`client` or `server`; default both): the
    /// sides of a run may use different backends.
    #[arg(long, value_parser = ["client", "server"])]
    pub only: Option<String>,
    /// The wire latency of the served world (its link model's, 500 ns unless changed), ns.
    #[arg(long, default_value_t = rnic_sim::config::LinkConfig::default().latency_ns, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub latency_ns: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `-a` / `--size-max`: perftest's sweep of message sizes.
#[derive(Args, Debug, Clone, Copy)]
pub struct SweepArgs {
    /// Run every size 2, 4, 8 … 8 MiB (2^1 ..= 2^23, as perftest's -a), up to --size-max;
    /// --size is then ignored.
    #[arg(long, short = 'a')]
    pub all: bool,
    /// With --all: the largest size run, bytes (2 ..= 8388608; sizes above it are skipped).
    #[arg(long, value_name = "BYTES", default_value_t = perf::SWEEP_MAX_BYTES, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(2..=perf::SWEEP_MAX_BYTES))]
    pub size_max: u64,
}

impl SweepArgs {
    /// The sizes to run: `size` alone, or with --all every power of two from 2 up to
    /// `--size-max`.
    pub fn sizes(&self, size: u64) -> Vec<u64> {
        if self.all {
            perf::sweep_sizes(self.size_max)
        } else {
            vec![size]
        }
    }
}

/// How a run prints its result.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// perftest's table.
    Text,
    /// One JSON object per line (one per size with --all).
    Json,
    /// A header and one comma-separated row per size.
    Csv,
}

/// `rnic perf write-lat|read-lat|send-lat`.
#[derive(Args, Debug)]
pub struct LatArgs {
    /// Message size in bytes, 1 ..= 2^28 (default 2, perftest's; atomic-lat: 8 only).
    #[arg(long, short = 's', allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=perf::lat::MAX_LAT_BYTES))]
    pub size: Option<u64>,
    /// The sweep of sizes.
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Samples (exchanges or READs), at least 1.
    #[arg(long, short = 'n', default_value_t = 1000, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    #[arg(long, short = 'm', default_value = "4096", allow_negative_numbers = true, value_parser = parse_mtu)]
    pub mtu: Mtu,
    /// write-lat and send-lat: messages of at most B bytes go inline (IBV_SEND_INLINE),
    /// 0 ..= 448; read-lat takes 0 only.
    #[arg(long, short = 'I', alias = "inline_size", value_name = "B", default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(perf::MAX_INLINE_SIZE)))]
    pub inline_size: u32,
    /// write-lat and send-lat: signal one WR in N (perftest's --cq-mod, default 100),
    /// 1 ..= 32768; read-lat signals every READ.
    #[arg(long, short = 'Q', default_value_t = perf::lat::DEFAULT_LAT_CQ_MOD, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(rnic::qp::MAX_SEND_WR)))]
    pub cq_mod: u32,
    /// Local ACK timeout exponent of the QPs, 0 ..= 31 (4.096 µs × 2^N).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=31))]
    pub qp_timeout: u8,
    /// A hard cycle budget for each size's run.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_cycles: Option<u64>,
    /// Do not capture the wire for the per-stage breakdown.
    #[arg(long)]
    pub no_stages: bool,
    /// Keep the wire capture in this pcap file (with --all: the last size's).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Draw the run into this SVG file: with -a, t_typical (median) and the 99th percentile in
    /// µs against the message size (log2 axis); without, the latency distribution (histogram
    /// and cumulative distribution, median, 99 % and 99.9 % marked). docs/performance.md.
    #[arg(long, value_name = "FILE.svg", value_parser = perf::plot::check_plot_path)]
    pub plot: Option<PathBuf>,
    /// Print one JSON object (per size) instead of the table (same as --output json).
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    /// Run one side on this device (vfio-user:PATH, vfio:DDDD:BB:DD.F, or sim-port:SPEC: an
    /// in-process NIC on a SimBricks link, e.g. sim-port:simbricks-listen:/tmp/l.sock on the
    /// server and sim-port:simbricks:/tmp/l.sock on the client), as perftest runs one side per
    /// host: without HOST the server, with HOST the client. `sim` (or nothing) keeps the
    /// in-process run of both hosts.
    #[arg(long, env = "RNIC_DEVICE")]
    pub device: Option<String>,
    /// With --device: the server to connect to (this side is then the client).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// With --device: TCP port of perftest's exchange.
    #[arg(long, short = 'p', default_value_t = perf::exchange::DEFAULT_PORT, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// With --device: write this side's doorbell and message stamps (simulated cycles) to
    /// FILE, for `rnic perf stages` (the per-stage breakdown across processes).
    #[arg(long, value_name = "FILE", requires = "device")]
    pub stamps: Option<PathBuf>,
}

impl LatArgs {
    /// The output format (`--json` is `--output json`).
    pub fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.output.unwrap_or(OutputFormat::Text)
        }
    }

    /// `--size`, or its default for `op` (8 for atomic-lat, 2 otherwise).
    pub fn size_for(&self, op: perf::lat::LatOp) -> u64 {
        self.size.unwrap_or(if op == perf::lat::LatOp::Atomic { perf::ATOMIC_BYTES } else { 2 })
    }

    /// The run's options for `op` at `size`.
    pub fn options(&self, op: perf::lat::LatOp, size: u64) -> perf::lat::LatOptions {
        perf::lat::LatOptions {
            op,
            size,
            iters: self.iters,
            mtu: self.mtu,
            inline_size: self.inline_size,
            cq_mod: self.cq_mod,
            qp_timeout: self.qp_timeout,
            budget_cycles: self.timeout_cycles,
            pcap: self.pcap.clone(),
            stages: !self.no_stages,
            sim: rnic_sim::SimConfig::default(),
        }
    }
}

/// `--waveform-nic`: the NIC whose signals `--waveform` dumps.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveformNic {
    /// The requester (NIC 0).
    Client,
    /// The responder (NIC 1).
    Server,
}

impl WaveformNic {
    /// The simulated NIC's index in the world: 0 (client) or 1 (server).
    pub fn index(self) -> usize {
        match self {
            WaveformNic::Client => 0,
            WaveformNic::Server => 1,
        }
    }
}

/// `--atomic-type` (perftest's `-A, --atomic_type`).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum AtomicTypeArg {
    /// IBV_WR_ATOMIC_FETCH_AND_ADD.
    #[value(name = "fetch_and_add", alias = "FETCH_AND_ADD")]
    FetchAndAdd,
    /// IBV_WR_ATOMIC_CMP_AND_SWP, chained (operation i swaps init + i for init + i + 1).
    #[value(name = "cmp_and_swap", alias = "CMP_AND_SWAP")]
    CmpAndSwap,
}

/// `rnic perf atomic`.
#[derive(Args, Debug)]
pub struct AtomicArgs {
    /// The options every operation takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// The atomic operation.
    #[arg(long, short = 'A', value_enum, default_value = "fetch_and_add")]
    pub atomic_type: AtomicTypeArg,
    /// Atomics the client keeps outstanding (its max_rd_atomic and the server's
    /// max_dest_rd_atomic; perftest's --outs), 1 ..= 16.
    #[arg(long, short = 'o', default_value_t = 16, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(1..=i64::from(rnic::qp::MAX_RD_ATOMIC)))]
    pub outs: u8,
}

/// `rnic perf read`.
#[derive(Args, Debug)]
pub struct ReadArgs {
    /// The options of write.
    #[command(flatten)]
    pub common: WriteArgs,
    /// READs the client keeps outstanding (its max_rd_atomic and the server's
    /// max_dest_rd_atomic; perftest's --outs), 1 ..= 16.
    #[arg(long, short = 'o', default_value_t = 16, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(1..=i64::from(rnic::qp::MAX_RD_ATOMIC)))]
    pub outs: u8,
}

/// `rnic perf send`.
#[derive(Args, Debug)]
pub struct SendArgs {
    /// The options of write.
    #[command(flatten)]
    pub common: WriteArgs,
    /// Receive work requests the server keeps posted per QP (its RQ size; perftest's
    /// --rx-depth), 1 ..= 32768.
    #[arg(long, short = 'r', default_value_t = 512, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(perf::MAX_RX_DEPTH)))]
    pub rx_depth: u32,
    /// The server's RNR timer code, 0 ..= 31 (its min_rnr_timer, IBTA Vol 1 Table 45: 1 = 0.01
    /// ms … 12 = 0.64 ms … 31 = 491.52 ms, 0 = 655.36 ms): how long the client waits before
    /// resending a SEND that found no receive.
    #[arg(long, default_value_t = 12, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=31))]
    pub min_rnr_timer: u8,
}

/// `--mtu`: 256, 512, 1024, 2048 or 4096.
fn parse_mtu(s: &str) -> Result<Mtu, String> {
    s.parse::<u32>()
        .ok()
        .and_then(Mtu::from_bytes)
        .ok_or_else(|| format!("path MTU must be 256, 512, 1024, 2048 or 4096, not {s}"))
}

/// A probability: a number in 0 ..= 1.
fn parse_probability(s: &str) -> Result<f64, String> {
    parse_f64_in(s, 0.0..=1.0, "a probability")
}

/// A finite number in `range`.
fn parse_f64_in(s: &str, range: RangeInclusive<f64>, what: &str) -> Result<f64, String> {
    let v: f64 =
        s.parse().map_err(|_| format!("{what} must be a number in {}..={}, not {s}", range.start(), range.end()))?;
    if range.contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what} must be in {}..={}, not {s}", range.start(), range.end()))
    }
}

/// `rnic perf write` (and the size option of send and read).
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// Message size in bytes, 1 ..= 2^31.
    #[arg(long, short = 's', default_value_t = 65536, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=perf::MAX_MESSAGE_BYTES))]
    pub size: u64,
    /// The sweep of sizes.
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// The options every operation takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The options every `rnic perf` operation takes.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Number of messages, over all QPs; at least 1.
    #[arg(long, short = 'n', default_value_t = 100, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// Connected RC QP pairs (perftest's -q), 1 ..= 62: the messages are spread over them
    /// round-robin, each QP with its own buffers and its own --tx-depth (and --outs /
    /// --rx-depth) window, all posting concurrently; at most --iters.
    #[arg(long, short = 'q', default_value_t = 1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(perf::MAX_QPS)))]
    pub qps: u32,
    /// write, send and read: post each message as a list of N SGEs, 1 ..= 16: the message is
    /// split in order into N pieces of unequal lengths (the last takes the remainder) with a
    /// few odd bytes between them, in the source buffer for write and send (the check proves
    /// the NIC gathered them in order) and in the destination buffer for read (the check
    /// proves the NIC scattered the response into them in order and left the bytes between
    /// them alone). A message shorter than N bytes is N − size zero-length pieces among
    /// one-byte ones. atomic takes 1 only.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(perf::MAX_SGES)))]
    pub sges: u32,
    /// write and send (perftest's -I): the client QPs take up to B bytes of inline data
    /// (max_inline_data), 0 ..= 448, and messages of at most B bytes are posted with
    /// IBV_SEND_INLINE (copied into the WQE at post time; the NIC reads them from the SQ).
    /// read and atomic take 0 only.
    #[arg(long, short = 'I', alias = "inline_size", value_name = "B", default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(perf::MAX_INLINE_SIZE)))]
    pub inline_size: u32,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    #[arg(long, short = 'm', default_value = "4096", allow_negative_numbers = true, value_parser = parse_mtu)]
    pub mtu: Mtu,
    /// Work requests kept outstanding per QP, 1 ..= 32768. The default, 64, is 4× the NIC's
    /// window of 16 unacknowledged WQEs per QP, so the SQ still holds WQEs for the NIC while
    /// the host polls and refills (perftest uses 128).
    #[arg(long, short = 't', default_value_t = 64, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(rnic::qp::MAX_SEND_WR)))]
    pub tx_depth: u32,
    /// Signal one work request in N (perftest's --cq-mod), 1 ..= --tx-depth; default 16, or
    /// --tx-depth if that is smaller.
    #[arg(long, short = 'Q', allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(rnic::qp::MAX_SEND_WR)))]
    pub cq_mod: Option<u32>,
    /// A hard cycle budget from the first post to the last completion: the run fails when it
    /// is exceeded. Without it the run fails only when no completion arrives for a window
    /// derived from the options (see docs/driver.md), so slow but progressing runs (RNR waits,
    /// retransmissions) finish.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_cycles: Option<u64>,
    /// Post N work requests per post_send call, one doorbell for the N (perftest's -l,
    /// --post_list), 1 ..= --tx-depth: a QP posts only when it has room for N (or for all its
    /// remaining messages, if fewer). Without it, every pass of the host loop posts as many as
    /// the QP has room for, in one call.
    #[arg(long, short = 'l', alias = "post_list", value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(rnic::qp::MAX_SEND_WR)))]
    pub post_list: Option<u32>,
    /// Print one JSON object (per size) instead of the table (same as --output json).
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum)]
    pub output: Option<OutputFormat>,
    /// Run one side on this device (vfio-user:PATH or vfio:DDDD:BB:DD.F; docs/pcie.md), as
    /// perftest runs one side per host: without HOST the server, with HOST the client. `sim`
    /// (or nothing) keeps the in-process run of both hosts.
    #[arg(long, env = "RNIC_DEVICE")]
    pub device: Option<String>,
    /// With --device: the server to connect to (this side is then the client).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// With --device: TCP port of perftest's exchange.
    #[arg(long, short = 'p', default_value_t = perf::exchange::DEFAULT_PORT, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// With -a (write, send, read): draw Gb/s and Mpps against the message size (log2 axis),
    /// one mark per size, into this SVG file once the sweep is over (docs/performance.md).
    #[arg(long, value_name = "FILE.svg", value_parser = perf::plot::check_plot_path)]
    pub plot: Option<PathBuf>,
    /// Capture the wire (both directions) into this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Dump an FST waveform of one NIC into this file (needs the `waveform` feature:
    /// cargo build --release -p rnic-tools --features waveform).
    #[arg(long)]
    pub waveform: Option<PathBuf>,
    /// Which NIC `--waveform` dumps: the requester (`client`, NIC 0) or the responder
    /// (`server`, NIC 1).
    #[arg(long, value_enum, default_value_t = WaveformNic::Client, requires = "waveform")]
    pub waveform_nic: WaveformNic,
    /// Count the cycles each NIC's TX scheduler and RX engine spend in each state over the
    /// measured run and print the busiest states, with their cycles per message (in-process
    /// runs; `state_profile` in --json).
    #[arg(long)]
    pub state_profile: bool,
    /// Probability, 0 ..= 1, that the wire loses a frame (each direction).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub loss: f64,
    /// Probability, 0 ..= 1, that the wire delivers a frame twice.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub dup: f64,
    /// Probability, 0 ..= 1, that the wire flips one bit of a frame (the receiving MAC flags
    /// its FCS).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub corrupt: f64,
    /// Probability, 0 ..= 1, that the wire delays a frame by up to --reorder-delay-ns, so later
    /// frames overtake it.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_probability)]
    pub reorder: f64,
    /// Longest extra delay of a reordered frame, in ns, 1 ..= 10^9.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub reorder_delay_ns: u64,
    /// Seed of the wire's fault injection (runs are deterministic for a given seed).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Local ACK timeout exponent of the QPs, 0 ..= 31 (4.096 µs × 2^N; IBTA Vol 1 9.7.6.1.3).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=31))]
    pub qp_timeout: u8,
}

impl CommonArgs {
    /// The output format (`--json` is `--output json`).
    pub fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.output.unwrap_or(OutputFormat::Text)
        }
    }
}

/// `--cq-mod` when not given (and `--tx-depth` is at least as large).
pub const DEFAULT_CQ_MOD: u32 = 16;

/// The operation-specific settings of a `rnic perf` run.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// The operation.
    pub op: BwOp,
    /// Message size, bytes.
    pub size: u64,
    /// SEND: the server's receive depth per QP.
    pub rx_depth: u32,
    /// READ and atomic: outstanding operations.
    pub outs: u8,
    /// SEND: the server's RNR timer code.
    pub min_rnr_timer: u8,
    /// Atomic: the operation.
    pub atomic_type: AtomicType,
    /// The sizes to run (`--size`, or the sweep of `-a`).
    pub sizes: Option<SweepArgs>,
}

impl Op {
    /// `op` with messages of `size` bytes and the defaults of the other settings.
    pub fn plain(op: BwOp, size: u64) -> Self {
        Op { op, size, rx_depth: 512, outs: 16, min_rnr_timer: 12, atomic_type: AtomicType::FetchAndAdd, sizes: None }
    }
}

impl PerfOp {
    /// The operation's settings and the common options.
    /// None for a latency operation (see [`PerfOp::lat`]).
    pub fn split(&self) -> Option<(Op, &CommonArgs)> {
        Some(match self {
            PerfOp::Write(a) => (Op { sizes: Some(a.sweep), ..Op::plain(BwOp::Write, a.size) }, &a.common),
            PerfOp::Send(a) => (
                Op {
                    rx_depth: a.rx_depth,
                    min_rnr_timer: a.min_rnr_timer,
                    sizes: Some(a.common.sweep),
                    ..Op::plain(BwOp::Send, a.common.size)
                },
                &a.common.common,
            ),
            PerfOp::Read(a) => (
                Op { outs: a.outs, sizes: Some(a.common.sweep), ..Op::plain(BwOp::Read, a.common.size) },
                &a.common.common,
            ),
            PerfOp::Atomic(a) => {
                let atomic_type = match a.atomic_type {
                    AtomicTypeArg::FetchAndAdd => AtomicType::FetchAndAdd,
                    AtomicTypeArg::CmpAndSwap => AtomicType::CmpAndSwap,
                };
                (Op { outs: a.outs, atomic_type, ..Op::plain(BwOp::Atomic, perf::ATOMIC_BYTES) }, &a.common)
            }
            PerfOp::WriteLat(_)
            | PerfOp::ReadLat(_)
            | PerfOp::SendLat(_)
            | PerfOp::AtomicLat(_)
            | PerfOp::Stages(_) => return None,
        })
    }

    /// A latency operation and its arguments; None for a bandwidth operation.
    pub fn lat(&self) -> Option<(perf::lat::LatOp, &LatArgs)> {
        match self {
            PerfOp::WriteLat(a) => Some((perf::lat::LatOp::Write, a)),
            PerfOp::ReadLat(a) => Some((perf::lat::LatOp::Read, a)),
            PerfOp::SendLat(a) => Some((perf::lat::LatOp::Send, a)),
            PerfOp::AtomicLat(a) => Some((perf::lat::LatOp::Atomic, a)),
            _ => None,
        }
    }
}

/// The run's options from the operation's settings and the common options.
pub fn bw_options(o: Op, a: &CommonArgs) -> WriteBwOptions {
    WriteBwOptions {
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
        cq_mod: a.cq_mod.unwrap_or(DEFAULT_CQ_MOD.min(a.tx_depth)),
        post_list: a.post_list,
        budget_cycles: a.timeout_cycles,
        pcap: a.pcap.clone(),
        waveform: a.waveform.clone(),
        waveform_nic: a.waveform_nic.index(),
        state_profile: a.state_profile,
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
    }
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::CommandFactory;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rnic").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every numeric option of every `rnic perf` operation takes negative numbers as values
    /// (so a range check, not "unexpected argument '-1'", reports them) and has a range.
    #[test]
    fn every_numeric_option_reads_negative_numbers_and_checks_its_range() {
        let mut cmd = Cli::command();
        cmd.build();
        let perf = cmd.find_subcommand("perf").unwrap();
        let mut seen = 0;
        for op in perf.get_subcommands() {
            for arg in op.get_arguments() {
                let long = arg.get_long().unwrap_or_default();
                let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
                if !takes_value
                    || arg.is_positional()
                    || ["pcap", "waveform", "waveform-nic", "atomic-type", "device", "output", "plot", "stamps", "only"]
                        .contains(&long)
                {
                    continue;
                }
                seen += 1;
                assert!(arg.is_allow_negative_numbers_set(), "perf {} --{long}", op.get_name());
                let e = parse(&["perf", op.get_name(), &format!("--{long}"), "-1"]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ValueValidation, "perf {} --{long} -1: {e}", op.get_name());
                assert!(e.to_string().contains(&format!("--{long}")), "{e}");
            }
        }
        assert!(seen >= 4 * 15 + 4 * 7, "{seen} numeric options");
    }

    #[test]
    fn out_of_range_values_name_their_flag() {
        for (args, flag) in [
            (&["perf", "write", "--loss", "1.5"][..], "--loss"),
            (&["perf", "write", "--loss", "-1"], "--loss"),
            (&["perf", "write", "--dup", "nan"], "--dup"),
            (&["perf", "send", "--corrupt", "2"], "--corrupt"),
            (&["perf", "read", "--reorder", "1.01"], "--reorder"),
            (&["perf", "write", "--qps", "63"], "--qps"),
            (&["perf", "write", "--qps", "0"], "--qps"),
            (&["perf", "write", "--mtu", "1500"], "--mtu"),
            (&["perf", "write", "--sges", "17"], "--sges"),
            (&["perf", "send", "--inline-size", "449"], "--inline-size"),
            (&["perf", "read", "--outs", "17"], "--outs"),
            (&["perf", "atomic", "--outs", "0"], "--outs"),
            (&["perf", "write", "--size", "0"], "--size"),
            (&["perf", "write", "--size", "2147483649"], "--size"),
            (&["perf", "write", "--iters", "0"], "--iters"),
            (&["perf", "write", "--tx-depth", "0"], "--tx-depth"),
            (&["perf", "write", "--cq-mod", "0"], "--cq-mod"),
            (&["perf", "send", "--rx-depth", "32769"], "--rx-depth"),
            (&["perf", "send", "--min-rnr-timer", "32"], "--min-rnr-timer"),
            (&["perf", "write", "--qp-timeout", "32"], "--qp-timeout"),
            (&["perf", "write", "--timeout-cycles", "0"], "--timeout-cycles"),
            (&["perf", "write", "--reorder-delay-ns", "0"], "--reorder-delay-ns"),
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{args:?}: {e}");
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }

    fn serve_args(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let all: Vec<&str> = ["sim", "serve", "--socket-dir", "/tmp/d"].iter().chain(args).copied().collect();
        match parse(&all)?.command {
            Command::Sim { cmd: SimCmd::Serve(a) } => Ok(a),
            c => panic!("not serve: {c:?}"),
        }
    }

    #[test]
    fn serve_bridges_parse_in_nic_order_with_a_capture() {
        let a = serve_args(&[
            "--link",
            "bridge",
            "--bridge",
            "udp:40001:40002",
            "--bridge",
            "tcp-listen:9000",
            "--loss",
            "0.01",
            "--pcap",
            "/tmp/w.pcap",
        ])
        .unwrap();
        a.check().unwrap();
        assert_eq!(a.link, LinkArg::Bridge);
        let s: Vec<String> = a.bridges.iter().map(ToString::to_string).collect();
        assert_eq!(s, ["udp:127.0.0.1:40001,127.0.0.1:40002", "tcp-listen:127.0.0.1:9000"]);
        assert_eq!((a.loss, a.pcap.as_deref()), (0.01, Some(std::path::Path::new("/tmp/w.pcap"))));
        // Without bridges, serving is as before.
        let a = serve_args(&[]).unwrap();
        a.check().unwrap();
        assert!(a.bridges.is_empty() && a.pcap.is_none());
    }

    #[test]
    fn bad_bridge_values_name_the_flag_and_exit_2() {
        for bad in ["udp:x:40002", "udp:40001", "pipe:/tmp/p", "tap:", "udp:1:0"] {
            let e = serve_args(&["--link", "bridge", "--bridge", bad]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{bad}: {e}");
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--bridge"), "{bad}: {e}");
        }
        let e = serve_args(&["--link", "bridge", "--bridge", "udp:1:2", "--loss", "1.5"]).unwrap_err();
        assert!(e.to_string().contains("--loss"), "{e}");
    }

    #[test]
    fn bridges_and_link_must_agree() {
        for (args, want) in [
            (&["--link", "bridge"][..], "--link bridge needs at least one --bridge"),
            (&["--bridge", "udp:1:2"], "--bridge needs --link bridge (not BackToBack)"),
            (&["--link", "loopback", "--bridge", "udp:1:2"], "--bridge needs --link bridge (not Loopback)"),
            (
                &["--nics", "1", "--link", "bridge", "--bridge", "udp:1:2", "--bridge", "udp:3:4"],
                "2 --bridge options for --nics 1",
            ),
        ] {
            let e = serve_args(args).unwrap().check().unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn cq_mod_defaults_to_16_or_the_tx_depth() {
        for (args, want) in [
            (&["perf", "write"][..], 16),
            (&["perf", "write", "--tx-depth", "5"], 5),
            (&["perf", "send", "--tx-depth", "4", "--cq-mod", "2"], 2),
            (&["perf", "read", "--tx-depth", "100"], 16),
        ] {
            let Command::Perf { op } = parse(args).unwrap().command else { panic!("not perf") };
            let (o, a) = op.split().unwrap();
            assert_eq!(bw_options(o, a).cq_mod, want, "{args:?}");
        }
        // Given explicitly, a --cq-mod above --tx-depth is refused (by check_options).
        let Command::Perf { op } = parse(&["perf", "write", "--tx-depth", "5", "--cq-mod", "6"]).unwrap().command
        else {
            panic!()
        };
        let (o, a) = op.split().unwrap();
        assert!(perf::check_options(&bw_options(o, a)).unwrap_err().to_string().contains("--cq-mod 6"));
    }

    #[test]
    fn values_at_the_ends_of_their_ranges_are_accepted() {
        let cli = parse(&[
            "perf",
            "write",
            "--loss",
            "1",
            "--dup",
            "0",
            "--corrupt",
            "0.5",
            "--reorder",
            "1e-3",
            "--qps",
            "16",
            "--iters",
            "16",
            "--sges",
            "16",
            "--inline-size",
            "448",
            "--mtu",
            "256",
            "--size",
            "2147483648",
            "--tx-depth",
            "32768",
            "--qp-timeout",
            "31",
        ])
        .unwrap();
        let Command::Perf { op } = cli.command else { panic!("not perf") };
        let (o, a) = op.split().unwrap();
        let opts = bw_options(o, a);
        assert_eq!((opts.sim.faults.drop_probability, opts.sim.faults.corrupt_probability), (1.0, 0.5));
        assert_eq!((opts.qps, opts.sges, opts.inline_size, opts.size, opts.tx_depth), (16, 16, 448, 1 << 31, 32768));
        assert_eq!(opts.mtu, Mtu::Mtu256);
        let cli = parse(&["perf", "send", "--rx-depth", "32768", "--min-rnr-timer", "0"]).unwrap();
        let Command::Perf { op } = cli.command else { panic!("not perf") };
        assert_eq!((op.split().unwrap().0.rx_depth, op.split().unwrap().0.min_rnr_timer), (32768, 0));
    }
}
