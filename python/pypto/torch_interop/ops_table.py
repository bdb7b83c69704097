"""The torch operations PyPTO runs, and how: torch functions, Tensor methods and
nn.Module types, each mapped to PyPTO ops (one table, read by the module importer and
by the torch.compile backend).

A handler takes torch's arguments with PyPTO tensors in place of torch tensors and
returns PyPTO values. A module handler also gets the module (its parameters are shared
with PyPTO through ``params``, which wraps each torch tensor once, without a copy).
``module_unsupported`` says why a module instance cannot be run (a training-mode
Dropout, a MultiheadAttention option), or None.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.nn.functional as F
from torch import nn

from .._core.dtypes import bfloat16, bool_, float16, float32, int32
from ..tensor_level import conv
from ..tensor_level import nn as pnn
from ..tensor_level import ops
from ..tensor_level import reductions
from ..tensor_level import shape_ops
from ..tensor_level.tensor import Tensor
from .torch_dtypes import pypto_dtype as _dtype

def _dims(args):
    """torch's f(x, 1, 2) and f(x, (1, 2)) forms of a dims argument."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        return list(args[0])
    return list(args)


def _axis(dim):
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


# --- functions -------------------------------------------------------------------------------


def _softmax(x, dim=None, _stacklevel=3, dtype=None):
    x = x if dtype is None else ops.cast(x, _dtype(dtype))
    return pnn.softmax(x, axis=-1 if dim is None else dim)


def _log_softmax(x, dim=None, _stacklevel=3, dtype=None):
    x = x if dtype is None else ops.cast(x, _dtype(dtype))
    return pnn.log_softmax(x, axis=-1 if dim is None else dim)


def _linear(x, weight, bias=None):
    y = ops.matmul(x, weight, transpose_b=True)
    return y if bias is None else y + bias


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return pnn.layer_norm(x, list(normalized_shape), weight, bias, eps)


def _rms_norm(x, normalized_shape, weight=None, eps=None):
    if eps is None:
        eps = torch.finfo(torch.float32 if x.dtype == float32 else torch.float16 if x.dtype == float16 else torch.bfloat16).eps
    return pnn.rms_norm(x, list(normalized_shape), weight, eps)


#: The largest table a device gather reads, in elements (public: lower/lowering_gather.go
#: maxGatherElems, addresses built in fp32).
GATHER_ELEMENTS = 1 << 24


def _embedding(ids, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        raise TypeError("embedding with max_norm renormalises the weights in place")
    rows, width = weight.shape
    if rows * width < GATHER_ELEMENTS:
        return shape_ops.take(weight, ids, axis=0)
    # A table beyond the gather's reach (GPT-2's 50257 x 768): gather from row blocks
    # that fit, each index from its block, zeros elsewhere; the sum is exact.
    per = (GATHER_ELEMENTS - 1) // width
    out = None
    for start in range(0, rows, per):
        n = min(per, rows - start)
        got = shape_ops.take(weight[start : start + n], ops.clip(ids - start, 0, n - 1), axis=0)
        inside = shape_ops.unsqueeze((ids >= start) & (ids < start + n), -1)
        got = ops.where(inside, got, 0)
        out = got if out is None else out + got
    return out


def _gelu(x, approximate="none"):
    return ops.gelu(x, approximate=approximate)


def _dropout(x, p=0.5, training=False, inplace=False):
    if training and p > 0:
        raise TypeError("dropout in training mode (call model.eval() for inference)")
    return x


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if enable_gqa and key.shape[-3] != query.shape[-3]:  # grouped-query attention: each kv head serves a group
        from .ops_more import _repeat_interleave

        group = query.shape[-3] // key.shape[-3]
        key, value = _repeat_interleave(key, group, -3), _repeat_interleave(value, group, -3)
    return pnn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _reduce(fn):
    def f(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            x = ops.cast(x, _dtype(dtype))
        return fn(x, axis=_axis(dim), keepdims=keepdim)

    return f


def _var(x, dim=None, *, correction=1, keepdim=False, unbiased=None):
    ddof = correction if unbiased is None else int(bool(unbiased))
    return reductions.var(x, axis=_axis(dim), keepdims=keepdim, ddof=ddof)


def _cat(tensors, dim=0):
    return shape_ops.concat(list(tensors), axis=dim)


def _stack(tensors, dim=0):
    return shape_ops.stack(list(tensors), axis=dim)


def _transpose(x, dim0, dim1):
    perm = list(range(x.ndim))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return shape_ops.permute(x, perm)


def _t(x):
    return x if x.ndim < 2 else _transpose(x, 0, 1)


def _reshape(x, *shape):
    return shape_ops.reshape(x, _dims(shape))


def _permute(x, *dims):
    return shape_ops.permute(x, _dims(dims))


def _flatten(x, start_dim=0, end_dim=-1):
    return shape_ops.flatten(x, start_dim, end_dim)


def _unsqueeze(x, dim):
    return shape_ops.unsqueeze(x, dim)


def _squeeze(x, dim=None):
    return shape_ops.squeeze(x, dim if not isinstance(dim, list) else tuple(dim))


def _expand(x, *sizes):
    return shape_ops.expand(x, _dims(sizes))


def _split(x, split_size_or_sections, dim=0):
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        points = list(range(size, n, size))
    else:
        points, at = [], 0
        for s in list(split_size_or_sections)[:-1]:
            at += s
            points.append(at)
    return tuple(shape_ops.split(x, points, axis=dim))


def _chunk(x, chunks, dim=0):
    n = x.shape[dim]
    size = -(-n // chunks)
    return _split(x, size, dim)


def _to(x, *args, **kwargs):
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif not isinstance(a, (str, torch.device)):
            raise TypeError(f"Tensor.to({a!r})")
    device = kwargs.get("device", next((a for a in args if isinstance(a, (str, torch.device))), None))
    if device is not None and torch.device(device).type != "cpu":
        raise TypeError(f"Tensor.to(device={device!r})")
    return x if dtype is None else ops.cast(x, _dtype(dtype))


def _cast_to(dt):
    return lambda x, *a, **k: ops.cast(x, dt)


def _type_as(x, other):
    return ops.cast(x, other.dtype)


def _size(x, dim=None):
    return tuple(x.shape) if dim is None else x.shape[dim]


def _contiguous(x, *args, **kwargs):
    return x


def _masked_fill(x, mask, value):
    if isinstance(value, Tensor):
        value = ops.cast(value, x.dtype)
    return ops.where(mask, value, x)


def _where(cond, a=None, b=None):
    if a is None:
        raise TypeError("torch.where(cond) with one argument (its size depends on the values)")
    return ops.where(cond, a, b)


def _matmul(a, b):
    return ops.matmul(a, b)


def _add(a, b, *, alpha=1):
    return a + (b if alpha == 1 else b * alpha)


def _sub(a, b, *, alpha=1):
    return a - (b if alpha == 1 else b * alpha)


def _baddbmm(inp, a, b, *, beta=1, alpha=1):
    return inp * beta + ops.matmul(a, b) * alpha


def _addmm(inp, a, b, *, beta=1, alpha=1):
    return inp * beta + ops.matmul(a, b) * alpha


def _clamp(x, min=None, max=None):
    return ops.clip(x, min, max)


def _leaky_relu(x, negative_slope=0.01, inplace=False):
    return ops.where(x >= 0, x, x * negative_slope)


def _relu(x, inplace=False):
    return ops.relu(x)


def _silu(x, inplace=False):
    return ops.silu(x)


def _hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    return ops.clip(x, min_val, max_val)


def _getitem(x, key):
    if isinstance(x, Tensor):
        return shape_ops.getitem(x, key)
    return operator.getitem(x, key)


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta
    return ops.where(bx > threshold, x, ops.log(ops.exp(bx) + 1) / beta)


def _conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return conv.conv2d(x, weight, bias, stride, padding, dilation, groups)


def _max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise TypeError("max_pool2d with return_indices")
    return conv.max_pool2d(x, kernel_size, stride or None, padding, dilation, ceil_mode)


def _avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise TypeError("avg_pool2d with divisor_override")
    return conv.avg_pool2d(x, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def _batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training:
        raise TypeError("batch_norm in training mode (call model.eval())")
    return conv.batch_norm(x, running_mean, running_var, weight, bias, eps)


#: torch functions (and Python operators, as FX records them) -> handler.
FUNCTIONS = {
    operator.add: _add, operator.sub: _sub, operator.mul: operator.mul, operator.truediv: operator.truediv,
    operator.floordiv: operator.floordiv, operator.neg: operator.neg, operator.pow: operator.pow,
    operator.matmul: _matmul, operator.getitem: _getitem, operator.iadd: _add, operator.imul: operator.mul,
    operator.eq: operator.eq, operator.ne: operator.ne, operator.lt: operator.lt, operator.le: operator.le,
    operator.gt: operator.gt, operator.ge: operator.ge, operator.and_: operator.and_, operator.or_: operator.or_,
    operator.invert: operator.invert,
    getattr: getattr,
    torch.add: _add, torch.sub: _sub, torch.subtract: _sub, torch.mul: operator.mul, torch.multiply: operator.mul,
    torch.div: operator.truediv, torch.true_divide: operator.truediv, torch.neg: operator.neg,
    torch.pow: ops.pow, torch.maximum: ops.maximum, torch.minimum: ops.minimum,
    torch.matmul: _matmul, torch.mm: _matmul, torch.bmm: _matmul, torch.baddbmm: _baddbmm, torch.addmm: _addmm,
    torch.exp: ops.exp, torch.log: ops.log, torch.sqrt: ops.sqrt, torch.rsqrt: ops.rsqrt,
    torch.reciprocal: ops.reciprocal, torch.sin: ops.sin, torch.cos: ops.cos, torch.tanh: ops.tanh,
    torch.erf: ops.erf, torch.abs: ops.abs, torch.sigmoid: ops.sigmoid, torch.relu: ops.relu,
    torch.floor: ops.floor, torch.ceil: ops.ceil,
    torch.clamp: _clamp, torch.clip: _clamp, torch.where: _where, torch.softmax: _softmax,
    torch.log_softmax: _log_softmax, torch.layer_norm: _layer_norm,
    torch.sum: _reduce(reductions.sum), torch.mean: _reduce(reductions.mean), torch.amax: _reduce(reductions.max),
    torch.amin: _reduce(reductions.min), torch.var: _var,
    torch.cat: _cat, torch.concat: _cat, torch.stack: _stack, torch.transpose: _transpose, torch.t: _t,
    torch.permute: _permute, torch.reshape: _reshape, torch.flatten: _flatten, torch.unsqueeze: _unsqueeze,
    torch.squeeze: _squeeze, torch.split: _split, torch.chunk: _chunk, torch.masked_fill: _masked_fill,
    F.linear: _linear, F.relu: _relu, F.gelu: _gelu, F.silu: _silu, F.sigmoid: ops.sigmoid, F.tanh: ops.tanh,
    F.leaky_relu: _leaky_relu, F.hardtanh: _hardtanh, F.softplus: _softplus,
    F.softmax: _softmax, F.log_softmax: _log_softmax, F.layer_norm: _layer_norm, F.embedding: _embedding,
    F.dropout: _dropout, F.scaled_dot_product_attention: _sdpa,
    F.conv2d: _conv2d, torch.conv2d: _conv2d, F.max_pool2d: _max_pool2d, F.avg_pool2d: _avg_pool2d,
    F.adaptive_avg_pool2d: lambda x, output_size: conv.adaptive_avg_pool2d(x, output_size), F.batch_norm: _batch_norm,
}  # fmt: skip

#: Tensor methods (FX call_method targets) -> handler(self, *args).
METHODS = {
    "add": _add, "sub": _sub, "mul": operator.mul, "div": operator.truediv, "neg": operator.neg,
    "pow": ops.pow, "matmul": _matmul, "exp": ops.exp, "log": ops.log, "sqrt": ops.sqrt, "rsqrt": ops.rsqrt,
    "tanh": ops.tanh, "sigmoid": ops.sigmoid, "relu": ops.relu, "abs": ops.abs, "reciprocal": ops.reciprocal,
    "softmax": _softmax, "log_softmax": _log_softmax, "sum": _reduce(reductions.sum),
    "mean": _reduce(reductions.mean), "amax": _reduce(reductions.max), "var": _var,
    "view": _reshape, "reshape": _reshape, "permute": _permute, "transpose": _transpose, "t": _t,
    "flatten": _flatten, "unsqueeze": _unsqueeze, "squeeze": _squeeze, "expand": _expand, "split": _split,
    "chunk": _chunk, "contiguous": _contiguous, "size": _size, "to": _to, "type_as": _type_as,
    "float": _cast_to(float32), "half": _cast_to(float16), "bfloat16": _cast_to(bfloat16), "int": _cast_to(int32),
    "masked_fill": _masked_fill, "clamp": _clamp, "clip": _clamp,
    "__getitem__": _getitem,
}  # fmt: skip


from . import ops_more  # noqa: E402  (the rest of the table: creation, index arithmetic, MoE pieces, in place)

FUNCTIONS.update(ops_more.FUNCTIONS)
FUNCTIONS.update(ops_more.present({(F, "rms_norm"): _rms_norm, (torch, "rms_norm"): _rms_norm}))
for _op, _f in ((operator.iadd, _add), (operator.imul, operator.mul), (operator.isub, _sub), (operator.itruediv, operator.truediv),
                (operator.ifloordiv, operator.floordiv), (operator.iand, operator.and_), (operator.ior, operator.or_),
                (operator.imatmul, _matmul)):  # fmt: skip
    FUNCTIONS[_op] = ops_more.in_place_operator(_f)
FUNCTIONS[operator.getitem] = ops_more.getitem
METHODS.update(ops_more.METHODS)
METHODS["__getitem__"] = ops_more.getitem
for _name in ("add", "sub", "mul", "div", "masked_fill", "clamp", "clip", "exp", "sigmoid", "relu", "neg"):
    METHODS[_name + "_"] = ops_more._in_place(METHODS[_name])
METHODS["zero_"] = ops_more._in_place(lambda x: ops_more._full_like(x, 0))
METHODS["fill_"] = ops_more._in_place(lambda x, v: ops_more._full_like(x, v) if not isinstance(v, Tensor) else shape_ops.expand(v, list(x.shape)))


# --- modules ---------------------------------------------------------------------------------


def _attention_heads(query, key, value, e, h, wq, wk, wv, bq, bk, bv, wo, bo, key_padding_mask=None, need_weights=True,
                     attn_mask=None, average_attn_weights=True, is_causal=False, batch_first=False):  # fmt: skip
    """torch's multi-head attention (nn.MultiheadAttention, F.multi_head_attention_forward)
    from its projection weights: inputs [L, N, E] (or [N, L, E] with batch_first)."""
    d = e // h
    if not batch_first:  # [L, N, E] -> [N, L, E]
        query, key, value = (_transpose(t, 0, 1) for t in (query, key, value))

    def heads(x, w, b):
        y = _linear(x, w, b)
        n, length = y.shape[0], y.shape[1]
        return shape_ops.permute(shape_ops.reshape(y, [n, length, h, d]), [0, 2, 1, 3])

    q, k, v = heads(query, wq, bq), heads(key, wk, bk), heads(value, wv, bv)
    mask = attn_mask
    if mask is not None and mask.dtype == bool_:
        mask = ops.logical_not(mask)  # torch's MHA masks out where True; sdpa keeps where True
    if key_padding_mask is not None:  # [N, S]: True (or -inf) masks a key out
        n, s = key_padding_mask.shape
        pad = shape_ops.reshape(key_padding_mask, [n, 1, 1, s])
        pad = ops.logical_not(pad) if pad.dtype == bool_ else pad
        if mask is None:
            mask = pad
        elif mask.dtype == bool_ and pad.dtype == bool_:
            mask = mask & pad
        else:
            as_add = lambda m: ops.where(m, 0.0, float("-inf")) if m.dtype == bool_ else m  # noqa: E731
            mask = as_add(mask) + as_add(pad)
    o = pnn.scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal and mask is None)
    n, length = o.shape[0], o.shape[2]
    o = shape_ops.reshape(shape_ops.permute(o, [0, 2, 1, 3]), [n, length, e])
    o = _linear(o, wo, bo)
    if not batch_first:
        o = _transpose(o, 0, 1)
    weights = None
    if need_weights:
        s = ops.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(d))
        if mask is not None:
            s = ops.where(mask, s, float("-inf")) if mask.dtype == bool_ else s + mask
        weights = pnn.softmax(s, axis=-1)
        if average_attn_weights:
            weights = reductions.mean(weights, axis=1)
    return o, weights


def _split3(w, e):
    return shape_ops.split(w, [e, 2 * e], axis=0) if w is not None else (None, None, None)


def _mha(m: nn.MultiheadAttention, params, query, key, value, key_padding_mask=None, need_weights=True,
         attn_mask=None, average_attn_weights=True, is_causal=False):  # fmt: skip
    e = m.embed_dim
    if m._qkv_same_embed_dim:
        wq, wk, wv = _split3(params(m.in_proj_weight), e)
    else:
        wq, wk, wv = params(m.q_proj_weight), params(m.k_proj_weight), params(m.v_proj_weight)
    bq, bk, bv = _split3(_opt(params, m.in_proj_bias), e)
    return _attention_heads(query, key, value, e, m.num_heads, wq, wk, wv, bq, bk, bv, params(m.out_proj.weight),
                            _opt(params, m.out_proj.bias), key_padding_mask, need_weights, attn_mask,
                            average_attn_weights, is_causal, m.batch_first)  # fmt: skip


def _mha_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                 add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True, key_padding_mask=None,
                 need_weights=True, attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                 is_causal=False):  # fmt: skip
    """F.multi_head_attention_forward (what nn.MultiheadAttention calls), inputs [L, N, E]."""
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None or static_v is not None:
        raise TypeError("multi_head_attention_forward with bias_k/bias_v, add_zero_attn or static keys")
    if training and dropout_p > 0:
        raise TypeError("multi_head_attention_forward with dropout in training mode (call model.eval())")
    e = embed_dim_to_check
    if use_separate_proj_weight:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        wq, wk, wv = _split3(in_proj_weight, e)
    bq, bk, bv = _split3(in_proj_bias, e)
    return _attention_heads(query, key, value, e, num_heads, wq, wk, wv, bq, bk, bv, out_proj_weight, out_proj_bias,
                            key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal)  # fmt: skip


FUNCTIONS[F.multi_head_attention_forward] = _mha_forward


def _mha_unsupported(m: nn.MultiheadAttention):
    if m.bias_k is not None or m.add_zero_attn:
        return "MultiheadAttention with add_bias_kv or add_zero_attn"
    if m.training and m.dropout > 0:
        return "MultiheadAttention with dropout in training mode (call model.eval())"
    return None


def _opt(params, t):
    return None if t is None else params(t)


#: nn.Module types -> handler(module, params, *args, **kwargs).
MODULES = {
    nn.Linear: lambda m, P, x: _linear(x, P(m.weight), _opt(P, m.bias)),
    nn.Embedding: lambda m, P, ids: _embedding(ids, P(m.weight), max_norm=m.max_norm),
    nn.LayerNorm: lambda m, P, x: pnn.layer_norm(x, list(m.normalized_shape), _opt(P, m.weight), _opt(P, m.bias), m.eps),
    nn.ReLU: lambda m, P, x: ops.relu(x),
    nn.GELU: lambda m, P, x: ops.gelu(x, approximate=m.approximate),
    nn.SiLU: lambda m, P, x: ops.silu(x),
    nn.Sigmoid: lambda m, P, x: ops.sigmoid(x),
    nn.Tanh: lambda m, P, x: ops.tanh(x),
    nn.LeakyReLU: lambda m, P, x: _leaky_relu(x, m.negative_slope),
    nn.Hardtanh: lambda m, P, x: ops.clip(x, m.min_val, m.max_val),
    nn.Softplus: lambda m, P, x: _softplus(x, m.beta, m.threshold),
    nn.Softmax: lambda m, P, x: _softmax(x, m.dim),
    nn.LogSoftmax: lambda m, P, x: _log_softmax(x, m.dim),
    nn.Dropout: lambda m, P, x: x,
    nn.Identity: lambda m, P, x, *a, **k: x,
    nn.Flatten: lambda m, P, x: shape_ops.flatten(x, m.start_dim, m.end_dim),
    nn.MultiheadAttention: _mha,
    nn.Conv2d: lambda m, P, x: _conv2d(x, P(m.weight), _opt(P, m.bias), m.stride, m.padding, m.dilation, m.groups),
    nn.MaxPool2d: lambda m, P, x: _max_pool2d(x, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices),
    nn.AvgPool2d: lambda m, P, x: _avg_pool2d(x, m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override),
    nn.AdaptiveAvgPool2d: lambda m, P, x: conv.adaptive_avg_pool2d(x, m.output_size),
    nn.BatchNorm2d: lambda m, P, x: conv.batch_norm(x, P(m.running_mean), P(m.running_var), _opt(P, m.weight), _opt(P, m.bias), m.eps),
}  # fmt: skip
if hasattr(nn, "RMSNorm"):
    MODULES[nn.RMSNorm] = lambda m, P, x: _rms_norm(x, list(m.normalized_shape), _opt(P, m.weight), m.eps)


def function(target):
    """The handler of a torch function, Python operator or operator registered with
    torch.library (by its name), or None."""
    f = FUNCTIONS.get(target) if not isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) else None
    return f if f is not None else ops_more.CUSTOM_OPS.get(str(target))


def module_type(m):
    """The class of m the table maps: its own, or the nearest base class that is (ReLU6
    is a Hardtanh); None when none is."""
    return next((c for c in type(m).__mro__ if c in MODULES), None)


def module_unsupported(m) -> "str | None":
    """Why this module instance cannot run on PyPTO (None: it can)."""
    if module_type(m) is None:
        return f"no PyPTO mapping for {type(m).__module__}.{type(m).__qualname__}"
    if isinstance(m, nn.Dropout) and m.training and m.p > 0:
        return "Dropout in training mode (call model.eval() for inference)"
    if isinstance(m, nn.Embedding) and m.max_norm is not None:
        return "Embedding with max_norm (it renormalises the weights in place)"
    if isinstance(m, nn.MultiheadAttention):
        return _mha_unsupported(m)
    if isinstance(m, nn.Conv2d) and (m.padding_mode != "zeros" or isinstance(m.padding, str) and m.padding == "same" and any(s != 1 for s in m.stride)):
        return f"Conv2d with padding_mode={m.padding_mode!r}" if m.padding_mode != "zeros" else "Conv2d with padding='same' and a stride"
    if isinstance(m, nn.BatchNorm2d) and (m.training or m.running_mean is None):
        return "BatchNorm2d in training mode or without running statistics (call model.eval())"
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)) and (getattr(m, "return_indices", False) or getattr(m, "divisor_override", None)):
        return f"{type(m).__name__} with return_indices or divisor_override"
    return None


def function_name(target) -> str:
    """A torch function's readable name: torch.nn.functional.gelu, operator.add, and
    torch.ops.mylib.fft_norm.default for an operator registered with torch.library."""
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return f"torch.ops.{target}"
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    for sub in ("fft", "linalg", "special"):  # torch._C._fft.fft_rfft is torch.fft.rfft
        if mod == f"torch._C._{sub}" and name.startswith(sub + "_"):
            mod, name = f"torch.{sub}", name[len(sub) + 1 :]
    if mod.startswith("torch._C"):
        mod = "torch"
    if name.startswith("_VariableFunctionsClass."):  # torch.cumprod and the like
        name = name.rsplit(".", 1)[-1]
    return f"{mod}.{name}" if mod else name
