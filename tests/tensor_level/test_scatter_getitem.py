"""x[key] with several index arrays, or a mask beside other indices (numpy's advanced
indexing), against numpy across dtypes, with host arrays and realised index tensors;
compiled with host arrays; refused for traced index tensors; its gradient adds back."""

import numpy as np
import pytest

import pypto as p

KEYS = [
    ([0, 2], slice(None), [1, 5]),  # arrays apart: the broadcast index shape first
    ([1, 2], [3, 4]),
    ([[0], [4]], [[1, 2, 5]]),
    (slice(None), [[1, -1], [0, 2]], [3, 4]),
    ("mask1", 2),
    ("mask2", slice(1, 4)),
    (1, [1, 2], [0, 6]),
    ([1, 2], None, slice(None), [0, 3]),
    (Ellipsis, [1, 2], [3, 4]),
    (slice(None, None, -1), [0, 1], [2, 3]),
    ([0, 4], slice(2, 5), [1, 1]),
    ("none", 1),  # a mask selecting nothing
]


def _key(r, key):
    masks = {"mask1": r[:, 0, 0] > 0, "mask2": r[:, :, 0] > 0, "none": r[:, 0, 0] > 99}
    return tuple(masks[k] if isinstance(k, str) else np.asarray(k) if isinstance(k, list) else k for k in key)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "bool_"])
@pytest.mark.parametrize("key", KEYS, ids=str)
def test_advanced_getitem_matches_numpy(key, dtype):
    rng = np.random.default_rng(len(str(key)))
    x = rng.standard_normal((5, 6, 7)) * 9
    x = x > 0 if dtype == "bool_" else x.astype(getattr(p, dtype).numpy)
    key = _key(rng.standard_normal((5, 6, 7)), key)
    want = x[key]
    for k in (key, tuple(p.from_numpy(a) if isinstance(a, np.ndarray) else a for a in key)):
        got = p.from_numpy(x)[k].numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_compiled_and_refused_and_differentiated():
    x = np.random.default_rng(1).standard_normal((5, 6, 7)).astype(np.float32)
    ex = p.compile(lambda t: t[[0, 2], :, [1, 5]] * 2, inputs=[([5, 6, 7], p.float32)])
    np.testing.assert_array_equal(ex.run(x).numpy(), x[[0, 2], :, [1, 5]] * 2)
    with pytest.raises(p.PyptoIndexError, match="index 0 holds 9, outside axis 0 of size 5") as e:
        p.from_numpy(x)[[0, 9], [1, 1]]
    assert e.value.location.file == __file__
    with pytest.raises(p.PyptoIndexError, match="several index tensors .* inside p.compile") as e:
        p.compile(lambda t, i: t[i, i], inputs=[([5, 6, 7], p.float32), ([2], p.int32)])
    assert e.value.location.file == __file__
    with pytest.raises(p.PyptoValueError, match="getitem: the size of the result depends on the values of mask"):
        p.compile(lambda t: t[t[:, 0, 0] > 0, 1], inputs=[([5, 6, 7], p.float32)])
    g = p.grad(lambda t: p.sum(t[[0, 0, 2], [1, 1, 3]] * 3))(x)  # duplicates add
    want = np.zeros_like(x)
    np.add.at(want, ([0, 0, 2], [1, 1, 3]), 3)
    np.testing.assert_array_equal(g.numpy(), want)
