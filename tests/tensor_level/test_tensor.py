"""p.Tensor construction, host round trips (including non-contiguous numpy views),
dtypes and the Python protocol methods. No compilation involved except where noted."""

import os
import pickle
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as p

ALL_DTYPES = [p.float32, p.float16, p.bfloat16, p.int8, p.int32, p.bool_]


def test_tensor_without_data_is_zero_filled():
    t = p.Tensor([2, 3], dtype=p.float16)
    assert t.shape == (2, 3) and t.dtype == p.float16 and t.ndim == 2 and t.size == 6
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 3), np.float16))
    assert t.numpy().dtype == np.float16


def test_tensor_default_dtype_is_float32():
    assert p.Tensor([4]).dtype == p.float32


def test_tensor_with_data_converts_and_broadcasts():
    t = p.Tensor([2, 2], dtype=p.int32, data=[[1, 2], [3, 4]])
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    assert t.numpy().dtype == np.int32
    filled = p.Tensor([2, 3], dtype=p.bfloat16, data=1.5)
    np.testing.assert_array_equal(filled.numpy().astype(np.float32), np.full((2, 3), 1.5, np.float32))
    row = p.Tensor([3, 2], data=np.array([7, 8], np.float32))
    np.testing.assert_array_equal(row.numpy(), [[7, 8]] * 3)
    with pytest.raises(p.ShapeError):
        p.Tensor([2, 2], data=[1, 2, 3])


def test_tensor_rejects_bad_layouts_and_shapes():
    with pytest.raises(p.ShapeError, match="NCHW needs a 4-D shape"):
        p.Tensor([2], layout="NCHW")
    with pytest.raises(ValueError, match="unknown layout"):
        p.Tensor([2], layout="NWHC")
    with pytest.raises(p.ShapeError):
        p.Tensor([2, -1])
    with pytest.raises(TypeError):
        p.Tensor("abc")


def test_import_leaves_heavy_modules_unloaded():
    # A fresh process: importing pypto leaves ml_dtypes (most of a second) and
    # numpy.random unloaded; the first use of p.bfloat16 as a numpy dtype loads
    # ml_dtypes and round trips values, the first random tensor numpy.random.
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        import pypto as p
        assert "ml_dtypes" not in sys.modules and "numpy.random" not in sys.modules
        assert p.randn(2, 3).shape == (2, 3) and "numpy.random" in sys.modules
        assert p.bfloat16.itemsize == 2 and p.bfloat16 == "bf16"
        assert "ml_dtypes" not in sys.modules
        a = np.array([1.0, -2.5, 3.140625], dtype=p.bfloat16.numpy)
        import ml_dtypes
        assert a.dtype == ml_dtypes.bfloat16
        out = (p.from_numpy(a) + p.from_numpy(a)).numpy()
        assert out.dtype == ml_dtypes.bfloat16 and out.tolist() == [2.0, -5.0, 6.28125]
        assert p.dtypes.as_dtype(a.dtype.newbyteorder(">")) is p.bfloat16
        print("ok")
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_from_numpy_round_trip_is_bit_exact(dt):
    rng = np.random.default_rng(1)
    if dt == p.bool_:
        a = rng.random((5, 7)) > 0.5
    elif dt in (p.int8, p.int32):
        a = rng.integers(-100, 100, size=(5, 7)).astype(dt.numpy)
    else:
        a = rng.standard_normal((5, 7)).astype(np.float32).astype(dt.numpy)
    t = p.from_numpy(a)
    assert t.dtype == dt and t.shape == (5, 7)
    out = t.numpy()
    assert out.dtype == a.dtype
    np.testing.assert_array_equal(out.view(np.uint8), a.view(np.uint8))


def test_bfloat16_is_ml_dtypes():
    a = np.array([1.0, -2.5, 3.140625], dtype=ml_dtypes.bfloat16)
    t = p.from_numpy(a)
    assert t.dtype == p.bfloat16
    assert t.numpy().dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.T,
        lambda a: a[::2, 1::3],
        lambda a: a[::-1, ::-2],
        lambda a: a[3:4, 5:6],
        lambda a: np.broadcast_to(a[0], (4, a.shape[1])),
        lambda a: a.reshape(6, 2, 10).transpose(2, 0, 1)[:, ::-1],
        lambda a: a[:, 0],
        lambda a: a[2, 3],
    ],
    ids=["transposed", "sliced", "negative", "1x1", "broadcast", "3d", "column", "scalar"],
)
def test_from_numpy_non_contiguous(view):
    base = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
    v = view(base)
    t = p.from_numpy(v)
    assert t.shape == v.shape
    np.testing.assert_array_equal(t.numpy(), v)
    np.testing.assert_array_equal(np.asarray(t), v)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), v.astype(np.float64))


def test_from_numpy_big_endian_and_empty():
    be = np.arange(6, dtype=">f4").reshape(2, 3)
    np.testing.assert_array_equal(p.from_numpy(be).numpy(), be.astype(np.float32))
    e = p.from_numpy(np.zeros((0, 3), np.float16))
    assert e.shape == (0, 3)
    assert e.numpy().shape == (0, 3)


def test_unsupported_dtypes_raise_dtype_error():
    with pytest.raises(p.DTypeError) as ei:
        p.from_numpy(np.zeros(3))  # float64
    assert "float64" in str(ei.value)
    assert any("astype" in s for s in ei.value.get_detailed_info().suggestions)
    with pytest.raises(p.DTypeError):
        p.Tensor([2], dtype="complex64")


def test_dtype_objects():
    assert p.float32.numpy == np.float32 and p.bfloat16.numpy == ml_dtypes.bfloat16
    assert p.float16 == np.float16 and p.float16 == "float16" and p.float16 != p.bfloat16
    assert p.bool_.itemsize == 1 and p.int32.itemsize == 4
    assert repr(p.bool_) == "pypto.bool_" and str(p.bfloat16) == "bfloat16"
    assert pickle.loads(pickle.dumps(p.bfloat16)) == p.bfloat16
    assert len({p.float32, p.dtypes.as_dtype(np.float32)}) == 1


def test_scalar_conversions_and_repr():
    one = p.Tensor([1, 1], data=2.5)
    assert float(one) == 2.5 and int(one) == 2 and bool(one)
    assert not bool(p.Tensor([1]))
    assert [10, 20, 30][p.Tensor([1], dtype=p.int32, data=1)] == 20
    with pytest.raises(TypeError):
        [1, 2][one]
    with pytest.raises(p.PyptoValueError):
        float(p.Tensor([2]))
    r = repr(p.Tensor([2], data=[1.5, -2]))
    assert "1.5" in r and "-2" in r and "float32" in r
    assert "1.5" in str(p.Tensor([2], data=[1.5, -2]))
    assert len(p.Tensor([3, 4])) == 3


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=4),
    dt=st.sampled_from(ALL_DTYPES),
    data=st.data(),
)
def test_round_trip_of_arbitrary_strided_views(shape, dt, data):
    """Any view (random steps, flips, transposition) of a random array survives
    from_numpy -> numpy unchanged."""
    rng = np.random.default_rng(0)
    big = [2 * d + 1 for d in shape]
    base = (rng.standard_normal(big) * 50).astype(np.float32).astype(dt.numpy)
    index = tuple(
        slice(None, None, data.draw(st.sampled_from([1, 2, -1, -2]))) if d else slice(0, 0) for d in shape
    )
    v = base[index]
    slicer = tuple(slice(0, d) for d in shape)
    v = v[slicer]
    if v.ndim > 1 and data.draw(st.booleans()):
        v = v.transpose(data.draw(st.permutations(range(v.ndim))))
    out = p.from_numpy(v).numpy()
    assert out.shape == v.shape
    np.testing.assert_array_equal(out.reshape(-1).view(np.uint8), np.ascontiguousarray(v).reshape(-1).view(np.uint8))
