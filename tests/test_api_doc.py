"""docs/api.md's examples run as written (each section's blocks in order, in one
namespace)."""

import re

import pypto as p

from repo_paths import ROOT


def _section(title: str) -> str:
    text = (ROOT / "docs" / "api.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_tile_level_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", _section("Tile level"), re.S)
    assert len(blocks) >= 4, "the Tile level section has its examples"
    prev = p.get_device()
    namespace = {}
    try:
        for block in blocks:
            exec(compile(block, "docs/api.md", "exec"), namespace)
    finally:
        p.set_device(prev)


def test_runtime_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", _section("Runtime"), re.S)
    assert len(blocks) >= 3, "the Runtime section has its examples"
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
    assert namespace["pool"].stats()["runs"] == 8
