"""The torch.compile backend "pypto", registered through the ``torch_dynamo_backends``
entry point (pyproject.toml): ``torch.compile(model, backend="pypto")``.

Dynamo hands over an FX graph of torch operations. The backend splits it into
maximal parts PyPTO supports (torch.fx's capability-based partitioner over the op
table of ops_table.py) and replaces each part by a call that runs it on the simulated
NPU: the part's inputs shared with PyPTO without a copy, compiled by p.compile once per
input signature, the results shared back with torch. Everything else stays torch, and
``p.last_fallbacks()`` (and the "pypto.torch" logger, at INFO) says which operations
fell back and why. A part whose conversion fails when it first runs (an option the
table does not cover) falls back as a whole, also recorded.
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from . import fallbacks
from .._core.errors import PyptoError
from ..runtime.executor import compile as _p_compile
from ..tensor_level.tensor import Tensor
from .graph import GraphFunction, Params, describe, node_source, why_unsupported
from .tensors import tensor_from_torch


class _Support(OperatorSupportBase):
    def __init__(self, gm, record):
        self.gm, self.record = gm, record

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if node.op not in ("call_function", "call_method", "call_module"):
            return False
        why = why_unsupported(node, self.gm)
        if why is None and not _tensor_inputs_only(node):
            why = "it takes a value that is not a tensor computed in the graph (a symbolic size)"
        if why is not None:
            fallbacks.add(self.record, describe(node, self.gm), why, node_source(node))
            return False
        return True


def _tensor_inputs_only(node: torch.fx.Node) -> bool:
    """Whether every graph value the node reads is a tensor (or a tuple of them), so the
    part it lands in takes tensors only."""
    for arg in node.all_input_nodes:
        val = arg.meta.get("example_value", arg.meta.get("val"))
        if val is None:
            continue
        leaves = torch.utils._pytree.tree_leaves(val)
        if not all(isinstance(v, torch.Tensor) for v in leaves):
            return False
    return True


class PyptoPart(torch.nn.Module):
    """A part of a dynamo graph run on PyPTO (its torch form kept to fall back to)."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, record: list):
        super().__init__()
        self.torch_part = gm
        self._name, self._record = name, record
        self._fn = GraphFunction(gm, Params())
        self._executor = None
        self._failed = False
        self._last_inputs = []
        ops = sum(1 for n in gm.graph.nodes if n.op.startswith("call_"))
        self._entry = fallbacks.add_part(name, ops)

    def forward(self, *args):
        if self._failed or not all(isinstance(a, torch.Tensor) for a in args):
            return self.torch_part(*args)
        tensors = [tensor_from_torch(a, quiet=True) for a in args]
        # Kept until the next call, so that inputs of the same memory (the weights)
        # are found wrapped already instead of wrapped again.
        self._last_inputs = tensors
        try:
            if self._executor is None:
                fn = self._fn

                def part(*xs):
                    return fn(*xs)

                part.__name__ = self._name
                self._executor = _p_compile(part, dynamic=False)
            outs = self._executor.run(*tensors)
        except PyptoError as e:
            self._failed = True
            fallbacks.add(self._record, f"part {self._name}", f"PyPTO could not run it: {e.message}", str(e.location or ""))
            return self.torch_part(*args)
        self._entry["runs"] += 1
        self._entry["sim_ms"] = self._executor.last_time_ms
        outs = [outs] if isinstance(outs, Tensor) else list(outs)
        return self._fn.rebuild([_to_torch_like(o, a) for o, a in zip(outs, _out_examples(self.torch_part, len(outs)))])


def _out_examples(gm, n):
    """The dtypes torch would give the part's outputs (None where unknown)."""
    out = next(node for node in gm.graph.nodes if node.op == "output")
    vals = [a.meta.get("example_value", a.meta.get("val")) if isinstance(a, torch.fx.Node) else None for a in torch.utils._pytree.tree_leaves(out.args[0])]
    vals = [v for v in vals if v is None or isinstance(v, torch.Tensor)]
    return (vals + [None] * n)[:n]


def _to_torch_like(o: Tensor, example) -> torch.Tensor:
    """o as torch, in the dtype torch computes (int64 where PyPTO computed int32)."""
    t = o.to_torch()
    if example is not None and example.dtype != t.dtype:
        t = t.to(example.dtype)
    return t


def backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The dynamo backend: returns gm with its supported parts running on PyPTO."""
    record = fallbacks.start()
    support = _Support(gm, record)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    if not partitions:
        return gm
    fused = partitioner.fuse_partitions(partitions)
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target.startswith("fused_"):
            sub = fused.get_submodule(node.target)
            setattr(fused, node.target, PyptoPart(sub, f"{type(gm).__name__}_{node.target}", record))
    fused.recompile()
    return fused
