"""The runtime objects: p.Graph, p.MemoryPool, p.Executor(model, memory_pool=pool) and
the per-run report, checked against numpy."""

import threading

import numpy as np
import pytest

import pypto as p
from conftest import assert_matmul_close, rand

W1 = rand((64, 96), p.float16, 11)
W2 = rand((96, 32), p.float16, 12)


def mlp(x):
    h = p.relu(p.matmul(x, p.from_numpy(W1)))
    return p.matmul(h, p.from_numpy(W2))


def mlp_ref(x):
    h = np.maximum(x.astype(np.float64) @ W1.astype(np.float64), 0).astype(np.float16)
    return h.astype(np.float64) @ W2.astype(np.float64)


def check_mlp(got, x):
    ref = mlp_ref(x)
    np.testing.assert_allclose(got.numpy().astype(np.float64), ref, rtol=5e-3, atol=5e-3 * np.abs(ref).max())


def test_graph_shows_nodes_edges_and_user_lines():
    calls = []

    def model(x, b):
        calls.append(1)
        y = p.matmul(x, p.from_numpy(W1)) + b  # the matmul and add line
        return p.relu(y)

    x = p.Tensor([8, 64], dtype=p.float16)
    b = p.Tensor([96], dtype=p.float16)
    graph = p.Graph(model, inputs=[x, b])
    assert calls == [1]
    text = str(graph)
    assert "matmul(%in0, %c0)" in text and "relu(" in text and text == graph.text
    ops = [n.op for n in graph.ops]
    assert ops == ["matmul", "add", "relu"]
    assert [n.name for n in graph.inputs] == ["%in0", "%in1"]
    mm = graph.ops[0]
    assert mm.shape == (8, 96) and mm.dtype == p.float16
    assert mm.file == __file__ and mm.function == "model"
    with open(__file__) as f:
        assert "the matmul and add line" in f.read().splitlines()[mm.line - 1]
    assert graph.node(mm.name) is mm and graph.node(mm.name.lstrip("%")) is mm
    assert [n.name for n in mm.inputs] == ["%in0", "%c0"]
    edges = {(e.src.name, e.dst.name, e.index) for e in graph.edges}
    add = graph.ops[1]
    assert (mm.name, add.name, 0) in edges and ("%in1", add.name, 1) in edges
    assert len(graph.edges) == sum(len(n.inputs) for n in graph.nodes)
    assert graph.outputs == [graph.ops[2]]
    assert len(graph) == len(graph.nodes) == 6
    # Compiling the graph compiles this trace: the function is not called again.
    ex = p.compile(graph, p.CompileConfig(opt_level=1))
    xs, bs = rand((8, 64), p.float16, 1), rand((96,), p.float16, 2)
    got = ex.run(xs, bs).numpy().astype(np.float64)
    assert calls == [1]
    ref = np.maximum(xs.astype(np.float64) @ W1.astype(np.float64) + bs.astype(np.float64), 0)
    np.testing.assert_allclose(got, ref, rtol=5e-3, atol=5e-3 * np.abs(ref).max())
    with pytest.raises(p.PyptoValueError, match="no node %99"):
        graph.node("%99")


def test_graph_without_inputs_is_traced_by_its_first_run():
    graph = p.Graph(mlp)
    assert not graph.is_traced and "not traced yet" in str(graph)
    with pytest.raises(p.PyptoValueError, match="has not been traced yet"):
        graph.nodes
    ex = p.Executor(graph)
    x = rand((16, 64), p.float16, 3)
    check_mlp(ex.run(x), x)
    assert graph.is_traced and [n.op for n in graph.ops] == ["matmul", "relu", "matmul"]
    assert graph.is_symbolic  # an automatic-symbol trace: one graph for every batch size
    assert graph.ops[0].shape == ("x.0", 96)


def test_pool_lends_memory_and_takes_it_back():
    pool = p.MemoryPool(size=1 << 20)
    ex = p.Executor(mlp, memory_pool=pool)
    assert ex.memory_pool is pool
    for i in range(3):
        x = rand((16, 64), p.float16, 20 + i)
        check_mlp(ex.run(x), x)
    peak = ex.last_run().peak_bytes
    s = pool.stats()
    assert s["runs"] == 3 and s["in_use_bytes"] == 0 and s["live_runs"] == 0
    # Runs one after another reuse the same bytes.
    assert s["high_water_bytes"] == peak and s["arena_touched_bytes"] == peak
    assert ex.last_run().pool == s and ex.info()["memory_pool_bytes"] == 1 << 20


def test_profiled_runs_use_the_pool_too():
    pool = p.MemoryPool(size=1 << 20)
    ex = p.Executor(mlp, memory_pool=pool)
    x = rand((16, 64), p.float16, 30)
    check_mlp(ex.run(x, profile=True), x)
    s = pool.stats()
    assert s["runs"] == 1 and s["in_use_bytes"] == 0
    assert s["high_water_bytes"] == ex.last_run().peak_bytes > 0
    assert ex.get_profile_result().total_time > 0


def test_one_pool_serves_several_executors():
    pool = p.MemoryPool(size=1 << 20)
    a = p.Executor(mlp, memory_pool=pool)
    b = p.compile(lambda x: p.exp(x) * 2, memory_pool=pool)
    x = rand((16, 64), p.float16, 4)
    check_mlp(a.run(x), x)
    got = b.run(x).numpy().astype(np.float64)
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)) * 2, rtol=2e-3)
    peaks = [a.last_run().peak_bytes, b.last_run().peak_bytes]
    s = pool.stats()
    assert s["runs"] == 2 and s["arena_touched_bytes"] == max(peaks), "the second executor reused the first's bytes"


def test_pool_too_small_is_a_compile_error_naming_the_largest_tensors():
    def wide(x):
        h = p.matmul(x, p.from_numpy(rand((64, 2048), p.float16, 5)))  # the wide intermediate
        return p.sum(p.relu(h), axis=-1)

    pool = p.MemoryPool(size=64 * 1024)
    ex = p.Executor(wide, memory_pool=pool)
    with pytest.raises(p.CompileError) as e:
        ex.run(rand((32, 64), p.float16, 6))
    info = e.value.get_detailed_info()
    assert "bytes of device memory, but the memory pool holds 65536" in info.message
    needed = int(info.message.split("needs ")[1].split(" bytes")[0])
    assert needed > 65536
    causes = "\n".join(info.causes)
    with open(__file__) as f:
        line = next(i for i, t in enumerate(f.read().splitlines(), 1) if "the wide intermediate" in t)
    assert f"intermediate f16[32,2048], 131072 bytes, made by matmul at {__file__}:{line}" in causes
    assert "the largest tensors then" in causes
    assert any(f"p.MemoryPool(size={needed})" in s for s in info.suggestions)
    assert pool.stats()["runs"] == 0
    # The same program in a pool of the size the error names runs.
    ok = p.Executor(wide, memory_pool=p.MemoryPool(size=needed))
    x = rand((32, 64), p.float16, 6)
    ok.run(x)
    assert ok.last_run().peak_bytes == needed


def test_run_report():
    ex = p.compile(mlp, inputs=[p.Tensor([p.symbol("batch"), 64], dtype=p.float16)])
    assert ex.last_run() is None
    x = rand((24, 64), p.float16, 7)
    check_mlp(ex.run(x), x)
    r = ex.last_run()
    # The program of the bucket of sizes holding 24 (or of batch=24 exactly).
    assert r.program.startswith("mlp[batch") and r.program.endswith("]") and r.device == p.get_device() and r.simulated
    assert r.simulated_seconds > 0 and r.simulated_ms == pytest.approx(r.simulated_seconds * 1e3)
    assert r.cycles == ex.last_cycles and r.simulated_ms == pytest.approx(ex.last_time_ms)
    assert r.host_seconds > 0 and r.tasks >= 1 and r.pool is None
    assert r.peak_bytes == ex.info()["memory"]["peak_bytes"]
    assert set(r.as_dict()) >= {"program", "simulated_ms", "host_ms", "cycles", "memory"}
    concrete = p.compile(mlp, dynamic=False)
    concrete.run(x)
    assert concrete.last_run().program == "mlp"


def test_threads_share_an_executor_and_a_pool():
    pool = p.MemoryPool(size=1 << 20)
    ex = p.Executor(mlp, memory_pool=pool)
    expected = {}  # rows -> (program, cycles) of a run on its own
    for rows in (8, 96, 320):  # sizes far apart: programs of different times
        ex.run(rand((rows, 64), p.float16, rows))
        expected[rows] = (ex.last_run().program, ex.last_run().cycles)
    assert len({c for _, c in expected.values()}) == 3
    errors, programs = [], {}
    barrier = threading.Barrier(6)

    def worker(i):
        try:
            barrier.wait()
            for j in range(3):
                x = rand(((8, 96, 320)[i % 3], 64), p.float16, 100 * i + j)
                check_mlp(ex.run(x), x)
                r = ex.last_run()  # this thread's own run, whatever the others ran meanwhile
                assert (r.program, r.cycles) == expected[x.shape[0]]
                programs[i] = r.program
        except BaseException as e:  # reported by the main thread
            errors.append((i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    s = pool.stats()
    assert s["runs"] == 21 and s["in_use_bytes"] == 0 and s["high_water_bytes"] <= pool.size


def test_memory_pool_arguments():
    with pytest.raises(p.PyptoValueError, match="size must be an int >= 1"):
        p.MemoryPool(size=0)
    with pytest.raises(p.PyptoTypeError, match="memory_pool must be a p.MemoryPool"):
        p.Executor(mlp, memory_pool=1 << 20)
    with pytest.raises(p.PyptoTypeError, match="model must be a function"):
        p.Executor(3)
    with pytest.raises(p.PyptoTypeError, match="inputs= is given twice"):
        p.Executor(p.Graph(mlp), inputs=[p.Tensor([2, 64], dtype=p.float16)])
    assert "high water 0" in repr(p.MemoryPool(size=4096))


def test_an_executor_with_a_pool_pickles_with_a_pool_of_its_own():
    import pickle

    ex = p.Executor(mlp, memory_pool=p.MemoryPool(size=1 << 20))
    again = pickle.loads(pickle.dumps(ex))
    assert again.memory_pool is not ex.memory_pool and again.memory_pool.size == 1 << 20
    x = rand((8, 64), p.float16, 9)
    check_mlp(again.run(x), x)
    assert again.memory_pool.stats()["runs"] == 1
    with pytest.raises(p.PyptoTypeError, match="cannot be pickled"):
        pickle.dumps(ex.memory_pool)
    with pytest.raises(p.PyptoMemoryError, match="more than the physical memory") as e:
        p.MemoryPool(size=1 << 60)
    assert e.value.get_detailed_info().location.file == __file__


TIMING_CACHE_SCRIPT = r"""
import json, numpy as np, pypto as p
ex = p.Executor(lambda x, y: x + y)
rng = np.random.default_rng(0)
out = []
for i in range(4):
    x, y = (rng.standard_normal((512, 2048)).astype(np.float32) for _ in range(2))
    got = ex.run(x, y).numpy()
    r = ex.last_run()
    out.append({"cached": r.timing_cached_tasks, "tasks": r.tasks, "cycles": r.cycles,
                "exact": bool(np.array_equal(got, x + y))})
print(json.dumps(out))
"""


@pytest.mark.parametrize("check", ["0", "1"])
def test_repeated_runs_take_their_times_from_the_timing_cache(check):
    # A fresh process, since the test suite checks every hit (conftest.py): with the
    # check off a task's third run takes its times from the cache; with it on, each
    # hit runs the timing loop again (and would fail on a difference), so none is
    # reported cached. Values always come from the run's own inputs.
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYPTO_CHECK_TIMING_CACHE=check)
    res = subprocess.run([sys.executable, "-c", TIMING_CACHE_SCRIPT], env=env, capture_output=True, text=True, check=True)
    runs = json.loads(res.stdout)
    assert all(r["exact"] for r in runs)
    assert len({r["cycles"] for r in runs}) == 1, "the same simulated time at every run"
    cached = [r["cached"] for r in runs]
    if check == "1":
        assert cached == [0, 0, 0, 0]
    else:
        # A program's first run has no hash yet, its second keeps the times.
        assert cached[:2] == [0, 0] and all(c == r["tasks"] >= 1 for c, r in zip(cached[2:], runs[2:]))
