"""scaled_dot_product_attention against numpy (float64 softmax attention), on the
reference interpreter and on a simulated chip, where it runs as one fused kernel.

Tolerance: the kernel keeps fp32 statistics and accumulators, rounds the softmax
probabilities to the input dtype before the product with v (as flash attention does),
and rounds the result once. Each output is a convex combination of values of v, so
with |v| <= 1 the error is a few units in the last place of the dtype plus the
probabilities' rounding: ``|got - ref| <= 4 * ulp(dtype) * (|ref| + max|v|)``."""

import math

import numpy as np
import pytest

import pypto as p
from conftest import ULP, rand


def reference(q, k, v, mask=None, causal=False, scale=None):
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask.astype(np.float64)
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v64


def assert_attention_close(got, ref, v):
    nd = got.dtype
    bound = 4 * ULP[nd] * (np.abs(ref) + np.abs(v.astype(np.float64)).max())
    err = np.abs(got.astype(np.float64) - ref)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} off; worst {err.max()} (bound {bound.max()})"


CASES = [
    # shape of q, of k (v has k's rows), causal
    ((2, 3, 40, 64), (2, 3, 70, 64), False),
    ((1, 2, 130, 128), (1, 2, 130, 128), True),
    ((3, 17, 64), (3, 33, 64), True),
]


@pytest.mark.parametrize("qs,ks,causal", CASES, ids=["odd", "causal128", "short"])
@pytest.mark.parametrize("dt", [p.float16, p.bfloat16], ids=["float16", "bfloat16"])
def test_attention_against_numpy(device, dt, qs, ks, causal):
    q, k, v = rand(qs, dt, 1), rand(ks, dt, 2), rand(ks, dt, 3)
    got = p.scaled_dot_product_attention(p.from_numpy(q), p.from_numpy(k), p.from_numpy(v), is_causal=causal).numpy()
    assert got.shape == qs[:-1] + (ks[-1],) and got.dtype == q.dtype
    assert_attention_close(got, reference(q, k, v, causal=causal), v)


def test_attention_masks_and_scale(device):
    q, k, v = rand((2, 20, 64), p.float16, 4), rand((2, 36, 64), p.float16, 5), rand((2, 36, 64), p.float16, 6)
    keep = np.random.default_rng(7).uniform(size=(20, 36)) < 0.7
    keep[:, 0] = True  # no row without keys
    bias = rand((1, 36), p.float16, 8, -2, 2)
    qt, kt, vt = p.from_numpy(q), p.from_numpy(k), p.from_numpy(v)
    got = p.scaled_dot_product_attention(qt, kt, vt, attn_mask=p.from_numpy(keep)).numpy()
    assert_attention_close(got, reference(q, k, v, mask=keep), v)
    got = p.scaled_dot_product_attention(qt, kt, vt, p.from_numpy(bias), scale=0.3).numpy()
    assert_attention_close(got, reference(q, k, v, mask=bias, scale=0.3), v)


def test_attention_written_by_hand_matches(device):
    q, k, v = rand((2, 4, 48, 64), p.float16, 9), rand((2, 4, 80, 64), p.float16, 10), rand((2, 4, 80, 64), p.float16, 11)
    qt, kt, vt = p.from_numpy(q), p.from_numpy(k), p.from_numpy(v)
    got = (p.softmax(p.matmul(qt, kt, transpose_b=True) * 0.125, axis=-1) @ vt).numpy()
    # the hand-written chain rounds the scores to float16 before the softmax
    assert_attention_close(got, reference(q, k, v, scale=0.125), v)


def test_attention_refuses_dropout():
    x = p.from_numpy(rand((4, 8), p.float16))
    with pytest.raises(ValueError, match="dropout"):
        p.scaled_dot_product_attention(x, x, x, dropout_p=0.1)


@pytest.mark.parametrize("hand_written", [False, True], ids=["registry", "by_hand"])
def test_compiled_attention_is_one_task(hand_written):
    q, k, v = rand((2, 2, 40, 64), p.float16, 12), rand((2, 2, 72, 64), p.float16, 13), rand((2, 2, 72, 64), p.float16, 14)
    keep = np.tril(np.ones((40, 72), dtype=bool))

    def attention(q, k, v, keep):
        if hand_written:  # as the GPT demo writes it
            return p.softmax(p.where(keep, p.matmul(q, k, transpose_b=True) * 0.125, -1e4), axis=-1) @ v
        return p.scaled_dot_product_attention(q, k, v, attn_mask=keep)

    prev = p.get_device()
    p.set_device("a2")
    try:
        run = p.compile(attention)
        got = run(q, k, v, keep).numpy()
        tasks = run.stats()["detail"]["Tasks"]
    finally:
        p.set_device(prev)
    assert [t["Name"].rsplit("_", 1)[0] for t in tasks] == ["flash_attention"]
    assert_attention_close(got, reference(q, k, v, mask=keep, scale=None if not hand_written else 0.125), v)
