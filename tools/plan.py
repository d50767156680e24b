"""The workshop's plan, read from the notebooks themselves: core and optional minutes per notebook.

Every numbered section heading (``## N. Title (core, M min)`` or ``(optional, M min)``) and the Exercises heading
(``## Exercises (core, M min)``) carry their minutes; an optional exercise says so in its own line
(``**00.3** (optional) ...``, optionally ``(optional, M min)``). The overview, imports, summary, what's next and
references count as one "intro/outro" figure per notebook, its plan entry in the Prerequisites list::

    - **Time to learn**: 25 minutes on the core path (+10 optional), of which 3 for the overview and summary.

The tool adds the sections' minutes to that figure and reports where the stated time disagrees, and where a
section states fewer minutes than its content needs: words read at ``WORDS_PER_MIN``, each Predict, panel, figure
and exercise at its own minutes, plus the run time of its cells (``tests/golden/timings.json``, measured by
``tools/nbtools.py refresh``). The README's
notebooks table, the instructor guide's schedule and notebook 00's plan table state ``25 min (+10)`` per notebook;
``tests/test_plan.py`` checks all of them against this tool, and that the core path fits the three-hour plan.

    python tools/plan.py            # the plan, per notebook and in total
    python tools/plan.py --check    # also exit 1 on any problem (headings without minutes, tables that disagree)
"""

from __future__ import annotations

if __name__ == "__main__":  # as a script: tools/ is sys.path[0]; run with the repository's .venv python
    import _venv

    _venv.reexec(__file__)

import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOLVED = NOTEBOOKS / "solved"
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "instructor_guide.md"

WORKSHOP_MIN = 180  # the three-hour plan the guide sells
NOTEBOOKS_CORE_MAX = 150  # of it, the notebooks' core path: the rest is set-up, the break and slack
SET_UP_MIN = 10  # the README's open command while people sit down
BREAK_MIN = 10

# "## 2. The full-MTU surprise (core, 6 min)"; "## Exercises (core, 8 min)"
SECTION = re.compile(r"^## (?P<title>(?:\d+\.|Exercises\b).*?)\s*(?:\((?P<kind>core|optional), (?P<min>\d+) min\))?$")
# "**20.3** (optional) ..." or "**20.3** (optional, 3 min) ..."
OPTIONAL_EXERCISE = re.compile(r"^\*\*(?P<key>\d\d\.\d+)\*\* \(optional(?:, (?P<min>\d+) min)?\)")
CORE_EXERCISE = re.compile(r"^\*\*\d\d\.\d+\*\* (?!\(optional)")  # "**20.1** The largest ...": the Exercises' minutes
TIME_TO_LEARN = re.compile(r"\*\*Time to learn\*\*: (?P<core>\d+) minutes on the core path"
                           r"(?: \(\+(?P<opt>\d+) optional\))?, of which (?P<intro>\d+) for the overview and summary")
# a table's time cell: "25 min" or "25 min (+10)"
TIME_CELL = re.compile(r"^(?P<core>\d+) min(?: \(\+(?P<opt>\d+)\))?$")


# The estimate of a section's minutes, from its content (checked by working through the core path as an attendee:
# docs/instructor_guide.md, "How the minutes are estimated"):
WORDS_PER_MIN = 150  # technical prose with kernel identifiers, read closely (explanations in <details> included)
PREDICT_MIN = 2.5  # a Predict really made: think, write it down, run, compare, open the explanation
PANEL_MIN = 2.0  # a panel (sliders, dropdowns): move the controls the text names and read the figure
FIGURE_MIN = 1.0  # a static figure: read its labels against the text
EXERCISE_MIN = 2.5  # an exercise: work it out, type the answer, run the checker (a hint costs another minute)
# seconds per cell, measured by tools/nbtools.py refresh
TIMINGS = Path(__file__).resolve().parents[1] / "tests" / "golden" / "timings.json"


@dataclass
class Section:
    title: str
    kind: str  # "core" or "optional"
    minutes: int
    words: int = 0
    predicts: int = 0
    panels: int = 0
    figures: int = 0
    exercises: int = 0
    run_s: float = 0.0

    @property
    def estimate(self) -> float:
        """Minutes a reader needs, from the section's content: the coefficients above plus its cells' run time."""
        return (self.words / WORDS_PER_MIN + self.predicts * PREDICT_MIN + self.panels * PANEL_MIN
                + self.figures * FIGURE_MIN + self.exercises * EXERCISE_MIN + self.run_s / 60)


@dataclass
class NotebookPlan:
    key: str  # "00"
    path: Path
    intro_outro: int = 0
    sections: list[Section] = field(default_factory=list)
    stated: tuple[int, int] | None = None  # what its "Time to learn" line says
    intro: Section | None = None  # the overview, imports and outro, with their content
    problems: list[str] = field(default_factory=list)

    @property
    def whole_optional(self) -> bool:
        """A notebook without a core section is optional as a whole: its overview and summary too."""
        return bool(self.sections) and all(s.kind == "optional" for s in self.sections)

    @property
    def core(self) -> int:
        intro = 0 if self.whole_optional else self.intro_outro
        return intro + sum(s.minutes for s in self.sections if s.kind == "core")

    @property
    def optional(self) -> int:
        intro = self.intro_outro if self.whole_optional else 0
        return intro + sum(s.minutes for s in self.sections if s.kind == "optional")

    @property
    def minutes(self) -> tuple[int, int]:
        return self.core, self.optional


def notebooks() -> list[Path]:
    """The solved copies, the notebooks as authored (the attendees' copies are made from them: tools/nbtools.py)."""
    return sorted(SOLVED.glob("[0-9][0-9]_*-solved.ipynb"))


def fmt(core: int, optional: int = 0) -> str:
    """How every table states a notebook's time: "25 min (+10)", or "25 min" without optional sections."""
    return f"{core} min (+{optional})" if optional else f"{core} min"


def parse_time(cell: str) -> tuple[int, int] | None:
    m = TIME_CELL.match(cell.strip().strip("*"))
    return (int(m["core"]), int(m["opt"] or 0)) if m else None


def _timings() -> dict[str, dict[str, float]]:
    import json

    return json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}


def read(path: Path) -> NotebookPlan:
    """The plan one notebook states in its headings and its "Time to learn" line, with each section's content
    (words, Predicts, panels, figures, exercises, measured run time) for its estimate. The intro/outro figure
    counts the overview, imports, summary, what's next and references."""
    plan = NotebookPlan(path.name[:2], path)
    nb = nbformat.read(path, as_version=4)
    seconds = _timings().get(path.name, {})
    intro = Section("intro/outro", "core", 0)
    current = intro
    for cell in nb.cells:
        if "nav" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type == "code":
            current.run_s += seconds.get(cell.get("id", ""), 0.0)
            tags = cell.get("metadata", {}).get("tags", [])
            if "exercise" in tags:
                current.exercises += 1
            elif re.search(r"\w+_panel\(|\bexplorer\(", cell.source):
                current.panels += 1
            elif re.search(r"\bdraw_\w*\(", cell.source):
                current.figures += 1
            continue
        for line in cell.source.splitlines():
            if m := TIME_TO_LEARN.search(line):
                plan.intro_outro = int(m["intro"])
                plan.stated = (int(m["core"]), int(m["opt"] or 0))
            elif m := SECTION.match(line):
                if m["kind"] is None:
                    plan.problems.append(f"{path.name}: heading without (core|optional, M min): {line!r}")
                    current = intro
                else:
                    current = Section(m["title"], m["kind"], int(m["min"]))
                    plan.sections.append(current)
                continue
            elif m := OPTIONAL_EXERCISE.match(line):
                current = Section(f"exercise {m['key']}", "optional", int(m["min"] or 0))
                plan.sections.append(current)
            elif CORE_EXERCISE.match(line):
                current = next((s for s in plan.sections if s.title.startswith("Exercises")), current)
            elif line.startswith("## References"):  # read after the session, not in it
                current = Section("references", "core", 0)
                continue
            elif line.startswith("## "):  # Summary, What's next: the outro
                current = intro
                continue
            if line.startswith("*Predict:*"):
                current.predicts += 1
            current.words += len(re.sub(r"<[^>]+>", " ", line).split())
    intro.minutes = plan.intro_outro
    plan.intro = intro
    if plan.stated is None:
        plan.problems.append(f"{path.name}: no '**Time to learn**: N minutes on the core path (+M optional), of "
                             "which K for the overview and summary' line")
    elif plan.stated != plan.minutes:
        plan.problems.append(f"{path.name}: Time to learn says {fmt(*plan.stated)}, its headings add up to "
                             f"{fmt(*plan.minutes)}")
    if not any(s.title.startswith("Exercises") for s in plan.sections):
        plan.problems.append(f"{path.name}: no '## Exercises (core, M min)' heading")
    for sec in [intro, *plan.sections]:
        if sec.minutes < math.ceil(sec.estimate - 0.25):
            plan.problems.append(f"{path.name}: {sec.title!r} says {sec.minutes} min, its content needs "
                                 f"{sec.estimate:.1f} ({sec.words} words, {sec.predicts} Predicts, {sec.panels} "
                                 f"panels, {sec.figures} figures, {sec.exercises} exercises, {sec.run_s:.0f} s run)")
    return plan


def workshop() -> dict[str, NotebookPlan]:
    return {p.name[:2]: read(p) for p in notebooks()}


def core_total(plans: dict[str, NotebookPlan]) -> int:
    """The whole workshop's core path: set-up, every notebook's core, the break."""
    return SET_UP_MIN + BREAK_MIN + sum(p.core for p in plans.values())


def table_minutes(text: str) -> dict[str, tuple[int, int]]:
    """The time column of a markdown table: {"set-up": (10, 0), "00": (12, 3), "break": (10, 0), ...}. A row's
    key is the first cell that starts with a two-digit notebook number (as text, code or a link), or "set-up" /
    "break"; its time is the last cell that reads "N min" or "N min (+M)"."""
    rows = {}
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        times = [t for t in (parse_time(c) for c in cells) if t]
        if not times:
            continue
        key = None
        for c in cells:
            if m := re.match(r"^[\[`]*(\d\d)(?:\b|_)", c):
                key = m[1]
                break
            if c.startswith("set-up") or c == "break":
                key = "set-up" if c.startswith("set-up") else "break"
                break
        if key:
            rows[key] = times[-1]
    return rows


def section(text: str, heading: str) -> str:
    """The body of the markdown section ``heading`` (up to the next heading of the same level)."""
    level = heading.split(" ", 1)[0]
    body = text.split(heading, 1)[1]
    return re.split(rf"\n{level} ", body, maxsplit=1)[0]


def readme_table() -> dict[str, tuple[int, int]]:
    return table_minutes(section(README.read_text(), "## The notebooks"))


def guide_table() -> dict[str, tuple[int, int]]:
    return table_minutes(section(GUIDE.read_text(), "## Schedule"))


def notebook00_table() -> dict[str, tuple[int, int]]:
    nb = nbformat.read(notebooks()[0], as_version=4)
    return table_minutes("\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))


def expected_table(plans: dict[str, NotebookPlan], *, with_break: bool = False) -> dict[str, tuple[int, int]]:
    rows = {"set-up": (SET_UP_MIN, 0), **{k: p.minutes for k, p in plans.items()}}
    if with_break:
        rows["break"] = (BREAK_MIN, 0)
    return rows


def problems(plans: dict[str, NotebookPlan] | None = None) -> list[str]:
    plans = plans if plans is not None else workshop()
    found = [p for plan in plans.values() for p in plan.problems]
    for name, got, want in (("README.md's notebooks table", readme_table(), expected_table(plans)),
                            ("the guide's schedule", guide_table(), expected_table(plans, with_break=True)),
                            ("notebook 00's plan table", notebook00_table(), expected_table(plans))):
        for key in sorted(set(got) | set(want)):
            if got.get(key) != want.get(key):
                shown = lambda t: fmt(*t) if t else "nothing"  # noqa: E731
                found.append(f"{name}: {key} says {shown(got.get(key))}, the notebooks say {shown(want.get(key))}")
    notebooks_core = sum(p.core for p in plans.values())
    if notebooks_core > NOTEBOOKS_CORE_MAX:
        found.append(f"the notebooks' core path takes {notebooks_core} min, more than {NOTEBOOKS_CORE_MAX}")
    total = core_total(plans)
    if total > WORKSHOP_MIN:
        found.append(f"the core path takes {total} min (set-up and break included), more than {WORKSHOP_MIN}")
    return found


def main(argv: list[str]) -> int:
    plans = workshop()
    print(f"{'notebook':<40} {'core':>5} {'optional':>9}  intro/outro + sections")
    for p in plans.values():
        parts = " + ".join(f"{s.minutes}{'' if s.kind == 'core' else '?'}" for s in p.sections)
        print(f"{p.path.stem.removesuffix('-solved'):<40} {p.core:>5} {p.optional:>9}  {p.intro_outro} + {parts}")
    opt = sum(p.optional for p in plans.values())
    print(f"set-up {SET_UP_MIN} + break {BREAK_MIN} + notebooks' core = {core_total(plans)} min of "
          f"{WORKSHOP_MIN}; optional sections add {opt} min ('?' above)")
    found = problems(plans)
    for line in found:
        print("problem:", line)
    return 1 if found and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
