"""Progress bars: shown for calls still going after the delay, fed by the library's
counters (compile passes, run tasks); quick calls, a disabled setting or a missing
tqdm show nothing."""

import numpy as np
import pytest

import pypto as p
from pypto import progress


@pytest.fixture(autouse=True)
def _restore():
    saved = dict(progress._settings)
    yield
    progress._settings.update(saved)


def mm(a, b):
    return p.matmul(a, b)


def test_a_long_run_shows_its_compile_and_tasks(capfd, monkeypatch):
    pytest.importorskip("tqdm")
    p.set_progress(True, delay=0)
    # The bar polls the library's counters; the run of a 1024^3 product takes tens of
    # milliseconds, so poll every millisecond to see it while it runs on any host.
    monkeypatch.setattr(progress, "_POLL", 0.001)
    x = np.ones((1024, 1024), np.float16)
    y = p.compile(mm).run(x, x)
    assert float(y.numpy()[0, 0]) == 1024.0
    err = capfd.readouterr().err
    assert "run mm" in err
    assert "run mm: run" in err and "/1 " in err, err[-2000:]  # one task, named as it runs
    assert "matmul_0" in err


def test_quick_calls_and_disabled_bars_show_nothing(capfd, monkeypatch):
    x = np.ones((8, 8), np.float32)
    p.set_progress(True)  # the default delay: these calls end well before it
    p.compile(mm).run(x, x)
    p.set_progress(False, delay=0)
    p.compile(mm).run(x, x)
    p.set_progress(True, delay=0)
    monkeypatch.setattr(progress, "_tqdm", lambda: None)  # tqdm not installed
    p.compile(mm).run(x, x)
    assert capfd.readouterr().err == ""


def test_bad_settings():
    with pytest.raises(ValueError, match="delay"):
        p.set_progress(True, delay=-1)
    with pytest.raises(TypeError, match="enabled"):
        p.set_progress("yes")
