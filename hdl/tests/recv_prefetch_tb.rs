//! `RecvWqePrefetch` in Verilator against a model of the RX engine, host memory and the DMA
//! read issuer.
//!
//! - `every_served_wqe_is_the_rings_current_one`: six rings (strides of 1, 2 and 4 beats,
//!   1 to 64 entries, some not page-aligned so bursts meet 4 KiB boundaries) that the host posts
//!   to at random (a reposted slot gets new bytes); the engine asks for the WQE at a ring's
//!   consumer index, mostly the ring it used last, and consumes it or (one time in eight) asks
//!   for it again, as a go-back-N SEND_FIRST does. Random `ar_ready`, DMA latency and gaps
//!   between returned beats; context commands (`flush`) at random times, some of which reset a
//!   ring (indices to 0, every slot rewritten, the stride changed). Checked: every served WQE is
//!   exactly the memory of the requested slot at the time it is served (never a stale copy of a
//!   reposted or rewritten slot), its beats arrive only after `req_ready` and exactly `nb + 1`
//!   of them; every AR reads only posted WQEs of one ring, at most 8 beats, inside one 4 KiB
//!   page; most requests are served without a DMA read.
//! - `a_stream_of_requests_reads_each_wqe_once`: one ring of 64 one-beat WQEs, all posted, the
//!   engine consuming in order: 64 requests cost 8 ARs of 8 beats (the first a miss, the rest
//!   top-ups read ahead), and every request after the first is a hit, accepted in the cycle
//!   after it is presented (the head hit of `Idle`) and served in the cycle after that.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::recv_prefetch::RecvWqePrefetch;
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug)]
struct Ring {
    base: u64,
    /// Beats per WQE minus one: 0, 1 or 3.
    nb: u64,
    log_size: u32,
    ci: u16,
    pi: u16,
}

impl Ring {
    fn size(&self) -> u16 {
        1 << self.log_size
    }
    fn mask(&self) -> u16 {
        self.size() - 1
    }
    fn stride(&self) -> u64 {
        64 * (self.nb + 1)
    }
    fn addr(&self, ci: u16) -> u64 {
        self.base + u64::from(ci & self.mask()) * self.stride()
    }
    fn posted(&self) -> u16 {
        self.pi.wrapping_sub(self.ci)
    }
}

struct Tb {
    dut: Dut,
    rng: Rng,
    mem: HashMap<u64, Vec<u8>>,
    /// Outstanding bursts: (first beat address, beats, cycle the first beat may return).
    dma: VecDeque<(u64, u64, u64)>,
    /// Beats the DMA has returned of the burst at the front.
    sent: u64,
    cycle: u64,
    ars: u64,
    ar_beats: u64,
    hits: u64,
    misses: u64,
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<RecvWqePrefetch>("recv_prefetch").expect("build RecvWqePrefetch");
        dut.reset(3);
        Tb {
            dut,
            rng: Rng::from_env(seed),
            mem: HashMap::new(),
            dma: VecDeque::new(),
            sent: 0,
            cycle: 0,
            ars: 0,
            ar_beats: 0,
            hits: 0,
            misses: 0,
        }
    }

    fn write_slot(&mut self, r: &Ring, ci: u16) {
        let a = r.addr(ci);
        for b in 0..=r.nb {
            let bytes = self.rng.bytes(64);
            self.mem.insert(a + 64 * b, bytes);
        }
    }

    fn beat(&self, addr: u64) -> Vec<u8> {
        self.mem.get(&addr).cloned().unwrap_or_else(|| vec![0; 64])
    }

    /// One clock cycle. `req` is the engine's request; `flush` a context command. Returns
    /// (request accepted, served beat).
    fn step(&mut self, req: Option<&Ring>, flush: bool, rings: &[Ring], fast: bool) -> (bool, Option<Vec<u8>>) {
        let ar_ready = fast || self.rng.chance(3, 4);
        let mut in_beat = None;
        if let Some(&(addr, n, t)) = self.dma.front() {
            if t <= self.cycle && (fast || self.rng.chance(4, 5)) {
                in_beat = Some(self.beat(addr + 64 * self.sent));
                self.sent += 1;
                if self.sent == n {
                    self.dma.pop_front();
                    self.sent = 0;
                }
            }
        }
        let d = &mut self.dut;
        d.set_bit("ar_ready", ar_ready);
        d.set_bit("in_valid", in_beat.is_some());
        d.set_wide("in_data", in_beat.as_deref().unwrap_or(&[0; 64]));
        d.set_bit("flush", flush);
        d.set_bit("req_valid", req.is_some());
        if let Some(r) = req {
            d.set("req_addr", r.addr(r.ci));
            d.set("req_base", r.base);
            d.set("req_ci", u64::from(r.ci));
            d.set("req_pi", u64::from(r.pi));
            d.set("req_mask", u64::from(r.mask()));
            d.set("req_nb", r.nb);
        }
        d.eval();
        let accepted = d.get_bit("req_ready");
        let served = d.get_bit("r_valid").then(|| d.get_wide("r_data"));
        self.hits += u64::from(d.get_bit("hit"));
        self.misses += u64::from(d.get_bit("miss"));
        if d.get_bit("ar_valid") && ar_ready {
            let addr = d.get("ar_addr");
            let beats = d.get("ar_len") + 1;
            assert!(beats <= 8, "a burst of {beats} beats");
            assert_eq!(addr % 64, 0);
            assert_eq!(addr >> 12, (addr + 64 * beats - 1) >> 12, "AR {addr:#x} x {beats} crosses a 4 KiB page");
            // Only posted WQEs of one ring.
            let r = rings
                .iter()
                .find(|r| addr >= r.base && addr < r.base + u64::from(r.size()) * r.stride())
                .unwrap_or_else(|| panic!("AR {addr:#x} outside every ring"));
            assert_eq!(beats % (r.nb + 1), 0, "whole WQEs");
            assert_eq!((addr - r.base) % r.stride(), 0);
            let first = ((addr - r.base) / r.stride()) as u16;
            for k in 0..(beats / (r.nb + 1)) as u16 {
                let slot = first + k;
                assert!(slot < r.size(), "AR {addr:#x} x {beats} wraps past the ring's end");
                let from_ci = slot.wrapping_sub(r.ci & r.mask()) & r.mask();
                assert!(from_ci < r.posted(), "AR reads slot {slot} of a ring with ci {} pi {}", r.ci, r.pi);
            }
            let lat = if fast { 64 } else { self.rng.range(3, 40) };
            self.dma.push_back((addr, beats, self.cycle + lat));
            self.ars += 1;
            self.ar_beats += beats;
        }
        d.tick();
        self.cycle += 1;
        (accepted, served)
    }
}

#[test]
fn every_served_wqe_is_the_rings_current_one() {
    let mut tb = Tb::new(0x8ECF_0001);
    // (ring stride, log2 entries, base offset): every base is aligned to 256 bytes, the largest
    // stride (a WQE is aligned to its size), but not all to 4 KiB.
    let shapes: [(u64, u32, u64); 6] =
        [(0, 6, 0), (0, 0, 0), (1, 3, 0x300), (3, 4, 0x100), (0, 1, 0xF00), (1, 5, 0xE00)];
    let mut rings: Vec<Ring> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(nb, log_size, off))| Ring { base: 0x10_0000 * (i as u64 + 1) + off, nb, log_size, ci: 0, pi: 0 })
        .collect();
    for r in rings.clone() {
        for ci in 0..r.size() {
            tb.write_slot(&r, ci);
        }
    }
    let (mut served, mut retries, mut resets, mut ring_i) = (0u64, 0u64, 0u64, 0usize);
    while served < 4000 {
        // The host posts.
        for _ in 0..2 {
            let i = tb.rng.range(0, rings.len() as u64 - 1) as usize;
            if rings[i].posted() < rings[i].size() && tb.rng.chance(1, 2) {
                let r = rings[i].clone();
                tb.write_slot(&r, r.pi);
                rings[i].pi = r.pi.wrapping_add(1);
            }
        }
        // A context command now and then; one in three resets a ring while no request is out
        // (after the command's cycle: an AR the block issued before it may read the old ring).
        if tb.rng.chance(1, 40) {
            tb.step(None, true, &rings, false);
            if tb.rng.chance(1, 3) {
                // Often the ring the engine is using (whose WQEs the block holds).
                let i = if tb.rng.chance(1, 2) { ring_i } else { tb.rng.range(0, rings.len() as u64 - 1) as usize };
                let nb = *tb.rng.pick(&[0u64, 1, 3]);
                let keep = tb.rng.chance(1, 2);
                let r = &mut rings[i];
                if keep {
                    // Rewritten in place with its indices kept: only the command tells the
                    // block that what it holds of this ring is stale.
                    r.pi = r.ci;
                } else {
                    // The same base, another stride and size that fit the old footprint.
                    let bytes = u64::from(r.size()) * r.stride();
                    r.nb = nb;
                    r.log_size = (bytes / r.stride()).trailing_zeros().min(6);
                    r.ci = 0;
                    r.pi = 0;
                }
                let r = r.clone();
                for ci in 0..r.size() {
                    tb.write_slot(&r, ci);
                }
                resets += 1;
            }
            continue;
        }
        // The engine asks for the WQE at a ring's consumer index, mostly the last ring's.
        if rings[ring_i].posted() == 0 || tb.rng.chance(1, 6) {
            ring_i = tb.rng.range(0, rings.len() as u64 - 1) as usize;
        }
        if rings[ring_i].posted() == 0 {
            tb.step(None, false, &rings, false);
            continue;
        }
        let r = rings[ring_i].clone();
        let mut waited = 0;
        loop {
            // A plain context command may come while a request waits.
            let flush = tb.rng.chance(1, 200);
            let (acc, beat) = tb.step(Some(&r), flush, &rings, false);
            assert!(beat.is_none(), "a beat before the request was accepted");
            if acc {
                break;
            }
            waited += 1;
            assert!(waited < 2000, "request of ring {ring_i} ci {} never accepted", r.ci);
        }
        let addr = r.addr(r.ci);
        let mut got = 0;
        let mut idle = 0;
        while got <= r.nb {
            let (acc, beat) = tb.step(None, false, &rings, false);
            assert!(!acc);
            if let Some(b) = beat {
                assert_eq!(
                    b,
                    tb.beat(addr + 64 * got),
                    "ring {ring_i} ci {} beat {got}: not the slot's current bytes",
                    r.ci
                );
                got += 1;
                idle = 0;
            } else {
                idle += 1;
                assert!(idle < 2000, "WQE beats stopped");
            }
        }
        // Nothing more for this request.
        let (_, extra) = tb.step(None, false, &rings, false);
        assert!(extra.is_none(), "a beat beyond the WQE");
        served += 1;
        if tb.rng.chance(1, 8) {
            retries += 1;
        } else {
            rings[ring_i].ci = r.ci.wrapping_add(1);
        }
    }
    assert!(resets > 10 && retries > 100, "resets {resets}, retries {retries}");
    assert_eq!(tb.hits + tb.misses, served);
    assert!(tb.hits * 2 > served, "hits {} of {served}", tb.hits);
}

#[test]
fn a_stream_of_requests_reads_each_wqe_once() {
    let mut tb = Tb::new(0x8ECF_0002);
    let mut ring = Ring { base: 0x20_0000, nb: 0, log_size: 6, ci: 0, pi: 64 };
    for ci in 0..64 {
        let r = ring.clone();
        tb.write_slot(&r, ci);
    }
    let rings = vec![ring.clone()];
    let mut waits = Vec::new();
    let mut beat_waits = Vec::new();
    for _ in 0..64 {
        let mut cycles = 0;
        loop {
            cycles += 1;
            let (acc, _) = tb.step(Some(&ring), false, &rings, true);
            if acc {
                break;
            }
        }
        waits.push(cycles);
        let mut got = 0;
        let mut after = 0;
        while got == 0 {
            after += 1;
            if let (_, Some(b)) = tb.step(None, false, &rings, true) {
                assert_eq!(b, tb.beat(ring.addr(ring.ci)));
                got += 1;
            }
        }
        beat_waits.push(after);
        // The engine's visit between two SENDs.
        for _ in 0..10 {
            tb.step(None, false, &rings, true);
        }
        ring.ci += 1;
    }
    assert_eq!((tb.ars, tb.ar_beats), (8, 64), "each WQE read once, 8 per burst");
    assert_eq!((tb.misses, tb.hits), (1, 63));
    // A request for the buffer's head WQE is accepted in the cycle after it is presented.
    assert!(waits[1..].iter().all(|&w| w == 2), "cycles to acceptance: {waits:?}");
    // And its beat comes out in the cycle after the acceptance.
    assert!(beat_waits[1..].iter().all(|&w| w == 1), "cycles from acceptance to the beat: {beat_waits:?}");
}

/// A reset (16 cycles, as the simulator's) while the buffer holds prefetched WQEs, then the
/// host rewrites the ring (a new program at the same addresses, as after a vfio-user client
/// leaves): the next request is served the new bytes, not the buffered ones.
#[test]
fn a_reset_empties_the_buffer() {
    let mut tb = Tb::new(0x8ECF_0003);
    let mut ring = Ring { base: 0x30_0000, nb: 0, log_size: 4, ci: 0, pi: 16 };
    for ci in 0..16 {
        let r = ring.clone();
        tb.write_slot(&r, ci);
    }
    let rings = vec![ring.clone()];
    // One WQE served: the rest of its burst (7) and a top-up (8) stay buffered.
    while !tb.step(Some(&ring), false, &rings, true).0 {}
    for _ in 0..200 {
        tb.step(None, false, &rings, true);
    }
    assert!(tb.ar_beats >= 9, "a top-up read ahead ({} beats)", tb.ar_beats);
    tb.dut.reset(16);
    // The new program: indices from 0, every slot rewritten.
    ring.ci = 0;
    for ci in 0..16 {
        let r = ring.clone();
        tb.write_slot(&r, ci);
    }
    while !tb.step(Some(&ring), false, &rings, true).0 {}
    loop {
        if let (_, Some(b)) = tb.step(None, false, &rings, true) {
            assert_eq!(b, tb.beat(ring.addr(0)), "a stale beat after the reset");
            break;
        }
    }
}
