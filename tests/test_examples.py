"""The examples run as users run them, and pass their own checks against numpy."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_demo_decoder_matches_numpy_on_small_sizes():
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--device", "tiny", "--seq", "16", "--layers", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "next-token argmax agrees on 100.0%" in run.stdout
    assert "profile:" in run.stdout
