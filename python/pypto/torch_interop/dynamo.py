"""The torch.compile backend "pypto", registered through the ``torch_dynamo_backends``
entry point (pyproject.toml): ``torch.compile(model, backend="pypto")``.

Dynamo hands over an FX graph of torch operations. The backend finds, before anything
runs, the nodes PyPTO cannot run (support.py), splits the others into parts
(``partition``, linear in the graph) and replaces each part by a call that runs it on
the simulated NPU: the part's inputs shared with PyPTO without a copy, compiled by
p.compile once per input signature, the results shared back with torch. Everything
else stays torch, and ``p.last_fallbacks()`` (and the "pypto.torch" logger, at INFO)
says which operations fell back and why. A part whose compilation fails when it first
runs (a case the up-front check cannot see) falls back as a whole, also recorded.
"""

from __future__ import annotations

import weakref

import torch
import torch.fx
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from . import fallbacks
from .._core.errors import PyptoError
from ..runtime.device import on_clear_cache
from ..runtime.executor import compile as _p_compile
from ..tensor_level.tensor import Tensor
from .graph import GraphFunction, Params, describe, node_source
from .support import example_value, unsupported_nodes
from .tensors import tensor_from_torch

_CALLS = ("call_function", "call_method", "call_module")


def _tensor_inputs_only(node: torch.fx.Node, inside) -> bool:
    """Whether every value the node reads from outside its part is a tensor, so that
    the part takes tensors only."""
    for arg in node.all_input_nodes:
        if inside(arg):
            continue
        leaves = torch.utils._pytree.tree_leaves(example_value(arg))
        if not leaves or not all(isinstance(v, torch.Tensor) for v in leaves):
            return False
    return True


def partition(gm: torch.fx.GraphModule, supported) -> list:
    """The supported call nodes of gm in parts that can each become one call: a node's
    level is the most unsupported call nodes crossed on a path into it from the graph's
    inputs (counting each entry back into supported nodes), and a part is the
    supported nodes of one level. A path that leaves a part through an unsupported node
    reaches only higher levels, so no part feeds itself through torch (each fuses into
    one call without a cycle); one pass over the graph, linear in its nodes and edges.
    Returns the parts in order, each a dict of its nodes (graph order)."""
    level, ok = {}, {}
    parts: dict = {}
    for node in gm.graph.nodes:
        good = node.op in _CALLS and supported(node)
        d = 0
        for arg in node.all_input_nodes:  # inputs and attributes read nothing: no path runs through them
            d = max(d, level[arg] + (1 if good and not ok[arg] and arg.op in _CALLS else 0))
        level[node], ok[node] = d, good
        if good:
            parts.setdefault(d, {})[node] = None
    return [parts[d] for d in sorted(parts)]


class PyptoPart(torch.nn.Module):
    """A part of a dynamo graph run on PyPTO (its torch form kept to fall back to).
    With ``record`` None the part never falls back: a failure raises (p.from_torch)."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, record, config=None, dynamic=False):
        super().__init__()
        self.torch_part = gm
        self._name, self._record = name, record
        self._config, self._dynamic = config, dynamic
        self._fn = GraphFunction(gm, Params())
        self.executor = None
        self._failed = False
        self._last_inputs = []
        ops = sum(1 for n in gm.graph.nodes if n.op in _CALLS)
        self._entry = fallbacks.add_part(name, ops) if record is not None else {"runs": 0, "sim_ms": None}
        _live_parts.add(self)

    def release(self):
        """Drops the compiled program (p.clear_cache()); the next call compiles again."""
        self.executor = None
        self._last_inputs = []

    def forward(self, *args):
        if self._failed:
            return self.torch_part(*args)
        tensors = [tensor_from_torch(a, quiet=True) for a in args]
        # Kept until the next call, so that inputs of the same memory (the weights)
        # are found wrapped already instead of wrapped again.
        self._last_inputs = tensors
        try:
            if self.executor is None:
                fn = self._fn

                def part(*xs):
                    return fn(*xs)

                part.__name__ = self._name
                self.executor = _p_compile(part, self._config, dynamic=self._dynamic)
            outs = self.executor.run(*tensors)
        except PyptoError as e:
            if self._record is None:
                raise
            self._failed = True
            fallbacks.add(self._record, f"part {self._name}", f"PyPTO could not run it: {e.message}", str(e.location or ""), self._name)
            return self.torch_part(*args)
        self._entry["runs"] += 1
        self._entry["sim_ms"] = self.executor.last_time_ms
        outs = [outs] if isinstance(outs, Tensor) else list(outs)
        return self._fn.rebuild([_to_torch_like(o, a) for o, a in zip(outs, _out_examples(self.torch_part, len(outs)))])


#: Every part alive, so that p.clear_cache() can drop their programs: dynamo keeps the
#: compiled graphs of a model for as long as its code lives.
_live_parts: "weakref.WeakSet[PyptoPart]" = weakref.WeakSet()
on_clear_cache(lambda: [p.release() for p in list(_live_parts)])


def _out_examples(gm, n):
    """The dtypes torch would give the part's outputs (None where unknown)."""
    out = next(node for node in gm.graph.nodes if node.op == "output")
    vals = [example_value(a) if isinstance(a, torch.fx.Node) else None for a in torch.utils._pytree.tree_leaves(out.args[0])]
    vals = [v for v in vals if v is None or isinstance(v, torch.Tensor)]
    return (vals + [None] * n)[:n]


def _to_torch_like(o: Tensor, example) -> torch.Tensor:
    """o as torch, in the dtype torch computes (int64 where PyPTO computed int32)."""
    t = o.to_torch()
    if example is not None and example.dtype != t.dtype:
        t = t.to(example.dtype)
    return t


def split(gm: torch.fx.GraphModule, record: list, graph_name: str):
    """gm's nodes that PyPTO runs, found up front, in parts (the others recorded in
    record with their reasons): the parts as dicts of nodes, in graph order."""
    bad = unsupported_nodes(gm)
    for node, why in bad.items():
        fallbacks.add(record, describe(node, gm), why, node_source(node), graph_name)
    good = {n for n in gm.graph.nodes if n.op in _CALLS and n not in bad}
    parts = partition(gm, good.__contains__)
    # A node reading a non-tensor value from outside its part (a size, a tuple from
    # torch) would make its part take more than tensors: it runs in torch, and the
    # parts are formed again without it.
    while True:
        owner = {n: i for i, part in enumerate(parts) for n in part}
        outside = [n for n in good if not _tensor_inputs_only(n, lambda a, n=n: owner.get(a, -1) == owner[n])]
        if not outside:
            return parts
        for n in outside:
            good.discard(n)
            fallbacks.add(record, describe(n, gm), "it takes a value that is not a tensor from outside the PyPTO part (a size or a tuple computed in torch)", node_source(n), graph_name)
        parts = partition(gm, good.__contains__)


def backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The dynamo backend: returns gm with its supported parts running on PyPTO."""
    record, index = fallbacks.start()
    name = f"{type(gm).__name__}_{index}"
    parts = split(gm, record, name)
    if not parts:
        return gm
    fused = fuse_by_partitions(gm, parts, prefix="fused_")
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target.startswith("fused_"):
            sub = fused.get_submodule(node.target)
            setattr(fused, node.target, PyptoPart(sub, f"{name}_{node.target}", record))
    fused.recompile()
    return fused
