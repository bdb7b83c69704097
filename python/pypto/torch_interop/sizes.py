"""torch's symbolic sizes as PyPTO's: a dynamo graph captured with dynamic sizes holds
SymInts (``s0``, ``s0*s1``, ``(s1 + 7)//8``), sympy expressions over the symbols dynamo
gave the dynamic input dims. Each becomes a ``p.Dim`` over a ``p.symbol`` of the same
meaning, named after the input dim it first came from (``input_ids.1``), so that one
PyPTO trace of the graph serves every size and a run binds the symbols from its inputs'
shapes. An expression PyPTO's dims cannot write (Max, a float, a comparison) raises
:class:`NotASize`: what reads it cannot be traced symbolically."""

from __future__ import annotations

import re

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod

from .._core.dtypes import int64
from .._core.symbolic import Dim, symbol
from ..runtime.tracing import placeholder
from .torch_dtypes import TORCH_DTYPES

#: dynamo's source of an input's size: L['input_ids'].size()[1], L['args'][0].size()[0].
_SOURCE = re.compile(r"^L\['([^']+)'\]((?:\[[^\]]+\])*)\.size\(\)\[(\d+)\]$")


class NotASize(TypeError):
    """A symbolic value that is not an integer expression PyPTO's dims can write."""


def is_symbolic(v) -> bool:
    """Whether v (a size, a tensor, or a structure of them) holds a torch symbol."""
    if isinstance(v, torch.SymInt):
        return not isinstance(_expr(v), sympy.Integer)
    if isinstance(v, (torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(v, torch.Tensor):
        return any(is_symbolic(s) for s in v.shape)
    if isinstance(v, (tuple, list)):
        return any(is_symbolic(x) for x in v)
    return False


def _expr(v):
    return v.node.expr


def symbol_names(shape_env, arg_names=None) -> dict:
    """{torch symbol name: PyPTO symbol name}: each symbol named after the first input
    dim dynamo took it from (``L['input_ids'].size()[1]`` -> ``input_ids.1``; with
    arg_names, the names of a ``*args`` forward's positions), or its own name (``s0``)
    when it has no such source."""
    names = {}
    if shape_env is None:
        return names
    taken = set()
    for sym, sources in getattr(shape_env, "var_to_sources", {}).items():
        name = str(sym)
        for src in sources:
            text = src.name() if callable(src.name) else src.name  # a property in recent torch
            m = _SOURCE.match(str(text))
            if m:
                name = f"{_input_name(m.group(1), m.group(2), arg_names)}.{m.group(3)}"
                break
        if name in taken or not _NAME.match(name):
            name = str(sym)
        taken.add(name)
        names[str(sym)] = name
    return names


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def _input_name(local: str, index: str, arg_names) -> str:
    """A readable name of the input at L[local]index: ``input_ids``, ``args[0]`` as the
    forward's first parameter when arg_names has it, ``kwargs['mask']`` as ``mask``."""
    keys = re.findall(r"\[([^\]]+)\]", index)
    if local == "args" and keys and keys[0].isdigit() and arg_names and int(keys[0]) < len(arg_names):
        local, keys = arg_names[int(keys[0])], keys[1:]
    elif local == "kwargs" and keys:
        local, keys = keys[0].strip("'\""), keys[1:]
    name = "_".join([local] + [k.strip("'\"") for k in keys])
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class Sizes:
    """Translates the SymInts of one graph into PyPTO dims (names from its shape env)."""

    def __init__(self, names: dict):
        self.names = names

    @classmethod
    def of(cls, gm: torch.fx.GraphModule, arg_names=None) -> "Sizes":
        """The translation of gm's sizes (its symbols named from its shape env)."""
        for node in gm.graph.nodes:
            v = node.meta.get("example_value", node.meta.get("val"))
            for leaf in torch.utils._pytree.tree_leaves(v):
                env = _shape_env(leaf)
                if env is not None:
                    return cls(symbol_names(env, arg_names))
        return cls({})

    def dim(self, v):
        """v (an int, a SymInt, or a sympy expression) as an int or a p.Dim."""
        if isinstance(v, bool):
            raise NotASize(f"{v} is a bool, not a size")
        if isinstance(v, int):
            return v
        if isinstance(v, torch.SymInt):
            v = _expr(v)
        if not isinstance(v, sympy.Basic):
            raise NotASize(f"{v!r} is not a size")
        return self._sympy(v)

    def _sympy(self, e):
        if isinstance(e, sympy.Integer):
            return int(e)
        if isinstance(e, sympy.Symbol):
            return symbol(self.names.get(e.name, e.name))
        if isinstance(e, sympy.Add):
            out = 0
            for a in e.args:
                out = out + self._sympy(a)
            return out
        if isinstance(e, sympy.Mul):
            out = 1
            for a in e.args:
                out = out * self._sympy(a)
            return out
        if isinstance(e, FloorDiv):
            return self._sympy(e.args[0]) // self._sympy(e.args[1])
        if isinstance(e, (Mod, PythonMod)):
            return self._sympy(e.args[0]) % self._sympy(e.args[1])
        if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Integer) and int(e.exp) >= 0:
            out = 1
            for _ in range(int(e.exp)):
                out = out * self._sympy(e.base)
            return out
        raise NotASize(f"the size {e} ({type(e).__name__}) is not an integer expression PyPTO's dims can write")

    def shape(self, t: torch.Tensor) -> list:
        return [self.dim(s) for s in t.shape]

    def placeholder(self, t: torch.Tensor):
        """A PyPTO placeholder of t's shape (dims for its symbolic sizes) and of the
        dtype its tensor has when it is shared with PyPTO (int64 stays int64)."""
        return placeholder(self.shape(t), int64 if t.dtype == torch.int64 else TORCH_DTYPES[t.dtype])

    def value(self, v):
        """A SymInt (or a structure holding them) as PyPTO dims; other values as they are."""
        if isinstance(v, torch.SymInt):
            return self.dim(v)
        if isinstance(v, (torch.SymFloat, torch.SymBool)):
            raise NotASize(f"the symbolic {type(v).__name__} {v} is not a size")
        if isinstance(v, torch.Size):
            return tuple(self.dim(s) for s in v)
        if isinstance(v, (tuple, list)):
            return type(v)(self.value(x) for x in v)
        return v


def _shape_env(v):
    if isinstance(v, torch.Tensor):
        mode = getattr(v, "fake_mode", None)
        return getattr(mode, "shape_env", None)
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return v.node.shape_env
    return None


def hint(v):
    """The example's value of a size or float (what dynamo saw when it captured the
    graph); None for one that depends on tensor values (an unbacked symbol)."""
    if isinstance(v, (torch.SymInt, torch.SymFloat)):
        h = v.node.hint
        return None if h is None else (int(h) if isinstance(v, torch.SymInt) else float(h))
    return v


def bind_dims(dims, values) -> dict:
    """{symbol: value} from lists of dims and the run's sizes in their places (each dim
    that is a symbol alone binds it)."""
    binding = {}
    for ds, vs in zip(dims, values):
        for d, v in zip(ds, vs):
            if isinstance(d, Dim) and d.symbols == (str(d),):
                binding[str(d)] = int(v)
    return binding


def evaluate(d: Dim, binding: dict) -> int:
    """A dim's value for a run's binding of its symbols."""
    missing = [s for s in d.symbols if s not in binding]
    if missing:
        raise NotASize(f"the size {d} needs {missing}, which no input of the part binds")
    value = Dim._make(re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", lambda m: f"({binding[m.group(0)]})", str(d)))
    return int(value)


def dim_names(dims) -> list:
    """The PyPTO symbols of a list of sizes, sorted."""
    out = set()
    for d in dims:
        if isinstance(d, Dim):
            out.update(d.symbols)
    return sorted(out)
