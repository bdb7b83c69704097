#!/usr/bin/env python3
"""Host speed of the simulated NPU against numpy on the same computations.

Cases: fp16 GEMM 1024^3 and 2048^3 on the a2 preset (the calibration kernel of
device/calib; numpy computes it in float32), row softmax and layer norm over a
4096 x 4096 float32 matrix, and an elementwise add of two float32 vectors of 2^22
elements, each in functional mode (values only), timed (values and the timing
model) and timed_uncached. A task run again with the same timing inputs takes its
times from the device's timing cache and computes only its values, so the timed
rows, the fastest of repeated runs, are such runs (timing_cached says so); the
timed_uncached rows run the timing loop every time (RunOptions.NoTimingCache), which
is what a task's first run costs. The simulator runs in the Go helper cmd/pto-simspeed, which measures its own
RunTask time; numpy runs in this process. Two cases time PyPTO's own host path in
fresh Python processes: `import` (seconds for `import pypto`; numpy_s is
`import numpy`) and `eager_small_op` (a 4x8 float32 add on a2 then .numpy(), per op;
numpy_s is numpy's add).

The simulator's rows also give the work a run did (sim_instructions: machine
instructions executed; sim_l2_lines: L2 lines the timed run's loads looked up, 0 in
functional mode) and the CPU time of the fastest run on each side
(sim_cpu_s: the Go process's, all threads; numpy_cpu_s: this process's) and their
ratio, cpu_ratio: on a loaded host the wall clock counts the time other jobs hold the
cores, the CPU time does not.

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
    """The fastest of reps runs of f: its wall time and the process's CPU time in it."""
    best = None
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        f()
        el, cpu = time.perf_counter() - t0, time.process_time() - c0
        if best is None or el < best[0]:
            best = (el, cpu)
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
    a = rng.standard_normal(1 << 22).astype(np.float32)
    b = rng.standard_normal(1 << 22).astype(np.float32)
    cases["add_fp32_4194304"] = lambda: a + b
    return cases


# The host path of PyPTO itself, each measured in a fresh Python process: the time of
# `import pypto` (against `import numpy`), and an eager 4x8 float32 add on the a2 preset
# followed by .numpy() (graph build, compile-cache hit, device run, copy back), per op,
# against numpy's add of the same arrays.
_IMPORT = "import time; t0 = time.perf_counter(); import {0}; print(time.perf_counter() - t0)"
_EAGER = """
import json, time
import numpy as np
import pypto as p
p.set_device("a2")
a = np.arange(32, dtype=np.float32).reshape(4, 8)
b = np.full((4, 8), 0.5, np.float32)
x, y = p.from_numpy(a), p.from_numpy(b)
for _ in range(100):
    (x + y).numpy()
def per_op(f, n=20, batches={0}):
    best = None
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            r = f()
        el = (time.perf_counter() - t0) / n
        best = el if best is None else min(best, el)
    return best, r
sim, r = per_op(lambda: (x + y).numpy())
assert np.array_equal(r, a + b), r
ref, _ = per_op(lambda: a + b)
print(json.dumps([sim, ref]))
"""


def python_env():
    """The environment of the measuring processes: a source checkout's python/ comes
    first when its library is built, otherwise the installed pypto is used. Bytecode
    is written and used as after `pip install` (which compiles it), whatever
    PYTHONDONTWRITEBYTECODE says: otherwise every import would compile pypto anew."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    src = os.path.join(ROOT, "python")
    if os.path.exists(os.path.join(src, "pypto", "libpypto.so")):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH", "")]))
    return env


def python_run(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("sim_speed.py: a measuring process failed:\n" + out.stderr)
    return json.loads(out.stdout)


def python_cases(reps):
    """Rows of the import and eager_small_op cases."""
    env = python_env()
    python_run(_IMPORT.format("pypto"), env)  # writes the bytecode of a source checkout
    imp = {"pypto": [], "numpy": []}
    for _ in range(max(reps, 5)):  # alternated, so both see the same load
        for m, times in imp.items():
            times.append(python_run(_IMPORT.format(m), env))
    imp = {m: min(times) for m, times in imp.items()}
    sim, ref = python_run(_EAGER.format(max(reps, 200)), env)
    return [
        {"case": "import", "mode": "fresh process", "sim_s": imp["pypto"], "numpy_s": imp["numpy"],
         "ratio": imp["pypto"] / imp["numpy"]},
        {"case": "eager_small_op", "mode": "eager", "sim_s": sim, "numpy_s": ref, "ratio": sim / ref},
    ]


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
        n, n_cpu = np_s[r["case"]]
        rows.append({"case": f"{r['case']} {r['mode']}", "sim_s": r["sim_s"], "numpy_s": n,
                     "ratio": r["sim_s"] / n, "mode": r["mode"], "sim_cycles": r["sim_cycles"],
                     "simd": r["simd"], "sim_cpu_s": r["sim_cpu_s"], "numpy_cpu_s": n_cpu,
                     "sim_instructions": r["instructions"], "sim_l2_lines": r["l2_lines"],
                     "timing_cached": r["timing_cached"],
                     "cpu_ratio": r["sim_cpu_s"] / n_cpu if n_cpu > 0 else None})
    rows += python_cases(args.reps)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    for r in rows:
        cpu = f"  cpu ratio {r['cpu_ratio']:6.1f}" if r.get("cpu_ratio") else ""
        print(f"{r['case']:<32} sim {r['sim_s']:9.3g} s  numpy {r['numpy_s']:9.3g} s  ratio {r['ratio']:7.1f}{cpu}")


if __name__ == "__main__":
    main()
