"""p.recommend_tile: the tiles the compiler picks for each op of a function, with the
timing model's prediction, for an expert to start from."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._core import validate as check
from .._core.errors import PyptoTypeError, PyptoValueError
from ..tensor_level.tensor import Tensor, apply, host_array
from ..tile_level.config import TileConfig
from .config import CompileConfig
from .executor import compile as _compile

__all__ = ["recommend_tile", "TileChoice"]

#: One tile op of a compiled program: ``op`` (the op its kernel runs; fusion may have
#: joined several, as in "fused_rows"), ``kind`` (matmul, elementwise, reduce, rows,
#: ...), ``problem`` and ``tile`` (matmul: [batch, m, n, k] and [tm, tn, tk, stepK, kc];
#: vector kernels: [outer, rows, cols] and [rows, cols]), ``grid`` (tiles per axis),
#: ``reason`` (why: the search's scores, the rule applied, or "given"),
#: ``estimated_ms`` (the device's estimate of the op's task, which the tile search
#: minimises, for matmul, attention and row kernels; None for the other kernels, whose
#: tiles follow fixed rules),
#: ``measured_ms`` (the simulated time of the op's task in a run, with ``measure=True``;
#: else None), ``location`` ("file:line" of the op) and ``config``, a p.TileConfig
#: that fixes this tile.
TileChoice = namedtuple("TileChoice", "op kind problem tile grid reason estimated_ms measured_ms location config")


def recommend_tile(op_or_fn, inputs, attrs=None, *, config=None, measure=False) -> list:
    """The tile the compiler chooses for every tile op of ``op_or_fn`` applied to
    ``inputs``, as a list of :data:`TileChoice` in execution order.

    ``op_or_fn`` is a function of p.Tensors (traced as by p.compile; ``p.matmul``
    itself is one) or the name of a Go op (``"matmul"``) applied with ``attrs``.
    ``inputs`` are p.Tensors, numpy arrays or ``(shape, dtype)`` pairs: only their
    shapes and dtypes matter. ``config`` (a p.CompileConfig) picks the chip and the
    optimisation level, as for p.compile. A choice's ``config`` can be handed back as
    ``tile_config=`` to start from it. ``measure=True`` also runs the program once on
    zeros (the simulated time does not depend on the values) and reports each op's
    simulated time."""
    if isinstance(op_or_fn, str):
        name = op_or_fn

        def fn(*xs):
            return apply(name, list(xs), attrs)

        fn.__name__ = name
    elif callable(op_or_fn):
        if attrs is not None:
            raise check.fail("recommend_tile", "attrs", attrs, "None with a function (attrs go with an op name; bind them into the function instead)")
        fn = op_or_fn
    else:
        raise check.fail("recommend_tile", "op_or_fn", op_or_fn, "a function of tensors or an op name")
    if attrs is not None and not isinstance(attrs, dict):
        raise check.fail("recommend_tile", "attrs", attrs, "a dict of the op's attributes or None")
    if isinstance(inputs, (Tensor, np.ndarray, str, bytes)) or not isinstance(inputs, (list, tuple)):
        raise check.fail("recommend_tile", "inputs", inputs, "a list of p.Tensors, numpy arrays or (shape, dtype) pairs")
    measure = check.flag(measure, "measure", "recommend_tile")
    if config is not None and not isinstance(config, CompileConfig):
        raise check.fail("recommend_tile", "config", config, "a p.CompileConfig or None")
    signature = []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):
            signature.append((tuple(x.shape), x.dtype))
        elif isinstance(x, np.ndarray):
            arr = host_array(x, "recommend_tile", f"inputs[{i}]")
            signature.append((arr.shape, check.dtype(arr.dtype, f"inputs[{i}]", "recommend_tile")))
        elif isinstance(x, tuple) and len(x) == 2:
            signature.append((check.shape(x[0], f"inputs[{i}]", "recommend_tile", symbolic=False),
                              check.dtype(x[1], f"inputs[{i}]", "recommend_tile")))  # fmt: skip
        else:
            raise check.fail("recommend_tile", f"inputs[{i}]", x, "a p.Tensor, a numpy array or a (shape, dtype) pair")
    ex = _compile(fn, config or CompileConfig(), inputs=signature)
    if measure:
        ex.run(*(np.zeros(shape, dt.numpy) for shape, dt in signature))
    info = next(iter(ex._given.values())).info()
    if info["tiles"] is None:
        raise PyptoValueError(f"recommend_tile: device {info['device']!r} compiles no tiles; choose a chip preset")
    out = []
    for t in info["tiles"]:
        cycles = t["estimated_cycles"]
        loc = f"{t['file']}:{t['line']}" if t.get("file") else None
        out.append(
            TileChoice(
                op=t["op"], kind=t["kind"], problem=list(t["problem"]), tile=list(t["tile"]), grid=list(t["grid"]),
                reason=t["reason"], estimated_ms=t["estimated_ms"] if cycles > 0 else None,
                measured_ms=t["measured_ms"] if t["measured_cycles"] > 0 else None, location=loc,
                config=TileConfig(shape=_given_shape(t["kind"], t["tile"])),
            )
        )
    return out


def _given_shape(kind: str, tile: list) -> list:
    """The part of a chosen tile a program can give (docs/api.md, "Tile level"): all of
    a matmul's, a row kernel's rows, a vector kernel's [rows, cols]."""
    if kind in ("matmul", "matmul_epilogue"):
        return list(tile)
    if kind == "rows":
        return list(tile[:1])
    return list(tile[:2])
