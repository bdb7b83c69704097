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

from .dtypes import DType, as_dtype, bool_, float32, int32
from .symbolic import Dim
from .tensor import Tensor, _as_shape, apply, from_numpy

__all__ = [
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "empty", "constant", "arange", "eye",
    "manual_seed", "randn", "rand", "randint",
]  # fmt: skip


def _shape_args(shape) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, Tensor, Dim)):
        shape = shape[0]
    return _as_shape(shape)


def _host(arr: np.ndarray, dt: DType) -> Tensor:
    with np.errstate(all="ignore"):
        return from_numpy(np.asarray(arr).astype(dt.numpy))


def _default_dtype(value) -> DType:
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, numbers.Integral):
        return int32
    return float32


def _symbolic_full(shape, value, dt: DType) -> Tensor:
    """A graph op filling a tensor of symbolic shape."""
    return apply("full", [], {"shape": list(shape), "value": float(value), "dtype": dt.name})


def zeros(*shape, dtype=float32) -> Tensor:
    """A tensor of zeros: ``zeros([2, 3])`` or ``zeros(2, 3)``."""
    shape = _shape_args(shape)
    if any(isinstance(d, Dim) for d in shape):
        return _symbolic_full(shape, 0, as_dtype(dtype))
    return Tensor(shape, dtype=dtype)


empty = zeros  # PyPTO has no uninitialised memory: empty is zeros.


def ones(*shape, dtype=float32) -> Tensor:
    """A tensor of ones."""
    return full(_shape_args(shape), 1, dtype=dtype)


def full(shape, fill_value, dtype=None) -> Tensor:
    """A tensor of shape filled with fill_value; dtype defaults to float32 for floats,
    int32 for ints and bool for bools."""
    dt = as_dtype(dtype) if dtype is not None else _default_dtype(fill_value)
    shape = _as_shape(shape)
    if any(isinstance(d, Dim) for d in shape):
        return _symbolic_full(shape, fill_value, dt)
    return _host(np.full(shape, fill_value, dtype=np.float64 if dt != bool_ else np.bool_), dt)


def _like(x, dtype):
    return tuple(x.shape), as_dtype(dtype) if dtype is not None else as_dtype(x.dtype)


def zeros_like(x, dtype=None) -> Tensor:
    """Zeros of x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype)
    return zeros(shape, dtype=dt)


def ones_like(x, dtype=None) -> Tensor:
    """Ones of x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype)
    return ones(shape, dtype=dt)


def full_like(x, fill_value, dtype=None) -> Tensor:
    """fill_value in x's shape and (unless given) dtype."""
    shape, dt = _like(x, dtype)
    return full(shape, fill_value, dtype=dt)


def constant(value, dtype=None) -> Tensor:
    """A constant tensor from a scalar or nested lists: ``p.constant(1024)`` is a 0-d
    int32 tensor (usable as a dimension, since it converts to an int)."""
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            dtype = float32
        elif arr.dtype.kind in "iu":
            dtype = int32
        else:
            dtype = as_dtype(arr.dtype)
    return _host(np.asarray(value), as_dtype(dtype))


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """Evenly spaced values in [start, stop) (numpy's arange); int32 for integer
    arguments, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = int32 if all(isinstance(v, numbers.Integral) for v in (start, stop, step)) else float32
    return _host(np.arange(start, stop, step), as_dtype(dtype))


def eye(n, m=None, k=0, dtype=float32) -> Tensor:
    """An n x m matrix with ones on diagonal k."""
    return _host(np.eye(n, m, k), as_dtype(dtype))


# --- seeded random tensors -------------------------------------------------------------------

_rng_lock = threading.Lock()
_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seeds the random stream of randn, rand, randint and linear's parameters, so that
    a program draws the same values on every run."""
    global _rng
    with _rng_lock:
        _rng = np.random.default_rng(int(seed))


@contextlib.contextmanager
def generator():
    """The process's random generator, held under its lock."""
    with _rng_lock:
        yield _rng


def randn(*shape, dtype=float32) -> Tensor:
    """Standard normal samples (drawn in float64, rounded to dtype)."""
    with generator() as g:
        arr = g.standard_normal(_shape_args(shape))
    return _host(arr.astype(np.float32), as_dtype(dtype))


def rand(*shape, dtype=float32) -> Tensor:
    """Uniform samples in [0, 1) (rounded to dtype, which may round up to 1 in float16)."""
    with generator() as g:
        arr = g.random(_shape_args(shape))
    return _host(arr.astype(np.float32), as_dtype(dtype))


def randint(low, high=None, size=(), dtype=int32) -> Tensor:
    """Uniform integers in [low, high) (numpy's integers); randint(high) draws from [0, high)."""
    if high is None:
        low, high = 0, low
    with generator() as g:
        arr = g.integers(low, high, size=_as_shape(size))
    return _host(arr, as_dtype(dtype))
