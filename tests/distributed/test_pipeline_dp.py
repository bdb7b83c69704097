"""Pipeline parallelism and data-parallel training through p.DistributedConfig: values
and gradients against numpy (the backward of tanh layers written out by hand here),
the schedules' bubble against (p-1)/m, 1F1B's activation memory against GPipe's,
bucketed all-reduce overlapping the backward."""

import numpy as np
import pytest

import pypto as p

D = p.distributed


def tanh_layer(x, w, b):
    return p.tanh(p.matmul(x, w) + b)


def mse(y, t):
    return p.mean((y - t) ** 2.0)


def make_layers(rng, n, h):
    ws = [((rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float32), (rng.standard_normal(h) / 4).astype(np.float32))
          for _ in range(n)]
    return ws, [(tanh_layer, [w, b]) for w, b in ws]


def numpy_value_and_grad(ws, x, t):
    """The mean squared error of the tanh layers and its gradient, by hand in float64."""
    acts = [x.astype(np.float64)]
    for w, b in ws:
        acts.append(np.tanh(acts[-1] @ w + b))
    loss = ((acts[-1] - t) ** 2).mean()
    d = 2 * (acts[-1] - t) / acts[-1].size
    grads = [None] * len(ws)
    for i in reversed(range(len(ws))):
        dz = d * (1 - acts[i + 1] ** 2)
        grads[i] = [acts[i].T @ dz, dz.sum(0)]
        d = dz @ ws[i][0].T
    return acts[-1], loss, grads


def pp_config(p_, m, schedule, **kw):
    return p.DistributedConfig(parallel_strategy="pipeline_parallel", device_mesh=[p_], pipeline_parallel_size=p_,
                               num_microbatches=m, schedule=schedule, **kw)


@pytest.mark.parametrize("schedule,stages", [("gpipe", 4), ("1f1b", 4), ("interleaved_1f1b", 2)])
def test_pipeline_outputs_and_gradients_equal_numpy(schedule, stages):
    rng = np.random.default_rng(1)
    ws, layers = make_layers(rng, 6, 16)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    t = rng.standard_normal((16, 16)).astype(np.float32)
    ex = p.compile(layers, config=pp_config(stages, 4, schedule))
    want_y, want_loss, want_g = numpy_value_and_grad(ws, x, t)
    np.testing.assert_allclose(ex.run(x).numpy(), want_y, rtol=1e-5, atol=1e-5)
    loss, g = ex.value_and_grad(mse, x, t)
    assert float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)
    for gl, wl in zip(g, want_g):
        for a, b in zip(gl, wl):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-4, atol=1e-6)
    r = ex.last_report
    chunks = sorted(c for s in r.stages for c in s.layers)
    assert chunks[0][0] == 0 and chunks[-1][1] == 6 and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert len(r.steps) == 2 * 4 * len(chunks) and r.seconds >= r.schedule_seconds > 0


def test_stages_are_balanced_by_the_devices_time():
    # One heavy layer (five of the light ones in a row) and light ones: the cut gives
    # the heavy layer a stage to itself, by the device's timing of each layer.
    rng = np.random.default_rng(2)
    h = 32
    light = [(tanh_layer, [(rng.standard_normal((h, h)) / 6).astype(np.float32), np.zeros(h, np.float32)]) for _ in range(5)]
    wide = light[0][1]

    def heavy(x, w, b):
        for _ in range(5):
            x = tanh_layer(x, w, b)
        return x

    layers = light[:1] + [(heavy, list(wide))] + light[1:]
    ex = p.compile(layers, config=pp_config(2, 2, "1f1b"))
    x = rng.standard_normal((64, h)).astype(np.float32)
    costs = ex.layer_costs(x, mse, x)
    assert costs[1] > 2 * max(costs[2:-1])  # (the last layer carries the loss)
    ex.value_and_grad(mse, x, x)
    cuts = [s.layers[0] for s in ex.last_report.stages]
    stage_costs = [sum(costs[a:b]) for a, b in cuts]
    # the best cut of these costs, by trying every one
    best = min(max(sum(costs[:k]), sum(costs[k:])) for k in range(1, len(costs)))
    assert max(stage_costs) == pytest.approx(best)


# Four stages of equal chunks (4K-1 layers and the loss: the loss weighs about one
# layer), so the schedules' bubble is theirs alone.
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "interleaved_1f1b"])
@pytest.mark.parametrize("m", [4, 8, 16])
def test_bubble_is_the_schedules(schedule, m):
    rng = np.random.default_rng(3)
    v = 2 if schedule == "interleaved_1f1b" else 1
    k = 8 * v  # layers a chip runs: the cut balances each chunk within one layer (an eighth)
    h = 64
    layers = [(lambda x, w: p.tanh(p.matmul(x, w)), [(rng.standard_normal((h, h)) / 8).astype(np.float32)])
              for _ in range(4 * k - 1)]
    ex = p.compile(layers, config=pp_config(4, m, schedule))
    x = rng.standard_normal((16 * m, h)).astype(np.float32)
    ex.value_and_grad(mse, x, x)
    r = ex.last_report
    theory = 3 / (v * m)
    # the bubble of the simulated run, transfers included (their launches run while
    # the steps producing them compute; their latency and bytes stay on the path)
    assert abs(r.bubble - theory) < 0.02, (r.bubble, theory, [s.compute_s for s in r.stages])
    assert abs(r.schedule_bubble - theory) < 0.02
    assert r.exposed_comm_s > 0 and r.bubble > r.schedule_bubble  # transfers still cost time on top


def test_sends_launch_while_their_step_computes():
    # Two stages, one micro-batch, forward only: stage 1 starts when stage 0's output
    # has arrived, the send's latency and bytes after stage 0's end; its launch under
    # stage 0's compute, or after it when overlap_p2p_launch is off.
    rng = np.random.default_rng(7)
    _, layers = make_layers(rng, 2, 64)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    send = D.collective_time("send", x.nbytes, D.Mesh((2,), ("pp",)), ranks=(0, 1))
    starts = {}
    for overlap in (True, False):
        ex = p.compile(layers, config=pp_config(2, 1, "gpipe", overlap_p2p_launch=overlap))
        ex.run(x)
        first, second = ex.last_report.steps
        assert first["end_s"] - first["start_s"] > send["launch_seconds"]  # a step long enough to hide the launch
        starts[overlap] = second["start_s"] - first["end_s"]
    assert starts[True] == pytest.approx(send["algorithm_seconds"], rel=1e-9)
    assert starts[False] == pytest.approx(send["seconds"], rel=1e-9)
    with pytest.raises(p.PyptoTypeError, match="overlap_p2p_launch"):
        pp_config(2, 1, "gpipe", overlap_p2p_launch="yes")


def test_1f1b_holds_fewer_activations_than_gpipe():
    rng = np.random.default_rng(4)
    ws, layers = make_layers(rng, 8, 32)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    peaks = {}
    for schedule in ("gpipe", "1f1b"):
        ex = p.compile(layers, config=pp_config(4, 8, schedule))
        ex.value_and_grad(mse, x, x)
        peaks[schedule] = ex.last_report.stages
    for s, (g, f) in enumerate(zip(peaks["gpipe"], peaks["1f1b"])):
        assert g.peak_in_flight == 8 and f.peak_in_flight == 4 - s
        assert f.peak_activation_bytes < g.peak_activation_bytes
        assert g.peak_activation_bytes == 8 * (g.peak_activation_bytes // 8)
    # Memory per stage: its layers' weights, their float32 gradient sums, the activations.
    for st in peaks["1f1b"]:
        held = sum(w.nbytes + b.nbytes for a, z in st.layers for w, b in ws[a:z])
        assert st.param_bytes == held > 0 and st.grad_bytes == held
        assert st.memory_bytes == st.param_bytes + st.grad_bytes + st.peak_activation_bytes
    ex.run(x)  # forward only: no gradients held
    assert all(st.grad_bytes == 0 and st.param_bytes > 0 for st in ex.last_report.stages)
    assert ex.last_report.memory_bytes == [st.param_bytes + st.peak_activation_bytes for st in ex.last_report.stages]


def test_pipeline_errors_say_what_to_change():
    with pytest.raises(p.PyptoTypeError, match="list of layers"):
        p.compile(42, config=pp_config(2, 2, "1f1b"))
    with pytest.raises(p.PyptoValueError, match="multiple of 4"):
        p.compile([tanh_layer] * 8, config=pp_config(4, 6, "interleaved_1f1b"))
    with pytest.raises(p.PyptoValueError, match="cannot fill 4"):
        p.compile([p.tanh] * 3, config=pp_config(4, 4, "1f1b"))
    with pytest.raises(p.PyptoValueError, match="local backend only"):  # not silently local
        p.compile([p.tanh] * 4, config=pp_config(4, 4, "1f1b", backend="ray"))
    with pytest.raises(p.PyptoValueError, match="one stage per chip"):
        p.compile([p.tanh] * 4, config=p.DistributedConfig(parallel_strategy="pipeline_parallel", device_mesh=[2, 2],
                                                           pipeline_parallel_size=2, data_parallel_size=2))
    ex = p.compile([p.tanh] * 4, config=pp_config(4, 4, "1f1b"))
    with pytest.raises(p.PyptoValueError, match="4 equal micro-batches"):
        ex.run(np.ones((6, 2), np.float32))


def dp_config(**kw):
    return p.DistributedConfig(parallel_strategy="data_parallel", device_mesh=[4], data_parallel_size=4, **kw)


@pytest.mark.parametrize("accumulate", [1, 2])
def test_data_parallel_training_equals_one_chip_on_the_whole_batch(accumulate):
    rng = np.random.default_rng(5)
    ws, layers = make_layers(rng, 3, 32)
    x = rng.standard_normal((32, 32)).astype(np.float32)
    t = rng.standard_normal((32, 32)).astype(np.float32)
    ex = p.compile(layers, config=dp_config(gradient_accumulation_steps=accumulate))
    params, ref = [list(wb) for wb in ws], [list(wb) for wb in ws]
    lr = 0.5
    for _ in range(3):  # SGD steps: the parameters track one chip's training on the whole batch
        loss, g = ex.value_and_grad(mse, x, t, params=params)
        _, want_loss, want_g = numpy_value_and_grad(ref, x, t)
        assert float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)
        params = [[w - lr * gw.numpy() for w, gw in zip(ps, gs)] for ps, gs in zip(params, g)]
        ref = [[w - lr * gw for w, gw in zip(ps, gs)] for ps, gs in zip(ref, want_g)]
    for ps, rs in zip(params, ref):
        for a, b in zip(ps, rs):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_gradient_buckets_overlap_the_backward():
    rng = np.random.default_rng(6)
    _, layers = make_layers(rng, 6, 128)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    one = p.compile(layers, config=dp_config())  # 25 MB: one bucket, after the whole backward
    one.value_and_grad(mse, x, x)
    r1 = one.last_report
    assert len(r1.buckets) == 1 and len(r1.collectives) == 1
    assert r1.seconds == pytest.approx(r1.compute_s + r1.comm_s)
    small = p.compile(layers, config=dp_config(bucket_cap_mb=(128 * 128 + 128) * 4 / 2 ** 20))  # one layer's w and b
    small.value_and_grad(mse, x, x)
    r = small.last_report
    assert len(r.buckets) == 6 and [b["layers"] for b in r.buckets] == [[5], [4], [3], [2], [1], [0]]
    assert r.seconds < r.compute_s + r.comm_s  # the buckets' all-reduces run under the backward
    assert r.overlap_s > 0.5 * (r.comm_s - r.collectives[-1]["seconds"])


def test_gradient_accumulation_runs_on_the_device_and_takes_time():
    # Each chunk's first backward starts the gradient sums; every later one adds to
    # them in its own program, so its step is longer than the first by the additions
    # (same shapes, same ops otherwise) and the sums are those of numpy.
    rng = np.random.default_rng(8)
    ws, layers = make_layers(rng, 4, 64)
    x = rng.standard_normal((48, 64)).astype(np.float32)
    t = rng.standard_normal((48, 64)).astype(np.float32)
    ex = p.compile(layers, config=pp_config(2, 3, "1f1b"))
    loss, g = ex.value_and_grad(mse, x, t)
    steps = {(s["kind"], s["chunk"], s["microbatch"]): s["end_s"] - s["start_s"] for s in ex.last_report.steps}
    for c in range(2):
        assert steps[("B", c, 1)] > steps[("B", c, 0)] and steps[("B", c, 2)] == pytest.approx(steps[("B", c, 1)])
    _, want_loss, want_g = numpy_value_and_grad(ws, x, t)
    for gl, wl in zip(g, want_g):
        for a, b in zip(gl, wl):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-4, atol=1e-6)
    assert float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)


# --- a traced model: cut where one value alone crosses --------------------------------


def test_a_traced_model_is_cut_into_layers_and_trains_as_the_layered_one():
    rng = np.random.default_rng(9)
    ws, _ = make_layers(rng, 6, 16)

    def model(x):
        for w, b in ws:
            x = tanh_layer(x, w, b)
        return x

    x = rng.standard_normal((16, 16)).astype(np.float32)
    t = rng.standard_normal((16, 16)).astype(np.float32)
    ex = p.compile(model, config=pp_config(4, 4, "1f1b"))
    want_y, want_loss, want_g = numpy_value_and_grad(ws, x, t)
    np.testing.assert_allclose(ex.run(x).numpy(), want_y, rtol=1e-5, atol=1e-5)
    # every op of the chain is a place to cut (matmul, bias add, tanh); the weights are
    # the parameters, in the order the model reads them
    assert len(ex.layers) == 18 and [len(layer.params) for layer in ex.layers] == [1, 1, 0] * 6
    assert [a.shape for a in ex.parameters] == [(16, 16), (16,)] * 6 and ex.parameter_names[0].startswith("%c0 (")
    loss, g = ex.value_and_grad(mse, x, t)
    assert float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)
    for got, want in zip(g, [a for wl in want_g for a in wl]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
    # params= replaces them: one SGD step's parameters give the numpy loss of that step
    new = [w - 0.5 * gw.numpy() for w, gw in zip(ex.parameters, g)]
    loss2, _ = ex.value_and_grad(mse, x, t, params=new)
    _, want2, _ = numpy_value_and_grad([(new[2 * i], new[2 * i + 1]) for i in range(6)], x, t)
    assert float(loss2.numpy()) == pytest.approx(want2, rel=1e-5)
    with pytest.raises(p.PyptoValueError, match="12 parameters"):
        ex.value_and_grad(mse, x, t, params=new[:3])


def residual_model(blocks):
    """Residual blocks x + tanh(...tanh(x @ a0)... @ ak), one list of weights a block."""

    def model(x):
        for ws in blocks:
            u = x
            for w in ws:
                u = p.tanh(p.matmul(u, w))
            x = x + u
        return x

    return model


def residual_numpy(blocks, x, t):
    """residual_model's output, mean squared error and gradients (a list per block) by
    hand in float64."""
    acts, inner = [x.astype(np.float64)], []
    for ws in blocks:
        us = [acts[-1]]
        for w in ws:
            us.append(np.tanh(us[-1] @ w))
        inner.append(us)
        acts.append(acts[-1] + us[-1])
    d = 2 * (acts[-1] - t) / acts[-1].size
    grads = [None] * len(blocks)
    for i in reversed(range(len(blocks))):
        du, us, gs = d, inner[i], []
        for j in reversed(range(len(blocks[i]))):
            dz = du * (1 - us[j + 1] ** 2)
            gs.insert(0, us[j].T @ dz)
            du = dz @ blocks[i][j].T
        grads[i] = gs
        d = d + du
    return acts[-1], ((acts[-1] - t) ** 2).mean(), grads


def test_residual_blocks_are_cut_at_their_adds_and_balanced_by_the_device():
    # Inside a residual block the stream and the branch are both live: the only places
    # to cut are after the adds, so each block is one layer. The second block's branch
    # is six products deep, the others' one: the device's timing of each layer moves
    # the cut towards it.
    rng = np.random.default_rng(10)
    h = 32
    blocks = [[(rng.standard_normal((h, h)) / 6).astype(np.float32) for _ in range(depth)] for depth in (1, 6, 1, 1, 1, 1)]
    x = rng.standard_normal((64, h)).astype(np.float32)
    t = rng.standard_normal((64, h)).astype(np.float32)
    graph = p.Graph(residual_model(blocks), inputs=[((16, h), "float32")])  # one micro-batch
    ex = p.compile(graph, config=pp_config(2, 4, "1f1b"))
    want_y, want_loss, want_g = residual_numpy(blocks, x, t)
    np.testing.assert_allclose(ex.run(x).numpy(), want_y, rtol=1e-5, atol=1e-5)
    assert [len(layer.params) for layer in ex.layers] == [1, 6, 1, 1, 1, 1]
    loss, g = ex.value_and_grad(mse, x, t)
    assert float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)
    for got, want in zip(g, [a for wl in want_g for a in wl]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
    costs = ex.layer_costs(x, mse, t)
    assert costs[1] > 2 * max(costs[2:-1])
    cut = ex.last_report.stages[1].layers[0][0]
    best = min(range(1, 6), key=lambda k: max(sum(costs[:k]), sum(costs[k:])))
    assert cut == best and cut < 3  # not the middle: the deep block weighs more
    with pytest.raises(p.PyptoValueError, match="traced for inputs"):
        ex.run(np.ones((32, h), np.float32))  # micro-batches of 8 rows, the graph's are 16


def test_a_tied_weight_is_one_parameter_with_the_summed_gradient():
    rng = np.random.default_rng(11)
    h = 16
    w = (rng.standard_normal((h, h)) / 6).astype(np.float32)
    x = rng.standard_normal((16, h)).astype(np.float32)
    t = rng.standard_normal((16, h)).astype(np.float32)
    ex = p.compile(residual_model([[p.from_numpy(w)]] * 4), config=pp_config(2, 2, "gpipe"))  # one tensor, read 4 times
    loss, g = ex.value_and_grad(mse, x, t)
    _, want_loss, want_g = residual_numpy([[w]] * 4, x, t)
    assert len(g) == len(ex.parameters) == 1 and float(loss.numpy()) == pytest.approx(want_loss, rel=1e-5)
    np.testing.assert_allclose(g[0].numpy(), sum(wg[0] for wg in want_g), rtol=1e-4, atol=1e-6)
    # each of the two chips holds the tied weight once, however many of its layers read it
    assert [st.param_bytes for st in ex.last_report.stages] == [w.nbytes, w.nbytes]


def test_traced_pipeline_errors_say_what_to_change():
    w = np.eye(4, dtype=np.float32)
    x = np.ones((8, 4), np.float32)
    with pytest.raises(p.PyptoValueError, match="computes nothing"):
        p.compile(lambda x: x, config=pp_config(2, 2, "1f1b")).run(x)
    with pytest.raises(p.PyptoValueError, match="one input and returns one"):
        p.compile(lambda x: (p.matmul(x, w), x + 1.0), config=pp_config(2, 2, "1f1b")).run(x)
    one_place = p.compile(lambda x: p.matmul(x, w) + p.tanh(x), config=pp_config(4, 2, "1f1b"))
    with pytest.raises(p.PyptoValueError, match="cannot fill 4 pipeline chunks"):
        one_place.run(x)
    with pytest.raises(p.PyptoValueError, match="run it first"):
        p.compile(lambda x: p.tanh(x), config=pp_config(2, 2, "1f1b")).parameters
