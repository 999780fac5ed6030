//! `pool_client`: the client of the pool + doorbell demo (see docs/examples.md). It asks the
//! server for a run of slices (`REQ_ALLOC` by SEND, `RESP_ALLOC` by RECV), streams `--writes`
//! RDMA WRITEs of `--chunk` bytes into it — unsignaled, posted `--doorbell-every` at a time
//! with one doorbell per post list — where the last WRITE of each batch is a signaled
//! RDMA WRITE WITH IMMEDIATE (the doorbell: the server gets `IBV_WC_RECV_RDMA_WITH_IMM` and
//! checks the batch), then frees the run (`REQ_FREE`) and checks the server's count of
//! verified bytes in `RESP_FREE`, and disconnects (`rdma_disconnect`: the server sees
//! `RDMA_CM_EVENT_DISCONNECTED`). It connects through the CM (`rnic_easy::Cm::connect_qp`:
//! `rdma_resolve_addr`, `rdma_resolve_route`, `rdma_create_qp`, `rdma_connect`; the REQ and
//! REP travel on QP1).
//!
//! ```text
//! pool_server --device vfio-user:D/nic1.sock
//! pool_client --device vfio-user:D/nic0.sock --addr 192.0.2.2:7472
//! ```
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rnic::cm::{CmEventType, ConnParam};
use rnic::{AccessFlags, PortAddr, QueuePair, RecvWr, SendWr, WcOpcode, WrOpcode};
use rnic_easy::cm::ipv4_of;
use rnic_easy::pool::{doorbell_imm, stream_byte, Msg, MSG_BYTES};
use rnic_easy::{parse_device, poll_one, Advert, Cm, EasyError, OwnedMr};

/// pool_client: REQ_ALLOC, an unsignaled WRITE stream with WRITE_WITH_IMM doorbells, REQ_FREE.
#[derive(Parser, Debug)]
#[command(name = "pool_client")]
struct Args {
    /// The NIC (`sim`, `vfio-user:PATH` of `rnic sim serve`, `vfio:BDF`).
    #[arg(long, env = "RNIC_DEVICE", value_parser = parse_device)]
    device: String,
    /// The server's CM address: its NIC's IPv4 address (NIC 1 of `rnic sim serve`: 192.0.2.2)
    /// and port.
    #[arg(long, default_value = "192.0.2.2:7472")]
    addr: String,
    /// RDMA WRITEs in the stream (1..=4096).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    writes: u32,
    /// Bytes per WRITE (1..=65536).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=65536))]
    chunk: u32,
    /// WRITEs per doorbell (1..=256): the last of each batch is the signaled WRITE_WITH_IMM.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=256))]
    doorbell_every: u32,
    /// Wall seconds to wait for a completion.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

fn run(a: &Args) -> Result<String, String> {
    let timeout = Duration::from_secs(a.timeout_secs);
    let ctx = rnic_easy::open(&a.device, PortAddr::for_sim_nic(0)).map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let (writes, chunk, every) = (u64::from(a.writes), a.chunk as usize, a.doorbell_every as usize);
    let total = writes as usize * chunk;
    let data = OwnedMr::new(&pd, total, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let ctl_send = OwnedMr::new(&pd, MSG_BYTES, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let ctl_recv = OwnedMr::new(&pd, 2 * MSG_BYTES, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let send_cq = ctx.create_cq(every + 4).map_err(e)?;
    let recv_cq = ctx.create_cq(4).map_err(e)?;
    let builder = pd.create_qp(&send_cq).set_recv_cq(&recv_cq).set_max_send_wr(every as u32 + 2).set_max_recv_wr(2);
    let cm = Cm::for_context(&ctx).map_err(e)?;
    let dst = ipv4_of(a.addr.as_str()).map_err(e)?;
    let param = ConnParam::with_private_data(&Advert { msg_size: MSG_BYTES as u64, buffer: None }.encode());
    let t_connect = std::time::Instant::now();
    let c0 = ctx.device().now_cycles();
    // The receives are posted while the QP is in INIT, before the REQ goes out.
    let (id, rep) = cm
        .connect_qp(dst, &builder, &param, timeout, |id| {
            let mut qp = id.qp().ok_or_else(|| EasyError::Protocol("the QP is borrowed".into()))?;
            for slot in 0..2 {
                let at = slot * MSG_BYTES;
                qp.post_recv_one(RecvWr::new(slot as u64, ctl_recv.sge(at..at + MSG_BYTES)?))?;
            }
            Ok(())
        })
        .map_err(e)?;
    Advert::decode(&rep).map_err(e)?;
    let mut qp: std::cell::RefMut<'_, QueuePair<'static>> = id.qp().ok_or("the QP is borrowed")?;
    let peer = qp.query_qp();
    println!(
        "connected (CM) in {} cycles, {:.0} ms wall: local QPN {:#08x}, remote QPN {:#08x} at {}",
        ctx.device().now_cycles() - c0,
        t_connect.elapsed().as_secs_f64() * 1e3,
        qp.qp_num(),
        peer.dest_qp_num,
        peer.ah_attr.dest_ip
    );

    // One control round trip: SEND a request, wait for its IBV_WC_SEND, then the response.
    let rpc = |qp: &mut QueuePair<'static>, m: Msg| -> Result<Msg, String> {
        ctl_send.write_at(0, &m.encode()).map_err(e)?;
        qp.post_send_one(SendWr::send(1000, ctl_send.sge(0..MSG_BYTES).map_err(e)?).signaled(true)).map_err(e)?;
        let wc = poll_one(&send_cq, "control SEND", timeout).map_err(e)?;
        if !wc.status.is_success() || wc.opcode != WcOpcode::Send {
            return Err(format!("control SEND completed {:?} {}", wc.opcode, wc.status));
        }
        let wc = poll_one(&recv_cq, "control RECV", timeout).map_err(e)?;
        if !wc.status.is_success() {
            return Err(format!("control RECV completed {}", wc.status));
        }
        let at = wc.wr_id as usize * MSG_BYTES;
        let mut b = [0u8; MSG_BYTES];
        ctl_recv.read_at(at, &mut b).map_err(e)?;
        qp.post_recv_one(RecvWr::new(wc.wr_id, ctl_recv.sge(at..at + MSG_BYTES).map_err(e)?)).map_err(e)?;
        Msg::decode(&b[..wc.byte_len as usize])
    };

    let Msg::RespAlloc { ok, first, count, addr, rkey, len } =
        rpc(&mut qp, Msg::ReqAlloc { bytes: total as u64, chunk: a.chunk })?
    else {
        return Err("the server did not answer REQ_ALLOC with RESP_ALLOC".into());
    };
    if !ok || (len as usize) < total {
        return Err(format!("REQ_ALLOC of {total} bytes refused (ok {ok}, {len} bytes)"));
    }
    println!("RESP_ALLOC: slices {first}..{} ({len} bytes) at {addr:#x}, rkey {rkey:#x}", first + count - 1);

    let dev = ctx.device().clone();
    let t0 = dev.now_cycles();
    let mut batches = 0u16;
    let mut w = 0u64;
    while w < writes {
        let n = (writes - w).min(every as u64);
        let mut wrs = Vec::with_capacity(n as usize);
        for k in 0..n {
            let ww = w + k;
            let at = ww as usize * chunk;
            let bytes: Vec<u8> = (0..chunk).map(|i| stream_byte(ww, i)).collect();
            data.write_at(at, &bytes).map_err(e)?;
            let remote = rnic::RemoteAddr { addr: addr + at as u64, rkey };
            let wr = SendWr::rdma_write(ww, data.sge(at..at + chunk).map_err(e)?, remote);
            wrs.push(if k + 1 == n {
                wr.with_opcode(WrOpcode::RdmaWriteWithImm).with_imm(doorbell_imm(batches, n as u16)).signaled(true)
            } else {
                wr.signaled(false)
            });
        }
        qp.post_send(&wrs).map_err(e)?;
        let wc = poll_one(&send_cq, "doorbell", timeout).map_err(e)?;
        if !wc.status.is_success() || wc.wr_id != w + n - 1 {
            return Err(format!("batch {batches}: the doorbell completed {} (wr_id {})", wc.status, wc.wr_id));
        }
        println!(
            "batch {batches}: {} unsignaled WRITEs + WRITE_WITH_IMM doorbell (imm {:#010x}) completed",
            n - 1,
            doorbell_imm(batches, n as u16)
        );
        batches += 1;
        w += n;
    }
    let us = (dev.now_cycles() - t0) as f64 / f64::from(ctx.device_info().clock_mhz.max(1));

    let Msg::RespFree { ok, verified, bad } = rpc(&mut qp, Msg::ReqFree { first, count })? else {
        return Err("the server did not answer REQ_FREE with RESP_FREE".into());
    };
    println!(
        "RESP_FREE: {}; the server verified {verified} bytes, {bad} wrong",
        if ok { "freed" } else { "NOT freed" }
    );
    // rdma_disconnect: the server's DISCONNECTED; ours on its DREP (the DREQ has left before
    // this process does, and RESP_FREE's ACK before the DREQ).
    drop(qp);
    id.disconnect().map_err(e)?;
    let disc = cm.wait("DISCONNECTED", Duration::from_secs(5).min(timeout), |ev| {
        ev.id == id && ev.event == CmEventType::Disconnected
    });
    println!(
        "{}",
        match disc {
            Ok(_) => "DISCONNECTED (the server's DREP)".to_string(),
            Err(x) => format!("no DREP from the server: {x}"),
        }
    );
    if !ok || bad != 0 || verified != total as u64 {
        return Err(format!("the server verified {verified} of {total} bytes ({bad} wrong, freed {ok})"));
    }
    Ok(format!(
        "pool_client: {writes} WRITEs of {chunk} bytes in {batches} doorbells, {total} bytes verified by the server, {:.2} Gb/s over {:.1} us",
        total as f64 * 8.0 / (us * 1e3),
        us
    ))
}

fn main() -> ExitCode {
    let a = Args::parse();
    match run(&a) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("pool_client: {msg}");
            ExitCode::FAILURE
        }
    }
}
