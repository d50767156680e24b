"""Notebook housekeeping for the workbook: one output policy, enforced by tests and CI.

Policy (style.md rule 7: readers never see an answer before they run its cell):
- ``notebooks/solved/NN_name-solved.ipynb``, the instructors' solved copies, are the notebooks as authored: no
  outputs at all; a banner under the navigation says they are solved and links the attendees' copy; the exercise
  cells' code (the solution) starts collapsed. Each has the Python 3 kernelspec, ipykernel's full language_info and
  generated navigation cells (tag ``nav``). Every notebook file that holds solutions is named ``*-solved.ipynb``, so
  its JupyterLab tab says so.
- Every Predict follows the convention ``predict_problems`` checks: its answer waits for its run.
- ``tests/golden/NN_name-solved.ipynb`` are their golden copies (named as their source), where readers do not
  look: the same cells, plus the text output of each cell tagged ``nbval-check-output``, which pytest's nbval
  (``--nbval-lax``) compares on every run. Running a golden copy is running its notebook (a test asserts that the
  cells are the same).
- ``notebooks/NN_name.ipynb`` are the attendees' copies, generated: no outputs, no golden tags, no banner, every
  exercise cell replaced by a placeholder that defines the name its checker reads (``answer = None``), so Run All
  works; their links point at each other and the glossary beside them. Attendees (the open command, a hub's homes,
  Binder) get these and never ``notebooks/solved/``.
- ``site/`` (git-ignored) is a static HTML copy of every executed notebook, readable without installing anything.

    python tools/nbtools.py refresh [NOTEBOOK...]   # execute the solved copies, write the golden and student copies
    python tools/nbtools.py check                   # report policy violations (exit 1 if any)
    python tools/nbtools.py student                 # write the student copies
    python tools/nbtools.py html [--out DIR]        # execute every notebook and write static HTML (default site/),
                                                    # with the glossary and the handout (site/handout.html)
"""

from __future__ import annotations

if __name__ == "__main__":  # as a script: tools/ is sys.path[0]; run with the repository's .venv python
    import _venv

    _venv.reexec(__file__)

import copy
import posixpath
import re
import sys
from pathlib import Path
from typing import NamedTuple

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"  # the attendees' copies and the glossary
SOLVED_DIR = NOTEBOOKS / "solved"  # the instructors' solved copies, the notebooks as authored
SOLVED_SUFFIX = "-solved"  # the file name of every notebook that holds solutions ends in it
GOLDEN_DIR = ROOT / "tests" / "golden"
SITE = ROOT / "site"
GLOSSARY = NOTEBOOKS / "glossary.md"
HANDOUT = ROOT / "docs" / "handout.md"  # the one-page handout, also site/handout.html
GOLDEN = "nbval-check-output"
EXERCISE = "exercise"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# What ipykernel's kernel_info reply puts into metadata.language_info (IPythonKernel.language_info) when a notebook
# opens: stored in full, so that an untouched notebook does not open marked modified. The version is
# the Python the workbook's lock targets (README: Python 3.11); a kernel on another Python still rewrites it.
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3", "version": "3.11.7"}
EXECUTE_TIMEOUT_S = 300
# The checker cell under an exercise: exercises.check("10.1", answer)
CHECK_CALL = re.compile(r"exercises\.check\(\s*[\"'](?P<key>[^\"']+)[\"']\s*,\s*(?P<name>[A-Za-z_]\w*)\s*\)")


def notebooks() -> list[Path]:
    """The solved copies (the authored notebooks), in order."""
    return sorted(SOLVED_DIR.glob(f"[0-9][0-9]_*{SOLVED_SUFFIX}.ipynb"))


def name(path: Path) -> str:
    """A notebook's name, the same for its solved, golden and attendee copies: "00_welcome_and_map"."""
    return path.stem.removesuffix(SOLVED_SUFFIX)


def golden_path(path: Path) -> Path:
    """The golden copy of a solved copy: the same file name, in tests/golden/."""
    return GOLDEN_DIR / path.name


def student_path(path: Path) -> Path:
    """The attendees' copy of a solved copy: notebooks/NN_name.ipynb."""
    return NOTEBOOKS / f"{name(path)}.ipynb"


def solved_path(path: Path) -> Path:
    """The solved copy of any copy of a notebook (attendee, golden or solved)."""
    return SOLVED_DIR / f"{name(path)}{SOLVED_SUFFIX}.ipynb"


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _title(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "nav" not in _tags(cell):
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def nav_source(path: Path, all_paths: list[Path]) -> str:
    """The generated navigation line: previous, contents (00), glossary, next."""
    i = all_paths.index(path)
    parts = []
    if i > 0:
        parts.append(f"← [{_title(all_paths[i - 1])}]({all_paths[i - 1].name})")
    if path != all_paths[0]:
        parts.append(f"[Contents]({all_paths[0].name})")
    parts.append(f"[Glossary](../{GLOSSARY.name})")  # the glossary sits one folder up, beside the attendees' copies
    if i + 1 < len(all_paths):
        parts.append(f"[{_title(all_paths[i + 1])}]({all_paths[i + 1].name}) →")
    return " | ".join(parts)


SOLVED = "solved"  # the banner cell of an instructor copy; student copies leave it out


def solved_banner(path: Path) -> str:
    """The first thing an instructor copy says: it is solved, and where the attendees' copy is."""
    student = student_path(path).name
    return (f"> **Instructor copy, solved.** The exercise cells hold their solutions (collapsed). Attendees work in "
            f"[`notebooks/{student}`](../{student}), the copy without solutions; a hub never gives them "
            f"`notebooks/solved/`.")


def _clean_metadata(cell) -> None:
    for key in ("execution", "collapsed", "scrolled"):
        cell.metadata.pop(key, None)


def normalise(nb, path: Path, all_paths: list[Path]):
    """Kernelspec, no run metadata, no outputs, exercise code collapsed, navigation cells first and last."""
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": copy.deepcopy(LANGUAGE_INFO)}
    cells = [c for c in nb.cells if "nav" not in _tags(c)]
    for cell in cells:
        _clean_metadata(cell)
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            jupyter = cell.metadata.pop("jupyter", {})
            jupyter.pop("source_hidden", None)
            jupyter.pop("outputs_hidden", None)
            if EXERCISE in _tags(cell):
                jupyter["source_hidden"] = True  # the instructor's solution: shown on a click, not at a glance
            if jupyter:
                cell.metadata["jupyter"] = jupyter
    cells = [c for c in cells if SOLVED not in _tags(c)]
    nav = nav_source(path, all_paths)
    make = lambda: nbformat.v4.new_markdown_cell(nav, metadata={"tags": ["nav"]})  # noqa: E731
    banner = nbformat.v4.new_markdown_cell(solved_banner(path), metadata={"tags": [SOLVED]})
    nb.cells = [make(), banner, *cells, make()]
    nb.nbformat, nb.nbformat_minor = 4, 5
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem[:2]}-{i:03d}"
    return nb


def _golden_outputs(outputs: list) -> list:
    """The text a golden cell shows: streams and text/plain results, nothing else. Consecutive writes to one stream
    are one output (how the kernel batches a cell's prints varies from run to run; the text does not)."""
    kept = []
    for o in outputs:
        if o.get("output_type") == "stream":
            if kept and kept[-1].get("output_type") == "stream" and kept[-1].get("name") == o.get("name"):
                kept[-1] = copy.deepcopy(kept[-1])
                kept[-1]["text"] = "".join(kept[-1]["text"]) + "".join(o["text"])
                continue
            kept.append(o)
        elif o.get("output_type") in ("execute_result", "display_data") and "text/plain" in o.get("data", {}):
            o = copy.deepcopy(o)
            o["data"] = {"text/plain": o["data"]["text/plain"]}
            o["metadata"] = {}
            kept.append(o)
    return kept


def golden_copy(executed, notebook):
    """The notebook with the golden cells' text outputs of an executed run (same cells, same ids)."""
    golden = copy.deepcopy(notebook)
    for cell, ran in zip(golden.cells, executed.cells, strict=True):
        if cell.cell_type == "code" and GOLDEN in _tags(cell):
            cell.outputs = _golden_outputs(ran.outputs)
            cell.execution_count = ran.execution_count  # nbval refuses stored outputs of an unrun cell
    return golden


def execute(nb, cwd: Path = SOLVED_DIR):
    """Run a copy of ``nb`` top to bottom in a fresh python3 kernel (nbclient); an error stops it."""
    from nbclient import NotebookClient

    nb = copy.deepcopy(nb)
    NotebookClient(nb, timeout=EXECUTE_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


TIMINGS = GOLDEN_DIR / "timings.json"  # seconds each cell took in the last refresh; tools/plan.py adds them up


def cell_seconds(executed) -> dict[str, float]:
    """Cell id -> seconds from the kernel's start of the cell to its reply (nbclient records both timestamps)."""
    from datetime import datetime

    out = {}
    for cell in executed.cells:
        t = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in t and "shell.execute_reply" in t:
            start, end = (datetime.fromisoformat(t[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))
            out[cell["id"]] = round((end - start).total_seconds(), 2)
    return out


def refresh(paths: list[Path]) -> None:
    """Normalise each notebook, execute it, write its golden copy and record how long each cell ran."""
    import json

    all_paths = notebooks()
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings = {k: v for k, v in timings.items() if k in {p.name for p in all_paths}}  # renamed or removed: gone
    for path in paths:
        nb = normalise(nbformat.read(path, as_version=4), path, all_paths)
        executed = execute(nb, path.parent)  # in its own folder, as JupyterLab runs it
        nbformat.write(nb, path)
        nbformat.write(golden_copy(executed, nb), golden_path(path))
        timings[path.name] = cell_seconds(executed)
        TIMINGS.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
        print(f"refreshed {path.relative_to(ROOT)} and {golden_path(path).relative_to(ROOT)}")


def _same_cells(a, b) -> bool:
    def key(nb):
        return [(c.cell_type, c.source, sorted(_tags(c))) for c in nb.cells]

    return key(a) == key(b)


def problems(path: Path, all_paths: list[Path] | None = None) -> list[str]:
    """Every way ``path`` (a notebook) and its golden copy break the policy (empty when they follow it)."""
    all_paths = all_paths or notebooks()
    nb = nbformat.read(path, as_version=4)
    found = []
    if nb.metadata.get("kernelspec") != KERNELSPEC:
        found.append("kernelspec is not python3")
    if nb.metadata.get("language_info") != LANGUAGE_INFO:
        found.append("language_info is not what ipykernel fills in (run tools/nbtools.py refresh): the tab would "
                     "open marked modified")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.outputs or cell.execution_count is not None:
            found.append(f"cell {i}: stored output (notebooks carry none; golden text lives in tests/golden/)")
        if "sys.path" in cell.source:
            found.append(f"cell {i}: edits sys.path (import the installed vnetlab instead)")
        if EXERCISE in _tags(cell) and not cell.metadata.get("jupyter", {}).get("source_hidden"):
            found.append(f"cell {i}: exercise solution not collapsed (run tools/nbtools.py refresh)")
    banners = [c for c in nb.cells if SOLVED in _tags(c)]
    if len(banners) != 1 or nb.cells[1] is not banners[0] or banners[0].source != solved_banner(path):
        found.append("the solved-copy banner is missing or stale (run tools/nbtools.py refresh)")
    navs = [c for c in nb.cells if "nav" in _tags(c)]
    want = nav_source(path, all_paths)
    if (len(navs) != 2 or any(c.source != want for c in navs) or nb.cells[0] is not navs[0]
            or nb.cells[-1] is not navs[-1]):
        found.append("navigation cells are missing or stale (run tools/nbtools.py refresh)")
    found += [f"exercise {p}" for p in exercise_problems(nb)]
    found += link_problems(nb, path.parent)
    if not path.stem.endswith(SOLVED_SUFFIX):
        found.append(f"a solved copy's file name ends in {SOLVED_SUFFIX}.ipynb (its tab must say so)")
    gpath = golden_path(path)
    if not gpath.exists():
        return found + [f"no golden copy {gpath.relative_to(ROOT)} (run tools/nbtools.py refresh)"]
    golden = nbformat.read(gpath, as_version=4)
    if not _same_cells(golden, nb):
        found.append("golden copy's cells differ from the notebook's (run tools/nbtools.py refresh)")
    for i, cell in enumerate(golden.cells):
        if cell.cell_type != "code":
            continue
        if GOLDEN in _tags(cell):
            if not cell.outputs or cell.execution_count is None:
                found.append(f"golden cell {i}: no stored output (run tools/nbtools.py refresh)")
            if _golden_outputs(cell.outputs) != cell.outputs:
                found.append(f"golden cell {i}: output must be text only")
        elif cell.outputs:
            found.append(f"golden copy cell {i}: output in a cell not tagged {GOLDEN}")
    return found


# --------------------------------------------------------------------------------------------------
# The Predict convention: every Predict's answer waits for its run

PREDICT = "*Predict:*"
DETAILS_SUMMARY = "After you run the cell: what happened, and why"
DETAILS_OPEN = f"<details><summary>{DETAILS_SUMMARY}</summary>"
_DETAILS = re.compile(r"<details>.*?</details>", re.S)
README_INTRO_END = "\n## "  # the README's intro: everything before its first "## " heading


def visible(markdown: str) -> str:
    """What a markdown cell shows as opened: everything but its collapsed <details> blocks."""
    return _DETAILS.sub("", markdown)


def term_in(term: str, text: str) -> bool:
    """``term`` in ``text``, case-insensitive, not as part of a longer number or word ("16" is not in "1600")."""
    text, term = " ".join(text.split()), " ".join(term.split())  # a line break inside a term is a space
    return re.search(rf"(?<![\w.]){re.escape(term)}(?![\w])", text, re.I) is not None


class Predict(NamedTuple):
    """One Predict: its markdown cell, the code cells that answer it, and the markdown cell that follows them."""

    key: str  # "20.3"
    answer: list
    cell: int  # index of its markdown cell
    code: list  # indexes of the code cells right after it
    after: int | None  # index of the first markdown cell after those code cells


def predicts(nb) -> list[Predict]:
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or PREDICT not in cell.source:
            continue
        meta = cell.metadata.get("vnetlab", {})
        j = i + 1
        while j < len(nb.cells) and nb.cells[j].cell_type == "code":
            j += 1
        found.append(Predict(str(meta.get("predict", "")), list(meta.get("answer", [])), i, list(range(i + 1, j)),
                             j if j < len(nb.cells) else None))
    return found


def readme_intro() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split(README_INTRO_END, 1)[0]


def overview(nb) -> str:
    """A notebook's visible text before its first numbered section."""
    out = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"(?m)^## 1\. ", cell.source):
            break
        if cell.cell_type == "markdown" and "nav" not in _tags(cell):
            out.append(visible(cell.source))
    return "\n".join(out)


def predict_problems(path: Path, earlier: list[Path] = (), outputs=None) -> list[str]:
    """Every way the Predicts of ``path`` break the convention (notebooks/glossary.md has the rules' reasons):
    a Predict is a line starting *Predict:* alone in its markdown cell, with metadata vnetlab.predict "NN.k" (in
    order) and vnetlab.answer (the terms that give its answer away); code cells follow it; no answer term is visible
    as opened before them (this notebook's visible markdown up to the Predict, the README's intro, the glossary,
    notebook 00's overview, the visible text of every earlier notebook), nor in the first markdown cell after them
    outside a collapsed <details> whose summary is the fixed line; every answer term is in that explanation or in
    the golden output of the answering cells (``outputs``: a code cell's source -> its text), so the terms are the
    answer's."""
    nb = nbformat.read(path, as_version=4)
    key = path.name[:2]
    found = []
    context = {"the README's intro": readme_intro(), "notebooks/glossary.md": GLOSSARY.read_text()}
    first = notebooks()[0]
    context["notebook 00's overview"] = overview(nbformat.read(first, as_version=4))
    for e in earlier:
        enb = nbformat.read(e, as_version=4)
        context[f"notebook {e.name[:2]}"] = "\n".join(visible(c.source) for c in enb.cells
                                                      if c.cell_type == "markdown")
    for k, p in enumerate(predicts(nb), 1):
        where = f"Predict {key}.{k} (cell {p.cell})"
        src = nb.cells[p.cell].source
        if src.count(PREDICT) != 1 or not re.search(rf"(?m)^{re.escape(PREDICT)}", src):
            found.append(f"{where}: a Predict cell holds one Predict, on a line starting {PREDICT}")
        if p.key != f"{key}.{k}":
            found.append(f"{where}: metadata vnetlab.predict is {p.key!r}, want '{key}.{k}'")
        if not p.answer or not all(isinstance(t, str) and t.strip() for t in p.answer):
            found.append(f"{where}: no vnetlab.answer terms (the strings that would give its answer away)")
        if not p.code:
            found.append(f"{where}: no code cell right after it to show the answer")
        before = "\n".join(visible(c.source) for c in nb.cells[:p.cell + 1] if c.cell_type == "markdown")
        shown = {"this notebook before its code cell": before, **context}
        explanation = ""
        if p.after is not None:
            nxt = nb.cells[p.after].source
            shown["the cell after its code cell, outside <details>"] = visible(nxt)
            explanation = "\n".join(_DETAILS.findall(nxt))
            for summary in re.findall(r"<summary>(.*?)</summary>", nxt, re.S):
                if summary != DETAILS_SUMMARY:
                    found.append(f"{where}: <details> summary {summary!r} is not {DETAILS_SUMMARY!r}")
        if explanation and p.answer and not any(term_in(t, explanation) for t in p.answer):
            found.append(f"{where}: no answer term is in its <details> explanation (name one it states, so that "
                         "the check sees the explanation if it ever leaks)")
        ran = "\n".join((outputs or {}).get(nb.cells[i].source, "") for i in p.code)
        for term in p.answer:
            for name, text in shown.items():
                if term_in(term, text):
                    found.append(f"{where}: answer term {term!r} visible as opened in {name}")
            if not (term_in(term, explanation) or term_in(term, ran)):
                found.append(f"{where}: answer term {term!r} is neither in its <details> explanation nor in what "
                             "its cells print")
    return found


def answers_shown(nb, shown: list[str]) -> list[str]:
    """Every Predict answer term a reader sees as opened: ``shown`` is the text each cell of ``nb`` shows on screen
    (in a browser: a markdown cell's rendered innerText, which leaves out a collapsed <details>), and a Predict's
    terms must not be in any cell up to and including the first markdown cell after its code cells."""
    found = []
    for p in predicts(nb):
        end = p.after if p.after is not None else len(nb.cells) - 1
        for i in range(end + 1):
            if nb.cells[i].cell_type != "markdown":
                continue
            found += [f"Predict {p.key} (cell {p.cell}): {t!r} on screen in cell {i}" for t in p.answer
                      if term_in(t, shown[i])]
    return found


def golden_text(path: Path) -> dict[str, str]:
    """A code cell's source -> the text its golden copy stores (streams and text/plain)."""
    gpath = golden_path(path)
    if not gpath.exists():
        return {}
    golden = nbformat.read(gpath, as_version=4)
    return {c.source: "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                              for o in c.get("outputs", [])) for c in golden.cells if c.cell_type == "code"}


def exercise_problems(nb) -> list[str]:
    """Each exercise cell is followed by a checker cell ``exercises.check(key, name)`` that the placeholder feeds."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        if EXERCISE not in _tags(cell):
            continue
        nxt = code[i + 1] if i + 1 < len(code) else None
        if nxt is None or not CHECK_CALL.search(nxt.source):
            found.append(f"cell {cell.get('id')}: no exercises.check(key, name) cell after it")
    return found


# a markdown link's target, [text](target), or an HTML one, href="target" / src="target"
_LINK = re.compile(r"(?P<head>\]\(|(?:href|src)=\")(?P<target>[^)\"\s]+)")


def _local(target: str) -> bool:
    """A link to a file of the repository (not a URL, a mail address or an anchor in the same notebook)."""
    return not re.match(r"[a-z][a-z0-9+.-]*:|#|/", target)


def link_problems(nb, folder: Path) -> list[str]:
    """Every link in a markdown cell of ``nb`` (saved in ``folder``) to a file that is not there."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for m in _LINK.finditer(cell.source):
            target = m["target"].split("#", 1)[0]
            if target and _local(target) and not (folder / target).exists():
                found.append(f"cell {i}: link to {m['target']} finds no file in {folder.relative_to(ROOT)}")
    return found


def student_link(target: str) -> str:
    """A solved copy's link as the attendees' copy (one folder up) writes it: a solved notebook becomes its
    attendees' copy, every other file the same file seen from notebooks/ (../glossary.md -> glossary.md)."""
    if not _local(target):
        return target
    path, hash_, anchor = target.partition("#")
    if not path:
        return target
    seen = posixpath.normpath(posixpath.join(SOLVED_DIR.name, path))  # relative to notebooks/
    folder, base = posixpath.split(seen)
    if folder == SOLVED_DIR.name and re.fullmatch(rf"\d\d_\w+{SOLVED_SUFFIX}\.ipynb", base):
        seen = base.replace(f"{SOLVED_SUFFIX}.ipynb", ".ipynb")
    return seen + hash_ + anchor


def placeholder(name: str) -> str:
    return f"{name} = None  # your answer here: replace None, run this cell, then run the check below\n"


def student_copy(nb):
    """No outputs, no golden tags; each exercise cell becomes a placeholder defining its checker's name."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if SOLVED not in _tags(c)]
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("jupyter", None)
        cell.metadata["tags"] = [t for t in _tags(cell) if t != GOLDEN]
        if not cell.metadata["tags"]:
            del cell.metadata["tags"]
        if EXERCISE in _tags(cell):
            match = CHECK_CALL.search(code[i + 1].source)
            cell.source = placeholder(match["name"])
    for cell in nb.cells:
        if cell.cell_type == "markdown":  # links to the attendees' copies and the glossary beside them
            cell.source = _LINK.sub(lambda m: m["head"] + student_link(m["target"]), cell.source)
    return nb


def write_students() -> None:
    for path in notebooks():
        nbformat.write(student_copy(nbformat.read(path, as_version=4)), student_path(path))
        print(f"wrote {student_path(path).relative_to(ROOT)}")


# --------------------------------------------------------------------------------------------------
# The static copy (site/)

HTML_TEMPLATE_DIR = Path(__file__).resolve().parent / "html_template"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PANEL_NOTE = ('<p class="vnetlab-panel-note">An interactive panel: run this notebook in JupyterLab to move its '
              "controls.</p>")


def static_outputs(nb):
    """Outputs as a page without a kernel can show them: a widget shows the image its output carries (its PNG
    fallback), else a note; widget state is dropped (nothing could render it offline)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                if "image/png" not in data:
                    o["data"] = {"text/html": PANEL_NOTE}
    return nb


def static_details(nb):
    """A collapsed explanation as one HTML block: nbconvert's markdown renderer ends an HTML block at a blank line
    and would close <details> before the explanation, leaving it visible; its body is rendered here instead."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    def one_block(m) -> str:
        body = markdown2html_mistune(m["body"].strip())
        return m["head"] + re.sub(r"\n\s*\n", "\n", body).strip() + "</details>"

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"(?P<head><details><summary>.*?</summary>)(?P<body>.*?)</details>", one_block,
                                 cell.source, flags=re.S)
    return nb


def _site_links(html: str) -> str:
    """Links between notebooks (and to the glossary) point at their HTML pages, one per notebook name."""
    html = re.sub(rf'href="(\.\./)?([0-9][0-9]_[A-Za-z0-9_]+?)(?:{SOLVED_SUFFIX})?\.ipynb(#[^"]*)?"',
                  r'href="\2.html\3"', html)
    return re.sub(r'href="(\.\./)?glossary\.md(#[^"]*)?"', r'href="glossary.html\2"', html)


def _page(title: str, body_html: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title + "</title>"
            "<style>body{font:15px/1.5 sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
            "code{background:#f4f4f4}dt{font-weight:bold;margin-top:.8em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}"
            "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap;word-break:break-all}</style></head><body>"
            '<nav><a href="index.html">vnetlab: all notebooks</a> · <a href="glossary.html">Glossary</a> · '
            '<a href="handout.html">Handout</a></nav>'
            + body_html + "</body></html>\n")


def build_site(paths: list[Path], out: Path) -> list[Path]:
    """Execute each notebook (nbclient) and write it as static HTML with its figures (nbconvert, no network), then
    the glossary, the handout (docs/handout.md) and the index linking them all."""
    import html as html_lib

    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="vnetlab_static", extra_template_basedirs=[str(HTML_TEMPLATE_DIR)],
                            embed_images=True)
    written, items = [], []
    for path in paths:
        nb = static_details(static_outputs(execute(nbformat.read(path, as_version=4), path.parent)))
        title = _title(path)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
        target = out / f"{name(path)}.html"
        target.write_text(_site_links(body))
        written.append(target)
        items.append(f'<li><a href="{target.name}">{html_lib.escape(title)}</a></li>')
        print(f"wrote {target}")
    glossary = markdown2html_mistune(GLOSSARY.read_text())
    (out / "glossary.html").write_text(_site_links(_page("vnetlab: glossary", glossary)))
    handout = markdown2html_mistune(HANDOUT.read_text())
    (out / "handout.html").write_text(_site_links(_page("vnetlab: handout", handout)))
    index = ("<h1>vnetlab: the workbook, executed</h1><p>A static copy of every notebook with its figures, readable "
             "without installing anything. To run the notebooks and move the controls, see the README.</p><ol>"
             + "".join(items) + '</ol><p><a href="handout.html">Handout</a>: the two changes, the key numbers and '
             'the commands, on one page. <a href="glossary.html">Glossary</a></p>')
    (out / "index.html").write_text(_page("vnetlab", index))
    return [*written, out / "glossary.html", out / "handout.html", out / "index.html"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("refresh", "check", "student", "html"):
        print(__doc__)
        return 2
    if argv[0] == "refresh":
        paths = [Path(p).resolve() for p in argv[1:]] or notebooks()
        refresh(paths)
        write_students()
        return 0
    if argv[0] == "student":
        write_students()
        return 0
    if argv[0] == "html":
        out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else SITE
        build_site(notebooks(), out.resolve())
        return 0
    bad = 0
    for path in notebooks():
        for problem in problems(path):
            print(f"{path.name}: {problem}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
