//! `TxScheduler`'s WQE fetching and QP service in Verilator: bursts of WQEs per DMA read, the
//! fetch-ahead machine, doorbells rung while a QP is served, a RESET of the served QP, and a QP
//! stepping aside with its prefetch buffer. The bench, its model and what it checks of every
//! output are described in `tx_scheduler_tb.rs` and kept in `tx_scheduler/mod.rs`.
//!
//! - `the_second_burst_is_asked_for_before_the_first_is_used`: the fetch-ahead machine asks
//!   for a QP's second burst as its first is accepted, and for later ones while the buffer
//!   still holds 8 or more unsent WQEs.
//! - `a_qp_rung_while_served_alone_serves_its_new_wqes_in_place`: with no other QP waiting, a
//!   doorbell of the served QP extends its producer index in place; every slot is fetched once.
//! - `a_reset_of_the_served_qp_ends_its_ring_reads`: a RESET of the served QP at every cycle
//!   offset from its doorbell: no WQE read once the command is taken.
//! - `a_qp_that_steps_aside_leaves_the_prefetch_buffer_to_the_next`: with a 64-cycle fetch, a
//!   QP out of READ credits steps aside with fetched beats still in flight; they are dropped
//!   unwritten and the next QP's first fetch is a full burst of 8, 12 cycles after the last READ.
mod harness;
mod tx_scheduler;

use rnic_contract::qp_context as qp;
use rnic_contract::verbs::{send_flags, wr_opcode};
use tx_scheduler::*;

/// Small WRITEs posted several at a time are fetched in bursts of consecutive WQEs (up to 8
/// beats, never across the ring's end or a 4 KiB page), and each WQE is still acted on exactly
/// as the model says, across ring wraps and with the buffer refilled between batches.
#[test]
fn wqes_are_fetched_in_bursts() {
    let mut tb = Tb::new(0x75C4_0006);
    let seed = tb.rng.0;
    let pd = 0x2468;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let mut total = (0usize, 0usize);
    for (qpn, stride, log_size) in [(5u64, 0u64, 4u64), (9, 1, 3), (12, 0, 6), (40, 2, 4)] {
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, stride);
        cfg.log_size = log_size;
        // The ring ends 64 bytes short of a page boundary sometimes: bursts split there.
        if tb.rng.chance(1, 2) {
            cfg.sq_base = (cfg.sq_base & !0xFFF) | (0x1000 - (64 << stride));
        }
        tb.create_qp(qpn, &cfg);
        let mut wqes_here = 0;
        let first_event = tb.events.len();
        for batch in 0..6 {
            // (Never more than the ring holds.)
            let n = tb.rng.range(1, 12).min(1 << log_size);
            let wqes: Vec<Wqe> =
                (0..n).map(|k| small_write(&mut tb.rng, &mrs, 0xB0B0_0000 | (qpn << 12) | (batch << 8) | k)).collect();
            let ctx = format!("QP {qpn} stride {stride} ring {} batch {batch} (seed {seed:#x})", 1 << log_size);
            tb.post_and_check(qpn, &wqes, &ctx);
            tb.retire_all(qpn);
            wqes_here += wqes.len();
        }
        let fetches: Vec<(u64, u64)> = tb.events[first_event..]
            .iter()
            .filter_map(|(_, e)| if let Ev::Fetch { addr, beats } = e { Some((*addr, *beats)) } else { None })
            .collect();
        let wqe_bytes = 64u64 << stride;
        let ring_end = cfg.sq_base + (wqe_bytes << log_size);
        for &(addr, beats) in &fetches {
            assert!(
                addr >= cfg.sq_base && addr + 64 * beats <= ring_end,
                "QP {qpn}: fetch {addr:#x}+{beats} leaves the ring"
            );
            assert_eq!((addr - cfg.sq_base) % wqe_bytes, 0, "QP {qpn}: fetch {addr:#x} not at a WQE slot");
        }
        let fetched_wqes: u64 = fetches.iter().map(|&(_, b)| b * 64 / wqe_bytes).sum();
        assert!(fetched_wqes >= wqes_here as u64, "QP {qpn}: {fetched_wqes} WQEs fetched for {wqes_here}");
        total = (total.0 + fetches.len(), total.1 + wqes_here);
    }
    // One fetch per WQE before the prefetch buffer; now far fewer.
    assert!(total.0 * 2 < total.1, "{} fetches for {} WQEs", total.0, total.1);
}

/// The next WQEs are read while the prefetch buffer still holds some (a fetch appended behind
/// them), so a QP with many WQEs posted never waits a whole DMA read between bursts: 32
/// one-beat WRITEs posted at once cost 4 fetches of 8 consecutive slots, each slot read once,
/// and every fetch after the first is issued before the packet of the last WQE the fetches
/// before it read has gone out.
#[test]
fn the_next_wqes_are_fetched_while_the_buffer_holds_some() {
    let mut tb = Tb::new(0x75C4_0007);
    let qpn = 7;
    let (base, fetches, jobs) = burst_run(&mut tb, 0x2468, qpn, 32, 0xA11E_0000);
    let want: Vec<(u64, u64)> = (0..4).map(|k| (base + 512 * k, 8)).collect();
    assert_eq!(fetches.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(), want, "4 bursts of 8, each slot once");
    for k in 1..4usize {
        assert!(
            fetches[k].0 < jobs[8 * k - 1],
            "fetch {k} at cycle {} only after WQE {}'s packet at {}",
            fetches[k].0,
            8 * k - 1,
            jobs[8 * k - 1]
        );
    }
    tb.retire_all(qpn);
}

/// A QP's second burst is asked for as soon as its first is accepted (the fetch-ahead
/// machine's kick), before any WQE of the first is used, and appends go on while the WQE path
/// works: 40 one-beat WRITEs are fetched as 5 bursts of 8, each slot once, the first two before
/// the first packet, and every later burst while at least 8 fetched WQEs are not yet sent (the
/// 32-beat buffer); the events equal the model's.
#[test]
fn the_second_burst_is_asked_for_before_the_first_is_used() {
    let mut tb = Tb::new(0x75C4_000A);
    let seed = tb.rng.0;
    let qpn = 9;
    let (base, fetches, jobs) = burst_run(&mut tb, 0x2469, qpn, 40, 0xA12E_0000);
    let want: Vec<(u64, u64)> = (0..5).map(|k| (base + 512 * k, 8)).collect();
    assert_eq!(fetches.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(), want, "5 bursts of 8, each slot once");
    assert!(
        fetches[1].0 < jobs[0],
        "the second burst at cycle {} only after the first packet at {} (seed {seed:#x})",
        fetches[1].0,
        jobs[0]
    );
    for (k, f) in fetches.iter().enumerate().skip(2) {
        let sent = jobs.iter().filter(|&&t| t < f.0).count();
        assert!(
            8 * k - sent >= 8,
            "burst {k} asked for at cycle {} with only {} fetched WQEs unsent (seed {seed:#x})",
            f.0,
            8 * k - sent
        );
    }
    tb.retire_all(qpn);
}

/// A QP rung again while it is served, with another QP waiting behind its offer (`db_others`),
/// does not keep that QP waiting until it runs out of work: the scheduler takes its own offer
/// while serving (so the doorbell block can offer the next QP), serves the waiting QP next, and
/// puts itself back into the ready set (`rearm`) when it leaves; its WQEs posted meanwhile come
/// after the other QP's. Before, the served QP's own offer hid the other QP: a READ stream on
/// one QP kept another QP's READs waiting for 50 000 cycles (`rnic perf read --qps 2`).
#[test]
fn a_qp_rung_while_served_lets_a_waiting_qp_go_next() {
    let mut tb = Tb::new(0x75C4_0009);
    let seed = tb.rng.0;
    let pd = 0x1357;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let (a, b) = (7u64, 21u64);
    for q in [a, b] {
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
        cfg.log_size = 6;
        tb.create_qp(q, &cfg);
    }
    let first: Vec<Wqe> = (0..8).map(|k| small_write(&mut tb.rng, &mrs, 0xA000 | k)).collect();
    let mut want = tb.post(a, &first);
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    // QP a is being served: it is rung again, and QP b is rung behind it.
    let again: Vec<Wqe> = (0..8).map(|k| small_write(&mut tb.rng, &mrs, 0xA100 | k)).collect();
    let want_again = tb.post(a, &again);
    let other: Vec<Wqe> = (0..4).map(|k| small_write(&mut tb.rng, &mrs, 0xB000 | k)).collect();
    want.extend(tb.post(b, &other));
    want.extend(want_again);
    let reads_before = tb.db_reads.len();
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(200));
    assert_events(&want, &got, &format!("QP {a}'s first WQEs, then QP {b}'s, then QP {a}'s (seed {seed:#x})"));
    assert!(
        tb.db_reads[reads_before..].iter().any(|&(_, st)| st != 0),
        "QP {a}'s own offer was not taken while it was served: {:?}",
        &tb.db_reads[reads_before..]
    );
    assert!(tb.rearms.iter().any(|&(_, q)| q == a), "QP {a} was not put back into the ready set");
}

/// A QP rung again while it is served, with no other QP waiting, serves the new WQEs in the
/// same visit: its own offer is taken while it is served (not from `Idle`), its producer index
/// extended in place (the QP still goes back into the ready set when it leaves, and is found
/// with nothing left), and the new WQEs' slots are fetched once each, appended behind the
/// first batch's, never read again from scratch; the events equal the model's. Before, the QP
/// ran dry at the first doorbell's producer index, went back through `Idle` and started over
/// with a fresh WQE read (64-byte WRITEs on one QP: 20.7 Mpps, 23.4 with it).
#[test]
fn a_qp_rung_while_served_alone_serves_its_new_wqes_in_place() {
    let mut tb = Tb::new(0x75C4_000B);
    let seed = tb.rng.0;
    let pd = 0x1358;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let a = 11u64;
    let cfg = ring64_qp(&mut tb, a, pd);
    let first: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xC000 | k)).collect();
    let mut want = tb.post(a, &first);
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    let reads_before = tb.db_reads.len();
    let again: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xC100 | k)).collect();
    want.extend(tb.post(a, &again));
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(200));
    assert_events(&want, &got, &format!("QP {a}'s two batches in order (seed {seed:#x})"));
    let reads = &tb.db_reads[reads_before..];
    // (A later read from `Idle` is the QP's return to the ready set, `self_rung`, with nothing left.)
    assert!(reads.first().is_some_and(|&(_, st)| st != 0), "the second doorbell was taken from Idle: {reads:?}");
    let mut slots: Vec<u64> = Vec::new();
    for e in &got {
        if let Ev::Fetch { addr, beats } = e {
            slots.extend((0..*beats).map(|k| (addr - cfg.sq_base) / 64 + k));
        }
    }
    assert_eq!(slots, (0..32).collect::<Vec<_>>(), "each slot fetched once, in order (seed {seed:#x})");
    tb.retire_all(a);
}

/// A RESET of the QP being served, at every cycle offset from its doorbell: once the command is
/// taken (the driver then frees the QP's rings), the engine reads nothing more from the ring,
/// whether the command came while it was loading the QP's context (`LoadQp`: the context it then
/// loads is read again, `cmd_in_load`), serving it, or waiting in `Idle` for an append of the
/// fetch-ahead machine to be issued (`rst_here_r` holds the command back for both machines).
#[test]
fn a_reset_of_the_served_qp_ends_its_ring_reads() {
    for off in 0..48u64 {
        let mut tb = Tb::new(0x75C4_0C00 + off);
        let seed = tb.rng.0;
        let pd = 0x2470;
        let mrs = good_mrs(&mut tb, 2, 2, pd);
        let qpn = 5;
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
        cfg.log_size = 6;
        tb.create_qp(qpn, &cfg);
        let wqes: Vec<Wqe> = (0..40u64).map(|k| small_write(&mut tb.rng, &mrs, 0xD000 | k)).collect();
        tb.post(qpn, &wqes);
        for _ in 0..off {
            tb.step();
        }
        let mut r = [0u8; 64];
        qp::STATE.put(&mut r, 0);
        tb.command(1, qpn, &r);
        let taken = tb.cycle;
        for _ in 0..400 {
            tb.step();
        }
        let late: Vec<(u64, Ev)> =
            tb.events.iter().filter(|(t, e)| *t >= taken && matches!(e, Ev::Fetch { .. })).cloned().collect();
        assert!(
            late.is_empty(),
            "offset {off}: ring read after the RESET was taken at {taken}: {late:?} (seed {seed:#x})"
        );
    }
}

/// A QP that steps aside with fetched WQEs it cannot send yet leaves the prefetch buffer to
/// the next QP: its beats still in flight are dropped as they arrive, never written, so they
/// take no room from the next QP's first fetch. QP a (max_rd_atomic 16) has 56 one-SGE READs
/// posted, fetched ahead while it sends its first 16 (a fetch takes 64 cycles here, as the
/// simulator's PCIe model); then it must wait for responses and steps aside for QP b, whose
/// first fetch is a full burst of 8 WQEs (before: the 2 that its undelivered beats left),
/// asked for 12 cycles after a's last READ (a steps aside as the 17th reaches the buffer's
/// head, `rd_blk_r`, or, with its READs taken by the head check every 4 cycles since stop 39,
/// before the 17th is there, `rd_wait_r`, instead of taking it through its checks first: 19,
/// and 31 with the fast READs but not `rd_wait_r`); every
/// event equals the model's, a's READs resuming as the test retires them. (`rnic perf read
/// --qps 8 --post-list 16`: 19.71 Mpps with the old accounting, 20.34 with this.)
#[test]
fn a_qp_that_steps_aside_leaves_the_prefetch_buffer_to_the_next() {
    let mut tb = Tb::new(0x75C4_000D);
    let seed = tb.rng.0;
    tb.wqe_latency = 64;
    let pd = 0x2470;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let (a, b) = (13u64, 29u64);
    let mut bases = Vec::new();
    for q in [a, b] {
        // (max_rd_atomic 16, `QpCfg::random`'s.)
        bases.push(ring64_qp(&mut tb, q, pd).sq_base);
    }
    let reads: Vec<Wqe> = (0..56)
        .map(|k| {
            let m = tb.rng.pick(&mrs).clone();
            let len = tb.rng.range(1, 64);
            let sge = sge_in(&mut tb.rng, &m, len);
            Wqe {
                wr_id: 0xD000 | k,
                opcode: wr_opcode::RDMA_READ,
                flags: send_flags::SIGNALED,
                imm: 0,
                remote_addr: tb.rng.next_u64(),
                rkey: tb.rng.u32(),
                sges: vec![sge],
                ud: None,
                inline: None,
            }
        })
        .collect();
    let want_a = tb.post(a, &reads);
    // Split a's expected events at each WQE's fetch.
    let starts: Vec<usize> = (0..want_a.len()).filter(|&i| matches!(want_a[i], Ev::Fetch { .. })).collect();
    let part = |r: std::ops::Range<usize>| -> Vec<Ev> {
        want_a[starts[r.start]..*starts.get(r.end).unwrap_or(&want_a.len())].to_vec()
    };
    // b rings once a is being served.
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    let writes: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xE000 | k)).collect();
    let want_b = tb.post(b, &writes);
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(400));
    let want = [part(0..16), want_b].concat();
    assert_events(&want, &got, &format!("a's first 16 READs, then b's WRITEs (seed {seed:#x})"));
    let in_ring = |addr: u64, base: u64| addr >= base && addr < base + 4096;
    let b_first = got
        .iter()
        .find_map(|e| match e {
            Ev::Fetch { addr, beats } if in_ring(*addr, bases[1]) => Some(*beats),
            _ => None,
        })
        .expect("b's WQEs were fetched");
    assert_eq!(b_first, 8, "b's first fetch: a full burst, not what a's dropped beats left (seed {seed:#x})");
    // a steps aside as its 17th READ reaches the head of the buffer (no slot), not after
    // taking it through the checks: b's fetch follows a's last request closely.
    let evs = &tb.events[from..];
    let last_a = evs.iter().filter(|(_, e)| matches!(e, Ev::Job(_))).map(|&(c, _)| c).nth(15).expect("16 READs");
    let b_fetch = evs
        .iter()
        .find_map(|(c, e)| matches!(e, Ev::Fetch { addr, .. } if in_ring(*addr, bases[1])).then_some(*c))
        .expect("b fetched");
    assert!(
        b_fetch <= last_a + 12,
        "a's last READ at cycle {last_a}, b's first fetch only at {b_fetch} (seed {seed:#x})"
    );
    // a's READs go on as their responses come back.
    for (k, r) in [(1, 16..32), (2, 32..48), (3, 48..56)] {
        tb.retire_all(a);
        let got = tb.run_quiet(400);
        assert_events(&part(r), &got, &format!("a's READs, round {k} (seed {seed:#x})"));
    }
    tb.retire_all(a);
    tb.retire_all(b);
}
