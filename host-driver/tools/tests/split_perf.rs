//! Issue 14's split run: `rnic perf write --seed 7 --loss 0.01` as two processes, the server
//! and the client each with its own in-process NIC (`--device sim-port:…`), the two NICs joined
//! by a SimBricks link. It must verify, give the same cycles, frames and counters on two runs,
//! and land within 1 % of the one-process run's cycles (on a synchronised link it lands on the
//! same frames: each process draws the faults of its own NIC's wire as the one-process world
//! draws them). The latency tools run split the same way.
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{free_port, json_of, wait_output};
use serde_json::Value;

const RNIC: &str = env!("CARGO_BIN_EXE_rnic");
/// The command; `--iters 100` is the default, written out so the test says what it runs.
const ARGS: [&str; 7] = ["--seed", "7", "--loss", "0.01", "--iters", "100", "--json"];
/// A seed whose losses include one only the ACK timer finds (a message's last packet), so the
/// timers' phase matters. (Seed 1 did until stop 32: dropping stale queued packets after a
/// rewind changed which frames the wire's losses hit; seeds 3, 6 and 12 each time out once.)
const TIMEOUT_ARGS: [&str; 7] = ["--seed", "3", "--loss", "0.02", "--iters", "100", "--json"];

/// One split run of `rnic perf OP` over a SimBricks link whose socket is in `dir`: (server
/// report, client report).
fn split_run(dir: &Path, op: &str, args: &[&str]) -> (Value, Value) {
    let port = free_port().to_string();
    let sock = dir.join("link.sock");
    let spawn = |device: String, host: Option<&str>| {
        Command::new(RNIC)
            .args(["perf", op, "--device", &device, "-p", &port])
            .args(host)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let server = spawn(format!("sim-port:simbricks-listen:{}", sock.display()), None);
    let client = spawn(format!("sim-port:simbricks:{}", sock.display()), Some("127.0.0.1"));
    let c = wait_output(client, Duration::from_secs(300));
    let s = wait_output(server, Duration::from_secs(60));
    (json_of(&s), json_of(&c))
}

/// Two split runs with `args`, each checked; returns their (server, client) reports.
fn two_split_runs(args: &[&str]) -> Vec<(Value, Value)> {
    let mut runs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let (s, c) = split_run(dir.path(), "write", args);
        for r in [&s, &c] {
            assert_eq!(r["verified"], true, "{r}");
            assert_eq!(r["device"].as_str().unwrap().split(':').next(), Some("sim-port"), "{r}");
        }
        assert_eq!(c["role"], "client");
        assert_eq!(c["completed"], 100, "{c}");
        assert_eq!(s["cycles"], c["cycles"], "the server shows the client's figure from the report exchange");
        runs.push((s, c));
    }
    let ((s1, c1), (s2, c2)) = (&runs[0], &runs[1]);
    assert_eq!(c1["cycles"], c2["cycles"], "two split runs, the same cycles");
    assert_eq!(c1["counters"], c2["counters"], "two split runs, the same client NIC counters");
    assert_eq!(s1["counters"], s2["counters"], "two split runs, the same server NIC counters");
    runs
}

#[test]
fn perf_write_split_over_a_simbricks_link_is_deterministic_and_matches_one_process() {
    let one = Command::new(RNIC).args(["perf", "write"]).args(ARGS).output().unwrap();
    let one = json_of(&one);
    assert_eq!(one["verified"], true, "{one}");
    // 1 % loss must have cost something, or the comparison says little.
    assert!(one["retransmits"].as_u64().unwrap() > 0, "{one}");

    let runs = two_split_runs(&ARGS);
    let (s1, c1) = &runs[0];

    // The issue asks for 1 %; a synchronised link with cycle-exact ends gives the same cycle.
    assert_eq!(c1["cycles"], one["cycles"], "split vs one process: the same cycles");
    // The same faults hit the same frames: each NIC sent and received what it did in one process.
    assert_eq!(c1["counters"], one["counters"]["client"], "client NIC: split vs one process");
    assert_eq!(s1["counters"], one["counters"]["server"], "server NIC: split vs one process");
}

#[test]
fn a_split_run_that_times_out_is_deterministic_too() {
    let runs = two_split_runs(&TIMEOUT_ARGS);
    let c = &runs[0].1;
    assert!(c["counters"]["timeouts"].as_u64().unwrap() >= 1, "the seed no longer loses a last packet: {c}");
}

/// The latency tools over the same link: every sample verified, the same figures on two runs,
/// the fastest sample within one cycle (4 ns) of the one-process run's and a median within 1 %
/// of its median (write-lat: 1.252 and 1.257 µs split against 1.252 and 1.252 in one process;
/// read-lat at stop 28: a fastest sample of 2.016 µs split against 2.012: the ping-pong's two
/// sides poll in separate worlds, a host every cycle or two).
#[test]
fn latency_tools_split_over_a_simbricks_link_are_deterministic() {
    const LAT_ARGS: [&str; 3] = ["--iters", "100", "--json"];
    for op in ["write-lat", "read-lat"] {
        let one = json_of(&Command::new(RNIC).args(["perf", op]).args(LAT_ARGS).output().unwrap());
        assert_eq!(one["verified"], true, "{one}");
        let mut typical = Vec::new();
        for _ in 0..2 {
            let dir = tempfile::tempdir().unwrap();
            let (s, c) = split_run(dir.path(), op, &LAT_ARGS);
            for r in [&s, &c] {
                assert_eq!(r["verified"], true, "{op}: {r}");
            }
            assert_eq!(c["role"], "client");
            assert_eq!(c["completed"], 100, "{op}: {c}");
            typical.push((c["t_min_us"].clone(), c["t_typical_us"].clone(), c["t_max_us"].clone()));
        }
        assert_eq!(typical[0], typical[1], "{op}: two split runs, the same latencies");
        let (split_min, whole_min) = (typical[0].0.as_f64().unwrap(), one["t_min_us"].as_f64().unwrap());
        assert!(
            (split_min - whole_min).abs() <= 0.004 + 1e-9,
            "{op}: the fastest sample, split {split_min} µs vs one process {whole_min} µs"
        );
        let (split, whole) = (typical[0].1.as_f64().unwrap(), one["t_typical_us"].as_f64().unwrap());
        assert!((split - whole).abs() <= 0.01 * whole, "{op}: split {split} µs vs one process {whole} µs");
    }
}
