"""``p.from_torch(module)``: an nn.Module captured as torch.compile captures it (dynamo,
one whole graph, with static or symbolic sizes) and compiled by PyPTO; torch.fx
symbolic tracing when dynamo cannot capture the module as one graph."""

from __future__ import annotations

import itertools
import re
import types

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .._core.errors import CompileError, PyptoTypeError
from .._core.location import user_location
from ..runtime.executor import compile as _p_compile
from ..tensor_level.tensor import Tensor, as_tensor
from .part import PyptoPart
from .fallbacks import log
from .graph import GraphFunction, describe, node_location, node_source, why_unsupported
from .support import unsupported_nodes
from .tensors import tensor_from_torch


class TorchModel:
    """An nn.Module as a PyPTO program. Call it with torch tensors (results are torch
    tensors sharing PyPTO's memory), numpy arrays or p.Tensors (results are p.Tensors).

    At its first call the module is captured the way ``torch.compile`` captures it, as
    one graph (dynamo; modules whose code dynamo cannot take as one graph are traced
    with torch.fx instead), and the graph is compiled through the four graph levels by
    ``p.compile``; every operation must run on PyPTO (otherwise one CompileError lists
    each with its source line). Parameters and buffers are **shared, not copied**: the
    compiled program reads the torch tensors' memory, so an in-place update of the
    weights (``optimizer.step()``, ``param.data.copy_()``) is seen by the next call.
    The module must stay alive (this object keeps a reference to it).

    Sizes (``dynamic``, as torch.compile's): with ``None`` the first capture has the
    first call's sizes and a call whose sizes differ is captured again with the dims
    that changed symbolic (dynamo's automatic dynamic shapes); ``True`` makes every dim
    of every tensor input symbolic from the first call, and a dict names the symbolic
    dims (``{"input_ids": (0, 1)}``, inputs by name or position), the others static;
    ``False`` captures each input signature on its own. A graph with symbolic sizes is
    traced by PyPTO once, with p.symbol dims named after the inputs' (``input_ids.1``),
    and runs with one program per bucket of sizes (docs/api.md, "Symbolic shapes").
    Sizes 0 and 1 stay concrete, as dynamo specialises them, and so does any dim the
    model's code branches on; a call that breaks a condition dynamo assumed (its
    guards) is captured again. ``captures`` records each capture: its symbols and why
    it was made.

    ``executor`` is the p.compile Executor of the last graph run (``dump()``,
    ``stats()``, ``last_time_ms``, ``num_traced``, ``num_compiled``); ``graph_module``
    that graph as a torch.fx GraphModule."""

    def __init__(self, module: torch.nn.Module, config=None, dynamic=None):
        self.module = module
        self._config, self._dynamic = config, dynamic
        self._part = None  # the PyptoPart of the last graph captured
        self._fx = None  # the torch.fx path: (GraphFunction, executor, input names)
        name = type(module).__qualname__
        self._name = name
        self._parts_run = 0
        self._arg_names = _arg_names(module)
        self.captures: list = []  # {"symbols", "static", "reason"} per dynamo capture
        self._parts: list = []  # the PyptoPart of each capture
        self._compiled = self._compile()

    def _compile(self):
        # dynamic=True and named dims mark the inputs' dims (_mark_dynamic): floats and
        # the other dims stay as dynamo treats them by default.
        dynamic = False if self._dynamic is False or isinstance(self._dynamic, dict) else None
        return torch.compile(_Captured(self.module), backend=self._capture, fullgraph=True, dynamic=dynamic)

    @property
    def graph_module(self):
        return self._fx[0].gm if self._fx else (self._part.torch_part if self._part else None)

    @property
    def executor(self):
        if self._fx:
            return self._fx[1]
        return self._part.executor if self._part else None

    @property
    def num_traced(self) -> int:
        """PyPTO traces of every capture: one per capture with symbolic sizes (one per
        input size for a static one)."""
        if self._fx:
            return self._fx[1].num_traced
        return sum(part.num_traced for part in self._parts)

    @property
    def num_compiled(self) -> int:
        """Programs compiled for every capture: one per bucket of sizes of a symbolic
        trace (one per size where padding would change the result)."""
        if self._fx:
            return self._fx[1].num_compiled
        return sum(part.num_compiled for part in self._parts)

    @property
    def per_size(self):
        """Why the last capture, though its sizes are symbolic, is traced per input size
        (the op that needs a concrete size and its line); None when it is not."""
        return self._part.per_size if self._part is not None and not self._fx else None

    @property
    def last_time_ms(self):
        """The simulated time of the last call, in milliseconds (None before it)."""
        ex = self.executor
        return None if ex is None else ex.last_time_ms

    def _capture(self, gm: torch.fx.GraphModule, example_inputs):
        _check_supported(gm, self._name)
        part = PyptoPart(gm, self._name, None, self._config, self._dynamic, self._arg_names)
        self._parts.append(part)
        self.captures.append(_capture_record(part, self._new_guard_failures(), self._arg_names))
        if len(self.captures) > 1:
            log.info("from_torch: %s captured again (capture %d): %s", self._name, len(self.captures), self.captures[-1]["reason"])

        def run(*args):
            self._part = part
            self._parts_run += 1
            return part(*args)

        self._part = part
        return run

    def _new_guard_failures(self) -> list:
        """The reasons dynamo gave for recompiling since the last call (guards that failed)."""
        from torch._dynamo.utils import guard_failures

        seen = self._guards_seen
        out = []
        for code, reasons in list(guard_failures.items()):
            out += reasons[seen.get(code, 0) :]
        return out

    def __call__(self, *args, **kwargs):
        torch_in = any(isinstance(a, torch.Tensor) for a in pytree.tree_leaves((args, kwargs)))
        args, kwargs = pytree.tree_map(_to_torch, (args, kwargs))
        if self._fx is not None:
            out = self._run_fx(args, kwargs)
        else:
            _mark_dynamic(self._dynamic, self._arg_names, args, kwargs, self._name)
            out = self._run_captured(args, kwargs)
        if torch_in:
            return out
        return pytree.tree_map(lambda t: tensor_from_torch(t, quiet=True) if isinstance(t, torch.Tensor) else t, out)

    forward = __call__

    def _run_captured(self, args, kwargs):
        import torch._dynamo.exc as dexc
        from torch._dynamo.utils import guard_failures

        dynamo_error = None
        for fresh in (False, True):
            if fresh:  # dynamo keeps at most recompile_limit graphs per code object: a new one
                self._compiled = self._compile()
            before = self._parts_run
            self._guards_seen = {code: len(r) for code, r in guard_failures.items()}
            try:
                with torch.no_grad():
                    out = self._compiled(*args, **kwargs)
            except dexc.BackendCompilerFailed as e:
                raise e.inner_exception from None  # our own error, raised by _capture
            except dexc.FailOnRecompileLimitHit:
                if fresh:
                    raise
                continue
            except (dexc.Unsupported, dexc.UserError, dexc.TorchRuntimeError) as e:
                dynamo_error = e
                break
            if self._parts_run > before:
                return out
        if dynamo_error is None:
            raise CompileError(f"from_torch: torch.compile ran {self._name} in torch, not on PyPTO", location=user_location())
        # dynamo cannot take the module as one graph: torch.fx may trace it
        try:
            gm = _fx_trace(self.module)
        except Exception as fx_error:  # noqa: BLE001 (torch.fx raises TraceError, TypeError, RuntimeError, ...)
            raise CompileError(
                f"from_torch: torch.compile cannot capture {self._name} as one graph: {_summary(dynamo_error)}\n"
                f"torch.fx cannot trace it either: {_summary(fx_error)}",
                location=user_location(),
                suggestions=[
                    "torch.compile(model, backend='pypto') runs such models, with the parts torch.compile captures on PyPTO "
                    "and the rest (value-dependent control flow, calls dynamo cannot trace) in torch",
                ],
            ) from None
        _check_supported(gm, self._name)
        fn = GraphFunction(gm)

        def forward(*tensors):
            return fn(*tensors)

        forward.__name__ = self._name
        # torch.fx records no sizes: p.compile's automatic symbols (dynamic=None) give
        # one trace for every size where the graph allows.
        dynamic = None if self._dynamic is None or self._dynamic is True or isinstance(self._dynamic, dict) else False
        self._fx = (fn, _p_compile(forward, self._config, dynamic=dynamic), [n.target for n in fn.placeholders])
        return self._run_fx(args, kwargs)

    def _run_fx(self, args, kwargs):
        fn, executor, names = self._fx
        inputs = _bind(self._name, names, args, kwargs)
        tensors = [tensor_from_torch(a, quiet=True) if isinstance(a, torch.Tensor) else as_tensor(a, "from_torch model", f"input {i}") for i, a in enumerate(inputs)]
        outs = executor.run(*tensors)
        outs = [outs] if isinstance(outs, Tensor) else list(outs)
        return fn.rebuild([o.to_torch() for o in outs])

    def __repr__(self) -> str:
        ex = self.executor
        n = 0 if ex is None else ex.num_compiled
        return f"<pypto.TorchModel of {self._name}: {len(self.captures)} capture(s), {n} compiled program(s)>"


def _capture_record(part, guard_failures, arg_names) -> dict:
    """What a capture is: its symbols (the dims it leaves symbolic), whether it is
    static, and why it was made (the first call, or the guards the call broke)."""
    symbols = sorted(set(part.symbol_names))
    if guard_failures:
        texts = dict.fromkeys(_guard_text(g, arg_names) for g in guard_failures)  # dynamo may repeat one
        reason = "the call broke what the earlier capture assumed: " + "; ".join(texts)
    else:
        reason = "first call"
    return {"symbols": symbols, "static": not symbols, "reason": reason}


def _guard_text(reason: str, arg_names) -> str:
    """dynamo's guard failure without its compile id ("0/0: ...") and with the forward's
    parameter names for its positions (args[0] -> input_ids)."""
    first = str(reason).strip().splitlines()[0] if str(reason).strip() else "a guard failed"
    head, sep, rest = first.partition(": ")
    text = rest if sep and head.replace("/", "").isdigit() else first
    return re.sub(r"\bargs\[(\d+)\]", lambda m: arg_names[int(m.group(1))] if int(m.group(1)) < len(arg_names) else m.group(0), text)


def _arg_names(module) -> list:
    """The names of the module's forward parameters, in order (for symbol names)."""
    import inspect

    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _mark_dynamic(dynamic, arg_names, args, kwargs, name) -> None:
    """Marks the tensor inputs' dims that dynamic names as dynamic for dynamo (dims it
    specialises, sizes 0 and 1 or dims the code branches on, stay static)."""
    if dynamic is None or dynamic is False:
        return
    from torch._dynamo import maybe_mark_dynamic

    named = {}
    for i, a in enumerate(args):
        named[i] = a
        if i < len(arg_names):
            named[arg_names[i]] = a
    named.update(kwargs)
    if dynamic is True:
        wanted = [(t, range(t.ndim)) for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    else:
        wanted = []
        for key, axes in dynamic.items():
            if key not in named:
                raise PyptoTypeError(f"from_torch: dynamic names the input {key!r}, which the call of {name} does not give "
                                     f"(its inputs: {[k for k in named if isinstance(k, str)] or list(named)})", location=user_location())  # fmt: skip
            t = named[key]
            if not isinstance(t, torch.Tensor):
                raise PyptoTypeError(f"from_torch: dynamic names the input {key!r} of {name}, which is not a tensor", location=user_location())
            wanted.append((t, axes))
    for t, axes in wanted:
        for ax in axes:
            maybe_mark_dynamic(t, ax % t.ndim if t.ndim else ax)


class _Captured(torch.nn.Module):
    """The module as dynamo captures it for one TorchModel: a forward of its own (a
    code object made for this instance), so that dynamo's cache of compiled graphs,
    kept per code object and limited in entries, is this model's alone and not shared
    with every instance of the module's class (nn.Sequential)."""

    _made = itertools.count()

    def __init__(self, module):
        super().__init__()
        self.module = module

        def forward(*args, **kwargs):
            return self.module(*args, **kwargs)

        code = forward.__code__.replace(co_name=f"forward_{next(self._made)}")
        self.forward = types.FunctionType(code, forward.__globals__, "forward", None, forward.__closure__)


def _to_torch(x):
    """A p.Tensor or numpy array input as a torch tensor (sharing its memory)."""
    if isinstance(x, Tensor):
        return x.to_torch()
    if type(x).__module__ == "numpy" and hasattr(x, "dtype") and hasattr(x, "shape"):
        return as_tensor(x, "from_torch model", "input").to_torch()
    return x


def _summary(e: BaseException, lines: int = 3) -> str:
    """The first lines of an error's message (dynamo's carry long explanations)."""
    text = [s for s in str(e).strip().splitlines() if s.strip()]
    return f"{type(e).__name__}: " + " / ".join(text[:lines]) if text else type(e).__name__


def _bind(name, names, args, kwargs) -> list:
    if len(args) > len(names):
        raise PyptoTypeError(f"{name} takes {len(names)} input(s), got {len(args)}", location=user_location())
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in values:
            raise PyptoTypeError(f"{name}: unexpected or repeated input {k!r}", location=user_location())
        values[k] = v
    missing = [n for n in names if n not in values]
    if missing:
        raise PyptoTypeError(f"{name}: missing input(s) {missing}", location=user_location())
    return [values[n] for n in names]


def _fx_trace(module: torch.nn.Module) -> torch.fx.GraphModule:
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    tracer.proxy_buffer_attributes = True  # buffers sliced by traced sizes (self.pos[:t])
    graph = tracer.trace(module)
    return torch.fx.GraphModule(tracer.root, graph, type(module).__qualname__)


def _check_supported(gm: torch.fx.GraphModule, name: str) -> None:
    """Raises one error listing every node PyPTO cannot run, with its source line."""
    if all(n.meta.get("example_value", n.meta.get("val")) is None for n in gm.graph.nodes if n.op != "output"):
        bad = {n: why for n in gm.graph.nodes if (why := why_unsupported(n, gm)) is not None}  # torch.fx: no example values
    else:
        bad = unsupported_nodes(gm)
    if not bad:
        return
    lines = [f"  {describe(n, gm)}: {why}\n    at {node_source(n)}" for n, why in bad.items()]
    first = next(iter(bad))
    raise CompileError(
        f"from_torch: {len(bad)} operation(s) of {name} cannot run on PyPTO:\n" + "\n".join(lines),
        location=node_location(first),
        suggestions=[
            "rewrite them with supported operations (docs/api.md, 'torch interop', lists them)",
            "or use torch.compile(model, backend='pypto'), which runs the unsupported parts in torch",
        ],
    )


def from_module(module, config=None, dynamic=None) -> TorchModel:
    if not isinstance(module, torch.nn.Module):
        raise PyptoTypeError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}", location=user_location())
    return TorchModel(module, config, dynamic)
