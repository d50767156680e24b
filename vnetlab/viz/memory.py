"""Memory drawings of virtio-net's receive path, to scale in bytes.

- :func:`draw_rx_buffer`: one receive buffer as page_to_skb() (or receive_small()) sees it, with the
  build_skb() tailroom test of drivers/net/virtio_net.c written out term by term under it.
- :func:`draw_skb`: the struct sk_buff that comes out: skb->head/data/tail/end, the linear part,
  struct skb_shared_info with frags[] pointing into their receive buffers, frag_list, and skb->truesize.
- :func:`draw_paths_side_by_side`: the same packet on an older kernel (copy) next to a newer one (build_skb).

Each figure has one drawing, used as is by the notebooks and by the widget panels (which pass ``fig`` to redraw
in place: the axes are made once and reused). Every labelled region is a patch whose gid is the kernel's name
for it (vnetlab.viz.style.region) and whose width is the size the model computed, so tests check sizes on the
figure, not on pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import ConnectionPatch, Rectangle

from vnetlab import rx
from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import IP_MAX_MTU
from vnetlab.profiles import Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import HEAD_KINDS, Skb
from vnetlab.viz.style import (
    COLORS,
    FAIL_COLOR,
    FIG_WIDTH,
    FONT,
    PASS_COLOR,
    axes_column,
    bare_axes,
    fast_region,
    reuse_axes,
)

__all__ = ["Span", "BufferLayout", "frame_parts", "rx_buffer_layout", "rx_buffer_caption", "draw_rx_buffer",
           "TruesizeParts", "truesize_parts", "skb_caption", "draw_skb", "draw_paths_side_by_side",
           "PASS_COLOR", "FAIL_COLOR"]

_L4_STRUCT = {"udp": "udphdr", "tcp": "tcphdr"}
_IP_STRUCT = {4: "iphdr", 6: "ipv6hdr"}


# --------------------------------------------------------------------------------------------------
# Layout of a receive buffer (plain data, tested without a figure)

@dataclass(frozen=True)
class Span:
    """One region of a drawing: gid (kernel name), start offset and size in bytes, label text."""

    gid: str
    start: int
    size: int
    label: str

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass
class BufferLayout:
    """Where each part of the first receive buffer lies, in bytes from the buffer start."""

    spans: list[Span]
    buffer_end: int  # the truesize page_to_skb computes its tailroom against
    tail: int  # end of the frame bytes in this buffer
    shinfo_start: int  # buffer_end - SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    shinfo_size: int
    frame_in_buffer: int
    tailroom: int  # buffer_end - tail, as page_to_skb counts it
    condition: list[tuple[str, bool | None]] = field(default_factory=list)  # (text, passed); None = information
    notes: list[str] = field(default_factory=list)
    page_size: int = 0
    page_label: str = ""
    buffer_offset: int = 0

    @public
    def span(self, gid: str) -> Span:
        for s in self.spans:
            if s.gid == gid:
                return s
        raise KeyError(gid)


@public
def frame_parts(frame_len: Annotated[int, In(0, IP_MAX_MTU + 64, "frame bytes")], *, l4: str = "udp", ip: int = 4,
                vlan: bool = False) -> list[tuple[str, int, str]]:
    """The frame split into (gid, bytes, kernel label): ethhdr, IP header, L4 header, payload.

    A frame shorter than its headers (page_to_skb called directly) is cut where it ends.
    """
    rx.frame_len_for(0, l4=l4, ip=ip, vlan=vlan)  # validates l4 and ip with the model's errors
    eth = rx.ETH_HLEN + (rx.VLAN_HLEN if vlan else 0)
    parts = [("eth", eth, "ethhdr" + (" + VLAN" if vlan else "")),
             ("ip", rx.IP_HLEN[ip], _IP_STRUCT[ip]),
             ("l4", rx.L4_HDR_LEN[l4], _L4_STRUCT[l4]),
             ("payload", 0, f"{l4.upper()} payload")]
    out, left = [], frame_len
    for gid, size, name in parts:
        take = left if gid == "payload" else min(size, left)
        out.append((gid, take, name))
        left -= take
    return out


@public
def rx_buffer_layout(result: rx.RxResult, *, l4: str = "udp", ip: int = 4, vlan: bool = False) -> BufferLayout:
    """The first receive buffer of ``result`` laid out in bytes (drivers/net/virtio_net.c page_to_skb)."""
    if not result.buffers:
        raise ArgumentError("result has no receive buffer to draw (RxResult.buffers is empty): draw the result of "
                            "rx.receive(), which records the buffers the driver posted", param="result")
    k = _kernel(result.kernel)
    a = _arch(result.arch, k)
    buf = result.buffers[0]
    mode, hdr_len, padded = result.mode, result.hdr_len, result.hdr_padded_len
    headroom = buf.headroom
    ptk_len = result.first_len
    end = result.buffer_end  # the buffer geometry as vnetlab.rx computes it, XDP room included
    data_start = headroom + padded
    frame_in_buffer = max(0, min(ptk_len, end - data_start))
    tail = data_start + frame_in_buffer
    shinfo = result.shinfo_size
    spans: list[Span] = []
    if mode == "small":
        hr_label = (f"VIRTNET_RX_PAD {a.net_ip_align + a.net_skb_pad} B"
                    + (f" + VIRTIO_XDP_HEADROOM {rx.VIRTIO_XDP_HEADROOM} B" if headroom > a.net_skb_pad + a.net_ip_align
                       else ""))
    elif headroom:
        hr_label = f"VIRTIO_XDP_HEADROOM {headroom} B"
    elif mode == "big":
        hr_label = "headroom 0 B"
    else:
        hr_label = "headroom 0 B"
    spans.append(Span("headroom", 0, headroom, hr_label))
    spans.append(Span("vnet_hdr", headroom, hdr_len,
                      f"{rx.VNET_HDR_STRUCTS[hdr_len].split(' (')[0].split(' / ')[0]} {hdr_len} B"))
    if padded > hdr_len:
        spans.append(Span("hdr_pad", headroom + hdr_len, padded - hdr_len,
                          f"padded_vnet_hdr pad {padded - hdr_len} B"))
    x = data_start
    left = frame_in_buffer
    for gid, size, name in frame_parts(result.frame_len, l4=l4, ip=ip, vlan=vlan):
        take = min(size, left)
        spans.append(Span(gid, x, take, f"{name} {take} B" + (f" (of {size})" if take < size else "")))
        x += take
        left -= take
    tailroom = end - tail
    # receive_small has no page_to_skb() test: name what skb_tailroom() (end - tail) returns, the shinfo apart
    tr_label = (f"tailroom {tailroom} B" if mode != "small" else
                f"{tailroom} B = skb_tailroom {end - shinfo - tail} + skb_shared_info {shinfo}")
    spans.append(Span("tailroom", tail, max(0, tailroom), tr_label))
    spans.append(Span("skb_shared_info", end - shinfo, shinfo,
                      f"struct skb_shared_info: SKB_DATA_ALIGN(sizeof) = {shinfo} B at end − {shinfo}"))

    cond: list[tuple[str, bool | None]] = []
    notes: list[str] = []
    truesize_name = "truesize"
    if mode == "mergeable" and headroom and k.rule("xdp_truesize") == "page_size":
        truesize_name = "truesize (= PAGE_SIZE, headroom ≠ 0)"
    if mode == "small":
        # include/linux/skbuff.h skb_tailroom(): skb->end - skb->tail; build_skb() puts end at buflen - shinfo
        cond.append((f"receive_small(): build_skb(buf, buflen {end}) always; struct skb_shared_info ({shinfo} B) "
                     f"at end = buflen − {shinfo} = {end - shinfo}", True))
        cond.append((f"skb_tailroom() = end − tail = {end - shinfo} − {tail} = {end - shinfo - tail} B "
                     "(skb_shared_info not included)", None))
    elif result.tailroom is None and result.path == "build_skb":
        cond.append(("XDP_PASS: build_skb_from_xdp_buff() builds around the whole XDP buffer (6.3+); "
                     "page_to_skb() is not called", True))
    elif result.tailroom is None:
        cond.append((f"kernel {k.version} page_to_skb() has no build_skb branch: always napi_alloc_skb(GOOD_COPY_LEN) "
                     f"and copy (the tailroom of {tailroom} B is not tested)", False))
    else:
        cond.append((f"page_to_skb(): tailroom = {truesize_name} − headroom − hdr_padded_len − len = "
                     f"{end} − {headroom} − {padded} − {ptk_len} = {result.tailroom} B", None))
        ok_align = a.net_ip_align == 0
        ok_len = ptk_len > rx.GOOD_COPY_LEN
        ok_room = result.tailroom >= shinfo
        cond.append((f"!NET_IP_ALIGN (= {a.net_ip_align} on {a.name})", ok_align))
        cond.append((f"len {ptk_len} > GOOD_COPY_LEN {rx.GOOD_COPY_LEN}", ok_len))
        cond.append((f"tailroom {result.tailroom} ≥ SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {shinfo}", ok_room))
    if mode == "mergeable" and len(result.buffers) > 1:
        notes.append(f"num_buffers {len(result.buffers)}: the frame continues in {len(result.buffers) - 1} more "
                     f"buffer(s) ({result.frame_len - frame_in_buffer} B), added as frags by receive_mergeable()")
    if mode == "big" and ptk_len > frame_in_buffer:
        notes.append(f"big mode: the frame continues over the page->private chain "
                     f"({ptk_len - frame_in_buffer} B in further pages)")
    if mode == "small":
        page_label = f"{buf.page.size // 1024} KiB rq page frag (add_recvbuf_small)"
    elif mode == "big":
        page_label = "first page of the big-mode chain (add_recvbuf_big)"
    else:
        page_label = f"{buf.page.size // 1024} KiB rq->alloc_frag page (add_recvbuf_mergeable)"
    return BufferLayout(spans, end, tail, end - shinfo, shinfo, frame_in_buffer, tailroom, cond, notes,
                        buf.page.size, page_label, buf.offset)


@public
def rx_buffer_caption(result: rx.RxResult, lay: BufferLayout) -> list[tuple[str, bool | None]]:
    """page_to_skb()'s build_skb test term by term in the kernel's names, then the verdict: (text, passed),
    passed None for information. The static figure prints it under the buffer; widget panels show it as HTML."""
    lines = [(text + ("" if ok is None else (" ✓" if ok else " ✗")), ok) for text, ok in lay.condition]
    built = result.path == "build_skb"
    lines.append((f"→ {result.path}" + ("()" if built else " (napi_alloc_skb(GOOD_COPY_LEN) + copy)"), built))
    return lines



# --------------------------------------------------------------------------------------------------
# Labels that fit their region, or a callout above / below it

_SMALL = FONT["small"]


def _char_w(fontsize: float) -> float:
    """Average DejaVu Sans advance per character, in points (digits and lower case: about 0.55-0.6 em)."""
    return fontsize * 0.6


def _text_fits(ax: Axes, width_bytes: float, xspan: float, text: str, fontsize: float, axes_frac: float) -> bool:
    fig_w_pt = ax.get_figure(root=True).get_figwidth() * 72
    width_pt = width_bytes / xspan * fig_w_pt * axes_frac
    longest = max(len(line) for line in text.split("\n"))
    return width_pt >= longest * _char_w(fontsize) + 4


class _Callouts:
    """Labels for regions too narrow to hold their text, set out left to right above (dy > 0) or below the
    bar with a leader to their region, so leaders never cross; a new level starts when a row is full.
    Texts and one LineCollection of leaders (annotations clip their arrows at every draw: several ms each)."""

    def __init__(self, ax: Axes, xspan: float, y_anchor: float, y0: float, dy: float, axes_frac: float,
                 fontsize: float = _SMALL, pointer: bool = False) -> None:
        self.ax, self.xspan, self.y_anchor, self.y0, self.dy = ax, xspan, y_anchor, y0, dy
        self.pointer = pointer  # a marker where the leader meets the bar (skb->head/data/tail/end)
        self.frac, self.fontsize = axes_frac, fontsize
        self.pending: list[tuple[float, str, str, str, tuple[float, float] | None]] = []
        self.n_levels = 0

    def add(self, gid: str, x_center: float, text: str, color: str = "black",
            region: tuple[float, float] | None = None) -> None:
        """``region`` (start, end): the label must span the region's centre, else it moves to a further level."""
        self.pending.append((x_center, gid, text, color, region))

    def _over_regions(self, row: list, los: list[float] | None) -> bool:
        """Every label of a placed row spans its own region's centre (where a region was given) with its text,
        not only with the margin its width estimate adds."""
        pad = 4 / (self.ax.get_figure(root=True).get_figwidth() * 72 * self.frac) * self.xspan
        return los is not None and all(r is None or lo + pad <= (r[0] + r[1]) / 2 <= lo + w - pad
                                       for (_x, w, _g, _t, _c, r), lo in zip(row, los))

    @staticmethod
    def _place(items: list, x_min: float, x_max: float) -> list[float] | None:
        """Left edges for label widths in x order: pushed right, then back left to fit; None if they cannot."""
        if sum(w for _, w, *_ in items) > x_max - x_min:
            return None
        los, prev = [], x_min
        for x_center, width, *_ in items:
            lo = max(x_center - width / 2, prev)
            los.append(lo)
            prev = lo + width
        nxt = x_max
        for i in range(len(items) - 1, -1, -1):
            los[i] = min(los[i], nxt - items[i][1])
            nxt = los[i]
        return los

    def flush(self) -> None:
        x_min, x_max = self.ax.get_xlim()
        fig_w_pt = self.ax.get_figure(root=True).get_figwidth() * 72
        items = []
        for x_center, gid, text, color, region in sorted(self.pending, key=lambda p: p[0]):
            width = (len(max(text.split("\n"), key=len)) * _char_w(self.fontsize) + 8) / (fig_w_pt * self.frac)
            items.append((x_center, width * self.xspan, gid, text, color, region))
        rows = [items]
        while True:
            placed = [self._place(row, x_min, x_max) for row in rows]
            if all(self._over_regions(r, p) for r, p in zip(rows, placed)) or len(rows) >= len(items):
                break
            n = len(rows) + 1
            rows = [items[i::n] for i in range(n)]
        segments, tips = [], []
        for level, (row, los) in enumerate(zip(rows, placed)):
            los = los or [x_min + i * (x_max - x_min) / max(1, len(row)) for i in range(len(row))]
            y = self.y0 + level * self.dy
            pad = 4 / (fig_w_pt * self.frac) * self.xspan
            for (x_center, width, gid, text, color, region), lo in zip(row, los):
                x, ha = lo + width / 2, "center"
                if region is not None:  # the text starts (or ends) at its box's edge nearer the region's centre
                    x, ha = ((min(lo + pad, x_center - pad / 2), "left") if x_center < lo + width / 2 else
                             (max(lo + width - pad, x_center + pad / 2), "right"))
                self.ax.text(x, y, text, ha=ha, va="bottom" if self.dy > 0 else "top",
                             fontsize=self.fontsize, color=color, gid=f"{gid}:label", clip_on=False)
                segments.append([(x_center, self.y_anchor), (lo + width / 2, y)])
                tips.append(x_center)
        if segments:
            self.ax.add_collection(LineCollection(segments, colors="#555555", linewidths=0.6), autolim=False)
            if self.pointer:
                self.ax.plot(tips, [self.y_anchor] * len(tips), linestyle="none", color="#555555", markersize=3.5,
                             marker="^" if self.dy < 0 else "v")
        self.n_levels = len(rows) if items else 0
        self.pending = []

    @property
    def extent(self) -> float:
        return self.y0 + self.n_levels * self.dy


def _labelled(ax: Axes, callouts: _Callouts, gid: str, x: float, y: float, w: float, h: float, text: str, *,
              color: str | None = None, hatch: str | None = None, fontsize: float = _SMALL,
              under_region: bool = False) -> Rectangle:
    """A region with its label inside when it fits, else as a callout; a zero-width region is drawn unlabelled.
    ``under_region``: the callout's text spans the region's centre (short leaders cannot point elsewhere)."""
    inside = w > 0 and _text_fits(ax, w, callouts.xspan, text, fontsize, callouts.frac)
    rect = fast_region(ax, gid, x, y, w, h, color=color, label=text if inside else None, fontsize=fontsize,
                       hatch=hatch)
    if not inside and w > 0:
        callouts.add(gid, x + w / 2, text, region=(x, x + w) if under_region else None)
    return rect


def _mtu(mtu: int | None) -> str:
    return "" if mtu is None else f"MTU {mtu}, "


def _verdict_color(ok: bool | None) -> str:
    return "black" if ok is None else (PASS_COLOR if ok else FAIL_COLOR)


# --------------------------------------------------------------------------------------------------
# draw_rx_buffer

_LINE_IN = 0.17  # one line of FONT["small"] text, in inches


@public
def draw_rx_buffer(result: rx.RxResult, *, l4: str = "udp", ip: int = 4, vlan: bool = False,
                   mtu: int | None = None, fig: Figure | None = None) -> Figure:
    """One receive buffer to scale, as drivers/net/virtio_net.c page_to_skb() tests it for build_skb().

    Depicts: the rq page frag the buffer was carved from (add_recvbuf_mergeable / add_recvbuf_small /
    add_recvbuf_big), the headroom (VIRTIO_XDP_HEADROOM or VIRTNET_RX_PAD), the virtio-net header
    (struct virtio_net_hdr_mrg_rxbuf, hdr_len; struct padded_vnet_hdr in big mode), the Ethernet frame split
    into struct ethhdr / iphdr / udphdr or tcphdr / payload, the tailroom, and where build_skb() puts
    struct skb_shared_info (end − SKB_DATA_ALIGN(sizeof(struct skb_shared_info))); under it page_to_skb()'s
    condition ``!NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= shinfo_size`` term by term.
    ``l4``/``ip``/``vlan`` say how to split the frame and ``mtu`` is named in the title (RxResult does not
    record them).
    """
    lay = rx_buffer_layout(result, l4=l4, ip=ip, vlan=vlan)
    caption = rx_buffer_caption(result, lay) + [(n, None) for n in lay.notes]
    rows = [(0.22, 0.16), (0.05, 1.85), (0.38, _LINE_IN * len(caption))]
    height = 0.38 + sum(g + h for g, h in rows) + 0.08
    fig, (ax_page, ax, ax_cond) = reuse_axes(fig, ("rx_buffer", len(caption)), FIG_WIDTH, height,
                                             lambda f: axes_column(f, rows, top=0.38, left=0.012, right=0.975))
    end = lay.buffer_end
    frac = 0.963
    built = result.path == "build_skb"
    fig.suptitle(f"Receive buffer: {result.mode} mode, {_mtu(mtu)}kernel {result.kernel}, {result.arch}, frame "
                 f"{result.frame_len} B → {result.path}", fontsize=FONT["title"], y=1 - 0.06 / height, va="top")

    # The page the buffer was carved from, to its own scale.
    ax_page.set_axis_off()
    ax_page.set_xlim(0, lay.page_size)
    ax_page.set_ylim(0, 1)
    fast_region(ax_page, "page", 0, 0, lay.page_size, 1, color=COLORS["page"])
    fast_region(ax_page, "buffer", lay.buffer_offset, 0, min(end, lay.page_size - lay.buffer_offset), 1,
                color=COLORS["frame"])
    ax_page.set_title(f"{lay.page_label}, {lay.page_size} B: this buffer at offset {lay.buffer_offset}–"
                      f"{lay.buffer_offset + end} B", fontsize=_SMALL, loc="left", pad=2)

    ax.set_xlim(-0.01 * end, end * 1.01)
    bare_axes(ax)
    ax.set_xticks([0, end])
    ax.tick_params(axis="x", pad=1.5)
    ax.set_xlabel("offset in the receive buffer (bytes)", fontsize=_SMALL, labelpad=1)
    callouts = _Callouts(ax, end * 1.02, 1.0, 1.45, 0.5, frac)
    for s in lay.spans:
        if s.gid == "skb_shared_info":
            continue
        color = COLORS["hole"] if s.gid == "hdr_pad" else COLORS.get(s.gid)
        _labelled(ax, callouts, s.gid, s.start, 0, s.size, 1, s.label, color=color,
                  hatch="//" if s.gid == "hdr_pad" else None)
    # Where skb_shared_info goes: its own row, so an overlap with the frame stays visible.
    sh = lay.span("skb_shared_info")
    fits = lay.shinfo_start >= lay.tail
    fast_region(ax, "skb_shared_info", sh.start, -1.25, sh.size, 0.8, hatch=None if built else "..")
    sh_text = f"struct skb_shared_info {sh.size} B" + ("" if built else " (where build_skb would put it)")
    text_w = len(sh_text) * _char_w(_SMALL) / (fig.get_figwidth() * 72 * frac) * end * 1.02
    # left of its row; left of the tail line too when that line would cross the text and there is room
    x_label = lay.tail if sh.start - text_w < lay.tail < sh.start and lay.tail > text_w else sh.start
    if x_label < text_w:  # no room on the left: under the row
        ax.text(end, -1.35, sh_text, ha="right", va="top", fontsize=_SMALL, gid="skb_shared_info:label")
    else:
        ax.text(x_label - 0.005 * end, -0.85, sh_text, ha="right", va="center", fontsize=_SMALL,
                gid="skb_shared_info:label")
    if not fits:
        ov = lay.tail - lay.shinfo_start
        ax.add_artist(Rectangle((lay.shinfo_start, -1.25), min(ov, sh.size), 0.8, facecolor="none",
                                edgecolor=FAIL_COLOR, hatch="xx", linewidth=0.8, gid="shinfo_overlap"))
    line_color = FAIL_COLOR if not fits else "#444444"
    ax.vlines([lay.tail, lay.shinfo_start], -1.3, 0.0, colors=line_color, linewidth=0.8, linestyles="--")
    # tail and end − shinfo under the bar, beside their dashed lines (left of them when there is room)
    lo, hi = sorted((lay.tail, lay.shinfo_start))
    if hi - lo < 0.3 * end:  # close together: one label
        marks = [(lo if lo > 0.35 * end else hi, f"tail {lay.tail}, end − shinfo {lay.shinfo_start}")]
    else:
        marks = [(lay.tail, f"tail {lay.tail}"), (lay.shinfo_start, f"end − shinfo {lay.shinfo_start}")]
    for xpos, text in marks:
        left = xpos > 0.35 * end and not (len(marks) == 1 and xpos == hi)
        ax.text(xpos + (-0.005 if left else 0.005) * end, -0.08, text, ha="right" if left else "left", va="top",
                fontsize=_SMALL, color=line_color)
    callouts.flush()
    ax.set_ylim(-1.45, max(2.0, callouts.extent + 0.3))

    # page_to_skb()'s test term by term, in the kernel's names, then the notes.
    ax_cond.set_axis_off()
    ax_cond.set_ylim(len(caption), 0)
    ax_cond.set_xlim(0, 1)
    for i, (text, ok) in enumerate(caption):
        ax_cond.text(0.0, i + 0.5, text, fontsize=_SMALL, color=_verdict_color(ok), va="center", ha="left",
                     gid="condition")
    return fig


# --------------------------------------------------------------------------------------------------
# draw_skb

@dataclass
class TruesizeParts:
    """skb->truesize split as the allocators charged it (include/linux/skbuff.h SKB_TRUESIZE, skb_add_rx_frag)."""

    sk_buff: int  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
    head: int  # skb_end_offset(): the head's data area
    shinfo: int  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    frags: list[int]  # truesize charged by each frags[i]
    frag_list: int  # truesize of the skbs chained on frag_list (their own frags included)

    @property
    def total(self) -> int:
        return self.sk_buff + self.head + self.shinfo + sum(self.frags) + self.frag_list


@public
def truesize_parts(skb: Skb, *, kernel: str | Kernel, arch: str | Arch) -> TruesizeParts:
    """Split ``skb.truesize`` into the sk_buff struct, the head, skb_shared_info, each frag and frag_list."""
    a = _arch(arch, kernel)
    return TruesizeParts(a.skb_data_align(a.sk_buff_size), skb.end_offset, a.shinfo_size,
                         [f.truesize for f in skb.frags], sum(m.truesize for m in skb.frag_list))


def _skb_spans(result: rx.RxResult) -> tuple[int, int, int]:
    """Byte spans of the head (+ shinfo), of the frag buffers and of truesize, for shared scales."""
    skb = result.skb
    pages = sum(f.truesize for f in skb.frags)
    gap = max((f.truesize for f in skb.frags), default=0) * 0.04
    return (skb.end_offset + result.shinfo_size, int(pages + gap * len(skb.frags)), skb.truesize)



def _truesize_items(parts: TruesizeParts) -> list[tuple[str, int, str, str]]:
    """(gid, bytes, colour, label) of each piece of skb->truesize, in the order the bar draws them."""
    items = [("truesize:sk_buff", parts.sk_buff, "sk_buff", "sk_buff"),
             ("truesize:head", parts.head, "linear", "head"),
             ("truesize:skb_shared_info", parts.shinfo, "skb_shared_info", "shinfo")]
    items += [(f"truesize:frag{i}", t, "frag", f"frag{i}") for i, t in enumerate(parts.frags)]
    if parts.frag_list:
        items.append(("truesize:frag_list", parts.frag_list, "frag_list", "frag_list"))
    return items


def _frag_buffer_offset(result: rx.RxResult, frag) -> int:  # noqa: ANN001
    """Offset of a frag's data inside the receive buffer that charged its truesize."""
    for buf in result.buffers:
        if buf.page == frag.page and buf.offset <= frag.offset < buf.offset + max(buf.truesize, buf.len + buf.headroom):
            return frag.offset - buf.offset
    return min(frag.offset % max(1, frag.truesize), max(0, frag.truesize - frag.size))


# Rows of one sk_buff drawing, (space above, height) in inches: head, skb_shared_info fields, frag buffers,
# truesize. The head row holds its callouts above and the four pointers below the bar.
_SKB_ROWS = ((0.3, 1.25), (0.3, 0.34), (0.14, 0.3), (0.3, 0.3))
_SKB_TOP = 0.32
_SKB_HEIGHT = _SKB_TOP + sum(g + h for g, h in _SKB_ROWS) + 0.47  # room for three levels of truesize labels


def _draw_skb_rows(fig: Figure, axes: list[Axes], result: rx.RxResult, prefix: str, spans: tuple[int, int, int],
                   frac: float, *, lean: bool = False) -> None:
    """One sk_buff in four rows of ``axes``; ``lean`` (two skbs side by side): shorter names and titles."""
    skb = result.skb
    shinfo = _arch(result.arch, result.kernel).shinfo_size
    def g(name: str) -> str:
        return prefix + name

    ax_head, ax_sh, ax_pages, ax_true = axes
    for a in axes:
        a.set_axis_off()
    head_span, pages_span, true_span = spans

    # skb->head .. skb_end_pointer() + skb_shared_info, to scale; the four pointers below.
    ax_head.set_xlim(0, head_span * 1.01)
    co = _Callouts(ax_head, head_span, 1.0, 1.3, 0.55, frac)
    data, tail, end = skb.headroom, skb.headroom + skb.headlen, skb.end_offset
    for gid, x, w, name in (("headroom", 0, data, "headroom"), ("linear", data, skb.headlen, "linear"),
                            ("tailroom", tail, end - tail, "tailroom"),
                            ("skb_shared_info", end, shinfo, "shinfo" if lean else "skb_shared_info")):
        _labelled(ax_head, co, g(gid), x, 0, w, 1, f"{name} {w}", color=COLORS[gid])
    co.flush()
    co_p = _Callouts(ax_head, head_span, 0.0, -0.3, -0.55, frac, pointer=True)
    for x, name in ((0, "head"), (data, "data"), (tail, "tail"), (end, "end")):
        co_p.add(g("skb->" + name), x, f"{name} {x}")
    co_p.flush()
    ax_head.set_ylim(min(-1.0, co_p.extent - 0.05), max(1.85, co.extent + 0.1))
    ax_head.set_title("skb->head (bytes, to scale)" if lean else f"skb->head: {HEAD_KINDS[skb.head_kind]}",
                      fontsize=_SMALL, loc="left", pad=2)

    # struct skb_shared_info, field by field (not to scale), two-line labels so that slots stay narrow.
    n_slots = max(6, skb.nr_frags)
    ax_sh.set_xlim(0, n_slots + 2)
    ax_sh.set_ylim(0, 1)
    many = skb.nr_frags > (2 if lean else 5)
    fast_region(ax_sh, g("nr_frags"), 0, 0, 0.95, 1, color=COLORS["skb_shared_info"],
                label=f"nr_frags\n{skb.nr_frags}", fontsize=_SMALL)
    fl = skb.frag_list
    fast_region(ax_sh, g("frag_list"), 1, 0, 0.95, 1, color=COLORS["frag_list"] if fl else "#ffffff",
                label=f"frag_list\n{len(fl)} skbs" if fl else "frag_list\nNULL", fontsize=_SMALL)
    for i in range(skb.nr_frags):
        label = f"frags[{i}]\n{skb.frags[i].size}" if not many else (f"[{i}]" if i in (0, skb.nr_frags - 1) else None)
        fast_region(ax_sh, g(f"frags[{i}]"), 2 + i, 0, 0.95, 1, color=COLORS["frag"], label=label, fontsize=_SMALL)
    if skb.frags and not lean and skb.nr_frags <= 3:
        f0 = skb.frags[0]
        ax_sh.text(2 + skb.nr_frags + 0.1, 0.5, f"frags[0]: {f0.page.size // 1024} KiB page, offset {f0.offset},\n"
                   f"size {f0.size}, in a buffer of truesize {f0.truesize} B", fontsize=_SMALL, va="center")
    ax_sh.set_title("skb_shared_info; below: the frag buffers" if lean else
                    "struct skb_shared_info at skb_end_pointer() (fields); below: the receive buffers frags[] point "
                    "into (width = truesize)", fontsize=_SMALL, loc="left", pad=2)

    # The receive buffers the frags point into (width = the frag's truesize), the frag's bytes inside.
    ax_pages.set_ylim(-0.05, 1.05)
    ax_pages.set_xlim(0, max(1, pages_span) * 1.005)
    if skb.frags:
        x = 0
        gap = max(f.truesize for f in skb.frags) * 0.04
        for i, f in enumerate(skb.frags):
            buf_off = _frag_buffer_offset(result, f)
            fast_region(ax_pages, g(f"page{i}"), x, 0, f.truesize, 1, color=COLORS["page"])
            fast_region(ax_pages, g(f"frag{i}"), x + buf_off, 0.15, f.size, 0.7, color=COLORS["frag"],
                        label=f"frag {f.size}" if skb.nr_frags <= (1 if lean else 3) else None, fontsize=_SMALL)
            fig.add_artist(ConnectionPatch((2 + i + 0.48, 0.0), (x + buf_off + f.size / 2, 1), "data", "data",
                                           axesA=ax_sh, axesB=ax_pages, arrowstyle="->", color="#444444",
                                           linewidth=0.7))
            x += f.truesize + gap
    else:
        ax_pages.text(0, 0.5, "no frags: " + ("the head is the receive buffer" if skb.head_kind == "build_skb"
                                              else f"{result.copied} B copied into the head"),
                      fontsize=_SMALL, va="center")

    # skb->truesize, to scale.
    parts = truesize_parts(skb, kernel=result.kernel, arch=result.arch)
    ax_true.set_xlim(0, true_span * 1.005)
    ax_true.set_ylim(-0.05, 1.05)
    many = len(parts.frags) > 3
    co_t = _Callouts(ax_true, true_span, 0.0, -0.15, -0.45, frac)
    x = 0
    for gid, width, color, name in _truesize_items(parts):
        if many and gid.startswith("truesize:frag") and gid != "truesize:frag_list":
            fast_region(ax_true, g(gid), x, 0, width, 1, color=COLORS[color])
        else:
            _labelled(ax_true, co_t, g(gid), x, 0, width, 1, f"{name} {width}", color=COLORS[color],
                      under_region=True)
        x += width
    co_t.flush()
    if many:
        ax_true.text(parts.sk_buff + parts.head + parts.shinfo + sum(parts.frags) / 2, 0.5,
                     f"frags[0..{len(parts.frags) - 1}] {sum(parts.frags)}", ha="center", va="center",
                     fontsize=_SMALL, bbox=dict(facecolor="white", edgecolor="none", pad=1.0, alpha=0.85))
    ax_true.set_title(f"skb->truesize {skb.truesize} B" + ("" if lean else
                      " = SKB_DATA_ALIGN(sizeof(struct sk_buff)) + head + skb_shared_info + frags' truesize"),
                      fontsize=_SMALL, loc="left", pad=2)


@public
def draw_skb(result: rx.RxResult, *, mtu: int | None = None, fig: Figure | None = None) -> Figure:
    """The struct sk_buff the receive path produced (include/linux/skbuff.h, drivers/net/virtio_net.c).

    Depicts skb->head, skb->data, skb_tail_pointer() and skb_end_pointer() over the head to scale (offsets from
    skb->head), the linear part (skb_headlen), struct skb_shared_info with nr_frags, frag_list and frags[]
    (skb_frag_t) pointing into the receive buffers they came from (skb_add_rx_frag / skb_coalesce_rx_frag),
    and skb->truesize split as SKB_TRUESIZE() and skb_add_rx_frag() charged it. :func:`skb_caption` says the
    same in words. ``mtu`` is named in the title (RxResult does not record it).
    """
    fig, axes = reuse_axes(fig, ("skb",), FIG_WIDTH, _SKB_HEIGHT,
                           lambda f: axes_column(f, _SKB_ROWS, top=_SKB_TOP, left=0.012, right=0.988))
    _draw_skb_rows(fig, axes, result, "", _skb_spans(result), 0.976)
    fig.suptitle(f"sk_buff after {result.path}: {result.mode} mode, {_mtu(mtu)}kernel {result.kernel}, "
                 f"{result.arch}, "
                 f"len {result.skb.len} B, truesize {result.skb.truesize} B", fontsize=FONT["title"],
                 y=1 - 0.06 / _SKB_HEIGHT, va="top")
    return fig


@public
def draw_paths_side_by_side(payload_len: int, *, kernels: tuple[str, str] = ("5.12", rx.DEFAULT_KERNEL),
                            l4: str = "udp", fig: Figure | None = None, **receive_kw: object) -> Figure:
    """The same packet through page_to_skb() of two kernels, side by side (drivers/net/virtio_net.c).

    By default 5.12 (napi_alloc_skb(GOOD_COPY_LEN) + copy, the rest as a page frag) against the default kernel
    (build_skb() around the receive buffer when the tailroom holds struct skb_shared_info, fb32856b16ad, 5.13).
    Each row shares its byte scale across the two kernels. Regions carry the kernel version as a prefix
    ("5.12/linear", "6.1/tailroom"); equal kernels get "0/" and "1/".
    """
    if len(kernels) != 2:
        raise ArgumentError(f"kernels must name two kernel versions to compare, got {kernels!r}", param="kernels")
    results = [rx.receive(payload_len, l4=l4, kernel=k, **receive_kw) for k in kernels]
    prefixes = [f"{k}/" for k in kernels] if kernels[0] != kernels[1] else ["0/", "1/"]

    def make(f: Figure) -> list[Axes]:
        cols = [axes_column(f, _SKB_ROWS, top=_SKB_TOP + 0.2, left=left, right=left + 0.475)
                for left in (0.012, 0.513)]
        for r in (0, 2, 3):  # one byte scale for both kernels (the fields row is not to scale)
            cols[1][r].sharex(cols[0][r])
        return cols[0] + cols[1]

    height = _SKB_HEIGHT + 0.2
    fig, axes = reuse_axes(fig, ("paths",), FIG_WIDTH, height, make)
    spans = tuple(max(col) for col in zip(*(_skb_spans(r) for r in results)))
    r0 = results[0]
    mtu = receive_kw.get("mtu")
    fig.suptitle(f"{payload_len}-byte {l4.upper()} payload (frame {r0.frame_len} B), {r0.mode} mode, "
                 f"{_mtu(mtu if isinstance(mtu, int) else None)}{r0.arch}: the same packet on two kernels",
                 fontsize=FONT["title"], y=1 - 0.06 / height, va="top")
    for col, (res, prefix) in enumerate(zip(results, prefixes)):
        _draw_skb_rows(fig, axes[4 * col:4 * col + 4], res, prefix, spans, 0.475, lean=True)
        built = res.path == "build_skb"
        fig.text(0.012 + 0.501 * col, 1 - 0.33 / height, f"kernel {res.kernel}: {res.path}, truesize "
                 f"{res.skb.truesize} B", fontsize=FONT["label"],
                 ha="left", va="top", color=PASS_COLOR if built else FAIL_COLOR, weight="bold")
    return fig


@public
def skb_caption(result: rx.RxResult) -> list[str]:
    """The sk_buff in words, one line each: the head's allocation, the four pointers, each frag's page and the
    truesize sum (panels show it beside :func:`draw_skb`)."""
    skb = result.skb
    data, tail, end = skb.headroom, skb.headroom + skb.headlen, skb.end_offset
    lines = [f"skb->head: {HEAD_KINDS[skb.head_kind]}; skb->head = 0, skb->data = {data}, skb_tail_pointer() = "
             f"{tail}, skb_end_pointer() = {end} (offsets from skb->head)"]
    for i, f in enumerate(skb.frags[:8]):
        lines.append(f"frags[{i}]: {f.page.size // 1024} KiB page, offset {f.offset}, size {f.size}, "
                     f"buffer truesize {f.truesize} B")
    if skb.nr_frags > 8:
        lines.append(f"... frags[8..{skb.nr_frags - 1}]: {sum(f.size for f in skb.frags[8:])} B more")
    parts = truesize_parts(skb, kernel=result.kernel, arch=result.arch)
    lines.append(f"skb->truesize {skb.truesize} B = SKB_DATA_ALIGN(sizeof(struct sk_buff)) {parts.sk_buff} + head "
                 f"{parts.head} + skb_shared_info {parts.shinfo} + frags' truesize {sum(parts.frags)}"
                 + (f" + frag_list {parts.frag_list}" if parts.frag_list else ""))
    return lines

