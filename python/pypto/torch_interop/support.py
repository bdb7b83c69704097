"""Which nodes of a torch.fx graph PyPTO runs, decided before anything runs: the op
table's word, the dtypes, layouts and devices of the values each node reads and
computes, and then each node's handler tried on PyPTO placeholders of the shapes and
dtypes the graph records (dynamo's example values), so that an argument the mapping
cannot take (an option, a shape the op refuses) is found here, not when the graph
runs. A handler tried on placeholders builds pending ops only: nothing is computed."""

from __future__ import annotations

import operator

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .graph import Params, describe, run_node, why_unsupported
from .sizes import hint
from .torch_dtypes import TORCH_DTYPES
from ..runtime.tracing import placeholder
from ..tensor_level.tensor import Tensor


class _Opaque:
    """A value the check cannot stand in for (a tensor of a dtype PyPTO lacks, a
    symbolic float): a node reading it is not run on PyPTO."""

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
    itself for constants, an _Opaque for what PyPTO cannot hold. Symbolic sizes stand
    in by the example's values (the check decides what runs on PyPTO at all; whether a
    part runs symbolically is found when it is traced, part.PyptoPart)."""
    if isinstance(val, torch.Tensor):
        why = tensor_unsupported(val)
        if why is not None:
            return _Opaque(why)
        shape = tuple(hint(s) for s in val.shape)
        if None in shape:
            return _Opaque("it reads a tensor whose size depends on tensor values")
        return placeholder(shape, TORCH_DTYPES[val.dtype])
    if isinstance(val, torch.SymInt):
        return hint(val) if hint(val) is not None else _Opaque("it reads a size that depends on tensor values")
    if isinstance(val, torch.SymFloat):
        return hint(val) if hint(val) is not None else _Opaque("it reads a float that depends on tensor values")
    if isinstance(val, torch.SymBool):
        return _Opaque("it reads a symbolic bool computed in the graph")
    if isinstance(val, (tuple, list)):
        return type(val)(_stand_in(v) for v in val)
    return val


def scalar_placeholders(gm: torch.fx.GraphModule) -> set:
    """The graph's inputs that are floats passed as 0-d tensors and read only by
    ``.item()``: with dynamic sizes dynamo passes a module's float attributes (an
    epsilon, a dropout rate) so. A part takes them as floats (part.py)."""
    out = set()
    for n in gm.graph.nodes:
        if n.op != "placeholder" or not n.users:
            continue
        v = example_value(n)
        if isinstance(v, torch.Tensor) and v.ndim == 0 and v.dtype.is_floating_point and all(
            u.op == "call_method" and u.target == "item" for u in n.users
        ):
            out.add(n)
    return out


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
        shape = tuple(hint(s) for s in b.shape)
        if tuple(a.shape) != shape:
            return f"PyPTO's mapping gives shape {tuple(a.shape)}, torch {shape}"
    return None


#: Tensor methods and functions whose result may share its input's memory in torch (a
#: view), and Python's in-place operators.
_VIEW_METHODS = {"__getitem__", "view", "reshape", "transpose", "permute", "t", "expand", "expand_as", "squeeze",
                 "unsqueeze", "flatten", "unflatten", "narrow", "select", "unbind", "split", "chunk", "contiguous",
                 "detach", "view_as", "reshape_as", "as_strided", "diagonal", "movedim", "swapaxes", "swapdims"}  # fmt: skip
_VIEW_FUNCTIONS = {operator.getitem, torch.reshape, torch.transpose, torch.permute, torch.t, torch.squeeze,
                   torch.unsqueeze, torch.flatten, torch.narrow, torch.select, torch.unbind, torch.split, torch.chunk,
                   torch.detach, torch.diagonal, torch.movedim, torch.swapaxes}  # fmt: skip
_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.iand, operator.ior, operator.imatmul, operator.setitem}  # fmt: skip


_CALL_OPS = ("call_function", "call_method", "call_module")


def _is_view(node: torch.fx.Node) -> bool:
    """Whether node's result may share the memory of its first argument, a tensor (an
    item of a tuple is no view)."""
    src = node.args[0] if node.args else None
    if not isinstance(src, torch.fx.Node) or not isinstance(example_value(src), torch.Tensor):
        return False
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and node.target in _VIEW_FUNCTIONS


def _writes_in_place(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        t = node.target
        return t == "__setitem__" or (t.endswith("_") and not t.startswith("_"))
    return node.op == "call_function" and node.target in _IN_PLACE_OPERATORS and isinstance(example_value(node.args[0]) if isinstance(node.args[0], torch.fx.Node) else None, torch.Tensor)


def aliasing_writes(gm: torch.fx.GraphModule) -> dict:
    """{node: why} for the in-place writes PyPTO cannot follow. PyPTO gives the written
    tensor its new value, and the nodes after the write read it; in torch the write
    also reaches every tensor sharing its memory. So a write is taken into a tensor the
    graph computed (not an input, a parameter or a buffer) when no view of it taken
    before the write is read after it, and into a view only as ``x[k] += v`` is
    written: the view's new value stored back into x[k] at once."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    bad = {}
    for node in gm.graph.nodes:
        if not _writes_in_place(node) or not isinstance(node.args[0], torch.fx.Node):
            continue
        target = node.args[0]
        if target.op in ("placeholder", "get_attr"):
            bad[node] = "it writes in place into an input, parameter or buffer of the graph (PyPTO does not write back)"
        elif _is_view(target) and not _stored_back(node, target):
            bad[node] = "it writes in place into a view of another tensor (PyPTO does not follow aliases)"
        elif any(_is_view(v) and order[v] < order[node] and any(order[u] > order[node] for u in v.users) for v in target.users):
            bad[node] = "it writes in place into a tensor of which a view read later is taken (PyPTO does not follow aliases)"
    return bad


def _stored_back(write: torch.fx.Node, view: torch.fx.Node) -> bool:
    """Whether the write into view (x[k]) is x[k] += v: its one reader stores it back
    into x at k, and nothing reads the view after the write."""
    if not (view.op == "call_function" and view.target is operator.getitem) or len(write.users) != 1:
        return False
    (store,) = write.users
    return (store.op == "call_function" and store.target is operator.setitem and store.args[0] is view.args[0]
            and store.args[1] == view.args[1] and store.args[2] is write and set(view.users) == {write})  # fmt: skip


def unsupported_nodes(gm: torch.fx.GraphModule) -> dict:
    """{node: why} for every call node of gm that must run in torch."""
    env = {}
    bad = aliasing_writes(gm)
    params = Params()
    scalars = scalar_placeholders(gm)
    for node in gm.graph.nodes:
        if node.op == "output":
            break
        if node.op == "placeholder":  # a float read by .item() stands in by the value it read
            env[node] = _stand_in(example_value(next(iter(node.users))) if node in scalars else example_value(node))
            continue
        if node.op == "get_attr":
            env[node] = run_node(gm, params, node, (), {})
            continue
        why = bad.get(node) or why_unsupported(node, gm)
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
    # A write that runs in torch writes into the memory of the tensor it targets: that
    # tensor, and the tensors it is a view of, run in torch too (a PyPTO result's
    # memory is PyPTO's, which torch must not write).
    for node in [n for n in bad if _writes_in_place(n)]:
        target = node.args[0]
        while isinstance(target, torch.fx.Node) and target.op in _CALL_OPS:
            bad.setdefault(target, f"{describe(node, gm)}, which runs in torch, writes into its memory")
            target = target.args[0] if _is_view(target) else None
    return bad


def _first_line(e: BaseException) -> str:
    msg = getattr(e, "message", None) or str(e)
    return msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
