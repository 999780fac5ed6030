//! `RxEngine`'s responder (admission checks, WRITE placement, receive scatter, UD, QP
//! re-creation) in Verilator with hand-driven descriptors, against a model of IBTA's rules and
//! `rnic_contract`'s key and context layouts; the completer's tests (READ responses, events)
//! are in `rx_engine_completer_tb.rs`, the bench both use in `rx_engine/mod.rs`.
//!
//! QP contexts and key-table entries are written through the context-command port exactly as
//! BAR0 commits them (records built with `rnic_contract` fields); descriptors are handed in as
//! the ingress would. Every other source FIFO stays empty and the READ-response queue is never
//! full (`rr_full` = 0); no packet here is an RDMA READ request or an atomic, so none may write
//! a READ-response job (`rr_write`, the atomic unit's input).
//!
//! - `write_only_key_and_bounds`: random WRITE ONLY packets against a table of regions
//!   (valid/invalid, other PD, no REMOTE_WRITE, stale tag, index past the table) and QPs (RTR,
//!   RTS, INIT, without REMOTE_WRITE), with VAs and lengths at and across region edges, wrong
//!   PSNs, zero-length writes and `plen` ≠ RETH length. Each packet yields exactly one job and
//!   one counter pulse: an accepted write a payload job at `IOVA + (va − VA)` (none when empty)
//!   with an ACK (syndrome 0x1F, MSN + 1, the packet's PSN, the QP's peer addresses); a key or
//!   bounds violation `cnt_drop_key` and a NAK 0x62; a length mismatch `cnt_drop_inv_req` and a
//!   NAK 0x61; a PSN behind the expected one `cnt_dup`, re-ACKed (PSN e − 1) when it has
//!   AckReq or ends a message; a PSN ahead `cnt_drop_psn` with one sequence-error NAK (0x60,
//!   PSN e) per gap; an unknown/non-receiving QP `cnt_unknown_qp`, unanswered. Rejected
//!   packets leave the expected PSN and MSN alone, and every job releases the packet's beats.
//! - `multi_packet_writes_follow_the_reth`: FIRST/MIDDLE/LAST messages at each path MTU write
//!   consecutive addresses and ACK with AckReq or on LAST; MIDDLE/LAST without FIRST, FIRST
//!   inside an open message, wrong segment lengths and a LAST short or long are invalid
//!   requests (NAK 0x61) that leave the open message as it was.
//! - `send_scatters_over_the_receive_entries`: SENDs at MTU 256 into 256-byte receive WQEs of
//!   1..=15 random entries (zero-length ones with junk lkeys, odd addresses), served through the
//!   RQ doorbell and the receive-WQE fetch port (`rq_ar_*`, `rq_r_*`, 4 beats); every payload
//!   piece maps message bytes to the IOVA of the entry holding them, at packet offset
//!   `hlen + bytes placed`, only a packet's last job frees its beats or asks for an ACK; the
//!   receive CQE follows the payload; a bad entry (stale tag, no LOCAL_WRITE, past its region)
//!   completes with LOC_PROT_ERR (NAK 0x63), a message one byte too long and a WQE claiming
//!   more entries than it holds with LOC_LEN_ERR (NAK 0x61), the refused packet writing nothing. (Here `job_afull` also stalls the pieces.)
//! - `ud_sends_land_behind_the_grh_area`: UD SENDs on a UD QP: the GRH job, the payload 40
//!   bytes in, the CQE's byte_len + 40, GRH flag and SRC_QP, no ACK; the Q_Key and no-WQE drops,
//!   the short first entry (LOC_LEN_ERR), and RC/UD packets to the other kind of QP.
//! - `a_recreated_qp_keeps_nothing_of_its_last_connection`: one QPN destroyed (RESET), created
//!   (INIT) and connected again eight times, with messages left open and class C errors
//!   between, beside another QP's stream: no packet taken in RESET or INIT, and afterwards the
//!   new expected PSN, an MSN from 0, no open message and no error state.
//! - `dbg_state_reports_the_state_numbers`: the state code on `dbg_state` (STATUS bits 5:0)
//!   through an accepted WRITE and a refused one with its flush visit: the numbers the states
//!   had before they were named (`rnic_hdl::rx_engine::RxState`).
mod harness;
mod rx_engine;

use harness::tables::Mr;
use harness::Rng;
use rnic_contract::mr_entry::key;
use rnic_contract::qp_context as qp;
use rx_engine::*;

#[test]
fn write_only_key_and_bounds() {
    let mut tb = Tb::new(0x2E61_0001);
    let seed = tb.rng.0;
    let rng = &mut tb.rng;
    // QPs 0..8: 0-3 RTS/RTR with REMOTE_WRITE in PD 5; 4 INIT; 5 no REMOTE_WRITE; 6 PD 6; 7 RESET.
    let mut qps: Vec<Qp> = vec![
        random_qp(rng, 3, 0xF, 5),
        random_qp(rng, 2, 0x2, 5),
        random_qp(rng, 3, 0x6, 5),
        random_qp(rng, 3, 0x3, 5),
        random_qp(rng, 1, 0xF, 5),
        random_qp(rng, 3, 0x5, 5),
        random_qp(rng, 3, 0xF, 6),
        random_qp(rng, 0, 0xF, 5),
    ];
    // Regions 0..16: mostly good in PD 5; some invalid, other PD, no REMOTE_WRITE.
    let mut mrs = Vec::new();
    for i in 0..16u64 {
        let va = match i % 4 {
            0 => rng.next_u64() & 0x0000_7FFF_FFFF_F000,
            1 => rng.next_u64() & 0x0000_7FFF_FFFF_FFFF,
            2 => u64::MAX - rng.range(0, 1 << 20) - (1 << 20), // near the top of the VA space
            _ => rng.range(0, 4096),
        };
        let room = u64::MAX - va;
        mrs.push(Mr {
            valid: i != 9,
            access: match i {
                10 => 0x1,
                11 => 0x4,
                _ => *rng.pick(&[0x2u64, 0x3, 0x7, 0xF]),
            },
            tag: u64::from(rng.u32() as u8),
            pd: if i == 12 { 6 } else { 5 },
            va,
            length: rng.range(1, (1 << 20).min(room)),
            iova: rng.next_u64() & 0x0000_FFFF_FFFF_FFC0 | rng.range(0, 63),
        });
    }
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    for (i, m) in mrs.clone().iter().enumerate() {
        tb.write_mr(i as u64, m);
    }
    let mut counts = std::collections::BTreeMap::new();
    for n in 0..3000 {
        let rng = &mut tb.rng;
        let qi = if rng.chance(4, 5) { rng.range(0, 3) as usize } else { rng.range(0, 7) as usize };
        let mi = rng.range(0, 15) as usize;
        let m = &mrs[mi];
        let mut rkey = key::word(mi as u32, m.tag as u8);
        let (mut va, mut len);
        // Where the write falls in the region.
        let in_len = m.length;
        match rng.range(0, 9) {
            0 => {
                // Exactly the whole region.
                va = m.va;
                len = in_len.min(u64::from(u32::MAX)) as u32;
            }
            1 => {
                // Ends one byte past the region.
                len = rng.range(1, in_len.min(4096)) as u32;
                va = m.va + in_len - u64::from(len) + 1;
            }
            2 => {
                // Starts one byte before it.
                va = m.va.wrapping_sub(1);
                len = rng.range(1, in_len.min(4096)) as u32;
            }
            3 => {
                // Ends exactly at its end.
                len = rng.range(1, in_len.min(4096)) as u32;
                va = m.va + in_len - u64::from(len);
            }
            4 => {
                // Far away.
                va = rng.next_u64();
                len = rng.range(1, 4096) as u32;
            }
            _ => {
                len = rng.range(0, in_len.min(4096)) as u32;
                va = m.va + rng.range(0, in_len - u64::from(len));
            }
        }
        match rng.range(0, 19) {
            0 => rkey ^= 1 << rng.range(0, 7),   // stale tag
            1 => rkey |= 1 << rng.range(14, 31), // index beyond the table
            2 => len = 0,                        // zero length: no key check
            _ => {}
        }
        let mut plen = u64::from(len);
        if rng.chance(1, 25) {
            plen = (plen + rng.range(1, 3)) & 0x1FFF; // plen != RETH length
        }
        if plen > 4096 {
            len = (len % 4096).max(1);
            plen = u64::from(len);
            va = m.va;
        }
        let q = &mut qps[qi];
        let mut psn = q.epsn;
        if rng.chance(1, 12) {
            psn = (psn + rng.range(1, 0xFF_FFFF) as u32) & 0xFF_FFFF;
        }
        // A packet for a QP number past the table.
        let big_qpn = rng.chance(1, 50);
        let d = Desc {
            start: rng.range(0, 255),
            nbeats: rng.range(1, 80),
            opcode: WRITE_ONLY,
            hlen: 70,
            ackreq: rng.chance(1, 2),
            plen,
            dest_qpn: if big_qpn { (qi as u64) | (rng.range(1, 0x3FFFF) << 6) } else { qi as u64 },
            psn,
            va,
            rkey,
            len,
            ud: None,
        };
        let before = q.clone();
        let want = model(q, !big_qpn, &mrs, &d);
        let ctx = format!("packet {n}: QP {qi} MR {mi} {d:x?} (seed {seed:#x})");
        let (job, pulses) = tb.packet(&d);
        let got = outcome_of(&job, &pulses);
        assert_eq!(got, want, "{ctx}\nQP {before:x?}\nMR {:x?}", mrs.get((rkey >> 8) as usize));
        check_common(&job, &d, &qps[qi], &ctx);
        *counts.entry(want.counter).or_insert(0) += 1;
        if qps[qi].err {
            // The class C error put the QP in ERR; the driver would reset and reconnect it:
            // its context again, with fresh PSNs (INIT_SQ_PSN / INIT_RQ_PSN).
            tb.settle(40);
            let q = &mut qps[qi];
            (q.err, q.nak_sent, q.open, q.msn) = (false, false, None, 0);
            let q = q.clone();
            tb.write_qp(qi as u64, &q);
        }
    }
    eprintln!("rx_engine: outcomes {counts:?}");
    for c in ["cnt_roce_ok", "cnt_unknown_qp", "cnt_drop_key", "cnt_drop_psn", "cnt_drop_inv_req", "cnt_dup"] {
        assert!(counts.get(c).copied().unwrap_or(0) >= 20, "too few {c}: {counts:?}");
    }
}

#[test]
fn multi_packet_writes_follow_the_reth() {
    let mut tb = Tb::new(0x2E61_0002);
    let seed = tb.rng.0;
    let mut qps: Vec<Qp> = (0..5)
        .map(|i| {
            let mut q = random_qp(&mut tb.rng, 3, 0x2, 9);
            q.mtu_code = i + 1;
            q
        })
        .collect();
    let m = Mr { valid: true, access: 0x2, tag: 0x5A, pd: 9, va: 0x10_0000_0000, length: 1 << 24, iova: 0x7_0000_1000 };
    let mrs = vec![m.clone()];
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    tb.write_mr(0, &m);
    let mut n = 0;
    let mut bad = 0;
    for _ in 0..150 {
        let rng = &mut tb.rng;
        let qi = rng.range(0, 4) as usize;
        let mtu = 128u64 << qps[qi].mtu_code;
        let segs = rng.range(2, 6);
        // A LAST of exactly one MTU now and then: a MIDDLE in its place must be refused.
        let total = mtu * (segs - 1) + if rng.chance(1, 3) { mtu } else { rng.range(1, mtu) };
        let va = m.va + rng.range(0, (1 << 24) - total);
        // The message's packets, then perhaps one broken on purpose.
        let mut pkts = Vec::new();
        let mut left = total;
        for s in 0..segs {
            let (op, plen) = if s == 0 {
                (WRITE_FIRST, mtu)
            } else if s + 1 == segs {
                (WRITE_LAST, left)
            } else {
                (WRITE_MIDDLE, mtu)
            };
            left -= plen;
            pkts.push((op, plen));
        }
        if total % mtu == 0 && rng.chance(1, 2) {
            // MIDDLE where the message's last MTU must be a LAST (no byte would remain).
            let at = pkts.len() - 1;
            pkts.insert(at, (WRITE_MIDDLE, mtu));
        } else if rng.chance(1, 2) {
            let at = rng.range(0, segs - 1) as usize;
            let (op, plen) = pkts[at];
            let broken = match rng.range(0, 4) {
                0 => (op, plen + 4),                                 // wrong segment length
                1 => (WRITE_FIRST, mtu),                             // FIRST inside or before
                2 if op != WRITE_FIRST => (WRITE_ONLY, plen),        // ONLY inside a message
                3 if op == WRITE_LAST && plen > 1 => (op, plen - 1), // LAST short
                _ => (WRITE_MIDDLE, mtu),                            // MIDDLE where it is not
            };
            pkts.insert(at, broken);
        }
        if rng.chance(1, 5) {
            // A LAST or MIDDLE with no message open.
            pkts.insert(0, (*rng.pick(&[WRITE_LAST, WRITE_MIDDLE]), mtu));
        }
        for (op, plen) in pkts {
            let q = &mut qps[qi];
            let d = Desc {
                start: tb.rng.range(0, 255),
                nbeats: tb.rng.range(1, 80),
                opcode: op,
                hlen: if op == WRITE_FIRST || op == WRITE_ONLY { 70 } else { 54 },
                ackreq: tb.rng.chance(1, 3),
                plen,
                dest_qpn: qi as u64,
                psn: q.epsn,
                // MIDDLE/LAST carry no RETH: the ingress leaves stale values in these fields.
                va: if op == WRITE_FIRST || op == WRITE_ONLY { va } else { tb.rng.next_u64() },
                rkey: if op == WRITE_FIRST || op == WRITE_ONLY { 0x5A } else { tb.rng.u32() },
                len: if op == WRITE_FIRST || op == WRITE_ONLY { total as u32 } else { tb.rng.u32() },
                ud: None,
            };
            let before = q.clone();
            let want = model(q, true, &mrs, &d);
            if want.counter != "cnt_roce_ok" {
                bad += 1;
            }
            let (job, pulses) = tb.packet(&d);
            let got = outcome_of(&job, &pulses);
            assert_eq!(got, want, "packet {n}: QP {qi} {d:x?} (seed {seed:#x})\nQP before {before:x?}");
            check_common(&job, &d, &qps[qi], &format!("packet {n}"));
            n += 1;
        }
        // Close any message a broken packet left open, so the next one starts clean.
        let q = &mut qps[qi];
        if let Some((_, rem)) = q.open {
            let d = Desc {
                opcode: WRITE_LAST,
                plen: rem,
                dest_qpn: qi as u64,
                psn: q.epsn,
                nbeats: 1,
                hlen: 54,
                ..Desc::default()
            };
            let want = model(q, true, &mrs, &d);
            let (job, pulses) = tb.packet(&d);
            assert_eq!(outcome_of(&job, &pulses), want, "closing LAST (seed {seed:#x})");
        }
    }
    assert!(bad > 30, "only {bad} broken packets");
}

/// Packets that arrive together are served back to back (`WriteBack` takes the next
/// descriptor itself when nothing else waits): runs of WRITE ONLY, FIRST/LAST messages on
/// three QPs, each run one QP's packets in a row, now and then a duplicate PSN, a PSN ahead of
/// the expected one, a bad rkey or a region overrun, handed in as one burst. Each packet's job
/// and counter is the model's, in order: a visit that read the QP's transport state before the
/// previous packet's write-back would see a stale expected PSN and answer with a NAK.
#[test]
fn back_to_back_packets_see_the_previous_write_back() {
    let mut tb = Tb::new(0x2E61_0009);
    let seed = tb.rng.0;
    let mut qps: Vec<Qp> = (0..3)
        .map(|i| {
            let mut q = random_qp(&mut tb.rng, 3, 0x2, 4);
            q.mtu_code = 1 + i;
            q
        })
        .collect();
    let m = Mr { valid: true, access: 0x2, tag: 0x3C, pd: 4, va: 0x20_0000_0000, length: 1 << 20, iova: 0x5_0000_0040 };
    let mrs = vec![m.clone()];
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    tb.write_mr(0, &m);
    let mut n = 0;
    for round in 0..40 {
        let mut ds = Vec::new();
        let mut want = Vec::new();
        for _ in 0..tb.rng.range(1, 4) {
            let qi = tb.rng.range(0, 2) as usize;
            for _ in 0..tb.rng.range(1, 8) {
                let rng = &mut tb.rng;
                let q = &mut qps[qi];
                let mtu = 128u64 << q.mtu_code;
                let two = rng.chance(1, 4);
                let total = if two { mtu + rng.range(1, mtu) } else { rng.range(1, mtu) };
                let mut va = m.va + rng.range(0, (1 << 20) - total);
                let mut rkey = 0x3C;
                let mut psn_off = 0u32;
                match rng.range(0, 11) {
                    0 => psn_off = 0xFF_FFFF, // a duplicate (one behind)
                    1 => psn_off = 1,         // ahead: a sequence error
                    2 => rkey ^= 1,
                    3 => va = m.va + (1 << 20) - total + 1,
                    _ => {}
                }
                let pkts =
                    if two { vec![(WRITE_FIRST, mtu), (WRITE_LAST, total - mtu)] } else { vec![(WRITE_ONLY, total)] };
                for (k, (op, plen)) in pkts.into_iter().enumerate() {
                    let d = Desc {
                        start: rng.range(0, 255),
                        nbeats: rng.range(1, 80),
                        opcode: op,
                        hlen: if k == 0 { 70 } else { 54 },
                        ackreq: rng.chance(1, 3),
                        plen,
                        dest_qpn: qi as u64,
                        psn: q.epsn.wrapping_add(if k == 0 { psn_off } else { 0 }) & 0xFF_FFFF,
                        va: if k == 0 { va } else { rng.next_u64() },
                        rkey: if k == 0 { rkey } else { rng.u32() },
                        len: if k == 0 { total as u32 } else { rng.u32() },
                        ud: None,
                    };
                    want.push(model(q, true, &mrs, &d));
                    ds.push(d);
                }
                // A message a refused FIRST left open is closed by the next run's packets
                // (the model says how); one refused packet is enough per run.
                if q.open.is_some() {
                    break;
                }
            }
        }
        let (jobs, pulses) = tb.burst(&ds);
        let ctx = format!("round {round}, packets {n}.. (seed {seed:#x})");
        assert_eq!(jobs.len(), ds.len(), "{ctx}: one job per packet");
        assert_eq!(pulses.len(), ds.len(), "{ctx}: one counter pulse per packet: {pulses:?}");
        for (i, d) in ds.iter().enumerate() {
            let got = outcome_of(&jobs[i], &pulses[i..i + 1]);
            assert_eq!(got, want[i], "{ctx}: packet {i} of the burst {d:x?}");
        }
        n += ds.len();
        tb.settle(40);
    }
}

/// A command waits for no stream of packets: while a QP's packets arrive back to back (each
/// visit could take the next packet from `WriteBack`), a command putting that QP in RESET,
/// which must wait until the engine has left the QP, is still taken within a visit or two.
#[test]
fn a_reset_is_taken_while_the_qps_packets_keep_coming() {
    let mut tb = Tb::new(0x2E61_000A);
    let mut q = random_qp(&mut tb.rng, 3, 0x2, 4);
    q.mtu_code = 3;
    let m = Mr { valid: true, access: 0x2, tag: 0x3C, pd: 4, va: 0x20_0000_0000, length: 1 << 20, iova: 0x5_0000_0040 };
    tb.write_qp(5, &q);
    tb.write_mr(0, &m);
    let ds: Vec<Desc> = (0..200u32)
        .map(|k| Desc {
            start: 0,
            nbeats: 2,
            opcode: WRITE_ONLY,
            hlen: 70,
            plen: 64,
            dest_qpn: 5,
            psn: q.epsn.wrapping_add(k) & 0xFF_FFFF,
            va: m.va + 64 * u64::from(k),
            rkey: 0x3C,
            len: 64,
            ..Desc::default()
        })
        .collect();
    let reset = Qp { state: 0, ..q.clone() };
    let mut next = 0;
    let mut asked = None;
    for c in 0..3000 {
        if next < ds.len() {
            tb.set_desc(&ds[next]);
        }
        tb.dut.set_bit(tb.p.desc_empty, next == ds.len());
        tb.dut.set_bit(tb.p.job_afull, false);
        if c == 100 {
            // The driver's RESET of QP 5, in the middle of the stream.
            tb.dut.set(tb.p.cmd_op, 1);
            tb.dut.set(tb.p.cmd_index, 5);
            tb.dut.set_wide(tb.p.cmd_record, &qp_record(&reset));
            tb.dut.set("cmd_valid", 1);
            asked = Some(next);
        }
        tb.dut.eval();
        if asked.is_some() && tb.dut.get_bit(tb.p.cmd_ready) {
            let taken = next - asked.unwrap();
            assert!(next < ds.len(), "the RESET waited for the whole stream");
            assert!(taken <= 3, "the RESET waited {taken} packets");
            return;
        }
        if tb.dut.get_bit(tb.p.desc_read) {
            next += 1;
        }
        tb.dut.tick();
    }
    panic!("the RESET was never taken");
}

/// Random SENDs at path MTU 256 into receive WQEs (256 bytes: up to 15 entries) of random
/// entries — lengths 0 (junk lkey), 1 and up, odd addresses — with now and then a bad entry
/// (stale tag, no LOCAL_WRITE, past its region), a message one byte too long or a WQE whose
/// num_sge is more than its 256 bytes hold (16..=255). Checks every
/// job: a whole-WQE fetch (4 beats) per message; the payload pieces map message byte `m` to
/// the IOVA of the entry holding it and cover each packet's payload once, in order, at packet
/// offset `hlen + m`, only the packet's last job freeing its beats and carrying its ACK
/// request; the receive CQE (status, byte_len, wr_id, opcode) after the payload; a bad entry
/// gives IBV_WC_LOC_PROT_ERR (4), a too-long message or an overfull num_sge IBV_WC_LOC_LEN_ERR
/// (1), with no payload job for the refused packet.
#[test]
fn send_scatters_over_the_receive_entries() {
    use std::collections::HashMap;
    let mut tb = Tb::new(0x2E61_0003);
    let seed = tb.rng.0;
    let qpn = 3u64;
    let (rq_base, cqn) = (0x4000_0000u64, 2u64);
    let mut q = random_qp(&mut tb.rng, 3, 0x1, 7);
    q.mtu_code = 1;
    let good = Mr { valid: true, access: 0x1, tag: 0x11, pd: 7, va: 0x10_0000, length: 1 << 16, iova: 0x9_0000_0040 };
    let ro = Mr { access: 0x4, tag: 0x22, iova: 0xA_0000_0000, ..good.clone() };
    tb.write_mr(1, &good);
    tb.write_mr(2, &ro);
    tb.write_cq(cqn, 6, 0x5000_0000);
    let make_qp = |tb: &mut Tb, q: &Qp| {
        let mut r = [0u8; 64];
        qp::STATE.put(&mut r, 0);
        tb.command(1, qpn, &r);
        let mut r = qp_record(q);
        qp::RECV_CQ.put(&mut r, cqn);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RQ_LOG_SIZE.put(&mut r, 3);
        qp::RQ_LOG_STRIDE.put(&mut r, 2);
        qp::RQ_BASE.put(&mut r, rq_base);
        tb.command(1, qpn, &r);
    };
    make_qp(&mut tb, &q);
    let mut ci = 0u64;
    let (mut pieces_total, mut multi_piece_pkts, mut errors, mut overs) = (0, 0, 0, 0);
    for msg in 0..60u64 {
        let rng = &mut tb.rng;
        let n = rng.range(1, 15) as usize;
        // Entries: (addr, len, lkey); lengths 0 now and then.
        let mut entries: Vec<(u64, u64, u64)> = Vec::new();
        for _ in 0..n {
            let len = match rng.range(0, 6) {
                0 => 0,
                1 => rng.range(1, 8),
                2 => 256,
                _ => rng.range(8, 700),
            };
            let addr = good.va + rng.range(0, (1 << 16) - 700);
            entries.push((addr, len, if len == 0 { u64::from(rng.u32()) } else { u64::from(key::word(1, 0x11)) }));
        }
        let total: u64 = entries.iter().map(|e| e.1).sum();
        // Now and then one nonzero entry is bad, or the message is one byte too long.
        let mut bad = None;
        let nz: Vec<usize> = (0..n).filter(|&k| entries[k].1 > 0).collect();
        if !nz.is_empty() && rng.chance(1, 6) {
            let k = *rng.pick(&nz);
            match rng.range(0, 3) {
                0 => entries[k].2 = u64::from(key::word(1, 0x12)), // stale tag
                1 => entries[k].2 = u64::from(key::word(2, 0x22)), // no LOCAL_WRITE
                _ => entries[k].0 = good.va + good.length - entries[k].1 + 1, // past the region
            }
            bad = Some(k);
        }
        let too_long = bad.is_none() && rng.chance(1, 6);
        // Now and then the WQE claims more entries than its 256 bytes hold (a malformed WQE):
        // LOC_LEN_ERR at the first packet, whatever the message's length.
        let over = bad.is_none() && !too_long && rng.chance(1, 8);
        let num_sge = if over { rng.range(16, 256) } else { n as u64 };
        let len = if too_long {
            total + 1
        } else if rng.chance(1, 3) {
            total
        } else {
            rng.range(0, total)
        };
        // The WQE (256 bytes) at its ring slot; the doorbell.
        let mut wqe = vec![0u8; 256];
        rnic_contract::recv_wqe::WR_ID.put(&mut wqe, 0xC0DE_0000 + msg);
        rnic_contract::recv_wqe::NUM_SGE.put(&mut wqe, num_sge);
        for (k, e) in entries.iter().enumerate() {
            let o = rnic_contract::recv_wqe::sge_offset(k);
            wqe[o..o + 8].copy_from_slice(&e.0.to_le_bytes());
            wqe[o + 8..o + 12].copy_from_slice(&(e.1 as u32).to_le_bytes());
            wqe[o + 12..o + 16].copy_from_slice(&(e.2 as u32).to_le_bytes());
        }
        let slot = rq_base + (ci % 8) * 256;
        let mut mem = HashMap::new();
        for b in 0..4 {
            mem.insert(slot + 64 * b, wqe[64 * b as usize..64 * (b as usize + 1)].to_vec());
        }
        tb.rq_doorbell(qpn, ci + 1);
        // Message byte m -> IOVA, for a good receive.
        let mut iova_of = Vec::new();
        for e in &entries {
            for i in 0..e.1 {
                iova_of.push(good.iova + (e.0 - good.va) + i);
            }
        }
        // Packets at MTU 256.
        let npk = len.max(1).div_ceil(256);
        let mut sent = 0u64;
        let ctx = format!(
            "message {msg}: {len} B into {:?} (bad {bad:?}, num_sge {num_sge}) (seed {seed:#x})",
            entries.iter().map(|e| e.1).collect::<Vec<_>>()
        );
        let mut refused = false;
        for p in 0..npk {
            let plen = if p + 1 == npk { len - sent } else { 256 };
            let op = match (npk, p) {
                (1, _) => SEND_ONLY,
                (_, 0) => SEND_FIRST,
                (_, p) if p + 1 == npk => SEND_LAST,
                _ => SEND_MIDDLE,
            };
            let hlen = 54 + 4 * tb.rng.range(0, 8);
            let d = Desc {
                start: tb.rng.range(0, 255),
                nbeats: (hlen + plen + 4).div_ceil(64),
                opcode: op,
                hlen,
                ackreq: tb.rng.chance(1, 3),
                plen,
                dest_qpn: qpn,
                psn: q.epsn,
                ..Desc::default()
            };
            let (jobs, fetches) = tb.packet_rq(&d, &mem);
            let pctx = format!("{ctx}, packet {p} ({op:#x}, {plen} B)");
            if p == 0 {
                assert_eq!(fetches, vec![(slot, 4)], "{pctx}: one fetch of the whole 256-byte WQE");
            } else {
                assert!(fetches.is_empty(), "{pctx}: fetches {fetches:x?}");
            }
            let pay: Vec<&JobSeen> = jobs.iter().filter(|j| j.kind == 0).collect();
            let releasing: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].release != 0).collect();
            assert_eq!(releasing.len(), 1, "{pctx}: jobs releasing beats: {jobs:x?}");
            assert_eq!(jobs[releasing[0]].release, d.nbeats, "{pctx}");
            assert!(jobs.iter().all(|j| j.start == d.start || j.kind == 1), "{pctx}: job.start");
            let fails_here = (bad.is_some() || over) && p == 0 || too_long && sent + plen > total;
            if fails_here {
                assert!(pay.is_empty(), "{pctx}: a refused packet wrote {pay:x?}");
                let cqe = jobs.iter().find(|j| j.kind == 1).expect("a receive CQE");
                let status = if bad.is_some() { 4 } else { 1 };
                assert_eq!(cqe.cqe.unwrap(), (status, 0, 0xC0DE_0000 + msg, 128), "{pctx}: CQE");
                assert!(cqe.need_ack, "{pctx}: the CQE carries the NAK");
                assert_eq!(cqe.syndrome, if bad.is_some() { 0x63 } else { 0x61 }, "{pctx}: NAK");
                refused = true;
                errors += 1;
                overs += usize::from(over);
                break;
            }
            // The payload pieces cover [sent, sent + plen) in order, each in one entry.
            let mut at = sent;
            for (i, j) in pay.iter().enumerate() {
                assert!(j.plen > 0, "{pctx}: empty piece");
                assert_eq!(j.off, hlen + (at - sent), "{pctx}: piece {i} offset into the packet");
                for b in 0..j.plen {
                    assert_eq!(
                        j.addr + b,
                        iova_of[(at + b) as usize],
                        "{pctx}: piece {i} byte {b} (message byte {})",
                        at + b
                    );
                }
                let last = i + 1 == pay.len();
                assert_eq!(j.release != 0, last, "{pctx}: piece {i} release");
                assert!(!j.need_ack || last, "{pctx}: ACK request on piece {i} of {}", pay.len());
                at += j.plen;
            }
            assert_eq!(at, sent + plen, "{pctx}: pieces {pay:x?}");
            pieces_total += pay.len();
            if pay.len() > 1 {
                multi_piece_pkts += 1;
            }
            sent += plen;
            q.epsn = (q.epsn + 1) & 0xFF_FFFF;
            if p + 1 == npk {
                let cqe = jobs.last().unwrap();
                assert_eq!(cqe.kind, 1, "{pctx}: the receive CQE comes last");
                assert_eq!(cqe.cqe.unwrap(), (0, len, 0xC0DE_0000 + msg, 128), "{pctx}: CQE");
            }
        }
        ci += 1;
        if refused {
            // The QP went to ERR: start it again (RESET, then RTS with fresh RQ indices).
            q.epsn = tb.rng.u32() & 0xFF_FFFF;
            make_qp(&mut tb, &q);
            ci = 0;
        }
    }
    assert!(
        multi_piece_pkts > 20 && errors > 5 && overs >= 2,
        "{multi_piece_pkts} packets over several entries ({pieces_total} pieces), {errors} refused, {overs} for num_sge"
    );
}

/// `dbg_state` (bits 5:0 of rnic_contract::regs::STATUS) names the engine's states by the
/// numbers they had before they were named (in parentheses in `RxState`'s documentation): an
/// accepted WRITE ONLY passes through `Idle` 0, `ReadQpState` 1, `LoadQpState` 2, `CheckRegion`
/// 5, `Decide` 6 and `WriteBack` 9; a refused rkey through the same, then the flush visit of
/// the QP its class C error put in ERR: 0, 1, 2, `FlushStep` 33 and back to 0 (nothing to
/// flush).
#[test]
fn dbg_state_reports_the_state_numbers() {
    let mut tb = Tb::new(0xD8_57A7);
    let pd = 3;
    let m = Mr { valid: true, access: 2, tag: 0x11, pd, va: 0x4_0000, length: 0x1000, iova: 0x9000_0000 };
    tb.write_mr(2, &m);
    let rkey = key::word(2, 0x11);
    let q = random_qp(&mut Rng(0xD8), 2, 2, pd);
    tb.write_qp(9, &q);
    let write = |psn: u32, rkey: u32| Desc {
        start: 1,
        nbeats: 2,
        opcode: WRITE_ONLY,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: 9,
        psn,
        va: 0x4_0000,
        rkey,
        len: 16,
        ud: None,
    };
    assert_eq!(tb.state_trace(&write(q.epsn, rkey), 40), [0, 1, 2, 5, 6, 9, 0], "an accepted WRITE ONLY");
    assert_eq!(
        tb.state_trace(&write((q.epsn + 1) & 0xFF_FFFF, rkey ^ 1), 200),
        [0, 1, 2, 5, 6, 9, 0, 1, 2, 33, 0],
        "a NAK remote access error, then the flush visit"
    );
}

/// UD SENDs (IBTA Vol 1 9.8.3; `RxDesc::ud`, the ingress's SEND ONLY with the DETH in
/// `reth_va`) on a UD QP (QP_TYPE 1, its Q_Key in the context's QKEY): a good one becomes the
/// GRH job (the packet's IPv4 header, frame bytes 14..34, to bytes 20..40 of the first entry,
/// releasing nothing), the payload 40 bytes into the entry (releasing the packet's beats), and
/// a receive CQE with byte_len + 40, IBV_WC_GRH (and WITH_IMM), SRC_QP = the DETH's source QP;
/// no job asks for an ACK. A wrong Q_Key: `cnt_drop_key`, no fetch. No receive WQE:
/// `cnt_drop_no_rwqe`, no RNR NAK; longer than the WQE takes: dropped the same way, the WQE
/// kept. A first entry shorter than the GRH area: LOC_LEN_ERR, no
/// payload. An RC SEND to the UD QP and a UD SEND to an RC QP: `cnt_unknown_qp`.
#[test]
fn ud_sends_land_behind_the_grh_area() {
    use std::collections::HashMap;
    let mut tb = Tb::new(0x0D_2001);
    let (qpn, rc_qpn) = (5u64, 6u64);
    let (rq_base, cqn, qkey) = (0x4000_0000u64, 2u64, 0x1234_5678u64);
    let mut q = random_qp(&mut tb.rng, 3, 0x1, 7);
    q.mtu_code = 5;
    let good = Mr { valid: true, access: 0x1, tag: 0x11, pd: 7, va: 0x10_0000, length: 1 << 16, iova: 0x9_0000_0040 };
    tb.write_mr(1, &good);
    tb.write_cq(cqn, 6, 0x5000_0000);
    let mut r = [0u8; 64];
    qp::STATE.put(&mut r, 0);
    tb.command(1, qpn, &r);
    let mut r = qp_record(&q);
    qp::QP_TYPE.put(&mut r, 1);
    qp::QKEY.put(&mut r, qkey);
    qp::RECV_CQ.put(&mut r, cqn);
    qp::SEND_CQ.put(&mut r, cqn);
    qp::RQ_LOG_SIZE.put(&mut r, 3);
    qp::RQ_BASE.put(&mut r, rq_base);
    tb.command(1, qpn, &r);
    tb.write_qp(rc_qpn, &q);
    let mut ci = 0u64;
    // Posts a 64-byte receive WQE of `entries` (addr, len) and returns the fetchable memory.
    let mut post = |tb: &mut Tb, entries: &[(u64, u64)], wr_id: u64| {
        let mut wqe = vec![0u8; 64];
        rnic_contract::recv_wqe::WR_ID.put(&mut wqe, wr_id);
        rnic_contract::recv_wqe::NUM_SGE.put(&mut wqe, entries.len() as u64);
        for (k, e) in entries.iter().enumerate() {
            let o = rnic_contract::recv_wqe::sge_offset(k);
            wqe[o..o + 8].copy_from_slice(&e.0.to_le_bytes());
            wqe[o + 8..o + 12].copy_from_slice(&(e.1 as u32).to_le_bytes());
            wqe[o + 12..o + 16].copy_from_slice(&key::word(1, 0x11).to_le_bytes());
        }
        let mut mem = HashMap::new();
        mem.insert(rq_base + (ci % 8) * 64, wqe);
        ci += 1;
        tb.rq_doorbell(qpn, ci);
        mem
    };
    let deth = |qk: u64, src: u64| qk << 32 | src;
    let ud = |opcode: u8, plen: u64, dest: u64, d: u64| Desc {
        start: 40,
        nbeats: 2 + plen / 64,
        opcode,
        hlen: if opcode == 0x05 { 66 } else { 62 },
        plen,
        dest_qpn: dest,
        psn: 0xABC,
        ud: Some(d),
        ..Desc::default()
    };
    let iova = |va: u64| good.iova + (va - good.va);
    let none = HashMap::new();

    // No receive WQE posted yet: dropped and counted, nothing answered, nothing fetched.
    let r0 = tb.packet_run(&ud(SEND_ONLY, 100, qpn, deth(qkey, 9)), &none);
    assert_eq!(r0.pulses, vec!["cnt_drop_no_rwqe"], "{r0:?}");
    assert!(r0.fetches.is_empty() && r0.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "{r0:?}");
    // A good one, and one with immediate.
    for (k, (op, plen, flags)) in [(SEND_ONLY, 100u64, 1u64), (0x05, 7, 3)].into_iter().enumerate() {
        let va = good.va + 0x1000 * (k as u64 + 1) + 3;
        let mem = post(&mut tb, &[(va, 1000)], 0xD0 + k as u64);
        let d = ud(op, plen, qpn, deth(qkey, 0xA_BCDE));
        let r = tb.packet_run(&d, &mem);
        let ctx = format!("UD SEND {k}: {r:?}");
        assert_eq!(r.jobs.len(), 3, "{ctx}");
        let (g, p, c) = (&r.jobs[0], &r.jobs[1], &r.jobs[2]);
        assert_eq!((g.kind, g.off, g.plen, g.addr, g.release), (0, 14, 20, iova(va) + 20, 0), "GRH job; {ctx}");
        assert_eq!((p.kind, p.off, p.plen, p.addr, p.release), (0, d.hlen, plen, iova(va) + 40, d.nbeats), "{ctx}");
        assert_eq!(c.cqe, Some((0, plen + 40, 0xD0 + k as u64, 128)), "{ctx}");
        assert_eq!(c.cqe_ud, Some((flags, 0xA_BCDE)), "{ctx}");
        assert!(r.jobs.iter().all(|j| !j.need_ack), "no ACK for UD; {ctx}");
    }
    // A wrong Q_Key: dropped, counted as a key violation; the posted WQE stays for the next.
    let mem = post(&mut tb, &[(good.va + 0x8000, 500)], 0xE0);
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey ^ 0x100, 1)), &mem);
    assert_eq!(r.pulses, vec!["cnt_drop_key"], "{r:?}");
    assert!(r.fetches.is_empty() && r.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "{r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.jobs.last().and_then(|j| j.cqe), Some((0, 50, 0xE0, 128)), "the kept WQE takes the next; {r:?}");
    // A first entry shorter than the GRH area: LOC_LEN_ERR, nothing written.
    let mem = post(&mut tb, &[(good.va + 0x9000, 39), (good.va + 0xA000, 500)], 0xE1);
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey, 1)), &mem);
    assert!(r.jobs.iter().all(|j| j.kind != 0 && !j.need_ack), "no payload, no NAK; {r:?}");
    assert_eq!(r.jobs.last().and_then(|j| j.cqe).map(|c| (c.0, c.2)), Some((1, 0xE1)), "LOC_LEN_ERR; {r:?}");
    // Longer than the WQE takes (after the GRH): dropped and counted, the WQE kept.
    let mem = post(&mut tb, &[(good.va + 0xB000, 40 + 64)], 0xE2);
    let r = tb.packet_run(&ud(SEND_ONLY, 65, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.pulses, vec!["cnt_drop_no_rwqe"], "too long; {r:?}");
    assert!(r.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "nothing written; {r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 64, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.jobs.last().and_then(|j| j.cqe), Some((0, 104, 0xE2, 128)), "the kept WQE; {r:?}");
    // An RC SEND to a UD QP, a UD SEND to an RC QP.
    let rc_send =
        Desc { start: 40, nbeats: 2, opcode: SEND_ONLY, hlen: 54, plen: 4, dest_qpn: rc_qpn, ..Desc::default() };
    let r = tb.packet_run(&Desc { dest_qpn: qpn, ..rc_send.clone() }, &none);
    assert_eq!(r.pulses, vec!["cnt_unknown_qp"], "RC packet to a UD QP; {r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 4, rc_qpn, deth(qkey, 1)), &none);
    assert_eq!(r.pulses, vec!["cnt_unknown_qp"], "UD packet to an RC QP; {r:?}");
}

/// A QP destroyed and created again under the same QPN (what rdma_cm applications do with
/// every new connection) keeps nothing of its last connection: QP 6 is run through random
/// WRITE streams (a message sometimes left open, sometimes ended by a class C error that puts
/// it in ERR), then written in RESET, INIT and RTR/RTS with a new expected PSN, as the driver
/// does. In RESET and INIT its packets are not taken; afterwards the expected PSN is the new
/// one, the MSN starts from 0, no open message survives (a MIDDLE is an invalid request) and
/// no error state either. QP 7's stream runs between QP 6's lives and must never notice.
#[test]
fn a_recreated_qp_keeps_nothing_of_its_last_connection() {
    let mut tb = Tb::new(0x2E61_000C);
    let seed = tb.rng.0;
    let m =
        Mr { valid: true, access: 0x2, tag: 0x6B, pd: 11, va: 0x30_0000_0000, length: 1 << 24, iova: 0x6_0000_2000 };
    let mrs = vec![m.clone()];
    tb.write_mr(0, &m);
    let mut q7 = random_qp(&mut tb.rng, 3, 0x2, 11);
    tb.write_qp(7, &q7);
    let mut n = 0;
    // One packet to QP `qpn`, checked against the model.
    let mut send = |tb: &mut Tb, q: &mut Qp, qpn: u64, op: u8, plen: u64, total: u64, va: u64, psn: u32, ctx: &str| {
        let starts = op == WRITE_FIRST || op == WRITE_ONLY;
        let d = Desc {
            start: tb.rng.range(0, 255),
            nbeats: tb.rng.range(1, 80),
            opcode: op,
            hlen: if starts { 70 } else { 54 },
            ackreq: tb.rng.chance(1, 3),
            plen,
            dest_qpn: qpn,
            psn,
            va: if starts { va } else { tb.rng.next_u64() },
            rkey: if starts { 0x6B } else { tb.rng.u32() },
            len: if starts { total as u32 } else { tb.rng.u32() },
            ud: None,
        };
        let before = q.clone();
        let want = model(q, true, &mrs, &d);
        let (job, pulses) = tb.packet(&d);
        assert_eq!(
            outcome_of(&job, &pulses),
            want,
            "packet {n} ({ctx}): QP {qpn} {d:x?} (seed {seed:#x})\nQP before {before:x?}"
        );
        check_common(&job, &d, q, &format!("packet {n}"));
        n += 1;
        if want.counter == "cnt_drop_key" || want.counter == "cnt_drop_inv_req" {
            // The class C error's flush visit.
            tb.settle(40);
        }
    };
    // Lives that ended with a message open, in ERR; MIDDLEs sent first in a new life.
    let (mut left_open, mut left_err, mut middles) = (0, 0, 0);
    for life in 0..8 {
        let ctx = format!("life {life}");
        let mut q6 = random_qp(&mut tb.rng, if life % 2 == 0 { 3 } else { 2 }, 0x2, 11);
        if life > 0 {
            // Destroyed (RESET), created again (INIT): no packet is taken in either.
            for state in [0, 1] {
                tb.write_qp(6, &Qp { state, ..q6.clone() });
                let mut gone = Qp { state, ..q6.clone() };
                let psn = q6.epsn;
                send(&mut tb, &mut gone, 6, WRITE_ONLY, 64, 64, m.va, psn, &format!("{ctx}: QP 6 in state {state}"));
            }
        }
        // Connected again with its new PSN.
        tb.write_qp(6, &q6);
        let mtu = 128u64 << q6.mtu_code;
        if life > 0 && tb.rng.chance(1, 4) {
            // The last life's message does not go on: a MIDDLE is an invalid request (and the
            // QP is in ERR until it is created again).
            let psn = q6.epsn;
            send(&mut tb, &mut q6, 6, WRITE_MIDDLE, mtu, 0, 0, psn, &format!("{ctx}: a MIDDLE first"));
            middles += 1;
        }
        for k in 0..tb.rng.range(4, 12) {
            for (qpn, q) in [(6u64, &mut q6), (7, &mut q7)] {
                // (Every message fits the region: 4 MTUs at most from its first 4 MiB.)
                let va = m.va + tb.rng.range(0, 1 << 22);
                let qmtu = 128u64 << q.mtu_code;
                let psn = q.epsn;
                if let Some((_, rem)) = q.open {
                    let (op, plen) = if rem > qmtu { (WRITE_MIDDLE, qmtu) } else { (WRITE_LAST, rem) };
                    send(&mut tb, q, qpn, op, plen, 0, 0, psn, &ctx);
                    continue;
                }
                match tb.rng.range(0, 5) {
                    0 => {
                        // A message of 2..4 packets, its FIRST now.
                        let total = qmtu * tb.rng.range(1, 3) + tb.rng.range(1, qmtu);
                        send(&mut tb, q, qpn, WRITE_FIRST, qmtu, total, va, psn, &ctx);
                    }
                    1 if qpn == 6 && k > 2 && tb.rng.chance(1, 4) => {
                        // A region overrun: NAK remote access error, the QP in ERR.
                        send(&mut tb, q, qpn, WRITE_ONLY, 64, 64, m.va + m.length - 32, psn, &ctx);
                    }
                    2 if tb.rng.chance(1, 4) => {
                        // A PSN ahead: one sequence-error NAK.
                        let ahead = psn.wrapping_add(tb.rng.range(1, 9) as u32) & 0xFF_FFFF;
                        send(&mut tb, q, qpn, WRITE_ONLY, 64, 64, va, ahead, &ctx);
                    }
                    _ => {
                        let len = tb.rng.range(0, qmtu);
                        send(&mut tb, q, qpn, WRITE_ONLY, len, len, va, psn, &ctx);
                    }
                }
            }
        }
        // A PSN a little behind the expected one (as a late packet of the last life would
        // carry) is a duplicate, never executed.
        if life > 0 {
            let psn = q6.epsn.wrapping_sub(tb.rng.range(1, 100) as u32) & 0xFF_FFFF;
            send(&mut tb, &mut q6, 6, WRITE_ONLY, 64, 64, m.va, psn, &format!("{ctx}: an old PSN"));
        }
        if life % 2 == 1 && q6.open.is_none() && !q6.err {
            // This life ends inside a message: its FIRST is the last packet QP 6 sees.
            let (psn, total) = (q6.epsn, 2 * mtu + 1);
            send(&mut tb, &mut q6, 6, WRITE_FIRST, mtu, total, m.va, psn, &format!("{ctx}: a FIRST last"));
        }
        left_open += usize::from(q6.open.is_some() && !q6.err);
        left_err += usize::from(q6.err);
    }
    assert!(n > 100, "only {n} packets");
    assert!(
        left_open > 0 && left_err > 0 && middles > 0,
        "shapes not reached: {left_open} lives left a message open, {left_err} in ERR, {middles} MIDDLEs first"
    );
    assert!(!q7.err, "QP 7's stream was disturbed (seed {seed:#x})");
}
