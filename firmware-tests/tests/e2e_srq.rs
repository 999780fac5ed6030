//! End-to-end shared receive queues (IBTA Vol 1 10.2.9; ibv_create_srq(3),
//! ibv_post_srq_recv(3), ibv_modify_srq(3), ibv_get_async_event(3)): QPs built on one SRQ take
//! their receive WQEs from it, in the order incoming messages start, whatever QP they arrive
//! on; completions go to each QP's receive CQ with its own QP number; the SRQ's limit event
//! fires once when a WQE taken leaves fewer than the limit posted, then the SRQ is disarmed.
mod common;

use common::{pattern, Hosts};
use rnic::{AccessFlags, AsyncEvent, ConnectOptions, Mtu, QueuePair, RecvWr, SendWr, SharedReceiveQueue, WcOpcode, WcStatus};
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
            srq.post_recv_one(RecvWr::new(100 + i, dmr.sge(i as usize * 512..(i as usize + 1) * 512).unwrap())).unwrap();
        }
        assert_eq!(srq.outstanding(), 8);
        // Alternate QPs: message k lands in SRQ WQE k.
        for k in 0..6usize {
            let (qa, _) = &mut qps[k % 2];
            qa.post_send_one(SendWr::send(k as u64, smr.sge(k * 100..k * 100 + 50 + k).unwrap()).signaled(true)).unwrap();
            assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
        }
        let wcs = h.wait(&h.cb, 6, 100_000);
        for (k, w) in wcs.iter().enumerate() {
            assert_eq!((w.wr_id, w.status, w.opcode, w.byte_len), (100 + k as u64, WcStatus::Success, WcOpcode::Recv, 50 + k as u32), "{w:?}");
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
        assert_eq!(h.b.wait_async_event(100_000).unwrap(), AsyncEvent::SrqLimitReached { srq_num: srq.srq_num(), wqes_left: 3 });
        assert!(srq.arm_limit(17).is_err());
    }
}
