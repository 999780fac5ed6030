#!/usr/bin/env bash
# Soak of the seeded test classes (issue 12): the randomized load test
# (firmware-tests/tests/random_load.rs), the requester fuzz (requester_fuzz.rs) and the
# responder fuzz (responder_fuzz.rs) over many seeds, then a summary table: seeds run, passed, failed (with their seeds), wall time.
# Not run by CI (CI runs each class's first seeds through `cargo test`).
#
# Usage: scripts/soak.sh [SEEDS [START]] [--with-ignored]
#   SEEDS   seeds per class (default 200)
#   START   first seed (default 1000; CI runs the seeds from 0)
#   --with-ignored  also run every #[ignore]d test of the command tests of issue 12
#                   (host-driver/tools/tests/issue12_commands.rs; none is ignored since
#                   stop 27, so this runs the whole file again, as CI does)
# Environment: JOBS (default 2) seed ranges run at once per class.
# Replay a failed seed:  RNIC_SEED=n cargo test --release -p rnic-firmware-tests --test CLASS -- --nocapture
# Logs: target/soak/CLASS-START-SEEDS.part*.log
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=200
start=1000
ignored=0
pos=()
for a in "$@"; do
    case "$a" in
        --with-ignored) ignored=1 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) pos+=("$a") ;;
    esac
done
[ "${#pos[@]}" -ge 1 ] && seeds=${pos[0]}
[ "${#pos[@]}" -ge 2 ] && start=${pos[1]}
jobs=${JOBS:-2}
case "$seeds$start$jobs" in *[!0-9]*) echo "soak: SEEDS, START and JOBS are numbers" >&2; exit 2 ;; esac
if [ "$seeds" -lt 1 ] || [ "$jobs" -lt 1 ]; then echo "soak: SEEDS and JOBS must be at least 1" >&2; exit 2; fi

echo "soak: building the tests"
classes=(random_load requester_fuzz responder_fuzz)
targets=()
for c in "${classes[@]}"; do targets+=(--test "$c"); done
cargo test --release -p rnic-firmware-tests "${targets[@]}" --no-run >/dev/null 2>&1 \
    || cargo test --release -p rnic-firmware-tests "${targets[@]}" --no-run

mkdir -p target/soak
rows=()
total_failed=0
for class in "${classes[@]}"; do
    t0=$(date +%s)
    per=$(( (seeds + jobs - 1) / jobs ))
    pids=()
    logs=()
    for ((j = 0; j < jobs; j++)); do
        s=$((start + j * per))
        n=$per
        [ $((s + n)) -gt $((start + seeds)) ] && n=$((start + seeds - s))
        [ "$n" -le 0 ] && continue
        log="target/soak/${class}-${start}-${seeds}.part${j}.log"
        logs+=("$log")
        echo "soak: $class seeds $s..$((s + n - 1)) -> $log"
        RNIC_SEEDS=$n RNIC_SEED_START=$s cargo test --release -q -p rnic-firmware-tests --test "$class" \
            "${class}_seeds" -- --exact --nocapture >"$log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    t1=$(date +%s)
    ok=$(cat "${logs[@]}" | grep -c '^SEED [0-9]* ok' || true)
    failed=$(cat "${logs[@]}" | grep '^SEED [0-9]* FAIL' | awk '{print $2}' | sort -n | tr '\n' ' ' || true)
    nfail=$(echo "$failed" | wc -w)
    run=$((ok + nfail))
    total_failed=$((total_failed + nfail))
    rows+=("$(printf '%-16s %6d %6d %6d %8ds  %s' "$class" "$run" "$ok" "$nfail" $((t1 - t0)) "${failed:--}")")
    if [ "$run" -ne "$seeds" ]; then
        rows+=("$(printf '%-16s %s' "" "(only $run of $seeds seeds reported: a seed crashed the test process? see the logs)")")
    fi
done

if [ "$ignored" = 1 ]; then
    t0=$(date +%s)
    log="target/soak/issue12_commands-ignored.log"
    echo "soak: the command tests, ignored ones included -> $log"
    cargo test --release -p rnic-tools --test issue12_commands -- --include-ignored >"$log" 2>&1 || true
    t1=$(date +%s)
    ok=$(grep -c '^test .* ok$' "$log" || true)
    failed=$(grep '^test .* FAILED$' "$log" | awk '{print $2}' | tr '\n' ' ' || true)
    nfail=$(echo "$failed" | wc -w)
    total_failed=$((total_failed + nfail))
    rows+=("$(printf '%-16s %6d %6d %6d %8ds  %s' "cmds --ignored" $((ok + nfail)) "$ok" "$nfail" $((t1 - t0)) "${failed:--}")")
fi

echo
printf '%-16s %6s %6s %6s %9s  %s\n' "class" "run" "passed" "failed" "wall" "failed seeds (tests)"
for r in "${rows[@]}"; do echo "$r"; done
echo
echo "seeds $start..$((start + seeds - 1)) per class, $jobs at once; replay one with"
echo "  RNIC_SEED=n cargo test --release -p rnic-firmware-tests --test CLASS -- --nocapture"
[ "$total_failed" -eq 0 ]
