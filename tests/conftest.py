"""Shared helpers for the pytest suite (public API only).

Tolerances, used by every numeric test:

- Elementwise add / mul / relu are computed exactly and rounded once to the result
  dtype, so they must match numpy's result (computed in float64 from the same inputs,
  then rounded to the dtype) to within one unit in the last place of the result dtype:
  ``|got - ref| <= ulp(dtype) * |ref|`` with ulp 2^-23 (float32), 2^-10 (float16),
  2^-7 (bfloat16), plus the dtype's smallest normal as an absolute floor.
- matmul accumulates in float32 and rounds once to the output dtype, so with
  ``ref = a @ b`` in float64 and ``mag = |a| @ |b|``:
  ``|got - ref| <= ulp(out) * |ref| + 2 * k * 2^-24 * mag`` (rounding of the result
  plus the worst-case float32 summation error over k products).
"""

import os

# Every hit of the device's timing cache re-runs the timing loop and fails the task
# if the times differ (docs/device.md, "Timing cache"): a timing input the cache's key
# missed would show in any test that runs a task twice. Set before pypto loads.
os.environ.setdefault("PYPTO_CHECK_TIMING_CACHE", "1")

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import pytest  # noqa: E402

import pypto as p  # noqa: E402
from browser_support import browser  # noqa: F401  (the fixture of the tests that open pages)

ULP = {
    np.dtype(np.float32): 2.0**-23,
    np.dtype(np.float16): 2.0**-10,
    np.dtype(ml_dtypes.bfloat16): 2.0**-7,
}
TINY = {
    np.dtype(np.float32): float(np.finfo(np.float32).tiny),
    np.dtype(np.float16): float(np.finfo(np.float16).tiny),
    np.dtype(ml_dtypes.bfloat16): float(ml_dtypes.finfo(ml_dtypes.bfloat16).tiny),
}

FLOAT_DTYPES = [
    pytest.param(p.float32, id="float32"),
    pytest.param(p.float16, id="float16"),
    pytest.param(p.bfloat16, id="bfloat16"),
]


def rand(shape, dtype, seed=0, lo=-1.0, hi=1.0):
    """Random values in [lo, hi), already representable in dtype."""
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(p.dtypes.as_dtype(dtype).numpy)


def assert_elementwise_close(got, ref64, dtype):
    """got: the device result; ref64: the exact result in float64."""
    nd = np.dtype(p.dtypes.as_dtype(dtype).numpy)
    assert got.dtype == nd, (got.dtype, nd)
    g = got.astype(np.float64)
    bound = ULP[nd] * np.abs(ref64) + TINY[nd]
    err = np.abs(g - ref64)
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} elements off; worst error {err.max()} (bound there {bound.flat[err.argmax()]})"


def assert_matmul_close(got, a, b, transpose_b=False):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if transpose_b:
        b64 = b64.T
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    k = a64.shape[1]
    nd = got.dtype
    bound = ULP[nd] * np.abs(ref) + 2 * k * 2.0**-24 * mag + TINY[nd]
    err = np.abs(got.astype(np.float64) - ref)
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} elements off; worst error {err.max()}"


# --- devices: every value test runs on the reference interpreter and on a simulated chip ---

DEVICES = ["reference", "tiny"]


@pytest.fixture(params=DEVICES)
def device(request):
    """Runs the test with p.set_device(param), restoring the previous device after."""
    prev = p.get_device()
    p.set_device(request.param)
    yield request.param
    p.set_device(prev)


def _all_ops():
    import json

    return frozenset(json.loads(p._lib.call_string(p._lib.lib.pypto_op_names_json)))


def compute(t, *ops):
    """t.numpy() on the current device. On a chip, while some of ops (the ops t's graph
    uses) has no device lowering, realising must raise p.CompileError naming an op
    without one; then None is returned and the caller checks no values. Once every
    lowering lands, the same test compares the device's values."""
    if p.get_device() == "reference" or set(ops) <= p.lowered_ops():
        return t.numpy()
    try:
        return t.numpy()
    except p.CompileError as e:
        unlowered = _all_ops() - p.lowered_ops()
        assert any(op in e.message for op in unlowered), e.message
        assert e.get_detailed_info().location is not None
        return None
