//! End-to-end SQ drain (`IBV_QPS_SQD`, IBTA Vol 1 10.3.1; `IBV_EVENT_SQ_DRAINED`, 11.6.3.1;
//! ibv_modify_qp(3) `en_sqd_async_notify`): the NIC holds SQD as RTS with the QP context's
//! SQ_DRAIN bit. Its requester finishes the work requests it had already taken from the SQ,
//! starts none posted afterwards, and raises SQ_DRAINED once every one it started has
//! completed; SQD → RTS resumes the held ones (the driver rings the SQ doorbell again after
//! the context write).
//!
//! - `an_idle_qp_drains_at_once`: nothing outstanding: the event follows the modify, once,
//!   also after a doorbell rung in SQD (which starts nothing).
//! - `started_writes_finish_and_new_ones_wait_for_rts`: 16 WRITEs under way when the QP moves
//!   to SQD all complete before the event, 8 posted in SQD stay unsent (their bytes never
//!   reach the peer, no completion) until SQD → RTS.
//! - `a_drain_through_losses_raises_one_event`: the same over a lossy, reordering,
//!   duplicating wire with the modify right after the doorbell: the requester resends in SQD
//!   (go-back-N), the event comes once, after the last completion.
//! - `without_notify_there_is_no_event`: the drain still holds new work, but raises nothing.
//! - `sqd_transitions_follow_ibverbs`: the transitions and attributes ibverbs allows around
//!   SQD, and those it refuses.
mod common;

use common::{pattern, Hosts};
use rnic::{
    AccessFlags, AsyncEvent, AsyncEventType as T, ConnectOptions, Error, Mtu, QpAttr, QpAttrMask as M, QpState,
    QueuePair, SendWr, WcStatus, WorkCompletion,
};
use rnic_sim::{FaultConfig, SimConfig};

fn ev(qp: &QueuePair<'_>) -> AsyncEvent {
    AsyncEvent::Qp { event_type: T::SqDrained, qp_num: qp.qp_num() }
}

fn opts() -> ConnectOptions {
    ConnectOptions {
        path_mtu: Mtu::Mtu1024,
        timeout: 4,
        access: AccessFlags::REMOTE_WRITE,
        ..ConnectOptions::default()
    }
}

/// A connected pair A → B (A's SQ holds 64).
fn pair<'mr>(h: &Hosts) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(64).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, &opts()).unwrap();
    qb.connect_with(&ea, &opts()).unwrap();
    (qa, qb)
}

fn to_sqd(qp: &mut QueuePair<'_>, notify: bool) {
    let mask = if notify { M::STATE | M::EN_SQD_ASYNC_NOTIFY } else { M::STATE };
    qp.modify(&QpAttr { qp_state: QpState::Sqd, en_sqd_async_notify: notify, ..QpAttr::default() }, mask).unwrap();
    assert_eq!(qp.query_qp().qp_state, QpState::Sqd);
}

fn to_rts(qp: &mut QueuePair<'_>) {
    qp.modify(&QpAttr { qp_state: QpState::Rts, ..QpAttr::default() }, M::STATE).unwrap();
}

/// Steps the world until `h.a` has an asynchronous event, taking A's completions meanwhile;
/// returns the event and every completion polled up to and including the poll right after
/// it (the NIC writes a drain's last CQE before its event CQE). Panics after `budget` cycles.
fn until_event(h: &Hosts, got: &mut Vec<WorkCompletion>, budget: u64) -> AsyncEvent {
    let mut wcs = [WorkCompletion::default(); 16];
    let start = h.world.borrow().cycles();
    loop {
        let e = h.a.poll_async_event().unwrap();
        loop {
            let k = h.ca.poll(&mut wcs).unwrap();
            got.extend_from_slice(&wcs[..k]);
            if k == 0 {
                break;
            }
        }
        if let Some(e) = e {
            return e;
        }
        assert!(
            h.world.borrow().cycles() - start < budget,
            "no event within {budget} cycles; {} completions: {got:?}\n{}",
            got.len(),
            h.diag()
        );
        h.settle(64);
    }
}

/// WRITEs `ids` of `len` bytes each, from `src` to the same offsets of `dst`, signaled.
fn writes<'a>(
    src: &'a rnic::MemoryRegion<'a>,
    dst: &rnic::RemoteBuffer,
    ids: std::ops::Range<u64>,
    len: usize,
) -> Vec<SendWr<'a>> {
    ids.map(|i| {
        let r = i as usize * len..(i as usize + 1) * len;
        SendWr::rdma_write(i, src.sge(r).unwrap(), dst.at(i * len as u64)).signaled(true)
    })
    .collect()
}

fn ids(wcs: &[WorkCompletion]) -> Vec<u64> {
    wcs.iter().map(|w| w.wr_id).collect()
}

#[test]
fn an_idle_qp_drains_at_once() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(1, 256);
    let want = src.clone();
    let mut dst = vec![0u8; 256];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let (mut qa, qb) = pair(&h);
    let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
    assert_eq!(h.events_after(&h.a, 2_000), [], "no event before the drain");
    to_sqd(&mut qa, true);
    let mut got = Vec::new();
    assert_eq!(until_event(&h, &mut got, 50_000), ev(&qa));
    assert_eq!(got, [], "nothing to complete");
    // A WRITE posted in SQD is held: no packet, no completion, no second event.
    qa.post_send(&writes(&src_mr, &remote, 0..1, 256)).unwrap();
    assert_eq!(h.events_after(&h.a, 20_000), [], "one event per move to SQD");
    assert_eq!(h.ca.poll(&mut [WorkCompletion::default(); 4]).unwrap(), 0, "a WRITE ran in SQD");
    assert_eq!(h.counters().1.values[rnic_contract::regs::counter::RX_ROCE_OK as usize], 0, "a packet left in SQD");
    // SQD -> RTS resumes it (with the driver's doorbell after the modify), with no event.
    to_rts(&mut qa);
    let w = h.wait(&h.ca, 1, 200_000);
    assert_eq!((w[0].wr_id, w[0].status), (0, WcStatus::Success));
    assert_eq!(h.events_after(&h.a, 2_000), [], "no event for SQD -> RTS");
    drop(dst_mr);
    assert_eq!(dst, want);
}

#[test]
fn started_writes_finish_and_new_ones_wait_for_rts() {
    let h = Hosts::new(SimConfig::default());
    const LEN: usize = 4096;
    let mut src = pattern(2, 24 * LEN);
    let want = src.clone();
    let mut dst = vec![0u8; 24 * LEN];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let (mut qa, qb) = pair(&h);
    let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
    qa.post_send(&writes(&src_mr, &remote, 0..16, LEN)).unwrap();
    // The first completion: the requester has taken all 16 (one doorbell) and is under way.
    let mut got = h.wait(&h.ca, 1, 200_000);
    to_sqd(&mut qa, true);
    qa.post_send(&writes(&src_mr, &remote, 16..24, LEN)).unwrap();
    assert_eq!(until_event(&h, &mut got, 2_000_000), ev(&qa), "{got:?}");
    assert_eq!(ids(&got), (0..16).collect::<Vec<_>>(), "the drain's completions, before its event");
    assert!(got.iter().all(|w| w.status == WcStatus::Success), "{got:?}");
    // Held: nothing more completes, and the last 8 WRITEs' bytes never arrive.
    assert_eq!(h.events_after(&h.a, 30_000), []);
    assert_eq!(h.ca.poll(&mut [WorkCompletion::default(); 4]).unwrap(), 0, "a WRITE ran in SQD");
    assert_eq!(qa.query_qp().qp_state, QpState::Sqd);
    to_rts(&mut qa);
    let rest = h.wait(&h.ca, 8, 2_000_000);
    assert_eq!(ids(&rest), (16..24).collect::<Vec<_>>());
    assert!(rest.iter().all(|w| w.status == WcStatus::Success), "{rest:?}");
    assert_eq!(h.events_after(&h.a, 2_000), []);
    drop(dst_mr);
    assert!(dst == want, "{:?}", common::first_difference(&dst, &want));
}

#[test]
fn a_drain_through_losses_raises_one_event() {
    common::seeds::run_seeds("e2e_sqd", 3, |seed| {
        let faults = FaultConfig {
            seed,
            drop_probability: 0.03,
            reorder_probability: 0.02,
            duplicate_probability: 0.02,
            ..FaultConfig::default()
        };
        let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
        const LEN: usize = 2048;
        let mut src = pattern(seed, 40 * LEN);
        let want = src.clone();
        let mut dst = vec![0u8; 40 * LEN];
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = pair(&h);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let c0 = h.counters().0;
        qa.post_send(&writes(&src_mr, &remote, 0..32, LEN)).unwrap();
        // Right after the doorbell: the modify may reach the NIC before or after the requester
        // took it. One doorbell: all 32 drain, or none started and all wait for RTS.
        to_sqd(&mut qa, true);
        qa.post_send(&writes(&src_mr, &remote, 32..40, LEN)).unwrap();
        let mut got = Vec::new();
        assert_eq!(until_event(&h, &mut got, 20_000_000), ev(&qa), "seed {seed}");
        let n = got.len() as u64;
        assert!(n == 32 || n == 0, "seed {seed}: {n} completions at the event: {:?}", ids(&got));
        assert_eq!(ids(&got), (0..n).collect::<Vec<_>>(), "seed {seed}");
        assert!(got.iter().all(|w| w.status == WcStatus::Success), "seed {seed}: {got:?}");
        assert_eq!(h.events_after(&h.a, 50_000), [], "seed {seed}: a second event");
        assert_eq!(h.ca.poll(&mut [WorkCompletion::default(); 4]).unwrap(), 0, "seed {seed}: a WRITE ran in SQD");
        to_rts(&mut qa);
        let rest = h.wait(&h.ca, 40 - n as usize, 20_000_000);
        assert_eq!(ids(&rest), (n..40).collect::<Vec<_>>(), "seed {seed}");
        assert!(rest.iter().all(|w| w.status == WcStatus::Success), "seed {seed}: {rest:?}");
        assert_eq!(h.events_after(&h.a, 2_000), [], "seed {seed}");
        let c1 = h.counters().0;
        let resent = common::delta(&c1, &c0, rnic_contract::regs::counter::RETRANSMITS);
        drop(dst_mr);
        assert!(dst == want, "seed {seed}: {:?}", common::first_difference(&dst, &want));
        format!("{n} WRITEs drained, {resent} packets resent")
    })
}

#[test]
fn without_notify_there_is_no_event() {
    let h = Hosts::new(SimConfig::default());
    const LEN: usize = 1024;
    let mut src = pattern(4, 8 * LEN);
    let want = src.clone();
    let mut dst = vec![0u8; 8 * LEN];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let (mut qa, qb) = pair(&h);
    let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
    qa.post_send(&writes(&src_mr, &remote, 0..4, LEN)).unwrap();
    let mut got = h.wait(&h.ca, 1, 200_000);
    to_sqd(&mut qa, false);
    qa.post_send(&writes(&src_mr, &remote, 4..8, LEN)).unwrap();
    got.extend(h.wait(&h.ca, 3, 200_000));
    assert_eq!(ids(&got), [0, 1, 2, 3]);
    assert_eq!(h.events_after(&h.a, 30_000), [], "an event without en_sqd_async_notify");
    assert_eq!(h.ca.poll(&mut [WorkCompletion::default(); 4]).unwrap(), 0, "a WRITE ran in SQD");
    // SQD -> SQD may change attributes; the held WRITEs wait on.
    qa.modify(&QpAttr { timeout: 6, retry_cnt: 5, ..QpAttr::default() }, M::TIMEOUT | M::RETRY_CNT).unwrap();
    assert_eq!((qa.query_qp().qp_state, qa.query_qp().timeout), (QpState::Sqd, 6));
    assert_eq!(h.events_after(&h.a, 10_000), []);
    assert_eq!(h.ca.poll(&mut [WorkCompletion::default(); 4]).unwrap(), 0, "a WRITE ran in SQD");
    to_rts(&mut qa);
    assert_eq!(ids(&h.wait(&h.ca, 4, 200_000)), [4, 5, 6, 7]);
    drop(dst_mr);
    assert_eq!(dst, want);
}

#[test]
fn sqd_transitions_follow_ibverbs() {
    let h = Hosts::new(SimConfig::default());
    let mut qa = h.pa.create_qp(&h.ca).build().unwrap();
    let sqd = QpAttr { qp_state: QpState::Sqd, ..QpAttr::default() };
    let refused = |r: rnic::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(refused(qa.modify(&sqd, M::STATE)), "RESET -> SQD");
    let (mut qa, _qb) = pair(&h);
    // RTS -> SQD takes only EN_SQD_ASYNC_NOTIFY.
    assert!(refused(qa.modify(&QpAttr { timeout: 3, ..sqd }, M::STATE | M::TIMEOUT)), "RTS -> SQD with TIMEOUT");
    to_sqd(&mut qa, true);
    // SQD -> SQD: no EN_SQD_ASYNC_NOTIFY, no SQ_PSN; SQD -> RTR is not a transition.
    assert!(refused(qa.modify(&sqd, M::STATE | M::EN_SQD_ASYNC_NOTIFY)), "SQD -> SQD with EN_SQD_ASYNC_NOTIFY");
    assert!(refused(qa.modify(&QpAttr { sq_psn: 5, ..sqd }, M::STATE | M::SQ_PSN)), "SQD -> SQD with SQ_PSN");
    assert!(refused(qa.modify(&QpAttr { qp_state: QpState::Rtr, ..sqd }, M::STATE)), "SQD -> RTR");
    assert_eq!(qa.query_qp().qp_state, QpState::Sqd, "a refused modify changes nothing");
    // SQD -> RTS with CUR_STATE checks it.
    let rts = QpAttr { qp_state: QpState::Rts, cur_qp_state: QpState::Rts, ..QpAttr::default() };
    assert!(refused(qa.modify(&rts, M::STATE | M::CUR_STATE)), "cur_qp_state RTS while in SQD");
    qa.modify(&QpAttr { cur_qp_state: QpState::Sqd, ..rts }, M::STATE | M::CUR_STATE).unwrap();
    assert_eq!(qa.query_qp().qp_state, QpState::Rts);
    // SQD -> ERR flushes as from RTS.
    to_sqd(&mut qa, false);
    qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, M::STATE).unwrap();
    assert_eq!(qa.query_qp().qp_state, QpState::Err);
}
