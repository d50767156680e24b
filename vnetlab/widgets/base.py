"""The one panel base of vnetlab's widgets: controls over a plain state function, the figure redrawn as a PNG.

A panel is ``Panel(state_fn, controls)``: ``state_fn(**params, fig=figure)`` is a plain function (tested without a
frontend) returning a :class:`PanelState`; the panel renders its figure to PNG bytes into an ``ipywidgets.Image``
shown at the PNG's own width, so no interactive backend is needed and the same code runs in JupyterLab, nbval and
headless. A ValueError (or TypeError) from the model or from a control's range rule is shown as its text instead of a
traceback, and the figure is hidden; the panel stays live. A value the browser sends that is not one the control
can hold (a string or None in a number box, a fraction for an integer, an option index past the list, a float
outside its slider) is refused before ipywidgets applies it: the panel says which control, what arrived and what
the control takes (the state function's ``In`` range), the control goes back to its value in the browser, and the
figure still shows that value (:meth:`Panel.declared_range`).
Where widgets cannot run (nbconvert's HTML export, a viewer without a widget manager) a panel shows as its
summary and current figure (:meth:`Panel._repr_mimebundle_`).

The control helpers (:func:`size_slider`, :func:`float_slider`, :func:`choice`, :func:`checkbox`) are public so
that every panel module builds its controls the same way: labels never cut off, sliders never collapsed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import inspect
import json
import os
import re
import struct
import threading
import time
import typing
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W
import numpy as np
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import vnetlab.widgets._textrender as _textrender
from vnetlab.checks import In, check_bool, check_float, check_int, param_annotations, public
from vnetlab.errors import ArgumentError
from vnetlab.viz.style import new_figure

__all__ = ["PanelState", "Panel", "SizeSlider", "render_png", "png_width", "size_slider", "float_slider", "choice",
           "checkbox"]


@dataclass
class PanelState:
    """What a panel shows for one set of parameters: the model result, the figure and a one-line summary."""

    params: dict[str, Any]
    figure: Figure
    text: str
    result: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


@public
def render_png(fig: Figure) -> bytes:
    """The figure as deterministic PNG bytes (Agg, no timestamp metadata), at the figure's own size and dpi.

    Text is drawn a string at a time where matplotlib would draw it a glyph at a time (widgets._textrender:
    the same pixels but for antialiasing, at a fraction of the time)."""
    return _encode_png(_draw(fig))


def _draw(fig: Figure) -> FigureCanvasAgg:
    """Rasterise the figure on its kept Agg canvas (what savefig's print_png draws before it encodes)."""
    # Keep one Agg canvas on the figure: savefig would otherwise make a new canvas and renderer for every PNG,
    # and matplotlib's text-metrics cache (keyed on the renderer) would miss for every label at every update.
    if _textrender.AVAILABLE:
        if not isinstance(fig.canvas, _textrender.WholeStringCanvas):
            _textrender.WholeStringCanvas(fig)
    elif not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas


def _encode_png(canvas: FigureCanvasAgg) -> bytes:
    """The drawn canvas as PNG bytes: RGB where every pixel is opaque (panel figures are), else RGBA; no row
    filter, zlib level 1, the dpi in pHYs and no other chunk (no timestamp, no Software).

    Measured on the packet panel (900x397 px, benchmarks/bench_browser_slider.py's report): 6-7 ms CPU and 41 KB,
    against 10 ms and 49 KB for savefig's RGBA through Pillow (its adaptive row filter costs more than it saves
    on flat fills); the same pixels."""
    rgba = np.asarray(canvas.buffer_rgba())
    height, width = rgba.shape[:2]
    opaque = bool((rgba[..., 3] == 255).all())
    channels = 3 if opaque else 4
    rows = np.empty((height, 1 + width * channels), np.uint8)
    rows[:, 0] = 0  # filter type 0 (None) for every row
    rows[:, 1:] = rgba[..., :channels].reshape(height, width * channels)
    ppm = round(canvas.figure.dpi / 0.0254)  # pixels per metre, as Pillow writes a dpi
    return b"".join((_PNG_SIGNATURE,
                     _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2 if opaque else 6, 0, 0, 0)),
                     _png_chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1)),
                     _png_chunk(b"IDAT", zlib.compress(rows, 1)),
                     _png_chunk(b"IEND", b"")))


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


@public
def png_width(png: bytes | bytearray | memoryview) -> int:
    """Pixel width of a PNG (its IHDR chunk)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big")


# --------------------------------------------------------------------------------------------------
# Controls

_LABEL = {"description_width": "initial"}  # a description as wide as its text: never cut off


class SizeSlider(W.HBox):
    """An integer size to sweep: a slider (continuous_update=False) and an editable number beside it.

    ``value`` is what the panel uses. Dragging the slider or typing in the number box sets it; a typed value
    outside the slider's range is kept as typed (the slider stays at its end) so that the model, not the widget,
    says why it is refused. (ipywidgets' own slider readout clamps what is typed to the range.)
    """

    value = traitlets.Int()

    @public
    def __init__(self, value: int, lo: int, hi: int, description: str, *, step: int = 1,
                 width: str = "430px") -> None:
        self.slider = W.IntSlider(value=min(max(value, lo), hi), min=lo, max=hi, step=step, readout=False,
                                  continuous_update=False, description=description, style=_LABEL,
                                  layout=W.Layout(flex="1 1 auto", width="auto", min_width="220px"))
        self.readout = W.IntText(value=value, continuous_update=False, layout=W.Layout(width="5.5em",
                                                                                        flex="0 0 auto"))
        super().__init__([self.slider, self.readout], layout=W.Layout(width=width, align_items="center"))
        self._syncing = False
        self.value = value
        self.slider.observe(self._from_slider, names="value")
        self.readout.observe(self._from_readout, names="value")

    @property
    def description(self) -> str:
        return self.slider.description

    @property
    def min(self) -> int:
        return self.slider.min

    @property
    def max(self) -> int:
        return self.slider.max

    @property
    def step(self) -> int:
        return self.slider.step

    @public
    def set_range(self, lo: int, hi: int, step: int | None = None) -> None:
        """A new slider range; a value outside it moves to its nearest end (as if dragged there). The same range
        again changes nothing (a typed out-of-range value stays for the model to refuse)."""
        if (lo, hi, step or self.slider.step) == (self.slider.min, self.slider.max, self.slider.step):
            return
        with self.slider.hold_trait_notifications():
            if lo > self.slider.max:
                self.slider.max = hi
                self.slider.min = lo
            else:
                self.slider.min = lo
                self.slider.max = hi
            if step is not None:
                self.slider.step = step
        if not lo <= self.value <= hi:
            self.value = min(max(self.value, lo), hi)

    @traitlets.observe("value")
    def _to_parts(self, change: Mapping[str, Any]) -> None:
        self._syncing = True
        try:
            self.readout.value = change["new"]
            self.slider.value = min(max(change["new"], self.slider.min), self.slider.max)
        finally:
            self._syncing = False

    def _from_slider(self, change: Mapping[str, Any]) -> None:
        if not self._syncing:
            self.value = change["new"]

    def _from_readout(self, change: Mapping[str, Any]) -> None:
        if not self._syncing:
            self.value = change["new"]


@public
def size_slider(value: int, lo: int, hi: int, desc: str, step: int = 1, *, width: str = "430px") -> SizeSlider:
    """A swept size (payload, MTU, buffer truesize, EWMA, segments, gso_size) as a :class:`SizeSlider`; ``width``
    is the whole control's (label, track and number): give a long label more so that the track stays long."""
    return SizeSlider(value, lo, hi, desc, step=step, width=width)


@public
def float_slider(value: float, lo: float, hi: float, desc: str, step: float = 0.1, *, fmt: str = ".2f",
                 width: str = "430px") -> W.FloatSlider:
    """A swept cost or rate (not a size): ipywidgets' FloatSlider with its editable readout (typed values are
    clamped to the range), continuous_update off, a label as wide as its text and a track that keeps its width."""
    return W.FloatSlider(value=value, min=lo, max=hi, step=step, description=desc, continuous_update=False,
                         readout=True, readout_format=fmt, style=_LABEL,
                         layout=W.Layout(width=width, min_width="300px"))


@public
def choice(value: Any, options: Any, desc: str) -> W.Dropdown:  # noqa: ANN401
    """A dropdown as wide as its label and longest option."""
    return W.Dropdown(value=value, options=list(options), description=desc, style=_LABEL,
                      layout=W.Layout(width="auto"))


@public
def checkbox(value: bool, desc: str) -> W.Checkbox:
    """A checkbox whose description is never cut off."""
    return W.Checkbox(value=value, description=desc, indent=False, style=_LABEL, layout=W.Layout(width="auto"))


# --------------------------------------------------------------------------------------------------
# Debug timing of the render path

# benchmarks/bench_browser_slider.py sets VNETLAB_PANEL_TIMING to a file: every update then appends one JSON line
# of wall-clock stamps (time.time(), the clock the browser's performance.timeOrigin + now() reads). Unset, an
# update costs one global lookup and no-op calls.
TIMING_LOG: str | None = os.environ.get("VNETLAB_PANEL_TIMING") or None


class _RenderClock:
    """Stamps of one Panel.update: start, state (model + artists), drawn (Agg), encoded (PNG), sent (comm), end;
    wall clock (``t``) and this process's CPU time (``cpu``, which other work on the machine does not inflate)."""

    def __init__(self, panel: Panel) -> None:
        self.panel = panel
        self.stamps = {"start": time.time()}
        self.cpu = {"start": time.process_time()}

    def mark(self, name: str) -> None:
        self.stamps[name] = time.time()
        self.cpu[name] = time.process_time()

    def done(self, params: dict[str, Any], **info: Any) -> None:  # noqa: ANN401
        self.mark("end")
        record = {"panel": type(self.panel).__name__, "state_fn": getattr(self.panel.state_fn, "__name__", "?"),
                  "id": id(self.panel), "params": {k: v for k, v in params.items() if isinstance(v, int | float | str)},
                  **info, "t": self.stamps, "cpu": self.cpu}
        with open(TIMING_LOG, "a") as log:  # type: ignore[arg-type]
            log.write(json.dumps(record) + "\n")


class _NoClock:
    """The clock when timing is off: does nothing."""

    def mark(self, name: str) -> None:
        pass

    def done(self, params: dict[str, Any], **info: Any) -> None:  # noqa: ANN401
        pass


_NO_CLOCK = _NoClock()


# --------------------------------------------------------------------------------------------------
# Panel

# What a panel remembers (Panel docstring): a slider's neighbourhood both ways; a PNG is 20-65 KB.
SHOWN_CACHE = 32
# A panel just shown draws, once the kernel has been idle this long, one step either way of each integer slider and
# the other value of each checkbox and toggle button (Panel._prefetch): a reader's first step is then answered from
# memory, as the following ones are (the step ahead). One drawing per loop turn, so a reader's action waits for
# one drawing at most; it stops as soon as the reader changes anything. Not on a workshop hub (VNETLAB_HOSTED, set by
# deploy/jupyterhub_config.py and deploy/k8s/values.yaml): its attendees share cores and run the same cell within
# seconds, so figures nobody asked for would delay the figures others did (deploy/README.md).
PREFETCH_DELAY_S = 0.5
PREFETCH = not os.environ.get("VNETLAB_HOSTED")


def _shown_key(params: Mapping[str, Any]) -> Hashable | None:
    """The parameters as a key of plain values (None: a value that is not plain, never remembered)."""
    try:
        return tuple((name, _plain(v)) for name, v in params.items())
    except TypeError:
        return None


def _plain(value: Any) -> Hashable:  # noqa: ANN401
    # the type is part of the key: 1, 1.0 and True draw different labels
    if value is None or type(value) in (bool, int, float, str):
        return type(value).__name__, value
    if isinstance(value, tuple | list):
        return "seq", tuple(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return "map", tuple((_plain(k), _plain(v)) for k, v in value.items())
    raise TypeError(f"not a plain value: {type(value).__name__}")

_TAGS = re.compile(r"<[^>]+>")
_SELECTIONS = (W.Dropdown, W.ToggleButtons, W.RadioButtons, W.Select)


def _browser_parts(control: W.Widget) -> list[W.Widget]:
    """The widgets of a control whose value the browser sends (a SizeSlider: its slider and its number box)."""
    return [control.slider, control.readout] if isinstance(control, SizeSlider) else [control]


def _in_of(annotation: Any) -> In | None:  # noqa: ANN401
    """The ``In`` of ``Annotated[..., In(...)]`` (or of a union member: ``Annotated[float, In(...)] | None``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return next((m for m in annotation.__metadata__ if isinstance(m, In)), None)
    return next((r for r in map(_in_of, typing.get_args(annotation)) if r is not None), None)


def _label(control: W.Widget | None, name: str) -> str:
    """The control as the reader sees it and as the state function names it: 'packets in the flow (n_packets)';
    a widget that is no named control (an ethtool -K toggle) by ``name`` alone."""
    text = _TAGS.sub("", str(getattr(control, "description", "") or "")) if control is not None else ""
    return text if f"({name})" in text else f"{text} ({name})" if text and text != name else name


def _options(widget: W.Widget) -> str:
    """'0 udp, 1 tcp' (a long list: its first three and last); an option is a value or a (label, value) pair."""
    labels = [f"{i} {o[0] if isinstance(o, tuple) and len(o) == 2 else o}" for i, o in enumerate(widget.options)]
    return ", ".join(labels if len(labels) <= 6 else [*labels[:3], "...", labels[-1]])


class Panel(W.VBox):
    """Controls, a summary line and the figure (PNG in an ipywidgets.Image), redrawn in place on change.

    ``rows``: the control names row by row (default: sliders two to a row, then the other controls four to a
    row). ``figure_key``: panels with several views keep one figure per key of the parameters (so each view's
    axes are made once). ``constrain(panel)`` runs before each update, with updates held, to adjust controls
    to each other (a payload range that follows the MTU).

    A panel remembers what it showed for the last :data:`SHOWN_CACHE` sets of parameters (state, summary, PNG):
    a slider moved back to a value it showed is answered without the model, the drawing or the PNG. The figure
    is then redrawn for those parameters only when something reads :attr:`figure` or :attr:`state`. (A state
    function is a plain function of the parameters, and an updated figure draws what a fresh one does.) It also
    remembers what it has not shown yet, drawn while the kernel is idle: the next step of a slider stepped with
    the keyboard (:meth:`_draw_ahead`), and, once shown, the first step of each slider and each checkbox flipped
    (:meth:`_prefetch`). ``png_key(params)``, where given, names what the figure shows, so that parameters with an
    equal key reuse the PNG without Agg drawing it (notebook 40's explorer: the devices' features, whatever
    ethtool -K history led there).
    """

    @public
    def __init__(self, state_fn: Callable[..., PanelState], controls: dict[str, W.DOMWidget], *,
                 rows: Sequence[Sequence[str]] | None = None,
                 figure_key: Callable[[dict[str, Any]], Hashable] | None = None,
                 constrain: Callable[[Panel], None] | None = None,
                 png_key: Callable[[dict[str, Any]], Hashable | None] | None = None) -> None:
        # One drawing at a time: JupyterLab sends widget messages to a kernel subshell (its commsOverSubshells
        # setting), so updates run on that thread while the cell that made the panel, and the first steps drawn
        # after it (_prefetch), run on the main one; both share the panel's figure and memory.
        self._lock = threading.RLock()
        self.state_fn = state_fn
        self.controls = controls
        self.figure_key = figure_key
        self.constrain = constrain
        self.png_key = png_key
        self._pngs: OrderedDict[Hashable, bytes] = OrderedDict()  # png_key -> PNG (the figure's pixels)
        self._figures: dict[Hashable, Figure] = {}
        self._figure: Figure = new_figure()
        self.image = W.Image(format="png", layout=W.Layout(height="auto", max_width="100%"))
        self.message = W.HTML(layout=W.Layout(width="auto"))
        self._state: PanelState | None = None
        self.error: str | None = None
        self.png: bytes | None = None
        self._held = 0
        self._shown: OrderedDict[Hashable, tuple[PanelState, bytes]] = OrderedDict()
        self._stale: dict[str, Any] | None = None  # parameters the PNG shows and the figure does not yet
        self._shown_params: dict[str, Any] | None = None
        if rows is None:
            sliders = [n for n, c in controls.items() if isinstance(c, SizeSlider | W.FloatSlider | W.IntSlider)]
            others = [n for n in controls if n not in sliders]
            rows = [sliders[i:i + 2] for i in range(0, len(sliders), 2)] + [others[i:i + 4]
                                                                           for i in range(0, len(others), 4)]
        placed = [n for row in rows for n in row]
        if sorted(placed) != sorted(controls):
            raise ValueError(f"rows must place every control once: {placed} vs {list(controls)}")
        boxes = [W.HBox([controls[n] for n in row], layout=W.Layout(flex_flow="row wrap", align_items="center",
                                                                    grid_gap="4px 16px"))
                 for row in rows]
        super().__init__(boxes + [self.message, self.image])
        self.comm_refusal: str | None = None  # a browser value a control refused, shown until the next update
        self._body = ""  # what the message shows besides that refusal
        self._ranges: dict[str, In | None] = {}
        for name, c in controls.items():
            for part in _browser_parts(c):
                self._guard(part, name)
        for c in controls.values():
            c.observe(self._on_change, names="value")
            c.observe(self._draw_ahead, names="value")  # after _on_change, which subclasses override
        self.update()
        self._prefetch()

    def params(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    @property
    def figure(self) -> Figure:
        """The figure of what the panel shows (redrawn first if the PNG came from :data:`SHOWN_CACHE`)."""
        self._catch_up()
        return self._figure

    @figure.setter
    def figure(self, fig: Figure) -> None:
        self._figure = fig

    @property
    def state(self) -> PanelState | None:
        """The :class:`PanelState` shown (None while the model refuses the parameters)."""
        self._catch_up()
        return self._state

    @state.setter
    def state(self, state: PanelState | None) -> None:
        self._state = state

    def _catch_up(self) -> None:
        """Draw the figure for the parameters a remembered PNG shows."""
        with self._lock:
            params, self._stale = self._stale, None
            if params is not None:
                self._state = self.state_fn(**params, fig=self._figure_for(params))
                self._figure = self._state.figure

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Change several controls with one update at the end (none while held)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1

    def _on_change(self, _change: Mapping[str, Any]) -> None:
        if not self._held:
            self.update()

    def _draw_ahead(self, change: Mapping[str, Any]) -> None:
        """After one slider step (a key press: not a drag or a typed value), draw the next step the same way once
        the kernel is idle (an asyncio callback: the kernel's loop runs it after this update's messages are
        sent), so that a reader stepping on finds it in :data:`SHOWN_CACHE`; a sweep then costs one drawing per
        step, as before, plus one at each turn. Only where a loop runs (the kernel; not a plain script or test)
        and for integer sliders (a float step lands on values the browser rounds otherwise)."""
        owner = change.get("owner")
        if self._held or self.error is not None or not isinstance(owner, SizeSlider | W.IntSlider):
            return
        name = next((n for n, c in self.controls.items() if c is owner), None)
        old, new = change.get("old"), change.get("new")
        if name is None or not isinstance(old, int) or not isinstance(new, int) or abs(new - old) != owner.step:
            return
        ahead = new + (owner.step if new > old else -owner.step)
        if owner.min <= ahead <= owner.max:
            self._ahead({**self.params(), name: ahead})

    def _prefetch(self) -> None:
        """Schedule the first steps a reader can take from what the panel shows now (:data:`PREFETCH_DELAY_S`):
        each integer slider one step right and left, each checkbox and toggle button flipped, drawn one per loop
        turn into :data:`SHOWN_CACHE` while the parameters are still the ones shown. Only where a loop runs, and
        not on a workshop hub (:data:`PREFETCH`)."""
        if not PREFETCH or self.error is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        shown = self.params()
        steps: list[dict[str, Any]] = []
        for name, c in self.controls.items():
            if isinstance(c, SizeSlider | W.IntSlider) and type(c.value) is int:
                steps += [{**shown, name: v} for v in (c.value + c.step, c.value - c.step) if c.min <= v <= c.max]
        for name, c in self.controls.items():
            if isinstance(c, W.Checkbox | W.ToggleButton) and type(c.value) is bool and not c.disabled:
                steps.append({**shown, name: not c.value})

        def next_one() -> None:
            if not steps or self.params() != shown or self.error is not None:
                return  # done, or the reader moved something: the step ahead takes over
            params = steps.pop(0)
            key = _shown_key(params)
            if key is not None and key not in self._shown:
                self._draw_for_later(params, key)
            loop.call_soon(next_one)

        loop.call_later(PREFETCH_DELAY_S, next_one)

    def _ahead(self, params: dict[str, Any]) -> None:
        """Draw ``params`` into :data:`SHOWN_CACHE` once the kernel is idle (an asyncio callback: the kernel's loop
        runs it after this update's messages are sent); nothing where no loop runs or it is remembered already."""
        key = _shown_key(params)
        if key is None or key in self._shown:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_soon(self._draw_for_later, params, key)

    def _draw_for_later(self, params: dict[str, Any], key: Hashable) -> None:
        """Draw ``params`` into :data:`SHOWN_CACHE` without showing it (the widgets keep what they show)."""
        with self._lock:
            self._draw_for_later_locked(params, key)

    def _draw_for_later_locked(self, params: dict[str, Any], key: Hashable) -> None:
        if key in self._shown or self.error is not None:
            return
        clock = _RenderClock(self) if TIMING_LOG else _NO_CLOCK
        shown = self._shown_params if self._stale is None else self._stale
        fig = self._figure_for(params)
        try:
            state = self.state_fn(**params, fig=fig)
        except ValueError:
            return
        finally:
            if fig is self._figure:
                self._stale = shown  # the figure now holds the step ahead; redrawn for what is shown if read
        clock.mark("state")
        self._remember(key, state, self._png_of(params, state, clock))
        clock.done(params, ahead=True)

    def _png_of(self, params: dict[str, Any], state: PanelState, clock: _RenderClock | _NoClock) -> bytes:
        """The PNG of ``state``'s figure: Agg's pixels encoded, or, for a panel with ``png_key``, the PNG drawn
        before for an equal key (``png_key(params)`` names everything the figure shows, so equal keys draw equal
        pixels: notebook 40's explorer keys by the devices' features, not by the ethtool -K commands that led
        there)."""
        key = self.png_key(params) if self.png_key is not None else None
        png = self._pngs.get(key) if key is not None else None
        if png is not None:
            self._pngs.move_to_end(key)
            clock.mark("drawn")
            clock.mark("encoded")
            return png
        canvas = _draw(state.figure)
        clock.mark("drawn")
        png = _encode_png(canvas)
        clock.mark("encoded")
        if key is not None:
            self._pngs[key] = png
            if len(self._pngs) > SHOWN_CACHE:
                self._pngs.popitem(last=False)
        return png

    def _remember(self, key: Hashable, state: PanelState, png: bytes) -> None:
        self._shown[key] = (state, png)
        if len(self._shown) > SHOWN_CACHE:
            self._shown.popitem(last=False)

    def _figure_for(self, params: dict[str, Any]) -> Figure:
        if self.figure_key is None:
            return self._figure
        key = self.figure_key(params)
        if key not in self._figures:
            self._figures[key] = self._figure if not self._figures else new_figure()
        return self._figures[key]

    def update(self) -> PanelState | None:
        """Recompute and redraw; a ValueError from the model is shown as text and the figure is hidden."""
        with self._lock:
            return self._update_locked()

    def _update_locked(self) -> PanelState | None:
        clock = _RenderClock(self) if TIMING_LOG else _NO_CLOCK
        params = self.params()
        if self.constrain is not None:
            try:
                with self.hold():
                    self.constrain(self)
            except (ValueError, TypeError) as exc:  # a value the front end sent that the ranges cannot follow
                return self._refuse(params, exc, clock)
        params = self.params()
        key = _shown_key(params)
        shown = self._shown.get(key) if key is not None else None
        if shown is not None:
            self._shown.move_to_end(key)
            state, png = shown
            self._figure = self._figure_for(params)
            self._stale = params
            clock.mark("state")
            clock.mark("drawn")
            clock.mark("encoded")
        else:
            self._stale = None  # redrawn for these parameters below
            try:
                state = self.state_fn(**params, fig=self._figure_for(params))
            except (ValueError, TypeError) as exc:
                return self._refuse(params, exc, clock)
            clock.mark("state")
            self._figure = state.figure
            png = self._png_of(params, state, clock)
            if key is not None:
                self._remember(key, state, png)
        self.error = None
        self._state = state
        self._shown_params = params
        self._say(state.text)
        self.png = png
        self.image.value = png
        clock.mark("sent")
        # shown at its own width (drawn for it), never stretched; narrower windows scale it down
        self.image.layout.width = f"{png_width(png)}px"
        self.image.layout.display = None
        clock.done(params, png_bytes=len(png), cached=shown is not None)
        return state

    def _refuse(self, params: dict[str, Any], exc: Exception, clock: _RenderClock | _NoClock) -> None:
        """Show why the parameters are refused instead of the figure; the panel stays live for the next value."""
        self.error = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        self._state = None
        self.png = None
        self._say(f'<span style="color:#a33b00">{html.escape(self.error)}</span>')
        self.image.layout.display = "none"
        clock.done(params, error=True)
        return None

    def _say(self, body: str) -> None:
        """Show ``body`` (the summary or the model's refusal); a refusal of a browser value goes with it."""
        self._body = body
        self.comm_refusal = None
        self.message.value = body

    # -- values from the browser -------------------------------------------------------------------------

    @public
    def declared_range(self, name: str) -> In | None:
        """The range the state function declares for control ``name`` (its ``Annotated[int | float, In(...)]``
        parameter, or its ``**kwargs`` annotation), None where it declares none."""
        if name not in self._ranges:
            annotations = param_annotations(self.state_fn)
            annotation = annotations.get(name)
            if annotation is None:
                params = inspect.signature(inspect.unwrap(self.state_fn)).parameters.values()
                annotation = next((annotations.get(p.name) for p in params if p.kind is p.VAR_KEYWORD), None)
            self._ranges[name] = _in_of(annotation)
        return self._ranges[name]

    def _guard(self, widget: W.Widget, name: str | Callable[[], str]) -> None:
        """Route what the browser sends to ``widget`` (Widget._handle_msg's "update" calls set_state) through
        :meth:`_from_browser`; ``name``: the control's name, or a function giving it when a value arrives."""
        apply = widget.set_state

        def set_state(sync_data: dict[str, Any]) -> None:
            self._from_browser(widget, name() if callable(name) else name, apply, sync_data)

        widget.set_state = set_state

    def _from_browser(self, widget: W.Widget, name: str, apply: Callable[[dict[str, Any]], None],
                      sync_data: dict[str, Any]) -> None:
        """Apply a browser update to one control's widget, or refuse it: a value the control cannot hold never
        reaches its traits (ipywidgets would raise TraitError into the kernel log, or cast 3.7 to 3, "12" to 12,
        1 to True, or clamp to the slider)."""
        with self._lock:
            control = self.controls.get(name)
            try:
                typed = self._check_from_browser(widget, control, name, sync_data)
            except ArgumentError as exc:
                self._refuse_from_browser(widget, control, name, sync_data, str(exc))
                return
            if typed is not None:
                # an int beyond the slider's track, as if typed in the number box: the model says whether it fits
                control.value = typed  # type: ignore[union-attr]
                widget.send_state("value")  # the slider shows its end
                return
            try:
                apply(sync_data)
            except (traitlets.TraitError, ValueError, TypeError) as exc:
                self._refuse_from_browser(widget, control, name, sync_data, f"{type(exc).__name__}: {exc}")

    def _check_from_browser(self, widget: W.Widget, control: W.Widget | None, name: str,
                            sync_data: dict[str, Any]) -> int | None:
        """Raise ArgumentError for a value ``widget`` cannot hold (the wording of vnetlab.checks, the range the
        state function declares); an int beyond a SizeSlider's track is returned, to be taken as typed."""
        rng = self.declared_range(name) or In(None, None)
        for key, value in sync_data.items():
            if key == "index" and isinstance(widget, _SELECTIONS):
                check_int(name, value, 0, len(widget.options) - 1, f"the position of an option: {_options(widget)}")
            elif key != "value":
                continue
            elif isinstance(widget, W.Checkbox | W.ToggleButton):
                check_bool(name, value, "ticked or not" if isinstance(widget, W.Checkbox) else "pressed or not")
            elif isinstance(widget, W.FloatSlider):
                check_float(name, value, widget.min, widget.max,
                            (f"{rng.meaning}; " if rng.meaning else "") + "the slider's range")
            elif isinstance(control, SizeSlider):
                if type(value) is not int:  # JSON brings ints and floats; check_int refuses a float, str, None, bool
                    check_int(name, value, rng.lo, rng.hi, rng.meaning)
                if widget is control.slider and not control.slider.min <= value <= control.slider.max:
                    return value
        return None

    def _refuse_from_browser(self, widget: W.Widget, control: W.Widget | None, name: str,
                             sync_data: dict[str, Any], why: str) -> None:
        """Say which control refused what, and put the browser's widget back to the value the figure shows."""
        kept = getattr(control if control is not None else widget, "value", None)
        self.comm_refusal = f"{_label(control, name)}: {why}; it stays at {kept!r}"
        self.message.value = (f'<span style="color:#a33b00">Refused from the browser: '
                              f"{html.escape(self.comm_refusal)}</span><br>{self._body}")
        keys = [k for k in sync_data if k in widget.keys]
        if keys:
            widget.send_state(keys)  # no echo: the refused value is nobody's

    def summary(self) -> str:
        """The panel's message (or error) as plain text."""
        return html.unescape(_TAGS.sub("", self.message.value.replace("<br>", "\n")))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:  # noqa: ANN401
        """The live widget for JupyterLab, and for anything without a widget manager (nbconvert's HTML export,
        viewers) the summary and the current figure: text/html (summary + the PNG inline), image/png and
        text/plain. JupyterLab renders only the widget view (its renderer ranks first)."""
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = self.summary()
        body = f'<div class="vnetlab-panel-summary">{self.message.value}</div>'
        if self.png is not None:
            b64 = base64.b64encode(self.png).decode("ascii")
            data["image/png"] = b64
            body += (f'<img alt="{html.escape(self.summary().splitlines()[0] if self.summary() else "figure")}" '
                     f'width="{png_width(self.png)}" style="max-width:100%" src="data:image/png;base64,{b64}">')
        data["text/html"] = f'<div class="vnetlab-panel">{body}</div>'
        return data
