"""A mixed cube + vector kernel at the block level: relu(a @ b + bias), the matmul on
the cube core and the epilogue on the two vector cores of the same AI core, the
accumulators passed through the AI core's queues (p.push / p.pop), never through GM.

The function is traced once for the cube (p.is_cube()) and once per vector core
(p.subblock_idx()); output tile t goes to vector core t % 2 through queue t % 2.

    python examples/block_mixed.py --device a2
"""

import argparse

import numpy as np

import pypto as p


def matmul_bias_relu(grid: int, T: int = 64) -> p.BlockKernel:
    """Output tiles of T x T, K in steps of T."""

    @p.block_kernel(grid=grid, core="mixed", vectors=2,
                    out_shape=lambda a, b, bias: (a.shape[0], b.shape[1]), out_dtype=lambda a, b, bias: a.dtype)
    def kernel(a, b, bias, c):
        m, k = a.shape
        n = b.shape[1]
        tiles_n = n // T
        tiles = (m // T) * tiles_n
        blk = p.block_idx()
        for t in range(blk * tiles // grid, (blk + 1) * tiles // grid):
            i, j = t // tiles_n * T, t % tiles_n * T
            if p.is_cube():
                acc = p.zeros([T, T])
                for kk in p.range(k // T):
                    acc += p.matmul(p.load(a[i:i + T, kk * T:(kk + 1) * T]), p.load(b[kk * T:(kk + 1) * T, j:j + T]))
                p.push(acc, queue=t % 2)
            elif p.subblock_idx() == t % 2:
                y = p.pop([T, T], p.float32, queue=t % 2)
                y += p.load(bias[0:1, j:j + T]).astype(p.float32)  # a [1, T] row, added to every row
                p.store(c[i:i + T, j:j + T], p.maximum(y, 0.0).astype(p.float16))

    return kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="a2")
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--k", type=int, default=256)
    args = ap.parse_args()
    p.set_device(args.device)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.m, args.k)).astype(np.float16)
    b = rng.standard_normal((args.k, args.n)).astype(np.float16)
    bias = rng.standard_normal((1, args.n)).astype(np.float16)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32), 0)

    kernel = matmul_bias_relu(grid=4, T=32 if args.device == "tiny" else 64)  # tiny has a 32 KB UB
    f = p.compile(lambda a, b, bias: p.call_kernel(kernel, a, b, bias))
    got = f.run(a, b, bias).numpy().astype(np.float32)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 2e-3, f"mixed kernel differs from numpy: relative error {err}"
    if args.device != "reference":
        print(f"relu(a @ b + bias) {args.m}x{args.n}x{args.k} float16 on {args.device}: {f.last_time_ms:.4f} ms simulated")
    print("mixed kernel matches numpy")


if __name__ == "__main__":
    main()
