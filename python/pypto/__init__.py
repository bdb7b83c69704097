"""PyPTO: tensor programs compiled through four graph levels to the PTO virtual ISA and
run on a simulated Ascend-style NPU.

    import pypto as p
    x = p.from_numpy(a)                 # any numpy array: float32/float16/bfloat16/int8/int32/int64/bool
    y = p.relu(x @ w + b)               # lazy: builds a pending graph, shapes checked now
    y.numpy()                           # compile (cached by structure) and run on the device

    f = p.compile(lambda x: p.relu(x @ w))
    f.run(a); f.last_cycles, f.last_time_ms
"""

from . import _lib
from .compile import Executor, RunReport, compile
from .graph import Graph, GraphEdge, GraphNode
from .pool import MemoryPool
from .config import CompileConfig
from .profile import ProfileConfig, ProfileResult, compare_profiles
from .progress import set_progress
from .visualize import Visualization
from .device import cache_info, clear_cache, get_device, last_stats, set_device
from .dtypes import DType, bfloat16, bool_, float16, float32, int8, int32, int64
from .errors import (
    CompileError,
    DeviceError,
    DTypeError,
    ErrorInfo,
    InternalError,
    Location,
    PyptoError,
    PyptoIndexError,
    PyptoTypeError,
    PyptoMemoryError,
    PyptoValueError,
    ShapeError,
    SymbolicShapeError,
)
from .tensor import Tensor, from_numpy, promote_types
from .symbolic import Dim, symbol
from .layouts import CHWN, NCHW, ND, NHWC, NZ, Layout, layout_transform
from . import conv as _conv, update as _update, creation as _creation, nn as _nn, ops as _ops, reductions as _reductions, shape_ops as _shape_ops
from . import methods as _methods  # noqa: F401  (attaches the Tensor methods)
from .conv import *  # noqa: F401,F403
from .update import *  # noqa: F401,F403
from . import autograd as _autograd  # (attaches requires_grad, grad, backward)
from .autograd import differentiable_ops, grad, realize_all, value_and_grad
from . import optim
from .creation import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .ops import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape_ops import *  # noqa: F401,F403
from .einsum import einsum
from .masking import masked_fill, masked_select, nonzero
from .dropout import dropout
from .device import composite_ops, lowered_ops
from . import tile_ops as _tile_ops
from .tile import Tile, TileGrid, tile, tile_concat
from .tile_config import TileConfig
from .tile_ops import *  # noqa: F401,F403
from .tile_recommend import TileChoice, recommend_tile
from .torch_interop import CopyWarning, external_memory, from_dlpack, from_torch, last_fallbacks, to_torch

__version__ = "0.1.0"
ABI_VERSION = _lib.ABI_VERSION

__all__ = [
    "Tensor",
    "from_numpy",
    "from_torch",
    "to_torch",
    "from_dlpack",
    "CopyWarning",
    "external_memory",
    "last_fallbacks",
    "promote_types",
    "symbol",
    "Dim",
    "Layout",
    "ND",
    "NCHW",
    "NHWC",
    "CHWN",
    "NZ",
    "layout_transform",
    "lowered_ops",
    "composite_ops",
    "ProfileConfig",
    "ProfileResult",
    "compare_profiles",
    "set_progress",
    *_conv.__all__,
    *_update.__all__,
    *_creation.__all__,
    *_nn.__all__,
    *_ops.__all__,
    *_reductions.__all__,
    *_shape_ops.__all__,
    "einsum",
    "nonzero",
    "masked_select",
    "masked_fill",
    "dropout",
    "tile",
    "Tile",
    "TileGrid",
    "tile_concat",
    "TileConfig",
    *_tile_ops.__all__,
    "recommend_tile",
    "TileChoice",
    "compile",
    "Executor",
    "grad",
    "value_and_grad",
    "realize_all",
    "differentiable_ops",
    "optim",
    "RunReport",
    "Graph",
    "GraphNode",
    "GraphEdge",
    "MemoryPool",
    "CompileConfig",
    "Visualization",
    "set_device",
    "get_device",
    "last_stats",
    "cache_info",
    "clear_cache",
    "DType",
    "float32",
    "float16",
    "bfloat16",
    "int8",
    "int32",
    "int64",
    "bool_",
    "PyptoError",
    "CompileError",
    "ShapeError",
    "SymbolicShapeError",
    "DTypeError",
    "PyptoMemoryError",
    "PyptoValueError",
    "PyptoTypeError",
    "PyptoIndexError",
    "DeviceError",
    "InternalError",
    "ErrorInfo",
    "Location",
]

# The block level (python/pypto/block.py): kernels of PTO programs, and tiles accepted by
# the tensor-level functions while a kernel is traced.
from . import block as _block  # noqa: E402
from .block import *  # noqa: F401,F403,E402

_block.install(globals())
__all__ += _block.__all__

# Multi-chip meshes and collectives (python/pypto/distributed.py).
from . import distributed  # noqa: E402
from .distributed import shard_map  # noqa: E402
from ._dist_executor import DistributedConfig, DistributedExecutor  # noqa: E402

__all__ += ["distributed", "shard_map", "DistributedConfig", "DistributedExecutor"]
