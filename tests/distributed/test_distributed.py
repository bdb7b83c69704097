"""Meshes, collectives and p.shard_map, against numpy emulations of each algorithm's order
and the alpha-beta-gamma formulas of HCCL's algorithm guide (written out here, not taken
from the code under test)."""

import math
import threading
import time

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT

D = p.distributed


# --- time: the formulas, 1 KB to 1 GB ------------------------------------------------------


def formula(kind, algo, q, n, a, b, g):
    lg = math.log2(q)
    table = {
        ("reduce_scatter", "mesh"): a + n / q * b + (q - 1) / q * n * g,
        ("reduce_scatter", "ring"): (q - 1) * a + (q - 1) / q * n * b + (q - 1) / q * n * g,
        ("reduce_scatter", "hd"): lg * a + (q - 1) / q * n * b + (q - 1) / q * n * g,
        ("all_gather", "mesh"): a + n / q * b,
        ("all_gather", "ring"): (q - 1) * a + (q - 1) / q * n * b,
        ("all_gather", "hd"): lg * a + (q - 1) / q * n * b,
        ("all_reduce", "mesh"): 2 * a + 2 / q * n * b + (q - 1) / q * n * g,
        ("all_reduce", "ring"): 2 * (q - 1) * a + 2 * (q - 1) / q * n * b + (q - 1) / q * n * g,
        ("all_reduce", "hd"): 2 * lg * a + 2 * (q - 1) / q * n * b + (q - 1) / q * n * g,
        ("broadcast", "mesh"): 2 * a + 2 / q * n * b,
        ("broadcast", "ring"): (q - 1) * (a + n * b),
        ("broadcast", "hd"): math.ceil(lg) * (a + n * b),
        ("all_to_all", "mesh"): a + n / q * b,
        ("all_to_all", "ring"): (q - 1) * (a + n / q * b),  # pairwise: one peer a step
    }
    return table[(kind, algo)]


@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"])
@pytest.mark.parametrize("algo", ["mesh", "ring", "hd"])
def test_collective_time_is_the_formula_from_1kb_to_1gb(kind, algo):
    mesh = D.Mesh((8,), ("x",))
    if (kind, algo) == ("all_to_all", "hd"):  # HCCL has no halving-doubling all-to-all
        with pytest.raises(p.PyptoValueError):
            D.collective_time(kind, 1 << 10, mesh, algorithm=algo)
        return
    tier = mesh.info["tiers"][0]
    a = tier["latency_seconds"]
    b = 1 / (tier["bytes_per_second"] * tier["efficiency"])
    g = mesh.info["reduce_seconds_per_byte"]
    n = 1 << 10
    while n <= 1 << 30:
        share = n // 8 if kind == "all_gather" else n
        t = D.collective_time(kind, share, mesh, algorithm=algo)
        assert t["algorithm_seconds"] == pytest.approx(formula(kind, algo, 8, n, a, b, g), rel=1e-12)
        assert t["seconds"] == pytest.approx(t["algorithm_seconds"] + mesh.info["launch_seconds"], rel=1e-12)
        n <<= 1


def test_eight_chip_allreduce_of_1gb_matches_the_derived_figure():
    # interconnect facts (derived from the link figures, reduction not counted): about
    # 137 GB/s bus bandwidth, about 13.7 ms for 1 GB on 8 chips. The reduction (gamma)
    # term comes on top.
    mesh = D.Mesh((8,))
    n = 1 << 30
    t = D.collective_time("all_reduce", n, mesh)
    moving = t["algorithm_seconds"] - 7 / 8 * n * mesh.info["reduce_seconds_per_byte"]
    assert moving == pytest.approx(13.7e-3, rel=0.01)
    assert n / moving * 2 * 7 / 8 == pytest.approx(137e9, rel=0.01)


# --- values: numpy emulations of each algorithm's order --------------------------------------


def chunks(n, q):
    return [(n * j // q, n * (j + 1) // q) for j in range(q)]


def emulate_mesh(xs):
    """Mesh reduce-scatter: each chunk summed in rank order, in the dtype."""
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = acc + x
    return acc


def emulate_ring(xs):
    q, n = len(xs), xs[0].size
    out = np.empty_like(xs[0])
    for c, (lo, hi) in enumerate(chunks(n, q)):
        acc = xs[(c + 1) % q][lo:hi].copy()  # chunk c starts at rank c+1 ...
        for s in range(2, q + 1):
            acc = acc + xs[(c + s) % q][lo:hi]  # ... and gathers each rank's on the way to c
        out[lo:hi] = acc
    return out


def emulate_hd(xs):
    """Recursive halving for 2^k ranks: at distance q/2, q/4, ..., 1 partners add."""
    q, n = len(xs), xs[0].size
    vals = [x.copy() for x in xs]
    for d in [q >> i for i in range(1, q.bit_length())]:
        vals = [vals[i] + vals[i ^ d] for i in range(q)]  # whole vectors: each rank keeps its half
    return vals[0]  # after the halving every rank's own chunk holds the same tree sum
    # (the tree of chunk c pairs ranks by the same bits whatever c is)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("algo,emulate", [("mesh", emulate_mesh), ("ring", emulate_ring), ("hd", emulate_hd)])
def test_all_reduce_values_follow_the_algorithm_order(dt, algo, emulate):
    mesh = D.Mesh((8,), ("x",))
    rng = np.random.default_rng(7)
    xs = [(rng.standard_normal(64) * 10 ** rng.uniform(-3, 3, 64)).astype(dt) for _ in range(8)]
    f = p.shard_map(lambda x: D.all_reduce(x, algorithm=algo), mesh, in_specs=(D.P("x"),), out_specs=D.P("x"))
    got = f(np.concatenate(xs)).numpy().reshape(8, 64)
    want = emulate(xs)
    for r in range(8):
        np.testing.assert_array_equal(got[r].view(np.uint8), want.view(np.uint8))
    # The orders differ: at least one algorithm pair disagrees in some bit on these data.
    assert not np.array_equal(emulate_mesh(xs), emulate_ring(xs)) or not np.array_equal(emulate_mesh(xs), emulate_hd(xs))


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("algo,emulate", [("mesh", emulate_mesh), ("ring", emulate_ring), ("hd", emulate_hd)])
def test_reduce_scatter_values_follow_the_algorithm_order(dt, algo, emulate):
    # Rank k ends with chunk k of the sum, added in the order the algorithm's steps
    # bring the chunk there (ring: chunk k ends its way around at rank k).
    mesh = D.Mesh((8,), ("x",))
    rng = np.random.default_rng(11)
    xs = [(rng.standard_normal(64) * 10 ** rng.uniform(-3, 3, 64)).astype(dt) for _ in range(8)]
    f = p.shard_map(lambda x: D.reduce_scatter(x, algorithm=algo), mesh, in_specs=(D.P("x"),), out_specs=D.P("x"))
    got = f(np.concatenate(xs)).numpy()
    assert got.shape == (64,)
    np.testing.assert_array_equal(got.view(np.uint8), emulate(xs).view(np.uint8))


def test_hierarchical_all_reduce_across_servers():
    # 4 servers of 8: reduce-scatter inside each server (mesh: rank order), all-reduce of
    # each chunk across the servers (halving-doubling over 4: the cheaper one here), then
    # all-gather inside.
    mesh = D.Mesh((32,), ("x",), preset="a2-nodes:4")
    rng = np.random.default_rng(3)
    n = 256
    xs = [(rng.standard_normal(n) * 10 ** rng.uniform(-3, 3, n)).astype(np.float32) for _ in range(32)]
    f = p.shard_map(lambda x: D.all_reduce(x), mesh, in_specs=(D.P("x"),), out_specs=D.P("x"))
    got = f(np.concatenate(xs)).numpy().reshape(32, n)
    node_sums = [emulate_mesh(xs[8 * j:8 * j + 8]) for j in range(4)]
    want = emulate_hd(node_sums)
    np.testing.assert_array_equal(got[5], want)
    np.testing.assert_array_equal(got[31], want)
    phases = D.last_report().collectives[0]["phases"]
    assert [(ph["kind"], ph["tier"], ph["algorithm"]) for ph in phases] == [
        ("reduce_scatter", "hccs", "mesh"), ("all_reduce", "roce", "hd"), ("all_gather", "hccs", "mesh")]


def test_collective_semantics_against_numpy():
    mesh = D.Mesh((2, 4), ("dp", "tp"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2 * 3, 4 * 8)).astype(np.float32)

    def fn(s):  # s: this rank's (3, 8) block
        g = D.all_gather(s, axis=1, axis_name="tp")  # (3, 32)
        rs = D.reduce_scatter(g, axis=1, axis_name="tp")  # (3, 8): 4x the tp-sum's part
        a2a = D.all_to_all(s, split_axis=1, concat_axis=0, axis_name="tp")  # (12, 2)
        b = D.broadcast(s, root=2, axis_name="tp")
        return g, rs, a2a, b

    g, rs, a2a, b = p.shard_map(fn, mesh, in_specs=(D.P("dp", "tp"),),
                                out_specs=[D.P("dp", None), D.P("dp", "tp"), D.P("dp", "tp"), D.P("dp", "tp")])(x)
    np.testing.assert_array_equal(g.numpy(), x)
    np.testing.assert_allclose(rs.numpy(), 4 * x, rtol=1e-6)
    blocks = x.reshape(2, 3, 4, 8)  # [dp, row, tp, col]
    want = np.zeros((2 * 12, 4 * 2), np.float32)
    for d in range(2):
        for r in range(4):  # rank r of the tp group gets column part r of every rank's block
            want[d * 12:(d + 1) * 12, r * 2:(r + 1) * 2] = np.concatenate(
                [blocks[d, :, s, r * 2:(r + 1) * 2] for s in range(4)], axis=0)
    np.testing.assert_array_equal(a2a.numpy(), want)
    want_b = np.concatenate([np.tile(blocks[d, :, 2, :], (1, 4)) for d in range(2)], axis=0)
    np.testing.assert_array_equal(b.numpy(), want_b)


def test_tensor_parallel_linear_pair_matches_one_chip():
    # Megatron: column-parallel w1, row-parallel w2, one all-reduce for the pair.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 64)).astype(np.float16)
    w1 = (rng.standard_normal((64, 128)) / 8).astype(np.float16)
    w2 = (rng.standard_normal((128, 64)) / 11).astype(np.float16)
    ref = (np.maximum(x.astype(np.float32) @ w1.astype(np.float32), 0) @ w2.astype(np.float32))
    for tp in (2, 4, 8):
        mesh = D.Mesh((tp,), ("tp",))

        def block(x, a, b):
            h = p.relu(p.matmul(x, a))
            return D.psum(p.matmul(h, b), "tp")

        y = p.shard_map(block, mesh, in_specs=(None, D.P(None, "tp"), D.P("tp", None)), out_specs=None)(x, w1, w2)
        np.testing.assert_allclose(y.numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
        rep = D.last_report()
        assert len(rep.collectives) == 1 and rep.collectives[0]["group"] == list(range(tp))
        assert all(r.compute_s > 0 for r in rep.ranks)


def test_ppermute_send_recv_and_axis_index():
    mesh = D.Mesh((4,), ("x",))

    def fn(s):
        i = D.axis_index("x")
        shifted = D.ppermute(s, "x", [(j, (j + 1) % 4) for j in range(4)])
        if i == 0:
            D.send(s * 10, 3)
            got = s
        elif i == 3:
            got = D.recv(0, s.shape, s.dtype)
        else:
            got = s
        return shifted, got

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    shifted, got = p.shard_map(fn, mesh, in_specs=(D.P("x"),), out_specs=[D.P("x"), D.P("x")])(x)
    np.testing.assert_array_equal(shifted.numpy(), np.roll(x, 1, axis=0))
    want = x.copy()
    want[3] = x[0] * 10
    np.testing.assert_array_equal(got.numpy(), want)


def test_async_all_reduce_overlaps_compute():
    mesh = D.Mesh((8,), ("x",))
    rng = np.random.default_rng(2)
    g = rng.standard_normal((8 * 1024, 1024)).astype(np.float32)
    a = rng.standard_normal((256, 256)).astype(np.float16)

    def step(grad, w, async_op):
        work = D.all_reduce(grad, async_op=async_op)
        h = p.matmul(w, w)  # independent of the gradient
        h.realize()
        s = work.wait() if async_op else work
        return s, h

    def timed(async_op):
        f = p.shard_map(lambda gr, w: step(gr, w, async_op), mesh, in_specs=(D.P("x"), None), out_specs=[D.P("x"), None])
        out = f(g, a)
        return D.last_report(), out

    sync, (s1, _) = timed(False)
    asy, (s2, _) = timed(True)
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())
    comm = sync.collectives[0]["seconds"]
    compute = min(r.compute_s for r in sync.ranks)
    assert comm > 0 and compute > 0
    assert sync.seconds >= comm + compute * 0.99
    assert asy.seconds < sync.seconds
    assert asy.seconds == pytest.approx(max(comm, compute), rel=0.05)


# --- errors, never hangs -------------------------------------------------------------------


# The rendezvous reports a disagreement at once (no timeout to wait out); the bound
# on how long a failing run takes covers starting the rank threads and their own work,
# generously, for a loaded machine (the error itself arrives within a second of the
# event that makes it certain). A hang would run into _run_within's limit.
TOOK = 5.0


def _run_within(f, seconds=30.0):
    out = {}

    def target():
        try:
            out["value"] = f()
        except BaseException as e:  # noqa: BLE001
            out["error"], out["at"] = e, time.perf_counter()

    t0 = time.perf_counter()
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), "the run hangs"
    return out, time.perf_counter() - t0


def test_a_rank_that_skips_a_collective_is_named():
    mesh = D.Mesh((4,), ("x",))
    returned = {}

    def fn(s):
        if D.rank() != 2:
            s = D.all_reduce(s)
        else:
            returned["at"] = time.perf_counter()
        return s

    out, took = _run_within(lambda: p.shard_map(fn, mesh, (D.P("x"),), D.P("x"))(np.ones((4, 2), np.float32)))
    e = out["error"]
    assert isinstance(e, D.CollectiveError)
    assert "rank 2 returned without calling all_reduce" in str(e) and "test_distributed.py" in str(e)
    assert took < TOOK
    # Within a second of the skip becoming certain (the rank's return): no timeout is waited out.
    assert out["at"] - returned["at"] < 1.0


def test_ranks_that_disagree_on_shape_or_order_are_named():
    mesh = D.Mesh((2,), ("x",))

    def bad_shape(s):
        return D.all_reduce(s if D.rank() == 0 else p.concat([s, s], axis=1))

    out, took = _run_within(lambda: p.shard_map(bad_shape, mesh, (D.P("x"),), D.P("x"))(np.ones((2, 2), np.float32)))
    e = out["error"]
    assert isinstance(e, D.CollectiveError) and "ranks 0 and 1 disagree" in str(e) and "shape=(1, 2)" in str(e)
    assert "test_distributed.py" in str(e) and "bad_shape" in str(e)
    assert took < TOOK

    def bad_dtype(s):
        return D.all_gather(s if D.rank() == 0 else p.cast(s, "float16"), axis=1)

    out, took = _run_within(lambda: p.shard_map(bad_dtype, mesh, (D.P("x"),), D.P("x"))(np.ones((2, 2), np.float32)))
    e = out["error"]
    assert isinstance(e, D.CollectiveError) and "ranks 0 and 1 disagree" in str(e) and "all_gather" in str(e)
    assert "dtype=float32" in str(e) and "dtype=float16" in str(e) and "bad_dtype" in str(e)
    assert took < TOOK

    mesh4 = D.Mesh((2, 2), ("a", "b"))

    def bad_order(s):  # ranks 0 and 3 go a-then-b, ranks 1 and 2 b-then-a: a cycle
        if D.axis_index("a") == D.axis_index("b"):
            s = D.all_reduce(s, axis_name="a")
            return D.all_reduce(s, axis_name="b")
        s = D.all_reduce(s, axis_name="b")
        return D.all_reduce(s, axis_name="a")

    out, took = _run_within(lambda: p.shard_map(bad_order, mesh4, (D.P("a", "b"),), D.P("a", "b"))(np.ones((2, 2), np.float32)))
    e = out["error"]
    assert isinstance(e, D.CollectiveError) and "different orders" in str(e)
    assert took < TOOK


def test_bad_arguments_say_what_is_accepted():
    mesh = D.Mesh((4,), ("x",))
    with pytest.raises(p.PyptoValueError, match="outside a per-rank function"):
        D.all_reduce(p.from_numpy(np.ones(4, np.float32)))
    with pytest.raises(p.PyptoValueError, match="does not split evenly"):
        p.shard_map(lambda s: s, mesh, (D.P("x"),), D.P("x"))(np.ones((6, 2), np.float32))
    with pytest.raises(p.PyptoValueError, match="mesh axis 'y' does not exist"):
        p.shard_map(lambda s: D.all_reduce(s, axis_name="y"), mesh, (D.P("x"),), D.P("x"))(np.ones((4, 2), np.float32))
    with pytest.raises(p.PyptoValueError, match="do not fit preset"):
        D.Mesh((16,))
    with pytest.raises(p.PyptoValueError, match="unknown mesh preset"):
        D.Mesh((2,), preset="b9")
    with pytest.raises(p.PyptoValueError, match="op"):
        p.shard_map(lambda s: D.all_reduce(s, "mean"), mesh, (D.P("x"),), D.P("x"))(np.ones((4, 2), np.float32))
    with pytest.raises(p.PyptoValueError, match="switched"):
        D.collective_time("all_reduce", 1 << 20, D.Mesh((16,), preset="a2-nodes:2"), algorithm="mesh")


def test_the_docs_example_runs():
    import pathlib
    import re

    doc = (ROOT / "docs" / "distributed.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    scope = {}
    exec(compile(code, "docs/distributed.md", "exec"), scope)
    x, w1, w2 = scope["x"], scope["w1"], scope["w2"]
    ref = np.maximum(x.astype(np.float32) @ w1.astype(np.float32), 0) @ w2.astype(np.float32)
    np.testing.assert_allclose(scope["y"].numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    assert 0 < scope["r"].comm_share < 1


def test_a_failing_rank_reports_its_own_error_and_the_others_do_not_hang():
    mesh = D.Mesh((4,), ("x",))

    def fn(s):
        if D.rank() == 1:
            p.matmul(s, s)  # (1, 2) @ (1, 2): a shape error on rank 1 only
        return D.all_reduce(s)

    out, took = _run_within(lambda: p.shard_map(fn, mesh, (D.P("x"),), D.P("x"))(np.ones((4, 2), np.float32)))
    e = out["error"]
    assert isinstance(e, p.ShapeError) and str(e).startswith("rank 1:")
    assert took < TOOK


def test_distributed_example_matches_one_chip_and_its_bubble_is_gpipes():
    import importlib.util
    import pathlib

    path = ROOT / "examples" / "distributed.py"
    spec = importlib.util.spec_from_file_location("distributed_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res = mod.main(["--seq", "16", "--hidden", "64", "--heads", "4", "--microbatches", "4"])
    for key in ("tp1", "tp2", "tp4", "guide", "hybrid", "pipeline"):
        assert res[key]["max_err"] < 2e-2, (key, res[key])
    assert res["guide"]["outputs"] == 4 and res["guide"]["tp"] == 4 and 0 < res["guide"]["comm_share"] < 1
    assert res["tp1"]["comm_share"] == 0 < res["tp2"]["comm_share"]
    pl = res["pipeline"]
    assert abs(pl["bubble"] - pl["theory"]) < 0.05, pl
    # Trained through pipeline_parallel: the single chip's loss and gradients (fp16
    # blocks, float32 loss); 1F1B holds fewer activations than GPipe on every stage but
    # the first, which holds as many (p - 0 = m = 4 micro-batches in flight).
    f1, gp = res["train_1f1b"], res["train_gpipe"]
    for r in (f1, gp):
        assert r["loss_err"] < 1e-3 and r["grad_rel_err"] < 2e-2, r
        assert 0 < r["bubble"] <= r["theory"] + 0.02 and 0 < r["comm_share"] < 0.1
    assert f1["peak_activation_bytes"][0] == gp["peak_activation_bytes"][0]
    assert all(a < b for a, b in zip(f1["peak_activation_bytes"][1:], gp["peak_activation_bytes"][1:]))
    assert all(m > a for m, a in zip(f1["memory_bytes"], f1["peak_activation_bytes"]))  # weights and gradients too


def test_data_parallel_compile_runs_every_rank_on_its_batch():
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((32, 16)) / 6).astype(np.float16)

    def model(x):
        return p.gelu(p.matmul(x, w))

    cfg = p.DistributedConfig(parallel_strategy="data_parallel", device_mesh=[4], data_parallel_size=4)
    ex = p.compile(model, config=cfg)
    xs = [rng.standard_normal((8, 32)).astype(np.float16) for _ in range(4)]
    outs = ex.run(xs)
    assert len(outs) == 4
    for x, o in zip(xs, outs):
        m = x.astype(np.float32) @ w.astype(np.float32)
        ref = 0.5 * m * (1 + np.tanh(np.sqrt(2 / np.pi) * (m + 0.044715 * m ** 3)))
        np.testing.assert_allclose(o.numpy().astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    # One global batch is split over the ranks; every rank computes at once.
    whole = ex.run(np.concatenate(xs))
    np.testing.assert_array_equal(whole.numpy(), np.concatenate([o.numpy() for o in outs]))
    rep = ex.last_report
    assert rep.seconds == pytest.approx(max(r.total_s for r in rep.ranks)) and rep.seconds > 0


def test_distributed_config_is_checked_and_unbuilt_strategies_say_so():
    with pytest.raises(p.PyptoValueError, match="do not cover the 4 ranks"):
        p.DistributedConfig(device_mesh=[2, 2], tensor_parallel_size=2)
    with pytest.raises(p.PyptoValueError, match="parallel_strategy"):
        p.DistributedConfig(parallel_strategy="zero3")
    with pytest.raises(p.PyptoValueError, match="backend"):
        p.DistributedConfig(backend="mpi")
    cfg = p.DistributedConfig(parallel_strategy="pipeline_parallel", device_mesh=[4], pipeline_parallel_size=4)
    with pytest.raises(p.PyptoTypeError, match="list of layers"):  # the pipeline cuts a model by layer
        p.compile(42, config=cfg)
    with pytest.raises(p.PyptoValueError, match="computes nothing"):  # a function is traced, then cut
        p.compile(lambda x: x, config=cfg).run(np.ones((4, 2), np.float32))


def test_data_parallel_training_steps_equal_one_chip_on_the_whole_batch():
    # DP = 4: each rank takes the gradient of its quarter of the batch, the gradients are
    # averaged by all-reduce (one bucket per parameter, async, waited before the update)
    # and every rank applies the same SGD step; the parameters track single-chip training
    # on the whole batch.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    y = rng.standard_normal((32, 4)).astype(np.float32)
    w1 = (rng.standard_normal((16, 24)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((24, 4)) / 5).astype(np.float32)
    lr, steps = 0.1, 3

    def loss_fn(params, xb, yb):
        h = p.tanh(p.matmul(xb, params[0]))
        return p.mean((p.matmul(h, params[1]) - yb) ** 2.0)

    # one chip, whole batch
    params = [p.from_numpy(w1), p.from_numpy(w2)]
    for _ in range(steps):
        _, g = p.value_and_grad(loss_fn)(params, p.from_numpy(x), p.from_numpy(y))
        params = [p.from_numpy((w.numpy() - lr * gw.numpy()).astype(np.float32)) for w, gw in zip(params, g)]
    single = [w.numpy() for w in params]

    mesh = D.Mesh((4,), ("dp",))

    def train(xs, ys, a, b):
        ws = [a, b]
        for _ in range(steps):
            _, g = p.value_and_grad(loss_fn)(ws, xs, ys)
            works = [D.all_reduce(gw, async_op=True) for gw in g]  # buckets overlap each other
            ws = [w - lr * (wk.wait() * 0.25) for w, wk in zip(ws, works)]
        return tuple(ws)

    out = p.shard_map(train, mesh, in_specs=(D.P("dp"), D.P("dp"), None, None), out_specs=[None, None])(x, y, w1, w2)
    for got, want in zip(out, single):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    rep = D.last_report()
    assert len(rep.collectives) == 2 * steps
