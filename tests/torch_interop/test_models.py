"""Models other people wrote (tests/model_zoo.py: transformers, torchvision and timm
models at small random-weight configurations) run whole on PyPTO through both
torch.compile(backend="pypto") and p.from_torch: no operation left to torch, outputs
within 2e-2 of torch's float32 output relative to its largest value, the argmax of
LM logits and class scores agreeing at >= 95% of positions, and the process's peak
resident memory at most 3x the model's parameter bytes + 1.5 GB. bench/models.py runs
each model and path in a process of its own (its peak is that model's); the test reads
its rows. The libraries are the extra pypto[models]."""

import json
import subprocess
import sys

import pytest

for _lib in ("torch", "transformers", "torchvision", "timm"):
    pytest.importorskip(_lib, reason=f"{_lib} is not installed: pip install 'pypto[models]'")

from model_zoo import CASES  # noqa: E402
from repo_paths import ROOT  # noqa: E402

PATHS = ("compile", "from_torch")


@pytest.fixture(scope="module")
def rows():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "models.py"), "--json"], capture_output=True, text=True, timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    found = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {(r["model"], r["path"]): r for r in found}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_model_runs_whole_on_pypto(rows, name, path):
    row = rows[(name, path)]
    assert row["status"] == "ok", row
    assert row["fallbacks"] == [], row
    assert row["rel_err"] <= 2e-2, row
    assert row["argmax_agree"] is None or row["argmax_agree"] >= 0.95, row
    assert row["peak_rss_gb"] <= row["rss_limit_gb"], row
    assert row["sim_ms"] > 0, row


def test_the_set_is_the_one_promised():
    names = {c.name for c in CASES}
    assert {"gpt2", "llama", "mixtral", "bert", "t5-encoder", "opt", "gpt-neox", "resnet18", "mobilenet-v2", "vit"} <= names
    assert names & {"mistral", "qwen2"} and names & {"efficientnet-b0", "convnext-atto"}
