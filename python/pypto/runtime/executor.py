"""p.compile: trace a Python function once, with symbolic shapes, and run it compiled.

Tracing calls the function once on placeholder tensors (Python control flow unrolls).
With symbolic shapes the traced Tensor Graph serves every input size: each run binds
the symbols from the inputs' shapes, checks what the ops need of them, and specialises
the graph to concrete shapes, compiled once per binding (docs/api.md, "Symbolic
shapes").
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import json
import os
import re
import threading
import warnings

import numpy as np

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import CompileError, PyptoError, PyptoTypeError, ShapeError, SymbolicShapeError
from .._core.location import recording_scopes, user_location
from .._core.symbolic import symbol
from ..tensor_level.tensor import Tensor, _placeholder_from_text, as_tensor
from ..tools.profile import ProfileConfig, _from_executor as _profile_from_executor
from ..tools.progress import watch
from ..tools.visualize import Visualization
from .config import CompileConfig
from .device import get_device
from .graph import Graph
from .pool import MemoryPool
from .tracing import Owned, Trace, given_placeholders, placeholder, trace_function

__all__ = ["compile", "Executor", "RunReport"]


def compile(fn, config=None, *, inputs=None, dynamic=None, memory_pool=None, profile_config=None, donate_argnums=()) -> "Executor":
    """Returns an :class:`Executor` for ``fn``, a function of p.Tensors returning a
    p.Tensor or a tuple/list of them. Tensors the function captures from outside become
    constants of the compiled program. Inside the function values have no data:
    realising them (``.numpy()``, ``print``, ``bool()``) raises an error.

    - ``inputs=[x, ...]``: placeholders to trace with, now, once: p.Tensors whose shapes
      may hold ``p.symbol`` dims (``p.Tensor([batch, seq, 1024], dtype=p.float16)``).
      Every run binds the symbols from its inputs' shapes; a symbol that gets two values
      ("batch is 4 from input 0 but 8 from input 1"), or a size an op needs otherwise,
      is a ShapeError naming the symbol and both values.
    - otherwise the function is traced at its first run with **automatic symbols**:
      every dim of every input becomes a symbol named ``<parameter>.<axis>`` (dims of
      size 0 or 1 stay concrete, as they change how broadcasting works), so one trace
      serves later sizes too. When the function needs a concrete size (``int(dim)``,
      ``range(x.shape[0])``), or a run's sizes break what the trace assumed, that input
      signature is traced again with concrete shapes. ``dynamic=False`` traces every
      signature with concrete shapes; ``dynamic=True`` never falls back (errors raise).

    ``fn`` may also be a :class:`pypto.Graph`: its trace is compiled (traced at the
    first run when the graph was made without inputs).

    ``config`` is a :class:`pypto.CompileConfig` (None: the defaults): the optimisation
    level, passes to disable, a memory pool the program must fit and the chip to
    compile for. Invalid options raise here, before anything is traced.
    ``memory_pool`` is a :class:`pypto.MemoryPool` that lends every run its device
    memory (the program must fit it). Same as ``p.Executor(fn, config, ...)``; a
    :class:`pypto.DistributedConfig` as ``config`` gives a distributed executor.

    ``profile_config`` is a :class:`pypto.ProfileConfig`: with ``enable_profiling`` every
    run is profiled (``get_profile_result()``), and saved when it names a directory. A
    ProfileConfig given as ``config`` (as the guide writes ``p.compile(graph,
    config=profile_config)``) is taken as ``profile_config`` with the default compile
    options.

    ``donate_argnums`` (an int or a tuple of ints, as in JAX) names the inputs whose
    device buffers the program may overwrite: a ``p.slice_update`` (or ``x[a:b] = y``)
    of a donated input is written where the input lives, storing only the update's
    bytes, and the result comes back from that buffer. The arrays you pass are never
    modified (each run copies its inputs to the device). Without donation an update of
    an input copies it first, which ``info()["update_copies"]`` reports.
    """
    if isinstance(config, ProfileConfig):
        if profile_config is not None:
            raise PyptoTypeError("p.compile: a ProfileConfig given both as config and as profile_config; give it once "
                                 "(config=p.CompileConfig(...), profile_config=p.ProfileConfig(...))", location=user_location())  # fmt: skip
        config, profile_config = None, config
    make = _executor_factory(config)
    if make is not None:
        return make(fn, config)
    return Executor(fn, config, inputs=inputs, dynamic=dynamic, memory_pool=memory_pool, profile_config=profile_config,
                    donate_argnums=donate_argnums, _op="p.compile")  # fmt: skip


#: Configurations that give executors of their own: config type -> ``make(fn, config)``.
#: p.DistributedConfig's distributed runtime, a layer above this one, registers itself.
_EXECUTOR_FACTORIES = {}


def register_executor_factory(config_type: type, make) -> None:
    _EXECUTOR_FACTORIES[config_type] = make


def _executor_factory(config):
    for config_type, make in _EXECUTOR_FACTORIES.items():
        if isinstance(config, config_type):
            return make
    return None


class _Compiled(Owned):
    """One traced Go executor (symbolic or for one concrete signature)."""

    __slots__ = ("n_out", "structure", "symbolic", "viz_written")

    def __init__(self, handle: int, n_out: int, structure, symbolic: bool):
        super().__init__(handle)
        self.n_out, self.structure, self.symbolic = n_out, structure, symbolic
        self.viz_written = 0  # programs whose page is written (a symbolic trace: one per binding)

    def __reduce__(self):
        raise PyptoTypeError("a compiled program cannot be pickled; pickle its p.compile Executor, which compiles again")

    def info(self) -> dict:
        return json.loads(_lib.call_string(_lib.lib.pypto_executor_info_json, self.handle))


class Executor:
    """A function compiled for the simulated NPU: ``p.Executor(model, config=None, *,
    memory_pool=None, inputs=None, dynamic=None)`` (``p.compile`` takes the same
    arguments). ``model`` is a function of p.Tensors or a :class:`pypto.Graph`. Call
    ``run(*inputs)`` (or the executor itself) with p.Tensors or numpy arrays;
    ``last_run()`` is the calling thread's report of its last run (:class:`RunReport`).
    With ``memory_pool=`` (a :class:`pypto.MemoryPool`), every run's device memory is
    lent by the pool, which several executors may share, and a program that does not
    fit it is a CompileError.

    An executor may be run from several threads at once: each run has its own device
    memory and its own report.

    ``copy.copy`` and ``copy.deepcopy`` give an executor of the same function and options
    sharing the programs compiled so far; ``pickle`` (e.g. to a ``spawn`` worker) carries
    the function (by reference: a module-level function), the options and the traced
    input types, and the other process compiles again on its first run (with a memory
    pool of its own, of the same size)."""

    def __init__(self, model, config=None, *, memory_pool=None, inputs=None, dynamic=None, profile_config=None,
                 donate_argnums=(), _op="p.Executor"):  # fmt: skip
        graph = model if isinstance(model, Graph) else None
        fn = graph._fn if graph is not None else model
        if not callable(fn):
            raise check.fail(_op, "fn" if _op == "p.compile" else "model", model, "a function or a p.Graph")
        if config is None:
            config = CompileConfig()
        if not isinstance(config, CompileConfig):
            accepted = "a p.CompileConfig, a p.DistributedConfig, a p.ProfileConfig or None" if _op == "p.compile" else "a p.CompileConfig or None"
            raise check.fail(_op, "config", config, accepted)
        if dynamic is not None:
            dynamic = check.flag(dynamic, "dynamic", _op)
        if memory_pool is not None and not isinstance(memory_pool, MemoryPool):
            raise check.fail(_op, "memory_pool", memory_pool, "a p.MemoryPool or None")
        if inputs is not None and (isinstance(inputs, (Tensor, str, bytes)) or not isinstance(inputs, (list, tuple))):
            raise check.fail(_op, "inputs", inputs, "a list of p.Tensors (or (shape, dtype) pairs)")
        if inputs is not None and graph is not None:
            raise PyptoTypeError(
                f"{_op}: inputs= is given twice, to the p.Graph and here", location=user_location(),
                suggestions=["give the inputs to p.Graph(model, inputs=[...]) only"],
            )  # fmt: skip
        if profile_config is not None and not isinstance(profile_config, ProfileConfig):
            raise check.fail(_op, "profile_config", profile_config, "a p.ProfileConfig or None")
        if isinstance(donate_argnums, (int, np.integer)) and not isinstance(donate_argnums, bool):
            donate_argnums = (donate_argnums,)
        if not isinstance(donate_argnums, (tuple, list)) or any(
            isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in donate_argnums
        ):
            raise check.fail(_op, "donate_argnums", donate_argnums, "an input position (int >= 0) or a tuple of them")
        self._donate = tuple(sorted({int(k) for k in donate_argnums}))
        _lib.call(_lib.lib.pypto_config_check, config._json())
        self._fn = fn
        self._config = config
        self._pool = memory_pool
        self._graph = graph  # the p.Graph compiled, which records the first trace
        self._name = getattr(fn, "__name__", "main")
        self._dynamic = dynamic
        self._given = None  # device -> _Compiled of the trace given (inputs=, a traced p.Graph)
        self._given_trace: Trace | None = None
        self._symbolic: dict = {}  # (ranks, dtypes, layouts, device) -> _Compiled or None (gave up)
        self._static: dict = {}  # (shapes, dtypes, layouts, device) -> _Compiled
        self._lock = threading.Lock()
        self._last: _Compiled | None = None
        self._tracing = threading.local()  # .active: this thread is inside the function
        self._profile_config = profile_config  # a ProfileConfig: how runs are profiled
        self._profile = None  # the last profiled run's ProfileResult
        self._reports = threading.local()  # .last: this thread's last RunReport
        if inputs is not None:
            self._trace_given(list(inputs))
        elif graph is not None and graph._trace is not None:
            self._given_trace = graph._trace
            self._given = {self._device(): self._compile_trace(graph._trace)}

    def __copy__(self) -> "Executor":
        ex = Executor(self._fn, self._config, memory_pool=self._pool, dynamic=self._dynamic, donate_argnums=self._donate)
        ex._graph = self._graph
        ex._given = dict(self._given) if self._given is not None else None
        ex._given_trace = self._given_trace
        ex._symbolic, ex._static = dict(self._symbolic), dict(self._static)
        ex._profile_config = self._profile_config
        return ex

    def __deepcopy__(self, memo) -> "Executor":
        return self.__copy__()

    def __reduce__(self):
        import pickle

        try:
            pickle.dumps(self._fn)
        except Exception as e:  # noqa: BLE001 (pickle raises several kinds)
            raise PyptoTypeError(
                f"a p.compile Executor pickles its function by reference, and {self._name} cannot be pickled ({e})",
                location=user_location(),
                suggestions=["compile a function defined at the top level of a module (not a lambda or a nested function)"],
            ) from None
        given = None if self._given_trace is None else [t._info()["text"] for t in self._given_trace.placeholders]
        pool = None if self._pool is None else self._pool.size
        return (_executor_from_parts, (self._fn, self._dynamic, self._config, given, pool, self._donate))

    @property
    def memory_pool(self):
        """The :class:`pypto.MemoryPool` lending this executor's runs their memory (None:
        each program has its own)."""
        return self._pool

    @property
    def config(self) -> CompileConfig:
        """The compile options this executor was made with."""
        return self._config

    def _device(self) -> str:
        """The device programs are compiled for: the config's chip, else the current one."""
        return self._config.chip or get_device()

    # --- tracing --------------------------------------------------------------------------

    def _trace_given(self, inputs):
        placeholders = given_placeholders(inputs, "p.compile")
        self._given_trace = trace_function(self._fn, self._name, placeholders, self._tracing, self._scopes())
        self._record(self._given_trace)
        self._given = {self._device(): self._compile_trace(self._given_trace)}

    def _trace(self, placeholders) -> _Compiled:
        tr = trace_function(self._fn, self._name, placeholders, self._tracing, self._scopes())
        self._record(tr)
        return self._compile_trace(tr)

    def _scopes(self):
        """What tracing records besides the graph: with enable_visualization, the scopes
        of the user's code the viewer groups nodes by."""
        return recording_scopes() if self._config.enable_visualization else contextlib.nullcontext()

    def _record(self, tr: Trace):
        """The p.Graph this executor compiles shows its first trace."""
        if self._graph is not None and self._graph._trace is None:
            self._graph._trace = tr

    def _compile_trace(self, tr: Trace) -> _Compiled:
        h = _lib.Handle()
        pool = self._pool._handle if self._pool is not None else 0
        with watch(f"compile {self._name}"):
            _lib.call(_lib.lib.pypto_trace_compile, tr.handle, self._config_json(), pool, ctypes.byref(h))
        compiled = _Compiled(h.value, 0, tr.structure, False)
        n = ctypes.c_int32()
        _lib.call(_lib.lib.pypto_executor_num_outputs, compiled.handle, ctypes.byref(n))
        compiled.n_out = n.value
        compiled.symbolic = compiled.info()["symbolic"]
        if not compiled.symbolic:
            self._write_visualization(compiled)
        return compiled

    def _config_json(self) -> bytes:
        """The compile options sent to the compiler: the config's and the donated inputs."""
        if not self._donate:
            return self._config._json()
        return json.dumps({**json.loads(self._config._json()), "donate": list(self._donate)}).encode()

    def _write_visualization(self, compiled: _Compiled) -> None:
        """With enable_visualization, writes the page of each program compiled (once)."""
        if not self._config.enable_visualization:
            return
        n = compiled.info()["compiled"] if compiled.symbolic else 1
        if n == compiled.viz_written:
            return
        compiled.viz_written = n
        try:
            view = Visualization._of(compiled.handle)
        except PyptoError as e:  # e.g. the reference device compiles no program
            warnings.warn(f"p.compile: no visualisation of {self._name}: {e}", stacklevel=3)
            return
        view.save(os.path.join(self._config.visualization_dir, ""))

    def _auto_placeholders(self, tensors):
        """Placeholders whose dims are automatic symbols named <parameter>.<axis>."""
        names = _param_names(self._fn, len(tensors))
        out = []
        for name, t in zip(names, tensors):
            keep = t.layout.name == "NZ"  # NZ types carry concrete fractal counts
            dims = [d if keep or d in (0, 1) else symbol(f"{name}.{ax}") for ax, d in enumerate(t.shape)]
            out.append(placeholder(dims, t.dtype, t.layout))
        return out

    # --- running --------------------------------------------------------------------------

    def run(self, *inputs, profile=False):
        """Runs the program on inputs (p.Tensors or numpy arrays) and returns its
        result(s). ``profile=True`` (or a :class:`pypto.ProfileConfig`) traces every
        instruction of the run for :meth:`get_profile_result` (slower: use it to look,
        not to time)."""
        profile = self._profile_choice(profile)
        if getattr(self._tracing, "active", False):
            raise CompileError(
                f"p.compile: {self._name} runs its own executor while that executor traces it (re-entrant tracing)",
                location=user_location(),
                suggestions=[
                    f"call the Python function {self._name} itself there: its ops are traced into the same program",
                    "or compile the inner computation as a separate function",
                ],
            )
        tensors = [_run_input(x, i) for i, x in enumerate(inputs)]
        device = self._device()
        if self._given is not None:
            compiled = self._given.get(device)
            if compiled is None:
                with self._lock:
                    compiled = self._given.get(device) or self._compile_trace(self._given_trace)
                    self._given[device] = compiled
            return self._run(compiled, tensors, profile)
        sig = (tuple((t.shape, t.dtype.code, t.layout.name) for t in tensors), device)
        if sig in self._static:  # traced concretely before (e.g. after a fallback)
            return self._run(self._static[sig], tensors, profile)
        if self._dynamic is not False:
            key = (tuple((t.ndim, t.dtype.code, t.layout.name) for t in tensors), device)
            compiled = self._symbolic_for(key, tensors)
            if compiled is not None:
                try:
                    return self._run(compiled, tensors, profile)
                except (ShapeError, CompileError):
                    if self._dynamic:
                        raise
                    # This run's sizes break what the symbolic trace assumed (a size-1
                    # broadcast, an unlowered op only the symbolic form uses): trace
                    # this signature with its concrete shapes instead.
        return self._run(self._static_for(tensors, sig), tensors, profile)

    __call__ = run

    def _symbolic_for(self, key, tensors):
        if key in self._symbolic:
            return self._symbolic[key]
        with self._lock:  # trace each signature once, even from several threads
            if key not in self._symbolic:
                try:
                    self._symbolic[key] = self._trace(self._auto_placeholders(tensors))
                except (PyptoError, SymbolicShapeError):
                    if self._dynamic:
                        raise
                    self._symbolic[key] = None  # the function needs concrete sizes
            return self._symbolic[key]

    def _static_for(self, tensors, sig):
        compiled = self._static.get(sig)
        if compiled is None:
            with self._lock:
                compiled = self._static.get(sig)
                if compiled is None:
                    compiled = self._trace([placeholder(t.shape, t.dtype, t.layout) for t in tensors])
                    self._static[sig] = compiled
        return compiled

    def _profile_choice(self, profile):
        """The ProfileConfig of a run, or None when it is not profiled."""
        if isinstance(profile, ProfileConfig):
            return profile if profile.enable_profiling else None
        profile = check.flag(profile, "profile", "Executor.run")
        cfg = self._profile_config
        if profile:
            return cfg or ProfileConfig()
        return cfg if cfg is not None and cfg.enable_profiling else None

    def _run(self, compiled: _Compiled, tensors, profile=None):
        outs = (_lib.Handle * max(compiled.n_out, 1))()
        try:
            with watch(f"run {self._name}"):
                text = _lib.call_string(
                    _lib.lib.pypto_executor_run_report,
                    compiled.handle,
                    _lib.handle_array(t._handle for t in tensors),
                    len(tensors),
                    outs,
                    compiled.n_out,
                    1 if profile else 0,
                )
        except PyptoError as e:  # the inputs of this run: the caller's line
            e.location = e.location or user_location()
            raise
        self._last = compiled
        if compiled.symbolic:  # this run may have compiled a specialisation
            self._write_visualization(compiled)
        results = [Tensor._wrap(outs[i]) for i in range(compiled.n_out)]
        self._reports.last = RunReport._from_json(json.loads(text), self._device())
        if profile is not None:
            self._profile = _profile_from_executor(compiled.handle, self._name, profile)
            if self._profile is not None and profile.profile_output_dir:
                self._profile.save(profile.profile_output_dir)
        kind = compiled.structure
        if kind == "single":
            return results[0]
        return tuple(results) if kind == "tuple" else results

    def last_run(self) -> "RunReport | None":
        """The report of the calling thread's last run of this executor (None before
        one): simulated time, host time, the program that ran and its memory. Threads
        sharing the executor each see their own runs."""
        return getattr(self._reports, "last", None)

    # --- introspection --------------------------------------------------------------------

    def _all(self):
        out = list(self._static.values()) + [c for c in self._symbolic.values() if c is not None]
        if self._given:
            out += list(self._given.values())
        return out

    @property
    def num_compiled(self) -> int:
        """How many programs are compiled: one per concrete trace, and one per binding
        of its symbols that a symbolic trace has run with."""
        return sum(c.info()["compiled"] for c in self._all())

    @property
    def num_traced(self) -> int:
        """How many times the function has been traced."""
        return len(self._all())

    @property
    def is_symbolic(self) -> bool:
        """Whether the last run (or, before any, the trace) used a symbolic trace."""
        c = self._last or (next(iter(self._given.values())) if self._given else None)
        return bool(c and c.symbolic)

    def graph(self) -> str:
        """The text of the traced Tensor Graph of the last run (symbolic dims print as
        expressions, e.g. f16[batch,seq_len,1024])."""
        c = self._last or (next(iter(self._given.values())) if self._given else None)
        if c is None:
            raise RuntimeError("graph(): the executor has not been traced yet")
        return c.info()["graph"]

    def constraints(self) -> list:
        """What a run's sizes must satisfy, as texts like "seq_len >= 4" (symbolic traces)."""
        c = self._last or (next(iter(self._given.values())) if self._given else None)
        return [] if c is None else c.info()["constraints"]

    def _last_stats(self):
        c = self._last
        if c is None:
            return None
        cycles, seconds, has = ctypes.c_int64(), ctypes.c_double(), ctypes.c_int32()
        _lib.call(
            _lib.lib.pypto_executor_last_stats, c.handle, ctypes.byref(cycles), ctypes.byref(seconds), ctypes.byref(has)
        )
        if not has.value:
            return None
        return cycles.value, seconds.value

    @property
    def last_cycles(self):
        """Simulated cycles of the last run (None before the first)."""
        s = self._last_stats()
        return None if s is None else s[0]

    @property
    def last_time_ms(self):
        """Simulated time of the last run in milliseconds, at the chip's clock (None
        before the first run)."""
        s = self._last_stats()
        return None if s is None else s[1] * 1e3

    def info(self) -> dict:
        """What was compiled for the last run (before any run, the first trace): "device",
        "opt_level", "disable_passes", "memory_pool_bytes" (0: no limit), and "memory",
        the device memory plan in bytes ({"input_bytes", "constant_bytes", "output_bytes",
        "workspace_bytes", "workspace_no_reuse_bytes", "prepared_bytes" (the captured
        tensors' prepared forms, kept between runs), "peak_bytes"}; None before a
        symbolic trace has run, and on the "reference" device), and
        "layout_conversions", the layout conversions the program keeps (each {"from",
        "to", "shape", "bytes", "where"}: exact round trips such as ND -> NZ -> ND are
        removed from opt_level 1), and for a symbolic trace "buckets": None when it
        compiles a program per size ("no_buckets" says why), else {"bounds": the bucket
        bounds learnt for each symbol, "probes": the programs estimated to find them}.
        "dynamic_kernels" lists, for a symbolic trace, the kernels of the last program
        that compute only the rows the run's sizes need (their count read when the
        program runs) rather than the whole bucket's bound. "donated" lists the donated
        inputs, and "update_copies" the slice updates that copy their tensor instead of
        writing it in place (each {"bytes", "reason", "where"}; see ``donate_argnums``)."""
        i = self._current("info(): the executor has not been traced yet").info()
        keys = ("device", "opt_level", "disable_passes", "memory_pool_bytes", "memory", "layout_conversions", "donated",
                "update_copies")  # fmt: skip
        out = {k: i[k] for k in keys}
        if i["symbolic"]:
            out["buckets"], out["no_buckets"] = i["buckets"], i["no_buckets"]
            out["dynamic_kernels"] = [t["op"] for t in i["tiles"] or [] if t["dynamic_rows"]]
        return out

    def stats(self):
        """Full statistics of the last run as a dict (None before the first run): "cycles"
        and "seconds" (simulated time), "hbm_bytes" (the bytes the run moved between the
        chip and its device memory: L2 misses, stores written through, intermediates
        written back; see "Shared L2" in docs/device.md), "kernel_cycles" and
        "kernel_seconds" (the part the kernels ran, first to last instruction, without each
        task's launch and end), "tasks" (the tasks that ran), "prepared_tasks" (the tasks
        skipped because an earlier run prepared the captured tensors they convert: see
        "Weight preparation" in docs/api.md), "memory" (the memory plan of the program that ran,
        see info()), "program" (for a symbolic trace, the program chosen: its bucket,
        "batch<=1,seq_len<=128", or with per_size_programs the sizes, "seq_len=100") and
        "detail" (every task's statistics)."""
        c = self._last
        if c is None:
            return None
        return json.loads(_lib.call_string(_lib.lib.pypto_executor_stats_json, c.handle))

    def debug(self, *inputs):
        """A :class:`pypto.debug.Debugger`: a paused run on inputs that steps through the
        Tensor Graph one node at a time on the device (each node its own program, so
        that every node's inputs and output can be looked at)."""
        tensors = [_run_input(x, i) for i, x in enumerate(inputs)]
        device = self._device()
        if self._given is not None:
            compiled = self._given.get(device) or self._compile_trace(self._given_trace)
            self._given.setdefault(device, compiled)
            return self._debugger(compiled, tensors)
        sig = (tuple((t.shape, t.dtype.code, t.layout.name) for t in tensors), device)
        if sig not in self._static and self._dynamic is not False:
            key = (tuple((t.ndim, t.dtype.code, t.layout.name) for t in tensors), device)
            compiled = self._symbolic_for(key, tensors)
            if compiled is not None:
                try:
                    return self._debugger(compiled, tensors)
                except (ShapeError, CompileError):
                    if self._dynamic:
                        raise
        return self._debugger(self._static_for(tensors, sig), tensors)

    def _debugger(self, compiled: _Compiled, tensors):
        from ..tools.debug import Debugger

        h = _lib.Handle()
        try:
            _lib.call(
                _lib.lib.pypto_executor_debug,
                compiled.handle,
                _lib.handle_array(t._handle for t in tensors),
                len(tensors),
                ctypes.byref(h),
            )
        except PyptoError as e:
            e.location = e.location or user_location()
            raise
        self._last = compiled  # graph(), dump() and info() describe what is being debugged
        return Debugger(h.value, compiled.structure, compiled.n_out, self._name)

    def get_profile_result(self):
        """The :class:`pypto.ProfileResult` of the last profiled run (``run(x,
        profile=True)``); None before one, or when the run computed nothing on a chip
        (the "reference" device has no timing)."""
        return self._profile

    def export_pto(self, directory, assemble: bool = False):
        """Writes the program of the last run (for a symbolic trace, of its last
        specialisation) as PTO-AS, the PTO toolchain's text format, into directory: per
        kernel ``<kernel>.pto`` (the auto form, for ``ptoas --enable-insert-sync``) and
        ``<kernel>.manual.pto`` (the machine program: every flag, each tile's address),
        and ``manifest.json`` (the tasks in dependency order with their functions, block
        counts and the GM buffers they bind). Captured tensors become constant buffers
        whose bytes are written beside. With ``assemble=True`` ptoas (``pip install
        'pypto[ptoas]'``) turns every kernel file into C++ for the tile library, written
        beside it; a rejection raises PtoasError with ptoas's diagnostic. Returns an
        ExportReport (one dict per kernel). ``p.load_pto(directory)`` reads it back."""
        from ..tools import ptoas as _ptoas

        c = self._current("export_pto(): the executor has not been run yet, so nothing is compiled")
        assemble = check.flag(assemble, "assemble", "export_pto")
        return _ptoas.export(c.handle, directory, assemble)

    def dump(self) -> str:
        """Text of every graph level and the PTO programs of the last run (for a
        symbolic trace, of its last specialisation)."""
        c = self._current("dump(): the executor has not been run yet, so nothing is compiled")
        return _lib.call_string(_lib.lib.pypto_executor_dump, c.handle)

    def _repr_html_(self) -> str:
        """For notebooks: the traced Tensor Graph and the last run's time and memory."""
        import html

        head = html.escape(repr(self))
        try:
            text = self.graph()
        except RuntimeError:
            return f"<p>{head}</p>"
        parts = [f"<p>{head}</p>", f"<pre>{html.escape(text)}</pre>"]
        st = self.stats()
        if st is not None:
            mem = st.get("memory") or {}
            parts.append(f"<p>last run: {st['seconds'] * 1e6:.2f} us simulated in {st['tasks']} task(s)"
                         + (f", {mem['peak_bytes']} bytes of device memory" if mem else "") + "</p>")  # fmt: skip
        return "".join(parts)

    def visualize(self) -> Visualization:
        """The viewer of the last run's program (before any run, the first trace's): the
        four levels, the PTO and machine programs and the passes, as a
        :class:`pypto.Visualization` (``save(path)``, shown inline in notebooks). Needs
        ``p.CompileConfig(enable_visualization=True)``."""
        c = self._current("visualize(): the executor has not been traced yet; run it once")
        return Visualization._of(c.handle)

    def _current(self, untraced: str) -> _Compiled:
        """The last run's program, else the first trace's; RuntimeError(untraced) if none."""
        if self._last is not None:
            return self._last
        traced = self._all()
        if not traced:
            raise RuntimeError(untraced)
        return traced[0]

    def __repr__(self) -> str:
        return f"<pypto.Executor {self._name}: {self.num_traced} trace(s), {self.num_compiled} compiled program(s)>"


class RunReport:
    """What one run of an :class:`Executor` did (``executor.last_run()``):

    - ``program``: the compiled program that ran (the function's name, and for a
      symbolic trace the bucket of sizes it serves, ``"f[batch<=4,seq<=128]"``, or
      the binding it was specialised for, ``"f[batch=2,seq=128]"``);
    - ``simulated_seconds`` / ``simulated_ms`` and ``cycles``: simulated device time
      (``kernel_cycles``: the kernels' part, without launches); ``tasks`` (those that
      ran) and ``prepared_tasks`` (those skipped because an earlier run prepared the
      captured weights they convert); ``timing_cached_tasks``: the tasks whose
      simulated times came from the device's timing cache, because an earlier run
      had the same program, addresses and options (their values were computed
      again; the times are the ones the timing model gives, see docs/device.md);
    - ``host_seconds`` / ``host_ms``: wall time of the call on the host (compiling a
      new program when the run needed one, waiting for the pool, simulating);
    - ``peak_bytes`` and ``memory``: the program's device memory plan (``info()``);
    - ``pool``: the memory pool's ``stats()`` after the run (None without a pool);
    - ``device``: the chip preset (on ``"reference"``, which has no timing, the times
      and cycles are 0); ``simulated``: False when nothing ran (every output an input
      or a constant).
    """

    __slots__ = ("program", "cycles", "simulated_seconds", "kernel_cycles", "tasks", "prepared_tasks",
                 "timing_cached_tasks", "host_seconds", "memory", "pool", "device", "simulated")  # fmt: skip

    @classmethod
    def _from_json(cls, d: dict, device: str) -> "RunReport":
        r = cls.__new__(cls)
        r.program, r.cycles, r.simulated_seconds = d["program"], d["cycles"], d["seconds"]
        r.kernel_cycles, r.tasks, r.host_seconds = d["kernel_cycles"], d["tasks"], d["host_seconds"]
        r.prepared_tasks, r.timing_cached_tasks = d["prepared_tasks"], d["timing_cached_tasks"]
        r.memory, r.pool, r.device, r.simulated = d["memory"], d["pool"], device, d["simulated"]
        return r

    @property
    def simulated_ms(self) -> float:
        return self.simulated_seconds * 1e3

    @property
    def host_ms(self) -> float:
        return self.host_seconds * 1e3

    @property
    def peak_bytes(self):
        """The device memory the program needs at its peak (None without a plan)."""
        return None if self.memory is None else self.memory["peak_bytes"]

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__} | {"simulated_ms": self.simulated_ms, "host_ms": self.host_ms}

    def __repr__(self) -> str:
        return (
            f"<pypto.RunReport {self.program} on {self.device}: simulated {self.simulated_ms:.4f} ms "
            f"({self.cycles} cycles), host {self.host_ms:.2f} ms, peak {self.peak_bytes} bytes>"
        )


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _param_names(fn, n: int) -> list:
    """Names for the automatic symbols of n inputs: the function's parameter names where
    they are plain identifiers, else in<i>."""
    names = []
    try:
        params = [
            p for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]  # fmt: skip
    except (TypeError, ValueError):
        params = []
    for i in range(n):
        name = f"in{i}"
        if i < len(params) and params[i].kind != params[i].VAR_POSITIONAL and _IDENT.match(params[i].name):
            name = params[i].name
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL and _IDENT.match(params[-1].name):
            name = f"{params[-1].name}{i - len(params) + 1}"
        names.append(name)
    if len(set(names)) != len(names):
        names = [f"in{i}" for i in range(n)]
    return names


def _run_input(x, i) -> Tensor:
    if isinstance(x, (Tensor, np.ndarray)):
        return as_tensor(x, "Executor.run", f"input {i}")
    raise check.fail("Executor.run", f"input {i}", x, "a p.Tensor or a numpy array")


def _executor_from_parts(fn, dynamic, config, given, pool, donate=()) -> Executor:
    """An executor rebuilt from a pickle: it traces and compiles again when it runs."""
    inputs = None if given is None else [_placeholder_from_text(text) for text in given]
    return Executor(fn, config, dynamic=dynamic, inputs=inputs, memory_pool=None if pool is None else MemoryPool(pool),
                    donate_argnums=donate)  # fmt: skip
