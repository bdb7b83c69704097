"""p.TileConfig: a tile's shape, layout and data format, the Tile level's choice.

Given to ``p.tile`` it sets the grid a tensor is cut into; given to an op
(``p.matmul(a, b, tile_config=...)``, any ``p.tile_<op>(..., tile_config=...)``) it
fixes the tile that op's kernel runs on the device instead of the compiler's choice
(docs/api.md, "Tile level"). The compiler checks it against the chip's buffers and
says which one it overflows; dumps show it with the reason "given".
"""

from __future__ import annotations

import numbers

from .._core import validate as check
from .._core.errors import PyptoError, PyptoValueError, ShapeError
from .._core.symbolic import Dim
from ..tensor_level.layouts import as_layout
from ..tensor_level.tensor import register_tile_attrs

__all__ = ["TileConfig"]

_FORMATS = ("ND", "NZ")


class TileConfig:
    """``TileConfig(shape=None, layout=None, format="ND")``

    - ``shape``: the tile's sizes. For ``p.tile``, one per axis of the tensor (``None``
      or -1: the whole axis). For an op's kernel: ``[tm, tn, tk]`` for a matmul (output
      tile tm x tn, K in blocks of tk; optionally a 4th, the K blocks per load into L1,
      and a 5th, the K chunk of a split-K), ``[rows, cols]`` for elementwise ops and
      reductions (of the output's last two axes; of the reduced view for reductions),
      ``[rows]`` for row kernels (softmax, layer_norm and rms_norm load whole rows).
    - ``layout``: the layout the shape's axes are named in (``p.ND``, ``p.NCHW``, ...);
      ``p.tile`` checks it against the tensor's.
    - ``format``: the tile's data format on chip, ``"ND"`` (row-major) or ``"NZ"`` (the
      cube's 16 x 16 fractals; matmul tiles are always whole fractals, vector kernels
      compute on ND tiles). ``p.tile`` with NZ gives tiles in the p.NZ layout.
    """

    __slots__ = ("shape", "layout", "format")

    def __init__(self, shape=None, layout=None, format="ND"):
        if shape is not None:
            if isinstance(shape, (numbers.Integral, Dim)):
                shape = [shape]
            if isinstance(shape, (str, bytes)) or not isinstance(shape, (list, tuple)):
                raise check.fail("TileConfig", "shape", shape, "a list of tile sizes (None or -1: a whole axis)")
            shape = tuple(_tile_dim(d, shape) for d in shape)
        fmt = getattr(format, "name", format)
        if not isinstance(fmt, str) or fmt.upper() not in _FORMATS:
            raise check.fail("TileConfig", "format", format, "ND or NZ (p.ND, p.NZ or a string)", PyptoValueError)
        self.shape = shape
        self.layout = None if layout is None else as_layout(layout, "TileConfig")
        self.format = fmt.upper()

    def __repr__(self) -> str:
        shape = None if self.shape is None else list(self.shape)
        layout = "" if self.layout is None else f", layout={self.layout!r}"
        return f"pypto.TileConfig(shape={shape}{layout}, format={self.format!r})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, TileConfig):
            return NotImplemented
        return (self.shape, self.layout, self.format) == (other.shape, other.layout, other.format)

    def __hash__(self) -> int:
        return hash((self.shape, self.layout, self.format))

    def op_attrs(self) -> dict:
        """The attributes an op carries to the compiler (tile_shape, tile_format)."""
        attrs = {"tile_format": self.format}
        if self.shape is not None:
            if any(d is None or isinstance(d, Dim) or d <= 0 for d in self.shape):
                raise check.fail("tile_config", "shape", list(self.shape), "positive integer sizes for an op's tile", PyptoValueError)
            attrs["tile_shape"] = [int(d) for d in self.shape]
        return attrs


def _tile_dim(d, shape):
    if d is None or isinstance(d, Dim):
        return d
    want = "positive tile sizes (None or -1: a whole axis)"
    if check.int_or_none(d) is None:
        raise check.fail("TileConfig", "shape", shape, want)
    d = check.int_or_none(d)
    if d == -1:
        return None
    if d <= 0:
        raise check.fail("TileConfig", "shape", shape, want, ShapeError)
    return d


def as_tile_config(x, what: str, name: str = "tile_config") -> TileConfig:
    """x as a TileConfig: one, or a shape list."""
    if isinstance(x, TileConfig):
        return x
    if isinstance(x, (list, tuple)):
        try:
            return TileConfig(shape=x)
        except PyptoError as e:
            e.message = f"{what}: {name}: {e.message}"
            raise
    raise check.fail(what, name, x, "a p.TileConfig or a shape list")


register_tile_attrs(lambda config, what: as_tile_config(config, what).op_attrs())
