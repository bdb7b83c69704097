"""p.Graph: the traced Tensor Graph of a function, to print, walk and compile
(docs/api.md, "Runtime")."""

from __future__ import annotations

import threading

from .._core import validate as check
from .._core.dtypes import from_code
from .._core.errors import PyptoTypeError, PyptoValueError
from .._core.location import user_location
from .tracing import given_placeholders, trace_function

__all__ = ["Graph", "GraphNode", "GraphEdge"]


class GraphNode:
    """One value of a Tensor Graph: ``name`` (as the text form names it: ``%in0`` for
    an input, ``%c0`` for captured data, ``%3`` for an op), ``op`` (``"param"`` for
    inputs and captured data), ``role`` (``"input"``, ``"constant"`` or ``"op"``),
    ``inputs`` (the nodes it reads), ``shape`` (ints, and texts for symbolic dims),
    ``dtype``, ``layout``, ``attrs`` (text) and where your code made it: ``file``,
    ``line``, ``function`` and ``location`` (``"file:line"``, "" when unknown)."""

    __slots__ = ("id", "name", "op", "role", "inputs", "shape", "dtype", "layout", "attrs", "file", "line", "function")

    def __init__(self, d: dict):
        self.id, self.name, self.op, self.role, self.attrs = d["id"], d["name"], d["op"], d["role"], d["attrs"]
        t = d["type"]
        self.shape = tuple(t["shape"])
        self.dtype = from_code(t["dtype"])
        self.layout = t["layout"]
        loc = d.get("location") or {}
        self.file, self.line, self.function = loc.get("file", ""), loc.get("line", 0), loc.get("func", "")
        self.inputs = ()

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    def __repr__(self) -> str:
        shape = ",".join(str(d) for d in self.shape)
        where = f" at {self.location}" if self.location else ""
        ins = ", ".join(n.name for n in self.inputs)
        return f"<GraphNode {self.name} = {self.op}({ins}) : {self.dtype.name}[{shape}]{where}>"


class GraphEdge:
    """A value flowing into an op: ``src`` (the node producing it), ``dst`` (the op
    reading it) and ``index`` (which input of ``dst`` it is)."""

    __slots__ = ("src", "dst", "index")

    def __init__(self, src: GraphNode, dst: GraphNode, index: int):
        self.src, self.dst, self.index = src, dst, index

    def __iter__(self):  # src, dst = edge
        return iter((self.src, self.dst))

    def __repr__(self) -> str:
        return f"<GraphEdge {self.src.name} -> {self.dst.name} (input {self.index})>"


class Graph:
    """``p.Graph(model, inputs=None)``: the Tensor Graph of ``model`` (a function of
    p.Tensors returning a p.Tensor or a tuple/list of them), as ``p.compile`` traces it.

    - With ``inputs=[x, ...]`` (p.Tensors, symbolic placeholders or ``(shape, dtype)``
      pairs) the function is traced now, once.
    - Without, it is traced when an executor compiled from the graph first runs
      (``p.compile(graph, config)``, ``p.Executor(graph)``); the graph then shows that
      trace. Asking for the nodes before raises, saying so.

    ``print(graph)`` (``str``) is the Tensor Graph's text form; ``graph.nodes`` lists
    every value (:class:`GraphNode`), ``graph.edges`` every input of every op
    (:class:`GraphEdge`), ``graph.inputs`` the input nodes, ``graph.outputs`` the nodes
    returned, ``graph.ops`` the op nodes; ``graph.node("%3")`` finds one by name.
    ``len(graph)`` is the number of nodes. Compiling the graph compiles exactly this
    trace (the function is not called again), so what you inspect is what runs.
    """

    def __init__(self, model, inputs=None):
        if not callable(model):
            raise check.fail("p.Graph", "model", model, "a function (or a model object with __call__)")
        self._fn = model
        self._name = getattr(model, "__name__", type(model).__name__)
        self._trace = None  # tracing.Trace, set when traced
        self._doc = None
        self._lock = threading.Lock()
        if inputs is not None:
            if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (list, tuple)):
                raise check.fail("p.Graph", "inputs", inputs, "a list of p.Tensors (or (shape, dtype) pairs)")
            self._trace = trace_function(model, self._name, given_placeholders(list(inputs), "p.Graph"), threading.local())

    @property
    def is_traced(self) -> bool:
        """Whether the function has been traced (at construction or a compiled run)."""
        return self._trace is not None

    def _parts(self):
        if self._trace is None:
            raise PyptoValueError(
                f"p.Graph: {self._name} has not been traced yet, so its graph has no nodes",
                location=user_location(),
                suggestions=[
                    f"give inputs to trace it now: p.Graph({self._name}, inputs=[p.Tensor(shape, dtype=...)])",
                    "or run an executor compiled from it first: p.compile(graph).run(x)",
                ],
            )
        with self._lock:
            if self._doc is None:
                d = self._trace.json()
                nodes = [GraphNode(n) for n in d["nodes"]]
                edges = []
                for n, raw in zip(nodes, d["nodes"]):
                    n.inputs = tuple(nodes[i] for i in raw["inputs"])
                    edges += [GraphEdge(src, n, k) for k, src in enumerate(n.inputs)]
                self._doc = (d["text"], nodes, edges, [nodes[i] for i in d["outputs"]], d["symbolic"])
            return self._doc

    @property
    def text(self) -> str:
        """The Tensor Graph's text form (symbolic dims print as expressions)."""
        return self._parts()[0]

    @property
    def nodes(self) -> list:
        return list(self._parts()[1])

    @property
    def edges(self) -> list:
        return list(self._parts()[2])

    @property
    def outputs(self) -> list:
        return list(self._parts()[3])

    @property
    def inputs(self) -> list:
        return [n for n in self._parts()[1] if n.role == "input"]

    @property
    def ops(self) -> list:
        return [n for n in self._parts()[1] if n.role == "op"]

    @property
    def is_symbolic(self) -> bool:
        return self._parts()[4]

    def node(self, name: str) -> GraphNode:
        """The node named ``name`` (``"%3"``; the ``%`` may be left out)."""
        if not isinstance(name, str):
            raise check.fail("Graph.node", "name", name, "a node name such as '%3'")
        want = name if name.startswith("%") else "%" + name
        for n in self._parts()[1]:
            if n.name == want:
                return n
        raise PyptoValueError(
            f"Graph.node: {self._name} has no node {want}", location=user_location(),
            suggestions=["names are those print(graph) shows: " + ", ".join(n.name for n in self._parts()[1][:12])],
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self._parts()[1])

    def __iter__(self):
        return iter(self._parts()[1])

    def __str__(self) -> str:
        if self._trace is None:
            return f"graph {self._name} (not traced yet: it is traced when an executor compiled from it first runs)\n"
        return self.text

    def __repr__(self) -> str:
        if self._trace is None:
            return f"<pypto.Graph {self._name}: not traced yet>"
        _, nodes, edges, outs, _ = self._parts()
        return f"<pypto.Graph {self._name}: {len(nodes)} nodes, {len(edges)} edges, {len(outs)} output(s)>"

    def __reduce__(self):
        raise PyptoTypeError("a p.Graph holds a trace of this process and cannot be pickled; pickle the executor or trace again")
