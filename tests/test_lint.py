"""ruff (pyproject.toml [tool.ruff]: pycodestyle, pyflakes, isort, bugbear, pyupgrade, public functions typed)
over every Python file of the project, so the README's test command, which CI runs, lints as well."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("vnetlab", "tests", "lab", "benchmarks", "tools", "docs")


def test_ruff_check_is_clean():
    # ruff is a test dependency ([project.optional-dependencies] test): missing, this fails rather than skips
    argv = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *PATHS]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check {' '.join(PATHS)}:\n{done.stdout}{done.stderr}"
