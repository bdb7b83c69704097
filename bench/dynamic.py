"""One traced program for many sizes: the guide's transformer block (hidden 1024) traced
once with symbolic batch and seq_len and run for every seq_len from 1 to --max, against
a program compiled for each exact size from the same trace's parameters. Per size: the
bucket chosen, the simulated time of both, their ratio and whether the outputs have the
same bits; then the programs the bucketed executor built, the worst ratio and the host
time its compilations took (bucket programs and the estimates that sized the buckets).

    python bench/dynamic.py [--device a2] [--max 2048] [--step 1] [--lows] [--case causal] [--json]

--step N runs every N-th size and each bucket's smallest size (where padding costs most);
--lows runs only each bucket's smallest size, from 1 up (the size after each bound).
--case softmax (the default) is the guide's block as written there, its attention a
softmax over all keys; --case causal is the same block with causal attention
(p.scaled_dot_product_attention(q, k, v, is_causal=True)).
"""

import argparse
import json
import math
import time

import numpy as np

import pypto as p

HIDDEN = 1024
SEED = 2024


def block(x, causal=False):
    hidden = HIDDEN
    q = p.linear(x, hidden, hidden)
    k = p.linear(x, hidden, hidden)
    v = p.linear(x, hidden, hidden)
    if causal:
        attn = p.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        attn = p.matmul(p.softmax(p.matmul(q, k, transpose_b=True) / math.sqrt(hidden), axis=-1), v)
    ff = p.relu(p.linear(attn, hidden, hidden * 4))
    return p.linear(ff, hidden * 4, hidden) + x


def traced(shape, config, causal):
    p.manual_seed(SEED)  # every trace draws the same parameters
    return p.compile(lambda x: block(x, causal), inputs=[p.Tensor(shape, dtype=p.float16)], config=config)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--max", type=int, default=2048)
    ap.add_argument("--step", type=int, default=1)
    ap.add_argument("--lows", action="store_true", help="run only each bucket's smallest size")
    ap.add_argument("--case", choices=("softmax", "causal"), default="softmax")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    causal = args.case == "causal"
    p.set_progress(False)  # the table is the progress
    config = p.CompileConfig(chip=args.device)
    bucketed = traced([p.symbol("batch"), p.symbol("seq_len"), HIDDEN], config, causal)
    compile_ms = 0.0
    rows = {}

    def run(n):
        nonlocal compile_ms
        x = (np.random.default_rng(n).standard_normal((1, n, HIDDEN)) * 0.5).astype(np.float16)
        before = bucketed.num_compiled
        t0 = time.perf_counter()
        got = bucketed.run(x).numpy()
        first = time.perf_counter() - t0
        sim = bucketed.last_time_ms
        program = bucketed.stats()["program"]
        if bucketed.num_compiled > before:  # the first run of a bucket: time it again
            t0 = time.perf_counter()
            bucketed.run(x)
            compile_ms += max(0.0, first - (time.perf_counter() - t0)) * 1e3
        exact = traced([1, n, HIDDEN], config, causal)
        want = exact.run(x).numpy()
        rows[n] = {
            "seq_len": n,
            "program": program,
            "bucketed_ms": sim,
            "exact_ms": exact.last_time_ms,
            "slowdown": sim / exact.last_time_ms,
            "identical": bool(np.array_equal(got.view(np.uint16), want.view(np.uint16))),
        }
        if not args.json:
            r = rows[n]
            print(f"{n:>7} {program:>24} {r['bucketed_ms']:>12.4f} {r['exact_ms']:>10.4f} {r['slowdown']:>9.3f} {str(r['identical']):>9}", flush=True)

    if not args.json:
        sizes = "each bucket's smallest size" if args.lows else f"step {args.step}"
        print(f"guide's transformer block ({args.case} attention), hidden {HIDDEN}, float16, batch 1, seq_len 1..{args.max} {sizes}, on {args.device}")
        print(f"{'seq_len':>7} {'program':>24} {'bucketed ms':>12} {'exact ms':>10} {'slowdown':>9} {'identical':>9}")
    if args.lows:
        n = 1
        while n <= args.max:
            run(n)
            bound = rows[n]["program"].partition("seq_len<=")[2]  # "" for a program per size
            n = int(bound) + 1 if bound else n + 1
    else:
        for n in range(1, args.max + 1, args.step):
            run(n)
    if args.step > 1 and not args.lows:  # each bucket's smallest size, where its padding costs most
        for key, bounds in bucketed.info()["buckets"]["bounds"].items():
            if key.startswith("seq_len"):
                for low in [1] + [b + 1 for b in bounds]:
                    if low <= args.max and low not in rows:
                        run(low)
    worst = max(rows.values(), key=lambda r: r["slowdown"])
    info = bucketed.info()["buckets"]
    result = {
        "case": f"transformer block ({args.case} attention) hidden {HIDDEN}, batch 1, seq_len 1..{args.max} {'bucket low ends' if args.lows else f'step {args.step}'} on {args.device}",
        "programs": bucketed.num_compiled,
        "worst_slowdown": worst["slowdown"],
        "worst_seq_len": worst["seq_len"],
        "all_identical": all(r["identical"] for r in rows.values()),
        "sizes_run": len(rows),
        "estimates": info["probes"],
        "bounds": info["bounds"],
        "compile_ms_total": compile_ms,
    }
    if args.json:
        result["rows"] = [rows[n] for n in sorted(rows)]
        print(json.dumps(result))
    else:
        print(f"programs built: {result['programs']} (buckets sized with {result['estimates']} estimated programs)")
        print(f"worst slowdown: {worst['slowdown']:.3f} at seq_len {worst['seq_len']}; all identical: {result['all_identical']}")
        print(f"compile time (bucket programs and estimates): {compile_ms:.0f} ms")


if __name__ == "__main__":
    main()
