"""The one plotting style of vnetlab: colours by kernel concept, fonts, deterministic output."""

from __future__ import annotations

import io
from collections.abc import Iterable

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

# One colour per kernel concept, used by every figure.
COLORS = {
    "page": "#eeeeee",
    "headroom": "#c6dbef",
    "vnet_hdr": "#fdd0a2",
    "eth": "#a1d99b",
    "ip": "#74c476",
    "l4": "#41ab5d",
    "payload": "#fff7bc",
    "frame": "#d9f0a3",
    "tailroom": "#dadaeb",
    "skb_shared_info": "#fc9272",
    "hole": "#f0f0f0",
    "linear": "#9ecae1",
    "frag": "#fdae6b",
    "frag_list": "#bcbddc",
    "sk_buff": "#bdbdbd",
    "copy": "#e6550d",
    "copy+frag": "#fd8d3c",
    "build_skb": "#31a354",
    "segmented": "#de2d26",
    "passed": "#31a354",
    "model": "#3182bd",
    "measured": "#636363",
}

PATH_COLORS = {"copy": COLORS["copy"], "copy+frag": COLORS["copy+frag"], "build_skb": COLORS["build_skb"]}

RC = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "vnetlab",
    "path.simplify": True,
}


def use_style() -> None:
    """Apply the vnetlab style to matplotlib's global rcParams (notebooks call it once)."""
    matplotlib.rcParams.update(RC)


class ShownFigure(Figure):
    """A Figure that shows itself as a PNG wherever IPython displays it: JupyterLab, nbclient/nbval, nbconvert.

    vnetlab draws without pyplot (no global state, safe in widgets and tests), so matplotlib's inline backend
    never registers these figures; without this a notebook cell shows ``<Figure size ...>`` text.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


def new_figure(width: float = 9.0, height: float = 3.0) -> Figure:
    """A figure not tied to pyplot's global state (safe for widgets and tests).

    No layout engine: drawings place their axes with fixed margins. (Any layout engine, even the "none"
    placeholder, makes savefig draw the figure twice, which doubles a widget update.)
    """
    with matplotlib.rc_context(RC):
        fig = ShownFigure(figsize=(width, height))
    return fig


def target_figure(fig: Figure | None, width: float, height: float):
    """The figure to draw on: a new one, or ``fig`` cleared and resized (widgets redraw in place).

    Fixed margins, no layout engine: constrained layout doubles a widget's redraw time.
    """
    if fig is None:
        return new_figure(width, height)
    fig.clear()
    fig.set_size_inches(width, height)
    fig.set_layout_engine("none")
    return fig


def region(ax, gid: str, x: float, y: float, width: float, height: float, *, color: str | None = None,
           label: str | None = None, fontsize: float = 8, hatch: str | None = None, text_color: str = "black",
           min_label_width: float = 0.0, fast: bool = False) -> Rectangle:
    """Draw one labelled region; its gid is the kernel's name for it.

    ``fast``: for drawings that set their own axis limits, the patch is added without updating the data
    limits (ax.add_patch computes the patch's extent, about a millisecond each on a slow machine)."""
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


def fast_region(ax, gid: str, x: float, y: float, width: float, height: float, **kw) -> Rectangle:
    """:func:`region` without the data-limit update (widget drawings that set their own limits)."""
    return region(ax, gid, x, y, width, height, fast=True, **kw)


def regions(fig: Figure) -> dict[str, Rectangle]:
    """All labelled regions of a figure by gid (for tests and for widgets that update in place)."""
    found: dict[str, Rectangle] = {}
    for ax in fig.axes:
        for patch in ax.patches:
            gid = patch.get_gid()
            if gid:
                found[gid] = patch
    return found


def save_png(fig: Figure, path, dpi: int = 100) -> None:
    """Deterministic PNG (no timestamp metadata)."""
    fig.savefig(path, dpi=dpi, metadata={"Software": None})


def legend_handles(names: Iterable[str]):
    return [Rectangle((0, 0), 1, 1, facecolor=COLORS[n], edgecolor="black", linewidth=0.6, label=n) for n in names]
