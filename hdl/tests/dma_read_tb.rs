//! `DmaReadIssuer` in Verilator against an AXI4 read-address model.
//!
//! - `payload_bursts_cover_exactly_the_job`: random jobs (any address, length 0..=8191, many
//!   near 4 KiB boundaries) with random `arready`: per job, the ID-0 bursts are 64-byte aligned,
//!   `arsize` 64 bytes, `arlen` <= 63, never cross a 4 KiB boundary, and cover exactly the beats
//!   `[addr & !63, addr + len)` in order, each beat once; a zero-length job issues nothing; the
//!   beats requested and not yet taken (`pay_beat`) stay within the 256-beat window plus one
//!   burst, and reach it.
//! - `wqe_fetches_win_between_bursts`: WQE fetch requests arrive at random times; each is issued
//!   once as `arid` 1, `arlen` 0 at its address; whenever a WQE is waiting and no AR is being
//!   held, the next AR issued is the WQE.
//! - `ar_stays_stable_until_accepted`: AXI4 (A3.2.1): once `arvalid` is high it stays high with
//!   `araddr`/`arlen`/`arid` unchanged until `arready`, even when a WQE request arrives meanwhile.
//! - `atomic_reads_are_single_beats_among_the_rest`: the atomic unit's reads (AXI ID 3) among
//!   payload bursts and WQE fetches: each issued once, in order, one beat, ARs stable.
mod harness;

use harness::{Dut, Port, Rng};
use rnic_hdl::dma_read::DmaReadIssuer;
use std::collections::VecDeque;

struct Pins {
    wqe_valid: Port,
    wqe_addr: Port,
    wqe_ready: Port,
    rj_empty: Port,
    rj_addr: Port,
    rj_len: Port,
    rj_read: Port,
    arvalid: Port,
    arready: Port,
    araddr: Port,
    arlen: Port,
    arid: Port,
    at_valid: Port,
    at_addr: Port,
    at_ready: Port,
    pay_beat: Port,
}

fn dut() -> (Dut, Pins) {
    let mut dut = Dut::build::<DmaReadIssuer>("dma_read").expect("build the DMA read issuer model");
    let p = Pins {
        wqe_valid: dut.port("wqe_valid"),
        wqe_addr: dut.port("wqe_addr"),
        wqe_ready: dut.port("wqe_ready"),
        rj_empty: dut.port("rj_empty"),
        rj_addr: dut.port("rj_addr"),
        rj_len: dut.port("rj_len"),
        rj_read: dut.port("rj_read"),
        arvalid: dut.port("arvalid"),
        arready: dut.port("arready"),
        araddr: dut.port("araddr"),
        arlen: dut.port("arlen"),
        arid: dut.port("arid"),
        at_valid: dut.port("at_valid"),
        at_addr: dut.port("at_addr"),
        at_ready: dut.port("at_ready"),
        pay_beat: dut.port("pay_beat"),
    };
    dut.reset(2);
    (dut, p)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ar {
    addr: u64,
    len: u64,
    id: u64,
}

/// Everything seen on the bus in one run.
#[derive(Default)]
struct Trace {
    /// Accepted ARs in order.
    ars: Vec<Ar>,
    /// Jobs popped, in order.
    popped: Vec<(u64, u64)>,
    /// WQE addresses whose request was accepted (wqe_ready), in order.
    wqe_done: Vec<u64>,
    /// Atomic-read addresses whose request was accepted (at_ready), in order.
    at_done: Vec<u64>,
    /// The most payload beats ever requested and not yet taken.
    max_pay_out: u64,
    /// Violations of "AR stable until accepted" (cycle, before, after).
    unstable: Vec<(u64, Ar, Option<Ar>)>,
    /// Cycles where a WQE was waiting, no AR was held, and the AR presented was not the WQE.
    wqe_passed_over: Vec<(u64, Ar)>,
}

/// Runs `jobs` and `wqes` (address, earliest cycle) through the block with `arready` true with
/// `p_ready` percent.
fn run(
    dut: &mut Dut,
    p: &Pins,
    jobs: &[(u64, u64)],
    wqes: &[(u64, u64)],
    ats: &[(u64, u64)],
    rng: &mut Rng,
    p_ready: u64,
    p_job: u64,
) -> Trace {
    let mut t = Trace::default();
    let mut fifo: VecDeque<(u64, u64)> = VecDeque::new();
    let mut to_push = jobs.iter().copied().collect::<VecDeque<_>>();
    let mut wq: VecDeque<(u64, u64)> = wqes.iter().copied().collect();
    let mut aq: VecDeque<(u64, u64)> = ats.iter().copied().collect();
    let total_beats: u64 = jobs.iter().map(|(a, l)| beats_of(*a, *l)).sum();
    let mut held: Option<Ar> = None;
    let mut cycle = 0u64;
    // Payload beats requested and not yet taken by the assembler (which takes one per cycle
    // with 3/4 probability), and the most ever outstanding.
    let mut pay_out = 0u64;
    loop {
        cycle += 1;
        assert!(
            cycle < 20 * (total_beats + jobs.len() as u64 + wqes.len() as u64 + ats.len() as u64) + 2000,
            "no progress"
        );
        // The job FIFO fills at random.
        if !to_push.is_empty() && rng.chance(p_job, 100) {
            fifo.push_back(to_push.pop_front().unwrap());
        }
        dut.set_bit(p.rj_empty, fifo.is_empty());
        let (ja, jl) = fifo.front().copied().unwrap_or((rng.next_u64(), rng.range(0, 8191)));
        dut.set(p.rj_addr, ja);
        dut.set(p.rj_len, jl);
        let wqe = wq.front().copied().filter(|(_, at)| *at <= cycle);
        dut.set_bit(p.wqe_valid, wqe.is_some());
        dut.set(p.wqe_addr, wqe.map(|w| w.0).unwrap_or(rng.next_u64() & !63));
        // An atomic read is held (as the atomic unit holds it) until taken.
        let at = aq.front().copied().filter(|(_, c)| *c <= cycle);
        dut.set_bit(p.at_valid, at.is_some());
        dut.set(p.at_addr, at.map(|a| a.0).unwrap_or(0));
        let ready = rng.chance(p_ready, 100);
        let beat = pay_out > 0 && rng.chance(3, 4);
        dut.set_bit(p.pay_beat, beat);
        if beat {
            pay_out -= 1;
        }
        dut.set_bit(p.arready, ready);
        dut.eval();

        let ar =
            dut.get_bit(p.arvalid).then(|| Ar { addr: dut.get(p.araddr), len: dut.get(p.arlen), id: dut.get(p.arid) });
        if let Some(h) = held {
            if ar != Some(h) {
                t.unstable.push((cycle, h, ar));
            }
        } else if let (Some((wa, _)), Some(a)) = (wqe, ar) {
            if a.id != 1 || a.addr != wa {
                t.wqe_passed_over.push((cycle, a));
            }
        }
        if dut.get_bit(p.rj_read) {
            assert!(!fifo.is_empty(), "cycle {cycle}: rj_read while rj_empty");
            t.popped.push(fifo.pop_front().unwrap());
        }
        if dut.get_bit(p.wqe_ready) {
            let (wa, _) = wqe.unwrap_or_else(|| panic!("cycle {cycle}: wqe_ready without wqe_valid"));
            assert!(ready, "cycle {cycle}: wqe_ready without arready");
            assert_eq!(ar, Some(Ar { addr: wa, len: 0, id: 1 }), "cycle {cycle}: AR of the WQE fetch");
            t.wqe_done.push(wa);
            wq.pop_front();
        }
        if dut.get_bit(p.at_ready) {
            let (aa, _) = at.unwrap_or_else(|| panic!("cycle {cycle}: at_ready without at_valid"));
            assert!(ready, "cycle {cycle}: at_ready without arready");
            assert_eq!(ar, Some(Ar { addr: aa, len: 0, id: 3 }), "cycle {cycle}: AR of the atomic read");
            t.at_done.push(aa);
            aq.pop_front();
        }
        held = None;
        if let Some(a) = ar {
            if ready {
                if a.id == 0 {
                    pay_out += a.len + 1;
                    t.max_pay_out = t.max_pay_out.max(pay_out);
                }
                t.ars.push(a);
            } else {
                held = Some(a);
            }
        }
        dut.tick();
        let beats: u64 = t.ars.iter().filter(|a| a.id == 0).map(|a| a.len + 1).sum();
        if to_push.is_empty()
            && fifo.is_empty()
            && wq.is_empty()
            && aq.is_empty()
            && beats >= total_beats
            && held.is_none()
        {
            break;
        }
    }
    // Idle: nothing more may be requested.
    dut.set_bit(p.rj_empty, true);
    dut.set_bit(p.wqe_valid, false);
    dut.set_bit(p.at_valid, false);
    dut.set_bit(p.arready, true);
    for _ in 0..5 {
        dut.eval();
        assert!(
            !dut.get_bit(p.arvalid),
            "an AR after all jobs were covered: {:#x} len {}",
            dut.get(p.araddr),
            dut.get(p.arlen)
        );
        dut.tick();
    }
    t
}

fn beats_of(addr: u64, len: u64) -> u64 {
    if len == 0 {
        0
    } else {
        ((addr + len).div_ceil(64)) - addr / 64
    }
}

fn random_jobs(rng: &mut Rng, n: usize) -> Vec<(u64, u64)> {
    (0..n)
        .map(|_| {
            let len = match rng.range(0, 6) {
                0 => 0,
                1 => rng.range(1, 64),
                2 => *rng.pick(&[4096u64, 8191, 4095, 4097, 64, 128]),
                _ => rng.range(1, 8191),
            };
            let base = rng.next_u64() & 0x0000_FFFF_FFFF_F000;
            let addr = match rng.range(0, 3) {
                // Just below a 4 KiB boundary.
                0 => base + 4096 - rng.range(1, 200),
                1 => base + 64 * rng.range(0, 63),
                _ => base + rng.range(0, 4095),
            };
            (addr, len)
        })
        .collect()
}

/// Checks that the ID-0 bursts are legal and cover every job's beats exactly, in order.
fn check_coverage(t: &Trace, jobs: &[(u64, u64)]) {
    assert_eq!(t.popped, jobs, "jobs popped from the FIFO");
    let mut expected = Vec::new();
    for (a, l) in jobs {
        let first = a & !63;
        for k in 0..beats_of(*a, *l) {
            expected.push((first + 64 * k, *a, *l));
        }
    }
    let mut got = Vec::new();
    for ar in t.ars.iter().filter(|a| a.id == 0) {
        assert_eq!(ar.addr % 64, 0, "unaligned burst {ar:x?}");
        assert!(ar.len <= 63, "arlen {} > 63", ar.len);
        let end = ar.addr + 64 * (ar.len + 1);
        assert!(
            ar.addr / 4096 == (end - 1) / 4096,
            "burst {:#x}+{} beats crosses a 4 KiB boundary",
            ar.addr,
            ar.len + 1
        );
        for k in 0..=ar.len {
            got.push(ar.addr + 64 * k);
        }
    }
    assert_eq!(got.len(), expected.len(), "beats requested");
    for (i, (g, (e, a, l))) in got.iter().zip(&expected).enumerate() {
        assert_eq!(*g, *e, "beat {i}: requested {g:#x}, expected {e:#x} (job addr {a:#x} len {l})");
    }
    // Each burst is as long as it can be: a boundary or the job's end ends it.
    for ar in t.ars.iter().filter(|a| a.id == 0 && a.len < 63) {
        let end = ar.addr + 64 * (ar.len + 1);
        let job_end = expected.iter().any(|(b, a, l)| *b == end - 64 && (a + l).div_ceil(64) * 64 == end);
        assert!(end % 4096 == 0 || job_end, "burst {:#x}+{} stops early", ar.addr, ar.len + 1);
    }
}

#[test]
fn payload_bursts_cover_exactly_the_job() {
    // (Also: never more than the window (256 beats) plus one burst outstanding.)
    let (mut dut, p) = dut();
    for (round, (pr, pj)) in [(100, 100), (50, 70), (20, 30)].into_iter().enumerate() {
        let mut rng = Rng::from_env(0xD3A0 + round as u64);
        let jobs = random_jobs(&mut rng, 400);
        let t = run(&mut dut, &p, &jobs, &[], &[], &mut rng, pr, pj);
        check_coverage(&t, &jobs);
        assert!(t.ars.iter().all(|a| a.id == 0));
        assert!(
            t.max_pay_out <= 256 + 64 && (round > 0 || t.max_pay_out > 192),
            "round {round}: at most {} payload beats outstanding (window 256, one burst over)",
            t.max_pay_out
        );
    }
}

#[test]
fn wqe_fetches_win_between_bursts() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0xD3A1);
    let jobs = random_jobs(&mut rng, 200);
    let mut wqes = Vec::new();
    let mut at = 0;
    for _ in 0..300 {
        at += rng.range(0, 40);
        wqes.push((rng.next_u64() & 0x0000_FFFF_FFFF_FFC0, at));
    }
    // arready always high: no AR is ever held, so this checks priority alone.
    let t = run(&mut dut, &p, &jobs, &wqes, &[], &mut rng, 100, 60);
    check_coverage(&t, &jobs);
    let want: Vec<u64> = wqes.iter().map(|w| w.0).collect();
    assert_eq!(t.wqe_done, want, "WQE fetches issued");
    let wqe_ars: Vec<u64> = t.ars.iter().filter(|a| a.id == 1).map(|a| a.addr).collect();
    assert_eq!(wqe_ars, want);
    assert!(t.ars.iter().filter(|a| a.id == 1).all(|a| a.len == 0));
    assert!(
        t.wqe_passed_over.is_empty(),
        "a waiting WQE lost to a payload burst: {:x?}",
        &t.wqe_passed_over[..t.wqe_passed_over.len().min(5)]
    );
}

#[test]
fn ar_stays_stable_until_accepted() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0xD3A2);
    let jobs = random_jobs(&mut rng, 200);
    let mut wqes = Vec::new();
    let mut at = 0;
    for _ in 0..300 {
        at += rng.range(0, 40);
        wqes.push((rng.next_u64() & 0x0000_FFFF_FFFF_FFC0, at));
    }
    let t = run(&mut dut, &p, &jobs, &wqes, &[], &mut rng, 40, 60);
    assert!(
        t.unstable.is_empty(),
        "{} ARs changed before arready, first (cycle, held, then): {:x?}",
        t.unstable.len(),
        t.unstable[0]
    );
    check_coverage(&t, &jobs);
    let want: Vec<u64> = wqes.iter().map(|w| w.0).collect();
    assert_eq!(t.wqe_done, want, "WQE fetches issued");
    assert!(
        t.wqe_passed_over.is_empty(),
        "a waiting WQE lost to a payload burst: {:x?}",
        &t.wqe_passed_over[..t.wqe_passed_over.len().min(5)]
    );
}

/// Atomic reads (AXI ID 3, one beat) among payload bursts and WQE fetches, with `arready`
/// low 60 % of the time: each is issued once, in order, at its address; no AR changes before
/// it is accepted; payloads and WQE fetches are still complete.
#[test]
fn atomic_reads_are_single_beats_among_the_rest() {
    let (mut dut, p) = dut();
    let mut rng = Rng::from_env(0xD3A3);
    let jobs = random_jobs(&mut rng, 150);
    let (mut wqes, mut ats) = (Vec::new(), Vec::new());
    let (mut at_w, mut at_a) = (0, 0);
    for _ in 0..200 {
        at_w += rng.range(0, 50);
        wqes.push((rng.next_u64() & 0x0000_FFFF_FFFF_FFC0, at_w));
        at_a += rng.range(0, 50);
        ats.push((rng.next_u64() & 0x0000_FFFF_FFFF_FFC0, at_a));
    }
    let t = run(&mut dut, &p, &jobs, &wqes, &ats, &mut rng, 40, 60);
    assert!(t.unstable.is_empty(), "ARs changed before arready: {:x?}", &t.unstable[..t.unstable.len().min(3)]);
    check_coverage(&t, &jobs);
    let want: Vec<u64> = ats.iter().map(|a| a.0).collect();
    assert_eq!(t.at_done, want, "atomic reads issued");
    let at_ars: Vec<Ar> = t.ars.iter().filter(|a| a.id == 3).copied().collect();
    assert_eq!(at_ars.iter().map(|a| a.addr).collect::<Vec<_>>(), want);
    assert!(at_ars.iter().all(|a| a.len == 0), "an atomic read is one beat");
    assert_eq!(t.wqe_done, wqes.iter().map(|w| w.0).collect::<Vec<_>>(), "WQE fetches issued");
}
