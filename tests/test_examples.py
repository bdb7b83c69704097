"""The examples run as users run them, and pass their own checks against numpy."""

import subprocess
import sys

import pytest

from repo_paths import ROOT


def test_demo_decoder_matches_numpy_on_small_sizes():
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--device", "tiny", "--seq", "16", "--layers", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "next-token argmax agrees on 100.0%" in run.stdout
    assert "profile:" in run.stdout


def test_demo_with_the_plain_runtime_matches_numpy():
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--device", "tiny", "--seq", "16", "--layers", "1", "--plain-runtime"],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "next-token argmax agrees on 100.0%" in run.stdout


def test_kernels_bench_demo_rows_on_a_small_model():
    # bench/kernels.py's demo rows (tokens/s with the runtime's features off and on)
    # at a size the tests afford; the full rows run the demo's default size.
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "kernels.py"), "--demo-only", "--json", "--demo-seq", "16", "--demo-layers", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    import json

    off, on = json.loads(run.stdout)
    assert (off["runtime"], on["runtime"]) == ("off", "on")
    assert off["values_identical"] and on["values_identical"]
    assert on["tokens_per_s"] > off["tokens_per_s"]
    assert abs(off["tokens_per_s"] * off["sim_ms"] / 1e3 - 2 * 16) < 1e-6


def _run_example(name, *args):
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), "--device", "tiny", *args],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_tile_attention_is_true_attention_with_and_without_mask():
    out = _run_example("tile_attention.py", "--heads", "2", "--seq", "40", "--kv-seq", "50", "--head-dim", "16",
                       "--tile-q", "16", "--tile-k", "16", "--mask")  # fmt: skip
    assert "3 query tiles of 16 against 4 key tiles of 16, causal mask" in out
    assert "tile attention matches numpy" in out
    out = _run_example("tile_attention.py", "--heads", "2", "--seq", "33", "--head-dim", "32", "--tile-q", "16", "--tile-k", "32")
    assert "tile attention matches numpy" in out


def test_linear_layernorm_matches_numpy_and_shows_the_tiles():
    out = _run_example("linear_layernorm.py", "--batch", "20", "--hidden", "96")
    assert "linear + layer norm matches numpy" in out
    assert "matmul" in out and "est " in out


def test_moe_routes_eagerly_and_compiled():
    out = _run_example("moe.py", "--tokens", "4", "--experts", "8", "--top-k", "2")
    assert "MoE matches numpy" in out


def test_batching_stacks_runs_and_unstacks():
    out = _run_example("batching.py", "--requests", "3", "--seq", "8", "--hidden", "32", "--runs", "2")
    assert "batched results match numpy" in out and "samples/s" in out


def test_train_loss_falls_and_tracks_torch():
    pytest.importorskip("torch", reason="the training example compares with torch: pip install pypto[torch]")
    out = _run_example("train.py", "--steps", "20")
    assert "the loss fell from" in out
    assert "tracks torch's training within" in out
