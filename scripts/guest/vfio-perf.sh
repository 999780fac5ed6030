#!/usr/bin/env bash
# issue 14 item 7 by hand: the simulated NIC inside a QEMU guest, driven through the guest's
# kernel VFIO (emulated Intel IOMMU), RDMA-WRITEs into a second simulated NIC of the same
# `rnic sim serve`, which the host drives over vfio-user:
#
#   host:  rnic sim serve --nics 2 --socket-dir DIR
#   host:  rnic perf write --device vfio-user:DIR/nic1.sock --json          (server)
#   guest: rnic perf write --device vfio:0000:00:03.0 10.0.2.2 --json       (client, nic0)
#
# Both sides must print "verified": true (the server checks every byte it received). The guest
# runs the host's `rnic` binary with the host's shared libraries and loader (copied in with
# --bin), and reaches the host's perftest exchange over QEMU's user network (--net).
# Needs root and the cached guest (scripts/guest/vfio-guest.sh build). See docs/guests.md §2.
#
# With --lat the pair runs `rnic perf write-lat` instead, both sides writing their stamps
# (--stamps), the server world capturing the wire (--pcap), and `rnic perf stages` prints the
# per-stage NIC latency with the guest's kernel-VFIO doorbells (issue 14's doorbell → first TX
# beat per backend).
#
# With --events the pair runs the rc_pingpong example with completion events (-e, --chk)
# instead: each side sleeps on its CQ's completion channel, so in the guest every completion
# arrives as an MSI-X interrupt through the emulated IOMMU's interrupt remapping into the
# guest kernel's vfio-pci eventfd; rc_pingpong prints the completion events it slept through,
# at least one per iteration.
#
#   vfio-perf.sh [--lat | --events] [--size N] [--iters N] [--port N] [--rnic PATH]
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$(dirname "$0")/../.."

size=65536 iters=20 port=18515 rnic='' lat=0 events=0
while [ $# -gt 0 ]; do
  case $1 in
  --lat) lat=1; shift; continue ;;
  --events) events=1; shift; continue ;;
  --size) size=$2 ;;
  --iters) iters=$2 ;;
  --port) port=$2 ;;
  --rnic) rnic=$2 ;;
  *) die "usage: vfio-perf.sh [--lat | --events] [--size N] [--iters N] [--port N] [--rnic PATH]" ;;
  esac
  shift 2
done
need_root
if [ -z "$rnic" ]; then
  cargo build --release -p rnic-tools --bin rnic >&2
  rnic=$PWD/target/release/rnic
fi
pingpong=$(dirname "$rnic")/examples/rc_pingpong
if [ "$events" = 1 ] && [ ! -x "$pingpong" ]; then
  cargo build --release -p rnic-easy --example rc_pingpong >&2
  pingpong=$PWD/target/release/examples/rc_pingpong
fi

work=$(mktemp -d /tmp/rnic-vfio-perf.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The binary, its shared libraries and the loader, for the guest's /opt/bin, under the names
# the binary asks for (libc.so.6, ...).
mkdir -p "$work/libs"
bins=(--bin "$rnic")
[ "$events" = 1 ] && bins+=(--bin "$pingpong")
while read -r name path; do
  cp -L "$path" "$work/libs/$name"
  bins+=(--bin "$work/libs/$name")
done < <(ldd "$rnic" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {n=split($1, a, "/"); print a[n], $1}')

op=write serve_extra=() server_extra=() guest_extra=''
if [ "$lat" = 1 ]; then
  op=write-lat
  serve_extra=(--pcap "$work/wire.pcap")
  server_extra=(--stamps "$work/server-stamps.json")
  guest_extra=" --stamps /tmp/client-stamps.json; cat /tmp/client-stamps.json; echo"
fi
"$rnic" sim serve --nics 2 --socket-dir "$work/sock" "${serve_extra[@]}" >"$work/serve.out" 2>&1 &
serve=$!
pids+=("$serve")
for _ in $(seq 600); do [ -S "$work/sock/nic1.sock" ] && break; sleep 0.1; done
[ -S "$work/sock/nic1.sock" ] || die "rnic sim serve did not start: $(cat "$work/serve.out")"

if [ "$events" = 1 ]; then
  "$pingpong" --device "vfio-user:$work/sock/nic1.sock" -e --chk -p "$port" -s "$size" -n "$iters" \
    >"$work/server.json" 2>"$work/server.err" &
else
  "$rnic" perf "$op" --device "vfio-user:$work/sock/nic1.sock" --json -p "$port" --size "$size" --iters "$iters" \
    "${server_extra[@]}" >"$work/server.json" 2>"$work/server.err" &
fi
server=$!
pids+=("$server")

loader=$(basename "$(ldd "$rnic" | awk '$1 ~ /^\// {print $1}')")
t0=$SECONDS
rc=0
guest_cmd="$loader --library-path /opt/bin /opt/bin/rnic perf $op --device vfio:0000:00:03.0 10.0.2.2 -p $port --size $size --iters $iters --json$guest_extra"
if [ "$events" = 1 ]; then
  guest_cmd="$loader --library-path /opt/bin /opt/bin/rc_pingpong --device vfio:0000:00:03.0 -e --chk -p $port -s $size -n $iters 10.0.2.2; echo rc_pingpong exit \$?"
fi
scripts/guest/vfio-guest.sh run --socket "$work/sock/nic0.sock" --net "${bins[@]}" --cmd "$guest_cmd" \
  >"$work/client.out" || rc=$?
# The report is the guest's first JSON line; with --lat its stamps the second.
grep '^{' "$work/client.out" | head -n 1 >"$work/client.json" || true
srv_rc=0
if [ "$rc" != 0 ]; then
  # The guest never ran its client (it did not boot, or timed out): the host's server would
  # wait for it forever.
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  die "the guest run failed (exit $rc): $(tail -n 20 "$work/client.out")"
fi
wait "$server" || srv_rc=$?
if [ "$events" = 1 ]; then
  cat "$work/client.out"
  echo "host (server, vfio-user nic1, exit $srv_rc):"
  cat "$work/server.json" "$work/server.err"
  log "guest run: $((SECONDS - t0)) s wall (exit $rc)"
  grep -q 'rc_pingpong exit 0' "$work/client.out" || die "the guest's rc_pingpong failed"
  [ "$srv_rc" = 0 ] || die "the host's rc_pingpong failed"
  # Completion events the guest's rc_pingpong slept through: each an MSI-X interrupt.
  irqs=$(sed -n 's/^\([0-9][0-9]*\) completion events.*/\1/p' "$work/client.out" | head -n 1)
  log "guest: ${irqs:-no} completion events (MSI-X interrupts through kernel VFIO) for $iters iterations"
  [ "${irqs:-0}" -ge "$iters" ] || die "fewer completion events than iterations"
  exit 0
fi
echo "guest (client, vfio:0000:00:03.0): $(tail -n 1 "$work/client.json")"
echo "host (server, vfio-user nic1):     $(tail -n 1 "$work/server.json") $(cat "$work/server.err")"
log "guest run: $((SECONDS - t0)) s wall (exit $rc)"
grep -q '"verified":true' "$work/client.json" || die "the guest's client did not verify"
grep -q '"verified":true' "$work/server.json" || die "the host's server did not verify"
log "both sides verified"
if [ "$lat" = 1 ]; then
  grep '^{' "$work/client.out" | sed -n 2p >"$work/client-stamps.json"
  kill -INT "$serve"
  wait "$serve" || true
  echo "the guest client's messages (kernel VFIO doorbells):"
  "$rnic" perf stages --only client --pcap "$work/wire.pcap" --stamps "$work/client-stamps.json" \
    --stamps "$work/server-stamps.json" || die "no per-stage breakdown"
  echo "the host server's answers (vfio-user doorbells):"
  "$rnic" perf stages --only server --pcap "$work/wire.pcap" --stamps "$work/client-stamps.json" \
    --stamps "$work/server-stamps.json" || die "no per-stage breakdown"
fi
