"""The block-level examples run as users run them and pass their checks against numpy."""

import subprocess
import sys

import pytest
from repo_paths import ROOT

ROOT = ROOT


def run_example(name, *args):
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@pytest.mark.parametrize("device", ["tiny", "reference"])
def test_block_gemm_matches_numpy_and_reports_both_times(device):
    out = run_example("block_gemm.py", "--device", device, "--size", "256")
    assert "block GEMM matches numpy" in out
    if device == "tiny":
        assert "block-level kernel (2 blocks):" in out and "compiler's matmul:" in out


def test_block_softmax_matches_numpy():
    out = run_example("block_softmax.py", "--device", "tiny", "--rows", "128", "--cols", "128")
    assert "block softmax matches numpy" in out and "block-level kernel:" in out


def test_block_mixed_kernel_matches_numpy():
    out = run_example("block_mixed.py", "--device", "tiny", "--m", "128", "--n", "128", "--k", "128")
    assert "mixed kernel matches numpy" in out
