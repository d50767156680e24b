"""Every panel the notebooks build, every control moved over its range and typed outside it, as the browser does.

The panels are built from the notebooks' own cells (each ``<module>.<name>_panel(...)`` call over
vnetlab.widgets, evaluated as written). A control is moved the way JupyterLab's comm message moves it:
``widget.set_state({trait: value})`` on the widget the reader touches (a SizeSlider's slider and its number box, a
dropdown's or toggle row's ``index``, a checkbox's or toggle button's ``value``). For each move: no exception, no
warning, nothing on stderr, an answer within a few seconds, and the panel shows either its figure and summary or a
clear message naming what is wrong (never a traceback and never a stale figure). Values: both ends, the middle
and a few steps of each range; typed into a number box also 0, -1, one past each end and absurdly large numbers.
"""

from __future__ import annotations

import ast
import importlib
import json
import resource
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import ipywidgets as W
import matplotlib
import pytest

matplotlib.use("Agg")

from vnetlab.viz import style  # noqa: E402
from vnetlab.widgets import _SUBMODULES  # noqa: E402
from vnetlab.widgets.base import Panel, SizeSlider  # noqa: E402
from vnetlab.widgets.explorer import EthtoolPanel  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# CPU seconds one move may take (a redraw takes a fraction; a model that runs away with a huge typed count must
# refuse it instead). CPU time, not wall time: the shared machine's load does not make a move slow.
SECONDS_PER_MOVE = 5.0
HUGE = (10**6, 2**31 - 1)  # what a reader can type in a number box (the browser sends any JS integer)
MEMORY_HEADROOM = 3 << 30  # bytes the sweep may add to the test process's address space
STEPS = 5  # options sampled from a long dropdown (kernels), both ends included


def notebook_panel_calls() -> list[tuple[str, str]]:
    """(notebook name, call source) for every ``<widgets module>.<name>_panel(...)`` in a notebook's code cells."""
    calls = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            # IPython magics and shell lines are not Python
            src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(src)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) and node.func.value.id in _SUBMODULES \
                        and node.func.attr.endswith("_panel"):
                    calls.append((path.name, ast.unparse(node)))
    return calls


CALLS = notebook_panel_calls()


def build(call: str) -> Panel:
    """The panel, built by the notebook's own call (modules bound as the notebook imports them)."""
    namespace = {name: importlib.import_module(f"vnetlab.widgets.{name}") for name in _SUBMODULES}
    return eval(call, namespace)  # noqa: S307 -- the repository's own notebook source


def _samples(lo: int, hi: int, step: int) -> list[int]:
    """Both ends, the middle and one step in from each end, on the step grid."""
    n = (hi - lo) // step
    picks = {0, 1, n // 2, n - 1, n}
    return sorted(lo + k * step for k in picks if 0 <= k <= n)


def moves(name: str, w: W.Widget) -> Iterator[tuple[W.Widget, str, object, bool]]:
    """(widget the reader touches, synced trait, value, offered) for one control, its range read live. ``offered``:
    a position the control itself offers (a slider stop, an option, a box's bounded value), which the panel must
    draw; a typed value outside may instead get a message naming the control."""
    if isinstance(w, SizeSlider):
        s = w.slider
        for v in _samples(s.min, s.max, s.step):
            yield s, "value", v, True
        # typed into the number box: what the slider cannot reach (inside the range it is the slider's path)
        for v in sorted(v for v in {w.min - 1, w.max + 1, 0, -1, *HUGE} if not w.min <= v <= w.max):
            yield w.readout, "value", v, False
    elif isinstance(w, W.FloatSlider):
        for v in (w.min, (w.min + w.max) / 2, w.max):
            yield w, "value", v, True
        # the browser's readout clamps what is typed to the range; a value past it that arrives anyway is refused,
        # the figure kept (tests/test_widget_comm.py)
        for v in (w.min - 1.0, w.max * 10 + 1.0):
            yield w, "value", v, True
    elif isinstance(w, W.BoundedIntText | W.IntText):
        lo, hi = getattr(w, "min", 0), getattr(w, "max", 2 * max(w.value, 1))
        for v in sorted({*_samples(lo, hi, w.step or 1), lo - 1, hi + 1, 0, -1, *HUGE}):
            # a bounded box clamps what is typed, so every value lands on an offered one
            yield w, "value", v, isinstance(w, W.BoundedIntText) or lo <= v <= hi
    elif isinstance(w, W.Dropdown | W.ToggleButtons | W.RadioButtons | W.Select):
        n = len(w.options)
        for i in sorted({round(k * (n - 1) / (STEPS - 1)) for k in range(STEPS)} if n > STEPS + 2 else range(n)):
            yield w, "index", i, True
    elif isinstance(w, W.Checkbox | W.ToggleButton):
        for v in (not w.value, w.value):
            yield w, "value", v, True
    else:
        raise AssertionError(f"control {name!r} is a {type(w).__name__}: the sweep does not know how to move it")


def home(w: W.Widget) -> tuple[W.Widget, str, object]:
    """How to put a control back where it was: (widget, synced trait, value)."""
    if isinstance(w, SizeSlider):
        return w.readout, "value", w.value
    trait = "index" if "index" in w.keys else "value"
    return w, trait, getattr(w, trait)


def shown(panel: Panel) -> str | None:
    """None if the panel shows its figure and summary, or a clear message instead of the figure; else what is
    wrong."""
    if panel.error is None:
        if panel.state is None or panel.png is None or panel.image.value != panel.png \
                or panel.image.layout.display is not None:
            return "no figure and no message"
        if not panel.summary().strip():
            return "a figure without its summary"
        return None
    err = panel.error
    if not err.strip() or "Traceback" in err or len(err) > 2000:
        return f"unclear message {err[:300]!r}"
    if panel.image.layout.display != "none":
        return f"a stale figure beside the message {err[:200]!r}"
    return None


class TooSlow(Exception):
    """A move that has not answered after SECONDS_PER_MOVE of CPU (raised by SIGPROF inside the panel's update)."""


def _alarm(_signum: int, _frame: object) -> None:
    raise TooSlow(f"no answer after {SECONDS_PER_MOVE} CPU s")


def move(panel: Panel, widget: W.Widget, trait: str, value: object, capfd: pytest.CaptureFixture) -> str | None:
    """Set one synced trait as the browser's comm message does; None if the panel took it well, else why not."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        previous = signal.signal(signal.SIGPROF, _alarm)
        signal.setitimer(signal.ITIMER_PROF, SECONDS_PER_MOVE)
        t0 = time.process_time()
        try:
            widget.set_state({trait: value})  # what the comm message of a browser change calls
        except Exception as exc:  # noqa: BLE001 -- any exception is the finding
            return f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
            took = time.process_time() - t0
    err = capfd.readouterr().err
    if caught:
        return f"warning: {caught[0].message}"
    if err:
        return f"stderr: {err[-300:]}"
    if took > SECONDS_PER_MOVE:
        return f"took {took:.1f} s"
    return shown(panel)


@pytest.fixture
def bounded_memory() -> Iterator[None]:
    """A runaway allocation (a typed size the model sweeps byte by byte) fails as MemoryError instead of taking
    the machine's memory: the address space may grow by MEMORY_HEADROOM while the sweep runs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                  if line.startswith("VmSize:")).split()[1]) * 1024
    limit = vm + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# (panel call up to its "(", control) whose refusal names another parameter: what the message says instead, and
# where the fix belongs. The sweep fails when one of these starts naming its control (remove it then).
MISNAMED: dict[tuple[str, str], str] = {}


def refused_badly(panel: Panel, call: str, name: str, offered: bool, misnamed: set[tuple[str, str]]) -> str | None:
    """A position the control offers refused, or a refusal that does not name the control moved (a known one
    from MISNAMED is added to ``misnamed``)."""
    if panel.error is None:
        return None
    if offered:
        return f"a position the control offers is refused: {panel.error[:200]!r}"
    key = (call.split("(")[0], name)
    if name in panel.error:
        return None if key not in MISNAMED else f"now names {name!r}: remove it from MISNAMED"
    if key in MISNAMED and MISNAMED[key] in panel.error:
        misnamed.add(key)
        return None
    return f"the message does not name {name!r}: {panel.error[:200]!r}"


def test_the_notebooks_build_panels():
    # notebooks 10-50 each put at least one panel before the reader (a lost call would empty the sweep)
    assert {nb[:2] for nb, _ in CALLS} >= {"10", "20", "30", "40", "50"}, CALLS


@pytest.mark.parametrize("notebook, call", CALLS, ids=[f"{nb[:2]}-{c.split('(')[0]}" for nb, c in CALLS])
def test_every_control_over_its_range_and_beyond(notebook, call, capfd, bounded_memory):
    style.use_style()
    panel = build(call)
    assert panel.error is None and shown(panel) is None, f"{call} as the notebook builds it: {panel.error}"
    problems = []
    misnamed: set[tuple[str, str]] = set()
    for name in list(panel.controls):
        control = panel.controls[name]
        back = home(control)
        for widget, trait, value, offered in list(moves(name, control)):
            why = move(panel, widget, trait, value, capfd) or refused_badly(panel, call, name, offered, misnamed)
            if why:
                problems.append(f"{name} {trait}={value!r}: {why}")
        why = move(panel, *back, capfd)
        if why or panel.error:
            problems.append(f"{name} back to {back[2]!r}: {why or panel.error}")
    if isinstance(panel, EthtoolPanel):
        # every ethtool -K toggle of the stack as the notebook builds it, clicked and clicked back
        for key in list(panel.toggles):
            for v in (not panel.toggles[key].value, panel.toggles[key].value):
                why = move(panel, panel.toggles[key], "value", v, capfd)
                if why:
                    problems.append(f"ethtool -K toggle {key} -> {v}: {why}")
    problems += [f"{key} in MISNAMED no longer occurs: remove it" for key in MISNAMED
                 if key[0] == call.split("(")[0] and key not in misnamed]
    assert not problems, f"{call}: " + "\n".join(problems)
