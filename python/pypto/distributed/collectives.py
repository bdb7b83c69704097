"""Collectives over the ranks of a mesh, computed and timed by the Go core
(device/collective.go): values in the order of the simulated algorithm, time by its
alpha-beta-gamma steps on the mesh's links."""

from __future__ import annotations

import ctypes
import json

import numpy as np

from . import rendezvous as rv
from .._core import lib as _lib
from .._core import validate as check
from .._core import dtypes
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import Tensor, from_numpy
from .mesh import Mesh

ALGORITHMS = ("auto", "mesh", "ring", "hd")
REDUCE_OPS = ("sum", "prod", "max", "min")


def run_collective(mesh: Mesh, kind: str, ranks, arrays, *, op="sum", algorithm="auto", root=0, count=None, dtype=None):
    """Runs one collective in the Go core over host arrays (one per rank of ``ranks``,
    C-contiguous, same dtype and size), or only times it when arrays is None (then
    ``count`` and ``dtype`` give the message). Returns (outputs, timing dict)."""
    if arrays is not None:
        dtype = dtypes.as_dtype(arrays[0].dtype)
        count = int(arrays[0].size)
    p = len(ranks)
    spec = {"mesh": mesh.preset, "kind": kind, "op": op, "algorithm": algorithm, "root": int(root),
            "dtype": dtype.code, "count": int(count), "ranks": [int(r) for r in ranks]}
    n_out = {"reduce_scatter": count // max(p, 1), "all_gather": count * p, "barrier": 0}.get(kind, count)
    ins = (ctypes.c_void_p * p)()
    outs = (ctypes.c_void_p * p)()
    results = None
    if arrays is not None:
        results = [np.empty(n_out, dtype=dtype.numpy) for _ in range(p)]
        for i, (a, o) in enumerate(zip(arrays, results)):
            ins[i] = a.__array_interface__["data"][0] if a.size else None
            outs[i] = o.__array_interface__["data"][0] if o.size else None
        timing = _lib.call_string(_lib.lib.pypto_collective, json.dumps(spec).encode(), ins, outs, p)
    else:
        timing = _lib.call_string(_lib.lib.pypto_collective, json.dumps(spec).encode(), None, None, p)
    return results, json.loads(timing)


def collective_time(kind: str, nbytes: int, mesh: Mesh, *, ranks=None, dtype="float32", algorithm="auto", op="sum") -> dict:
    """The simulated time of one collective of an ``nbytes`` message (one rank's share for
    all_gather) over ``ranks`` (default: all of the mesh), without data: a dict with
    ``seconds``, ``launch_seconds``, ``algorithm_seconds`` and the ``phases`` per tier."""
    fn = "collective_time"
    kind = check.choice(kind, "kind", fn, ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "send", "barrier"))
    nbytes = check.integer(nbytes, "nbytes", fn, lo=0)
    d = check.dtype(dtype, "dtype", fn)
    algorithm = check.choice(algorithm, "algorithm", fn, ALGORITHMS)
    ranks = tuple(range(mesh.size)) if ranks is None else tuple(ranks)
    if nbytes % d.itemsize:
        raise PyptoValueError(f"{fn}: nbytes {nbytes} is not a whole number of {d.name} elements")
    _, t = run_collective(mesh, kind, ranks, None, op=op, algorithm=algorithm, count=nbytes // d.itemsize, dtype=d)
    return t


# --- the calls users make ----------------------------------------------------------------


def _host(x, fn: str, name: str = "x") -> np.ndarray:
    """A rank's value as a C-contiguous host array."""
    if isinstance(x, Tensor):
        return np.ascontiguousarray(x.numpy())  # a rank's realisations charge its clock
    if isinstance(x, np.ndarray):
        dtypes.as_dtype(x.dtype)  # refuses dtypes PyPTO has no name for
        return np.ascontiguousarray(x)
    raise check.fail(fn, name, x, "a p.Tensor or a numpy array")


def _group(ctx, axis_name, fn: str) -> tuple:
    mesh = ctx.world.mesh
    if axis_name is not None:
        names = (axis_name,) if isinstance(axis_name, str) else axis_name
        if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
            raise check.fail(fn, "axis_name", axis_name, "a mesh axis name, a tuple of names, or None (every rank)")
        for n in names:
            if n not in mesh.axis_names:
                raise PyptoValueError(f"{fn}: axis_name: mesh axis {n!r} does not exist (axes: {', '.join(mesh.axis_names)})",
                                      location=user_location())
    return mesh.group(ctx.rank, axis_name)


class Work:
    """An asynchronous collective in flight (``async_op=True``, torch's convention): its
    communication runs on the rank's communication stream while the rank computes;
    ``wait()`` returns the result and makes the rank's compute wait for the transfer."""

    def __init__(self, ctx, value, end: float):
        self._ctx, self._value, self._end = ctx, value, end

    def wait(self):
        ctx = self._ctx
        if self._end > ctx.clock:
            ctx.wait_s += self._end - ctx.clock
            ctx.clock = self._end
        return self._value

    def is_completed(self) -> bool:
        return self._ctx.clock >= self._end


def _collective(fn: str, kind: str, x, *, axis_name, op="sum", algorithm="auto", root=0, async_op=False, post=None, extra=()):
    """One collective call of the running rank: meet the group, run, return the result
    as a p.Tensor (post(host array) shapes the flat output)."""
    ctx = rv.current()
    if ctx is None:
        raise PyptoValueError(
            f"p.distributed.{fn} is called outside a per-rank function",
            location=user_location(),
            suggestions=["call it inside a function run by p.shard_map(fn, mesh, in_specs, out_specs)",
                         "or time a collective without data with p.distributed.collective_time"],
        )
    algorithm = check.choice(algorithm, "algorithm", fn, ALGORITHMS)
    async_op = check.flag(async_op, "async_op", fn)
    group = _group(ctx, axis_name, fn)
    loc = user_location()
    arr = _host(x, fn) if x is not None else np.empty(0, np.float32)
    sig = (("shape", tuple(arr.shape)), ("dtype", str(arr.dtype)), ("op", op), ("algorithm", algorithm), ("root", root), *extra)
    issue = max(ctx.clock, ctx.comm_free)

    def perform(world, arrivals):
        ranks = tuple(sorted(arrivals))
        flats = [arrivals[r].payload.reshape(-1) for r in ranks]
        outs, t = run_collective(world.mesh, kind, ranks, flats, op=op, algorithm=algorithm, root=root)
        start = max(arrivals[r].issue_time for r in ranks)
        end = start + t["seconds"]
        world.log.append({"kind": kind, "group": list(ranks), "bytes": int(flats[0].nbytes), "start_s": start,
                          "seconds": t["seconds"], "phases": t["phases"], "location": str(arrivals[ranks[0]].location)})
        return {r: (o, end, t["seconds"]) for r, o in zip(ranks, outs)}

    out, end, secs = ctx.world.meet(ctx.rank, group, rv.Arrival(ctx.rank, kind, sig, loc, arr, issue), perform)
    ctx.comm_s += secs
    ctx.comm_free = end
    value = post(out) if post is not None else out
    result = from_numpy(value) if value is not None else None
    if async_op:
        return Work(ctx, result, end)
    if end > ctx.clock:  # the compute stream waits for the transfer
        ctx.wait_s += end - ctx.clock
        ctx.clock = end
    return result


def _reduce_op(op, fn):
    return check.choice(op, "op", fn, REDUCE_OPS)


def all_reduce(x, op: str = "sum", *, axis_name=None, algorithm: str = "auto", async_op: bool = False):
    """Every rank of the group gets the elementwise reduction (sum, prod, max, min) of
    the group's ``x`` (each rank's tensor of the same shape and dtype), computed in the
    order of the algorithm that runs it (see docs/distributed.md)."""
    op = _reduce_op(op, "all_reduce")
    shape = _shape_of(x)
    return _collective("all_reduce", "all_reduce", x, axis_name=axis_name, op=op, algorithm=algorithm, async_op=async_op,
                       post=lambda o: o.reshape(shape))


def _shape_of(x):
    if isinstance(x, (Tensor, np.ndarray)):
        return tuple(x.shape)
    raise check.fail("collective", "x", x, "a p.Tensor or a numpy array")


def _axis_and_shape(x, axis: int, fn: str):
    """The normalised index of ``axis`` of x, and x's shape."""
    shape = _shape_of(x)
    ax = check.axis(axis, "axis", fn, len(shape))
    return ax, shape


def all_gather(x, axis: int = 0, *, axis_name=None, tiled: bool = True, algorithm: str = "auto", async_op: bool = False):
    """The group's ``x`` concatenated along ``axis`` in group order (``tiled=False``:
    stacked along a new axis ``axis``, as JAX's all_gather)."""
    fn = "all_gather"
    ax, shape = _axis_and_shape(x, axis, fn)
    tiled = check.flag(tiled, "tiled", fn)
    arr = _host(x, fn)
    front = np.ascontiguousarray(np.moveaxis(arr, ax, 0))

    def post(o):
        parts = o.reshape((-1, *front.shape))  # (p, *front)
        stacked = np.moveaxis(parts, 1, ax + 1)  # (p, *shape)
        if not tiled:
            return np.ascontiguousarray(np.moveaxis(stacked, 0, ax))
        return np.concatenate(list(stacked), axis=ax)

    return _collective(fn, "all_gather", front, axis_name=axis_name, algorithm=algorithm, async_op=async_op, post=post,
                       extra=(("axis", ax), ("tiled", tiled)))


def reduce_scatter(x, op: str = "sum", axis: int = 0, *, axis_name=None, tiled: bool = True, algorithm: str = "auto",
                   async_op: bool = False):
    """The reduction of the group's ``x``, split along ``axis`` in group order: rank k
    gets part k. ``tiled=False`` (JAX's psum_scatter default) needs ``x.shape[axis]`` to
    equal the group's size and drops that axis."""
    fn = "reduce_scatter"
    op = _reduce_op(op, fn)
    ax, shape = _axis_and_shape(x, axis, fn)
    tiled = check.flag(tiled, "tiled", fn)
    ctx = rv.current()
    p = len(_group(ctx, axis_name, fn)) if ctx is not None else 1
    if shape[ax] % p or (not tiled and shape[ax] != p):
        need = f"equal to the group's {p} ranks" if not tiled else f"a multiple of the group's {p} ranks"
        raise PyptoValueError(f"{fn}: x.shape[{ax}] = {shape[ax]} must be {need}", location=user_location())
    arr = _host(x, fn)
    front = np.ascontiguousarray(np.moveaxis(arr, ax, 0))

    def post(o):
        part = o.reshape((shape[ax] // p, *front.shape[1:]))
        part = np.moveaxis(part, 0, ax)
        return np.ascontiguousarray(part if tiled else np.squeeze(part, ax))

    return _collective(fn, "reduce_scatter", front, axis_name=axis_name, op=op, algorithm=algorithm, async_op=async_op,
                       post=post, extra=(("axis", ax), ("tiled", tiled)))


def all_to_all(x, split_axis: int = 0, concat_axis: int = 0, *, axis_name=None, algorithm: str = "auto", async_op: bool = False):
    """Splits ``x`` along ``split_axis`` into one part per rank of the group, sends part j
    to rank j, and concatenates the parts received along ``concat_axis`` in group order
    (JAX's all_to_all with tiled=True)."""
    fn = "all_to_all"
    sa, shape = _axis_and_shape(x, split_axis, fn)
    ca = check.axis(concat_axis, "concat_axis", fn, len(shape))
    ctx = rv.current()
    p = len(_group(ctx, axis_name, fn)) if ctx is not None else 1
    if shape[sa] % p:
        raise PyptoValueError(f"{fn}: x.shape[{sa}] = {shape[sa]} is not a multiple of the group's {p} ranks",
                              location=user_location())
    arr = _host(x, fn)
    front = np.ascontiguousarray(np.moveaxis(arr, sa, 0))

    def post(o):
        parts = o.reshape((p, shape[sa] // p, *front.shape[1:]))
        parts = [np.moveaxis(part, 0, sa) for part in parts]
        return np.concatenate(parts, axis=ca)

    return _collective(fn, "all_to_all", front, axis_name=axis_name, algorithm=algorithm, async_op=async_op, post=post,
                       extra=(("split_axis", sa), ("concat_axis", ca)))


def broadcast(x, root: int = 0, *, axis_name=None, algorithm: str = "auto", async_op: bool = False):
    """Every rank of the group gets the ``x`` of the group's rank number ``root`` (its
    index in the group, ascending ranks). Every rank passes a tensor of the same shape."""
    fn = "broadcast"
    root = check.integer(root, "root", fn, lo=0)
    ctx = rv.current()
    if ctx is not None:
        p = len(_group(ctx, axis_name, fn))
        if root >= p:
            raise PyptoValueError(f"{fn}: root {root} is not an index into the group of {p} ranks", location=user_location())
    shape = _shape_of(x)
    return _collective(fn, "broadcast", x, axis_name=axis_name, root=root, algorithm=algorithm, async_op=async_op,
                       post=lambda o: o.reshape(shape))


def barrier(*, axis_name=None):
    """Waits until every rank of the group arrives (an all-reduce of nothing: its steps'
    latency)."""
    _collective("barrier", "barrier", None, axis_name=axis_name, post=lambda o: None)


def axis_index(axis_name: str) -> int:
    """The running rank's coordinate on a mesh axis (JAX's lax.axis_index)."""
    ctx = rv.current()
    if ctx is None:
        raise PyptoValueError("axis_index is called outside a per-rank function", location=user_location(),
                              suggestions=["call it inside a function run by p.shard_map"])
    mesh = ctx.world.mesh
    return mesh.coords(ctx.rank)[mesh._axis(axis_name)]


def rank() -> int:
    """The running rank's number in the mesh (row-major over its axes)."""
    ctx = rv.current()
    if ctx is None:
        raise PyptoValueError("rank is called outside a per-rank function", location=user_location(),
                              suggestions=["call it inside a function run by p.shard_map"])
    return ctx.rank


def psum(x, axis_name=None):
    """JAX's name for all_reduce(x, "sum", axis_name=...)."""
    return all_reduce(x, "sum", axis_name=axis_name)


def psum_scatter(x, axis_name=None, *, scatter_dimension: int = 0, tiled: bool = False):
    """JAX's psum_scatter: reduce_scatter(x, "sum", scatter_dimension, tiled=tiled)."""
    return reduce_scatter(x, "sum", scatter_dimension, axis_name=axis_name, tiled=tiled)


def ppermute(x, axis_name, perm):
    """JAX's ppermute: ``perm`` is a list of (source, destination) indices along the
    axis; each destination gets its source's ``x``, ranks no pair sends to get zeros.
    The pairs move at once, each over the link between its two chips."""
    fn = "ppermute"
    ctx = rv.current()
    if ctx is None:
        raise PyptoValueError(f"{fn} is called outside a per-rank function", location=user_location(),
                              suggestions=["call it inside a function run by p.shard_map"])
    group = _group(ctx, axis_name, fn)
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise check.fail(fn, "perm", perm, "a list of (source, destination) index pairs") from None
    if any(not (0 <= s < len(group) and 0 <= d < len(group)) for s, d in pairs) or \
            len({d for _, d in pairs}) != len(pairs) or len({s for s, _ in pairs}) != len(pairs):
        raise PyptoValueError(f"{fn}: perm {list(perm)} must pair distinct sources with distinct destinations among {len(group)} ranks",
                              location=user_location())
    shape = _shape_of(x)

    def perform(world, arrivals):
        ranks = tuple(sorted(arrivals))
        start = max(a.issue_time for a in arrivals.values())
        vals = {r: np.zeros_like(arrivals[r].payload) for r in ranks}
        longest = 0.0
        for s, d in pairs:
            src, dst = ranks[s], ranks[d]
            if src == dst:
                vals[dst] = arrivals[src].payload.copy()
                continue
            outs, t = run_collective(world.mesh, "send", (src, dst), [arrivals[src].payload.reshape(-1), np.zeros_like(arrivals[src].payload).reshape(-1)])
            vals[dst] = outs[1].reshape(arrivals[src].payload.shape)
            longest = max(longest, t["seconds"])
        world.log.append({"kind": "ppermute", "group": list(ranks), "bytes": int(arrivals[ranks[0]].payload.nbytes),
                          "start_s": start, "seconds": longest, "phases": [], "location": str(arrivals[ranks[0]].location)})
        return {r: (vals[r], start + longest, longest) for r in ranks}

    arr = _host(x, fn)
    issue = max(ctx.clock, ctx.comm_free)
    sig = (("shape", tuple(arr.shape)), ("dtype", str(arr.dtype)), ("perm", pairs))
    out, end, secs = ctx.world.meet(ctx.rank, group, rv.Arrival(ctx.rank, "ppermute", sig, user_location(), arr, issue), perform)
    ctx.comm_s += secs
    ctx.comm_free = end
    ctx.clock = max(ctx.clock, end)
    return from_numpy(out.reshape(shape))


def send(x, dst: int) -> None:
    """Sends ``x`` to mesh rank ``dst``, which must call ``recv`` with this rank as its
    source and the same shape and dtype (torch's send / recv). The message crosses the
    slowest tier between the two chips on the sender's communication stream, from the
    moment of the call (the receiver's buffer is taken as posted); the sender computes
    on, the receiver waits for the data."""
    _p2p("send", x, dst=dst)


def recv(src: int, shape, dtype="float32"):
    """Receives the tensor mesh rank ``src`` sends with ``send``."""
    d = check.dtype(dtype, "dtype", "recv")
    shp = check.shape(shape, "shape", "recv", symbolic=False)
    return _p2p("recv", np.zeros(shp, dtype=d.numpy), src=src)


def _p2p(fn, x, *, src=None, dst=None):
    ctx = rv.current()
    if ctx is None:
        raise PyptoValueError(f"{fn} is called outside a per-rank function", location=user_location(),
                              suggestions=["call it inside a function run by p.shard_map"])
    peer = check.integer(dst if fn == "send" else src, "dst" if fn == "send" else "src", fn, lo=0, hi=ctx.world.mesh.size - 1)
    if peer == ctx.rank:
        raise PyptoValueError(f"{fn}: rank {peer} is this rank itself", location=user_location())
    s, d = (ctx.rank, peer) if fn == "send" else (peer, ctx.rank)
    arr = _host(x, fn)

    def perform(world, arrivals):
        # The receiver's buffer is posted ahead (as pipelines do), so the transfer starts
        # when the sender sends; the receiver waits for its last byte.
        start = arrivals[s].issue_time
        outs, t = run_collective(world.mesh, "send", (s, d), [arrivals[s].payload.reshape(-1), arrivals[d].payload.reshape(-1)])
        world.log.append({"kind": "send", "group": [s, d], "bytes": int(arrivals[s].payload.nbytes), "start_s": start,
                          "seconds": t["seconds"], "phases": t["phases"], "location": str(arrivals[s].location)})
        end = start + t["seconds"]
        return {s: (None, end, t["seconds"]), d: (outs[1].reshape(arrivals[d].payload.shape), end, t["seconds"])}

    sig = (("pair", (s, d)), ("shape", tuple(arr.shape)), ("dtype", str(arr.dtype)))
    issue = max(ctx.clock, ctx.comm_free)
    out, end, secs = ctx.world.meet(ctx.rank, (min(s, d), max(s, d)), rv.Arrival(ctx.rank, "send/recv", sig, user_location(), arr, issue), perform)
    ctx.comm_s += secs
    if fn == "send":  # the sender's compute goes on while its communication stream sends
        ctx.comm_free = end
        return None
    if end > ctx.clock:
        ctx.wait_s += end - ctx.clock
        ctx.clock = end
    return from_numpy(out)
