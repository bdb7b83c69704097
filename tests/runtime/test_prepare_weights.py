"""Weight preparation: the conversions of tensors a compiled function captures (a
convolution weight's fractal layout, its bias cast) run in the first run only, later
runs skip them with the same values, and changed weight bytes are prepared again.
Values are checked against a direct numpy convolution."""

import numpy as np
import pytest

import pypto as p
from numpy_refs import np_conv2d


def _relu_conv(x, w, b):
    return np.maximum(np_conv2d(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), (1, 1), (1, 1, 1, 1), (1, 1), 1), 0)


@pytest.mark.parametrize("chip", ["tiny", "a2"])
def test_captured_weights_are_prepared_once(chip):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 24, 9, 9)).astype(np.float16)
    wn = (rng.standard_normal((40, 24, 3, 3)) * 0.1).astype(np.float16)
    bn = rng.standard_normal(40).astype(np.float16)
    w, b = p.from_numpy(wn), p.from_numpy(bn)
    f = p.compile(lambda x: p.relu(p.conv2d(x, w, b, padding=1)), p.CompileConfig(chip=chip))
    first = f.run(x).numpy()
    s1 = f.stats()
    assert s1["prepared_tasks"] == 0 and f.info()["memory"]["prepared_bytes"] > 0
    second = f.run(x).numpy()
    s2 = f.stats()
    assert s2["prepared_tasks"] > 0 and s2["tasks"] == s1["tasks"] - s2["prepared_tasks"]
    assert s2["cycles"] < s1["cycles"]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(second.astype(np.float32), _relu_conv(x, wn, bn), rtol=2e-2, atol=2e-2)


def test_a_weight_passed_as_an_argument_is_converted_every_run():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float16)
    wn = (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float16)
    bn = np.zeros(16, np.float16)
    f = p.compile(lambda x, w, b: p.relu(p.conv2d(x, w, b, padding=1)), p.CompileConfig(chip="a2"))
    f.run(x, wn, bn)
    f.run(x, wn, bn)
    assert f.stats()["prepared_tasks"] == 0
    assert f.info()["memory"]["prepared_bytes"] == 0


def test_weights_changed_in_place_are_prepared_again():
    """A captured tensor that shares a host array's memory (from_dlpack, no copy) sees
    writes to it; its preparation is keyed by the bytes, so the run after a write
    converts the new weights."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 16, 6, 6)).astype(np.float16)
    wn = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float16)
    bn = rng.standard_normal(32).astype(np.float16)
    w = p.from_dlpack(wn)
    f = p.compile(lambda x: p.relu(p.conv2d(x, w, p.from_numpy(bn), padding=1)), p.CompileConfig(chip="a2"))
    f.run(x)
    f.run(x)
    assert f.stats()["prepared_tasks"] > 0
    wn *= np.float16(-2)
    got = f.run(x).numpy()
    assert f.stats()["prepared_tasks"] == 0, "new bytes are prepared again"
    np.testing.assert_allclose(got.astype(np.float32), _relu_conv(x, wn, bn), rtol=2e-2, atol=2e-2)
    f.run(x)
    assert f.stats()["prepared_tasks"] > 0


def test_disabling_the_pass_converts_every_run():
    wn = np.full((16, 16, 1, 1), 0.5, np.float16)
    w = p.from_numpy(wn)
    f = p.compile(lambda x: p.conv2d(x, w), p.CompileConfig(chip="a2", disable_passes=("prepare-weights",)))
    x = np.ones((1, 16, 4, 4), np.float16)
    f.run(x)
    got = f.run(x).numpy()
    assert f.stats()["prepared_tasks"] == 0
    np.testing.assert_array_equal(got, np.full((1, 16, 4, 4), 8, np.float16))


def test_executor_in_a_pool_reports_the_skipped_preparation():
    rng = np.random.default_rng(3)
    wn = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float16)
    bn = rng.standard_normal(32).astype(np.float16)
    w, b = p.from_numpy(wn), p.from_numpy(bn)
    ex = p.Executor(lambda x: p.relu(p.conv2d(x, w, b, padding=1)), memory_pool=p.MemoryPool(size=16 * 1024 * 1024))
    x = rng.standard_normal((2, 16, 7, 7)).astype(np.float16)
    first = ex.run(x).numpy()
    r1 = ex.last_run()
    second = ex.run(x).numpy()
    r2 = ex.last_run()
    assert r1.prepared_tasks == 0 and r2.prepared_tasks > 0 and r2.tasks == r1.tasks - r2.prepared_tasks
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(second.astype(np.float32), _relu_conv(x, wn, bn), rtol=2e-2, atol=2e-2)
