"""p.tile: a tensor cut into a grid of tiles, the Tile level's unit of work.

    grid = p.tile(x, tile_shape=[64, 128])      # or p.TileConfig(shape=[64, 128])
    for t in grid:                              # row-major order
        t.index, t.offset, t.shape              # grid coordinates, start, valid size
    grid[1, 0]                                  # by grid coordinates

A tile is a p.Tensor: a view of its part of the tensor (a slice underneath), so every
op takes it, eagerly and under p.compile, and Python loops over tiles build the graph
directly. Tiles at the far edge of an axis that the tile size does not divide are
smaller: their shape is the valid part.
"""

from __future__ import annotations

import itertools
import numbers

from .._core import validate as check
from .._core.errors import PyptoIndexError, PyptoTypeError, PyptoValueError, ShapeError, SymbolicShapeError
from .._core.location import user_location
from .._core.symbolic import Dim, same_dim
from ..tensor_level.layout_transform import NZ, layout_transform
from ..tensor_level.shape_ops import concat
from ..tensor_level.tensor import Tensor, as_tensor
from .config import TileConfig, as_tile_config

__all__ = ["tile", "Tile", "TileGrid", "tile_concat"]


class Tile(Tensor):
    """One tile of a :class:`TileGrid`: a p.Tensor holding its part of the tensor.

    ``index`` is its grid coordinates, ``offset`` the coordinates of its first element
    in the tensor, ``shape`` (also ``valid_shape``) its size, smaller than ``tile_shape``
    at the far edge of an axis the tile size does not divide."""

    __slots__ = ("index", "offset", "tile_shape", "config")

    @property
    def valid_shape(self) -> tuple:
        return self.shape

    @property
    def is_edge(self) -> bool:
        """True when the tile is smaller than the grid's tile shape along some axis."""
        return tuple(self.shape) != tuple(self.tile_shape)

    def __repr__(self) -> str:
        return f"<pypto.Tile index={self.index} offset={self.offset} shape={list(self.shape)} dtype={self.dtype.name}>"


def _adopt_as_tile(t: Tensor, index, offset, tile_shape, config) -> Tile:
    """t's value as a Tile: the handle moves to the new object (t must not be used after)."""
    tile = Tile.__new__(Tile)
    tile._handle, tile._shape, tile._dtype, tile._type_info = t._handle, t._shape, t._dtype, t._type_info
    t._handle = 0  # the handle is the tile's now; it frees it
    tile.index, tile.offset, tile.tile_shape, tile.config = index, offset, tile_shape, config
    return tile


class TileGrid:
    """The tiles of a tensor: ``grid.shape`` tiles along each axis, iterable in row-major
    order, indexable by grid coordinates (``grid[i, j]``; ``grid[i]`` on a 1-axis grid).
    ``len(grid)`` is the number of tiles; ``grid.tensor`` the tensor they view."""

    __slots__ = ("tensor", "config", "tile_shape", "shape", "_tiles")

    def __init__(self, tensor: Tensor, config: TileConfig, tile_shape: tuple, grid_shape: tuple):
        self.tensor, self.config, self.tile_shape, self.shape = tensor, config, tile_shape, grid_shape
        self._tiles = {}

    def __len__(self) -> int:
        n = 1
        for g in self.shape:
            n *= g
        return n

    def __iter__(self):
        for index in itertools.product(*(range(g) for g in self.shape)):
            yield self[index]

    def __getitem__(self, index) -> Tile:
        if isinstance(index, numbers.Integral):
            index = (index,)
        if not isinstance(index, tuple) or len(index) != len(self.shape):
            raise PyptoIndexError(
                f"a tile grid of shape {list(self.shape)} is indexed by {len(self.shape)} grid coordinates, not {index!r}",
                location=user_location(),
            )
        coords = []
        for axis, (i, g) in enumerate(zip(index, self.shape)):
            i = check.integer(i, "grid coordinate", "TileGrid")
            i = i + g if i < 0 else i
            if not 0 <= i < g:
                raise PyptoIndexError(
                    f"grid coordinate {int(index[axis])} is out of range for axis {axis} of {g} tiles", location=user_location()
                )
            coords.append(i)
        coords = tuple(coords)
        if coords not in self._tiles:  # one view per tile, so the traced graph slices each once
            self._tiles[coords] = self._make(coords)
        return self._tiles[coords]

    def _make(self, coords) -> Tile:
        key, offset = [], []
        for i, (size, full) in zip(coords, zip(self.tile_shape, self.tensor.shape)):
            if size is None:
                key.append(slice(None))
                offset.append(0)
            else:
                key.append(slice(i * size, min((i + 1) * size, full)))
                offset.append(i * size)
        view = self.tensor[tuple(key)]
        if self.config.format == "NZ":
            view = layout_transform(view, NZ)
        shape = tuple(full if s is None else s for s, full in zip(self.tile_shape, self.tensor.shape))
        return _adopt_as_tile(view, coords, tuple(offset), shape, self.config)

    def assemble(self, results) -> Tensor:
        """One result per tile, in row-major grid order (as iterating the grid gives
        them), joined into one tensor: along the last tiled axis first, then outwards.
        Results may differ from their tiles in the sizes of axes that are not tiled."""
        results = list(results)
        if len(results) != len(self):
            raise PyptoValueError(
                f"assemble: a grid of {len(self)} tiles needs {len(self)} results, got {len(results)}",
                location=user_location(),
            )
        for axis in reversed(range(len(self.shape))):
            g = self.shape[axis]
            if g > 1:
                results = [concat(results[i : i + g], axis=axis) for i in range(0, len(results), g)]
            # grids of one tile along this axis pass through
        return results[0]

    @property
    def tiles(self) -> list:
        """Every tile, in row-major order."""
        return list(self)

    def __repr__(self) -> str:
        return f"<pypto.TileGrid {list(self.shape)} of tiles {list(self.tile_shape)} over a tensor of shape {list(self.tensor.shape)}>"


def tile(x, tile_shape=None, *, config=None) -> TileGrid:
    """x cut into tiles of ``tile_shape`` (a list with one size per axis; None, -1 or
    the axis' own size: the whole axis) or of ``config.shape`` (a p.TileConfig, also
    accepted as the second argument). Axes that are tiled need concrete sizes; under
    p.compile a symbolic size makes the trace fall back to concrete shapes."""
    x = as_tensor(x, "tile")
    if isinstance(tile_shape, TileConfig):
        tile_shape, config = None, tile_shape
    if config is None:
        if tile_shape is None:
            raise PyptoTypeError("p.tile: give tile_shape=[...] or a p.TileConfig", location=user_location())
        config = as_tile_config(tile_shape, "p.tile", "tile_shape")
    else:
        config = as_tile_config(config, "p.tile", "config")
        if tile_shape is not None:
            raise PyptoTypeError("p.tile: give tile_shape or config, not both", location=user_location())
    if config.shape is None:
        raise PyptoTypeError("p.tile: the TileConfig has no shape", location=user_location())
    if config.layout is not None and config.layout != x.layout:
        raise ShapeError(
            f"p.tile: the tile shape is given in layout {config.layout}, the tensor's is {x.layout}",
            location=user_location(),
            suggestions=["give the tile shape in the tensor's layout, or p.layout_transform the tensor first"],
        )
    if len(config.shape) != x.ndim:
        raise ShapeError(
            f"p.tile: tile shape {list(config.shape)} has {len(config.shape)} sizes for a tensor of shape {list(x.shape)}",
            location=user_location(),
            suggestions=["give one size per axis; None or -1 keeps an axis whole"],
        )
    sizes, grid = [], []
    for axis, (t, d) in enumerate(zip(config.shape, x.shape)):
        if t is None or (isinstance(t, Dim) and same_dim(t, d)):
            sizes.append(None)
            grid.append(1)
            continue
        if isinstance(t, Dim):
            raise SymbolicShapeError(
                f"p.tile: tile size {t} of axis {axis} is symbolic; only a whole axis may be", location=user_location()
            )
        if isinstance(d, Dim):
            raise SymbolicShapeError(
                f"p.tile: axis {axis} has symbolic size {d}, and a grid of tiles of {t} needs a concrete one",
                location=user_location(),
                suggestions=[
                    "p.compile traces this input signature with concrete shapes unless dynamic=True",
                    "keep the axis whole (None) to tile only the others",
                ],
            )
        sizes.append(t)
        grid.append(max(1, -(-d // t)))
    return TileGrid(x, config, tuple(sizes), tuple(grid))


def tile_concat(tiles, axis: int = 0) -> Tensor:
    """Tiles (or any tensors, such as the results computed from tiles) joined along
    axis, in the order given: the inverse of cutting one axis into tiles. For a grid
    tiled along several axes, :meth:`TileGrid.assemble` joins one result per tile."""
    if not isinstance(tiles, (list, tuple)) and not hasattr(tiles, "__next__"):  # a list, a tuple or a generator
        raise check.fail("tile_concat", "tiles", tiles, "a list of tiles (or tensors)")
    tiles = [as_tensor(t, "tile_concat", f"tiles[{i}]") for i, t in enumerate(tiles)]
    if not tiles:
        raise PyptoValueError("tile_concat: tiles is empty; give at least one tile", location=user_location())
    return concat(tiles, axis=axis)
