"""Build glue: setuptools builds the Go core into python/pypto's libpypto.so.

The Go code is compiled with ``go build -buildmode=c-shared`` (see capi/). The library
does not link libpython, so the wheel is tagged py3-none-<platform>: one wheel serves
every CPython 3 on that platform. Everything else is declared in pyproject.toml.

Environment: PYPTO_GO names the go binary (default: `go` on PATH).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 ships bdist_wheel itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older setuptools: the wheel package's
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        # Neither (a fresh venv's setuptools 65 has no wheel): nothing here builds a
        # wheel. pip builds in an isolated environment with pyproject.toml's build
        # requirements, which include wheel; this module must still import (the tests
        # load it to check build_library).
        bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(ROOT, "python", "pypto")
LIB_NAME = "libpypto.so"
MIN_GO = (1, 26)
INSTALL_GO = (
    "Install Go {0}.{1} or newer from https://go.dev/dl/ (e.g. unpack it to /usr/local/go and add "
    "/usr/local/go/bin to PATH), or set PYPTO_GO to the path of a go binary, then retry."
).format(*MIN_GO)


class GoBuildError(RuntimeError):
    pass


def find_go():
    """Returns the go binary after checking its version, or raises GoBuildError."""
    go = os.environ.get("PYPTO_GO") or shutil.which("go")
    if not go:
        for candidate in ("/usr/local/go/bin/go", os.path.expanduser("~/go/bin/go"), os.path.expanduser("~/sdk/go/bin/go")):
            if os.path.exists(candidate):
                go = candidate
                break
    if not go:
        raise GoBuildError("PyPTO's core is written in Go, and no `go` command was found. " + INSTALL_GO)
    try:
        version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise GoBuildError("cannot run `{} env GOVERSION`: {}. {}".format(go, e, INSTALL_GO))
    m = re.match(r"go(\d+)\.(\d+)", version)
    if not m:
        raise GoBuildError("cannot understand the Go version {!r} reported by {}. {}".format(version, go, INSTALL_GO))
    if (int(m.group(1)), int(m.group(2))) < MIN_GO:
        raise GoBuildError("PyPTO needs Go {}.{} or newer, but {} is {}. {}".format(*MIN_GO, go, version, INSTALL_GO))
    return go


def build_library(dest_dir):
    """Builds libpypto.so into dest_dir."""
    go = find_go()
    env = dict(os.environ)
    env["CGO_ENABLED"] = "1"
    env.setdefault("GOTOOLCHAIN", "local")
    os.makedirs(dest_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, LIB_NAME)
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-o", out, "./capi"]
        # The simulator's SIMD kernels (chosen at run time by the CPU's features, with a
        # portable fallback) need GOEXPERIMENT=simd; a toolchain or platform without it
        # builds the portable library instead.
        simd = dict(env, GOEXPERIMENT=",".join(filter(None, [env.get("GOEXPERIMENT", ""), "simd"])))
        print("pypto: building the Go core (GOEXPERIMENT=simd):", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, env=simd, capture_output=True, text=True)
        if proc.returncode != 0:
            print("pypto: the SIMD build failed; building the portable library", flush=True)
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            msg = proc.stderr.strip() or proc.stdout.strip()
            hint = ""
            if "C compiler" in msg or ("gcc" in msg and "not found" in msg):
                hint = "\nA C compiler is needed for cgo: install gcc (e.g. `apt-get install gcc`)."
            raise GoBuildError("building PyPTO's Go core failed ({}):\n{}{}".format(" ".join(cmd), msg, hint))
        # Copied beside the destination, then renamed over it (not the generated C
        # header): a process that has the old library mapped keeps its file, where
        # writing into it in place would crash that process (SIGBUS) on its next page.
        staged = os.path.join(dest_dir, "." + LIB_NAME + ".new")
        shutil.copyfile(out, staged)
        os.replace(staged, os.path.join(dest_dir, LIB_NAME))


class BuildGo(build_ext):
    """Builds the Go core. In-place (editable installs) it lands in python/pypto/."""

    def run(self):
        self._dest = PACKAGE_DIR if self._in_place() else os.path.join(self.build_lib, "pypto")
        try:
            build_library(self._dest)
        except GoBuildError as e:
            sys.stderr.write("\nerror: {}\n\n".format(e))
            raise SystemExit(1)

    def _in_place(self):
        return bool(getattr(self, "inplace", False) or getattr(self, "editable_mode", False))

    def get_outputs(self):
        dest = PACKAGE_DIR if self._in_place() else os.path.join(self.build_lib, "pypto")
        return [os.path.join(dest, LIB_NAME)]

    def get_output_mapping(self):
        if not self._in_place():
            return {}
        return {os.path.join(self.build_lib, "pypto", LIB_NAME): os.path.join(PACKAGE_DIR, LIB_NAME)}


class BinaryDistribution(Distribution):
    """The package carries a native library even though it has no C extension."""

    def has_ext_modules(self):
        return True


COMMANDS = {"build_ext": BuildGo}

if bdist_wheel is not None:

    class PlatformWheel(bdist_wheel):
        """Tags the wheel py3-none-<platform>: the library does not depend on libpython."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    COMMANDS["bdist_wheel"] = PlatformWheel


setup(distclass=BinaryDistribution, cmdclass=COMMANDS)
