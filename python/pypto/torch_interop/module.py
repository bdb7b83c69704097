"""``p.from_torch(module)``: an nn.Module traced with torch.fx and compiled by PyPTO."""

from __future__ import annotations

import torch
import torch.fx

from .._core.errors import CompileError, PyptoTypeError
from .._core.location import user_location
from ..runtime.executor import compile as _p_compile
from ..tensor_level.tensor import Tensor, as_tensor
from .graph import GraphFunction, describe, node_location, node_source, why_unsupported
from .tensors import tensor_from_torch


class TorchModel:
    """An nn.Module as a PyPTO program. Call it with torch tensors (results are torch
    tensors sharing PyPTO's memory), numpy arrays or p.Tensors (results are p.Tensors).

    The module is traced once with torch.fx; each input signature (shapes and dtypes) is
    compiled through the four graph levels once, by ``p.compile``. Parameters and buffers
    are **shared, not copied**: the compiled program reads the torch tensors' memory, so
    an in-place update of the weights (``optimizer.step()``, ``param.data.copy_()``) is
    seen by the next call; rebinding a parameter to a new tensor (``m.weight =
    nn.Parameter(...)``) is not (import the module again). The module must stay alive
    (this object keeps a reference to it).

    ``executor`` is the p.compile Executor (``dump()``, ``stats()``, ``last_time_ms``);
    ``graph_module`` the traced torch.fx GraphModule."""

    def __init__(self, module: torch.nn.Module, config=None, dynamic=False):
        self.module = module
        self.graph_module = _trace(module)
        _check_supported(self.graph_module, type(module).__qualname__)
        self._fn = GraphFunction(self.graph_module)
        self._names = [n.target for n in self._fn.placeholders]
        name = type(module).__qualname__

        def forward(*tensors):
            return self._fn(*tensors)

        forward.__name__ = name
        self.executor = _p_compile(forward, config, dynamic=dynamic)

    def __call__(self, *args, **kwargs):
        inputs = self._bind(args, kwargs)
        torch_in = any(isinstance(a, torch.Tensor) for a in inputs)
        tensors = [tensor_from_torch(a, quiet=True) if isinstance(a, torch.Tensor) else as_tensor(a, "from_torch model", f"input {i}") for i, a in enumerate(inputs)]
        outs = self.executor.run(*tensors)
        outs = [outs] if isinstance(outs, Tensor) else list(outs)
        if torch_in:
            outs = [o.to_torch() for o in outs]
        return self._fn.rebuild(outs)

    forward = __call__

    def _bind(self, args, kwargs) -> list:
        if len(args) > len(self._names):
            raise PyptoTypeError(f"{type(self.module).__qualname__} takes {len(self._names)} input(s), got {len(args)}", location=user_location())
        values = dict(zip(self._names, args))
        for k, v in kwargs.items():
            if k not in self._names or k in values:
                raise PyptoTypeError(f"{type(self.module).__qualname__}: unexpected or repeated input {k!r}", location=user_location())
            values[k] = v
        missing = [n for n in self._names if n not in values]
        if missing:
            raise PyptoTypeError(f"{type(self.module).__qualname__}: missing input(s) {missing}", location=user_location())
        return [values[n] for n in self._names]

    def __repr__(self) -> str:
        return f"<pypto.TorchModel of {type(self.module).__qualname__}: {self.executor.num_compiled} compiled program(s)>"


def _trace(module: torch.nn.Module) -> torch.fx.GraphModule:
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    tracer.proxy_buffer_attributes = True  # buffers sliced by traced sizes (self.pos[:t])
    try:
        graph = tracer.trace(module)
    except Exception as e:  # noqa: BLE001 (torch.fx raises TraceError, TypeError, RuntimeError, ...)
        raise CompileError(
            f"from_torch: torch.fx cannot trace {type(module).__qualname__}: {e}",
            location=user_location(),
            suggestions=[
                "control flow that depends on tensor values cannot be traced; torch.compile(model, backend='pypto') "
                "runs such models, with the traceable parts on PyPTO",
            ],
        ) from None
    return torch.fx.GraphModule(tracer.root, graph, type(module).__qualname__)


def _check_supported(gm: torch.fx.GraphModule, name: str) -> None:
    """Raises one error listing every node PyPTO cannot run, with its source line."""
    bad = []
    for node in gm.graph.nodes:
        why = why_unsupported(node, gm)
        if why is not None:
            bad.append((node, why))
    if not bad:
        return
    lines = [f"  {describe(n, gm)}: {why}\n    at {node_source(n)}" for n, why in bad]
    raise CompileError(
        f"from_torch: {len(bad)} operation(s) of {name} cannot run on PyPTO:\n" + "\n".join(lines),
        location=node_location(bad[0][0]),
        suggestions=[
            "rewrite them with supported operations (docs/api.md, 'torch interop', lists them)",
            "or use torch.compile(model, backend='pypto'), which runs the unsupported parts in torch",
        ],
    )


def from_module(module, config=None, dynamic=False) -> TorchModel:
    if not isinstance(module, torch.nn.Module):
        raise PyptoTypeError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}", location=user_location())
    return TorchModel(module, config, dynamic)
