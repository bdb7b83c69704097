"""Writing into tensors: ``x[key] = value``, p.slice_update (dynamic_update_slice),
p.index_put and p.scatter.

Every update is functional: it makes a new value, and ``x[key] = v`` rebinds ``x`` to
it, so later reads of ``x`` see the update while tensors computed from ``x`` before
keep what they saw. Updates whose positions are known when the call is made (Python
keys, index arrays with data) are computed from an index map built with numpy's own
indexing rules: every element of the result takes either the update's element the map
names or ``x``'s (a gather and a select on the device). p.slice_update also takes
start positions that are tensors, as a compiled decoder step needs for its KV cache.
"""

from __future__ import annotations

import numpy as np

from . import _validate as check
from ._location import user_location
from .errors import PyptoIndexError, PyptoValueError, ShapeError
from .ops import where
from .shape_ops import broadcast_to, reshape, take
from .tensor import Tensor, _lib, _pinned_handles, apply, as_tensor, from_numpy, host_array, is_scalar

__all__ = ["slice_update", "index_put", "scatter"]


def _place(x: Tensor, positions: np.ndarray, values, op: str) -> Tensor:
    """x with the elements where positions >= 0 replaced by the flattened values'
    element positions names."""
    values = as_tensor(values, op, "values")
    if values.dtype != x.dtype:
        values = values.astype(x.dtype)
    mask = positions >= 0
    if not mask.any():
        return x
    flat = reshape(values, -1)
    picked = reshape(take(flat, from_numpy(np.where(mask, positions, 0).astype(np.int32).reshape(-1))), *x.shape)
    return where(from_numpy(mask), picked, x)


def _index_map(shape, key, value_shape, op: str) -> np.ndarray:
    """An int array of x's shape: the flat position in the (broadcast) update of each
    element key selects, -1 elsewhere; numpy's indexing decides what key selects."""
    pos = np.full(shape, -1, dtype=np.int64)
    try:
        selected = pos[key].shape
        src = np.broadcast_to(np.arange(int(np.prod(value_shape)), dtype=np.int64).reshape(value_shape), selected)
        pos[key] = src
    except IndexError as e:
        raise PyptoIndexError(f"{op}: {e}", location=user_location()) from None
    except ValueError as e:
        raise ShapeError(f"{op}: a value of shape {list(value_shape)} does not fit the selection: {e}", location=user_location()) from None
    return pos


def _host_key(key, op: str):
    """The key with p.Tensor index arrays turned into numpy (they are realised)."""
    def conv(k):
        if isinstance(k, Tensor):
            return k.numpy()
        return k

    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


def _block_of(shape, key):
    """For a basic key (ints, slices with step 1, Ellipsis), the block it selects as
    (starts, sizes) over every axis; None for any other key."""
    key = key if isinstance(key, tuple) else (key,)
    if any(not (k is Ellipsis or isinstance(k, (slice, int, np.integer))) or isinstance(k, bool) for k in key):
        return None  # index arrays, masks, None: the index map
    dots = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(dots) > 1:
        return None
    if dots:
        i = dots[0]
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        return None
    key = key + (slice(None),) * (len(shape) - len(key))
    starts, sizes = [], []
    for k, n in zip(key, shape):
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not -n <= int(k) < n:
                return None  # numpy's IndexError, from the index map
            starts.append(int(k) % n)
            sizes.append(1)
        elif isinstance(k, slice):
            a, b, st = k.indices(n)
            if st != 1:
                return None
            starts.append(a)
            sizes.append(max(b - a, 0))
        else:
            return None
    return starts, sizes


def _key_axes(parts, ndim):
    """The axis of x each entry of a basic key (no None) indexes."""
    out, ax = {}, 0
    for i, k in enumerate(parts):
        if k is Ellipsis:
            ax += ndim - (len(parts) - 1)
            continue
        out[i] = ax
        ax += 1
    return out


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` (numpy's indexing: ints, slices, Ellipsis, None, integer and
    boolean index arrays); x is rebound to the updated value. A key of ints and
    slices with step 1 is one p.slice_update, and one of integer index arrays on the
    leading axes (then full slices) one p.index_put: both are written in place in a
    compiled program when x allows it, and index p.Tensors may change from run to run.
    Other keys place the value through an index map."""
    if any(isinstance(d, int) is False for d in x.shape):
        raise PyptoValueError("x[key] = value needs a tensor of concrete shape", location=user_location(),
                              suggestions=["use p.slice_update with start positions"])
    vshape = value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value)
    parts = key if isinstance(key, tuple) else (key,)
    rows = _leading_index_arrays(parts, x.ndim)
    if rows is not None:  # numpy's and index_put's rules agree: the indexed shape, then the rest of x
        _rebind(x, index_put(x, rows, value if isinstance(value, (Tensor, np.ndarray)) else np.asarray(value, dtype=x.dtype.numpy)))
        return
    dynamic = {i: k for i, k in enumerate(parts) if isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating
               and k.dtype.name != "bool"}  # fmt: skip
    host_key = tuple(0 if i in dynamic else k for i, k in enumerate(parts)) if dynamic else _host_key(key, "setitem")
    block = _block_of(x.shape, host_key)
    if dynamic and block is None:
        raise PyptoIndexError("setitem: a 0-d tensor index (a position known when the program runs) combines only with ints "
                              "and slices of step 1", location=user_location(),
                              suggestions=["use p.slice_update, or p.index_put for index arrays"])  # fmt: skip
    if block is not None and 0 not in block[1]:
        starts, sizes = block
        sel = tuple(np.empty(x.shape, np.bool_)[host_key].shape)
        try:
            np.broadcast_shapes(tuple(vshape), sel)
        except ValueError as e:
            raise ShapeError(f"setitem: a value of shape {list(vshape)} does not fit the selection: {e}", location=user_location()) from None
        val = as_tensor(value if isinstance(value, (Tensor, np.ndarray)) else np.asarray(value, dtype=x.dtype.numpy), "setitem", "value")
        if val.dtype != x.dtype:
            val = val.astype(x.dtype)
        val = reshape(broadcast_to(val, sel) if tuple(val.shape) != sel else val, *sizes)
        axis_of = _key_axes(parts, x.ndim)
        dyn_axes = {axis_of[i]: k for i, k in dynamic.items()}
        axes = [a for a in range(x.ndim) if sizes[a] != x.shape[a] or a in dyn_axes]
        new = slice_update(x, val, [dyn_axes.get(a, starts[a]) for a in axes], axes=axes) if axes else val
    else:
        positions = _index_map(x.shape, host_key, tuple(vshape), "setitem")
        new = _place(x, positions, value if isinstance(value, (Tensor, np.ndarray)) else np.asarray(value, dtype=x.dtype.numpy), "setitem")
    if new is not x:
        _rebind(x, new)


def _rebind(x: Tensor, new: Tensor) -> None:
    """x takes new's value (setitem's functional update)."""
    old, x._handle, new._handle = x._handle, new._handle, 0
    x._type_info = None
    if old not in _pinned_handles:  # a traced function's input: its trace restores it
        _lib.free_handle(old)


def _leading_index_arrays(parts, ndim: int):
    """The index arrays of a key made of integer index arrays (p.Tensors of at least one
    dimension, numpy arrays, lists) on the leading axes followed by nothing but full
    slices and one Ellipsis: a p.index_put. None for any other key."""
    arrays = []
    for k in parts:
        if isinstance(k, Tensor):
            if k.ndim == 0 or k.dtype.is_floating or k.dtype.name == "bool":
                return None
        elif isinstance(k, (np.ndarray, list)):
            a = np.asarray(k)
            if a.ndim == 0 or not np.issubdtype(a.dtype, np.integer):
                return None
            k = a
        else:
            break
        arrays.append(k)
    rest = parts[len(arrays):]
    full = all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in rest)
    if not arrays or not full or sum(k is Ellipsis for k in rest) > 1 or len(arrays) > ndim:
        return None
    return tuple(arrays)


def slice_update(x, update, starts, axes=None) -> Tensor:
    """x with ``update`` written at ``starts`` (one start per axis in ``axes``, default
    the leading axes; JAX's dynamic_update_slice). A start may be an int or a 0-d
    integer tensor known only when the program runs, so one compiled program serves
    every position. A start must keep the update inside x (in [0, n - size]): one
    outside is an error naming the line (when the program runs, for a tensor start).
    Inside p.compile the update is written in place when x is an input donated with
    ``donate_argnums`` (or an intermediate nothing else reads): only the update's bytes
    move; otherwise x is copied first (the executor's ``info()["update_copies"]``)."""
    op = "slice_update"
    x, update = as_tensor(x, op, "x"), as_tensor(update, op, "update")
    if update.ndim != x.ndim:
        raise ShapeError(f"{op}: update has {update.ndim} dimensions, x has {x.ndim}", location=user_location(),
                         suggestions=["reshape the update to x's rank (size-1 axes where it is one element wide)"])
    if not isinstance(starts, (list, tuple)):
        starts = [starts]
    for st in starts:
        if isinstance(st, bool) or not isinstance(st, (int, np.integer, Tensor)):
            raise check.fail(op, "starts", starts, "ints or 0-d integer tensors, one per axis")
    axes = list(range(len(starts))) if axes is None else [check.axis(a, "axes", op, x.ndim) % x.ndim for a in
                                                          (axes if isinstance(axes, (list, tuple)) else [axes])]
    if len(set(axes)) != len(axes):
        raise check.fail(op, "axes", axes, "distinct axes, one per start", PyptoValueError)
    if len(axes) != len(starts):
        raise PyptoValueError(f"{op}: {len(starts)} starts for {len(axes)} axes", location=user_location())
    for ax in range(x.ndim):
        if ax not in axes and update.shape[ax] != x.shape[ax]:
            raise ShapeError(f"{op}: update's axis {ax} has size {update.shape[ax]}, x's {x.shape[ax]}; give a start for it",
                             location=user_location())
        if update.shape[ax] > x.shape[ax]:
            raise ShapeError(f"{op}: update {list(update.shape)} is larger than x {list(x.shape)} on axis {ax}", location=user_location())
    if update.dtype != x.dtype:
        update = update.astype(x.dtype)
    inputs = [x, update]
    for ax, s in zip(axes, starts):
        if isinstance(s, Tensor):
            if s.ndim != 0 or s.dtype.is_floating or s.dtype.name == "bool":
                raise check.fail(op, "starts", s, "ints or 0-d integer tensors")
            inputs.append(s if s.dtype.name in ("int32", "int8") else s.astype("int32"))
            continue
        hi = x.shape[ax] - update.shape[ax]
        if not 0 <= int(s) <= hi:
            raise PyptoIndexError(f"{op}: start {int(s)} on axis {ax} puts the update of size {update.shape[ax]} outside "
                                  f"the axis of size {x.shape[ax]}", location=user_location(),
                                  suggestions=[f"starts on this axis must lie in [0, {hi}]"])  # fmt: skip
        inputs.append(from_numpy(np.asarray(int(s), dtype=np.int32)))
    return apply(op, inputs, {"axes": axes})


def _int32_index(k, op: str, name: str, axis: int, n: int, wraps: bool = True):
    """An index argument as an int32 p.Tensor: p.Tensors are cast on the device (their
    values are checked when the program runs), host arrays are checked now against an
    axis of size n ([-n, n) when negative indices wrap, else [0, n))."""
    if isinstance(k, Tensor):
        if k.dtype.is_floating or k.dtype.name == "bool":
            raise check.fail(op, name, k, "an integer p.Tensor or array", PyptoValueError)
        return k if k.dtype.name == "int32" else k.astype("int32")
    a = np.asarray(k)
    if not np.issubdtype(a.dtype, np.integer):
        raise check.fail(op, name, k, "an integer array (or p.Tensor)", PyptoValueError)
    if a.size:
        lo = -n if wraps else 0
        bad = (a < lo) | (a >= n)
        if bad.any():
            span = f"[-{n}, {n})" if wraps else f"[0, {n})"
            raise PyptoIndexError(f"{op}: {name} holds {int(a[bad].flat[0])}, outside axis {axis} of size {n}", location=user_location(),
                                  suggestions=[f"indices on this axis must lie in {span}"])  # fmt: skip
    return from_numpy(a.astype(np.int32))


def _fit(values, x: Tensor, shape, op: str, name: str) -> Tensor:
    """values (a p.Tensor, an array, nested lists or a number) as a p.Tensor of x's
    dtype broadcast to shape."""
    if isinstance(values, (list, tuple)):
        values = host_array(values, op, name)
    elif is_scalar(values):
        values = np.asarray(values, dtype=x.dtype.numpy)
    v = as_tensor(values, op, name)
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    if tuple(v.shape) != tuple(shape):
        try:
            np.broadcast_shapes(tuple(v.shape), tuple(shape))
        except ValueError:
            raise ShapeError(f"{op}: {name} of shape {list(v.shape)} do not broadcast to the indexed shape {list(shape)}",
                             location=user_location()) from None
        v = broadcast_to(v, tuple(shape))
    return v


def index_put(x, indices, values, accumulate: bool = False) -> Tensor:
    """torch's index_put: x with ``x[indices] = values`` for ``indices`` a tuple of
    integer index arrays (p.Tensors, numpy arrays or lists), one per leading axis of x,
    broadcast together; negative indices count from the end; boolean masks (host
    arrays) select where they are true. ``values`` broadcast to the indexed shape.
    Duplicate positions: the last write wins, or with ``accumulate`` every value adds
    (in index order). Inside p.compile the update is written in place when x is donated
    (or an intermediate nothing else reads): only the values move; index p.Tensors
    may then change from run to run, an index outside its axis being an error naming
    the line when the program runs."""
    op = "index_put"
    x = as_tensor(x, op, "x")
    accumulate = check.flag(accumulate, "accumulate", op)
    if not isinstance(indices, (tuple, list)) or not indices:
        raise check.fail(op, "indices", indices, "a tuple of index arrays, one per leading axis")
    parts = []
    for k in indices:
        if isinstance(k, Tensor) and k.dtype.name == "bool":
            k = k.numpy()  # a mask's positions are data: known once it is realised
        if not isinstance(k, Tensor):
            try:
                k = np.asarray(k)
            except (ValueError, TypeError):
                raise check.fail(op, "indices", indices, "a tuple of integer (or boolean) index arrays") from None
            if k.dtype == np.bool_:
                parts.extend(np.nonzero(k))
                continue
        parts.append(k)
    if len(parts) > x.ndim:
        raise PyptoIndexError(f"{op}: {len(parts)} index arrays for a tensor of {x.ndim} dimensions", location=user_location())
    idx = [_int32_index(k, op, f"indices[{j}]", j, x.shape[j]) for j, k in enumerate(parts)]
    try:
        b = np.broadcast_shapes(*(tuple(i.shape) for i in idx))
    except ValueError:
        raise ShapeError(f"{op}: index arrays of shapes {[list(i.shape) for i in idx]} do not broadcast together",
                         location=user_location()) from None
    idx = [i if tuple(i.shape) == b else broadcast_to(i, tuple(b)) for i in idx]
    values = _fit(values, x, tuple(b) + tuple(x.shape[len(idx):]), op, "values")
    return apply(op, [x, values, *idx], {"accumulate": accumulate})


def scatter(x, dim: int, index, src, reduce=None) -> Tensor:
    """torch's scatter: ``out[..., index[p], ...] = src[p]`` along ``dim`` for every
    position p of ``index`` (index and src of x's rank; index at most src's size on
    every axis and x's off dim; src may be a number). Indices lie in [0, n).
    Duplicates: the last write wins, or with ``reduce="add"`` (scatter_add) every value
    adds. Written in place inside p.compile as index_put is."""
    op = "scatter"
    x = as_tensor(x, op, "x")
    dim = check.axis(dim, "dim", op, x.ndim) % x.ndim
    if reduce not in (None, "none", "add"):
        raise check.fail(op, "reduce", reduce, 'None or "add"', PyptoValueError)
    if isinstance(index, (list, tuple)):
        index = np.asarray(index)
    if not isinstance(index, (Tensor, np.ndarray)) or index.ndim != x.ndim:
        raise check.fail(op, "index", index, f"an integer array of {x.ndim} dimensions", PyptoValueError)
    idx = _int32_index(index, op, "index", dim, x.shape[dim], wraps=False)
    if isinstance(src, bool) or not isinstance(src, (int, float, np.number, np.ndarray, Tensor)):
        raise check.fail(op, "src", src, "a p.Tensor, a numpy array or a number")
    if not isinstance(src, (np.ndarray, Tensor)) or src.ndim == 0:
        src = _fit(src, x, tuple(idx.shape), op, "src")
    src = as_tensor(src, op, "src")
    if src.dtype != x.dtype:
        src = src.astype(x.dtype)
    return apply(op, [x, idx, src], {"dim": dim, "reduce": reduce or "none"})
