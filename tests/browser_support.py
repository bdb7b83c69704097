"""A headless Chromium for tests that open PyPTO's HTML pages (the compilation viewer,
the profile report).

Chromium is Debian's package (``apt-get install -y chromium``) and playwright comes from
PyPI (``pip install -e '.[browser]'``); playwright drives the system browser through
``executable_path``, so no browser is downloaded. When either is missing, tests that use
the ``browser`` fixture skip with a reason that says how to install them; .ci/run
installs both and sets PYPTO_REQUIRE_BROWSER, which makes them fail instead.

    def test_page(browser, tmp_path):
        page = browser.open(path)          # a fresh page; console errors are collected
        ...
        assert page.errors == []
"""

from __future__ import annotations

import os
import shutil

import pytest

#: Where the system browser may be; PYPTO_CHROMIUM overrides.
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


DOCS_IMAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "images")


def screenshot(page, tmp_path, name: str, full_page: bool = False):
    """Saves a screenshot of page as tmp_path/name; with PYPTO_DOCS_SCREENSHOTS=1 it is
    also copied into docs/images/, where docs/tools.md shows it."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=full_page)
    if os.environ.get("PYPTO_DOCS_SCREENSHOTS"):
        os.makedirs(DOCS_IMAGES, exist_ok=True)
        shutil.copyfile(path, os.path.join(DOCS_IMAGES, name))
    return path


def chromium_path() -> str | None:
    env = os.environ.get("PYPTO_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -e '.[browser]' (and apt-get install -y chromium)"
    if chromium_path() is None:
        return "no chromium found: apt-get install -y chromium (or set PYPTO_CHROMIUM to a Chromium binary)"
    return None


class Browser:
    """One headless Chromium; ``open`` gives pages that collect their console errors."""

    def __init__(self, pw, executable: str):
        self._browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        self.pages = []

    def open(self, path: str, width: int = 1400, height: int = 900):
        page = self._browser.new_page(viewport={"width": width, "height": height})
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: page.errors.append(f"request failed: {r.url}"))
        page.requests = []
        page.on("request", lambda r: page.requests.append(r.url))
        page.goto("file://" + os.path.abspath(path))
        self.pages.append(page)
        return page

    def close(self):
        self._browser.close()


@pytest.fixture(scope="session")
def browser():
    reason = missing_reason()
    if reason and os.environ.get("PYPTO_REQUIRE_BROWSER"):
        pytest.fail(f"PYPTO_REQUIRE_BROWSER is set but {reason}")
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = Browser(pw, chromium_path())
        try:
            yield b
        finally:
            b.close()
