"""The notebook policy (tools/nbtools.py): the solved copies (notebooks/solved/) carry no outputs, their golden
copies in tests/golden/ hold the same cells plus the golden text nbval compares, the attendees' copies
(notebooks/NN_*.ipynb) are current and runnable, and the links of both resolve; the template every notebook follows;
the glossary. nbval itself runs the golden and attendees' copies (pyproject testpaths)."""

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from vnetlab import exercises, rx

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("nbtools", ROOT / "tools" / "nbtools.py")  # a script, not the package
nbtools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtools)

NOTEBOOKS = nbtools.notebooks()
SECTIONS = ("## Overview", "## Prerequisites", "## Imports", "## Exercises", "## Summary", "## What's next",
            "## References")
# The words the workbook uses before it explains them; each has a glossary entry.
GLOSSARY_TERMS = ("sk_buff", "linear part", "headroom", "tailroom", "frags", "frag_list", "truesize", "head_frag",
                  "skb_shared_info", "page frag", "NAPI", "GRO", "GSO", "TSO", "USO", "fraglist GSO", "EWMA",
                  "GOOD_COPY_LEN", "vnet header", "XDP", "NETIF_F", "hw_features", "wanted_features", "ethtool -k",
                  "ethtool -K", "[fixed]", "hwaccel", "order-N pages", "DODGY", "ts, fr", "TCG", "net-next", "kprobe",
                  "inferred")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def test_there_is_a_series():
    assert [p.name[:2] for p in NOTEBOOKS][:4] == ["00", "05", "10", "20"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_output_policy(path):
    assert nbtools.problems(path) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_as_opened_shows_no_output(path):
    # readers open notebooks/: no Predict answer and no checker verdict is stored there
    for cell in _read(path).cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_golden_copy_is_the_notebook_with_golden_text(path):
    nb, golden = _read(path), _read(nbtools.golden_path(path))
    # running the golden copy is running the notebook: the same cells, in order
    assert [(c.cell_type, c.source) for c in golden.cells] == [(c.cell_type, c.source) for c in nb.cells]
    golden_cells = [c for c in golden.cells if c.cell_type == "code" and nbtools.GOLDEN in _tags(c)]
    assert golden_cells, "no cell tagged nbval-check-output: nbval would compare nothing"
    for cell in golden_cells:
        text = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert text.strip(), f"empty golden output: {cell.source[:60]}"
        assert "<Figure size" not in text and "Traceback" not in text, cell.source[:60]


def test_pytest_runs_the_golden_and_student_copies_only():
    opts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert set(opts["testpaths"]) == {"tests", "notebooks"}
    assert "golden" not in opts["norecursedirs"]
    assert nbtools.SOLVED_DIR.name in opts["norecursedirs"]  # the golden copies run the solved copies' cells
    assert "--nbval-lax" in opts["addopts"]  # lax: only golden-tagged cells are compared, every cell must run
    assert nbtools.GOLDEN_DIR.parent.name == "tests"


def test_nbval_compares_the_golden_text(tmp_path):
    """With the project's own pytest settings, a golden copy whose stored text differs from what the cell prints
    fails, and one that matches passes."""
    def notebook(printed: str):
        cell = nbformat.v4.new_code_cell('print("1536 - 12 - 1042 =", 1536 - 12 - 1042)',
                                         metadata={"tags": [nbtools.GOLDEN]})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        cell.execution_count = 1
        nb = nbformat.v4.new_notebook(cells=[cell])
        nb.metadata["kernelspec"] = dict(nbtools.KERNELSPEC)
        return nb

    nbformat.write(notebook("1536 - 12 - 1042 = 482\n"), tmp_path / "right.ipynb")
    nbformat.write(notebook("1536 - 12 - 1042 = 481\n"), tmp_path / "wrong.ipynb")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                          str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert "1 failed, 1 passed" in run.stdout, run.stdout[-2000:]
    assert "wrong.ipynb::Cell 0" in run.stdout and "481" in run.stdout  # source: the wrong golden text above


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_template(path):
    text = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions), [s for s, p in zip(SECTIONS, positions) if p < 0]
    assert positions == sorted(positions)
    assert "Predict" in text  # predict, then check
    assert "fb32856b16ad" in text or "2e4ef10f5850" in text  # references to the patches
    assert "](../glossary.md)" in text  # the navigation links the glossary, one folder up


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_have_checkers(path):
    nb = _read(path)
    exercise_cells = [c for c in nb.cells if nbtools.EXERCISE in _tags(c)]
    assert exercise_cells and nbtools.exercise_problems(nb) == []
    keys = [m["key"] for c in nb.cells for m in nbtools.CHECK_CALL.finditer(c.source)]
    assert len(keys) == len(exercise_cells) and set(keys) <= set(exercises.EXERCISES)
    assert all(k.startswith(path.name[:2] + ".") for k in keys), keys


def _shown_text(cell) -> str:
    if cell.cell_type == "markdown":  # the plan's "Time to learn: N minutes" line states minutes, not an answer
        return re.sub(r"\*\*Time to learn\*\*:[^\n]*", "", cell.source)
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", []))


def _exercises() -> list[tuple[Path, int, str]]:
    """(notebook, index of the exercise cell in its golden copy, key) for every exercise of every notebook."""
    found = []
    for path in NOTEBOOKS:
        cells = _read(nbtools.golden_path(path)).cells
        for i, cell in enumerate(cells):
            if nbtools.EXERCISE in _tags(cell):
                found.append((path, i, nbtools.CHECK_CALL.search(cells[i + 1].source)["key"]))
    return found


# Answers from a closed set of names: printed everywhere as the vocabulary, so "printed above" cannot judge them.
VOCABULARY = set(rx.PATHS)  # True/False are skipped too


def _param(item: tuple[Path, int, str]):
    path, i, key = item
    return pytest.param(path, i, key, id=key)


def _printed(value, text: str) -> bool:
    if isinstance(value, str):
        return re.search(rf"(?<![\w.+-]){re.escape(value)}(?![\w+-]|\.\w)", text) is not None
    if isinstance(value, float):
        shown = {f"{value:g}"} | {f"{value:.{d}f}" for d in (1, 2, 3) if round(value, d) == value}
    else:
        shown = {str(value), f"{value:,}"}
    return any(re.search(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)", text) for s in shown)


def test_printed_finds_numbers_and_names():
    assert _printed(482, "tailroom 482 bytes") and not _printed(482, "1482 bytes") and not _printed(48, "4.8")
    assert _printed(1448, "MSS 1,448") and _printed(0.023, "share 0.023") and not _printed(0.023, "0.0231")
    assert _printed("eth0.10", "at eth0.10: cut") and not _printed("eth0", "eth0.10")


@pytest.mark.parametrize(("path", "index", "key"), [_param(e) for e in _exercises()])
def test_every_exercise_asks_something_new(path, index, key):
    """The answer the checker wants is printed nowhere above the exercise: not in markdown, not in the golden output
    of any cell above it (plan_conventions)."""
    answer = exercises.solution(key)
    if isinstance(answer, bool) or isinstance(answer, str) and answer in VOCABULARY:
        pytest.skip(f"{key}'s answer {answer!r} is a word of the vocabulary")
    cells = _read(nbtools.golden_path(path)).cells
    above = "\n".join(_shown_text(c) for c in cells[:index])
    assert not _printed(answer, above), f"{key}: its answer {answer!r} is printed above it"


_CONSTANT = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")  # UDP_GRO_CNT_MAX, VIRTIO_XDP_HEADROOM, NET_IP_ALIGN


@pytest.mark.parametrize(("path", "index", "key"), [_param(e) for e in _exercises()])
def test_every_constant_an_exercise_names_is_given_before_it(path, index, key):
    """Each kernel constant the question or its hint names appears above the exercise (text, code or output) or in
    the exercise's own statement, so an attendee can work it out; a hint that sends the reader to a kernel file for
    it ("look that constant up in include/...") gives it by reference."""
    ex = exercises.EXERCISES[key]
    cells = _read(nbtools.golden_path(path)).cells
    above = "\n".join(_shown_text(c) + "\n" + (c.source if c.cell_type == "code" else "") for c in cells[:index])
    looked_up = set(_CONSTANT.findall(ex.hint.split("look that constant up", 1)[0][-120:])) if (
        "look that constant up" in ex.hint) else set()
    missing = sorted(n for n in set(_CONSTANT.findall(ex.question + " " + ex.hint)) - looked_up
                     if n not in above)
    assert not missing, f"{key} needs {missing}, which the notebook never gives above it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_copy_is_current_and_answers_nothing(path):
    student = nbtools.student_path(path)
    assert student.exists(), "run: python tools/nbtools.py student"
    want = nbtools.student_copy(_read(path))
    got = _read(student)
    assert got == want, "student copy is stale: python tools/nbtools.py student"
    code = [c for c in got.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        assert cell.outputs == [] and nbtools.GOLDEN not in _tags(cell)
        if nbtools.EXERCISE in _tags(cell):
            name = nbtools.CHECK_CALL.search(code[i + 1].source)["name"]
            assert cell.source == nbtools.placeholder(name)  # defines the checker's name: Run All works
    assert "](glossary.md)" in "\n".join(c.source for c in got.cells if c.cell_type == "markdown")  # beside it
    assert student.name == path.name.replace("-solved.ipynb", ".ipynb") and student.parent == path.parent.parent


@pytest.mark.parametrize("path", [*NOTEBOOKS, *(nbtools.student_path(p) for p in NOTEBOOKS)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves_in_its_copy(path):
    """A solved copy links solved copies and ../glossary.md, an attendees' copy links attendees' copies and
    glossary.md: every link of either finds its file from the folder the copy is in."""
    nb = _read(path)
    assert nbtools.link_problems(nb, path.parent) == []
    targets = [m["target"] for c in nb.cells if c.cell_type == "markdown" for m in nbtools._LINK.finditer(c.source)]
    notebooks = [t for t in targets if t.split("#")[0].endswith(".ipynb")]
    assert notebooks, "no link to a notebook (the navigation links its neighbours)"
    solved_copy = path.parent == nbtools.SOLVED_DIR
    # an attendee's links never lead into solved/, a solved copy's only to solved copies (its banner aside)
    assert all(("solved" in t) == solved_copy for t in notebooks if not t.startswith("../")), notebooks


def test_link_check_finds_a_broken_link(tmp_path):
    nb = _predict_notebook(nbformat.v4.new_markdown_cell("see [05](05_primer_skb_gro_gso.ipynb), [g](../glossary.md)"))
    assert len(nbtools.link_problems(nb, nbtools.NOTEBOOKS)) == 1  # glossary.md is not one folder up from notebooks/
    assert nbtools.link_problems(nb, nbtools.SOLVED_DIR) == [  # no 05_primer_skb_gro_gso.ipynb in solved/
        "cell 0: link to 05_primer_skb_gro_gso.ipynb finds no file in notebooks/solved"]
    assert nbtools.student_link("10_receive_buffers_and_memory_layout-solved.ipynb#4") == \
        "10_receive_buffers_and_memory_layout.ipynb#4"
    assert nbtools.student_link("../glossary.md") == "glossary.md"
    assert nbtools.student_link("../../data/kernels.toml") == "../data/kernels.toml"
    assert nbtools.student_link("https://git.kernel.org/x.ipynb") == "https://git.kernel.org/x.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_overview_states_two_to_four_learning_objectives(path):
    """plan_conventions: each Overview has a "You will be able to:" list of 2-4 objectives (The Carpentries)."""
    text = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    overview = text.split("## Overview", 1)[1].split("## Prerequisites", 1)[0]
    assert "You will be able to:" in overview
    items = re.findall(r"^- .+", overview.split("You will be able to:", 1)[1].split("\n\n", 1)[0], re.M)
    assert 2 <= len(items) <= 4, items


def test_glossary_defines_every_term():
    text = nbtools.GLOSSARY.read_text()
    entries = re.findall(r"^\*\*(.+?)\*\*$", text, re.M)
    missing = [t for t in GLOSSARY_TERMS if not any(t in e for e in entries)]
    assert not missing, missing
    for target in re.findall(r"\]\(([^)#]+\.ipynb)\)", text):
        assert (nbtools.NOTEBOOKS / target).exists(), target


# --- The Predict convention (notebooks/glossary.md, "Predict"): every Predict's answer waits for its run ---------

def _copies() -> list[tuple[Path, list[Path]]]:
    """(notebook, the notebooks before it) for every instructor copy and every student copy."""
    students = [nbtools.student_path(p) for p in NOTEBOOKS]
    return [(p, NOTEBOOKS[:i]) for i, p in enumerate(NOTEBOOKS)] + [(p, students[:i]) for i, p in enumerate(students)]


@pytest.mark.parametrize(("path", "earlier"), _copies(), ids=lambda x: x.relative_to(ROOT).as_posix()
                         if isinstance(x, Path) else "")
def test_every_predict_waits_for_its_run(path, earlier):
    """Every Predict, not a sample: its answer terms are hidden as opened (before its code cell, and after it outside
    a collapsed <details>), not given by the README's intro, the glossary, notebook 00's overview or an earlier
    notebook, and are what its explanation or its cells' golden output says."""
    outputs = nbtools.golden_text(nbtools.solved_path(path))
    assert nbtools.predict_problems(path, earlier, outputs) == []


def test_every_notebook_asks_predicts():
    counts = {p.name[:2]: len(nbtools.predicts(_read(p))) for p in NOTEBOOKS}
    assert all(counts.values()), counts


def _predict_notebook(*cells):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = dict(nbtools.KERNELSPEC)
    return nb


@pytest.mark.parametrize(("after", "expected"), [
    (nbtools.DETAILS_OPEN + "\n\nThe tailroom is 4242 bytes.\n\n</details>", []),
    ("The tailroom is 4242 bytes.", ["visible as opened in the cell after its code cell"]),
    ("<details><summary>4242 bytes</summary>\n\nThe tailroom is 4242 bytes.\n\n</details>", ["summary"]),
])
def test_predict_check_catches_a_visible_answer(tmp_path, after, expected):
    """The check itself: an answer in the markdown under the code cell, or in a <details> summary, fails it."""
    path = tmp_path / "99_probe.ipynb"
    md = nbformat.v4.new_markdown_cell("*Predict:* how much tailroom is left?",
                                       metadata={"vnetlab": {"predict": "99.1", "answer": ["4242 bytes"]}})
    nbformat.write(_predict_notebook(md, nbformat.v4.new_code_cell("print('tailroom 4242')"),
                                     nbformat.v4.new_markdown_cell(after)), path)
    found = nbtools.predict_problems(path, [], {})
    assert all(any(e in f for f in found) for e in expected) and bool(found) == bool(expected), found


def test_predict_check_catches_an_answer_before_the_question(tmp_path):
    path = tmp_path / "99_probe.ipynb"
    md = nbformat.v4.new_markdown_cell("A made-up frame leaves 4242 bytes.\n\n*Predict:* how much tailroom is left?",
                                       metadata={"vnetlab": {"predict": "99.1", "answer": ["4242 bytes"]}})
    nbformat.write(_predict_notebook(md, nbformat.v4.new_code_cell("print('4242 bytes')")), path)
    assert any("visible as opened in this notebook before" in f for f in nbtools.predict_problems(path, [], {}))
    assert nbtools.term_in("10 bytes", "leaves 10\nbytes") and not nbtools.term_in("16", "1600 and 2.16")


def test_answers_shown_reads_what_the_screen_shows():
    """The browser test's check: a term in a cell's shown text up to the explanation is a leak; the same term inside
    the collapsed block (absent from the shown text) is not."""
    md = nbformat.v4.new_markdown_cell("*Predict:* how much?", metadata={"vnetlab": {"predict": "99.1",
                                                                                      "answer": ["4242 bytes"]}})
    nb = _predict_notebook(md, nbformat.v4.new_code_cell("print(4242)"),
                           nbformat.v4.new_markdown_cell(nbtools.DETAILS_OPEN + "\n\n4242 bytes\n\n</details>"))
    assert nbtools.answers_shown(nb, ["*Predict:* how much?", "", ""]) == []
    assert nbtools.answers_shown(nb, ["*Predict:* how much?", "", "4242 bytes"]) != []


def test_notebooks_store_the_language_info_ipykernel_fills_in():
    """An untouched notebook must not open marked modified: JupyterLab writes the kernel's language_info into the
    metadata on open, so every notebook stores what ipykernel's kernel_info reply holds (IPythonKernel.language_info)
    for the Python the lock targets."""
    from ipykernel.ipkernel import IPythonKernel

    kernel = dict(IPythonKernel.language_info)
    stored = dict(nbtools.LANGUAGE_INFO)
    assert stored.pop("version").rsplit(".", 1)[0] == kernel.pop("version").rsplit(".", 1)[0]  # same 3.11
    assert stored == kernel
    for path in [*NOTEBOOKS, *(nbtools.student_path(p) for p in NOTEBOOKS)]:
        assert _read(path).metadata["language_info"] == nbtools.LANGUAGE_INFO, path.name


def test_static_copy_keeps_the_explanation_collapsed():
    """nbconvert's HTML export (the static copy's template) closes a <details> written over several markdown blocks
    before its body, which would leave the explanation visible in site/; nbtools.static_details makes the block one
    piece of HTML, which the export keeps whole."""
    from nbconvert import HTMLExporter

    src = nbtools.DETAILS_OPEN + "\n\nThe tailroom is **4242** bytes.\n\n</details>"
    inside = re.compile(r"<details><summary>[^<]*</summary>\s*<p>The tailroom is <strong>4242</strong> bytes\.</p>\s*"
                        r"</details>")
    exporter = HTMLExporter(template_name="vnetlab_static", extra_template_basedirs=[str(nbtools.HTML_TEMPLATE_DIR)],
                            embed_images=True)  # as build_site exports: embedding images parses each HTML block

    def html(nb) -> str:
        return exporter.from_notebook_node(nb, resources={"metadata": {"name": "probe"}})[0]

    assert not inside.search(html(_predict_notebook(nbformat.v4.new_markdown_cell(src))))  # the export alone
    assert inside.search(html(nbtools.static_details(_predict_notebook(nbformat.v4.new_markdown_cell(src)))))
