"""Symbolic sizes in imported torch code: p.from_torch and torch.compile(backend=
"pypto") capture with dynamo's dynamic shapes, and one PyPTO trace, with p.symbol dims
for torch's SymInts, serves every size the capture's guards allow. torch is the oracle
for every value; captures, traces and programs are counted."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: pip install 'pypto[torch]' (or pip install torch)")
sympy = pytest.importorskip("sympy", reason="sympy comes with torch: pip install 'pypto[torch]'")

import pypto as p  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from pypto.torch_interop.part import live_parts  # noqa: E402
from pypto.torch_interop.sizes import NotASize, Sizes, evaluate  # noqa: E402


class Attention(nn.Module):
    """A causal self-attention block written the way LMs are: sizes read from the
    input, views by them, a mask from arange, position embeddings by arange."""

    def __init__(self, d=32, heads=4, vocab=64, max_len=64):
        super().__init__()
        self.heads = heads
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, vocab)

    def forward(self, ids):
        b, s = ids.shape
        x = self.emb(ids) + self.pos(torch.arange(s))
        x = x + self.pos((torch.ones(b, s).cumsum(1) - 1).long())  # OPT's positions
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        i = torch.arange(s)
        scores = scores.masked_fill(i[None, :] > i[:, None], float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        return self.out(F.gelu(y))


def _model(cls=Attention):
    torch.manual_seed(0)
    return cls().eval()


def _ids(b, s):
    return torch.randint(0, 64, (b, s), generator=torch.Generator().manual_seed(b * 100 + s))


def _close(got, want):
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


SIZES = [(2, 8), (2, 13), (3, 8), (4, 21)]


def test_from_torch_dynamic_true_is_one_capture_and_one_trace_for_every_size():
    model = _model()
    m = p.from_torch(model, dynamic=True)
    for b, s in SIZES:
        x = _ids(b, s)
        with torch.no_grad():
            _close(m(x), model(x))
    assert len(m.captures) == 1, m.captures
    assert m.captures[0]["symbols"] == ["ids.0", "ids.1"] and not m.captures[0]["static"]
    assert m.num_traced == 1 and m.executor.is_symbolic and m.per_size is None
    # one program per bucket of sizes: never more than the sizes run
    assert 1 <= m.num_compiled <= len(SIZES)


def test_from_torch_by_default_makes_the_dims_that_change_symbolic():
    model = _model()
    m = p.from_torch(model)
    runs = [(2, 8), (2, 12), (2, 17), (3, 17), (4, 9)]
    for b, s in runs:
        x = _ids(b, s)
        with torch.no_grad():
            _close(m(x), model(x))
    # static, then the length symbolic, then the batch too; no capture after that
    assert [c["symbols"] for c in m.captures] == [[], ["ids.1"], ["ids.0", "ids.1"]], m.captures
    assert "'ids' size mismatch at index 1. expected 8, actual 12" in m.captures[1]["reason"], m.captures
    assert m.num_traced == 3


def test_from_torch_dynamic_dims_named_by_a_dict():
    model = _model()
    m = p.from_torch(model, dynamic={"ids": 1})
    for b, s in [(2, 8), (2, 11), (2, 30)]:
        x = _ids(b, s)
        with torch.no_grad():
            _close(m(x), model(x))
    assert len(m.captures) == 1 and m.captures[0]["symbols"] == ["ids.1"]
    x = _ids(3, 8)  # the batch is static: a capture of its own
    with torch.no_grad():
        _close(m(x), model(x))
    assert len(m.captures) == 2


def test_from_torch_dynamic_false_captures_each_signature():
    model = _model()
    m = p.from_torch(model, dynamic=False)
    for b, s in [(2, 8), (2, 11), (2, 8)]:
        x = _ids(b, s)
        with torch.no_grad():
            _close(m(x), model(x))
    assert len(m.captures) == 2 and all(c["static"] for c in m.captures)


def test_sizes_0_and_1_are_specialised_as_dynamo_does():
    model = _model()
    m = p.from_torch(model, dynamic=True)
    for b, s in [(2, 8), (1, 8)]:
        x = _ids(b, s)
        with torch.no_grad():
            _close(m(x), model(x))
    assert len(m.captures) == 2
    assert m.captures[1]["symbols"] == ["ids.1"], m.captures  # batch 1 is a constant of the new capture
    assert "size()[0]" in m.captures[1]["reason"]


class Branchy(nn.Module):
    """Control flow on a size: dynamo guards on it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        if x.shape[0] > 8:
            return torch.relu(self.lin(x)) * 2
        return torch.tanh(self.lin(x)) + 1


def test_control_flow_on_a_size_is_a_new_capture_with_a_note(caplog):
    model = _model(Branchy)
    m = p.from_torch(model, dynamic=True)
    with caplog.at_level(logging.INFO, logger="pypto.torch"):
        for n in (3, 5, 7, 12, 20):
            x = torch.randn(n, 6, generator=torch.Generator().manual_seed(n))
            with torch.no_grad():
                _close(m(x), model(x))
    assert len(m.captures) == 2 and all(c["symbols"] == ["x.0"] for c in m.captures), m.captures
    assert "x.size()[0]" in m.captures[1]["reason"], m.captures
    notes = [r.getMessage() for r in caplog.records if "captured again" in r.getMessage()]
    assert len(notes) == 1 and "Branchy" in notes[0], notes
    assert m.num_traced == 2


class Pooled(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 2) * 3  # its windows need the sizes while tracing


def test_a_part_that_needs_concrete_sizes_is_traced_per_size_and_says_where():
    model = Pooled()
    m = p.from_torch(model, dynamic=True)
    for n in (6, 10, 13):
        x = torch.randn(2, 3, n, n + 2, generator=torch.Generator().manual_seed(n))
        _close(m(x), model(x))
    assert len(m.captures) == 1 and m.captures[0]["symbols"] == ["x.0", "x.1", "x.2", "x.3"], m.captures
    assert m.num_traced == 3
    assert m.per_size is not None and "test_dynamic_sizes.py" in m.per_size and "x.2" in m.per_size, m.per_size


def test_dynamic_names_an_input_the_call_lacks():
    m = p.from_torch(_model(), dynamic={"tokens": 0})
    with pytest.raises(p.PyptoTypeError, match="'tokens'.*ids"):
        m(_ids(2, 8))


@pytest.mark.parametrize("bad", ["yes", {"ids": "a"}, {"ids": []}, {1.5: 0}, [0, 1]])
def test_dynamic_must_be_a_flag_or_dims(bad):
    with pytest.raises(p.PyptoTypeError, match="dynamic"):
        p.from_torch(_model(), dynamic=bad)


class Unsupported(nn.Module):
    """Two PyPTO parts around an op left to torch, sizes passed between them."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        h = torch.cumprod(h.sigmoid(), dim=1)  # runs in torch
        return self.b(h.reshape(x.shape[0], x.shape[1], -1)) + torch.arange(x.shape[1])[None, :, None]


def test_torch_compile_backend_traces_a_dynamic_graph_once():
    from pypto.torch_interop.fallbacks import last_parts

    model = _model(Unsupported)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pypto", dynamic=True)
    for b, s in [(2, 6), (3, 5), (2, 11)]:  # not 8, the feature size: dynamo would take both for one symbol
        x = torch.randn(b, s, 8, generator=torch.Generator().manual_seed(s))
        with torch.no_grad():
            _close(compiled(x), model(x))
    assert [f["op"] for f in p.last_fallbacks()] == ["torch.cumprod"]
    parts = last_parts()
    assert len(parts) == 2 and {e["graph"] for e in parts} == {0}, parts
    assert all(e["symbolic"] and e["traces"] == 1 and e["runs"] == 3 for e in parts), parts
    assert all(1 <= e["programs"] <= 3 for e in parts), parts


def test_torch_compile_backend_with_automatic_dynamic_sizes():
    from pypto.torch_interop.fallbacks import last_parts

    model = _model()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pypto")
    for b, s in [(2, 8), (2, 12), (2, 19), (2, 24)]:
        x = _ids(b, s)
        with torch.no_grad():
            _close(compiled(x), model(x))
    assert p.last_fallbacks() == []
    parts = last_parts()
    # the first graph static, the second with the length symbolic for every later size
    assert [(e["graph"], e["symbolic"], e["traces"], e["runs"]) for e in parts] == [(0, False, 1, 1), (1, True, 1, 3)], parts


# --- torch's size expressions as PyPTO dims ----------------------------------------------------


def test_sympy_sizes_become_dims_of_the_same_value():
    from torch.utils._sympy.functions import FloorDiv, Mod

    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    sizes = Sizes({"s0": "ids.0", "s1": "ids.1"})
    exprs = [s0 * s1, s0 + 3 * s1 - 2, FloorDiv(s1 + 7, 8), Mod(s0 * s1, 5), s1**2, FloorDiv(FloorDiv(s1 - 1, 2) + 1, 2)]
    rng = np.random.default_rng(0)
    for e in exprs:
        d = sizes.dim(e)
        for _ in range(5):
            v0, v1 = int(rng.integers(2, 300)), int(rng.integers(2, 300))
            want = int(e.subs({s0: v0, s1: v1}))
            assert evaluate(d, {"ids.0": v0, "ids.1": v1}) == want, (e, d)
    assert sizes.dim(7) == 7 and sizes.dim(sympy.Integer(4)) == 4
    for bad in (sympy.Max(s0, s1), s0 / 3, sympy.sqrt(s0), True):
        with pytest.raises(NotASize):
            sizes.dim(bad)


def test_arange_to_a_symbolic_size_runs_at_every_size():
    n = p.symbol("n")
    f = p.compile(lambda x: p.arange(x.shape[0]) * 2 + p.arange(3, x.shape[0] + 3, 2).sum(), inputs=[p.Tensor([n], dtype=p.float32)])
    for size in (4, 9, 33):
        got = f.run(np.zeros(size, np.float32)).numpy()
        np.testing.assert_array_equal(got, np.arange(size) * 2 + np.arange(3, size + 3, 2).sum())
    assert f.num_traced == 1


def test_parts_are_released_by_clear_cache():
    model = _model()
    m = p.from_torch(model, dynamic=True)
    m(_ids(2, 8))
    assert any(part.executors for part in live_parts())
    p.clear_cache()
    assert m.num_compiled == 0
    x = _ids(3, 9)
    with torch.no_grad():
        _close(m(x), model(x))


def test_the_guides_torch_examples_run():
    import re

    from repo_paths import ROOT

    text = (ROOT / "docs" / "api.md").read_text()
    start = text.index("\n## torch interop\n")
    section = text[start : text.find("\n## ", start + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert any("dynamic=True" in b for b in blocks)
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
