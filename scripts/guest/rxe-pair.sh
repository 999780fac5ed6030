#!/usr/bin/env bash
# Two rxe guests (rxe-guest.sh) joined by udp-relay.py, running RDMA tools against each other:
# guest A (192.168.77.1) is the server, guest B (192.168.77.2) the client. Every test leaves the
# wire capture (wire.pcap), the out-of-band capture of A's user-network NIC (oob.pcap), both
# guests' output and a tshark check in OUT/TEST/, and one line in OUT/results.txt.
#
#   rxe-pair.sh [--mtu NETDEV_MTU] [--arp] [--out DIR] [TEST...]
#
# TEST is one of write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat rc_pingpong
# rping (default: all but the *_lat extras). --mtu 1500 gives RoCE MTU 1024, --mtu 4200 gives
# 4096. Without --arp each guest gets a static neighbour entry for the other; with it, rxe and
# rdma_cm resolve the peer's MAC by ARP.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

usage() {
  echo "usage: rxe-pair.sh [--mtu NETDEV_MTU] [--arp] [--out DIR] [--iters N] [TEST...]" >&2
  exit 2
}

IP_A=192.168.77.1 IP_B=192.168.77.2
MAC_A=52:54:00:77:00:01 MAC_B=52:54:00:77:00:02

# Shell snippets run in the guests. The server marks /mnt/host/ready once it listens; the host
# then creates the client's /mnt/host/go.
ready_when() { echo "i=0; until $1; do sleep 0.2; i=\$((i+1)); [ \$i -lt 600 ] || exit 99; done; touch /mnt/host/ready"; }
TCP_LISTENING=$(ready_when "ss -ltn | grep -q ':18515 '")
CM_LISTENING=$(ready_when "rdma res show cm_id | grep -q LISTEN")
# shellcheck disable=SC2016 # expanded by the guest's shell
WAIT_GO='i=0; until [ -e /mnt/host/go ]; do sleep 0.2; i=$((i+1)); [ $i -lt 900 ] || exit 98; done'

# test_cmds TEST HOSTPORT ITERS: sets SERVER and CLIENT, the two guests' command lines.
test_cmds() {
  local t=$1 hp=$2 n=$3 tool
  case $t in
  write_bw | read_bw | send_bw | atomic_bw | write_lat | read_lat | send_lat)
    tool=ib_$t
    local opts="-d rxe0 -x 1 -F -n $n"
    case $t in *_bw) opts+=" --report_gbits" ;; esac
    SERVER="$tool $opts & pid=\$!; $TCP_LISTENING; wait \$pid"
    CLIENT="$WAIT_GO; $tool $opts -p $hp 10.0.2.2"
    ;;
  rc_pingpong)
    SERVER="ibv_rc_pingpong -d rxe0 -g 1 -n $n --chk & pid=\$!; $TCP_LISTENING; wait \$pid"
    CLIENT="$WAIT_GO; ibv_rc_pingpong -d rxe0 -g 1 -n $n --chk -p $hp 10.0.2.2"
    ;;
  rping)
    SERVER="rping -s -v -V -C 100 -a $IP_A & pid=\$!; $CM_LISTENING; wait \$pid"
    CLIENT="$WAIT_GO; rping -c -v -V -C 100 -a $IP_A"
    ;;
  *) die "unknown test $t" ;;
  esac
}

# tshark's guess that an RDMA payload of a few bytes is an Ethertype-framed packet ends in
# "Malformed Packet: CRTP" for ib_write_lat's 2-byte WRITEs; the payload is opaque data.
# So does its RPC-over-RDMA heuristic of ib_send_lat's 2-byte SENDs ("Malformed Packet:
# RPCoRDMA" on every one, from rxe and from rnic alike).
TSHARK_OPTS=(--disable-heuristic eth_over_ib --disable-heuristic rpcrdma_infiniband)

# wire_check PCAP: "<RoCE packets>/<malformed or error per tshark>/<bad ICRC>".
wire_check() {
  local total bad icrc
  total=$(tshark -r "$1" "${TSHARK_OPTS[@]}" -Y infiniband 2>/dev/null | wc -l)
  bad=$(tshark -r "$1" "${TSHARK_OPTS[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null | wc -l)
  icrc=$(python3 "$here/icrc-check.py" "$1" | cut -d' ' -f2) || true
  echo "$total/$bad/$icrc"
}

# run_test TEST: boots both guests around the relay and records the result.
run_test() {
  local t=$1 dir=$OUT/$1 pa sa pb sb hp relay pid_a pid_b rc_a=0 rc_b=0 t0
  rm -rf "$dir"
  mkdir -p "$dir/a" "$dir/b"
  pa=$(free_port) sa=$(free_port) pb=$(free_port) sb=$(free_port) hp=$(free_port)
  test_cmds "$t" "$hp" "$ITERS"
  python3 "$here/udp-relay.py" --a "$pa:$sa" --b "$pb:$sb" --pcap "$dir/wire.pcap" 2>"$dir/relay.log" &
  relay=$!
  local peer_a=() peer_b=()
  if [ "$ARP" = 0 ]; then peer_a=(--peer "$IP_B,$MAC_B") peer_b=(--peer "$IP_A,$MAC_A"); fi
  t0=$SECONDS
  "$here/rxe-guest.sh" run --workdir "$dir/a" --wire "udp:$sa:$pa" --ip "$IP_A/24" --mac "$MAC_A" \
    "${peer_a[@]}" --mtu "$MTU" --hostfwd "$hp" --oob-pcap "$dir/oob.pcap" --timeout "$TIMEOUT" \
    --cmd "$SERVER" >"$dir/a.log" 2>&1 &
  pid_a=$!
  "$here/rxe-guest.sh" run --workdir "$dir/b" --wire "udp:$sb:$pb" --ip "$IP_B/24" --mac "$MAC_B" \
    "${peer_b[@]}" --mtu "$MTU" --timeout "$TIMEOUT" --cmd "$CLIENT" >"$dir/b.log" 2>&1 &
  pid_b=$!
  while kill -0 "$pid_a" 2>/dev/null && [ ! -e "$dir/a/ready" ]; do sleep 0.2; done
  [ -e "$dir/a/ready" ] && touch "$dir/b/go"
  wait "$pid_b" || rc_b=$?
  wait "$pid_a" || rc_a=$?
  kill "$relay" && wait "$relay" || true
  local verdict=PASS
  [ "$rc_a" = 0 ] && [ "$rc_b" = 0 ] || verdict=FAIL
  local figure check
  check=$(wire_check "$dir/wire.pcap")
  case $check in */0/0) ;; *) verdict=FAIL ;; esac
  figure=$(summary "$t" "$dir/b.log")
  printf '%-12s mtu=%-4s arp=%s %-4s server_rc=%-3s client_rc=%-3s %-28s roce/malformed/badicrc=%s wall=%ss\n' \
    "$t" "$MTU" "$ARP" "$verdict" "$rc_a" "$rc_b" "$figure" "$check" \
    "$((SECONDS - t0))" | tee -a "$OUT/results.txt"
}

# summary TEST LOG: the figure the tool reports (bandwidth average, typical latency, or rate).
summary() {
  case $1 in
  *_bw) awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {print "BW avg " $4 " Gb/s"}' "$2" | tail -1 ;;
  *_lat) awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {print "t_typical " $5 " us"}' "$2" | tail -1 ;;
  rc_pingpong) grep -o '[0-9.]* usec/iter' "$2" | tail -1 ;;
  rping) echo "$(grep -c 'ping data' "$2") pings" ;;
  esac
}

MTU=1500 ARP=0 OUT=${RNIC_PAIR_OUT:-/tmp/rxe-pair} ITERS=1000 TIMEOUT=900
tests=()
while [ $# -gt 0 ]; do
  case $1 in
  --mtu) MTU=$2 && shift ;;
  --arp) ARP=1 ;;
  --out) OUT=$2 && shift ;;
  --iters) ITERS=$2 && shift ;;
  -h | --help) usage ;;
  *) tests+=("$1") ;;
  esac
  shift
done
[ ${#tests[@]} -gt 0 ] || tests=(write_bw read_bw send_bw atomic_bw write_lat rc_pingpong rping)
need_root
apt_host_install tshark python3
"$here/rxe-guest.sh" build
mkdir -p "$OUT"
for t in "${tests[@]}"; do run_test "$t"; done
