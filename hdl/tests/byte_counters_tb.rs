//! `ByteCounters` in Verilator against a model: the 64-bit TX and RX byte totals of the BAR0
//! counters (`rnic_contract::regs::counter::TX_BYTES_LO`, `RX_BYTES_LO`).
//!
//! - `every_beat_is_counted_at_the_stated_latency`: random beats on both sides (TX: 1..=64
//!   bytes a beat, sometimes none; RX: a `tkeep` prefix of 1..=64 bytes, or any mask, counted by
//!   popcount); every cycle, `bytes` holds the TX total of the beats up to 2 cycles before and
//!   the RX total of those up to 4 cycles before, as the module's docstring states.
//! - `a_reset_clears_the_totals_and_counts_nothing_presented_during_it`: beats keep coming
//!   while `reset` is high; afterwards the totals hold only the beats presented after it.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::byte_counters::ByteCounters;

/// Cycles from a beat to its bytes in the totals (the docstring's pipeline depths).
const TX_LATENCY: usize = 2;
const RX_LATENCY: usize = 4;

struct Tb {
    dut: Dut,
    rng: Rng,
}

/// One cycle's inputs: TX bytes accepted (0: none), RX `tkeep` (None: no beat).
#[derive(Clone, Copy)]
struct Beat {
    tx: u64,
    rx: Option<u64>,
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<ByteCounters>("byte_counters").expect("build ByteCounters");
        dut.reset(2);
        Tb { dut, rng: Rng::from_env(seed) }
    }

    fn beat(&mut self) -> Beat {
        let tx = if self.rng.chance(3, 4) { self.rng.range(1, 64) } else { 0 };
        let rx = if self.rng.chance(3, 4) {
            Some(if self.rng.chance(3, 4) {
                let n = self.rng.range(1, 64);
                if n == 64 {
                    u64::MAX
                } else {
                    (1u64 << n) - 1
                }
            } else {
                self.rng.next_u64()
            })
        } else {
            None
        };
        Beat { tx, rx }
    }

    /// Presents `b` for one cycle; returns `bytes` as (TX, RX) after the clock edge.
    fn cycle(&mut self, b: Beat) -> (u64, u64) {
        let d = &mut self.dut;
        d.set_bit("tx_fire", b.tx != 0);
        d.set("tx_count", b.tx);
        d.set_bit("rx_valid", b.rx.is_some());
        d.set("rx_keep", b.rx.unwrap_or(u64::MAX));
        d.eval();
        d.tick();
        d.eval();
        let w = d.get_wide("bytes");
        (u64::from_le_bytes(w[..8].try_into().unwrap()), u64::from_le_bytes(w[8..16].try_into().unwrap()))
    }
}

/// Totals after beats `0..=i` (index `i + 1`), with 0 before any.
fn running(beats: &[Beat]) -> (Vec<u64>, Vec<u64>) {
    let (mut tx, mut rx) = (vec![0u64], vec![0u64]);
    for b in beats {
        tx.push(tx.last().unwrap() + b.tx);
        rx.push(rx.last().unwrap() + b.rx.map_or(0, |k| u64::from(k.count_ones())));
    }
    (tx, rx)
}

#[test]
fn every_beat_is_counted_at_the_stated_latency() {
    let mut tb = Tb::new(0xB7E5_0001);
    let mut beats = Vec::new();
    for c in 0..20_000usize {
        let b = tb.beat();
        beats.push(b);
        let got = tb.cycle(b);
        let (tx, rx) = running(&beats[..]);
        // After the edge of cycle `c`, the beats of cycles up to `c + 1 - latency` are in.
        let want = (tx[(c + 2).saturating_sub(TX_LATENCY)], rx[(c + 2).saturating_sub(RX_LATENCY)]);
        assert_eq!(got, want, "cycle {c}: (TX, RX) bytes");
    }
    let (tx, rx) = running(&beats);
    assert!(*tx.last().unwrap() > 300_000 && *rx.last().unwrap() > 300_000);
}

#[test]
fn a_reset_clears_the_totals_and_counts_nothing_presented_during_it() {
    let mut tb = Tb::new(0xB7E5_0002);
    for round in 0..20 {
        for _ in 0..tb.rng.range(0, 50) {
            let b = tb.beat();
            tb.cycle(b);
        }
        // Reset for 1..4 cycles with beats still coming.
        tb.dut.set_bit("reset", true);
        for _ in 0..tb.rng.range(1, 4) {
            let b = tb.beat();
            tb.cycle(b);
        }
        tb.dut.set_bit("reset", false);
        let mut after = Vec::new();
        for c in 0..tb.rng.range(8, 60) as usize {
            let b = tb.beat();
            after.push(b);
            let got = tb.cycle(b);
            let (tx, rx) = running(&after);
            let want = (tx[(c + 2).saturating_sub(TX_LATENCY)], rx[(c + 2).saturating_sub(RX_LATENCY)]);
            assert_eq!(got, want, "round {round}, cycle {c} after the reset: (TX, RX) bytes");
        }
    }
}
