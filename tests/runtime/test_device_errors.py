"""Errors the chip raises while running an op read as the op's error: an index out of
range names the index and the axis size, as the reference device does, at the user's
line, with the chip's own report kept as a cause."""

import numpy as np
import pytest

import pypto as p

X = np.arange(32, dtype=np.float32).reshape(4, 8)

CASES = {
    "take": (lambda x, i: p.take(x, i, axis=1), np.array([1, 9, 2], np.int32), "index_select: index 9 is out of range for axis 1 of size 8"),
    "take negative": (lambda x, i: p.take(x, i, axis=1), np.array([-9], np.int32), "index_select: index -9 is out of range for axis 1 of size 8"),
    "take axis 0": (lambda x, i: p.take(x, i, axis=0), np.array([0, 4], np.int32), "index_select: index 4 is out of range for axis 0 of size 4"),
    "take_along_axis": (
        lambda x, i: p.take_along_axis(x, i, axis=1),
        np.array([[0, 1], [2, 12], [0, 0], [7, 7]], np.int32),
        "take_along_axis: index 12 is out of range for axis 1 of size 8",
    ),
}


def _message(fn, idx, device, compiled):
    p.set_device(device)
    try:
        if compiled:
            f = p.compile(fn)
            line = fn.__code__.co_firstlineno
            with pytest.raises(p.PyptoValueError) as ei:
                f.run(X, idx)
        else:
            line = fn.__code__.co_firstlineno
            with pytest.raises(p.PyptoValueError) as ei:
                fn(p.from_numpy(X), p.from_numpy(idx)).numpy()
    finally:
        p.set_device("a2")
    e = ei.value
    assert e.location.file == __file__ and e.location.line == line, e.location
    return e


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_index_out_of_range_on_the_chip_reads_as_on_the_reference(case, compiled):
    fn, idx, want = CASES[case]
    ref = _message(fn, idx, "reference", compiled)
    chip = _message(fn, idx, "a2", compiled)
    assert ref.message == want
    assert chip.message == ref.message and list(chip.suggestions) == list(ref.suggestions)
    assert any("a2 stopped in task" in c for c in chip.causes), chip.causes  # the chip's own report
    assert "0x" not in chip.message  # no internal addresses in what the user reads first
