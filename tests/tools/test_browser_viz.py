"""The compilation viewer in a real browser (headless Chromium, tests/browser_support.py):
the page of a compiled GPT block opens without console errors or network requests,
shows grouped nodes, finds nodes by name or op, shows a node's attributes, follows a
node's links to its tile op, kernel, task and programs, switches between the levels,
and shows the pass list with a pass's diff. Screenshots go to the test's tmp dir
(PYPTO_DOCS_SCREENSHOTS=1 copies them into docs/images/ for docs/tools.md)."""

import json
import os
import sys

import numpy as np
import pytest

import pypto as p

from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "examples"))
import demo  # noqa: E402  (the GPT-style decoder of the demo)
from browser_support import screenshot  # noqa: E402


def _compile_gpt(out, layers, name):
    """The demo's decoder with `layers` layers over 64 tokens, compiled for the tiny
    preset with its viewer page written to out; the function is called name."""
    cfg = demo.Config()
    weights = demo.make_weights(cfg, layers, 64, np.random.default_rng(0))
    ops = demo.PyptoOps()

    def model(tokens):
        return demo.gpt_forward(ops, cfg, weights, tokens, 64)

    model.__name__ = model.__qualname__ = name
    config = p.CompileConfig(enable_visualization=True, visualization_dir=str(out), chip="tiny")
    return p.compile(model, config, inputs=[p.Tensor([1, 64], dtype=p.int32)])


@pytest.fixture(scope="module")
def gpt_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("viz")
    _compile_gpt(out, 2, "gpt_block")
    pages = [f for f in os.listdir(out) if f.endswith(".html")]
    assert len(pages) == 1
    return str(out / pages[0])


def _shot(page, tmp_path, name):
    return screenshot(page, tmp_path, name)


def _level(page, key):
    page.click(f"nav button[data-level={key}]")
    assert page.locator(f"nav button[data-level={key}]").get_attribute("class") == "active"


def test_viewer_in_chromium(browser, gpt_page, tmp_path):
    page = browser.open(gpt_page)
    page.wait_for_function("window.__pyptoViz && window.__pyptoViz.ready", timeout=60000)
    assert page.inner_text("#title") == "gpt_block on tiny"
    # Grouped by the model's calls: the layers of the loop are groups of their own.
    status = page.inner_text("#status")
    assert status.startswith("Tensor (traced): ") and " groups; " in status
    groups = page.locator("g.node.group")
    assert groups.count() >= 2
    labels = page.eval_on_selector_all("g.node.group, g.cluster", "gs => gs.map(g => g.textContent)")
    assert any("gpt_forward #2" in t for t in labels), labels
    before = page.evaluate("__pyptoViz.visibleNodes")
    groups.first.click()
    assert page.evaluate("__pyptoViz.visibleNodes") > before  # the group opened
    _shot(page, tmp_path, "viz_tensor_traced.png")

    # Search by op, pick a result: its attributes, its links down the levels.
    _level(page, "tensor")
    page.fill("#search", "matmul")
    results = page.locator("#results a")
    assert results.count() >= 2 and "matmul" in results.first.inner_text()
    assert page.locator("g.node.match").count() >= 1
    results.first.click()
    details = page.inner_text("#details")
    for attr in ("shape", "dtype", "layout", "tile shape", "core kind", "estimate", "source", "cycles"):
        assert attr in details, attr
    assert "demo.py:" in details and "cube" in details
    assert page.locator("g.node.selected").count() == 1
    _shot(page, tmp_path, "viz_tensor_lowered.png")
    page.locator("#details a.link", has_text="task ").first.click()
    assert page.locator("nav button.active").inner_text() == "Execution"
    assert "matmul" in page.inner_text("#details") and page.locator("g.node.selected").count() == 1
    page.fill("#search", "")

    for key, title, shot in (("tile", "Tile", "viz_tile.png"), ("block", "Block", "viz_block.png"), ("exec", "Execution", "viz_exec.png")):
        _level(page, key)
        assert page.inner_text("#status").startswith(title + ": ")
        assert page.locator("g.node").count() >= 2 and page.locator("g.edge").count() >= 1
        node = page.locator("g.node:not(.group)").first
        node.click()
        assert "core kind" in page.inner_text("#details")
        _shot(page, tmp_path, shot)

    _level(page, "programs")
    text = page.inner_text("#text-view")
    assert "PTO" in text and "machine" in text and "end" in text
    _shot(page, tmp_path, "viz_programs.png")
    _level(page, "passes")
    page.locator("table.passes tr", has_text="decompose").click()
    diff = page.inner_text("#pass-diff")
    assert "decompose: diff of the tensor level" in diff and "layer_norm(" in diff
    _shot(page, tmp_path, "viz_passes.png")

    assert page.errors == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in page.requests), page.requests


def test_twelve_layers_lay_out_group_by_group(browser, tmp_path_factory, tmp_path):
    """GPT-2 small's graph (12 layers: 433 traced nodes) opens grouped, and opening
    every group lays out each group on its own: no layout is given more than the
    children of one group, and closing or reopening a layer lays out only the groups
    around it. The page's own timings are recorded (tests assert on layout work, not
    on time) in viz_timings.json of the test's tmp dir and printed."""
    out = tmp_path_factory.mktemp("viz12")
    view = _compile_gpt(out, 12, "gpt12").visualize()
    assert len(view.data["input"]["nodes"]) == 433
    page = browser.open(view.save(str(out / "gpt12.html")))
    page.wait_for_function("window.__pyptoViz && window.__pyptoViz.ready", timeout=120000)
    timings = {"page": page.evaluate("__pyptoViz.timings"),
               "navigation": page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                                           " return {domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd}; })()"),
               "levels": {}}
    stats = lambda: page.evaluate("({...__pyptoViz.layoutStats, items: __pyptoViz.visibleNodes, layoutMs: __pyptoViz.layoutMs, drawMs: __pyptoViz.drawMs})")  # noqa: E731
    first = stats()
    assert first["items"] <= 40 < 433  # grouped: the page opens with the groups closed

    for level, nodes in (("input", 433), ("tensor", len(view.data["tensor"]["nodes"])), ("tile", len(view.data["tile"]["ops"]))):
        _level(page, level)
        grouped = stats()
        page.click("#expand-all")
        full = stats()
        assert full["items"] == nodes
        # Each layout is one group's children, a small part of the level.
        assert full["maxDagreNodes"] <= 40 and full["maxDagreNodes"] * 8 < nodes, full
        assert full["dagreCalls"] + full["cachedScopes"] == full["scopes"]
        timings["levels"][level] = {"grouped": grouped, "expand_all": full}
        page.click("#collapse-all")

    # With every group open, closing a layer lays out the groups holding it, and
    # opening it again (its inner groups closed) lays out it and them, nothing else.
    _level(page, "input")
    _shot(page, tmp_path, "viz_gpt12_grouped.png")
    page.click("#expand-all")
    _shot(page, tmp_path, "viz_gpt12_expanded.png")
    scopes = stats()["scopes"]
    # The whole level fits the window, too small to click with the mouse: the click event.
    page.locator("g.cluster text", has_text="gpt_forward #5 (").dispatch_event("click")
    closed = stats()
    assert closed["items"] < 433 and closed["dagreCalls"] <= 3 and closed["cachedScopes"] >= scopes - 20, closed
    page.locator("g.node.group", has_text="gpt_forward #5 (").dispatch_event("click")
    reopened = stats()
    assert reopened["items"] > closed["items"] and reopened["dagreCalls"] <= 3 and reopened["cachedScopes"] >= reopened["scopes"] - 3, reopened
    timings["close_one"], timings["reopen_one"] = closed, reopened
    assert page.errors == []
    with open(tmp_path / "viz_timings.json", "w") as f:
        json.dump(timings, f, indent=1)
    print("viewer timings (ms):", json.dumps(timings))
