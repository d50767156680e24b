"""Private: an Agg canvas that draws each plain horizontal string as one FreeType bitmap, for panel PNGs.

Why: matplotlib 3.11 renders text glyph by glyph from Python (``RendererAgg._draw_text_glyphs_and_boxes``:
about 85 µs per glyph on the 2-core lab machine); a panel figure has 400-700 glyphs, so text was most of an
update. Earlier matplotlib drew a string as one FreeType bitmap; this does the same with FT2Font's public
``set_text`` / ``draw_glyphs_to_bitmap`` / ``get_image`` and keeps the bitmaps of recent strings (titles and most
labels repeat between updates). Measured with benchmarks/bench_panels_rx.py (CPU medians, see the report in the
commit message). Math text, rotated text, text with font features or a language, and any failure take
matplotlib's own path; on other matplotlib versions the plain Agg canvas is used.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.ft2font import FT2Font

from vnetlab.checks import public

# Checked against matplotlib 3.11 (3.10 and earlier draw whole strings themselves).
AVAILABLE = matplotlib.__version__.startswith("3.11.") and all(
    hasattr(FT2Font, name) for name in ("set_text", "draw_glyphs_to_bitmap", "get_image", "get_bitmap_offset",
                                        "get_descent")) and hasattr(RendererAgg, "_prepare_font")

_CACHE_SIZE = 4096
_bitmaps: OrderedDict[tuple, tuple[np.ndarray, float, float, float]] = OrderedDict()


def _bitmap(font: FT2Font, key: tuple, s: str, antialiased: bool) -> tuple[np.ndarray, float, float, float]:
    hit = _bitmaps.get(key)
    if hit is not None:
        _bitmaps.move_to_end(key)
        return hit
    font.set_text(s, 0, flags=get_hinting_flag())
    font.draw_glyphs_to_bitmap(antialiased=antialiased)
    xo, yo = font.get_bitmap_offset()
    entry = (np.array(font.get_image()), xo / 64.0, yo / 64.0, font.get_descent() / 64.0)
    _bitmaps[key] = entry
    if len(_bitmaps) > _CACHE_SIZE:
        _bitmaps.popitem(last=False)
    return entry


class WholeStringRenderer(RendererAgg):
    """RendererAgg drawing each horizontal plain-text string as one cached FreeType bitmap."""

    @public
    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float,  # noqa: ANN401
                  ismath: bool | str = False, mtext: Any = None) -> None:  # noqa: ANN401
        if ismath or angle or (mtext is not None and (mtext.get_fontfeatures() or mtext.get_language())):
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        try:
            font = self._prepare_font(prop)
            aa = bool(gc.get_antialiased())
            key = (s, font.fname, prop.get_size_in_points(), self.dpi, get_hinting_flag(), aa)
            image, xo, yo, descent = _bitmap(font, key, s, aa)
            self._renderer.draw_text_image(image, round(x + xo), round(y + yo + descent) + 1, 0, gc)
        except (AttributeError, TypeError, ValueError):
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        return None


class WholeStringCanvas(FigureCanvasAgg):
    """An Agg canvas with :class:`WholeStringRenderer`, kept on the figure (text metrics stay cached)."""

    def get_renderer(self) -> RendererAgg:
        w, h = self.figure.bbox.size
        key = w, h, self.figure.dpi
        if getattr(self, "_lastKey", None) != key or not isinstance(getattr(self, "renderer", None),
                                                                     WholeStringRenderer):
            self.renderer = WholeStringRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer
