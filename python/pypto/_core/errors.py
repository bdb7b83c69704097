"""Exceptions raised by PyPTO.

Every error the Go core reports arrives as one of these classes, chosen by its kind::

    PyptoError                      base of everything below
    ├── CompileError                the program cannot be compiled as written
    │   ├── ShapeError              (also a ValueError) shapes do not fit together
    │   │   └── SymbolicShapeError  (also a TypeError) a symbolic dim's value is needed
    │   └── DTypeError              (also a TypeError) element types do not fit together
    ├── PyptoValueError             (also a ValueError) a bad argument value
    ├── PyptoMemoryError            (also a MemoryError) a tensor larger than the machine's
    │                               memory or the device's (refused before allocating)
    ├── PyptoTypeError              (also a TypeError) an argument of the wrong kind
    ├── PyptoIndexError             (also an IndexError) an index outside a tensor
    ├── DeviceError                 the simulated device failed or cannot be used
    └── InternalError               a bug in PyPTO (a Go panic is reported this way)

``str(e)`` names the problem and, where known, the user's ``file:line`` that caused it;
``e.get_detailed_info()`` returns an :class:`ErrorInfo` with ``.type``, ``.message``,
``.location``, ``.causes`` and ``.suggestions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

__all__ = [
    "Location",
    "ErrorInfo",
    "PyptoError",
    "CompileError",
    "ShapeError",
    "SymbolicShapeError",
    "DTypeError",
    "PyptoValueError",
    "PyptoMemoryError",
    "PyptoTypeError",
    "PyptoIndexError",
    "DeviceError",
    "InternalError",
]


@dataclass(frozen=True)
class Location:
    """A place in the user's program."""

    file: str = ""
    line: int = 0
    func: str = ""

    def __str__(self) -> str:
        if not self.file and not self.line:
            return ""
        s = f"{self.file}:{self.line}"
        if self.func:
            s += f" in {self.func}"
        return s

    def __bool__(self) -> bool:
        return bool(self.file or self.line)


@dataclass(frozen=True)
class ErrorInfo:
    """The structured details of a :class:`PyptoError`."""

    type: str
    message: str
    location: Optional[Location]
    causes: list = field(default_factory=list)
    suggestions: list = field(default_factory=list)


class PyptoError(Exception):
    """Base class of every PyPTO error."""

    kind = "PyptoError"

    def __init__(
        self,
        message: str,
        *,
        location: Optional[Location] = None,
        causes: Sequence[str] = (),
        suggestions: Sequence[str] = (),
        type: Optional[str] = None,
    ):
        super().__init__(message)
        self.message = message
        self.location = location if location else None
        self.causes = list(causes)
        self.suggestions = list(suggestions)
        self.type = type or self.kind

    def get_detailed_info(self) -> ErrorInfo:
        return ErrorInfo(self.type, self.message, self.location, list(self.causes), list(self.suggestions))

    def __str__(self) -> str:
        s = self.message
        if self.location:
            s += f" (at {self.location})"
        for c in self.causes:
            s += f"\n  cause: {c}"
        for sg in self.suggestions:
            s += f"\n  suggestion: {sg}"
        return s

    def __reduce__(self):  # picklable, e.g. across multiprocessing
        return (_rebuild, (type(self), self.message, self.location, self.causes, self.suggestions, self.type))


def _rebuild(cls, message, location, causes, suggestions, kind):
    return cls(message, location=location, causes=causes, suggestions=suggestions, type=kind)


class CompileError(PyptoError):
    """The program cannot be compiled as written."""

    kind = "CompileError"


class ShapeError(CompileError, ValueError):
    """Operand shapes do not fit together (e.g. a matmul's inner dimensions differ)."""

    kind = "ShapeError"


class SymbolicShapeError(ShapeError, TypeError):
    """Tracing needed the value of a symbolic dimension (``int(batch)``,
    ``range(x.shape[0])``), which exists only when the compiled program runs."""

    kind = "SymbolicShapeError"


class DTypeError(CompileError, TypeError):
    """Operand element types do not fit together or are not supported."""

    kind = "DTypeError"


class PyptoValueError(PyptoError, ValueError):
    """A bad argument."""

    kind = "ValueError"


class PyptoMemoryError(PyptoError, MemoryError):
    """A tensor or buffer larger than this machine's memory or the device's (HBM), or
    whose size overflows: refused, with the size and the limit, before anything is allocated."""

    kind = "MemoryError"


class PyptoTypeError(PyptoError, TypeError):
    """An argument of the wrong kind (a string where a flag or an int is wanted, ...)."""

    kind = "TypeError"


class PyptoIndexError(PyptoError, IndexError):
    """An index outside a tensor or a grid, or too many indices."""

    kind = "IndexError"


class PyptoIOError(PyptoError, OSError):
    """A file PyPTO was asked to write (a profile, a compilation page, an export)
    could not be written; the message names it. Nothing that looks complete is left."""

    kind = "IOError"


class DeviceError(PyptoError):
    """The simulated device failed, or cannot be used (e.g. after fork)."""

    kind = "DeviceError"


class InternalError(PyptoError):
    """A bug in PyPTO. A Go panic in the runtime is reported as this, never a crash."""

    kind = "InternalError"


_BY_KIND = {
    "CompileError": CompileError,
    "ShapeError": ShapeError,
    "SymbolicShapeError": SymbolicShapeError,
    "DTypeError": DTypeError,
    "ValueError": PyptoValueError,
    "MemoryError": PyptoMemoryError,
    "TypeError": PyptoTypeError,
    "IndexError": PyptoIndexError,
    "DeviceError": DeviceError,
    "IOError": PyptoIOError,
    "InternalError": InternalError,
}


def from_json_dict(d: dict) -> PyptoError:
    """Builds the exception for an error reported by the Go core as JSON."""
    kind = d.get("type") or "PyptoError"
    loc = d.get("location") or {}
    location = Location(loc.get("file", ""), int(loc.get("line", 0) or 0), loc.get("func", ""))
    cls = _BY_KIND.get(kind, PyptoError)
    return cls(
        d.get("message", ""),
        location=location,
        causes=d.get("causes") or (),
        suggestions=d.get("suggestions") or (),
        type=kind,
    )
