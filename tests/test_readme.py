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


def test_ci_runs_the_readme_commands_verbatim_before_installing_any_extra():
    # A fresh machine following the README gets only the set-up command's packages:
    # .ci/run runs both README commands in that state, before any extra is installed.
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"```sh\n(.*?)\n```", text, re.S)
    setup, tests = commands[0].strip(), commands[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines()]
    at_setup = next(i for i, line in enumerate(lines) if line.startswith(setup))
    at_tests = next(i for i, line in enumerate(lines) if line.startswith(tests))
    first_extra = next(i for i, line in enumerate(lines) if "pip install" in line and i != at_setup)
    assert at_setup < at_tests < first_extra, "the README's commands must run before any extra is installed"
