"""A traced model (a function of one tensor, or a p.Graph) cut into the layers a
pipeline balances over its stages.

The model is traced once per micro-batch signature. A place between two ops of the
Tensor Graph (in its order) where one value alone is live, computed before and read
after (or returned), is where a stage may end: the stage sends that value and nothing
else. The ops between two such places make a layer. In a transformer those places are
the residual adds (inside a block the residual stream and the branch are both live);
in a chain of ops every op is one. Each layer replays its ops on the pipeline's chip;
its floating captured tensors (the weights) are its parameters, so training gives
their gradients; other captures (masks, indices) stay fixed. The model's parameters
are its floating captures in the order p.Graph numbers them (%c0, %c1, ...: the order
the model first reads them); a capture several layers read (a tied weight) is a
parameter of each, and its gradient is their sum.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from .._core import lib as _lib
from .._core.errors import PyptoTypeError, PyptoValueError
from .._core.location import user_location
from ..runtime.graph import Graph
from ..runtime.tracing import placeholder, trace_function
from ..tensor_level.tensor import Tensor, apply, from_numpy
from .layers import Layer
from .tp_plan import Node


class TracedLayers(list):
    """The layers of a traced model, with the model's parameters: ``names`` (p.Graph's
    name of each capture and where the model read it first), ``values`` (host arrays)
    and, per layer, the indices of its parameters among them (``index``)."""

    def __init__(self, layers, names, values, index):
        super().__init__(layers)
        self.names, self.values, self.index = names, values, index

    def per_layer(self, params, op: str) -> list:
        """The model's parameters (a list, as ``values``) as one list per layer."""
        if not isinstance(params, (list, tuple)) or len(params) != len(self.values):
            raise PyptoValueError(f"{op}: params must be a list of the model's {len(self.values)} parameters "
                                  f"({', '.join(self.names)})", location=user_location())
        return [[params[k] for k in ks] for ks in self.index]

    def per_capture(self, grads: list) -> list:
        """Per-layer gradients as one per parameter of the model (a tied weight's
        summed over the layers that read it)."""
        out = [None] * len(self.values)
        for ks, gs in zip(self.index, grads):
            for k, g in zip(ks, gs):
                out[k] = g if out[k] is None else out[k] + g
        return out


def trace_layers(model, shape: tuple, dtype, op: str) -> TracedLayers:
    """The layers of ``model`` (a function of one tensor or a p.Graph) traced on one
    micro-batch of ``shape`` and ``dtype``."""
    tr, name = _trace(model, tuple(shape), np.dtype(dtype), op)
    doc = tr.json()
    nodes = [Node.of(d) for d in doc["nodes"]]
    inputs = [n for n in nodes if n.role == "input"]
    ops = [n for n in nodes if n.role == "op"]
    if not ops:
        raise PyptoValueError(f"{op}: {name} computes nothing (it returns its input)", location=user_location())
    if len(inputs) != 1 or tr.structure != "single":
        raise PyptoValueError(
            f"{op}: a pipeline passes one tensor from stage to stage, so the model takes one input and returns one "
            f"p.Tensor; {name} takes {len(inputs)} and returns {len(doc['outputs'])}" +
            (" (as a tuple or list)" if tr.structure != "single" else ""), location=user_location(),
            suggestions=["close over the other tensors (weights are captured), or give a list of layers"])
    constants = {n.id: _constant(tr, n) for n in nodes if n.role == "constant"}
    trained = [i for i, a in constants.items() if np.issubdtype(a.dtype, np.floating) and a.ndim]
    rank = {i: k for k, i in enumerate(trained)}
    layers, index = [], []
    for seg, src, dst in _segments(ops, inputs[0].id, doc["outputs"][0], nodes):
        layer, ids = _layer(seg, src, dst, nodes, constants, rank)
        layers.append(layer)
        index.append([rank[i] for i in ids])
    first = {}
    for n in ops:
        for i in n.inputs:
            first.setdefault(i, n.location)
    names = [nodes[i].name + (f" ({first[i]})" if first.get(i) else "") for i in trained]
    return TracedLayers(layers, names, [constants[i] for i in trained], index)


def _trace(model, shape: tuple, dtype, op: str):
    """The trace for one micro-batch: a p.Graph's own (traced now if it was not), or
    the function's; and the model's name."""
    if isinstance(model, Graph):
        name = model._name
        with model._lock:
            if model._trace is None:
                model._trace = trace_function(model._fn, name, [placeholder(shape, dtype)], threading.local())
        tr = model._trace
        types = [(tuple(ph.shape), ph.dtype.numpy) for ph in tr.placeholders]
        if types != [(shape, dtype)]:
            raise PyptoValueError(
                f"{op}: the graph of {name} was traced for inputs {[(list(s), np.dtype(d).name) for s, d in types]}, "
                f"but a micro-batch is {list(shape)} {dtype.name}", location=user_location(),
                suggestions=[f"trace it for one micro-batch: p.Graph({name}, inputs=[({list(shape)}, '{dtype.name}')]), "
                             "or give the function itself"])
        return tr, name
    name = getattr(model, "__name__", type(model).__name__)
    return trace_function(model, name, [placeholder(shape, dtype)], threading.local()), name


def _constant(tr, n: Node) -> np.ndarray:
    h = _lib.Handle()
    _lib.call(_lib.lib.pypto_trace_constant, tr.handle, int(n.name[2:]), ctypes.byref(h))
    return np.ascontiguousarray(Tensor._wrap(h.value).numpy())


def _segments(ops: list, input_id: int, output_id: int, nodes: list) -> list:
    """The runs of ops between the places where one value alone is live: (ops, the
    value coming in, the value going out) for each."""
    pos = {n.id: k for k, n in enumerate(ops)}
    last = {input_id: -1}
    for k, n in enumerate(ops):
        last.setdefault(n.id, k)
        for i in n.inputs:
            if nodes[i].role != "constant":
                last[i] = k
    last[output_id] = len(ops)  # returned: live to the end
    live, out, start, src = {input_id} if last[input_id] > -1 else set(), [], 0, input_id
    for k, n in enumerate(ops):
        live = {i for i in live if last[i] > k}
        if last[n.id] > k:
            live.add(n.id)
        if len(live) == 1 and k < len(ops) - 1:
            (dst,) = live
            if pos.get(dst, -1) >= start:  # the value out is made in this run (not passed through it)
                out.append((ops[start:k + 1], src, dst))
                start, src = k + 1, dst
    out.append((ops[start:], src, output_id))
    return out


def _layer(seg: list, src: int, dst: int, nodes: list, constants: dict, trained: dict):
    """The layer replaying seg (from value src to value dst), and the constant ids of
    its parameters in order."""
    params, fixed, ids = [], {}, []
    seen = {}  # constant node id -> its index in params, or None when it stays fixed
    for n in seg:
        for i in n.inputs:
            if nodes[i].role == "constant" and i not in seen:
                if i in trained:
                    seen[i] = len(params)
                    params.append(constants[i])
                    ids.append(i)
                else:
                    seen[i] = None
                    fixed[i] = constants[i]
    def fn(x, *ps):
        env = {src: x}
        for i, k in seen.items():
            env[i] = ps[k] if k is not None else from_numpy(fixed[i])
        for n in seg:
            env[n.id] = apply(n.op, [env[i] for i in n.inputs], n.attrs or None)
        return env[dst]

    lines = sorted({n.location for n in seg if n.location})
    where = f" at {lines[0]}" + (f" .. {lines[-1]}" if len(lines) > 1 else "") if lines else ""
    name = f"{seg[0].name}..{seg[-1].name}{where}" if len(seg) > 1 else f"{seg[0].name}{where}"
    return Layer(fn, params, name), ids


def check_model(model, op: str):
    """A model the traced pipeline takes: a function of one tensor or a p.Graph."""
    if isinstance(model, Graph) or callable(model):
        return model
    raise PyptoTypeError(f"{op}: the model is a function of one p.Tensor, a p.Graph or a list of layers, "
                         f"got {type(model).__name__}", location=user_location())
