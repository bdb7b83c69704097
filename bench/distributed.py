#!/usr/bin/env python3
"""Collectives and tensor parallelism on the simulated mesh.

Rows:
- all_reduce / all_gather / reduce_scatter / all_to_all over the 8 chips of an A2 server,
  1 KB to 1 GB: simulated time, algorithm and bus bandwidth (busbw = algbw x the
  collective's factor: 2(p-1)/p for all-reduce, (p-1)/p for the others, NCCL's
  convention). Messages up to --values-max bytes also move real data through the Go core
  (host_s is that run's wall time); larger ones are timed without data (host_s 0).
- tensor parallelism of a GPT-2-small MLP block (hidden 768, 4x, 128 tokens, fp16) on
  1, 2, 4 and 8 chips: simulated time and communication share.

    python bench/distributed.py [--json] [--values-max BYTES]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import pypto as p  # noqa: E402

D = p.distributed


def collective_rows(values_max):
    mesh = D.Mesh((8,), ("x",))
    rows = []
    factor = {"all_reduce": 2 * 7 / 8, "all_gather": 7 / 8, "reduce_scatter": 7 / 8, "all_to_all": 7 / 8}
    for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        n = 1 << 10
        while n <= 1 << 30:
            host_s = 0.0
            if n <= values_max:
                elems = n // 4
                x = np.random.default_rng(0).standard_normal((8, elems if kind != "all_gather" else elems // 8)).astype(np.float32)
                fns = {
                    "all_reduce": lambda s: D.all_reduce(s),
                    "all_gather": lambda s: D.all_gather(s, axis=1),
                    "reduce_scatter": lambda s: D.reduce_scatter(s, axis=1),
                    "all_to_all": lambda s: D.all_to_all(s, split_axis=1, concat_axis=1),
                }
                f = p.shard_map(fns[kind], mesh, (D.P("x", None),), D.P("x", None))
                t0 = time.perf_counter()
                f(x)
                host_s = time.perf_counter() - t0
                t = D.last_report().collectives[0]
                sim = t["seconds"]
                algo = "+".join(ph["algorithm"] for ph in t["phases"])
            else:
                share = n // 8 if kind == "all_gather" else n
                t = D.collective_time(kind, share, mesh)
                sim = t["seconds"]
                algo = "+".join(ph["algorithm"] for ph in t["phases"])
            algbw = n / sim
            rows.append({"case": f"{kind} {n} B", "ranks": 8, "bytes": n, "sim_us": sim * 1e6, "algorithm": algo,
                         "algbw_gbs": algbw / 1e9, "busbw_gbs": algbw * factor[kind] / 1e9, "host_s": host_s})
            n <<= 2
    return rows


def tp_rows():
    rng = np.random.default_rng(1)
    hidden, tokens = 768, 128
    x = rng.standard_normal((tokens, hidden)).astype(np.float16)
    w1 = (rng.standard_normal((hidden, 4 * hidden)) / 28).astype(np.float16)
    w2 = (rng.standard_normal((4 * hidden, hidden)) / 55).astype(np.float16)
    rows = []
    for tp in (1, 2, 4, 8):
        mesh = D.Mesh((tp,), ("tp",))

        def block(x, a, b):
            y = p.matmul(p.gelu(p.matmul(x, a)), b)
            return D.psum(y, "tp") if tp > 1 else y

        f = p.shard_map(block, mesh, (None, D.P(None, "tp"), D.P("tp", None)), None)
        t0 = time.perf_counter()
        f(x, w1, w2)
        host = time.perf_counter() - t0
        r = D.last_report()
        comm = sum(c["seconds"] for c in r.collectives)
        rows.append({"case": f"gpt2 mlp tp={tp}", "ranks": tp, "bytes": tokens * hidden * 2, "sim_us": r.seconds * 1e6,
                     "comm_share": r.comm_share, "comm_us": comm * 1e6, "host_s": host})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON list")
    ap.add_argument("--values-max", type=int, default=1 << 24, help="largest message (bytes) moved with real data")
    args = ap.parse_args()
    p.set_device("a2")
    rows = collective_rows(args.values_max) + tp_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        extra = f"busbw {r['busbw_gbs']:7.1f} GB/s  {r['algorithm']}" if "busbw_gbs" in r else f"comm share {r['comm_share']:.2f}"
        print(f"{r['case']:<28} ranks {r['ranks']}  sim {r['sim_us']:10.2f} us  {extra}  host {r['host_s']:.3f} s")


if __name__ == "__main__":
    main()
