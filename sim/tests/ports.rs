//! External ports with scripted cores: a pair of worlds joined by a SimBricks link (each in its
//! own thread here; `firmware-tests` runs the RTL in two processes) must behave exactly as the
//! one-process pair; bridged wires (UDP, TCP with QEMU's framing) carry frames end to end; a
//! world on several threads gives the results of one thread.
mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{frame, FakeNic, Seen};
use rnic_sim::{
    ExternalPort, FaultConfig, PortOptions, SimConfig, SimbricksListener, SimbricksParams, SimbricksPort, SyncMode,
    TcpBridgeListener, TcpPort, Topology, UdpPort, World,
};

type Received = Vec<(u64, Vec<u8>, bool)>;

/// (first-beat cycle, length, first byte, bad FCS) of each received frame: what to print when a
/// comparison fails.
fn summary(r: &[Received]) -> Vec<Vec<(u64, usize, u8, bool)>> {
    r.iter().map(|v| v.iter().map(|(c, d, b)| (*c, d.len(), d.first().copied().unwrap_or(0), *b)).collect()).collect()
}

fn sock_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rnic-sim-{}-{name}.sock", std::process::id()))
}

/// Frames of assorted sizes; the first 6 bytes (destination MAC) are the receiver's.
fn traffic(seed: u8, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|k| frame([60, 1500, 64, 4200, 333, 9000][k % 6], seed.wrapping_add(k as u8))).collect()
}

fn faulty() -> SimConfig {
    SimConfig {
        faults: FaultConfig {
            seed: 11,
            drop_probability: 0.05,
            duplicate_probability: 0.05,
            reorder_probability: 0.1,
            drop_frames: vec![(0, 2), (1, 3)],
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    }
}

/// The reference: both cores in one world, back to back; returns what each received.
fn one_process(cfg: &SimConfig, tx: [Vec<Vec<u8>>; 2], cycles: u64) -> ([Received; 2], World) {
    let (a, sa) = FakeNic::boxed(tx[0].clone(), vec![]);
    let (b, sb) = FakeNic::boxed(tx[1].clone(), vec![]);
    let mut w = World::with_cores(vec![a, b], cfg.clone(), Topology::BackToBack).unwrap();
    w.step_n(cycles - w.cycles());
    let got = |s: &Arc<Mutex<Seen>>| s.lock().unwrap().rx.clone();
    ([got(&sa), got(&sb)], w)
}

/// One side of a split pair: a one-NIC world whose port is `port`, with the fault identity NIC
/// `me` has in the one-process world; runs until `cycles`. With `cfg.threads` > 1 the world
/// gets a second, idle NIC so that it steps in parallel windows bounded by the port.
fn one_side(
    cfg: SimConfig,
    tx: Vec<Vec<u8>>,
    me: usize,
    port: Box<dyn ExternalPort>,
    cycles: u64,
) -> (Received, World) {
    let (core, seen) = FakeNic::boxed(tx, vec![]);
    let mut cores = vec![core];
    if cfg.threads > 1 {
        cores.push(FakeNic::boxed(vec![], vec![]).0);
    }
    let mut w = World::with_cores(cores, cfg, Topology::Unconnected).unwrap();
    w.attach_port(0, port, PortOptions { link_index: Some(me), nic_label: Some(me) }).unwrap();
    // Mixed step sizes: the port's synchronisation must not depend on them.
    w.step_n(777);
    while w.cycles() < cycles {
        let k = (cycles - w.cycles()).min(5000);
        w.step_n(k);
    }
    assert!(w.take_port_error().is_none());
    let rx = seen.lock().unwrap().rx.clone();
    (rx, w)
}

fn split_over_simbricks(
    cfg: &SimConfig,
    tx: [Vec<Vec<u8>>; 2],
    cycles: u64,
    name: &str,
) -> ([Received; 2], [World; 2]) {
    split_with(cfg, cfg, tx, cycles, name)
}

fn split_with(
    cfg: &SimConfig,
    cfg_b: &SimConfig,
    tx: [Vec<Vec<u8>>; 2],
    cycles: u64,
    name: &str,
) -> ([Received; 2], [World; 2]) {
    let path = sock_path(name);
    let params = SimbricksParams::for_link(&cfg.link);
    let listener = SimbricksListener::bind(&path, params.clone()).unwrap();
    let (cfg_b, tx_b, params_b, path_b) = (cfg_b.clone(), tx[1].clone(), params, path.clone());
    let b = std::thread::spawn(move || {
        let port = SimbricksPort::connect(&path_b, params_b).unwrap();
        assert!(port.synchronized());
        one_side(cfg_b, tx_b, 1, Box::new(port), cycles)
    });
    let port = listener.accept().unwrap();
    let (ra, wa) = one_side(cfg.clone(), tx[0].clone(), 0, Box::new(port), cycles);
    let (rb, wb) = b.join().unwrap();
    ([ra, rb], [wa, wb])
}

#[test]
fn a_pair_split_over_simbricks_runs_the_cycles_of_the_one_process_pair() {
    let tx = [traffic(0x10, 40), traffic(0x80, 30)];
    let cycles = 20_000;
    let (reference, w) = one_process(&SimConfig::default(), tx.clone(), cycles);
    let (split, worlds) = split_over_simbricks(&SimConfig::default(), tx.clone(), cycles, "plain");
    assert_eq!(reference[0].len(), 30, "the reference pair delivered everything");
    assert_eq!(reference[1].len(), 40);
    assert_eq!(summary(&split), summary(&reference), "same frames, same first-beat cycles");
    assert!(split == reference);
    for (k, side) in worlds.iter().enumerate() {
        let r = &side.port_reports()[0];
        assert_eq!(r.outbound.busy_bits, w.link_reports()[k].stats.busy_bits, "same wire time on side {k}");
        assert!(r.port.syncs_sent > 0 && r.port.syncs_received > 0, "{r:?}");
        assert_eq!(r.port.tx_frames, tx[k].len() as u64);
    }
}

#[test]
fn a_split_side_on_two_threads_matches_too() {
    let tx = [traffic(0x11, 30), traffic(0x81, 30)];
    let cycles = 15_000;
    let (reference, _) = one_process(&faulty(), tx.clone(), cycles);
    let two = SimConfig { threads: 2, ..faulty() };
    let (split, worlds) = split_with(&two, &faulty(), tx, cycles, "threads");
    assert_eq!(worlds[0].threads(), 2);
    assert_eq!(summary(&split), summary(&reference));
    assert!(split == reference);
}

#[test]
fn faults_split_over_simbricks_match_the_one_process_faults() {
    let tx = [traffic(0x20, 60), traffic(0x90, 60)];
    let cycles = 30_000;
    let (reference, w) = one_process(&faulty(), tx.clone(), cycles);
    let (split, worlds) = split_over_simbricks(&faulty(), tx, cycles, "faults");
    let links = w.link_reports();
    assert!(links[0].stats.dropped > 1 && links[1].stats.reordered > 0 && links[0].stats.duplicated > 0, "{links:?}");
    assert_eq!(summary(&split), summary(&reference));
    assert!(split == reference);
    for (k, side) in worlds.iter().enumerate() {
        let out = side.port_reports()[0].outbound;
        let l = links[k].stats;
        assert_eq!((out.dropped, out.duplicated, out.reordered), (l.dropped, l.duplicated, l.reordered), "side {k}");
    }
}

#[test]
fn a_split_run_is_deterministic() {
    let tx = [traffic(0x30, 25), traffic(0xA0, 25)];
    let a = split_over_simbricks(&faulty(), tx.clone(), 15_000, "det1").0;
    let b = split_over_simbricks(&faulty(), tx, 15_000, "det2").0;
    assert_eq!(summary(&a), summary(&b));
    assert!(a == b);
}

#[test]
fn a_peer_that_vanishes_is_an_error_not_a_hang() {
    let path = sock_path("vanish");
    let params = SimbricksParams { peer_timeout: Duration::from_secs(2), ..SimbricksParams::default() };
    let listener = SimbricksListener::bind(&path, params.clone()).unwrap();
    let p2 = path.clone();
    let peer = std::thread::spawn(move || {
        // Connects, then leaves without a terminate message (as a crashed process would).
        let port = SimbricksPort::connect(&p2, params).unwrap();
        std::mem::forget(port);
    });
    let port = listener.accept().unwrap();
    peer.join().unwrap();
    let (core, _) = FakeNic::boxed(vec![], vec![]);
    let mut w = World::with_cores(vec![core], SimConfig::default(), Topology::Unconnected).unwrap();
    w.attach_port(0, Box::new(port), PortOptions::default()).unwrap();
    // The forgotten port's socket stays open in this process, so only the peer timeout can tell.
    let t0 = std::time::Instant::now();
    let err = w.run_until(|_| false, 1_000_000).unwrap_err();
    assert!(err.to_string().contains("no message from the peer"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    // The port is cut off: the world runs on.
    w.step_n(1000);
}

#[test]
fn handshakes_refuse_mismatched_synchronisation() {
    let path = sock_path("nosync");
    let listener =
        SimbricksListener::bind(&path, SimbricksParams { sync: SyncMode::Required, ..SimbricksParams::default() })
            .unwrap();
    let p2 = path.clone();
    let peer = std::thread::spawn(move || {
        SimbricksPort::connect(&p2, SimbricksParams { sync: SyncMode::Disabled, ..SimbricksParams::default() })
            .map(|_| ())
    });
    let mine = listener.accept();
    let theirs = peer.join().unwrap();
    assert!(mine.is_err(), "the listener requires sync, the peer has it disabled");
    assert!(theirs.is_err(), "the peer sees the listener insist");
    let bad = SimbricksParams { link_latency_ps: 0, ..SimbricksParams::default() };
    assert!(SimbricksListener::bind(&sock_path("zero"), bad).is_err(), "latency 0 leaves no lookahead");
}

/// Two bridged worlds exchange frames; each runs `cycles` in real time or slower.
fn bridged_pair(
    cfg: &SimConfig,
    a: Box<dyn ExternalPort>,
    b: Box<dyn ExternalPort>,
    tx: [Vec<Vec<u8>>; 2],
) -> [Received; 2] {
    let run = |cfg: SimConfig, port: Box<dyn ExternalPort>, tx: Vec<Vec<u8>>, expect: usize| {
        move || {
            let (core, seen) = FakeNic::boxed(tx, vec![]);
            let mut w = World::with_cores(vec![core], cfg, Topology::Unconnected).unwrap();
            w.attach_port(0, port, PortOptions::default()).unwrap();
            let wall = std::time::Instant::now();
            while seen.lock().unwrap().rx.len() < expect && wall.elapsed() < Duration::from_secs(60) {
                w.step_n(200);
            }
            // Keep serving the peer a little longer so it gets our last frames too.
            w.step_n(20_000);
            let sim_ns = w.now_ns();
            assert!(wall.elapsed().as_nanos() as u64 >= sim_ns, "simulated time ran ahead of wall-clock time");
            assert!(w.take_port_error().is_none());
            let rx = seen.lock().unwrap().rx.clone();
            rx
        }
    };
    let (n0, n1) = (tx[1].len(), tx[0].len());
    let tb = std::thread::spawn(run(cfg.clone(), b, tx[1].clone(), n1));
    let ra = run(cfg.clone(), a, tx[0].clone(), n0)();
    [ra, tb.join().unwrap()]
}

fn payloads(r: &Received) -> Vec<Vec<u8>> {
    r.iter().map(|x| x.1.clone()).collect()
}

#[test]
fn two_worlds_bridged_over_udp_exchange_frames_intact_and_in_order() {
    // Two free ports on loopback, then one bridge on each, each the other's peer.
    let sa = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let sb = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ab) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    drop((sa, sb));
    let a = UdpPort::bind(aa, ab).unwrap();
    let b = UdpPort::bind(ab, aa).unwrap();
    let tx = [traffic(0x40, 12), traffic(0xC0, 9)];
    let got = bridged_pair(&SimConfig::default(), Box::new(a), Box::new(b), tx.clone());
    assert_eq!(payloads(&got[0]), tx[1]);
    assert_eq!(payloads(&got[1]), tx[0]);
}

#[test]
fn two_worlds_bridged_over_tcp_with_qemu_framing_exchange_frames() {
    let listener = TcpBridgeListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let c = std::thread::spawn(move || TcpPort::connect(addr, Duration::from_secs(10)).unwrap());
    let a = listener.accept(Duration::from_secs(10)).unwrap();
    let b = c.join().unwrap();
    let tx = [traffic(0x50, 15), traffic(0xD0, 15)];
    let got = bridged_pair(&SimConfig::default(), Box::new(a), Box::new(b), tx.clone());
    assert_eq!(payloads(&got[0]), tx[1]);
    assert_eq!(payloads(&got[1]), tx[0]);
}

#[test]
fn fault_injection_applies_to_both_bridged_directions() {
    let listener = TcpBridgeListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let c = std::thread::spawn(move || TcpPort::connect(addr, Duration::from_secs(10)).unwrap());
    let a = listener.accept(Duration::from_secs(10)).unwrap();
    let b = c.join().unwrap();
    let cfg = SimConfig {
        faults: FaultConfig { seed: 5, drop_probability: 0.2, corrupt_probability: 0.2, ..FaultConfig::default() },
        ..SimConfig::default()
    };
    // One world bridged, the far end a plain TCP peer we drive by hand: frames from it cross the
    // world's inbound wire, frames to it its outbound wire.
    let (core, seen) = FakeNic::boxed(traffic(0x60, 100), vec![]);
    let mut w = World::with_cores(vec![core], cfg, Topology::Unconnected).unwrap();
    w.attach_port(0, Box::new(a), PortOptions::default()).unwrap();
    let mut peer = b;
    let sent: Vec<Vec<u8>> = traffic(0xE0, 100);
    for f in &sent {
        peer.send(f, 0).unwrap();
    }
    let mut from_world = Vec::new();
    let wall = std::time::Instant::now();
    while wall.elapsed() < Duration::from_secs(30) && (from_world.len() < 50 || seen.lock().unwrap().rx.len() < 50) {
        w.step_n(500);
        peer.receive(0, &mut from_world).unwrap();
        peer.advance(0).unwrap();
    }
    w.step_n(5000);
    peer.receive(0, &mut from_world).unwrap();
    let r = &w.port_reports()[0];
    let inbound = r.inbound.unwrap();
    assert!(inbound.dropped > 5 && inbound.corrupted > 5, "inbound faults: {inbound:?}");
    assert!(r.outbound.dropped > 5 && r.corrupt_discarded > 5, "outbound faults: {r:?}");
    let rx = seen.lock().unwrap().rx.clone();
    assert_eq!(rx.len() as u64, 100 - inbound.dropped);
    assert_eq!(rx.iter().filter(|x| x.2).count() as u64, inbound.corrupted, "inbound corruption shows as bad FCS");
    assert_eq!(from_world.len() as u64, 100 - r.outbound.dropped - r.corrupt_discarded);
    for f in &from_world {
        assert!(traffic(0x60, 100).contains(&f.data), "an outbound frame arrived altered");
    }
}

/// Frames separated by idle gaps of 0 to 150 cycles, so that many start on an idle wire and
/// arrive after the shortest possible transit (the case the threaded windows are bounded by):
/// mostly minimum-size frames, every fifth one larger.
fn sparse(seed: u8, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (k, f) in traffic(seed, n).into_iter().enumerate() {
        let f = if k % 5 != 0 { f[..60].to_vec() } else { f };
        out.push(f);
        out.extend(std::iter::repeat_n(Vec::new(), (k * 37 + usize::from(seed)) % 151));
    }
    out
}

/// Both cores of a back-to-back pair (and of two pairs) on 1 and on 2 threads: same frames at
/// the same cycles, same wire statistics, same capture.
#[test]
fn threads_give_the_results_of_one_thread() {
    let run = |threads: usize, nics: usize| {
        let mut seen = Vec::new();
        let mut cores = Vec::new();
        for k in 0..nics {
            let (c, s) = FakeNic::boxed(sparse(16 * k as u8, 250), vec![]);
            cores.push(c);
            seen.push(s);
        }
        let cfg = SimConfig { threads, ..faulty() };
        let mut w = World::with_cores(cores, cfg, Topology::BackToBack).unwrap();
        let pcap = std::env::temp_dir().join(format!("rnic-sim-{}-threads-{threads}-{nics}.pcap", std::process::id()));
        w.capture_pcap(&pcap).unwrap();
        // Single cycles, odd windows and long windows.
        for _ in 0..300 {
            w.step();
        }
        w.step_n(7);
        w.run_until(|w| w.cycles() >= 1000, 10_000).unwrap();
        w.step_n(40_000);
        w.finish().unwrap();
        assert_eq!(w.threads(), threads.min(nics));
        let bytes = std::fs::read(&pcap).unwrap();
        let _ = std::fs::remove_file(&pcap);
        let rx: Vec<Received> = seen.iter().map(|s| s.lock().unwrap().rx.clone()).collect();
        (rx, w.link_reports(), bytes, w.cycles())
    };
    for nics in [2, 4] {
        let one = run(1, nics);
        let two = run(2, nics);
        assert!(one.0.iter().all(|r| r.len() > 200), "traffic flowed");
        assert_eq!(one, two, "{nics} NICs");
    }
}
