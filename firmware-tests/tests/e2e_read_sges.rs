//! End-to-end RDMA READ into several local SGEs (IBTA Vol 1 9.4.3, 10.7.2.2; ibv_post_send(3)
//! `sg_list` with `IBV_WR_RDMA_READ`): A (NIC 0) reads from B's (NIC 1) memory into a scatter
//! list. Two simulated hosts, the Verilated NIC RTL on each, driven through the `rnic` verbs
//! driver, which only writes the WQE: the READ's length (the RETH DMA length) is the sum of the
//! SGE lengths, A's NIC checks every non-empty SGE before the READ goes out and writes the
//! response bytes into the non-empty SGEs in order, one response packet straddling as many
//! entries as it covers.
//!
//! What they pin:
//! - 2, 4 and 16 SGEs at odd addresses and lengths at every path MTU (entries of 1..7 bytes, so
//!   one packet straddles many; an entry several MTUs long): every byte lands in its entry and
//!   no byte outside the entries changes; the WR completes `IBV_WC_RDMA_READ` with `byte_len`
//!   = the sum; one READ REQUEST goes out and ceil(sum / MTU) responses come back;
//! - zero-length entries (with junk lkeys) are skipped; a list of only empty entries is a
//!   zero-length READ (`byte_len` 0, the buffer untouched);
//! - READs with lists, single-SGE READs and WRITEs posted back to back on one QP complete in
//!   order with their data (a READ with a list sees the WRITE before it);
//! - a bad lkey, a region without LOCAL_WRITE, a region of another PD or an entry past its
//!   region, in SGE 0, 2 or the last: `IBV_WC_LOC_PROT_ERR`, nothing on the wire, no local
//!   byte written, the QP in ERR and the WR behind it flushed;
//! - a lost response (the first, one that starts an entry, one that starts mid-entry, one that
//!   straddles five entries, the last) makes the requester resume the READ from the first
//!   missing response (the resumed READ REQUEST asks for exactly the rest), and those bytes land
//!   mid-list where they belong, also with six READs with lists in flight (more than the NIC's
//!   4 READ lists per QP); a lost READ REQUEST is resent; 1 % random loss over 300 READs of 4
//!   SGEs: every byte right, every completion successful and in order;
//! - an atomic with 2 SGEs, a READ with `max_send_sge` + 1 SGEs and an inline READ or atomic are
//!   EINVAL from post_send, and nothing of them reaches the NIC;
//! - a capture of READs with lists decodes cleanly in tshark (its DMA lengths are the sums),
//!   every ICRC verifies in scapy, and the responses carry the remote bytes in order.
mod common;

use std::path::Path;

use common::sgl::{buffer_len, check_buffer, expected, sges, spread, Layout, GUARD};
use common::{budget, delta, frames, pattern, Hosts};
use rnic::{AccessFlags, ConnectOptions, Errno, Mtu, QpState, QueuePair, SendWr, Sge, WcOpcode, WcStatus};
use rnic_contract::regs::counter;
use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
use rnic_sim::{FaultConfig, SimConfig};

const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
/// RC RDMA READ REQUEST (IBTA Vol 1 9.2, table 36).
const READ_REQUEST: u8 = 0x0C;
/// RC RDMA READ RESPONSE FIRST, MIDDLE, LAST, ONLY.
const READ_RESPONSES: std::ops::RangeInclusive<u8> = 0x0D..=0x10;
/// Counters that must not move on a clean wire.
const TROUBLE: [u16; 9] = [
    counter::DROP_ICRC,
    counter::DROP_MALFORMED,
    counter::DROP_UNKNOWN_QP,
    counter::DROP_KEY,
    counter::DROP_PSN,
    counter::DROP_INV_REQ,
    counter::TX_NAKS,
    counter::LOCAL_ERRORS,
    counter::RETRANSMITS,
];

/// Hosts whose NIC `nic` loses its transmitted frame number `n` (from 0) for each `(nic, n)`.
fn hosts(drops: &[(usize, u64)]) -> Hosts {
    Hosts::new(SimConfig {
        faults: FaultConfig { drop_frames: drops.to_vec(), ..Default::default() },
        ..SimConfig::default()
    })
}

/// Path MTU `mtu`, READ / WRITE / atomic access, 8 READs or atomics in flight each way: more
/// than the NIC's 4 READ lists per QP, so READs with lists reuse lists and wait for them.
fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions {
        path_mtu: mtu,
        access: AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC,
        max_rd_atomic: 8,
        max_dest_rd_atomic: 8,
        ..ConnectOptions::default()
    }
}

/// Connected RC QPs A (SQ 32, at least `sges` SGEs per WR) → B, with `o`.
fn qps<'mr>(h: &Hosts, o: &ConnectOptions, sges: u32) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).set_max_send_sge(sges).build().unwrap();
    assert!(qa.query_qp().cap.max_send_sge >= sges);
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(32).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, o).unwrap();
    qb.connect_with(&ea, o).unwrap();
    (qa, qb)
}

/// The READ's length: the sum of the entries.
fn sum(layout: &Layout) -> usize {
    layout.iter().map(|e| e.1).sum()
}

/// READ RESPONSE packets for `len` bytes at `mtu` (a zero-length READ is answered by one).
fn packets(len: usize, mtu: Mtu) -> u32 {
    (len.max(1) as u32).div_ceil(mtu.bytes())
}

/// The non-empty entries of `layout` that READ RESPONSE packet `p` (from 0) at `mtu` fills.
fn entries_of_packet(layout: &Layout, mtu: Mtu, p: usize) -> Vec<usize> {
    let m = mtu.bytes() as usize;
    let (lo, hi) = (p * m, (p + 1) * m);
    let mut at = 0;
    let mut out = Vec::new();
    for (k, &(_, len)) in layout.iter().enumerate() {
        if len > 0 && at < hi && at + len > lo {
            out.push(k);
        }
        at += len;
    }
    out
}

/// What one READ did on the wire, from the NICs' counters.
#[derive(Debug)]
struct Traffic {
    /// Request packets A sent (READ REQUESTs, resent ones included).
    requests: u32,
    /// Frames B sent (READ RESPONSEs, resent ones included).
    responses: u32,
    /// Frames A accepted.
    accepted: u32,
    /// A's go-back-N restarts.
    retransmits: u32,
    /// A's local ACK timeouts.
    timeouts: u32,
    /// [`TROUBLE`] counters that moved, on either NIC.
    trouble: Vec<String>,
    /// The remote address the READ asked for.
    remote_va: u64,
}

/// One signaled READ of `sum(layout)` bytes at offset `src_off` of B's buffer into the entries
/// `layout` of A's buffer (zero-length entries with junk keys), at `mtu`, on a wire that loses
/// the frames `drops`, captured into `pcap` if given. Checks the completion (success,
/// IBV_WC_RDMA_READ, `byte_len` = the sum, one CQE) and every byte of A's buffer: the entries
/// hold B's bytes in order, every other byte is still [`GUARD`].
fn read_into(mtu: Mtu, layout: &Layout, src_off: usize, drops: &[(usize, u64)], pcap: Option<&Path>) -> Traffic {
    let h = hosts(drops);
    if let Some(p) = pcap {
        h.world.borrow_mut().capture_pcap(p).unwrap();
    }
    let len = sum(layout);
    let mut remote_buf = pattern(len as u64 ^ ((src_off as u64) << 20) ^ u64::from(mtu.bytes()), src_off + len + 17);
    let buf_len = buffer_len(layout, 67);
    let mut local = vec![GUARD; buf_len];
    let want = expected(buf_len, layout, &remote_buf[src_off..src_off + len]);
    let lens: Vec<usize> = layout.iter().map(|e| e.1).collect();
    let what = format!("READ of {len} B at MTU {} into SGEs {lens:?}, losing frames {drops:?}", mtu.bytes());
    let traffic;
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        // A local ACK timeout of 4.096 µs × 2^8 ≈ 1 ms for the loss cases.
        let (mut qa, qb) = qps(&h, &ConnectOptions { timeout: 8, ..opts(mtu) }, layout.len().max(1) as u32);
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap().at(src_off as u64);
        let (c0a, c0b) = h.counters();
        let wr = SendWr::rdma_read(0x5E6, None, remote).with_sg_list(&sges(&local_mr, layout)).unwrap().signaled(true);
        qa.post_send_one(wr).unwrap();
        let slack = if drops.is_empty() { 0 } else { 3_000_000 };
        let wc = h.wait(&h.ca, 1, budget(len) + slack)[0];
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.qp_num),
            (0x5E6, WcStatus::Success, WcOpcode::RdmaRead, len as u32, qa.qp_num()),
            "{what}: {wc:?}\n{}",
            h.diag()
        );
        assert_eq!(qa.outstanding(), 0);
        h.settle(5_000);
        let (c1a, c1b) = h.counters();
        assert_eq!(delta(&c1a, &c0a, counter::CQES), 1, "{what}: one CQE");
        assert_eq!(qa.stray_completions(), 0);
        let mut trouble = Vec::new();
        for c in TROUBLE {
            for (side, c1, c0) in [("requester", &c1a, &c0a), ("responder", &c1b, &c0b)] {
                if delta(c1, c0, c) != 0 {
                    trouble.push(format!("{side} {} +{}", counter::NAMES[c as usize], delta(c1, c0, c)));
                }
            }
        }
        traffic = Traffic {
            requests: delta(&c1a, &c0a, counter::TX_REQUESTS),
            responses: delta(&c1b, &c0b, counter::TX_FRAMES),
            accepted: delta(&c1a, &c0a, counter::RX_ROCE_OK),
            retransmits: delta(&c1a, &c0a, counter::RETRANSMITS),
            timeouts: delta(&c1a, &c0a, counter::TIMEOUTS),
            trouble,
            remote_va: remote.addr,
        };
    }
    if pcap.is_some() {
        h.world.borrow_mut().finish().unwrap();
    }
    check_buffer(&what, &local, &want, layout);
    traffic
}

/// [`read_into`] on a clean wire, and the packets: one READ REQUEST, ceil(sum / MTU) READ
/// RESPONSEs sent and accepted, nothing dropped, NAKed or resent on either side.
fn read_and_check(mtu: Mtu, layout: &Layout, src_off: usize) {
    let t = read_into(mtu, layout, src_off, &[], None);
    let n = packets(sum(layout), mtu);
    assert_eq!((t.requests, t.responses, t.accepted), (1, n, n), "MTU {} layout {layout:?}: {t:?}", mtu.bytes());
    assert!(t.trouble.is_empty(), "MTU {} layout {layout:?}: {t:?}", mtu.bytes());
}

#[test]
fn read_into_two_sges_at_every_path_mtu() {
    for (i, mtu) in ALL_MTUS.into_iter().enumerate() {
        let m = mtu.bytes() as usize;
        // Half a packet, then several: the first response straddles both entries.
        read_and_check(mtu, &spread(&[m / 2 + 5, 3 * m + 7], i), 1 + 2 * i);
        // One byte past a packet, then one byte: the last response is 2 bytes over 2 entries.
        read_and_check(mtu, &spread(&[m + 1, 1], i + 5), 3);
    }
}

#[test]
fn read_into_four_sges_at_every_path_mtu() {
    for (i, mtu) in ALL_MTUS.into_iter().enumerate() {
        let m = mtu.bytes() as usize;
        // Entries shorter and longer than a packet, one over five packets long.
        read_and_check(mtu, &spread(&[m / 2 + 5, 17, 5 * m + 33, m - 1], i + 1), 5);
    }
}

#[test]
fn read_into_sixteen_tiny_and_long_sges_at_every_path_mtu() {
    for (i, mtu) in ALL_MTUS.into_iter().enumerate() {
        let m = mtu.bytes() as usize;
        // Eight entries of 1..7 bytes, one just over a packet, three more tiny ones, one over
        // four packets long, three tiny ones.
        let lens = [3, 1, 7, 2, 5, 4, 6, 1, m + 1, 7, 3, 2, 4 * m + 9, 1, 5, 3];
        let layout = spread(&lens, i + 2);
        assert!(
            entries_of_packet(&layout, mtu, 0).len() >= 9,
            "the first response fills the eight tiny entries and more"
        );
        let p = (lens[..9].iter().sum::<usize>()) / m;
        assert!(entries_of_packet(&layout, mtu, p).len() >= 3, "a response straddles entry 8, the tiny 9..11 and 12");
        read_and_check(mtu, &layout, 7);
    }
}

#[test]
fn zero_length_sges_are_skipped() {
    // At the front, in the middle (several in a row) and at the end; junk lkeys on all of them.
    let lens = [0, 300, 0, 0, 5, 0, 2000, 0];
    for mtu in [Mtu::Mtu256, Mtu::Mtu1024] {
        read_and_check(mtu, &spread(&lens, 3), 2);
    }
    // Only empty entries: a zero-length READ, one READ REQUEST answered by one empty READ
    // RESPONSE ONLY, byte_len 0, no byte written.
    for n in [1, 3] {
        read_and_check(Mtu::Mtu1024, &spread(&vec![0; n], 1), 0);
    }
}

/// One WR of the back-to-back test: a READ of `layout` (relative to its slot) from B's offset
/// `remote_off`, or a WRITE of A's source bytes `src` to B's offset `remote_off`.
enum Op {
    Read { layout: Layout, remote_off: usize },
    Write { src: std::ops::Range<usize>, remote_off: usize },
}

/// READs with scatter lists, single-SGE READs, a zero-length READ and WRITEs posted back to
/// back on one QP (one post_send for all, then one post_send per WR) complete in posting order
/// (IBTA Vol 1 9.5), each READ with its own bytes in its own entries; the READs that follow a
/// WRITE of the same remote bytes return what it stored.
#[test]
fn reads_with_lists_singles_and_writes_back_to_back_complete_in_order() {
    const SLOT: usize = 8192;
    let ops = vec![
        Op::Read { layout: spread(&[100, 1, 2000, 517], 1), remote_off: 3 },
        Op::Read { layout: vec![(5, 3000)], remote_off: SLOT },
        Op::Write { src: 0..4000, remote_off: 2 * SLOT + 5 },
        // Reads back what the WRITE before it stored.
        Op::Read {
            layout: spread(&[1, 2, 3, 250, 4, 5, 700, 6, 7, 1000, 1, 2, 3, 1500, 16, 500], 2),
            remote_off: 2 * SLOT + 5,
        },
        Op::Read { layout: spread(&[7, 0, 1500], 3), remote_off: 4 * SLOT + 1 },
        Op::Read { layout: vec![(0, 1)], remote_off: 5 * SLOT },
        Op::Read { layout: spread(&[0, 0], 4), remote_off: 6 * SLOT },
        Op::Read { layout: spread(&[1000, 999, 998, 997, 996], 5), remote_off: 7 * SLOT + 7 },
        Op::Write { src: 4000..4100, remote_off: 8 * SLOT },
        Op::Read { layout: spread(&[60, 40], 6), remote_off: 8 * SLOT },
    ];
    let h = hosts(&[]);
    let mut remote_buf = pattern(21, ops.len() * SLOT);
    let mut src = pattern(22, 4100);
    let mut local = vec![GUARD; ops.len() * SLOT];
    // B's memory after the WRITEs, which every READ behind them must see.
    let mut image = remote_buf.clone();
    for op in &ops {
        if let Op::Write { src: r, remote_off } = op {
            image[*remote_off..*remote_off + r.len()].copy_from_slice(&src[r.clone()]);
        }
    }
    let signaled: Vec<(u64, WcOpcode, Option<u32>)> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| match op {
            Op::Read { layout, .. } => (i as u64, WcOpcode::RdmaRead, Some(sum(layout) as u32)),
            Op::Write { .. } => (i as u64, WcOpcode::RdmaWrite, None),
        })
        .collect();
    for round in 0..2 {
        local.fill(GUARD);
        {
            let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr =
                h.pb.register(
                    &mut remote_buf,
                    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
                )
                .unwrap();
            let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024), 16);
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            let wrs: Vec<SendWr<'_>> = ops
                .iter()
                .enumerate()
                .map(|(i, op)| match op {
                    Op::Read { layout, remote_off } => {
                        let shifted: Layout = layout.iter().map(|&(o, l)| (i * SLOT + o, l)).collect();
                        SendWr::rdma_read(i as u64, None, remote.at(*remote_off as u64))
                            .with_sg_list(&sges(&local_mr, &shifted))
                            .unwrap()
                    }
                    Op::Write { src: r, remote_off } => {
                        SendWr::rdma_write(i as u64, src_mr.sge(r.clone()).unwrap(), remote.at(*remote_off as u64))
                    }
                })
                .map(|wr| wr.signaled(true))
                .collect();
            if round == 0 {
                qa.post_send(&wrs).unwrap();
            } else {
                for wr in wrs {
                    qa.post_send_one(wr).unwrap();
                }
            }
            let wcs = h.wait(&h.ca, ops.len(), 2_000_000);
            let got: Vec<(u64, WcOpcode, Option<u32>)> = wcs
                .iter()
                .map(|w| (w.wr_id, w.opcode, (w.opcode == WcOpcode::RdmaRead).then_some(w.byte_len)))
                .collect();
            assert_eq!(got, signaled, "round {round}: completions in posting order\n{}", h.diag());
            assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "round {round}: {wcs:?}");
            assert_eq!(qa.outstanding(), 0);
        }
        for (i, op) in ops.iter().enumerate() {
            let slot = &local[i * SLOT..(i + 1) * SLOT];
            match op {
                Op::Read { layout, remote_off } => {
                    let want = expected(SLOT, layout, &image[*remote_off..*remote_off + sum(layout)]);
                    check_buffer(&format!("round {round}, READ {i}"), slot, &want, layout);
                }
                Op::Write { .. } => {
                    assert!(slot.iter().all(|&b| b == GUARD), "round {round}: WR {i}'s slot was written")
                }
            }
        }
    }
    assert_eq!(&remote_buf[..], &image[..], "B's memory holds exactly what the WRITEs stored");
}

/// How a test spoils one SGE of a READ's list.
#[derive(Clone, Copy, Debug)]
enum Bad {
    /// An lkey no region has.
    Lkey,
    /// A region of A registered without LOCAL_WRITE.
    NoLocalWrite,
    /// A region of another PD of A.
    OtherPd,
    /// The entry runs one byte past the end of its region.
    PastRegion,
}

/// A READ whose SGE 0, 2 or 3 (the last) is bad in any of the ways of [`Bad`] completes with
/// IBV_WC_LOC_PROT_ERR before anything is sent: no frame on the wire (the capture is empty),
/// no local byte written (in the good entries or in the bad one's region), the QP in ERR, and
/// the READ posted behind it flushed (IBV_WC_WR_FLUSH_ERR). Fresh hosts for each case.
#[test]
fn a_bad_sge_anywhere_is_loc_prot_err_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let layout = spread(&[100, 333, 17, 1201], 4);
    let buf_len = buffer_len(&layout, 64);
    for bad in [Bad::Lkey, Bad::NoLocalWrite, Bad::OtherPd, Bad::PastRegion] {
        for k in [0, 2, 3] {
            let what = format!("{bad:?} in SGE {k}");
            let pcap = dir.path().join(format!("{bad:?}_{k}.pcap"));
            let h = hosts(&[]);
            h.world.borrow_mut().capture_pcap(&pcap).unwrap();
            let other_pd = h.a.alloc_pd().unwrap();
            let mut remote_buf = pattern(5, 4096);
            let mut local = vec![GUARD; buf_len];
            let mut read_only = vec![GUARD; buf_len];
            let mut foreign = vec![GUARD; buf_len];
            let (c0a, c0b) = h.counters();
            {
                let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
                let ro_mr = h.pa.register(&mut read_only, AccessFlags::REMOTE_READ).unwrap();
                let foreign_mr = other_pd.register(&mut foreign, AccessFlags::LOCAL_WRITE).unwrap();
                let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
                let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024), 4);
                let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
                let mut list = sges(&local_mr, &layout);
                let (o, l) = layout[k];
                list[k] = match bad {
                    Bad::Lkey => Sge::raw(local_mr.addr() + o as u64, l as u32, local_mr.lkey() ^ 0x80),
                    Bad::NoLocalWrite => Sge::raw(ro_mr.addr() + o as u64, l as u32, ro_mr.lkey()),
                    Bad::OtherPd => Sge::raw(foreign_mr.addr() + o as u64, l as u32, foreign_mr.lkey()),
                    Bad::PastRegion => Sge::raw(local_mr.addr() + o as u64, (buf_len - o + 1) as u32, local_mr.lkey()),
                };
                let read = SendWr::rdma_read(1, None, remote.at(0)).with_sg_list(&list).unwrap().signaled(true);
                let behind = SendWr::rdma_read(2, local_mr.sge(0..64).unwrap(), remote.at(0)).signaled(true);
                qa.post_send(&[read, behind]).unwrap();
                let wcs = h.wait(&h.ca, 2, 300_000);
                let got: Vec<(u64, WcStatus, u32)> = wcs.iter().map(|w| (w.wr_id, w.status, w.qp_num)).collect();
                let want = [(1, WcStatus::LocProtErr, qa.qp_num()), (2, WcStatus::WrFlushErr, qa.qp_num())];
                assert_eq!(got, want, "{what}: {wcs:?}\n{}", h.diag());
                assert_eq!(qa.state(), QpState::Err, "{what}: a local error moves the QP to ERR");
                h.settle(5_000);
            }
            let (c1a, c1b) = h.counters();
            assert_eq!(delta(&c1a, &c0a, counter::TX_REQUESTS), 0, "{what}: no request sent\n{}", h.diag());
            assert_eq!(delta(&c1b, &c0b, counter::RX_FRAMES), 0, "{what}: B received nothing");
            assert_eq!(delta(&c1a, &c0a, counter::LOCAL_ERRORS), 1, "{what}: one local error\n{}", h.diag());
            h.world.borrow_mut().finish().unwrap();
            let frames = oracle::read_pcap(&pcap).unwrap();
            let reads = frames
                .iter()
                .filter(|(_, f)| RocePacketRepr::parse(f).is_ok_and(|p| p.bth.opcode.0 == READ_REQUEST))
                .count();
            assert_eq!((frames.len(), reads), (0, 0), "{what}: nothing on the wire, no READ REQUEST in particular");
            for (name, buf) in [("local", &local), ("read-only", &read_only), ("foreign", &foreign)] {
                assert!(buf.iter().all(|&b| b == GUARD), "{what}: a refused READ wrote the {name} buffer");
            }
        }
    }
}

/// A lost READ RESPONSE mid-list: the requester resumes the READ from the first missing
/// response (IBTA Vol 1 9.7.5.1.3: a new READ REQUEST for the rest, at the PSN and remote
/// address of the lost one), and the resumed bytes land mid-list in their entries. 16 entries
/// of 1..1100 bytes at MTU 256 (5200 bytes, 21 responses); B's frame `d` is response `d`:
/// the first, one that starts exactly at entry 2, one that starts inside entry 4, one that
/// straddles entries 5..9, one inside entry 12, and the last (found by the local ACK timeout).
/// Exactly the responses from the lost one on travel twice.
#[test]
fn a_lost_response_resumes_the_read_into_the_right_sge() {
    let mtu = Mtu::Mtu256;
    let lens = [1, 255, 256, 257, 700, 1000, 3, 2, 5, 300, 7, 1, 600, 1100, 13, 700];
    let layout = spread(&lens, 9);
    let len = sum(&layout);
    let n = packets(len, mtu);
    assert_eq!((len, n), (5200, 21));
    assert_eq!(entries_of_packet(&layout, mtu, 1), [2], "response 1 is entry 2, exactly");
    assert_eq!(entries_of_packet(&layout, mtu, 9), [5, 6, 7, 8, 9], "response 9 straddles five entries");
    let dir = tempfile::tempdir().unwrap();
    for d in [0u32, 1, 5, 9, 12, n - 1] {
        let pcap = dir.path().join(format!("lost_{d}.pcap"));
        let t = read_into(mtu, &layout, 3, &[(1, u64::from(d))], Some(&pcap));
        let what = format!("response {d} of {n} lost: {t:?}");
        assert_eq!((t.retransmits, t.timeouts), (1, u32::from(d == n - 1)), "{what}");
        assert_eq!(t.responses, n + (n - d), "{what}: the responses from the lost one on travel again");
        // On the wire: the READ, then its resumption at the lost response's PSN and bytes.
        let reqs: Vec<RocePacketRepr> = oracle::read_pcap(&pcap)
            .unwrap()
            .iter()
            .map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame"))
            .filter(|p| p.bth.opcode.0 == READ_REQUEST)
            .collect();
        assert_eq!(reqs.len(), 2, "{what}");
        let (first, again) = (reqs[0].reth.unwrap(), reqs[1].reth.unwrap());
        let skip = u64::from(d) * 256;
        assert_eq!((first.virt_addr, first.dma_len), (t.remote_va, len as u32), "{what}: the READ asks for the sum");
        assert_eq!(
            (again.virt_addr, again.dma_len),
            (t.remote_va + skip, len as u32 - skip as u32),
            "{what}: the rest"
        );
        assert_eq!(reqs[1].bth.psn, (reqs[0].bth.psn + d) & 0xFF_FFFF, "{what}: at the lost response's PSN");
    }
}

/// Six READs with 5-entry lists (3 responses each at MTU 1024) posted at once, more than the
/// NIC's 4 READ lists per QP: losing one response of the first, third or last READ (B's frames
/// 1, 7, 16) makes the requester resume that READ mid-list, and the responses already sent for
/// the READs behind it are asked for again; every READ completes in order, successfully, with
/// every byte in its own entries.
#[test]
fn a_lost_response_among_several_reads_with_lists() {
    const N: usize = 6;
    const SLOT: usize = 4096;
    let mtu = Mtu::Mtu1024;
    let layouts: Vec<Layout> = (0..N).map(|i| spread(&[1000, 7, 1500, 3, 500], i)).collect();
    assert!(layouts.iter().all(|l| packets(sum(l), mtu) == 3));
    for drop in [1u64, 7, 16] {
        let h = hosts(&[(1, drop)]);
        let mut remote_buf = pattern(40 + drop, N * SLOT);
        let mut local = vec![GUARD; N * SLOT];
        let (c0a, _) = h.counters();
        {
            let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
            let (mut qa, qb) = qps(&h, &ConnectOptions { timeout: 8, ..opts(mtu) }, 5);
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            let wrs: Vec<SendWr<'_>> = (0..N)
                .map(|i| {
                    let shifted: Layout = layouts[i].iter().map(|&(o, l)| (i * SLOT + o, l)).collect();
                    SendWr::rdma_read(i as u64, None, remote.at((i * SLOT) as u64))
                        .with_sg_list(&sges(&local_mr, &shifted))
                        .unwrap()
                        .signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, N, 3_000_000);
            let got: Vec<(u64, WcStatus, u32)> = wcs.iter().map(|w| (w.wr_id, w.status, w.byte_len)).collect();
            let want: Vec<(u64, WcStatus, u32)> =
                (0..N).map(|i| (i as u64, WcStatus::Success, sum(&layouts[i]) as u32)).collect();
            assert_eq!(got, want, "response frame {drop} lost\n{}", h.diag());
            h.settle(5_000);
        }
        let (c1a, _) = h.counters();
        assert!(delta(&c1a, &c0a, counter::RETRANSMITS) >= 1, "response frame {drop} lost: {}", h.diag());
        for i in 0..N {
            let want = expected(SLOT, &layouts[i], &remote_buf[i * SLOT..i * SLOT + sum(&layouts[i])]);
            check_buffer(
                &format!("READ {i}, response frame {drop} lost"),
                &local[i * SLOT..(i + 1) * SLOT],
                &want,
                &layouts[i],
            );
        }
    }
}

#[test]
fn a_lost_read_request_with_a_list_is_resent() {
    let mtu = Mtu::Mtu1024;
    let layout = spread(&[1000, 3, 2500, 17], 2);
    let t = read_into(mtu, &layout, 1, &[(0, 0)], None);
    assert_eq!((t.requests, t.retransmits, t.timeouts), (2, 1, 1), "{t:?}");
    assert_eq!(t.responses, packets(sum(&layout), mtu), "the responder saw the READ once: {t:?}");
}

/// 300 READs of 4 SGEs each (tiny to over one MTU, odd addresses, 1.0 to 3.6 KiB per READ, up
/// to 16 outstanding) over a wire that loses 1 % of the frames in each direction: every READ
/// completes successfully, in order, with `byte_len` = its sum, every byte is in its entry and
/// nothing outside the entries changed; the loss did happen (retransmissions).
#[test]
fn random_loss_over_300_reads_of_4_sges() {
    const N: usize = 300;
    const SLOT: usize = 4096;
    let faults = FaultConfig { seed: 11, drop_probability: 0.01, ..Default::default() };
    let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
    let layouts: Vec<Layout> = (0..N)
        .map(|i| spread(&[(i * 37) % 500 + 1, (i * 11) % 7 + 1, 1024 + (i * 13) % 900, (i * 29) % 300 + 1], i))
        .collect();
    let offs: Vec<usize> = (0..N).map(|i| i * SLOT + i % 5).collect();
    let mut remote_buf = pattern(31, N * SLOT + 8);
    let mut local = vec![GUARD; N * SLOT];
    let (c0a, _) = h.counters();
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        // A local ACK timeout of 4.096 µs × 2^5 ≈ 131 µs: a lost last response or request
        // costs 33 k cycles.
        let (mut qa, qb) = qps(&h, &ConnectOptions { timeout: 5, ..opts(Mtu::Mtu1024) }, 4);
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let (mut posted, mut done) = (0usize, 0usize);
        let mut wcs = [rnic::WorkCompletion::default(); 16];
        let start = h.world.borrow().cycles();
        while done < N {
            while posted < N && qa.outstanding() < 16 {
                let shifted: Layout = layouts[posted].iter().map(|&(o, l)| (posted * SLOT + o, l)).collect();
                let wr = SendWr::rdma_read(posted as u64, None, remote.at(offs[posted] as u64))
                    .with_sg_list(&sges(&local_mr, &shifted))
                    .unwrap();
                qa.post_send_one(wr.signaled(true)).unwrap();
                posted += 1;
            }
            let k = h.ca.poll(&mut wcs).unwrap();
            for w in &wcs[..k] {
                assert_eq!(
                    (w.wr_id, w.status, w.opcode, w.byte_len),
                    (done as u64, WcStatus::Success, WcOpcode::RdmaRead, sum(&layouts[done]) as u32),
                    "{w:?}\n{}",
                    h.diag()
                );
                done += 1;
            }
            assert!(h.world.borrow().cycles() - start < 60_000_000, "stalled at {done}/{N}\n{}", h.diag());
        }
        h.settle(5_000);
        assert_eq!(qa.stray_completions(), 0);
    }
    let (c1a, _) = h.counters();
    assert!(delta(&c1a, &c0a, counter::RETRANSMITS) > 0, "1 % loss over some 1300 frames lost nothing?\n{}", h.diag());
    for i in 0..N {
        let msg = &remote_buf[offs[i]..offs[i] + sum(&layouts[i])];
        let want = expected(SLOT, &layouts[i], msg);
        check_buffer(&format!("READ {i} of {N}"), &local[i * SLOT..(i + 1) * SLOT], &want, &layouts[i]);
    }
}

/// Shape errors are the driver's (ibv_post_send(3) EINVAL): an atomic with 2 SGEs
/// (FETCH_AND_ADD or CMP_AND_SWP), a READ with one SGE more than the QP's `max_send_sge`, an
/// inline READ or atomic, and a batch with any of them behind a valid READ. None is posted:
/// the SQ stays empty, the NIC sends nothing and completes nothing; afterwards an atomic with
/// its one SGE and a single-SGE READ still go through, the only two requests on the wire.
#[test]
fn atomic_with_two_sges_and_read_over_max_send_sge_are_einval() {
    let h = hosts(&[]);
    let mut local = vec![GUARD; 256];
    let mut remote_buf = pattern(3, 72);
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
        let remote_mr = h.pb.register(&mut remote_buf, access).unwrap();
        let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024), 4);
        let max = qa.query_qp().cap.max_send_sge as usize;
        assert_eq!(max, 5, "built for 4 SGEs: a 128-byte WQE holds 5");
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let word = remote.at(remote.addr.wrapping_neg() % 8);
        let list: Vec<Sge<'_>> = (0..=max).map(|i| local_mr.sge(i * 20 + 1..i * 20 + 9).unwrap()).collect();
        let one = list[0];
        let faa2 = SendWr::atomic_fetch_and_add(1, one, word, 1).with_sg_list(&list[..2]).unwrap();
        let cas2 = SendWr::atomic_cmp_and_swp(2, one, word, 0, 1).with_sg_list(&list[..2]).unwrap();
        let read_over = SendWr::rdma_read(3, None, remote.at(0)).with_sg_list(&list).unwrap();
        let inline_read = SendWr::rdma_read(4, None, remote.at(0)).with_inline(&[1, 2, 3]).unwrap();
        let inline_atomic = SendWr::atomic_fetch_and_add(5, one, word, 1).with_inline(&[0; 8]).unwrap();
        let good_read = SendWr::rdma_read(6, None, remote.at(0)).with_sg_list(&list[..max]).unwrap();
        let (c0a, c0b) = h.counters();
        for (wr, what) in [
            (faa2, "FETCH_AND_ADD with 2 SGEs"),
            (cas2, "CMP_AND_SWP with 2 SGEs"),
            (read_over, "READ with max_send_sge + 1 SGEs"),
            (inline_read, "inline READ"),
            (inline_atomic, "inline FETCH_AND_ADD"),
        ] {
            assert_eq!(qa.post_send_one(wr.signaled(true)).unwrap_err().errno(), Errno::EINVAL, "{what}");
            let e = qa.post_send(&[wr.signaled(true), good_read.signaled(true)]).unwrap_err();
            assert_eq!((e.errno(), e.bad_wr), (Errno::EINVAL, 0), "{what} before a valid READ");
            assert_eq!(qa.outstanding(), 0, "{what}: nothing posted (the list stops at the bad WR)");
        }
        h.settle(20_000);
        let (c1a, c1b) = h.counters();
        assert_eq!((delta(&c1a, &c0a, counter::TX_REQUESTS), delta(&c1a, &c0a, counter::CQES)), (0, 0), "{}", h.diag());
        assert_eq!(delta(&c1b, &c0b, counter::RX_FRAMES), 0);
        let mut wcs = [rnic::WorkCompletion::default(); 4];
        assert_eq!(h.ca.poll(&mut wcs).unwrap(), 0, "a completion of a refused WR: {:?}", wcs[0]);
        // The QP is untouched: an atomic with its one 8-byte SGE and a one-SGE READ work.
        let faa = SendWr::atomic_fetch_and_add(7, local_mr.sge(200..208).unwrap(), word, 1).signaled(true);
        // Bytes 16.. of B's buffer: past the atomic's word (at offset 0..=7).
        let read = SendWr::rdma_read(8, local_mr.sge(210..250).unwrap(), remote.at(16)).signaled(true);
        qa.post_send(&[faa, read]).unwrap();
        let wcs = h.wait(&h.ca, 2, 300_000);
        let got: Vec<(u64, WcStatus, WcOpcode)> = wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
        assert_eq!(
            got,
            [(7, WcStatus::Success, WcOpcode::FetchAdd), (8, WcStatus::Success, WcOpcode::RdmaRead)],
            "{}",
            h.diag()
        );
        h.settle(2_000);
        let (c2a, _) = h.counters();
        assert_eq!(delta(&c2a, &c1a, counter::TX_REQUESTS), 2, "the two valid WRs are the only requests sent");
    }
    let expect = pattern(3, 72);
    assert_eq!(&local[210..250], &expect[16..56], "the single-SGE READ's bytes");
    assert!(local[..200].iter().chain(&local[250..]).all(|&b| b == GUARD), "the refused WRs' SGEs untouched");
}

/// A capture of READs with scatter lists at MTU 256 — 4 entries (630 bytes: RESPONSE FIRST,
/// MIDDLE, LAST straddling entries), 16 entries of 1..300 bytes, only empty entries (a
/// zero-length READ) and empty entries around 51 bytes (RESPONSE ONLY) — decodes cleanly in
/// tshark's InfiniBand dissector and every ICRC verifies in scapy. Each READ REQUEST's DMA
/// length, in our codec and in tshark, is the sum of its SGEs; the READ RESPONSE payloads, in
/// wire order, are the remote bytes of the four READs in turn.
#[test]
fn read_sges_capture_is_clean_in_tshark_and_scapy() {
    const SLOT: usize = 2048;
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("read_sges.pcap");
    let h = hosts(&[]);
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let layouts = [
        spread(&[130, 3, 400, 97], 1),
        spread(&[1, 2, 3, 4, 5, 6, 7, 200, 1, 2, 3, 300, 7, 5, 3, 1], 2),
        spread(&[0, 0], 3),
        spread(&[0, 50, 0, 1], 4),
    ];
    let offs = [0usize, 700, 0, 3001];
    let lens: Vec<usize> = layouts.iter().map(sum).collect();
    let mut remote_buf = pattern(12, 4096);
    let mut local = vec![GUARD; layouts.len() * SLOT];
    let read_bytes: Vec<u8> = offs.iter().zip(&lens).flat_map(|(&o, &l)| remote_buf[o..o + l].to_vec()).collect();
    let remote_va;
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu256), 16);
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        remote_va = remote.addr;
        let wrs: Vec<SendWr<'_>> = layouts
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let shifted: Layout = l.iter().map(|&(o, n)| (i * SLOT + o, n)).collect();
                SendWr::rdma_read(i as u64, None, remote.at(offs[i] as u64))
                    .with_sg_list(&sges(&local_mr, &shifted))
                    .unwrap()
                    .signaled(true)
            })
            .collect();
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 4, 400_000);
        let got: Vec<(u64, WcStatus, WcOpcode, u32)> =
            wcs.iter().map(|w| (w.wr_id, w.status, w.opcode, w.byte_len)).collect();
        let want: Vec<(u64, WcStatus, WcOpcode, u32)> =
            (0..4).map(|i| (i as u64, WcStatus::Success, WcOpcode::RdmaRead, lens[i] as u32)).collect();
        assert_eq!(got, want, "{}", h.diag());
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    for (i, l) in layouts.iter().enumerate() {
        let want = expected(SLOT, l, &remote_buf[offs[i]..offs[i] + lens[i]]);
        check_buffer(&format!("READ {i}"), &local[i * SLOT..(i + 1) * SLOT], &want, l);
    }

    let captured = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        captured.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let reqs: Vec<&RocePacketRepr> = pkts.iter().filter(|p| p.bth.opcode.0 == READ_REQUEST).collect();
    let asked: Vec<(u64, u32)> = reqs.iter().map(|p| p.reth.map(|r| (r.virt_addr, r.dma_len)).expect("RETH")).collect();
    let want: Vec<(u64, u32)> = offs.iter().zip(&lens).map(|(&o, &l)| (remote_va + o as u64, l as u32)).collect();
    assert_eq!(asked, want, "each READ REQUEST asks for the sum of its SGEs");
    let responses: Vec<&RocePacketRepr> = pkts.iter().filter(|p| READ_RESPONSES.contains(&p.bth.opcode.0)).collect();
    let ops: Vec<u8> = responses.iter().map(|p| p.bth.opcode.0).collect();
    // 630 B: FIRST, MIDDLE, LAST; 550 B: FIRST, MIDDLE, LAST; 0 B: ONLY; 51 B: ONLY.
    assert_eq!((lens[0], lens[1]), (630, 550));
    assert_eq!(ops, [0x0D, 0x0E, 0x0F, 0x0D, 0x0E, 0x0F, 0x10, 0x10], "response opcodes");
    let wire: Vec<u8> = responses.iter().flat_map(|p| p.payload.clone()).collect();
    assert_eq!(wire, read_bytes, "the responses carry the remote bytes of the READs in turn");
    // tshark's own reading of the DMA lengths.
    let ts = frames::tshark_fields(&pcap, &["infiniband.bth.opcode", "infiniband.reth.dmalen"]);
    assert_eq!(ts.len(), captured.len(), "tshark sees every frame");
    let dmalen: Vec<Option<u64>> = ts
        .iter()
        .filter(|r| frames::uint(&r[0]) == Some(u64::from(READ_REQUEST)))
        .map(|r| frames::uint(&r[1]))
        .collect();
    assert_eq!(dmalen, lens.iter().map(|&l| Some(l as u64)).collect::<Vec<_>>(), "tshark's RETH DMA lengths");
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(captured.len()), "{} frames captured; {}", captured.len(), verdict.summary());
}
