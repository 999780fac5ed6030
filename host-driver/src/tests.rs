//! Unit tests of the driver's own logic on a recording mock device: the modify_qp table, access
//! checks, record packing as written by the verbs, SQ and CQ ring handling.
use std::rc::Rc;

use rnic_contract::{cq_context, cqe, mr_entry, qp_context, recv_wqe, regs, verbs, wqe};

use crate::mock::MockDevice;
use crate::qp::transition_masks;
use crate::records::{owner_for, Cqe};
use crate::*;

pub(crate) fn open() -> (Rc<MockDevice>, Context) {
    let dev = Rc::new(MockDevice::new());
    let ctx = Context::open_shared(dev.clone()).unwrap();
    ctx.set_port_addr(PortAddr::for_sim_nic(0)).unwrap();
    (dev, ctx)
}

/// The last context command in the write log: (op, index, record).
pub(crate) fn last_cmd(dev: &MockDevice) -> (u32, u8, [u8; 64]) {
    let w = dev.writes.borrow();
    let pos = w.iter().rposition(|(a, _)| *a == regs::CMD).expect("a context command");
    let mut rec = [0u8; 64];
    for (a, v) in &w[..pos] {
        if (regs::CMD_DATA..regs::CMD_DATA + 64).contains(a) {
            let i = usize::from(a - regs::CMD_DATA);
            rec[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    let cmd = w[pos].1;
    (cmd >> 24, cmd as u8, rec)
}

pub(crate) fn full_attr(state: QpState) -> QpAttr {
    QpAttr {
        qp_state: state,
        cur_qp_state: state,
        path_mtu: Mtu::Mtu1024,
        qp_access_flags: AccessFlags::REMOTE_WRITE,
        pkey_index: 0,
        port_num: 1,
        ah_attr: AddressVector { dest_mac: MacAddr([2, 0, 0, 0, 0, 2]), dest_ip: "192.0.2.2".parse().unwrap() },
        dest_qp_num: 5,
        rq_psn: 0x123,
        sq_psn: 0x456,
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        qkey: 0,
        en_sqd_async_notify: false,
        cap: QpCap::default(),
    }
}

/// Drives a fresh QP to `state` with valid modifies.
pub(crate) fn qp_in<'a>(pd: &ProtectionDomain, cq: &CompletionQueue, state: QpState) -> QueuePair<'a> {
    let mut qp = pd.create_qp(cq).set_max_send_wr(4).build().unwrap();
    let path: &[QpState] = match state {
        QpState::Reset => &[],
        QpState::Init => &[QpState::Init],
        QpState::Rtr => &[QpState::Init, QpState::Rtr],
        QpState::Rts => &[QpState::Init, QpState::Rtr, QpState::Rts],
        QpState::Sqd => &[QpState::Init, QpState::Rtr, QpState::Rts, QpState::Sqd],
        QpState::Err => &[QpState::Err],
        _ => unreachable!(),
    };
    let mut cur = QpState::Reset;
    for &s in path {
        let (req, _) = transition_masks(cur, s).unwrap();
        qp.modify(&full_attr(s), req | QpAttrMask::STATE).unwrap();
        cur = s;
    }
    assert_eq!(qp.state(), state);
    qp
}

const ALL_STATES: [QpState; 6] =
    [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts, QpState::Sqd, QpState::Err];

#[test]
fn modify_table_missing_and_extra_attributes_are_einval_without_mmio() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let all = QpAttrMask::all() - QpAttrMask::STATE;
    let mut checked = 0;
    for cur in ALL_STATES {
        for next in ALL_STATES {
            let mut qp = qp_in(&pd, &cq, cur);
            let writes = dev.writes.borrow().len();
            let attr = QpAttr { cur_qp_state: cur, ..full_attr(next) };
            let Some((required, optional)) = transition_masks(cur, next) else {
                // Not allowed at all, whatever the mask.
                let e = qp.modify(&attr, QpAttrMask::STATE | all).unwrap_err();
                assert_eq!(e.errno(), Errno::EINVAL, "{cur:?}->{next:?}");
                for (req, _) in transition_masks(QpState::Reset, QpState::Init).into_iter() {
                    assert_eq!(qp.modify(&attr, QpAttrMask::STATE | req).unwrap_err().errno(), Errno::EINVAL);
                }
                assert_eq!(dev.writes.borrow().len(), writes, "{cur:?}->{next:?}: refused modify wrote MMIO");
                assert_eq!(qp.state(), cur);
                checked += 1;
                continue;
            };
            for bit in required.iter() {
                let e = qp.modify(&attr, (QpAttrMask::STATE | required) - bit).unwrap_err();
                assert_eq!(e.errno(), Errno::EINVAL, "{cur:?}->{next:?} without {bit:?}");
                assert!(e.to_string().contains("requires"), "{e}");
            }
            for bit in (all - required - optional).iter() {
                let e = qp.modify(&attr, QpAttrMask::STATE | required | bit).unwrap_err();
                assert_eq!(e.errno(), Errno::EINVAL, "{cur:?}->{next:?} with {bit:?}");
            }
            assert_eq!(dev.writes.borrow().len(), writes, "{cur:?}->{next:?}: refused modify wrote MMIO");
            assert_eq!(qp.state(), cur, "refused modify changed the state");
            // Required plus all optional is fine, and writes exactly one context command (and,
            // after SQD -> RTS, the SQ doorbell that serves what was posted in SQD).
            qp.modify(&attr, QpAttrMask::STATE | required | optional).unwrap();
            let resume = cur == QpState::Sqd && next == QpState::Rts;
            assert_eq!(dev.writes.borrow().len(), writes + regs::CMD_DATA_WORDS + 1 + usize::from(resume));
            if resume {
                let last = *dev.writes.borrow().last().unwrap();
                assert_eq!(last, (regs::SQ_DOORBELL, qp.qp_num() << 16), "SQD -> RTS rings the SQ doorbell");
            }
            let (op, idx, rec) = last_cmd(&dev);
            assert_eq!(op, regs::cmd_op::WRITE_QP);
            assert_eq!(u32::from(idx), qp.qp_num());
            // SQD goes to the NIC as RTS with SQ_DRAIN (qp_context::STATE).
            let sqd = next == QpState::Sqd;
            let hw_state = if sqd { QpState::Rts } else { next };
            assert_eq!(qp_context::STATE.get(&rec), hw_state as u64, "{cur:?}->{next:?}");
            assert_eq!(qp_context::SQ_DRAIN.get(&rec), u64::from(sqd), "{cur:?}->{next:?}");
            assert_eq!(qp_context::SQD_NOTIFY.get(&rec), 0, "{cur:?}->{next:?}: notify not asked for");
            assert_eq!(qp.state(), next);
            checked += 1;
        }
    }
    assert_eq!(checked, 36);
}

#[test]
fn modify_checks_values_and_cur_state() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut qp = qp_in(&pd, &cq, QpState::Reset);
    let m = QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS;
    let writes = dev.writes.borrow().len();
    for bad in
        [QpAttr { pkey_index: 1, ..full_attr(QpState::Init) }, QpAttr { port_num: 2, ..full_attr(QpState::Init) }]
    {
        assert_eq!(qp.modify(&bad, m).unwrap_err().errno(), Errno::EINVAL);
    }
    // Without STATE, RESET -> RESET allows nothing.
    assert_eq!(qp.modify(&full_attr(QpState::Init), QpAttrMask::PKEY_INDEX).unwrap_err().errno(), Errno::EINVAL);
    qp.modify(&full_attr(QpState::Init), m).unwrap();
    let rtr = QpAttrMask::STATE
        | QpAttrMask::AV
        | QpAttrMask::PATH_MTU
        | QpAttrMask::DEST_QPN
        | QpAttrMask::RQ_PSN
        | QpAttrMask::MAX_DEST_RD_ATOMIC
        | QpAttrMask::MIN_RNR_TIMER;
    let writes2 = dev.writes.borrow().len();
    assert_eq!(writes2, writes + 17);
    for bad in [
        QpAttr { rq_psn: 1 << 24, ..full_attr(QpState::Rtr) },
        QpAttr { dest_qp_num: 1 << 24, ..full_attr(QpState::Rtr) },
        QpAttr { min_rnr_timer: 32, ..full_attr(QpState::Rtr) },
        QpAttr { max_dest_rd_atomic: 17, ..full_attr(QpState::Rtr) },
        QpAttr {
            ah_attr: AddressVector { dest_mac: MacAddr([1, 0, 0, 0, 0, 1]), dest_ip: "192.0.2.2".parse().unwrap() },
            ..full_attr(QpState::Rtr)
        },
    ] {
        assert_eq!(qp.modify(&bad, rtr).unwrap_err().errno(), Errno::EINVAL, "{bad:?}");
    }
    assert_eq!(dev.writes.borrow().len(), writes2);
    qp.modify(&full_attr(QpState::Rtr), rtr).unwrap();
    let (_, _, rec) = last_cmd(&dev);
    assert_eq!(qp_context::INIT_RQ_PSN.get(&rec), 1, "RQ_PSN in the mask reloads the responder PSN");
    assert_eq!(qp_context::INIT_SQ_PSN.get(&rec), 0);
    assert_eq!(qp_context::RQ_PSN.get(&rec), 0x123);
    assert_eq!(qp_context::PATH_MTU.get(&rec), Mtu::Mtu1024 as u64);
    assert_eq!(qp_context::DEST_QPN.get(&rec), 5);
    assert_eq!(qp_context::DEST_IP.get(&rec), 0xC000_0202);
    assert_eq!(qp_context::DEST_MAC.get(&rec), 0x0200_0000_0002);
    assert_eq!(qp_context::ACCESS.get(&rec), 2);
    assert_eq!(qp_context::PKEY.get(&rec), 0xFFFF);
    assert_eq!(qp_context::UDP_SPORT.get(&rec) & 0xC000, 0xC000);
    assert_eq!(qp_context::PD.get(&rec), u64::from(pd.pdn()));
    assert_eq!(qp_context::SEND_CQ.get(&rec), u64::from(cq.cqn()));
    assert_eq!(qp_context::SQ_LOG_SIZE.get(&rec), 2);
    assert_ne!(qp_context::SQ_BASE.get(&rec), 0);
    // CUR_STATE must match the current state.
    let rts = QpAttrMask::STATE
        | QpAttrMask::SQ_PSN
        | QpAttrMask::TIMEOUT
        | QpAttrMask::RETRY_CNT
        | QpAttrMask::RNR_RETRY
        | QpAttrMask::MAX_QP_RD_ATOMIC
        | QpAttrMask::CUR_STATE;
    let wrong_cur = QpAttr { cur_qp_state: QpState::Init, ..full_attr(QpState::Rts) };
    assert_eq!(qp.modify(&wrong_cur, rts).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(
        qp.modify(&QpAttr { retry_cnt: 8, cur_qp_state: QpState::Rtr, ..full_attr(QpState::Rts) }, rts)
            .unwrap_err()
            .errno(),
        Errno::EINVAL
    );
    qp.modify(&QpAttr { cur_qp_state: QpState::Rtr, ..full_attr(QpState::Rts) }, rts).unwrap();
    let (_, _, rec) = last_cmd(&dev);
    assert_eq!(qp_context::INIT_SQ_PSN.get(&rec), 1);
    assert_eq!(qp_context::INIT_RQ_PSN.get(&rec), 0, "a later modify does not reload the responder PSN");
    assert_eq!(qp_context::SQ_PSN.get(&rec), 0x456);
    assert_eq!(qp_context::RQ_PSN.get(&rec), 0x123, "the whole context is rewritten");
    let q = qp.query_qp();
    assert_eq!(q.qp_state, QpState::Rts);
    assert_eq!(q.sq_psn, 0x456);
    assert_eq!(q.cap.max_send_wr, 4);
}

#[test]
fn access_flags_rules_of_reg_mr() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut buf = vec![0u8; 100];
    let writes = dev.writes.borrow().len();
    for bad in
        [AccessFlags::REMOTE_WRITE, AccessFlags::REMOTE_ATOMIC, AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ]
    {
        let e = pd.register(&mut buf, bad).unwrap_err();
        assert_eq!(e.errno(), Errno::EINVAL, "{bad:?}");
        assert!(e.to_string().contains("LOCAL_WRITE"), "{e}");
    }
    assert_eq!(pd.register(&mut [], AccessFlags::LOCAL_WRITE).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(dev.writes.borrow().len(), writes, "refused registrations wrote MMIO");
    for ok in [
        AccessFlags::empty(),
        AccessFlags::REMOTE_READ,
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
    ] {
        assert!(ok.validate_for_mr().is_ok(), "{ok:?}");
    }
}

#[test]
fn mr_entry_keys_and_deregistration() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut buf = vec![0u8; 5000];
    let addr = buf.as_ptr() as u64;
    let first_key;
    {
        let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (op, idx, rec) = last_cmd(&dev);
        assert_eq!(op, regs::cmd_op::WRITE_MR);
        assert_eq!(u32::from(idx), mr.lkey() >> 8);
        assert_eq!(mr.lkey(), mr.rkey());
        assert_eq!(mr_entry::VALID.get(&rec), 1);
        assert_eq!(mr_entry::ACCESS.get(&rec), 3);
        assert_eq!(mr_entry::TAG.get(&rec), u64::from(mr.lkey() & 0xFF));
        assert_eq!(mr_entry::PD.get(&rec), u64::from(pd.pdn()));
        assert_eq!(mr_entry::VA.get(&rec), addr);
        assert_eq!(mr_entry::LENGTH.get(&rec), 5000);
        assert_eq!(mr_entry::IOVA.get(&rec), mr.iova().0);
        assert_eq!(mr.addr(), addr);
        assert_ne!(mr.lkey(), 0);
        // SGE and remote-address helpers.
        let s = mr.sge(10..110).unwrap();
        assert_eq!((s.addr, s.length, s.lkey), (addr + 10, 100, mr.lkey()));
        assert_eq!(mr.sge(10..5001).unwrap_err().errno(), Errno::EINVAL);
        assert_eq!(mr.remote_addr(5000).unwrap().addr, addr + 5000);
        mr.write_at(4990, &[9; 10]).unwrap();
        assert_eq!(mr.write_at(4991, &[9; 10]).unwrap_err().errno(), Errno::EINVAL);
        first_key = mr.lkey();
    }
    // Drop wrote VALID = 0 at the same index.
    let (op, idx, rec) = last_cmd(&dev);
    assert_eq!((op, u32::from(idx)), (regs::cmd_op::WRITE_MR, first_key >> 8));
    assert_eq!(mr_entry::VALID.get(&rec), 0);
    assert_eq!(&buf[4990..], &[9; 10]);
    // Re-registration of the slot bumps the tag: the old key is stale.
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    assert_eq!(mr.lkey() >> 8, first_key >> 8);
    assert_ne!(mr.lkey(), first_key);
    mr.deregister().unwrap();
}

#[test]
fn post_send_builds_wqes_and_rings_the_doorbell() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut buf = vec![0u8; 256];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qp = qp_in(&pd, &cq, QpState::Rtr);
    let remote = RemoteAddr { addr: 0xABC0, rkey: 0x0301 };
    let wr = SendWr::rdma_write(7, mr.sge(1..101).unwrap(), remote).signaled(true);
    let writes = dev.writes.borrow().len();
    assert_eq!(qp.post_send_one(wr).unwrap_err().errno(), Errno::EINVAL, "post_send before RTS");
    assert_eq!(dev.writes.borrow().len(), writes);
    let mut qp = qp_in(&pd, &cq, QpState::Rts);
    drop(qp_in(&pd, &cq, QpState::Reset)); // QPs come and go; numbers are reused
    let inline = wr.with_flags(SendFlags::INLINE);
    assert_eq!(qp.post_send_one(inline).unwrap_err().errno(), Errno::EINVAL);
    let writes = dev.writes.borrow().len();
    qp.post_send(&[wr, SendWr { wr_id: 8, ..wr }.signaled(false)]).unwrap();
    let w = dev.writes.borrow()[writes..].to_vec();
    assert_eq!(w, vec![(regs::SQ_DOORBELL, qp.qp_num() << 16 | 2)], "one doorbell MMIO, nothing else");
    // The WQEs are in the ring at slots 0 and 1.
    let sq_base = {
        // From the last context the driver wrote for this QP.
        let log = dev.writes.borrow();
        let pos = log
            .iter()
            .rposition(|(a, v)| *a == regs::CMD && *v == (regs::cmd_op::WRITE_QP << 24 | qp.qp_num()))
            .unwrap();
        let mut r = [0u8; 64];
        for (a, v) in &log[pos - 16..pos] {
            let i = usize::from(a - regs::CMD_DATA);
            r[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        qp_context::SQ_BASE.get(&r)
    };
    let mut w0 = [0u8; 64];
    ctx.device().dma_read(Iova(sq_base), &mut w0).unwrap();
    assert_eq!(wqe::WR_ID.get(&w0), 7);
    assert_eq!(wqe::OPCODE.get(&w0), 0);
    assert_eq!(wqe::SEND_FLAGS.get(&w0), 2);
    assert_eq!(wqe::NUM_SGE.get(&w0), 1);
    assert_eq!(wqe::REMOTE_ADDR.get(&w0), 0xABC0);
    assert_eq!(wqe::RKEY.get(&w0), 0x0301);
    assert_eq!(wqe::SGE0_ADDR.get(&w0), mr.addr() + 1);
    assert_eq!(wqe::SGE0_LENGTH.get(&w0), 100);
    assert_eq!(wqe::SGE0_LKEY.get(&w0), u64::from(mr.lkey()));
    let mut w1 = [0u8; 64];
    ctx.device().dma_read(Iova(sq_base + 64), &mut w1).unwrap();
    assert_eq!(wqe::WR_ID.get(&w1), 8);
    assert_eq!(wqe::SEND_FLAGS.get(&w1), 0);
    // SQ of 4: of three more, two fit and are posted (one doorbell, producer index 4), the
    // third is ENOMEM with bad_wr 2 (ibv_post_send(3)'s bad_wr).
    let writes = dev.writes.borrow().len();
    let e = qp.post_send(&[wr, wr, wr]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 2), "{e}");
    assert_eq!(dev.writes.borrow()[writes..], [(regs::SQ_DOORBELL, qp.qp_num() << 16 | 4)]);
    assert_eq!(qp.outstanding(), 4);
    assert_eq!(qp.post_send_one(wr).unwrap_err().errno(), Errno::ENOMEM);
    // The NIC (played here by the test) completes WR 8's successor signaled: a CQE for wr 7
    // (the third WR) retires the first three.
    let cqe = Cqe { wr_id: 7, byte_len: 100, qp_num: qp.qp_num(), opcode: 1, owner: true, ..Cqe::default() };
    let cq_base = {
        let log = dev.writes.borrow();
        let pos =
            log.iter().position(|(a, v)| *a == regs::CMD && *v == (regs::cmd_op::WRITE_CQ << 24 | cq.cqn())).unwrap();
        let mut r = [0u8; 64];
        for (a, v) in &log[pos - 16..pos] {
            let i = usize::from(a - regs::CMD_DATA);
            r[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        assert_eq!(cq_context::VALID.get(&r), 1);
        assert_eq!(cq_context::LOG_SIZE.get(&r), 5, "a ring of twice the 16 entries");
        cq_context::BASE.get(&r)
    };
    ctx.device().dma_write(Iova(cq_base), &cqe.pack()).unwrap();
    let mut wcs = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(wcs[0].wr_id, 7);
    assert_eq!(qp.outstanding(), 3, "WR 7 was the first signaled one");
    // A local error completes an unsignaled WR and moves the QP to ERR.
    let err = Cqe { wr_id: 8, qp_num: qp.qp_num(), status: 4, owner: true, ..Cqe::default() };
    ctx.device().dma_write(Iova(cq_base + 32), &err.pack()).unwrap();
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(wcs[0].status, WcStatus::LocProtErr);
    assert_eq!(qp.state(), QpState::Err);
    // In ERR a WR is still posted (the NIC flushes it): a WQE and a doorbell.
    let before = dev.writes.borrow().len();
    qp.post_send_one(wr).unwrap();
    assert_eq!(dev.writes.borrow()[before..].len(), 1);
    assert_eq!(dev.writes.borrow().last().unwrap().0, regs::SQ_DOORBELL);
    assert_eq!(qp.stray_completions(), 0);
}

/// Polling reads only the ring (owner bit, laps), and reports the consumer index (CQ_CI) once
/// per `cqe` CQEs consumed: the ring is twice `cqe` (see CompletionQueue on overruns).
#[test]
fn cq_poll_follows_the_owner_bit_without_mmio_reads() {
    let (dev, ctx) = open();
    let cq = ctx.create_cq(3).unwrap();
    assert_eq!(cq.capacity(), 4);
    let (_, _, rec) = last_cmd(&dev);
    assert_eq!(cq_context::LOG_SIZE.get(&rec), 3, "a ring of 8 for a cqe of 4");
    let base = cq_context::BASE.get(&rec);
    let reads = dev.reads.get();
    let ci_writes = || -> Vec<u32> { dev.writes.borrow().iter().filter(|w| w.0 == regs::CQ_CI).map(|w| w.1).collect() };
    let mut wcs = [WorkCompletion::default(); 8];
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0, "a zeroed ring is empty");
    assert_eq!(dev.progress.get(), 1, "an empty poll lets the device progress");
    // Play the NIC: CQE n goes to slot n mod 8 with owner !(n >> 3) & 1.
    let write_cqe = |n: u64| {
        let c = Cqe {
            wr_id: 100 + n,
            qp_num: 9,
            status: 0,
            opcode: 1,
            byte_len: n as u32,
            owner: owner_for(n, 3),
            ..Cqe::default()
        };
        ctx.device().dma_write(Iova(base + (n % 8) * cqe::BYTES as u64), &c.pack()).unwrap();
    };
    for n in 0..3 {
        write_cqe(n);
    }
    assert_eq!(cq.poll(&mut wcs[..2]).unwrap(), 2);
    assert_eq!((wcs[0].wr_id, wcs[1].wr_id), (100, 101));
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(wcs[0].wr_id, 102);
    assert_eq!(wcs[0].opcode, WcOpcode::RdmaWrite);
    assert_eq!(wcs[0].qp_num, 9);
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0);
    assert_eq!(ci_writes(), Vec::<u32>::new(), "3 consumed: below cqe, not reported yet");
    write_cqe(3);
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(ci_writes(), [cq.cqn() << 24 | 4], "cqe (4) consumed: reported");
    // Second lap: slots 0..7 hold CQEs of the first; CQEs 4..8 wrap to slot 0 with owner 0.
    for n in 4..9 {
        write_cqe(n);
    }
    assert_eq!(cq.poll(&mut wcs).unwrap(), 5);
    assert_eq!(wcs[4].wr_id, 108);
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0, "stale entries of the previous lap are not valid");
    assert_eq!(ci_writes(), [cq.cqn() << 24 | 4, cq.cqn() << 24 | 9], "one report per poll that reached cqe");
    assert_eq!(dev.reads.get(), reads, "polling never reads MMIO");
}

/// Moves `qp` from RESET through INIT and RTR to RTS.
pub(crate) fn to_rts(qp: &mut QueuePair<'_>) {
    let mut cur = QpState::Reset;
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let (req, _) = transition_masks(cur, s).unwrap();
        qp.modify(&full_attr(s), req | QpAttrMask::STATE).unwrap();
        cur = s;
    }
}

/// A CQ may be smaller than its QPs' queues, as ibverbs allows: `ibv_rc_pingpong` creates a CQ
/// of `rx_depth + 1` entries for a QP of `rx_depth` receives and 1 send (both rounded up to
/// powers of two here: 512 + 1 on 512 entries). Posts are not refused for CQ room (keeping
/// within the CQ is the program's job; the NIC reports an overrun as IBV_EVENT_CQ_ERR): only
/// the SQ and RQ limit them.
#[test]
fn posts_are_limited_by_their_queues_not_by_the_cq() {
    let (_dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let rx_depth = 500u32;
    let cq = ctx.create_cq(rx_depth as usize + 1).unwrap();
    assert_eq!(cq.capacity(), 512);
    let mut buf = vec![0u8; 4096];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qp = pd.create_qp(&cq).set_max_send_wr(1).set_max_recv_wr(rx_depth).build().unwrap();
    assert_eq!((qp.sq_capacity(), qp.rq_capacity()), (1, 512));
    to_rts(&mut qp);
    let wr = |id: u64| RecvWr::new(id, mr.sge(0..64).unwrap());
    let recvs: Vec<_> = (0..u64::from(rx_depth)).map(wr).collect();
    qp.post_recv(&recvs).unwrap();
    qp.post_send_one(SendWr::send(1000, None).signaled(true)).unwrap();
    // 501 WRs on a CQ of 512: the RQ's 12 free slots all take a receive; the 13th is the RQ's.
    let more: Vec<_> = (600..613).map(wr).collect();
    let e = qp.post_recv(&more).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 12), "{e}");
    assert!(e.error.to_string().contains("RQ of QP"), "{e}");
    assert_eq!(qp.recv_outstanding(), 512);

    // A CQ smaller than one SQ: 4 entries for 8 send WRs. All 8 go; the 9th finds the SQ full.
    let small = ctx.create_cq(4).unwrap();
    let mut q = pd.create_qp(&small).set_max_send_wr(8).build().unwrap();
    to_rts(&mut q);
    let sends: Vec<_> = (0..9).map(|i| SendWr::send(i, None).signaled(true)).collect();
    let e = q.post_send(&sends).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 8), "{e}");
    assert!(e.error.to_string().contains("SQ of QP"), "{e}");
    assert_eq!(q.outstanding(), 8);
    // A receive CQ of 2 takes a QP's 3 receives.
    let rcq = ctx.create_cq(2).unwrap();
    let mut r = pd.create_qp(&cq).set_max_send_wr(1).set_recv_cq(&rcq).set_max_recv_wr(8).build().unwrap();
    to_rts(&mut r);
    r.post_recv(&[wr(1), wr(2), wr(3)]).unwrap();
    // A receive WQE holds at most 15 scatter entries.
    assert_eq!(
        pd.create_qp(&cq).set_max_recv_wr(1).set_max_recv_sge(16).build().unwrap_err().errno(),
        Errno::EOPNOTSUPP
    );
    assert_eq!(pd.create_qp(&cq).set_max_recv_wr(qp::MAX_RECV_WR + 1).build().unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(ctx.create_cq(0).unwrap_err().errno(), Errno::EINVAL);
}

/// `max_recv_sge` up to [`qp::MAX_RECV_SGE`] (15) sizes the receive WQE (64, 128 or 256 bytes:
/// RQ_LOG_STRIDE in the context) and `query_qp` reports what that WQE holds; post_recv takes
/// that many entries and writes each at its contract offset.
#[test]
fn max_recv_sge_sizes_the_receive_wqe() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut buf = vec![0u8; 4096];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    assert_eq!(qp::MAX_RECV_SGE, 15);
    for (sges, log, cap) in [(1u32, 0u64, 3u32), (2, 0, 3), (4, 1, 7), (7, 1, 7), (8, 2, 15), (15, 2, 15)] {
        let mut q = pd.create_qp(&cq).set_max_send_wr(1).set_max_recv_wr(2).set_max_recv_sge(sges).build().unwrap();
        let rec = last_qp_context(&dev, q.qp_num());
        assert_eq!(qp_context::RQ_LOG_STRIDE.get(&rec), log, "max_recv_sge {sges}: RQ_LOG_STRIDE");
        assert_eq!(q.query_qp().cap.max_recv_sge, cap, "max_recv_sge {sges}: what the WQE holds");
        let (req, _) = transition_masks(QpState::Reset, QpState::Init).unwrap();
        q.modify(&full_attr(QpState::Init), req | QpAttrMask::STATE).unwrap();
        let list: Vec<Sge> = (0..cap as usize).map(|i| mr.sge(100 * i..100 * i + 10 + i).unwrap()).collect();
        q.post_recv_one(RecvWr::with_sg_list(7, &list).unwrap()).unwrap();
        let too_many: Vec<Sge> = (0..=cap as usize).map(|_| mr.sge(0..1).unwrap()).collect();
        if cap < 15 {
            assert_eq!(
                q.post_recv_one(RecvWr::with_sg_list(8, &too_many).unwrap()).unwrap_err().errno(),
                Errno::EINVAL
            );
        }
        let stride = 64usize << log;
        let mut w = vec![0u8; stride];
        let rq_base = qp_context::RQ_BASE.get(&rec);
        ctx.device().dma_read(Iova(rq_base), &mut w).unwrap();
        assert_eq!((recv_wqe::WR_ID.get(&w), recv_wqe::NUM_SGE.get(&w)), (7, u64::from(cap)));
        for (i, s) in list.iter().enumerate() {
            let o = recv_wqe::sge_offset(i);
            let e = &w[o..o + 16];
            assert_eq!(u64::from_le_bytes(e[0..8].try_into().unwrap()), s.addr, "entry {i} addr");
            assert_eq!(u32::from_le_bytes(e[8..12].try_into().unwrap()), s.length, "entry {i} length");
            assert_eq!(u32::from_le_bytes(e[12..16].try_into().unwrap()), s.lkey, "entry {i} lkey");
        }
    }
}

#[test]
fn open_checks_id_and_version() {
    struct Wrong;
    impl Device for Wrong {
        fn name(&self) -> String {
            "wrong".into()
        }
        fn mmio_read32(&self, _: u16) -> Result<u32> {
            Ok(0x524E_4943)
        }
        fn mmio_write32(&self, _: u16, _: u32) -> Result<()> {
            Ok(())
        }
        fn alloc_dma(&self, _: usize, _: usize) -> Result<Iova> {
            Err(Error::NoMemory("none".into()))
        }
        fn free_dma(&self, _: Iova) -> Result<()> {
            Ok(())
        }
        fn dma_read(&self, _: Iova, _: &mut [u8]) -> Result<()> {
            Ok(())
        }
        fn dma_write(&self, _: Iova, _: &[u8]) -> Result<()> {
            Ok(())
        }
        unsafe fn map_user(&self, _: *mut u8, _: usize) -> Result<Iova> {
            Err(Error::NoMemory("none".into()))
        }
        fn unmap(&self, _: Iova) -> Result<()> {
            Ok(())
        }
        fn poll_progress(&self) {}
        fn now_cycles(&self) -> u64 {
            0
        }
    }
    // Every register reads "RNIC": the ID matches, VERSION (0x524E.4943) does not.
    let e = Context::open(Wrong).unwrap_err();
    assert_eq!(e.errno(), Errno::ENODEV);
    assert!(e.to_string().contains("contract version"), "{e}");
    let (_, ctx) = open();
    let i = ctx.device_info();
    assert_eq!(
        (i.log_qps, i.log_mrs, i.log_cqs, i.log_inflight, i.datapath_bytes),
        (6, 6, 6, rnic_contract::LOG_MAX_INFLIGHT_WQES as u8, 64)
    );
    assert_eq!(
        ctx.set_port_addr(PortAddr { mac: MacAddr([1, 0, 0, 0, 0, 0]), ip: "192.0.2.1".parse().unwrap() })
            .unwrap_err()
            .errno(),
        Errno::EINVAL
    );
}

#[test]
fn port_address_registers() {
    let (dev, _ctx) = open();
    let w = dev.writes.borrow();
    assert!(w.contains(&(regs::MAC_LO, 0x0000_0002)));
    assert!(w.contains(&(regs::MAC_HI, 0x0000_0100)));
    assert!(w.contains(&(regs::IPV4_ADDR, 0xC000_0201)));
}

#[test]
fn endpoints_connect_two_qps() {
    let (_da, a) = open();
    let (_db, b) = open();
    b.set_port_addr(PortAddr::for_sim_nic(1)).unwrap();
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (ca, cb) = (a.create_cq(64).unwrap(), b.create_cq(64).unwrap());
    let mut qa = pa.create_qp(&ca).build().unwrap();
    let mut qb = pb.create_qp(&cb).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect(&eb).unwrap();
    qb.connect(&ea).unwrap();
    let x = qa.query_qp();
    assert_eq!(x.qp_state, QpState::Rts);
    assert_eq!(x.dest_qp_num, qb.qp_num());
    assert_eq!(x.rq_psn, qb.local_psn());
    assert_eq!(x.sq_psn, qa.local_psn());
    assert_eq!(x.ah_attr.dest_ip, PortAddr::for_sim_nic(1).ip);
    assert_eq!(qa.connect(&eb).unwrap_err().errno(), Errno::EINVAL, "connect needs RESET");
    let json = serde_json::to_string(&eb).unwrap();
    assert_eq!(serde_json::from_str::<Endpoint>(&json).unwrap(), eb);
}

/// The context record of the last WRITE_QP for `qpn` in the write log.
pub(crate) fn last_qp_context(dev: &MockDevice, qpn: u32) -> [u8; 64] {
    let log = dev.writes.borrow();
    let pos = log.iter().rposition(|(a, v)| *a == regs::CMD && *v == (regs::cmd_op::WRITE_QP << 24 | qpn)).unwrap();
    let mut r = [0u8; 64];
    for (a, v) in &log[pos - 16..pos] {
        let i = usize::from(a - regs::CMD_DATA);
        r[i..i + 4].copy_from_slice(&v.to_le_bytes());
    }
    r
}

/// The ring base of the last WRITE_CQ for `cqn`.
pub(crate) fn cq_base(dev: &MockDevice, cqn: u32) -> u64 {
    let log = dev.writes.borrow();
    let pos = log.iter().rposition(|(a, v)| *a == regs::CMD && *v == (regs::cmd_op::WRITE_CQ << 24 | cqn)).unwrap();
    let mut r = [0u8; 64];
    for (a, v) in &log[pos - 16..pos] {
        let i = usize::from(a - regs::CMD_DATA);
        r[i..i + 4].copy_from_slice(&v.to_le_bytes());
    }
    cq_context::BASE.get(&r)
}

#[test]
fn create_qp_with_a_receive_queue_writes_the_rq_context_and_resets_the_rq_producer() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let scq = ctx.create_cq(16).unwrap();
    let rcq = ctx.create_cq(16).unwrap();
    let qp = pd.create_qp(&scq).set_max_send_wr(4).set_recv_cq(&rcq).set_max_recv_wr(5).build().unwrap();
    let rec = last_qp_context(&dev, qp.qp_num());
    assert_eq!(qp_context::SEND_CQ.get(&rec), u64::from(scq.cqn()));
    assert_eq!(qp_context::RECV_CQ.get(&rec), u64::from(rcq.cqn()));
    assert_eq!(qp_context::RQ_LOG_SIZE.get(&rec), 3, "5 receive WRs round up to 8");
    let rq_base = qp_context::RQ_BASE.get(&rec);
    assert_ne!(rq_base, 0);
    assert_eq!(rq_base % 64, 0);
    assert_ne!(rq_base, qp_context::SQ_BASE.get(&rec));
    // The ring is zeroed DMA memory of 8 × 64 bytes.
    let mut ring = [0xFFu8; 8 * 64];
    ctx.device().dma_read(Iova(rq_base), &mut ring).unwrap();
    assert!(ring.iter().all(|&b| b == 0));
    assert!(dev.writes.borrow().iter().all(|&(r, _)| r != regs::RQ_DOORBELL), "no RQ doorbell before a receive");
    let cap = qp.query_qp().cap;
    // max_recv_sge 1 asked for: the 64-byte receive WQE holds 3 (ibv_create_qp(3) may report
    // more than asked for).
    assert_eq!((cap.max_recv_wr, cap.max_recv_sge, cap.max_send_wr), (8, 3, 4));
    // Without a receive queue: no ring, RQ fields 0, receive CQ = send CQ, no receive SGEs.
    let q2 = pd.create_qp(&scq).set_max_send_wr(4).build().unwrap();
    let rec = last_qp_context(&dev, q2.qp_num());
    assert_eq!((qp_context::RQ_LOG_SIZE.get(&rec), qp_context::RQ_BASE.get(&rec)), (0, 0));
    assert_eq!(qp_context::RECV_CQ.get(&rec), u64::from(scq.cqn()));
    assert_eq!((q2.query_qp().cap.max_recv_wr, q2.query_qp().cap.max_recv_sge), (0, 0));
}

#[test]
fn post_recv_builds_receive_wqes_and_rings_the_rq_doorbell() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut buf = vec![0u8; 4096];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qp = pd.create_qp(&cq).set_max_send_wr(4).set_max_recv_wr(4).build().unwrap();
    let rq_base = qp_context::RQ_BASE.get(&last_qp_context(&dev, qp.qp_num()));
    let wr = RecvWr::new(21, mr.sge(100..1100).unwrap());
    // RESET: EINVAL, nothing written.
    let writes = dev.writes.borrow().len();
    let e = qp.post_recv_one(wr).unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL, "{e}");
    assert_eq!(dev.writes.borrow().len(), writes);
    // INIT: receives may be posted before the connection exists.
    let (req, _) = transition_masks(QpState::Reset, QpState::Init).unwrap();
    qp.modify(&full_attr(QpState::Init), req | QpAttrMask::STATE).unwrap();
    let writes = dev.writes.borrow().len();
    qp.post_recv(&[wr, RecvWr::zero_length(22)]).unwrap();
    assert_eq!(
        dev.writes.borrow()[writes..],
        [(regs::RQ_DOORBELL, qp.qp_num() << 16 | 2)],
        "one RQ doorbell, nothing else"
    );
    let mut w = [0u8; 64];
    ctx.device().dma_read(Iova(rq_base), &mut w).unwrap();
    assert_eq!(recv_wqe::WR_ID.get(&w), 21);
    assert_eq!(recv_wqe::NUM_SGE.get(&w), 1);
    assert_eq!(recv_wqe::SGE0_ADDR.get(&w), mr.addr() + 100);
    assert_eq!(recv_wqe::SGE0_LENGTH.get(&w), 1000);
    assert_eq!(recv_wqe::SGE0_LKEY.get(&w), u64::from(mr.lkey()));
    ctx.device().dma_read(Iova(rq_base + 64), &mut w).unwrap();
    assert_eq!((recv_wqe::WR_ID.get(&w), recv_wqe::NUM_SGE.get(&w), recv_wqe::SGE0_LENGTH.get(&w)), (22, 0, 0));
    assert_eq!(qp.recv_outstanding(), 2);
    // More scatter entries than max_recv_sge (3: what the 64-byte WQE holds): EINVAL; a WR
    // cannot even hold more than 15.
    let four = RecvWr::with_sg_list(
        23,
        &[mr.sge(0..10).unwrap(), mr.sge(10..20).unwrap(), mr.sge(20..30).unwrap(), mr.sge(30..40).unwrap()],
    )
    .unwrap();
    let writes = dev.writes.borrow().len();
    let e = qp.post_recv(&[four, wr]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 0), "the first WR is bad: nothing posted");
    assert_eq!(qp.post_recv_one(RecvWr { num_sge: 7, ..wr }).unwrap_err().errno(), Errno::EINVAL);
    let sixteen = [mr.sge(0..1).unwrap(); 16];
    assert_eq!(RecvWr::with_sg_list(24, &sixteen).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(dev.writes.borrow().len(), writes);
    // Full RQ: 2 of 4 free, 3 requested: the first two are posted, the third is ENOMEM
    // with bad_wr 2.
    let e = qp.post_recv(&[RecvWr { wr_id: 30, ..wr }, RecvWr { wr_id: 31, ..wr }, wr]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::ENOMEM, 2), "{e}");
    assert_eq!(dev.writes.borrow()[writes..], [(regs::RQ_DOORBELL, qp.qp_num() << 16 | 4)]);
    assert_eq!(qp.post_recv_one(wr).unwrap_err().errno(), Errno::ENOMEM);
    // The NIC (played by the test) completes the first receive: its slot frees up, and the
    // next receive lands in slot 0 of the second lap with producer index 5.
    let base = cq_base(&dev, cq.cqn());
    let c = Cqe {
        wr_id: 21,
        byte_len: 777,
        qp_num: qp.qp_num(),
        opcode: verbs::wc_opcode::RECV,
        owner: true,
        ..Cqe::default()
    };
    ctx.device().dma_write(Iova(base), &c.pack()).unwrap();
    let mut wcs = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(
        (wcs[0].opcode, wcs[0].byte_len, wcs[0].wr_id, wcs[0].status),
        (WcOpcode::Recv, 777, 21, WcStatus::Success)
    );
    assert!(wcs[0].opcode.is_recv());
    assert_eq!(qp.recv_outstanding(), 3);
    assert_eq!(qp.outstanding(), 0, "a receive completion retires no send WR");
    qp.post_recv_one(RecvWr { wr_id: 40, ..wr }).unwrap();
    assert_eq!(dev.writes.borrow().last(), Some(&(regs::RQ_DOORBELL, qp.qp_num() << 16 | 5)));
    ctx.device().dma_read(Iova(rq_base), &mut w).unwrap();
    assert_eq!(recv_wqe::WR_ID.get(&w), 40, "slot 0 reused after its completion");
    // A receive error moves the QP to ERR; post_recv still posts (the NIC flushes the WR).
    let c = Cqe {
        wr_id: 22,
        qp_num: qp.qp_num(),
        opcode: verbs::wc_opcode::RECV,
        status: 1,
        owner: true,
        ..Cqe::default()
    };
    ctx.device().dma_write(Iova(base + 32), &c.pack()).unwrap();
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(wcs[0].status, WcStatus::LocLenErr);
    assert_eq!(qp.state(), QpState::Err);
    qp.post_recv_one(wr).unwrap();
    // RESET forgets the receives (the NIC zeroes its RQ indices on the RESET context write).
    qp.modify(&QpAttr { qp_state: QpState::Reset, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
    assert_eq!(qp.recv_outstanding(), 0);
    let (op, _, rec) = last_cmd(&dev);
    assert_eq!((op, qp_context::STATE.get(&rec)), (regs::cmd_op::WRITE_QP, QpState::Reset as u64));
    assert_eq!(qp.stray_completions(), 0);
    // A QP without a receive queue refuses receives.
    let mut q2 = qp_in(&pd, &cq, QpState::Rts);
    assert_eq!(q2.post_recv_one(wr).unwrap_err().errno(), Errno::EINVAL);
}

#[test]
fn send_wr_constructor() {
    let mut buf = vec![0u8; 64];
    let (_dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let s = SendWr::send(3, mr.sge(0..10).unwrap());
    assert_eq!((s.opcode, s.sge().map(|g| g.length), s.remote), (WrOpcode::Send, Some(10), None));
    assert!(!s.flags.contains(SendFlags::SIGNALED));
    assert_eq!(SendWr::send(4, None).sge(), None);
    assert_eq!(WrOpcode::Send as u8, 2);
}

/// Atomic work requests (ibv_post_send(3) `wr.atomic`): the WQE carries opcode 5 / 6, the
/// remote address and rkey, the 8-byte local SGE and the operands at COMPARE_ADD (byte 48) and
/// SWAP (byte 56), little-endian; the driver does not judge the SGE (a 4-byte one is posted as
/// is: the NIC answers LOC_LEN_ERR); REMOTE_ATOMIC reaches the QP context and the key table;
/// atomic CQE opcodes decode to IBV_WC_COMP_SWAP / IBV_WC_FETCH_ADD.
#[test]
fn atomic_wrs_carry_their_operands_in_the_wqe() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut buf = vec![0u8; 64];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
    assert_eq!(mr_entry::ACCESS.get(&last_cmd(&dev).2), 9, "LOCAL_WRITE | REMOTE_ATOMIC in the key table");
    let mut qp = pd.create_qp(&cq).set_max_send_wr(4).build().unwrap();
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let (req, _) = transition_masks(qp.state(), s).unwrap();
        let attr = QpAttr { qp_access_flags: AccessFlags::REMOTE_ATOMIC | AccessFlags::REMOTE_READ, ..full_attr(s) };
        qp.modify(&attr, req | QpAttrMask::STATE).unwrap();
    }
    let qpc = last_qp_context(&dev, qp.qp_num());
    assert_eq!(qp_context::ACCESS.get(&qpc), 8 | 4, "REMOTE_ATOMIC | REMOTE_READ in the QP context");
    assert_eq!(qp.query_qp().qp_access_flags, AccessFlags::REMOTE_ATOMIC | AccessFlags::REMOTE_READ);
    let sq_base = qp_context::SQ_BASE.get(&qpc);

    let remote = RemoteAddr { addr: 0x1_2345_6788, rkey: 0x0407 };
    let cas =
        SendWr::atomic_cmp_and_swp(11, mr.sge(8..16).unwrap(), remote, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210)
            .signaled(true);
    let faa = SendWr::atomic_fetch_and_add(12, mr.sge(16..20).unwrap(), remote, u64::MAX);
    assert_eq!((cas.opcode, faa.opcode), (WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicFetchAndAdd));
    assert!(cas.opcode.is_atomic() && faa.opcode.is_atomic() && !WrOpcode::RdmaRead.is_atomic());
    assert_eq!((faa.compare_add, faa.swap), (u64::MAX, 0));
    assert!(!faa.flags.contains(SendFlags::SIGNALED), "unsignaled unless asked, like the other constructors");
    let writes = dev.writes.borrow().len();
    qp.post_send(&[cas, faa]).unwrap();
    assert_eq!(dev.writes.borrow()[writes..], [(regs::SQ_DOORBELL, qp.qp_num() << 16 | 2)], "one doorbell");

    let mut w = [0u8; 64];
    ctx.device().dma_read(Iova(sq_base), &mut w).unwrap();
    assert_eq!(wqe::WR_ID.get(&w), 11);
    assert_eq!(wqe::OPCODE.get(&w), u64::from(verbs::wr_opcode::ATOMIC_CMP_AND_SWP));
    assert_eq!(wqe::SEND_FLAGS.get(&w), u64::from(verbs::send_flags::SIGNALED));
    assert_eq!(wqe::NUM_SGE.get(&w), 1);
    assert_eq!(wqe::REMOTE_ADDR.get(&w), 0x1_2345_6788);
    assert_eq!(wqe::RKEY.get(&w), 0x0407);
    assert_eq!(
        (wqe::SGE0_ADDR.get(&w), wqe::SGE0_LENGTH.get(&w), wqe::SGE0_LKEY.get(&w)),
        (mr.addr() + 8, 8, u64::from(mr.lkey()))
    );
    assert_eq!(wqe::COMPARE_ADD.get(&w), 0x0123_4567_89AB_CDEF);
    assert_eq!(wqe::SWAP.get(&w), 0xFEDC_BA98_7654_3210);
    // The byte layout itself: little-endian at bytes 48 and 56.
    assert_eq!(w[48..56], 0x0123_4567_89AB_CDEFu64.to_le_bytes());
    assert_eq!(w[56..64], 0xFEDC_BA98_7654_3210u64.to_le_bytes());

    ctx.device().dma_read(Iova(sq_base + 64), &mut w).unwrap();
    assert_eq!(wqe::WR_ID.get(&w), 12);
    assert_eq!(wqe::OPCODE.get(&w), u64::from(verbs::wr_opcode::ATOMIC_FETCH_AND_ADD));
    assert_eq!(wqe::SEND_FLAGS.get(&w), 0);
    assert_eq!(wqe::SGE0_LENGTH.get(&w), 4, "the SGE is posted as given; the NIC judges its length");
    assert_eq!(wqe::COMPARE_ADD.get(&w), u64::MAX);
    assert_eq!(wqe::SWAP.get(&w), 0);

    // Other opcodes leave the operand bytes zero.
    let wr = SendWr::rdma_write(13, mr.sge(0..8).unwrap(), remote);
    assert_eq!((wr.compare_add, wr.swap), (0, 0));
    qp.post_send_one(wr).unwrap();
    ctx.device().dma_read(Iova(sq_base + 128), &mut w).unwrap();
    assert!(w[48..64].iter().all(|&b| b == 0));

    // The NIC's atomic completions decode to the ibverbs opcodes.
    assert_eq!(WcOpcode::from_raw(verbs::wc_opcode::COMP_SWAP), WcOpcode::CompSwap);
    assert_eq!(WcOpcode::from_raw(verbs::wc_opcode::FETCH_ADD), WcOpcode::FetchAdd);
    assert_eq!((WcOpcode::CompSwap.as_raw(), WcOpcode::FetchAdd.as_raw()), (3, 4));
    assert!(!WcOpcode::FetchAdd.is_recv());
    let base = cq_base(&dev, cq.cqn());
    let cqe = Cqe {
        wr_id: 11,
        byte_len: 8,
        qp_num: qp.qp_num(),
        opcode: verbs::wc_opcode::COMP_SWAP,
        owner: true,
        ..Cqe::default()
    };
    ctx.device().dma_write(Iova(base), &cqe.pack()).unwrap();
    let mut wcs = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll(&mut wcs).unwrap(), 1);
    assert_eq!(
        (wcs[0].wr_id, wcs[0].opcode, wcs[0].byte_len, wcs[0].status),
        (11, WcOpcode::CompSwap, 8, WcStatus::Success)
    );
    assert_eq!(qp.outstanding(), 2, "the signaled CMP_AND_SWP retired itself only");
}

/// An RDMA READ takes a scatter list like a WRITE's gather list (ibv_post_send(3) `sg_list`):
/// up to the QP's `max_send_sge` entries, written into the WQE in order (SGE 0 in the first 64
/// bytes, SGE 1.. from byte 64); one more is EINVAL. Atomics still take exactly one SGE (2 is
/// EINVAL), and a READ or atomic with IBV_SEND_INLINE is EINVAL. A refused request in a batch
/// posts nothing: no WQE slot is taken and no doorbell rung.
#[test]
fn reads_take_up_to_max_send_sge_and_atomics_one() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut buf = vec![0u8; 256];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    // Built for 4 SGEs: a 128-byte WQE, which holds 5.
    let mut qp = pd.create_qp(&cq).set_max_send_wr(8).set_max_send_sge(4).build().unwrap();
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let (req, _) = transition_masks(qp.state(), s).unwrap();
        let attr = QpAttr { qp_access_flags: AccessFlags::REMOTE_ATOMIC | AccessFlags::REMOTE_READ, ..full_attr(s) };
        qp.modify(&attr, req | QpAttrMask::STATE).unwrap();
    }
    let max = qp.query_qp().cap.max_send_sge as usize;
    assert_eq!(max, 5);
    let sq_base = qp_context::SQ_BASE.get(&last_qp_context(&dev, qp.qp_num()));
    let remote = RemoteAddr { addr: 0x9000, rkey: 0x0502 };
    let list: Vec<Sge> = (0..=max).map(|i| mr.sge(40 * i + i..40 * i + 2 * i + 3).unwrap()).collect();
    let read =
        |wr_id, n: usize| SendWr::rdma_read(wr_id, None, remote).with_sg_list(&list[..n]).unwrap().signaled(true);
    let atomic2 = SendWr::atomic_fetch_and_add(3, mr.sge(0..8).unwrap(), remote, 1)
        .with_sg_list(&[mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap()])
        .unwrap();
    let cas2 = SendWr::atomic_cmp_and_swp(4, mr.sge(0..8).unwrap(), remote, 1, 2)
        .with_sg_list(&[mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap()])
        .unwrap();
    let inline_read = SendWr::rdma_read(5, None, remote).with_inline(&[1, 2, 3]).unwrap();
    let inline_atomic = SendWr::atomic_fetch_and_add(6, mr.sge(0..8).unwrap(), remote, 1).with_inline(&[0; 8]).unwrap();

    // The refusals: nothing written, no slot taken.
    let writes = dev.writes.borrow().len();
    for (wr, what) in [
        (read(1, max + 1), "READ with max_send_sge + 1 SGEs"),
        (atomic2, "FETCH_AND_ADD with 2 SGEs"),
        (cas2, "CMP_AND_SWP with 2 SGEs"),
        (inline_read, "inline READ"),
        (inline_atomic, "inline atomic"),
    ] {
        assert_eq!(qp.post_send_one(wr).unwrap_err().errno(), Errno::EINVAL, "{what}");
        let e = qp.post_send(&[wr, read(1, 2)]).unwrap_err();
        assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 0), "{what} before a good READ");
    }
    assert_eq!(dev.writes.borrow().len(), writes, "no doorbell");
    assert_eq!(qp.outstanding(), 0);

    // READs with 2 and max_send_sge SGEs are posted, with every entry in the WQE.
    qp.post_send(&[read(1, 2), read(2, max)]).unwrap();
    assert_eq!(dev.writes.borrow()[writes..], [(regs::SQ_DOORBELL, qp.qp_num() << 16 | 2)], "one doorbell");
    for (slot, n) in [(0u64, 2usize), (1, max)] {
        let mut w = [0u8; 128];
        ctx.device().dma_read(Iova(sq_base + 128 * slot), &mut w).unwrap();
        assert_eq!(wqe::WR_ID.get(&w), slot + 1);
        assert_eq!(wqe::OPCODE.get(&w), u64::from(verbs::wr_opcode::RDMA_READ));
        assert_eq!(wqe::NUM_SGE.get(&w), n as u64);
        assert_eq!((wqe::REMOTE_ADDR.get(&w), wqe::RKEY.get(&w)), (0x9000, 0x0502));
        let s0 = list[0];
        assert_eq!(
            (wqe::SGE0_ADDR.get(&w), wqe::SGE0_LENGTH.get(&w), wqe::SGE0_LKEY.get(&w)),
            (s0.addr, u64::from(s0.length), u64::from(s0.lkey))
        );
        for (i, s) in list[..n].iter().enumerate().skip(1) {
            let e = &w[wqe::sge_offset(i)..wqe::sge_offset(i) + 16];
            assert_eq!(u64::from_le_bytes(e[0..8].try_into().unwrap()), s.addr, "WR {} SGE {i} addr", slot + 1);
            assert_eq!(u32::from_le_bytes(e[8..12].try_into().unwrap()), s.length, "WR {} SGE {i} length", slot + 1);
            assert_eq!(u32::from_le_bytes(e[12..16].try_into().unwrap()), s.lkey, "WR {} SGE {i} lkey", slot + 1);
        }
        // Entries past NUM_SGE are zero (no stale entry of an earlier lap).
        assert!(w[wqe::sge_offset(n).min(128)..].iter().all(|&b| b == 0), "WR {}: bytes past its SGEs", slot + 1);
    }
    // An atomic with its one SGE still goes.
    qp.post_send_one(SendWr::atomic_fetch_and_add(7, mr.sge(0..8).unwrap(), remote, 1)).unwrap();
    assert_eq!(qp.outstanding(), 3);
}
