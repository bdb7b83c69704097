"""docs/pto-as.md's walk-through runs as written (its blocks in order, in one
namespace): a GPT block compiled, exported, assembled by ptoas, its C++ read, and the
export read back to the same bytes and cycles. It needs ptoas (pip install
'pypto[ptoas]'): without it the test skips, with PYPTO_REQUIRE_PTOAS set it fails."""

import os
import re

import pytest
from repo_paths import ROOT

import pypto as p
from pypto.tools import ptoas as tp

TEXT = (ROOT / "docs" / "pto-as.md").read_text()


def test_walk_through_runs(capsys):
    try:
        tp.runnable()
    except tp.PtoasError as e:
        if os.environ.get("PYPTO_REQUIRE_PTOAS"):
            pytest.fail(f"PYPTO_REQUIRE_PTOAS is set but {e.message}")
        pytest.skip(f"{e.message} (pip install 'pypto[ptoas]' to run it)")
    section = TEXT[TEXT.index("\n## Walk-through") :]
    before = p.get_device()
    namespace = {}
    try:
        for block in re.findall(r"```python\n(.*?)```", section, re.S):
            exec(compile(block, "docs/pto-as.md", "exec"), namespace)
    finally:
        p.set_device(before)
    out = capsys.readouterr().out
    assert "flags ours" in out and "inserted by ptoas" in out
    assert "AICORE" in out and "TMATMUL" in out and "set_intra_block" in out
