#!/usr/bin/env bash
# The main job: two simulated rnic NICs, an RDMA WRITE bandwidth run (perftest-style), every
# byte checked. Extra arguments go to `rnic perf write` (try --size 4096 --iters 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
command -v cargo >/dev/null || { echo "demo: cargo is required (Rust toolchain)" >&2; exit 1; }
cargo run -q --release --bin rnic -- perf write "$@"
