"""The Python package imports one way (docs/ARCHITECTURE.md, "The Python package").

Its subpackages form layers, lowest first: a module imports, at the top or inside a
function, only modules of its own layer or of the layers below it, and no module imports
a module that imports it back. The package's ``__init__`` assembles the public API from
every layer and is exempt."""

import ast
import pathlib

import pypto

PKG = pathlib.Path(pypto.__file__).parent

#: The layers, lowest first.
LAYERS = [
    "_core",  # the C library binding, errors, source locations, dtypes, symbols, argument checks
    "tensor_level",  # p.Tensor and the tensor-level ops
    "tile_level",  # p.tile, p.TileConfig, the tile ops
    "block_level",  # block kernels: what each core runs
    "tools",  # profiler, debugger, visualiser, progress
    "runtime",  # p.compile and the Executor, p.Graph, memory pools, devices
    "autodiff",  # gradients and optimisers
    "distributed",  # meshes, collectives, shard_map, the parallel executors, Ray
    "torch_interop",  # PyTorch in and out
]

#: The private core in its own order: each imports only those before it.
CORE = ["moved_modules", "errors", "location", "files", "lib", "dtypes", "symbolic", "validate"]


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict:
    """Every module (dotted, under pypto) -> the pypto modules it imports."""
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
                candidates = [".".join(target + [a.name]) for a in node.names] if not node.module else []
                found = [c for c in candidates if c in modules]
                deps.update(found or [".".join(target)])
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                deps.update(n[len("pypto.") :] for n in names if n and n.startswith("pypto."))
        graph[name] = deps - {name}
    return graph


def _layer(module: str) -> str:
    return module.split(".")[0]


def _cycle(graph):
    """A cycle of module names, or None."""
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if d not in graph:
                continue
            if state.get(d) == "open":
                return stack[stack.index(d) :] + [d]
            if d not in state:
                found = visit(d, stack + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_every_module_sits_in_a_layer():
    stray = sorted(m for m in _imports() if m and _layer(m) not in LAYERS)
    assert not stray, f"modules outside the layers of this test: {stray}; put each in a subpackage"


def test_no_import_cycles():
    graph = _imports()
    graph.pop("")  # the package imports everything
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_layers_import_only_their_own_layer_and_those_below():
    graph = _imports()
    graph.pop("")
    wrong = []
    for mod, deps in sorted(graph.items()):
        rank = LAYERS.index(_layer(mod))
        for d in sorted(deps):
            if d == "" or LAYERS.index(_layer(d)) > rank:
                wrong.append(f"{mod} imports {d or 'pypto'}")
    assert not wrong, "imports upwards:\n" + "\n".join(wrong)


def test_the_core_imports_in_its_own_order():
    graph = _imports()
    for i, mod in enumerate(CORE):
        above = {d for d in graph["_core." + mod] if d != "_core"} - {"_core." + m for m in CORE[:i]}
        assert not above, f"_core.{mod} imports {sorted(above)}, which sit above it"
