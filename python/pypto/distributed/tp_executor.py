"""The executor p.compile returns for parallel_strategy="model_parallel" and "hybrid":
the model traced once per input signature, planned by the tensor-parallel pass
(tp_plan.py) and replayed on every rank of a (dp, tp) mesh through p.shard_map, with
the planned all-reduces between the ranks of each tp group."""

from __future__ import annotations

import ctypes
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import tp_plan as tpp
from .._core import lib as _lib
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..runtime.tracing import placeholder, trace_function
from ..tensor_level.shape_ops import reshape, stack
from ..tensor_level.tensor import Tensor, apply, from_numpy
from .collectives import psum
from .mesh import Mesh, PartitionSpec
from .shard_map import last_report, shard_map


@dataclass
class TensorParallelReport:
    """What the tensor-parallel pass did to a model: ``tp`` and ``dp`` sizes, ``pairs``
    (each row-parallel node with the column-parallel nodes feeding it, and the one
    all-reduce after it: group, bytes per rank and call), ``weights`` (every split
    capture: node, full and per-rank shapes, axis), ``reshapes`` (the per-rank shapes of
    the reshapes that split heads), ``replicated`` (candidates left whole, with the
    reason) and ``all_reduce_bytes`` (per rank and model call). ``sharded`` is False
    when no pair was found: every rank then runs the whole model."""

    model: str
    tp: int
    dp: int
    pairs: list = field(default_factory=list)
    weights: list = field(default_factory=list)
    reshapes: list = field(default_factory=list)
    replicated: list = field(default_factory=list)

    @property
    def sharded(self) -> bool:
        return bool(self.pairs)

    @property
    def all_reduce_bytes(self) -> int:
        return sum(p["bytes"] for p in self.pairs)

    def as_dict(self) -> dict:
        return {"model": self.model, "tp": self.tp, "dp": self.dp, "sharded": self.sharded, "pairs": self.pairs,
                "weights": self.weights, "reshapes": self.reshapes, "replicated": self.replicated,
                "all_reduce_bytes": self.all_reduce_bytes}  # fmt: skip

    def summary(self) -> str:
        """One line: pairs, split weights, all-reduces."""
        if not self.sharded:
            return f"no column-/row-parallel pair: replicated on {self.tp} ranks"
        cols = sum(len(p["columns"]) for p in self.pairs)
        return (f"{len(self.pairs)} pairs ({cols} column-, {len(self.pairs)} row-parallel nodes), {len(self.weights)} "
                f"captured tensors split, {len(self.pairs)} all-reduces, {self.all_reduce_bytes} bytes per rank")

    def __str__(self) -> str:
        lines = [f"tensor parallel {self.model}: tp={self.tp}, dp={self.dp}"]
        if not self.sharded:
            lines.append("  no column-/row-parallel pair found: the model runs whole (replicated) on every rank")
        for p in self.pairs:
            cols = ", ".join(p["columns"])
            lines.append(f"  pair: column-parallel {cols} -> row-parallel {p['row']}; all_reduce over tp, "
                         f"{p['bytes']} bytes per rank")
        for w in self.weights:
            lines.append(f"  weight {w['name']} {w['shape']} -> {w['local_shape']} per rank (axis {w['axis']}) for {w['node']}")
        for r in self.reshapes:
            lines.append(f"  reshape {r['node']} -> {r['local_shape']} per rank")
        for r in self.replicated:
            lines.append(f"  replicated {r['node']}: {r['reason']}")
        return "\n".join(lines)


def _sizes(config) -> tuple:
    """(dp, tp) of a model_parallel or hybrid config, with errors saying how to fix it."""
    shape, size = config.device_mesh, int(np.prod(config.device_mesh))
    if config.parallel_strategy == "model_parallel":
        for name in ("data_parallel_size", "pipeline_parallel_size"):
            if (getattr(config, name) or 1) != 1:
                raise PyptoValueError(
                    f"p.compile: parallel_strategy 'model_parallel' shards the weights over all {size} ranks, "
                    f"so {name}={getattr(config, name)} does not fit it", location=user_location(),
                    suggestions=['for data and tensor parallelism together use parallel_strategy="hybrid", '
                                 'device_mesh=[dp, tp], mesh_axis_names=("dp", "tp")'])  # fmt: skip
        return 1, config.tensor_parallel_size or size
    names = config.mesh_axis_names or (("dp", "tp") if len(shape) == 2 else None)
    if names is None or len(shape) != 2 or set(names) != {"dp", "tp"}:
        raise PyptoValueError(
            f"p.compile: parallel_strategy 'hybrid' needs a 2-D device_mesh with axes named 'dp' and 'tp', "
            f"got device_mesh={list(shape)}, mesh_axis_names={names}", location=user_location(),
            suggestions=['e.g. device_mesh=[2, 2], mesh_axis_names=("dp", "tp"): the batch splits over dp, '
                         'the weights over tp'])  # fmt: skip
    tp, dp = shape[names.index("tp")], shape[names.index("dp")]
    for name, axis, want in (("tensor_parallel_size", "tp", tp), ("data_parallel_size", "dp", dp)):
        got = getattr(config, name)
        if got is not None and got != want:
            raise PyptoValueError(
                f"p.compile: {name}={got} but the mesh's {axis} axis has {want} ranks "
                f"(device_mesh={list(shape)}, mesh_axis_names={tuple(names)})", location=user_location(),
                suggestions=[f"set {name}={want} or leave it out (the mesh says it)"])  # fmt: skip
    return dp, tp


class _Planned:
    """One input signature's trace, plan, captured tensors and report."""

    def __init__(self, fn, name: str, types: list, tp: int, dp: int):
        tracing = threading.local()
        tr = trace_function(fn, name, [placeholder(s, d) for s, d in types], tracing)
        doc = tr.json()
        if tr.structure == "list":
            raise PyptoValueError(f"p.compile: {name} returns a list; return a p.Tensor or a tuple of them for model_parallel",
                                  location=user_location())
        self.structure = tr.structure
        nodes = [tpp.Node.of(d) for d in doc["nodes"]]
        self.outputs = list(doc["outputs"])
        if not self.outputs:
            raise PyptoValueError(f"p.compile: {name} computes nothing to run tensor-parallel (it returns its inputs)",
                                  location=user_location())
        self.plan = tpp.plan(nodes, self.outputs, tp, model=name)
        self.n_inputs = len(types)
        self.constants = {}
        for n in nodes:
            if n.role == "constant":
                h = _lib.Handle()
                _lib.call(_lib.lib.pypto_trace_constant, tr.handle, int(n.name[2:]), ctypes.byref(h))
                self.constants[n.id] = Tensor._wrap(h.value).numpy()
        # The per-rank views of the captures: whole, or split along one axis.
        self.views: list = []  # (constant node id, axis or None)
        self.slot: dict = {}
        for n in nodes:
            if n.role != "op":
                continue
            for k, i in enumerate(n.inputs):
                if nodes[i].role == "constant":
                    key = (i, self.plan.splits.get((n.id, k)))
                    if key not in self.slot:
                        self.slot[key] = len(self.views)
                        self.views.append(key)
        self.report = _report(self.plan, name, tp, dp)

    def view_specs(self) -> list:
        return [None if ax is None else PartitionSpec(*([None] * ax), "tp") for _, ax in self.views]

    def view_data(self) -> list:
        return [self.constants[i] for i, _ in self.views]

    def replay(self, args: list, views: list) -> list:
        """The graph on one rank: its inputs, its views of the captures, the planned
        per-rank reshapes and an all-reduce over tp after each row-parallel node."""
        plan, nodes, env = self.plan, self.plan.nodes, {}
        for n in nodes:
            if n.role == "input":
                env[n.id] = args[int(n.name[3:])]
                continue
            if n.role != "op":
                continue
            ins = []
            for k, i in enumerate(n.inputs):
                if nodes[i].role == "constant":
                    ins.append(views[self.slot[(i, plan.splits.get((n.id, k)))]])
                else:
                    ins.append(env[i])
            attrs = n.attrs
            if n.id in plan.reshapes:
                attrs = {**attrs, "shape": plan.reshapes[n.id][1]}
            bias = plan.reduce.get(n.id)
            if bias is not None:
                ins, b = ins[:bias], ins[bias]
            y = apply(n.op, ins, attrs or None)
            if n.id in plan.reduce:
                y = psum(y, "tp")
                if bias is not None:
                    y = y + b
            env[n.id] = y
        return [env[o] for o in self.outputs]


def _report(plan, model: str, tp: int, dp: int) -> TensorParallelReport:
    nodes = plan.nodes
    r = TensorParallelReport(model, tp, dp)
    for nid in sorted(plan.reduce):
        r.pairs.append({"row": nodes[nid].describe(), "columns": [nodes[c].describe() for c in plan.pairs[nid]],
                        "collective": "all_reduce", "group": "tp", "bytes": tpp.nbytes(nodes[nid])})  # fmt: skip
    for (nid, k), axis in sorted(plan.splits.items()):
        c = nodes[nodes[nid].inputs[k]]
        local = list(c.shape)
        local[axis] //= tp
        r.weights.append({"name": c.name, "shape": list(c.shape), "local_shape": local, "axis": axis, "node": nodes[nid].describe()})
    for nid, (_, local) in sorted(plan.reshapes.items()):
        r.reshapes.append({"node": nodes[nid].describe(), "local_shape": list(local)})
    for nid, why in sorted(plan.replicated.items()):
        r.replicated.append({"node": nodes[nid].describe(), "reason": why})
    return r


class TensorParallelExecutor:
    """Runs a model tensor-parallel (and data-parallel over "dp" for hybrid) on a mesh.
    ``run(inputs)``: a list with one model input (or tuple of inputs) per request gives a
    list of outputs, the requests spread over the dp groups (each group runs its share
    one after another, tensor-parallel); one input (or tuple) is one batch, split along
    axis 0 over dp. ``report`` is what the pass sharded (TensorParallelReport),
    ``last_report`` the last run's timeline (p.distributed's ShardMapReport) and
    ``info()`` both as a dict."""

    def __init__(self, fn, config):
        self.fn, self.config = fn, config
        self.dp, self.tp = _sizes(config)
        self.mesh = Mesh((self.dp, self.tp), ("dp", "tp"), preset=config.preset)
        self._name = getattr(fn, "__name__", type(fn).__name__)
        self._planned: dict = {}
        self._lock = threading.Lock()
        self.report = None
        self.last_report = None

    def _plan(self, types: list) -> _Planned:
        key = tuple((tuple(s), d.name) for s, d in types)
        with self._lock:
            got = self._planned.get(key)
            if got is None:
                got = self._planned[key] = _Planned(self.fn, self._name, types, self.tp, self.dp)
                if not got.report.sharded:
                    warnings.warn(f"p.compile: tensor parallel found no column-/row-parallel pair in {self._name}; "
                                  f"it runs whole on every rank (executor.report says why)", stacklevel=4)
        return got

    def run(self, inputs):
        per_request = isinstance(inputs, list)
        dp = self.dp
        if per_request:
            if not inputs or len(inputs) % dp:
                raise PyptoValueError(
                    f"TensorParallelExecutor.run: {len(inputs)} inputs for {dp} data-parallel groups",
                    location=user_location(), suggestions=[f"give a multiple of {dp} inputs, or one batch to split"])
            reqs = [a if isinstance(a, tuple) else (a,) for a in inputs]
            host = [np.stack([_host(r[i]) for r in reqs]) for i in range(len(reqs[0]))]
            types = [(h.shape[1:], _dtype(reqs[0][i])) for i, h in enumerate(host)]
        else:
            args = inputs if isinstance(inputs, tuple) else (inputs,)
            host = [_host(a) for a in args]
            for i, h in enumerate(host):
                if h.ndim == 0 or h.shape[0] % dp:
                    raise PyptoValueError(
                        f"TensorParallelExecutor.run: input {i} of shape {list(h.shape)} does not split along axis 0 "
                        f"into {dp} data-parallel parts", location=user_location(),
                        suggestions=[f"give a batch whose size divides by {dp}, or a list of inputs"])  # fmt: skip
            types = [((h.shape[0] // dp, *h.shape[1:]), _dtype(a)) for h, a in zip(host, args)]
        planned = self._plan(types)
        self.report = planned.report
        n_in = len(host)
        local = len(inputs) // dp if per_request else None

        def rank_fn(*shards):
            xs, views = list(shards[:n_in]), list(shards[n_in:])
            if local is None:
                return tuple(planned.replay(xs, views))
            outs = [planned.replay([reshape(x[j], *types[i][0]) for i, x in enumerate(xs)], views) for j in range(local)]
            return tuple(stack([o[k] for o in outs]) for k in range(len(outs[0])))

        n_out = len(planned.outputs)
        f = shard_map(rank_fn, self.mesh, in_specs=[PartitionSpec("dp")] * n_in + planned.view_specs(),
                      out_specs=[PartitionSpec("dp")] * n_out, backend=self.config.backend, workers=self.config.workers)
        outs = [o.numpy() for o in f(*host, *planned.view_data())]
        self.last_report = last_report()
        single = planned.structure == "single"
        if not per_request:
            res = [from_numpy(o) for o in outs]
            return res[0] if single else tuple(res)
        res = []
        for j in range(len(inputs)):
            one = [from_numpy(o[j]) for o in outs]
            res.append(one[0] if single else tuple(one))
        return res

    def info(self) -> dict:
        """The pass's report and the last run's timeline (simulated seconds, communication
        share, each collective with its bytes and time)."""
        d = {"strategy": self.config.parallel_strategy, "mesh": repr(self.mesh)}
        d["plan"] = None if self.report is None else self.report.as_dict()
        r = self.last_report
        if r is not None:
            d["seconds"], d["comm_share"] = r.seconds, r.comm_share
            d["collectives"] = r.collectives
        return d

    def __repr__(self) -> str:
        return f"TensorParallelExecutor({self._name}, {self.config.parallel_strategy}, {self.mesh})"


def _host(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy()
    if isinstance(x, np.ndarray):
        return x
    raise PyptoValueError(f"TensorParallelExecutor.run: an input is {type(x).__name__}, not a p.Tensor or numpy array",
                          location=user_location())


def _dtype(x):
    from .._core.dtypes import as_dtype

    return x.dtype if isinstance(x, Tensor) else as_dtype(x.dtype)
