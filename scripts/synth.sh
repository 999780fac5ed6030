#!/usr/bin/env bash
# Synthesizes the generated NIC core with yosys for AMD UltraScale+ and reports what it costs.
#
#   scripts/synth.sh                 full report (Markdown): LUT, FF, BRAM, URAM, DSP, how each
#                                    rust-hdl RAM was mapped, LUT levels and the deepest
#                                    register-to-register paths (~12 min on 2 cores)
#   scripts/synth.sh --json          the same report as one JSON object on stdout
#   scripts/synth.sh --check         fast check (seconds): elaboration errors, inferred latches,
#                                    combinational loops, multiple drivers, simulation-only code
#
# Options:
#   --verilog DIR        use the Verilog files DIR/*.v (top module `top`) instead of generating
#                        the core with rnic-hdl-gen
#   --out DIR            work directory (default target/synth); logs and report.{json,md} land here
#   --flatten            synth_xilinx -flatten: optimizes across blocks; about the same figures on
#                        this core but ~45 min instead of ~3 (ABC on one 80 k-gate netlist)
#   --abc9               synth_xilinx -abc9: area-oriented LUT mapping (~23 % fewer LUTs on this
#                        core, ~8 more levels on its deepest paths); the default ABC maps for depth
#   --ram-style POLICY   tables-in-bram (default): the tables (every rust-hdl RAM that is not the
#                        buffer of a FIFO) get ram_style="block", as constraints/u250/build.tcl
#                        does for Vivado; auto: yosys' own choice (LUTRAM up to 64 deep)
#   --target-levels N    LUT6 levels a 250 MHz stage may have (default 6, see docs/resources.md)
#   --nets REGEX         also give, in depth.json's `nets`, the level at which every named net
#                        matching REGEX settles (e.g. 'fetch\.rd$'): where a deep path spends
#                        its levels before its end register
#
# One yosys run, `synth_xilinx -family xcup`, gives the resources; its mapped netlist, flattened,
# gives the logic depth (scripts/synth/depth.py). Idempotent: every run rewrites --out.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "synth: $*" >&2; exit 1; }
say() { [ "$json" = 1 ] || echo "synth: $*" >&2; }

mode=report json=0 vdir="" out=target/synth ram_policy=tables-in-bram target=6 flatten="" abc9="" nets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=1 ;;
    --check) mode=check ;;
    --flatten) flatten="-flatten" ;;
    --abc9) abc9="-abc9" ;;
    --verilog) [ $# -ge 2 ] || die "--verilog needs a directory"; vdir=$2; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift ;;
    --ram-style)
      [ $# -ge 2 ] || die "--ram-style needs tables-in-bram or auto"
      case "$2" in tables-in-bram|auto) ram_policy=$2 ;; *) die "unknown --ram-style '$2' (tables-in-bram or auto)" ;; esac
      shift ;;
    --nets) [ $# -ge 2 ] || die "--nets needs a regular expression"; nets=$2; shift ;;
    --target-levels)
      [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--target-levels needs a number"; target=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
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
# are a FIFO's buffer (a sibling `wr_ptr_late`, hdl/src/reset_fifo.rs, or `read_logic`, rust-hdl's
# SynchronousFIFO): these stay LUTRAM, the rest are tables.
mem_modules=$(awk '/^module /{m=$2; sub(/\(.*/,"",m)} /reg *\[[^]]*\] *mem *\[/{print m}' "${sources[@]}" | sort -u)
fifo_modules=""
tables=""
for m in $mem_modules; do
  parent=${m%\$*}
  if [ "${m##*\$}" = ram ] && grep -qE "module ${parent//\$/\\\$}\\\$(wr_ptr_late|read_logic)\(" "${sources[@]}"; then
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
mkdir -p "$out/cells"
rm -f "$out"/cells/*.txt "$out/netlist.json" "$out/depth.json" "$out/report.json" "$out/report.md"
list_cells=""
for t in RAMB36E2 RAMB18E2 URAM288 RAM32M RAM32M16 RAM64M RAM64M8 RAM32X1D RAM64X1D RAM128X1D \
         RAM256X1D RAM32X1S RAM64X1S RAM128X1S RAM256X1S RAM512X1S SRL16E SRLC32E DSP48E2; do
  list_cells+="tee -q -o $out/cells/$t.txt select -list t:$t"$'\n'
done
cat >"$out/resources.ys" <<YS
$read_cmd
hierarchy -check -top top
$setattr
synth_xilinx -family xcup $flatten $abc9 -top top
flatten
opt_clean
tee -o $out/resources_stat.txt stat
$list_cells
write_json $out/netlist.json
YS

say "yosys $(yosys -V | awk '{print $2}'): synth_xilinx -family xcup ${flatten:-(hierarchical)} $abc9; takes minutes"
t0=$SECONDS
if ! yosys -q -l "$out/resources.log" -s "$out/resources.ys" >/dev/null 2>&1; then
  grep -E "ERROR" "$out/resources.log" | head -20 >&2 || true
  die "synth_xilinx failed (log: $out/resources.log)"
fi
t_res=$((SECONDS - t0))
t1=$SECONDS
python3 scripts/synth/depth.py --target "$target" --top 25 ${nets:+--nets "$nets"} "$out/netlist.json" >"$out/depth.json" ||
  die "depth analysis failed on $out/netlist.json"
t_depth=$((SECONDS - t1))
rm -f "$out/netlist.json"   # ~100 MB; depth.json keeps what matters

python3 scripts/synth/report.py \
  --stat "$out/resources_stat.txt" --cells-dir "$out/cells" --log "$out/resources.log" \
  --depth "$out/depth.json" --sources "${sources[@]}" --fifo-modules "$fifo_modules" \
  --ram-policy "$ram_policy" --flatten="${flatten:-no}" --abc9="${abc9:-no}" --target "$target" \
  --yosys "$(yosys -V)" \
  --seconds-synth "$t_res" --seconds-depth "$t_depth" --seconds-total "$((SECONDS - t0))" \
  --json-out "$out/report.json" --md-out "$out/report.md"
if [ "$json" = 1 ]; then
  cat "$out/report.json"
else
  cat "$out/report.md"
fi
