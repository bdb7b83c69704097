"""int64, numpy's default integer: kept as a dtype of its own (data, indices, argmax
results, to_torch), computed by the chip in int32 with each run's int64 inputs checked to
fit (docs/ops.md, the int64 column). Every result is compared with numpy's int64 result."""

import inspect

import numpy as np
import pytest

import pypto as p

I32_MAX, I32_MIN = 2**31 - 1, -(2**31)
SHAPES = [(7,), (3, 5), (2, 3, 17), (1, 1)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _ints(shape, lo=-1000, hi=1000, seed=0):
    return _rng(seed).integers(lo, hi, size=shape, dtype=np.int64)


def _near_limits(shape, seed=0):
    """Values within 100 of int32's limits, both signs, and zero."""
    r = _rng(seed)
    v = np.where(r.random(shape) < 0.5, I32_MAX - r.integers(0, 100, shape), I32_MIN + r.integers(0, 100, shape))
    v.flat[0] = 0
    return v.astype(np.int64)


def _same(got: p.Tensor, want: np.ndarray):
    got = got.numpy()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_int64_data_keeps_its_dtype_and_every_value():
    big = np.array([[2**40, -(2**62)], [I32_MAX + 1, I32_MIN - 1]], np.int64)
    x = p.from_numpy(big)  # storing needs no computation: every int64 value is kept
    assert x.dtype == p.int64 and x.dtype == np.int64 and x.dtype.itemsize == 8
    _same(x, big)
    t = p.Tensor([2, 3], dtype=p.int64, data=[[1, 2, 3], [4, 5, I32_MAX]])
    _same(t, np.array([[1, 2, 3], [4, 5, I32_MAX]], np.int64))
    _same(p.arange(3, 10, 2, dtype=p.int64), np.arange(3, 10, 2))
    _same(p.zeros(4, dtype=p.int64), np.zeros(4, np.int64))
    assert p.from_numpy(np.zeros(2, np.int64)).dtype == "int64"


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_elementwise_ops_match_numpy(shape):
    a, b = _ints(shape, seed=1), _ints(shape, seed=2)
    b[b == 0] = 7
    x, y = p.from_numpy(a), p.from_numpy(b)
    _same(x + y, a + b)
    _same(x - y, a - b)
    _same(x * y, a * b)
    _same(x // y, a // b)
    _same(x % y, a % b)
    _same(-x, -a)
    _same(p.abs(x), np.abs(a))
    _same(p.maximum(x, y), np.maximum(a, b))
    _same(p.minimum(x, 3), np.minimum(a, 3))
    _same(p.where(x > y, x, y), np.where(a > b, a, b))
    _same(x == y, a == b)
    _same(x + 5, a + 5)  # a Python int takes the tensor's dtype (NEP 50)
    np.testing.assert_allclose((x / y).numpy(), (a / b).astype(np.float32), rtol=1e-6)


def test_promotion_follows_numpy_with_floats_kept_at_32_bits():
    a = np.array([1, 2, 3], np.int64)
    x = p.from_numpy(a)
    assert (x + p.from_numpy(a.astype(np.int32))).dtype == p.int64
    assert (x + p.from_numpy(a.astype(np.int8))).dtype == p.int64
    assert (x * p.from_numpy(np.ones(3, np.float16))).dtype == p.float16
    assert (x + 0.5).dtype == p.float32
    assert p.sqrt(x).dtype == p.float32
    assert p.promote_types(p.int64, p.int32) == p.int64
    _same(p.cast(p.from_numpy(np.array([1.9, -2.9], np.float32)), p.int64), np.array([1, -2], np.int64))
    _same(p.cast(x, p.int32), a.astype(np.int32))


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 17)], ids=str)
def test_values_near_the_int32_limits_are_exact_where_the_result_fits(shape):
    a, b = _near_limits(shape, seed=3), _near_limits(shape, seed=4)
    x, y = p.from_numpy(a), p.from_numpy(b)
    _same(p.maximum(x, y), np.maximum(a, b))
    _same(p.minimum(x, y), np.minimum(a, b))
    _same(p.where(x < y, x, y), np.where(a < b, a, b))
    _same(x >= y, a >= b)
    _same(p.sort(x, axis=-1), np.sort(a, axis=-1))
    _same(p.max(x, axis=-1), a.max(axis=-1))
    _same(p.transpose(x) if len(shape) > 1 else x[::-1], a.T if len(shape) > 1 else a[::-1])
    _same(p.concat([x, y], axis=0), np.concatenate([a, b], 0))
    _same(p.reshape(x, [-1])[1:], a.reshape(-1)[1:])
    above = np.maximum(a, I32_MIN + 1)  # x - 1 then fits int32 too
    _same(p.from_numpy(above) - (p.from_numpy(above) - 1), np.ones(shape, np.int64))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_index_results_are_int64_like_numpy(shape):
    a = _rng(5).standard_normal(shape).astype(np.float32)
    x = p.from_numpy(a)
    _same(p.argmax(x, axis=-1), np.argmax(a, axis=-1))
    _same(p.argmin(x, axis=0), np.argmin(a, axis=0))
    _same(p.argmax(x), np.asarray(np.argmax(a)))
    _same(p.argsort(x, axis=-1), np.argsort(a, axis=-1, kind="stable"))
    _same(p.argsort(x, axis=0), np.argsort(a, axis=0, kind="stable"))  # moved to the last axis on the chip
    k = min(2, shape[-1])
    _same(p.topk(x, k).indices, np.argsort(-a, axis=-1, kind="stable")[..., :k])
    for got, want in zip(p.nonzero(x > 0), np.nonzero(a > 0)):
        _same(got, want)
    ints = p.from_numpy(_ints(shape, seed=6))
    _same(p.argmax(ints, axis=-1), np.argmax(_ints(shape, seed=6), axis=-1))


def test_indices_of_take_gather_and_scatter_may_be_int64():
    table = _rng(7).standard_normal((10, 4)).astype(np.float32)
    w = p.from_numpy(table)
    idx = np.array([[3, -1, 9], [0, 0, -10]], np.int64)
    np.testing.assert_array_equal(p.take(w, p.from_numpy(idx), axis=0).numpy(), np.take(table, idx, axis=0))
    np.testing.assert_array_equal(w[np.array([7, 2], np.int64)].numpy(), table[[7, 2]])
    np.testing.assert_array_equal(w[[1, 4]].numpy(), table[[1, 4]])
    along = np.array([[0, 3], [1, 1], [2, 0]] * 3 + [[3, 2]], np.int64)
    np.testing.assert_array_equal(
        p.take_along_axis(w, p.from_numpy(along), axis=1).numpy(), np.take_along_axis(table, along, axis=1)
    )
    sel = np.array([3, 1], np.int64)
    np.testing.assert_array_equal(p.index_select(w, 1, p.from_numpy(sel)).numpy(), table[:, sel])
    got = p.scatter(p.zeros(6, dtype=p.float32), 0, p.from_numpy(np.array([4, 1], np.int64)), p.from_numpy(np.array([2.0, 5.0], np.float32)))
    want = np.zeros(6, np.float32)
    want[[4, 1]] = [2.0, 5.0]
    np.testing.assert_array_equal(got.numpy(), want)
    # an argmax result indexes directly, as in numpy
    np.testing.assert_array_equal(p.take(w, p.argmax(w, axis=0), axis=0).numpy(), table[np.argmax(table, axis=0)])


def test_reductions_of_int64_give_int64():
    a = _ints((4, 9), seed=8)
    x = p.from_numpy(a)
    _same(p.sum(x, axis=1), a.sum(axis=1))
    _same(p.cumsum(x, axis=0), np.cumsum(a, axis=0))
    _same(p.min(x), np.asarray(a.min()))


def test_an_input_out_of_int32_range_names_the_op_value_line_and_fix():
    x = p.from_numpy(np.array([1, 2**40, 3], np.int64))
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(p.PyptoValueError) as e:
        (x * 2).numpy()
    msg = str(e.value)
    assert "mul" in msg and str(2**40) in msg and "does not fit int32" in msg
    info = e.value.get_detailed_info()
    assert info.location is not None and info.location.file == __file__ and info.location.line == line
    assert any("float32" in s and "int32" in s for s in info.suggestions)
    with pytest.raises(p.PyptoValueError, match=str(I32_MIN - 1)):
        p.argmax(p.from_numpy(np.array([0, I32_MIN - 1], np.int64))).numpy()
    # the fix the message suggests: an input that is only cast converts on the host, so
    # values past int32 reach float32 rounded once, as numpy rounds them
    big = np.array([2**40 + 1, -(2**62), 5], np.int64)
    _same(p.from_numpy(big).astype(p.float32) * 2, big.astype(np.float32) * 2)
    _same(p.from_numpy(big).astype(p.int32), big.astype(np.int32))  # numpy's wrap


def test_compiled_programs_take_and_return_int64():
    def f(ids, table):
        return p.argmax(p.take(table, ids, axis=0), axis=-1) + ids

    fn = p.compile(f, dynamic=False)
    ids = np.array([2, 0, 3], np.int64)
    table = _rng(9).standard_normal((4, 6)).astype(np.float32)
    got = fn(p.from_numpy(ids), p.from_numpy(table))
    _same(got, np.argmax(table[ids], axis=-1) + ids)
    with pytest.raises(p.PyptoValueError, match="does not fit int32"):
        fn(p.from_numpy(np.array([2, 2**33, 0], np.int64)), p.from_numpy(table))


def test_torch_and_dlpack_share_int64_without_narrowing():
    torch = pytest.importorskip("torch", reason="the interop tests compare with torch: pip install pypto[torch]")
    t = torch.tensor([5, -(2**40), I32_MAX, 0])
    x = p.from_torch(t)
    assert x.dtype == p.int64
    back = x.to_torch()
    assert back.dtype == torch.int64 and back.data_ptr() == t.data_ptr() and torch.equal(back, t)  # no copy
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    y = p.from_dlpack(a)
    assert y.dtype == p.int64 and np.from_dlpack(y).ctypes.data == a.ctypes.data
    r = p.argmax(p.from_torch(torch.randn(3, 5)), axis=1).to_torch()
    assert r.dtype == torch.int64


def test_profiled_runs_narrow_and_widen_too():
    fn = p.compile(lambda x: x * 3 + 1, dynamic=False, profile_config=p.ProfileConfig(enable_profiling=True))
    a = np.array([4, -5, I32_MAX // 3], np.int64)
    _same(fn(p.from_numpy(a)), a * 3 + 1)
    assert fn.get_profile_result() is not None
    with pytest.raises(p.PyptoValueError, match="does not fit int32"):
        fn(p.from_numpy(np.array([2**35], np.int64)))
