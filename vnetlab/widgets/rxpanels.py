"""Receive-path panels: one packet (receive buffer, sk_buff, the same packet on an older kernel), the threshold
map, the build_skb window and mergeable buffer carving.

:func:`packet_panel` is the one control row for a packet: its three views (tabs above the figure) all follow the
same controls. The single-view panels (:func:`buffer_panel`, :func:`skb_panel`, :func:`paths_panel`) are the
same views alone. Each panel is ``<name>_panel(**initial)`` returning a :class:`vnetlab.widgets.base.Panel` over
the plain state function ``<name>_panel_state(**params)`` (tested without a frontend).
"""

from __future__ import annotations

import html
from typing import Annotated, Any

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab import rx
from vnetlab.checks import In, check_choice, check_int, public
from vnetlab.headers import ETH_MIN_MTU, IP_MAX_MTU
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, known_arches, known_kernels
from vnetlab.profiles import arch as arch_profile
from vnetlab.profiles import kernel as kernel_profile
from vnetlab.virtio import PayloadLen
from vnetlab.viz import memory, thresholds
from vnetlab.widgets.base import Panel, PanelState, SizeSlider, checkbox, choice, size_slider

__all__ = [
    "PACKET_VIEWS", "packet_panel_state", "packet_panel",
    "buffer_panel_state", "buffer_panel",
    "skb_panel_state", "skb_panel",
    "paths_panel_state", "paths_panel",
    "threshold_panel_state", "threshold_panel",
    "window_panel_state", "window_panel", "window_slider_range", "max_buf_len", "control_notes",
    "carving_panel_state", "carving_panel", "carving_mtu_note",
]

OLD_KERNEL = "5.12"  # the last kernel whose page_to_skb() always copies (build_skb arrived in 5.13, fb32856b16ad)
JUMBO_MTU = 9000  # the topic's largest MTU on the slider (virtio-net accepts up to 65535: type it)
# dev->min_mtu ETH_MIN_MTU (include/uapi/linux/if_ether.h) .. IP_MAX_MTU (include/net/ip.h)
MTU = In(ETH_MIN_MTU, IP_MAX_MTU, "the device MTU, ETH_MIN_MTU..IP_MAX_MTU")
Mtu = Annotated[int, MTU]
# rq->mrg_avg_pkt_len, the EWMA of received lengths get_mergeable_buf_len reads (it clamps it to the page)
AvgPktLen = Annotated[int, In(0, None, "EWMA of received packet lengths in bytes (rq->mrg_avg_pkt_len), 0 = none "
                                       "yet")]
# add_recvbuf_mergeable's buffer truesize as pinned; 0: as the driver carves it (get_mergeable_buf_len)
BufLen = Annotated[int, In(0, None, "mergeable buffer truesize in bytes, 0 = as the driver carves it")]
# ... and one buffer on its own: at most one page frag (max_buf_len, checked where the arch is known)
WindowBufLen = Annotated[int, In(1, None, "mergeable buffer truesize in bytes, at most one page frag")]
# The three views of one packet, in tab order: (key, tab label).
PACKET_VIEWS = (("buffer", "receive buffer"), ("skb", "sk_buff"), ("paths", "same packet, older kernel"))


# --------------------------------------------------------------------------------------------------
# Plain state functions (tested without a frontend)

@public
def control_notes(*, mode: str, mtu: int, kernel: str, arch: str, xdp: bool, buf_len: int) -> list[str]:
    """Why a control of the packet panel changes nothing in the figure for these settings (shown in the panel)."""
    check_choice("mode", mode, rx.MODES, "virtio-net receive modes", function="widgets.rxpanels.control_notes")
    notes = []
    if buf_len and mode != "mergeable":
        try:  # the model's own reason: it refuses a pinned buffer in small and big mode
            rx.receive(0, mode=mode, mtu=mtu, kernel=kernel, arch=arch, xdp=xdp, buf_len=buf_len)
        except ValueError as e:
            notes.append(f"buffer truesize {buf_len} B has no effect in {mode} mode ({e}); the panel uses the "
                         "driver's buffer")
    if xdp and mode == "mergeable":
        k, a = kernel_profile(kernel), arch_profile(arch, kernel)
        if k.rule("xdp_pass_path") == "build_skb_from_xdp_buff":
            notes.append(f"XDP on {kernel}: XDP_PASS goes through build_skb_from_xdp_buff() (6.3+), not "
                         "page_to_skb()'s tailroom test, so the buffer truesize and the MTU do not change the path")
        elif k.rule("xdp_truesize") == "page_size":
            notes.append(f"XDP on {kernel}: page_to_skb() counts PAGE_SIZE ({a.page_size} B) as the truesize of a "
                         "buffer with XDP headroom, so neither the buffer truesize nor the MTU moves the tailroom; "
                         "the MTU only sets the payload range")
    return notes


def _receive(payload_len: int, l4: str, mtu: int, mode: str, kernel: str, arch: str, xdp: bool,
             buf_len: int) -> rx.RxResult:
    # buf_len 0 means "as the driver carves it"; small and big mode size their buffers themselves (control_notes).
    return rx.receive(payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                      buf_len=(buf_len or None) if mode == "mergeable" else None)


def _copied_notes(buf_len: int, mode: str, results: list[rx.RxResult]) -> list[str]:
    """Why a pinned buffer truesize changes no sk_buff shown: each frame was copied whole (page_to_skb: a frame of
    at most GOOD_COPY_LEN goes into the new head, no frag of the buffer)."""
    if not buf_len or mode != "mergeable" or any(r.path != "copy" for r in results):
        return []
    return [f"buffer truesize {buf_len} B does not change this sk_buff: page_to_skb() copied the whole frame "
            f"(len <= GOOD_COPY_LEN {rx.GOOD_COPY_LEN}) into a new head, so none of the buffer is in it (the "
            "receive buffer view shows the buffer)"]


def _summary(r: rx.RxResult, notes: list[str] = ()) -> str:
    return (f"<b>{r.path}</b> &mdash; {html.escape(r.reason)}<br>skb: {html.escape(r.skb.describe())}"
            + "".join(f"<br><i>{html.escape(n)}</i>" for n in r.notes)
            + "".join(f"<br><b>Note:</b> {html.escape(n)}" for n in notes))


@public
def buffer_panel_state(*, payload_len: PayloadLen = 1000, l4: str = "udp", mtu: Mtu = 1500, mode: str = "mergeable",
                       kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: BufLen = 0,
                       fig: Figure | None = None) -> PanelState:
    """rx.receive() for one packet and memory.draw_rx_buffer() of its first receive buffer."""
    r = _receive(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    notes = control_notes(mode=mode, mtu=mtu, kernel=kernel, arch=arch, xdp=xdp, buf_len=buf_len)
    figure = memory.draw_rx_buffer(r, l4=l4, mtu=mtu, fig=fig)
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                           buf_len=buf_len), figure, _summary(r, notes), r, extra={"notes": notes})


@public
def skb_panel_state(*, payload_len: PayloadLen = 1000, l4: str = "udp", mtu: Mtu = 1500, mode: str = "mergeable",
                    kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: BufLen = 0,
                    fig: Figure | None = None) -> PanelState:
    """rx.receive() for one packet and memory.draw_skb() of the sk_buff it produced."""
    r = _receive(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    notes = control_notes(mode=mode, mtu=mtu, kernel=kernel, arch=arch, xdp=xdp, buf_len=buf_len)
    notes += _copied_notes(buf_len, mode, [r])
    figure = memory.draw_skb(r, mtu=mtu, fig=fig)
    text = _summary(r, notes) + "".join(f"<br>{html.escape(line)}" for line in memory.skb_caption(r))
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                           buf_len=buf_len), figure, text, r, extra={"notes": notes})


@public
def paths_panel_state(*, payload_len: PayloadLen = 1000, l4: str = "udp", mtu: Mtu = 1500, mode: str = "mergeable",
                      kernel: str = DEFAULT_KERNEL, old_kernel: str = OLD_KERNEL, arch: str = DEFAULT_ARCH,
                      xdp: bool = False, buf_len: BufLen = 0, fig: Figure | None = None) -> PanelState:
    """The same packet on two kernels: memory.draw_paths_side_by_side()."""
    kw: dict[str, Any] = dict(mtu=mtu, mode=mode, arch=arch, xdp=xdp,
                              buf_len=(buf_len or None) if mode == "mergeable" else None)
    results = [rx.receive(payload_len, l4=l4, kernel=k, **kw) for k in (old_kernel, kernel)]
    notes = [n for k in dict.fromkeys((old_kernel, kernel))
             for n in control_notes(mode=mode, mtu=mtu, kernel=k, arch=arch, xdp=xdp, buf_len=buf_len)]
    notes += _copied_notes(buf_len, mode, results)
    figure = memory.draw_paths_side_by_side(payload_len, kernels=(old_kernel, kernel), l4=l4, fig=fig, **kw)
    r0 = results[0]
    text = (f"{payload_len} B {l4.upper()} payload (frame {r0.frame_len} B), {r0.mode} mode, {r0.arch}; "
            "each row has one byte scale for both kernels.<br>") + "<br>".join(
        f"kernel {r.kernel}: <b>{r.path}</b>, skb->truesize {r.skb.truesize} B, nr_frags {r.skb.nr_frags} &mdash; "
        f"{html.escape(r.reason)}" for r in results) + "".join(f"<br><b>Note:</b> {html.escape(n)}" for n in notes)
    return PanelState(dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, old_kernel=old_kernel,
                           arch=arch, xdp=xdp, buf_len=buf_len), figure, text, results, extra={"notes": notes})


_VIEW_STATES = {"buffer": buffer_panel_state, "skb": skb_panel_state, "paths": paths_panel_state}


@public
def packet_panel_state(*, view: str = "buffer", payload_len: PayloadLen = 1000, l4: str = "udp", mtu: Mtu = 1500,
                       mode: str = "mergeable", kernel: str = DEFAULT_KERNEL, old_kernel: str = OLD_KERNEL,
                       arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: BufLen = 0,
                       fig: Figure | None = None) -> PanelState:
    """One packet, one of its :data:`PACKET_VIEWS`: the receive buffer, the sk_buff, or the same packet on
    ``old_kernel`` beside ``kernel``."""
    if view not in _VIEW_STATES:
        raise ValueError(f"view must be one of {list(_VIEW_STATES)} ({', '.join(n for _, n in PACKET_VIEWS)}), "
                         f"got {view!r}")
    kw: dict[str, Any] = dict(payload_len=payload_len, l4=l4, mtu=mtu, mode=mode, kernel=kernel, arch=arch, xdp=xdp,
                              buf_len=buf_len, fig=fig)
    if view == "paths":
        kw["old_kernel"] = old_kernel
    st = _VIEW_STATES[view](**kw)
    st.params.update(view=view, old_kernel=old_kernel)
    return st


@public
def threshold_panel_state(*, kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False,
                          hdr_len: int = 12, fig: Figure | None = None) -> PanelState:
    """thresholds.draw_threshold_map() for one kernel and arch (XDP: headroom VIRTIO_XDP_HEADROOM)."""
    headroom = rx.VIRTIO_XDP_HEADROOM if xdp else 0
    figure = thresholds.draw_threshold_map(kernel, arch, hdr_len=hdr_len, headroom=headroom, fig=fig)
    a = arch_profile(arch, kernel)
    text = (thresholds.map_legend_html()
            + f"<br>NET_IP_ALIGN {a.net_ip_align}, SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {a.shinfo_size} B, "
            f"hdr_len {hdr_len} B" + (f", XDP headroom {headroom} B" if headroom else "")
            + "<br>dashed: the " + "/".join(str(t) for t in thresholds.marked_buffers(kernel, arch, xdp=xdp))
            + " B buffers add_recvbuf_mergeable carves" + (" with an XDP program" if xdp else "") + "; dotted: "
            + ", ".join(html.escape(label.replace("\n", " ")) + f" = frame {f} B"
                        for f, label in thresholds.MARKED_FRAMES))
    if xdp and kernel_profile(kernel).rule("xdp_pass_path") != "page_to_skb":
        text += (f"<br>Note: kernel {kernel} hands XDP_PASS buffers to build_skb_from_xdp_buff(), not page_to_skb(); "
                 "the map shows page_to_skb()'s rule only.")
    return PanelState(dict(kernel=kernel, arch=arch, xdp=xdp, hdr_len=hdr_len), figure, text)


@public
def window_panel_state(*, buf_len: WindowBufLen = 1536, l4: str = "udp", kernel: str = DEFAULT_KERNEL,
                       arch: str = DEFAULT_ARCH, fig: Figure | None = None) -> PanelState:
    """thresholds.draw_path_vs_payload(): the path against the payload for one buffer truesize (at most one page
    frag: :func:`max_buf_len`)."""
    check_int("buf_len", buf_len, 1, max_buf_len(arch, kernel),
              "a mergeable buffer lies in one page frag: skb_page_frag_refill's 32 KiB (SKB_FRAG_PAGE_ORDER) or one "
              f"{arch} page, whichever is larger", function="widgets.rxpanels.window_panel_state")
    sweep = thresholds.payload_sweep(buf_len, l4=l4, kernel=kernel, arch=arch)
    figure = thresholds.draw_path_vs_payload(buf_len, l4=l4, kernel=kernel, arch=arch, fig=fig)
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


@public
def carving_panel_state(*, kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, mtu: int = 1500,
                        xdp: bool = False, avg_pkt_len: AvgPktLen = 0, fig: Figure | None = None) -> PanelState:
    """thresholds.draw_mergeable_carving(): add_recvbuf_mergeable's buffers as the kernel's rx allocator carves them
    (a 32 KiB page frag and a 4 KiB page up to 6.18; a page_pool page on 7.x)."""
    # frag_size=None: the kernel's own rx memory (rx.rx_page_allocator): order-3 frag, larger page or page_pool
    lens = rx.mergeable_buf_lens(8, avg_pkt_len=avg_pkt_len, mtu=mtu, frag_size=None, xdp=xdp, kernel=kernel,
                                 arch=arch)
    figure = thresholds.draw_mergeable_carving(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len,
                                               fig=fig)
    caption = thresholds.carving_caption(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len)
    caption.append(carving_mtu_note())
    return PanelState(dict(kernel=kernel, arch=arch, mtu=mtu, xdp=xdp, avg_pkt_len=avg_pkt_len), figure,
                      f"first buffers' truesize: {lens}" + "".join(f"<br>{html.escape(c)}" for c in caption), lens)


@public
def carving_mtu_note() -> str:
    """Why the carving panel has no MTU control: the MTU enters add_recvbuf_mergeable only through
    mergeable_min_buf_len, which is GOOD_PACKET_LEN for every MTU with the default receive ring."""
    lo = rx.mergeable_min_buf_len(mtu=rx.ETH_DATA_LEN)
    hi = rx.mergeable_min_buf_len(mtu=IP_MAX_MTU, big_packets=True)
    same = lo == hi == rx.GOOD_PACKET_LEN
    return ("No MTU control: the MTU reaches add_recvbuf_mergeable() only through mergeable_min_buf_len() "
            f"(DIV_ROUND_UP(hdr_len + ETH_HLEN + VLAN_HLEN + packet_len, ring size {rx.RX_QUEUE_SIZE}) - hdr_len, "
            f"at least GOOD_PACKET_LEN {rx.GOOD_PACKET_LEN}), which is {lo} B at MTU {rx.ETH_DATA_LEN} and "
            f"{hi} B at {IP_MAX_MTU}" + ("; the buffers follow the EWMA of received lengths instead" if same else ""))


# --------------------------------------------------------------------------------------------------
# Slider ranges that fit the topic (typed values beyond them still reach the model, which says why it refuses)

@public
def max_payload(mtu: Annotated[int, MTU], l4: str) -> int:
    """The largest IPv4 payload of a packet that fits the MTU unsegmented: mtu − iphdr − L4 header."""
    check_choice("l4", l4, rx.L4_HDR_LEN, "the L4 header the payload follows", function="widgets.rxpanels.max_payload")
    return max(0, mtu - rx.IP_HLEN[4] - rx.L4_HDR_LEN[l4])


@public
def max_buf_len(arch: str, kernel: str) -> int:
    """The largest mergeable buffer truesize: add_recvbuf_mergeable carves buffers from one page frag and gives
    the last one the frag's rest, so none exceeds the frag: max(SKB_FRAG_PAGE_SIZE, PAGE_SIZE) (include/net/sock.h
    SKB_FRAG_PAGE_ORDER = get_order(32768), docs/kernel/arch.md#b3)."""
    return max(rx.SKB_FRAG_PAGE_SIZE, arch_profile(arch, kernel).page_size)


def _buffer_range(arch: str, kernel: str) -> tuple[int, int, int]:
    """Buffer truesize: 0 (as the driver carves) up to a page, in steps of L1_CACHE_BYTES (get_mergeable_buf_len
    aligns every buffer to it)."""
    a = arch_profile(arch, kernel)
    return 0, a.page_size, a.l1_cache_bytes


def _packet_controls(payload_len: int, l4: str, mtu: int, mode: str, kernel: str, arch: str, xdp: bool,
                     buf_len: int) -> dict[str, W.DOMWidget]:
    lo, hi, step = _buffer_range(arch, kernel)
    return {
        "payload_len": size_slider(payload_len, 0, max_payload(mtu, l4), f"{l4.upper()} payload (B)"),
        "mtu": size_slider(mtu, MTU.lo, JUMBO_MTU, "MTU (B)"),
        "buf_len": size_slider(buf_len, lo, hi, "buffer truesize (B, 0 = driver's)", step=step, width="520px"),
        "l4": choice(l4, ("udp", "tcp"), "L4"),
        "mode": choice(mode, rx.MODES, "mode"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "xdp": checkbox(xdp, "XDP program"),
    }


def _follow_packet(panel: Panel) -> None:
    """Payload range follows MTU and L4; buffer truesize steps follow the arch's L1_CACHE_BYTES and page."""
    c = panel.controls
    payload: SizeSlider = c["payload_len"]  # type: ignore[assignment]
    try:
        payload.set_range(0, max_payload(c["mtu"].value, c["l4"].value))
        lo, hi, step = _buffer_range(c["arch"].value, c["kernel"].value)
    except ValueError:
        return  # a typed MTU or a kernel/arch pair the model refuses: it says why when the panel updates
    payload.slider.description = f"{c['l4'].value.upper()} payload (B)"
    c["buf_len"].set_range(lo, hi, step)  # type: ignore[attr-defined]
    pinned_ok = c["mode"].value == "mergeable"  # small and big mode size every buffer themselves
    c["buf_len"].slider.disabled = c["buf_len"].readout.disabled = not pinned_ok  # type: ignore[attr-defined]
    if "view" in c and "old_kernel" in c:
        c["old_kernel"].layout.display = None if c["view"].value == "paths" else "none"


@public
def packet_panel(*, view: str = "buffer", payload_len: int = 1000, l4: str = "udp", mtu: int = 1500,
                 mode: str = "mergeable", kernel: str = DEFAULT_KERNEL, old_kernel: str = OLD_KERNEL,
                 arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: int = 0) -> Panel:
    """One packet, one row of controls, three views that all follow it (tabs above the figure): the receive
    buffer page_to_skb() tests, the sk_buff it builds, and the same packet on an older kernel (``old_kernel``,
    shown in that view) beside ``kernel``."""
    controls = _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    controls["old_kernel"] = choice(old_kernel, known_kernels(), "older kernel")
    controls["view"] = W.ToggleButtons(value=view, options=[(label, key) for key, label in PACKET_VIEWS],
                                       style={"button_width": "auto"}, layout=W.Layout(width="auto"))
    rows = [["payload_len", "mtu"], ["buf_len", "l4", "mode"], ["kernel", "old_kernel", "arch", "xdp"], ["view"]]
    return Panel(packet_panel_state, controls, rows=rows, figure_key=lambda p: p["view"], constrain=_follow_packet)


_PACKET_ROWS = [["payload_len", "mtu"], ["buf_len", "l4", "mode"], ["kernel", "arch", "xdp"]]


@public
def buffer_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                 kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: int = 0) -> Panel:
    """The receive buffer (draw_rx_buffer) alone; :func:`packet_panel` shows it with the other views."""
    return Panel(buffer_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                 rows=_PACKET_ROWS, constrain=_follow_packet)


@public
def skb_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
              kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False, buf_len: int = 0) -> Panel:
    """The resulting sk_buff (draw_skb) alone; :func:`packet_panel` shows it with the other views."""
    return Panel(skb_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                 rows=_PACKET_ROWS, constrain=_follow_packet)


@public
def paths_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                kernel: str = DEFAULT_KERNEL, old_kernel: str = OLD_KERNEL, arch: str = DEFAULT_ARCH,
                xdp: bool = False, buf_len: int = 0) -> Panel:
    """The same packet on two kernels side by side (draw_paths_side_by_side) alone."""
    controls = _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    controls["old_kernel"] = choice(old_kernel, known_kernels(), "older kernel")
    rows = [["payload_len", "mtu"], ["buf_len", "l4", "mode"], ["kernel", "old_kernel", "arch", "xdp"]]
    return Panel(paths_panel_state, controls, rows=rows, constrain=_follow_packet)


def _hdr_lens(kernel: str) -> list[int]:
    """The virtio-net header sizes ``kernel`` can negotiate (virtnet_probe; profile rule vnet_hdr_lens)."""
    return sorted(kernel_profile(kernel).rule("vnet_hdr_lens"))


def _follow_hdr_lens(panel: Panel) -> None:
    """hdr_len offers what the chosen kernel negotiates (24, the UDP tunnel header, only where it exists); a size
    the new kernel lacks moves to the MRG_RXBUF header."""
    c = panel.controls
    try:
        lens = _hdr_lens(c["kernel"].value)
    except ValueError:
        return
    box = c["hdr_len"]
    if list(box.options) != lens:
        keep = box.value if box.value in lens else rx.MRG_RXBUF_HDR_LEN if rx.MRG_RXBUF_HDR_LEN in lens else lens[0]
        box.options = lens
        box.value = keep


@public
def threshold_panel(*, kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False,
                    hdr_len: int = rx.MRG_RXBUF_HDR_LEN) -> Panel:
    """The path map over frame length x buffer truesize for a chosen kernel and arch."""
    rx.check_hdr_len(hdr_len, kernel_profile(kernel))  # the dropdown offers only what the kernel negotiates
    return Panel(threshold_panel_state, {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "xdp": checkbox(xdp, "XDP headroom"),
        "hdr_len": choice(hdr_len, _hdr_lens(kernel), "hdr_len (B)"),
    }, constrain=_follow_hdr_lens)


# The window panel's slider spans the mergeable buffers the topic is about (the 1536-byte floor, the 2048 and 2560
# hole buffers, up to the 4 KiB page get_mergeable_buf_len clamps to): a drag moves one cache line every few pixels.
WINDOW_SLIDER_RANGE = (512, 4096)


@public
def window_slider_range(arch: str, kernel: str) -> tuple[int, int, int]:
    """(lo, hi, step) of the window panel's buffer slider: :data:`WINDOW_SLIDER_RANGE` in L1_CACHE_BYTES steps
    (get_mergeable_buf_len aligns every buffer to it); any other truesize can be typed in the box."""
    step = _buffer_range(arch, kernel)[2]
    lo, hi = WINDOW_SLIDER_RANGE
    return -(-lo // step) * step, hi // step * step, step


def _follow_arch(panel: Panel) -> None:
    """Buffer truesize steps by the arch's L1_CACHE_BYTES."""
    c = panel.controls
    try:
        lo, hi, step = window_slider_range(c["arch"].value, c["kernel"].value)
    except ValueError:
        return
    c["buf_len"].set_range(lo, hi, step)  # type: ignore[attr-defined]


@public
def window_panel(*, buf_len: int = 1536, l4: str = "udp", kernel: str = DEFAULT_KERNEL,
                 arch: str = DEFAULT_ARCH) -> Panel:
    """The path against the payload for one buffer truesize (the 87..1162 window at 1536 B)."""
    lo, hi, step = window_slider_range(arch, kernel)
    return Panel(window_panel_state, {
        "buf_len": size_slider(buf_len, lo, hi, f"buffer truesize (B, slider {lo}..{hi}; type others)", step=step,
                               width="560px"),
        "l4": choice(l4, ("udp", "tcp"), "L4"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
    }, rows=[["buf_len", "l4"], ["kernel", "arch"]], constrain=_follow_arch)


def _follow_page(panel: Panel) -> None:
    """The EWMA slider spans 0..PAGE_SIZE: get_mergeable_buf_len clamps the average to it."""
    c = panel.controls
    try:
        page = arch_profile(c["arch"].value, c["kernel"].value).page_size
    except ValueError:
        return
    c["avg_pkt_len"].set_range(0, page)  # type: ignore[attr-defined]


@public
def carving_panel(*, kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH, xdp: bool = False,
                  avg_pkt_len: int = 0) -> Panel:
    """add_recvbuf_mergeable's carving of a 32 KiB frag and a 4 KiB page (no MTU control: carving_mtu_note)."""
    page = arch_profile(arch, kernel).page_size
    return Panel(carving_panel_state, {
        "avg_pkt_len": size_slider(avg_pkt_len, 0, page, "EWMA packet length (B)"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "xdp": checkbox(xdp, "XDP program"),
    }, constrain=_follow_page)
