"""Batching, as the guide shows it: requests stacked into one batch with p.stack, one
compiled run of the model, the result split back per request with p.unstack; then the
guide's benchmark (warm up, N runs, ms per run and samples per second, simulated).

    python examples/batching.py [--device a2|tiny] [--requests N] [--seq N]
        [--hidden N] [--runs N]

The model is a two-layer MLP with a residual connection, relu(x @ w1) @ w2 + x, on
float16 requests of [seq, hidden]. Every request's result is checked against numpy.
"""

import argparse

import numpy as np

import pypto as p


def mlp(x, w1, w2):
    return p.matmul(p.relu(p.matmul(x, w1)), w2) + x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    p.set_device(args.device)
    rng = np.random.default_rng(0)
    h = args.hidden
    w1 = (rng.standard_normal((h, 2 * h)) / np.sqrt(h)).astype(np.float16)
    w2 = (rng.standard_normal((2 * h, h)) / np.sqrt(2 * h)).astype(np.float16)
    requests = [rng.standard_normal((args.seq, h)).astype(np.float16) for _ in range(args.requests)]

    model = p.compile(lambda x: mlp(x, w1, w2))
    batch = p.stack([p.from_numpy(r) for r in requests])  # [requests, seq, hidden]
    results = p.unstack(model.run(batch))
    ok = len(results) == len(requests)
    worst = 0.0
    for r, got in zip(requests, results):
        hid = np.maximum(r.astype(np.float32) @ w1.astype(np.float32), 0).astype(np.float16)
        want = (hid.astype(np.float32) @ w2.astype(np.float32)).astype(np.float16).astype(np.float32) + r
        err = np.abs(got.numpy().astype(np.float32) - want).max() / max(1.0, np.abs(want).max())
        worst = max(worst, float(err))
    ok &= worst <= 1e-2
    print(f"{args.requests} requests of [{args.seq}, {h}] stacked, run once, unstacked: worst relative error {worst:.2e}")

    model.run(batch)  # warm up (compiled already; the program is cached)
    times = []
    for _ in range(args.runs):
        model.run(batch)
        times.append(model.last_time_ms)
    ms = sum(times) / len(times)
    print(f"benchmark: {args.runs} runs, {ms:.4f} ms per run simulated on {args.device}, "
          f"{args.requests / (ms / 1e3):.0f} samples/s")  # fmt: skip
    print("batched results match numpy" if ok else "batched results DIFFER from numpy")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
