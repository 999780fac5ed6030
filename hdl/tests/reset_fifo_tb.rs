//! `ResetFifo` in Verilator, beside rust-hdl's `SynchronousFIFO` (the FIFO it replaces).
//!
//! - `behaves_as_the_synchronous_fifo_it_replaces`: both FIFOs (16 entries of 12 bits, block
//!   size 3) get the same random writes and reads (bursts that fill them, runs that empty them,
//!   reads while empty and writes while full); while `reset` is low every output matches in
//!   every cycle (`data_out` while not empty, `empty`, `full`, `almost_full`, `almost_empty`).
//! - `a_reset_empties_it`: filled, then reset for one cycle: empty and not full from the cycle
//!   after, and what comes out next is only what was written after the reset, in order.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Both FIFOs on the same inputs (the rust-hdl one has no reset).
#[derive(LogicBlock, Default)]
struct Pair {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub write: Signal<In, Bit>,
    pub data_in: Signal<In, Bits<12>>,
    pub read: Signal<In, Bit>,
    pub a_data: Signal<Out, Bits<12>>,
    pub a_empty: Signal<Out, Bit>,
    pub a_full: Signal<Out, Bit>,
    pub a_afull: Signal<Out, Bit>,
    pub a_aempty: Signal<Out, Bit>,
    pub b_data: Signal<Out, Bits<12>>,
    pub b_empty: Signal<Out, Bit>,
    pub b_full: Signal<Out, Bit>,
    pub b_afull: Signal<Out, Bit>,
    pub b_aempty: Signal<Out, Bit>,
    a: ResetFifo<Bits<12>, 4, 5, 3>,
    b: SynchronousFIFO<Bits<12>, 4, 5, 3>,
}

impl Logic for Pair {
    #[hdl_gen]
    fn update(&mut self) {
        self.a.clock.next = self.clock.val();
        self.b.clock.next = self.clock.val();
        self.a.reset.next = self.reset.val();
        self.a.write.next = self.write.val();
        self.b.write.next = self.write.val();
        self.a.data_in.next = self.data_in.val();
        self.b.data_in.next = self.data_in.val();
        self.a.read.next = self.read.val();
        self.b.read.next = self.read.val();
        self.a_data.next = self.a.data_out.val();
        self.a_empty.next = self.a.empty.val();
        self.a_full.next = self.a.full.val();
        self.a_afull.next = self.a.almost_full.val();
        self.a_aempty.next = self.a.almost_empty.val();
        self.b_data.next = self.b.data_out.val();
        self.b_empty.next = self.b.empty.val();
        self.b_full.next = self.b.full.val();
        self.b_afull.next = self.b.almost_full.val();
        self.b_aempty.next = self.b.almost_empty.val();
    }
}

fn step(d: &mut Dut, reset: bool, write: Option<u64>, read: bool) {
    d.set_bit("reset", reset);
    d.set_bit("write", write.is_some());
    d.set("data_in", write.unwrap_or(0));
    d.set_bit("read", read);
    d.eval();
    d.tick();
}

#[test]
fn behaves_as_the_synchronous_fifo_it_replaces() {
    let mut d = Dut::build::<Pair>("reset_fifo_pair").expect("build the FIFO pair");
    let mut rng = Rng::from_env(0xF1F0_0001);
    d.reset(2);
    let (mut wrote, mut served) = (0u64, 0u64);
    let mut phase = 0u64;
    for cycle in 0..40_000u64 {
        if cycle % 500 == 0 {
            phase = rng.range(0, 3);
        }
        // 0: balanced, 1: fill (reads rare), 2: drain (writes rare), 3: both every cycle.
        let (pw, pr) = [(1, 2), (7, 8), (1, 8), (1, 1)][phase as usize];
        let write = rng.chance(pw, if phase == 1 || phase == 3 { pw } else { 2 }).then(|| rng.range(0, 0xFFF));
        let read = rng.chance(if phase == 2 || phase == 3 { pr } else { 1 }, pr);
        d.set_bit("reset", false);
        d.set_bit("write", write.is_some());
        d.set("data_in", write.unwrap_or(0));
        d.set_bit("read", read);
        d.eval();
        for (a, b) in [("a_empty", "b_empty"), ("a_full", "b_full"), ("a_afull", "b_afull"), ("a_aempty", "b_aempty")] {
            assert_eq!(d.get(a), d.get(b), "cycle {cycle}: {a} differs from rust-hdl's FIFO");
        }
        if !d.get_bit("b_empty") {
            assert_eq!(d.get("a_data"), d.get("b_data"), "cycle {cycle}: head entry differs");
            served += u64::from(read);
        }
        wrote += u64::from(write.is_some() && !d.get_bit("b_full"));
        d.tick();
    }
    assert!(wrote > 10_000 && served > 10_000, "only {wrote} writes and {served} reads took effect");
}

#[test]
fn a_reset_empties_it() {
    let mut d = Dut::build::<Pair>("reset_fifo_pair").expect("build the FIFO pair");
    d.reset(2);
    let mut rng = Rng::from_env(0xF1F0_0002);
    for round in 0..50u64 {
        let n = rng.range(1, 16);
        for k in 0..n {
            step(&mut d, false, Some((round << 5 | k) & 0xFFF), false);
        }
        step(&mut d, false, None, false);
        assert!(!d.get_bit("a_empty"), "round {round}: {n} entries written");
        // Reset while reading and writing: neither takes effect.
        step(&mut d, true, Some(0xBAD), rng.chance(1, 2));
        d.eval();
        assert!(d.get_bit("a_empty") && !d.get_bit("a_full"), "round {round}: not empty after reset");
        let fresh: Vec<u64> = (0..rng.range(0, 5)).map(|k| 0x800 | round << 3 | k).collect();
        for &v in &fresh {
            step(&mut d, false, Some(v & 0xFFF), false);
        }
        step(&mut d, false, None, false);
        let mut out = Vec::new();
        for _ in 0..20 {
            d.set_bit("reset", false);
            d.set_bit("write", false);
            d.set_bit("read", true);
            d.eval();
            if !d.get_bit("a_empty") {
                out.push(d.get("a_data"));
            }
            d.tick();
        }
        let want: Vec<u64> = fresh.iter().map(|v| v & 0xFFF).collect();
        assert_eq!(out, want, "round {round}: after a reset only what was written since comes out");
    }
}
