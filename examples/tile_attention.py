"""Scaled dot-product attention written at the Tile level, checked against numpy.

    python examples/tile_attention.py [--device a2|tiny] [--batch N] [--heads N]
        [--seq N] [--kv-seq N] [--head-dim N] [--tile-q N] [--tile-k N] [--mask]

The guide's sample pairs query tile i with key tile i only; true attention needs every
query tile against every key tile. This one is flash-style: for each query tile it
walks the key tiles in order, keeping a running row maximum m, a running sum l of
exp(scores - m) and an output accumulator o, rescaled whenever m grows, so the full
[seq, kv_seq] score matrix never exists. Scores and statistics are float32; the
probabilities go back to float16 for the P @ V product, as flash attention does on
the cube. Sequence lengths need not be multiples of the tiles (edge tiles are smaller).

With --mask, a bool mask [seq, kv_seq] (True: attend) is tiled alongside the keys.
The program runs eagerly and compiled (p.compile); both are compared with numpy.
"""

import argparse
import math

import numpy as np

import pypto as p

#: Stands in for -inf among masked scores: exp(NEG - m) is 0, and a fully masked key
#: tile cannot make the running maximum -inf (which would give inf - inf = NaN).
NEG = -1e30


def tile_attention(q, k, v, mask=None, tile_q=64, tile_k=64):
    """softmax(q k^T / sqrt(d) [masked]) v for q [..., seq, d], k and v [..., kv_seq, d]."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    lead = [None] * (q.ndim - 2)  # batch and heads stay whole in every tile
    q_tiles = p.tile(q, tile_shape=lead + [tile_q, None])
    k_tiles = p.tile(k, tile_shape=lead + [tile_k, None])
    v_tiles = p.tile(v, tile_shape=lead + [tile_k, None])
    m_tiles = None if mask is None else p.tile(mask, tile_shape=[tile_q, tile_k])
    outputs = []
    for q_tile in q_tiles:
        i = q_tile.index[-2]
        m = l = o = None
        for k_tile, v_tile in zip(k_tiles, v_tiles):
            j = k_tile.index[-2]
            s = p.tile_cast(p.tile_matmul(q_tile, k_tile, transpose_b=True), p.float32) * scale
            if m_tiles is not None:
                s = p.tile_where(m_tiles[i, j], s, NEG)
            block_max = p.tile_max(s, axis=-1, keepdims=True)
            m_new = block_max if m is None else p.tile_maximum(m, block_max)
            prob = p.tile_exp(s - m_new)
            pv = p.tile_cast(p.tile_matmul(p.tile_cast(prob, v.dtype), v_tile), p.float32)
            if m is None:
                l, o = p.tile_sum(prob, axis=-1, keepdims=True), pv
            else:
                correction = p.tile_exp(m - m_new)
                l = l * correction + p.tile_sum(prob, axis=-1, keepdims=True)
                o = o * correction + pv
            m = m_new
        outputs.append(p.tile_cast(o / l, q.dtype))
    return p.tile_concat(outputs, axis=-2)


def reference(q, k, v, mask=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=200)
    ap.add_argument("--kv-seq", type=int, default=None)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--tile-q", type=int, default=64)
    ap.add_argument("--tile-k", type=int, default=64)
    ap.add_argument("--mask", action="store_true", help="a causal bool mask [seq, kv_seq]")
    args = ap.parse_args()
    p.set_device(args.device)
    kv_seq = args.kv_seq or args.seq
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal((args.batch, args.heads, n, args.head_dim)).astype(np.float16)
        for n in (args.seq, kv_seq, kv_seq)
    )
    mask = np.tril(np.ones((args.seq, kv_seq), dtype=bool), k=kv_seq - args.seq) if args.mask else None
    want = reference(q, k, v, mask)
    tq, tk = args.tile_q, args.tile_k
    print(f"attention [{args.batch}, {args.heads}, {args.seq}, {args.head_dim}] x kv {kv_seq}: "
          f"{-(-args.seq // tq)} query tiles of {tq} against {-(-kv_seq // tk)} key tiles of {tk}"
          f"{', causal mask' if mask is not None else ''}")  # fmt: skip

    eager = tile_attention(p.from_numpy(q), p.from_numpy(k), p.from_numpy(v),
                           None if mask is None else p.from_numpy(mask), tq, tk).numpy()  # fmt: skip
    if mask is None:
        f = p.compile(lambda q, k, v: tile_attention(q, k, v, None, tq, tk))
        compiled = f.run(q, k, v).numpy()
    else:
        f = p.compile(lambda q, k, v, m: tile_attention(q, k, v, m, tq, tk))
        compiled = f.run(q, k, v, mask).numpy()
    ok = True
    for name, got in (("eager", eager), ("compiled", compiled)):
        err = np.abs(got.astype(np.float64) - want).max()
        # float16 inputs and output, probabilities rounded to float16 for P @ V
        good = err <= 5e-3 * max(1.0, np.abs(want).max())
        ok &= bool(good)
        print(f"{name}: max |error| vs numpy {err:.2e} ({'ok' if good else 'TOO LARGE'})")
    print(f"compiled run: {f.last_time_ms:.4f} ms simulated on {args.device}")
    print("tile attention matches numpy" if ok else "tile attention DIFFERS from numpy")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
