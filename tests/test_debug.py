"""The graph debugger: breakpoints, steps, and every node's values checked against numpy."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto as p


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
