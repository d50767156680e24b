"""The workshop's plan, read from the notebooks themselves: core and optional minutes per notebook.

Every numbered section heading (``## N. Title (core, M min)`` or ``(optional, M min)``) and the Exercises heading
(``## Exercises (core, M min)``) carry their minutes; an optional exercise says so in its own line
(``**00.3** (optional) ...``, optionally ``(optional, M min)``). The overview, imports, summary, what's next and
references count as one "intro/outro" figure per notebook, its plan entry in the Prerequisites list::

    - **Time to learn**: 25 minutes on the core path (+10 optional), of which 3 for the overview and summary.

The tool adds the sections' minutes to that figure and reports where the stated time disagrees. The README's
notebooks table, the instructor guide's schedule and notebook 00's plan table state ``25 min (+10)`` per notebook;
``tests/test_plan.py`` checks all of them against this tool, and that the core path fits the three-hour plan.

    python tools/plan.py            # the plan, per notebook and in total
    python tools/plan.py --check    # also exit 1 on any problem (headings without minutes, tables that disagree)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "instructor_guide.md"

WORKSHOP_MIN = 180  # the three-hour plan the guide sells
SET_UP_MIN = 10  # the README's open command while people sit down
BREAK_MIN = 10

# "## 2. The full-MTU surprise (core, 6 min)"; "## Exercises (core, 8 min)"
SECTION = re.compile(r"^## (?P<title>(?:\d+\.|Exercises\b).*?)\s*(?:\((?P<kind>core|optional), (?P<min>\d+) min\))?$")
# "**20.3** (optional) ..." or "**20.3** (optional, 3 min) ..."
OPTIONAL_EXERCISE = re.compile(r"^\*\*(?P<key>\d\d\.\d+)\*\* \(optional(?:, (?P<min>\d+) min)?\)")
TIME_TO_LEARN = re.compile(r"\*\*Time to learn\*\*: (?P<core>\d+) minutes on the core path"
                           r"(?: \(\+(?P<opt>\d+) optional\))?, of which (?P<intro>\d+) for the overview and summary")
# a table's time cell: "25 min" or "25 min (+10)"
TIME_CELL = re.compile(r"^(?P<core>\d+) min(?: \(\+(?P<opt>\d+)\))?$")


@dataclass
class Section:
    title: str
    kind: str  # "core" or "optional"
    minutes: int


@dataclass
class NotebookPlan:
    key: str  # "00"
    path: Path
    intro_outro: int = 0
    sections: list[Section] = field(default_factory=list)
    stated: tuple[int, int] | None = None  # what its "Time to learn" line says
    problems: list[str] = field(default_factory=list)

    @property
    def core(self) -> int:
        return self.intro_outro + sum(s.minutes for s in self.sections if s.kind == "core")

    @property
    def optional(self) -> int:
        return sum(s.minutes for s in self.sections if s.kind == "optional")

    @property
    def minutes(self) -> tuple[int, int]:
        return self.core, self.optional


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def fmt(core: int, optional: int = 0) -> str:
    """How every table states a notebook's time: "25 min (+10)", or "25 min" without optional sections."""
    return f"{core} min (+{optional})" if optional else f"{core} min"


def parse_time(cell: str) -> tuple[int, int] | None:
    m = TIME_CELL.match(cell.strip().strip("*"))
    return (int(m["core"]), int(m["opt"] or 0)) if m else None


def read(path: Path) -> NotebookPlan:
    """The plan one notebook states in its headings and its "Time to learn" line."""
    plan = NotebookPlan(path.name[:2], path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if m := TIME_TO_LEARN.search(line):
                plan.intro_outro = int(m["intro"])
                plan.stated = (int(m["core"]), int(m["opt"] or 0))
            elif m := SECTION.match(line):
                if m["kind"] is None:
                    plan.problems.append(f"{path.name}: heading without (core|optional, M min): {line!r}")
                else:
                    plan.sections.append(Section(m["title"], m["kind"], int(m["min"])))
            elif m := OPTIONAL_EXERCISE.match(line):
                plan.sections.append(Section(f"exercise {m['key']}", "optional", int(m["min"] or 0)))
    if plan.stated is None:
        plan.problems.append(f"{path.name}: no '**Time to learn**: N minutes on the core path (+M optional), of "
                             "which K for the overview and summary' line")
    elif plan.stated != plan.minutes:
        plan.problems.append(f"{path.name}: Time to learn says {fmt(*plan.stated)}, its headings add up to "
                             f"{fmt(*plan.minutes)}")
    if not any(s.title.startswith("Exercises") for s in plan.sections):
        plan.problems.append(f"{path.name}: no '## Exercises (core, M min)' heading")
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
    total = core_total(plans)
    if total > WORKSHOP_MIN:
        found.append(f"the core path takes {total} min (set-up and break included), more than {WORKSHOP_MIN}")
    return found


def main(argv: list[str]) -> int:
    plans = workshop()
    print(f"{'notebook':<40} {'core':>5} {'optional':>9}  intro/outro + sections")
    for p in plans.values():
        parts = " + ".join(f"{s.minutes}{'' if s.kind == 'core' else '?'}" for s in p.sections)
        print(f"{p.path.stem:<40} {p.core:>5} {p.optional:>9}  {p.intro_outro} + {parts}")
    opt = sum(p.optional for p in plans.values())
    print(f"set-up {SET_UP_MIN} + break {BREAK_MIN} + notebooks' core = {core_total(plans)} min of "
          f"{WORKSHOP_MIN}; optional sections add {opt} min ('?' above)")
    found = problems(plans)
    for line in found:
        print("problem:", line)
    return 1 if found and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
