//! End-to-end SEND / receive errors: two simulated hosts, the Verilated NIC RTL on each,
//! driven through the `rnic` verbs driver, as in `e2e_send.rs` (whose helpers are in
//! `send/mod.rs`). What they pin (IBTA Vol 1 9.7.5.2, 9.9, 10.8.3; ibv_post_recv(3),
//! ibv_poll_cq(3)):
//! - a message longer than the receive buffer completes the receive with LOC_LEN_ERR and the
//!   send with REM_INV_REQ_ERR, without a byte written past the buffer, and draws one NAK; a
//!   receive SGE with a bad lkey, outside its MR, without LOCAL_WRITE or of another PD completes
//!   with LOC_PROT_ERR and the send with REM_OP_ERR;
//! - post_recv refuses a QP in RESET (EINVAL) and a full RQ (ENOMEM);
//! - RNR_RETRY is counted exactly (0, 1, 3; 7 = infinite), then IBV_WC_RNR_RETRY_EXC_ERR;
//! - an atomic whose local buffer is not 8 bytes completes with LOC_LEN_ERR, nothing sent;
//! - a QP in ERR (modify_qp, a receive error, a requester error) flushes every posted receive
//!   and its send queue with WR_FLUSH_ERR, in order, and the NIC keeps serving other QPs.
mod common;
mod send;

use common::{nonzero, pattern};
use rnic::{AccessFlags, ConnectOptions, Errno, Mtu, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode};
use rnic_contract::regs::counter;
use send::*;

#[test]
fn message_longer_than_the_receive_buffer_is_loc_len_err() {
    // One packet of 200 B into 100 B (the buffer is 164 B: 64 guard bytes after the SGE).
    let r = refused_send(Mtu::Mtu1024, 200, 164, AccessFlags::LOCAL_WRITE, false, |mr| {
        RecvWr::new(0xEC, mr.sge(0..100).unwrap())
    });
    assert_eq!((r.recv.wr_id, r.recv.status), (0xEC, WcStatus::LocLenErr), "{:?}", r.recv);
    assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemInvReqErr), "{:?}", r.send);
    assert!(r.buf.iter().all(|&b| b == GUARD), "a refused single-packet SEND wrote the buffer");
    assert_eq!(r.ca.get("rx_nak_inv_req"), Some(1), "{:?}", nonzero(&r.ca));
    assert_eq!(r.cb.get("tx_naks"), Some(1), "{:?}", nonzero(&r.cb));
}

#[test]
fn multi_packet_message_longer_than_the_receive_buffer_is_loc_len_err() {
    // (message, SGE) at MTU 256: 3000 into 1000 (packets 0..3 fit, packet 3 would end at
    // 1024); 1001 into 1000 (only the LAST packet's final byte does not fit); 3000 into 100
    // (the FIRST packet already does not fit).
    for (len, sge) in [(3000, 1000), (1001, 1000), (3000, 100)] {
        let r = refused_send(Mtu::Mtu256, len, sge + 64, AccessFlags::LOCAL_WRITE, false, |mr| {
            RecvWr::new(0xED, mr.sge(0..sge).unwrap())
        });
        assert_eq!((r.recv.wr_id, r.recv.status), (0xED, WcStatus::LocLenErr), "{len} into {sge}: {:?}", r.recv);
        assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemInvReqErr), "{len} into {sge}: {:?}", r.send);
        if let Some(i) = r.buf[sge..].iter().position(|&b| b != GUARD) {
            panic!("{len} into {sge}: byte {} past the receive SGE was written", sge + i);
        }
        assert_eq!(r.ca.get("rx_nak_inv_req"), Some(1), "{len} into {sge}: {:?}", nonzero(&r.ca));
        assert_eq!(r.cb.get("cqes"), Some(1), "{len} into {sge}: {:?}", nonzero(&r.cb));
    }
}

/// IBTA 9.9.3.1 / 10.8.3.3: a responder that NAKs a request as invalid (or with a remote
/// operational error) puts its QP in the error state, where the rest of the message is dropped
/// silently: one NAK per refused message, however many packets follow.
#[test]
fn a_refused_multi_packet_message_draws_one_nak() {
    let mut extra = Vec::new();
    for (len, sge, prot) in [(3000, 1000, false), (3000, 100, false), (3000, 4096, true)] {
        let r = refused_send(Mtu::Mtu256, len, 4096, AccessFlags::LOCAL_WRITE, false, |mr| {
            if prot {
                RecvWr::new(0xEF, Sge::raw(mr.addr(), sge as u32, mr.lkey() ^ 0x80))
            } else {
                RecvWr::new(0xEF, mr.sge(0..sge).unwrap())
            }
        });
        assert_ne!(r.recv.status, WcStatus::Success);
        if (r.cb.get("tx_naks"), r.cb.get("tx_nak_seq")) != (Some(1), Some(0)) {
            extra.push(format!(
                "{len} B into a {sge}-byte SGE{} ({:?}): responder counters {:?}",
                if prot { " with a bad lkey" } else { "" },
                r.recv.status,
                nonzero(&r.cb)
            ));
        }
    }
    assert!(extra.is_empty(), "the responder sent more than one NAK:\n{}", extra.join("\n"));
}

#[test]
fn message_longer_than_a_receive_without_buffer_is_loc_len_err() {
    let r = refused_send(Mtu::Mtu1024, 1, 64, AccessFlags::LOCAL_WRITE, false, |_| RecvWr::zero_length(0xEE));
    assert_eq!((r.recv.wr_id, r.recv.status), (0xEE, WcStatus::LocLenErr), "{:?}", r.recv);
    assert_eq!(r.send.status, WcStatus::RemInvReqErr, "{:?}", r.send);
}

#[test]
fn bad_receive_lkey_is_loc_prot_err() {
    let r = refused_send(Mtu::Mtu1024, 300, 4096, AccessFlags::LOCAL_WRITE, false, |mr| {
        RecvWr::new(0xBAD, Sge::raw(mr.addr(), 4096, mr.lkey() ^ 0x80))
    });
    assert_prot_err(&r, 0xBAD);
}

#[test]
fn unknown_receive_lkey_index_is_loc_prot_err() {
    let r = refused_send(Mtu::Mtu1024, 300, 4096, AccessFlags::LOCAL_WRITE, false, |mr| {
        RecvWr::new(0xBAE, Sge::raw(mr.addr(), 4096, (mr.lkey() + (17 << 8)) & 0xFFFF))
    });
    assert_prot_err(&r, 0xBAE);
}

#[test]
fn receive_sge_past_the_end_of_its_mr_is_loc_prot_err() {
    // The message (100 B) would fit, but the SGE reaches 100 bytes past the MR.
    let r = refused_send(Mtu::Mtu1024, 100, 4096, AccessFlags::LOCAL_WRITE, false, |mr| {
        RecvWr::new(0xBAF, Sge::raw(mr.addr() + 3996, 200, mr.lkey()))
    });
    assert_prot_err(&r, 0xBAF);
}

#[test]
fn receive_sge_before_the_start_of_its_mr_is_loc_prot_err() {
    let r = refused_send(Mtu::Mtu1024, 100, 4096, AccessFlags::LOCAL_WRITE, false, |mr| {
        RecvWr::new(0xBB0, Sge::raw(mr.addr() - 1, 200, mr.lkey()))
    });
    assert_prot_err(&r, 0xBB0);
}

#[test]
fn receive_into_an_mr_without_local_write_is_loc_prot_err() {
    let r = refused_send(Mtu::Mtu1024, 100, 4096, AccessFlags::REMOTE_READ, false, |mr| {
        RecvWr::new(0xBB1, mr.sge(0..4096).unwrap())
    });
    assert_prot_err(&r, 0xBB1);
}

#[test]
fn receive_into_an_mr_of_another_pd_is_loc_prot_err() {
    let r = refused_send(Mtu::Mtu1024, 100, 4096, AccessFlags::LOCAL_WRITE, true, |mr| {
        RecvWr::new(0xBB2, mr.sge(0..4096).unwrap())
    });
    assert_prot_err(&r, 0xBB2);
}

#[test]
fn post_recv_errors_on_the_nic() {
    let h = hosts();
    let mut dst = vec![GUARD; 4096];
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).set_max_recv_wr(RQ).build().unwrap();
    let wr = RecvWr::new(1, dst_mr.sge(0..64).unwrap());
    let e = qb.post_recv_one(wr).unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "RESET: {e}");
    let qa = h.pa.create_qp(&h.ca).build().unwrap();
    qb.connect_with(&qa.endpoint().unwrap(), &opts(Mtu::Mtu1024)).unwrap();
    qb.post_recv(&vec![wr; RQ as usize]).unwrap();
    let e = qb.post_recv_one(wr).unwrap_err();
    assert_eq!(e.errno(), Errno::ENOMEM, "full RQ: {e}");
    // The default max_recv_sge (1) gets a 64-byte receive WQE, which holds 3 entries.
    let four: Vec<_> = (0..4).map(|i| dst_mr.sge(8 * i..8 * i + 8).unwrap()).collect();
    let four = RecvWr::with_sg_list(2, &four).unwrap();
    assert_eq!(qb.query_qp().cap.max_recv_sge, 3);
    let mut qc = h.pb.create_qp(&h.cb).set_max_send_wr(4).set_max_recv_wr(4).build().unwrap();
    qc.connect_with(&qa.endpoint().unwrap(), &opts(Mtu::Mtu1024)).unwrap();
    assert_eq!(qc.post_recv_one(four).unwrap_err().errno(), Errno::EINVAL, "more SGEs than max_recv_sge");
    assert_eq!(qc.recv_outstanding(), 0);
    let mut qn = h.pb.create_qp(&h.cb).set_max_send_wr(4).build().unwrap();
    qn.connect_with(&qa.endpoint().unwrap(), &opts(Mtu::Mtu1024)).unwrap();
    assert_eq!(qn.post_recv_one(wr).unwrap_err().errno(), Errno::EINVAL, "no receive queue");
}

#[test]
fn rnr_retry_0_fails_on_the_first_rnr_nak() {
    rnr_retry_is_exhausted(0);
}

#[test]
fn rnr_retry_1_and_3_are_counted_exactly() {
    rnr_retry_is_exhausted(1);
    rnr_retry_is_exhausted(3);
}

/// rnr_retry 7 is infinite: a SEND meets 12 RNR NAKs (more than any 3-bit count) and still
/// completes once a receive is posted.
#[test]
fn rnr_retry_7_is_infinite() {
    let h = hosts();
    let mut src = pattern(2, 64);
    let mut dst = vec![GUARD; 64];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 4, retry_cnt: 1, rnr_retry: 7, min_rnr_timer: 1, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 12, 400_000), "{}", h.diag());
        assert!(h.drain(&h.ca, 0).is_empty(), "the SEND gave up");
        qb.post_recv_one(RecvWr::new(2, dst_mr.sge(0..64).unwrap())).unwrap();
        let w = h.wait(&h.ca, 1, 100_000)[0];
        assert_eq!((w.wr_id, w.status), (1, WcStatus::Success), "{w:?}\n{}", h.diag());
        assert_eq!(h.a.counter(counter::TIMEOUTS).unwrap(), 0);
    }
    assert!(dst == src);
}

/// An atomic's local buffer is one 8-byte word: with a 64-byte SGE the NIC completes it with
/// IBV_WC_LOC_LEN_ERR before anything reaches the wire (ibv_post_send(3)).
#[test]
fn an_atomic_whose_local_buffer_is_not_8_bytes_is_loc_len_err() {
    for op in [WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicFetchAndAdd] {
        let wc = local_error(op);
        assert_eq!((wc.wr_id, wc.status), (4, WcStatus::LocLenErr), "{op:?}: {wc:?}");
    }
}

/// Moving a QP to ERR completes every posted receive with IBV_WC_WR_FLUSH_ERR, in RQ order; a
/// receive posted while in ERR is flushed as well. Nothing is written to the buffers.
#[test]
fn moving_to_err_flushes_every_posted_receive() {
    let h = hosts();
    let mut buf = vec![GUARD; 256];
    {
        let mr = h.pb.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
        let (_qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        for id in 1..=3u64 {
            qb.post_recv_one(RecvWr::new(id, mr.sge(0..64).unwrap())).unwrap();
        }
        assert!(h.drain(&h.cb, 20_000).is_empty(), "nothing completes before the QP leaves RTS");
        to_err(&mut qb);
        let got = h.wait(&h.cb, 3, 100_000);
        let flush = |id| (id, WcStatus::WrFlushErr, WcOpcode::Recv);
        assert_eq!(summary(&got), [flush(1), flush(2), flush(3)], "{}", h.diag());
        assert!(got.iter().all(|w| w.qp_num == qb.qp_num() && w.byte_len == 0));
        qb.post_recv_one(RecvWr::new(4, mr.sge(64..128).unwrap())).unwrap();
        assert_eq!(summary(&h.wait(&h.cb, 1, 100_000)), [flush(4)], "a receive posted in ERR");
        assert_eq!(qb.recv_outstanding(), 0);
        assert!(h.drain(&h.cb, 5_000).is_empty(), "one completion per receive");
    }
    assert!(buf.iter().all(|&b| b == GUARD), "a flushed receive wrote its buffer");
}

/// A receive error (a message longer than the receive buffer) moves the responder's QP to ERR:
/// the receives behind it and a SEND it posts afterwards complete with IBV_WC_WR_FLUSH_ERR,
/// and a later message to it is not accepted.
#[test]
fn a_receive_error_flushes_the_rest_of_the_rq_and_the_sq() {
    let h = hosts();
    let mut src = pattern(5, 300);
    let mut buf = vec![GUARD; 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let mr = h.pb.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        qb.post_recv_one(RecvWr::new(1, mr.sge(0..100).unwrap())).unwrap();
        qb.post_recv_one(RecvWr::new(2, mr.sge(128..256).unwrap())).unwrap();
        qb.post_recv_one(RecvWr::new(3, mr.sge(256..384).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(0x5E, src_mr.sge(0..200).unwrap()).signaled(true)).unwrap();
        let got = h.wait(&h.cb, 3, 200_000);
        let flush = |id| (id, WcStatus::WrFlushErr, WcOpcode::Recv);
        assert_eq!(summary(&got), [(1, WcStatus::LocLenErr, WcOpcode::Recv), flush(2), flush(3)], "{}", h.diag());
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
        // B's send queue is flushed too (B's CQ takes its send and receive completions).
        qb.post_send_one(SendWr::send(0xB0, mr.sge(384..400).unwrap()).signaled(true)).unwrap();
        let got = h.wait(&h.cb, 1, 100_000);
        assert_eq!(summary(&got), [(0xB0, WcStatus::WrFlushErr, WcOpcode::Send)], "{}", h.diag());
        assert_eq!(h.counters().1.get("tx_requests"), Some(0), "B sent nothing");
    }
    assert!(buf.iter().all(|&b| b == GUARD), "nothing was written");
}

/// A requester error (a WRITE with a bad rkey, answered NAK remote access error) moves the QP
/// to ERR: its own posted receive completes with IBV_WC_WR_FLUSH_ERR.
#[test]
fn a_requester_error_flushes_its_receive_queue() {
    let h = hosts();
    let mut src = pattern(6, 64);
    let mut mine = vec![GUARD; 64];
    let mut dst = vec![GUARD; 64];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let mine_mr = h.pa.register(&mut mine, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let o = ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) };
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        qa.post_recv_one(RecvWr::new(7, mine_mr.sge(0..64).unwrap())).unwrap();
        let mut bad = dst_mr.remote_addr(0).unwrap();
        bad.rkey ^= 0x40;
        qa.post_send_one(SendWr::rdma_write(8, src_mr.sge(0..64).unwrap(), bad).signaled(true)).unwrap();
        let got = h.wait(&h.ca, 2, 200_000);
        assert_eq!(
            summary(&got),
            [(8, WcStatus::RemAccessErr, WcOpcode::RdmaWrite), (7, WcStatus::WrFlushErr, WcOpcode::Recv)],
            "{}",
            h.diag()
        );
    }
    assert!(mine.iter().all(|&b| b == GUARD) && dst.iter().all(|&b| b == GUARD));
}

/// Moving a QP to ERR while WRITEs are in flight: every posted WR completes (the ones already
/// acknowledged successfully, the rest with IBV_WC_WR_FLUSH_ERR, in order), and the NIC keeps
/// serving other QPs.
#[test]
fn moving_to_err_with_writes_in_flight_flushes_them_and_other_qps_go_on() {
    const N: usize = 6;
    const LEN: usize = 256 * 1024;
    let h = hosts();
    let mut src = pattern(8, LEN);
    let mut dst = vec![0u8; LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let o = ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu4096) };
        let (mut qa, _qb) = h.qps(&o);
        let wrs: Vec<_> = (0..N)
            .map(|i| {
                SendWr::rdma_write(i as u64, src_mr.sge(0..LEN).unwrap(), dst_mr.remote_addr(0).unwrap()).signaled(true)
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        h.settle(3_000);
        to_err(&mut qa);
        let got = h.wait(&h.ca, N, 2_000_000);
        assert_eq!(got.iter().map(|w| w.wr_id).collect::<Vec<_>>(), (0..N as u64).collect::<Vec<_>>(), "{}", h.diag());
        let first_flush = got.iter().position(|w| w.status == WcStatus::WrFlushErr).expect("some WRITE was flushed");
        assert!(got[..first_flush].iter().all(|w| w.status == WcStatus::Success), "{:?}", summary(&got));
        assert!(got[first_flush..].iter().all(|w| w.status == WcStatus::WrFlushErr), "{:?}", summary(&got));
        assert_eq!(qa.outstanding(), 0);
        h.settle(50_000);
        assert!(h.drain(&h.ca, 0).is_empty(), "one completion per WR");
        // Another QP pair on the same NICs works.
        let (mut qa2, _qb2) = h.qps(&o);
        qa2.post_send_one(
            SendWr::rdma_write(99, src_mr.sge(0..4096).unwrap(), dst_mr.remote_addr(0).unwrap()).signaled(true),
        )
        .unwrap();
        let got = h.wait(&h.ca, 1, 500_000);
        assert_eq!((got[0].wr_id, got[0].status), (99, WcStatus::Success), "{}", h.diag());
    }
    assert_eq!(dst[..4096], src[..4096]);
}
