//! rnic NICs behind SimBricks' own switch model (`net_switch` from SimBricks' `sims/net/switch`),
//! built from SimBricks' public source outside this repository. Runs when
//! `RNIC_SIMBRICKS_SWITCH=/path/to/net_switch` names it; says plainly that it skipped otherwise.
//!
//! Two NICs of one world, each port a SimBricks listener the switch connects to (`-s`): frames
//! cross the switch (flooded first, then forwarded by MAC learning) and arrive at exactly the
//! cycles an in-process wire with the two links' latencies added (500 + 500 ns) gives.
mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use common::{FakeNic, Seen};
use rnic_sim::{LinkConfig, PortOptions, SimConfig, SimbricksListener, SimbricksParams, Topology, World};

const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];

/// Ethernet frames from NIC `from` to the other, ethertype 0x88B5 (local experimental), of
/// assorted sizes up to a 9000-byte jumbo frame.
fn frames(from: usize, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| {
            let len = [60, 1514, 64, 4200, 333, 9000][k % 6];
            let mut f: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_add(k as u8).wrapping_mul(7)).collect();
            f[..6].copy_from_slice(&MAC[1 - from]);
            f[6..12].copy_from_slice(&MAC[from]);
            f[12..14].copy_from_slice(&[0x88, 0xB5]);
            f[14] = from as u8;
            f[15] = k as u8;
            f
        })
        .collect()
}

type Received = Vec<(u64, Vec<u8>, bool)>;

fn received(seen: &[Arc<Mutex<Seen>>]) -> Vec<Received> {
    seen.iter().map(|s| s.lock().unwrap().rx.clone()).collect()
}

fn world(cfg: SimConfig, topology: Topology) -> (World, Vec<Arc<Mutex<Seen>>>) {
    let (a, sa) = FakeNic::boxed(frames(0, 24), vec![]);
    let (b, sb) = FakeNic::boxed(frames(1, 18), vec![]);
    (World::with_cores(vec![a, b], cfg, topology).unwrap(), vec![sa, sb])
}

#[test]
fn nics_behind_simbricks_net_switch_see_the_cycles_of_a_wire_with_both_latencies() {
    let Some(switch) = std::env::var_os("RNIC_SIMBRICKS_SWITCH") else {
        println!(
            "SKIPPED: the SimBricks net_switch test needs RNIC_SIMBRICKS_SWITCH=/path/to/net_switch \
             (SimBricks' sims/net/switch, built from its source); nothing was checked"
        );
        return;
    };
    let cycles = 12_000;
    // The reference: one wire whose latency is both SimBricks links' (NIC -> switch, switch -> NIC).
    let reference_cfg =
        SimConfig { link: LinkConfig { latency_ns: 1000, ..LinkConfig::default() }, ..SimConfig::default() };
    let (mut reference, ref_seen) = world(reference_cfg, Topology::BackToBack);
    reference.step_n(cycles - reference.cycles());
    let expected = received(&ref_seen);
    assert_eq!((expected[0].len(), expected[1].len()), (18, 24), "the reference delivered everything");

    let dir = std::env::temp_dir();
    let socks: Vec<PathBuf> =
        (0..2).map(|i| dir.join(format!("rnic-netswitch-{}-{i}.sock", std::process::id()))).collect();
    let params = SimbricksParams::for_link(&LinkConfig::default());
    let listeners: Vec<SimbricksListener> =
        socks.iter().map(|p| SimbricksListener::bind(p, params.clone()).unwrap()).collect();
    let mut child = Command::new(&switch)
        .args(["-S", "500", "-E", "500", "-s"])
        .arg(&socks[0])
        .arg("-s")
        .arg(&socks[1])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", switch.to_string_lossy()));
    let (mut w, seen) = world(SimConfig::default(), Topology::Unconnected);
    for (i, l) in listeners.into_iter().enumerate() {
        let port = l.accept().unwrap();
        assert!(port.synchronized(), "the switch synchronises");
        println!("NIC {i}: {} (queues {:?})", rnic_sim::ExternalPort::describe(&port), port.queues());
        w.attach_port(i, Box::new(port), PortOptions::default()).unwrap();
    }
    let t0 = std::time::Instant::now();
    w.step_n(cycles - w.cycles());
    let wall = t0.elapsed();
    let got = received(&seen);
    let reports = w.port_reports();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    println!("net_switch stdout:\n{}", String::from_utf8_lossy(&out.stdout));
    println!("net_switch stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    for r in &reports {
        println!(
            "NIC {}: sent {} frames ({} bytes), received {} frames ({} bytes), syncs {} out / {} in, waited {} us",
            r.nic,
            r.port.tx_frames,
            r.port.tx_bytes,
            r.port.rx_frames,
            r.port.rx_bytes,
            r.port.syncs_sent,
            r.port.syncs_received,
            r.port.wait_us
        );
    }
    println!("{} cycles through the switch in {:.2} s", cycles, wall.as_secs_f64());
    assert!(w.take_port_error().is_none());
    let brief = |r: &[Received]| -> Vec<Vec<(u64, usize, u8)>> {
        r.iter().map(|v| v.iter().map(|(c, d, _)| (*c, d.len(), d[15])).collect()).collect()
    };
    assert_eq!(brief(&got), brief(&expected), "(first-beat cycle, length, frame number) per NIC");
    assert!(got == expected, "same bytes");
    println!(
        "OK: {} + {} frames crossed net_switch at the cycles of a 1000 ns in-process wire",
        got[1].len(),
        got[0].len()
    );
}
