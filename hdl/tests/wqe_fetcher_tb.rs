//! `WqeFetcher` (the requester's WQE prefetch buffer, split out of `TxScheduler`) in Verilator,
//! driven through its ports the way the scheduler drives it, against a model of host memory and
//! the DMA read issuer (AXI ID 1: bursts answered in order after a random latency, with random
//! `ar_ready` and random gaps between beats).
//!
//! A model of what the block promises runs along every cycle of every test (`Bench`), from the
//! docstrings of `rnic_hdl::wqe_fetcher`: every request reads whole WQEs from the fetch's
//! first WQE on (`ci` for a fresh fetch, `next_ci` for an append), only posted ones still in
//! their slots, at most 8 beats, inside one 4 KiB page and the ring, and exactly as many WQEs as
//! the least of the limits (WQEs posted, slots to the ring's end, WQEs to the page's end,
//! `64 - in_flight`, the buffer's room over the beats asked for and not taken, 8 beats), from
//! `pi` and `in_flight` in the cycle it is sized and the room as it is saturated (exact while
//! the model knows how many discarded beats the buffer holds, else within the bounds); a fresh
//! request 4 cycles after its `size_limits`, an append's 7 after `append` (8 after the fresh
//! fetch's acceptance when the fetch-ahead machine starts itself); `size_zero` exactly when
//! there was no room; `ahead_idle` low from an append to the cycle after its acceptance;
//! `head_ok`, `head_qpn`, `head_ci` and `next_ci` as the fetches, takes, discards and
//! `cmd_fire` set them; every beat at the head (`beat_ok`) is the next beat of the current
//! fetches, in order, with its own `r_err` as `beat_err`; no beat of a discarded fetch is ever
//! shown, the held ones leave as `drop_due`, the awaited ones are dropped as they arrive; the
//! beats asked for and not taken never exceed the 32-beat buffer. The bench and the
//! scheduler's model are in `wqe_fetcher/mod.rs`.
//!
//! - `a_scheduler_model_takes_every_posted_wqe_in_order`: for each SQ stride (WQEs of 64, 128,
//!   256 and 512 bytes, the last read 5 beats of 8), four QPs with rings of 1..64 entries at bases
//!   that are not 4 KiB aligned (often a few WQEs before a page's end), 16-bit indices near
//!   their wrap, the host posting in bursts and lulls and `in_flight` wandering over 0..63. A
//!   model scheduler follows `TxScheduler`'s protocol (`CheckSq` registers the checks;
//!   `NextWqe` takes the head WQE, appending whenever allowed, or discards and sizes a fresh
//!   fetch in four steps, again while `size_zero`, then waits in `FetchWqe`; one-beat WQEs
//!   taken in `NextWqe`; its takes as the intents `pop_wait` / `pop_next` / `last_slot`,
//!   also raised with no beat at the head, where nothing may be taken), switches
//!   QPs with beats of the old fetches in flight, resets rings behind `cmd_fire` (a new
//!   epoch of bytes at the same indices) and fires plain context commands at random. Every beat
//!   is 64 bytes that encode (QP, epoch, WQE index, beat): each WQE taken must be the ring's WQE
//!   `ci`, beat by beat. ~3000 WQEs per stride; most must come from the buffer without a fresh
//!   fetch, and every limit must have bound some burst.
//! - `r_err_travels_with_its_beat`: bursts with one read error at each beat position (64- and
//!   256-byte WQEs): the error comes out as `beat_err` with that beat only; then the model
//!   scheduler with one beat in three in error.
//! - `burst_sizing_obeys_every_limit`: fresh fetches, the fetch-ahead machine's own append and
//!   the scheduler's appends with each limit binding alone, and expected `ar_addr`/`ar_len`
//!   worked out by hand (a stride-0 ring at 0x1000 + 0xFC0 from ci 0 reads one WQE: the page
//!   ends after it): page ends at each stride, posted WQEs, the ring's end (across the 16-bit
//!   index wrap, a ring of one), the send window (also `in_flight` rising between the
//!   append's start and its sizing), 8 beats, no self-append at 40 in flight, and the buffer's
//!   room after a discard while it holds 20..32 beats (none left: `size_zero` and sizing again
//!   as the held beats leave); a discard while 16 beats are in flight leaves the next fetch
//!   its whole room.
mod harness;
mod wqe_fetcher;

use rnic_hdl::wqe_fetcher::BUFFER_BEATS;
use wqe_fetcher::*;

#[test]
fn a_scheduler_model_takes_every_posted_wqe_in_order() {
    let mut binds = [0u64; 6];
    // Each stride with 4 QPs, leaving a QP after one WQE in 24; then 8 QPs (64-byte WQEs, a
    // ring reset may bring any stride) leaving after one WQE in 3, which discards often with
    // beats in flight.
    for (stride, qps, switch, wqes) in
        [(0, 4, 24, 4000), (1, 4, 24, 4000), (2, 4, 24, 4000), (3, 4, 24, 4000), (0, 8, 3, 2500)]
    {
        let s = scheduler_model(&Cfg {
            seed: 0x3F7C_0100 + stride + qps as u64,
            stride,
            wqes,
            qps,
            err: (1, 64),
            switch: (1, switch),
        });
        let what = format!("stride {stride}, {qps} QPs");
        if switch > 3 {
            // Most WQEs come from the buffer: appended while earlier ones were taken.
            assert!(s.fresh * 3 < s.takes, "{what}: {} fresh fetches for {} WQEs", s.fresh, s.takes);
            assert!(s.appends > 100 && s.kicks > 50, "{what}: {} appends, {} self-appends", s.appends, s.kicks);
        } else {
            assert!(s.discards_in_flight >= 100, "{what}: {} discards with beats in flight", s.discards_in_flight);
        }
        assert!(
            s.discards_in_flight >= 10 && s.dropped_in > 0 && s.drops > 0,
            "{what}: {} discards with beats in flight, {} beats dropped as they came, {} popped",
            s.discards_in_flight,
            s.dropped_in,
            s.drops
        );
        assert!(s.switches > 20 && s.resets > 5 && s.cmd_fires > s.resets, "{what}: {s:?}");
        assert!(s.errs > 0, "{what}: no read error");
        assert!(s.exact * 2 > s.requests, "{what}: few exact sizings: {s:?}");
        for (i, v) in s.binds.iter().enumerate() {
            binds[i] += v;
        }
    }
    for (i, name) in LIMIT_NAMES.iter().enumerate() {
        assert!(binds[i] > 0, "no burst limited by the {name}: {binds:?}");
    }
}

#[test]
fn r_err_travels_with_its_beat() {
    let mut b = Bench::new(0x3F7C_0200, FAST_DMA);
    for (i, stride) in [0u64, 2].into_iter().enumerate() {
        // 40 in flight: no self-append; each burst is 8 beats of one fresh fetch.
        let g = Geom { base: 0x10_0000 * (i as u64 + 1), stride, log_size: 6 };
        b.qps.push(Qp::new(7 + i as u64, i as u32, g, 0, 64, APPEND_BELOW));
        let mut c = b.regs(i);
        b.idle(&c, 2);
        for e in 0..8 {
            b.err_plan = (0..8).map(|k| k == e).collect();
            let (ar, _) = b.fresh_fetch(&c);
            assert_eq!(ar.beats, 8);
            let got = b.take_wqes(&mut c, 8 / g.bpw());
            assert_eq!(got.len(), 8);
            for (k, (_, err)) in got.iter().enumerate() {
                assert_eq!(*err, k == e, "stride {stride}: read error on beat {e}, beat_err on beat {k}: {err}");
            }
        }
        b.check_empty(&c);
    }
    // The model scheduler with one beat in three in error (checked every cycle by the bench).
    let s = scheduler_model(&Cfg { seed: 0x3F7C_0201, stride: 1, wqes: 500, qps: 2, err: (1, 3), switch: (1, 16) });
    assert!(s.errs > s.pops / 5 && s.errs < s.pops / 2, "{} errors in {} beats", s.errs, s.pops);
}

#[test]
fn burst_sizing_obeys_every_limit() {
    #[rustfmt::skip]
    let cases = [
        Case { what: "page end: 64-byte WQEs from 0x1FC0", stride: 0, log_size: 6, base: 0x1FC0, ci: 0, posted: 64, in_flight: 0, addr: 0x1FC0, beats: 1 },
        Case { what: "page end: 4 WQEs before it", stride: 0, log_size: 6, base: 0x2F00, ci: 0, posted: 64, in_flight: 0, addr: 0x2F00, beats: 4 },
        Case { what: "page end mid-ring: 128-byte WQE 13 at 0x3E80", stride: 1, log_size: 5, base: 0x3800, ci: 13, posted: 32, in_flight: 0, addr: 0x3E80, beats: 6 },
        Case { what: "page end: one 256-byte WQE", stride: 2, log_size: 4, base: 0x4F00, ci: 0, posted: 16, in_flight: 0, addr: 0x4F00, beats: 4 },
        Case { what: "page end: a 512-byte WQE, 5 beats", stride: 3, log_size: 3, base: 0x5E00, ci: 0, posted: 8, in_flight: 0, addr: 0x5E00, beats: 5 },
        Case { what: "posted: 3", stride: 0, log_size: 6, base: 0x6000, ci: 10, posted: 3, in_flight: 0, addr: 0x6280, beats: 3 },
        Case { what: "posted: one 128-byte WQE at slot 36", stride: 1, log_size: 6, base: 0x8000, ci: 100, posted: 1, in_flight: 0, addr: 0x9200, beats: 2 },
        Case { what: "ring end across the index wrap: ci 0xFFFE, slot 6 of 8", stride: 0, log_size: 3, base: 0xA000, ci: 0xFFFE, posted: 5, in_flight: 0, addr: 0xA180, beats: 2 },
        Case { what: "ring end: slot 2 of 4", stride: 0, log_size: 2, base: 0xB100, ci: 6, posted: 4, in_flight: 0, addr: 0xB180, beats: 2 },
        Case { what: "a ring of one", stride: 0, log_size: 0, base: 0xC040, ci: 7, posted: 1, in_flight: 0, addr: 0xC040, beats: 1 },
        Case { what: "ring end: the last 256-byte slot", stride: 2, log_size: 3, base: 0xD000, ci: 7, posted: 8, in_flight: 0, addr: 0xD700, beats: 4 },
        Case { what: "send window: 61 in flight", stride: 0, log_size: 6, base: 0xE000, ci: 0, posted: 64, in_flight: 61, addr: 0xE000, beats: 3 },
        Case { what: "send window: 63 in flight", stride: 0, log_size: 6, base: 0xE000, ci: 0, posted: 64, in_flight: 63, addr: 0xE000, beats: 1 },
        Case { what: "send window: 62 in flight, 128-byte WQEs", stride: 1, log_size: 6, base: 0xF000, ci: 0, posted: 64, in_flight: 62, addr: 0xF000, beats: 4 },
        Case { what: "8 beats: 8 WQEs of 64 bytes", stride: 0, log_size: 6, base: 0x1_0000, ci: 0, posted: 64, in_flight: 0, addr: 0x1_0000, beats: 8 },
        Case { what: "8 beats: 4 WQEs of 128 bytes", stride: 1, log_size: 6, base: 0x1_0000, ci: 0, posted: 64, in_flight: 0, addr: 0x1_0000, beats: 8 },
        Case { what: "8 beats: 2 WQEs of 256 bytes", stride: 2, log_size: 6, base: 0x1_0000, ci: 0, posted: 64, in_flight: 0, addr: 0x1_0000, beats: 8 },
        Case { what: "a 512-byte WQE alone, its first 5 beats", stride: 3, log_size: 6, base: 0x1_0000, ci: 0, posted: 64, in_flight: 0, addr: 0x1_0000, beats: 5 },
    ];
    for (i, case) in cases.iter().enumerate() {
        let mut b = Bench::new(0x3F7C_0300 + i as u64, FAST_DMA);
        let g = Geom { base: case.base, stride: case.stride, log_size: case.log_size };
        // 40 or more in flight: the fetch-ahead machine stays idle (the window, 24, binds none).
        b.qps.push(Qp::new(3, 0, g, case.ci, case.posted, case.in_flight.max(APPEND_BELOW)));
        let mut c = b.regs(0);
        b.idle(&c, 3);
        let (ar, _) = b.fresh_fetch(&c);
        assert_eq!((ar.addr, ar.beats), (case.addr, case.beats), "{}", case.what);
        b.settle(&c);
        assert_eq!(b.ars.len(), 1, "{}: no append at 40 in flight", case.what);
        let k = case.beats / g.bpw();
        b.take_wqes(&mut c, k);
        b.check_empty(&c);
    }

    // The fetch-ahead machine: a fresh fetch of 2 (page end), its own append of 8 from the
    // next page 8 cycles after the acceptance, then the scheduler's: 8, and the last 2 posted.
    let mut b = Bench::new(0x3F7C_0320, FAST_DMA);
    let g = Geom { base: 0x2_0F80, stride: 0, log_size: 6 };
    b.qps.push(Qp::new(4, 0, g, 0, 20, 0));
    let mut c = b.regs(0);
    b.idle(&c, 3);
    b.fresh_fetch(&c);
    b.settle(&c);
    while b.try_append(&c) {
        b.settle(&c);
    }
    let got: Vec<(u64, u64, bool)> = b.ars.iter().map(|a| (a.addr, a.beats, a.fresh)).collect();
    assert_eq!(got, [(0x2_0F80, 2, true), (0x2_1000, 8, false), (0x2_1200, 8, false), (0x2_1400, 2, false)]);
    assert_eq!(b.ars[1].cycle - b.ars[0].cycle, 8, "the self-append's request 8 cycles after the fetch's acceptance");
    b.take_wqes(&mut c, 20);
    // 9 more posted: appended from WQE 20 (slot 20, 0x2_1480), 8 at most.
    for _ in 0..9 {
        b.qps[0].post();
    }
    c.pi = b.qps[0].pi;
    b.idle(&c, 2);
    assert!(b.try_append(&c));
    b.settle(&c);
    assert_eq!((b.ars[4].addr, b.ars[4].beats), (0x2_1480, 8));
    b.take_wqes(&mut c, 8);
    b.check_empty(&c);

    // No self-append at 40 in flight; at 39 one, whose window is read as it is sized: 61 in
    // flight by then leaves 3.
    for (in_flight_r, later, want) in
        [(40u64, 40u64, None), (39, 39, Some((0x3_0200, 8))), (39, 61, Some((0x3_0200, 3)))]
    {
        let mut b = Bench::new(0x3F7C_0330, FAST_DMA);
        let g = Geom { base: 0x3_0000, stride: 0, log_size: 6 };
        b.qps.push(Qp::new(5, 0, g, 0, 64, in_flight_r));
        let c = b.regs(0);
        b.idle(&c, 3);
        b.fresh_fetch(&c);
        let mut c2 = c.clone();
        c2.in_flight = later;
        b.step(&c2, |_, _| {});
        c2.in_flight_r = later;
        b.settle(&c2);
        let got = b.ars.get(1).map(|a| (a.addr, a.beats));
        assert_eq!(got, want, "{in_flight_r} in flight at the acceptance, {later} after");
    }

    // The buffer's room: QP A's 32 beats (a fresh fetch, its own append, two of the
    // scheduler's) all arrived, `20..32` of them held as the scheduler switches to QP B. Its
    // fresh fetch has the room the held beats leave as they are popped (`drop_due`) when it is
    // saturated; none: `size_zero`, and sized again.
    for (held, stride_b) in [(32u64, 0u64), (32, 1), (28, 0), (32, 3), (30, 2), (20, 0)] {
        let mut b = Bench::new(0x3F7C_0340, FAST_DMA);
        b.qps.push(Qp::new(6, 0, Geom { base: 0x5_0000, stride: 0, log_size: 6 }, 0, 64, 0));
        b.qps.push(Qp::new(9, 1, Geom { base: 0x6_0000, stride: stride_b, log_size: 6 }, 0, 64, 45));
        let mut a = b.regs(0);
        b.idle(&a, 3);
        b.fresh_fetch(&a);
        b.settle(&a);
        while b.try_append(&a) {
            b.settle(&a);
        }
        let asked: u64 = b.ars.iter().map(|r| r.beats).sum();
        assert_eq!(asked, 32, "A's fetches fill the buffer: {:?}", b.ars);
        b.take_wqes(&mut a, 32 - held);
        b.settle(&a);
        let cb = b.regs(1);
        b.idle(&cb, 3);
        let drops0 = b.st.drops;
        let sat0 = b.saturates.len();
        let (ar, rounds) = b.fresh_fetch(&cb);
        // From first principles: the room is what the held beats not yet popped leave.
        let bpw = cb.g.bpw();
        let room_at = |s: u64| {
            let popped = b.drop_cycles[drops0 as usize..].iter().filter(|&&d| d < s).count() as u64;
            (BUFFER_BEATS - (held - popped)) / bpw
        };
        let sats = &b.saturates[sat0..];
        assert_eq!(sats.len(), rounds);
        for &s in &sats[..rounds - 1] {
            assert_eq!(room_at(s), 0, "held {held}, stride {stride_b}: size_zero with room");
        }
        let k = room_at(sats[rounds - 1]).min(8 / bpw);
        assert_eq!((ar.addr, ar.beats), (0x6_0000, k * bpw), "held {held}, stride {stride_b}");
        if held >= 28 && bpw < 5 {
            assert!(k < 8 / bpw, "held {held}, stride {stride_b}: the room binds ({rounds} rounds)");
        }
        if (held, stride_b) == (32, 3) || (held, stride_b) == (30, 2) {
            assert!(rounds > 1, "held {held}, stride {stride_b}: no room at the first sizing");
        }
        let mut cb = cb;
        b.settle(&cb);
        assert_eq!(b.st.drops - drops0, held, "every held beat of A popped as drop_due");
        b.take_wqes(&mut cb, k);
        b.check_empty(&cb);
    }

    // A discard with A's 16 beats still in flight: they are dropped as they come, and take no
    // room from B's first fetch (8 beats) or its self-append.
    let mut b = Bench::new(0x3F7C_0350, DmaCfg { lat: (30, 30), ..FAST_DMA });
    b.qps.push(Qp::new(6, 0, Geom { base: 0x5_0000, stride: 0, log_size: 6 }, 0, 64, 0));
    b.qps.push(Qp::new(9, 1, Geom { base: 0x6_0000, stride: 0, log_size: 6 }, 0, 64, 0));
    let a = b.regs(0);
    b.idle(&a, 3);
    b.fresh_fetch(&a);
    while b.ah != Ah::Idle || b.kick_at.is_some() {
        b.idle(&a, 1);
    }
    assert_eq!(b.ars.len(), 2);
    let mut cb = b.regs(1);
    b.idle(&cb, 3);
    assert!(b.dma.len() == 2 && b.dma[0].sent == 0, "A's beats still in flight at the discard");
    b.fresh_fetch(&cb);
    b.settle(&cb);
    let got: Vec<(u64, u64)> = b.ars[2..].iter().map(|a| (a.addr, a.beats)).collect();
    assert_eq!(got, [(0x6_0000, 8), (0x6_0200, 8)]);
    assert_eq!((b.st.dropped_in, b.st.drops), (16, 0), "A's beats dropped as they came");
    b.take_wqes(&mut cb, 16);
    b.check_empty(&cb);
}
