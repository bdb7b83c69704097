"""Runs one of the repository's Go commands (cmd/...) and reads the JSON it prints."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(script, command, args):
    """``go run ./cmd/<command> <args>`` from the repository root, its stdout parsed as
    JSON; exits with the command's error output (named after script) when it fails."""
    go = shutil.which("go")
    if go is None:
        sys.exit(f"{script}: the Go toolchain (go) is needed to build cmd/{command}")
    try:
        out = subprocess.run([go, "run", f"./cmd/{command}", *args], cwd=ROOT, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        sys.exit(f"{script}: cmd/{command} failed:\n{e.stderr}")
    return json.loads(out.stdout)
