"""Memory drawings of virtio-net's receive path, to scale in bytes.

- :func:`draw_rx_buffer`: one receive buffer as page_to_skb() (or receive_small()) sees it, with the
  build_skb() tailroom test of drivers/net/virtio_net.c.
- :func:`draw_skb`: the struct sk_buff that comes out: skb->head/data/tail/end, the linear part,
  struct skb_shared_info with frags[] pointing into pages, frag_list, and skb->truesize.
- :func:`draw_paths_side_by_side`: the copy path (5.12) next to build_skb (5.13+) for the same packet.

Every labelled region is a patch whose gid is the kernel's name for it (vnetlab.viz.style.region), and
its width is the size the model computed, so tests check sizes on the figure, not on pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure, SubFigure
from matplotlib.patches import ConnectionPatch, Rectangle

from vnetlab import rx
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import HEAD_KINDS, Skb
from vnetlab.viz.style import COLORS, fast_region, region, target_figure

PASS_COLOR = "#1a7f37"
FAIL_COLOR = "#b42318"

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

    def span(self, gid: str) -> Span:
        for s in self.spans:
            if s.gid == gid:
                return s
        raise KeyError(gid)


def frame_parts(frame_len: int, *, l4: str = "udp", ip: int = 4, vlan: bool = False) -> list[tuple[str, int, str]]:
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


def _ptk_len(result: rx.RxResult) -> int:
    """The frame length page_to_skb() saw for the first buffer (len - hdr_len)."""
    if result.mode == "mergeable" and result.buffers:
        buf = result.buffers[0]
        return min(result.hdr_len + result.frame_len, buf.len) - result.hdr_len
    return result.frame_len


def rx_buffer_layout(result: rx.RxResult, *, l4: str = "udp", ip: int = 4, vlan: bool = False) -> BufferLayout:
    """The first receive buffer of ``result`` laid out in bytes (drivers/net/virtio_net.c page_to_skb)."""
    if not result.buffers:
        raise ValueError("result has no receive buffer to draw (RxResult.buffers is empty): draw the result of "
                         "rx.receive(), which records the buffers the driver posted")
    k = _kernel(result.kernel)
    a = _arch(result.arch, k)
    buf = result.buffers[0]
    mode, hdr_len, padded = result.mode, result.hdr_len, result.hdr_padded_len
    headroom = buf.headroom
    ptk_len = _ptk_len(result)
    room = a.skb_data_align(headroom + a.skb_shared_info_size) if (mode == "mergeable" and headroom) else 0
    if result.tailroom is not None and mode != "small":
        end = headroom + padded + ptk_len + result.tailroom
    elif mode == "small":
        end = buf.truesize
    elif mode == "big":
        end = a.page_size
    else:
        end = buf.len + room
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
    spans.append(Span("tailroom", tail, max(0, tailroom), f"tailroom {tailroom} B"))
    spans.append(Span("skb_shared_info", end - shinfo, shinfo,
                      f"struct skb_shared_info: SKB_DATA_ALIGN(sizeof) = {shinfo} B at end − {shinfo}"))

    cond: list[tuple[str, bool | None]] = []
    notes: list[str] = []
    truesize_name = "truesize"
    if mode == "mergeable" and headroom and k.rule("xdp_truesize") == "page_size":
        truesize_name = "truesize (= PAGE_SIZE, headroom ≠ 0)"
    if mode == "small":
        cond.append((f"receive_small(): build_skb(buf, buflen {end}) always; skb_shared_info at buflen − {shinfo} "
                     f"= {end - shinfo}; skb_tailroom after build_skb = {result.tailroom} B", True))
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


def rx_buffer_caption(result: rx.RxResult, lay: BufferLayout) -> list[tuple[str, bool | None]]:
    """page_to_skb()'s build_skb test term by term in the kernel's names, then the verdict: (text, passed),
    passed None for information. The static figure prints it under the buffer; widget panels show it as HTML."""
    lines = [(text + ("" if ok is None else (" ✓" if ok else " ✗")), ok) for text, ok in lay.condition]
    built = result.path == "build_skb"
    lines.append((f"→ {result.path}" + ("()" if built else " (napi_alloc_skb(GOOD_COPY_LEN) + copy)"), built))
    return lines


# --------------------------------------------------------------------------------------------------
# Drawing helpers

def _truesize_items(parts: TruesizeParts) -> list[tuple[str, int, str, str]]:
    """(gid, bytes, colour, label) of each piece of skb->truesize, in the order the bar draws them."""
    items = [("truesize:sk_buff", parts.sk_buff, "sk_buff", "sk_buff"),
             ("truesize:head", parts.head, "linear", "head"),
             ("truesize:skb_shared_info", parts.shinfo, "skb_shared_info", "shinfo")]
    items += [(f"truesize:frag{i}", t, "frag", f"frag{i}") for i, t in enumerate(parts.frags)]
    if parts.frag_list:
        items.append(("truesize:frag_list", parts.frag_list, "frag_list", "frag_list"))
    return items


def reuse_axes(fig: Figure | None, key: tuple, width: float, height: float, make) -> tuple[Figure, list]:
    """The axes of a drawing whose layout is ``key``: made once by ``make(fig)`` and reused on later calls
    with the same figure and key, their artists removed instead of clearing the figure (a widget update
    then skips making axes and ticks again). ``make`` returns a list of axes."""
    stored = getattr(fig, "_vnetlab_axes", None) if fig is not None else None
    if (stored is not None and getattr(fig, "_vnetlab_layout", None) == key and len(fig.axes) == len(stored)
            and all(any(ax is a for a in fig.axes) for ax in stored) and not fig.subfigs):
        _wipe(fig)
        return fig, list(stored)
    fig = target_figure(fig, width, height)
    axes = list(make(fig))
    for ax in fig.axes:
        # A fixed title position: otherwise every draw measures the axes' tick labels to place the title.
        ax.set_title("", y=1.0)
    fig._vnetlab_layout, fig._vnetlab_axes = key, axes  # in make's order, which the drawing relies on
    return fig, axes


def _wipe(fig: Figure) -> None:
    """Remove what a drawing added to reused axes (patches, texts, lines, images, legends, titles)."""
    for art in list(fig.artists) + list(fig.texts) + list(fig.legends):
        art.remove()
    fig._suptitle = None
    for ax in fig.axes:
        for art in (*ax.patches, *ax.texts, *ax.lines, *ax.images, *ax.collections, *ax.artists):
            art.remove()
        if ax.legend_ is not None:
            ax.legend_.remove()
        for loc in ("left", "center", "right"):
            ax.set_title("", loc=loc)
        ax.set_xlabel("")
        ax.set_ylabel("")


def _text_fits(ax, width_bytes: float, xspan: float, text: str, fontsize: float, axes_frac: float) -> bool:
    fig_w_pt = ax.get_figure(root=True).get_figwidth() * 72
    width_pt = width_bytes / xspan * fig_w_pt * axes_frac
    longest = max(len(line) for line in text.split("\n"))
    return width_pt >= longest * fontsize * 0.6 + 4


class _Callouts:
    """Labels for regions too narrow to hold their text, set out left to right above (dy > 0) or below the
    bar with a leader to their region, so leaders never cross; a new level starts when a row is full."""

    def __init__(self, ax, xspan: float, y_anchor: float, y0: float, dy: float, axes_frac: float,
                 fontsize: float = 7.5, arrowstyle: str = "-", plain: bool = False) -> None:
        self.ax, self.xspan, self.y_anchor, self.y0, self.dy = ax, xspan, y_anchor, y0, dy
        self.arrowstyle = arrowstyle
        # plain: texts and one LineCollection of leaders instead of annotations (whose arrows are clipped
        # against the text box at every draw: several ms each), for widget figures.
        self.plain = plain
        self.frac, self.fontsize = axes_frac, fontsize
        self.pending: list[tuple[float, str, str, str]] = []
        self.n_levels = 0

    def add(self, gid: str, x_center: float, text: str, color: str = "black") -> None:
        self.pending.append((x_center, gid, text, color))

    def _place(self, items: list, x_min: float, x_max: float) -> list[float] | None:
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
        for x_center, gid, text, color in sorted(self.pending, key=lambda p: p[0]):
            width = (len(max(text.split("\n"), key=len)) * self.fontsize * 0.55 + 8) / (fig_w_pt * self.frac)
            items.append((x_center, width * self.xspan, gid, text, color))
        rows = [items]
        while True:
            placed = [self._place(row, x_min, x_max) for row in rows]
            if all(p is not None for p in placed) or len(rows) >= len(items):
                break
            n = len(rows) + 1
            rows = [items[i::n] for i in range(n)]
        segments, tips = [], []
        for level, (row, los) in enumerate(zip(rows, placed)):
            los = los or [x_min + i * (x_max - x_min) / max(1, len(row)) for i in range(len(row))]
            y = self.y0 + level * self.dy
            for (x_center, width, gid, text, color), lo in zip(row, los):
                if self.plain:
                    self.ax.text(lo + width / 2, y, text, ha="center", va="bottom" if self.dy > 0 else "top",
                                 fontsize=self.fontsize, color=color, gid=f"{gid}:label", clip_on=False)
                    segments.append([(x_center, self.y_anchor), (lo + width / 2, y)])
                    tips.append(x_center)
                    continue
                self.ax.annotate(text, xy=(x_center, self.y_anchor), xytext=(lo + width / 2, y), ha="center",
                                 va="bottom" if self.dy > 0 else "top", fontsize=self.fontsize, color=color,
                                 gid=f"{gid}:label", annotation_clip=False,
                                 arrowprops=dict(arrowstyle=self.arrowstyle, color="#555555", linewidth=0.6, shrinkA=0,
                                                 shrinkB=0))
        if segments:
            self.ax.add_collection(LineCollection(segments, colors="#555555", linewidths=0.6), autolim=False)
            if self.arrowstyle == "->":
                self.ax.plot(tips, [self.y_anchor] * len(tips), linestyle="none", color="#555555", markersize=3,
                             marker="^" if self.dy < 0 else "v")
        self.n_levels = len(rows) if items else 0
        self.pending = []

    @property
    def extent(self) -> float:
        return self.y0 + self.n_levels * self.dy




def _labelled(ax, callouts: _Callouts, gid: str, x: float, y: float, w: float, h: float, text: str, *,
              color: str | None = None, hatch: str | None = None, fontsize: float = 8, **kw) -> Rectangle:
    inside = w > 0 and _text_fits(ax, w, callouts.xspan, text, fontsize, callouts.frac)
    draw = fast_region if callouts.plain else region
    rect = draw(ax, gid, x, y, w, h, color=color, label=text if inside else None, fontsize=fontsize, hatch=hatch, **kw)
    if not inside:
        callouts.add(gid, x + w / 2, text)
    return rect


def _bare_axes(ax) -> None:
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


# --------------------------------------------------------------------------------------------------
# draw_rx_buffer

def draw_rx_buffer(result: rx.RxResult, *, l4: str = "udp", ip: int = 4, vlan: bool = False,
                   fig: Figure | None = None, compact: bool = False) -> Figure:
    """One receive buffer to scale, as drivers/net/virtio_net.c page_to_skb() tests it for build_skb().

    Depicts: the rq page frag the buffer was carved from (add_recvbuf_mergeable / add_recvbuf_small /
    add_recvbuf_big), the headroom (VIRTIO_XDP_HEADROOM or VIRTNET_RX_PAD), the virtio-net header
    (struct virtio_net_hdr_mrg_rxbuf, hdr_len; struct padded_vnet_hdr in big mode), the Ethernet frame split
    into struct ethhdr / iphdr / udphdr or tcphdr / payload, the tailroom, and where build_skb() would put
    struct skb_shared_info (end − SKB_DATA_ALIGN(sizeof(struct skb_shared_info))), with page_to_skb()'s
    condition ``!NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= shinfo_size`` evaluated.
    ``l4``/``ip``/``vlan`` say how to split the frame (RxResult does not record them).

    ``compact=True`` (widget panels) draws the same regions with short kernel-named labels and leaves the
    condition, the page and the notes to the caller (:func:`rx_buffer_caption`): far fewer glyphs to render.
    """
    lay = rx_buffer_layout(result, l4=l4, ip=ip, vlan=vlan)
    if compact:
        return _draw_rx_buffer_compact(result, lay, fig)
    fig = target_figure(fig, 10.0, 5.4)
    ax_page, ax, ax_cond = fig.subplots(3, 1, gridspec_kw=dict(height_ratios=[1, 5, 1.7], left=0.01, right=0.99,
                                                                 top=0.88, bottom=0.02, hspace=0.45))
    ax_cond.set_axis_off()
    end = lay.buffer_end
    frac = 0.92

    # The page the buffer was carved from, to its own scale.
    ax_page.set_xlim(0, lay.page_size)
    ax_page.set_ylim(0, 1)
    _bare_axes(ax_page)
    region(ax_page, "page", 0, 0, lay.page_size, 1, color=COLORS["page"])
    region(ax_page, "buffer", lay.buffer_offset, 0, min(end, lay.page_size - lay.buffer_offset), 1,
           color=COLORS["frame"])
    ax_page.set_title(f"{lay.page_label}: {lay.page_size} B; this buffer at offset "
                      f"{lay.buffer_offset}–{lay.buffer_offset + end} B", fontsize=8, loc="left")
    ax_page.tick_params(axis="x", labelsize=7)

    ax.set_xlim(-0.01 * end, end * 1.01)
    _bare_axes(ax)
    ax.set_xlabel("offset in the receive buffer (bytes)")
    callouts = _Callouts(ax, end * 1.02, 1.0, 1.9, 0.55, frac)
    for s in lay.spans:
        if s.gid == "skb_shared_info":
            continue
        color = COLORS["hole"] if s.gid == "hdr_pad" else COLORS.get(s.gid)
        _labelled(ax, callouts, s.gid, s.start, 0, s.size, 1, s.label, color=color,
                  hatch="//" if s.gid == "hdr_pad" else None)
    # Where skb_shared_info would sit: its own row, so an overlap with the frame stays visible.
    sh = lay.span("skb_shared_info")
    fits = lay.shinfo_start >= lay.tail
    built = result.path == "build_skb"
    region(ax, "skb_shared_info", sh.start, -1.25, sh.size, 0.8, label=None,
           hatch=None if built else "..")
    ax.text(end, -1.45, sh.label + ("" if built else " (would sit here)"), ha="right",
            va="top", fontsize=7.5, gid="skb_shared_info:label")
    if not fits:
        ov = lay.tail - lay.shinfo_start
        ax.add_patch(Rectangle((lay.shinfo_start, -1.25), min(ov, sh.size), 0.8, facecolor="none",
                               edgecolor=FAIL_COLOR, hatch="xx", linewidth=0.8, gid="shinfo_overlap"))
    for xpos, name in ((lay.tail, "tail"), (lay.shinfo_start, "end − shinfo_size")):
        ax.plot([xpos, xpos], [-1.3, 0.0], color=FAIL_COLOR if not fits else "#444444", linewidth=0.8,
                linestyle="--")
    marks = sorted([(lay.tail, f"tail = {lay.tail}"), (lay.shinfo_start, f"end − shinfo_size = {lay.shinfo_start}")])
    ax.text(marks[0][0] - 0.005 * end, -0.1, marks[0][1], ha="right", va="top", fontsize=7, color="#444444")
    if marks[1][0] > 0.85 * end:  # no room to its right: put it above the bar, right-aligned
        ax.text(marks[1][0], 1.05, marks[1][1], ha="right", va="bottom", fontsize=7, color="#444444")
    else:
        ax.text(marks[1][0] + 0.005 * end, -0.1, marks[1][1], ha="left", va="top", fontsize=7, color="#444444")
    ax.text(0, -2.0, "\n".join(lay.notes), ha="left", va="top", fontsize=7.5)
    callouts.flush()
    ax.set_ylim(-2.6, max(3.0, callouts.extent + 0.3))

    title = (f"Receive buffer: {result.mode} mode, kernel {result.kernel}, {result.arch}, frame {result.frame_len} B "
             f"→ path {result.path}")
    ax_page.figure.suptitle(title, fontsize=10)
    # The build_skb test, term by term, in the kernel's names.
    lines = [(text, "black" if ok is None else (PASS_COLOR if ok else FAIL_COLOR))
             for text, ok in rx_buffer_caption(result, lay)]
    y = 1.0
    for text, color in lines:
        ax_cond.text(0.0, y, text, transform=ax_cond.transAxes, fontsize=8, color=color, va="top", ha="left",
                     gid="condition")
        y -= 1.0 / max(5, len(lines))
    return fig


_SHORT = {"headroom": "headroom", "vnet_hdr": "vnet_hdr", "hdr_pad": "pad", "payload": "payload",
          "tailroom": "tailroom"}


def _draw_rx_buffer_compact(result: rx.RxResult, lay: BufferLayout, fig: Figure | None) -> Figure:
    """draw_rx_buffer for a widget: same regions and sizes, short labels, two byte ticks, no caption."""
    fig, (ax_page, ax) = reuse_axes(fig, ("rx_buffer", "compact"), 10.0, 2.9, lambda f: f.subplots(
        2, 1, gridspec_kw=dict(height_ratios=[0.55, 5], left=0.01, right=0.99, top=0.87, bottom=0.13, hspace=0.25)))
    end = lay.buffer_end
    frac = 0.98
    built = result.path == "build_skb"
    fig.suptitle(f"{result.mode}, kernel {result.kernel}, {result.arch}: frame {result.frame_len} B → {result.path}",
                 fontsize=10, color=PASS_COLOR if built else FAIL_COLOR)

    # The page the buffer was carved from, to its own scale (its name and offsets are in the caption).
    ax_page.set_axis_off()
    ax_page.set_xlim(0, lay.page_size)
    ax_page.set_ylim(0, 1)
    fast_region(ax_page, "page", 0, 0, lay.page_size, 1, color=COLORS["page"])
    fast_region(ax_page, "buffer", lay.buffer_offset, 0, min(end, lay.page_size - lay.buffer_offset), 1,
           color=COLORS["frame"])
    ax_page.text(lay.page_size * 0.995, 0.5, f"{lay.page_size // 1024} KiB page", ha="right", va="center",
                 fontsize=7, color="#444444")

    ax.set_xlim(-0.01 * end, end * 1.01)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_yticks([])
    ax.set_xticks([0, end])
    ax.tick_params(axis="x", labelsize=7, pad=1.5)
    ax.set_xlabel("offset in the receive buffer (B)", fontsize=7.5, labelpad=1)
    callouts = _Callouts(ax, end * 1.02, 1.0, 1.45, 0.5, frac, plain=True)
    for s in lay.spans:
        if s.gid == "skb_shared_info":
            continue
        color = COLORS["hole"] if s.gid == "hdr_pad" else COLORS.get(s.gid)
        hatch = "//" if s.gid == "hdr_pad" else None
        if s.size == 0:  # nothing to point at; the caption's tailroom formula names it
            fast_region(ax, s.gid, s.start, 0, 0, 1, color=color)
            continue
        name = _SHORT.get(s.gid, s.label.split(" ")[0])
        _labelled(ax, callouts, s.gid, s.start, 0, s.size, 1, f"{name} {s.size}", color=color, hatch=hatch,
                  fontsize=7.5)
    # Where skb_shared_info would sit: its own row, so an overlap with the frame stays visible.
    sh = lay.span("skb_shared_info")
    fits = lay.shinfo_start >= lay.tail
    fast_region(ax, "skb_shared_info", sh.start, -1.25, sh.size, 0.8, label=None, hatch=None if built else "..")
    # left of its row; further left of the tail line when that line would cross it and there is room
    sh_text = f"skb_shared_info {sh.size}" + ("" if built else " (not built)")
    text_w = len(sh_text) * 7.5 * 0.6 / (fig.get_figwidth() * 72 * frac) * end * 1.02
    x_label = sh.start
    if sh.start - text_w < lay.tail < sh.start and lay.tail > text_w:
        x_label = lay.tail
    ax.text(x_label - 0.005 * end, -0.85, sh_text,
            ha="right", va="center", fontsize=7.5, gid="skb_shared_info:label")
    if not fits:
        ov = lay.tail - lay.shinfo_start
        ax.add_artist(Rectangle((lay.shinfo_start, -1.25), min(ov, sh.size), 0.8, facecolor="none",
                                edgecolor=FAIL_COLOR, hatch="xx", linewidth=0.8, gid="shinfo_overlap"))
    line_color = FAIL_COLOR if not fits else "#444444"
    ax.vlines([lay.tail, lay.shinfo_start], -1.3, 0.0, colors=line_color, linewidth=0.8, linestyles="--")
    # tail and end − shinfo_size under the bar, beside the dashed lines (left of them when there is room).
    lo, hi = sorted((lay.tail, lay.shinfo_start))
    if hi - lo < 0.25 * end:  # close together: one label
        marks = [(lo if lo > 0.3 * end else hi, f"tail {lay.tail}, end − shinfo {lay.shinfo_start}")]
    else:
        marks = [(lay.tail, f"tail {lay.tail}"), (lay.shinfo_start, f"end − shinfo {lay.shinfo_start}")]
    for xpos, text in marks:
        left = xpos > 0.3 * end and not (len(marks) == 1 and xpos == hi)
        ax.text(xpos + (-0.005 if left else 0.005) * end, -0.08, text, ha="right" if left else "left", va="top",
                fontsize=7, color=line_color)
    callouts.flush()
    ax.set_ylim(-1.4, max(2.0, callouts.extent + 0.3))
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


def truesize_parts(skb: Skb, *, kernel: str, arch: str) -> TruesizeParts:
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


def _draw_skb_into(fig: Figure | SubFigure, result: rx.RxResult, prefix: str = "", *, compact: bool = False,
                   spans: tuple[int, int, int] | None = None) -> None:
    skb = result.skb
    a = _arch(result.arch, result.kernel)
    shinfo = a.shinfo_size
    g = (lambda name: prefix + name)
    axes = fig.subplots(4, 1, gridspec_kw=dict(height_ratios=[2.2, 1.2, 1.6, 0.9], left=0.01, right=0.99,
                                               top=0.85 if compact else 0.9, bottom=0.06, hspace=0.45))
    ax_head, ax_sh, ax_pages, ax_true = axes
    frac = 0.9 if not compact else 0.42

    head_span, pages_span, true_span = spans or _skb_spans(result)
    # skb->head .. skb_end_pointer() + skb_shared_info, to scale.
    span = head_span
    ax_head.set_xlim(0, span * 1.01)
    ax_head.set_ylim(-0.2, 3.4)
    _bare_axes(ax_head)
    co = _Callouts(ax_head, span, 1.0, 1.7, 0.55, frac)
    data, tail, end = skb.headroom, skb.headroom + skb.headlen, skb.end_offset
    _labelled(ax_head, co, g("headroom"), 0, 0, data, 1, f"headroom {data} B", color=COLORS["headroom"])
    _labelled(ax_head, co, g("linear"), data, 0, skb.headlen, 1, f"linear part: headlen {skb.headlen} B",
              color=COLORS["linear"])
    _labelled(ax_head, co, g("tailroom"), tail, 0, end - tail, 1, f"tailroom {end - tail} B",
              color=COLORS["tailroom"])
    _labelled(ax_head, co, g("skb_shared_info"), end, 0, shinfo, 1, f"skb_shared_info {shinfo} B",
              color=COLORS["skb_shared_info"])
    co.flush()
    # The four pointers of struct sk_buff, below the bar, spread out so close ones stay readable.
    co_p = _Callouts(ax_head, span, 0.0, -0.6, -0.6, frac, arrowstyle="->")
    for x, name in ((0, "skb->head"), (data, "skb->data"), (tail, "skb_tail_pointer()"), (end, "skb_end_pointer()")):
        co_p.add(g(name), x, f"{name} = {x}")
    co_p.flush()
    ax_head.set_ylim(min(-1.2, co_p.extent - 0.1), max(2.6, co.extent + 0.2))
    ax_head.set_xticks([])
    ax_head.spines["bottom"].set_visible(False)
    ax_head.set_title(f"skb->head: {HEAD_KINDS[skb.head_kind]}  (bytes, to scale)", fontsize=8, loc="left")

    # struct skb_shared_info, field by field (not to scale).
    n_slots = max(1, skb.nr_frags)
    ax_sh.set_xlim(0, n_slots + 2)
    ax_sh.set_ylim(0, 1)
    ax_sh.set_axis_off()
    region(ax_sh, g("nr_frags"), 0, 0.15, 0.9, 0.7, color=COLORS["skb_shared_info"],
           label=f"nr_frags\n= {skb.nr_frags}", fontsize=7)
    fl = skb.frag_list
    region(ax_sh, g("frag_list"), 1, 0.15, 0.9, 0.7, color=COLORS["frag_list"] if fl else "#ffffff",
           label=f"frag_list\n= {len(fl)} skb(s)" if fl else "frag_list\n= NULL", fontsize=7)
    slots = []
    for i in range(skb.nr_frags):
        slots.append(region(ax_sh, g(f"frags[{i}]"), 2 + i, 0.15, 0.9, 0.7, color=COLORS["frag"],
                            label=f"frags[{i}]\n{skb.frags[i].size} B" if skb.nr_frags <= 8 else f"[{i}]",
                            fontsize=7 if skb.nr_frags <= 8 else 6))
    if not skb.frags:
        ax_sh.text(2.1, 0.5, "frags[] empty", fontsize=8, va="center")
    ax_sh.set_title("struct skb_shared_info at skb_end_pointer() (fields, not to scale)", fontsize=8, loc="left")

    # The pages the frags point into: each frag's receive buffer (its truesize) with the bytes it holds.
    _bare_axes(ax_pages)
    if skb.frags:
        x = 0
        gap = max(f.truesize for f in skb.frags) * 0.04
        for i, f in enumerate(skb.frags):
            buf_start = x
            # The frag's receive buffer starts where its truesize begins; the data sits at its in-buffer offset.
            buf_off = _frag_buffer_offset(result, f)
            region(ax_pages, g(f"page{i}"), buf_start, 0, f.truesize, 1, color=COLORS["page"])
            region(ax_pages, g(f"frag{i}"), buf_start + buf_off, 0.15, f.size, 0.7, color=COLORS["frag"],
                   label=f"frag {f.size} B" if skb.nr_frags <= 4 else None, fontsize=7)
            ax_pages.text(buf_start + f.truesize / 2, -0.1, f"frags[{i}]: {f.page.size // 1024} KiB page, "
                          f"offset {f.offset}, size {f.size}\nbuffer truesize {f.truesize} B" if skb.nr_frags <= 3
                          else f"{f.truesize}",
                          ha="center", va="top", fontsize=6.5)
            fig.add_artist(ConnectionPatch((2 + i + 0.45, 0.15), (buf_start + buf_off + f.size / 2, 1), "data", "data",
                                           axesA=ax_sh, axesB=ax_pages, arrowstyle="->", color="#444444",
                                           linewidth=0.7))
            x += f.truesize + gap
        ax_pages.set_xlim(0, max(x, pages_span))
        ax_pages.set_ylim(-1.0, 1.05)
        ax_pages.set_title("pages the frags point into: each frag's receive buffer (width = frag truesize, bytes)",
                           fontsize=8, loc="left")
        ax_pages.set_xticks([])
    else:
        ax_pages.set_xlim(0, 1)
        ax_pages.set_ylim(0, 1)
        ax_pages.set_xticks([])
        ax_pages.spines["bottom"].set_visible(False)
        where = ("the head is the receive buffer itself (build_skb: head_frag = 1, no copy)"
                 if skb.head_kind == "build_skb" else f"{result.copied} B copied into the head; the receive buffer's "
                 "page was released")
        ax_pages.text(0.0, 0.5, f"no page frags: {where}", fontsize=8, va="center")

    # skb->truesize, to scale.
    parts = truesize_parts(skb, kernel=result.kernel, arch=result.arch)
    items = _truesize_items(parts)
    ax_true.set_xlim(0, true_span)
    ax_true.set_ylim(0, 1)
    _bare_axes(ax_true)
    co_t = _Callouts(ax_true, true_span, 0.0, -0.15, -0.5, frac, fontsize=7)
    x = 0
    many = len(parts.frags) > 4
    for gid, width, color, name in items:
        if many and gid.startswith("truesize:frag") and gid != "truesize:frag_list":
            region(ax_true, g(gid), x, 0, width, 1, color=COLORS[color])
        else:
            _labelled(ax_true, co_t, g(gid), x, 0, width, 1, f"{name} {width}", color=COLORS[color], fontsize=7)
        x += width
    if many:
        start = parts.sk_buff + parts.head + parts.shinfo
        ax_true.text(start + sum(parts.frags) / 2, 0.5, f"frags[0..{len(parts.frags) - 1}]: Σ truesize "
                     f"{sum(parts.frags)} B", ha="center", va="center", fontsize=7.5,
                     bbox=dict(facecolor="white", edgecolor="none", alpha=0.8))
    co_t.flush()
    ax_true.set_xticks([])
    ax_true.spines["bottom"].set_visible(False)
    ax_true.set_title(f"skb->truesize = {skb.truesize} B = SKB_DATA_ALIGN(sizeof(struct sk_buff)) + head + "
                      f"skb_shared_info + frags' truesize" + (" + frag_list" if parts.frag_list else ""),
                      fontsize=8, loc="left")


_SKB_ROWS = [1.9, 0.75, 0.9, 0.75]


def _draw_skb_compact(fig: Figure, axes, result: rx.RxResult, prefix: str, spans: tuple[int, int, int], frac: float,
                      *, row_titles: bool = True, lean: bool = False) -> None:
    """draw_skb for a widget: the same regions and sizes, short labels, no ticks; details go to the caption.
    ``lean`` (two skbs side by side): no pointer labels, shorter names and row titles."""
    skb = result.skb
    shinfo = _arch(result.arch, result.kernel).shinfo_size
    g = (lambda name: prefix + name)
    ax_head, ax_sh, ax_pages, ax_true = axes
    for ax in axes:
        ax.set_axis_off()
    head_span, pages_span, true_span = spans

    # skb->head .. skb_end_pointer() + skb_shared_info, to scale; the four pointers below.
    ax_head.set_xlim(0, head_span * 1.01)
    co = _Callouts(ax_head, head_span, 1.0, 1.35, 0.5, frac, fontsize=7, plain=True)
    data, tail, end = skb.headroom, skb.headroom + skb.headlen, skb.end_offset
    for gid, x, w, name in (("headroom", 0, data, "headroom"), ("linear", data, skb.headlen, "linear"),
                            ("tailroom", tail, end - tail, "tailroom"),
                            ("skb_shared_info", end, shinfo, "shinfo" if lean else "skb_shared_info")):
        if w == 0:
            fast_region(ax_head, g(gid), x, 0, 0, 1, color=COLORS[gid])
        else:
            _labelled(ax_head, co, g(gid), x, 0, w, 1, f"{name} {w}", color=COLORS[gid], fontsize=7)
    co.flush()
    low = -0.1
    if not lean:
        co_p = _Callouts(ax_head, head_span, 0.0, -0.35, -0.5, frac, fontsize=7, arrowstyle="->", plain=True)
        for x, name in ((0, "head"), (data, "data"), (tail, "tail"), (end, "end")):
            co_p.add(g("skb->" + name), x, name)
        co_p.flush()
        low = min(-0.9, co_p.extent - 0.1)
    ax_head.set_ylim(low, max(1.9, co.extent + 0.1))
    if row_titles:
        ax_head.set_title("skb->head" if lean else f"skb->head: {skb.head_kind}", fontsize=8, loc="left", pad=2)

    # struct skb_shared_info, field by field (not to scale).
    n_slots = max(1, skb.nr_frags)
    ax_sh.set_xlim(0, max(n_slots, 4) + 2)
    ax_sh.set_ylim(0, 1)
    many = skb.nr_frags > 6
    fast_region(ax_sh, g("nr_frags"), 0, 0.1, 0.9, 0.8, color=COLORS["skb_shared_info"],
                label=f"nr_frags {skb.nr_frags}", fontsize=7)
    fl = skb.frag_list
    fast_region(ax_sh, g("frag_list"), 1, 0.1, 0.9, 0.8, color=COLORS["frag_list"] if fl else "#ffffff",
           label=f"frag_list {len(fl)}" if fl else "frag_list NULL", fontsize=7)
    for i in range(skb.nr_frags):
        label = f"frags[{i}] {skb.frags[i].size}" if not many else (f"[{i}]" if i in (0, skb.nr_frags - 1) else None)
        fast_region(ax_sh, g(f"frags[{i}]"), 2 + i, 0.1, 0.9, 0.8, color=COLORS["frag"], label=label, fontsize=7)
    if row_titles:
        # lean: the field labels (nr_frags, frag_list, frags[i]) name the row
        ax_sh.set_title("" if lean else "skb_shared_info (fields)", fontsize=8, loc="left", pad=2)

    # The receive buffers the frags point into (width = frag truesize), the frag's bytes inside.
    ax_pages.set_ylim(-0.05, 1.05)
    ax_pages.set_xlim(0, max(1, pages_span) * 1.005)
    if skb.frags:
        x = 0
        gap = max(f.truesize for f in skb.frags) * 0.04
        for i, f in enumerate(skb.frags):
            buf_off = _frag_buffer_offset(result, f)
            fast_region(ax_pages, g(f"page{i}"), x, 0, f.truesize, 1, color=COLORS["page"])
            fast_region(ax_pages, g(f"frag{i}"), x + buf_off, 0.15, f.size, 0.7, color=COLORS["frag"],
                        label=f"frag {f.size}" if skb.nr_frags <= 3 and not lean else None, fontsize=7)
            fig.add_artist(ConnectionPatch((2 + i + 0.45, 0.1), (x + buf_off + f.size / 2, 1), "data", "data",
                                           axesA=ax_sh, axesB=ax_pages, arrowstyle="->", color="#444444",
                                           linewidth=0.7))
            x += f.truesize + gap
    elif not lean:  # lean: an empty row next to nr_frags 0 says it
        ax_pages.text(0, 0.5, "no frags: the head is the receive buffer" if skb.head_kind == "build_skb" else
                      f"no frags: {result.copied} B copied", fontsize=7.5, va="center",
                      transform=ax_pages.get_yaxis_transform())
    if row_titles:
        ax_pages.set_title("frag buffers" if lean else "frag buffers (width = truesize)", fontsize=8, loc="left",
                           pad=2)

    # skb->truesize, to scale.
    parts = truesize_parts(skb, kernel=result.kernel, arch=result.arch)
    items = _truesize_items(parts)
    ax_true.set_xlim(0, true_span * 1.005)
    ax_true.set_ylim(-0.05, 1.05)
    many = len(parts.frags) > 3
    co_t = _Callouts(ax_true, true_span, 0.0, -0.12, -0.5, frac, fontsize=7, plain=True)
    x = 0
    for gid, width, color, name in items:
        if many and gid.startswith("truesize:frag") and gid != "truesize:frag_list":
            fast_region(ax_true, g(gid), x, 0, width, 1, color=COLORS[color])
        else:
            _labelled(ax_true, co_t, g(gid), x, 0, width, 1, f"{name} {width}", color=COLORS[color], fontsize=7)
        x += width
    co_t.flush()
    if many:
        ax_true.text(parts.sk_buff + parts.head + parts.shinfo + sum(parts.frags) / 2, 0.5,
                     f"frags[0..{len(parts.frags) - 1}] {sum(parts.frags)}", ha="center", va="center", fontsize=7)
    if row_titles:
        ax_true.set_title("skb->truesize", fontsize=8, loc="left", pad=2)


def skb_caption(result: rx.RxResult) -> list[str]:
    """What compact skb drawings leave out, one line each: the head's allocation, the four pointers, each frag's
    page and the truesize sum."""
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


def _frag_buffer_offset(result: rx.RxResult, frag) -> int:
    """Offset of a frag's data inside the receive buffer that charged its truesize."""
    for buf in result.buffers:
        if buf.page == frag.page and buf.offset <= frag.offset < buf.offset + max(buf.truesize, buf.len + buf.headroom):
            return frag.offset - buf.offset
    return min(frag.offset % max(1, frag.truesize), max(0, frag.truesize - frag.size))


def draw_skb(result: rx.RxResult, *, fig: Figure | None = None, compact: bool = False) -> Figure:
    """The struct sk_buff the receive path produced (include/linux/skbuff.h, drivers/net/virtio_net.c).

    Depicts skb->head, skb->data, skb_tail_pointer() and skb_end_pointer() over the head to scale, the
    linear part (skb_headlen), struct skb_shared_info with nr_frags, frag_list and frags[] (skb_frag_t)
    pointing into the pages of the receive buffers (skb_add_rx_frag / skb_coalesce_rx_frag), and
    skb->truesize split as SKB_TRUESIZE() and skb_add_rx_frag() charged it.

    ``compact=True`` (widget panels): the same regions with short labels and no ticks; the pointers'
    offsets and the frags' pages are left to the caller's caption (:func:`skb_caption`).
    """
    if compact:
        fig, axes = reuse_axes(fig, ("skb", "compact"), 10.0, 3.6, lambda f: f.subplots(4, 1, gridspec_kw=dict(
            height_ratios=_SKB_ROWS, left=0.01, right=0.99, top=0.86, bottom=0.1, hspace=0.5)))
        _draw_skb_compact(fig, axes, result, "", _skb_spans(result), 0.98)
        fig.suptitle(f"sk_buff after {result.path}: {result.mode}, kernel {result.kernel}, {result.arch}, "
                     f"len {result.skb.len} B, truesize {result.skb.truesize} B", fontsize=10,
                     color=PASS_COLOR if result.path == "build_skb" else FAIL_COLOR)
        return fig
    fig = target_figure(fig, 10.0, 6.2)
    _draw_skb_into(fig, result)
    fig.suptitle(f"sk_buff after {result.path}: {result.mode} mode, kernel {result.kernel}, {result.arch}, "
                 f"len {result.skb.len} B ({result.skb.describe().split(', truesize')[0]})", fontsize=9.5)
    return fig


def draw_paths_side_by_side(payload_len: int, *, kernels: tuple[str, str] = ("5.12", "6.1"), l4: str = "udp",
                            fig: Figure | None = None, compact: bool = False, **receive_kw) -> Figure:
    """The same packet through page_to_skb() of two kernels, side by side (drivers/net/virtio_net.c).

    By default 5.12 (napi_alloc_skb(GOOD_COPY_LEN) + copy, the rest as a page frag) against 6.1 (build_skb()
    around the receive buffer when the tailroom holds struct skb_shared_info, fb32856b16ad). Regions carry
    the kernel version as a prefix ("5.12/linear", "6.1/tailroom"); equal kernels get "0/" and "1/".
    ``compact=True`` (widget panels): one grid of axes, each row sharing its byte scale across the two
    kernels, short labels (see :func:`draw_skb`).
    """
    if len(kernels) != 2:
        raise ValueError(f"kernels must name two kernel versions to compare, got {kernels!r}")
    results = [rx.receive(payload_len, l4=l4, kernel=k, **receive_kw) for k in kernels]
    if compact:
        return _draw_paths_compact(payload_len, l4, results, kernels, fig)
    fig = target_figure(fig, 14.0, 6.4)
    subs = fig.subfigures(1, 2, wspace=0.02)
    prefixes = [f"{k}/" for k in kernels] if kernels[0] != kernels[1] else ["0/", "1/"]
    # One byte scale for both sides, so the reader compares memory, not drawings.
    spans = tuple(max(col) for col in zip(*(_skb_spans(r) for r in results)))
    for sub, res, prefix in zip(subs, results, prefixes):
        _draw_skb_into(sub, res, prefix, compact=True, spans=spans)
        sub.suptitle(f"kernel {res.kernel}: {res.path} (skb->truesize {res.skb.truesize} B, "
                     f"nr_frags {res.skb.nr_frags})", fontsize=9.5, y=0.945,
                     color=PASS_COLOR if res.path == "build_skb" else FAIL_COLOR)
    fig.suptitle(f"{payload_len}-byte {l4.upper()} payload (frame {results[0].frame_len} B), "
                 f"{results[0].mode} mode, {results[0].arch}: the same packet in two kernels "
                 "(same byte scale on both sides)", fontsize=10)
    return fig


def _paths_axes(fig: Figure) -> list:
    gs = fig.add_gridspec(4, 2, height_ratios=_SKB_ROWS, left=0.01, right=0.99, top=0.86, bottom=0.1, hspace=0.55,
                          wspace=0.04)
    axes = [[None, None] for _ in range(4)]
    for r in range(4):
        axes[r][0] = fig.add_subplot(gs[r, 0])
        # one byte scale for both kernels: head, frag buffers and truesize rows share x (the fields row does not)
        axes[r][1] = fig.add_subplot(gs[r, 1], sharex=axes[r][0] if r != 1 else None)
    return [axes[r][c] for c in range(2) for r in range(4)]


def _draw_paths_compact(payload_len: int, l4: str, results: list[rx.RxResult], kernels, fig: Figure | None) -> Figure:
    fig, axes = reuse_axes(fig, ("paths", "compact"), 12.0, 3.6, _paths_axes)
    prefixes = [f"{k}/" for k in kernels] if kernels[0] != kernels[1] else ["0/", "1/"]
    spans = tuple(max(col) for col in zip(*(_skb_spans(r) for r in results)))
    for col, (res, prefix) in enumerate(zip(results, prefixes)):
        cols = axes[4 * col:4 * col + 4]
        _draw_skb_compact(fig, cols, res, prefix, spans, 0.48, row_titles=col == 0, lean=True)
        fig.text(0.01 + 0.5 * col, 0.955, f"kernel {res.kernel}: {res.path}, truesize {res.skb.truesize}",
                 fontsize=9.5, ha="left", va="center", color=PASS_COLOR if res.path == "build_skb" else FAIL_COLOR)
    return fig
