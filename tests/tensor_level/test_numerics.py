"""Numerics as docs/isa.md and docs/device.md define them, checked against oracles that
share no code with the compiler or the simulator: numpy float32 arithmetic emulating
the documented accumulation order, math.fsum for exact sums, and mpmath for the
transcendental functions."""

import math
import re

import mpmath
import numpy as np
import pytest

import pypto as p

LANES = 64  # fp32 lanes of one 256-byte repeat of the vector unit


def lane_reduce(x):
    """Row sums of a 2-D float32 array in the vector unit's order (docs/isa.md,
    "Reductions"): element k of a row goes to lane k % 64, each lane starts with its
    first element and adds the later ones in order; then lane i takes lane i + h for
    h = 32, 16, ..., 1. Every step is one numpy float32 addition."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[1]
    used = min(n, LANES)
    acc = x[:, :used].copy()
    for k in range(LANES, n, LANES):
        blk = x[:, k:k + LANES]
        acc[:, :blk.shape[1]] += blk
    h = LANES // 2
    while h >= 1:
        for i in range(min(h, max(used - h, 0))):
            acc[:, i] += acc[:, i + h]
        h //= 2
    return acc[:, 0]


def col_reduce(x):
    """Column sums in float32, adding the rows in order from row 0."""
    x = np.asarray(x, dtype=np.float32)
    acc = x[0].copy()
    for r in range(1, x.shape[0]):
        acc += x[r]
    return acc


def reduce_tile(f):
    """The (rows, cols) of the input tiles of a compiled reduction, from its dump."""
    m = re.search(r"tile %x_0_(\d+)x(\d+):", f.dump())
    assert m, "the dump names the reduction's input tiles"
    return int(m.group(1)), int(m.group(2))


def compiled_row_sum(x, axis):
    f = p.compile(lambda a: p.sum(a, axis=axis))
    return f.run(x).numpy(), f


def tiled_row_sums(x, tc):
    """What the compiled row sum computes: each tile of tc columns reduced in the lane
    order, the tiles' partial sums added in order in float32."""
    acc = lane_reduce(x[:, :tc])
    for c in range(tc, x.shape[1], tc):
        acc = acc + lane_reduce(x[:, c:c + tc])
    return acc


def tiled_col_sums(x, tr):
    acc = col_reduce(x[:tr])
    for r in range(tr, x.shape[0], tr):
        acc = acc + col_reduce(x[r:r + tr])
    return acc


@pytest.mark.parametrize("shape", [(16, 4096), (8, 3000), (4, 777)])
def test_row_sums_are_fp32_in_the_lane_order_bit_for_bit(shape):
    x = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32)
    got, f = compiled_row_sum(x, -1)
    _, tc = reduce_tile(f)
    want = tiled_row_sums(x, tc)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # The sums are not exact in fp32: the old float64 sum rounded once differs.
    exact = np.array([math.fsum(r) for r in x.astype(np.float64)])
    assert (exact.astype(np.float32) != got).any(), "inputs whose fp32 sums are exact test nothing"
    # And the error stays inside the bound of the order: each term passes through
    # at most depth float32 additions (lane repeats, the 6-level fold, the tiles).
    depth = (math.ceil(tc / LANES) - 1) + 6 + math.ceil(shape[1] / tc)
    u = 2.0**-24
    bound = depth * u / (1 - depth * u) * np.abs(x.astype(np.float64)).sum(axis=1)
    assert (np.abs(got - exact) <= bound).all()


def test_column_sums_are_fp32_in_row_order_bit_for_bit():
    x = np.random.default_rng(7).standard_normal((3000, 64)).astype(np.float32)
    got, f = compiled_row_sum(x, 0)
    tr, _ = reduce_tile(f)
    np.testing.assert_array_equal(got.view(np.uint32), tiled_col_sums(x, tr).view(np.uint32))


def test_f16_row_sums_accumulate_in_fp32_and_round_once():
    x = np.random.default_rng(3).standard_normal((16, 2500)).astype(np.float16)
    got, f = compiled_row_sum(x, -1)
    _, tc = reduce_tile(f)
    want = tiled_row_sums(x.astype(np.float32), tc).astype(np.float16)  # one rounding
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("chip", ["tiny", "a2"])
def test_deterministic_sums_are_one_instructions_order_on_every_chip(chip):
    """Under deterministic=True a row sum is the lane order over the whole row and a
    column sum adds the rows in order, whatever tiles the chip's buffers allow."""
    rng = np.random.default_rng(21)
    cfg = p.CompileConfig(chip=chip, deterministic=True)
    x = rng.standard_normal((40, 3001)).astype(np.float32)
    got = p.compile(lambda a: p.sum(a, axis=-1), cfg).run(x).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), lane_reduce(x).view(np.uint32))
    y = rng.standard_normal((700, 48)).astype(np.float32)
    got = p.compile(lambda a: p.sum(a, axis=0), cfg).run(y).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), col_reduce(y).view(np.uint32))
    h = rng.standard_normal((20, 130)).astype(np.float16)
    got = p.compile(lambda a: p.sum(a, axis=-1), cfg).run(h).numpy()
    np.testing.assert_array_equal(got.view(np.uint16), lane_reduce(h.astype(np.float32)).astype(np.float16).view(np.uint16))


# --- transcendental functions: one rounding from an accurate value ------------------

mpmath.mp.prec = 100

FUNCS = {  # the op, mpmath's function, numpy's (for zeros, negatives and infinities)
    "exp": (p.exp, mpmath.exp, np.exp),
    "log": (p.log, mpmath.log, np.log),
    "sqrt": (p.sqrt, mpmath.sqrt, np.sqrt),
    "rsqrt": (p.rsqrt, lambda v: 1 / mpmath.sqrt(v), lambda v: 1 / np.sqrt(v)),
    "reciprocal": (p.reciprocal, lambda v: 1 / v, lambda v: 1 / v),
}


def correctly_rounded_f16(x, name):
    """f(x) for every float16 x, rounded once to float16 from mpmath's 100-bit value.
    numpy rounds the nearest float64 to float16; that double rounding can only go
    wrong when the float64 lands exactly on a float16 midpoint, where the exact
    value's side of it decides. Zeros, negatives and infinities, whose results IEEE
    754 defines exactly (inf, 0, NaN, -0), come from numpy in float64."""
    _, f, special = FUNCS[name]
    v64 = x.reshape(-1).astype(np.float64)
    with np.errstate(all="ignore"):
        res = special(v64).astype(np.float16)
    for i, v in enumerate(v64):
        if not math.isfinite(v) or v <= 0:
            continue
        y = f(mpmath.mpf(v))
        y64 = float(y)
        h = np.float16(y64)
        lo, hi = np.float16(np.nextafter(y64, -np.inf)), np.float16(np.nextafter(y64, np.inf))
        if lo != hi:  # y64 is a float16 midpoint: the exact value's side decides
            h = hi if y > mpmath.mpf(y64) else lo if y < mpmath.mpf(y64) else h
        res[i] = h
    if name == "exp":  # exp of negatives is finite: not special
        for i in np.flatnonzero(np.isfinite(v64) & (v64 < 0)):
            res[i] = np.float16(float(mpmath.exp(mpmath.mpf(v64[i]))))
    return res.reshape(x.shape)


@pytest.mark.parametrize("name", list(FUNCS))
def test_transcendentals_round_once_for_every_f16_input(name):
    op = FUNCS[name][0]
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(256, 256)
    with np.errstate(all="ignore"):
        got = p.compile(lambda a: op(a)).run(x).numpy()
    want = correctly_rounded_f16(x, name)
    nan = np.isnan(want)
    assert np.isnan(got[nan]).all()
    bad = np.flatnonzero((got.view(np.uint16) != want.view(np.uint16)) & ~nan)
    assert bad.size == 0, (
        f"{name}: {bad.size} of 65536 f16 inputs are not correctly rounded, e.g. "
        f"x={x.reshape(-1)[bad[0]]!r} got {got.reshape(-1)[bad[0]]!r} want {want.reshape(-1)[bad[0]]!r}")


@pytest.mark.parametrize("name", ["exp", "log", "rsqrt"])
def test_f32_transcendentals_are_within_one_ulp(name):
    op, ref, _ = FUNCS[name]
    rng = np.random.default_rng(11)
    lo, hi = (-80, 80) if name == "exp" else (-30, 30)
    x = rng.uniform(lo, hi, 4096).astype(np.float32).reshape(64, 64)
    if name != "exp":
        x = np.exp2(x).astype(np.float32)  # positive, over many binades
    got = p.compile(lambda a: op(a)).run(x).numpy().reshape(-1)
    for v, g in zip(x.reshape(-1).astype(np.float64), got):
        y = ref(mpmath.mpf(v))
        spacing = 2.0 ** (math.frexp(float(y))[1] - 24)  # float32's ulp at y
        assert abs(mpmath.mpf(float(g)) - y) <= spacing, (name, v, g, y)
