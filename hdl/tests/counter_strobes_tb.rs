//! `CounterStrobes` in Verilator: every event counter's pulse, found by the counter's name in
//! rnic_contract::regs::counter::NAMES, sets exactly the bit of its index; pulses together set
//! the union of their bits.
mod harness;

use harness::{Dut, Rng};
use rnic_contract::regs::counter::{EVENTS, NAMES};
use rnic_hdl::counter_strobes::CounterStrobes;

#[test]
fn each_pulse_sets_the_bit_of_its_counter() {
    let mut dut = Dut::build::<CounterStrobes>("counter_strobes").expect("build CounterStrobes");
    let names = &NAMES[..usize::from(EVENTS)];
    for (i, n) in names.iter().enumerate() {
        for m in names {
            dut.set(*m, u64::from(m == n));
        }
        dut.eval();
        assert_eq!(dut.get("inc"), 1 << i, "counter {i} ({n})");
    }
    let mut rng = Rng::from_env(0xC0_0001);
    for _ in 0..200 {
        let want = rng.next_u64() & ((1 << names.len()) - 1);
        for (i, m) in names.iter().enumerate() {
            dut.set(*m, want >> i & 1);
        }
        dut.eval();
        assert_eq!(dut.get("inc"), want);
    }
}
