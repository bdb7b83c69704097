"""The tensor-parallel pass (parallel_strategy="model_parallel" and "hybrid"): results
against the single chip and a float32 numpy reference, what it shards, and its errors."""

import math
import warnings

import numpy as np
import pytest

import pypto as p

D = p.distributed


def gpt_weights(rng, d, ffn):
    def w(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    return {"wq": w(d, d, scale=d ** -0.5), "wk": w(d, d, scale=d ** -0.5), "wv": w(d, d, scale=d ** -0.5),
            "wo": w(d, d, scale=d ** -0.5 / 2), "w1": w(d, ffn, scale=d ** -0.5), "w2": w(ffn, d, scale=ffn ** -0.5 / 2),
            "b1": w(ffn, scale=0.1), "b2": w(d, scale=0.1)}  # fmt: skip


def gpt_block(b, heads):
    """A pre-norm GPT block on one sequence [seq, d], written for one chip: causal
    attention over heads, a GELU MLP with biases, residuals."""

    def block(x):
        seq, d = x.shape
        hd = d // heads
        a = p.layer_norm(x)
        q, k, v = (p.transpose(p.reshape(p.matmul(a, b[n]), seq, heads, hd), 1, 0, 2) for n in ("wq", "wk", "wv"))
        s = p.matmul(q, k, transpose_b=True) * (1 / math.sqrt(hd))
        mask = p.from_numpy(np.tril(np.ones((seq, seq), bool)))
        att = p.matmul(p.softmax(p.where(mask, s, -1e4), axis=-1), v)
        x = x + p.matmul(p.reshape(p.transpose(att, 1, 0, 2), seq, d), b["wo"])
        m = p.gelu(p.matmul(p.layer_norm(x), b["w1"]) + b["b1"])
        return x + (p.matmul(m, b["w2"]) + b["b2"])

    return block


def numpy_block(x, b, heads):
    f = np.float32
    seq, d = x.shape
    hd = d // heads

    def ln(v):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    x = x.astype(f)
    a = ln(x)
    q, k, v = ((a @ b[n].astype(f)).reshape(seq, heads, hd).transpose(1, 0, 2) for n in ("wq", "wk", "wv"))
    s = np.where(np.tril(np.ones((seq, seq), bool)), q @ k.transpose(0, 2, 1) / math.sqrt(hd), -1e4)
    e = np.exp(s - s.max(-1, keepdims=True))
    att = (e / e.sum(-1, keepdims=True)) @ v
    x = x + att.transpose(1, 0, 2).reshape(seq, d) @ b["wo"].astype(f)
    m = ln(x) @ b["w1"].astype(f) + b["b1"].astype(f)
    from math import erf

    g = 0.5 * m * (1 + np.vectorize(erf)(m / math.sqrt(2)))
    return x + g @ b["w2"].astype(f) + b["b2"].astype(f)


@pytest.fixture(scope="module")
def block():
    p.set_device("a2")
    rng = np.random.default_rng(11)
    d, heads, seq = 64, 8, 16
    b = gpt_weights(rng, d, 4 * d)
    x = rng.standard_normal((seq, d)).astype(np.float16)
    model = gpt_block(b, heads)
    return model, x, b, heads, p.compile(model).run(x).numpy()


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_gpt_block_tensor_parallel_equals_one_chip(block, tp):
    model, x, b, heads, one = block
    ex = p.compile(model, config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=tp))
    y = ex.run(x).numpy().astype(np.float32)
    np.testing.assert_allclose(y, one.astype(np.float32), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(y, numpy_block(x, b, heads), rtol=2e-2, atol=2e-2)
    seq, d = x.shape
    rep = ex.report
    # Two Megatron pairs: q, k, v -> the output projection; the MLP's two layers.
    assert rep.sharded and len(rep.pairs) == 2 and rep.replicated == []
    assert [len(pr["columns"]) for pr in rep.pairs] == [3, 1]
    assert rep.all_reduce_bytes == 2 * seq * d * 2
    local = {w["name"]: w["local_shape"] for w in rep.weights}
    assert sorted(local.values()) == sorted([[d, d // tp]] * 3 + [[d // tp, d], [d, 4 * d // tp], [4 * d // tp, d], [4 * d // tp]])
    assert [r["local_shape"] for r in rep.reshapes] == [[seq, heads // tp, d // heads]] * 3 + [[seq, d // tp]]
    # The run: one all-reduce per pair on every tp group, each of the pair's bytes.
    run = ex.last_report
    assert [c["kind"] for c in run.collectives] == ["all_reduce", "all_reduce"]
    assert all(c["bytes"] == seq * d * 2 for c in run.collectives)
    assert 0 < run.comm_share < 1
    info = ex.info()
    assert info["plan"]["all_reduce_bytes"] == rep.all_reduce_bytes and info["seconds"] == run.seconds


def test_hybrid_2x2_splits_the_batch_over_dp_and_the_weights_over_tp(block):
    model, x, b, heads, one = block
    rng = np.random.default_rng(12)
    xs = [rng.standard_normal(x.shape).astype(np.float16) for _ in range(4)]
    cfg = p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[2, 2], mesh_axis_names=("dp", "tp"))
    ex = p.compile(model, config=cfg)
    outs = ex.run(xs)
    assert len(outs) == 4 and ex.report.tp == 2 and ex.report.dp == 2 and ex.report.sharded
    single = p.compile(model)
    for xi, o in zip(xs, outs):
        np.testing.assert_allclose(o.numpy().astype(np.float32), single.run(xi).numpy().astype(np.float32), rtol=1e-2, atol=1e-2)
    # Each dp group ran two requests, each with two all-reduces over its tp pair.
    groups = sorted(tuple(c["group"]) for c in ex.last_report.collectives)
    assert groups == [(0, 1)] * 4 + [(2, 3)] * 4


def test_the_guides_model_parallel_example_runs_as_written():
    # The guide's sample with its free variables defined: a model of num_layers
    # transformer layers (the guide's p.linear form, attention over heads) on a 2 x 2
    # mesh, tensor-parallel over all four chips, four inputs.
    batch, seq_len, hidden, heads, num_layers = 2, 8, 32, 4, 2
    rng = np.random.default_rng(5)
    layers = [{n: (rng.standard_normal(s) * 0.2).astype(np.float32) for n, s in
               (("q", (hidden, hidden)), ("k", (hidden, hidden)), ("v", (hidden, hidden)), ("o", (hidden, hidden)),
                ("f1", (4 * hidden, hidden)), ("b1", (4 * hidden,)), ("f2", (hidden, 4 * hidden)), ("b2", (hidden,)))}
              for _ in range(num_layers)]  # fmt: skip

    def transformer_layer(x, w):
        hd = hidden // heads

        def split(t):  # [batch, seq, hidden] -> [batch, heads, seq, hd]
            return p.transpose(p.reshape(t, batch, seq_len, heads, hd), 0, 2, 1, 3)

        q, k, v = (split(p.linear(x, w[n])) for n in "qkv")
        att = p.matmul(p.softmax(p.matmul(q, k, transpose_b=True) * (1 / math.sqrt(hd)), axis=-1), v)
        x = x + p.linear(p.reshape(p.transpose(att, 0, 2, 1, 3), batch, seq_len, hidden), w["o"])
        return x + p.linear(p.relu(p.linear(p.layer_norm(x), w["f1"], w["b1"])), w["f2"], w["b2"])

    def model(x):
        # 多个 transformer 层
        for i in range(num_layers):
            x = transformer_layer(x, layers[i])
        return x

    dist_config = p.DistributedConfig(parallel_strategy="model_parallel", device_mesh=[2, 2],
                                      tensor_parallel_size=4, pipeline_parallel_size=1)  # fmt: skip
    dist_executor = p.compile(model, config=dist_config)
    inputs = [p.Tensor([batch, seq_len, hidden]) for _ in range(4)]
    outputs = dist_executor.run(inputs)
    assert len(outputs) == 4 and dist_executor.report.tp == 4 and len(dist_executor.report.pairs) == 2 * num_layers
    one = p.compile(model)
    for i, o in zip(inputs, outputs):
        np.testing.assert_allclose(o.numpy(), one.run(i).numpy(), rtol=1e-4, atol=1e-4)
    # And on data: every request against float32 numpy.
    xs = [rng.standard_normal((batch, seq_len, hidden)).astype(np.float32) for _ in range(4)]
    for x, o in zip(xs, dist_executor.run([p.from_numpy(x) for x in xs])):
        want = x
        for w in layers:
            hd = hidden // heads
            q, k, v = ((want @ w[n].T).reshape(batch, seq_len, heads, hd).transpose(0, 2, 1, 3) for n in "qkv")
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
            e = np.exp(s - s.max(-1, keepdims=True))
            want = want + ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(batch, seq_len, hidden) @ w["o"].T
            mu = want.mean(-1, keepdims=True)
            ln = (want - mu) / np.sqrt(((want - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
            want = want + np.maximum(ln @ w["f1"].T + w["b1"], 0) @ w["f2"].T + w["b2"]
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-3, atol=1e-3)


def test_a_model_without_a_pair_runs_replicated_and_says_so():
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((32, 48)) / 6).astype(np.float16)

    def head(x):
        return p.relu(p.matmul(x, w))  # a column-parallel candidate whose output is returned

    ex = p.compile(head, config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=4))
    x = rng.standard_normal((8, 32)).astype(np.float16)
    with pytest.warns(UserWarning, match="no column-/row-parallel pair"):
        y = ex.run(x)
    np.testing.assert_array_equal(y.numpy(), p.compile(head).run(x).numpy())
    rep = ex.report
    assert not rep.sharded and rep.weights == [] and ex.last_report.collectives == []
    assert len(rep.replicated) == 1 and "returned" in rep.replicated[0]["reason"]
    assert "test_tensor_parallel.py" in rep.replicated[0]["node"]
    assert "replicated" in str(rep)


def test_tp_that_does_not_divide_heads_or_hidden_names_the_layer():
    rng = np.random.default_rng(7)
    b = gpt_weights(rng, 96, 384)
    x = rng.standard_normal((8, 96)).astype(np.float16)
    # 96 features divide by 3, the 4 heads do not.
    ex = p.compile(gpt_block(b, 4), config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=3))
    with pytest.raises(p.PyptoValueError, match=r"splits into 4 attention heads.*tensor_parallel_size=3 does not divide") as e:
        ex.run(x)
    assert "test_tensor_parallel.py:" in str(e.value) and "1, 2, 4" in str(e.value)
    # 64 features do not divide by 3.
    b = gpt_weights(rng, 64, 256)
    ex = p.compile(gpt_block(b, 4), config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=3))
    with pytest.raises(p.PyptoValueError, match=r"column-parallel \(output features\) weight .* has 64 features") as e:
        ex.run(rng.standard_normal((8, 64)).astype(np.float16))
    assert "test_tensor_parallel.py:" in str(e.value) and "1, 2, 4, 8, 16, 32, 64" in str(e.value)


def test_bad_mesh_configs_say_how_to_fix_them():
    with pytest.raises(p.PyptoValueError, match="do not cover the 4 ranks"):
        p.DistributedConfig(parallel_strategy="model_parallel", device_mesh=[2, 2], tensor_parallel_size=2)
    with pytest.raises(p.PyptoValueError, match="axes named 'dp' and 'tp'") as e:
        p.compile(lambda x: x, config=p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[4]))
    assert "mesh_axis_names" in str(e.value)
    cfg = p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[2, 4], mesh_axis_names=("dp", "tp"), tensor_parallel_size=2,
                              data_parallel_size=4)  # fmt: skip
    with pytest.raises(p.PyptoValueError, match="tensor_parallel_size=2 but the mesh's tp axis has 4 ranks"):
        p.compile(lambda x: x, config=cfg)
    with pytest.raises(p.PyptoValueError, match='parallel_strategy="hybrid"'):
        p.compile(lambda x: x, config=p.DistributedConfig(parallel_strategy="model_parallel", device_mesh=[4],
                                                           data_parallel_size=2, tensor_parallel_size=2))  # fmt: skip
    ex = p.compile(lambda x: x * 2, config=p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[2, 2]))
    with pytest.raises(p.PyptoValueError, match="3 inputs for 2 data-parallel groups"):
        ex.run([np.ones(4, np.float32)] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(ex.run(np.ones((4, 2), np.float32)).numpy(), np.full((4, 2), 2, np.float32))


def test_a_split_that_cannot_stay_split_is_left_replicated_with_its_reason():
    rng = np.random.default_rng(8)
    w1, w2, w3, w4 = ((rng.standard_normal(s) / 6).astype(np.float16) for s in ((32, 64), (64, 32), (32, 64), (64, 32)))

    def model(x):
        x = x + p.matmul(p.relu(p.matmul(x, w1)), w2)  # a Megatron pair
        h = p.layer_norm(p.matmul(x, w3))  # normalises over the features a split would divide
        return p.matmul(h, w4)

    x = rng.standard_normal((8, 32)).astype(np.float16)
    ex = p.compile(model, config=p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=2))
    y = ex.run(x).numpy()
    np.testing.assert_allclose(y.astype(np.float32), p.compile(model).run(x).numpy().astype(np.float32), rtol=1e-2, atol=1e-2)
    rep = ex.report
    assert len(rep.pairs) == 1 and [w["shape"] for w in rep.weights] == [[32, 64], [64, 32]]
    reasons = [r["reason"] for r in rep.replicated]
    assert len(reasons) == 2 and "layer_norm" in reasons[0] and "returned" in reasons[1], reasons
    assert [c["kind"] for c in ex.last_report.collectives] == ["all_reduce"]


def test_hybrid_splits_one_batch_along_axis_0_over_dp():
    rng = np.random.default_rng(9)
    w1, w2 = (rng.standard_normal((32, 128)) / 6).astype(np.float16), (rng.standard_normal((128, 32)) / 11).astype(np.float16)
    b1 = (rng.standard_normal(128) / 4).astype(np.float16)

    def mlp(x):  # [batch, seq, d]
        return x + p.matmul(p.gelu(p.matmul(p.layer_norm(x), w1) + b1), w2)

    x = rng.standard_normal((4, 8, 32)).astype(np.float16)
    cfg = p.DistributedConfig(parallel_strategy="hybrid", device_mesh=[2, 2], mesh_axis_names=("dp", "tp"))
    ex = p.compile(mlp, config=cfg)
    y = ex.run(x).numpy().astype(np.float32)
    np.testing.assert_allclose(y, p.compile(mlp).run(x).numpy().astype(np.float32), rtol=1e-2, atol=1e-2)
    assert len(ex.report.pairs) == 1 and {w["name"]: w["local_shape"] for w in ex.report.weights} == \
        {ex.report.weights[0]["name"]: [32, 64], ex.report.weights[1]["name"]: [64], ex.report.weights[2]["name"]: [64, 32]}
    # each dp group all-reduces its half of the batch: [2, 8, 32] fp16
    assert sorted(tuple(c["group"]) for c in ex.last_report.collectives) == [(0, 1), (2, 3)]
    assert all(c["bytes"] == 2 * 8 * 32 * 2 for c in ex.last_report.collectives)
