"""x[key] = value with advanced keys (index arrays on any axes, with slices, ints, None,
Ellipsis and masks between them) against numpy's own assignment, across dtypes; such
writes are one index_put, in place in compiled programs (the simulator's GM counters
show no whole-tensor copy); boolean masks under p.compile compile where the write does
not depend on how many elements the mask selects, and are a clear error where it does."""

import numpy as np
import pytest

import pypto as p

KEYS = [
    (slice(None), [1, 3]),
    (slice(None), [[1, -1], [0, 2]]),
    ([0, 2], slice(None), [1, 5]),  # arrays apart: the broadcast index shape comes first
    (slice(1, 4), [2, 2, 0], slice(None, None, 2)),  # a duplicate: the last write wins
    (Ellipsis, [6, 0]),
    (slice(None, None, -1), 2),
    (1, slice(None), [3, 4]),
    ([1, 2], 3),
    (None, [1, 2]),
    ([1, 2], None, slice(None), 0),
    (slice(None), None, [0, 1]),
    (slice(None, None, 2),),
    (0, slice(None, None, 3), [1, 2]),
    (slice(None), [[0], [4]], [[1, 2, 6]]),
    ("mask3",),
    ("mask1", 2),
]


def _key(x, key):
    out = []
    for k in key:
        if k == "mask3":
            k = x > 0
        elif k == "mask1":
            k = x[:, 0, 0] > 0
        out.append(np.asarray(k) if isinstance(k, list) else k)
    return tuple(out)


def _values(rng, shape, dtype):
    if dtype == "bool_":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int8"):
        return rng.integers(-50, 50, size=shape).astype(getattr(p, dtype).numpy)
    return rng.standard_normal(shape).astype(getattr(p, dtype).numpy)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "bool_"])
@pytest.mark.parametrize("key", KEYS, ids=str)
def test_advanced_setitem_matches_numpy(key, dtype):
    rng = np.random.default_rng(len(str(key)))
    x = _values(rng, (5, 6, 7), dtype)
    key = _key(rng.standard_normal((5, 6, 7)), key)
    sel = x[key].shape
    for value in (_values(rng, sel, dtype), _values(rng, sel[-1:], dtype), x.dtype.type(1)):  # whole, one row broadcast, a number
        want = x.copy()
        want[key] = value
        t = p.from_numpy(x)
        t[key] = value
        np.testing.assert_array_equal(t.numpy(), want)
        tensor_key = tuple(p.from_numpy(k) if isinstance(k, np.ndarray) else k for k in key)  # indices as device tensors
        t = p.from_numpy(x)
        t[tensor_key] = p.from_numpy(np.asarray(value))
        np.testing.assert_array_equal(t.numpy(), want)


def test_advanced_setitem_errors_name_the_line():
    t = p.from_numpy(np.zeros((4, 5), np.float32))
    with pytest.raises(p.PyptoIndexError, match="outside axis 1 of size 5") as e:
        t[:, [0, 5]] = 1.0
    assert e.value.location.file == __file__
    with pytest.raises(p.ShapeError, match=r"a value of shape \[3\] does not fit the selection \[4, 2\]"):
        t[:, [0, 1]] = np.ones(3, np.float32)
    with pytest.raises(p.PyptoIndexError, match="do not broadcast together"):
        t[[0, 1], [0, 1, 2]] = 1.0
    with pytest.raises(p.PyptoIndexError, match="index"):
        t[:, np.array([0.5])] = 1.0


def _gm(ex):
    tasks = ex.stats()["detail"]["Tasks"]
    return {t["Name"].rsplit("_", 1)[0]: t["Stats"] for t in tasks}


@pytest.mark.parametrize("shape,dtype", [((6, 40), "float32"), ((9, 50, 33), "float16"), ((4, 37, 3, 8), "int8")])
def test_compiled_column_write_is_in_place(shape, dtype):
    """x[:, idx] = v with idx known when the program runs: one index_put writes v's bytes
    into the donated x; the only other task stretches idx (4 bytes per written row)."""
    rng = np.random.default_rng(2)
    k = 3
    vshape = (shape[0], k) + shape[2:]
    dt = getattr(p, dtype)

    def f(c, i, v):
        c[:, i] = v
        return c

    ex = p.compile(f, inputs=[(list(shape), dt), ([k], p.int32), (list(vshape), dt)], donate_argnums=0)
    x, v = _values(rng, shape, dtype), _values(rng, vshape, dtype)
    for idx in ([1, -1, 3], [0, 0, 5], [shape[1] - 1, 2, 1]):
        want = x.copy()
        want[:, np.array(idx)] = v
        np.testing.assert_array_equal(ex.run(x, np.array(idx, np.int32), v).numpy(), want)
        stats = _gm(ex)
        assert stats["index_put"]["GMBytesWritten"] == v.nbytes
        written = sum(s["GMBytesWritten"] for s in stats.values())
        assert written <= v.nbytes + 4 * shape[0] * k * 2 < x.nbytes + v.nbytes  # no copy of x
    assert ex.info()["update_copies"] == []


def test_masks_under_compile():
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)

    def zero(t):  # the write does not depend on how many elements the mask selects: p.where
        t[t > 0] = 0.0
        return t

    def rows(t, r):
        t[t[:, 0] > 0] = r  # one row, broadcast to every selected row
        return t

    want = x.copy()
    want[want > 0] = 0
    np.testing.assert_array_equal(p.compile(zero, inputs=[([4, 3], p.float32)]).run(x).numpy(), want)
    r = np.arange(3, dtype=np.float32)
    want = x.copy()
    want[want[:, 0] > 0] = r
    np.testing.assert_array_equal(p.compile(rows, inputs=[([4, 3], p.float32), ([3], p.float32)]).run(x, r).numpy(), want)

    def counted(t, v):
        t[t > 0] = v  # as many values as true elements: data-dependent
        return t

    def mixed(t):
        t[t[:, 0] > 0, 1] = 1.0
        return t

    def put(t):
        return p.index_put(t, (t[:, 0] > 0,), 1.0)

    for fn, inputs, op in [(counted, [([4, 3], p.float32), ([5], p.float32)], "setitem"), (mixed, [([4, 3], p.float32)], "setitem"),
                           (put, [([4, 3], p.float32)], "index_put")]:  # fmt: skip
        with pytest.raises(p.PyptoValueError, match=f"{op}: the positions written depend on the values of the boolean") as e:
            p.compile(fn, inputs=inputs)
        assert e.value.location.file == __file__
        assert any("p.where" in s for s in e.value.suggestions)
