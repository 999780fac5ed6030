//! Seeded test classes (the randomized load test, the requester fuzz): which seeds to run and
//! how a failing seed is reported so that it can be replayed.
//!
//! - `RNIC_SEED=n` runs seed `n` only;
//! - otherwise `RNIC_SEEDS=N` seeds (default: the test's own CI count) starting at
//!   `RNIC_SEED_START` (default 0) are run.
//!
//! Each seed runs on its own simulated world; a panic in one seed is caught, reported as
//! `SEED <n> FAIL` (after the panic message) and the next seed runs; the test fails at the end
//! listing every failed seed. `scripts/soak.sh` reads the `SEED <n> ok|FAIL` lines.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// The seeds to run: `RNIC_SEED`, or `RNIC_SEEDS` (default `ci_count`) from `RNIC_SEED_START`.
pub fn seeds(ci_count: u64) -> Vec<u64> {
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| v.trim().parse::<u64>().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
    };
    if let Some(s) = var("RNIC_SEED") {
        return vec![s];
    }
    let n = var("RNIC_SEEDS").unwrap_or(ci_count);
    let start = var("RNIC_SEED_START").unwrap_or(0);
    (start..start + n).collect()
}

/// Runs `case` for every seed of [`seeds`]`(ci_count)`, printing `SEED <n> ok <seconds>
/// <summary>` or `SEED <n> FAIL <seconds>` for each, then panics if any failed, naming the
/// seeds and the command that replays one. `case` returns a one-line summary.
pub fn run_seeds(test: &str, ci_count: u64, case: impl Fn(u64) -> String) {
    let mut failed = Vec::new();
    for seed in seeds(ci_count) {
        let t = Instant::now();
        match catch_unwind(AssertUnwindSafe(|| case(seed))) {
            Ok(summary) => println!("SEED {seed} ok {:.1}s {summary}", t.elapsed().as_secs_f64()),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let first = msg.lines().next().unwrap_or("");
                println!("SEED {seed} FAIL {:.1}s {first}", t.elapsed().as_secs_f64());
                failed.push(seed);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{test}: seeds {failed:?} failed (their shapes and messages are printed above); replay one with \
         RNIC_SEED={} cargo test --release -p rnic-firmware-tests --test {test} -- --nocapture",
        failed[0]
    );
}

/// The work-request kinds the seeded classes draw: the seven `ibv_wr_opcode`s the NIC
/// implements (ibv_post_send(3)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Write,
    WriteImm,
    Send,
    SendImm,
    Read,
    FetchAdd,
    CmpSwap,
}

impl Kind {
    /// IBV_WR_ATOMIC_FETCH_AND_ADD or IBV_WR_ATOMIC_CMP_AND_SWP (8 bytes, one PSN).
    pub fn is_atomic(self) -> bool {
        matches!(self, Kind::FetchAdd | Kind::CmpSwap)
    }

    /// It consumes a receive WQE at the responder (a SEND, or a WRITE with immediate).
    pub fn takes_recv(self) -> bool {
        matches!(self, Kind::Send | Kind::SendImm | Kind::WriteImm)
    }
}
