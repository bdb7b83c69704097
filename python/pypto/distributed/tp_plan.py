"""The tensor-parallel plan: which nodes of a traced Tensor Graph to shard Megatron-style
over ``tp`` ranks, and where the all-reduces go.

The pass reads the graph p.Graph shows (nodes, their ops, attributes and shapes) and
gives every value a layout on the tensor-parallel ranks:

- R: replicated, every rank holds all of it;
- S(axis): split, rank k holds the k-th of ``tp`` equal blocks along ``axis``.

A product of a replicated activation with a captured 2-D weight (``matmul``, ``linear``)
is column-parallel: the weight is split along its output features, so its result is
split along the last axis. Split values flow through elementwise ops (a captured
operand that is full along the split axis, a bias, is split with them), transposes,
reshapes that keep the split on an outer dimension (the attention heads: [seq, hidden]
to [seq, heads, head_dim] splits the heads, which needs ``tp`` to divide them), batched
products whose batch axis is split on both sides (each rank's heads), softmax and norms
over other axes. A product that contracts the split axis with a captured weight is
row-parallel: the weight is split along its input features, each rank's result is a
partial sum, and one all-reduce over the tp axis makes it whole (a linear layer's bias
is added after it, once). A split value that reaches anything else (a norm over the
split axis, an op the pass does not know, a returned output) cannot stay split: the
column-parallel products it came from are left replicated, with the reason, and the
plan is made again without them until it holds.

The plan is data: the executor (tp_executor.py) replays the graph on every rank from
it. It is a Python pass over the trace rather than a Go pass in the pass table because
it does not rewrite one program: it makes a program per rank with collectives between
them, which run in p.shard_map's rendezvous (docs/distributed.md, "Tensor parallel").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from .._core.errors import PyptoValueError

_SAME_SHAPE_AXIS = ("softmax", "log_softmax")  # attr "axis": one axis, shape kept
_NORMS = ("layer_norm", "rms_norm")  # attr "axis": the normalised axes; weight, bias over them
_PRODUCTS = ("matmul", "batch_matmul")


@dataclass(frozen=True)
class Layout:
    axis: Optional[int] = None  # None: replicated
    roots: frozenset = frozenset()  # the column-parallel nodes the split comes from

    @property
    def split(self) -> bool:
        return self.axis is not None


R = Layout()


@dataclass
class Node:
    """One node of the traced graph, from pypto_trace_json."""

    id: int
    name: str
    op: str
    role: str
    inputs: tuple
    shape: tuple
    dtype: int
    attrs: dict
    attrs_text: str
    elementwise: bool
    location: str

    @classmethod
    def of(cls, d: dict) -> "Node":
        loc = d.get("location") or {}
        where = f"{loc.get('file', '')}:{loc.get('line', 0)}" if loc.get("file") else ""
        return cls(d["id"], d["name"], d["op"], d["role"], tuple(d["inputs"]), tuple(d["type"]["shape"]), d["type"]["dtype"],
                   dict(d.get("attr_values") or {}), d["attrs"], bool(d.get("elementwise")), where)  # fmt: skip

    def describe(self) -> str:
        at = f" at {self.location}" if self.location else ""
        return f"{self.name} = {self.op}{list(self.shape)}{at}"


@dataclass
class Plan:
    """How each rank runs the graph: ``splits`` maps (consumer node id, input index) of a
    captured constant to the axis it is split along on the ranks; ``reshapes`` maps a
    reshape node to its per-rank shape; ``reduce`` is the row-parallel nodes followed by
    an all-reduce (the bias input index to add after it, or None); ``columns`` the
    column-parallel nodes; ``pairs`` each row-parallel node's column-parallel sources;
    ``replicated`` the candidates left whole, with the reason."""

    tp: int
    nodes: list
    outputs: list
    layouts: dict = field(default_factory=dict)
    splits: dict = field(default_factory=dict)
    reshapes: dict = field(default_factory=dict)
    reduce: dict = field(default_factory=dict)
    columns: set = field(default_factory=set)
    pairs: dict = field(default_factory=dict)
    replicated: dict = field(default_factory=dict)

    @property
    def sharded(self) -> bool:
        return bool(self.reduce)


class _Refuse(Exception):
    """A split value reached a node that cannot take it."""

    def __init__(self, roots, why: str):
        super().__init__(why)
        self.roots, self.why = frozenset(roots), why


def plan(nodes: list, outputs: list, tp: int, *, model: str = "model") -> Plan:
    """The tensor-parallel plan of a traced graph over tp ranks (see the module doc).
    Raises PyptoValueError naming the layer when tp does not divide a dimension the
    plan splits (hidden features, heads)."""
    refused: dict = {}
    while True:
        p = Plan(tp, nodes, outputs)
        try:
            _propagate(p, set(refused))
        except _Refuse as r:
            new = r.roots - set(refused)
            if not new:  # cannot happen: every refusal names a live root
                raise AssertionError(f"tensor-parallel plan: refusal without a root: {r.why}") from None
            for root in new:
                refused[root] = r.why
            continue
        p.replicated = refused
        _check_divisible(p, model)
        return p


def _weight(nodes, n: Node, k: int) -> Optional[Node]:
    """Input k of n when it is a captured 2-D tensor (a weight)."""
    if k >= len(n.inputs):
        return None
    w = nodes[n.inputs[k]]
    return w if w.role == "constant" and len(w.shape) == 2 else None


def _propagate(p: Plan, refused: set) -> None:
    nodes = p.nodes
    lay = p.layouts
    for n in nodes:
        if n.role != "op":
            lay[n.id] = R
            continue
        ins = [lay[i] for i in n.inputs]
        split = [l for l in ins if l.split]
        roots = frozenset().union(*(l.roots for l in split)) if split else frozenset()
        if n.op in _PRODUCTS + ("linear",) and _linear_rule(p, n, ins, refused):
            continue
        if not split:
            lay[n.id] = R
            continue
        lay[n.id] = _split_rule(p, n, ins, roots)
    for o in p.outputs:
        l = lay[o]
        if l.split:
            raise _Refuse(l.roots, f"{nodes[o].describe()} is returned, and a returned value must be whole on every rank")


def _linear_rule(p: Plan, n: Node, ins: list, refused: set) -> bool:
    """Column- or row-parallel products with a captured 2-D weight; False when n is not one."""
    nodes, lay = p.nodes, p.layouts
    a = ins[0]
    if n.op == "linear":
        w = _weight(nodes, n, 1)
        w_out, w_in = 0, 1  # weight [out, in]
        bias = 2 if len(n.inputs) > 2 else None
    elif n.op in _PRODUCTS and not n.attrs.get("transpose_a"):  # [..., k] x a 2-D weight broadcast over the batch
        w = _weight(nodes, n, 1)
        w_out, w_in = (0, 1) if n.attrs.get("transpose_b") else (1, 0)
        bias = None
    else:
        return False
    if w is None or any(l.split for l in ins[1:]):
        return False
    nd = len(n.shape)
    if not a.split:
        if n.id in refused:
            return False
        p.splits[(n.id, 1)] = w_out
        if bias is not None:
            p.splits[(n.id, bias)] = 0
        p.columns.add(n.id)
        lay[n.id] = Layout(nd - 1, frozenset({n.id}))
        return True
    if a.axis != len(nodes[n.inputs[0]].shape) - 1:
        raise _Refuse(a.roots, f"{n.describe()} multiplies a value split along axis {a.axis}, not along the features it contracts")
    p.splits[(n.id, 1)] = w_in
    p.reduce[n.id] = bias
    p.pairs[n.id] = sorted(a.roots)
    lay[n.id] = R
    return True


def _split_rule(p: Plan, n: Node, ins: list, roots) -> Layout:
    """The layout of an op's result when some input is split (raises _Refuse)."""
    nodes = p.nodes
    x = ins[0]
    if n.elementwise:
        return _elementwise(p, n, ins, roots)
    if n.op == "transpose" and x.split:
        perm = [int(v) % len(n.shape) for v in n.attrs.get("perm", [])]
        return Layout(perm.index(x.axis), roots)
    if n.op == "reshape" and x.split:
        return _reshape(p, n, nodes[n.inputs[0]].shape, x, roots)
    if n.op in _SAME_SHAPE_AXIS and x.split and not any(l.split for l in ins[1:]):
        if int(n.attrs.get("axis", -1)) % len(n.shape) != x.axis:
            return Layout(x.axis, roots)
    if n.op in _NORMS and x.split and not any(l.split for l in ins[1:]):
        axes = {int(a) % len(n.shape) for a in n.attrs.get("axis", [-1])}
        if x.axis not in axes:
            return Layout(x.axis, roots)
    if n.op in _PRODUCTS and len(ins) == 2:
        got = _batched(nodes, n, ins, roots)
        if got is not None:
            return got
    raise _Refuse(roots, f"{n.describe()} cannot take a value split over the tensor-parallel ranks")


def _elementwise(p: Plan, n: Node, ins: list, roots) -> Layout:
    nodes, nd = p.nodes, len(n.shape)
    axis = None
    for l, i in zip(ins, n.inputs):
        if l.split:
            a = l.axis + nd - len(nodes[i].shape)
            if axis not in (None, a) or nodes[i].shape[l.axis] != n.shape[a]:
                raise _Refuse(roots, f"{n.describe()} combines values split along different axes")
            axis = a
    for k, (l, i) in enumerate(zip(ins, n.inputs)):
        if l.split:
            continue
        src = nodes[i]
        local = axis - (nd - len(src.shape))
        if local < 0 or src.shape[local] == 1:
            continue  # broadcast along the split axis: the whole operand serves every rank
        if src.role != "constant":
            raise _Refuse(roots, f"{n.describe()} combines a split value with {src.describe()}, which is whole on every rank")
        p.splits[(n.id, k)] = local  # a bias: split with the value
    return Layout(axis, roots)


def _groups(a: tuple, b: tuple):
    """Pairs of runs of dimensions of shapes a and b with equal products (a reshape's
    correspondence), as (start_a, end_a, start_b, end_b)."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        si, sj = i, j
        pa = a[i] if i < len(a) else 1
        pb = b[j] if j < len(b) else 1
        i, j = min(i + 1, len(a)), min(j + 1, len(b))
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                i += 1
            elif j < len(b):
                pb *= b[j]
                j += 1
            else:
                break
        out.append((si, i, sj, j))
    return out


def _reshape(p: Plan, n: Node, src_shape: tuple, x: Layout, roots) -> Layout:
    """A reshape keeps a split when the split axis leads its run of dimensions and the
    run it becomes has a leading dimension to split (the heads of [seq, heads, hd])."""
    for si, ei, sj, ej in _groups(tuple(src_shape), tuple(n.shape)):
        if si <= x.axis < ei:
            lead = next((k for k in range(si, ei) if src_shape[k] != 1), si)
            out = next((k for k in range(sj, ej) if n.shape[k] != 1), None)
            if lead != x.axis or out is None:
                break
            shape = list(n.shape)
            p.reshapes[n.id] = (out, shape)
            return Layout(out, roots)
    raise _Refuse(roots, f"{n.describe()} reshapes a value split along axis {x.axis} so that the split does not lead a dimension")


def _batched(nodes, n: Node, ins: list, roots) -> Optional[Layout]:
    """A batched product of two values split along the same batch axis (each rank's
    heads), or of a split one and one broadcast along that axis."""
    nd = len(n.shape)
    axis = None
    for l, i in zip(ins, n.inputs):
        if l.split:
            a = l.axis + nd - len(nodes[i].shape)
            if a >= nd - 2 or axis not in (None, a):
                return None
            axis = a
    for l, i in zip(ins, n.inputs):
        if not l.split:
            local = axis - (nd - len(nodes[i].shape))
            if local >= 0 and nodes[i].shape[local] != 1:
                return None
    return Layout(axis, roots)


def _check_divisible(p: Plan, model: str) -> None:
    """Every dimension the plan splits must divide by tp: hidden features of a weight,
    heads of a reshape."""
    tp, nodes = p.tp, p.nodes
    for (nid, k), axis in sorted(p.splits.items()):
        n, c = nodes[nid], nodes[nodes[nid].inputs[k]]
        size = c.shape[axis]
        if size % tp:
            role = "column-parallel (output features)" if nid in p.columns else "row-parallel (input features)"
            if nid not in p.columns and nid not in p.reduce:
                role = "split with its layer"
            raise PyptoValueError(
                f"tensor parallel: {model}: the {role} weight {c.name} {list(c.shape)} of {n.describe()} has {size} features "
                f"along axis {axis}, which tensor_parallel_size={tp} does not divide",
                suggestions=[f"use a tensor_parallel_size that divides {size}: {_divisors(size)}"])
    for nid, (axis, shape) in sorted(p.reshapes.items()):
        n = nodes[nid]
        if shape[axis] % tp:
            what = "attention heads" if len(shape) >= 3 else "rows"
            raise PyptoValueError(
                f"tensor parallel: {model}: {n.describe()} splits into {shape[axis]} {what} (axis {axis} of {shape}), "
                f"which tensor_parallel_size={tp} does not divide, so the ranks cannot take equal shares",
                suggestions=[f"use a tensor_parallel_size that divides {shape[axis]}: {_divisors(shape[axis])}"])
        local = list(shape)
        local[axis] //= tp
        p.reshapes[nid] = (axis, local)
    for nid, l in p.layouts.items():
        if l.split and nodes[nid].shape[l.axis] % tp:
            n = nodes[nid]
            raise PyptoValueError(
                f"tensor parallel: {model}: {n.describe()} would be split along axis {l.axis} of size {n.shape[l.axis]}, "
                f"which tensor_parallel_size={tp} does not divide",
                suggestions=[f"use a tensor_parallel_size that divides {n.shape[l.axis]}: {_divisors(n.shape[l.axis])}"])


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def nbytes(n: Node) -> int:
    from .._core.dtypes import from_code

    return int(math.prod(n.shape)) * from_code(n.dtype).itemsize
