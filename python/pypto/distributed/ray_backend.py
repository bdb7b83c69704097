"""The Ray backend of p.shard_map: the ranks of a mesh run in groups inside Ray actors
(worker processes, on one host or many), the driver coordinating.

Each worker runs its ranks in threads exactly as the local backend does (the same
run_rank), but their collectives meet in a coordinator actor that holds the run's
rendezvous (a World): a rank's call ships its payload and the collective's perform
function there, the last rank of the group to arrive runs the collective in the
coordinator's Go core, in the algorithm's order, and every rank gets its part back. The
values, their bits and the simulated times are therefore those of the local backend;
only the bytes travel through Ray.

A worker process that dies (killed, out of memory) is noticed by the driver whatever
the moment: before the run (between runs, or before its first task: every run first
asks each worker it will use where it is), during the run (its task fails: its ranks
are marked failed in the rendezvous, so the ranks of the other workers waiting for them
stop at once with a CollectiveError), or after its ranks returned, while the driver
gathers the others' (every worker is asked again at the end). The run then raises
WorkerError naming the worker, its ranks, its process and host; an error of another
worker that follows from the death is not what the caller sees. The driver keeps
everything it holds; the next run starts a fresh worker in place of the dead one.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import threading

from . import rendezvous as rv
from .._core.errors import PyptoError, PyptoValueError
from ..runtime.device import get_device, set_device
from .ranks import RankRun, run_threads


class WorkerError(PyptoError):
    """A Ray worker process running ranks of a p.shard_map died during the run."""

    kind = "WorkerError"


def _ray():
    """The ray module, initialised (a local cluster when none is running or named by
    RAY_ADDRESS)."""
    try:
        import ray
    except ImportError:
        raise PyptoValueError("shard_map: backend 'ray' needs Ray, which is not installed",
                              suggestions=["pip install 'pypto[distributed]'", 'or use backend="local" (every rank in this process)']) from None
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    return ray


# --- the actors ---------------------------------------------------------------------------


class _Coordinator:
    """Holds the rendezvous of the runs in flight, by run id. A threaded actor: every
    rank waiting at a collective occupies one of its threads."""

    def __init__(self):
        self.worlds = {}

    def start(self, run: int, mesh, nranks: int) -> None:
        self.worlds[run] = rv.World(mesh, nranks)

    def meet(self, run: int, rank: int, group: tuple, arrival, perform):
        world = self.worlds.get(run)
        if world is None:  # the driver ended the run (a worker died): nobody else comes
            return "err", rv.CollectiveError(f"rank {rank}: the run ended before this collective could take place")
        try:
            return "ok", world.meet(rank, group, arrival, perform)
        except BaseException as e:  # the rank re-raises it in its own process
            return "err", _portable(e)

    def finish(self, run: int, rank: int, failed: bool) -> None:
        world = self.worlds.get(run)
        if world is not None:
            world.finish(rank, failed)

    def outcome(self, run: int):
        world = self.worlds.pop(run, None)
        if world is None:
            return [], None
        return world.log, _portable(world.first_error) if world.first_error else None


class _RemoteWorld:
    """What a rank in a worker sees as its world: the coordinator's, through Ray."""

    def __init__(self, ray, coordinator, run: int, mesh, nranks: int):
        self._ray, self._coord, self._run = ray, coordinator, run
        self.mesh, self.nranks = mesh, nranks

    def meet(self, rank, group, arrival, perform):
        status, value = self._ray.get(self._coord.meet.remote(self._run, rank, group, arrival, perform))
        if status == "err":
            raise value
        return value

    def finish(self, rank, failed) -> None:
        self._ray.get(self._coord.finish.remote(self._run, rank, failed))


class _RankWorker:
    """Runs groups of ranks in one worker process."""

    def where(self):
        return os.getpid(), socket.gethostname()

    def run(self, run: int, device: str, fn, mesh, ranks, shards, single_out: bool, coordinator, nranks: int):
        import ray

        if get_device() != device:
            set_device(device)
        world = _RemoteWorld(ray, coordinator, run, mesh, nranks)
        res = run_threads(world, ranks, fn, dict(zip(ranks, shards)), single_out)
        return [(r, res[r][0], _portable(res[r][1]) if res[r][1] is not None else None, res[r][2]) for r in ranks]


def _portable(e: BaseException) -> BaseException:
    """e if it survives pickling, else a PyptoError that says what it was."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return PyptoError(f"{type(e).__name__}: {e}")


# --- the driver's side ----------------------------------------------------------------------

_lock = threading.Lock()
_session = None  # the Ray job the actors below belong to
_workers: list = []  # [actor handle, (pid, host)] of live workers, reused across runs
_coordinators: dict = {}  # max_concurrency -> actor handle
_runs = iter(range(1, 1 << 62))
# Threads per worker: runs of several driver threads may be in flight on one worker at
# once (each run's ranks wait only for ranks of the same run).
_WORKER_THREADS = 256


def _forget_stale(ray) -> None:
    """Drops the actors of an earlier Ray session (after ray.shutdown and ray.init)."""
    global _session
    job = ray.get_runtime_context().get_job_id()
    if job != _session:
        _session = job
        _workers.clear()
        _coordinators.clear()


def _coordinator(ray, nranks: int):
    conc = 8
    while conc < 2 * nranks + 4:
        conc *= 2
    with _lock:
        _forget_stale(ray)
        c = _coordinators.get(conc)
        if c is None:
            actor = ray.remote(num_cpus=0, max_concurrency=conc)(_Coordinator)
            c = _coordinators[conc] = actor.remote()
        return c


def _pool(ray, n: int) -> list:
    """n workers, started when fewer are held, spread over the cluster's nodes. Each
    is asked where it runs (new ones) or whether it still does (the others):
    _dead_workers tells which died since."""
    with _lock:
        _forget_stale(ray)
        while len(_workers) < n:
            actor = ray.remote(num_cpus=0, max_restarts=0, max_concurrency=_WORKER_THREADS,
                               scheduling_strategy="SPREAD")(_RankWorker).remote()
            _workers.append([actor, None])
        return _workers[:n]


def _dead_workers(ray, pool: list) -> list:
    """The indices in pool of the workers whose process is gone; learns the process
    and host of those that answer for the first time."""
    answers = [w[0].where.remote() for w in pool]
    dead = []
    for i, (w, ref) in enumerate(zip(pool, answers)):
        try:
            where = ray.get(ref)
        except ray.exceptions.RayActorError:
            dead.append(i)
            continue
        if w[1] is None:
            w[1] = where
    return dead


def _drop(worker) -> None:
    with _lock:
        if worker in _workers:
            _workers.remove(worker)


def _pickle_by_value(ray, fn) -> None:
    """Ships fn's module by value when workers may not import it (a script or a test
    file); installed packages, pypto's included, travel by reference."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(mod, "__file__", None) or ""
    if mod is None or mod.__name__ == "__main__" or "site-packages" in path or "dist-packages" in path \
            or mod.__name__.split(".")[0] == "pypto":
        return
    ray.cloudpickle.register_pickle_by_value(mod)


def default_workers(ray, nranks: int) -> int:
    return max(1, min(nranks, int(ray.cluster_resources().get("CPU", 1))))


def run_ranks(fn, mesh, shards: list, single_out: bool, workers):
    """Runs fn on every rank of mesh in Ray workers; returns a _shard_map.RankRun."""
    ray = _ray()
    n = mesh.size
    w = min(n, workers or default_workers(ray, n))
    pool = _pool(ray, w)
    groups = [list(range(i * n // w, (i + 1) * n // w)) for i in range(w)]
    gone = _dead_workers(ray, pool)
    if gone:  # died between runs, or before its first task: nothing of this run started
        _raise_dead(pool, groups, [(i, None) for i in gone], "before the run (while idle)", "no rank of this run started")
    coord = _coordinator(ray, n)
    with _lock:
        run = next(_runs)
    ray.get(coord.start.remote(run, mesh, n))
    _pickle_by_value(ray, fn)
    device = get_device()
    pending = {pool[i][0].run.remote(run, device, fn, mesh, g, [shards[r] for r in g], single_out, coord, n): i
               for i, g in enumerate(groups)}
    outs, errs, clocks = [None] * n, [None] * n, [None] * n
    dead, broken = [], []
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        i = pending.pop(done[0])
        try:
            for r, o, e, c in ray.get(done[0]):
                outs[r], errs[r], clocks[r] = o, e, c
        except ray.exceptions.RayActorError as cause:
            dead.append((i, cause))
            for r in groups[i]:  # the others' ranks waiting for these stop now
                ray.get(coord.finish.remote(run, r, True))
        except Exception as cause:  # the worker's task failed outside its ranks' code
            broken.append((i, cause))
            for r in groups[i]:
                ray.get(coord.finish.remote(run, r, True))
    log, first_error = ray.get(coord.outcome.remote(run))
    if dead:
        _raise_dead(pool, groups, dead, "during the run", "the other ranks were stopped")
    late = _dead_workers(ray, pool)
    if late:  # its ranks had returned; it died while the driver gathered the others'
        _raise_dead(pool, groups, [(i, None) for i in late], "while the driver gathered the run's results",
                    "the run's results are incomplete")
    if broken:
        i, cause = broken[0]
        g = groups[i]
        raise PyptoError(f"Ray worker {i} (ranks {g[0]}-{g[-1]}) failed outside its ranks' code: {type(cause).__name__}",
                         causes=[str(cause).splitlines()[0] if str(cause) else type(cause).__name__])
    return RankRun(outs, errs, clocks, log, first_error)


def _raise_dead(pool: list, groups: list, dead: list, when: str, consequence: str):
    """Drops the dead workers (the next run starts fresh ones) and raises WorkerError
    naming the first: its index, ranks, process and host."""
    for i, _ in dead:
        _drop(pool[i])
    i, cause = dead[0]
    g = groups[i]
    pid, host = pool[i][1] or ("unknown (it died before reporting it)", "an unknown host")
    more = f"; workers {', '.join(str(j) for j, _ in dead[1:])} died too" if len(dead) > 1 else ""
    raise WorkerError(
        f"Ray worker {i} (ranks {g[0]}-{g[-1]}, process {pid} on {host}) died {when}; {consequence}{more}",
        causes=[str(cause).splitlines()[0] if cause is not None and str(cause) else "the worker's process is gone"],
        suggestions=["run again: a fresh worker replaces the dead one",
                     "check the worker's memory and the Ray logs (/tmp/ray/session_latest/logs)"])


