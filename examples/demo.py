"""PyPTO demo: a two-layer MLP (float16) on the simulated NPU, checked against numpy.

    python examples/demo.py [--device a2|tiny] [--batch N]

Prints the result's agreement with a float32 numpy reference, the simulated cycles and
time of one run, and a per-task profile of the compiled program.
"""

import argparse
import time

import numpy as np

import pypto as p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2", help="chip preset: a2 (default) or tiny")
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    p.set_device(args.device)

    hidden, ffn, out_dim = 256, 512, 128
    rng = np.random.default_rng(0)

    def param(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    w1, b1 = param((ffn, hidden), hidden**-0.5), param(ffn, 0.1)  # w1 stored [out, in] like torch
    w2, b2 = param((ffn, out_dim), ffn**-0.5), param(out_dim, 0.1)
    x = rng.standard_normal((args.batch, hidden)).astype(np.float16)

    W1, B1, W2, B2 = (p.from_numpy(a) for a in (w1, b1, w2, b2))

    def mlp(x):
        h = p.relu(p.matmul(x, W1, transpose_b=True) + B1)  # [batch, ffn]
        return h @ W2 + B2  # [batch, out_dim]

    # Eager and lazy: ops build a pending graph; .numpy() compiles it and runs it.
    y_eager = mlp(p.from_numpy(x))
    print(f"eager result: shape {y_eager.shape}, dtype {y_eager.dtype}, pending={y_eager.is_pending}")
    y_eager = y_eager.numpy()

    # Compiled: traced once, then run.
    model = p.compile(mlp)
    t0 = time.perf_counter()
    y = model.run(x).numpy()
    wall = time.perf_counter() - t0

    # numpy reference in float32 from the same float16 values.
    f = np.float32
    ref = np.maximum(x.astype(f) @ w1.astype(f).T + b1.astype(f), 0) @ w2.astype(f) + b2.astype(f)
    err = np.abs(y.astype(f) - ref)
    scale = np.abs(ref).max()
    print(f"\nMLP [{args.batch}x{hidden}] -> relu(x @ W1^T + b1) [{ffn}] -> @ W2 + b2 [{out_dim}], float16")
    print(f"device: {p.get_device()}")
    print(f"first row, PyPTO: {np.array2string(y[0, :6].astype(f), precision=4)}")
    print(f"first row, numpy: {np.array2string(ref[0, :6], precision=4)}")
    print(f"max |error| {err.max():.4g} (relative to max |y| {scale:.3g}: {err.max() / scale:.2e}); "
          f"eager == compiled: {np.array_equal(y, y_eager)}")

    flops = 2 * args.batch * hidden * ffn + 2 * args.batch * ffn * out_dim
    secs = model.last_time_ms / 1e3
    print(f"\nsimulated: {model.last_cycles} cycles = {model.last_time_ms * 1e3:.2f} us "
          f"({flops / secs / 1e12:.2f} TFLOP/s, {args.batch / secs:,.0f} samples/s); host wall time {wall * 1e3:.1f} ms")

    stats = model.stats() or {}
    tasks = (stats.get("detail") or {}).get("Tasks") or []
    if tasks:
        print(f"\n{'task':<20} {'core':>5} {'blocks':>6} {'cores':>5} {'cycles':>8} {'GM read':>10} {'GM written':>10}")
        for t in tasks:
            s = t.get("Stats") or {}
            kind = {1: "AIC", 2: "AIV"}.get(t.get("Core"), str(t.get("Core")))  # isa.Cube, isa.Vector
            print(f"{t.get('Name', '?'):<20} {kind:>5} {s.get('Blocks', 0):>6} {s.get('ActiveCores', 0):>5} "
                  f"{s.get('Cycles', 0):>8} {s.get('GMBytesRead', 0):>10} {s.get('GMBytesWritten', 0):>10}")
    ok = err.max() <= 2e-2 * max(scale, 1.0)
    print("\nOK" if ok else "\nMISMATCH")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
