"""Where the ranks of a p.shard_map meet: each collective call waits until every rank of
its group has made the same call, then one of them runs it in the Go core.

A rank's thread is never left waiting for a call that cannot come: when a rank of the
group has finished its function, failed, or waits at another collective while no rank
can move, every waiting rank gets a CollectiveError that names the ranks, the calls and
their lines, at once (not after a timeout). Ranks still computing are waited for.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

from .._core.errors import DeviceError, Location
from ..tensor_level.tensor import realize_observer


class CollectiveError(DeviceError):
    """Ranks disagree about a collective: one skipped it, called another, or passed
    tensors of another shape or dtype."""

    kind = "CollectiveError"


@dataclass
class Arrival:
    rank: int
    kind: str
    signature: tuple  # what every rank of the group must agree on
    location: Location
    payload: object
    issue_time: float  # the rank's simulated clock when it called (s)


@dataclass
class Pending:
    group: tuple
    seq: int
    arrivals: dict = field(default_factory=dict)  # rank -> Arrival
    running: bool = False
    done: bool = False
    results: Optional[dict] = None  # rank -> (value, end time)
    error: Optional[BaseException] = None


def _where(a: Arrival) -> str:
    return f"{a.kind} at {a.location}" if a.location else a.kind


class World:
    """The shared state of one shard_map call's ranks."""

    def __init__(self, mesh, nranks: int):
        self.mesh = mesh
        self.nranks = nranks
        self.cond = threading.Condition()
        self.state = ["running"] * nranks  # running | waiting | done | failed
        self.waiting_at: list = [None] * nranks  # the Pending a waiting rank is in
        self.pending: dict = {}  # (group, seq) -> Pending
        self.seqs: list = [dict() for _ in range(nranks)]  # rank -> group -> next seq
        self.log: list = []  # every collective run: dicts for the report
        # The first disagreement found (not one that follows from a rank that failed):
        # the error the caller sees, whichever rank raised first.
        self.first_error: Optional[CollectiveError] = None

    def _found(self, err: "CollectiveError") -> "CollectiveError":
        if self.first_error is None:
            self.first_error = err
        return err

    def finish(self, rank: int, failed: bool) -> None:
        with self.cond:
            self.state[rank] = "failed" if failed else "done"
            self.cond.notify_all()

    def meet(self, rank: int, group: tuple, arrival: Arrival, perform: Callable[[dict], dict]):
        """Waits for the group's matching calls; returns (value, end time) for this rank.
        perform(world, arrivals) runs once, in the last rank to arrive, and returns
        rank -> (value, end time, seconds). It gets the world it runs in as an argument
        (it captures none), so the call can be shipped to a world in another process
        (the Ray backend, ray_backend.py)."""
        with self.cond:
            seq = self.seqs[rank].get(group, 0)
            self.seqs[rank][group] = seq + 1
            key = (group, seq)
            pend = self.pending.setdefault(key, Pending(group, seq))
            self._check_agreement(pend, arrival)
            pend.arrivals[rank] = arrival
            if pend.error is None and len(pend.arrivals) == len(group):
                pend.running = True
                run_here = True
            else:
                run_here = False
                self.state[rank], self.waiting_at[rank] = "waiting", pend
                self.cond.notify_all()
        if run_here:
            try:
                results = perform(self, dict(pend.arrivals))
            except BaseException as e:  # the Go call failed: every rank of the group sees it
                with self.cond:
                    pend.error, pend.done = e, True
                    self.cond.notify_all()
                raise
            with self.cond:
                pend.results, pend.done = results, True
                self.cond.notify_all()
            return results[rank]
        with self.cond:
            while True:
                if pend.done or pend.error is not None:
                    self.state[rank], self.waiting_at[rank] = "running", None
                    if pend.error is not None:
                        raise pend.error
                    return pend.results[rank]
                if not pend.running:
                    err = self._stuck(pend)
                    if err is not None:
                        pend.error = err
                        self.cond.notify_all()
                        continue
                self.cond.wait(0.25)

    def _check_agreement(self, pend: Pending, a: Arrival) -> None:
        if pend.error is not None or not pend.arrivals:
            return
        first = next(iter(pend.arrivals.values()))
        if (first.kind, first.signature) != (a.kind, a.signature):
            # Named lower rank first: which of the two arrived first depends on threads.
            lo, hi = sorted((first, a), key=lambda r: r.rank)
            pend.error = self._found(CollectiveError(
                f"ranks {lo.rank} and {hi.rank} disagree at collective #{pend.seq} of group {list(pend.group)}: "
                f"rank {lo.rank} calls {_where(lo)} with {_sig(lo)}, rank {hi.rank} calls {_where(hi)} with {_sig(hi)}",
                location=a.location,
                suggestions=["every rank of a group must make the same collective calls in the same order, on tensors of the same shape and dtype"],
            ))
            self.cond.notify_all()

    def _stuck(self, pend: Pending) -> Optional[CollectiveError]:
        """An error if some rank of pend's group can never arrive."""
        missing = [r for r in pend.group if r not in pend.arrivals]
        arrived = sorted(pend.arrivals)
        some = pend.arrivals[arrived[0]]
        for r in missing:
            if self.state[r] in ("done", "failed"):
                how = "returned" if self.state[r] == "done" else "failed"
                err = CollectiveError(
                    f"rank {r} {how} without calling {_where(some)} (collective #{pend.seq} of group {list(pend.group)}), "
                    f"for which ranks {arrived} wait",
                    location=some.location,
                    suggestions=["every rank of a group must make the same collective calls; check the conditions around this call"],
                )
                # A rank that failed has its own error, the cause of this one.
                return self._found(err) if how == "returned" else err
        # Nobody can move: every rank still in the run waits, and no collective is running.
        live = [r for r in range(self.nranks) if self.state[r] not in ("done", "failed")]
        if live and all(self.state[r] == "waiting" and not self.waiting_at[r].running for r in live):
            others = [r for r in missing if self.waiting_at[r] is not None]
            if others:
                r = others[0]
                there = self.waiting_at[r]
                a = next(iter(there.arrivals.values()))
                return self._found(CollectiveError(
                    f"ranks {arrived} wait at {_where(some)} (collective #{pend.seq} of group {list(pend.group)}) while "
                    f"rank {r} waits at {_where(there.arrivals.get(r, a))} (collective #{there.seq} of group {list(there.group)}): "
                    f"the ranks call collectives in different orders",
                    location=some.location,
                    suggestions=["every rank of a group must make the same collective calls in the same order"],
                ))
        return None


def _sig(a: Arrival) -> str:
    return ", ".join(f"{k}={v}" for k, v in a.signature)


# --- the rank a thread runs, if any ------------------------------------------------------

_local = threading.local()


@dataclass
class RankContext:
    world: World
    rank: int
    clock: float = 0.0  # simulated seconds on this rank's compute stream
    comm_free: float = 0.0  # when this rank's communication stream is free
    compute_s: float = 0.0
    comm_s: float = 0.0
    wait_s: float = 0.0

    def charge(self, stats: dict) -> None:
        s = float(stats.get("seconds", 0.0))
        self.clock += s
        self.compute_s += s


def current() -> Optional[RankContext]:
    return getattr(_local, "ctx", None)


def enter(ctx: Optional[RankContext]) -> None:
    """Makes this thread run ctx's rank (None: no rank): every realisation the thread
    makes adds its simulated time to the rank's compute clock."""
    _local.ctx = ctx
    realize_observer.fn = None if ctx is None else ctx.charge
