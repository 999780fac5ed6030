//! End-to-end CQ overruns (IBTA Vol 1 11.4.2.1; `IBV_EVENT_CQ_ERR` of ibv_get_async_event(3);
//! `rnic_contract::regs::CQ_CI`): the NIC, not the driver, finds a CQ full, drops the CQE
//! without touching the ring, counts it in `DROP_CQ_OVERRUN` and raises `CQ_ERR` naming the CQ
//! on the context's event queue; a program that polls and keeps within its CQ never sees one.
//!
//! - `a_cq_that_is_never_polled_overruns_and_raises_cq_err`: a CQ of `cqe` 4 (a ring of 8) and
//!   11 signaled WRITEs, none polled: the first 8 CQEs fill the ring, the other 3 are dropped
//!   and counted, the ring's bytes are the same as before them (nothing overwritten), exactly
//!   one `AsyncEvent::CqErr` with the CQ's number arrives, and polling then returns the first 8
//!   completions in order and nothing more. The posts were not refused.
//! - `a_receive_cq_overrun_still_acknowledges_the_sends`: a responder whose receive CQ (cqe 2,
//!   ring 4) is not polled takes 6 SENDs: 4 receive CQEs placed, 2 dropped, and every SEND still
//!   completes successfully at the requester (the dropped CQEs' ACKs are sent), with no retry.
//! - `a_program_that_polls_never_overruns`: 10,000 signaled WRITEs through a CQ of `cqe` 16, the
//!   program keeping at most 16 completions unpolled (posting right after each poll): every
//!   one completes in order, `DROP_CQ_OVERRUN` stays 0 and no asynchronous event is raised
//!   (the driver's consumer-index reports keep the NIC's view within the ring).
mod common;

use common::{pattern, Hosts};
use rnic::{AccessFlags, AsyncEvent, ConnectOptions, Mtu, RecvWr, SendWr, WcStatus, WorkCompletion};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

fn opts() -> ConnectOptions {
    ConnectOptions { path_mtu: Mtu::Mtu1024, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() }
}

fn ring_bytes(ctx: &rnic::Context, cq: &rnic::CompletionQueue) -> Vec<u8> {
    let (iova, len) = cq.ring();
    let mut b = vec![0u8; len];
    ctx.device().dma_read(iova, &mut b).unwrap();
    b
}

#[test]
fn a_cq_that_is_never_polled_overruns_and_raises_cq_err() {
    let h = Hosts::new(SimConfig::default());
    let cq = h.a.create_cq(4).unwrap();
    assert_eq!((cq.capacity(), cq.ring().1), (4, 8 * 32));
    let mut src = pattern(1, 64);
    let mut dst = vec![0u8; 64 * 16];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&cq).set_max_send_wr(16).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).build().unwrap();
    let eb = qb.endpoint().unwrap().with_buffer(&dst_mr);
    qa.connect_with(&eb, &opts()).unwrap();
    qb.connect_with(&qa.endpoint().unwrap(), &opts()).unwrap();
    let remote = eb.buffer.unwrap();
    let write = |i: u64| SendWr::rdma_write(i, src_mr.sge(0..64).unwrap(), remote.at(i * 64)).signaled(true);

    // Eight fill the ring (twice the cqe: the driver's slack); nothing is dropped yet.
    let eight: Vec<_> = (0..8).map(write).collect();
    qa.post_send(&eight).unwrap();
    assert!(h.wait_counter(&h.a, counter::CQES, 8, 2_000_000), "8 completions made\n{}", h.diag());
    h.settle(5_000);
    let full = ring_bytes(&h.a, &cq);
    assert_eq!(h.a.counter(counter::DROP_CQ_OVERRUN).unwrap(), 0);
    assert_eq!(h.events_after(&h.a, 0), [], "no event before the overrun");

    // Three more, posted without a refusal: dropped and counted, the ring untouched.
    let three: Vec<_> = (8..11).map(write).collect();
    qa.post_send(&three).unwrap();
    assert!(h.wait_counter(&h.a, counter::DROP_CQ_OVERRUN, 3, 2_000_000), "3 CQEs dropped\n{}", h.diag());
    h.settle(5_000);
    assert_eq!(h.a.counter(counter::DROP_CQ_OVERRUN).unwrap(), 3);
    assert_eq!(h.a.counter(counter::CQES).unwrap(), 11, "every WRITE completed at the NIC");
    assert!(ring_bytes(&h.a, &cq) == full, "the ring was written after it was full");
    assert_eq!(h.events_after(&h.a, 2_000), [AsyncEvent::CqErr { cq_num: cq.cqn() }], "one CQ_ERR naming the CQ");
    assert_eq!(h.events_after(&h.b, 0), [], "nothing at the peer");

    // The ring holds the first 8 completions, in order, and nothing after them.
    let mut wcs = [WorkCompletion::default(); 16];
    let n = cq.poll(&mut wcs).unwrap();
    let ids: Vec<u64> = wcs[..n].iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
    assert!(wcs[..n].iter().all(|w| w.status == WcStatus::Success));
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0);
    // The peer's memory got all 11 WRITEs (only their completions were lost).
    drop(dst_mr);
    let want = pattern(1, 64);
    for i in 0..11 {
        assert_eq!(&dst[i * 64..(i + 1) * 64], &want[..], "WRITE {i} landed");
    }
}

#[test]
fn a_receive_cq_overrun_still_acknowledges_the_sends() {
    let h = Hosts::new(SimConfig::default());
    let rcq = h.b.create_cq(2).unwrap();
    let mut src = pattern(2, 32);
    let mut dst = vec![0u8; 32 * 8];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_recv_cq(&rcq).set_max_send_wr(1).set_max_recv_wr(8).build().unwrap();
    qa.connect_with(&qb.endpoint().unwrap(), &opts()).unwrap();
    qb.connect_with(&qa.endpoint().unwrap(), &opts()).unwrap();
    let recvs: Vec<_> =
        (0..8u64).map(|i| RecvWr::new(i, dst_mr.sge(i as usize * 32..(i as usize + 1) * 32).unwrap())).collect();
    qb.post_recv(&recvs).unwrap();
    let sends: Vec<_> = (0..6u64).map(|i| SendWr::send(100 + i, src_mr.sge(0..32).unwrap()).signaled(true)).collect();
    qa.post_send(&sends).unwrap();
    let wcs = h.wait(&h.ca, 6, 2_000_000);
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
    let (ca, cb) = h.counters();
    assert_eq!(ca.values[counter::RETRANSMITS as usize], 0, "no SEND was retried\n{}", h.diag());
    assert_eq!(cb.values[counter::DROP_CQ_OVERRUN as usize], 2, "{}", h.diag());
    assert_eq!(h.events_after(&h.b, 2_000), [AsyncEvent::CqErr { cq_num: rcq.cqn() }]);
    let mut got = [WorkCompletion::default(); 8];
    let n = rcq.poll(&mut got).unwrap();
    assert_eq!(got[..n].iter().map(|w| w.wr_id).collect::<Vec<_>>(), [0, 1, 2, 3], "the first 4 receives");
}

#[test]
fn a_program_that_polls_never_overruns() {
    const TOTAL: u64 = 10_000;
    const CQE: usize = 16;
    let h = Hosts::new(SimConfig::default());
    let cq = h.a.create_cq(CQE).unwrap();
    assert_eq!(cq.capacity(), CQE);
    let mut src = pattern(3, 8);
    let mut dst = vec![0u8; 8 * CQE];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&cq).set_max_send_wr(CQE as u32).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).build().unwrap();
    let eb = qb.endpoint().unwrap().with_buffer(&dst_mr);
    qa.connect_with(&eb, &opts()).unwrap();
    qb.connect_with(&qa.endpoint().unwrap(), &opts()).unwrap();
    let remote = eb.buffer.unwrap();
    let (mut posted, mut done) = (0u64, 0u64);
    let mut wcs = [WorkCompletion::default(); CQE];
    let start = h.world.borrow().cycles();
    while done < TOTAL {
        // Keep at most CQE completions unpolled: post up to that many outstanding.
        let room = (CQE as u64 - (posted - done)).min(TOTAL - posted);
        if room > 0 {
            let wrs: Vec<_> = (posted..posted + room)
                .map(|i| {
                    let off = (i % CQE as u64) * 8;
                    SendWr::rdma_write(i, src_mr.sge(0..8).unwrap(), remote.at(off)).signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
            posted += room;
        }
        let n = cq.poll(&mut wcs).unwrap();
        for w in &wcs[..n] {
            assert_eq!((w.wr_id, w.status), (done, WcStatus::Success), "completion {done}\n{}", h.diag());
            done += 1;
        }
        assert!(h.world.borrow().cycles() - start < 400 * TOTAL, "{done} of {TOTAL} done\n{}", h.diag());
    }
    h.settle(2_000);
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0);
    assert_eq!(h.a.counter(counter::DROP_CQ_OVERRUN).unwrap(), 0, "{}", h.diag());
    assert_eq!(h.a.counter(counter::CQES).unwrap(), TOTAL as u32);
    assert_eq!(h.events_after(&h.a, 0), [], "no CQ_ERR");
}
