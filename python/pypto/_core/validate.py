"""The checks of the public API's arguments, one place for every op and constructor.

Each function takes the value, the argument's name and the op (``"p.sum"``), returns
the value converted to what the op uses, and otherwise raises an error naming the
argument, what was given and what is accepted, at the user's line:
``PyptoTypeError`` (also a ``TypeError``) for a value of the wrong kind,
``PyptoValueError`` (also a ``ValueError``) for one out of range. Nothing is converted
loosely: ``'no'`` is not a flag, ``2.7`` not an int, ``'12'`` not a list of axes.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .dtypes import DType, as_dtype
from .errors import DTypeError, PyptoTypeError, PyptoValueError, ShapeError
from .location import user_location
from .symbolic import Dim

__all__ = [
    "fail", "given", "int_or_none", "flag", "dynamic_dims", "integer", "number", "axis", "axes", "shape", "dtype", "dtype_supported", "choice", "MAX_NDIM",
]  # fmt: skip

#: The most axes a tensor may have (the C ABI's limit).
MAX_NDIM = 64


def given(value) -> str:
    """The value as an error shows it: its repr (shortened) and its type."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (a broken __repr__ must not hide the real error)
        text = "<unprintable>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def fail(op: str, name: str, value, accepted: str, cls=PyptoTypeError, suggestions=()):
    """The error for argument ``name`` of ``op``: ``<op>: <name> must be <accepted>,
    got <value> (<type>)``."""
    return cls(f"{op}: {name} must be {accepted}, got {given(value)}", location=user_location(), suggestions=list(suggestions))


def int_or_none(v):
    """v as an int when it is an integer that is not a bool (Python and numpy ints,
    0-d integer tensors such as ``p.constant(4)``, anything with ``__index__``), else
    None."""
    if isinstance(v, (bool, np.bool_, float, np.floating, str, bytes, Dim)):
        return None
    try:
        return operator.index(v)
    except TypeError:  # floats, bool arrays, symbolic dims (SymbolicShapeError is one)
        return None


def flag(value, name: str, op: str) -> bool:
    """A bool flag: True or False (numpy bools too); anything else is an error, since
    ``bool('no')`` is True."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise fail(op, name, value, "True or False")


def dynamic_dims(value, name: str, op: str):
    """Which input dims are dynamic: None (as the compiler decides), a flag (every dim,
    or none), or a dict naming them, {input name or position: an axis or a list of
    axes}, returned with each value a tuple of ints."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    accepted = "None, a bool, or a dict {input name or position: axis or axes}, e.g. {'input_ids': (0, 1)}"
    if not isinstance(value, dict):
        raise fail(op, name, value, accepted)
    out = {}
    for key, axes_ in value.items():
        if not isinstance(key, str) and int_or_none(key) is None:
            raise fail(op, f"{name}'s key", key, "an input's name or position")
        seq = (axes_,) if int_or_none(axes_) is not None else axes_
        if not isinstance(seq, (list, tuple)) or not seq or any(int_or_none(a) is None for a in seq):
            raise fail(op, f"{name}[{key!r}]", axes_, "an axis (int) or a non-empty list of axes")
        out[key if isinstance(key, str) else int_or_none(key)] = tuple(int_or_none(a) for a in seq)
    return out


def integer(value, name: str, op: str, *, lo=None, hi=None, optional: bool = False):
    """An int in [lo, hi] (either bound may be None); None passes when optional."""
    if value is None and optional:
        return None
    v = int_or_none(value)
    if v is None:
        raise fail(op, name, value, "an int" + (" or None" if optional else ""))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if lo is not None and hi is not None:
            want = f"an int in [{lo}, {hi}]"
        elif lo is not None:
            want = f"an int >= {lo}"
        else:
            want = f"an int <= {hi}"
        raise fail(op, name, value, want, PyptoValueError)
    return v


def number(value, name: str, op: str, *, lo=None, optional: bool = False, finite: bool = True):
    """A real number (int or float, not a bool or a string) >= lo; NaN and infinities
    are refused when finite. None passes when optional."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise fail(op, name, value, "a number" + (" or None" if optional else ""))
    v = float(value)
    if finite and not np.isfinite(v):
        raise fail(op, name, value, "a finite number", PyptoValueError)
    if lo is not None and v < lo:
        raise fail(op, name, value, f"a number >= {lo}", PyptoValueError)
    return v


def axis(value, name: str, op: str, ndim=None, *, optional: bool = False):
    """An axis: an int, in [-ndim, ndim) when ndim is given (returned as given, negative
    axes count from the end). None passes when optional."""
    if value is None and optional:
        return None
    v = int_or_none(value)
    if v is None:
        raise fail(op, name, value, "an int (an axis)" + (" or None" if optional else ""))
    if ndim is not None and not -ndim <= v < ndim:
        want = f"an axis in [{-ndim}, {ndim - 1}]" if ndim else "none (it has no axes)"
        raise PyptoValueError(
            f"{op}: {name} {v} is out of range for a {ndim}-d tensor: want {want}",
            location=user_location(),
            suggestions=["use -1 for the last axis"] if ndim else ["reshape the 0-d tensor to 1-d first"],
        )
    return v


def axes(value, name: str, op: str, ndim=None):
    """Axes: None (every axis; returned as None), an int, or a list/tuple of distinct
    ints, each in [-ndim, ndim) when ndim is given. Returns a list."""
    if value is None:
        return None
    if int_or_none(value) is not None:
        return [axis(value, name, op, ndim)]
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, range, np.ndarray)):
        raise fail(op, name, value, "an int, a tuple of ints or None")
    out = []
    for a in value:
        if int_or_none(a) is None:
            raise fail(op, name, value, "an int, a tuple of ints or None")
        out.append(axis(a, name, op, ndim))
    if ndim is not None and len({a % ndim for a in out}) != len(out):
        raise fail(op, name, value, "distinct axes", PyptoValueError)
    return out


def shape(value, name: str, op: str, *, wildcards=0, symbolic: bool = True) -> tuple:
    """A shape: an int, a p.symbol dim, or a list/tuple of them (0-d integer tensors,
    ``p.constant``, count as ints). Sizes are >= 0, except that ``wildcards`` of them
    (None: any number) may be -1 (reshape's "the rest", expand's "keep"). Returns a
    tuple of ints and Dims."""
    kinds = "ints" + (" or p.symbol dims" if symbolic else "")
    minus = {0: "", 1: ", one of them may be -1"}.get(wildcards, ", -1 keeps a size")
    want = f"a shape (a list of {kinds}{minus})"
    if isinstance(value, Dim) or int_or_none(value) is not None:
        value = (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, range, np.ndarray)):
        raise fail(op, name, value, want)
    dims = []
    for d in value:
        if isinstance(d, Dim) and symbolic:
            dims.append(d)
        elif int_or_none(d) is not None:
            dims.append(int_or_none(d))
        else:
            raise fail(op, name, value, want)
    neg = [d for d in dims if isinstance(d, int) and d < 0]
    if any(d != -1 for d in neg) or (wildcards is not None and len(neg) > wildcards):
        extra = {0: "", 1: " (and at most one -1)"}.get(wildcards, " or -1")
        raise fail(op, name, value, "a shape of sizes >= 0" + extra, ShapeError)
    if len(dims) > MAX_NDIM:
        raise fail(op, name, value, f"a shape of at most {MAX_NDIM} dimensions", ShapeError)
    return tuple(dims)


def dtype(value, name: str, op: str, *, optional: bool = False):
    """An element type: a p dtype, a numpy dtype or type, or a name ("float16"). None
    passes (returned as None) when optional."""
    if value is None:
        if optional:
            return None
        raise fail(op, name, value, "a dtype (p.float32, p.float16, p.bfloat16, p.int8, p.int32, p.int64 or p.bool_)")
    if isinstance(value, DType):
        return value
    try:
        return as_dtype(value)
    except DTypeError as e:
        raise DTypeError(f"{op}: {name}: {e.message}", location=user_location(), suggestions=e.suggestions) from None


def dtype_supported(value) -> bool:
    """Whether value names a dtype PyPTO supports."""
    try:
        as_dtype(value)
    except DTypeError:
        return False
    return True


def choice(value, name: str, op: str, options) -> str:
    """One of a few strings."""
    if not isinstance(value, str) or value not in options:
        raise fail(op, name, value, "one of " + ", ".join(repr(o) for o in options), PyptoValueError)
    return value
