//! End-to-end SEND / receive: two simulated hosts, the Verilated NIC RTL on each, driven through
//! the `rnic` verbs driver (receive WQEs in the RQ ring, RQ doorbell, SEND WQEs, CQE polling).
//! System tests of the RTL: the driver does no NIC work, so every byte that lands in a receive
//! buffer was scattered there by the responder NIC, and every completion was written by a NIC.
//!
//! What they pin (IBTA Vol 1 9.7.4.1.3, 9.7.5.2, 10.8.3; ibv_post_send(3), ibv_post_recv(3),
//! ibv_poll_cq(3); docs/driver.md):
//! - SENDs of 0 bytes, 1 byte, one path MTU and many packets (100 KiB) arrive intact at every
//!   path MTU, from and to unaligned addresses; the send WR completes IBV_WC_SEND/SUCCESS, the
//!   receive WR IBV_WC_RECV with `byte_len` = message length and its own `wr_id`; no byte
//!   outside the message's part of the receive buffer changes;
//! - receives are consumed in posting order, one per message, and the RQ ring wraps;
//! - a SEND with no receive posted is answered with an RNR NAK (`tx_rnr_naks` at the
//!   responder, `rx_rnr_naks` at the requester) and still arrives once a receive is posted:
//!   the requester resends after the RNR timer the NAK names (not before, never on the ACK
//!   timer), RNR_RETRY times (exactly; 7 = infinite), then IBV_WC_RNR_RETRY_EXC_ERR;
//! - a message longer than the receive buffer completes the receive with LOC_LEN_ERR and the
//!   send with REM_INV_REQ_ERR, without a byte written past the buffer; a receive SGE with a
//!   bad lkey, outside its MR, without LOCAL_WRITE or of another PD completes with
//!   LOC_PROT_ERR and the send with REM_OP_ERR;
//! - post_recv refuses a QP in RESET (EINVAL) and a full RQ (ENOMEM);
//! - SEND_WITH_IMM delivers its immediate in the receive completion (IBV_WC_WITH_IMM, the
//!   `imm_data` word as posted), a plain SEND's has no WITH_IMM; RDMA_WRITE_WITH_IMM writes at
//!   the remote address and consumes a receive WQE without touching its buffer
//!   (IBV_WC_RECV_RDMA_WITH_IMM, `byte_len` = the WRITE's length); with no receive posted it
//!   draws an RNR NAK and completes once one is;
//! - an atomic whose local buffer is not 8 bytes completes with LOC_LEN_ERR, nothing sent;
//! - a QP in ERR (modify_qp, a receive error, a requester error) flushes every posted receive
//!   and its send queue with WR_FLUSH_ERR, in order, and the NIC keeps serving other QPs;
//! - IBV_SEND_SOLICITED sets BTH.SE on the last packet of a SEND only;
//! - captures of SEND traffic and of immediate-data traffic (SEND and RDMA WRITE, ONLY and
//!   LAST WITH IMMEDIATE) are clean in tshark and their ICRCs verify in scapy; each ImmDt on
//!   the wire carries the `imm_data` bytes as posted.
mod common;

use common::{budget, delta, first_difference, nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, Errno, MemoryRegion, Mtu, QpAttr, QpAttrMask, QpState, QueuePair,
    RecvWr, SendWr, Sge, WcFlags, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
/// Guard bytes around every receive range, and the receive buffer's initial content.
const GUARD: u8 = 0xEE;
/// RQ entries of the responder's QP in most tests.
const RQ: u32 = 16;

fn hosts() -> Hosts {
    hosts_with(SimConfig::default())
}

/// Hosts whose NIC `nic` loses its `n`-th transmitted frame for each `(nic, n)` in `drops`.
fn hosts_dropping(drops: Vec<(usize, u64)>) -> Hosts {
    hosts_with(SimConfig {
        faults: rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() },
        ..SimConfig::default()
    })
}

/// Two hosts: A (NIC 0) sends, B (NIC 1) receives.
fn hosts_with(cfg: SimConfig) -> Hosts {
    Hosts::new(cfg)
}

fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions { path_mtu: mtu, access: AccessFlags::empty(), ..ConnectOptions::default() }
}

/// The QPs and waits the SEND tests use on top of the shared harness.
trait SendHosts {
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
fn packets(len: usize, mtu: Mtu) -> u32 {
    (len.max(1) as u32).div_ceil(mtu.bytes())
}

/// One signaled SEND of `len` bytes from offset `src_off` of A's buffer into a receive WR of
/// `recv_len` bytes at offset `dst_off` of B's buffer; checks both completions, the bytes, the
/// guard bytes around the message and the packet counters.
fn send_and_check(mtu: Mtu, len: usize, recv_len: usize, src_off: usize, dst_off: usize) {
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

#[test]
fn zero_length_send_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 0, 64, 0, 0);
    }
}

#[test]
fn zero_length_send_into_a_receive_without_buffer() {
    let h = hosts();
    let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
    qb.post_recv_one(RecvWr::zero_length(77)).unwrap();
    qa.post_send_one(SendWr::send(5, None).signaled(true)).unwrap();
    let s = h.wait(&h.ca, 1, 200_000)[0];
    assert_eq!((s.wr_id, s.status, s.opcode), (5, WcStatus::Success, WcOpcode::Send), "{s:?}");
    let r = h.wait(&h.cb, 1, 200_000)[0];
    assert_eq!((r.wr_id, r.status, r.opcode, r.byte_len), (77, WcStatus::Success, WcOpcode::Recv, 0), "{r:?}");
}

#[test]
fn one_byte_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 1, 64, 0, 0);
    }
}

#[test]
fn one_full_mtu_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, mtu.bytes() as usize, mtu.bytes() as usize + 100, 0, 0);
    }
}

#[test]
fn one_mtu_plus_one_at_every_path_mtu() {
    // SEND FIRST + a one-byte SEND LAST.
    for mtu in ALL_MTUS {
        send_and_check(mtu, mtu.bytes() as usize + 1, 2 * mtu.bytes() as usize, 0, 0);
    }
}

#[test]
fn hundred_kib_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 100 << 10, 100 << 10, 0, 0);
    }
}

#[test]
fn multi_packet_unaligned_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        send_and_check(mtu, 3 * mtu.bytes() as usize + 77, 4 * mtu.bytes() as usize, 3, 5);
    }
}

#[test]
fn one_mib_at_mtu_4096() {
    send_and_check(Mtu::Mtu4096, 1 << 20, 1 << 20, 0, 0);
}

#[test]
fn message_exactly_as_long_as_the_receive_buffer() {
    send_and_check(Mtu::Mtu256, 1000, 1000, 0, 0);
    send_and_check(Mtu::Mtu4096, 4096, 4096, 1, 63);
}

#[test]
fn unaligned_source_and_receive_addresses() {
    for (src_off, dst_off, len) in [(1, 63, 200), (63, 1, 4097), (17, 33, 64), (5, 0, 129), (0, 7, 1000)] {
        send_and_check(Mtu::Mtu1024, len, len + 50, src_off, dst_off);
    }
}

/// Eight receives of different sizes, then eight SENDs in one post: each message lands in the
/// receive posted in the same position, and the receive completions come in that order.
#[test]
fn receives_are_matched_in_posting_order() {
    let h = hosts();
    const N: usize = 8;
    const SLOT: usize = 8192;
    let lens: [usize; N] = [1, 300, 0, 4096, 5000, 17, 8192, 2049];
    let mut src = pattern(99, N * SLOT);
    let mut dst = vec![GUARD; N * SLOT];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        let recvs: Vec<_> =
            (0..N).map(|i| RecvWr::new(1000 + i as u64, dst_mr.sge(i * SLOT..(i + 1) * SLOT).unwrap())).collect();
        qb.post_recv(&recvs[..3]).unwrap();
        qb.post_recv(&recvs[3..]).unwrap();
        assert_eq!(qb.recv_outstanding(), N);
        let sends: Vec<_> = (0..N)
            .map(|i| {
                let sge = (lens[i] > 0).then(|| src_mr.sge(i * SLOT..i * SLOT + lens[i]).unwrap());
                SendWr::send(i as u64, sge).signaled(true)
            })
            .collect();
        qa.post_send(&sends).unwrap();
        let s = h.wait(&h.ca, N, budget(N * SLOT));
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..N as u64).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
        );
        let r = h.wait(&h.cb, N, budget(N * SLOT));
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status, w.opcode, w.byte_len)).collect::<Vec<_>>(),
            (0..N).map(|i| (1000 + i as u64, WcStatus::Success, WcOpcode::Recv, lens[i] as u32)).collect::<Vec<_>>(),
            "{}",
            h.diag()
        );
        assert_eq!(qb.recv_outstanding(), 0);
    }
    for i in 0..N {
        let got = &dst[i * SLOT..(i + 1) * SLOT];
        if let Some(d) = first_difference(&got[..lens[i]], &src[i * SLOT..i * SLOT + lens[i]]) {
            panic!("message {i}: {d}");
        }
        assert!(got[lens[i]..].iter().all(|&b| b == GUARD), "message {i} wrote past its length");
    }
}

/// An RQ of 4 entries carries 40 messages: the ring wraps ten times, each slot is reposted only
/// after its receive completion was polled, and the NIC follows the producer index across the
/// 16-bit doorbell's laps of the ring.
#[test]
fn the_rq_ring_wraps() {
    let h = hosts();
    const N: usize = 40;
    const LEN: usize = 700;
    let mut src = pattern(5, N * LEN);
    let mut dst = vec![GUARD; N * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps_sized(&opts(Mtu::Mtu512), 4);
        assert_eq!(qb.rq_capacity(), 4);
        let recv = |i: usize| RecvWr::new(i as u64, dst_mr.sge(i * LEN..(i + 1) * LEN).unwrap());
        let (mut posted, mut received, mut sent) = (0usize, 0usize, 0usize);
        let start = h.world.borrow().cycles();
        let mut wcs = [WorkCompletion::default(); 8];
        while received < N {
            while posted < N && qb.recv_outstanding() < 4 {
                qb.post_recv_one(recv(posted)).unwrap();
                posted += 1;
            }
            if posted < N {
                assert_eq!(qb.post_recv_one(recv(posted)).unwrap_err().errno(), Errno::ENOMEM, "the RQ of 4 is full");
            }
            while sent < posted && qa.outstanding() < 8 {
                qa.post_send_one(
                    SendWr::send(sent as u64, src_mr.sge(sent * LEN..(sent + 1) * LEN).unwrap()).signaled(true),
                )
                .unwrap();
                sent += 1;
            }
            let n = h.cb.poll(&mut wcs).unwrap();
            for w in &wcs[..n] {
                assert_eq!(
                    (w.wr_id, w.status, w.byte_len),
                    (received as u64, WcStatus::Success, LEN as u32),
                    "{w:?}\n{}",
                    h.diag()
                );
                received += 1;
            }
            let n = h.ca.poll(&mut wcs).unwrap();
            assert!(wcs[..n].iter().all(|w| w.status == WcStatus::Success), "{:?}", &wcs[..n]);
            assert!(h.world.borrow().cycles() - start < 2_000_000, "stalled at {received}/{N} received\n{}", h.diag());
        }
        assert_eq!(h.b.counter(counter::TX_RNR_NAKS).unwrap(), 0, "sends were posted only against posted receives");
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// Two requester QPs send multi-packet messages at the same time to two responder QPs that
/// share a receive CQ: their packets interleave on the wire, and each responder QP keeps its own
/// open receive (address, length so far, wr_id).
#[test]
fn two_qps_receive_interleaved_messages() {
    let h = hosts();
    const LEN: usize = 6000;
    const N: usize = 3;
    let mut src = pattern(21, 2 * N * LEN);
    let mut dst = vec![GUARD; 2 * N * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut a1, mut b1) = h.qps_sized(&opts(Mtu::Mtu256), 4);
        let (mut a2, mut b2) = h.qps_sized(&opts(Mtu::Mtu256), 4);
        let region = |q: usize, i: usize| (q * N + i) * LEN..(q * N + i + 1) * LEN;
        for i in 0..N {
            b1.post_recv_one(RecvWr::new(100 + i as u64, dst_mr.sge(region(0, i)).unwrap())).unwrap();
            b2.post_recv_one(RecvWr::new(200 + i as u64, dst_mr.sge(region(1, i)).unwrap())).unwrap();
        }
        for i in 0..N {
            a1.post_send_one(SendWr::send(i as u64, src_mr.sge(region(0, i)).unwrap()).signaled(true)).unwrap();
            a2.post_send_one(SendWr::send(i as u64, src_mr.sge(region(1, i)).unwrap()).signaled(true)).unwrap();
        }
        let s = h.wait(&h.ca, 2 * N, 1_000_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 2 * N, 200_000);
        let of = |q: &QueuePair| -> Vec<(u64, u32, WcStatus)> {
            r.iter().filter(|w| w.qp_num == q.qp_num()).map(|w| (w.wr_id, w.byte_len, w.status)).collect()
        };
        let want = |base: u64| (0..N as u64).map(|i| (base + i, LEN as u32, WcStatus::Success)).collect::<Vec<_>>();
        assert_eq!(of(&b1), want(100), "{r:?}");
        assert_eq!(of(&b2), want(200), "{r:?}");
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// RDMA WRITEs and SENDs interleaved on one QP: WRITEs land at their remote address and consume
/// no receive, SENDs land in the receives in order.
#[test]
fn writes_and_sends_interleave_on_one_qp() {
    let h = hosts();
    let mut src = pattern(31, 8 * 1500);
    let mut wdst = vec![GUARD; 4 * 1500];
    let mut rdst = vec![GUARD; 4 * 1500];
    let send_opcodes;
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let w_mr = h.pb.register(&mut wdst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let r_mr = h.pb.register(&mut rdst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu512) });
        let recvs: Vec<_> =
            (0..4).map(|i| RecvWr::new(i as u64, r_mr.sge(i * 1500..(i + 1) * 1500).unwrap())).collect();
        qb.post_recv(&recvs).unwrap();
        let wrs: Vec<_> = (0..8)
            .map(|k| {
                let sge = src_mr.sge(k * 1500..(k + 1) * 1500).unwrap();
                let i = k / 2;
                if k % 2 == 0 {
                    SendWr::rdma_write(k as u64, sge, w_mr.remote_addr(i * 1500).unwrap()).signaled(true)
                } else {
                    SendWr::send(k as u64, sge).signaled(true)
                }
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let s = h.wait(&h.ca, 8, 400_000);
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..8u64).map(|k| (k, WcStatus::Success)).collect::<Vec<_>>()
        );
        send_opcodes = s.iter().map(|w| w.opcode).collect::<Vec<_>>();
        let r = h.wait(&h.cb, 4, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.byte_len, w.status)).collect::<Vec<_>>(),
            (0..4u64).map(|i| (i, 1500, WcStatus::Success)).collect::<Vec<_>>()
        );
        assert!(h.drain(&h.cb, 5_000).is_empty(), "a WRITE consumed a receive");
    }
    for i in 0..4 {
        assert_eq!(&wdst[i * 1500..(i + 1) * 1500], &src[2 * i * 1500..(2 * i + 1) * 1500], "WRITE {i}");
        assert_eq!(&rdst[i * 1500..(i + 1) * 1500], &src[(2 * i + 1) * 1500..(2 * i + 2) * 1500], "SEND {i}");
    }
    let want: Vec<_> = (0..8).map(|k| if k % 2 == 0 { WcOpcode::RdmaWrite } else { WcOpcode::Send }).collect();
    assert_eq!(send_opcodes, want, "send completion opcodes");
}

/// A responder in RTR (never moved to RTS) receives SENDs (IBTA 10.3.1: RTR processes incoming
/// requests).
#[test]
fn a_responder_in_rtr_receives() {
    let h = hosts();
    let mut src = pattern(41, 2000);
    let mut dst = vec![GUARD; 2000];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let o = opts(Mtu::Mtu512);
        qa.connect_with(&eb, &o).unwrap();
        use QpAttrMask as M;
        let attr = QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            path_mtu: o.path_mtu,
            ah_attr: rnic::AddressVector { dest_mac: ea.mac, dest_ip: ea.ip },
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
        qb.post_recv_one(RecvWr::new(8, dst_mr.sge(0..2000).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..2000).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (8, 2000, WcStatus::Success), "{r:?}");
        assert_eq!(qb.state(), QpState::Rtr);
    }
    assert!(dst == src);
}

/// Both hosts stream SENDs at each other at once, each through one QP whose send and receive
/// completions share one CQ, reposting receives as they complete: no completion is lost or
/// duplicated and every message lands in its own receive.
#[test]
fn bidirectional_streams_share_one_cq_per_host() {
    let h = hosts();
    const N: usize = 120;
    const LEN: usize = 1800;
    let mut src = [pattern(51, N * LEN), pattern(52, N * LEN)];
    let mut dst = [vec![GUARD; N * LEN], vec![GUARD; N * LEN]];
    {
        let [sa, sb] = &mut src;
        let [da, db] = &mut dst;
        let smr = [
            h.pa.register(sa, AccessFlags::LOCAL_WRITE).unwrap(),
            h.pb.register(sb, AccessFlags::LOCAL_WRITE).unwrap(),
        ];
        let dmr = [
            h.pa.register(da, AccessFlags::LOCAL_WRITE).unwrap(),
            h.pb.register(db, AccessFlags::LOCAL_WRITE).unwrap(),
        ];
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu1024)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu1024)).unwrap();
        let mut qps = [qa, qb];
        let cqs = [&h.ca, &h.cb];
        let (mut sent, mut posted, mut sends_done, mut recvs_done) =
            ([0usize; 2], [0usize; 2], [0usize; 2], [0usize; 2]);
        let start = h.world.borrow().cycles();
        let mut wcs = [WorkCompletion::default(); 16];
        while recvs_done != [N, N] || sends_done != [N, N] {
            for s in 0..2 {
                while posted[s] < N && qps[s].recv_outstanding() < 16 {
                    let i = posted[s];
                    qps[s].post_recv_one(RecvWr::new(i as u64, dmr[s].sge(i * LEN..(i + 1) * LEN).unwrap())).unwrap();
                    posted[s] += 1;
                }
                while sent[s] < N && qps[s].outstanding() < 16 {
                    let i = sent[s];
                    qps[s]
                        .post_send_one(
                            SendWr::send(i as u64, smr[s].sge(i * LEN..(i + 1) * LEN).unwrap()).signaled(true),
                        )
                        .unwrap();
                    sent[s] += 1;
                }
                let n = cqs[s].poll(&mut wcs).unwrap();
                for w in &wcs[..n] {
                    assert_eq!(w.status, WcStatus::Success, "host {s}: {w:?}\n{}", h.diag());
                    if w.opcode == WcOpcode::Recv {
                        assert_eq!((w.wr_id, w.byte_len), (recvs_done[s] as u64, LEN as u32), "host {s}: {w:?}");
                        recvs_done[s] += 1;
                    } else {
                        assert_eq!(w.wr_id, sends_done[s] as u64, "host {s}: {w:?}");
                        sends_done[s] += 1;
                    }
                }
            }
            assert!(
                h.world.borrow().cycles() - start < 3_000_000,
                "stalled: sends {sends_done:?}, receives {recvs_done:?}\n{}",
                h.diag()
            );
        }
        let (ca, cb) = h.counters();
        assert_eq!((ca.get("cqes"), cb.get("cqes")), (Some(2 * N as u32), Some(2 * N as u32)), "{}", h.diag());
        assert_eq!((qps[0].stray_completions(), qps[1].stray_completions()), (0, 0));
    }
    assert!(dst[0] == src[1], "A received wrong bytes: {:?}", first_difference(&dst[0], &src[1]));
    assert!(dst[1] == src[0], "B received wrong bytes: {:?}", first_difference(&dst[1], &src[0]));
}

/// Unsignaled SENDs produce no send CQE, but every receive completes.
#[test]
fn unsignaled_sends_still_complete_their_receives() {
    let h = hosts();
    let mut src = pattern(8, 4 * 512);
    let mut dst = vec![GUARD; 4 * 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu256));
        let recvs: Vec<_> =
            (0..4).map(|i| RecvWr::new(50 + i as u64, dst_mr.sge(i * 512..(i + 1) * 512).unwrap())).collect();
        qb.post_recv(&recvs).unwrap();
        let sends: Vec<_> = (0..4)
            .map(|i| SendWr::send(i as u64, src_mr.sge(i * 512..(i + 1) * 512).unwrap()).signaled(i == 3))
            .collect();
        qa.post_send(&sends).unwrap();
        let r = h.wait(&h.cb, 4, 400_000);
        assert_eq!(r.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![50, 51, 52, 53]);
        let s = h.wait(&h.ca, 1, 400_000);
        assert_eq!((s[0].wr_id, s[0].status), (3, WcStatus::Success));
        assert!(h.drain(&h.ca, 10_000).is_empty(), "no CQE for unsignaled SENDs");
        assert_eq!(qa.outstanding(), 0);
    }
    assert!(dst == src);
}

/// SENDs in both directions at once, each side receiving into its own RQ.
#[test]
fn sends_in_both_directions() {
    let h = hosts();
    let mut sa = pattern(1, 10_000);
    let mut sb = pattern(2, 10_000);
    let mut ra = vec![GUARD; 10_000];
    let mut rb = vec![GUARD; 10_000];
    {
        let sa_mr = h.pa.register(&mut sa, AccessFlags::LOCAL_WRITE).unwrap();
        let ra_mr = h.pa.register(&mut ra, AccessFlags::LOCAL_WRITE).unwrap();
        let sb_mr = h.pb.register(&mut sb, AccessFlags::LOCAL_WRITE).unwrap();
        let rb_mr = h.pb.register(&mut rb, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(8).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu2048)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu2048)).unwrap();
        qa.post_recv_one(RecvWr::new(10, ra_mr.sge(0..10_000).unwrap())).unwrap();
        qb.post_recv_one(RecvWr::new(20, rb_mr.sge(0..10_000).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, sa_mr.sge(0..10_000).unwrap()).signaled(true)).unwrap();
        qb.post_send_one(SendWr::send(2, sb_mr.sge(0..10_000).unwrap()).signaled(true)).unwrap();
        let mut wa = h.wait(&h.ca, 2, 400_000);
        let mut wb = h.wait(&h.cb, 2, 400_000);
        wa.sort_by_key(|w| w.opcode.as_raw());
        wb.sort_by_key(|w| w.opcode.as_raw());
        assert_eq!(
            wa.iter().map(|w| (w.wr_id, w.opcode, w.status)).collect::<Vec<_>>(),
            vec![(1, WcOpcode::Send, WcStatus::Success), (10, WcOpcode::Recv, WcStatus::Success)]
        );
        assert_eq!(
            wb.iter().map(|w| (w.wr_id, w.opcode, w.status)).collect::<Vec<_>>(),
            vec![(2, WcOpcode::Send, WcStatus::Success), (20, WcOpcode::Recv, WcStatus::Success)]
        );
        assert_eq!((wa[1].byte_len, wb[1].byte_len), (10_000, 10_000));
    }
    assert!(ra == sb && rb == sa);
}

/// A separate receive CQ gets the receive completions; the send CQ gets none of them.
#[test]
fn receive_completions_go_to_the_receive_cq() {
    let h = hosts();
    let mut src = pattern(4, 100);
    let mut dst = vec![GUARD; 100];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let rcq = h.b.create_cq(8).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_recv_cq(&rcq).set_max_recv_wr(8).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu1024)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu1024)).unwrap();
        qb.post_recv_one(RecvWr::new(3, dst_mr.sge(0..100).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..100).unwrap()).signaled(true)).unwrap();
        h.wait(&h.ca, 1, 200_000);
        let r = h.wait(&rcq, 1, 200_000)[0];
        assert_eq!((r.wr_id, r.opcode, r.byte_len, r.status), (3, WcOpcode::Recv, 100, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty(), "the send CQ of B got a receive completion");
    }
    assert!(dst == src);
}

/// Receives posted in INIT, before the connection exists, are used after INIT→RTR (which resets
/// the NIC's RQ consumer index but not its producer index).
#[test]
fn receives_posted_in_init_are_used() {
    let h = hosts();
    let mut src = pattern(6, 3000);
    let mut dst = vec![GUARD; 3000];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let o = opts(Mtu::Mtu1024);
        let init = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: 1,
            qp_access_flags: o.access,
            ..QpAttr::default()
        };
        qb.modify(&init, QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS)
            .unwrap();
        qb.post_recv(&[RecvWr::new(1, dst_mr.sge(0..1000).unwrap()), RecvWr::new(2, dst_mr.sge(1000..3000).unwrap())])
            .unwrap();
        let attr = QpAttr {
            qp_state: QpState::Rtr,
            path_mtu: o.path_mtu,
            ah_attr: rnic::AddressVector { dest_mac: ea.mac, dest_ip: ea.ip },
            dest_qp_num: ea.qpn,
            rq_psn: ea.psn,
            sq_psn: qb.local_psn(),
            max_dest_rd_atomic: 1,
            max_rd_atomic: 1,
            min_rnr_timer: 12,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            ..init
        };
        use QpAttrMask as M;
        qb.modify(
            &attr,
            M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
        )
        .unwrap();
        qb.modify(
            &QpAttr { qp_state: QpState::Rts, ..attr },
            M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC,
        )
        .unwrap();
        qa.connect_with(&eb, &o).unwrap();
        qa.post_send(&[
            SendWr::send(1, src_mr.sge(0..1000).unwrap()),
            SendWr::send(2, src_mr.sge(1000..3000).unwrap()).signaled(true),
        ])
        .unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 2, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.byte_len, w.status)).collect::<Vec<_>>(),
            vec![(1, 1000, WcStatus::Success), (2, 2000, WcStatus::Success)]
        );
    }
    assert!(dst == src);
}

/// RESET forgets posted receives: after RESET and a new connection, a SEND lands in a receive
/// posted after the reset, not in a stale one (the driver zeroes the NIC's RQ producer index).
#[test]
fn reset_forgets_receives_and_the_rq_restarts() {
    let h = hosts();
    let mut src = pattern(7, 512);
    let mut stale = vec![GUARD; 512];
    let mut dst = vec![GUARD; 512];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let stale_mr = h.pb.register(&mut stale, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu512));
        // One receive used, two more left posted.
        qb.post_recv(&[
            RecvWr::new(1, dst_mr.sge(0..512).unwrap()),
            RecvWr::new(2, stale_mr.sge(0..512).unwrap()),
            RecvWr::new(3, stale_mr.sge(0..512).unwrap()),
        ])
        .unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..16).unwrap()).signaled(true)).unwrap();
        h.wait(&h.ca, 1, 200_000);
        assert_eq!(h.wait(&h.cb, 1, 200_000)[0].wr_id, 1);
        let reset = QpAttr { qp_state: QpState::Reset, ..QpAttr::default() };
        qa.modify(&reset, QpAttrMask::STATE).unwrap();
        qb.modify(&reset, QpAttrMask::STATE).unwrap();
        assert_eq!(qb.recv_outstanding(), 0);
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts(Mtu::Mtu512)).unwrap();
        qb.connect_with(&ea, &opts(Mtu::Mtu512)).unwrap();
        qb.post_recv_one(RecvWr::new(9, dst_mr.sge(0..512).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, src_mr.sge(0..512).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (9, 512, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty());
        assert!(stale_mr.to_vec().iter().all(|&b| b == GUARD), "a receive forgotten by RESET was used");
    }
    assert!(dst == src);
}

/// Waits for the responder's first RNR NAK for a SEND posted before any receive, then posts the
/// receive: the requester resends when the RNR timer expires and the message arrives.
fn rnr_then_receive(len: usize, mtu: Mtu) {
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

#[test]
fn send_before_any_receive_gets_rnr_nak_and_arrives_later() {
    rnr_then_receive(100, Mtu::Mtu1024);
}

#[test]
fn multi_packet_send_before_any_receive_gets_rnr_nak_and_arrives_later() {
    rnr_then_receive(5000, Mtu::Mtu1024);
}

/// Four SENDs against two posted receives: the first two land, the third is RNR-NAKed (and the
/// fourth, behind it, is not accepted out of order); once two more receives are posted, the
/// requester's retries deliver both, in order, into the right receives.
#[test]
fn receives_running_out_mid_stream() {
    let h = hosts();
    const LEN: usize = 3000;
    let mut src = pattern(10, 4 * LEN);
    let mut dst = vec![GUARD; 4 * LEN];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        let recv = |i: usize| RecvWr::new(i as u64, dst_mr.sge(i * LEN..(i + 1) * LEN).unwrap());
        qb.post_recv(&[recv(0), recv(1)]).unwrap();
        let sends: Vec<_> = (0..4)
            .map(|i| SendWr::send(i as u64, src_mr.sge(i * LEN..(i + 1) * LEN).unwrap()).signaled(true))
            .collect();
        qa.post_send(&sends).unwrap();
        let r = h.wait(&h.cb, 2, 200_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(0, WcStatus::Success), (1, WcStatus::Success)]
        );
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        qb.post_recv(&[recv(2), recv(3)]).unwrap();
        let s = h.wait(&h.ca, 4, 20 * 65_536);
        assert_eq!(
            s.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>(),
            "{}",
            h.diag()
        );
        let r = h.wait(&h.cb, 2, 100_000);
        assert_eq!(
            r.iter().map(|w| (w.wr_id, w.status, w.byte_len)).collect::<Vec<_>>(),
            vec![(2, WcStatus::Success, LEN as u32), (3, WcStatus::Success, LEN as u32)],
            "{}",
            h.diag()
        );
        assert!(h.drain(&h.cb, 5_000).is_empty());
        eprintln!("receives running out mid-stream:\n{}", h.diag());
    }
    if let Some(d) = first_difference(&dst, &src) {
        panic!("{d}");
    }
}

/// The ACK of a SEND is lost: the requester's timer resends the SEND, the responder recognises
/// the duplicate, ACKs it again and does not consume a second receive WR: the next SEND lands in
/// the second receive.
#[test]
fn a_resent_send_after_a_lost_ack_consumes_no_second_receive() {
    // NIC 1's first frame is the ACK of the first SEND.
    let h = hosts_dropping(vec![(1, 0)]);
    let mut src = pattern(11, 600);
    let mut dst = vec![GUARD; 2 * 600];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qb.post_recv(&[RecvWr::new(1, dst_mr.sge(0..600).unwrap()), RecvWr::new(2, dst_mr.sge(600..1200).unwrap())])
            .unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..300).unwrap()).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 1, 4 * 65_536)[0];
        assert_eq!((s.wr_id, s.status), (1, WcStatus::Success), "{s:?}");
        let (ca, cb) = h.counters();
        assert_eq!(ca.get("timeouts"), Some(1), "{}", h.diag());
        assert!(cb.get("rx_duplicates").unwrap() >= 1, "{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (1, 300, WcStatus::Success), "{r:?}");
        assert!(h.drain(&h.cb, 5_000).is_empty(), "the duplicate SEND consumed a second receive\n{}", h.diag());
        qa.post_send_one(SendWr::send(2, src_mr.sge(300..600).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!((r.wr_id, r.byte_len, r.status), (2, 300, WcStatus::Success), "{r:?}\n{}", h.diag());
    }
    assert_eq!(&dst[..300], &src[..300]);
    assert!(dst[300..600].iter().all(|&b| b == GUARD));
    assert_eq!(&dst[600..900], &src[300..600]);
}

/// A lost packet inside a SEND (`lost` = index of the dropped request frame): the responder
/// NAKs the gap, the requester goes back, every byte lands once in the one receive WR, which
/// completes once.
fn lost_packet_in_a_send(lost: u64) {
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

#[test]
fn lost_send_first_is_recovered() {
    lost_packet_in_a_send(0);
}

#[test]
fn lost_send_middle_is_recovered() {
    lost_packet_in_a_send(5);
}

#[test]
fn lost_send_last_is_recovered() {
    lost_packet_in_a_send(19);
}

/// The outcome of a SEND the responder must refuse: (send completion, receive completion,
/// receive buffer with guards, counters A, counters B).
struct Refused {
    send: WorkCompletion,
    recv: WorkCompletion,
    buf: Vec<u8>,
    ca: rnic::Counters,
    cb: rnic::Counters,
}

/// A SEND of `len` bytes at `mtu` into the receive WR `make(mr)` of B, where B's buffer is
/// `buf_len` bytes registered with `access` (in B's PD, or a fresh one with `other_pd`).
fn refused_send(
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

fn assert_prot_err(r: &Refused, wr_id: u64) {
    assert_eq!((r.recv.wr_id, r.recv.status), (wr_id, WcStatus::LocProtErr), "{:?}", r.recv);
    assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemOpErr), "{:?}", r.send);
    assert!(r.buf.iter().all(|&b| b == GUARD), "a refused SEND wrote the buffer");
    assert_eq!(r.ca.get("rx_nak_rem_op"), Some(1), "{:?}", nonzero(&r.ca));
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

/// A SEND to a QP built without a receive queue is never accepted: RNR NAKs, RNR_RETRY resends
/// after the RNR timer each (never the ACK timer), then IBV_WC_RNR_RETRY_EXC_ERR; exactly
/// `1 + rnr_retry` tries, nothing written (IBTA Vol 1 9.7.5.2.8, ibv_modify_qp(3)).
fn rnr_retry_is_exhausted(rnr_retry: u8) {
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

/// The requester waits the RNR timer the responder's NAK names before it resends: with
/// min_rnr_timer 12 (0.64 ms = 160 000 cycles) nothing is resent for 150 000 cycles after the
/// RNR NAK, and the resend comes within the timer plus the sweep and a round trip.
#[test]
fn the_resend_waits_for_the_rnr_timer() {
    let h = hosts();
    let mut src = pattern(3, 64);
    let mut dst = vec![GUARD; 64];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { min_rnr_timer: 12, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..64).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.a, counter::RX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        let t0 = h.world.borrow().cycles();
        qb.post_recv_one(RecvWr::new(2, dst_mr.sge(0..64).unwrap())).unwrap();
        h.settle(150_000);
        assert_eq!(h.a.counter(counter::TX_REQUESTS).unwrap(), 1, "resent before the RNR timer");
        assert!(h.wait_counter(&h.a, counter::TX_REQUESTS, 2, 30_000), "no resend after the RNR timer\n{}", h.diag());
        let waited = h.world.borrow().cycles() - t0;
        assert!((160_000..180_000).contains(&waited), "resent {waited} cycles after the RNR NAK");
        assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success);
    }
    assert!(dst == src);
}

/// Immediate data as the tests post it: the raw `imm_data` word of `ibv_send_wr` (network order
/// in memory), so the ImmDt on the wire is `IMM.to_ne_bytes()`.
const IMM: u32 = u32::from_ne_bytes([0x12, 0x34, 0x56, 0x78]);

/// SEND_WITH_IMM of `len` bytes: the receive completes IBV_WC_RECV with IBV_WC_WITH_IMM and
/// the immediate data, the data lands in the receive buffer, the send completes IBV_WC_SEND.
fn send_with_imm_and_check(mtu: Mtu, len: usize) {
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

#[test]
fn send_with_imm_carries_the_immediate_into_the_receive_completion() {
    for (mtu, len) in
        [(Mtu::Mtu256, 0), (Mtu::Mtu256, 1), (Mtu::Mtu256, 1000), (Mtu::Mtu1024, 1024), (Mtu::Mtu4096, 20_000)]
    {
        send_with_imm_and_check(mtu, len);
    }
}

#[test]
fn a_plain_send_completes_without_with_imm() {
    let h = hosts();
    let mut dst = vec![GUARD; 64];
    {
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        qb.post_recv_one(RecvWr::new(1, dst_mr.sge(0..64).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, None).with_imm(IMM).signaled(true)).unwrap();
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!((r.opcode, r.wc_flags), (WcOpcode::Recv, WcFlags::empty()), "{r:?}");
    }
}

/// RDMA_WRITE_WITH_IMM of `len` bytes into B's MR at `dst_off`: the data lands at the remote
/// address, a receive WQE is consumed (IBV_WC_RECV_RDMA_WITH_IMM, `byte_len` = `len`, the
/// immediate) but its buffer is not touched; the WRITE completes IBV_WC_RDMA_WRITE.
fn write_with_imm_and_check(mtu: Mtu, len: usize, dst_off: usize) {
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

#[test]
fn rdma_write_with_imm_consumes_a_receive_and_carries_the_immediate() {
    for (mtu, len, off) in [
        (Mtu::Mtu1024, 0, 0),
        (Mtu::Mtu1024, 1, 3),
        (Mtu::Mtu256, 256, 0),
        (Mtu::Mtu1024, 5000, 17),
        (Mtu::Mtu4096, 64 * 1024, 0),
    ] {
        write_with_imm_and_check(mtu, len, off);
    }
}

/// An RDMA WRITE with immediate that finds no receive WQE is answered with an RNR NAK on its
/// last packet (the packets before it are written), and completes once a receive is posted.
#[test]
fn write_with_imm_before_any_receive_gets_rnr_nak_and_completes_later() {
    let h = hosts();
    let len = 3000;
    let mut src = pattern(5, len);
    let mut dst = vec![GUARD; len];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, retry_cnt: 7, access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        let remote = dst_mr.remote_addr(0).unwrap();
        qa.post_send_one(
            SendWr::rdma_write(9, src_mr.sge(0..len).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(IMM)
                .signaled(true),
        )
        .unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "no RNR NAK\n{}", h.diag());
        assert!(h.drain(&h.ca, 1_000).is_empty(), "an RNR NAK completed the WRITE");
        qb.post_recv_one(RecvWr::zero_length(10)).unwrap();
        let s = h.wait(&h.ca, 1, 8 * 65_536 + 100_000)[0];
        assert_eq!((s.wr_id, s.status), (9, WcStatus::Success), "{s:?}\n{}", h.diag());
        let r = h.wait(&h.cb, 1, 100_000)[0];
        assert_eq!(
            (r.wr_id, r.opcode, r.byte_len, r.imm_data),
            (10, WcOpcode::RecvRdmaWithImm, len as u32, IMM),
            "{r:?}"
        );
        assert_eq!(h.b.counter(counter::CQES).unwrap(), 1, "one receive completion");
    }
    assert!(dst == src);
}

/// A capture of immediate-data traffic — SEND ONLY and LAST WITH IMMEDIATE, RDMA WRITE ONLY
/// and LAST WITH IMMEDIATE (RETH + ImmDt) — decodes cleanly in tshark, every ICRC verifies in
/// scapy, and each ImmDt on the wire is the `imm_data` word's bytes as posted.
#[test]
fn immediate_data_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("imm.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(21, 3000);
    let mut dst = vec![GUARD; 8192];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&ConnectOptions { access: AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) });
        for i in 0..4 {
            qb.post_recv_one(RecvWr::new(i, dst_mr.sge(4096..8192).unwrap())).unwrap();
        }
        let remote = dst_mr.remote_addr(0).unwrap();
        let imm = |k: u8| u32::from_ne_bytes([0xA0 | k, 0x11, 0x22, k]);
        let wrs = [
            SendWr::send(1, src_mr.sge(0..10).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(imm(1)),
            SendWr::send(2, src_mr.sge(0..2500).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(imm(2)),
            SendWr::rdma_write(3, src_mr.sge(0..7).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(imm(3)),
            SendWr::rdma_write(4, src_mr.sge(0..3000).unwrap(), remote)
                .with_opcode(WrOpcode::RdmaWriteWithImm)
                .with_imm(imm(4)),
        ];
        qa.post_send(&wrs.map(|w| w.signaled(true))).unwrap();
        let s = h.wait(&h.ca, 4, 400_000);
        assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 4, 100_000);
        assert_eq!(r.iter().map(|w| w.imm_data).collect::<Vec<_>>(), (1..=4).map(imm).collect::<Vec<_>>(), "{r:?}");
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let with_imm: Vec<(u8, [u8; 4])> =
        pkts.iter().filter_map(|p| p.immdt.map(|i| (p.bth.opcode.0, i.data.to_be_bytes()))).collect();
    assert_eq!(
        with_imm,
        vec![
            (0x05, [0xA1, 0x11, 0x22, 1]),
            (0x03, [0xA2, 0x11, 0x22, 2]),
            (0x0B, [0xA3, 0x11, 0x22, 3]),
            (0x09, [0xA4, 0x11, 0x22, 4])
        ],
        "opcodes and ImmDt bytes on the wire"
    );
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

/// Posts one WR that the requester must refuse locally and returns its completion.
fn local_error(opcode: WrOpcode) -> WorkCompletion {
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

/// An atomic's local buffer is one 8-byte word: with a 64-byte SGE the NIC completes it with
/// IBV_WC_LOC_LEN_ERR before anything reaches the wire (ibv_post_send(3)).
#[test]
fn an_atomic_whose_local_buffer_is_not_8_bytes_is_loc_len_err() {
    for op in [WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicFetchAndAdd] {
        let wc = local_error(op);
        assert_eq!((wc.wr_id, wc.status), (4, WcStatus::LocLenErr), "{op:?}: {wc:?}");
    }
}

/// A capture of SEND traffic — SEND ONLY, FIRST/MIDDLE/LAST, their ACKs, an RNR NAK and the
/// NAK of a too-long message — decodes cleanly in tshark's InfiniBand dissector, every ICRC
/// verifies in scapy's RoCE layer, and our own codec parses every frame.
#[test]
fn send_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("send.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(12, 5000);
    let mut dst = vec![GUARD; 8192];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let o = ConnectOptions { timeout: 6, ..opts(Mtu::Mtu1024) };
        let (mut qa, mut qb) = h.qps(&o);
        // RNR NAK first (no receive yet), then the receive; the SEND ONLY (5 B, pad 3) is resent.
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..5).unwrap()).signaled(true)).unwrap();
        assert!(h.wait_counter(&h.b, counter::TX_RNR_NAKS, 1, 100_000), "{}", h.diag());
        qb.post_recv_one(RecvWr::new(1, dst_mr.sge(0..8).unwrap())).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 600_000)[0].status, WcStatus::Success);
        // FIRST, MIDDLE × 3, LAST + ACK.
        qb.post_recv_one(RecvWr::new(2, dst_mr.sge(0..8192).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(2, src_mr.sge(0..4500).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        // Zero-length SEND ONLY.
        qb.post_recv_one(RecvWr::zero_length(3)).unwrap();
        qa.post_send_one(SendWr::send(3, None).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        // Too long: NAK invalid request.
        qb.post_recv_one(RecvWr::new(4, dst_mr.sge(0..10).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(4, src_mr.sge(0..100).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
        assert_eq!(h.wait(&h.cb, 4, 200_000).len(), 4);
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();

    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let opcodes: Vec<u8> = pkts.iter().map(|p| p.bth.opcode.0).collect();
    for op in [0x00, 0x01, 0x02, 0x04, 0x11] {
        assert!(opcodes.contains(&op), "opcode {op:#x} missing from {opcodes:x?}");
    }
    let syndromes: Vec<u8> = pkts.iter().filter_map(|p| p.aeth.map(|a| a.syndrome)).collect();
    // RNR NAK with the responder's min_rnr_timer (12), NAK invalid request, ACKs.
    for syn in [0x20 | 12, 0x61] {
        assert!(syndromes.contains(&syn), "AETH syndrome {syn:#x} missing from {syndromes:x?}");
    }
    assert!(syndromes.iter().any(|s| s >> 5 == 0), "no ACK in {syndromes:x?}");
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

// ---- Flush on ERR, receive side (IBTA Vol 1 10.3.1; ibv_modify_qp(3), ibv_poll_cq(3)) ----

fn to_err(qp: &mut QueuePair<'_>) {
    qp.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
}

/// `(wr_id, status, opcode)` of each completion, for compact comparisons.
fn summary(wcs: &[WorkCompletion]) -> Vec<(u64, WcStatus, WcOpcode)> {
    wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect()
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

/// IBV_SEND_SOLICITED (ibv_post_send(3); IBTA Vol 1 9.2.3): BTH.SE is set on the last packet
/// of a solicited SEND (and SEND with immediate) only, never on an unsolicited one or on a
/// FIRST/MIDDLE packet; the capture stays clean in tshark and scapy. (The driver has no
/// completion events, so the responder only delivers the message; SE is on the wire.)
#[test]
fn solicited_sends_carry_the_se_bit_on_their_last_packet() {
    use rnic::SendFlags;
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("se.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(9, 3000);
    let mut dst = vec![GUARD; 4 * 4096];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = h.qps(&opts(Mtu::Mtu1024));
        for i in 0..3 {
            qb.post_recv_one(RecvWr::new(i, dst_mr.sge(i as usize * 4096..(i as usize + 1) * 4096).unwrap())).unwrap();
        }
        let sol = SendFlags::SIGNALED | SendFlags::SOLICITED;
        qa.post_send(&[
            SendWr::send(1, src_mr.sge(0..3000).unwrap()).with_flags(sol),
            SendWr::send(2, src_mr.sge(0..100).unwrap()).signaled(true),
            SendWr::send(3, src_mr.sge(0..10).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(7).with_flags(sol),
        ])
        .unwrap();
        assert!(h.wait(&h.ca, 3, 500_000).iter().all(|w| w.status == WcStatus::Success));
        assert!(h.wait(&h.cb, 3, 500_000).iter().all(|w| w.status == WcStatus::Success));
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let requests: Vec<(u8, bool)> = frames
        .iter()
        .map(|(_, f)| RocePacketRepr::parse(f).unwrap().bth)
        .filter(|b| b.opcode.0 <= 0x05)
        .map(|b| (b.opcode.0, b.solicited))
        .collect();
    // SEND FIRST, MIDDLE, LAST (solicited); SEND ONLY; SEND ONLY WITH IMMEDIATE (solicited).
    assert_eq!(requests, [(0x00, false), (0x01, false), (0x02, true), (0x04, false), (0x05, true)]);
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}
