"""Models of the set (tests/model_zoo.py) at several batch sizes and sequence lengths
(or image sides), each through one model captured with dynamic sizes: one dynamo
capture and one PyPTO trace serve every size of the sweep, with a program per bucket
of sizes, and every size's output is within the set's tolerance of torch's.
bench/models.py --sweep runs each model and path in a process of its own (its peak
memory is that model's); the test reads its rows. The libraries are pypto[models]."""

import json
import subprocess
import sys

import pytest

for _lib in ("torch", "transformers", "torchvision", "timm"):
    pytest.importorskip(_lib, reason=f"{_lib} is not installed: pip install 'pypto[models]'")

from model_zoo import BY_NAME  # noqa: E402
from repo_paths import ROOT  # noqa: E402

MODELS = ("gpt2", "llama", "resnet18")  # two LMs and a CNN
PATHS = ("compile", "from_torch")


@pytest.fixture(scope="module")
def rows():
    cmd = [sys.executable, str(ROOT / "bench" / "models.py"), "--sweep", "--json", "--models", ",".join(MODELS)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    found = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {(r["model"], r["path"]): r for r in found}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", MODELS)
def test_one_capture_and_one_trace_serve_every_size(rows, name, path):
    row = rows[(name, path + "-sweep")]
    sizes = [(b, s) for b, s, _ in BY_NAME[name].sweep()]
    assert row["status"] == "ok", row
    assert row["sizes"] == [list(s) for s in sizes], row
    assert row["fallbacks"] == [], row
    assert row["captures"] == 1 and row["traces"] == 1 and row.get("per_size") is None, row
    # a program per bucket of sizes, so never more than the sizes run
    assert 1 <= row["programs"] <= len(sizes), row
    assert row["rel_err"] <= 2e-2, row
    assert row["argmax_agree"] >= 0.95, row
    assert row["peak_rss_gb"] <= row["rss_limit_gb"], row


@pytest.mark.parametrize("name", MODELS)
def test_a_program_per_bucket_on_both_paths(rows, name):
    a, b = rows[(name, "compile-sweep")], rows[(name, "from_torch-sweep")]
    assert b["programs"] == len(set(b["buckets"])), b
    assert a["programs"] == b["programs"], (a, b)
