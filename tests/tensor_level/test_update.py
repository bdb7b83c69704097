"""Writing into tensors against numpy's own indexing (and torch's scatter / index_put)."""

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT


def test_setitem_is_numpy_indexing_and_functional():
    x = np.arange(60, dtype=np.float32).reshape(5, 12)
    t = p.from_numpy(x)
    before = t * 1  # computed from t before the update: keeps the old values
    ref = x.copy()
    for key, val in [
        ((slice(1, 4), slice(None, None, 3)), -1.0),
        ((2,), np.arange(12, dtype=np.float32)),
        (([0, 4], [11, 0]), 100.0),
        ((Ellipsis, -1), np.float32(7)),
        ((slice(None, None, -2), 5), np.array([1, 2, 3], np.float32)),
    ]:
        t[key] = val
        ref[key] = val
        np.testing.assert_array_equal(t.numpy(), ref)
    mask = ref > 50
    t[p.from_numpy(mask)] = 0.5
    ref[mask] = 0.5
    np.testing.assert_array_equal(t.numpy(), ref)
    np.testing.assert_array_equal(before.numpy(), x)
    with pytest.raises(p.PyptoIndexError):
        t[7, 0] = 1.0
    with pytest.raises(p.ShapeError, match="does not fit"):
        t[0:2] = np.ones((3, 12), np.float32)


@pytest.mark.parametrize("device", ["reference", "a2"])
def test_slice_update_static_and_dynamic_starts(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 8, 3)).astype(np.float16)
    u = rng.standard_normal((2, 3, 3)).astype(np.float16)
    p.set_device(device)
    try:
        for starts in [(1, 4), (4, 5), (0, 0)]:
            want = x.copy()
            want[starts[0]:starts[0] + 2, starts[1]:starts[1] + 3] = u
            np.testing.assert_array_equal(p.slice_update(x, u, list(starts)).numpy(), want)
            dyn = [p.from_numpy(np.array(s, np.int32)) for s in starts]
            np.testing.assert_array_equal(p.slice_update(x, u, dyn).numpy(), want)
        # a compiled program with the start as an input: one program for every position
        ex = p.compile(lambda c, r, i: p.slice_update(c, r, [i], axes=[1]), inputs=[([6, 8, 3], p.float16), ([6, 1, 3], p.float16), ([], p.int32)])
        row = rng.standard_normal((6, 1, 3)).astype(np.float16)
        for i in range(8):
            want = x.copy()
            want[:, i:i + 1] = row
            np.testing.assert_array_equal(ex.run(x, row, np.array(i, np.int32)).numpy(), want)
    finally:
        p.set_device("a2")


def test_slice_update_start_outside_is_an_error_naming_the_line():
    x, u = np.zeros((6, 8), np.float32), np.ones((2, 3), np.float32)
    for starts in [(5, 0), (-1, 0), (0, 6)]:
        with pytest.raises(p.PyptoIndexError, match=r"outside the axis of size \d") as e:
            p.slice_update(x, u, list(starts))
        assert e.value.location.file == __file__
    ex = p.compile(lambda c, r, i: p.slice_update(c, r, [i], axes=[0]), inputs=[([6, 8], p.float32), ([2, 8], p.float32), ([], p.int32)],
                   donate_argnums=0)  # fmt: skip
    for bad in (5, -1, 1 << 20):
        with pytest.raises(p.PyptoValueError, match="start %d on axis 0 puts a block of 2 outside the axis of size 6" % bad) as e:
            ex.run(x, np.ones((2, 8), np.float32), np.array(bad, np.int32))
        assert e.value.location.file == __file__
    with pytest.raises(p.PyptoTypeError, match="donate_argnums"):
        p.compile(lambda c: c, donate_argnums="0")


def _gm_bytes(ex):
    tasks = ex.stats()["detail"]["Tasks"]
    return sum(t["Stats"]["GMBytesRead"] for t in tasks), sum(t["Stats"]["GMBytesWritten"] for t in tasks), len(tasks)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int32", "bool_"])
def test_donated_update_moves_only_the_update(dtype):
    """A donated cache is written where it lives: the device stores the update's bytes
    only (the simulator's GM counters), whatever the cache's size; without donation
    the cache is copied first, and info() says so."""
    rng = np.random.default_rng(1)
    heads, T, hd = 3, 37, 13  # odd sizes: edge tiles, unaligned rows
    npdt = getattr(p, dtype).numpy
    cache = (rng.standard_normal((heads, T, hd)) * 4).astype(npdt)
    rows = (rng.standard_normal((heads, 2, hd)) * 4).astype(npdt)
    inputs = [([heads, T, hd], getattr(p, dtype)), ([heads, 2, hd], getattr(p, dtype)), ([], p.int32)]

    def step(c, r, i):
        return p.slice_update(c, r, [i], axes=[1])

    donated = p.compile(step, inputs=inputs, donate_argnums=(0,))
    copied = p.compile(step, inputs=inputs)
    item = npdt.itemsize
    for pos in (0, 17, T - 2):
        want = cache.copy()
        want[:, pos:pos + 2] = rows
        np.testing.assert_array_equal(donated.run(cache, rows, np.array(pos, np.int32)).numpy(), want)
        read, written, tasks = _gm_bytes(donated)
        assert tasks == 1 and written == rows.size * item
        assert read <= rows.size * item + 4 * 64  # the rows, and each block's 4-byte start
        np.testing.assert_array_equal(copied.run(cache, rows, np.array(pos, np.int32)).numpy(), want)
        read, written, tasks = _gm_bytes(copied)
        assert tasks == 2 and written >= cache.size * item + rows.size * item
    np.testing.assert_array_equal(cache, cache.copy())  # the caller's array is never modified
    assert donated.info()["update_copies"] == [] and donated.info()["donated"] == [0]
    (copy,) = copied.info()["update_copies"]
    assert copy["bytes"] == cache.nbytes and "not donated" in copy["reason"] and copy["where"].startswith(__file__ + ":")


def test_setitem_in_a_compiled_program_is_an_in_place_update():
    x = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)

    def f(c, v, i):
        c[1:3, i] = v  # a column block at a position the run gives: p.slice_update
        c[4] = -1.0
        return c

    ex = p.compile(f, inputs=[([5, 7], p.float32), ([2], p.float32), ([], p.int32)], donate_argnums=0)
    for i in (0, 6):
        want = x.copy()
        want[1:3, i] = [10.0, 20.0]
        want[4] = -1.0
        np.testing.assert_array_equal(ex.run(x, np.array([10.0, 20.0], np.float32), np.array(i, np.int32)).numpy(), want)
        read, written, tasks = _gm_bytes(ex)
        # two in-place updates (and the broadcast of -1.0 to a row), nothing copied
        assert written <= (2 + 7 + 7) * 4 < x.nbytes
    assert ex.info()["update_copies"] == []


def test_index_put_and_accumulate():
    x = np.zeros((4, 5), np.float32)
    idx = (np.array([0, 2, 0, 3]), np.array([1, 4, 1, 0]))
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    got = p.index_put(x, idx, vals, accumulate=True).numpy()
    want = x.copy()
    np.add.at(want, idx, vals)
    np.testing.assert_array_equal(got, want)
    got = p.index_put(x, (np.array([1, 3]),), np.ones((2, 5), np.float32) * 9).numpy()
    want = x.copy()
    want[[1, 3]] = 9
    np.testing.assert_array_equal(got, want)


def test_scatter_matches_torch_semantics():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]])
    src = -np.arange(10, dtype=np.float32).reshape(2, 5)
    want = x.copy()
    for i in range(2):
        for j in range(5):
            want[idx[i, j], j] = src[i, j]
    np.testing.assert_array_equal(p.scatter(x, 0, idx, src).numpy(), want)
    want = x.copy()
    for i in range(2):
        for j in range(2):
            want[i, idx[i, j]] = 5.0
    np.testing.assert_array_equal(p.scatter(x, 1, idx[:, :2], 5.0).numpy(), want)
    with pytest.raises(p.PyptoIndexError, match="outside axis 0"):
        p.scatter(x, 0, idx + 3, src)


def test_decode_example_matches_numpy_token_for_token_with_one_program():
    import importlib.util
    import pathlib

    path = ROOT / "examples" / "decode.py"
    spec = importlib.util.spec_from_file_location("decode_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    before = p.cache_info()["compiles"]
    res = mod.main(["--tokens", "12", "--layers", "1"])
    assert res["agree"] == res["tokens"] == 12
    assert len(set(res["generated"])) > 3  # not a degenerate repetition
    assert p.cache_info()["compiles"] - before <= 2  # the step program (and at most one helper), not one per position
    assert res["ms_per_token"] > 0
    # The donated caches are updated in place: per step, each of the 2 caches moves its
    # [heads, 1, hd] f32 row in and out (and 4 bytes of position per block), not 96 rows.
    assert res["update_copies"] == 0
    row = 4 * 16 * 4
    assert 2 * 2 * row <= res["update_bytes_per_step"] <= 2 * (2 * row + 4 * 64)


def test_slice_update_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, u, w = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (2, 3), (4, 6)))

    def f(x, u, s):
        return p.sum(p.exp(p.slice_update(x, u * 2, [s, 2])) * w)

    gx, gu = p.grad(f, argnums=(0, 1))(x, u, p.from_numpy(np.array(1, np.int32)))
    tx, tu = torch.tensor(x, requires_grad=True), torch.tensor(u, requires_grad=True)
    y = tx.clone()
    y[1:3, 2:5] = tu * 2
    (torch.exp(y) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gu.numpy(), tu.grad.numpy(), rtol=1e-6, atol=1e-6)
