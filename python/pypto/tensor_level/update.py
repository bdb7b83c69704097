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

from .._core import validate as check
from .._core.errors import PyptoIndexError, PyptoValueError, ShapeError, SymbolicShapeError
from .._core.location import user_location
from .._core.symbolic import Dim
from .ops import where
from .shape_ops import broadcast_to, reshape
from .shape_ops import getitem as shape_getitem
from .tensor import Tensor, _lib, _pinned_handles, apply, as_tensor, from_numpy, host_array, is_scalar

__all__ = ["slice_update", "index_put", "scatter"]


def _same(a, b):
    """Whether two sizes (ints or symbolic Dims) are equal: True, False, or None when
    only the sizes a program runs with can say (the core's shape rules then record
    that they must be)."""
    try:
        return bool(a == b)
    except SymbolicShapeError:
        return None


def _same_shape(a, b) -> bool:
    """Whether two shapes are certainly equal."""
    return len(a) == len(b) and all(_same(x, y) is True for x, y in zip(a, b))


def _broadcast(*shapes) -> tuple:
    """numpy's broadcast of shapes whose sizes may be symbolic: a literal 1 stretches; a
    symbolic size never does, and two that may differ must be equal when the program
    runs (the core checks). A ValueError for sizes that certainly differ."""
    out = []
    for i in range(1, max((len(s) for s in shapes), default=0) + 1):
        dims = [s[-i] for s in shapes if len(s) >= i and not (isinstance(s[-i], int) and s[-i] == 1)]
        for d in dims[1:]:
            if _same(dims[0], d) is False:
                raise ValueError(f"sizes {dims[0]} and {d} on axis -{i} differ")
        out.append(dims[0] if dims else 1)
    return tuple(reversed(out))


def _fits(vshape, shape) -> None:
    """A ValueError unless a value of vshape can broadcast to shape (sizes that may
    differ must be equal when the program runs: the core checks)."""
    if len(vshape) > len(shape) and any(not (isinstance(d, int) and d == 1) for d in vshape[:len(vshape) - len(shape)]):
        raise ValueError("the value has more dimensions than the selection")
    for v, d in zip(reversed(vshape), reversed(shape)):
        if not (isinstance(v, int) and v == 1) and _same(v, d) is False:
            raise ValueError(f"size {v} does not stretch to {d}")


def _empty(shape) -> bool:
    return any(isinstance(d, int) and d == 0 for d in shape)


def _block_of(shape, key):
    """For a basic key (ints, slices with step 1, Ellipsis), the block it selects as
    (starts, sizes) over every axis; None for any other key."""
    key = key if isinstance(key, tuple) else (key,)
    if any(not (k is Ellipsis or isinstance(k, (slice, int, np.integer))) or isinstance(k, bool) for k in key):
        return None  # index arrays, masks, None: an index_put
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
        if isinstance(n, Dim):  # a start the run checks; slices of step 1 from a start >= 0
            if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and int(k) >= 0:
                starts.append(int(k)), sizes.append(1)
                continue
            if not isinstance(k, slice) or k.step not in (None, 1) or any(v is not None and (not isinstance(v, (int, np.integer)) or v < 0)
                                                                            for v in (k.start, k.stop)):  # fmt: skip
                return None
            a = int(k.start or 0)
            starts.append(a), sizes.append((n if k.stop is None else int(k.stop)) - a)
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not -n <= int(k) < n:
                return None  # the index_put path reports it
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


def _value_of(x: Tensor, value, op: str) -> Tensor:
    """An assigned value as a p.Tensor of x's dtype."""
    val = as_tensor(value if isinstance(value, (Tensor, np.ndarray)) else np.asarray(value, dtype=x.dtype.numpy), op, "value")
    return val if val.dtype == x.dtype else val.astype(x.dtype)


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` with numpy's indexing (ints, slices, Ellipsis, None, integer
    and boolean index arrays); x is rebound to the updated value. A key of ints and
    slices of step 1 is one p.slice_update; any other is one p.index_put (the selected
    positions as index arrays, numpy's order of the selection kept): both are written
    in place in a compiled program when x allows it, and index p.Tensors may change
    from run to run. A lone boolean mask over x's leading axes with a value that fits
    any number of selected elements (a number, or one row) is a p.where, which
    compiles; other masks realise their positions (refused inside p.compile)."""
    parts = key if isinstance(key, tuple) else (key,)
    new = _masked_put(x, parts, value)
    if new is None:
        new = _basic_put(x, parts, value)
    if new is None:
        new = _advanced_put(x, parts, value, "setitem")
    if new is not x:
        _rebind(x, new)


def _basic_put(x: Tensor, parts: tuple, value):
    """x[key] = value for a key of ints, slices of step 1, Ellipsis and 0-d integer
    tensors (positions known when the program runs) as one slice_update; None for any
    other key."""
    dynamic = {i: k for i, k in enumerate(parts) if isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating
               and k.dtype.name != "bool"}  # fmt: skip
    block = _block_of(x.shape, tuple(0 if i in dynamic else k for i, k in enumerate(parts)))
    if block is None or _empty(block[1]):
        return None
    starts, sizes = block
    sel = tuple(n for n, k in zip(sizes, _expanded(parts, x.ndim)) if not _is_int_key(k))
    vshape = value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value)
    try:
        _fits(tuple(vshape), sel)
    except ValueError as e:
        raise ShapeError(f"setitem: a value of shape {list(vshape)} does not fit the selection {list(sel)}: {e}",
                         location=user_location()) from None  # fmt: skip
    val = _value_of(x, value, "setitem")
    val = broadcast_to(val, sel) if not _same_shape(val.shape, sel) else val
    val = reshape(val, *sizes) if not _same_shape(val.shape, sizes) else val
    axis_of = _key_axes(parts, x.ndim)
    dyn_axes = {axis_of[i]: k for i, k in dynamic.items()}
    axes = [a for a in range(x.ndim) if _same(sizes[a], x.shape[a]) is not True or a in dyn_axes]
    return slice_update(x, val, [dyn_axes.get(a, starts[a]) for a in axes], axes=axes) if axes else val


def _is_int_key(k) -> bool:
    return (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))) or (isinstance(k, Tensor) and k.ndim == 0)


def _expanded(parts: tuple, ndim: int) -> tuple:
    """A key with its Ellipsis (or, without one, the missing trailing axes) made full
    slices, so that every axis of x has an entry (None entries kept)."""
    used = sum(1 for k in parts if k is not None and k is not Ellipsis)
    dots = [i for i, k in enumerate(parts) if k is Ellipsis]
    if len(dots) > 1:
        raise PyptoIndexError("setitem: an index can only have a single ellipsis ('...')", location=user_location())
    if used > ndim:
        raise PyptoIndexError(f"setitem: too many indices for a tensor of {ndim} dimensions: {used} were given", location=user_location())
    fill = (slice(None),) * (ndim - used)
    if dots:
        return parts[:dots[0]] + fill + parts[dots[0] + 1:]
    return parts + fill


def _is_bool_key(k) -> bool:
    if isinstance(k, Tensor):
        return k.dtype.name == "bool"
    if isinstance(k, (list, np.ndarray)):
        return np.asarray(k).dtype == np.bool_
    return False


def _masked_put(x: Tensor, parts: tuple, value):
    """x[mask] = value for a lone bool mask of x's leading axes and a value that fits
    however many elements the mask selects (it broadcasts to one of them): p.where,
    which needs no mask values and so compiles. None for any other key or value."""
    if len(parts) != 1 or not _is_bool_key(parts[0]):
        return None
    mask = parts[0] if isinstance(parts[0], Tensor) else np.asarray(parts[0])
    k, rest = mask.ndim, tuple(x.shape[mask.ndim:])
    vshape = tuple(value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value))
    if k == 0 or not _same_shape(mask.shape, x.shape[:k]) or len(vshape) > len(rest) + 1:
        return None
    try:
        _fits(vshape, (1, *rest))
    except ValueError:
        return None
    val = _value_of(x, value, "setitem")
    if val.ndim > len(rest):
        val = reshape(val, *val.shape[1:])
    m = mask if isinstance(mask, Tensor) else from_numpy(mask)
    if rest:
        m = reshape(m, *m.shape, *([1] * len(rest)))
    return where(m, val, x)


def _key_plan(x: Tensor, parts: tuple, op: str):
    """A numpy key as index arrays over x's first depth axes (up to the last one the key
    does not take whole): the key's arrays and ints, a slice's positions, shaped so
    that together they broadcast to lead, numpy's selection over those axes (the
    broadcast index shape where the advanced indices stand when they are adjacent,
    else first; then the slices'). Returns (indices, sel, lead, depth) with sel the
    whole selection's shape (None entries as 1s). Bool masks are their nonzero()
    positions, which a traced mask inside p.compile does not have: a clear error."""
    flat = []
    for k in parts:
        if isinstance(k, (bool, np.bool_)):
            raise PyptoIndexError(f"{op}: a bool scalar index is not supported", location=user_location(),
                                  suggestions=["write x[...] = value for True; False selects nothing"])  # fmt: skip
        if _is_bool_key(k):
            from .masking import _mask_values

            flat.extend(np.nonzero(_mask_values(k, op, "mask", writes=op != "getitem")))
            continue
        if isinstance(k, list):
            k = np.asarray(k)
        if isinstance(k, np.ndarray) and not np.issubdtype(k.dtype, np.integer):
            raise check.fail(op, "index", k, "ints, slices, Ellipsis, None, or integer or boolean index arrays", PyptoIndexError)
        if isinstance(k, Tensor) and k.dtype.is_floating:
            raise check.fail(op, "index", k, "an integer or boolean p.Tensor", PyptoIndexError)
        if not (k is None or k is Ellipsis or isinstance(k, (slice, np.ndarray, Tensor)) or _is_int_key(k)):
            raise check.fail(op, "index", k, "ints, slices, Ellipsis, None, or integer or boolean index arrays", PyptoIndexError)
        flat.append(k)
    entries = _expanded(tuple(flat), x.ndim)
    adv = [i for i, k in enumerate(entries) if not (k is None or isinstance(k, slice))]
    shapes = [tuple(k.shape) if isinstance(k, (Tensor, np.ndarray)) else () for k in (entries[i] for i in adv)]
    try:
        b = _broadcast(*shapes)
    except ValueError:
        raise PyptoIndexError(f"{op}: index arrays of shapes {[list(s) for s in shapes]} do not broadcast together",
                              location=user_location()) from None  # fmt: skip
    axis_entries = [k for k in entries if k is not None]  # one per axis of x
    ranges = {ax: _slice_positions(k, x.shape[ax], op) for ax, k in enumerate(axis_entries) if isinstance(k, slice)}
    depth = max([ax + 1 for ax, k in enumerate(axis_entries) if not (isinstance(k, slice) and ranges[ax][1])], default=0)
    together = not adv or adv[-1] - adv[0] + 1 == len(adv)
    # numpy's selection (None entries are slices of one); D, the index arrays' shape, is
    # it over the first depth axes without the None entries
    sel, lead, at = [], [], {}
    ax = 0
    for i, k in enumerate(entries):
        if together and adv and i == adv[0]:
            at["b"] = len(lead)
            sel.extend(b), lead.extend(b)
        if k is None:
            sel.append(1)
        elif isinstance(k, slice):
            if ax < depth:
                at[ax] = len(lead)
                lead.append(ranges[ax][0])
            sel.append(ranges[ax][0])
        if k is not None:
            ax += 1
    if adv and not together:
        at = {a: p + len(b) for a, p in at.items()}
        at["b"] = 0
        sel, lead = [*b, *sel], [*b, *lead]
    nb = len(b)
    indices = []
    for ax in range(depth):
        k = axis_entries[ax]
        if isinstance(k, slice):
            n, _, pos = ranges[ax]
            tail = [1] * (len(lead) - at[ax] - 1)
            indices.append(pos.reshape((n, *tail)) if isinstance(pos, np.ndarray) else reshape(pos, n, *tail) if tail else pos)
            continue
        tail = [1] * (len(lead) - at["b"] - nb)
        if isinstance(k, Tensor):
            indices.append(reshape(k, *k.shape, *tail) if tail else k)
        else:
            indices.append(np.asarray(k).reshape((*np.shape(k), *tail)))
    return indices, tuple(sel), tuple(lead), depth


def _advanced_put(x: Tensor, parts: tuple, value, op: str) -> Tensor:
    """x[key] = value for any numpy key as one index_put over the key plan's axes, the
    value broadcast to the selection."""
    indices, sel, lead, depth = _key_plan(x, parts, op)
    vshape = tuple(value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value))
    try:
        _fits(vshape, tuple(sel))
    except ValueError as e:
        raise ShapeError(f"{op}: a value of shape {list(vshape)} does not fit the selection {list(sel)}: {e}",
                         location=user_location()) from None  # fmt: skip
    if depth == 0 or _empty(sel):
        return x if _empty(sel) else _fit(value, x, tuple(x.shape), op, "value")
    values = _fit(value, x, tuple(sel), op, "value")
    target = tuple(lead) + tuple(x.shape[depth:])
    if not _same_shape(values.shape, target):
        values = reshape(values, *target)
    return _put(x, indices, values, False, op)


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``: keys of several index arrays, or a mask beside other indices, are
    numpy's advanced indexing (advanced_getitem); the rest is shape_ops.getitem."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [k for k in parts if isinstance(k, (list, np.ndarray)) or (isinstance(k, Tensor) and k.ndim > 0)]
    if len(arrays) > 1 or (arrays and len(parts) > 1 and any(_is_bool_key(k) for k in arrays)):
        return advanced_getitem(x, key)
    return shape_getitem(x, key)


def advanced_getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` for keys of several index arrays, or a mask beside other indices
    (numpy's advanced indexing): the selected rows of x over the key plan's axes, one
    index_select of x with those axes flattened at the rows' positions (computed on the
    host: index tensors are realised, so inside p.compile they are refused)."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(isinstance(d, Dim) for d in x.shape):
        raise PyptoIndexError("getitem: several index arrays into a tensor of symbolic shape are not supported",
                              location=user_location(), suggestions=["index one axis at a time, or use p.take_along_axis"])  # fmt: skip
    host = []
    for k in parts:
        if isinstance(k, Tensor) and k.dtype.name != "bool" and not k.dtype.is_floating:
            try:
                k = k.numpy()
            except PyptoValueError as e:
                if "no data" not in e.message:
                    raise
                raise PyptoIndexError("getitem: several index tensors (or one beside a mask) inside p.compile: their positions "
                                      "combine on the host, which a traced tensor has no values for", location=user_location(),
                                      suggestions=["index one axis at a time: x[:, i][j] or p.index_select",
                                                   "or p.take_along_axis with indices of x's rank"]) from None  # fmt: skip
        host.append(k)
    indices, sel, lead, depth = _key_plan(x, tuple(host), "getitem")
    if _empty(sel):
        return apply("full", [], {"value": 0.0, "dtype": x.dtype.name, "shape": list(sel)})
    strides = np.cumprod((list(x.shape[1:depth]) + [1])[::-1])[::-1]
    rows = np.zeros(lead, dtype=np.int64)
    for j, i in enumerate(indices):
        i = _int32_index(i, "getitem", f"index {j}", j, x.shape[j], on_host=True).astype(np.int64)
        rows = rows + np.where(i < 0, i + x.shape[j], i) * int(strides[j])
    flat = reshape(x, int(np.prod(x.shape[:depth])), *x.shape[depth:])
    picked = apply("index_select", [flat, from_numpy(rows.reshape(-1).astype(np.int32))], {"axis": 0})
    return reshape(picked, *sel)


def _slice_positions(k: slice, n, op: str):
    """A slice of an axis of size n (an int or a symbolic Dim) as (length, whether it is
    the whole axis, its positions: an int32 array, or an iota on the device for the
    whole of a symbolic axis)."""
    if k.step is not None and check.int_or_none(k.step) == 0:
        raise check.fail(op, "index", k, "a slice with a nonzero step", PyptoValueError)
    if isinstance(n, Dim):
        if k == slice(None) or k == slice(0, None) or k == slice(None, None, 1):
            return n, True, apply("iota", [], {"shape": [n], "axis": 0})
        if k.step in (None, 1) and all(isinstance(v, (int, np.integer)) and v >= 0 for v in (k.start or 0, k.stop)):
            return max(int(k.stop) - int(k.start or 0), 0), False, np.arange(int(k.start or 0), int(k.stop), dtype=np.int32)
        raise PyptoIndexError(f"{op}: the slice {k} of an axis of symbolic size {n} beside index arrays has no positions "
                              "known while tracing", location=user_location(),
                              suggestions=["take the axis whole, or give the slice non-negative int bounds",
                                           "or compile with concrete shapes: p.compile(fn, dynamic=False)"])  # fmt: skip
    r = range(*k.indices(n))
    return len(r), r == range(n), np.arange(r.start, r.stop, r.step, dtype=np.int32)


def _rebind(x: Tensor, new: Tensor) -> None:
    """x takes new's value (setitem's functional update)."""
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
        if ax not in axes and _same(update.shape[ax], x.shape[ax]) is False:
            raise ShapeError(f"{op}: update's axis {ax} has size {update.shape[ax]}, x's {x.shape[ax]}; give a start for it",
                             location=user_location())
        if isinstance(update.shape[ax], int) and isinstance(x.shape[ax], int) and update.shape[ax] > x.shape[ax]:
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
        if int(s) < 0 or (isinstance(hi, int) and int(s) > hi):  # a symbolic bound: checked when the program runs
            raise PyptoIndexError(f"{op}: start {int(s)} on axis {ax} puts the update of size {update.shape[ax]} outside "
                                  f"the axis of size {x.shape[ax]}", location=user_location(),
                                  suggestions=[f"starts on this axis must lie in [0, {hi}]"])  # fmt: skip
        inputs.append(from_numpy(np.asarray(int(s), dtype=np.int32)))
    return apply(op, inputs, {"axes": axes})


def _int32_index(k, op: str, name: str, axis: int, n: int, wraps: bool = True, on_host: bool = False):
    """An index argument as an int32 p.Tensor: p.Tensors are cast on the device (their
    values are checked when the program runs), host arrays are checked now against an
    axis of size n ([-n, n) when negative indices wrap, else [0, n)) and kept as an
    int32 numpy array when on_host is set."""
    if isinstance(k, Tensor):
        if k.dtype.is_floating or k.dtype.name == "bool":
            raise check.fail(op, name, k, "an integer p.Tensor or array", PyptoValueError)
        return k if k.dtype.name == "int32" else k.astype("int32")
    a = np.asarray(k)
    if not np.issubdtype(a.dtype, np.integer):
        raise check.fail(op, name, k, "an integer array (or p.Tensor)", PyptoValueError)
    if a.size and not isinstance(n, Dim):  # along a symbolic axis the run checks them
        lo = -n if wraps else 0
        bad = (a < lo) | (a >= n)
        if bad.any():
            span = f"[-{n}, {n})" if wraps else f"[0, {n})"
            raise PyptoIndexError(f"{op}: {name} holds {int(a[bad].flat[0])}, outside axis {axis} of size {n}", location=user_location(),
                                  suggestions=[f"indices on this axis must lie in {span}"])  # fmt: skip
    return a.astype(np.int32) if on_host else from_numpy(a.astype(np.int32))


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
    if not _same_shape(v.shape, shape):
        try:
            _fits(tuple(v.shape), tuple(shape))
        except ValueError:
            raise ShapeError(f"{op}: {name} of shape {list(v.shape)} do not broadcast to the indexed shape {list(shape)}",
                             location=user_location()) from None
        v = broadcast_to(v, tuple(shape))
    return v


def index_put(x, indices, values, accumulate: bool = False) -> Tensor:
    """torch's index_put: x with ``x[indices] = values`` for ``indices`` a tuple of
    integer index arrays (p.Tensors, numpy arrays or lists), one per leading axis of x,
    broadcast together; negative indices count from the end; boolean masks (host
    arrays, or p.Tensors realised now: refused inside p.compile) select where they are
    true. ``values`` broadcast to the indexed shape.
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
            from .masking import _mask_values

            k = _mask_values(k, op, "indices", writes=True)  # a mask's positions are data: known once it is realised, never while tracing
        if not isinstance(k, Tensor):
            try:
                k = np.asarray(k)
            except (ValueError, TypeError):
                raise check.fail(op, "indices", indices, "a tuple of integer (or boolean) index arrays") from None
            if k.dtype == np.bool_:
                parts.extend(np.nonzero(k))
                continue
        parts.append(k)
    return _put(x, parts, values, accumulate, op)


def _put(x: Tensor, parts: list, values, accumulate: bool, op: str) -> Tensor:
    """The index_put op of x, integer index arrays (one per leading axis, host ones
    checked against their axes now) and values broadcast to the indexed shape."""
    if len(parts) > x.ndim:
        raise PyptoIndexError(f"{op}: {len(parts)} index arrays for a tensor of {x.ndim} dimensions", location=user_location())
    idx = [_int32_index(k, op, f"indices[{j}]", j, x.shape[j], on_host=True) for j, k in enumerate(parts)]
    try:
        b = _broadcast(*(tuple(i.shape) for i in idx))
    except ValueError:
        raise ShapeError(f"{op}: index arrays of shapes {[list(i.shape) for i in idx]} do not broadcast together",
                         location=user_location()) from None
    # host arrays are broadcast on the host (no device task for a constant's stretch)
    concrete = all(isinstance(d, int) for d in b)
    idx = [from_numpy(np.ascontiguousarray(np.broadcast_to(i, b))) if isinstance(i, np.ndarray) and concrete else
           from_numpy(i) if isinstance(i, np.ndarray) else i for i in idx]  # fmt: skip
    idx = [i if _same_shape(i.shape, b) else broadcast_to(i, tuple(b)) for i in idx]
    values = _fit(values, x, tuple(b) + tuple(x.shape[len(idx):]), op, "values")
    return apply("index_put", [x, values, *idx], {"accumulate": accumulate})


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
