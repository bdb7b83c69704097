"""PyTorch interop: ``p.from_torch`` (tensors and nn.Modules), ``Tensor.to_torch``,
``p.from_dlpack`` and ``Tensor.__dlpack__``, and the ``torch.compile`` backend
"pypto" (``dynamo.py``). torch is optional (``pip install pypto[torch]``): importing
pypto never imports it; the functions here import it on first use."""

from __future__ import annotations

from .._core import validate as check
from .._core.errors import PyptoTypeError
from .._core.location import user_location
from ..runtime.config import CompileConfig
from ..tensor_level.tensor import as_tensor
from .dlpack import CopyWarning, external_memory, from_dlpack

__all__ = ["from_torch", "from_dlpack", "CopyWarning", "external_memory", "last_fallbacks"]

INSTALL_HINT = "install it with: pip install 'pypto[torch]' (torch from PyPI on Linux is a CUDA build of several GB)"


def _torch():
    try:
        import torch
    except ImportError:
        raise PyptoTypeError(f"this needs PyTorch, which is not installed: {INSTALL_HINT}", location=user_location()) from None
    from . import tensors  # noqa: F401  (attaches Tensor.to_torch)

    return torch


def from_torch(obj, copy=None, *, config=None, dynamic=None):
    """A torch tensor or nn.Module in PyPTO.

    - a ``torch.Tensor`` gives a p.Tensor sharing its memory when it is a C-contiguous
      CPU tensor of float32, float16, bfloat16, int8, int32 or bool; otherwise a copy
      with a :class:`CopyWarning` saying why (``copy=True``: copy silently,
      ``copy=False``: raise instead). int64 tensors are copied to int32 (values
      range-checked).
    - an ``nn.Module`` gives a :class:`TorchModel`: captured at its first call with an
      input signature as torch.compile captures it (dynamo, one whole graph; torch.fx
      when dynamo cannot), its torch operations mapped to PyPTO ops, compiled by
      ``p.compile`` with ``config``; weights shared, not copied. Operations PyPTO cannot
      run raise one CompileError listing each with its source line. ``dynamic`` says
      which sizes are symbolic, as torch.compile's does: None, the dims that change
      after the first call; True, every dim of the tensor inputs; a dict, the dims it
      names ({"input_ids": (0, 1)}); False, none (a capture per input signature). One
      capture with symbolic sizes is one PyPTO trace, run with a program per bucket of
      sizes."""
    copy = None if copy is None else check.flag(copy, "copy", "from_torch")
    if config is not None and not isinstance(config, CompileConfig):
        raise check.fail("from_torch", "config", config, "a p.CompileConfig or None")
    dynamic = check.dynamic_dims(dynamic, "dynamic", "from_torch")
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        from .tensors import tensor_from_torch

        return tensor_from_torch(obj, copy=copy)
    if isinstance(obj, torch.nn.Module):
        from .module import from_module

        return from_module(obj, config=config, dynamic=dynamic)
    raise check.fail("from_torch", "obj", obj, "a torch.Tensor or a torch.nn.Module")


def to_torch(x):
    """``x.to_torch()``: a p.Tensor's value as a torch tensor sharing its memory (a
    numpy array or a scalar is made a p.Tensor first)."""
    x = as_tensor(x, "to_torch", "x")
    _torch()
    return x.to_torch()


def last_fallbacks() -> list:
    """The operations the last model compiled by ``torch.compile(backend="pypto")`` runs
    in torch rather than on PyPTO, in every graph dynamo made of it (the graphs compiled
    from one line of the caller's code): a list of dicts {"op", "reason", "where",
    "graph"} (empty when everything ran on PyPTO, or before any compilation)."""
    from . import fallbacks

    return fallbacks.last()
