"""p.index_put and p.scatter against torch (duplicates included: torch on the CPU writes
them in order, so the last wins, as ours do; with accumulate they sum), on the device,
across dtypes and odd shapes; in place in compiled programs (the simulator's GM
counters show that no whole-tensor copy happens); gradients against torch.autograd."""

import numpy as np
import pytest

import pypto as p

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "bool_"]


def _torch(a: np.ndarray):
    if a.dtype == p.bfloat16.numpy:
        return torch.tensor(a.astype(np.float32)).to(torch.bfloat16)
    return torch.tensor(a)


def _numpy(t) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.to(torch.float32).numpy().astype(p.bfloat16.numpy)
    return t.numpy()


def _values(rng, shape, dtype):
    npdt = getattr(p, dtype).numpy
    if dtype == "bool_":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int8"):
        return rng.integers(-5, 6, size=shape).astype(npdt)
    return (rng.standard_normal(shape) * 3).astype(npdt)


# x shape, index shapes (one per leading axis), trailing shape of the values
PUT_CASES = [((7,), [(5,)]), ((6, 5), [(9,), (9,)]), ((5, 3, 33), [(4, 2)]), ((3, 4, 2), [(2, 7), (7,), (1, 7)]), ((40, 2, 19), [(3,)])]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", PUT_CASES, ids=str)
def test_index_put_matches_torch(case, accumulate, dtype):
    if accumulate and dtype == "bool_":
        pytest.skip("bool does not add")
    shape, ishapes = case
    rng = np.random.default_rng(len(shape) * 10 + len(ishapes))
    x = _values(rng, shape, dtype)
    idx = tuple(rng.integers(-shape[j], shape[j], size=s) for j, s in enumerate(ishapes))  # int64, negatives, duplicates
    b = np.broadcast_shapes(*ishapes)
    vals = _values(rng, b + shape[len(ishapes):], dtype)
    want = _numpy(_torch(x).index_put(tuple(torch.tensor(i) for i in idx), _torch(vals), accumulate=accumulate))
    got = p.index_put(x, idx, vals, accumulate=accumulate).numpy()
    if dtype in ("float16", "bfloat16") and accumulate:  # torch sums duplicates in float32 first, rounding once
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    else:
        np.testing.assert_array_equal(got, want)


def test_index_put_accumulate_adds_in_index_order_in_the_dtype():
    """Each duplicate adds in turn, rounding to float16 each time (numpy's add.at)."""
    x = np.zeros(2, np.float16)
    idx = np.array([0, 0, 0, 1])
    vals = np.array([2048, 1, 1, 3], np.float16)  # 2048 + 1 rounds back to 2048 in float16
    want = x.copy()
    np.add.at(want, idx, vals)
    np.testing.assert_array_equal(p.index_put(x, (idx,), vals, accumulate=True).numpy(), want)
    assert want[0] == 2048


def test_index_put_broadcasts_values_and_takes_masks():
    x = np.zeros((4, 3), np.float32)
    got = p.index_put(x, (np.array([3, 0]),), 7.0).numpy()
    want = x.copy()
    want[[3, 0]] = 7.0
    np.testing.assert_array_equal(got, want)
    mask = np.array([True, False, True, True])
    got = p.index_put(x, (mask,), np.arange(3, dtype=np.float32)).numpy()
    want = x.copy()
    want[mask] = np.arange(3)
    np.testing.assert_array_equal(got, want)
    t = p.from_numpy(np.array([[1, 2]], np.int32))
    np.testing.assert_array_equal(p.index_put(x, (t, t), -1.0).numpy(), _numpy(torch.tensor(x).index_put((torch.tensor([[1, 2]]),) * 2, torch.tensor(-1.0))))


# x shape, dim, index shape, src shape
SCATTER_CASES = [((37,), 0, (20,), (25,)), ((5, 300), 1, (5, 270), (6, 290)), ((7, 45), 0, (9, 33), (9, 45)), ((3, 4, 5, 6), 1, (2, 3, 4, 5), (3, 3, 5, 6)),
                 ((4, 3, 70), -3, (6, 2, 70), (6, 3, 70))]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", [None, "add"])
@pytest.mark.parametrize("case", SCATTER_CASES, ids=str)
def test_scatter_matches_torch(case, reduce, dtype):
    if reduce and dtype == "bool_":
        pytest.skip("bool does not add")
    shape, dim, ishape, sshape = case
    rng = np.random.default_rng(len(shape) + dim)
    x, src = _values(rng, shape, dtype), _values(rng, sshape, dtype)
    index = rng.integers(0, shape[dim], size=ishape)
    tx, ti, ts = _torch(x), torch.tensor(index), _torch(src)
    want = _numpy(tx.scatter_add(dim, ti, ts) if reduce else tx.scatter(dim, ti, ts))
    got = p.scatter(x, dim, index, src, reduce=reduce).numpy()
    if dtype in ("float16", "bfloat16") and reduce:
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    else:
        np.testing.assert_array_equal(got, want)


def _gm_bytes(ex):
    tasks = ex.stats()["detail"]["Tasks"]
    return sum(t["Stats"]["GMBytesRead"] for t in tasks), sum(t["Stats"]["GMBytesWritten"] for t in tasks), len(tasks)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_donated_cache_index_put_moves_only_the_rows(dtype):
    """One program writes rows of a donated [T, heads, hd] cache at positions given
    when it runs: the device writes the rows' bytes only (not the cache), whatever the
    positions; without donation the cache is copied first, and info() says so."""
    rng = np.random.default_rng(4)
    T, heads, hd = 61, 3, 13
    npdt = getattr(p, dtype).numpy
    cache = _values(rng, (T, heads, hd), dtype)
    rows = _values(rng, (2, heads, hd), dtype)
    inputs = [([T, heads, hd], getattr(p, dtype)), ([2, heads, hd], getattr(p, dtype)), ([2], p.int32)]

    def step(c, r, pos):
        return p.index_put(c, (pos,), r)

    donated = p.compile(step, inputs=inputs, donate_argnums=0)
    copied = p.compile(step, inputs=inputs)
    item = np.dtype(npdt).itemsize
    for pos in ([0, 7], [60, -1], [5, 5]):  # -1 counts from the end; a duplicate: the last row wins
        want = cache.copy()
        for k, at in enumerate(pos):
            want[at] = rows[k]
        np.testing.assert_array_equal(donated.run(cache, rows, np.array(pos, np.int32)).numpy(), want)
        read, written, tasks = _gm_bytes(donated)
        assert tasks == 1 and written == rows.size * item
        assert read <= rows.size * item + 8 * 64  # the rows, and the positions once per block
        np.testing.assert_array_equal(copied.run(cache, rows, np.array(pos, np.int32)).numpy(), want)
        read, written, tasks = _gm_bytes(copied)
        assert tasks == 2 and written >= cache.size * item
    assert donated.info()["update_copies"] == []
    (copy,) = copied.info()["update_copies"]
    assert copy["bytes"] == cache.nbytes and "not donated" in copy["reason"]


def test_compiled_scatter_add_in_place_with_indices_known_at_run_time():
    x = np.zeros((6, 40), np.float32)
    src = np.ones((3, 40), np.float32)
    ex = p.compile(lambda x, i, s: p.scatter(x, 0, i, s, reduce="add"), inputs=[([6, 40], p.float32), ([3, 40], p.int32), ([3, 40], p.float32)],
                   donate_argnums=0)  # fmt: skip
    for seed in range(3):
        index = np.random.default_rng(seed).integers(0, 6, size=(3, 40)).astype(np.int32)
        want = torch.tensor(x).scatter_add(0, torch.tensor(index.astype(np.int64)), torch.tensor(src)).numpy()
        np.testing.assert_array_equal(ex.run(x, index, src).numpy(), want)
        read, written, _ = _gm_bytes(ex)
        assert written == src.nbytes < x.nbytes * 2  # atomic adds of the values, nothing else
    assert ex.info()["update_copies"] == []


def test_index_outside_its_axis_is_an_error_naming_the_line():
    x = np.zeros((8, 4), np.float32)
    with pytest.raises(p.PyptoIndexError, match=r"indices\[0\] holds 8, outside axis 0 of size 8") as e:
        p.index_put(x, (np.array([1, 8]),), 1.0)
    assert e.value.location.file == __file__
    with pytest.raises(p.PyptoIndexError, match="index holds -1, outside axis 1 of size 4"):
        p.scatter(x, 1, np.array([[0, -1]]), 1.0)
    ex = p.compile(lambda c, i: p.index_put(c, (i,), 2.0), inputs=[([8, 4], p.float32), ([2], p.int32)], donate_argnums=0)
    np.testing.assert_array_equal(ex.run(x, np.array([-8, 7], np.int32)).numpy()[[0, 7]], 2.0)
    for bad in (8, -9, 1 << 30):
        with pytest.raises(p.PyptoValueError, match=f"index_put: index {bad} is out of range for axis 0 of size 8") as e:
            ex.run(x, np.array([0, bad], np.int32))
        assert e.value.location.file == __file__


def test_bad_arguments_say_what_to_pass():
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(p.ShapeError, match="do not broadcast to the indexed shape"):
        p.index_put(x, (np.array([0, 1]),), np.ones((3, 3), np.float32))
    with pytest.raises(p.PyptoIndexError, match="3 index arrays for a tensor of 2 dimensions"):
        p.index_put(x, (np.array([0]),) * 3, 1.0)
    with pytest.raises(p.PyptoValueError, match="indices"):
        p.index_put(x, (np.array([0.5]),), 1.0)
    with pytest.raises(p.DTypeError, match="accumulate adds, which bool tensors do not"):
        p.index_put(np.zeros(3, np.bool_), (np.array([0]),), True, accumulate=True)
    with pytest.raises(p.ShapeError, match="index .* is larger than src"):
        p.scatter(x, 0, np.zeros((2, 3), np.int64), np.ones((1, 3), np.float32))
    with pytest.raises(p.PyptoValueError, match="reduce"):
        p.scatter(x, 0, np.zeros((2, 3), np.int64), 1.0, reduce="mul")


def test_gradients_match_torch():
    rng = np.random.default_rng(0)
    x, v, w = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (4, 3), (5, 3)))
    rows = np.array([4, 0, 2, 0])  # 0 twice: accumulated, both values get its gradient

    def f(x, v):
        return p.sum(p.exp(p.index_put(x * 2, (rows,), v, accumulate=True)) * w)

    gx, gv = p.grad(f, argnums=(0, 1))(x, v)
    tx, tv = torch.tensor(x, requires_grad=True), torch.tensor(v, requires_grad=True)
    (torch.exp((tx * 2).index_put((torch.tensor(rows),), tv, accumulate=True)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gv.numpy(), tv.grad.numpy(), rtol=1e-5, atol=1e-5)

    index = np.array([[1, 4, 0], [3, 2, 2]])  # distinct per column: the scatter's values all land

    def g(x, s):
        return p.sum(p.sin(p.scatter(x, 0, index, s * 3)) * w)

    gx, gs = p.grad(g, argnums=(0, 1))(x, v)  # src [4, 3] is larger than index [2, 3]: rows 2.. are never read
    tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(v[:2], requires_grad=True)  # torch's backward needs src of index's shape
    (torch.sin(tx.scatter(0, torch.tensor(index), ts * 3)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gs.numpy()[:2], ts.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gs.numpy()[2:], 0)


def test_overwritten_duplicate_gets_no_gradient():
    """Without accumulate a duplicate's earlier value never reaches the result, so its
    gradient is 0 (torch's rule gives every duplicate the gradient of the position)."""
    x = np.zeros((3, 2), np.float32)
    v = np.arange(6, dtype=np.float32).reshape(3, 2)
    gv = p.grad(lambda v: p.sum(p.index_put(x, (np.array([1, 2, 1]),), v) * 3.0))(v)
    np.testing.assert_array_equal(gv.numpy(), [[0, 0], [3, 3], [3, 3]])


def test_setitem_with_index_arrays_is_an_in_place_index_put():
    x = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    t = p.from_numpy(x)
    t[np.array([4, 1, -1])] = np.float32(9.5)  # numpy's rules: the indexed rows take the value
    want = x.copy()
    want[np.array([4, 1, -1])] = 9.5
    np.testing.assert_array_equal(t.numpy(), want)

    def f(c, i, v):
        c[i, :] = v  # positions the run gives: one compiled program serves them all
        return c

    ex = p.compile(f, inputs=[([6, 5], p.float32), ([2], p.int32), ([2, 5], p.float32)], donate_argnums=0)
    v = -np.ones((2, 5), np.float32)
    for i in ([0, 5], [3, 2]):
        want = x.copy()
        want[i] = v
        np.testing.assert_array_equal(ex.run(x, np.array(i, np.int32), v).numpy(), want)
        read, written, tasks = _gm_bytes(ex)
        assert tasks == 1 and written == v.nbytes
    assert ex.info()["update_copies"] == []
