//! Cross-checks of our RoCEv2 codec (`wire`) against tools we did not write (`oracle`):
//! frames we build must satisfy tshark's InfiniBand dissector and scapy's ICRC; frames scapy
//! builds must parse with our codec; corrupt frames must be rejected by every checker that can
//! see the corruption.
//!
//! Needs tshark and `<repo>/.venv` with scapy (scripts/setup.sh); without them these tests fail
//! with an error that says so.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use rnic_firmware_tests::oracle::{self, OracleError};
use rnic_firmware_tests::wire::{
    icrc, ipv4, udp, AethRepr, BthRepr, Error, EtherType, EthernetRepr, ImmDtRepr, Ipv4Repr, Opcode, RethRepr,
    RocePacketRepr, UdpRepr,
};
use serde_json::Value;

const ETH: usize = 14;

/// Unwraps an oracle result, failing with the oracle's own message (which says to run
/// scripts/setup.sh when a tool is missing).
fn must<T>(r: Result<T, OracleError>) -> T {
    r.unwrap_or_else(|e| panic!("oracle failed: {e}"))
}

fn base(opcode: Opcode, psn: u32, payload: Vec<u8>) -> RocePacketRepr {
    let mut r = RocePacketRepr {
        eth: EthernetRepr {
            src_addr: [0x02, 0, 0, 0, 0, 0x01],
            dst_addr: [0x02, 0, 0, 0, 0, 0x02],
            ethertype: EtherType::IPV4,
        },
        ipv4: Ipv4Repr {
            src_addr: Ipv4Addr::new(192, 0, 2, 1),
            dst_addr: Ipv4Addr::new(192, 0, 2, 2),
            dscp: 26,
            ecn: 2,
            ident: psn as u16,
            dont_frag: true,
            ttl: 64,
            protocol: ipv4::PROTOCOL_UDP,
            payload_len: 0,
        },
        udp: UdpRepr { src_port: 0xc000 | 0x0011, dst_port: udp::ROCEV2_PORT, payload_len: 0 },
        bth: BthRepr {
            opcode,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0x00_0011,
            ack_req: false,
            psn,
        },
        reth: None,
        aeth: None,
        immdt: None,
        payload,
    };
    r.fill_lengths();
    r
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i * 13) as u8)).collect()
}

fn reth(len: u32) -> Option<RethRepr> {
    Some(RethRepr { virt_addr: 0x7f00_dead_b000, rkey: 0x0000_1234, dma_len: len })
}

/// Frames built by our codec: every opcode family the RTL sends first, and payload lengths
/// 0, 1, 3 (pad) and 4096 (the largest path MTU).
fn codec_frames() -> Vec<RocePacketRepr> {
    let mut frames = Vec::new();
    for (i, len) in [0usize, 1, 3, 4096].into_iter().enumerate() {
        let mut r = base(Opcode::RC_RDMA_WRITE_ONLY, 100 + i as u32, pattern(len, 1));
        r.reth = reth(len as u32);
        r.bth.ack_req = true;
        frames.push(r);
    }
    let mut first = base(Opcode::RC_RDMA_WRITE_FIRST, 200, pattern(4096, 2));
    first.reth = reth(3 * 4096 + 3);
    frames.push(first);
    frames.push(base(Opcode::RC_RDMA_WRITE_MIDDLE, 201, pattern(4096, 3)));
    let mut last = base(Opcode::RC_RDMA_WRITE_LAST, 202, pattern(3, 4));
    last.bth.ack_req = true;
    frames.push(last);
    let mut ack = base(Opcode::RC_ACKNOWLEDGE, 202, Vec::new());
    ack.aeth = Some(AethRepr { syndrome: 0x1f, msn: 7 });
    frames.push(ack);
    let mut nak = base(Opcode::RC_ACKNOWLEDGE, 0xff_ffff, Vec::new());
    nak.aeth = Some(AethRepr { syndrome: 0x60, msn: 0xff_ffff });
    frames.push(nak);
    for (i, len) in [0usize, 1, 3].into_iter().enumerate() {
        let mut send = base(Opcode::RC_SEND_ONLY_WITH_IMMEDIATE, 300 + i as u32, pattern(len, 5));
        send.immdt = Some(ImmDtRepr { data: 0xcafe_f00d });
        send.bth.solicited = true;
        frames.push(send);
    }
    // An empty SEND_ONLY: tshark's RPC-over-RDMA heuristic used to call this malformed.
    frames.push(base(Opcode::RC_SEND_ONLY, 400, Vec::new()));
    for r in &mut frames {
        r.check_ext_headers().expect("test frames follow the opcode table");
        // Lengths and PadCnt as emit() writes them, so that parse(emit(r)) == r.
        r.fill_lengths();
    }
    frames
}

fn timestamped(frames: &[Vec<u8>]) -> Vec<(u64, Vec<u8>)> {
    frames.iter().enumerate().map(|(i, f)| (1_700_000_000_000_000_000 + 1000 * i as u64, f.clone())).collect()
}

fn write_temp_pcap(dir: &Path, name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let path = dir.join(name);
    must(oracle::write_pcap(&path, &timestamped(frames)));
    path
}

/// Flips one bit in the middle of the payload (or, with no payload, in the last header byte
/// before the ICRC).
fn flip_payload_bit(frame: &mut [u8], repr: &RocePacketRepr) {
    let end = frame.len() - icrc::ICRC_LEN - repr.pad_len();
    let at = if repr.payload.is_empty() { end - 1 } else { end - repr.payload.len() / 2 - 1 };
    frame[at] ^= 0x10;
}

#[test]
fn codec_frames_pass_tshark_and_scapy() {
    let reprs = codec_frames();
    let frames: Vec<Vec<u8>> = reprs.iter().map(RocePacketRepr::emit).collect();
    for (r, f) in reprs.iter().zip(&frames) {
        assert_eq!(RocePacketRepr::parse(f).as_ref(), Ok(r));
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_temp_pcap(dir.path(), "codec.pcap", &frames);

    let report = must(oracle::tshark_check(&pcap));
    assert_eq!(report.packets.len(), reprs.len());
    assert!(report.all_clean(), "tshark flagged frames we built:\n{}", report.summary());
    for (r, p) in reprs.iter().zip(&report.packets) {
        assert_eq!(p.opcode, Some(r.bth.opcode.0), "frame {}", p.frame);
        assert_eq!(p.dest_qp, Some(r.bth.dest_qp), "frame {}", p.frame);
        assert_eq!(p.psn, Some(r.bth.psn), "frame {}", p.frame);
    }

    let scapy = must(oracle::scapy_check(&pcap));
    assert_eq!(scapy.len(), reprs.len());
    for (r, s) in reprs.iter().zip(&scapy) {
        assert!(s.icrc_ok, "scapy rejects the ICRC of frame {}: {s:?}", s.frame);
        assert_eq!(s.opcode, Some(r.bth.opcode.0));
        assert_eq!(s.dest_qp, Some(r.bth.dest_qp));
        assert_eq!(s.psn, Some(r.bth.psn));
    }
    assert_eq!(must(oracle::scapy_check_icrc(&pcap)), vec![true; reprs.len()]);
}

#[test]
fn flipped_payload_bit_fails_our_icrc_and_scapys() {
    let reprs = codec_frames();
    let mut frames = Vec::new();
    for r in &reprs {
        let mut f = r.emit();
        flip_payload_bit(&mut f, r);
        assert!(
            matches!(RocePacketRepr::parse(&f), Err(Error::Icrc { .. })),
            "our codec accepted a flipped bit in {}",
            r.bth.opcode
        );
        frames.push(f);
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_temp_pcap(dir.path(), "flipped.pcap", &frames);
    let verdicts = must(oracle::scapy_check(&pcap));
    assert_eq!(verdicts.len(), frames.len());
    for v in &verdicts {
        assert!(!v.icrc_ok, "scapy accepted a corrupted frame: {v:?}");
        assert!(v.error.is_none(), "{v:?}");
        assert_ne!(v.icrc_wire, v.icrc_scapy);
    }
    // tshark does not verify the ICRC at all, so it is not asked here.
}

#[test]
fn wrong_icrc_conventions_fail_scapy() {
    // Two plausible RTL bugs: the ICRC sent most-significant byte first, and an ICRC computed
    // without masking the variant fields (TTL etc.). Both must be caught by the oracle.
    let r = codec_frames().swap_remove(1); // WRITE_ONLY with 1 payload byte
    let good = r.emit();
    let n = good.len();

    let mut swapped = good.clone();
    swapped[n - 4..].reverse();

    let mut unmasked = good.clone();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[0xff; 8]);
    hasher.update(&good[ETH..n - 4]);
    unmasked[n - 4..].copy_from_slice(&hasher.finalize().to_le_bytes());

    for f in [&swapped, &unmasked] {
        assert!(matches!(RocePacketRepr::parse(f), Err(Error::Icrc { .. })));
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_temp_pcap(dir.path(), "conventions.pcap", &[good, swapped, unmasked]);
    assert_eq!(must(oracle::scapy_check_icrc(&pcap)), vec![true, false, false]);
}

#[test]
fn tshark_flags_truncated_and_corrupt_frames() {
    let reprs = codec_frames();
    let good = reprs[3].emit(); // WRITE_ONLY, 4096 bytes
    let ack = reprs[7].emit();

    let truncated = good[..good.len() - 100].to_vec();
    let cut_in_bth = ack[..ETH + 20 + 8 + 6].to_vec();
    let mut bad_ip_checksum = ack.clone();
    bad_ip_checksum[ETH + 10] ^= 0x5a;

    assert!(matches!(RocePacketRepr::parse(&truncated), Err(Error::Ipv4TotalLen { .. })));
    assert!(matches!(RocePacketRepr::parse(&cut_in_bth), Err(Error::Ipv4TotalLen { .. })));
    assert!(matches!(RocePacketRepr::parse(&bad_ip_checksum), Err(Error::Ipv4Checksum { .. })));

    let dir = tempfile::tempdir().unwrap();
    let frames = [good, truncated, ack.clone(), cut_in_bth, bad_ip_checksum, ack];
    let pcap = write_temp_pcap(dir.path(), "corrupt.pcap", &frames);
    let report = must(oracle::tshark_check(&pcap));
    let flagged: Vec<u32> = report.flagged().iter().map(|p| p.frame).collect();
    assert_eq!(flagged, [2, 4, 5], "{report:#?}");
    assert!(report.packets[1].malformed || !report.packets[1].expert.is_empty());
    assert!(report.packets[3].malformed);
    assert!(report.packets[3].opcode.is_none(), "a BTH cut in half has no opcode");
    assert!(report.packets[4].expert.iter().any(|e| e.message.contains("Bad checksum")));

    let scapy = must(oracle::scapy_check_icrc(&pcap));
    assert_eq!(scapy, [true, false, true, false, true, true]);
}

#[test]
fn ethernet_padding_is_accepted_by_all() {
    // An empty SEND_ONLY is 58 bytes; MACs pad it to the 60-byte minimum. The padding is not
    // part of the IPv4 packet or the ICRC (scapy needs help here: see scapy_icrc.py).
    let r = base(Opcode::RC_SEND_ONLY, 5, Vec::new());
    let mut f = r.emit();
    assert_eq!(f.len(), 58);
    f.extend_from_slice(&[0, 0]);
    assert_eq!(RocePacketRepr::parse(&f), Ok(r));
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_temp_pcap(dir.path(), "padded.pcap", &[f]);
    assert!(must(oracle::tshark_check(&pcap)).all_clean());
    assert_eq!(must(oracle::scapy_check_icrc(&pcap)), [true]);
}

fn field_u64(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("no {key} in {v}"))
}

fn field_bool(v: &Value, key: &str) -> bool {
    field_u64(v, key) != 0
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn scapy_built_frames_parse_with_our_codec() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("scapy.pcap");
    let described = must(oracle::scapy_build_pcap(&pcap));
    let frames = must(oracle::read_pcap(&pcap));
    assert_eq!(frames.len(), described.len());
    assert!(frames.len() >= 10);

    for ((_, frame), d) in frames.iter().zip(&described) {
        let note = d["note"].as_str().unwrap_or("?");
        let ip_packet = &frame[ETH..];
        assert_eq!(icrc::check(ip_packet), Ok(()), "{note}: our ICRC disagrees with scapy's");
        assert_eq!(hex(d["icrc"].as_str().unwrap()), frame[frame.len() - 4..]);

        if field_u64(d, "opcode") == 0x81 {
            assert_eq!(RocePacketRepr::parse(frame), Err(Error::UnsupportedOpcode(0x81)), "{note}");
            continue;
        }
        let r = RocePacketRepr::parse(frame).unwrap_or_else(|e| panic!("{note}: {e}"));
        assert_eq!(u64::from(r.bth.opcode.0), field_u64(d, "opcode"), "{note}");
        assert_eq!(u64::from(r.bth.dest_qp), field_u64(d, "dqpn"), "{note}");
        assert_eq!(u64::from(r.bth.psn), field_u64(d, "psn"), "{note}");
        assert_eq!(u64::from(r.bth.pkey), field_u64(d, "pkey"), "{note}");
        assert_eq!(u64::from(r.bth.pad_count), field_u64(d, "padcount"), "{note}");
        assert_eq!(r.bth.solicited, field_bool(d, "se"), "{note}");
        assert_eq!(r.bth.mig_req, field_bool(d, "migreq"), "{note}");
        assert_eq!(r.bth.ack_req, field_bool(d, "ackreq"), "{note}");
        assert_eq!(r.bth.fecn, field_bool(d, "fecn"), "{note}");
        assert_eq!(r.bth.becn, field_bool(d, "becn"), "{note}");
        assert_eq!(u64::from(r.ipv4.ecn), field_u64(d, "ecn"), "{note}");
        assert_eq!(u64::from(r.ipv4.ttl), field_u64(d, "ttl"), "{note}");
        assert_eq!(r.payload, hex(d["payload"].as_str().unwrap()), "{note}");
        let expect_reth = d["reth"].as_object().map(|o| RethRepr {
            virt_addr: o["va"].as_u64().unwrap(),
            rkey: o["rkey"].as_u64().unwrap() as u32,
            dma_len: o["dma_len"].as_u64().unwrap() as u32,
        });
        assert_eq!(r.reth, expect_reth, "{note}");
        let expect_aeth = d["aeth"].as_object().map(|o| AethRepr {
            syndrome: o["syndrome"].as_u64().unwrap() as u8,
            msn: o["msn"].as_u64().unwrap() as u32,
        });
        assert_eq!(r.aeth, expect_aeth, "{note}");
        let expect_immdt = d["immdt"].as_u64().map(|v| ImmDtRepr { data: v as u32 });
        assert_eq!(r.immdt, expect_immdt, "{note}");

        // Our emit reproduces scapy's bytes exactly (lengths, IPv4 checksum, pad, ICRC), except
        // a non-zero UDP checksum, which we always write as 0.
        let mut expected = frame.clone();
        if field_u64(d, "udp_chksum") != 0 {
            expected[ETH + 20 + 6..ETH + 20 + 8].fill(0);
        }
        assert_eq!(r.emit(), expected, "{note}: emit differs from scapy's frame");
    }

    // tshark accepts scapy's frames too (a sanity check of the oracles against each other).
    let report = must(oracle::tshark_check(&pcap));
    assert!(report.all_clean(), "{}", report.summary());
}

#[test]
fn scapy_detects_flips_in_its_own_frames() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("scapy.pcap");
    must(oracle::scapy_build_pcap(&pcap));
    let frames = must(oracle::read_pcap(&pcap));
    let mut flipped = Vec::new();
    for (ts, mut f) in frames {
        let n = f.len();
        f[n - 5] ^= 0x01; // last byte before the ICRC
        assert!(matches!(icrc::check(&f[ETH..]), Err(Error::Icrc { .. })));
        flipped.push((ts, f));
    }
    let out = dir.path().join("flipped.pcap");
    must(oracle::write_pcap(&out, &flipped));
    assert!(must(oracle::scapy_check_icrc(&out)).iter().all(|ok| !ok));
}
