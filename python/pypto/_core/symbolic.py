"""Symbolic dimensions: ``p.symbol("batch")`` and integer expressions over symbols.

A :class:`Dim` stands for a size that is known only when a compiled program runs::

    batch, seq = p.symbol("batch"), p.symbol("seq_len")
    x = p.Tensor([batch, seq, 1024], dtype=p.float16)   # a symbolic placeholder
    y = x.reshape([batch * seq, 1024])                  # shapes are inferred symbolically
    y.shape                                             # (batch*seq_len, 1024)

Dims combine with ``+ - * // %`` and integers (or ``p.constant`` 0-d integer tensors).
The Go core keeps every expression in one canonical form, so ``batch * seq == seq *
batch`` and ``(seq + 1) - 1`` is ``seq``; an expression without symbols is a plain int.
A Dim has no value while tracing: ``int()``, ``bool()``, ``range()``, ``<`` and any
``==`` whose answer depends on the values (``seq == 4``, ``batch == seq``) raise
:class:`SymbolicShapeError` (a ``TypeError`` and a ``p.ShapeError``), so traced code
never takes a branch that holds for some sizes only. ``==`` is answered when it is
certain: the same expression, or two that differ by a constant (``seq`` and ``seq+1``).
"""

from __future__ import annotations

import numbers
import operator
import re

from . import lib as _lib
from .errors import PyptoValueError, SymbolicShapeError
from .location import user_location

__all__ = ["Dim", "symbol"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class Dim:
    """A symbolic dimension: a symbol or an integer expression over symbols."""

    __slots__ = ("_text",)

    def __init__(self, text: str):
        # Canonical text only (see _make): the Go core is the one place that decides
        # what an expression simplifies to.
        self._text = text

    @staticmethod
    def _make(text: str):
        canon = _lib.call_string(_lib.lib.pypto_dim_canonical, text.encode())
        if re.fullmatch(r"-?\d+", canon):
            return int(canon)
        return Dim(canon)

    @property
    def symbols(self) -> tuple:
        """The symbol names the dim depends on."""
        return tuple(sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", self._text))))

    # --- arithmetic -------------------------------------------------------------------------

    def _bin(self, op: str, other, reflected: bool = False):
        o = _operand(other)
        if o is None:
            return NotImplemented
        a, b = (o, self._text) if reflected else (self._text, o)
        return Dim._make(f"({a}){op}({b})")

    def __add__(self, o):
        return self._bin("+", o)

    def __radd__(self, o):
        return self._bin("+", o, True)

    def __sub__(self, o):
        return self._bin("-", o)

    def __rsub__(self, o):
        return self._bin("-", o, True)

    def __mul__(self, o):
        return self._bin("*", o)

    def __rmul__(self, o):
        return self._bin("*", o, True)

    def __floordiv__(self, o):
        return self._bin("//", o)

    def __rfloordiv__(self, o):
        return self._bin("//", o, True)

    def __mod__(self, o):
        return self._bin("%", o)

    def __rmod__(self, o):
        return self._bin("%", o, True)

    def __neg__(self):
        return Dim._make(f"-({self._text})")

    def __pos__(self):
        return self

    # --- identity -----------------------------------------------------------------------

    def __eq__(self, o):
        """True for the same expression, False for two that differ by a constant; any
        other answer depends on the sizes, so asking raises SymbolicShapeError."""
        if isinstance(o, Dim) and o._text == self._text:
            return True
        if _operand(o) is None:
            return NotImplemented
        diff = self - o
        if isinstance(diff, int):
            return diff == 0
        self._no_value(f"comparing it with {o} (==)")

    def __ne__(self, o):
        eq = self.__eq__(o)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(("pypto.Dim", self._text))

    def __repr__(self) -> str:
        return self._text

    __str__ = __repr__

    def __reduce__(self):
        return (Dim, (self._text,))

    # --- no value while tracing -----------------------------------------------------------

    def _no_value(self, what: str):
        raise SymbolicShapeError(
            f"{what} needs the value of the symbolic dimension {self._text}, which is known only when the compiled program runs",
            suggestions=[
                "keep the computation symbolic (dims combine with + - * // %)",
                "or compile with concrete shapes: p.compile(fn, dynamic=False), or give concrete dims in inputs=[...]",
            ],
        )

    def __index__(self):
        self._no_value("using it as an integer")

    def __int__(self):
        self._no_value("int()")

    def __float__(self):
        self._no_value("float()")

    def __bool__(self):
        self._no_value("bool()")

    def __lt__(self, o):
        self._no_value("<")

    def __le__(self, o):
        self._no_value("<=")

    def __gt__(self, o):
        self._no_value(">")

    def __ge__(self, o):
        self._no_value(">=")


def _operand(x):
    """x as the text of a dim expression, or None when it cannot be one."""
    if isinstance(x, Dim):
        return x._text
    if isinstance(x, bool):
        return None
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if getattr(x, "ndim", None) == 0 and hasattr(type(x), "__index__"):  # p.constant(1024), a 0-d int tensor
        try:
            return str(operator.index(x))
        except TypeError:  # a float or bool tensor
            return None
    return None


def symbol(name: str) -> Dim:
    """A named symbolic dimension, e.g. ``p.symbol("batch")``: a size that each run of a
    compiled program binds from its inputs' shapes. Names are identifiers ('.' is
    allowed after the first character)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise PyptoValueError(
            f"p.symbol: name must be a symbol name (letters, digits, '_' and '.', not starting with a digit), "
            f"got {name!r} ({type(name).__name__})",
            location=user_location(),
        )
    return Dim(name)


def same_dim(a, b) -> bool:
    """Whether two sizes (ints or Dims) are the same expression, without asking for
    values: what library code uses to compare shapes structurally."""
    if isinstance(a, Dim) or isinstance(b, Dim):
        return isinstance(a, Dim) and isinstance(b, Dim) and a._text == b._text
    return a == b


def dim_text(d) -> str:
    """A dim (int or Dim) as text for the Go core."""
    return d._text if isinstance(d, Dim) else str(int(d))
