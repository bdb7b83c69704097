"""``p.einsum``: numpy's Einstein summation for the contractions tensor programs use,
lowered onto the ops the chip has: sums over the letters only one operand has, then each
pair of operands as one (batch) matmul on the cube, with the operands' transposes folded
into the matmul's flags where their layout allows, then a transpose to the output's
letter order. Several operands contract left to right. Repeated letters within one
operand (diagonals and traces, ``"ii->i"``) are refused."""

from __future__ import annotations

import string

from .._core import validate as check
from .._core.dtypes import bool_, int8, int32
from .._core.errors import PyptoValueError, ShapeError
from .._core.location import user_location
from .ops import matmul
from .reductions import sum as _sum
from .tensor import Tensor, as_tensor

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)


def einsum(subscripts: str, *operands) -> Tensor:
    """Einstein summation over ``subscripts`` (``"bhqd,bhkd->bhqk"``): each operand's
    axes are named by letters; letters missing from the output (after ``->``, or, without
    it, every letter that appears once, in alphabetical order) are summed over. ``...``
    stands for leading axes that broadcast. Results as ``p.matmul`` gives them (float
    operands accumulate in float32; int8 gives int32) or, for one operand, as ``p.sum``
    and ``p.transpose``."""
    if not isinstance(subscripts, str):
        raise check.fail("einsum", "subscripts", subscripts, 'a string such as "ij,jk->ik"')
    if not operands:
        raise check.fail("einsum", "operands", operands, "one or more tensors", PyptoValueError)
    ts = [as_tensor(x, "einsum", f"operand {i}") for i, x in enumerate(operands)]
    ins, out, bcast = _parse(subscripts, [t.ndim for t in ts])
    sizes = {}
    for k, (letters, t) in enumerate(zip(ins, ts)):
        for letter, n in zip(letters, t.shape):
            m = sizes.setdefault(letter, n)
            if m != n and not (letter in bcast and 1 in (m, n)):
                raise ShapeError(
                    f"einsum: letter {letter!r} has size {n} in operand {k} but {m} in an earlier operand "
                    f"(shapes {[list(x.shape) for x in ts]}, subscripts {subscripts!r})",
                    location=user_location(),
                    suggestions=["give the axes named by one letter the same size"],
                )
            sizes[letter] = max(m, n)
    cur, letters = ts[0], ins[0]
    for k in range(1, len(ts)):
        later = set(out).union(*ins[k + 1 :])
        cur, letters = _pair(cur, letters, ts[k], ins[k], later)
    return _finish(cur, letters, out)


def _parse(subscripts: str, ndims: list) -> tuple:
    """The letters of each operand and of the output, with ``...`` expanded to fresh
    upper-case letters (right-aligned across operands, as numpy broadcasts)."""
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    parts = lhs.split(",")

    def bad(why, suggestion="write one letter per axis, e.g. \"bhqd,bhkd->bhqk\""):
        return PyptoValueError(f"einsum: subscripts {subscripts!r}: {why}", location=user_location(), suggestions=[suggestion])

    if len(parts) != len(ndims):
        raise bad(f"{len(parts)} operand terms for {len(ndims)} operands")
    used = set(text) & _LETTERS
    fresh = [c for c in string.ascii_uppercase if c not in used]
    ell = 0
    for k, (term, nd) in enumerate(zip(parts, ndims)):
        if term.count("...") > 1:
            raise bad(f"operand {k}'s term {term!r} has more than one '...'")
        named = len(term.replace("...", ""))
        if "..." in term:
            ell = max(ell, nd - named)
        elif named != nd:
            raise bad(f"operand {k}'s term {term!r} names {named} axes but the operand has {nd}")
    if ell > len(fresh):
        raise bad("too many axes under '...'")
    bcast = "".join(fresh[:ell])
    ins = []
    for k, (term, nd) in enumerate(zip(parts, ndims)):
        if "..." in term:
            n = nd - len(term.replace("...", ""))
            if n < 0:
                raise bad(f"operand {k}'s term {term!r} names more axes than its {nd}")
            term = term.replace("...", bcast[ell - n :])
        for c in term:
            if c not in _LETTERS:
                raise bad(f"{c!r} is not a letter")
        if len(set(term)) != len(term):
            raise bad(
                f"operand {k}'s term repeats a letter (diagonals and traces are not supported)",
                "take the diagonal first, e.g. with p.take_along_axis, or multiply by p.eye and sum",
            )
        ins.append(term)
    if arrow:
        if rhs.count("...") > 1:
            raise bad("the output has more than one '...'")
        out = rhs.replace("...", bcast)
        for c in out:
            if c not in _LETTERS:
                raise bad(f"{c!r} in the output is not a letter")
            if not any(c in t for t in ins):
                raise bad(f"output letter {c!r} names no operand's axis")
        if len(set(out)) != len(out):
            raise bad("the output repeats a letter")
    else:
        counts = {}
        for t in ins:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = bcast + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in bcast))
    return ins, out, set(bcast)


def _sum_out(t: Tensor, letters: str, keep) -> tuple:
    """t summed over its letters not in keep."""
    axes = [i for i, c in enumerate(letters) if c not in keep]
    if not axes:
        return t, letters
    return _sum(t, axis=tuple(axes)), "".join(c for c in letters if c in keep)


def _permute(t: Tensor, letters: str, order: str) -> Tensor:
    if letters == order:
        return t
    return t.transpose([letters.index(c) for c in order])


def _pair(a: Tensor, la: str, b: Tensor, lb: str, later: set) -> tuple:
    """a and b contracted over their shared letters that nothing later needs, as one
    (batch) matmul [batch, M, K] @ [batch, K, N]; returns the result and its letters."""
    a, la = _sum_out(a, la, set(lb) | later)
    b, lb = _sum_out(b, lb, set(la) | later)
    batch = "".join(c for c in la if c in lb and c in later)
    contract = "".join(c for c in la if c in lb and c not in later)
    ka = "".join(c for c in la if c not in lb)
    kb = "".join(c for c in lb if c not in la)
    size = dict(zip(lb, b.shape))
    size.update(zip(la, a.shape))
    if not contract or not (ka or kb) or not all(t.dtype.name in _CUBE for t in (a, b)):
        return _mul_sum(a, la, b, lb, batch + ka + kb, contract)

    def prod(cs):
        n = 1
        for c in cs:
            n *= size[c]
        return n

    def side(t, lt, rows, cols):
        """t as [batch..., rows, cols] or, when that is cheaper (its own layout), as the
        transpose [batch..., cols, rows] with the flag set."""
        if lt == batch + cols + rows and rows and cols:
            flat = [t.shape[i] for i in range(len(batch))] + [prod(cols), prod(rows)]
            return t.reshape(flat), True
        t = _permute(t, lt, batch + rows + cols)
        flat = list(t.shape[: len(batch)]) + [prod(rows), prod(cols)]
        return t.reshape(flat), False

    am, ta = side(a, la, ka, contract)
    bm, tb = side(b, lb, contract, kb)
    r = matmul(am, bm, transpose_a=ta, transpose_b=tb)
    batch_shape = list(r.shape[: len(batch)])
    r = r.reshape(batch_shape + [size[c] for c in ka + kb])
    return r, batch + ka + kb


#: The dtypes the cube multiplies; other operands (int32, bool), pairs with nothing to
#: contract (outer and elementwise products) and dot products (a 1 x 1 result per batch)
#: go through a broadcast product and sum on the vector unit (exact for integers, as
#: numpy's integer einsum).
_CUBE = {"float32", "float16", "bfloat16", "int8"}  # names: hashing p.bfloat16 would load ml_dtypes


def _mul_sum(a: Tensor, la: str, b: Tensor, lb: str, keep: str, contract: str) -> tuple:
    """a and b aligned on the letters keep + contract (size-1 axes where one lacks a
    letter), multiplied elementwise and summed over contract; bool operands as int32,
    their result again bool (numpy's or of ands); int8 as int32, as the cube accumulates
    it."""
    full = keep + contract
    bools = a.dtype == bool_ and b.dtype == bool_

    def align(t, lt):
        if t.dtype in (bool_, int8):
            t = t.astype(int32)
        t = _permute(t, lt, "".join(c for c in full if c in lt))
        size = dict(zip("".join(c for c in full if c in lt), t.shape))
        return t.reshape([size.get(c, 1) for c in full])

    r = align(a, la) * align(b, lb)
    if contract:
        r = _sum(r, axis=tuple(range(len(keep), len(full))))
    return (r != 0 if bools else r), keep


def _finish(t: Tensor, letters: str, out: str) -> Tensor:
    t, letters = _sum_out(t, letters, set(out))
    return _permute(t, letters, out)
