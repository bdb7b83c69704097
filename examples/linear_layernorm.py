"""The guide's Tensor-level example: a linear layer followed by layer normalisation,
written with the guide's ops, run eagerly and compiled, checked against numpy.

    python examples/linear_layernorm.py [--device a2|tiny] [--batch N] [--hidden N]

    y = p.matmul(x, w, transpose_b=True) + b
    mean = p.reduce_mean(y, axis=-1, keepdims=True)
    var = p.reduce_var(y, axis=-1, keepdims=True)
    out = (y - mean) / p.sqrt(var + eps) * weight + bias

It then prints the tiles the compiler picks for each kernel (p.recommend_tile), which
is where a Tile-level rewrite would start.
"""

import argparse

import numpy as np

import pypto as p

EPS = 1e-5


def linear_layernorm(x, w, b, weight, bias):
    y = p.matmul(x, w, transpose_b=True) + b
    mean = p.reduce_mean(y, axis=-1, keepdims=True)
    var = p.reduce_var(y, axis=-1, keepdims=True)
    normalized = (y - mean) / p.sqrt(var + EPS)
    return normalized * weight + bias


def reference(x, w, b, weight, bias):
    y = x.astype(np.float64) @ w.T.astype(np.float64) + b
    y = y.astype(np.float16).astype(np.float64)  # the linear's result is float16
    normalized = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + EPS)
    return normalized * weight + bias


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()
    p.set_device(args.device)
    rng = np.random.default_rng(0)
    h = args.hidden
    x = rng.standard_normal((args.batch, h)).astype(np.float16)
    w = (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float16)
    b, weight, bias = (rng.standard_normal(h).astype(np.float16) for _ in range(3))
    want = reference(x, w, b, weight, bias)

    eager = linear_layernorm(*map(p.from_numpy, (x, w, b, weight, bias))).numpy()
    f = p.compile(linear_layernorm)
    compiled = f.run(x, w, b, weight, bias).numpy()
    print(f"linear [{args.batch}, {h}] x [{h}, {h}] + layer norm, float16")
    ok = True
    for name, got in (("eager", eager), ("compiled", compiled)):
        err = np.abs(got.astype(np.float64) - want).max()
        good = err <= 2e-2 * max(1.0, np.abs(want).max())  # float16 statistics and result
        ok &= bool(good)
        print(f"{name}: max |error| vs numpy {err:.2e} ({'ok' if good else 'TOO LARGE'})")
    print(f"compiled run: {f.last_time_ms:.4f} ms simulated on {args.device}")
    print("tiles the compiler picks:")
    for c in p.recommend_tile(linear_layernorm, [x, w, b, weight, bias], measure=True):
        est = "" if c.estimated_ms is None else f", est {c.estimated_ms * 1e3:.1f} us"
        print(f"  {c.op:12s} {c.kind:15s} tile {c.tile} grid {c.grid}: {c.measured_ms * 1e3:.1f} us simulated{est}")
    print("linear + layer norm matches numpy" if ok else "linear + layer norm DIFFERS from numpy")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
