"""p.compile: trace a Python function once per input signature and run it compiled."""

from __future__ import annotations

import ctypes
import json
import threading
import weakref

import numpy as np

from . import _lib
from .device import get_device
from .tensor import Tensor, from_numpy

__all__ = ["compile", "Executor"]


def compile(fn, config=None) -> "Executor":
    """Returns an :class:`Executor` for ``fn``, a function of p.Tensors returning a
    p.Tensor or a tuple/list of them.

    On ``run(*inputs)`` the function is traced with placeholder tensors of the inputs'
    shapes and dtypes (Python control flow unrolls at trace time), compiled once for the
    current device, and cached per (shapes, dtypes, device) signature. Tensors the
    function captures from outside become constants of the compiled program. Inside the
    function, values have no data: realising them (``.numpy()``, ``print``, ``bool()``)
    raises an error.

    ``config`` is reserved for compile options; only None is supported so far.
    """
    if not callable(fn):
        raise TypeError(f"p.compile needs a function, got {type(fn).__name__}")
    if config is not None:
        raise NotImplementedError("p.compile: config is not supported yet; pass config=None")
    return Executor(fn)


class _Compiled:
    """One traced and compiled signature of an Executor."""

    __slots__ = ("handle", "n_out", "structure", "_finalizer", "__weakref__")

    def __init__(self, handle: int, n_out: int, structure):
        self.handle, self.n_out, self.structure = handle, n_out, structure
        self._finalizer = weakref.finalize(self, _lib.free_handle, handle)
        self._finalizer.atexit = False


class Executor:
    """A function compiled for the simulated NPU. Call ``run(*inputs)`` (or the executor
    itself) with p.Tensors or numpy arrays."""

    def __init__(self, fn):
        self._fn = fn
        self._name = getattr(fn, "__name__", "main")
        self._compiled: dict = {}
        self._lock = threading.Lock()
        self._last: _Compiled | None = None

    # --- running --------------------------------------------------------------------------

    def run(self, *inputs):
        tensors = [x if isinstance(x, Tensor) else from_numpy(_require_array(x, i)) for i, x in enumerate(inputs)]
        sig = (tuple((t.shape, t.dtype.code) for t in tensors), get_device())
        compiled = self._compiled.get(sig)
        if compiled is None:
            with self._lock:  # trace each signature once, even from several threads
                compiled = self._compiled.get(sig)
                if compiled is None:
                    compiled = self._trace([(t.shape, t.dtype) for t in tensors])
                    self._compiled[sig] = compiled
        outs = (_lib.Handle * max(compiled.n_out, 1))()
        _lib.call(
            _lib.lib.pypto_executor_run,
            compiled.handle,
            _lib.handle_array(t._handle for t in tensors),
            len(tensors),
            outs,
            compiled.n_out,
        )
        self._last = compiled
        results = [Tensor._wrap(outs[i]) for i in range(compiled.n_out)]
        kind = compiled.structure
        if kind == "single":
            return results[0]
        return tuple(results) if kind == "tuple" else results

    __call__ = run

    def _trace(self, sig) -> _Compiled:
        placeholders = []
        for shape, dt in sig:
            h = _lib.Handle()
            _lib.call(_lib.lib.pypto_placeholder, dt.code, len(shape), _lib.int64_array(shape), ctypes.byref(h))
            placeholders.append(Tensor._wrap(h.value))
        result = self._fn(*placeholders)
        if isinstance(result, Tensor):
            outs, structure = [result], "single"
        elif isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor) for r in result):
            outs, structure = list(result), "tuple" if isinstance(result, tuple) else "list"
        else:
            raise TypeError(
                f"p.compile: {self._name} must return a p.Tensor or a non-empty tuple/list of them, "
                f"got {type(result).__name__}"
            )
        h = _lib.Handle()
        _lib.call(
            _lib.lib.pypto_executor_create,
            self._name.encode(),
            _lib.handle_array(p._handle for p in placeholders),
            len(placeholders),
            _lib.handle_array(o._handle for o in outs),
            len(outs),
            ctypes.byref(h),
        )
        compiled = _Compiled(h.value, 0, structure)
        n = ctypes.c_int32()
        _lib.call(_lib.lib.pypto_executor_num_outputs, compiled.handle, ctypes.byref(n))
        compiled.n_out = n.value
        return compiled

    # --- results of the last run ----------------------------------------------------------

    def _last_stats(self):
        c = self._last
        if c is None:
            return None
        cycles, seconds, has = ctypes.c_int64(), ctypes.c_double(), ctypes.c_int32()
        _lib.call(
            _lib.lib.pypto_executor_last_stats, c.handle, ctypes.byref(cycles), ctypes.byref(seconds), ctypes.byref(has)
        )
        if not has.value:
            return None
        return cycles.value, seconds.value

    @property
    def last_cycles(self):
        """Simulated cycles of the last run (None before the first)."""
        s = self._last_stats()
        return None if s is None else s[0]

    @property
    def last_time_ms(self):
        """Simulated time of the last run in milliseconds, at the chip's clock (None
        before the first run)."""
        s = self._last_stats()
        return None if s is None else s[1] * 1e3

    def stats(self):
        """Full statistics of the last run as a dict (None before the first run)."""
        c = self._last
        if c is None:
            return None
        return json.loads(_lib.call_string(_lib.lib.pypto_executor_stats_json, c.handle))

    def dump(self) -> str:
        """Text of every graph level and the PTO programs of the last-run signature."""
        c = self._last
        if c is None:
            if not self._compiled:
                raise RuntimeError("dump(): the executor has not been run yet, so nothing is compiled")
            c = next(iter(self._compiled.values()))
        return _lib.call_string(_lib.lib.pypto_executor_dump, c.handle)

    @property
    def num_compiled(self) -> int:
        """How many input signatures have been traced and compiled."""
        return len(self._compiled)

    def __repr__(self) -> str:
        return f"<pypto.Executor {self._name}: {len(self._compiled)} compiled signature(s)>"


def _require_array(x, i):
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"Executor.run: input {i} must be a p.Tensor or a numpy array, not {type(x).__name__}")

