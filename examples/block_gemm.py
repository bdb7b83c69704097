"""A GEMM written at the block level, registered as a kernel and called from a
tensor-level program, against numpy and against the compiler's own matmul.

Each block (one cube core) computes a run of output tile pairs: two T x T tiles side by
side, whose fp32 accumulators fill L0C. K is walked in stages of SK: one load brings the
A panel [T, SK] into L1 and one the B panel [SK, 2T]; p.matmul of windows of them
(am[:, s:s + TK]) extracts TK-wide slices into L0A/L0B, and the A slice serves both
accumulators, so A is read once per pair. The stage loop is a device loop (p.range)
whose body holds two stages (Python's range unrolls them), so consecutive stages use
different L1 buffers and the backend overlaps one stage's loads with the other's
matmuls. The accumulators are stored once, converted to float16 by the fixpipe.

    python examples/block_gemm.py --device a2 --size 2048
"""

import argparse

import numpy as np

import pypto as p


def gemm_kernel(grid: int, T: int = 128, SK: int = 256, TK: int = 128) -> p.BlockKernel:
    """Tiles of T x T in pairs along N; K in stages of SK, matmuls of TK."""

    @p.block_kernel(grid=grid, core="cube", out_shape=lambda a, b: (a.shape[0], b.shape[1]), out_dtype=lambda a, b: a.dtype)
    def gemm(a, b, c):
        m, k = a.shape
        pairs_n = b.shape[1] // (2 * T)
        pairs = (m // T) * pairs_n
        blk = p.block_idx()
        for t in range(blk * pairs // grid, (blk + 1) * pairs // grid):  # this block's pairs
            i, j = t // pairs_n * T, t % pairs_n * 2 * T
            acc = [p.zeros([T, T]), p.zeros([T, T])]
            for kk in p.range(k // (2 * SK)):
                for h in range(2):
                    k0 = (kk * 2 + h) * SK
                    am = p.load(a[i:i + T, k0:k0 + SK])
                    bm = p.load(b[k0:k0 + SK, j:j + 2 * T])  # both tiles' B panels in one load
                    for s in range(0, SK, TK):
                        for q in range(2):
                            acc[q] += p.matmul(am[:, s:s + TK], bm[s:s + TK, q * T:(q + 1) * T])
            for q in range(2):
                p.store(c[i:i + T, j + q * T:j + (q + 1) * T], acc[q])

    return gemm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="a2")
    ap.add_argument("--size", type=int, default=2048, help="M = N = K, a multiple of 512 (256 on tiny)")
    ap.add_argument("--grid", type=int, default=None, help="blocks (default: the chip's cube cores)")
    args = ap.parse_args()
    p.set_device(args.device)
    n = args.size
    grid = args.grid or {"a2": 24, "a5": 32, "tiny": 2}.get(args.device, 2)
    # tiny has a 64 KB L1 and a 32 KB L0C
    shape = dict(T=32, SK=128, TK=64) if args.device in ("tiny", "reference") else dict(T=128, SK=256, TK=128)
    grid = min(grid, (n // shape["T"]) ** 2 // 2)
    p.register_kernel("block_gemm", gemm_kernel(grid, **shape))

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
