"""Module-level functions and kernels that the pickles in data/legacy_pickles reference by
name (an executor pickles its function, a block kernel itself, by reference)."""

import pypto as p


def double_plus_one(x):
    return x * 2 + 1


@p.block_kernel(grid=1, core="vector", out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def triple_kernel(x, y):
    p.store(y[0:16, :], p.load(x[0:16, :]) * 3)
