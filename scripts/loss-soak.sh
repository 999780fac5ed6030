#!/usr/bin/env bash
# Issue 13 part 4, the loss soak at 10^6 packets, as a benchmark (not run by CI; CI runs the
# 10^5-packet soaks of host-driver/tools/tests/perf_cli.rs for WRITE, SEND and READ).
#
# Three `rnic perf write` runs over 62 QPs (all the NIC has but QPN 0 and 1) on a wire that
# loses, reorders and duplicates 1 % of the frames in each direction, 10^6 request packets in all:
#   64 B messages (1 packet each)      400 000 packets
#   4 KiB messages at MTU 256 (16)      400 000 packets
#   64 KiB messages at MTU 1024 (64)    200 000 packets
# Each run must verify every byte of every message, complete every work request, and the
# responder must accept each request packet exactly once (rx_roce_ok = packets; duplicates and
# packets behind a gap are counted apart); the default budget fails a run that stalls.
# Prints one row per run and the totals.
#
#   scripts/loss-soak.sh [--seed N] [--rnic PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
seed=7 rnic=''
while [ $# -gt 0 ]; do
  case $1 in
  --seed) seed=$2 ;;
  --rnic) rnic=$2 ;;
  *) echo "usage: scripts/loss-soak.sh [--seed N] [--rnic PATH]" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -z "$rnic" ]; then
  cargo build --release -p rnic-tools --bin rnic >&2
  rnic=$PWD/target/release/rnic
fi
out=$(mktemp -d /tmp/rnic-loss-soak.XXXXXX)
faults=(--loss 0.01 --reorder 0.01 --dup 0.01 --seed "$seed" --qps 62)
total=0 failed=0 t_all=$SECONDS
printf '%-24s %9s %9s %12s %10s %8s %8s %7s %s\n' run messages packets rx_roce_ok duplicates retrans cycles wall result
for spec in "64 400000 4096 1" "4096 25000 256 16" "65536 3125 1024 64"; do
  read -r size iters mtu per <<<"$spec"
  packets=$((iters * per))
  t0=$SECONDS
  "$rnic" perf write --json --size "$size" --iters "$iters" --mtu "$mtu" "${faults[@]}" \
    >"$out/$size.json" 2>"$out/$size.err" || true
  line=$(python3 - "$out/$size.json" "$iters" "$packets" <<'PY'
import json, sys
try:
    v = json.loads(open(sys.argv[1]).read().splitlines()[-1])
except Exception as e:
    print(f"0 0 0 0 FAIL(no report: {e})"); sys.exit()
iters, packets = int(sys.argv[2]), int(sys.argv[3])
s = v["counters"]["server"]
ok = v.get("verified") and v.get("completed") == iters and s["rx_roce_ok"] == packets
why = [] if ok else [k for k, bad in [("verified", not v.get("verified")), ("completed", v.get("completed") != iters),
                                       ("rx_roce_ok", s["rx_roce_ok"] != packets)] if bad]
print(s["rx_roce_ok"], s["rx_duplicates"], v.get("retransmits", 0), v.get("cycles", 0),
      "PASS" if ok else "FAIL(" + ",".join(why) + ")")
PY
)
  read -r roce dups retx cycles result <<<"$line"
  printf '%-24s %9s %9s %12s %10s %8s %8s %6ss %s\n' "${size} B at MTU ${mtu}" "$iters" "$packets" "$roce" "$dups" \
    "$retx" "$cycles" "$((SECONDS - t0))" "$result"
  total=$((total + packets))
  [ "$result" = PASS ] || failed=1
done
echo "loss-soak: $total request packets, $((SECONDS - t_all)) s wall; reports in $out"
[ "$failed" = 0 ] || { echo "loss-soak: FAILED" >&2; exit 1; }
