"""Time to first figure for a new user: a fresh copy of this clone, a fresh home directory (no pip cache, no
matplotlib font cache, no Jupyter settings), the README's open command, then notebook 00 in headless Chromium with
Run > Run All Cells until its first figure is drawn. The browser opens the server's start page, as an attendee
following the printed URL does, and must land on the student copy of notebook 00 with no toast over it.

    .venv/bin/python tools/first_figure.py     # needs the test extra (playwright) and Debian's chromium

Prints the install time (until JupyterLab starts), the start-up time (until the server answers), the time from
opening notebook 00 to its kernel being ready and to its first figure, the total, and how many toasts
(JupyterLab's news/update notifications) showed. The machine's pip settings (index, proxy, certificates) are kept,
so the install time is this machine's, not PyPI's over any network.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling script open_check.py

import open_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEEP_ENV = ("PATH", "LANG", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "http_proxy", "https_proxy",
            "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")


def fresh_copy(dest: Path) -> Path:
    """The working tree without anything a run leaves behind (.venv, artifacts, site, wheelhouse, caches)."""
    ignore = shutil.ignore_patterns(".venv", "artifacts", "site", "wheelhouse", "__pycache__", ".pytest_cache",
                                    ".hypothesis", "*.egg-info", ".ipynb_checkpoints", ".git")
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def first_figure(url: str, token: str, shots: Path) -> dict[str, float | int]:
    """Open the start page as an attendee would (it must be the student copy of notebook 00), Run All Cells from
    the menu, wait for the first figure."""
    from playwright.sync_api import sync_playwright

    times: dict[str, float | int] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.monotonic()
        page.goto(f"{url}/?token={token}")
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
        times["kernel_ready_s"] = round(time.monotonic() - t0, 1)
        landed = page.url.split("?", 1)[0]
        if not landed.endswith(f"/lab/tree/{open_check.START_NOTEBOOK}"):
            raise SystemExit(f"the start page is {landed}, not {open_check.START_NOTEBOOK}")
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        t1 = time.monotonic()
        page.wait_for_function("() => [...document.querySelectorAll('.jp-OutputArea-output img')]"
                               ".some(i => i.complete && i.naturalWidth > 0)", timeout=300_000, polling=100)
        times["run_all_to_first_figure_s"] = round(time.monotonic() - t1, 1)
        times["open_to_first_figure_s"] = round(time.monotonic() - t0, 1)
        page.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        times["stderr_outputs_seen"] = page.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').count()
        times["toasts_seen"] = page.locator(".Toastify__toast").count()  # the news toast would be one
        page.screenshot(path=str(shots / "first-figure.png"))
        browser.close()
    return times


def main() -> int:
    shots = ROOT / "artifacts"
    shots.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vnetlab-first-figure-") as tmp:
        clone = fresh_copy(Path(tmp) / "vnetlab")
        home = Path(tmp) / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k.startswith("PIP_")}
        env |= {"HOME": str(home), "USER": "newuser", "PIP_NO_CACHE_DIR": "1"}
        t0 = time.monotonic()
        opened = open_check.open_workbook(clone, shots / "first-figure-open.log", timeout=1200, env=env)
        try:
            result = {"install_s": round(opened.installed_s, 1),
                      "server_start_s": round(opened.answered_s - opened.installed_s, 1)}
            result |= first_figure(opened.url, opened.token, shots)
            result["total_s"] = round(time.monotonic() - t0, 1)
        finally:
            opened.stop()
    print(json.dumps(result, indent=1))
    (shots / "first-figure.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
