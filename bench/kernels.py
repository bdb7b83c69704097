#!/usr/bin/env python3
"""The compiler's kernels against the simulated chip's roofline.

Compiles each benchmark case (fp16 GEMMs 4096^3 and 6144^3, matmul + bias + relu,
softmax and layer norm over 8192x4096, attention [1, 32, 4096, 128] causal and not,
and a GPT-2-small-sized decoder stack over 1024 tokens) for the a2 preset, runs it on
the simulator with the timing model only (times never depend on values), and prints
its simulated time beside the chip's roofline for it, through the Go helper
cmd/pto-kernels (built with the repository's Go toolchain).

    python bench/kernels.py --json          # a JSON list, one object per case
    python bench/kernels.py                 # a table
    python bench/kernels.py --case softmax  # the cases matching a regular expression

Keys: case, sim_ms, roofline_ms (the largest of the cube time at peak, one fp32 pass
of the vector ops at peak, and the compulsory GM bytes at full HBM bandwidth),
roofline_frac (roofline_ms / sim_ms), cube_busy, gm_bytes (distinct GM bytes the
tasks read and wrote: HBM traffic with an L2 that holds the data),
compulsory_gm_bytes (inputs once, outputs once), compile_ms (a cold compile), plus
cached_compile_ms for the GPT case (a compile that finds the program in the
session's cache), tasks, bound (what sets the roofline) and instrs_per_core (static
machine instructions of the largest program a core runs: the code its instruction
cache must hold).
"""
import argparse
import json
import sys

from gocmd import run_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--chip", default="a2", help="chip preset (default a2)")
    ap.add_argument("--case", default="", help="only the cases matching this regular expression")
    args = ap.parse_args()
    extra = ["-case", args.case] if args.case else []
    rows = run_json("kernels.py", "pto-kernels", ["-json", "-chip", args.chip, *extra])
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    print(f"{'case':<38} {'sim ms':>9} {'roof ms':>9} {'frac':>6} {'bound':>7} {'cube':>6} "
          f"{'GM/comp':>8} {'compile ms':>11} {'tasks':>6} {'instrs':>7}")
    for r in rows:
        ratio = r["gm_bytes"] / r["compulsory_gm_bytes"]
        print(f"{r['case']:<38} {r['sim_ms']:>9.4f} {r['roofline_ms']:>9.4f} {r['roofline_frac']:>6.3f} "
              f"{r['bound']:>7} {r['cube_busy']:>6.3f} {ratio:>8.2f} {r['compile_ms']:>11.1f} {r['tasks']:>6} "
              f"{r['instrs_per_core']:>7}")
        if "cached_compile_ms" in r:
            print(f"{'':<38} cached compile {r['cached_compile_ms']:.4f} ms")


if __name__ == "__main__":
    main()
