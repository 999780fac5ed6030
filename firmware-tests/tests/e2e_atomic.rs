//! End-to-end RDMA atomics: two simulated hosts, the Verilated NIC RTL on each, driven through
//! the `rnic` verbs driver. A (NIC 0) posts IBV_WR_ATOMIC_CMP_AND_SWP / IBV_WR_ATOMIC_FETCH_AND_ADD
//! against B's (NIC 1) memory. System tests of the RTL: A's NIC sends COMPARE SWAP (0x13) /
//! FETCH ADD (0x14) with an AtomicETH, B's NIC performs the read-modify-write on its host
//! memory by DMA and answers with an ATOMIC ACKNOWLEDGE (0x12, AETH + AtomicAckETH), A's NIC
//! writes the original value into the local SGE and completes the WQE; the driver does no NIC
//! work.
//!
//! What they pin (IBTA Vol 1 9.4.5, 9.5, 9.7.5.1.4 (duplicate atomics), 9.7.4.1.5,
//! 11.4.1.1; ibv_post_send(3), ibv_poll_cq(3); rxe semantics):
//! - FETCH_AND_ADD adds once (mod 2^64) and returns the original value; CMP_AND_SWP swaps iff
//!   all 64 bits compare equal, and returns the original either way; the target is a
//!   little-endian u64 in host memory, the original lands little-endian in the 8-byte local
//!   SGE; the completion is IBV_WC_FETCH_ADD / IBV_WC_COMP_SWAP with `byte_len` 8; no other
//!   byte changes on either side; the last 8 bytes of a region are a valid target;
//! - 100 atomics in flight on one QP execute once each, in order: the originals are exactly
//!   init + k·add, and on the wire no more than `max_rd_atomic` are waiting for their
//!   ATOMIC ACKNOWLEDGE at any time (1, 4 and 16, each reached); 300 in a row (past 128 and
//!   256) all complete;
//! - atomics interleaved with WRITEs and READs on one QP keep RC order (a READ after an atomic
//!   sees its result, an atomic after a WRITE sees the written value); unsignaled atomics
//!   still return their originals;
//! - a bad rkey, a region of another PD, a region or QP without REMOTE_ATOMIC, a target past
//!   the end of or before the region complete with IBV_WC_REM_ACCESS_ERR (NAK remote access
//!   error), a misaligned target with IBV_WC_REM_INV_REQ_ERR (NAK invalid request); memory on
//!   both sides is untouched;
//! - a local SGE that is not 8 bytes completes with IBV_WC_LOC_LEN_ERR, a local region without
//!   LOCAL_WRITE, a bad lkey or an SGE outside its region with IBV_WC_LOC_PROT_ERR, before
//!   anything is sent;
//! - a lost ATOMIC ACKNOWLEDGE makes the requester resend the request after its local ACK
//!   timeout; the responder answers the duplicate from the saved original and does not
//!   execute it again (also with several atomics in flight); a lost request is resent and
//!   executed once;
//! - a capture of COMPARE SWAP, FETCH ADD, ATOMIC ACKNOWLEDGE and NAKs is clean in tshark,
//!   whose dissector reads back the AtomicETH (VA, R_Key, Swap/Add Data, Compare Data) and
//!   AtomicAckETH values the work requests carried, and every ICRC verifies in scapy.
mod common;

use common::frames::{self, ATOMIC_ACKNOWLEDGE, COMPARE_SWAP, FETCH_ADD};
use common::{delta, nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, ConnectOptions, Counters, MemoryRegion, Mtu, QpState, QueuePair, RemoteAddr, SendFlags, SendWr, Sge,
    WcOpcode, WcStatus, WorkCompletion,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

/// Local memory's initial content (and the guard around every SGE).
const GUARD: u8 = 0xEE;
/// Length of the remote region of the single-atomic cases, bytes.
const REMOTE_LEN: usize = 64;
/// Offset of the target u64 in the remote region.
const SLOT: u64 = 16;
/// Length of the local region of the single-atomic cases, bytes.
const LOCAL_LEN: usize = 32;
/// Offset of the 8-byte local SGE.
const SGE_AT: usize = 8;
/// wr_id of the single atomic.
const WR: u64 = 0xA70;

fn hosts_dropping(drops: Vec<(usize, u64)>) -> Hosts {
    Hosts::new(SimConfig {
        faults: rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() },
        ..SimConfig::default()
    })
}

fn hosts() -> Hosts {
    hosts_dropping(Vec::new())
}

fn remote_all() -> AccessFlags {
    AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC
}

/// Both QPs grant every remote access, 4 READs/atomics in flight each way, a local ACK
/// timeout of 4.096 µs × 2^8 ≈ 1 ms (262 144 cycles) for the loss tests.
fn opts() -> ConnectOptions {
    ConnectOptions {
        path_mtu: Mtu::Mtu1024,
        access: remote_all(),
        max_rd_atomic: 4,
        max_dest_rd_atomic: 4,
        timeout: 8,
        ..ConnectOptions::default()
    }
}

/// Two connected RC QPs A → B with `o`, on the hosts' CQs.
fn qps<'mr>(h: &Hosts, o: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(32).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, o).unwrap();
    qb.connect_with(&ea, o).unwrap();
    (qa, qb)
}

/// `len` bytes of `buf` from its first 8-byte-aligned address (allocate 7 bytes more), so
/// offsets that are multiples of 8 are aligned virtual addresses.
fn aligned(buf: &mut [u8], len: usize) -> &mut [u8] {
    let off = buf.as_ptr().align_offset(8);
    &mut buf[off..off + len]
}

/// The little-endian u64 at `off` of a region.
fn u64_at(mr: &MemoryRegion<'_>, off: usize) -> u64 {
    let mut b = [0u8; 8];
    mr.read_at(off, &mut b).unwrap();
    u64::from_le_bytes(b)
}

/// An atomic operation and its operands.
#[derive(Clone, Copy, Debug)]
enum Op {
    FetchAdd(u64),
    CmpSwap { compare: u64, swap: u64 },
}

impl Op {
    fn wr<'mr>(self, wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr) -> SendWr<'mr> {
        match self {
            Op::FetchAdd(add) => SendWr::atomic_fetch_and_add(wr_id, sge, remote, add),
            Op::CmpSwap { compare, swap } => SendWr::atomic_cmp_and_swp(wr_id, sge, remote, compare, swap),
        }
    }

    fn wc_opcode(self) -> WcOpcode {
        match self {
            Op::FetchAdd(_) => WcOpcode::FetchAdd,
            Op::CmpSwap { .. } => WcOpcode::CompSwap,
        }
    }

    fn wire_opcode(self) -> u8 {
        match self {
            Op::FetchAdd(_) => FETCH_ADD,
            Op::CmpSwap { .. } => COMPARE_SWAP,
        }
    }

    /// The target's value after the operation on `v` (ibverbs semantics).
    fn apply(self, v: u64) -> u64 {
        match self {
            Op::FetchAdd(add) => v.wrapping_add(add),
            Op::CmpSwap { compare, swap } => {
                if v == compare {
                    swap
                } else {
                    v
                }
            }
        }
    }
}

/// One atomic from A against B, with everything a case may vary.
struct Case {
    op: Op,
    /// The target's value before the atomic.
    init: u64,
    /// Length of B's region.
    remote_len: usize,
    /// Target = region address + `offset` (wrapping), rkey ^ `rkey_xor`.
    offset: u64,
    rkey_xor: u32,
    remote_access: AccessFlags,
    /// Access B's QP grants.
    qp_access: AccessFlags,
    /// B's region belongs to another PD than B's QP.
    remote_in_other_pd: bool,
    local_access: AccessFlags,
    /// The local SGE: `sge_len` bytes at `sge_at` of A's region, lkey ^ `lkey_xor`.
    sge_at: usize,
    sge_len: u32,
    lkey_xor: u32,
    drops: Vec<(usize, u64)>,
}

impl Case {
    fn new(op: Op, init: u64) -> Self {
        Case {
            op,
            init,
            remote_len: REMOTE_LEN,
            offset: SLOT,
            rkey_xor: 0,
            remote_access: AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
            qp_access: remote_all(),
            remote_in_other_pd: false,
            local_access: AccessFlags::LOCAL_WRITE,
            sge_at: SGE_AT,
            sge_len: 8,
            lkey_xor: 0,
            drops: Vec::new(),
        }
    }

    /// B's region before the atomic: a pattern, with `init` (little-endian) at the target if
    /// the target lies inside.
    fn remote_image(&self) -> Vec<u8> {
        let mut m = pattern(0xA7, self.remote_len);
        if let Some(t) =
            usize::try_from(self.offset).ok().filter(|&o| o.checked_add(8).is_some_and(|e| e <= self.remote_len))
        {
            m[t..t + 8].copy_from_slice(&self.init.to_le_bytes());
        }
        m
    }
}

/// What one [`Case`] did.
struct Run {
    wc: WorkCompletion,
    qpn: u32,
    state: QpState,
    stray: u64,
    /// A's and B's regions after the completion.
    local: Vec<u8>,
    remote: Vec<u8>,
    /// Counters of A and B (before, after).
    a: (Counters, Counters),
    b: (Counters, Counters),
    diag: String,
}

impl Run {
    fn da(&self, i: u16) -> u32 {
        delta(&self.a.1, &self.a.0, i)
    }
    fn db(&self, i: u16) -> u32 {
        delta(&self.b.1, &self.b.0, i)
    }
}

fn run(c: &Case) -> Run {
    let h = hosts_dropping(c.drops.clone());
    let mut rbuf = vec![0u8; c.remote_len + 8];
    let mut lbuf = vec![GUARD; LOCAL_LEN + 8];
    let other_pd = h.b.alloc_pd().unwrap();
    let remote_mem = aligned(&mut rbuf, c.remote_len);
    remote_mem.copy_from_slice(&c.remote_image());
    let local_mr = h.pa.register(aligned(&mut lbuf, LOCAL_LEN), c.local_access).unwrap();
    let remote_pd = if c.remote_in_other_pd { &other_pd } else { &h.pb };
    let remote_mr = remote_pd.register(remote_mem, c.remote_access).unwrap();
    let (mut qa, qb) = qps(&h, &ConnectOptions { access: c.qp_access, ..opts() });
    let buf = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
    let remote = RemoteAddr { addr: buf.addr.wrapping_add(c.offset), rkey: buf.rkey ^ c.rkey_xor };
    let sge = if c.lkey_xor == 0 && c.sge_at + c.sge_len as usize <= LOCAL_LEN {
        local_mr.sge(c.sge_at..c.sge_at + c.sge_len as usize).unwrap()
    } else {
        Sge::raw(local_mr.addr() + c.sge_at as u64, c.sge_len, local_mr.lkey() ^ c.lkey_xor)
    };
    let (a0, b0) = h.counters();
    qa.post_send_one(c.op.wr(WR, sge, remote).signaled(true)).unwrap();
    let wc = h.wait(&h.ca, 1, 3_000_000)[0];
    h.settle(3_000);
    let (a1, b1) = h.counters();
    Run {
        wc,
        qpn: qa.qp_num(),
        state: qa.state(),
        stray: qa.stray_completions(),
        local: local_mr.to_vec(),
        remote: remote_mr.to_vec(),
        a: (a0, a1),
        b: (b0, b1),
        diag: h.diag(),
    }
}

/// Runs a case that must succeed and checks the completion, both memories (the original at
/// the local SGE, the operation's result at the target, nothing else changed) and that one
/// request and one ATOMIC ACKNOWLEDGE crossed the wire with nothing dropped or resent.
fn succeeds(c: &Case) {
    let r = run(c);
    let what = format!("{:?} on {:#x}", c.op, c.init);
    assert_eq!(
        (r.wc.wr_id, r.wc.status, r.wc.opcode, r.wc.byte_len, r.wc.qp_num),
        (WR, WcStatus::Success, c.op.wc_opcode(), 8, r.qpn),
        "{what}: {:?}\n{}",
        r.wc,
        r.diag
    );
    let mut want_local = vec![GUARD; LOCAL_LEN];
    want_local[c.sge_at..c.sge_at + 8].copy_from_slice(&c.init.to_le_bytes());
    assert_eq!(r.local, want_local, "{what}: the original value (little-endian) at the local SGE, nothing else");
    let mut want_remote = c.remote_image();
    let t = c.offset as usize;
    want_remote[t..t + 8].copy_from_slice(&c.op.apply(c.init).to_le_bytes());
    assert_eq!(r.remote, want_remote, "{what}: the result at the target, nothing else");
    assert_eq!(
        (r.da(counter::TX_REQUESTS), r.db(counter::RX_ROCE_OK)),
        (1, 1),
        "{what}: one request, accepted\n{}",
        r.diag
    );
    assert_eq!(r.db(counter::TX_FRAMES), 1, "{what}: one ATOMIC ACKNOWLEDGE\n{}", r.diag);
    assert_eq!(r.da(counter::CQES), 1);
    for i in [
        counter::DROP_ICRC,
        counter::DROP_MALFORMED,
        counter::DROP_KEY,
        counter::DROP_PSN,
        counter::DROP_INV_REQ,
        counter::RETRANSMITS,
        counter::TX_NAKS,
    ] {
        assert_eq!(r.da(i), 0, "{what}: requester {}\n{}", counter::NAMES[i as usize], r.diag);
        assert_eq!(r.db(i), 0, "{what}: responder {}\n{}", counter::NAMES[i as usize], r.diag);
    }
    assert_eq!((r.state, r.stray), (QpState::Rts, 0));
}

#[test]
fn fetch_and_add_returns_the_original_and_adds_once() {
    succeeds(&Case::new(Op::FetchAdd(0x10), 0x1111_2222_3333_4444));
    succeeds(&Case::new(Op::FetchAdd(0), 0x0123_4567_89AB_CDEF));
    succeeds(&Case::new(Op::FetchAdd(0x8000_0000_0000_0001), 0x7FFF_FFFF_0000_0000));
}

#[test]
fn fetch_and_add_wraps_modulo_2_64() {
    succeeds(&Case::new(Op::FetchAdd(3), u64::MAX - 1));
    // Adding 2^64 - 1 subtracts one.
    succeeds(&Case::new(Op::FetchAdd(u64::MAX), 0));
    // A carry out of the low 32 bits reaches the high ones.
    succeeds(&Case::new(Op::FetchAdd(1), 0x0000_0001_FFFF_FFFF));
}

#[test]
fn cmp_and_swp_with_a_match_swaps() {
    let init = 0xDEAD_BEEF_0BAD_F00D;
    succeeds(&Case::new(Op::CmpSwap { compare: init, swap: 0x1234_5678_9ABC_DEF0 }, init));
    succeeds(&Case::new(Op::CmpSwap { compare: 0, swap: u64::MAX }, 0));
    succeeds(&Case::new(Op::CmpSwap { compare: u64::MAX, swap: u64::MAX }, u64::MAX));
}

#[test]
fn cmp_and_swp_with_a_mismatch_changes_nothing_and_returns_the_original() {
    let init = 0xDEAD_BEEF_0BAD_F00D;
    // All 64 bits take part: a compare that differs in bit 0, 31, 32 or 63 alone does not swap.
    for bit in [0, 31, 32, 63] {
        succeeds(&Case::new(Op::CmpSwap { compare: init ^ 1 << bit, swap: 0x5555_5555_5555_5555 }, init));
    }
}

/// [va, va + 8) = the last 8 bytes of the region is inside it, and so is its first u64.
#[test]
fn the_first_and_last_u64_of_a_region_are_valid_targets() {
    succeeds(&Case { offset: (REMOTE_LEN - 8) as u64, ..Case::new(Op::FetchAdd(5), 77) });
    succeeds(&Case { offset: 0, ..Case::new(Op::CmpSwap { compare: 77, swap: 78 }, 77) });
}

/// Runs a case the NIC must refuse and checks the status, the QP's ERR state and that neither
/// memory changed.
fn refused(c: &Case, status: WcStatus) -> Run {
    let r = run(c);
    assert_eq!((r.wc.wr_id, r.wc.status, r.wc.qp_num), (WR, status, r.qpn), "{:?}\n{}", r.wc, r.diag);
    assert_eq!(r.state, QpState::Err);
    assert!(r.local.iter().all(|&b| b == GUARD), "a refused atomic wrote local memory: {:02x?}", r.local);
    assert_eq!(r.remote, c.remote_image(), "a refused atomic changed remote memory");
    assert_eq!(r.stray, 0);
    r
}

/// A case the responder must answer with NAK remote access error.
fn remote_access_error(c: &Case) {
    let r = refused(c, WcStatus::RemAccessErr);
    assert_eq!(r.db(counter::DROP_KEY), 1, "{}", r.diag);
    assert_eq!(r.db(counter::TX_NAKS), 1, "one NAK\n{}", r.diag);
    assert_eq!(r.da(counter::RX_NAK_REM_ACCESS), 1, "{}", r.diag);
}

#[test]
fn atomic_with_a_bad_rkey_is_rem_access_err() {
    remote_access_error(&Case { rkey_xor: 0x55, ..Case::new(Op::FetchAdd(1), 9) });
}

#[test]
fn atomic_on_a_region_of_another_pd_is_rem_access_err() {
    remote_access_error(&Case { remote_in_other_pd: true, ..Case::new(Op::FetchAdd(1), 9) });
}

#[test]
fn atomic_on_a_region_without_remote_atomic_is_rem_access_err() {
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    remote_access_error(&Case { remote_access: access, ..Case::new(Op::FetchAdd(1), 9) });
    remote_access_error(&Case { remote_access: access, ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) });
}

#[test]
fn atomic_on_a_qp_without_remote_atomic_is_rem_access_err() {
    let access = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    remote_access_error(&Case { qp_access: access, ..Case::new(Op::FetchAdd(1), 9) });
    remote_access_error(&Case { qp_access: access, ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) });
}

#[test]
fn atomic_past_the_end_of_the_region_is_rem_access_err() {
    // Right after the region.
    remote_access_error(&Case { offset: REMOTE_LEN as u64, ..Case::new(Op::FetchAdd(1), 9) });
    // Aligned, but straddling the end of a 60-byte region: [56, 64).
    remote_access_error(&Case { remote_len: 60, offset: 56, ..Case::new(Op::FetchAdd(1), 9) });
    // Before the region.
    remote_access_error(&Case { offset: 8u64.wrapping_neg(), ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) });
}

#[test]
fn misaligned_atomic_is_rem_inv_req_err() {
    for offset in [SLOT + 4, SLOT + 1] {
        let r = refused(&Case { offset, ..Case::new(Op::FetchAdd(1), 9) }, WcStatus::RemInvReqErr);
        assert_eq!(r.db(counter::TX_NAKS), 1, "one NAK invalid request\n{}", r.diag);
        assert_eq!(r.da(counter::RX_NAK_INV_REQ), 1, "{}", r.diag);
    }
    refused(&Case { offset: SLOT + 2, ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) }, WcStatus::RemInvReqErr);
}

/// A case the requester must refuse before sending anything.
fn local_error(c: &Case, status: WcStatus) {
    let r = refused(c, status);
    assert_eq!(r.da(counter::TX_REQUESTS), 0, "nothing is sent\n{}", r.diag);
    assert_eq!(r.db(counter::RX_FRAMES), 0, "nothing arrives\n{}", r.diag);
    assert_eq!(r.da(counter::LOCAL_ERRORS), 1, "{}", r.diag);
}

#[test]
fn local_sge_that_is_not_8_bytes_is_loc_len_err() {
    local_error(&Case { sge_len: 4, ..Case::new(Op::FetchAdd(1), 9) }, WcStatus::LocLenErr);
    local_error(&Case { sge_len: 16, ..Case::new(Op::FetchAdd(1), 9) }, WcStatus::LocLenErr);
    local_error(&Case { sge_len: 4, ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) }, WcStatus::LocLenErr);
}

#[test]
fn local_region_without_local_write_is_loc_prot_err() {
    local_error(
        &Case { local_access: AccessFlags::REMOTE_READ, ..Case::new(Op::FetchAdd(1), 9) },
        WcStatus::LocProtErr,
    );
    local_error(
        &Case { local_access: AccessFlags::empty(), ..Case::new(Op::CmpSwap { compare: 9, swap: 10 }, 9) },
        WcStatus::LocProtErr,
    );
}

#[test]
fn bad_lkey_or_sge_outside_its_region_is_loc_prot_err() {
    local_error(&Case { lkey_xor: 0x40, ..Case::new(Op::FetchAdd(1), 9) }, WcStatus::LocProtErr);
    local_error(&Case { sge_at: LOCAL_LEN - 4, ..Case::new(Op::FetchAdd(1), 9) }, WcStatus::LocProtErr);
}

/// 100 FETCH_AND_ADDs posted at once on one QP with `max_rd_atomic` = `limit`: each completes
/// in order with the original its place in the sequence implies (init + k·add, wrapping past
/// 2^64), the target ends at init + 100·add, and on the wire at most `limit` atomics wait for
/// their ATOMIC ACKNOWLEDGE at any time, with the limit reached. The link's latency is 5 µs
/// each way, so a round trip (2 500 cycles) is far longer than the time to issue 16 requests
/// and the window fills whenever the requester lets it.
fn many_in_flight(limit: u8) {
    let n = 100usize;
    let (init, add) = (0xFFFF_FFF0_1234_5678u64, 0x1_0000_0001u64);
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("inflight.pcap");
    let h = Hosts::new(SimConfig {
        link: rnic_sim::LinkConfig { latency_ns: 5_000, ..Default::default() },
        ..SimConfig::default()
    });
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut rbuf = vec![0u8; 64 + 8];
    let mut lbuf = vec![GUARD; n * 8 + 8];
    {
        let remote_mem = aligned(&mut rbuf, 64);
        remote_mem[..8].copy_from_slice(&init.to_le_bytes());
        let local_mr = h.pa.register(aligned(&mut lbuf, n * 8), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let cq = h.a.create_cq(128).unwrap();
        let mut qa = h.pa.create_qp(&cq).set_max_send_wr(128).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
        let o = ConnectOptions { max_rd_atomic: limit, max_dest_rd_atomic: limit, ..opts() };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&remote_mr));
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        let target = eb.buffer.unwrap().at(0);
        let wrs: Vec<SendWr<'_>> = (0..n)
            .map(|i| {
                SendWr::atomic_fetch_and_add(i as u64, local_mr.sge(i * 8..i * 8 + 8).unwrap(), target, add)
                    .signaled(true)
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&cq, n, 5_000_000);
        assert_eq!(
            wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            (0..n as u64).collect::<Vec<_>>(),
            "completions in order"
        );
        assert!(
            wcs.iter().all(|w| (w.status, w.opcode, w.byte_len) == (WcStatus::Success, WcOpcode::FetchAdd, 8)),
            "limit {limit}: {wcs:?}\n{}",
            h.diag()
        );
        let got: Vec<u64> = (0..n).map(|i| u64_at(&local_mr, i * 8)).collect();
        let want: Vec<u64> = (0..n as u64).map(|k| init.wrapping_add(k.wrapping_mul(add))).collect();
        assert_eq!(got, want, "limit {limit}: the originals, in posting order");
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "limit {limit}: each original returned once");
        assert_eq!(
            u64_at(&remote_mr, 0),
            init.wrapping_add(add.wrapping_mul(n as u64)),
            "limit {limit}: added exactly {n} times"
        );
        assert!(remote_mr.to_vec()[8..].iter().all(|&b| b == 0), "limit {limit}: bytes after the target");
        h.settle(2_000);
        let (ca, cb) = h.counters();
        assert_eq!((ca.get("tx_requests"), ca.get("retransmits")), (Some(n as u32), Some(0)), "{}", h.diag());
        assert_eq!(cb.get("rx_duplicates"), Some(0), "{}", h.diag());
    }
    h.world.borrow_mut().finish().unwrap();
    let (mut open, mut most, mut acks) = (0i32, 0i32, 0);
    for f in frames::read(&pcap) {
        match f.opcode {
            COMPARE_SWAP | FETCH_ADD => open += 1,
            ATOMIC_ACKNOWLEDGE => {
                open -= 1;
                acks += 1;
            }
            other => panic!("unexpected opcode {other:#x}"),
        }
        most = most.max(open);
    }
    assert_eq!(acks, n, "one ATOMIC ACKNOWLEDGE per atomic");
    assert_eq!(most, i32::from(limit), "atomics waiting for their ACK at once with max_rd_atomic {limit}");
}

#[test]
fn hundred_fetch_and_adds_in_flight_one_at_a_time() {
    many_in_flight(1);
}

#[test]
fn hundred_fetch_and_adds_in_flight_four_at_a_time() {
    many_in_flight(4);
}

#[test]
fn hundred_fetch_and_adds_in_flight_sixteen_at_a_time() {
    many_in_flight(16);
}

/// 300 atomics on one QP in chunks of 16 (alternating FETCH_AND_ADD and CMP_AND_SWP chunks):
/// past 128 and 256, where counters of 7 or 8 bits would wrap, every atomic goes out once,
/// completes once with the right original, and the target ends at the value of 300
/// single executions.
#[test]
fn three_hundred_atomics_in_a_row() {
    let n = 300usize;
    let h = hosts();
    let mut rbuf = vec![0u8; 8 + 8];
    let mut lbuf = vec![GUARD; n * 8 + 8];
    {
        let remote_mem = aligned(&mut rbuf, 8);
        let local_mr = h.pa.register(aligned(&mut lbuf, n * 8), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let t = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(0);
        // Atomic i moves the target from i to i + 1, either way.
        for chunk in (0..n as u64).collect::<Vec<_>>().chunks(16) {
            let wrs: Vec<SendWr<'_>> = chunk
                .iter()
                .map(|&i| {
                    let sge = local_mr.sge(i as usize * 8..i as usize * 8 + 8).unwrap();
                    let op = if (i / 16) % 2 == 0 { Op::FetchAdd(1) } else { Op::CmpSwap { compare: i, swap: i + 1 } };
                    op.wr(i, sge, t).signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, wrs.len(), 500_000);
            assert_eq!(wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(), chunk.to_vec(), "{}", h.diag());
            assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}\n{}", h.diag());
        }
        assert_eq!((0..n).map(|i| u64_at(&local_mr, i * 8)).collect::<Vec<_>>(), (0..n as u64).collect::<Vec<_>>());
        assert_eq!(u64_at(&remote_mr, 0), n as u64);
        let (ca, cb) = h.counters();
        assert_eq!(
            (ca.get("tx_requests"), ca.get("retransmits"), cb.get("rx_roce_ok")),
            (Some(n as u32), Some(0), Some(n as u32)),
            "{}",
            h.diag()
        );
    }
}

/// WRITE, atomics and READs of one u64 on one QP, posted back to back: they complete in posting
/// order and each sees the effect of every one before it (RC ordering at the responder, IBTA
/// Vol 1 9.5): the FETCH_AND_ADD after a WRITE returns the written value, the READ after an
/// atomic reads its result, the CMP_AND_SWP after a FETCH_AND_ADD compares with the sum.
#[test]
fn atomics_interleaved_with_writes_and_reads_keep_order() {
    let h = hosts();
    let (v0, a, s, v1) = (0x0102_0304_0506_0708u64, 0x10u64, 0xCAFE_F00D_DEAD_BEEFu64, 0x7777_0000_0000_0001u64);
    let mut src_buf = vec![0u8; 16 + 8];
    let mut orig_buf = vec![GUARD; 24 + 8];
    let mut back_buf = vec![GUARD; 24 + 8];
    let mut rbuf = vec![0u8; 64 + 8];
    {
        let src_mem = aligned(&mut src_buf, 16);
        src_mem[..8].copy_from_slice(&v0.to_le_bytes());
        src_mem[8..].copy_from_slice(&v1.to_le_bytes());
        let src = h.pa.register(src_mem, AccessFlags::empty()).unwrap();
        let orig = h.pa.register(aligned(&mut orig_buf, 24), AccessFlags::LOCAL_WRITE).unwrap();
        let back = h.pa.register(aligned(&mut back_buf, 24), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(aligned(&mut rbuf, 64), AccessFlags::LOCAL_WRITE | remote_all()).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let t = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(8);
        let wrs = [
            SendWr::rdma_write(0, src.sge(0..8).unwrap(), t),
            SendWr::atomic_fetch_and_add(1, orig.sge(0..8).unwrap(), t, a),
            SendWr::rdma_read(2, back.sge(0..8).unwrap(), t),
            // A WRITE or atomic may overtake an earlier READ of the same bytes at the
            // responder (IBTA Vol 1 9.5, READ relaxed ordering): IBV_SEND_FENCE is how a
            // program orders them (ibv_post_send(3)).
            SendWr::atomic_cmp_and_swp(3, orig.sge(8..16).unwrap(), t, v0 + a, s).with_flags(SendFlags::FENCE),
            SendWr::rdma_read(4, back.sge(8..16).unwrap(), t),
            SendWr::rdma_write(5, src.sge(8..16).unwrap(), t).with_flags(SendFlags::FENCE),
            SendWr::atomic_fetch_and_add(6, orig.sge(16..24).unwrap(), t, 1),
            SendWr::rdma_read(7, back.sge(16..24).unwrap(), t),
        ]
        .map(|w| w.signaled(true));
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 8, 1_000_000);
        use WcOpcode::*;
        let got: Vec<(u64, WcStatus, WcOpcode)> = wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
        let want: Vec<(u64, WcStatus, WcOpcode)> =
            [RdmaWrite, FetchAdd, RdmaRead, CompSwap, RdmaRead, RdmaWrite, FetchAdd, RdmaRead]
                .into_iter()
                .enumerate()
                .map(|(i, op)| (i as u64, WcStatus::Success, op))
                .collect();
        assert_eq!(got, want, "{}", h.diag());
        let originals: Vec<u64> = (0..3).map(|i| u64_at(&orig, i * 8)).collect();
        let reads: Vec<u64> = (0..3).map(|i| u64_at(&back, i * 8)).collect();
        assert_eq!(originals, [v0, v0 + a, v1], "each atomic saw the WRITE or atomic before it");
        assert_eq!(reads, [v0 + a, s, v1 + 1], "each READ saw the atomic before it");
        assert_eq!(u64_at(&remote_mr, 8), v1 + 1);
        let rest = remote_mr.to_vec();
        assert!(rest[..8].iter().chain(&rest[16..]).all(|&b| b == 0), "bytes around the target");
    }
}

/// Unsignaled atomics produce no completion but still return their originals; the signaled
/// one after them retires them all.
#[test]
fn unsignaled_atomics_still_return_their_originals() {
    let h = hosts();
    let init = 1000u64;
    let mut lbuf = vec![GUARD; 32 + 8];
    let mut rbuf = vec![0u8; 8 + 8];
    {
        let remote_mem = aligned(&mut rbuf, 8);
        remote_mem.copy_from_slice(&init.to_le_bytes());
        let local_mr = h.pa.register(aligned(&mut lbuf, 32), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let t = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(0);
        let wrs: Vec<SendWr<'_>> = (0..4)
            .map(|i| {
                SendWr::atomic_fetch_and_add(i, local_mr.sge(i as usize * 8..i as usize * 8 + 8).unwrap(), t, 7)
                    .signaled(i == 3)
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 1, 500_000);
        assert_eq!((wcs[0].wr_id, wcs[0].status, wcs[0].opcode), (3, WcStatus::Success, WcOpcode::FetchAdd));
        h.settle(5_000);
        let mut more = [WorkCompletion::default(); 4];
        assert_eq!(h.ca.poll(&mut more).unwrap(), 0, "unsignaled atomics completed: {:?}", more[0]);
        assert_eq!(qa.outstanding(), 0);
        assert_eq!((0..4).map(|i| u64_at(&local_mr, i * 8)).collect::<Vec<_>>(), [1000, 1007, 1014, 1021]);
        assert_eq!(u64_at(&remote_mr, 0), 1028);
    }
}

/// The requests (COMPARE SWAP / FETCH ADD) and ATOMIC ACKNOWLEDGEs of a capture.
fn atomic_frames(pcap: &std::path::Path) -> (Vec<frames::Frame>, Vec<frames::Frame>) {
    let all = frames::read(pcap);
    let req = all.iter().filter(|f| matches!(f.opcode, COMPARE_SWAP | FETCH_ADD)).copied().collect();
    let ack = all.iter().filter(|f| f.opcode == ATOMIC_ACKNOWLEDGE).copied().collect();
    (req, ack)
}

/// One atomic `op` on `init` while the wire drops the frames `drops`, then a FETCH_AND_ADD of 1
/// (the QP goes on normally). Checks both completions, the originals and the target (each
/// atomic executed once); returns the capture's atomic frames and the counters of A and B.
fn lossy_atomic(
    op: Op,
    init: u64,
    drops: Vec<(usize, u64)>,
) -> (Vec<frames::Frame>, Vec<frames::Frame>, Counters, Counters) {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("lossy.pcap");
    let h = hosts_dropping(drops);
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut lbuf = vec![GUARD; 16 + 8];
    let mut rbuf = vec![0u8; 8 + 8];
    let counters;
    {
        let remote_mem = aligned(&mut rbuf, 8);
        remote_mem.copy_from_slice(&init.to_le_bytes());
        let local_mr = h.pa.register(aligned(&mut lbuf, 16), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let t = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(0);
        qa.post_send_one(op.wr(1, local_mr.sge(0..8).unwrap(), t).signaled(true)).unwrap();
        let wc = h.wait(&h.ca, 1, 3_000_000)[0];
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.byte_len),
            (1, WcStatus::Success, op.wc_opcode(), 8),
            "{wc:?}\n{}",
            h.diag()
        );
        assert_eq!(u64_at(&local_mr, 0), init, "{op:?}: the original, not the result of a second execution");
        let once = op.apply(init);
        assert_eq!(u64_at(&remote_mr, 0), once, "{op:?} executed exactly once");
        qa.post_send_one(SendWr::atomic_fetch_and_add(2, local_mr.sge(8..16).unwrap(), t, 1).signaled(true)).unwrap();
        let wc = h.wait(&h.ca, 1, 3_000_000)[0];
        assert_eq!((wc.wr_id, wc.status), (2, WcStatus::Success), "{wc:?}\n{}", h.diag());
        assert_eq!(u64_at(&local_mr, 8), once, "the next atomic sees the first one's result");
        assert_eq!(u64_at(&remote_mr, 0), once.wrapping_add(1));
        h.settle(3_000);
        counters = h.counters();
    }
    h.world.borrow_mut().finish().unwrap();
    let (req, ack) = atomic_frames(&pcap);
    (req, ack, counters.0, counters.1)
}

/// B's first frame, the ATOMIC ACKNOWLEDGE, is lost: A resends the request after its local ACK
/// timeout, B recognises the duplicate and answers from the saved original without executing
/// the atomic again. A CMP_AND_SWP executed twice would return its own swap value (and a
/// FETCH_AND_ADD add twice), so the values prove the single execution; the capture shows the
/// request twice with the same PSN and AtomicETH, and the ACK twice with the same original.
#[test]
fn lost_atomic_ack_is_answered_from_the_saved_original() {
    for op in [Op::FetchAdd(0x100), Op::CmpSwap { compare: 0x4242, swap: 0x4343 }] {
        let init = 0x4242;
        let (req, ack, ca, cb) = lossy_atomic(op, init, vec![(1, 0)]);
        assert_eq!(
            (ca.get("timeouts"), ca.get("retransmits")),
            (Some(1), Some(1)),
            "{op:?}: {:?} {:?}",
            nonzero(&ca),
            nonzero(&cb)
        );
        assert_eq!(cb.get("rx_duplicates"), Some(1), "{op:?}: the responder saw the duplicate: {:?}", nonzero(&cb));
        assert_eq!(req.len(), 3, "{op:?}: the first request twice, then the second: {req:x?}");
        assert_eq!(
            (req[0].opcode, req[0].psn, req[0].atomic_eth),
            (op.wire_opcode(), req[1].psn, req[1].atomic_eth),
            "{req:x?}"
        );
        assert_eq!(req[1], req[0], "{op:?}: the resent request is the same packet");
        assert_eq!(ack.len(), 3, "{op:?}: the first ACK twice, then the second: {ack:x?}");
        assert_eq!((ack[0].psn, ack[1].psn, ack[2].psn), (req[0].psn, req[0].psn, req[2].psn));
        assert_eq!(
            (ack[0].orig_remote, ack[1].orig_remote),
            (Some(init), Some(init)),
            "{op:?}: the duplicate is answered with the saved original"
        );
        assert_eq!(ack[2].orig_remote, Some(op.apply(init)));
    }
}

/// With four atomics in flight, the ACK of the second is lost: the third's ACK reveals the
/// gap, the requester goes back and resends from the second, and the responder answers each
/// duplicate from its saved original. Every atomic executes once, in order.
#[test]
fn lost_ack_among_four_atomics_in_flight_executes_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("lost_ack4.pcap");
    let h = hosts_dropping(vec![(1, 1)]);
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let (init, add) = (500u64, 3u64);
    let mut lbuf = vec![GUARD; 32 + 8];
    let mut rbuf = vec![0u8; 8 + 8];
    {
        let remote_mem = aligned(&mut rbuf, 8);
        remote_mem.copy_from_slice(&init.to_le_bytes());
        let local_mr = h.pa.register(aligned(&mut lbuf, 32), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let t = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(0);
        let wrs: Vec<SendWr<'_>> = (0..4usize)
            .map(|i| {
                SendWr::atomic_fetch_and_add(i as u64, local_mr.sge(i * 8..i * 8 + 8).unwrap(), t, add).signaled(true)
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 4, 3_000_000);
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}\n{}", h.diag());
        assert_eq!(wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!((0..4).map(|i| u64_at(&local_mr, i * 8)).collect::<Vec<_>>(), [500, 503, 506, 509]);
        assert_eq!(u64_at(&remote_mr, 0), 512, "each of the four added once");
        h.settle(3_000);
        let (ca, cb) = h.counters();
        assert!(ca.get("retransmits").unwrap() >= 1, "{}", h.diag());
        assert!(cb.get("rx_duplicates").unwrap() >= 1, "the resent requests are duplicates: {}", h.diag());
    }
    h.world.borrow_mut().finish().unwrap();
    let (req, ack) = atomic_frames(&pcap);
    let first = req[0].psn;
    for f in &ack {
        let k = u64::from(f.psn.wrapping_sub(first) & 0xFF_FFFF);
        assert!(k < 4, "ACK of PSN {:#x} outside the four requests", f.psn);
        assert_eq!(
            f.orig_remote,
            Some(init + k * add),
            "every ACK of request {k}, first or resent, carries the same original"
        );
    }
    for k in 0..4u32 {
        assert!(ack.iter().any(|f| f.psn == (first + k) & 0xFF_FFFF), "no ACK of request {k} arrived: {ack:x?}");
    }
    assert!(req.len() > 4, "the requester resent: {req:x?}");
}

/// A's first frame, the request, is lost: A resends it after the local ACK timeout and B
/// executes it once (the first copy never arrived); one ACK.
#[test]
fn lost_atomic_request_is_resent_and_executed_once() {
    for op in [Op::FetchAdd(0x100), Op::CmpSwap { compare: 0x4242, swap: 0x4343 }] {
        let (req, ack, ca, cb) = lossy_atomic(op, 0x4242, vec![(0, 0)]);
        assert_eq!(
            (ca.get("timeouts"), ca.get("retransmits")),
            (Some(1), Some(1)),
            "{op:?}: {:?} {:?}",
            nonzero(&ca),
            nonzero(&cb)
        );
        assert_eq!(cb.get("rx_duplicates"), Some(0), "{op:?}: {:?}", nonzero(&cb));
        assert_eq!(req.len(), 3, "{op:?}: the first request twice, then the second: {req:x?}");
        assert_eq!(req[1], req[0], "{op:?}: the resent request is the same packet");
        assert_eq!(ack.len(), 2, "{op:?}: one ACK per atomic: {ack:x?}");
        assert_eq!(ack[0].orig_remote, Some(0x4242));
    }
}

/// A capture of atomics — COMPARE SWAP (match and mismatch), FETCH ADD, their ATOMIC
/// ACKNOWLEDGEs and a NAK remote access error — decodes cleanly in tshark's InfiniBand
/// dissector, which reads back the AtomicETH fields (VA and R_Key in its RETH fields, Swap/Add
/// Data, Compare Data) and the AtomicAckETH's original remote data as posted and as held in
/// memory; every ICRC verifies in scapy; our byte-level reading of the headers agrees.
#[test]
fn atomic_capture_is_clean_in_tshark_and_scapy() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("atomic.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let init = 0x0102_0304_0506_0708u64;
    let mut lbuf = vec![GUARD; 32 + 8];
    let mut rbuf = vec![0u8; 64 + 8];
    // (request opcode, va, rkey, swap/add, compare, original returned)
    let mut posted: Vec<(u8, u64, u32, u64, u64, u64)> = Vec::new();
    {
        let remote_mem = aligned(&mut rbuf, 64);
        remote_mem[24..32].copy_from_slice(&init.to_le_bytes());
        let local_mr = h.pa.register(aligned(&mut lbuf, 32), AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(remote_mem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC).unwrap();
        let (mut qa, qb) = qps(&h, &opts());
        let buf = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let t = buf.at(24);
        let swap = 0xF0E0_D0C0_B0A0_9080u64;
        let add = 0x1122_3344_5566_7788u64;
        let wrs = [
            SendWr::atomic_cmp_and_swp(1, local_mr.sge(0..8).unwrap(), t, init, swap),
            SendWr::atomic_cmp_and_swp(2, local_mr.sge(8..16).unwrap(), t, init, 0x99),
            SendWr::atomic_fetch_and_add(3, local_mr.sge(16..24).unwrap(), t, add),
        ]
        .map(|w| w.signaled(true));
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 3, 500_000);
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
        posted.push((COMPARE_SWAP, t.addr, t.rkey, swap, init, init));
        posted.push((COMPARE_SWAP, t.addr, t.rkey, 0x99, init, swap));
        posted.push((FETCH_ADD, t.addr, t.rkey, add, 0, swap));
        assert_eq!((0..3).map(|i| u64_at(&local_mr, i * 8)).collect::<Vec<_>>(), [init, swap, swap]);
        assert_eq!(u64_at(&remote_mr, 24), swap.wrapping_add(add));
        // A refused one: NAK remote access error.
        qa.post_send_one(
            SendWr::atomic_fetch_and_add(4, local_mr.sge(24..32).unwrap(), RemoteAddr { rkey: t.rkey ^ 1, ..t }, 1)
                .signaled(true),
        )
        .unwrap();
        assert_eq!(h.wait(&h.ca, 1, 300_000)[0].status, WcStatus::RemAccessErr);
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();

    let ours = frames::read(&pcap);
    let fields = [
        "infiniband.bth.opcode",
        "infiniband.bth.psn",
        "infiniband.reth.va",
        "infiniband.reth.r_key",
        "infiniband.atomiceth.swapdt",
        "infiniband.atomiceth.cmpdt",
        "infiniband.aeth.syndrome",
        "infiniband.atomicacketh.origremdt",
    ];
    let ts = frames::tshark_fields(&pcap, &fields);
    assert_eq!(ts.len(), ours.len(), "tshark sees every frame");
    let u = |s: &str| frames::uint(s);
    let requests: Vec<&Vec<String>> = ts.iter().filter(|r| matches!(u(&r[0]), Some(0x13) | Some(0x14))).collect();
    assert_eq!(requests.len(), 4, "{ts:?}");
    for (r, &(op, va, rkey, swap_add, compare, _)) in requests.iter().zip(&posted) {
        assert_eq!(u(&r[0]), Some(u64::from(op)), "{r:?}");
        assert_eq!(
            (u(&r[2]), u(&r[3])),
            (Some(va), Some(u64::from(rkey))),
            "AtomicETH VA and R_Key as tshark reads them: {r:?}"
        );
        assert_eq!(u(&r[4]), Some(swap_add), "AtomicETH Swap (Or Add) Data: {r:?}");
        if op == COMPARE_SWAP {
            assert_eq!(u(&r[5]), Some(compare), "AtomicETH Compare Data: {r:?}");
        }
    }
    let acks: Vec<&Vec<String>> = ts.iter().filter(|r| u(&r[0]) == Some(0x12)).collect();
    assert_eq!(acks.len(), 3, "{ts:?}");
    for (r, &(.., orig)) in acks.iter().zip(&posted) {
        assert_eq!(u(&r[7]), Some(orig), "AtomicAckETH Original Remote Data: {r:?}");
        assert_eq!(u(&r[6]).map(|s| s >> 5), Some(0), "an ACK syndrome: {r:?}");
    }
    assert!(
        ts.iter().any(|r| u(&r[0]) == Some(0x11) && u(&r[6]) == Some(0x62)),
        "NAK remote access error missing: {ts:?}"
    );
    // Our reading of the same bytes agrees, and the ACKs carry the PSNs of their requests.
    let req: Vec<_> = ours.iter().filter(|f| f.atomic_eth.is_some()).collect();
    for (f, &(op, va, rkey, swap_add, compare, _)) in req.iter().zip(&posted) {
        let e = f.atomic_eth.unwrap();
        assert_eq!((f.opcode, e.va, e.rkey, e.swap_add), (op, va, rkey, swap_add));
        if op == COMPARE_SWAP {
            assert_eq!(e.compare, compare);
        }
        assert!(f.ack_req, "an atomic request asks for its ACK");
    }
    let ack: Vec<_> = ours.iter().filter(|f| f.opcode == ATOMIC_ACKNOWLEDGE).collect();
    assert_eq!(ack.iter().map(|f| f.psn).collect::<Vec<_>>(), req[..3].iter().map(|f| f.psn).collect::<Vec<_>>());
    let verdict = rnic_firmware_tests::oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(ours.len()), "{} frames captured; {}", ours.len(), verdict.summary());
}
