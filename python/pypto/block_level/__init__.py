"""The block level: ``@p.block_kernel`` functions say what each core runs, tile by tile,
as PTO programs (kernel), with on-chip tiles and their instructions (tile) traced into
PTO text (trace)."""
