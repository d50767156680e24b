"""The notebook policy (stripped outputs except golden text cells, kernelspec, navigation), the student
copies, and the template every notebook follows. nbval itself runs the notebooks (pyproject addopts)."""

import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("nbtools", ROOT / "tools" / "nbtools.py")  # a script, not the package
nbtools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtools)

NOTEBOOKS = nbtools.notebooks()
SECTIONS = ("## Overview", "## Prerequisites", "## Imports", "## Exercises", "## Summary", "## What's next",
            "## References")


def test_there_is_a_series():
    assert [p.name[:2] for p in NOTEBOOKS][:3] == ["00", "10", "20"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_output_policy(path):
    assert nbtools.problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_template(path):
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    assert "Predict" in text  # predict, then check
    assert "fb32856b16ad" in text or "2e4ef10f5850" in text  # references to the patches


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_have_checkers(path):
    nb = nbformat.read(path, as_version=4)
    exercise_cells = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    checks = [c for c in nb.cells if "exercises.check(" in c.source]
    assert exercise_cells and len(checks) >= len(exercise_cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_copy_is_current(path):
    student = nbtools.student_path(path)
    assert student.exists(), "run: python tools/nbtools.py student"
    want = nbtools.student_copy(nbformat.read(path, as_version=4))
    assert nbformat.read(student, as_version=4) == want, "student copy is stale: python tools/nbtools.py student"
    assert not any(nbtools.STUDENT_PLACEHOLDER != c.source for c in want.cells
                   if "exercise" in c.metadata.get("tags", []))
