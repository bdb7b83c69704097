#!/usr/bin/env python3
"""Calibration of the simulated NPU against the published GEMM and top-k measurements.

Runs the kernels of docs/sources.md on the a2 preset, timing-only, through the Go
helper cmd/pto-calibrate (built with the repository's Go toolchain): the hand-tuned fp16
GEMM (base block 128x256x64, four K blocks per L1 load, double-buffered L1 and L0, C split
in 2-D over the 24 cube cores) for m = k = n in {1536, 3072, 6144, 7680}, and the top-k
kernel on the 48 vector cores (TLOAD -> TSORT32 -> TMRGSORT ... -> TSTORE of values and
indices, two rows in flight per core) for the four published rows, and the 62
single-instruction measurements (rows of kind "instr": each instruction as a program of
its own, the simulator's cycles from its trace record beside the measured cycles and the
vendor cost model's precision). Each row is printed beside its published figures and its
leave-one-out prediction (the fitted constants refitted on the other rows; for an
instruction row, without its op's rows).

    python bench/calibrate.py --json          # a JSON list, one object per table row
    python bench/calibrate.py                 # a table
    python bench/calibrate.py --sensitivity   # each assumed constant at 0.5x and 2x
"""
import argparse
import json
import sys

from gocmd import run_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--chip", default="a2", help="chip preset (default a2)")
    ap.add_argument("--sensitivity", action="store_true",
                    help="each assumed constant at 0.5x and 2x: the change of every row's time")
    args = ap.parse_args()
    if args.sensitivity:
        rows = run_json("calibrate.py", "pto-calibrate", ["-sensitivity", "-json", "-chip", args.chip])
        if args.json:
            json.dump(rows, sys.stdout, indent=2)
            print()
            return
        cases = list(rows[0]["rows"].keys()) if rows else []
        print(f"{'constant':<28} {'x':>4} " + " ".join(f"{c:>14}" for c in cases))
        for r in rows:
            print(f"{r['constant']:<28} {r['factor']:>4} " + " ".join(f"{100 * r['rows'][c]:>+13.1f}%" for c in cases))
        return
    rows = run_json("calibrate.py", "pto-calibrate", ["-json", "-chip", args.chip])
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    instr = [r for r in rows if r["kind"] == "instr"]
    rows = [r for r in rows if r["kind"] != "instr"]
    print(f"{'case':<15} {'sim ms':>8} {'pub ms':>8} {'err':>7} {'loo ms':>8} {'loo err':>7}  busy sim/published")
    for r in rows:
        err = 100 * (r["sim_ms"] / r["published_ms"] - 1)
        loo = 100 * (r["loo_ms"] / r["published_ms"] - 1)
        units = [k[len("published_"):-len("_busy")] for k in r if k.startswith("published_") and k.endswith("_busy")]
        busy = " ".join(f"{u} {100 * r[u + '_busy']:.1f}/{100 * r['published_' + u + '_busy']:.1f}" for u in units)
        print(f"{r['case']:<15} {r['sim_ms']:>8.4f} {r['published_ms']:>8.4f} {err:>+6.1f}% "
              f"{r['loo_ms']:>8.4f} {loo:>+6.1f}%  {busy}")
    print()
    print(f"{'op/case':<48} {'measured':>8} {'sim':>6} {'prec':>5} {'vendor':>6} {'loo':>6} {'loo prec':>8}")
    kept = [r for r in instr if r["kept"]]
    for r in instr:
        sim = "-" if r["sim_cycles"] is None else str(r["sim_cycles"])
        prec = "" if r["precision"] is None else f"{r['precision']:.2f}"
        loo = f"{r['loo_cycles']:>6} {r['loo_precision']:>8.2f}" if r["kept"] else "  left out: " + r["left_out"].split(":")[0]
        print(f"{r['op'] + '/' + r['case']:<48} {r['measured_cycles']:>8} {sim:>6} {prec:>5} {r['vendor_precision']:>6.2f} {loo}")
    if kept:
        mean = lambda k: sum(r[k] for r in kept) / len(kept)  # noqa: E731
        print(f"kept {len(kept)} of {len(instr)}: mean precision {mean('precision'):.3f}, leave one op out "
              f"{mean('loo_precision'):.3f}, vendor model {mean('vendor_precision'):.3f}; "
              f"lowest {min(r['precision'] for r in kept):.2f}")


if __name__ == "__main__":
    main()
