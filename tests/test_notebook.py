"""examples/tour.ipynb runs top to bottom in a Jupyter kernel (nbclient) without a cell
error, and its rich outputs are there: the profile report and the debugger's table."""

import os
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from repo_paths import ROOT


def test_tour_notebook_runs(tmp_path, monkeypatch):
    nb = nbformat.read(ROOT / "examples" / "tour.ipynb", as_version=4)
    # The kernel imports the pypto this test imports, and shows no progress bars.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    monkeypatch.setenv("PYPTO_PROGRESS", "0")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the cell on any error
    html = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "data" in o and "text/html" in o["data"]]  # fmt: skip
    assert any('aria-label="roofline"' in h for h in html), "the profile report is shown"
    assert any("<th>break</th>" in h for h in html), "the debugger's table is shown"
    assert any("<table>" in h and "b / a" in h for h in html), "the comparison is shown"
