//! UD QPs as requester (IBTA Vol 1 9.8, Annex A17): a UD SEND leaves as one SEND ONLY (0x64,
//! 0x65 with immediate) with a DETH (Q_Key, source QP), addressed by the work request's
//! address handle, QPN and Q_Key, and completes once sent (no ACK); what a UD QP cannot send
//! completes with the ibverbs error. Checked on the wire by our own reading of the bytes, by
//! tshark's InfiniBand dissector (BTH and DETH fields) and scapy's ICRC.
//!
//! Receiving UD SENDs is not built yet: the peer NIC's ingress drops them as opcodes it does
//! not take (counted `drop_malformed`), which these tests also check.

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
    let mut qp =
        h.pa.create_qp(&h.ca).set_qp_type(QpType::Ud).set_max_send_wr(16).set_max_inline_data(64).build().unwrap();
    use QpAttrMask as M;
    let a = QpAttr { qp_state: QpState::Init, pkey_index: 0, port_num: 1, qkey: QKEY, ..QpAttr::default() };
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
/// peer, which does not receive UD yet, drops them. tshark reads the DETH fields we meant, scapy
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
        assert_eq!(cb.get("drop_malformed"), Some(4), "the peer's ingress takes no UD opcode yet; {}", h.diag());
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
