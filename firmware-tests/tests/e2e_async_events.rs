//! End-to-end QP-affiliated asynchronous events (ibv_get_async_event(3); IBTA Vol 1 11.6.3):
//! the NIC writes each event as an event CQE to the context's event queue
//! (`rnic_contract::regs::ASYNC_EVENT_CQ`) and `Context::poll_async_event` returns it as
//! `AsyncEvent::Qp { event_type, qp_num }`, once per event, in the order raised.
//!
//! - `too_many_reads_raise_qp_req_err_at_the_responder`: a READ beyond the responder's
//!   `max_dest_rd_atomic` (NAK invalid request, a class C error): QP_REQ_ERR on the responder,
//!   none on the requester, whose READ failed with IBV_WC_REM_INV_REQ_ERR (a requester error
//!   is reported by its completion: rxe and mlx5 raise no event either).
//! - `a_send_longer_than_its_receive_raises_qp_req_err`: IBV_WC_LOC_LEN_ERR at the responder
//!   (NAK invalid request too): QP_REQ_ERR; nothing at the requester.
//! - `a_receive_into_a_read_only_mr_raises_qp_access_err`: IBV_WC_LOC_PROT_ERR at the
//!   responder: QP_ACCESS_ERR, waited for with the blocking `get_async_event_timeout` (the
//!   context sleeps on its event queue's interrupt vector while the simulator runs).
//! - `retries_exhausted_raise_no_event`: a peer that never answers (its QP left in INIT): the
//!   requester's WRITE fails with IBV_WC_RETRY_EXC_ERR, its QP is in ERR, and no event is
//!   raised on either side (the blocking wait times out). `rnr_retries_exhausted_raise_no_event`:
//!   the same after RNR NAKs.
//! - `the_first_request_in_rtr_raises_comm_est_once`: COMM_EST when the first request reaches
//!   a QP in RTR, not again for the next ones nor after it moves to RTS; none for a QP that was
//!   already in RTS.
//! - `a_qp_on_an_srq_raises_last_wqe_reached_when_it_enters_err`: after its error event when
//!   the NIC moves it to ERR, alone when the driver does.
//! - `a_send_wqe_the_nic_cannot_read_raises_qp_fatal`: the SQ ring unmapped behind the
//!   driver's back (as an IOMMU fault would) after a WRITE is posted: the NIC's DMA read of the
//!   WQE is answered DECERR, the WQE completes with IBV_WC_LOC_QP_OP_ERR, nothing reaches the
//!   peer, the QP is in ERR, and QP_FATAL (a local work queue catastrophic error) is raised on
//!   the requester only. SQ_DRAINED is provoked in `e2e_sqd.rs`.
//! - The responder's QP_ACCESS_ERR is checked in `e2e_write.rs`
//!   (`a_remote_access_error_puts_the_responder_qp_in_error`).
mod common;

use common::{pattern, Hosts};
use rnic::{
    AccessFlags, AddressVector, AsyncEvent, AsyncEventType as T, ConnectOptions, Mtu, QpAttr, QpAttrMask, QpState,
    QueuePair, RecvWr, SendWr, WcStatus,
};
use rnic_sim::SimConfig;

fn hosts() -> Hosts {
    Hosts::new(SimConfig::default())
}

fn ev(event_type: T, qp: &QueuePair<'_>) -> AsyncEvent {
    AsyncEvent::Qp { event_type, qp_num: qp.qp_num() }
}

/// A connected pair A → B with `oa` / `ob` (B with an RQ of 4).
fn pair<'mr>(h: &Hosts, oa: &ConnectOptions, ob: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, oa).unwrap();
    qb.connect_with(&ea, ob).unwrap();
    (qa, qb)
}

fn opts() -> ConnectOptions {
    ConnectOptions { path_mtu: Mtu::Mtu1024, timeout: 8, ..ConnectOptions::default() }
}

#[test]
fn too_many_reads_raise_qp_req_err_at_the_responder() {
    let h = hosts();
    let mut remote_buf = pattern(9, 8 * 16384);
    let mut local = vec![0u8; 8 * 16384];
    let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
    let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
    let o = ConnectOptions { access: AccessFlags::REMOTE_READ, ..opts() };
    let (mut qa, qb) =
        pair(&h, &ConnectOptions { max_rd_atomic: 8, ..o }, &ConnectOptions { max_dest_rd_atomic: 1, ..o });
    let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
    let wrs: Vec<SendWr<'_>> = (0..8u64)
        .map(|i| {
            let r = i as usize * 16384..(i as usize + 1) * 16384;
            SendWr::rdma_read(i, local_mr.sge(r).unwrap(), remote.at(i * 16384)).signaled(true)
        })
        .collect();
    assert_eq!(h.events_after(&h.a, 0), [], "events before any traffic");
    qa.post_send(&wrs).unwrap();
    let wcs = h.wait(&h.ca, 8, 2_000_000);
    assert!(wcs.iter().any(|w| w.status == WcStatus::RemInvReqErr), "no READ refused: {wcs:?}\n{}", h.diag());
    assert_eq!(h.events_after(&h.b, 2_000), [ev(T::QpReqErr, &qb)], "responder events");
    assert_eq!(h.events_after(&h.a, 0), [], "requester events");
}

#[test]
fn a_send_longer_than_its_receive_raises_qp_req_err() {
    let h = hosts();
    let mut src = pattern(3, 200);
    let mut buf = vec![0u8; 100];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let mr = h.pb.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let (mut qa, mut qb) = pair(&h, &opts(), &opts());
    qb.post_recv_one(RecvWr::new(0xEC, mr.sge(0..100).unwrap())).unwrap();
    qa.post_send_one(SendWr::send(0x5E, src_mr.sge(0..200).unwrap()).signaled(true)).unwrap();
    assert_eq!(h.wait(&h.cb, 1, 200_000)[0].status, WcStatus::LocLenErr);
    assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
    assert_eq!(h.events_after(&h.b, 2_000), [ev(T::QpReqErr, &qb)], "responder events");
    assert_eq!(h.events_after(&h.a, 0), [], "requester events");
}

/// A receive WQE whose scatter entry's MR does not grant LOCAL_WRITE: IBV_WC_LOC_PROT_ERR at
/// the responder (NAK remote operational error) raises QP_ACCESS_ERR, which the blocking wait
/// returns; nothing at the requester.
#[test]
fn a_receive_into_a_read_only_mr_raises_qp_access_err() {
    let h = hosts();
    let mut src = pattern(3, 64);
    let mut buf = vec![0u8; 64];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let mr = h.pb.register(&mut buf, AccessFlags::empty()).unwrap();
    let (mut qa, mut qb) = pair(&h, &opts(), &opts());
    qb.post_recv_one(RecvWr::new(0xED, mr.sge(0..64).unwrap())).unwrap();
    qa.post_send_one(SendWr::send(0x5F, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
    // Blocking: the context sleeps on its event queue's interrupt vector (the simulator runs
    // meanwhile) until the NIC raises the responder's event.
    assert!(h.b.has_qp_events());
    assert_eq!(h.b.async_event_vector(), Some(31), "the highest vector");
    let e = h.b.get_async_event_timeout(std::time::Duration::from_secs(120)).unwrap();
    assert_eq!(e, Some(ev(T::QpAccessErr, &qb)), "{}", h.diag());
    assert_eq!(h.wait(&h.cb, 1, 200_000)[0].status, WcStatus::LocProtErr);
    assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemOpErr);
    assert_eq!(h.events_after(&h.b, 2_000), [], "one responder event");
    assert_eq!(h.events_after(&h.a, 0), [], "requester events");
}

/// A WRITE to a peer QP that never leaves INIT (its NIC drops every packet for it): after
/// `1 + retry_cnt` tries the WRITE completes with IBV_WC_RETRY_EXC_ERR and the QP is in ERR; no
/// event on either side.
#[test]
fn retries_exhausted_raise_no_event() {
    let h = hosts();
    let mut src = pattern(5, 64);
    let mut dst = vec![0u8; 64];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
    let eb = qb.endpoint().unwrap().with_buffer(&dst_mr);
    qa.connect_with(&eb, &ConnectOptions { timeout: 4, retry_cnt: 1, ..opts() }).unwrap();
    let remote = eb.buffer.unwrap();
    qa.post_send_one(SendWr::rdma_write(7, src_mr.sge(0..64).unwrap(), remote.at(0)).signaled(true)).unwrap();
    let c0 = h.world.borrow().cycles();
    let w = h.wait(&h.ca, 1, 2_000_000)[0];
    assert!(h.world.borrow().cycles() - c0 > 2 * 16_384, "the completion before two ACK timeouts");
    assert_eq!((w.wr_id, w.status), (7, WcStatus::RetryExcErr), "{w:?}\n{}", h.diag());
    assert_eq!(qa.state(), QpState::Err);
    assert_eq!(h.a.get_async_event_timeout(std::time::Duration::from_millis(200)).unwrap(), None, "no event");
    assert_eq!(h.events_after(&h.a, 2_000), [], "requester events");
    assert_eq!(h.events_after(&h.b, 0), [], "the silent peer's events");
}

#[test]
fn rnr_retries_exhausted_raise_no_event() {
    let h = hosts();
    let mut src = pattern(1, 64);
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    let o = ConnectOptions { timeout: 4, retry_cnt: 1, rnr_retry: 1, min_rnr_timer: 1, ..opts() };
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
    assert_eq!(h.wait(&h.ca, 1, 400_000)[0].status, WcStatus::RnrRetryExcErr);
    assert_eq!(h.events_after(&h.a, 2_000), [], "requester events");
    assert_eq!(h.events_after(&h.b, 0), [], "the RNR-NAKing responder stays in RTS: no event");
}

#[test]
fn the_first_request_in_rtr_raises_comm_est_once() {
    let h = hosts();
    let mut src = pattern(41, 256);
    let mut dst = vec![0u8; 256];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&dst_mr));
    let o = ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts() };
    qa.connect_with(&eb, &o).unwrap();
    use QpAttrMask as M;
    let attr = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        path_mtu: o.path_mtu,
        qp_access_flags: AccessFlags::REMOTE_WRITE,
        ah_attr: AddressVector { dest_mac: ea.mac, dest_ip: ea.ip },
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
    assert_eq!(h.events_after(&h.b, 1_000), [], "events before the first packet");
    let remote = eb.buffer.unwrap();
    let mut write = |id: u64| {
        let wr = SendWr::rdma_write(id, src_mr.sge(0..64).unwrap(), remote.at(64 * (id - 1))).signaled(true);
        qa.post_send_one(wr).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
    };
    write(1);
    assert_eq!(h.events_after(&h.b, 2_000), [ev(T::CommEst, &qb)], "the first request in RTR");
    write(2);
    assert_eq!(h.events_after(&h.b, 2_000), [], "a second request in RTR");
    let rts = QpAttr { qp_state: QpState::Rts, timeout: 8, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1, ..attr };
    qb.modify(&rts, M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC).unwrap();
    write(3);
    assert_eq!(h.events_after(&h.b, 2_000), [], "a request in RTS");
    assert_eq!(h.events_after(&h.a, 0), [], "the requester, in RTS from the start");
}

#[test]
fn a_qp_on_an_srq_raises_last_wqe_reached_when_it_enters_err() {
    let h = hosts();
    let mut src = pattern(4, 256);
    let mut dst = vec![0u8; 4 * 64];
    let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let srq = h.pb.create_srq(8, 1).unwrap();
    for i in 0..4u64 {
        srq.post_recv_one(RecvWr::new(i, dmr.sge(i as usize * 64..(i as usize + 1) * 64).unwrap())).unwrap();
    }
    let on_srq = |h: &Hosts| {
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).set_srq(&srq).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts()).unwrap();
        qb.connect_with(&ea, &opts()).unwrap();
        (qa, qb)
    };
    // The NIC moves QP B1 to ERR (a SEND longer than the SRQ WQE's 64 bytes): its error
    // event, then LAST_WQE_REACHED.
    let (mut qa1, qb1) = on_srq(&h);
    qa1.post_send_one(SendWr::send(9, smr.sge(0..100).unwrap()).signaled(true)).unwrap();
    assert_eq!(h.wait(&h.cb, 1, 200_000)[0].status, WcStatus::LocLenErr);
    assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
    assert_eq!(
        h.events_after(&h.b, 2_000),
        [ev(T::QpReqErr, &qb1), ev(T::QpLastWqeReached, &qb1)],
        "the NIC moved the QP on the SRQ to ERR"
    );
    // The driver moves QP B2 to ERR: LAST_WQE_REACHED alone.
    let (_qa2, mut qb2) = on_srq(&h);
    qb2.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
    assert_eq!(h.events_after(&h.b, 2_000), [ev(T::QpLastWqeReached, &qb2)], "the driver moved it to ERR");
    assert_eq!(srq.outstanding(), 3, "no SRQ WQE flushed");
}

#[test]
fn a_send_wqe_the_nic_cannot_read_raises_qp_fatal() {
    let h = hosts();
    let mut src = pattern(6, 64);
    let mut dst = vec![0u8; 64];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let o = ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts() };
    let (mut qa, qb) = pair(&h, &o, &o);
    let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
    let b0 = h.counters().1;
    qa.post_send_one(SendWr::rdma_write(0x77, src_mr.sge(0..64).unwrap(), remote.at(0)).signaled(true)).unwrap();
    // The doorbell is rung; the WQE's read is answered 64 cycles after the NIC asks for it, and
    // the simulator checks the mapping for each beat: unmapping the ring now makes it DECERR.
    let ring = rnic_sim::host_memory::Iova(qa.sq_ring_iova().0);
    h.world.borrow_mut().memory_mut(0).unwrap().unmap(ring).unwrap();
    let w = h.wait(&h.ca, 1, 200_000)[0];
    assert_eq!((w.status, w.qp_num), (WcStatus::LocQpOpErr, qa.qp_num()), "{w:?}\n{}", h.diag());
    assert_eq!(h.events_after(&h.a, 2_000), [ev(T::QpFatal, &qa)], "requester events");
    assert_eq!(h.events_after(&h.b, 0), [], "responder events");
    assert_eq!(qa.query_qp().qp_state, QpState::Err);
    let b1 = h.counters().1;
    assert_eq!(common::delta(&b1, &b0, rnic_contract::regs::counter::RX_ROCE_OK), 0, "a packet reached the peer");
    drop(dst_mr);
    assert!(dst.iter().all(|&b| b == 0), "the peer's buffer changed");
}
