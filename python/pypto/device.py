"""Choosing the simulated device that realisation and p.compile target."""

from __future__ import annotations

import json

from . import _lib

__all__ = ["set_device", "get_device", "last_stats", "cache_info", "clear_cache"]


def set_device(name: str) -> None:
    """Selects the chip preset later compilations target: "a2" (a 910B-class part, the
    default) or "tiny" (a deliberately small chip that exercises tiling quickly)."""
    _lib.call(_lib.lib.pypto_set_device, str(name).encode())


def get_device() -> str:
    """The current chip preset's name."""
    return _lib.call_string(_lib.lib.pypto_get_device)


def last_stats():
    """Statistics of the most recent run in this process (eager or compiled) as a dict
    with "cycles", "seconds" (simulated time) and "tasks", or None before any run."""
    return json.loads(_lib.call_string(_lib.lib.pypto_last_stats_json))


def cache_info() -> dict:
    """Counters of the compile cache shared by eager realisation and p.compile:
    {"compiles", "hits", "entries", "capacity"}. Graphs of the same structure (ops,
    shapes, dtypes, attributes; not data) compile once per device."""
    return json.loads(_lib.call_string(_lib.lib.pypto_cache_info_json))


def clear_cache() -> None:
    """Drops every compiled program (the counters are kept)."""
    _lib.call(_lib.lib.pypto_cache_clear)
