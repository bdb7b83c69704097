"""Boolean masks: ``x[mask]``, ``p.nonzero``, ``p.masked_select`` (numpy's and torch's
semantics) and ``p.masked_fill``. The first three give results whose size depends on the
mask's values, so they realise the mask eagerly (x itself stays lazy: the selection is
a gather of the mask's indices on the device) and are refused inside ``p.compile``,
where the mask has no values yet; masked_fill keeps x's shape and compiles."""

from __future__ import annotations

import numpy as np

from .._core import validate as check
from .._core.errors import DTypeError, PyptoIndexError, PyptoValueError, ShapeError
from .._core.location import user_location
from .tensor import Tensor, _has_no_data, apply, as_tensor, from_numpy

__all__ = ["nonzero", "masked_select", "masked_fill"]

_COMPILE_HINTS = [
    "keep the shape and replace the other elements: p.where(mask, x, 0) or p.masked_fill(x, ~mask, 0)",
    "or reduce over the mask: p.sum(p.where(mask, x, 0))",
    "or select a fixed number of elements: p.topk, or p.take_along_axis with indices of a fixed size",
]


_WRITE_HINTS = [
    "write a number or one row where the mask alone selects: x[mask] = 0 compiles (it is p.where(mask, 0, x))",
    "or give values of x's shape: x = p.where(mask, values, x)",
    "or write a fixed number of positions: p.index_put(x, (rows,), values) with index tensors of a fixed size",
]


def _mask_values(mask, op: str, name: str = "mask", writes: bool = False) -> np.ndarray:
    """The mask's values as a numpy bool array (realising a pending p.Tensor); an error
    when it is not bool, or has no values (a traced tensor inside p.compile). writes:
    the mask says where to write (its positions are data), not a result's size."""
    if isinstance(mask, Tensor):
        if mask.dtype.name != "bool":
            raise DTypeError(f"{op}: {name} must be a bool tensor, got {mask.dtype.name}", location=user_location(),
                             suggestions=[f"compare to make one: {name} != 0"])  # fmt: skip
        try:
            return mask.numpy()
        except PyptoValueError as e:
            if not _has_no_data(e):
                raise
            what = f"the positions written depend on the values of the boolean {name}" if writes else \
                f"the size of the result depends on the values of {name}"  # fmt: skip
            raise PyptoValueError(f"{op}: {what}, which a traced tensor inside p.compile does not have",
                                  location=user_location(), suggestions=_WRITE_HINTS if writes else _COMPILE_HINTS) from None  # fmt: skip
    try:
        m = np.asarray(mask)
    except (TypeError, ValueError):
        raise check.fail(op, name, mask, "a bool p.Tensor or numpy array") from None
    if m.dtype != np.bool_:
        raise DTypeError(f"{op}: {name} must be a bool array, got {m.dtype}", location=user_location(),
                         suggestions=[f"compare to make one: {name} != 0"])  # fmt: skip
    return m


def _take_rows(x: Tensor, rows: np.ndarray) -> Tensor:
    """x's slices along axis 0 at rows (a 1-d index array), gathered on the device."""
    if rows.size == 0:
        return apply("full", [], {"value": 0.0, "dtype": x.dtype.name, "shape": [0, *x.shape[1:]]})
    return apply("index_select", [x, from_numpy(rows.astype(np.int32))], {"axis": 0})


def boolean_index(x: Tensor, mask) -> Tensor:
    """``x[mask]`` for a mask over x's leading axes (numpy's rule: the mask's shape is
    those axes'): the selected elements (or slices) in row-major order, as a tensor of
    shape [count, *rest]."""
    m = _mask_values(mask, "getitem", "mask")
    k = m.ndim
    if k == 0 or tuple(x.shape[:k]) != m.shape:
        raise PyptoIndexError(
            f"getitem: boolean index of shape {list(m.shape)} does not match the leading axes of a tensor of shape {list(x.shape)}",
            location=user_location(),
            suggestions=["give a mask of x's shape (x[x > 0]) or of its first axes (x[rows_mask])"],
        )
    rest = list(x.shape[k:])
    lead = int(np.prod(m.shape, dtype=np.int64))
    return _take_rows(x.reshape([lead, *rest]), np.flatnonzero(m))


def nonzero(x) -> tuple:
    """The indices of x's nonzero (true) elements, one int64 tensor per axis (numpy's), in
    row-major order (numpy's nonzero; ``x[p.nonzero(x)]`` is numpy's too). The result's
    size depends on x's values: x is realised now, and p.compile refuses it."""
    x = as_tensor(x, "nonzero", "x")
    v = _mask_values(x if x.dtype.name == "bool" else x != 0, "nonzero", "x")
    if v.ndim == 0:
        raise check.fail("nonzero", "x", x, "a tensor of at least one dimension (numpy refuses 0-d too)", ShapeError,
                         ["use x.reshape(1) first"])  # fmt: skip
    return tuple(from_numpy(i.astype(np.int64)) for i in np.nonzero(v))


def masked_select(x, mask) -> Tensor:
    """The elements of x where mask is true, as a 1-d tensor in row-major order (torch's
    masked_select: x and mask broadcast together first). The mask is realised now, and
    p.compile refuses it (the result's size depends on its values)."""
    x = as_tensor(x, "masked_select", "x")
    m = _mask_values(mask, "masked_select")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), m.shape)
    except ValueError:
        raise ShapeError(f"masked_select: x of shape {list(x.shape)} and mask of shape {list(m.shape)} cannot be broadcast together",
                         location=user_location(), suggestions=["give the mask x's shape, or one that broadcasts to it"]) from None  # fmt: skip
    if tuple(x.shape) != shape:
        x = x.broadcast_to(list(shape))
    n = int(np.prod(shape, dtype=np.int64))
    return _take_rows(x.reshape([n]), np.flatnonzero(np.broadcast_to(m, shape)))


def masked_fill(x, mask, value) -> Tensor:
    """x with the elements where mask is true replaced by value (torch's masked_fill):
    mask is bool and broadcasts to x's shape; value is a scalar or 0-d tensor, converted
    to x's dtype. The shape does not depend on the mask's values, so this compiles."""
    x = as_tensor(x, "masked_fill", "x")
    if isinstance(mask, Tensor):
        if mask.dtype.name != "bool":
            raise DTypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype.name}", location=user_location(),
                             suggestions=["compare to make one: mask != 0"])  # fmt: skip
    else:
        mask = as_tensor(_mask_values(mask, "masked_fill"), "masked_fill", "mask")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise check.fail("masked_fill", "value", value, "a scalar or a 0-d tensor", ShapeError)
    elif not isinstance(value, (bool, int, float, np.generic)):
        raise check.fail("masked_fill", "value", value, "a scalar or a 0-d tensor")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(mask.shape))
    except ValueError:
        shape = None
    if shape != tuple(x.shape):
        raise ShapeError(f"masked_fill: mask of shape {list(mask.shape)} does not broadcast to x's shape {list(x.shape)}",
                         location=user_location(), suggestions=["give the mask x's shape, or one that broadcasts to it"])  # fmt: skip
    out = apply("where", [mask, value, x], scalar_anchor=[2], names=("mask", "value", "x"))
    return out if out.dtype == x.dtype else out.astype(x.dtype)
