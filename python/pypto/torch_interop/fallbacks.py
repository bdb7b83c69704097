"""The record of what torch.compile(backend="pypto") left to torch, for
p.last_fallbacks() and the "pypto.torch" logger (no torch import: p.last_fallbacks()
works without it).

Dynamo hands a model over as several graphs when it breaks the model's code into
parts (value-dependent control flow, a call it cannot trace), each compiled when it
first runs, all within the one call of the compiled model. So a record holds every
graph compiled from one call site: the line of the user's code that called the
compiled model (the frame just outside torch and PyPTO). A compilation from another
line starts a new record; a recompilation from the same line (new input sizes) adds
to it."""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger("pypto.torch")

_lock = threading.Lock()
_site = None  # the call site of the last record
_last: list = []
_parts: list = []  # the parts that run on PyPTO: {"part", "ops", "runs", "sim_ms"}
_graphs = 0  # graphs compiled into the last record

_PYPTO = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library(path: str, torch_dir: str) -> bool:
    return path.startswith(_PYPTO) or (torch_dir and path.startswith(torch_dir))


def call_site():
    """The frame, and its instruction, of the user's code that called into torch (or
    PyPTO) to compile: the frame just outside the outermost torch or PyPTO frame."""
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(torch.__file__) + os.sep if torch is not None else ""
    f = sys._getframe(1)
    site = None
    while f is not None:
        if _library(f.f_code.co_filename, torch_dir):
            site = None
        elif site is None:
            site = f
        f = f.f_back
    return None if site is None else (id(site), site.f_lasti, site.f_code)


def start() -> tuple:
    """The record for the graph being compiled now (the current one when the compile
    comes from the call site of the last, else a new one) and the graph's number in it."""
    global _last, _parts, _site, _graphs
    site = call_site()
    with _lock:
        if site is None or site != _site:
            _site, _last, _parts, _graphs = site, [], [], 0
        _graphs += 1
        return _last, _graphs - 1


def add_part(name: str, ops: int) -> dict:
    """Notes a part that runs on PyPTO; the caller updates the entry's "runs" and
    "sim_ms" as it runs."""
    entry = {"part": name, "ops": ops, "runs": 0, "sim_ms": None}
    with _lock:
        _parts.append(entry)
    log.info("torch.compile(backend='pypto'): %s runs %d operation(s) on PyPTO", name, ops)
    return entry


def last_parts() -> list:
    """The parts of every graph of the last record that run on PyPTO."""
    with _lock:
        return [dict(e) for e in _parts]


def add(record: list, op: str, reason: str, where: str, graph: str = "") -> None:
    """Notes that op (at where, in graph) runs in torch because of reason."""
    entry = {"op": op, "reason": reason, "where": where, "graph": graph}
    with _lock:
        record.append(entry)
    log.info("torch.compile(backend='pypto'): %s runs in torch: %s (%s)", op, reason, where)


def last() -> list:
    with _lock:
        return [dict(e) for e in _last]
