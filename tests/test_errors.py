"""Errors: kinds, details, locations pointing at the user's line, and robustness (no
error crashes the interpreter, and a forked child gets a clear error)."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto as p


def test_matmul_shape_mismatch_names_shapes_and_line():
    a = p.Tensor([17, 33], dtype=p.float16)
    b = p.Tensor([34, 65], dtype=p.float16)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(p.ShapeError) as ei:
        p.matmul(a, b)
    e = ei.value
    msg = str(e)
    assert "[17,33]" in msg and "[34,65]" in msg
    assert f"{os.path.basename(__file__)}:{line}" in msg
    info = e.get_detailed_info()
    assert info.type == "ShapeError"
    assert info.location.file == __file__ and info.location.line == line
    assert info.location.func == "test_matmul_shape_mismatch_names_shapes_and_line"
    assert info.causes and isinstance(info.suggestions, list)
    assert isinstance(e, p.CompileError) and isinstance(e, p.PyptoError) and isinstance(e, ValueError)


def test_operator_location_is_the_users_line():
    a, b = p.Tensor([2, 3]), p.Tensor([4, 5])
    line = sys._getframe().f_lineno + 2
    with pytest.raises(p.ShapeError) as ei:
        a @ b
    assert ei.value.location.line == line
    with pytest.raises(p.ShapeError) as ei:
        a + b  # broadcast failure
    assert "[2,3]" in str(ei.value) and "[4,5]" in str(ei.value)


def test_error_classes_and_details():
    assert issubclass(p.ShapeError, p.CompileError) and issubclass(p.DTypeError, p.CompileError)
    assert issubclass(p.CompileError, p.PyptoError)
    for cls in (p.PyptoValueError, p.DeviceError, p.InternalError):
        assert issubclass(cls, p.PyptoError)
    with pytest.raises(p.DTypeError) as ei:
        p.matmul(p.Tensor([2, 2], dtype=p.float16), p.Tensor([2, 2], dtype=p.bfloat16))
    info = ei.value.get_detailed_info()
    assert info.type == "DTypeError" and info.suggestions
    with pytest.raises(p.DTypeError):
        p.relu(p.Tensor([2], dtype=p.bool_))
    e = pickle.loads(pickle.dumps(ei.value))
    assert type(e) is p.DTypeError and e.get_detailed_info() == info


def test_errors_do_not_crash_the_process():
    """A script full of misuse must end normally with every error caught."""
    script = textwrap.dedent(
        """
        import numpy as np, pypto as p
        caught = 0
        def expect(fn, exc):
            global caught
            try:
                fn()
            except exc:
                caught += 1
        a = p.Tensor([3, 4])
        expect(lambda: a @ a, p.ShapeError)
        expect(lambda: p.set_device("nope"), p.PyptoValueError)
        expect(lambda: p.from_numpy(np.zeros(3, np.float64)), p.DTypeError)
        expect(lambda: p.compile(lambda x: x.numpy()).run(np.ones(2, np.float32)), p.PyptoValueError)
        expect(lambda: a + "1", TypeError)
        expect(lambda: p.Tensor([1 << 40, 1 << 40]), p.PyptoError)
        expect(lambda: p.compile(lambda x: p.relu(x)).run(np.ones(2, np.float32), np.ones(2, np.float32)), Exception)
        # Internal API misuse: freed and bogus handles are errors, not crashes.
        from pypto import _lib
        t = p.Tensor([2])
        h = t._handle
        t.__del__()  # frees the handle now
        expect(lambda: _lib.call(_lib.lib.pypto_realize, h), p.PyptoValueError)
        expect(lambda: _lib.call(_lib.lib.pypto_realize, 123456789), p.PyptoValueError)
        expect(lambda: _lib.call(_lib.lib.pypto_handle_free, h), p.PyptoValueError)
        expect(lambda: _lib.call(_lib.lib.pypto_apply, b"relu", None, 1, None, None, None), p.PyptoValueError)
        print("caught", caught)
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "caught 11" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_use_after_fork_is_a_clear_error():
    script = textwrap.dedent(
        """
        import os, sys, pypto as p
        x = p.Tensor([2, 2])
        (x + x).numpy()  # the Go runtime is running
        pid = os.fork()
        if pid == 0:
            try:
                (x + x).numpy()
            except p.DeviceError as e:
                os._exit(0 if "spawn" in str(e) else 2)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        (x * x).numpy()  # the parent is unaffected
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr)


def test_spawned_processes_work(tmp_path):
    script = textwrap.dedent(
        """
        import multiprocessing as mp
        import numpy as np

        def work(n):
            import pypto as p
            return float((p.Tensor([1], data=n) + p.Tensor([1], data=n)).numpy()[0])

        if __name__ == "__main__":
            import pypto as p
            p.relu(p.Tensor([2])).numpy()
            with mp.get_context("spawn").Pool(2) as pool:
                print(pool.map(work, [1, 2, 3]))
        """
    )
    path = tmp_path / "spawn_script.py"  # spawn re-imports __main__, so it must be a file
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[2.0, 4.0, 6.0]" in r.stdout
