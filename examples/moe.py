"""The guide's Mixture of Experts: a router picks the top-k experts of each token,
their scores go through a softmax, and the layer's output is the gate-weighted sum of
the chosen experts' outputs. Checked against numpy, eagerly and compiled.

    python examples/moe.py [--device a2|tiny] [--tokens N] [--hidden N] [--ffn N]
        [--experts N] [--top-k N]

Each expert is a small MLP, relu(x @ w1) @ w2. The guide's router stacks per-expert
scores and takes top-k over the stack; here the router is the usual gate matrix,
scores = x @ w_gate of shape [tokens, experts], so top-k picks experts per token.

Two forms of the layer:

- ``moe_layer_eager`` is data-dependent Python, as the guide writes it: it realises
  the routing (``indices.numpy()``) and runs only the experts some token chose;
- ``moe_layer`` is traceable for p.compile: every expert runs, and each token's weight
  for an expert is its gate where the expert was chosen, 0 elsewhere.
"""

import argparse

import numpy as np

import pypto as p


def moe_router(x, w_gate, top_k):
    """The gates [tokens, top_k] (softmax of the top-k scores) and expert indices."""
    scores = p.matmul(x, w_gate)  # [tokens, experts]
    top_scores, top_indices = p.topk(scores, k=top_k, dim=-1)
    return p.softmax(top_scores, axis=-1), top_indices


def expert(x, weights):
    w1, w2 = weights
    return p.matmul(p.relu(p.matmul(x, w1)), w2)


def expert_weight(gates, indices, e):
    """Each token's weight for expert e: its gate where e was picked, else 0 ([tokens, 1])."""
    return p.sum(p.where(indices == e, gates, 0.0), axis=-1, keepdims=True)


def moe_layer_eager(x, w_gate, experts, top_k):
    gates, indices = moe_router(x, w_gate, top_k)
    chosen = sorted(set(indices.numpy().ravel().tolist()))  # realises the routing now
    out = p.zeros_like(x)
    for e in chosen:
        out = out + expert(x, experts[e]) * expert_weight(gates, indices, e)
    return out, chosen


def moe_layer(x, w_gate, experts, top_k):
    gates, indices = moe_router(x, w_gate, top_k)
    out = p.zeros_like(x)
    for e in range(len(experts)):
        out = out + expert(x, experts[e]) * expert_weight(gates, indices, e)
    return out


def reference(x, w_gate, experts, top_k):
    x64 = x.astype(np.float64)
    scores = x64 @ w_gate
    idx = np.argsort(-scores, axis=-1, kind="stable")[:, :top_k]
    top = np.take_along_axis(scores, idx, -1)
    gates = np.exp(top - top.max(-1, keepdims=True))
    gates /= gates.sum(-1, keepdims=True)
    out = np.zeros_like(x64)
    for t in range(x.shape[0]):
        for j in range(top_k):
            w1, w2 = experts[idx[t, j]]
            out[t] += gates[t, j] * (np.maximum(x64[t] @ w1, 0) @ w2)
    return out, sorted(set(idx.ravel().tolist()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--ffn", type=int, default=128)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    args = ap.parse_args()
    p.set_device(args.device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.tokens, args.hidden)).astype(np.float32)
    w_gate = rng.standard_normal((args.hidden, args.experts)).astype(np.float32)
    experts = [
        ((rng.standard_normal((args.hidden, args.ffn)) / np.sqrt(args.hidden)).astype(np.float32),
         (rng.standard_normal((args.ffn, args.hidden)) / np.sqrt(args.ffn)).astype(np.float32))
        for _ in range(args.experts)
    ]  # fmt: skip
    want, want_chosen = reference(x, w_gate, experts, args.top_k)

    eager, chosen = moe_layer_eager(p.from_numpy(x), p.from_numpy(w_gate), [tuple(map(p.from_numpy, e)) for e in experts], args.top_k)
    f = p.compile(lambda x: moe_layer(x, w_gate, experts, args.top_k))
    compiled = f.run(x)
    print(f"MoE: {args.tokens} tokens, hidden {args.hidden}, {args.experts} experts (ffn {args.ffn}), top-{args.top_k}")
    print(f"experts chosen by some token: {chosen} (numpy: {want_chosen})")
    ok = chosen == want_chosen
    scale = max(1.0, np.abs(want).max())
    for name, got in (("eager", eager.numpy()), ("compiled", compiled.numpy())):
        err = np.abs(got.astype(np.float64) - want).max()
        good = err <= 1e-4 * scale
        ok &= bool(good)
        print(f"{name}: max |error| vs numpy {err:.2e} ({'ok' if good else 'TOO LARGE'})")
    print(f"compiled run: {f.last_time_ms:.4f} ms simulated on {args.device}")
    print("MoE matches numpy" if ok else "MoE DIFFERS from numpy")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
