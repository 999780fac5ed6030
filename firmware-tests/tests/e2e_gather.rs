//! End-to-end gather lists and inline data on the requester (IBTA Vol 1 9.7.3 / 10.7;
//! ibv_post_send(3) `sg_list`, `IBV_SEND_INLINE`): the NIC checks every SGE of a WQE, then
//! sends the concatenation of their bytes, a packet's payload gathered from as many entries as
//! it spans; inline data travels in the WQE (up to 256 bytes go from the WQE beats the NIC
//! fetched, longer inline data is read from the SQ ring).
//!
//! What they pin: the bytes that arrive are the SGEs' bytes in order, at every path MTU, with
//! entries of odd lengths and alignments and packets that straddle entries; zero-length entries
//! are skipped; a bad entry anywhere fails the WR with LOC_PROT_ERR and nothing is sent; inline
//! data of 1..=448 bytes arrives and its source buffer is free at once; the QP's capabilities
//! follow from its WQE size; shape errors are refused by the driver; a NIC answering READs
//! while it sends gather-list WRITEs keeps both streams intact. (READs scattered into
//! several SGEs are in `e2e_read_sges.rs`.)
mod common;

use common::{budget, pattern, Hosts};
use rnic::{AccessFlags, ConnectOptions, Mtu, QueuePair, RecvWr, SendWr, Sge, WcOpcode, WcStatus};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
const GUARD: u8 = 0xEE;

/// Connected RC QPs A → B at `mtu`, A built for `sges` SGEs and `inline` inline bytes, B with
/// a 16-entry RQ.
fn qps<'mr>(h: &Hosts, mtu: Mtu, sges: u32, inline: u32) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa =
        h.pa.create_qp(&h.ca).set_max_send_wr(16).set_max_send_sge(sges).set_max_inline_data(inline).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
    let opts = ConnectOptions { path_mtu: mtu, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, &opts).unwrap();
    qb.connect_with(&ea, &opts).unwrap();
    (qa, qb)
}

/// An RDMA WRITE gathered from the pieces `(offset, len)` of A's buffer to offset `dst_off` of
/// B's; checks bytes, guards, the completion and the packet count.
fn gather_write(mtu: Mtu, pieces: &[(usize, usize)], dst_off: usize) {
    gather_write_dropping(mtu, pieces, dst_off, &[]);
}

/// [`gather_write`] with A's frames `drops` (0-based) lost on the wire: the requester resends
/// from the lost packet, inside the gather list.
fn gather_write_dropping(mtu: Mtu, pieces: &[(usize, usize)], dst_off: usize, drops: &[u64]) {
    let faults = rnic_sim::FaultConfig { drop_frames: drops.iter().map(|&n| (0, n)).collect(), ..Default::default() };
    let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
    let src_len = pieces.iter().map(|&(o, l)| o + l).max().unwrap_or(0) + 7;
    let mut src = pattern(pieces.len() as u64 * 31 + dst_off as u64, src_len);
    let total: usize = pieces.iter().map(|&(_, l)| l).sum();
    let want: Vec<u8> = pieces.iter().flat_map(|&(o, l)| src[o..o + l].to_vec()).collect();
    let mut dst = vec![GUARD; dst_off + total + 41];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, qb) = qps(&h, mtu, pieces.len().max(1) as u32, 0);
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let sges: Vec<Sge> = pieces.iter().map(|&(o, l)| src_mr.sge(o..o + l).unwrap()).collect();
        let (c0a, _) = h.counters();
        let wr = SendWr::rdma_write(0x6A, Sge::raw(0, 0, 0), remote.at(dst_off as u64))
            .with_sg_list(&sges)
            .unwrap()
            .signaled(true);
        qa.post_send_one(wr).unwrap();
        let wcs = h.wait(&h.ca, 1, budget(total) + 20_000);
        assert_eq!(
            (wcs[0].wr_id, wcs[0].status, wcs[0].opcode),
            (0x6A, WcStatus::Success, WcOpcode::RdmaWrite),
            "{wcs:?}"
        );
        let (c1a, _) = h.counters();
        let sent = c1a.values[counter::TX_REQUESTS as usize] - c0a.values[counter::TX_REQUESTS as usize];
        let n = (total.max(1) as u32).div_ceil(mtu.bytes());
        if drops.is_empty() {
            assert_eq!(sent, n, "request packets");
        } else {
            let retx = c1a.values[counter::RETRANSMITS as usize] - c0a.values[counter::RETRANSMITS as usize];
            assert!(sent > n && retx > 0, "{sent} packets for {n}, {retx} retransmissions after dropping {drops:?}");
        }
    }
    if let Some(d) = common::first_difference(&dst[dst_off..dst_off + total], &want) {
        panic!("MTU {} pieces {pieces:?}: {d}", mtu.bytes());
    }
    assert!(dst[..dst_off].iter().all(|&b| b == GUARD), "bytes before the target changed");
    assert!(dst[dst_off + total..].iter().all(|&b| b == GUARD), "bytes after the target changed");
}

#[test]
fn four_sges_at_odd_alignments_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        let m = mtu.bytes() as usize;
        // Entries shorter and longer than a packet, so packets straddle entries at every MTU.
        gather_write(mtu, &[(3, m / 2 + 5), (1000, 17), (2001, 2 * m + 33), (9000, m - 1)], 5);
    }
}

#[test]
fn sixteen_one_byte_to_long_sges() {
    let pieces: Vec<(usize, usize)> = (0..16).map(|i| (i * 5000 + i, [1, 63, 64, 65, 700, 4096, 3][i % 7])).collect();
    gather_write(Mtu::Mtu1024, &pieces, 0);
    gather_write(Mtu::Mtu256, &pieces, 61);
}

#[test]
fn a_lost_packet_mid_list_is_resent_from_inside_the_right_entry() {
    // 16 entries of odd sizes at MTU 256 (5200 bytes, 21 packets): a sequence NAK makes the requester
    // resume mid-message, walking the list to the lost packet's first byte.
    let pieces: Vec<(usize, usize)> =
        (0..16).map(|i| (i * 3000 + 2 * i, [1, 255, 256, 257, 700, 1000, 3][i % 7])).collect();
    for drop in [1u64, 5, 12, 19] {
        gather_write_dropping(Mtu::Mtu256, &pieces, 9, &[drop]);
    }
    gather_write_dropping(Mtu::Mtu1024, &[(5, 3000), (4000, 1), (5000, 2500)], 0, &[1, 3]);
}

/// One NIC sends gather-list WRITEs (packets whose payload is pieces of several entries) while
/// it answers its peer's READs: its READ responses and its requests share the transmit FIFOs,
/// and a response must never fall between a request packet's job and its pieces (the
/// scheduler's `job_lock`, `ResponseGen`). Six 16-entry WRITEs from A at MTU 256 (~21 packets
/// each, most of them pieced) and eight 4 KiB READs of A's memory by B, all posted at once:
/// every byte arrives at both ends.
#[test]
fn gather_writes_and_read_responses_leave_one_nic_together() {
    let h = Hosts::new(SimConfig::default());
    let pieces: Vec<(usize, usize)> =
        (0..16).map(|i| (i * 3000 + 2 * i, [1, 255, 256, 257, 700, 1000, 3][i % 7])).collect();
    let total: usize = pieces.iter().map(|&(_, l)| l).sum();
    let (writes, reads, rlen) = (6usize, 8usize, 4096usize);
    let mut src = pattern(41, 64 * 1024);
    let want_w: Vec<u8> = (0..writes).flat_map(|_| pieces.iter().flat_map(|&(o, l)| src[o..o + l].to_vec())).collect();
    let want_r = src[..reads * rlen].to_vec();
    let mut dst = vec![GUARD; writes * total];
    let mut rdst = vec![GUARD; reads * rlen];
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let rd_mr = h.pb.register(&mut rdst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).set_max_send_sge(16).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
        let opts = ConnectOptions {
            path_mtu: Mtu::Mtu256,
            access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ,
            max_rd_atomic: 8,
            max_dest_rd_atomic: 8,
            ..ConnectOptions::default()
        };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts).unwrap();
        qb.connect_with(&ea, &opts).unwrap();
        let remote_w = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let remote_r = qa.endpoint().unwrap().with_buffer(&src_mr).buffer.unwrap();
        let sges: Vec<Sge> = pieces.iter().map(|&(o, l)| src_mr.sge(o..o + l).unwrap()).collect();
        let wa: Vec<SendWr<'_>> = (0..writes)
            .map(|k| {
                SendWr::rdma_write(k as u64, Sge::raw(0, 0, 0), remote_w.at((k * total) as u64))
                    .with_sg_list(&sges)
                    .unwrap()
                    .signaled(true)
            })
            .collect();
        let wb: Vec<SendWr<'_>> = (0..reads)
            .map(|k| {
                SendWr::rdma_read(
                    100 + k as u64,
                    rd_mr.sge(k * rlen..(k + 1) * rlen).unwrap(),
                    remote_r.at((k * rlen) as u64),
                )
                .signaled(true)
            })
            .collect();
        qb.post_send(&wb).unwrap();
        qa.post_send(&wa).unwrap();
        let ga = h.wait(&h.ca, writes, budget(writes * total + reads * rlen));
        let gb = h.wait(&h.cb, reads, budget(reads * rlen));
        assert!(ga.iter().chain(&gb).all(|w| w.status == WcStatus::Success), "{ga:?} {gb:?}");
        assert_eq!(ga.iter().map(|w| w.wr_id).collect::<Vec<_>>(), (0..writes as u64).collect::<Vec<_>>());
        assert_eq!(gb.iter().map(|w| w.wr_id).collect::<Vec<_>>(), (100..100 + reads as u64).collect::<Vec<_>>());
    }
    if let Some(d) = common::first_difference(&dst, &want_w) {
        panic!("WRITEs: {d}");
    }
    if let Some(d) = common::first_difference(&rdst, &want_r) {
        panic!("READs: {d}");
    }
}

#[test]
fn zero_length_sges_are_skipped() {
    gather_write(Mtu::Mtu512, &[(0, 0), (10, 300), (0, 0), (0, 0), (700, 301), (0, 0)], 2);
    // Only empty entries: a zero-length WRITE.
    gather_write(Mtu::Mtu512, &[(0, 0), (0, 0)], 0);
}

#[test]
fn a_bad_lkey_in_any_sge_fails_the_wr_and_sends_nothing() {
    for bad in [0usize, 2, 3] {
        let h = Hosts::new(SimConfig::default());
        let mut src = pattern(9, 8192);
        let mut dst = vec![GUARD; 8192];
        {
            let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
            let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
            let (mut qa, qb) = qps(&h, Mtu::Mtu1024, 4, 0);
            let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
            let mut sges = vec![
                src_mr.sge(0..100).unwrap(),
                src_mr.sge(200..300).unwrap(),
                src_mr.sge(400..500).unwrap(),
                src_mr.sge(600..700).unwrap(),
            ];
            // Entry `bad` reaches past the end of the region.
            sges[bad] = Sge::raw(src_mr.addr() + 8000, 500, src_mr.lkey());
            let (c0a, _) = h.counters();
            let wr = SendWr::rdma_write(bad as u64, Sge::raw(0, 0, 0), remote.at(0))
                .with_sg_list(&sges)
                .unwrap()
                .signaled(true);
            qa.post_send_one(wr).unwrap();
            let wcs = h.wait(&h.ca, 1, 50_000);
            assert_eq!((wcs[0].wr_id, wcs[0].status), (bad as u64, WcStatus::LocProtErr), "entry {bad}: {wcs:?}");
            let (c1a, _) = h.counters();
            assert_eq!(
                c1a.values[counter::TX_REQUESTS as usize],
                c0a.values[counter::TX_REQUESTS as usize],
                "nothing sent"
            );
        }
        assert!(dst.iter().all(|&b| b == GUARD));
    }
}

#[test]
fn inline_writes_and_sends_of_1_to_448_bytes() {
    for (mtu, len) in
        [(Mtu::Mtu256, 1), (Mtu::Mtu256, 256), (Mtu::Mtu256, 300), (Mtu::Mtu4096, 448), (Mtu::Mtu1024, 77)]
    {
        let h = Hosts::new(SimConfig::default());
        let mut dst = vec![GUARD; 1024];
        let mut rbuf = vec![GUARD; 1024];
        let data = pattern(len as u64, len);
        {
            let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
            let rmr = h.pb.register(&mut rbuf, AccessFlags::LOCAL_WRITE).unwrap();
            let (mut qa, mut qb) = qps(&h, mtu, 1, 448);
            assert!(qa.query_qp().cap.max_inline_data >= 448);
            qb.post_recv_one(RecvWr::new(5, rmr.sge(0..1024).unwrap())).unwrap();
            let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
            // The source is a temporary: inline data is copied at post time.
            let w = SendWr::rdma_write(1, Sge::raw(0, 0, 0), remote.at(3))
                .with_inline(&data.clone())
                .unwrap()
                .signaled(true);
            let s = SendWr::send(2, None).with_inline(&data.clone()).unwrap().signaled(true);
            qa.post_send(&[w, s]).unwrap();
            let wcs = h.wait(&h.ca, 2, 100_000);
            assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
            let r = h.wait(&h.cb, 1, 100_000);
            assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (5, WcStatus::Success, len as u32), "{r:?}");
        }
        assert_eq!(&dst[3..3 + len], &data[..], "WRITE of {len} inline bytes at MTU {}", mtu.bytes());
        assert!(dst[..3].iter().chain(&dst[3 + len..]).all(|&b| b == GUARD));
        assert_eq!(&rbuf[..len], &data[..], "SEND of {len} inline bytes");
        assert!(rbuf[len..].iter().all(|&b| b == GUARD));
    }
}

#[test]
fn capabilities_follow_the_wqe_size_and_shape_errors_are_refused() {
    let h = Hosts::new(SimConfig::default());
    let cap = |sges: u32, inline: u32| {
        let q =
            h.pa.create_qp(&h.ca)
                .set_max_send_wr(4)
                .set_max_send_sge(sges)
                .set_max_inline_data(inline)
                .build()
                .unwrap();
        let c = q.query_qp().cap;
        (c.max_send_sge, c.max_inline_data)
    };
    assert_eq!(cap(1, 0), (1, 0));
    assert_eq!(cap(4, 0), (5, 64));
    assert_eq!(cap(1, 100), (13, 192));
    assert_eq!(cap(16, 0), (16, 448));
    assert_eq!(h.pa.create_qp(&h.ca).set_max_send_sge(17).build().unwrap_err().errno(), rnic::Errno::EOPNOTSUPP);
    assert_eq!(h.pa.create_qp(&h.ca).set_max_inline_data(449).build().unwrap_err().errno(), rnic::Errno::EOPNOTSUPP);
    let mut buf = vec![0u8; 64];
    let mr = h.pa.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let (mut qa, _qb) = qps(&h, Mtu::Mtu1024, 2, 0);
    let remote = rnic::RemoteAddr { addr: 0, rkey: 0 };
    // Built for 2 SGEs, the QP holds 5 (a 128-byte WQE) and 64 inline bytes.
    let six = [mr.sge(0..1).unwrap(); 6];
    let too_many = SendWr::rdma_write(1, mr.sge(0..1).unwrap(), remote).with_sg_list(&six).unwrap();
    assert_eq!(qa.post_send_one(too_many).unwrap_err().errno(), rnic::Errno::EINVAL);
    let read6 = SendWr::rdma_read(2, None, remote).with_sg_list(&six).unwrap();
    assert_eq!(
        qa.post_send_one(read6).unwrap_err().errno(),
        rnic::Errno::EINVAL,
        "a READ scatters into at most max_send_sge SGEs"
    );
    let atomic2 = SendWr::atomic_fetch_and_add(2, mr.sge(0..8).unwrap(), remote, 1)
        .with_sg_list(&[mr.sge(0..8).unwrap(), mr.sge(8..16).unwrap()])
        .unwrap();
    assert_eq!(
        qa.post_send_one(atomic2).unwrap_err().errno(),
        rnic::Errno::EINVAL,
        "an atomic's result goes into one SGE"
    );
    let long = SendWr::send(3, None).with_inline(&[0u8; 65]).unwrap();
    assert_eq!(qa.post_send_one(long).unwrap_err().errno(), rnic::Errno::EINVAL);
    let inline_read = SendWr::rdma_read(4, None, remote).with_inline(&[1]).unwrap();
    assert_eq!(qa.post_send_one(inline_read).unwrap_err().errno(), rnic::Errno::EINVAL);
    assert_eq!(SendWr::send(5, None).with_inline(&[0u8; 449]).unwrap_err().errno(), rnic::Errno::EINVAL);
    assert_eq!(
        SendWr::send(6, None).with_sg_list(&[mr.sge(0..1).unwrap(); 17]).unwrap_err().errno(),
        rnic::Errno::EINVAL
    );
    assert_eq!(qa.outstanding(), 0, "nothing was posted");
}

/// Inline data of up to 256 bytes goes from the WQE the NIC already fetched straight to the
/// wire, at every WQE size that holds inline data (128, 256, 512 bytes: 64, 192, 448 inline
/// bytes): the only DMA reads of the requester are its WQE fetches (at most the first five
/// 64-byte slots of each WQE), with no second read of the ring for the payload. Longer inline
/// data (257..448 bytes, a 512-byte WQE) is still read from the ring, and arrives intact too.
#[test]
fn inline_data_of_up_to_256_bytes_is_not_read_again() {
    for (cap, lens) in [(64u32, [1usize, 17, 63, 64]), (192, [65, 128, 129, 192]), (448, [193, 255, 256, 2])] {
        let h = Hosts::new(SimConfig::default());
        let n = lens.len();
        let mut dst = vec![GUARD; 512 * n];
        let mut rbuf = vec![GUARD; 512 * n];
        let datas: Vec<Vec<u8>> = lens.iter().map(|&l| pattern(l as u64 * 3 + 1, l)).collect();
        {
            let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
            let rmr = h.pb.register(&mut rbuf, AccessFlags::LOCAL_WRITE).unwrap();
            let (mut qa, mut qb) = qps(&h, Mtu::Mtu256, 1, cap);
            let stride = match qa.query_qp().cap.max_inline_data {
                64 => 128u64,
                192 => 256,
                448 => 512,
                other => panic!("inline {cap}: the QP holds {other} inline bytes"),
            };
            for k in 0..n {
                qb.post_recv_one(RecvWr::new(k as u64, rmr.sge(512 * k..512 * (k + 1)).unwrap())).unwrap();
            }
            let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
            let read0 = h.world.borrow().stats().nics[0].dma.read_bytes;
            let mut wrs = Vec::new();
            for (k, d) in datas.iter().enumerate() {
                let at = remote.at(512 * k as u64 + 3);
                wrs.push(SendWr::rdma_write(k as u64, Sge::raw(0, 0, 0), at).with_inline(d).unwrap().signaled(true));
                wrs.push(SendWr::send(100 + k as u64, None).with_inline(d).unwrap().signaled(true));
            }
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, 2 * n, 200_000);
            assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
            let r = h.wait(&h.cb, n, 100_000);
            for (k, c) in r.iter().enumerate() {
                assert_eq!((c.wr_id, c.status, c.byte_len as usize), (k as u64, WcStatus::Success, lens[k]));
            }
            let read = h.world.borrow().stats().nics[0].dma.read_bytes - read0;
            let fetch = 2 * n as u64 * stride.min(5 * 64);
            assert!(read <= fetch, "inline {cap}: {read} bytes read for {} WQE bytes fetched", fetch);
        }
        for (k, d) in datas.iter().enumerate() {
            let w = &dst[512 * k..512 * (k + 1)];
            assert_eq!(&w[3..3 + d.len()], &d[..], "WRITE of {} inline bytes (cap {cap})", d.len());
            assert!(w[..3].iter().chain(&w[3 + d.len()..]).all(|&b| b == GUARD));
            let s = &rbuf[512 * k..512 * (k + 1)];
            assert_eq!(&s[..d.len()], &d[..], "SEND of {} inline bytes (cap {cap})", d.len());
            assert!(s[d.len()..].iter().all(|&b| b == GUARD));
        }
    }
}

/// Inline WRITEs and SENDs (1..=448 bytes, most of them from the fetched WQE) through losses
/// at MTU 256, 16 in flight: each lost packet rewinds the requester, which fetches the WQEs
/// again and resends their inline data. Every message arrives once and intact. (Stale inline
/// packets dropped in the assembler's queues, with their inline beats, are covered by
/// `tx_assembler_tb::inline_pieces_take_their_own_beats`: at this rate the queues are short
/// when a NAK arrives.)
#[test]
fn inline_messages_survive_losses_and_rewinds() {
    const N: usize = 96;
    let faults =
        rnic_sim::FaultConfig { drop_frames: vec![(0, 5), (0, 23), (0, 24), (0, 50), (0, 71)], ..Default::default() };
    let h = Hosts::new(SimConfig { faults, ..SimConfig::default() });
    let mut dst = vec![GUARD; 512 * N];
    let mut rbuf = vec![GUARD; 512 * N];
    let lens: Vec<usize> = (0..N).map(|k| [1, 64, 65, 200, 256, 257, 448, 31, 128, 129, 192, 255][k % 12]).collect();
    let datas: Vec<Vec<u8>> = lens.iter().enumerate().map(|(k, &l)| pattern(k as u64 + 7, l)).collect();
    let (c0a, _) = h.counters();
    let tx0 = h.world.borrow().stats().nics[0].tx.frames;
    {
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let rmr = h.pb.register(&mut rbuf, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).set_max_inline_data(448).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(64).build().unwrap();
        let opts =
            ConnectOptions { path_mtu: Mtu::Mtu256, access: AccessFlags::REMOTE_WRITE, ..ConnectOptions::default() };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &opts).unwrap();
        qb.connect_with(&ea, &opts).unwrap();
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let sends: Vec<usize> = (0..N).filter(|k| k % 3 == 2).collect();
        for (i, &k) in sends.iter().enumerate() {
            qb.post_recv_one(RecvWr::new(i as u64, rmr.sge(512 * k..512 * (k + 1)).unwrap())).unwrap();
        }
        let (mut posted, mut done) = (0, 0);
        while done < N {
            while posted < N && posted - done < 16 {
                let k = posted;
                let wr = if k % 3 == 2 {
                    SendWr::send(k as u64, None)
                } else {
                    SendWr::rdma_write(k as u64, Sge::raw(0, 0, 0), remote.at(512 * k as u64 + 1))
                };
                qa.post_send_one(wr.with_inline(&datas[k]).unwrap().signaled(true)).unwrap();
                posted += 1;
            }
            let wcs = h.wait(&h.ca, 1, 400_000);
            assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}\n{}", h.diag());
            done += wcs.len();
        }
        let r = h.wait(&h.cb, sends.len(), 200_000);
        assert!(r.iter().all(|c| c.status == WcStatus::Success), "{r:?}");
    }
    let (c1a, _) = h.counters();
    let d = |i: u16| c1a.values[i as usize] - c0a.values[i as usize];
    let frames = h.world.borrow().stats().nics[0].tx.frames - tx0;
    assert!(d(counter::RETRANSMITS) > 0, "no rewind: {}", h.diag());
    assert!(frames > N as u64, "{frames} frames for {N} messages, 5 of them lost");
    for k in 0..N {
        let l = lens[k];
        if k % 3 == 2 {
            let s = &rbuf[512 * k..512 * (k + 1)];
            assert_eq!(&s[..l], &datas[k][..], "SEND {k} of {l} inline bytes");
            assert!(s[l..].iter().all(|&b| b == GUARD), "SEND {k}: bytes after it");
        } else {
            let w = &dst[512 * k..512 * (k + 1)];
            assert_eq!(&w[1..1 + l], &datas[k][..], "WRITE {k} of {l} inline bytes");
            assert!(w[..1].iter().chain(&w[1 + l..]).all(|&b| b == GUARD), "WRITE {k}: bytes around it");
        }
    }
}

/// A capture of a gathered WRITE (4 entries, packets straddling them, MTU 256) and of inline
/// SEND / WRITE WITH IMMEDIATE packets decodes cleanly in tshark's InfiniBand dissector, every
/// ICRC verifies in scapy's RoCE layer, and the request payloads on the wire, in PSN order, are
/// the posted bytes (pad bytes excluded).
#[test]
fn gather_and_inline_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("gather.pcap");
    let h = Hosts::new(SimConfig::default());
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(77, 4096);
    let mut dst = vec![GUARD; 4096];
    let mut rbuf = vec![GUARD; 512];
    let pieces = [(1usize, 130usize), (300, 3), (500, 400), (1001, 97)];
    let gathered: Vec<u8> = pieces.iter().flat_map(|&(o, l)| src[o..o + l].to_vec()).collect();
    let inline = pattern(5, 301);
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let rmr = h.pb.register(&mut rbuf, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, Mtu::Mtu256, 4, 320);
        qb.post_recv_one(RecvWr::new(1, rmr.sge(0..512).unwrap())).unwrap();
        qb.post_recv_one(RecvWr::zero_length(2)).unwrap();
        let remote = qb.endpoint().unwrap().with_buffer(&dst_mr).buffer.unwrap();
        let sges: Vec<Sge> = pieces.iter().map(|&(o, l)| src_mr.sge(o..o + l).unwrap()).collect();
        let g = SendWr::rdma_write(1, Sge::raw(0, 0, 0), remote.at(0)).with_sg_list(&sges).unwrap().signaled(true);
        let s = SendWr::send(2, None).with_inline(&inline).unwrap().signaled(true);
        let wi = SendWr::rdma_write(3, Sge::raw(0, 0, 0), remote.at(2000))
            .with_opcode(rnic::WrOpcode::RdmaWriteWithImm)
            .with_imm(0x0102_0304)
            .with_inline(&inline[..5])
            .unwrap()
            .signaled(true);
        qa.post_send(&[g, s, wi]).unwrap();
        let wcs = h.wait(&h.ca, 3, 200_000);
        assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
        assert_eq!(h.wait(&h.cb, 2, 200_000).len(), 2);
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();
    assert_eq!(&dst[..gathered.len()], &gathered[..]);
    assert_eq!(&rbuf[..301], &inline[..]);
    assert_eq!(&dst[2000..2005], &inline[..5]);

    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let reqs: Vec<&RocePacketRepr> = pkts.iter().filter(|p| p.aeth.is_none()).collect();
    let ops: Vec<u8> = reqs.iter().map(|p| p.bth.opcode.0).collect();
    // WRITE FIRST/MIDDLE/LAST (630 B at MTU 256), SEND FIRST/LAST (301 B), WRITE ONLY WITH IMM.
    assert_eq!(ops, vec![0x06, 0x07, 0x08, 0x00, 0x02, 0x0B], "request opcodes");
    let wire: Vec<u8> = reqs[..3].iter().flat_map(|p| p.payload.clone()).collect();
    assert_eq!(wire, gathered, "the gathered WRITE's payload on the wire");
    let sent: Vec<u8> = reqs[3..5].iter().flat_map(|p| p.payload.clone()).collect();
    assert_eq!(sent, inline, "the inline SEND's payload on the wire");
    assert_eq!(reqs[5].payload, inline[..5].to_vec());
    assert_eq!(reqs[5].bth.pad_count, 3);
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}
