"""Receive-path panels: controls over a plain state function, the figure redrawn in place as a PNG.

Each panel is ``<name>_panel(**initial)`` returning an :class:`RxPanel` (an ipywidgets VBox) whose
figure is rendered to PNG bytes into an ``ipywidgets.Image``: no interactive backend is needed, so the
same code runs in JupyterLab, in nbval and headless. The computation is ``<name>_panel_state(**params)``,
a plain function that returns a :class:`PanelState` and raises the model's ValueError on bad input; the
panel shows that error's text instead of a traceback.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

from vnetlab import rx
from vnetlab.profiles import arch as arch_profile
from vnetlab.profiles import kernel as kernel_profile
from vnetlab.profiles import known_arches, known_kernels
from vnetlab.viz import memory, thresholds
from vnetlab.viz.style import new_figure

__all__ = [
    "PanelState", "RxPanel",
    "buffer_panel_state", "buffer_panel",
    "skb_panel_state", "skb_panel",
    "paths_panel_state", "paths_panel",
    "threshold_panel_state", "threshold_panel",
    "window_panel_state", "window_panel",
    "carving_panel_state", "carving_panel",
    "render_png",
]


@dataclass
class PanelState:
    """What a panel shows for one set of parameters: the model result, the figure and a one-line summary."""

    params: dict[str, Any]
    figure: Figure
    text: str
    result: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


# Widget PNGs only: unhinted glyphs lay out and render faster, and text is most of a redraw's time (the static
# figures keep the vnetlab style as is).
WIDGET_RC = {"text.hinting": "no_hinting"}


class _WholeStringRenderer(RendererAgg):
    """RendererAgg drawing each horizontal plain-text string as one FreeType bitmap, as matplotlib <= 3.10 did.

    matplotlib 3.11 renders text glyph by glyph from Python (a few hundred microseconds per character on this
    machine), which is most of a panel redraw. Used for the receive-path panels' PNGs only, on the matplotlib
    versions it was checked against; math text, rotated text and any failure take matplotlib's own path.
    """

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or angle:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        try:
            font = self._prepare_font(prop)
            font.set_text(s, 0, flags=get_hinting_flag())
            font.draw_glyphs_to_bitmap(antialiased=gc.get_antialiased())
            descent = font.get_descent() / 64.0
            xo, yo = font.get_bitmap_offset()
            image = np.asarray(font.get_image())
            self._renderer.draw_text_image(image, round(x + xo / 64.0), round(y + yo / 64.0 + descent) + 1, 0, gc)
        except (AttributeError, TypeError, ValueError):
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)


class _WidgetCanvas(FigureCanvasAgg):
    """An Agg canvas with :class:`_WholeStringRenderer` (kept on the figure, so text metrics stay cached)."""

    def get_renderer(self):
        w, h = self.figure.bbox.size
        key = w, h, self.figure.dpi
        if getattr(self, "_lastKey", None) != key or not isinstance(getattr(self, "renderer", None),
                                                                     _WholeStringRenderer):
            self.renderer = _WholeStringRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer


# Checked on matplotlib 3.11 (earlier versions draw whole strings themselves).
FAST_TEXT = matplotlib.__version__.startswith("3.11.") and all(
    hasattr(FT2Font, name) for name in ("set_text", "draw_glyphs_to_bitmap", "get_image", "get_bitmap_offset"))


def render_png(fig: Figure, *, fast_text: bool = False) -> bytes:
    """The figure as deterministic PNG bytes (Agg, no timestamp metadata).

    ``fast_text`` (the receive-path panels): draw each string as one bitmap (see :class:`_WholeStringRenderer`).
    """
    if fast_text and FAST_TEXT and not isinstance(fig.canvas, _WidgetCanvas):
        _WidgetCanvas(fig)
    elif not isinstance(fig.canvas, FigureCanvasAgg):
        # Keep one Agg canvas on the figure: savefig would otherwise make a new canvas and renderer for every PNG,
        # and matplotlib's text-metrics cache (keyed on the renderer) would miss for every label at every update.
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    # compress_level 1: a widget PNG is shown once; fast encoding matters more than a few KB.
    fig.savefig(buf, format="png", dpi=fig.dpi, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


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

class RxPanel(W.VBox):
    """Controls, a summary line and the figure (PNG in an ipywidgets.Image), redrawn in place on change."""

    def __init__(self, state_fn: Callable[..., PanelState], controls: dict[str, W.ValueWidget], *,
                 width: str = "100%", fast_text: bool = False) -> None:
        self.state_fn = state_fn
        self.fast_text = fast_text
        self.controls = controls
        self.figure = new_figure()
        self.image = W.Image(format="png", layout=W.Layout(width=width, height="auto"))
        self.message = W.HTML()
        self.state: PanelState | None = None
        self.error: str | None = None
        boxes = [W.HBox(list(controls.values())[i:i + 4]) for i in range(0, len(controls), 4)]
        super().__init__(boxes + [self.message, self.image])
        for c in controls.values():
            c.observe(self._on_change, names="value")
        self.update()

    def params(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> PanelState | None:
        """Recompute and redraw; a ValueError from the model is shown as text and the figure is hidden."""
        with matplotlib.rc_context(WIDGET_RC):
            return self._update()

    def _update(self) -> PanelState | None:
        try:
            state = self.state_fn(**self.params(), fig=self.figure)
        except ValueError as exc:
            self.error = str(exc)
            self.state = None
            self.message.value = f'<span style="color:#b42318">{html.escape(self.error)}</span>'
            self.image.layout.display = "none"
            return None
        self.error = None
        self.state = state
        self.message.value = state.text
        self.image.value = render_png(state.figure, fast_text=self.fast_text)
        self.image.layout.display = None
        return state


def _int(value: int, lo: int, hi: int, desc: str, step: int = 1) -> W.BoundedIntText:
    return W.BoundedIntText(value=value, min=lo, max=hi, step=step, description=desc,
                            style={"description_width": "initial"}, layout=W.Layout(width="210px"))


def _choice(value: Any, options, desc: str) -> W.Dropdown:
    return W.Dropdown(value=value, options=list(options), description=desc, style={"description_width": "initial"},
                      layout=W.Layout(width="210px"))


def _packet_controls(payload_len: int, l4: str, mtu: int, mode: str, kernel: str, arch: str, xdp: bool,
                     buf_len: int) -> dict[str, W.ValueWidget]:
    # Wide ranges on purpose: the model, not the widget, says what is out of range and why.
    return {
        "payload_len": _int(payload_len, -1, rx.IP_MAX_MTU, "payload (B)"),
        "l4": _choice(l4, ("udp", "tcp"), "l4"),
        "mtu": _int(mtu, 1, rx.IP_MAX_MTU, "MTU (B)"),
        "mode": _choice(mode, rx.MODES, "mode"),
        "kernel": _choice(kernel, known_kernels(), "kernel"),
        "arch": _choice(arch, known_arches(), "arch"),
        "xdp": W.Checkbox(value=xdp, description="XDP program", indent=False, layout=W.Layout(width="210px")),
        "buf_len": _int(buf_len, 0, 1 << 22, "buffer truesize (B, 0 = driver)", step=64),
    }


def buffer_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                 kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0) -> RxPanel:
    """The receive buffer (draw_rx_buffer) for a packet chosen with the controls."""
    return RxPanel(buffer_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                   fast_text=True)


def skb_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
              kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, buf_len: int = 0) -> RxPanel:
    """The resulting sk_buff (draw_skb) for a packet chosen with the controls."""
    return RxPanel(skb_panel_state, _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len),
                   fast_text=True)


def paths_panel(*, payload_len: int = 1000, l4: str = "udp", mtu: int = 1500, mode: str = "mergeable",
                kernel: str = "6.1", old_kernel: str = "5.12", arch: str = "x86_64", xdp: bool = False,
                buf_len: int = 0) -> RxPanel:
    """The same packet in two kernels side by side (draw_paths_side_by_side)."""
    controls = _packet_controls(payload_len, l4, mtu, mode, kernel, arch, xdp, buf_len)
    controls["old_kernel"] = _choice(old_kernel, known_kernels(), "compare with kernel")
    return RxPanel(paths_panel_state, controls, fast_text=True)


def threshold_panel(*, kernel: str = "6.1", arch: str = "x86_64", xdp: bool = False, hdr_len: int = 12) -> RxPanel:
    """The path map over frame length x buffer truesize for a chosen kernel and arch."""
    return RxPanel(threshold_panel_state, {
        "kernel": _choice(kernel, known_kernels(), "kernel"),
        "arch": _choice(arch, known_arches(), "arch"),
        "xdp": W.Checkbox(value=xdp, description="XDP headroom", indent=False, layout=W.Layout(width="210px")),
        "hdr_len": _choice(hdr_len, sorted(rx.VNET_HDR_STRUCTS), "hdr_len (B)"),
    }, fast_text=True)


def window_panel(*, buf_len: int = 1536, l4: str = "udp", kernel: str = "6.1", arch: str = "x86_64") -> RxPanel:
    """The path against the payload for one buffer truesize (the 87..1162 window at 1536 B)."""
    return RxPanel(window_panel_state, {
        "buf_len": _int(buf_len, 0, 65536, "buffer truesize (B)", step=64),
        "l4": _choice(l4, ("udp", "tcp"), "l4"),
        "kernel": _choice(kernel, known_kernels(), "kernel"),
        "arch": _choice(arch, known_arches(), "arch"),
    }, fast_text=True)


def carving_panel(*, kernel: str = "6.1", arch: str = "x86_64", mtu: int = 1500, xdp: bool = False,
                  avg_pkt_len: int = 0) -> RxPanel:
    """add_recvbuf_mergeable's carving of a 32 KiB frag and a 4 KiB page."""
    return RxPanel(carving_panel_state, {
        "kernel": _choice(kernel, known_kernels(), "kernel"),
        "arch": _choice(arch, known_arches(), "arch"),
        "mtu": _int(mtu, 1, rx.IP_MAX_MTU, "MTU (B)"),
        "xdp": W.Checkbox(value=xdp, description="XDP program", indent=False, layout=W.Layout(width="210px")),
        "avg_pkt_len": _int(avg_pkt_len, 0, rx.IP_MAX_MTU, "EWMA pkt len (B)"),
    }, fast_text=True)
