"""A part of a dynamo graph run on PyPTO: ``PyptoPart``, the module that replaces the
part's nodes in the graph torch.compile runs (and the whole graph in p.from_torch).

Its inputs are what dynamo passes: tensors, and in a graph captured with dynamic sizes
the sizes themselves (SymInts, or shapes made of them) and floats dynamo did not
specialise (SymFloats, or 0-d tensors read by ``.item()``). The PyPTO function takes
the tensors; sizes become PyPTO dims and floats constants of the trace:

- a graph with symbolic sizes is traced once with PyPTO symbols for torch's
  (sizes.py), so one trace serves every size, run by p.compile's symbolic executor
  with its buckets of sizes; the sizes the part returns are computed per run;
- where it cannot be (an op needs a concrete size, a run breaks what the trace
  assumed), each input size is traced on its own, and ``per_size`` says why;
- each set of float values is a trace of its own (dynamo passes a module's float
  attributes as inputs when it makes sizes dynamic; they do not change between calls).
"""

from __future__ import annotations

import weakref

import torch
import torch.fx

from . import fallbacks
from .._core.errors import PyptoError, ShapeError
from .._core.symbolic import Dim
from ..runtime.device import on_clear_cache
from ..runtime.executor import compile as _p_compile
from ..tensor_level.tensor import Tensor
from .graph import GraphFunction, Params
from .sizes import NotASize, Sizes, bind_dims, dim_names, evaluate, is_symbolic
from .support import example_value, scalar_placeholders
from .tensors import tensor_from_torch

_CALLS = ("call_function", "call_method", "call_module")


def _is_size(v) -> bool:
    if isinstance(v, (tuple, list)):  # a shape (torch.Size) made of sizes
        return all(_is_size(x) for x in v)
    return isinstance(v, (torch.SymInt, int)) and not isinstance(v, bool)


def crosses_parts(v) -> bool:
    """Whether a value may pass into a part from outside it: a tensor, a tuple of
    tensors (its items taken inside), a size or shape, or a float."""
    if isinstance(v, torch.Tensor) or _is_size(v) or isinstance(v, (torch.SymFloat, float)):
        return True
    return isinstance(v, (tuple, list)) and len(v) > 0 and all(isinstance(x, torch.Tensor) for x in v)


class PyptoPart(torch.nn.Module):
    """A part of a dynamo graph run on PyPTO (its torch form kept to fall back to).
    With ``record`` None the part never falls back: a failure raises (p.from_torch)."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, record, config=None, dynamic=None, arg_names=None):
        super().__init__()
        self.torch_part = gm
        self._name, self._record = name, record
        self._config = config
        self._fn = GraphFunction(gm, Params())
        self._sizes = Sizes.of(gm, arg_names)
        examples = [example_value(n) for n in self._fn.placeholders]
        self._examples = examples
        scalars = scalar_placeholders(gm)
        self._size_at = [i for i, v in enumerate(examples) if not isinstance(v, torch.Tensor) and _is_size(v)]
        self._scalar_at = [i for i, (n, v) in enumerate(zip(self._fn.placeholders, examples))
                           if n in scalars or isinstance(v, (torch.SymFloat, float))]  # fmt: skip
        self._tensor_at = [i for i in range(len(examples)) if i not in self._size_at and i not in self._scalar_at]
        self.symbolic = dynamic is not False and any(is_symbolic(v) for v in examples)
        self.per_size = None  # why the part is traced per size although its graph is symbolic
        self.executor = None  # the executor of the last run
        self._symbolic: dict = {}  # scalar inputs -> (Executor traced with dims, output leaves, input dims)
        self._static: dict = {}  # (sizes, scalars, shapes) -> (Executor traced with them, output leaves)
        self._failed = False
        self._last_inputs = []
        ops = sum(1 for n in gm.graph.nodes if n.op in _CALLS)
        # its row in fallbacks.last_parts() (runs, sim_ms, traces, programs)
        self.entry = fallbacks.add_part(name, ops) if record is not None else {"runs": 0, "sim_ms": None}
        self.entry.update(symbolic=self.symbolic, traces=0, programs=0)
        _live_parts.add(self)

    def release(self):
        """Drops the compiled programs (p.clear_cache()); the next call compiles again."""
        self.executor = None
        self._symbolic, self._static = {}, {}
        self._last_inputs = []

    @property
    def symbol_names(self) -> list:
        """The PyPTO symbols of the part's inputs (empty for a static graph)."""
        if not self.symbolic:
            return []
        dims = []
        for v in self._examples:
            try:
                if isinstance(v, torch.Tensor):
                    dims += self._sizes.shape(v)
                elif _is_size(v):
                    dims += list(self._sizes.value(v)) if isinstance(v, (tuple, list)) else [self._sizes.dim(v)]
            except NotASize:
                continue
        return dim_names(dims)

    @property
    def executors(self) -> list:
        """Every executor the part has compiled (symbolic ones first)."""
        return [e[0] for e in self._symbolic.values()] + [e[0] for e in self._static.values()]

    @property
    def num_traced(self) -> int:
        """PyPTO traces of the part: one for a symbolic graph, else one per input size."""
        return sum(e.num_traced for e in self.executors)

    @property
    def num_compiled(self) -> int:
        """Programs compiled for the part (a symbolic trace: one per bucket of sizes)."""
        return sum(e.num_compiled for e in self.executors)

    def _function(self, sizes, scalars):
        """The part as a function of its tensor inputs, its other inputs given."""
        fn, n = self._fn, len(self._examples)
        given = list(zip(self._size_at, sizes)) + list(zip(self._scalar_at, scalars))
        tensor_at = self._tensor_at

        def part(*xs):
            full = [None] * n
            for i, x in zip(tensor_at, xs):
                full[i] = x
            for i, v in given:
                full[i] = v
            return fn(*full)

        part.__name__ = self._name
        return part

    def _symbolic_executor(self, scalars):
        """The executor traced with PyPTO dims for this set of float inputs (None: the
        part is traced per size)."""
        hit = self._symbolic.get(scalars)
        if hit is not None or self.per_size is not None:
            return hit
        try:
            dims = [self._sizes.shape(self._examples[i]) for i in self._tensor_at]
            sizes = [self._sizes.value(self._examples[i]) for i in self._size_at]
            placeholders = [self._sizes.placeholder(self._examples[i]) for i in self._tensor_at]
            ex = _p_compile(self._function(sizes, scalars), self._config, inputs=placeholders, dynamic=True)
        except (PyptoError, NotASize) as e:
            self._per_size(e)
            return None
        # the output leaves that are sizes are dims: computed per run
        hit = self._symbolic[scalars] = (ex, list(self._fn.out_leaves), dims + [_flat(sizes)])
        return hit

    def _per_size(self, e):
        msg = getattr(e, "message", None) or str(e)
        loc = getattr(e, "location", None)
        self.per_size = msg.strip().splitlines()[0] + (f" ({loc})" if loc else "")
        self.entry["per_size"] = self.per_size
        self._symbolic = {}
        fallbacks.log.info("%s is traced per input size: %s", self._name, self.per_size)

    def _run(self, tensors, sizes, scalars):
        """The part's results on PyPTO: its output tensors and its other output leaves
        (the sizes it computes, for this run's sizes)."""
        hit = self._symbolic_executor(scalars) if self.symbolic else None
        if hit is not None:
            ex, leaves, dims = hit
            try:
                out = ex.run(*tensors)
            except ShapeError as e:  # a size the symbolic trace assumed otherwise
                self._per_size(e)
            else:
                self.executor = ex
                binding = bind_dims(dims, [list(t.shape) for t in tensors] + [_flat(sizes)])
                return out, [evaluate(v, binding) if isinstance(v, Dim) else v for v in leaves]
        key = (_flat(sizes), scalars, tuple(tuple(t.shape) for t in tensors))
        if key not in self._static:
            ex = _p_compile(self._function(sizes, scalars), self._config, dynamic=False)
            out = ex.run(*tensors)
            self._static[key] = (ex, list(self._fn.out_leaves))  # traced for these sizes
            self.executor = ex
            return out, self._static[key][1]
        self.executor, leaves = self._static[key]
        return self.executor.run(*tensors), leaves

    def forward(self, *args):
        if self._failed:
            return self.torch_part(*args)
        tensors = [tensor_from_torch(args[i], quiet=True) for i in self._tensor_at]
        sizes = [_ints(args[i]) for i in self._size_at]
        scalars = tuple(float(args[i]) for i in self._scalar_at)
        # Kept until the next call, so that inputs of the same memory (the weights)
        # are found wrapped already instead of wrapped again.
        self._last_inputs = tensors
        try:
            outs, leaves = self._run(tensors, sizes, scalars)
        except PyptoError as e:
            if self._record is None:
                raise
            self._failed = True
            fallbacks.add(self._record, f"part {self._name}", f"PyPTO could not run it: {e.message}", str(e.location or ""), self._name)
            return self.torch_part(*args)
        self.entry["runs"] += 1
        self.entry["sim_ms"] = self.executor.last_time_ms
        self.entry["traces"], self.entry["programs"] = self.num_traced, self.num_compiled
        outs = [outs] if isinstance(outs, Tensor) else list(outs)
        return self._fn.rebuild([_to_torch_like(o, a) for o, a in zip(outs, _out_examples(self.torch_part, len(outs)))], leaves)


#: Every part alive, so that p.clear_cache() can drop their programs: dynamo keeps the
#: compiled graphs of a model for as long as its code lives.
_live_parts: "weakref.WeakSet[PyptoPart]" = weakref.WeakSet()
on_clear_cache(lambda: [p.release() for p in list(_live_parts)])


def live_parts() -> list:
    """The parts alive now."""
    return list(_live_parts)


def _ints(v):
    """A run's size input (an int, or a shape of ints) as ints."""
    return tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else int(v)


def _flat(sizes) -> tuple:
    """Size inputs (ints, dims, or shapes of them) as one flat tuple."""
    out = []
    for s in sizes:
        out += list(s) if isinstance(s, (tuple, list)) else [s]
    return tuple(out)


def _out_examples(gm, n):
    """The dtypes torch would give the part's outputs (None where unknown)."""
    out = next(node for node in gm.graph.nodes if node.op == "output")
    vals = [example_value(a) if isinstance(a, torch.fx.Node) else None for a in torch.utils._pytree.tree_leaves(out.args[0])]
    vals = [v for v in vals if v is None or isinstance(v, torch.Tensor)]
    return (vals + [None] * n)[:n]


def _to_torch_like(o: Tensor, example) -> torch.Tensor:
    """o as torch, in the dtype torch computes (int64 where PyPTO computed int32)."""
    t = o.to_torch()
    if example is not None and example.dtype != t.dtype:
        t = t.to(example.dtype)
    return t
