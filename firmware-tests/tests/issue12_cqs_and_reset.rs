//! Issue 12, items 5, 6 and 7 as driver-level system tests (two simulated hosts, the Verilated
//! NIC RTL on each, driven through the `rnic` verbs driver):
//!
//! - **3. Retransmissions without loss.** A WRITE behind a READ on one QP: the responder
//!   answers requests in PSN order (IBTA Vol 1 9.5, 9.7.5.1), so the WRITE's ACK never leaves
//!   before the READ's last response, and the requester resends nothing on a perfect wire.
//! - **5. Completions on a second CQ.** Two CQs on one NIC: after CQEs on CQ A, a multi-packet
//!   READ whose QP completes on CQ B must land in B's next slot with B's owner bit, so polling B
//!   returns it and every later CQE of B (IBTA Vol 1 11.4.2.1, ibv_poll_cq(3)); also after CQ B
//!   is destroyed and created again with the same number (its producer index restarts).
//! - **6. State that outlives a QP reset.** An RNR wait armed by an RNR NAK with timer code 0
//!   (655.36 ms) must not survive RESET: after ERR → RESET → reconnect, a WRITE whose first ACK
//!   is lost is resent by the local ACK timeout of the new connection (IBTA Vol 1 9.7.5.2.8,
//!   9.7.6.1.3, 10.3.1: RESET returns every QP attribute and state to its initial value).
//! - **7. The README's claim** that WRITEs outside the remote region (past its end, wrong tag,
//!   unknown key index) complete `IBV_WC_REM_ACCESS_ERR` (NAK remote access error, IBTA Vol 1
//!   9.7.5.2.4, 9.7.4.1.4) and write nothing.
mod common;

use common::{nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, MemoryRegion, Mtu, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr,
    RemoteAddr, SendWr, WcOpcode, WcStatus, WorkCompletion,
};
use rnic_contract::regs::counter;
use rnic_sim::{FaultConfig, SimConfig};

/// Initial content of every local and remote buffer a test reads back.
const GUARD: u8 = 0xEE;

fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions {
        path_mtu: mtu,
        access: AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
        ..ConnectOptions::default()
    }
}

/// An RC QP on host A completing on `cq`, connected to a new QP on host B (CQ `h.cb`, an SQ and
/// an RQ of 8), both with `o`.
fn pair_on<'mr>(h: &Hosts, cq: &CompletionQueue, o: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(cq).set_max_send_wr(16).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, o).unwrap();
    qb.connect_with(&ea, o).unwrap();
    (qa, qb)
}

/// Polls `cq` for exactly `n` completions within `budget` cycles; panics naming the CQ, what
/// arrived and both NICs' counters.
fn take(h: &Hosts, cq: &CompletionQueue, n: usize, budget: u64, what: &str) -> Vec<WorkCompletion> {
    let mut got = Vec::new();
    let mut wcs = [WorkCompletion::default(); 16];
    let start = h.world.borrow().cycles();
    while got.len() < n {
        let k = cq.poll(&mut wcs[..(n - got.len()).min(16)]).unwrap();
        got.extend_from_slice(&wcs[..k]);
        if h.world.borrow().cycles() - start > budget {
            panic!(
                "{what}: CQ {} returned {} of {n} completions within {budget} cycles: {got:?}\n{}",
                cq.cqn(),
                got.len(),
                h.diag()
            );
        }
    }
    got
}

/// Steps the world a little and checks that `cq` holds no further completion.
fn assert_empty(h: &Hosts, cq: &CompletionQueue, what: &str) {
    h.settle(5_000);
    let mut wcs = [WorkCompletion::default(); 4];
    let k = cq.poll(&mut wcs).unwrap();
    assert_eq!(k, 0, "{what}: CQ {} has completions nobody asked for: {:?}", cq.cqn(), &wcs[..k]);
}

/// One round of [`a_multi_packet_read_completes_on_a_second_cq`]: 3 signaled WRITEs on `q1`
/// (CQ A) polled, then a signaled 3,000-byte READ on `q2` (CQ B), then a WRITE, a 5,000-byte
/// READ and a 100-byte READ on `q2` interleaved with a WRITE on `q1`. Reads land at
/// `round × 16 KiB` in `local`; every completion comes on its CQ, in order, once.
#[allow(clippy::too_many_arguments)]
fn second_cq_round<'a>(
    h: &Hosts,
    round: u64,
    (cq_a, cq_b): (&CompletionQueue, &CompletionQueue),
    q1: &mut QueuePair<'a>,
    q2: &mut QueuePair<'a>,
    src_mr: &'a MemoryRegion<'_>,
    local_mr: &'a MemoryRegion<'_>,
    rb: &rnic::RemoteBuffer,
    expect_remote: &[u8],
) {
    let what = format!("round {round} (CQ A = {}, CQ B = {})", cq_a.cqn(), cq_b.cqn());
    let wr_at = |i: u64| rb.at(32 * 1024 + i * 512);
    let base = round * 100;
    let off = round as usize * 16 * 1024;
    let ws: Vec<SendWr<'_>> = (0..3)
        .map(|i| SendWr::rdma_write(base + i, src_mr.sge(0..512).unwrap(), wr_at(round * 8 + i)).signaled(true))
        .collect();
    q1.post_send(&ws).unwrap();
    let a = take(h, cq_a, 3, 300_000, &what);
    assert_eq!(
        a.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        (0..3).map(|i| (base + i, WcStatus::Success)).collect::<Vec<_>>(),
        "{what}"
    );
    q2.post_send_one(
        SendWr::rdma_read(base + 10, local_mr.sge(off..off + 3000).unwrap(), rb.at(off as u64)).signaled(true),
    )
    .unwrap();
    let b = take(h, cq_b, 1, 300_000, &format!("{what}: the 3,000-byte READ on CQ B after 3 CQEs on CQ A"));
    assert_eq!(
        (b[0].wr_id, b[0].status, b[0].opcode, b[0].byte_len, b[0].qp_num),
        (base + 10, WcStatus::Success, WcOpcode::RdmaRead, 3000, q2.qp_num()),
        "{what}: {b:?}"
    );
    // Later CQEs of B, interleaved with CQEs on A.
    q2.post_send(&[
        SendWr::rdma_write(base + 11, src_mr.sge(0..100).unwrap(), wr_at(round * 8 + 3)).signaled(true),
        SendWr::rdma_read(base + 12, local_mr.sge(off + 4096..off + 4096 + 5000).unwrap(), rb.at((off + 4096) as u64))
            .signaled(true),
    ])
    .unwrap();
    q1.post_send_one(SendWr::rdma_write(base + 3, src_mr.sge(0..64).unwrap(), wr_at(round * 8 + 4)).signaled(true))
        .unwrap();
    q2.post_send_one(
        SendWr::rdma_read(base + 13, local_mr.sge(off + 12_000..off + 12_100).unwrap(), rb.at((off + 12_000) as u64))
            .signaled(true),
    )
    .unwrap();
    let b = take(h, cq_b, 3, 400_000, &format!("{what}: later CQEs of B"));
    assert_eq!(
        b.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect::<Vec<_>>(),
        vec![
            (base + 11, WcStatus::Success, WcOpcode::RdmaWrite),
            (base + 12, WcStatus::Success, WcOpcode::RdmaRead),
            (base + 13, WcStatus::Success, WcOpcode::RdmaRead)
        ],
        "{what}"
    );
    let a = take(h, cq_a, 1, 300_000, &what);
    assert_eq!((a[0].wr_id, a[0].status), (base + 3, WcStatus::Success), "{what}");
    assert_empty(h, cq_a, &what);
    assert_empty(h, cq_b, &what);
    let l = local_mr.to_vec();
    for (start, len) in [(off, 3000), (off + 4096, 5000), (off + 12_000, 100)] {
        if let Some(d) = common::first_difference(&l[start..start + len], &expect_remote[start..start + len]) {
            panic!("{what}: READ at +{start}: {d}");
        }
    }
}

/// Item 5: 3 signaled WRITEs on a QP of CQ A (polled), then a signaled 3,000-byte READ at MTU
/// 1024 (3 response packets) on a QP of CQ B: B returns the READ's completion, and then the
/// completions of a WRITE, a second multi-packet READ and a one-packet READ on B, interleaved
/// with more CQEs on A. Then CQ B (and its QP) is destroyed and created again, gets the same
/// CQ number, and the same sequence works on the new CQ.
#[test]
fn a_multi_packet_read_completes_on_a_second_cq() {
    let h = Hosts::new(SimConfig::default());
    let mut remote = pattern(5, 64 * 1024);
    let mut src = pattern(6, 8192);
    let mut local = vec![GUARD; 64 * 1024];
    let expect_remote = remote.clone();
    {
        let remote_mr =
            h.pb.register(&mut remote, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE)
                .unwrap();
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let cq_a = h.a.create_cq(64).unwrap();
        let o = opts(Mtu::Mtu1024);
        let (mut q1, q1b) = pair_on(&h, &cq_a, &o);
        let rb = q1b.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let cq_b = h.a.create_cq(64).unwrap();
        let cqn_b = cq_b.cqn();
        {
            let (mut q2, _q2b) = pair_on(&h, &cq_b, &o);
            second_cq_round(&h, 0, (&cq_a, &cq_b), &mut q1, &mut q2, &src_mr, &local_mr, &rb, &expect_remote);
        }
        drop(cq_b);
        // CQ B again, with the same number: its producer index starts from 0 again.
        let cq_b = h.a.create_cq(64).unwrap();
        assert_eq!(cq_b.cqn(), cqn_b, "the driver reuses the CQ number");
        let (mut q2, _q2b) = pair_on(&h, &cq_b, &o);
        second_cq_round(&h, 1, (&cq_a, &cq_b), &mut q1, &mut q2, &src_mr, &local_mr, &rb, &expect_remote);
    }
    let read = |i: usize| {
        (0..2).any(|r| {
            let off = r * 16 * 1024;
            (off..off + 3000).contains(&i)
                || (off + 4096..off + 9096).contains(&i)
                || (off + 12_000..off + 12_100).contains(&i)
        })
    };
    for (i, &b) in local.iter().enumerate() {
        if !read(i) {
            assert_eq!(b, GUARD, "local byte {i}, outside every READ, changed");
        }
    }
    assert_eq!(remote[..32 * 1024], expect_remote[..32 * 1024]);
}

/// Item 5, the general case: READs of 2+ packets on QPs of 4 CQs, taking turns so that every
/// READ's CQ differs from the CQ of the NIC's previous CQE; each CQ returns exactly its own
/// completions in order.
#[test]
fn multi_packet_reads_alternating_over_four_cqs_each_complete_on_their_cq() {
    let h = Hosts::new(SimConfig::default());
    let mut remote = pattern(9, 64 * 1024);
    let mut local = vec![GUARD; 64 * 1024];
    let expect = remote.clone();
    {
        let remote_mr = h.pb.register(&mut remote, AccessFlags::REMOTE_READ).unwrap();
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let cqs: Vec<CompletionQueue> = (0..4).map(|_| h.a.create_cq(32).unwrap()).collect();
        let o = opts(Mtu::Mtu256);
        let mut pairs: Vec<(QueuePair<'_>, QueuePair<'_>)> = cqs.iter().map(|cq| pair_on(&h, cq, &o)).collect();
        let rb = pairs[0].1.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        for i in 0..24u64 {
            let k = (i % 4) as usize;
            let (off, len) = (i as usize * 2048, 257 + 61 * i as usize);
            let (qa, _) = &mut pairs[k];
            qa.post_send_one(
                SendWr::rdma_read(i, local_mr.sge(off..off + len).unwrap(), rb.at(off as u64)).signaled(true),
            )
            .unwrap();
            let w = take(&h, &cqs[k], 1, 300_000, &format!("READ {i} ({len} B) on CQ {}", cqs[k].cqn()));
            assert_eq!(
                (w[0].wr_id, w[0].status, w[0].byte_len, w[0].qp_num),
                (i, WcStatus::Success, len as u32, qa.qp_num()),
                "{w:?}"
            );
        }
        for cq in &cqs {
            assert_empty(&h, cq, "after 24 READs");
        }
    }
    for i in 0..24usize {
        let (off, len) = (i * 2048, 257 + 61 * i);
        assert_eq!(local[off..off + len], expect[off..off + len], "READ {i}");
        assert!(local[off + len..(i + 1) * 2048].iter().all(|&b| b == GUARD), "READ {i} wrote past its SGE");
    }
}

/// Item 6: RNR NAK with timer code 0 (655.36 ms), the requester's QP to ERR (the SEND is
/// flushed), RESET and a new connection on the same QP (and a fresh one at the responder);
/// a WRITE whose first ACK is lost must be resent by the new connection's local ACK timeout
/// (timeout 5: 4.096 µs × 2^5 = 131 µs = 32,768 cycles), not when the old RNR wait ends.
#[test]
fn an_rnr_wait_armed_before_reset_does_not_hold_the_next_connections_ack_timer() {
    // NIC 1 sends the RNR NAK (frame 0), then the WRITE's ACK (frame 1): that one is lost.
    let h = Hosts::new(SimConfig {
        faults: FaultConfig { drop_frames: vec![(1, 1)], ..FaultConfig::default() },
        ..SimConfig::default()
    });
    let mut src = pattern(1, 256);
    let want = src.clone();
    let mut dst = vec![GUARD; 256];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let o = ConnectOptions { timeout: 5, min_rnr_timer: 0, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = pair_on(&h, &h.ca, &o);
        // No receive posted at B: the SEND draws an RNR NAK with timer code 0.
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.a, counter::RX_RNR_NAKS, 1, 100_000), "no RNR NAK\n{}", h.diag());
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        let f = take(&h, &h.ca, 1, 100_000, "the flushed SEND");
        assert_eq!((f[0].wr_id, f[0].status), (1, WcStatus::WrFlushErr), "{f:?}");
        for q in [&mut qa, &mut qb] {
            q.modify(&QpAttr { qp_state: QpState::Reset, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        }
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&dst_mr));
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        let c0 = h.a.counters().unwrap();
        let t0 = h.world.borrow().cycles();
        qa.post_send_one(SendWr::rdma_write(2, src_mr.sge(0..200).unwrap(), eb.buffer.unwrap().at(0)).signaled(true))
            .unwrap();
        let w = take(&h, &h.ca, 1, 200_000, "the WRITE whose first ACK was lost (resent by the ACK timeout?)");
        assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::Success), "{w:?}");
        let took = h.world.borrow().cycles() - t0;
        let c1 = h.a.counters().unwrap();
        assert_eq!(common::delta(&c1, &c0, counter::TIMEOUTS), 1, "one local ACK timeout: {:?}", nonzero(&c1));
        assert_eq!(common::delta(&c1, &c0, counter::RETRANSMITS), 1, "one resend: {:?}", nonzero(&c1));
        assert!(
            (32_768..32_768 + 20_000).contains(&took),
            "completed {took} cycles after the post; the ACK timeout is 32,768"
        );
        assert_empty(&h, &h.ca, "after the WRITE");
        assert_eq!(dst_mr.to_vec()[..200], want[..200]);
    }
}

/// Item 6 without the loss: after the same RNR NAK, ERR and RESET, a new SEND with a receive
/// posted and a WRITE complete at once, and the old SEND is never resent into the new
/// connection (the responder receives exactly one message).
#[test]
fn a_connection_after_an_rnr_wait_and_reset_carries_nothing_of_it() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(2, 256);
    let want = src.clone();
    let mut dst = vec![GUARD; 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let o = ConnectOptions { timeout: 5, min_rnr_timer: 0, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = pair_on(&h, &h.ca, &o);
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.a, counter::RX_RNR_NAKS, 1, 100_000), "no RNR NAK\n{}", h.diag());
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        assert_eq!(take(&h, &h.ca, 1, 100_000, "the flushed SEND")[0].status, WcStatus::WrFlushErr);
        for q in [&mut qa, &mut qb] {
            q.modify(&QpAttr { qp_state: QpState::Reset, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        }
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&dst_mr));
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        qb.post_recv_one(RecvWr::new(7, dst_mr.sge(256..512).unwrap())).unwrap();
        qa.post_send(&[
            SendWr::send(3, src_mr.sge(64..164).unwrap()).signaled(true),
            SendWr::rdma_write(4, src_mr.sge(0..200).unwrap(), eb.buffer.unwrap().at(0)).signaled(true),
        ])
        .unwrap();
        let w = take(&h, &h.ca, 2, 100_000, "SEND and WRITE on the new connection");
        assert_eq!(
            w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(3, WcStatus::Success), (4, WcStatus::Success)]
        );
        let r = take(&h, &h.cb, 1, 100_000, "the receive");
        assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (7, WcStatus::Success, 100), "{r:?}");
        assert_empty(&h, &h.cb, "at the responder");
        assert_empty(&h, &h.ca, "at the requester");
        let (ca, cb) = h.counters();
        assert_eq!((ca.get("timeouts"), ca.get("retransmits")), (Some(0), Some(0)), "{:?}", nonzero(&ca));
        assert_eq!(cb.get("tx_rnr_naks"), Some(1), "{:?}", nonzero(&cb));
        let d = dst_mr.to_vec();
        assert_eq!(d[..200], want[..200]);
        assert_eq!(d[256..356], want[64..164]);
        assert!(d[356..].iter().all(|&b| b == GUARD));
    }
}

/// Item 7: the README says WRITEs outside the remote region are refused with nothing written,
/// counted, NAKed and completed `IBV_WC_REM_ACCESS_ERR`. Each refused WRITE completes with
/// exactly that status (not "no completion"), the WR behind it is flushed, and no byte of the
/// target changes: past the end by 10 bytes, a multi-packet WRITE (3,000 B at MTU 1024) whose
/// last byte is one past the end, a stale key (wrong tag) and an unknown key index.
#[test]
fn writes_outside_the_remote_region_complete_rem_access_err() {
    type Aim = fn(&rnic::RemoteBuffer) -> RemoteAddr;
    let cases: [(&str, Aim, usize); 4] = [
        ("10 bytes past the end", |b| b.at(b.len - 10), 100),
        ("3,000 bytes ending one past the end", |b| b.at(b.len - 2999), 3000),
        ("a stale rkey (wrong tag)", |b| RemoteAddr { addr: b.addr, rkey: b.rkey ^ 0x80 }, 512),
        ("an unknown rkey index", |b| RemoteAddr { addr: b.addr, rkey: (b.rkey + (17 << 8)) & 0xFFFF }, 512),
    ];
    for (what, aim, len) in cases {
        let h = Hosts::new(SimConfig::default());
        let mut src = pattern(3, 4096);
        let mut dst = vec![GUARD; 4096];
        {
            let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
            let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
            let (mut qa, qb) = pair_on(&h, &h.ca, &opts(Mtu::Mtu1024));
            let b = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
            qa.post_send(&[
                SendWr::rdma_write(1, src_mr.sge(0..len).unwrap(), aim(&b)).signaled(true),
                SendWr::rdma_write(2, src_mr.sge(0..64).unwrap(), b.at(0)).signaled(true),
            ])
            .unwrap();
            let w = take(&h, &h.ca, 2, 300_000, what);
            assert_eq!(
                w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
                vec![(1, WcStatus::RemAccessErr), (2, WcStatus::WrFlushErr)],
                "{what}\n{}",
                h.diag()
            );
            let (_, cb) = h.counters();
            assert_eq!(cb.get("drop_key"), Some(1), "{what}: counted once: {:?}", nonzero(&cb));
            assert!(dst_mr.to_vec().iter().all(|&x| x == GUARD), "{what}: the target changed");
        }
    }
}

/// Item 3 (found by `random_load`): a signaled READ (64 KiB at MTU 1024, or 4 KiB at MTU 256)
/// and a WRITE behind it on one QP, on a perfect wire. The responder's ACK of the WRITE must
/// follow the READ's last response on the wire (responses in PSN order); otherwise the
/// requester takes the ACK as covering a READ whose responses are missing, resumes it, and
/// the responses travel twice. No retransmission, no duplicate.
#[test]
fn a_write_behind_a_read_is_not_acknowledged_before_the_reads_responses() {
    for (len, mtu) in [(65536usize, Mtu::Mtu1024), (4096, Mtu::Mtu256)] {
        let dir = tempfile::tempdir().unwrap();
        let pcap = dir.path().join("order.pcap");
        let h = Hosts::new(SimConfig::default());
        h.world.borrow_mut().capture_pcap(&pcap).unwrap();
        let mut remote = pattern(1, 128 * 1024);
        let mut local = vec![GUARD; 128 * 1024];
        let mut src = pattern(2, 4096);
        let what = format!("a {len}-byte READ then a WRITE at MTU {}", mtu.bytes());
        {
            let rmr = h
                .pb
                .register(&mut remote, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE)
                .unwrap();
            let lmr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
            let o = ConnectOptions { max_rd_atomic: 4, max_dest_rd_atomic: 4, ..opts(mtu) };
            let (mut qa, qb) = pair_on(&h, &h.ca, &o);
            let rb = qb.endpoint().unwrap().with_buffer(&rmr).buffer.unwrap();
            qa.post_send(&[
                SendWr::rdma_read(1, lmr.sge(0..len).unwrap(), rb.at(0)).signaled(true),
                SendWr::rdma_write(2, smr.sge(0..64).unwrap(), rb.at(100_000)).signaled(true),
            ])
            .unwrap();
            let w = take(&h, &h.ca, 2, 500_000, &what);
            assert_eq!(
                w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
                vec![(1, WcStatus::Success), (2, WcStatus::Success)],
                "{what}"
            );
            h.settle(2_000);
            drop(qa);
        }
        h.world.borrow_mut().finish().unwrap();
        // On the wire from B: the first ACK after the READ's first responses' last one.
        let from_b: Vec<u8> =
            common::frames::read(&pcap).iter().filter(|f| matches!(f.opcode, 0x0D..=0x11)).map(|f| f.opcode).collect();
        let packets = len.div_ceil(mtu.bytes() as usize);
        let ack = from_b.iter().position(|&o| o == 0x11).expect("an ACK");
        assert!(
            ack >= packets,
            "{what}: B sent the WRITE's ACK as its frame {ack}, before the READ's {packets} responses: {:x?}",
            &from_b[..from_b.len().min(packets + 4)]
        );
        let (ca, cb) = h.counters();
        for (nic, c) in [(0, &ca), (1, &cb)] {
            for k in [counter::RETRANSMITS, counter::RX_DUPLICATES, counter::TIMEOUTS] {
                assert_eq!(
                    c.values[k as usize],
                    0,
                    "{what}: NIC {nic} counted {} {}: {:?}",
                    c.values[k as usize],
                    counter::NAMES[k as usize],
                    nonzero(c)
                );
            }
        }
    }
}
