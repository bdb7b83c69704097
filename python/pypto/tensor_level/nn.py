"""Neural-network composites and sorting: softmax, log_softmax, layer_norm, rms_norm,
scaled_dot_product_attention, topk, sort, argsort, cumsum."""

from __future__ import annotations

from collections import namedtuple

from .._core import validate as check
from .._core.errors import PyptoValueError, ShapeError
from .._core.location import user_location
from .creation import ones
from .tensor import Tensor, apply, as_tensor

__all__ = ["softmax", "log_softmax", "layer_norm", "rms_norm", "scaled_dot_product_attention", "topk", "TopK", "sort", "argsort", "cumsum"]

#: The result of topk: two tensors, also unpackable as ``values, indices = p.topk(...)``.
TopK = namedtuple("TopK", ["values", "indices"])


def _t(x, op, name="x"):
    return as_tensor(x, op, name)


def _axis_or_dim(x, axis, dim, op):
    """The axis of an op that takes numpy's ``axis`` or torch's ``dim``."""
    if dim is None:
        return check.axis(axis, "axis", op, x.ndim)
    return check.axis(dim, "dim", op, x.ndim)


def softmax(x, axis: int = -1, dim: int = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along axis (``dim`` is torch's name for it)."""
    x = _t(x, "softmax")
    return apply("softmax", [x], {"axis": _axis_or_dim(x, axis, dim, "softmax")})


def log_softmax(x, axis: int = -1, dim: int = None) -> Tensor:
    """log(softmax(x)) along axis, computed without overflow."""
    x = _t(x, "log_softmax")
    return apply("log_softmax", [x], {"axis": _axis_or_dim(x, axis, dim, "log_softmax")})


def _norm_inputs(op, x, normalized_shape, weight, bias, axis):
    x = _t(x, op)
    if normalized_shape is not None:
        ns = list(check.shape(normalized_shape, "normalized_shape", op))
        last = list(x.shape[len(x.shape) - len(ns) :])
        # A symbolic dim is checked by the weight's shape when the program runs.
        if len(last) != len(ns) or any(isinstance(d, int) and d != n for d, n in zip(last, ns)):
            raise ShapeError(
                f"{op}: normalized_shape {ns} does not match the last dimensions of x's shape {list(x.shape)}",
                location=user_location(),
            )
        axes = list(range(-len(ns), 0))
    else:
        axes = check.axes(axis, "axis", op, x.ndim)
        if axes is None:
            raise check.fail(op, "axis", axis, "an int or a tuple of ints")
    ins = [x]
    if weight is not None or bias is not None:
        if weight is None:
            shape = [x.shape[a] for a in axes] if axes == list(range(-len(axes), 0)) else [1]
            weight = ones(shape, dtype=x.dtype)
        ins.append(_t(weight, op, "weight"))
    if bias is not None:
        ins.append(_t(bias, op, "bias"))
    return ins, axes


def layer_norm(x, normalized_shape=None, weight=None, bias=None, eps: float = 1e-5, axis=-1) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape)
    axes (torch's form), or over axis (default: the last)."""
    ins, axes = _norm_inputs("layer_norm", x, normalized_shape, weight, bias, axis)
    return apply("layer_norm", ins, {"axis": axes, "eps": check.number(eps, "eps", "layer_norm", lo=0)})


def rms_norm(x, normalized_shape=None, weight=None, eps: float = 1e-6, axis=-1) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the normalised axes."""
    ins, axes = _norm_inputs("rms_norm", x, normalized_shape, weight, None, axis)
    return apply("rms_norm", ins, {"axis": axes, "eps": check.number(eps, "eps", "rms_norm", lo=0)})


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False, scale: float = None, mask=None
) -> Tensor:
    """softmax(query @ key^T * scale + attn_mask) @ value, torch's conventions: query
    [..., L, E], key [..., S, E], value [..., S, Ev] give [..., L, Ev], batch dimensions
    broadcasting; attn_mask (or ``mask``) broadcasts to [..., L, S] and is added when
    float or keeps the positions where it is true when bool; is_causal keeps key j for
    query i when j <= i; scale defaults to 1/sqrt(E). The compiler runs it as one fused
    flash-attention kernel where the chip allows."""
    op = "scaled_dot_product_attention"
    if check.number(dropout_p, "dropout_p", op) != 0.0:
        raise PyptoValueError(f"{op}: dropout is not supported (dropout_p must be 0)", location=user_location())
    if attn_mask is not None and mask is not None:
        raise PyptoValueError(f"{op}: give attn_mask or mask (the same argument), not both", location=user_location())
    if attn_mask is None:
        attn_mask, mask_name = mask, "mask"
    else:
        mask_name = "attn_mask"
    ins = [_t(query, op, "query"), _t(key, op, "key"), _t(value, op, "value")]
    if attn_mask is not None:
        ins.append(_t(attn_mask, op, mask_name))
    attrs = {"is_causal": check.flag(is_causal, "is_causal", op)}
    if scale is not None:
        attrs["scale"] = check.number(scale, "scale", op)
    return apply(op, ins, attrs)


def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
    """The k largest (or smallest) values along dim and their int32 indices, as
    ``(values, indices)``; ties go to the lower index. The two results are two graph
    nodes over the same input (see docs/ARCHITECTURE.md), computed once each."""
    x = _t(x, "topk")
    axis = check.axis(dim, "dim", "topk", x.ndim)
    k = check.integer(k, "k", "topk", lo=0)  # the Go op checks k against the axis
    attrs = {"k": k, "axis": axis, "largest": check.flag(largest, "largest", "topk")}
    check.flag(sorted, "sorted", "topk")  # the results are always sorted
    return TopK(apply("topk_values", [x], attrs), apply("topk_indices", [x], attrs))


def sort(x, axis: int = -1, descending: bool = False) -> Tensor:
    """The values sorted along axis (stable; NaN above every number)."""
    x = _t(x, "sort")
    return apply("sort", [x], {"axis": check.axis(axis, "axis", "sort", x.ndim), "descending": check.flag(descending, "descending", "sort")})


def argsort(x, axis: int = -1, descending: bool = False) -> Tensor:
    """The int32 indices that sort x along axis (stable; NaN above every number)."""
    x = _t(x, "argsort")
    attrs = {"axis": check.axis(axis, "axis", "argsort", x.ndim), "descending": check.flag(descending, "descending", "argsort")}
    return apply("argsort", [x], attrs)


def cumsum(x, axis: int = None) -> Tensor:
    """The running sum along axis (None: of the flattened tensor); integers give int32."""
    x = _t(x, "cumsum")
    if axis is None:
        x, axis = x.reshape([-1]), 0
    return apply("cumsum", [x], {"axis": check.axis(axis, "axis", "cumsum", x.ndim)})
