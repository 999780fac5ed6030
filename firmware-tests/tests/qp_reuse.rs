//! QP-number reuse after every kind of pending state (issue 12, item 6 and "RESET must clear
//! every per-QP state in every block"; IBTA Vol 1 10.3.1: the RESET state returns a QP to its
//! initial configuration; ibv_destroy_qp(3)).
//!
//! The driver gives a new QP the lowest free number, so destroying a QP and creating another
//! reuses its number (`host-driver/src/context.rs`, `alloc_qpn`). Each test leaves one kind of
//! state pending on a connection — an RNR wait, a running ACK timer, a READ outstanding or
//! partly answered (one SGE and a scatter list), an atomic outstanding, a sequence NAK sent
//! by the responder, a SEND or a WRITE half received by the responder, receive WQEs posted, a
//! flush in progress, an SRQ attached (and an SRQ number reused for a QP), the error state —
//! destroys both QPs, creates new ones with the same numbers and connects them with other
//! PSNs than the old connection's. The NICs have no wire: the test carries every frame
//! (`common::carried`), so it can hold or drop exactly the frames that leave a state pending,
//! and discards whatever the old connection still had in flight.
//!
//! The new connection must carry nothing of the old one: for twice its ACK timeout nothing
//! happens (no timeout, resend or completion); its first request packet has the new PSN; a
//! WRITE whose first ACK is lost is resent by the normal ACK timeout (4.096 µs × 2^5 = 32,768
//! cycles) and completes; a SEND lands in the new QP's receive; a READ into two SGEs and an
//! atomic return the right bytes; no CQE arrives that no WR of the new QPs asked for.
mod common;

use common::carried::{Carried, Carrier, Dir, Frame};
use common::pattern;
use rnic::{
    AccessFlags, AddressVector, ConnectOptions, Endpoint, MemoryRegion, Mtu, QpAttr, QpAttrMask, QpState, QueuePair,
    RecvWr, RemoteAddr, SendWr, WcOpcode, WcStatus, WorkCompletion,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const GUARD: u8 = 0xEE;
/// ACK timeout exponent of every connection: 4.096 µs × 2^5 = 131 µs = 32,768 cycles.
const TIMEOUT: u8 = 5;
const TIMEOUT_CYCLES: u64 = 1024 << TIMEOUT;
/// First PSNs of the old connection (A's, B's) and of the new one (a little behind the old
/// ones, so a stale expected PSN would take the new packets for duplicates).
const OLD_PSN: (u32, u32) = (0x10_0000, 0x20_0000);
const NEW_PSN: (u32, u32) = (0x0F_FFC0, 0x1F_FFC0);

/// What the carrier does with one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Pass,
    Drop,
    Hold,
}

type Rule = Box<dyn FnMut(Dir, &Frame) -> Act>;

/// A carrier whose rule can be replaced between the phases of a test; held frames are kept
/// until [`Gate::discard`].
struct Gate {
    rule: Rule,
    held: Vec<(Dir, Vec<u8>)>,
}

impl Gate {
    fn pass() -> Self {
        Gate { rule: Box::new(|_, _| Act::Pass), held: Vec::new() }
    }
    fn set(&mut self, rule: impl FnMut(Dir, &Frame) -> Act + 'static) {
        self.rule = Box::new(rule);
    }
    /// Forgets every held frame (what the old connection still had in flight).
    fn discard(&mut self) {
        self.held.clear();
    }
}

impl Carrier for Gate {
    fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
        let Some(f) = Frame::parse(&frame) else {
            return vec![frame];
        };
        match (self.rule)(dir, &f) {
            Act::Pass => vec![frame],
            Act::Drop => vec![],
            Act::Hold => {
                self.held.push((dir, frame));
                vec![]
            }
        }
    }
}

fn opts() -> ConnectOptions {
    ConnectOptions {
        path_mtu: Mtu::Mtu1024,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        timeout: TIMEOUT,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        max_dest_rd_atomic: 4,
    }
}

/// RESET → INIT → RTR → RTS with `o`, this QP's first PSN `sq_psn` and the peer's `remote`
/// (whose `psn` is the peer's first PSN).
fn connect_psn(q: &mut QueuePair<'_>, remote: &Endpoint, sq_psn: u32, o: &ConnectOptions) {
    use QpAttrMask as M;
    let attr = QpAttr {
        pkey_index: 0,
        port_num: 1,
        qp_access_flags: o.access,
        path_mtu: o.path_mtu,
        ah_attr: AddressVector { dest_mac: remote.mac, dest_ip: remote.ip },
        dest_qp_num: remote.qpn,
        rq_psn: remote.psn,
        sq_psn,
        max_rd_atomic: o.max_rd_atomic,
        max_dest_rd_atomic: o.max_dest_rd_atomic,
        min_rnr_timer: o.min_rnr_timer,
        timeout: o.timeout,
        retry_cnt: o.retry_cnt,
        rnr_retry: o.rnr_retry,
        ..QpAttr::default()
    };
    for (state, mask) in [
        (QpState::Init, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS),
        (
            QpState::Rtr,
            M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
        ),
        (QpState::Rts, M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC),
    ] {
        q.modify(&QpAttr { qp_state: state, ..attr }, mask).unwrap();
    }
}

/// Connects `qa` (first PSN `psns.0`) and `qb` (`psns.1`) with `o`.
fn connect_pair(qa: &mut QueuePair<'_>, qb: &mut QueuePair<'_>, psns: (u32, u32), o: &ConnectOptions) {
    let ea = Endpoint { psn: psns.0, ..qa.endpoint().unwrap() };
    let eb = Endpoint { psn: psns.1, ..qb.endpoint().unwrap() };
    connect_psn(qa, &eb, psns.0, o);
    connect_psn(qb, &ea, psns.1, o);
}

/// The memory of a test: A's source and local (READ/atomic) buffers, B's target memory (a
/// pattern, with an atomic word at `WORD`) and receive buffers.
struct Bufs {
    src: Vec<u8>,
    loc: Vec<u8>,
    bmem: Vec<u8>,
    brecv: Vec<u8>,
}

const WORD: usize = 60_000;
/// The wr_ids the old connections' WRs use (the new ones use others).
const OLD_IDS: std::ops::Range<u64> = 9..200;
const WORD_INIT: u64 = 0x0123_4567_89AB_CDEF;

impl Bufs {
    fn new() -> Self {
        let mut bmem = pattern(21, 64 * 1024);
        bmem[WORD..WORD + 8].copy_from_slice(&WORD_INIT.to_le_bytes());
        Bufs { src: pattern(20, 64 * 1024), loc: vec![GUARD; 64 * 1024], bmem, brecv: vec![GUARD; 16 * 1024] }
    }
}

/// The registered regions (A: src, loc; B: bmem, brecv).
struct Mrs<'a> {
    src: MemoryRegion<'a>,
    loc: MemoryRegion<'a>,
    bmem: MemoryRegion<'a>,
    brecv: MemoryRegion<'a>,
}

fn register<'a>(h: &Carried, b: &'a mut Bufs) -> Mrs<'a> {
    let all =
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    Mrs {
        src: h.pa.register(&mut b.src, AccessFlags::LOCAL_WRITE).unwrap(),
        loc: h.pa.register(&mut b.loc, AccessFlags::LOCAL_WRITE).unwrap(),
        bmem: h.pb.register(&mut b.bmem, all).unwrap(),
        brecv: h.pb.register(&mut b.brecv, AccessFlags::LOCAL_WRITE).unwrap(),
    }
}

/// A new pair: A's QP (SQ 32, all WRs signaled) and B's (SQ 8, an RQ of 16 unless
/// `srq` is given).
fn new_pair<'a>(h: &Carried, srq: Option<&rnic::SharedReceiveQueue<'a>>) -> (QueuePair<'a>, QueuePair<'a>) {
    let qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).set_max_send_sge(4).set_sq_sig_all(true).build().unwrap();
    let qb = match srq {
        Some(s) => h.pb.create_qp(&h.cb).set_max_send_wr(8).set_srq(s).build().unwrap(),
        None => h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(16).build().unwrap(),
    };
    (qa, qb)
}

fn remote(mrs: &Mrs<'_>) -> RemoteAddr {
    RemoteAddr { addr: mrs.bmem.addr(), rkey: mrs.bmem.rkey() }
}

fn at(r: RemoteAddr, off: usize) -> RemoteAddr {
    RemoteAddr { addr: r.addr + off as u64, rkey: r.rkey }
}

/// Steps `cycles`, carrying frames through `g`, and returns every completion that arrived on
/// either NIC's CQ meanwhile.
fn drain(h: &Carried, g: &mut Gate, cycles: u64) -> Vec<(usize, WorkCompletion)> {
    h.run(cycles, g);
    let mut out = Vec::new();
    let mut wcs = [WorkCompletion::default(); 16];
    for (nic, cq) in [(0, &h.ca), (1, &h.cb)] {
        loop {
            let k = cq.poll(&mut wcs).unwrap();
            out.extend(wcs[..k].iter().map(|w| (nic, *w)));
            if k < wcs.len() {
                break;
            }
        }
    }
    out
}

/// Destroys the old pair (RESET, numbers freed), forgets the frames the old connection had in
/// flight, lets the NICs settle, and checks that what completed meanwhile is only flushes of
/// old WRs. Returns the freed numbers.
fn destroy(h: &Carried, g: &mut Gate, qa: QueuePair<'_>, qb: QueuePair<'_>, what: &str) -> (u32, u32) {
    let nums = (qa.qp_num(), qb.qp_num());
    drop(qa);
    drop(qb);
    g.discard();
    g.set(|_, _| Act::Drop);
    let late = drain(h, g, 10_000);
    for (nic, w) in &late {
        assert!(
            w.status == WcStatus::WrFlushErr && OLD_IDS.contains(&w.wr_id),
            "{what}: after the old QPs were destroyed, NIC {nic} completed {w:?} (only a flush of a WR the old QP \
             had posted, wr_id {OLD_IDS:?}, may still come)\n{}\nDMA at the hosts: {:?}",
            h.diag(),
            h.world.borrow().stats().nics.iter().map(|n| n.dma).collect::<Vec<_>>()
        );
    }
    g.set(|_, _| Act::Pass);
    nums
}

/// The checks of the new connection (see the file's header). `word` is the atomic word's
/// value now; `recv_id` the wr_id the new B QP's receive gets. `srq`: B receives from it.
#[allow(clippy::too_many_arguments)]
fn check_fresh<'a>(
    h: &Carried,
    g: &mut Gate,
    qa: &mut QueuePair<'a>,
    qb: &mut QueuePair<'a>,
    mrs: &'a Mrs<'_>,
    srq: Option<&rnic::SharedReceiveQueue<'a>>,
    what: &str,
) {
    let what = format!("{what}: the new connection on QPs {}/{}", qa.qp_num(), qb.qp_num());
    let r = remote(mrs);
    let c0 = h.a.counters().unwrap();
    // Nothing happens by itself.
    let idle = drain(h, g, 2 * TIMEOUT_CYCLES);
    assert!(idle.is_empty(), "{what}: completions nobody asked for: {idle:?}\n{}", h.diag());
    let c1 = h.a.counters().unwrap();
    for c in [counter::TIMEOUTS, counter::RETRANSMITS, counter::TX_REQUESTS] {
        assert_eq!(
            common::delta(&c1, &c0, c),
            0,
            "{what}: {} moved with nothing posted\n{}",
            counter::NAMES[c as usize],
            h.diag()
        );
    }
    // A WRITE whose first ACK is lost; the first request's PSN is the new one.
    let (qpn_a, qpn_b) = (qa.qp_num(), qb.qp_num());
    let first_psn = std::rc::Rc::new(std::cell::Cell::new(None::<u32>));
    let fp = first_psn.clone();
    let mut acks_dropped = 0;
    g.set(move |dir, f| {
        if dir == 0 && f.dest_qp() == qpn_b && fp.get().is_none() {
            fp.set(Some(f.psn()));
        }
        if dir == 1 && f.dest_qp() == qpn_a && f.opcode() == 0x11 && acks_dropped == 0 {
            acks_dropped += 1;
            return Act::Drop;
        }
        Act::Pass
    });
    let t0 = h.now();
    qa.post_send_one(SendWr::rdma_write(1, mrs.src.sge(0..300).unwrap(), at(r, 0))).unwrap();
    let w = h.wait(&h.ca, 1, TIMEOUT_CYCLES + 30_000, g, &format!("{what}: a WRITE whose first ACK is lost"));
    let took = h.now() - t0;
    assert_eq!((w[0].wr_id, w[0].status, w[0].opcode), (1, WcStatus::Success, WcOpcode::RdmaWrite), "{what}");
    assert_eq!(first_psn.get(), Some(NEW_PSN.0), "{what}: the first request's PSN");
    assert!(took >= TIMEOUT_CYCLES - 512, "{what}: the WRITE completed after {took} cycles, before the ACK timeout");
    let c2 = h.a.counters().unwrap();
    assert_eq!(
        (common::delta(&c2, &c1, counter::TIMEOUTS), common::delta(&c2, &c1, counter::RETRANSMITS)),
        (1, 1),
        "{what}: one timeout, one resend\n{}",
        h.diag()
    );
    g.set(|_, _| Act::Pass);
    // A SEND into the new QP's receive (or the SRQ's).
    let recv = RecvWr::new(3000, mrs.brecv.sge(8192..8192 + 200).unwrap());
    match srq {
        Some(s) => s.post_recv_one(recv).unwrap(),
        None => qb.post_recv_one(recv).unwrap(),
    }
    let word = u64::from_le_bytes(mrs.bmem.to_vec()[WORD..WORD + 8].try_into().unwrap());
    qa.post_send(&[
        SendWr::send(2, mrs.src.sge(1000..1100).unwrap()),
        SendWr::rdma_read(3, mrs.loc.sge(32_768..32_768 + 1000).unwrap(), at(r, 20_000))
            .with_sg_list(&[mrs.loc.sge(32_768..32_768 + 1000).unwrap(), mrs.loc.sge(34_000..34_000 + 1500).unwrap()])
            .unwrap(),
        SendWr::atomic_fetch_and_add(4, mrs.loc.sge(40_000..40_008).unwrap(), at(r, WORD), 3),
    ])
    .unwrap();
    let w = h.wait(&h.ca, 3, 200_000, g, &what);
    assert_eq!(
        w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(2, WcStatus::Success), (3, WcStatus::Success), (4, WcStatus::Success)],
        "{what}\n{}",
        h.diag()
    );
    let rw = h.wait(&h.cb, 1, 100_000, g, &format!("{what}: the SEND's receive"));
    assert_eq!(
        (rw[0].wr_id, rw[0].status, rw[0].byte_len, rw[0].qp_num),
        (3000, WcStatus::Success, 100, qb.qp_num()),
        "{what}: {rw:?}"
    );
    let (loc, bmem, brecv) = (mrs.loc.to_vec(), mrs.bmem.to_vec(), mrs.brecv.to_vec());
    let src = mrs.src.to_vec();
    assert!(bmem[..300] == src[..300], "{what}: the WRITE's bytes");
    assert!(brecv[8192..8292] == src[1000..1100], "{what}: the SEND's bytes");
    assert!(
        loc[32_768..33_768] == bmem[20_000..21_000] && loc[34_000..35_500] == bmem[21_000..22_500],
        "{what}: the READ's bytes"
    );
    assert_eq!(u64::from_le_bytes(loc[40_000..40_008].try_into().unwrap()), word, "{what}: the atomic's original");
    assert_eq!(
        u64::from_le_bytes(bmem[WORD..WORD + 8].try_into().unwrap()),
        word.wrapping_add(3),
        "{what}: the word after the atomic"
    );
    let extra = drain(h, g, 10_000);
    assert!(extra.is_empty(), "{what}: completions nobody asked for: {extra:?}\n{}", h.diag());
    assert_eq!((qa.stray_completions(), qb.stray_completions()), (0, 0), "{what}");
}

/// Runs one reuse scenario: `pending` sets up the old connection's state (and may return the
/// local buffer range its WRs owned, which must not change after the destroy); then the old
/// QPs are destroyed, new ones created with the same numbers and checked.
fn reuse(
    what: &str,
    pending: impl for<'a> FnOnce(
        &Carried,
        &mut Gate,
        &mut QueuePair<'a>,
        &mut QueuePair<'a>,
        &'a Mrs<'a>,
    ) -> Option<std::ops::Range<usize>>,
) {
    let h = Carried::new(SimConfig::default());
    let mut bufs = Bufs::new();
    let mrs = register(&h, &mut bufs);
    let mut g = Gate::pass();
    let (mut qa, mut qb) = new_pair(&h, None);
    connect_pair(&mut qa, &mut qb, OLD_PSN, &opts());
    let owned = pending(&h, &mut g, &mut qa, &mut qb, &mrs);
    let loc_before = mrs.loc.to_vec();
    let nums = destroy(&h, &mut g, qa, qb, what);
    let (mut qa, mut qb) = new_pair(&h, None);
    assert_eq!((qa.qp_num(), qb.qp_num()), nums, "{what}: the driver reuses the QP numbers");
    connect_pair(&mut qa, &mut qb, NEW_PSN, &opts());
    check_fresh(&h, &mut g, &mut qa, &mut qb, &mrs, None, what);
    let dma = h.world.borrow().stats().nics.iter().map(|n| n.dma.errors).sum::<u64>();
    assert_eq!(
        dma,
        0,
        "{what}: DMA errors at the hosts (the NIC reached memory the old QP no longer owned?)\n{}",
        h.diag()
    );
    if let Some(r) = owned {
        assert!(
            mrs.loc.to_vec()[r.clone()] == loc_before[r.clone()],
            "{what}: the old WR's local buffer {r:?} changed after its QP was destroyed"
        );
    }
    drop((qa, qb));
}

/// Waits until counter `c` of NIC `nic` (0 = A) reaches `n`, carrying frames through `g`.
fn until(h: &Carried, g: &mut Gate, nic: usize, c: u16, n: u32, what: &str) {
    let ctx = if nic == 0 { &h.a } else { &h.b };
    for _ in 0..400 {
        if ctx.counter(c).unwrap() >= n {
            return;
        }
        h.run(256, g);
    }
    panic!("{what}: {} of NIC {nic} did not reach {n}\n{}", counter::NAMES[c as usize], h.diag());
}

#[test]
fn after_an_rnr_wait() {
    reuse("RNR wait (timer code 0) armed", |h, g, qa, qb, mrs| {
        // B's RNR NAKs carry timer code 0 (655.36 ms): B is reconnected with min_rnr_timer 0.
        qb.modify(&QpAttr { qp_state: QpState::Reset, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        let ea = Endpoint { psn: OLD_PSN.0, ..qa.endpoint().unwrap() };
        connect_psn(qb, &ea, OLD_PSN.1, &ConnectOptions { min_rnr_timer: 0, ..opts() });
        qa.post_send_one(SendWr::send(9, mrs.src.sge(0..77).unwrap())).unwrap();
        until(h, g, 0, counter::RX_RNR_NAKS, 1, "RNR NAK");
        None
    });
}

#[test]
fn after_an_ack_timer_was_started() {
    reuse("ACK timer running", |h, g, qa, _qb, mrs| {
        g.set(|dir, _| if dir == 1 { Act::Drop } else { Act::Pass });
        qa.post_send_one(SendWr::rdma_write(9, mrs.src.sge(0..500).unwrap(), at(remote(mrs), 4096))).unwrap();
        until(h, g, 1, counter::TX_ACKS, 1, "the WRITE's ACK (lost)");
        None
    });
}

#[test]
fn after_a_read_partly_answered() {
    for sges in [1, 3] {
        reuse(&format!("READ outstanding, 1 of 4 responses delivered, {sges} SGE(s)"), |h, g, qa, _qb, mrs| {
            let mut n = 0;
            g.set(move |dir, f| {
                if dir == 1 && (0x0D..=0x10).contains(&f.opcode()) {
                    n += 1;
                    if n > 1 {
                        return Act::Hold;
                    }
                }
                Act::Pass
            });
            let list: Vec<_> = match sges {
                1 => vec![mrs.loc.sge(0..4000).unwrap()],
                _ => vec![
                    mrs.loc.sge(0..1500).unwrap(),
                    mrs.loc.sge(1600..3100).unwrap(),
                    mrs.loc.sge(3200..4200).unwrap(),
                ],
            };
            qa.post_send_one(SendWr::rdma_read(9, list[0], at(remote(mrs), 8192)).with_sg_list(&list).unwrap())
                .unwrap();
            until(h, g, 0, counter::RX_ROCE_OK, 1, "the first READ response");
            Some(0..4200)
        });
    }
}

#[test]
fn after_reads_outstanding_unanswered() {
    reuse("4 READs outstanding, none answered", |h, g, qa, _qb, mrs| {
        g.set(|dir, _| if dir == 1 { Act::Hold } else { Act::Pass });
        let wrs: Vec<_> = (0..4)
            .map(|i| {
                SendWr::rdma_read(9 + i as u64, mrs.loc.sge(i * 2048..i * 2048 + 2000).unwrap(), at(remote(mrs), 8192))
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 4, "4 READ requests");
        h.run(500, g);
        Some(0..8192)
    });
}

#[test]
fn after_an_atomic_outstanding() {
    reuse("atomic outstanding", |h, g, qa, _qb, mrs| {
        g.set(|dir, _| if dir == 1 { Act::Hold } else { Act::Pass });
        qa.post_send_one(SendWr::atomic_fetch_and_add(
            9,
            mrs.loc.sge(100..108).unwrap(),
            at(remote(mrs), WORD),
            1 << 40,
        ))
        .unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 1, "the atomic request");
        h.run(1_000, g);
        Some(100..108)
    });
}

#[test]
fn after_a_sequence_nak_from_the_responder() {
    reuse("sequence NAK sent by the responder", |h, g, qa, _qb, mrs| {
        // The WRITE's second packet is lost; B NAKs (held: A never resends).
        let mut n = 0;
        g.set(move |dir, _| {
            if dir == 0 {
                n += 1;
                if n == 2 {
                    return Act::Drop;
                }
                return Act::Pass;
            }
            Act::Hold
        });
        qa.post_send_one(SendWr::rdma_write(9, mrs.src.sge(0..4000).unwrap(), at(remote(mrs), 4096))).unwrap();
        until(h, g, 1, counter::TX_NAK_SEQ, 1, "the sequence NAK");
        None
    });
}

#[test]
fn after_a_send_half_received() {
    reuse("SEND open at the responder (FIRST received)", |h, g, qa, qb, mrs| {
        qb.post_recv_one(RecvWr::new(9000, mrs.brecv.sge(0..4096).unwrap())).unwrap();
        let mut n = 0;
        g.set(move |dir, _| {
            if dir == 0 {
                n += 1;
                return if n == 1 { Act::Pass } else { Act::Drop };
            }
            Act::Hold
        });
        qa.post_send_one(SendWr::send(9, mrs.src.sge(0..3000).unwrap())).unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 1, "the SEND FIRST");
        h.run(1_000, g);
        None
    });
}

#[test]
fn after_a_write_half_received() {
    reuse("WRITE open at the responder (FIRST and a MIDDLE received)", |h, g, qa, _qb, mrs| {
        let mut n = 0;
        g.set(move |dir, _| {
            if dir == 0 {
                n += 1;
                return if n <= 2 { Act::Pass } else { Act::Drop };
            }
            Act::Hold
        });
        qa.post_send_one(SendWr::rdma_write(9, mrs.src.sge(0..5000).unwrap(), at(remote(mrs), 10_000))).unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 2, "WRITE FIRST and MIDDLE");
        h.run(1_000, g);
        None
    });
}

#[test]
fn after_receives_were_posted() {
    reuse("8 receive WQEs posted", |h, g, _qa, qb, mrs| {
        let rws: Vec<_> =
            (0..8).map(|i| RecvWr::new(8000 + i as u64, mrs.brecv.sge(i * 512..i * 512 + 512).unwrap())).collect();
        qb.post_recv(&rws).unwrap();
        h.run(1_000, g);
        None
    });
}

#[test]
fn after_a_flush_in_progress() {
    reuse("flush of 24 WQEs in progress", |h, g, qa, _qb, mrs| {
        // 24 WRITEs whose ACKs are held, then ERR: destroyed while the flush runs.
        g.set(|dir, _| if dir == 1 { Act::Hold } else { Act::Pass });
        let wrs: Vec<_> = (0..24)
            .map(|i| SendWr::rdma_write(100 + i as u64, mrs.src.sge(0..64).unwrap(), at(remote(mrs), 4096)))
            .collect();
        qa.post_send(&wrs).unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 8, "the first WRITEs");
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        h.run(64, g);
        None
    });
}

#[test]
fn after_the_error_state() {
    reuse("error state (remote access error)", |h, g, qa, _qb, mrs| {
        let bad = RemoteAddr { addr: mrs.bmem.addr(), rkey: mrs.bmem.rkey() ^ 0x80 };
        qa.post_send(&[
            SendWr::rdma_write(9, mrs.src.sge(0..64).unwrap(), bad),
            SendWr::rdma_write(10, mrs.src.sge(0..64).unwrap(), at(remote(mrs), 0)),
        ])
        .unwrap();
        let w = h.wait(&h.ca, 2, 200_000, g, "the refused WRITE");
        assert_eq!(w.iter().map(|w| w.status).collect::<Vec<_>>(), vec![WcStatus::RemAccessErr, WcStatus::WrFlushErr]);
        None
    });
}

#[test]
fn after_an_srq_was_attached() {
    // The old B QP receives from an SRQ with receives posted; the new one (same number) has an
    // RQ of its own... and in `check_fresh` its SEND must land in its own receive.
    let h = Carried::new(SimConfig::default());
    let mut bufs = Bufs::new();
    let mrs = register(&h, &mut bufs);
    let mut g = Gate::pass();
    let srq = h.pb.create_srq(16, 1).unwrap();
    srq.post_recv(
        &(0..4)
            .map(|i| RecvWr::new(7000 + i as u64, mrs.brecv.sge(i * 256..i * 256 + 256).unwrap()))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let (mut qa, mut qb) = new_pair(&h, Some(&srq));
    connect_pair(&mut qa, &mut qb, OLD_PSN, &opts());
    qa.post_send_one(SendWr::send(9, mrs.src.sge(0..50).unwrap())).unwrap();
    let w = h.wait(&h.cb, 1, 100_000, &mut g, "a SEND through the SRQ");
    assert_eq!((w[0].wr_id, w[0].status), (7000, WcStatus::Success));
    h.wait(&h.ca, 1, 100_000, &mut g, "the SEND");
    let nums = destroy(&h, &mut g, qa, qb, "SRQ attached");
    let (mut qa, mut qb) = new_pair(&h, None);
    assert_eq!((qa.qp_num(), qb.qp_num()), nums);
    connect_pair(&mut qa, &mut qb, NEW_PSN, &opts());
    check_fresh(&h, &mut g, &mut qa, &mut qb, &mrs, None, "SRQ attached to the old QP");
    assert_eq!(srq.outstanding(), 3, "the SRQ's receives were not taken by the new QP");
    drop((qa, qb));
}

#[test]
fn after_an_srq_number_is_reused_for_a_qp() {
    // An SRQ with receives posted is destroyed; its number goes to a new QP (with an RQ of its
    // own), whose SENDs must use that RQ.
    let h = Carried::new(SimConfig::default());
    let mut bufs = Bufs::new();
    let mrs = register(&h, &mut bufs);
    let mut g = Gate::pass();
    let (mut qa, qb_keep) = new_pair(&h, None);
    let srq = h.pb.create_srq(16, 1).unwrap();
    let srqn = srq.srq_num();
    srq.post_recv(
        &(0..4)
            .map(|i| RecvWr::new(7000 + i as u64, mrs.brecv.sge(i * 256..i * 256 + 256).unwrap()))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    drop(srq);
    drop(qa);
    drop(qb_keep);
    let _ = drain(&h, &mut g, 5_000);
    // The lowest free numbers: A's QP, then on B the old QP's and the SRQ's.
    qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).set_max_send_sge(4).set_sq_sig_all(true).build().unwrap();
    let filler = h.pb.create_qp(&h.cb).set_max_send_wr(1).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(16).build().unwrap();
    assert_eq!(qb.qp_num(), srqn, "the SRQ's number goes to the new QP");
    connect_pair(&mut qa, &mut qb, NEW_PSN, &opts());
    check_fresh(&h, &mut g, &mut qa, &mut qb, &mrs, None, "an SRQ's number reused for a QP");
    drop((qa, qb, filler));
}

/// Same QP objects, RESET and reconnected instead of destroyed (ibv_modify_qp to RESET),
/// after an RNR wait and with READs outstanding.
#[test]
fn after_reset_without_destroy() {
    let h = Carried::new(SimConfig::default());
    let mut bufs = Bufs::new();
    let mrs = register(&h, &mut bufs);
    let mut g = Gate::pass();
    let (mut qa, mut qb) = new_pair(&h, None);
    let ea = Endpoint { psn: OLD_PSN.0, ..qa.endpoint().unwrap() };
    let eb = Endpoint { psn: OLD_PSN.1, ..qb.endpoint().unwrap() };
    connect_psn(&mut qa, &eb, OLD_PSN.0, &opts());
    connect_psn(&mut qb, &ea, OLD_PSN.1, &ConnectOptions { min_rnr_timer: 0, ..opts() });
    qa.post_send_one(SendWr::send(9, mrs.src.sge(0..77).unwrap())).unwrap();
    until(&h, &mut g, 0, counter::RX_RNR_NAKS, 1, "RNR NAK");
    g.set(|dir, _| if dir == 1 { Act::Hold } else { Act::Pass });
    for q in [&mut qa, &mut qb] {
        q.modify(&QpAttr { qp_state: QpState::Reset, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
    }
    g.discard();
    g.set(|_, _| Act::Pass);
    let late = drain(&h, &mut g, 10_000);
    assert!(late.iter().all(|(_, w)| w.status == WcStatus::WrFlushErr), "{late:?}");
    connect_pair(&mut qa, &mut qb, NEW_PSN, &opts());
    check_fresh(&h, &mut g, &mut qa, &mut qb, &mrs, None, "RESET (not destroyed) after an RNR wait");
}

#[test]
fn after_a_flush_that_finished() {
    reuse("ERR with 24 WQEs outstanding, every flush completed", |h, g, qa, _qb, mrs| {
        g.set(|dir, _| if dir == 1 { Act::Hold } else { Act::Pass });
        let wrs: Vec<_> = (0..24)
            .map(|i| SendWr::rdma_write(100 + i as u64, mrs.src.sge(0..64).unwrap(), at(remote(mrs), 4096)))
            .collect();
        qa.post_send(&wrs).unwrap();
        until(h, g, 1, counter::RX_ROCE_OK, 8, "the first WRITEs");
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        let w = h.wait(&h.ca, 24, 200_000, g, "the flush");
        assert_eq!(
            w.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (100..124).map(|i| (i, WcStatus::WrFlushErr)).collect::<Vec<_>>(),
            "the flush of 24 WQEs\n{}",
            h.diag()
        );
        None
    });
}
