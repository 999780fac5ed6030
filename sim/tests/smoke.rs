//! The real generated design under Verilator: reset, the ID register, the world's clock.
use rnic_sim::{Nic, SimConfig, SimError, Topology, World};

/// BAR0 offset 0x0000 reads "RNIC" in ASCII; this register stays in every version of the NIC.
const ID_REG: u16 = 0x0000;
const ID_VALUE: u32 = 0x524E_4943;

#[test]
fn reset_then_read_the_id_register() {
    let mut world = World::new(1, SimConfig::default()).unwrap();
    let reset_cycles = SimConfig::default().reset_cycles;
    assert_eq!(world.cycles(), reset_cycles, "World::new resets every NIC");
    assert_eq!(world.mmio_read(0, ID_REG).unwrap(), ID_VALUE);
    let stats = world.stats();
    assert_eq!(stats.nics[0].mmio.reads, 1);
    assert_eq!(stats.nics[0].dma.errors, 0);
    assert!(world.cycles() > reset_cycles, "an MMIO takes cycles of the whole world");
    assert_eq!(world.now_ns(), world.cycles() * 4);
}

#[test]
fn a_standalone_nic_can_be_reset_and_clocked() {
    let mut nic = Nic::new().unwrap();
    nic.reset();
    assert!(!nic.in_reset());
    let t = nic.mmio_submit(rnic_sim::MmioRequest::Read { addr: ID_REG });
    for _ in 0..100 {
        nic.cycle();
        if let Some(c) = nic.mmio_take(t) {
            assert_eq!(c.value, ID_VALUE);
            assert_eq!(c.resp, 0);
            return;
        }
    }
    panic!("no MMIO completion in 100 cycles");
}

#[test]
fn mmio_on_one_nic_advances_every_nic() {
    let mut world = World::new(2, SimConfig::default()).unwrap();
    world.mmio_write(1, 0x0004, 0x1234).unwrap();
    assert_eq!(world.mmio_read(0, ID_REG).unwrap(), ID_VALUE);
    let c = world.cycles();
    assert_eq!(world.nic(0).unwrap().cycles(), c);
    assert_eq!(world.nic(1).unwrap().cycles(), c);
    assert_eq!(world.stats().links.len(), 2, "back to back: one full-duplex wire = two links");
}

#[test]
fn bad_indices_and_topologies_are_errors_not_panics() {
    let mut world = World::with_topology(1, SimConfig::default(), Topology::Loopback).unwrap();
    assert!(matches!(world.mmio_read(3, 0), Err(SimError::NoSuchNic { index: 3, count: 1 })));
    assert!(world.memory(1).is_err());
    assert!(world.memory_mut(1).is_err());
    assert!(World::new(0, SimConfig::default()).is_err());
    assert!(matches!(world.run_until(|_| false, 10), Err(SimError::Timeout { cycles: 10 })));
    let before = world.cycles();
    let stepped = world.run_until(|w| w.cycles() >= 100, 1000).unwrap();
    assert_eq!(before + stepped, 100);
}

#[test]
fn waveform_needs_the_feature() {
    let mut world = World::new(1, SimConfig::default()).unwrap();
    let path = std::env::temp_dir().join(format!("rnic-sim-wave-{}.fst", std::process::id()));
    let r = world.dump_waveform(0, &path);
    if rnic_sim::has_waveform_support() {
        r.unwrap();
        world.step_n(20);
        world.finish().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 100, "FST file has {len} bytes");
        // A second dump of the same NIC, later in the run.
        world.dump_waveform(0, &path).unwrap();
        world.step_n(20);
        world.finish().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 100);
        let _ = std::fs::remove_file(&path);
    } else {
        assert!(matches!(r, Err(SimError::WaveformDisabled)));
    }
}

#[test]
fn build_info_is_recorded() {
    let b = rnic_sim::build_info();
    assert!(b.verilate_seconds > 0.0, "{}", rnic_sim::build_stats_json());
    assert!(rnic_sim::verilator_build_seconds() >= b.verilate_seconds);
    assert_eq!(b.waveform, rnic_sim::has_waveform_support());
}

/// The fast evaluation (`EvalMode::Fast`, the default) is built with the Verilator that
/// `scripts/setup.sh` installs (Debian's 5.006), so CI measures and checks the path users run;
/// a checked model reports `Checked`, and a reference one `Reference`.
#[test]
fn the_fast_evaluation_is_built_with_the_supported_verilator() {
    let verilator = std::env::var("VERILATOR").unwrap_or_else(|_| "verilator".to_string());
    let version = std::process::Command::new(verilator).arg("--version").output().expect("verilator --version");
    let version = String::from_utf8_lossy(&version.stdout).to_string();
    if !version.starts_with("Verilator 5.006 ") || rnic_sim::ffi::has_waveform_support() {
        eprintln!("{version}: not the version the fast evaluation was written against, or a waveform build");
        return;
    }
    assert!(rnic_sim::ffi::fast_cycle_built(), "{version} but the shim was built without the fast evaluation");
    let mut m = rnic_sim::ffi::Model::new().expect("model");
    assert_eq!(m.set_eval_mode(rnic_sim::EvalMode::Checked), rnic_sim::EvalMode::Checked);
    let mut r = rnic_sim::ffi::Model::new().expect("model");
    assert_eq!(r.set_eval_mode(rnic_sim::EvalMode::Reference), rnic_sim::EvalMode::Reference);
}
