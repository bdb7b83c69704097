"""p.einsum against numpy.einsum: the contractions attention and linear layers use, on
the reference interpreter and the simulated chip, across float dtypes (products
accumulate in float32, so the bound is conftest's matmul bound on |a| @ |b|), integers
(exact) and bool; and the errors for subscripts it refuses."""

import numpy as np
import pytest

import pypto as p
from conftest import FLOAT_DTYPES, TINY, ULP, rand

CASES = [
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 7, 8)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 5, 7), (2, 3, 7, 8)]),
    ("bqhd,bkhd->bhqk", [(2, 5, 3, 4), (2, 6, 3, 4)]),
    ("ij,jk->ik", [(4, 5), (5, 6)]),
    ("ij,kj->ik", [(4, 5), (6, 5)]),
    ("ji,jk->ik", [(5, 4), (5, 6)]),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("ij,kj->", [(2, 3), (4, 3)]),
    ("i,i->", [(37,), (37,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->i", [(5, 33), (5, 33)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("bhqd->bqhd", [(2, 3, 4, 5)]),
]


def _bound(eq, ops, dt):
    """|got - exact| allowed: one ulp of dt and fp32 accumulation over the magnitudes."""
    mags = np.einsum(eq, *[np.abs(o.astype(np.float64)) for o in ops])
    nd = np.dtype(p.dtypes.as_dtype(dt).numpy)
    k = max(np.prod(o.shape) for o in ops)
    return ULP[nd] * mags + 2 * k * 2.0**-24 * mags + TINY[nd]


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_numpy(device, eq, shapes, dt):
    ops = [rand(s, dt, i, -2, 2) for i, s in enumerate(shapes)]
    got = p.einsum(eq, *ops).numpy()
    want = np.einsum(eq, *[o.astype(np.float64) for o in ops])
    assert got.shape == want.shape
    assert got.dtype == np.dtype(p.dtypes.as_dtype(dt).numpy)
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= _bound(eq, ops, dt)), f"worst error {err.max()}"


@pytest.mark.parametrize("eq,shapes", CASES[:8], ids=[c[0] for c in CASES[:8]])
def test_einsum_integers_are_exact(device, eq, shapes):
    rng = np.random.default_rng(3)
    ops = [rng.integers(-50, 50, s).astype(np.int32) for s in shapes]
    got = p.einsum(eq, *ops).numpy()
    want = np.einsum(eq, *ops)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_einsum_bool_is_or_of_ands(device):
    rng = np.random.default_rng(4)
    a, b = rng.random((3, 4)) < 0.4, rng.random((4, 5)) < 0.4
    got = p.einsum("ij,jk->ik", a, b).numpy()
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.einsum("ij,jk->ik", a, b))


def test_einsum_int8_accumulates_in_int32_like_matmul(device):
    rng = np.random.default_rng(5)
    a, b = rng.integers(-100, 100, (4, 40)).astype(np.int8), rng.integers(-100, 100, (40, 3)).astype(np.int8)
    got = p.einsum("ij,jk->ik", a, b).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_einsum_in_a_compiled_attention(device):
    q, k, v = (rand((2, 2, 9, 16), p.float32, s, -1, 1) for s in (6, 7, 8))

    def attn(q, k, v):
        s = p.einsum("bhqd,bhkd->bhqk", q, k) * 0.25
        return p.einsum("bhqk,bhkd->bhqd", p.softmax(s, axis=-1), v)

    got = p.compile(attn)(q, k, v).numpy()
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * 0.25
    e = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("bhqk,bhkd->bhqd", e / e.sum(-1, keepdims=True), v)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "eq,shapes,cls,match",
    [
        ("ii->i", [(3, 3)], p.PyptoValueError, "repeats a letter"),
        ("ij->k", [(3, 3)], p.PyptoValueError, "output letter 'k' names no operand"),
        ("ij,jk->ik", [(3, 3)], p.PyptoValueError, "2 operand terms for 1 operands"),
        ("ijk->i", [(3, 3)], p.PyptoValueError, "names 3 axes but the operand has 2"),
        ("ij,jk->ik", [(3, 4), (5, 6)], p.ShapeError, "letter 'j' has size 5 in operand 1 but 4"),
        ("i1->i", [(3, 3)], p.PyptoValueError, "'1' is not a letter"),
        ("ij->ii", [(3, 3)], p.PyptoValueError, "the output repeats a letter"),
    ],
)
def test_einsum_errors(eq, shapes, cls, match):
    with pytest.raises(cls, match=match) as e:
        p.einsum(eq, *[np.ones(s, np.float32) for s in shapes])
    assert e.value.location is not None and "test_ops_einsum.py" in e.value.location.file


def test_einsum_argument_kinds():
    with pytest.raises(p.PyptoTypeError, match="subscripts must be a string"):
        p.einsum(3, np.ones(2, np.float32))
    with pytest.raises(p.PyptoValueError, match="operands must be one or more tensors"):
        p.einsum("i->i")


def test_einsum_int8_dot_and_elementwise_products_give_int32(device):
    a = np.array([100, -100, 7], np.int8)
    got = p.einsum("i,i->", a, a).numpy()
    assert got.dtype == np.int32 and int(got) == 20049
    np.testing.assert_array_equal(p.einsum("i,i->i", a, a).numpy(), a.astype(np.int32) ** 2)
