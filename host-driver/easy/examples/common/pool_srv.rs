//! The server side of the pool + doorbell demo, shared by `pool_server` (busy polling) and
//! `pool_server_ev` (a completion channel and the CM event channel in one poll(2) loop). See
//! docs/examples.md.
use std::time::{Duration, Instant};

use clap::Args;
use rnic::cm::{CmEventType, ConnParam, RdmaCmId};
use rnic::{
    AccessFlags, CompletionChannel, CompletionQueue, PortAddr, RecvWr, SendWr, SharedReceiveQueue, WcOpcode, WcStatus,
    WorkCompletion,
};
use rnic_easy::cm::ipv4_of;
use rnic_easy::pool::{doorbell_fields, stream_byte, Msg, SlicePool, MSG_BYTES};
use rnic_easy::{parse_device, Advert, Cm, OwnedMr};

/// The server's options.
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// The NIC (`sim`, `vfio-user:PATH` of `rnic sim serve`, `vfio:BDF`).
    #[arg(long, env = "RNIC_DEVICE", value_parser = parse_device)]
    pub device: String,
    /// The CM address to listen on (0.0.0.0 or the port's IPv4 address, and a port).
    #[arg(long, default_value = "0.0.0.0:7472")]
    pub addr: String,
    /// Slices in the pool (1..=64).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub slices: u32,
    /// Bytes per slice (64..=1048576).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(64..=1 << 20))]
    pub slice_size: u32,
    /// Receives on the SRQ (1..=1024); fewer than the messages a client sends, so each is
    /// reposted.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub srq_depth: u32,
    /// Clients served one after another before exiting (1..=1000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clients: u32,
    /// Wall seconds to wait for a completion before giving up.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
}

/// How the server waits for completions.
pub enum Waiter {
    /// `ibv_poll_cq` in a loop.
    Poll,
    /// `ibv_req_notify_cq` + poll(2) on the completion channel's fd and the CM event
    /// channel's fd + `ibv_get_cq_event` + `ibv_ack_cq_events`; `RDMA_CM_EVENT_DISCONNECTED`
    /// comes through the CM fd.
    Events(CompletionChannel),
}

/// What the server counted.
#[derive(Default, Debug)]
pub struct Totals {
    pub clients: u32,
    pub doorbells: u64,
    pub verified: u64,
    pub bad: u64,
    pub reposted: u64,
    pub events: u64,
    pub completions: u64,
    pub sends_freed: u64,
    /// Times poll(2) found the CM event channel's fd readable.
    pub cm_fd_wakeups: u64,
    /// `RDMA_CM_EVENT_DISCONNECTED`s taken.
    pub disconnects: u64,
}

/// The longest poll(2) wait of `pool_server_ev`, ms: the CM's fd does not wake for MADs
/// arriving on QP1, so the loop runs the CM (`process`) at least this often.
const POLL_MS: i32 = 2;

/// Send slots for responses; freed on their IBV_WC_SEND by wr_id.
const SEND_SLOTS: usize = 4;

/// One client's allocation.
struct Alloc {
    first: u32,
    count: u32,
    chunk: u64,
    next_write: u64,
    verified: u64,
    bad: u64,
}

struct Server<'a> {
    args: &'a ServerArgs,
    cq: CompletionQueue,
    waiter: Waiter,
    pool: SlicePool,
    pool_mr: OwnedMr,
    recv_mr: OwnedMr,
    send_mr: OwnedMr,
    free_sends: Vec<usize>,
    totals: Totals,
    armed: bool,
    cm: std::rc::Rc<Cm>,
    last_pump: Instant,
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

impl Server<'_> {
    /// Waits for completions into `wcs`, or for the client's `DISCONNECTED` (then returns 0,
    /// once the CQ is polled empty).
    fn next(&mut self, wcs: &mut [WorkCompletion], id: &RdmaCmId<'static>, gone: &mut bool) -> Result<usize, String> {
        let start = Instant::now();
        let limit = Duration::from_secs(self.args.timeout_secs);
        loop {
            let n = self.cq.poll(wcs).map_err(e)?;
            if n > 0 {
                self.totals.completions += n as u64;
                return Ok(n);
            }
            if *gone {
                return Ok(0);
            }
            if start.elapsed() > limit {
                return Err(format!("no completion within {limit:?}"));
            }
            match &self.waiter {
                Waiter::Poll => {
                    if self.last_pump.elapsed() >= Duration::from_millis(1) {
                        self.last_pump = Instant::now();
                        self.cm.pump().map_err(e)?;
                        *gone |= Self::took_disconnect(&self.cm, &mut self.totals, id);
                    }
                }
                Waiter::Events(ch) => {
                    if !self.armed {
                        // The CQ is polled empty: arm it, then poll once more before sleeping (a
                        // completion that landed between the poll and the arm is caught by that
                        // poll; rnic's arm also fires at once for a CQE still unpolled).
                        self.cq.req_notify(false).map_err(e)?;
                        self.armed = true;
                        continue;
                    }
                    // The CM moves only when run; its fd then shows the events it queued.
                    self.cm.process().map_err(e)?;
                    let mut fds = [
                        libc::pollfd { fd: ch.fd(), events: libc::POLLIN, revents: 0 },
                        libc::pollfd { fd: self.cm.fd(), events: libc::POLLIN, revents: 0 },
                    ];
                    // SAFETY: poll(2) on two valid descriptors owned by this process.
                    let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, POLL_MS) };
                    if r < 0 {
                        return Err(format!("poll: {}", std::io::Error::last_os_error()));
                    }
                    if fds[1].revents & libc::POLLIN != 0 {
                        self.totals.cm_fd_wakeups += 1;
                        self.cm.drain();
                        *gone |= Self::took_disconnect(&self.cm, &mut self.totals, id);
                    }
                    if fds[0].revents & libc::POLLIN != 0 {
                        if let Some(cq) = ch.get_cq_event_timeout(Duration::ZERO).map_err(e)? {
                            cq.ack_cq_events(1);
                            self.totals.events += 1;
                            self.armed = false;
                        }
                    }
                }
            }
        }
    }

    fn took_disconnect(cm: &Cm, totals: &mut Totals, id: &RdmaCmId<'static>) -> bool {
        let took = cm.take_for(id, &[CmEventType::Disconnected]).is_some();
        totals.disconnects += u64::from(took);
        took
    }

    fn respond(&mut self, id: &RdmaCmId<'static>, m: Msg) -> Result<u64, String> {
        let slot = self.free_sends.pop().ok_or("no free send buffer (responses not completing)")?;
        let at = slot * MSG_BYTES;
        self.send_mr.write_at(at, &m.encode()).map_err(e)?;
        id.qp()
            .ok_or("the QP is borrowed")?
            .post_send_one(SendWr::send(slot as u64, self.send_mr.sge(at..at + MSG_BYTES).map_err(e)?).signaled(true))
            .map_err(e)?;
        Ok(slot as u64)
    }

    fn repost(&mut self, srq: &SharedReceiveQueue<'static>, slot: u64) -> Result<(), String> {
        let at = slot as usize * MSG_BYTES;
        srq.post_recv_one(RecvWr::new(slot, self.recv_mr.sge(at..at + MSG_BYTES).map_err(e)?)).map_err(e)?;
        self.totals.reposted += 1;
        Ok(())
    }

    /// Checks `writes` writes of the stream from the allocation's next one.
    fn check_batch(&mut self, a: &mut Alloc, writes: u64) -> Result<(u64, u64), String> {
        let base = u64::from(a.first) * u64::from(self.args.slice_size);
        let (mut ok, mut bad) = (0, 0);
        for w in a.next_write..a.next_write + writes {
            let mut got = vec![0u8; a.chunk as usize];
            self.pool_mr.read_at((base + w * a.chunk) as usize, &mut got).map_err(e)?;
            for (i, b) in got.iter().enumerate() {
                if *b == stream_byte(w, i) {
                    ok += 1;
                } else {
                    bad += 1;
                }
            }
        }
        a.next_write += writes;
        Ok((ok, bad))
    }

    fn client(
        &mut self,
        k: u32,
        listener: &RdmaCmId<'static>,
        srq: &SharedReceiveQueue<'static>,
    ) -> Result<(), String> {
        let pd = self.pool_mr.pd().clone();
        let qp = pd.create_qp(&self.cq).set_srq(srq).set_max_send_wr(SEND_SLOTS as u32);
        let limit = Duration::from_secs(self.args.timeout_secs);
        let mine = Advert { msg_size: MSG_BYTES as u64, buffer: None }.encode();
        // rdma_get_request + rdma_create_qp + rdma_accept (the REP carries our advertisement),
        // then ESTABLISHED on the RTU.
        let (id, _) = self
            .cm
            .clone()
            .accept_qp(listener, &qp, &ConnParam::default(), limit, |_, pdata| {
                Advert::decode(pdata)?;
                Ok(mine.clone())
            })
            .map_err(e)?;
        let (peer_qpn, peer_ip) = {
            let q = id.qp().ok_or("the QP is borrowed")?;
            let a = q.query_qp();
            (a.dest_qp_num, a.ah_attr.dest_ip)
        };
        println!(
            "client {k}: {} connected (CM), local QPN {:#08x}, remote QPN {:#08x} at {peer_ip}",
            id.remote_addr().map_or("?".into(), |a| a.to_string()),
            id.qp_num().unwrap_or(0),
            peer_qpn,
        );
        let r = self.serve(k, &id, srq);
        self.cm.forget(&id);
        id.destroy();
        r
    }

    fn serve(&mut self, k: u32, id: &RdmaCmId<'static>, srq: &SharedReceiveQueue<'static>) -> Result<(), String> {
        let mut alloc: Option<Alloc> = None;
        let mut last_send: Option<u64> = None;
        let mut freed = false;
        let mut gone = false;
        let mut wcs = [WorkCompletion::default(); 8];
        loop {
            let n = self.next(&mut wcs, id, &mut gone)?;
            if n == 0 {
                // DISCONNECTED, and the CQ is empty.
                if !freed {
                    return Err(format!(
                        "client {k} disconnected (RDMA_CM_EVENT_DISCONNECTED) before freeing its slices"
                    ));
                }
                println!("client {k}: DISCONNECTED (RDMA_CM_EVENT_DISCONNECTED)");
                self.totals.clients += 1;
                return Ok(());
            }
            for wc in wcs[..n].iter().copied() {
                if gone && wc.status == WcStatus::WrFlushErr {
                    continue; // the disconnect flushed the QP
                }
                if !wc.status.is_success() {
                    return Err(format!("completion {:?} wr_id {} failed: {}", wc.opcode, wc.wr_id, wc.status));
                }
                match wc.opcode {
                    WcOpcode::Send => {
                        self.free_sends.push(wc.wr_id as usize);
                        self.totals.sends_freed += 1;
                        if last_send == Some(wc.wr_id) {
                            // RESP_FREE is acknowledged; the client disconnects next.
                            freed = true;
                        }
                    }
                    WcOpcode::Recv => {
                        let mut b = [0u8; MSG_BYTES];
                        self.recv_mr.read_at(wc.wr_id as usize * MSG_BYTES, &mut b).map_err(e)?;
                        self.repost(srq, wc.wr_id)?;
                        match Msg::decode(&b[..wc.byte_len as usize]).map_err(|x| format!("client {k}: {x}"))? {
                            Msg::ReqAlloc { bytes, chunk } => {
                                let chunk = u64::from(chunk.max(1));
                                let got = self.pool.alloc(bytes);
                                let resp = match got {
                                    Some((first, count)) => {
                                        let ss = u64::from(self.args.slice_size);
                                        alloc = Some(Alloc { first, count, chunk, next_write: 0, verified: 0, bad: 0 });
                                        println!(
                                            "client {k}: REQ_ALLOC {bytes} bytes -> slices {first}..{} (bitmap {:#018x})",
                                            first + count - 1,
                                            self.pool.bitmap()
                                        );
                                        Msg::RespAlloc {
                                            ok: true,
                                            first,
                                            count,
                                            addr: self.pool_mr.addr() + u64::from(first) * ss,
                                            rkey: self.pool_mr.rkey(),
                                            len: (u64::from(count) * ss) as u32,
                                        }
                                    }
                                    None => {
                                        println!("client {k}: REQ_ALLOC {bytes} bytes refused: no free run");
                                        Msg::RespAlloc { ok: false, first: 0, count: 0, addr: 0, rkey: 0, len: 0 }
                                    }
                                };
                                self.respond(id, resp)?;
                            }
                            Msg::ReqFree { first, count } => {
                                let ok = self.pool.release(first, count);
                                let (verified, bad) = alloc.as_ref().map_or((0, 0), |a| (a.verified, a.bad));
                                println!(
                                    "client {k}: REQ_FREE slices {first}..{}: {}; {verified} bytes verified, {bad} wrong",
                                    first + count.max(1) - 1,
                                    if ok { "freed" } else { "refused (not allocated)" }
                                );
                                last_send = Some(self.respond(id, Msg::RespFree { ok, verified, bad })?);
                            }
                            other => return Err(format!("client {k}: unexpected {other:?}")),
                        }
                    }
                    WcOpcode::RecvRdmaWithImm => {
                        self.repost(srq, wc.wr_id)?;
                        let (batch, writes) = doorbell_fields(wc.imm_data);
                        let mut a = alloc.take().ok_or("a doorbell before any allocation")?;
                        let (ok, bad) = self.check_batch(&mut a, u64::from(writes))?;
                        a.verified += ok;
                        a.bad += bad;
                        self.totals.doorbells += 1;
                        self.totals.verified += ok;
                        self.totals.bad += bad;
                        println!(
                            "client {k}: doorbell (IBV_WC_RECV_RDMA_WITH_IMM, imm {:#010x}): batch {batch}, {writes} writes, {ok} bytes verified{}",
                            wc.imm_data,
                            if bad > 0 { format!(", {bad} WRONG") } else { String::new() }
                        );
                        let _ = a.count;
                        alloc = Some(a);
                    }
                    other => return Err(format!("unexpected completion {other:?}")),
                }
            }
        }
    }
}

/// Runs the server; returns its totals.
pub fn run(args: &ServerArgs, events: bool) -> Result<Totals, String> {
    let ctx = rnic_easy::open(&args.device, PortAddr::for_sim_nic(1)).map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let pool = SlicePool::new(args.slices, u64::from(args.slice_size));
    let pool_bytes = args.slices as usize * args.slice_size as usize;
    let pool_mr = OwnedMr::new(&pd, pool_bytes, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).map_err(e)?;
    let depth = args.srq_depth as usize;
    let recv_mr = OwnedMr::new(&pd, depth * MSG_BYTES, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let send_mr = OwnedMr::new(&pd, SEND_SLOTS * MSG_BYTES, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let cq_size = depth.next_power_of_two() + SEND_SLOTS + 8;
    let (cq, waiter) = if events {
        let ch = ctx.create_comp_channel().map_err(e)?;
        (ctx.create_cq_with_channel(cq_size, &ch).map_err(e)?, Waiter::Events(ch))
    } else {
        (ctx.create_cq(cq_size).map_err(e)?, Waiter::Poll)
    };
    let srq: SharedReceiveQueue<'static> = pd.create_srq(args.srq_depth, 1).map_err(e)?;
    for slot in 0..depth {
        let at = slot * MSG_BYTES;
        srq.post_recv_one(RecvWr::new(slot as u64, recv_mr.sge(at..at + MSG_BYTES).map_err(e)?)).map_err(e)?;
    }
    let cm = Cm::for_context(&ctx).map_err(e)?;
    let listener = cm.listen(ipv4_of(args.addr.as_str()).map_err(e)?).map_err(e)?;
    println!(
        "listening on {} (CM): pool of {} slices of {} bytes (rkey {:#x}), SRQ {} of {} receives, {}",
        listener.local_addr().map_or(args.addr.clone(), |a| a.to_string()),
        args.slices,
        args.slice_size,
        pool_mr.rkey(),
        srq.srq_num(),
        depth,
        if events { "completion channel + CM event fd in poll(2)" } else { "busy polling" }
    );
    let mut s = Server {
        args,
        cq,
        waiter,
        pool,
        pool_mr,
        recv_mr,
        send_mr,
        free_sends: (0..SEND_SLOTS).rev().collect(),
        totals: Totals::default(),
        armed: false,
        cm: cm.clone(),
        last_pump: Instant::now(),
    };
    for k in 1..=args.clients {
        s.client(k, &listener, &srq)?;
    }
    if s.pool.free() != s.pool.slices() {
        return Err(format!("{} slices still allocated after the clients left", s.pool.slices() - s.pool.free()));
    }
    if s.free_sends.len() != SEND_SLOTS {
        return Err(format!("{} send buffers never freed", SEND_SLOTS - s.free_sends.len()));
    }
    // Drop the SRQ's users first: the CQ and regions go with `s`.
    drop(srq);
    Ok(std::mem::take(&mut s.totals))
}
