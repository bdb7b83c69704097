"""PyPTO demo: a small GPT-style decoder (float16) on the simulated NPU, checked
against numpy.

    python examples/demo.py [--device a2|tiny] [--batch N] [--seq N] [--layers N] [--plain-runtime]

The model is GPT-2's architecture at toy size: token and position embeddings, pre-norm
decoder layers of causal multi-head attention and a GELU MLP with residual
connections, a final layer norm and tied output embeddings. Every op runs through the
compiler on the simulated NPU: embedding gathers, layer norms, batched matmuls on the
cube, the masked softmax, GELU (tanh form), and the logits' argmax.

Prints the logits' agreement with a float32 numpy reference, the next-token
predictions, the simulated cycles and time of one run, the compile time, and a
per-task profile of the compiled program. It runs with the runtime's scheduling
features (concurrent tasks, overlapped launches, L2 prefetch, balanced blocks, early
starts: the default); --plain-runtime switches them off
(p.CompileConfig(runtime_features=False)), which changes the time, not the values.
"""

import argparse
import math
import time

import numpy as np

import pypto as p


class Config:
    vocab, hidden, heads, ffn = 512, 128, 4, 512


def make_weights(cfg, layers, max_seq, rng):
    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    ones, zeros = np.ones(cfg.hidden, np.float16), np.zeros(cfg.hidden, np.float16)
    weights = {"wte": w(cfg.vocab, cfg.hidden), "wpe": w(max_seq, cfg.hidden, scale=0.01), "ln_f": (ones, zeros)}
    weights["layers"] = [
        {
            "ln1": (ones, zeros), "ln2": (ones, zeros),
            "qkv": (w(3 * cfg.hidden, cfg.hidden), w(3 * cfg.hidden)),  # [out, in] like torch.nn.Linear
            "proj": (w(cfg.hidden, cfg.hidden), w(cfg.hidden)),
            "fc": (w(cfg.ffn, cfg.hidden), w(cfg.ffn)),
            "fc_out": (w(cfg.hidden, cfg.ffn), w(cfg.hidden)),
        }
        for _ in range(layers)
    ]  # fmt: skip
    return weights


def gpt_forward(ops, cfg, weights, tokens, seq):
    """The decoder, written once against an ops namespace: pypto (p) or numpy (ref)."""
    batch = tokens.shape[0]
    d, h = cfg.hidden, cfg.heads
    hd = d // h
    x = ops.embed(weights["wte"], tokens) + ops.const(weights["wpe"][:seq])  # [batch, seq, d]
    mask = ops.const(np.tril(np.ones((seq, seq), dtype=bool)))
    for layer in weights["layers"]:
        a = ops.layer_norm(x, *layer["ln1"])
        qkv = ops.linear(a, *layer["qkv"])  # [batch, seq, 3d]
        q, k, v = (ops.heads(ops.cols(qkv, i * d, d), batch, seq, h, hd) for i in range(3))  # [batch, h, seq, hd]
        scores = ops.matmul(q, k, transpose_b=True) * (1 / math.sqrt(hd))  # [batch, h, seq, seq]
        att = ops.softmax(ops.where(mask, scores, -1e4))
        y = ops.merge_heads(ops.matmul(att, v), batch, seq, d)
        x = x + ops.linear(y, *layer["proj"])
        m = ops.layer_norm(x, *layer["ln2"])
        x = x + ops.linear(ops.gelu(ops.linear(m, *layer["fc"])), *layer["fc_out"])
    x = ops.layer_norm(x, *weights["ln_f"])
    return ops.matmul(ops.reshape(x, batch * seq, d), ops.const(weights["wte"]), transpose_b=True)  # [batch*seq, vocab]


class PyptoOps:
    """The model's vocabulary on PyPTO tensors (weights become constants of the graph)."""

    def __init__(self):
        self.consts = {}

    def const(self, a):
        key = id(a)
        if key not in self.consts:
            self.consts[key] = (a, p.from_numpy(a))
        return self.consts[key][1]

    def embed(self, table, tokens):
        flat = p.reshape(tokens, -1)
        return p.reshape(p.index_select(self.const(table), 0, flat), tokens.shape[0], tokens.shape[1], -1)

    def layer_norm(self, x, w, b):
        return p.layer_norm(x, weight=self.const(w), bias=self.const(b))

    def linear(self, x, w, b):
        return p.linear(x, self.const(w), self.const(b))

    def cols(self, x, start, width):
        return x[..., start : start + width]

    def heads(self, x, batch, seq, h, hd):
        return p.transpose(p.reshape(x, batch, seq, h, hd), 0, 2, 1, 3)

    def merge_heads(self, x, batch, seq, d):
        return p.reshape(p.transpose(x, 0, 2, 1, 3), batch, seq, d)

    matmul = staticmethod(p.matmul)
    softmax = staticmethod(lambda x: p.softmax(x, axis=-1))
    where = staticmethod(p.where)
    gelu = staticmethod(lambda x: p.gelu(x, approximate="tanh"))
    reshape = staticmethod(p.reshape)


class NumpyOps:
    """The same vocabulary in float32 numpy, the reference."""

    f = np.float32

    def const(self, a):
        return a.astype(self.f) if a.dtype != bool else a

    def embed(self, table, tokens):
        return table.astype(self.f)[tokens]

    def layer_norm(self, x, w, b, eps=1e-5):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w.astype(self.f) + b.astype(self.f)

    def linear(self, x, w, b):
        return x @ w.astype(self.f).T + b.astype(self.f)

    def cols(self, x, start, width):
        return x[..., start : start + width]

    def heads(self, x, batch, seq, h, hd):
        return x.reshape(batch, seq, h, hd).transpose(0, 2, 1, 3)

    def merge_heads(self, x, batch, seq, d):
        return x.transpose(0, 2, 1, 3).reshape(batch, seq, d)

    def matmul(self, a, b, transpose_b=False):
        return a @ (np.swapaxes(b, -1, -2) if transpose_b else b)

    def softmax(self, x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def where(self, m, a, b):
        return np.where(m, a, b)

    def gelu(self, x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    def reshape(self, x, *shape):
        return x.reshape(*shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2", help="chip preset: a2 (default), a5 or tiny")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--plain-runtime", action="store_true", help="without the runtime's scheduling features (concurrent tasks, overlapped launches, L2 prefetch, balanced blocks, early starts)")
    args = ap.parse_args()
    p.set_device(args.device)
    cfg = Config()
    rng = np.random.default_rng(0)
    weights = make_weights(cfg, args.layers, args.seq, rng)
    tokens = rng.integers(0, cfg.vocab, size=(args.batch, args.seq)).astype(np.int32)

    ops = PyptoOps()
    config = p.CompileConfig(runtime_features=not args.plain_runtime)
    model = p.compile(lambda t: gpt_forward(ops, cfg, weights, t, args.seq), config)
    t0 = time.perf_counter()
    logits = model.run(tokens).numpy()  # first run: traces, compiles, runs
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    logits = model.run(tokens).numpy()  # cached program
    wall = time.perf_counter() - t0

    ref = gpt_forward(NumpyOps(), cfg, weights, tokens, args.seq)
    got = logits.astype(np.float32)
    err = np.abs(got - ref).max()
    scale = np.abs(ref).max()
    agree = (got.argmax(-1) == ref.argmax(-1)).mean()
    print(f"GPT-style decoder: {args.layers} layers, hidden {cfg.hidden}, {cfg.heads} heads, vocab {cfg.vocab}, "
          f"batch {args.batch} x seq {args.seq}, float16 on device {p.get_device()}")
    print(f"logits [{got.shape[0]}, {got.shape[1]}]: max |error| {err:.4g} vs numpy float32 (max |logit| {scale:.3g}); "
          f"next-token argmax agrees on {agree:.1%} of positions")
    print(f"next tokens after the first sequence, PyPTO: {got.argmax(-1)[: args.seq][-8:].tolist()}")
    print(f"                                      numpy: {ref.argmax(-1)[: args.seq][-8:].tolist()}")

    secs = model.last_time_ms / 1e3
    print(f"\nsimulated: {model.last_cycles:,} cycles = {model.last_time_ms:.4f} ms "
          f"({args.batch * args.seq / secs:,.0f} tokens/s); first run (trace + compile + run) {first * 1e3:.0f} ms, "
          f"cached run {wall * 1e3:.0f} ms of host time")

    tasks = ((model.stats() or {}).get("detail") or {}).get("Tasks") or []
    if tasks:
        total = sum((t.get("Stats") or {}).get("Cycles", 0) for t in tasks)
        by_op = {}
        for t in tasks:
            op = t.get("Name", "?").rsplit("_", 1)[0]
            c, n = by_op.get(op, (0, 0))
            by_op[op] = (c + (t.get("Stats") or {}).get("Cycles", 0), n + 1)
        print(f"\nprofile: {len(tasks)} tasks; time by op")
        print(f"{'op':<16} {'tasks':>5} {'cycles':>10} {'share':>6}")
        for op, (c, n) in sorted(by_op.items(), key=lambda kv: -kv[1][0]):
            print(f"{op:<16} {n:>5} {c:>10,} {c / total:>6.1%}")
    ok = err <= 0.05 * max(scale, 1.0) and agree >= 0.9
    print("\nOK" if ok else "\nMISMATCH")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
