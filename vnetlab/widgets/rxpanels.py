"""Receive-path panels: buffer, sk_buff, paths, threshold map, build_skb window, mergeable carving.

Each panel is ``<name>_panel(**initial)`` returning a :class:`vnetlab.widgets.base.Panel` over the plain state
function ``<name>_panel_state(**params)`` (tested without a frontend).
"""

from __future__ import annotations

import html

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab import rx
from vnetlab.profiles import arch as arch_profile
from vnetlab.profiles import kernel as kernel_profile
from vnetlab.profiles import known_arches, known_kernels
from vnetlab.viz import memory, thresholds
from vnetlab.widgets.base import Panel, PanelState, choice, int_box

__all__ = [
    "buffer_panel_state", "buffer_panel",
    "skb_panel_state", "skb_panel",
    "paths_panel_state", "paths_panel",
    "threshold_panel_state", "threshold_panel",
    "window_panel_state", "window_panel",
    "carving_panel_state", "carving_panel",
]


# --------------------------------------------------------------------------------------------------
# Plain state functions (tested without a frontend)

def _receive(payload_len: int, l4: str, mtu: int, mode: str, kernel: str, arch: str, xdp: bool,
             buf_len: int) -> rx.RxResult:
    # buf_len 0 means "as the driver carves it" (mergeable buffers at the EWMA floor).
    return rx.receive(payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                      buf_len=buf_len or None)


def _summary(r: rx.RxResult) -> str:
    return (f"<b>{r.path}</b> &mdash; {html.escape(r.reason)}<br>skb: {html.escape(r.skb.describe())}"
            + "".join(f"<br><i>{html.escape(n)}</i>" for n in r.notes))


_OK_COLOR = {None: "inherit", True: memory.PASS_COLOR, False: memory.FAIL_COLOR}


def _buffer_text(r: rx.RxResult, l4: str) -> str:
    """What the compact buffer figure leaves out: the page, page_to_skb()'s test term by term, the notes."""
    lay = memory.rx_buffer_layout(r, l4=l4)
    cond = "".join(f'<br><span style="color:{_OK_COLOR[ok]}">{html.escape(t)}</span>'
                   for t, ok in memory.rx_buffer_caption(r, lay))
    page = (f"<br>{html.escape(lay.page_label)}: {lay.page_size} B; this buffer at offset "
            f"{lay.buffer_offset}&ndash;{lay.buffer_offset + lay.buffer_end} B")
    return _summary(r) + page + cond


def buffer_panel_state(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                       kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0,
                       fig: Figure | None = None) -> PanelState:
    """rx.receive() for one packet and memory.draw_rx_buffer() of its first receive buffer."""
    r = _receive(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    figure = memory.draw_rx_buffer(r, l4=l4, fig=fig, compact=True)
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                           buf_len=buf_len), figure, _buffer_text(r, l4), r)


def skb_panel_state(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                    kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0,
                    fig: Figure | None = None) -> PanelState:
    """rx.receive() for one packet and memory.draw_skb() of the sk_buff it produced."""
    r = _receive(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    figure = memory.draw_skb(r, fig=fig, compact=True)
    text = _summary(r) + "".join(f"<br>{html.escape(line)}" for line in memory.skb_caption(r))
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                           buf_len=buf_len), figure, text, r)


def paths_panel_state(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                      kernel: str = "6.1", old_kernel: str = "5.12", arch: str = "x86_64", xdp: bool = False,
                      buf_len: int = 0, fig: Figure | None = None) -> PanelState:
    """The same packet in two kernels: memory.draw_paths_side_by_side()."""
    kw = dict(mtu=mtu, mode=mode, arch=arch, xdp=xdp, buf_len=buf_len or None)
    results = [rx.receive(payload_len, l4=l4, kernel=k, **kw) for k in (old_kernel, kernel)]
    figure = memory.draw_paths_side_by_side(payload_len, kernels=(old_kernel, kernel), l4=l4, fig=fig, compact=True,
                                            **kw)
    r0 = results[0]
    text = (f"{payload_len} B {l4.upper()} payload (frame {r0.frame_len} B), {r0.mode} mode, {r0.arch}; "
            "the same byte scale on both sides.<br>") + "<br>".join(
        f"kernel {r.kernel}: <b>{r.path}</b>, skb->truesize {r.skb.truesize} B, nr_frags {r.skb.nr_frags} &mdash; "
        f"{html.escape(r.reason)}" + "".join(f"<br>&nbsp;&nbsp;{html.escape(line)}" for line in memory.skb_caption(r))
        for r in results)
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, old_kernel=old_kernel,
                           arch=arch, xdp=xdp, buf_len=buf_len), figure, text, results)


def threshold_panel_state(*, kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, hdr_len: int = 12,
                          fig: Figure | None = None) -> PanelState:
    """thresholds.draw_threshold_map() for one kernel and arch (XDP: headroom VIRTIO_XDP_HEADROOM)."""
    headroom = rx.VIRTIO_XDP_HEADROOM if xdp else 0
    figure = thresholds.draw_threshold_map(kernel, arch, hdr_len=hdr_len, headroom=headroom, fig=fig, compact=True)
    a = arch_profile(arch, kernel)
    text = (thresholds.map_legend_html()
            + f"<br>NET_IP_ALIGN {a.net_ip_align}, SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {a.shinfo_size} B, "
            f"hdr_len {hdr_len} B" + (f", XDP headroom {headroom} B" if headroom else "")
            + "<br>dashed: the " + "/".join(str(t) for t in thresholds.MARKED_BUFFERS)
            + " B buffers add_recvbuf_mergeable carves; dotted: "
            + ", ".join(html.escape(label.replace("\n", " ")) + f" = frame {f} B"
                        for f, label in thresholds.MARKED_FRAMES))
    if xdp and kernel_profile(kernel).rule("xdp_pass_path") != "page_to_skb":
        text += (f"<br>Note: kernel {kernel} hands XDP_PASS buffers to build_skb_from_xdp_buff(), not page_to_skb(); "
                 "the map shows page_to_skb()'s rule only.")
    return PanelState(dict(kernel=kernel, arch=arch, xdp=xdp, hdr_len=hdr_len), figure, text)


def window_panel_state(*, buf_len: int = 1536, l4: str = "udp", kernel: str = "6.1", arch: str = "x86_64",
                       fig: Figure | None = None) -> PanelState:
    """thresholds.draw_path_vs_payload(): the path against the payload for one buffer truesize."""
    sweep = thresholds.payload_sweep(buf_len, l4=l4, kernel=kernel, arch=arch)
    figure = thresholds.draw_path_vs_payload(buf_len, l4=l4, kernel=kernel, arch=arch, fig=fig, compact=True)
    win = sweep.window()
    overhead = rx.frame_len_for(0, l4=l4)
    text = (f"build_skb for {l4.upper()} payload {win[0]}..{win[1]} B (frame {win[0] + overhead}..{win[1] + overhead})"
            if win else f"build_skb is never taken here (kernel {kernel}, {arch})")
    text += ("<br>" + thresholds.map_legend_html().rsplit(" <span", 1)[0]
             + f"<br>tailroom = truesize &minus; hdr_padded_len &minus; len (blue) against "
             f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) = {sweep.shinfo_size} B (dashed); dotted: len = "
             f"GOOD_COPY_LEN {rx.GOOD_COPY_LEN} (payload {rx.GOOD_COPY_LEN - overhead} B)")
    return PanelState(dict(buf_len=buf_len, l4=l4, kernel=kernel, arch=arch), figure, text, sweep,
                      extra={"window": win})


def carving_panel_state(*, kernel: str = "6.1", arch: str = "x86_64", mtu: int = 1500, xdp: bool = False,
                        avg_pkt_len: int = 0, fig: Figure | None = None) -> PanelState:
    """thresholds.draw_mergeable_carving(): add_recvbuf_mergeable's buffers in a 32 KiB frag and a 4 KiB page."""
    # the order-3 frag, or the page itself where a page is larger (64 KiB pages: ppc64le, arm64-64k)
    frag_size = max(arch_profile(arch, kernel).page_size, 32768)
    lens = rx.mergeable_buf_lens(8, avg_pkt_len=avg_pkt_len, mtu=mtu, frag_size=frag_size, xdp=xdp, kernel=kernel,
                                 arch=arch)
    figure = thresholds.draw_mergeable_carving(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len,
                                               fig=fig, compact=True)
    caption = thresholds.carving_caption(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len)
    return PanelState(dict(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len), figure,
                      f"first buffers' truesize: {lens}" + "".join(f"<br>{html.escape(c)}" for c in caption), lens)


# --------------------------------------------------------------------------------------------------
# Widgets

def _packet_controls(payload_len: int, l4: str, mtu: int, mode: str, kernel: str, arch: str, xdp: bool,
                     buf_len: int) -> dict[str, W.ValueWidget]:
    # Wide ranges on purpose: the model, not the widget, says what is out of range and why.
    return {
        "payload_len": int_box(payload_len, -1, rx.IP_MAX_MTU, "payload (B)"),
        "l4": choice(l4, ("udp", "tcp"), "l4"),
        "mtu": int_box(mtu, 1, rx.IP_MAX_MTU, "MTU (B)"),
        "mode": choice(mode, rx.MODES, "mode"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "xdp": W.Checkbox(value=xdp, description="XDP program", indent=False, layout=W.Layout(width="210px")),
        "buf_len": int_box(buf_len, 0, 1 << 22, "buffer truesize (B, 0 = driver)", step=64),
    }


def buffer_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                 kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0) -> Panel:
    """The receive buffer (draw_rx_buffer) for a packet chosen with the controls."""
    return Panel(buffer_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                   fast_text=True)


def skb_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
              kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0) -> Panel:
    """The resulting sk_buff (draw_skb) for a packet chosen with the controls."""
    return Panel(skb_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                   fast_text=True)


def paths_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                kernel: str = "6.1", old_kernel: str = "5.12", arch: str = "x86_64", xdp: bool = False,
                buf_len: int = 0) -> Panel:
    """The same packet in two kernels side by side (draw_paths_side_by_side)."""
    controls = _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    controls["old_kernel"] = choice(old_kernel, known_kernels(), "compare with kernel")
    return Panel(paths_panel_state, controls, fast_text=True)


def threshold_panel(*, kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, hdr_len: int = 12) -> Panel:
    """The path map over frame length x buffer truesize for a chosen kernel and arch."""
    return Panel(threshold_panel_state, {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "xdp": W.Checkbox(value=xdp, description="XDP headroom", indent=False, layout=W.Layout(width="210px")),
        "hdr_len": choice(hdr_len, sorted(rx.VNET_HDR_STRUCTS), "hdr_len (B)"),
    }, fast_text=True)


def window_panel(*, buf_len: int = 1536, l4: str = "udp", kernel: str = "6.1", arch: str = "x86_64") -> Panel:
    """The path against the payload for one buffer truesize (the 87..1162 window at 1536 B)."""
    return Panel(window_panel_state, {
        "buf_len": int_box(buf_len, 0, 65536, "buffer truesize (B)", step=64),
        "l4": choice(l4, ("udp", "tcp"), "l4"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
    }, fast_text=True)


def carving_panel(*, kernel: str = "6.1", arch: str = "x86_64", mtu: int = 1500, xdp: bool = False,
                  avg_pkt_len: int = 0) -> Panel:
    """add_recvbuf_mergeable's carving of a 32 KiB frag and a 4 KiB page."""
    return Panel(carving_panel_state, {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "mtu": int_box(mtu, 1, rx.IP_MAX_MTU, "MTU (B)"),
        "xdp": W.Checkbox(value=xdp, description="XDP program", indent=False, layout=W.Layout(width="210px")),
        "avg_pkt_len": int_box(avg_pkt_len, 0, rx.IP_MAX_MTU, "EWMA pkt len (B)"),
    }, fast_text=True)
