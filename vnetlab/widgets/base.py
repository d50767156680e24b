"""The one panel base of vnetlab's widgets: controls over a plain state function, the figure redrawn as a PNG.

A panel is ``Panel(state_fn, controls)``: ``state_fn(**params, fig=figure)`` is a plain function (tested without a
frontend) returning a :class:`PanelState`; the panel renders its figure to PNG bytes into an ``ipywidgets.Image``,
so no interactive backend is needed and the same code runs in JupyterLab, nbval and headless. A ValueError from
the model is shown as its text instead of a traceback. The control helpers (:func:`int_box`, :func:`choice`)
are public so every panel module builds its controls the same way.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

from vnetlab.viz.style import new_figure

__all__ = ["PanelState", "Panel", "render_png", "int_box", "choice", "WIDGET_RC"]


@dataclass
class PanelState:
    """What a panel shows for one set of parameters: the model result, the figure and a one-line summary."""

    params: dict[str, Any]
    figure: Figure
    text: str
    result: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


# Widget PNGs only: unhinted glyphs lay out and render faster, and text is most of a redraw's time (the static
# figures keep the vnetlab style as is).
WIDGET_RC = {"text.hinting": "no_hinting"}


class _WholeStringRenderer(RendererAgg):
    """RendererAgg drawing each horizontal plain-text string as one FreeType bitmap, as matplotlib <= 3.10 did.

    matplotlib 3.11 renders text glyph by glyph from Python (a few hundred microseconds per character on this
    machine), which is most of a panel redraw. Used for the receive-path panels' PNGs only, on the matplotlib
    versions it was checked against; math text, rotated text and any failure take matplotlib's own path.
    """

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or angle:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        try:
            font = self._prepare_font(prop)
            font.set_text(s, 0, flags=get_hinting_flag())
            font.draw_glyphs_to_bitmap(antialiased=gc.get_antialiased())
            descent = font.get_descent() / 64.0
            xo, yo = font.get_bitmap_offset()
            image = np.asarray(font.get_image())
            self._renderer.draw_text_image(image, round(x + xo / 64.0), round(y + yo / 64.0 + descent) + 1, 0, gc)
        except (AttributeError, TypeError, ValueError):
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)


class _WidgetCanvas(FigureCanvasAgg):
    """An Agg canvas with :class:`_WholeStringRenderer` (kept on the figure, so text metrics stay cached)."""

    def get_renderer(self):
        w, h = self.figure.bbox.size
        key = w, h, self.figure.dpi
        if getattr(self, "_lastKey", None) != key or not isinstance(getattr(self, "renderer", None),
                                                                     _WholeStringRenderer):
            self.renderer = _WholeStringRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer


# Checked on matplotlib 3.11 (earlier versions draw whole strings themselves).
FAST_TEXT = matplotlib.__version__.startswith("3.11.") and all(
    hasattr(FT2Font, name) for name in ("set_text", "draw_glyphs_to_bitmap", "get_image", "get_bitmap_offset"))


def render_png(fig: Figure, *, fast_text: bool = False) -> bytes:
    """The figure as deterministic PNG bytes (Agg, no timestamp metadata).

    ``fast_text`` (the receive-path panels): draw each string as one bitmap (see :class:`_WholeStringRenderer`).
    """
    if fast_text and FAST_TEXT and not isinstance(fig.canvas, _WidgetCanvas):
        _WidgetCanvas(fig)
    elif not isinstance(fig.canvas, FigureCanvasAgg):
        # Keep one Agg canvas on the figure: savefig would otherwise make a new canvas and renderer for every PNG,
        # and matplotlib's text-metrics cache (keyed on the renderer) would miss for every label at every update.
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    # compress_level 1: a widget PNG is shown once; fast encoding matters more than a few KB.
    fig.savefig(buf, format="png", dpi=fig.dpi, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


# --------------------------------------------------------------------------------------------------
# Widgets

class Panel(W.VBox):
    """Controls, a summary line and the figure (PNG in an ipywidgets.Image), redrawn in place on change."""

    def __init__(self, state_fn: Callable[..., PanelState], controls: dict[str, W.ValueWidget], *,
                 width: str = "100%", fast_text: bool = False) -> None:
        self.state_fn = state_fn
        self.fast_text = fast_text
        self.controls = controls
        self.figure = new_figure()
        self.image = W.Image(format="png", layout=W.Layout(width=width, height="auto"))
        self.message = W.HTML()
        self.state: PanelState | None = None
        self.error: str | None = None
        boxes = [W.HBox(list(controls.values())[i:i + 4]) for i in range(0, len(controls), 4)]
        super().__init__(boxes + [self.message, self.image])
        for c in controls.values():
            c.observe(self._on_change, names="value")
        self.update()

    def params(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def _on_change(self, _change: Any) -> None:
        self.update()

    def update(self) -> PanelState | None:
        """Recompute and redraw; a ValueError from the model is shown as text and the figure is hidden."""
        with matplotlib.rc_context(WIDGET_RC):
            return self._update()

    def _update(self) -> PanelState | None:
        try:
            state = self.state_fn(**self.params(), fig=self.figure)
        except ValueError as exc:
            self.error = str(exc)
            self.state = None
            self.message.value = f'<span style="color:#b42318">{html.escape(self.error)}</span>'
            self.image.layout.display = "none"
            return None
        self.error = None
        self.state = state
        self.message.value = state.text
        self.image.value = render_png(state.figure, fast_text=self.fast_text)
        self.image.layout.display = None
        return state


def int_box(value: int, lo: int, hi: int, desc: str, step: int = 1) -> W.BoundedIntText:
    return W.BoundedIntText(value=value, min=lo, max=hi, step=step, description=desc,
                            style={"description_width": "initial"}, layout=W.Layout(width="210px"))


def choice(value: Any, options: Any, desc: str) -> W.Dropdown:
    return W.Dropdown(value=value, options=list(options), description=desc, style={"description_width": "initial"},
                      layout=W.Layout(width="210px"))
