"""Copies, pickles and processes: tensors (and executors, configs, kernels) copy and
pickle by value, also across a ``spawn`` multiprocessing pool."""

import copy
import gc
import multiprocessing
import pickle

import ml_dtypes
import numpy as np
import pytest

import pypto as p


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-4, 4, size=shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int32, np.bool_], ids=lambda d: np.dtype(d).name
)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 5), (2, 3, 4)], ids=str)
def test_copy_and_pickle_keep_values_dtype_and_shape(dtype, shape):
    want = _values(dtype, shape, 1)
    x = p.from_numpy(want)
    for make in (copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))):
        y = make(x)
        assert y is not x and y._handle != x._handle  # its own value, not the same handle
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(y.numpy(), want)


def test_a_copy_outlives_the_original():
    # The copy once shared the original's handle: collecting the original freed the
    # copy's data.
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = p.from_numpy(want)
    copies = [copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))]
    del x
    gc.collect()
    for _ in range(20):  # reuse the freed memory, if it were freed
        p.from_numpy(np.full((3, 4), -1, np.float32)).numpy()
    for c in copies:
        np.testing.assert_array_equal(c.numpy(), want)


def test_pending_tensors_are_computed_first():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = p.from_numpy(a) * 2 + 1
    assert x.is_pending
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y.numpy(), a * 2 + 1)
    np.testing.assert_array_equal(copy.deepcopy(x).numpy(), a * 2 + 1)


def test_layouts_survive_a_round_trip():
    x = p.Tensor([1, 2, 3, 4], data=np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4), layout=p.NCHW)
    y = pickle.loads(pickle.dumps(x))
    assert y.layout == p.NCHW and y.shape == (1, 2, 3, 4)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    m = np.arange(20 * 30, dtype=np.float16).reshape(20, 30)
    z = p.layout_transform(p.from_numpy(m), p.NZ)
    for w in (pickle.loads(pickle.dumps(z)), copy.copy(z)):
        assert w.layout == p.NZ and w.shape == z.shape and w.nd_shape == (20, 30)
        np.testing.assert_array_equal(p.layout_transform(w, p.ND).numpy(), m)


def test_symbolic_placeholders_pickle_their_description():
    batch = p.symbol("batch")
    x = p.Tensor([batch, 4], dtype=p.float16)
    for y in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        assert y.shape == (batch, 4) and y.dtype == p.float16
        f = p.compile(lambda t: t * 2, inputs=[y])
        np.testing.assert_array_equal(f.run(np.ones((3, 4), np.float16)).numpy(), np.full((3, 4), 2, np.float16))


def test_traced_values_refuse_to_copy():
    seen = []

    def fn(t):
        for make in (copy.copy, pickle.dumps):
            with pytest.raises(p.PyptoTypeError, match="traced tensor inside p.compile has no value") as e:
                make(t * 2)
            seen.append(e.value.get_detailed_info().location.file)
        return t + 1

    p.compile(fn, dynamic=False).run(np.zeros((2, 2), np.float32))
    assert seen and all(f == __file__ for f in seen)


@pytest.mark.parametrize("device", ["reference", "tiny"])
def test_repr_survives_values_that_cannot_be_computed(device):
    prev = p.get_device()
    p.set_device(device)
    try:
        x = p.take(p.from_numpy(np.arange(4, dtype=np.float32)), np.array([1, 7], np.int32))  # 7 is outside
        text = repr(x)
        assert text.startswith("pypto.Tensor(shape=[2], dtype=float32, values not shown: "), text
        assert "Error" in text and "values not shown" in str(x)
    finally:
        p.set_device(prev)
    half = p.Tensor.__new__(p.Tensor)  # never initialised
    assert "values not shown" in repr(half) and "shape=?" in repr(half)


# --- executors, configs, kernels -------------------------------------------------------------


def double_plus_one(x):
    return x * 2 + 1


@p.block_kernel(grid=1, core="vector", out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def triple_kernel(x, y):
    p.store(y[0:16, :], p.load(x[0:16, :]) * 3)


def test_executors_copy_and_pickle():
    f = p.compile(double_plus_one)
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(f.run(a).numpy(), a * 2 + 1)
    for g in (copy.copy(f), copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        assert g is not f and g.config == f.config
        np.testing.assert_array_equal(g.run(a).numpy(), a * 2 + 1)
    batch = p.symbol("batch")
    h = pickle.loads(pickle.dumps(p.compile(double_plus_one, inputs=[p.Tensor([batch, 4])])))
    assert h.num_traced == 1 and h.is_symbolic
    np.testing.assert_array_equal(h.run(a).numpy(), a * 2 + 1)


def test_executors_of_lambdas_refuse_to_pickle():
    f = p.compile(lambda x: x + 1)
    with pytest.raises(p.PyptoTypeError, match="pickles its function by reference") as e:
        pickle.dumps(f)
    assert any("top level of a module" in s for s in e.value.get_detailed_info().suggestions)
    np.testing.assert_array_equal(copy.copy(f).run(np.ones(2, np.float32)).numpy(), [2, 2])


def test_configs_and_small_values_pickle():
    values = [
        p.CompileConfig(opt_level=1, disable_passes=("cse",), memory_pool_bytes=1 << 20, chip="tiny"),
        p.TileConfig(shape=[64, None], layout=p.ND, format="NZ"),
        p.float16, p.bfloat16, p.NZ, p.symbol("seq") * 2 + 1,
    ]  # fmt: skip
    for v in values:
        for w in (pickle.loads(pickle.dumps(v)), copy.copy(v), copy.deepcopy(v)):
            assert w == v and type(w) is type(v)


def test_block_kernels_pickle_by_reference():
    assert pickle.loads(pickle.dumps(triple_kernel)) is triple_kernel

    @p.block_kernel(out_shape=(16, 16))
    def local(x, y):
        p.store(y, p.load(x))

    with pytest.raises(p.PyptoTypeError, match="pickles by reference to its module-level name") as e:
        pickle.dumps(local)
    assert e.value.get_detailed_info().suggestions


# --- across processes --------------------------------------------------------------------


def _make_in_worker(seed):
    """Runs in a spawned worker: a tensor computed there, returned to the parent."""
    a = _values(np.float32, (4, 8), seed)
    return seed, p.from_numpy(a) * 2


def _compute_in_worker(args):
    x, f = args
    return f.run(x), p.call_kernel(triple_kernel, x)


def test_tensors_cross_a_spawn_pool():
    # Before, each result was a handle number of the worker's process: in the parent it
    # named some other tensor (or none).
    keep = [p.from_numpy(np.full((4, 8), 7, np.float32)) for _ in range(4)]  # handles the parent holds
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.map(_make_in_worker, range(6))
        xs = [p.from_numpy(_values(np.float32, (16, 16), s)) for s in range(3)]
        outs = pool.map(_compute_in_worker, [(x, p.compile(double_plus_one)) for x in xs])
    for seed, t in results:
        np.testing.assert_array_equal(t.numpy(), _values(np.float32, (4, 8), seed) * 2)
    for x, (y, z) in zip(xs, outs):
        np.testing.assert_array_equal(y.numpy(), x.numpy() * 2 + 1)
        np.testing.assert_array_equal(z.numpy(), x.numpy() * 3)
    for k in keep:
        np.testing.assert_array_equal(k.numpy(), 7)
