"""Shape ops: reshape, transpose/permute, broadcast_to/expand, squeeze/unsqueeze,
flatten, concat, stack, unstack, split, pad, indexing (``x[...]``), gathers."""

from __future__ import annotations

import numbers

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoIndexError, PyptoTypeError, PyptoValueError, ShapeError, SymbolicShapeError
from .._core.location import user_location
from .._core.symbolic import Dim, same_dim
from .tensor import Tensor, apply, as_tensor, from_numpy

__all__ = [
    "reshape", "transpose", "permute", "broadcast_to", "expand", "squeeze", "unsqueeze", "expand_dims", "flatten",
    "concat", "concatenate", "cat", "stack", "unstack", "split", "pad", "getitem", "take_along_axis", "gather",
    "index_select", "take",
]  # fmt: skip


def _t(x, op, name="x"):
    return as_tensor(x, op, name)


def _varargs(args):
    """The sizes or axes of f(x, 1, 2) or f(x, [1, 2]) as one sequence."""
    if len(args) == 1 and not isinstance(args[0], (numbers.Integral, np.integer, Tensor, Dim)):
        return args[0]
    return args


def reshape(x, *shape) -> Tensor:
    """The same elements in row-major order with a new shape; one dimension may be -1."""
    x = _t(x, "reshape")
    shape = check.shape(_varargs(shape), "shape", "reshape", wildcards=1)
    return apply("reshape", [x], {"shape": list(shape)})


def transpose(x, *axes) -> Tensor:
    """Axes permuted (numpy's transpose): ``transpose(x)`` reverses them,
    ``transpose(x, (1, 0, 2))`` or ``transpose(x, 1, 0, 2)`` permutes them. Two axes
    alone, ``transpose(x, 0, 1)`` on a tensor of rank > 2, swap them (torch's form)."""
    x = _t(x, "transpose")
    if len(axes) == 1 and axes[0] is None:
        axes = ()
    axes = check.axes(_varargs(axes), "axes", "transpose", x.ndim)
    if len(axes) == 2 and x.ndim != 2:
        a, b = (v % x.ndim for v in axes)
        perm = list(range(x.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        axes = perm
    return apply("transpose", [x], {"perm": axes})


def permute(x, *dims) -> Tensor:
    """Axes permuted: result axis i is input axis dims[i] (torch's permute)."""
    x = _t(x, "permute")
    dims = check.axes(_varargs(dims), "dims", "permute", x.ndim)
    return apply("transpose", [x], {"perm": dims})


def broadcast_to(x, shape) -> Tensor:
    """x broadcast to shape (numpy rules)."""
    x = _t(x, "broadcast_to")
    return apply("broadcast_to", [x], {"shape": list(check.shape(shape, "shape", "broadcast_to"))})


def expand(x, *sizes) -> Tensor:
    """torch's expand: broadcast_to where -1 keeps x's size on that axis."""
    x = _t(x, "expand")
    sizes = list(check.shape(_varargs(sizes), "sizes", "expand", wildcards=None))
    off = len(sizes) - x.ndim
    shape = [x.shape[i - off] if isinstance(s, int) and s == -1 and i >= off else s for i, s in enumerate(sizes)]
    return broadcast_to(x, shape)


def squeeze(x, axis=None) -> Tensor:
    """x without size-1 axes (those in axis, or all)."""
    x = _t(x, "squeeze")
    axes = check.axes(axis, "axis", "squeeze", x.ndim)
    return apply("squeeze", [x], {"axis": [] if axes is None else axes})


def unsqueeze(x, axis) -> Tensor:
    """x with size-1 axes inserted at the positions axis names in the result."""
    x = _t(x, "unsqueeze")
    axes = check.axes(axis, "axis", "unsqueeze")
    if axes is None:
        raise check.fail("unsqueeze", "axis", axis, "an int or a tuple of ints")
    return apply("unsqueeze", [x], {"axis": check.axes(axes, "axis", "unsqueeze", x.ndim + len(axes))})


expand_dims = unsqueeze


def flatten(x, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Axes start_dim..end_dim merged into one (torch's flatten)."""
    x = _t(x, "flatten")
    if x.ndim == 0:
        check.axis(start_dim, "start_dim", "flatten"), check.axis(end_dim, "end_dim", "flatten")
        return x.reshape([1])
    s = check.axis(start_dim, "start_dim", "flatten", x.ndim) % x.ndim
    e = check.axis(end_dim, "end_dim", "flatten", x.ndim) % x.ndim
    n = 1
    for d in x.shape[s : e + 1]:
        n = n * d
    return x.reshape(list(x.shape[:s]) + [n] + list(x.shape[e + 1 :]))


def concat(tensors, axis: int = 0) -> Tensor:
    """The tensors joined along axis (dtypes promote)."""
    tensors = _tensor_list(tensors, "concat")
    return apply("concat", tensors, {"axis": check.axis(axis, "axis", "concat", tensors[0].ndim)})


concatenate = cat = concat


def stack(tensors, axis: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new axis."""
    tensors = _tensor_list(tensors, "stack")
    return apply("stack", tensors, {"axis": check.axis(axis, "axis", "stack", tensors[0].ndim + 1)})


def _tensor_list(tensors, op: str) -> list:
    """A non-empty list or tuple of tensors (arrays and scalars converted)."""
    if isinstance(tensors, (Tensor, np.ndarray, str, bytes)) or not isinstance(tensors, (list, tuple)):
        raise check.fail(op, "tensors", tensors, "a list or tuple of tensors")
    if not tensors:
        raise PyptoValueError(f"{op}: tensors is empty; give at least one tensor", location=user_location())
    return [_t(t, op, f"tensors[{i}]") for i, t in enumerate(tensors)]


def unstack(x, axis: int = 0) -> list:
    """The slices of x along axis, each without that axis (the inverse of stack)."""
    x = _t(x, "unstack")
    ax = check.axis(axis, "axis", "unstack", x.ndim) % x.ndim
    return [getitem(x, (slice(None),) * ax + (i,)) for i in range(x.shape[ax])]


def split(x, indices_or_sections, axis: int = 0) -> list:
    """numpy's split: an int n cuts axis into n equal parts (it must divide the size);
    a list gives the indices where parts start."""
    x = _t(x, "split")
    ax = check.axis(axis, "axis", "split", x.ndim) % x.ndim
    n = x.shape[ax]
    if not isinstance(indices_or_sections, (list, tuple, range, np.ndarray)):
        k = check.integer(indices_or_sections, "indices_or_sections", "split")
        if k <= 0 or n % k:
            raise ShapeError(
                f"split: axis {ax} of size {n} cannot be split into {k} equal parts",
                location=user_location(),
                suggestions=[f"give split points instead, e.g. {[n * i // max(k, 1) for i in range(1, max(k, 1))]}"],
            )
        bounds = [n * i // k for i in range(k + 1)]
    else:
        points = [check.integer(i, "indices_or_sections", "split") for i in indices_or_sections]
        bounds = [0] + [min(max(i, 0), n) for i in points] + [n]
    return [getitem(x, (slice(None),) * ax + (slice(a, max(a, b)),)) for a, b in zip(bounds, bounds[1:])]


def pad(x, pad_width, constant_values=0) -> Tensor:
    """numpy's pad in constant mode: pad_width is an int, a (before, after) pair, or one
    pair per axis."""
    x = _t(x, "pad")
    want = "an int >= 0, a (before, after) pair or one pair per axis"
    try:
        arr = np.asarray(pad_width)
        pw = np.broadcast_to(arr, (x.ndim, 2)) if arr.dtype.kind in "iu" and arr.ndim <= 2 else None
    except ValueError:
        pw = None
    if pw is None:
        raise check.fail("pad", "pad_width", pad_width, want)
    if (pw < 0).any():
        raise check.fail("pad", "pad_width", pad_width, want, PyptoValueError)
    value = check.number(constant_values, "constant_values", "pad", finite=False)
    return apply("pad", [x], {"pads": [int(v) for v in pw.reshape(-1)], "value": value})


def take_along_axis(x, indices, axis: int) -> Tensor:
    """numpy's take_along_axis: out[..., i, ...] = x[..., indices[..., i, ...], ...]."""
    x, indices = _t(x, "take_along_axis"), _t(indices, "take_along_axis", "indices")
    return apply("take_along_axis", [x, indices], {"axis": check.axis(axis, "axis", "take_along_axis", x.ndim)})


def gather(x, dim: int, index) -> Tensor:
    """torch's gather: out[i][j] = x[index[i][j]][j] (dim 0) and so on; index may be
    smaller than x on the other axes."""
    x, index = _t(x, "gather"), _t(index, "gather", "index")
    d = check.axis(dim, "dim", "gather", x.ndim) % x.ndim
    if index.ndim == x.ndim and any(index.shape[i] < x.shape[i] for i in range(x.ndim) if i != d):
        x = getitem(x, tuple(slice(0, index.shape[i]) if i != d else slice(None) for i in range(x.ndim)))
    return take_along_axis(x, index, d)


def index_select(x, axis: int, index) -> Tensor:
    """The slices of x at the 1-d indices along axis (torch's index_select)."""
    x, index = _t(x, "index_select"), _t(index, "index_select", "index")
    return apply("index_select", [x, index], {"axis": check.axis(axis, "axis", "index_select", x.ndim)})


def take(x, indices, axis: int = None) -> Tensor:
    """numpy's take with an axis (None: of the flattened tensor); indices of any shape."""
    x, idx = _t(x, "take"), _t(indices, "take", "indices")
    if axis is None:
        x, axis = x.reshape([-1]), 0
    ax = check.axis(axis, "axis", "take", x.ndim) % x.ndim
    out = index_select(x, ax, idx.reshape([-1]))
    return out.reshape(list(x.shape[:ax]) + list(idx.shape) + list(x.shape[ax + 1 :]))


def _symbolic_slice(k: slice, size):
    """A slice of an axis of symbolic size, or of a slice with a symbolic bound
    (``x[:, :seq_len]``), as (start, stop, step): negative bounds count from the end
    and None means the whole axis, as in Python; bounds are not clamped (each run
    checks 0 <= start <= stop <= size instead); steps must be positive."""
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


def _is_mask(k) -> bool:
    """Whether an index is a boolean mask (or a bool, which numpy reads as one)."""
    if isinstance(k, (bool, np.bool_)):
        return True
    if isinstance(k, Tensor):
        return k.dtype.name == "bool"
    if isinstance(k, (list, np.ndarray)):
        try:
            return np.asarray(k).dtype == np.bool_
        except (TypeError, ValueError):
            return False
    return False


def _index_array(k) -> Tensor:
    """A list or numpy array of indices as an integer tensor (int64 for lists)."""
    try:
        arr = np.asarray(k)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype.kind not in "iu":
        raise check.fail("getitem", "index", k, "an integer array (or a list of ints)")
    return from_numpy(arr)


def getitem(x, key) -> Tensor:
    """numpy's indexing: ints, slices (with steps, negative too), None, Ellipsis, plus
    one integer array (a list, numpy array or int tensor) on one axis (an
    index_select); ``x[key]`` takes keys of several arrays too (update.getitem)."""
    x = _t(x, "getitem")
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) == 1 and _is_mask(key[0]) and not isinstance(key[0], (bool, np.bool_)):
        from .masking import boolean_index

        return boolean_index(x, key[0])
    for k in key:
        if _is_mask(k):
            raise PyptoTypeError(
                "a boolean mask combined with other indices (or a bool scalar index) is not supported",
                location=user_location(),
                suggestions=[
                    "index with the mask alone: x[mask] (a mask of x's shape or of its first axes)",
                    "keep the shape and replace the other elements: p.where(mask, x, 0)",
                    "or select on the host: x.numpy()[mask.numpy()]",
                ],
            )
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise PyptoIndexError("an index can only have a single ellipsis ('...')", location=user_location())
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > x.ndim:
        raise PyptoIndexError(f"too many indices for a tensor of shape {list(x.shape)}: {used} were given", location=user_location())
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
        if isinstance(k, slice) and any(isinstance(v, Dim) for v in (size, k.start, k.stop)):
            a, b, s = _symbolic_slice(k, size)
            starts.append(a), stops.append(b), steps.append(s)
            out_shape.append((b - a + s - 1) // s)
        elif isinstance(k, slice):
            if k.step is not None and check.int_or_none(k.step) == 0:
                raise check.fail("getitem", "index", k, "a slice with a nonzero step", PyptoValueError)
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
                raise PyptoIndexError(f"index {i} is out of bounds for axis {dim} with size {size}", location=user_location())
            i %= size
            starts.append(i), stops.append(i + 1), steps.append(1)
        elif isinstance(k, (list, np.ndarray, Tensor)):
            if array_at is not None:
                raise PyptoTypeError("getitem takes one integer array; x[key] takes several", location=user_location(),
                                     suggestions=["write x[key]"])  # fmt: skip
            idx = k if isinstance(k, Tensor) else _index_array(k)
            if idx.dtype.is_floating:
                raise PyptoTypeError(f"array indices must be integers, got {idx.dtype.name}", location=user_location())
            array_at = (len(out_shape), idx)
            starts.append(0), stops.append(size), steps.append(1)
            out_shape.append(size)
        else:
            raise check.fail("getitem", "index", k, "an int, a slice, None, ..., or an integer array")
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
