#!/usr/bin/env bash
# The benchmark anchors of docs/performance.md: ten `rnic perf` runs whose cycle counts a
# change that claims "behaviour unchanged" must leave exactly as they were.
#
#   scripts/anchors.sh [OUT_DIR]     # default target/anchors; two runs at a time, ~5 min
#
# Prints one row per run: name, simulated cycles, Mpps, Gb/s, verified (for write-lat: the
# whole run's cycles, the typical latency and the doorbell → first TX beat stage, in cycles). Each run's JSON stays in OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/anchors}
mkdir -p "$out"
cargo build -q --release --bin rnic
rnic=target/release/rnic
pl=(--post-list 16 --cq-mod 16)
run() {
  local name=$1
  shift
  "$rnic" perf "$@" --json >"$out/$name.json" 2>"$out/$name.err"
}
run write64 write --size 64 --iters 20000 --qps 8 "${pl[@]}" &
run inline64 write --size 64 --iters 20000 --qps 8 "${pl[@]}" --inline-size 64
wait
run inline64-1qp write --size 64 --iters 20000 --qps 1 "${pl[@]}" --inline-size 64 &
run inline200 write --size 200 --iters 20000 --qps 8 "${pl[@]}" --inline-size 220
wait
run read64 read --size 64 --iters 20000 --qps 8 "${pl[@]}" &
run atomic atomic --qps 8 "${pl[@]}" --tx-depth 64 --iters 4000
wait
run send64 send --size 64 --iters 20000 --qps 8 "${pl[@]}" &
run read1k read --size 1024 --iters 4000 --qps 2
wait
run write64k write --size 65536 --iters 200 &
run write-lat write-lat --size 64 --iters 1000
wait
python3 - "$out" <<'EOF'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
names = ["write64", "inline64", "inline64-1qp", "inline200", "read64", "atomic", "send64",
         "read1k", "write64k", "write-lat"]
print(f"{'anchor':<14}{'cycles':>10}{'Mpps':>9}{'Gb/s':>9}  verified")
for n in names:
    d = json.loads((out / f"{n}.json").read_text())
    if n == "write-lat":
        # The whole run, the typical latency and the doorbell → first TX beat stage.
        st = {x["name"]: x["cycles"] for x in d["stages"]["stages"]}
        first = st["doorbell_to_tx_first_beat_est"]["max"]
        print(f"{n:<14}{d['run_cycles']:>10}{'':>9}{'':>9}  {d['verified']}"
              f"  latency {d['cycles']['typical']:.0f}, doorbell -> first TX beat {first:.0f}")
        continue
    print(f"{n:<14}{d['cycles']:>10}{d['mpps']:>9.2f}{d['gbps']:>9.2f}  {d['verified']}")
EOF
