//! Full-system test of the RTL driven by a minimal driver model: MMIO, host-memory rings and a
//! doorbell, nothing else. It pins the hardware/software contract independently of the `rnic`
//! driver crate (the Corundum habit of a system test driven by a driver model).
use rnic_contract::mr_entry::key;
use rnic_contract::{cq_context, cqe, mr_entry, qp_context, regs, verbs, wqe, Field};
use rnic_sim::{HostMemory, Iova, SimConfig, World};

/// 02:00:00:00:00:01 and 02:00:00:00:00:02 (locally administered, unicast) as the NIC's
/// MAC registers hold them: byte 0 of the address in bits 7:0.
const MAC: [u64; 2] = [mac([2, 0, 0, 0, 0, 1]), mac([2, 0, 0, 0, 0, 2])];

const fn mac(b: [u8; 6]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], 0, 0])
}
const IP: [u32; 2] = [0x0A00_0001, 0x0A00_0002];
const PD: u64 = 7;
const PSN: u64 = 0x10_0000;

fn command(world: &mut World, nic: usize, op: u32, index: u32, record: &[u8; 64]) {
    for i in 0..regs::CMD_DATA_WORDS {
        let w = u32::from_le_bytes(record[4 * i..4 * i + 4].try_into().unwrap());
        world.mmio_write(nic, regs::CMD_DATA + 4 * i as u16, w).unwrap();
    }
    world.mmio_write(nic, regs::CMD, op << 24 | index).unwrap();
}

fn record(fields: &[(Field, u64)]) -> [u8; 64] {
    let mut r = [0u8; 64];
    for (f, v) in fields {
        f.put(&mut r, *v);
    }
    r
}

fn counter(world: &mut World, nic: usize, c: u16) -> u32 {
    world.mmio_read(nic, regs::COUNTERS + 4 * c).unwrap()
}

fn mem(world: &mut World, nic: usize) -> &mut HostMemory {
    world.memory_mut(nic).unwrap()
}

struct Setup {
    world: World,
    sq: Iova,
    cq: Iova,
    src: Iova,
    dst: Iova,
    lkey: u32,
    rkey: u32,
    /// Application virtual addresses of the two buffers (distinct from their IOVAs, so the
    /// NIC's translation is exercised).
    src_va: u64,
    dst_va: u64,
}

const BUF: usize = 1 << 20;

/// Local ACK timeout exponent of the test QPs: 4.096 µs × 2 = 2048 cycles.
const TIMEOUT: u64 = 1;

fn setup(mtu: u8) -> Setup {
    setup_with(mtu, SimConfig::default(), 7)
}

fn setup_with(mtu: u8, config: SimConfig, retry_cnt: u64) -> Setup {
    let mut world = World::new(2, config).unwrap();
    for n in 0..2 {
        world.mmio_write(n, regs::MAC_LO, MAC[n] as u32).unwrap();
        world.mmio_write(n, regs::MAC_HI, (MAC[n] >> 32) as u32).unwrap();
        world.mmio_write(n, regs::IPV4_ADDR, IP[n]).unwrap();
    }
    let sq = mem(&mut world, 0).alloc(16 * wqe::BYTES, 4096).unwrap();
    let cq = mem(&mut world, 0).alloc(16 * cqe::BYTES, 4096).unwrap();
    let src = mem(&mut world, 0).alloc(BUF + 4096, 4096).unwrap();
    let dst = mem(&mut world, 1).alloc(BUF + 4096, 4096).unwrap();
    let (src_va, dst_va) = (0x7f00_1234_0000, 0x7f00_8888_0000);
    let (lkey, rkey) = (key::word(1, 0x11), key::word(2, 0x22));
    let a = verbs::access::LOCAL_WRITE | verbs::access::REMOTE_WRITE | verbs::access::REMOTE_ATOMIC;
    command(
        &mut world,
        0,
        regs::cmd_op::WRITE_MR,
        lkey >> 8,
        &record(&[
            (mr_entry::VALID, 1),
            (mr_entry::ACCESS, a as u64),
            (mr_entry::TAG, 0x11),
            (mr_entry::PD, PD),
            (mr_entry::VA, src_va),
            (mr_entry::LENGTH, BUF as u64 + 4096),
            (mr_entry::IOVA, src.0),
        ]),
    );
    command(
        &mut world,
        1,
        regs::cmd_op::WRITE_MR,
        rkey >> 8,
        &record(&[
            (mr_entry::VALID, 1),
            (mr_entry::ACCESS, a as u64),
            (mr_entry::TAG, 0x22),
            (mr_entry::PD, PD),
            (mr_entry::VA, dst_va),
            (mr_entry::LENGTH, BUF as u64),
            (mr_entry::IOVA, dst.0),
        ]),
    );
    command(
        &mut world,
        0,
        regs::cmd_op::WRITE_CQ,
        0,
        &record(&[(cq_context::VALID, 1), (cq_context::LOG_SIZE, 4), (cq_context::BASE, cq.0)]),
    );
    for (n, (qpn, dest)) in [(1u32, 2u64), (2, 1)].into_iter().enumerate() {
        let peer = 1 - n;
        command(
            &mut world,
            n,
            regs::cmd_op::WRITE_QP,
            qpn,
            &record(&[
                (qp_context::STATE, verbs::qp_state::RTS as u64),
                (qp_context::INIT_SQ_PSN, 1),
                (qp_context::INIT_RQ_PSN, 1),
                (qp_context::PATH_MTU, mtu as u64),
                (qp_context::ACCESS, (verbs::access::REMOTE_WRITE | verbs::access::REMOTE_ATOMIC) as u64),
                (qp_context::PD, PD),
                (qp_context::DEST_QPN, dest),
                (qp_context::SQ_PSN, PSN),
                (qp_context::RQ_PSN, PSN),
                (qp_context::TIMEOUT, TIMEOUT),
                (qp_context::RETRY_CNT, retry_cnt),
                (qp_context::PKEY, 0xFFFF),
                (qp_context::UDP_SPORT, 0xC000 | qpn as u64),
                (qp_context::DEST_IP, IP[peer] as u64),
                (qp_context::DEST_MAC, MAC[peer]),
                (qp_context::SEND_CQ, 0),
                (qp_context::SQ_LOG_SIZE, 4),
                (qp_context::SQ_BASE, sq.0),
            ]),
        );
    }
    Setup { world, sq, cq, src, dst, lkey, rkey, src_va, dst_va }
}

/// Posts one RDMA WRITE WQE at SQ slot `slot` and rings the doorbell with `slot + 1`.
fn post_write(s: &mut Setup, slot: u64, wr_id: u64, src_off: u64, dst_off: u64, len: u64, rkey: u32) {
    let w = record(&[
        (wqe::WR_ID, wr_id),
        (wqe::OPCODE, verbs::wr_opcode::RDMA_WRITE as u64),
        (wqe::SEND_FLAGS, verbs::send_flags::SIGNALED as u64),
        (wqe::NUM_SGE, 1),
        (wqe::REMOTE_ADDR, s.dst_va + dst_off),
        (wqe::RKEY, rkey as u64),
        (wqe::SGE0_ADDR, s.src_va + src_off),
        (wqe::SGE0_LENGTH, len),
        (wqe::SGE0_LKEY, s.lkey as u64),
    ]);
    let sq = s.sq;
    mem(&mut s.world, 0).write(sq.offset(slot * 64), &w).unwrap();
    s.world.mmio_write(0, regs::SQ_DOORBELL, 1 << 16 | (slot as u32 + 1)).unwrap();
}

/// Waits for CQE number `n` and returns (wr_id, status, byte_len).
fn wait_cqe(s: &mut Setup, n: u64) -> (u64, u64, u64) {
    let cq = s.cq;
    let at = cq.offset((n % 16) * cqe::BYTES as u64);
    let owner = u64::from((n >> 4) & 1 == 0);
    let done = s.world.run_until(
        |w| {
            let mut e = [0u8; 32];
            w.memory(0).unwrap().read(at, &mut e).unwrap();
            cqe::OWNER.get(&e) == owner
        },
        2_000_000,
    );
    if done.is_err() {
        panic!("no completion {n}: {}", diagnostics(&mut s.world));
    }
    let mut e = [0u8; 32];
    mem(&mut s.world, 0).read(at, &mut e).unwrap();
    (cqe::WR_ID.get(&e), cqe::STATUS.get(&e), cqe::BYTE_LEN.get(&e))
}

/// Both NICs' counters and DMA statistics, for failure messages.
fn diagnostics(world: &mut World) -> String {
    let mut out = String::new();
    for n in 0..2 {
        out += &format!("\nnic{n}:");
        for c in 0..regs::counter::COUNT {
            let v = counter(world, n, c);
            if v != 0 {
                out += &format!(" {}={v}", regs::counter::NAMES[c as usize]);
            }
        }
        out += &format!(" {:?}", world.nic(n).unwrap().stats());
    }
    out
}

fn fill_source(s: &mut Setup, seed: u8) -> Vec<u8> {
    let data: Vec<u8> = (0..BUF + 4096).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
    let src = s.src;
    mem(&mut s.world, 0).write(src, &data).unwrap();
    data
}

fn target(s: &mut Setup) -> Vec<u8> {
    let mut out = vec![0u8; BUF];
    let dst = s.dst;
    mem(&mut s.world, 1).read(dst, &mut out).unwrap();
    out
}

#[test]
fn rdma_write_lands_intact_and_completes() {
    let mut s = setup(verbs::mtu::MTU_1024);
    let data = fill_source(&mut s, 5);
    let cases: [(u64, u64, u64); 4] = [(0, 0, 1), (3, 61, 1024), (100, 5000, 70_001), (0, 0, 4096)];
    for (i, &(so, dof, len)) in cases.iter().enumerate() {
        let rkey = s.rkey;
        post_write(&mut s, i as u64, 0x1000 + i as u64, so, dof, len, rkey);
        let (wr_id, status, byte_len) = wait_cqe(&mut s, i as u64);
        assert_eq!((wr_id, status, byte_len), (0x1000 + i as u64, 0, len), "case {i}");
        let t = target(&mut s);
        assert_eq!(
            &t[dof as usize..(dof + len) as usize],
            &data[so as usize..(so + len) as usize],
            "case {i}: payload"
        );
    }
    assert_eq!(counter(&mut s.world, 1, regs::counter::DROP_ICRC), 0);
    assert_eq!(counter(&mut s.world, 1, regs::counter::DROP_KEY), 0);
}

/// A WRITE the responder must refuse: nothing lands, the drop is counted, and the requester
/// gets `IBV_WC_REM_ACCESS_ERR` from the NAK. (After such a NAK the requester's QP belongs in
/// the error state, so each case runs on a fresh pair of NICs.)
fn refused_write(dst_off: u64, len: u64, flip_rkey: u32) {
    let mut s = setup(verbs::mtu::MTU_4096);
    fill_source(&mut s, 9);
    let before = target(&mut s);
    let rkey = s.rkey ^ flip_rkey;
    post_write(&mut s, 0, 1, 0, dst_off, len, rkey);
    let (wr_id, status, _) = wait_cqe(&mut s, 0);
    assert_eq!((wr_id, status), (1, verbs::wc_status::REM_ACCESS_ERR as u64));
    assert_eq!(target(&mut s), before, "no byte of the target may change");
    assert_eq!(counter(&mut s.world, 1, regs::counter::DROP_KEY), 1);
    assert_eq!(counter(&mut s.world, 1, regs::counter::TX_NAKS), 1);
    assert_eq!(counter(&mut s.world, 1, regs::counter::RX_ROCE_OK), 0);
    // The requester counts it by its AETH code.
    assert_eq!(counter(&mut s.world, 0, regs::counter::RX_NAK_REM_ACCESS), 1);
    assert_eq!(counter(&mut s.world, 0, regs::counter::RX_NAK_SEQ), 0);
}

#[test]
fn write_with_wrong_rkey_tag_is_refused() {
    refused_write(0, 256, 0x01);
}

#[test]
fn write_with_rkey_of_an_empty_slot_is_refused() {
    refused_write(0, 256, 0x0300);
}

#[test]
fn write_past_the_region_end_is_refused() {
    refused_write(BUF as u64 - 100, 200, 0);
}

/// 1 byte, one full path MTU and 1 MiB, at every path MTU, unaligned on both sides.
#[test]
fn writes_of_every_size_class_at_every_path_mtu() {
    for mtu in verbs::mtu::MTU_256..=verbs::mtu::MTU_4096 {
        let mtu_bytes = verbs::mtu::bytes(mtu).unwrap() as u64;
        let mut s = setup(mtu);
        let data = fill_source(&mut s, mtu);
        for (i, (so, dof, len)) in [(0u64, 7u64, 1u64), (5, 0, mtu_bytes), (17, 33, 1 << 20)].into_iter().enumerate() {
            let len = len.min(BUF as u64 - dof);
            let rkey = s.rkey;
            post_write(&mut s, i as u64, 100 + i as u64, so, dof, len, rkey);
            let (wr_id, status, byte_len) = wait_cqe(&mut s, i as u64);
            assert_eq!((wr_id, status, byte_len), (100 + i as u64, 0, len), "mtu {mtu_bytes} case {i}");
            let t = target(&mut s);
            assert!(
                t[dof as usize..(dof + len) as usize] == data[so as usize..(so + len) as usize],
                "mtu {mtu_bytes} case {i}: payload differs"
            );
        }
        let d = diagnostics(&mut s.world);
        for c in [regs::counter::DROP_ICRC, regs::counter::DROP_RX_OVERFLOW, regs::counter::DROP_PSN] {
            assert_eq!(counter(&mut s.world, 1, c), 0, "mtu {mtu_bytes}: {d}");
        }
    }
}

/// A capture of real NIC-to-NIC traffic (WRITE ONLY/FIRST/MIDDLE/LAST, ACK, NAK) decodes
/// cleanly in tshark's InfiniBand dissector, every ICRC verifies in scapy's RoCE layer, and our
/// own codec parses every frame.
#[test]
fn capture_is_clean_in_tshark_and_scapy() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("bringup.pcap");
    let mut s = setup(verbs::mtu::MTU_1024);
    s.world.capture_pcap(&pcap).unwrap();
    fill_source(&mut s, 3);
    let rkey = s.rkey;
    post_write(&mut s, 0, 1, 1, 2, 3000, rkey); // FIRST, MIDDLE, LAST + ACK
    wait_cqe(&mut s, 0);
    post_write(&mut s, 1, 2, 0, 0, 5, rkey); // ONLY (pad 3) + ACK
    wait_cqe(&mut s, 1);
    post_write(&mut s, 2, 3, 0, BUF as u64, 64, rkey); // out of bounds: NAK
    wait_cqe(&mut s, 2);
    s.world.finish().unwrap();

    let frames = oracle::read_pcap(&pcap).unwrap();
    let opcodes: Vec<u8> = frames
        .iter()
        .map(|(_, f)| RocePacketRepr::parse(f).expect("our codec parses every frame").bth.opcode.0)
        .collect();
    for op in [0x06, 0x07, 0x08, 0x0A, 0x11] {
        assert!(opcodes.contains(&op), "opcode {op:#x} missing from {opcodes:x?}");
    }
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{} frames captured; {}", frames.len(), verdict.summary());
}

/// A long message asks for acknowledgement on the way: AckReq is set on every 16th packet of
/// the message and on its last, never elsewhere, and the responder answers each with an ACK
/// whose PSN is that packet's.
#[test]
fn long_messages_request_an_ack_every_16_packets() {
    use rnic_firmware_tests::{oracle, wire::roce::RocePacketRepr};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("ackreq.pcap");
    let mut s = setup(verbs::mtu::MTU_256);
    s.world.capture_pcap(&pcap).unwrap();
    fill_source(&mut s, 5);
    let rkey = s.rkey;
    // 40 packets: AckReq on packets 15, 31 and 39 (0-based).
    post_write(&mut s, 0, 1, 0, 0, 40 * 256 - 100, rkey);
    wait_cqe(&mut s, 0);
    s.world.finish().unwrap();
    let pkts: Vec<RocePacketRepr> =
        oracle::read_pcap(&pcap).unwrap().iter().map(|(_, f)| RocePacketRepr::parse(f).unwrap()).collect();
    let requests: Vec<&RocePacketRepr> = pkts.iter().filter(|p| p.bth.opcode.0 != 0x11).collect();
    assert_eq!(requests.len(), 40);
    let first = requests[0].bth.psn;
    let asked: Vec<u32> =
        requests.iter().filter(|p| p.bth.ack_req).map(|p| p.bth.psn.wrapping_sub(first) & 0xFF_FFFF).collect();
    assert_eq!(asked, vec![15, 31, 39]);
    let acks: Vec<u32> =
        pkts.iter().filter(|p| p.bth.opcode.0 == 0x11).map(|p| p.bth.psn.wrapping_sub(first) & 0xFF_FFFF).collect();
    assert_eq!(acks, vec![15, 31, 39]);
}

/// A lost MIDDLE packet: the responder sends one PSN-sequence NAK for the gap and drops what
/// follows; the requester goes back to the NAKed PSN in the middle of the WQE (MIDDLE/LAST
/// packets, no RETH), so nothing that already landed is sent again; every byte arrives and the
/// WQE completes once.
#[test]
fn lost_packet_is_recovered_by_sequence_nak_and_go_back_n() {
    let faults = rnic_sim::FaultConfig { drop_frames: vec![(0, 5)], ..Default::default() };
    let mut s = setup_with(verbs::mtu::MTU_1024, SimConfig { faults, ..SimConfig::default() }, 7);
    let data = fill_source(&mut s, 77);
    let rkey = s.rkey;
    post_write(&mut s, 0, 42, 0, 0, 20 * 1024, rkey);
    let (wr_id, status, len) = wait_cqe(&mut s, 0);
    assert_eq!((wr_id, status, len), (42, 0, 20 * 1024));
    assert!(target(&mut s)[..20 * 1024] == data[..20 * 1024]);
    let d = diagnostics(&mut s.world);
    assert_eq!(counter(&mut s.world, 1, regs::counter::TX_NAKS), 1, "{d}");
    assert_eq!(counter(&mut s.world, 1, regs::counter::TX_NAK_SEQ), 1, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::RX_NAK_SEQ), 1, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::RX_NAK_REM_ACCESS), 0, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::RETRANSMITS), 1, "{d}");
    // Go-back-N resumes at the NAKed PSN: nothing that arrived is sent again.
    assert_eq!(counter(&mut s.world, 1, regs::counter::RX_DUPLICATES), 0, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::CQES), 1, "{d}");
}

/// A packet lost in a long message at MTU 256: when the requester goes back N, the request
/// packets already queued for its assembler (up to 16 jobs and 8 packets behind the lost one)
/// are stale, and it drops them instead of sending them to a responder that would drop them as
/// out of sequence (the rewind resends them). Every issued request is counted in
/// `tx_requests`, every sent frame in `tx_frames`: some were dropped, no more than were queued,
/// and every byte arrives once, the WQE completing once.
#[test]
fn packets_queued_behind_a_lost_one_are_dropped_at_the_requester() {
    let mut s = setup_with(verbs::mtu::MTU_256, with_drops(vec![(0, 5)]), 7);
    let data = fill_source(&mut s, 91);
    let rkey = s.rkey;
    let len = 64 * 1024usize;
    post_write(&mut s, 0, 43, 0, 0, len as u64, rkey);
    let (wr_id, status, got) = wait_cqe(&mut s, 0);
    assert_eq!((wr_id, status, got), (43, 0, len as u64));
    assert!(target(&mut s)[..len] == data[..len]);
    let d = diagnostics(&mut s.world);
    let issued = counter(&mut s.world, 0, regs::counter::TX_REQUESTS);
    let sent = counter(&mut s.world, 0, regs::counter::TX_FRAMES);
    assert_eq!(counter(&mut s.world, 0, regs::counter::RETRANSMITS), 1, "{d}");
    assert!(sent < issued && issued - sent <= 24, "{issued} requests issued, {sent} frames sent\n{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::CQES), 1, "{d}");
}

fn with_drops(drops: Vec<(usize, u64)>) -> SimConfig {
    SimConfig { faults: rnic_sim::FaultConfig { drop_frames: drops, ..Default::default() }, ..SimConfig::default() }
}

/// The only ACK of a message is lost: nothing else will come, so the requester's local ACK
/// timer (4.096 µs × 2^TIMEOUT) fires, the WQE is resent, the responder recognises duplicates,
/// re-ACKs, and the WQE completes once.
#[test]
fn lost_final_ack_is_recovered_by_the_local_ack_timeout() {
    let mut s = setup_with(verbs::mtu::MTU_1024, with_drops(vec![(1, 0)]), 7);
    let data = fill_source(&mut s, 21);
    let rkey = s.rkey;
    let start = s.world.cycles();
    post_write(&mut s, 0, 9, 0, 0, 3 * 1024, rkey);
    let (wr_id, status, _) = wait_cqe(&mut s, 0);
    let took = s.world.cycles() - start;
    assert_eq!((wr_id, status), (9, 0));
    assert!(target(&mut s)[..3 * 1024] == data[..3 * 1024]);
    let d = diagnostics(&mut s.world);
    assert_eq!(counter(&mut s.world, 0, regs::counter::TIMEOUTS), 1, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::RETRANSMITS), 1, "{d}");
    assert_eq!(counter(&mut s.world, 1, regs::counter::RX_DUPLICATES), 3, "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::CQES), 1, "{d}");
    let timeout_cycles = 1024 << TIMEOUT;
    assert!(took >= timeout_cycles && took < 2 * timeout_cycles + 2000, "took {took} cycles");
}

/// RETRY_CNT is counted exactly: with `r` retries allowed, `r` lost transmissions are
/// recovered after `r` retransmissions, and `r + 1` fail the WQE with IBV_WC_RETRY_EXC_ERR
/// after exactly `r` retransmissions (7 is a count, not infinity).
#[test]
fn retry_count_is_exact() {
    for r in [0u64, 2, 7] {
        for lost in [r, r + 1] {
            let drops = (0..lost).map(|n| (0usize, n)).collect();
            let mut s = setup_with(verbs::mtu::MTU_4096, with_drops(drops), r);
            fill_source(&mut s, 1);
            let rkey = s.rkey;
            post_write(&mut s, 0, 5, 0, 0, 100, rkey);
            let (wr_id, status, _) = wait_cqe(&mut s, 0);
            let d = diagnostics(&mut s.world);
            let want = if lost <= r { 0 } else { verbs::wc_status::RETRY_EXC_ERR as u64 };
            assert_eq!((wr_id, status), (5, want), "retry_cnt {r}, {lost} lost: {d}");
            let retransmits = counter(&mut s.world, 0, regs::counter::RETRANSMITS) as u64;
            assert_eq!(retransmits, lost.min(r), "retry_cnt {r}, {lost} lost: {d}");
        }
    }
}

/// Posts one atomic WQE (`op`: ATOMIC_CMP_AND_SWP or ATOMIC_FETCH_AND_ADD) at SQ slot `slot`:
/// the 8-byte word at `dst_off` of the responder's buffer, the original value into `src_off`
/// of the requester's.
fn post_atomic(s: &mut Setup, slot: u64, op: u8, src_off: u64, dst_off: u64, compare_add: u64, swap: u64) {
    let w = record(&[
        (wqe::WR_ID, 100 + slot),
        (wqe::OPCODE, op as u64),
        (wqe::SEND_FLAGS, verbs::send_flags::SIGNALED as u64),
        (wqe::NUM_SGE, 1),
        (wqe::REMOTE_ADDR, s.dst_va + dst_off),
        (wqe::RKEY, s.rkey as u64),
        (wqe::SGE0_ADDR, s.src_va + src_off),
        (wqe::SGE0_LENGTH, 8),
        (wqe::SGE0_LKEY, s.lkey as u64),
        (wqe::COMPARE_ADD, compare_add),
        (wqe::SWAP, swap),
    ]);
    let sq = s.sq;
    mem(&mut s.world, 0).write(sq.offset(slot * 64), &w).unwrap();
    s.world.mmio_write(0, regs::SQ_DOORBELL, 1 << 16 | (slot as u32 + 1)).unwrap();
}

fn word(s: &mut Setup, nic: usize, off: u64) -> u64 {
    let base = if nic == 0 { s.src } else { s.dst };
    let mut b = [0u8; 8];
    mem(&mut s.world, nic).read(base.offset(off), &mut b).unwrap();
    u64::from_le_bytes(b)
}

fn set_word(s: &mut Setup, nic: usize, off: u64, v: u64) {
    let base = if nic == 0 { s.src } else { s.dst };
    mem(&mut s.world, nic).write(base.offset(off), &v.to_le_bytes()).unwrap();
}

fn cqe_opcode(s: &mut Setup, n: u64) -> u64 {
    let mut e = [0u8; 32];
    let at = s.cq.offset((n % 16) * cqe::BYTES as u64);
    mem(&mut s.world, 0).read(at, &mut e).unwrap();
    cqe::OPCODE.get(&e)
}

/// FETCH_AND_ADD and CMP_AND_SWP (match and mismatch) on little-endian words in host memory:
/// the requester's buffer receives the original value, the responder's word changes as the
/// operation says, and the completions carry IBV_WC_FETCH_ADD / IBV_WC_COMP_SWAP with 8 bytes.
#[test]
fn atomics_read_modify_write_the_remote_word() {
    let mut s = setup(verbs::mtu::MTU_1024);
    set_word(&mut s, 1, 64, 1000);
    set_word(&mut s, 1, 72, 0xDEAD_BEEF);
    post_atomic(&mut s, 0, verbs::wr_opcode::ATOMIC_FETCH_AND_ADD, 0, 64, u64::MAX - 1, 0);
    assert_eq!(wait_cqe(&mut s, 0), (100, 0, 8));
    assert_eq!(cqe_opcode(&mut s, 0), verbs::wc_opcode::FETCH_ADD as u64);
    assert_eq!((word(&mut s, 0, 0), word(&mut s, 1, 64)), (1000, 998), "wraps mod 2^64");
    assert_eq!(word(&mut s, 1, 72), 0xDEAD_BEEF, "the next word is untouched");
    post_atomic(&mut s, 1, verbs::wr_opcode::ATOMIC_CMP_AND_SWP, 8, 64, 998, 7);
    assert_eq!(wait_cqe(&mut s, 1), (101, 0, 8));
    assert_eq!(cqe_opcode(&mut s, 1), verbs::wc_opcode::COMP_SWAP as u64);
    assert_eq!((word(&mut s, 0, 8), word(&mut s, 1, 64)), (998, 7));
    post_atomic(&mut s, 2, verbs::wr_opcode::ATOMIC_CMP_AND_SWP, 16, 64, 998, 9);
    assert_eq!(wait_cqe(&mut s, 2), (102, 0, 8));
    assert_eq!((word(&mut s, 0, 16), word(&mut s, 1, 64)), (7, 7), "mismatch: no swap");
}

/// The ATOMIC ACKNOWLEDGE is lost: the requester resends after its timeout and the responder
/// answers the duplicate from the saved result: the word is added to once.
#[test]
fn a_duplicate_atomic_is_answered_from_the_saved_result() {
    let mut s = setup_with(verbs::mtu::MTU_1024, with_drops(vec![(1, 0)]), 7);
    set_word(&mut s, 1, 0, 40);
    post_atomic(&mut s, 0, verbs::wr_opcode::ATOMIC_FETCH_AND_ADD, 0, 0, 2, 0);
    assert_eq!(wait_cqe(&mut s, 0), (100, 0, 8));
    let d = diagnostics(&mut s.world);
    assert_eq!((word(&mut s, 0, 0), word(&mut s, 1, 0)), (40, 42), "{d}");
    assert_eq!(counter(&mut s.world, 0, regs::counter::RETRANSMITS), 1, "{d}");
    assert_eq!(counter(&mut s.world, 1, regs::counter::RX_DUPLICATES), 1, "{d}");
}
