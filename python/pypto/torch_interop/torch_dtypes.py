"""The torch dtypes PyPTO has, and the dtype it runs each in (int64 indices as int32)."""

from __future__ import annotations

import torch

from .._core.dtypes import bfloat16, bool_, float16, float32, int8, int32

TORCH_DTYPES = {
    torch.float32: float32, torch.float16: float16, torch.bfloat16: bfloat16,
    torch.int8: int8, torch.int32: int32, torch.bool: bool_, torch.int64: int32,
}  # fmt: skip


def pypto_dtype(d):
    """The PyPTO dtype of a torch dtype (a PyPTO dtype or None passes through)."""
    if d is None or d in TORCH_DTYPES.values():
        return d
    if d in TORCH_DTYPES:
        return TORCH_DTYPES[d]
    raise TypeError(f"dtype {d} is not a PyPTO dtype")
