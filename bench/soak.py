"""Soak test, run on demand (not in CI): many small eager ops and compiled runs in one
process with flat memory, and threads running executors at once with identical bits.

    python bench/soak.py [--eager N] [--runs N] [--threads N] [--thread-runs N] [--json]

- eager: N small eager ops (4x8 float32 elementwise ops in chains of 12, each chain
  realised with .numpy() and compared with numpy);
- compiled: one executor run N times on fresh inputs (every result compared with numpy);
- threads: T threads, each with its own executor of the same function, each running it
  on the same inputs; every result must equal one single-threaded result bit for bit.

For each phase it prints the resident memory (RSS) at the start (after a warm-up) and at
the end, the largest sample in between, and the rate. It exits 1 when a result is wrong,
the threads disagree, or RSS grows by more than --max-growth-mib in a phase.
"""

import argparse
import gc
import json
import os
import sys
import threading
import time

import numpy as np

import pypto as p

CHAIN = 12  # eager ops per realisation (eager_chain's)


def rss_mib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


class Phase:
    """RSS at the start (after warm-up), sampled while it runs, and at the end."""

    def __init__(self, name, count, unit):
        self.name, self.count, self.unit = name, count, unit
        gc.collect()
        self.start, self.peak, self.t0 = rss_mib(), 0.0, time.perf_counter()

    def sample(self):
        self.peak = max(self.peak, rss_mib())

    def end(self):
        gc.collect()
        self.seconds = time.perf_counter() - self.t0
        self.final = rss_mib()
        self.peak = max(self.peak, self.final)
        return {"phase": self.name, "count": self.count, "unit": self.unit, "seconds": round(self.seconds, 2),
                "per_second": round(self.count / self.seconds, 1), "rss_start_mib": round(self.start, 1),
                "rss_end_mib": round(self.final, 1), "rss_peak_mib": round(self.peak, 1),
                "rss_growth_mib": round(self.final - self.start, 1)}


def eager_chain(x, y):
    """CHAIN eager ops on p.Tensors (2 + 3 + 2 + 3 + 2), and the same on numpy arrays."""
    t, a = x, x.numpy()
    b = y.numpy()
    for k in range(5):
        t = p.maximum(t * y, t - 1.5) if k % 2 else (t + y) * 0.5
        a = np.maximum(a * b, a - np.float32(1.5)) if k % 2 else (a + b) * np.float32(0.5)
    return t, a


def eager(n, rng):
    x = p.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    y = p.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    for _ in range(50):  # warm-up: compile the chain once, settle the allocators
        eager_chain(x, y)[0].numpy()
    ph, bad = Phase("eager ops", n // CHAIN * CHAIN, "op"), 0
    for i in range(n // CHAIN):
        t, want = eager_chain(x, y)
        bad += not np.array_equal(t.numpy(), want)
        if i % 1000 == 0:
            ph.sample()
    return ph.end(), bad


def model(a, b):
    return p.maximum(a * b + 1.0, a - b).sum(axis=-1)


def model_np(a, b):
    return np.maximum(a * b + np.float32(1), a - b).sum(axis=-1, dtype=np.float32)


def compiled(n, rng):
    f = p.compile(model, inputs=[p.Tensor([16, 64]), p.Tensor([16, 64])])
    a, b = (rng.standard_normal((16, 64)).astype(np.float32) for _ in range(2))
    for _ in range(20):
        f.run(a, b).numpy()
    ph, bad = Phase("compiled runs", n, "run"), 0
    for i in range(n):
        a = rng.standard_normal((16, 64)).astype(np.float32)
        got = f.run(a, b).numpy()
        bad += not np.allclose(got, model_np(a, b), rtol=1e-5, atol=1e-4)
        if i % 500 == 0:
            ph.sample()
    return ph.end(), bad


def threads(n_threads, runs, rng):
    a, b = (rng.standard_normal((64, 256)).astype(np.float32) for _ in range(2))
    want = p.compile(model).run(a, b).numpy()
    executors = [p.compile(model) for _ in range(n_threads)]
    results, errors = [[] for _ in range(n_threads)], []

    def work(k):
        try:
            for _ in range(runs):
                results[k].append(executors[k].run(a, b).numpy())
        except Exception as e:  # reported, not swallowed: the phase fails
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    ph = Phase(f"{n_threads} threads", n_threads * runs, "run")
    ts = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in ts:
        t.start()
    while any(t.is_alive() for t in ts):
        ph.sample()
        time.sleep(0.2)
    for t in ts:
        t.join()
    row = ph.end()
    bad = len(errors) + sum(not np.array_equal(r.view(np.uint32), want.view(np.uint32)) for rs in results for r in rs)
    bad += sum(len(rs) != runs for rs in results) if not errors else 0
    for e in errors:
        print(e, file=sys.stderr)
    return row, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eager", type=int, default=1_000_000, help="small eager ops")
    ap.add_argument("--runs", type=int, default=10_000, help="compiled runs")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--thread-runs", type=int, default=200, help="runs per thread")
    ap.add_argument("--device", default="a2")
    ap.add_argument("--max-growth-mib", type=float, default=64.0)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    p.set_device(args.device)
    rng = np.random.default_rng(0)
    rows = []
    for name, run in (("eager", lambda: eager(args.eager, rng)), ("compiled", lambda: compiled(args.runs, rng)),
                      ("threads", lambda: threads(args.threads, args.thread_runs, rng))):
        row, bad = run()
        row["wrong"] = bad
        rows.append(row)
        if not args.json:
            print(f"{row['phase']:>14}: {row['count']:>8} {row['unit']}s in {row['seconds']:>7.1f} s ({row['per_second']:>8.0f}/s), "
                  f"RSS {row['rss_start_mib']:.1f} -> {row['rss_end_mib']:.1f} MiB (peak {row['rss_peak_mib']:.1f}), wrong {bad}",
                  flush=True)
    if args.json:
        print(json.dumps({"device": args.device, "load": os.getloadavg(), "rows": rows}, indent=1))
    failed = [r["phase"] for r in rows if r["wrong"] or r["rss_growth_mib"] > args.max_growth_mib]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
