"""Symbolic shapes: p.symbol dims, inference over them while tracing, and executors
that bind them per run and specialise."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pypto as p
from conftest import compute, rand

batch, seq = p.symbol("batch"), p.symbol("seq")


# --- dims ----------------------------------------------------------------------------------


def test_dims_are_canonical_expressions():
    assert str(batch * seq) == "batch*seq" and batch * seq == seq * batch
    assert (seq + 1) - 1 == seq
    assert 2 * seq // 2 == seq
    assert seq - seq == 0 and isinstance(seq - seq, int)
    assert str(seq // 2) == "seq//2" and str((seq + 1) % 4) == "(seq+1)%4"
    assert str(-seq + 3) == "-seq+3"
    assert seq != seq + 1 and seq + 2 == 2 + seq
    with pytest.raises(p.SymbolicShapeError, match="comparing it with 4"):
        seq == 4  # holds for some sizes only
    with pytest.raises(p.SymbolicShapeError):
        batch != seq
    assert {batch * seq: 1}[seq * batch] == 1  # hashable by canonical form
    assert (batch * 2).symbols == ("batch",)
    assert batch * p.constant(4) == 4 * batch


@settings(max_examples=60, deadline=None)
@given(st.integers(-50, 50), st.integers(1, 9), st.integers(1, 9))
def test_dim_algebra(n, k, m):
    s = p.symbol("s")
    assert (s + n) - n == s
    assert (s * k) // k == s
    assert (s * k + n) - s * k == n
    assert (s + n) * m == s * m + n * m
    assert ((s * k) % k) == 0
    assert (k * s + k * n) // k == s + n


def test_dims_have_no_value_while_tracing():
    for use in (int, float, bool, range, lambda d: d < 3, lambda d: [0] * d):
        with pytest.raises(p.SymbolicShapeError, match="symbolic dimension batch"):
            use(batch)
    assert issubclass(p.SymbolicShapeError, TypeError) and issubclass(p.SymbolicShapeError, p.ShapeError)
    with pytest.raises(ValueError):
        p.symbol("2x")
    with pytest.raises(ValueError):
        p.symbol("a b")


# --- tracing -------------------------------------------------------------------------------


def test_ops_infer_symbolic_shapes():
    x = p.Tensor([batch, seq, 64], dtype=p.float16)
    assert x.shape == (batch, seq, 64) and x.dtype == p.float16 and x.size == 64 * batch * seq
    w = p.from_numpy(rand((64, 32), p.float16))
    assert (x @ w).shape == (batch, seq, 32)
    assert p.matmul(x, x, transpose_b=True).shape == (batch, seq, seq)
    assert x.reshape([batch * seq, 64]).shape == (batch * seq, 64)
    assert x.reshape([batch, seq, 4, -1]).shape == (batch, seq, 4, 16)
    assert x.sum(axis=1).shape == (batch, 64)
    assert p.softmax(x, axis=1).shape == (batch, seq, 64)
    assert p.concat([x, x], axis=1).shape == (batch, 2 * seq, 64)
    assert x[:, -1].shape == (batch, 64)
    assert x[:, 1:].shape == (batch, seq - 1, 64)
    assert x[:, ::2].shape == (batch, (seq + 1) // 2, 64)
    assert x.T.shape == (64, seq, batch)
    assert p.zeros([batch, 3]).shape == (batch, 3) and p.zeros_like(x).shape == x.shape
    assert p.layer_norm(x, 64).shape == x.shape
    assert repr(x) == "pypto.Tensor(shape=[batch, seq, 64], dtype=float16, traced)"
    with pytest.raises(p.PyptoValueError, match=r"symbolic shape \[batch,seq,64\]"):
        x.numpy()
    with pytest.raises(p.PyptoValueError, match="symbolic shape"):
        (x + 1).numpy()
    with pytest.raises(p.ShapeError, match="cannot hold data"):
        p.Tensor([batch, 2], data=[1, 2])


def test_certain_mismatches_are_errors_when_tracing():
    x = p.Tensor([batch, seq, 64], dtype=p.float16)
    with pytest.raises(p.ShapeError) as e:
        x @ p.from_numpy(rand((32, 16), p.float16))
    info = e.value.get_detailed_info()
    assert "[batch,seq,64]" in info.message and "[32,16]" in info.message
    assert info.location.file == __file__
    with pytest.raises(p.ShapeError, match=r"shapes \[batch,seq,64\] and \[batch,seq\+1,64\] cannot be broadcast"):
        x + p.Tensor([batch, seq + 1, 64], dtype=p.float16)
    with pytest.raises(p.ShapeError, match="cannot be broadcast"):
        x + p.Tensor([batch, seq, 63], dtype=p.float16)
    with pytest.raises(p.SymbolicShapeError, match="positive step"):
        x[:, ::-1]


# --- executors -----------------------------------------------------------------------------


def test_executor_traces_once_and_specialises_per_size(device):
    w = rand((16, 8), p.float32, 1)
    wt = p.from_numpy(w)
    traces = []

    def layer(x):
        traces.append(x.shape)
        return p.relu(x @ wt) + 1

    f = p.compile(layer, inputs=[p.Tensor([batch, 16])])
    assert traces == [(batch, 16)] and f.is_symbolic
    assert "f32[batch,16]" in f.graph()
    for n in (3, 5, 3, 1):
        a = rand((n, 16), p.float32, n)
        out = f.run(a)
        assert out.shape == (n, 8)
        # float32 matmul (accumulated in float32 on a chip), then relu and + 1
        np.testing.assert_allclose(out.numpy(), np.maximum(a.astype(np.float64) @ w, 0) + 1, rtol=1e-5, atol=1e-5)
    assert len(traces) == 1
    if device == "reference":
        assert f.num_compiled == 3  # batch = 3, 5, 1: no timing model to size buckets with
    else:
        assert f.num_compiled == 1  # one bucket holds 1 to 5 rows
        assert f.stats()["program"] == "batch<=" + str(f.info()["buckets"]["bounds"]["batch"][0])


def test_run_errors_name_the_symbol_and_both_values():
    f = p.compile(lambda a, b: (a + 1, b * 2), inputs=[p.Tensor([batch, 16]), p.Tensor([batch, 32])])
    with pytest.raises(p.ShapeError, match="batch is 4 from input 0 but 8 from input 1"):
        f.run(np.zeros((4, 16), np.float32), np.zeros((8, 32), np.float32))
    with pytest.raises(p.ShapeError, match="axis 1 must be 16"):
        f.run(np.zeros((4, 15), np.float32), np.zeros((4, 32), np.float32))
    a, b = f.run(np.ones((4, 16), np.float32), np.ones((4, 32), np.float32))
    assert a.shape == (4, 16) and b.shape == (4, 32)

    w = p.from_numpy(rand((64, 8), p.float16))
    k = p.symbol("k")
    g = p.compile(lambda x: x @ w, inputs=[p.Tensor([batch, k], dtype=p.float16)])
    assert g.constraints() == ["k == 64"]
    with pytest.raises(p.ShapeError) as e:
        g.run(np.zeros((2, 32), np.float16))
    info = e.value.get_detailed_info()
    assert info.message == "k is 32, but batch_matmul needs it equal to 64" or info.message == "k is 32, but matmul needs it equal to 64"
    assert info.location is not None and info.location.file == __file__
    assert g.run(np.zeros((2, 64), np.float16)).shape == (2, 8)


def test_symbolic_slices_and_indices_run(device):
    def fn(x):
        return x[:, -1] + x[:, 0], x[:, 1::2], p.sum(x[:, 1:-1], axis=1)

    f = p.compile(fn, inputs=[p.Tensor([batch, seq])])
    for shape in ((2, 5), (3, 8)):
        a = rand(shape, p.float32, shape[1])
        last, odd, inner = f.run(a)
        got = compute(last, "slice", "add")
        if got is not None:
            np.testing.assert_array_equal(got, a[:, -1] + a[:, 0])
            np.testing.assert_array_equal(odd.numpy(), a[:, 1::2])
            np.testing.assert_allclose(inner.numpy(), a[:, 1:-1].sum(axis=1), rtol=1e-6)
    with pytest.raises(p.ShapeError, match="seq is 1, but slice needs it at least 2"):
        f.run(np.zeros((2, 1), np.float32))


def test_a_static_axis_sliced_at_a_symbolic_bound():
    # a position table sliced at the sequence length (BERT's embeddings)
    table = np.arange(80, dtype=np.float32).reshape(2, 40)
    f = p.compile(lambda x: p.from_numpy(table)[:, 2 : x.shape[0] + 2] * x, inputs=[p.Tensor([seq])])
    for n in (1, 17, 38):
        a = rand((n,), p.float32, n)
        np.testing.assert_array_equal(f.run(a).numpy(), table[:, 2 : n + 2] * a)
    assert f.num_traced == 1 and "40 >= seq+2" in f.constraints()
    with pytest.raises(p.ShapeError, match=r"slice 2:seq\+2 of axis 1 of \[2,40\] ends inside it"):
        f.run(np.zeros(39, np.float32))


def test_automatic_symbols_trace_once():
    traces = []

    def fn(x, y):
        traces.append(x.shape)
        return x * 2 + y

    f = p.compile(fn)
    for n in (3, 7, 5):
        a, b = rand((n, 6), p.float32, n), rand((6,), p.float32, 1)
        np.testing.assert_array_equal(f.run(a, b).numpy(), a * 2 + b)
    assert traces == [(p.symbol("x.0"), p.symbol("x.1"))]
    assert f.num_traced == 1 and f.num_compiled == 3 and f.is_symbolic


def test_automatic_symbols_fall_back_to_concrete_shapes():
    traces = []

    def needs_ints(x):
        traces.append(x.shape)
        return x.reshape([int(x.shape[0]) * x.shape[1]])  # int() needs a value

    f = p.compile(needs_ints)
    a = rand((2, 3), p.float32)
    np.testing.assert_array_equal(f.run(a).numpy(), a.reshape(-1))
    assert traces[-1] == (2, 3) and not f.is_symbolic

    # A size-1 dim seen first stays 1 (it broadcasts); another size traces anew.
    g = p.compile(lambda a, b: a + b)
    x, y = rand((4, 1), p.float32), rand((4, 5), p.float32)
    np.testing.assert_array_equal(g.run(x, y).numpy(), x + y)
    x2 = rand((4, 5), p.float32, 3)
    np.testing.assert_array_equal(g.run(x2, y).numpy(), x2 + y)

    # A branch on a size needs its value: traced per size, so each size takes its branch.
    def branches(x):
        return x.sum(axis=0) if x.shape[0] == 1 else x * 2

    h = p.compile(branches)
    for n in (3, 1):
        c = rand((n, 4), p.float32, n)
        want = c.sum(axis=0) if n == 1 else c * 2
        np.testing.assert_allclose(h.run(c).numpy(), want, rtol=1e-6)
    with pytest.raises(p.SymbolicShapeError, match="comparing it with 1"):
        p.compile(branches, inputs=[p.Tensor([batch, 4])])

    strict = p.compile(needs_ints, dynamic=True)
    with pytest.raises(p.SymbolicShapeError):
        strict.run(a)
    static = p.compile(lambda x: x + 1, dynamic=False)
    static.run(rand((2, 3), p.float32))
    static.run(rand((4, 3), p.float32))
    assert static.num_traced == 2 and not static.is_symbolic


# --- the guide's dynamic-shape example, as written -----------------------------------------


def _guide_reference(x, seed):
    """The guide's transformer block in numpy, with the parameters p.linear draws."""
    g = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in ((1024, 1024), (1024, 1024), (1024, 1024), (1024, 4096), (4096, 1024)):
        bound = 1 / np.sqrt(fan_in)
        w = g.uniform(-bound, bound, size=(fan_out, fan_in)).astype(np.float32).astype(np.float16)
        b = g.uniform(-bound, bound, size=(fan_out,)).astype(np.float32).astype(np.float16)
        layers.append((w.astype(np.float64), b.astype(np.float64)))

    def lin(v, i):
        w, b = layers[i]
        return (v @ w.T + b).astype(np.float16).astype(np.float64)

    x = x.astype(np.float64)
    q, k, v = lin(x, 0), lin(x, 1), lin(x, 2)
    s = (q @ k.transpose(0, 2, 1)).astype(np.float16).astype(np.float64) / np.float16(np.sqrt(1024))
    s = s.astype(np.float16).astype(np.float64)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    attn = (e / e.sum(axis=-1, keepdims=True)).astype(np.float16).astype(np.float64)
    a = (attn @ v).astype(np.float16).astype(np.float64)
    ff = np.maximum(lin(a, 3), 0)
    return lin(ff, 4) + x


def test_guide_dynamic_shapes_example(device):
    import math

    p.manual_seed(2024)
    # --- the guide's code ---
    batch = p.symbol("batch")
    seq_len = p.symbol("seq_len")
    hidden = p.constant(1024)

    x = p.Tensor([batch, seq_len, hidden], dtype=p.float16)

    def scaled_dot_product_attention(q, k, v):  # left undefined by the guide
        return p.matmul(p.softmax(p.matmul(q, k, transpose_b=True) / math.sqrt(int(hidden)), axis=-1), v)

    def transformer_block(x):
        q = p.linear(x, hidden, hidden)
        k = p.linear(x, hidden, hidden)
        v = p.linear(x, hidden, hidden)
        attn = scaled_dot_product_attention(q, k, v)
        ff = p.linear(attn, hidden, hidden * 4)
        ff = p.relu(ff)
        ff = p.linear(ff, hidden * 4, hidden)
        return ff + x

    executor = p.compile(transformer_block)
    input1 = p.Tensor([1, 128, 1024], dtype=p.float16)
    output1 = executor.run(input1)
    input2 = p.Tensor([1, 512, 1024], dtype=p.float16)
    output2 = executor.run(input2)
    # --- end of the guide's code ---
    assert x.shape == (batch, seq_len, 1024)
    assert output1.shape == (1, 128, 1024) and output2.shape == (1, 512, 1024)
    assert executor.num_traced == 1 and executor.num_compiled == 2 and executor.is_symbolic

    data = (np.random.default_rng(5).standard_normal((1, 128, 1024)) * 0.5).astype(np.float16)
    got = executor.run(data).numpy().astype(np.float64)
    ref = _guide_reference(data, 2024)
    # float16 storage after every step, float32 accumulation: a few float16 ulps of
    # the values involved (|ref| up to ~4).
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=3e-2)
    assert executor.num_traced == 1


# --- property: one symbolic trace computes what numpy does for every size ------------------

_PROGRAMS = {
    "broadcast": (lambda x, y: x * y.T + x[:1], lambda a, b: a * b.T + a[:1]),
    "reduce": (lambda x, y: p.sum(x, axis=0) + p.max(y, axis=1), lambda a, b: a.sum(axis=0) + b.max(axis=1)),
    "reshape": (lambda x, y: x.reshape([-1]) * 2, lambda a, b: a.reshape(-1) * 2),
    "transpose": (lambda x, y: x.T @ y.T, lambda a, b: a.T @ b.T),
    "slices": (lambda x, y: x[1:, ::2] - y[0, :1], lambda a, b: a[1:, ::2] - b[0, :1]),
    "concat": (lambda x, y: p.concat([x, y.T], axis=0), lambda a, b: np.concatenate([a, b.T], axis=0)),
}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(_PROGRAMS)), st.lists(st.tuples(st.integers(2, 6), st.integers(2, 6)), min_size=1, max_size=3))
def test_one_symbolic_trace_serves_every_size(name, sizes):
    fn, model = _PROGRAMS[name]
    m, n = p.symbol("m"), p.symbol("n")
    prev = p.get_device()
    p.set_device("reference")
    try:
        f = p.compile(fn, inputs=[p.Tensor([m, n]), p.Tensor([n, m])])
        for i, (a_m, a_n) in enumerate(sizes):
            a, b = rand((a_m, a_n), p.float32, i), rand((a_n, a_m), p.float32, i + 7)
            np.testing.assert_allclose(f.run(a, b).numpy(), model(a, b), rtol=1e-5, atol=1e-6)
        assert f.num_traced == 1 and f.num_compiled == len(set(sizes))
    finally:
        p.set_device(prev)


def test_layer_norm_takes_a_symbolic_normalized_shape():
    f = p.compile(lambda x: p.layer_norm(x, x.shape[-1]))
    for shape in [(4, 32), (6, 48)]:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
        ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(f(x).numpy(), ref, atol=1e-5)
