//! End-to-end receive scatter: an incoming SEND (or SEND_WITH_IMM) fills the scatter entries of
//! its receive WQE in order, entry 0 first, skipping zero-length entries, across packet and
//! entry boundaries at any alignment (IBTA Vol 1 9.7.4.1.3, 10.8.3; ibv_post_recv(3)). Two
//! simulated hosts, the Verilated NIC RTL on each, driven through the `rnic` verbs driver: every
//! byte that lands in a receive buffer was placed there by the responder NIC's RX engine.
//!
//! What they pin:
//! - 4 and 15 entries at odd addresses and lengths, path MTU 256 and 4096 (so packets straddle
//!   entries, and entries straddle packets): every message byte lands in its entry, in order,
//!   and no byte outside the entries' filled parts changes; the receive completes IBV_WC_RECV
//!   with `byte_len` = message length; nothing is NAKed or retransmitted;
//! - a message exactly as long as all entries together; zero-length entries (with a junk lkey)
//!   at the front and in the middle are skipped;
//! - SEND_WITH_IMM into several entries carries its immediate; RDMA_WRITE_WITH_IMM of zero
//!   bytes consumes a multi-entry receive without touching its buffers;
//! - one byte more than the entries hold: the receive completes IBV_WC_LOC_LEN_ERR and the
//!   send IBV_WC_REM_INV_REQ_ERR (NAK invalid request), as with one entry, and nothing is
//!   written outside the entries (nothing at all for a one-packet message);
//! - entry 2 with a bad lkey, or in a region without LOCAL_WRITE: IBV_WC_LOC_PROT_ERR and
//!   IBV_WC_REM_OP_ERR (NAK remote operational error) as for entry 0, and no byte written;
//! - many receives in a row on RQs of 4 with 128- and 256-byte receive WQEs: the ring wraps and
//!   each message lands in its own entries;
//! - a capture of scattered traffic decodes cleanly in tshark and verifies in scapy.
mod common;

use common::sgl::{check_buffer, expected, sges, spread, Layout, GUARD};
use common::{budget, delta, first_difference, nonzero, pattern, Hosts};
use rnic::{
    AccessFlags, ConnectOptions, MemoryRegion, Mtu, QpState, QueuePair, RecvWr, SendWr, Sge, WcFlags, WcOpcode,
    WcStatus, WrOpcode,
};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;
const IMM: u32 = u32::from_ne_bytes([0xA1, 0xB2, 0xC3, 0xD4]);

fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions { path_mtu: mtu, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() }
}

/// A (SQ 32) → B (SQ 8, RQ `rq` entries of `max_recv_sge` scatter entries), connected.
fn qps<'mr>(h: &Hosts, o: &ConnectOptions, rq: u32, max_recv_sge: u32) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).build().unwrap();
    let mut qb =
        h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(rq).set_max_recv_sge(max_recv_sge).build().unwrap();
    assert!(qb.query_qp().cap.max_recv_sge >= max_recv_sge);
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, o).unwrap();
    qb.connect_with(&ea, o).unwrap();
    (qa, qb)
}

/// One signaled SEND (`opcode` SEND or SEND_WITH_IMM) of `len` bytes from offset `src_off` into
/// one receive WR of `layout`; checks both completions, every byte of B's buffer and the
/// counters.
fn scatter_and_check(mtu: Mtu, layout: &Layout, len: usize, src_off: usize, opcode: WrOpcode) {
    let h = Hosts::new(SimConfig::default());
    let buf_len = layout.iter().map(|&(o, l)| o + l).max().unwrap_or(0) + 67;
    let mut src = pattern(len as u64 ^ 0x5CA7 ^ u64::from(mtu.bytes()), src_off + len + 9);
    let mut dst = vec![GUARD; buf_len];
    let msg = src[src_off..src_off + len].to_vec();
    let lens: Vec<usize> = layout.iter().map(|e| e.1).collect();
    let what = format!("{opcode:?} of {len} B at MTU {} into entries {lens:?}", mtu.bytes());
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(mtu), 4, layout.len().max(1) as u32);
        let (c0a, c0b) = h.counters();
        qb.post_recv_one(RecvWr::with_sg_list(0x5CA, &sges(&dst_mr, layout)).unwrap()).unwrap();
        let sge = (len > 0).then(|| src_mr.sge(src_off..src_off + len).unwrap());
        qa.post_send_one(SendWr::send(0xA5, sge).with_opcode(opcode).with_imm(IMM).signaled(true)).unwrap();
        let s = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!(
            (s.wr_id, s.status, s.opcode),
            (0xA5, WcStatus::Success, WcOpcode::Send),
            "{what}: {s:?}\n{}",
            h.diag()
        );
        let r = h.wait(&h.cb, 1, budget(len))[0];
        let (flags, imm) =
            if opcode == WrOpcode::SendWithImm { (WcFlags::WITH_IMM, IMM) } else { (WcFlags::empty(), 0) };
        assert_eq!(
            (r.wr_id, r.status, r.opcode, r.byte_len, r.qp_num, r.wc_flags, r.imm_data),
            (0x5CA, WcStatus::Success, WcOpcode::Recv, len as u32, qb.qp_num(), flags, imm),
            "{what}: {r:?}\n{}",
            h.diag()
        );
        assert_eq!((qa.outstanding(), qb.recv_outstanding()), (0, 0));
        h.settle(2_000);
        let (c1a, c1b) = h.counters();
        let n = (len.max(1) as u32).div_ceil(mtu.bytes());
        assert_eq!(delta(&c1b, &c0b, counter::RX_ROCE_OK), n, "{what}: packets accepted");
        for c in [counter::DROP_KEY, counter::DROP_PSN, counter::DROP_INV_REQ, counter::TX_NAKS, counter::RETRANSMITS] {
            assert_eq!(delta(&c1b, &c0b, c), 0, "{what}: responder {}", counter::NAMES[c as usize]);
            assert_eq!(delta(&c1a, &c0a, c), 0, "{what}: requester {}", counter::NAMES[c as usize]);
        }
        assert_eq!(delta(&c1b, &c0b, counter::CQES), 1, "{what}: receive CQEs");
    }
    check_buffer(&what, &dst, &expected(buf_len, layout, &msg), layout);
}

/// Entry lengths for the layouts below, chosen so packets of every MTU here straddle entries.
const FOUR: [usize; 4] = [100, 333, 17, 1201];
const FIFTEEN: [usize; 15] = [1, 255, 256, 257, 63, 64, 65, 777, 3, 1024, 4095, 129, 2, 500, 1111];

#[test]
fn send_into_four_entries_at_mtu_256_and_4096() {
    let total: usize = FOUR.iter().sum();
    for mtu in [Mtu::Mtu256, Mtu::Mtu4096] {
        for (len, src_off, seed) in [(total - 5, 3, 1), (433, 0, 2), (101, 1, 3), (1, 7, 4)] {
            scatter_and_check(mtu, &spread(&FOUR, seed), len, src_off, WrOpcode::Send);
        }
    }
}

#[test]
fn send_into_fifteen_entries_at_mtu_256_and_4096() {
    let total: usize = FIFTEEN.iter().sum();
    for mtu in [Mtu::Mtu256, Mtu::Mtu4096] {
        for (len, src_off, seed) in [(total - 77, 5, 11), (5000, 63, 12)] {
            scatter_and_check(mtu, &spread(&FIFTEEN, seed), len, src_off, WrOpcode::Send);
        }
    }
    // At MTU 1024, with the entries in reverse order.
    let rev: Vec<usize> = FIFTEEN.iter().rev().copied().collect();
    scatter_and_check(Mtu::Mtu1024, &spread(&rev, 5), total - 1, 1, WrOpcode::Send);
}

#[test]
fn a_message_exactly_filling_all_entries() {
    for (mtu, lens) in
        [(Mtu::Mtu256, FOUR.to_vec()), (Mtu::Mtu4096, FIFTEEN.to_vec()), (Mtu::Mtu512, vec![256, 256, 256, 256, 256])]
    {
        let total: usize = lens.iter().sum();
        scatter_and_check(mtu, &spread(&lens, 7), total, 1, WrOpcode::Send);
    }
}

#[test]
fn zero_length_entries_are_skipped() {
    // At the front, in the middle (several in a row) and at the end; junk lkeys on all of them.
    let lens = [0, 300, 0, 0, 5, 0, 2000, 0];
    let total: usize = lens.iter().sum();
    for mtu in [Mtu::Mtu256, Mtu::Mtu1024] {
        scatter_and_check(mtu, &spread(&lens, 3), total, 2, WrOpcode::Send);
        scatter_and_check(mtu, &spread(&lens, 4), 302, 0, WrOpcode::Send);
    }
    // Only zero-length entries: a zero-length SEND fits.
    scatter_and_check(Mtu::Mtu1024, &spread(&[0, 0, 0], 1), 0, 0, WrOpcode::Send);
}

#[test]
fn send_with_imm_into_several_entries() {
    for (mtu, len) in [(Mtu::Mtu256, 1500), (Mtu::Mtu4096, 6000), (Mtu::Mtu256, 0)] {
        scatter_and_check(mtu, &spread(&FIFTEEN[5..12], 9), len, 1, WrOpcode::SendWithImm);
    }
}

#[test]
fn zero_length_rdma_write_with_imm_consumes_a_multi_entry_receive() {
    let h = Hosts::new(SimConfig::default());
    let layout = spread(&FOUR, 2);
    let buf_len = 2000;
    let mut dst = vec![GUARD; buf_len];
    let mut target = vec![GUARD; 64];
    let mut src = pattern(1, 300);
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let tgt_mr = h.pb.register(&mut target, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(Mtu::Mtu1024), 4, 4);
        qb.post_recv_one(RecvWr::with_sg_list(0x77, &sges(&dst_mr, &layout)).unwrap()).unwrap();
        let mut wr = SendWr::rdma_write(0x44, Sge::raw(0, 0, 0), tgt_mr.remote_addr(0).unwrap())
            .with_opcode(WrOpcode::RdmaWriteWithImm)
            .with_imm(IMM)
            .signaled(true);
        wr.num_sge = 0;
        qa.post_send_one(wr).unwrap();
        let s = h.wait(&h.ca, 1, 200_000)[0];
        assert_eq!((s.wr_id, s.status), (0x44, WcStatus::Success), "{s:?}");
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!(
            (r.wr_id, r.status, r.opcode, r.byte_len, r.wc_flags, r.imm_data),
            (0x77, WcStatus::Success, WcOpcode::RecvRdmaWithImm, 0, WcFlags::WITH_IMM, IMM),
            "{r:?}"
        );
        assert_eq!(qb.recv_outstanding(), 0);
        // The next SEND takes the next receive, not what is left of this one.
        qb.post_recv_one(RecvWr::with_sg_list(0x78, &sges(&dst_mr, &layout)).unwrap()).unwrap();
        qa.post_send_one(SendWr::send(0x45, src_mr.sge(0..300).unwrap()).signaled(true)).unwrap();
        let r = h.wait(&h.cb, 1, 200_000)[0];
        assert_eq!((r.wr_id, r.status, r.byte_len), (0x78, WcStatus::Success, 300), "{r:?}");
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
    }
    let want = expected(buf_len, &layout, &src);
    check_buffer("SEND after a zero-length WRITE_WITH_IMM", &dst, &want, &layout);
    assert!(target.iter().all(|&b| b == GUARD));
}

/// The outcome of a SEND the responder refuses: (send WC, receive WC, B's buffer, counters A, B).
struct Refused {
    send: rnic::WorkCompletion,
    recv: rnic::WorkCompletion,
    buf: Vec<u8>,
    ca: rnic::Counters,
    cb: rnic::Counters,
}

/// Makes a bad scatter entry `(addr, length, lkey)` from (buffer MR, second MR without
/// LOCAL_WRITE, the entry's (offset, length)).
type BadSge = fn(&MemoryRegion<'_>, &MemoryRegion<'_>, (usize, usize)) -> (u64, u32, u32);

/// A SEND of `len` bytes at `mtu` into a receive of `layout` in B's buffer; entry `bad` (if
/// any) gets `bad_sge(buffer MR, second MR without LOCAL_WRITE, entry)` instead.
fn refused(mtu: Mtu, layout: &Layout, len: usize, bad: Option<(usize, BadSge)>) -> Refused {
    let h = Hosts::new(SimConfig::default());
    let buf_len = layout.iter().map(|&(o, l)| o + l).max().unwrap() + 64;
    let mut src = pattern(9, len);
    let mut buf = vec![GUARD; buf_len];
    let mut ro = vec![GUARD; buf_len];
    let (send, recv, ca, cb);
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let mr = h.pb.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
        let ro_mr = h.pb.register(&mut ro, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(mtu), 4, layout.len() as u32);
        let mut list = sges(&mr, layout);
        if let Some((k, f)) = bad {
            let (a, l, key) = f(&mr, &ro_mr, layout[k]);
            list[k] = Sge::raw(a, l, key);
        }
        qb.post_recv_one(RecvWr::with_sg_list(0xE1, &list).unwrap()).unwrap();
        qa.post_send_one(SendWr::send(0x5E, src_mr.sge(0..len).unwrap()).signaled(true)).unwrap();
        recv = h.wait(&h.cb, 1, budget(len))[0];
        send = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!(qb.state(), QpState::Err, "a receive error moves the responder to ERR");
        assert_eq!(recv.qp_num, qb.qp_num());
        h.settle(5_000);
        (ca, cb) = h.counters();
    }
    assert!(ro.iter().all(|&b| b == GUARD), "the region without LOCAL_WRITE was written");
    Refused { send, recv, buf, ca, cb }
}

#[test]
fn one_byte_more_than_all_entries_is_loc_len_err() {
    // One packet (MTU 4096) and several (MTU 256).
    for (mtu, lens) in
        [(Mtu::Mtu4096, FOUR.to_vec()), (Mtu::Mtu256, FOUR.to_vec()), (Mtu::Mtu256, FIFTEEN[..9].to_vec())]
    {
        let layout = spread(&lens, 6);
        let total: usize = lens.iter().sum();
        let r = refused(mtu, &layout, total + 1, None);
        let what = format!("{} B into entries {lens:?} at MTU {}", total + 1, mtu.bytes());
        assert_eq!((r.recv.wr_id, r.recv.status), (0xE1, WcStatus::LocLenErr), "{what}: {:?}", r.recv);
        assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemInvReqErr), "{what}: {:?}", r.send);
        assert_eq!(r.ca.get("rx_nak_inv_req"), Some(1), "{what}: {:?}", nonzero(&r.ca));
        assert_eq!((r.cb.get("tx_naks"), r.cb.get("cqes")), (Some(1), Some(1)), "{what}: {:?}", nonzero(&r.cb));
        // Nothing outside the entries; a one-packet message writes nothing at all; the packets
        // before the one that does not fit land where they belong.
        let inside = |i: usize| layout.iter().any(|&(o, l)| o <= i && i < o + l);
        if let Some(i) = (0..r.buf.len()).find(|&i| !inside(i) && r.buf[i] != GUARD) {
            panic!("{what}: byte {i} outside the entries was written");
        }
        if total < mtu.bytes() as usize {
            assert!(r.buf.iter().all(|&b| b == GUARD), "{what}: a refused one-packet SEND wrote the buffer");
        } else {
            let src = pattern(9, total + 1);
            let want = expected(r.buf.len(), &layout, &src[..total]);
            for (i, (&g, &w)) in r.buf.iter().zip(&want).enumerate() {
                assert!(g == GUARD || g == w, "{what}: byte {i} is {g:#04x}: neither untouched nor the message's");
            }
        }
    }
}

fn assert_prot_err(r: &Refused, what: &str) {
    assert_eq!((r.recv.wr_id, r.recv.status), (0xE1, WcStatus::LocProtErr), "{what}: {:?}", r.recv);
    assert_eq!((r.send.wr_id, r.send.status), (0x5E, WcStatus::RemOpErr), "{what}: {:?}", r.send);
    assert!(r.buf.iter().all(|&b| b == GUARD), "{what}: a refused SEND wrote the buffer");
    assert_eq!(r.ca.get("rx_nak_rem_op"), Some(1), "{what}: {:?}", nonzero(&r.ca));
}

#[test]
fn entry_2_with_a_bad_lkey_is_loc_prot_err_and_writes_nothing() {
    let layout = spread(&FOUR, 8);
    for mtu in [Mtu::Mtu256, Mtu::Mtu4096] {
        let r =
            refused(mtu, &layout, 1000, Some((2, |mr, _, (o, l)| (mr.addr() + o as u64, l as u32, mr.lkey() ^ 0x80))));
        assert_prot_err(&r, &format!("bad lkey in entry 2, MTU {}", mtu.bytes()));
    }
    // Past the end of its region.
    let r = refused(Mtu::Mtu1024, &layout, 300, Some((2, |mr, _, (o, _)| (mr.addr() + o as u64, 4000, mr.lkey()))));
    assert_prot_err(&r, "entry 2 past its region");
    // The last of 15 entries bad, a message that ends in the first entry.
    let layout = spread(&FIFTEEN, 2);
    let r = refused(
        Mtu::Mtu1024,
        &layout,
        1,
        Some((14, |mr, _, (o, l)| (mr.addr() + o as u64, l as u32, mr.lkey() ^ 0x80))),
    );
    assert_prot_err(&r, "bad lkey in entry 14");
}

#[test]
fn entry_2_without_local_write_is_loc_prot_err_and_writes_nothing() {
    let layout = spread(&FOUR, 9);
    for mtu in [Mtu::Mtu256, Mtu::Mtu4096] {
        let r = refused(mtu, &layout, 600, Some((2, |_, ro, (o, l)| (ro.addr() + o as u64, l as u32, ro.lkey()))));
        assert_prot_err(&r, &format!("entry 2 without LOCAL_WRITE, MTU {}", mtu.bytes()));
    }
}

/// `n` messages through an RQ of 4 receive WQEs of `max_sge` entries (the ring wraps): message
/// `i` (`lens[i % ..]` bytes) scatters into its own `max_sge` entries.
fn many_receives(max_sge: usize, stride: u64, mtu: Mtu, n: usize) {
    let h = Hosts::new(SimConfig::default());
    const SLOT: usize = 6000;
    let entry_lens: Vec<Vec<usize>> =
        (0..n).map(|i| (0..max_sge).map(|k| [0, 1, 77, 256, 300, 513][(i + k * 5) % 6]).collect()).collect();
    let layouts: Vec<Layout> =
        (0..n).map(|i| spread(&entry_lens[i], i).into_iter().map(|(o, l)| (i * SLOT + o, l)).collect()).collect();
    let lens: Vec<usize> = (0..n).map(|i| entry_lens[i].iter().sum::<usize>() - (i % 3)).collect();
    let mut src = pattern(77, n * SLOT);
    let mut dst = vec![GUARD; n * SLOT];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(mtu), 4, max_sge as u32);
        let rec_stride = 64u64 << rnic_contract::recv_wqe::log_stride_for(qb.query_qp().cap.max_recv_sge as usize);
        assert_eq!(rec_stride, stride, "receive WQE size");
        let (mut posted, mut received, mut sent) = (0, 0, 0);
        let mut wcs = [rnic::WorkCompletion::default(); 8];
        let start = h.world.borrow().cycles();
        while received < n {
            while posted < n && qb.recv_outstanding() < 4 {
                qb.post_recv_one(RecvWr::with_sg_list(posted as u64, &sges(&dst_mr, &layouts[posted])).unwrap())
                    .unwrap();
                posted += 1;
            }
            while sent < posted && qa.outstanding() < 8 {
                let sge = (lens[sent] > 0).then(|| src_mr.sge(sent * SLOT..sent * SLOT + lens[sent]).unwrap());
                qa.post_send_one(SendWr::send(sent as u64, sge).signaled(true)).unwrap();
                sent += 1;
            }
            let k = h.cb.poll(&mut wcs).unwrap();
            for w in &wcs[..k] {
                assert_eq!(
                    (w.wr_id, w.status, w.byte_len),
                    (received as u64, WcStatus::Success, lens[received] as u32),
                    "{w:?}\n{}",
                    h.diag()
                );
                received += 1;
            }
            let k = h.ca.poll(&mut wcs).unwrap();
            assert!(wcs[..k].iter().all(|w| w.status == WcStatus::Success), "{:?}", &wcs[..k]);
            assert!(h.world.borrow().cycles() - start < 4_000_000, "stalled at {received}/{n}\n{}", h.diag());
        }
    }
    for i in 0..n {
        let msg = &src[i * SLOT..i * SLOT + lens[i]];
        let want = expected(dst.len(), &layouts[i], msg);
        let got = &dst[i * SLOT..(i + 1) * SLOT];
        let layout: Layout = layouts[i].iter().map(|&(o, l)| (o - i * SLOT, l)).collect();
        check_buffer(
            &format!("message {i} ({} entries of {:?})", max_sge, entry_lens[i]),
            got,
            &want[i * SLOT..(i + 1) * SLOT],
            &layout,
        );
        assert!(first_difference(got, &want[i * SLOT..(i + 1) * SLOT]).is_none());
    }
}

#[test]
fn many_receives_wrap_the_ring_with_128_byte_wqes() {
    many_receives(5, 128, Mtu::Mtu256, 14);
}

#[test]
fn many_receives_wrap_the_ring_with_256_byte_wqes() {
    many_receives(12, 256, Mtu::Mtu1024, 14);
}

/// A capture of scattered SENDs (several packets straddling entries, then a refused one) is
/// clean in tshark and every ICRC verifies in scapy.
#[test]
fn scatter_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::oracle;
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("scatter.pcap");
    let h = Hosts::new(SimConfig::default());
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let layout = spread(&FOUR, 4);
    let total: usize = FOUR.iter().sum();
    let mut src = pattern(4, total + 1);
    let mut dst = vec![GUARD; 2000];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(Mtu::Mtu256), 4, 4);
        qb.post_recv_one(RecvWr::with_sg_list(1, &sges(&dst_mr, &layout)).unwrap()).unwrap();
        qa.post_send_one(SendWr::send(1, src_mr.sge(0..total).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::Success);
        qb.post_recv_one(RecvWr::with_sg_list(2, &sges(&dst_mr, &layout)).unwrap()).unwrap();
        qa.post_send_one(SendWr::send(2, src_mr.sge(0..total + 1).unwrap()).signaled(true)).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemInvReqErr);
        let r = h.wait(&h.cb, 2, 200_000);
        assert_eq!((r[0].status, r[1].status), (WcStatus::Success, WcStatus::LocLenErr));
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    assert!(frames.len() >= 12, "{} frames", frames.len());
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}
