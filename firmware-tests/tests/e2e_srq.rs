//! End-to-end shared receive queues (IBTA Vol 1 10.2.9; ibv_create_srq(3),
//! ibv_post_srq_recv(3), ibv_modify_srq(3), ibv_get_async_event(3)): QPs built on one SRQ take
//! their receive WQEs from it, in the order incoming messages start, whatever QP they arrive
//! on; completions go to each QP's receive CQ with its own QP number; the SRQ's limit event
//! fires once when a WQE taken leaves fewer than the limit posted, then the SRQ is disarmed.
mod common;

use common::{first_difference, pattern, Hosts};
use rnic::{
    AccessFlags, AsyncEvent, CompletionQueue, ConnectOptions, Errno, Mtu, QpAttr, QpAttrMask, QpState, QueuePair,
    RecvWr, SendWr, SharedReceiveQueue, WcFlags, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const GUARD: u8 = 0xEE;

/// `n` QP pairs A_i → B_i, every B_i on `srq` (host B).
fn pairs<'mr>(h: &Hosts, srq: &SharedReceiveQueue<'mr>, n: usize, mtu: Mtu) -> Vec<(QueuePair<'mr>, QueuePair<'mr>)> {
    (0..n)
        .map(|_| {
            let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
            let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).set_srq(srq).build().unwrap();
            let opts = ConnectOptions { path_mtu: mtu, timeout: 8, ..ConnectOptions::default() };
            let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
            qa.connect_with(&eb, &opts).unwrap();
            qb.connect_with(&ea, &opts).unwrap();
            (qa, qb)
        })
        .collect()
}

fn hosts() -> Hosts {
    Hosts::new(SimConfig::default())
}

#[test]
fn qps_on_one_srq_take_its_wqes_in_order_of_arrival() {
    let h = hosts();
    let mut src = pattern(3, 4096);
    let mut dst = vec![GUARD; 8 * 512];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(8, 1).unwrap();
        assert_eq!(srq.query().max_wr, 8);
        let mut qps = pairs(&h, &srq, 2, Mtu::Mtu1024);
        for i in 0..8u64 {
            srq.post_recv_one(RecvWr::new(100 + i, dmr.sge(i as usize * 512..(i as usize + 1) * 512).unwrap()))
                .unwrap();
        }
        assert_eq!(srq.outstanding(), 8);
        // Alternate QPs: message k lands in SRQ WQE k.
        for k in 0..6usize {
            let (qa, _) = &mut qps[k % 2];
            qa.post_send_one(SendWr::send(k as u64, smr.sge(k * 100..k * 100 + 50 + k).unwrap()).signaled(true))
                .unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        }
        let wcs = h.wait(&h.cb, 6, 100_000);
        for (k, w) in wcs.iter().enumerate() {
            assert_eq!(
                (w.wr_id, w.status, w.opcode, w.byte_len),
                (100 + k as u64, WcStatus::Success, WcOpcode::Recv, 50 + k as u32),
                "{w:?}"
            );
            assert_eq!(w.qp_num, qps[k % 2].1.qp_num(), "completion {k} on the QP it arrived on");
        }
        assert_eq!(srq.outstanding(), 2);
    }
    for k in 0..6usize {
        assert_eq!(&dst[k * 512..k * 512 + 50 + k], &src[k * 100..k * 100 + 50 + k], "message {k}");
        assert!(dst[k * 512 + 50 + k..(k + 1) * 512].iter().all(|&b| b == GUARD));
    }
}

#[test]
fn the_limit_event_fires_once_below_the_limit_and_disarms() {
    let h = hosts();
    let mut src = pattern(4, 64);
    let mut dst = vec![GUARD; 16 * 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(16, 1).unwrap();
        let mut qps = pairs(&h, &srq, 1, Mtu::Mtu1024);
        let (qa, _qb) = &mut qps[0];
        for i in 0..10u64 {
            srq.post_recv_one(RecvWr::new(i, dmr.sge(i as usize * 64..(i as usize + 1) * 64).unwrap())).unwrap();
        }
        srq.arm_limit(8).unwrap();
        assert_eq!(srq.query().srq_limit, 8);
        let mut send = |k: u64| {
            qa.post_send_one(SendWr::send(k, smr.sge(0..8).unwrap()).signaled(true)).unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
            assert_eq!(h.wait(&h.cb, 1, 100_000)[0].wr_id, k);
        };
        // 10 -> 9 -> 8 posted: not below 8.
        send(0);
        send(1);
        h.settle(2_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
        // 8 -> 7: below the limit.
        send(2);
        let e = h.b.wait_async_event(100_000).unwrap();
        assert_eq!(e, AsyncEvent::SrqLimitReached { srq_num: srq.srq_num(), wqes_left: 7 });
        assert_eq!(srq.query().srq_limit, 0, "disarmed");
        // Disarmed: no more events.
        send(3);
        send(4);
        h.settle(2_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
        // Re-armed at 4 with 5 posted: 4 left is not below it, 3 is.
        srq.arm_limit(4).unwrap();
        send(5);
        h.settle(2_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
        send(6);
        assert_eq!(
            h.b.wait_async_event(100_000).unwrap(),
            AsyncEvent::SrqLimitReached { srq_num: srq.srq_num(), wqes_left: 3 }
        );
        assert!(srq.arm_limit(17).is_err());
    }
}

// ---- Scenarios: empty SRQ, interleaving, loss, ERR, immediates, limit corners, capture ----

/// `n` pairs as [`pairs`], with `opts` and B's QPs on `cb` (send and receive CQ).
fn pairs_on<'mr>(
    h: &Hosts,
    srq: &SharedReceiveQueue<'mr>,
    n: usize,
    opts: &ConnectOptions,
    cb: &CompletionQueue,
) -> Vec<(QueuePair<'mr>, QueuePair<'mr>)> {
    (0..n)
        .map(|_| {
            let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
            let mut qb = h.pb.create_qp(cb).set_max_send_wr(4).set_srq(srq).build().unwrap();
            let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
            qa.connect_with(&eb, opts).unwrap();
            qb.connect_with(&ea, opts).unwrap();
            (qa, qb)
        })
        .collect()
}

fn opts(mtu: Mtu) -> ConnectOptions {
    // RNR timer code 1 (0.01 ms) so RNR NAK retries come quickly.
    ConnectOptions { path_mtu: mtu, timeout: 8, min_rnr_timer: 1, ..ConnectOptions::default() }
}

fn to_err(qp: &mut QueuePair<'_>) {
    qp.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
}

/// Everything `cq` holds after `settle` cycles.
fn drain(h: &Hosts, cq: &CompletionQueue, settle: u64) -> Vec<WorkCompletion> {
    h.settle(settle);
    let mut out = Vec::new();
    let mut wcs = [WorkCompletion::default(); 16];
    loop {
        let n = cq.poll(&mut wcs).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&wcs[..n]);
    }
}

/// (wr_id, status, opcode, byte_len, qp_num) of a completion, for compact comparisons.
fn brief(w: &WorkCompletion) -> (u64, WcStatus, WcOpcode, u32, u32) {
    (w.wr_id, w.status, w.opcode, w.byte_len, w.qp_num)
}

/// xorshift64*: the tests' own deterministic random numbers.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// IBTA 9.7.5.2.8 / 10.2.9: a SEND on a QP whose SRQ is empty draws RNR NAKs (syndrome
/// 001 + the responder's min_rnr_timer) exactly as an empty RQ would, nothing is written and
/// nothing completes; once a WQE is posted to the SRQ the resent SEND lands in it.
#[test]
fn a_send_on_an_empty_srq_draws_rnr_naks_then_completes_once_a_wqe_is_posted() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("srq_rnr.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(11, 300);
    let mut dst = vec![GUARD; 512];
    let (qa_num, qb_num, rnr_naks);
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(4, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
        let (qa, qb) = &mut qps[0];
        (qa_num, qb_num) = (qa.qp_num(), qb.qp_num());
        qa.post_send_one(SendWr::send(7, smr.sge(0..300).unwrap()).signaled(true)).unwrap();
        // The requester resends after each RNR NAK: wait for the second.
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 2, 200_000), "no RNR NAKs: {}", h.diag());
        assert!(drain(&h, &h.cb, 0).is_empty(), "nothing completes on B while the SRQ is empty");
        assert!(drain(&h, &h.ca, 0).is_empty(), "the SEND waits (rnr_retry 7: forever)");
        srq.post_recv_one(RecvWr::new(70, dmr.sge(0..512).unwrap())).unwrap();
        let s = h.wait(&h.ca, 1, 300_000);
        assert_eq!((s[0].wr_id, s[0].status, s[0].opcode), (7, WcStatus::Success, WcOpcode::Send));
        let r = h.wait(&h.cb, 1, 100_000);
        assert_eq!(brief(&r[0]), (70, WcStatus::Success, WcOpcode::Recv, 300, qb_num));
        assert_eq!(srq.outstanding(), 0);
        assert_eq!(qb.stray_completions(), 0);
        h.settle(2_000);
        rnr_naks = h.b.counter(counter::TX_RNR_NAKS).unwrap();
        assert_eq!(h.a.counter(counter::RX_RNR_NAKS).unwrap(), rnr_naks, "{}", h.diag());
    }
    h.world.borrow_mut().finish().unwrap();
    assert_eq!(&dst[..300], &src[..]);
    assert!(dst[300..].iter().all(|&b| b == GUARD));
    // On the wire: SEND ONLY, RNR NAK, SEND ONLY, ... , SEND ONLY, ACK.
    let frames = common::frames::read(&pcap);
    let sends: Vec<_> = frames.iter().filter(|f| f.dest_qp == qb_num).collect();
    let acks: Vec<_> = frames.iter().filter(|f| f.dest_qp == qa_num).collect();
    assert!(sends.iter().all(|f| f.opcode == 0x04 && f.psn == sends[0].psn), "{sends:?}");
    assert_eq!(sends.len() as u32, rnr_naks + 1, "each RNR NAK is answered by one resend");
    let (last, naks) = acks.split_last().unwrap();
    assert_eq!(naks.len() as u32, rnr_naks);
    for f in naks {
        assert_eq!(
            (f.opcode, f.psn, f.aeth.map(|a| a.0)),
            (common::frames::ACKNOWLEDGE, sends[0].psn, Some(0x20 | 1)),
            "RNR NAK with min_rnr_timer 1: {f:?}"
        );
    }
    assert_eq!(
        (last.opcode, last.aeth.map(|a| a.0 >> 5)),
        (common::frames::ACKNOWLEDGE, Some(0)),
        "the final ACK: {last:?}"
    );
}

/// Two QPs on one SRQ, MTU 256, two messages of several packets on each, all posted before
/// any polling; `drops` are scripted losses of NIC 0's frames. The k-th message to start at
/// the responder (its first SEND FIRST/ONLY in the capture, retransmissions aside) must take
/// SRQ WQE k, land whole in that WQE's buffer and complete on its own QP with its length.
fn interleaved_sends(drops: Vec<(usize, u64)>, name: &str) -> Vec<(u32, u64)> {
    const SLOT: usize = 2048;
    let lens = [[1000usize, 520], [900, 300]];
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join(name);
    let faults = rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() };
    let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(21, 4096);
    let mut dst = vec![GUARD; 6 * SLOT];
    // Message (q, i) is lens[q][i] bytes from src offset 1024 * (2q + i).
    let off = |q: usize, i: usize| 1024 * (2 * q + i);
    let (qb_nums, wcs);
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(8, 1).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu256) };
        let mut qps = pairs_on(&h, &srq, 2, &o, &h.cb);
        qb_nums = [qps[0].1.qp_num(), qps[1].1.qp_num()];
        for k in 0..6u64 {
            srq.post_recv_one(RecvWr::new(100 + k, dmr.sge(k as usize * SLOT..(k as usize + 1) * SLOT).unwrap()))
                .unwrap();
        }
        for (q, (qa, _)) in qps.iter_mut().enumerate() {
            let wrs: Vec<SendWr> = (0..2)
                .map(|i| {
                    SendWr::send((q * 2 + i) as u64, smr.sge(off(q, i)..off(q, i) + lens[q][i]).unwrap()).signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
        }
        let s = h.wait(&h.ca, 4, 1_000_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}\n{}", h.diag());
        wcs = h.wait(&h.cb, 4, 200_000);
        assert!(drain(&h, &h.cb, 5_000).is_empty(), "stray receive completions");
        assert_eq!(srq.outstanding(), 2, "{wcs:?}");
        for (_, qb) in &qps {
            assert_eq!(qb.stray_completions(), 0);
        }
    }
    h.world.borrow_mut().finish().unwrap();
    // The order messages started at the responder, from the capture: (QP index, message
    // index). A FIRST/ONLY is accepted in its last transmission (the only losses are the
    // scripted ones, and a copy is resent only when the one before it was not taken).
    let frames = common::frames::read(&pcap);
    let mut last = std::collections::BTreeMap::new();
    for (i, f) in frames.iter().enumerate() {
        if let Some(q) = qb_nums.iter().position(|&n| n == f.dest_qp) {
            if f.opcode == 0x00 || f.opcode == 0x04 {
                last.insert((q, f.psn), i);
            }
        }
    }
    let mut starts: Vec<(usize, usize, u32)> = last.iter().map(|(&(q, psn), &i)| (i, q, psn)).collect();
    starts.sort_unstable();
    let mut started = [0usize; 2];
    let mut order = Vec::new();
    // Per QP, messages start in PSN order.
    let mut by_psn: Vec<(usize, u32)> = starts.iter().map(|&(_, q, psn)| (q, psn)).collect();
    by_psn.sort_unstable();
    for &(_, q, psn) in &starts {
        let i = by_psn.iter().filter(|&&(q2, p2)| q2 == q && p2 < psn).count();
        order.push((q, i));
        started[q] += 1;
    }
    assert_eq!(started, [2, 2]);
    assert_eq!(order.len(), 4, "{frames:?}");
    let mut got = Vec::new();
    for w in &wcs {
        let k = (w.wr_id - 100) as usize;
        assert!(
            k < 4,
            "completion of an SRQ WQE no message should have taken: {w:?} (start order {order:?}, all {wcs:?})"
        );
        let (q, i) = order[k];
        assert_eq!(
            brief(w),
            (100 + k as u64, WcStatus::Success, WcOpcode::Recv, lens[q][i] as u32, qb_nums[q]),
            "WQE {k} was taken by message {i} of QP {q} (start order {order:?}); all: {wcs:?}"
        );
        let slot = &dst[k * SLOT..(k + 1) * SLOT];
        assert_eq!(
            first_difference(&slot[..lens[q][i]], &src[off(q, i)..off(q, i) + lens[q][i]]),
            None,
            "WQE {k}: message {i} of QP {q}"
        );
        assert!(slot[lens[q][i]..].iter().all(|&b| b == GUARD), "WQE {k}: written past the message");
        got.push((w.qp_num, w.wr_id));
    }
    let mut ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [100, 101, 102, 103], "each of the first four WQEs used once");
    assert!(dst[4 * SLOT..].iter().all(|&b| b == GUARD), "WQEs 4 and 5 untouched");
    got
}

/// Lossless: the requester sends each QP's doorbell's messages back to back, so messages start
/// in posting order; each lands in its WQE.
#[test]
fn multi_packet_sends_on_two_qps_each_land_whole_in_the_wqe_taken_at_their_first_packet() {
    interleaved_sends(Vec::new(), "srq_multi.pcap");
}

/// QP 0's first message (4 packets at MTU 256) loses its first MIDDLE (NIC 0's frame 1), so
/// QP 1's two messages start and finish while QP 0's is still open (go-back-N resends its
/// rest afterwards): QP 1's messages must take WQEs 1 and 2, not the WQE QP 0's message holds.
#[test]
fn a_send_interleaved_inside_another_qps_open_message_takes_the_next_srq_wqe() {
    interleaved_sends(vec![(0, 1)], "srq_interleaved.pcap");
}

/// Four QPs on one SRQ over a lossy wire (1% of frames dropped, short ACK timeout): a few
/// hundred SENDs of random sizes (0..=1100 bytes, MTU 256: up to five packets) spread over
/// the QPs, the SRQ kept topped up with a fresh WQE per receive completion. Every message
/// arrives once, whole, in a WQE of its own, on its own QP, in its QP's order; every WQE
/// posted is used exactly once; nothing stray completes.
#[test]
fn four_qps_share_one_srq_over_a_lossy_wire() {
    srq_stress(4, 0x5EED_0005);
}

/// The same with one QP: no two messages ever overlap at the responder, so this isolates
/// loss, retransmission and reposting from sharing.
#[test]
fn one_qp_on_an_srq_over_a_lossy_wire() {
    srq_stress(1, 0x5EED_0001);
}

/// [`four_qps_share_one_srq_over_a_lossy_wire`] with `nq` QPs and fault seed `seed`.
fn srq_stress(nq: usize, seed: u64) {
    const N: usize = 240;
    const SLOT: usize = 1152;
    const DEPTH: usize = 32;
    let faults = rnic_sim::FaultConfig { drop_probability: 0.01, seed, ..Default::default() };
    let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Message m: on QP qp[m], len[m] bytes from src offset m * SLOT.
    let qp: Vec<usize> = (0..N).map(|_| rng.below(nq as u64) as usize).collect();
    let len: Vec<usize> = (0..N).map(|_| rng.below(1101) as usize).collect();
    let mut src = pattern(31, N * SLOT);
    let mut dst = vec![GUARD; N * SLOT];
    // (wr_id, message) of each receive completion.
    let mut landed: Vec<(u64, usize)> = Vec::new();
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let cb = h.b.create_cq(256).unwrap();
        let srq = h.pb.create_srq(DEPTH as u32, 1).unwrap();
        let o = ConnectOptions { timeout: 5, ..opts(Mtu::Mtu256) };
        let mut qps = pairs_on(&h, &srq, nq, &o, &cb);
        let qb_nums: Vec<u32> = qps.iter().map(|(_, b)| b.qp_num()).collect();
        let qa_nums: Vec<u32> = qps.iter().map(|(a, _)| a.qp_num()).collect();
        let per_qp: Vec<Vec<usize>> = (0..nq).map(|q| (0..N).filter(|&m| qp[m] == q).collect()).collect();
        let recv_wr = |w: usize| RecvWr::new(w as u64, dmr.sge(w * SLOT..(w + 1) * SLOT).unwrap());
        let mut posted = 0;
        while posted < DEPTH {
            srq.post_recv_one(recv_wr(posted)).unwrap();
            posted += 1;
        }
        let (mut sent, mut send_done, mut recvd) = ([0usize; 4], [0usize; 4], [0usize; 4]);
        let mut wcs = [WorkCompletion::default(); 16];
        let start = h.world.borrow().cycles();
        while recvd.iter().sum::<usize>() < N || send_done.iter().sum::<usize>() < N {
            for q in 0..nq {
                while sent[q] < per_qp[q].len() && sent[q] - send_done[q] < 6 {
                    let m = per_qp[q][sent[q]];
                    qps[q]
                        .0
                        .post_send_one(
                            SendWr::send(m as u64, smr.sge(m * SLOT..m * SLOT + len[m]).unwrap()).signaled(true),
                        )
                        .unwrap();
                    sent[q] += 1;
                }
            }
            let n = h.ca.poll(&mut wcs).unwrap();
            for w in &wcs[..n] {
                let q = qa_nums.iter().position(|&x| x == w.qp_num).expect("a send completion of one of our QPs");
                assert_eq!(
                    (w.wr_id, w.status),
                    (per_qp[q][send_done[q]] as u64, WcStatus::Success),
                    "QP {q}: {w:?}\n{}",
                    h.diag()
                );
                send_done[q] += 1;
            }
            let n = cb.poll(&mut wcs).unwrap();
            for w in &wcs[..n] {
                let q = qb_nums.iter().position(|&x| x == w.qp_num).expect("a receive completion of one of our QPs");
                assert!(recvd[q] < per_qp[q].len(), "QP {q}: more receive completions than messages: {w:?}");
                let m = per_qp[q][recvd[q]];
                assert_eq!(
                    (w.status, w.opcode, w.byte_len),
                    (WcStatus::Success, WcOpcode::Recv, len[m] as u32),
                    "QP {q}'s message {} (#{m}) landed in WQE {}\n{}",
                    recvd[q],
                    w.wr_id,
                    h.diag()
                );
                assert!((w.wr_id as usize) < posted, "WQE {} was never posted", w.wr_id);
                assert!(
                    landed.iter().all(|&(x, _)| x != w.wr_id),
                    "WQE {} completed twice (again for message #{m} on QP {q}): {landed:?}",
                    w.wr_id
                );
                landed.push((w.wr_id, m));
                recvd[q] += 1;
                if posted < N {
                    srq.post_recv_one(recv_wr(posted)).unwrap();
                    posted += 1;
                }
            }
            assert!(
                h.world.borrow().cycles() - start < 40_000_000,
                "stuck: sent {sent:?}, send completions {send_done:?}, receive completions {recvd:?}, SRQ outstanding {}\n{}",
                srq.outstanding(),
                h.diag()
            );
            if n == 0 {
                h.settle(64);
            }
        }
        assert_eq!(srq.outstanding(), 0);
        assert!(drain(&h, &cb, 20_000).is_empty(), "stray receive completions");
        assert!(drain(&h, &h.ca, 0).is_empty(), "stray send completions");
        for (a, b) in &qps {
            assert_eq!((a.stray_completions(), b.stray_completions()), (0, 0));
        }
        let (ca, cbc) = h.counters();
        assert!(ca.values[counter::RETRANSMITS as usize] > 0, "the wire lost nothing: {}", h.diag());
        assert_eq!(cbc.values[counter::TX_RNR_NAKS as usize], 0, "the SRQ never ran dry");
    }
    let mut ids: Vec<u64> = landed.iter().map(|&(w, _)| w).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N as u64).collect::<Vec<_>>(), "every WQE used exactly once");
    for &(w, m) in &landed {
        let slot = &dst[w as usize * SLOT..(w as usize + 1) * SLOT];
        assert_eq!(
            first_difference(&slot[..len[m]], &src[m * SLOT..m * SLOT + len[m]]),
            None,
            "message #{m} in WQE {w}"
        );
        assert!(slot[len[m]..].iter().all(|&b| b == GUARD), "WQE {w}: written past message #{m}");
    }
}

/// IBTA 10.2.9.5 / ibv_create_qp(3): moving a QP on an SRQ to ERR flushes none of the SRQ's
/// WQEs (they belong to the SRQ); another QP on it keeps receiving into the next ones.
#[test]
fn a_qp_on_the_srq_moved_to_err_flushes_no_srq_wqe() {
    let h = hosts();
    let mut src = pattern(41, 1024);
    let mut dst = vec![GUARD; 8 * 512];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(8, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 2, &opts(Mtu::Mtu1024), &h.cb);
        for k in 0..6u64 {
            srq.post_recv_one(RecvWr::new(k, dmr.sge(k as usize * 512..(k as usize + 1) * 512).unwrap())).unwrap();
        }
        let qb_nums = [qps[0].1.qp_num(), qps[1].1.qp_num()];
        qps[0].0.post_send_one(SendWr::send(1, smr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        assert_eq!(brief(&h.wait(&h.cb, 1, 100_000)[0]), (0, WcStatus::Success, WcOpcode::Recv, 64, qb_nums[0]));
        assert_eq!(srq.outstanding(), 5);
        to_err(&mut qps[0].1);
        let flushed = drain(&h, &h.cb, 50_000);
        assert!(flushed.is_empty(), "a QP in ERR flushed SRQ WQEs: {flushed:?}");
        assert_eq!(srq.outstanding(), 5);
        assert_eq!(qps[0].1.state(), QpState::Err);
        // The other QP takes WQEs 1 and 2.
        for k in 0..2u64 {
            qps[1]
                .0
                .post_send_one(
                    SendWr::send(10 + k, smr.sge(100 + k as usize..200 + 2 * k as usize).unwrap()).signaled(true),
                )
                .unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
            assert_eq!(
                brief(&h.wait(&h.cb, 1, 100_000)[0]),
                (1 + k, WcStatus::Success, WcOpcode::Recv, 100 + k as u32, qb_nums[1])
            );
        }
        assert_eq!(srq.outstanding(), 3);
        assert!(drain(&h, &h.cb, 20_000).is_empty());
        assert_eq!((qps[0].1.stray_completions(), qps[1].1.stray_completions()), (0, 0));
    }
    assert_eq!(&dst[..64], &src[..64]);
    assert_eq!(&dst[512..612], &src[100..200]);
    assert_eq!(&dst[1024..1125], &src[101..202]);
    assert!(dst[1125..].iter().all(|&b| b == GUARD));
}

/// SEND with immediate and RDMA WRITE with immediate on an SRQ QP each consume the next SRQ
/// WQE: IBV_WC_RECV / IBV_WC_RECV_RDMA_WITH_IMM with IBV_WC_WITH_IMM and the ImmDt; the
/// WRITE's payload goes where its RETH points, its WQE's buffer stays untouched.
#[test]
fn immediates_consume_srq_wqes() {
    let h = hosts();
    let mut src = pattern(51, 2048);
    let mut dst = vec![GUARD; 4 * 512];
    let mut target = vec![GUARD; 1024];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let tmr = h.pb.register(&mut target, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let srq = h.pb.create_srq(4, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu256), &h.cb);
        let (qa, qb) = &mut qps[0];
        for k in 0..4u64 {
            srq.post_recv_one(RecvWr::new(20 + k, dmr.sge(k as usize * 512..(k as usize + 1) * 512).unwrap())).unwrap();
        }
        let remote = qb.endpoint().unwrap().with_buffer(&tmr).buffer.unwrap();
        let wrs = [
            SendWr::send(1, smr.sge(0..300).unwrap())
                .with_opcode(WrOpcode::SendWithImm)
                .with_imm(0xA1B2_C3D4)
                .signaled(true),
            SendWr::rdma_write(2, smr.sge(300..1000).unwrap(), remote.at(100))
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(0x0BAD_F00D)
                .signaled(true),
            SendWr::rdma_write(3, smr.sge(1000..1010).unwrap(), remote.at(900)).signaled(true),
            SendWr::send(4, smr.sge(1100..1200).unwrap()).signaled(true),
        ];
        qa.post_send(&wrs).unwrap();
        let s = h.wait(&h.ca, 4, 200_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 3, 100_000);
        let qn = qb.qp_num();
        assert_eq!(brief(&r[0]), (20, WcStatus::Success, WcOpcode::Recv, 300, qn));
        assert_eq!((r[0].imm_data, r[0].wc_flags.contains(WcFlags::WITH_IMM)), (0xA1B2_C3D4, true));
        assert_eq!(brief(&r[1]), (21, WcStatus::Success, WcOpcode::RecvRdmaWithImm, 700, qn));
        assert_eq!((r[1].imm_data, r[1].wc_flags.contains(WcFlags::WITH_IMM)), (0x0BAD_F00D, true));
        assert_eq!(brief(&r[2]), (22, WcStatus::Success, WcOpcode::Recv, 100, qn), "the plain WRITE took no WQE");
        assert!(!r[2].wc_flags.contains(WcFlags::WITH_IMM));
        assert_eq!(srq.outstanding(), 1);
        assert!(drain(&h, &h.cb, 5_000).is_empty());
    }
    assert_eq!(&dst[..300], &src[..300]);
    assert!(dst[300..1024].iter().all(|&b| b == GUARD), "the WRITE with immediate's WQE buffer is untouched");
    assert_eq!(&dst[1024..1124], &src[1100..1200]);
    assert!(dst[1124..].iter().all(|&b| b == GUARD));
    assert_eq!(&target[100..800], &src[300..1000]);
    assert_eq!(&target[900..910], &src[1000..1010]);
    assert!(target[..100].iter().chain(&target[800..900]).chain(&target[910..]).all(|&b| b == GUARD));
}

/// A limit armed while the SRQ already holds fewer WQEs fires only when a WQE is taken: not
/// on arming, not on an RNR NAK (an empty SRQ gives no WQE).
#[test]
fn a_limit_armed_below_fires_only_when_a_wqe_is_taken() {
    let h = hosts();
    let mut src = pattern(61, 64);
    let mut dst = vec![GUARD; 4 * 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(4, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
        let (qa, _qb) = &mut qps[0];
        // Empty SRQ, limit 2: nothing fires on arming, nor on the RNR NAKs of a SEND.
        srq.arm_limit(2).unwrap();
        h.settle(5_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None, "fired on arming");
        qa.post_send_one(SendWr::send(1, smr.sge(0..8).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 2, 200_000), "{}", h.diag());
        assert_eq!(h.b.poll_async_event().unwrap(), None, "fired on an RNR NAK: no WQE was taken");
        assert_eq!(srq.query().srq_limit, 2);
        // One WQE posted (still below 2): the resent SEND takes it, leaving 0 < 2: fires.
        srq.post_recv_one(RecvWr::new(5, dmr.sge(0..64).unwrap())).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 300_000)[0].status, WcStatus::Success);
        assert_eq!(h.wait(&h.cb, 1, 100_000)[0].wr_id, 5);
        assert_eq!(
            h.b.wait_async_event(100_000).unwrap(),
            AsyncEvent::SrqLimitReached { srq_num: srq.srq_num(), wqes_left: 0 }
        );
        assert_eq!(srq.query().srq_limit, 0);
        h.settle(5_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None, "once");
    }
}

/// An RDMA WRITE (without immediate) on an SRQ QP takes no WQE, so it must not fire an armed
/// limit the SRQ is already below; the next SEND does.
#[test]
fn an_rdma_write_without_immediate_fires_no_limit_event() {
    let h = hosts();
    let mut src = pattern(62, 64);
    let mut dst = vec![GUARD; 4 * 64];
    let mut target = vec![GUARD; 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let tmr = h.pb.register(&mut target, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let srq = h.pb.create_srq(4, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
        let (qa, qb) = &mut qps[0];
        let remote = qb.endpoint().unwrap().with_buffer(&tmr).buffer.unwrap();
        srq.post_recv_one(RecvWr::new(5, dmr.sge(0..64).unwrap())).unwrap();
        srq.arm_limit(3).unwrap();
        qa.post_send_one(SendWr::rdma_write(1, smr.sge(0..16).unwrap(), remote.at(0)).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        h.settle(5_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None, "an RDMA WRITE took no WQE but fired the limit event");
        assert_eq!(srq.outstanding(), 1);
        qa.post_send_one(SendWr::send(2, smr.sge(16..24).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        assert_eq!(h.wait(&h.cb, 1, 100_000)[0].wr_id, 5);
        assert_eq!(
            h.b.wait_async_event(100_000).unwrap(),
            AsyncEvent::SrqLimitReached { srq_num: srq.srq_num(), wqes_left: 0 }
        );
    }
    assert_eq!(&target[..16], &src[..16]);
    assert_eq!(&dst[..8], &src[16..24]);
}

/// Two SRQs, each armed: each fires its own event, told apart by srq_num, and only when one
/// of its own WQEs is taken.
#[test]
fn two_srqs_fire_separate_limit_events() {
    let h = hosts();
    let mut src = pattern(63, 64);
    let mut dst = vec![GUARD; 8 * 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let cb = h.b.create_cq(64).unwrap();
        let s1 = h.pb.create_srq(4, 1).unwrap();
        let s2 = h.pb.create_srq(4, 1).unwrap();
        assert_ne!(s1.srq_num(), s2.srq_num());
        let mut p1 = pairs_on(&h, &s1, 1, &opts(Mtu::Mtu1024), &h.cb);
        let mut p2 = pairs_on(&h, &s2, 1, &opts(Mtu::Mtu1024), &cb);
        for k in 0..4u64 {
            s1.post_recv_one(RecvWr::new(10 + k, dmr.sge(k as usize * 64..(k as usize + 1) * 64).unwrap())).unwrap();
            s2.post_recv_one(RecvWr::new(20 + k, dmr.sge((4 + k as usize) * 64..(5 + k as usize) * 64).unwrap()))
                .unwrap();
        }
        s1.arm_limit(3).unwrap();
        s2.arm_limit(2).unwrap();
        assert_eq!(s1.arm_limit(5).unwrap_err().errno(), Errno::EINVAL, "above max_wr 4");
        assert_eq!(s1.query().srq_limit, 3, "a refused arm_limit changes nothing");
        let mut send = |which: usize, id: u64| {
            let (qa, cq) = if which == 1 { (&mut p1[0].0, &h.cb) } else { (&mut p2[0].0, &cb) };
            qa.post_send_one(SendWr::send(id, smr.sge(0..8).unwrap()).signaled(true)).unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
            h.wait(cq, 1, 100_000)[0].wr_id
        };
        // SRQ 2: 4 -> 3 -> 2 (not below 2), then 1: fires; SRQ 1 (limit 3) stays quiet.
        assert_eq!(send(2, 1), 20);
        assert_eq!(send(2, 2), 21);
        h.settle(3_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
        assert_eq!(send(2, 3), 22);
        assert_eq!(
            h.b.wait_async_event(100_000).unwrap(),
            AsyncEvent::SrqLimitReached { srq_num: s2.srq_num(), wqes_left: 1 }
        );
        h.settle(3_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None, "SRQ 1 is at 4, above its limit 3");
        assert_eq!((s1.query().srq_limit, s2.query().srq_limit), (3, 0));
        // SRQ 1: 4 -> 3 (not below 3), then 2: fires with its own number.
        assert_eq!(send(1, 4), 10);
        h.settle(3_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
        assert_eq!(send(1, 5), 11);
        assert_eq!(
            h.b.wait_async_event(100_000).unwrap(),
            AsyncEvent::SrqLimitReached { srq_num: s1.srq_num(), wqes_left: 2 }
        );
        h.settle(3_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None);
    }
}

/// An SRQ dropped (with its QPs) while armed and holding WQEs, and created again with the
/// same number, starts empty and disarmed: a SEND draws RNR NAKs instead of landing in a
/// stale WQE, and taking its WQEs fires nothing.
#[test]
fn a_recreated_srq_starts_empty_and_disarmed() {
    let h = hosts();
    let mut src = pattern(64, 64);
    let mut dst = vec![GUARD; 8 * 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let old_num = {
            let srq = h.pb.create_srq(8, 1).unwrap();
            let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
            for k in 0..6u64 {
                srq.post_recv_one(RecvWr::new(k, dmr.sge(k as usize * 64..(k as usize + 1) * 64).unwrap())).unwrap();
            }
            srq.arm_limit(5).unwrap();
            qps[0].0.post_send_one(SendWr::send(1, smr.sge(0..8).unwrap()).signaled(true)).unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
            assert_eq!(h.wait(&h.cb, 1, 100_000)[0].wr_id, 0);
            // 6 -> 5: not below 5, still armed with 5 WQEs posted.
            h.settle(3_000);
            assert_eq!(h.b.poll_async_event().unwrap(), None);
            srq.srq_num()
        };
        let srq = h.pb.create_srq(8, 1).unwrap();
        assert_eq!(srq.srq_num(), old_num, "the number is reused");
        assert_eq!(srq.query().srq_limit, 0);
        assert_eq!(srq.outstanding(), 0);
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
        let rnr0 = h.b.counter(counter::TX_RNR_NAKS).unwrap();
        qps[0].0.post_send_one(SendWr::send(2, smr.sge(8..16).unwrap()).signaled(true)).unwrap();
        assert!(
            h.wait_counter(&h.b, counter::TX_RNR_NAKS, rnr0 + 1, 200_000),
            "the new SRQ is not empty: {}",
            h.diag()
        );
        assert!(drain(&h, &h.cb, 0).is_empty(), "a stale WQE of the old SRQ completed");
        srq.post_recv_one(RecvWr::new(40, dmr.sge(7 * 64..8 * 64).unwrap())).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 300_000)[0].status, WcStatus::Success);
        assert_eq!(brief(&h.wait(&h.cb, 1, 100_000)[0]), (40, WcStatus::Success, WcOpcode::Recv, 8, qps[0].1.qp_num()));
        h.settle(5_000);
        assert_eq!(h.b.poll_async_event().unwrap(), None, "the new SRQ is disarmed (the old one's limit 5 is gone)");
    }
    assert_eq!(&dst[..8], &src[..8]);
    assert!(dst[8..7 * 64].iter().all(|&b| b == GUARD), "no stale WQE of the old SRQ was written");
    assert_eq!(&dst[7 * 64..7 * 64 + 8], &src[8..16]);
}

/// Driver checks that need QPs connected on the NIC: post_recv on an SRQ QP, and the SRQ's
/// own post_recv limits, post nothing past the refused WR (the next SEND lands in the first
/// WQE posted, and no refused WR reaches the NIC).
#[test]
fn driver_refusals_on_srq_qps_post_nothing() {
    let h = hosts();
    let mut src = pattern(71, 64);
    let mut dst = vec![GUARD; 4 * 64];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let srq = h.pb.create_srq(2, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 1, &opts(Mtu::Mtu1024), &h.cb);
        let (qa, qb) = &mut qps[0];
        let wr = RecvWr::new(9, dmr.sge(0..64).unwrap());
        assert_eq!(qb.post_recv_one(wr).unwrap_err().errno(), Errno::EINVAL, "post_recv on an SRQ QP");
        // A 64-byte receive WQE holds 3 scatter entries (the SRQ's max_sge): 4 are refused.
        let four = RecvWr::with_sg_list(8, &[dmr.sge(0..16).unwrap(); 4]).unwrap();
        let e = srq.post_recv(&[four, wr]).unwrap_err();
        assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 0), "four SGEs, max_sge 3: nothing posted");
        assert_eq!(srq.outstanding(), 0);
        // 3 WRs, 2 slots: the first two are posted (ibv_post_srq_recv's bad_wr semantics).
        let (w1, w2) = (RecvWr::new(1, dmr.sge(64..128).unwrap()), RecvWr::new(2, dmr.sge(128..192).unwrap()));
        let e = srq.post_recv(&[w1, w2, wr]).unwrap_err();
        assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 2), "3 WRs, 2 slots");
        assert_eq!(srq.outstanding(), 2);
        assert_eq!(srq.post_recv_one(wr).unwrap_err().errno(), Errno::ENOMEM, "full");
        qa.post_send_one(SendWr::send(1, smr.sge(0..10).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        assert_eq!(h.wait(&h.cb, 1, 100_000)[0].wr_id, 1, "the refused WRs were not posted");
        srq.post_recv_one(RecvWr::new(3, dmr.sge(192..256).unwrap())).unwrap();
        assert_eq!(srq.outstanding(), 2);
    }
    assert!(dst[..64].iter().all(|&b| b == GUARD));
    assert_eq!(&dst[64..74], &src[..10]);
}

/// A capture of SRQ traffic (two QPs, RNR NAK on the empty SRQ, multi-packet SENDs, SEND and
/// RDMA WRITE with immediate) is clean in tshark and scapy.
#[test]
fn srq_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::oracle;
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("srq.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(81, 4096);
    let mut dst = vec![GUARD; 8 * 1024];
    let mut target = vec![GUARD; 1024];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let tmr = h.pb.register(&mut target, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let srq = h.pb.create_srq(8, 1).unwrap();
        let mut qps = pairs_on(&h, &srq, 2, &opts(Mtu::Mtu512), &h.cb);
        qps[0].0.post_send_one(SendWr::send(1, smr.sge(0..5).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        for k in 0..6u64 {
            srq.post_recv_one(RecvWr::new(k, dmr.sge(k as usize * 1024..(k as usize + 1) * 1024).unwrap())).unwrap();
        }
        assert_eq!(h.wait(&h.ca, 1, 300_000)[0].status, WcStatus::Success);
        let remote = qps[1].1.endpoint().unwrap().with_buffer(&tmr).buffer.unwrap();
        qps[1]
            .0
            .post_send(&[
                SendWr::send(2, smr.sge(100..1100).unwrap()).signaled(true),
                SendWr::send(3, smr.sge(1100..1400).unwrap())
                    .with_opcode(WrOpcode::SendWithImm)
                    .with_imm(7)
                    .signaled(true),
                SendWr::rdma_write(4, smr.sge(2000..2700).unwrap(), remote.at(0))
                    .with_opcode(WrOpcode::RdmaWriteWithImm)
                    .with_imm(8)
                    .signaled(true),
            ])
            .unwrap();
        qps[0].0.post_send_one(SendWr::send(5, smr.sge(3000..4000).unwrap()).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 4, 300_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 5, 100_000);
        assert!(r.iter().all(|w| w.status == WcStatus::Success), "{r:?}");
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
    assert_eq!(&target[..700], &src[2000..2700]);
}
