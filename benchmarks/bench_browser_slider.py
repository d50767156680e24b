"""Benchmark: a keypress on a panel's slider in JupyterLab + Chromium, keydown to the new figure shown.

Drives the real browser as tests/test_browser.py does (its JupyterLab from the README's venv and Debian's
/usr/bin/chromium, through tests/labharness.py; the notebooks' panel cells found by test_browser.figure_cells):
opens each notebook, runs it, focuses each panel's first slider (a panel without one: its first toggle button or
checkbox, pressed with Space; the record says which) and presses ArrowRight then ArrowLeft ``--presses`` times each,
one press at a time: the next press waits until the figure of the last one is shown. Per press it measures, on one
clock (the kernel's time.time() and the page's performance.timeOrigin + performance.now(), the same host):

- ``front``: keydown -> the page sends the widget's new value on the kernel websocket (ipywidgets, noUiSlider);
- ``comm_in``: that send -> the panel's update starts in the kernel (server, ZMQ, ipywidgets' set_state);
- ``model``: the state function (model and matplotlib artists); ``draw``: Agg rasterising the figure;
  ``encode``: the PNG; ``send``: setting the Image widget's value (the comm message leaving the kernel);
- ``comm_out``: the kernel's send -> the image's message arrives on the page's websocket;
- ``widget``: that message -> the <img> gets its new src (the widget manager's deserialisation and view update);
- ``decode``: new src -> img.decode() resolved; ``paint``: -> the frame after it (requestAnimationFrame, then a
  task: the paint that shows it).

``total`` is keydown -> shown; ``cpu_*`` are the kernel process's CPU ms for model, draw, encode and the whole
update (what the machine's other load does not inflate); ``revisit`` marks a press back to a value this panel showed
before (the ArrowLeft half); ``from_memory`` that the kernel answered it from the panel's remembered PNGs
(widgets.base.SHOWN_CACHE: a value shown before, or the step ahead drawn while idle), ``drawn`` the others. The
kernel's stamps come from widgets.base's debug timing (VNETLAB_PANEL_TIMING, off unless set). Results (p50/p95 per
notebook and overall, the breakdown's medians and p95s, every press with its epoch time ``key_epoch_ms``, the load
average before and after) go to benchmarks/results/ as JSON; ``--kernel-log`` keeps the kernel's own lines (every
update and every drawing ahead), to line up with a capture such as ``tcpdump -i lo -tt``. The machine's load
matters: run it twice, with nothing else running; ``steal_s`` is the CPU time the hypervisor took from this VM
during the run (/proc/stat), which no quiet machine rules out.

JupyterLab runs with the notebook windowing mode a reader has (JupyterLab's default, contentVisibility; the browser
tests attach every cell, "none", and ``--windowing none`` measures that), with autosave off so that a run never
writes the notebooks.

Run: .venv/bin/python benchmarks/bench_browser_slider.py [--notebooks 10 20 30 40 50] [--presses 10]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import labharness  # noqa: E402

_spec = importlib.util.spec_from_file_location("test_browser", ROOT / "tests" / "test_browser.py")
test_browser = importlib.util.module_from_spec(_spec)  # its panel finder and page probes, not a copy of them
_spec.loader.exec_module(test_browser)

RESULTS = ROOT / "benchmarks" / "results"
WINDOWING = "@jupyterlab/notebook-extension/tracker.jupyterlab-settings"


def lab_settings(windowing: str | None) -> dict:
    """The tests' JupyterLab user settings (labharness.LAB_SETTINGS: no autosave, so a run never writes the
    notebooks; no news), with the notebook's windowing mode a reader has: JupyterLab's default
    (contentVisibility in 4.6, the notebook-extension's tracker schema) unless ``windowing`` names one; the browser
    tests use "none" (every cell attached, so every output can be looked at)."""
    settings = {k: v for k, v in labharness.LAB_SETTINGS.items() if k != WINDOWING}
    if windowing is not None:
        settings[WINDOWING] = {"windowingMode": windowing}
    return settings
PRESS_TIMEOUT_MS = 10_000
PHASES = ("front", "comm_in", "model", "draw", "encode", "send", "comm_out", "widget", "decode", "paint")
CPU_PHASES = ("cpu_model", "cpu_draw", "cpu_encode", "cpu_kernel")  # the kernel process's CPU time, ms

# Before any page script: note when the page sends and receives on a websocket (JupyterLab's kernel channel)
# while a press is armed.
_WS_PROBE = """(() => {
  const Orig = window.WebSocket;
  const size = d => (d && (d.byteLength ?? d.size ?? d.length)) || 0;
  window.__vb = {armed: false, sent: [], recv: []};
  class Probed extends Orig {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => {
        if (window.__vb.armed) window.__vb.recv.push([performance.now(), size(e.data)]);
      });
    }
    send(data) {
      if (window.__vb.armed) window.__vb.sent.push([performance.now(), size(data)]);
      return super.send(data);
    }
  }
  window.WebSocket = Probed;
})();"""

# Arm one press: the keydown's time, then the img's next src, its decode and the frame that shows it.
_ARM = """([img, timeoutMs]) => {
  const vb = window.__vb;
  vb.sent = []; vb.recv = []; vb.key = null; vb.armed = true;
  const now = () => performance.now();
  const onKey = e => { if (vb.key === null) vb.key = now(); };
  document.addEventListener('keydown', onKey, {capture: true, once: true});
  vb.result = new Promise(resolve => {
    const timer = setTimeout(() => { obs.disconnect(); vb.armed = false;
                                     resolve({timeout: true, key: vb.key}); }, timeoutMs);
    const obs = new MutationObserver(async () => {
      obs.disconnect();
      clearTimeout(timer);
      const src = now();
      let decoded = null, error = null;
      try { await img.decode(); decoded = now(); } catch (e) { error = String(e); }
      requestAnimationFrame(() => {
        const frame = now();
        const ch = new MessageChannel();
        ch.port1.onmessage = () => {
          vb.armed = false;
          resolve({key: vb.key, src, decoded, frame, shown: now(), error, origin: performance.timeOrigin,
                   sent: vb.sent, recv: vb.recv, width: img.naturalWidth});
        };
        ch.port2.postMessage(null);
      });
    });
    obs.observe(img, {attributes: true, attributeFilter: ['src']});
  });
  return true;
}"""


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _steal_s() -> float | None:
    """CPU time the hypervisor took from this VM since boot, all CPUs (/proc/stat's steal column, in USER_HZ)."""
    try:
        fields = open("/proc/stat").readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _pct(values: list[float], q: float) -> float | None:
    """The q-quantile (nearest rank) of ``values``, or None for none."""
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def _stats(values: list[float]) -> dict[str, float | None]:
    return {"n": len(values), "p50": _pct(values, 0.5), "p95": _pct(values, 0.95),
            "mean": round(statistics.fmean(values), 2) if values else None, "max": max(values) if values else None}


def _kernel_records(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _breakdown(page_t: dict, records: list[dict]) -> dict[str, float]:
    """The press's phases in ms, from the page's stamps and the kernel update that ran for it."""
    origin = page_t["origin"]
    at = {k: origin + page_t[k] for k in ("key", "src", "shown") if page_t.get(k) is not None}  # epoch ms
    key_s, src_s = at["key"] / 1000, at["src"] / 1000
    mine = [r for r in records if key_s <= r["t"]["start"] <= src_s and "sent" in r["t"]]
    phases: dict[str, float] = {"total": at["shown"] - at["key"], "key_epoch_ms": at["key"]}
    sent = [origin + t for t, _ in page_t["sent"]]
    if mine:
        t = mine[-1]["t"]  # the update whose image was shown (an earlier one may have drawn a step in between)
        ms = {k: v * 1000 for k, v in t.items()}
        first_send = min((s for s in sent if s <= ms["start"]), default=None)
        phases["front"] = (first_send - at["key"]) if first_send is not None else None
        phases["comm_in"] = (ms["start"] - first_send) if first_send is not None else None
        phases["model"] = ms["state"] - ms["start"]
        phases["draw"] = ms["drawn"] - ms["state"]
        phases["encode"] = ms["encoded"] - ms["drawn"]
        phases["send"] = ms["sent"] - ms["encoded"]
        # the image's message: the largest one received between the kernel's send and the new src
        big = [(n, origin + t) for t, n in page_t["recv"] if ms["encoded"] - 1 <= origin + t <= at["src"]]
        if big:
            arrived = max(big)[1]
            phases["comm_out"] = arrived - ms["sent"]
            phases["widget"] = at["src"] - arrived
        cpu = {k: v * 1000 for k, v in mine[-1]["cpu"].items()}
        phases["cpu_model"] = cpu["state"] - cpu["start"]
        phases["cpu_draw"] = cpu["drawn"] - cpu["state"]
        phases["cpu_encode"] = cpu["encoded"] - cpu["drawn"]
        phases["cpu_kernel"] = cpu["end"] - cpu["start"]
        phases["kernel_updates"] = len(mine)
        phases["from_memory"] = bool(mine[-1].get("cached"))
        phases["png_bytes"] = mine[-1].get("png_bytes")
    if page_t.get("decoded") is not None:
        phases["decode"] = page_t["decoded"] - page_t["src"]
        phases["paint"] = page_t["shown"] - page_t["decoded"]
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in phases.items()}


def _control(panel):
    """The control to press on: the panel's first slider handle (arrow keys), else its first toggle button that
    is not [fixed] or its first checkbox (Space). A dropdown is not used: JupyterLab's notebook shortcuts take
    the arrow keys from a focused <select>."""
    sliders = panel.locator(".widget-slider .noUi-handle")
    if sliders.count():
        return "slider", sliders.first, ("ArrowRight", "ArrowLeft")
    toggles = panel.locator(".widget-toggle-button:not(:has(.fa-lock))")
    if toggles.count():
        return "toggle", toggles.first, ("Space", "Space")
    checks = panel.locator(".widget-checkbox input[type=checkbox]")
    if checks.count():
        return "checkbox", checks.first, ("Space", "Space")
    return None, None, ()


def _value(kind: str, handle) -> str:
    if kind == "slider":
        return handle.get_attribute("aria-valuenow")
    if kind == "toggle":
        return str(handle.evaluate("b => b.classList.contains('mod-active')"))
    return str(handle.evaluate("c => c.checked"))


def _press_panel(page, panel, name: str, presses: int, log: Path) -> list[dict]:
    kind, handle, keys = _control(panel)
    if kind is None:
        print(f"  {name}: no slider, toggle button or checkbox, skipped")
        return []
    img = panel.locator("img.widget-image").first
    img.wait_for(state="visible")
    if kind == "slider":
        label = panel.locator(".widget-slider .widget-label").first
        desc = label.inner_text() if label.count() else "?"
    else:
        desc = handle.evaluate("e => (e.closest('.widget-checkbox') || e).innerText.trim()") or "?"
    out = []
    seen = {_value(kind, handle)}
    handle.focus()
    for key in keys:
        for i in range(presses):
            before = _value(kind, handle)
            page.evaluate(_ARM, [img.element_handle(), PRESS_TIMEOUT_MS])
            handle.press(key)
            after = _value(kind, handle)
            if after == before:  # at the end of the range: nothing to redraw
                page.evaluate("() => { window.__vb.armed = false; }")
                print(f"  {name}: {key} at the end ({before}), turning")
                break
            res = page.evaluate("() => window.__vb.result")
            row = {"panel": name, "control": kind, "label": desc, "key": key, "press": i, "from": before,
                   "to": after, "revisit": after in seen}
            seen.add(after)
            if res.get("timeout"):
                row["timeout"] = True
                print(f"  {name}: {key} {before}->{after}: no new image within {PRESS_TIMEOUT_MS} ms")
            elif res.get("decoded") is None:
                row["error"] = res.get("error")
            else:
                row.update(_breakdown(res, _kernel_records(log)))
            out.append(row)
            handle.focus()  # a press may rebuild the panel's other widgets; keep the keyboard on this control
    return out


def run_notebook(lab, context, path: Path, presses: int, log: Path) -> list[dict]:
    rel = path.relative_to(ROOT).as_posix()
    _, panels = test_browser.figure_cells(path)
    page = context.new_page()
    rows: list[dict] = []
    try:
        page.goto(f"{lab.url}/lab/tree/{rel}?token={lab.token}&reset")
        page.wait_for_function(test_browser._NOTEBOOK_READY, timeout=test_browser.RUN_TIMEOUT_MS)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(test_browser._RUN_FINISHED, timeout=test_browser.RUN_TIMEOUT_MS, polling=250)
        code_cells = page.locator(".jp-Notebook .jp-CodeCell")
        for k, index in enumerate(panels):
            panel = code_cells.nth(index).locator(".jp-OutputArea-output").first
            panel.scroll_into_view_if_needed()
            rows += [dict(r, notebook=path.stem[:2]) for r in
                     _press_panel(page, panel, f"{path.stem[:2]} panel {k}", presses, log)]
    finally:
        test_browser._shutdown(page, lab)
    return rows


def summarise(rows: list[dict]) -> dict:
    ok = [r for r in rows if "total" in r]

    def block(sel: list[dict]) -> dict:
        return {"total": _stats([r["total"] for r in sel]),
                "first_visit": _stats([r["total"] for r in sel if not r["revisit"]]),
                "revisit": _stats([r["total"] for r in sel if r["revisit"]]),
                "from_memory": _stats([r["total"] for r in sel if r.get("from_memory")]),
                "drawn": _stats([r["total"] for r in sel if r.get("from_memory") is False]),
                "phases": {p: _stats([r[p] for r in sel if r.get(p) is not None]) for p in PHASES + CPU_PHASES},
                "timeouts": sum(1 for r in rows if r.get("timeout") and r in sel)}

    per_nb = {nb: block([r for r in ok if r["notebook"] == nb]) for nb in sorted({r["notebook"] for r in rows})}
    per_panel = {p: block([r for r in ok if r["panel"] == p]) for p in sorted({r["panel"] for r in rows})}
    return {"overall": block(ok), "per_notebook": per_nb, "per_panel": per_panel,
            "timeouts": sum(1 for r in rows if r.get("timeout")), "errors": sum(1 for r in rows if "error" in r)}


def _fmt(s: dict) -> str:
    t = s["total"]
    if not t["n"]:
        return "no presses"
    parts = " ".join(f"{p} {s['phases'][p]['p50']:.0f}" for p in PHASES + CPU_PHASES if s["phases"][p]["n"])
    return f"n={t['n']:3d} p50 {t['p50']:6.1f} ms  p95 {t['p95']:6.1f} ms  | medians: {parts}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notebooks", nargs="+", default=["10", "20", "30", "40", "50"],
                    help="notebook numbers (default: 10 20 30 40 50)")
    ap.add_argument("--presses", type=int, default=10, help="presses each way per panel (default: 10)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output JSON (default: benchmarks/results/browser_slider-<UTC time>.json)")
    ap.add_argument("--windowing", default=None, choices=["none", "full", "defer", "contentVisibility"],
                    help="JupyterLab's notebook windowing mode (default: JupyterLab's own, what a reader has)")
    ap.add_argument("--kernel-log", type=Path, default=None,
                    help="also keep the kernel's panel timing lines (every update and step drawn ahead) here")
    ap.add_argument("--label", default="", help="a note stored with the results (what this run measures)")
    args = ap.parse_args(argv)
    if args.presses < 1:
        ap.error("--presses must be at least 1")
    paths = [p for n in args.notebooks for p in test_browser.NOTEBOOKS if p.stem.startswith(n)]
    missing = [n for n in args.notebooks if not any(p.stem.startswith(n) for p in paths)]
    if missing:
        ap.error(f"no notebook numbered {missing}")
    labharness.chromium_or_skip()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or RESULTS / f"browser_slider-{stamp}.json"
    load_before = _load()
    steal_before = _steal_s()
    print(f"load average {load_before} on {os.cpu_count()} CPUs")
    rows: list[dict] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        home, log = Path(tmp), Path(tmp) / "panel-timing.jsonl"
        with (labharness.jupyterlab(home / "lab", ROOT, home / "jupyterlab.log",
                                    env={"MPLBACKEND": None, "VNETLAB_PANEL_TIMING": str(log)},
                                    lab_settings=lab_settings(args.windowing)) as lab,
              labharness.chromium(home / "profile", timeout_ms=60_000) as context):
            context.add_init_script(_WS_PROBE)
            for path in paths:
                print(f"{path.name}")
                rows += run_notebook(lab, context, path, args.presses, log)
        if args.kernel_log is not None and log.exists():
            args.kernel_log.write_text(log.read_text())
    summary = summarise(rows)
    load_after = _load()
    steal_after = _steal_s()
    steal = round(steal_after - steal_before, 2) if None not in (steal_before, steal_after) else None
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    result = {"when": stamp, "label": args.label, "windowing": args.windowing or "JupyterLab's default",
              "git": rev.stdout.strip() + ("+dirty" if dirty else ""),
              "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after, "steal_s": steal,
              "seconds": round(time.monotonic() - t0, 1), "notebooks": args.notebooks, "presses": args.presses,
              **summary, "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    for nb, s in summary["per_notebook"].items():
        print(f"notebook {nb}: {_fmt(s)}")
    for p, s in summary["per_panel"].items():
        print(f"  {p}: {_fmt(s)}")
    print(f"overall: {_fmt(summary['overall'])}")
    print(f"timeouts {summary['timeouts']}, errors {summary['errors']}; load average {load_before} -> {load_after}; "
          f"CPU time stolen by the hypervisor during the run: {steal} s")
    print(f"written {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
