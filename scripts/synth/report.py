#!/usr/bin/env python3
"""Assembles scripts/synth.sh's report from the yosys outputs: one JSON object and a Markdown
summary (the tables in docs/resources.md are pasted from it).

Resources come from `synth_xilinx -family xcup -flatten` (`stat` of the flat top module).
`luts` counts LUTs the way Vivado's "CLB LUTs" does: logic LUTs plus LUTs used as memory
(LUTRAM, SRL). Block RAM is counted in primitives (RAMB36E2, RAMB18E2) and in 36 Kb
equivalents. The per-memory table maps each rust-hdl `RAM` (a module holding `reg [..] mem [..]`)
to what yosys' memory_libmap chose, with the primitives whose names carry the memory's path.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

LUTS_PER_MEMORY_PRIMITIVE = {
    "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4, "RAM512X1S": 8,
    "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM256X1D": 8,
    "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8,
    "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1,
}
# INV counts as a LUT: an upper bound (Vivado folds most into the next LUT or flip-flop).
LOGIC_LUTS = {"LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "LUT6_2", "INV"}
FLOPS = {"FDRE", "FDSE", "FDCE", "FDPE"}
LATCHES = {"LDCE", "LDPE"}


def parse_stat(path):
    """Cell type -> count, from the last `stat` section of the flat design."""
    cells = {}
    for line in open(path):
        # yosys 0.23 prints "  LUT6   123", newer versions "  123   LUT6".
        m = re.match(r"^\s+([A-Z$]\S*)\s+(\d+)\s*$", line)
        n = re.match(r"^\s+(\d+)\s+([A-Z$]\S*)\s*$", line)
        if m and not line.strip().startswith("Number"):
            cells[m.group(1)] = int(m.group(2))
        elif n:
            cells[n.group(2)] = int(n.group(1))
    if not cells:
        sys.exit(f"report: no cell counts in {path}")
    return cells


def parse_memories(sources, fifo_modules):
    """Every rust-hdl RAM: module, hierarchical memory name, depth, width, kind."""
    mems = []
    top_ports = {}
    for src in sources:
        module = None
        for line in open(src):
            m = re.match(r"^module\s+([^\s(]+)", line)
            if m:
                module = m.group(1)
                continue
            m = re.search(r"reg\s*\[(\d+):0\]\s*mem\s*\[(\d+):0\]", line)
            if m and module:
                name = ".".join(module.split("$")[1:] + ["mem"])
                mems.append({
                    "name": name,
                    "module": module,
                    "kind": "fifo" if module in fifo_modules else "table",
                    "depth": int(m.group(2)) + 1,
                    "width": int(m.group(1)) + 1,
                })
            if module == "top":
                m = re.match(r"\s*(input|output)\s+(?:wire|reg)?\s*(?:\[(\d+):0\])?\s*(\w+);", line)
                if m:
                    top_ports[m.group(3)] = int(m.group(2)) + 1 if m.group(2) else 1
    for mem in mems:
        mem["bits"] = mem["depth"] * mem["width"]
    return mems, top_ports


def parse_mapping(log_path):
    """memory name -> mapping class, from memory_libmap's log lines."""
    mapping = {}
    for line in open(log_path, errors="replace"):
        m = re.match(r"mapping memory top[.$](\S+) via (\S+)", line)
        if m:
            via = m.group(2)
            kind = ("BRAM" if "BLOCKRAM" in via else "URAM" if "URAM" in via
                    else "LUTRAM" if "LUTRAM" in via else via)
            # Flat runs print `top.rxe.qp_ram.mem`, hierarchical ones `top$rxe$qp_ram.mem`.
            mapping[m.group(1).replace("$", ".")] = kind
    return mapping


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stat", required=True)
    ap.add_argument("--cells-dir", required=True, help="one `select -list` file per primitive")
    ap.add_argument("--log", required=True)
    ap.add_argument("--depth", required=True)
    ap.add_argument("--sources", nargs="+", required=True)
    ap.add_argument("--fifo-modules", default="")
    ap.add_argument("--ram-policy", required=True)
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--yosys", required=True)
    ap.add_argument("--flatten", required=True)
    ap.add_argument("--abc9", default="no")
    ap.add_argument("--seconds-synth", type=int, required=True)
    ap.add_argument("--seconds-depth", type=int, required=True)
    ap.add_argument("--seconds-total", type=int, required=True)
    ap.add_argument("--json-out", required=True)
    ap.add_argument("--md-out", required=True)
    a = ap.parse_args()

    stat = parse_stat(a.stat)
    mems, top_ports = parse_memories(a.sources, set(a.fifo_modules.split()))
    mapping = parse_mapping(a.log)
    depth = json.load(open(a.depth))

    # Primitives per memory: memory_libmap names the cells it creates after the memory
    # (`rxe.qp_ram.mem.0.0`, kept through techmap), so the longest memory path found in a cell
    # name owns that cell.
    import glob
    import os
    per_mem = defaultdict(lambda: defaultdict(int))
    names = sorted((m["name"] for m in mems), key=len, reverse=True)
    for path in sorted(glob.glob(os.path.join(a.cells_dir, "*.txt"))):
        ptype = os.path.basename(path)[:-4]
        for line in open(path):
            line = line.strip()
            if not line.startswith("top/"):
                continue
            for n in names:
                if line[4:].startswith(n + ".") or line[4:] == n:
                    per_mem[n][ptype] += 1
                    break

    luts_logic = sum(v for k, v in stat.items() if k in LOGIC_LUTS)
    luts_mem = sum(v * LUTS_PER_MEMORY_PRIMITIVE[k] for k, v in stat.items()
                   if k in LUTS_PER_MEMORY_PRIMITIVE)
    bram36 = stat.get("RAMB36E2", 0)
    bram18 = stat.get("RAMB18E2", 0)

    memories = []
    for m in mems:
        memories.append({
            "name": m["name"], "kind": m["kind"], "depth": m["depth"], "width": m["width"],
            "bits": m["bits"], "mapped_to": mapping.get(m["name"], "FF/logic"),
            "primitives": dict(per_mem.get(m["name"], {})),
        })

    def depth_of(suffix):
        for m in mems:
            if m["kind"] == "table" and m["module"].endswith(suffix):
                return m["depth"]
        return None

    report = {
        "luts": luts_logic + luts_mem,
        "luts_logic": luts_logic,
        "luts_memory": luts_mem,
        "ffs": sum(v for k, v in stat.items() if k in FLOPS),
        "bram36": bram36,
        "bram18": bram18,
        "bram36_equivalent": bram36 + bram18 / 2,
        "uram": stat.get("URAM288", 0),
        "dsp": stat.get("DSP48E2", 0),
        "carry": stat.get("CARRY4", 0) + stat.get("CARRY8", 0),
        "muxf": sum(stat.get(k, 0) for k in ("MUXF7", "MUXF8", "MUXF9")),
        "latches": sum(v for k, v in stat.items() if k in LATCHES),
        "logic_levels": depth["logic_levels"],
        "target_levels": a.target,
        "end_registers_over_target": depth["over_target"]["end_registers"],
        "levels_histogram": depth["histogram"],
        "deepest_paths": depth["paths"],
        "memories": memories,
        "tables_in_bram_or_uram": all(m["mapped_to"] in ("BRAM", "URAM")
                                      for m in memories if m["kind"] == "table"),
        "config": {
            "qps": depth_of("qp_ram"),
            "mrs": depth_of("mr_ram"),
            "datapath_bits": top_ports.get("m_axis_tx_tdata"),
        },
        "ram_policy": a.ram_policy,
        "tool": a.yosys.strip(),
        "flow": ("synth_xilinx -family xcup" + (" -flatten" if a.flatten != "no" else "")
                 + (" -abc9" if a.abc9 != "no" else "")
                 + "; depth: LUT levels of the mapped netlist (scripts/synth/depth.py)"),
        "cells": stat,
        "runtime_s": {"synth_xilinx": a.seconds_synth, "depth": a.seconds_depth,
                      "total": a.seconds_total},
    }
    with open(a.json_out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")

    c = report["config"]
    md = []
    md.append(f"## Configuration: {c['qps']} QPs, {c['mrs']} MRs, {c['datapath_bits']}-bit datapath\n")
    md.append(f"{report['tool']}; `{report['flow']}`; RAM policy `{a.ram_policy}`; "
              f"run time {a.seconds_synth} s (synth_xilinx) + {a.seconds_depth} s (depth).\n")
    md.append("| LUT (logic + memory) | FF | RAMB36E2 | RAMB18E2 | BRAM (36 Kb eq.) | URAM | DSP | LUT levels |")
    md.append("|---|---|---|---|---|---|---|---|")
    md.append(f"| {report['luts']} ({luts_logic} + {luts_mem}) | {report['ffs']} | {bram36} | "
              f"{bram18} | {report['bram36_equivalent']:g} | {report['uram']} | {report['dsp']} | "
              f"{report['logic_levels']} |\n")
    md.append("| memory | kind | depth × width | bits | mapped to | primitives |")
    md.append("|---|---|---|---|---|---|")
    for m in sorted(memories, key=lambda m: (m["kind"] != "table", m["name"])):
        prims = ", ".join(f"{v} {k}" for k, v in sorted(m["primitives"].items())) or "-"
        md.append(f"| `{m['name']}` | {m['kind']} | {m['depth']} × {m['width']} | {m['bits']} | "
                  f"{m['mapped_to']} | {prims} |")
    md.append("")
    md.append(f"LUT6 levels per path end (bits): {depth['histogram']}; "
              f"{report['end_registers_over_target']} end registers deeper than {a.target}.\n")
    md.append("| levels | from | to |")
    md.append("|---|---|---|")
    for p in depth["paths"][:20]:
        md.append(f"| {p['levels']} | `{p['from']}` | `{p['to']}` |")
    md.append("")
    with open(a.md_out, "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
