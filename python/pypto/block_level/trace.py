"""Tracing a block-level kernel into PTO text: the program under construction, scalar
index expressions over loop registers, GM tensors and their views, and ``p.range``.

A kernel is traced once per program it runs (per block, and per core of a block for a
mixed kernel); each trace appends declarations and instructions to a ``Program`` and
records the user's line of each, so that errors found later in Go name that line."""

from __future__ import annotations

import builtins
import numbers
import threading

from .._core import validate as check
from .._core.errors import CompileError, PyptoValueError, ShapeError
from .._core.location import user_location

_DTYPE_TEXT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int32": "i32", "bool": "bool"}

_state = threading.local()


def current() -> "Program":
    """The program being traced, or an error naming the call outside any kernel."""
    prog = getattr(_state, "program", None)
    if prog is None:
        raise CompileError(
            "block-level operations run only inside a kernel being traced",
            location=user_location(),
            suggestions=["decorate the function with @p.block_kernel(...) and call it with p.call_kernel"],
        )
    return prog


def tracing() -> bool:
    return getattr(_state, "program", None) is not None


def dtype_text(dt) -> str:
    return _DTYPE_TEXT[dt.name]


def quote(name: str) -> str:
    ok = name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c in "_." for c in name)
    return name if ok else '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Sources:
    """The table of user locations shared by the programs of one kernel."""

    def __init__(self):
        self.locs = []
        self._index = {}

    def add(self, loc) -> int:
        if not loc:
            return -1
        key = (loc.file, loc.line, loc.func)
        if key not in self._index:
            self._index[key] = len(self.locs)
            self.locs.append({"file": loc.file, "line": loc.line, "func": loc.func})
        return self._index[key]


class Program:
    """One PTO program under construction (auto mode: the backend places tiles and
    inserts flags)."""

    def __init__(self, name: str, core: str, block: int, subblock: int, sources: Sources):
        self.name, self.core, self.block, self.subblock = name, core, block, subblock
        self.sources = sources
        self.params, self.regs, self.tiles, self.body = [], [], [], []
        self.tile_locs, self.instr_locs = [], []
        self.loops = []  # ids of the p.range loops open at this point, outermost first
        # Declarations of dead tiles, by (loc, dtype, shape, valid shape, layout), to
        # give new tiles: the backend counts a tile used in a loop as live through the
        # whole loop, so a body of fresh declarations would not fit the buffers.
        self._free = {}
        self._next_loop = 0

    # declarations and instructions
    def param(self, name: str, dt, elems: int) -> int:
        self.params.append(f"param %{quote(name)}: {dtype_text(dt)}[{elems}]")
        return len(self.params) - 1

    def reg(self, hint: str) -> str:
        name = f"{hint}{len(self.regs)}"
        self.regs.append(f"reg %{name}")
        return name

    def tile_decl(self, loc: str, dt, rows: int, cols: int, vrows: int, vcols: int, layout: str) -> str:
        key = (loc, dt.name, rows, cols, vrows, vcols, layout)
        free = self._free.get(key)
        # L0A/L0B tiles feed one matmul each: keep two apart so that the next move
        # overlaps the matmul; elsewhere the program's own order decides (a vector
        # pipe runs in order, and loads are double-buffered by unrolling).
        if free and len(free) >= (2 if loc in ("left", "right") else 1):
            return free.pop(0)
        name = f"t{len(self.tiles)}"
        text = f"tile %{name}: {loc} {dtype_text(dt)}[{rows}x{cols}]"
        if (vrows, vcols) != (rows, cols):
            text += f" valid {vrows} x {vcols}"
        if layout != "nd":
            text += " " + layout
        self.tiles.append(text)
        self.tile_locs.append(self.sources.add(user_location()))
        return name

    def release(self, key, name: str, loops) -> None:
        """A tile's Python object died: no later instruction reads its value. Its
        declaration is reused only if it dies at the loop level it was made at, since
        an enclosing loop's next iteration may read a tile made before that loop."""
        if tuple(self.loops) == loops:
            self._free.setdefault(key, []).append(name)

    def emit(self, text: str) -> None:
        self.body.append("  " * (1 + len(self.loops)) + text)
        self.instr_locs.append(self.sources.add(user_location()))

    def text(self) -> str:
        if self.loops:
            raise CompileError(
                f"kernel {self.name}: a p.range loop was left before its end (break or return inside it)",
                location=user_location(),
                suggestions=["run p.range loops to their end; use Python's range for loops that stop early"],
            )
        return "\n".join([f"kernel {quote(self.name)} {self.core}", *self.params, *self.regs, *self.tiles, *self.body, "end"]) + "\n"

    def source_map(self) -> dict:
        return {"tiles": self.tile_locs, "instrs": self.instr_locs}

    def new_loop(self) -> int:
        self._next_loop += 1
        return self._next_loop


class Index:
    """A scalar known while tracing up to loop counters: const + sum(coef * register).
    ``lo``/``hi`` bound it over every iteration, for the bounds checks of views."""

    def __init__(self, const: int = 0, terms=None, ranges=None):
        self.const = int(const)
        self.terms = dict(terms or {})  # register name -> coefficient
        self.ranges = dict(ranges or {})  # register name -> (lo, hi) of the counter

    @staticmethod
    def of(x) -> "Index":
        if isinstance(x, Index):
            return x
        if isinstance(x, numbers.Integral) and not isinstance(x, bool):
            return Index(int(x))
        raise TypeError(f"a kernel index must be an int or a p.range counter, not {type(x).__name__}")

    def _combine(self, other, sign: int) -> "Index":
        o = Index.of(other)
        terms = dict(self.terms)
        for r, c in o.terms.items():
            terms[r] = terms.get(r, 0) + sign * c
        return Index(self.const + sign * o.const, {r: c for r, c in terms.items() if c}, {**self.ranges, **o.ranges})

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return Index.of(other)._combine(self, -1)

    def __neg__(self):
        return self * -1

    def __mul__(self, k):
        if isinstance(k, Index):
            if k.terms and self.terms:
                raise TypeError("a kernel index cannot multiply two loop counters (addresses are affine)")
            if k.terms:
                return k * self.const
            k = k.const
        if not isinstance(k, numbers.Integral):
            return NotImplemented
        k = int(k)
        return Index(self.const * k, {r: c * k for r, c in self.terms.items() if c * k}, self.ranges)

    __rmul__ = __mul__

    def __index__(self):
        if self.terms:
            raise TypeError(
                "a p.range counter has no value while tracing; use it in views (x[i*64:(i+1)*64]) or use range() to unroll"
            )
        return self.const

    @property
    def static(self) -> bool:
        return not self.terms

    def bounds(self) -> tuple:
        lo = hi = self.const
        for r, c in self.terms.items():
            a, b = self.ranges[r]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def __repr__(self):
        parts = [str(self.const)] + [f"{c}*%{r}" for r, c in self.terms.items()]
        return " + ".join(parts)


def range(start, stop=None, step: int = 1):  # noqa: A001 (p.range mirrors Python's range)
    """A loop the kernel runs on the device: ``for i in p.range(n):`` emits a LOOP over a
    scalar register, so the body is traced once (twice: the first iteration is traced
    on its own, so that an accumulator started with p.zeros is set by its first matmul
    and accumulated by the rest). ``i`` is an index usable in views
    (``x[i * 64:(i + 1) * 64]``); Python's ``range`` unrolls instead."""
    start = check.integer(start, "start", "p.range")
    if stop is None:
        start, stop = 0, start
    stop = check.integer(stop, "stop", "p.range")
    step = check.integer(step, "step", "p.range")
    if step == 0:
        raise check.fail("p.range", "step", step, "a nonzero int", PyptoValueError)
    return _loop(start, step, len(builtins.range(start, stop, step)))


def _loop(start: int, step: int, n: int):
    prog = current()
    if n <= 0:
        return
    yield start
    if n == 1:
        return
    reg = prog.reg("i")
    prog.emit(f"loop %{reg}, {n - 1}")
    prog.loops.append(prog.new_loop())
    yield Index(start + step, {reg: step}, {reg: (0, n - 2)})
    prog.loops.pop()
    prog.emit("endloop")


class GMTensor:
    """A kernel argument: a tensor in global memory. Index it like a numpy array (ints,
    slices with positive steps, p.range counters) to get a view for p.load / p.store."""

    def __init__(self, name: str, param: int, shape, dt):
        self.name, self.param, self.shape, self.dtype = name, param, tuple(shape), dt
        self.strides = []
        s = 1
        for d in reversed(self.shape):
            self.strides.insert(0, s)
            s *= d

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, key) -> "View":
        return View(self, [(d, st, axis) for axis, (d, st) in enumerate(zip(self.shape, self.strides))], Index(0))[key]

    def tiled(self, tile_shape) -> "TiledTensor":
        """The tensor cut into tiles of tile_shape: ``x.tiled([64, 64])[i, k]`` is the
        view of tile (i, k)."""
        return TiledTensor(self, tuple(int(t) for t in tile_shape))

    def __repr__(self):
        return f"GMTensor({self.name}, {list(self.shape)}, {self.dtype.name})"


class TiledTensor:
    def __init__(self, t: GMTensor, tile_shape):
        if len(tile_shape) != t.ndim:
            raise _shape_error(f"tiled: {t.name} has {t.ndim} axes, the tile shape {list(tile_shape)} {len(tile_shape)}")
        self.t, self.tile_shape = t, tile_shape

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(self.tile_shape):
            raise _shape_error(f"tiled {self.t.name}: {len(key)} tile indices for {len(self.tile_shape)} axes")
        return self.t[tuple(slice(Index.of(k) * s, Index.of(k) * s + s) for k, s in zip(key, self.tile_shape))]


class View:
    """A strided window of a GM tensor: per remaining axis (size, stride, source axis),
    and an offset in elements."""

    def __init__(self, t: GMTensor, dims, offset: Index):
        self.t, self.dims, self.offset = t, dims, offset

    @property
    def shape(self) -> tuple:
        return tuple(d for d, _, _ in self.dims)

    def __getitem__(self, key) -> "View":
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > len(self.dims):
            raise _shape_error(f"{self.t.name}: {len(key)} indices for a view with {len(self.dims)} axes")
        dims, offset = [], self.offset
        for i, (size, stride, axis) in enumerate(self.dims):
            if i >= len(key):
                dims.append((size, stride, axis))
                continue
            k = key[i]
            if isinstance(k, slice):
                step = 1 if k.step is None else int(k.step)
                if step <= 0:
                    raise _shape_error(f"{self.t.name}: a view's step must be positive, got {step}")
                start = Index.of(0 if k.start is None else k.start)
                stop = Index.of(size if k.stop is None else k.stop)
                length = stop - start
                if not length.static:
                    raise _shape_error(
                        f"{self.t.name}: the slice {start!r}:{stop!r} of axis {axis} has a size that changes with the loop"
                    )
                n = max(0, -(-length.const // step))
                self._check(axis, start, n * step - (step - 1) if n else 0, size)
                offset = offset + start * stride
                dims.append((n, stride * step, axis))
            else:
                idx = Index.of(k)
                if idx.static and idx.const < 0:
                    idx = Index(idx.const + size)
                self._check(axis, idx, 1, size)
                offset = offset + idx * stride
        return View(self.t, dims, offset)

    def _check(self, axis: int, start: Index, n: int, size: int) -> None:
        lo, hi = start.bounds()
        if n > 0 and (lo < 0 or hi + n > size):
            raise _shape_error(
                f"the view of {self.t.name} along axis {axis} reaches [{lo}, {hi + n}) (over every loop iteration), outside the tensor's {size}",
                suggestions=[f"keep views of {self.t.name} (shape {list(self.t.shape)}) inside the tensor"],
            )

    def window(self):
        """(rows, cols, row stride, col stride) of the 2-D window the view is."""
        dims = [(d, st) for d, st, _ in self.dims]
        while len(dims) > 2 and dims[0][0] == 1:
            dims.pop(0)
        if len(dims) == 0:
            dims = [(1, 1)]
        if len(dims) == 1:
            dims = [(1, dims[0][0] * dims[0][1])] + dims
        if len(dims) > 2:
            raise _shape_error(
                f"a view of {self.t.name} with shape {list(self.shape)} is {len(dims)}-D; load and store 2-D windows",
                suggestions=["index the leading axes with ints or p.range counters"],
            )
        (rows, rs), (cols, cs) = dims
        return rows, cols, rs, cs

    def operand(self, prog: Program) -> str:
        """The view as a GM operand, computing a register offset first when it moves with
        a loop."""
        rows, cols, rs, cs = self.window()
        off = self.offset
        if off.static:
            where = str(off.const)
        else:
            reg = prog.reg("off")
            first = True
            for r, c in off.terms.items():
                if first:
                    prog.emit(f"smul %{reg}, %{r}, {c}")
                    first = False
                else:
                    tmp = prog.reg("off")
                    prog.emit(f"smul %{tmp}, %{r}, {c}")
                    prog.emit(f"sadd %{reg}, %{reg}, %{tmp}")
            where = f"%{reg}"
            if off.const > 0:
                where += f"+{off.const}"
            elif off.const < 0:
                prog.emit(f"sadd %{reg}, %{reg}, {off.const}")
        return f"%{quote(self.t.name)}[{where}; {rows}x{cols}; {rs},{cs}]"

    def __repr__(self):
        return f"View({self.t.name}, shape={list(self.shape)})"


def _shape_error(msg, suggestions=()):
    return ShapeError(msg, location=user_location(), suggestions=list(suggestions))
