"""Data-parallel training (``DistributedConfig(parallel_strategy="data_parallel")`` with a
layered model): the batch split over the ranks, each rank's forward and backward run
layer by layer, the gradients all-reduced in buckets that overlap the backward, and
gradient accumulation over micro-batches, as torch's DistributedDataParallel does.

Every rank runs in p.shard_map (its own simulated chip and clock). Its backward
produces the gradients of the last layer first; they are gathered into buckets of at
most ``bucket_cap_mb`` (in backward order, one dtype per bucket), and each bucket's
all-reduce is issued on the rank's communication stream (``async_op=True``) as soon as
it is full, while the backward of the layers before it goes on computing. With
``gradient_accumulation_steps=k`` each rank splits its share into k micro-batches and
only the last one's backward all-reduces (torch's ``no_sync`` for the others); each
backward after the first adds its gradients to the sums in its own program, so
accumulating is charged to the rank's simulated time. The
loss of each micro-batch is scaled by 1 / (ranks x k), so the summed gradients are
those of the mean loss over the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import collectives as C
from . import layers as L
from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import from_numpy
from .collectives import _host
from .mesh import PartitionSpec
from .shard_map import last_report, shard_map


@dataclass
class DataParallelReport:
    """The timeline of a data-parallel training step: ``seconds`` (the slowest rank),
    ``compute_s`` and ``comm_s`` of that rank (its compute and the all-reduces it took
    part in: ``seconds < compute_s + comm_s`` when communication overlaps the
    backward), ``buckets`` (each: layers, bytes), ``ranks`` and ``collectives`` (as
    p.distributed.last_report gives them)."""

    seconds: float
    compute_s: float
    comm_s: float
    buckets: list = field(default_factory=list)
    ranks: list = field(default_factory=list)
    collectives: list = field(default_factory=list)

    @property
    def comm_share(self) -> float:
        return self.comm_s / self.seconds if self.seconds else 0.0

    @property
    def overlap_s(self) -> float:
        """Communication time hidden under compute: compute + comm - total."""
        return self.compute_s + self.comm_s - self.seconds


class DataParallelTrainer:
    """What p.compile returns for ``parallel_strategy="data_parallel"`` and a list of
    layers: ``value_and_grad(loss_fn, x, target, params=None)`` trains one step (see the
    module doc), ``run(x)`` is the forward with the batch split over the ranks;
    ``last_report`` is the step's timeline."""

    def __init__(self, model, config):
        self.config = config
        self.layers = L.parse_layers(model, "p.compile (data_parallel training)")
        self.mesh = config.mesh()
        self.d = config.data_parallel_size or self.mesh.size
        if self.d != self.mesh.size:
            raise PyptoValueError(
                f"p.compile: data_parallel_size {self.d} on a mesh of {self.mesh.size} ranks", location=user_location(),
                suggestions=[f"use device_mesh=[{self.d}]"])
        self.cap = int(config.bucket_cap_mb * 1024 * 1024)
        self.k = config.gradient_accumulation_steps
        self.last_report = None

    def _spec(self):
        names = self.mesh.axis_names
        return PartitionSpec(names if len(names) > 1 else names[0])

    def _check_batch(self, arr, op, parts):
        if arr.ndim == 0 or arr.shape[0] % parts:
            raise PyptoValueError(
                f"DataParallelTrainer.{op}: a batch of {arr.shape[0] if arr.ndim else 0} rows does not split into {parts} "
                f"equal parts ({self.d} ranks x {self.k} gradient_accumulation_steps)" if op != "run" else
                f"DataParallelTrainer.run: a batch of {arr.shape[0] if arr.ndim else 0} rows does not split over {self.d} ranks",
                location=user_location(), suggestions=["make the batch a multiple of that"])

    def buckets(self, layers=None) -> list:
        """The gradient buckets in backward order: lists of (layer, parameter) indices,
        each at most bucket_cap_mb (a larger parameter gets a bucket of its own) and of
        one dtype."""
        out, cur, size, dt = [], [], 0, None
        for i in reversed(range(len(self.layers))):
            for k in reversed(range(len(self.layers[i].params))):
                w = (layers or self.layers)[i].params[k]
                if cur and (size + w.nbytes > self.cap or w.dtype != dt):
                    out.append(cur)
                    cur, size = [], 0
                cur.append((i, k))
                size, dt = size + w.nbytes, w.dtype
        if cur:
            out.append(cur)
        return out

    def run(self, x):
        """The forward of the layers with x split along axis 0 over the ranks; the
        outputs joined (a p.Tensor)."""
        arr = _host(x, "DataParallelTrainer.run", "x")
        self._check_batch(arr, "run", self.d)
        layers = self.layers

        def rank_fn(xs):
            h = xs.numpy()
            for layer in layers:
                h, _ = L.chunk_forward([layer], h, need_dx=False, train=False)
            return from_numpy(h)

        out = shard_map(rank_fn, self.mesh, in_specs=(self._spec(),), out_specs=self._spec(),
                        backend=self.config.backend, workers=self.config.workers)(arr)
        self.last_report = last_report()
        return out

    def value_and_grad(self, loss_fn, x, target, params=None):
        """One training step's gradients: (loss, grads), the loss the mean of
        ``loss_fn(y, target)`` over the micro-batches of every rank (a p.Tensor), grads
        a list per layer of its parameters' gradients (p.Tensors), equal on every rank
        after the all-reduce."""
        op = "DataParallelTrainer.value_and_grad"
        if not callable(loss_fn):
            raise check.fail(op, "loss_fn", loss_fn, "a function loss_fn(y, target)")
        layers = L.with_params(self.layers, params, op)
        xa, ta = _host(x, op, "x"), _host(target, op, "target")
        for a in (xa, ta):
            self._check_batch(a, "value_and_grad", self.d * self.k)
        buckets, k, scale = self.buckets(layers), self.k, 1.0 / (self.d * self.k)

        def rank_fn(xs, ts):
            acc = [None] * len(layers)  # per layer: its gradients summed over the micro-batches so far
            loss = 0.0
            works = []
            for j, (xm, tm) in enumerate(zip(np.split(xs.numpy(), k), np.split(ts.numpy(), k))):
                last_micro = j == k - 1
                saved, h = [], xm
                for i, layer in enumerate(layers):
                    lf = (loss_fn, tm, scale) if i == len(layers) - 1 else None
                    h, sv = L.chunk_forward([layer], h, need_dx=i > 0, train=True, loss=lf)
                    saved.append(sv)
                loss += float(np.asarray(h).reshape(-1)[0])
                dy, pending = None, list(buckets)
                done = set()
                for i in reversed(range(len(layers))):
                    dy, g = L.chunk_backward(saved[i], dy, None if j == 0 else acc[i:i + 1])
                    acc[i] = g[0]
                    done.update((i, kk) for kk in range(len(g[0])))
                    while last_micro and pending and all(b in done for b in pending[0]):
                        bucket = pending.pop(0)
                        flat = np.concatenate([acc[a][b].reshape(-1) for a, b in bucket]).astype(layers[bucket[0][0]].params[bucket[0][1]].dtype)
                        works.append((bucket, C.all_reduce(flat, async_op=True)))
            out = [None] * sum(len(layer.params) for layer in layers)
            offsets = np.cumsum([0] + [len(layer.params) for layer in layers])
            for bucket, work in works:
                flat, at = work.wait().numpy(), 0
                for a, b in bucket:
                    n = layers[a].params[b].size
                    out[offsets[a] + b] = from_numpy(flat[at:at + n].reshape(layers[a].params[b].shape))
                    at += n
            return (from_numpy(np.array([loss], np.float32)), *out)

        n_params = sum(len(layer.params) for layer in layers)
        res = shard_map(rank_fn, self.mesh, in_specs=(self._spec(), self._spec()),
                        out_specs=[self._spec()] + [None] * n_params,
                        backend=self.config.backend, workers=self.config.workers)(xa, ta)
        rep = last_report()
        slow = max(rep.ranks, key=lambda r: r.total_s)
        self.last_report = DataParallelReport(
            rep.seconds, slow.compute_s, slow.comm_s,
            [{"layers": sorted({a for a, _ in b}), "bytes": int(sum(layers[a].params[c].nbytes for a, c in b))} for b in buckets],
            rep.ranks, rep.collectives)
        grads, at = [], 1
        for layer in layers:
            grads.append(list(res[at:at + len(layer.params)]))
            at += len(layer.params)
        loss = float(np.sum(res[0].numpy(), dtype=np.float64))
        return from_numpy(np.asarray(loss, np.float32)), grads

    def __repr__(self) -> str:
        return f"DataParallelTrainer({len(self.layers)} layers, {self.d} ranks, bucket {self.config.bucket_cap_mb} MB, accumulate {self.k})"
