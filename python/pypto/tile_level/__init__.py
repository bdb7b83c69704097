"""The tile level: ``p.tile`` cuts a tensor into a grid of tiles, ``p.TileConfig`` fixes
the tile an op runs with, and the ``tile_*`` ops are the tensor ops under the tile
level's names. It imports the tensor level and the core."""
