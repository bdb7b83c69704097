"""The graph debugger: breakpoints, steps, and every node's values checked against numpy."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT


def block(x, w):
    h = p.matmul(x, w)
    h = p.relu(h) + 1.0
    return p.softmax(h, axis=-1)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((32, 64)) / 8).astype(np.float16), (rng.standard_normal((64, 48)) / 8).astype(np.float16)


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_every_node_is_observable_and_right():
    x, w = _inputs()
    dbg = p.compile(block).debug(x, w)
    assert dbg.where() is None and not dbg.finished
    ops = []
    while (stop := dbg.step()) is not None:
        ops.append(stop.op)
        ins, (out,) = dbg.inputs(), dbg.outputs()
        f32 = [a.astype(np.float32) for a in ins]
        if stop.op == "matmul":
            np.testing.assert_allclose(out.astype(np.float32), f32[0] @ f32[1], rtol=2e-3, atol=2e-3)
        elif stop.op == "relu":
            np.testing.assert_array_equal(out, np.maximum(ins[0], 0))
        elif stop.op == "add":
            np.testing.assert_array_equal(out, (f32[0] + f32[1]).astype(np.float16))
        elif stop.op == "softmax":
            np.testing.assert_allclose(out.astype(np.float32), _softmax(f32[0]), rtol=5e-3, atol=1e-3)
        assert out.shape == (32, 48)
    assert ops == ["matmul", "relu", "add", "softmax"]
    assert dbg.finished
    np.testing.assert_array_equal(dbg.finish().numpy(), dbg.value("%6"))


def test_breakpoints_by_name_op_and_predicate():
    x, w = _inputs(1)
    ex = p.compile(block)
    dbg = ex.debug(x, w)
    assert "%5 = add(%4, %c0)" in dbg.graph()
    dbg.break_at("%5")
    dbg.break_at(lambda n: n.op == "softmax")
    first = dbg.continue_()
    assert (first.node, first.op, first.reason) == ("%5", "add", "breakpoint (%5)")
    assert first.file == __file__ and first.line == block.__code__.co_firstlineno + 2
    assert dbg.where().node == "%5"
    np.testing.assert_array_equal(dbg.value("%4"), np.maximum(dbg.value("%3"), 0))
    second = dbg.continue_()
    assert second.op == "softmax" and "<lambda>" in second.reason
    assert dbg.continue_() is None and dbg.finished
    full = ex.run(x, w).numpy().astype(np.float32)
    np.testing.assert_allclose(dbg.finish().numpy().astype(np.float32), full, rtol=2e-3, atol=1e-3)

    dbg2 = ex.debug(x, w)
    n = dbg2.break_at("relu")
    assert dbg2.breakpoints == {n: "op relu"}
    dbg2.clear(n)
    assert dbg2.continue_() is None


def test_tuple_results_and_inputs_returned_as_they_are():
    def two(a, b):
        return a * b, a

    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 2, np.float32)
    dbg = p.compile(two).debug(a, b)
    prod, same = dbg.finish()
    np.testing.assert_array_equal(prod.numpy(), a * b)
    np.testing.assert_array_equal(same.numpy(), a)


def test_debugger_errors_are_clear():
    x, w = _inputs()
    dbg = p.compile(block).debug(x, w)
    with pytest.raises(ValueError, match=r"no node %9") as e:
        dbg.break_at("%9")
    assert "%3" in str(e.value.get_detailed_info().suggestions)
    with pytest.raises(ValueError, match="no node of op 'conv'"):
        dbg.break_at("conv")
    with pytest.raises(TypeError, match="target"):
        dbg.break_at(3)
    with pytest.raises(ValueError, match="no node has run yet"):
        dbg.inputs()
    with pytest.raises(ValueError, match="has not run yet"):
        dbg.value("%4")
    with pytest.raises(p.ShapeError):
        p.compile(block).debug(x, x)


def test_debugger_under_pdb(tmp_path):
    script = tmp_path / "dbg_script.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, pypto as p
        def f(x):
            return p.exp(x) + 1.0
        dbg = p.compile(f).debug(np.zeros((4, 4), np.float32))
        dbg.break_at("exp")
        stop = dbg.continue_()
        print("stopped", stop.op, dbg.outputs()[0][0, 0])
        print("result", dbg.finish().numpy()[0, 0])
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-m", "pdb", "-c", "continue", "-c", "quit", str(script)],
                       capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert "stopped exp 1.0" in r.stdout and "result 2.0" in r.stdout, r.stdout + r.stderr


def test_executor_and_debugger_show_in_notebooks():
    x, w = _inputs()
    ex = p.compile(block)
    assert "has not" not in ex._repr_html_() and "<pre>" not in ex._repr_html_()
    ex.run(x, w)
    page = ex._repr_html_()
    assert "<pre>" in page and "matmul(%in0, %in1)" in page and "us simulated in 2 task(s)" in page
    dbg = ex.debug(x, w)
    dbg.break_at("relu")
    dbg.step()
    rows = dbg._repr_html_().split("<tr>")[2:]
    assert len(rows) == 4 and "&#10003;" in rows[0] and "&#9654;" in rows[1] and "&#9679;" in rows[1]


# --- block level ---------------------------------------------------------------------------


def _mm_relu(x, w):
    return p.relu(p.matmul(x, w))


def test_instruction_breakpoint_shows_tiles_as_the_kernel_computed_them():
    rng = np.random.default_rng(3)
    x = rng.random((64, 128)).astype(np.float16)
    w = rng.random((128, 64)).astype(np.float16)
    dbg = p.compile(_mm_relu).debug(x, w)
    dbg.break_at_instruction(kernel="matmul_0", index=4, block=1)  # tmatmul, the 5th PTO instruction
    stop = dbg.continue_()
    assert (stop.op, stop.program, stop.block, stop.instr_index) == ("matmul", "matmul_0_b1", 1, 4)
    assert "tmatmul" in stop.instr and stop.pipe == "m"
    assert set(dbg.tiles()) >= {"a_l0_0", "b_l0_0", "acc"}
    a = dbg.tile("a_l0_0")
    assert a.dtype == np.float16 and a.shape == (16, 128)
    rows = [i for i in range(0, 64, 16) if np.array_equal(a, x[i : i + 16])]
    assert len(rows) == 1  # the block's rows of x, loaded as they are
    b = dbg.tile("b_l0_0")
    cols = [j for j in range(0, 64, 16) if np.array_equal(b, w[:, j : j + 16])]
    assert len(cols) == 1
    dbg.clear()
    dbg.break_at_instruction(kernel="matmul_0_b1", index=5)  # the store after the matmul
    stop = dbg.continue_()
    assert stop.instr_index == 5 and "tmatmul" not in stop.instr
    i, j = rows[0], cols[0]
    want = x[i : i + 16].astype(np.float32) @ w[:, j : j + 16].astype(np.float32)
    np.testing.assert_allclose(dbg.tile("acc"), want, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="no tile %nope"):
        dbg.tile("nope")
    assert dbg.continue_() is None
    np.testing.assert_array_equal(dbg.finish().numpy(), p.compile(_mm_relu, p.CompileConfig(opt_level=0)).run(x, w).numpy())


def test_flag_state_while_stepping_a_block():
    x = np.ones((64, 128), np.float16)
    w = np.ones((128, 64), np.float16)
    dbg = p.compile(_mm_relu).debug(x, w)
    dbg.break_at_instruction(kernel="matmul_0_b0")  # every instruction of block 0
    seen, pending = [], []
    while (stop := dbg.continue_()) is not None and stop.program is not None:
        seen.append(stop.instr.split()[1])
        pending.append(dbg.flags())
    assert "set_flag" in seen and "wait_flag" in seen and "tmatmul" in seen
    after_set = [f for op, f in zip(seen[1:], pending[1:]) if f]
    assert after_set, "a set flag is pending until its wait"
    for f in after_set[0]:
        assert set(f) == {"src", "dst", "id", "pending"} and f["pending"] >= 1 and f["src"] != f["dst"]
    np.testing.assert_array_equal(dbg.finish().numpy(), np.full((64, 64), 128, np.float16))


@p.block_kernel(grid=2, core="vector", out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def _scale_shift(x, y):
    rows = x.shape[0] // 2
    base = p.block_idx() * rows
    for i in p.range(rows // 8):
        r = base + i * 8
        t = p.load(x[r : r + 8, :])
        p.store(y[r : r + 8, :], p.maximum(t * 2.0 - 1.0, 0.0))


def test_breakpoint_on_a_block_kernel_source_line():
    import inspect
    import re

    src, first = inspect.getsourcelines(_scale_shift.fn)
    line = first + next(i for i, s in enumerate(src) if "p.store" in s)
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32)
    dbg = p.compile(lambda a: p.call_kernel(_scale_shift, a)).debug(x)
    dbg.break_at_instruction(line=line, block=1)
    ops = []
    while True:  # the line computes t * 2 - 1, its maximum with 0, and stores it
        stop = dbg.continue_()
        assert stop.line == line and stop.file == __file__ and stop.block == 1
        ops.append(stop.instr.split()[1])
        if ops[-1] == "tstore":
            break
    assert ops[0] == "tmuls" and len(ops) >= 3
    stored = re.search(r"tstore .*, (\w+)@vec", stop.instr).group(1)
    got = dbg.tile(stored)
    r0 = [r for r in range(32, 64, 8) if np.array_equal(got[:8], np.maximum(x[r : r + 8] * 2 - 1, 0))]
    assert len(r0) == 1
    dbg.close()  # the stopped block runs on
    np.testing.assert_array_equal(dbg.finish().numpy(), np.maximum(x * 2 - 1, 0))


def test_a_debugger_dropped_while_a_block_is_stopped_leaves_nothing_waiting():
    import gc

    x = np.ones((64, 128), np.float16)
    ex = p.compile(_mm_relu)
    dbg = ex.debug(x, x.T.copy())
    dbg.break_at_instruction(kernel="matmul_0", index=4)
    assert dbg.continue_().program.startswith("matmul_0")
    del dbg
    gc.collect()
    assert float(ex.run(x, x.T.copy()).numpy()[0, 0]) == 128.0


def _mixed_kernel_debugger(grid, m):
    """examples/block_mixed.py's relu(a @ b + bias) (cube matmul, vector epilogue) on a2
    under the debugger, with the source lines of its cube and its vector part."""
    import inspect

    sys.path.insert(0, os.path.join(str(ROOT), "examples"))
    import block_mixed

    kern = block_mixed.matmul_bias_relu(grid=grid, T=64)
    src, first = inspect.getsourcelines(kern.fn)
    cube_line = first + next(i for i, s in enumerate(src) if "acc += p.matmul" in s)
    vec_line = first + next(i for i, s in enumerate(src) if "p.store(c[" in s)
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((m, m)) / 8).astype(np.float16), (rng.standard_normal((m, m)) / 8).astype(np.float16)
    bias = rng.standard_normal((1, m)).astype(np.float16)
    ex = p.compile(lambda a, b, bias: p.call_kernel(kern, a, b, bias), p.CompileConfig(chip="a2"))
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32), 0)
    return ex.debug(a, b, bias), (a, b, bias), want, block_mixed.__file__, cube_line, vec_line


def _first_tile(block, grid, m, T=64):
    """The first output tile (row, col) block `block` of the mixed kernel computes."""
    tiles_n = m // T
    t = block * (m // T) ** 2 // grid
    return t // tiles_n * T, t % tiles_n * T, t


def test_source_line_breakpoints_in_a_mixed_cube_vector_kernel():
    import re

    grid, m = 4, 256
    dbg, (a, b, bias), want, path, cube_line, vec_line = _mixed_kernel_debugger(grid, m)
    # The cube part: the line's loads, moves and the tmatmul of block 2's first tile.
    dbg.break_at_instruction(line=cube_line, block=2)
    seen, flags_seen = [], []
    while True:
        stop = dbg.continue_()
        assert (stop.file, stop.line, stop.block) == (path, cube_line, 2) and stop.program.endswith("_c"), stop
        seen.append(stop.instr.split()[1])
        flags_seen += dbg.flags()
        if seen[-1] == "tmatmul":
            break
    assert {"tload", "tmov"} <= set(seen)
    i, _, _ = _first_tile(2, grid, m)
    _, left, right = re.search(r"tmatmul (\w+)@acc\S*, (\w+)@left\S*, (\w+)@right", stop.instr).groups()
    np.testing.assert_array_equal(dbg.tile(left), a[i : i + 64, 0:64])  # its first K step
    np.testing.assert_array_equal(dbg.tile(right), b[0:64, 0:64])
    assert flags_seen and all(set(f) == {"src", "dst", "id", "pending"} and f["pending"] >= 1 for f in flags_seen)
    dbg.clear()
    np.testing.assert_allclose(dbg.finish().numpy().astype(np.float32), want, rtol=2e-3, atol=2e-3)
    # The vector part: block 3's epilogue of its first tile, on the vector core that pops
    # it, in a run of its own (block 3 runs on while block 2 is stopped, so a breakpoint
    # set then may find it past its first tile).
    dbg, (a, b, bias), want, path, cube_line, vec_line = _mixed_kernel_debugger(grid, m)
    dbg.break_at_instruction(line=vec_line, block=3)
    stop = dbg.continue_()
    assert (stop.file, stop.line, stop.block) == (path, vec_line, 3) and "_v" in stop.program, stop
    assert stop.instr.split()[1] == "tmaxs"
    (src,) = re.search(r"tmaxs \w+@vec\S*, (\w+)@vec", stop.instr).groups()
    i, j, t = _first_tile(3, grid, m)
    assert t % 2 == int(re.search(r"_v(\d)$", stop.program).group(1))  # tile t goes to vector core t % 2
    y = a[i : i + 64].astype(np.float32) @ b[:, j : j + 64].astype(np.float32) + bias[:, j : j + 64].astype(np.float32)
    np.testing.assert_allclose(dbg.tile(src), y, rtol=1e-5, atol=1e-5)  # the popped accumulator plus the bias
    dbg.clear()
    got = dbg.finish().numpy().astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_block_kernel_breakpoints_find_a_block_that_shares_its_core():
    """A grid larger than the chip (48 blocks on a2's 24 AI cores): a core runs several
    kernel blocks as one program, and a breakpoint still stops in the block asked for,
    at its own line and tile."""
    import re

    grid, m = 48, 512
    dbg, (a, b, bias), want, path, _, vec_line = _mixed_kernel_debugger(grid, m)
    dbg.break_at_instruction(line=vec_line, block=30)
    stop = dbg.continue_()
    assert (stop.line, stop.block) == (vec_line, 30) and stop.instr.split()[1] == "tmaxs", stop
    (src,) = re.search(r"tmaxs [\w.]+@vec\S*, ([\w.]+)@vec", stop.instr).groups()
    assert src.startswith("b1.")  # its core's second kernel block: the tiles of each are named b<k>.
    i, j, t = _first_tile(30, grid, m)
    assert t % 2 == int(re.search(r"_v(\d)$", stop.program).group(1))  # tile t goes to vector core t % 2
    y = a[i : i + 64].astype(np.float32) @ b[:, j : j + 64].astype(np.float32) + bias[:, j : j + 64].astype(np.float32)
    np.testing.assert_allclose(dbg.tile(src), y, rtol=1e-5, atol=1e-5)
    dbg.clear()
    np.testing.assert_allclose(dbg.finish().numpy().astype(np.float32), want, rtol=2e-3, atol=2e-3)
