"""A model as a sequence of layers, for the parallel executors that cut it by layer
(pipeline stages) or run its backward layer by layer (data-parallel gradient buckets).

A layered model is a list whose entries are ``fn`` (a layer without parameters,
``fn(x) -> y``) or ``(fn, params)`` (``fn(x, *params) -> y``, params a list of arrays or
p.Tensors). A chunk is a run of consecutive layers. Its forward keeps what its backward
needs (the tracked inputs and the lazy output); its backward is the VJP machinery's
(the gradient of the chunk's output with the received cotangent as the seed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoTypeError, PyptoValueError
from .._core.location import user_location
from ..autodiff.gradients import _gradients, _track
from ..tensor_level.ops import cast
from ..tensor_level.shape_ops import concatenate, reshape
from ..tensor_level.tensor import Tensor, from_numpy, realize_observer


@dataclass
class Layer:
    fn: object
    params: list  # host arrays
    name: str


def parse_layers(model, op: str) -> list:
    """The layers of a layered model, or a clear error."""
    if callable(model) and not isinstance(model, (list, tuple)):
        raise PyptoTypeError(
            f"{op}: this strategy cuts the model by layer, so it takes a list of layers, got the function "
            f"{getattr(model, '__name__', type(model).__name__)}",
            location=user_location(),
            suggestions=["give p.compile a list: [layer_fn, (layer_fn, [w, b]), ...] where layer_fn(x, *params) -> y"])
    if not isinstance(model, (list, tuple)) or not model:
        raise check.fail(op, "model", model, "a non-empty list of layers: fn or (fn, [params])")
    layers = []
    for i, entry in enumerate(model):
        fn, params = (entry, []) if callable(entry) else (entry if isinstance(entry, tuple) and len(entry) == 2 else (None, None))
        if not callable(fn) or not isinstance(params, (list, tuple)):
            raise check.fail(op, f"model[{i}]", entry, "a layer: a function fn(x), or a pair (fn, [params]) with fn(x, *params)")
        arrs = []
        for k, w in enumerate(params):
            if not isinstance(w, (Tensor, np.ndarray)):
                raise check.fail(op, f"model[{i}] params[{k}]", w, "a p.Tensor or a numpy array")
            arrs.append(np.ascontiguousarray(w.numpy() if isinstance(w, Tensor) else w))
        layers.append(Layer(fn, arrs, getattr(fn, "__name__", f"layer{i}")))
    return layers


def with_params(layers: list, params, op: str) -> list:
    """The layers with their parameters replaced by ``params`` (one list per layer, as
    the gradients come back), or the layers themselves when params is None."""
    if params is None:
        return layers
    if not isinstance(params, (list, tuple)) or len(params) != len(layers):
        raise check.fail(op, "params", params, f"a list of {len(layers)} parameter lists, one per layer")
    out = []
    for i, (layer, ps) in enumerate(zip(layers, params)):
        if not isinstance(ps, (list, tuple)) or len(ps) != len(layer.params):
            raise check.fail(op, f"params[{i}]", ps, f"a list of the {len(layer.params)} parameters of layer {i}")
        arrs = [np.ascontiguousarray(w.numpy() if isinstance(w, Tensor) else np.asarray(w)) for w in ps]
        for k, (a, old) in enumerate(zip(arrs, layer.params)):
            if a.shape != old.shape or a.dtype != old.dtype:
                raise PyptoValueError(f"{op}: params[{i}][{k}] has shape {a.shape} {a.dtype}, the layer's {old.shape} {old.dtype}",
                                      location=user_location())
        out.append(Layer(layer.fn, arrs, layer.name))
    return out


def realize_as_one(tensors: list) -> list:
    """Computes the tensors as one program (what they share is computed once) and
    returns them as host arrays; the rank or timeline observing this thread is charged
    that one run. They are joined flat into one tensor (float32 when their dtypes
    differ: exact for the float16 and bfloat16 values) and split on the host."""
    if len(tensors) == 1:
        return [tensors[0].realize().numpy()]
    dts = {t.dtype.name for t in tensors}
    flat = [reshape(t if len(dts) == 1 else cast(t, "float32"), -1) for t in tensors]
    joined = concatenate(flat).realize().numpy()
    out, at = [], 0
    for t in tensors:
        n = int(np.prod(t.shape))
        out.append(joined[at:at + n].reshape(tuple(t.shape)).astype(t.dtype.numpy, copy=False))
        at += n
    return out


class Timer:
    """The simulated seconds of the realisations this thread makes inside ``with``."""

    def __enter__(self):
        self.seconds = 0.0
        self._prev = getattr(realize_observer, "fn", None)

        def charge(stats):
            self.seconds += float(stats.get("seconds", 0.0))
            if self._prev is not None:
                self._prev(stats)

        realize_observer.fn = charge
        return self

    def __exit__(self, *exc):
        realize_observer.fn = self._prev
        return False


@dataclass
class Saved:
    """What a chunk's forward keeps for its backward: the tracked input (None on the
    first chunk: the data needs no gradient), the tracked parameters, the output."""

    x: object
    params: list
    out: Tensor


def chunk_forward(layers: list, x: np.ndarray, *, need_dx: bool, train: bool, loss=None):
    """Runs the chunk's layers on x (host array) as one program. Returns (host output,
    Saved or None). ``loss``: (loss_fn, target, scale) on the last chunk of training:
    the output is then the loss value times scale."""
    xt = from_numpy(x)
    if train and need_dx:
        xt = _track(xt)
    params = []
    y = xt
    for layer in layers:
        ps = [from_numpy(w) for w in layer.params]
        if train:
            ps = [_track(w) for w in ps]
        params.append(ps)
        y = _call(layer, y, ps)
    if loss is not None:
        fn, target, scale = loss
        y = fn(y, from_numpy(target))
        if not isinstance(y, Tensor) or int(np.prod(y.shape)) != 1:
            raise PyptoValueError("loss_fn must return a single-element p.Tensor (e.g. p.mean(...))", location=user_location())
        y = y * scale
    host = realize_as_one([y])[0]
    return host, (Saved(xt if need_dx else None, params, y) if train else None)


def _call(layer: Layer, x, params):
    y = layer.fn(x, *params)
    if not isinstance(y, Tensor):
        raise PyptoTypeError(f"layer {layer.name} must return one p.Tensor, got {type(y).__name__}", location=user_location())
    return y


def chunk_backward(saved: Saved, dy, acc=None) -> tuple:
    """The chunk's backward as one program: the cotangent of its input (None on the
    first chunk) and the gradient of every parameter (per layer), seeded with dy (host
    array; None when the output is the loss).

    ``acc`` (a list per layer of host arrays, or None) is the gradient accumulated over
    the micro-batches before this one: each parameter's gradient is then added to it
    in the same program (in float32 for floating parameters, as a float32 main-grad
    buffer does), so accumulating is charged to the step's simulated time, and the
    sums are returned."""
    wrt = ([saved.x] if saved.x is not None else []) + [w for ps in saved.params for w in ps]
    if not wrt:
        return None, [[] for _ in saved.params]
    seed = None if dy is None else from_numpy(dy)
    gs = _gradients(saved.out, wrt, seed, "pipeline backward")
    gs = [g if g is not None else from_numpy(np.zeros(tuple(t.shape), t.dtype.numpy)) for g, t in zip(gs, wrt)]
    if acc is not None:
        held = [a for layer_acc in acc for a in layer_acc]
        at = len(gs) - len(held)
        gs[at:] = [_accumulate(g, a) for g, a in zip(gs[at:], held)]
    host = realize_as_one(gs)
    dx = host.pop(0) if saved.x is not None else None
    per, at = [], 0
    for ps in saved.params:
        per.append(host[at:at + len(ps)])
        at += len(ps)
    return dx, per


def _accumulate(g: Tensor, held: np.ndarray) -> Tensor:
    """held + g on the device, in the accumulator's dtype (float32 for floating
    gradients)."""
    dt = "float32" if np.issubdtype(held.dtype, np.floating) else held.dtype
    return cast(from_numpy(np.ascontiguousarray(held, dtype=dt)), dt) + cast(g, dt)


def activation_bytes(layers: list, shape: tuple, dtype) -> tuple:
    """The bytes of the values a chunk's forward computes for one micro-batch of the
    given input shape and dtype (its input and every op's result in its traced graph):
    what the stage holds for that micro-batch from its forward to its backward when
    nothing is recomputed; and the output's (shape, dtype)."""
    from ..runtime.graph import Graph

    def fn(x, *flat):
        at, y = 0, x
        for layer in layers:
            y = layer.fn(y, *flat[at:at + len(layer.params)])
            at += len(layer.params)
        return y

    flat = [from_numpy(w) for layer in layers for w in layer.params]
    g = Graph(fn, inputs=[(list(shape), dtype), *flat])
    out = g.outputs[0]
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return size + sum(int(np.prod(n.shape)) * n.dtype.itemsize for n in g.ops), (tuple(out.shape), out.dtype.numpy)


def balanced_cuts(costs: list, parts: int) -> list:
    """Cuts the layers (costs in order) into ``parts`` runs of consecutive layers, each
    at least one layer, minimising the largest run's cost (the pipeline's slowest
    stage). Returns the runs as (start, stop) pairs."""
    n = len(costs)
    pre = np.concatenate([[0.0], np.cumsum(costs)])
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for k in range(1, parts + 1):
        for i in range(k, n - (parts - k) + 1):
            for j in range(k - 1, i):
                c = max(best[k - 1][j], pre[i] - pre[j])
                if c < best[k][i]:
                    best[k][i], cut[k][i] = c, j
    runs, i = [], n
    for k in range(parts, 0, -1):
        j = cut[k][i]
        runs.append((j, i))
        i = j
    return runs[::-1]
