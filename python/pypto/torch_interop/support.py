"""Which nodes of a torch.fx graph PyPTO runs, decided before anything runs: the op
table's word, the dtypes, layouts and devices of the values each node reads and
computes, and then each node's handler tried on PyPTO placeholders of the shapes and
dtypes the graph records (dynamo's example values), so that an argument the mapping
cannot take (an option, a shape the op refuses) is found here, not when the graph
runs. A handler tried on placeholders builds pending ops only: nothing is computed."""

from __future__ import annotations

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .graph import Params, describe, run_node, why_unsupported
from .torch_dtypes import TORCH_DTYPES
from ..runtime.tracing import placeholder
from ..tensor_level.tensor import Tensor


class _Opaque:
    """A value the check cannot stand in for (a symbolic size, a tensor of a dtype
    PyPTO lacks): a node reading it is not run on PyPTO."""

    def __init__(self, why: str):
        self.why = why


def example_value(node: torch.fx.Node):
    """The value torch computes for node, as the graph records it (None if it does not)."""
    return node.meta.get("example_value", node.meta.get("val"))


def tensor_unsupported(v) -> "str | None":
    """Why PyPTO cannot hold the torch tensor v (None: it can)."""
    if v.layout != torch.strided:
        return f"it reads or computes a {v.layout} tensor (PyPTO tensors are dense)"
    if v.dtype not in TORCH_DTYPES:
        return f"it reads or computes a {v.dtype} tensor, which PyPTO does not have"
    if v.device.type not in ("cpu", "meta"):
        return f"it computes on {v.device}"
    return None


def _stand_in(val):
    """A PyPTO value of the type of torch's val: a placeholder for a tensor, the value
    itself for constants, an _Opaque for what PyPTO cannot hold."""
    if isinstance(val, torch.Tensor):
        why = tensor_unsupported(val)
        if why is not None:
            return _Opaque(why)
        try:
            shape = tuple(int(s) for s in val.shape)
        except (TypeError, ValueError, RuntimeError):  # a symbolic size
            return _Opaque("it reads a tensor of symbolic size")
        return placeholder(shape, TORCH_DTYPES[val.dtype])
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return _Opaque("it reads a symbolic size computed in the graph")
    if isinstance(val, (tuple, list)):
        return type(val)(_stand_in(v) for v in val)
    return val


def _reads_opaque(args, kwargs) -> "str | None":
    for v in pytree.tree_leaves((args, kwargs)):
        if isinstance(v, _Opaque):
            return v.why
    return None


def _same_type(got, want) -> "str | None":
    """Whether PyPTO's result has the shapes torch's has (None: it does)."""
    g, w = pytree.tree_leaves(got), pytree.tree_leaves(want)
    gt = [x for x in g if isinstance(x, Tensor)]
    wt = [x for x in w if isinstance(x, torch.Tensor)]
    if len(gt) != len(wt):
        return f"PyPTO's mapping gives {len(gt)} tensor(s), torch {len(wt)}"
    for a, b in zip(gt, wt):
        try:
            shape = tuple(int(s) for s in b.shape)
        except (TypeError, ValueError, RuntimeError):
            continue
        if tuple(a.shape) != shape:
            return f"PyPTO's mapping gives shape {tuple(a.shape)}, torch {shape}"
    return None


def unsupported_nodes(gm: torch.fx.GraphModule) -> dict:
    """{node: why} for every call node of gm that must run in torch."""
    env, bad = {}, {}
    params = Params()
    for node in gm.graph.nodes:
        if node.op == "output":
            break
        if node.op == "placeholder":
            env[node] = _stand_in(example_value(node))
            continue
        if node.op == "get_attr":
            env[node] = run_node(gm, params, node, (), {})
            continue
        why = why_unsupported(node, gm)
        val = example_value(node)
        if why is None:
            for v in pytree.tree_leaves(val):
                if isinstance(v, torch.Tensor) and tensor_unsupported(v):
                    why = tensor_unsupported(v)
                    break
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        if why is None:
            why = _reads_opaque(args, kwargs)
        if why is None:
            try:
                got = run_node(gm, params, node, args, kwargs)
            except Exception as e:  # noqa: BLE001 (any failure of the mapping means: not here)
                why = f"PyPTO cannot run it as called: {_first_line(e)}"
            else:
                why = _same_type(got, val) if val is not None else None
                if why is None:
                    env[node] = got
                    continue
        bad[node] = why
        env[node] = _stand_in(val) if val is not None else _Opaque(f"it reads the result of {describe(node, gm)}, which runs in torch")
    return bad


def _first_line(e: BaseException) -> str:
    msg = getattr(e, "message", None) or str(e)
    return msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
