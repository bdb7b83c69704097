"""torch tensors to p.Tensors and back, through DLPack."""

from __future__ import annotations

import warnings

import torch

from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import Tensor
from .dlpack import CopyWarning, import_dlpack


def tensor_from_torch(t: torch.Tensor, copy=None, quiet: bool = False) -> Tensor:
    """A p.Tensor of t: its memory shared when t is a C-contiguous CPU tensor of a PyPTO
    dtype, else a copy (with a CopyWarning unless copy=True or quiet). A tensor that
    requires grad is read through ``t.detach()`` (the same memory)."""
    if t.is_sparse or t.layout != torch.strided:
        raise PyptoValueError(f"from_torch: a {t.layout} tensor is not supported; convert it with t.to_dense()", location=user_location())
    t = t.detach()
    if t.device.type != "cpu":
        if copy is False:
            raise PyptoValueError(f"from_torch: the tensor is on {t.device}; sharing it needs a CPU tensor", location=user_location())
        if copy is None and not quiet:
            warnings.warn(f"from_torch copies the data: the tensor is on {t.device}, PyPTO reads host memory", CopyWarning, stacklevel=3)
        t, copy = t.cpu(), True
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    if quiet and copy is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CopyWarning)
            return import_dlpack(t, None, "from_torch")
    return import_dlpack(t, copy, "from_torch")


def to_torch(x: Tensor) -> torch.Tensor:
    """The tensor's value as a torch tensor sharing its memory (no copy): PyPTO treats
    the buffer as immutable and may share it with other tensors, so clone() the result
    before writing to it."""
    return torch.from_dlpack(x)


Tensor.to_torch = to_torch
