"""Lazy realisation, the compile cache, p.compile executors and device selection."""

import numpy as np
import pytest

import pypto as p
from conftest import assert_elementwise_close, assert_matmul_close, rand


def test_ops_are_lazy_until_realised():
    x = p.from_numpy(rand((5, 6), p.float16, 1))
    assert not x.is_pending
    y = p.relu(x + x)
    assert y.is_pending
    assert y.shape == (5, 6) and y.dtype == p.float16  # known without computing
    y.numpy()
    assert not y.is_pending
    assert y.realize() is y


def test_same_structure_compiles_once():
    # A shape no other test uses, so the counters below are this test's alone.
    shape = (7, 13)

    def build(seed):
        a, b = rand(shape, p.float16, seed), rand(shape, p.float16, seed + 1)
        return a, b, p.relu(p.from_numpy(a) * p.from_numpy(b))

    before = p.cache_info()
    a, b, y = build(100)
    y.numpy()
    mid = p.cache_info()
    assert mid["compiles"] == before["compiles"] + 1
    for seed in (200, 300):
        a, b, y = build(seed)
        assert_elementwise_close(y.numpy(), np.maximum(a.astype(np.float64) * b.astype(np.float64), 0), p.float16)
    after = p.cache_info()
    assert after["compiles"] == mid["compiles"], "same structure, other data: no new compile"
    assert after["hits"] >= mid["hits"] + 2

    # A different structure compiles again.
    p.add(p.from_numpy(a), p.from_numpy(b)).numpy()
    assert p.cache_info()["compiles"] == after["compiles"] + 1


def test_executor_runs_and_reports_cycles():
    w = rand((64, 32), p.float16, 2)
    b = rand((32,), p.float16, 3)
    wt, bt = p.from_numpy(w), p.from_numpy(b)

    def layer(x):
        return p.relu(x @ wt + bt)

    f = p.compile(layer)
    assert f.last_cycles is None and f.last_time_ms is None
    for seed in (4, 5):
        x = rand((16, 64), p.float16, seed)
        out = f.run(x)  # a numpy input
        assert isinstance(out, p.Tensor) and out.shape == (16, 32) and out.dtype == p.float16
        ref = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16).astype(np.float64)
        got = out.numpy().astype(np.float64)
        np.testing.assert_allclose(got, np.maximum(ref + b.astype(np.float64), 0), rtol=4e-3, atol=4e-3)
        assert f.last_cycles > 0
        assert f.last_time_ms > 0
    assert f.num_compiled == 1

    # A p.Tensor input of the same signature reuses the program; another shape traces again.
    f(p.from_numpy(rand((16, 64), p.float16, 6)))
    assert f.num_compiled == 1
    f.run(rand((8, 64), p.float16, 7))
    assert f.num_compiled == 2

    stats = f.stats()
    assert stats["cycles"] == f.last_cycles and stats["tasks"] >= 1
    # The kernels' time (first to last instruction) is reported apart from each task's
    # launch and end, which the chip's presets give.
    assert 0 < stats["kernel_cycles"] < stats["cycles"]
    tasks = stats["detail"]["Tasks"]
    launch = sum(t["Stats"]["StartCycles"] + t["Stats"]["EndCycles"] for t in tasks)
    assert stats["kernel_cycles"] + launch == stats["cycles"]
    assert abs(stats["kernel_seconds"] / stats["seconds"] - stats["kernel_cycles"] / stats["cycles"]) < 1e-12
    text = f.dump()
    assert "matmul" in text and "relu" in text


def test_executor_multiple_outputs_and_passthrough():
    def fn(a, b):
        s = a + b
        return s, p.relu(s), a

    f = p.compile(fn)
    a, b = rand((3, 4), p.float16, 8), rand((3, 4), p.float16, 9)
    s, r, same = f.run(a, b)
    exact = a.astype(np.float64) + b.astype(np.float64)
    assert_elementwise_close(s.numpy(), exact, p.float16)
    np.testing.assert_array_equal(r.numpy(), np.maximum(s.numpy(), 0))
    np.testing.assert_array_equal(same.numpy(), a)

    lst = p.compile(lambda x: [x * x])(a)
    assert isinstance(lst, list) and len(lst) == 1


def test_executor_python_control_flow_unrolls():
    def fn(x, n=3):
        for _ in range(n):
            x = p.relu(x + x)
        return x

    a = rand((4, 4), p.float16, 10)
    out = p.compile(fn).run(a).numpy()
    np.testing.assert_array_equal(out, np.maximum(a, 0) * 8)


def test_executor_errors():
    f = p.compile(lambda x: x.numpy())
    with pytest.raises(p.PyptoValueError, match="p.compile"):
        f.run(np.ones((2, 2), np.float16))
    with pytest.raises(TypeError, match="must return a p.Tensor"):
        p.compile(lambda x: 3).run(np.ones(2, np.float16))
    with pytest.raises(TypeError):
        p.compile(lambda x: x).run([1, 2])
    with pytest.raises(TypeError, match="p.CompileConfig"):
        p.compile(lambda x: x, config={"opt": 3})
    with pytest.raises(TypeError):
        p.compile(42)
    g = p.compile(lambda x: p.relu(x))
    with pytest.raises(RuntimeError):
        g.dump()


def test_matmul_executor_large():
    a, b = rand((300, 520), p.bfloat16, 11), rand((520, 130), p.bfloat16, 12)
    f = p.compile(lambda x, y: x @ y)
    assert_matmul_close(f.run(a, b).numpy(), a, b)
    assert f.last_cycles > 0


def test_devices():
    assert p.get_device() == "a2"
    try:
        p.set_device("tiny")
        assert p.get_device() == "tiny"
        a, b = rand((40, 72), p.float16, 13), rand((72, 36), p.float16, 14)
        f = p.compile(lambda x, y: x @ y)
        assert_matmul_close(f.run(a, b).numpy(), a, b)
        tiny_cycles = f.last_cycles
        assert tiny_cycles > 0
        with pytest.raises(p.PyptoValueError, match="unknown device"):
            p.set_device("no-such-chip")
        assert p.get_device() == "tiny"
        p.set_device("A2")
        assert p.get_device() == "a2"
        f.run(a, b)  # the device is part of the signature: compiled again for a2
        assert f.num_compiled == 2
    finally:
        p.set_device("a2")


def test_last_stats():
    p.relu(p.from_numpy(rand((3, 3), p.float16, 15))).numpy()
    st = p.last_stats()
    assert st["cycles"] > 0 and st["seconds"] > 0
