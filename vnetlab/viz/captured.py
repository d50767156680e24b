"""Real skbs beside the model's, to scale, and the running kernel's layout in the workbook's receive-buffer figure.

- :func:`draw_capture`: each distinct captured skb (a tracepoint, pwru or retis event) as two rows to the same byte
  scale, the kernel's above the model's: the linear part (len - data_len) and the paged part (data_len), then
  skb->truesize, the model's split as the allocators charged it (:func:`vnetlab.viz.memory.truesize_parts`);
  every field that differs is named in red beside the pair.
- :func:`draw_btf_layout`: :func:`vnetlab.viz.memory.draw_rx_buffer` of one receive buffer computed with the sizes
  the running kernel's BTF gives (:func:`vnetlab.live.btf_layout`), its page_to_skb() test term by term, titled
  with "your kernel says X, the profile says Y".

Every bar is a region whose gid names the skb ("kernel:2:linear", "model:2:truesize:sk_buff") and whose width is
the byte count, so tests check the sizes on the figure.
"""

from __future__ import annotations

from typing import Annotated, Any

from matplotlib.figure import Figure

from vnetlab.checks import In, public
from vnetlab.viz.style import (
    COLORS,
    DPI,
    FAIL_COLOR,
    FIG_WIDTH,
    FONT,
    PASS_COLOR,
    axes_column,
    fast_region,
    reuse_axes,
    wrap_px,
)

__all__ = ["capture_rows", "draw_btf_layout", "draw_capture"]

_ROW = (0.45, 1.05)  # inches: space above a pair (its title), the pair itself
_H = 0.3  # height of one bar (axes units); a pair is kernel len, kernel truesize, model len, model truesize


def _key(c: Any) -> tuple:
    s = c.captured
    return (s.event, s.dev, s.len, s.data_len, s.truesize, s.nr_frags, s.gso_size, s.gso_segs, s.gso_type,
            tuple(str(d) for d in c.diffs), c.model is None)


@public
def capture_rows(capture: Any) -> list[tuple[Any, int]]:
    """The capture's comparisons (:meth:`vnetlab.live.Capture.compare`) with consecutive equal ones folded:
    (comparison, how many in a row)."""
    rows: list[tuple[Any, int]] = []
    for c in capture.compare():
        if rows and _key(rows[-1][0]) == _key(c):
            rows[-1] = (rows[-1][0], rows[-1][1] + 1)
        else:
            rows.append((c, 1))
    return rows


def _bars(ax: Any, who: str, i: int, y: float, length: int, data_len: int | None, truesize: int | None,
          parts: Any = None) -> None:
    linear = length - (data_len or 0)
    ax.text(-0.01, y + _H / 2, who, ha="right", va="center", fontsize=FONT["small"])
    fast_region(ax, f"{who}:{i}:linear", 0, y, linear, _H, color=COLORS["linear"])
    if data_len:
        fast_region(ax, f"{who}:{i}:data_len", linear, y, data_len, _H, color=COLORS["frag"])
    if truesize is None:
        return
    if parts is None:
        fast_region(ax, f"{who}:{i}:truesize", 0, y - _H - 0.05, truesize, _H, color=COLORS["sk_buff"])
        return
    x = 0
    for name, width, color in (("sk_buff", parts.sk_buff, "sk_buff"), ("head", parts.head, "linear"),
                               ("skb_shared_info", parts.shinfo, "skb_shared_info"),
                               ("frags", sum(parts.frags), "frag"), ("frag_list", parts.frag_list, "frag_list")):
        if width:
            fast_region(ax, f"{who}:{i}:truesize:{name}", x, y - _H - 0.05, width, _H, color=COLORS[color])
            x += width


@public
def draw_capture(capture: Any, *, label: str = "", fig: Figure | None = None,
                 max_rows: Annotated[int, In(1, 40, "skbs drawn")] = 12) -> Figure:
    """Each distinct captured skb of ``capture`` (a :class:`vnetlab.live.Capture`, live or recorded) beside the
    model's skb at the same place, to one byte scale; ``label`` (e.g. "recorded on 6.18.44, 2026-12-03") goes
    into the title; disagreeing fields are listed in red on the right."""
    from vnetlab.live.btf import profile_arch_name
    from vnetlab.viz.memory import truesize_parts

    rows = capture_rows(capture)[:max_rows]
    n = max(1, len(rows))
    height = 0.75 + n * sum(_ROW) + 0.1
    fig, axes = reuse_axes(fig, ("capture", n), FIG_WIDTH, height,
                           lambda f: axes_column(f, [_ROW] * n, top=0.75, left=0.012, right=0.62))
    span = 1
    for c, _count in rows:
        s, m = c.captured, c.model or {}
        span = max(span, s.len, s.truesize or 0, m.get("len") or 0, m.get("truesize") or 0)
    for i, (c, count) in enumerate(rows):
        ax = axes[i]
        ax.set_axis_off()
        ax.set_xlim(-0.09 * span, span * 1.01)
        ax.set_ylim(-0.75, 0.75)
        s, m = c.captured, c.model
        _bars(ax, "kernel", i, 0.4, s.len, s.data_len, s.truesize)
        if m is not None:
            skb, parts = m.get("skb"), None
            if skb is not None and getattr(capture, "profile", None):
                parts = truesize_parts(skb, kernel=capture.profile, arch=profile_arch_name())
                parts = parts if parts.total == m.get("truesize") else None  # only a split that adds up
            _bars(ax, "model", i, -0.3 if s.truesize is not None else 0.0, m["len"], m.get("data_len"),
                  m.get("truesize") if s.truesize is not None else None, parts)
        times = f" ×{count}" if count > 1 else ""
        role = capture.role(s.dev) if hasattr(capture, "role") else s.dev
        ax.set_title(f"{s.event} at {s.dev} ({role}){times}: len {s.len}"
                     + (f", truesize {s.truesize} (grey row)" if s.truesize is not None else ""),
                     fontsize=FONT["small"], loc="left", pad=2)
        if m is None:
            verdict, color = "no model of this skb", FAIL_COLOR
        elif c.diffs:
            verdict, color = "DIFFER\n" + "\n".join(str(d) for d in c.diffs), FAIL_COLOR
        else:
            verdict, color = "agree", PASS_COLOR
        if c.unseen:
            verdict += f"\n(tracepoint cannot show {', '.join(c.unseen)})"
        verdict = wrap_px(verdict, 0.35 * FIG_WIDTH * DPI, FONT["small"])
        fig.text(0.635, 1 - (0.75 + i * sum(_ROW) + _ROW[0] + 0.05) / height, verdict, fontsize=FONT["small"],
                 color=color, va="top", ha="left", gid=f"verdict:{i}")
    title = (f"Real skbs beside the model: {getattr(capture, 'experiment', '?')} "
             f"({getattr(capture, 'config', '')}), kernel {getattr(capture, 'kernel', '?')}, model profile "
             f"{getattr(capture, 'profile', '?')}")
    fig.suptitle(title + (f"\n{label}" if label else ""), fontsize=FONT["title"], y=1 - 0.06 / height, va="top")
    fig.text(0.012, 1 - 0.68 / height, "bytes to scale: linear part (len − data_len) blue, paged part (data_len) "
             "orange; truesize below it: sk_buff grey, head blue, skb_shared_info red, frags orange",
             fontsize=FONT["small"], ha="left", va="bottom")
    return fig


@public
def draw_btf_layout(layout: Any, *, payload_len: Annotated[int, In(0, 65507, "UDP payload bytes")] = 1000,
                    profile: str | None = None, fig: Figure | None = None) -> Figure:
    """The receive buffer of a ``payload_len``-byte UDP packet (mergeable, MTU 1500) as page_to_skb() tests it,
    computed with the sizes of ``layout`` (:func:`vnetlab.live.btf_layout`) and the page size and cache line
    of ``profile`` (default: the running kernel's), drawn by :func:`vnetlab.viz.memory.draw_rx_buffer`."""
    from vnetlab import rx
    from vnetlab.viz.memory import draw_rx_buffer

    mine = layout.arch(profile)
    theirs = layout.profile_arch(profile)
    result = rx.receive(payload_len, kernel=mine.kernel, arch=mine)
    fig = draw_rx_buffer(result, mtu=1500, fig=fig)
    said = (f"Your kernel ({layout.kernel}) says sizeof(struct skb_shared_info) {layout.sizeof_skb_shared_info}, "
            f"SKB_DATA_ALIGN {mine.shinfo_size}, MAX_SKB_FRAGS {layout.max_skb_frags}; the profile {theirs.kernel} "
            f"says {theirs.skb_shared_info_size}, {theirs.shinfo_size}, {theirs.max_skb_frags}")
    same = (layout.sizeof_skb_shared_info, mine.shinfo_size, layout.max_skb_frags) == (
        theirs.skb_shared_info_size, theirs.shinfo_size, theirs.max_skb_frags)
    # one more line under the drawing: grow the figure and keep every axes and text where it was, in inches
    w, h = fig.get_size_inches()
    extra = 0.3
    fig.set_size_inches(w, h + extra)
    for ax in fig.axes:
        box = ax.get_position()
        ax.set_position([box.x0, (box.y0 * h + extra) / (h + extra), box.width, box.height * h / (h + extra)])
    for text in fig.texts + ([fig._suptitle] if fig._suptitle is not None else []):
        x, y = text.get_position()
        text.set_position((x, (y * h + extra) / (h + extra)))
    fig.text(0.012, 0.08 / (h + extra), said, fontsize=FONT["small"], color=PASS_COLOR if same else FAIL_COLOR,
             ha="left", va="bottom", gid="btf:said")
    return fig
