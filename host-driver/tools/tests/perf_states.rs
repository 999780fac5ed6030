//! `rnic perf … --state-profile`: the cycles of the measured run, per state of each NIC's TX
//! scheduler and RX engine, as the JSON report gives them.
use serde_json::Value;
use std::process::Command;

fn perf(op: &str, args: &[&str]) -> Value {
    let out =
        Command::new(env!("CARGO_BIN_EXE_rnic")).args(["perf", op, "--json"]).args(args).output().expect("run rnic");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "rnic perf {op} {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The cycles of `state` in `states` (0 if absent).
fn cycles_in(states: &Value, state: &str) -> u64 {
    states.as_array().unwrap().iter().find(|s| s["state"] == state).map_or(0, |s| s["cycles"].as_u64().unwrap())
}

/// Every cycle of the measured run (first post to last completion) is counted once per engine
/// of each NIC, in the busiest-first order with shares adding up to 1; and the states are the
/// roles' own: the requester's scheduler issues each 64-byte WRITE in an `IssuePacket` cycle,
/// the responder decides each request in a `Decide` cycle, and the responder's scheduler,
/// which sends no requests, stays `Idle`. Without the flag the field is null.
#[test]
fn the_state_profile_counts_every_cycle_of_the_run_in_its_roles_states() {
    let iters = 1600u64;
    let v = perf(
        "write",
        &["--size", "64", "--iters", "1600", "--qps", "2", "--post-list", "16", "--cq-mod", "16", "--state-profile"],
    );
    assert_eq!(v["verified"], true, "{v}");
    let cycles = v["cycles"].as_u64().unwrap();
    let p = &v["state_profile"];
    for nic in ["client", "server"] {
        assert_eq!(p[nic]["cycles"].as_u64(), Some(cycles), "{nic}: {p}");
        for engine in ["tx_scheduler", "rx_engine"] {
            let states = p[nic][engine].as_array().unwrap();
            let sum: u64 = states.iter().map(|s| s["cycles"].as_u64().unwrap()).sum();
            assert_eq!(sum, cycles, "{nic} {engine}: {states:?}");
            let share: f64 = states.iter().map(|s| s["share"].as_f64().unwrap()).sum();
            assert!((share - 1.0).abs() < 1e-9, "{nic} {engine}: shares add up to {share}");
            let c: Vec<u64> = states.iter().map(|s| s["cycles"].as_u64().unwrap()).collect();
            assert!(c.windows(2).all(|w| w[0] >= w[1]), "{nic} {engine} not busiest first: {c:?}");
        }
    }
    assert!(cycles_in(&p["client"]["tx_scheduler"], "IssuePacket") >= iters, "{p}");
    assert!(cycles_in(&p["server"]["rx_engine"], "Decide") >= iters, "{p}");
    let server_tx = p["server"]["tx_scheduler"].as_array().unwrap();
    assert_eq!((server_tx.len(), server_tx[0]["state"].as_str()), (1, Some("Idle")), "{server_tx:?}");

    let plain = perf("write", &["--size", "64", "--iters", "64"]);
    assert!(plain["state_profile"].is_null(), "{plain}");
}
