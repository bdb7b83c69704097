#!/usr/bin/env python3
"""Collectives and tensor parallelism on the simulated mesh.

Rows:
- all_reduce / all_gather / reduce_scatter / all_to_all over the 8 chips of an A2 server,
  1 KB to 1 GB: simulated time, algorithm and bus bandwidth (busbw = algbw x the
  collective's factor: 2(p-1)/p for all-reduce, (p-1)/p for the others, NCCL's
  convention). Messages up to --values-max bytes also move real data through the Go core
  (host_s is that run's wall time); larger ones are timed without data (host_s null:
  nothing ran, eight ranks of a 1 GB message being 8 GB of host memory per buffer).
- tensor parallelism of a GPT-2-medium block (hidden 1024, 16 heads, 128 tokens, fp16) on
  1, 2, 4 and 8 chips, sharded by the automatic pass (parallel_strategy="model_parallel"):
  simulated time and communication share (bytes: all-reduced bytes per rank).
- pipeline parallelism over 4 chips (parallel_strategy="pipeline_parallel"), training
  31 tanh-linear layers (hidden 64, fp32, 16 rows a micro-batch) at m = 4, 8, 16
  micro-batches for each schedule: simulated time, the bubble of the run (transfers
  included) against the schedule's (p-1)/m ((p-1)/(v m) interleaved, v = 2), the
  schedule's own bubble (transfers taken as instantaneous), the bubble with each send's
  launch after its step (overlap_p2p_launch=False), the idle share, communication share
  and chip 0's peak activation bytes and its whole memory (weights, gradient sums and
  activations; bytes: one activation transfer).

    python bench/distributed.py [--json] [--values-max BYTES] [--tp-tokens N] [--no-pipeline]
"""
import argparse
import dataclasses
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
            host_s = None
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


def gpt2_block(rng, hidden, heads, tokens):
    """A GPT-2 block for one chip (pre-norm causal attention, GELU MLP, residuals) with
    its weights captured; the tensor-parallel pass shards it."""

    def w(*shape):
        return (rng.standard_normal(shape) * shape[0] ** -0.5 / 2).astype(np.float16)

    wq, wk, wv, wo, w1, w2 = w(hidden, hidden), w(hidden, hidden), w(hidden, hidden), w(hidden, hidden), w(hidden, 4 * hidden), \
        w(4 * hidden, hidden)
    hd = hidden // heads
    mask = np.tril(np.ones((tokens, tokens), bool))

    def block(x):
        a = p.layer_norm(x)
        q, k, v = (p.transpose(p.reshape(p.matmul(a, m), tokens, heads, hd), 1, 0, 2) for m in (wq, wk, wv))
        s = p.where(p.from_numpy(mask), p.matmul(q, k, transpose_b=True) * (hd ** -0.5), -1e4)
        att = p.matmul(p.softmax(s, axis=-1), v)
        x = x + p.matmul(p.reshape(p.transpose(att, 1, 0, 2), tokens, hidden), wo)
        return x + p.matmul(p.gelu(p.matmul(p.layer_norm(x), w1)), w2)

    return block


def tp_rows(tokens=128):
    """A GPT-2-medium block on 1, 2, 4 and 8 chips through the automatic tensor-parallel
    pass (parallel_strategy="model_parallel"); bytes: the all-reduced bytes per rank.
    GPT-2-medium's 16 heads divide by 8 (GPT-2-small's 12 do not)."""
    rng = np.random.default_rng(1)
    hidden, heads = 1024, 16
    block = gpt2_block(rng, hidden, heads, tokens)
    x = rng.standard_normal((tokens, hidden)).astype(np.float16)
    rows = []
    for tp in (1, 2, 4, 8):
        ex = p.compile(block, config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=tp))
        ex.run(x)  # plans and compiles every rank's programs
        t0 = time.perf_counter()
        ex.run(x)
        host = time.perf_counter() - t0
        r = ex.last_report
        comm = sum(c["seconds"] for c in r.collectives)
        moved = ex.report.all_reduce_bytes if tp > 1 else 0  # a group of one moves nothing
        rows.append({"case": f"gpt2 block {tokens} tokens tp={tp}", "ranks": tp, "bytes": moved, "sim_us": r.seconds * 1e6,
                     "comm_share": r.comm_share, "comm_us": comm * 1e6, "pairs": len(ex.report.pairs), "host_s": host})
    return rows


def pipeline_rows():
    rng = np.random.default_rng(3)
    h, rows_per_micro, stages = 64, 16, 4
    rows = []
    for schedule in ("gpipe", "1f1b", "interleaved_1f1b"):
        v = 2 if schedule == "interleaved_1f1b" else 1
        layers = [(lambda x, w: p.tanh(p.matmul(x, w)), [(rng.standard_normal((h, h)) / 8).astype(np.float32)])
                  for _ in range(stages * 8 * v - 1)]
        for m in (4, 8, 16):
            cfg = p.DistributedConfig(parallel_strategy="pipeline_parallel", device_mesh=[stages], pipeline_parallel_size=stages,
                                      num_microbatches=m, schedule=schedule)
            ex = p.compile(layers, config=cfg)
            x = rng.standard_normal((rows_per_micro * m, h)).astype(np.float32)
            t0 = time.perf_counter()
            ex.value_and_grad(lambda y, t: p.mean((y - t) ** 2.0), x, x)
            host = time.perf_counter() - t0
            r = ex.last_report
            serial = p.compile(layers, config=dataclasses.replace(cfg, overlap_p2p_launch=False))
            serial.value_and_grad(lambda y, t: p.mean((y - t) ** 2.0), x, x)
            rows.append({"case": f"pipeline {schedule} m={m}", "ranks": stages, "bytes": rows_per_micro * h * 4,
                         "sim_us": r.seconds * 1e6, "bubble": r.bubble, "theory": (stages - 1) / (v * m),
                         "schedule_bubble": r.schedule_bubble, "bubble_launch_after_step": serial.last_report.bubble,
                         "idle_share": r.idle_share, "comm_share": r.comm_share,
                         "peak_activation_bytes": r.stages[0].peak_activation_bytes,
                         "memory_bytes": r.stages[0].memory_bytes, "host_s": host})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON list")
    ap.add_argument("--tp-tokens", type=int, default=128, help="tokens of the tensor-parallel GPT-2 block")
    ap.add_argument("--values-max", type=int, default=1 << 24, help="largest message (bytes) moved with real data")
    ap.add_argument("--no-pipeline", action="store_true", help="leave out the pipeline rows")
    args = ap.parse_args()
    p.set_device("a2")
    rows = collective_rows(args.values_max) + tp_rows(args.tp_tokens) + ([] if args.no_pipeline else pipeline_rows())
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        extra = f"busbw {r['busbw_gbs']:7.1f} GB/s  {r['algorithm']}" if "busbw_gbs" in r else f"comm share {r['comm_share']:.2f}"
        if "bubble" in r:
            extra += (f"  bubble {r['bubble']:.3f} (theory {r['theory']:.3f}, schedule {r['schedule_bubble']:.3f}, "
                      f"launch after step {r['bubble_launch_after_step']:.3f})  idle {r['idle_share']:.3f}")
        host = "timed without data" if r["host_s"] is None else f"{r['host_s']:.3f} s"
        print(f"{r['case']:<28} ranks {r['ranks']}  sim {r['sim_us']:10.2f} us  {extra}  host {host}")


if __name__ == "__main__":
    main()
