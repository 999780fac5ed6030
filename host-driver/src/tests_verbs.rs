//! Unit tests of the verbs of issue 15 (device/port/GID queries, destroys with ibverbs' EBUSY
//! rules, rereg_mr, resize_cq, post lists with `bad_wr`, status and event strings, the device
//! list) on the recording mock device.
use std::rc::Rc;

use rnic_contract::{cq_context, mr_entry, regs, wqe};

use crate::mock::MockDevice;
use crate::query::{AtomicCap, DeviceCapFlags, Gid, GidType, PortState};
use crate::*;

fn open() -> (Rc<MockDevice>, Context) {
    let dev = Rc::new(MockDevice::new());
    let ctx = Context::open_shared(dev.clone()).unwrap();
    ctx.set_port_addr(PortAddr {
        mac: MacAddr([0x52, 0x54, 0x00, 0x77, 0x00, 0x01]),
        ip: "192.168.77.1".parse().unwrap(),
    })
    .unwrap();
    (dev, ctx)
}

/// The last context command of `op`: (index, record).
fn last_cmd(dev: &MockDevice, op: u32) -> (u8, [u8; 64]) {
    let w = dev.writes.borrow();
    let pos = w.iter().rposition(|(a, v)| *a == regs::CMD && v >> 24 == op).expect("a context command");
    let mut rec = [0u8; 64];
    for (a, v) in &w[pos - 16..pos] {
        let i = usize::from(a - regs::CMD_DATA);
        rec[i..i + 4].copy_from_slice(&v.to_le_bytes());
    }
    (w[pos].1 as u8, rec)
}

#[test]
fn query_device_reports_the_capability_registers() {
    let (dev, ctx) = open();
    let reads = dev.reads.get();
    let a = ctx.query_device();
    assert_eq!(dev.reads.get(), reads, "the registers were read once, at open");
    let v = regs::VERSION_VALUE;
    assert_eq!(a.fw_ver, format!("{}.{}", v >> 16, v & 0xFFFF), "major.minor of VERSION");
    assert_eq!(a.max_ah, crate::query::MAX_AH, "UD: address handles");
    assert_eq!(a.hw_ver, regs::VERSION_VALUE);
    // 64 QP contexts less QP 0 and 1; 64 CQs less the asynchronous event queue's; 64 MR keys.
    assert_eq!((a.max_qp, a.max_cq, a.max_mr, a.max_srq), (62, 63, 64, 62));
    assert_eq!((a.max_qp_wr, a.max_srq_wr, a.max_cqe), (1 << 15, 1 << 15, 1 << 16));
    assert_eq!((a.max_send_sge, a.max_recv_sge, a.max_sge, a.max_sge_rd, a.max_srq_sge), (16, 15, 15, 16, 15));
    assert_eq!((a.max_qp_rd_atom, a.max_qp_init_rd_atom, a.max_res_rd_atom), (16, 16, 62 * 16));
    assert_eq!(a.max_inline_data, 448);
    assert_eq!(a.atomic_cap, AtomicCap::Hca);
    assert_eq!(a.max_pd, 0xFF_FFFF);
    assert_eq!(a.phys_port_cnt, 1);
    assert!(a.device_cap_flags.contains(DeviceCapFlags::RC_RNR_NAK_GEN | DeviceCapFlags::SYS_IMAGE_GUID));
    assert!(!a.device_cap_flags.contains(DeviceCapFlags::N_NOTIFY_CQ), "N-completion arming is not implemented");
    // rxe: MAC 52:54:00:77:00:01 has node GUID 5054:00ff:fe77:0001 (docs/guests.md 4.2).
    assert_eq!(a.node_guid, 0x5054_00ff_fe77_0001);
    assert_eq!(a.sys_image_guid, a.node_guid);
}

/// A NIC whose capability registers say less: the attributes follow the registers.
#[test]
fn query_device_follows_a_smaller_nic() {
    struct Small(MockDevice);
    impl Device for Small {
        fn name(&self) -> String {
            "small".into()
        }
        fn mmio_read32(&self, o: u16) -> Result<u32> {
            Ok(match o {
                regs::QP_CAPS => 10 | 8 << 4 | 4 << 8 | 3 << 16 | 2 << 24,
                regs::SEND_CAPS => 64,
                regs::SRQ_CAPS => 6 | 2 << 8,
                regs::FEATURES => regs::features::RC,
                _ => self.0.mmio_read32(o)?,
            })
        }
        fn mmio_write32(&self, o: u16, v: u32) -> Result<()> {
            self.0.mmio_write32(o, v)
        }
        fn alloc_dma(&self, l: usize, a: usize) -> Result<Iova> {
            self.0.alloc_dma(l, a)
        }
        fn free_dma(&self, i: Iova) -> Result<()> {
            self.0.free_dma(i)
        }
        fn dma_read(&self, i: Iova, o: &mut [u8]) -> Result<()> {
            self.0.dma_read(i, o)
        }
        fn dma_write(&self, i: Iova, d: &[u8]) -> Result<()> {
            self.0.dma_write(i, d)
        }
        unsafe fn map_user(&self, p: *mut u8, l: usize) -> Result<Iova> {
            unsafe { self.0.map_user(p, l) }
        }
        fn unmap(&self, i: Iova) -> Result<()> {
            self.0.unmap(i)
        }
        fn poll_progress(&self) {}
        fn now_cycles(&self) -> u64 {
            0
        }
    }
    let ctx = Context::open(Small(MockDevice::new())).unwrap();
    let a = ctx.query_device();
    assert_eq!((a.max_qp_wr, a.max_send_sge, a.max_recv_sge, a.max_sge, a.max_qp_rd_atom), (256, 4, 3, 3, 2));
    assert_eq!(a.max_inline_data, 64);
    assert_eq!((a.max_srq, a.max_srq_wr, a.max_srq_sge), (0, 0, 0), "no SRQ feature");
    assert_eq!(a.atomic_cap, AtomicCap::None, "no atomics feature");
    assert!(!a.device_cap_flags.contains(DeviceCapFlags::RC_RNR_NAK_GEN));
}

#[test]
fn an_older_contract_minor_is_refused() {
    struct Old(MockDevice);
    impl Device for Old {
        fn name(&self) -> String {
            "old".into()
        }
        fn mmio_read32(&self, o: u16) -> Result<u32> {
            Ok(if o == regs::VERSION { 1 } else { self.0.mmio_read32(o)? })
        }
        fn mmio_write32(&self, o: u16, v: u32) -> Result<()> {
            self.0.mmio_write32(o, v)
        }
        fn alloc_dma(&self, l: usize, a: usize) -> Result<Iova> {
            self.0.alloc_dma(l, a)
        }
        fn free_dma(&self, i: Iova) -> Result<()> {
            self.0.free_dma(i)
        }
        fn dma_read(&self, i: Iova, o: &mut [u8]) -> Result<()> {
            self.0.dma_read(i, o)
        }
        fn dma_write(&self, i: Iova, d: &[u8]) -> Result<()> {
            self.0.dma_write(i, d)
        }
        unsafe fn map_user(&self, p: *mut u8, l: usize) -> Result<Iova> {
            unsafe { self.0.map_user(p, l) }
        }
        fn unmap(&self, i: Iova) -> Result<()> {
            self.0.unmap(i)
        }
        fn poll_progress(&self) {}
        fn now_cycles(&self) -> u64 {
            0
        }
    }
    let e = Context::open(Old(MockDevice::new())).unwrap_err();
    assert_eq!(e.errno(), Errno::ENODEV);
    assert!(e.to_string().contains("0.1") && e.to_string().contains("capability"), "{e}");
}

#[test]
fn port_and_gid_table_match_rxe() {
    let (_dev, ctx) = open();
    let p = ctx.query_port(1).unwrap();
    assert_eq!(p.state, PortState::Active);
    assert_eq!(p.state.to_string(), "active");
    assert_eq!((p.max_mtu, p.active_mtu), (Mtu::Mtu4096, Mtu::Mtu4096));
    assert_eq!((p.gid_tbl_len, p.pkey_tbl_len, p.link_layer), (2, 1, query::LINK_LAYER_ETHERNET));
    assert_eq!((p.active_width, p.active_speed), (query::WIDTH_4X, query::SPEED_EDR), "4X EDR = 100 Gb/s");
    assert_eq!(ctx.query_port(2).unwrap_err().errno(), Errno::EINVAL);
    // rxe0 on MAC 52:54:00:77:00:01, IPv4 192.168.77.1 (docs/guests.md 4.2).
    let g0 = ctx.query_gid(1, 0).unwrap();
    assert_eq!(g0.to_ipv6(), "fe80::5054:ff:fe77:1".parse::<std::net::Ipv6Addr>().unwrap());
    let g1 = ctx.query_gid(1, 1).unwrap();
    assert_eq!(g1.to_ipv6(), "::ffff:192.168.77.1".parse::<std::net::Ipv6Addr>().unwrap());
    assert_eq!(g1.to_string(), "0000:0000:0000:0000:0000:ffff:c0a8:4d01");
    assert_eq!(g1.to_ipv4(), Some("192.168.77.1".parse().unwrap()));
    assert_eq!(ctx.query_gid_type(1, 1).unwrap(), GidType::RoceV2);
    assert_eq!(ctx.query_gid(1, 2).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(ctx.query_gid(0, 0).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(ctx.query_pkey(1, 0).unwrap(), 0xFFFF);
    assert_eq!(ctx.query_pkey(1, 1).unwrap_err().errno(), Errno::EINVAL);
    // Before the port has an address: down, zero GIDs, no GUID.
    let bare = Context::open(MockDevice::new()).unwrap();
    assert_eq!(bare.query_port(1).unwrap().state, PortState::Down);
    assert_eq!(bare.query_gid(1, 1).unwrap(), Gid::default());
    assert_eq!(bare.query_device().node_guid, 0);
}

#[test]
fn wc_status_strings_are_ibv_wc_status_str() {
    // rdma-core 44 libibverbs/verbs.c; librnic's tests compare every number with the
    // installed libibverbs too.
    let cases = [
        (0, "success"),
        (1, "local length error"),
        (4, "local protection error"),
        (5, "Work Request Flushed Error"),
        (10, "remote access error"),
        (12, "transport retry counter exceeded"),
        (13, "RNR retry counter exceeded"),
        (23, "TM software rendezvous"),
        (24, "unknown"),
        (200, "unknown"),
    ];
    for (n, s) in cases {
        let st = WcStatus::from_raw(n);
        assert_eq!(st.to_string(), s, "status {n}");
        assert_eq!(st.as_raw(), n);
    }
    assert_eq!(WcStatus::RemAccessErr.as_raw(), 10);
    assert_eq!(AsyncEventType::SrqLimitReached.to_string(), "SRQ limit reached");
    assert_eq!(WrOpcode::RdmaWriteWithImm.wc_opcode(), WcOpcode::RdmaWrite);
    assert_eq!(WrOpcode::AtomicCmpAndSwp.wc_opcode().as_raw(), 3);
    assert_eq!(WrOpcode::from_raw(4), Some(WrOpcode::RdmaRead));
    assert_eq!(WrOpcode::from_raw(8), None, "IBV_WR_LOCAL_INV: not this NIC's");
    for v in 0..=255u8 {
        assert_eq!(WcOpcode::from_raw(v).as_raw(), v);
    }
}

#[test]
fn dealloc_pd_is_ebusy_while_it_has_objects() {
    let (_dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut buf = vec![0u8; 64];
    let mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let r = pd.dealloc().unwrap_err();
    assert_eq!(r.errno(), Errno::EBUSY);
    assert!(r.to_string().contains("1 memory regions"), "{r}");
    let pd = r.object;
    mr.deregister().unwrap();
    let qp = pd.create_qp(&cq).build().unwrap();
    let pd = pd.dealloc().unwrap_err().object;
    drop(qp);
    let srq = pd.create_srq(4, 1).unwrap();
    let r = pd.dealloc().unwrap_err();
    assert!(r.to_string().contains("1 SRQs"), "{r}");
    let pd = r.object;
    srq.destroy().unwrap();
    let clone = pd.clone();
    let pd = pd.dealloc().unwrap_err().object;
    drop(clone);
    pd.dealloc().unwrap();
}

#[test]
fn destroy_cq_and_srq_are_ebusy_while_qps_use_them() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let rcq = ctx.create_cq(64).unwrap();
    let srq = pd.create_srq(4, 1).unwrap();
    let qp = pd.create_qp(&cq).set_recv_cq(&rcq).set_srq(&srq).build().unwrap();
    let qpn = qp.qp_num();
    let r = cq.destroy().unwrap_err();
    assert_eq!(r.errno(), Errno::EBUSY);
    assert!(r.to_string().contains(&format!("[{qpn}]")), "{r}");
    let cq = r.object;
    let rcq = rcq.destroy().unwrap_err().object;
    let srq = srq.destroy().unwrap_err().object;
    qp.destroy().unwrap();
    let (op, rec) = (last_cmd(&dev, regs::cmd_op::WRITE_QP).0, last_cmd(&dev, regs::cmd_op::WRITE_QP).1);
    assert_eq!((op, rnic_contract::qp_context::STATE.get(&rec)), (qpn as u8, 0), "destroy_qp wrote RESET");
    srq.destroy().unwrap();
    let cqn = cq.cqn();
    cq.destroy().unwrap();
    let (idx, rec) = last_cmd(&dev, regs::cmd_op::WRITE_CQ);
    assert_eq!((u32::from(idx), cq_context::VALID.get(&rec)), (cqn, 0), "destroy_cq invalidated the context");
    rcq.destroy().unwrap();
}

#[test]
fn rereg_mr_rewrites_the_entry_and_keeps_the_keys() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let pd2 = ctx.alloc_pd().unwrap();
    let mut buf = vec![0u8; 256];
    let mut mr = pd.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let (lkey, va) = (mr.lkey(), mr.addr());
    mr.rereg(Some(&pd2), Some(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)).unwrap();
    let (idx, rec) = last_cmd(&dev, regs::cmd_op::WRITE_MR);
    assert_eq!(u32::from(idx), lkey >> 8);
    assert_eq!(mr_entry::PD.get(&rec), u64::from(pd2.pdn()));
    assert_eq!(mr_entry::ACCESS.get(&rec), 3);
    assert_eq!(mr_entry::TAG.get(&rec), u64::from(lkey & 0xFF));
    assert_eq!((mr.lkey(), mr.addr()), (lkey, va));
    let writes = dev.writes.borrow().len();
    assert_eq!(mr.rereg(None, Some(AccessFlags::REMOTE_WRITE)).unwrap_err().errno(), Errno::EINVAL);
    assert_eq!(dev.writes.borrow().len(), writes, "a refused rereg writes nothing");
    // The region moved to pd2: pd is free, pd2 busy.
    pd.dealloc().unwrap();
    let r = pd2.dealloc().unwrap_err();
    assert!(r.to_string().contains("1 memory regions"), "{r}");
    let pd2 = r.object;
    // A new buffer: same keys, new VA, length and IOVA in the entry.
    let mut other = vec![0u8; 512];
    let mr = mr.rereg_buffer(&mut other, None).unwrap();
    let (_, rec) = last_cmd(&dev, regs::cmd_op::WRITE_MR);
    assert_eq!(mr.lkey(), lkey);
    assert_eq!((mr_entry::VA.get(&rec), mr_entry::LENGTH.get(&rec)), (mr.addr(), 512));
    assert_eq!(mr_entry::IOVA.get(&rec), mr.iova().0);
    mr.deregister().unwrap();
    pd2.dealloc().unwrap();
}

#[test]
fn resize_cq_needs_a_quiet_cq() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut qp = pd.create_qp(&cq).set_max_send_wr(8).build().unwrap();
    // A quiet CQ may shrink below its QP's SQ (keeping within it is the program's job).
    cq.resize(4).unwrap();
    assert_eq!(cq.capacity(), 4);
    cq.resize(100).unwrap();
    assert_eq!(cq.capacity(), 128);
    let (idx, rec) = last_cmd(&dev, regs::cmd_op::WRITE_CQ);
    assert_eq!(
        (u32::from(idx), cq_context::LOG_SIZE.get(&rec), cq_context::VALID.get(&rec)),
        (cq.cqn(), 8, 1),
        "a ring of twice 128"
    );
    // With a send WR outstanding the NIC may be writing a CQE: EBUSY.
    let attr = |s| QpAttr {
        qp_state: s,
        path_mtu: Mtu::Mtu1024,
        port_num: 1,
        ah_attr: AddressVector { dest_mac: MacAddr([2, 0, 0, 0, 0, 2]), dest_ip: "192.0.2.2".parse().unwrap() },
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
        ..QpAttr::default()
    };
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let (req, _) = qp::transition_masks(qp.state(), s).unwrap();
        qp.modify(&attr(s), req | QpAttrMask::STATE).unwrap();
    }
    qp.post_send_one(SendWr::send(1, None).signaled(true)).unwrap();
    let e = cq.resize(32).unwrap_err();
    assert_eq!(e.errno(), Errno::EBUSY, "{e}");
    assert_eq!(cq.capacity(), 128, "unchanged");
}

#[test]
fn post_send_posts_up_to_the_bad_wr() {
    let (dev, ctx) = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16).unwrap();
    let mut qp = pd.create_qp(&cq).set_max_send_wr(8).build().unwrap();
    let attr = |s| QpAttr {
        qp_state: s,
        path_mtu: Mtu::Mtu1024,
        port_num: 1,
        ah_attr: AddressVector { dest_mac: MacAddr([2, 0, 0, 0, 0, 2]), dest_ip: "192.0.2.2".parse().unwrap() },
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
        ..QpAttr::default()
    };
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let (req, _) = qp::transition_masks(qp.state(), s).unwrap();
        qp.modify(&attr(s), req | QpAttrMask::STATE).unwrap();
    }
    let good = |id| SendWr::send(id, None);
    let bad = SendWr::send(9, None).with_opcode(WrOpcode::RdmaWrite); // no remote address
    let writes = dev.writes.borrow().len();
    let e = qp.post_send(&[good(1), good(2), bad, good(4)]).unwrap_err();
    assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 2), "{e}");
    assert!(e.error.to_string().contains("WR 2"), "{e}");
    assert_eq!(
        dev.writes.borrow()[writes..],
        [(regs::SQ_DOORBELL, qp.qp_num() << 16 | 2)],
        "one doorbell for WRs 0 and 1"
    );
    assert_eq!(qp.outstanding(), 2);
    let ring = {
        let (_, rec) = last_cmd(&dev, regs::cmd_op::WRITE_QP);
        rnic_contract::qp_context::SQ_BASE.get(&rec)
    };
    let mut w = [0u8; 64];
    ctx.device().dma_read(Iova(ring + 64), &mut w).unwrap();
    assert_eq!(wqe::WR_ID.get(&w), 2);
    ctx.device().dma_read(Iova(ring + 128), &mut w).unwrap();
    assert_eq!(wqe::WR_ID.get(&w), 0, "the bad WR was not written");
    // As an rnic::Error through `?`.
    let f = |qp: &mut QueuePair| -> Result<()> {
        qp.post_send(&[bad])?;
        Ok(())
    };
    assert_eq!(f(&mut qp).unwrap_err().errno(), Errno::EINVAL);
}

#[test]
fn device_strings_name_backends() {
    let empty = DeviceList::new("").unwrap();
    assert!(empty.entries().is_empty());
    let e = DeviceList::new("nosuch:1").unwrap_err();
    assert_eq!(e.errno(), Errno::ENODEV);
    assert!(e.to_string().contains("nosuch"), "{e}");
    assert_eq!(DeviceList::new("sim,nosuch").unwrap_err().errno(), Errno::ENODEV);
    assert_eq!(empty.open(0).unwrap_err().errno(), Errno::ENODEV);
}

#[cfg(feature = "sim")]
#[test]
fn sim_device_strings_list_and_open() {
    let l = DeviceList::new("sim:2, sim").unwrap();
    let names: Vec<&str> = l.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["rnic_0", "rnic_1", "rnic_2"]);
    assert_eq!(l.entries()[1].port, PortAddr::for_sim_nic(1));
    assert_eq!(l.entries()[1].guid, query::eui64(PortAddr::for_sim_nic(1).mac));
    for bad in ["sim:0", "sim:17", "sim:x"] {
        assert_eq!(DeviceList::new(bad).unwrap_err().errno(), Errno::EINVAL, "{bad}");
    }
    let a = l.open(0).unwrap();
    let b = l.open(1).unwrap();
    assert_eq!(a.query_device().node_guid, l.entries()[0].guid);
    assert_eq!(b.query_gid(1, 1).unwrap().to_ipv4(), Some(PortAddr::for_sim_nic(1).ip));
    // sim:2's devices share one world: same clock.
    assert_eq!(a.device().now_cycles(), b.device().now_cycles());
    // A second open of device 0 is the same context: QP numbers stay unique on the NIC.
    let a2 = l.open(0).unwrap();
    let (pa, pa2) = (a.alloc_pd().unwrap(), a2.alloc_pd().unwrap());
    assert_ne!(pa.pdn(), pa2.pdn());
    let (cq, cq2) = (a.create_cq(64).unwrap(), a2.create_cq(64).unwrap());
    assert_ne!(cq.cqn(), cq2.cqn());
    let q = pa.create_qp(&cq).build().unwrap();
    let q2 = pa2.create_qp(&cq2).build().unwrap();
    assert_ne!(q.qp_num(), q2.qp_num());
}

#[test]
fn completion_channel_arms_with_the_consumer_index_and_maps_vectors_to_cqs() {
    use std::time::Duration;
    let (dev, ctx) = open();
    // No interrupts: no channel.
    assert_eq!(ctx.create_comp_channel().unwrap_err().errno(), Errno::EOPNOTSUPP);
    dev.irq_vectors.set(2);
    let ch = ctx.create_comp_channel().unwrap();
    let plain = ctx.create_cq(8).unwrap();
    let writes = dev.writes.borrow().len();
    assert_eq!(plain.req_notify(false).unwrap_err().errno(), Errno::EINVAL, "no channel");
    assert_eq!(dev.writes.borrow().len(), writes, "a refused arm writes nothing");
    assert_eq!(plain.comp_vector(), None);

    // Each CQ with a channel gets its own vector, in its context; the third finds none left.
    let c0 = ctx.create_cq_with_channel(8, &ch).unwrap();
    assert_eq!(cq_context::VECTOR.get(&last_cmd(&dev, regs::cmd_op::WRITE_CQ).1), 0);
    let c1 = ctx.create_cq_with_channel(8, &ch).unwrap();
    let rec1 = last_cmd(&dev, regs::cmd_op::WRITE_CQ).1;
    assert_eq!(cq_context::VECTOR.get(&rec1), 1);
    let base1 = cq_context::BASE.get(&rec1);
    assert_eq!((c0.comp_vector(), c1.comp_vector()), (Some(0), Some(1)));
    assert_eq!(ctx.create_cq_with_channel(8, &ch).unwrap_err().errno(), Errno::ENOMEM);

    // The arm word: CQN, solicited bit, consumer index.
    c1.req_notify(true).unwrap();
    let w = *dev.writes.borrow().last().unwrap();
    assert_eq!(w, (regs::CQ_ARM, c1.cqn() << regs::cq_arm::CQN_SHIFT | regs::cq_arm::SOLICITED));
    // Two CQEs consumed: the index follows.
    for n in 0..2u64 {
        let e =
            crate::records::Cqe { wr_id: 7, qp_num: 9, owner: crate::records::owner_for(n, 3), ..Default::default() };
        ctx.device().dma_write(Iova(base1 + 32 * n), &e.pack()).unwrap();
    }
    let mut wcs = [WorkCompletion::default(); 4];
    assert_eq!(c1.poll(&mut wcs).unwrap(), 2);
    c1.req_notify(false).unwrap();
    assert_eq!(*dev.writes.borrow().last().unwrap(), (regs::CQ_ARM, c1.cqn() << regs::cq_arm::CQN_SHIFT | 2));

    // Interrupts name CQs by vector; nothing fired, nothing returned.
    assert!(ch.get_cq_event_timeout(Duration::ZERO).unwrap().is_none());
    dev.fired.borrow_mut().extend([1, 0]);
    let e1 = ch.get_cq_event_timeout(Duration::ZERO).unwrap().unwrap();
    let e0 = ch.get_cq_event_timeout(Duration::ZERO).unwrap().unwrap();
    assert_eq!((e1.cqn(), e0.cqn()), (c1.cqn(), c0.cqn()));
    drop((e1, e0));
    assert_eq!((c0.unacked_events(), c1.unacked_events()), (1, 1));

    // Destroys: the channel while CQs use it, a CQ while its events are unacknowledged.
    let ch = ch.destroy().unwrap_err().object;
    let c1 = c1.destroy().unwrap_err().object;
    c1.ack_cq_events(5);
    assert_eq!(c1.unacked_events(), 0);
    c1.destroy().unwrap();
    // Its vector is free again.
    let c2 = ctx.create_cq_with_channel(8, &ch).unwrap();
    assert_eq!(c2.comp_vector(), Some(1));
    c0.ack_cq_events(1);
    drop((c0, c2));
    ch.destroy().unwrap();
}
