"""Drawings of a UDP GSO skb sent down VLAN / macvlan / bond / bridge (or stacks of them) over a NIC or a veth.

The stack itself (build_stack, send_gso, NICS, UPPERS, Stack) is vnetlab.stack's; its names are importable from
here too, as notebooks 05 and 40 and the panels use them.

- :func:`draw_stack` draws each device the skb meets as a box with its transmit features (ethtool names and
  their state, vnetlab.stack.device_cells), the skb's path down (xmit.send hops), where validate_xmit_skb
  segmented it and how many packets reach the wire. One drawing for notebooks and panels: a panel passes its
  figure back in and the axes are reused.
- :func:`draw_stacks_side_by_side`: the same stack before (5.10) and after (5.11) NETIF_F_GSO_SOFTWARE gained
  GSO_UDP_L4 and GSO_FRAGLIST (2e4ef10f5850), in one figure FIG_WIDTH wide.
- :func:`text_px` / :func:`wrap_px`: text measured as Agg draws it, so that every label keeps vnetlab.viz.style's
  FONT sizes (none below MIN_FONT) and is wrapped to its box; the other transmit-side figures use them too.

Gids: "<col>:<device>" for a device, "<col>:<device>:<FEATURE>" for a feature lamp, "<col>:gso_skb",
"<col>:wire" (its label text gid "<col>:wire:label" states the wire packet count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from vnetlab import xmit
from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Skb

# the model's names, for the notebooks and panels that reach them through this module (notebooks 05, 40, 50)
from vnetlab.stack import (
    NICS,
    PATCH_KERNELS,
    STACK_FEATURES,
    UPPERS,
    GroSegs,
    GsoSize,
    Stack,
    build_stack,
    device_cells,
    feature_states,
    send_gso,
)
from vnetlab.viz.featurecells import cell_label, cell_style
from vnetlab.viz.style import COLORS, DPI, FIG_WIDTH, FONT, fast_region, reuse_axes, text_px, wrap_px

__all__ = ["NICS", "UPPERS", "PATCH_KERNELS", "STACK_FEATURES", "Stack", "build_stack", "send_gso",
           "feature_states", "draw_stack", "draw_stacks_side_by_side", "text_px", "wrap_px", "wire_summary",
           "hop_text"]

# --------------------------------------------------------------------------------------------------
# Drawing: a column is _W data units across; vertically one data unit is _UNIT_IN inches, so text sized in points
# takes the same number of units in every figure (a line of FONT["small"] is _LINE units).

_W = 10.0  # data units across one column
_UNIT_IN = 0.62  # inches per data unit, vertically
_LINE = FONT["small"] * 1.2 / 72 / _UNIT_IN  # one line of FONT["small"] text (matplotlib's line spacing 1.2)
_ARROW = 0.45  # the dev_queue_xmit arrow between two boxes
_PAD = 0.1  # inside a box, above and below its text
_LAMP_H = 2 * _LINE + 0.08  # a feature lamp: ethtool name and state
_LAMP_PITCH = _LAMP_H + 0.07
_LAMP_GAP_PX = 8.0  # between two lamps of a row


def _hop_color(action: str) -> str:
    return COLORS["segmented"] if action in ("segmented", "linearized") else COLORS["passed"]


def _lines(text: str) -> int:
    return text.count("\n") + 1


@dataclass(frozen=True)
class _DeviceBox:
    dev: Any
    hop: xmit.Hop
    heading: str  # wrapped
    reason: str  # wrapped, "" if none


@dataclass(frozen=True)
class _Column:
    """What one column draws, its texts wrapped to the column's width in pixels."""

    gso: str
    boxes: tuple[_DeviceBox, ...]
    wire: str
    per_row: int  # feature lamps per row; 0: no lamps
    lamp_rows: int
    px_per_unit: float  # across
    heights: tuple[float, ...] = ()  # data units of the GRO skb box, each device box, the wire box

    @property
    def height(self) -> float:
        """Data units from the top of the GRO skb box to the bottom of the wire box."""
        return sum(self.heights) + _ARROW * (len(self.boxes) + 1)


def _label_height(text: str) -> float:
    return max(0.7, _lines(text) * _LINE + 2 * _PAD)


def _box_height(b: _DeviceBox, lamp_rows: int) -> float:
    text = _lines(b.heading) + (_lines(b.reason) if b.reason else 0)
    return _PAD + text * _LINE + ((0.08 + lamp_rows * _LAMP_PITCH) if lamp_rows else 0.1)


def _aligned(columns: Sequence[_Column]) -> list[_Column]:
    """Columns of the same stack side by side: each box as tall as the tallest of its row, so that they line up."""
    if len({len(c.heights) for c in columns}) != 1:
        return list(columns)
    tallest = tuple(max(hs) for hs in zip(*(c.heights for c in columns)))
    return [replace(c, heights=tallest) for c in columns]


def _column(stack: Stack, skb: Skb, tx: xmit.TxResult, width_px: float, *, lamps: bool = True) -> _Column:
    """The texts of one column wrapped to ``width_px`` (the axes' width), and how many feature lamps fit a row."""
    text_w = width_px * (_W - 1.3) / _W  # inside a box
    fl = "FRAGLIST" in skb.gso_type
    if skb.is_gso():
        gso = (f"GRO skb: {skb.gso_segs} × {skb.gso_size}\u00a0B UDP, gso_type\u00a0{'|'.join(sorted(skb.gso_type))}, "
               + (f"frag_list\u00a0{len(skb.frag_list)}\u00a0skbs" if fl else f"nr_frags {skb.nr_frags}"
                  + (f" + frag_list\u00a0{len(skb.frag_list)}\u00a0skbs" if skb.frag_list else "")))
    else:
        gso = f"one UDP packet, skb->len {skb.len}\u00a0B (not a GSO skb: GRO did not aggregate)"
    hops = {h.name: h for h in tx.hops}
    boxes = []
    widest = 0.0
    n_lamps = 0
    for dev in stack.devices():
        h = hops.get(dev.name)
        if h is None:
            continue
        what = hop_text(h) + (f" ({h.method})" if h.method else "")
        mark = "✂ " if h.action == "segmented" else ""
        heading = wrap_px(f"{mark}{dev.name} [{dev.kind}]: {what}", text_w, weight="bold")
        reason = wrap_px(h.reason, text_w) if h.reason else ""
        boxes.append(_DeviceBox(dev, h, heading, reason))
        if lamps:
            cells = device_cells(dev, STACK_FEATURES)
            n_lamps = max(n_lamps, len(cells))
            widest = max([widest] + [text_px(f"{c.ethtool}\n{cell_style(c)[2]}") for c in cells])
    per_row = 0
    if lamps and n_lamps:
        # as many lamps to a row as their widest label allows
        fit = max(1, min(n_lamps, int((text_w + _LAMP_GAP_PX) // (widest + 10 + _LAMP_GAP_PX))))
        per_row = -(-n_lamps // -(-n_lamps // fit))  # rows as full as each other: 3 + 3, not 5 + 1
    wire = wire_summary(tx, sep="\u00a0")  # a count and its noun stay on one line
    gso, wire = wrap_px(gso, text_w), wrap_px(wire, text_w)
    rows = -(-n_lamps // per_row) if per_row else 0
    heights = (_label_height(gso), *(_box_height(b, rows) for b in boxes), _label_height(wire))
    return _Column(gso, tuple(boxes), wire, per_row, rows, width_px / _W, heights)


def _plural(n: int, word: str, sep: str = " ") -> str:
    return f"{n}{sep}{word}{'' if n == 1 else 's'}"


@public
def wire_summary(tx: xmit.TxResult, *, sep: str = " ") -> str:
    """Where the skb was segmented and what leaves the stack, in words: software (validate_xmit_skb at a device),
    the NIC's hardware GSO, or a veth handing the skb to its peer whole (veth_xmit does not segment)."""
    last = tx.hops[-1] if tx.hops else None
    if last is not None and last.kind == "veth":
        k = len(tx.skbs_to_driver)
        n = sum(max(1, s.gso_segs) for s in tx.skbs_to_driver)  # a GSO skb carries gso_segs packets
        how = f"segmented in software at {tx.segmented_at}" if tx.segmented_at else "veth_xmit does not segment"
        return f"to the peer: {_plural(k, 'skb', sep)} carrying {_plural(n, 'packet', sep)} ({how})"
    n = len(tx.segments)
    by = {p.segmented_by for p in tx.segments}
    nic = last.name if last is not None else "the NIC"
    where = (f"segmented in software at {tx.segmented_at}" if tx.segmented_at else
             f"not segmented in software: {nic}'s hardware GSO cuts it" if "hardware" in by else "not segmented")
    return f"wire: {_plural(n, 'packet')} ({where})"


@public
def hop_text(hop: xmit.Hop) -> str:
    """What a device did, in words: validate_xmit_vlan's tag insert is software (the device lacks
    tx-vlan-hw-insert), the VLAN device's "tag set" only stores it in skb->vlan_tci (hwaccel)."""
    # net/core/dev.c validate_xmit_vlan: __vlan_hwaccel_push_inside() when !vlan_hw_offload_capable()
    actions = ["tag inserted in software (validate_xmit_vlan)" if a == "tag inserted" else a for a in hop.actions]
    return ", ".join(actions)


def _draw_column(ax: Any, col: str, column: _Column, skb: Skb, tx: xmit.TxResult) -> float:
    """One stack, top (y = 0) down, into axes whose limits are set here (regions added without data-limit updates).
    Returns the lowest y used. Feature lamps: ``column.per_row`` to a row, in the grid's cell style."""
    def arrow(start: tuple[float, float], end: tuple[float, float]) -> None:
        ax.add_artist(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, linewidth=0.9))

    small = FONT["small"]
    fl = "FRAGLIST" in skb.gso_type
    h, *box_heights, wire_h = column.heights
    fast_region(ax, f"{col}:gso_skb", 0.5, -h, _W - 1, h, color=COLORS["frag_list"] if fl else COLORS["frag"],
                label=column.gso, fontsize=small)
    y = -h
    for b, box_h in zip(column.boxes, box_heights):
        hop = b.hop
        arrow((_W / 2, y), (_W / 2, y - _ARROW))
        ax.text(_W / 2 + 0.15, y - _ARROW / 2, f"dev_queue_xmit: {hop.skbs_in} skb{'s' if hop.skbs_in != 1 else ''}",
                fontsize=small, va="center", ha="left")
        y -= _ARROW
        top = y
        y -= box_h
        box = fast_region(ax, f"{col}:{b.dev.name}", 0.5, y, _W - 1, top - y, color="white")
        cut = hop.action in ("segmented", "linearized")
        box.set_edgecolor(_hop_color(hop.action))
        box.set_linewidth(1.8 if cut else 0.8)
        if cut:
            box.set_linestyle((0, (4, 2)))  # segmented / linearized: dashed as well as red
        ax.text(0.65, top - _PAD * 0.8, b.heading, fontsize=small, va="top", ha="left", color=_hop_color(hop.action),
                weight="bold", linespacing=1.2)
        if b.reason:
            ax.text(0.65, top - _PAD * 0.8 - _lines(b.heading) * _LINE, b.reason, fontsize=small, va="top", ha="left",
                    color="#333333", linespacing=1.2)
        if not column.per_row:
            continue
        lw = (_W - 1.3) / column.per_row
        gap = _LAMP_GAP_PX / column.px_per_unit
        for i, c in enumerate(device_cells(b.dev, STACK_FEATURES)):
            r, k = divmod(i, column.per_row)
            face, hatch, word = cell_style(c)
            x0, y0 = 0.65 + k * lw, y + 0.1 + (column.lamp_rows - 1 - r) * _LAMP_PITCH
            lamp = fast_region(ax, f"{col}:{b.dev.name}:{c.feature}", x0, y0, lw - gap, _LAMP_H, color=face,
                               hatch=hatch)
            cell_label(ax, lamp, f"{c.ethtool}\n{word}")
            if c.state == "requested on, off":
                lamp.set_linestyle((0, (3, 2)))
    arrow((_W / 2, y), (_W / 2, y - _ARROW))
    y -= _ARROW + wire_h
    fast_region(ax, f"{col}:wire", 0.5, y, _W - 1, wire_h, color="#fee0d2" if tx.segmented_at else "#e5f5e0",
                label=column.wire, fontsize=small)
    ax.set_xlim(0, _W)
    ax.set_axis_off()
    return y


# Widget figures are drawn at the width they are shown (JupyterLab's output area is about 900-1000 px).


@public
def draw_stack(stack: Stack, skb: Skb, tx: xmit.TxResult, *, fig: Figure | None = None, title: str = "") -> Figure:
    """One stack: GRO skb on top, each device the skb meets (features, validate_xmit_skb's verdict), the wire.

    The same drawing in a notebook and in the stack panel: pass the figure of a previous call to redraw into
    its axes (style.reuse_axes)."""
    rect = (0.01, 0.0, 0.98, 1.0)
    width_px = rect[2] * FIG_WIDTH * DPI
    column = _column(stack, skb, tx, width_px)
    title = wrap_px(title or f"kernel {stack.kernel}: a UDP GRO skb sent to {stack.describe()}", width_px,
                    FONT["label"])
    top_in = 0.14 + _lines(title) * FONT["label"] * 1.2 / 72 + 0.08
    units = column.height + 0.1
    height = round((top_in + units * _UNIT_IN) * DPI) / DPI
    fig, (ax,) = reuse_axes(fig, ("stack", height, title.count("\n")), FIG_WIDTH, height, lambda f: [f.add_axes(
        (rect[0], 0.0, rect[2], 1 - top_in / height))])
    _draw_column(ax, "0", column, skb, tx)
    ax.set_ylim(-units, 0.0)
    ax.set_title(title, fontsize=FONT["label"], loc="left", y=1.0)
    return fig


@public
def draw_stacks_side_by_side(*, upper: str = "vlan", kernels: Sequence[str] = PATCH_KERNELS, nic: str = "router",
                             nic_params: Mapping[str, Any] | None = None, segs: GroSegs = 44,
                             gso_size: GsoSize = 1472, fraglist: bool = True, fig: Figure | None = None) -> Figure:
    """The same stack and skb on each kernel, left to right (before and after the GSO_SOFTWARE change), in one
    figure FIG_WIDTH wide."""
    if not kernels or len(kernels) > 3:
        raise ArgumentError(f"kernels must name 1 to 3 kernels (columns of a {FIG_WIDTH * DPI:.0f}-px figure), "
                            f"got {list(kernels)!r}", param="kernels")
    n_k = len(kernels)
    gap = 0.025
    col_w = (0.98 - gap * (n_k - 1)) / n_k
    width_px = col_w * FIG_WIDTH * DPI
    built = []
    first = None
    for k in kernels:
        st = build_stack(kernel=k, upper=upper, nic=nic, nic_params=nic_params)
        first = first or st
        skb, tx = send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)
        gs = ("GSO_SOFTWARE lacks GSO_UDP_L4, GSO_FRAGLIST" if _kernel(k) < "5.11" else
              "GSO_SOFTWARE has GSO_UDP_L4, GSO_FRAGLIST")
        built.append((skb, tx, _column(st, skb, tx, width_px), wrap_px(f"kernel {k}: {gs}", width_px, FONT["label"])))
    built = [(skb, tx, c, t) for (skb, tx, _c, t), c in zip(built, _aligned([b[2] for b in built]))]
    suptitle = wrap_px(f"A forwarded UDP GRO skb sent to {first.describe()}: where validate_xmit_skb segments it",
                       0.98 * FIG_WIDTH * DPI, FONT["title"])
    title_lines = max(_lines(t) for *_r, t in built)
    top_in = (0.08 + _lines(suptitle) * FONT["title"] * 1.2 / 72 + 0.12
              + title_lines * FONT["label"] * 1.2 / 72 + 0.08)
    units = max(c.height for _skb, _tx, c, _t in built) + 0.1
    height = round((top_in + units * _UNIT_IN) * DPI) / DPI
    key = ("stacks_side_by_side", n_k, height)
    fig, axes = reuse_axes(fig, key, FIG_WIDTH, height, lambda f: [
        f.add_axes((0.01 + i * (col_w + gap), 0.0, col_w, 1 - top_in / height)) for i in range(n_k)])
    for i, (ax, (skb, tx, column, title)) in enumerate(zip(axes, built)):
        _draw_column(ax, str(i), column, skb, tx)
        ax.set_ylim(-units, 0.0)
        ax.set_title(title, fontsize=FONT["label"], loc="left", y=1.0)
    fig.suptitle(suptitle, fontsize=FONT["title"], x=0.01, y=1 - 0.08 / height, ha="left", va="top")
    return fig
