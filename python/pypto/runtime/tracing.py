"""Tracing: calling a function once on placeholder tensors and building the Go trace
(its Tensor Graph) from them to what it returns, which p.Graph shows and p.compile
compiles."""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import json
import weakref

from .._core import lib as _lib
from .._core import validate as check
from .._core.dtypes import as_dtype
from .._core.errors import PyptoTypeError
from .._core.location import user_location
from .._core.symbolic import Dim
from ..tensor_level.layouts import as_layout
from ..tensor_level.tensor import Tensor, _pinned_handles, _type_text

__all__ = ["Owned", "Trace", "trace_function", "given_placeholders", "placeholder", "is_placeholder"]


class Owned:
    """A Go object this Python object alone owns: its handle is freed with it, and
    copies are the object itself (it never changes)."""

    __slots__ = ("handle", "_finalizer", "__weakref__")

    def __init__(self, handle: int):
        self.handle = handle
        self._finalizer = weakref.finalize(self, _lib.free_handle, handle)
        self._finalizer.atexit = False

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Trace(Owned):
    """One trace of the function: the Go Tensor Graph from its placeholders to its
    outputs, before it is compiled (a trace compiles once per device and config)."""

    __slots__ = ("structure", "placeholders")

    def __init__(self, handle: int, structure: str, placeholders):
        super().__init__(handle)
        self.structure, self.placeholders = structure, placeholders

    def __reduce__(self):
        raise PyptoTypeError("a trace cannot be pickled; pickle its p.compile Executor, which traces again")

    def json(self) -> dict:
        return json.loads(_lib.call_string(_lib.lib.pypto_trace_json, self.handle))


def _restore_placeholders(placeholders, handles, result):
    """Gives back each placeholder its own handle where ``x[key] = v`` rebound it inside
    the function (the trace starts from the inputs); a rebound input the function
    returns is its updated value, returned as a tensor of its own."""
    for ph, h in zip(placeholders, handles):
        if ph._handle == h:
            continue
        rebound, ph._handle = ph._handle, h
        ph._type_info = None
        if result is ph:
            result = Tensor._wrap(rebound)
        elif isinstance(result, (tuple, list)) and any(r is ph for r in result):
            fresh = Tensor._wrap(rebound)
            result = type(result)(fresh if r is ph else r for r in result)
        else:
            _lib.free_handle(rebound)
    return result


def trace_function(fn, name: str, placeholders, tracing, scopes=None) -> Trace:
    """Calls fn once on placeholders (``tracing.active`` set meanwhile) and builds the
    Go trace from them to what it returns."""
    try:
        inspect.signature(fn).bind(*placeholders)
    except TypeError as e:  # the run's inputs do not fit the function's parameters
        raise PyptoTypeError(f"p.compile: {name} cannot take {len(placeholders)} input(s): {e}", location=user_location()) from None
    except ValueError:  # no signature to check (some builtins)
        pass
    tracing.active = True
    handles = [ph._handle for ph in placeholders]
    _pinned_handles.update(handles)
    result = None
    try:
        with scopes or contextlib.nullcontext():
            result = fn(*placeholders)
    finally:
        tracing.active = False
        _pinned_handles.difference_update(handles)
        result = _restore_placeholders(placeholders, handles, result)
    if isinstance(result, Tensor):
        outs, structure = [result], "single"
    elif isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor) for r in result):
        outs, structure = list(result), "tuple" if isinstance(result, tuple) else "list"
    else:
        raise PyptoTypeError(
            f"p.compile: {name} must return a p.Tensor or a non-empty tuple/list of them, got {type(result).__name__}",
            location=user_location(),
        )
    h = _lib.Handle()
    _lib.call(
        _lib.lib.pypto_trace_create,
        name.encode(),
        _lib.handle_array(p._handle for p in placeholders),
        len(placeholders),
        _lib.handle_array(o._handle for o in outs),
        len(outs),
        ctypes.byref(h),
    )
    return Trace(h.value, structure, placeholders)


def given_placeholders(inputs, op: str) -> list:
    """The placeholders to trace with for ``inputs=[...]``: p.Tensors (a symbolic one
    is a placeholder already; others give their type) or (shape, dtype) pairs."""
    out = []
    for i, x in enumerate(inputs):
        if isinstance(x, tuple) and len(x) == 2:
            x = Tensor(x[0], dtype=x[1]) if any(isinstance(d, Dim) for d in x[0]) else placeholder(x[0], x[1])
        if not isinstance(x, Tensor):
            raise check.fail(op, f"inputs[{i}]", x, "a p.Tensor (or a (shape, dtype) pair)")
        out.append(x if is_placeholder(x) else placeholder(x.shape, x.dtype, x.layout))
    return out


def placeholder(shape, dtype, layout=None) -> Tensor:
    h = _lib.Handle()
    text = _type_text(as_dtype(dtype), tuple(shape), as_layout(layout))
    _lib.call(_lib.lib.pypto_placeholder_type, text.encode(), ctypes.byref(h))
    return Tensor._wrap(h.value)


def is_placeholder(t: Tensor) -> bool:
    """A symbolic p.Tensor is a placeholder already; others are used for their type."""
    return any(isinstance(d, Dim) for d in t.shape)
