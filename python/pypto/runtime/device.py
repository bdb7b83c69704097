"""Choosing the simulated device that realisation and p.compile target."""

from __future__ import annotations

import ctypes
import gc
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
    """Statistics of the most recent run in this process as a dict, or None before any
    run. A single-chip run (eager or compiled) gives "cycles", "seconds" (simulated
    time), "tasks" and the rest of the device's figures. A run over a mesh of chips
    (p.shard_map and the distributed executors) gives "mesh": True, "seconds" and
    "cycles" of its slowest rank, that rank's compute, communication and waiting time,
    the number of ranks and of collectives, and "report" naming the full timeline
    (``p.distributed.last_report()``): never the last program of one of its ranks."""
    chip = json.loads(_lib.call_string(_lib.lib.pypto_last_stats_json))
    mesh = _mesh_run
    if mesh is not None and (chip is None or chip.get("run", 0) <= mesh[0]):
        return dict(mesh[1])
    return chip


#: The latest mesh run: (the number of the latest single-chip run when it ended, its
#: summary). A single-chip run numbered higher is newer than it.
_mesh_run = None


def record_mesh_run(summary: dict) -> None:
    """Makes ``summary`` what last_stats() gives until the next single-chip run (the
    distributed runtime calls it when a mesh run ends; the ranks' own programs ran
    before that moment, so they are older)."""
    global _mesh_run
    chip = json.loads(_lib.call_string(_lib.lib.pypto_last_stats_json))
    _mesh_run = ((chip or {}).get("run", 0), dict(summary))


def cache_info() -> dict:
    """Counters of the compile cache shared by eager realisation and p.compile:
    {"compiles", "hits", "entries", "capacity"}. Graphs of the same structure (ops,
    shapes, dtypes, attributes; not data) compile once per device."""
    return json.loads(_lib.call_string(_lib.lib.pypto_cache_info_json))


#: Functions clear_cache calls first: layers above this one that keep compiled
#: programs of their own (the torch.compile backend's parts) register here.
_clear_hooks: list = []


def on_clear_cache(fn) -> None:
    """Makes clear_cache() call fn() before it clears."""
    _clear_hooks.append(fn)


def clear_cache() -> None:
    """Drops every compiled program (the counters are kept), including those kept by
    torch.compile(backend="pypto") parts, which compile again at their next call, and
    gives the memory they held back to the operating system."""
    for fn in list(_clear_hooks):
        fn()
    gc.collect()  # handles held only by unreachable Python objects are freed first
    _lib.call(_lib.lib.pypto_cache_clear)
    _trim_malloc()


def _trim_malloc() -> None:
    """Returns the C heap's free pages to the system (glibc keeps them otherwise)."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def lowered_ops() -> frozenset:
    """The ops the compiler can lower to the chip presets. Realising any other op on a
    chip raises p.CompileError naming it (no silent host fallback); the "reference"
    device runs every op."""
    return frozenset(json.loads(_lib.call_string(_lib.lib.pypto_lowered_ops_json)))


def composite_ops() -> frozenset:
    """The ops defined by a decomposition into other ops (softmax, layer_norm, ...)."""
    return frozenset(json.loads(_lib.call_string(_lib.lib.pypto_composite_ops_json)))
