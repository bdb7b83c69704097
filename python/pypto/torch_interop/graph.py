"""A torch.fx graph run as a PyPTO function: each node becomes PyPTO ops through the
table in ops_table.py; parameters and buffers are shared with torch (wrapped without a
copy, once per torch tensor, so tied weights stay one tensor)."""

from __future__ import annotations

import os
import re

import torch
import torch.fx
from torch.utils import _pytree as pytree

from . import ops_table
from .._core.errors import CompileError, Location, PyptoError
from .._core.location import at_location
from ..tensor_level.tensor import Tensor
from .tensors import tensor_from_torch

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


_LIBRARIES = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.dirname(__file__)) + os.sep)


def _user_frame(node: torch.fx.Node):
    """The innermost frame of the node's recorded stack in the user's code (not torch's
    or PyPTO's), as (file, line, func, code), or None."""
    trace = node.stack_trace or node.meta.get("stack_trace") or ""
    frames = [f for f in _FRAME.findall(trace) if not f[0].startswith(_LIBRARIES)]
    return frames[-1] if frames else None


def node_location(node: torch.fx.Node) -> Location:
    """Where in the user's module the node comes from, or an empty Location."""
    f = _user_frame(node)
    return Location(f[0], int(f[1]), f[2]) if f else Location()


def node_source(node: torch.fx.Node) -> str:
    """The node's source line as text, e.g. "model.py:12 in forward: x = torch.cumsum(x, 1)"."""
    f = _user_frame(node)
    if f is None:
        return "(no source line recorded)"
    file, line, func, code = f
    return f"{file}:{line} in {func}: {code.strip()}"


def describe(node: torch.fx.Node, gm: torch.fx.GraphModule) -> str:
    """The torch operation a node runs, for messages."""
    if node.op == "call_function":
        return ops_table.function_name(node.target)
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        m = gm.get_submodule(node.target)
        return f"{type(m).__qualname__} ({node.target})"
    return f"{node.op} {node.target}"


def why_unsupported(node: torch.fx.Node, gm: torch.fx.GraphModule) -> "str | None":
    """Why the op table cannot run the node on PyPTO (None: it can, as far as the table
    says; support.unsupported_nodes checks the rest)."""
    if node.op == "call_function":
        if ops_table.function(node.target) is None:
            return "no PyPTO mapping"
    elif node.op == "call_method":
        if node.target not in ops_table.METHODS:
            return "no PyPTO mapping"
    elif node.op == "call_module":
        return ops_table.module_unsupported(gm.get_submodule(node.target))
    return None


def run_node(gm: torch.fx.GraphModule, params, node: torch.fx.Node, args, kwargs):
    """The node's PyPTO value from its arguments' (parameters wrapped by params)."""
    if node.op == "get_attr":
        v = _attr(gm, node.target)
        return params(v) if isinstance(v, torch.Tensor) else v
    if node.op == "call_function":
        return ops_table.function(node.target)(*args, **kwargs)
    if node.op == "call_method":
        return ops_table.METHODS[node.target](*args, **kwargs)
    if node.op == "call_module":
        m = gm.get_submodule(node.target)
        return ops_table.MODULES[ops_table.module_type(m)](m, params, *args, **kwargs)
    raise CompileError(f"from_torch: unexpected graph node {node.op} {node.target}", location=node_location(node))


class Params:
    """The torch tensors (parameters, buffers, captured constants) a graph reads, each
    wrapped once as a p.Tensor sharing its memory; the torch tensor is kept here."""

    def __init__(self):
        self._wrapped: dict = {}

    def __call__(self, t: torch.Tensor) -> Tensor:
        hit = self._wrapped.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        pt = tensor_from_torch(t.detach(), quiet=True)
        self._wrapped[id(t)] = (t, pt)
        return pt


class GraphFunction:
    """Calls the nodes of gm on PyPTO values: ``fn(*tensors)`` returns the flat list of
    the output's tensors (``out_spec`` rebuilds the output's structure, ``out_consts``
    holds its leaves that are not tensors)."""

    def __init__(self, gm: torch.fx.GraphModule, params: "Params | None" = None):
        self.gm = gm
        self.params = params or Params()
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.out_spec = None
        self.out_tensor_at: list = []  # positions of the tensor leaves among the output's leaves
        self.out_leaves: list = []  # non-tensor leaves (tensor positions hold None)

    def __call__(self, *inputs):
        env = {}
        it = iter(inputs)
        result = None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(it)
                continue
            if node.op == "output":
                result = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
                break
            args = torch.fx.node.map_arg(node.args, lambda n: env[n])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
            env[node] = self._run(node, args, kwargs)
        leaves, self.out_spec = pytree.tree_flatten(result)
        self.out_tensor_at = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
        self.out_leaves = [None if isinstance(v, Tensor) else v for v in leaves]
        return [leaves[i] for i in self.out_tensor_at]

    def _run(self, node, args, kwargs):
        loc = node_location(node)
        try:
            if not loc.file:
                return run_node(self.gm, self.params, node, args, kwargs)
            with at_location(loc):  # the node's ops are its source line (dumps, errors, "no_buckets")
                return run_node(self.gm, self.params, node, args, kwargs)
        except PyptoError as e:  # a SymbolicShapeError too: the caller traces with concrete sizes instead
            if loc.file:
                e.location = loc
            raise
        except (TypeError, ValueError, KeyError) as e:
            raise CompileError(
                f"from_torch: {describe(node, self.gm)} cannot run on PyPTO as called: {e}",
                location=node_location(node),
                suggestions=["run this part in torch (torch.compile(model, backend='pypto') falls back per op)"],
            ) from None

    def rebuild(self, tensors, leaves=None):
        """The output structure with tensors at their places (and the other leaves, by
        default those of the last trace)."""
        leaves = list(self.out_leaves if leaves is None else leaves)
        for i, t in zip(self.out_tensor_at, tensors):
            leaves[i] = t
        return pytree.tree_unflatten(leaves, self.out_spec)


def _attr(gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
