"""The Tile level: grids of tiles, tile ops, p.TileConfig on ops, p.recommend_tile."""

import numpy as np
import pytest

import pypto as p
from conftest import assert_matmul_close, rand


@pytest.fixture(autouse=True)
def tiny():
    prev = p.get_device()
    p.set_device("tiny")
    yield
    p.set_device(prev)


def test_grid_covers_the_tensor_row_major_with_edge_tiles():
    x = rand((10, 7), p.float32)
    grid = p.tile(x, tile_shape=[4, 3])
    assert grid.shape == (3, 3) and len(grid) == 9
    seen = np.zeros_like(x)
    order = []
    for t in grid:
        order.append(t.index)
        r, c = t.offset
        assert t.offset == (t.index[0] * 4, t.index[1] * 3)
        assert t.tile_shape == (4, 3)
        np.testing.assert_array_equal(t.numpy(), x[r : r + 4, c : c + 3])
        seen[r : r + t.shape[0], c : c + t.shape[1]] += 1
    assert order == [(i, j) for i in range(3) for j in range(3)]
    assert (seen == 1).all()
    edge = grid[2, 2]
    assert edge.valid_shape == (2, 1) and edge.is_edge and not grid[0, 0].is_edge
    assert grid[-1, 0] is grid[2, 0]


def test_grid_index_errors_say_what_is_wrong():
    grid = p.tile(np.zeros((8, 8), np.float32), tile_shape=[4, None])
    assert grid.shape == (2, 1) and grid[1, 0].shape == (4, 8)
    with pytest.raises(IndexError, match="2 grid coordinates"):
        grid[1]
    with pytest.raises(IndexError, match="out of range for axis 0 of 2 tiles"):
        grid[2, 0]
    with pytest.raises(p.ShapeError, match="one size per axis"):
        p.tile(np.zeros((8, 8), np.float32), tile_shape=[4])


def test_tiles_from_a_tile_config_and_the_guides_whole_axes():
    x = rand((2, 6, 40), p.float32)
    grid = p.tile(x, p.TileConfig(shape=[2, 6, 16]))
    assert grid.shape == (1, 1, 3)
    out = p.tile_concat([p.tile_softmax(t, axis=-1) for t in grid], axis=-1)
    parts = [x[..., i : i + 16] for i in (0, 16, 32)]
    ref = np.concatenate([np.exp(q - q.max(-1, keepdims=True)) / np.exp(q - q.max(-1, keepdims=True)).sum(-1, keepdims=True) for q in parts], -1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def _tiled_matmul(a, b, tm, tn, tk):
    """C = A @ B from tiles: every output tile accumulates tile_matmul over the K tiles."""
    ga, gb = p.tile(a, tile_shape=[tm, tk]), p.tile(b, tile_shape=[tk, tn])
    rows = []
    for i in range(ga.shape[0]):
        row = []
        for j in range(gb.shape[1]):
            acc = None
            for k in range(ga.shape[1]):
                part = p.tile_matmul(p.cast(ga[i, k], p.float32), p.cast(gb[k, j], p.float32))
                acc = part if acc is None else p.tile_add(acc, part)
            row.append(acc)
        rows.append(p.tile_concat(row, axis=1))
    return p.tile_concat(rows, axis=0)


def test_k_accumulation_over_tiles_eagerly_and_compiled():
    a, b = rand((40, 50), p.float16, 1), rand((50, 36), p.float16, 2)
    assert_matmul_close(_tiled_matmul(a, b, 16, 16, 16).numpy(), a, b)
    f = p.compile(lambda x, y: _tiled_matmul(x, y, 16, 16, 16))
    assert_matmul_close(f.run(a, b).numpy(), a, b)
    a2, b2 = rand((20, 50), p.float16, 3), rand((50, 20), p.float16, 4)
    assert_matmul_close(f.run(a2, b2).numpy(), a2, b2)  # another shape: traced again, concretely


def test_tile_matmul_transposes_and_assemble_joins_a_2d_grid():
    a, b = rand((24, 32), p.float32, 5), rand((40, 32), p.float32, 6)
    grid = p.tile(b, tile_shape=[16, None])
    out = p.tile_concat([p.tile_matmul(a, t, transpose_b=True) for t in grid], axis=1)
    assert_matmul_close(out.numpy(), a, b, transpose_b=True)
    g2 = p.tile(a, tile_shape=[10, 12])
    np.testing.assert_array_equal(g2.assemble([p.tile_neg(t) for t in g2]).numpy(), -a)


def test_tile_ops_cover_the_op_families():
    x = rand((6, 40), p.float32, 7)
    for name, ref in [
        ("tile_exp", np.exp(x)), ("tile_relu", np.maximum(x, 0)), ("tile_abs", np.abs(x)),
        ("tile_sum", x.sum(-1)), ("tile_max", x.max(-1)), ("tile_mean", x.mean(-1)),
    ]:  # fmt: skip
        fn = getattr(p, name)
        got = fn(x, axis=-1) if name in ("tile_sum", "tile_max", "tile_mean") else fn(x)
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(p.tile_cast(x, p.float16).numpy(), x.astype(np.float16))
    np.testing.assert_array_equal(p.tile_maximum(x, 0.25).numpy(), np.maximum(x, np.float32(0.25)))
    assert p.tile_where(x > 0, x, 0.0).numpy().min() >= 0


def test_tile_config_reaches_the_kernel_and_the_dump_says_given():
    a, b = rand((64, 48), p.float16, 8), rand((48, 96), p.float16, 9)
    cfg = p.TileConfig(shape=[32, 32, 16], format=p.NZ)
    f = p.compile(lambda x, y: p.matmul(x, y, tile_config=cfg) * 2)
    assert_matmul_close(f.run(a, b).numpy() / 2, a, b)
    dump = f.dump()
    assert 'reason="given' in dump
    assert "tile_shape=[32,32,16]" in dump
    x = rand((9, 100), p.float32, 10)
    np.testing.assert_allclose(
        p.tile_softmax(x, axis=-1, tile_config=[2]).numpy(),
        np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
        rtol=1e-5,
    )


def test_tile_configs_that_do_not_fit_name_the_limit_and_the_line():
    a, b = rand((256, 256), p.float16), rand((256, 256), p.float16)
    with pytest.raises(p.CompileError) as e:
        p.matmul(a, b, tile_config=[256, 256, 64]).numpy()
    assert "L0A" in e.value.message and "does not fit chip tiny" in e.value.message
    assert e.value.get_detailed_info().location.file.endswith("test_tile.py")
    with pytest.raises(p.CompileError, match="UB"):
        p.tile_add(rand((64, 512), p.float32), 1.0, tile_config=[64, 512]).numpy()
    with pytest.raises(p.CompileError, match="vector cores.*use format ND"):
        p.tile_exp(rand((8, 8), p.float32), tile_config=p.TileConfig(shape=[8, 8], format="NZ")).numpy()
    with pytest.raises(ValueError, match="ND or NZ"):
        p.TileConfig(shape=[8, 8], format="ZZ")
    with pytest.raises(ValueError, match="positive"):
        p.TileConfig(shape=[0, 8])


def test_recommend_tile_gives_the_searched_tiles_with_their_estimates():
    a, b = rand((100, 70), p.float16), rand((70, 130), p.float16)
    (mm,) = p.recommend_tile(p.matmul, [a, b])
    assert mm.kind == "matmul" and mm.problem == [1, 100, 130, 70]
    assert mm.reason.startswith("fastest of") and mm.estimated_ms > 0
    # starting from the recommendation gives the same tile, now "given"
    (again,) = p.recommend_tile(lambda x, y: p.matmul(x, y, tile_config=mm.config), [a, b])
    assert again.tile == mm.tile and again.reason.startswith("given")
    assert again.estimated_ms == pytest.approx(mm.estimated_ms)
    assert mm.measured_ms is None
    choices = p.recommend_tile(lambda x: p.softmax(x * 2, axis=-1), [((64, 100), p.float32)])
    assert [c.kind for c in choices] == ["rows"] and choices[0].estimated_ms > 0
    choices = p.recommend_tile(lambda x: p.exp(x), [((64, 100), p.float32)])
    assert [c.kind for c in choices] == ["elementwise"] and choices[0].estimated_ms is None


def test_without_the_tile_search_the_fixed_rules_tile():
    a, b = rand((100, 70), p.float16), rand((70, 130), p.float16)
    (mm,) = p.recommend_tile(p.matmul, [a, b], config=p.CompileConfig(disable_passes=("search-tiles",)))
    assert mm.reason.startswith("fixed rule")


def test_recommend_tile_measures_each_op_when_asked():
    a, b = rand((64, 48), p.float16), rand((48, 32), p.float16)
    # The plain runtime: the ops' tasks run one after another, so their times add up.
    plain = p.CompileConfig(runtime_features=False)
    f = p.compile(lambda x, y: p.softmax(p.matmul(x, y), axis=-1), plain)
    f.run(a, b)
    choices = p.recommend_tile(lambda x, y: p.softmax(p.matmul(x, y), axis=-1), [a, b], measure=True, config=plain)
    assert [c.kind for c in choices] == ["matmul", "rows"]
    assert all(c.measured_ms > 0 for c in choices)
    assert sum(c.measured_ms for c in choices) == pytest.approx(f.last_time_ms)
    (add,) = p.recommend_tile("add", [((8, 64), p.float32), ((8, 64), p.float32)])
    assert add.kind == "elementwise" and len(add.tile) == 2


def test_tiles_under_a_symbolic_trace_fall_back_to_concrete_shapes():
    f = p.compile(lambda x: p.tile_concat([p.tile_mul(t, 2.0) for t in p.tile(x, tile_shape=[None, 8])], axis=1))
    for n in (20, 33):
        x = rand((3, n), p.float32, n)
        np.testing.assert_array_equal(f.run(x).numpy(), x * 2)
    with pytest.raises(p.SymbolicShapeError, match="concrete"):
        p.compile(lambda x: p.tile(x, tile_shape=[8])[0], inputs=[p.Tensor([p.symbol("n")], p.float32)])


def test_the_guides_tile_sample_under_symbolic_batch_and_sequence():
    batch, seq_len = p.symbol("batch"), p.symbol("seq_len")
    w = rand((256, 64), p.float32, 11)

    def layer(x):
        tiles = p.tile(x, tile_shape=[batch, seq_len, 256])  # symbolic axes stay whole
        results = []
        for tile in tiles:
            t = p.tile_matmul(tile, w)
            t = p.tile_softmax(t, axis=-1)
            results.append(t)
        return p.tile_concat(results, axis=-1)

    f = p.compile(layer, inputs=[p.Tensor([batch, seq_len, 1024], dtype=p.float32)])
    assert f.is_symbolic
    for shape in [(1, 8, 1024), (2, 5, 1024)]:
        x = rand(shape, p.float32, shape[1])
        s = np.stack([x[..., i * 256 : (i + 1) * 256] @ w for i in range(4)])
        e = np.exp(s - s.max(-1, keepdims=True))
        want = np.concatenate(list(e / e.sum(-1, keepdims=True)), -1)
        np.testing.assert_allclose(f.run(x).numpy(), want, rtol=1e-4, atol=1e-5)


def test_recommend_tile_by_op_name_and_a_given_row_tile():
    (sm,) = p.recommend_tile("softmax", [((50, 300), p.float32)], {"axis": -1})
    assert sm.kind == "rows" and not sm.reason.startswith("given")
    rows = max(1, sm.tile[0] // 2)
    (given,) = p.recommend_tile(lambda x: p.tile_softmax(x, axis=-1, tile_config=[rows]), [((50, 300), p.float32)])
    assert given.tile[0] == rows and given.reason.startswith(f"given [{rows}]")
    (same,) = p.recommend_tile(lambda x: p.tile_softmax(x, axis=-1, tile_config=sm.config), [((50, 300), p.float32)])
    assert same.tile == sm.tile and same.reason.startswith("given")
    with pytest.raises(TypeError, match="attrs go with an op name"):
        p.recommend_tile(p.softmax, [((4, 4), p.float32)], {"axis": -1})
