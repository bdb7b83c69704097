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
from .creation import arange, zeros
from .ops import logical_and, where
from .shape_ops import broadcast_to, reshape, take
from .tensor import Tensor, _lib, _pinned_handles, apply, as_tensor, from_numpy

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
    slices with step 1 is one p.slice_update (written in place in a compiled program
    when x allows it); other keys place the value through an index map."""
    if any(isinstance(d, int) is False for d in x.shape):
        raise PyptoValueError("x[key] = value needs a tensor of concrete shape", location=user_location(),
                              suggestions=["use p.slice_update with start positions"])
    vshape = value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value)
    parts = key if isinstance(key, tuple) else (key,)
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
    if new is x:
        return
    old, x._handle, new._handle = x._handle, new._handle, 0
    x._type_info = None
    if old not in _pinned_handles:  # a traced function's input: its trace restores it
        _lib.free_handle(old)


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


def index_put(x, indices, values, accumulate: bool = False) -> Tensor:
    """torch's index_put: x with ``x[indices] = values`` (indices a tuple of index
    arrays); with ``accumulate`` the values are added, duplicates summing."""
    op = "index_put"
    x = as_tensor(x, op, "x")
    accumulate = check.flag(accumulate, "accumulate", op)
    if not isinstance(indices, (tuple, list)):
        raise check.fail(op, "indices", indices, "a tuple of index arrays, one per leading axis")
    try:
        key = tuple(k.numpy() if isinstance(k, Tensor) else np.asarray(k) for k in indices)
    except (ValueError, TypeError):
        key = ()
    if not key or any(not np.issubdtype(k.dtype, np.integer) and k.dtype != np.bool_ for k in key):
        raise check.fail(op, "indices", indices, "a tuple of integer (or boolean) index arrays, one per leading axis")
    values = as_tensor(values, op, "values")
    vshape = tuple(values.shape)
    if not accumulate:
        return _place(x, _index_map(x.shape, key, vshape, op), values, op)
    # Accumulate: each element adds the values that hit it, in index order, one layer
    # of hits at a time (the k-th hit of every element in layer k).
    try:
        tgt = np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)[key]
        src = np.broadcast_to(np.arange(int(np.prod(vshape)), dtype=np.int64).reshape(vshape), tgt.shape)
    except (IndexError, ValueError) as e:
        raise PyptoIndexError(f"{op}: {e}", location=user_location()) from None
    tgt, src = tgt.reshape(-1), src.reshape(-1)
    order = np.argsort(tgt, kind="stable")
    first = np.searchsorted(tgt[order], tgt[order], side="left")
    layer = np.empty_like(order)
    layer[order] = np.arange(len(order)) - first
    out = x
    zero = zeros(*x.shape, dtype=x.dtype)
    for h in range(int(layer.max()) + 1 if len(layer) else 0):
        pos = np.full(int(np.prod(x.shape)), -1, dtype=np.int64)
        pos[tgt[layer == h]] = src[layer == h]
        out = out + _place(zero, pos.reshape(x.shape), values, op)
    return out


def scatter(x, dim: int, index, src) -> Tensor:
    """torch's scatter: ``out[..., index[i, j], ...] = src[i, j]`` along ``dim`` for every
    position of ``index`` (index and src of the same rank as x; src at least as large as
    index; src may be a number)."""
    op = "scatter"
    x = as_tensor(x, op, "x")
    dim = check.axis(dim, "dim", op, x.ndim) % x.ndim
    if not isinstance(index, (Tensor, np.ndarray, list, tuple)):
        raise check.fail(op, "index", index, f"an integer array of {x.ndim} dimensions")
    try:
        idx = index.numpy() if isinstance(index, Tensor) else np.asarray(index)
    except (ValueError, TypeError):
        raise check.fail(op, "index", index, f"an integer array of {x.ndim} dimensions") from None
    if idx.ndim != x.ndim or not np.issubdtype(idx.dtype, np.integer):
        raise check.fail(op, "index", index, f"an integer array of {x.ndim} dimensions", PyptoValueError)
    if isinstance(src, bool) or not isinstance(src, (int, float, np.number, np.ndarray, Tensor)):
        raise check.fail(op, "src", src, "a p.Tensor, a numpy array or a number")
    if not isinstance(src, (np.ndarray, Tensor)) or (isinstance(src, np.ndarray) and src.ndim == 0):
        src = np.full(idx.shape, src, dtype=x.dtype.numpy)
    sshape = tuple(src.shape)
    if len(sshape) != x.ndim or any(i > s for i, s in zip(idx.shape, sshape)):
        raise ShapeError(f"{op}: src {list(sshape)} must have x's rank and be at least index's shape {list(idx.shape)}",
                         location=user_location())
    if (idx < 0).any() or (idx >= x.shape[dim]).any():
        bad = idx[(idx < 0) | (idx >= x.shape[dim])].flat[0]
        raise PyptoIndexError(f"{op}: index {bad} is outside axis {dim} of size {x.shape[dim]}", location=user_location())
    coords = list(np.indices(idx.shape))
    src_flat = np.ravel_multi_index(coords, sshape)
    coords[dim] = idx
    pos = np.full(x.shape, -1, dtype=np.int64)
    pos[tuple(coords)] = src_flat  # duplicates: the last write wins (torch leaves it unspecified)
    return _place(x, pos, src, op)
