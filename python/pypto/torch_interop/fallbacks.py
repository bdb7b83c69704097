"""The record of what torch.compile(backend="pypto") left to torch, for
p.last_fallbacks() and the "pypto.torch" logger (no torch import: p.last_fallbacks()
works without it)."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("pypto.torch")

_lock = threading.Lock()
_last: list = []
_parts: list = []  # the parts of the last graph that run on PyPTO: {"part", "ops", "runs", "sim_ms"}


def start() -> list:
    """A new record for the graph being compiled now; it becomes the last one."""
    global _last, _parts
    record: list = []
    with _lock:
        _last, _parts = record, []
    return record


def add_part(name: str, ops: int) -> dict:
    """Notes a part of the graph being compiled that runs on PyPTO; the caller updates
    the entry's "runs" and "sim_ms" as it runs."""
    entry = {"part": name, "ops": ops, "runs": 0, "sim_ms": None}
    with _lock:
        _parts.append(entry)
    log.info("torch.compile(backend='pypto'): %s runs %d operation(s) on PyPTO", name, ops)
    return entry


def last_parts() -> list:
    """The parts of the last graph compiled that run on PyPTO."""
    with _lock:
        return [dict(e) for e in _parts]


def add(record: list, op: str, reason: str, where: str) -> None:
    """Notes that op (at where) runs in torch because of reason."""
    entry = {"op": op, "reason": reason, "where": where}
    with _lock:
        record.append(entry)
    log.info("torch.compile(backend='pypto'): %s runs in torch: %s (%s)", op, reason, where)


def last() -> list:
    with _lock:
        return [dict(e) for e in _last]
