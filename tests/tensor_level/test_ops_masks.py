"""Boolean masks against numpy and torch's semantics: x[mask], p.nonzero,
p.masked_select (data-dependent sizes, realised eagerly; refused inside p.compile with a
clear error) and p.masked_fill (compiles)."""

import numpy as np
import pytest

import pypto as p
from conftest import FLOAT_DTYPES, rand


@pytest.mark.parametrize("dt", [*FLOAT_DTYPES, p.int8, p.int32, p.bool_])
def test_getitem_with_a_full_mask_matches_numpy(device, dt):
    a = rand((5, 37), p.float32, 1, -3, 3)
    a = a.astype(p.dtypes.as_dtype(dt).numpy) if dt != p.bool_ else a > 0
    x = p.from_numpy(a)
    m = a > 0 if dt != p.bool_ else ~a
    for mask in (m, p.from_numpy(m), x > 0 if dt != p.bool_ else ~x):
        got = x[mask].numpy()
        np.testing.assert_array_equal(got, a[m])
        assert got.dtype == a.dtype


def test_getitem_with_a_mask_of_leading_axes(device):
    a = rand((4, 3, 6), p.float16, 2)
    rows = np.array([True, False, True, True])
    np.testing.assert_array_equal(p.from_numpy(a)[rows].numpy(), a[rows])
    m2 = a[:, :, 0] > 0
    np.testing.assert_array_equal(p.from_numpy(a)[m2].numpy(), a[m2])


def test_empty_and_full_selections(device):
    a = rand((3, 4), p.float32, 3)
    x = p.from_numpy(a)
    none = np.zeros((3, 4), bool)
    assert x[none].shape == (0,) and x[none].numpy().shape == (0,)
    np.testing.assert_array_equal(x[~none].numpy(), a.ravel())
    assert p.masked_select(x, none).numpy().shape == (0,)


def test_mask_shape_mismatch_is_an_index_error():
    x = p.from_numpy(np.ones((3, 4), np.float32))
    with pytest.raises(p.PyptoIndexError, match=r"boolean index of shape \[4\] does not match") as e:
        x[np.ones(4, bool)]
    assert e.value.location.file == __file__


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_nonzero_matches_numpy(device, shape):
    a = np.random.default_rng(4).integers(-1, 2, shape).astype(np.int32)
    got = p.nonzero(a)
    want = np.nonzero(a)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == p.int64  # numpy's index dtype
        np.testing.assert_array_equal(g.numpy(), w)
    x = p.from_numpy(a.astype(np.float32))
    np.testing.assert_array_equal(p.nonzero(x > 0)[0].numpy(), np.nonzero(a > 0)[0])
    with pytest.raises(p.ShapeError, match="at least one dimension"):
        p.nonzero(np.int32(3))


def test_masked_select_broadcasts_like_torch(device):
    a = rand((3, 5), p.bfloat16, 5)
    m = np.array([True, False, True, True, False])
    got = p.masked_select(p.from_numpy(a), m).numpy()
    np.testing.assert_array_equal(got, np.broadcast_to(a, (3, 5))[np.broadcast_to(m, (3, 5))])
    col = rand((3, 1), p.float32, 6)
    mm = rand((3, 4), p.float32, 7) > 0
    np.testing.assert_array_equal(p.masked_select(col, mm).numpy(), np.broadcast_to(col, (3, 4))[mm])
    with pytest.raises(p.ShapeError, match="cannot be broadcast together"):
        p.masked_select(np.ones((3, 4), np.float32), np.ones(5, bool))
    with pytest.raises(p.DTypeError, match="mask must be a bool array"):
        p.masked_select(np.ones(3, np.float32), np.ones(3, np.int32))


@pytest.mark.parametrize("dt", [*FLOAT_DTYPES, p.int32])
def test_masked_fill_matches_torch_semantics(device, dt):
    a = rand((4, 33), p.float32, 8, -5, 5).astype(p.dtypes.as_dtype(dt).numpy)
    m = rand((1, 33), p.float32, 9) > 0
    got = p.masked_fill(a, m, -2).numpy()
    want = np.where(m, np.asarray(-2).astype(a.dtype), a)
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, want)
    if dt.is_floating:
        np.testing.assert_array_equal(p.masked_fill(a, m, float("-inf")).numpy(), np.where(m, -np.inf, a).astype(a.dtype))


def test_masked_fill_compiles_and_checks_its_arguments(device):
    a = rand((2, 40), p.float16, 10)
    f = p.compile(lambda x: p.masked_fill(x, x < 0, 0.0))
    np.testing.assert_array_equal(f(a).numpy(), np.where(a < 0, np.float16(0), a))
    with pytest.raises(p.DTypeError, match="mask must be a bool tensor"):
        p.masked_fill(a, p.from_numpy(a), 0)
    with pytest.raises(p.ShapeError, match=r"does not broadcast to x's shape \[2, 40\]"):
        p.masked_fill(a, np.ones((3, 40), bool), 0)
    with pytest.raises(p.PyptoTypeError, match="value must be a scalar or a 0-d tensor"):
        p.masked_fill(a, a > 0, "x")


@pytest.mark.parametrize(
    "fn",
    [lambda x: x[x > 0], lambda x: p.masked_select(x, x > 0), lambda x: p.nonzero(x)[0]],
    ids=["getitem", "masked_select", "nonzero"],
)
def test_data_dependent_sizes_are_refused_inside_compile(fn):
    with pytest.raises(p.PyptoValueError, match="depends on the values") as e:
        p.compile(fn)(np.ones((2, 3), np.float32))
    info = e.value.get_detailed_info()
    assert any("p.where" in s for s in info.suggestions)
    assert info.location is not None and info.location.file == __file__
