"""Convolution and pooling against an independent numpy implementation (direct loops
over the output) and against torch when it is installed."""

import numpy as np
import pytest

import pypto as p
from numpy_refs import np_conv2d, np_pool

CASES = [
    # x shape, w shape, stride, padding, dilation, groups
    ((2, 3, 9, 11), (5, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 10, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((2, 6, 8, 8), (6, 1, 3, 3), 1, 1, 1, 6),  # depthwise
    ((1, 3, 7, 9), (4, 3, 4, 2), 1, "same", 1, 1),  # even kernel: the extra pad goes after
    ((1, 8, 5, 5), (16, 8, 1, 1), 1, "valid", 1, 1),
]


def _pads(padding, w, dilation):
    dilation = dilation if isinstance(dilation, tuple) else (dilation, dilation)
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        out = []
        for k, d in zip(w[2:], dilation):
            t = d * (k - 1)
            out += [t // 2, t - t // 2]
        return tuple(out)
    ph, pw = padding if isinstance(padding, tuple) else (padding, padding)
    return (ph, ph, pw, pw)


@pytest.mark.parametrize("device", ["reference", "tiny", "a2"])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_matches_direct_convolution(device, case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    p.set_device(device)
    try:
        y = p.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups).numpy()
    finally:
        p.set_device("a2")
    st = stride if isinstance(stride, tuple) else (stride, stride)
    dl = dilation if isinstance(dilation, tuple) else (dilation, dilation)
    want = np_conv2d(x, w, b, st, _pads(padding, ws, dilation), dl, groups)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


def test_conv2d_float16_and_fused_epilogue_under_compile():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 16, 14, 14)).astype(np.float16)
    w = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float16)
    b = rng.standard_normal(32).astype(np.float16)
    res = rng.standard_normal((4, 32, 14, 14)).astype(np.float16)
    ex = p.compile(lambda x, r: p.relu(p.conv2d(x, w, b, padding=1) + r))
    y = ex.run(x, res).numpy().astype(np.float32)
    want = np.maximum(np_conv2d(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1) + res, 0)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("device", ["reference", "a2"])
def test_pools_match_numpy(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    p.set_device(device)
    try:
        np.testing.assert_allclose(p.max_pool2d(x, 3, 2, 1).numpy(), np_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), "max"))
        np.testing.assert_allclose(p.max_pool2d(x, 2).numpy(), np_pool(x, (2, 2), (2, 2), (0, 0, 0, 0), "max"))
        np.testing.assert_allclose(p.avg_pool2d(x, 3, 2, 1).numpy(), np_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), "avg"), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(p.avg_pool2d(x, 3, 2, 1, count_include_pad=False).numpy(),
                                   np_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), "avg", False), rtol=1e-5, atol=1e-6)
        # adaptive: the output cells average overlapping windows when sizes do not divide
        got = p.adaptive_avg_pool2d(x, (4, 3)).numpy()
        for i in range(4):
            for j in range(3):
                r0, r1 = i * 9 // 4, -(-(i + 1) * 9 // 4)
                c0, c1 = j * 8 // 3, -(-(j + 1) * 8 // 3)
                np.testing.assert_allclose(got[:, :, i, j], x[:, :, r0:r1, c0:c1].mean(axis=(2, 3)), rtol=1e-5)
        np.testing.assert_allclose(p.adaptive_avg_pool2d(x, 1).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    finally:
        p.set_device("a2")


def test_global_average_pool_over_symbolic_sizes_is_one_trace():
    h, w = p.symbol("h"), p.symbol("w")
    f = p.compile(lambda x: p.adaptive_avg_pool2d(x, 1), inputs=[p.Tensor([2, 3, h, w], dtype=p.float32)])
    rng = np.random.default_rng(4)
    for hw in [(5, 7), (9, 4), (16, 16)]:
        x = rng.standard_normal((2, 3) + hw).astype(np.float32)
        np.testing.assert_allclose(f.run(x).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    assert f.num_traced == 1
    with pytest.raises(p.SymbolicShapeError):  # other output sizes need the sizes while tracing
        p.compile(lambda x: p.adaptive_avg_pool2d(x, 2), inputs=[p.Tensor([2, 3, h, w], dtype=p.float32)]).run(np.zeros((2, 3, 4, 4), np.float32))


def test_max_pool_propagates_nan_and_ignores_padding():
    x = -np.ones((1, 1, 4, 4), np.float32) * 5
    x[0, 0, 1, 1] = np.nan
    y = p.max_pool2d(x, 2, 2, 1).numpy()
    assert np.isnan(y[0, 0, 1, 1])  # the window of rows 1-2, columns 1-2
    assert np.isnan(y).sum() == 1
    assert y[0, 0, 0, 0] == -5  # a window of padding and -5s gives -5, not 0 or -inf


torch = pytest.importorskip("torch", reason="torch is not installed: pip install 'pypto[torch]' to compare with torch")
F = torch.nn.functional


@pytest.mark.parametrize("case", CASES)
def test_conv2d_and_transpose_match_torch(case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    got = p.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups).numpy()
    want = F.conv2d(torch.tensor(x), torch.tensor(w), stride=stride, padding=padding, dilation=dilation, groups=groups).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    if padding in ("same", "valid"):
        return
    st = stride if isinstance(stride, tuple) else (stride, stride)
    wt = rng.standard_normal((xs[1], 2, 3, 3)).astype(np.float32)
    op = (min(st[0], 2) - 1, min(st[1], 2) - 1)
    got = p.conv_transpose2d(x, wt, stride=st, padding=1, output_padding=op, groups=1).numpy()
    want = F.conv_transpose2d(torch.tensor(x), torch.tensor(wt), stride=st, padding=1, output_padding=op).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_pools_and_batch_norm_match_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    t = torch.tensor(x)
    np.testing.assert_allclose(p.max_pool2d(x, 3, 2, 1, ceil_mode=True).numpy(), F.max_pool2d(t, 3, 2, 1, ceil_mode=True).numpy())
    np.testing.assert_allclose(p.max_pool2d(x, (3, 2), (1, 2), dilation=2).numpy(), F.max_pool2d(t, (3, 2), (1, 2), dilation=2).numpy())
    np.testing.assert_allclose(p.avg_pool2d(x, (2, 3), 1, (1, 1)).numpy(), F.avg_pool2d(t, (2, 3), 1, (1, 1)).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.adaptive_avg_pool2d(x, (5, 7)).numpy(), F.adaptive_avg_pool2d(t, (5, 7)).numpy(), rtol=1e-5, atol=1e-6)
    mean, var = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)
    wb, bb = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(p.batch_norm(x, mean, var, wb, bb).numpy(),
                               F.batch_norm(t, torch.tensor(mean), torch.tensor(var), torch.tensor(wb), torch.tensor(bb)).numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [7, 10])
@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 2, 1), (3, 3, 1), (3, 1, 0)])
@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool_ceil_mode_matches_torch(size, kernel, stride, padding, include_pad):
    """Windows past the padded input divide by the positions inside it, as torch's do."""
    x = np.random.default_rng(size).standard_normal((2, 3, size, size + 1)).astype(np.float32)
    got = p.avg_pool2d(x, kernel, stride, padding, ceil_mode=True, count_include_pad=include_pad).numpy()
    want = F.avg_pool2d(torch.tensor(x), kernel, stride, padding, ceil_mode=True, count_include_pad=include_pad).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bad_arguments_name_the_problem():
    x = np.ones((1, 3, 8, 8), np.float32)
    w = np.ones((4, 3, 3, 3), np.float32)
    with pytest.raises(p.ShapeError, match=r"\[N, C, H, W\]"):
        p.conv2d(x[0], w)
    with pytest.raises(p.ShapeError, match="input channels per group"):
        p.conv2d(x, np.ones((4, 2, 3, 3), np.float32))
    with pytest.raises(p.PyptoValueError, match="groups=2 must divide"):
        p.conv2d(x, w, groups=2).numpy()
    with pytest.raises(p.PyptoValueError, match="same.*stride 1"):
        p.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(p.PyptoValueError, match="padding"):
        p.conv2d(x, w, padding="full")
    with pytest.raises(p.PyptoValueError, match="more than half"):
        p.max_pool2d(x, 2, padding=2)
    with pytest.raises(p.ShapeError, match="does not fit"):
        p.conv2d(np.ones((1, 3, 2, 2), np.float32), w)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float16, 2e-2)])
def test_batch_norm_folded_into_the_convolution_matches_torch(dtype, tol):
    """conv2d -> batch_norm -> relu compiled with the fold-batch-norm pass (the default)
    and without it both match torch's eval-mode Conv2d + BatchNorm2d + ReLU."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 13, 11)).astype(dtype)
    w = (rng.standard_normal((6, 3, 3, 3)) * 0.3).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    mean, var = rng.standard_normal(6).astype(dtype), rng.uniform(0.5, 2, 6).astype(dtype)
    g, beta = rng.standard_normal(6).astype(dtype), rng.standard_normal(6).astype(dtype)

    def block(x, w, b, mean, var, g, beta):
        return p.relu(p.batch_norm(p.conv2d(x, w, b, stride=(2, 1), padding=1), mean, var, g, beta, eps=1e-3))

    t = [torch.tensor(a.astype(np.float64)) for a in (x, w, b, mean, var, g, beta)]
    want = F.relu(F.batch_norm(F.conv2d(t[0], t[1], t[2], stride=(2, 1), padding=1), t[3], t[4], t[5], t[6], eps=1e-3)).numpy()
    scale = np.abs(want).max()
    for config in (None, p.CompileConfig(disable_passes=("fold-batch-norm",))):
        f = p.compile(block, config) if config else p.compile(block)
        got = f(x, w, b, mean, var, g, beta).numpy().astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


CUBE_CASES = [
    # x shape, w shape, stride, padding: fp16 convolutions the conv-to-cube pass runs as
    # one conv2d_5hd kernel (odd sizes, channels that are no multiple of 16, stride 2,
    # "same" with an even kernel) or, 1x1 "valid", as the GEMM of its NHWC pixels;
    # dilation and groups keep img2col
    ((2, 3, 13, 11), (5, 3, 3, 3), 1, 1, 1, 1),
    ((3, 20, 9, 12), (33, 20, 3, 2), 2, (1, 0), 1, 1),
    ((1, 7, 10, 9), (8, 7, 4, 2), 1, "same", 1, 1),
    ((2, 16, 6, 7), (24, 16, 1, 1), 1, "valid", 1, 1),
    ((1, 6, 9, 9), (6, 3, 3, 3), 1, 2, 2, 2),  # dilation and groups: the decomposition
    ((2, 8, 7, 7), (8, 1, 3, 3), 1, 1, 1, 8),  # depthwise: the decomposition
]


@pytest.mark.parametrize("case", CUBE_CASES)
@pytest.mark.parametrize("relu", [False, True])
def test_float16_conv_on_the_cube_matches_torch(case, relu):
    """fp16 conv2d (+ bias, + relu) compiled for a2 against torch in float64: within
    the one rounding of the result and fp32 accumulation. Where the cube runs it the
    kernel reads and writes NCHW itself: the only conversion reported is the weight's
    (OIHW -> fractal); the decomposition reports none."""
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(np.float16)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float16)
    b = rng.standard_normal(ws[0]).astype(np.float16)

    def f(x, w, b):
        y = p.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        return p.relu(y) if relu else y

    exe = p.compile(f)
    got = exe(x, w, b).numpy().astype(np.float64)
    t = [torch.tensor(a.astype(np.float64)) for a in (x, w, b)]
    want = F.conv2d(t[0], t[1], t[2], stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = (F.relu(want) if relu else want).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    kinds = [(c["from"], c["to"]) for c in exe.info()["layout_conversions"]]
    cube = dilation == 1 and groups == 1
    assert kinds == ([("OIHW", "fractal [C1*KH*KW*C0, O]")] if cube else [])
    assert ("conv2d_5hd" in exe.dump()) == cube


def test_conv_batch_norm_relu_block_is_one_cube_kernel():
    """A ResNet-style fp16 conv -> batch_norm -> relu: the norm folds into the
    convolution, the relu into its kernel's store (tstore.relu), the kernel reads and
    writes NCHW itself and the layout report lists only the weight's conversion; the
    values match torch."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 10, 10)).astype(np.float16)
    w = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float16)
    m, g, b = (rng.standard_normal(32).astype(np.float16) for _ in range(3))
    v = rng.uniform(0.5, 2, 32).astype(np.float16)
    f = p.compile(lambda x, w, m, v, g, b: p.relu(p.batch_norm(p.conv2d(x, w, padding=1), m, v, g, b)))
    got = f(x, w, m, v, g, b).numpy().astype(np.float64)
    t = [torch.tensor(a.astype(np.float64)) for a in (x, w, m, v, g, b)]
    want = F.relu(F.batch_norm(F.conv2d(t[0], t[1], padding=1), t[2], t[3], t[4], t[5])).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())
    dump = f.dump()
    assert dump.count("conv2d_5hd") >= 1 and "tstore.relu" in dump
    assert [c["to"] for c in f.info()["layout_conversions"]] == ["fractal [C1*KH*KW*C0, O]"]


def test_residual_add_and_relu_join_the_cube_convolution():
    """ResNet's relu(batch_norm(conv(x)) + identity) in fp16 on a2: the residual add and
    the relu run in the convolution's kernel (fused_conv2d_5hd, its vector cores adding
    the residual to each accumulator tile), with the same bytes as the program whose
    add and relu are a kernel of their own and fewer tasks; the values match torch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 32, 9, 9)).astype(np.float16)
    w = (rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float16)
    m, g, b = (rng.standard_normal(32).astype(np.float16) for _ in range(3))
    v = rng.uniform(0.5, 2, 32).astype(np.float16)

    def block(x, w, m, v, g, b):
        return p.relu(p.batch_norm(p.conv2d(x, w, padding=1), m, v, g, b) + x)

    fused = p.compile(block)
    unfused = p.compile(block, p.CompileConfig(disable_passes=("fuse-conv-epilogue",)))
    got = fused(x, w, m, v, g, b).numpy()
    ref = unfused(x, w, m, v, g, b).numpy()
    assert "fused_conv2d_5hd" in fused.dump() and "fused_conv2d_5hd" not in unfused.dump()
    assert fused.stats()["tasks"] == unfused.stats()["tasks"] - 1
    np.testing.assert_array_equal(got.view(np.uint16), ref.view(np.uint16))
    t = [torch.tensor(a.astype(np.float64)) for a in (x, w, m, v, g, b)]
    want = F.relu(F.batch_norm(F.conv2d(t[0], t[1], padding=1), t[2], t[3], t[4], t[5]) + t[0]).numpy()
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


def test_conv2d_tile_config_fixes_the_cube_kernels_tile():
    """tile_config=[rb, tn, gs, ra, sk] gives the cube convolution's tile: two
    sub-blocks of one output row, 16 channels, the weight's rows streamed through a
    ring of two steps; the values match numpy's convolution, and a tile that overflows a
    buffer is a CompileError naming it."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 48, 6, 5)).astype(np.float16)
    w = (rng.standard_normal((32, 48, 3, 3)) / 20).astype(np.float16)
    f = p.compile(lambda x, w: p.conv2d(x, w, padding=1, tile_config=[1, 16, 1, 2, 2]), p.CompileConfig(chip="a2"))
    got = f(x, w).numpy().astype(np.float64)
    want = np_conv2d(x.astype(np.float64), w.astype(np.float64), None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    assert 'tile=[1,16,1,2,2] grid=[2,2,3]\n      reason="given' in f.dump()
    bad = p.compile(lambda x, w: p.conv2d(x, w, padding=1, tile_config=[6, 256, 1, 1, 2]), p.CompileConfig(chip="a2"))
    with pytest.raises(p.CompileError, match="exceed"):
        bad(x, w)
