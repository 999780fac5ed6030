//! Benchmark (not a test): wall-clock cost of one BAR0 MMIO write and read on a device.
//!
//!     cargo run --release -p rnic-tools --example mmio_cost -- [DEVICE] [N]
//!
//! DEVICE is a device string (default `sim`: an in-process simulated NIC); N accesses of each
//! kind (default 20000). Writes go to MAC_LO (a plain register), reads to ID. Prints ns per
//! access and, for a simulated device, the NIC cycles one access takes.
use std::time::Instant;

use rnic_contract::regs;

fn main() {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "sim".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let dev = match rnic::open_device(&spec) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mmio_cost: {e}");
            std::process::exit(1);
        }
    };
    let c0 = dev.now_cycles();
    let t = Instant::now();
    for i in 0..n {
        dev.mmio_write32(regs::MAC_LO, i as u32).expect("MMIO write");
    }
    let write_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let c1 = dev.now_cycles();
    let t = Instant::now();
    for _ in 0..n {
        assert_eq!(dev.mmio_read32(regs::ID).expect("MMIO read"), regs::ID_VALUE);
    }
    let read_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let c2 = dev.now_cycles();
    println!(
        "{spec}: MMIO write {write_ns:.0} ns, read {read_ns:.0} ns ({n} each); NIC cycles per access: write {:.1}, read {:.1}",
        (c1 - c0) as f64 / n as f64,
        (c2 - c1) as f64 / n as f64
    );
}
