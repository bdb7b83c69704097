"""Running a per-rank function on a group of ranks in threads of this process: what the
local backend of p.shard_map does for every rank, and a Ray worker for its own
(ray_backend.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from . import rendezvous as rv
from ..tensor_level.tensor import from_numpy
from .collectives import _host


@dataclass
class RankClock:
    """One rank's simulated clocks at the end of its function."""

    rank: int
    clock: float
    compute_s: float
    comm_s: float
    wait_s: float


@dataclass
class RankRun:
    """What running fn on every rank gave: each rank's outputs (host arrays) or error,
    its clocks, the collectives' log, and the first disagreement between ranks."""

    outs: list
    errs: list
    clocks: list
    log: list
    first_error: object = None


def run_rank(world, r: int, fn, shards: list, single_out: bool):
    """Runs rank r's function on its shards in this thread, in world; returns (outputs
    as host arrays or None, error or None, its RankClock). The world learns when the
    rank is done, so ranks waiting for it at a collective are told at once."""
    ctx = rv.RankContext(world, r)
    rv.enter(ctx)
    failed, outs, err = True, None, None
    try:
        res = fn(*[from_numpy(s) for s in shards])
        res = (res,) if single_out else tuple(res)
        outs = [_host(t, "shard_map", "output") for t in res]
        failed = False
    except BaseException as e:  # reported to the caller
        err = e
    finally:
        try:
            world.finish(r, failed)
        except BaseException as e:  # the world is another process's (Ray) and failed
            err = err or e
        rv.enter(None)
    return outs, err, RankClock(r, ctx.clock, ctx.compute_s, ctx.comm_s, ctx.wait_s)


def run_threads(world, ranks, fn, shards: dict, single_out: bool) -> dict:
    """run_rank for each of ranks in a thread of its own; rank -> its result."""
    results = {}

    def main(r):
        results[r] = run_rank(world, r, fn, shards[r], single_out)

    threads = [threading.Thread(target=main, args=(r,), name=f"pypto-rank-{r}", daemon=True) for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
