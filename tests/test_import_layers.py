"""The Python package's modules import one way: no module imports, at the top or inside a
function, a module that imports it back (directly or through others). The core is
errors -> _location -> dtypes -> symbolic -> _validate -> _layout -> tensor, then the
ops, then the rest."""

import ast
import pathlib

import pypto

PKG = pathlib.Path(pypto.__file__).parent


def _imports():
    graph = {}
    for path in PKG.glob("*.py"):
        mod = path.stem
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
        graph[mod] = deps - {mod}
    return graph


def _cycle(graph):
    """A cycle of module names, or None."""
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if d not in graph:
                continue
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d, stack + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state and m != "__init__":
            found = visit(m, [m])
            if found:
                return found
    return None


def test_no_import_cycles():
    graph = _imports()
    graph.pop("__init__")  # the package imports everything
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_core_imports_nothing_above_it():
    graph = _imports()
    core = ["errors", "_location", "_lib", "dtypes", "symbolic", "_validate", "_layout", "tensor"]
    for i, mod in enumerate(core):
        above = graph[mod] - set(core[:i])
        assert not above, f"{mod} imports {sorted(above)}, which sit above it"
