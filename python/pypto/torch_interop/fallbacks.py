"""The record of what torch.compile(backend="pypto") left to torch, for
p.last_fallbacks() and the "pypto.torch" logger (no torch import: p.last_fallbacks()
works without it)."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("pypto.torch")

_lock = threading.Lock()
_last: list = []


def start() -> list:
    """A new record for the graph being compiled now; it becomes the last one."""
    global _last
    record: list = []
    with _lock:
        _last = record
    return record


def add(record: list, op: str, reason: str, where: str) -> None:
    """Notes that op (at where) runs in torch because of reason."""
    entry = {"op": op, "reason": reason, "where": where}
    with _lock:
        record.append(entry)
    log.info("torch.compile(backend='pypto'): %s runs in torch: %s (%s)", op, reason, where)


def last() -> list:
    with _lock:
        return [dict(e) for e in _last]
