"""Tensors too large for this machine's memory or the device's (HBM), and sizes that
overflow, are a PyptoMemoryError (a MemoryError) naming the size and the limit, raised
before anything is allocated: never a fatal Go out-of-memory error that kills Python."""

import os

import numpy as np
import pytest

import pypto as p

HUGE = 1 << 40  # elements: 4 TiB of float32


def _assert_refused(excinfo, size_text):
    e = excinfo.value
    assert isinstance(e, p.PyptoMemoryError) and isinstance(e, MemoryError)
    msg = str(e)
    assert size_text in msg, msg
    assert "more than" in msg, msg  # names the limit


def test_tensor_and_zeros_of_huge_shapes():
    with pytest.raises(MemoryError) as ei:
        p.Tensor([HUGE])
    _assert_refused(ei, "f32[1099511627776] needs 4 TiB")
    with pytest.raises(MemoryError) as ei:
        p.zeros((1 << 20, 1 << 20))
    _assert_refused(ei, "needs 4 TiB")
    with pytest.raises(MemoryError):
        p.Tensor([1 << 31, 1 << 31, 1 << 31])  # the byte count overflows 64 bits


def test_broadcast_views_from_numpy_and_into_a_compiled_program():
    view = np.broadcast_to(np.float32(1), (HUGE,))  # a 4 TiB array of 4 bytes
    with pytest.raises(MemoryError) as ei:
        p.from_numpy(view)
    _assert_refused(ei, "needs 4 TiB")
    ex = p.compile(lambda a: a + 1.0)
    with pytest.raises(MemoryError):
        ex.run(np.broadcast_to(np.float32(1), (1 << 20, 1 << 20)))
    # The executor still works on sizes that fit.
    np.testing.assert_array_equal(ex.run(np.ones((4, 8), np.float32)).numpy(), np.full((4, 8), 2, np.float32))


def test_pad_and_broadcast_are_refused_at_the_line_that_wrote_them():
    x = p.from_numpy(np.ones((4, 8), np.float32))
    with pytest.raises(MemoryError) as ei:
        p.pad(x, [(0, HUGE), (0, 0)])
    _assert_refused(ei, "the result of pad, of type f32[1099511627780,8]")
    assert ei.value.location.file == __file__
    with pytest.raises(MemoryError) as ei:
        p.sum(p.broadcast_to(x[:1], (HUGE, 8)))
    _assert_refused(ei, "the result of broadcast_to")
    with pytest.raises(MemoryError):  # before and after wrap a 64-bit size
        p.pad(x, [(0, 0), ((1 << 63) - 1, (1 << 63) - 1)])


def test_a_value_larger_than_the_device_memory_is_a_compile_error_naming_hbm():
    # 5 GiB of float32: more than the tiny chip's 4 GiB of HBM. On a machine with less
    # memory than that the host limit refuses it first, which is also a MemoryError.
    shape = [1 << 20, 1280]
    small_machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") < 16 << 30
    with pytest.raises(MemoryError) as ei:
        p.compile(lambda a: a * 2.0, p.CompileConfig(chip="tiny"), inputs=[p.Tensor(shape)])
    if not small_machine:
        msg = str(ei.value)
        assert "device memory (HBM) of chip tiny" in msg and "4 GiB" in msg, msg
