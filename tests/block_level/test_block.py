"""The block level: kernels traced from Python into PTO programs, run on the reference
device (the ISA's reference interpreter) and on the simulated chips, mixed with
tensor-level code; and the errors specific to this level, at the kernel's line."""

import inspect

import numpy as np
import pytest

import pypto as p

DEVICES = ["reference", "tiny"]


@pytest.fixture(autouse=True)
def _restore_device():
    before = p.get_device()
    yield
    p.set_device(before)


def line_of(fn, text):
    """The line number in fn's file of the first line of fn containing text."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


@p.block_kernel(grid=2, out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def affine(x, y):
    rows = x.shape[0] // 2
    base = p.block_idx() * rows
    for i in p.range(rows // 8):
        r = base + i * 8
        t = p.load(x[r:r + 8, :])
        p.store(y[r:r + 8, :], p.maximum(t * 2.0 - 1.0, 0.5))


@pytest.mark.parametrize("device", DEVICES)
def test_vector_kernel_with_a_device_loop_matches_numpy(device):
    p.set_device(device)
    x = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    got = p.call_kernel(affine, x).numpy()
    np.testing.assert_array_equal(got, np.maximum(x * 2 - 1, 0.5))


def test_a_device_loop_is_one_loop_over_register_offsets():
    text = affine.programs(np.zeros((64, 32), np.float32))
    first = text.split("end\n")[0]
    assert first.count("loop %") == 1 and "endloop" in first
    assert "tload %t" in first and "%x[%off" in first  # the view moves with the counter
    assert text.count("kernel affine_b") == 2


@p.block_kernel(grid=2, out_shape=lambda x, w: (x.shape[0], w.shape[1]), out_dtype=lambda x, w: x.dtype)
def rowsoftmax_bias(x, w, y):
    """softmax(x + w[0]) by rows, with row and column broadcasts and reductions."""
    rows = x.shape[0] // 2
    base = p.block_idx() * rows
    bias = p.load(w[0:1, :])
    for i in range(rows // 8):  # Python's range unrolls
        r = base + i * 8
        t = p.load(x[r:r + 8, :]) + bias
        e = p.exp(t - t.max(axis=-1))
        p.store(y[r:r + 8, :], e / p.sum(e, axis=-1))


@pytest.mark.parametrize("device", DEVICES)
def test_vector_kernel_broadcasts_and_reduces(device):
    p.set_device(device)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = rng.standard_normal((1, 64)).astype(np.float32)
    z = x + w
    e = np.exp(z - z.max(-1, keepdims=True))
    got = p.call_kernel(rowsoftmax_bias, x, w).numpy()
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def gemm(grid, tile):
    @p.block_kernel(grid=grid, core="cube", out_shape=lambda a, b: (a.shape[0], b.shape[1]), out_dtype=lambda a, b: a.dtype)
    def kernel(a, b, c):
        tiles_n = b.shape[1] // tile
        i, j = p.block_idx() // tiles_n * tile, p.block_idx() % tiles_n * tile
        acc = p.zeros([tile, tile])
        for k in p.range(a.shape[1] // tile):
            acc += p.load(a[i:i + tile, k * tile:(k + 1) * tile]) * p.load(b[k * tile:(k + 1) * tile, j:j + tile])  # the guide's tile product
        p.store(c[i:i + tile, j:j + tile], acc)

    return kernel


@pytest.mark.parametrize("device", DEVICES)
def test_registered_cube_kernel_inside_a_compiled_tensor_program(device):
    p.set_device(device)
    p.register_kernel("test_gemm", gemm(grid=4, tile=32))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 64)).astype(np.float16)

    def model(a, b):
        return p.relu(p.call_kernel("test_gemm", a, b) * 0.5) + p.matmul(a, b)

    got = p.compile(model).run(a, b).numpy().astype(np.float32)
    ab = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got, np.maximum(ab * 0.5, 0) + ab, rtol=2e-3, atol=2e-2)
    # eager too, with the output given at the call
    got = p.call_kernel("test_gemm", a, b, out_shapes=[(64, 64)], out_dtypes=[p.float32]).numpy()
    np.testing.assert_allclose(got, ab, rtol=1e-5, atol=1e-4)


def mixed(grid):
    @p.block_kernel(grid=grid, core="mixed", out_shape=lambda a, b: (a.shape[0], b.shape[1]), out_dtype=lambda a, b: p.float32)
    def kernel(a, b, c):
        i = p.block_idx() * 16
        if p.is_cube():
            for h in range(2):  # two 16-row halves, one per vector core
                acc = p.zeros([16, 32])
                acc += p.matmul(p.load(a[i:i + 16, :]), p.load(b[:, h * 32:(h + 1) * 32]))
                p.push(acc, queue=h)
        else:
            h = p.subblock_idx()
            y = p.pop([16, 32], p.float32, queue=h)
            p.store(c[i:i + 16, h * 32:(h + 1) * 32], p.exp(y * 0.125))

    return kernel


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_kernel_passes_accumulators_to_the_vector_cores(device):
    p.set_device(device)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    got = p.call_kernel(mixed(2), a, b).numpy()
    want = np.exp((a.astype(np.float32) @ b.astype(np.float32)) * 0.125)
    np.testing.assert_allclose(got, want, rtol=1e-4)


def attention_like(grid, query_blocks, looped, T=64):
    """A mixed kernel that hands tiles both ways, as flash attention does: the cube
    computes s = q @ k and pushes it, the vector core pops it, pushes exp(s / 8) back as
    f16, the cube pops that into L1 for the second matmul with v and pushes the result,
    which the vector core sums over the key blocks; each block walks query_blocks query
    blocks, in a p.range loop (looped) or unrolled."""

    @p.block_kernel(grid=grid, core="mixed", vectors=2, out_shape=lambda q, k, v: q.shape, out_dtype=lambda q, k, v: p.float32)
    def kernel(q, k, v, o):
        for qb in (p.range(query_blocks) if looped else range(query_blocks)):
            i = (p.block_idx() * query_blocks + qb) * T
            if p.is_cube():
                ql = p.load(q[i:i + T, :])
                for j in range(2):
                    s = p.zeros([T, T])
                    s += p.matmul(ql, p.load(k[:, j * T:(j + 1) * T]))
                    p.push(s, queue=0)
                    e = p.pop([T, T], p.float16, queue=2)
                    acc = p.zeros([T, T])
                    acc += p.matmul(e, p.load(v[j * T:(j + 1) * T, :]))
                    p.push(acc, queue=1)
            elif p.subblock_idx() == 0:
                total = p.zeros([T, T], p.float32)  # dead once the first sum is taken
                for j in range(2):
                    s = p.pop([T, T], p.float32, queue=0)
                    p.push(p.exp(s * 0.125).astype(p.float16), queue=2)
                    y = p.pop([T, T], p.float32, queue=1)
                    total = y if j == 0 else total + y
                p.store(o[i:i + T, :], total)

    return kernel


@pytest.mark.parametrize("grid,query_blocks,looped", [(24, 1, False), (25, 1, False), (4, 3, True), (25, 2, True)])
def test_mixed_kernel_handing_tiles_both_ways_runs_on_any_grid(grid, query_blocks, looped):
    """25 blocks on a2's 24 AI cores, or a loop over query blocks inside a block: the
    flags the backend inserts order every pop after the reads of the tile it
    overwrites (a priming set ahead of the loop once shared an event id with a sync
    it spans, and a pop took the wrong set: a race reported on the device)."""
    p.set_device("a2")
    T = 64
    rng = np.random.default_rng(6)
    n = grid * query_blocks * T
    q = (rng.standard_normal((n, T)) * 0.1).astype(np.float16)
    k = (rng.standard_normal((T, 2 * T)) * 0.1).astype(np.float16)
    v = (rng.standard_normal((2 * T, T)) * 0.1).astype(np.float16)
    got = p.call_kernel(attention_like(grid, query_blocks, looped, T), q, k, v).numpy()
    f32 = np.float32
    e = np.exp((q.astype(f32) @ k.astype(f32)) * 0.125).astype(np.float16).astype(f32)
    want = e[:, :T] @ v[:T].astype(f32) + e[:, T:] @ v[T:].astype(f32)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)


def test_grid_larger_than_the_chip_runs_blocks_in_turn():
    @p.block_kernel(grid=lambda x: x.shape[0] // 8, out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
    def plus_block(x, y):
        r = p.block_idx() * 8
        p.store(y[r:r + 8, :], p.load(x[r:r + 8, :]) + float(p.block_idx()))

    p.set_device("tiny")  # 4 vector cores for 16 blocks
    x = np.random.default_rng(5).standard_normal((128, 32)).astype(np.float32)
    got = p.call_kernel(plus_block, x).numpy()
    np.testing.assert_array_equal(got, x + np.repeat(np.arange(16, dtype=np.float32), 8)[:, None])


def test_dead_tiles_lend_their_buffers_to_new_ones():
    @p.block_kernel(out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
    def softmax_rows(x, y):
        for i in p.range(x.shape[0] // 16):
            t = p.load(x[i * 16:(i + 1) * 16, :])  # 8 KB each; tiny's UB is 32 KB
            e = p.exp(t - t.max(axis=-1))
            p.store(y[i * 16:(i + 1) * 16, :], e / e.sum(axis=-1))

    p.set_device("tiny")
    x = np.random.default_rng(6).standard_normal((64, 128)).astype(np.float32)
    text = softmax_rows.programs(x)
    assert text.count("tile %") < 10  # 16 values, most in reused declarations
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(p.call_kernel(softmax_rows, x).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_windows_of_an_l1_tile_feed_several_matmuls():
    @p.block_kernel(core="cube", out_shape=(32, 32), out_dtype=p.float32)
    def staged(a, b, c):
        am, bm = p.load(a[:, :]), p.load(b[:, :])  # one load each, K = 64
        acc = p.zeros([32, 32])
        for s in range(0, 64, 16):
            acc += p.matmul(am[:, s:s + 16], bm[s:s + 16, :])
        p.store(c[:, :], acc)

    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    assert staged.programs(a, b).count("textract") == 8
    for device in DEVICES:
        p.set_device(device)
        got = p.call_kernel(staged, a, b).numpy()
        np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-4)

    @p.block_kernel(core="cube", out_shape=(32, 32), out_dtype=p.float32)
    def misaligned(a, b, c):
        am = p.load(a[:, :])
        p.store(c[:, :], p.matmul(am[:, 8:24], p.load(b[0:16, :])))

    with pytest.raises(p.ShapeError, match="multiples of 16") as e:
        p.call_kernel(misaligned, a, b)
    assert e.value.location.line == line_of(misaligned.fn, "am[:, 8:24]")


# Errors, each at the kernel's line.


def test_vector_op_on_a_cube_tile_names_the_line():
    @p.block_kernel(core="cube", out_shape=(16, 16), out_dtype=p.float16)
    def bad(x, y):
        t = p.load(x[:, :])
        p.store(y[:, :], t + 1)  # vector work on a cube core

    with pytest.raises(p.CompileError, match="runs on a vector core's unit.*mat tile of a cube core") as e:
        p.call_kernel(bad, np.zeros((16, 16), np.float16))
    assert e.value.location.line == line_of(bad.fn, "t + 1")


def test_matmul_on_a_vector_core_names_the_line():
    @p.block_kernel(out_shape=(16, 16), out_dtype=p.float32)
    def bad(x, y):
        t = p.load(x[:, :])
        p.store(y[:, :], p.matmul(t, t))

    with pytest.raises(p.CompileError, match="runs on the cube unit") as e:
        p.call_kernel(bad, np.zeros((16, 16), np.float32))
    assert e.value.location.line == line_of(bad.fn, "p.matmul")


def test_mismatched_shapes_and_dtypes_name_the_line():
    @p.block_kernel(out_shape=(8, 32), out_dtype=p.float32)
    def shapes(x, y):
        p.store(y[:, :], p.load(x[0:8, :]) + p.load(x[0:4, :]))

    with pytest.raises(p.ShapeError, match=r"shapes \[8, 32\] and \[4, 32\] do not match") as e:
        p.call_kernel(shapes, np.zeros((8, 32), np.float32))
    assert e.value.location.line == line_of(shapes.fn, "p.store")

    @p.block_kernel(out_shape=(8, 32), out_dtype=p.float16)
    def dtypes(x, y):
        p.store(y[:, :], p.load(x[:, :]))

    with pytest.raises(p.DTypeError, match="y holds float16, the tile float32") as e:
        p.call_kernel(dtypes, np.zeros((8, 32), np.float32))
    assert "astype(p.float16)" in str(e.value)
    assert e.value.location.line == line_of(dtypes.fn, "p.store")


def test_store_outside_the_tensor_names_the_line_and_the_bound():
    @p.block_kernel(out_shape=(64, 32), out_dtype=p.float32)
    def outside(x, y):
        for i in p.range(8):
            r = i * 9  # the last iteration reaches row 63 + 9
            p.store(y[r:r + 9, :], p.load(x[0:9, :]))

    with pytest.raises(p.ShapeError, match=r"along axis 0 reaches \[9, 72\).*outside the tensor's 64") as e:
        p.call_kernel(outside, np.zeros((64, 32), np.float32))
    assert e.value.location.line == line_of(outside.fn, "p.store")


def test_tile_too_big_for_the_buffer_names_the_line_and_the_capacity():
    @p.block_kernel(out_shape=(128, 128), out_dtype=p.float32)
    def big(x, y):
        t = p.load(x[:, :])  # 64 KB
        p.store(y[:, :], t)

    x = np.zeros((128, 128), np.float32)
    p.set_device("reference")
    p.call_kernel(big, x).numpy()  # the reference has no buffers
    p.set_device("tiny")
    with pytest.raises(p.CompileError, match="tile needs 65536 bytes, the vec buffer holds 32768") as e:
        p.call_kernel(big, x).numpy()
    assert e.value.location.line == line_of(big.fn, "p.load")
    assert "vec 32768 bytes" in str(e.value)


def test_value_from_inside_a_loop_used_after_it_is_an_error():
    @p.block_kernel(out_shape=(8, 32), out_dtype=p.float32)
    def carried(x, y):
        acc = p.zeros([8, 32])
        for i in p.range(4):
            acc = acc + p.load(x[i * 8:(i + 1) * 8, :])  # rebinds: not carried
        p.store(y[:, :], acc)

    with pytest.raises(p.CompileError, match="computed inside a p.range loop and is used after it") as e:
        p.call_kernel(carried, np.zeros((32, 32), np.float32))
    assert "acc += x" in str(e.value)
    assert e.value.location.line == line_of(carried.fn, "p.store")


def test_unknown_kernel_and_missing_output():
    with pytest.raises(p.PyptoValueError, match="no kernel is registered as 'nope'"):
        p.call_kernel("nope", np.zeros(4, np.float32))

    @p.block_kernel
    def k(x, y):
        pass

    with pytest.raises(p.PyptoValueError, match="output's shape is unknown"):
        p.call_kernel(k, np.zeros((8, 8), np.float32))


def test_block_operations_outside_a_kernel():
    with pytest.raises(p.CompileError, match="only inside a kernel"):
        p.block_idx()
    assert p.zeros([2, 3]).shape == (2, 3)  # the tensor-level function, outside kernels
