"""Element types: ``p.float32``, ``p.float16``, ``p.bfloat16``, ``p.int8``, ``p.int32``,
``p.bool_``. Each maps to a numpy dtype; bfloat16 is ``ml_dtypes.bfloat16``."""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["DType", "float32", "float16", "bfloat16", "int8", "int32", "bool_", "as_dtype"]


class DType:
    """A PyPTO element type. ``code`` is its number in the C ABI."""

    __slots__ = ("name", "code", "numpy")

    def __init__(self, name: str, code: int, np_dtype):
        self.name = name
        self.code = code
        self.numpy = np.dtype(np_dtype)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_floating(self) -> bool:
        return self.code in (1, 2, 3)

    def __repr__(self) -> str:
        return f"pypto.{self.name if self.name != 'bool' else 'bool_'}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.code == other.code
        try:
            return as_dtype(other).code == self.code
        except Exception:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(("pypto.DType", self.code))

    def __reduce__(self):
        return (as_dtype, (self.name,))


# Codes are the Go dtype package's (and the C ABI's).
float32 = DType("float32", 1, np.float32)
float16 = DType("float16", 2, np.float16)
bfloat16 = DType("bfloat16", 3, ml_dtypes.bfloat16)
int8 = DType("int8", 4, np.int8)
int32 = DType("int32", 5, np.int32)
bool_ = DType("bool", 6, np.bool_)

ALL = (float32, float16, bfloat16, int8, int32, bool_)
_BY_CODE = {d.code: d for d in ALL}
_BY_NUMPY = {d.numpy: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"f32": float32, "f16": float16, "bf16": bfloat16, "i8": int8, "i32": int32, "bool_": bool_})


def from_code(code: int) -> DType:
    return _BY_CODE[code]


def as_dtype(x) -> DType:
    """Converts a DType, numpy dtype (or type) or name to a DType.

    Raises DTypeError for types PyPTO does not support (e.g. float64, int64).
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x.lower() in _BY_NAME:
        return _BY_NAME[x.lower()]
    try:
        nd = np.dtype(x)
    except TypeError:
        nd = None
    if nd is not None:
        d = _BY_NUMPY.get(nd.newbyteorder("=") if nd.byteorder not in ("=", "|") else nd)
        if d is not None:
            return d
    from .errors import DTypeError
    from ._location import user_location

    hint = []
    if nd is not None and nd.kind == "f":
        hint = ["convert first, e.g. arr.astype(numpy.float32) (or float16 / ml_dtypes.bfloat16)"]
    elif nd is not None and nd.kind in "iu":
        hint = ["convert first, e.g. arr.astype(numpy.int32)"]
    raise DTypeError(
        f"unsupported dtype {nd if nd is not None else x!r}: PyPTO supports float32, float16, bfloat16, int8, int32 and bool",
        location=user_location(),
        suggestions=hint,
    )
