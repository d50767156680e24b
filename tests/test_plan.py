"""tools/plan.py: the workshop's plan read from the notebooks' headings (plan_conventions: every numbered section and
the Exercises heading say "(core, M min)" or "(optional, M min)"), and one set of times in README's notebooks
table, the instructor guide's schedule and notebook 00's plan table; the core path fits three hours."""

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("plan", ROOT / "tools" / "plan.py")  # a script, not the package
plan = importlib.util.module_from_spec(_spec)
sys.modules["plan"] = plan  # dataclasses look their module up
_spec.loader.exec_module(plan)

PLANS = plan.workshop()


def _notebook(tmp_path: Path, *markdown: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(m) for m in markdown])
    path = tmp_path / "42_example.ipynb"
    nbformat.write(nb, path)
    return path


def test_reads_core_and_optional_minutes(tmp_path):
    path = _notebook(tmp_path,
                     "# 42 · Example\n## Overview\n- **Time to learn**: 14 minutes on the core path (+9 optional), "
                     "of which 3 for the overview and summary.",
                     "## 1. One (core, 5 min)\ntext\n### 1.1 a subsection carries no minutes",
                     "## 2. Two (optional, 7 min)",
                     "## Exercises (core, 6 min)\n**42.1** a question\n**42.2** (optional, 2 min) another",
                     "**42.3** (optional) a third\n## Summary")
    p = plan.read(path)
    assert (p.core, p.optional) == (3 + 5 + 6, 7 + 2)
    assert p.problems == []
    assert [s.kind for s in p.sections] == ["core", "optional", "core", "optional", "optional"]


def test_a_notebook_without_core_sections_is_optional_as_a_whole(tmp_path):
    path = _notebook(tmp_path,
                     "- **Time to learn**: 0 minutes on the core path (+15 optional), of which 3 for the overview and "
                     "summary.", "## 1. One (optional, 5 min)", "## Exercises (optional, 7 min)\n**42.1** a question")
    p = plan.read(path)
    assert (p.core, p.optional) == (0, 3 + 5 + 7) and p.problems == []


def test_untimed_heading_and_wrong_total_are_problems(tmp_path):
    path = _notebook(tmp_path, "- **Time to learn**: 10 minutes on the core path, of which 2 for the overview and "
                     "summary.", "## 1. One\n## 2. Two (core, 4 min)\n## Exercises (core, 3 min)")
    p = plan.read(path)
    assert p.core == 2 + 4 + 3
    assert any("'## 1. One'" in s for s in p.problems)
    assert any("says 10 min, its headings add up to 9 min" in s for s in p.problems)
    assert any("Time to learn" in s for s in plan.read(_notebook(tmp_path, "## Exercises (core, 3 min)")).problems)


def test_table_minutes_reads_every_table_layout():
    text = "\n".join([
        "| notebook | what | core (optional) |", "|---|---|---|",
        "| set-up | the open command | 10 min |",
        "| `00_welcome_and_map` | the changes | 12 min (+3) |",
        "| [05](05_primer.ipynb) | primer | 8 min |",
        "| 10 | [Receive](../notebooks/10_x.ipynb) | 20 min (+5) | demonstrate 1536 bytes |",
        "| — | break | 10 min | |",
        "| | | **150 min** | |"])
    assert plan.table_minutes(text) == {"set-up": (10, 0), "00": (12, 3), "05": (8, 0), "10": (20, 5),
                                        "break": (10, 0)}
    assert plan.fmt(12, 3) == "12 min (+3)" and plan.fmt(8) == "8 min"


@pytest.mark.parametrize("key", list(PLANS))
def test_notebook_times_every_section(key):
    assert PLANS[key].problems == []


@pytest.mark.parametrize("key", list(PLANS))
def test_readme_guide_and_notebook00_state_the_notebooks_minutes(key):
    want = PLANS[key].minutes
    tables = {"README": plan.readme_table(), "guide": plan.guide_table(), "00": plan.notebook00_table()}
    assert {name: t.get(key) for name, t in tables.items()} == dict.fromkeys(tables, want)


def test_set_up_and_break_agree():
    for table in (plan.readme_table(), plan.guide_table(), plan.notebook00_table()):
        assert table["set-up"] == (plan.SET_UP_MIN, 0)
    assert plan.guide_table()["break"] == (plan.BREAK_MIN, 0)
    assert set(plan.readme_table()) == set(plan.notebook00_table()) == {"set-up", *PLANS}
    assert set(plan.guide_table()) == {"set-up", "break", *PLANS}


def test_core_path_fits_three_hours():
    assert [p for k in PLANS for p in PLANS[k].problems] == []
    total = plan.core_total(PLANS)
    assert total <= plan.WORKSHOP_MIN, total
    guide = plan.section(plan.GUIDE.read_text(), "## Schedule")
    assert f"**{total} min**" in guide  # the schedule's total row: the core path
    assert f"{total} minutes" in plan.section(plan.README.read_text(), "## The notebooks")
    assert plan.problems(PLANS) == []


def test_a_section_below_its_estimate_is_a_problem(tmp_path):
    """The estimate from content: 300 words (2 min at 150 a minute) and one Predict (2.5) need 4.5 minutes; a
    heading that says 3 is a problem, one that says 5 is not (coefficients: tools/plan.py, the guide's schedule)."""
    words = " ".join(["word"] * 298)  # and the Predict line's two: 300
    for stated, bad in ((3, True), (5, False)):
        path = _notebook(tmp_path, f"- **Time to learn**: {stated + 3} minutes on the core path, of which 0 for the "
                         "overview and summary.", f"## 1. One (core, {stated} min)\n{words}\n\n*Predict:* what?",
                         "## Exercises (core, 3 min)\n**42.1** a question")
        p = plan.read(path)
        assert p.sections[0].estimate == pytest.approx(300 / plan.WORDS_PER_MIN + plan.PREDICT_MIN)
        assert any("'1. One' says 3 min, its content needs 4.5" in s for s in p.problems) == bad, p.problems


def test_the_guide_states_the_coefficients():
    guide = plan.section(plan.GUIDE.read_text(), "## Schedule")
    for phrase in (f"{plan.WORDS_PER_MIN} words a minute", f"{plan.PREDICT_MIN:g} minutes per Predict",
                   f"{plan.PANEL_MIN:g} per panel", f"{plan.EXERCISE_MIN:g} per exercise"):
        assert phrase in guide, phrase


def test_notebooks_core_path_fits_its_budget():
    assert sum(p.core for p in PLANS.values()) <= plan.NOTEBOOKS_CORE_MAX


def test_tools_run_with_another_python_by_re_executing_with_the_venv(tmp_path):
    """The README writes `python tools/plan.py`: a python without nbformat (here a bare venv, as the system's python3
    usually is) re-runs the tool with the repository's .venv; with the re-exec switched off it cannot import."""
    import os
    import subprocess
    import venv

    if not (ROOT / ".venv").exists():
        pytest.skip("no .venv in the repository: the tools re-exec into the .venv the README's command makes")
    venv.create(tmp_path / "bare", with_pip=False)
    bare = tmp_path / "bare" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    env = {k: v for k, v in os.environ.items() if k != "VNETLAB_TOOL_REEXEC"}
    for tool, want in (("tools/plan.py", "set-up 10 + break 10"), ("tools/nbtools.py", "python tools/nbtools.py")):
        run = subprocess.run([str(bare), tool], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
        assert want in run.stdout, (tool, run.stdout[-500:], run.stderr[-500:])
    off = subprocess.run([str(bare), "tools/plan.py"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**env, "VNETLAB_TOOL_REEXEC": "1"})
    assert off.returncode != 0 and "nbformat" in off.stderr
