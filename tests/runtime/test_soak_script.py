"""bench/soak.py (run on demand, with its full counts, outside CI) still runs: a small
instance of each phase, whose JSON says every result was right."""

import json
import os
import subprocess
import sys

from repo_paths import ROOT

SOAK = str(ROOT / "bench" / "soak.py")


def test_a_small_soak_runs_clean():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, SOAK, "--eager", "240", "--runs", "20", "--threads", "3", "--thread-runs", "3", "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    assert [r["phase"] for r in rows] == ["eager ops", "compiled runs", "3 threads"]
    assert all(r["wrong"] == 0 for r in rows) and rows[0]["count"] == 240 and rows[2]["count"] == 9
