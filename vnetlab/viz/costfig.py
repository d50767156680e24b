"""Cost-model figures: the receive rate against the seed measurement, the per-op breakdown, the router.

- :func:`draw_rx_rate`: predicted rx packets/s per kernel (vnetlab.cost), bars, with the seed's measured
  956,864 -> 1,158,465 pps marked on the kernels it compares (5.11 copy path -> 5.13 build_skb).
- :func:`draw_cost_breakdown`: ns per packet per kernel as stacked bars, one segment per operation.
- :func:`draw_router`: the VLAN NAT router, 20 Mbps -> 1 Gbps: model goodput vs the measured values with
  the link cap, and a sensitivity tornado (xmit.sensitivity) of the after/before goodput ratio.

Gids: "<kernel>:rate" (height = model pps), "<kernel>:<op>" (height = ns/packet of that op),
"router:<kernel>[:<variant>]" (height = goodput in bit/s), "tornado:<param>" (spanning the ratios).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from vnetlab import cost, xmit
from vnetlab.viz.memory import reuse_axes
from vnetlab.viz.style import COLORS, fast_region, region, target_figure

# Seed 003 (commit 2e4ef10f5850, "net: introduce NETIF_F_GSO_UDP_L4 and GSO_FRAGLIST to GSO_SOFTWARE"):
# "Tested on MIPS32 R2 router board with a WIP NIC driver in VLAN NAT: 20 Mbps baseline, 1 Gbps / link speed".
ROUTER_MEASURED_BPS = {"5.10": 20e6, "5.11": 1e9}

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


def rx_costs(traffic: cost.Traffic, kernels: Sequence[str], costs: cost.Costs, arch: str = "x86_64"
             ) -> dict[str, cost.RxCost]:
    """cost.rx_cost for each kernel, with the op counts cached per (traffic, kernel, arch)."""
    return {k: cost.RxCost(_op_counts(traffic, k, arch), costs) for k in kernels}


_HEAD_SHORT = {"napi_page_frag": "page-frag head", "napi_page_frag_1k": "1K page-frag head", "kmalloc": "kmalloc head",
               "small_head_cache": "small-head cache"}


def _head_label(rc: cost.RxCost) -> str:
    o = rc.ops
    path = max(o.path_counts, key=o.path_counts.get)
    return f"{o.kernel}\n{path}" + (f"\n{_HEAD_SHORT.get(o.head_kind, o.head_kind)}" if path != "build_skb" else "")


# --------------------------------------------------------------------------------------------------

def draw_rx_rate(*, costs: cost.Costs | None = None, kernels: Sequence[str] = cost.KERNELS,
                 fig: Figure | None = None) -> Figure:
    """Model pps per kernel for the seed traffic, for the 1-parameter fit (baseline only: the patched rate is
    a prediction) and the 2-parameter fit (exact on both by construction), with the measured rates marked."""
    cal = cost.calibrate(costs)
    m = cal.measurement
    fig = target_figure(fig, 9.0, 3.8)
    ax = fig.subplots(gridspec_kw=dict(left=0.08, right=0.76, top=0.85, bottom=0.2))
    fits = (("1-parameter fit (5.11 only)", cal.one_param, "#9ecae1", "1p"),
            ("2-parameter fit (5.11 and 5.13)", cal.two_param, COLORS["model"], "2p"))
    bw = 0.38
    labels = []
    for fi, (_name, c, color, tag) in enumerate(fits):
        res = rx_costs(m.traffic, kernels, c)
        for xi, k in enumerate(kernels):
            pps = res[k].pps
            x = xi + (fi - 0.5) * bw - bw / 2
            region(ax, f"{k}:rate" + ("" if tag == "2p" else ":1p"), x, 0, bw * 0.95, pps, color=color)
            ax.text(x + bw * 0.475, pps * 0.5, f"{pps / 1e3:.0f}", ha="center", va="center", fontsize=7,
                    rotation=90, color="black" if tag == "1p" else "white")
            if fi == 1:
                labels.append(_head_label(res[k]))
    measured = ((m.baseline_kernel, m.baseline_pps), (m.patched_kernel, m.patched_pps))
    for k, pps in measured:
        if k in kernels:
            xi = list(kernels).index(k)
            ax.plot([xi - 0.45, xi + 0.45], [pps, pps], color=COLORS["measured"], linewidth=2, gid=f"{k}:measured")
            ax.text(xi, pps * 1.045, f"measured {pps:,.0f}", ha="center", va="bottom", fontsize=6.5,
                    color=COLORS["measured"], weight="bold")
    ax.set_xticks(range(len(kernels)), labels, fontsize=7)
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    top = max(p.get_height() for p in ax.patches)
    ax.set_ylim(0, max(top, m.patched_pps) * 1.18)
    ax.set_ylabel("rx kpps, one CPU (softirq 100%)")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v / 1e3:,.0f}")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", linewidth=0.6, label=n) for n, c, *_ in
               [(f[0], f[2]) for f in fits]]
    handles.append(Rectangle((0, 0), 1, 0.1, facecolor=COLORS["measured"], label="measured (seed 000,\nsockperf UDP 1000 B)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    ax.set_title(f"{m.traffic.label}: model rx rate per kernel (kpps on the bars)\nvs the seed's measurement "
                 f"{m.baseline_pps:,.0f} → {m.patched_pps:,.0f} pps ({m.baseline_kernel} copy → "
                 f"{m.patched_kernel} build_skb)", fontsize=8.5, loc="left", y=1.0)
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


def draw_cost_breakdown(traffic: cost.Traffic | None = None, *, kernels: Sequence[str] = cost.KERNELS,
                        costs: cost.Costs | None = None, highlight: str | None = None,
                        fig: Figure | None = None, compact: bool = False) -> Figure:
    """ns per packet per kernel, stacked by operation (colour family = operation group), each kernel labelled
    with the receive path it takes for this traffic. ``costs`` default: the 2-parameter calibration.

    ``compact`` (the cost panel): the same segments, redrawn into reused axes; kernel/path labels as plain text
    under the bars (no x ticks), the legend as swatches and text, the title in the panel's HTML."""
    traffic = traffic or cost.seed_traffic()
    c = costs if costs is not None else cost.calibrate().two_param
    res = rx_costs(traffic, kernels, c)
    if compact:
        return _draw_cost_breakdown_compact(res, kernels, highlight, fig, traffic.label)
    fig = target_figure(fig, 9.6, 4.0)
    ax = fig.subplots(gridspec_kw=dict(left=0.07, right=0.74, top=0.9, bottom=0.19))
    top, segments, shown, totals = _breakdown_segments(res, kernels)
    for k, name, bottom, ns in segments:
        xi = list(kernels).index(k)
        region(ax, f"{k}:{name}", xi - 0.35, bottom, 0.7, ns, color=shown[name])
    for xi, (k, bottom) in enumerate(zip(kernels, totals)):
        ax.text(xi, bottom, f"{bottom:.0f} ns", ha="center", va="bottom", fontsize=6.5,
                weight="bold" if k == highlight else "normal")
    ax.set_xticks(range(len(kernels)), [_head_label(res[k]) for k in kernels], fontsize=7)
    if highlight in kernels:
        ax.get_xticklabels()[list(kernels).index(highlight)].set_weight("bold")
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel("ns per packet (1e9 / pps)")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(4))  # few tick labels: text is most of the redraw time
    handles = [Rectangle((0, 0), 1, 1, facecolor=shown[n], edgecolor="black", linewidth=0.5, label=n)
               for n in _legend_order(shown)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.04), fontsize=6.5, frameon=False,
              ncol=1, handlelength=1.2, labelspacing=0.3)
    ax.set_title(f"{traffic.label}: receive cost per operation (stacked), per kernel and path", fontsize=8.5,
                 loc="left", y=1.0)
    return fig


def _breakdown_axes(fig: Figure) -> list:
    ax = fig.add_axes((0.075, 0.2, 0.66, 0.76))
    ax_leg = fig.add_axes((0.75, 0.2, 0.24, 0.76))
    ax_leg.set_axis_off()
    ax_leg.set_xlim(0, 1)
    ax_leg.set_ylim(0, 1)
    ax.set_xticks([])
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(4))  # few tick labels: text is most of the redraw time
    ax.tick_params(axis="y", labelsize=7.5)
    return [ax, ax_leg]


def _draw_cost_breakdown_compact(res: Mapping[str, cost.RxCost], kernels: Sequence[str], highlight: str | None,
                                 fig: Figure | None, label: str = "") -> Figure:
    fig, (ax, ax_leg) = reuse_axes(fig, ("cost_breakdown", "compact", len(kernels)), 9.6, 3.6, _breakdown_axes)
    # which traffic the bars are for (one short text: the rest of the title is in the panel's HTML)
    ax.text(0.0, 1.01, label, transform=ax.transAxes, fontsize=8, va="bottom", gid="traffic_label")
    top, segments, shown, totals = _breakdown_segments(res, kernels)
    index = {k: i for i, k in enumerate(kernels)}
    for k, name, bottom, ns in segments:
        fast_region(ax, f"{k}:{name}", index[k] - 0.35, bottom, 0.7, ns, color=shown[name])
    label_to = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for xi, (k, bottom) in enumerate(zip(kernels, totals)):
        bold = "bold" if k == highlight else "normal"
        ax.text(xi, bottom, f"{bottom:.0f} ns", ha="center", va="bottom", fontsize=7, weight=bold)
        ax.text(xi, -0.025, _head_label(res[k]), ha="center", va="top", fontsize=7.5, weight=bold,
                transform=label_to, gid=f"{k}:path_label")
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    ax.set_ylim(0, top * 1.2)
    ax.set_ylabel("ns per packet", fontsize=8, labelpad=2)
    # the legend: swatches and names, top of the stack first
    names = _legend_order(shown)
    step = min(0.075, 1.0 / max(1, len(names)))
    for i, n in enumerate(names):
        y = 1.0 - (i + 1) * step
        fast_region(ax_leg, f"legend:{n}", 0.0, y + 0.15 * step, 0.07, 0.7 * step, color=shown[n])
        ax_leg.text(0.1, y + 0.5 * step, n, fontsize=7, va="center", ha="left")
    return fig


# --------------------------------------------------------------------------------------------------

def _bps(v: float, _pos=None) -> str:
    return f"{v / 1e9:g} Gbps" if v >= 1e9 else f"{v / 1e6:g} Mbps"


def _log_bps_axis(ax) -> None:
    # plain tick labels: log-axis mathtext (10^9) costs more to draw than the rest of the figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator([1e6, 1e7, 1e8, 1e9]))
    ax.yaxis.set_major_formatter(FuncFormatter(_bps))
    ax.yaxis.set_minor_locator(NullLocator())


def router_results(*, upper: str = "vlan", nic: str = "router", gro: str = "fraglist",
                   kernels: Sequence[str] = ("5.10", "5.11")) -> dict[str, xmit.RouterResult]:
    return {k: xmit.router_scenario(kernel=k, upper=upper, nic=nic, gro=gro) for k in kernels}


def draw_router(*, upper: str = "vlan", nic: str = "router", gro: str = "fraglist",
                costs: xmit.RouterCosts | None = None, kernels: tuple[str, str] = ("5.10", "5.11"),
                tornado: bool = True, fig: Figure | None = None) -> Figure:
    """Goodput (log scale) per kernel from xmit.router_throughput, plain and with the 5.10 untranslated-drop
    hypothesis, against the seed's 20 Mbps -> 1 Gbps and the link cap; and the sensitivity tornado of
    goodput(after)/goodput(before) with each cost scaled by 0.5 and 2 (xmit.sensitivity)."""
    c = costs or xmit.RouterCosts.from_table()
    res = router_results(upper=upper, nic=nic, gro=gro, kernels=kernels)
    before, after = res[kernels[0]], res[kernels[1]]
    fig = target_figure(fig, 11.0 if tornado else 6.2, 3.9)
    if tornado:
        ax, axt = fig.subplots(1, 2, gridspec_kw=dict(left=0.07, right=0.98, top=0.87, bottom=0.22, wspace=0.32,
                                                        width_ratios=[1.5, 1]))
    else:
        ax = fig.subplots(gridspec_kw=dict(left=0.14, right=0.97, top=0.86, bottom=0.22))
        axt = None
    link = c["link_bps"]
    ticks, labels = [], []
    x = 0
    for k in kernels:
        r = res[k]
        variants = [("", False, COLORS["model"], f"model: seg. at\n{r.segmented_at or 'NIC (hw GSO)'}")]
        if any("only the head segment" in n for n in r.notes):
            variants.append((":drop_untranslated", True, "#9ecae1", "model if untrans-\nlated segs dropped"))
        bars = []
        for tag, drop, color, name in variants:
            t = xmit.router_throughput(r, c, drop_untranslated=drop)
            bars.append((f"router:{k}{tag}", t.goodput_bps, color, f"{name}\n({t.bound}-bound)"))
        if k in ROUTER_MEASURED_BPS:
            bars.append((f"router:{k}:measured", ROUTER_MEASURED_BPS[k], COLORS["measured"], "measured\n(seed 003)"))
        for gid, bps, color, name in bars:
            region(ax, gid, x - 0.4, 0, 0.8, bps, color=color)
            ax.text(x, bps * 1.12, f"{bps / 1e6:,.0f}\nMbps", ha="center", va="bottom", fontsize=6.5)
            ticks.append(x)
            labels.append(f"{k}\n{name}")
            x += 1
        x += 0.5
    ax.axhline(link, color="#de2d26", linestyle="--", linewidth=0.9, gid="router:link_cap")
    _log_bps_axis(ax)
    ax.set_ylim(1e6, link * 8)
    ax.set_xticks(ticks, labels, fontsize=6.3)
    ax.set_xlim(-0.6, x - 0.9)

    ax.set_ylabel("UDP goodput (log scale)")
    ax.set_title(f"VLAN NAT router, {upper} on {nic} NIC, GRO {gro}: model vs measured "
                 f"(red dashes: link {link / 1e9:g} Gbps)", fontsize=8.5, loc="left", y=1.0)
    if axt is not None:
        base = xmit.router_gap(before, after, c)
        sens = xmit.sensitivity(before, after, c, factors=(0.5, 2.0))
        moving = sorted(((n, v) for n, v in sens.items() if max(v) - min(v) > 1e-9),
                        key=lambda nv: max(nv[1]) - min(nv[1]))
        flat = [n for n, v in sens.items() if max(v) - min(v) <= 1e-9]
        for i, (n, (lo_f, hi_f)) in enumerate(moving):
            lo, hi = min(lo_f, hi_f), max(lo_f, hi_f)
            region(axt, f"tornado:{n}", lo, i - 0.35, hi - lo, 0.7, color="#fdae6b")
            axt.text(hi, i, f"  ×0.5→{lo_f:.2g}, ×2→{hi_f:.2g}", va="center", ha="left", fontsize=6.3)
        axt.axvline(base, color="black", linewidth=0.9, gid="tornado:base")
        meas_gap = ROUTER_MEASURED_BPS[kernels[1]] / ROUTER_MEASURED_BPS[kernels[0]] \
            if all(k in ROUTER_MEASURED_BPS for k in kernels) else None
        if meas_gap:
            axt.axvline(meas_gap, color=COLORS["measured"], linewidth=2, gid="tornado:measured")
            axt.text(meas_gap / 1.08, -0.55, f"measured ×{meas_gap:.0f}", ha="right", va="bottom",
                     fontsize=6.5, color=COLORS["measured"], weight="bold")
        axt.set_yticks(range(len(moving)), [n for n, _ in moving], fontsize=6.5)
        from matplotlib.ticker import FuncFormatter, NullFormatter

        axt.set_xscale("log")
        axt.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"×{v:g}"))
        axt.xaxis.set_minor_formatter(NullFormatter())
        axt.set_xlim(min([base] + [min(v) for _, v in moving]) / 1.5, (meas_gap or base) * 4)
        axt.set_ylim(-0.6, max(1, len(moving)) - 0.4 + 2.4)  # room above the bars for the no-effect list
        axt.set_xlabel(f"goodput {kernels[1]} / goodput {kernels[0]} (model; base ×{base:.2g})")
        axt.set_title("Sensitivity of the model's ratio: one cost ×0.5 and ×2", fontsize=8.5, loc="left", y=1.0)
        if flat:
            rows = [", ".join(flat[i:i + 3]) for i in range(0, len(flat), 3)]
            axt.text(0.02, 0.98, f"no effect at ×0.5 or ×2 ({len(flat)} costs):\n" + ",\n".join(rows),
                     transform=axt.transAxes, fontsize=5.8, va="top", ha="left", color="#444444",
                     bbox=dict(facecolor="white", edgecolor="none", pad=1.0))
    return fig


def router_goodputs(res: Mapping[str, xmit.RouterResult], costs: xmit.RouterCosts | None = None) -> dict[str, float]:
    """Model goodput per kernel (bit/s), as drawn by draw_router (plain variant)."""
    return {k: xmit.router_throughput(r, costs).goodput_bps for k, r in res.items()}


def draw_router_panel(stack, skb, result: xmit.RouterResult, throughput: xmit.RouterThroughput,
                      costs: xmit.RouterCosts | None = None, *, fig: Figure | None = None,
                      compact: bool = False) -> Figure:
    """One router kernel: the stack the routed skb goes down (stacks.draw_stack's column) and its model
    goodput next to the seed's measured 20 Mbps (5.10) and 1 Gbps (5.11), with the link cap.

    ``compact`` (the router panel): the same drawing into axes reused between updates (log axis made once),
    regions without data-limit updates, the bar's name as text under it instead of an x tick."""
    from vnetlab.viz import stacks

    c = costs or xmit.RouterCosts.from_table()
    link = c["link_bps"]
    if compact:
        fig, (ax_s, ax) = reuse_axes(fig, ("router_panel", "compact"), 9.4, 3.6,
                                     lambda f: _router_panel_axes(f, xticks=False))
    else:
        fig = target_figure(fig, 9.4, 3.6)
        ax_s, ax = _router_panel_axes(fig)
    draw = fast_region if compact else region

    def _fast_hline(y: float, **kw) -> None:
        # ax.axhline without its data-limit update and autoscale request (the limits are set below)
        ax.add_artist(Line2D([0, 1], [y, y], transform=ax.get_yaxis_transform(), **kw))

    y = stacks._draw_column(ax_s, "0", stack, skb, result.tx[0], lamps=False)  # features: see the stack panel
    ax_s.set_ylim(y - 0.1, 0.1)
    n_tx = len(result.tx)
    ax_s.set_title(f"kernel {result.kernel}: {result.packets_in} UDP packets, GRO {result.gro} → "
                   + (f"{n_tx} skbs sent one by one (first shown)" if n_tx > 1 else "1 GRO skb routed"),
                   fontsize=8.5, loc="left", y=1.0)
    bps = throughput.goodput_bps
    draw(ax, f"router:{result.kernel}", -0.25, 0, 0.5, bps, color=COLORS["model"])
    ax.text(0, bps * 1.12, f"{bps / 1e6:,.0f} Mbps\n({throughput.bound}-bound)", ha="center", va="bottom",
            fontsize=7)
    hline = _fast_hline if compact else ax.axhline
    for k, meas in ROUTER_MEASURED_BPS.items():
        hline(meas, color=COLORS["measured"], linewidth=1.6, gid=f"router:{k}:measured")
        ax.text(1.25, meas * 1.08, f"measured, {k}:\n{meas / 1e6:,.0f} Mbps", ha="right", va="bottom",
                fontsize=6.5, color=COLORS["measured"])
    hline(link, color="#de2d26", linestyle="--", linewidth=0.9, gid="router:link_cap")
    ax.set_ylim(1e6, link * 8)
    ax.set_xlim(-0.45, 1.3)
    name = f"model, kernel {result.kernel}\n{result.wire_packets} packets out"
    if compact:
        ax.text(0, -0.02, name, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7,
                gid=f"router:{result.kernel}:name")
    else:
        ax.set_xticks([0], [name], fontsize=7)
    ax.set_ylabel("UDP goodput (log scale)")
    ax.set_title(f"goodput (red dashes: link {link / 1e9:g} Gbps)", fontsize=8.5, loc="left", y=1.0)
    return fig


def _router_panel_axes(fig: Figure, *, xticks: bool = True) -> list:
    ax_s, ax = fig.subplots(1, 2, gridspec_kw=dict(left=0.01, right=0.98, top=0.9, bottom=0.14, wspace=0.22,
                                                   width_ratios=[1.7, 1]))
    _log_bps_axis(ax)
    if not xticks:
        ax.set_xticks([])  # the bar is named by a text under it
    return [ax_s, ax]
