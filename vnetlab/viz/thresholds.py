"""Where page_to_skb() switches path: threshold maps, the 1-D build_skb window, and mergeable buffer carving.

All decisions come from :func:`vnetlab.rx.classify` (vectorised page_to_skb) and buffer sizes from
:func:`vnetlab.rx.mergeable_buf_lens` / add_recvbuf_mergeable's carving; nothing here re-derives a rule.
Each figure has one drawing, used by the notebooks and by the widget panels alike (panels pass ``fig`` to redraw
in place). The paths are told apart by colour (style.PATH_COLORS, colour-blind safe), by hatch where they are
bars, and by a direct label.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from vnetlab import profiles, rx
from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.viz.style import (
    COLORS,
    FIG_WIDTH,
    FONT,
    PATH_COLORS,
    PATH_HATCHES,
    axes_column,
    fast_region,
    path_region,
    reuse_axes,
)

__all__ = ["INVALID", "MARKED_BUFFERS", "marked_buffers", "MARKED_FRAMES", "threshold_grid", "draw_threshold_map",
           "draw_threshold_maps", "map_legend_html", "PayloadSweep", "payload_sweep", "draw_path_vs_payload",
           "CarvedBuffer", "carve", "draw_mergeable_carving", "carving_caption"]

_SMALL = FONT["small"]
INVALID = -1  # frame + hdr_len does not fit the buffer: a length error in receive_mergeable
MARKED_BUFFERS = (1536, 2048, 2560)


@public
@lru_cache(maxsize=64)
def marked_buffers(kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH, *,
                   mtu: int = 1500, xdp: bool = False) -> tuple[int, ...]:
    """The mergeable buffer truesizes ``kernel`` really carves at the EWMA floor: every distinct size from each
    page it carves from (rx.rx_frag_sizes: 32 KiB and its 4 KiB fallback up to 6.18, 7.x's order-0 page_pool
    page), so 6.1 marks 1536/2048/2560, 6.18 1536/2032/2544 (virtnet_rq_dma) and 7.x 1536/2560. With ``xdp``
    get_mergeable_buf_len gives PAGE_SIZE - room whatever the EWMA, so 6.1 marks 3520 alone."""
    k, a = profiles.resolve(kernel, arch)
    sizes: set[int] = set()
    for frag_size in rx.rx_frag_sizes(k, a):
        n = 2 * frag_size // rx.mergeable_min_buf_len(mtu=mtu) + 2  # past the first hole: one page's carve repeats
        sizes.update(rx.mergeable_buf_lens(n, mtu=mtu, frag_size=frag_size, xdp=xdp, kernel=k, arch=a))
    return tuple(sorted(sizes))


# (frame length, label): common packets, frame = Ethernet frame without FCS as the model counts it.
MARKED_FRAMES = (
    (60, "64 B min frame\n(60 w/o FCS)"),
    (rx.frame_len_for(1000), "UDP 1000 B\n(the seed)"),
    (rx.frame_len_for(1472), "UDP 1472 / TCP MSS 1448\n(full MTU 1500)"),
)
_TICK_NAMES = {60: "min", rx.frame_len_for(1000): "UDP 1000", rx.frame_len_for(1472): "MTU 1500"}
_CMAP = ListedColormap(["#ffffff", PATH_COLORS["copy"], PATH_COLORS["copy+frag"], PATH_COLORS["build_skb"]])
_NORM = BoundaryNorm([-1.5, -0.5, 0.5, 1.5, 2.5], _CMAP.N)
_CODE_NAMES = {INVALID: "frame > buffer", **{v: k for k, v in rx.PATH_CODES.items()}}
_LABEL_BOX = dict(facecolor="white", edgecolor="none", pad=1.2, alpha=0.9)


# --------------------------------------------------------------------------------------------------
# 2-D map: frame length x buffer truesize

@public
def threshold_grid(frame_lens: object, truesizes: object, *, kernel: str | Kernel = DEFAULT_KERNEL,
                   arch: str | Arch = DEFAULT_ARCH,
                   hdr_len: int = 12, headroom: int = 0) -> np.ndarray:
    """page_to_skb()'s path for every (truesize, frame_len) pair of a mergeable buffer: rx.PATH_CODES,
    or INVALID (-1) where the frame does not fit the buffer. Shape (len(truesizes), len(frame_lens))."""
    frames = rx.int_array("frame_lens", frame_lens, "frame lengths in bytes")
    trues = rx.int_array("truesizes", truesizes, "buffer truesizes in bytes")
    ff, tt = np.meshgrid(frames, trues)
    k, a = _kernel(kernel), _arch(arch, kernel)
    room = rx.mergeable_room(headroom, a)
    limit = tt if k.rule("mergeable_truesize") == "len" else tt - room
    ok = ff + hdr_len <= limit
    out = np.full(ff.shape, INVALID, dtype=np.int8)
    if ok.any():
        codes, *_ = rx.classify(ff[ok], tt[ok], mode="mergeable", hdr_len=hdr_len, headroom=headroom,
                                kernel=k, arch=a)
        out[ok] = codes
    return out


def _deepest_cells(grid: np.ndarray) -> dict[int, tuple[int, int]]:
    """For each code in ``grid``, the (row, col) of a cell deepest inside its region (repeated erosion, two
    columns per row: the map's cells are about twice as tall on screen as wide): where its direct label goes."""
    out = {}
    for code in np.unique(grid):
        mask = grid == code
        last = mask
        while mask.any():
            last = mask
            m = mask.copy()
            m[1:, :] &= mask[:-1, :]
            m[:-1, :] &= mask[1:, :]
            for shift in (1, 2):
                m[:, shift:] &= mask[:, :-shift]
                m[:, :-shift] &= mask[:, shift:]
            m[0, :] = m[-1, :] = False
            m[:, :2] = m[:, -2:] = False
            mask = m
        rows, cols = np.nonzero(last)
        i = int(np.argmin((rows - rows.mean()) ** 2 + ((cols - cols.mean()) / 2) ** 2))
        out[int(code)] = (int(rows[i]), int(cols[i]))
    return out


@lru_cache(maxsize=64)
def _map_grid(kernel: str, arch: str, hdr_len: int, headroom: int, max_frame: int, max_truesize: int):  # noqa: ANN202
    frames = np.arange(rx.ETH_HLEN, max_frame + 1, 8)
    trues = np.arange(512, max_truesize + 1, 16)
    grid = threshold_grid(frames, trues, kernel=kernel, arch=arch, hdr_len=hdr_len, headroom=headroom)
    rgba = _CMAP(_NORM(grid), bytes=True)  # coloured once: a widget redraw skips the norm and colormap
    for a in (frames, trues, grid, rgba):
        a.flags.writeable = False  # shared by every figure drawn from the cache
    labels = {code: (int(frames[c]), int(trues[r])) for code, (r, c) in _deepest_cells(grid).items()}
    return frames, trues, grid, rgba, labels


def _draw_map(ax: Axes, kernel: str | Kernel, arch: str | Arch, *, hdr_len: int, headroom: int, max_frame: int,
              max_truesize: int, tick_names: bool) -> np.ndarray:
    # The axis ends at the largest truesize the driver carves (rx.mergeable_truesize_max): with XDP that is
    # PAGE_SIZE - room on <= 6.2, and rx.classify refuses a buffer the driver never makes.
    max_truesize = min(max_truesize, rx.mergeable_truesize_max(headroom, _kernel(kernel), _arch(arch, kernel))[0])
    frames, trues, grid, rgba, labels = _map_grid(kernel, arch, hdr_len, headroom, max_frame, max_truesize)
    ax.imshow(rgba, origin="lower", aspect="auto", interpolation="nearest",
              extent=(frames[0] - 4, frames[-1] + 4, trues[0] - 8, trues[-1] + 8), gid="path_map")
    # the buffers the driver carves with this headroom: XDP's are PAGE_SIZE - room (rx.get_mergeable_buf_len)
    buffers = [t for t in marked_buffers(kernel, arch, xdp=bool(headroom)) if t <= max_truesize]
    marked = [f for f, _ in MARKED_FRAMES if f <= max_frame]
    ax.hlines(buffers, 0, max_frame, colors="black", linewidth=0.7, linestyles="--", gid="buffers")
    ax.vlines(marked, 512, max_truesize, colors="#333333", linewidth=0.7, linestyles=":", gid="frames")
    for code, (x, y) in labels.items():
        ax.text(x, y, _CODE_NAMES[code], ha="center", va="center", fontsize=_SMALL, bbox=_LABEL_BOX,
                gid=f"label:{_CODE_NAMES[code]}")
    ax.set_xlim(0, max_frame)
    ax.set_ylim(512, max_truesize)
    ax.set_yticks([512, *buffers, max_truesize])
    ax.set_xticks([*marked, max_frame],
                  [*(f"{f}\n{_TICK_NAMES.get(f, '')}" if tick_names else str(f) for f in marked), str(max_frame)])
    ax.tick_params(pad=1.5)
    return grid


@public
def draw_threshold_map(kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH, *, hdr_len: int = 12,
                       headroom: int = 0, max_frame: int = 3000, max_truesize: int = 4096,
                       fig: Figure | None = None) -> Figure:
    """page_to_skb()'s path over frame length × mergeable buffer truesize (drivers/net/virtio_net.c).

    build_skb where ``!NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= SKB_DATA_ALIGN(sizeof(struct
    skb_shared_info))``, tailroom = truesize − headroom − hdr_padded_len − len; otherwise napi_alloc_skb +
    copy (with a frag when the frame does not fit the small head). Dashed: the buffers (marked_buffers)
    add_recvbuf_mergeable carves; dotted: the minimum frame, the seed's 1000-byte UDP and a full MTU-1500 frame.
    Each path's region carries its name.
    """
    def make(f: Figure) -> list[Axes]:
        return axes_column(f, [(0.0, 3.0)], top=0.5, left=0.085, right=0.985)

    fig, (ax,) = reuse_axes(fig, ("threshold_map",), FIG_WIDTH, 4.1, make)
    _draw_map(ax, kernel, arch, hdr_len=hdr_len, headroom=headroom, max_frame=max_frame,
              max_truesize=max_truesize, tick_names=True)
    ax.set_xlabel(f"frame length len − hdr_len (bytes, Ethernet frame without FCS; hdr_len {hdr_len} B)", labelpad=1)
    ax.set_ylabel("buffer truesize (bytes)", labelpad=1)
    a = _arch(arch, kernel)
    ax.set_title(f"page_to_skb() path, kernel {kernel}, {arch}\nNET_IP_ALIGN {a.net_ip_align}, "
                 f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {a.shinfo_size} B"
                 + (f", XDP headroom {headroom} B" if headroom else ""), fontsize=FONT["label"], loc="left",
                 linespacing=1.35)
    return fig


@public
def draw_threshold_maps(kernels: tuple[str, ...] = ("5.12", "5.13", DEFAULT_KERNEL, "6.18"),
                        arches: tuple[str, ...] = ("x86_64", "ppc64le", "mips32"), *, hdr_len: int = 12,
                        max_frame: int = 3000, max_truesize: int = 4096, fig: Figure | None = None) -> Figure:
    """Small multiples of :func:`draw_threshold_map`'s map: one per (arch, kernel), shared axes."""
    n_r, n_c = len(arches), len(kernels)
    cell_h, gap = 1.75, 0.42
    height = 0.45 + n_r * (cell_h + gap) + 0.25
    def make(f: Figure) -> list[Axes]:
        width = 0.91 / n_c
        return [axes_column(f, [(0.45 + r * (cell_h + gap) + 0.15, cell_h)], left=0.075 + c * width,
                            right=0.075 + (c + 1) * width - 0.012)[0] for r in range(n_r) for c in range(n_c)]

    fig, axes = reuse_axes(fig, ("threshold_maps", n_r, n_c), FIG_WIDTH, height, make)
    for r, a_name in enumerate(arches):
        for c, k_name in enumerate(kernels):
            ax = axes[r * n_c + c]
            _draw_map(ax, k_name, a_name, hdr_len=hdr_len, headroom=0, max_frame=max_frame,
                      max_truesize=max_truesize, tick_names=False)
            a = _arch(a_name, k_name)
            ax.set_title(f"{k_name}, {a_name} (shinfo {a.shinfo_size} B)", fontsize=_SMALL, pad=2)
            ax.set_xticks([1514, max_frame])
            if c:
                ax.set_yticklabels([])
            if r < n_r - 1:
                ax.set_xticklabels([])
    axes[(n_r - 1) * n_c].set_xlabel("frame length (bytes)", fontsize=_SMALL, labelpad=1)
    axes[(n_r - 1) * n_c].set_ylabel("buffer truesize (bytes)", fontsize=_SMALL, labelpad=1)
    fig.suptitle("page_to_skb() path by kernel and arch; dashed: each kernel's carved buffers; dotted: 60, 1042 and "
                 "1514 B frames", fontsize=FONT["label"], y=1 - 0.08 / height, va="top")
    return fig


MAP_LEGEND = tuple((p, PATH_COLORS[p], PATH_HATCHES[p]) for p in rx.PATHS) + (
    ("frame > buffer (length error)", "#ffffff", ""),)


@public
def map_legend_html() -> str:
    """The path colours and hatches of the threshold map and the window plot as HTML (for panels' text)."""
    def swatch(color: str, hatch: str) -> str:
        stripes = ("" if not hatch else ";background-image:repeating-linear-gradient(45deg,#000 0 1px,transparent "
                   "1px 4px)" + (",repeating-linear-gradient(-45deg,#000 0 1px,transparent 1px 4px)"
                                 if hatch == "xx" else ""))
        return (f'<span style="display:inline-block;width:1.1em;height:0.9em;background-color:{color}{stripes};'
                f'border:1px solid #000;vertical-align:middle"></span>')
    return " ".join(f"{swatch(c, h)}&nbsp;{html.escape(n)}" for n, c, h in MAP_LEGEND)


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

    @public
    def window(self, path: str = "build_skb") -> tuple[int, int] | None:
        """First and last payload of the first run on ``path`` (None if never taken)."""
        for p, lo, hi in self.runs:
            if p == path:
                return lo, hi
        return None


@public
def payload_sweep(buf_len: int = 1536, *, l4: str = "udp", ip: int = 4, kernel: str | Kernel = DEFAULT_KERNEL,
                  arch: str | Arch = DEFAULT_ARCH, hdr_len: int = 12) -> PayloadSweep:
    """page_to_skb()'s path for every L4 payload that fits one mergeable buffer of truesize ``buf_len``."""
    overhead = rx.frame_len_for(0, l4=l4, ip=ip)
    max_payload = buf_len - hdr_len - overhead
    if max_payload < 0:
        raise ArgumentError(f"buf_len={buf_len} cannot hold even an empty {l4} packet ({overhead + hdr_len} B with "
                            f"the {hdr_len}-byte virtio-net header)", param="buf_len")
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


@public
def draw_path_vs_payload(buf_len: int = 1536, *, l4: str = "udp", ip: int = 4, kernel: str | Kernel = DEFAULT_KERNEL,
                         arch: str | Arch = DEFAULT_ARCH, hdr_len: int = 12, fig: Figure | None = None) -> Figure:
    """page_to_skb()'s tailroom and path against the L4 payload, for one mergeable buffer truesize.

    Shows tailroom = truesize − hdr_padded_len − len against SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    and the GOOD_COPY_LEN floor; the path strip below names each path and the payloads where it changes:
    for UDP/IPv4 in a 1536-byte buffer on x86_64 the build_skb window is payload 87..1162 B (frame 129..1204).
    """
    sw = payload_sweep(buf_len, l4=l4, ip=ip, kernel=kernel, arch=arch, hdr_len=hdr_len)
    fig, (ax, ax_path) = reuse_axes(fig, ("path_vs_payload",), FIG_WIDTH, 3.3, lambda f: axes_column(
        f, [(0.0, 2.0), (0.08, 0.42)], top=0.32, left=0.075, right=0.975))
    ax.sharex(ax_path)
    ax.tick_params(labelbottom=False)
    xmax = int(sw.payloads[-1])
    overhead = rx.frame_len_for(0, l4=l4, ip=ip)
    curve = int(sw.tailroom.min()) >= 0 or _kernel(kernel).rule("page_to_skb") == "build_skb"
    top = max(int(sw.tailroom.max()), sw.shinfo_size) * 1.15 if curve else sw.shinfo_size * 1.8
    bottom = min(0, int(sw.tailroom.min())) if curve else 0
    ax.set_ylim(bottom - 0.04 * (top - bottom), top)
    ax.set_xlim(-0.5, xmax + 0.5)
    win = sw.window("build_skb")
    if win:
        ax.axvspan(win[0] - 0.5, win[1] + 0.5, color=PATH_COLORS["build_skb"], alpha=0.12, gid="build_skb_window")
    if curve:
        ax.plot(sw.payloads, sw.tailroom, color=COLORS["model"], linewidth=1.4, gid="tailroom_curve")
        i = len(sw.payloads) // 3
        ax.text(int(sw.payloads[i]) + xmax * 0.01, int(sw.tailroom[i]), "tailroom", color=COLORS["model"],
                fontsize=_SMALL, va="bottom")
    else:
        ax.text(xmax / 2, sw.shinfo_size / 2, f"kernel {kernel}: page_to_skb() has no build_skb branch, the tailroom "
                "is not tested", ha="center", va="center", fontsize=_SMALL)
    ax.axhline(sw.shinfo_size, color="#a33b00", linewidth=1.2, linestyle="--", gid="shinfo_size")
    good = rx.GOOD_COPY_LEN - overhead
    # right of the GOOD_COPY_LEN line, under the tailroom curve's start
    ax.text(max(good, 0) + xmax * 0.01, sw.shinfo_size, f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) "
            f"{sw.shinfo_size}", color="#a33b00", fontsize=_SMALL, ha="left", va="bottom")
    ax.axvline(good, color="#555555", linewidth=0.8, linestyle=":", gid="good_copy_len")
    ax.text(good + xmax * 0.01, top * 0.97, f"len = GOOD_COPY_LEN {rx.GOOD_COPY_LEN}", fontsize=_SMALL, va="top",
            color="#444444")
    ax.set_yticks(sorted({0, sw.shinfo_size} | ({int(sw.tailroom.max())} if curve else set())))
    ax.set_ylabel("bytes", labelpad=1)
    ax.set_title(f"{l4.upper()}/IPv{ip} payload in one {buf_len} B mergeable buffer, kernel {kernel}, {arch}"
                 + (f": build_skb for payload {win[0]}..{win[1]} B" if win else ": build_skb never"),
                 fontsize=FONT["label"], loc="left")
    ax_path.set_ylim(0, 1)
    ax_path.set_yticks([])
    counts: dict[str, int] = {}
    ticks = {0, xmax}
    fig_w_px = fig.get_figwidth() * fig.dpi * 0.9
    for path, lo, hi in sw.runs:
        n = counts.get(path, 0)
        counts[path] = n + 1
        width_px = (hi - lo + 1) / (xmax + 1) * fig_w_px
        path_region(ax_path, f"path:{path}" + (f"{n}" if n else ""), path, lo - 0.5, 0, hi - lo + 1, 1,
                    label=path if width_px > len(path) * 6.2 + 4 else None)
        ticks.add(lo)
    if win:
        ticks.add(win[1])
    # the payloads where the path changes are the ticks (one too close to a neighbour is dropped)
    kept: list[int] = []
    for t in sorted(ticks):
        if not kept or t - kept[-1] > xmax * 0.04:
            kept.append(t)
        elif t == xmax:
            kept[-1] = t
    ax_path.set_xticks(kept)
    ax_path.set_xlabel(f"{l4.upper()} payload (bytes)", labelpad=1)
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


@public
def carve(frag_size: int = 32768, *, count: Annotated[int, In(0, rx.MAX_BUFFERS, "buffers to carve")] | None = None,
          kernel: str | Kernel = DEFAULT_KERNEL,
          arch: str | Arch = DEFAULT_ARCH, mtu: int = 1500, hdr_len: int = 12, xdp: bool = False,
          avg_pkt_len: int = 0) -> list[CarvedBuffer]:
    """add_recvbuf_mergeable's carving of rq->alloc_frag: one whole frag unless ``count`` is given."""
    k, a = _kernel(kernel), _arch(arch, kernel)
    rx.mergeable_buf_lens(0, mtu=mtu, frag_size=frag_size, hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)  # validates
    min_len = rx.mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, big_packets=mtu > rx.ETH_DATA_LEN)
    frag = rx.rx_page_allocator(k, a, frag_size)  # rq->alloc_frag, or 7.x's rq->page_pool
    headroom = rx.VIRTIO_XDP_HEADROOM if xdp else 0
    room = rx.mergeable_room(headroom, a)
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


def _frag_sizes(kernel: str | Kernel, arch: str | Arch) -> list[int]:
    """The order-3 frag (32 KiB) and the order-0 fallback page, or the page alone where a page is larger; 7.x:
    the page_pool's page (rx.rx_frag_sizes)."""
    return sorted(rx.rx_frag_sizes(_kernel(kernel), _arch(arch, kernel)), reverse=True)


def _hole_taker(i: int, n: int) -> str:
    """Which buffer took the hole, without saying how many buffers the frag gave."""
    return "the last buffer" if i == n else f"buffer {i}"


def _frag_name(size: int, page_size: int) -> str:
    return f"{size // 1024} KiB {'frag (order 3)' if size > page_size else 'page (order 0)'}"


@public
def draw_mergeable_carving(*, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH, mtu: int = 1500,
                           xdp: bool = False, avg_pkt_len: int = 0, fig: Figure | None = None) -> Figure:
    """How add_recvbuf_mergeable() carves receive buffers from a 32 KiB (order-3) frag and from a 4 KiB page
    (the order-0 fallback of skb_page_frag_refill), with the hole rule (len += hole) and, where the kernel has
    it, struct virtnet_rq_dma at offset 0. Each box is one buffer, width = bytes it occupies, labelled with its
    truesize where that changes; :func:`carving_caption` says the same in words."""
    a = _arch(arch, kernel)
    sizes = _frag_sizes(kernel, arch)
    n = len(sizes)
    rows = [(0.24, 0.42)] + [(0.55, 0.42)] * (n - 1)
    height = 0.35 + sum(g + h for g, h in rows) + 0.3
    fig, axes = reuse_axes(fig, ("carving", n), FIG_WIDTH, height,
                           lambda f: axes_column(f, rows, top=0.35, left=0.012, right=0.97))
    for ax, size in zip(axes, sizes):
        bufs = carve(size, kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len)
        name = f"{size // 1024}K"
        ax.set_xlim(0, size)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        if bufs and bufs[0].offset:
            fast_region(ax, f"{name}:virtnet_rq_dma", 0, 0.1, bufs[0].offset, 0.8, color=COLORS["vnet_hdr"])
        prev = None
        for i, b in enumerate(bufs):
            label = f"{b.truesize}" if b.truesize != prev and b.extent / size > 0.045 else None
            prev = b.truesize
            fast_region(ax, f"{name}:buf{i}", b.offset, 0.1, b.extent, 0.8,
                        color=COLORS["frame"] if i % 2 == 0 else COLORS["tailroom"], label=label, fontsize=_SMALL)
            if b.hole:
                fast_region(ax, f"{name}:hole{i}", b.offset + b.extent - b.hole, 0.1, b.hole, 0.8,
                            color=COLORS["hole"], hatch="//",
                            label=f"+{b.hole}" if b.hole / size > 0.035 else None, fontsize=_SMALL)
        used = sum(b.extent for b in bufs) + (bufs[0].offset if bufs else 0)
        holes = [f"{_hole_taker(i, len(bufs))} takes the hole +{b.hole} B" for i, b in enumerate(bufs, 1) if b.hole]
        ax.set_title(f"{_frag_name(size, a.page_size)}: "
                     "truesize " + "/".join(str(t) for t in sorted({b.truesize for b in bufs})) + " B"
                     + (f"; struct virtnet_rq_dma {bufs[0].offset} B at offset 0" if bufs and bufs[0].offset else "")
                     + "".join(f"; {h}" for h in holes) + (f"; {size - used} B unused" if used != size else ""),
                     fontsize=_SMALL, loc="left", pad=2)
        ax.set_xticks([0, size // 2, size])
        ax.tick_params(pad=1.5)
    fig.suptitle(f"add_recvbuf_mergeable() carving, kernel {kernel}, {arch}, MTU {mtu}" + (", XDP" if xdp else "")
                 + f", EWMA {avg_pkt_len}", fontsize=FONT["title"], y=1 - 0.06 / height, va="top")
    return fig


@public
def carving_caption(*, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH, mtu: int = 1500,
                    xdp: bool = False,
                    avg_pkt_len: int = 0) -> list[str]:
    """The carving in words, one line per page frag, then the buffer-length rule."""
    a = _arch(arch, kernel)
    lines = []
    for size in _frag_sizes(kernel, arch):
        bufs = carve(size, kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len)
        used = sum(b.extent for b in bufs) + (bufs[0].offset if bufs else 0)
        # no count of buffers: how many one frag gives is an exercise (count them in the figure)
        lines.append(f"{_frag_name(size, a.page_size)}: truesize "
                     f"{', '.join(sorted({str(b.truesize) for b in bufs}, key=int))} B"
                     + (f"; struct virtnet_rq_dma {bufs[0].offset} B at offset 0" if bufs and bufs[0].offset else "")
                     + "".join(f"; {_hole_taker(i, len(bufs))} takes the hole: +{b.hole} B (len += hole)"
                               for i, b in enumerate(bufs, 1) if b.hole)
                     + ("" if used == size else f"; {size - used} B unused"))
    lines.append(f"EWMA {avg_pkt_len} → buffer len ALIGN(hdr_len + max(ewma, min_buf_len), L1)"
                 + ("; XDP: room = VIRTIO_XDP_HEADROOM + shinfo" if xdp else ""))
    return lines
