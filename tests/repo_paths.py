"""Where the repository's files are, for tests at any depth under tests/."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
