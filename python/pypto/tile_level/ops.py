"""Tile ops: the tensor ops under the Tile level's names, each taking an optional
``tile_config`` (a p.TileConfig or a shape list) that fixes the tile its kernel runs.

They take tiles from ``p.tile`` or any tensors, and return p.Tensors, so tile code and
tensor code mix freely. ``p.tile_matmul(a, b, tile_config=[64, 128, 32])`` is
``p.matmul(a, b)`` whose cube kernel uses 64 x 128 output tiles with K in blocks of 32.
"""

from __future__ import annotations

from ..tensor_level import nn
from ..tensor_level import ops
from ..tensor_level import reductions
from ..tensor_level import shape_ops
from ..tensor_level.tensor import tiled_ops

# tile name -> (the tensor-level function, the Go ops it applies that take the tile)
_FAMILIES = {
    # matrix products
    "tile_matmul": (ops.matmul, ("matmul", "batch_matmul")),
    # elementwise, binary
    **{f"tile_{n}": (getattr(ops, n), (n,)) for n in (
        "add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "floor_divide",
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "logical_and", "logical_or", "logical_xor",
    )},
    # elementwise, unary
    **{f"tile_{n}": (getattr(ops, n), (n,)) for n in (
        "neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "erf",
        "floor", "ceil", "round", "relu", "sigmoid", "silu", "gelu", "logical_not", "isnan", "isfinite",
    )},
    "tile_clip": (ops.clip, ("clip", "maximum", "minimum")),
    "tile_where": (ops.where, ("where",)),
    # casts
    "tile_cast": (ops.cast, ("cast",)),
    # reductions
    **{f"tile_{n}": (getattr(reductions, n), (n,)) for n in ("sum", "prod", "max", "min", "mean", "var", "std")},
    "tile_argmax": (reductions.argmax, ("argmax",)),
    "tile_argmin": (reductions.argmin, ("argmin",)),
    # row kernels
    "tile_softmax": (nn.softmax, ("softmax",)),
    "tile_log_softmax": (nn.log_softmax, ("log_softmax",)),
    "tile_layer_norm": (nn.layer_norm, ("layer_norm",)),
    "tile_rms_norm": (nn.rms_norm, ("rms_norm",)),
    "tile_cumsum": (nn.cumsum, ("cumsum",)),
    # moving data
    "tile_transpose": (shape_ops.transpose, ("transpose",)),
}  # fmt: skip


def _tile_op(name, fn, op_names):
    def f(*args, tile_config=None, **kwargs):
        with tiled_ops(op_names, tile_config, f"p.{name}"):
            return fn(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"p.{fn.__name__} at the Tile level: tile_config (a p.TileConfig or a shape list) fixes the tile of its "
        f"kernel, checked against the chip.\n\n{fn.__doc__ or ''}"
    )
    return f


__all__ = sorted(_FAMILIES)
for _name, (_fn, _ops) in _FAMILIES.items():
    globals()[_name] = _tile_op(_name, _fn, _ops)
del _name, _fn, _ops
