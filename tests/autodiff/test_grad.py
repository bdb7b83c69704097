"""Gradients (p.grad, p.value_and_grad, backward) of every differentiable op against
torch.autograd, in float32, float16 and bfloat16, with broadcasting; the VJP rules themselves are
also checked against central finite differences of the reference interpreter in Go
(core/vjp_test.go) and here on the "reference" device.

Tolerances. The reference is torch.autograd in float64 on the same input values. In
float32 each gradient is a short chain of rounded ops (and matmuls accumulating in
float32), so ``|got - ref| <= 1e-4 * (|ref| + max|ref|)``. In float16 the gradient
ops round to float16 at every step (a few ulps of 2^-10 each, more through the
normalisations), so ``|got - ref| <= 2e-2 * (|ref| + max|ref|)``. bfloat16 rounds the
same ops to 8 significant bits, a unit roundoff u = 2^-8: the gradients are chains of
at most a few rounded steps (the worst, div's ``-g * a / b**2``, three), so
``|got - ref| <= 8u * (|ref| + max|ref|)`` = 2^-5, a bound that still fails when a
gradient op loses a bit more than its rounding (the worst case measured: about 3u).
"""

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT

torch = pytest.importorskip("torch", reason="the gradient tests compare with torch: pip install pypto[torch]")

BF16_UNIT = 2.0**-8  # bfloat16's unit roundoff: 8 significant bits, round to nearest
TOL = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 8 * BF16_UNIT}
FLOATS = [p.float32, p.float16, p.bfloat16]


def X(*shape):
    return ("x", shape)


def POS(*shape):
    return ("pos", shape)


def IDX(n, *shape):
    return ("idx", shape, n)


def MASK(*shape):
    return ("mask", shape)


F = torch.nn.functional

# (id, pypto function, torch function, inputs)
def _torch_slice_update(x, u, r, c):
    y = x.clone()
    y[r:r + u.shape[0], c:c + u.shape[1]] = u
    return y


CASES = [
    ("add_broadcast", lambda a, b: a + b, lambda a, b: a + b, [X(2, 3), X(3)]),
    ("add_outer", lambda a, b: a + b, lambda a, b: a + b, [X(2, 1), X(1, 3)]),
    ("sub_scalar_shape", lambda a, b: a - b, lambda a, b: a - b, [X(4), X()]),
    ("mul_broadcast", lambda a, b: a * b, lambda a, b: a * b, [X(2, 3, 4), X(3, 1)]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [X(2, 3), POS(3)]),
    ("pow", lambda a, b: a**b, lambda a, b: a**b, [POS(5), X(5)]),
    ("pow_const", lambda a: a**3.0, lambda a: a**3.0, [X(5)]),
    ("maximum", p.maximum, torch.maximum, [X(3, 2), X(2)]),
    ("minimum", p.minimum, torch.minimum, [X(3, 2), X(3, 1)]),
    ("where", p.where, torch.where, [MASK(3, 4), X(3, 4), X(4)]),
    ("neg", p.neg, torch.neg, [X(6)]),
    ("abs", p.abs, torch.abs, [X(6)]),
    ("relu", p.relu, torch.relu, [X(6)]),
    ("exp", p.exp, torch.exp, [X(6)]),
    ("log", p.log, torch.log, [POS(6)]),
    ("sqrt", p.sqrt, torch.sqrt, [POS(6)]),
    ("rsqrt", p.rsqrt, torch.rsqrt, [POS(6)]),
    ("reciprocal", p.reciprocal, torch.reciprocal, [POS(6)]),
    ("sin", p.sin, torch.sin, [X(6)]),
    ("cos", p.cos, torch.cos, [X(6)]),
    ("tanh", p.tanh, torch.tanh, [X(6)]),
    ("erf", p.erf, torch.erf, [X(6)]),
    ("erfc", p.erfc, torch.erfc, [X(6)]),
    ("exp2", p.exp2, torch.exp2, [X(6)]),
    ("expm1", p.expm1, torch.expm1, [X(6)]),
    ("log1p", p.log1p, torch.log1p, [POS(6)]),
    ("log2", p.log2, torch.log2, [POS(6)]),
    ("log10", p.log10, torch.log10, [POS(6)]),
    ("logaddexp", p.logaddexp, torch.logaddexp, [X(3, 2), X(2)]),
    ("hypot", p.hypot, torch.hypot, [POS(3, 2), X(2)]),
    ("atan2", p.atan2, torch.atan2, [X(3, 2), POS(3, 1)]),
    ("sigmoid", p.sigmoid, torch.sigmoid, [X(6)]),
    ("silu", p.silu, F.silu, [X(6)]),
    ("gelu", p.gelu, F.gelu, [X(2, 5)]),
    ("gelu_tanh", lambda x: p.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh"), [X(2, 5)]),
    ("clip", lambda x: p.clip(x, -0.5, 0.5), lambda x: torch.clamp(x, -0.5, 0.5), [X(8)]),
    ("matmul", p.matmul, torch.matmul, [X(3, 4), X(4, 5)]),
    ("matmul_ta", lambda a, b: p.matmul(a, b, transpose_a=True), lambda a, b: a.T @ b, [X(4, 3), X(4, 5)]),
    ("matmul_tb", lambda a, b: p.matmul(a, b, transpose_b=True), lambda a, b: a @ b.T, [X(3, 4), X(5, 4)]),
    ("matmul_tatb", lambda a, b: p.matmul(a, b, transpose_a=True, transpose_b=True), lambda a, b: a.T @ b.T, [X(4, 3), X(5, 4)]),
    ("batch_matmul_broadcast", p.matmul, torch.matmul, [X(2, 3, 4), X(4, 5)]),
    ("batch_matmul_batches", p.matmul, torch.matmul, [X(2, 1, 3, 4), X(3, 4, 2)]),
    ("linear", p.linear, F.linear, [X(2, 3, 4), X(5, 4), X(5)]),
    ("sum_all", lambda x: p.sum(x), torch.sum, [X(3, 4)]),
    ("sum_axis", lambda x: p.sum(x, axis=1), lambda x: x.sum(1), [X(3, 4, 2)]),
    ("mean_keepdims", lambda x: p.mean(x, axis=(0, 2), keepdims=True), lambda x: x.mean((0, 2), keepdim=True), [X(3, 4, 2)]),
    ("max_axis", lambda x: p.max(x, axis=1), lambda x: torch.amax(x, 1), [X(3, 5)]),
    ("min_all", lambda x: p.min(x), torch.amin, [X(3, 5)]),
    ("var", lambda x: p.var(x, axis=1), lambda x: x.var(1, unbiased=False), [X(3, 5)]),
    ("std_ddof", lambda x: p.std(x, axis=0, ddof=1), lambda x: x.std(0), [X(4, 3)]),
    ("softmax", lambda x: p.softmax(x, axis=-1), lambda x: torch.softmax(x, -1), [X(3, 6)]),
    ("softmax_axis0", lambda x: p.softmax(x, axis=0), lambda x: torch.softmax(x, 0), [X(3, 6)]),
    ("log_softmax", lambda x: p.log_softmax(x), lambda x: torch.log_softmax(x, -1), [X(3, 6)]),
    ("layer_norm", lambda x, w, b: p.layer_norm(x, [8], w, b), lambda x, w, b: F.layer_norm(x, [8], w, b), [X(2, 3, 8), X(8), X(8)]),
    ("rms_norm", lambda x, w: p.rms_norm(x, [8], w), lambda x, w: F.rms_norm(x, [8], w, eps=1e-6), [X(3, 8), X(8)]),
    ("reshape", lambda x: p.reshape(x, [4, 3]) * p.arange(12).reshape([4, 3]), lambda x: x.reshape(4, 3) * torch.arange(12.0).reshape(4, 3), [X(2, 6)]),
    ("transpose", lambda x: p.transpose(x), lambda x: x.permute(2, 1, 0), [X(2, 3, 4)]),
    ("permute", lambda x: x.permute(1, 2, 0), lambda x: x.permute(1, 2, 0), [X(2, 3, 4)]),
    ("broadcast_to", lambda x: p.broadcast_to(x, [2, 3, 4]), lambda x: x.expand(2, 3, 4), [X(3, 1)]),
    ("unsqueeze_squeeze", lambda x: p.squeeze(p.unsqueeze(x, 1), 1) * 2, lambda x: x * 2, [X(3, 4)]),
    ("slice", lambda x: x[1:, ::2], lambda x: x[1:, ::2], [X(4, 5)]),
    ("slice_reverse", lambda x: x[::-1, 1:3], lambda x: x.flip(0)[:, 1:3], [X(4, 5)]),
    ("concat", lambda a, b: p.concat([a, b], axis=1), lambda a, b: torch.cat([a, b], 1), [X(2, 3), X(2, 2)]),
    ("stack", lambda a, b: p.stack([a, b], axis=0), lambda a, b: torch.stack([a, b], 0), [X(2, 3), X(2, 3)]),
    ("pad", lambda x: p.pad(x, [(1, 0), (0, 2)]), lambda x: F.pad(x, (0, 2, 1, 0)), [X(2, 3)]),
    ("embedding", lambda w, i: p.take(w, i, axis=0), lambda w, i: F.embedding(i, w), [X(6, 4), IDX(6, 5)]),
    ("embedding_2d_ids", lambda w, i: p.take(w, i, axis=0), lambda w, i: F.embedding(i, w), [X(6, 4), IDX(6, 2, 3)]),
    ("index_select_axis1", lambda x, i: p.index_select(x, 1, i), lambda x, i: torch.index_select(x, 1, i), [X(2, 5, 3), IDX(5, 4)]),
    ("take_along_axis", lambda x, i: p.take_along_axis(x, i, axis=1), lambda x, i: torch.gather(x, 1, i), [X(3, 5), IDX(5, 3, 2)]),
    ("slice_update", lambda x, u: p.slice_update(x, u, [1, 2]), lambda x, u: _torch_slice_update(x, u, 1, 2), [X(4, 6), X(2, 3)]),
    ("index_put", lambda x, v: p.index_put(x, ([2, 0], [1, 4]), v), lambda x, v: x.index_put((torch.tensor([2, 0]), torch.tensor([1, 4])), v),
     [X(3, 5), X(2)]),
    ("index_put_accumulate", lambda x, v: p.index_put(x, ([3, 0, 3],), v, accumulate=True),
     lambda x, v: x.index_put((torch.tensor([3, 0, 3]),), v, accumulate=True), [X(4, 5), X(3, 5)]),
    ("scatter", lambda x, s: p.scatter(x, 0, [[1, 0, 2], [0, 2, 1]], s), lambda x, s: x.scatter(0, torch.tensor([[1, 0, 2], [0, 2, 1]]), s),
     [X(3, 3), X(2, 3)]),
    ("scatter_add", lambda x, s: p.scatter(x, 1, [[0, 4, 0], [2, 2, 1]], s, reduce="add"),
     lambda x, s: x.scatter_add(1, torch.tensor([[0, 4, 0], [2, 2, 1]]), s), [X(2, 5), X(2, 3)]),
    ("cast", lambda x: p.cast(x, p.float32) * 3, lambda x: x * 3, [X(5)]),
    ("cumsum", lambda x: p.cumsum(x, axis=1), lambda x: torch.cumsum(x, 1), [X(2, 5)]),
    ("sort", lambda x: p.sort(x, axis=1), lambda x: torch.sort(x, 1).values, [X(3, 5)]),
    ("topk", lambda x: p.topk(x, 2).values, lambda x: torch.topk(x, 2).values, [X(3, 5)]),
    ("conv2d", lambda x, w, b: p.conv2d(x, w, b, stride=(2, 1), padding=1), lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1),
     [X(2, 3, 5, 4), X(4, 3, 3, 2), X(4)]),
    ("conv2d_depthwise", lambda x, w: p.conv2d(x, w, groups=2, dilation=2, padding=2), lambda x, w: F.conv2d(x, w, groups=2, dilation=2, padding=2),
     [X(1, 2, 5, 5), X(2, 1, 3, 3)]),
    ("batch_norm", lambda x, m, v, w, b: p.batch_norm(x, m, v, w, b, eps=0.1), 
     lambda x, m, v, w, b: (x - m[:, None, None]) / torch.sqrt(v[:, None, None] + 0.1) * w[:, None, None] + b[:, None, None],
     [X(2, 3, 4, 2), X(3), POS(3), X(3), X(3)]),
    ("max_pool2d", lambda x: p.max_pool2d(x, 2, stride=1, padding=1), lambda x: F.max_pool2d(x, 2, stride=1, padding=1), [X(2, 2, 4, 5)]),
    ("avg_pool2d", lambda x: p.avg_pool2d(x, 3, stride=2, padding=1), lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [X(1, 2, 5, 6)]),
    ("sdpa_causal",
     lambda q, k, v: p.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [X(2, 4, 8), X(2, 4, 8), X(2, 4, 8)]),
]  # fmt: skip


def _inputs(specs, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        kind, shape = spec[0], spec[1]
        if kind == "idx":
            out.append(rng.integers(0, spec[2], size=shape).astype(np.int32))
        elif kind == "mask":
            out.append(rng.random(shape) < 0.5)
        else:
            v = rng.uniform(0.5, 1.5, size=shape) if kind == "pos" else rng.uniform(-1, 1, size=shape)
            out.append(v.astype(dtype.numpy))
    return out


def _is_float(a) -> bool:
    return a.dtype.kind == "f" or a.dtype == p.bfloat16.numpy  # ml_dtypes' bfloat16 has kind "V"


def _torch_grads(tfn, arrays, w):
    ts = [
        torch.tensor(a.astype(np.float64), requires_grad=True) if _is_float(a) else torch.tensor(a.astype(np.int64) if a.dtype.kind == "i" else a)
        for a in arrays
    ]
    y = tfn(*ts)
    (y.double() * torch.tensor(w.astype(np.float64))).sum().backward()
    return [t.grad.numpy() if t.requires_grad else None for t in ts]


def _check(got, ref, tol, what):
    got = np.asarray(got, dtype=np.float64)
    scale = np.abs(ref).max() if ref.size else 0.0
    err = np.abs(got - ref) - tol * (np.abs(ref) + scale)
    assert got.shape == ref.shape, what
    assert (err <= 1e-30).all(), f"{what}: worst |got - ref| {np.abs(got - ref).max():.3g}, max|ref| {scale:.3g}\ngot {got}\nref {ref}"


@pytest.mark.parametrize("dtype", FLOATS, ids=[d.name for d in FLOATS])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_torch(case, dtype):
    name, pfn, tfn, specs = case
    arrays = _inputs(specs, dtype, seed=len(name))
    floats = [i for i, a in enumerate(arrays) if _is_float(a)]
    ins = [p.from_numpy(a) for a in arrays]
    y = pfn(*ins)
    w = np.random.default_rng(7).uniform(-1, 1, size=y.shape).astype(y.dtype.numpy)
    wt = p.from_numpy(w)

    def loss(*xs):
        return p.sum(pfn(*xs) * wt)

    grads = p.grad(loss, argnums=tuple(floats))(*ins)
    ref = _torch_grads(tfn, arrays, w)
    for i, g in zip(floats, grads):
        assert g.dtype == ins[i].dtype and tuple(g.shape) == tuple(ins[i].shape)
        _check(g.numpy(), ref[i], TOL[dtype.name], f"{name} input {i}")


def test_every_differentiable_op_is_covered():
    """Each op gradients flow through appears in CASES (by its Go op name), so a new
    differentiable op needs a torch comparison here."""
    ops = set(p.differentiable_ops())
    tested = {
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "neg", "abs", "relu", "exp", "log", "sqrt",
        "rsqrt", "reciprocal", "sin", "cos", "tanh", "erf", "sigmoid", "silu", "gelu", "clip", "matmul",
        "batch_matmul", "linear", "sum", "mean", "max", "min", "var", "std", "softmax", "log_softmax", "layer_norm",
        "rms_norm", "reshape", "transpose", "broadcast_to", "squeeze", "unsqueeze", "slice", "concat", "stack", "pad",
        "index_select", "take_along_axis", "cast", "cumsum", "sort", "topk_values", "scaled_dot_product_attention",
        "conv2d", "batch_norm", "max_pool2d", "avg_pool2d", "mod", "slice_update", "index_put", "scatter", "erfc", "exp2", "expm1", "log1p", "log2", "log10", "logaddexp", "hypot", "atan2",
    }  # fmt: skip
    assert ops - tested == set(), f"differentiable ops without a torch comparison: {sorted(ops - tested)}"


def test_mod_gradient():
    a = np.array([5.5, -3.25, 7.0], np.float32)
    b = np.array([2.0, 2.0, -3.0], np.float32)
    ga, gb = p.grad(lambda x, y: p.sum(p.mod(x, y)), argnums=(0, 1))(p.from_numpy(a), p.from_numpy(b))
    ta, tb = (torch.tensor(v.astype(np.float64), requires_grad=True) for v in (a, b))
    torch.remainder(ta, tb).sum().backward()
    _check(ga.numpy(), ta.grad.numpy(), 1e-6, "mod a")
    _check(gb.numpy(), tb.grad.numpy(), 1e-6, "mod b")


def test_finite_differences_on_the_reference_device():
    """Central differences of the reference interpreter (float64 inside each op,
    float32 results) agree with the gradient of a small network computed on the chip."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, (5,)).astype(np.float32)

    def f(w, g):
        h = p.layer_norm(p.gelu(p.from_numpy(x) @ w), [5], g)
        return p.mean(p.log_softmax(h) * h)

    gw, gg = p.grad(f, argnums=(0, 1))(p.from_numpy(w), p.from_numpy(g))
    prev = p.get_device()
    p.set_device("reference")
    try:
        for arg, got in ((w, gw.numpy()), (g, gg.numpy())):
            h = 1e-2
            fd = np.zeros_like(arg, dtype=np.float64)
            for i in np.ndindex(arg.shape):
                orig = arg[i]
                arg[i] = orig + h
                up = float(f(p.from_numpy(w), p.from_numpy(g)))
                arg[i] = orig - h
                down = float(f(p.from_numpy(w), p.from_numpy(g)))
                arg[i] = orig
                fd[i] = (up - down) / (2 * h)
            np.testing.assert_allclose(got, fd, rtol=2e-2, atol=2e-3)
    finally:
        p.set_device(prev)


def test_backward_accumulates_into_grad():
    w = p.Tensor([3], data=[1.0, 2.0, 3.0], requires_grad=True)
    assert w.requires_grad and w.grad is None
    loss = p.sum(w * w)
    print(float(loss))  # realising the loss keeps what backward needs
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2, 4, 6])
    p.sum(w * 3).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [5, 7, 9])
    w.grad = None
    y = w * 2
    y.backward(gradient=p.from_numpy(np.array([1, 0, -1], np.float32)))
    np.testing.assert_array_equal(w.grad.numpy(), [2, 0, -2])


def test_backward_errors():
    x = p.from_numpy(np.ones(3, np.float32))
    with pytest.raises(p.PyptoValueError, match="requires grad"):
        p.sum(x).backward()
    w = p.Tensor([3], requires_grad=True)
    with pytest.raises(p.ShapeError, match="single-element"):
        (w * 2).backward()
    with pytest.raises(p.DTypeError, match="float"):
        p.Tensor([2], dtype=p.int32).requires_grad_()
    with pytest.raises(p.PyptoTypeError, match="must return a p.Tensor"):
        p.grad(lambda a: 3.0)(w)
    with pytest.raises(p.PyptoValueError, match="argnums 2"):
        p.grad(lambda a: p.sum(a), argnums=2)(w)


def test_grad_of_unused_input_is_zero_and_structure_is_kept():
    a = p.from_numpy(np.ones((2, 2), np.float32))
    params = {"w": p.from_numpy(np.full((2,), 2.0, np.float32)), "unused": p.from_numpy(np.ones(3, np.float32))}
    value, g = p.value_and_grad(lambda ps, x: p.sum(x * ps["w"]))(params, a)
    assert float(value) == 8.0
    assert set(g) == {"w", "unused"}
    np.testing.assert_array_equal(g["w"].numpy(), [2, 2])
    np.testing.assert_array_equal(g["unused"].numpy(), [0, 0, 0])


def test_compiled_backward_matches_eager():
    """p.compile of a value_and_grad traces the backward nodes into the program, which
    the compiler fuses and tiles like any other graph."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 32)).astype(np.float32)

    def loss(w, x):
        return p.mean(p.silu(x @ w) ** 2.0)

    step = p.compile(p.value_and_grad(loss), dynamic=False)
    v, g = step(p.from_numpy(w), p.from_numpy(x))
    ve, ge = p.value_and_grad(loss)(p.from_numpy(w), p.from_numpy(x))
    np.testing.assert_allclose(float(v), float(ve), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), ge.numpy(), rtol=1e-5, atol=1e-7)
    graph = step.graph()
    assert graph.count("matmul") >= 2, graph  # forward and the backward product
    assert step.last_cycles > 0


def test_compiled_backward_in_bfloat16_matches_torch():
    """A compiled training step in bfloat16 (forward and backward on the chip, bf16
    storage, float32 accumulation in the matmuls) against torch.autograd in float64 on
    the same bf16 values, within the bfloat16 bound of the module's documentation."""
    rng = np.random.default_rng(3)
    bf = p.bfloat16.numpy
    x = rng.uniform(-1, 1, (8, 16)).astype(bf)
    w = rng.uniform(-1, 1, (16, 32)).astype(bf)

    def loss(w, x):
        return p.sum(p.silu(x @ w) * 0.25)

    step = p.compile(p.value_and_grad(loss), dynamic=False)
    v, g = step(p.from_numpy(w), p.from_numpy(x))
    assert g.dtype == p.bfloat16 and tuple(g.shape) == (16, 32)
    tw = torch.tensor(w.astype(np.float64), requires_grad=True)
    ref = (F.silu(torch.tensor(x.astype(np.float64)) @ tw) * 0.25).sum()
    ref.backward()
    _check(g.numpy(), tw.grad.numpy(), TOL["bfloat16"], "compiled bf16 gradient of w")
    _check(np.float64(v.numpy()), ref.detach().numpy(), TOL["bfloat16"], "compiled bf16 loss")


def test_second_order_gradient():
    """Gradients are lazy tensors built from ops, so they can be differentiated again."""
    x = p.from_numpy(np.array([1.0, -2.0], np.float32))
    d2 = p.grad(lambda y: p.sum(p.grad(lambda z: p.sum(z * z * z))(y)))(x)
    np.testing.assert_allclose(d2.numpy(), [6.0, -12.0])


def test_api_doc_examples_run():
    import pathlib
    import re

    text = (ROOT / "docs" / "api.md").read_text()
    start = text.index("\n## Gradients and training\n")
    section = text[start : text.find("\n## ", start + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    ns = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), ns)
    np.testing.assert_allclose(ns["dw"].numpy(), ns["grads"]["w"].numpy(), rtol=1e-6)


def test_compiled_gradient_with_automatic_symbols_traces_concretely():
    """A gradient needs concrete shapes: under p.compile's automatic symbols the trace
    falls back to the concrete one; with dynamic=True the error says why."""
    f = p.compile(p.grad(lambda x: p.sum(x * x)))
    np.testing.assert_array_equal(f(p.from_numpy(np.array([1.0, 2.0], np.float32))).numpy(), [2, 4])
    assert not f.is_symbolic
    g = p.compile(p.grad(lambda x: p.sum(x * x)), dynamic=True)
    with pytest.raises(p.ShapeError, match="symbolic"):
        g(p.from_numpy(np.array([1.0, 2.0], np.float32)))
