"""int64 results the chip computes in int32 are checked when the program runs: where
numpy's int64 result fits int32 it is the result (even when int32 partial sums wrap on
the way), and where it does not the run raises a ValueError naming the op and the
user's line instead of returning a wrapped value (docs/ops.md, "int32, checked")."""

import inspect

import numpy as np
import pytest

import pypto as p

HI, LO = 2**31 - 1, -(2**31)


def _here() -> int:
    return inspect.currentframe().f_back.f_lineno


def _t(*vals):
    return p.from_numpy(np.array(vals, np.int64))


def _same(got: p.Tensor, want):
    want = np.asarray(want, np.int64)
    got = got.numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def _overflows(fn, op: str, line: int):
    with pytest.raises(p.PyptoValueError, match=f"{op}: an int64 result leaves int32's range") as e:
        fn().numpy()
    assert e.value.location.file == __file__ and e.value.location.line == line
    return e.value


ELEMENTWISE = [
    # op, fitting operands and numpy's result, operands whose result leaves int32
    ("add", lambda a, b: a + b, ([HI - 5, -3], [5, LO + 3]), ([HI - 5, 0], [6, 0])),
    ("sub", lambda a, b: a - b, ([LO + 1, 7], [1, 9]), ([LO + 1, 7], [2, 9])),
    ("mul", lambda a, b: a * b, ([46341, -46340], [46340, 46341]), ([65536, 1], [65536, 1])),
    ("pow", lambda a, b: a**b, ([2, -2, 7], [30, 31, 0]), ([3, 0], [20, -3])),
    ("floor_divide", lambda a, b: a // b, ([LO, 5, 9], [1, 3, -2]), ([LO, 5], [-1, 2])),
]


@pytest.mark.parametrize("case", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_results_are_numpys_or_an_error(case):
    op, fn, fits, leaves = case
    a, b = (np.array(v, np.int64) for v in fits)
    _same(fn(p.from_numpy(a), p.from_numpy(b)), fn(a, b))
    a, b = (p.from_numpy(np.array(v, np.int64)) for v in leaves)
    err = _overflows(lambda: fn(a, b), op, fn.__code__.co_firstlineno)  # the line that applied the op
    assert "astype(p.float32)" in " ".join(err.suggestions)


def test_negation_and_abs_of_the_most_negative_int32():
    _same(-_t(LO + 1, HI), [HI, -HI])
    _overflows(lambda: -_t(LO, 0), "neg", _here())
    _overflows(lambda: p.abs(_t(3, LO)), "abs", _here())


def test_sums_that_fit_are_exact_even_when_partial_sums_wrap():
    _same(p.sum(_t(HI, HI, LO, LO + 1)), -1)  # the int32 partial sums leave int32 and come back
    _same(p.cumsum(_t(HI, -HI, HI)), [HI, 0, HI])
    _same(p.prod(_t(1 << 15, 1 << 15, -2)), LO)
    rng = np.random.default_rng(0)
    big = rng.integers(-(2**20), 2**20, size=(3, 100_000))
    big[:, 0] -= big.sum(axis=1) - 5  # rows summing to 5 through partial sums of 2^30 and more
    big = np.clip(big, LO, HI)
    _same(p.sum(p.from_numpy(big), axis=1), big.sum(axis=1))


def test_sums_and_products_that_leave_int32_are_errors():
    _overflows(lambda: p.sum(_t(HI, 1)), "sum", _here())
    _overflows(lambda: p.sum(p.from_numpy(np.full((4, 3), 2**30, np.int64)), axis=0), "sum", _here())
    _overflows(lambda: p.cumsum(_t(HI, 1, -5)), "cumsum", _here())
    _overflows(lambda: p.prod(_t(1 << 15, 1 << 15, 2)), "prod", _here())


def test_conversions_from_float_beyond_int32_are_errors():
    f = p.from_numpy(np.array([2147483520.0, -2147483648.0, 3.9], np.float32))
    _same(f.astype(p.int64), [2147483520, LO, 3])
    big = p.from_numpy(np.array([1.0, 3e9], np.float32))
    _overflows(lambda: big.astype(p.int64), "cast", _here())


def test_compiled_program_checks_every_run():
    ex = p.compile(lambda a, b: a * b + 1, inputs=[([3], p.int64), ([3], p.int64)])
    a, b = np.array([7, -40000, 3], np.int64), np.array([9, 50000, 0], np.int64)
    _same(ex.run(a, b), a * b + 1)
    with pytest.raises(p.PyptoValueError, match="mul: an int64 result leaves int32's range") as e:
        ex.run(a, np.array([9, 60000, 0], np.int64))  # -2.4e9
    assert e.value.location.file == __file__
    with pytest.raises(p.PyptoValueError, match="add: an int64 result leaves int32's range"):
        ex.run(np.array([HI, 1, 1], np.int64), np.array([1, 1, 1], np.int64))  # the product fits, the + 1 does not


def test_negative_exponents_and_division_by_zero_are_not_overflows():
    _same(_t(2, -1, 1, 0) ** _t(-1, -3, -5, 0), [0, -1, 1, 1])  # 0 unless the base is 1 or -1, as documented
    _same(_t(LO, 7) // _t(0, 0), [0, 0])  # integer division by 0 gives 0
