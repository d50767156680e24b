"""The one plotting style of vnetlab and the canvas every drawing uses.

- Colours by kernel concept, from the Okabe-Ito palette where a colour carries meaning (page_to_skb's paths,
  pass/fail, segmented/passed), so that they stay apart for red-green colour blindness; the paths also differ
  by hatch (:data:`PATH_HATCHES`) and are labelled directly in every figure.
- Sizes: figures are :data:`FIG_WIDTH` inches at :data:`DPI`, the width JupyterLab's output area shows a PNG
  at without scaling it, and no text is smaller than :data:`MIN_FONT` points (11 px at 100 dpi).
- Canvas: figures made without pyplot (:func:`new_figure`) that display as PNG (:class:`ShownFigure`), redrawn
  in place by widgets (:func:`target_figure`, :func:`reuse_axes`), and labelled regions whose gid is the
  kernel's name for them (:func:`region`, :func:`regions`).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Iterable, Sequence

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle

from vnetlab.checks import public

# Okabe & Ito, "Color Universal Design" (2008): eight colours that stay distinct for the common colour
# vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

# One colour per kernel concept, used by every figure of the package. Memory regions are light tints (black
# labels sit on them); the colours that tell outcomes apart are Okabe-Ito.
COLORS = {
    "page": "#eeeeee",
    "headroom": "#c6dbef",
    "vnet_hdr": "#fdd0a2",
    "eth": "#c7e9c0",
    "ip": "#a1d99b",
    "l4": "#74c476",
    "payload": "#fff7bc",
    "frame": "#d9f0a3",
    "tailroom": "#dadaeb",
    "skb_shared_info": "#fc9272",
    "hole": "#f0f0f0",
    "linear": "#9ecae1",
    "frag": "#fdae6b",
    "frag_list": "#bcbddc",
    "sk_buff": "#bdbdbd",
    "copy": OKABE_ITO["vermillion"],
    "copy+frag": OKABE_ITO["yellow"],
    "build_skb": OKABE_ITO["blue"],
    "segmented": OKABE_ITO["vermillion"],
    "passed": OKABE_ITO["blue"],
    "model": OKABE_ITO["blue"],
    "measured": "#555555",
}

PATH_COLORS = {"copy": COLORS["copy"], "copy+frag": COLORS["copy+frag"], "build_skb": COLORS["build_skb"]}
# A second cue besides colour: the two copy paths are hatched differently, build_skb is plain.
PATH_HATCHES = {"copy": "xx", "copy+frag": "//", "build_skb": ""}
# Kernels, flows and other categories without a meaning of their own, in a colour-blind safe order.
CATEGORY_COLORS = (OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["bluish_green"], OKABE_ITO["vermillion"],
                   OKABE_ITO["reddish_purple"], OKABE_ITO["sky_blue"], "#555555", OKABE_ITO["yellow"])
# Verdict text (page_to_skb's test passed / failed), darkened for contrast on white; ✓/✗ go with it.
PASS_COLOR = "#005a8c"
FAIL_COLOR = "#a33b00"

DPI = 100
FIG_WIDTH = 9.0  # inches: 900 px, shown unscaled in JupyterLab's output area (about 900-1000 CSS px wide)
MIN_FONT = 8.0  # points: 11 px at DPI 100, the smallest text any figure draws
FONT = {"title": 10.5, "label": 9.0, "small": MIN_FONT}

RC = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": FONT["label"],
    "axes.titlesize": FONT["label"],
    "axes.labelsize": FONT["label"],
    "xtick.labelsize": FONT["small"],
    "ytick.labelsize": FONT["small"],
    "legend.fontsize": FONT["small"],
    "figure.titlesize": FONT["title"],
    "axes.spines.top": False,
    "axes.spines.right": False,
    "hatch.linewidth": 0.6,
    "svg.hashsalt": "vnetlab",
    "path.simplify": True,
}


@public
def use_style() -> None:
    """Apply the vnetlab style to matplotlib's global rcParams (for the reader's own pyplot figures)."""
    matplotlib.rcParams.update(RC)


class ShownFigure(Figure):
    """A Figure that shows itself as a PNG wherever IPython displays it: JupyterLab, nbclient/nbval, nbconvert.

    vnetlab draws without pyplot (no global state, safe in widgets and tests), so matplotlib's inline backend
    never registers these figures; without this a notebook cell shows ``<Figure size ...>`` text.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        with matplotlib.rc_context(RC):
            self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


@public
def new_figure(width: float = FIG_WIDTH, height: float = 3.0) -> ShownFigure:
    """A figure not tied to pyplot's global state (safe for widgets and tests), at :data:`DPI`.

    No layout engine: drawings place their axes with fixed margins. (Any layout engine, even the "none"
    placeholder, makes savefig draw the figure twice, which doubles a widget update.)
    """
    with matplotlib.rc_context(RC):
        fig = ShownFigure(figsize=(width, height), dpi=DPI)
    return fig


@public
def target_figure(fig: Figure | None, width: float, height: float) -> Figure:
    """The figure to draw on: a new one, or ``fig`` cleared and resized (widgets redraw in place).

    Fixed margins, no layout engine: constrained layout doubles a widget's redraw time. Sizes are rounded to
    whole pixels at :data:`DPI` (a fractional height renders one pixel short on some canvases).
    """
    width, height = round(width * DPI) / DPI, round(height * DPI) / DPI
    if fig is None:
        return new_figure(width, height)
    fig.clear()
    fig.set_size_inches(width, height)
    fig.set_layout_engine("none")
    return fig


@public
def reuse_axes(fig: Figure | None, key: tuple, width: float, height: float,
               make: Callable[[Figure], Iterable[Axes]]) -> tuple[Figure, list[Axes]]:
    """The axes of a drawing whose layout is ``key``: made once by ``make(fig)`` and reused on later calls with
    the same figure and key, their artists removed instead of clearing the figure (a widget update then skips
    making axes and ticks again). ``make`` returns the axes in the order the drawing uses them."""
    stored = getattr(fig, "_vnetlab_axes", None) if fig is not None else None
    if (stored is not None and getattr(fig, "_vnetlab_layout", None) == key and len(fig.axes) == len(stored)
            and all(any(ax is a for a in fig.axes) for ax in stored) and not fig.subfigs):
        wipe(fig)
        return fig, list(stored)
    with matplotlib.rc_context(RC):
        fig = target_figure(fig, width, height)
        axes = list(make(fig))
    for ax in fig.axes:
        # A fixed title position: otherwise every draw measures the axes' tick labels to place the title.
        ax.set_title("", y=1.0)
    fig._vnetlab_layout, fig._vnetlab_axes = key, axes
    return fig, axes


@public
def axes_column(fig: Figure, rows: Sequence[tuple[float, float]], *, left: float = 0.01, right: float = 0.99,
                top: float = 0.0) -> list[Axes]:
    """Axes stacked top to bottom at fixed heights in inches: ``rows`` are (space above, height) pairs, ``top``
    the space above the first (titles), ``left``/``right`` figure fractions. A drawing's rows then keep their
    height in pixels whatever the figure's height, so labels sized in points fit the same everywhere."""
    h = fig.get_figheight()
    y = h - top
    axes = []
    for gap, height in rows:
        y -= gap + height
        axes.append(fig.add_axes((left, y / h, right - left, height / h)))
    return axes


@public
def wipe(fig: Figure) -> None:
    """Remove what a drawing added to reused axes (patches, texts, lines, images, legends, titles)."""
    for art in list(fig.artists) + list(fig.texts) + list(fig.legends):
        art.remove()
    fig._suptitle = None
    for ax in fig.axes:
        for art in (*ax.patches, *ax.texts, *ax.lines, *ax.images, *ax.collections, *ax.artists):
            art.remove()
        if ax.legend_ is not None:
            ax.legend_.remove()
        for loc in ("left", "center", "right"):
            ax.set_title("", loc=loc)
        ax.set_xlabel("")
        ax.set_ylabel("")


@public
def bare_axes(ax: Axes, *, xaxis: bool = True) -> None:
    """An axes for a to-scale drawing: no y axis, no frame but the bottom spine (none if not ``xaxis``)."""
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if not xaxis:
        ax.set_xticks([])
        ax.spines["bottom"].set_visible(False)


@public
def region(ax: Axes, gid: str, x: float, y: float, width: float, height: float, *, color: str | None = None,
           label: str | None = None, fontsize: float = FONT["small"], hatch: str | None = None,
           text_color: str = "black", min_label_width: float = 0.0, fast: bool = False) -> Rectangle:
    """Draw one labelled region; its gid is the kernel's name for it, its width the size it stands for.

    ``fast``: the patch is added without updating the axes' data limits, for drawings that set their own limits
    (ax.add_patch measures the patch, about a millisecond each on a slow machine)."""
    fill = color or COLORS.get(gid) or COLORS.get(gid.rstrip("0123456789"), "#dddddd")
    rect = Rectangle((x, y), width, height, facecolor=fill, edgecolor="black", linewidth=0.6, hatch=hatch)
    rect.set_gid(gid)
    if fast:
        ax.add_artist(rect)
    else:
        ax.add_patch(rect)
    if label and width >= min_label_width:
        ax.text(x + width / 2, y + height / 2, label, ha="center", va="center", fontsize=fontsize, color=text_color,
                gid=f"{gid}:label", clip_on=True)
    return rect


@public
def fast_region(ax: Axes, gid: str, x: float, y: float, width: float, height: float, **kw: object) -> Rectangle:
    """:func:`region` without the data-limit update (drawings that set their own axis limits)."""
    return region(ax, gid, x, y, width, height, fast=True, **kw)


@public
def path_region(ax: Axes, gid: str, path: str, x: float, y: float, width: float, height: float, *,
                label: str | None = None, fontsize: float = FONT["small"]) -> Rectangle:
    """A region standing for one page_to_skb() path: its colour and hatch, and a label on a white box (legible
    over the hatch)."""
    rect = region(ax, gid, x, y, width, height, color=PATH_COLORS[path], hatch=PATH_HATCHES[path] or None, fast=True)
    if label:
        ax.text(x + width / 2, y + height / 2, label, ha="center", va="center", fontsize=fontsize, gid=f"{gid}:label",
                clip_on=True, bbox=dict(facecolor="white", edgecolor="none", pad=1.0, alpha=0.9))
    return rect


@public
def regions(fig: Figure) -> dict[str, Rectangle]:
    """All labelled regions of a figure by gid (for tests and for widgets that update in place)."""
    found: dict[str, Rectangle] = {}
    for ax in fig.axes:
        for patch in ax.patches:
            gid = patch.get_gid()
            if gid:
                found[gid] = patch
    return found


# --------------------------------------------------------------------------------------------------
# Text that fits: measured as Agg draws it, so that labels are wrapped to their box instead of shrunk

_METRICS = RendererAgg(1, 1, DPI)  # a renderer for text metrics only (the PNG is drawn by Agg at DPI)


@functools.lru_cache(maxsize=8192)  # outside @public: a hit was checked when it missed
@public
def text_px(text: str, size: float = FONT["small"], weight: str = "normal") -> float:
    """Width in pixels (at DPI) of the widest line of ``text`` as Agg draws it at ``size`` points."""
    prop = FontProperties(size=size, weight=weight)
    return max(_METRICS.get_text_width_height_descent(line, prop, ismath=False)[0] for line in text.split("\n"))


# not @public: drawings pass width_px=inf for 'no limit', which checks' float refuses
def wrap_px(text: str, width_px: float, size: float = FONT["small"], weight: str = "normal") -> str:
    """``text`` broken at spaces so that no line is wider than ``width_px`` (a longer word keeps a line of its own;
    a no-break space U+00A0 keeps two words together)."""
    lines = []
    for para in text.split("\n"):
        words = para.split(" ")
        line = words[0]
        for word in words[1:]:
            if text_px(f"{line} {word}", size, weight) <= width_px:
                line = f"{line} {word}"
            else:
                lines.append(line)
                line = word
        lines.append(line)
    return "\n".join(lines)
