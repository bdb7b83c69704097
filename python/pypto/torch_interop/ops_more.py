"""The torch operations real models use beyond the core table (ops_table.py): tensor
creation, integer index arithmetic (arange, cumsum, diff, masks from triu), gathers,
min/max with indices, unbind, the MoE pieces (one_hot, histc, index_add, topk),
in-place methods and item assignment, and the calls torch makes for its own
bookkeeping (no-ops). Each handler takes torch's arguments with PyPTO tensors in place
of torch tensors and returns PyPTO values; ops_table.py merges these tables into its
own."""

from __future__ import annotations

import collections
import math
import numbers
import operator

import numpy as np
import torch
import torch.nn.functional as F

from .._core.dtypes import bool_, float32, int32
from .._core.symbolic import Dim
from ..tensor_level import creation
from ..tensor_level import nn as pnn
from ..tensor_level import ops
from ..tensor_level import reductions
from ..tensor_level import shape_ops
from ..tensor_level import update
from ..tensor_level.einsum import einsum
from ..tensor_level.tensor import Tensor
from .torch_dtypes import pypto_dtype as _dt


def _size(args):
    """torch's f(2, 3) and f((2, 3)) forms of a size (symbolic dims stay dims)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        args = args[0]
    return [s if isinstance(s, Dim) else int(s) for s in args]


def _default_dtype(value):
    """torch's dtype for a Python fill value (int64 runs as int32)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, numbers.Integral):
        return int32
    return float32


# --- creation ---------------------------------------------------------------------------------


def _arange(start, end=None, step=1, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = torch.int64 if all(isinstance(v, (numbers.Integral, Dim)) for v in (start, end, step)) else torch.float32
    return creation.arange(start, end, step, dtype=_dt(dtype))


def _filled(value):
    def f(*size, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False, out=None, memory_format=None):
        return creation.full(_size(size), value, dtype=_dt(dtype) if dtype is not None else float32)

    return f


def _full(size, fill_value, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False, out=None):
    return creation.full(_size((size,)), fill_value, dtype=_dt(dtype) if dtype is not None else _default_dtype(fill_value))


def _like(value):
    def f(x, dtype=None, *, device=None, layout=None, pin_memory=False, requires_grad=False, memory_format=None):
        return creation.full(list(x.shape), value, dtype=_dt(dtype) if dtype is not None else x.dtype)

    return f


def _full_like(x, fill_value, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False, memory_format=None):
    return creation.full(list(x.shape), fill_value, dtype=_dt(dtype) if dtype is not None else x.dtype)


def _new(value):
    def f(x, *size, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
        return creation.full(_size(size), value, dtype=_dt(dtype) if dtype is not None else x.dtype)

    return f


def _new_full(x, size, fill_value, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    return creation.full(_size((size,)), fill_value, dtype=_dt(dtype) if dtype is not None else x.dtype)


# --- index arithmetic -------------------------------------------------------------------------


def _cumsum(x, dim, *, dtype=None, out=None):
    if dtype is not None:
        x = ops.cast(x, _dt(dtype))
    elif x.dtype == bool_:
        x = ops.cast(x, int32)  # torch sums bools as integers
    return pnn.cumsum(x, axis=dim)


def _diff(x, n=1, dim=-1, prepend=None, append=None):
    parts = [p if isinstance(p, Tensor) else None for p in (prepend, append)]
    if any(v is not None and p is None for v, p in zip((prepend, append), parts)):
        raise TypeError("diff with a prepend or append that is not a tensor")
    seq = [t for t in (parts[0], x, parts[1]) if t is not None]
    x = shape_ops.concat(seq, axis=dim) if len(seq) > 1 else x
    ax = dim % x.ndim
    for _ in range(n):
        hi = shape_ops.getitem(x, (slice(None),) * ax + (slice(1, None),))
        lo = shape_ops.getitem(x, (slice(None),) * ax + (slice(None, -1),))
        x = ops.logical_xor(hi, lo) if x.dtype == bool_ else hi - lo
    return x


def _band(upper):
    def f(x, diagonal=0, *, out=None):
        rows, cols = x.shape[-2], x.shape[-1]
        r = shape_ops.unsqueeze(creation.arange(0, rows, dtype=int32), -1)
        c = shape_ops.unsqueeze(creation.arange(0, cols, dtype=int32), 0)
        keep = (c - r >= diagonal) if upper else (c - r <= diagonal)
        return ops.where(keep, x, 0)

    return f


def _multi_index(x, key):
    """x[i0, i1, ...] for integer index tensors on the leading axes (broadcast together;
    negative indices count from the end, as the gathers take them), the other axes
    whole: a take of x's rows at i0, then, per further index, a take along the next
    axis at each position's own index. No size becomes a value, so symbolic shapes
    trace as concrete ones do."""
    k = len(key)
    rank = max(i.ndim for i in key)
    key = [shape_ops.reshape(i, [1] * (rank - i.ndim) + list(i.shape)) if i.ndim < rank else i for i in key]
    out = shape_ops.take(x, ops.cast(key[0], int32), axis=0)  # key[0].shape + x.shape[1:]
    for ax in range(1, k):
        rest = out.ndim - rank - 1  # the axes after the one gathered now
        idx = shape_ops.reshape(ops.cast(key[ax], int32), list(key[ax].shape) + [1] * (1 + rest))
        out = shape_ops.squeeze(shape_ops.take_along_axis(out, idx, rank), rank)
    return out


def _leading_arrays(x, key) -> bool:
    """Whether key indexes x's leading axes with integer tensors only (the rest whole)."""
    if not isinstance(key, tuple) or len(key) < 2:
        return False
    arrays = [k for k in key if isinstance(k, Tensor)]
    if len(arrays) < 2 or any(a.dtype.is_floating or a.dtype == bool_ for a in arrays):
        return False
    n = len(arrays)
    return all(isinstance(k, Tensor) for k in key[:n]) and all(k == slice(None) or k is Ellipsis for k in key[n:])


def getitem(x, key):
    if isinstance(x, Tensor) and _leading_arrays(x, key):
        return _multi_index(x, tuple(k for k in key if isinstance(k, Tensor)))
    if isinstance(x, Tensor):
        return update.getitem(x, key)
    return operator.getitem(x, key)


def _setitem(x, key, value):
    if not isinstance(x, Tensor):
        raise TypeError("item assignment into a value that is not a tensor")
    update.setitem(x, key, value)


MinMax = collections.namedtuple("MinMax", ["values", "indices"])


def _minmax(red, arg, pair):
    def f(x, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return pair(x, dim)
        if dim is None:
            return red(x)
        return MinMax(red(x, axis=dim, keepdims=keepdim), arg(x, axis=dim, keepdims=keepdim))

    return f


def _unbind(x, dim=0):
    return tuple(shape_ops.unstack(x, axis=dim))


def _repeat_interleave(x, repeats, dim=None, *, output_size=None):
    if not isinstance(repeats, numbers.Integral):
        raise TypeError("repeat_interleave with per-element repeats (its size depends on the values)")
    if dim is None:
        x, dim = shape_ops.reshape(x, [-1]), 0
    ax = dim % x.ndim
    shape = list(x.shape)
    y = shape_ops.unsqueeze(x, ax + 1)
    y = shape_ops.expand(y, shape[: ax + 1] + [int(repeats)] + shape[ax + 1 :])
    return shape_ops.reshape(y, shape[:ax] + [shape[ax] * int(repeats)] + shape[ax + 1 :])


def _repeat(x, *sizes):
    sizes = _size(sizes)
    lead = len(sizes) - x.ndim
    shape = [1] * lead + list(x.shape)
    y = shape_ops.reshape(x, [d for s in shape for d in (1, s)])
    y = shape_ops.expand(y, [d for r, s in zip(sizes, shape) for d in (r, s)])
    return shape_ops.reshape(y, [r * s for r, s in zip(sizes, shape)])


def _one_hot(x, num_classes=-1):
    if num_classes < 0:
        raise TypeError("one_hot without num_classes (the class count depends on the values)")
    classes = creation.arange(0, num_classes, dtype=int32)
    return ops.cast(shape_ops.unsqueeze(x, -1) == classes, int32)


def _histc(x, bins=100, min=0, max=0, *, out=None):
    lo, hi = float(min), float(max)
    if lo == hi:
        raise TypeError("histc with min == max (the range comes from the values)")
    flat = shape_ops.reshape(x, [-1])
    if not flat.dtype.is_floating:
        flat = ops.cast(flat, float32)
    b = ops.cast(ops.floor((flat - lo) * (bins / (hi - lo))), int32)
    b = ops.where(flat == hi, bins - 1, b)  # the top edge belongs to the last bin
    inside = (flat >= lo) & (flat <= hi)
    hits = (shape_ops.unsqueeze(b, -1) == creation.arange(0, bins, dtype=int32)) & shape_ops.unsqueeze(inside, -1)
    return reductions.sum(ops.cast(hits, x.dtype if x.dtype.is_floating else float32), axis=0)


def _index_add(x, dim, index, source, *, alpha=1):
    ax = dim % x.ndim
    if alpha != 1:
        source = source * alpha
    perm = [ax] + [i for i in range(x.ndim) if i != ax]
    inv = [perm.index(i) for i in range(x.ndim)]
    xt, st = shape_ops.permute(x, perm), shape_ops.permute(source, perm)
    return shape_ops.permute(update.index_put(xt, (index,), st, accumulate=True), inv)


def _topk(x, k, dim=-1, largest=True, sorted=True, *, out=None):
    return tuple(pnn.topk(x, int(k), dim, largest, sorted))


def _index_select(x, dim, index):
    return shape_ops.index_select(x, dim, index)


def _gather(x, dim, index, *, sparse_grad=False, out=None):
    return shape_ops.gather(x, dim, index)


def _embedding_bag(ids, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                   sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):  # fmt: skip
    if offsets is not None or ids.ndim != 2 or max_norm is not None or padding_idx is not None:
        raise TypeError("embedding_bag with offsets, max_norm or padding_idx (bags of 2-d ids only)")
    rows = shape_ops.take(weight, ids, axis=0)  # [bags, n, width]
    if per_sample_weights is not None:
        if mode != "sum":
            raise TypeError("embedding_bag with per_sample_weights needs mode='sum'")
        rows = rows * shape_ops.unsqueeze(per_sample_weights, -1)
    red = {"sum": reductions.sum, "mean": reductions.mean, "max": reductions.max}[mode]
    return red(rows, axis=1)


def _grouped_mm(input, weight, offs=None, *, bias=None, out_dtype=None):
    """A grouped matmul (MoE experts): rows [offs[e-1], offs[e]) of input, sorted by
    expert, times weight[e] ([E, in, out]); rows past offs[-1] are zeros. Computed as
    every expert's product of every row, each row keeping its own expert's (the others
    are exact zeros in the sum), so the cube runs one batched matmul."""
    if offs is None or bias is not None or input.ndim != 2 or weight.ndim != 3:
        raise TypeError("grouped_mm of a 2-d input, 3-d weights and offsets only")
    n, experts = input.shape[0], weight.shape[0]
    rows = shape_ops.unsqueeze(creation.arange(0, n, dtype=int32), -1)
    expert = reductions.sum(ops.cast(rows >= shape_ops.unsqueeze(ops.cast(offs, int32), 0), int32), axis=1)  # [n]
    dense = ops.matmul(shape_ops.unsqueeze(input, 0), weight)  # [E, n, out]
    mine = shape_ops.unsqueeze(shape_ops.unsqueeze(expert, 0) == shape_ops.unsqueeze(creation.arange(0, experts, dtype=int32), -1), -1)
    y = reductions.sum(ops.where(mine, dense, 0), axis=0)
    return y if out_dtype is None else ops.cast(y, _dt(out_dtype))


def _sort(x, dim=-1, descending=False, stable=False, *, out=None):
    return MinMax(pnn.sort(x, dim, descending=descending), pnn.argsort(x, dim, descending=descending))


def _pad(x, pad, mode="constant", value=None):
    if mode != "constant":
        raise TypeError(f"pad with mode={mode!r}")
    pad = list(pad)
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(a < 0 or b < 0 for a, b in widths):
        raise TypeError("pad with negative widths (a crop)")
    return shape_ops.pad(x, widths, 0 if value is None else value)


def _hardswish(x, inplace=False):
    return x * ops.clip(x + 3.0, 0.0, 6.0) * (1.0 / 6.0)


def _hardsigmoid(x, inplace=False):
    return ops.clip(x + 3.0, 0.0, 6.0) * (1.0 / 6.0)


def _in_place(fn):
    """A Tensor method that writes its result into self (add_, masked_fill_, ...)."""

    def f(x, *args, **kwargs):
        update.setitem(x, Ellipsis, ops.cast(fn(x, *args, **kwargs), x.dtype))
        return x

    return f


def in_place_operator(fn):
    """x += y and the like: on a tensor, x itself takes the result (other readers of x
    see it, as in torch); on other values, the plain operator."""

    def f(x, *args):
        if isinstance(x, Tensor):
            return _in_place(fn)(x, *args)
        return fn(x, *args)

    return f


def _copy_(x, src, non_blocking=False):
    update.setitem(x, Ellipsis, ops.cast(src, x.dtype))
    return x


def _flip(x, *dims):
    dims = {d % x.ndim for d in _size(dims)}
    return shape_ops.getitem(x, tuple(slice(None, None, -1) if ax in dims else slice(None) for ax in range(x.ndim)))


def _tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor of Python data: a constant (ints int64, run as int32; floats float32)."""
    arr = np.asarray(data)
    if dtype is None:
        dtype = torch.bool if arr.dtype == np.bool_ else torch.int64 if arr.dtype.kind in "iu" else torch.float32
    return creation.constant(arr, dtype=_dt(dtype))


def _clone(x, *, memory_format=None):
    """A new tensor of x's value (a later in-place write to it must not reach x)."""
    return ops.cast(x, x.dtype)


def _no_op(*args, **kwargs):
    return None


def _expand_as(x, other):
    return shape_ops.expand(x, list(other.shape))


def _view_as(x, other):
    return shape_ops.reshape(x, list(other.shape))


def _type(x, dtype=None, non_blocking=False):
    if dtype is None or isinstance(dtype, str):
        raise TypeError("Tensor.type() without a torch dtype")
    return ops.cast(x, _dt(dtype))


def _item(x):
    """Tensor.item() of a float input (a part takes it as a float, part.py); the value
    of a computed tensor is not known while tracing."""
    if isinstance(x, Tensor):
        raise TypeError("Tensor.item() of a computed tensor (its value is known only when the program runs)")
    return x


def _sym_int(v):
    """torch.sym_int of a size or a float (a dim stays a dim)."""
    return v if isinstance(v, Dim) else int(v)


def _sym_extreme(pick):
    """torch.sym_max / sym_min: of ints, or of a dim and itself; other dims have no
    order while tracing (SymbolicShapeError: the part is traced per size)."""

    def f(a, b):
        if isinstance(a, Dim) or isinstance(b, Dim):
            if isinstance(a, Dim) and isinstance(b, Dim) and a == b:
                return a
            (a if isinstance(a, Dim) else b)._no_value(f"torch.sym_{pick.__name__}")
        return pick(a, b)

    return f


def present(entries: dict) -> dict:
    """{function: handler} for the (module, name) entries this torch version has."""
    return {getattr(mod, name): h for (mod, name), h in entries.items() if hasattr(mod, name)}


FUNCTIONS = {
    torch.arange: _arange, torch.ones: _filled(1), torch.zeros: _filled(0), torch.empty: _filled(0), torch.full: _full,
    torch.ones_like: _like(1), torch.zeros_like: _like(0), torch.empty_like: _like(0), torch.full_like: _full_like,
    torch.cumsum: _cumsum, torch.diff: _diff, torch.triu: _band(True), torch.tril: _band(False),
    torch.gather: _gather, torch.index_select: _index_select, torch.topk: _topk, torch.unbind: _unbind,
    torch.min: _minmax(reductions.min, reductions.argmin, ops.minimum),
    torch.max: _minmax(reductions.max, reductions.argmax, ops.maximum),
    torch.repeat_interleave: _repeat_interleave, torch.histc: _histc, torch.index_add: _index_add,
    torch.sin: ops.sin, torch.cos: ops.cos, torch.logical_not: ops.logical_not, torch.logical_and: ops.logical_and,
    torch.logical_or: ops.logical_or, torch.eq: ops.equal, torch.ne: ops.not_equal, torch.lt: ops.less,
    torch.le: ops.less_equal, torch.gt: ops.greater, torch.ge: ops.greater_equal,
    torch.bitwise_not: lambda x: ops.logical_not(x) if x.dtype == bool_ else ~x,
    torch.einsum: lambda eq, *xs: einsum(eq, *(xs[0] if len(xs) == 1 and isinstance(xs[0], (list, tuple)) else xs)),
    F.one_hot: _one_hot, F.embedding_bag: _embedding_bag, F.pad: _pad, F.hardswish: _hardswish,
    F.hardsigmoid: _hardsigmoid, F.relu6: lambda x, inplace=False: ops.clip(x, 0.0, 6.0),
    torch._assert: _no_op, torch._C._log_api_usage_once: _no_op,
    operator.setitem: _setitem, torch.sort: _sort, torch.flip: _flip, torch.tensor: _tensor, torch.clone: _clone,
    operator.mod: ops.mod, torch.remainder: ops.mod,
    torch.Size: tuple,  # a shape built from sizes (dims when they are symbolic)
    torch.sym_float: float, torch.sym_int: _sym_int, torch.sym_max: _sym_extreme(max), torch.sym_min: _sym_extreme(min),
    math.sqrt: math.sqrt, math.floor: _sym_int, math.ceil: lambda v: -_sym_int(-v),
}  # fmt: skip
FUNCTIONS.update(present({(torch, "_sym_sqrt"): math.sqrt}))
FUNCTIONS.update(present({(torch, "_grouped_mm"): _grouped_mm, (F, "grouped_mm"): _grouped_mm, (torch._C._nn, "pad"): _pad}))

#: Operators registered with torch.library by other packages, by name (their modules
#: need not be imported): transformers' grouped matmul for MoE experts.
CUSTOM_OPS = {
    "transformers.grouped_mm_fallback.default": _grouped_mm,
    "transformers.grouped_mm_fallback": _grouped_mm,
}

_UNARY = ["sin", "cos", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "sigmoid", "relu", "floor", "ceil", "erf", "reciprocal",
          "logical_not", "tanh", "sign"]  # fmt: skip

METHODS = {
    **{name: getattr(ops, name) for name in _UNARY if hasattr(ops, name)},
    "cumsum": _cumsum, "diff": _diff, "triu": _band(True), "tril": _band(False), "gather": _gather,
    "index_select": _index_select, "topk": _topk, "unbind": _unbind, "sort": _sort,
    "min": _minmax(reductions.min, reductions.argmin, ops.minimum),
    "max": _minmax(reductions.max, reductions.argmax, ops.maximum),
    "argmax": lambda x, dim=None, keepdim=False: reductions.argmax(x, axis=dim, keepdims=keepdim),
    "argmin": lambda x, dim=None, keepdim=False: reductions.argmin(x, axis=dim, keepdims=keepdim),
    "repeat_interleave": _repeat_interleave, "repeat": _repeat, "histc": _histc, "index_add": _index_add,
    "new_ones": _new(1), "new_zeros": _new(0), "new_empty": _new(0), "new_full": _new_full,
    "long": lambda x, *a, **k: ops.cast(x, int32), "bool": lambda x, *a, **k: ops.cast(x, bool_),
    "expand_as": _expand_as, "view_as": _view_as, "reshape_as": _view_as, "type": _type,
    "eq": ops.equal, "ne": ops.not_equal, "lt": ops.less, "le": ops.less_equal, "gt": ops.greater, "ge": ops.greater_equal,
    "logical_and": ops.logical_and, "logical_or": ops.logical_or,
    "dim": lambda x: x.ndim, "numel": lambda x: math.prod(x.shape),
    "__setitem__": _setitem, "copy_": _copy_, "flip": _flip, "clone": _clone, "detach": lambda x: x,
    "remainder": ops.mod, "__mod__": ops.mod, "item": _item,
    "clamp_min": lambda x, m: ops.clip(x, m, None), "clamp_max": lambda x, m: ops.clip(x, None, m),
}  # fmt: skip
