//! `Bswap64` in Verilator: a 64-bit header field as stored on the wire (byte 0 in bits 7:0) to
//! its value as a number and back, i.e. `u64::swap_bytes`. Each single set bit lands in the
//! mirrored byte at the same bit of that byte (the wiring is a permutation, nothing else), and
//! random words and their swaps round-trip.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::bswap::Bswap64;

#[test]
fn bswap64_reverses_the_bytes() {
    let mut dut = Dut::build::<Bswap64>("bswap64").expect("build Bswap64");
    for bit in 0..64u32 {
        let x = 1u64 << bit;
        dut.set("x", x);
        dut.eval();
        let want = 1u64 << ((7 - bit / 8) * 8 + bit % 8);
        assert_eq!(dut.get("y"), want, "bit {bit}");
    }
    // A wire-order field of PROTOCOL.md's framing: RETH.VA 0x0102030405060708 is stored with
    // byte 0x01 first (bits 7:0).
    dut.set("x", 0x0807_0605_0403_0201);
    dut.eval();
    assert_eq!(dut.get("y"), 0x0102_0304_0506_0708);
    let mut rng = Rng::from_env(0xB5_0064);
    for _ in 0..500 {
        let x = rng.next_u64();
        dut.set("x", x);
        dut.eval();
        let y = dut.get("y");
        assert_eq!(y, x.swap_bytes(), "x {x:#018x}");
        dut.set("x", y);
        dut.eval();
        assert_eq!(dut.get("y"), x, "round trip of {x:#018x}");
    }
}
