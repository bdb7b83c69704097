"""Multi-chip execution on a simulated mesh: meshes of chips, HCCL-style collectives and
per-rank functions (``p.shard_map``).

    mesh = p.distributed.Mesh((2, 4), ("dp", "tp"), preset="a2-node")

    def layer(x, w):                        # runs on every rank with its shards
        y = p.matmul(x, w)                  # this rank's columns of w: a partial sum
        return p.distributed.all_reduce(y, axis_name="tp")

    f = p.shard_map(layer, mesh, in_specs=(p.P("dp", "tp"), p.P("tp", None)), out_specs=p.P("dp", None))
    y = f(x, w)
    p.distributed.last_report().seconds     # the simulated time of the slowest rank

Every collective computes its values in the order of the algorithm that runs it (mesh,
ring, halving-doubling; chosen per tier and size, or forced with ``algorithm=``) and
takes the time of that algorithm's steps on the mesh's links. See docs/distributed.md.
"""

from .collectives import (
    Work,
    all_gather,
    all_reduce,
    all_to_all,
    axis_index,
    barrier,
    broadcast,
    collective_time,
    ppermute,
    psum,
    psum_scatter,
    rank,
    recv,
    reduce_scatter,
    send,
)
from .mesh import Mesh, P, PartitionSpec, init_device_mesh, make_mesh
from .ray_backend import WorkerError
from .rendezvous import CollectiveError
from .shard_map import RankReport, ShardMapReport, last_report, shard_map

__all__ = [
    "Mesh", "make_mesh", "init_device_mesh", "PartitionSpec", "P", "shard_map", "last_report",
    "ShardMapReport", "RankReport", "CollectiveError", "WorkerError", "Work", "all_reduce", "all_gather",
    "reduce_scatter", "all_to_all", "broadcast", "send", "recv", "barrier", "psum",
    "psum_scatter", "ppermute", "axis_index", "rank", "collective_time",
]
