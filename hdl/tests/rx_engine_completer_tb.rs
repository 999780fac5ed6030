//! `RxEngine`'s completer and asynchronous events in Verilator: READ responses scattered over
//! a READ's SGE list, the completer across QP re-creation, and the event CQEs of QP errors,
//! COMM_EST and LAST_WQE_REACHED. The bench (`rx_engine/mod.rs`) plays the scheduler's side:
//! WQEs recorded through the in-flight table's write port and reported as emitted, READ lists
//! written through `rl_*`, its count of WQEs recorded served on `sent_data`.
//!
//! - `read_responses_scatter_over_the_read_list`: RDMA READs recorded with `rd_list` set (a
//!   READ with several local SGEs, whose checked list the scheduler copies to `rl_*`, list
//!   `s mod 4` of the QP for its READ number `s`; the other three hold junk), one QP per path
//!   MTU, 1..=16 random list entries (1 byte to 3 MTUs, any IOVA alignment), READs of
//!   five QPs outstanding together and their READ RESPONSE FIRST/MIDDLE/LAST/ONLY packets
//!   interleaved across QPs: every payload byte goes to the IOVA of the list entry holding it,
//!   at packet offset `hlen + bytes placed`, one job per piece, only a packet's last piece
//!   freeing its beats; the READ's CQE (byte_len = the list's sum, IBV_WC_RDMA_READ) follows
//!   its last payload (none for an unsignaled READ); a signaled WRITE recorded before the READ completes first, on the READ's
//!   first response. Duplicate responses (`cnt_dup`) and responses ahead of a missing one
//!   (`cnt_drop_psn`, one go-back-N request from the missing PSN) write nothing, and the next
//!   in-order response still lands in the right entry; so do late duplicates of READs
//!   already complete.
//! - `qp_errors_and_comm_est_raise_async_events`, `a_qp_on_an_srq_entering_err_raises_last_wqe_reached`:
//!   the QP-affiliated asynchronous events (rnic_contract::regs::ASYNC_EVENT_CQ, here the
//!   `async_cq` input) as event CQE jobs on the event CQ: COMM_EST once per RTR, QP_ACCESS_ERR /
//!   QP_REQ_ERR after the responder's class C NAKs, LAST_WQE_REACHED for a QP on an SRQ entering
//!   ERR (after its error event, or alone when the driver moves it), nothing while disabled.
//! - `a_recreated_qp_completes_only_its_new_connections_work`: the completer's side of
//!   `rx_engine_tb`'s `a_recreated_qp_keeps_nothing_of_its_last_connection`: eight lives of one QPN, each with a WRITE and a READ recorded at a new SQ PSN, some
//!   ended with the READ half scattered; a late response of the last life is dropped, and the
//!   new READ scatters from its own list's start and both WQEs complete with their own wr_ids.
mod harness;
mod rx_engine;

use harness::tables::Mr;
use harness::Rng;
use rnic_contract::mr_entry::key;
use rnic_contract::qp_context as qp;
use rx_engine::*;

/// READs whose in-flight record has `rd_list` set (as the scheduler records a READ with several
/// local SGEs), on five QPs, one per path MTU (256..4096), with lists of 1..=16 random entries
/// (lengths 1..=3 MTUs, one byte and exactly one MTU among them, any IOVA alignment) written
/// through the `rl_*` port, the QPs' READs outstanding together and their responses
/// (FIRST/MIDDLE/LAST, or ONLY) interleaved across QPs in PSN order per QP. Junk is written
/// past each list's end and into the lists of QPs not being read. For every in-order response:
/// its payload jobs map message byte `m` to the IOVA of the list entry holding it, at packet
/// offset `hlen + bytes placed`, cover the payload once in order, none empty; only the last
/// frees the packet's beats (none asks for an ACK); the READ's CQE (status 0, byte_len = the
/// list's sum, IBV_WC_RDMA_READ) comes after its last payload unless the READ is unsignaled
/// (the next READ's list still starts at its entry 0), and a signaled WRITE recorded
/// before the READ completes (its CQE first) on the READ's first response. Now and then a
/// duplicate response (PSN behind, also of a READ already complete) is dropped (`cnt_dup`) and
/// a response ahead of the expected PSN is dropped (`cnt_drop_psn`) with one go-back-N request
/// from the expected PSN: each writes nothing (one job, freeing its beats) and the next
/// in-order response still lands where it belongs.
#[test]
fn read_responses_scatter_over_the_read_list() {
    use rnic_contract::verbs::wc_opcode;
    use std::collections::HashMap;
    let mut tb = Tb::new(0x2E61_0004);
    let seed = tb.rng.0;
    let cqn = 4u64;
    tb.write_cq(cqn, 10, 0x7000_0000);
    // One QP per path MTU; their QPNs differ in the bits the list table is indexed by.
    let qpns = [9u64, 22, 35, 48, 63];
    let mut psn = HashMap::new();
    for (i, &qpn) in qpns.iter().enumerate() {
        let mut q = random_qp(&mut tb.rng, 3, 0x7, 3);
        q.mtu_code = i as u64 + 1;
        let mut r = qp_record(&q);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RECV_CQ.put(&mut r, cqn);
        tb.command(1, qpn, &r);
        // Some QPs start near the end of the PSN space, so their READs wrap.
        let p0 = if i % 2 == 0 { 0xFF_FFFF - tb.rng.range(0, 40) as u32 } else { tb.rng.u32() & 0xFF_FFFF };
        psn.insert(qpn, p0);
    }
    let empty = HashMap::new();
    let (mut responses, mut multi_piece, mut strays, mut wrote_before) = (0u64, 0u64, 0u64, 0u64);
    for round in 0..20u64 {
        // A READ per QP: its list, junk past it and in the other QPs' lists, its record.
        let mut runs: Vec<ReadRun> = Vec::new();
        for (i, &qpn) in qpns.iter().enumerate() {
            let mtu = 256u64 << i;
            let rng = &mut tb.rng;
            let n = if round == 0 { 16 } else { rng.range(1, 16) };
            let entries: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let len = match rng.range(0, 5) {
                        0 => 1,
                        1 => mtu,
                        _ => rng.range(1, 3 * mtu),
                    };
                    (rng.next_u64() & 0x0000_FFFF_FFFF_FFFF, len)
                })
                .collect();
            let total: u64 = entries.iter().map(|e| e.1).sum();
            let npkts = total.div_ceil(mtu);
            let mut iova_of = Vec::with_capacity(total as usize);
            for e in &entries {
                iova_of.extend((0..e.1).map(|b| e.0 + b));
            }
            // This is the QP's READ number `round`: its list is `round mod 4`; the other three
            // hold junk (lists of READs before and after it).
            for (k, e) in entries.iter().enumerate() {
                tb.write_read_list(qpn, round, k as u64, e.0, e.1 as u32);
            }
            for k in n..16 {
                if tb.rng.chance(1, 2) {
                    let (a, l) = (tb.rng.next_u64(), tb.rng.u32());
                    tb.write_read_list(qpn, round, k, a, l);
                }
            }
            for other in round + 1..round + 4 {
                for k in 0..16 {
                    if tb.rng.chance(1, 4) {
                        let (a, l) = (tb.rng.next_u64(), tb.rng.u32());
                        tb.write_read_list(qpn, other, k, a, l);
                    }
                }
            }
            let mut run = ReadRun {
                qpn,
                mtu,
                wr_id: 0xBEAD_0000 + (round << 8) + i as u64,
                first_psn: 0,
                npkts,
                total,
                iova_of,
                entries,
                next: 0,
                write_before: None,
                signaled: round == 0 || tb.rng.chance(3, 4),
                gaps: Default::default(),
            };
            let p = psn[&qpn];
            if tb.rng.chance(1, 3) {
                let w = (0xA11C_E000 + (round << 8) + i as u64, tb.rng.range(0, 1 << 20));
                tb.record_write(qpn, w, p);
                run.write_before = Some(w);
                wrote_before += 1;
            }
            run.first_psn = (p + u32::from(run.write_before.is_some())) & 0xFF_FFFF;
            psn.insert(qpn, (run.first_psn + npkts as u32) & 0xFF_FFFF);
            tb.record_read(&run);
            runs.push(run);
        }
        // Responses, interleaved across QPs, in order per QP, with strays now and then.
        while runs.iter().any(|r| r.next < r.npkts) {
            let live: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].next < runs[i].npkts).collect();
            let ri = *tb.rng.pick(&live);
            let run = &mut runs[ri];
            let ctx = format!(
                "round {round}, QP {} (MTU {}), READ of {} B over {:?}, response {} of {} (seed {seed:#x})",
                run.qpn,
                run.mtu,
                run.total,
                run.entries.iter().map(|e| e.1).collect::<Vec<_>>(),
                run.next,
                run.npkts
            );
            let i = run.next;
            let behind = i > 0 && tb.rng.chance(1, 6);
            let ahead = !behind && i + 1 < run.npkts && !run.gaps.contains(&i) && tb.rng.chance(1, 6);
            if behind || ahead {
                // A duplicate (PSN behind) or a response past a missing one (PSN ahead).
                let j = if behind { tb.rng.range(0, i - 1) } else { tb.rng.range(i + 1, run.npkts - 1) };
                let d = run.desc(j, &mut tb.rng);
                let got = tb.packet_run(&d, &empty);
                let ctx = format!("{ctx}: stray response {j}");
                let mut want_pulses = vec![if behind { "cnt_dup" } else { "cnt_drop_psn" }];
                let mut want_cqes = vec![];
                if let Some(w) = run.write_before.take() {
                    // Its PSN covers the WRITE before the READ: retired first.
                    want_cqes.push((0, w.1, w.0, u64::from(wc_opcode::RDMA_WRITE)));
                    want_pulses.insert(0, "cnt_cqe");
                }
                assert_eq!(cqes_of(&got.jobs, &ctx), want_cqes, "{ctx}: CQEs {:x?}", got.jobs);
                let rest: Vec<&JobSeen> = got.jobs.iter().filter(|j| j.kind != 1).collect();
                assert_eq!(rest.len(), 1, "{ctx}: jobs {:x?}", got.jobs);
                assert_eq!(
                    (rest[0].kind, rest[0].release, rest[0].start),
                    (NONE, d.nbeats, d.start),
                    "{ctx}: the stray writes nothing and frees its beats"
                );
                assert!(!rest[0].need_ack, "{ctx}");
                assert_eq!(got.pulses, want_pulses, "{ctx}: counters");
                if ahead {
                    run.gaps.insert(i);
                    assert_eq!(
                        got.rewinds,
                        vec![(run.qpn, u64::from(run.psn(i)), false)],
                        "{ctx}: one go-back-N request from the first missing response"
                    );
                } else {
                    assert!(got.rewinds.is_empty(), "{ctx}: rewinds {:x?}", got.rewinds);
                }
                strays += 1;
                continue;
            }
            let pieces = tb.response_in_order(run, &ctx);
            responses += 1;
            if pieces > 1 {
                multi_piece += 1;
            }
        }
        // Late duplicates of READs already complete: for no outstanding READ, dropped.
        for _ in 0..3 {
            let ri = tb.rng.range(0, runs.len() as u64 - 1) as usize;
            let j = tb.rng.range(0, runs[ri].npkts - 1);
            let d = runs[ri].desc(j, &mut tb.rng);
            let got = tb.packet_run(&d, &empty);
            let ctx = format!("round {round}: late duplicate {j} of QP {}'s READ (seed {seed:#x})", runs[ri].qpn);
            assert_eq!(got.jobs.len(), 1, "{ctx}: jobs {:x?}", got.jobs);
            assert_eq!((got.jobs[0].kind, got.jobs[0].release), (NONE, d.nbeats), "{ctx}");
            assert_eq!(got.pulses, vec!["cnt_dup"], "{ctx}");
            assert!(got.rewinds.is_empty(), "{ctx}");
            strays += 1;
        }
    }
    eprintln!("rx_engine: {responses} READ responses in order ({multi_piece} over several entries), {strays} strays, {wrote_before} WRITEs retired by a response");
    assert!(
        multi_piece > 50 && strays > 30 && wrote_before > 5,
        "{multi_piece} responses over several entries, {strays} strays, {wrote_before} WRITEs before"
    );
}

/// QP-affiliated asynchronous events (rnic_contract::regs::ASYNC_EVENT_CQ): with the event CQ
/// enabled, the first request with the expected PSN on a QP in RTR raises COMM_EST (4) once; a
/// NAK remote access error that moves the QP to ERR raises QP_ACCESS_ERR (3), a NAK invalid
/// request (a WRITE MIDDLE with no message open) QP_REQ_ERR (2): each an event CQE (OPCODE
/// 255, STATUS the event, QP_NUM the QP) on the event CQ, after the packet's own job. A QP in
/// RTS raises no COMM_EST; with the register's enable bit clear nothing is raised.
#[test]
fn qp_errors_and_comm_est_raise_async_events() {
    use rnic_contract::verbs::event_type as ev;
    let mut tb = Tb::new(0x2E61_0015);
    let ev_cq = 7u64;
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let pd = 5;
    let m = Mr { valid: true, access: 2, tag: 0x21, pd, va: 0x1_0000, length: 0x1000, iova: 0x8000_0000 };
    tb.write_mr(1, &m);
    let rkey = key::word(1, 0x21);
    let mut rng = Rng(0x15);
    let write = |qpn: u64, psn: u32, rkey: u32, opcode: u8| Desc {
        start: 3,
        nbeats: 2,
        opcode,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: qpn,
        psn,
        va: 0x1_0000,
        rkey,
        len: 16,
        ud: None,
    };
    // QP 3 in RTR: COMM_EST on its first request, not on its second; then a bad rkey.
    let q3 = random_qp(&mut rng, 2, 2, pd);
    tb.write_qp(3, &q3);
    let jobs = tb.packet_jobs(&write(3, q3.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::COMM_EST), 3)], "first request in RTR");
    assert_eq!(jobs.len(), 2, "the packet's job and the event's");
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 1) & 0xFF_FFFF, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "COMM_EST twice");
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 2) & 0xFF_FFFF, rkey ^ 1, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::QP_ACCESS_ERR), 3)], "NAK remote access error");
    // The QP is in ERR: a later packet raises nothing more.
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 3) & 0xFF_FFFF, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "a packet for the QP in ERR");
    // QP 4 in RTS: no COMM_EST; a MIDDLE with no message open is an invalid request.
    let q4 = random_qp(&mut rng, 3, 2, pd);
    tb.write_qp(4, &q4);
    let jobs = tb.packet_jobs(&write(4, q4.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "COMM_EST in RTS");
    let jobs = tb.packet_jobs(&write(4, (q4.epsn + 1) & 0xFF_FFFF, rkey, WRITE_MIDDLE));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::QP_REQ_ERR), 4)], "NAK invalid request");
    // Disabled: neither COMM_EST nor the error event of QP 5.
    tb.dut.set("async_cq", ev_cq);
    let q5 = random_qp(&mut rng, 2, 2, pd);
    tb.write_qp(5, &q5);
    let mut jobs = tb.packet_jobs(&write(5, q5.epsn, rkey, WRITE_ONLY));
    jobs.extend(tb.packet_jobs(&write(5, (q5.epsn + 1) & 0xFF_FFFF, rkey ^ 1, WRITE_ONLY)));
    assert_eq!(event_cqes(&jobs), [], "events while ASYNC_EVENT_CQ is disabled");
    // Re-enabled, QP 3 brought back (its context again with INIT_RQ_PSN): COMM_EST again.
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let q3 = random_qp(&mut rng, 2, 2, pd);
    let mut r = qp_record(&q3);
    q3.peer.put(&mut r);
    tb.command(1, 3, &r);
    let jobs = tb.packet_jobs(&write(3, q3.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::COMM_EST), 3)], "COMM_EST after a new RTR");
}

/// A QP on an SRQ (USE_SRQ, SRQN) that enters ERR raises QP_LAST_WQE_REACHED (16) after its
/// error event when the NIC moves it there (a NAK remote access error: QP_ACCESS_ERR, then
/// LAST_WQE_REACHED), and LAST_WQE_REACHED alone when the driver writes its context with state
/// ERR (the flush visit raises no error event). A QP not on an SRQ moved to ERR by the driver
/// raises nothing.
#[test]
fn a_qp_on_an_srq_entering_err_raises_last_wqe_reached() {
    use rnic_contract::{srq_context as srqc, verbs::event_type as ev};
    let mut tb = Tb::new(0x2E61_0016);
    let ev_cq = 9u64;
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let pd = 3;
    let m = Mr { valid: true, access: 2, tag: 0x33, pd, va: 0x2_0000, length: 0x1000, iova: 0x9000_0000 };
    tb.write_mr(2, &m);
    let mut srq = [0u8; 64];
    srqc::INIT.put(&mut srq, 1);
    tb.command(4, 20, &srq);
    let mut rng = Rng(0x16);
    let on_srq = |tb: &mut Tb, qpn: u64, q: &Qp, state: u64| {
        let mut r = qp_record(q);
        q.peer.put(&mut r);
        qp::STATE.put(&mut r, state);
        qp::USE_SRQ.put(&mut r, 1);
        qp::SRQN.put(&mut r, 20);
        tb.command(1, qpn, &r);
    };
    let q6 = random_qp(&mut rng, 3, 2, pd);
    on_srq(&mut tb, 6, &q6, 3);
    let bad = Desc {
        start: 1,
        nbeats: 2,
        opcode: WRITE_ONLY,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: 6,
        psn: q6.epsn,
        va: 0x2_0000,
        rkey: key::word(2, 0x34),
        len: 16,
        ud: None,
    };
    let jobs = tb.packet_jobs(&bad);
    assert_eq!(
        event_cqes(&jobs),
        [(ev_cq, u64::from(ev::QP_ACCESS_ERR), 6), (ev_cq, u64::from(ev::QP_LAST_WQE_REACHED), 6)],
        "the NIC moved the QP on the SRQ to ERR"
    );
    // The driver moves QP 7 (on the SRQ) and QP 8 (not) to ERR.
    let q7 = random_qp(&mut rng, 3, 2, pd);
    on_srq(&mut tb, 7, &q7, 3);
    on_srq(&mut tb, 7, &q7, 6);
    let q8 = random_qp(&mut rng, 3, 2, pd);
    tb.write_qp(8, &q8);
    let mut r = qp_record(&q8);
    q8.peer.put(&mut r);
    qp::STATE.put(&mut r, 6);
    tb.command(1, 8, &r);
    let jobs = tb.settle_jobs(400);
    assert_eq!(
        event_cqes(&jobs),
        [(ev_cq, u64::from(ev::QP_LAST_WQE_REACHED), 7)],
        "the driver moved QP 7 (SRQ) and QP 8 to ERR"
    );
}

/// The completer's side of a QP destroyed and created again under the same QPN (the
/// requester's counterpart of `a_recreated_qp_keeps_nothing_of_its_last_connection`). QP 12
/// lives eight times, each life with a new SQ PSN half the PSN space from the last one's:
/// a signaled RDMA WRITE and an RDMA READ of 1..=4 responses over a list of 1..=4 entries are
/// recorded, and the READ's responses come in order. Some lives end with the READ cut short
/// (its first responses scattered: the completer holds a list entry and the bytes used of
/// it), the others complete it. After each re-creation, with the new life's WQEs recorded, a
/// response of the last life's READ comes late: it is dropped (a ghost or a duplicate), writes
/// nothing and completes nothing. The new READ is READ number 0 again: its payload lands from
/// byte 0 of entry 0 of its own list, and both WQEs complete with their own wr_ids,
/// successfully (nothing of the last life's READ progress, retired count or PSNs is kept).
#[test]
fn a_recreated_qp_completes_only_its_new_connections_work() {
    let mut tb = Tb::new(0x2E61_000D);
    let seed = tb.rng.0;
    let (qpn, cqn, mtu) = (12u64, 6u64, 256u64);
    tb.write_cq(cqn, 10, 0x7200_0000);
    let mut sq_psn = tb.rng.u32() & 0xFF_FFFF;
    // The last life's READ and the response it was cut at, if it was.
    let mut cut: Option<ReadRun> = None;
    let (mut cuts, mut late) = (0u64, 0u64);
    for life in 0..8u64 {
        let ctx = format!("life {life} (seed {seed:#x})");
        let mut q = random_qp(&mut tb.rng, 3, 0x7, 5);
        q.mtu_code = 1;
        let mut r = qp_record(&q);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RECV_CQ.put(&mut r, cqn);
        qp::SQ_PSN.put(&mut r, u64::from(sq_psn));
        if life > 0 {
            // Destroyed (RESET) and created again: the scheduler's consumer index restarts.
            let mut gone = r;
            qp::STATE.put(&mut gone, 0);
            tb.command(1, qpn, &gone);
        }
        tb.command(1, qpn, &r);
        tb.sent[qpn as usize] = 0;
        // The WRITE at the first PSN, then the READ (READ number 0: list 0).
        let n = tb.rng.range(1, 4);
        let entries: Vec<(u64, u64)> =
            (0..n).map(|_| (tb.rng.next_u64() & 0x0000_FFFF_FFFF_FFFF, tb.rng.range(1, 2 * mtu))).collect();
        for (k, e) in entries.iter().enumerate() {
            tb.write_read_list(qpn, 0, k as u64, e.0, e.1 as u32);
        }
        let total: u64 = entries.iter().map(|e| e.1).sum();
        let iova_of: Vec<u64> = entries.iter().flat_map(|e| (0..e.1).map(move |b| e.0 + b)).collect();
        let w = (0xC0DE_0000 + (life << 8), tb.rng.range(0, 1 << 16));
        tb.record_write(qpn, w, sq_psn);
        let mut run = ReadRun {
            qpn,
            mtu,
            wr_id: 0xC0DE_0001 + (life << 8),
            first_psn: (sq_psn + 1) & 0xFF_FFFF,
            npkts: total.div_ceil(mtu),
            total,
            iova_of,
            entries,
            next: 0,
            write_before: Some(w),
            signaled: true,
            gaps: Default::default(),
        };
        tb.record_read(&run);
        if let Some(old) = cut.take() {
            // A late response of the last life's READ, the one it was cut at.
            let d = old.desc(old.next, &mut tb.rng);
            let got = tb.packet_run(&d, &Default::default());
            let lctx = format!("{ctx}: the last life's response {} (PSN {:#x})", old.next, d.psn);
            assert_eq!(got.jobs.len(), 1, "{lctx}: jobs {:x?}", got.jobs);
            assert_eq!(
                (got.jobs[0].kind, got.jobs[0].release, got.jobs[0].start),
                (NONE, d.nbeats, d.start),
                "{lctx}: it writes nothing and frees its beats"
            );
            assert!(got.pulses == ["cnt_drop_psn"] || got.pulses == ["cnt_dup"], "{lctx}: counters {:?}", got.pulses);
            assert!(got.rewinds.is_empty(), "{lctx}: rewinds {:x?}", got.rewinds);
            late += 1;
        }
        // This life's responses: all of them, or (the life ends early) the first few.
        let stop =
            if life < 7 && run.npkts > 1 && tb.rng.chance(1, 2) { tb.rng.range(1, run.npkts - 1) } else { run.npkts };
        while run.next < stop {
            let rctx = format!("{ctx}: response {} of {} ({} B over {:?})", run.next, run.npkts, total, run.entries);
            tb.response_in_order(&mut run, &rctx);
        }
        if stop < run.npkts {
            cuts += 1;
            cut = Some(run);
        }
        // The next life starts half the PSN space away.
        sq_psn = (sq_psn + 0x80_0000 + tb.rng.range(0, 0xFFFF) as u32) & 0xFF_FFFF;
    }
    assert!(
        cuts >= 2 && late >= 2,
        "shapes not reached: {cuts} lives cut short, {late} late responses (seed {seed:#x})"
    );
}
