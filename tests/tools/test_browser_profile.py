"""The profile report opened in headless Chromium: no console errors, no request
leaves the page, both plots are drawn with their points, a screenshot is saved; and the
debugger's notebook view."""

import os

import numpy as np

import pypto as p
from browser_support import screenshot


def block(x, w):
    h = p.matmul(x, w)
    h = p.relu(h) + 1.0
    return p.softmax(h, axis=-1)


def test_profile_report_in_a_browser(browser, tmp_path):
    rng = np.random.default_rng(0)
    ex = p.compile(block)
    ex.run(rng.random((64, 128)).astype(np.float16), rng.random((128, 64)).astype(np.float16), profile=True)
    paths = ex.get_profile_result().save(tmp_path)
    page = browser.open(paths["report"])
    assert page.errors == []
    assert all(u.startswith("file://") for u in page.requests)
    assert page.locator("svg[aria-label=roofline] circle").count() == 2  # one point per task
    assert page.locator("svg[aria-label='memory over time'] polyline").count() == 1
    box = page.locator("svg[aria-label=roofline]").bounding_box()
    assert box["width"] > 100 and box["height"] > 100
    assert page.locator("table").count() >= 3
    shot = screenshot(page, tmp_path, "profile_report.png", full_page=True)
    assert os.path.getsize(shot) > 1000


def test_debugger_view_in_a_browser(browser, tmp_path):
    """A debugger's notebook view (the graph, the nodes run, the next one and the
    breakpoints) as a page: it draws without errors, and a screenshot is saved."""
    rng = np.random.default_rng(0)
    dbg = p.compile(block).debug(rng.random((64, 128)).astype(np.float16), rng.random((128, 64)).astype(np.float16))
    dbg.break_at("relu")
    dbg.break_at("softmax")
    dbg.continue_()
    path = tmp_path / "debugger.html"
    path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>" + dbg._repr_html_() + "</body></html>")
    page = browser.open(str(path), width=900, height=400)
    assert page.errors == []
    rows = page.locator("tr")
    assert rows.count() >= 4 and "relu" in page.inner_text("body")
    screenshot(page, tmp_path, "debugger.png")
    dbg.finish()
