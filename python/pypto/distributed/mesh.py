"""Device meshes: ranks of simulated chips laid out on named axes (p.distributed.Mesh)."""

from __future__ import annotations

import itertools
import json
from typing import Optional, Sequence

import numpy as np

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import PyptoValueError


class Mesh:
    """A logical mesh of ranks on a physical mesh preset.

    ``Mesh((2, 2), ("dp", "tp"), preset="a2-node")`` lays 4 ranks out row-major on the
    first 4 chips of an A2 server (rank 0 = (0, 0), rank 1 = (0, 1), ...); the preset
    decides what moving bytes between two ranks costs. Presets: "a2-node" (8 chips,
    HCCS full mesh), "a2-nodes:N" (N servers of 8 over RoCE), "a3-server" (16 dies),
    "a3-pod:N" (N A3 servers); see docs/distributed.md for every link's figures and
    sources.
    """

    def __init__(self, shape: Sequence[int] = (8,), axis_names: Optional[Sequence[str]] = None, *, preset: str = "a2-node"):
        op = "Mesh"
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            raise check.fail(op, "shape", shape, "a non-empty tuple of positive ints, e.g. (2, 2)")
        self.shape = tuple(check.integer(d, "shape", op, lo=1) for d in shape)
        if axis_names is None:
            axis_names = tuple(f"axis{i}" for i in range(len(self.shape)))
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        names = tuple(axis_names)
        if len(names) != len(self.shape) or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
            raise check.fail(op, "axis_names", axis_names, f"{len(self.shape)} distinct names, one per mesh axis", PyptoValueError)
        self.axis_names = names
        if not isinstance(preset, str):
            raise check.fail(op, "preset", preset, 'a mesh preset name such as "a2-node"')
        try:
            self.info = json.loads(_lib.call_string(_lib.lib.pypto_mesh_json, preset.encode()))
        except PyptoValueError as e:
            raise PyptoValueError(f"Mesh: preset: {e.message}") from None
        self.preset = preset
        self.size = int(np.prod(self.shape))
        if self.size > self.info["size"]:
            raise PyptoValueError(
                f"Mesh: {self.size} ranks do not fit preset {preset!r}, which has {self.info['size']} chips",
                suggestions=['use a preset with more chips, e.g. "a2-nodes:2" for 16'],
            )
        self.devices = np.arange(self.size).reshape(self.shape)

    @property
    def chip(self) -> str:
        return self.info["chip"]

    def axis_size(self, name: str) -> int:
        return self.shape[self._axis(name)]

    def _axis(self, name) -> int:
        if name not in self.axis_names:
            raise PyptoValueError(f"mesh axis {name!r} does not exist (axes: {', '.join(self.axis_names)})")
        return self.axis_names.index(name)

    def coords(self, rank: int) -> tuple:
        return tuple(int(c) for c in np.unravel_index(rank, self.shape))

    def group(self, rank: int, axis_name=None) -> tuple:
        """The ranks that share every coordinate of ``rank`` except those of
        ``axis_name`` (a name, a tuple of names, or None for all axes), ascending."""
        if axis_name is None:
            return tuple(range(self.size))
        names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
        axes = {self._axis(n) for n in names}
        me = self.coords(rank)
        ranges = [range(self.shape[a]) if a in axes else (me[a],) for a in range(len(self.shape))]
        return tuple(sorted(int(self.devices[c]) for c in itertools.product(*ranges)))

    def __repr__(self) -> str:
        axes = ", ".join(f"{n}={s}" for n, s in zip(self.axis_names, self.shape))
        return f"Mesh({axes}; preset={self.preset!r}, chip={self.chip!r})"


def make_mesh(shape, axis_names, *, preset: str = "a2-node") -> Mesh:
    """JAX's spelling: ``make_mesh((4, 2), ("x", "y"))``."""
    return Mesh(shape, axis_names, preset=preset)


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None, preset: str = "a2-node") -> Mesh:
    """torch's spelling: ``init_device_mesh("npu", (2, 2), mesh_dim_names=("dp", "tp"))``.
    ``device_type`` is accepted for familiarity ("npu", "cpu"); every rank is a simulated
    chip of the preset."""
    if not isinstance(device_type, str):
        raise check.fail("init_device_mesh", "device_type", device_type, 'a string such as "npu"')
    return Mesh(mesh_shape, mesh_dim_names, preset=preset)


class PartitionSpec(tuple):
    """How a tensor's axes map onto mesh axes, one entry per tensor axis: a mesh axis
    name, a tuple of names, or None (not split). ``P("dp", None)`` splits axis 0 over
    the "dp" axis and keeps axis 1 whole; missing trailing entries are None."""

    def __new__(cls, *entries):
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(e) for e in self) + ")"


P = PartitionSpec
