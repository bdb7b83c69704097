"""Finding the user's place in the program: the first stack frame outside pypto."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import threading

from .errors import Location

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # pypto/, not _core/
# The standard library's own frames (copy.copy, pickle, functools) are never the user's
# line either; installed packages under it (site-packages) may be.
_STDLIB_DIR = os.path.join(sysconfig.get_paths()["stdlib"], "")


def _is_library(code) -> bool:
    filename = code.co_filename
    if filename.startswith(_PKG_DIR):
        return True
    if filename == "<string>" and code.co_name == "__init__":
        return True  # the __init__ a dataclass generates (p.CompileConfig)
    return filename.startswith(_STDLIB_DIR) and "-packages" + os.sep not in filename


def _frame():
    f = sys._getframe(2)
    while f is not None and _is_library(f.f_code):
        f = f.f_back
    return f


# Set while code translated from another program is traced (an imported torch graph's
# node): the ops it creates are that program's line, not the translator's caller's.
_pinned = threading.local()


class at_location:
    """A context in which this thread's ops are located at loc (a Location with a
    file), whatever frame creates them."""

    def __init__(self, loc: Location):
        self._loc = loc

    def __enter__(self):
        self._prev = getattr(_pinned, "loc", None)
        _pinned.loc = self._loc

    def __exit__(self, *exc):
        _pinned.loc = self._prev


def user_location() -> Location:
    """The caller's file, line and function, skipping frames inside pypto."""
    pinned = getattr(_pinned, "loc", None)
    if pinned is not None:
        return pinned
    f = _frame()
    if f is None:
        return Location()
    return Location(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


# (code object, line) -> its location JSON: eager loops call ops from a few places,
# and encoding the JSON each time costs more than the op's own bookkeeping.
_JSON_CACHE: dict = {}
_JSON_CACHE_MAX = 4096


# Set while a trace for the visualisation runs in this thread: locations then carry the
# user's calls that led to them (the viewer groups nodes by them).
_scopes = threading.local()


class recording_scopes:
    """A context in which this thread's locations carry their scope: the user's frames
    from the outermost to the one creating the op, "func@line;func@line" (qualified
    function names)."""

    def __enter__(self):
        self._prev = getattr(_scopes, "on", False)
        _scopes.on = True

    def __exit__(self, *exc):
        _scopes.on = self._prev


def _scope(f) -> str:
    calls = []
    while f is not None and not _is_library(f.f_code):
        calls.append(f"{f.f_code.co_qualname if hasattr(f.f_code, 'co_qualname') else f.f_code.co_name}@{f.f_lineno}")
        f = f.f_back
    return ";".join(reversed(calls))


def user_location_json() -> bytes:
    """user_location() as the JSON the C ABI takes."""
    pinned = getattr(_pinned, "loc", None)
    if pinned is not None:
        return json.dumps({"file": pinned.file, "line": pinned.line, "func": pinned.func}).encode()
    f = _frame()
    if f is None:
        return b""
    if getattr(_scopes, "on", False):
        loc = {"file": f.f_code.co_filename, "line": f.f_lineno, "func": f.f_code.co_name, "scope": _scope(f)}
        return json.dumps(loc).encode()
    key = (f.f_code, f.f_lineno)
    text = _JSON_CACHE.get(key)
    if text is None:
        text = json.dumps({"file": f.f_code.co_filename, "line": f.f_lineno, "func": f.f_code.co_name}).encode()
        if len(_JSON_CACHE) >= _JSON_CACHE_MAX:
            _JSON_CACHE.clear()
        _JSON_CACHE[key] = text
    return text
