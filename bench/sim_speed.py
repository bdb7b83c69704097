#!/usr/bin/env python3
"""Host speed of the simulated NPU against numpy on the same computations.

Cases: fp16 GEMM 1024^3 and 2048^3 on the a2 preset (the calibration kernel of
device/calib; numpy computes it in float32), row softmax and layer norm over a
4096 x 4096 float32 matrix, each in functional mode (values only) and timed (values
and the timing model). The simulator runs in the Go helper cmd/pto-simspeed, which
measures its own RunTask time; numpy runs in this process.

    python bench/sim_speed.py --json    # [{case, sim_s, numpy_s, ratio, ...}, ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_of(f, reps):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        el = time.perf_counter() - t0
        best = el if best is None else min(best, el)
    return best


def numpy_cases():
    rng = np.random.default_rng(0)
    cases = {}
    for n in (1024, 2048):
        a = rng.standard_normal((n, n)).astype(np.float16).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float16).astype(np.float32)
        cases[f"gemm_fp16_{n}"] = lambda a=a, b=b: (a @ b).astype(np.float16)
    x = rng.standard_normal((4096, 4096)).astype(np.float32)

    def softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm():
        d = x - x.mean(axis=1, keepdims=True)
        return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5)

    cases["softmax_4096x4096"] = softmax
    cases["layernorm_4096x4096"] = layernorm
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--reps", type=int, default=3, help="runs per case; the fastest counts")
    ap.add_argument("--portable", action="store_true", help="build without GOEXPERIMENT=simd")
    args = ap.parse_args()
    go = shutil.which("go")
    if go is None:
        sys.exit("sim_speed.py: the Go toolchain (go) is needed to build cmd/pto-simspeed")
    cmd = [go, "run", "./cmd/pto-simspeed", "-reps", str(args.reps)]
    # The SIMD kernels need GOEXPERIMENT=simd (Go 1.26); a toolchain without it
    # builds the portable kernels.
    env = dict(os.environ)
    if not args.portable:
        env["GOEXPERIMENT"] = ",".join(filter(None, [env.get("GOEXPERIMENT", ""), "simd"]))
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0 and not args.portable:
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("sim_speed.py: cmd/pto-simspeed failed:\n" + out.stderr)
    sims = json.loads(out.stdout)
    np_s = {name: best_of(f, args.reps) for name, f in numpy_cases().items()}
    rows = []
    for r in sims:
        n = np_s[r["case"]]
        rows.append({"case": f"{r['case']} {r['mode']}", "sim_s": r["sim_s"], "numpy_s": n,
                     "ratio": r["sim_s"] / n, "mode": r["mode"], "sim_cycles": r["sim_cycles"],
                     "simd": r["simd"]})
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    for r in rows:
        print(f"{r['case']:<32} sim {r['sim_s']:8.3f} s  numpy {r['numpy_s']:8.4f} s  ratio {r['ratio']:7.1f}")


if __name__ == "__main__":
    main()
