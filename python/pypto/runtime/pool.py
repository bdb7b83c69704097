"""p.MemoryPool: device memory of a fixed size shared by the executors that use it
(docs/api.md, "Runtime")."""

from __future__ import annotations

import ctypes
import json
import weakref

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import PyptoError, PyptoTypeError, PyptoValueError
from .._core.location import user_location

__all__ = ["MemoryPool"]


class MemoryPool:
    """``MemoryPool(size=100 * 1024 * 1024)``: ``size`` bytes of device memory that lend
    every run of the executors made with ``p.Executor(model, memory_pool=pool)`` (or
    ``p.compile(model, memory_pool=pool)``) the memory its program needs.

    - A program that needs more than ``size`` bytes is a :class:`pypto.CompileError`
      when it is compiled, naming the bytes it needs, the pool's size and the largest
      tensors live at its peak with the lines that made them.
    - A run takes its memory when it starts and gives it back when its last task has
      finished and its outputs are copied out (delayed release: never while a task
      reads it); the next run, of this executor or another, reuses the same bytes.
      Runs of several threads share the pool: one that finds no free region large
      enough waits until another gives its region back.
    - :meth:`stats` reports the use so far (``high_water_bytes``: the most lent at once).
    """

    __slots__ = ("_handle", "_size", "_finalizer", "__weakref__")

    def __init__(self, size: int):
        self._size = check.integer(size, "size", "p.MemoryPool", lo=1)
        if self._size >= 2**63:
            raise check.fail("p.MemoryPool", "size", size, "a number of bytes this machine can hold", PyptoValueError)
        h = _lib.Handle()
        try:
            _lib.call(_lib.lib.pypto_pool_create, self._size, ctypes.byref(h))
        except PyptoError as e:
            e.location = e.location or user_location()
            raise
        self._handle = h.value
        self._finalizer = weakref.finalize(self, _lib.free_handle, h.value)
        self._finalizer.atexit = False

    @property
    def size(self) -> int:
        """The pool's size in bytes."""
        return self._size

    def stats(self) -> dict:
        """The pool's use so far: ``size_bytes``; ``in_use_bytes`` (lent to runs in
        progress) and ``live_runs``; ``high_water_bytes``, the most lent at once;
        ``arena_touched_bytes``, how far from its start the pool's memory has been used
        (regions are placed first fit, so runs one after another reuse the same bytes);
        ``runs``, regions lent so far, and ``waited_runs``, runs that had to wait for
        another to give its memory back."""
        return json.loads(_lib.call_string(_lib.lib.pypto_pool_stats_json, self._handle))

    @property
    def high_water_bytes(self) -> int:
        """The most bytes lent to runs at once so far."""
        return self.stats()["high_water_bytes"]

    def __reduce__(self):
        raise PyptoTypeError("a p.MemoryPool is device memory of this process and cannot be pickled; make one in the other process")

    def __repr__(self) -> str:
        s = self.stats()
        return f"<pypto.MemoryPool {s['size_bytes']} bytes: {s['in_use_bytes']} in use, high water {s['high_water_bytes']}>"
