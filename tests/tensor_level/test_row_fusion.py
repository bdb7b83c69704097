"""Softmax, log_softmax and the norms (and the same math written by hand) compile to one
row kernel on a chip, with the reference's values; rows too wide for the chip's UB run
in passes over chunks of them, or unfused when no chunk divides them."""

import numpy as np
import pytest

import pypto as p
from conftest import rand

# The tolerances of the unfused programs (tests/tensor_level/test_reductions_shapes.py).
RTOL = {p.float32: 1e-5, p.float16: 2e-3, p.bfloat16: 2e-2}


@pytest.fixture(params=["tiny", "a2"])
def chip(request):
    prev = p.get_device()
    p.set_device(request.param)
    yield request.param
    p.set_device(prev)


def _reference(name, a, w, b):
    a64 = a.astype(np.float64)
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    e = np.exp(a64 - a64.max(-1, keepdims=True))
    m, v = a64.mean(-1, keepdims=True), a64.var(-1, keepdims=True)
    return {
        "softmax": e / e.sum(-1, keepdims=True),
        "hand_softmax": e / e.sum(-1, keepdims=True),
        "log_softmax": a64 - a64.max(-1, keepdims=True) - np.log(e.sum(-1, keepdims=True)),
        "layer_norm": (a64 - m) / np.sqrt(v + 1e-5),
        "layer_norm_affine": (a64 - m) / np.sqrt(v + 1e-5) * w64 + b64,
        "rms_norm": a64 / np.sqrt((a64**2).mean(-1, keepdims=True) + 1e-6) * w64,
    }[name]


def _hand_softmax(x):
    e = p.exp(x - p.max(x, axis=-1, keepdims=True))
    return e / p.sum(e, axis=-1, keepdims=True)


PROGRAMS = {
    "softmax": lambda x, w, b: p.softmax(x, axis=-1),
    "hand_softmax": lambda x, w, b: _hand_softmax(x),
    "log_softmax": lambda x, w, b: p.log_softmax(x, axis=-1),
    "layer_norm": lambda x, w, b: p.layer_norm(x),
    "layer_norm_affine": lambda x, w, b: p.layer_norm(x, weight=w, bias=b),
    "rms_norm": lambda x, w, b: p.rms_norm(x, weight=w),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dt", [p.float16, p.float32])
def test_one_kernel_with_reference_values(chip, name, dt):
    rng = np.random.default_rng(len(name))
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(2, 300)))
    a = rand(shape, dt, 1, -4, 4)
    w, b = rand(shape[-1:], dt, 2), rand(shape[-1:], dt, 3)
    f = p.compile(PROGRAMS[name])
    got = f.run(a, w, b).numpy()
    assert [t["Name"].rsplit("_", 1)[0] for t in f.stats()["detail"]["Tasks"]] == ["fused_rows"]
    # Hand-written softmax computes in the input's dtype; the composites in float32.
    tol = 4 * RTOL[dt] if name != "hand_softmax" else 8 * RTOL[dt]
    np.testing.assert_allclose(got.astype(np.float64), _reference(name, a, w, b), rtol=tol, atol=tol)


@pytest.mark.parametrize("cols, fused", [(6000, True), (6007, False)])
def test_rows_wider_than_the_ub(cols, fused):
    # tiny's UB holds no row of 6000 fp16 softmax: it runs in passes over chunks of the
    # row; a prime length, which no chunk divides, stays unfused.
    prev = p.get_device()
    p.set_device("tiny")
    try:
        a = rand((3, cols), p.float16, 4, -4, 4)
        f = p.compile(lambda x: p.softmax(x, axis=-1))
        got = f.run(a).numpy()
        names = [t["Name"].rsplit("_", 1)[0] for t in f.stats()["detail"]["Tasks"]]
        if fused:
            assert names == ["fused_rows"]
        else:
            assert "fused_rows" not in names and len(names) > 1
        np.testing.assert_allclose(got.astype(np.float64), _reference("softmax", a, a, a), rtol=4 * RTOL[p.float16], atol=4 * RTOL[p.float16])
    finally:
        p.set_device(prev)
