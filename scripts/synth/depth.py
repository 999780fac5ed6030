#!/usr/bin/env python3
"""LUT levels between registers in a LUT6-mapped netlist (yosys `write_json`).

Input: the netlist of `synth -flatten; abc -lut 6; opt_clean` with the RAM modules blackboxed
(their registered read data is a path start, their address/data/enable inputs a path end).

Counts, for every path end (flip-flop D/enable/reset input, RAM input, top-level output), the
number of `$lut` cells on the deepest path from a path start (flip-flop output, RAM output,
top-level input, constant). Prints JSON on stdout:

    {"logic_levels": N,                 # deepest path, in LUT6 levels
     "histogram": {"0": n, ...},        # path-end bits per depth
     "paths": [{"levels", "from", "to", "through"}...],  # deepest path per end register
     "over_target": {"target": T, "end_registers": n}}

`yosys ltp -noff` gives the same figure on a netlist without blackboxes; here a blackbox RAM
would be counted as a combinational cell, which is why this pass exists.
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


def register_of(label):
    """`rxe.state$q[3]` -> `rxe.state`: the register a bit belongs to, for grouping."""
    base = re.sub(r"\[\d+\]$", "", label)
    return re.sub(r"(\$q|\.q|\$d|\.d)$", "", base)


def analyze(netlist, top, target):
    mod = netlist["modules"][top]
    names = bit_names(mod)
    blackboxes = {m for m, v in netlist["modules"].items()
                  if v.get("attributes", {}).get("blackbox") or v.get("attributes", {}).get("whitebox")}

    driver = {}          # bit -> ("lut", cell name) | ("start", None)
    lut_inputs = {}      # lut cell -> input bits
    lut_output = {}
    ends = []            # bits that end a path
    end_label = {}       # end bit -> the register (or RAM port) it feeds
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

    for cname, cell in mod["cells"].items():
        ctype = cell["type"]
        dirs = cell.get("port_directions", {})
        conns = cell["connections"]
        if ctype == "$lut":
            lut_inputs[cname] = [b for b in conns["A"] if not isinstance(b, str)]
            (y,) = conns["Y"]
            lut_output[cname] = y
            driver[y] = ("lut", cname)
        elif _SEQ.match(ctype) or ctype.lstrip("\\") in blackboxes or ctype in blackboxes:
            seq = bool(_SEQ.match(ctype))
            q = [b for b in conns.get("Q", []) if not isinstance(b, str)]
            for p, bits in conns.items():
                d = dirs.get(p)
                for i, b in enumerate(bits):
                    if isinstance(b, str):
                        continue
                    if d == "output":
                        driver[b] = ("start", None)
                    elif d == "input" and p not in _CLOCK_PORTS and not _CLOCKISH.search(p):
                        ends.append(b)
                        # A flip-flop's input is named after the register it loads (its Q);
                        # a RAM's after the instance port.
                        if seq and q:
                            end_label[b] = names.get(q[min(i, len(q) - 1)], cname)
                        else:
                            inst = cname.lstrip("\\").replace("$flatten\\", "")
                            end_label[b] = f"{inst}.{p}" + (f"[{i}]" if len(bits) > 1 else "")
        else:
            # Anything else left after LUT mapping is unexpected: count it as one level so the
            # figure errs deep, and report it.
            unknown[ctype] += 1
            outs = [b for p, bits in conns.items() if dirs.get(p) == "output" for b in bits
                    if not isinstance(b, str)]
            ins = [b for p, bits in conns.items() if dirs.get(p) != "output" for b in bits
                   if not isinstance(b, str)]
            for y in outs:
                lut_inputs[f"{cname}#{y}"] = ins
                lut_output[f"{cname}#{y}"] = y
                driver[y] = ("lut", f"{cname}#{y}")

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
            best = max(ins, key=lambda i: level[i], default=None)
            level[b] = 1 + (level[best] if best is not None else 0)
            via[b] = best
            stack.pop()

    hist = defaultdict(int)
    per_end = {}
    for e in ends:
        lv = level.get(e, 0)
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
            "from": names.get(start, "(unnamed)"),
            "to": end_label.get(e) or names.get(e, "(unnamed)"),
            "through": mids[:4],
        })

    return {
        "logic_levels": max(hist) if hist else 0,
        "histogram": {str(k): hist[k] for k in sorted(hist)},
        "over_target": {"target": target,
                        "end_registers": sum(1 for lv, _ in per_end.values() if lv > target)},
        "luts": len([c for c in mod["cells"].values() if c["type"] == "$lut"]),
        "unknown_cells": dict(unknown),
        "paths": paths,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("netlist", help="yosys write_json output")
    ap.add_argument("--target", type=int, default=6, help="LUT levels per stage (default 6)")
    ap.add_argument("--top", type=int, default=20, help="paths to list (default 20)")
    args = ap.parse_args()
    netlist, top = load(args.netlist)
    result = analyze(netlist, top, args.target)
    result["paths"] = result["paths"][: args.top]
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
