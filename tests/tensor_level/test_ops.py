"""add / mul / relu / matmul on the simulated NPU against numpy, across dtypes and
shapes, including non-contiguous inputs. Tolerances: see conftest.py."""

import numpy as np
import pytest

import pypto as p
from conftest import FLOAT_DTYPES, assert_elementwise_close, assert_matmul_close, rand

SHAPES = [(1, 1), (17, 33), (300, 520)]


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_add_mul_relu(dt, shape):
    a, b = rand(shape, dt, seed=1), rand(shape, dt, seed=2)
    x, y = p.from_numpy(a), p.from_numpy(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_elementwise_close(p.add(x, y).numpy(), a64 + b64, dt)
    assert_elementwise_close((x + y).numpy(), a64 + b64, dt)
    assert_elementwise_close(p.mul(x, y).numpy(), a64 * b64, dt)
    assert_elementwise_close((x * y).numpy(), a64 * b64, dt)
    assert_elementwise_close(p.relu(x).numpy(), np.maximum(a64, 0), dt)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_chain_with_broadcasting(dt):
    a, bias, s = rand((17, 33), dt, 3), rand((33,), dt, 4), rand((17, 1), dt, 5)
    y = p.relu(p.from_numpy(a) + p.from_numpy(bias)) * p.from_numpy(s)
    assert y.shape == (17, 33) and y.dtype == dt
    # Each op rounds to dt, so the reference rounds after each op too.
    nd = dt.numpy
    t = (a.astype(np.float64) + bias.astype(np.float64)).astype(nd)
    t = np.maximum(t.astype(np.float64), 0).astype(nd)
    assert_elementwise_close(y.numpy(), t.astype(np.float64) * s.astype(np.float64), dt)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "m,k,n", [(1, 1, 1), (17, 33, 65), (300, 520, 130)], ids=["1x1", "17x33@33x65", "300x520@520x130"]
)
def test_matmul(dt, m, k, n):
    a, b = rand((m, k), dt, 6), rand((k, n), dt, 7)
    got = p.matmul(p.from_numpy(a), p.from_numpy(b)).numpy()
    assert got.shape == (m, n) and got.dtype == dt.numpy
    assert_matmul_close(got, a, b)
    assert_matmul_close((p.from_numpy(a) @ p.from_numpy(b)).numpy(), a, b)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 65), (64, 256, 128)], ids=["1x1", "17x33", "64x256"])
def test_matmul_transpose_b(dt, m, k, n):
    a, w = rand((m, k), dt, 8), rand((n, k), dt, 9)
    got = p.matmul(p.from_numpy(a), p.from_numpy(w), transpose_b=True).numpy()
    assert got.shape == (m, n)
    assert_matmul_close(got, a, w, transpose_b=True)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_non_contiguous_operands(dt):
    base = rand((66, 80), dt, 10)
    at = base[:33, :17].T  # transposed view, 17x33
    bs = base[::2, 1::1][:33, :65]  # row-strided view, 33x65
    assert not at.flags.c_contiguous and not bs.flags.c_contiguous
    got = (p.from_numpy(at) @ p.from_numpy(bs)).numpy()
    assert_matmul_close(got, np.ascontiguousarray(at), np.ascontiguousarray(bs))

    neg = base[::-1, ::-3][:17, :20]
    pos = base[10:27, 40:60]
    assert_elementwise_close(
        (p.from_numpy(neg) + p.from_numpy(pos)).numpy(), neg.astype(np.float64) + pos.astype(np.float64), dt
    )


def test_numpy_operands_and_reflected_operators():
    a = rand((4, 5), p.float16, 11)
    b = rand((4, 5), p.float16, 12)
    w = rand((5, 3), p.float16, 13)
    x = p.from_numpy(a)
    for got in (x + b, b + x):
        assert isinstance(got, p.Tensor)
        assert_elementwise_close(got.numpy(), a.astype(np.float64) + b.astype(np.float64), p.float16)
    assert isinstance(b * x, p.Tensor)
    r = a @ p.from_numpy(w)  # ndarray @ Tensor -> Tensor.__rmatmul__
    assert isinstance(r, p.Tensor)
    assert_matmul_close(r.numpy(), a, w)
    assert_matmul_close(x.matmul(w).numpy(), a, w)


def test_non_numeric_operands_are_a_type_error():
    x = p.Tensor([2, 2])
    for bad in (lambda: x + "a", lambda: x @ 2, lambda: p.relu([1, 2]), lambda: x * None):
        with pytest.raises(TypeError):
            bad()


def test_integer_and_mixed_dtypes():
    a = np.array([[1, -2], [3, -4]], np.int32)
    got = p.relu(p.from_numpy(a) * p.from_numpy(a)).numpy()
    np.testing.assert_array_equal(got, a * a)
    assert got.dtype == np.int32
    # float16 + bfloat16 promotes to float32 (neither holds the other).
    h = p.from_numpy(np.ones(3, np.float16))
    bf = p.Tensor([3], dtype=p.bfloat16, data=2)
    assert (h + bf).dtype == p.float32
    np.testing.assert_array_equal((h + bf).numpy(), np.full(3, 3, np.float32))
