"""Pipeline parallelism (``DistributedConfig(parallel_strategy="pipeline_parallel")``):
a layered model cut into stages balanced by the device's timing of each layer, run
over micro-batches in the order of a schedule ("gpipe", "1f1b", "interleaved_1f1b") on
a simulated timeline where every stage is a chip of the mesh.

Each step of the schedule (one chunk's forward or backward of one micro-batch) runs as
one program on the simulated NPU, which computes its values and its time; activations
and their gradients move between the stages' chips through the mesh's point-to-point
transfer (the Go core's send: the bytes, and the time of the slowest tier between the
two chips, on the sender's communication stream). A step starts when its chip has
finished the step before it in the schedule and its input has arrived; the timeline
gives each chip's busy and idle time (the bubble) and the activations it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import layers as L
from . import pipeline_trace as PT
from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..runtime.device import record_mesh_run
from ..tensor_level.tensor import from_numpy
from .collectives import _host, run_collective
from .pipeline_schedule import chip_steps


@dataclass
class StageReport:
    """One chip of the pipeline: its chunks (``layers``: (start, stop) layer ranges),
    simulated ``compute_s``, ``idle_s`` (standing between steps and at either end) and
    ``send_s`` (its transfers), and its memory: ``param_bytes`` (the weights of its
    chunks), ``grad_bytes`` (the gradient sums its backward keeps, when training) and
    ``peak_activation_bytes`` (the activations of the micro-batches in flight at once:
    forward done, backward not yet, at most ``peak_in_flight`` of them);
    ``memory_bytes`` is their total."""

    chip: int
    layers: list
    compute_s: float = 0.0
    idle_s: float = 0.0
    send_s: float = 0.0
    peak_activation_bytes: int = 0
    peak_in_flight: int = 0
    schedule_idle_s: float = 0.0  # idle on the timeline replayed with instantaneous transfers
    param_bytes: int = 0
    grad_bytes: int = 0

    @property
    def memory_bytes(self) -> int:
        """What the stage holds at its peak: weights, gradient sums and activations."""
        return self.param_bytes + self.grad_bytes + self.peak_activation_bytes


@dataclass
class PipelineReport:
    """The simulated timeline of a pipeline run: ``seconds`` (the last step's end),
    ``stages`` (a StageReport per chip), ``steps`` (each step: chip, kind "F"/"B",
    chunk, micro-batch, start_s, end_s, after: the index of the step whose output it
    takes), ``bubble`` (Megatron's bubble fraction t_pb / t_id: the time the run
    adds to the ideal one, the busiest chip's compute, transfers included: (p-1)/m for
    gpipe and 1f1b, (p-1)/(v m) interleaved, for balanced stages), ``schedule_bubble``
    (the same on the timeline replayed with instantaneous transfers: the schedule's
    alone), ``exposed_comm_s`` (what the transfers add to the run),
    ``idle_bubble`` (all idle over compute), ``idle_share`` (all idle over the chips'
    whole time) and ``comm_share`` (transfer time over the chips' whole time)."""

    schedule: str
    microbatches: int
    seconds: float
    stages: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    schedule_seconds: float = 0.0  # the same steps with instantaneous transfers

    @property
    def bubble(self) -> float:
        """Megatron's bubble fraction t_pb / t_id on the simulated timeline, transfers
        included: the run's time over the ideal one (the busiest chip's compute, run
        without a pause), minus one."""
        ideal = max(s.compute_s for s in self.stages)
        return self.seconds / ideal - 1 if ideal else 0.0

    @property
    def schedule_bubble(self) -> float:
        """The schedule's own bubble: the same steps replayed with instantaneous
        transfers, over the busiest chip's compute, minus one."""
        ideal = max(s.compute_s for s in self.stages)
        return self.schedule_seconds / ideal - 1 if ideal else 0.0

    @property
    def idle_bubble(self) -> float:
        """All idle time (the schedule's and the waits for transfers) over compute."""
        busy = sum(s.compute_s for s in self.stages)
        return sum(s.idle_s for s in self.stages) / busy if busy else 0.0

    @property
    def exposed_comm_s(self) -> float:
        """How much the transfers lengthen the run: seconds - schedule_seconds."""
        return self.seconds - self.schedule_seconds

    @property
    def idle_share(self) -> float:
        whole = self.seconds * len(self.stages)
        return sum(s.idle_s for s in self.stages) / whole if whole else 0.0

    @property
    def comm_share(self) -> float:
        whole = self.seconds * len(self.stages)
        return sum(s.send_s for s in self.stages) / whole if whole else 0.0

    @property
    def peak_activation_bytes(self) -> list:
        return [s.peak_activation_bytes for s in self.stages]

    @property
    def memory_bytes(self) -> list:
        """Per chip: weights + gradient sums + peak activations (StageReport.memory_bytes)."""
        return [s.memory_bytes for s in self.stages]


class PipelineExecutor:
    """What p.compile returns for ``parallel_strategy="pipeline_parallel"``: the layers
    of ``model`` (a list of layers, or a function of one tensor or a p.Graph, traced on
    one micro-batch and cut into layers where one value alone crosses:
    pipeline_trace.py; ``layers`` then holds them, with their captured weights as
    parameters) cut into ``pipeline_parallel_size * v`` chunks (v = ``virtual_stages``
    for "interleaved_1f1b", else 1), chunk c on chip c % p. ``run(x)`` is the forward
    over ``num_microbatches`` micro-batches (x split along axis 0);
    ``value_and_grad(loss_fn, x, target)`` trains: forward and backward per micro-batch
    in the schedule's order, the gradients accumulated over the micro-batches (those of
    the mean of the micro-batches' losses; each backward adds its gradients to the
    sums in its own program, so accumulating takes simulated time). ``last_report``
    is the timeline."""

    def __init__(self, model, config):
        self.config = config
        op = "p.compile (pipeline_parallel)"
        if isinstance(model, (list, tuple)):
            self.layers, self._traced = L.parse_layers(model, op), None
        else:  # traced per micro-batch signature at the first run, then cut where one value alone crosses
            self.layers, self._traced = None, PT.check_model(model, op)
        self._traced_layers = {}
        self.mesh = config.mesh()
        self.p = config.pipeline_parallel_size or self.mesh.size
        if self.p != self.mesh.size:
            raise PyptoValueError(
                f"p.compile: pipeline_parallel_size {self.p} on a mesh of {self.mesh.size} ranks: pipeline_parallel "
                "runs one stage per chip", location=user_location(),
                suggestions=[f"use device_mesh=[{self.p}] and pipeline_parallel_size={self.p}",
                             "pipelines whose stages are data- or tensor-parallel groups are not built: write them with "
                             "p.shard_map and p.distributed's send / recv and collectives"])
        if config.backend != "local":
            # The schedule's steps and the timeline run in one host thread (the steps'
            # order is the schedule's, not a rendezvous of rank threads), so there is
            # nothing for Ray workers to run; refusing beats running locally unasked.
            raise PyptoValueError(
                f"p.compile: pipeline_parallel runs on the local backend only, not backend={config.backend!r}",
                location=user_location(),
                suggestions=['use backend="local" (the default)',
                             'or write the stages with p.shard_map(..., backend="ray") and p.distributed.send / recv'])
        self.v = config.virtual_stages if config.schedule == "interleaved_1f1b" else 1
        self.m = config.num_microbatches
        if config.schedule == "interleaved_1f1b" and self.m % self.p:
            raise PyptoValueError(
                f"p.compile: the interleaved 1F1B schedule runs micro-batches in groups of the {self.p} stages, so "
                f"num_microbatches ({self.m}) must be a multiple of {self.p}", location=user_location(),
                suggestions=[f"num_microbatches={self.m + (-self.m) % self.p}", 'or schedule="1f1b"'])
        if self.layers is not None:
            self._check_fill(self.layers)
        self._cuts = {}
        self.last_report = None

    @property
    def parameters(self) -> list:
        """A traced model's parameters (host arrays: its floating captured tensors, in
        p.Graph's order) as the last run traced them; a layered model's, per layer."""
        if self._traced is None:
            return [list(layer.params) for layer in self.layers]
        if self.layers is None:
            raise PyptoValueError("PipelineExecutor.parameters: the model is traced at its first run; run it first",
                                  location=user_location())
        return list(self.layers.values)

    @property
    def parameter_names(self) -> list:
        """p.Graph's names of a traced model's parameters, with where the model reads
        each first."""
        self.parameters  # noqa: B018 (the same error before the first run)
        return list(self.layers.names) if self._traced is not None else [[layer.name] * len(layer.params) for layer in self.layers]

    def _check_fill(self, layers):
        if len(layers) < self.p * self.v:
            traced = "" if self._traced is None else (
                " (the places in the traced graph where one value alone passes from one op to the rest: "
                + ", ".join(layer.name for layer in layers) + ")")
            raise PyptoValueError(
                f"p.compile: {len(layers)} layers cannot fill {self.p * self.v} pipeline chunks "
                f"({self.p} stages x {self.v} per stage){traced}", location=user_location(),
                suggestions=["give more layers, or fewer stages (pipeline_parallel_size) or virtual_stages"])

    def _layers(self, micro: np.ndarray) -> list:
        """The layers for micro-batches like micro: the given list, or the traced
        model's cut for that signature (also left in ``self.layers``)."""
        if self._traced is None:
            return self.layers
        key = (micro.shape, str(micro.dtype))
        if key not in self._traced_layers:
            layers = PT.trace_layers(self._traced, micro.shape, micro.dtype, "p.compile (pipeline_parallel)")
            self._check_fill(layers)
            self._traced_layers[key] = layers
        self.layers = self._traced_layers[key]
        return self.layers

    # --- the cut ---------------------------------------------------------------------

    def chunks(self, micro: np.ndarray, train: bool, loss=None) -> list:
        """The (start, stop) layer ranges of the chunks for micro-batches like micro:
        consecutive layers balanced by the device's simulated time of each layer's
        forward (and backward when training) on one micro-batch."""
        key = (micro.shape, str(micro.dtype), train)
        if key not in self._cuts:
            n, layers = self.p * self.v, self._layers(micro)
            costs = [1.0] * len(layers) if len(layers) == n else layer_costs(layers, micro, train, loss)
            self._cuts[key] = (L.balanced_cuts(costs, n), costs)
        return self._cuts[key][0]

    def layer_costs(self, x, loss_fn=None, target=None) -> list:
        """The device's simulated seconds of each layer on one micro-batch of x (its
        forward; with loss_fn and target, its forward and backward as training runs
        them): what the stages are balanced by."""
        micro = self._micro(x, "layer_costs")[0]
        train = loss_fn is not None
        loss = (loss_fn, self._micro(target, "layer_costs")[0]) if train else None
        return layer_costs(self._layers(micro), micro, train, loss)

    # --- running ---------------------------------------------------------------------

    def _micro(self, x, op: str) -> list:
        arr = _host(x, f"PipelineExecutor.{op}", "x")
        if arr.ndim == 0 or arr.shape[0] % self.m:
            raise PyptoValueError(
                f"PipelineExecutor.{op}: a batch of {arr.shape[0] if arr.ndim else 0} rows does not split into "
                f"{self.m} equal micro-batches (num_microbatches)", location=user_location(),
                suggestions=["make the batch a multiple of num_microbatches"])
        return [np.ascontiguousarray(a) for a in np.split(arr, self.m)]

    def run(self, x):
        """The forward of every micro-batch of x through the pipeline; the outputs
        joined along axis 0 (a p.Tensor)."""
        micro = self._micro(x, "run")
        outs = self._simulate(self._layers(micro[0]), micro, None)
        return from_numpy(np.concatenate([outs[j] for j in range(self.m)]))

    def value_and_grad(self, loss_fn, x, target, params=None):
        """Trains one step's worth: returns (loss, grads), the loss the mean of
        ``loss_fn(y, target)`` over the micro-batches (a p.Tensor) and grads a list per
        layer of its parameters' gradients (p.Tensors), accumulated over the
        micro-batches. ``params`` (a list per layer) replaces the layers' parameters.
        For a traced model grads and params are one list over the model's parameters
        (its floating captures in p.Graph's order: ``parameters`` and
        ``parameter_names`` after the first run)."""
        if not callable(loss_fn):
            raise check.fail("PipelineExecutor.value_and_grad", "loss_fn", loss_fn, "a function loss_fn(y, target)")
        op = "PipelineExecutor.value_and_grad"
        micro = self._micro(x, "value_and_grad")
        base = self._layers(micro[0])
        traced = self._traced is not None
        if traced and params is not None:
            params = base.per_layer(params, op)
        layers = L.with_params(base, params, op)
        targets = self._micro(target, "value_and_grad")
        acc = [None] * len(layers)  # per layer: its gradients summed over the micro-batches so far
        loss = self._simulate(layers, micro, (loss_fn, targets), acc)
        total = sum(float(np.asarray(v).reshape(-1)[0]) for v in loss.values())
        if traced:
            acc = [base.per_capture(acc)]
            layers = [L.Layer(None, base.values, "")]
        grads = [[from_numpy(g.astype(w.dtype, copy=False)) for g, w in zip(gs, layer.params)] for gs, layer in zip(acc, layers)]
        if traced:
            grads = grads[0]
        return from_numpy(np.asarray(total, dtype=np.asarray(loss[0]).dtype)), grads

    def _simulate(self, layers, micro, loss, acc=None):
        train = loss is not None
        cuts = self.chunks(micro[0], train, (loss[0], loss[1][0]) if train else None)
        nch, p, m = len(cuts), self.p, self.m
        chunk_layers = [layers[a:b] for a, b in cuts]
        chips = [chip_steps(self.config.schedule, p, self.v, m, s, train) for s in range(p)]
        act = self._activation_bytes(chunk_layers, micro[0], train)
        report = PipelineReport(self.config.schedule, m, 0.0,
                                [StageReport(s, [cuts[c] for c in range(s, nch, p)]) for s in range(p)])
        free, comm_free = [0.0] * p, [0.0] * p
        nxt = [0] * p
        arrived = {}  # (kind, chunk, micro-batch) -> (host value, arrival time) of a step's input
        made_by = {}  # (kind, chunk, micro-batch) -> the index of the step whose output it is
        saved, outs, held = {}, {}, [0] * p
        for j in range(m):
            arrived[("F", 0, j)] = (micro[j], 0.0)
        while any(nxt[s] < len(chips[s]) for s in range(p)):
            progressed = False
            for s in range(p):
                if nxt[s] >= len(chips[s]):
                    continue
                kind, c, j = chips[s][nxt[s]]
                key = (kind, c, j)
                if key not in arrived and not (kind == "B" and c == nch - 1 and ("F", c, j) in saved):
                    continue
                value, ready = arrived.pop(key, (None, saved.get(("F", c, j), (None, 0.0))[1]))
                start = max(free[s], ready)
                with L.Timer() as t:
                    if kind == "F":
                        ls = loss if c == nch - 1 else None
                        out, sv = L.chunk_forward(chunk_layers[c], value, need_dx=c > 0, train=train,
                                                  loss=(ls[0], ls[1][j], 1.0 / m) if ls else None)
                    else:
                        sv, _ = saved.pop(("F", c, j))
                        a, b = cuts[c]
                        sums = acc[a:b] if acc[a] is not None else None  # the chunk's first backward starts them
                        out, acc[a:b] = L.chunk_backward(sv, value, sums)
                end = start + t.seconds
                st = report.stages[s]
                st.idle_s += start - free[s]
                st.compute_s += t.seconds
                free[s] = end
                dep = made_by.pop(key, None) if key in made_by else (
                    next((i for i, st_ in enumerate(report.steps) if st_["kind"] == "F" and st_["chunk"] == c and st_["microbatch"] == j), None)
                    if kind == "B" else None)
                report.steps.append({"chip": s, "kind": kind, "chunk": c, "microbatch": j, "start_s": start, "end_s": end,
                                     "after": dep})
                if kind == "F":
                    held[s] += act[c]
                    st.peak_activation_bytes = max(st.peak_activation_bytes, held[s])
                    st.peak_in_flight = max(st.peak_in_flight, sum(1 for (_, cc, _) in saved if cc % p == s) + 1)
                    if train:
                        saved[("F", c, j)] = (sv, end)
                else:
                    held[s] -= act[c]
                dst_chunk = c + 1 if kind == "F" else c - 1
                if 0 <= dst_chunk < nch and out is not None:
                    arrived[(kind, dst_chunk, j)] = self._send(out, s, dst_chunk % p, start, end, comm_free, report)
                    made_by[(kind, dst_chunk, j)] = len(report.steps) - 1
                elif kind == "F" and c == nch - 1:
                    outs[j] = out
                nxt[s] += 1
                progressed = True
            if not progressed:  # a schedule whose steps wait on each other: a bug here, said plainly
                raise RuntimeError(f"pipeline schedule {self.config.schedule!r} deadlocks at steps {[chips[s][nxt[s]] for s in range(p) if nxt[s] < len(chips[s])]}")
        report.seconds = max(free)
        for s, st in enumerate(report.stages):
            st.idle_s += report.seconds - free[s]
            chunks = range(s, nch, p)
            # a weight two of the chip's layers read (a tied one) is held once
            st.param_bytes = _distinct_bytes(w for c in chunks for layer in chunk_layers[c] for w in layer.params)
            if acc is not None:
                st.grad_bytes = _distinct_bytes(g for c in chunks for gs in acc[cuts[c][0]:cuts[c][1]] if gs for g in gs)
        report.schedule_seconds, idle = _replay_without_transfers(report.steps, p)
        for st, i in zip(report.stages, idle):
            st.schedule_idle_s = i
        self.last_report = report
        record_mesh_run({
            "mesh": True, "seconds": report.seconds, "cycles": round(report.seconds * self.mesh.info["clock_hz"]),
            "ranks": p, "stages": p, "microbatches": m, "bubble": report.bubble,
            "report": "the executor's last_report (a PipelineReport) has the timeline of every stage and step",
        })
        return outs

    def _send(self, value, src: int, dst: int, posted: float, ready: float, comm_free: list, report: PipelineReport):
        """Moves value from chip src to chip dst through the mesh (the bytes and their
        time on src's communication stream); returns (value at dst, arrival time).

        The send is posted when the step that produces it starts (the schedule fixes
        every transfer, so the runtime enqueues it with the step, waiting on the step's
        completion event): with ``overlap_p2p_launch`` its launch runs on the
        communication stream while the step computes, and only the transfer itself
        (latency and bytes) follows the step's end; without it the launch follows too."""
        if src == dst:
            return value, ready
        flat = np.ascontiguousarray(value).reshape(-1)
        outs, t = run_collective(self.mesh, "send", (src, dst), [flat, np.zeros_like(flat)])
        if self.config.overlap_p2p_launch:
            launched = max(posted, comm_free[src]) + t["launch_seconds"]
            done = max(ready, launched) + t["algorithm_seconds"]
        else:
            done = max(ready, comm_free[src]) + t["seconds"]
        comm_free[src] = done
        report.stages[src].send_s += t["seconds"]
        return outs[1].reshape(value.shape), done

    def _activation_bytes(self, chunk_layers, micro, train) -> list:
        if not train:
            return [0] * len(chunk_layers)
        key = ("act", micro.shape, str(micro.dtype))
        if key not in self._cuts:
            sizes, shape, dt = [], micro.shape, micro.dtype
            for ls in chunk_layers:
                n, (shape, dt) = L.activation_bytes(ls, shape, dt)
                sizes.append(n)
            self._cuts[key] = sizes
        return self._cuts[key]

    def __repr__(self) -> str:
        what = "a traced model" if self.layers is None else f"{len(self.layers)} layers"
        return f"PipelineExecutor({what}, {self.p} stages, {self.config.schedule}, m={self.m})"


def _distinct_bytes(arrays) -> int:
    seen, total = set(), 0
    for a in arrays:
        if id(a) not in seen:
            seen.add(id(a))
            total += int(np.asarray(a).nbytes)
    return total


def _replay_without_transfers(steps: list, p: int):
    """The timeline again with every transfer taking no time (each step as long as it
    ran, after the step before it on its chip and the step whose output it takes):
    its end, and each chip's idle time, which is then the schedule's alone."""
    free, end, busy = [0.0] * p, [], [0.0] * p
    for st in steps:
        d = st["end_s"] - st["start_s"]
        start = max(free[st["chip"]], end[st["after"]] if st["after"] is not None else 0.0)
        end.append(start + d)
        free[st["chip"]] = start + d
        busy[st["chip"]] += d
    total = max(free)
    return total, [total - b for b in busy]


def layer_costs(layers: list, micro: np.ndarray, train: bool, loss=None) -> list:
    """The device's simulated seconds of each layer on micro-batch micro, run layer by
    layer as the pipeline runs it: its forward, and when training its backward (seeded
    with ones), the first layer's without the input's gradient and the last layer's
    with the loss (``loss``: loss_fn and the micro-batch's target)."""
    costs, x = [], micro
    for i, layer in enumerate(layers):
        last = loss if train and i == len(layers) - 1 else None
        with L.Timer() as t:
            y, sv = L.chunk_forward([layer], x, need_dx=i > 0, train=train, loss=(*last, 1.0) if last else None)
            if train:
                L.chunk_backward(sv, None if last else np.ones_like(y))
        costs.append(t.seconds)
        x = y
    return costs
