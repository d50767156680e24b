"""Where page_to_skb() switches path: threshold maps, the 1-D build_skb window, and mergeable buffer carving.

All decisions come from :func:`vnetlab.rx.classify` (vectorised page_to_skb) and buffer sizes from
:func:`vnetlab.rx.mergeable_buf_lens` / add_recvbuf_mergeable's carving; nothing here re-derives a rule.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vnetlab import rx
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.viz.memory import reuse_axes
from vnetlab.viz.style import COLORS, PATH_COLORS, fast_region, legend_handles, region, target_figure

INVALID = -1  # frame + hdr_len does not fit the buffer: a length error in receive_mergeable
MARKED_BUFFERS = (1536, 2048, 2560)
# (frame length, label): common packets, frame = Ethernet frame without FCS as the model counts it.
MARKED_FRAMES = (
    (60, "64 B min frame\n(60 w/o FCS)"),
    (rx.frame_len_for(1000), "UDP 1000 B\n(the seed)"),
    (rx.frame_len_for(1472), "UDP 1472 / TCP MSS 1448\n(full MTU 1500)"),
)
_CMAP = ListedColormap(["#ffffff", PATH_COLORS["copy"], PATH_COLORS["copy+frag"], PATH_COLORS["build_skb"]])
_NORM = BoundaryNorm([-1.5, -0.5, 0.5, 1.5, 2.5], _CMAP.N)


# --------------------------------------------------------------------------------------------------
# 2-D map: frame length x buffer truesize

def threshold_grid(frame_lens, truesizes, *, kernel: str = "6.1", arch: str = "x86_64", hdr_len: int = 12,
                   headroom: int = 0) -> np.ndarray:
    """page_to_skb()'s path for every (truesize, frame_len) pair of a mergeable buffer: rx.PATH_CODES,
    or INVALID (-1) where the frame does not fit the buffer. Shape (len(truesizes), len(frame_lens))."""
    frames = np.asarray(frame_lens, dtype=np.int64)
    trues = np.asarray(truesizes, dtype=np.int64)
    ff, tt = np.meshgrid(frames, trues)
    k, a = _kernel(kernel), _arch(arch, kernel)
    room = a.skb_data_align(headroom + a.skb_shared_info_size) if headroom else 0
    limit = tt if k.rule("mergeable_truesize") == "len" else tt - room
    ok = ff + hdr_len <= limit
    out = np.full(ff.shape, INVALID, dtype=np.int8)
    if ok.any():
        codes, *_ = rx.classify(ff[ok], tt[ok], mode="mergeable", hdr_len=hdr_len, headroom=headroom,
                                kernel=k, arch=a)
        out[ok] = codes
    return out


@lru_cache(maxsize=64)
def _map_grid(kernel: str, arch: str, hdr_len: int, headroom: int, max_frame: int, max_truesize: int):
    frames = np.arange(rx.ETH_HLEN, max_frame + 1, 8)
    trues = np.arange(512, max_truesize + 1, 16)
    grid = threshold_grid(frames, trues, kernel=kernel, arch=arch, hdr_len=hdr_len, headroom=headroom)
    for a in (frames, trues, grid):
        a.flags.writeable = False  # shared by every figure drawn from the cache
    return frames, trues, grid


@lru_cache(maxsize=64)
def _map_rgba(kernel: str, arch: str, hdr_len: int, headroom: int, max_frame: int, max_truesize: int) -> np.ndarray:
    """The map already coloured (RGBA bytes): a widget redraw then skips the norm and colormap."""
    rgba = _CMAP(_NORM(_map_grid(kernel, arch, hdr_len, headroom, max_frame, max_truesize)[2]), bytes=True)
    rgba.flags.writeable = False
    return rgba


def _draw_map(ax, kernel: str, arch: str, *, hdr_len: int, headroom: int, max_frame: int, max_truesize: int,
              labels: bool, rgba: bool = False) -> np.ndarray:
    frames, trues, grid = _map_grid(kernel, arch, hdr_len, headroom, max_frame, max_truesize)
    ax.imshow(_map_rgba(kernel, arch, hdr_len, headroom, max_frame, max_truesize) if rgba else grid, origin="lower",
              aspect="auto", cmap=_CMAP, norm=_NORM, interpolation="nearest",
              extent=(frames[0] - 4, frames[-1] + 4, trues[0] - 8, trues[-1] + 8), gid="path_map")
    for t in MARKED_BUFFERS:
        if t <= max_truesize:
            ax.axhline(t, color="black", linewidth=0.7, linestyle="--", gid=f"buffer:{t}")
            if labels:
                ax.text(max_frame, t + 20, f"{t} B buffer", ha="right", va="bottom", fontsize=7)
    for f, text in MARKED_FRAMES:
        ax.axvline(f, color="#333333", linewidth=0.7, linestyle=":", gid=f"frame:{f}")
        if labels:
            ax.text(f + 15, max_truesize - 20, text, ha="left", va="top", fontsize=6.5, rotation=0,
                    bbox=dict(facecolor="white", edgecolor="none", alpha=0.75, pad=1))
    ax.set_xlim(0, max_frame)
    ax.set_ylim(512, max_truesize)
    return grid


def draw_threshold_map(kernel: str = "6.1", arch: str = "x86_64", *, hdr_len: int = 12, headroom: int = 0,
                       max_frame: int = 3000, max_truesize: int = 4096, fig: Figure | None = None,
                       compact: bool = False) -> Figure:
    """page_to_skb()'s path over frame length × mergeable buffer truesize (drivers/net/virtio_net.c).

    build_skb where ``!NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= SKB_DATA_ALIGN(sizeof(struct
    skb_shared_info))``, tailroom = truesize − headroom − hdr_padded_len − len; otherwise napi_alloc_skb +
    copy (with a frag when the frame does not fit the small head). The 1536/2048/2560-byte buffers that
    add_recvbuf_mergeable carves, and common packet sizes, are marked.

    ``compact=True`` (widget panels): the marked buffers and frames are the axes' ticks, no legend (see
    :func:`map_legend_html`), a short title.
    """
    if compact:
        return _draw_threshold_map_compact(kernel, arch, hdr_len, headroom, max_frame, max_truesize, fig)
    fig = target_figure(fig, 9.0, 4.8)
    ax = fig.subplots(gridspec_kw=dict(left=0.08, right=0.98, top=0.92, bottom=0.11))
    _draw_map(ax, kernel, arch, hdr_len=hdr_len, headroom=headroom, max_frame=max_frame,
              max_truesize=max_truesize, labels=True)
    ax.set_xlabel("frame length len − hdr_len (bytes, Ethernet frame without FCS)")
    ax.set_ylabel("buffer truesize (bytes, mergeable ctx)")
    a = _arch(arch, kernel)
    ax.set_title(f"page_to_skb() path, kernel {kernel}, {arch} (NET_IP_ALIGN {a.net_ip_align}, "
                 f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {a.shinfo_size} B, hdr_len {hdr_len} B"
                 + (f", XDP headroom {headroom} B" if headroom else "") + ")", fontsize=9)
    handles = legend_handles(["copy", "copy+frag", "build_skb"])
    handles.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", linewidth=0.6, label="frame > buffer (length error)"))
    ax.legend(handles=handles, loc="lower right", fontsize=7, framealpha=0.9)
    return fig


MAP_LEGEND = (("copy", PATH_COLORS["copy"]), ("copy+frag", PATH_COLORS["copy+frag"]),
              ("build_skb", PATH_COLORS["build_skb"]), ("frame > buffer (length error)", "#ffffff"))


def map_legend_html() -> str:
    """The path colours of the threshold map and the window plot as HTML (widget panels show it as text)."""
    return " ".join(f'<span style="display:inline-block;width:0.9em;height:0.9em;background:{c};'
                    f'border:1px solid #000;vertical-align:middle"></span>&nbsp;{html.escape(n)}'
                    for n, c in MAP_LEGEND)


def _draw_threshold_map_compact(kernel, arch, hdr_len, headroom, max_frame, max_truesize, fig) -> Figure:
    fig, (ax,) = reuse_axes(fig, ("threshold_map", "compact"), 9.0, 4.0,
                            lambda f: [f.subplots(gridspec_kw=dict(left=0.075, right=0.985, top=0.92, bottom=0.11))])
    _draw_map(ax, kernel, arch, hdr_len=hdr_len, headroom=headroom, max_frame=max_frame,
              max_truesize=max_truesize, labels=False, rgba=True)
    # The marked buffers and frames are the ticks (dashed / dotted lines).
    ax.set_yticks([512] + [t for t in MARKED_BUFFERS if t <= max_truesize] + [max_truesize])
    ax.set_xticks([f for f, _ in MARKED_FRAMES if f <= max_frame] + [max_frame])
    ax.tick_params(labelsize=7.5)
    ax.set_xlabel("frame length (B, without FCS)", fontsize=8, labelpad=1)
    ax.set_ylabel("buffer truesize (B)", fontsize=8, labelpad=1)
    ax.set_title(f"page_to_skb() path, kernel {kernel}, {arch}" + (f", XDP headroom {headroom} B" if headroom else ""),
                 fontsize=9.5)
    return fig


def draw_threshold_maps(kernels=("5.12", "5.13", "6.1", "6.18"), arches=("x86_64", "ppc64le", "mips32"), *,
                        hdr_len: int = 12, max_frame: int = 3000, max_truesize: int = 4096,
                        fig: Figure | None = None) -> Figure:
    """Small multiples of :func:`draw_threshold_map`: one panel per (arch, kernel), shared axes."""
    fig = target_figure(fig, 2.6 * len(kernels) + 0.6, 2.1 * len(arches) + 0.8)
    axes = fig.subplots(len(arches), len(kernels), sharex=True, sharey=True, squeeze=False,
                        gridspec_kw=dict(left=0.07, right=0.99, top=0.92, bottom=0.12, hspace=0.3, wspace=0.08))
    for r, a_name in enumerate(arches):
        for c, k_name in enumerate(kernels):
            ax = axes[r][c]
            _draw_map(ax, k_name, a_name, hdr_len=hdr_len, headroom=0, max_frame=max_frame,
                      max_truesize=max_truesize, labels=False)
            a = _arch(a_name, k_name)
            ax.set_title(f"{k_name}, {a_name} (shinfo {a.shinfo_size} B)", fontsize=8)
            ax.tick_params(labelsize=7)
            if r == len(arches) - 1:
                ax.set_xlabel("frame length (bytes)", fontsize=7.5)
            if c == 0:
                ax.set_ylabel("buffer truesize (bytes)", fontsize=7.5)
    fig.suptitle("page_to_skb() path by kernel and arch: dashed = 1536/2048/2560 B buffers; dotted = 64 B, "
                 "UDP 1000 B, 1514 B frames", fontsize=9)
    fig.legend(handles=legend_handles(["copy", "copy+frag", "build_skb"]), loc="lower center", ncols=3,
               fontsize=7.5)
    return fig


# --------------------------------------------------------------------------------------------------
# 1-D: path vs payload for one buffer

@dataclass(frozen=True)
class PayloadSweep:
    payloads: np.ndarray
    frames: np.ndarray
    codes: np.ndarray
    tailroom: np.ndarray
    runs: list[tuple[str, int, int]]  # (path, first payload, last payload), contiguous
    shinfo_size: int

    def window(self, path: str = "build_skb") -> tuple[int, int] | None:
        """First and last payload of the first run on ``path`` (None if never taken)."""
        for p, lo, hi in self.runs:
            if p == path:
                return lo, hi
        return None


def payload_sweep(buf_len: int = 1536, *, l4: str = "udp", ip: int = 4, kernel: str = "6.1", arch: str = "x86_64",
                  hdr_len: int = 12) -> PayloadSweep:
    """page_to_skb()'s path for every L4 payload that fits one mergeable buffer of truesize ``buf_len``."""
    overhead = rx.frame_len_for(0, l4=l4, ip=ip)
    max_payload = buf_len - hdr_len - overhead
    if max_payload < 0:
        raise ValueError(f"buf_len={buf_len} cannot hold even an empty {l4} packet ({overhead + hdr_len} B with "
                         f"the {hdr_len}-byte virtio-net header)")
    payloads = np.arange(0, max_payload + 1)
    frames = payloads + overhead
    codes, tailroom, _, _ = rx.classify(frames, buf_len, mode="mergeable", hdr_len=hdr_len, kernel=kernel, arch=arch)
    names = {v: k for k, v in rx.PATH_CODES.items()}
    runs: list[tuple[str, int, int]] = []
    start = 0
    for i in range(1, len(codes) + 1):
        if i == len(codes) or codes[i] != codes[start]:
            runs.append((names[int(codes[start])], int(payloads[start]), int(payloads[i - 1])))
            start = i
    return PayloadSweep(payloads, frames, codes, tailroom, runs, _arch(arch, kernel).shinfo_size)


def draw_path_vs_payload(buf_len: int = 1536, *, l4: str = "udp", ip: int = 4, kernel: str = "6.1",
                         arch: str = "x86_64", hdr_len: int = 12, fig: Figure | None = None,
                         compact: bool = False) -> Figure:
    """page_to_skb()'s tailroom and path against the L4 payload, for one mergeable buffer truesize.

    Shows tailroom = truesize − hdr_padded_len − len against SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    and the GOOD_COPY_LEN floor: for UDP/IPv4 in a 1536-byte buffer on x86_64 the build_skb window is
    payload 87..1162 B (frame 129..1204).

    ``compact=True`` (widget panels): lines labelled directly (no legend), the path changes as ticks.
    """
    sw = payload_sweep(buf_len, l4=l4, ip=ip, kernel=kernel, arch=arch, hdr_len=hdr_len)
    if compact:
        return _draw_path_vs_payload_compact(sw, buf_len, l4, ip, kernel, arch, fig)
    fig = target_figure(fig, 9.0, 3.8)
    ax, ax_path = fig.subplots(2, 1, sharex=True, gridspec_kw=dict(height_ratios=[3, 1], left=0.08, right=0.98,
                                                                    top=0.92, bottom=0.13, hspace=0.12))
    xmax = int(sw.payloads[-1])
    if int(sw.tailroom.min()) >= 0 or _kernel(kernel).rule("page_to_skb") == "build_skb":
        ax.plot(sw.payloads, sw.tailroom, color=COLORS["model"], linewidth=1.2, label="tailroom (page_to_skb)",
                gid="tailroom_curve")
    ax.axhline(sw.shinfo_size, color=COLORS["skb_shared_info"], linewidth=1.2, linestyle="--",
               label=f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) = {sw.shinfo_size} B", gid="shinfo_size")
    good = rx.GOOD_COPY_LEN - rx.frame_len_for(0, l4=l4, ip=ip)
    ax.axvline(good, color="#555555", linewidth=0.8, linestyle=":", gid="good_copy_len")
    ax.text(good + xmax * 0.01, ax.get_ylim()[1] * 0.95 if ax.get_ylim()[1] > 0 else 1, f"len = GOOD_COPY_LEN 128\n"
            f"(payload {good} B)", fontsize=7, va="top")
    ax.set_ylabel("bytes")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title(f"{l4.upper()}/IPv{ip} payload in one {buf_len}-byte mergeable buffer, kernel {kernel}, {arch}",
                 fontsize=9)
    ax_path.set_ylim(0, 1)
    ax_path.set_yticks([])
    counts: dict[str, int] = {}
    for path, lo, hi in sw.runs:
        n = counts.get(path, 0)
        counts[path] = n + 1
        gid = f"path:{path}" + (f"{n}" if n else "")
        region(ax_path, gid, lo - 0.5, 0, hi - lo + 1, 1, color=PATH_COLORS[path],
               label=f"{path}: {lo}..{hi} B" if (hi - lo) > xmax * 0.12 else (path if (hi - lo) > xmax * 0.04
                                                                                 else None), fontsize=7.5)
    win = sw.window("build_skb")
    if win:
        ax.axvspan(win[0] - 0.5, win[1] + 0.5, color=PATH_COLORS["build_skb"], alpha=0.12, gid="build_skb_window")
        ax.text((win[0] + win[1]) / 2, sw.shinfo_size, f"build_skb window: payload {win[0]}..{win[1]} B\n"
                f"(frame {win[0] + rx.frame_len_for(0, l4=l4, ip=ip)}..{win[1] + rx.frame_len_for(0, l4=l4, ip=ip)})",
                ha="center", va="bottom", fontsize=8, color=PATH_COLORS["build_skb"])
    ax_path.set_xlim(-0.5, xmax + 0.5)
    ax_path.set_xlabel(f"{l4.upper()} payload (bytes)")
    ax_path.set_ylabel("path", fontsize=8)
    return fig


def _window_axes(fig: Figure) -> list:
    return list(fig.subplots(2, 1, sharex=True, gridspec_kw=dict(height_ratios=[3, 1], left=0.075, right=0.985,
                                                                  top=0.9, bottom=0.15, hspace=0.1)))


def _draw_path_vs_payload_compact(sw: PayloadSweep, buf_len: int, l4: str, ip: int, kernel: str, arch: str,
                                  fig: Figure | None) -> Figure:
    fig, (ax, ax_path) = reuse_axes(fig, ("path_vs_payload", "compact"), 9.0, 3.0, _window_axes)
    xmax = int(sw.payloads[-1])
    overhead = rx.frame_len_for(0, l4=l4, ip=ip)
    curve = int(sw.tailroom.min()) >= 0 or _kernel(kernel).rule("page_to_skb") == "build_skb"
    top = max(int(sw.tailroom.max()) if curve else 0, sw.shinfo_size) * 1.12
    bottom = min(0, int(sw.tailroom.min())) if curve else 0
    ax.set_ylim(bottom - 0.04 * (top - bottom), top)
    ax.set_xlim(-0.5, xmax + 0.5)
    if curve:
        ax.plot(sw.payloads, sw.tailroom, color=COLORS["model"], linewidth=1.2, gid="tailroom_curve")
        i = len(sw.payloads) // 3
        ax.text(int(sw.payloads[i]) + xmax * 0.01, int(sw.tailroom[i]), "tailroom", color=COLORS["model"],
                fontsize=7.5, va="bottom")
    ax.axhline(sw.shinfo_size, color=COLORS["skb_shared_info"], linewidth=1.2, linestyle="--", gid="shinfo_size")
    good = rx.GOOD_COPY_LEN - overhead
    # just right of the GOOD_COPY_LEN line, where the tailroom curve is at its highest
    ax.text(max(good, 0) + xmax * 0.01, sw.shinfo_size, f"skb_shared_info {sw.shinfo_size}", color="#a50f15",
            fontsize=7.5, ha="left", va="bottom")
    ax.axvline(good, color="#555555", linewidth=0.8, linestyle=":", gid="good_copy_len")
    ax.text(good + xmax * 0.01, top * 0.97, "GOOD_COPY_LEN", fontsize=7, va="top", color="#555555")
    ax.set_yticks(sorted({0, sw.shinfo_size} | ({int(sw.tailroom.max())} if curve else set())))
    ax.tick_params(labelsize=7)
    ax.set_ylabel("bytes", fontsize=8, labelpad=1)
    ax.set_title(f"{l4.upper()}/IPv{ip} payload in one {buf_len} B mergeable buffer, kernel {kernel}, {arch}",
                 fontsize=9.5)
    ax_path.set_ylim(0, 1)
    ax_path.set_yticks([])
    counts: dict[str, int] = {}
    ticks = {0, xmax}
    for path, lo, hi in sw.runs:
        n = counts.get(path, 0)
        counts[path] = n + 1
        gid = f"path:{path}" + (f"{n}" if n else "")
        fast_region(ax_path, gid, lo - 0.5, 0, hi - lo + 1, 1, color=PATH_COLORS[path],
                    label=path if (hi - lo) > xmax * 0.08 else None, fontsize=7.5)
        ticks.add(lo)
    win = sw.window("build_skb")
    if win:
        ax.axvspan(win[0] - 0.5, win[1] + 0.5, color=PATH_COLORS["build_skb"], alpha=0.12, gid="build_skb_window")
        ticks.add(win[1])
    # the payloads where the path changes are the ticks (those too close to a neighbour are dropped)
    kept: list[int] = []
    for t in sorted(ticks):
        if not kept or t - kept[-1] > xmax * 0.035 or t == xmax:
            if kept and t == xmax and t - kept[-1] <= xmax * 0.035:
                kept.pop()
            kept.append(t)
    ax_path.set_xticks(kept)
    ax_path.tick_params(labelsize=7)
    ax_path.set_xlabel(f"{l4.upper()} payload (B)", fontsize=8, labelpad=1)
    return fig


# --------------------------------------------------------------------------------------------------
# Mergeable buffer carving

@dataclass(frozen=True)
class CarvedBuffer:
    frag: int  # which page frag (0, 1, ...)
    offset: int  # in the frag
    extent: int  # bytes the buffer occupies (len + room)
    truesize: int  # what the ctx records
    hole: int  # bytes added by the hole rule


def carve(frag_size: int = 32768, *, count: int | None = None, kernel: str = "6.1", arch: str = "x86_64",
          mtu: int = 1500, hdr_len: int = 12, xdp: bool = False, avg_pkt_len: int = 0) -> list[CarvedBuffer]:
    """add_recvbuf_mergeable's carving of rq->alloc_frag: one whole frag unless ``count`` is given."""
    k, a = _kernel(kernel), _arch(arch, kernel)
    rx.mergeable_buf_lens(0, mtu=mtu, frag_size=frag_size, hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)  # validates
    min_len = rx.mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, big_packets=mtu > rx.ETH_DATA_LEN)
    frag = rx.PageFrag(frag_size, a)
    headroom = rx.VIRTIO_XDP_HEADROOM if xdp else 0
    room = a.skb_data_align(headroom + (a.skb_shared_info_size if headroom else 0)) if xdp else 0
    base = rx.get_mergeable_buf_len(avg_pkt_len, min_buf_len=min_len, hdr_len=hdr_len, room=room, a=a)
    out: list[CarvedBuffer] = []
    pages: dict[int, int] = {}
    while True:
        buf = rx.carve_mergeable_buffer(frag, avg_pkt_len, min_buf_len=min_len, hdr_len=hdr_len, xdp=xdp, k=k, a=a)
        idx = pages.setdefault(buf.page.pfn, len(pages))
        if count is None and idx > 0:
            break
        out.append(CarvedBuffer(idx, buf.offset, buf.len + room, buf.truesize, max(0, buf.len - base)))
        if count is not None and len(out) >= count:
            break
    return out


def draw_mergeable_carving(*, kernel: str = "6.1", arch: str = "x86_64", mtu: int = 1500, xdp: bool = False,
                           avg_pkt_len: int = 0, fig: Figure | None = None, compact: bool = False) -> Figure:
    """How add_recvbuf_mergeable() carves receive buffers from a 32 KiB (order-3) frag and from a 4 KiB page
    (the order-0 fallback of skb_page_frag_refill), with the hole rule (len += hole) and, where the kernel has
    it, struct virtnet_rq_dma at offset 0. Each box is one buffer, width = bytes it occupies.

    ``compact=True`` (widget panels): a truesize label where it changes, short titles; the details per
    page are in :func:`carving_caption`."""
    a = _arch(arch, kernel)
    sizes = sorted({a.page_size, max(a.page_size, 32768)}, reverse=True)
    if compact:
        return _draw_mergeable_carving_compact(kernel, arch, mtu, xdp, avg_pkt_len, sizes, fig)
    fig = target_figure(fig, 10.0, 1.3 + 1.2 * len(sizes))
    axes = fig.subplots(len(sizes), 1, squeeze=False, gridspec_kw=dict(left=0.01, right=0.99, top=0.82,
                                                                         bottom=0.16, hspace=0.7))[:, 0]
    for ax, size in zip(axes, sizes):
        bufs, name = _carving_strip(ax, size, region, kernel=kernel, arch=arch, mtu=mtu, xdp=xdp,
                                    avg_pkt_len=avg_pkt_len)
        for i, b in enumerate(bufs):
            label = f"{b.truesize}" if b.extent / size > 0.035 else None
            region(ax, f"{name}:buf{i}", b.offset, 0.1, b.extent, 0.8, color=COLORS["frame"] if i % 2 == 0 else
                   COLORS["tailroom"], label=label, fontsize=7)
            if b.hole:
                region(ax, f"{name}:hole{i}", b.offset + b.extent - b.hole, 0.1, b.hole, 0.8, color=COLORS["hole"],
                       hatch="//", label=f"hole +{b.hole}" if b.hole / size > 0.06 else None, fontsize=7)
        used = sum(b.extent for b in bufs) + (bufs[0].offset if bufs else 0)
        ax.set_title(f"{size // 1024} KiB {'compound page (order 3)' if size > a.page_size else 'page (order 0)'}: "
                     f"{len(bufs)} buffers, truesize {', '.join(sorted({str(b.truesize) for b in bufs}, key=int))} B"
                     + (f"; struct virtnet_rq_dma {bufs[0].offset} B at offset 0" if bufs and bufs[0].offset else "")
                     + "".join(f"; buffer {i} takes the hole: +{b.hole} B (len += hole)" for i, b in enumerate(bufs)
                               if b.hole)
                     + ("" if used == size else f"; {size - used} B unused"), fontsize=8, loc="left")
        ax.tick_params(labelsize=7)
    axes[-1].set_xlabel("offset in the page frag (bytes)")
    fig.suptitle(f"add_recvbuf_mergeable() carving, kernel {kernel}, {arch}, MTU {mtu}"
                 + (", XDP (room = VIRTIO_XDP_HEADROOM + shinfo)" if xdp else "")
                 + f"; EWMA {avg_pkt_len} → buffer len ALIGN(hdr_len + max(ewma, min_buf_len), L1)", fontsize=9)
    return fig


def carving_caption(*, kernel: str = "6.1", arch: str = "x86_64", mtu: int = 1500, xdp: bool = False,
                    avg_pkt_len: int = 0) -> list[str]:
    """What the compact carving figure leaves out, one line per page frag, then the buffer-length rule."""
    a = _arch(arch, kernel)
    lines = []
    for size in sorted({a.page_size, max(a.page_size, 32768)}, reverse=True):
        bufs = carve(size, kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len)
        used = sum(b.extent for b in bufs) + (bufs[0].offset if bufs else 0)
        lines.append(f"{size // 1024} KiB {'compound page (order 3)' if size > a.page_size else 'page (order 0)'}: "
                     f"{len(bufs)} buffers, truesize {', '.join(sorted({str(b.truesize) for b in bufs}, key=int))} B"
                     + (f"; struct virtnet_rq_dma {bufs[0].offset} B at offset 0" if bufs and bufs[0].offset else "")
                     + "".join(f"; buffer {i} takes the hole: +{b.hole} B (len += hole)" for i, b in enumerate(bufs)
                               if b.hole)
                     + ("" if used == size else f"; {size - used} B unused"))
    lines.append(f"EWMA {avg_pkt_len} → buffer len ALIGN(hdr_len + max(ewma, min_buf_len), L1)"
                 + ("; XDP: room = VIRTIO_XDP_HEADROOM + shinfo" if xdp else ""))
    return lines


def _carving_strip(ax, size: int, draw, **carve_kw) -> tuple[list, str]:
    """One page-frag strip: axis set to the frag's bytes, the 6.18 virtnet_rq_dma header drawn; its buffers."""
    bufs = carve(size, **carve_kw)
    name = f"{size // 1024}K"
    ax.set_xlim(0, size)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if bufs and bufs[0].offset:
        draw(ax, f"{name}:virtnet_rq_dma", 0, 0.1, bufs[0].offset, 0.8, color=COLORS["vnet_hdr"])
    return bufs, name


def _draw_mergeable_carving_compact(kernel, arch, mtu, xdp, avg_pkt_len, sizes, fig) -> Figure:
    a = _arch(arch, kernel)
    n = len(sizes)
    fig, axes = reuse_axes(fig, ("carving", "compact", n), 10.0, 0.75 + 0.85 * n, lambda f: f.subplots(
        n, 1, squeeze=False, gridspec_kw=dict(left=0.01, right=0.975, top=1 - 0.5 / (0.75 + 0.85 * n),
                                              bottom=0.28 / (0.75 + 0.85 * n), hspace=0.75))[:, 0])
    for ax, size in zip(axes, sizes):
        bufs, name = _carving_strip(ax, size, fast_region, kernel=kernel, arch=arch, mtu=mtu, xdp=xdp,
                                    avg_pkt_len=avg_pkt_len)
        prev = None
        for i, b in enumerate(bufs):
            # the truesize where it changes (the title gives the count)
            label = f"{b.truesize}" if b.truesize != prev and b.extent / size > 0.035 else None
            prev = b.truesize
            fast_region(ax, f"{name}:buf{i}", b.offset, 0.1, b.extent, 0.8, color=COLORS["frame"] if i % 2 == 0 else
                        COLORS["tailroom"], label=label, fontsize=7)
            if b.hole:
                fast_region(ax, f"{name}:hole{i}", b.offset + b.extent - b.hole, 0.1, b.hole, 0.8,
                            color=COLORS["hole"], hatch="//", label=f"+{b.hole}" if b.hole / size > 0.03 else None,
                            fontsize=7)
        used = sum(b.extent for b in bufs) + (bufs[0].offset if bufs else 0)
        ax.set_title(f"{size // 1024} KiB {'frag (order 3)' if size > a.page_size else 'page (order 0)'}: "
                     f"{len(bufs)} buffer{'s' if len(bufs) != 1 else ''}, truesize "
                     + "/".join(str(t) for t in sorted({b.truesize for b in bufs}))
                     + (f", {size - used} B unused" if used != size else ""),
                     fontsize=8, loc="left", pad=2)
        ax.set_xticks([0, size // 2, size])
        ax.tick_params(labelsize=7, pad=1.5)
    fig.suptitle(f"add_recvbuf_mergeable() carving, kernel {kernel}, {arch}, MTU {mtu}" + (", XDP" if xdp else ""),
                 fontsize=9.5)
    return fig
