"""JupyterLab and Debian's Chromium for the browser tests (test_browser.py, test_browser_panels.py): one way to start
them, stop them and talk to them.

JupyterLab runs from a venv made exactly as the README's open command makes it (its venv and pip part, read from
README.md: the workbook's lock and the package, no [test] extras), so a dependency the workbook lacks fails here
as it would for a reader; the venv is artifacts/readme-venv/, rebuilt whenever that command, the lock or
pyproject.toml changes. It serves with the open command's own config (jupyter-settings/: start page, lab
defaults such as no news toast), on 127.0.0.1 with a fresh token, plus test-only settings that keep it from
writing notebooks back (autosave off) or windowing cells away (every output in the DOM), and ``jupyterapp``
exposed to the page. Playwright itself runs from the test venv.
Chromium is Debian's /usr/bin/chromium driven by playwright (never a downloaded browser), headless, with the flags
this machine needs: no sandbox as root, no GPU, no background connections to the outside.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("open_check", ROOT / "tools" / "open_check.py")  # a script
open_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(open_check)
README_VENV = ROOT / "artifacts" / "readme-venv"
VENV_BUILD_TIMEOUT_S = 1800

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 1000}
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                          "checkForUpdates": False},
}
STARTUP_TIMEOUT_S = 60


def chromium_or_skip() -> None:
    """Skip (with the reason) where Debian's chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"browser test: {CHROMIUM} is missing (apt-get install chromium)")


def sync_playwright() -> Any:  # noqa: ANN401
    """playwright.sync_api.sync_playwright; playwright is a [test] dependency, so its absence fails the test."""
    try:
        from playwright.sync_api import sync_playwright as sp
    except ImportError as exc:
        pytest.fail("the playwright package is missing: it is a [test] dependency (the README's test command "
                    f"installs requirements-test.lock): {exc}")
    return sp


def readme_install() -> str:
    """The README open command's venv and pip part: every step of its `&&` chain before `jupyter lab`."""
    install = open_check.readme_install(ROOT).split(" && ")
    assert install and install[0].startswith("python3 -m venv .venv"), f"the open command makes no venv: {install}"
    assert all(s.startswith((".venv/bin/pip ", "python3 -m venv ")) for s in install), install
    return " && ".join(install)


def readme_open_command() -> str:
    return open_check.readme_commands(ROOT / "README.md")[0]


def readme_config_args() -> list[str]:
    """The open command's jupyter lab options that configure the server (its --config file)."""
    args = [arg for arg in readme_open_command().split(" && ")[-1].split() if arg.startswith("--config=")]
    return [f"--config={ROOT / arg.split('=', 1)[1]}" for arg in args]  # relative to the clone, as the README runs it


def readme_venv() -> Path:
    """The python of a venv made by the README's open command's install part (at artifacts/readme-venv/)."""
    install = readme_install()
    stamp_text = open_check.install_stamp(ROOT)  # tools/open_check.py --keep-venv (CI) writes the same stamp
    stamp = README_VENV / open_check.STAMP_NAME
    python = README_VENV / "bin" / "python"
    if python.exists() and stamp.exists() and stamp.read_text() == stamp_text:
        return python
    subprocess.run(["rm", "-rf", str(README_VENV)], check=True)
    README_VENV.parent.mkdir(parents=True, exist_ok=True)
    command = re.sub(r"(?<![\w/.])\.venv(?=/|$| )", str(README_VENV), install)  # the same steps, another venv
    log = README_VENV.parent / "readme-venv.log"
    with open(log, "w") as out:
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=VENV_BUILD_TIMEOUT_S)
    if done.returncode:
        pytest.fail(f"the README's install ({command}) failed with {done.returncode}; see {log}:\n"
                    + log.read_text()[-2000:])
    stamp.write_text(stamp_text)
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its URL, token and REST API."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def api(self, path: str, method: str = "GET") -> Any:  # noqa: ANN401
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None


@contextlib.contextmanager
def jupyterlab(home: Path, root_dir: Path, log_path: Path, *, env: Mapping[str, str | None] = {},
               lab_settings: Mapping[str, Any] = LAB_SETTINGS) -> Iterator[Lab]:
    """JupyterLab from the README's venv with the README's config, serving ``root_dir`` until the block ends (then
    terminated, killed if it must be); ``home`` holds its user settings, workspaces and runtime files; ``env`` adds
    variables to its environment (None removes one); ``lab_settings`` are the user settings written there (the
    tests' LAB_SETTINGS by default)."""
    python = readme_venv()
    settings = home / "settings"
    for rel, value in lab_settings.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(value))
    port, token = free_port(), secrets.token_hex(16)
    run_env = dict(os.environ, PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"), HOME=str(home))
    run_env.pop("VIRTUAL_ENV", None)
    for name, value in env.items():
        if value is None:
            run_env.pop(name, None)
        else:
            run_env[name] = value
    cmd = [str(python), "-m", "jupyterlab", *readme_config_args(), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--port-retries=0", f"--IdentityProvider.token={token}", "--allow-root", f"--ServerApp.root_dir={root_dir}",
           "--LabApp.expose_app_in_browser=True", f"--LabServerApp.user_settings_dir={settings}",
           f"--LabServerApp.workspaces_dir={home / 'workspaces'}"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=root_dir, env=run_env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        server = Lab(f"http://127.0.0.1:{port}", token)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab exited with {proc.returncode}; see {log_path}")
                try:
                    server.api("/api/status")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"JupyterLab did not answer within {STARTUP_TIMEOUT_S} s; see {log_path}")
                    time.sleep(0.3)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@contextlib.contextmanager
def chromium(profile: Path, *, timeout_ms: int = 30_000) -> Iterator[Any]:
    """A headless Chromium context (playwright BrowserContext) with a fresh profile directory."""
    chromium_or_skip()
    with sync_playwright()() as pw:
        context = pw.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True,
                                                        args=CHROMIUM_ARGS, viewport=VIEWPORT)
        context.set_default_timeout(timeout_ms)
        try:
            yield context
        finally:
            context.close()
