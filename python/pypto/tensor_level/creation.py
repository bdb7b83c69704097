"""Creation ops: zeros, ones, full, the *_like forms, constant, arange, eye, and seeded
random tensors (p.manual_seed, randn, rand, randint). They produce concrete tensors
directly on the host (there is nothing to compute lazily), which enter compiled
graphs as bound inputs. With a symbolic shape (``p.zeros([batch, 4])``, ``zeros_like``
of a traced tensor) zeros, ones and full give a ``full`` op of the graph instead,
sized when the compiled program runs."""

from __future__ import annotations

import contextlib
import numbers
import threading

import numpy as np

from .._core import validate as check
from .._core.dtypes import DType, bool_, float32, int64
from .._core.errors import PyptoValueError
from .._core.location import user_location
from .._core.symbolic import Dim
from .tensor import Tensor, apply, from_numpy, host_array

__all__ = [
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "empty", "constant", "arange", "eye",
    "manual_seed", "randn", "rand", "randint",
]  # fmt: skip


def _shape_args(shape, op: str, symbolic: bool = True) -> tuple:
    """The shape of f(2, 3) or f([2, 3])."""
    if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, np.integer, Tensor, Dim)):
        shape = shape[0]
    return check.shape(shape, "shape", op, symbolic=symbolic)


def _shape_and_dtype(args, dtype, op: str):
    """The shape and dtype of f(2, 3, dtype=d), f([2, 3], dtype=d) and f([2, 3], d)
    (the form the block level's p.zeros also takes)."""
    if len(args) == 2 and isinstance(args[0], (list, tuple)) and not isinstance(args[1], (numbers.Integral, np.integer, Tensor, Dim)):
        if dtype is not None:
            raise PyptoValueError(f"{op}: dtype is given twice", location=user_location())
        args, dtype = args[:1], args[1]
    return _shape_args(args, op), check.dtype(dtype, "dtype", op, optional=True) or float32


def _host(arr: np.ndarray, dt: DType) -> Tensor:
    with np.errstate(all="ignore"):
        return from_numpy(np.asarray(arr).astype(dt.numpy))


def _default_dtype(value) -> DType:
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, numbers.Integral):
        return int64  # numpy's and torch's default integer
    return float32


def _symbolic_full(shape, value, dt: DType) -> Tensor:
    """A graph op filling a tensor of symbolic shape."""
    return apply("full", [], {"shape": list(shape), "value": float(value), "dtype": dt.name})


def zeros(*shape, dtype=None) -> Tensor:
    """A tensor of zeros: ``zeros([2, 3])``, ``zeros(2, 3)`` or ``zeros([2, 3], p.float16)``;
    dtype defaults to float32."""
    shape, dt = _shape_and_dtype(shape, dtype, "zeros")
    if any(isinstance(d, Dim) for d in shape):
        return _symbolic_full(shape, 0, dt)
    return Tensor(shape, dtype=dt)


empty = zeros  # PyPTO has no uninitialised memory: empty is zeros.


def ones(*shape, dtype=None) -> Tensor:
    """A tensor of ones (the forms of zeros)."""
    shape, dt = _shape_and_dtype(shape, dtype, "ones")
    return full(shape, 1, dtype=dt)


def full(shape, fill_value, dtype=None) -> Tensor:
    """A tensor of shape filled with fill_value; dtype defaults to float32 for floats,
    int64 for ints (numpy's and torch's default integer) and bool for bools."""
    if not isinstance(fill_value, (numbers.Real, np.integer, np.floating, np.bool_)):
        raise check.fail("full", "fill_value", fill_value, "a number or a bool")
    dt = check.dtype(dtype, "dtype", "full", optional=True) or _default_dtype(fill_value)
    shape = check.shape(shape, "shape", "full")
    if any(isinstance(d, Dim) for d in shape):
        return _symbolic_full(shape, fill_value, dt)
    return _host(np.full(shape, fill_value, dtype=np.float64 if dt != bool_ else np.bool_), dt)


def _like(x, dtype, op):
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise check.fail(op, "x", x, "a p.Tensor or a numpy array")
    return check.shape(tuple(x.shape), "x.shape", op), check.dtype(dtype if dtype is not None else x.dtype, "dtype", op)


def zeros_like(x, dtype=None) -> Tensor:
    """Zeros of x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype, "zeros_like")
    return zeros(shape, dtype=dt)


def ones_like(x, dtype=None) -> Tensor:
    """Ones of x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype, "ones_like")
    return ones(shape, dtype=dt)


def full_like(x, fill_value, dtype=None) -> Tensor:
    """fill_value in x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype, "full_like")
    return full(shape, fill_value, dtype=dt)


def constant(value, dtype=None) -> Tensor:
    """A constant tensor from a scalar or nested lists: ``p.constant(1024)`` is a 0-d
    int64 tensor (usable as a dimension, since it converts to an int). Python ints take
    int64, numpy's and torch's default integer; Python floats float32; numpy arrays keep
    their dtype."""
    if isinstance(value, Tensor):
        value = value.numpy()
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise check.fail("constant", "value", value, "a number, a bool or nested lists of them")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise check.fail("constant", "value", value, f"a number, a bool or nested lists of them ({e})") from None
    if arr.dtype.kind not in "biuf":
        raise check.fail("constant", "value", value, "a number, a bool or nested lists of them")
    dt = check.dtype(dtype, "dtype", "constant", optional=True)
    if dt is None:
        dt = float32 if arr.dtype.kind == "f" and not check.dtype_supported(arr.dtype) else None
    if dt is None:
        arr = host_array(arr, "constant", "value")
        dt = check.dtype(arr.dtype, "value", "constant")
    return _host(arr, dt)


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """Evenly spaced values in [start, stop) (numpy's arange); int64 for integer
    arguments (numpy's and torch's default integer), float32 otherwise, or dtype.
    ``start`` and ``stop`` may be symbolic dims (``p.arange(seq_len)``): a graph op,
    sized when the compiled program runs (``step`` an int then)."""
    if stop is None:
        start, stop = 0, start
    if isinstance(start, Dim) or isinstance(stop, Dim):
        return _symbolic_arange(start, stop, step, dtype)
    start = _real(start, "start", "arange")
    stop = _real(stop, "stop", "arange")
    step = _real(step, "step", "arange")
    if step == 0:
        raise check.fail("arange", "step", step, "a nonzero number", PyptoValueError)
    dt = check.dtype(dtype, "dtype", "arange", optional=True)
    if dt is None:
        dt = int64 if all(isinstance(v, int) for v in (start, stop, step)) else float32
    return _host(np.arange(start, stop, step), dt)


def _symbolic_arange(start, stop, step, dtype) -> Tensor:
    """arange whose stop is a dim: an iota of ceil((stop - start) / step) elements,
    scaled and shifted (a run whose stop is below its start is a ShapeError there). A
    symbolic start would be a value known only when the program runs: refused."""
    for v, name in ((start, "start"), (stop, "stop")):
        if not isinstance(v, Dim) and check.int_or_none(v) is None:
            raise check.fail("arange", name, v, "an int or a symbolic dim (the other bound is symbolic)")
    step = check.integer(step, "step", "arange")
    if step == 0:
        raise check.fail("arange", "step", step, "a nonzero number", PyptoValueError)
    n = (stop - start + step - 1) // step if step > 0 else (start - stop - step - 1) // -step
    dt = check.dtype(dtype, "dtype", "arange", optional=True) or int64
    out = apply("iota", [], {"shape": [n], "axis": 0})
    if step != 1:
        out = out * step
    if isinstance(start, Dim):
        start._no_value("p.arange with a symbolic start (its values)")
    if start != 0:
        out = out + int(start)
    return out if out.dtype == dt else apply("cast", [out], {"dtype": dt.name})


def _real(v, name, op):
    """An int stays an int, other numbers become floats."""
    if isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return check.number(v, name, op)


def eye(n, m=None, k=0, dtype=float32) -> Tensor:
    """An n x m matrix with ones on diagonal k."""
    n = check.integer(n, "n", "eye", lo=0)
    m = check.integer(m, "m", "eye", lo=0, optional=True)
    k = check.integer(k, "k", "eye")
    return _host(np.eye(n, m, k), check.dtype(dtype, "dtype", "eye", optional=True) or float32)


# --- seeded random tensors -------------------------------------------------------------------

_rng_lock = threading.Lock()
_rng = None  # made on first use: numpy.random takes a tenth of `import pypto`


def manual_seed(seed: int) -> None:
    """Seeds the random stream of randn, rand, randint and linear's parameters, so that
    a program draws the same values on every run."""
    global _rng
    with _rng_lock:
        _rng = np.random.default_rng(check.integer(seed, "seed", "manual_seed", lo=0))


@contextlib.contextmanager
def generator():
    """The process's random generator, held under its lock."""
    global _rng
    with _rng_lock:
        if _rng is None:
            _rng = np.random.default_rng()
        yield _rng


def randn(*shape, dtype=float32) -> Tensor:
    """Standard normal samples (drawn in float64, rounded to dtype)."""
    shape, dt = _shape_args(shape, "randn", False), check.dtype(dtype, "dtype", "randn", optional=True) or float32
    with generator() as g:
        arr = g.standard_normal(shape)
    return _host(arr.astype(np.float32), dt)


def rand(*shape, dtype=float32) -> Tensor:
    """Uniform samples in [0, 1) (rounded to dtype, which may round up to 1 in float16)."""
    shape, dt = _shape_args(shape, "rand", False), check.dtype(dtype, "dtype", "rand", optional=True) or float32
    with generator() as g:
        arr = g.random(shape)
    return _host(arr.astype(np.float32), dt)


def randint(low, high=None, size=(), dtype=int64) -> Tensor:
    """Uniform integers in [low, high) (numpy's integers); randint(high) draws from [0, high).
    int64 by default, as numpy and torch give."""
    if high is None:
        low, high = 0, low
    low = check.integer(low, "low", "randint")
    high = check.integer(high, "high", "randint")
    if high <= low:
        raise check.fail("randint", "high", high, f"an int > low ({low})", PyptoValueError)
    size = check.shape(size, "size", "randint", symbolic=False)
    dt = check.dtype(dtype, "dtype", "randint", optional=True) or int64
    with generator() as g:
        arr = g.integers(low, high, size=size)
    return _host(arr, dt)
