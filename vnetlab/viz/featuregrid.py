"""Drawing the per-device feature grid: ``ethtool -k`` for every device of a stack, and where two GSO skbs are
segmented.

The grid's data is vnetlab.stack's: :func:`vnetlab.stack.device_cells` reads one device's transmit features the
way ``ethtool -k`` prints them plus wanted_features ("requested on, off" is ethtool's ``off [requested on]``);
:func:`vnetlab.stack.feature_grid` sends a UDP GSO skb (gso_type UDP_L4, payload in frags, no frag_list) and a
fraglist GSO skb (UDP_L4 | FRAGLIST, one skb per packet on frag_list) to the top device with xmit.send and
records, per device, what validate_xmit_skb did to each. Those names are importable from here too (notebook 40).

- :func:`draw_feature_grid` draws it: rows are the devices top-down (the order the skb meets them), each a title
  line (name, kind) over its cells; columns the NETIF_F features that decide segmentation, with a row marking the
  NETIF_F_GSO_SOFTWARE members of this kernel, two columns for the skbs, a footer saying where each was
  segmented and why, and a legend with every fill and hatch drawn (feature states and skb verdicts).

Cell states differ by fill, hatch and words, so they survive colour blindness and greyscale printing.
Gids: "grid:<device>:<FEATURE>" (cell), "skb:<device>:<udp_gso|fraglist>" (verdict), "gso_software:<FEATURE>".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from vnetlab.checks import public
from vnetlab.profiles import DEFAULT_KERNEL

# the grid's data, for the notebooks and panels that reach it through this module (notebook 40)
from vnetlab.stack import (
    GRID_FEATURES,
    SKB_KINDS,
    STATES,
    UPPERS,
    Cell,
    FeatureGrid,
    GridRow,
    Verdict,
    build_stack,
    device_cells,
    feature_grid,
)
from vnetlab.viz.featurecells import STATE_STYLE, cell_label, cell_style, hatch_color
from vnetlab.viz.style import DPI, FIG_WIDTH, FONT, fast_region, reuse_axes, text_px, wrap_px

__all__ = ["GRID_FEATURES", "SKB_KINDS", "STATES", "STATE_STYLE", "VERDICT_FILL", "Cell", "Verdict", "GridRow",
           "FeatureGrid", "device_cells", "cell_style", "feature_grid", "draw_feature_grid", "draw_stack_features"]

# verdict action -> fill (segmented in software stands out; the rest are pale)
VERDICT_FILL = {"segments": "#EE8866", "linearizes": "#EE8866", "passes": "#FFFFFF", "hw_gso": "#BBCC33",
                "to_peer": "#DDDDDD", "not_reached": "#FFFFFF"}


# --------------------------------------------------------------------------------------------------
# Drawing (pixel coordinates, y down: the axes span the whole figure). Every row is a title line (what it is)
# over a line of cells, so the cells get the whole width: 8 feature columns wide enough for the longest word of an
# ethtool name at FONT["small"] ("segmentation") and two verdict columns for "skb_segment_list".

_DPI = DPI
_W = FIG_WIDTH * _DPI
_M = 6.0  # left and right margin
_SKB_W = 110.0  # each verdict column
_SKB_GAP = 8.0  # between the feature columns and the verdict columns
_LINE = FONT["small"] * 1.2 / 72 * _DPI  # one line of FONT["small"] text, pixels
_TITLE_LINE = FONT["title"] * 1.2 / 72 * _DPI
_CELL_H = 44.0  # a cell: up to three lines of FONT["small"]
_ROW_TITLE_H = 16.0  # a row's title line
_ROW_H = _ROW_TITLE_H + _CELL_H + 4
_SWATCH = (24.0, 15.0)  # wide enough for two or more strokes of a fixed cell's hatch
# legend: (key, words); keys of STATE_STYLE are feature cells, keys of VERDICT_FILL skb verdicts
_LEGEND_CELLS = (("on", "on"), ("off", "off"), ("on, fixed", "on, fixed"), ("off, fixed", "off, fixed"),
                 ("requested on, off", "off, requested on (ethtool -K)"))
_LEGEND_SKBS = (("segments", "✂ segmented / linearized in software"), ("hw_gso", "NIC segments (hardware GSO)"),
                ("to_peer", "→ handed to a veth peer"), ("passes", "↓ passes; –: not reached"))


def _wrap(text: str, sep: str, width_px: float, size: float = FONT["small"], weight: str = "normal") -> str:
    """Break ``text`` after ``sep`` so that no line is wider than ``width_px`` (where a part allows)."""
    parts = [p + sep for p in text.split(sep)]
    parts[-1] = parts[-1][: -len(sep)]
    lines, cur = [], ""
    for p in parts:
        if cur and text_px(cur + p, size, weight) > width_px:
            lines.append(cur)
            cur = p
        else:
            cur += p
    lines.append(cur)
    return "\n".join(lines)


MAX_ROWS = 1 + max(len(chain) for chain in UPPERS.values())  # the lower device and what is stacked on it


def _layout(title: str) -> dict[str, float]:
    """y of each part of the figure (pixels from the top) for a title of that many lines."""
    y: dict[str, float] = {"title": 6.0}
    y["head_title"] = y["title"] + _lines(title) * _TITLE_LINE + 8
    y["head"] = y["head_title"] + _ROW_TITLE_H + 2 * _LINE  # NETIF names end here (two lines), ethtool names start
    y["soft_title"] = y["head"] + 3 + 3 * _LINE + 6  # ethtool names: up to three lines
    y["rows"] = y["soft_title"] + _ROW_TITLE_H + _LINE + 8
    return y


def _grid_height(n_rows: int, title: str = "") -> float:
    # footer: two skb lines of up to two lines each, then two legend lines
    return _layout(title)["rows"] + n_rows * _ROW_H + 4 + 4 * _LINE + 10 + 2 * (_SWATCH[1] + 6) + 6


def _skb_line(grid: FeatureGrid, key: str) -> str:
    skb, tx = grid.sent[key]
    title = SKB_KINDS[key][0]
    shape = (f"{skb.gso_segs} × {skb.gso_size}\u00a0B, " + ("one skb per packet on frag_list" if skb.frag_list and
                                                          "FRAGLIST" in skb.gso_type else "payload in frags"))
    n = tx.wire_packets
    if tx.segmented_at:
        hop = tx.hop(tx.segmented_at)
        where = f"segmented in software at {tx.segmented_at} ({hop.method}; {hop.reason})"
    elif tx.hops and tx.hops[-1].kind == "veth":
        k = len(tx.skbs_to_driver)
        return (f"{title} ({shape}): handed to the veth peer as {k} skb{'s' if k != 1 else ''} "
                f"(veth_xmit does not segment), carrying {skb.gso_segs or 1} packets")
    elif any(p.segmented_by == "hardware" for p in tx.segments):
        where = f"passed whole to {tx.hops[-1].name}'s driver: hardware GSO"
    else:
        where = "not segmented"
    return f"{title} ({shape}): {where} →\u00a0{n}\u00a0packet{'s' if n != 1 else ''}"


def _verdict_text(v: Verdict, last: bool) -> str:
    """The words of a verdict cell (``last``: the bottom device, whose driver gets what passes)."""
    n_in, n_out = v.skbs_in, v.skbs_out
    if v.action == "not_reached":
        return "–"
    if v.action == "segments":
        return f"✂ segments: {n_out}\n{v.method}"
    if v.action == "linearizes":
        return f"linearizes {n_in}\n({v.reason})"
    if v.action == "to_peer":
        return f"→ peer: {n_out} skb{'s' if n_out != 1 else ''}\nunsegmented"
    if v.action == "hw_gso":
        return "NIC segments\n(hardware GSO)"
    return f"↓ {n_in} skb{'s pass' if n_in != 1 else ' passes'}\n{'to the driver' if last else 'down'}"


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _swatch(ax: Any, gid: str, x: float, y: float, key: str) -> None:
    if key in STATE_STYLE:
        face, hatch, _word, _words = STATE_STYLE[key]
    else:
        face, hatch = VERDICT_FILL[key], None
    sw = fast_region(ax, gid, x, y, *_SWATCH, color=face, hatch=hatch)
    sw.set_edgecolor("#444444")
    sw.set_hatchcolor(hatch_color(face))
    if key == "requested on, off":
        sw.set_linestyle((0, (3, 2)))
        sw.set_linewidth(1.4)
    if key == "segments":
        sw.set_linewidth(1.8)


def _legend_line(ax: Any, y: float, caption: str, entries: Sequence[tuple[str, str]]) -> None:
    """A caption and one swatch with its words per entry, left to right on one line (x measured, not guessed)."""
    small = FONT["small"]
    ax.text(_M, y + _SWATCH[1] / 2, caption, fontsize=small, va="center", ha="left", weight="bold")
    x = _M + text_px(caption, small, "bold") + 10
    for key, words in entries:
        _swatch(ax, f"legend:{key}", x, y, key)
        ax.text(x + _SWATCH[0] + 4, y + _SWATCH[1] / 2, words, fontsize=small, va="center", ha="left",
                gid=f"legend:{key}:text")
        x += _SWATCH[0] + 4 + text_px(words, small) + 12


@public
def draw_feature_grid(grid: FeatureGrid, *, fig: Figure | None = None, title: str = "") -> Figure:
    """The grid figure, drawn at the width it is shown (FIG_WIDTH at 100 dpi); pass the figure of a previous
    call to redraw into its axes (the explorer panel does)."""
    n = len(grid.rows)
    k = grid.kernel
    small, label = FONT["small"], FONT["label"]
    title = wrap_px(title or f"kernel {k}: {grid.stack.describe()}", _W - 2 * _M, FONT["title"], "bold")
    # One height for every stack up to MAX_ROWS devices: a panel switching stacks keeps its axes, its renderer and
    # matplotlib's text-metrics cache (a new figure size costs a full text layout, most of an update).
    h = _grid_height(max(n, MAX_ROWS), title)
    fig, (ax,) = reuse_axes(fig, ("feature_grid", h, len(grid.columns)), FIG_WIDTH, h / _DPI,
                            lambda f: [f.add_axes((0, 0, 1, 1))])
    ax.set_xlim(0, _W)
    ax.set_ylim(h, 0)
    ax.set_axis_off()
    y = _layout(title)
    cw = (_W - 2 * _M - _SKB_GAP - 2 * _SKB_W) / len(grid.columns)
    x_skb = _M + cw * len(grid.columns) + _SKB_GAP
    ax.text(_M, y["title"], title, fontsize=FONT["title"], va="top", ha="left", weight="bold", gid="grid:title")
    # column headers: NETIF name over ethtool name; the skbs sent
    ax.text(_M, y["head_title"], "transmit features: NETIF_F_ name, ethtool -k name", fontsize=small, va="top",
            ha="left", color="#333333", style="italic")
    ax.text(x_skb, y["head_title"], "skbs sent to the top device", fontsize=small, va="top", ha="left",
            color="#333333", style="italic")
    for j, (feat, cell) in enumerate(zip(grid.columns, grid.rows[0].cells)):
        cx = _M + (j + 0.5) * cw
        ax.text(cx, y["head"], _wrap(feat, "_", cw - 2, small, "bold"), fontsize=small, va="bottom", ha="center",
                weight="bold", gid=f"header:{feat}")
        ax.text(cx, y["head"] + 3, _wrap(cell.ethtool, "-", cw - 2), fontsize=small, va="top", ha="center",
                color="#333333", gid=f"header:{feat}:ethtool")
    for i, key in enumerate(SKB_KINDS):
        skb = grid.sent[key][0]
        cx = x_skb + (i + 0.5) * _SKB_W
        ax.text(cx, y["head"], SKB_KINDS[key][0], fontsize=small, va="bottom", ha="center", weight="bold")
        ax.text(cx, y["head"] + 3, f"{skb.gso_segs} × {skb.gso_size}\u00a0B\n{'|'.join(sorted(skb.gso_type))}",
                fontsize=small, va="top", ha="center", color="#333333")
    # membership of NETIF_F_GSO_SOFTWARE on this kernel
    ax.text(_M, y["soft_title"], f"in NETIF_F_GSO_SOFTWARE on {k}", fontsize=small, va="top", ha="left",
            color="#333333", style="italic")
    for j, feat in enumerate(grid.columns):
        member = feat in grid.gso_software
        ax.text(_M + (j + 0.5) * cw, y["soft_title"] + _ROW_TITLE_H, "✓ yes" if member else "no", fontsize=small,
                va="top", ha="center", weight="bold" if member else "normal", color="black" if member else "#777777",
                gid=f"gso_software:{feat}")
    # one row per device, top-down: its name and kind, then its cells
    for r, row in enumerate(grid.rows):
        top = y["rows"] + r * _ROW_H
        ax.text(_M, top + _ROW_TITLE_H / 2, row.name, fontsize=label, va="center", ha="left", weight="bold",
                gid=f"row:{row.name}")
        ax.text(_M + text_px(row.name, label, "bold") + 8, top + _ROW_TITLE_H / 2, row.label, fontsize=small,
                va="center", ha="left", color="#333333", gid=f"row:{row.name}:kind")
        cy = top + _ROW_TITLE_H
        for j, cell in enumerate(row.cells):
            face, hatch, _word, words = STATE_STYLE[cell.state]
            rect = fast_region(ax, f"grid:{row.name}:{cell.feature}", _M + j * cw + 2, cy, cw - 4, _CELL_H,
                               color=face, hatch=hatch)
            cell_label(ax, rect, words)
            if cell.state == "requested on, off":
                rect.set_linewidth(1.4)
                rect.set_linestyle((0, (3, 2)))
        for i, key in enumerate(SKB_KINDS):
            v = row.verdicts[key]
            rect = fast_region(ax, f"skb:{row.name}:{key}", x_skb + i * _SKB_W + 2, cy, _SKB_W - 4, _CELL_H,
                               color=VERDICT_FILL[v.action], label=wrap_px(_verdict_text(v, r == n - 1), _SKB_W - 10),
                               fontsize=small)
            rect.set_edgecolor("#444444")
            if v.action in ("segments", "linearizes"):
                rect.set_linewidth(1.8)
    # footer: where each skb was segmented and why; then the legend, one line for cells, one for verdicts
    yy = y["rows"] + n * _ROW_H + 4
    for key in SKB_KINDS:
        line = wrap_px(_skb_line(grid, key), _W - 2 * _M)
        ax.text(_M, yy, line, fontsize=small, va="top", ha="left", gid=f"footer:{key}")
        yy += _lines(line) * _LINE + 2
    yy = h - 2 * (_SWATCH[1] + 6) - 2
    _legend_line(ax, yy, "feature cells:", _LEGEND_CELLS)
    _legend_line(ax, yy + _SWATCH[1] + 6, "skb cells:", _LEGEND_SKBS)
    return fig


@public
def draw_stack_features(*, kernel: str = DEFAULT_KERNEL, nic: str = "router", upper: str = "vlan",
                        settings: Mapping[str, Mapping[str, bool]] | None = None, udp_segs: int = 17,
                        fraglist_segs: int = 44, gso_size: int = 1472, fig: Figure | None = None) -> Figure:
    """The explorer's figure for one configuration, for a notebook cell: stacks.build_stack (``settings``:
    {device: {ethtool name: on}}, applied with ethtool -K, lowest device first; a fixed feature raises
    FixedFeatureError), feature_grid, draw_feature_grid."""
    stack = build_stack(kernel=kernel, upper=upper, nic=nic, settings=settings)
    return draw_feature_grid(feature_grid(stack, udp_segs=udp_segs, fraglist_segs=fraglist_segs, gso_size=gso_size),
                             fig=fig)
