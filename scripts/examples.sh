#!/usr/bin/env bash
# Issue 15's example programs (host-driver/easy/examples, docs/examples.md) as users run them:
# `rnic sim serve --nics 2` serves two simulated NICs, cabled back to back, as vfio-user
# sockets; every server runs as one process on NIC 1 (192.0.2.2) and its client as another on
# NIC 0 (192.0.2.1). The easy-API programs (krdma_*, pool_*) meet in band through the NICs'
# connection managers (IB CM MADs on QP1), the client connecting to 192.0.2.2; rc_pingpong and
# rdma-core's programs meet over TCP on 127.0.0.1, as ibv_rc_pingpong does. Each run's exit
# codes and key output lines are checked;
# a table gives program, roles, result and a key figure. Exits 1 if any run failed.
#
#   scripts/examples.sh            # builds the examples (release) if needed, then runs them
#   KEEP=1 scripts/examples.sh     # keep the logs directory
set -euo pipefail
cd "$(dirname "$0")/.."

RNIC=target/release/rnic
EX=target/release/examples
# scripts/test.sh sets EXAMPLES_PREBUILT=1: `cargo test --workspace --release` has just built
# the `rnic` binary and the examples (cargo test builds examples), with the workspace's feature
# set; building them again per package could pick other features and recompile.
# librnic (a drop-in libibverbs.so.1) lets Debian's unmodified ibv_rc_pingpong face ours; the
# workspace build gives its `rnic` the vfio-user backend (feature unification), a build of it
# alone needs the feature named.
LIBRNIC=target/release/libibverbs.so
if [ -z "${EXAMPLES_PREBUILT:-}" ] || [ ! -x "$RNIC" ] || [ ! -x "$EX/rc_pingpong" ]; then
    cargo build --release -q -p rnic-tools --bin rnic
    cargo build --release -q -p rnic-easy --examples
    cargo build --release -q -p librnic --features rnic/vfio-user,rnic/vfio -p librnic-mlx5-stub -p librnic-efa-stub
elif [ -f target/release/deps/libibverbs.so ]; then
    # cargo test leaves the cdylib in deps/.
    LIBRNIC=target/release/deps/libibverbs.so
fi

DIR=$(mktemp -d /tmp/rnic-examples.XXXXXX)
SERVE_PID=
cleanup() {
    if [ -n "$SERVE_PID" ]; then kill -TERM "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
    if [ -z "${KEEP:-}" ]; then rm -rf "$DIR"; else echo "logs in $DIR"; fi
}
trap cleanup EXIT

T0=$(date +%s%N)
"$RNIC" sim serve --nics 2 --socket-dir "$DIR" >"$DIR/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 600); do
    [ -S "$DIR/nic0.sock" ] && [ -S "$DIR/nic1.sock" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$DIR/serve.log" >&2; echo "examples: rnic sim serve exited" >&2; exit 1; }
    sleep 0.1
done
[ -S "$DIR/nic1.sock" ] || { echo "examples: the vfio-user sockets did not appear" >&2; exit 1; }
NIC0="vfio-user:$DIR/nic0.sock"
NIC1="vfio-user:$DIR/nic1.sock"
# Ports (CM service ports of the easy-API runs, TCP ports of the others): one per run, away
# from perftest's 18515.
PORT=$((20000 + $$ % 20000))

ROWS=()
FAILED=0
row() { ROWS+=("$(printf '%-16s %-34s %-5s %s' "$1" "$2" "$3" "$4")"); }

# check FILE REGEX...: every extended regex matches a line of FILE.
check() {
    local f=$1
    shift
    for re in "$@"; do
        grep -Eq -- "$re" "$f" || { echo "examples: $(basename "$f") lacks /$re/" >&2; return 1; }
    done
}

# pair NAME SERVER-CMD CLIENT-CMD SERVER-REGEXES CLIENT-REGEXES FIGURE-SED [ROLES [server]]
# (the key figure is the first FIGURE-SED match in the client's output, then the server's; with
# a last argument `server`, the other way round)
# (the regex lists are strings separated by ';;').
pair() {
    local name=$1 scmd=$2 ccmd=$3 sre=$4 cre=$5 fig=$6 roles=${7:-server nic1 / client nic0} from=${8:-client}
    local s="$DIR/$name.server" c="$DIR/$name.client" ok=PASS
    echo "\$ $scmd" >"$s.cmd"
    echo "\$ $ccmd" >"$c.cmd"
    timeout 180 bash -c "$scmd" >"$s" 2>&1 &
    local spid=$!
    local crc=0 src=0
    timeout 180 bash -c "$ccmd" >"$c" 2>&1 || crc=$?
    wait "$spid" || src=$?
    if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
        echo "examples: $name exited server $src, client $crc" >&2
        ok=FAIL
    fi
    local IFS_=$IFS
    IFS=';;' read -r -a sres <<<"$sre"
    IFS=';;' read -r -a cres <<<"$cre"
    IFS=$IFS_
    for re in "${sres[@]}"; do [ -z "$re" ] || check "$s" "$re" || ok=FAIL; done
    for re in "${cres[@]}"; do [ -z "$re" ] || check "$c" "$re" || ok=FAIL; done
    local figure
    if [ "$from" = server ]; then
        figure=$(sed -nE "$fig" "$s" "$c" | head -1)
    else
        figure=$(sed -nE "$fig" "$c" "$s" | head -1)
    fi
    row "$name" "$roles" "$ok" "${figure:-?}"
    if [ "$ok" != PASS ]; then
        FAILED=1
        echo "---- $name server ----" >&2; cat "$s" >&2
        echo "---- $name client ----" >&2; cat "$c" >&2
    fi
}

# single NAME ROLES CMD REGEXES FIGURE-SED: one process.
single() {
    local name=$1 roles=$2 cmd=$3 re=$4 fig=$5
    local f="$DIR/$name.out" ok=PASS rc=0
    timeout 180 bash -c "$cmd" >"$f" 2>&1 || rc=$?
    [ "$rc" = 0 ] || { echo "examples: $name exited $rc" >&2; ok=FAIL; }
    local IFS_=$IFS
    IFS=';;' read -r -a res <<<"$re"
    IFS=$IFS_
    for r in "${res[@]}"; do [ -z "$r" ] || check "$f" "$r" || ok=FAIL; done
    if grep -q '^FAIL' "$f"; then ok=FAIL; fi
    local figure
    figure=$(sed -nE "$fig" "$f" | head -1)
    row "$name" "$roles" "$ok" "${figure:-?}"
    [ "$ok" = PASS ] || { FAILED=1; cat "$f" >&2; }
}

single rdmatest "nic0 -> nic1, one process" \
    "$EX/rdmatest --device $NIC0 --peer-device $NIC1" \
    '^Passed: 13/13$;;^PASS bad_rkey: completion status remote access error' 's/^(Passed: .*)$/\1/p'
single rdmatest "sim, looped back, in-process" \
    "$EX/rdmatest --device sim" \
    '^Passed: 13/13$' 's/^(Passed: .*)$/\1/p'

P=$((PORT + 1))
pair krdma_sr "$EX/krdma_sr --device $NIC1 --role server --addr 0.0.0.0:$P" \
    "$EX/krdma_sr --device $NIC0 --role client --addr 192.0.2.2:$P" \
    '^krdma_sr server: 20 messages of 1024 bytes received, verified and echoed$' \
    '^krdma_sr client: 20 round trips of 1024 bytes verified' \
    's/.*verified, ([0-9.]+ us per round trip).*/\1/p'

P=$((PORT + 2))
pair krdma_rw "$EX/krdma_rw --device $NIC1 --role node0 --addr 0.0.0.0:$P" \
    "$EX/krdma_rw --device $NIC0 --role node1 --addr 192.0.2.2:$P" \
    '^krdma_rw server: 16 slots of 1024 bytes written by the client verified$' \
    '^krdma_rw client: 16 WRITE\+READ pairs of 1024 bytes verified.*server verified$' \
    's/.*verified, ([0-9.]+ us per pair).*/WRITE+READ: \1/p'

P=$((PORT + 3))
pair pool_server "$EX/pool_server --device $NIC1 --addr 0.0.0.0:$P" \
    "$EX/pool_client --device $NIC0 --addr 192.0.2.2:$P" \
    '^client 1: doorbell \(IBV_WC_RECV_RDMA_WITH_IMM;;^pool_server: 1 client\(s\), 4 doorbells, 16384 bytes verified, 0 wrong, 6 receives reposted on the SRQ.*, 1 DISCONNECTED$' \
    '^RESP_ALLOC: slices 0\.\.3;;^RESP_FREE: freed; the server verified 16384 bytes, 0 wrong$;;^pool_client: 32 WRITEs of 512 bytes in 4 doorbells' \
    's/^pool_client: .* (4 doorbells), ([0-9]+ bytes verified).*/\1, \2/p'

P=$((PORT + 4))
pair pool_server_ev "$EX/pool_server_ev --device $NIC1 --addr 0.0.0.0:$P" \
    "$EX/pool_client --device $NIC0 --addr 192.0.2.2:$P" \
    '^pool_server_ev: 1 client\(s\), 4 doorbells, 16384 bytes verified, 0 wrong.* 2 send buffers freed on IBV_WC_SEND, [1-9][0-9]* completion events for [0-9]+ completions, 1 DISCONNECTED from [1-9][0-9]* CM fd wakeups$;;^client 1: DISCONNECTED \(RDMA_CM_EVENT_DISCONNECTED\)$' \
    '^connected \(CM\) in [0-9]+ cycles;;^RESP_FREE: freed; the server verified 16384 bytes, 0 wrong$;;^DISCONNECTED \(the server.s DREP\)$' \
    's/^pool_server_ev: .*, ([0-9]+ completion events for [0-9]+ completions), (1 DISCONNECTED) from [0-9]+ CM fd wakeups$/\1; \2 on the CM fd/p'

P=$((PORT + 5))
pair rc_pingpong "$EX/rc_pingpong --device $NIC1 -p $P" \
    "$EX/rc_pingpong --device $NIC0 -p $P 127.0.0.1" \
    '^  local address:  LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.2$;;^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1$;;^819200 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^100 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
    '^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.2$;;^819200 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^100 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
    's/^100 iters in .* = ([0-9.]+ usec\/iter)$/4 KiB: \1/p'

P=$((PORT + 6))
pair rc_pingpong_ev "$EX/rc_pingpong --device $NIC1 -p $P -e --chk -s 1000 -n 50" \
    "$EX/rc_pingpong --device $NIC0 -p $P -e --chk -s 1000 -n 50 127.0.0.1" \
    '^50 iters in' \
    '^100000 bytes in [0-9.]+ seconds;;^50 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
    's/^50 iters in .* = ([0-9.]+ usec\/iter)$/1000 B, events, --chk: \1/p'
for f in "$DIR"/rc_pingpong*; do
    if grep -q 'invalid data' "$f"; then
        echo "examples: $(basename "$f"): --chk found invalid data" >&2
        FAILED=1
    fi
done

# Interoperation with rdma-core's own ibv_rc_pingpong (ibverbs-utils, on librnic), each side
# as the server once.
# (The backend's usage string is compiled in only with the feature.)
if command -v ibv_rc_pingpong >/dev/null && [ -f "$LIBRNIC" ] && grep -aq 'vfio-user:PATH' "$LIBRNIC"; then
    mkdir -p "$DIR/lib"
    ln -sf "$PWD/$LIBRNIC" "$DIR/lib/libibverbs.so.1"
    IBV="LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE"
    P=$((PORT + 7))
    pair rc_pingpong.ibv "$IBV=$NIC1 RNIC_PEER=192.0.2.1,02:00:00:00:00:01 ibv_rc_pingpong -d rnic_0 -g 1 -n 20 -p $P" \
        "$EX/rc_pingpong --device $NIC0 -p $P -n 20 127.0.0.1" \
        '^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1$;;^20 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
        '^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.2$;;^20 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
        's/^20 iters in .* = ([0-9.]+ usec\/iter)$/\1 (ours)/p' "ibv_rc_pingpong nic1 / ours nic0"
    P=$((PORT + 8))
    # rdma-core's client tries the server's TCP port once: wait until ours listens (under load
    # opening the device takes the server longer than the client's start).
    pair ibv.rc_pingpong "$EX/rc_pingpong --device $NIC1 -p $P -n 20" \
        "for i in \$(seq 600); do ss -ltn | grep -q ':$P ' && break; sleep 0.1; done; $IBV=$NIC0 RNIC_PEER=192.0.2.2,02:00:00:00:00:02 ibv_rc_pingpong -d rnic_0 -g 1 -n 20 -p $P 127.0.0.1" \
        '^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1$;;^20 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
        '^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.2$;;^20 iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' \
        's/^20 iters in .* = ([0-9.]+ usec\/iter)$/\1 (ours)/p' "ours nic1 / ibv_rc_pingpong nic0" server
else
    row rc_pingpong.ibv "no ibv_rc_pingpong, or librnic without vfio-user" SKIP "-"
fi

# UD through librnic: Debian's unmodified ibv_ud_pingpong on both sides (UD QPs, an address
# handle of the peer's GID, receives with the 40-byte GRH area), with --chk at 4056 bytes
# (size + 40: one whole page, shared in place) and at 4096 bytes, the largest datagram (one
# MTU; part pages, reached through /proc/self/mem).
if command -v ibv_ud_pingpong >/dev/null && [ -f "$LIBRNIC" ] && grep -aq 'vfio-user:PATH' "$LIBRNIC"; then
    mkdir -p "$DIR/lib"
    ln -sf "$PWD/$LIBRNIC" "$DIR/lib/libibverbs.so.1"
    IBV="LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE"
    UD1="$IBV=$NIC1 RNIC_PEER=192.0.2.1,02:00:00:00:00:01 ibv_ud_pingpong -d rnic_0 -g 1 -n 20"
    UD0="$IBV=$NIC0 RNIC_PEER=192.0.2.2,02:00:00:00:00:02 ibv_ud_pingpong -d rnic_0 -g 1 -n 20"
    UDR='^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.'
    # The client connects once, with no retry, and the server accepts one connection: the client
    # waits until the port is listening (/proc/net/tcp state 0A) rather than probing it.
    listening() { echo "for _ in \$(seq 300); do grep -q ':$(printf %04X "$1") 0*:0000 0A' /proc/net/tcp /proc/net/tcp6 && break; sleep 0.1; done;"; }
    P=$((PORT + 9))
    pair ud_pingpong.ibv "$UD1 -s 4056 -c -e -p $P" "$(listening $P) $UD0 -s 4056 -c -e -p $P 127.0.0.1" \
        "${UDR}1\$;;^162240 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^20 iters in [0-9.]+ seconds" \
        "${UDR}2\$;;^162240 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^20 iters in [0-9.]+ seconds" \
        's/^20 iters in .* = ([0-9.]+ usec\/iter)$/4056 B, --chk, events: \1 wall/p' "ibv_ud_pingpong both sides"
    P=$((PORT + 10))
    pair ud_pingpong.4096 "$UD1 -s 4096 -c -p $P" "$(listening $P) $UD0 -s 4096 -c -p $P 127.0.0.1" \
        "${UDR}1\$;;^163840 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^20 iters in [0-9.]+ seconds" \
        "${UDR}2\$;;^163840 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$;;^20 iters in [0-9.]+ seconds" \
        's/^20 iters in .* = ([0-9.]+ usec\/iter)$/4096 B (one MTU), --chk: \1 wall/p' "ibv_ud_pingpong both sides"
    for f in "$DIR"/ud_pingpong.*; do
        if grep -q 'invalid data' "$f"; then
            echo "examples: $(basename "$f"): ibv_ud_pingpong --chk found invalid data" >&2
            FAILED=1
        fi
    done
else
    row ud_pingpong.ibv "no ibv_ud_pingpong, or librnic without vfio-user" SKIP "-"
fi

# rdma_cm through librnic: Debian's unmodified rping (rdmacm-utils) on both sides, connecting
# in band (CM REQ/REP/RTU on QP1) to nic1's RoCE address, 20 pings verified (-V). The CM's
# timers run on the simulated clock: RNIC_CM_TIMEOUT=6 resends a REQ that reached nic1 before
# its server was listening after ~0.8 ms of simulated time, not rdma_cm's 4.3 s (hours here).
if command -v rping >/dev/null && [ -f "$LIBRNIC" ] && grep -aq 'vfio-user:PATH' "$LIBRNIC"; then
    export RNIC_CM_TIMEOUT=6
    mkdir -p "$DIR/lib"
    ln -sf "$PWD/$LIBRNIC" "$DIR/lib/libibverbs.so.1"
    ln -sf "$PWD/$LIBRNIC" "$DIR/lib/librdmacm.so.1"
    P=$((PORT + 11))
    pair rping.rdmacm "LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC1 rping -s -v -V -C 20 -a 192.0.2.2 -p $P" \
        "sleep 2; LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC0 rping -c -v -V -C 20 -a 192.0.2.2 -p $P" \
        '^server ping data: rdma-ping-19: ' \
        '^ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ;;^ping data: rdma-ping-19: ' \
        's/^(ping data: rdma-ping-19): .*$/\1 (20 verified)/p' "rping both sides (librdmacm)"
    # ucmatose (rdmacm-utils): two connections, 4 messages each way on each.
    P=$((PORT + 12))
    pair ucmatose.rdmacm "LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC1 ucmatose -b 192.0.2.2 -p $P -c 2 -C 4" \
        "sleep 2; LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC0 ucmatose -s 192.0.2.2 -p $P -c 2 -C 4" \
        '^data transfers complete$;;^return status 0$' '^data transfers complete$;;^return status 0$' \
        's/^(return status 0)$/2 connections, 4 messages each: \1/p' "ucmatose both sides (librdmacm)"
    # perftest with its connection and exchange over rdma_cm (-R): no TCP, no RNIC_PEER.
    P=$((PORT + 13))
    # perftest links libmlx5.so.1 and libefa.so.1: librnic's stubs (cargo test leaves them in deps/).
    for l in mlx5 efa; do
        for f in target/release/lib$l.so target/release/deps/lib$l.so; do
            if [ -f "$f" ]; then ln -sf "$PWD/$f" "$DIR/lib/lib$l.so.1"; fi
        done
    done
    pair write_bw.rdmacm "LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC1 ib_write_bw -d rnic_0 -R -p $P -n 20 -F --report_gbits -u 8" \
        "sleep 2; LD_LIBRARY_PATH=$DIR/lib RNIC_DEVICE=$NIC0 ib_write_bw -d rnic_0 -R -p $P -n 20 -F --report_gbits -u 8 192.0.2.2" \
        '^ Data ex. method : rdma_cm' '^ Data ex. method : rdma_cm;;^ 65536 +20 +[0-9.]+ +[0-9.]+' \
        's/^ 65536 +20 +[0-9.]+ +([0-9.]+) .*$/64 KiB x 20: \1 Gb\/s wall/p' "ib_write_bw -R both sides"
    unset RNIC_CM_TIMEOUT
else
    row rping.rdmacm "no rping, or librnic without vfio-user" SKIP "-"
fi

T1=$(date +%s%N)
kill -TERM "$SERVE_PID" 2>/dev/null || true
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=
echo
printf '%-16s %-34s %-5s %s\n' program roles result "key figure"
printf '%s\n' "${ROWS[@]}"
MS=$(((T1 - T0) / 1000000))
printf 'examples: %d runs in %d.%d s wall; %s\n' "${#ROWS[@]}" $((MS / 1000)) $((MS % 1000 / 100)) \
    "$(grep -E 'cycles/s' "$DIR/serve.log" | tail -1)"
exit "$FAILED"
