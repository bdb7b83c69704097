"""The torch operations real models use (ops_more.py, and the attention forms of
ops_table.py), each in a small module run whole on PyPTO by p.from_torch and compared
with torch's own result (exact for integer results)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: pip install 'pypto[torch]' (or pip install torch)")

import pypto as p  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _grouped(x, w):
    offs = torch.tensor([3, 3, 7, 9], dtype=torch.int32)  # expert 1 gets no rows, row 9 none
    out = torch.zeros(x.shape[0], w.shape[2])
    start = 0
    for e, end in enumerate(offs.tolist()):
        out[start:end] = x[start:end] @ w[e]
        start = end
    return out


def _setitem(x):
    y = x.clone()
    y[:, 1] = 0.5
    y[0] += 1
    z = torch.full_like(x, float("inf"))
    z.zero_()
    w = x * 2
    w += 1  # every reader of w after this sees the new value, as in torch
    u = torch.empty_like(x).fill_(2.0)
    return y.masked_fill_(y > 1.2, -1.0) + z + w + u


g = torch.Generator().manual_seed(0)
X = torch.randn(4, 6, generator=g)
IDS = torch.randint(0, 10, (3, 5), generator=g)
CASES = {
    "arange-full-new_ones": (lambda x: x + torch.arange(6) + torch.full((4, 6), 2.0) * x.new_ones(6) + torch.ones(4, 1) + torch.zeros_like(x), (X,)),
    "cumsum-bool": (lambda x: (x > 0).cumsum(-1), (X,)),
    "cumsum-dtype": (lambda x: torch.cumsum(x, dim=0, dtype=torch.float32), (X,)),
    "diff-prepend": (lambda i: torch.diff(i, prepend=torch.full((3, 1), -1, dtype=torch.int64), dim=-1), (IDS,)),
    "triu-tril": (lambda x: torch.triu(x, 1) - torch.tril(x, -1) + torch.triu(torch.ones(6, 6, dtype=torch.bool), 2)[:4], (X,)),
    "several-index-tensors": (lambda x: x[torch.arange(4)[:, None], torch.arange(6)[None, :].flip(-1)] + x[torch.tensor([1, -1]), torch.tensor([0, 2])].sum(), (X,)),
    "gather": (lambda x, i: torch.gather(x, 1, i % 6), (X, torch.randint(0, 6, (4, 3), generator=g))),
    "min-max-dim": (lambda x: torch.min(x, dim=1).values + torch.max(x, 1, keepdim=True)[0].squeeze(1) + x.max(dim=0).indices.float().sum(), (X,)),
    "min-elementwise": (lambda x: torch.min(x, torch.full_like(x, 0.3)) + torch.max(x, -x), (X,)),
    "unbind": (lambda x: sum(torch.unbind(x, 1)), (X,)),
    "sort-topk": (lambda x: torch.sort(x, dim=-1, descending=True)[0][:, :2] + torch.topk(x, 2).values + torch.topk(x, 2, largest=False)[1].float(), (X,)),
    "repeat-interleave-repeat": (lambda x: x.repeat_interleave(2, dim=0)[:, :3] + x[:, :3].repeat(2, 1) + x[:1, :3].expand_as(x[:, :3]).repeat(2, 1), (X,)),
    "one-hot": (lambda i: F.one_hot(i, num_classes=10).sum(1), (IDS,)),
    "histc": (lambda x: torch.histc(x, bins=5, min=-1, max=1), (X,)),
    "index-add": (lambda x, i: x.index_add(0, i, torch.ones(3, 6)), (X, torch.tensor([2, 0, 2]))),
    "embedding-bag": (lambda i, w: F.embedding_bag(i, w, mode="mean") + F.embedding_bag(i, w, mode="max"), (IDS, torch.randn(10, 4, generator=g))),
    "pad-hardswish": (lambda x: F.hardswish(F.pad(x, (1, 2, 0, 1), value=0.5)) + F.hardsigmoid(F.pad(x, (1, 2, 0, 1))), (X,)),
    "in-place-and-item-assignment": (_setitem, (X,)),
    "casts": (lambda x: (x * 3).long() + (x > 0).long() + x.bool().int(), (X,)),
    "relu6": (lambda x: nn.ReLU6()(x * 4), (X,)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_torch(case):
    fn, args = CASES[case]
    m = Fn(fn).eval()
    with torch.no_grad():
        want = m(*args)
    got = p.from_torch(m)(*args)
    assert got.shape == want.shape
    if want.dtype.is_floating_point:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(got.to(want.dtype), want)


def test_grouped_matmul_of_experts_matches_a_loop():
    from pypto.torch_interop.ops_more import _grouped_mm

    x, w = torch.randn(10, 5, generator=g), torch.randn(4, 5, 3, generator=g)
    offs = torch.tensor([3, 3, 7, 9], dtype=torch.int32)
    got = _grouped_mm(p.from_torch(x), p.from_torch(w), p.from_torch(offs)).numpy()
    np.testing.assert_allclose(got, _grouped(x, w).numpy(), rtol=1e-5, atol=1e-5)


def test_grouped_query_attention_and_padding_masks():
    q, k, v = torch.randn(2, 4, 5, 8, generator=g), torch.randn(2, 2, 7, 8, generator=g), torch.randn(2, 2, 7, 8, generator=g)
    gqa = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    np.testing.assert_allclose(p.from_torch(gqa)(q, k, v).numpy(), gqa(q, k, v).numpy(), rtol=1e-4, atol=1e-5)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8, generator=g)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    m = Fn(lambda x, pad: mha(x, x, x, key_padding_mask=pad)[0])
    with torch.no_grad():
        want = m(x, pad)
    np.testing.assert_allclose(p.from_torch(m)(x, pad).numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_writes_into_views_are_left_to_torch():
    """A write into a view reaches its base in torch; PyPTO does not follow aliases,
    so such writes are refused (from_torch) or run in torch (torch.compile), never
    computed wrongly."""

    def fn(x):
        z = x * 1
        z[1:].zero_()  # a view of z
        return z

    x = torch.randn(3, 4, generator=g)
    with pytest.raises(p.CompileError, match="view of another tensor"):
        p.from_torch(Fn(fn))(x)
    from torch import _dynamo

    from pypto.torch_interop.dynamo import backend

    _dynamo.reset()
    got = torch.compile(Fn(fn), backend=backend)(x)
    assert torch.equal(got, fn(x))
    assert any("view of another tensor" in f["reason"] for f in p.last_fallbacks())
