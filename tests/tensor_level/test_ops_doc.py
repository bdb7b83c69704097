"""docs/ops.md's last table: the public functions of the op modules that are not registry
ops themselves but compose them (the registry's table above it is generated and checked
by `go test ./core -run TestOpsDoc`). Regenerate with

    python tests/tensor_level/test_ops_doc.py --update

The signature, the note (the docstring's first paragraph) and the ops each becomes (those
a traced sample call holds) come from the functions; for the two that only run eagerly
the ops are listed here, and must be registry ops."""

import importlib
import inspect
import json
import re
import sys

import numpy as np

import pypto as p
from repo_paths import ROOT

DOC = ROOT / "docs" / "ops.md"
MARKER = "\n<!-- end of the registry's table; below: python tests/tensor_level/test_ops_doc.py --update -->\n"
MODULES = tuple(importlib.import_module(f"pypto.{m}") for m in ("conv", "masking", "update", "einsum", "dropout"))

F32 = np.float32
# name -> (a call traced under p.compile to list the registry ops it becomes, with its
# inputs' shapes (float32, or (shape, dtype)); or, for a function p.compile refuses, the ops it runs eagerly), whether
# p.compile takes it
BECOMES = {
    "conv_transpose2d": ((lambda x, w: p.conv_transpose2d(x, w, stride=2), [(1, 2, 3, 3), (2, 3, 3, 3)]),
                         "yes: the convolution of the stride-spread input with the flipped, transposed kernel"),
    "adaptive_avg_pool2d": ((lambda x: p.adaptive_avg_pool2d(x, (2, 3)), [(1, 2, 5, 7)]),
                            "yes: one average pooling per output cell's window (one in all when the sizes divide)"),
    "nonzero": (["not_equal"], "no: the result's size depends on x's values; x is realised, the indices made on the host as int64 tensors"),
    "masked_select": (["broadcast_to", "reshape", "index_select"], "no: the result's size depends on the mask's values; the mask is realised, the elements gathered on the device"),
    "masked_fill": ((lambda x, m: p.masked_fill(x, m, 1.5), [(3, 4), ((3, 4), np.bool_)]), "yes"),
    "einsum": ((lambda q, k: p.einsum("bqde,bkd->bkq", q, k), [(2, 3, 4, 6), (2, 5, 4)]),
               "yes: sums over letters one operand has, each pair of operands one matmul, a transpose to the output's order"),
    "dropout": ((lambda x: p.dropout(x, 0.25, seed=7), [(4, 8)]), "yes: the same bits for a seed on every chip preset and opt level"),
}


def becomes(name: str) -> list:
    """The registry ops name becomes: those its sample's traced graph holds, in order."""
    how = BECOMES[name][0]
    if isinstance(how, list):
        return how
    fn, shapes = how
    exe = p.compile(fn)
    exe(*(np.ones(*s) if isinstance(s[0], tuple) else np.ones(s, F32) for s in shapes))
    ops = []
    for op in re.findall(r"= (\w+)\(", exe.graph()):
        if op not in ops:
            ops.append(op)
    return ops


def registry_ops() -> frozenset:
    return frozenset(json.loads(p._lib.call_string(p._lib.lib.pypto_op_names_json)))


def composed_functions() -> list:
    """The public functions of the op modules that are not registry ops, by name."""
    ops = registry_ops()
    names = {n for m in MODULES for n in m.__all__ if n not in ops}
    return sorted(names)


def _note(doc: str) -> str:
    """The docstring's first paragraph on one line."""
    first = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(first.split()).replace("|", "\\|")


def _signature(fn) -> str:
    """fn's signature without annotations."""
    sig = inspect.signature(fn)
    params = [q.replace(annotation=inspect.Parameter.empty) for q in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def table() -> str:
    rows = ["## Functions over the registry ops\n",
            "Public functions that compose the registry's ops (the tensor graph holds those ops,",
            "so they compile, lower and differentiate as those ops do).\n",
            "| function | becomes | compiles | notes |", "| --- | --- | --- | --- |"]  # fmt: skip
    for name in composed_functions():
        fn = getattr(p, name)
        compiles = BECOMES[name][1]
        ops = becomes(name)
        rows.append(f"| `p.{name}{_signature(fn)}` | {', '.join(f'`{o}`' for o in ops)} | {compiles} | {_note(fn.__doc__)} |")
    return "\n".join(rows) + "\n"


def test_every_composed_function_is_described():
    ops = registry_ops()
    names = composed_functions()
    assert set(names) == set(BECOMES), "describe each public function that is not a registry op in BECOMES"
    for name in BECOMES:
        used = becomes(name)
        assert used and set(used) <= ops, f"{name}: {sorted(set(used) - ops)} are not registry ops"


def test_ops_doc_functions_table_is_current():
    text = DOC.read_text()
    assert MARKER in text, "docs/ops.md lacks its marker: run go test ./core -run TestOpsDoc -update"
    assert text.split(MARKER, 1)[1] == "\n" + table(), "docs/ops.md is stale: run python tests/tensor_level/test_ops_doc.py --update"


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    head = DOC.read_text().split(MARKER, 1)[0]
    DOC.write_text(head + MARKER + "\n" + table())
