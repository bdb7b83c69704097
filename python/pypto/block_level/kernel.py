"""The block level: what each core runs, written in Python.

    @p.block_kernel(grid=4, core="vector", out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
    def double(x, y):                       # GM tensors: the inputs, then the output
        rows = x.shape[0] // 4
        b = p.block_idx()                   # which block this program is (an int)
        for i in p.range(rows // 16):       # a LOOP on the device; Python's range unrolls
            r = b * rows + i * 16
            t = p.load(x[r:r + 16, :])      # GM view -> Vec tile
            p.store(y[r:r + 16, :], t * 2)  # tile arithmetic: vector instructions

    y = p.call_kernel(double, x)            # or p.register_kernel("double", double)

A kernel is traced into PTO programs (one per block; for core="mixed", one cube and
``vectors`` vector programs per block) when it is called, once per input signature. The
backend places the tiles in the core's buffers and inserts every flag; the reference
device runs the programs in the ISA's reference interpreter, the chips in the simulator.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import numbers

import numpy as np

from . import trace as block_trace
from . import tile as block_tile
from .._core import validate as check
from .._core.location import user_location
from .tile import MatWindow, Product, Tile
from .trace import GMTensor, Program, Sources, current, range  # noqa: A004 (p.range)
from .._core.dtypes import float32, int32
from .._core.errors import CompileError, DTypeError, PyptoTypeError, PyptoValueError, ShapeError
from ..tensor_level.layout_transform import as_layout, layout_transform
from ..tensor_level.tensor import Tensor, apply, as_tensor

__all__ = [
    "block_kernel",
    "BlockKernel",
    "register_kernel",
    "call_kernel",
    "registered_kernels",
    "block_idx",
    "subblock_idx",
    "is_cube",
    "load",
    "store",
    "push",
    "pop",
    "range",
]

_CORES = ("vector", "cube", "mixed")

#: The export of a traced kernel (runtime/pto_as.py sets it: it compiles the call).
_exporter = None


class BlockKernel:
    """A Python function traced into block programs (see the module's doc)."""

    def __init__(self, fn, grid=1, core="vector", vectors=2, out_shape=None, out_dtype=None, output_layout=None, name=None):
        op = "block_kernel"
        if not callable(fn):
            raise check.fail(op, "fn", fn, "a function (the kernel)")
        core = check.choice(core, "core", op, _CORES)
        if not _is_function(grid):
            grid = check.integer(grid, "grid", op, lo=1)
        vectors = check.integer(vectors, "vectors", op, lo=1)
        if out_shape is not None and not _is_function(out_shape):
            out_shape = _out_shape(out_shape, "out_shape", op)
        if out_dtype is not None and not _is_function(out_dtype):
            out_dtype = check.dtype(out_dtype, "out_dtype", op)
        if output_layout is not None:
            output_layout = as_layout(output_layout, op, "output_layout")
        if name is not None and (not isinstance(name, str) or not name):
            raise check.fail(op, "name", name, "a non-empty string or None")
        self.fn, self.grid, self.core, self.vectors = fn, grid, core, vectors if core == "mixed" else 0
        self.out_shape, self.out_dtype, self.output_layout = out_shape, out_dtype, output_layout
        self.name = name or getattr(fn, "__name__", "kernel")
        self._traced = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *tensors, out_shapes=None, out_dtypes=None):
        return call_kernel(self, *tensors, out_shapes=out_shapes, out_dtypes=out_dtypes)

    def _output(self, ins, out_shapes, out_dtypes):
        shape = _one("out_shapes", out_shapes, True) if out_shapes is not None else self.out_shape
        dt = _one("out_dtypes", out_dtypes, False) if out_dtypes is not None else self.out_dtype
        shape_from = "out_shapes" if out_shapes is not None else "out_shape"
        dt_from = "out_dtypes" if out_dtypes is not None else "out_dtype"
        shape = shape(*ins) if _is_function(shape) else shape
        dt = dt(*ins) if _is_function(dt) else dt
        if shape is None:
            raise PyptoValueError(
                f"kernel {self.name}: the output's shape is unknown",
                location=user_location(),
                suggestions=["pass out_shapes=[...] to p.call_kernel, or declare out_shape= in @p.block_kernel"],
            )
        dt = dt if dt is not None else ins[0].dtype if ins else float32
        return _out_shape(shape, shape_from, f"kernel {self.name}"), check.dtype(dt, dt_from, f"kernel {self.name}")

    def __reduce__(self):
        # A kernel pickles by reference to its module-level name (the function it
        # traces is code, which pickle does not carry by value).
        import sys

        module = sys.modules.get(getattr(self, "__module__", ""), None)
        qualname = getattr(self, "__qualname__", self.name)
        obj = module
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if obj is not self:
            raise PyptoTypeError(
                f"a p.block_kernel ({self.name}) pickles by reference to its module-level name, "
                f"and {qualname} in module {getattr(self, '__module__', '?')} is not this kernel",
                location=user_location(),
                suggestions=["define the kernel at the top level of a module (not inside a function), "
                             "or send its inputs and call the kernel in the other process"],
            )  # fmt: skip
        return qualname

    def trace(self, ins, out_shape, out_dtype) -> dict:
        """The call_kernel attributes for inputs of these shapes and dtypes."""
        key = (tuple((tuple(t.shape), t.dtype.name) for t in ins), out_shape, out_dtype.name)
        if key in self._traced:
            return self._traced[key]
        grid = self.grid(*ins) if callable(self.grid) else self.grid
        names = _param_names(self.fn, len(ins) + 1)
        sources = Sources()
        texts, maps = [], []
        roles = [("cube", 0)] + [("vector", v) for v in builtins.range(self.vectors)] if self.core == "mixed" else [(self.core, 0)]
        for b in builtins.range(int(grid)):
            for core, sub in roles:
                pname = f"{self.name}_b{b}" + ("" if self.core != "mixed" else "_c" if core == "cube" else f"_v{sub}")
                prog = Program(pname, core, b, sub, sources)
                args = []
                for i, (nm, t) in enumerate(zip(names, list(ins) + [None])):
                    shape, dt = (tuple(t.shape), t.dtype) if t is not None else (out_shape, out_dtype)
                    args.append(GMTensor(nm, prog.param(nm, dt, int(np.prod(shape, dtype=np.int64))), shape, dt))
                prev = getattr(block_trace._state, "program", None)
                block_trace._state.program = prog
                try:
                    self.fn(*args)
                    texts.append(prog.text())
                finally:
                    block_trace._state.program = prev
                maps.append(prog.source_map())
        attrs = {
            "name": self.name,
            "programs": "".join(texts),
            "grid": int(grid),
            "vectors": self.vectors,
            "out_type": f"{block_trace.dtype_text(out_dtype)}[{','.join(str(d) for d in out_shape)}]",
            "sources": json.dumps({"locs": sources.locs, "programs": maps}),
        }
        self._traced[key] = attrs
        return attrs

    def export_pto(self, directory, *tensors, assemble: bool = False):
        """Writes the kernel, traced for these inputs, as PTO-AS into directory: the
        program of one call (see ``Executor.export_pto``; ``p.load_pto`` reads it back)."""
        if _exporter is None:  # the runtime layer sets it when pypto is imported
            raise CompileError("export_pto needs the runtime: import pypto", location=user_location())
        return _exporter(self, directory, tensors, assemble)

    def programs(self, *tensors, out_shapes=None, out_dtypes=None) -> str:
        """The PTO text the kernel traces to for these inputs (for reading and tests)."""
        ins = [_as_input(t, i) for i, t in enumerate(tensors)]
        shape, dt = self._output(ins, out_shapes, out_dtypes)
        return self.trace(ins, shape, dt)["programs"]



def _is_function(v) -> bool:
    """A function of the inputs, as out_shape, out_dtype and grid may be (a type such as
    numpy.float16 is callable too, but names a dtype)."""
    return callable(v) and not isinstance(v, type)


def _out_shape(shape, name: str, op: str) -> tuple:
    """A kernel output's shape: concrete sizes, each >= 1."""
    dims = check.shape(shape, name, op, symbolic=False)
    if not dims or any(d < 1 for d in dims):
        raise check.fail(op, name, shape, "a shape of sizes >= 1", ShapeError)
    return dims


def _one(what, v, is_shape):
    """The one output's shape or dtype of out_shapes=/out_dtypes= (a list of one, or the
    value itself: a shape list for out_shapes)."""
    listed = isinstance(v, (list, tuple)) and (not is_shape or (v and isinstance(v[0], (list, tuple))))
    if listed:
        if len(v) != 1:
            raise PyptoValueError(f"call_kernel: {what} lists {len(v)} outputs; a kernel has one output", location=user_location())
        return v[0]
    return v


def _param_names(fn, n):
    try:
        ps = [p.name for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        ps = []
    names = ps[:n] + [f"arg{i}" for i in builtins.range(len(ps), n)]
    return names


def block_kernel(fn=None, *, grid=1, core="vector", vectors=2, out_shape=None, out_dtype=None, output_layout=None, name=None):
    """Decorates a kernel function: ``@p.block_kernel(grid=8, core="cube")``. Its
    parameters are GM tensors, the inputs then the output. ``grid`` (an int, or a
    function of the input tensors) is the number of blocks, each on a core of its own;
    ``core`` is "vector", "cube" or "mixed" (a cube core and ``vectors`` vector cores
    per block, exchanging tiles with p.push / p.pop). ``out_shape`` and ``out_dtype``
    (values or functions of the inputs) declare the output, unless p.call_kernel is
    given ``out_shapes``/``out_dtypes``."""

    def wrap(f):
        return BlockKernel(f, grid, core, vectors, out_shape, out_dtype, output_layout, name)

    return wrap(fn) if fn is not None else wrap


_registry = {}


def register_kernel(name: str, kernel: BlockKernel) -> BlockKernel:
    """Makes a kernel callable by name with p.call_kernel."""
    if not isinstance(name, str) or not name:
        raise check.fail("register_kernel", "name", name, "a non-empty string")
    if not isinstance(kernel, BlockKernel):
        raise check.fail("register_kernel", "kernel", kernel, "a @p.block_kernel function")
    _registry[name] = kernel
    return kernel


def registered_kernels() -> dict:
    return dict(_registry)


def _as_input(t, i=0):
    if isinstance(t, (Tensor, np.ndarray)):
        return as_tensor(t, "call_kernel", f"input {i}")
    raise check.fail("call_kernel", f"input {i}", t, "a p.Tensor or a numpy array")


def call_kernel(kernel, *tensors, out_shapes=None, out_dtypes=None):
    """Runs a block-level kernel (a @p.block_kernel function or a registered name) on
    tensors; the result is a pending p.Tensor like any op's, so kernels mix freely with
    tensor-level code, in eager programs and under p.compile."""
    if isinstance(kernel, str):
        if kernel not in _registry:
            raise PyptoValueError(
                f"call_kernel: no kernel is registered as {kernel!r}",
                location=user_location(),
                suggestions=[f"registered: {sorted(_registry)}" if _registry else "register it with p.register_kernel(name, kernel)"],
            )
        kernel = _registry[kernel]
    if not isinstance(kernel, BlockKernel):
        raise check.fail("call_kernel", "kernel", kernel, "a @p.block_kernel function or a registered kernel's name")
    ins = [_as_input(t, i) for i, t in enumerate(tensors)]
    for t in ins:
        for d in t.shape:
            int(d)  # a symbolic size raises SymbolicShapeError: p.compile then traces concretely
    shape, dt = kernel._output(ins, out_shapes, out_dtypes)
    out = apply("call_kernel", ins, kernel.trace(ins, shape, dt))
    if kernel.output_layout is not None:
        out = layout_transform(out, kernel.output_layout)  # names the axes; no data moves
    return out


def block_idx() -> int:
    """The index of the block being traced, in [0, grid)."""
    return current().block


def subblock_idx() -> int:
    """In a mixed kernel, the index of the vector core being traced (0 on the cube)."""
    return current().subblock


def is_cube() -> bool:
    """In a mixed kernel, whether the cube core's program is being traced."""
    return current().core == "cube"


def load(view) -> Tile:
    """Copies a GM view into a new tile: Vec on a vector core, L1 (mat) on a cube core."""
    prog = current()
    if not isinstance(view, block_trace.View):
        if isinstance(view, GMTensor):
            view = view[tuple(slice(None) for _ in view.shape)]
        else:
            raise check.fail("p.load", "view", view, "a view of a kernel argument (x[i:j, :])")
    rows, cols, _, _ = view.window()
    loc = "mat" if prog.core == "cube" else "vec"
    t = Tile(prog, loc, view.t.dtype, rows, cols)
    prog.emit(f"tload {t.ref}, {view.operand(prog)}")
    return t


def store(view, tile) -> None:
    """Copies a tile to a GM view of the same shape: a Vec tile of the view's dtype, or
    an accumulator (converted by the fixpipe, e.g. float32 to float16)."""
    prog = current()
    if isinstance(view, GMTensor):
        view = view[tuple(slice(None) for _ in view.shape)]
    if not isinstance(view, block_trace.View):
        raise check.fail("p.store", "view", view, "a view of a kernel argument (y[i:j, :])")
    if isinstance(tile, Product):
        tile = tile.materialize()
    if not isinstance(tile, Tile):
        raise check.fail("p.store", "tile", tile, "a tile")
    rows, cols, _, _ = view.window()
    if (rows, cols) != tile.shape:
        raise ShapeError(
            f"p.store: the view of {view.t.name} is {rows}x{cols}, the tile {list(tile.shape)}",
            location=user_location(),
        )
    if tile.loc == "acc":
        if tile.pending_zero:
            raise CompileError("p.store of an accumulator nothing was accumulated into", location=user_location())
    elif tile.loc != "vec":
        raise CompileError(
            f"p.store stores Vec tiles and accumulators; {tile!r} is in {tile.loc}",
            location=user_location(),
            suggestions=["store the result of p.matmul (an accumulator), or compute on a vector core"],
        )
    elif tile.dtype != view.t.dtype:
        raise DTypeError(
            f"p.store: {view.t.name} holds {view.t.dtype.name}, the tile {tile.dtype.name} (stores from Vec do not convert)",
            location=user_location(),
            suggestions=[f"convert first: tile.astype(p.{view.t.dtype.name})"],
        )
    prog.emit(f"tstore {view.operand(prog)}, {tile.ref}")


def zeros(shape, dtype=None) -> Tile:
    """A tile of zeros: on a vector core a filled Vec tile; on a cube core an
    accumulator (float32, or int32 for int8 products) that the first ``acc +=
    p.matmul(...)`` sets."""
    prog = current()
    if len(shape) == 2 and isinstance(shape[0], (list, tuple)) and not isinstance(shape[1], (numbers.Integral, np.integer)):
        if dtype is not None:
            raise PyptoValueError("p.zeros: dtype is given twice", location=user_location())
        shape, dtype = shape[:1], shape[1]  # p.zeros([r, c], dtype)
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else tuple(shape)
    rows, cols = _tile_shape(shape, "shape", "p.zeros")
    dtype = check.dtype(dtype, "dtype", "p.zeros", optional=True)
    if prog.core == "cube":
        dt = dtype if dtype is not None else float32
        if dt not in (float32, int32):
            raise DTypeError(
                f"p.zeros on a cube core is an accumulator, which holds float32 or int32, not {dt.name}",
                location=user_location(),
            )
        t = Tile(prog, "acc", dt, rows, cols, declare=False)
        t.pending_zero = True
        return t
    t = Tile(prog, "vec", dtype if dtype is not None else float32, rows, cols)
    prog.emit(f"texpands {t.ref}, 0")
    return t


def _tile_shape(shape, name: str, op: str) -> tuple:
    """A tile's (rows, cols): two sizes >= 1."""
    dims = check.shape(shape, name, op, symbolic=False)
    if len(dims) != 2:
        raise ShapeError(f"{op} in a kernel makes 2-D tiles, not shape {list(dims)}", location=user_location())
    if min(dims) < 1:
        raise check.fail(op, name, shape, "two sizes >= 1 (rows, cols)", ShapeError)
    return dims


def push(tile, queue: int = 0) -> None:
    """Sends a copy of a tile to the other side of the AI core through queue ``queue``:
    an accumulator from the cube to a vector core, or a Vec tile back."""
    prog = current()
    queue = check.integer(queue, "queue", "p.push", lo=0)
    if isinstance(tile, Product):
        tile = tile.materialize()
    if not isinstance(tile, Tile):
        raise check.fail("p.push", "tile", tile, "a tile")
    if tile.loc not in ("acc", "vec"):
        raise CompileError(f"p.push sends accumulators and Vec tiles, not a {tile.loc} tile", location=user_location())
    prog.emit(f"tpush {int(queue)}, {tile.ref}")


def pop(shape, dtype, queue: int = 0) -> Tile:
    """Receives the oldest tile of queue ``queue`` (converted to dtype): a Vec tile on a
    vector core, an L1 (mat) tile on the cube, ready for p.matmul."""
    prog = current()
    rows, cols = _tile_shape(shape, "shape", "p.pop")
    queue = check.integer(queue, "queue", "p.pop", lo=0)
    t = Tile(prog, "mat" if prog.core == "cube" else "vec", check.dtype(dtype, "dtype", "p.pop"), rows, cols)
    prog.emit(f"tpop {t.ref}, {int(queue)}")
    prog.emit(f"tfree {int(queue)}")
    return t


def _is_tile(x) -> bool:
    return getattr(x, "_pypto_block_tile", False) or isinstance(x, (Product, MatWindow))


def install(namespace: dict) -> None:
    """Lets the tensor-level functions of namespace (the pypto module) take tiles inside
    a kernel: p.exp(tile), p.matmul(a, b), p.zeros([16, 16]), p.maximum(t, 0), ...."""
    def dispatch(name, tile_fn, always=False):
        tensor_fn = namespace[name]

        @functools.wraps(tensor_fn)
        def f(*args, **kwargs):
            if (always and block_trace.tracing()) or any(_is_tile(a) for a in args):
                return tile_fn(*args, **kwargs)
            return tensor_fn(*args, **kwargs)

        namespace[name] = f

    for name in ("exp", "log", "sqrt", "rsqrt", "abs", "neg", "relu", "reciprocal"):
        dispatch(name, functools.partial(block_tile.unary, name))
    dispatch("maximum", block_tile.maximum)
    dispatch("minimum", block_tile.minimum)
    dispatch("matmul", lambda a, b, **kw: block_tile.matmul(a, b))
    for name in ("cast", "astype"):
        dispatch(name, block_tile.cast)
    for name in ("sum", "max", "min"):
        dispatch(name, lambda x, axis=-1, keepdims=False, _n=name: block_tile.reduce(_n, x, axis))
        namespace["reduce_" + name] = namespace[name]  # the aliases stay the same functions
    dispatch("zeros", lambda *shape, dtype=None: zeros(shape, dtype), always=True)
