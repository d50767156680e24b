"""The VLAN NAT router of 2e4ef10f5850 (20 Mbps -> 1 Gbps): the story figure of notebook 50 and the router panel.

- :func:`router_story` / :func:`draw_router_story`: what the cost model can and cannot explain. The seed's
  measurement (20 Mbps before, 1 Gbps after, MIPS32 R2 VLAN NAT router), the cost-only model and its bound
  (software segmentation with every cost it adds ×10 cannot give 50x), and the mechanism that can: before
  c3df39ac9b0e ("udp: ipv4: manipulate network header of NATed UDP GRO fraglist", v5.11-rc7; 5.10.15 as
  3d6df63a5cbe) skb_segment_list copied only the MAC header onto each segment, so after NAT every segment but
  the first left with its un-NATed IP/UDP header and about 1 datagram in N arrived (N packets per GRO skb).
  After the patch the VLAN passes the GRO skb whole to a driver that advertises GSO_FRAGLIST (as Lobakin's did,
  netdev 15 Jan 2021, <20210115105048.2689-1-alobakin@pm.me>), and nothing is resegmented. The mechanism's
  goodput is router.lost_segments(), the workbook's one "1 Gbps / N" number: an inference from the fix, that
  mail and the lab's delivery counts, not a measurement of the author's router.
- :func:`draw_router_panel`: one kernel's router, the stack the routed skb goes down and its model goodput.

Every call into the router model goes through ``_router`` below (the scenario is moving from vnetlab.xmit to
vnetlab.router: one import to switch).

Gids: "story:<bar>" (bars, height = bit/s), "ratio:model" (line), "ratio:measured", "router:<kernel>".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from vnetlab import router as _router
from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.skb import Skb
from vnetlab.stack import PATCH_KERNELS, GroSegs, GsoSize, Stack
from vnetlab.viz.stacks import _column, _draw_column
from vnetlab.viz.style import DPI, FIG_WIDTH, FONT, fast_region, reuse_axes, wrap_px

__all__ = ["ROUTER_MEASURED_BPS", "GRO_MODES", "ROUTER_UPPERS", "KIND_STYLE", "RouterStory", "router_run",
           "router_story", "draw_router_story", "draw_router_panel"]

# Seed 003, the commit message of 2e4ef10f5850 (v1 posting): "Tested on MIPS32 R2 router board with a WIP NIC
# driver in VLAN NAT: 20 Mbps baseline, 1 Gbps / link speed with this patch". A measurement, quoted.
ROUTER_MEASURED_BPS = {"5.10": 20e6, "5.11": 1e9}
GRO_MODES = _router.GRO_MODES
ROUTER_UPPERS = ("vlan", "macvlan", "bond", "bridge", "none")

# What a number is, drawn so that a reader tells them apart without colour: fill, hatch, edge, and the word.
#   measured: the seed's measurement; model: the model's prediction (nothing fitted to 20 Mbps);
#   bound: the most a mechanism can do under deliberately pessimistic costs.
KIND_STYLE: dict[str, dict[str, Any]] = {
    "measured": dict(facecolor="#555555", hatch=None, edgecolor="black", linestyle="-"),
    "model": dict(facecolor="#77AADD", hatch=None, edgecolor="black", linestyle="-"),
    "model, mechanism": dict(facecolor="#77AADD", hatch="..", edgecolor="black", linestyle="-"),
    "bound": dict(facecolor="#FFFFFF", hatch="///", edgecolor="#444444", linestyle="--"),
}


@public
def router_run(*, kernel: str, nic: str = "router", gro: str = "fraglist", upper: str = "vlan",
               drop_untranslated: bool = False, segs: GroSegs | None = None, gso_size: GsoSize = 1472,
               costs: Any = None) -> tuple[Any, Any]:
    """(RouterResult, RouterThroughput) of one router configuration (router_scenario, router_throughput)."""
    rr = _router.router_scenario(kernel=kernel, nic=nic, gro=gro, upper=upper, segs=segs, gso_size=gso_size)
    return rr, _router.router_throughput(rr, costs or _router.RouterCosts.from_table(),
                                         drop_untranslated=drop_untranslated)


@dataclass(frozen=True)
class RouterStory:
    """The numbers of the 20 Mbps -> 1 Gbps figure (bit/s unless named otherwise)."""

    kernels: tuple[str, str]
    gso_size: int
    packets_per_gro_skb: int  # N
    segmented_at: str | None  # before the patch
    measured_before: float
    measured_after: float
    model_before: float  # cost only: every segment translated
    model_after: float
    cost_factor: float
    scaled_params: tuple[str, ...]  # the costs that segmenting at the VLAN adds, ×cost_factor in the bound
    bound_before: float  # cost only, those costs ×cost_factor
    bound_gap: float  # goodput after / before under the bound's costs
    mechanism_before: float  # untranslated segments dropped
    delivery_n: tuple[int, ...]  # packets per GRO skb
    delivery_model: tuple[float, ...]  # translated / sent at each N (router_scenario's nat_translated)

    @property
    def measured_ratio(self) -> float:
        return self.measured_before / self.measured_after

    @property
    def model_ratio(self) -> float:
        return self.delivery_model[self.delivery_n.index(self.packets_per_gro_skb)]


@functools.lru_cache(maxsize=8)
@public  # under the cache: checks.public cannot read an lru_cache wrapper's globals (checks-base)
def router_story(*, kernels: tuple[str, str] = PATCH_KERNELS, nic: str = "router", upper: str = "vlan",
                 gso_size: int = 1472, cost_factor: float = 10.0) -> RouterStory:
    """Run the router scenario before and after the patch: cost-only goodput, the cost-only bound with every
    cost that resegmenting adds multiplied by ``cost_factor``, and the untranslated-segment delivery ratio for
    every N up to the GRO skb's (max_gro_segs: 64 KiB cap, 44 for 1472-byte datagrams)."""
    if not cost_factor >= 1:
        raise ArgumentError(f"cost_factor must be >= 1 (how pessimistic the bound's costs are), got {cost_factor!r}",
                            param="cost_factor")
    c = _router.RouterCosts.from_table()
    before, t_before = router_run(kernel=kernels[0], nic=nic, upper=upper, gso_size=gso_size, costs=c)
    after, t_after = router_run(kernel=kernels[1], nic=nic, upper=upper, gso_size=gso_size, costs=c)
    # the costs of the operations the pre-patch kernel does more often (resegmenting at the VLAN)
    ops_b, ops_a = before.ops, after.ops
    scaled = tuple(sorted({_router.COST_OF_OP[op] for op in _router.COST_OF_OP if ops_b.get(op, 0) > ops_a.get(op, 0)}))
    worse = c.with_(**{p: c[p] * cost_factor for p in scaled})
    b_bound = _router.router_throughput(before, worse).goodput_bps
    a_bound = _router.router_throughput(after, worse).goodput_bps
    mech = _router.lost_segments(kernel=kernels[0], nic=nic, upper=upper, gso_size=gso_size, costs=c).goodput_bps
    n_max = before.packets_in
    ns = tuple(range(1, n_max + 1))
    ratios = []
    for n in ns:
        rr = _router.router_scenario(kernel=kernels[0], nic=nic, upper=upper, segs=n, gso_size=gso_size)
        ratios.append(rr.nat_translated / rr.wire_packets)
    return RouterStory(tuple(kernels), gso_size, n_max, before.segmented_at, ROUTER_MEASURED_BPS[kernels[0]],
                       ROUTER_MEASURED_BPS[kernels[1]], t_before.goodput_bps, t_after.goodput_bps, cost_factor,
                       scaled, b_bound, a_bound / b_bound, mech, ns, tuple(ratios))


_LINE_IN = FONT["small"] * 1.2 / 72  # one line of FONT["small"] text, inches


def _bps(v: float, _pos: object = None) -> str:
    return f"{v / 1e9:.3g} Gbps" if v >= 1e9 else f"{v / 1e6:,.0f} Mbps" if v >= 1e6 else f"{v / 1e3:,.0f} kbps"


def _log_bps_axis(ax: Any) -> None:
    # plain tick labels: log-axis mathtext (10^9) costs more to draw than the rest of the figure
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator([1e6, 1e7, 1e8, 1e9]))
    ax.yaxis.set_major_formatter(FuncFormatter(_bps))
    ax.yaxis.set_minor_locator(NullLocator())


def _bar(ax: Any, gid: str, x: float, value: float, kind: str, width: float = 0.74) -> Rectangle:
    st = KIND_STYLE[kind]
    r = fast_region(ax, gid, x - width / 2, 0, width, value, color=st["facecolor"], hatch=st["hatch"])
    r.set_edgecolor(st["edgecolor"])
    r.set_linestyle(st["linestyle"])
    r.set_hatchcolor("#666666")
    return r


@public
def draw_router_story(story: RouterStory | None = None, *, fig: Figure | None = None) -> Figure:
    """Left: goodput before and after the patch, measured vs model vs bound (log scale, link cap dashed).
    Right: the delivery ratio of the untranslated-segment mechanism, 1 in N, against the measured 20 Mbps /
    1 Gbps. Footer: the mechanism and its primary sources."""
    s = story or router_story()
    small = FONT["small"]
    footer = wrap_px(
        "Mechanism: before c3df39ac9b0e (v5.11-rc7; in 5.10.15 as 3d6df63a5cbe) skb_segment_list copied only the MAC "
        "header onto each segment, so after NAT segments 2..N left with un-NATed IP/UDP headers (MEASURED in the lab: "
        "one intact datagram per GRO skb). Lobakin (netdev, 15 Jan 2021, <20210115105048.2689-1-alobakin@pm.me>): "
        "NAT + fraglist GRO \"worked for me because I advertised fraglist GSO support in my driver\". That this made "
        "the seed's 20 Mbps is INFERRED; the patch mail blames resegmentation.", 0.98 * FIG_WIDTH * DPI, small)
    foot_in = 0.1 + (footer.count("\n") + 1) * _LINE_IN
    legend_in = 2 * _LINE_IN + 0.15  # two rows of the key
    bottom_in = foot_in + legend_in + 0.12 + 3 * _LINE_IN  # two-line tick labels / x label, and their pad
    height = round((bottom_in + 2.75 + 0.4) * DPI) / DPI
    fig, (ax, axr) = reuse_axes(fig, ("router_story", height), FIG_WIDTH, height, lambda f: [
        f.add_axes((0.1, bottom_in / height, 0.485, 2.75 / height)),
        f.add_axes((0.7, bottom_in / height, 0.28, 2.75 / height))])
    k0, k1 = s.kernels
    bars = [  # gid, value, kind, tick label
        ("measured_before", s.measured_before, "measured", "MEASURED\n(seed)"),
        ("model_before", s.model_before, "model", "MODEL\ncost only"),
        ("bound_before", s.bound_before, "bound", f"BOUND\ncost ×{s.cost_factor:g}"),
        ("mechanism_before", s.mechanism_before, "model, mechanism", "MODEL\nlost segs"),
        ("measured_after", s.measured_after, "measured", "MEASURED\n(seed)"),
        ("model_after", s.model_after, "model", "MODEL\ncost only"),
    ]
    xs = [0, 1, 2, 3, 4.6, 5.6]
    for x, (gid, v, kind, _label) in zip(xs, bars):
        _bar(ax, f"story:{gid}", x, v, kind)
        ax.text(x, v * 1.15, _bps(v), ha="center", va="bottom", fontsize=small,
                weight="bold" if kind == "measured" else "normal", gid=f"story:{gid}:value")
    link = 1e9
    ax.add_artist(Line2D([0, 1], [link, link], transform=ax.get_yaxis_transform(), color="black", linestyle=":",
                         linewidth=1.0, gid="story:link"))
    ax.text(2, link * 1.12, "link 1 Gbps", ha="center", va="bottom", fontsize=small)
    _log_bps_axis(ax)
    ax.set_ylim(1e6, 3e10)
    ax.set_xlim(-0.55, 6.15)
    ax.set_xticks(xs, [b[3] for b in bars], fontsize=small)
    ax.tick_params(axis="x", length=0, pad=3)
    ax.tick_params(axis="y", labelsize=small)
    ax.set_ylabel("UDP goodput (log scale)", fontsize=small)
    ax.text(1.5, 9e9, f"{k0}: segmented at {s.segmented_at}\n(skb_segment_list)", ha="center", va="center",
            fontsize=small, weight="bold")
    ax.text(5.1, 9e9, f"{k1}: passed whole\nto a GSO_FRAGLIST\ndriver", ha="center", va="center", fontsize=small,
            weight="bold")
    ax.add_artist(Line2D([3.8, 3.8], [0, 1], transform=ax.get_xaxis_transform(), color="#999999", linewidth=0.8))
    ax.set_title(f"20 Mbps → 1 Gbps: cost gives ×{s.bound_gap:.1f} at most, lost segments ×"
                 f"{s.packets_per_gro_skb} (inferred)", fontsize=FONT["label"], loc="left", y=1.0)
    # right: delivery ratio against N
    axr.set_yscale("log")
    axr.plot(s.delivery_n, s.delivery_model, color="#3366AA", marker="o", markersize=2.5, linewidth=1.2,
             gid="ratio:model")
    axr.axhline(s.measured_ratio, color="#333333", linestyle="--", linewidth=1.4, gid="ratio:measured")
    n = s.packets_per_gro_skb
    axr.plot([n], [s.model_ratio], marker="s", markersize=6, color="#3366AA", markeredgecolor="black")
    axr.text(1, s.measured_ratio * 0.8, f"MEASURED {_bps(s.measured_before)} / {_bps(s.measured_after)}"
             f" = 1/{1 / s.measured_ratio:.0f}", ha="left", va="top", fontsize=small, gid="ratio:measured:label")
    axr.annotate(f"MODEL at N = {n}:\n1/{1 / s.model_ratio:.0f} delivered", (n, s.model_ratio), (n, 0.12), ha="right",
                 va="bottom", fontsize=small, color="#224477", gid="ratio:model:label",
                 arrowprops=dict(arrowstyle="-", color="#224477", linewidth=0.8, shrinkA=2, shrinkB=4))
    axr.yaxis.set_major_locator(FixedLocator([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]))
    axr.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    axr.yaxis.set_minor_locator(NullLocator())
    axr.set_ylim(0.008, 1.3)
    axr.set_xlim(0, n + 2)
    axr.tick_params(labelsize=small)
    axr.set_xlabel(f"N: packets per fraglist GRO skb\n({s.gso_size}-B datagrams: N ≤ {n})", fontsize=small)
    axr.set_ylabel("datagrams delivered / sent", fontsize=small)
    axr.set_title(f"{k0}: only the head segment is NATed", fontsize=FONT["label"], loc="left", y=1.0)
    # key and sources
    handles = [Rectangle((0, 0), 1, 1, label=label, linewidth=0.8, **KIND_STYLE[kind])
               for kind, label in (("measured", "MEASURED: the seed's numbers (2e4ef10f5850's commit message)"),
                                   ("model", "MODEL, cost only: vnetlab's prediction, nothing fitted to 20 Mbps"),
                                   ("bound", f"BOUND: the {len(s.scaled_params)} costs resegmenting adds, "
                                             f"×{s.cost_factor:g}"),
                                   ("model, mechanism", "MODEL, lost segments: 1 in N NATed (N = "
                                    f"{s.packets_per_gro_skb}; inferred cause)"))]
    for h in handles:
        h.set_hatchcolor("#666666")
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, foot_in / height), fontsize=small,
               frameon=False, ncol=2, handlelength=1.8, columnspacing=1.2, labelspacing=0.4, borderaxespad=0.2)
    fig.text(0.01, 0.06 / height, footer, fontsize=small, va="bottom", ha="left", gid="story:footer")
    return fig


# --------------------------------------------------------------------------------------------------
# The router panel's figure

_PANEL_STACK = (0.005, 0.02, 0.62, 0.88)  # the stack's axes


def _router_panel_axes(fig: Figure) -> list:
    ax_s = fig.add_axes(_PANEL_STACK)
    ax = fig.add_axes((0.72, 0.16, 0.265, 0.74))
    _log_bps_axis(ax)
    ax.set_xticks([])  # the bar is named by a text under it
    ax.tick_params(axis="y", labelsize=FONT["small"])
    return [ax_s, ax]


@public
def draw_router_panel(stack: Stack, skb: Skb, result: Any, throughput: Any, *, fig: Figure | None = None) -> Figure:
    """One router kernel: the stack the routed skb goes down (stacks' column, without feature lamps: the explorer
    has them) and its model goodput next to the seed's measured 20 Mbps (5.10) and 1 Gbps (5.11), the link cap
    dashed. Pass the figure of a previous call to redraw into its axes."""
    fig, (ax_s, ax) = reuse_axes(fig, ("router_panel",), FIG_WIDTH, 3.7, _router_panel_axes)
    tx = result.tx[0]
    y = _draw_column(ax_s, "0", _column(stack, skb, tx, _PANEL_STACK[2] * FIG_WIDTH * DPI, lamps=False), skb, tx)
    ax_s.set_ylim(y - 0.1, 0.1)
    n_tx = len(result.tx)
    ax_s.set_title(f"kernel {result.kernel}: {result.packets_in} UDP packets, GRO {result.gro} → "
                   + (f"{n_tx} skbs sent one by one (first shown)" if n_tx > 1 else "1 GRO skb routed"),
                   fontsize=FONT["label"], loc="left", y=1.0)
    bps = throughput.goodput_bps
    kind = "model, mechanism" if throughput.translated_fraction < 1 else "model"
    _bar(ax, f"router:{result.kernel}", 0, bps, kind, width=0.5)
    # with lost segments the link is full but only 1 in N packets is usable: say that, not "link-bound"
    why = (f"1 in {1 / throughput.translated_fraction:.0f} NATed" if throughput.translated_fraction < 1
           else f"{throughput.bound}-bound")
    # over the column, above the 1 Gbps line: no dashed line runs through it whatever the bar's height
    ax.text(0, 1.7e10, f"MODEL\n{bps / 1e6:,.0f} Mbps\n({why})", ha="center", va="top", fontsize=FONT["small"],
            gid=f"router:{result.kernel}:value")
    for k, meas in ROUTER_MEASURED_BPS.items():
        ax.add_artist(Line2D([0, 1], [meas, meas], transform=ax.get_yaxis_transform(), color="#333333",
                             linestyle="--", linewidth=1.4, gid=f"router:{k}:measured"))
        ax.text(1.25, meas * 0.9, f"MEASURED {k}:\n{_bps(meas)}", ha="right", va="top", fontsize=FONT["small"])
    ax.set_ylim(1e6, 2e10)
    ax.set_xlim(-0.45, 1.3)
    ax.text(0, -0.02, f"kernel {result.kernel}\n{result.wire_packets} packets out", transform=ax.get_xaxis_transform(),
            ha="center", va="top", fontsize=FONT["small"], gid=f"router:{result.kernel}:name")
    ax.set_ylabel("UDP goodput (log scale)", fontsize=FONT["small"])
    ax.set_title("goodput: model vs measured", fontsize=FONT["label"], loc="left", y=1.0)
    return fig

