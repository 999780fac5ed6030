//! Helpers of the tests that run `rnic` as several processes (`vfio_user.rs`, `split_perf.rs`).
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A free TCP port on 127.0.0.1 (for perftest's exchange).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits for `child` for at most `limit` (then kills it) and returns its output.
pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The JSON report on the last line of `o`'s stdout; panics with both streams if it is not one.
pub fn json_of(o: &Output) -> Value {
    let s = String::from_utf8_lossy(&o.stdout);
    let line = s.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("not JSON ({e}): stdout {s} stderr {}", String::from_utf8_lossy(&o.stderr)))
}
