"""How a feature cell is drawn: the cells of the feature grid and the lamps of the stack drawings.

A :class:`vnetlab.stack.Cell` is one feature as ``ethtool -k`` shows it plus wanted_features; its state is drawn
by fill, hatch and words (STATE_STYLE), so that the states survive colour blindness and greyscale printing.
Both vnetlab.viz.stacks and vnetlab.viz.featuregrid draw cells, so their style lives here and neither imports
the other for it.
"""

from __future__ import annotations

from typing import Any

from matplotlib.colors import to_hex, to_rgb

from vnetlab.checks import public
from vnetlab.stack import STATES, Cell, device_cells
from vnetlab.viz.style import FONT

__all__ = ["STATES", "STATE_STYLE", "hatch_color", "Cell", "device_cells", "cell_style", "cell_label"]

# state -> (fill, hatch, word in a stack lamp, words in a grid cell). Fills from Paul Tol's "light" scheme; fixed
# cells are hatched, a requested-but-off cell has a dashed edge (drawn by the callers), and the words differ.
STATE_STYLE: dict[str, tuple[str, str | None, str, str]] = {
    "on": ("#77AADD", None, "on", "on"),
    "off": ("#FFFFFF", None, "off", "off"),
    "on, fixed": ("#77AADD", "//", "on [fixed]", "on\nfixed"),
    "off, fixed": ("#DDDDDD", "//", "off [fixed]", "off\nfixed"),
    "requested on, off": ("#EEDD88", None, "off [requested on]", "off\nwanted on"),
}
@public
def hatch_color(face: Any) -> str:
    """The hatch of a fixed cell: its fill darkened, so that the hatch shows on every fill (a grey hatch on the
    "on" blue has about the blue's lightness and vanishes in a small legend swatch)."""
    r, g, b = to_rgb(face)
    return to_hex((r * 0.55, g * 0.55, b * 0.55))


@public
def cell_style(cell: Cell) -> tuple[str, str | None, str]:
    """(fill, hatch, one-line words) of a cell: the stack lamps' style."""
    face, hatch, word, _words = STATE_STYLE[cell.state]
    return face, hatch, word


@public
def cell_label(ax: Any, rect: Any, text: str, *, fontsize: float = FONT["small"]) -> None:
    """A feature cell's edge and words (gid "<cell gid>:label"); on a hatched cell the words sit on a backing of
    the cell's fill, so that no hatch line crosses them."""
    rect.set_edgecolor("#555555")
    rect.set_hatchcolor(hatch_color(rect.get_facecolor()))
    x, y = rect.get_x() + rect.get_width() / 2, rect.get_y() + rect.get_height() / 2
    box = dict(facecolor=rect.get_facecolor(), edgecolor="none", pad=0.6) if rect.get_hatch() else None
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, gid=f"{rect.get_gid()}:label", clip_on=True,
            bbox=box)
