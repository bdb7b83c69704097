"""The rest of numpy's elementwise set (erfc, exp2, expm1, log1p, log2, log10, trunc,
sign, isinf, isposinf, isneginf, logaddexp, hypot, atan2, round with decimals) against
numpy's float64 results, on the reference interpreter and the simulated chip. The chip
evaluates the math functions in fp32 steps (docs/lowering.md): float32 results are
within a few fp32 ulps (the bounds below), narrower dtypes within one of their ulps."""

import math

import ml_dtypes
import numpy as np
import pytest

import pypto as p
from conftest import FLOAT_DTYPES, TINY, ULP, rand

# name: (p function, numpy float64 reference, fp32 ulps on the chip). logaddexp's bound
# is relative to max(|a|, |b|): max(a, b) + log1p(exp(-|a - b|)) cancels where the result
# is near 0, in numpy's float32 loop (which has the same error) as on the chip.
UNARY = {
    "erfc": (p.erfc, np.vectorize(math.erfc, otypes=[np.float64]), 8),
    "exp2": (p.exp2, np.exp2, 2),
    "expm1": (p.expm1, np.expm1, 3),
    "log1p": (p.log1p, np.log1p, 3),
    "log2": (p.log2, np.log2, 2),
    "log10": (p.log10, np.log10, 2),
}
BINARY = {
    "logaddexp": (p.logaddexp, np.logaddexp, 3),
    "hypot": (p.hypot, np.hypot, 2),
    "atan2": (p.atan2, np.arctan2, 3),
}
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, -1e-30, 1e-40, 3e38, -3e38, 1e-7, -1e-7]


def _inputs(name, dt, seed, shape=(3, 37)):
    """Values spread over the range where the function is interesting for dt."""
    nd = np.dtype(p.dtypes.as_dtype(dt).numpy)
    rng = np.random.default_rng(seed)
    big = {np.dtype(np.float16): 10.0, np.dtype(np.float32): 38.0}.get(nd, 38.0)
    if name in ("log2", "log10"):
        v = 10.0 ** rng.uniform(-big * 0.9, big * 0.9, shape)
    elif name == "log1p":
        v = np.where(rng.random(shape) < 0.5, rng.uniform(-0.999, 1, shape), 10.0 ** rng.uniform(-8, big * 0.9, shape))
    elif name == "exp2":
        lim = {np.dtype(np.float16): 15.0}.get(nd, 127.0)
        v = rng.uniform(-lim - 10, lim, shape)
    elif name == "expm1":
        v = np.where(rng.random(shape) < 0.5, rng.uniform(-1e-3, 1e-3, shape), rng.uniform(-20, 10, shape))
    else:  # erfc
        v = rng.uniform(-4, 10, shape)
    return v.astype(np.float32).astype(nd)


def assert_close_ulps(got, ref64, dt, ulps, scale=None):
    """got (of dt) matches the exact ref64: the same NaNs and infinities where either has
    them, elsewhere within ulps of dt's ulp relative to |ref64| (or to scale where that is
    larger) plus dt's smallest normal."""
    nd = np.dtype(p.dtypes.as_dtype(dt).numpy)
    assert got.dtype == nd, (got.dtype, nd)
    g = got.astype(np.float64)
    with np.errstate(over="ignore"):
        want = ref64.astype(nd).astype(np.float64)
    special = ~np.isfinite(g) | ~np.isfinite(want)
    np.testing.assert_array_equal(g[special], want[special])
    err = np.abs(g - ref64)[~special]
    mag = np.abs(ref64) if scale is None else np.maximum(np.abs(ref64), scale)
    bound = (ulps * ULP[nd] * mag + TINY[nd])[~special]
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} off; worst {err[bad].max()} (bound {bound[bad][np.argmax(err[bad])]})"


def _ulps(fp32_ulps, dt):
    """The bound: the chip's fp32 error for float32, one ulp for narrower dtypes (the
    fp32 result rounded once), and the reference's single rounding everywhere."""
    if p.get_device() == "reference" or p.dtypes.as_dtype(dt) != p.float32:
        return 1
    return fp32_ulps


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_against_numpy(device, name, dt):
    fn, ref, ulps = UNARY[name]
    a = _inputs(name, dt, 1)
    with np.errstate(all="ignore"):
        assert_close_ulps(fn(a).numpy(), ref(a.astype(np.float64)), dt, _ulps(ulps, dt))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_special_values(device, name):
    fn, ref, _ = UNARY[name]
    a = np.array(SPECIAL * 16, np.float32)  # 272 values: several tiles' worth on the chip
    got = fn(a).numpy()
    with np.errstate(all="ignore"):
        want = ref(a.astype(np.float64)).astype(np.float32)
    assert_close_ulps(got, ref(a.astype(np.float64)), p.float32, _ulps(UNARY[name][2], p.float32))
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg="signs of zeros")


def test_exact_cases(device):
    """Exact results numpy users rely on: powers of two and ten, integers of exp2."""
    k = np.arange(-149, 128, dtype=np.float64)
    x = (2.0**k).astype(np.float32)
    np.testing.assert_array_equal(p.log2(x).numpy(), k.astype(np.float32))
    np.testing.assert_array_equal(p.exp2(k.astype(np.float32)).numpy(), x)
    tens = np.array([10.0**i for i in range(0, 11)], np.float32)
    np.testing.assert_array_equal(p.log10(tens).numpy(), np.arange(11, dtype=np.float32))


@pytest.mark.parametrize("name", ["trunc", "sign", "isinf", "isposinf", "isneginf"])
@pytest.mark.parametrize("dt", [p.float32, p.float16, p.bfloat16, p.int8, p.int32])
def test_exact_unary_against_numpy(device, name, dt):
    nd = np.dtype(dt.numpy)
    if dt.is_floating:
        a = np.concatenate([rand((5, 41), dt, 4, -300, 300).ravel(), np.array(SPECIAL, np.float32).astype(nd)])
    else:
        info = np.iinfo(nd)
        a = np.random.default_rng(5).integers(info.min, info.max, 220, endpoint=True).astype(nd)
    got = getattr(p, name)(a).numpy()
    want = getattr(np, name)(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    # ml_dtypes' bfloat16 sign keeps -0.0; numpy's float loops (and PyPTO) give +0.0
    if dt.is_floating and name in ("trunc", "sign") and not (dt == p.bfloat16 and name == "sign"):
        zeros = want == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


def test_predicates_and_sign_reject_or_accept_bool(device):
    b = np.array([True, False])
    np.testing.assert_array_equal(p.isinf(b).numpy(), [False, False])
    with pytest.raises(p.DTypeError, match="sign: not defined for bool"):
        p.sign(b)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_math_against_numpy(device, name, dt):
    fn, ref, ulps = BINARY[name]
    a = rand((5, 1, 7), dt, 6, -30, 30)
    b = rand((3, 1), dt, 7, -30, 30)
    got = fn(a, b).numpy()
    assert got.shape == (5, 3, 7)
    assert_close_ulps(got, ref(a.astype(np.float64), b.astype(np.float64)), dt, _ulps(ulps, dt), _scale(name, a, b))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_math_special_pairs(device, name):
    fn, ref, ulps = BINARY[name]
    v = np.array(SPECIAL + [5.0, -7.0, 1e20, -1e-20], np.float32)
    a, b = np.meshgrid(v, v, indexing="ij")
    a, b = a.copy(), b.copy()
    got = fn(a, b).numpy()
    with np.errstate(all="ignore"):
        r64 = ref(a.astype(np.float64), b.astype(np.float64))
        want = ref(a, b)
    assert_close_ulps(got, r64, p.float32, _ulps(ulps, p.float32), _scale(name, a, b))
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg="signs of zeros")


def _scale(name, a, b):
    if name != "logaddexp":
        return None
    with np.errstate(all="ignore"):
        return np.maximum(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))


def test_logaddexp_error_is_numpys_float32_error():
    """The chip's logaddexp is numpy's float32 formula: within 2 fp32 ulps of numpy's own
    float32 result, over a wide sample."""
    rng = np.random.default_rng(14)
    a = rng.uniform(-30, 30, (16, 256)).astype(np.float32)
    b = rng.uniform(-30, 30, (16, 256)).astype(np.float32)
    prev = p.get_device()
    p.set_device("tiny")
    try:
        got = p.logaddexp(a, b).numpy().astype(np.float64)
    finally:
        p.set_device(prev)
    want = np.logaddexp(a, b)
    assert np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want)))


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_integer_operands_give_floats(device, name):
    fn, ref, ulps = {**UNARY, **BINARY}[name]
    ai = np.array([[1, 2, 3, 7, 100, -3, 0, 5]], np.int32)
    args = (ai,) if name in UNARY else (ai, ai[:, ::-1].copy())
    got = fn(*args).numpy()
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        r64 = ref(*[x.astype(np.float64) for x in args])
    assert_close_ulps(got, r64, p.float32, _ulps(ulps, p.float32), _scale(name, *args) if name in BINARY else None)
    assert fn(*[x.astype(np.int8) for x in args]).dtype == p.float16


@pytest.mark.parametrize("shape", [(), (1,), (0, 4), (2, 3, 5), (1, 300)])
def test_odd_shapes(device, shape):
    a = rand(shape, p.float32, 8, 0.1, 4)
    b = rand(shape, p.float32, 9, -4, 4)
    for name in ("log1p", "erfc", "exp2"):
        got = getattr(p, name)(a).numpy()
        assert got.shape == shape
        assert_close_ulps(got, UNARY[name][1](a.astype(np.float64)), p.float32, _ulps(UNARY[name][2], p.float32))
    got = p.atan2(a, b).numpy()
    assert_close_ulps(got, np.arctan2(a.astype(np.float64), b.astype(np.float64)), p.float32, _ulps(3, p.float32))


@pytest.mark.parametrize("decimals", [-3, -1, 1, 2, 4])
@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_round_decimals_matches_numpy_bit_for_bit(device, dt, decimals):
    nd = np.dtype(dt.numpy)
    a = np.concatenate([rand((4, 33), dt, 10, -2000, 2000).ravel(),
                        np.array([0.125, -0.125, 2.5, 0.05, -0.0, np.inf, -np.inf, np.nan, 1e30], np.float32).astype(nd)])
    with np.errstate(all="ignore"):
        want = np.round(a, decimals)
    got = p.round(a, decimals).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


def test_round_decimals_overflowing_scale_is_numpys_nan(device):
    a = np.array([1.5, -2.25, 0.0], np.float16)
    with np.errstate(all="ignore"):
        want = np.round(a, 5)  # 1e5 is inf in float16: x * inf / inf
    np.testing.assert_array_equal(p.round(a, 5).numpy(), want)


@pytest.mark.parametrize("decimals", [-1, -2, -9, -12, 0, 3])
@pytest.mark.parametrize("dt", [p.int8, p.int32])
def test_round_decimals_integers(device, dt, decimals):
    nd = np.dtype(dt.numpy)
    ties = [15, 25, -15, -25, 125, -125, 5, -5, 150, 250, 127, -128]
    info = np.iinfo(nd)
    rng = np.random.default_rng(11)
    a = np.concatenate([np.array(ties, np.int64), rng.integers(info.min // 2, info.max // 2, 300)]).astype(nd)
    want = np.round(a.astype(np.int64), decimals).astype(nd)  # exact (numpy's float64 path)
    got = p.round(a, decimals).numpy()
    assert got.dtype == nd
    np.testing.assert_array_equal(got, want)


def test_round_decimals_bad_argument():
    with pytest.raises(p.PyptoTypeError, match="round: decimals must be an int"):
        p.round(np.ones(2, np.float32), 1.5)


def test_compiled_program_matches_eager(device):
    a = rand((4, 40), p.float32, 12, 0.1, 3)
    b = rand((4, 40), p.float32, 13, -3, 3)

    def f(x, y):
        return p.logaddexp(p.log1p(x), p.expm1(y) * 0.01) + p.atan2(y, x) - p.round(p.hypot(x, y), 2)

    want = f(a, b).numpy()
    np.testing.assert_array_equal(p.compile(f)(a, b).numpy(), want)


def test_bfloat16_numpy_is_ml_dtypes():
    # The reference is numpy with ml_dtypes' bfloat16; round on it is numpy's own loop.
    a = np.array([1.5, 2.25], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(p.round(a, 1).numpy(), np.round(a, 1))
