"""PyPTO: tensor programs compiled through four graph levels to the PTO virtual ISA and
run on a simulated Ascend-style NPU.

    import pypto as p
    x = p.from_numpy(a)                 # any numpy array: float32/float16/bfloat16/int8/int32/int64/bool
    y = p.relu(x @ w + b)               # lazy: builds a pending graph, shapes checked now
    y.numpy()                           # compile (cached by structure) and run on the device

    f = p.compile(lambda x: p.relu(x @ w))
    f.run(a); f.last_cycles, f.last_time_ms
"""

# The private core (_core/): the C library, errors, dtypes, symbols.
from ._core import lib as _lib
from ._core.dtypes import DType, bfloat16, bool_, float16, float32, int8, int32, int64
from ._core.errors import (
    CompileError,
    DeviceError,
    DTypeError,
    ErrorInfo,
    InternalError,
    Location,
    PyptoError,
    PyptoIndexError,
    PyptoIOError,
    PyptoTypeError,
    PyptoMemoryError,
    PyptoValueError,
    ShapeError,
    SymbolicShapeError,
)
from ._core.symbolic import Dim, symbol

# The tensor level (tensor_level/): p.Tensor, layouts and the ops. Later star imports
# win a name two modules share, so the order is the API's.
from .tensor_level.tensor import Tensor, from_numpy, promote_types
from .tensor_level.layouts import CHWN, NCHW, ND, NHWC, NZ, Layout
from .tensor_level.layout_transform import layout_transform
from .tensor_level import (
    conv as _conv,
    creation as _creation,
    nn as _nn,
    ops as _ops,
    reductions as _reductions,
    shape_ops as _shape_ops,
    update as _update,
)
from .tensor_level import methods as _methods  # noqa: F401  (attaches the Tensor methods)
from .tensor_level.conv import *  # noqa: F401,F403
from .tensor_level.update import *  # noqa: F401,F403
from .tensor_level.creation import *  # noqa: F401,F403
from .tensor_level.nn import *  # noqa: F401,F403
from .tensor_level.ops import *  # noqa: F401,F403
from .tensor_level.reductions import *  # noqa: F401,F403
from .tensor_level.shape_ops import *  # noqa: F401,F403
from .tensor_level.einsum import einsum
from .tensor_level.masking import masked_fill, masked_select, nonzero
from .tensor_level.dropout import dropout

# The tile level (tile_level/).
from .tile_level import ops as _tile_ops
from .tile_level.tile import Tile, TileGrid, tile, tile_concat
from .tile_level.config import TileConfig
from .tile_level.ops import *  # noqa: F401,F403

# The tools (tools/) and the runtime (runtime/).
from .tools.profile import ProfileConfig, ProfileResult, compare_profiles
from .tools.progress import set_progress
from .tools.visualize import Visualization
from .runtime.executor import Executor, RunReport, compile
from .runtime.pto_as import load_pto
from .runtime.graph import Graph, GraphEdge, GraphNode
from .runtime.pool import MemoryPool
from .runtime.config import CompileConfig
from .runtime.device import cache_info, clear_cache, composite_ops, get_device, last_stats, lowered_ops, set_device
from .runtime.tile_recommend import TileChoice, recommend_tile

# Gradients and optimisers (autodiff/).
from .autodiff import gradients as _gradients  # noqa: F401  (attaches requires_grad, grad, backward)
from .autodiff.gradients import differentiable_ops, grad, realize_all, value_and_grad
from .autodiff import optim

# PyTorch in and out (torch_interop/).
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
    "load_pto",
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
    "PyptoIOError",
    "InternalError",
    "ErrorInfo",
    "Location",
]

# The block level (block_level/): kernels of PTO programs, and tiles accepted by the
# tensor-level functions while a kernel is traced.
from .block_level import kernel as _block  # noqa: E402
from .block_level.kernel import *  # noqa: F401,F403,E402

_block.install(globals())
__all__ += _block.__all__

# Multi-chip meshes and collectives (distributed/).
from . import distributed  # noqa: E402
from .distributed import shard_map  # noqa: E402
from .distributed.executor import DistributedConfig, DistributedExecutor  # noqa: E402

__all__ += ["distributed", "shard_map", "DistributedConfig", "DistributedExecutor"]

# Old module names (PyPTO 0.1.0's flat package) still import, for pickles and old code;
# installed last, when every public name is bound.
import sys  # noqa: E402

from ._core import moved_modules as _moved_modules  # noqa: E402

_moved_modules.install(sys.modules[__name__])
__getattr__ = _moved_modules.package_getattr
