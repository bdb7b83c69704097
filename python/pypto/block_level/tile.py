"""On-chip tiles of a block-level kernel and the instructions their operations emit.

A tile lives in one buffer: ``vec`` (UB) on vector cores; ``mat`` (L1), ``left``/``right``
(L0A/L0B) and ``acc`` (L0C) on cube cores. Each operation declares a new tile for its
result (the backend gives tiles whose lives do not overlap the same bytes), except the
in-place updates (``acc += ...``), which is how a value is carried through a p.range loop.
"""

from __future__ import annotations

import numbers

from .._core.dtypes import DType, as_dtype, float32, int32, int8
from .._core.errors import CompileError, DTypeError, ShapeError
from .._core.location import user_location
from .trace import Program, current

_CUBE_LOCS = ("mat", "left", "right", "acc")


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


def alloc_shape(loc: str, dt: DType, rows: int, cols: int):
    """The declared rows x cols of a tile holding rows x cols values: Vec rows are whole
    32-byte blocks (an unaligned width is padded to 32 elements, so tiles of every dtype
    pad alike and stay the same shape); cube tiles are whole 16 x 16 fractals (32-byte
    rows in L1)."""
    size = dt.itemsize
    if loc == "vec":
        return rows, cols if cols * size % 32 == 0 else _round_up(cols, 32)
    r, c = _round_up(rows, 16), _round_up(cols, 16)
    if loc == "mat" and c * size % 32:
        c = _round_up(c, 32)
    return r, c


class Tile:
    """A tile of a kernel being traced: ``shape`` is the (rows, cols) of values it holds."""

    _pypto_block_tile = True

    def __init__(self, prog: Program, loc: str, dt: DType, rows: int, cols: int, layout: str = "nd", alloc=None, declare=True):
        self.prog, self.loc, self.dtype = prog, loc, dt
        self.shape = (rows, cols)
        self.alloc = alloc or alloc_shape(loc, dt, rows, cols)
        valid = self.alloc if loc in _CUBE_LOCS else (rows, cols)
        self._key = (loc, dt.name, *self.alloc, *valid, layout)
        self.name = prog.tile_decl(loc, dt, *self._key[2:]) if declare else None
        self.layout = layout
        self.loops = tuple(prog.loops)
        # An accumulator from p.zeros not yet written. It is declared at its first
        # write, so that the accumulators of a previous output tile, still referenced
        # until the new ones are assigned, are dead by then and lend it their bytes.
        self.pending_zero = False

    def __del__(self):
        try:
            if self.name is not None:
                self.prog.release(self._key, self.name, self.loops)
        except Exception:  # noqa: BLE001 (never raise from a finaliser)
            pass

    def __repr__(self):
        return f"Tile({self.loc} {self.dtype.name}{list(self.shape)})"

    @property
    def ref(self) -> str:
        use(self)
        return "%" + self.name

    # elementwise arithmetic (vector cores)
    def __add__(self, o):
        return binary("add", self, o)

    def __radd__(self, o):
        return binary("add", self, o)

    def __sub__(self, o):
        return binary("sub", self, o)

    def __rsub__(self, o):
        return binary("rsub", self, o)

    def __mul__(self, o):
        if self.loc == "mat" and isinstance(o, (Tile, MatWindow)) and o.loc == "mat":
            return matmul(self, o)  # on a cube core, the guide's tile product
        return binary("mul", self, o)

    def __rmul__(self, o):
        return binary("mul", self, o)

    def __truediv__(self, o):
        return binary("div", self, o)

    def __rtruediv__(self, o):
        return binary("rdiv", self, o)

    def __matmul__(self, o):
        return matmul(self, o)

    def __neg__(self):
        return binary("mul", self, -1)

    def __iadd__(self, o):
        if isinstance(o, Product):
            o.accumulate_into(self)
            return self
        return binary("add", self, o, into=self)

    def __isub__(self, o):
        return binary("sub", self, o, into=self)

    def __imul__(self, o):
        return binary("mul", self, o, into=self)

    def __itruediv__(self, o):
        return binary("div", self, o, into=self)

    def __getitem__(self, key) -> "MatWindow":
        """A window of an L1 tile, e.g. ``a[:, 64:128]``: p.matmul extracts it into
        L0A / L0B (TEXTRACT), so one large load feeds several matmuls."""
        if self.loc != "mat":
            raise CompileError(f"only L1 (mat) tiles of a cube core are sliced; {self!r} is in {self.loc}", location=user_location())
        key = key if isinstance(key, tuple) else (key, slice(None))
        if len(key) != 2 or not all(isinstance(k, slice) and k.step in (None, 1) for k in key):
            raise ShapeError("a tile window is [r0:r1, c0:c1] with static bounds", location=user_location())
        (r0, r1, _), (c0, c1, _) = (k.indices(n) for k, n in zip(key, self.shape))
        if any(v % 16 for v in (r0, r1 - r0, c0, c1 - c0)):
            raise ShapeError(
                f"a window of {self!r} starts and spans multiples of 16 (the cube's fractal), not [{r0}:{r1}, {c0}:{c1}]",
                location=user_location(),
            )
        return MatWindow(self, r0, c0, r1 - r0, c1 - c0)

    def astype(self, dtype) -> "Tile":
        return cast(self, dtype)

    def exp(self):
        return unary("exp", self)

    def sum(self, axis=-1):
        return reduce("sum", self, axis)

    def max(self, axis=-1):
        return reduce("max", self, axis)

    def min(self, axis=-1):
        return reduce("min", self, axis)


def use(t: Tile) -> None:
    """Checks that t is valid here: a tile computed inside a p.range loop holds one
    iteration's value, so reading it after the loop (or in another loop) is a mistake."""
    prog = t.prog
    if prog is not current():
        raise CompileError(f"{t!r} belongs to another kernel trace", location=user_location())
    if tuple(prog.loops[: len(t.loops)]) != t.loops:
        raise CompileError(
            f"{t!r} was computed inside a p.range loop and is used after it: it holds one iteration's value, not the loop's result",
            location=user_location(),
            suggestions=["update values carried through a loop in place (acc += x; acc = p.maximum(...) does not carry), starting them before the loop"],
        )


def _location_error(op: str, t: Tile, unit: str) -> CompileError:
    if unit == "vector":
        return CompileError(
            f"{op} runs on a vector core's unit, but {t!r} is a {t.loc} tile of a {t.prog.core} core",
            location=user_location(),
            suggestions=[
                "compute elementwise ops in a vector kernel, or in a mixed kernel push the cube's result to a vector core (p.push / p.pop)"
            ],
        )
    return CompileError(
        f"{op} runs on the cube unit, but {t!r} is a {t.loc} tile of a {t.prog.core} core",
        location=user_location(),
        suggestions=["declare the kernel with core='cube' (or 'mixed' and do the matmul where p.is_cube())"],
    )


def _need_vec(op: str, *tiles: Tile) -> None:
    for t in tiles:
        if t.loc != "vec":
            raise _location_error(op, t, "vector")


def new_like(t: Tile, dtype=None, shape=None, layout=None) -> Tile:
    rows, cols = shape or t.shape
    return Tile(t.prog, t.loc, dtype or t.dtype, rows, cols, layout or t.layout, alloc=None if shape else t.alloc)


_TILE_OPS = {"add": "tadd", "sub": "tsub", "mul": "tmul", "div": "tdiv", "max": "tmax", "min": "tmin"}
_SCALAR_OPS = {"add": "tadds", "sub": "tsubs", "mul": "tmuls", "div": "tdivs", "max": "tmaxs", "min": "tmins"}
_COMMUTES = {"add", "mul", "max", "min"}


def _imm(t: Tile, s) -> str:
    if isinstance(s, bool) or not isinstance(s, numbers.Real):
        raise TypeError(f"a tile combines with tiles and Python numbers, not {type(s).__name__}")
    if not t.dtype.is_floating and float(s) != int(s):
        raise DTypeError(f"{t!r} holds integers; the scalar {s} is not one", location=user_location())
    v = float(s)
    return repr(int(v)) if v == int(v) and abs(v) < 2**53 else repr(v)


def binary(op: str, a: Tile, b, into: Tile | None = None) -> Tile:
    """a op b for a tile a and a tile or number b; "rsub"/"rdiv" are b - a and b / a."""
    if isinstance(b, Product):
        b = b.materialize()
    _need_vec({"add": "+", "sub": "-", "rsub": "-", "mul": "*", "div": "/", "rdiv": "/"}.get(op, op), a)
    prog = a.prog
    if not isinstance(b, Tile):
        if op == "rsub":  # b - a = (a * -1) + b
            out = into or new_like(a)
            prog.emit(f"tmuls {out.ref}, {a.ref}, -1")
            prog.emit(f"tadds {out.ref}, {out.ref}, {_imm(a, b)}")
            return out
        if op == "rdiv":  # b / a = (1 / a) * b
            out = into or new_like(a)
            prog.emit(f"trecip {out.ref}, {a.ref}")
            prog.emit(f"tmuls {out.ref}, {out.ref}, {_imm(a, b)}")
            return out
        out = into or new_like(a)
        prog.emit(f"{_SCALAR_OPS[op]} {out.ref}, {a.ref}, {_imm(a, b)}")
        return out
    _need_vec(op, b)
    if op in ("rsub", "rdiv"):
        return binary(op[1:], b, a, into)
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{op}: {a!r} and {b!r} have different dtypes (tile instructions do not convert)",
            location=user_location(),
            suggestions=[f"convert one first: b.astype(p.{a.dtype.name})"],
        )
    if a.shape == b.shape:
        out = into or new_like(a)
        prog.emit(f"{_TILE_OPS[op]} {out.ref}, {a.ref}, {b.ref}")
        return out
    if a.shape[1] == 1 and b.shape[0] == a.shape[0] and op in _COMMUTES and into is None:
        a, b = b, a
    if b.shape == (a.shape[0], 1):
        kind = "trowexpand"
    elif b.shape == (1, a.shape[1]):
        kind = "tcolexpand"
    else:
        raise ShapeError(
            f"{op}: shapes {list(a.shape)} and {list(b.shape)} do not match; a tile combines with one of its shape, a [rows, 1] column or a [1, cols] row",
            location=user_location(),
        )
    out = into or new_like(a)
    prog.emit(f"{kind}{op} {out.ref}, {a.ref}, {b.ref}")
    return out


_UNARY = {"exp": "texp", "log": "tlog", "sqrt": "tsqrt", "rsqrt": "trsqrt", "abs": "tabs", "neg": "tneg", "relu": "trelu", "reciprocal": "trecip"}


def unary(op: str, a: Tile) -> Tile:
    _need_vec(op, a)
    out = new_like(a)
    a.prog.emit(f"{_UNARY[op]} {out.ref}, {a.ref}")
    return out


def cast(a: Tile, dtype) -> Tile:
    dt = as_dtype(dtype)
    _need_vec("astype", a)
    rows, cols = a.alloc
    if cols * dt.itemsize % 32:
        raise ShapeError(
            f"astype: {a!r} is stored {cols} wide, which is not whole 32-byte rows in {dt.name}",
            location=user_location(),
            suggestions=["use tiles whose width is a multiple of 32 elements"],
        )
    out = Tile(a.prog, "vec", dt, *a.shape, a.layout, alloc=a.alloc)
    a.prog.emit(f"tcvt {out.ref}, {a.ref}")
    return out


def reduce(op: str, a: Tile, axis) -> Tile:
    """A row (axis -1 or 1: a [rows, 1] column) or column (axis 0: a [1, cols] row)
    reduction of a vector tile."""
    _need_vec(op, a)
    if axis in (-1, 1):
        rows = a.alloc[0]
        if rows * a.dtype.itemsize % 32:
            raise ShapeError(
                f"{op} over the rows of {a!r}: the [{rows}, 1] result is a column of whole 32-byte blocks, so rows must be a multiple of {32 // a.dtype.itemsize}",
                location=user_location(),
            )
        out = Tile(a.prog, "vec", a.dtype, a.shape[0], 1, "dn", alloc=(rows, 1))
        a.prog.emit(f"trow{op} {out.ref}, {a.ref}")
        return out
    if axis in (0, -2):
        out = Tile(a.prog, "vec", a.dtype, 1, a.shape[1], alloc=(1, a.alloc[1]))
        a.prog.emit(f"tcol{op} {out.ref}, {a.ref}")
        return out
    raise ShapeError(f"{op}: a tile reduces along axis -1 (rows) or 0 (columns), not {axis}", location=user_location())


def maximum(a, b):
    if not isinstance(a, Tile):
        a, b = b, a
    return binary("max", a, b)


def minimum(a, b):
    if not isinstance(a, Tile):
        a, b = b, a
    return binary("min", a, b)


class Product:
    """a @ b on the cube, not yet written anywhere: ``acc += p.matmul(a, b)`` makes it
    one TMATMUL.ACC into acc; any other use computes it into a new accumulator."""

    def __init__(self, left: Tile, right: Tile, m: int, n: int, acc_dtype: DType):
        self.left, self.right, self.m, self.n, self.acc_dtype = left, right, m, n, acc_dtype

    @property
    def shape(self):
        return (self.m, self.n)

    def materialize(self) -> Tile:
        out = Tile(self.left.prog, "acc", self.acc_dtype, self.m, self.n)
        out.prog.emit(f"tmatmul {out.ref}, {self.left.ref}, {self.right.ref}")
        return out

    def accumulate_into(self, acc: Tile) -> None:
        if acc.loc != "acc":
            raise _location_error("acc += p.matmul(...)", acc, "cube")
        if acc.shape != self.shape or acc.alloc != (self.left.alloc[0], self.right.alloc[1]):
            raise ShapeError(f"acc += a @ b: the accumulator is {list(acc.shape)}, the product {list(self.shape)}", location=user_location())
        if acc.dtype != self.acc_dtype:
            raise DTypeError(f"acc += a @ b: the product accumulates in {self.acc_dtype.name}, the accumulator is {acc.dtype.name}", location=user_location())
        mode = "tmatmul" if acc.pending_zero else "tmatmul.acc"
        if acc.pending_zero and acc.loops != tuple(acc.prog.loops):
            raise CompileError(
                "the first accumulation into a p.zeros accumulator must not be inside a loop nested deeper than the accumulator",
                location=user_location(),
                suggestions=["use p.range for the loop: it traces the first iteration on its own"],
            )
        if acc.name is None:
            acc.name = acc.prog.tile_decl(acc.loc, acc.dtype, *acc._key[2:])
        acc.prog.emit(f"{mode} {acc.ref}, {self.left.ref}, {self.right.ref}")
        acc.pending_zero = False


class MatWindow:
    """rows x cols of an L1 tile at (r0, c0), for p.matmul."""

    def __init__(self, tile: Tile, r0: int, c0: int, rows: int, cols: int):
        self.tile, self.r0, self.c0 = tile, r0, c0
        self.shape, self.alloc, self.dtype, self.prog, self.loc = (rows, cols), (rows, cols), tile.dtype, tile.prog, "mat"

    def __mul__(self, o):
        return matmul(self, o)

    __matmul__ = __mul__


def _to_operand(t, loc: str) -> Tile:
    if isinstance(t, MatWindow):
        out = Tile(t.prog, loc, t.dtype, *t.shape)
        t.prog.emit(f"textract {out.ref}, {t.tile.ref}, {t.r0}, {t.c0}")
        return out
    if t.loc == loc:
        return t
    if t.loc != "mat":
        raise _location_error("p.matmul", t, "cube")
    out = Tile(t.prog, loc, t.dtype, *t.shape, alloc=t.alloc)
    t.prog.emit(f"tmov {out.ref}, {t.ref}")
    return out


def matmul(a: Tile, b: Tile) -> Product:
    """a @ b of two cube tiles (loaded into L1 by p.load on a cube core); the moves into
    L0A / L0B are emitted here."""
    for t in (a, b):
        if not isinstance(t, (Tile, MatWindow)):
            raise TypeError(f"p.matmul in a kernel takes tiles, not {type(t).__name__}")
        if t.prog.core != "cube":
            raise _location_error("p.matmul", t, "cube")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"p.matmul: {list(a.shape)} @ {list(b.shape)}: the inner sizes differ", location=user_location())
    if a.dtype != b.dtype:
        raise DTypeError(f"p.matmul: {a!r} and {b!r} have different dtypes", location=user_location())
    if a.alloc[1] != b.alloc[0]:
        raise ShapeError(
            f"p.matmul: {a!r} is stored {a.alloc[1]} wide, {b!r} {b.alloc[0]} high; use inner sizes that are multiples of 32",
            location=user_location(),
        )
    left, right = _to_operand(a, "left"), _to_operand(b, "right")
    return Product(left, right, a.shape[0], b.shape[1], int32 if a.dtype == int8 else float32)
