"""p.shard_map: one function run by every rank of a mesh on its shards of the inputs.

Each rank runs in its own thread (the Go core releases the GIL, so ranks compute in
parallel); its tensor ops run on the current device as in eager code, and its
collectives meet the other ranks' in the rendezvous. Every rank keeps a simulated clock:
the simulated time of the work it realises, then each collective from the moment the
last rank of its group calls it (async_op=True collectives run on a separate
communication stream and overlap the rank's compute until ``wait()``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from . import rendezvous as rv
from .._core import validate as check
from .._core.errors import PyptoError, PyptoValueError
from .._core.location import user_location
from ..runtime.device import record_mesh_run
from ..tensor_level.tensor import from_numpy
from .collectives import _host
from .mesh import Mesh, PartitionSpec
from .ranks import RankRun, run_threads


@dataclass
class RankReport:
    rank: int
    coords: tuple
    total_s: float  # the rank's simulated clock at the end
    compute_s: float
    comm_s: float  # time of the collectives it took part in
    wait_s: float  # time its compute stream stood waiting for communication


@dataclass
class ShardMapReport:
    """The simulated timeline of the last p.shard_map run: ``seconds`` (the slowest
    rank), ``ranks`` (a RankReport each), ``collectives`` (each run: kind, group, bytes,
    start, seconds, phases per tier, the user's line), and ``comm_share`` (communication
    seconds over the total, of the slowest rank)."""

    seconds: float
    ranks: list = field(default_factory=list)
    collectives: list = field(default_factory=list)

    @property
    def comm_share(self) -> float:
        r = max(self.ranks, key=lambda r: r.total_s)
        return r.comm_s / r.total_s if r.total_s else 0.0


_last = threading.local()


def mesh_summary(report: ShardMapReport, mesh: Mesh) -> dict:
    """What p.last_stats() says of a mesh run: its slowest rank and its collectives."""
    slow = max(report.ranks, key=lambda r: r.total_s)
    return {
        "mesh": True,
        "seconds": report.seconds,
        "cycles": round(report.seconds * mesh.info["clock_hz"]),
        "ranks": len(report.ranks),
        "slowest_rank": slow.rank,
        "compute_seconds": slow.compute_s,
        "comm_seconds": slow.comm_s,
        "wait_seconds": slow.wait_s,
        "collectives": len(report.collectives),
        "comm_share": report.comm_share,
        "report": "p.distributed.last_report() has the timeline of every rank and collective",
    }


def last_report():
    """The ShardMapReport of the most recent p.shard_map run in this thread, or None."""
    return getattr(_last, "report", None)


def _spec_axes(spec, ndim: int, mesh: Mesh, what: str):
    """A PartitionSpec as a list of tuples of mesh axis names, one per tensor axis."""
    if spec is None:
        spec = PartitionSpec()
    if not isinstance(spec, tuple):
        raise check.fail("shard_map", what, spec, 'a PartitionSpec, e.g. P("dp", None), or None (replicated)')
    if len(spec) > ndim:
        raise PyptoValueError(f"shard_map: {what} {spec!r} has {len(spec)} entries for a tensor of {ndim} dimensions")
    out, used = [], set()
    for e in tuple(spec) + (None,) * (ndim - len(spec)):
        names = () if e is None else ((e,) if isinstance(e, str) else tuple(e))
        for n in names:
            if n not in mesh.axis_names:
                raise PyptoValueError(f"shard_map: {what} names mesh axis {n!r}, which does not exist (axes: {', '.join(mesh.axis_names)})")
            if n in used:
                raise PyptoValueError(f"shard_map: {what} uses mesh axis {n!r} twice")
            used.add(n)
        out.append(names)
    return out


def _part(mesh: Mesh, rank: int, names) -> tuple:
    """(index, count) of a rank's part along one tensor axis split over mesh axes."""
    co = mesh.coords(rank)
    idx, cnt = 0, 1
    for n in names:
        a = mesh.axis_names.index(n)
        idx, cnt = idx * mesh.shape[a] + co[a], cnt * mesh.shape[a]
    return idx, cnt


def _shard(arr: np.ndarray, axes, mesh: Mesh, rank: int, what: str) -> np.ndarray:
    sl = []
    for d, names in enumerate(axes):
        idx, cnt = _part(mesh, rank, names)
        if arr.shape[d] % cnt:
            raise PyptoValueError(f"shard_map: {what}: axis {d} of size {arr.shape[d]} does not split evenly into {cnt} parts ({'x'.join(names)})")
        k = arr.shape[d] // cnt
        sl.append(slice(idx * k, (idx + 1) * k))
    return arr[tuple(sl)]


def _assemble(parts: list, axes, mesh: Mesh) -> np.ndarray:
    """The global array from each rank's output part, per the out spec: parts along
    named axes are laid side by side; for mesh axes the spec leaves out (replicated)
    the part of coordinate 0 stands for all."""
    first = parts[0]
    cnts = [_part(mesh, 0, names)[1] for names in axes]
    out = np.empty([s * c for s, c in zip(first.shape, cnts)], dtype=first.dtype)
    for r, part in enumerate(parts):
        if part.shape != first.shape or part.dtype != first.dtype:
            raise PyptoValueError(f"shard_map: rank {r} returned shape {part.shape} {part.dtype}, rank 0 {first.shape} {first.dtype}")
        sl = []
        for d, names in enumerate(axes):
            idx, _ = _part(mesh, r, names)
            sl.append(slice(idx * first.shape[d], (idx + 1) * first.shape[d]))
        out[tuple(sl)] = part
    return out


BACKENDS = ("local", "ray")


def run_ranks_local(fn, mesh: Mesh, shards: list, single_out: bool) -> RankRun:
    """Every rank in a thread of this process (the Go core releases the GIL)."""
    world = rv.World(mesh, mesh.size)
    res = run_threads(world, range(mesh.size), fn, dict(enumerate(shards)), single_out)
    return RankRun([res[r][0] for r in range(mesh.size)], [res[r][1] for r in range(mesh.size)],
                   [res[r][2] for r in range(mesh.size)], world.log, world.first_error)


_SPECS = "a PartitionSpec such as P(\"dp\", None), None (whole on every rank), or a list of them, one per tensor"


def _is_spec(s) -> bool:
    if s is None:
        return True
    if not isinstance(s, tuple):
        return False
    return all(e is None or isinstance(e, str) or (isinstance(e, tuple) and all(isinstance(n, str) for n in e)) for e in s)


def _check_specs(specs, name: str) -> None:
    if _is_spec(specs) and (specs is None or isinstance(specs, PartitionSpec)):
        return
    if isinstance(specs, (list, tuple)) and all(_is_spec(s) for s in specs):
        return
    raise check.fail("shard_map", name, specs, _SPECS)


def shard_map(fn, mesh: Mesh, in_specs, out_specs, *, backend: str = "local", workers=None):
    """Returns a function that runs ``fn`` on every rank of ``mesh`` (JAX's shard_map):
    each input is split by its PartitionSpec in ``in_specs`` (a spec per positional
    argument; None or P() for an input every rank gets whole), ``fn`` gets the rank's
    shards as p.Tensors and may call the collectives of p.distributed, and its outputs
    (a tensor or a tuple) are put back together by ``out_specs``. The call returns
    p.Tensors; ``p.distributed.last_report()`` gives the simulated timeline.

    ``backend="local"`` runs every rank in a thread of this process; ``backend="ray"``
    runs groups of ranks in ``workers`` Ray actors (default: one per CPU of the Ray
    cluster, at most one per rank), with the same values, bits and simulated times
    (docs/distributed.md, "Ray")."""
    if not callable(fn):
        raise check.fail("shard_map", "fn", fn, "a function of the per-rank shards")
    if not isinstance(mesh, Mesh):
        raise check.fail("shard_map", "mesh", mesh, "a p.distributed.Mesh")
    backend = check.choice(backend, "backend", "shard_map", BACKENDS)
    workers = check.integer(workers, "workers", "shard_map", lo=1, optional=True)
    _check_specs(in_specs, "in_specs")
    _check_specs(out_specs, "out_specs")
    single_out = not isinstance(out_specs, list) and (out_specs is None or isinstance(out_specs, PartitionSpec))

    def run(*args):
        specs = in_specs if isinstance(in_specs, (list, tuple)) and not isinstance(in_specs, PartitionSpec) else (in_specs,)
        if len(specs) != len(args):
            raise PyptoValueError(f"shard_map: {len(args)} arguments for {len(specs)} in_specs", location=user_location())
        host = [_host(a, "shard_map", f"argument {i}") for i, a in enumerate(args)]
        in_axes = [_spec_axes(s, h.ndim, mesh, f"in_specs[{i}]") for i, (s, h) in enumerate(zip(specs, host))]
        shards = [[np.ascontiguousarray(_shard(h, ax, mesh, r, f"argument {i}")) for i, (h, ax) in enumerate(zip(host, in_axes))]
                  for r in range(mesh.size)]
        if backend == "ray":
            from . import ray_backend as _ray_backend

            ranks = _ray_backend.run_ranks(fn, mesh, shards, single_out, workers)
        else:
            ranks = run_ranks_local(fn, mesh, shards, single_out)
        outs, errs = ranks.outs, ranks.errs
        failed = [(r, e) for r, e in enumerate(errs) if e is not None]
        if failed:
            # The first cause: a disagreement between ranks (it names every rank
            # involved), else the lowest rank's own failure (other ranks' errors follow
            # from it).
            if ranks.first_error is not None:
                raise ranks.first_error
            r, e = next(((r, e) for r, e in failed if not isinstance(e, rv.CollectiveError)), failed[0])
            if isinstance(e, PyptoError) and not isinstance(e, rv.CollectiveError):
                e.message = f"rank {r}: {e.message}"
            raise e
        ospecs = (out_specs,) if single_out else tuple(out_specs)
        n_out = len(outs[0])
        if n_out != len(ospecs):
            raise PyptoValueError(f"shard_map: fn returned {n_out} outputs for {len(ospecs)} out_specs")
        results = []
        for k, spec in enumerate(ospecs):
            parts = [outs[r][k] for r in range(mesh.size)]
            axes = _spec_axes(spec, parts[0].ndim, mesh, f"out_specs[{k}]")
            results.append(from_numpy(_assemble(parts, axes, mesh)))
        report = ShardMapReport(
            seconds=max(c.clock for c in ranks.clocks),
            ranks=[RankReport(c.rank, mesh.coords(c.rank), c.clock, c.compute_s, c.comm_s, c.wait_s) for c in ranks.clocks],
            collectives=sorted(ranks.log, key=lambda c: c["start_s"]),
        )
        _last.report = report
        record_mesh_run(mesh_summary(report, mesh))
        return results[0] if single_out else tuple(results)

    return run
