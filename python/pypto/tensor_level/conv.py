"""Convolution and pooling over NCHW tensors with torch's semantics: conv2d,
conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d and batch_norm
(inference)."""

from __future__ import annotations

import math

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoValueError, ShapeError
from .._core.location import user_location
from .._core.symbolic import Dim
from .creation import ones, zeros
from .reductions import mean
from .shape_ops import concat, reshape, stack, transpose
from .tensor import Tensor, apply, as_tensor, from_numpy, tiled_ops

__all__ = ["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm"]


def _pair(v, name, op, lo):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise check.fail(op, name, v, "an int or a pair of ints", PyptoValueError)
        return tuple(check.integer(e, name, op, lo=lo) for e in v)
    e = check.integer(v, name, op, lo=lo)
    return e, e


def _image(x, op) -> Tensor:
    x = as_tensor(x, op, "x")
    if x.ndim != 4:
        raise ShapeError(f"{op}: x must be [N, C, H, W], got shape {list(x.shape)}", location=user_location(),
                         suggestions=["add a batch axis with p.unsqueeze(x, 0) for a single image"])
    return x


def _padding(padding, op, kernel, dilation, stride):
    """(top, bottom, left, right) from an int, a pair, "valid" or "same" (torch: the
    extra pad of an even kernel goes after)."""
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding == "same":
            if stride != (1, 1):
                raise PyptoValueError(f"{op}: padding='same' needs stride 1 (torch's rule), got stride {stride}", location=user_location())
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return tuple(out)
        raise check.fail(op, "padding", padding, 'an int, a pair of ints, "same" or "valid"', PyptoValueError)
    ph, pw = _pair(padding, "padding", op, 0)
    return ph, ph, pw, pw


def _conv_args(op, x, weight, layout, stride, dilation, groups):
    """The checked image, weight (layout names its axes for errors), stride, dilation
    and groups of a convolution."""
    x = _image(x, op)
    w = as_tensor(weight, op, "weight")
    if w.ndim != 4:
        raise ShapeError(f"{op}: weight must be {layout}, got shape {list(w.shape)}", location=user_location())
    return x, w, _pair(stride, "stride", op, 1), _pair(dilation, "dilation", op, 1), check.integer(groups, "groups", op, lo=1)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1, *, tile_config=None) -> Tensor:
    """torch.nn.functional.conv2d: x [N, C, H, W], weight [O, C/groups, KH, KW], bias [O];
    padding an int, a pair, "same" or "valid"; groups = C is a depthwise convolution.
    fp16/bf16 convolutions (groups 1, no dilation) compile to the cube's own kernel (5HD
    activations, TIMG2COL into L0A, bias and relu fused); others as img2col (a strided
    slice per kernel tap) and a batched matmul. ``tile_config`` (a p.TileConfig, shape
    [rb, tn, gs, ra, sk]) fixes the cube kernel's tile instead of the compiler's search
    (docs/api.md, "TileConfig")."""
    if tile_config is not None:
        with tiled_ops(("conv2d",), tile_config, "p.conv2d"):
            return conv2d(x, weight, bias, stride, padding, dilation, groups)
    op = "conv2d"
    x, w, stride, dilation, groups = _conv_args(op, x, weight, "[O, C/groups, KH, KW]", stride, dilation, groups)
    pads = _padding(padding, op, (w.shape[2], w.shape[3]), dilation, stride)
    ins = [x, w] + ([as_tensor(bias, op, "bias")] if bias is not None else [])
    return apply(op, ins, {"stride": list(stride), "pads": list(pads), "dilation": list(dilation), "groups": groups})


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """torch.nn.functional.conv_transpose2d: weight [C, O/groups, KH, KW]. Computed as
    the convolution of the input spread out by the stride (zeros between its elements)
    with the flipped, transposed kernel."""
    op = "conv_transpose2d"
    x, w, stride, dilation, groups = _conv_args(op, x, weight, "[C, O/groups, KH, KW]", stride, dilation, groups)
    padding = _pair(padding, "padding", op, 0)
    output_padding = _pair(output_padding, "output_padding", op, 0)
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    if cin != c or c % groups:
        raise ShapeError(f"{op}: weight {list(w.shape)} is for {cin} input channels, x has {c} (groups={groups})", location=user_location())
    for k, d, p, q, s in zip((kh, kw), dilation, padding, output_padding, stride):
        if p > d * (k - 1):
            raise PyptoValueError(f"{op}: padding {p} is larger than dilation * (kernel - 1) = {d * (k - 1)}", location=user_location())
        if q >= max(s, d):
            raise PyptoValueError(f"{op}: output_padding {q} must be smaller than the stride or the dilation", location=user_location())
    # Spread x: stride-1 zeros after every element along H and W.
    if stride[0] > 1:
        z = zeros(*x.shape, dtype=x.dtype)
        x = reshape(stack([x] + [z] * (stride[0] - 1), axis=3), n, c, h * stride[0], wd)[:, :, : (h - 1) * stride[0] + 1]
        h = (h - 1) * stride[0] + 1
    if stride[1] > 1:
        z = zeros(*x.shape, dtype=x.dtype)
        x = reshape(stack([x] + [z] * (stride[1] - 1), axis=4), n, c, h, wd * stride[1])[:, :, :, : (wd - 1) * stride[1] + 1]
    # The kernel flipped in H and W, input and output channels swapped within each group.
    wf = w[:, :, ::-1, ::-1]
    wf = reshape(transpose(reshape(wf, groups, cin // groups, og, kh, kw), 0, 2, 1, 3, 4), groups * og, cin // groups, kh, kw)
    pads = []
    for k, d, p, q in zip((kh, kw), dilation, padding, output_padding):
        edge = d * (k - 1) - p
        pads += [edge, edge + q]
    ins = [x, wf] + ([as_tensor(bias, op, "bias")] if bias is not None else [])
    return apply("conv2d", ins, {"stride": [1, 1], "pads": pads, "dilation": list(dilation), "groups": groups})


def _pool_args(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    x = _image(x, op)
    kernel = _pair(kernel_size, "kernel_size", op, 1)
    stride = kernel if stride is None else _pair(stride, "stride", op, 1)
    padding = _pair(padding, "padding", op, 0)
    dilation = _pair(dilation, "dilation", op, 1)
    ceil_mode = check.flag(ceil_mode, "ceil_mode", op)
    pads = [padding[0], padding[0], padding[1], padding[1]]
    if ceil_mode:  # torch: round the output up, but the last window must start inside the input or its left padding
        for ax, (k, s, p, d, size) in enumerate(zip(kernel, stride, padding, dilation, x.shape[2:])):
            out = math.ceil((size + 2 * p - d * (k - 1) - 1) / s) + 1
            if (out - 1) * s >= size + p:
                out -= 1
            need = (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)
            pads[2 * ax + 1] += max(0, need)
    return x, {"kernel": list(kernel), "stride": list(stride), "pads": pads, "dilation": list(dilation)}


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """torch.nn.functional.max_pool2d (padding never wins; NaN propagates)."""
    x, attrs = _pool_args("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    return apply("max_pool2d", [x], attrs)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """torch.nn.functional.avg_pool2d. With ceil_mode the last windows may reach past
    the padded input; as in torch, their divisor counts only the positions inside it
    (inside the input alone with count_include_pad=False)."""
    op = "avg_pool2d"
    ceil_mode = check.flag(ceil_mode, "ceil_mode", op)
    include = check.flag(count_include_pad, "count_include_pad", op)
    x, attrs = _pool_args(op, x, kernel_size, stride, padding, 1, ceil_mode)
    extra = [attrs["pads"][1] - attrs["pads"][0], attrs["pads"][3] - attrs["pads"][2]]
    if not any(extra):
        attrs["count_include_pad"] = include
        return apply(op, [x], attrs)
    # Windows past the padded input: average over whole windows of the input padded
    # with zeros, then rescale each output by its window's size over torch's divisor.
    attrs["count_include_pad"] = True
    full = apply(op, [x], attrs)
    (kh, kw), (sh, sw) = attrs["kernel"], attrs["stride"]
    ph, pw = attrs["pads"][0], attrs["pads"][2]
    oh, ow = full.shape[2], full.shape[3]
    divisor = np.outer(_window_counts(oh, kh, sh, ph, x.shape[2], include), _window_counts(ow, kw, sw, pw, x.shape[3], include))
    return full * from_numpy((kh * kw / divisor).astype(full.dtype.numpy))


def _window_counts(n, k, s, p, size, include_pad):
    """torch's avg_pool divisor along one axis for each of n windows: the window cut
    at the end of the padded input (and at the input itself without include_pad)."""
    out = []
    for i in range(n):
        lo, hi = i * s - p, min(i * s - p + k, size + p)
        if not include_pad:
            lo, hi = max(lo, 0), min(hi, size)
        out.append(hi - lo)
    return np.array(out, dtype=np.float64)


def adaptive_avg_pool2d(x, output_size) -> Tensor:
    """torch.nn.functional.adaptive_avg_pool2d: output cell (i, j) averages rows
    floor(i*H/oh) .. ceil((i+1)*H/oh) and the same for columns. Over a symbolic
    height or width (a p.symbol dim) only the global pool, output_size 1, is
    defined while tracing: the mean over both axes."""
    op = "adaptive_avg_pool2d"
    x = _image(x, op)
    oh, ow = _pair(output_size, "output_size", op, 1)
    h, w = x.shape[2], x.shape[3]
    if (oh, ow) == (1, 1) and (isinstance(h, Dim) or isinstance(w, Dim)):
        return mean(x, axis=(2, 3), keepdims=True)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(x, (h // oh, w // ow))
    rows = []
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        cells = []
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            cells.append(avg_pool2d(x[:, :, r0:r1, c0:c1], (r1 - r0, c1 - c0)))
        rows.append(concat(cells, axis=3))
    return concat(rows, axis=2)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Inference batch norm over axis 1 of x [N, C, ...] (torch's batch_norm with
    training=False): (x - mean) / sqrt(var + eps) * weight + bias. When every parameter
    has x's dtype it is one op, which the compiler folds into a conv2d that feeds it
    (the fold-batch-norm pass); otherwise numpy's promotion applies, op by op."""
    op = "batch_norm"
    x = as_tensor(x, op, "x")
    if x.ndim < 2:
        raise ShapeError(f"{op}: x must be [N, C, ...], got shape {list(x.shape)}", location=user_location())
    eps = check.number(eps, "eps", op, lo=0)
    c = x.shape[1]

    def param(v, name):
        v = as_tensor(v, op, name)
        if list(v.shape) != [c]:
            raise ShapeError(f"{op}: {name} must be [{c}], got {list(v.shape)}", location=user_location())
        return v

    mean, var = param(running_mean, "running_mean"), param(running_var, "running_var")
    affine = [param(v, n) if v is not None else None for v, n in ((weight, "weight"), (bias, "bias"))]
    given = [v for v in [mean, var] + affine if v is not None]
    if all(v.dtype == x.dtype for v in given):
        ins = [x, mean, var]
        if any(v is not None for v in affine):
            w, b = affine
            ins += [w if w is not None else ones(c, dtype=x.dtype), b if b is not None else zeros(c, dtype=x.dtype)]
        return apply(op, ins, {"eps": float(eps)})
    shape = [c] + [1] * (x.ndim - 2)
    scale = (reshape(var, *shape) + eps) ** -0.5
    if affine[0] is not None:
        scale = scale * reshape(affine[0], *shape)
    y = (x - reshape(mean, *shape)) * scale
    if affine[1] is not None:
        y = y + reshape(affine[1], *shape)
    return y
