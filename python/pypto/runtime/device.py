"""Choosing the simulated device that realisation and p.compile target."""

from __future__ import annotations

import json

from .._core import lib as _lib
from .._core import validate as check
from .._core import errors
from .._core.location import user_location

__all__ = ["set_device", "get_device", "last_stats", "cache_info", "clear_cache", "lowered_ops", "composite_ops"]


def set_device(name: str) -> None:
    """Selects the device later realisations and compilations target: a chip preset, "a2"
    (a 910B-class part, the default) or "tiny" (a deliberately small chip that exercises
    tiling quickly), both simulated; or "reference", the Go reference interpreter (exact
    results, no timing), which runs every op, including those without a device lowering
    yet (see lowered_ops())."""
    if not isinstance(name, str):
        raise check.fail("set_device", "name", name, 'a device name ("a2", "tiny", "reference", ...)')
    try:
        _lib.call(_lib.lib.pypto_set_device, name.encode())
    except errors.PyptoValueError as e:
        e.message, e.location = f"set_device: name: {e.message}", e.location or user_location()
        raise


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


def lowered_ops() -> frozenset:
    """The ops the compiler can lower to the chip presets. Realising any other op on a
    chip raises p.CompileError naming it (no silent host fallback); the "reference"
    device runs every op."""
    return frozenset(json.loads(_lib.call_string(_lib.lib.pypto_lowered_ops_json)))


def composite_ops() -> frozenset:
    """The ops defined by a decomposition into other ops (softmax, layer_norm, ...)."""
    return frozenset(json.loads(_lib.call_string(_lib.lib.pypto_composite_ops_json)))
