"""p.CompileConfig: how p.compile compiles a function (docs/api.md, "Compile options")."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .._core import validate as check
from .._core.errors import PyptoTypeError, PyptoValueError
from .._core.location import user_location

__all__ = ["CompileConfig"]

_LEVELS = (0, 1, 2, 3)
_RUNTIME = ("concurrent_tasks", "overlap_launch", "prefetch_l2", "balance_blocks", "early_start")


@dataclass(frozen=True)
class CompileConfig:
    """Options for :func:`pypto.compile`.

    - ``opt_level``: 0 (no optimisation: every op its own kernel, fixed matmul tiles),
      1 (+ graph clean-ups that never change a value: constant folding, algebraic
      simplification, CSE, DCE; searched matmul tiles), 2 (the default: + fusion) or 3
      (every pass; today the same as 2).
    - ``disable_passes``: names of optional passes to switch off on top of the level
      (e.g. ``("fuse-elementwise",)``); an unknown or required name raises ValueError
      listing the passes that can be disabled.
    - ``memory_pool_bytes``: the device memory the program must run in; a program whose
      memory plan needs more raises :class:`pypto.CompileError` saying how much it needs
      (None: no limit).
    - ``chip``: the device preset to compile for (None: the current device,
      :func:`pypto.get_device`).
    - ``deterministic``: the same output bits at every ``opt_level`` and on every chip:
      matmuls never split K (the partial products would be added in another order),
      the passes that reassociate sums (fuse-rows, fuse-attention) do not run, and
      float sums and products add in the order of one reduction instruction over the
      whole row or column, whatever the chip's buffers (slower: 64-column tiles).
    - ``max_steps``: the instructions one block of a kernel may execute in a run on a
      chip (None: 2**26, tens of seconds of simulation); a run that exceeds it raises
      :class:`pypto.DeviceError` naming the kernel and the loop it was in.
    - ``max_cores``: the most AI cores a kernel uses (the vendor's block dimension;
      None: every core of the chip). An AI core is a cube core and its vector cores, so
      a vector kernel uses at most twice as many vector cores on a2; the tile search
      and the dealing of tiles to blocks see only those cores. For kernels that share
      a chip, or to time a kernel on N cores. At least 1; more than the chip's AI cores
      raises :class:`pypto.PyptoValueError` when the program is compiled.
    - ``per_size_programs``: a symbolic trace compiles a program for every size it runs
      (False, the default: one program per bucket of sizes, see "Dynamic shapes" in
      docs/api.md).
    - ``enable_visualization``: every compilation writes a self-contained HTML page of
      its levels, programs and passes (and the JSON it shows) into
      ``visualization_dir`` (created if missing); ``Executor.visualize()`` gives the
      same view (docs/tools.md, "Visualisation").

    The runtime's scheduling features (docs/device.md, "Dispatcher"), each on by
    default; False switches one off, and ``runtime_features=False`` all of them (the
    plain runtime: tasks one after another, blocks dealt to the cores in turn, no
    prefetch). They change the simulated time, never the values, and a program of one
    task takes the same time either way:

    - ``concurrent_tasks``: independent tasks run at the same time on disjoint cores.
    - ``overlap_launch``: the next task is dispatched while the current one runs.
    - ``prefetch_l2``: a task's first loads are prefetched into L2 while it launches.
    - ``balance_blocks``: blocks go to the core that is free first.
    - ``early_start``: with ``overlap_launch``, a task's cores start, and run its
      prologue, while the tasks it waits for signal their completion.
    - ``runtime_features``: the default of the five (True); False switches all of them
      off (a field given as well wins).
    """

    opt_level: int = 2
    disable_passes: tuple = ()
    memory_pool_bytes: int | None = None
    chip: str | None = None
    deterministic: bool = False
    max_steps: int | None = None
    max_cores: int | None = None
    per_size_programs: bool = False
    concurrent_tasks: bool | None = None
    overlap_launch: bool | None = None
    prefetch_l2: bool | None = None
    balance_blocks: bool | None = None
    early_start: bool | None = None
    runtime_features: bool = True
    enable_visualization: bool = False
    visualization_dir: str = "viz_output"

    def __post_init__(self):
        if isinstance(self.opt_level, bool) or not isinstance(self.opt_level, int) or self.opt_level not in _LEVELS:
            raise PyptoValueError(
                f"CompileConfig: opt_level must be 0, 1, 2 or 3, got {self.opt_level!r}", location=user_location()
            )
        passes = self.disable_passes
        if isinstance(passes, str):
            passes = (passes,)
        if not isinstance(passes, (tuple, list, set, frozenset)) or not all(isinstance(p, str) for p in passes):
            raise PyptoTypeError(
                f"CompileConfig: disable_passes must be pass names (strings), got {self.disable_passes!r}",
                location=user_location(),
            )
        object.__setattr__(self, "disable_passes", tuple(sorted(set(passes))))
        pool = self.memory_pool_bytes
        if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool <= 0):
            raise PyptoValueError(
                f"CompileConfig: memory_pool_bytes must be a positive number of bytes or None, got {pool!r}",
                location=user_location(),
            )
        if self.chip is not None and not isinstance(self.chip, str):
            raise PyptoTypeError(
                f"CompileConfig: chip must be a device preset name or None, got {self.chip!r}", location=user_location()
            )
        if not isinstance(self.deterministic, bool):
            raise PyptoTypeError(
                f"CompileConfig: deterministic must be True or False, got {self.deterministic!r}", location=user_location()
            )
        if not isinstance(self.per_size_programs, bool):
            raise PyptoTypeError(
                f"CompileConfig: per_size_programs must be True or False, got {self.per_size_programs!r}",
                location=user_location(),
            )
        steps = self.max_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0):
            raise PyptoValueError(
                f"CompileConfig: max_steps must be a positive number of instructions or None, got {steps!r}",
                location=user_location(),
            )
        object.__setattr__(self, "max_cores", check.integer(self.max_cores, "max_cores", "CompileConfig", lo=1, optional=True))
        check.flag(self.runtime_features, "runtime_features", "CompileConfig")
        for name in _RUNTIME:
            value = getattr(self, name)
            object.__setattr__(self, name, self.runtime_features if value is None else check.flag(value, name, "CompileConfig"))

        if not isinstance(self.enable_visualization, bool):
            raise PyptoTypeError(
                f"CompileConfig: enable_visualization must be True or False, got {self.enable_visualization!r}",
                location=user_location(),
            )
        vdir = self.visualization_dir
        if isinstance(vdir, os.PathLike):
            vdir = os.fspath(vdir)
        if not isinstance(vdir, str) or not vdir:
            raise PyptoTypeError(
                f"CompileConfig: visualization_dir must be a directory path (a non-empty string or os.PathLike), got {self.visualization_dir!r}",
                location=user_location(),
            )
        object.__setattr__(self, "visualization_dir", vdir)

    def _json(self) -> bytes:
        return json.dumps(
            {
                "opt_level": self.opt_level,
                "disable_passes": list(self.disable_passes),
                "memory_pool_bytes": self.memory_pool_bytes or 0,
                "chip": self.chip or "",
                "deterministic": self.deterministic,
                "max_steps": self.max_steps or 0,
                "max_cores": self.max_cores or 0,
                "per_size_programs": self.per_size_programs,
                **{name: getattr(self, name) for name in _RUNTIME},
                "visualize": self.enable_visualization,
            }
        ).encode()
