"""The PTO-AS corpus: programs whose every kernel is exported, assembled with ptoas and
read back (bench/pto_export.py measures it, tests/runtime/test_pto_as_corpus.py checks
it). Each case is a function of p.Tensors and its inputs, at one of two sizes:
"bench" (the sizes of bench/kernels.py) or "test" (small enough to simulate with values
in a test).

Cases: every case of bench/kernels.py (GEMMs, the fused matmul epilogue, softmax, layer
norm, attention plain and causal, the GPT-2-small decoder, the convolutions), the
demo's model (examples/demo.py), one program per op family of the test suite, a
dynamic-shape program (its kernels loop over the rows the run's size needs), a MoE
layer (top-k routing and gathers) and block kernels with queues."""

from __future__ import annotations

import importlib.util
import math
import os

import numpy as np

import pypto as p

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Case:
    """A corpus program: fn(*inputs) and its inputs (numpy arrays). A symbolic case is
    traced once for ``trace`` (placeholders with symbolic sizes) and run at the
    warm-up's sizes, then at the inputs' (the second run's program is exported: a
    bucket's, compiled for the bucket's bound); ``sizes(*inputs)`` gives the run's
    sizes, which that program reads from GM."""

    def __init__(self, name, fn, inputs, trace=None, warmup=None, sizes=None):
        self.name, self.fn, self.inputs, self.trace, self.warmup, self.sizes = name, fn, inputs, trace, warmup, sizes

    @property
    def symbolic(self) -> bool:
        return self.trace is not None

    def loaded_inputs(self, described: list) -> list:
        """The inputs of the program an export of this case loads back as (``described``
        is its ``inputs``): each input zero-padded to the shape the program was compiled
        for, then, for a symbolic case, the run's sizes (one int32 each)."""
        sizes = list(self.sizes(*self.inputs)) if self.symbolic else []
        if len(described) != len(self.inputs) + len(sizes):
            raise ValueError(f"{self.name}: the loaded program takes {len(described)} inputs, the case gives {len(self.inputs)} and {len(sizes)} sizes")
        out = []
        for x, d in zip(self.inputs, described):
            padded = np.zeros(d["shape"], dtype=x.dtype)
            padded[tuple(slice(0, n) for n in x.shape)] = x
            out.append(padded)
        return out + [np.array([n], np.int32) for n in sizes]


def _rng(seed):
    return np.random.default_rng(seed)


def _f16(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _linear_weights(rng, n_in, n_out):
    return _f16(rng, n_out, n_in, scale=1 / math.sqrt(n_in)), _f16(rng, n_out, scale=0.1)


def bench_cases(size: str) -> list:
    """The cases of bench/kernels.py (cmd/pto-kernels), at bench or test size."""
    big = size == "bench"
    rng = _rng(0)
    out = []
    for n in ([4096, 6144] if big else [256]):
        a, b = _f16(rng, n, n), _f16(rng, n, n)
        out.append(Case(f"gemm_fp16_{n}", lambda a, b: p.matmul(a, b), [a, b]))
    n = 4096 if big else 256
    out.append(Case(f"matmul_bias_relu_fp16_{n}", lambda a, b, bias: p.relu(p.matmul(a, b) + bias), [_f16(rng, n, n), _f16(rng, n, n), _f16(rng, n)]))
    r, c = (8192, 4096) if big else (128, 512)
    out.append(Case(f"softmax_fp16_{r}x{c}", lambda x: p.softmax(x, axis=-1), [_f16(rng, r, c)]))
    out.append(Case(f"layer_norm_fp16_{r}x{c}", lambda x, g, bb: p.layer_norm(x, weight=g, bias=bb), [_f16(rng, r, c), _f16(rng, c), _f16(rng, c)]))
    h, s, d = (32, 4096, 128) if big else (2, 128, 64)
    for causal in (False, True):
        name = f"attention{'_causal' if causal else ''}_fp16_1x{h}x{s}x{d}"
        out.append(Case(name, lambda q, k, v, causal=causal: p.scaled_dot_product_attention(q, k, v, is_causal=causal),
                        [_f16(rng, 1, h, s, d), _f16(rng, 1, h, s, d), _f16(rng, 1, h, s, d)]))  # fmt: skip
    layers, seq, hidden, heads, mlp = (12, 1024, 768, 12, 3072) if big else (2, 128, 128, 2, 256)
    out.append(_gpt(f"gpt2_small_decoder_seq{seq}" + ("" if big else f"_l{layers}"), layers, seq, hidden, heads, mlp, rng))
    for name, n_, c_, hw, o, k in ([("conv_resnet50_3x3_b8_128x28x28", 8, 128, 28, 128, 3), ("conv_resnet50_1x1_b8_128x28x28_to512", 8, 128, 28, 512, 1),
                                   ("conv_unet_3x3_b8_64x64x64", 8, 64, 64, 64, 3)] if big else
                                  [("conv_3x3_b2_16x8x8", 2, 16, 8, 16, 3), ("conv_1x1_b2_16x8x8_to32", 2, 16, 8, 32, 1)]):  # fmt: skip
        pad = k // 2
        out.append(Case(name, lambda x, w, b, pad=pad: p.relu(p.conv2d(x, w, b, padding=pad)),
                        [_f16(rng, n_, c_, hw, hw), _f16(rng, o, c_, k, k, scale=1 / math.sqrt(c_ * k * k)), _f16(rng, o)]))  # fmt: skip
    return out


def _gpt(name, layers, seq, hidden, heads, mlp, rng):
    hd = hidden // heads
    params = []
    for _ in range(layers):
        params += [np.ones(hidden, np.float16), np.zeros(hidden, np.float16)]
        for n_in, n_out in ((hidden, hidden),) * 4:
            params += list(_linear_weights(rng, n_in, n_out))
        params += [np.ones(hidden, np.float16), np.zeros(hidden, np.float16)]
        params += list(_linear_weights(rng, hidden, mlp)) + list(_linear_weights(rng, mlp, hidden))
    mask = np.triu(np.full((seq, seq), -1e4, np.float16), 1)

    def fwd(x, mask, *ws):
        it = iter(ws)
        nxt = lambda: next(it)  # noqa: E731

        def split(t):
            return p.transpose(p.reshape(t, seq, heads, hd), 1, 0, 2)

        for _ in range(layers):
            g, b = nxt(), nxt()
            h = p.layer_norm(x, weight=g, bias=b)
            q, k, v = (split(p.linear(h, nxt(), nxt())) for _ in range(3))
            s = p.matmul(q, k, transpose_b=True) * (1 / math.sqrt(hd))
            a = p.matmul(p.softmax(s + mask, axis=-1), v)
            a = p.reshape(p.transpose(a, 1, 0, 2), seq, hidden)
            x = x + p.linear(a, nxt(), nxt())
            g2, b2 = nxt(), nxt()
            h = p.layer_norm(x, weight=g2, bias=b2)
            h = p.gelu(p.linear(h, nxt(), nxt()), approximate="tanh")
            x = x + p.linear(h, nxt(), nxt())
        return x

    return Case(name, fwd, [_f16(rng, seq, hidden), mask, *params])


def demo_case() -> Case:
    spec = importlib.util.spec_from_file_location("demo", os.path.join(ROOT, "examples", "demo.py"))
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    cfg, rng = demo.Config(), _rng(0)
    batch, seq, layers = 2, 32, 1
    weights = demo.make_weights(cfg, layers, seq, rng)
    tokens = rng.integers(0, cfg.vocab, size=(batch, seq)).astype(np.int32)
    ops = demo.PyptoOps()
    return Case("demo_gpt", lambda t: demo.gpt_forward(ops, cfg, weights, t, seq), [tokens])


def op_family_cases() -> list:
    """One program per op family of the test suite."""
    rng = _rng(5)
    x, y = _f16(rng, 64, 128), _f16(rng, 64, 128)
    xf = (rng.standard_normal((64, 128))).astype(np.float32)
    idx = rng.integers(0, 64, size=(32,)).astype(np.int32)
    return [
        Case("ops_elementwise", lambda a, b: p.exp(a) * b + p.sqrt(p.abs(b)) - p.maximum(a, b) / (1 + p.abs(a)), [x, y]),
        Case("ops_activations", lambda a: p.gelu(a) + p.sigmoid(a) + p.tanh(a) + p.silu(a), [x]),
        Case("ops_reductions", lambda a: p.sum(a, axis=-1) + p.max(a, axis=-1) - p.min(a, axis=-1) + p.mean(a, axis=-1), [xf]),
        Case("ops_column_reductions", lambda a: p.sum(a, axis=0) + p.max(a, axis=0), [xf]),
        Case("ops_prod", lambda a: p.prod(a, axis=-1), [xf]),
        Case("ops_argmax", lambda a: p.argmax(a, axis=-1), [xf]),
        Case("ops_broadcast", lambda a, b: a + b[0] * a[:, :1], [x, y]),
        Case("ops_cast_compare_where", lambda a, b: p.where(a > b, a.astype(p.float32), b.astype(p.float32) * 2), [x, y]),
        Case("ops_integer", lambda a: (a * 3 + 1) % 7 - (a // 2), [rng.integers(-100, 100, size=(64, 128)).astype(np.int32)]),
        Case("ops_gather", lambda t, i: p.index_select(t, 0, i), [x, idx]),
        Case("ops_scatter_add", lambda t, i, u: p.scatter(t, 0, i, u, reduce="add"), [xf, np.tile(idx.reshape(32, 1), (1, 128)), rng.standard_normal((32, 128)).astype(np.float32)]),
        Case("ops_sort_topk", lambda a: p.topk(a, 8)[0], [xf]),
        Case("ops_cumsum", lambda a: p.cumsum(a, axis=-1), [xf]),
        Case("ops_transpose_concat", lambda a, b: p.concat([p.transpose(a, 1, 0), p.transpose(b, 1, 0)], axis=0), [x, y]),
        Case("ops_pad_slice", lambda a: p.pad(a[3:40, 5:100], [(1, 2), (3, 4)]), [x]),
        Case("ops_batch_matmul", lambda a, b: p.matmul(a, b), [_f16(rng, 4, 64, 96), _f16(rng, 4, 96, 32)]),
        Case("ops_int8_matmul", lambda a, b: p.matmul(a, b), [rng.integers(-8, 8, size=(64, 96)).astype(np.int8), rng.integers(-8, 8, size=(96, 64)).astype(np.int8)]),
    ]  # fmt: skip


def dynamic_case() -> Case:
    """A feed-forward block traced with symbolic rows and run at two sizes: the second
    run's program is its bucket's (rows <= 128), whose matmul kernels compute the tiles
    of the rows the run needs, their count read from GM."""
    rng = _rng(7)
    w1, b1 = _linear_weights(rng, 128, 256)
    w2, b2 = _linear_weights(rng, 256, 128)

    def ffn(x):
        return p.linear(p.relu(p.linear(x, w1, b1)), w2, b2) + x

    rows = p.Tensor([1, p.symbol("rows"), 128], dtype=p.float16)
    return Case("dynamic_ffn", ffn, [_f16(rng, 1, 100, 128)], trace=[rows], warmup=[_f16(rng, 1, 65, 128)], sizes=lambda x: [x.shape[1]])


def moe_case() -> Case:
    """A mixture-of-experts layer with top-k routing by expert choice (each expert
    takes the k tokens its softmax gate weighs most): per expert, its tokens' rows
    gathered (index_select), run through its feed-forward, weighted by the gate, and
    added back to their tokens' rows (a one-hot matmul)."""
    rng = _rng(9)
    tokens, hidden, experts, ffn, k = 64, 64, 4, 128, 32
    wg = _f16(rng, hidden, experts, scale=0.2)
    ws = [(_linear_weights(rng, hidden, ffn), _linear_weights(rng, ffn, hidden)) for _ in range(experts)]
    token_ids = np.arange(tokens, dtype=np.int32).reshape(tokens, 1)

    def moe(x):
        probs = p.softmax(p.matmul(x, wg).astype(p.float32), axis=-1)
        top_w, top_i = p.topk(p.transpose(probs, 1, 0), k)  # [experts, k]: each expert's tokens
        out = p.zeros([tokens, hidden], dtype=p.float32)
        for e, ((w1, b1), (w2, b2)) in enumerate(ws):
            rows = p.index_select(x, 0, top_i[e])
            h = p.linear(p.relu(p.linear(rows, w1, b1)), w2, b2).astype(p.float32) * p.reshape(top_w[e], k, 1)
            back = p.where(token_ids == p.reshape(top_i[e], 1, k), 1.0, 0.0)  # [tokens, k]: row t takes slot j if token t went there
            out = out + p.matmul(back, h)
        return out

    return Case("moe_expert_choice_top32", moe, [_f16(rng, tokens, hidden)])


@p.block_kernel(grid=2, core="mixed", vectors=2, out_shape=lambda a, b: (a.shape[0], b.shape[1]), out_dtype=lambda a, b: p.float32)
def _matmul_then_scale(a, b, y):
    """Each block: the cube multiplies a band of rows and pushes each half to a vector
    core, which scales it and stores it."""
    rows = a.shape[0] // 2
    r0 = p.block_idx() * rows
    half = rows // 2
    if p.is_cube():
        for v in range(2):
            acc = p.matmul(p.load(a[r0 + v * half:r0 + (v + 1) * half, :]), p.load(b[:, :]))
            p.push(acc, queue=v)
    else:
        v = p.subblock_idx()
        t = p.pop([half, b.shape[1]], p.float32, queue=v)
        p.store(y[r0 + v * half:r0 + (v + 1) * half, :], t * 0.5)


def block_kernel_cases() -> list:
    rng = _rng(11)
    a, b = _f16(rng, 64, 32), _f16(rng, 32, 32)
    return [Case("block_kernel_queues", lambda a, b: p.call_kernel(_matmul_then_scale, a, b), [a, b])]


def cases(size: str = "test") -> list:
    return bench_cases(size) + [demo_case()] + op_family_cases() + [dynamic_case(), moe_case()] + block_kernel_cases()


def compiled(case: Case, run: bool):
    """The case's executor, compiled, and its run's outputs (a tuple) and cycles: run
    with values when run, else traced with placeholders of the inputs' shapes (no
    outputs). A symbolic case always runs (a bucket's program is built by runs): its
    warm-up size first, then its inputs, whose program is the one exported."""
    if case.symbolic:
        ex = p.compile(case.fn, inputs=case.trace)
        ex(*case.warmup)
        out = ex(*case.inputs)
    elif run:
        ex = p.compile(case.fn, dynamic=False)
        out = ex(*case.inputs)
    else:
        placeholders = [p.Tensor(list(x.shape), dtype=getattr(p, str(x.dtype))) for x in case.inputs]
        return p.compile(case.fn, inputs=placeholders), None, None
    outs = out if isinstance(out, tuple) else (out,)
    return ex, tuple(o.numpy() for o in outs), ex.last_cycles
