#!/usr/bin/env bash
# Runs an unmodified rdma-core program on rnic: builds librnic (libibverbs.so.1 and
# librdmacm.so.1 over the rnic driver) and the stub libmlx5.so.1 / libefa.so.1 perftest links, puts them in
# target/librnic/, and runs the command with LD_LIBRARY_PATH pointing there. RNIC_DEVICE picks
# the NICs (default sim: one in-process simulated NIC, port looped back; sim:N for N).
#   scripts/verbs-run.sh ibv_devinfo -v
#   RNIC_DEVICE=sim:2 scripts/verbs-run.sh ibv_devices
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -gt 0 ] || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }
cargo build --release -q --manifest-path "$root/Cargo.toml" -p librnic -p librnic-mlx5-stub -p librnic-efa-stub
target="${CARGO_TARGET_DIR:-$root/target}"
lib="$target/librnic"
mkdir -p "$lib"
for l in ibverbs mlx5 efa; do
  ln -sf "$target/release/lib$l.so" "$lib/lib$l.so.1"
done
# librnic is also librdmacm.so.1 (rping, the rdma_cm programs): the same object under a second
# name, so that the connection manager and the verbs share one driver state.
ln -sf "$target/release/libibverbs.so" "$lib/librdmacm.so.1"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RNIC_DEVICE="${RNIC_DEVICE:-sim}"
exec "$@"
