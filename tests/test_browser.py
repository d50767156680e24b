"""What a reader sees: every solved copy and every attendees' copy in JupyterLab in headless Chromium, then the
static HTML copy.

JupyterLab runs as the README starts it (tests/labharness.py): from a venv made by the README's open command's
install part (no [test] extras), with its config, serving the repository root.

The start page: the server's default URL is the attendees' copy of notebook 00, its tab named as that file (a
solved copy's tab says "-solved"), and no toast (JupyterLab's news or update notification) covers it; a file a
notebook cites (data/, lab/) opens from the served root.

Per notebook (and per student copy):
- as opened, nothing is answered: no output in any code cell, no golden text (tests/golden/) in the page, and no
  Predict's answer terms (its cell metadata) in what the markdown cells show up to its explanation, which stays
  collapsed; the tab opens unmodified;
- after "Run All Cells": every code cell ran, no error output, no stderr output (JupyterLab's pink box), no figure
  shown as text ("<Figure size ..."), every cell that draws a figure shows an <img> that decoded (naturalWidth > 0),
  every panel shows its PNG;
- widgets: no slider track 0 px wide, no cut-off label or readout (scrollWidth > clientWidth), no dropdown whose
  chosen option is wider than the box; moving one control per panel changes its figure (the PNG bytes);
- the notebook file is not written back.
The static HTML copy is built with the documented command (tools/nbtools.py html) into a temporary directory and
opened from file://: every image decodes, every figure cell has one, and the page asks the network for nothing.
Screenshots go to artifacts/browser/ (git-ignored). Skips without Debian's chromium; playwright is a [test]
dependency, so without it the tests fail (a broken install, not a missing browser). Playwright drives
/usr/bin/chromium: it never downloads a browser.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import labharness
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
ARTIFACTS = ROOT / "artifacts" / "browser"
RUN_TIMEOUT_MS = 180_000
ROUND_TRIP_TIMEOUT_MS = 20_000
# A figure IPython could not show as an image: matplotlib's repr, "<Figure size 900x300 with 2 Axes>" (or a subclass's)
FIGURE_AS_TEXT = re.compile(r"<\w*Figure size \d+x\d+[^>]*>")

pytestmark = pytest.mark.browser

if not Path(labharness.CHROMIUM).exists():
    pytest.skip(f"browser test: {labharness.CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)


_spec = importlib.util.spec_from_file_location("nbtools", ROOT / "tools" / "nbtools.py")  # a script, not the package
nbtools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtools)

NOTEBOOKS = nbtools.notebooks()
COPIES = [*NOTEBOOKS, *(nbtools.student_path(p) for p in NOTEBOOKS)]

# Lab settings for the run: never write the notebooks back (autosave off), and render every cell (no
# windowing), so that every output is in the DOM.
def _copy_id(path: Path) -> str:
    return ("solved-" if path.parent == nbtools.SOLVED_DIR else "student-") + path.stem[:2]


def _shot(name: str) -> str:
    return str(ARTIFACTS / f"{name}.png")


# --------------------------------------------------------------------------------------------------
# What each notebook should show, from its source

def _imported(nb, package: str) -> set[str]:
    """Names bound by `from <package> import a, b` in the notebook's code cells."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                names |= {a.asname or a.name for a in node.names}
    return names


def _last_line(source: str) -> str:
    lines = [ln for ln in source.strip().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return lines[-1].strip() if lines else ""


def figure_cells(path: Path) -> tuple[list[int], list[int]]:
    """(static figure cells, panel cells), as indices among the code cells: a cell whose last line calls a
    vnetlab.viz drawing (`memory.draw_skb(...)`) or a vnetlab.widgets panel (`rxpanels.buffer_panel(...)`)."""
    nb = nbformat.read(path, as_version=4)
    viz = _imported(nb, "vnetlab.viz") - {"style"}
    widgets = _imported(nb, "vnetlab.widgets")
    code = [c for c in nb.cells if c.cell_type == "code"]
    static, panels = [], []
    for i, cell in enumerate(code):
        last = _last_line(cell.source)
        head = last.split(".", 1)[0]
        if head in viz and re.match(r"\w+\.draw_\w*\(", last):
            static.append(i)
        elif head in widgets and re.match(r"\w+\.\w+\(", last):
            panels.append(i)
    return static, panels


def golden_lines(path: Path) -> list[str]:
    """The distinctive lines of the golden text outputs of the notebook behind ``path`` (a notebook or its
    student copy), which must not be on the page before the cells run."""
    golden = nbformat.read(nbtools.golden_path(nbtools.solved_path(path)), as_version=4)
    sources = "\n".join(c.source for c in golden.cells)
    lines = set()
    for cell in golden.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") or out.get("data", {}).get("text/plain", "")
            lines |= {ln.strip() for ln in text.splitlines() if len(ln.strip()) >= 12 and ln.strip() not in sources}
    return sorted(lines)


# --------------------------------------------------------------------------------------------------
# JupyterLab and Chromium

@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab from the README's venv on 127.0.0.1 serving the repository root, as a reader starts it (no extra
    matplotlib backend), stopped whatever happens."""
    with labharness.jupyterlab(tmp_path_factory.mktemp("lab"), ROOT, ARTIFACTS / "jupyterlab.log",
                               env={"MPLBACKEND": None}) as server:
        yield server


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    """Debian's Chromium, headless, with a fresh profile directory."""
    with labharness.chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


# JavaScript run in the page; `jupyterapp` is exposed by --LabApp.expose_app_in_browser.
_NOTEBOOK_READY = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && w.content && w.content.widgets.length > 0
            && w.content.widgets.every(c => c.isAttached || c.node.isConnected));
}"""
_RUN_FINISHED = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  const pending = [...w.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
  return !!k && k.status === 'idle' && !pending;
}"""
_CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .map(c => ({count: c.model.executionCount,
              outputs: c.model.outputs.length,
              errors: c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                .map(o => o.ename + ': ' + o.evalue),
              stderr: c.model.outputs.toJSON().filter(o => o.output_type === 'stream' && o.name === 'stderr')
                .map(o => String(o.text).slice(0, 300)),
              source: c.model.sharedModel.getSource().slice(0, 80)}))"""
# What each cell shows on screen: a rendered markdown cell's innerText (a collapsed <details> is not rendered, so its
# text is not in it), nothing for a code cell (its source is the question, not an answer).
_SHOWN = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .map(c => c.model.type === 'markdown' ? c.node.innerText : '')"""
_IMG_DIGEST = """async (img) => {
  const buf = await (await fetch(img.src)).arrayBuffer();
  const hash = await crypto.subtle.digest('SHA-256', buf);
  return [img.src, [...new Uint8Array(hash)].map(b => b.toString(16).padStart(2, '0')).join('')];
}"""
# Widget layout faults a reader sees: collapsed slider tracks, labels and readouts cut off, dropdowns whose chosen
# option does not fit.
_WIDGET_FAULTS = """(root) => {
  const faults = [];
  const visible = el => el.offsetParent !== null;
  const text = el => (el.innerText || el.textContent || '').trim();
  for (const s of root.querySelectorAll('.widget-slider, .jupyter-widget-slider')) {
    if (!visible(s)) continue;
    const track = s.querySelector('.noUi-target, .slider-container, .slider');
    const w = track ? track.getBoundingClientRect().width : 0;
    if (w < 1) faults.push(`slider '${text(s.querySelector('.widget-label')) || '?'}': track ${w} px wide`);
  }
  const labels = '.widget-label, .widget-label-basic, .widget-readout, .widget-inline-hbox label, '
               + '.widget-checkbox label, .widget-toggle-button, .widget-button, .widget-html-content';
  for (const el of root.querySelectorAll(labels)) {
    if (!visible(el) || !text(el)) continue;
    if (el.scrollWidth > el.clientWidth + 1)
      faults.push(`'${text(el).slice(0, 40)}' cut off (${el.scrollWidth} > ${el.clientWidth} px)`);
  }
  const ctx = document.createElement('canvas').getContext('2d');
  for (const sel of root.querySelectorAll('.widget-dropdown select')) {
    if (!visible(sel) || sel.selectedIndex < 0) continue;
    const st = getComputedStyle(sel);
    ctx.font = `${st.fontStyle} ${st.fontWeight} ${st.fontSize} ${st.fontFamily}`;
    const want = ctx.measureText(sel.options[sel.selectedIndex].text).width;
    const room = sel.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    if (want > room + 1)
      faults.push(`dropdown '${sel.options[sel.selectedIndex].text}' cut off (${Math.round(want)} > ${room} px)`);
  }
  return faults;
}"""


def _wait_image_change(page, img, before_src: str, what: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("([img, src]) => img.src && img.src !== src && img.complete && img.naturalWidth > 0",
                               arg=[img.element_handle(), before_src], timeout=ROUND_TRIP_TIMEOUT_MS)
    except PlaywrightTimeout:
        pytest.fail(f"{what}: the figure did not change within {ROUND_TRIP_TIMEOUT_MS / 1000:.0f} s")


def _move_one_control(page, panel, name: str) -> str:
    """Move the panel's first slider (else change its first number field, dropdown or checkbox); the figure's
    PNG bytes must change."""
    img = panel.locator("img.widget-image").first
    src0, digest0 = img.evaluate(_IMG_DIGEST)
    sliders = panel.locator(".widget-slider .noUi-handle")
    numbers = panel.locator(".widget-text input[type=number]")
    selects = panel.locator(".widget-dropdown select")
    checks = panel.locator(".widget-checkbox input[type=checkbox]")
    if sliders.count():
        handle = sliders.first
        before = handle.get_attribute("aria-valuenow")
        handle.focus()
        handle.press("End")
        if handle.get_attribute("aria-valuenow") == before:
            handle.press("Home")
        did = f"slider {before} -> {handle.get_attribute('aria-valuenow')}"
    elif numbers.count():
        field = numbers.first
        value, step = float(field.input_value()), float(field.get_attribute("step") or 1)
        hi = field.get_attribute("max")
        new = value + 10 * step
        if hi is not None and new > float(hi):
            new = value - 10 * step
        new_text = str(int(new)) if new == int(new) else str(new)
        field.fill(new_text)
        field.press("Enter")
        did = f"number field {value:g} -> {new_text}"
    elif selects.count():
        select = selects.first
        options = select.locator("option").all_inner_texts()
        current = select.evaluate("s => s.selectedIndex")
        target = (current + 1) % len(options)
        select.select_option(index=target)
        did = f"dropdown {options[current]!r} -> {options[target]!r}"
    elif checks.count():
        checks.first.click()
        did = "checkbox toggled"
    else:
        pytest.fail(f"{name}: a panel without a slider, number field, dropdown or checkbox")
    _wait_image_change(page, img, src0, f"{name}: {did}")
    _, digest1 = img.evaluate(_IMG_DIGEST)
    assert digest1 != digest0, f"{name}: {did} gave the same PNG bytes"
    return did


def _shutdown(page, lab) -> None:
    try:
        page.evaluate("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                      " && window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    except Exception:  # the page may already be gone; the kernels are deleted below either way
        pass
    page.close()
    for kernel in lab.api("/api/kernels"):
        lab.api(f"/api/kernels/{kernel['id']}", method="DELETE")


REPORT: dict[str, dict] = {}
SITE_STATS: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def report():
    """What the browser test saw, written to artifacts/browser/report.json at the end of the module."""
    yield REPORT
    if REPORT:
        summary = {"copies": len(REPORT), "with_faults": sum(bool(r["faults"]) for r in REPORT.values()),
                   "cells": sum(r["cells"] for r in REPORT.values()),
                   "figures": sum(r["figures"] for r in REPORT.values()),
                   "panels": sum(r["panels"] for r in REPORT.values()),
                   "seconds": round(sum(r["seconds"] for r in REPORT.values()), 1), "site": SITE_STATS,
                   "per_copy": REPORT}
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "report.json").write_text(json.dumps(summary, indent=1))


# Files the notebooks cite, opened from JupyterLab's file browser: a kernel table and a lab measurement.
CITED_FILES = ["data/kernels.toml", "lab/README.md"]


def test_start_page_is_the_student_copy_without_a_toast(lab, browser_context):
    page = browser_context.new_page()
    try:
        page.goto(f"{lab.url}/?token={lab.token}")  # the URL the open command prints, without its path
        page.wait_for_function(_NOTEBOOK_READY, timeout=RUN_TIMEOUT_MS)
        start = page.url.split("?", 1)[0]
        assert start.endswith("/lab/tree/" + labharness.open_check.START_NOTEBOOK), start
        title = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
        assert title == labharness.open_check.START_NOTEBOOK
        # the tab the attendee sees is named as their copy's file, which is never a solved copy's name
        tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").first.inner_text()
        assert tab.strip() == Path(labharness.open_check.START_NOTEBOOK).name, tab
        assert (NOTEBOOK_DIR / tab.strip()) in COPIES and nbtools.SOLVED_SUFFIX not in tab, tab
        # the server hands the page JupyterLab's notification settings with news and update checks off (the
        # shipped overrides); and no toast of any kind covers the start page a few seconds after start-up
        assert not labharness.open_check.attendee_view_problems(lab.url, lab.token)
        page.wait_for_timeout(5000)
        toasts = page.locator(".Toastify__toast").all_inner_texts()
        page.screenshot(path=_shot("start-page"))
        assert not toasts, f"toasts over the start page: {toasts}"
    finally:
        _shutdown(page, lab)


@pytest.mark.parametrize("rel", CITED_FILES)
def test_cited_files_open_from_the_served_root(lab, browser_context, rel):
    assert (ROOT / rel).exists(), rel
    first = next(line for line in (ROOT / rel).read_text().splitlines() if len(line.strip()) > 8).strip()
    page = browser_context.new_page()
    try:
        page.goto(f"{lab.url}/lab/tree/{rel}?token={lab.token}&reset")
        page.locator(".jp-FileEditor .cm-content").first.wait_for(timeout=RUN_TIMEOUT_MS)
        page.wait_for_function("(want) => [...document.querySelectorAll('.jp-FileEditor .cm-content')]"
                               ".some(e => e.innerText.includes(want))", arg=first[:40],
                               timeout=ROUND_TRIP_TIMEOUT_MS)
    finally:
        page.close()


@pytest.mark.parametrize("path", COPIES, ids=_copy_id)
def test_what_a_reader_sees_in_jupyterlab(lab, browser_context, path):
    name = _copy_id(path)
    rel = path.relative_to(ROOT).as_posix()
    before = path.read_bytes()
    static, panels = figure_cells(path)
    secret = golden_lines(path)
    page = browser_context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    t0 = time.monotonic()
    moved, cells, faults = [], [], []
    try:
        page.goto(f"{lab.url}/lab/tree/{rel}?token={lab.token}&reset")
        page.wait_for_function(_NOTEBOOK_READY, timeout=RUN_TIMEOUT_MS)
        # a solved copy's tab says so; an attendees' copy's does not
        tab = page.evaluate("() => window.jupyterapp.shell.currentWidget.title.label")
        assert tab == path.name and tab.endswith(nbtools.SOLVED_SUFFIX + ".ipynb") == (
            path.parent == nbtools.SOLVED_DIR), f"{name}: tab {tab!r}"

        # As opened: nothing answered.
        opened = page.evaluate(_CELLS)
        assert not [c["source"] for c in opened if c["outputs"] or c["count"] is not None], \
            f"{name}: code cells with an output as opened"
        assert page.locator(".jp-Notebook .jp-CodeCell .jp-OutputArea-output").count() == 0
        shown = page.locator(".jp-Notebook").inner_text()
        leaked = [line for line in secret if line in shown]
        assert not leaked, f"{name}: golden text visible before running: {leaked[:3]}"
        # The kernel's kernel_info fills in metadata.language_info on open: equal to what the file stores, the tab
        # stays unmodified (closing it asks nothing).
        assert not page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty"), \
            f"{name}: the tab opened marked modified"
        answered = nbtools.answers_shown(nbformat.read(path, as_version=4), page.evaluate(_SHOWN))
        assert not answered, f"{name}: a Predict's answer is on screen as opened: {answered[:3]}"
        page.screenshot(path=_shot(f"{name}-opened"))

        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(_RUN_FINISHED, timeout=RUN_TIMEOUT_MS, polling=250)
        cells = page.evaluate(_CELLS)
        page.screenshot(path=_shot(name), full_page=True)

        # Every fault is collected first, so one run names them all.
        faults += [f"did not run: {c['source']!r}" for c in cells if c["count"] is None]
        faults += [f"error output in {c['source']!r}: {c['errors']}" for c in cells if c["errors"]]
        faults += [f"stderr (pink) output in {c['source']!r}: {c['stderr']}" for c in cells if c["stderr"]]
        text = page.locator(".jp-Notebook").inner_text()
        if FIGURE_AS_TEXT.search(text):
            faults.append(f"a figure is shown as text: {FIGURE_AS_TEXT.search(text).group(0)}")
        if "Error displaying widget" in text or "Error rendering" in text:
            faults.append("a widget failed to render")

        code_cells = page.locator(".jp-Notebook .jp-CodeCell")
        assert code_cells.count() == len(cells)
        for index in static:
            img = code_cells.nth(index).locator(".jp-OutputArea-output img").first
            if not img.count():
                faults.append(f"figure cell {index} ({cells[index]['source'][:40]!r}) shows no image")
            elif not img.evaluate("i => i.complete && i.naturalWidth > 0"):
                faults.append(f"figure cell {index}: the image did not decode")

        for k, index in enumerate(panels):
            panel = code_cells.nth(index).locator(".jp-OutputArea-output").first
            img = panel.locator("img.widget-image").first
            img.wait_for(state="visible")
            page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
            panel.screenshot(path=_shot(f"{name}-panel{k}"))
            faults += [f"panel {k} (cell {index}): {f}" for f in panel.evaluate(_WIDGET_FAULTS)]
            moved.append(_move_one_control(page, panel, f"{name} panel {k}"))
            panel.screenshot(path=_shot(f"{name}-panel{k}-moved"))

        if page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').count():
            faults.append("the page shows stderr output after the controls moved")
        faults += [f"page error: {e}" for e in page_errors if "Traceback" in e]
        assert not faults, f"{name}: " + "\n".join(faults)
    finally:
        _shutdown(page, lab)
        REPORT[name] = {"cells": len(cells), "figures": len(static), "panels": len(panels),
                        "seconds": round(time.monotonic() - t0, 1), "moved": moved, "faults": len(faults)}
        print(f"{name}: {REPORT[name]}")
    assert path.read_bytes() == before, f"{name} was written back by JupyterLab"


# --------------------------------------------------------------------------------------------------
# The static HTML copy

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The static copy, built by the documented command."""
    out = tmp_path_factory.mktemp("site")
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "nbtools.py"), "html", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    SITE_STATS["build_seconds"] = round(time.monotonic() - t0, 1)
    SITE_STATS["pages"] = len(list(out.glob("*.html")))
    return out


def _panel_has_png_fallback() -> bool:
    """Whether vnetlab's panels put their current PNG into their output (widgets.base.Panel._repr_mimebundle_)."""
    from vnetlab.widgets import base

    return "_repr_mimebundle_" in vars(base.Panel)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_static_html_copy(site, browser_context, path):
    page_path = site / f"{nbtools.name(path)}.html"
    assert page_path.exists() and (site / "index.html").exists() and (site / "glossary.html").exists()
    static, panels = figure_cells(path)
    page = browser_context.new_page()
    remote: list[str] = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            remote.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=_shot(f"html-{path.stem[:2]}"), full_page=True)
        assert not remote, f"{page_path.name} asks the network for {remote}"
        images = page.locator("img")
        assert all(images.nth(i).evaluate("i => i.complete && i.naturalWidth > 0") for i in range(images.count()))
        text = page.locator("body").inner_text()
        assert not FIGURE_AS_TEXT.search(text) and "Traceback" not in text
        code_cells = page.locator(".jp-CodeCell")
        for index in static:
            assert code_cells.nth(index).locator(".jp-OutputArea-output img").count(), f"cell {index}: no image"
        for index in panels:
            shows_image = code_cells.nth(index).locator(".jp-OutputArea-output img").count() > 0
            if not shows_image and not _panel_has_png_fallback():
                pytest.xfail("panels have no PNG fallback in their output yet (widgets.base.Panel._repr_mimebundle_)")
            assert shows_image, f"{page_path.name}: panel cell {index} shows no image"
        for link in page.locator("a[href$='.html']").all():
            assert (site / link.get_attribute("href").split("#")[0]).exists(), link.get_attribute("href")
    finally:
        page.close()


def test_static_handout(site, browser_context):
    """The handout as the static copy renders it: linked from the index, its key numbers a table, offline."""
    page = browser_context.new_page()
    remote: list[str] = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            remote.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto((site / "index.html").as_uri())
        page.locator("a[href='handout.html']").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/handout.html")
        page.screenshot(path=_shot("html-handout"), full_page=True)
        assert not remote, f"handout.html asks the network for {remote}"
        rows = page.locator("table tr")
        assert rows.count() >= 8
        # source: the seed rates of fb32856b16ad's patch mail (../shared/seeds/), as docs/handout.md quotes them
        assert "956,864 → 1,158,465" in page.locator("table").inner_text()
        assert page.locator("pre").count() >= 2
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1"), \
            "the handout scrolls sideways at the test's viewport"
    finally:
        page.close()
