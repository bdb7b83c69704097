"""The compilation viewer's data and files (docs/tools.md, "Visualisation"): what the
compiler exports of each level, the pages enable_visualization writes, and
Executor.visualize(). The page in a real browser: test_browser_viz.py."""

import json
import os
import re

import numpy as np
import pytest

import pypto as p
from repo_paths import ROOT

W = np.linspace(-1, 1, 64 * 48, dtype=np.float32).reshape(64, 48).astype(np.float16)


def mlp(x):
    h = p.relu(x @ p.from_numpy(W))
    return p.softmax(h, axis=-1)


def _compiled(tmp_path, **kw):
    cfg = p.CompileConfig(enable_visualization=True, visualization_dir=str(tmp_path), chip="tiny", **kw)
    ex = p.compile(mlp, cfg, inputs=[p.Tensor([32, 64], dtype=p.float16)])
    return ex, ex.visualize()


def test_compile_writes_a_page_and_its_json(tmp_path):
    ex, view = _compiled(tmp_path)
    files = sorted(os.listdir(tmp_path))
    assert files == [f"mlp_{view.key}.html", f"mlp_{view.key}.json"]
    assert json.loads((tmp_path / files[1]).read_text()) == view.data
    page = (tmp_path / files[0]).read_text()
    assert page == view.html()
    # Self-contained: no element loads anything (the SVG namespace is a name, not a fetch).
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=\"(?!data:)", page)
    assert "dagre" in page and "Copyright (c) 2012-2014 Chris Pettitt" in page
    ex.run(np.ones((32, 64), np.float16))
    assert sorted(os.listdir(tmp_path)) == files  # running compiles nothing new


def test_levels_are_the_compilers(tmp_path):
    _, view = _compiled(tmp_path)
    d = view.data
    traced = d["input"]["nodes"]
    assert [n["op"] for n in traced if n["op"] != "param"] == ["matmul", "relu", "softmax"]
    mm = next(n for n in traced if n["op"] == "matmul")
    assert (mm["shape"], mm["dtype"], mm["layout"], mm["bytes"]) == ("[32,48]", "f16", "ND", 32 * 48 * 2)
    assert mm["loc"]["file"] == __file__ and mm["loc"]["func"] == "mlp"
    # The scope names the user's frames down to the op's (the viewer groups by it).
    assert mm["loc"]["scope"].split(";")[-1].startswith("mlp@")
    # Every tile op computes a node of the lowered Tensor Graph; its kernel and task
    # follow it, and the cost model's estimate of it is a positive time.
    lowered = {n["id"]: n for n in d["tensor"]["nodes"]}
    ops = d["tile"]["ops"]
    assert ops and all(op["node"] in lowered for op in ops)
    assert [k["op"] for k in d["block"]["kernels"]] == [op["id"] for op in ops]
    assert sorted(t["kernel"] for t in d["exec"]["tasks"]) == [op["id"] for op in ops]
    assert len(d["estimates"]) == len(ops) and all(e["cycles"] > 0 and e["us"] > 0 for e in d["estimates"])
    for op in ops:
        assert op["core"] in ("cube", "vector") and len(op["tile"]) >= 2
        out = d["tile"]["tensors"][op["output"]]
        assert out["bytes"] == int(np.prod(json.loads(lowered[op["node"]]["shape"]))) * 2
    # The first block's programs of every task, as PTO and machine text.
    for prog, task in zip(d["programs"], d["exec"]["tasks"]):
        assert prog["names"][0] == task["programs"][0]
        assert prog["pto"][0].startswith("kernel " + prog["names"][0]) and prog["machine"][0].startswith("machine")
        assert prog["instructions"][0] > 0


def test_passes_with_times_and_diffs(tmp_path):
    _, view = _compiled(tmp_path)
    passes = {q["name"]: q for q in view.data["passes"]}
    assert list(passes)[0] == "verify-tensor" and list(passes)[-1] == "backend"
    assert all(q["ms"] >= 0 for q in passes.values())
    assert passes["verify-tensor"]["diff"]["hunks"] == []  # it changes nothing
    dec = passes["decompose"]["diff"]  # softmax becomes its primitives
    removed = [line for h in dec["hunks"] for line in h["lines"] if line[0] == "-"]
    added = [line for h in dec["hunks"] for line in h["lines"] if line[0] == "+"]
    assert any("softmax(" in line for line in removed) and not any("softmax(" in line for line in added)
    assert any("exp(" in line for line in added)
    tile = passes["tile"]
    assert (tile["from"], tile["level"]) == ("tensor", "tile")
    assert tile["diff"]["removed"] == 0 and tile["diff"]["hunks"][0]["lines"][0] == "+tilegraph mlp {"


def test_symbolic_traces_write_a_page_per_compiled_size(tmp_path):
    cfg = p.CompileConfig(enable_visualization=True, visualization_dir=str(tmp_path / "out"), chip="tiny")
    ex = p.compile(lambda x: p.exp(x) * 2.0, cfg)
    ex.run(np.ones((8, 16), np.float32))
    ex.run(np.ones((8, 16), np.float32))
    ex.run(np.ones((24, 16), np.float32))
    pages = [f for f in os.listdir(tmp_path / "out") if f.endswith(".html")]
    assert len(pages) == 2
    assert ex.visualize().data["input"]["nodes"][0]["shape"] == "[24,16]"  # the last run's


def test_view_object(tmp_path):
    _, view = _compiled(tmp_path)
    path = view.save(tmp_path / "sub" / "page.html")
    assert path.endswith("page.html") and (tmp_path / "sub" / "page.json").exists()
    frame = view._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "&lt;script&gt;" not in frame[:20]
    assert "tasks" in repr(view) and view.name == "mlp"


def test_visualize_needs_the_option_and_a_program(tmp_path):
    ex = p.compile(mlp, p.CompileConfig(chip="tiny"), inputs=[p.Tensor([32, 64], dtype=p.float16)])
    with pytest.raises(p.PyptoValueError, match="without visualisation") as e:
        ex.visualize()
    assert "enable_visualization=True" in str(e.value)
    with pytest.raises(RuntimeError, match="not been traced"):
        p.compile(mlp).visualize()
    lazy = p.compile(mlp, p.CompileConfig(enable_visualization=True, visualization_dir=str(tmp_path), chip="tiny"))
    lazy.run(np.ones((32, 64), np.float16))  # traced symbolically, compiled at the run
    assert lazy.visualize().data["tile"]["ops"]
    with pytest.raises(p.PyptoTypeError, match="visualization_dir"):
        p.CompileConfig(visualization_dir=3)
    with pytest.raises(p.PyptoTypeError, match="enable_visualization"):
        p.CompileConfig(enable_visualization="yes")


def test_the_wheel_ships_the_viewer():
    import pathlib
    import tomllib

    import setuptools

    root = ROOT
    assets = root / "python" / "pypto" / "tools" / "viz_assets"
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setup["package-data"]["pypto.tools"] == ["viz_assets/*"]
    # every subpackage is found, the viewer's among them
    found = set(setuptools.find_packages(str(root / "python"), include=setup["packages"]["find"]["include"]))
    on_disk = {".".join(d.relative_to(root / "python").parts) for d in (root / "python" / "pypto").rglob("__init__.py")
               for d in [d.parent]}  # fmt: skip
    assert on_disk <= found and "pypto.tools" in found
    assert sorted(f.name for f in assets.iterdir()) == [
        "dagre.LICENSE", "dagre.min.js", "viewer.css", "viewer.html", "viewer.js"]
    assert "recursive-include python/pypto/tools/viz_assets *" in (root / "MANIFEST.in").read_text()
