"""Elementwise ops, comparisons, logic, where, clip and casts against numpy, on the
reference interpreter and on the simulated chip (see conftest.compute). Tolerances:
results are the exact value rounded once to the result dtype, so they lie within one
unit in the last place of numpy's float64 result (conftest.assert_elementwise_close)."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as p
from conftest import FLOAT_DTYPES, ULP, assert_elementwise_close, compute, rand

BINARY = {
    "sub": (p.sub, np.subtract),
    "div": (p.div, np.divide),
    "maximum": (p.maximum, np.maximum),
    "minimum": (p.minimum, np.minimum),
    "pow": (p.pow, np.power),
    "floor_divide": (p.floor_divide, np.floor_divide),
    "mod": (p.mod, np.mod),
}
UNARY = {
    "neg": (p.neg, np.negative, None),
    "abs": (p.abs, np.abs, None),
    "exp": (p.exp, np.exp, (-4, 4)),
    "log": (p.log, np.log, (0.01, 8)),
    "sqrt": (p.sqrt, np.sqrt, (0, 8)),
    "rsqrt": (p.rsqrt, lambda a: 1 / np.sqrt(a), (0.01, 8)),
    "reciprocal": (p.reciprocal, np.reciprocal, (0.1, 4)),
    "sin": (p.sin, np.sin, None),
    "cos": (p.cos, np.cos, None),
    "tanh": (p.tanh, np.tanh, None),
    "erf": (p.erf, np.vectorize(math.erf), None),
    "floor": (p.floor, np.floor, None),
    "ceil": (p.ceil, np.ceil, None),
    "round": (p.round, np.round, None),
    "relu": (p.relu, lambda a: np.maximum(a, 0), None),
    "sigmoid": (p.sigmoid, lambda a: 1 / (1 + np.exp(-a)), None),
    "silu": (p.silu, lambda a: a / (1 + np.exp(-a)), None),
    "gelu": (p.gelu, lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2))), None),
}


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_against_numpy(device, name, dt):
    fn, ref = BINARY[name]
    a, b = rand((5, 7), dt, 1, -3, 3), rand((7,), dt, 2, 0.5, 2)
    got = compute(fn(p.from_numpy(a), p.from_numpy(b)), name)
    if got is not None:
        with np.errstate(all="ignore"):
            want = ref(a.astype(np.float64), b.astype(np.float64))
            if name == "pow" and p.get_device() != "reference":
                # exp(b*log|a|) in float32 on the device (docs/lowering.md): a few float32
                # ulps, then rounded once to the result dtype
                ulp = ULP[np.dtype(p.dtypes.as_dtype(dt).numpy)]
                np.testing.assert_allclose(got.astype(np.float64), want, rtol=ulp + 2e-6, atol=1e-7)
            else:
                assert_elementwise_close(got, want, dt)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(device, name, dt):
    fn, ref, (lo, hi) = UNARY[name][0], UNARY[name][1], UNARY[name][2] or (-3, 3)
    a = rand((4, 9), dt, 3, lo, hi)
    got = compute(fn(p.from_numpy(a)), name)
    if got is not None:
        want = ref(a.astype(np.float64))
        if name in ("sigmoid", "silu", "gelu", "tanh", "erf", "sin", "cos") and p.get_device() != "reference":
            # composites, and tanh/erf/sin/cos (polynomials; docs/lowering.md), compute in
            # float32 steps on the device: a few float32 ulps
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=4e-3, atol=1e-3)
        else:
            assert_elementwise_close(got, want, dt)


def test_gelu_tanh_form_matches_torch_formula(device):
    a = rand((64,), p.float32, 4, -5, 5).astype(np.float64)
    got = compute(p.gelu(p.from_numpy(a.astype(np.float32)), approximate="tanh"), "gelu")
    if got is not None:
        want = 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"])
def test_comparisons_give_bool_and_handle_nan(device, name):
    a = np.array([[1, np.nan, 3, -np.inf], [0, 2, np.nan, 5]], np.float32)
    b = np.array([1, 2, np.nan, -np.inf], np.float16)
    got = compute(getattr(p, name)(p.from_numpy(a), p.from_numpy(b)), name)
    if got is not None:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, getattr(np, name)(a, b.astype(np.float32)))


def test_operators_match_numpy(device):
    a, b = rand((3, 4), p.float32, 5, -2, 2), rand((4,), p.float32, 6, 0.5, 2)
    x, y = p.from_numpy(a), p.from_numpy(b)
    pairs = [
        (x - y, a - b, "sub"), (x / y, a / b, "div"), (x // y, a // b, "floor_divide"), (x % y, a % b, "mod"),
        (x ** 2, a**2, "pow"), (-x, -a, "neg"), (abs(x), np.abs(a), "abs"), (2 - x, 2 - a, "sub"),
        (1 / y, 1 / b, "div"), (2 ** y, 2**b, "pow"), (x * 3, a * 3, "mul"), (0.5 + x, 0.5 + a, "add"),
    ]  # fmt: skip
    for t, want, op in pairs:
        got = compute(t, op)
        if got is not None:
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_logic_and_predicates(device):
    a = np.array([0, 1, np.nan, np.inf, -2], np.float32)
    x = p.from_numpy(a)
    m = x > 0
    for t, want, op in [
        (m & (x < 2), (a > 0) & (a < 2), "logical_and"),
        (m | p.isnan(x), (a > 0) | np.isnan(a), "logical_or"),
        (m ^ True, (a > 0) ^ True, "logical_xor"),
        (~m, ~(a > 0), "logical_not"),
        (p.isfinite(x), np.isfinite(a), "isfinite"),
        (p.logical_not(x), np.logical_not(a), "logical_not"),
    ]:
        got = compute(t, op)
        if got is not None:
            np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        p.from_numpy(np.ones(2, np.int32)) & True


def test_where_and_clip(device):
    a = rand((3, 5), p.float16, 7, -3, 3)
    x = p.from_numpy(a)
    got = compute(p.where(x > 0, x, 0.0), "where")
    if got is not None:
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, np.where(a > 0, a, np.float16(0)))
    got = compute(p.clip(x, -1, 1), "clip")
    if got is not None:
        np.testing.assert_array_equal(got, np.clip(a, -1, 1))
    got = compute(x.clip(min=0), "maximum")
    if got is not None:
        np.testing.assert_array_equal(got, np.maximum(a, 0))


def test_integer_arithmetic_is_exact_and_wraps(device):
    a = np.array([7, -7, 100, -128, 5], np.int8)
    b = np.array([2, 2, 3, 1, 0], np.int8)
    x, y = p.from_numpy(a), p.from_numpy(b)
    with np.errstate(all="ignore"):
        for t, want, op in [
            (x * y, a * b, "mul"), (x // y, np.floor_divide(a, b), "floor_divide"), (x % y, np.mod(a, b), "mod"),
            (x - y, a - b, "sub"), (-x, -a, "neg"), (x + 100, (a + np.int8(100)), "add"),
        ]:  # fmt: skip
            got = compute(t, op)
            if got is not None:
                assert got.dtype == np.int8
                np.testing.assert_array_equal(got, want)
    got = compute(x / y, "div")
    if got is not None:
        assert got.dtype == np.float32


CASTS = [p.float32, p.float16, p.bfloat16, p.int8, p.int32, p.bool_]


@pytest.mark.parametrize("src", CASTS, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", CASTS, ids=lambda d: d.name)
def test_cast_every_pair(device, src, dst):
    vals = np.array([0, 1, -1, 2.5, -2.5, 100, -100, 127.75], np.float32)
    if src == p.bool_:
        a = vals != 0
    else:
        a = vals.astype(src.numpy)
    got = compute(p.from_numpy(a).astype(dst), "cast")
    if got is not None:
        assert got.dtype == dst.numpy
        # Our rule: floats to ints truncate toward zero, then wrap (numpy agrees in range).
        want = a.astype(np.float64)
        if dst in (p.int8, p.int32):
            want = np.trunc(want).astype(np.int64).astype(dst.numpy)
        else:
            want = want.astype(np.float32).astype(dst.numpy)
        np.testing.assert_array_equal(got, want)


def test_nan_and_inf_propagate(device):
    a = np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)
    x = p.from_numpy(a)
    with np.errstate(all="ignore"):
        for t, want, op in [(x + 1, a + 1, "add"), (x * 0, a * 0, "mul"), (p.exp(x), np.exp(a), "exp"),
                            (p.maximum(x, 0), np.maximum(a, 0), "maximum"), (1 / x, 1 / a, "div")]:  # fmt: skip
            got = compute(t, op)
            if got is not None:
                np.testing.assert_array_equal(got, want)


def test_zero_size_dimensions(device):
    a = np.zeros((0, 3), np.float32)
    got = compute(p.exp(p.from_numpy(a)) - 1, "exp", "sub")
    if got is not None:
        assert got.shape == (0, 3)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=0, max_size=3),
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.sampled_from(["sub", "div", "maximum", "minimum"]),
    st.integers(0, 2**16),
)
def test_broadcasting_property(shape, ones, name, seed):
    """Any pair of broadcast-compatible shapes gives numpy's shape and values (reference)."""
    p.set_device("reference")
    try:
        bshape = [1 if o else d for d, o in zip(shape, ones)]
        a, b = rand(shape, p.float32, seed, -2, 2), rand(bshape[1:], p.float32, seed + 1, 0.5, 2)
        fn, ref = BINARY[name]
        got = fn(p.from_numpy(a), p.from_numpy(b)).numpy()
        want = ref(a.astype(np.float64), b.astype(np.float64))
        assert got.shape == want.shape
        assert_elementwise_close(got, want, p.float32)
    finally:
        p.set_device("a2")
