"""Every elementwise and reduction op, for every dtype it accepts, gives the same values
on a simulated chip as on the reference interpreter (which the other tests check
against numpy). Ops that round once must agree exactly; ops evaluated from other
instructions (tanh, erf, sin, cos, pow on floats) or accumulated in float32 (sum, prod,
mean, var, std, softmax, the norms) to a few float32 ulps plus the result's rounding.
See docs/lowering.md."""

import ml_dtypes
import numpy as np
import pytest

import pypto as p

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "int8": np.int8, "int32": np.int32, "bool": np.bool_}

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "relu", "floor", "ceil", "sin", "cos", "tanh", "erf",
         "sigmoid", "silu", "gelu", "logical_not", "isnan", "isfinite",
         "sum", "prod", "max", "min", "mean", "argmax", "argmin", "cumsum", "softmax", "sort", "argsort"]  # fmt: skip
BINARY = ["add", "sub", "mul", "div", "floor_divide", "mod", "pow", "maximum", "minimum", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"]  # fmt: skip
APPROXIMATE = {"tanh", "erf", "sin", "cos", "pow", "sigmoid", "silu", "gelu", "sum", "prod", "mean", "cumsum", "softmax"}
ULP = {np.dtype(np.float32): 2.0**-23, np.dtype(np.float16): 2.0**-10, np.dtype(ml_dtypes.bfloat16): 2.0**-7}


def values(shape, dt, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind in "iub":
        return rng.integers(-4, 5, size=shape).astype(dt)
    return (np.round(rng.uniform(-3, 3, size=shape) * 8) / 8).astype(dt)  # eighths: exact in every float dtype, ties


def run_on(device, fn, arrays):
    prev = p.get_device()
    p.set_device(device)
    try:
        return fn(*[p.from_numpy(a) for a in arrays]).numpy()
    finally:
        p.set_device(prev)


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_chip_matches_reference(name, dt):
    fn = getattr(p, name)
    arrays = [values((5, 33), DTYPES[dt], 1)] + ([values((33,), DTYPES[dt], 2)] if name in BINARY else [])
    try:
        want = run_on("reference", fn, arrays)
    except (p.PyptoError, TypeError):
        pytest.skip(f"{name} does not take {dt}")  # refused by type rules or a data-dependent error
    got = run_on("tiny", fn, arrays)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name not in APPROXIMATE or want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    w, g = want.astype(np.float64), got.astype(np.float64)
    rtol = ULP[want.dtype] + 1e-5
    np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-4)
