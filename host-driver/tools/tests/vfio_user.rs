//! Issue 14's two-process run, as CI runs it: `rnic sim serve --nics 2 --socket-dir D` in one
//! process, `rnic perf write --device vfio-user:D/nic1.sock --json` (server) and
//! `rnic perf write --device vfio-user:D/nic0.sock 127.0.0.1 --json` (client) in two others;
//! both must print `"verified": true`. Also the errors a user meets when the socket is wrong.
mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, json_of, wait_output};
use serde_json::Value;

const RNIC: &str = env!("CARGO_BIN_EXE_rnic");

/// `rnic sim serve`, stopped (SIGTERM to its own pid) when dropped.
struct Serve(Child);

impl Serve {
    fn start(dir: &Path, extra: &[&str]) -> Serve {
        let child = Command::new(RNIC)
            .args(["sim", "serve", "--nics", "2", "--socket-dir", dir.to_str().unwrap()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rnic sim serve");
        let serve = Serve(child);
        let t = Instant::now();
        while !(dir.join("nic0.sock").exists() && dir.join("nic1.sock").exists()) {
            assert!(t.elapsed() < Duration::from_secs(120), "the sockets did not appear");
            std::thread::sleep(Duration::from_millis(50));
        }
        serve
    }

    /// Stops the server and returns what it printed.
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on the pid of our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
        let mut out = String::new();
        if let Some(mut o) = self.0.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        out
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs one two-sided test: (server report, client report).
fn two_sided(dir: &Path, op: &str, args: &[&str]) -> (Value, Value) {
    let port = free_port().to_string();
    let dev = |k: usize| format!("vfio-user:{}", dir.join(format!("nic{k}.sock")).display());
    let server = Command::new(RNIC)
        .args(["perf", op, "--device", &dev(1), "--json", "-p", &port])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client = Command::new(RNIC)
        .args(["perf", op, "--device", &dev(0), "127.0.0.1", "--json", "-p", &port])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let c = wait_output(client, Duration::from_secs(300));
    let s = wait_output(server, Duration::from_secs(60));
    (json_of(&s), json_of(&c))
}

#[test]
fn perf_write_between_two_processes_over_vfio_user_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    let (s, c) = two_sided(dir.path(), "write", &["--size", "8192", "--iters", "40"]);
    assert_eq!(s["verified"], true, "server: {s}");
    assert_eq!(c["verified"], true, "client: {c}");
    assert_eq!((s["role"].as_str(), c["role"].as_str()), (Some("server"), Some("client")));
    assert_eq!(c["completed"].as_u64(), Some(40));
    assert_eq!(c["sim_clock"], true, "the client measures in simulated cycles: {c}");
    assert!(c["cycles"].as_u64().unwrap() > 0 && c["gbps"].as_f64().unwrap() > 0.0, "{c}");
    assert_eq!(s["gbps"], c["gbps"], "the server shows the client's figure from the report exchange");
    // The two NICs saw each other's frames: 40 WRITEs of 2 packets at MTU 4096 each way.
    assert_eq!(s["counters"]["rx_roce_ok"].as_u64(), Some(80), "{s}");
    assert_eq!(c["counters"]["rx_acks"].as_u64().map(|a| a > 0), Some(true), "{c}");
    assert_eq!(c["interrupt_vectors"].as_u64(), Some(32), "MSI-X vectors bound to eventfds");
    // Both sides' endpoints agree.
    assert_eq!(s["local"]["qpn"], c["remote"]["qpn"]);
    assert_eq!(s["remote"]["qpn"], c["local"]["qpn"]);
    // A second run on the same server: the NICs were reset when the first clients left.
    let (s2, c2) = two_sided(dir.path(), "read", &["--size", "3000", "--iters", "10"]);
    assert_eq!(c2["verified"], true, "read client: {c2}");
    assert_eq!(s2["verified"], true, "read server: {s2}");
    let out = serve.stop();
    assert!(out.contains("cycles/s") && out.contains("sim/wall time"), "serve prints its speed at exit: {out}");
}

#[test]
fn wrong_sockets_get_a_message_and_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nic0.sock");
    let o = Command::new(RNIC)
        .args(["perf", "write", "--device", &format!("vfio-user:{}", missing.display())])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no vfio-user socket") && err.contains("hint:") && err.contains("rnic sim serve"), "{err}");
    // A socket file nobody listens on.
    let refused = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&refused).unwrap());
    let o =
        Command::new(RNIC).args(["info", "--device", &format!("vfio-user:{}", refused.display())]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("connection refused") && err.contains("hint:"), "{err}");
    // A bad device string and a HOST without --device are usage errors.
    let o = Command::new(RNIC).args(["info", "--device", "pcie:3"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad device string"), "{o:?}");
    let o = Command::new(RNIC).args(["perf", "write", "127.0.0.1"]).env_remove("RNIC_DEVICE").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    // Two-sided runs refuse what they do not do yet, before touching a device.
    let o = Command::new(RNIC).args(["perf", "send", "--device", "vfio-user:/x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("only write and read"), "{o:?}");
}

/// The latency tests run two-sided too: write-lat and send-lat with both sides active (the
/// server answers every message after checking it), read-lat and atomic-lat with a passive
/// server; each side verifies what it received and measures on the simulator's clock.
#[test]
fn latency_tests_between_two_processes_over_vfio_user_verify() {
    let dir = tempfile::tempdir().unwrap();
    let _serve = Serve::start(dir.path(), &[]);
    for op in ["write-lat", "send-lat", "read-lat", "atomic-lat"] {
        let size = if op == "atomic-lat" { "8" } else { "300" };
        let (s, c) = two_sided(dir.path(), op, &["--size", size, "--iters", "20"]);
        assert_eq!(c["verified"], true, "{op} client: {c}");
        assert_eq!(s["verified"], true, "{op} server: {s}");
        assert_eq!((c["role"].as_str(), c["op"].as_str()), (Some("client"), Some(op)));
        assert_eq!(c["completed"].as_u64(), Some(20), "{c}");
        assert_eq!(c["sim_clock"], true, "{c}");
        // The server of a ping-pong samples the gaps between the 20 messages it answered.
        let server_samples = if op == "read-lat" || op == "atomic-lat" { 0 } else { 19 };
        assert_eq!(s["completed"].as_u64(), Some(server_samples), "{s}");
        let (lo, mid, hi) =
            (c["t_min_us"].as_f64().unwrap(), c["t_typical_us"].as_f64().unwrap(), c["t_max_us"].as_f64().unwrap());
        assert!(0.0 < lo && lo <= mid && mid <= hi, "{c}");
    }
}

/// The typical (median) cycles of stage `name` in a report's `stages` list.
fn stage_typical(stages: &Value, name: &str) -> f64 {
    stages["stages"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == name))
        .and_then(|s| s["cycles"]["typical"].as_f64())
        .unwrap_or_else(|| panic!("no stage {name} in {stages}"))
}

/// The per-stage breakdown across processes (issue 14: doorbell → first TX beat per backend):
/// `rnic sim serve --pcap` captures the wire, both sides of a vfio-user write-lat write their
/// stamps, and `rnic perf stages` joins them. The stages inside the NICs and on the wire are
/// the in-process run's (the same RTL and link model); the doorbell stage, which includes the
/// doorbell's trip from the host to the NIC, lands within 10 cycles of it.
#[test]
fn per_stage_latency_across_processes_matches_the_in_process_run() {
    let one = json_of(
        &Command::new(RNIC).args(["perf", "write-lat", "--size", "64", "--iters", "50", "--json"]).output().unwrap(),
    );
    assert_eq!(one["verified"], true, "{one}");
    let dir = tempfile::tempdir().unwrap();
    let (pcap, c_st, s_st) = (dir.path().join("wire.pcap"), dir.path().join("c.json"), dir.path().join("s.json"));
    let serve = Serve::start(dir.path(), &["--pcap", pcap.to_str().unwrap()]);
    let port = free_port().to_string();
    let side = |k: usize, stamps: &Path, host: Option<&str>| {
        let dev = format!("vfio-user:{}", dir.path().join(format!("nic{k}.sock")).display());
        Command::new(RNIC)
            .args(["perf", "write-lat", "--device", &dev, "--json", "-p", &port, "--size", "64", "--iters", "50"])
            .args(["--stamps", stamps.to_str().unwrap()])
            .args(host)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let server = side(1, &s_st, None);
    let client = side(0, &c_st, Some("127.0.0.1"));
    let c = json_of(&wait_output(client, Duration::from_secs(300)));
    let s = json_of(&wait_output(server, Duration::from_secs(60)));
    assert_eq!((c["verified"].clone(), s["verified"].clone()), (Value::Bool(true), Value::Bool(true)), "{c}\n{s}");
    serve.stop();
    let out = Command::new(RNIC)
        .args(["perf", "stages", "--json", "--pcap", pcap.to_str().unwrap()])
        .args(["--stamps", c_st.to_str().unwrap(), "--stamps", s_st.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = json_of(&out);
    assert_eq!(st["unmatched"], 0, "{st}");
    let db = st["stages"][0].clone();
    assert_eq!(
        (db["name"].as_str(), db["cycles"]["samples"].as_u64()),
        (Some("doorbell_to_tx_first_beat_est"), Some(100)),
        "every message of both sides measured: {st}"
    );
    for name in ["wire", "responder", "response_wire"] {
        assert_eq!(stage_typical(&st, name), stage_typical(&one["stages"], name), "{name}: {st}");
    }
    let (split, whole) = (
        stage_typical(&st, "doorbell_to_tx_first_beat_est"),
        stage_typical(&one["stages"], "doorbell_to_tx_first_beat_est"),
    );
    assert!((split - whole).abs() <= 10.0, "doorbell → first TX beat: {split} over vfio-user, {whole} in process");
    // A stamps file of another run is refused.
    let other = dir.path().join("other.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&s_st).unwrap()).unwrap();
    v["size"] = 128.into();
    std::fs::write(&other, v.to_string()).unwrap();
    let bad = Command::new(RNIC)
        .args(["perf", "stages", "--pcap", pcap.to_str().unwrap()])
        .args(["--stamps", c_st.to_str().unwrap(), "--stamps", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("different runs"), "{bad:?}");
}
