"""Receive cost-model figures (vnetlab.cost): the receive rate against the seed measurement, the per-op breakdown.

- :func:`draw_rx_rate`: predicted rx packets/s per kernel (vnetlab.cost), bars, with the seed's measured
  956,864 -> 1,158,465 pps marked on the kernels it compares (5.11 copy path -> 5.13 build_skb).
- :func:`draw_cost_breakdown`: ns per packet per kernel as stacked bars, one segment per operation.

The router's cost model (20 Mbps -> 1 Gbps) is drawn by vnetlab.viz.routerfig.

Gids: "<kernel>:rate" (height = model pps), "<kernel>:<op>" (height = ns/packet of that op), "legend:<op>".
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from vnetlab import cost
from vnetlab.checks import public
from vnetlab.viz.style import (
    COLORS,
    DPI,
    FIG_WIDTH,
    FONT,
    fast_region,
    region,
    reuse_axes,
    target_figure,
    text_px,
    wrap_px,
)

# Colour families per operation group; shades within a group, darkest first.
_GROUP_SHADES = {
    "ring": ("#08519c", "#6baed6"),
    "alloc_copy": ("#7f2704", "#a63603", "#d94801", "#f16913", "#fd8d3c", "#fdae6b", "#fdd0a2", "#feedde",
                   "#8c510a", "#bf812d", "#dfc27d", "#f6e8c3", "#b2182b", "#ef8a62"),
    "gro": ("#006d2c", "#31a354", "#74c476", "#a1d99b", "#c7e9c0"),
    "stack": ("#54278f", "#9e9ac8", "#cbc9e2"),
}
_OTHER_COLORS = {"ring": "#deebf7", "alloc_copy": "#fff5eb", "gro": "#e5f5e0", "stack": "#efedf5"}
OP_COLORS = {op: _GROUP_SHADES[g][i % len(_GROUP_SHADES[g])] for g, ops in cost.OP_GROUPS.items()
             for i, op in enumerate(ops)}


@functools.lru_cache(maxsize=64)
def _op_counts(traffic: cost.Traffic, kernel: str, arch: str) -> cost.OpCounts:
    # Operation counts do not depend on the costs: cached so a cost slider only re-multiplies.
    return cost.op_counts(traffic, kernel, arch)


@public
def rx_costs(traffic: cost.Traffic, kernels: Sequence[str], costs: cost.Costs, arch: str = "x86_64"
             ) -> dict[str, cost.RxCost]:
    """cost.rx_cost for each kernel, with the op counts cached per (traffic, kernel, arch)."""
    return {k: cost.RxCost(_op_counts(traffic, k, arch), costs) for k in kernels}


_HEAD_SHORT = {"napi_page_frag": "page-frag head", "napi_page_frag_1k": "1K page-frag head", "kmalloc": "kmalloc head",
               "small_head_cache": "small-head cache"}


def _head_label(rc: cost.RxCost, width_px: float, weight: str = "normal") -> str:
    """Kernel, receive path and (copy paths) where the head comes from, wrapped to ``width_px``."""
    o = rc.ops
    path = max(o.path_counts, key=o.path_counts.get)
    text = f"{o.kernel}\n{path}" + (f"\n{_HEAD_SHORT.get(o.head_kind, o.head_kind)}" if path != "build_skb" else "")
    return wrap_px(text, width_px, FONT["small"], weight)


def _px_per_unit(ax: Axes, span: float) -> float:
    """Pixels per x data unit of ``ax`` when its x limits span ``span`` units."""
    return ax.get_position().width * ax.figure.get_figwidth() * DPI / span


# --------------------------------------------------------------------------------------------------

@public
def draw_rx_rate(*, costs: cost.Costs | None = None, kernels: Sequence[str] = cost.KERNELS,
                 fig: Figure | None = None) -> Figure:
    """Model pps per kernel for the seed traffic, for the 1-parameter fit (baseline only: the patched rate is
    a prediction) and the 2-parameter fit (exact on both by construction), with the measured rates marked."""
    cal = cost.calibrate(costs)
    m = cal.measurement
    small = FONT["small"]
    fig = target_figure(fig, FIG_WIDTH, 4.0)
    ax = fig.add_axes((0.085, 0.17, 0.905, 0.64))
    per_kernel = _px_per_unit(ax, len(kernels) + 0.2) - 6
    fits = (("1-parameter fit (5.11 only)", cal.one_param, "#9ecae1", "1p"),
            ("2-parameter fit (5.11 and 5.13)", cal.two_param, COLORS["model"], "2p"))
    bw = 0.38
    labels = []
    tops = {}
    for fi, (_name, c, color, tag) in enumerate(fits):
        res = rx_costs(m.traffic, kernels, c)
        for xi, k in enumerate(kernels):
            pps = tops[(k, tag)] = res[k].pps
            x = xi + (fi - 0.5) * bw - bw / 2
            region(ax, f"{k}:rate" + ("" if tag == "2p" else ":1p"), x, 0, bw * 0.95, pps, color=color)
            ax.text(x + bw * 0.475, pps * 0.5, f"{pps / 1e3:.0f}", ha="center", va="center", fontsize=small,
                    rotation=90, color="black" if tag == "1p" else "white")
            if fi == 1:
                labels.append(_head_label(res[k], per_kernel))
    measured = ((m.baseline_kernel, m.baseline_pps), (m.patched_kernel, m.patched_pps))
    for k, pps in measured:
        if k in kernels:
            xi = list(kernels).index(k)
            ax.plot([xi - 0.45, xi + 0.45], [pps, pps], color=COLORS["measured"], linewidth=2, gid=f"{k}:measured")
            above = max([pps] + [tops[(k, t)] for t in ("1p", "2p")])  # over the line and both bars
            ax.text(xi, above * 1.02, f"measured {pps:,.0f}", ha="center", va="bottom", fontsize=small,
                    color=COLORS["measured"], weight="bold")
    ax.set_xticks(range(len(kernels)), labels, fontsize=small)
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    top = max(p.get_height() for p in ax.patches)
    ax.set_ylim(0, max(top, m.patched_pps) * 1.18)
    ax.set_ylabel("rx kpps, one CPU (softirq 100%)", fontsize=small)
    ax.tick_params(axis="y", labelsize=small)
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v / 1e3:,.0f}")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", linewidth=0.6, label=n) for n, c, *_ in
               [(f[0], f[2]) for f in fits]]
    handles.append(Rectangle((0, 0), 1, 0.1, facecolor=COLORS["measured"],
                             label="measured (fb32856b16ad, sockperf UDP 1000 B)"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=small, frameon=False, ncol=3,
              borderaxespad=0.2, handlelength=1.6, columnspacing=1.5)
    fig.suptitle(f"{m.traffic.label}: model rx rate per kernel (kpps on the bars) vs the seed's measurement "
                 f"{m.baseline_pps:,.0f} → {m.patched_pps:,.0f} pps\n({m.baseline_kernel} copy → "
                 f"{m.patched_kernel} build_skb)", fontsize=FONT["label"], x=0.01, y=0.985, ha="left", va="top")
    return fig


def _breakdown_segments(res: Mapping[str, cost.RxCost], kernels: Sequence[str]
                        ) -> tuple[float, list[tuple[str, str, float, float]], dict[str, str], list[float]]:
    """The stacked segments of draw_cost_breakdown: (kernel, segment name, bottom, ns) in drawing order, the
    shown segment names -> colour (stacking order), and each kernel's total.

    Ops >= 5% of the tallest bar on some kernel are drawn (and named) alone; the others of each group are
    drawn as one "other <group> ops" segment, in the group's colour family (readable, and fewer patches)."""
    top = max(r.ns_per_packet for r in res.values())
    big = {op for r in res.values() for op, ns in r.per_op_ns.items() if ns >= 0.05 * top}
    shown: dict[str, str] = {}  # segment name -> colour, in stacking order
    segments: list[tuple[str, str, float, float]] = []
    totals: list[float] = []
    for k in kernels:
        bottom = 0.0
        per = res[k].per_op_ns
        for g, ops in cost.OP_GROUPS.items():
            for op in ops:
                if op in big and per[op] > 0:
                    shown[op] = OP_COLORS[op]
                    segments.append((k, op, bottom, per[op]))
                    bottom += per[op]
            rest = [op for op in ops if op not in big and per[op] > 0]
            if rest:
                name = f"other {g} ops"
                shown[name] = _OTHER_COLORS[g]
                ns = sum(per[op] for op in rest)
                segments.append((k, name, bottom, ns))
                bottom += ns
        totals.append(bottom)
    return top, segments, shown, totals


def _legend_order(shown: Mapping[str, str]) -> list[str]:
    """Legend entries top of the stack first."""
    order = [n for g, ops in cost.OP_GROUPS.items() for n in (*ops, f"other {g} ops") if n in shown]
    return list(reversed(order))


@public
def draw_cost_breakdown(traffic: cost.Traffic | None = None, *, kernels: Sequence[str] = cost.KERNELS,
                        costs: cost.Costs | None = None, highlight: str | None = None,
                        fig: Figure | None = None) -> Figure:
    """ns per packet per kernel, stacked by operation (colour family = operation group, every segment named in the
    legend), each kernel labelled with the receive path it takes for this traffic. ``costs`` default: the
    2-parameter calibration. The same drawing in a notebook and in the cost panel: pass the figure of a previous
    call to redraw into its axes."""
    traffic = traffic or cost.seed_traffic()
    c = costs if costs is not None else cost.calibrate().two_param
    res = rx_costs(traffic, kernels, c)
    fig, (ax, ax_leg) = reuse_axes(fig, ("cost_breakdown", len(kernels)), FIG_WIDTH, 3.6, _breakdown_axes)
    small = FONT["small"]
    ax.text(0.0, 1.02, f"{traffic.label}: receive cost per operation (stacked), per kernel and receive path",
            transform=ax.transAxes, fontsize=FONT["label"], va="bottom", gid="traffic_label")
    top, segments, shown, totals = _breakdown_segments(res, kernels)
    index = {k: i for i, k in enumerate(kernels)}
    for k, name, bottom, ns in segments:
        fast_region(ax, f"{k}:{name}", index[k] - 0.35, bottom, 0.7, ns, color=shown[name])
    label_to = ax.get_xaxis_transform()  # x in data, y in axes fraction
    per_kernel = _px_per_unit(ax, len(kernels) + 0.2) - 6
    for xi, (k, bottom) in enumerate(zip(kernels, totals)):
        bold = "bold" if k == highlight else "normal"
        ax.text(xi, bottom, f"{bottom:.0f} ns", ha="center", va="bottom", fontsize=small, weight=bold)
        ax.text(xi, -0.025, _head_label(res[k], per_kernel, bold), ha="center", va="top", fontsize=small,
                weight=bold, transform=label_to, gid=f"{k}:path_label")
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel("ns per packet", fontsize=small, labelpad=2)
    # the legend: swatches and names, top of the stack first
    names = _legend_order(shown)
    step = min(0.075, 1.0 / max(1, len(names)))
    for i, n in enumerate(names):
        y = 1.0 - (i + 1) * step
        fast_region(ax_leg, f"legend:{n}", 0.0, y + 0.15 * step, _SWATCH_PX, 0.7 * step, color=shown[n])
        ax_leg.text(_SWATCH_PX + 6, y + 0.5 * step, n, fontsize=small, va="center", ha="left")
    return fig


@functools.lru_cache(maxsize=1)
def _legend_px() -> float:
    """Width of the breakdown's legend: a swatch and the longest segment name any traffic can show."""
    names = [op for ops in cost.OP_GROUPS.values() for op in ops] + [f"other {g} ops" for g in cost.OP_GROUPS]
    return _SWATCH_PX + 6 + max(text_px(n, FONT["small"], "bold") for n in names) + 4


_SWATCH_PX = 14.0


def _breakdown_axes(fig: Figure) -> list:
    width = fig.get_figwidth() * DPI
    leg = _legend_px() / width
    ax = fig.add_axes((0.07, 0.2, 1 - leg - 0.095, 0.72))
    ax_leg = fig.add_axes((1 - leg - 0.005, 0.2, leg, 0.72))
    ax_leg.set_axis_off()
    ax_leg.set_xlim(0, leg * width)
    ax_leg.set_ylim(0, 1)
    ax.set_xticks([])
    ax.yaxis.set_major_locator(MaxNLocator(4))  # few tick labels: text is most of the redraw time
    ax.tick_params(axis="y", labelsize=FONT["small"])
    return [ax, ax_leg]
