"""One device feature as ``ethtool -k`` shows it: the cells of the feature grid and the lamps of the stack drawings.

:class:`Cell` is a feature's state (on / off, ``[fixed]`` = not in hw_features or in NETIF_F_NEVER_CHANGE) plus
wanted_features, so a feature requested with ``ethtool -K`` but off shows as ethtool reports it, ``off [requested
on]`` (net/ethtool/features.c ethnl_set_features / ethtool's dump_features). Both vnetlab.viz.stacks and
vnetlab.viz.featuregrid draw them, so they live here and neither imports the other for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vnetlab import features as F

__all__ = ["STATES", "STATE_STYLE", "Cell", "device_cells", "cell_style"]

STATES = ("on", "off", "on, fixed", "off, fixed", "requested on, off")
# state -> (fill, hatch, word in a stack lamp, words in a grid cell). Fills from Paul Tol's "light" scheme; fixed
# cells are hatched, a requested-but-off cell has a dashed edge (drawn by the callers), and the words differ.
STATE_STYLE: dict[str, tuple[str, str | None, str, str]] = {
    "on": ("#77AADD", None, "on", "on"),
    "off": ("#FFFFFF", None, "off", "off"),
    "on, fixed": ("#77AADD", "//", "on [fixed]", "on\nfixed"),
    "off, fixed": ("#DDDDDD", "//", "off [fixed]", "off\nfixed"),
    "requested on, off": ("#EEDD88", None, "off [requested on]", "off\nwanted on"),
}


@dataclass(frozen=True)
class Cell:
    """One feature of one device as ethtool -k shows it, plus whether it is in wanted_features."""

    feature: str  # NETIF_F name
    ethtool: str
    on: bool
    fixed: bool
    wanted: bool

    @property
    def state(self) -> str:
        """One of STATES."""
        if self.fixed:
            return "on, fixed" if self.on else "off, fixed"
        if self.on:
            return "on"
        return "requested on, off" if self.wanted else "off"


def device_cells(dev: Any, names: Sequence[str]) -> list[Cell]:
    """The cells of ``names`` that this device's kernel has (NETIF_F_GSO_FRAGLIST is absent before 5.6, ...)."""
    t = F.table(dev.ns.kernel)
    shown = dev.ethtool_k()
    wanted = dev.wanted_features
    out = []
    for n in names:
        eth = t.ethtool.get(n)
        if eth is None:
            continue
        on, fixed = shown[eth]
        out.append(Cell(n, eth, on, fixed, n in wanted))
    return out


def cell_style(cell: Cell) -> tuple[str, str | None, str]:
    """(fill, hatch, one-line words) of a cell: the stack lamps' style."""
    face, hatch, word, _words = STATE_STYLE[cell.state]
    return face, hatch, word


