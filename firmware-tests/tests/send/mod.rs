//! The SEND tests' shared part (`e2e_send.rs`, `e2e_send_errors.rs`): the host pairs and
//! connection options, the send-and-check and refused-send runs, RNR and loss scenarios, and
//! the completion helpers.
#![allow(dead_code)] // each test binary uses its own subset

use crate::common::{budget, delta, first_difference, nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, MemoryRegion, Mtu, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr,
    SendWr, Sge, WcFlags, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

pub const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
/// Guard bytes around every receive range, and the receive buffer's initial content.
pub const GUARD: u8 = 0xEE;
/// RQ entries of the responder's QP in most tests.
pub const RQ: u32 = 16;

pub fn hosts() -> Hosts {
    hosts_with(SimConfig::default())
}

/// Hosts whose NIC `nic` loses its `n`-th transmitted frame for each `(nic, n)` in `drops`.
pub fn hosts_dropping(drops: Vec<(usize, u64)>) -> Hosts {
    hosts_with(SimConfig {
        faults: rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() },
        ..SimConfig::default()
    })
}

/// Two hosts: A (NIC 0) sends, B (NIC 1) receives.
pub fn hosts_with(cfg: SimConfig) -> Hosts {
    Hosts::new(cfg)
}

pub fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions { path_mtu: mtu, access: AccessFlags::empty(), ..ConnectOptions::default() }
}

/// The QPs and waits the SEND tests use on top of the shared harness.
pub trait SendHosts {
    fn qps<'mr>(&self, o: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>);
    fn qps_sized<'mr>(&self, o: &ConnectOptions, rq: u32) -> (QueuePair<'mr>, QueuePair<'mr>);
    fn drain(&self, cq: &CompletionQueue, settle: u64) -> Vec<WorkCompletion>;
}

impl SendHosts for Hosts {
    /// Two connected RC QPs: A (SQ 32, no RQ) → B (SQ 8, RQ [`RQ`]).
    fn qps<'mr>(&self, o: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>) {
        self.qps_sized(o, RQ)
    }

    fn qps_sized<'mr>(&self, o: &ConnectOptions, rq: u32) -> (QueuePair<'mr>, QueuePair<'mr>) {
        let mut qa = self.pa.create_qp(&self.ca).set_max_send_wr(32).build().unwrap();
        let mut qb = self.pb.create_qp(&self.cb).set_max_send_wr(8).set_max_recv_wr(rq).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, o).unwrap();
        qb.connect_with(&ea, o).unwrap();
        (qa, qb)
    }

    /// Everything `cq` holds now (after letting the NICs run `settle` cycles).
    fn drain(&self, cq: &CompletionQueue, settle: u64) -> Vec<WorkCompletion> {
        self.settle(settle);
        let mut wcs = [WorkCompletion::default(); 16];
        let n = cq.poll(&mut wcs).unwrap();
        wcs[..n].to_vec()
    }
}

/// Packets of a `len`-byte SEND at `mtu` (a zero-length SEND is one packet).
pub fn packets(len: usize, mtu: Mtu) -> u32 {
    (len.max(1) as u32).div_ceil(mtu.bytes())
}

/// One signaled SEND of `len` bytes from offset `src_off` of A's buffer into a receive WR of
/// `recv_len` bytes at offset `dst_off` of B's buffer; checks both completions, the bytes, the
/// guard bytes around the message and the packet counters.
pub fn send_and_check(mtu: Mtu, len: usize, recv_len: usize, src_off: usize, dst_off: usize) {
    assert!(len <= recv_len);
    let h = hosts();
    let mut src = pattern(len as u64 ^ src_off as u64 ^ u64::from(mtu.bytes()), src_off + len + 13);
    let mut dst = vec![GUARD; dst_off + recv_len + 29];
    let expect = src[src_off..src_off + len].to_vec();
    let what = format!("SEND of {len} B at MTU {} (src+{src_off}, receive of {recv_len} B at +{dst_off})", mtu.bytes());
    let send_wc;
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(mtu));
        let (c0a, c0b) = h.counters();
        qb.post_recv_one(RecvWr::new(0xB0B, dst_mr.sge(dst_off..dst_off + recv_len).unwrap())).unwrap();
        let sge = if len == 0 { None } else { Some(src_mr.sge(src_off..src_off + len).unwrap()) };
        qa.post_send_one(SendWr::send(0xA5, sge).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!((s.wr_id, s.status, s.qp_num), (0xA5, WcStatus::Success, qa.qp_num()), "{what}: {s:?}");
        send_wc = s;
        let r = h.wait(&h.cb, 1, budget(len))[0];
        assert_eq!(
            (r.wr_id, r.status, r.opcode, r.byte_len, r.qp_num),
            (0xB0B, WcStatus::Success, WcOpcode::Recv, len as u32, qb.qp_num()),
            "{what}: {r:?}\n{}",
            h.diag()
        );
        assert_eq!((r.wc_flags, r.imm_data), (rnic::WcFlags::empty(), 0), "{what}: no immediate: {r:?}");
        assert_eq!((qa.outstanding(), qb.recv_outstanding()), (0, 0));
        assert_eq!((qa.stray_completions(), qb.stray_completions()), (0, 0));
        h.settle(2_000);
        let (c1a, c1b) = h.counters();
        let n = packets(len, mtu);
        assert_eq!(delta(&c1a, &c0a, counter::TX_REQUESTS), n, "{what}: request packets");
        assert_eq!(delta(&c1b, &c0b, counter::RX_ROCE_OK), n, "{what}: packets accepted by the responder");
        for c in [
            counter::DROP_ICRC,
            counter::DROP_MALFORMED,
            counter::DROP_UNKNOWN_QP,
            counter::DROP_KEY,
            counter::DROP_PSN,
            counter::DROP_INV_REQ,
            counter::TX_NAKS,
            counter::TX_RNR_NAKS,
            counter::RETRANSMITS,
        ] {
            assert_eq!(delta(&c1b, &c0b, c), 0, "{what}: responder {} ({})", counter::NAMES[c as usize], h.diag());
            assert_eq!(delta(&c1a, &c0a, c), 0, "{what}: requester {} ({})", counter::NAMES[c as usize], h.diag());
        }
        assert_eq!(delta(&c1a, &c0a, counter::CQES), 1, "{what}: send CQEs");
        assert_eq!(delta(&c1b, &c0b, counter::CQES), 1, "{what}: receive CQEs");
        assert!(delta(&c1a, &c0a, counter::RX_ACKS) >= 1);
    }
    if let Some(d) = first_difference(&dst[dst_off..dst_off + len], &expect) {
        panic!("{what}: {d}");
    }
    assert!(dst[..dst_off].iter().all(|&b| b == GUARD), "{what}: bytes before the receive buffer changed");
    if let Some(i) = dst[dst_off + len..].iter().position(|&b| b != GUARD) {
        panic!("{what}: byte {} after the message (receive buffer offset {}) changed", i, len + i);
    }
    // Last, so that the checks above run whatever the send completion's opcode.
    assert_eq!(send_wc.opcode, WcOpcode::Send, "{what}: the send completion's opcode: {send_wc:?}");
}

/// Waits for the responder's first RNR NAK for a SEND posted before any receive, then posts the
/// receive: the requester resends when the RNR timer expires and the message arrives.
pub fn rnr_then_receive(len: usize, mtu: Mtu) {
    let h = hosts();
    let mut src = pattern(len as u64, len);
    let mut dst = vec![GUARD; len + 64];
    let what = format!("SEND of {len} B at MTU {} before any receive", mtu.bytes());
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        // Local ACK timeout 4.096 µs × 2^6 = 262 µs = 65 536 cycles; 7 retries.
        let o = ConnectOptions { timeout: 6, retry_cnt: 7, ..opts(mtu) };
        let (mut qa, mut qb) = h.qps(&o);
        qa.post_send_one(SendWr::send(0x51, src_mr.sge(0..len).unwrap()).signaled(true)).unwrap();
        assert!(
            h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000),
            "{what}: no RNR NAK within 100000 cycles\n{}",
            h.diag()
        );
        assert!(
            h.wait_counter(&h.a, counter::RX_RNR_NAKS, 1, 20_000),
            "{what}: the requester did not count the RNR NAK\n{}",
            h.diag()
        );
        assert!(h.drain(&h.ca, 1_000).is_empty(), "{what}: an RNR NAK completed the send WR");
        assert!(h.drain(&h.cb, 0).is_empty());
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD));
        qb.post_recv_one(RecvWr::new(0x52, dst_mr.sge(0..len + 64).unwrap())).unwrap();
        let s = h.wait(&h.ca, 1, 8 * 65_536 + budget(len))[0];
        assert_eq!((s.wr_id, s.status), (0x51, WcStatus::Success), "{what}: {s:?}\n{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.status, r.byte_len), (0x52, WcStatus::Success, len as u32), "{what}: {r:?}");
        let (ca, cb) = h.counters();
        assert!(cb.get("tx_rnr_naks").unwrap() >= 1 && ca.get("rx_rnr_naks").unwrap() >= 1, "{what}\n{}", h.diag());
        assert_eq!(
            ca.get("timeouts"),
            Some(0),
            "{what}: the resend comes from the RNR timer, not the ACK timer\n{}",
            h.diag()
        );
        assert_eq!(cb.get("cqes"), Some(1), "{what}: one receive completion\n{}", h.diag());
        assert!(h.drain(&h.cb, 2_000).is_empty(), "{what}: a second receive completion");
        eprintln!("{what}:\n{}", h.diag());
    }
    if let Some(d) = first_difference(&dst[..len], &src) {
        panic!("{what}: {d}");
    }
    assert!(dst[len..].iter().all(|&b| b == GUARD));
}

/// A lost packet inside a SEND (`lost` = index of the dropped request frame): the responder
/// NAKs the gap, the requester goes back, every byte lands once in the one receive WR, which
/// completes once.
pub fn lost_packet_in_a_send(lost: u64) {
    let h = hosts_dropping(vec![(0, lost)]);
    const LEN: usize = 20 * 1024;
    let mut src = pattern(lost, LEN);
    let mut dst = vec![GUARD; LEN + 100];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qb.post_recv(&[
            RecvWr::new(1, dst_mr.sge(0..LEN + 100).unwrap()),
            RecvWr::new(2, dst_mr.sge(0..LEN + 100).unwrap()),
        ])
        .unwrap();
        qa.post_send_one(SendWr::send(7, src_mr.sge(0..LEN).unwrap()).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 1, 4 * 65_536)[0];
        assert_eq!((s.wr_id, s.status), (7, WcStatus::Success), "lost frame {lost}: {s:?}\n{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!(
            (r.wr_id, r.byte_len, r.status),
            (1, LEN as u32, WcStatus::Success),
            "lost frame {lost}: {r:?}\n{}",
            h.diag()
        );
        assert!(h.drain(&h.cb, 5_000).is_empty(), "lost frame {lost}: a second receive completion\n{}", h.diag());
        assert_eq!(qb.recv_outstanding(), 1);
        let (ca, cb) = h.counters();
        assert!(ca.get("retransmits").unwrap() >= 1, "lost frame {lost}: {}", h.diag());
        assert_eq!(cb.get("rx_roce_ok"), Some(20), "lost frame {lost}: each packet accepted once\n{}", h.diag());
    }
    if let Some(d) = first_difference(&dst[..LEN], &src) {
        panic!("lost frame {lost}: {d}");
    }
    assert!(dst[LEN..].iter().all(|&b| b == GUARD));
}

/// The outcome of a SEND the responder must refuse: (send completion, receive completion,
/// receive buffer with guards, counters A, counters B).
pub struct Refused {
    pub send: WorkCompletion,
    pub recv: WorkCompletion,
    pub buf: Vec<u8>,
    pub ca: rnic::Counters,
    pub cb: rnic::Counters,
}

/// A SEND of `len` bytes at `mtu` into the receive WR `make(mr)` of B, where B's buffer is
/// `buf_len` bytes registered with `access` (in B's PD, or a fresh one with `other_pd`).
pub fn refused_send(
    mtu: Mtu,
    len: usize,
    buf_len: usize,
    access: AccessFlags,
    other_pd: bool,
    make: impl for<'a> Fn(&'a MemoryRegion<'_>) -> RecvWr<'a>,
) -> Refused {
    let h = hosts();
    let mut src = pattern(3, len);
    let mut buf = vec![GUARD; buf_len];
    let (send, recv, ca, cb);
    {
        let pd2 = h.b.alloc_pd().unwrap();
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let mr = if other_pd { pd2.register(&mut buf, access) } else { h.pb.register(&mut buf, access) }.unwrap();
        let (mut qa, mut qb) = h.qps(&opts(mtu));
        qb.post_recv_one(make(&mr)).unwrap();
        qa.post_send(&[SendWr::send(0x5E, src_mr.sge(0..len).unwrap()).signaled(true)]).unwrap();
        recv = h.wait(&h.cb, 1, budget(len))[0];
        send = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!(qa.state(), QpState::Err, "an error completion moves the requester to ERR");
        assert_eq!(qb.state(), QpState::Err, "a receive error moves the responder to ERR");
        assert_eq!((qa.outstanding(), qb.recv_outstanding()), (0, 0));
        assert_eq!(recv.qp_num, qb.qp_num());
        h.settle(5_000);
        assert!(h.drain(&h.cb, 0).is_empty() && h.drain(&h.ca, 0).is_empty(), "one completion each");
        (ca, cb) = h.counters();
    }
    Refused { send, recv, buf, ca, cb }
}

pub fn assert_prot_err(r: &Refused, wr_id: u64) {
    assert_eq!((r.recv.wr_id, r.recv.status), (wr_id, WcStatus::LocProtErr), "{:?}", r.recv);
    assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemOpErr), "{:?}", r.send);
    assert!(r.buf.iter().all(|&b| b == GUARD), "a refused SEND wrote the buffer");
    assert_eq!(r.ca.get("rx_nak_rem_op"), Some(1), "{:?}", nonzero(&r.ca));
}

/// A SEND to a QP built without a receive queue is never accepted: RNR NAKs, RNR_RETRY resends
/// after the RNR timer each (never the ACK timer), then IBV_WC_RNR_RETRY_EXC_ERR; exactly
/// `1 + rnr_retry` tries, nothing written (IBTA Vol 1 9.7.5.2.8, ibv_modify_qp(3)).
pub fn rnr_retry_is_exhausted(rnr_retry: u8) {
    let h = hosts();
    let mut src = pattern(1, 64);
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    // RNR timer code 1: 0.01 ms = 2 500 cycles; ACK timeout 4.096 µs × 2^4, retry_cnt 1: the
    // ACK timer would give up long before the RNR retries are used if it ran.
    let o = ConnectOptions { timeout: 4, retry_cnt: 1, rnr_retry, min_rnr_timer: 1, ..opts(Mtu::Mtu1024) };
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
    let w = h.wait(&h.ca, 1, 400_000)[0];
    assert_eq!((w.wr_id, w.status), (1, WcStatus::RnrRetryExcErr), "rnr_retry {rnr_retry}: {w:?}\n{}", h.diag());
    assert!(h.drain(&h.cb, 0).is_empty(), "a receive completion on a QP without RQ");
    let (ca, cb) = h.counters();
    let tries = 1 + u32::from(rnr_retry);
    assert_eq!(cb.get("rx_roce_ok"), Some(0), "{}", h.diag());
    assert_eq!(cb.get("tx_rnr_naks"), Some(tries), "the first try and {rnr_retry} retries\n{}", h.diag());
    assert_eq!(ca.get("rx_rnr_naks"), Some(tries), "{}", h.diag());
    assert_eq!(ca.get("retransmits"), Some(u32::from(rnr_retry)), "{}", h.diag());
    assert_eq!(ca.get("timeouts"), Some(0), "RNR resends come from the RNR timer\n{}", h.diag());
}

/// Immediate data as the tests post it: the raw `imm_data` word of `ibv_send_wr` (network order
/// in memory), so the ImmDt on the wire is `IMM.to_ne_bytes()`.
pub const IMM: u32 = u32::from_ne_bytes([0x12, 0x34, 0x56, 0x78]);

/// SEND_WITH_IMM of `len` bytes: the receive completes IBV_WC_RECV with IBV_WC_WITH_IMM and
/// the immediate data, the data lands in the receive buffer, the send completes IBV_WC_SEND.
pub fn send_with_imm_and_check(mtu: Mtu, len: usize) {
    let h = hosts();
    let mut src = pattern(len as u64 + 1, len.max(1));
    let mut dst = vec![GUARD; len + 40];
    let what = format!("SEND_WITH_IMM of {len} B at MTU {}", mtu.bytes());
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(mtu));
        qb.post_recv_one(RecvWr::new(0x1111, dst_mr.sge(0..len + 40).unwrap())).unwrap();
        let sge = if len == 0 { None } else { Some(src_mr.sge(0..len).unwrap()) };
        qa.post_send_one(SendWr::send(0x22, sge).with_opcode(WrOpcode::SendWithImm).with_imm(IMM).signaled(true))
            .unwrap();
        let s = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!((s.wr_id, s.status, s.opcode), (0x22, WcStatus::Success, WcOpcode::Send), "{what}: {s:?}");
        let r = h.wait(&h.cb, 1, budget(len))[0];
        assert_eq!(
            (r.wr_id, r.status, r.opcode, r.byte_len, r.wc_flags, r.imm_data),
            (0x1111, WcStatus::Success, WcOpcode::Recv, len as u32, WcFlags::WITH_IMM, IMM),
            "{what}: {r:?}\n{}",
            h.diag()
        );
    }
    if let Some(d) = first_difference(&dst[..len], &src) {
        panic!("{what}: {d}");
    }
    assert!(dst[len..].iter().all(|&b| b == GUARD), "{what}: bytes past the message changed");
}

/// RDMA_WRITE_WITH_IMM of `len` bytes into B's MR at `dst_off`: the data lands at the remote
/// address, a receive WQE is consumed (IBV_WC_RECV_RDMA_WITH_IMM, `byte_len` = `len`, the
/// immediate) but its buffer is not touched; the WRITE completes IBV_WC_RDMA_WRITE.
pub fn write_with_imm_and_check(mtu: Mtu, len: usize, dst_off: usize) {
    let h = hosts();
    let mut src = pattern(len as u64 + 2, len.max(1));
    let mut dst = vec![GUARD; dst_off + len + 40];
    let mut rbuf = vec![GUARD; 256];
    let what = format!("RDMA_WRITE_WITH_IMM of {len} B at MTU {}", mtu.bytes());
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let rbuf_mr = h.pb.register(&mut rbuf, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(mtu) });
        qb.post_recv_one(RecvWr::new(0x3333, rbuf_mr.sge(0..256).unwrap())).unwrap();
        let remote = dst_mr.remote_addr(dst_off).unwrap();
        let sge = if len == 0 { Sge::raw(0, 0, 0) } else { src_mr.sge(0..len).unwrap() };
        let mut wr =
            SendWr::rdma_write(0x44, sge, remote).with_opcode(WrOpcode::RdmaWriteWithImm).with_imm(IMM).signaled(true);
        if len == 0 {
            wr.num_sge = 0;
        }
        qa.post_send_one(wr).unwrap();
        let s = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!((s.wr_id, s.status, s.opcode), (0x44, WcStatus::Success, WcOpcode::RdmaWrite), "{what}: {s:?}");
        let r = h.wait(&h.cb, 1, budget(len))[0];
        assert_eq!(
            (r.wr_id, r.status, r.opcode, r.byte_len, r.wc_flags, r.imm_data),
            (0x3333, WcStatus::Success, WcOpcode::RecvRdmaWithImm, len as u32, WcFlags::WITH_IMM, IMM),
            "{what}: {r:?}\n{}",
            h.diag()
        );
        assert_eq!(qb.recv_outstanding(), 0, "{what}: the receive was consumed");
    }
    if let Some(d) = first_difference(&dst[dst_off..dst_off + len], &src) {
        panic!("{what}: {d}");
    }
    assert!(
        dst[..dst_off].iter().chain(&dst[dst_off + len..]).all(|&b| b == GUARD),
        "{what}: bytes outside the target changed"
    );
    assert!(rbuf.iter().all(|&b| b == GUARD), "{what}: the receive buffer was written");
}

/// Posts one WR that the requester must refuse locally and returns its completion.
pub fn local_error(opcode: WrOpcode) -> WorkCompletion {
    let h = hosts();
    let mut src = pattern(3, 64);
    let mut dst = vec![GUARD; 64];
    let wc;
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) });
        qb.post_recv_one(RecvWr::new(1, dst_mr.sge(0..64).unwrap())).unwrap();
        let remote = dst_mr.remote_addr(0).unwrap();
        qa.post_send_one(
            SendWr::rdma_write(4, src_mr.sge(0..64).unwrap(), remote)
                .with_opcode(opcode)
                .with_imm(0x1234)
                .signaled(true),
        )
        .unwrap();
        wc = h.wait(&h.ca, 1, 200_000)[0];
        assert!(h.drain(&h.cb, 5_000).is_empty(), "{opcode:?} consumed a receive");
        assert_eq!(qb.recv_outstanding(), 1);
        assert!(dst_mr.to_vec().iter().all(|&b| b == GUARD), "{opcode:?} wrote the target");
    }
    wc
}

// ---- Flush on ERR, receive side (IBTA Vol 1 10.3.1; ibv_modify_qp(3), ibv_poll_cq(3)) ----

pub fn to_err(qp: &mut QueuePair<'_>) {
    qp.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
}

/// `(wr_id, status, opcode)` of each completion, for compact comparisons.
pub fn summary(wcs: &[WorkCompletion]) -> Vec<(u64, WcStatus, WcOpcode)> {
    wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect()
}
