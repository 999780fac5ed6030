#!/usr/bin/env bash
# The whole test suite: setup, every crate's tests (unit, per-block Verilator testbenches,
# system tests through the simulator, tshark/scapy oracles) and the lint of the generated Verilog.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
command -v cargo >/dev/null || { echo "test: cargo is required (Rust toolchain)" >&2; exit 1; }
scripts/lint-verilog.sh
cargo test --workspace --release
# Issue 15's example programs, each pair as two processes on `rnic sim serve --nics 2` (the
# examples and the `rnic` binary are already built by the line above; about 10 s).
EXAMPLES_PREBUILT=1 scripts/examples.sh
# Issue 16: rnic against Linux soft-RoCE. One rxe guest (QEMU TCG) bridged to a served NIC,
# Debian's unmodified perftest, ibv_rc_pingpong and ibv_ud_pingpong on both sides, both directions, MTU 4096,
# every capture dissected by tshark with its ICRCs checked (docs/interop.md). The guest is built
# on first use (about 2 min with network, cached under /var/cache/rnic); the runs take 45-95 s.
scripts/interop.sh --ci --peer rnic --out "${TMPDIR:-/tmp}/rnic-interop-ci-rnic" # the same, rnic <-> rnic, ~20 s
scripts/interop.sh --ci --peer rnic --arp --out "${TMPDIR:-/tmp}/rnic-interop-ci-rnic-arp" # the same by ARP, ~80 s
scripts/interop.sh --ci --out "${TMPDIR:-/tmp}/rnic-interop-ci"
# The same subset with no static neighbour on either side: librnic finds the guest by ARP over
# rnic's raw Ethernet path and answers the guest's ARP (docs/interop.md), ~2 min.
scripts/interop.sh --arp --ci --out "${TMPDIR:-/tmp}/rnic-interop-ci-arp"
# Issue 14 item 7: the simulated NIC as a PCI function of a QEMU guest, driven over the guest
# kernel's VFIO: bytes verified, completion events as MSI-X interrupts, per-stage latency. The
# guest is built on first use (about 2 min 20 s, cached under /var/cache/rnic); the runs ~45 s.
scripts/qemu-guest-test.sh --rnic "$PWD/target/release/rnic"
