//! Unit tests of the driver's shared receive queues and of its asynchronous-event queue on the
//! recording mock device (split from `tests.rs`, whose helpers they share).
use rnic_contract::{qp_context, recv_wqe, regs, srq_context, verbs};

use crate::qp::{transition_masks, MAX_RECV_SGE, MAX_RECV_WR};
use crate::records::{owner_for, Cqe};
use crate::tests::{cq_base, full_attr, last_cmd, last_qp_context, open, to_rts};
use crate::*;

// ---- Shared receive queues (ibv_create_srq(3), ibv_post_srq_recv(3), ibv_modify_srq(3)) ----

/// A CQ reserves nothing for the SRQs its QPs receive from: any number of QPs on SRQs of any
/// size attach to a small CQ, and posts on its other QPs are limited by their RQ alone (an
/// overrun is the program's to avoid; the NIC reports it as IBV_EVENT_CQ_ERR).
#[test]
fn a_cq_reserves_nothing_for_srqs() {
    let (_dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4).unwrap();
    let srq = pd.create_srq(64, 1).unwrap();
    let srq2 = pd.create_srq(64, 1).unwrap();
    let qps: Vec<_> = (0..3)
        .map(|i| pd.create_qp(&cq).set_max_send_wr(2).set_srq(if i == 0 { &srq } else { &srq2 }).build())
        .collect();
    assert!(qps.iter().all(Result::is_ok), "QPs on SRQs larger than their CQ are built");
    let mut buf = vec![0u8; 4096];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let mut own = pd.create_qp(&cq).set_max_send_wr(1).set_max_recv_wr(16).build().unwrap();
    to_rts(&mut own);
    let recvs: Vec<_> = (0..17).map(|i| RecvWr::new(i, mr.sge(0..64).unwrap())).collect();
    let e = own.post_recv(&recvs).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 16), "the RQ's 16 entries limit the post, not the CQ's 4");
    assert!(e.error.to_string().contains("RQ of QP"), "{e}");
}

#[test]
fn create_srq_writes_its_context_and_arm_limit_modifies_it() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    assert_eq!(pd.create_srq(0, 1).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(pd.create_srq(MAX_RECV_WR + 1, 1).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(pd.create_srq(4, MAX_RECV_SGE + 1).unwrap_err().errno(), Errno::EOPNOTSUPP);
    let srq = pd.create_srq(3, 1).unwrap();
    let (op, idx, rec) = last_cmd(&dev);
    assert_eq!((op, u32::from(idx)), (regs::cmd_op::WRITE_SRQ, srq.srq_num()));
    assert_eq!((srq_context::INIT.get(&rec), srq_context::LIMIT.get(&rec)), (1, 0), "new and disarmed");
    let event_cq = srq_context::EVENT_CQ.get(&rec);
    let async_cq = dev.writes.borrow().iter().rfind(|(a, _)| *a == regs::ASYNC_EVENT_CQ).unwrap().1;
    assert_eq!(event_cq, u64::from(async_cq & regs::async_event_cq::CQN_MASK), "the context's event queue");
    assert_ne!(event_cq, u64::from(cq.cqn()));
    // 3 WRs round up to 4; a 64-byte receive WQE holds 3 scatter entries, reported as max_sge.
    assert_eq!(srq.query(), SrqAttr { max_wr: 4, max_sge: 3, srq_limit: 0 }, "3 WRs round up to 4");
    assert_eq!(srq.outstanding(), 0);
    // arm_limit: above max_wr is EINVAL and writes nothing; max_wr itself is fine.
    let writes = dev.writes.borrow().len();
    assert_eq!(srq.arm_limit(5).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(dev.writes.borrow().len(), writes);
    assert_eq!(srq.query().srq_limit, 0);
    srq.arm_limit(4).unwrap();
    let (op, idx, rec) = last_cmd(&dev);
    assert_eq!((op, u32::from(idx)), (regs::cmd_op::WRITE_SRQ, srq.srq_num()));
    assert_eq!(
        (srq_context::INIT.get(&rec), srq_context::LIMIT.get(&rec), srq_context::EVENT_CQ.get(&rec)),
        (0, 4, event_cq),
        "a modify keeps the indices"
    );
    assert_eq!(srq.query().srq_limit, 4);
    srq.arm_limit(0).unwrap();
    assert_eq!(srq_context::LIMIT.get(&last_cmd(&dev).2), 0);
    assert_eq!(ctx.poll_async_event().unwrap(), None);
    // Two SRQs take different numbers, also different from QPs'.
    let s2 = pd.create_srq(1, 0).unwrap();
    let qp = pd.create_qp(&cq).set_max_send_wr(4).build().unwrap();
    assert_ne!(s2.srq_num(), srq.srq_num());
    assert_ne!(qp.qp_num(), srq.srq_num());
    assert_ne!(qp.qp_num(), s2.srq_num());
    assert_eq!(s2.query().max_sge, 3, "max_sge 0 still gets a 64-byte WQE of 3 entries");
    // Dropping disarms the SRQ on the NIC.
    let n2 = s2.srq_num();
    drop(s2);
    let log = dev.writes.borrow();
    let pos = log.iter().rposition(|(a, v)| *a == regs::CMD && *v >> 24 == regs::cmd_op::WRITE_SRQ).unwrap();
    assert_eq!(log[pos].1 & 0xFF, n2, "the last SRQ command is the dropped SRQ's");
    let mut rec = [0u8; 64];
    for (a, v) in &log[pos - 16..pos] {
        let i = usize::from(a - regs::CMD_DATA);
        rec[i..i + 4].copy_from_slice(&v.to_le_bytes());
    }
    assert_eq!(srq_context::LIMIT.get(&rec), 0, "dropping disarms");
}

/// A QP on an SRQ: its context names the SRQ and describes the SRQ's ring; it refuses an RQ of
/// its own, an SRQ of another PD, and post_recv (EINVAL, nothing written).
#[test]
fn a_qp_on_an_srq_names_it_and_refuses_receives_of_its_own() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let pd2 = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut buf = vec![0u8; 256];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let srq = pd.create_srq(8, 1).unwrap();
    let e = pd.create_qp(&cq).set_max_send_wr(4).set_max_recv_wr(1).set_srq(&srq).build().unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "{e}");
    let e = pd2.create_qp(&cq).set_max_send_wr(4).set_srq(&srq).build().unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "{e}");
    let mut qp = pd.create_qp(&cq).set_max_send_wr(4).set_srq(&srq).build().unwrap();
    let rec = last_qp_context(&dev, qp.qp_num());
    assert_eq!(qp_context::USE_SRQ.get(&rec), 1);
    assert_eq!(qp_context::SRQN.get(&rec), u64::from(srq.srq_num()));
    assert_eq!(qp_context::RQ_BASE.get(&rec), srq.inner.ring.iova().0);
    assert_eq!(qp_context::RQ_LOG_SIZE.get(&rec), 3);
    assert_eq!(qp_context::RQ_LOG_STRIDE.get(&rec), u64::from(srq.inner.log_stride));
    assert_eq!(qp.query_qp().cap.max_recv_wr, 0);
    // A QP without an SRQ has USE_SRQ 0.
    let plain = pd.create_qp(&cq).set_max_send_wr(4).set_max_recv_wr(2).build().unwrap();
    assert_eq!(qp_context::USE_SRQ.get(&last_qp_context(&dev, plain.qp_num())), 0);
    let (req, _) = transition_masks(QpState::Reset, QpState::Init).unwrap();
    qp.modify(&full_attr(QpState::Init), req | QpAttrMask::STATE).unwrap();
    let writes = dev.writes.borrow().len();
    let e = qp.post_recv_one(RecvWr::new(1, mr.sge(0..64).unwrap())).unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "{e}");
    assert_eq!(dev.writes.borrow().len(), writes, "nothing written");
    assert_eq!(srq.outstanding(), 0);
}

/// post_recv on an SRQ writes receive WQEs into its ring and rings RQ_DOORBELL with the SRQ
/// number; all or nothing (EINVAL for too many SGEs, ENOMEM when full); a receive completion
/// on any of its QPs frees a slot, and the next WR goes into the next lap.
#[test]
fn srq_post_recv_fills_its_ring_and_completions_free_slots() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut buf = vec![0u8; 4096];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let srq = pd.create_srq(4, 1).unwrap();
    let q1 = qp_on_srq(&pd, &cq, &srq);
    let q2 = qp_on_srq(&pd, &cq, &srq);
    let base = srq.inner.ring.iova().0;
    let stride = recv_wqe::stride(srq.inner.log_stride.into()) as u64;
    let srqn = srq.srq_num();
    let wr = |id: u64, off: usize| RecvWr::new(id, mr.sge(off..off + 100).unwrap());
    let writes = dev.writes.borrow().len();
    srq.post_recv(&[wr(1, 0), wr(2, 100)]).unwrap();
    assert_eq!(
        dev.writes.borrow()[writes..],
        [(regs::RQ_DOORBELL, srqn << 16 | 2)],
        "one doorbell with the SRQ number"
    );
    let mut w = [0u8; 64];
    for (k, (id, off)) in [(1u64, 0u64), (2, 100)].into_iter().enumerate() {
        ctx.device().dma_read(Iova(base + k as u64 * stride), &mut w).unwrap();
        assert_eq!(recv_wqe::WR_ID.get(&w), id);
        assert_eq!(recv_wqe::NUM_SGE.get(&w), 1);
        assert_eq!((recv_wqe::SGE0_ADDR.get(&w), recv_wqe::SGE0_LENGTH.get(&w)), (mr.addr() + off, 100));
        assert_eq!(recv_wqe::SGE0_LKEY.get(&w), u64::from(mr.lkey()));
    }
    assert_eq!(srq.outstanding(), 2);
    // A bad first WR posts nothing.
    let writes = dev.writes.borrow().len();
    let four = RecvWr::with_sg_list(3, &[mr.sge(0..10).unwrap(); 4]).unwrap();
    let e = srq.post_recv(&[four, wr(3, 200)]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 0), "more SGEs than max_sge (3)");
    assert_eq!(dev.writes.borrow().len(), writes, "nothing written");
    ctx.device().dma_read(Iova(base + 2 * stride), &mut w).unwrap();
    assert!(w.iter().all(|&b| b == 0), "no WQE written for a refused post");
    assert_eq!(srq.outstanding(), 2);
    // 2 free: the first two of three are posted, the third is ENOMEM at bad_wr 2.
    let e = srq.post_recv(&[wr(3, 200), wr(4, 300), wr(5, 400)]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 2), "2 free");
    assert_eq!(srq.post_recv_one(wr(5, 400)).unwrap_err().errno(), Errno::ENOMEM, "full");
    assert_eq!(dev.writes.borrow().last(), Some(&(regs::RQ_DOORBELL, srqn << 16 | 4)));
    // Completions on two different QPs each free a slot.
    let cqb = cq_base(&dev, cq.cqn());
    for (k, (id, qpn)) in [(1u64, q2.qp_num()), (2, q1.qp_num())].into_iter().enumerate() {
        let c =
            Cqe { wr_id: id, byte_len: 9, qp_num: qpn, opcode: verbs::wc_opcode::RECV, owner: true, ..Cqe::default() };
        ctx.device().dma_write(Iova(cqb + 32 * k as u64), &c.pack()).unwrap();
    }
    let mut wcs = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut wcs).unwrap(), 2);
    assert_eq!((wcs[0].wr_id, wcs[0].qp_num, wcs[1].wr_id, wcs[1].qp_num), (1, q2.qp_num(), 2, q1.qp_num()));
    assert_eq!(srq.outstanding(), 2);
    srq.post_recv(&[wr(5, 400), wr(6, 500)]).unwrap();
    assert_eq!(dev.writes.borrow().last(), Some(&(regs::RQ_DOORBELL, srqn << 16 | 6)));
    ctx.device().dma_read(Iova(base), &mut w).unwrap();
    assert_eq!(recv_wqe::WR_ID.get(&w), 5, "slot 0 of the second lap");
    ctx.device().dma_read(Iova(base + stride), &mut w).unwrap();
    assert_eq!(recv_wqe::WR_ID.get(&w), 6);
    assert_eq!((q1.stray_completions(), q2.stray_completions()), (0, 0));
    // A receive completion with nothing outstanding on the SRQ is stray.
    let c = Cqe { wr_id: 77, qp_num: q1.qp_num(), opcode: verbs::wc_opcode::RECV, owner: true, ..Cqe::default() };
    for k in 2..6u64 {
        ctx.device().dma_write(Iova(cqb + 32 * k), &Cqe { wr_id: k + 1, ..c }.pack()).unwrap();
    }
    assert_eq!(cq.poll(&mut wcs).unwrap(), 4);
    assert_eq!(srq.outstanding(), 0);
    assert_eq!(q1.stray_completions(), 0);
    ctx.device().dma_write(Iova(cqb + 32 * 6), &c.pack()).unwrap();
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(q1.stray_completions(), 1);
    assert_eq!(srq.outstanding(), 0);
}

/// A QP on `srq`, in RESET.
fn qp_on_srq<'a>(pd: &ProtectionDomain, cq: &CompletionQueue, srq: &SharedReceiveQueue<'a>) -> QueuePair<'a> {
    pd.create_qp(cq).set_max_send_wr(4).set_srq(srq).build().unwrap()
}

/// The context's asynchronous event queue: opening the device commits a CQ for it and points
/// ASYNC_EVENT_CQ at it (enable bit set); event CQEs the NIC writes there come out of
/// `poll_async_event` as QP events (a CQ_ERR as `AsyncEvent::CqErr`), in order, and other CQEs
/// are skipped; the consumer index is reported (CQ_CI) every 128 events; dropping the context
/// turns the events off and invalidates the CQ.
#[test]
fn qp_events_come_from_the_context_event_queue() {
    let (dev, ctx) = open();
    assert!(ctx.has_qp_events());
    let w = dev.writes.borrow().clone();
    let &(_, v) = w.iter().rfind(|(a, _)| *a == regs::ASYNC_EVENT_CQ).expect("ASYNC_EVENT_CQ written at open");
    assert_ne!(v & regs::async_event_cq::ENABLE, 0);
    let cqn = v & regs::async_event_cq::CQN_MASK;
    // The CQ context committed for it, before the register named it.
    let pos = w.iter().rposition(|(a, x)| *a == regs::CMD && *x == regs::cmd_op::WRITE_CQ << 24 | cqn).unwrap();
    assert!(pos < w.iter().rposition(|(a, _)| *a == regs::ASYNC_EVENT_CQ).unwrap());
    let rec: Vec<u8> = (0..16)
        .flat_map(|i| {
            let a = regs::CMD_DATA + 4 * i;
            w[..pos].iter().rfind(|(x, _)| *x == a).map_or(0, |(_, v)| *v).to_le_bytes()
        })
        .collect();
    let base = rnic_contract::cq_context::BASE.get(&rec);
    assert_eq!(rnic_contract::cq_context::VALID.get(&rec), 1);
    // A user CQ gets another number.
    let cq = ctx.create_cq(4).unwrap();
    assert_ne!(cq.cqn(), cqn);
    assert_eq!(ctx.poll_async_event().unwrap(), None);
    let event = |n: u64, opcode: u8, status: u8, qp_num: u32| {
        let c = Cqe { opcode, status, qp_num, owner: owner_for(n, 8), ..Cqe::default() };
        dev.dma_write(Iova(base + 32 * n), &c.pack()).unwrap();
    };
    event(0, verbs::wc_opcode::ASYNC_EVENT, verbs::event_type::QP_ACCESS_ERR, 5);
    event(1, verbs::wc_opcode::RECV, 0, 6);
    event(2, verbs::wc_opcode::ASYNC_EVENT, verbs::event_type::COMM_EST, 7);
    assert_eq!(
        ctx.poll_async_event().unwrap(),
        Some(AsyncEvent::Qp { event_type: AsyncEventType::QpAccessErr, qp_num: 5 })
    );
    let e = ctx.poll_async_event().unwrap().unwrap();
    assert_eq!(
        (e.event_type(), e),
        (AsyncEventType::CommEst, AsyncEvent::Qp { event_type: AsyncEventType::CommEst, qp_num: 7 })
    );
    assert_eq!(ctx.poll_async_event().unwrap(), None);
    // IBV_EVENT_CQ_ERR (STATUS 0) names the CQ in QP_NUM.
    event(3, verbs::wc_opcode::ASYNC_EVENT, verbs::event_type::CQ_ERR, cq.cqn());
    let e = ctx.poll_async_event().unwrap().unwrap();
    assert_eq!((e.event_type(), e), (AsyncEventType::CqErr, AsyncEvent::CqErr { cq_num: cq.cqn() }));
    // The queue reports its consumer index (CQ_CI) once 128 CQEs were taken, at the next poll.
    let ci_writes = || -> Vec<u32> { dev.writes.borrow().iter().filter(|w| w.0 == regs::CQ_CI).map(|w| w.1).collect() };
    for n in 4..128 {
        event(n, verbs::wc_opcode::ASYNC_EVENT, verbs::event_type::COMM_EST, 1);
    }
    for _ in 4..128 {
        assert!(ctx.poll_async_event().unwrap().is_some());
    }
    assert_eq!(ci_writes(), Vec::<u32>::new(), "not yet reported");
    assert_eq!(ctx.poll_async_event().unwrap(), None);
    assert_eq!(ci_writes(), [cqn << regs::cq_arm::CQN_SHIFT | 128]);
    drop(cq);
    drop(ctx);
    let w = dev.writes.borrow();
    assert_eq!(w.iter().rfind(|(a, _)| *a == regs::ASYNC_EVENT_CQ).unwrap().1, 0, "events off at close");
    assert_eq!(w.last(), Some(&(regs::CMD, regs::cmd_op::WRITE_CQ << 24 | cqn)), "its CQ invalidated last");
}
