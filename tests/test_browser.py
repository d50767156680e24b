"""The workbook as a reader sees it: JupyterLab in headless Chromium, every notebook run with "Run All Cells".

Per notebook: every code cell ran, no cell shows an error (an error output, or a Traceback on stderr), every
figure renders, every ipywidgets panel renders its controls and its PNG <img>, and changing a control of each
panel (and moving the cost panel's sliders) changes the PNG bytes -- a round trip through the kernel.
Screenshots go to artifacts/browser/ (git-ignored). Needs Debian's chromium and the playwright package; skips
otherwise. Playwright drives /usr/bin/chromium: it never downloads a browser.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
# The flags this machine needs: no sandbox as root, no GPU, and no background connections to the outside.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STARTUP_TIMEOUT_S = 60
RUN_TIMEOUT_MS = 120_000
ROUND_TRIP_TIMEOUT_MS = 20_000

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip(f"browser test: {CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
if importlib.util.find_spec("playwright") is None:
    pytest.skip("browser test: the playwright package is missing (pip install -e '.[test]')",
                allow_module_level=True)

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))

# Lab settings for the run: never write the notebooks back (autosave off), and render every cell (no
# windowing), so that every output is in the DOM.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                          "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab from this environment on 127.0.0.1 in notebooks/, stopped in the finalizer whatever happens."""
    home = tmp_path_factory.mktemp("lab")
    settings = home / "settings"
    for rel, value in LAB_SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(value))
    port, token = _free_port(), secrets.token_hex(16)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "jupyterlab.log", "w")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), MPLBACKEND="Agg")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--port-retries=0", f"--IdentityProvider.token={token}", "--allow-root",
           f"--ServerApp.root_dir={NOTEBOOK_DIR}", "--LabApp.expose_app_in_browser=True",
           f"--LabServerApp.user_settings_dir={settings}", f"--LabServerApp.workspaces_dir={home / 'workspaces'}",
           ]
    proc = subprocess.Popen(cmd, cwd=NOTEBOOK_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    server = Lab(f"http://127.0.0.1:{port}", token)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}; see {ARTIFACTS / 'jupyterlab.log'}")
            try:
                server.api("/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within {STARTUP_TIMEOUT_S} s")
                time.sleep(0.3)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    """Debian's Chromium, headless, with a fresh profile directory."""
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


# JavaScript run in the page; `jupyterapp` is exposed by --LabApp.expose_app_in_browser.
_NOTEBOOK_READY = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && w.content && w.content.widgets.length > 0);
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
              errors: c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                .map(o => o.ename + ': ' + o.evalue),
              source: c.model.sharedModel.getSource().slice(0, 80)}))"""
_IMG_DIGEST = """async (img) => {
  const buf = await (await fetch(img.src)).arrayBuffer();
  const hash = await crypto.subtle.digest('SHA-256', buf);
  return [img.src, [...new Uint8Array(hash)].map(b => b.toString(16).padStart(2, '0')).join('')];
}"""


def _panel_cells(path: Path) -> list[int]:
    """Indices (among code cells) of the cells whose last line shows a panel (`...panels.x_panel(...)`)."""
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return [i for i, c in enumerate(code)
            if "panels." in c.source.strip().splitlines()[-1] and "_panel(" in c.source.strip().splitlines()[-1]]


def _wait_image_change(page, img, before_src: str, what: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("([img, src]) => img.src && img.src !== src && img.complete && img.naturalWidth > 0",
                               arg=[img.element_handle(), before_src], timeout=ROUND_TRIP_TIMEOUT_MS)
    except PlaywrightTimeout:
        pytest.fail(f"{what}: the figure did not change within {ROUND_TRIP_TIMEOUT_MS / 1000:.0f} s")


def _change_one_control(page, panel, name: str, k: int) -> str:
    """Change the panel's first number field (else its first dropdown); assert the figure's bytes change."""
    img = panel.locator("img.widget-image").first
    src0, digest0 = img.evaluate(_IMG_DIGEST)
    panel.screenshot(path=str(ARTIFACTS / f"{name}-panel{k}-before.png"))
    numbers = panel.locator(".widget-text input[type=number]")
    if numbers.count():
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
    else:
        select = panel.locator(".widget-dropdown select").first
        options = select.locator("option").all_inner_texts()
        current = select.evaluate("s => s.selectedIndex")
        target = (current + 1) % len(options)
        select.select_option(index=target)
        did = f"dropdown {options[current]!r} -> {options[target]!r}"
    _wait_image_change(page, img, src0, did)
    src1, digest1 = img.evaluate(_IMG_DIGEST)
    assert digest1 != digest0, f"{name} panel {k}: {did} gave the same PNG bytes"
    panel.screenshot(path=str(ARTIFACTS / f"{name}-panel{k}-after.png"))
    return did


def _move_sliders(page, panel, name: str, k: int) -> list[str]:
    """Move each slider of the panel with the keyboard (End: its maximum); each move must redraw the figure."""
    img = panel.locator("img.widget-image").first
    moved = []
    sliders = panel.locator(".widget-slider")
    for j in range(sliders.count()):
        slider = sliders.nth(j)
        handle = slider.locator(".noUi-handle").first
        readout0 = slider.locator(".widget-readout").inner_text()
        src0, digest0 = img.evaluate(_IMG_DIGEST)
        handle.focus()
        handle.press("End")
        _wait_image_change(page, img, src0, f"slider {j}")
        _, digest1 = img.evaluate(_IMG_DIGEST)
        readout1 = slider.locator(".widget-readout").inner_text()
        assert readout1 != readout0 and digest1 != digest0, f"{name} panel {k}: slider {j} did not redraw"
        moved.append(f"slider {j} {readout0} -> {readout1}")
    if moved:
        panel.screenshot(path=str(ARTIFACTS / f"{name}-panel{k}-sliders.png"))
    return moved


def _error_texts(page) -> list[str]:
    """Error outputs and tracebacks on stderr as the page shows them; widgets that failed to render."""
    found = []
    for el in page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all():
        text = el.inner_text()
        if "Traceback" in text:
            found.append(text[-600:])
    for el in page.locator(".jp-OutputArea-output").all():
        text = el.inner_text()
        if "Error displaying widget" in text or "Error rendering" in text:
            found.append(text[:300])
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_notebook_runs_in_jupyterlab(lab, browser_context, path):
    name = path.stem
    before = path.read_bytes()
    page = browser_context.new_page()
    console_errors: list[str] = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    t0 = time.monotonic()
    try:
        page.goto(f"{lab.url}/lab/tree/{path.name}?token={lab.token}&reset")
        page.wait_for_function(_NOTEBOOK_READY, timeout=RUN_TIMEOUT_MS)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(_RUN_FINISHED, timeout=RUN_TIMEOUT_MS, polling=250)
        cells = page.evaluate(_CELLS)
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

        not_run = [c["source"] for c in cells if c["count"] is None]
        errors = [(c["source"], c["errors"]) for c in cells if c["errors"]]
        assert not errors, f"{name}: cells with error outputs: {errors}"
        assert not not_run, f"{name}: cells that did not run: {not_run}"
        shown = _error_texts(page)
        assert not shown, f"{name}: the page shows errors: {shown}"

        # Static figures (matplotlib PNG outputs) decode.
        for fig in page.locator(".jp-RenderedImage img").all():
            assert fig.evaluate("img => img.complete && img.naturalWidth > 0"), f"{name}: a figure did not render"

        panels = _panel_cells(path)
        outputs = page.locator(".jp-Notebook .jp-CodeCell")
        for k, index in enumerate(panels):
            cell = outputs.nth(index)
            panel = cell.locator(".jp-OutputArea-output .jupyter-widgets.widget-vbox").first
            panel.wait_for(state="visible")
            img = panel.locator("img.widget-image").first
            img.wait_for(state="visible")
            page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=img.element_handle())
            assert panel.locator(".widget-dropdown, .widget-text, .widget-slider, .widget-checkbox").count() > 0
            _change_one_control(page, panel, name, k)
            _move_sliders(page, panel, name, k)

        assert not _error_texts(page), f"{name}: errors after the interactions: {_error_texts(page)}"
        assert not any("Traceback" in e for e in console_errors), console_errors
    finally:
        try:
            page.evaluate("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                          " && window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:
            pass
        page.close()
        for kernel in lab.api("/api/kernels"):
            lab.api(f"/api/kernels/{kernel['id']}", method="DELETE")
    assert path.read_bytes() == before, f"{name} was written back by JupyterLab"
    print(f"{name}: {time.monotonic() - t0:.1f} s, {len(panels)} panels")
