"""Python scalars as operands (numpy-2 weak typing), creation ops, seeded random
tensors, the reference device and detailed errors of bad arguments."""

import numpy as np
import pytest

import pypto as p
from conftest import compute


@pytest.mark.parametrize(
    "dt,scalar,want",
    [(p.float16, 2, p.float16), (p.float16, 2.5, p.float16), (p.bfloat16, True, p.bfloat16), (p.int8, 3, p.int8),
     (p.int8, 2.5, p.float32), (p.int32, 2.5, p.float32), (p.bool_, 1, p.int32), (p.bool_, 1.5, p.float32),
     (p.float32, np.float32(2), p.float32), (p.float16, np.float32(2), p.float32)],
)  # fmt: skip
def test_python_scalars_do_not_widen(dt, scalar, want):
    x = p.Tensor([3], dtype=dt)
    if dt == p.bool_:
        with pytest.raises(p.DTypeError):
            x * x  # bool arithmetic is refused...
        assert (x + scalar).dtype == want  # ...but a Python int makes it int32
        return
    assert (x * scalar).dtype == want and (scalar - x).dtype == want


def test_scalar_values(device):
    a = np.array([1.5, -2.0, 4.0], np.float16)
    x = p.from_numpy(a)
    for t, want, op in [(x * 2, a * 2, "mul"), (1 - x, 1 - a, "sub"), (x + True, a + np.float16(1), "add"), (x > 1, a > 1, "greater")]:
        got = compute(t, op)
        if got is not None:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_int_scalar_out_of_range():
    x = p.Tensor([2], dtype=p.int8)
    with pytest.raises(OverflowError):
        x + 300
    assert (x < 300).dtype == p.bool_  # comparisons compare the exact values
    p.set_device("reference")
    try:
        np.testing.assert_array_equal((x < 300).numpy(), [True, True])
    finally:
        p.set_device("a2")


def test_creation_ops():
    np.testing.assert_array_equal(p.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(p.ones([2], dtype=p.int8).numpy(), np.ones(2, np.int8))
    np.testing.assert_array_equal(p.full((2,), 7).numpy(), np.full(2, 7, np.int64))
    assert p.full((1,), 0.5).dtype == p.float32 and p.full((1,), True).dtype == p.bool_
    x = p.Tensor([2, 2], dtype=p.float16)
    assert p.zeros_like(x).dtype == p.float16 and p.ones_like(x, dtype=p.int32).dtype == p.int32
    np.testing.assert_array_equal(p.full_like(x, 3).numpy(), np.full((2, 2), 3, np.float16))
    np.testing.assert_array_equal(p.arange(5).numpy(), np.arange(5))
    np.testing.assert_allclose(p.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25))
    np.testing.assert_array_equal(p.eye(3, 4, k=1).numpy(), np.eye(3, 4, 1, dtype=np.float32))
    c = p.constant(1024)
    assert c.shape == () and c.dtype == p.int64 and int(c) == 1024
    assert p.Tensor([2, c]).shape == (2, 1024)  # the guide's hidden = p.constant(1024)
    assert p.constant([1.5, 2], dtype=p.bfloat16).dtype == p.bfloat16


def test_integers_inferred_by_creation_functions_are_numpys_default():
    # numpy and torch give int64 where an integer dtype is inferred; so does PyPTO.
    cases = [
        (p.arange(5), np.arange(5)),
        (p.arange(2, 11, 3), np.arange(2, 11, 3)),
        (p.full((2, 3), 7), np.full((2, 3), 7)),
        (p.full_like(p.arange(4), 9), np.full_like(np.arange(4), 9)),
        (p.constant(1024), np.asarray(1024)),
        (p.constant([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]])),
        (p.constant(1 << 40), np.asarray(1 << 40)),
    ]
    for got, want in cases:
        assert got.dtype == p.int64 and want.dtype == np.int64
        out = got.numpy()
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)
    assert p.randint(0, 10, (3,)).dtype == p.int64
    # given dtypes and numpy values keep theirs
    assert p.arange(5, dtype=p.int32).dtype == p.int32 and p.constant(np.int32(3)).dtype == p.int32
    assert p.arange(5.0).dtype == p.float32 and p.full((1,), 2.5).dtype == p.float32
    # and they compute: int64 arithmetic and reductions agree with numpy
    x = p.arange(10)
    np.testing.assert_array_equal((x * 3 - 4).numpy(), np.arange(10) * 3 - 4)
    assert int(p.sum(x)) == 45 and (p.sum(x).numpy().dtype == np.int64)


def test_seeded_random_is_reproducible():
    p.manual_seed(42)
    a, b, c = p.randn(3, 4).numpy(), p.rand([5], dtype=p.float16).numpy(), p.randint(0, 10, (6,)).numpy()
    p.manual_seed(42)
    np.testing.assert_array_equal(a, p.randn(3, 4).numpy())
    np.testing.assert_array_equal(b, p.rand([5], dtype=p.float16).numpy())
    np.testing.assert_array_equal(c, p.randint(0, 10, (6,)).numpy())
    assert c.dtype == np.int64 and ((0 <= c) & (c < 10)).all()
    assert ((0 <= b) & (b <= 1)).all()


def test_reference_device_and_lowered_ops():
    assert {"add", "mul", "matmul", "relu"} <= p.lowered_ops()
    assert {"softmax", "layer_norm", "mean", "gelu"} <= p.composite_ops()
    p.set_device(" Reference ")
    try:
        assert p.get_device() == "reference"
        np.testing.assert_allclose(p.softmax(p.zeros(2)).numpy(), [0.5, 0.5])
    finally:
        p.set_device("a2")
    with pytest.raises(p.PyptoValueError) as ei:
        p.set_device("gpu")
    assert any("reference" in s for s in ei.value.suggestions)


def test_bad_arguments_have_detailed_errors():
    x = p.Tensor([2, 3])
    for fn, cls, text in [
        (lambda: p.sum(x, axis=2), p.PyptoValueError, "axis 2 is out of range"),
        (lambda: x.astype("float64"), p.DTypeError, "unsupported dtype"),
        (lambda: x.reshape(4, 2), p.ShapeError, "cannot reshape"),
        (lambda: p.concat([x, p.Tensor([3, 3])], axis=1), p.ShapeError, "differ on axis 0"),
        (lambda: p.softmax(x, axis=5), p.PyptoValueError, "axis 5"),
        (lambda: p.matmul(p.Tensor([2, 3, 4]), p.Tensor([2, 3, 4])), p.ShapeError, "inner dimensions"),
    ]:
        with pytest.raises(cls) as ei:
            fn()
        info = ei.value.get_detailed_info()
        assert text in info.message, info.message
        assert info.location is not None and info.location.file == __file__
