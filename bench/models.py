"""Real PyTorch models on the simulated NPU: each model of tests/model_zoo.py (small
random-weight configurations of transformers, torchvision and timm models) through
``torch.compile(model, backend="pypto")`` and ``p.from_torch(model)``, checked against
torch's float32 output.

    python bench/models.py [--models gpt2,resnet18,...] [--paths compile,from_torch] [--sweep] [--json]

One object per model and path: model, path, status ("ok", "fallbacks", "mismatch",
"error: ..."), fallbacks (the operations left to torch), rel_err (largest difference
over torch's largest magnitude), argmax_agree (share of positions whose argmax over
the last axis agrees; None for encoders), host_s (wall seconds of the first call:
trace, compile, one simulated run), peak_rss_gb (the process's peak resident memory),
sim_ms (the simulated forward time), params_mb (parameter and buffer bytes / 2^20),
rss_limit_gb (the memory goal: 3x the parameter bytes + 1.5 GB). Each model and path
runs in a process of its own, so the peak is that model's; a process passing
--max-rss-gb is stopped and reported.

``--sweep`` runs each model at the sizes of model_zoo.SWEEP (several batch sizes and
sequence lengths or image sides) through one model captured with dynamic sizes
(``dynamic=True``); its rows (path "compile-sweep", "from_torch-sweep") add sizes,
host_s per size, captures (dynamo graphs), traces (PyPTO traces), programs (PyPTO
programs compiled, one per bucket of sizes) and, through p.from_torch, buckets (the
program each size ran: its bucket, or its sizes where the graph compiles a program per
size), per_size (why a capture with symbolic sizes was traced per size, else None) and
no_buckets (why its trace compiles a program per size rather than per bucket),
rel_err the worst and argmax_agree the lowest over the sizes.
"""

import argparse
import json
import multiprocessing
import os
import resource
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ holds scripts whose names are packages' too (kernels.py is transformers'
# "kernels"): not on the path, the repository's tests/ (the model zoo) instead.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

PATHS = ("compile", "from_torch")


def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def _watchdog(limit_gb: float):
    """Ends the process when its resident memory passes limit_gb (a model that grows
    without bound must not take the machine)."""

    def watch():
        while True:
            if _rss_gb() > limit_gb:
                print(json.dumps({"status": f"error: resident memory passed {limit_gb} GB"}), flush=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def _start(name: str, path: str, limit_gb: float):
    """The model's case, its eval model and the row's first keys, in this process."""
    _watchdog(limit_gb)
    import pypto as p
    from model_zoo import BY_NAME, param_bytes

    p.set_progress(False)
    case = BY_NAME[name]
    model = case.model()
    row = {"model": name, "path": path, "params_mb": round(param_bytes(model) / 2**20, 2)}
    row["rss_limit_gb"] = round(3 * param_bytes(model) / 2**30 + 1.5, 3)
    return case, model, row


def run_one(name: str, path: str, limit_gb: float) -> dict:
    """One model through one path, in this process."""
    import torch

    import pypto as p
    from model_zoo import compare

    case, model, row = _start(name, path, limit_gb)
    args = case.example()
    with torch.no_grad():
        want = model(*args)
    t0 = time.perf_counter()
    try:
        if path == "compile":
            import torch._dynamo

            from pypto.torch_interop.fallbacks import last_parts

            torch._dynamo.reset()
            with torch.no_grad():
                got = torch.compile(model, backend="pypto")(*args)
            sims = [e["sim_ms"] for e in last_parts() if e["sim_ms"] is not None]
            sim = sum(sims) if sims else None
        else:
            m = p.from_torch(model)
            got = m(*args)
            sim = m.last_time_ms
        row["host_s"] = round(time.perf_counter() - t0, 2)
        fb = p.last_fallbacks()
        row["fallbacks"] = [f["op"] for f in fb]
        row["rel_err"], row["argmax_agree"] = compare(got, want, case.kind)
        row["sim_ms"] = None if sim is None else round(sim, 4)
        ok = row["rel_err"] <= 2e-2 and (row["argmax_agree"] is None or row["argmax_agree"] >= 0.95)
        row["status"] = "fallbacks" if fb else ("ok" if ok else "mismatch")
    except Exception as e:  # noqa: BLE001 (the row reports it)
        row["host_s"] = round(time.perf_counter() - t0, 2)
        row["status"] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
    row["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return row


def run_sweep(name: str, path: str, limit_gb: float) -> dict:
    """One model through one path at each size of model_zoo.SWEEP, captured with
    dynamic sizes (dynamic=True), in this process: the row of run_one with rel_err the
    worst and argmax_agree the lowest over the sizes, and sizes ([batch, size] each),
    host_s (wall seconds of each size's call), captures (dynamo graphs), traces (PyPTO
    traces) and programs (PyPTO programs compiled: one per bucket of sizes)."""
    import torch

    import pypto as p
    from model_zoo import compare
    from pypto.torch_interop.fallbacks import last_parts

    case, model, row = _start(name, path + "-sweep", limit_gb)
    row.update(sizes=[], host_s=[], rel_err=0.0, argmax_agree=None, buckets=[])
    try:
        if path == "compile":
            import torch._dynamo

            torch._dynamo.reset()
            run = torch.compile(model, backend="pypto", dynamic=True)
        else:
            run = p.from_torch(model, dynamic=True)
        for b, s, args in case.sweep():
            with torch.no_grad():
                want = model(*args)
                t0 = time.perf_counter()
                got = run(*args)
            row["sizes"].append([b, s])
            row["host_s"].append(round(time.perf_counter() - t0, 2))
            rel, agree = compare(got, want, case.kind)
            if path == "from_torch":  # the bucket of sizes whose program ran (a part traced per size: the sizes)
                row["buckets"].append(run.executor.stats().get("program", f"{b}x{s} traced"))
            row["rel_err"] = max(row["rel_err"], rel)
            if agree is not None:
                row["argmax_agree"] = agree if row["argmax_agree"] is None else min(row["argmax_agree"], agree)
        if path == "compile":
            parts = last_parts()
            row["captures"] = len({e["graph"] for e in parts})
            row["traces"], row["programs"] = sum(e["traces"] for e in parts), sum(e["programs"] for e in parts)
        else:
            row["captures"], row["traces"], row["programs"] = len(run.captures), run.num_traced, run.num_compiled
            row["per_size"] = run.per_size  # why a symbolic capture was traced per size
            row["no_buckets"] = run.executor.info().get("no_buckets")  # why its trace compiles a program per size
        row["fallbacks"] = [f["op"] for f in p.last_fallbacks()]
        ok = row["rel_err"] <= 2e-2 and (row["argmax_agree"] is None or row["argmax_agree"] >= 0.95)
        row["status"] = "fallbacks" if row["fallbacks"] else ("ok" if ok else "mismatch")
    except Exception as e:  # noqa: BLE001 (the row reports it)
        row["status"] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
    row["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return row


def _child(name, path, limit_gb, sweep, queue):
    queue.put((run_sweep if sweep else run_one)(name, path, limit_gb))


def main():
    from model_zoo import CASES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(c.name for c in CASES))
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--max-rss-gb", type=float, default=6.0, help="stop a model whose process passes this")
    ap.add_argument("--json", action="store_true", help="print one JSON object per line")
    ap.add_argument("--sweep", action="store_true", help="run each model at several batch and sequence (or image) sizes with "
                    "dynamic sizes: one row per model and path, counting captures, traces and programs")  # fmt: skip
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")  # the Go runtime does not survive fork
    for name in args.models.split(","):
        for path in args.paths.split(","):
            queue = ctx.Queue()
            proc = ctx.Process(target=_child, args=(name, path, args.max_rss_gb, args.sweep, queue))
            proc.start()
            proc.join()
            row = queue.get() if not queue.empty() else {"model": name, "path": path, "status": f"error: the process ended with code {proc.exitcode}"}
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                counts = f"captures {row.get('captures')} traces {row.get('traces')} programs {row.get('programs')} " if args.sweep else ""
                print(f"{name:16s} {path:10s} {row['status'][:60]:60s} {counts}rel {row.get('rel_err')} argmax {row.get('argmax_agree')} "
                      f"host {row.get('host_s')} s peak {row.get('peak_rss_gb')} GB (goal {row.get('rss_limit_gb')}) sim {row.get('sim_ms')} ms "
                      f"fallbacks {row.get('fallbacks')}", flush=True)


if __name__ == "__main__":
    main()
