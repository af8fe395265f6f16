"""The Python package passes the linter (ruff's default rules: syntax errors, undefined
and unused names, f-strings without placeholders, ...)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing_in_the_package():
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT / "python"),
                        str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT / "benches"),
                        str(ROOT / "examples")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_mypy_finds_nothing_in_the_package():
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"),
                        str(ROOT / "python" / "opendcn")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
