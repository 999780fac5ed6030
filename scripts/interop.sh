#!/usr/bin/env bash
# rnic against Linux soft-RoCE (issue 16 part 3): one simulated rnic NIC (`rnic sim serve --link
# bridge`) whose Ethernet port is bridged to the virtio-net of one rxe guest (rxe-guest.sh), both
# sides running Debian's unmodified perftest 4.5 / ibv_rc_pingpong / ibv_ud_pingpong: the guest
# on rdma_rxe, the host on librnic (a drop-in libibverbs.so.1 over the rnic driver). For each
# test, direction, MTU and loss it starts a fresh `rnic sim serve` with a wire capture, runs the
# pair, checks both exit codes, dissects the capture with tshark and checks every ICRC, and
# prints one row. See docs/interop.md.
#
#   scripts/interop.sh [--out DIR] [--iters N] [--lat-iters N] [--mtus "1024 4096"]
#                      [--losses "0 0.01"] [--dirs "client server"] [--peer rxe|rnic] [--arp] [--ci] [TEST...]
#
# TEST: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat rc_pingpong ud_pingpong
# rping (default: all; ud_pingpong, being unreliable, and rping, whose CM retries wait seconds
# of simulated time, only without loss; --ci leaves read_lat and send_lat out). --dirs names
# rnic's role: "client" = rnic client, rxe server; "server" = the reverse. --peer rnic runs the same binaries between two
# served rnic NICs cabled back to back, no guest. --ci runs the subset scripts/test.sh runs.
# --arp: no static neighbour on either side (no RNIC_PEER, none in the guest): librnic finds
# the guest's MAC by ARP over rnic's raw Ethernet path (rdma_resolve_addr, ibv_modify_qp,
# ibv_create_ah) and answers the guest's ARP (with --peer rnic: the other NIC's); each row
# counts the ARP replies on the wire.
# Exit status 1 if a run failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
guest=$root/scripts/guest
. "$guest/common.sh"

usage() {
  sed -n '10,21p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

RNIC_IP=192.0.2.1 RNIC_MAC=02:00:00:00:00:01 # nic0.sock's port address (rnic::PortAddr::for_sim_nic(0))
GUEST_IP=192.0.2.2 GUEST_MAC=52:54:00:77:00:02
OUT=${RNIC_INTEROP_OUT:-/tmp/rnic-interop} ITERS=20 LAT_ITERS=20 MTUS="1024 4096" LOSSES="0 0.01"
# A run's timeout: ibv_rc_pingpong's fixed ACK timeout (67 ms of simulated time) makes one lost
# frame cost minutes of wall time (docs/interop.md).
DIRS="client server" TIMEOUT=${RNIC_INTEROP_TIMEOUT:-600} PEER=rxe
tests=()
while [ $# -gt 0 ]; do
  case $1 in
  --out) OUT=$2 && shift ;;
  --iters) ITERS=$2 && shift ;;
  --lat-iters) LAT_ITERS=$2 && shift ;;
  --mtus) MTUS=$2 && shift ;;
  --losses) LOSSES=$2 && shift ;;
  --dirs) DIRS=$2 && shift ;;
  --peer) PEER=$2 && shift ;;
  --arp) ARP=1 ;;
  # No loss in CI, so no minutes-long retransmissions: a stuck run fails after 240 s.
  --ci) MTUS=4096 LOSSES=0 TIMEOUT=${RNIC_INTEROP_TIMEOUT:-240} tests=(write_bw read_bw send_bw atomic_bw write_lat rc_pingpong ud_pingpong rping) ;;
  -h | --help) usage ;;
  -*) usage ;;
  *) tests+=("$1") ;;
  esac
  shift
done
case $PEER in rxe) ;; rnic) DIRS=client ;; *) die "--peer $PEER: rxe or rnic" ;; esac
[ ${#tests[@]} -gt 0 ] || tests=(write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat rc_pingpong ud_pingpong rping)
for t in "${tests[@]}"; do
  case $t in
  write_bw | read_bw | send_bw | atomic_bw | write_lat | read_lat | send_lat | rc_pingpong | ud_pingpong | rping) ;;
  *) die "unknown test $t" ;;
  esac
done

# ---- build (cached by cargo and rxe-guest.sh) ----
need_root
apt_host_install tshark python3 perftest ibverbs-utils rdmacm-utils iproute2
(cd "$root" && cargo build --release -q -p rnic-tools --bin rnic &&
  cargo build --release -q -p librnic --features rnic/vfio-user,rnic/vfio -p librnic-mlx5-stub -p librnic-efa-stub)
target=${CARGO_TARGET_DIR:-$root/target}/release
[ "$PEER" = rnic ] || "$guest/rxe-guest.sh" build
rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/guest/jobs"
# Copies, so that a later build of librnic without vfio-user cannot change them under a run.
for l in ibverbs mlx5 efa; do cp "$target/lib$l.so" "$OUT/lib/lib$l.so.1"; done
# librnic is also librdmacm.so.1: one object under both names (a link), so that the
# connection manager and the verbs share one driver state.
ln -sf libibverbs.so.1 "$OUT/lib/librdmacm.so.1"
RNIC=$target/rnic

GUEST_PID='' SERVE_PID=''
cleanup() {
  [ -n "$SERVE_PID" ] && kill -INT "$SERVE_PID" 2>/dev/null
  if [ -n "$GUEST_PID" ]; then
    touch "$OUT/guest/jobs/quit"
    wait "$GUEST_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# ---- the guest: boots once, then runs the jobs the host drops into /mnt/host/jobs ----
# Job NAME.sh runs as NAME.run with its output in NAME.out, then NAME.rc; `quit` ends the loop.
start_guest() {
  # shellcheck disable=SC2016 # expanded by the guest's shell
  GUEST_LOOP='touch /mnt/host/jobs/.up
until [ -e /mnt/host/jobs/quit ]; do
  for j in /mnt/host/jobs/*.sh; do
    [ -e "$j" ] || continue
    n=${j%.sh}; mv "$j" "$n.run"
    sh "$n.run" >"$n.out" 2>&1; echo $? >"$n.rc.tmp"; mv "$n.rc.tmp" "$n.rc"
  done
  sleep 0.2
done'
  GUEST_PORT=$(free_port) SIM_PORT=$(free_port) FWD_PORT=$(free_port)
  # The guest's static neighbour entry for rnic, unless --arp leaves it to ARP.
  GUEST_PEER_ARGS=(--peer "$RNIC_IP,$RNIC_MAC")
  [ "${ARP:-0}" = 1 ] && GUEST_PEER_ARGS=()
  "$guest/rxe-guest.sh" run --workdir "$OUT/guest" --wire "udp:$GUEST_PORT:$SIM_PORT" \
    --ip "$GUEST_IP/24" --mac "$GUEST_MAC" "${GUEST_PEER_ARGS[@]}" --mtu 1500 \
    --hostfwd "$FWD_PORT" --timeout 7200 --cmd "$GUEST_LOOP" >"$OUT/guest.log" 2>&1 &
  GUEST_PID=$!
  t_boot=$SECONDS
  until [ -e "$OUT/guest/jobs/.up" ]; do
    kill -0 "$GUEST_PID" 2>/dev/null || { cat "$OUT/guest.log" >&2; die "the guest did not boot"; }
    [ $((SECONDS - t_boot)) -lt 300 ] || die "the guest did not boot within 300 s"
    sleep 0.2
  done
  log "guest up after $((SECONDS - t_boot)) s (wire udp 127.0.0.1:$GUEST_PORT <-> 127.0.0.1:$SIM_PORT)"
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s; 1 if it never succeeded.
wait_for() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.1
  done
}

# guest_job NAME COMMAND: hands COMMAND to the guest.
guest_job() { printf '%s\n' "$2" >"$OUT/guest/jobs/$1.tmp" && mv "$OUT/guest/jobs/$1.tmp" "$OUT/guest/jobs/$1.sh"; }
job_rc() { cat "$OUT/guest/jobs/$1.rc" 2>/dev/null; }

# tool_cmd TEST DEVICE: the tool's command line without the server address. perftest sets each
# side's max_rd_atomic to the *peer's* outstanding-reads figure (rxe offers 128, rnic takes at
# most 16, as ConnectX does), so read and atomic runs ask both sides for 16 (-o 16).
tool_cmd() {
  case $1 in
  read_bw | atomic_bw) echo "ib_$1 -d $2 -x 1 -F -n $ITERS --report_gbits -o 16" ;;
  *_bw) echo "ib_$1 -d $2 -x 1 -F -n $ITERS --report_gbits" ;;
  read_lat) echo "ib_read_lat -d $2 -x 1 -F -n $LAT_ITERS -o 16" ;;
  *_lat) echo "ib_$1 -d $2 -x 1 -F -n $LAT_ITERS" ;;
  rc_pingpong) echo "ibv_rc_pingpong -d $2 -g 1 -n $ITERS --chk -m $MTU" ;;
  # UD: datagrams of one path MTU (the largest; ibv_ud_pingpong refuses more than the port's
  # active MTU), each checked (-c; on rnic its buffer of size + 40 bytes is part pages, which
  # the simulator reaches through the program's /proc/self/mem, docs/pcie.md).
  ud_pingpong) echo "ibv_ud_pingpong -d $2 -g 1 -n $ITERS -s $MTU -c" ;;
  # In-band CM (REQ/REP/RTU MADs on QP1, UD): the server listens on its RoCE address.
  rping) echo "rping -v -V -C $RPING_COUNT -p $RPING_PORT" ;;
  esac
}
# rping as the issue asks: 100 pings, each verified (-V).
RPING_PORT=7174 RPING_COUNT=100

# summary TEST LOG: the figure the tool reports.
summary() {
  case $1 in
  *_bw) awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {print $4 " Gb/s"}' "$2" | tail -1 ;;
  *_lat) awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {print $5 " us"}' "$2" | tail -1 ;;
  rc_pingpong | ud_pingpong) grep -o '[0-9.]* usec/iter' "$2" | tail -1 | sed 's| usec/iter| us/iter|' ;;
  rping) echo "$(grep -c '^ping data: rdma-ping-' "$2") pings" ;;
  esac
}

# rping_ok LOG: the client printed every ping (-v) and no data mismatch (-V).
rping_ok() { [ "$(grep -c '^ping data: rdma-ping-' "$1")" = "$RPING_COUNT" ] && ! grep -q 'mismatch' "$1"; }

# tshark guesses that a few bytes of RDMA payload are an Ethertype-framed packet
# (docs/guests.md section 1); the payload is opaque data.
# So does its RPC-over-RDMA heuristic of ib_send_lat's 2-byte SENDs ("Malformed Packet:
# RPCoRDMA" on every one, from rxe and from rnic alike).
TSHARK_OPTS=(--disable-heuristic eth_over_ib --disable-heuristic rpcrdma_infiniband)
# wire_check PCAP: "<RoCE packets>/<tshark malformed or expert error>/<bad ICRC>".
wire_check() {
  local total bad icrc
  total=$(tshark -r "$1" "${TSHARK_OPTS[@]}" -Y infiniband 2>/dev/null | wc -l)
  bad=$(tshark -r "$1" "${TSHARK_OPTS[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null | wc -l)
  icrc=$(python3 "$guest/icrc-check.py" "$1" | cut -d' ' -f2) || icrc='?'
  echo "$total/$bad/$icrc"
}

listening() { ss -ltn | grep -q ":$1 "; }

RESULTS=$OUT/results.txt
printf '%-12s %-22s %-5s %-5s %-6s %-16s %-18s %s\n' test direction MTU loss result figure \
  roce/malformed/icrc wall | tee "$RESULTS"
FAILED=0 RUN=0 SEED=1

# run_one TEST DIR MTU LOSS
run_one() {
  local t=$1 dir=$2 loss=$4 name d netmtu rc_g rc_h=0 pid_h t0=$SECONDS
  MTU=$3
  name=$t.rnic-$dir.mtu$MTU.loss$loss
  d=$OUT/$name
  mkdir -p "$d/sock"
  case $MTU in 1024) netmtu=1500 ;; 4096) netmtu=4200 ;; *) die "MTU $MTU: 1024 or 4096" ;; esac
  SEED=$((SEED + 1))
  "$RNIC" sim serve --nics 1 --socket-dir "$d/sock" --link bridge --bridge "udp:$SIM_PORT:$GUEST_PORT" \
    --loss "$loss" --seed "$SEED" --pcap "$d/wire.pcap" >"$d/serve.log" 2>&1 &
  SERVE_PID=$!
  wait_for 60 grep -qs 'serving until interrupted' "$d/serve.log" || die "rnic sim serve did not start: $(cat "$d/serve.log")"
  local host_cmd guest_cmd prefix="ip link set eth0 mtu $netmtu && "
  host_cmd=$(tool_cmd "$t" rnic_0)
  # perftest's default ACK timeout (-u 14: 67 ms) is 4-5 minutes of wall time in the simulator
  # (~60 k cycles/s); -u 8 (1 ms, 262 k cycles) still leaves rxe several wall seconds to answer.
  case $t in *_bw | *_lat) host_cmd+=" -u 8" ;; esac
  guest_cmd=$(tool_cmd "$t" rxe0)
  # No RNIC_CM_TIMEOUT here (see run_rnic_pair): a REQ announces its CM response timeout, and
  # rxe, in real time, would give up on our RTU after 15 resends of its REP at that pace.
  export LD_LIBRARY_PATH=$OUT/lib RNIC_DEVICE=vfio-user:$d/sock/nic0.sock RNIC_PEER=$GUEST_IP,$GUEST_MAC
  [ "${ARP:-0}" = 1 ] && unset RNIC_PEER
  if [ "$t" = rping ] && [ "$dir" = client ]; then
    # rping's server prints nothing until a client comes: give it 2 s to listen.
    guest_job "$name" "${prefix}timeout $TIMEOUT $guest_cmd -s -a $GUEST_IP & pid=\$!; sleep 2; touch /mnt/host/jobs/$name.ready; wait \$pid"
    wait_for 120 test -e "$OUT/guest/jobs/$name.ready" || true
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $host_cmd -c -a "$GUEST_IP" >"$d/rnic.log" 2>&1 || rc_h=$?
  elif [ "$t" = rping ]; then
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $host_cmd -s -a "$RNIC_IP" >"$d/rnic.log" 2>&1 &
    pid_h=$!
    sleep 3
    guest_job "$name" "${prefix}timeout $TIMEOUT $guest_cmd -c -a $RNIC_IP"
    wait "$pid_h" || rc_h=$?
  elif [ "$dir" = client ]; then
    # rxe serves on the guest's 18515, which the host reaches at 127.0.0.1:$FWD_PORT.
    guest_job "$name" "${prefix}timeout $TIMEOUT $guest_cmd & pid=\$!; i=0; until ss -ltn | grep -q ':18515 '; do sleep 0.1; i=\$((i+1)); [ \$i -lt 600 ] || exit 99; done; touch /mnt/host/jobs/$name.ready; wait \$pid"
    wait_for 120 test -e "$OUT/guest/jobs/$name.ready" || true
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $host_cmd -p "$FWD_PORT" 127.0.0.1 >"$d/rnic.log" 2>&1 || rc_h=$?
  else
    local hp
    hp=$(free_port)
    # shellcheck disable=SC2086
    timeout "$TIMEOUT" $host_cmd -p "$hp" >"$d/rnic.log" 2>&1 &
    pid_h=$!
    wait_for 60 listening "$hp" || true
    guest_job "$name" "${prefix}timeout $TIMEOUT $guest_cmd -p $hp 10.0.2.2"
    wait "$pid_h" || rc_h=$?
  fi
  unset LD_LIBRARY_PATH RNIC_DEVICE RNIC_PEER
  wait_for "$((TIMEOUT + 30))" test -e "$OUT/guest/jobs/$name.rc" || true
  rc_g=$(job_rc "$name")
  cp "$OUT/guest/jobs/$name.out" "$d/rxe.log" 2>/dev/null || true
  kill -INT "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=''
  local verdict=PASS check figure client_log
  [ "$rc_h" = 0 ] && [ "${rc_g:-none}" = 0 ] || verdict=FAIL
  check=$(wire_check "$d/wire.pcap")
  case $check in 0/*) verdict=FAIL ;; */0/0) ;; *) verdict=FAIL ;; esac
  client_log=$d/rnic.log
  [ "$dir" = server ] && client_log=$d/rxe.log
  if [ "$t" = rping ]; then rping_ok "$client_log" || verdict=FAIL; fi
  # --chk / -c report bad data on stdout, not always in the exit status.
  if grep -qs 'invalid data' "$d/rnic.log" "$d/rxe.log"; then verdict=FAIL; fi
  figure=$(summary "$t" "$client_log")
  if [ "${ARP:-0}" = 1 ]; then
    # Both ARP exchanges on the wire: rnic asks for the guest (as client) or answers it.
    local arps
    arps=$(tshark -r "$d/wire.pcap" -Y 'arp.opcode == 2' 2>/dev/null | wc -l)
    [ "$arps" -ge 1 ] || verdict=FAIL
    figure="$figure, $arps ARP replies"
  fi
  [ "$verdict" = PASS ] || { FAILED=$((FAILED + 1)) && figure="rnic rc $rc_h, rxe rc ${rc_g:-none}"; }
  RUN=$((RUN + 1))
  local direction="rnic client, rxe server"
  [ "$dir" = server ] && direction="rxe client, rnic server"
  printf '%-12s %-22s %-5s %-5s %-6s %-16s %-18s %ss\n' "$t" "$direction" "$MTU" "$loss" "$verdict" \
    "${figure:--}" "$check" "$((SECONDS - t0))" | tee -a "$RESULTS"
}

# run_rnic_pair TEST MTU LOSS: the same binaries on two served NICs cabled back to back, the
# server on nic1 (192.0.2.2), the client on nic0 (192.0.2.1).
run_rnic_pair() {
  local t=$1 loss=$3 name d rc_c=0 rc_s=0 pid_s hp cmd t0=$SECONDS
  MTU=$2
  name=$t.rnic-rnic.mtu$MTU.loss$loss
  d=$OUT/$name
  mkdir -p "$d/sock"
  SEED=$((SEED + 1))
  "$RNIC" sim serve --nics 2 --socket-dir "$d/sock" --loss "$loss" --seed "$SEED" --pcap "$d/wire.pcap" \
    >"$d/serve.log" 2>&1 &
  SERVE_PID=$!
  wait_for 60 grep -qs 'serving until interrupted' "$d/serve.log" || die "rnic sim serve did not start: $(cat "$d/serve.log")"
  cmd=$(tool_cmd "$t" rnic_0)
  case $t in *_bw | *_lat) cmd+=" -u 8 -m $MTU" ;; esac
  hp=$(free_port)
  if [ "$t" = rping ]; then
    # In band: the server listens on nic1's RoCE address, the client connects to it there.
    # RNIC_CM_TIMEOUT=6: a REQ that reaches nic1 before its server listens is resent after
    # ~0.8 ms of simulated time instead of rdma_cm's 4.3 s, hours in the simulator.
    export RNIC_CM_TIMEOUT=6
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH=$OUT/lib RNIC_DEVICE=vfio-user:$d/sock/nic1.sock \
      timeout "$TIMEOUT" $cmd -s -a 192.0.2.2 >"$d/server.log" 2>&1 &
    pid_s=$!
    sleep 2
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH=$OUT/lib RNIC_DEVICE=vfio-user:$d/sock/nic0.sock \
      timeout "$TIMEOUT" $cmd -c -a 192.0.2.2 >"$d/client.log" 2>&1 || rc_c=$?
    unset RNIC_CM_TIMEOUT
  else
  # Each side's static neighbour for the other, unless --arp leaves it to ARP.
  local peer1=(RNIC_PEER=192.0.2.1,02:00:00:00:00:01) peer0=(RNIC_PEER=192.0.2.2,02:00:00:00:00:02)
  [ "${ARP:-0}" = 1 ] && peer1=() peer0=()
  # shellcheck disable=SC2086
  env LD_LIBRARY_PATH="$OUT/lib" RNIC_DEVICE="vfio-user:$d/sock/nic1.sock" "${peer1[@]}" \
    timeout "$TIMEOUT" $cmd -p "$hp" >"$d/server.log" 2>&1 &
  pid_s=$!
  wait_for 60 listening "$hp" || true
  # shellcheck disable=SC2086
  env LD_LIBRARY_PATH="$OUT/lib" RNIC_DEVICE="vfio-user:$d/sock/nic0.sock" "${peer0[@]}" \
    timeout "$TIMEOUT" $cmd -p "$hp" 127.0.0.1 >"$d/client.log" 2>&1 || rc_c=$?
  fi
  wait "$pid_s" || rc_s=$?
  kill -INT "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=''
  local verdict=PASS check figure
  [ "$rc_c" = 0 ] && [ "$rc_s" = 0 ] || verdict=FAIL
  check=$(wire_check "$d/wire.pcap")
  case $check in 0/*) verdict=FAIL ;; */0/0) ;; *) verdict=FAIL ;; esac
  if [ "$t" = rping ]; then rping_ok "$d/client.log" || verdict=FAIL; fi
  if grep -qs 'invalid data' "$d/client.log" "$d/server.log"; then verdict=FAIL; fi
  figure=$(summary "$t" "$d/client.log")
  if [ "${ARP:-0}" = 1 ]; then
    local arps
    arps=$(tshark -r "$d/wire.pcap" -Y 'arp.opcode == 2' 2>/dev/null | wc -l)
    [ "$arps" -ge 1 ] || verdict=FAIL
    figure="$figure, $arps ARP replies"
  fi
  [ "$verdict" = PASS ] || { FAILED=$((FAILED + 1)) && figure="client rc $rc_c, server rc $rc_s"; }
  RUN=$((RUN + 1))
  printf '%-12s %-22s %-5s %-5s %-6s %-16s %-18s %ss\n' "$t" "rnic client, rnic server" "$MTU" "$loss" \
    "$verdict" "${figure:--}" "$check" "$((SECONDS - t0))" | tee -a "$RESULTS"
}

[ "$PEER" = rnic ] || start_guest
for mtu in $MTUS; do
  for loss in $LOSSES; do
    for t in "${tests[@]}"; do
      # UD is unreliable: a datagram lost on the wire is never resent, and ibv_ud_pingpong then
      # waits for it forever.
      if [ "$t" = ud_pingpong ] && [ "$loss" != 0 ]; then continue; fi
      # rping's connection is made by CM MADs, whose retries wait 4 s of simulated time
      # (rdma_cm's response timeout) while the bridged simulator runs ~3000x slower than
      # wall time: a lost MAD stalls the run for hours. Its RC data would survive loss.
      if [ "$t" = rping ] && [ "$loss" != 0 ]; then continue; fi
      if [ "$PEER" = rnic ]; then
        run_rnic_pair "$t" "$mtu" "$loss"
        continue
      fi
      for dir in $DIRS; do
        run_one "$t" "$dir" "$mtu" "$loss"
      done
    done
  done
done
log "$RUN runs, $FAILED failed, $SECONDS s; captures and logs in $OUT"
[ "$FAILED" = 0 ]
