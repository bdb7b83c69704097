"""The profile report opened in headless Chromium: no console errors, no request
leaves the page, both plots are drawn with their points, a screenshot is saved."""

import os

import numpy as np

import pypto as p


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
    shot = tmp_path / "profile_report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert os.path.getsize(shot) > 1000
