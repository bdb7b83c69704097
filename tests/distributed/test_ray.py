"""The Ray backend: ranks in Ray worker processes give the local backend's values bit for
bit and its simulated times; a worker killed mid-run is an error that names it, and the
driver runs on. A local Ray cluster on loopback with two worker actors (docs/distributed.md,
"Ray")."""

import os
import re
import signal
import socket
import threading
import time

import numpy as np
import pytest

import pypto as p

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'pypto[distributed]' to run the Ray backend tests")
D = p.distributed


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 1024 * 1024, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def tp_block(x, w1, w2):
    # Megatron's pair: column-parallel w1, row-parallel w2, one all-reduce.
    h = p.gelu(p.matmul(x, w1))
    return D.all_reduce(p.matmul(h, w2), axis_name="tp")


def test_tensor_parallel_block_equals_local_bit_for_bit():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w1 = (rng.standard_normal((128, 512)) / 11).astype(np.float16)
    w2 = (rng.standard_normal((512, 128)) / 22).astype(np.float16)
    mesh = D.Mesh((4,), ("tp",))
    specs = dict(in_specs=(None, D.P(None, "tp"), D.P("tp", None)), out_specs=None)
    local = p.shard_map(tp_block, mesh, **specs)(x, w1, w2).numpy()
    lrep = D.last_report()
    remote = p.shard_map(tp_block, mesh, backend="ray", workers=2, **specs)(x, w1, w2).numpy()
    rrep = D.last_report()
    assert bits(local) == bits(remote)
    assert rrep.seconds == lrep.seconds
    assert [r.total_s for r in rrep.ranks] == [r.total_s for r in lrep.ranks]
    assert [(c["kind"], c["group"], c["bytes"], c["seconds"]) for c in rrep.collectives] == \
        [(c["kind"], c["group"], c["bytes"], c["seconds"]) for c in lrep.collectives]
    # and the single chip within fp16 tolerance
    ref = (np.asarray(p.gelu(p.from_numpy(x.astype(np.float32) @ w1.astype(np.float32))).numpy()) @ w2.astype(np.float32))
    np.testing.assert_allclose(remote.astype(np.float32), ref, rtol=3e-2, atol=3e-2)


def test_data_parallel_training_equals_local_bit_for_bit():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    y = rng.standard_normal((32, 4)).astype(np.float32)
    w1 = (rng.standard_normal((16, 24)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((24, 4)) / 5).astype(np.float32)

    def train(xs, ys, a, b):
        ws = [a, b]
        for _ in range(3):
            _, g = p.value_and_grad(lambda ps, xb, yb: p.mean((p.matmul(p.tanh(p.matmul(xb, ps[0])), ps[1]) - yb) ** 2.0))(ws, xs, ys)
            works = [D.all_reduce(gw, async_op=True) for gw in g]
            ws = [w - 0.1 * (wk.wait() * 0.25) for w, wk in zip(ws, works)]
        return tuple(ws)

    mesh = D.Mesh((4,), ("dp",))
    specs = dict(in_specs=(D.P("dp"), D.P("dp"), None, None), out_specs=[None, None])
    local = p.shard_map(train, mesh, **specs)(x, y, w1, w2)
    remote = p.shard_map(train, mesh, backend="ray", workers=2, **specs)(x, y, w1, w2)
    for a, b in zip(local, remote):
        assert bits(a.numpy()) == bits(b.numpy())


def test_distributed_config_runs_data_parallel_on_ray():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    w = rng.standard_normal((32, 16)).astype(np.float32)

    def model(xb):
        return p.relu(p.matmul(xb, p.from_numpy(w)))

    local = p.compile(model, config=p.DistributedConfig(device_mesh=[4])).run(x).numpy()
    ex = p.compile(model, config=p.DistributedConfig(device_mesh=[4], backend="ray", workers=2))
    assert bits(ex.run(x).numpy()) == bits(local)
    assert len(ex.last_report.ranks) == 4


def test_disagreeing_ranks_name_each_other_as_locally():
    mesh = D.Mesh((4,), ("tp",))

    def skew(x):
        if D.rank() == 2:
            return x
        return D.all_reduce(x)

    x = np.ones((4, 8), np.float32)
    with pytest.raises(D.CollectiveError, match="rank 2 returned without calling all_reduce"):
        p.shard_map(skew, mesh, in_specs=D.P("tp"), out_specs=D.P("tp"), backend="ray", workers=2)(x)


def test_a_rank_error_is_raised_with_its_rank():
    mesh = D.Mesh((4,), ("tp",))

    def bad(x):
        if D.rank() == 3:
            return p.matmul(x, x)  # [1, 8] x [1, 8]: the shapes do not chain
        return x

    with pytest.raises(p.PyptoError, match="rank 3"):
        p.shard_map(bad, mesh, in_specs=D.P("tp"), out_specs=D.P("tp"), backend="ray", workers=2)(np.ones((4, 8), np.float32))


def _worker_pids(mesh):
    """The process of each rank, from a run that asks them."""
    pids = p.shard_map(lambda x: x * 0 + float(os.getpid()), mesh, in_specs=D.P("tp"), out_specs=D.P("tp"),
                       backend="ray", workers=2)(np.zeros((mesh.size, 1), np.float32))
    return [int(v) for v in pids.numpy()[:, 0]]


def _dies_at_start(x):
    if D.rank() == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return D.all_reduce(x * 2.0)


def _dies_inside_a_collective(x):
    # ranks 2 and 3 wait in the all-reduce for ranks 0 and 1 when their process dies
    if D.rank() == 3:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
    if D.rank() < 2:
        time.sleep(1.0)
    return D.all_reduce(x * 2.0)


def _dies_after_returning(x):
    # ranks 2 and 3 return at once and their process dies while ranks 0 and 1 compute
    if D.rank() == 3:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
    if D.rank() < 2:
        time.sleep(1.0)
    return x * 2.0


MOMENTS = {
    "at the start of its ranks' code": (_dies_at_start, "during the run"),
    "inside a collective": (_dies_inside_a_collective, "during the run"),
    "while the driver gathers results": (_dies_after_returning, "while the driver gathered the run's results"),
    "between runs": (None, r"before the run \(while idle\)"),
}


@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_a_worker_killed_at_any_moment_is_a_worker_error_and_the_next_run_works(moment):
    mesh = D.Mesh((4,), ("tp",))
    kept = p.from_numpy(np.arange(6, dtype=np.float32))
    x = np.ones((4, 8), np.float32)
    fn, when = MOMENTS[moment]
    for _ in range(3):
        run = p.shard_map(fn or (lambda v: v * 2.0), mesh, in_specs=D.P("tp"), out_specs=D.P("tp"), backend="ray", workers=2)
        if fn is None:  # kill worker 1's process while no run is in flight
            os.kill(_worker_pids(mesh)[3], signal.SIGKILL)
            time.sleep(0.3)
        try:
            run(x)
        except D.WorkerError as e:  # any other exception type fails the test
            msg = str(e)
        else:
            pytest.fail(f"a worker died {moment} and the run returned")
        assert re.search(rf"Ray worker 1 \(ranks 2-3, process \d+ on {socket.gethostname()}\) died {when}", msg), msg
        np.testing.assert_array_equal(kept.numpy(), np.arange(6, dtype=np.float32))  # the driver lost nothing
        again = p.shard_map(lambda v: D.all_reduce(v * 2.0), mesh, in_specs=D.P("tp"), out_specs=D.P("tp"),
                            backend="ray", workers=2)(x)
        np.testing.assert_array_equal(again.numpy(), np.full((4, 8), 8.0, np.float32))


def test_the_tensor_parallel_pass_on_ray_equals_local_bit_for_bit():
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((64, 256)) / 8).astype(np.float16)
    w2 = (rng.standard_normal((256, 64)) / 16).astype(np.float16)
    x = rng.standard_normal((16, 64)).astype(np.float16)

    def mlp(x):  # written for one chip: the pass makes it column- then row-parallel
        return x + p.matmul(p.gelu(p.matmul(p.layer_norm(x), w1)), w2)

    outs = {}
    for backend in ("local", "ray"):
        cfg = p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=4, backend=backend, workers=2)
        ex = p.compile(mlp, config=cfg)
        outs[backend] = (ex.run(x).numpy(), ex.last_report, ex.report)
    (local, lrep, plan), (remote, rrep, _) = outs["local"], outs["ray"]
    assert plan.sharded and len(plan.pairs) == 1
    assert bits(local) == bits(remote)
    assert rrep.seconds == lrep.seconds
    assert [(c["kind"], c["group"], c["bytes"]) for c in rrep.collectives] == [(c["kind"], c["group"], c["bytes"]) for c in lrep.collectives]


def test_the_data_parallel_trainer_on_ray_equals_local_bit_for_bit():
    # The bucketed trainer (parallel_strategy="data_parallel" with a list of layers):
    # each bucket's all-reduce meets in the coordinator while the backward goes on.
    rng = np.random.default_rng(4)
    h = 32
    layers = [(lambda x, w, b: p.tanh(p.matmul(x, w) + b),
               [(rng.standard_normal((h, h)) / 6).astype(np.float32), np.zeros(h, np.float32)]) for _ in range(3)]
    x = rng.standard_normal((16, h)).astype(np.float32)
    t = rng.standard_normal((16, h)).astype(np.float32)

    def mse(y, target):
        return p.mean((y - target) ** 2.0)

    runs = {}
    for backend in ("local", "ray"):
        cfg = p.DistributedConfig(parallel_strategy="data_parallel", device_mesh=[4], data_parallel_size=4,
                                  bucket_cap_mb=(h * h + h) * 4 / 2 ** 20, gradient_accumulation_steps=2,
                                  backend=backend, workers=2)
        ex = p.compile(layers, config=cfg)
        loss, grads = ex.value_and_grad(mse, x, t)
        runs[backend] = (loss.numpy(), [g.numpy() for gs in grads for g in gs], ex.last_report)
    (lloss, lgrads, lrep), (rloss, rgrads, rrep) = runs["local"], runs["ray"]
    assert bits(lloss) == bits(rloss)
    assert [bits(g) for g in lgrads] == [bits(g) for g in rgrads]
    assert len(rrep.buckets) == 3 and rrep.buckets == lrep.buckets
    assert rrep.seconds == lrep.seconds
