"""Boolean masks in every dtype, odd and empty shapes and broadcast masks against torch
(masked_select, masked_fill) and numpy (nonzero, x[mask]): values, dtypes and shapes."""

import numpy as np
import pytest

import pypto as p

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "int64", "bool_"]
# x shape, mask shape (broadcast together for masked_select)
SHAPES = [((7, 33), (7, 33)), ((7, 33), (33,)), ((3, 1, 5), (4, 5)), ((0, 4), (0, 4)), ((5,), (5,)), ((6, 3, 4), (6,))]


def _torch(a):
    if a.dtype == p.bfloat16.numpy:
        return torch.tensor(a.astype(np.float32)).to(torch.bfloat16)
    return torch.tensor(a)


def _numpy(t):
    return t.to(torch.float32).numpy().astype(p.bfloat16.numpy) if t.dtype == torch.bfloat16 else t.numpy()


def _data(rng, shape, dt):
    if dt == "bool_":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 5).astype(getattr(p, dt).numpy)  # ints: truncated, zeros among them


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_masks_match_torch_and_numpy(shapes, dt):
    xs, ms = shapes
    rng = np.random.default_rng(len(xs) * 10 + len(ms))
    x, m = _data(rng, xs, dt), rng.random(ms) < 0.4
    tx, tm = _torch(x), torch.tensor(m)
    try:
        both = np.broadcast_shapes(xs, ms)
    except ValueError:
        both = None  # a mask of the leading axes only
    if both is not None:
        want = _numpy(torch.masked_select(tx, tm))
        got = p.masked_select(p.from_numpy(x), p.from_numpy(m)).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    if both == xs:
        fill = True if dt == "bool_" else 3
        got = p.masked_fill(p.from_numpy(x), p.from_numpy(m), fill).numpy()
        want = _numpy(tx.masked_fill(tm, fill))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if xs[:len(ms)] == ms:  # a mask of the leading axes
        got = p.from_numpy(x)[p.from_numpy(m)].numpy()
        assert got.dtype == x.dtype and got.shape == x[m].shape
        np.testing.assert_array_equal(got, x[m])
    nz = p.nonzero(p.from_numpy(x))
    want = np.nonzero(x.astype(np.float32) if dt == "bfloat16" else x)
    assert len(nz) == len(want)
    for g, w in zip(nz, want):
        assert g.numpy().dtype == np.int64
        np.testing.assert_array_equal(g.numpy(), w)
