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

import torch
import torch.fx
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from . import fallbacks
from .part import PyptoPart, crosses_parts
from .graph import describe, node_source
from .support import example_value, unsupported_nodes

_CALLS = ("call_function", "call_method", "call_module")


def _tensor_inputs_only(node: torch.fx.Node, inside) -> bool:
    """Whether every value the node reads from outside its part is one a part takes
    (tensors, sizes, shapes and floats: part.crosses_parts)."""
    return all(inside(arg) or crosses_parts(example_value(arg)) for arg in node.all_input_nodes)


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


def split(gm: torch.fx.GraphModule, record: list, graph_name: str):
    """gm's nodes that PyPTO runs, found up front, in parts (the others recorded in
    record with their reasons): the parts as dicts of nodes, in graph order."""
    bad = unsupported_nodes(gm)
    for node, why in bad.items():
        fallbacks.add(record, describe(node, gm), why, node_source(node), graph_name)
    good = {n for n in gm.graph.nodes if n.op in _CALLS and n not in bad}
    parts = partition(gm, good.__contains__)
    # A node reading a value a part cannot take from outside its part (a tuple of
    # tensors and numbers, a string) runs in torch, and the parts are formed again
    # without it.
    while True:
        owner = {n: i for i, part in enumerate(parts) for n in part}
        outside = [n for n in good if not _tensor_inputs_only(n, lambda a, n=n: owner.get(a, -1) == owner[n])]
        if not outside:
            return parts
        for n in outside:
            good.discard(n)
            fallbacks.add(record, describe(n, gm), "it takes a value that is not a tensor, a size or a float from outside the PyPTO part (a tuple of several kinds computed in torch)", node_source(n), graph_name)
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
            part = PyptoPart(sub, f"{name}_{node.target}", record)
            part.entry["graph"] = index  # the dynamo capture it belongs to
            setattr(fused, node.target, part)
    fused.recompile()
    return fused
