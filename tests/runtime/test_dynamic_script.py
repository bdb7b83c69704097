"""bench/dynamic.py (run on demand with every seq_len) still runs: the first sizes of the
guide's block, bucketed and exact, with the same bits."""

import json
import os
import subprocess
import sys
from repo_paths import ROOT

SCRIPT = str(ROOT / "bench" / "dynamic.py")


def test_a_short_sweep_runs_and_reports_its_keys():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, SCRIPT, "--max", "3", "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert {"case", "programs", "worst_slowdown", "compile_ms_total"} <= set(r)
    assert [row["seq_len"] for row in r["rows"]] == [1, 2, 3]
    assert r["all_identical"] and 1 <= r["programs"] <= 3
    assert r["worst_slowdown"] == max(row["slowdown"] for row in r["rows"]) and r["compile_ms_total"] > 0
    # The run's batch of 1 is not padded for seq_len's buckets (bucketed apart, seq_len 3
    # ran the program of batch<=16,seq_len<=64, twice the exact program's time).
    assert all(row["program"].startswith("batch<=1,") for row in r["rows"]), r["rows"]
    # Within the bucket tolerance (6.5%) and the estimate's error: seq_len 2 and 3 run
    # 6.5% over their exact programs on the program of seq_len<=128 (14% when the
    # value projection kept its select of the padded rows and the estimate summed the
    # tasks alone).
    assert r["worst_slowdown"] <= 1.10


def test_the_bucket_low_ends_run_one_size_per_bucket():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, SCRIPT, "--max", "3", "--lows", "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # seq_len 1 starts the first bucket, which holds 2 and 3 (its bound is at least 4).
    assert [row["seq_len"] for row in r["rows"]] == [1] and r["programs"] == 1
    assert int(r["rows"][0]["program"].partition("seq_len<=")[2]) > 3 and r["all_identical"]
