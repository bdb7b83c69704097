"""``executor.debug(*inputs)``: a paused run that steps through the Tensor Graph one node
at a time on the simulated device (docs/tools.md, "Debugger").

Each node runs as a program of its own on the executor's device, with the executor's
options, on the values the earlier nodes computed (session/debug.go): every node's
inputs and output are observable as the device computed them. Nodes are not fused
with each other in this mode, so each intermediate is rounded to its node's dtype, as
at ``opt_level=0``.
"""

from __future__ import annotations

import ctypes
import html
import json
import os
import weakref
from dataclasses import dataclass

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import Tensor

__all__ = ["Debugger", "Stop", "Node"]


def _close_and_free(handle: int) -> None:
    try:
        _lib.lib.pypto_debug_close(handle)  # a stopped block runs to its end
    finally:
        _lib.free_handle(handle)


@dataclass(frozen=True)
class Node:
    """One node of the graph being debugged: ``name`` as the Tensor Graph text prints
    it (``%3``, ``%in0``), ``op``, ``text`` (its line), ``type``, ``inputs`` (node
    indices), ``file`` and ``line`` where the user's code made it."""

    index: int
    name: str
    op: str
    text: str
    type: str
    inputs: tuple
    file: str
    line: int
    func: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""


@dataclass(frozen=True)
class Stop:
    """Where a debugger stopped: the node that just ran (its name, op and the user's
    file:line), and ``reason`` ("breakpoint", "step")."""

    node: str
    op: str
    file: str
    line: int
    index: int
    text: str
    reason: str
    # At an instruction breakpoint: the block's program, block, pc, the instruction's
    # index in its PTO program, its text and pipe (None at node stops).
    program: str | None = None
    block: int | None = None
    pc: int | None = None
    instr_index: int | None = None
    instr: str | None = None
    pipe: str | None = None

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    def __str__(self) -> str:
        if self.program is not None:
            where = f" at {os.path.basename(self.file)}:{self.line}" if self.file else ""
            return f"{self.reason}: {self.program} block {self.block} pc {self.pc} [{self.instr_index}] {self.instr}{where} (node {self.node} {self.op})"
        where = f" at {os.path.basename(self.file)}:{self.line}" if self.file else ""
        return f"{self.reason}: {self.text}{where}"


class Debugger:
    """Created by :meth:`pypto.Executor.debug`. It starts paused before the first node.

    - ``break_at(target)``: a node name as the graph text prints it (``"%4"``), an op
      name (``"relu"``: every node of that op) or a predicate ``f(node) -> bool`` of a
      :class:`Node`; returns the breakpoint's number (``clear(n)`` removes it).
    - ``continue_()`` runs nodes until one with a breakpoint has run and returns the
      :class:`Stop`, or None when the graph finished without one.
    - ``step()`` runs one node; ``where()`` is the last node run (None before any).
    - ``inputs()`` / ``outputs()``: the current node's input and output values as numpy
      arrays; ``value(name)`` any node's value that is computed.
    - ``finish()`` runs the rest and returns the run's results as ``run`` would.

    Block level: ``break_at_instruction(kernel=None, index=None, line=None,
    block=None)`` stops inside a node's program, before a PTO instruction (by its index
    in the kernel's program as the dump prints it, or by the source line of a block
    kernel), in the matching machine programs (``kernel``: their name, or its part
    before an underscore: ``"matmul_0"`` is every block of that task,
    ``"matmul_0_b1"`` block 1's program). While stopped there, ``tile(name)`` gives a tile's contents
    as numpy and ``flags()`` the pending flag events; ``continue_()`` and ``step()``
    resume it. Those nodes run in the simulator's functional mode (values in program
    order), so pipe timing is not shown there: a profiled run's trace shows it.
    """

    def __init__(self, handle: int, structure: str, n_out: int, name: str):
        self._h = handle
        self._finalizer = weakref.finalize(self, _close_and_free, handle)
        self._finalizer.atexit = False
        self._structure, self._n_out, self._name = structure, n_out, name
        info = json.loads(_lib.call_string(_lib.lib.pypto_debug_info_json, handle))
        self.nodes = [
            Node(n["index"], n["name"], n["op"], n["text"] or f"{n['name']} : {n['type']}", n["type"], tuple(n["inputs"]),
                 n["loc"].get("file", ""), n["loc"].get("line", 0), n["loc"].get("func", ""))
            for n in info["nodes"]
        ]  # fmt: skip
        self._params = {n["index"] for n in info["nodes"] if n["param"]}
        self._outputs = info["outputs"]
        self._graph = info["graph"]
        self._by_name = {n.name: n for n in self.nodes}
        self._breaks = {}  # number -> (description, predicate)
        self._next_break = 1
        self._current = None  # index of the last node run
        self._paused = None  # where a block is stopped inside the running node (JSON), or None
        self._instr_breaks = {}  # number -> block-level breakpoint spec

    # --- breakpoints --------------------------------------------------------------------

    def break_at(self, target) -> int:
        if callable(target):
            desc, pred = getattr(target, "__name__", "predicate"), target
        elif isinstance(target, str) and target.startswith("%"):
            if target not in self._by_name or self._by_name[target].index in self._params:
                names = [n.name for n in self.nodes if n.index not in self._params]
                raise PyptoValueError(
                    f"Debugger.break_at: no node {target} in the graph",
                    location=user_location(),
                    suggestions=[f"use a name the graph text prints: {', '.join(names[:12])}{' ...' if len(names) > 12 else ''}"],
                )
            idx = self._by_name[target].index
            desc, pred = target, (lambda n, idx=idx: n.index == idx)
        elif isinstance(target, str):
            ops = sorted({n.op for n in self.nodes if n.index not in self._params})
            if target not in ops:
                raise PyptoValueError(
                    f"Debugger.break_at: no node of op {target!r} in the graph",
                    location=user_location(),
                    suggestions=[f"the graph's ops: {', '.join(ops)}", "or give a node name such as '%3' or a predicate"],
                )
            desc, pred = f"op {target}", (lambda n, op=target: n.op == op)
        else:
            raise check.fail("Debugger.break_at", "target", target, "a node name ('%3'), an op name or a predicate f(node) -> bool")
        n = self._next_break
        self._next_break += 1
        self._breaks[n] = (desc, pred)
        return n

    def clear(self, number=None) -> None:
        """Removes breakpoint ``number`` (None: all of them)."""
        if number is None:
            self._breaks.clear()
            self._instr_breaks.clear()
        elif number in self._breaks:
            del self._breaks[number]
            self._instr_breaks.pop(number, None)
        else:
            raise check.fail("Debugger.clear", "number", number, f"a breakpoint number ({sorted(self._breaks)}) or None")
        self._send_instr_breaks()

    @property
    def breakpoints(self) -> dict:
        """number -> description of each breakpoint."""
        return {n: d for n, (d, _) in self._breaks.items()}

    # --- running ------------------------------------------------------------------------

    def _next(self) -> int:
        n = ctypes.c_int32()
        _lib.call(_lib.lib.pypto_debug_next, self._h, ctypes.byref(n))
        return n.value

    @property
    def finished(self) -> bool:
        """Whether every node has run."""
        return self._next() >= len(self.nodes)

    def _run_one(self) -> bool:
        """Runs (or resumes) the next node; True when a block stopped inside it."""
        ran, paused = ctypes.c_int32(), ctypes.c_int32()
        _lib.call(_lib.lib.pypto_debug_step, self._h, ctypes.byref(ran), ctypes.byref(paused))
        self._paused = json.loads(_lib.call_string(_lib.lib.pypto_debug_paused_json, self._h)) if paused.value else None
        if not paused.value:
            self._current = ran.value
        return bool(paused.value)

    def _stop(self, reason) -> Stop:
        if self._paused is not None:
            a = self._paused
            n = self.nodes[a["node"]]
            loc = a.get("loc") or {}
            return Stop(n.name, n.op, loc.get("file", "") or n.file, loc.get("line", 0) or n.line, n.index, n.text, reason,
                        a["program"], a["block"], a["pc"], a["index"], a["instr"], a["pipe"])  # fmt: skip
        n = self.nodes[self._current]
        return Stop(n.name, n.op, n.file, n.line, n.index, n.text, reason)

    def step(self) -> Stop | None:
        """Runs the next node (or resumes a paused block up to the next instruction
        breakpoint or the node's end); returns where it stopped (None when nothing was
        left)."""
        if self.finished and self._paused is None:
            return None
        if self._run_one():
            return self._stop("instruction breakpoint")
        return self._stop("step")

    def continue_(self) -> Stop | None:
        """Runs until a node with a breakpoint has run or a block reaches an instruction
        breakpoint; None when the graph ends first."""
        while not self.finished or self._paused is not None:
            if self._run_one():
                return self._stop("instruction breakpoint")
            node = self.nodes[self._current]
            for desc, pred in list(self._breaks.values()):
                if pred(node):
                    return self._stop(f"breakpoint ({desc})")
        return None

    # --- block level ----------------------------------------------------------------------

    def break_at_instruction(self, kernel=None, index=None, line=None, block=None) -> int:
        """Stops before the matching PTO instructions of the nodes' programs (every
        given field must match); returns the breakpoint's number (``clear(n)``)."""
        if kernel is not None and not isinstance(kernel, str):
            raise check.fail("Debugger.break_at_instruction", "kernel", kernel, "a kernel (machine program) name, or its part before an underscore, or None")
        index = check.integer(index, "index", "Debugger.break_at_instruction", lo=0, optional=True)
        line = check.integer(line, "line", "Debugger.break_at_instruction", lo=1, optional=True)
        block = check.integer(block, "block", "Debugger.break_at_instruction", lo=0, optional=True)
        if kernel is None and index is None and line is None:
            raise PyptoValueError("Debugger.break_at_instruction: give a kernel, an instruction index or a source line",
                                  location=user_location())  # fmt: skip
        spec = {"kernel": kernel or "", "index": -1 if index is None else index, "line": line or 0, "block": -1 if block is None else block}
        desc = "instruction " + ", ".join(f"{k}={v}" for k, v in (("kernel", kernel), ("index", index), ("line", line), ("block", block)) if v is not None)
        n = self._next_break
        self._next_break += 1
        self._breaks[n] = (desc, lambda node: False)
        self._instr_breaks[n] = spec
        self._send_instr_breaks()
        return n

    def _send_instr_breaks(self):
        _lib.call(_lib.lib.pypto_debug_set_instr_breaks, self._h, json.dumps(list(self._instr_breaks.values())).encode())

    def _paused_state(self, what):
        if self._paused is None:
            raise PyptoValueError(f"Debugger.{what}: no block is stopped at an instruction", location=user_location(),
                                  suggestions=["set one with break_at_instruction(...) and continue_() to it"])  # fmt: skip
        return self._paused

    def tiles(self) -> list:
        """The names of the stopped block's tiles (those its instructions use)."""
        return list(self._paused_state("tiles")["tiles"] or [])

    def tile(self, name: str):
        """A tile of the stopped block as a numpy array of its dtype (its whole
        storage, rows x cols; ``tile_valid(name)`` is the valid region)."""
        import numpy as np

        self._paused_state("tile")
        if not isinstance(name, str):
            raise check.fail("Debugger.tile", "name", name, "a tile name of the stopped program")
        d = json.loads(_lib.call_string(_lib.lib.pypto_debug_tile_json, self._h, name.encode()))
        np_dtype = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "i8": np.int8, "i32": np.int32, "bool": np.bool_}.get(d["dtype"], np.float64)
        self._last_valid = tuple(d["valid"])
        return np.array(d["values"], dtype=np.float64).reshape(d["shape"]).astype(np_dtype)

    def tile_valid(self, name: str) -> tuple:
        """The valid region (rows, cols) of a tile of the stopped block."""
        self.tile(name)
        return self._last_valid

    def flags(self) -> list:
        """The stopped block's flag events set and not yet waited for:
        [{"src", "dst", "id", "pending"}] (pipes by name)."""
        return list(self._paused_state("flags")["flags"] or [])

    def close(self) -> None:
        """Lets a stopped block run to its node's end without stopping again."""
        _lib.call(_lib.lib.pypto_debug_close, self._h)
        self._paused = None

    def where(self) -> Stop | None:
        """The node that ran last (None before the first step)."""
        return None if self._current is None else self._stop("here")

    def finish(self):
        """Runs every remaining node and returns the results as ``executor.run`` does."""
        while not self.finished:
            self._run_one()
        outs = (_lib.Handle * max(self._n_out, 1))()
        _lib.call(_lib.lib.pypto_debug_results, self._h, outs, self._n_out)
        res = [Tensor._wrap(outs[i]) for i in range(self._n_out)]
        if self._structure == "single":
            return res[0]
        return tuple(res) if self._structure == "tuple" else res

    # --- values -------------------------------------------------------------------------

    def _tensor(self, index: int):
        h = _lib.Handle()
        _lib.call(_lib.lib.pypto_debug_value, self._h, index, ctypes.byref(h))
        return Tensor._wrap(h.value) if h.value else None

    def value(self, node):
        """The value of a node (a name such as ``"%3"`` or a :class:`Node`) as a numpy
        array; an error when it has not run yet."""
        if isinstance(node, Node):
            node = node.name
        if not isinstance(node, str) or node not in self._by_name:
            raise check.fail("Debugger.value", "node", node, "a node name of the graph ('%3', '%in0') or a Node")
        t = self._tensor(self._by_name[node].index)
        if t is None:
            raise PyptoValueError(f"Debugger.value: node {node} has not run yet", location=user_location(),
                                  suggestions=["step() or continue_() past it first"])  # fmt: skip
        return t.numpy()

    def _current_node(self, what):
        if self._current is None:
            raise PyptoValueError(f"Debugger.{what}: no node has run yet", location=user_location(),
                                  suggestions=["call step() or continue_() first"])  # fmt: skip
        return self.nodes[self._current]

    def inputs(self) -> list:
        """The current node's inputs as numpy arrays, in argument order."""
        return [self._tensor(i).numpy() for i in self._current_node("inputs").inputs]

    def outputs(self) -> list:
        """The current node's output as a list of one numpy array."""
        return [self._tensor(self._current_node("outputs").index).numpy()]

    def graph(self) -> str:
        """The text of the graph being debugged (the executor's, with the run's shapes)."""
        return self._graph

    # --- display ------------------------------------------------------------------------

    def __repr__(self) -> str:
        at = self.where()
        state = "finished" if self.finished else (f"after {at.node}" if at else "before the first node")
        return f"<pypto.Debugger {self._name}: {state}, {len(self._breaks)} breakpoint(s)>"

    def _repr_html_(self) -> str:
        next_i = self._next()
        rows = []
        for n in self.nodes:
            if n.index in self._params:
                continue
            mark = "&#9654;" if n.index == next_i else ("&#10003;" if n.index < next_i else "")
            hit = any(pred(n) for _, pred in self._breaks.values())
            rows.append(f"<tr><td>{mark}</td><td>{'&#9679;' if hit else ''}</td><td><code>{html.escape(n.text)}</code></td>"
                        f"<td>{html.escape(os.path.basename(n.file))}:{n.line}</td></tr>")  # fmt: skip
        return ("<table><tr><th>ran</th><th>break</th><th>node</th><th>line</th></tr>" + "".join(rows) + "</table>")
