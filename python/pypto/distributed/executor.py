"""p.DistributedConfig and the executor p.compile returns for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..runtime.executor import register_executor_factory
from ..runtime.graph import Graph
from ..tensor_level.shape_ops import squeeze, unsqueeze
from ..tensor_level.tensor import Tensor, from_numpy
from .mesh import Mesh, PartitionSpec
from .shard_map import last_report, shard_map

STRATEGIES = ("data_parallel", "model_parallel", "pipeline_parallel", "hybrid")
SCHEDULES = ("gpipe", "1f1b", "interleaved_1f1b")
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class DistributedConfig:
    """How p.compile spreads a model over a mesh of simulated chips (the guide's
    ``p.DistributedConfig``). ``device_mesh`` is the mesh's shape (``[2, 2]``; default:
    one axis as long as the parallel sizes given multiply to, else 8),
    ``mesh_axis_names`` its axes (default "dp", "tp", "pp" for the sizes given), ``preset``
    the physical mesh (docs/distributed.md). ``backend="ray"`` runs the ranks in
    ``workers`` Ray actors instead of threads of this process (same values and times;
    ``pip install 'pypto[distributed]'``). Today ``parallel_strategy="data_parallel"``
    runs: every rank runs the model on its part of the batch; "model_parallel" and
    "hybrid" run the tensor-parallel pass (tp_plan.py, docs/distributed.md "Tensor
    parallel"). With a model given as a list of layers (or, for "pipeline_parallel",
    a traced function or p.Graph cut into layers), "pipeline_parallel" runs its
    stages over micro-batches in ``schedule``'s order (pipeline.py; ``virtual_stages``
    chunks per chip for "interleaved_1f1b") and "data_parallel" trains with gradient
    buckets of ``bucket_cap_mb`` and ``gradient_accumulation_steps`` (dp_train.py)."""

    parallel_strategy: str = "data_parallel"
    device_mesh: Optional[Sequence[int]] = None
    tensor_parallel_size: Optional[int] = None
    pipeline_parallel_size: Optional[int] = None
    data_parallel_size: Optional[int] = None
    mesh_axis_names: Optional[Sequence[str]] = None
    num_microbatches: int = 1
    schedule: str = "1f1b"
    preset: str = "a2-node"
    backend: str = "local"
    workers: Optional[int] = None
    virtual_stages: int = 2  # chunks per chip of the "interleaved_1f1b" schedule
    bucket_cap_mb: float = 25.0  # data-parallel gradient buckets (torch DDP's default)
    gradient_accumulation_steps: int = 1
    overlap_p2p_launch: bool = True  # a pipeline's sends launch while the step producing them computes

    def __post_init__(self):
        op = "DistributedConfig"
        check.choice(self.parallel_strategy, "parallel_strategy", op, STRATEGIES)
        check.choice(self.schedule, "schedule", op, SCHEDULES)
        check.choice(self.backend, "backend", op, BACKENDS)
        check.integer(self.workers, "workers", op, lo=1, optional=True)
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
            check.integer(getattr(self, name), name, op, lo=1, optional=True)
        if self.device_mesh is None:  # one axis of the sizes given, else an A2 server's 8 chips
            sizes = [getattr(self, n) for n in ("data_parallel_size", "tensor_parallel_size", "pipeline_parallel_size")]
            object.__setattr__(self, "device_mesh", (int(np.prod([s or 1 for s in sizes])) if any(sizes) else 8,))
        shape = check.shape(self.device_mesh, "device_mesh", op, symbolic=False)
        if not shape or any(d < 1 for d in shape):
            raise check.fail(op, "device_mesh", self.device_mesh, "a list of positive mesh sizes, e.g. [2, 2]", PyptoValueError)
        object.__setattr__(self, "device_mesh", tuple(int(d) for d in shape))
        check.integer(self.num_microbatches, "num_microbatches", op, lo=1)
        check.integer(self.virtual_stages, "virtual_stages", op, lo=1)
        check.integer(self.gradient_accumulation_steps, "gradient_accumulation_steps", op, lo=1)
        check.flag(self.overlap_p2p_launch, "overlap_p2p_launch", op)
        object.__setattr__(self, "bucket_cap_mb", check.number(self.bucket_cap_mb, "bucket_cap_mb", op, lo=0))
        if self.bucket_cap_mb <= 0:
            raise check.fail(op, "bucket_cap_mb", self.bucket_cap_mb, "a positive size in MB", PyptoValueError)
        names = self.mesh_axis_names
        if names is not None:
            if isinstance(names, str) or not isinstance(names, (list, tuple)) or len(names) != len(self.device_mesh) \
                    or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
                raise check.fail(op, "mesh_axis_names", names, f"{len(self.device_mesh)} distinct axis names, one per device_mesh axis",
                                 PyptoValueError)
            object.__setattr__(self, "mesh_axis_names", tuple(names))
        if not isinstance(self.preset, str):
            raise check.fail(op, "preset", self.preset, 'a mesh preset name such as "a2-node"')
        self.mesh()  # the preset exists and holds the ranks
        size = int(np.prod(self.device_mesh))
        given = [getattr(self, n) or 1 for n in ("data_parallel_size", "tensor_parallel_size", "pipeline_parallel_size")]
        if any(getattr(self, n) for n in ("data_parallel_size", "tensor_parallel_size", "pipeline_parallel_size")) \
                and int(np.prod(given)) != size:
            raise PyptoValueError(
                f"DistributedConfig: data x tensor x pipeline parallel sizes {given[0]} x {given[1]} x {given[2]} = "
                f"{int(np.prod(given))} do not cover the {size} ranks of device_mesh {list(self.device_mesh)}",
                location=user_location(), suggestions=["make their product equal the number of ranks in device_mesh"])

    def mesh(self) -> Mesh:
        names = self.mesh_axis_names
        if names is None:
            names = ("dp",) if len(self.device_mesh) == 1 else tuple(f"axis{i}" for i in range(len(self.device_mesh)))
        return Mesh(self.device_mesh, names, preset=self.preset)


def distributed_executor(fn, config: DistributedConfig):
    """The executor of a parallel strategy (p.compile with a DistributedConfig). The
    pipeline cuts a p.Graph's own trace; the other strategies trace its function per
    input signature."""
    if not callable(fn) and not isinstance(fn, (list, tuple, Graph)):
        raise check.fail("p.compile", "fn", fn, "a function, a p.Graph, or a list of layers (pipeline and data-parallel training)")
    if isinstance(fn, Graph) and config.parallel_strategy != "pipeline_parallel":
        fn = fn._fn
    if config.parallel_strategy in ("model_parallel", "hybrid"):
        from .tp_executor import TensorParallelExecutor

        return TensorParallelExecutor(fn, config)
    if config.parallel_strategy == "pipeline_parallel":
        from .pipeline import PipelineExecutor

        return PipelineExecutor(fn, config)
    if config.parallel_strategy == "data_parallel" and isinstance(fn, (list, tuple)):
        from .dp_train import DataParallelTrainer

        return DataParallelTrainer(fn, config)
    return DistributedExecutor(fn, config)


register_executor_factory(DistributedConfig, distributed_executor)


class DistributedExecutor:
    """Runs a model on every rank of a mesh (p.compile with a DistributedConfig)."""

    def __init__(self, fn, config: DistributedConfig):
        self.fn, self.config = fn, config
        self.mesh = config.mesh()
        if config.parallel_strategy != "data_parallel":  # pipeline_parallel
            raise PyptoValueError(
                f"p.compile: parallel_strategy {config.parallel_strategy!r} is not built yet (its parallelising passes "
                "and pipeline schedules are missing)",
                location=user_location(),
                suggestions=["write the tensor- or pipeline-parallel program with p.shard_map and p.distributed's "
                             "collectives (docs/distributed.md, examples/distributed.py)",
                             'or use parallel_strategy="data_parallel"'])

    def run(self, inputs):
        """Data parallel: ``inputs`` is a list with one input (or tuple of inputs) per rank,
        or one global batch that is split along axis 0 over the ranks. Returns the
        per-rank outputs as a list (a list input) or the concatenated outputs."""
        n = self.mesh.size
        per_rank = isinstance(inputs, list)
        if per_rank:
            if len(inputs) != n:
                raise PyptoValueError(f"DistributedExecutor.run: {len(inputs)} inputs for the {n} ranks of the mesh",
                                      location=user_location(), suggestions=["give one input per rank, or one batch to split"])
            args = [a if isinstance(a, tuple) else (a,) for a in inputs]
            stacked = [np.stack([np.asarray(args[r][i]) for r in range(n)]) for i in range(len(args[0]))]
        else:
            stacked = [np.asarray(a) for a in (inputs if isinstance(inputs, tuple) else (inputs,))]
        axis = self.mesh.axis_names
        spec = PartitionSpec(axis if len(axis) > 1 else axis[0])

        def rank_fn(*shards):
            if per_rank:  # drop the stacking axis
                shards = [squeeze(s, 0) for s in shards]
            out = self.fn(*shards)
            if not isinstance(out, Tensor):
                raise PyptoValueError("DistributedExecutor: the model must return one p.Tensor", location=user_location())
            return unsqueeze(out, 0) if per_rank else out

        out = shard_map(rank_fn, self.mesh, in_specs=tuple(spec for _ in stacked), out_specs=spec,
                        backend=self.config.backend, workers=self.config.workers)(*stacked)
        self.last_report = last_report()
        if per_rank:
            return [from_numpy(np.squeeze(a, 0)) for a in np.split(out.numpy(), n)]
        return out

    def __repr__(self) -> str:
        return f"DistributedExecutor({getattr(self.fn, '__name__', 'model')}, {self.config.parallel_strategy}, {self.mesh})"
