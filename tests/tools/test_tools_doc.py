"""docs/tools.md's examples run as written (each section's blocks in order, in one
namespace after the page's preamble)."""

import re

import pytest
from repo_paths import ROOT

TEXT = (ROOT / "docs" / "tools.md").read_text()


def _blocks(text):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _section(title):
    start = TEXT.index(f"\n## {title}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end >= 0 else len(TEXT)]


@pytest.mark.parametrize("title", ["Visualisation", "Profiling", "Debugger"])
def test_section_examples_run(title, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    preamble = TEXT[: TEXT.index("\n## ")]
    for block in _blocks(preamble) + _blocks(_section(title)):
        exec(compile(block, "docs/tools.md", "exec"), namespace)
    out = capsys.readouterr().out
    if title == "Visualisation":
        pages = sorted(f.name for f in (tmp_path / "viz_output").iterdir())
        assert len(pages) == 2 and pages[0].startswith("block_") and (tmp_path / "block.json").exists()
    elif title == "Profiling":
        assert "L2 hit rate" in out and "matmul" in out and "total" in out
    else:
        assert "breakpoint (op relu)" in out


def test_summary_example_is_current(capsys):
    """The summary shown on the page is what the preamble's run prints."""
    namespace = {}
    for block in _blocks(TEXT[: TEXT.index("\n## ")]):
        exec(compile(block, "tools.md", "exec"), namespace)
    p = namespace["p"]
    ex = p.compile(namespace["block"])
    ex.run(namespace["x"], namespace["w"], profile=True)
    ex.get_profile_result().summary()
    printed = capsys.readouterr().out.strip().splitlines()
    shown = re.search(r"`summary\(\)` prints.*?\n```\n(.*?)```", TEXT, re.S).group(1).strip().splitlines()
    # The location column is left out: programs of identical graphs are compiled once
    # and shared, so a test that compiled this graph first would name its own lines.
    loc = re.compile(r"\s+\S+\.\w+:\d+$")
    assert [loc.sub("", ln) for ln in printed] == [loc.sub("", ln) for ln in shown]


def test_the_guides_tooling_examples_run(tmp_path, monkeypatch, capsys):
    """The guide's tooling chapter as docs/tools.md runs it: the visualisation pages
    are written, the profiled run computes relu(x @ w + b) and saves its files, the
    printed figures are the profile's, and the compile error names the user's line."""
    import numpy as np

    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in _blocks(_section("The guide's tooling chapter")):
        exec(compile(block, "docs/tools.md", "exec"), namespace)
    ns = namespace
    want = np.maximum(ns["x_data"].astype(np.float32) @ ns["w_data"].astype(np.float32) + ns["b_data"].astype(np.float32), 0)
    np.testing.assert_allclose(ns["result"].numpy().astype(np.float32), want, rtol=1e-2, atol=1e-2)
    assert any(f.name.endswith(".html") for f in (tmp_path / "viz_output").iterdir())
    assert sorted(f.name for f in (tmp_path / "profile_output").iterdir()) == ["profile.json", "report.html", "trace.json"]
    r = ns["profile_result"]
    out = capsys.readouterr().out
    assert f"total time: {r.total_time}ms" in out and f"cache hit rate: {r.cache_hit_rate:.2%}" in out
    assert r.total_time > 0 and r.peak_memory > 0 and abs(sum(r.op_times.values()) - r.total_time) < 1e-9
    assert "error type: ShapeError" in out and "location: docs/tools.md:" in out and "last dimension of a" in out


def test_every_screenshot_is_made_by_a_browser_test():
    """The images the page shows exist and are saved by a browser test (which writes
    them here with PYPTO_DOCS_SCREENSHOTS=1), so none is left behind by a view that
    changed name."""
    shown = set(re.findall(r"\]\(images/([\w.]+\.png)\)", TEXT))
    tests = "".join((ROOT / "tests" / "tools" / f).read_text() for f in ("test_browser_viz.py", "test_browser_profile.py"))
    saved = set(re.findall(r'"(\w+\.png)"', tests))
    assert shown and shown <= saved, shown - saved
    for name in shown:
        assert (ROOT / "docs" / "images" / name).is_file(), name
