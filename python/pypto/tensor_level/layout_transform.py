"""Layouts: what the axes of a tensor mean, and ``p.layout_transform``.

Every tensor's data is row-major over its shape, whatever its layout; the layout names
the axes (docs/api.md, "Layouts"):

- ``p.ND``: no claim, an ordinary array (the default);
- ``p.NCHW``, ``p.NHWC``, ``p.CHWN``: a 4-D image batch whose shape lists batch N,
  channels C, height H and width W in that order; converting permutes the axes;
- ``p.NZ``: the cube unit's fractal format. A matrix ``[..., M, K]`` is padded to whole
  fractals of 16 rows by C0 = 32 bytes of elements (16 for float16/bfloat16, 8 for
  float32/int32, 32 for int8/bool) and stored fractal column by fractal column, each
  fractal row-major: the tensor's shape is ``[..., ceil(K/C0), ceil(M/16), 16, C0]``
  and ``.numpy()`` gives exactly that array. ``nd_shape`` is the matrix's shape, which
  ``p.layout_transform(x, p.ND)`` restores.
"""

from __future__ import annotations

from .layouts import CHWN, NCHW, ND, NHWC, NZ, Layout, as_layout
from .tensor import Tensor, apply, as_tensor

__all__ = ["Layout", "ND", "NCHW", "NHWC", "CHWN", "NZ", "layout_transform", "as_layout"]


def layout_transform(x, target_layout) -> Tensor:
    """x converted to target_layout, the data reordered as the two layouts say:
    NCHW, NHWC and CHWN permute the axes among themselves; ND -> NZ cuts the matrix of
    the last two axes into zero-padded fractals and NZ -> ND puts it back; ND and a 4-D
    layout only name the axes. Other pairs go through ND. Converting to the layout x
    already has returns x."""
    x = as_tensor(x, "layout_transform")
    target = as_layout(target_layout, "layout_transform", "target_layout")
    if x.layout == target:
        return x
    return apply("layout_transform", [x], {"layout": target.name})
