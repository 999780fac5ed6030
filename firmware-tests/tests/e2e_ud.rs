//! UD QPs as requester (IBTA Vol 1 9.8, Annex A17): a UD SEND leaves as one SEND ONLY (0x64,
//! 0x65 with immediate) with a DETH (Q_Key, source QP), addressed by the work request's
//! address handle, QPN and Q_Key, and completes once sent (no ACK); what a UD QP cannot send
//! completes with the ibverbs error. Checked on the wire by our own reading of the bytes, by
//! tshark's InfiniBand dissector (BTH and DETH fields) and scapy's ICRC.
//!
//! As responder: a UD SEND to a UD QP with its Q_Key lands 40 bytes into the receive buffer
//! behind the GRH area (the frame's IPv4 header in its last 20 bytes), completes IBV_WC_RECV
//! with the GRH flag, the sender's QPN and the length including the 40 bytes, and is never
//! acknowledged; a wrong Q_Key, a missing receive WQE, or a UD packet for an RC QP (and an RC
//! packet for a UD QP) is dropped and counted.

mod common;

use std::process::Command;

use common::{pattern, Hosts};
use rnic::{
    AccessFlags, AddressVector, Error, QpAttr, QpAttrMask, QpState, QpType, QueuePair, SendFlags, SendWr, WcOpcode,
    WcStatus, WrOpcode,
};
use rnic_firmware_tests::oracle;
use rnic_sim::SimConfig;

/// The QP's own Q_Key.
const QKEY: u32 = 0x1122_3344;

/// A UD QP on host A in RTS (its modifies as ibverbs' UD table asks), SQ of 16.
fn ud_qp<'mr>(h: &Hosts, psn: u32) -> QueuePair<'mr> {
    ud_qp_on(&h.pa, &h.ca, psn, QKEY, 0)
}

/// A UD QP of `pd` in RTS with Q_Key `qkey`, SQ of 16, RQ of `rq` (0: none).
fn ud_qp_on<'mr>(
    pd: &rnic::ProtectionDomain,
    cq: &rnic::CompletionQueue,
    psn: u32,
    qkey: u32,
    rq: u32,
) -> QueuePair<'mr> {
    let mut qp = pd
        .create_qp(cq)
        .set_qp_type(QpType::Ud)
        .set_max_send_wr(16)
        .set_max_recv_wr(rq)
        .set_max_recv_sge(2)
        .set_max_inline_data(64)
        .build()
        .unwrap();
    use QpAttrMask as M;
    let a = QpAttr { qp_state: QpState::Init, pkey_index: 0, port_num: 1, qkey, ..QpAttr::default() };
    qp.modify(&a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY).unwrap();
    qp.modify(&QpAttr { qp_state: QpState::Rtr, ..QpAttr::default() }, M::STATE).unwrap();
    qp.modify(&QpAttr { qp_state: QpState::Rts, sq_psn: psn, ..QpAttr::default() }, M::STATE | M::SQ_PSN).unwrap();
    qp
}

/// Host B's address (where A's datagrams go).
fn b_addr(h: &Hosts) -> AddressVector {
    let p = h.b.port_addr().unwrap();
    AddressVector { dest_mac: p.mac, dest_ip: p.ip }
}

/// Frames in a capture whose BTH opcode (byte 42) is `op`.
fn frames_with_opcode(frames: &[(u64, Vec<u8>)], op: u8) -> Vec<Vec<u8>> {
    frames.iter().filter(|(_, f)| f.len() > 42 && f[42] == op).map(|(_, f)| f.clone()).collect()
}

/// `tshark -T fields` of the DETH and BTH fields, one line per frame.
fn tshark_deth(pcap: &std::path::Path) -> Vec<String> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(pcap)
        .args(["-d", "udp.port==4791,infiniband", "-T", "fields", "-E", "separator=,"])
        .args(["-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.deth.q_key"])
        .args(["-e", "infiniband.deth.srcqp", "-e", "infiniband.bth.psn"])
        .output()
        .expect("tshark runs (scripts/setup.sh installs it)");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

/// UD SENDs (plain, with immediate, inline, the QP's own Q_Key by bit 31, zero-length) leave
/// as SEND ONLY with the DETH and addresses the work requests name, PSNs counting up from the
/// QP's sq_psn, no AckReq; each signaled one completes IBV_WC_SEND / success with no ACK ever
/// coming back; an unsignaled one completes silently (the next signaled CQE covers it); the
/// peer, which has no such QP, drops them. tshark reads the DETH fields we meant, scapy
/// verifies every ICRC.
#[test]
fn ud_sends_leave_with_a_deth_and_complete_once_sent() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("ud.pcap");
    let h = Hosts::new(SimConfig::default());
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let mut src = pattern(7, 4096);
    let psn = 0x00AB_CDE0;
    let qpn;
    {
        let mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qp = ud_qp(&h, psn);
        let ah = h.pa.create_ah(b_addr(&h)).unwrap();
        let wrs = [
            SendWr::send(1, mr.sge(0..100).unwrap()).with_ud(&ah, 0x12_3456, 0x0BAD_CAFE).signaled(true),
            SendWr::send(2, mr.sge(100..4096).unwrap())
                .with_opcode(WrOpcode::SendWithImm)
                .with_imm(u32::from_ne_bytes([1, 2, 3, 4]))
                .with_ud(&ah, 7, 0x8000_0000)
                .signaled(true),
            SendWr::send(3, None).with_ud(&ah, 9, 0x10),
            SendWr::send(4, None)
                .with_inline(b"inline datagram")
                .unwrap()
                .with_flags(SendFlags::INLINE | SendFlags::SIGNALED)
                .with_ud(&ah, 9, 0x10),
        ];
        qp.post_send(&wrs).unwrap();
        let wcs = h.wait(&h.ca, 3, 200_000);
        let got: Vec<(u64, WcStatus, WcOpcode, u32)> =
            wcs.iter().map(|w| (w.wr_id, w.status, w.opcode, w.qp_num)).collect();
        let q = qp.qp_num();
        qpn = q;
        assert_eq!(
            got,
            vec![
                (1, WcStatus::Success, WcOpcode::Send, q),
                (2, WcStatus::Success, WcOpcode::Send, q),
                (4, WcStatus::Success, WcOpcode::Send, q)
            ],
            "{}",
            h.diag()
        );
        h.settle(3_000);
        let (ca, cb) = h.counters();
        assert_eq!(ca.get("tx_requests"), Some(4), "four datagrams sent; {}", h.diag());
        assert_eq!(ca.get("rx_acks").unwrap_or(0), 0, "nothing acknowledges a datagram; {}", h.diag());
        assert_eq!(cb.get("drop_unknown_qp"), Some(4), "the peer has no such QP; {}", h.diag());
        assert_eq!(qp.outstanding(), 0);
    }
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    let plain = frames_with_opcode(&frames, 0x64);
    let imm = frames_with_opcode(&frames, 0x65);
    assert_eq!((plain.len(), imm.len()), (3, 1), "UD SEND ONLY frames in the capture");
    assert_eq!(frames.len(), 4, "nothing else on the wire: no ACKs");
    let a = h.a.port_addr().unwrap();
    let b = h.b.port_addr().unwrap();
    // Our own reading of the bytes: Ethernet, IPv4 addresses, BTH (AckReq clear, PSN, DestQP),
    // DETH (Q_Key, source QP), ImmDt, payload.
    let first = &plain[0];
    assert_eq!(&first[0..6], &b.mac.0, "destination MAC from the address handle");
    assert_eq!(&first[6..12], &a.mac.0);
    assert_eq!(&first[30..34], &b.ip.octets(), "destination IP from the address handle");
    assert_eq!(&first[47..50], &[0x12, 0x34, 0x56], "BTH.DestQP = the WR's remote QPN");
    assert_eq!(first[50] & 0x80, 0, "no AckReq on UD");
    assert_eq!(u32::from_be_bytes([0, first[51], first[52], first[53]]), psn, "the QP's first PSN");
    assert_eq!(&first[54..58], &0x0BAD_CAFEu32.to_be_bytes(), "DETH.Q_Key = the WR's");
    let src_qpn = h_qpn(first);
    assert_eq!(src_qpn, qpn, "DETH.SrcQP = the sending QP");
    assert_eq!(&first[62..162], &pattern(7, 4096)[0..100], "payload after the 8-byte DETH");
    let second = &imm[0];
    assert_eq!(&second[54..58], &QKEY.to_be_bytes(), "bit 31 of the WR's Q_Key: the QP's own");
    assert_eq!(&second[62..66], &[1, 2, 3, 4], "ImmDt after the DETH");
    assert_eq!(&second[66..66 + 3996], &pattern(7, 4096)[100..4096], "a full-MTU datagram's payload");
    assert_eq!(u32::from_be_bytes([0, second[51], second[52], second[53]]), psn + 1);
    let inline = &plain[2];
    assert_eq!(&inline[62..77], b"inline datagram");
    // tshark: every frame clean, DETH fields as meant; scapy: every ICRC good.
    let lines = tshark_deth(&pcap);
    let num = |v: &str| match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    };
    let fields: Vec<Vec<u64>> = lines.iter().map(|l| l.split(',').map(num).collect()).collect();
    let q = u64::from(src_qpn);
    let p = u64::from(psn);
    assert_eq!(
        fields,
        vec![
            vec![0x64, 0x12_3456, 0x0BAD_CAFE, q, p],
            vec![0x65, 7, u64::from(QKEY), q, p + 1],
            vec![0x64, 9, 0x10, q, p + 2],
            vec![0x64, 9, 0x10, q, p + 3],
        ],
        "tshark's opcode, DestQP, DETH Q_Key and source QP, PSN: {lines:?}"
    );
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{}", verdict.summary());
}

/// The source QPN of a UD frame's DETH (bytes 59..62).
fn h_qpn(f: &[u8]) -> u32 {
    u32::from_be_bytes([0, f[59], f[60], f[61]])
}

/// What a UD QP cannot send completes with ibverbs' errors (IBTA Vol 1 9.8.1, 10.7.3.1): an
/// RDMA WRITE or READ with IBV_WC_LOC_QP_OP_ERR, a message longer than one packet of the path
/// MTU with IBV_WC_LOC_LEN_ERR; nothing goes on the wire for them. The driver refuses a WR
/// with no address, or one whose address handle is of another PD.
#[test]
fn what_a_ud_qp_cannot_send_completes_with_an_error() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(9, 8192);
    let mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let ah = h.pa.create_ah(b_addr(&h)).unwrap();
    for (wr, want) in [
        (SendWr::send(1, mr.sge(0..4097).unwrap()), WcStatus::LocLenErr),
        (SendWr::rdma_write(2, mr.sge(0..8).unwrap(), mr.remote_addr(0).unwrap()), WcStatus::LocQpOpErr),
        (SendWr::rdma_read(3, mr.sge(0..8).unwrap(), mr.remote_addr(0).unwrap()), WcStatus::LocQpOpErr),
    ] {
        let mut qp = ud_qp(&h, 0);
        let id = wr.wr_id;
        qp.post_send_one(wr.with_ud(&ah, 5, 5).signaled(true)).unwrap();
        let wcs = h.wait(&h.ca, 1, 100_000);
        assert_eq!((wcs[0].wr_id, wcs[0].status), (id, want), "{}", h.diag());
        let (ca, _) = h.counters();
        assert_eq!(ca.get("tx_requests").unwrap_or(0), 0, "nothing sent for WR {id}");
        qp.destroy().unwrap();
    }
    let mut qp = ud_qp(&h, 0);
    let e = qp.post_send_one(SendWr::send(9, None)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let other = h.a.alloc_pd().unwrap();
    let ah2 = other.create_ah(b_addr(&h)).unwrap();
    let e = qp.post_send_one(SendWr::send(9, None).with_ud(&ah2, 1, 1)).unwrap_err();
    assert!(e.to_string().contains("PD"), "{e}");
    let bad = AddressVector { dest_ip: "224.0.0.1".parse().unwrap(), ..b_addr(&h) };
    assert!(h.pa.create_ah(bad).is_err(), "multicast AH refused");
}

/// A UD QP follows ibverbs' UD transition table: RESET→INIT needs QKEY (not ACCESS_FLAGS),
/// INIT→RTR needs nothing, RTR→RTS needs SQ_PSN and refuses TIMEOUT.
#[test]
fn ud_modifies_follow_the_ud_table() {
    let h = Hosts::new(SimConfig::default());
    let mut qp = h.pa.create_qp(&h.ca).set_qp_type(QpType::Ud).build().unwrap();
    assert_eq!(qp.qp_type(), QpType::Ud);
    use QpAttrMask as M;
    let init = QpAttr { qp_state: QpState::Init, port_num: 1, qkey: 3, ..QpAttr::default() };
    assert!(qp.modify(&init, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS).is_err(), "QKEY required");
    qp.modify(&init, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY).unwrap();
    qp.modify(&QpAttr { qp_state: QpState::Rtr, ..QpAttr::default() }, M::STATE).unwrap();
    let rts = QpAttr { qp_state: QpState::Rts, sq_psn: 1, timeout: 14, ..QpAttr::default() };
    assert!(qp.modify(&rts, M::STATE | M::SQ_PSN | M::TIMEOUT).is_err(), "no TIMEOUT on UD");
    qp.modify(&rts, M::STATE | M::SQ_PSN).unwrap();
    assert_eq!(qp.query_qp().qkey, 3);
}

/// A UD QP on B (`rq` receive WQEs of room, Q_Key [`QKEY`]) and its address seen from A.
fn b_ud_qp<'mr>(h: &Hosts, rq: u32) -> QueuePair<'mr> {
    ud_qp_on(&h.pb, &h.cb, 0, QKEY, rq)
}

/// UD SENDs from A's UD QP to B's: each lands 40 bytes into B's receive buffer, behind the
/// GRH area whose last 20 bytes are the frame's IPv4 header (A's address as source, B's as
/// destination), the first 20 untouched; B's CQE is IBV_WC_RECV with IBV_WC_GRH (and
/// WITH_IMM and the ImmDt for SEND_WITH_IMM), byte_len = payload + 40, src_qp = A's QPN; a
/// payload that fills a 4096-byte MTU after a GRH in its own SGE scatters over two entries;
/// nothing is ever acknowledged.
#[test]
fn ud_sends_arrive_behind_a_grh_with_the_senders_qpn() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(11, 4096);
    let want = src.clone();
    let mut dst = vec![0xEEu8; 3 * 8192];
    let qa_n;
    {
        let mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = ud_qp(&h, 5);
        let mut qb = b_ud_qp(&h, 8);
        let ah = h.pa.create_ah(b_addr(&h)).unwrap();
        // WQE 0: one 8 KiB entry; WQE 1: one entry; WQE 2: the GRH alone in a 40-byte entry, then
        // the payload in a second.
        qb.post_recv_one(rnic::RecvWr::new(100, dmr.sge(0..8192).unwrap())).unwrap();
        qb.post_recv_one(rnic::RecvWr::new(101, dmr.sge(8192..16384).unwrap())).unwrap();
        qb.post_recv_one(
            rnic::RecvWr::with_sg_list(102, &[dmr.sge(16384..16424).unwrap(), dmr.sge(16424..24576).unwrap()]).unwrap(),
        )
        .unwrap();
        let to_b = qb.qp_num();
        let wrs = [
            SendWr::send(1, mr.sge(0..300).unwrap()).with_ud(&ah, to_b, QKEY),
            SendWr::send(2, mr.sge(0..17).unwrap())
                .with_opcode(WrOpcode::SendWithImm)
                .with_imm(u32::from_ne_bytes([9, 8, 7, 6]))
                .with_ud(&ah, to_b, 0x8000_0000),
            SendWr::send(3, mr.sge(0..4096).unwrap()).with_ud(&ah, to_b, QKEY).signaled(true),
        ];
        qa.post_send(&wrs).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 200_000)[0].wr_id, 3, "{}", h.diag());
        let r = h.wait(&h.cb, 3, 200_000);
        let got: Vec<(u64, WcStatus, WcOpcode, u32, u32, rnic::WcFlags)> =
            r.iter().map(|w| (w.wr_id, w.status, w.opcode, w.byte_len, w.src_qp, w.wc_flags)).collect();
        qa_n = qa.qp_num();
        use rnic::WcFlags as F;
        assert_eq!(
            got,
            vec![
                (100, WcStatus::Success, WcOpcode::Recv, 340, qa_n, F::GRH),
                (101, WcStatus::Success, WcOpcode::Recv, 57, qa_n, F::GRH | F::WITH_IMM),
                (102, WcStatus::Success, WcOpcode::Recv, 4136, qa_n, F::GRH),
            ],
            "{}",
            h.diag()
        );
        assert_eq!(r[1].imm_data, u32::from_ne_bytes([9, 8, 7, 6]));
        h.settle(2_000);
        let (ca, cb) = h.counters();
        assert_eq!(cb.get("tx_acks").unwrap_or(0) + cb.get("tx_naks").unwrap_or(0), 0, "UD is never acknowledged");
        assert_eq!(ca.get("rx_frames").unwrap_or(0), 0, "nothing came back to A");
    }
    let a = h.a.port_addr().unwrap();
    let b = h.b.port_addr().unwrap();
    for (k, (base, len)) in [(0usize, 300usize), (8192, 17), (16384, 4096)].into_iter().enumerate() {
        let grh = &dst[base..base + 40];
        assert!(grh[..20].iter().all(|&x| x == 0xEE), "WQE {k}: the GRH's first 20 bytes untouched");
        let ip = &grh[20..40];
        assert_eq!(ip[0], 0x45, "WQE {k}: IPv4 header, version 4, IHL 5");
        assert_eq!(ip[9], 17, "WQE {k}: protocol UDP");
        assert_eq!((&ip[12..16], &ip[16..20]), (&a.ip.octets()[..], &b.ip.octets()[..]), "WQE {k}: addresses");
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let ext = if k == 1 { 12 } else { 8 };
        assert_eq!(total, 20 + 8 + 12 + ext + len + (4 - len % 4) % 4 + 4, "WQE {k}: Total Length of the frame");
        assert_eq!(&dst[base + 40..base + 40 + len], &want[..len], "WQE {k}: payload behind the GRH");
        assert_eq!(dst[base + 40 + len], 0xEE, "WQE {k}: nothing past the payload");
    }
}

/// What a UD responder drops, each counted, nothing answered, its receive WQE kept: a wrong
/// Q_Key (`drop_key`), no receive WQE posted (`drop_no_rwqe`), a UD SEND to an RC QP and an RC
/// packet to a UD QP (`drop_unknown_qp`). A receive WQE whose first entry cannot hold the
/// 40-byte GRH completes IBV_WC_LOC_LEN_ERR.
#[test]
fn a_ud_responder_drops_what_it_must_and_counts_it() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(12, 256);
    let mut dst = vec![0u8; 4096];
    let mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dmr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qa = ud_qp(&h, 0);
    let mut qb = b_ud_qp(&h, 4);
    let qb_empty = b_ud_qp(&h, 0);
    let ah = h.pa.create_ah(b_addr(&h)).unwrap();
    let to_b = qb.qp_num();
    let (_, c0) = h.counters();
    // A wrong Q_Key, then a SEND to a UD QP with no receive queue.
    qa.post_send(&[
        SendWr::send(1, mr.sge(0..64).unwrap()).with_ud(&ah, to_b, QKEY ^ 1),
        SendWr::send(2, mr.sge(0..64).unwrap()).with_ud(&ah, qb_empty.qp_num(), QKEY).signaled(true),
    ])
    .unwrap();
    assert_eq!(h.wait(&h.ca, 1, 100_000)[0].status, WcStatus::Success, "the sender completes anyway");
    h.settle(3_000);
    let (_, c1) = h.counters();
    let d = |c: &rnic::Counters, n: &str| c.get(n).unwrap_or(0);
    assert_eq!(d(&c1, "drop_key") - d(&c0, "drop_key"), 1, "wrong Q_Key; {}", h.diag());
    assert_eq!(d(&c1, "drop_no_rwqe") - d(&c0, "drop_no_rwqe"), 1, "no receive WQE; {}", h.diag());
    assert_eq!(d(&c1, "tx_rnr_naks") + d(&c1, "tx_naks") + d(&c1, "tx_acks"), 0, "no answer; {}", h.diag());
    // The receive WQE was kept: the next good SEND takes it.
    qb.post_recv_one(rnic::RecvWr::new(7, dmr.sge(0..1024).unwrap())).unwrap();
    qa.post_send_one(SendWr::send(3, mr.sge(0..10).unwrap()).with_ud(&ah, to_b, QKEY)).unwrap();
    let r = h.wait(&h.cb, 1, 100_000);
    assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (7, WcStatus::Success, 50), "{}", h.diag());
    // A receive WQE whose first entry is shorter than the GRH area.
    qb.post_recv_one(
        rnic::RecvWr::with_sg_list(8, &[dmr.sge(1024..1060).unwrap(), dmr.sge(1060..2048).unwrap()]).unwrap(),
    )
    .unwrap();
    // A UD SEND to an RC QP of B.
    let rc = h.pb.create_qp(&h.cb).set_max_recv_wr(4).build().unwrap();
    let (_, c2) = h.counters();
    qa.post_send_one(SendWr::send(4, mr.sge(0..10).unwrap()).with_ud(&ah, rc.qp_num(), QKEY)).unwrap();
    h.settle(3_000);
    let (_, c3) = h.counters();
    assert_eq!(d(&c3, "drop_unknown_qp") - d(&c2, "drop_unknown_qp"), 1, "UD to an RC QP; {}", h.diag());
    // An RC SEND from an RC QP of A to B's UD QP.
    let mut rc_a = h.pa.create_qp(&h.ca).build().unwrap();
    let b = h.b.port_addr().unwrap();
    rc_a.connect(&rnic::Endpoint { qpn: to_b, psn: 0, mac: b.mac, ip: b.ip, buffer: None }).unwrap();
    rc_a.post_send_one(SendWr::send(6, mr.sge(0..10).unwrap())).unwrap();
    h.settle(3_000);
    let (_, c4) = h.counters();
    assert!(d(&c4, "drop_unknown_qp") > d(&c3, "drop_unknown_qp"), "RC to a UD QP; {}", h.diag());
    let mut none = [rnic::WorkCompletion::default(); 1];
    assert_eq!(h.cb.poll(&mut none).unwrap(), 0, "B's UD QP took nothing from either");
    rc_a.destroy().unwrap();
    // Then a UD SEND: the short first entry cannot take the GRH.
    qa.post_send_one(SendWr::send(5, mr.sge(0..10).unwrap()).with_ud(&ah, to_b, QKEY)).unwrap();
    let r = h.wait(&h.cb, 1, 100_000);
    assert_eq!((r[0].wr_id, r[0].status), (8, WcStatus::LocLenErr), "{}", h.diag());
    // The UD QP stays in RTS after it. A SEND longer than the next receive WQE takes is
    // dropped and counted (IBTA class D), the WQE kept for the next SEND that fits.
    qb.post_recv_one(rnic::RecvWr::new(9, dmr.sge(2048..2048 + 40 + 100).unwrap())).unwrap();
    let (_, c5) = h.counters();
    qa.post_send_one(SendWr::send(7, mr.sge(0..101).unwrap()).with_ud(&ah, to_b, QKEY)).unwrap();
    h.settle(3_000);
    let (_, c6) = h.counters();
    assert_eq!(d(&c6, "drop_no_rwqe") - d(&c5, "drop_no_rwqe"), 1, "too long for the WQE; {}", h.diag());
    assert_eq!(h.cb.poll(&mut none).unwrap(), 0, "no completion for a dropped datagram");
    qa.post_send_one(SendWr::send(8, mr.sge(0..100).unwrap()).with_ud(&ah, to_b, QKEY)).unwrap();
    let r = h.wait(&h.cb, 1, 100_000);
    assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (9, WcStatus::Success, 140), "{}", h.diag());
}
