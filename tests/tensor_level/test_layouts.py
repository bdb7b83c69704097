"""Layouts: layout= on p.Tensor, p.layout_transform against numpy models of each
layout, and the errors that keep layouts from meeting silently."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pypto as p
from conftest import compute, rand

AXES = {"NCHW": "NCHW", "NHWC": "NHWC", "CHWN": "CHWN"}


def permute_model(a, src, dst):
    """numpy's view of converting a 4-D layout src to dst: a transpose by axis letters."""
    return np.transpose(a, [src.index(c) for c in dst])


def nz_model(a, c0):
    """The NZ fractal form of the matrices a[..., M, K]: [..., K1, M1, 16, C0]."""
    m, k = a.shape[-2:]
    m1, k1 = math.ceil(m / 16), math.ceil(k / c0)
    pad = [(0, 0)] * (a.ndim - 2) + [(0, m1 * 16 - m), (0, k1 * c0 - k)]
    f = np.pad(a, pad).reshape(a.shape[:-2] + (m1, 16, k1, c0))
    nb = a.ndim - 2
    return f.transpose(list(range(nb)) + [nb + 2, nb, nb + 1, nb + 3])


def test_layout_constants_and_tagging():
    assert [str(l) for l in (p.ND, p.NCHW, p.NHWC, p.CHWN, p.NZ)] == ["ND", "NCHW", "NHWC", "CHWN", "NZ"]
    assert p.NCHW == "nchw" and p.NCHW != p.NHWC
    x = p.Tensor([2, 3, 4, 5], layout=p.NCHW, data=1.0)
    assert x.layout == p.NCHW and x.shape == (2, 3, 4, 5) and x.nd_shape == (2, 3, 4, 5)
    assert p.from_numpy(np.zeros((2, 2), np.float32)).layout == p.ND
    z = p.Tensor([3, 2, 16, 16], dtype=p.float16, layout=p.NZ)
    assert z.layout == p.NZ and z.nd_shape == (32, 48)  # whole fractals: 2 x 16 rows, 3 x 16 columns
    with pytest.raises(p.ShapeError, match="NCHW needs a 4-D shape") as e:
        p.Tensor([3, 4], layout=p.NCHW)
    assert e.value.get_detailed_info().location.file == __file__
    with pytest.raises(p.ShapeError, match=r"needs shape \[3,2,16,8\]"):
        p.Tensor([3, 2, 16, 16], dtype=p.float32, layout=p.NZ)
    with pytest.raises(ValueError, match="unknown layout"):
        p.layout_transform(x, "NWHC")


@pytest.mark.parametrize("src,dst", [("NCHW", "NHWC"), ("NHWC", "CHWN"), ("CHWN", "NCHW"), ("NHWC", "NCHW")])
def test_4d_layouts_permute_axes(device, src, dst):
    a = rand((2, 3, 5, 7), p.float16, 1)
    x = p.Tensor(a.shape, dtype=p.float16, data=a, layout=src)
    y = p.layout_transform(x, dst)
    assert y.layout == dst and y.shape == permute_model(a, src, dst).shape
    got = compute(y, "transpose")
    if got is not None:
        np.testing.assert_array_equal(got, permute_model(a, src, dst))
    back = compute(p.layout_transform(y, src), "transpose")
    if back is not None:
        np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize(
    "dt,shape",
    [(p.float16, (30, 60)), (p.float32, (2, 20, 10)), (p.int8, (16, 64)), (p.bfloat16, (1, 17)), (p.int32, (3, 40, 8))],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_nz_is_the_fractal_format(device, dt, shape):
    a = rand(shape, dt, 2, -50, 50) if dt in (p.int8, p.int32) else rand(shape, dt, 2)
    if dt in (p.int8, p.int32):
        a = np.round(a).astype(dt.numpy)
    c0 = 32 // np.dtype(dt.numpy).itemsize
    z = p.layout_transform(p.from_numpy(a), p.NZ)
    want = nz_model(a, c0)
    assert z.layout == p.NZ and z.shape == want.shape and z.nd_shape == shape
    got = compute(z, "pad", "reshape", "transpose")
    if got is not None:
        np.testing.assert_array_equal(got, want)
    back = p.layout_transform(z, p.ND)
    assert back.layout == p.ND and back.shape == shape
    got = compute(back, "pad", "reshape", "transpose", "slice")
    if got is not None:
        np.testing.assert_array_equal(got, a)


def test_nz_elementwise_and_errors():
    a = rand((20, 40), p.float16, 3)
    z = p.layout_transform(p.from_numpy(a), p.NZ)
    twice = z * 2 + z
    assert twice.layout == p.NZ
    np.testing.assert_array_equal(p.layout_transform(twice, p.ND).numpy(), (a.astype(np.float32) * 3).astype(np.float16))
    with pytest.raises(p.ShapeError, match="softmax: operand 0 has layout NZ") as e:
        p.softmax(z)
    assert "p.layout_transform(x, p.ND)" in e.value.get_detailed_info().suggestions[0]
    with pytest.raises(p.ShapeError, match="operand 1 is ND and operand 0 is NZ"):
        z + p.from_numpy(np.zeros(z.shape, np.float16))
    flat = z.reshape([-1])  # a view op sees the stored fractals as a plain array
    assert flat.layout == p.ND and flat.shape == (int(np.prod(z.shape)),)


def test_layouts_never_meet_silently():
    x = p.Tensor([1, 3, 4, 4], layout=p.NCHW, data=1.0)
    y = p.Tensor([1, 4, 4, 3], layout=p.NHWC, data=2.0)
    with pytest.raises(p.ShapeError, match="operand 1 has layout NHWC but operand 0 has layout NCHW") as e:
        x + p.layout_transform(y, p.NHWC)
    assert any("p.layout_transform(operand_1, p.NCHW)" in s for s in e.value.get_detailed_info().suggestions)
    ok = x + p.layout_transform(y, p.NCHW)
    assert ok.layout == p.NCHW
    np.testing.assert_array_equal(ok.numpy(), np.full((1, 3, 4, 4), 3.0, np.float32))
    biased = x + p.from_numpy(np.arange(3, dtype=np.float32).reshape(3, 1, 1))  # ND operands share the axes
    assert biased.layout == p.NCHW
    assert p.transpose(x).layout == p.ND and x.sum(axis=1).layout == p.ND
    assert p.softmax(x, axis=1).layout == p.NCHW


def test_layouts_in_compiled_programs(device):
    def fn(img):
        return p.relu(p.layout_transform(img, p.NHWC))

    f = p.compile(fn, inputs=[p.Tensor([p.symbol("n"), 3, 4, 4], layout=p.NCHW)])
    assert "@NCHW" in f.graph() and "@NHWC" in f.graph()
    for n in (1, 2):
        a = rand((n, 3, 4, 4), p.float32, n)
        out = f.run(p.Tensor(a.shape, data=a, layout=p.NCHW))
        assert out.layout == p.NHWC
        np.testing.assert_array_equal(out.numpy(), np.maximum(a.transpose(0, 2, 3, 1), 0))
    with pytest.raises(p.ShapeError, match="input 0 has layout NHWC, the executor was traced for NCHW"):
        f.run(p.Tensor([1, 4, 4, 3], layout=p.NHWC))


@settings(max_examples=25, deadline=None)
@given(
    st.tuples(*[st.integers(1, 5)] * 4),
    st.lists(st.sampled_from(["ND", "NCHW", "NHWC", "CHWN", "NZ"]), min_size=1, max_size=5),
)
def test_layout_transform_chains_match_the_models(shape, path):
    """Any chain of conversions computes what the numpy models say, on the reference."""
    prev = p.get_device()
    p.set_device("reference")
    try:
        a = rand(shape, p.float32, sum(shape))
        x, model, cur = p.from_numpy(a), a, "ND"
        for to in path:
            if cur == "NZ":  # leave NZ through ND
                model, cur = a_nd, "ND"
            if to == "NZ":
                a_nd = model
                model = nz_model(model, 8)
            elif cur in AXES and to in AXES:
                model = permute_model(model, cur, to)
            x, cur = p.layout_transform(x, to), to
        assert x.layout == cur and x.shape == model.shape
        np.testing.assert_array_equal(x.numpy(), model)
    finally:
        p.set_device(prev)


def test_compiled_programs_report_the_layout_conversions_they_keep():
    def f(x):
        return p.relu(p.layout_transform(p.layout_transform(x, p.NZ), p.ND))

    x = np.random.default_rng(3).standard_normal((40, 70)).astype(np.float16)
    ex = p.compile(f)
    np.testing.assert_array_equal(ex(x).numpy(), np.maximum(x, 0))
    assert ex.info()["layout_conversions"] == []  # ND -> NZ -> ND is exact: folded
    plain = p.compile(f, p.CompileConfig(opt_level=0))
    np.testing.assert_array_equal(plain(x).numpy(), np.maximum(x, 0))
    kept = plain.info()["layout_conversions"]
    assert [(k["from"], k["to"]) for k in kept] == [("ND", "NZ(40,70)"), ("NZ(40,70)", "ND")]
    assert kept[0]["where"].endswith(f"test_layouts.py:{f.__code__.co_firstlineno + 1}")
