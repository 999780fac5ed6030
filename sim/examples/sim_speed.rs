//! Measures the simulator:
//! `cargo run --release -p rnic-sim --example sim_speed [CYCLES] [NICS] [THREADS] [STEP]`.
//!
//! Steps an idle world of NICS back-to-back NICs (default 2) for CYCLES cycles (default 2 000 000)
//! on THREADS threads (default 1, or `RNIC_SIM_THREADS`), STEP cycles per `step_n` call
//! (default: all at once; 1 is how a driver polling its CQ steps the world), and prints the
//! model's build times and the simulated cycles per wall-clock second.
use rnic_sim::{SimConfig, World};

fn main() {
    let mut args = std::env::args().skip(1);
    let cycles: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let nics: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let defaults = SimConfig::default();
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(defaults.threads);
    let step: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(cycles).max(1);
    let b = rnic_sim::build_info();
    println!(
        "model build: generate {:.2} s, verilator {:.2} s (model {:.2} s + runtime {:.2} s), shim {:.2} s, waveform support {}",
        b.generate_seconds,
        rnic_sim::verilator_build_seconds(),
        b.verilate_seconds,
        b.runtime_seconds,
        b.shim_seconds,
        b.waveform
    );
    let mut world = match World::new(nics, SimConfig { threads, ..defaults }) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("sim_speed: {e}");
            std::process::exit(1);
        }
    };
    match world.mmio_read(0, 0) {
        Ok(v) => println!("BAR0[0x0000] = {v:#010x}"),
        Err(e) => println!("BAR0[0x0000]: {e}"),
    }
    let start = std::time::Instant::now();
    let c0 = world.cycles();
    let mut left = cycles;
    while left > 0 {
        let k = left.min(step);
        world.step_n(k);
        left -= k;
    }
    let wall = start.elapsed().as_secs_f64();
    let per_world = (world.cycles() - c0) as f64 / wall;
    println!(
        "{nics} NIC(s), {} thread(s) (in parallel at the end: {}), lookahead {} cycles, {step} per step: {cycles} cycles ({:.3} ms simulated) in {wall:.3} s = {:.3} M world cycles/s ({:.3} M NIC cycles/s)",
        world.threads(),
        world.stepping_in_parallel(),
        world.lookahead_cycles(),
        cycles as f64 * 4e-6,
        per_world / 1e6,
        per_world * nics as f64 / 1e6
    );
}
