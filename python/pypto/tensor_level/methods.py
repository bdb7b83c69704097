"""Tensor methods that mirror the module functions (numpy / torch names), attached to
p.Tensor here so that each function is written once."""

from __future__ import annotations

import numpy as np

from . import nn
from . import ops
from . import reductions
from . import shape_ops
from . import update
from .tensor import Tensor


def _method(fn, name=None):
    def m(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    m.__name__ = m.__qualname__ = name or fn.__name__
    m.__doc__ = fn.__doc__
    return m


_METHODS = {
    ops: ["exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "erf", "floor", "ceil", "round",
          "relu", "sigmoid", "silu", "gelu", "clip", "clamp", "abs", "neg", "isnan", "isfinite", "logical_not",
          "astype", "cast", "maximum", "minimum", "pow"],
    reductions: ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin"],
    shape_ops: ["reshape", "transpose", "permute", "broadcast_to", "expand", "squeeze", "unsqueeze", "flatten",
                "take_along_axis", "gather", "index_select", "take"],
    nn: ["softmax", "log_softmax", "topk", "sort", "argsort", "cumsum"],
}  # fmt: skip

for _mod, _names in _METHODS.items():
    for _name in _names:
        setattr(Tensor, _name, _method(getattr(_mod, _name), _name))


def _matmul(self, other, transpose_b: bool = False, transpose_a: bool = False):
    return ops.matmul(self, other, transpose_b=transpose_b, transpose_a=transpose_a)


def _matmul_op(self, o):
    if not isinstance(o, (Tensor, np.ndarray)):
        return NotImplemented
    return ops.matmul(self, o)


def _rmatmul_op(self, o):
    if not isinstance(o, (Tensor, np.ndarray)):
        return NotImplemented
    return ops.matmul(o, self)


# Operators whose ops live above p.Tensor (tensor.py imports none of the op modules).
Tensor.__matmul__, Tensor.__rmatmul__ = _matmul_op, _rmatmul_op
Tensor.__getitem__ = update.getitem
Tensor.__setitem__ = update.setitem


Tensor.matmul = _matmul
Tensor.view = Tensor.reshape
Tensor.T = property(lambda self: shape_ops.transpose(self), doc="The tensor with its axes reversed.")
Tensor.mT = property(lambda self: shape_ops.transpose(self, -2, -1) if self.ndim > 2 else shape_ops.transpose(self),
                     doc="The tensor with its last two axes swapped.")  # fmt: skip
Tensor.numel = lambda self: self.size
Tensor.dim = lambda self: self.ndim
