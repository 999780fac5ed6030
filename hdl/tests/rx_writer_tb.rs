//! `RxWriter` in Verilator against a packet-buffer model, an AXI4 write slave with host
//! memory, and the jobs' own description of what must land where.
//!
//! - `jobs_land_exactly_and_acks_wait_for_b`: a stream of jobs as the RX engine makes them —
//!   payloads (any host alignment, 1..=4096 bytes, header 54..=82 bytes into the packet's first
//!   beat: 54, 58, 66, 70, 74 and 82 as RoCE's extension headers make them, and others), 32-byte
//!   CQEs, 8-byte values (kind 3, an atomic's result: `cqe` bits 63..0 little-endian, at every
//!   8-byte-aligned address, all eight positions in a beat) and no-write jobs, about half
//!   carrying an ACK/NAK; a payload packet is split, about a third of the time, into 2..=5
//!   jobs as a receive scattered over several entries makes them (each piece at its own host
//!   address, `off` = header length + the bytes earlier pieces took, so pieces start at any
//!   byte of any beat up to `off` ≈ 4170; only the last piece releases the packet's beats and
//!   may carry the ACK) — with the packet buffer filled the way
//!   the ingress fills it (each packet after the previous one, released beats overwritten by
//!   newer packets at once; after every 25 jobs none until the writer is idle), random `awready`/`wready`, B responses after
//!   random delays and random `ack_full`; half the CQE jobs carry a completion event (`ev`, a
//!   random vector), with or without an ACK. Checks: every event comes out once, in order,
//!   with its vector, only after the B responses of every write up to its CQE's; and host memory holds exactly the payload, CQE
//!   and 8-byte value bytes at their addresses and nothing else was written (strobes: a kind-3
//!   beat has exactly its 8 strobes set); every AW is 64-byte
//!   aligned; `rd_ptr` advances by each job's `release`, in order; ACKs leave in job order, each
//!   once, never before the B responses of every write up to its job have arrived; the
//!   ACK/NAK counters follow the syndrome; `idle` in cycle `t` is exactly "in cycle `t - 1` no
//!   job was offered and every write of the jobs taken so far had its B response" (so it is
//!   low from the cycle after a job is offered until that job's B responses are in), and
//!   it is seen both high and low; `bar_done` / `res_done` pulse once per job carrying `bar` /
//!   `res`, in order, never before the B responses of every write up to and including it;
//!   `idle_next` in cycle `t` is `idle` of cycle `t + 1`.
mod harness;

use harness::{pack_fields, Dut, Port, Rng};
use rnic_hdl::records::{AckJob, WriteJob};
use rnic_hdl::rx_writer::RxWriter;
use std::collections::{HashMap, VecDeque};

/// Packet-buffer beats.
const BEATS: u64 = 1 << rnic_hdl::rx_ingress::LOG_BUFFER_BEATS;

struct Job {
    fields: Vec<(usize, usize, u64)>,
    kind: u64,
    start: u64,
    release: u64,
    off: usize,
    plen: usize,
    addr: u64,
    cqe: Vec<u8>,
    ack: Option<Vec<u8>>,
    /// A CQE's completion event (`ev`) and its vector.
    ev: Option<u64>,
    /// A write barrier for the atomic unit: `bar` (false) or `res` (true).
    fence: Option<bool>,
    syndrome: u64,
    /// AXI beats this job writes.
    beats: u64,
}

/// One packet's jobs: one job, or (a payload packet, 1 in 3) 2..=5 pieces of its payload.
fn make_jobs(rng: &mut Rng, start: u64, region: u64) -> Vec<Job> {
    let job = make_job(rng, start, region);
    if job.kind != 0 || job.plen < 2 || !rng.chance(1, 3) {
        return vec![job];
    }
    let n = (rng.range(2, 5) as usize).min(job.plen);
    // Cut points inside the payload, distinct and sorted.
    let mut cuts: Vec<usize> = Vec::new();
    while cuts.len() < n - 1 {
        let c = rng.range(1, job.plen as u64 - 1) as usize;
        if !cuts.contains(&c) {
            cuts.push(c);
        }
    }
    cuts.sort();
    cuts.insert(0, 0);
    cuts.push(job.plen);
    let hlen = job.off;
    let mut out = Vec::new();
    for k in 0..n {
        let (a, b) = (cuts[k], cuts[k + 1]);
        let last = k == n - 1;
        // Each piece at its own place in the region, any alignment, never overlapping.
        let addr = region + a as u64 + 64 * k as u64 + rng.range(0, 64);
        out.push(piece(&job, hlen + a, b - a, addr, last, rng));
    }
    out
}

/// A payload job for `plen` bytes at packet offset `off`; only the last piece releases the
/// packet and may carry the ACK.
fn piece(whole: &Job, off: usize, plen: usize, addr: u64, last: bool, rng: &mut Rng) -> Job {
    let w = WriteJob::default();
    let release = if last { whole.release } else { 0 };
    let ack = if last { whole.ack.clone() } else { None };
    let lead = (addr % 64) as usize;
    let mut fields = vec![
        (w.get_my_offset_kind(), 2, 0),
        (w.get_my_offset_need_ack(), 1, u64::from(ack.is_some())),
        (w.get_my_offset_start(), 10, whole.start),
        (w.get_my_offset_release(), 8, release),
        (w.get_my_offset_off(), 13, off as u64),
        (w.get_my_offset_plen(), 13, plen as u64),
        (w.get_my_offset_addr(), 64, addr),
    ];
    if let Some(a) = &ack {
        for (k, c) in a.chunks(8).enumerate() {
            fields.push((w.get_my_offset_ack() + 64 * k, 64, u64::from_le_bytes(c.try_into().unwrap())));
        }
    } else {
        // Junk in the ACK field of a job without one.
        fields.push((w.get_my_offset_ack(), 64, rng.next_u64()));
    }
    Job {
        fields,
        kind: 0,
        start: whole.start,
        release,
        off,
        plen,
        addr,
        cqe: whole.cqe.clone(),
        ack,
        ev: None,
        fence: None,
        syndrome: whole.syndrome,
        beats: (lead + plen).div_ceil(64) as u64,
    }
}

fn make_job(rng: &mut Rng, start: u64, region: u64) -> Job {
    let w = WriteJob::default();
    let kind = match rng.range(0, 11) {
        0 | 1 => 1, // CQE
        2 => 2,     // nothing to write
        3 | 4 => 3, // an atomic's 8-byte result
        _ => 0,     // payload
    };
    let hlen = *rng.pick(&[54usize, 58, 66, 70, 74, 82, 80, 62, 64]);
    let plen = match rng.range(0, 3) {
        0 => rng.range(1, 64) as usize,
        1 => *rng.pick(&[256usize, 1024, 4096, 4095, 63, 65]),
        _ => rng.range(1, 4096) as usize,
    };
    let plen = if kind == 0 { plen } else { 0 };
    let frame = hlen + plen + 4;
    let release = if kind == 1 || kind == 3 { 0 } else { frame.div_ceil(64) as u64 };
    let addr = match kind {
        0 => region + rng.range(0, 4096),
        1 => region + 32 * rng.range(0, 100),
        3 => region + 8 * rng.range(0, 511),
        _ => rng.next_u64(),
    };
    let cqe = rng.bytes(32);
    let syndrome = *rng.pick(&[0x1Fu64, 0x1F, 0x60, 0x61, 0x62]);
    let need_ack = rng.chance(1, 2);
    let a = AckJob::default();
    let ack_fields = [
        (a.get_my_offset_dest_mac(), 48, rng.next_u64() & 0xFFFF_FFFF_FFFF),
        (a.get_my_offset_dest_ip(), 32, u64::from(rng.u32())),
        (a.get_my_offset_psn(), 24, u64::from(rng.u32() & 0xFF_FFFF)),
        (a.get_my_offset_syndrome(), 8, syndrome),
        (a.get_my_offset_msn(), 24, u64::from(rng.u32() & 0xFF_FFFF)),
    ];
    let ack = pack_fields(256, &ack_fields);
    let lead = (addr % 64) as usize;
    let beats = match kind {
        0 => (lead + plen).div_ceil(64) as u64,
        1 => (lead + 32).div_ceil(64) as u64,
        3 => (lead + 8).div_ceil(64) as u64,
        _ => 0,
    };
    let mut fields = vec![
        (w.get_my_offset_kind(), 2, kind),
        (w.get_my_offset_need_ack(), 1, u64::from(need_ack)),
        (w.get_my_offset_start(), 10, start),
        (w.get_my_offset_release(), 8, release),
        (w.get_my_offset_off(), 13, hlen as u64),
        (w.get_my_offset_plen(), 13, plen as u64),
        (w.get_my_offset_addr(), 64, addr),
    ];
    for (k, c) in cqe.chunks(8).enumerate() {
        fields.push((w.get_my_offset_cqe() + 64 * k, 64, u64::from_le_bytes(c.try_into().unwrap())));
    }
    for (k, c) in ack.chunks(8).enumerate() {
        fields.push((w.get_my_offset_ack() + 64 * k, 64, u64::from_le_bytes(c.try_into().unwrap())));
    }
    // Half the CQEs raise their CQ's event (with or without an ACK on the same job).
    let ev = (kind == 1 && rng.chance(1, 2)).then(|| rng.range(0, 31));
    if let Some(v) = ev {
        fields.push((w.get_my_offset_ev(), 1, 1));
        fields.push((w.get_my_offset_ev_vector(), 5, v));
    }
    // Barriers: a no-write job (`bar`, or `res` as an atomic whose compare failed) or an
    // atomic's result (`res`), with or without an ACK.
    let fence = match kind {
        2 if rng.chance(1, 2) => Some(rng.chance(1, 2)),
        3 if rng.chance(1, 2) => Some(true),
        _ => None,
    };
    if let Some(res) = fence {
        let off = if res { w.get_my_offset_res() } else { w.get_my_offset_bar() };
        fields.push((off, 1, 1));
    }
    Job {
        fields,
        kind,
        start,
        release,
        off: hlen,
        plen,
        addr,
        cqe,
        ack: need_ack.then_some(ack),
        ev,
        fence,
        syndrome,
        beats,
    }
}

#[test]
fn jobs_land_exactly_and_acks_wait_for_b() {
    let mut dut = Dut::build::<RxWriter>("rx_writer").expect("build the RX writer model");
    let names = [
        "job_empty",
        "job",
        "job_read",
        "buf_raddr",
        "buf_rdata",
        "rd_ptr",
        "awvalid",
        "awready",
        "awaddr",
        "wvalid",
        "wready",
        "wdata",
        "wstrb",
        "bvalid",
        "ack_full",
        "ack_write",
        "ack",
        "cnt_tx_ack",
        "cnt_tx_nak",
        "idle",
        "ev_valid",
        "ev_vector",
        "bar_done",
        "res_done",
        "idle_next",
    ];
    let q: Vec<Port> = names.iter().map(|n| dut.port(n)).collect();
    let [job_empty, job_p, job_read, buf_raddr, buf_rdata, rd_ptr, awvalid, awready, awaddr, wvalid, wready, wdata, wstrb, bvalid, ack_full, ack_write, ack_p, cnt_ack, cnt_nak, idle_p, ev_valid, ev_vector, bar_done, res_done, idle_next_p]: [Port; 25] =
        q.try_into().unwrap();
    dut.set(job_empty, 1);
    dut.reset(2);
    let job_width = dut.width(job_p);

    let mut rng = Rng::from_env(0x2B17_0001);
    let seed = rng.0;
    let n_jobs = 600;
    // Packet buffer: 1024 beats (rnic_hdl::rx_ingress::LOG_BUFFER_BEATS); the ingress writes packet j at start_j.. when it is queued.
    let mut buffer: Vec<[u8; 64]> = (0..BEATS).map(|_| rng.bytes(64).try_into().unwrap()).collect();
    let mut jobs: Vec<Job> = Vec::new();
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    let mut next_start = 0u64;
    let mut queued = 0usize; // jobs in the job FIFO (visible to the writer) so far
    let mut taken = 0usize;
    let mut used_beats = 0u64; // queued - released
    let mut rd_seen = 0u64; // rd_ptr as last seen (mod 2 * BEATS)
    let mut released_total = 0u64;
    let mut releases_expected: VecDeque<u64> = VecDeque::new();
    // Host memory and the AXI slave.
    let mut mem: HashMap<u64, u8> = HashMap::new();
    let mut aws: VecDeque<u64> = VecDeque::new();
    let mut ws: VecDeque<(Vec<u8>, u64)> = VecDeque::new();
    let mut b_pending: VecDeque<u64> = VecDeque::new(); // cycles at which a B is due
    let mut b_delivered = 0u64;
    let mut beats_written = 0u64;
    let mut acks_seen = 0usize;
    let mut ack_jobs: VecDeque<usize> = VecDeque::new();
    let mut ev_jobs: VecDeque<usize> = VecDeque::new();
    let mut evs_seen = 0usize;
    // Jobs with a `bar` / `res` barrier not yet pulsed, and pulses seen.
    let mut fence_jobs: [VecDeque<usize>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut fences_seen = [0usize; 2];
    let mut last_raddr = 0u64;
    let mut cycle = 0u64;
    // `idle` model: the condition in the previous cycle; beats of the jobs taken so far.
    let mut planned_taken = 0u64;
    let mut prev_idle_cond: Option<bool> = None;
    let (mut idle_hi, mut idle_lo) = (0u64, 0u64);
    let (mut paused, mut paused_at, mut idle_run) = (false, 0usize, 0u64);
    // (AW address, strobes) of every W beat written.
    let mut beat_strobes: Vec<(u64, u64)> = Vec::new();

    loop {
        cycle += 1;
        assert!(cycle < 400_000, "no progress: {taken} jobs taken, {acks_seen} ACKs");
        // The RX engine queues the next job when its packet fits in the buffer.
        // (After every 25 jobs a quiet spell until the writer has been idle for 10 cycles.)
        if jobs.len() >= paused_at + 25 && jobs.len() < n_jobs {
            paused_at = jobs.len();
            paused = true;
        }
        if paused && idle_run >= 10 {
            paused = false;
        }
        if jobs.len() < n_jobs && rng.chance(1, 2) && !paused {
            let region = 0x1000_0000 + 0x2000 * jobs.len() as u64;
            let group = make_jobs(&mut rng, next_start, region);
            let release: u64 = group.iter().map(|j| j.release).sum();
            if used_beats + release <= BEATS {
                // The ingress writes the packet's beats now.
                for k in 0..release {
                    buffer[((next_start + k) % BEATS) as usize] = rng.bytes(64).try_into().unwrap();
                }
                for j in group {
                    let mut pay = Vec::new();
                    for i in 0..j.plen {
                        let off = j.off + i;
                        pay.push(buffer[((j.start + (off / 64) as u64) % BEATS) as usize][off % 64]);
                    }
                    payloads.push(pay);
                    if j.release > 0 {
                        releases_expected.push_back(j.release);
                    }
                    if j.ack.is_some() {
                        ack_jobs.push_back(jobs.len());
                    }
                    if j.ev.is_some() {
                        ev_jobs.push_back(jobs.len());
                    }
                    if let Some(res) = j.fence {
                        fence_jobs[usize::from(res)].push_back(jobs.len());
                    }
                    jobs.push(j);
                }
                used_beats += release;
                next_start = (next_start + release) % BEATS;
            }
        }
        if queued < jobs.len() && rng.chance(3, 4) {
            queued = jobs.len();
        }
        let have_job = taken < queued;
        dut.set_bit(job_empty, !have_job);
        if have_job {
            dut.set_wide(job_p, &pack_fields(job_width, &jobs[taken].fields));
        } else {
            dut.set_wide(job_p, &pack_fields(job_width, &[(0, 64, rng.next_u64())]));
        }
        dut.set_wide(buf_rdata, &buffer[last_raddr as usize]);
        let (ar, wr) = (rng.chance(2, 3), rng.chance(2, 3));
        dut.set_bit(awready, ar);
        dut.set_bit(wready, wr);
        let b_now = b_pending.front().is_some_and(|t| *t <= cycle);
        dut.set_bit(bvalid, b_now);
        let af = rng.chance(1, 4);
        dut.set_bit(ack_full, af);
        dut.eval();
        // `idle` now reflects the previous cycle: no job offered, every B of the jobs taken
        // before it in.
        let idle_cond = !have_job && b_delivered == planned_taken;
        let idle_now = dut.get_bit(idle_p);
        if let Some(want) = prev_idle_cond {
            assert_eq!(
                idle_now, want,
                "cycle {cycle}: idle ({taken} jobs taken, {b_delivered} B of {planned_taken}) (seed {seed:#x})"
            );
        }
        if idle_now {
            idle_hi += 1;
            idle_run += 1;
        } else {
            idle_lo += 1;
            idle_run = 0;
        }
        prev_idle_cond = Some(idle_cond);
        // `idle_next` is this cycle's condition, i.e. `idle` of the next cycle.
        assert_eq!(
            dut.get_bit(idle_next_p),
            idle_cond,
            "cycle {cycle}: idle_next ({taken} jobs taken, {b_delivered} B of {planned_taken}) (seed {seed:#x})"
        );

        if have_job && dut.get_bit(job_read) {
            planned_taken += jobs[taken].beats;
            taken += 1;
        }
        if b_now {
            b_pending.pop_front();
            b_delivered += 1;
        }
        if dut.get_bit(awvalid) && ar {
            let a = dut.get(awaddr);
            assert_eq!(a % 64, 0, "unaligned AW {a:#x}");
            aws.push_back(a);
        }
        if dut.get_bit(wvalid) && wr {
            ws.push_back((dut.get_wide(wdata), dut.get(wstrb)));
        }
        while let (Some(a), Some((d, s))) = (aws.front().copied(), ws.front().cloned()) {
            aws.pop_front();
            ws.pop_front();
            beat_strobes.push((a, s));
            for k in 0..64 {
                if s >> k & 1 == 1 {
                    mem.insert(a + k, d[k as usize]);
                }
            }
            beats_written += 1;
            b_pending.push_back(cycle + rng.range(1, 12));
        }
        let (ca, cn) = (dut.get_bit(cnt_ack), dut.get_bit(cnt_nak));
        if dut.get_bit(ack_write) {
            assert!(!af, "ack_write while ack_full");
            let j = ack_jobs.pop_front().expect("an ACK nobody asked for");
            let got = dut.get_wide(ack_p);
            assert_eq!(&got, jobs[j].ack.as_ref().unwrap(), "ACK {acks_seen} (job {j}) content (seed {seed:#x})");
            // Every write of jobs 0..=j has been answered.
            let needed: u64 = jobs[..=j].iter().map(|x| x.beats).sum();
            assert!(
                b_delivered >= needed,
                "ACK of job {j} with {b_delivered} B responses, {needed} needed (seed {seed:#x})"
            );
            let is_ack = jobs[j].syndrome == 0x1F;
            assert_eq!((ca, cn), (is_ack, !is_ack), "ACK/NAK counter");
            acks_seen += 1;
        } else {
            assert!(!ca && !cn, "ACK/NAK counter without ack_write");
        }
        if dut.get_bit(ev_valid) {
            let j = ev_jobs.pop_front().expect("an event nobody asked for");
            assert_eq!(Some(dut.get(ev_vector)), jobs[j].ev, "event {evs_seen} (job {j}) vector (seed {seed:#x})");
            // The event leaves behind every write up to its CQE's (the CQE is in memory).
            let needed: u64 = jobs[..=j].iter().map(|x| x.beats).sum();
            assert!(b_delivered >= needed, "event of job {j} with {b_delivered} B responses, {needed} needed");
            evs_seen += 1;
        }
        for (k, port) in [bar_done, res_done].into_iter().enumerate() {
            if dut.get_bit(port) {
                let j = fence_jobs[k].pop_front().expect("a barrier pulse nobody asked for");
                // Every write up to and including the barrier's job is in host memory.
                let needed: u64 = jobs[..=j].iter().map(|x| x.beats).sum();
                assert!(b_delivered >= needed, "barrier of job {j} with {b_delivered} B responses, {needed} needed");
                fences_seen[k] += 1;
            }
        }
        last_raddr = dut.get(buf_raddr);
        dut.tick();
        // Released beats are free for the ingress: overwrite them at once.
        dut.eval();
        let rd = dut.get(rd_ptr);
        if rd != rd_seen {
            let step = (rd + 2 * BEATS - rd_seen) % (2 * BEATS);
            let want = releases_expected.pop_front().expect("rd_ptr moved with nothing to release");
            assert_eq!(step, want, "rd_ptr step (seed {seed:#x})");
            for k in 0..step {
                buffer[((released_total + k) % BEATS) as usize] = rng.bytes(64).try_into().unwrap();
            }
            released_total += step;
            used_beats -= step;
            rd_seen = rd;
        }
        if jobs.len() >= n_jobs
            && taken == jobs.len()
            && ack_jobs.is_empty()
            && ev_jobs.is_empty()
            && fence_jobs.iter().all(|q| q.is_empty())
            && b_pending.is_empty()
            && aws.is_empty()
        {
            let planned: u64 = jobs.iter().map(|x| x.beats).sum();
            if beats_written == planned {
                break;
            }
        }
    }
    assert!(releases_expected.is_empty(), "{} releases missing", releases_expected.len());
    assert!(evs_seen > 20, "only {evs_seen} events in the stream");
    assert!(fences_seen.iter().all(|n| *n >= 5), "barrier pulses (bar, res): {fences_seen:?}");
    assert!(idle_hi > 200 && idle_lo > 1000, "idle high {idle_hi} cycles, low {idle_lo}");
    // Each kind-3 job's beat: exactly its 8 strobes (jobs have regions of their own).
    let mut leads = [0usize; 8];
    for job in jobs.iter().filter(|x| x.kind == 3) {
        let base = job.addr & !63;
        let lead = job.addr % 64;
        leads[(lead / 8) as usize] += 1;
        let strobes: Vec<u64> = beat_strobes.iter().filter(|(a, _)| *a == base).map(|(_, s)| *s).collect();
        assert_eq!(strobes, vec![0xFFu64 << lead], "kind-3 job at {:#x}: strobes (seed {seed:#x})", job.addr);
    }
    assert!(leads.iter().all(|n| *n > 0), "8-byte values at each position in a beat: {leads:?}");
    // Host memory: exactly the payloads and CQEs.
    let mut want: HashMap<u64, u8> = HashMap::new();
    for (j, job) in jobs.iter().enumerate() {
        match job.kind {
            0 => {
                for (i, b) in payloads[j].iter().enumerate() {
                    want.insert(job.addr + i as u64, *b);
                }
            }
            1 => {
                for (i, b) in job.cqe.iter().enumerate() {
                    want.insert(job.addr + i as u64, *b);
                }
            }
            3 => {
                // `cqe` bits 63..0, little-endian.
                for (i, b) in job.cqe[..8].iter().enumerate() {
                    want.insert(job.addr + i as u64, *b);
                }
            }
            _ => {}
        }
    }
    let mut extra: Vec<u64> = mem.keys().filter(|a| !want.contains_key(a)).copied().collect();
    extra.sort();
    assert!(
        extra.is_empty(),
        "{} bytes written outside any job, first at {:#x} (seed {seed:#x})",
        extra.len(),
        extra[0]
    );
    let mut wrong: Vec<(u64, u8, Option<u8>)> =
        want.iter().filter(|(a, v)| mem.get(a) != Some(v)).map(|(a, v)| (*a, *v, mem.get(a).copied())).collect();
    wrong.sort();
    if let Some((a, v, g)) = wrong.first() {
        let len = |x: &Job| match x.kind {
            1 => 32,
            3 => 8,
            _ => x.plen as u64,
        };
        let j = jobs.iter().position(|x| x.kind != 2 && x.addr <= *a && *a < x.addr + len(x)).unwrap();
        let job = &jobs[j];
        panic!(
            "{} bytes wrong, first at {a:#x}: want {v:#04x} got {g:x?}; job {j}: kind {} addr {:#x} plen {} off {} start {} (seed {seed:#x})",
            wrong.len(),
            job.kind,
            job.addr,
            job.plen,
            job.off,
            job.start
        );
    }
}
