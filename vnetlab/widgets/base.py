"""The one panel base of vnetlab's widgets: controls over a plain state function, the figure redrawn as a PNG.

A panel is ``Panel(state_fn, controls)``: ``state_fn(**params, fig=figure)`` is a plain function (tested without a
frontend) returning a :class:`PanelState`; the panel renders its figure to PNG bytes into an ``ipywidgets.Image``
shown at the PNG's own width, so no interactive backend is needed and the same code runs in JupyterLab, nbval and
headless. A ValueError from the model is shown as its text instead of a traceback, and the figure is hidden.
Where widgets cannot run (nbconvert's HTML export, a viewer without a widget manager) a panel shows as its
summary and current figure (:meth:`Panel._repr_mimebundle_`).

The control helpers (:func:`size_slider`, :func:`float_slider`, :func:`choice`, :func:`checkbox`, :func:`int_box`)
are public so that every panel module builds its controls the same way: labels never cut off, sliders never
collapsed.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import re
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import vnetlab.widgets._textrender as _textrender
from vnetlab.checks import public
from vnetlab.viz.style import new_figure

__all__ = ["PanelState", "Panel", "SizeSlider", "render_png", "png_width", "size_slider", "float_slider", "int_box",
           "choice", "checkbox"]


@dataclass
class PanelState:
    """What a panel shows for one set of parameters: the model result, the figure and a one-line summary."""

    params: dict[str, Any]
    figure: Figure
    text: str
    result: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def render_png(fig: Figure) -> bytes:
    """The figure as deterministic PNG bytes (Agg, no timestamp metadata), at the figure's own size and dpi.

    Text is drawn a string at a time where matplotlib would draw it a glyph at a time (widgets._textrender:
    the same pixels but for antialiasing, at a fraction of the time)."""
    # Keep one Agg canvas on the figure: savefig would otherwise make a new canvas and renderer for every PNG,
    # and matplotlib's text-metrics cache (keyed on the renderer) would miss for every label at every update.
    if _textrender.AVAILABLE:
        if not isinstance(fig.canvas, _textrender.WholeStringCanvas):
            _textrender.WholeStringCanvas(fig)
    elif not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    # compress_level 1: a widget PNG is shown once; fast encoding matters more than a few KB.
    fig.savefig(buf, format="png", dpi=fig.dpi, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def png_width(png: bytes) -> int:
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
def int_box(value: int, lo: int, hi: int, desc: str, step: int = 1) -> W.BoundedIntText:
    """A number that is chosen, not swept (a count, a ring size)."""
    return W.BoundedIntText(value=value, min=lo, max=hi, step=step, description=desc, style=_LABEL,
                            layout=W.Layout(width="auto"))


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
# Panel

_TAGS = re.compile(r"<[^>]+>")


class Panel(W.VBox):
    """Controls, a summary line and the figure (PNG in an ipywidgets.Image), redrawn in place on change.

    ``rows``: the control names row by row (default: sliders two to a row, then the other controls four to a
    row). ``figure_key``: panels with several views keep one figure per key of the parameters (so each view's
    axes are made once). ``constrain(panel)`` runs before each update, with updates held, to adjust controls
    to each other (a payload range that follows the MTU).
    """

    @public
    def __init__(self, state_fn: Callable[..., PanelState], controls: dict[str, W.DOMWidget], *,
                 rows: Sequence[Sequence[str]] | None = None,
                 figure_key: Callable[[dict[str, Any]], Hashable] | None = None,
                 constrain: Callable[[Panel], None] | None = None) -> None:
        self.state_fn = state_fn
        self.controls = controls
        self.figure_key = figure_key
        self.constrain = constrain
        self._figures: dict[Hashable, Figure] = {}
        self.figure: Figure = new_figure()
        self.image = W.Image(format="png", layout=W.Layout(height="auto", max_width="100%"))
        self.message = W.HTML(layout=W.Layout(width="auto"))
        self.state: PanelState | None = None
        self.error: str | None = None
        self.png: bytes | None = None
        self._held = 0
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
        for c in controls.values():
            c.observe(self._on_change, names="value")
        self.update()

    def params(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Change several controls with one update at the end (none while held)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1

    def _on_change(self, _change: Any) -> None:  # noqa: ANN401
        if not self._held:
            self.update()

    def _figure_for(self, params: dict[str, Any]) -> Figure:
        if self.figure_key is None:
            return self.figure
        key = self.figure_key(params)
        if key not in self._figures:
            self._figures[key] = self.figure if not self._figures else new_figure()
        return self._figures[key]

    def update(self) -> PanelState | None:
        """Recompute and redraw; a ValueError from the model is shown as text and the figure is hidden."""
        if self.constrain is not None:
            with self.hold():
                self.constrain(self)
        params = self.params()
        fig = self._figure_for(params)
        try:
            state = self.state_fn(**params, fig=fig)
        except ValueError as exc:
            self.error = str(exc)
            self.state = None
            self.png = None
            self.message.value = f'<span style="color:#a33b00">{html.escape(self.error)}</span>'
            self.image.layout.display = "none"
            return None
        self.error = None
        self.state = state
        self.figure = state.figure
        self.message.value = state.text
        self.png = render_png(state.figure)
        self.image.value = self.png
        # shown at its own width (drawn for it), never stretched; narrower windows scale it down
        self.image.layout.width = f"{png_width(self.png)}px"
        self.image.layout.display = None
        return state

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
