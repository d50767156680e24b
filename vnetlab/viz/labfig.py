"""The lab's measurements beside the model, as figures: both seeds before and after (vnetlab.labdata).

- :func:`draw_rx_measured`: page_to_skb()'s path per UDP payload on lab kernels, the model's path as a band and
  every measured packet as a mark above it (seed 1 before/after on one base: ``6.1-no-build-skb`` and
  ``6.1-plain``; or the stock kernels 5.10.223, 6.1, 6.12).
- :func:`draw_seed1_rate`: seed 1's gain as after/before ratios, each marked as measured (hardware or TCG),
  fitted or predicted.
- :func:`draw_nat_delivery`: seed 2's mechanism in the lab: the share of datagrams that arrive intact after a NAT
  router with fraglist GRO, per lab kernel, measured beside the model's prediction.
- :func:`draw_results`: seed 1's ratios and seed 2's delivery on one screen (notebook 00).
- :func:`profile_table`: which kernel profile a measured kernel matches, field by field (mainline v5.10 against
  Debian's 5.10.223, 6.18 against Debian's 6.12).

Data helpers (:func:`rx_bands`, :func:`seed1_ratios`, :func:`nat_delivery`) are plain functions, tested without a
figure. Every number comes from vnetlab.labdata (data/lab/) or vnetlab.cost, never typed in here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from vnetlab import labdata, labkernels, rx
from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.viz.style import (
    COLORS,
    FIG_WIDTH,
    FONT,
    OKABE_ITO,
    PATH_COLORS,
    PATH_HATCHES,
    RC,
    axes_column,
    bare_axes,
    path_region,
    target_figure,
)

__all__ = ["RxBand", "RxMark", "rx_bands", "rx_marks", "draw_rx_measured", "Ratio", "RATIO_KINDS", "seed1_ratios",
           "draw_seed1_rate", "Delivery", "nat_delivery", "draw_nat_delivery", "draw_results",
           "SEED1_PAIR", "STOCK_KERNELS", "RETURNED_FIELDS", "profile_check", "profile_table",
           "SEVEN_X_TOPICS", "seven_x_note"]

#: seed 1 before/after on one base: Debian's 6.1 source and the lab config, page_to_skb's build_skb branch the
#: only difference (lab/patches/6.1-no-build-skb.patch)
SEED1_PAIR = ("6.1-no-build-skb", "6.1-plain")
#: Debian's own kernel images the lab booted and measured (the stock kernels of vnetlab.labkernels with data)
STOCK_KERNELS = tuple(k for k in labdata.lab_kernels() if k in labkernels.stock_ids())
MRG_HDR_LEN = 12  # sizeof(struct virtio_net_hdr_mrg_rxbuf): the lab's NICs negotiate MRG_RXBUF / VERSION_1

# How a number was obtained, with the colour and hatch that mark it in every figure here.
RATIO_KINDS = {
    "measured, hardware": (COLORS["measured"], ""),
    "measured, TCG": ("#aaaaaa", ".."),
    "fitted": (OKABE_ITO["sky_blue"], "//"),
    "predicted": (COLORS["model"], ""),
}


# --------------------------------------------------------------------------------------------------
# Receive path: measured packets over the model's path bands

@dataclass(frozen=True)
class RxBand:
    """A run of UDP payloads that the model sends down one page_to_skb() path, with the skb it builds."""

    lo: int  # first payload (bytes)
    hi: int  # last payload (bytes)
    path: str
    truesize: int
    nr_frags: int


@dataclass(frozen=True)
class RxMark:
    """One measured packet (first of its size in a ``buf_len`` buffer), with the model's answer for it."""

    payload: int
    path: str  # measured
    truesize: int
    nr_frags: int
    agrees: bool  # path, truesize and nr_frags all as modelled


def _max_payload(buf_len: int) -> int:
    # one buffer holds the frame (MTU 1500 at most: 1472 bytes of UDP payload) behind the vnet header
    return max(0, min(1472, buf_len - MRG_HDR_LEN - rx.frame_len_for(0)))


@public
def rx_bands(kernel: str, buf_len: int = 1536) -> list[RxBand]:
    """The model's path for every UDP/IPv4 payload that fits one ``buf_len`` mergeable buffer on lab kernel
    ``kernel`` (its profile with its patch's rules: labdata.model_kernel), as runs of equal outcome."""
    k = labdata.model_kernel(kernel)
    bands: list[RxBand] = []
    for payload in range(0, _max_payload(buf_len) + 1):
        r = rx.page_to_skb(rx.frame_len_for(payload), buf_len, mode="mergeable", hdr_len=MRG_HDR_LEN, kernel=k)
        key = (r.path, r.skb.truesize, r.skb.nr_frags)
        if bands and (bands[-1].path, bands[-1].truesize, bands[-1].nr_frags) == key:
            bands[-1] = RxBand(bands[-1].lo, payload, *key)
        else:
            bands.append(RxBand(payload, payload, *key))
    return bands


@public
def rx_marks(kernel: str, name: str = "mergeable", buf_len: int = 1536) -> list[RxMark]:
    """The lab's measured packets on ``kernel`` that landed in a ``buf_len`` buffer, one per payload size."""
    seen: dict[int, RxMark] = {}
    for r in labdata.rx_rows(name, kernel):
        if r.buf_truesize == buf_len and r.payload not in seen:
            seen[r.payload] = RxMark(r.payload, r.real_path, r.real_truesize, r.real_nr_frags, r.agrees)
    return [seen[p] for p in sorted(seen)]


def _rx_row(ax: Axes, kernel: str, bands: Sequence[RxBand], marks: Sequence[RxMark], xmax: int,
            title: str) -> None:
    bare_axes(ax)
    for i, b in enumerate(bands):
        width = b.hi - b.lo + 1
        label = f"{b.path}\nts {b.truesize}, {b.nr_frags} frag{'s' if b.nr_frags != 1 else ''}"
        path_region(ax, f"{kernel}:model{i}", b.path, b.lo, 0.0, width, 1.0,
                    label=label if width >= 0.09 * xmax else None)
    for m in marks:
        ax.plot([m.payload], [1.55], marker="o" if m.agrees else "X", markersize=7 if m.agrees else 9,
                markerfacecolor=PATH_COLORS[m.path], markeredgecolor="black", markeredgewidth=0.7, linestyle="none",
                gid=f"{kernel}:measured:{m.payload}")
    ax.text(-0.01 * xmax, 0.5, "MODEL", ha="right", va="center", fontsize=FONT["small"])
    ax.text(-0.01 * xmax, 1.55, "MEASURED", ha="right", va="center", fontsize=FONT["small"])
    ax.set_xlim(0, xmax * 1.02)
    ax.set_ylim(-0.05, 2.0)
    agree = sum(m.agrees for m in marks)
    ax.set_title(f"{title}: {agree}/{len(marks)} sizes as modelled", loc="left", fontsize=FONT["label"])


_ROLE = {"6.1-no-build-skb": "before: Debian's 6.1 source without the build_skb branch",
         "6.1-plain": "after: the same source and config, unpatched",
         "5.10": "Debian 5.10.223, bullseye", "6.1": "Debian 6.1.192, bookworm",
         "6.12": "Debian 6.12.95, bookworm-backports", "7.2.12": "Debian 7.2.12, forky",
         "7.3.4": "Debian 7.3.4, trixie-backports"}


def _kernel_title(kernel: str) -> str:
    lk = labkernels.lab_kernel(kernel)
    return f"{kernel} ({_ROLE.get(kernel, lk.description)}), profile {lk.model}"


@public
def draw_rx_measured(kernels: Sequence[str] = SEED1_PAIR, *, name: str = "mergeable", buf_len: int = 1536,
                     fig: Figure | None = None) -> Figure:
    """page_to_skb()'s path per UDP payload in one ``buf_len`` mergeable buffer: for each lab kernel the model's
    path band (truesize, frags) and, above it, each measured packet (circle: path, truesize and nr_frags as
    modelled; cross: not)."""
    if not kernels:
        raise ArgumentError("kernels must name at least one lab kernel (labdata.lab_kernels())", param="kernels")
    for k in kernels:
        if name not in labdata.configs(k):
            raise ValueError(f"kernel={k!r} has no {name!r} measurement; it has {', '.join(labdata.configs(k))}")
    with rc_context(RC):
        xmax = _max_payload(buf_len)
        row_h, gap = 0.95, 0.3
        height = 0.3 + len(kernels) * (row_h + gap) + 0.72
        fig = target_figure(fig, FIG_WIDTH, height)
        axes = axes_column(fig, [(gap, row_h)] * len(kernels), left=0.105, right=0.985, top=0.3)
        for ax, k in zip(axes, kernels):
            _rx_row(ax, k, rx_bands(k, buf_len), rx_marks(k, name, buf_len), xmax, _kernel_title(k))
            ax.tick_params(labelbottom=False)
        axes[-1].tick_params(labelbottom=True)
        axes[-1].set_xlabel("UDP payload (bytes)")
        fig.suptitle(f"page_to_skb() in a {buf_len} B mergeable buffer: measured in QEMU (kprobes, data/lab/) beside "
                     "the model (vnetlab.rx)", x=0.01, ha="left", y=1 - 0.12 / height, fontsize=FONT["title"])
        handles = [Rectangle((0, 0), 1, 1, facecolor=PATH_COLORS[p], hatch=PATH_HATCHES[p] or None, edgecolor="black",
                             linewidth=0.6, label=p) for p in PATH_COLORS]
        handles += [Line2D([], [], marker="o", linestyle="none", markerfacecolor="white", markeredgecolor="black",
                           label="measured = model"),
                    Line2D([], [], marker="X", linestyle="none", markerfacecolor="white", markeredgecolor="black",
                           markersize=8, label="measured ≠ model")]
        fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.1, 0.0), ncol=5, frameon=False,
                   fontsize=FONT["small"])
    return fig


# --------------------------------------------------------------------------------------------------
# Seed 1's rate: after/before ratios, by how they were obtained

@dataclass(frozen=True)
class Ratio:
    """One after/before ratio of seed 1's gain (> 1: build_skb is better)."""

    label: str
    value: float
    kind: str  # a key of RATIO_KINDS
    source: str


def seed1_ratios() -> list[Ratio]:
    """Seed 1's gain every way the workbook knows it: the seed's hardware measurement, the lab's TCG
    measurements of the 6.1 pair, and vnetlab.cost's ratios (fitted where a fit reproduces the seed by
    construction, predicted otherwise)."""
    from vnetlab import cost

    m = cost.seed_measurement()
    cal = cost.calibrate()
    b2, p2 = cal.predicted_pps(cal.two_param)
    b1, p1 = cal.predicted_pps(cal.one_param)
    model = labdata.model_rate_ratio()
    rows = {(r.kernel, r.config): r for r in labdata.rate_rows(SEED1_PAIR)}
    before, after = SEED1_PAIR
    out = [Ratio("seed: rx packets/s, hardware (net-next → + fb32856b16ad)", m.patched_pps / m.baseline_pps,
                 "measured, hardware", "fb32856b16ad commit message: 956,864 -> 1,158,465 rxpck/s")]
    ib, ia = rows.get((before, "insn")), rows.get((after, "insn"))
    if ib and ia and ib.insn_per_packet and ia.insn_per_packet:
        out.append(Ratio("lab: instructions per packet, before / after (TCG)", ib.insn_per_packet / ia.insn_per_packet,
                         "measured, TCG", "data/lab/6.1-*/insn.json: median guest instructions per received packet"))
    rb, ra = rows.get((before, "rate")), rows.get((after, "rate"))
    if rb and ra:
        out.append(Ratio("lab: rx packets/s under TCG, after / before", ra.rx_pps / rb.rx_pps, "measured, TCG",
                         "data/lab/6.1-*/rate.json: median rx packets/s, emulated"))
    out += [
        Ratio("model, 2-parameter fit: 5.13 / 5.11 rules (the seed's pair)", p2 / b2, "fitted",
              "vnetlab.cost.calibrate().two_param: 2 costs fitted to the seed's 2 rates, exact by construction"),
        Ratio("model, 1-parameter fit (baseline only): 5.13 / 5.11", p1 / b1, "predicted",
              "vnetlab.cost.calibrate().one_param: the patched rate is held out"),
        Ratio("model: 5.13 / 5.12 rules (ETH_HLEN-copy baseline)", model["5.13 / 5.12"], "predicted",
              "labdata.model_rate_ratio(), 2-parameter costs"),
        Ratio("model: 6.1 / 6.1-no-build-skb (the lab's pair)", model["6.1 / 6.1-no-build-skb"], "predicted",
              "labdata.model_rate_ratio(), 2-parameter costs"),
    ]
    return out


def _ratio_bars(ax: Axes, ratios: Sequence[Ratio], *, seed: float | None = None) -> None:
    n = len(ratios)
    for i, r in enumerate(ratios):
        y = n - 1 - i
        color, hatch = RATIO_KINDS[r.kind]
        ax.barh(y, r.value - 1, left=1, height=0.62, color=color, hatch=hatch or None, edgecolor="black",
                linewidth=0.6, gid=f"ratio:{i}")
        ax.text(r.value + 0.004, y, f"×{r.value:.3f}", va="center", ha="left", fontsize=FONT["small"])
        ax.text(-0.01, y, r.label, va="center", ha="right", fontsize=FONT["small"], transform=ax.get_yaxis_transform())
    if seed is not None:
        ax.axvline(seed, color="black", linestyle=":", linewidth=1.0)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(1.0, max(r.value for r in ratios) * 1.045)


def _kind_legend(fig: Figure, kinds: Sequence[str], anchor: tuple[float, float], ncol: int) -> None:
    handles = [Rectangle((0, 0), 1, 1, facecolor=RATIO_KINDS[k][0], hatch=RATIO_KINDS[k][1] or None,
                         edgecolor="black", linewidth=0.6, label=k.upper()) for k in kinds]
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=anchor, ncol=ncol, frameon=False,
               fontsize=FONT["small"])


def _seed(ratios: Sequence[Ratio]) -> float | None:
    return next((r.value for r in ratios if r.kind == "measured, hardware"), None)


@public
def draw_seed1_rate(ratios: Sequence[Ratio] | None = None, *, fig: Figure | None = None) -> Figure:
    """Seed 1's gain as after/before ratios (×1 = no gain), each bar marked by how it was obtained; the dotted
    line is the seed's hardware measurement."""
    ratios = list(seed1_ratios() if ratios is None else ratios)
    if not ratios:
        raise ArgumentError("ratios must not be empty", param="ratios")
    with rc_context(RC):
        bars_h = 0.34 * len(ratios)
        height = 0.45 + bars_h + 0.75
        fig = target_figure(fig, FIG_WIDTH, height)
        ax = fig.add_axes((0.5, 0.75 / height, 0.46, bars_h / height))
        _ratio_bars(ax, ratios, seed=_seed(ratios))
        ax.set_xlabel("after / before (build_skb over the copy path); dotted: the seed", fontsize=FONT["small"])
        fig.suptitle("Seed 1 (fb32856b16ad): how much better is build_skb? Measured, fitted and predicted",
                     x=0.01, ha="left", y=1 - 0.1 / height, fontsize=FONT["title"])
        _kind_legend(fig, [k for k in RATIO_KINDS if any(r.kind == k for r in ratios)], (0.01, 0.0), 4)
    return fig


# --------------------------------------------------------------------------------------------------
# Seed 2: datagrams intact after the NAT router

@dataclass(frozen=True)
class Delivery:
    """One router case on one lab kernel: the share of forwarded datagrams that arrived intact."""

    kernel: str
    case: str
    nat_fix: bool  # the kernel has c3df39ac9b0e (3d6df63a5cbe in 5.10.15)
    gso_software_patch: bool  # the kernel has 2e4ef10f5850
    forwarded: int
    intact: int
    predicted_intact: int  # the model, for the GRO skbs the router really built
    gro_skbs: int
    packets_per_gro_skb: int  # N for full GRO skbs (the prediction made before the run)

    @property
    def measured(self) -> float:
        return self.intact / self.forwarded if self.forwarded else float("nan")

    @property
    def predicted(self) -> float:
        return self.predicted_intact / self.forwarded if self.forwarded else float("nan")


@public
def nat_delivery(kernels: Sequence[str] | None = None, cases: Sequence[str] = ("vlan_virtio", "vlan_veth")
                 ) -> list[Delivery]:
    """labdata.router_rows() for the fraglist-GRO cases: kernels with the NAT fix first, then those without."""
    out = []
    for r in labdata.router_rows(kernels):
        if r.case not in cases:
            continue
        fix = bool(labdata.rule(r.kernel, "udp_gso_list_nat_fix"))
        patched = labdata.model_kernel(r.kernel) >= "5.11"  # 2e4ef10f5850 is in 5.11 (and in the lab builds so named)
        out.append(Delivery(r.kernel, r.case, fix, patched, r.forwarded, r.intact, r.predicted_intact,
                            r.gro_skbs, r.packets_per_gro_skb))
    return sorted(out, key=lambda d: (not d.nat_fix, labdata.lab_kernels().index(d.kernel), cases.index(d.case)))


_SHORT = {"5.10": "5.10.223\nDebian", "6.1": "6.1\nDebian", "6.12": "6.12\nDebian", "5.10-plain": "5.10\nbuilt",
          "5.10-2e4ef10f5850": "5.10 built\n+2e4ef10f5850", "5.10-revert-3d6df63a5cbe": "5.10 built\n− NAT fix",
          "5.10-2e4ef10f5850-revert-3d6df63a5cbe": "+2e4ef10f5850\n− NAT fix"}
#: the two fraglist-GRO router cases: the seed's wire (a VLAN on the virtio NIC) and a VLAN on a veth
CASE_STYLE = {"vlan_virtio": ("", "VLAN on virtio_net (eth2.10)"), "vlan_veth": ("//", "VLAN on veth (vl0.10)")}
SEED2_RATIO = 20e6 / 1e9  # the seed's 20 Mbps baseline over its 1 Gbps: 2e4ef10f5850's commit message


def _delivery_bars(ax: Axes, rows: Sequence[Delivery], *, seed_ratio: float | None) -> None:
    kernels = list(dict.fromkeys(d.kernel for d in rows))
    cases = [c for c in CASE_STYLE if any(d.case == c for d in rows)] or list(dict.fromkeys(d.case for d in rows))
    width = 0.8 / max(1, len(cases))
    ax.set_yscale("log")
    for d in rows:
        x = kernels.index(d.kernel) - 0.4 + width * (cases.index(d.case) + 0.5)
        hatch = CASE_STYLE.get(d.case, ("", ""))[0]
        ax.bar(x, d.measured, width=width * 0.92, color=COLORS["measured"], hatch=hatch or None, edgecolor="white",
               linewidth=0.0, gid=f"delivery:{d.kernel}:{d.case}")
        ax.bar(x, d.measured, width=width * 0.92, fill=False, edgecolor="black", linewidth=0.6)
        ax.plot([x], [d.predicted], marker="D", markersize=6, markerfacecolor=COLORS["model"], markeredgecolor="white",
                markeredgewidth=0.8, linestyle="none", gid=f"delivery:{d.kernel}:{d.case}:model")
        if d.intact < d.forwarded:
            ax.text(x, d.measured * 1.12, f"{d.intact}", ha="center", va="bottom", fontsize=FONT["small"])
    n = max((d.packets_per_gro_skb for d in rows), default=44)
    ax.axhline(1 / n, color=COLORS["model"], linestyle="--", linewidth=1.0)
    box = dict(facecolor="white", edgecolor="none", pad=1.0, alpha=0.9)
    ax.text(-0.5, 1 / n * 1.1, f"model, full GRO skbs: 1/N = 1/{n}", color=COLORS["model"], ha="left",
            va="bottom", fontsize=FONT["small"], bbox=box)
    if seed_ratio is not None:
        ax.axhline(seed_ratio, color="black", linestyle=":", linewidth=1.0)
        ax.text(-0.5, seed_ratio * 0.9, f"seed: 20 Mbps / 1 Gbps = {seed_ratio:.2f}", ha="left", va="top",
                fontsize=FONT["small"], bbox=box)
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels([_SHORT.get(k, k) for k in kernels], fontsize=FONT["small"])
    ax.set_xlim(-0.55, len(kernels) - 0.45)
    ax.set_ylim(0.01, 2.6)
    ax.set_yticks([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1])
    ax.set_yticklabels(["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"])
    ax.minorticks_off()
    ax.set_ylabel("datagrams intact / forwarded", fontsize=FONT["small"])
    fixed = [i for i, k in enumerate(kernels) if any(d.nat_fix for d in rows if d.kernel == k)]
    ax.text(-0.5, 2.3, "with the NAT fix: every datagram intact", ha="left", va="top", fontsize=FONT["small"],
            style="italic")
    if len(fixed) < len(kernels):
        split = max(fixed, default=-1) + 0.5
        ax.axvline(split, color="#888888", linewidth=0.8)
        sent = max(d.forwarded for d in rows)
        ax.text(split + 0.05, 2.3, f"NAT fix reverted (intact of {sent})", ha="left", va="top",
                fontsize=FONT["small"], style="italic")


def _delivery_legend(fig: Figure, cases: Sequence[str], anchor: tuple[float, float]) -> None:
    handles = [Rectangle((0, 0), 1, 1, facecolor=COLORS["measured"], hatch=CASE_STYLE[c][0] or None,
                         edgecolor="black", linewidth=0.6, label=f"MEASURED, {CASE_STYLE[c][1]}") for c in cases
               if c in CASE_STYLE]
    handles.append(Line2D([], [], marker="D", linestyle="none", markerfacecolor=COLORS["model"],
                          markeredgecolor="white", label="MODEL for the GRO skbs the router built"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=anchor, ncol=3, frameon=False,
               fontsize=FONT["small"], handlelength=1.6, columnspacing=1.2)


@public
def draw_nat_delivery(rows: Sequence[Delivery] | None = None, *, fig: Figure | None = None) -> Figure:
    """Seed 2 in the lab: 1760 UDP datagrams of 1472 B through a NAT router with rx-gro-list and a VLAN, the
    share that arrived intact per lab kernel and case (bars, measured) and the model's prediction for the GRO
    skbs the router built (diamonds), against 1/N for full GRO skbs and the seed's 20 Mbps / 1 Gbps."""
    rows = list(nat_delivery() if rows is None else rows)
    if not rows:
        raise ValueError("no router measurement to draw (labdata.router_rows() is empty)")
    with rc_context(RC):
        height = 4.2
        fig = target_figure(fig, FIG_WIDTH, height)
        ax = fig.add_axes((0.075, 0.22, 0.91, 0.67))
        _delivery_bars(ax, rows, seed_ratio=SEED2_RATIO)
        fig.suptitle("Seed 2's mechanism in QEMU: NAT router, fraglist GRO, a VLAN; the share of datagrams that "
                     "arrive intact", x=0.01, ha="left", y=0.975, fontsize=FONT["title"])
        _delivery_legend(fig, list(dict.fromkeys(d.case for d in rows)), (0.07, 0.0))
    return fig


# --------------------------------------------------------------------------------------------------
# Both seeds on one screen

@public
def draw_results(*, fig: Figure | None = None) -> Figure:
    """Notebook 00's one screen: seed 1's gain (measured on hardware, in the lab under TCG, the model's fit and
    prediction) and seed 2's delivered share (the seed's 20 Mbps / 1 Gbps; the lab with and without the NAT fix;
    the model)."""
    ratios = [r for r in seed1_ratios() if not r.label.startswith(("lab: rx packets/s", "model, 1-parameter",
                                                                   "model: 5.13 / 5.12"))]
    rows = nat_delivery()
    with rc_context(RC):
        bars_h = 0.34 * len(ratios)
        low_h = 3.0
        height = 0.35 + bars_h + 0.95 + 0.35 + low_h + 1.05
        fig = target_figure(fig, FIG_WIDTH, height)
        y1 = height - 0.35 - bars_h
        ax1 = fig.add_axes((0.5, y1 / height, 0.46, bars_h / height))
        _ratio_bars(ax1, ratios, seed=_seed(ratios))
        fig.text(0.01, (height - 0.12) / height, "Seed 1 (build_skb in page_to_skb, v5.13): after / before",
                 ha="left", va="top", fontsize=FONT["title"], fontweight="bold")
        _kind_legend(fig, [k for k in RATIO_KINDS if any(r.kind == k for r in ratios)],
                     (0.01, (y1 - 0.62) / height), 4)
        y2 = 1.05
        fig.text(0.01, (y2 + low_h + 0.3) / height, "Seed 2 (GSO_SOFTWARE, v5.11): 20 Mbps from lost datagrams, "
                 "not slow segmentation (INFERRED)", ha="left", va="top", fontsize=FONT["title"], fontweight="bold")
        ax2 = fig.add_axes((0.075, y2 / height, 0.91, low_h / height))
        _delivery_bars(ax2, rows, seed_ratio=SEED2_RATIO)
        _delivery_legend(fig, list(dict.fromkeys(d.case for d in rows)), (0.07, 0.0))
    return fig


# --------------------------------------------------------------------------------------------------
# Which profile a measured kernel matches (mainline v5.10 versus Debian's 5.10.223)

#: the skb page_to_skb() returns (kretprobe), the fields a profile is checked on
RETURNED_FIELDS = ("len", "data_len", "truesize", "head_frag")


@public
def profile_check(kernel: str, profile: str, name: str = "mergeable") -> dict[str, tuple[int, int]]:
    """{field: (packets the profile gets right, packets)} for the skb page_to_skb() returned on lab kernel
    ``kernel`` (its kretprobe), each packet fed to vnetlab.rx.page_to_skb() with ``profile``'s rules and the
    buffer the real driver used (first buffer only)."""
    from vnetlab.profiles import kernel as profile_of

    k = profile_of(profile)
    doc = labdata.load(name, kernel)
    hl = labdata.hdr_len(doc)
    right = dict.fromkeys(RETURNED_FIELDS, 0)
    packets = doc["rx"]["packets"]
    for pkt in packets:
        p2s, ret = pkt["page_to_skb"], pkt["page_to_skb_ret"]
        r = rx.page_to_skb(p2s["len"] - hl, p2s["truesize"], mode="mergeable", hdr_len=hl,
                           headroom=p2s["headroom"], kernel=k)
        model = {"len": r.skb.len, "data_len": r.skb.data_len, "truesize": r.skb.truesize,
                 "head_frag": r.skb.head_frag}
        for f in RETURNED_FIELDS:
            right[f] += model[f] == (bool(ret[f]) if f == "head_frag" else ret[f])
    return {f: (right[f], len(packets)) for f in RETURNED_FIELDS}


@public
def profile_table(kernel: str = "5.10", profiles: Sequence[str] = ("5.10", "5.10.223"),
                  name: str = "mergeable") -> str:
    """Text: how many measured packets of ``kernel`` each profile gets right, field by field."""
    # the caption on its own line: the table stays within 100 columns (readable beside JupyterLab's file browser)
    lines = [f"page_to_skb's returned skb, lab kernel {kernel} ({name}): packets each profile gets right",
             f"{'profile':10} " + " ".join(f"{f:>11}" for f in RETURNED_FIELDS)]
    for p in profiles:
        check = profile_check(kernel, p, name)
        lines.append(f"{p:10} " + " ".join(f"{f'{a}/{n}':>11}" for a, n in check.values()))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# What 7.x changed in what notebooks 10-30 teach: a short paragraph, every number computed or read from data/lab/

_FULL_MTU_FRAME = 1514  # ETH_HLEN + ETH_DATA_LEN: a full 1500-byte IP packet


def _counts(values: Sequence[object]) -> str:
    """'35 x 1536, 35 x 2560': how often each value occurred, in order of the value."""
    c: dict[object, int] = {}
    for v in values:
        c[v] = c.get(v, 0) + 1
    return ", ".join(f"{n} x {v}" for v, n in sorted(c.items()))


def _alternation(lens: Sequence[int]) -> str:
    """'1536 / 2560': the repeating cycle of a carve (one page_pool page), or 'N x a + b' for a frag's carve."""
    if len(set(lens)) == 1:
        return str(lens[0])
    last = lens.index(max(lens))
    cycle = lens[:last + 1]
    return " / ".join(map(str, cycle)) if len(cycle) <= 3 else f"{len(cycle) - 1} x {cycle[0]} + {cycle[-1]}"


def _full_mtu_share(kernel: str, n: int = 84) -> tuple[int, int]:
    """(build_skb buffers, buffers) for full-MTU frames over n buffers carved at the EWMA floor."""
    lens = rx.mergeable_buf_lens(n, kernel=kernel)
    hits = sum(rx.page_to_skb(_FULL_MTU_FRAME, t, kernel=kernel).path == "build_skb" for t in lens)
    return hits, len(lens)


def _measured_full_mtu(kernel: str) -> tuple[int, int, str]:
    """(build_skb, full-MTU packets, buffer truesizes of the whole sweep) from data/lab/<kernel>/mergeable.json."""
    pkts = labdata.load("mergeable", kernel)["rx"]["packets"]
    full = [p for p in pkts if p["frame_len"] == _FULL_MTU_FRAME]
    return sum(p["path"] == "build_skb" for p in full), len(full), _buffer_counts(pkts)


def _buffer_counts(pkts: Sequence[dict]) -> str:
    """The truesizes of a lab run's mergeable buffers (page_to_skb's argument), counted: '35 x 1536, 35 x 2560'."""
    return _counts([p["page_to_skb"]["truesize"] for p in pkts if "page_to_skb" in p])


def _carving_model(kernel: str, before: str) -> str:
    new, old = rx.mergeable_buf_lens(8, kernel=kernel), rx.mergeable_buf_lens(42, kernel=before)
    head_new = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=kernel)
    head_old = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=before)
    return (f"From 7.x (model: {kernel}) mergeable buffers come from a page_pool of order-0 pages "
            f"(virtnet_create_page_pools, page_pool_alloc_va): {_alternation(new)} per 4 KiB page instead "
            f"of {before}'s {_alternation(old)} per 32 KiB frag; the copy path's head truesize is "
            f"{head_new.truesize} (was {head_old.truesize}: napi_alloc_skb's skbuff_small_head).")


def _carving_lab(kernel: str, lab: str) -> str:
    pkts = labdata.load("mergeable", kernel)["rx"]["packets"]
    copy_ts = _counts([p["page_to_skb_ret"]["truesize"] for p in pkts if p["path"] == "copy"])
    return f"Measured on {lab}: mergeable buffers {_buffer_counts(pkts)}; copied heads truesize {copy_ts}."


def _small_model(kernel: str, before: str) -> str:
    small_new, small_old = rx.small_buf_lens(4, kernel=kernel), rx.small_buf_lens(4, kernel=before)
    return (f"From 7.x (model: {kernel}) small-mode buffers come from the same order-0 page_pool: "
            f"add_recvbuf_small asks {rx.small_buf_len(kernel=kernel)} bytes, and the page's last fragment "
            f"gets the page's rest, so build_skb's frag_size alternates {_alternation(small_new)} "
            f"({before}: {_alternation(small_old)} every time).")


def _small_lab(kernel: str, lab: str) -> str:
    sizes = [p["build_skb_frag_size"] for p in labdata.load("small", kernel)["rx"]["packets"]
             if "build_skb_frag_size" in p]
    return f"Measured on {lab}: frag_size {_counts(sizes)}."


def _full_mtu_model(kernel: str, before: str) -> str:
    (hn, nn), (ho, no) = _full_mtu_share(kernel), _full_mtu_share(before)
    return (f"From 7.x the page_pool's second buffer of each page takes the page's rest, so a full-MTU frame "
            f"gets build_skb in {hn} of {nn} buffers on {kernel} ({hn / nn:.3f}), against {ho} of {no} "
            f"({ho / no:.3f}) on {before} (model, buffers at the EWMA floor).")


def _full_mtu_lab(kernel: str, lab: str) -> str:
    mh, mn, bufs = _measured_full_mtu(kernel)
    return f"Measured on {lab}: {mh} of {mn} full-MTU frames took build_skb; the sweep's buffers were {bufs}."


def _gro_model(kernel: str, before: str) -> str:
    from vnetlab import gro

    parts = []
    for k in (before, kernel):
        queue = gro.receive_flow(1448, 46, kernel=k)
        heads = [rx.head_case(s) for s in queue[:45]]
        first = gro.aggregate_trace(queue[:45], l4="tcp", kernel=k).packets_in_first_skb(0)
        # the same flow one packet later: it starts in the page's second buffer
        later = gro.aggregate_trace(queue[1:], l4="tcp", kernel=k).packets_in_first_skb(0)
        parts.append(f"{k}: {heads.count('build_skb')} build_skb and {heads.count('eth_hlen')} eth_hlen heads "
                     f"in 45 packets, {first} packets in the first sk_buff, {later} if the flow starts one "
                     "buffer later")
    big = max(rx.mergeable_buf_lens(2, kernel=kernel))
    return (f"From 7.x every second mergeable buffer is a {big}-byte page_pool fragment, so a real queue of "
            f"MSS-1448 TCP gives build_skb heads to half the packets; each still takes one frag slot, so "
            f"only a GRO skb whose first packet has one holds a packet more (model; {'; '.join(parts)}).")


def _gro_lab(kernel: str, lab: str) -> str:
    del lab  # no TCP GRO run: the UDP sweep of the same kernel stands in
    mh, mn, _ = _measured_full_mtu(kernel)
    return (f"The lab has no TCP GRO run on 7.x; its UDP sweep on {kernel} gave build_skb to {mh} of "
            f"{mn} full-MTU frames.")


# topic -> (the model's sentence for (kernel, before), the lab's sentence for (kernel, lab folder text))
_SEVEN_X = {"carving": (_carving_model, _carving_lab), "small": (_small_model, _small_lab),
            "full_mtu": (_full_mtu_model, _full_mtu_lab), "gro": (_gro_model, _gro_lab)}
#: the topics of :func:`seven_x_note`: notebook 10's carving and small mode, 20's full-MTU share, 30's GRO slots
SEVEN_X_TOPICS = tuple(_SEVEN_X)


@public
def seven_x_note(topic: str, *, kernel: str = "7.3.4", before: str = "6.18", width: int = 100) -> str:
    """A short paragraph: what ``kernel`` (a 7.x profile, default Debian 7.3.4) changed in ``topic`` against
    ``before`` (default 6.18), model beside the lab's measurement of that kernel where one exists.

    Topics: "carving" (notebook 10: virtio_net add_recvbuf_mergeable/add_recvbuf_small take buffers from an
    order-0 page_pool from 7.x, rule rx_page_pool; napi_alloc_skb's head from skbuff_small_head),
    "full_mtu" (notebook 20: the share of 1514-byte frames page_to_skb gives build_skb), "gro" (notebook 30:
    packets in the first sk_buff of a TCP GRO skb from a real receive queue)."""
    import textwrap

    if topic not in SEVEN_X_TOPICS:
        raise ArgumentError(f"topic must be one of {', '.join(SEVEN_X_TOPICS)} (notebooks 10, 20, 30); got {topic!r}",
                            param="topic")
    model, lab = _SEVEN_X[topic]
    text = model(kernel, before)
    if kernel in labdata.lab_kernels():
        text += " " + lab(kernel, f"Debian {kernel} in the QEMU lab (data/lab/{kernel}/)")
    return textwrap.fill(text, width)
