"""Trains a small transformer on a synthetic task on the simulated NPU, forward and
backward compiled, and (when torch is installed) checks that its training tracks
torch's own training of the same model from the same initial weights on the same data.

    python examples/train.py [--device a2|tiny] [--steps N] [--layers N] [--no-torch]

The task: each sequence counts up modulo the vocabulary with a stride of its own
(1, 2 or 3), and the model predicts every next token; the stride is only visible from
the context, so the model needs its attention. One training step is
``p.compile(p.value_and_grad(loss))`` (embedding, causal attention, GELU MLP, layer
norms, cross-entropy, and the backward graph of all of it, compiled for the chip)
followed by ``p.optim.AdamW.step()`` (one more compiled program).
"""

import argparse
import math
import time

import numpy as np

import pypto as p

VOCAB, SEQ, BATCH, DIM, HEADS = 16, 8, 8, 32, 2
#: How far the per-step losses of the two trainings may drift apart (absolute, on
#: losses between 3 and 1): both compute in float32, but in different orders (fused
#: tiles and float32 cube accumulation here, torch's CPU kernels there), and AdamW
#: steps carry those last-place differences forward. 20 steps measured 2.3e-6 at most;
#: the bound leaves room for other sizes and seeds.
TRACK_TOLERANCE = 1e-4


def init_params(layers, seed=0):
    rng = np.random.default_rng(seed)

    def w(*shape, scale=None):
        scale = scale or 1 / math.sqrt(shape[-1])
        return rng.normal(0, scale, shape).astype(np.float32)

    params = {"tok": w(VOCAB, DIM, scale=0.5), "pos": w(SEQ, DIM, scale=0.5)}
    for i in range(layers):
        params |= {
            f"l{i}.ln1.w": np.ones(DIM, np.float32), f"l{i}.ln1.b": np.zeros(DIM, np.float32),
            f"l{i}.qkv": w(3 * DIM, DIM), f"l{i}.proj": w(DIM, DIM),
            f"l{i}.ln2.w": np.ones(DIM, np.float32), f"l{i}.ln2.b": np.zeros(DIM, np.float32),
            f"l{i}.fc1": w(4 * DIM, DIM), f"l{i}.fc1.b": np.zeros(4 * DIM, np.float32),
            f"l{i}.fc2": w(DIM, 4 * DIM), f"l{i}.fc2.b": np.zeros(DIM, np.float32),
        }  # fmt: skip
    params |= {"lnf.w": np.ones(DIM, np.float32), "lnf.b": np.zeros(DIM, np.float32), "head": w(VOCAB, DIM)}
    return params


def batches(steps, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        start = rng.integers(0, VOCAB, (BATCH, 1))
        stride = rng.integers(1, 4, (BATCH, 1))
        seq = (start + stride * np.arange(SEQ + 1)) % VOCAB
        out.append((seq[:, :-1].astype(np.int32), seq[:, 1:].astype(np.int32)))
    return out


def forward(ps, tokens, layers, ops):
    """The model, written once over an ops namespace (PyPTO's or torch's)."""
    x = ops.embed(ps["tok"], tokens) + ps["pos"]
    hd = DIM // HEADS
    for i in range(layers):
        h = ops.layer_norm(x, ps[f"l{i}.ln1.w"], ps[f"l{i}.ln1.b"])
        qkv = ops.linear(h, ps[f"l{i}.qkv"])  # [B, S, 3D]
        q, k, v = (ops.heads(qkv[:, :, j * DIM : (j + 1) * DIM], hd) for j in range(3))
        a = ops.attention(q, k, v)  # [B, H, S, hd]
        x = x + ops.linear(ops.merge(a), ps[f"l{i}.proj"])
        h = ops.layer_norm(x, ps[f"l{i}.ln2.w"], ps[f"l{i}.ln2.b"])
        x = x + ops.linear(ops.gelu(ops.linear(h, ps[f"l{i}.fc1"], ps[f"l{i}.fc1.b"])), ps[f"l{i}.fc2"], ps[f"l{i}.fc2.b"])
    return ops.linear(ops.layer_norm(x, ps["lnf.w"], ps["lnf.b"]), ps["head"])


class PyptoOps:
    embed = staticmethod(lambda w, ids: p.take(w, ids, axis=0))
    layer_norm = staticmethod(lambda x, w, b: p.layer_norm(x, [DIM], w, b))
    linear = staticmethod(lambda x, w, b=None: p.linear(x, w, b))
    heads = staticmethod(lambda t, hd: t.reshape([BATCH, SEQ, HEADS, hd]).permute(0, 2, 1, 3))
    merge = staticmethod(lambda a: a.permute(0, 2, 1, 3).reshape([BATCH, SEQ, DIM]))
    attention = staticmethod(lambda q, k, v: p.scaled_dot_product_attention(q, k, v, is_causal=True))
    gelu = staticmethod(p.gelu)


def pypto_loss(ps, tokens, targets, layers):
    logp = p.log_softmax(forward(ps, tokens, layers, PyptoOps), axis=-1)
    picked = p.take_along_axis(logp, targets.reshape([BATCH, SEQ, 1]), axis=-1)
    return -p.mean(picked)


def train_pypto(params, data, layers, lr):
    names = list(params)
    weights = [p.from_numpy(params[n]) for n in names]
    opt = p.optim.AdamW(weights, lr=lr, weight_decay=0.01)

    def step(tokens, targets, *ws):
        return p.value_and_grad(lambda d: pypto_loss(d, tokens, targets, layers))(dict(zip(names, ws)))

    def flat_step(tokens, targets, *ws):
        loss, grads = step(tokens, targets, *ws)
        return (loss, *[grads[n] for n in names])

    compiled = p.compile(flat_step, dynamic=False)
    losses, sim_ms = [], 0.0
    for tokens, targets in data:
        loss, *grads = compiled(p.from_numpy(tokens), p.from_numpy(targets), *weights)
        sim_ms += compiled.last_time_ms
        for w, g in zip(weights, grads):
            w.grad = g
        opt.step()
        losses.append(float(loss))
    return losses, sim_ms


def train_torch(params, data, layers, lr):
    import torch
    import torch.nn.functional as F

    class TorchOps:
        embed = staticmethod(lambda w, ids: F.embedding(ids, w))
        layer_norm = staticmethod(lambda x, w, b: F.layer_norm(x, [DIM], w, b))
        linear = staticmethod(lambda x, w, b=None: F.linear(x, w, b))
        heads = staticmethod(lambda t, hd: t.reshape(BATCH, SEQ, HEADS, hd).permute(0, 2, 1, 3))
        merge = staticmethod(lambda a: a.permute(0, 2, 1, 3).reshape(BATCH, SEQ, DIM))
        attention = staticmethod(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        gelu = staticmethod(F.gelu)

    ps = {n: torch.tensor(v, requires_grad=True) for n, v in params.items()}
    opt = torch.optim.AdamW(list(ps.values()), lr=lr, weight_decay=0.01)
    losses = []
    for tokens, targets in data:
        opt.zero_grad()
        logits = forward(ps, torch.tensor(tokens, dtype=torch.long), layers, TorchOps)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), torch.tensor(targets, dtype=torch.long).reshape(-1))
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--no-torch", action="store_true", help="skip the comparison with torch")
    args = ap.parse_args()
    p.set_device(args.device)
    params, data = init_params(args.layers), batches(args.steps)
    t0 = time.perf_counter()
    losses, sim_ms = train_pypto(params, data, args.layers, args.lr)
    host_s = time.perf_counter() - t0
    ref = None
    if not args.no_torch:
        try:
            ref = train_torch(params, data, args.layers, args.lr)
        except ImportError:
            print("torch is not installed (pip install pypto[torch]): skipping the comparison")
    print(f"{args.layers}-layer transformer (dim {DIM}, {HEADS} heads, vocab {VOCAB}, seq {SEQ}, batch {BATCH}) on {args.device}")
    for i, loss in enumerate(losses):
        extra = f"   torch {ref[i]:.5f}   diff {abs(loss - ref[i]):.2e}" if ref else ""
        print(f"step {i + 1:3d}  loss {loss:.5f}{extra}")
    print(f"{len(losses)} steps in {host_s:.1f} s on the host, {sim_ms:.3f} ms of simulated forward+backward time")
    if losses[-1] < losses[0]:
        print(f"the loss fell from {losses[0]:.4f} to {losses[-1]:.4f}")
    else:
        raise SystemExit(f"the loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}")
    if ref:
        worst = max(abs(a - b) for a, b in zip(losses, ref))
        if worst > TRACK_TOLERANCE:
            raise SystemExit(f"training drifted from torch's by {worst:.2e} (tolerance {TRACK_TOLERANCE})")
        print(f"tracks torch's training within {worst:.2e} per step (tolerance {TRACK_TOLERANCE})")


if __name__ == "__main__":
    main()
