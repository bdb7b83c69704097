"""Reductions, statistics, shape ops, indexing, gathers, sorting, norms and matmul
against numpy, on the reference interpreter and on the simulated chip (see
conftest.compute). Reductions are computed exactly and rounded once, so they are
compared with a relative tolerance of a few ulps of the result dtype."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as p
from conftest import FLOAT_DTYPES, compute, rand

RTOL = {p.float32: 1e-5, p.float16: 2e-3, p.bfloat16: 2e-2}


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std"])
def test_reductions(device, name, axis, dt):
    a = rand((3, 4, 5), dt, 1, 0.5, 1.5)
    for keepdims in (False, True):
        got = compute(getattr(p, name)(p.from_numpy(a), axis=axis, keepdims=keepdims), name)
        if got is None:
            return
        want = getattr(np, name)(a.astype(np.float64), axis=axis, keepdims=keepdims)
        assert got.shape == want.shape and got.dtype == dt.numpy
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL[dt] * 4, atol=RTOL[dt])


def test_reduction_dtypes_and_aliases(device):
    a = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    x = p.from_numpy(a)
    assert p.sum(x).dtype == p.int32 and p.mean(x).dtype == p.float32 and p.max(x).dtype == p.int8
    assert p.reduce_mean is p.mean and p.reduce_var is p.var and p.reduce_sum is p.sum and p.reduce_max is p.max
    for t, want, op in [(p.sum(x, axis=1), a.sum(1), "sum"), (p.var(x, ddof=1), a.var(ddof=1), "var"),
                        (x.argmax(axis=1), a.argmax(1), "argmax"), (p.argmin(x), a.argmin(), "argmin"),
                        (p.sum(x, axis=()), a, "sum"), (p.cumsum(x, axis=1), a.cumsum(1), "cumsum")]:  # fmt: skip
        got = compute(t, op)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_reductions_propagate_nan_and_handle_empty(device):
    a = np.array([[1, np.nan], [3, 2]], np.float32)
    got = compute(p.max(p.from_numpy(a), axis=1), "max")
    if got is not None:
        np.testing.assert_array_equal(got, [np.nan, 3])
    got = compute(p.sum(p.zeros(0, 3), axis=0), "sum")
    if got is not None:
        np.testing.assert_array_equal(got, np.zeros(3))
    with pytest.raises(p.PyptoValueError) as ei:
        p.max(p.zeros(0, 3), axis=0)
    assert "no identity" in str(ei.value)


def test_shape_ops(device):
    a = rand((2, 3, 4), p.float32, 2)
    x = p.from_numpy(a)
    cases = [
        (x.reshape(4, -1), a.reshape(4, -1), "reshape"), (x.transpose(), a.T, "transpose"),
        (x.permute(1, 0, 2), a.transpose(1, 0, 2), "transpose"), (p.broadcast_to(x[:, :1], (2, 3, 4)), np.broadcast_to(a[:, :1], (2, 3, 4)), "broadcast_to"),
        (x[:, None, :1].squeeze(), a[:, None, :1].squeeze(), "squeeze"), (p.unsqueeze(x, -1), a[..., None], "unsqueeze"),
        (p.concat([x, x[:, :1]], axis=1), np.concatenate([a, a[:, :1]], 1), "concat"), (p.stack([x, x], axis=1), np.stack([a, a], 1), "stack"),
        (p.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=7), np.pad(a, ((0, 0), (1, 2), (0, 1)), constant_values=7), "pad"),
        (x.flatten(1), a.reshape(2, -1), "reshape"), (x.expand(2, -1, -1), a, "broadcast_to"), (x.mT, np.swapaxes(a, -1, -2), "transpose"),
    ]  # fmt: skip
    for t, want, op in cases:
        got = compute(t, op)
        if got is not None:
            np.testing.assert_array_equal(got, want)
    parts = p.split(x, [1, 3], axis=1)
    assert [q.shape for q in parts] == [(2, 1, 4), (2, 2, 4), (2, 0, 4)]
    assert [q.shape for q in p.unstack(x, axis=2)] == [(2, 3)] * 4


@pytest.mark.parametrize(
    "key",
    [1, -1, (slice(None), 2), (Ellipsis, slice(None, None, -2)), (None, 0, slice(1, 3)), (slice(5, 1, -1), Ellipsis, None),
     ([2, 0, 2],), (slice(None), np.array([[1, 0], [2, 2]])), (0, 1, 2), (slice(0, 0),)],
    ids=str,
)  # fmt: skip
def test_getitem_matches_numpy(device, key):
    a = rand((3, 4, 5), p.float32, 3)
    got = compute(p.from_numpy(a)[key], "slice", "reshape", "index_select")
    if got is not None:
        np.testing.assert_array_equal(got, a[key])


def test_getitem_errors():
    x = p.zeros(2, 3)
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0]


def test_gathers(device):
    a = rand((3, 5), p.float32, 4)
    idx = np.array([[4, 0], [1, 1], [-1, 2]], np.int32)
    x = p.from_numpy(a)
    for t, want, op in [
        (p.take_along_axis(x, p.from_numpy(idx), axis=1), np.take_along_axis(a, idx % 5, 1), "take_along_axis"),
        (p.index_select(x, 1, p.from_numpy(np.array([3, 3, 0], np.int32))), a[:, [3, 3, 0]], "index_select"),
        (p.gather(x, 0, p.from_numpy(np.array([[2, 0]], np.int32))), np.take_along_axis(a[:, :2], np.array([[2, 0]]), 0), "take_along_axis"),
        (p.take(x, p.from_numpy(np.array([[1, 2]], np.int32)), axis=0), np.take(a, [[1, 2]], axis=0), "index_select"),
    ]:
        got = compute(t, op)
        if got is not None:
            np.testing.assert_array_equal(got, want)
    p.set_device("reference")
    with pytest.raises(p.PyptoValueError, match="index 5 is out of range"):
        p.index_select(x, 1, p.from_numpy(np.array([5], np.int32))).numpy()


def test_sort_argsort_topk(device):
    a = np.array([[3, 1, np.nan, 1, 7], [0, -1, 2, 2, 5]], np.float32)
    x = p.from_numpy(a)
    got = compute(p.sort(x), "sort")
    if got is not None:
        np.testing.assert_array_equal(got, np.sort(a))
    got = compute(p.argsort(x, axis=1), "argsort")
    if got is not None:
        np.testing.assert_array_equal(got, np.argsort(a, kind="stable"))
    v, i = p.topk(x, 2)
    got_v, got_i = compute(v, "topk_values"), compute(i, "topk_indices")
    if got_v is not None and got_i is not None:
        np.testing.assert_array_equal(got_v, [[np.nan, 7], [5, 2]])
        np.testing.assert_array_equal(got_i, [[2, 4], [4, 2]])
    with pytest.raises(p.PyptoValueError) as ei:
        p.topk(x, 6)
    info = ei.value.get_detailed_info()
    assert "k=6" in info.message and info.causes and info.suggestions and info.location.line > 0


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_softmax_and_norms(device, dt):
    a = rand((4, 8), dt, 5, -3, 3)
    a64 = a.astype(np.float64)
    w, b = rand((8,), dt, 6), rand((8,), dt, 7)
    e = np.exp(a64 - a64.max(-1, keepdims=True))
    m, v = a64.mean(-1, keepdims=True), a64.var(-1, keepdims=True)
    x = p.from_numpy(a)
    cases = [
        (p.softmax(x, axis=-1), e / e.sum(-1, keepdims=True), "softmax"),
        (p.log_softmax(x, dim=0), a64 - a64.max(0) - np.log(np.exp(a64 - a64.max(0)).sum(0)), "log_softmax"),
        (p.layer_norm(x, 8, p.from_numpy(w), p.from_numpy(b)), (a64 - m) / np.sqrt(v + 1e-5) * w + b, "layer_norm"),
        (p.rms_norm(x, weight=p.from_numpy(w)), a64 / np.sqrt((a64**2).mean(-1, keepdims=True) + 1e-6) * w, "rms_norm"),
    ]
    for t, want, op in cases:
        got = compute(t, op)
        if got is not None:
            assert got.dtype == dt.numpy
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=4 * RTOL[dt], atol=4 * RTOL[dt])


def test_batched_matmul_and_linear(device):
    a, b = rand((2, 1, 3, 4), p.float32, 8), rand((5, 4, 2), p.float32, 9)
    got = compute(p.matmul(p.from_numpy(a), p.from_numpy(b)), "batch_matmul")
    if got is not None:
        np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-6)
    v = rand((4,), p.float32, 10)
    for t, want in [(p.from_numpy(v) @ p.from_numpy(b[0]), v @ b[0]), (p.from_numpy(b[0].T.copy()) @ p.from_numpy(v), b[0].T @ v)]:
        got = compute(t, "matmul", "reshape")
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5)
    x, w, bias = rand((2, 3, 4), p.float32, 11), rand((6, 4), p.float32, 12), rand((6,), p.float32, 13)
    got = compute(p.linear(p.from_numpy(x), p.from_numpy(w), p.from_numpy(bias)), "linear")
    if got is not None:
        np.testing.assert_allclose(got, x @ w.T + bias, rtol=1e-5, atol=1e-6)
    p.manual_seed(3)
    y = p.linear(p.from_numpy(x), 4, 6)
    assert y.shape == (2, 3, 6) and y.dtype == p.float32
    with pytest.raises(p.ShapeError) as ei:
        p.linear(p.from_numpy(x), p.from_numpy(w.T.copy()))
    assert any("weight.T" in s for s in ei.value.suggestions)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_reduction_and_reshape_property(shape, data):
    """Sums over any axes and round trips through reshape/transpose agree with numpy."""
    p.set_device("reference")
    try:
        a = rand(shape, p.float32, 1)
        axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
        np.testing.assert_allclose(p.sum(p.from_numpy(a), axis=axes).numpy(), a.astype(np.float64).sum(axes), rtol=1e-5, atol=1e-6)
        perm = data.draw(st.permutations(range(len(shape))))
        np.testing.assert_array_equal(p.from_numpy(a).transpose(perm).reshape(-1).numpy(), a.transpose(perm).reshape(-1))
    finally:
        p.set_device("a2")
