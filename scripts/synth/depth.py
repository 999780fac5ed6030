#!/usr/bin/env python3
"""LUT levels between registers in a mapped yosys netlist (`write_json` of the flat top).

Two netlist flavours are understood:
- UltraScale+ primitives after `synth_xilinx` (what scripts/synth.sh uses): LUT1-6 count one
  level; MUXF7/8/9 none (they sit inside the slice behind a LUT); a carry chain counts one level
  where it is entered and none along it (CARRY4/CARRY8 cascades are the fast path, as Vivado's
  CARRY8 is); LUTRAM (RAM32M/RAM64M/RAM64X1D/...) and SRLs read combinationally from their
  address, one level; flip-flops, block RAM, UltraRAM and DSPs start and end paths.
- generic `$lut` cells after `abc -lut 6` with the RAM modules blackboxed.

For every path end (a register, RAM or DSP input, or a top-level output) it finds the deepest
path from a path start (register/RAM/DSP output, top-level input, constant) and prints JSON:

    {"logic_levels": N, "histogram": {"levels": end bits}, "paths": [{"levels", "from", "to",
     "through"}], "over_target": {"target": T, "end_registers": n}, "luts": n, ...}

`paths` holds the deepest path per end register, deepest first. (`yosys ltp -noff` does not
know which primitives are sequential or how a carry chain runs, so it reports false loops on a
Xilinx netlist and counts a blackbox as logic.)
"""
import argparse
import json
import re
import sys
from collections import defaultdict

# Sequential cell types after `synth` (yosys internal gate library): their outputs start paths,
# their inputs end them.
_SEQ = re.compile(r"^\$_(S?DFF|DFFE|SDFFE|SDFFCE|ALDFF|ALDFFE|DFFSR|DFFSRE|DLATCH|SR)\w*_$|^\$(s?dff|dffe|sdffe|sdffce|adff|adffe|aldff|dffsr|dlatch|sr|ff)$")
# Ports of sequential cells that carry data/control into the register (all inputs but the clock).
_CLOCK_PORTS = {"C", "CLK"}
_CLOCKISH = re.compile(r"clock|clk", re.I)
CONST = -(10**6)   # the level of a constant: below any real path
# UltraScale+ primitives.
_X_LUT = re.compile(r"^LUT[1-6](_2)?$")
_X_MUXF = re.compile(r"^MUXF[789]$")
_X_CARRY = re.compile(r"^CARRY[48]$")
_X_FF = re.compile(r"^(FD[RSCP]E(_1)?|LD[CP]E)$")
_X_SEQ_BLOCK = re.compile(r"^(RAMB18E2|RAMB36E2|URAM288(_BASE)?|DSP48E2|FIFO18E2|FIFO36E2)$")
_X_LUTRAM = re.compile(r"^RAM(32|64|128|256|512)(M|M8|M16|X1S|X1D)$")
_X_SRL = re.compile(r"^SRLC?(16|32)E$")
_X_PASS = re.compile(r"^(BUFG|BUFGCE|IBUF|OBUF|INV)$")
_X_CONST = {"GND", "VCC"}
# LUTRAM/SRL read-address ports (combinational to the data outputs).
_READ_ADDR = re.compile(r"^(ADDR[A-H]|A[0-9]?|DPRA[0-9]?|A)$")


def load(path):
    with open(path) as f:
        netlist = json.load(f)
    tops = [m for m, v in netlist["modules"].items() if v.get("attributes", {}).get("top")]
    if len(tops) != 1:
        sys.exit(f"depth: expected one top module in {path}, found {tops}")
    return netlist, tops[0]


def bit_names(module):
    """Readable name for each net bit: the shortest visible net name, with its bit index."""
    names = {}
    for name, net in module["netnames"].items():
        if net.get("hide_name"):
            continue
        bits = net["bits"]
        for i, b in enumerate(bits):
            if isinstance(b, str):
                continue
            label = name if len(bits) == 1 else f"{name}[{i}]"
            old = names.get(b)
            if old is None or len(label) < len(old):
                names[b] = label
    return names


def clean(cname):
    """`$flatten\\rxe.\\state.$procdff$12` -> `rxe.state.$procdff$12`."""
    return cname.replace("$flatten\\", "").replace("\\", "")


def register_of(label):
    """`rxe.state$q[3]` -> `rxe.state`: the register a bit belongs to, for grouping."""
    base = re.sub(r"\[\d+\]$", "", label)
    return re.sub(r"(\$q|\.q|\$d|\.d)$", "", base)


def analyze(netlist, top, target, nets=None):
    mod = netlist["modules"][top]
    names = bit_names(mod)
    blackboxes = {m for m, v in netlist["modules"].items()
                  if v.get("attributes", {}).get("blackbox") or v.get("attributes", {}).get("whitebox")}

    driver = {}          # bit -> ("lut", cell name) | ("start", None)
    lut_inputs = {}      # lut cell -> input bits
    lut_output = {}
    ends = []            # bits that end a path
    end_label = {}       # end bit -> the register (or RAM port) it feeds
    lut_weight = {}      # combinational node -> levels it adds
    carry_in = {}        # carry node -> its chain inputs (CI), which add no level
    start_label = {}     # start bit without a visible net name -> its cell
    unknown = defaultdict(int)

    for pname, port in mod["ports"].items():
        for i, b in enumerate(port["bits"]):
            if isinstance(b, str):
                continue
            if port["direction"] == "input":
                driver[b] = ("start", None)
            else:
                ends.append(b)
                end_label[b] = pname + (f"[{i}]" if len(port["bits"]) > 1 else "")

    def bits_of(conns, dirs, want):
        return [b for p, bits in conns.items() if dirs.get(p) == want for b in bits
                if not isinstance(b, str)]

    def comb(name, ins, outs, weight=1):
        """A combinational node: each output is `weight` levels after its deepest input."""
        for y in outs:
            key = f"{name}#{y}"
            lut_inputs[key] = ins
            lut_weight[key] = weight
            driver[y] = ("lut", key)

    def ends_at(cname, conns, dirs, q=None, skip=()):
        for p, bits in conns.items():
            if dirs.get(p) != "input" or p in _CLOCK_PORTS or p in skip or _CLOCKISH.search(p):
                continue
            for i, b in enumerate(bits):
                if isinstance(b, str):
                    continue
                ends.append(b)
                if q:
                    end_label[b] = names.get(q[min(i, len(q) - 1)], cname)
                else:
                    end_label[b] = f"{clean(cname)}.{p}" + (f"[{i}]" if len(bits) > 1 else "")

    carry_out = set()    # bits driven by a carry cell's CO/O (chain continuation is free)
    for cname, cell in mod["cells"].items():
        ctype = cell["type"]
        dirs = cell.get("port_directions", {})
        conns = cell["connections"]
        outs = bits_of(conns, dirs, "output")
        if ctype == "$scopeinfo":
            continue  # newer yosys keeps the flattened hierarchy as connectionless cells
        if ctype == "$lut":
            (y,) = conns["Y"]
            comb(cname, [b for b in conns["A"] if not isinstance(b, str)], [y])
        elif _X_LUT.match(ctype):
            comb(cname, bits_of(conns, dirs, "input"), outs)
        elif _X_MUXF.match(ctype) or _X_PASS.match(ctype):
            comb(cname, bits_of(conns, dirs, "input"), outs, weight=0)
        elif _X_CARRY.match(ctype):
            # One level on entering the chain (S/DI/CYINIT), none along it (CI from a carry).
            chain = [b for p in ("CI", "CI_TOP") for b in conns.get(p, []) if not isinstance(b, str)]
            enter = [b for p, bits in conns.items() if dirs.get(p) == "input" and p not in ("CI", "CI_TOP")
                     for b in bits if not isinstance(b, str)]
            for y in outs:
                key = f"{cname}#{y}"
                lut_inputs[key] = enter + chain
                lut_weight[key] = 1
                carry_in[key] = set(chain)
                driver[y] = ("lut", key)
                carry_out.add(y)
        elif _X_LUTRAM.match(ctype) or _X_SRL.match(ctype):
            addr = [b for p, bits in conns.items() if dirs.get(p) == "input" and _READ_ADDR.match(p)
                    for b in bits if not isinstance(b, str)]
            seq_outs = [b for b in conns.get("Q31", []) if not isinstance(b, str)]
            comb(cname, addr, [y for y in outs if y not in seq_outs])
            for y in seq_outs:
                driver[y] = ("start", None)
                start_label[y] = clean(cname)
            ends_at(cname, conns, dirs)
        elif (_SEQ.match(ctype) or _X_FF.match(ctype) or _X_SEQ_BLOCK.match(ctype)
              or ctype.lstrip("\\") in blackboxes or ctype in blackboxes or ctype in _X_CONST):
            seq = bool(_SEQ.match(ctype) or _X_FF.match(ctype))
            q = [b for b in conns.get("Q", []) if not isinstance(b, str)] if seq else None
            for y in outs:
                driver[y] = ("start", None)
                start_label[y] = clean(cname)
            ends_at(cname, conns, dirs, q=q)
        else:
            # Anything else is unexpected: count it as one level so the figure errs deep, and
            # report it.
            unknown[ctype] += 1
            comb(cname, [b for p, bits in conns.items() if dirs.get(p) != "output" for b in bits
                         if not isinstance(b, str)], outs)

    # Depth of every bit, iteratively (paths are thousands of cells wide, recursion is not safe).
    level = {}
    via = {}             # bit -> the input bit that made it deepest
    on_stack = set()
    for root in list(driver.keys()) + ends:
        if root in level:
            continue
        stack = [root]
        while stack:
            b = stack[-1]
            if b in level:
                stack.pop()
                continue
            kind = driver.get(b, ("start", None))
            if kind[0] == "start":
                level[b] = 0
                stack.pop()
                continue
            ins = lut_inputs[kind[1]]
            todo = [i for i in ins if i not in level]
            if todo:
                if b in on_stack:
                    sys.exit(f"depth: combinational loop through {names.get(b, b)}")
                on_stack.add(b)
                stack.extend(todo)
                continue
            on_stack.discard(b)
            node = kind[1]
            w = lut_weight.get(node, 1)
            chain = carry_in.get(node, ())
            # A carry-chain input arrives already counted (CI from a carry cell's output).
            cost = lambda i: level[i] + (0 if i in chain and i in carry_out else w)
            best = max(ins, key=cost, default=None)
            # A cell fed only by constants (yosys' INV of 0, a constant LUT) is a constant: it
            # starts no path, so it ranks below every real start (CONST) and never wins.
            level[b] = cost(best) if best is not None else CONST
            via[b] = best if best is not None and level[b] >= 0 else None
            if level[b] < 0:
                level[b] = CONST
                start_label[b] = "(constant)"
            stack.pop()

    hist = defaultdict(int)
    per_end = {}
    for e in ends:
        lv = max(level.get(e, 0), 0)
        hist[lv] += 1
        reg = register_of(end_label.get(e) or names.get(e, str(e)))
        if reg not in per_end or lv > per_end[reg][0]:
            per_end[reg] = (lv, e)

    def trace(b):
        chain = []
        while b in via and via[b] is not None:
            b = via[b]
            chain.append(b)
        return chain

    paths = []
    for reg, (lv, e) in sorted(per_end.items(), key=lambda kv: (-kv[1][0], kv[0])):
        chain = trace(e)
        start = chain[-1] if chain else e
        mids = [names[b] for b in chain[:-1] if b in names]
        paths.append({
            "levels": lv,
            "from": names.get(start) or start_label.get(start, "(unnamed)"),
            "to": end_label.get(e) or names.get(e, "(unnamed)"),
            "through": mids[:4],
        })

    # The level at which each named net matching `nets` settles (deepest bit), with the path
    # into it: where a deep path's levels are spent, short of its end register.
    net_levels = {}
    if nets is not None:
        for b, label in names.items():
            base = re.sub(r"\[\d+\]$", "", label)
            if not nets.search(base) or b not in level:
                continue
            lv = max(level[b], 0)
            if base not in net_levels or lv > net_levels[base]["levels"]:
                chain = trace(b)
                net_levels[base] = {"levels": lv,
                                    "from": names.get(chain[-1]) if chain else None,
                                    "through": [names[x] for x in chain[:-1] if x in names][:6]}

    return {
        "nets": dict(sorted(net_levels.items())),
        "logic_levels": max(hist) if hist else 0,
        "histogram": {str(k): hist[k] for k in sorted(hist)},
        "over_target": {"target": target,
                        "end_registers": sum(1 for lv, _ in per_end.values() if lv > target)},
        "luts": len([c for c in mod["cells"].values()
                     if c["type"] == "$lut" or _X_LUT.match(c["type"])]),
        "unknown_cells": dict(unknown),
        "paths": paths,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("netlist", help="yosys write_json output")
    ap.add_argument("--target", type=int, default=6, help="LUT levels per stage (default 6)")
    ap.add_argument("--top", type=int, default=20, help="paths to list (default 20)")
    ap.add_argument("--nets", help="also report the level of every named net matching this regex")
    args = ap.parse_args()
    netlist, top = load(args.netlist)
    result = analyze(netlist, top, args.target, re.compile(args.nets) if args.nets else None)
    if args.nets is None:
        del result["nets"]
    result["paths"] = result["paths"][: args.top]
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
