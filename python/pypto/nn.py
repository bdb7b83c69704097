"""Neural-network composites and sorting: softmax, log_softmax, layer_norm, rms_norm,
scaled_dot_product_attention, topk, sort, argsort, cumsum."""

from __future__ import annotations

from collections import namedtuple

from .tensor import Tensor, apply

__all__ = ["softmax", "log_softmax", "layer_norm", "rms_norm", "scaled_dot_product_attention", "topk", "TopK", "sort", "argsort", "cumsum"]

#: The result of topk: two tensors, also unpackable as ``values, indices = p.topk(...)``.
TopK = namedtuple("TopK", ["values", "indices"])


def _t(x, op):
    from .ops import _as_tensor

    return _as_tensor(x, op)


def softmax(x, axis: int = -1, dim: int = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along axis (``dim`` is torch's name for it)."""
    return apply("softmax", [_t(x, "softmax")], {"axis": int(axis if dim is None else dim)})


def log_softmax(x, axis: int = -1, dim: int = None) -> Tensor:
    """log(softmax(x)) along axis, computed without overflow."""
    return apply("log_softmax", [_t(x, "log_softmax")], {"axis": int(axis if dim is None else dim)})


def _norm_inputs(op, x, normalized_shape, weight, bias, axis):
    x = _t(x, op)
    if normalized_shape is not None:
        from .symbolic import Dim

        one = isinstance(normalized_shape, (int, Dim))  # a single size, concrete or symbolic
        ns = [normalized_shape] if one else list(normalized_shape)
        last = list(x.shape[len(x.shape) - len(ns) :])
        # A symbolic dim is checked by the weight's shape when the program runs.
        if len(last) != len(ns) or any(isinstance(d, int) and d != n for d, n in zip(last, ns)):
            from ._location import user_location
            from .errors import ShapeError

            raise ShapeError(
                f"{op}: normalized_shape {ns} does not match the last dimensions of x's shape {list(x.shape)}",
                location=user_location(),
            )
        axes = list(range(-len(ns), 0))
    else:
        axes = [axis] if isinstance(axis, int) else list(axis)
    ins = [x]
    if weight is not None or bias is not None:
        from .creation import ones

        if weight is None:
            shape = [x.shape[a] for a in axes] if axes == list(range(-len(axes), 0)) else [1]
            weight = ones(shape, dtype=x.dtype)
        ins.append(weight)
    if bias is not None:
        ins.append(bias)
    return ins, axes


def layer_norm(x, normalized_shape=None, weight=None, bias=None, eps: float = 1e-5, axis=-1) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape)
    axes (torch's form), or over axis (default: the last)."""
    ins, axes = _norm_inputs("layer_norm", x, normalized_shape, weight, bias, axis)
    return apply("layer_norm", ins, {"axis": axes, "eps": float(eps)})


def rms_norm(x, normalized_shape=None, weight=None, eps: float = 1e-6, axis=-1) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the normalised axes."""
    ins, axes = _norm_inputs("rms_norm", x, normalized_shape, weight, None, axis)
    return apply("rms_norm", ins, {"axis": axes, "eps": float(eps)})


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False, scale: float = None, mask=None
) -> Tensor:
    """softmax(query @ key^T * scale + attn_mask) @ value, torch's conventions: query
    [..., L, E], key [..., S, E], value [..., S, Ev] give [..., L, Ev], batch dimensions
    broadcasting; attn_mask (or ``mask``) broadcasts to [..., L, S] and is added when
    float or keeps the positions where it is true when bool; is_causal keeps key j for
    query i when j <= i; scale defaults to 1/sqrt(E). The compiler runs it as one fused
    flash-attention kernel where the chip allows."""
    if dropout_p != 0.0:
        from ._location import user_location
        from .errors import PyptoValueError

        raise PyptoValueError("scaled_dot_product_attention: dropout is not supported (dropout_p must be 0)", location=user_location())
    if attn_mask is None:
        attn_mask = mask
    op = "scaled_dot_product_attention"
    ins = [_t(query, op), _t(key, op), _t(value, op)]
    if attn_mask is not None:
        ins.append(_t(attn_mask, op))
    attrs = {"is_causal": bool(is_causal)}
    if scale is not None:
        attrs["scale"] = float(scale)
    return apply(op, ins, attrs)


def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
    """The k largest (or smallest) values along dim and their int32 indices, as
    ``(values, indices)``; ties go to the lower index. The two results are two graph
    nodes over the same input (see docs/ARCHITECTURE.md), computed once each."""
    x = _t(x, "topk")
    attrs = {"k": int(k), "axis": int(dim), "largest": bool(largest)}
    return TopK(apply("topk_values", [x], attrs), apply("topk_indices", [x], attrs))


def sort(x, axis: int = -1, descending: bool = False) -> Tensor:
    """The values sorted along axis (stable; NaN above every number)."""
    return apply("sort", [_t(x, "sort")], {"axis": int(axis), "descending": bool(descending)})


def argsort(x, axis: int = -1, descending: bool = False) -> Tensor:
    """The int32 indices that sort x along axis (stable; NaN above every number)."""
    return apply("argsort", [_t(x, "argsort")], {"axis": int(axis), "descending": bool(descending)})


def cumsum(x, axis: int = None) -> Tensor:
    """The running sum along axis (None: of the flattened tensor); integers give int32."""
    x = _t(x, "cumsum")
    if axis is None:
        x, axis = x.reshape([-1]), 0
    return apply("cumsum", [x], {"axis": int(axis)})
