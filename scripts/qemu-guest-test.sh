#!/usr/bin/env bash
# Issue 14 item 7, the QEMU guest test: the simulated NIC as a PCI function of a q35 TCG guest
# (emulated Intel IOMMU with interrupt remapping, memfd-shared RAM, QEMU's vfio-user-pci from
# trixie-backports in a cached trixie chroot), driven by the rnic driver inside the guest over
# the guest kernel's VFIO, against a second simulated NIC of the same `rnic sim serve` driven
# from the host over vfio-user:
#   1. `rnic perf write` from the guest's NIC, every byte verified by the host side;
#   2. rc_pingpong with completion events (-e --chk): every completion the guest waits for
#      arrives as an MSI-X interrupt through kernel VFIO;
#   3. `rnic perf write-lat --stamps` and `rnic perf stages`: the per-stage NIC latency with
#      the guest's doorbells (doorbell → first TX beat per backend).
# Builds (or reuses from $RNIC_CACHE) the guest with scripts/guest/vfio-guest.sh build. Needs
# root. Prints each step's result and the wall times. docs/guests.md §2.
#
#   scripts/qemu-guest-test.sh [--rnic PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
rnic=''
case "${1:-}" in
--rnic) rnic=$2 ;;
'') ;;
*) echo "usage: scripts/qemu-guest-test.sh [--rnic PATH]" >&2; exit 2 ;;
esac
if [ -z "$rnic" ]; then
  cargo build --release -p rnic-tools --bin rnic >&2
  rnic=$PWD/target/release/rnic
fi
cargo build --release -p rnic-easy --example rc_pingpong >&2
t0=$SECONDS
scripts/guest/vfio-guest.sh build >&2
echo "qemu-guest-test: guest ready after $((SECONDS - t0)) s (cached builds take ~0 s)"
t1=$SECONDS
scripts/guest/vfio-perf.sh --rnic "$rnic" --size 65536 --iters 20 --port 18541
scripts/guest/vfio-perf.sh --rnic "$rnic" --events --size 1000 --iters 50 --port 18542
scripts/guest/vfio-perf.sh --rnic "$rnic" --lat --size 64 --iters 200 --port 18543
echo "qemu-guest-test: PASS (bytes verified, interrupts delivered, stages measured) in $((SECONDS - t1)) s of guest runs, $((SECONDS - t0)) s in all"
