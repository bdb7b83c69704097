"""setup.py's library install: a rebuild never rewrites the file a running process maps."""
import importlib.util
import mmap
import os
import subprocess
import types

import setuptools

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_setup_module(monkeypatch):
    monkeypatch.setattr(setuptools, "setup", lambda **kw: None)
    spec = importlib.util.spec_from_file_location("pypto_setup_under_test", os.path.join(ROOT, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rebuild_replaces_the_library_instead_of_writing_into_it(monkeypatch, tmp_path):
    mod = load_setup_module(monkeypatch)
    lib = tmp_path / mod.LIB_NAME
    lib.write_bytes(b"old library " * 512)

    def fake_go_build(cmd, **kw):
        out = cmd[cmd.index("-o") + 1]
        with open(out, "wb") as f:
            f.write(b"new library " * 512)
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(mod, "find_go", lambda: "go")
    monkeypatch.setattr(subprocess, "run", fake_go_build)
    with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        mod.build_library(str(tmp_path))
        # The process that mapped the old library still reads it (an in-place write
        # would have changed these pages, or truncated them: SIGBUS).
        assert mapped[:12] == b"old library "
    assert lib.read_bytes()[:12] == b"new library "
    assert sorted(os.listdir(tmp_path)) == [mod.LIB_NAME]  # no staging file left


def test_setup_imports_without_the_wheel_package(monkeypatch):
    # A venv made by `python3 -m venv` on Python 3.11 has setuptools 65 (no
    # setuptools.command.bdist_wheel) and no wheel package.
    import sys

    for name in ("setuptools.command.bdist_wheel", "wheel", "wheel.bdist_wheel"):
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: ImportError
    mod = load_setup_module(monkeypatch)
    assert mod.bdist_wheel is None and set(mod.COMMANDS) == {"build_ext"}
