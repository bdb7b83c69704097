"""The README's Python examples run as written (in order, in one namespace)."""

import re

from repo_paths import ROOT


def test_readme_examples_run():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has Python examples"
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
