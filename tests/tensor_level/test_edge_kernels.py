"""Kernels at the edges of the compiler's tiling rules, compiled for real chips and
checked against numpy: products with a single output element (split K then reduces a
row of chunk sums) and long fused chains of expanded transcendentals (whose scratch
tiles must all fit the UB together)."""

import numpy as np
import pytest

import pypto as p


@pytest.mark.parametrize("chip", ["tiny", "a2"])
@pytest.mark.parametrize("m,k,n", [(1, 64, 1), (1, 4096, 1), (1, 70000, 1), (2, 3000, 1), (1, 3000, 2), (1, 1, 1), (3, 5, 1)])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_thin_matmul_matches_numpy(chip, m, k, n, dt):
    rng = np.random.default_rng(m * 100003 + k * 7 + n)
    a = rng.standard_normal((m, k)).astype(dt)
    b = rng.standard_normal((k, n)).astype(dt)
    got = p.compile(lambda x, y: p.matmul(x, y), config=p.CompileConfig(chip=chip))(p.from_numpy(a), p.from_numpy(b)).numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    # fp32 accumulation of k products of fp16/fp32 inputs, then one rounding to dt
    bound = k * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + np.abs(want) * float(np.finfo(dt).eps)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= bound + 1e-30)


@pytest.mark.parametrize("layers", [1, 3, 5])
def test_long_transcendental_fusion_fits_the_ub(layers):
    def chain(y):
        for _ in range(layers):
            y = p.exp(p.sin(y)) * 0.5 + p.tanh(y)
        return y

    x = np.random.default_rng(layers).uniform(-2, 2, size=(256, 1024)).astype(np.float32)
    got = p.compile(chain)(p.from_numpy(x)).numpy()
    want = x.astype(np.float64)
    for _ in range(layers):
        want = np.exp(np.sin(want)) * 0.5 + np.tanh(want)
    np.testing.assert_allclose(got, want, rtol=2e-6 * layers, atol=2e-6 * layers)


@pytest.mark.parametrize("act", ["tanh", "sin", "gelu", "exp"])
@pytest.mark.parametrize("dt", [np.float16, np.float32])
def test_chained_matmul_epilogues_fit_the_ub(act, dt):
    # Each product's epilogue expands its activation into scratch tiles on the vector
    # cores; the matmul's tile search must leave room for all of them.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1024, 1024)).astype(dt)
    w = (rng.standard_normal((1024, 1024)) / (256 if act == "exp" else 32)).astype(dt)  # exp: stay inside fp16
    f = getattr(p, act)

    def chain(a, b):
        return f(p.matmul(f(p.matmul(a, b)), b))

    got = p.compile(chain, config=p.CompileConfig(chip="a2"))(p.from_numpy(x), p.from_numpy(w)).numpy().astype(np.float64)
    ref_f = {"tanh": np.tanh, "sin": np.sin, "exp": np.exp,
             "gelu": lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2)))}[act]
    h = ref_f(x.astype(np.float64) @ w.astype(np.float64)).astype(dt).astype(np.float64)
    want = ref_f(h @ w.astype(np.float64))
    tol = 2e-2 if dt == np.float16 else 1e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
