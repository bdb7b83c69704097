"""The compilation viewer: one self-contained HTML page per compiled program.

The compiler exports what the page shows as JSON through the C ABI (every level, the
device's cost estimate of each kernel, the first block's PTO and machine programs of
each task, the passes with their times and diffs: lower/visualize.go). This module only
puts that JSON into the page beside the viewer's script, its style sheet and the
layout library (dagre, MIT licence, shipped in viz_assets/ with its licence file), so
the page needs no network (docs/tools.md, "Visualisation")."""

from __future__ import annotations

import hashlib
import html
import json
import os

from .._core import lib as _lib
from .._core.files import make_dirs, write_text

__all__ = ["Visualization"]

_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "viz_assets")


def _asset(name: str) -> str:
    with open(os.path.join(_ASSETS, name), encoding="utf-8") as f:
        return f.read()


def _script_safe(text: str) -> str:
    """Text that cannot end the <script> element it sits in."""
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


class Visualization:
    """The viewer of one compiled program: ``save(path)`` writes the page (and the JSON
    it shows beside it), ``html()`` gives the page, and notebooks show it inline
    (``_repr_html_``). ``data`` is the compiler's export as a dict."""

    def __init__(self, text: str):
        self._text = text
        self.data = json.loads(text)

    @classmethod
    def _of(cls, handle: int) -> "Visualization":
        return cls(_lib.call_string(_lib.lib.pypto_executor_visualization_json, handle))

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def key(self) -> str:
        """A short digest of the program's Tensor Graph and chip, naming its files."""
        what = json.dumps([self.data["chip"], self.data["input"]], sort_keys=True).encode()
        return hashlib.sha1(what).hexdigest()[:10]

    def json(self) -> str:
        """The compiler's export, as JSON text."""
        return self._text

    def html(self) -> str:
        """The page: viewer, styles, layout library and data, all inline."""
        page = _asset("viewer.html")
        parts = {
            "@TITLE@": html.escape(f"PyPTO: {self.name} on {self.data['chip']}"),
            "@STYLE@": _asset("viewer.css"),
            # The page carries a copy of dagre, so its licence goes with it.
            "@DAGRE@": _script_safe("/*\n" + _asset("dagre.LICENSE") + "*/\n" + _asset("dagre.min.js")),
            "@DATA@": _script_safe(json.dumps({k: v for k, v in self.data.items() if k != "programs"})),
            "@PROGRAMS@": _script_safe(json.dumps(self.data["programs"])),
            "@VIEWER@": _script_safe(_asset("viewer.js")),
        }
        for k, v in parts.items():
            page = page.replace(k, v, 1)
        return page

    def save(self, path) -> str:
        """Writes the page to ``path`` (a file, or a directory to write
        ``<name>_<key>.html`` in) and the JSON beside it (same name, ``.json``);
        returns the page's path."""
        path = os.fspath(path)
        if os.path.isdir(path) or path.endswith(os.sep):
            path = os.path.join(path, f"{self.name}_{self.key}.html")
        parent = os.path.dirname(path)
        if parent:
            make_dirs(parent, "Visualization.save")
        write_text(path, self.html(), "Visualization.save")
        write_text(os.path.splitext(path)[0] + ".json", self._text, "Visualization.save")
        return path

    def _repr_html_(self) -> str:
        # An iframe keeps the page's script and styles apart from the notebook's.
        return (
            f'<iframe srcdoc="{html.escape(self.html(), quote=True)}" '
            'style="width:100%;height:640px;border:1px solid #ccc" sandbox="allow-scripts"></iframe>'
        )

    def __repr__(self) -> str:
        d = self.data
        return (
            f"<pypto.Visualization {self.name} on {d['chip']}: {len(d['input']['nodes'])} traced nodes, "
            f"{len(d['tile']['ops'])} kernels, {len(d['exec']['tasks'])} tasks, {len(d['passes'])} passes>"
        )
