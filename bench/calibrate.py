#!/usr/bin/env python3
"""Calibration of the simulated NPU against the published GEMM measurements.

Runs the hand-tuned fp16 GEMM of reference/npu-facts.md (base block 128x256x64, four K
blocks per L1 load, double-buffered L1 and L0, C split in 2-D over the 24 cube cores)
on the a2 preset for m = k = n in {1536, 3072, 6144, 7680}, timing-only, through the
Go helper cmd/pto-calibrate (built with the repository's Go toolchain), and prints
the simulated figures beside the published ones.

    python bench/calibrate.py --json     # a JSON list, one object per table row
    python bench/calibrate.py            # a table
"""
import argparse
import json
import sys

from gocmd import run_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--chip", default="a2", help="chip preset (default a2)")
    args = ap.parse_args()
    rows = run_json("calibrate.py", "pto-calibrate", ["-json", "-chip", args.chip])
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    print(f"{'m=k=n':>6} {'sim ms':>8} {'pub ms':>8} {'err':>7} {'cube':>6} {'pub':>6} {'load':>6} {'pub':>6}")
    for r in rows:
        err = 100 * (r["sim_ms"] / r["published_ms"] - 1)
        print(f"{r['m']:>6} {r['sim_ms']:>8.4f} {r['published_ms']:>8.4f} {err:>+6.1f}% "
              f"{100 * r['cube_busy']:>6.1f} {100 * r['published_cube_busy']:>6.1f} "
              f"{100 * r['load_busy']:>6.1f} {100 * r['published_load_busy']:>6.1f}")


if __name__ == "__main__":
    main()
