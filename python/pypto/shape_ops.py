"""Shape ops: reshape, transpose/permute, broadcast_to/expand, squeeze/unsqueeze,
flatten, concat, stack, unstack, split, pad, indexing (``x[...]``), gathers."""

from __future__ import annotations

import numbers

import numpy as np

from ._location import user_location
from .errors import PyptoValueError, ShapeError, SymbolicShapeError
from .symbolic import Dim, same_dim
from .tensor import Tensor, apply

__all__ = [
    "reshape", "transpose", "permute", "broadcast_to", "expand", "squeeze", "unsqueeze", "expand_dims", "flatten",
    "concat", "concatenate", "cat", "stack", "unstack", "split", "pad", "getitem", "take_along_axis", "gather",
    "index_select", "take",
]  # fmt: skip


def _t(x, op):
    from .ops import _as_tensor

    return _as_tensor(x, op)


def _int_or_dim(d):
    return d if isinstance(d, Dim) else int(d)


def _ints(v):
    """A shape or axis list: ints, with symbolic dims kept as they are."""
    if isinstance(v, (numbers.Integral, Tensor, Dim)):
        return [_int_or_dim(v)]
    return [_int_or_dim(d) for d in v]


def reshape(x, *shape) -> Tensor:
    """The same elements in row-major order with a new shape; one dimension may be -1."""
    if len(shape) == 1:
        shape = shape[0]
    return apply("reshape", [_t(x, "reshape")], {"shape": _ints(shape)})


def transpose(x, *axes) -> Tensor:
    """Axes permuted (numpy's transpose): ``transpose(x)`` reverses them,
    ``transpose(x, (1, 0, 2))`` or ``transpose(x, 1, 0, 2)`` permutes them. Two axes
    alone, ``transpose(x, 0, 1)`` on a tensor of rank > 2, swap them (torch's form)."""
    x = _t(x, "transpose")
    if len(axes) == 1 and not isinstance(axes[0], numbers.Integral):
        axes = tuple(axes[0])
    if len(axes) == 2 and x.ndim != 2:
        a, b = (int(v) % max(x.ndim, 1) for v in axes)
        perm = list(range(x.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        axes = perm
    return apply("transpose", [x], {"perm": [int(a) for a in axes]})


def permute(x, *dims) -> Tensor:
    """Axes permuted: result axis i is input axis dims[i] (torch's permute)."""
    if len(dims) == 1 and not isinstance(dims[0], numbers.Integral):
        dims = tuple(dims[0])
    return apply("transpose", [_t(x, "permute")], {"perm": [int(d) for d in dims]})


def broadcast_to(x, shape) -> Tensor:
    """x broadcast to shape (numpy rules)."""
    return apply("broadcast_to", [_t(x, "broadcast_to")], {"shape": _ints(shape)})


def expand(x, *sizes) -> Tensor:
    """torch's expand: broadcast_to where -1 keeps x's size on that axis."""
    x = _t(x, "expand")
    if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral):
        sizes = tuple(sizes[0])
    sizes = [_int_or_dim(s) for s in sizes]
    off = len(sizes) - x.ndim
    shape = [x.shape[i - off] if isinstance(s, int) and s == -1 and i >= off else s for i, s in enumerate(sizes)]
    return broadcast_to(x, shape)


def squeeze(x, axis=None) -> Tensor:
    """x without size-1 axes (those in axis, or all)."""
    return apply("squeeze", [_t(x, "squeeze")], {"axis": [] if axis is None else _ints(axis)})


def unsqueeze(x, axis) -> Tensor:
    """x with size-1 axes inserted at the positions axis names in the result."""
    return apply("unsqueeze", [_t(x, "unsqueeze")], {"axis": _ints(axis)})


expand_dims = unsqueeze


def flatten(x, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Axes start_dim..end_dim merged into one (torch's flatten)."""
    x = _t(x, "flatten")
    if x.ndim == 0:
        return x.reshape([1])
    s, e = start_dim % x.ndim, end_dim % x.ndim
    n = 1
    for d in x.shape[s : e + 1]:
        n = n * d
    return x.reshape(list(x.shape[:s]) + [n] + list(x.shape[e + 1 :]))


def concat(tensors, axis: int = 0) -> Tensor:
    """The tensors joined along axis (dtypes promote)."""
    tensors = [_t(t, "concat") for t in tensors]
    if not tensors:
        raise PyptoValueError("concat: needs at least one tensor", location=user_location())
    return apply("concat", tensors, {"axis": int(axis)})


concatenate = cat = concat


def stack(tensors, axis: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new axis."""
    tensors = [_t(t, "stack") for t in tensors]
    if not tensors:
        raise PyptoValueError("stack: needs at least one tensor", location=user_location())
    return apply("stack", tensors, {"axis": int(axis)})


def unstack(x, axis: int = 0) -> list:
    """The slices of x along axis, each without that axis (the inverse of stack)."""
    x = _t(x, "unstack")
    ax = _norm_axis(axis, x.ndim, "unstack")
    return [getitem(x, (slice(None),) * ax + (i,)) for i in range(x.shape[ax])]


def split(x, indices_or_sections, axis: int = 0) -> list:
    """numpy's split: an int n cuts axis into n equal parts (it must divide the size);
    a list gives the indices where parts start."""
    x = _t(x, "split")
    ax = _norm_axis(axis, x.ndim, "split")
    n = x.shape[ax]
    if isinstance(indices_or_sections, numbers.Integral):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(
                f"split: axis {ax} of size {n} cannot be split into {k} equal parts",
                location=user_location(),
                suggestions=[f"give split points instead, e.g. {[n * i // max(k, 1) for i in range(1, max(k, 1))]}"],
            )
        bounds = [n * i // k for i in range(k + 1)]
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
    return [getitem(x, (slice(None),) * ax + (slice(a, max(a, b)),)) for a, b in zip(bounds, bounds[1:])]


def pad(x, pad_width, constant_values=0) -> Tensor:
    """numpy's pad in constant mode: pad_width is an int, a (before, after) pair, or one
    pair per axis."""
    x = _t(x, "pad")
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    return apply("pad", [x], {"pads": [int(v) for v in pw.reshape(-1)], "value": float(constant_values)})


def take_along_axis(x, indices, axis: int) -> Tensor:
    """numpy's take_along_axis: out[..., i, ...] = x[..., indices[..., i, ...], ...]."""
    return apply("take_along_axis", [_t(x, "take_along_axis"), _t(indices, "take_along_axis")], {"axis": int(axis)})


def gather(x, dim: int, index) -> Tensor:
    """torch's gather: out[i][j] = x[index[i][j]][j] (dim 0) and so on; index may be
    smaller than x on the other axes."""
    x, index = _t(x, "gather"), _t(index, "gather")
    d = _norm_axis(dim, x.ndim, "gather")
    if index.ndim == x.ndim and any(index.shape[i] < x.shape[i] for i in range(x.ndim) if i != d):
        x = getitem(x, tuple(slice(0, index.shape[i]) if i != d else slice(None) for i in range(x.ndim)))
    return take_along_axis(x, index, d)


def index_select(x, axis: int, index) -> Tensor:
    """The slices of x at the 1-d indices along axis (torch's index_select)."""
    return apply("index_select", [_t(x, "index_select"), _t(index, "index_select")], {"axis": int(axis)})


def take(x, indices, axis: int = None) -> Tensor:
    """numpy's take with an axis (None: of the flattened tensor); indices of any shape."""
    x, idx = _t(x, "take"), _t(indices, "take")
    if axis is None:
        x, axis = x.reshape([-1]), 0
    ax = _norm_axis(axis, x.ndim, "take")
    out = index_select(x, ax, idx.reshape([-1]))
    return out.reshape(list(x.shape[:ax]) + list(idx.shape) + list(x.shape[ax + 1 :]))


def _symbolic_slice(k: slice, size: Dim):
    """A slice of an axis of symbolic size as (start, stop, step): negative bounds count
    from the end and None means the whole axis, as in Python; bounds are not clamped
    (each run checks 0 <= start <= stop <= size instead); steps must be positive."""
    step = 1 if k.step is None else int(k.step)
    if step <= 0:
        raise SymbolicShapeError(
            f"slicing the axis of symbolic size {size} needs a positive step, not {step}",
            suggestions=["slice forwards, or compile with concrete shapes (dynamic=False)"],
        )

    def bound(v, default):
        if v is None:
            return default
        if isinstance(v, Dim):
            return v
        v = int(v)
        return v if v >= 0 else size + v

    return bound(k.start, 0), bound(k.stop, size), step


def _norm_axis(axis, ndim, op):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise PyptoValueError(
            f"{op}: axis {axis} is out of range for a {ndim}-d tensor",
            location=user_location(),
            suggestions=["use axis=-1 for the last axis"] if ndim else ["reshape the 0-d tensor to 1-d first"],
        )
    return axis % ndim


def getitem(x, key) -> Tensor:
    """numpy basic indexing: ints, slices (with steps, negative too), None, Ellipsis,
    plus one integer array (a list, numpy array or int tensor) on one axis."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (bool, np.bool_)) for k in key):
        raise TypeError("indexing with booleans is not supported; use p.where")
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for a tensor of shape {list(x.shape)}: {used} were given")
    if n_ell:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - used) + key[i + 1 :]
    else:
        key = key + (slice(None),) * (x.ndim - used)
    starts, stops, steps, out_shape = [], [], [], []
    array_at = None  # (position in the result, index tensor)
    dim = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        size = x.shape[dim]
        if isinstance(k, slice) and isinstance(size, Dim):
            a, b, s = _symbolic_slice(k, size)
            starts.append(a), stops.append(b), steps.append(s)
            out_shape.append((b - a + s - 1) // s)
        elif isinstance(k, slice):
            a, b, s = k.indices(size)
            starts.append(a), stops.append(b), steps.append(s)
            out_shape.append(len(range(a, b, s)))
        elif isinstance(size, Dim) and (isinstance(k, (numbers.Integral, np.integer)) or isinstance(k, Tensor) and k.ndim == 0):
            i = int(k)
            a = i if i >= 0 else size + i  # the run checks that it lies inside the axis
            starts.append(a), stops.append(a + 1), steps.append(1)
        elif isinstance(k, (numbers.Integral, np.integer)) or (isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating):
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            i %= size
            starts.append(i), stops.append(i + 1), steps.append(1)
        elif isinstance(k, (list, np.ndarray, Tensor)):
            if array_at is not None:
                raise NotImplementedError("indexing with more than one integer array is not supported; use take_along_axis")
            idx = k if isinstance(k, Tensor) else np.asarray(k)
            if isinstance(idx, np.ndarray) and idx.dtype.kind not in "iu":
                raise TypeError(f"array indices must be integers, got {idx.dtype}")
            if isinstance(idx, np.ndarray):
                from .tensor import from_numpy

                idx = from_numpy(idx.astype(np.int32))
            array_at = (len(out_shape), idx)
            starts.append(0), stops.append(size), steps.append(1)
            out_shape.append(size)
        else:
            raise TypeError(f"unsupported index {k!r} of type {type(k).__name__}")
        dim += 1
    y = x
    if not all(same_dim(a, 0) and same_dim(b, d) and s == 1 for a, b, s, d in zip(starts, stops, steps, x.shape)):
        y = apply("slice", [x], {"starts": starts, "stops": stops, "steps": steps})
    if len(out_shape) != y.ndim or not all(same_dim(a, b) for a, b in zip(out_shape, y.shape)):
        y = y.reshape(out_shape)
    if array_at is not None:
        pos, idx = array_at
        flat = idx.reshape([-1]) if idx.ndim != 1 else idx
        y = apply("index_select", [y, flat], {"axis": pos})
        if idx.ndim != 1:
            y = y.reshape(list(y.shape[:pos]) + list(idx.shape) + list(y.shape[pos + 1 :]))
    return y
