"""The layout constants (p.ND, p.NCHW, p.NHWC, p.CHWN, p.NZ) and ``as_layout``: what a
tensor's axes mean. Below p.Tensor, which carries one; :mod:`pypto.layouts` adds the
conversion op."""

from __future__ import annotations

from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location

__all__ = ["Layout", "ND", "NCHW", "NHWC", "CHWN", "NZ", "as_layout"]


class Layout:
    """A layout constant: ``p.ND``, ``p.NCHW``, ``p.NHWC``, ``p.CHWN`` or ``p.NZ``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pypto.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        if isinstance(other, Layout):
            return self.name == other.name
        if isinstance(other, str):
            return self.name == other.upper()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("pypto.Layout", self.name))

    def __reduce__(self):
        return (as_layout, (self.name,))


ND = Layout("ND")
NCHW = Layout("NCHW")
NHWC = Layout("NHWC")
CHWN = Layout("CHWN")
NZ = Layout("NZ")
_BY_NAME = {l.name: l for l in (ND, NCHW, NHWC, CHWN, NZ)}


def as_layout(x, op: str = "layout", name: str = "layout") -> Layout:
    """A Layout from a Layout or its name (None is ND)."""
    if x is None:
        return ND
    if isinstance(x, Layout):
        return x
    if isinstance(x, str) and x.upper() in _BY_NAME:
        return _BY_NAME[x.upper()]
    raise PyptoValueError(
        f"{op}: {name} is an unknown layout {check.given(x)}: use p.ND, p.NCHW, p.NHWC, p.CHWN or p.NZ (or its name)",
        location=user_location(),
    )
