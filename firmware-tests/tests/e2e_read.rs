//! End-to-end RDMA READ: two simulated hosts, the Verilated NIC RTL on each, driven through the
//! `rnic` verbs driver. A (NIC 0) reads from B's (NIC 1) memory. System tests of the RTL: B's
//! NIC answers from host memory by DMA with READ RESPONSE packets, A's NIC writes them into the
//! local buffer and completes the WQE; the driver does no NIC work.
//!
//! What they pin (IBTA Vol 1 9.4.3, 9.5, 9.7.4.1.4, 9.7.5.1.3; ibv_post_send(3), ibv_poll_cq(3)):
//! - READs of 0 bytes, 1 byte, one path MTU, one MTU + 1 and many packets (100 KiB) arrive
//!   intact at every path MTU, from and to unaligned addresses; the WR completes
//!   IBV_WC_RDMA_READ with `byte_len` = length; one READ REQUEST goes out and
//!   ceil(len / MTU) READ RESPONSE packets come back; no local byte outside the SGE changes;
//! - WRITEs, SENDs and READs posted back to back on one QP complete in order, with their data;
//!   READs in both directions at once complete;
//! - a READ with a bad rkey, past the end of the remote MR, of a region or QP without
//!   REMOTE_READ completes with IBV_WC_REM_ACCESS_ERR (NAK remote access error) and writes no
//!   local byte; a local SGE in a region without LOCAL_WRITE completes with LOC_PROT_ERR before
//!   anything is sent;
//! - a lost READ REQUEST is resent on the local ACK timeout; a lost READ RESPONSE in the middle
//!   makes the requester resume the READ from the first missing response (the responder answers
//!   the duplicate request again: exactly the missing responses travel twice); a lost last
//!   response is resumed after the timeout;
//! - a capture of READ traffic is clean in tshark and its ICRCs verify in scapy.
mod common;

use common::{budget, delta, nonzero, pattern, Hosts};
use rnic::{AccessFlags, ConnectOptions, Mtu, QueuePair, RemoteAddr, SendWr, WcOpcode, WcStatus};
use rnic_contract::regs::counter;
use rnic_sim::SimConfig;

const ALL_MTUS: [Mtu; 5] = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096];
/// The local buffer's initial content, and the guard around every READ's target.
const GUARD: u8 = 0xEE;

fn hosts() -> Hosts {
    Hosts::new(SimConfig::default())
}

/// Hosts whose NIC `nic` loses its transmitted frame number `n` (counting from 0) for each
/// `(nic, n)` in `drops`.
fn hosts_dropping(drops: Vec<(usize, u64)>) -> Hosts {
    Hosts::new(SimConfig {
        faults: rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() },
        ..SimConfig::default()
    })
}

fn opts(mtu: Mtu) -> ConnectOptions {
    ConnectOptions {
        path_mtu: mtu,
        access: AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
        ..ConnectOptions::default()
    }
}

/// Two connected RC QPs A → B with `o`.
fn qps<'mr>(h: &Hosts, o: &ConnectOptions) -> (QueuePair<'mr>, QueuePair<'mr>) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(32).set_max_recv_wr(16).build().unwrap();
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, o).unwrap();
    qb.connect_with(&ea, o).unwrap();
    (qa, qb)
}

/// READ RESPONSE packets for `len` bytes at `mtu` (a zero-length READ is answered by one).
fn packets(len: usize, mtu: Mtu) -> u32 {
    (len.max(1) as u32).div_ceil(mtu.bytes())
}

/// Panics with the first differing byte of the READ's target.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if let Some(d) = common::first_difference(got, want) {
        panic!("{what}: {d}");
    }
}

/// One signaled READ of `len` bytes at offset `src_off` of B's buffer into offset `dst_off` of
/// A's; checks the completion, the bytes, the guards and the packet counters.
fn read_and_check(mtu: Mtu, len: usize, src_off: usize, dst_off: usize) {
    let h = hosts();
    let mut remote_buf = pattern(len as u64 ^ src_off as u64 ^ u64::from(mtu.bytes()), src_off + len + 17);
    let mut local = vec![GUARD; dst_off + len + 23];
    let expect = remote_buf[src_off..src_off + len].to_vec();
    let what = format!("READ of {len} B at MTU {} (remote+{src_off}, local+{dst_off})", mtu.bytes());
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, qb) = qps(&h, &opts(mtu));
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let (c0a, c0b) = h.counters();
        let sge = if len == 0 { None } else { Some(local_mr.sge(dst_off..dst_off + len).unwrap()) };
        qa.post_send_one(SendWr::rdma_read(0x5EAD, sge, remote.at(src_off as u64)).signaled(true)).unwrap();
        let wc = h.wait(&h.ca, 1, budget(len))[0];
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.qp_num),
            (0x5EAD, WcStatus::Success, WcOpcode::RdmaRead, len as u32, qa.qp_num()),
            "{what}: {wc:?}\n{}",
            h.diag()
        );
        assert_eq!(qa.outstanding(), 0);
        h.settle(2_000);
        let (c1a, c1b) = h.counters();
        let n = packets(len, mtu);
        assert_eq!(delta(&c1a, &c0a, counter::TX_REQUESTS), 1, "{what}: one READ REQUEST");
        assert_eq!(delta(&c1b, &c0b, counter::RX_ROCE_OK), 1, "{what}: the responder accepts it");
        assert_eq!(delta(&c1b, &c0b, counter::TX_FRAMES), n, "{what}: READ RESPONSE packets");
        assert_eq!(delta(&c1a, &c0a, counter::RX_ROCE_OK), n, "{what}: responses accepted");
        for c in [
            counter::DROP_ICRC,
            counter::DROP_MALFORMED,
            counter::DROP_UNKNOWN_QP,
            counter::DROP_KEY,
            counter::DROP_PSN,
            counter::DROP_INV_REQ,
            counter::RETRANSMITS,
        ] {
            assert_eq!(
                delta(&c1a, &c0a, c),
                0,
                "{what}: requester {} ({:?})",
                counter::NAMES[c as usize],
                nonzero(&c1a)
            );
            assert_eq!(
                delta(&c1b, &c0b, c),
                0,
                "{what}: responder {} ({:?})",
                counter::NAMES[c as usize],
                nonzero(&c1b)
            );
        }
        assert_eq!(delta(&c1a, &c0a, counter::CQES), 1);
        assert_eq!(qa.stray_completions(), 0);
    }
    assert_same(&local[dst_off..dst_off + len], &expect, &what);
    assert!(local[..dst_off].iter().all(|&b| b == GUARD), "{what}: bytes before the target changed");
    assert!(local[dst_off + len..].iter().all(|&b| b == GUARD), "{what}: bytes after the target changed");
}

#[test]
fn zero_length_read_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, 0, 0, 0);
    }
}

#[test]
fn one_byte_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, 1, 3, 5);
    }
}

#[test]
fn one_full_mtu_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, mtu.bytes() as usize, 0, 0);
    }
}

#[test]
fn one_mtu_plus_one_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, mtu.bytes() as usize + 1, 1, 63);
    }
}

#[test]
fn hundred_kib_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, 100 * 1024, 0, 0);
    }
}

#[test]
fn multi_packet_unaligned_at_every_path_mtu() {
    for mtu in ALL_MTUS {
        read_and_check(mtu, 3 * mtu.bytes() as usize + 77, 13, 41);
    }
}

#[test]
fn one_mib_at_mtu_4096() {
    read_and_check(Mtu::Mtu4096, 1 << 20, 0, 0);
}

/// WRITE, READ of what was written, SEND-free mix on one QP: completions in posting order, the
/// READ returns the bytes the WRITE before it stored (RC ordering, IBTA Vol 1 9.5).
#[test]
fn reads_and_writes_interleave_in_order_on_one_qp() {
    let h = hosts();
    let mut src = pattern(7, 8 * 1024);
    let mut back = vec![GUARD; 8 * 1024];
    let mut remote_buf = vec![0u8; 8 * 1024];
    let expect = src.clone();
    {
        let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let back_mr = h.pa.register(&mut back, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h
            .pb
            .register(&mut remote_buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE)
            .unwrap();
        let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024));
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let mut wrs = Vec::new();
        for i in 0..4u64 {
            let r = (i as usize * 2048)..(i as usize + 1) * 2048;
            wrs.push(
                SendWr::rdma_write(10 + i, src_mr.sge(r.clone()).unwrap(), remote.at(r.start as u64))
                    .signaled(i % 2 == 0),
            );
            wrs.push(
                SendWr::rdma_read(20 + i, back_mr.sge(r.clone()).unwrap(), remote.at(r.start as u64)).signaled(true),
            );
        }
        qa.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 6, 1_000_000);
        let got: Vec<(u64, WcStatus, WcOpcode)> = wcs.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
        let want = vec![
            (10, WcStatus::Success, WcOpcode::RdmaWrite),
            (20, WcStatus::Success, WcOpcode::RdmaRead),
            (21, WcStatus::Success, WcOpcode::RdmaRead),
            (12, WcStatus::Success, WcOpcode::RdmaWrite),
            (22, WcStatus::Success, WcOpcode::RdmaRead),
            (23, WcStatus::Success, WcOpcode::RdmaRead),
        ];
        assert_eq!(got, want, "{}", h.diag());
        assert_eq!(qa.outstanding(), 0);
    }
    assert_same(&back, &expect, "bytes read back");
}

/// Both hosts read from each other at once: each NIC is requester and responder, READ
/// responses and READ requests share each wire direction.
#[test]
fn reads_in_both_directions_at_once() {
    let h = hosts();
    let mut a_mem = pattern(1, 64 * 1024);
    let mut b_mem = pattern(2, 64 * 1024);
    let mut a_dst = vec![GUARD; 64 * 1024];
    let mut b_dst = vec![GUARD; 64 * 1024];
    let (ea, eb) = (a_mem.clone(), b_mem.clone());
    {
        let am = h.pa.register(&mut a_mem, AccessFlags::REMOTE_READ).unwrap();
        let bm = h.pb.register(&mut b_mem, AccessFlags::REMOTE_READ).unwrap();
        let ad = h.pa.register(&mut a_dst, AccessFlags::LOCAL_WRITE).unwrap();
        let bd = h.pb.register(&mut b_dst, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb) = qps(&h, &opts(Mtu::Mtu4096));
        let ra = qa.endpoint().unwrap().with_buffer(&am).buffer.unwrap();
        let rb = qb.endpoint().unwrap().with_buffer(&bm).buffer.unwrap();
        let (mut wa, mut wb) = (Vec::new(), Vec::new());
        for i in 0..4u64 {
            let r = (i as usize * 16384)..(i as usize + 1) * 16384;
            wa.push(SendWr::rdma_read(i, ad.sge(r.clone()).unwrap(), rb.at(r.start as u64)).signaled(true));
            wb.push(SendWr::rdma_read(100 + i, bd.sge(r.clone()).unwrap(), ra.at(r.start as u64)).signaled(true));
        }
        qa.post_send(&wa).unwrap();
        qb.post_send(&wb).unwrap();
        let ga = h.wait(&h.ca, 4, 2_000_000);
        let gb = h.wait(&h.cb, 4, 2_000_000);
        assert!(
            ga.iter().chain(&gb).all(|w| w.status == WcStatus::Success && w.opcode == WcOpcode::RdmaRead),
            "{ga:?} {gb:?}"
        );
        assert_eq!(ga.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(gb.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![100, 101, 102, 103]);
    }
    assert_same(&a_dst, &eb, "A's copy of B");
    assert_same(&b_dst, &ea, "B's copy of A");
}

/// 200 READs on one QP, one at a time: past the 128 where the NIC's READ counters (mod 128)
/// wrap, every READ goes out once, completes once, with its own bytes.
#[test]
fn two_hundred_reads_in_a_row() {
    let h = hosts();
    let n = 200usize;
    let mut remote_buf = pattern(77, 64 * n);
    let mut local = vec![GUARD; 64 * n];
    let expect = remote_buf.clone();
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, qb) = qps(&h, &ConnectOptions { max_rd_atomic: 4, max_dest_rd_atomic: 4, ..opts(Mtu::Mtu1024) });
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        for chunk in (0..n as u64).collect::<Vec<_>>().chunks(16) {
            let wrs: Vec<SendWr<'_>> = chunk
                .iter()
                .map(|&i| {
                    SendWr::rdma_read(
                        i,
                        local_mr.sge(i as usize * 64..(i as usize + 1) * 64).unwrap(),
                        remote.at(i * 64),
                    )
                    .signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, wrs.len(), 400_000);
            assert_eq!(wcs.iter().map(|w| w.wr_id).collect::<Vec<_>>(), chunk.to_vec(), "{}", h.diag());
            assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}\n{}", h.diag());
        }
        assert_eq!(h.a.counter(counter::TX_REQUESTS).unwrap(), n as u32);
        assert_eq!(h.a.counter(counter::CQES).unwrap(), n as u32);
        h.settle(5_000);
        let mut wcs = [rnic::WorkCompletion::default(); 4];
        assert_eq!(h.ca.poll(&mut wcs).unwrap(), 0, "a completion too many: {:?}", wcs[0]);
    }
    assert_same(&local, &expect, "200 READs");
}

/// The requester never has more than `max_rd_atomic` READs waiting for responses (IBTA Vol 1
/// 11.2.4.2, ibv_modify_qp(3)): on the wire, counting READ REQUESTs out and READ RESPONSE
/// LAST/ONLY back, at most that many are open at any time, and with 8 READs posted the limit
/// is reached.
#[test]
fn max_rd_atomic_bounds_the_reads_in_flight() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    for limit in [1u8, 3] {
        let dir = tempfile::tempdir().unwrap();
        let pcap = dir.path().join("outs.pcap");
        let h = hosts();
        h.world.borrow_mut().capture_pcap(&pcap).unwrap();
        let mut remote_buf = pattern(3, 8 * 8192);
        let mut local = vec![GUARD; 8 * 8192];
        let expect = remote_buf.clone();
        {
            let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
            let o = ConnectOptions { max_rd_atomic: limit, max_dest_rd_atomic: limit, ..opts(Mtu::Mtu1024) };
            let (mut qa, qb) = qps(&h, &o);
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            let wrs: Vec<SendWr<'_>> = (0..8u64)
                .map(|i| {
                    SendWr::rdma_read(
                        i,
                        local_mr.sge(i as usize * 8192..(i as usize + 1) * 8192).unwrap(),
                        remote.at(i * 8192),
                    )
                    .signaled(true)
                })
                .collect();
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, 8, 1_000_000);
            assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
            h.settle(2_000);
        }
        h.world.borrow_mut().finish().unwrap();
        let (mut open, mut most) = (0i32, 0i32);
        for (_, f) in oracle::read_pcap(&pcap).unwrap() {
            match RocePacketRepr::parse(&f).unwrap().bth.opcode.0 {
                0x0C => open += 1,
                0x0F | 0x10 => open -= 1,
                _ => {}
            }
            most = most.max(open);
        }
        assert_eq!(most, i32::from(limit), "READs open at once with max_rd_atomic {limit}");
        assert_same(&local, &expect, "bytes read");
    }
}

/// Posts one READ the responder must refuse, and checks that it completes with
/// REM_ACCESS_ERR, that no local byte changed and that the responder counted a key drop.
fn refused_read(
    region_access: AccessFlags,
    qp_access: AccessFlags,
    make: impl Fn(&rnic::RemoteBuffer) -> RemoteAddr,
    len: usize,
) {
    let h = hosts();
    let mut remote_buf = pattern(9, 4096);
    let mut local = vec![GUARD; 4096];
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, region_access).unwrap();
        let (mut qa, qb) = qps(&h, &ConnectOptions { access: qp_access, ..opts(Mtu::Mtu1024) });
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let c0b = h.b.counters().unwrap();
        qa.post_send_one(SendWr::rdma_read(7, local_mr.sge(0..len).unwrap(), make(&remote))).unwrap();
        let wc = h.wait(&h.ca, 1, 300_000)[0];
        assert_eq!((wc.wr_id, wc.status), (7, WcStatus::RemAccessErr), "{wc:?}\n{}", h.diag());
        assert_eq!(qa.state(), rnic::QpState::Err);
        let c1b = h.b.counters().unwrap();
        assert_eq!(delta(&c1b, &c0b, counter::DROP_KEY), 1, "{}", h.diag());
        assert_eq!(delta(&c1b, &c0b, counter::TX_NAKS), 1, "one NAK remote access error");
    }
    assert!(local.iter().all(|&b| b == GUARD), "a refused READ wrote local memory");
}

#[test]
fn read_with_a_bad_rkey_is_rem_access_err() {
    refused_read(
        AccessFlags::REMOTE_READ,
        AccessFlags::REMOTE_READ,
        |b| RemoteAddr { addr: b.addr, rkey: b.rkey ^ 0x55 },
        512,
    );
}

#[test]
fn read_past_the_end_of_the_remote_mr_is_rem_access_err() {
    refused_read(AccessFlags::REMOTE_READ, AccessFlags::REMOTE_READ, |b| b.at(b.len - 100), 200);
}

#[test]
fn read_of_a_region_without_remote_read_is_rem_access_err() {
    refused_read(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE, AccessFlags::REMOTE_READ, |b| b.at(0), 64);
}

#[test]
fn read_on_a_qp_without_remote_read_is_rem_access_err() {
    refused_read(AccessFlags::REMOTE_READ, AccessFlags::REMOTE_WRITE, |b| b.at(0), 64);
}

#[test]
fn read_into_a_region_without_local_write_is_loc_prot_err() {
    let h = hosts();
    let mut remote_buf = pattern(4, 256);
    let mut local = vec![GUARD; 256];
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::REMOTE_READ).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024));
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        qa.post_send_one(SendWr::rdma_read(8, local_mr.sge(0..256).unwrap(), remote.at(0)).signaled(true)).unwrap();
        let wc = h.wait(&h.ca, 1, 200_000)[0];
        assert_eq!((wc.wr_id, wc.status), (8, WcStatus::LocProtErr), "{wc:?}");
        assert_eq!(h.a.counter(counter::TX_REQUESTS).unwrap(), 0, "nothing was sent");
    }
    assert!(local.iter().all(|&b| b == GUARD));
}

/// A READ of `len` bytes at `mtu` while the network drops the frames in `drops`; checks the
/// data and returns (A's retransmits, A's timeouts, READ RESPONSE frames B sent).
fn lossy_read(mtu: Mtu, len: usize, drops: Vec<(usize, u64)>) -> (u32, u32, u32) {
    let h = hosts_dropping(drops);
    let mut remote_buf = pattern(len as u64, len);
    let mut local = vec![GUARD; len];
    let expect = remote_buf.clone();
    let out;
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let o = ConnectOptions { timeout: 8, retry_cnt: 7, ..opts(mtu) };
        let (mut qa, qb) = qps(&h, &o);
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        qa.post_send_one(SendWr::rdma_read(1, local_mr.sge(0..len).unwrap(), remote.at(0)).signaled(true)).unwrap();
        let wc = h.wait(&h.ca, 1, 3_000_000)[0];
        assert_eq!((wc.wr_id, wc.status, wc.byte_len), (1, WcStatus::Success, len as u32), "{wc:?}\n{}", h.diag());
        h.settle(5_000);
        let (ca, cb) = h.counters();
        out = (ca.get("retransmits").unwrap(), ca.get("timeouts").unwrap(), cb.get("tx_frames").unwrap());
    }
    assert_same(&local, &expect, "bytes read through loss");
    out
}

#[test]
fn a_lost_read_request_is_resent_after_the_timeout() {
    let (retransmits, timeouts, responses) = lossy_read(Mtu::Mtu1024, 4096, vec![(0, 0)]);
    assert_eq!((retransmits, timeouts), (1, 1));
    assert_eq!(responses, 4, "the responder saw the READ once");
}

#[test]
fn a_lost_middle_response_resumes_the_read_from_it() {
    // B's frame 2 (from 0) is the 3rd of 8 responses: the 4th reveals the gap, A asks for the
    // 3rd to the 8th again.
    let (retransmits, timeouts, responses) = lossy_read(Mtu::Mtu1024, 8192, vec![(1, 2)]);
    assert_eq!((retransmits, timeouts), (1, 0));
    assert_eq!(responses, 8 + 6, "only the missing responses are sent again");
}

#[test]
fn a_lost_first_response_resumes_the_whole_read() {
    let (retransmits, timeouts, responses) = lossy_read(Mtu::Mtu512, 2048, vec![(1, 0)]);
    assert_eq!((retransmits, timeouts), (1, 0));
    assert_eq!(responses, 4 + 4);
}

#[test]
fn a_lost_last_response_is_resumed_after_the_timeout() {
    let (retransmits, timeouts, responses) = lossy_read(Mtu::Mtu1024, 5000, vec![(1, 4)]);
    assert_eq!((retransmits, timeouts), (1, 1));
    assert_eq!(responses, 5 + 1, "only the last response is sent again");
}

/// A capture of READ traffic — REQUEST, RESPONSE FIRST/MIDDLE/LAST/ONLY, a zero-length READ
/// and a NAK — decodes cleanly in tshark's InfiniBand dissector, every ICRC verifies in scapy's
/// RoCE layer, and our own codec parses every frame.
#[test]
fn read_capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("read.pcap");
    let h = hosts();
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut remote_buf = pattern(12, 5000);
    let mut local = vec![GUARD; 8192];
    {
        let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
        let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
        let (mut qa, qb) = qps(&h, &opts(Mtu::Mtu1024));
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        qa.post_send_one(SendWr::rdma_read(1, local_mr.sge(0..5).unwrap(), remote.at(0)).signaled(true)).unwrap();
        qa.post_send_one(SendWr::rdma_read(2, local_mr.sge(0..4500).unwrap(), remote.at(100)).signaled(true)).unwrap();
        qa.post_send_one(SendWr::rdma_read(3, None, remote.at(0)).signaled(true)).unwrap();
        let wcs = h.wait(&h.ca, 3, 400_000);
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
        qa.post_send_one(
            SendWr::rdma_read(4, local_mr.sge(0..64).unwrap(), RemoteAddr { addr: remote.addr, rkey: remote.rkey ^ 1 })
                .signaled(true),
        )
        .unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].status, WcStatus::RemAccessErr);
        h.settle(2_000);
    }
    h.world.borrow_mut().finish().unwrap();

    let frames = oracle::read_pcap(&pcap).unwrap();
    let pkts: Vec<RocePacketRepr> =
        frames.iter().map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame")).collect();
    let opcodes: Vec<u8> = pkts.iter().map(|p| p.bth.opcode.0).collect();
    for op in [0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11] {
        assert!(opcodes.contains(&op), "opcode {op:#x} missing from {opcodes:x?}");
    }
    // 4 READ REQUESTs; responses: 1 (5 B) + 5 (4500 B) + 1 (zero-length); the NAK.
    assert_eq!(opcodes.iter().filter(|&&o| o == 0x0C).count(), 4, "{opcodes:x?}");
    assert_eq!(opcodes.iter().filter(|&&o| (0x0D..=0x10).contains(&o)).count(), 7, "{opcodes:x?}");
    let syndromes: Vec<u8> = pkts.iter().filter_map(|p| p.aeth.map(|a| a.syndrome)).collect();
    assert!(syndromes.contains(&0x62), "NAK remote access error missing from {syndromes:x?}");
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

/// IBV_SEND_FENCE (ibv_post_send(3)): a fenced WQE waits until every earlier READ has
/// completed. On the wire the fenced WRITE's first packet follows the READ's last response;
/// without the fence it leaves while the responses are still coming.
#[test]
fn a_fenced_write_waits_for_the_earlier_read() {
    use rnic::SendFlags;
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    for fence in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let pcap = dir.path().join("fence.pcap");
        let h = hosts();
        h.world.borrow_mut().capture_pcap(&pcap).unwrap();
        let mut remote_buf = pattern(4, 64 * 1024 + 1024);
        let mut local = vec![GUARD; 64 * 1024 + 1024];
        let expect = remote_buf[..64 * 1024].to_vec();
        {
            let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr =
                h.pb.register(
                    &mut remote_buf,
                    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
                )
                .unwrap();
            let o =
                ConnectOptions { access: AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE, ..opts(Mtu::Mtu1024) };
            let (mut qa, qb) = qps(&h, &o);
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            let mut flags = SendFlags::SIGNALED;
            flags.set(SendFlags::FENCE, fence);
            qa.post_send(&[
                SendWr::rdma_read(1, local_mr.sge(0..64 * 1024).unwrap(), remote.at(0)).signaled(true),
                SendWr::rdma_write(2, local_mr.sge(64 * 1024..65 * 1024).unwrap(), remote.at(64 * 1024))
                    .with_flags(flags),
            ])
            .unwrap();
            let wcs = h.wait(&h.ca, 2, 1_000_000);
            assert_eq!(
                wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
                [(1, WcStatus::Success), (2, WcStatus::Success)]
            );
            h.settle(2_000);
        }
        h.world.borrow_mut().finish().unwrap();
        let ops: Vec<u8> = oracle::read_pcap(&pcap)
            .unwrap()
            .iter()
            .map(|(_, f)| RocePacketRepr::parse(f).unwrap().bth.opcode.0)
            .collect();
        let last_response = ops.iter().rposition(|&o| o == 0x0F).expect("READ RESPONSE LAST");
        let write = ops.iter().position(|&o| o == 0x0A).expect("RDMA WRITE ONLY");
        if fence {
            assert!(write > last_response, "fenced WRITE at frame {write}, READ's last response at {last_response}");
        } else {
            assert!(write < last_response, "unfenced WRITE at frame {write} waited for the READ ({last_response})");
        }
        assert_same(&local[..64 * 1024], &expect, "bytes read");
    }
}

/// A READ right behind a long WRITE of the same bytes returns what the WRITE stored (IBTA Vol 1
/// 9.5: the responder executes requests in order), even though the WRITE's last packets may
/// still be on their way to host memory when the READ arrives. Every path MTU, reading back
/// the WRITE's last bytes (the ones written last).
#[test]
fn a_read_behind_a_write_of_the_same_bytes_sees_them() {
    const LEN: usize = 64 * 1024;
    for (k, mtu) in ALL_MTUS.into_iter().enumerate() {
        let h = hosts();
        let mut src = pattern(30 + k as u64, LEN);
        let mut back = vec![GUARD; 8192];
        let mut remote_buf = vec![0u8; LEN];
        let expect = src[LEN - 8192..].to_vec();
        {
            let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
            let back_mr = h.pa.register(&mut back, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr =
                h.pb.register(
                    &mut remote_buf,
                    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
                )
                .unwrap();
            let (mut qa, qb) = qps(&h, &opts(mtu));
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            qa.post_send(&[
                SendWr::rdma_write(1, src_mr.sge(0..LEN).unwrap(), remote.at(0)),
                SendWr::rdma_read(2, back_mr.sge(0..8192).unwrap(), remote.at((LEN - 8192) as u64)).signaled(true),
            ])
            .unwrap();
            let wc = h.wait(&h.ca, 1, 2_000_000)[0];
            assert_eq!((wc.wr_id, wc.status), (2, WcStatus::Success), "{}", h.diag());
        }
        assert_same(&back, &expect, &format!("READ behind WRITE at {mtu:?}"));
    }
}

/// The responder takes at most `max_dest_rd_atomic` READs with responses still to send (IBTA
/// Vol 1 9.4.4, 9.7.5.2.2; ibv_modify_qp(3)): a requester allowed 8 (`max_rd_atomic` 8, more
/// than its peer takes) that posts 8 READs of 32 KiB to a responder that takes 2 gets NAK
/// invalid request for the first READ that arrives while 2 still have responses to queue: the
/// ones before complete with their bytes, that one with `IBV_WC_REM_INV_REQ_ERR` (the NAK
/// follows their responses on the wire), the rest are flushed; the responder counts one NAK.
/// With `max_dest_rd_atomic` 8 on the responder the same READs all complete.
#[test]
fn max_dest_rd_atomic_bounds_the_reads_the_responder_takes() {
    for dest in [2u8, 8] {
        let h = hosts();
        let mut taken = 8;
        let mut remote_buf = pattern(9, 8 * 32768);
        let mut local = vec![GUARD; 8 * 32768];
        {
            let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
            let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
            let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(32).build().unwrap();
            let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(32).build().unwrap();
            let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
            qa.connect_with(&eb, &ConnectOptions { max_rd_atomic: 8, ..opts(Mtu::Mtu4096) }).unwrap();
            qb.connect_with(&ea, &ConnectOptions { max_dest_rd_atomic: dest, ..opts(Mtu::Mtu4096) }).unwrap();
            let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
            let wrs: Vec<SendWr<'_>> = (0..8u64)
                .map(|i| {
                    SendWr::rdma_read(
                        i,
                        local_mr.sge(i as usize * 32768..(i as usize + 1) * 32768).unwrap(),
                        remote.at(i * 32768),
                    )
                    .signaled(true)
                })
                .collect();
            let (_, c0b) = h.counters();
            qa.post_send(&wrs).unwrap();
            let wcs = h.wait(&h.ca, 8, 2_000_000);
            let st: Vec<WcStatus> = wcs.iter().map(|w| w.status).collect();
            let (_, c1b) = h.counters();
            let naks = c1b.values[counter::DROP_INV_REQ as usize] - c0b.values[counter::DROP_INV_REQ as usize];
            if dest == 8 {
                assert!(st.iter().all(|&s| s == WcStatus::Success), "{wcs:?}");
                assert_eq!(naks, 0);
            } else {
                // READs are taken while fewer than 2 have responses still to queue (a READ's
                // 8 response packets are queued within a few hundred cycles, so a third may
                // fit before the next request arrives); the first refused one is NAKed.
                let p = st.iter().position(|&s| s != WcStatus::Success).expect("a READ refused");
                assert!((2..8).contains(&p), "{p} READs taken: {wcs:?}\n{}", h.diag());
                assert_eq!(st[p], WcStatus::RemInvReqErr, "{wcs:?}");
                assert!(st[p + 1..].iter().all(|&s| s == WcStatus::WrFlushErr), "{wcs:?}");
                assert_eq!(naks, 1, "one NAK invalid request");
                taken = p;
            }
        }
        assert_same(&local[..taken * 32768], &remote_buf[..taken * 32768], "the READs taken");
    }
}

/// The flush after a local error completes exactly the WQEs posted, each once, however the
/// completer's flush visit and the scheduler's local completions interleave. A QP number
/// reused (destroyed in ERR, created again) arrives with a flush visit pending, which once
/// took a WQE whose local completion was still queued for one in flight and completed its
/// stale in-flight slot (`wr_id` 0, IBV_WC_SEND) instead of the flushed READ.
#[test]
fn a_local_error_flushes_exactly_the_posted_wqes_on_a_reused_qp_number() {
    let h = hosts();
    let mut remote_buf = pattern(5, 4096);
    let mut local = vec![GUARD; 256];
    let mut ro = vec![GUARD; 256];
    let local_mr = h.pa.register(&mut local, AccessFlags::LOCAL_WRITE).unwrap();
    // No LOCAL_WRITE: a READ into it fails its local check (IBV_WC_LOC_PROT_ERR).
    let ro_mr = h.pa.register(&mut ro, AccessFlags::REMOTE_READ).unwrap();
    let remote_mr = h.pb.register(&mut remote_buf, AccessFlags::REMOTE_READ).unwrap();
    let mut qpns = Vec::new();
    for round in 0..10u64 {
        let rd = [1, 4][round as usize % 2];
        let o = ConnectOptions {
            path_mtu: Mtu::Mtu1024,
            max_rd_atomic: rd,
            max_dest_rd_atomic: rd,
            ..ConnectOptions::default()
        };
        let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(4).build().unwrap();
        let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(4).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        qpns.push(qa.qp_num());
        let remote = qb.endpoint().unwrap().with_buffer(&remote_mr).buffer.unwrap();
        let id = round << 8;
        let bad = SendWr::rdma_read(id | 1, ro_mr.sge(0..100).unwrap(), remote.at(0)).signaled(true);
        let behind = SendWr::rdma_read(id | 2, local_mr.sge(0..64).unwrap(), remote.at(0)).signaled(true);
        qa.post_send(&[bad, behind]).unwrap();
        let wcs = h.wait(&h.ca, 2, 300_000);
        assert_eq!(
            wcs.iter().map(|w| (w.wr_id, w.status, w.opcode, w.qp_num)).collect::<Vec<_>>(),
            vec![
                (id | 1, WcStatus::LocProtErr, WcOpcode::RdmaRead, qa.qp_num()),
                (id | 2, WcStatus::WrFlushErr, WcOpcode::RdmaRead, qa.qp_num())
            ],
            "round {round}"
        );
        h.settle(3_000);
        let mut extra = [rnic::WorkCompletion::default(); 4];
        let k = h.ca.poll(&mut extra).unwrap();
        assert_eq!(k, 0, "round {round}: completions beyond the posted WQEs: {:?}", &extra[..k]);
    }
    assert!(qpns.windows(2).any(|w| w[0] == w[1]), "the QP numbers were never reused: {qpns:?}");
    drop((local_mr, ro_mr, remote_mr));
    assert!(local.iter().chain(&ro).all(|&b| b == GUARD), "a failed or flushed READ wrote a local buffer");
}
