"""slice_update, index_put, scatter and x[key] = value traced with symbolic dims: one
trace serves every size, each run equal to numpy's (torch's for scatter), on the
reference and the chip; donated writes stay in place; what the shape rules need of
the sizes is a constraint checked when the program runs, naming the symbol."""

import numpy as np
import pytest

import pypto as p

torch = pytest.importorskip("torch")

n, k = p.symbol("n"), p.symbol("k")
SIZES = (3, 5, 9)


def _rng(s):
    return np.random.default_rng(s)


def _put_model(x, i, v):
    o = x.copy()
    o[i] = v
    return o


def _column_write(c, i, v):
    c[:, i] = v
    return c


def _row_write(c, v):
    c[1:3] = v
    return c


def _cache_write(c, u, pos):
    c[:, pos] = u  # pos: a 0-d tensor, known when the program runs
    return c


CASES = {
    "index_put": (lambda x, i, v: p.index_put(x, (i,), v), [p.Tensor([n, 4]), p.Tensor([k], dtype=p.int32), p.Tensor([k, 4])],
                  lambda s, r: (r.standard_normal((s + 4, 4)).astype(np.float32), r.permutation(s + 4)[:s].astype(np.int32) - 2,
                                r.standard_normal((s, 4)).astype(np.float32)), _put_model),
    "index_put accumulate": (lambda x, i, v: p.index_put(x, (i,), v, accumulate=True), [p.Tensor([n, 3]), p.Tensor([n], dtype=p.int32), p.Tensor([n, 3])],
                             lambda s, r: (r.standard_normal((s, 3)).astype(np.float32), r.integers(0, s, size=s).astype(np.int32),
                                           r.standard_normal((s, 3)).astype(np.float32)),
                             lambda x, i, v: (lambda o: (np.add.at(o, i, v), o)[1])(x.copy())),
    "scatter": (lambda x, i, v: p.scatter(x, 1, i, v), [p.Tensor([n, 6]), p.Tensor([n, 2], dtype=p.int32), p.Tensor([n, 2])],
                lambda s, r: (r.standard_normal((s, 6)).astype(np.float32), np.stack([r.permutation(6)[:2] for _ in range(s)]).astype(np.int32),
                              r.standard_normal((s, 2)).astype(np.float32)),
                lambda x, i, v: torch.tensor(x).scatter(1, torch.tensor(i.astype(np.int64)), torch.tensor(v)).numpy()),
    "slice_update": (lambda x, u, i: p.slice_update(x, u, [i], axes=[1]), [p.Tensor([n, 8, 3]), p.Tensor([n, 1, 3]), p.Tensor([], dtype=p.int32)],
                     lambda s, r: (r.standard_normal((s, 8, 3)).astype(np.float32), r.standard_normal((s, 1, 3)).astype(np.float32), np.array(s % 8, np.int32)),
                     lambda x, u, i: (lambda o: (o.__setitem__((slice(None), slice(int(i), int(i) + 1)), u), o)[1])(x.copy())),
    "x[:, idx] = v": (_column_write, [p.Tensor([n, 8]), p.Tensor([2], dtype=p.int32), p.Tensor([n, 2])],
                      lambda s, r: (r.standard_normal((s, 8)).astype(np.float32), np.array([1, -3], np.int32), r.standard_normal((s, 2)).astype(np.float32)),
                      lambda x, i, v: (lambda o: (o.__setitem__((slice(None), i), v), o)[1])(x.copy())),
    "x[1:3] = v": (_row_write, [p.Tensor([n, 8]), p.Tensor([2, 8])],
                   lambda s, r: (r.standard_normal((s, 8)).astype(np.float32), r.standard_normal((2, 8)).astype(np.float32)),
                   lambda x, v: (lambda o: (o.__setitem__(slice(1, 3), v), o)[1])(x.copy())),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_one_trace_serves_every_size(name, device):
    fn, inputs, make, model = CASES[name]
    ex = p.compile(fn, inputs=inputs, donate_argnums=0)
    assert ex.is_symbolic
    for s in SIZES:
        args = make(s, _rng(s))
        np.testing.assert_allclose(ex.run(*args).numpy(), model(*args), rtol=1e-6, atol=1e-6)
    assert ex.num_traced == 1
    assert ex.info()["update_copies"] == []


def test_kv_cache_of_symbolic_batch_written_in_place():
    """A [batch, T, d] cache written at a position given when the program runs: only
    the rows' bytes are written, for every batch size."""
    b = p.symbol("b")
    ex = p.compile(_cache_write, inputs=[p.Tensor([b, 40, 16], dtype=p.float16), p.Tensor([b, 16], dtype=p.float16), p.Tensor([], dtype=p.int32)],
                   donate_argnums=0)  # fmt: skip
    for s in (1, 4, 7):
        r = _rng(s)
        c, u = r.standard_normal((s, 40, 16)).astype(np.float16), r.standard_normal((s, 16)).astype(np.float16)
        want = c.copy()
        want[:, 5 + s] = u
        np.testing.assert_array_equal(ex.run(c, u, np.array(5 + s, np.int32)).numpy(), want)
        tasks = ex.stats()["detail"]["Tasks"]
        assert sum(t["Stats"]["GMBytesWritten"] for t in tasks) == u.nbytes
    assert ex.num_traced == 1 and ex.info()["update_copies"] == []


def test_size_rules_are_checked_when_tracing_and_running():
    with pytest.raises(p.ShapeError, match=r"index_put: values of shape \[k, 5\] do not broadcast to the indexed shape \[k, 4\]"):
        p.compile(lambda x, i, v: p.index_put(x, (i,), v), inputs=[p.Tensor([n, 4]), p.Tensor([k], dtype=p.int32), p.Tensor([k, 5])])
    j = p.symbol("j")
    ex = p.compile(lambda x, i, v: p.index_put(x, (i,), v), inputs=[p.Tensor([n, 4]), p.Tensor([k], dtype=p.int32), p.Tensor([j, 4])])
    with pytest.raises(p.ShapeError, match="j is 3 and k is 2, but broadcast_to needs the first equal to the second"):
        ex.run(np.zeros((5, 4), np.float32), np.array([0, 1], np.int32), np.zeros((3, 4), np.float32))
    ex = p.compile(lambda x, i, v: p.scatter(x, 0, i, v), inputs=[p.Tensor([n, 4]), p.Tensor([k, 4], dtype=p.int32), p.Tensor([k, 4])])
    np.testing.assert_array_equal(ex.run(np.zeros((2, 4), np.float32), np.ones((3, 4), np.int32), np.ones((3, 4), np.float32)).numpy()[1], 1)
    with pytest.raises(p.PyptoValueError, match="index_put: index 5 is out of range for axis 0 of size 5"):
        p.compile(lambda x, i, v: p.index_put(x, (i,), v), inputs=[p.Tensor([n, 4]), p.Tensor([2], dtype=p.int32), p.Tensor([2, 4])]).run(
            np.zeros((5, 4), np.float32), np.array([0, 5], np.int32), np.zeros((2, 4), np.float32))  # fmt: skip
