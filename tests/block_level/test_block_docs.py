"""The Python examples of docs/api.md's "Block level" section run as written (in order,
in one namespace)."""

import re

import pypto as p
from repo_paths import ROOT



def test_block_level_doc_examples_run():
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.split("\n## Block level\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "the Block level section has Python examples"
    before = p.get_device()
    try:
        namespace = {}
        for block in blocks:
            exec(compile(block, "docs/api.md", "exec"), namespace)
    finally:
        p.set_device(before)
