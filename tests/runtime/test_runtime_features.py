"""The runtime's scheduling features (CompileConfig concurrent_tasks, overlap_launch,
prefetch_l2, balance_blocks, early_start), on by default: the same values as the plain
runtime, less simulated time."""

import numpy as np
import pytest

import pypto as p


def _two_branches(x, w, y, v):
    # Independent branches: a matmul on the cube cores and a softmax of another
    # matmul, which the dispatcher may run side by side.
    return p.matmul(x, w), p.softmax(p.matmul(y, v), axis=-1)


def _inputs():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((128, 256)) * 0.1).astype(np.float16)
    w = (rng.standard_normal((256, 128)) * 0.1).astype(np.float16)
    return x, w, x[:, ::-1].copy(), w[::-1].copy()


@pytest.mark.parametrize("chip", ["a2", "tiny"])
def test_features_keep_the_values_and_save_time(chip):
    args = _inputs()
    base = p.compile(_two_branches, p.CompileConfig(chip=chip, runtime_features=False))
    want = [r.numpy() for r in base.run(*args)]
    np.testing.assert_allclose(want[0].astype(np.float32), args[0].astype(np.float32) @ args[1].astype(np.float32), rtol=2e-2, atol=2e-2)
    off = base.last_cycles
    configs = [dict(concurrent_tasks=True), dict(overlap_launch=True), dict(prefetch_l2=True), dict(balance_blocks=True), dict(early_start=True)]
    for fields in configs:
        f = p.compile(_two_branches, p.CompileConfig(chip=chip, runtime_features=False, **fields))
        got = [r.numpy() for r in f.run(*args)]
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes(), fields
        assert f.last_cycles <= off, fields
    everything = p.compile(_two_branches, p.CompileConfig(chip=chip))  # the default: every feature
    got = [r.numpy() for r in everything.run(*args)]
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    assert everything.last_cycles < off


def test_runtime_features_switches_all_and_a_field_wins():
    cfg = p.CompileConfig(runtime_features=True, prefetch_l2=False)
    assert (cfg.concurrent_tasks, cfg.overlap_launch, cfg.prefetch_l2, cfg.balance_blocks, cfg.early_start) == (True, True, False, True, True)
    default = p.CompileConfig()
    assert all((default.concurrent_tasks, default.overlap_launch, default.prefetch_l2, default.balance_blocks, default.early_start))
    plain = p.CompileConfig(runtime_features=False)
    assert not any((plain.concurrent_tasks, plain.overlap_launch, plain.prefetch_l2, plain.balance_blocks, plain.early_start))
    one_off = p.CompileConfig(overlap_launch=False)
    assert (one_off.concurrent_tasks, one_off.overlap_launch, one_off.prefetch_l2) == (True, False, True)


def test_a_single_task_takes_the_same_time_with_or_without_the_features():
    # One task has nothing to overlap, and the first task of a run is not prefetched.
    x = np.ones((256, 512), np.float16)
    times = []
    for on in (True, False):
        f = p.compile(lambda a: p.softmax(a, axis=-1), p.CompileConfig(chip="a2", runtime_features=on))
        f.run(x)
        assert f.stats()["tasks"] == 1
        times.append(f.last_cycles)
    assert times[0] == times[1]


@pytest.mark.parametrize("field", ["concurrent_tasks", "overlap_launch", "prefetch_l2", "balance_blocks", "early_start", "runtime_features"])
def test_runtime_fields_must_be_bools(field):
    with pytest.raises(TypeError, match=f"CompileConfig: {field} must be True or False"):
        p.CompileConfig(**{field: "yes"})


def test_profile_places_tasks_where_the_dispatcher_ran_them():
    args = _inputs()
    plain = p.compile(_two_branches, p.CompileConfig(chip="a2", runtime_features=False))
    plain.run(*args, profile=True)
    tasks = plain.get_profile_result().tasks
    for a, b in zip(tasks, tasks[1:]):
        assert b.start_ms == pytest.approx(a.start_ms + a.time_ms)
    fast = p.compile(_two_branches, p.CompileConfig(chip="a2"))
    fast.run(*args, profile=True)
    prof = fast.get_profile_result()
    first, second = prof.tasks[0], prof.tasks[1]
    assert second.start_ms < first.start_ms + first.time_ms  # the independent branch overlaps the first
    assert prof.total_time == pytest.approx(fast.last_time_ms)
    assert prof.total_time < plain.get_profile_result().total_time
