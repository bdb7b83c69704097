"""Greedy decoding with a KV cache: a GPT-style decoder generates tokens one at a time;
one compiled step program serves every position (the position is an input of the
program, the cache is updated with p.slice_update at it), and the tokens are checked
one for one against a numpy reference that recomputes the whole sequence each step.
The caches are donated (``donate_argnums``), so each step writes its key and value
rows into them where they live on the device; ``--no-donate`` copies each cache first.

    python examples/decode.py [--tokens N] [--device a2|tiny] [--layers N] [--no-donate]

Prints the generated tokens, the agreement with the reference, the simulated time per
token and the GM bytes the steps' cache updates moved.
"""

import argparse
import math
import time

import numpy as np

import pypto as p


class Config:
    vocab, hidden, heads, max_len = 128, 64, 4, 96


def make_weights(cfg, layers, rng):
    def w(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    d = cfg.hidden
    return {
        "wte": w(cfg.vocab, d, scale=0.5), "wpe": w(cfg.max_len, d, scale=0.5), "head": w(d, cfg.vocab, scale=d ** -0.5),
        "layers": [{"wq": w(d, d, scale=d ** -0.5), "wk": w(d, d, scale=d ** -0.5), "wv": w(d, d, scale=d ** -0.5),
                    "wo": w(d, d, scale=d ** -0.5), "w1": w(d, 4 * d, scale=d ** -0.5), "w2": w(4 * d, d, scale=(4 * d) ** -0.5)}
                   for _ in range(layers)],
    }  # fmt: skip


def ref_logits(cfg, wts, tokens):
    """float32 numpy: the whole sequence at once, causal attention; the last position's logits."""
    d, h = cfg.hidden, cfg.heads
    hd = d // h
    n = len(tokens)
    x = wts["wte"][tokens] + wts["wpe"][:n]
    for lw in wts["layers"]:
        a = _ln(x)
        q, k, v = ((a @ lw[m]).reshape(n, h, hd).transpose(1, 0, 2) for m in ("wq", "wk", "wv"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.where(np.tril(np.ones((n, n), bool)), s, -1e4)
        e = np.exp(s - s.max(-1, keepdims=True))
        att = (e / e.sum(-1, keepdims=True)) @ v
        x = x + att.transpose(1, 0, 2).reshape(n, d) @ lw["wo"]
        x = x + np.maximum(_ln(x) @ lw["w1"], 0) @ lw["w2"]
    return _ln(x[-1:]) @ wts["head"]


def _ln(x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def make_step(cfg, wts, donate=True):
    """One decoding step on the device: the new token at position pos attends to the
    cache's positions <= pos; each layer's K and V rows are written into the cache."""
    d, h, T = cfg.hidden, cfg.heads, cfg.max_len
    hd = d // h
    wte, wpe, head = p.from_numpy(wts["wte"]), p.from_numpy(wts["wpe"]), p.from_numpy(wts["head"])
    layers = [{k: p.from_numpy(v) for k, v in lw.items()} for lw in wts["layers"]]

    def step(token, pos, *caches):
        x = p.index_select(wte, 0, token) + p.index_select(wpe, 0, p.reshape(pos, 1))  # [1, d]
        visible = p.reshape(p.arange(T, dtype="int32"), 1, 1, T) <= pos
        new_caches = []
        for i, lw in enumerate(layers):
            kc, vc = caches[2 * i], caches[2 * i + 1]  # [h, T, hd]
            a = p.layer_norm(x)
            q, k, v = (p.transpose(p.reshape(p.matmul(a, lw[m]), 1, h, hd), 1, 0, 2) for m in ("wq", "wk", "wv"))
            kc = p.slice_update(kc, k, [pos], axes=[1])
            vc = p.slice_update(vc, v, [pos], axes=[1])
            s = p.matmul(q, kc, transpose_b=True) * (1 / math.sqrt(hd))  # [h, 1, T]
            att = p.matmul(p.softmax(p.where(visible, s, -1e4), axis=-1), vc)  # [h, 1, hd]
            x = x + p.matmul(p.reshape(p.transpose(att, 1, 0, 2), 1, d), lw["wo"])
            x = x + p.matmul(p.relu(p.matmul(p.layer_norm(x), lw["w1"])), lw["w2"])
            new_caches += [kc, vc]
        return (p.matmul(p.layer_norm(x), head), *new_caches)

    cache = ([h, T, hd], p.float32)
    inputs = [([1], p.int32), ([], p.int32)] + [cache] * (2 * len(layers))
    caches = tuple(range(2, 2 + 2 * len(layers)))  # the inputs after token and pos
    return p.compile(step, inputs=inputs, donate_argnums=caches if donate else ())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--device", default="a2")
    ap.add_argument("--no-donate", action="store_true", help="copy each cache before updating it (the functional update)")
    args = ap.parse_args(argv)
    p.set_device(args.device)
    cfg = Config()
    rng = np.random.default_rng(0)
    wts = make_weights(cfg, args.layers, rng)
    prompt = [int(t) for t in rng.integers(0, cfg.vocab, 8)]
    if len(prompt) + args.tokens > cfg.max_len:
        raise SystemExit(f"--tokens: at most {cfg.max_len - len(prompt)} fit the cache of {cfg.max_len}")
    t0 = time.perf_counter()
    ex = make_step(cfg, wts, donate=not args.no_donate)
    compile_s = time.perf_counter() - t0
    h, T, hd = cfg.heads, cfg.max_len, cfg.hidden // cfg.heads
    caches = [np.zeros((h, T, hd), np.float32) for _ in range(2 * args.layers)]
    seq, generated, agree, sim_s, update_bytes = list(prompt), [], 0, 0.0, 0
    for pos in range(len(prompt) + args.tokens - 1):
        out = ex.run(np.array([seq[pos]], np.int32), np.array(pos, np.int32), *caches)
        sim_s += p.last_stats()["seconds"]
        update_bytes += _cache_update_bytes(ex)
        logits, caches = out[0].numpy(), [c.numpy() for c in out[1:]]
        if pos + 1 < len(prompt):
            continue  # still reading the prompt
        tok = int(logits.argmax())
        want = int(ref_logits(cfg, wts, np.array(seq)).argmax())
        agree += tok == want
        seq.append(tok)
        generated.append(tok)
    steps = len(prompt) + args.tokens - 1
    print(f"prompt {prompt}")
    print(f"generated {generated}")
    print(f"agreement with the numpy reference: {agree}/{len(generated)} tokens")
    print(f"one step program compiled in {compile_s:.2f} s, run for {steps} positions; "
          f"simulated {sim_s / steps * 1e3:.4f} ms per token on {args.device}")
    copies = ex.info()["update_copies"]
    print(f"cache updates: {update_bytes / steps:.0f} GM bytes moved per step "
          f"({'in place, caches donated' if not copies else f'{len(copies)} caches copied first'}; "
          f"the caches hold {len(caches) * caches[0].nbytes} bytes)")
    return {"generated": generated, "agree": agree, "tokens": len(generated), "ms_per_token": sim_s / steps * 1e3,
            "update_bytes_per_step": update_bytes / steps, "update_copies": len(copies)}


def _cache_update_bytes(ex):
    """GM bytes read and written by the last run's cache updates, and by the copies of
    the caches made first when they are not donated (each read and written once)."""
    tasks = ex.stats()["detail"]["Tasks"]
    moved = sum(t["Stats"]["GMBytesRead"] + t["Stats"]["GMBytesWritten"] for t in tasks if t["Name"].startswith("slice_update"))
    return moved + sum(2 * c["bytes"] for c in ex.info()["update_copies"])


if __name__ == "__main__":
    main()
