"""The gradients of take_along_axis and index_select are scatter-adds of the incoming
cotangent (index_put rows along axis 0, scatter along other axes): checked against
torch.autograd across dtypes, axes and odd shapes with duplicate and negative indices,
eagerly and compiled on the device, whose program holds the scatter and no matmul."""

import numpy as np
import pytest

import pypto as p

torch = pytest.importorskip("torch")

TOL = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 1e-1}


def _torch(a, dtype):
    t = torch.tensor(a.astype(np.float32))
    return t.to(torch.float16 if dtype == "float16" else torch.bfloat16 if dtype == "bfloat16" else torch.float32)


def _check(got, want, dtype):
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.to(torch.float32).numpy(), rtol=TOL[dtype], atol=TOL[dtype])


def _inputs(case):
    """x (float32 normals) and indices in [-n, n) (negatives and duplicates) for a case."""
    shape, axis, ishape = case
    n = shape[axis]
    rng = np.random.default_rng(len(shape) * 7 + n + len(ishape))
    return rng, n, rng.standard_normal(shape).astype(np.float32), rng.integers(-n, n, size=ishape)


# x shape, axis, index shape (index_select: 1-d)
SELECT = [((37, 5), 0, (23,)), ((4, 9, 3), 1, (13,)), ((3, 2, 70), -1, (5,)), ((1, 65), 0, (7,))]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("case", SELECT, ids=str)
def test_index_select_gradient_matches_torch(case, dtype):
    shape, axis, ishape = case
    rng, n, x, idx = _inputs(case)
    w = rng.standard_normal(tuple(ishape[0] if a == axis % len(shape) else s for a, s in enumerate(shape))).astype(np.float32)

    def f(x):
        return p.sum(p.index_select(x, axis, idx) * p.from_numpy(w).astype(dtype))

    got = p.grad(f)(p.from_numpy(x).astype(dtype))
    tx = _torch(x, dtype).requires_grad_()
    (torch.index_select(tx, axis, torch.tensor(idx % n)) * _torch(w, dtype)).sum().backward()
    _check(got, tx.grad, dtype)


# x shape, axis, index shape (broadcasting with x off the axis)
ALONG = [((5, 7), 1, (5, 11)), ((6, 4, 3), 0, (9, 4, 3)), ((3, 33, 2), -2, (3, 40, 1)), ((1, 8), 1, (4, 8))]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("case", ALONG, ids=str)
def test_take_along_axis_gradient_matches_torch(case, dtype):
    shape, axis, ishape = case
    rng, n, x, idx = _inputs(case)
    out = np.take_along_axis(np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(1 if a == axis % len(shape) else s for a, s in enumerate(ishape)))),
                             idx, axis)  # fmt: skip
    w = rng.standard_normal(out.shape).astype(np.float32)

    def f(x):
        return p.sum(p.take_along_axis(x, idx, axis=axis) * p.from_numpy(w).astype(dtype))

    got = p.grad(f)(p.from_numpy(x).astype(dtype))
    tx = _torch(x, dtype).requires_grad_()
    full = tx.expand(*out.shape[:axis % len(shape)], n, *out.shape[axis % len(shape) + 1:])  # torch.gather does not broadcast
    (torch.gather(full, axis, torch.tensor(idx % n).expand(*out.shape)) * _torch(w, dtype)).sum().backward()
    _check(got, tx.grad, dtype)


@pytest.mark.parametrize("axis", [0, 1])
def test_compiled_gradient_is_a_scatter_add_on_the_device(axis):
    """An embedding-like table: the compiled gradient program adds the selected rows
    back with index_put (axis 0) or scatter, and has no matmul."""
    rng = np.random.default_rng(axis)
    table = rng.standard_normal((301, 24) if axis == 0 else (24, 301)).astype(np.float32)
    ids = rng.integers(0, 301, size=(40,)).astype(np.int32)
    ids[:5] = 7  # duplicates add

    def loss(t, i):
        return p.sum(p.tanh(p.index_select(t, axis, i)))

    ex = p.compile(p.grad(loss), inputs=[(list(table.shape), p.float32), ([40], p.int32)])
    got = ex.run(table, ids)
    tt = torch.tensor(table, requires_grad=True)
    torch.tanh(torch.index_select(tt, axis, torch.tensor(ids.astype(np.int64)))).sum().backward()
    np.testing.assert_allclose(got.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-5)
    names = [t["Name"].rsplit("_", 1)[0] for t in ex.stats()["detail"]["Tasks"]]
    assert ("index_put" if axis == 0 else "scatter") in names
    assert not any("matmul" in n for n in names)

    def along(t, i):
        return p.sum(p.take_along_axis(t, i, axis=1) ** 2)

    t2 = table
    idx = rng.integers(0, t2.shape[1], size=(t2.shape[0], 9)).astype(np.int32)
    ex = p.compile(p.grad(along), inputs=[(list(t2.shape), p.float32), (list(idx.shape), p.int32)])
    tt = torch.tensor(t2, requires_grad=True)
    (torch.gather(tt, 1, torch.tensor(idx.astype(np.int64))) ** 2).sum().backward()
    np.testing.assert_allclose(ex.run(t2, idx).numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert "scatter" in [t["Name"].rsplit("_", 1)[0] for t in ex.stats()["detail"]["Tasks"]]
