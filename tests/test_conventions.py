"""Python conventions: dtypes hash like numpy's and convert with numpy.dtype, numpy's
default int64 arrays convert with a range check, repr always shows something, boolean
masks say they are not supported, a block kernel's documented arguments work, and an
executor that runs itself while being traced raises instead of deadlocking."""

import threading

import ml_dtypes
import numpy as np
import pytest

import pypto as p

DTYPES = [(p.float32, np.float32), (p.float16, np.float16), (p.bfloat16, ml_dtypes.bfloat16),
          (p.int8, np.int8), (p.int32, np.int32), (p.bool_, np.bool_)]  # fmt: skip


@pytest.mark.parametrize("dt,nt", DTYPES, ids=lambda d: str(d))
def test_dtypes_hash_and_convert_like_numpy(dt, nt):
    nd = np.dtype(nt)
    assert dt == nd and hash(dt) == hash(nd)
    assert {nd: "x"}[dt] == "x" and {dt: "y"}[nd] == "y"  # dict lookups either way
    assert np.dtype(dt) == nd
    assert np.zeros(2, dtype=dt).dtype == nd
    assert np.asarray([1, 0], dtype=dt).dtype == nd


def test_other_integer_widths_convert_with_a_range_check():
    a = np.arange(-3, 5)  # int64, numpy's default: kept (tests/tensor_level/test_int64.py)
    assert a.dtype == np.int64
    t = p.from_numpy(a.reshape(2, 4))
    assert t.dtype == p.int64
    np.testing.assert_array_equal(t.numpy(), a.reshape(2, 4))
    for arr in (np.array([1, 2], np.int16), np.array([0, 255], np.uint8), np.array([7], np.uint64)):
        np.testing.assert_array_equal(p.from_numpy(arr).numpy(), arr.astype(np.int32))
    np.testing.assert_array_equal((p.from_numpy(np.ones(3, np.float32)) + np.arange(3)).numpy(), [1, 2, 3])
    big = np.zeros((2, 3), np.uint64)
    big[1, 2] = 2**31
    big[1, 1] = 2**40  # the first one out of range, in row-major order
    with pytest.raises(p.PyptoValueError) as e:
        p.from_numpy(big)
    msg = e.value.get_detailed_info().message
    assert "arr" in msg and str(2**40) in msg and "[1, 1]" in msg and "int32" in msg
    assert e.value.get_detailed_info().location.file == __file__
    with pytest.raises(p.DTypeError, match="float64"):
        p.from_numpy(np.zeros(3))  # still explicit: float64 is not narrowed silently


def test_from_numpy_and_tensor_name_bad_inputs():
    for bad in (None, "abc", {"a": 1}):
        with pytest.raises(p.PyptoTypeError, match="from_numpy: arr must be a numpy array") as e:
            p.from_numpy(bad)
        assert "float64" not in str(e.value) and "object" not in str(e.value)
    with pytest.raises(p.DTypeError, match="arr must be an array of numbers"):
        p.from_numpy(np.array([object()]))
    assert p.Tensor([2, 3], dtype=None).dtype == p.float32  # None is the default, float32
    for text in (["a", "b"], "1.5", np.array(["1", "2"])):  # numpy would parse "1.5"; PyPTO does not
        with pytest.raises(p.PyptoTypeError, match="p.Tensor: data must be numbers"):
            p.Tensor([2], data=text)
    with pytest.raises(p.PyptoValueError, match="p.Tensor: data must be numbers convertible to int8"):
        p.Tensor([2], dtype=p.int8, data=[[1, 2], [3]])  # ragged


def test_repr_of_traced_and_symbolic_tensors():
    b = p.symbol("b")
    assert repr(p.Tensor([b, 4])) == "pypto.Tensor(shape=[b, 4], dtype=float32, traced)"
    seen = []
    p.compile(lambda t: seen.append(repr(t)) or t, dynamic=False).run(np.zeros(2, np.float32))
    assert seen == ["pypto.Tensor(shape=[2], dtype=float32, traced)"]


def test_boolean_masks_select_and_bool_scalar_indices_are_refused():
    x = p.from_numpy(np.array([[0.5, 1.5], [2.5, -1.0]], np.float32))
    for mask in (x > 1, np.array([[True, False], [False, True]])):
        np.testing.assert_array_equal(x[mask].numpy(), x.numpy()[np.asarray(mask)])
    key = (np.array([True, False]), 0)  # a mask beside other indices: numpy's advanced indexing
    np.testing.assert_array_equal(x[key].numpy(), x.numpy()[key])
    for key in (True,):
        with pytest.raises(p.PyptoTypeError, match="boolean mask combined with other indices") as e:
            x[key]
        info = e.value.get_detailed_info()
        assert any("p.where" in s for s in info.suggestions) and info.location.file == __file__
    # what the suggestion says works
    np.testing.assert_array_equal(p.where(x > 1, x, 0).numpy(), [[0, 1.5], [2.5, 0]])


# --- block-kernel arguments ----------------------------------------------------------------


def test_block_kernel_out_dtype_is_a_dtype_not_a_function():
    @p.block_kernel(out_shape=(16, 16), out_dtype=np.float16)
    def copy16(x, y):
        p.store(y, p.load(x))

    a = np.arange(256, dtype=np.float16).reshape(16, 16)
    np.testing.assert_array_equal(p.call_kernel(copy16, a).numpy(), a)  # np.float16 is the dtype
    with pytest.raises(p.DTypeError, match="block_kernel: out_dtype: unsupported dtype float64") as e:
        p.block_kernel(out_shape=(16, 16), out_dtype=np.float64)(lambda x, y: None)
    assert e.value.get_detailed_info().location.file == __file__


@pytest.mark.parametrize("shape", [(-8, 64), (0, 16), (16, 2.5), "16,16", ()], ids=str)
def test_block_kernel_out_shape_is_validated(shape):
    with pytest.raises((p.ShapeError, p.PyptoTypeError), match="block_kernel: out_shape must be"):
        p.block_kernel(out_shape=shape)(lambda x, y: None)

    @p.block_kernel(out_shape=lambda x: shape)
    def k(x, y):
        p.store(y, p.load(x))

    with pytest.raises((p.ShapeError, p.PyptoTypeError), match="kernel k: out_shape must be"):
        p.call_kernel(k, np.zeros((16, 16), np.float32))


def test_block_kernel_other_arguments_are_validated():
    fn = lambda x, y: None  # noqa: E731
    for kwargs, name in [({"grid": 0}, "grid"), ({"grid": 1.5}, "grid"), ({"core": "gpu"}, "core"),
                         ({"vectors": "2"}, "vectors"), ({"output_layout": "XY"}, "output_layout"),
                         ({"name": 3}, "name")]:  # fmt: skip
        with pytest.raises(p.PyptoError, match=name):
            p.block_kernel(**kwargs)(fn)


@pytest.mark.parametrize("form", ["positional", "keyword", "varargs"])
def test_zeros_with_a_dtype_inside_a_kernel(form):
    @p.block_kernel(out_shape=(16, 32), out_dtype=p.float32)
    def fill(x, y):
        if form == "positional":
            z = p.zeros([16, 32], p.float32)  # the form docs/api.md shows
        elif form == "keyword":
            z = p.zeros([16, 32], dtype=p.float32)
        else:
            z = p.zeros(16, 32)
        p.store(y, z + p.load(x))

    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    np.testing.assert_array_equal(p.call_kernel(fill, a).numpy(), a)
    t = p.zeros([2, 3], p.float16)  # the same form at the tensor level
    assert t.dtype == p.float16 and t.shape == (2, 3)


# --- re-entrant tracing ----------------------------------------------------------------------


def _with_timeout(fn, seconds=60):
    """Runs fn in a thread; fails (instead of hanging the suite) if it does not finish."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s (a deadlock)"
    return out


@pytest.mark.parametrize("mode", [None, False, True])
def test_an_executor_traced_from_inside_its_own_trace_raises(mode):
    holder = {}

    def fn(x):
        return holder["f"].run(x) + 1  # runs its own executor while being traced

    holder["f"] = p.compile(fn, dynamic=mode)
    out = _with_timeout(lambda: holder["f"].run(np.zeros((2, 2), np.float32)))
    err = out.get("error")
    assert isinstance(err, p.CompileError), out
    assert "re-entrant tracing" in err.message and err.get_detailed_info().location.file == __file__
    # the executor still works for a function that does not call itself
    g = p.compile(lambda x: x + 1)
    assert _with_timeout(lambda: g.run(np.zeros(2, np.float32)).numpy().tolist())["value"] == [1, 1]


def test_running_another_executor_inside_a_trace_is_a_clear_error():
    # Another executor's run needs data, which a traced value has not: an error (not a
    # deadlock, and not the re-entrancy one).
    inner = p.compile(lambda x: x * 2)
    outer = p.compile(lambda x: inner.run(x) + 1, dynamic=False)
    err = _with_timeout(lambda: outer.run(np.ones((2, 2), np.float32))).get("error")
    assert isinstance(err, p.PyptoValueError) and "no data yet" in err.message
