"""Element types: ``p.float32``, ``p.float16``, ``p.bfloat16``, ``p.int8``, ``p.int32``,
``p.int64``, ``p.bool_``. Each maps to a numpy dtype; bfloat16 is ``ml_dtypes.bfloat16``, imported on
first use because importing ml_dtypes takes most of a second."""

from __future__ import annotations

import numpy as np

from .errors import DTypeError
from .location import user_location

__all__ = ["DType", "float32", "float16", "bfloat16", "int8", "int32", "int64", "bool_", "as_dtype"]


class DType:
    """A PyPTO element type. ``code`` is its number in the C ABI."""

    __slots__ = ("name", "code", "itemsize", "_numpy")

    def __init__(self, name: str, code: int, np_dtype, itemsize: int):
        """``np_dtype`` is a numpy type, or None for bfloat16 (ml_dtypes, loaded by ``numpy``)."""
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self._numpy = None if np_dtype is None else np.dtype(np_dtype)

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype; for bfloat16 the first use imports ml_dtypes."""
        if self._numpy is None:
            self._numpy = _bfloat16_numpy()
        return self._numpy

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype: what ``numpy.dtype(p.float16)`` and ``numpy.zeros(n,
        dtype=p.float16)`` read."""
        return self.numpy

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
        # Equal objects hash alike: p.float16 == numpy.dtype("float16"), so a dict keyed
        # by either finds the other.
        return hash(self.numpy)

    def __reduce__(self):
        return (as_dtype, (self.name,))


def _bfloat16_numpy() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


# Codes are the Go dtype package's (and the C ABI's).
float32 = DType("float32", 1, np.float32, 4)
float16 = DType("float16", 2, np.float16, 2)
bfloat16 = DType("bfloat16", 3, None, 2)
int8 = DType("int8", 4, np.int8, 1)
int32 = DType("int32", 5, np.int32, 4)
bool_ = DType("bool", 6, np.bool_, 1)
# numpy's default integer: stored in 8 bytes, computed by the chip in int32 with the
# inputs of each run checked to fit (docs/ops.md, the int64 column).
int64 = DType("int64", 7, np.int64, 8)

ALL = (float32, float16, bfloat16, int8, int32, int64, bool_)
_BY_CODE = {d.code: d for d in ALL}
# bfloat16 is matched by name (a bfloat16 array means ml_dtypes is already loaded).
_BY_NUMPY = {d.numpy: d for d in ALL if d is not bfloat16}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"f32": float32, "f16": float16, "bf16": bfloat16, "i8": int8, "i32": int32, "i64": int64, "bool_": bool_})


def from_code(code: int) -> DType:
    return _BY_CODE[code]


def as_dtype(x) -> DType:
    """Converts a DType, numpy dtype (or type) or name to a DType.

    Raises DTypeError for types PyPTO does not support (e.g. float64, uint8).
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x.lower() in _BY_NAME:
        return _BY_NAME[x.lower()]
    try:
        nd = np.dtype(x)
    except Exception:  # noqa: BLE001 (numpy raises TypeError, ValueError, even SyntaxError for odd strings)
        nd = None
    if nd is not None:
        native = nd.newbyteorder("=") if nd.byteorder not in ("=", "|") else nd
        d = _BY_NUMPY.get(native)
        if d is not None:
            return d
        if native.name == "bfloat16" and native == bfloat16.numpy:
            return bfloat16
    hint = []
    if nd is not None and nd.kind == "f":
        hint = ["convert first, e.g. arr.astype(numpy.float32) (or float16 / ml_dtypes.bfloat16)"]
    elif nd is not None and nd.kind in "iu":
        hint = ["convert first, e.g. arr.astype(numpy.int32) (or int64, int8)"]
    raise DTypeError(
        f"unsupported dtype {str(nd) if nd is not None else repr(x)}: PyPTO supports float32, float16, bfloat16, int8, int32, int64 and bool",
        location=user_location(),
        suggestions=hint,
    )
