#!/usr/bin/env bash
# Synthesizes the generated NIC core with yosys for AMD UltraScale+ and reports what it costs.
#
#   scripts/synth.sh                 full report (text): LUT, FF, BRAM, URAM, DSP, per-memory
#                                    mapping, LUT levels and the deepest register-to-register paths
#   scripts/synth.sh --json          the same report as one JSON object on stdout
#   scripts/synth.sh --check         fast check (seconds): elaboration errors, inferred latches,
#                                    combinational loops, multiple drivers, simulation-only code
#
# Options:
#   --verilog DIR        use the Verilog files DIR/*.v (top module `top`) instead of generating
#                        the core with rnic-hdl-gen
#   --out DIR            work directory (default target/synth); logs and report.{json,md} land here
#   --ram-style POLICY   tables-in-bram (default): the tables (every rust-hdl RAM that is not the
#                        buffer of a FIFO) get ram_style="block", as constraints/rnic_core.xdc
#                        does for Vivado; auto: yosys' own choice (it picks LUTRAM up to 64 deep)
#   --target-levels N    LUT6 levels a 250 MHz stage may have (default 6, see docs/resources.md)
#
# The full report runs two yosys jobs in parallel: `synth_xilinx -family xcup -flatten` for the
# resources (~20 min on 2 cores with Debian's yosys 0.23; ABC dominates) and a generic
# `synth -flatten; abc -lut 6` with the RAM modules blackboxed for the logic depth.
# Idempotent: every run regenerates its outputs under --out.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "synth: $*" >&2; exit 1; }
say() { [ "$json" = 1 ] || echo "synth: $*" >&2; }

mode=report json=0 vdir="" out=target/synth ram_policy=tables-in-bram target=6
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=1 ;;
    --check) mode=check ;;
    --verilog) [ $# -ge 2 ] || die "--verilog needs a directory"; vdir=$2; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift ;;
    --ram-style)
      [ $# -ge 2 ] || die "--ram-style needs tables-in-bram or auto"
      case "$2" in tables-in-bram|auto) ram_policy=$2 ;; *) die "unknown --ram-style '$2' (tables-in-bram or auto)" ;; esac
      shift ;;
    --target-levels)
      [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--target-levels needs a number"; target=$2; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

command -v yosys >/dev/null || die "yosys not found (run scripts/setup.sh)"
command -v python3 >/dev/null || die "python3 not found (run scripts/setup.sh)"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---- the Verilog ----
if [ -n "$vdir" ]; then
  [ -d "$vdir" ] || die "--verilog: no directory '$vdir'"
  vdir=$(cd "$vdir" && pwd)
else
  command -v cargo >/dev/null || die "cargo not found (Rust toolchain)"
  vdir="$out/verilog"
  say "generating the core into $vdir"
  cargo run -q --release --bin rnic-hdl-gen -- "$vdir" >/dev/null || die "rnic-hdl-gen failed"
fi
shopt -s nullglob
sources=("$vdir"/*.v)
shopt -u nullglob
[ ${#sources[@]} -gt 0 ] || die "no .v files in $vdir"

# Modules that hold a memory (`reg [..] mem [..]`, rust-hdl's RAM), and the ones among them that
# are a FIFO's buffer (a sibling `read_logic` exists): these stay LUTRAM, the rest are tables.
mem_modules=$(awk '/^module /{m=$2; sub(/\(.*/,"",m)} /reg *\[[^]]*\] *mem *\[/{print m}' "${sources[@]}" | sort -u)
fifo_modules=""
tables=""
for m in $mem_modules; do
  parent=${m%\$*}
  if [ "${m##*\$}" = ram ] && grep -qF "module ${parent}\$read_logic(" "${sources[@]}"; then
    fifo_modules+="$m "
  else
    tables+="$m "
  fi
done

read_cmd="read_verilog -DRNIC_STUB_VENDOR_IP ${sources[*]}"

# ---- fast check ----
# Latches are listed right after `proc`: a later `opt` may fold a latch whose hold value yosys
# considers undefined, which hides the defect from yosys but not from Vivado. Loops are searched
# after `flatten`, since a loop may close only across blocks.
if [ "$mode" = check ]; then
  start=$SECONDS
  ys="$out/check.ys"
  cat >"$ys" <<EOF
$read_cmd
hierarchy -check -top top
proc
tee -o $out/latches.txt select -list t:\$dlatch t:\$adlatch t:\$dlatchsr t:\$sr t:\$_DLATCH_* t:\$_SR_*
flatten
opt_clean
tee -o $out/check.txt check
EOF
  if ! yosys -q -l "$out/check.log" -s "$ys" >/dev/null 2>&1; then
    grep -E "ERROR|error" "$out/check.log" | head -20 >&2 || true
    die "yosys could not elaborate the design (log: $out/check.log)"
  fi
  fail=0
  if [ -s "$out/latches.txt" ]; then
    echo "synth: inferred latches (a signal not assigned on every path of a combinational block):" >&2
    sed 's/^/  /' "$out/latches.txt" >&2
    grep -E "Latch inferred for signal" "$out/check.log" | sed 's/^/  /' >&2 || true
    fail=1
  fi
  problems=$(sed -n 's/.*Found and reported \([0-9]*\) problems.*/\1/p' "$out/check.txt" | tail -1)
  [ -n "$problems" ] || die "no result from yosys check (log: $out/check.log)"
  if [ "$problems" != 0 ]; then
    echo "synth: yosys check found $problems problem(s) (combinational loops, multiple or missing drivers):" >&2
    grep -vE "^$|Executing CHECK|Checking module|Found and reported" "$out/check.txt" | head -40 | sed 's/^/  /' >&2
    fail=1
  fi
  # Simulation-only constructs: system tasks and delays have no hardware meaning (rust-hdl puts
  # `$` inside identifiers, hence the left boundary). `initial` is allowed: rust-hdl uses it for
  # flip-flop power-up values, which yosys and Vivado both map to INIT.
  if grep -nE '(^|[^[:alnum:]_$])\$(display|write|monitor|strobe|finish|stop|random|time|fopen|readmem[hb]?)\b|(^|[^[:alnum:]_$])#[[:space:]]*[0-9]' "${sources[@]}" >"$out/simonly.txt"; then
    echo "synth: simulation-only constructs in the generated Verilog:" >&2
    head -20 "$out/simonly.txt" | sed 's/^/  /' >&2
    fail=1
  fi
  [ "$fail" = 0 ] || exit 1
  nmod=$(grep -c '^module ' "${sources[@]}" | awk -F: '{s+=$NF} END {print s}')
  echo "synth-check: OK: no latches, no combinational loops, no multiple drivers, no simulation-only code ($nmod modules, $((SECONDS - start)) s)"
  exit 0
fi

# ---- full report ----
setattr=""
if [ "$ram_policy" = tables-in-bram ]; then
  for m in $tables; do setattr+="setattr -set ram_style \"block\" $m/m:*"$'\n'; done
fi

cat >"$out/resources.ys" <<EOF
$read_cmd
hierarchy -check -top top
$setattr
synth_xilinx -family xcup -flatten -top top
tee -o $out/resources_stat.txt stat
tee -o $out/resources_cells.txt select -list t:RAMB36E2 t:RAMB18E2 t:URAM288 t:RAM* t:SRL* t:DSP48E2
EOF

blackbox=""
for m in $mem_modules; do blackbox+="$m "; done
cat >"$out/depth.ys" <<EOF
$read_cmd
${blackbox:+blackbox $blackbox}
hierarchy -check -top top
synth -flatten -top top
abc -lut 6
opt_clean
write_json $out/depth_netlist.json
EOF

say "yosys $(yosys -V | awk '{print $2}'): synth_xilinx -family xcup (resources) and abc -lut 6 (depth) in parallel; this takes a while"
t0=$SECONDS
rm -f "$out/resources.rc" "$out/depth.rc"
( s=$SECONDS; rc=0; yosys -q -l "$out/resources.log" -s "$out/resources.ys" >/dev/null 2>&1 || rc=$?
  echo "$rc $((SECONDS - s))" >"$out/resources.rc" ) &
pid_res=$!
( s=$SECONDS; rc=0; { yosys -q -l "$out/depth.log" -s "$out/depth.ys" >/dev/null 2>&1 &&
    python3 scripts/synth/depth.py --target "$target" --top 25 "$out/depth_netlist.json" >"$out/depth.json"; } || rc=$?
  echo "$rc $((SECONDS - s))" >"$out/depth.rc" ) &
pid_depth=$!
wait $pid_res $pid_depth || true
read -r rc_res t_res <"$out/resources.rc"
read -r rc_depth t_depth <"$out/depth.rc"
[ "$rc_res" = 0 ] || { tail -20 "$out/resources.log" >&2; die "synth_xilinx failed (log: $out/resources.log)"; }
[ "$rc_depth" = 0 ] || { tail -20 "$out/depth.log" >&2; die "depth run failed (log: $out/depth.log)"; }
rm -f "$out/depth_netlist.json"   # hundreds of MB; depth.json keeps what matters

python3 scripts/synth/report.py \
  --stat "$out/resources_stat.txt" --cells "$out/resources_cells.txt" --log "$out/resources.log" \
  --depth "$out/depth.json" --sources "${sources[@]}" --fifo-modules "$fifo_modules" \
  --ram-policy "$ram_policy" --target "$target" --yosys "$(yosys -V)" \
  --seconds-resources "$t_res" --seconds-depth "$t_depth" --seconds-total "$((SECONDS - t0))" \
  --json-out "$out/report.json" --md-out "$out/report.md"
if [ "$json" = 1 ]; then
  cat "$out/report.json"
else
  cat "$out/report.md"
fi
