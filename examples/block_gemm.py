"""A GEMM written at the block level, registered as a kernel and called from a
tensor-level program, against numpy and against the compiler's own matmul.

Each block (one cube core) computes a run of 128 x 128 output tiles. For each tile it
walks K in steps of 128: loads the A and B panels into L1, multiplies them into an fp32
accumulator in L0C (the moves into L0A/L0B are emitted by p.matmul) and stores the
accumulator once, converted to float16 by the fixpipe. The K loop is a device loop
(p.range) whose body holds two steps (Python's range unrolls them), so consecutive
steps use different buffers and the backend overlaps loads with matmuls.

    python examples/block_gemm.py --device a2 --size 2048
"""

import argparse

import numpy as np

import pypto as p

def gemm_kernel(grid: int, tile: int = 128) -> p.BlockKernel:
    TM = TN = TK = tile

    @p.block_kernel(grid=grid, core="cube", out_shape=lambda a, b: (a.shape[0], b.shape[1]), out_dtype=lambda a, b: a.dtype)
    def gemm(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        tiles_n = n // TN
        tiles = (m // TM) * tiles_n
        blk = p.block_idx()
        for t in range(blk * tiles // grid, (blk + 1) * tiles // grid):  # this block's output tiles
            i, j = t // tiles_n * TM, t % tiles_n * TN
            acc = p.zeros([TM, TN])
            for kk in p.range(k // (2 * TK)):
                for h in range(2):
                    k0 = (kk * 2 + h) * TK
                    acc += p.matmul(p.load(a[i:i + TM, k0:k0 + TK]), p.load(b[k0:k0 + TK, j:j + TN]))
            p.store(c[i:i + TM, j:j + TN], acc)

    return gemm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="a2")
    ap.add_argument("--size", type=int, default=2048, help="M = N = K, a multiple of 256")
    ap.add_argument("--grid", type=int, default=None, help="blocks (default: the chip's cube cores)")
    args = ap.parse_args()
    p.set_device(args.device)
    n = args.size
    grid = args.grid or {"a2": 24, "a5": 32, "tiny": 2}.get(args.device, 2)
    tile = 64 if args.device == "tiny" else 128  # tiny has a 32 KB L0C
    grid = min(grid, (n // tile) ** 2)
    p.register_kernel("block_gemm", gemm_kernel(grid, tile))

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)

    def model(x, w):  # a tensor-level program around the block-level kernel
        return p.relu(p.call_kernel("block_gemm", x, w)) + 1

    ours = p.compile(model)
    got = ours.run(a, b).numpy().astype(np.float32)
    err = np.abs(got - (np.maximum(want, 0) + 1)).max() / np.abs(want).max()
    assert err < 2e-3, f"block GEMM differs from numpy: relative error {err}"

    kernel = p.compile(lambda x, w: p.call_kernel("block_gemm", x, w))
    compiler = p.compile(lambda x, w: p.matmul(x, w))
    got_k = kernel.run(a, b).numpy().astype(np.float32)
    got_c = compiler.run(a, b).numpy().astype(np.float32)
    for name, got in (("block kernel", got_k), ("compiler", got_c)):
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 2e-3, f"{name} GEMM differs from numpy: relative error {err}"
    if args.device != "reference":
        print(f"GEMM {n}x{n}x{n} float16 on {args.device}:")
        print(f"  block-level kernel ({grid} blocks): {kernel.last_time_ms:.4f} ms simulated")
        print(f"  compiler's matmul:                 {compiler.last_time_ms:.4f} ms simulated")
    print("block GEMM matches numpy")


if __name__ == "__main__":
    main()
