"""Profiles of compiled runs: ``executor.run(x, profile=True)`` and
``executor.get_profile_result()`` (docs/tools.md, "Profiling").

A profiled run traces every instruction the simulated chip executes. The result reports
the run's time, each task's time with the op it computes, the pipes' busy ratios per
task and per core, GM traffic and achieved bandwidth and FLOP/s against the chip's
peaks, GM memory over time, a ranking of ops, a bottleneck class per op and a check
for allocations left alive. ``save(dir)`` writes a Chrome / Perfetto trace and an HTML
report (profile_report.py).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import weakref
from dataclasses import dataclass, field

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.files import make_dirs, write_text
from .._core.location import user_location

__all__ = ["ProfileConfig", "ProfileResult", "compare_profiles"]

METRICS = ("time", "memory", "cache")

# Pipes whose busy time is computation, per core kind; the others move data.
_COMPUTE_PIPES = ("m", "v")
_MEMORY_PIPES = ("mte1", "mte2", "mte3", "fix")


@dataclass(frozen=True)
class ProfileConfig:
    """What a profiled run reports and where it is saved.

    - ``enable_profiling``: profile every run of the executor (False: only runs called
      with ``profile=True``).
    - ``profile_output_dir``: when set, each profiled run saves its trace and report
      there (``ProfileResult.save``).
    - ``profile_metrics``: the sections ``summary()`` and the report show, any of
      ``"time"``, ``"memory"`` and ``"cache"`` (the time ranking is always there).
    """

    enable_profiling: bool = True
    profile_output_dir: str | None = None
    profile_metrics: tuple = METRICS

    def __post_init__(self):
        check.flag(self.enable_profiling, "enable_profiling", "p.ProfileConfig")
        d = self.profile_output_dir
        if d is not None and (not isinstance(d, (str, os.PathLike)) or os.fspath(d) == ""):
            raise check.fail("p.ProfileConfig", "profile_output_dir", d, "a directory path (not empty) or None")
        m = self.profile_metrics
        if isinstance(m, str):
            m = (m,)
        if not isinstance(m, (list, tuple, set, frozenset)) or not all(isinstance(x, str) for x in m):
            raise check.fail("p.ProfileConfig", "profile_metrics", self.profile_metrics, f"a list of {', '.join(METRICS)}")
        bad = sorted(set(m) - set(METRICS))
        if bad:
            raise PyptoValueError(
                f"p.ProfileConfig: unknown profile metric(s) {', '.join(map(repr, bad))}",
                location=user_location(),
                suggestions=[f"choose among {', '.join(map(repr, METRICS))}"],
            )
        object.__setattr__(self, "profile_metrics", tuple(x for x in METRICS if x in m))
        if d is not None:
            object.__setattr__(self, "profile_output_dir", os.fspath(d))


@dataclass
class TaskProfile:
    """One task of a profiled run (times in ms, rates per second)."""

    index: int
    name: str
    op: str  # the op label: the compiled op, with a fused kernel's ops
    ops: list
    core: str
    location: str
    start_ms: float
    time_ms: float
    kernel_ms: float
    launch_ms: float  # start (dispatch, core start, prologue) and end (epilogue, final sync)
    startup_ms: float  # launch to steady state: the start, and the slowest core's own start-up
    blocks: int
    active_cores: int
    pipe_busy: dict  # pipe -> busy ratio of the task's time, averaged over active cores
    gm_bytes_read: int
    gm_bytes_written: int
    flops: int
    footprint_read: int  # distinct GM bytes read
    footprint_written: int
    l2_hits: int
    l2_misses: int
    # bytes that crossed the HBM during the kernel (fills of missed L2 lines, stores'
    # write-through); 0 on a chip without an L2 model
    hbm_bytes_read: int = 0
    hbm_bytes_written: int = 0
    # [{"kind", "core" (the chip's core), "task_core" (the task's own number), "span_cycles", "pipes": {pipe: ratio},
    #   "startup_cycles" (its own start-up: first instruction lines, page walks, cross-core flag set-up),
    #   "shared_wait_cycles" (its transfers' waits for what other cores held: L2 / HBM bandwidth, fills, the flag unit)}]
    cores: list = field(default_factory=list)
    chip_cores: list = field(default_factory=list)  # the chip's units the task ran on (AI cores for a mixed task)

    @property
    def gm_bytes(self) -> int:
        return self.gm_bytes_read + self.gm_bytes_written

    @property
    def hbm_bytes(self) -> int:
        """Bytes that crossed the HBM (the memory system's count: never more per cycle
        than the chip's HBM rate); on a chip without an L2 model, the distinct GM bytes."""
        moved = self.hbm_bytes_read + self.hbm_bytes_written
        return moved if moved else self.footprint_read + self.footprint_written

    @property
    def bandwidth(self) -> float:
        """GM bytes the pipes moved per second of the task's time (L2 hits included)."""
        return self.gm_bytes / (self.time_ms * 1e-3) if self.time_ms > 0 else 0.0

    @property
    def hbm_bandwidth(self) -> float:
        """HBM bytes (hbm_bytes) per second of the task's time."""
        return self.hbm_bytes / (self.time_ms * 1e-3) if self.time_ms > 0 else 0.0

    @property
    def flops_per_s(self) -> float:
        return self.flops / (self.time_ms * 1e-3) if self.time_ms > 0 else 0.0

    @property
    def intensity(self) -> float:
        """FLOPs per HBM byte (the roofline's x axis, against the HBM's rate)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")


def _op_label(t: dict) -> str:
    ops = t["ops"]
    if t["op"].startswith("fused") and ops:
        seen = list(dict.fromkeys(o for o in ops if o != "cast"))  # casts are the fused kernel's own
        return f"{t['op']}[{'+'.join(seen)}]"
    return t["op"]


def _location_text(loc: dict) -> str:
    if not loc or not loc.get("file"):
        return ""
    return f"{os.path.basename(loc['file'])}:{loc.get('line', 0)}"


class ProfileResult:
    """A profiled run. ``total_time`` (ms), ``peak_memory`` (MB, 10**6 bytes),
    ``cache_hit_rate`` (L2 hits over TLOAD lines, None on a chip without an L2 model),
    ``op_times`` (op label -> total ms), ``tasks`` (:class:`TaskProfile` each),
    ``memory_timeline`` ([(ms, bytes live)]), ``chip`` (the peaks compared with).
    """

    def __init__(self, data: dict, name: str, config: ProfileConfig | None = None, trace_writer=None):
        self._data = data
        self.name = name
        self.config = config or ProfileConfig()
        self._trace_writer = trace_writer  # path -> None: writes the Chrome trace
        chip = data["chip"]
        self.chip = dict(chip)
        hz = chip["clock_hz"]
        ms = lambda cycles: cycles / hz * 1e3  # noqa: E731
        self.total_time = ms(data["cycles"])
        self.tasks = []
        for i, t in enumerate(data["tasks"]):
            st = t["stats"]
            active = max(st["ActiveCores"], 1)
            busy = {p: c / (st["Cycles"] * active) if st["Cycles"] else 0.0 for p, c in sorted((st["PipeBusy"] or {}).items())}
            cores = [
                {"kind": c["kind"], "core": c["core"], "task_core": c["task_core"], "span_cycles": c["span_cycles"],
                 "pipes": {p: b / st["Cycles"] for p, b in sorted(c["pipes"].items())},
                 "startup_cycles": c["startup_cycles"], "shared_wait_cycles": c["shared_wait_cycles"]}
                for c in t.get("cores") or []
            ]  # fmt: skip
            self.tasks.append(TaskProfile(
                index=i, name=t["name"], op=_op_label(t), ops=list(t["ops"]), core=t["core"], location=_location_text(t["loc"]),
                start_ms=ms(t["start_cycles"]), time_ms=ms(st["Cycles"]), kernel_ms=ms(st["KernelCycles"]),
                launch_ms=ms(st["StartCycles"] + st["EndCycles"]), startup_ms=ms(st["StartupCycles"]), blocks=st["Blocks"], active_cores=st["ActiveCores"],
                pipe_busy=busy, gm_bytes_read=st["GMBytesRead"], gm_bytes_written=st["GMBytesWritten"], flops=t["flops"],
                footprint_read=st["FootprintRead"], footprint_written=st["FootprintWritten"], l2_hits=st["L2Hits"], l2_misses=st["L2Misses"], cores=cores,
                hbm_bytes_read=st["HBMBytesRead"], hbm_bytes_written=st["HBMBytesWritten"],
                chip_cores=list(t.get("chip_cores") or []),
            ))  # fmt: skip
        self.op_times = {}
        for t in self.tasks:
            self.op_times[t.op] = self.op_times.get(t.op, 0.0) + t.time_ms
        hits = sum(t.l2_hits for t in self.tasks)
        lines = hits + sum(t.l2_misses for t in self.tasks)
        self.cache_hit_rate = hits / lines if lines else None
        self.buffers = data["buffers"]
        self.memory_timeline = self._memory_timeline()
        self.peak_memory = max((b for _, b in self.memory_timeline), default=0) / 1e6

    def core_busy(self) -> list:
        """Each core's pipe busy ratios over the whole run: [{"kind", "core", "pipes":
        {pipe: ratio}}], from the instruction trace."""
        acc = {}
        for t in self.tasks:
            for c in t.cores:
                row = acc.setdefault((c["kind"], c["core"]), {})
                for p, ratio in c["pipes"].items():
                    row[p] = row.get(p, 0.0) + ratio * t.time_ms
        total = self.total_time or 1.0
        return [{"kind": k, "core": i, "pipes": {p: ms / total for p, ms in sorted(v.items())}} for (k, i), v in sorted(acc.items())]

    # --- memory -----------------------------------------------------------------------

    def _live_bytes(self, task: int) -> int:
        """Bytes of the GM allocations live while task runs (aliases share their owner's)."""
        return sum(b["bytes"] for b in self.buffers if b["alias"] == 0 and b["first_task"] <= task <= b["last_task"])

    def _memory_timeline(self) -> list:
        """(ms, bytes) steps: the bytes live from each task's start, and 0 at the end."""
        out = []
        for t in self.tasks:
            out.append((t.start_ms, self._live_bytes(t.index)))
        if self.tasks:
            out.append((self.total_time, self._live_bytes(len(self.tasks))))
        return out

    def memory_by_role(self) -> dict:
        """Bytes of GM allocations by role ("input", "output", "temp")."""
        out = {}
        for b in self.buffers:
            if b["alias"] == 0:
                out[b["role"]] = out.get(b["role"], 0) + b["bytes"]
        return out

    def leaks(self) -> list:
        """Allocations alive at the end of the run that no output holds: workspace
        (temp) buffers whose live range reaches past the last task, or that no task
        ever touched. Each is {"tensor", "type", "bytes", "reason"}; [] when every
        workspace buffer is released after its last reader."""
        n = len(self.tasks)
        out = []
        for b in self.buffers:
            if b["role"] != "temp" or b["alias"] != 0:
                continue
            if b["first_task"] > b["last_task"]:
                out.append({"tensor": b["tensor"], "type": b["type"], "bytes": b["bytes"], "reason": "allocated but no task reads or writes it"})
            elif b["last_task"] >= n:
                out.append({"tensor": b["tensor"], "type": b["type"], "bytes": b["bytes"], "reason": "still live after the last task"})
        return out

    # --- analysis ---------------------------------------------------------------------

    def op_stats(self) -> list:
        """Per op label, ranked by total time: {"op", "count", "total_ms", "mean_ms",
        "share", "flops", "gm_bytes", "location"}."""
        rows = {}
        for t in self.tasks:
            r = rows.setdefault(t.op, {"op": t.op, "count": 0, "total_ms": 0.0, "flops": 0, "gm_bytes": 0, "location": t.location})
            r["count"] += 1
            r["total_ms"] += t.time_ms
            r["flops"] += t.flops
            r["gm_bytes"] += t.gm_bytes
        total = sum(r["total_ms"] for r in rows.values()) or 1.0
        for r in rows.values():
            r["mean_ms"] = r["total_ms"] / r["count"]
            r["share"] = r["total_ms"] / total
        return sorted(rows.values(), key=lambda r: -r["total_ms"])

    def bottlenecks(self) -> list:
        """Each task's class, slowest first: {"task", "op", "kind" ("launch", "compute"
        or "memory"), "reason", "time_ms"}. Launch-bound: the task's start and end take
        at least as long as its kernel. Otherwise the busiest pipe decides: a compute
        pipe (cube m, vector v) busier than every data-moving pipe (mte1/2/3, fix) is
        compute-bound, else memory-bound; the reason gives the ratios and the achieved
        rate against the chip's peak."""
        out = []
        for t in sorted(self.tasks, key=lambda t: -t.time_ms):
            if t.launch_ms >= t.kernel_ms:
                kind = "launch"
                reason = f"start and end take {t.launch_ms * 1e3:.2f} us of {t.time_ms * 1e3:.2f} us; the kernel {t.kernel_ms * 1e3:.2f} us"
            else:
                comp = max(((t.pipe_busy.get(p, 0.0), p) for p in _COMPUTE_PIPES), default=(0.0, "m"))
                mem = max(((t.pipe_busy.get(p, 0.0), p) for p in _MEMORY_PIPES), default=(0.0, "mte2"))
                if comp[0] > mem[0]:
                    kind = "compute"
                    peak = self.chip["cube_flops_per_s"] if comp[1] == "m" else self.chip["vector_flops_per_s"]
                    reason = (f"pipe {comp[1]} busy {comp[0]:.0%} (busiest data pipe {mem[1]} {mem[0]:.0%}); "
                              f"{t.flops_per_s / 1e12:.3f} TFLOP/s of {peak / 1e12:.1f} peak")  # fmt: skip
                else:
                    kind = "memory"
                    reason = (f"pipe {mem[1]} busy {mem[0]:.0%} (busiest compute pipe {comp[1]} {comp[0]:.0%}); "
                              f"pipes moved {t.bandwidth / 1e9:.0f} GB/s of GM (L2 peak {self.chip['l2_bytes_per_s'] / 1e9:.0f}), "
                              f"HBM {t.hbm_bandwidth / 1e9:.0f} GB/s (peak {self.chip['gm_bytes_per_s'] / 1e9:.0f})")  # fmt: skip
            out.append({"task": t.name, "op": t.op, "kind": kind, "reason": reason, "time_ms": t.time_ms, "location": t.location})
        return out

    # --- output -----------------------------------------------------------------------

    def table(self, top: int | None = None) -> str:
        """The text summary() prints."""
        rows = self.op_stats()[:top] if top else self.op_stats()
        name_w = max([len("op")] + [len(r["op"]) for r in rows])
        head = f"{'op':<{name_w}}  {'count':>5}  {'total ms':>10}  {'mean ms':>10}  {'share':>6}  {'GFLOP/s':>9}  {'GB/s':>8}  location"
        lines = [f"profile of {self.name} on {self.chip['name']}: {self.total_time:.6f} ms, {len(self.tasks)} task(s)", head, "-" * len(head)]
        for r in rows:
            secs = r["total_ms"] * 1e-3
            gflops = r["flops"] / secs / 1e9 if secs else 0.0
            gbs = r["gm_bytes"] / secs / 1e9 if secs else 0.0
            lines.append(
                f"{r['op']:<{name_w}}  {r['count']:>5}  {r['total_ms']:>10.6f}  {r['mean_ms']:>10.6f}  {r['share']:>6.1%}  "
                f"{gflops:>9.1f}  {gbs:>8.1f}  {r['location']}"
            )
        metrics = self.config.profile_metrics
        if "memory" in metrics:
            roles = self.memory_by_role()
            lines.append(f"memory: peak {self.peak_memory:.6f} MB live; " + ", ".join(f"{k} {v} B" for k, v in sorted(roles.items())))
            leaks = self.leaks()
            lines.append("leaks: none" if not leaks else "leaks: " + "; ".join(f"t{x['tensor']} {x['type']} ({x['reason']})" for x in leaks))
        if "cache" in metrics:
            rate = "n/a (no L2 model)" if self.cache_hit_rate is None else f"{self.cache_hit_rate:.1%}"
            lines.append(f"L2 hit rate: {rate}")
        return "\n".join(lines)

    def summary(self, top: int | None = None, file=None) -> None:
        """Prints the ops ranked by total time (count, total, mean, share, achieved
        FLOP/s and GM bandwidth, user's line), then memory and cache lines."""
        print(self.table(top), file=file or sys.stdout)

    def to_dict(self) -> dict:
        """Everything the result reports, as plain data (what save writes as profile.json)."""
        return {
            "name": self.name, "chip": self.chip, "total_time_ms": self.total_time, "peak_memory_mb": self.peak_memory,
            "cache_hit_rate": self.cache_hit_rate, "op_times_ms": self.op_times, "ops": self.op_stats(),
            "bottlenecks": self.bottlenecks(), "leaks": self.leaks(), "memory_timeline": self.memory_timeline,
            "tasks": [dict(vars(t), bandwidth=t.bandwidth, hbm_bandwidth=t.hbm_bandwidth, flops_per_s=t.flops_per_s) for t in self.tasks],
        }  # fmt: skip

    def save(self, directory=None) -> dict:
        """Writes trace.json (Chrome trace / Perfetto: a track per core and pipe, a task
        track with dependency flows), report.html (self-contained: tables, a roofline and
        a memory-over-time plot as inline SVG) and profile.json into directory (default:
        the config's profile_output_dir); returns their paths."""
        from .profile_report import report_html

        directory = directory if directory is not None else self.config.profile_output_dir
        if directory is None:
            raise check.fail("ProfileResult.save", "directory", directory, "a directory (or set ProfileConfig.profile_output_dir)")
        directory = os.fspath(directory)
        if self._trace_writer is None:
            raise PyptoValueError("ProfileResult.save: this result has no trace (it was loaded from data)", location=user_location())
        make_dirs(directory, "ProfileResult.save")
        paths = {k: os.path.join(directory, f) for k, f in (("trace", "trace.json"), ("report", "report.html"), ("data", "profile.json"))}
        self._trace_writer(paths["trace"])  # the Go core writes it as write_text does
        write_text(paths["report"], report_html(self), "ProfileResult.save")
        write_text(paths["data"], json.dumps(self.to_dict(), indent=1), "ProfileResult.save")
        return paths

    def _repr_html_(self) -> str:
        from .profile_report import report_body

        return report_body(self)

    def __repr__(self) -> str:
        return (f"<pypto.ProfileResult {self.name}: {self.total_time:.6f} ms, {len(self.tasks)} task(s), "
                f"peak {self.peak_memory:.3f} MB>")  # fmt: skip


class _ProfileHandle:
    """The Go profile a result was read from, freed with the result."""

    def __init__(self, handle: int):
        self.handle = handle
        self._finalizer = weakref.finalize(self, _lib.free_handle, handle)
        self._finalizer.atexit = False

    def write_trace(self, path) -> None:
        _lib.call(_lib.lib.pypto_profile_trace, self.handle, os.fspath(path).encode())


def _from_executor(handle: int, name: str, config: ProfileConfig | None) -> ProfileResult | None:
    """The executor's last profile (None when it has no profiled run on a chip)."""
    h = _lib.Handle()
    _lib.call(_lib.lib.pypto_executor_last_profile, handle, ctypes.byref(h))
    if not h.value:
        return None
    ph = _ProfileHandle(h.value)
    data = json.loads(_lib.call_string(_lib.lib.pypto_profile_json, ph.handle))
    return ProfileResult(data, name, config, ph.write_trace)


def compare_profiles(a: ProfileResult, b: ProfileResult):
    """Per-op differences of two profiled runs (e.g. two opt levels): see
    :class:`ProfileComparison`."""
    from .profile_compare import ProfileComparison

    for name, r in (("a", a), ("b", b)):
        if not isinstance(r, ProfileResult):
            raise check.fail("p.compare_profiles", name, r, "a ProfileResult (executor.get_profile_result())")
    return ProfileComparison(a, b)
