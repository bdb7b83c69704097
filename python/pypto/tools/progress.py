"""Progress bars for long compiles and runs (docs/tools.md, "Progress").

A compile or a run is one call into the library. When it is still going after
``delay`` seconds (1.5 by default) and tqdm is installed, a thread shows a bar fed
from the library's counters: the compiler's passes, the run's tasks, with the step in
progress. Quick calls show nothing; without tqdm nothing is shown. ``PYPTO_PROGRESS=0``
in the environment or ``p.set_progress(False)`` turns the bars off.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading

from .._core import lib as _lib
from .._core import validate as check

__all__ = ["set_progress"]

_settings = {"enabled": os.environ.get("PYPTO_PROGRESS", "1") != "0", "delay": 1.5}
_POLL = 0.1  # seconds between updates of a bar


def set_progress(enabled: bool = True, delay: float = 1.5) -> None:
    """Shows progress bars (with tqdm) for compiles and runs still going after
    ``delay`` seconds, or never (``enabled=False``)."""
    enabled = check.flag(enabled, "enabled", "p.set_progress")
    delay = check.number(delay, "delay", "p.set_progress", lo=0)
    _settings.update(enabled=enabled, delay=delay)


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _states() -> list:
    return json.loads(_lib.call_string(_lib.lib.pypto_progress_json))


def _show(done: threading.Event, what: str, tqdm) -> None:
    if done.wait(_settings["delay"]):
        return
    bar = tqdm(desc=what, total=None, leave=False, unit="step", dynamic_ncols=True)
    try:
        while True:
            states = _states()
            if states:
                s = states[-1]  # the most recent call: this one, or what it started
                bar.set_description_str(f"{what}: {s['kind']}", refresh=False)
                if bar.total != s["total"]:
                    bar.reset(total=s["total"])
                bar.n = s["done"]
                bar.set_postfix_str(s["step"], refresh=False)
                bar.refresh()
            if done.wait(_POLL):
                return
    finally:
        bar.close()


@contextlib.contextmanager
def watch(what: str):
    """Shows a bar for the library call inside the block when it takes a while."""
    tqdm = _tqdm() if _settings["enabled"] else None
    if tqdm is None:
        yield
        return
    done = threading.Event()
    t = threading.Thread(target=_show, args=(done, what, tqdm), daemon=True, name="pypto-progress")
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
