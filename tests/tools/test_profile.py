"""Profiled runs: figures checked against the program's shapes and the plain run, the
Chrome trace checked against the Trace Event Format, the report and the comparison."""

import json
import math
import os
import re

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT

GM_ALIGN = 512  # GM buffers start on 512-byte boundaries (docs/device.md)


def block(x, w):
    h = p.matmul(x, w)
    h = p.relu(h) + 1.0
    return p.softmax(h, axis=-1)


def _inputs(m=64, k=128, n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)


@pytest.fixture(scope="module")
def profiled():
    ex = p.compile(block)
    x, w = _inputs()
    plain = ex.run(x, w).numpy()
    plain_ms = ex.last_time_ms
    out = ex.run(x, w, profile=True).numpy()
    return ex, ex.get_profile_result(), plain, out, plain_ms


def test_profiled_run_computes_and_times_like_a_plain_run(profiled):
    ex, r, plain, out, plain_ms = profiled
    np.testing.assert_array_equal(out, plain)  # tracing changes nothing the chip computes
    assert r.total_time == pytest.approx(plain_ms, rel=1e-12)
    tasks_ms = sum(t.time_ms for t in r.tasks)
    assert sum(r.op_times.values()) == pytest.approx(tasks_ms, rel=1e-12)
    assert r.total_time < tasks_ms  # the runtime's features overlap the tasks' launches
    assert ex.get_profile_result() is r
    # With the plain runtime the tasks run one after another: their times add up.
    seq = p.compile(block, p.CompileConfig(runtime_features=False))
    x, w = _inputs()
    seq.run(x, w, profile=True)
    rs = seq.get_profile_result()
    assert sum(rs.op_times.values()) == pytest.approx(rs.total_time, rel=1e-12)
    assert sum(t.time_ms for t in rs.tasks) == pytest.approx(rs.total_time, rel=1e-12)


def test_profile_figures_follow_the_shapes(profiled):
    _, r, *_ = profiled
    assert set(r.op_times) == {"matmul", "fused_rows[relu+add+max+sub+exp+sum+div]"}
    mm = next(t for t in r.tasks if t.op == "matmul")
    assert mm.flops == 2 * 64 * 128 * 64
    assert mm.footprint_read == (64 * 128 + 128 * 64) * 2  # both operands, each byte once
    assert mm.footprint_written == 64 * 64 * 2
    assert mm.gm_bytes_read >= mm.footprint_read
    # The user's line of the first compile of this graph (programs are shared by graph).
    assert re.fullmatch(r"[\w.]+\.(py|md):\d+", mm.location), mm.location

    def buf(nbytes):
        return -(-nbytes // GM_ALIGN) * GM_ALIGN

    # Every buffer is live in the first task (inputs, the matmul's result, the output).
    live = buf(64 * 128 * 2) + buf(128 * 64 * 2) + buf(2) + buf(64 * 64 * 2) + buf(64 * 64 * 2)
    assert r.peak_memory == pytest.approx(live / 1e6)
    assert r.memory_timeline[0] == (0.0, live)
    assert r.leaks() == []
    assert 0 < r.cache_hit_rate <= 1
    for t in r.tasks:
        for ratio in t.pipe_busy.values():
            assert 0 <= ratio <= 1
        assert len(t.cores) == t.active_cores
    for c in r.core_busy():
        assert all(0 <= v <= 1 for v in c["pipes"].values())


def test_summary_ranks_ops(profiled, capsys):
    _, r, *_ = profiled
    r.summary()
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[1].split()[:5] == ["op", "count", "total", "ms", "mean"]
    rows = [ln for ln in lines[3:] if ln.startswith(("matmul", "fused_rows"))]
    times = [float(ln.split()[2]) for ln in rows]
    assert times == sorted(times, reverse=True) and len(rows) == 2
    assert "leaks: none" in text and "L2 hit rate" in text
    r2 = p.ProfileResult(r._data, "x", p.ProfileConfig(profile_metrics=["time"]))
    assert "L2 hit rate" not in r2.table() and "leaks" not in r2.table()


def test_bottleneck_classes():
    def tiny(a, b):
        return a + b

    def heavy(x):
        return p.exp(p.sin(x)) * 0.5 + p.tanh(x)

    def big_add(a, b):
        return a + b

    rng = np.random.default_rng(1)
    cases = [
        (tiny, [rng.random((8, 8), dtype=np.float32)] * 2, "launch"),
        (heavy, [rng.random((1024, 1024), dtype=np.float32)], "compute"),
        (big_add, [rng.random((2048, 2048), dtype=np.float32)] * 2, "memory"),
    ]
    for fn, xs, kind in cases:
        ex = p.compile(fn)
        ex.run(*xs, profile=True)
        b = ex.get_profile_result().bottlenecks()
        assert b[0]["kind"] == kind, (fn.__name__, b[0])
        assert b[0]["reason"]


def test_leak_check_reports_buffers_alive_at_the_end(profiled):
    _, r, *_ = profiled
    data = json.loads(json.dumps(r._data))
    n = len(data["tasks"])
    data["buffers"].append({"tensor": 99, "role": "temp", "type": "f16[4]", "offset": 0, "bytes": 512, "alias": 0, "first_task": 0, "last_task": n})
    data["buffers"].append({"tensor": 98, "role": "temp", "type": "f16[8]", "offset": 0, "bytes": 512, "alias": 0, "first_task": n, "last_task": -1})
    leaks = p.ProfileResult(data, "x").leaks()
    assert [x["tensor"] for x in leaks] == [99, 98]
    assert "after the last task" in leaks[0]["reason"] and "no task" in leaks[1]["reason"]


# --- the Trace Event Format ---------------------------------------------------------------
# The documented fields (Trace Event Format, "JSON Object Format"): traceEvents holds
# events with name, ph, pid, tid; complete events (X) have ts and dur in microseconds;
# metadata events (M) process_name / thread_name / *_sort_index carry args; flow events
# (s, f) share an id, and an f with bp "e" binds to the enclosing slice.

_PHASES = {"X", "M", "s", "f"}


def check_trace_format(doc):
    """Validates doc against the format; returns (slices by (pid, tid), names of pids, of (pid, tid))."""
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    slices, pnames, tnames, flows = {}, {}, {}, {}
    for e in doc["traceEvents"]:
        assert isinstance(e.get("name"), str) and e["name"], e
        assert e.get("ph") in _PHASES, e
        assert isinstance(e.get("pid"), int), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"), e
            if e["name"].endswith("_name"):
                assert isinstance(e["args"]["name"], str)
                if e["name"] == "process_name":
                    pnames[e["pid"]] = e["args"]["name"]
                else:
                    tnames[(e["pid"], e["tid"])] = e["args"]["name"]
            else:
                assert isinstance(e["args"]["sort_index"], int)
            continue
        assert isinstance(e.get("tid"), int), e
        assert isinstance(e.get("ts"), (int, float)) and math.isfinite(e["ts"]) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e
            slices.setdefault((e["pid"], e["tid"]), []).append(e)
        else:
            assert isinstance(e.get("id"), int), e
            flows.setdefault(e["id"], []).append(e)
    for fid, evs in flows.items():
        phases = sorted(x["ph"] for x in evs)
        assert phases == ["f", "s"], (fid, evs)
        s, f = sorted(evs, key=lambda x: x["ph"], reverse=True)
        assert f.get("bp") == "e" and s["ts"] <= f["ts"]
        assert s["name"] == f["name"] and s.get("cat") == f.get("cat"), (s, f)
        for ev in (s, f):  # each end lies inside a slice of its track
            assert any(x["ts"] <= ev["ts"] <= x["ts"] + x["dur"] for x in slices.get((ev["pid"], ev["tid"]), [])), ev
    for track in slices:
        assert track[0] in pnames and track in tnames, f"track {track} is not named"
    return slices, pnames, tnames


def check_flag_flows(doc, slices, pnames, tnames):
    """Every flag flow joins two pipes of one core: it leaves the slice its set_flag
    followed and ends in the slice its wait_flag released, which starts no earlier than
    the first ends. Returns the flows as (name, core process name)."""
    ends = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f") and e["cat"] == "flag":
            ends.setdefault(e["id"], {})[e["ph"]] = e
    out = []
    for fid, se in ends.items():
        s, f = se["s"], se["f"]
        assert s["pid"] == f["pid"] and s["tid"] != f["tid"], (s, f)
        m = re.fullmatch(r"flag (\w+)->(\w+) #(\d+)", s["name"])
        assert m and (tnames[(s["pid"], s["tid"])], tnames[(f["pid"], f["tid"])]) == (m[1], m[2]), (s["name"], tnames)
        (a,) = [x for x in slices[(s["pid"], s["tid"])] if x["ts"] < s["ts"] < x["ts"] + x["dur"]]
        (b,) = [x for x in slices[(f["pid"], f["tid"])] if x["ts"] < f["ts"] < x["ts"] + x["dur"]]
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-9, (a, b)
        assert a["args"]["task"] == b["args"]["task"] and a["args"]["block"] == b["args"]["block"]
        out.append((s["name"], pnames[s["pid"]]))
    assert doc["otherData"]["flag_flows"] == len(out)
    return out


def test_trace_is_valid_and_matches_the_profile(profiled, tmp_path):
    _, r, *_ = profiled
    paths = r.save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["profile.json", "report.html", "trace.json"]
    with open(paths["trace"]) as f:
        doc = json.load(f)
    slices, pnames, tnames = check_trace_format(doc)
    tasks_pid = next(pid for pid, n in pnames.items() if n == "tasks")
    task_slices = sorted(slices[(tasks_pid, 0)], key=lambda e: e["ts"])
    assert [e["name"] for e in task_slices] == [t.name for t in r.tasks]
    for e, t in zip(task_slices, r.tasks):
        assert e["ts"] == pytest.approx(t.start_ms * 1e3) and e["dur"] == pytest.approx(t.time_ms * 1e3)
    flows = [e for e in doc["traceEvents"] if e["ph"] == "s" and e["cat"] == "task"]
    assert len(flows) == sum(len(t["deps"]) for t in r._data["tasks"]) > 0
    check_flag_flows(doc, slices, pnames, tnames)
    # One track per core and pipe; a core's busy time per pipe is the sum of its slices.
    core_tracks = {k: v for k, v in slices.items() if k[0] != tasks_pid}
    assert {pnames[pid] for pid, _ in core_tracks} >= {"cube core 0", "vector core 0"}
    assert {tnames[k] for k in core_tracks} >= {"mte2", "m", "v"}
    for t in r.tasks:
        t0, t1 = t.start_ms * 1e3, (t.start_ms + t.time_ms) * 1e3
        for c in t.cores:
            pid = next(pid for pid, n in pnames.items() if n == f"{c['kind']} core {c['core']}")
            for pipe, ratio in c["pipes"].items():
                tid = next(k[1] for k, n in tnames.items() if k[0] == pid and n == pipe)
                inside = [e for e in slices[(pid, tid)] if e["args"]["task"] == t.name]
                assert all(e["ts"] >= t0 - 1e-6 for e in inside)
                assert all(e["ts"] + e["dur"] <= t1 + 1e-6 for e in inside)
                assert sum(e["dur"] for e in inside) == pytest.approx(ratio * t.time_ms * 1e3, rel=1e-6)


def test_report_is_self_contained(profiled, tmp_path):
    _, r, *_ = profiled
    html = open(r.save(tmp_path)["report"]).read()
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<svg") == 2 and 'aria-label="roofline"' in html and 'aria-label="memory over time"' in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "matmul" in html and "Bottlenecks" in html
    assert r._repr_html_() in html
    data = json.load(open(os.path.join(tmp_path, "profile.json")))
    assert data["total_time_ms"] == r.total_time and data["op_times_ms"] == r.op_times


def test_profile_config_saves_every_run(tmp_path):
    cfg = p.ProfileConfig(enable_profiling=True, profile_output_dir=str(tmp_path / "prof"), profile_metrics=["time", "memory", "cache"])
    ex = p.compile(block, profile_config=cfg)
    ex.run(*_inputs())
    assert ex.get_profile_result() is not None
    assert sorted(os.listdir(tmp_path / "prof")) == ["profile.json", "report.html", "trace.json"]
    plain = p.compile(block)
    plain.run(*_inputs())
    assert plain.get_profile_result() is None


def test_compare_profiles_of_two_opt_levels():
    x, w = _inputs()
    rs = []
    for level in (0, 2):
        ex = p.compile(block, p.CompileConfig(opt_level=level))
        ex.run(x, w, profile=True)
        rs.append(ex.get_profile_result())
    c = p.compare_profiles(*rs)
    assert c.total["a_ms"] == rs[0].total_time and c.total["b_ms"] == rs[1].total_time
    by_op = {row["op"]: row for row in c.rows}
    assert by_op["matmul"]["a_count"] == 1 and by_op["matmul"]["b_count"] == 1
    assert by_op["relu"]["b_ms"] == 0 and by_op["relu"]["a_ms"] > 0
    for row in c.rows:
        assert row["diff_ms"] == pytest.approx(row["b_ms"] - row["a_ms"])
        assert row["a_ms"] == pytest.approx(rs[0].op_times.get(row["op"], 0.0))
    assert "total" in str(c) and "<table>" in c._repr_html_()
    same = p.compare_profiles(rs[1], rs[1])
    assert all(row["diff_ms"] == 0 for row in same.rows)


def test_bad_profile_arguments():
    with pytest.raises(ValueError, match="unknown profile metric"):
        p.ProfileConfig(profile_metrics=["time", "power"])
    with pytest.raises(TypeError, match="profile_metrics"):
        p.ProfileConfig(profile_metrics=[1])
    with pytest.raises(TypeError, match="profile_config"):
        p.compile(block, profile_config="yes")
    with pytest.raises(TypeError, match="profile"):
        p.compile(block).run(*_inputs(), profile="yes")
    with pytest.raises(TypeError, match="ProfileResult"):
        p.compare_profiles(1, 2)


def test_concurrent_tasks_have_tracks_of_their_own(tmp_path):
    """Two independent matmuls run at the same time on disjoint cores: the profile and
    the trace number cores as the chip's (with each task's own number kept), so the two
    tasks' instructions never share a track, and the flag flows stay on their core."""

    def two(a, b, c, d):
        return p.matmul(a, b), p.matmul(c, d)

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float16) for s in [(32, 64), (64, 32)] * 2]
    ex = p.compile(two, p.CompileConfig(concurrent_tasks=True))
    ex.run(*xs, profile=True)
    r = ex.get_profile_result()
    t0, t1 = r.tasks
    assert t1.start_ms < t0.start_ms + t0.time_ms  # they overlap in time
    assert t0.chip_cores and t1.chip_cores and not set(t0.chip_cores) & set(t1.chip_cores)
    for t in (t0, t1):
        assert sorted(c["task_core"] for c in t.cores) == list(range(t.active_cores))
        assert {c["core"] for c in t.cores} == {t.chip_cores[c["task_core"]] for c in t.cores}
    with open(r.save(tmp_path)["trace"]) as f:
        doc = json.load(f)
    slices, pnames, tnames = check_trace_format(doc)
    by_core = {}
    for (pid, tid), evs in slices.items():
        if pnames[pid] == "tasks":
            continue
        evs = sorted(evs, key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9, (pnames[pid], tnames[(pid, tid)], a, b)
        by_core.setdefault(pnames[pid], set()).update(e["args"]["task"] for e in evs)
    want = {f"cube core {c}": {t.name} for t in (t0, t1) for c in t.chip_cores[: t.active_cores]}
    assert by_core == want
    flows = check_flag_flows(doc, slices, pnames, tnames)
    assert {core for _, core in flows} == set(want)


def test_a_mixed_tasks_vector_cores_are_its_ai_cores():
    """A mixed task placed on AI cores j runs its vector cores on the chip's vector
    cores of those AI cores (j * per_ai + v), as the dispatcher books them."""
    import sys

    sys.path.insert(0, os.path.join(str(ROOT), "examples"))
    import block_mixed

    k = block_mixed.matmul_bias_relu(grid=2, T=64)

    def two(a, b, bias, c, d):
        return p.call_kernel(k, a, b, bias), p.call_kernel(k, c, d, bias)

    rng = np.random.default_rng(0)
    a, b, c, d = [(rng.standard_normal((128, 128)) / 8).astype(np.float16) for _ in range(4)]
    bias = rng.standard_normal((1, 128)).astype(np.float16)
    ex = p.compile(two, p.CompileConfig(concurrent_tasks=True, chip="a2"))
    ex.run(a, b, bias, c, d, profile=True)
    r = ex.get_profile_result()
    per_ai = r.chip["vector_cores"] // r.chip["cube_cores"]
    placed = set()
    for t in r.tasks:
        for c in t.cores:
            if c["kind"] == "cube":
                assert c["core"] == t.chip_cores[c["task_core"]]
            else:
                ai, v = divmod(c["task_core"], per_ai)
                assert c["core"] == t.chip_cores[ai] * per_ai + v
            assert (c["kind"], c["core"]) not in placed  # two tasks never share a core here
            placed.add((c["kind"], c["core"]))
    assert {c["kind"] for t in r.tasks for c in t.cores} == {"cube", "vector"}


@pytest.mark.parametrize("name,fn,shapes", [
    ("add_f16_rows_of_256_bytes", lambda x, y: x + y, [(8192, 128), (8192, 128)]),
    ("add_f32_wide", lambda x, y: x + y, [(1024, 2048), (1024, 2048)]),
    ("matmul_add", lambda a, b, c: p.matmul(a, b) + c, [(1024, 1024), (1024, 1024), (1024, 1024)]),
    ("softmax", lambda x: p.softmax(x, axis=-1), [(2048, 1024)]),
    ("transpose_add", lambda x, y: p.transpose(x, (1, 0)) + y, [(512, 768), (768, 512)]),
])  # fmt: skip
def test_no_profile_figure_exceeds_the_chips_peaks(name, fn, shapes):
    """The HBM and L2 rates a profile reports are what the simulated memory system moved,
    which holds every transfer to the chip's rates: no figure may exceed its peak
    (an add of f16 rows of 256 bytes once showed 2.1 TB/s on a 1.6 TB/s chip)."""
    p.set_device("a2")
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    ex = p.compile(fn)
    ex.run(*args, profile=True)
    r = ex.get_profile_result()
    for t in r.tasks:
        assert 0 < t.hbm_bytes
        assert t.hbm_bandwidth <= r.chip["gm_bytes_per_s"], (name, t.op, t.hbm_bandwidth)
        assert t.bandwidth <= r.chip["l2_bytes_per_s"], (name, t.op, t.bandwidth)
        assert t.hbm_bytes_read >= t.l2_misses * 512  # whole lines are filled


def test_profile_shows_start_up_and_shared_waits_per_core():
    """A profile gives each task's start-up (launch to steady state) and each core's
    own start-up and the time its transfers waited for what other cores held: a
    fused matmul + add on all 24 AI cores hands accumulators from the cube cores to
    the vector cores, which share the L2 and the cross-core flag unit."""
    p.set_device("a2")
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal((1024, 1024)).astype(np.float16) for _ in range(3))
    ex = p.compile(lambda a, b, c: p.matmul(a, b) + c)
    ex.run(a, b, c, profile=True)
    (t,) = ex.get_profile_result().tasks
    assert t.op.startswith("fused_matmul")
    assert t.startup_ms > 0
    assert t.launch_ms <= t.time_ms
    cube = [c for c in t.cores if c["kind"] == "cube"]
    assert len(cube) == t.active_cores
    assert all(c["startup_cycles"] > 0 for c in cube)  # flags set up, pages walked
    assert sum(c["shared_wait_cycles"] for c in cube) > 0
    assert all(c["startup_cycles"] == 0 and c["shared_wait_cycles"] == 0 for c in t.cores if c["kind"] != "cube")  # on the AI core's entry
