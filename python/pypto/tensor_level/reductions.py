"""Reductions over axis = int, tuple or None (all axes), with keepdims; the guide's
reduce_* names are the same functions."""

from __future__ import annotations

from .._core import validate as check
from .tensor import Tensor, apply, as_tensor

__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax", "argmin",
    "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean", "reduce_var", "reduce_std",
]  # fmt: skip


def _reduce(op, x, axis, keepdims, extra=None):
    x = as_tensor(x, op)
    axes = check.axes(axis, "axis", op, x.ndim)
    keepdims = check.flag(keepdims, "keepdims", op)
    attrs = {"axis": axes if axes is not None else [], "keepdims": keepdims}
    if extra:
        attrs.update(extra)
    if axes == []:
        # numpy's axis=(): nothing is reduced; the result still has the op's dtype.
        return apply(op, [x.reshape(list(x.shape) + [1])], dict(attrs, axis=[-1], keepdims=False))
    return apply(op, [x], attrs)


def sum(x, axis=None, keepdims: bool = False) -> Tensor:
    """The sum over axis (None: all); bool and integers give int32."""
    return _reduce("sum", x, axis, keepdims)


def prod(x, axis=None, keepdims: bool = False) -> Tensor:
    """The product over axis (None: all); bool and integers give int32."""
    return _reduce("prod", x, axis, keepdims)


def max(x, axis=None, keepdims: bool = False) -> Tensor:
    """The maximum over axis (None: all); NaN if any element is NaN."""
    return _reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims: bool = False) -> Tensor:
    """The minimum over axis (None: all); NaN if any element is NaN."""
    return _reduce("min", x, axis, keepdims)


amax, amin = max, min


def mean(x, axis=None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean over axis (None: all); integers give float32."""
    return _reduce("mean", x, axis, keepdims)


def var(x, axis=None, keepdims: bool = False, ddof: float = 0) -> Tensor:
    """The variance over axis, dividing by N - ddof (numpy's default ddof=0)."""
    return _reduce("var", x, axis, keepdims, {"ddof": check.number(ddof, "ddof", "var", lo=0)})


def std(x, axis=None, keepdims: bool = False, ddof: float = 0) -> Tensor:
    """The standard deviation over axis, sqrt(var)."""
    return _reduce("std", x, axis, keepdims, {"ddof": check.number(ddof, "ddof", "std", lo=0)})


def _arg(op, x, axis, keepdims):
    x = as_tensor(x, op)
    keepdims = check.flag(keepdims, "keepdims", op)
    if axis is None:  # numpy: the index into the flattened tensor
        flat = apply(op, [x.reshape([-1])], {"axis": 0, "keepdims": False})
        return flat.reshape([1] * x.ndim) if keepdims else flat
    return apply(op, [x], {"axis": check.axis(axis, "axis", op, x.ndim), "keepdims": keepdims})


def argmax(x, axis=None, keepdims: bool = False) -> Tensor:
    """The int64 index (numpy's) of the first maximum along axis (None: of the flattened tensor)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False) -> Tensor:
    """The int64 index (numpy's) of the first minimum along axis (None: of the flattened tensor)."""
    return _arg("argmin", x, axis, keepdims)


reduce_sum, reduce_prod, reduce_max, reduce_min = sum, prod, max, min
reduce_mean, reduce_var, reduce_std = mean, var, std
