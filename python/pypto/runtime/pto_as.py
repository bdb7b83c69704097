"""PTO-AS, the PTO toolchain's text format: exporting compiled programs and kernels
(``executor.export_pto(dir)``, ``kernel.export_pto(dir, *inputs)``) and loading PTO-AS
back (``p.load_pto(path)``). docs/pto-as.md has the format's mapping and a walk-through.
"""

from __future__ import annotations

import ctypes
import json
import os

import numpy as np

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..block_level import kernel as _block
from ..tensor_level.tensor import Tensor, apply, as_tensor
from .executor import compile as _compile

__all__ = ["load_pto", "PTOProgram", "PTOKernel"]


def export_kernel(kernel, directory, inputs, assemble=False):
    """``BlockKernel.export_pto``: the kernel traced for these inputs, compiled as a
    program of its own (the call and nothing else), exported like an executor's."""
    ex = _compile(lambda *xs: _block.call_kernel(kernel, *xs), config=None)
    ex(*inputs)
    return ex.export_pto(directory, assemble=assemble)


_block._exporter = export_kernel


def load_pto(path, *, form: str = "auto", device: str | None = None, blocks: int | None = None):
    """Reads PTO-AS. A directory written by ``export_pto`` (its manifest.json) gives a
    :class:`PTOProgram` that runs the whole program; a ``.pto`` file a
    :class:`PTOKernel`, callable like a block kernel. ``form`` picks an export's
    kernels ("auto": placed and synchronised by the backend, "manual": the machine
    programs as exported); ``device`` the chip (default: the manifest's, for a file the
    current device); ``blocks`` overrides a kernel's block count (pypto.blocks)."""
    op = "p.load_pto"
    path = os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else path
    if not isinstance(path, str):
        raise check.fail(op, "path", path, "a path to a .pto file or an export's directory")
    form = check.choice(form, "form", op, ("auto", "manual"))
    if device is not None and not isinstance(device, str):
        raise check.fail(op, "device", device, 'a device preset name ("a2", "tiny", ...) or None')
    if blocks is not None:
        blocks = check.integer(blocks, "blocks", op, lo=1)
    if os.path.isdir(path):
        return PTOProgram(path, form, device)
    if not os.path.isfile(path):
        raise PyptoValueError(f"{op}: path {path!r} is neither a .pto file nor a directory", location=user_location())
    return PTOKernel(path, blocks or 0, device)


class PTOProgram:
    """A program read from an export's directory: ``run(*inputs)`` (or calling it) runs
    every task on the simulated device, as the compiled program it was exported from
    runs, and returns the outputs as p.Tensors. ``inputs`` and ``outputs`` describe them
    (each ``{"name", "dtype", "shape", ...}``); ``last_cycles`` and ``last_time_ms`` are
    the simulated time of the last run."""

    def __init__(self, directory: str, form: str, device):
        h = _lib.Handle()
        _lib.call(_lib.lib.pypto_pto_program_load, directory.encode(), form.encode(), (device or "").encode(), ctypes.byref(h))
        self._handle = h.value
        import weakref

        weakref.finalize(self, _lib.free_handle, h.value)
        info = json.loads(_lib.call_string(_lib.lib.pypto_pto_program_info, self._handle))
        self.directory, self.form, self.chip = directory, form, info["chip"]
        self.inputs, self.outputs, self.num_tasks = info["inputs"] or [], info["outputs"] or [], info["tasks"]
        self._last = None

    def run(self, *inputs, max_steps: int = 0):
        if len(inputs) != len(self.inputs):
            raise PyptoValueError(
                f"PTOProgram {self.directory}: it takes {len(self.inputs)} inputs ({', '.join(b['name'] for b in self.inputs)}), got {len(inputs)}",
                location=user_location(),
            )
        ts = [as_tensor(x, "PTOProgram.run", f"input {i}") for i, x in enumerate(inputs)]
        outs = (_lib.Handle * max(len(self.outputs), 1))()
        rep = _lib.call_string(
            _lib.lib.pypto_pto_program_run, self._handle, _lib.handle_array(t._handle for t in ts), len(ts), outs,
            len(self.outputs), int(max_steps),
        )  # fmt: skip
        self._last = json.loads(rep)
        res = [Tensor._wrap(outs[i]) for i in range(len(self.outputs))]
        return res[0] if len(res) == 1 else tuple(res)

    __call__ = run

    @property
    def last_cycles(self):
        """Simulated cycles of the last run (None before one)."""
        return None if self._last is None else self._last["cycles"]

    @property
    def last_time_ms(self):
        """Simulated time of the last run in milliseconds (None before one)."""
        return None if self._last is None else self._last["seconds"] * 1e3

    def __repr__(self):
        return f"<pypto.PTOProgram {self.directory} ({self.form}): {self.num_tasks} tasks for {self.chip}>"


class PTOKernel:
    """A PTO-AS kernel file, run like a block kernel: ``kernel(*inputs)`` passes the
    kernel's read params (in order; integer arguments as Python ints) and returns the
    param it writes, 1-D (``out_shape=`` reshapes it). It is a p.block_kernel's
    call_kernel op, so it runs eagerly or inside p.compile, and the profiler and the
    debugger see it like any kernel; ``run(*inputs)`` compiles it alone and also gives
    ``last_cycles``. ``params`` lists the GM params ({"name", "dtype", "elems",
    "access"}); ``grid`` is the block count. A kernel whose tiles are placed (pypto.addr
    or pto.tassign) keeps those addresses and its own flags, and the backend completes
    the synchronisation as for any manual program."""

    def __init__(self, path: str, blocks: int, device):
        self.path = path
        src = json.loads(_lib.call_string(_lib.lib.pypto_pto_kernel_read, path.encode(), int(blocks)))
        self.name, self.grid, self.vectors, self.core, self.form = src["name"], src["grid"], src["vectors"], src["core"], src["form"]
        self.params = src["params"]
        self._programs, self._sources, self._device = src["programs"], src["sources"], device
        written = [i for i, p in enumerate(self.params) if p["access"] in ("write", "readwrite")]
        if len(written) != 1 or written[0] != len(self.params) - 1:
            names = [self.params[i]["name"] for i in written]
            raise PyptoValueError(
                f"p.load_pto: kernel {self.name} in {path} writes {len(written)} params ({', '.join(names) or 'none'}); "
                "a kernel file is called with its inputs and returns one output, its last param",
                location=user_location(),
                suggestions=["export the whole program (executor.export_pto) and load its directory, whose manifest binds every buffer"],
            )
        self._executor = None

    @property
    def inputs(self):
        return self.params[:-1]

    @property
    def output(self):
        return self.params[-1]

    def _args(self, inputs):
        if len(inputs) != len(self.inputs):
            raise PyptoValueError(
                f"kernel {self.name}: it takes {len(self.inputs)} inputs ({', '.join(p['name'] for p in self.inputs)}), got {len(inputs)}",
                location=user_location(),
            )
        out = []
        for i, (x, p) in enumerate(zip(inputs, self.inputs)):
            if p["scalar"] and isinstance(x, (int, np.integer)):
                x = np.array([int(x)], dtype=np.int32)
            t = as_tensor(x, f"kernel {self.name}", f"input {i}")
            if int(np.prod(t.shape)) != p["elems"] or t.dtype.name != p["dtype"]:
                raise PyptoValueError(
                    f"kernel {self.name}: input {i} ({p['name']}) is {t.dtype.name}{list(t.shape)}; the kernel reads {p['elems']} elements of {p['dtype']}",
                    location=user_location(),
                )
            out.append(t.reshape([p["elems"]]) if len(t.shape) != 1 else t)
        return out

    def _attrs(self):
        out = self.output
        return {
            "name": self.name, "programs": self._programs, "grid": self.grid, "vectors": self.vectors,
            "out_type": f"{out['dtype'] if out['dtype'] != 'bool' else 'bool'}[{out['elems']}]", "sources": self._sources,
        }  # fmt: skip

    def __call__(self, *inputs, out_shape=None):
        y = apply("call_kernel", self._args(inputs), self._attrs())
        return y if out_shape is None else y.reshape(list(out_shape))

    def run(self, *inputs, out_shape=None, profile=False):
        """Compiles the kernel alone (once) and runs it: the result, with
        ``last_cycles`` / ``last_run()`` / ``get_profile_result()`` of the run."""
        if self._executor is None:
            from .config import CompileConfig

            cfg = CompileConfig(chip=self._device) if self._device else None
            self._executor = _compile(lambda *xs: apply("call_kernel", list(xs), self._attrs()), config=cfg)
        y = self._executor.run(*self._args(inputs), profile=profile)
        return y if out_shape is None else y.reshape(list(out_shape))

    def debug(self, *inputs):
        """A debugger stopped before the kernel (see Executor.debug)."""
        self.run(*inputs)
        return self._executor.debug(*self._args(inputs))

    def get_profile_result(self):
        return None if self._executor is None else self._executor.get_profile_result()

    @property
    def last_cycles(self):
        return None if self._executor is None else self._executor.last_cycles

    def last_run(self):
        return None if self._executor is None else self._executor.last_run()

    def __repr__(self):
        return f"<pypto.PTOKernel {self.name} from {self.path}: {self.core}, {self.grid} block(s), {self.form} form>"

