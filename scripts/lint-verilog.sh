#!/usr/bin/env bash
# Generates the NIC's Verilog into target/verilog and lints it with `verilator --lint-only -Wall`.
# Waivers, each a property of rust-hdl 0.46's output rather than of our design:
#   WIDTH        rust-hdl prints every literal as 32 bits (`x + 32'h1` on narrower signals).
#   DECLFILENAME all modules share one file and carry `$` in their names (top$regs ...).
#   UNUSED       rust-hdl declares each sub-block's full port list, and records keep reserved
#                fields; unused bits are expected.
#   UNOPTFLAT    rust-hdl emits one always block per module, so Verilator sees a block that
#                feeds a sub-module and reads it back as a loop. Real combinational loops are
#                caught by yosys (`check -assert`) in the synthesis check.
# SELRANGE, MODDUP, VARHIDDEN and every other warning stay fatal.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/verilog
cargo run -q --release --bin rnic-hdl-gen -- "$out" >/dev/null
verilator --lint-only -Wall -Wno-WIDTH -Wno-DECLFILENAME -Wno-UNUSED -Wno-UNOPTFLAT \
  --top-module top "$out"/*.v
echo "lint: verilator --lint-only -Wall clean on $(ls "$out"/*.v | wc -l) files ($(cat "$out"/*.v | wc -l) lines)"
