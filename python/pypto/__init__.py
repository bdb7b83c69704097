"""PyPTO: tensor programs compiled through four graph levels to the PTO virtual ISA and
run on a simulated Ascend-style NPU.

    import pypto as p
    x = p.from_numpy(a)                 # any numpy array: float32/float16/bfloat16/int8/int32/bool
    y = p.relu(x @ w + b)               # lazy: builds a pending graph, shapes checked now
    y.numpy()                           # compile (cached by structure) and run on the device

    f = p.compile(lambda x: p.relu(x @ w))
    f.run(a); f.last_cycles, f.last_time_ms
"""

from . import _lib
from .compile import Executor, compile
from .device import cache_info, clear_cache, get_device, last_stats, set_device
from .dtypes import DType, bfloat16, bool_, float16, float32, int8, int32
from .errors import (
    CompileError,
    DeviceError,
    DTypeError,
    ErrorInfo,
    InternalError,
    Location,
    PyptoError,
    PyptoValueError,
    ShapeError,
)
from .ops import add, matmul, mul, relu
from .tensor import Tensor, from_numpy

__version__ = "0.1.0"
ABI_VERSION = _lib.ABI_VERSION

__all__ = [
    "Tensor",
    "from_numpy",
    "add",
    "mul",
    "matmul",
    "relu",
    "compile",
    "Executor",
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
    "bool_",
    "PyptoError",
    "CompileError",
    "ShapeError",
    "DTypeError",
    "PyptoValueError",
    "DeviceError",
    "InternalError",
    "ErrorInfo",
    "Location",
]
