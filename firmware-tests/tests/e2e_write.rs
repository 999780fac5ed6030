//! End-to-end RDMA WRITE: two simulated hosts, the Verilated NIC RTL on each, driven through the
//! `rnic` verbs driver (MMIO, WQEs in host memory, doorbells, CQE polling). These are system
//! tests of the RTL: the driver does no NIC work, so every byte that arrives was moved by the
//! NIC, and every completion and counter was produced by it.
//!
//! What they pin (IBTA Vol 1 ch. 9, ibv_post_send(3), ibv_poll_cq(3), docs/driver.md):
//! - writes of 1 byte, one path MTU and multi-packet messages arrive intact at every path MTU,
//!   1 MiB at 1024 and 4096, from and to unaligned addresses, and touch no byte outside the
//!   target range;
//! - only signaled WRs produce CQEs; a signaled completion retires the unsignaled WRs before it;
//! - a WRITE with a wrong rkey, or reaching past the end of the remote MR, changes no byte of the
//!   target and increments the responder's `drop_key` counter (bounded waits: a NAK path may not
//!   exist yet, so the requester may never complete such a WR);
//! - a bad lkey completes with LOC_PROT_ERR.
mod common;

use common::{budget, nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, AsyncEvent, AsyncEventType, ConnectOptions, Mtu, QueuePair, SendWr, Sge, WcOpcode, WcStatus,
    WorkCompletion,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
/// Guard bytes around every target range, and the target buffer's initial content.
const GUARD: u8 = 0xEE;

/// Two hosts: A (NIC 0) is the requester, B (NIC 1) the responder.
fn hosts() -> Hosts {
    Hosts::new(SimConfig::default())
}

/// The QPs and waits the WRITE tests use on top of the shared harness.
trait WriteHosts {
    fn qps<'mr>(&self, mtu: Mtu, sq_sig_all: bool) -> (QueuePair<'mr>, QueuePair<'mr>);
    fn wait_completions(&self, n: usize, budget: u64) -> Vec<WorkCompletion>;
}

impl WriteHosts for Hosts {
    /// Two connected RC QPs (A → B) at `mtu`.
    fn qps<'mr>(&self, mtu: Mtu, sq_sig_all: bool) -> (QueuePair<'mr>, QueuePair<'mr>) {
        let mut qa = self.pa.create_qp(&self.ca).set_max_send_wr(32).set_sq_sig_all(sq_sig_all).build().unwrap();
        let mut qb = self.pb.create_qp(&self.cb).set_max_send_wr(32).build().unwrap();
        let opts = ConnectOptions { path_mtu: mtu, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts).unwrap();
        qb.connect_with(&ea, &opts).unwrap();
        (qa, qb)
    }

    /// Polls A's CQ until `n` completions arrived (panics after `budget` cycles, printing the
    /// counters of both NICs).
    fn wait_completions(&self, n: usize, budget: u64) -> Vec<WorkCompletion> {
        self.wait(&self.ca, n, budget)
    }
}

/// Packets of a `len`-byte WRITE at `mtu` (a zero-length WRITE is one packet).
fn packets(len: usize, mtu: Mtu) -> u32 {
    (len.max(1) as u32).div_ceil(mtu.bytes())
}

/// One signaled RDMA WRITE of `len` bytes from offset `src_off` of A's buffer to offset
/// `dst_off` of B's; checks the bytes, the guard bytes around them, the completion and the
/// packet counters.
fn write_and_check(mtu: Mtu, len: usize, src_off: usize, dst_off: usize) {
    let h = hosts();
    let mut src = pattern(len as u64 ^ src_off as u64, src_off + len + 13);
    let mut dst = vec![GUARD; dst_off + len + 29];
    let expect_src = src[src_off..src_off + len].to_vec();
    let dst_len = dst.len();
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(mtu, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let (c0a, c0b) = h.counters();
        qa.post_send_one(
            SendWr::rdma_write(0xAB, src_mr.sge(src_off..src_off + len).unwrap(), remote.at(dst_off as u64))
                .signaled(true),
        )
        .unwrap();
        let wcs = h.wait_completions(1, budget(len));
        assert_eq!(wcs[0].wr_id, 0xAB);
        assert_eq!(wcs[0].status, WcStatus::Success, "{:?}", wcs[0]);
        assert_eq!(wcs[0].opcode, WcOpcode::RdmaWrite);
        assert_eq!(wcs[0].qp_num, qa.qp_num());
        assert_eq!(qa.outstanding(), 0);
        h.settle(2_000);
        let (c1a, c1b) = h.counters();
        let d = |c1: &rnic::Counters, c0: &rnic::Counters, i: u16| {
            c1.values[i as usize].wrapping_sub(c0.values[i as usize])
        };
        let n = packets(len, mtu);
        assert_eq!(d(&c1a, &c0a, counter::TX_REQUESTS), n, "request packets for {len} B at MTU {}", mtu.bytes());
        assert_eq!(d(&c1b, &c0b, counter::RX_ROCE_OK), n, "packets accepted by the responder");
        for c in [
            counter::DROP_ICRC,
            counter::DROP_MALFORMED,
            counter::DROP_UNKNOWN_QP,
            counter::DROP_KEY,
            counter::DROP_PSN,
        ] {
            assert_eq!(d(&c1b, &c0b, c), 0, "responder {} (NIC 1: {:?})", counter::NAMES[c as usize], nonzero(&c1b));
            assert_eq!(d(&c1a, &c0a, c), 0, "requester {} (NIC 0: {:?})", counter::NAMES[c as usize], nonzero(&c1a));
        }
        assert_eq!(d(&c1a, &c0a, counter::CQES), 1);
        assert!(d(&c1a, &c0a, counter::RX_ACKS) >= 1);
        assert_eq!(qa.stray_completions(), 0);
    }
    assert_eq!(dst.len(), dst_len);
    if let Some(i) = dst[dst_off..dst_off + len].iter().zip(&expect_src).position(|(a, b)| a != b) {
        panic!(
            "MTU {} len {len} src+{src_off} dst+{dst_off}: first wrong byte at target offset {i}: {:#04x}, expected {:#04x}",
            mtu.bytes(),
            dst[dst_off + i],
            expect_src[i]
        );
    }
    assert!(dst[..dst_off].iter().all(|&b| b == GUARD), "bytes before the target changed");
    assert!(dst[dst_off + len..].iter().all(|&b| b == GUARD), "bytes after the target changed");
}

#[test]
fn one_byte_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        write_and_check(mtu, 1, 0, 0);
    }
}

#[test]
fn one_full_mtu_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        write_and_check(mtu, mtu.bytes() as usize, 0, 0);
    }
}

#[test]
fn multi_packet_unaligned_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        write_and_check(mtu, 3 * mtu.bytes() as usize + 77, 3, 5);
    }
}

#[test]
fn one_mib_at_mtu_4096() {
    write_and_check(Mtu::Mtu4096, 1 << 20, 0, 0);
}

#[test]
fn one_mib_at_mtu_1024() {
    write_and_check(Mtu::Mtu1024, 1 << 20, 0, 0);
}

#[test]
fn unaligned_source_and_target_addresses() {
    for (src_off, dst_off, len) in [(1, 63, 200), (63, 1, 4097), (17, 33, 64), (5, 0, 129), (0, 7, 1000)] {
        write_and_check(Mtu::Mtu1024, len, src_off, dst_off);
    }
}

#[test]
fn signaled_and_unsignaled_mix() {
    let h = hosts();
    const N: usize = 12;
    const LEN: usize = 1000;
    let mut src = pattern(42, N * LEN);
    let mut dst = vec![GUARD; N * LEN];
    let expect = src.clone();
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu512, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let cqes0 = h.a.counter(counter::CQES).unwrap();
        let wrs: Vec<_> = (0..N)
            .map(|i| {
                SendWr::rdma_write(i as u64, src_mr.sge(i * LEN..(i + 1) * LEN).unwrap(), remote.at((i * LEN) as u64))
                    .signaled(i % 4 == 3)
            })
            .collect();
        qa.post_send(&wrs[..5]).unwrap();
        qa.post_send(&wrs[5..]).unwrap();
        assert_eq!(qa.outstanding(), N);
        let wcs = h.wait_completions(3, budget(N * LEN));
        let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
        assert_eq!(ids, vec![3, 7, 11], "only signaled WRs complete, in order");
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
        assert_eq!(qa.outstanding(), 0, "the last signaled completion retires every earlier WR");
        h.settle(20_000);
        let mut more = [WorkCompletion::default(); 4];
        assert_eq!(h.ca.poll(&mut more).unwrap(), 0, "no CQE for unsignaled WRs: {more:?}");
        assert_eq!(h.a.counter(counter::CQES).unwrap() - cqes0, 3);
        // sq_sig_all signals WRs posted without the flag.
        let (mut qs, qsb) = h.qps(Mtu::Mtu512, true);
        let remote = qsb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let wrs: Vec<_> =
            (0..3).map(|i| SendWr::rdma_write(100 + i as u64, src_mr.sge(0..LEN).unwrap(), remote.at(0))).collect();
        qs.post_send(&wrs).unwrap();
        let wcs = h.wait_completions(3, budget(3 * LEN));
        assert_eq!(wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![100, 101, 102]);
        assert_eq!(wcs[0].qp_num, qs.qp_num());
    }
    assert!(dst == expect, "first wrong byte at {:?}", dst.iter().zip(&expect).position(|(a, b)| a != b));
}

/// Posts a WRITE that the responder must refuse (`remote` from `aim`), and checks that no byte
/// of the target changed, that `drop_key` counted it, and that it completed
/// `IBV_WC_REM_ACCESS_ERR`.
fn refused_write(aim: impl Fn(&rnic::RemoteBuffer) -> rnic::RemoteAddr, len: usize) {
    let h = hosts();
    let mut src = pattern(7, 8192);
    let mut dst = vec![GUARD; 4096];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu1024, false);
        let buffer = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let drops0 = h.b.counter(counter::DROP_KEY).unwrap();
        qa.post_send_one(SendWr::rdma_write(9, src_mr.sge(0..len).unwrap(), aim(&buffer)).signaled(true)).unwrap();
        let counted = h.wait_counter(&h.b, counter::DROP_KEY, drops0 + 1, 200_000);
        let (ca, cb) = h.counters();
        assert!(
            counted,
            "drop_key did not increase within 200000 cycles\nNIC 0: {:?}\nNIC 1: {:?}",
            nonzero(&ca),
            nonzero(&cb)
        );
        h.settle(20_000);
        let mut wcs = [WorkCompletion::default(); 4];
        let n = h.ca.poll(&mut wcs).unwrap();
        // The responder answers NAK remote access error; the requester completes the WRITE
        // with IBV_WC_REM_ACCESS_ERR (IBTA Vol 1 9.7.5.2.4, 10.8.3), as README says.
        assert_eq!(n, 1, "one completion for the refused WRITE: {:?}", &wcs[..n]);
        assert_eq!((wcs[0].wr_id, wcs[0].status), (9, WcStatus::RemAccessErr), "{:?}", wcs[0]);
        assert_eq!(h.b.counter(counter::RX_ROCE_OK).unwrap(), cb.values[counter::RX_ROCE_OK as usize]);
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD), "the target changed");
    }
    assert!(dst.iter().all(|&b| b == GUARD), "the target changed");
}

#[test]
fn wrong_rkey_changes_nothing_and_counts_drop_key() {
    // Same key-table index, wrong tag: a stale key.
    refused_write(|b| rnic::RemoteAddr { addr: b.addr, rkey: b.rkey ^ 0x80 }, 512);
}

#[test]
fn unknown_rkey_index_changes_nothing_and_counts_drop_key() {
    refused_write(|b| rnic::RemoteAddr { addr: b.addr, rkey: (b.rkey + (17 << 8)) & 0xFFFF }, 512);
}

#[test]
fn write_past_the_end_of_the_mr_changes_nothing_and_counts_drop_key() {
    refused_write(|b| b.at(b.len - 10), 100);
}

#[test]
fn write_before_the_start_of_the_mr_changes_nothing_and_counts_drop_key() {
    refused_write(|b| rnic::RemoteAddr { addr: b.addr - 1, rkey: b.rkey }, 64);
}

/// Posts a WRITE that must fail locally, and returns its completion.
fn local_error(
    make: impl for<'a> Fn(&'a rnic::MemoryRegion<'_>, rnic::RemoteAddr) -> SendWr<'a>,
) -> (WorkCompletion, u32) {
    let h = hosts();
    let mut src = pattern(3, 4096);
    let mut dst = vec![GUARD; 4096];
    let wc;
    let local_errors;
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu1024, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let e0 = h.a.counter(counter::LOCAL_ERRORS).unwrap();
        qa.post_send_one(make(&src_mr, remote.at(0))).unwrap();
        wc = h.wait_completions(1, 200_000)[0];
        assert_eq!(wc.qp_num, qa.qp_num());
        assert_eq!(qa.outstanding(), 0, "an error completion retires its WR");
        assert_eq!(qa.state(), rnic::QpState::Err, "the QP is in ERR after an error completion");
        h.settle(5_000);
        local_errors = h.a.counter(counter::LOCAL_ERRORS).unwrap() - e0;
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD), "a failed WRITE changed the target");
    }
    (wc, local_errors)
}

#[test]
fn bad_lkey_completes_with_loc_prot_err() {
    let (wc, errs) = local_error(|mr, remote| {
        SendWr::rdma_write(5, Sge::raw(mr.addr(), 256, mr.lkey() ^ 0x80), remote).signaled(true)
    });
    assert_eq!((wc.wr_id, wc.status), (5, WcStatus::LocProtErr), "{wc:?}");
    assert_eq!(errs, 1, "local_errors counter");
}

#[test]
fn sge_past_the_end_of_its_mr_completes_with_loc_prot_err() {
    let (wc, _) = local_error(|mr, remote| {
        SendWr::rdma_write(6, Sge::raw(mr.addr() + 4000, 200, mr.lkey()), remote).signaled(true)
    });
    assert_eq!((wc.wr_id, wc.status), (6, WcStatus::LocProtErr), "{wc:?}");
}

#[test]
fn unsignaled_bad_lkey_still_completes_with_an_error() {
    // IBTA 10.8.3 / PROTOCOL.md: errors always produce a CQE, signaled or not.
    let (wc, _) = local_error(|mr, remote| SendWr::rdma_write(8, Sge::raw(mr.addr(), 16, mr.lkey() ^ 0x40), remote));
    assert_eq!((wc.wr_id, wc.status), (8, WcStatus::LocProtErr), "{wc:?}");
}

#[test]
fn zero_length_write_completes_without_touching_memory() {
    let h = hosts();
    let mut dst = vec![GUARD; 64];
    {
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu1024, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let wr = SendWr { num_sge: 0, ..SendWr::rdma_write(3, Sge::raw(0, 0, 0), remote.at(0)) }.signaled(true);
        qa.post_send_one(wr).unwrap();
        let wc = h.wait_completions(1, 200_000)[0];
        assert_eq!((wc.wr_id, wc.status, wc.byte_len), (3, WcStatus::Success, 0), "{wc:?}");
        assert_eq!(h.a.counter(counter::TX_REQUESTS).unwrap(), 1, "a zero-length WRITE is one packet");
    }
    assert!(dst.iter().all(|&b| b == GUARD));
}

#[test]
fn two_qps_share_a_cq() {
    let h = hosts();
    let mut src = pattern(11, 1024);
    let mut dst = vec![GUARD; 2048];
    let expect = src.clone();
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut q1, b1) = h.qps(Mtu::Mtu256, false);
        let (mut q2, _b2) = h.qps(Mtu::Mtu256, false);
        let remote = b1.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        for i in 0..4u64 {
            let r = (i as usize * 256)..(i as usize + 1) * 256;
            q1.post_send_one(
                SendWr::rdma_write(100 + i, src_mr.sge(r.clone()).unwrap(), remote.at(r.start as u64)).signaled(true),
            )
            .unwrap();
            q2.post_send_one(
                SendWr::rdma_write(200 + i, src_mr.sge(r.clone()).unwrap(), remote.at(1024 + r.start as u64))
                    .signaled(true),
            )
            .unwrap();
        }
        let wcs = h.wait_completions(8, 400_000);
        let of = |q: &QueuePair, base: u64| -> Vec<u64> {
            wcs.iter().filter(|w| w.qp_num == q.qp_num()).map(|w| w.wr_id - base).collect()
        };
        assert_eq!(of(&q1, 100), vec![0, 1, 2, 3], "{wcs:?}");
        assert_eq!(of(&q2, 200), vec![0, 1, 2, 3], "{wcs:?}");
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
        assert_eq!((q1.outstanding(), q2.outstanding()), (0, 0));
    }
    assert_eq!(&dst[..1024], &expect[..]);
    assert_eq!(&dst[1024..], &expect[..]);
}

#[test]
fn a_qp_reset_and_reconnected_sends_again() {
    let h = hosts();
    let mut src = pattern(5, 512);
    let mut dst = vec![GUARD; 1024];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu512, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        qa.post_send_one(SendWr::rdma_write(1, src_mr.sge(0..512).unwrap(), remote.at(0)).signaled(true)).unwrap();
        assert_eq!(h.wait_completions(1, 200_000)[0].status, WcStatus::Success);
        // RESET both ends (the responder keeps its expected PSN otherwise) and connect again.
        drop(qb);
        qa.modify(&rnic::QpAttr { qp_state: rnic::QpState::Reset, ..Default::default() }, rnic::QpAttrMask::STATE)
            .unwrap();
        let mut qb = h.pb.create_qp(&h.cb).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect(&eb).unwrap();
        qb.connect(&ea).unwrap();
        qa.post_send_one(SendWr::rdma_write(2, src_mr.sge(0..512).unwrap(), remote.at(512)).signaled(true)).unwrap();
        let wc = h.wait_completions(1, 200_000)[0];
        assert_eq!((wc.wr_id, wc.status), (2, WcStatus::Success), "{wc:?}");
    }
    assert_eq!(&dst[..512], &src[..]);
    assert_eq!(&dst[512..], &src[..]);
}

#[test]
fn a_stale_rkey_of_a_reregistered_slot_is_refused() {
    let h = hosts();
    let mut src = pattern(9, 64);
    let mut old = vec![GUARD; 64];
    let mut new = vec![GUARD; 64];
    let old_mr = h.pb.register(&mut old, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let stale = old_mr.rkey();
    drop(old_mr);
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let new_mr = h.pb.register(&mut new, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        assert_eq!(new_mr.rkey() >> 8, stale >> 8, "the slot is reused");
        assert_ne!(new_mr.rkey(), stale, "with a new tag");
        let (mut qa, _qb) = h.qps(Mtu::Mtu1024, false);
        qa.post_send_one(
            SendWr::rdma_write(1, src_mr.sge(0..64).unwrap(), rnic::RemoteAddr { addr: new_mr.addr(), rkey: stale })
                .signaled(true),
        )
        .unwrap();
        assert!(h.wait_counter(&h.b, counter::DROP_KEY, 1, 200_000), "drop_key did not count the stale key");
        h.settle(20_000);
        let mut wcs = [WorkCompletion::default(); 2];
        let n = h.ca.poll(&mut wcs).unwrap();
        assert!(wcs[..n].iter().all(|w| w.status != WcStatus::Success), "{:?}", &wcs[..n]);
        assert!(new_mr.to_vec().iter().all(|&b| b == GUARD));
    }
    assert!(old.iter().all(|&b| b == GUARD) && new.iter().all(|&b| b == GUARD));
}

/// IBTA 10.8.3.3 / PROTOCOL.md: after an error completion the QP is in ERROR and every later
/// WQE completes with WR_FLUSH_ERR without being executed.
#[test]
fn wqes_after_a_local_error_are_flushed() {
    let h = hosts();
    let mut src = pattern(1, 256);
    let mut dst = vec![GUARD; 256];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu1024, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let bad = SendWr::rdma_write(1, Sge::raw(src_mr.addr(), 64, src_mr.lkey() ^ 0x80), remote.at(0)).signaled(true);
        let good = SendWr::rdma_write(2, src_mr.sge(0..64).unwrap(), remote.at(64)).signaled(true);
        qa.post_send(&[bad, good]).unwrap();
        let wcs = h.wait_completions(2, 200_000);
        assert_eq!(
            wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]
        );
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD), "a flushed WQE wrote the target");
    }
}

/// IBTA 9.9.3 / 10.8.3.3: a remote access error NAK puts the requester QP in ERROR; the WQEs
/// behind the failed one complete with WR_FLUSH_ERR.
#[test]
fn wqes_after_a_remote_access_error_are_flushed() {
    let h = hosts();
    let mut src = pattern(2, 256);
    let mut dst = vec![GUARD; 256];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = h.qps(Mtu::Mtu1024, false);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let bad = SendWr::rdma_write(
            1,
            src_mr.sge(0..64).unwrap(),
            rnic::RemoteAddr { addr: remote.addr, rkey: remote.rkey ^ 0x80 },
        )
        .signaled(true);
        let good = SendWr::rdma_write(2, src_mr.sge(0..64).unwrap(), remote.at(64)).signaled(true);
        qa.post_send(&[bad, good]).unwrap();
        let wcs = h.wait_completions(2, 400_000);
        assert_eq!(
            wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(1, WcStatus::RemAccessErr), (2, WcStatus::WrFlushErr)]
        );
    }
}

/// The byte counters (`tx_bytes`, `rx_bytes`, 64-bit) count exactly the frames on the wire:
/// each NIC's sent bytes equal the sum of its frames' lengths in a capture (Ethernet header
/// through ICRC), and equal the other NIC's received bytes; the frame counters agree too.
#[test]
fn byte_counters_match_the_capture() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("bytes.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(11, 50_001);
    let mut dst = vec![GUARD; 50_001];
    let (ca, cb);
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, _qb) = h.qps(Mtu::Mtu1024, true);
        for (i, len) in [50_001usize, 1, 0, 777].into_iter().enumerate() {
            qa.post_send_one(SendWr::rdma_write(i as u64, src_mr.sge(0..len).unwrap(), dst_mr.remote_addr(0).unwrap()))
                .unwrap();
            assert_eq!(h.wait_completions(1, budget(len))[0].status, WcStatus::Success);
        }
        h.settle(2_000);
        (ca, cb) = h.counters();
    }
    h.world.borrow_mut().finish().unwrap();
    let (mut a_bytes, mut b_bytes, mut a_frames, mut b_frames) = (0u64, 0u64, 0u32, 0u32);
    for (_, f) in oracle::read_pcap(&pcap).unwrap() {
        // A sends the WRITE requests, B the ACKs.
        if RocePacketRepr::parse(&f).unwrap().bth.opcode.0 == 0x11 {
            (b_bytes, b_frames) = (b_bytes + f.len() as u64, b_frames + 1);
        } else {
            (a_bytes, a_frames) = (a_bytes + f.len() as u64, a_frames + 1);
        }
    }
    assert!(a_bytes > 50_001 && b_bytes > 0);
    assert_eq!((ca.tx_bytes(), cb.rx_bytes()), (a_bytes, a_bytes), "A's frames");
    assert_eq!((cb.tx_bytes(), ca.rx_bytes()), (b_bytes, b_bytes), "B's frames");
    assert_eq!((ca.get("tx_frames"), cb.get("rx_frames")), (Some(a_frames), Some(a_frames)));
    assert_eq!((cb.get("tx_frames"), ca.get("rx_frames")), (Some(b_frames), Some(b_frames)));
}

/// IBTA Vol 1 9.9.3 (responder class C errors, as rxe and ConnectX handle them): after the
/// responder answers a WRITE with NAK remote access error, its QP is in the error state too:
/// its posted receive WQEs complete with IBV_WC_WR_FLUSH_ERR, a send WR it posts afterwards is
/// flushed instead of sent, and nothing reaches the target.
#[test]
fn a_remote_access_error_puts_the_responder_qp_in_error() {
    let h = hosts();
    let mut src = pattern(5, 256);
    let mut dst = vec![GUARD; 256];
    let mut back = vec![GUARD; 64];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let back_mr = h.pb.register(&mut back, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
        let opts =
            ConnectOptions { path_mtu: Mtu::Mtu1024, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts).unwrap();
        qb.connect_with(&ea, &opts).unwrap();
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let a_buf = qa.endpoint().unwrap().with_buffer(&src_mr).buffer.unwrap();
        qb.post_recv_one(rnic::RecvWr::new(0x51, back_mr.sge(0..64).unwrap())).unwrap();
        qb.post_recv_one(rnic::RecvWr::new(0x52, back_mr.sge(0..64).unwrap())).unwrap();
        let bad = SendWr::rdma_write(
            1,
            src_mr.sge(0..64).unwrap(),
            rnic::RemoteAddr { addr: remote.addr, rkey: remote.rkey ^ 0x80 },
        )
        .signaled(true);
        qa.post_send_one(bad).unwrap();
        let wcs = h.wait_completions(1, 400_000);
        assert_eq!((wcs[0].wr_id, wcs[0].status), (1, WcStatus::RemAccessErr), "{:?}", wcs[0]);
        // The responder's receives are flushed by the NIC, without a doorbell or command.
        let rwcs = h.wait(&h.cb, 2, 400_000);
        assert_eq!(
            rwcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(0x51, WcStatus::WrFlushErr), (0x52, WcStatus::WrFlushErr)],
            "the responder QP's receive WQEs"
        );
        // A WRITE the responder posts now is flushed, not sent.
        let tx0 = h.b.counter(counter::TX_REQUESTS).unwrap();
        qb.post_send_one(SendWr::rdma_write(0x53, back_mr.sge(0..8).unwrap(), a_buf.at(0)).signaled(true)).unwrap();
        let swcs = h.wait(&h.cb, 1, 400_000);
        assert_eq!((swcs[0].wr_id, swcs[0].status), (0x53, WcStatus::WrFlushErr), "{:?}", swcs[0]);
        assert_eq!(h.b.counter(counter::TX_REQUESTS).unwrap(), tx0, "the responder sent a request from ERR");
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD), "the refused WRITE changed the target");
        // The affiliated asynchronous events (ibv_get_async_event(3)): the responder's
        // QP_ACCESS_ERR; none at the requester (its error completion says why, as with rxe and
        // mlx5).
        let qp_event = |event_type, qp_num| AsyncEvent::Qp { event_type, qp_num };
        assert_eq!(
            h.events_after(&h.b, 2_000),
            [qp_event(AsyncEventType::QpAccessErr, qb.qp_num())],
            "responder events"
        );
        assert_eq!(h.events_after(&h.a, 0), [], "requester events");
    }
}
