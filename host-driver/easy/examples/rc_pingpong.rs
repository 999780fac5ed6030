//! `rc_pingpong`: rdma-core's `ibv_rc_pingpong` on rnic, written against the rnic verbs. Same
//! options (`-p -s -m -r -n -e -g -c`, `--device` for `-d`), same TCP exchange (the client
//! sends `LLLL:QQQQQQ:PPPPPP:<32 hex digits of the GID>` and a NUL, the server connects its QP
//! and answers with its own, the client ends with `done`), same loop (the client posts the
//! first SEND; each side keeps `rx_depth` receives posted, topping them up when one is left,
//! and sends again when both its last SEND and a RECV completed), and the same output lines:
//!
//! ```text
//!   local address:  LID 0x0000, QPN 0x000002, PSN 0x5d2a1c, GID ::ffff:192.0.2.1
//!   remote address: LID 0x0000, QPN 0x000002, PSN 0x1b33e0, GID ::ffff:192.0.2.2
//! 819200 bytes in 0.00 seconds = 8347.99 Mbit/sec
//! 100 iters in 0.00 seconds = 7.85 usec/iter
//! ```
//!
//! Differences: times are the NIC's simulated time (the device's cycle counter at its clock)
//! when the device is simulated, and a following line gives the wall time; `-n` defaults to 100
//! (the original's 1000 takes tens of seconds in the simulator); the peer's MAC is derived from
//! its GID by the simulator's rule (rnic resolves no addresses yet); `--chk` fills the client's
//! buffer with a pattern that every byte is checked against, on both sides, after the run
//! ("invalid data in page N"; exit status 1).
//!
//! ```text
//! rc_pingpong --device vfio-user:D/nic1.sock             # server
//! rc_pingpong --device vfio-user:D/nic0.sock 127.0.0.1   # client
//! ```
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use rnic::{
    AccessFlags, AddressVector, Context, Endpoint, Mtu, PortAddr, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr,
    SendFlags, SendWr, WorkCompletion,
};
use rnic_easy::{parse_device, sim_mac_of, OwnedMr};

/// ibv_rc_pingpong on rnic: ping-pong of SENDs over an RC connection.
#[derive(Parser, Debug)]
#[command(name = "rc_pingpong")]
struct Args {
    /// The NIC (`sim`, `vfio-user:PATH` of `rnic sim serve`, `vfio:BDF`); ibv_rc_pingpong's -d.
    #[arg(short = 'd', long, env = "RNIC_DEVICE", value_parser = parse_device)]
    device: String,
    /// Listen on / connect to TCP port.
    #[arg(short = 'p', long, default_value_t = 18515)]
    port: u16,
    /// Use port N of the device (only 1 exists).
    #[arg(short = 'i', long = "ib-port", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=1))]
    ib_port: u8,
    /// Size of message to exchange, bytes.
    #[arg(short = 's', long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    size: u32,
    /// Path MTU, bytes (256, 512, 1024, 2048, 4096).
    #[arg(short = 'm', long, default_value_t = 1024)]
    mtu: u32,
    /// Number of receives to post at a time.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500, value_parser = clap::value_parser!(u32).range(2..=8192))]
    rx_depth: u32,
    /// Number of exchanges.
    #[arg(short = 'n', long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    iters: u32,
    /// Sleep on CQ events (a completion channel) instead of polling.
    #[arg(short = 'e', long)]
    events: bool,
    /// Local port GID index (1: the IPv4-mapped RoCEv2 GID, as on rxe).
    #[arg(short = 'g', long = "gid-idx", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1))]
    gid_idx: u32,
    /// Validate the received buffer.
    #[arg(short = 'c', long)]
    chk: bool,
    /// Connect to this server (without it: be the server).
    servername: Option<String>,
}

const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;
/// `sizeof "0000:000000:000000:00000000000000000000000000000000"`.
const MSG_LEN: usize = 52;
const PAGE: usize = 4096;

/// One side's destination, as pingpong.c's `struct pingpong_dest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dest {
    lid: u16,
    qpn: u32,
    psn: u32,
    gid: [u8; 16],
}

impl Dest {
    fn wire(&self) -> [u8; MSG_LEN] {
        let mut s = format!("{:04x}:{:06x}:{:06x}:", self.lid, self.qpn, self.psn);
        for b in self.gid {
            s.push_str(&format!("{b:02x}"));
        }
        let mut m = [0u8; MSG_LEN];
        m[..s.len()].copy_from_slice(s.as_bytes());
        m
    }

    fn parse(m: &[u8]) -> Result<Dest, String> {
        let text = std::str::from_utf8(m.split(|&b| b == 0).next().unwrap_or_default())
            .map_err(|_| "Couldn't parse remote address: not ASCII".to_owned())?;
        let f: Vec<&str> = text.split(':').collect();
        if f.len() != 4 || f[3].len() != 32 {
            return Err(format!("Couldn't parse remote address {text:?}"));
        }
        let h = |s: &str| u32::from_str_radix(s, 16).map_err(|_| format!("Couldn't parse remote address {text:?}"));
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = h(&f[3][2 * i..2 * i + 2])? as u8;
        }
        Ok(Dest { lid: h(f[0])? as u16, qpn: h(f[1])?, psn: h(f[2])?, gid })
    }

    fn print(&self, what: &str) {
        println!(
            "  {what} address: {}LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
            if what == "local" { " " } else { "" },
            self.lid,
            self.qpn,
            self.psn,
            Ipv6Addr::from(self.gid)
        );
    }
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

/// pp_connect_ctx: INIT→RTR (path MTU, dest QPN, rq_psn, AV from the GID) and RTR→RTS.
fn connect(qp: &mut QueuePair<'static>, my_psn: u32, mtu: Mtu, rem: &Dest) -> Result<(), String> {
    let ip6 = Ipv6Addr::from(rem.gid);
    let ip: Ipv4Addr = ip6.to_ipv4_mapped().ok_or_else(|| format!("the remote GID {ip6} is not IPv4-mapped"))?;
    let attr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: mtu,
        dest_qp_num: rem.qpn,
        rq_psn: rem.psn,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah_attr: AddressVector { dest_mac: sim_mac_of(ip), dest_ip: ip },
        ..QpAttr::default()
    };
    use QpAttrMask as M;
    qp.modify(
        &attr,
        M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
    )
    .map_err(|x| format!("Failed to modify QP to RTR: {x}"))?;
    let attr = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        sq_psn: my_psn,
        max_rd_atomic: 1,
        ..attr
    };
    qp.modify(&attr, M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC)
        .map_err(|x| format!("Failed to modify QP to RTS: {x}"))
}

fn pattern_byte(i: usize) -> u8 {
    ((i / PAGE) as u8).wrapping_add(i as u8)
}

fn run(a: &Args) -> Result<bool, String> {
    let mtu = Mtu::from_bytes(a.mtu).ok_or_else(|| format!("invalid MTU {}", a.mtu))?;
    let size = a.size as usize;
    let server = a.servername.is_none();
    let port = PortAddr::for_sim_nic(if server { 1 } else { 0 });
    let ctx: Context = rnic_easy::open(&a.device, port).map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let buf = OwnedMr::new(&pd, size, AccessFlags::LOCAL_WRITE).map_err(|x| format!("Couldn't register MR: {x}"))?;
    if a.chk && !server {
        buf.write_at(0, &(0..size).map(pattern_byte).collect::<Vec<_>>()).map_err(e)?;
    }
    let channel = if a.events { Some(ctx.create_comp_channel().map_err(e)?) } else { None };
    // rx_depth + 1 entries, as pingpong.c asks: the receives posted and the one send.
    let cq_size = a.rx_depth as usize + 1;
    let cq = match &channel {
        Some(ch) => ctx.create_cq_with_channel(cq_size, ch),
        None => ctx.create_cq(cq_size),
    }
    .map_err(|x| format!("Couldn't create CQ: {x}"))?;
    let mut qp: QueuePair<'static> = pd
        .create_qp(&cq)
        .set_max_send_wr(1)
        .set_max_recv_wr(a.rx_depth)
        .build()
        .map_err(|x| format!("Couldn't create QP: {x}"))?;
    // As pingpong.c: IBV_SEND_INLINE when the QP's max_inline_data (ibv_query_qp) holds a message.
    let inline = qp.query_qp().cap.max_inline_data as usize >= size;
    // pp_init_ctx: RESET→INIT.
    let init = QpAttr {
        qp_state: QpState::Init,
        pkey_index: 0,
        port_num: a.ib_port,
        qp_access_flags: AccessFlags::empty(),
        ..QpAttr::default()
    };
    qp.modify(&init, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS)
        .map_err(|x| format!("Failed to modify QP to INIT: {x}"))?;
    let recv_wr = || -> Result<RecvWr<'static>, String> { Ok(RecvWr::new(RECV_WRID, buf.sge(0..size).map_err(e)?)) };
    let post_recv = |qp: &mut QueuePair<'static>, n: u32| -> Result<u32, String> {
        let wrs: Vec<_> = (0..n).map(|_| recv_wr()).collect::<Result<_, _>>()?;
        qp.post_recv(&wrs).map_err(|x| format!("Couldn't post receive ({x})"))?;
        Ok(n)
    };
    let mut routs = post_recv(&mut qp, a.rx_depth)?;
    if channel.is_some() {
        cq.req_notify(false).map_err(|x| format!("Couldn't request CQ notification: {x}"))?;
    }
    let gid =
        ctx.query_gid(a.ib_port, a.gid_idx).map_err(|x| format!("can't read sgid of index {}: {x}", a.gid_idx))?;
    let ep: Endpoint = qp.endpoint().map_err(e)?;
    let me = Dest { lid: 0, qpn: ep.qpn, psn: qp.local_psn(), gid: gid.0 };
    me.print("local");

    let rem = if let Some(host) = &a.servername {
        let mut s = rnic_easy::tcp_connect((host.as_str(), a.port), Duration::from_secs(60))
            .map_err(|x| format!("Couldn't connect to {host}:{}: {x}", a.port))?;
        s.write_all(&me.wire()).map_err(|x| format!("Couldn't send local address: {x}"))?;
        let mut m = [0u8; MSG_LEN];
        s.read_exact(&mut m).map_err(|x| format!("Couldn't read remote address: {x}"))?;
        s.write_all(b"done\0").map_err(e)?;
        let rem = Dest::parse(&m)?;
        connect(&mut qp, me.psn, mtu, &rem)?;
        rem
    } else {
        let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, a.port))
            .map_err(|x| format!("Couldn't listen to port {}: {x}", a.port))?;
        let (mut s, _) = l.accept().map_err(|x| format!("accept() failed: {x}"))?;
        let mut m = [0u8; MSG_LEN];
        s.read_exact(&mut m).map_err(|x| format!("Couldn't read remote address: {x}"))?;
        let rem = Dest::parse(&m)?;
        connect(&mut qp, me.psn, mtu, &rem)?;
        s.write_all(&me.wire()).map_err(|x| format!("Couldn't send local address: {x}"))?;
        let mut done = [0u8; 5];
        s.read_exact(&mut done).map_err(e)?;
        rem
    };
    rem.print("remote");

    let post_send = |qp: &mut QueuePair<'static>| -> Result<(), String> {
        let mut wr = SendWr::send(SEND_WRID, buf.sge(0..size).map_err(e)?).signaled(true);
        if inline {
            let mut data = vec![0u8; size];
            buf.read_at(0, &mut data).map_err(e)?;
            wr = wr.with_inline(&data).map_err(e)?.with_flags(SendFlags::SIGNALED | SendFlags::INLINE);
        }
        qp.post_send_one(wr).map_err(|x| format!("Couldn't post send: {x}"))
    };
    let dev = ctx.device().clone();
    let wall = Instant::now();
    let t0 = dev.now_cycles();
    let mut pending = RECV_WRID;
    if !server {
        post_send(&mut qp)?;
        pending |= SEND_WRID;
    }
    let (mut rcnt, mut scnt) = (0u32, 0u32);
    let mut num_cq_events = 0u64;
    let mut wcs = [WorkCompletion::default(); 2];
    let deadline = Duration::from_secs(300);
    while rcnt < a.iters || scnt < a.iters {
        if let Some(ch) = &channel {
            let ev = ch.get_cq_event_timeout(deadline).map_err(e)?.ok_or("Failed to get cq_event")?;
            ev.ack_cq_events(1);
            num_cq_events += 1;
            ev.req_notify(false).map_err(|x| format!("Couldn't request CQ notification: {x}"))?;
        }
        let ne = loop {
            let n = cq.poll(&mut wcs).map_err(|x| format!("poll CQ failed {x}"))?;
            if n > 0 || channel.is_some() {
                break n;
            }
            if wall.elapsed() > deadline {
                return Err(format!("no completion within {deadline:?}"));
            }
        };
        for wc in &wcs[..ne] {
            if !wc.status.is_success() {
                return Err(format!("Failed status {} ({}) for wr_id {}", wc.status, wc.status.as_raw(), wc.wr_id));
            }
            match wc.wr_id {
                SEND_WRID => scnt += 1,
                RECV_WRID => {
                    routs -= 1;
                    if routs <= 1 {
                        routs += post_recv(&mut qp, a.rx_depth - routs)?;
                    }
                    rcnt += 1;
                }
                other => return Err(format!("Completion for unknown wr_id {other}")),
            }
            pending &= !wc.wr_id;
            if scnt < a.iters && pending == 0 {
                post_send(&mut qp)?;
                pending = RECV_WRID | SEND_WRID;
            }
        }
    }
    let cycles = dev.now_cycles() - t0;
    let wall_s = wall.elapsed().as_secs_f64();
    let usec = if dev.clock_is_simulated() {
        cycles as f64 / f64::from(ctx.device_info().clock_mhz.max(1))
    } else {
        wall_s * 1e6
    };
    let bytes = size as u64 * u64::from(a.iters) * 2;
    println!("{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec", usec / 1e6, bytes as f64 * 8.0 / usec);
    println!("{} iters in {:.2} seconds = {:.2} usec/iter", a.iters, usec / 1e6, usec / f64::from(a.iters));
    if dev.clock_is_simulated() {
        println!(
            "(simulated time: {cycles} NIC cycles at {} MHz; wall time {wall_s:.2} s)",
            ctx.device_info().clock_mhz
        );
    }
    if channel.is_some() {
        // Each one an interrupt on the CQ's vector (ibv_get_cq_event(3)).
        println!("{num_cq_events} completion events");
    }
    let mut ok = true;
    if a.chk {
        let mut got = vec![0u8; size];
        buf.read_at(0, &mut got).map_err(e)?;
        for page in 0..size.div_ceil(PAGE) {
            let range = page * PAGE..((page + 1) * PAGE).min(size);
            if range.clone().any(|i| got[i] != pattern_byte(i)) {
                println!("invalid data in page {page}");
                ok = false;
            }
        }
    }
    drop(qp);
    Ok(ok)
}

fn main() -> ExitCode {
    let a = Args::parse();
    match run(&a) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::FAILURE
        }
    }
}
