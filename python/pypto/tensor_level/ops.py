"""Elementwise ops, casts and matrix products. Each builds a pending result whose
shape and dtype are inferred (and checked) immediately, so a mismatch raises at the
line that wrote it. Operands are p.Tensors, numpy arrays or Python scalars (which do
not widen a tensor's dtype: ``x * 2`` keeps x's dtype)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoValueError, ShapeError
from .._core.location import user_location
from .creation import generator
from .tensor import Tensor, apply, as_tensor, from_numpy, tiled_ops

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "mod",
    "remainder", "pow", "power", "maximum", "minimum",
    "neg", "negative", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "erf",
    "floor", "ceil", "round", "relu", "sigmoid", "silu", "gelu", "clip", "clamp",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isfinite", "where",
    "cast", "astype", "matmul", "linear",
    "erfc", "exp2", "expm1", "log1p", "log2", "log10", "trunc", "fix", "sign", "isinf", "isposinf", "isneginf",
    "logaddexp", "hypot", "atan2", "arctan2",
]  # fmt: skip


def _bin(name, doc):
    def f(a, b) -> Tensor:
        return apply(name, [a, b], names=("a", "b"))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + ", elementwise with numpy broadcasting."
    return f


def _un(name, doc):
    def f(x) -> Tensor:
        return apply(name, [x], names=("x",))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + ", elementwise."
    return f


add = _bin("add", "a + b")
sub = subtract = _bin("sub", "a - b")
mul = multiply = _bin("mul", "a * b")
div = divide = true_divide = _bin("div", "a / b (true division; integer operands give float32)")
floor_divide = _bin("floor_divide", "a // b, rounded toward -inf (integer division by 0 gives 0)")
mod = remainder = _bin("mod", "a % b with the sign of b (integer modulo 0 gives 0)")
pow = power = _bin("pow", "a ** b")
maximum = _bin("maximum", "the larger of a and b (NaN if either is NaN)")
minimum = _bin("minimum", "the smaller of a and b (NaN if either is NaN)")
equal = _bin("equal", "a == b as bool")
not_equal = _bin("not_equal", "a != b as bool")
less = _bin("less", "a < b as bool")
less_equal = _bin("less_equal", "a <= b as bool")
greater = _bin("greater", "a > b as bool")
greater_equal = _bin("greater_equal", "a >= b as bool")
logical_and = _bin("logical_and", "a and b as bool (nonzero is true)")
logical_or = _bin("logical_or", "a or b as bool (nonzero is true)")
logical_xor = _bin("logical_xor", "a xor b as bool (nonzero is true)")

neg = negative = _un("neg", "-x")
abs = _un("abs", "|x|")
exp = _un("exp", "e**x")
log = _un("log", "the natural logarithm")
sqrt = _un("sqrt", "the square root")
rsqrt = _un("rsqrt", "1 / sqrt(x)")
reciprocal = _un("reciprocal", "1 / x (integers give floats)")
sin = _un("sin", "the sine")
cos = _un("cos", "the cosine")
tanh = _un("tanh", "the hyperbolic tangent")
erf = _un("erf", "the error function")
floor = _un("floor", "the largest integer <= x")
ceil = _un("ceil", "the smallest integer >= x")
relu = _un("relu", "max(x, 0)")
sigmoid = _un("sigmoid", "1 / (1 + exp(-x))")
silu = _un("silu", "x * sigmoid(x)")
logical_not = _un("logical_not", "not x as bool")
isnan = _un("isnan", "x is NaN")
isfinite = _un("isfinite", "x is neither infinite nor NaN")
erfc = _un("erfc", "the complementary error function 1 - erf(x), accurate for large x")
exp2 = _un("exp2", "2**x")
expm1 = _un("expm1", "e**x - 1, accurate near 0")
log1p = _un("log1p", "log(1 + x), accurate near 0")
log2 = _un("log2", "the base-2 logarithm")
log10 = _un("log10", "the base-10 logarithm")
trunc = fix = _un("trunc", "x rounded toward zero")
sign = _un("sign", "-1, 0 or 1 by the sign of x (NaN for NaN), in x's dtype")
isinf = _un("isinf", "x is +inf or -inf")
isposinf = _un("isposinf", "x is +inf")
isneginf = _un("isneginf", "x is -inf")
logaddexp = _bin("logaddexp", "log(exp(a) + exp(b)), without overflow")
hypot = _bin("hypot", "sqrt(a**2 + b**2), without overflow")
atan2 = arctan2 = _bin("atan2", "the angle of the point (b, a) in [-pi, pi] (numpy's arctan2(a, b))")


def round(x, decimals: int = 0) -> Tensor:
    """x rounded to ``decimals`` places, halves to even, as numpy's round: for floats
    rint(x * 10**decimals) / 10**decimals with every step in x's dtype (negative
    decimals divide first); integers are unchanged for decimals >= 0 and otherwise
    rounded exactly to a multiple of 10**-decimals."""
    decimals = check.integer(decimals, "decimals", "round", lo=-400, hi=400)
    return apply("round", [x], {"decimals": decimals} if decimals else None, names=("x",))


def gelu(x, approximate: str = "none") -> Tensor:
    """x * Phi(x): exact (erf) with approximate="none", or the tanh form with "tanh"."""
    approximate = check.choice(approximate, "approximate", "gelu", ("none", "tanh"))
    return apply("gelu", [x], {"approximate": approximate}, names=("x",))


def clip(x, min=None, max=None) -> Tensor:
    """x limited to [min, max] (either may be None); bounds may be tensors or scalars,
    which take x's dtype. NaN propagates."""
    if min is None and max is None:
        raise PyptoValueError("clip: give min, max or both", location=user_location())
    if min is None:
        return apply("minimum", [x, max], scalar_anchor=[0], names=("x", "max"))
    if max is None:
        return apply("maximum", [x, min], scalar_anchor=[0], names=("x", "min"))
    return apply("clip", [x, min, max], scalar_anchor=[0], names=("x", "min", "max"))


clamp = clip


def where(cond, a, b) -> Tensor:
    """a where cond is true, else b; the three broadcast together. Scalars among a and b
    take the other's dtype."""
    return apply("where", [cond, a, b], scalar_anchor=[1, 2], names=("cond", "a", "b"))


def cast(x, dtype) -> Tensor:
    """x converted to dtype (rounding rules in docs/api.md)."""
    return apply("cast", [x], {"dtype": check.dtype(dtype, "dtype", "cast").name}, names=("x",))


astype = cast


def matmul(a, b, transpose_b: bool = False, transpose_a: bool = False, *, tile_config=None) -> Tensor:
    """The matrix product op(a) @ op(b) with numpy's rules: 2-d operands multiply as
    matrices; higher ranks are stacks of matrices whose leading (batch) dimensions
    broadcast; a 1-d operand is a vector (a row for a, a column for b), its axis removed
    from the result. float16/bfloat16/float32 operands accumulate in float32 on the cube
    unit and give their own dtype; int8 gives int32. ``tile_config`` (a p.TileConfig,
    shape [tm, tn, tk]) fixes the cube kernel's tile instead of the compiler's search."""
    transpose_a = check.flag(transpose_a, "transpose_a", "matmul")
    transpose_b = check.flag(transpose_b, "transpose_b", "matmul")
    if tile_config is not None:
        with tiled_ops(("matmul", "batch_matmul"), tile_config, "p.matmul"):
            return matmul(a, b, transpose_b, transpose_a)
    a = as_tensor(a, "matmul", "a")
    b = as_tensor(b, "matmul", "b")
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: operands must have at least 1 dimension, got shapes {list(a.shape)} and {list(b.shape)}",
            location=user_location(),
        )
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1:
        a = a.reshape([1, a.shape[0]] if not transpose_a else [a.shape[0], 1])
    if b1:
        b = b.reshape([b.shape[0], 1] if not transpose_b else [1, b.shape[0]])
    op = "matmul" if a.ndim == 2 and b.ndim == 2 else "batch_matmul"
    out = apply(op, [a, b], attrs)
    if a1 or b1:
        shape = list(out.shape)
        if b1:
            shape.pop(-1)
        if a1:
            shape.pop(-1 if b1 else -2)
        out = out.reshape(shape)
    return out


def linear(x, weight, bias=None, out_features=None, *, dtype=None) -> Tensor:
    """A fully connected layer, in two forms:

    - ``linear(x, weight, bias=None)``: ``x @ weight.T + bias`` for weight [out, in];
    - ``linear(x, in_features, out_features)`` (the guide's form): creates the
      parameters, weight ~ U(-1/sqrt(in), 1/sqrt(in)) and bias likewise (torch's
      initialisation, from the p.manual_seed stream), in x's dtype, and applies them.
      The sizes are ints or ``p.constant`` integers (``p.linear(x, hidden, hidden * 4)``).
    """
    in_features = _feature_count(weight)
    if in_features is not None:
        name = "bias" if out_features is None else "out_features"
        out_features = check.integer(bias if out_features is None else out_features, name, "linear", lo=0)
        if in_features < 0:
            raise check.fail("linear", "in_features", in_features, "an int >= 0", PyptoValueError)
        x = as_tensor(x, "linear", "x")
        dt = check.dtype(dtype, "dtype", "linear", optional=True) or x.dtype
        bound = 1 / math.sqrt(in_features) if in_features else 0.0
        with generator() as g:
            w = g.uniform(-bound, bound, size=(out_features, in_features))
            b = g.uniform(-bound, bound, size=(out_features,))
        w, b = from_numpy(w.astype(np.float32).astype(dt.numpy)), from_numpy(b.astype(np.float32).astype(dt.numpy))
        return apply("linear", [x, w, b])
    if dtype is not None:
        raise check.fail("linear", "dtype", dtype, "None when weight is a tensor (the parameters' dtype is theirs)", PyptoValueError)
    if out_features is not None:
        raise check.fail("linear", "out_features", out_features, "None when weight is a tensor", PyptoValueError)
    ins = [x, weight] if bias is None else [x, weight, bias]
    return apply("linear", ins, names=("x", "weight", "bias"))


def _feature_count(v):
    """v as a layer size when it is one: an int or a 0-d integer tensor (p.constant)."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (numbers.Integral, np.integer)):
        return int(v)
    if isinstance(v, Tensor) and v.ndim == 0 and not v.dtype.is_floating and v.dtype.name != "bool":
        return int(v)
    return None
