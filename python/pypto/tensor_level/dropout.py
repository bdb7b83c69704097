"""``p.dropout``: inverted dropout from a counter-based generator. The keep mask is
``u >= p`` for ``u = random_uniform(shape, seed)`` (the registry op: element i's value is
Philox-4x32-10 of the counter i under the seed's key, docs/ops.md), so a seed gives the
same mask on every device, chip preset, tiling and optimisation level, eagerly and under
p.compile. Kept elements are scaled by 1 / (1 - p) in float32 and rounded once to x's
dtype."""

from __future__ import annotations

import numpy as np

from .._core import validate as check
from .._core.errors import DTypeError, PyptoValueError
from .._core.location import user_location
from .creation import generator
from .tensor import Tensor, apply, as_tensor

__all__ = ["dropout"]


def dropout(x, p: float = 0.5, training: bool = True, seed=None) -> Tensor:
    """x with each element zeroed with probability p and the others scaled by
    1 / (1 - p) (torch's dropout); x itself when not training or p == 0, zeros when
    p == 1. ``seed`` (an int) fixes the mask; None draws one from the p.manual_seed
    stream. x must be a float tensor."""
    x = as_tensor(x, "dropout", "x")
    rate = check.number(p, "p", "dropout", lo=0)
    if rate > 1:
        raise check.fail("dropout", "p", p, "a probability in [0, 1]", PyptoValueError)
    training = check.flag(training, "training", "dropout")
    if seed is None:
        with generator() as g:
            seed = int(g.integers(0, 2**63))
    seed = check.integer(seed, "seed", "dropout", lo=-(2**63), hi=2**63 - 1)
    if not x.dtype.is_floating:
        raise DTypeError(f"dropout: x must be a float tensor, got {x.dtype.name}", location=user_location(),
                         suggestions=["cast first: x.astype(p.float32)"])  # fmt: skip
    if not training or rate == 0:
        return x
    if rate == 1:
        return x * 0
    u = apply("random_uniform", [], {"shape": list(x.shape), "seed": seed})
    kept = x.astype("float32") * float(np.float32(1 / (1 - rate))) if x.dtype.name != "float32" else x * (1 / (1 - rate))
    return apply("where", [u >= float(np.float32(rate)), kept.astype(x.dtype) if kept.dtype != x.dtype else kept, 0.0], scalar_anchor=[1])
