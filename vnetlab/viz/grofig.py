"""GRO figures: how packets fill skb_shared_info.frags[] and spill onto frag_list, per head kind.

- :func:`gro_fill` runs one flow through :func:`vnetlab.gro.aggregate_trace` and records which packet
  every frags[] slot of every sk_buff of the first GRO skb came from (plain data, tested without a figure).
- :func:`draw_gro_fill`: one row per flow: the first sk_buff's linear part and its MAX_SKB_FRAGS slots
  coloured by packet, then the frag_list chain (net/core/gro.c skb_gro_receive, 6.1).
- :func:`draw_packets_per_skb`: packets per GRO skb against the payload size, per kernel, split into the
  first sk_buff (frags[]) and frag_list, from :func:`vnetlab.gro.simulate_stream`.

Every drawn slot is a patch whose gid names the kernel field ("frags[3]", "frag_list[0]"), prefixed by the
row's key so that rows never collide; tests count slots on the figure, not pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from vnetlab import gro, rx
from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.skb import Skb
from vnetlab.viz.style import (
    CATEGORY_COLORS,
    COLORS,
    FIG_WIDTH,
    FONT,
    axes_column,
    fast_region,
    region,
    reuse_axes,
    target_figure,
)

_SMALL = FONT["small"]

# The figure's rows: each head case of rx.HEAD_CASES (docs/kernel/gro.md#c3) on a kernel that produces it for a
# 1448-byte
# TCP flow, with the GRO merge case it meets.
FILL_ROWS: tuple[tuple[str, str, str], ...] = (
    ("build_skb", "6.1", "build_skb() heads (5.13+): head stolen as one frag (case 2)"),
    ("eth_hlen", "6.1", "ETH_HLEN-copy heads (5.12+ copy path): frags moved (case 1)"),
    ("pagefrag128", "5.10", "128-byte page-frag heads (5.10): head + frag, 2 slots per packet (case 2)"),
    ("kmalloc128", "5.11", "128-byte kmalloc heads (5.11): every packet chained on frag_list (case 3)"),
)

# A qualitative palette for packet numbers (tab20 reordered so neighbours differ); cycles after 20 packets.
PACKET_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
                 "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")


@public
def packet_color(i: Annotated[int, In(0, None, "packet index")]) -> str:
    return PACKET_COLORS[i % len(PACKET_COLORS)]


@dataclass
class SkbFill:
    """One sk_buff of the GRO skb: who owns its linear payload and each frags[] slot."""

    head_packet: int | None  # packet whose payload sits in the linear part (None: headers only)
    slot_packets: list[int]  # frags[i] -> input packet index
    packets: list[int]  # input packets whose payload lives in this sk_buff


@dataclass
class GroFill:
    """The first GRO skb of one flow, sk_buff by sk_buff (index 0 = the skb itself, then frag_list)."""

    key: str
    label: str
    kernel: str | Kernel
    arch: str | Arch
    max_skb_frags: int
    skb: Skb
    sk_buffs: list[SkbFill]
    trace: gro.GroTrace
    head_kind: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def packets(self) -> int:
        return sum(len(s.packets) for s in self.sk_buffs)

    @property
    def first_skb_packets(self) -> int:
        return len(self.sk_buffs[0].packets)

    @property
    def frag_list_len(self) -> int:
        return len(self.sk_buffs) - 1


@public
def fill_from_trace(trace: gro.GroTrace, nr_frags_in: Sequence[int], *, offset: int, gro_skb: int = 0,
                    key: str = "", label: str = "", kernel: str | Kernel = DEFAULT_KERNEL,
                    arch: str | Arch = DEFAULT_ARCH,
                    head_kind: str = "") -> GroFill:
    """Slot ownership of GRO skb ``gro_skb`` from the trace's merge cases (skb_gro_receive, net/core/gro.c 6.1).

    ``nr_frags_in``: nr_frags of each input skb before GRO (aggregate mutates its inputs); ``offset``: the
    GRO offset at the payload (gro.flow_params().offset) — a linear part up to it holds headers only.
    case "frags" (1) moves the packet's frags; "head_frag" (2) adds the stolen head then its frags;
    "frag_list" (3) / "receive_list" chain the packet as a new sk_buff that keeps its own frags.
    """
    skb = trace.skbs[gro_skb]
    fills: list[SkbFill] = []
    for e in trace.events:
        if e.gro_skb != gro_skb:
            continue
        n = nr_frags_in[e.index]
        if e.action in ("held", "normal") or e.case in ("frag_list", "receive_list"):
            fills.append(SkbFill(e.index, [e.index] * n, [e.index]))
        elif e.case == "frags":
            fills[-1].slot_packets.extend([e.index] * n)
            fills[-1].packets.append(e.index)
        elif e.case == "head_frag":
            fills[-1].slot_packets.extend([e.index] * (1 + n))
            fills[-1].packets.append(e.index)
        else:
            raise ValueError(f"unknown GRO merge case {e.case!r} for packet {e.index}")
    members = list(skb.walk())
    for s, f in zip(members, fills):
        if s.headlen <= offset:
            f.head_packet = None  # only headers (or nothing) in the linear part: the payload is all in frags
    drawn = [len(f.slot_packets) for f in fills]
    actual = [s.nr_frags for s in members]
    if drawn != actual:
        raise AssertionError(f"slot ownership {drawn} disagrees with the model's nr_frags {actual}")
    a = _arch(arch, kernel)
    return GroFill(key or f"{kernel}/{head_kind}", label, kernel, a.name, a.max_skb_frags, skb, fills, trace,
                   head_kind, {"offset": offset})


@public
def gro_fill(shape: str, *, kernel: str | Kernel = DEFAULT_KERNEL, payload_len: int = 1448,
             n_packets: int | None = None,
             l4: str = "tcp", arch: str | Arch = DEFAULT_ARCH, label: str = "", **gro_kw: Any) -> GroFill:
    """One flow of ``gro.head_case_flow(shape, ...)`` packets (built by the receive model) through GRO; the first
    GRO skb's slot ownership.

    ``n_packets`` defaults to enough packets for one full GRO skb (64 for UDP, the size cap for TCP)."""
    if n_packets is None:
        n_packets = gro.UDP_GRO_CNT_MAX
    skbs = gro.head_case_flow(shape, payload_len, n_packets, l4=l4, kernel=kernel, arch=arch)
    nr = [s.nr_frags for s in skbs]
    trace = gro.aggregate_trace(skbs, l4=l4, kernel=kernel, arch=arch, **gro_kw)
    off = gro.flow_params(l4=l4, kernel=kernel, arch=arch).offset
    return fill_from_trace(trace, nr, offset=off, key=f"{kernel}/{shape}", label=label, kernel=kernel, arch=arch,
                           head_kind=shape)


@public
def receive_fill(payload_len: int, *, l4: str = "udp", kernel: str | Kernel = DEFAULT_KERNEL,
                 arch: str | Arch = DEFAULT_ARCH,
                 n_packets: gro.FlowPackets = gro.UDP_GRO_CNT_MAX, udp_gro: bool = False, features: Any = None,
                 mtu: int = 1500) -> GroFill:
    """``n_packets`` identical packets as rx.receive() builds them on ``kernel``, through GRO."""
    results = [rx.receive(payload_len, l4=l4, kernel=kernel, arch=arch, mtu=mtu) for _ in range(n_packets)]
    skbs = [r.skb for r in results]
    nr = [s.nr_frags for s in skbs]
    trace = gro.aggregate_trace(skbs, l4=l4, udp_gro=udp_gro, features=features, kernel=kernel, arch=arch)
    r0 = results[0]
    label = f"{l4.upper()} {payload_len} B, page_to_skb path {r0.path}, head {r0.skb.head_kind}"
    off = gro.flow_params(l4=l4, kernel=kernel, arch=arch).offset
    return fill_from_trace(trace, nr, offset=off, key=f"{kernel}/{r0.path}", label=label, kernel=kernel,
                           arch=arch, head_kind=r0.skb.head_kind)


@public
def head_case_fills(*, payload_len: int = 1448, arch: str | Arch = DEFAULT_ARCH) -> list[GroFill]:
    """The four head kinds of :data:`FILL_ROWS` for a TCP flow (18 / 17 / 9 / 1 packets in the first sk_buff)."""
    return [gro_fill(shape, kernel=k, payload_len=payload_len, arch=arch, label=label)
            for shape, k, label in FILL_ROWS]


# --------------------------------------------------------------------------------------------------
# draw_gro_fill

_HEAD_W = 3.4  # slot units for the linear part
_CHAIN_SHOWN = 5  # frag_list members drawn before "+N more"
_CHAIN_W = 2.5  # slot units per frag_list member
_ROW_IN = (0.42, 0.5)  # (row title, slots) in inches


def _draw_row(ax: Axes, f: GroFill) -> None:
    """One flow's first GRO skb: regions and arrows added without data-limit updates (the caller sets them)."""
    key = f.key
    first = f.sk_buffs[0]
    # the linear part of the first sk_buff
    hp = first.head_packet
    hl = f.skb.headlen
    fast_region(ax, f"{key}:linear", 0, 0, _HEAD_W, 1, color=packet_color(hp) if hp is not None else COLORS["linear"],
                label=f"linear {hl} B\nhdrs + p{hp}" if hp is not None else f"linear {hl} B\nheaders only",
                fontsize=_SMALL)
    x0 = _HEAD_W + 0.3
    slots = first.slot_packets
    for i in range(f.max_skb_frags):
        if i < len(slots):
            p = slots[i]
            fast_region(ax, f"{key}:frags[{i}]", x0 + i, 0, 1, 1, color=packet_color(p))
            if i == 0 or slots[i - 1] != p:
                # one label per packet, in its first slot: a packet's run of slots is one colour
                ax.text(x0 + i + 0.5, 0.5, f"p{p}", ha="center", va="center", fontsize=_SMALL,
                        gid=f"{key}:frags[{i}]:label")
        else:
            fast_region(ax, f"{key}:free_slot[{i}]", x0 + i, 0, 1, 1, color="white")
    end = x0 + f.max_skb_frags
    if len(slots) < f.max_skb_frags:
        ax.text((x0 + len(slots) + end) / 2, 0.5, f"{f.max_skb_frags - len(slots)} free", fontsize=_SMALL,
                ha="center", va="center", color="#444444", bbox=dict(facecolor="white", edgecolor="none", pad=1.0))
    # the frag_list chain
    members = f.sk_buffs[1:]
    cx = end + 0.9
    w = _CHAIN_W
    if members:
        ax.add_artist(FancyArrowPatch((end + 0.05, 0.5), (cx, 0.5), arrowstyle="-|>", mutation_scale=8,
                                      linewidth=0.8))
    for j, m in enumerate(members[:_CHAIN_SHOWN]):
        ps = m.packets
        text = f"p{ps[0]}" if len(ps) == 1 else f"p{ps[0]}–{ps[-1]}"
        frags = len(m.slot_packets)
        fast_region(ax, f"{key}:frag_list[{j}]", cx, 0.1, w, 0.8, color=packet_color(ps[0]),
                    label=f"{text}\n" + (f"{frags} frag{'' if frags == 1 else 's'}" if frags else "linear"),
                    fontsize=_SMALL)
        if j + 1 < min(len(members), _CHAIN_SHOWN):
            ax.add_artist(FancyArrowPatch((cx + w, 0.5), (cx + w + 0.35, 0.5), arrowstyle="-|>", mutation_scale=6,
                                          linewidth=0.6))
        cx += w + 0.35
    if len(members) > _CHAIN_SHOWN:
        ax.text(cx, 0.5, f"… +{len(members) - _CHAIN_SHOWN}", fontsize=_SMALL, va="center", ha="left")
    s = f.skb
    title = (f"kernel {f.kernel}, {f.arch}: {f.first_skb_packets} packet{'' if f.first_skb_packets == 1 else 's'} "
             f"in the first sk_buff (nr_frags {s.nr_frags}/{f.max_skb_frags}), {f.frag_list_len} on frag_list, "
             f"gso_segs {f.packets}")
    per = f.trace.packets_per_skb()
    if len(per) > 1:
        title += f"; GRO skb 1 of {len(per)} from {sum(per)} packets"
    ax.set_title(title + (f"\n{f.label}" if f.label else ""), fontsize=_SMALL, loc="left", y=1.0, pad=2,
                 linespacing=1.3)


GRO_FILL_KEY = ("GRO (net/core/gro.c skb_gro_receive): linear part | skb_shinfo(skb)->frags[0..MAX_SKB_FRAGS-1] "
                "coloured by packet pN | → frag_list sk_buffs")


@public
def draw_gro_fill(fills: Sequence[GroFill] | GroFill, *, fig: Figure | None = None, key: bool = True) -> Figure:
    """The first GRO skb of each flow: linear part, frags[] slots coloured by packet (pN = N-th packet of
    the flow), then the frag_list chain; to scale in slots, not bytes. ``key``: :data:`GRO_FILL_KEY` as the
    figure's title (the GRO panel has it in its text instead)."""
    if isinstance(fills, GroFill):
        fills = [fills]
    if not fills:
        raise ArgumentError("fills must not be empty", param="fills")
    n = len(fills)
    top = 0.32 if key else 0.0
    rows = [_ROW_IN] * n
    height = top + sum(g + h for g, h in rows) + 0.08
    fig, axes = reuse_axes(fig, ("gro_fill", n, key), FIG_WIDTH, height,
                           lambda f: axes_column(f, rows, top=top, left=0.008, right=0.992))
    width = _HEAD_W + 0.3 + max(f.max_skb_frags for f in fills) + 0.9 + _CHAIN_SHOWN * (_CHAIN_W + 0.35) + 1.8
    for ax, f in zip(axes, fills):
        ax.set_axis_off()
        _draw_row(ax, f)
        ax.set_xlim(-0.05, width)
        ax.set_ylim(-0.02, 1.02)
    if key:
        fig.suptitle(GRO_FILL_KEY, fontsize=_SMALL + 0.5, x=0.008, ha="left", y=1 - 0.06 / height, va="top")
    return fig


# --------------------------------------------------------------------------------------------------
# draw_packets_per_skb

@dataclass
class PerSkbPoint:
    kernel: str | Kernel
    payload_len: int
    packets_per_skb: float  # median gso_segs of the GRO skbs handed up (the flow's last one left out)
    first_skb_packets: float  # median packets in the first sk_buff
    sk_buffs_per_skb: float
    path: str  # the dominant page_to_skb path


@public
def packets_per_skb(kernels: Sequence[str] = ("5.10", "5.11", "5.12", DEFAULT_KERNEL),
                    payloads: Sequence[int] = (100, 400, 1000, 1472), *, l4: str = "udp",
                    arch: str | Arch = DEFAULT_ARCH,
                    n_packets: int = 1024, udp_gro: bool | None = None, napi_budget: int | None = None,
                    **stream_kw: Any) -> list[PerSkbPoint]:
    """simulate_stream() per kernel and payload: mean packets per GRO skb, and how many sit in the first sk_buff.

    Defaults: UDP to a UDP_GRO socket (so GRO aggregates), one NAPI poll (napi_budget None) so that only
    GRO's own limits (UDP_GRO_CNT_MAX 64, the 64 KiB size cap, MAX_SKB_FRAGS) end a GRO skb."""
    if udp_gro is None:
        udp_gro = l4 == "udp"
    out = []
    for k in kernels:
        for p in payloads:
            st = gro.simulate_stream(n_packets, p, l4=l4, kernel=k, arch=arch, udp_gro=udp_gro,
                                     napi_budget=napi_budget, **stream_kw)
            path = max(st.path_counts, key=st.path_counts.get)
            # the flow's last GRO skb is cut short by the end of the flow: leave it out, take medians
            sl = slice(0, max(1, st.gro_skbs - 1))
            out.append(PerSkbPoint(k, int(p), float(np.median(st.segs_per_skb[sl])),
                                   float(np.median(st.first_skb_packets[sl])),
                                   float(np.median(st.sk_buffs_per_skb[sl])), path))
    return out


@public
def draw_packets_per_skb(points: Sequence[PerSkbPoint] | None = None, *, fig: Figure | None = None,
                         l4: str = "udp", title: str = "") -> Figure:
    """Grouped bars: for each payload size, one bar per kernel = packets per GRO skb; the solid lower part is
    the packets in the first sk_buff (linear + frags[]), the hatched upper part those on frag_list."""
    points = list(points) if points is not None else packets_per_skb(l4=l4)
    if not points:
        raise ArgumentError("points must not be empty", param="points")
    kernels = list(dict.fromkeys(p.kernel for p in points))
    payloads = list(dict.fromkeys(p.payload_len for p in points))
    fig = target_figure(fig, FIG_WIDTH, 3.6)
    (ax,) = axes_column(fig, [(0.0, 2.75)], top=0.35, left=0.075, right=0.765)
    bw = 0.8 / len(kernels)
    for ki, k in enumerate(kernels):
        c = CATEGORY_COLORS[ki % len(CATEGORY_COLORS)]
        for xi, pl in enumerate(payloads):
            pt = next(p for p in points if p.kernel == k and p.payload_len == pl)
            x = xi + (ki - (len(kernels) - 1) / 2) * bw - bw / 2
            region(ax, f"{k}/{pl}:first_skb", x, 0, bw * 0.95, pt.first_skb_packets, color=c, fast=True)
            chained = region(ax, f"{k}/{pl}:frag_list", x, pt.first_skb_packets, bw * 0.95,
                             pt.packets_per_skb - pt.first_skb_packets, color="white", hatch="////", fast=True)
            chained.set_edgecolor(c)
            ax.text(x + bw * 0.475, pt.packets_per_skb + 0.5, f"{pt.packets_per_skb:.0f}", ha="center",
                    va="bottom", fontsize=_SMALL)
            if pt.packets_per_skb - pt.first_skb_packets >= 6:  # the split, where it is not the top
                ax.text(x + bw * 0.475, pt.first_skb_packets + 0.5, f"{pt.first_skb_packets:.0f}", ha="center",
                        va="bottom", fontsize=_SMALL, weight="bold",
                        bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
    ax.set_xticks(range(len(payloads)), [f"{p} B" for p in payloads])
    ax.set_xlim(-0.6, len(payloads) - 0.4)
    top = max(p.packets_per_skb for p in points)
    ax.set_ylim(0, top * 1.12 + 1)
    ax.set_xlabel(f"{l4.upper()} payload per packet (bytes)", labelpad=1)
    ax.set_ylabel("packets per GRO skb", labelpad=1)
    handles = [Rectangle((0, 0), 1, 1, facecolor=CATEGORY_COLORS[i % len(CATEGORY_COLORS)], edgecolor="black",
                         linewidth=0.6, label=f"kernel {k}") for i, k in enumerate(kernels)]
    handles.append(Rectangle((0, 0), 1, 1, facecolor="#bbbbbb", edgecolor="black", linewidth=0.6,
                             label="solid: in the first sk_buff\n(linear + frags[]); bold\nnumber: its packets"))
    handles.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="////", linewidth=0.6,
                             label="hatched: on frag_list\n(further sk_buffs); top\nnumber: gso_segs (median)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=_SMALL, frameon=False)
    ax.set_title(title or f"Packets per GRO skb against payload size ({l4.upper()}"
                 + (" to a UDP_GRO socket" if l4 == "udp" else "") + ", virtio-net mergeable buffers, one NAPI poll)",
                 fontsize=FONT["label"], loc="left", y=1.0)
    return fig
