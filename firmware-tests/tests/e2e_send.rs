//! End-to-end SEND / receive: two simulated hosts, the Verilated NIC RTL on each, driven through
//! the `rnic` verbs driver (receive WQEs in the RQ ring, RQ doorbell, SEND WQEs, CQE polling).
//! System tests of the RTL: the driver does no NIC work, so every byte that lands in a receive
//! buffer was scattered there by the responder NIC, and every completion was written by a NIC.
//!
//! What they pin (IBTA Vol 1 9.7.4.1.3, 9.7.5.2, 10.8.3; ibv_post_send(3), ibv_post_recv(3),
//! ibv_poll_cq(3); docs/driver.md):
//! - SENDs of 0 bytes, 1 byte, one path MTU and many packets (100 KiB) arrive intact at every
//!   path MTU, from and to unaligned addresses; the send WR completes IBV_WC_SEND/SUCCESS, the
//!   receive WR IBV_WC_RECV with `byte_len` = message length and its own `wr_id`; no byte
//!   outside the message's part of the receive buffer changes;
//! - receives are consumed in posting order, one per message, and the RQ ring wraps;
//! - a SEND with no receive posted is answered with an RNR NAK (`tx_rnr_naks` at the
//!   responder, `rx_rnr_naks` at the requester) and still arrives once a receive is posted:
//!   the requester resends after the RNR timer the NAK names (not before, never on the ACK
//!   timer);
//! - SEND_WITH_IMM delivers its immediate in the receive completion (IBV_WC_WITH_IMM, the
//!   `imm_data` word as posted), a plain SEND's has no WITH_IMM; RDMA_WRITE_WITH_IMM writes at
//!   the remote address and consumes a receive WQE without touching its buffer
//!   (IBV_WC_RECV_RDMA_WITH_IMM, `byte_len` = the WRITE's length); with no receive posted it
//!   draws an RNR NAK and completes once one is;
//! - IBV_SEND_SOLICITED sets BTH.SE on the last packet of a SEND only;
//! - captures of SEND traffic and of immediate-data traffic (SEND and RDMA WRITE, ONLY and
//!   LAST WITH IMMEDIATE) are clean in tshark and their ICRCs verify in scapy; each ImmDt on
//!   the wire carries the `imm_data` bytes as posted.
//!
//! The refused and failing SENDs (LOC_LEN_ERR, LOC_PROT_ERR, post_recv errors, RNR retries
//! exhausted, flushes) are in `e2e_send_errors.rs`; the helpers both use in `send/mod.rs`.
mod common;
mod send;

use common::{budget, first_difference, pattern};
use rnic::{
    AccessFlags, ConnectOptions, Errno, Mtu, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr, SendWr, WcFlags, WcOpcode,
    WcStatus, WorkCompletion, WrOpcode,
};
use rnic_contract::regs::counter;
use send::*;

#[test]
fn zero_length_send_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 0, 64, 0, 0);
    }
}

#[test]
fn zero_length_send_into_a_receive_without_buffer() {
    let h = hosts();
    let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
    qb.post_recv_one(RecvWr::zero_length(77)).unwrap();
    qa.post_send_one(SendWr::send(5, None).signaled(true)).unwrap();
    let s = h.wait(&h.ca, 1, 200_000)[0];
    assert_eq!((s.wr_id, s.status, s.opcode), (5, WcStatus::Success, WcOpcode::Send), "{s:?}");
    let r = h.wait(&h.cb, 1, 200_000)[0];
    assert_eq!((r.wr_id, r.status, r.opcode, r.byte_len), (77, WcStatus::Success, WcOpcode::Recv, 0), "{r:?}");
}

#[test]
fn one_byte_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 1, 64, 0, 0);
    }
}

#[test]
fn one_full_mtu_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, mtu.bytes() as usize, mtu.bytes() as usize + 100, 0, 0);
    }
}

#[test]
fn one_mtu_plus_one_at_every_path_mtu() {
    // SEND FIRST + a one-byte SEND LAST.
    for mtu in ALL_MTUS {
        send_and_check(mtu, mtu.bytes() as usize + 1, 2 * mtu.bytes() as usize, 0, 0);
    }
}

#[test]
fn hundred_kib_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 100 << 10, 100 << 10, 0, 0);
    }
}

#[test]
fn multi_packet_unaligned_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 3 * mtu.bytes() as usize + 77, 4 * mtu.bytes() as usize, 3, 5);
    }
}

#[test]
fn one_mib_at_mtu_4096() {
    send_and_check(Mtu::Mtu4096, 1 << 20, 1 << 20, 0, 0);
}

#[test]
fn message_exactly_as_long_as_the_receive_buffer() {
    send_and_check(Mtu::Mtu256, 1000, 1000, 0, 0);
    send_and_check(Mtu::Mtu4096, 4096, 4096, 1, 63);
}

#[test]
fn unaligned_source_and_receive_addresses() {
    for (src_off, dst_off, len) in [(1, 63, 200), (63, 1, 4097), (17, 33, 64), (5, 0, 129), (0, 7, 1000)] {
        send_and_check(Mtu::Mtu1024, len, len + 50, src_off, dst_off);
    }
}

/// Eight receives of different sizes, then eight SENDs in one post: each message lands in the
/// receive posted in the same position, and the receive completions come in that order.
#[test]
fn receives_are_matched_in_posting_order() {
    let h = hosts();
    const N: usize = 8;
    const SLOT: usize = 8192;
    let lens: [usize; N] = [1, 300, 0, 4096, 5000, 17, 8192, 2049];
    let mut src = pattern(99, N * SLOT);
    let mut dst = vec![GUARD; N * SLOT];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        let recvs: Vec<_> =
            (0..N).map(|i| RecvWr::new(1000 + i as u64, dst_mr.sge(i * SLOT..(i + 1) * SLOT).unwrap())).collect();
        qb.post_recv(&recvs[..3]).unwrap();
        qb.post_recv(&recvs[3..]).unwrap();
        assert_eq!(qb.recv_outstanding(), N);
        let sends: Vec<_> = (0..N)
            .map(|i| {
                let sge = (lens[i] > 0).then(|| src_mr.sge(i * SLOT..i * SLOT + lens[i]).unwrap());
                SendWr::send(i as u64, sge).signaled(true)
            })
            .collect();
        qa.post_send(&sends).unwrap();
        let s = h.wait(&h.ca, N, budget(N * SLOT));
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..N as u64).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
        );
        let r = h.wait(&h.cb, N, budget(N * SLOT));
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status, w.opcode, w.byte_len)).collect::<Vec<_>>(),
            (0..N).map(|i| (1000 + i as u64, WcStatus::Success, WcOpcode::Recv, lens[i] as u32)).collect::<Vec<_>>(),
            "{}",
            h.diag()
        );
        assert_eq!(qb.recv_outstanding(), 0);
    }
    for i in 0..N {
        let got = &dst[i * SLOT..(i + 1) * SLOT];
        if let Some(d) = first_difference(&got[..lens[i]], &src[i * SLOT..i * SLOT + lens[i]]) {
            panic!("message {i}: {d}");
        }
        assert!(got[lens[i]..].iter().all(|&b| b == GUARD), "message {i} wrote past its length");
    }
}

/// An RQ of 4 entries carries 40 messages: the ring wraps ten times, each slot is reposted only
/// after its receive completion was polled, and the NIC follows the producer index across the
/// 16-bit doorbell's laps of the ring.
#[test]
fn the_rq_ring_wraps() {
    let h = hosts();
    const N: usize = 40;
    const LEN: usize = 700;
    let mut src = pattern(5, N * LEN);
    let mut dst = vec![GUARD; N * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps_sized(&opts(Mtu::Mtu512), 4);
        assert_eq!(qb.rq_capacity(), 4);
        let recv = |i: usize| RecvWr::new(i as u64, dst_mr.sge(i * LEN..(i + 1) * LEN).unwrap());
        let (mut posted, mut received, mut sent) = (0usize, 0usize, 0usize);
        let start = h.world.borrow().cycles();
        let mut wcs = [WorkCompletion::default(); 8];
        while received < N {
            while posted < N && qb.recv_outstanding() < 4 {
                qb.post_recv_one(recv(posted)).unwrap();
                posted += 1;
            }
            if posted < N {
                assert_eq!(qb.post_recv_one(recv(posted)).unwrap_err().errno(), Errno::ENOMEM, "the RQ of 4 is full");
            }
            while sent < posted && qa.outstanding() < 8 {
                qa.post_send_one(
                    SendWr::send(sent as u64, src_mr.sge(sent * LEN..(sent + 1) * LEN).unwrap()).signaled(true),
                )
                .unwrap();
                sent += 1;
            }
            let n = h.cb.poll(&mut wcs).unwrap();
            for w in &wcs[..n] {
                assert_eq!(
                    (w.wr_id, w.status, w.byte_len),
                    (received as u64, WcStatus::Success, LEN as u32),
                    "{w:?}\n{}",
                    h.diag()
                );
                received += 1;
            }
            let n = h.ca.poll(&mut wcs).unwrap();
            assert!(wcs[..n].iter().all(|w| w.status == WcStatus::Success), "{:?}", &wcs[..n]);
            assert!(h.world.borrow().cycles() - start < 2_000_000, "stalled at {received}/{N} received\n{}", h.diag());
        }
        assert_eq!(h.b.counter(counter::TX_RNR_NAKS).unwrap(), 0, "sends were posted only against posted receives");
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// Two requester QPs send multi-packet messages at the same time to two responder QPs that
/// share a receive CQ: their packets interleave on the wire, and each responder QP keeps its own
/// open receive (address, length so far, wr_id).
#[test]
fn two_qps_receive_interleaved_messages() {
    let h = hosts();
    const LEN: usize = 6000;
    const N: usize = 3;
    let mut src = pattern(21, 2 * N * LEN);
    let mut dst = vec![GUARD; 2 * N * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut a1, mut b1) = h.qps_sized(&opts(Mtu::Mtu256), 4);
        let (mut a2, mut b2) = h.qps_sized(&opts(Mtu::Mtu256), 4);
        let region = |q: usize, i: usize| (q * N + i) * LEN..(q * N + i + 1) * LEN;
        for i in 0..N {
            b1.post_recv_one(RecvWr::new(100 + i as u64, dst_mr.sge(region(0, i)).unwrap())).unwrap();
            b2.post_recv_one(RecvWr::new(200 + i as u64, dst_mr.sge(region(1, i)).unwrap())).unwrap();
        }
        for i in 0..N {
            a1.post_send_one(SendWr::send(i as u64, src_mr.sge(region(0, i)).unwrap()).signaled(true)).unwrap();
            a2.post_send_one(SendWr::send(i as u64, src_mr.sge(region(1, i)).unwrap()).signaled(true)).unwrap();
        }
        let s = h.wait(&h.ca, 2 * N, 1_000_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 2 * N, 200_000);
        let of = |q: &QueuePair| -> Vec<(u64, u32, WcStatus)> {
            r.iter().filter(|w| w.qp_num == q.qp_num()).map(|w| (w.wr_id, w.byte_len, w.status)).collect()
        };
        let want = |base: u64| (0..N as u64).map(|i| (base + i, LEN as u32, WcStatus::Success)).collect::<Vec<_>>();
        assert_eq!(of(&b1), want(100), "{r:?}");
        assert_eq!(of(&b2), want(200), "{r:?}");
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// RDMA WRITEs and SENDs interleaved on one QP: WRITEs land at their remote address and consume
/// no receive, SENDs land in the receives in order.
#[test]
fn writes_and_sends_interleave_on_one_qp() {
    let h = hosts();
    let mut src = pattern(31, 8 * 1500);
    let mut wdst = vec![GUARD; 4 * 1500];
    let mut rdst = vec![GUARD; 4 * 1500];
    let send_opcodes;
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let w_mr = h.pb.register(&mut wdst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let r_mr = h.pb.register(&mut rdst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu512) });
        let recvs: Vec<_> =
            (0..4).map(|i| RecvWr::new(i as u64, r_mr.sge(i * 1500..(i + 1) * 1500).unwrap())).collect();
        qb.post_recv(&recvs).unwrap();
        let wrs: Vec<_> = (0..8)
            .map(|k| {
                let sge = src_mr.sge(k * 1500..(k + 1) * 1500).unwrap();
                let i = k / 2;
                if k % 2 == 0 {
                    SendWr::rdma_write(k as u64, sge, w_mr.remote_addr(i * 1500).unwrap()).signaled(true)
                } else {
                    SendWr::send(k as u64, sge).signaled(true)
                }
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let s = h.wait(&h.ca, 8, 400_000);
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..8u64).map(|k| (k, WcStatus::Success)).collect::<Vec<_>>()
        );
        send_opcodes = s.iter().map(|w| w.opcode).collect::<Vec<_>>();
        let r = h.wait(&h.cb, 4, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.byte_len, w.status)).collect::<Vec<_>>(),
            (0..4u64).map(|i| (i, 1500, WcStatus::Success)).collect::<Vec<_>>()
        );
        assert!(h.drain(&h.cb, 5_000).is_empty(), "a WRITE consumed a receive");
    }
    for i in 0..4 {
        assert_eq!(&wdst[i * 1500..(i + 1) * 1500], &src[2 * i * 1500..(2 * i + 1) * 1500], "WRITE {i}");
        assert_eq!(&rdst[i * 1500..(i + 1) * 1500], &src[(2 * i + 1) * 1500..(2 * i + 2) * 1500], "SEND {i}");
    }
    let want: Vec<_> = (0..8).map(|k| if k % 2 == 0 { WcOpcode::RdmaWrite } else { WcOpcode::Send }).collect();
    assert_eq!(send_opcodes, want, "send completion opcodes");
}

/// A responder in RTR (never moved to RTS) receives SENDs (IBTA 10.3.1: RTR processes incoming
/// requests).
#[test]
fn a_responder_in_rtr_receives() {
    let h = hosts();
    let mut src = pattern(41, 2000);
    let mut dst = vec![GUARD; 2000];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let o = opts(Mtu::Mtu512);
        qa.connect_with(&eb, &o).unwrap();
        use QpAttrMask as M;
        let attr = QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            path_mtu: o.path_mtu,
            ah_attr: rnic::AddressVector { dest_mac: ea.mac, dest_ip: ea.ip },
            dest_qp_num: ea.qpn,
            rq_psn: ea.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ..QpAttr::default()
        };
        qb.modify(&attr, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS).unwrap();
        qb.modify(
            &QpAttr { qp_state: QpState::Rtr, ..attr },
            M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
        )
        .unwrap();
        qb.post_recv_one(RecvWr::new(8, dst_mr.sge(0..2000).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..2000).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (8, 2000, WcStatus::Success), "{r:?}");
        assert_eq!(qb.state(), QpState::Rtr);
    }
    assert!(dst == src);
}

/// Both hosts stream SENDs at each other at once, each through one QP whose send and receive
/// completions share one CQ, reposting receives as they complete: no completion is lost or
/// duplicated and every message lands in its own receive.
#[test]
fn bidirectional_streams_share_one_cq_per_host() {
    let h = hosts();
    const N: usize = 120;
    const LEN: usize = 1800;
    let mut src = [pattern(51, N * LEN), pattern(52, N * LEN)];
    let mut dst = [vec![GUARD; N * LEN], vec![GUARD; N * LEN]];
    {
        let [sa, sb] = &mut src;
        let [da, db] = &mut dst;
        let smr = [
            h.pa.register(sa, AccessFlags::LOCAL_WRITE).unwrap(),
            h.pb.register(sb, AccessFlags::LOCAL_WRITE).unwrap(),
        ];
        let dmr = [
            h.pa.register(da, AccessFlags::LOCAL_WRITE).unwrap(),
            h.pb.register(db, AccessFlags::LOCAL_WRITE).unwrap(),
        ];
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu1024)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu1024)).unwrap();
        let mut qps = [qa, qb];
        let cqs = [&h.ca, &h.cb];
        let (mut sent, mut posted, mut sends_done, mut recvs_done) =
            ([0usize; 2], [0usize; 2], [0usize; 2], [0usize; 2]);
        let start = h.world.borrow().cycles();
        let mut wcs = [WorkCompletion::default(); 16];
        while recvs_done != [N, N] || sends_done != [N, N] {
            for s in 0..2 {
                while posted[s] < N && qps[s].recv_outstanding() < 16 {
                    let i = posted[s];
                    qps[s].post_recv_one(RecvWr::new(i as u64, dmr[s].sge(i * LEN..(i + 1) * LEN).unwrap())).unwrap();
                    posted[s] += 1;
                }
                while sent[s] < N && qps[s].outstanding() < 16 {
                    let i = sent[s];
                    qps[s]
                        .post_send_one(
                            SendWr::send(i as u64, smr[s].sge(i * LEN..(i + 1) * LEN).unwrap()).signaled(true),
                        )
                        .unwrap();
                    sent[s] += 1;
                }
                let n = cqs[s].poll(&mut wcs).unwrap();
                for w in &wcs[..n] {
                    assert_eq!(w.status, WcStatus::Success, "host {s}: {w:?}\n{}", h.diag());
                    if w.opcode == WcOpcode::Recv {
                        assert_eq!((w.wr_id, w.byte_len), (recvs_done[s] as u64, LEN as u32), "host {s}: {w:?}");
                        recvs_done[s] += 1;
                    } else {
                        assert_eq!(w.wr_id, sends_done[s] as u64, "host {s}: {w:?}");
                        sends_done[s] += 1;
                    }
                }
            }
            assert!(
                h.world.borrow().cycles() - start < 3_000_000,
                "stalled: sends {sends_done:?}, receives {recvs_done:?}\n{}",
                h.diag()
            );
        }
        let (ca, cb) = h.counters();
        assert_eq!((ca.get("cqes"), cb.get("cqes")), (Some(2 * N as u32), Some(2 * N as u32)), "{}", h.diag());
        assert_eq!((qps[0].stray_completions(), qps[1].stray_completions()), (0, 0));
    }
    assert!(dst[0] == src[1], "A received wrong bytes: {:?}", first_difference(&dst[0], &src[1]));
    assert!(dst[1] == src[0], "B received wrong bytes: {:?}", first_difference(&dst[1], &src[0]));
}

/// Unsignaled SENDs produce no send CQE, but every receive completes.
#[test]
fn unsignaled_sends_still_complete_their_receives() {
    let h = hosts();
    let mut src = pattern(8, 4 * 512);
    let mut dst = vec![GUARD; 4 * 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu256));
        let recvs: Vec<_> =
            (0..4).map(|i| RecvWr::new(50 + i as u64, dst_mr.sge(i * 512..(i + 1) * 512).unwrap())).collect();
        qb.post_recv(&recvs).unwrap();
        let sends: Vec<_> = (0..4)
            .map(|i| SendWr::send(i as u64, src_mr.sge(i * 512..(i + 1) * 512).unwrap()).signaled(i == 3))
            .collect();
        qa.post_send(&sends).unwrap();
        let r = h.wait(&h.cb, 4, 400_000);
        assert_eq!(r.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![50, 51, 52, 53]);
        let s = h.wait(&h.ca, 1, 400_000);
        assert_eq!((s[0].wr_id, s[0].status), (3, WcStatus::Success));
        assert!(h.drain(&h.ca, 10_000).is_empty(), "no CQE for unsignaled SENDs");
        assert_eq!(qa.outstanding(), 0);
    }
    assert!(dst == src);
}

/// SENDs in both directions at once, each side receiving into its own RQ.
#[test]
fn sends_in_both_directions() {
    let h = hosts();
    let mut sa = pattern(1, 10_000);
    let mut sb = pattern(2, 10_000);
    let mut ra = vec![GUARD; 10_000];
    let mut rb = vec![GUARD; 10_000];
    {
        let sa_mr = h.pa.register(&mut sa, AccessFlags::LOCAL_WRITE).unwrap();
        let ra_mr = h.pa.register(&mut ra, AccessFlags::LOCAL_WRITE).unwrap();
        let sb_mr = h.pb.register(&mut sb, AccessFlags::LOCAL_WRITE).unwrap();
        let rb_mr = h.pb.register(&mut rb, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu2048)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu2048)).unwrap();
        qa.post_recv_one(RecvWr::new(10, ra_mr.sge(0..10_000).unwrap())).unwrap();
        qb.post_recv_one(RecvWr::new(20, rb_mr.sge(0..10_000).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, sa_mr.sge(0..10_000).unwrap()).signaled(true)).unwrap();
        qb.post_send_one(SendWr::send(2, sb_mr.sge(0..10_000).unwrap()).signaled(true)).unwrap();
        let mut wa = h.wait(&h.ca, 2, 400_000);
        let mut wb = h.wait(&h.cb, 2, 400_000);
        wa.sort_by_key(|w| w.opcode.as_raw());
        wb.sort_by_key(|w| w.opcode.as_raw());
        assert_eq!(
            wa.iter().map(|w| (w.wr_id, w.opcode, w.status)).collect::<Vec<_>>(),
            vec![(1, WcOpcode::Send, WcStatus::Success), (10, WcOpcode::Recv, WcStatus::Success)]
        );
        assert_eq!(
            wb.iter().map(|w| (w.wr_id, w.opcode, w.status)).collect::<Vec<_>>(),
            vec![(2, WcOpcode::Send, WcStatus::Success), (20, WcOpcode::Recv, WcStatus::Success)]
        );
        assert_eq!((wa[1].byte_len, wb[1].byte_len), (10_000, 10_000));
    }
    assert!(ra == sb && rb == sa);
}

/// A separate receive CQ gets the receive completions; the send CQ gets none of them.
#[test]
fn receive_completions_go_to_the_receive_cq() {
    let h = hosts();
    let mut src = pattern(4, 100);
    let mut dst = vec![GUARD; 100];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let rcq = h.b.create_cq(8).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_recv_cq(&rcq).set_max_recv_wr(8).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu1024)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu1024)).unwrap();
        qb.post_recv_one(RecvWr::new(3, dst_mr.sge(0..100).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..100).unwrap()).signaled(true)).unwrap();
        h.wait(&h.ca, 1, 200_000);
        let r = h.wait(&rcq, 1, 200_000)[0];
        assert_eq!((r.wr_id, r.opcode, r.byte_len, r.status), (3, WcOpcode::Recv, 100, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty(), "the send CQ of B got a receive completion");
    }
    assert!(dst == src);
}

/// Receives posted in INIT, before the connection exists, are used after INIT→RTR (which resets
/// the NIC's RQ consumer index but not its producer index).
#[test]
fn receives_posted_in_init_are_used() {
    let h = hosts();
    let mut src = pattern(6, 3000);
    let mut dst = vec![GUARD; 3000];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let o = opts(Mtu::Mtu1024);
        let init = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: 1,
            qp_access_flags: o.access,
            ..QpAttr::default()
        };
        qb.modify(&init, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS)
            .unwrap();
        qb.post_recv(&[RecvWr::new(1, dst_mr.sge(0..1000).unwrap()), RecvWr::new(2, dst_mr.sge(1000..3000).unwrap())])
            .unwrap();
        let attr = QpAttr {
            qp_state: QpState::Rtr,
            path_mtu: o.path_mtu,
            ah_attr: rnic::AddressVector { dest_mac: ea.mac, dest_ip: ea.ip },
            dest_qp_num: ea.qpn,
            rq_psn: ea.psn,
            sq_psn: qb.local_psn(),
            max_dest_rd_atomic: 1,
            max_rd_atomic: 1,
            min_rnr_timer: 12,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            ..init
        };
        use QpAttrMask as M;
        qb.modify(
            &attr,
            M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
        )
        .unwrap();
        qb.modify(
            &QpAttr { qp_state: QpState::Rts, ..attr },
            M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC,
        )
        .unwrap();
        qa.connect_with(&eb, &o).unwrap();
        qa.post_send(&[
            SendWr::send(1, src_mr.sge(0..1000).unwrap()),
            SendWr::send(2, src_mr.sge(1000..3000).unwrap()).signaled(true),
        ])
        .unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 2, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.byte_len, w.status)).collect::<Vec<_>>(),
            vec![(1, 1000, WcStatus::Success), (2, 2000, WcStatus::Success)]
        );
    }
    assert!(dst == src);
}

/// RESET forgets posted receives: after RESET and a new connection, a SEND lands in a receive
/// posted after the reset, not in a stale one (the driver zeroes the NIC's RQ producer index).
#[test]
fn reset_forgets_receives_and_the_rq_restarts() {
    let h = hosts();
    let mut src = pattern(7, 512);
    let mut stale = vec![GUARD; 512];
    let mut dst = vec![GUARD; 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let stale_mr = h.pb.register(&mut stale, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu512));
        // One receive used, two more left posted.
        qb.post_recv(&[
            RecvWr::new(1, dst_mr.sge(0..512).unwrap()),
            RecvWr::new(2, stale_mr.sge(0..512).unwrap()),
            RecvWr::new(3, stale_mr.sge(0..512).unwrap()),
        ])
        .unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..16).unwrap()).signaled(true)).unwrap();
        h.wait(&h.ca, 1, 200_000);
        assert_eq!(h.wait(&h.cb, 1, 200_000)[0].wr_id, 1);
        let reset = QpAttr { qp_state: QpState::Reset, ..QpAttr::default() };
        qa.modify(&reset, QpAttrMask::STATE).unwrap();
        qb.modify(&reset, QpAttrMask::STATE).unwrap();
        assert_eq!(qb.recv_outstanding(), 0);
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu512)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu512)).unwrap();
        qb.post_recv_one(RecvWr::new(9, dst_mr.sge(0..512).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, src_mr.sge(0..512).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (9, 512, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty());
        assert!(stale_mr.to_vec().iter().all(|&b| b == GUARD), "a receive forgotten by RESET was used");
    }
    assert!(dst == src);
}

#[test]
fn send_before_any_receive_gets_rnr_nak_and_arrives_later() {
    rnr_then_receive(100, Mtu::Mtu1024);
}

#[test]
fn multi_packet_send_before_any_receive_gets_rnr_nak_and_arrives_later() {
    rnr_then_receive(5000, Mtu::Mtu1024);
}

/// Four SENDs against two posted receives: the first two land, the third is RNR-NAKed (and the
/// fourth, behind it, is not accepted out of order); once two more receives are posted, the
/// requester's retries deliver both, in order, into the right receives.
#[test]
fn receives_running_out_mid_stream() {
    let h = hosts();
    const LEN: usize = 3000;
    let mut src = pattern(10, 4 * LEN);
    let mut dst = vec![GUARD; 4 * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        let recv = |i: usize| RecvWr::new(i as u64, dst_mr.sge(i * LEN..(i + 1) * LEN).unwrap());
        qb.post_recv(&[recv(0), recv(1)]).unwrap();
        let sends: Vec<_> = (0..4)
            .map(|i| SendWr::send(i as u64, src_mr.sge(i * LEN..(i + 1) * LEN).unwrap()).signaled(true))
            .collect();
        qa.post_send(&sends).unwrap();
        let r = h.wait(&h.cb, 2, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(0, WcStatus::Success), (1, WcStatus::Success)]
        );
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        qb.post_recv(&[recv(2), recv(3)]).unwrap();
        let s = h.wait(&h.ca, 4, 20 * 65_536);
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>(),
            "{}",
            h.diag()
        );
        let r = h.wait(&h.cb, 2, 100_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status, w.byte_len)).collect::<Vec<_>>(),
            vec![(2, WcStatus::Success, LEN as u32), (3, WcStatus::Success, LEN as u32)],
            "{}",
            h.diag()
        );
        assert!(h.drain(&h.cb, 5_000).is_empty());
        eprintln!("receives running out mid-stream:\n{}", h.diag());
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// The ACK of a SEND is lost: the requester's timer resends the SEND, the responder recognises
/// the duplicate, ACKs it again and does not consume a second receive WR: the next SEND lands in
/// the second receive.
#[test]
fn a_resent_send_after_a_lost_ack_consumes_no_second_receive() {
    // NIC 1's first frame is the ACK of the first SEND.
    let h = hosts_dropping(vec![(1, 0)]);
    let mut src = pattern(11, 600);
    let mut dst = vec![GUARD; 2 * 600];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qb.post_recv(&[RecvWr::new(1, dst_mr.sge(0..600).unwrap()), RecvWr::new(2, dst_mr.sge(600..1200).unwrap())])
            .unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..300).unwrap()).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 1, 4 * 65_536)[0];
        assert_eq!((s.wr_id, s.status), (1, WcStatus::Success), "{s:?}");
        let (ca, cb) = h.counters();
        assert_eq!(ca.get("timeouts"), Some(1), "{}", h.diag());
        assert!(cb.get("rx_duplicates").unwrap() >= 1, "{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (1, 300, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty(), "the duplicate SEND consumed a second receive\n{}", h.diag());
        qa.post_send_one(SendWr::send(2, src_mr.sge(300..600).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (2, 300, WcStatus::Success), "{r:?}\n{}", h.diag());
    }
    assert_eq!(&dst[..300], &src[..300]);
    assert!(dst[300..600].iter().all(|&b| b == GUARD));
    assert_eq!(&dst[600..900], &src[300..600]);
}

#[test]
fn lost_send_first_is_recovered() {
    lost_packet_in_a_send(0);
}

#[test]
fn lost_send_middle_is_recovered() {
    lost_packet_in_a_send(5);
}

#[test]
fn lost_send_last_is_recovered() {
    lost_packet_in_a_send(19);
}

/// The requester waits the RNR timer the responder's NAK names before it resends: with
/// min_rnr_timer 12 (0.64 ms = 160 000 cycles) nothing is resent for 150 000 cycles after the
/// RNR NAK, and the resend comes within the timer plus the sweep and a round trip.
#[test]
fn the_resend_waits_for_the_rnr_timer() {
    let h = hosts();
    let mut src = pattern(3, 64);
    let mut dst = vec![GUARD; 64];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { min_rnr_timer: 12, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.a, counter::RX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        let t0 = h.world.borrow().cycles();
        qb.post_recv_one(RecvWr::new(2, dst_mr.sge(0..64).unwrap())).unwrap();
        h.settle(150_000);
        assert_eq!(h.a.counter(counter::TX_REQUESTS).unwrap(), 1, "resent before the RNR timer");
        assert!(h.wait_counter(&h.a, counter::TX_REQUESTS, 2, 30_000), "no resend after the RNR timer\n{}", h.diag());
        let waited = h.world.borrow().cycles() - t0;
        assert!((160_000..180_000).contains(&waited), "resent {waited} cycles after the RNR NAK");
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
    }
    assert!(dst == src);
}

#[test]
fn send_with_imm_carries_the_immediate_into_the_receive_completion() {
    for (mtu, len) in
        [(Mtu::Mtu256, 0), (Mtu::Mtu256, 1), (Mtu::Mtu256, 1000), (Mtu::Mtu1024, 1024), (Mtu::Mtu4096, 20_000)]
    {
        send_with_imm_and_check(mtu, len);
    }
}

#[test]
fn a_plain_send_completes_without_with_imm() {
    let h = hosts();
    let mut dst = vec![GUARD; 64];
    {
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        qb.post_recv_one(RecvWr::new(1, dst_mr.sge(0..64).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, None).with_imm(IMM).signaled(true)).unwrap();
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!((r.opcode, r.wc_flags), (WcOpcode::Recv, WcFlags::empty()), "{r:?}");
    }
}

#[test]
fn rdma_write_with_imm_consumes_a_receive_and_carries_the_immediate() {
    for (mtu, len, off) in [
        (Mtu::Mtu1024, 0, 0),
        (Mtu::Mtu1024, 1, 3),
        (Mtu::Mtu256, 256, 0),
        (Mtu::Mtu1024, 5000, 17),
        (Mtu::Mtu4096, 64 * 1024, 0),
    ] {
        write_with_imm_and_check(mtu, len, off);
    }
}

/// An RDMA WRITE with immediate that finds no receive WQE is answered with an RNR NAK on its
/// last packet (the packets before it are written), and completes once a receive is posted.
#[test]
fn write_with_imm_before_any_receive_gets_rnr_nak_and_completes_later() {
    let h = hosts();
    let len = 3000;
    let mut src = pattern(5, len);
    let mut dst = vec![GUARD; len];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, retry_cnt: 7, access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        let remote = dst_mr.remote_addr(0).unwrap();
        qa.post_send_one(
            SendWr::rdma_write(9, src_mr.sge(0..len).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(IMM)
                .signaled(true),
        )
        .unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "no RNR NAK\n{}", h.diag());
        assert!(h.drain(&h.ca, 1_000).is_empty(), "an RNR NAK completed the WRITE");
        qb.post_recv_one(RecvWr::zero_length(10)).unwrap();
        let s = h.wait(&h.ca, 1, 8 * 65_536 + 100_000)[0];
        assert_eq!((s.wr_id, s.status), (9, WcStatus::Success), "{s:?}\n{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!(
            (r.wr_id, r.opcode, r.byte_len, r.imm_data),
            (10, WcOpcode::RecvRdmaWithImm, len as u32, IMM),
            "{r:?}"
        );
        assert_eq!(h.b.counter(counter::CQES).unwrap(), 1, "one receive completion");
    }
    assert!(dst == src);
}

/// A capture of immediate-data traffic — SEND ONLY and LAST WITH IMMEDIATE, RDMA WRITE ONLY
/// and LAST WITH IMMEDIATE (RETH + ImmDt) — decodes cleanly in tshark, every ICRC verifies in
/// scapy, and each ImmDt on the wire is the `imm_data` word's bytes as posted.
#[test]
fn immediate_data_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("imm.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(21, 3000);
    let mut dst = vec![GUARD; 8192];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) });
        for i in 0..4 {
            qb.post_recv_one(RecvWr::new(i, dst_mr.sge(4096..8192).unwrap())).unwrap();
        }
        let remote = dst_mr.remote_addr(0).unwrap();
        let imm = |k: u8| u32::from_ne_bytes([0xA0 | k, 0x11, 0x22, k]);
        let wrs = [
            SendWr::send(1, src_mr.sge(0..10).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(imm(1)),
            SendWr::send(2, src_mr.sge(0..2500).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(imm(2)),
            SendWr::rdma_write(3, src_mr.sge(0..7).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(imm(3)),
            SendWr::rdma_write(4, src_mr.sge(0..3000).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(imm(4)),
        ];
        qa.post_send(&wrs.map(|w| w.signaled(true))).unwrap();
        let s = h.wait(&h.ca, 4, 400_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 4, 100_000);
        assert_eq!(r.iter().map(|w| w.imm_data).collect::<Vec<_>>(), (1..=4).map(imm).collect::<Vec<_>>(), "{r:?}");
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let with_imm: Vec<(u8, [u8; 4])> =
        pkts.iter().filter_map(|p| p.immdt.map(|i| (p.bth.opcode.0, i.data.to_be_bytes()))).collect();
    assert_eq!(
        with_imm,
        vec![
            (0x05, [0xA1, 0x11, 0x22, 1]),
            (0x03, [0xA2, 0x11, 0x22, 2]),
            (0x0B, [0xA3, 0x11, 0x22, 3]),
            (0x09, [0xA4, 0x11, 0x22, 4])
        ],
        "opcodes and ImmDt bytes on the wire"
    );
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

/// A capture of SEND traffic — SEND ONLY, FIRST/MIDDLE/LAST, their ACKs, an RNR NAK and the
/// NAK of a too-long message — decodes cleanly in tshark's InfiniBand dissector, every ICRC
/// verifies in scapy's RoCE layer, and our own codec parses every frame.
#[test]
fn send_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("send.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(12, 5000);
    let mut dst = vec![GUARD; 8192];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        // RNR NAK first (no receive yet), then the receive; the SEND ONLY (5 B, pad 3) is resent.
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..5).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        qb.post_recv_one(RecvWr::new(1, dst_mr.sge(0..8).unwrap())).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 600_000)[0].status, WcStatus::Success);
        // FIRST, MIDDLE × 3, LAST + ACK.
        qb.post_recv_one(RecvWr::new(2, dst_mr.sge(0..8192).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, src_mr.sge(0..4500).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        // Zero-length SEND ONLY.
        qb.post_recv_one(RecvWr::zero_length(3)).unwrap();
        qa.post_send_one(SendWr::send(3, None).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        // Too long: NAK invalid request.
        qb.post_recv_one(RecvWr::new(4, dst_mr.sge(0..10).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(4, src_mr.sge(0..100).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
        assert_eq!(h.wait(&h.cb, 4, 200_000).len(), 4);
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();

    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let opcodes: Vec<u8> = pkts.iter().map(|p| p.bth.opcode.0).collect();
    for op in [0x00, 0x01, 0x02, 0x04, 0x11] {
        assert!(opcodes.contains(&op), "opcode {op:#x} missing from {opcodes:x?}");
    }
    let syndromes: Vec<u8> = pkts.iter().filter_map(|p| p.aeth.map(|a| a.syndrome)).collect();
    // RNR NAK with the responder's min_rnr_timer (12), NAK invalid request, ACKs.
    for syn in [0x20 | 12, 0x61] {
        assert!(syndromes.contains(&syn), "AETH syndrome {syn:#x} missing from {syndromes:x?}");
    }
    assert!(syndromes.iter().any(|s| s >> 5 == 0), "no ACK in {syndromes:x?}");
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

/// IBV_SEND_SOLICITED (ibv_post_send(3); IBTA Vol 1 9.2.3): BTH.SE is set on the last packet
/// of a solicited SEND (and SEND with immediate) only, never on an unsolicited one or on a
/// FIRST/MIDDLE packet; the capture stays clean in tshark and scapy. (The driver has no
/// completion events, so the responder only delivers the message; SE is on the wire.)
#[test]
fn solicited_sends_carry_the_se_bit_on_their_last_packet() {
    use rnic::SendFlags;
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("se.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(9, 3000);
    let mut dst = vec![GUARD; 4 * 4096];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        for i in 0..3 {
            qb.post_recv_one(RecvWr::new(i, dst_mr.sge(i as usize * 4096..(i as usize + 1) * 4096).unwrap())).unwrap();
        }
        let sol = SendFlags::SIGNALED | SendFlags::SOLICITED;
        qa.post_send(&[
            SendWr::send(1, src_mr.sge(0..3000).unwrap()).with_flags(sol),
            SendWr::send(2, src_mr.sge(0..100).unwrap()).signaled(true),
            SendWr::send(3, src_mr.sge(0..10).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(7).with_flags(sol),
        ])
        .unwrap();
        assert!(h.wait(&h.ca, 3, 500_000).iter().all(|w| w.status == WcStatus::Success));
        assert!(h.wait(&h.cb, 3, 500_000).iter().all(|w| w.status == WcStatus::Success));
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let requests: Vec<(u8, bool)> = frames
        .iter()
        .map(|(_, f)| RocePacketRepr::parse(f).unwrap().bth)
        .filter(|b| b.opcode.0 <= 0x05)
        .map(|b| (b.opcode.0, b.solicited))
        .collect();
    // SEND FIRST, MIDDLE, LAST (solicited); SEND ONLY; SEND ONLY WITH IMMEDIATE (solicited).
    assert_eq!(requests, [(0x00, false), (0x01, false), (0x02, true), (0x04, false), (0x05, true)]);
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}
