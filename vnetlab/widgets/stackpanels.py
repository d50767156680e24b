"""Transmit-side and cost panels: a GSO skb down a device stack (with ethtool -K), the VLAN NAT router, the rx
cost model.

Each ``<name>_panel_state(**params)`` is a plain function (tested without a frontend) returning a PanelState;
``<name>_panel(**initial)`` wraps it in a panel whose figure is redrawn in place as a PNG, shown at the width it
is drawn. Swept sizes (segments, gso_size, payload, costs) are sliders with an editable readout whose ranges
follow the model's limits (the GRO skb's 64 KiB cap, the MTU). Model ValueErrors show as text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab import cost, xmit
from vnetlab.profiles import DEFAULT_KERNEL, known_kernels
from vnetlab.viz import costfig, featuregrid, routerfig, stacks
from vnetlab.widgets.base import Panel, PanelState
from vnetlab.widgets.explorer import (
    EthtoolCommand,
    EthtoolPanel,
    apply_ethtool,
    arrange,
    cache_text_bitmaps,
    dropdown,
    natural_width,
    refusal_html,
)

__all__ = [
    "int_slider", "float_slider",
    "stack_panel_state", "stack_panel",
    "router_panel_state", "router_panel",
    "COST_SLIDERS", "cost_panel_state", "cost_panel",
]

_LABEL_W = "150px"  # slider descriptions: fixed, so every track keeps its width


def int_slider(value: int, lo: int, hi: int, desc: str, *, step: int = 1, width: str = "440px") -> W.IntSlider:
    """A slider with an editable readout (type a number or drag); redraws on release."""
    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=desc, continuous_update=False,
                       readout=True, style={"description_width": _LABEL_W}, layout=W.Layout(width=width))


def float_slider(value: float, lo: float, hi: float, desc: str, *, step: float, fmt: str,
                 width: str = "440px") -> W.FloatSlider:
    return W.FloatSlider(value=value, min=lo, max=hi, step=step, description=desc, continuous_update=False,
                         readout=True, readout_format=fmt, style={"description_width": _LABEL_W},
                         layout=W.Layout(width=width))


def _cap(slider: W.IntSlider, hi: int) -> None:
    """Lower (or raise) a slider's maximum; ipywidgets clamps the value, which fires one change."""
    if slider.max != hi:
        if slider.value > hi:
            slider.value = hi
        slider.max = hi


class _SliderPanel(Panel):
    """A Panel with controls laid out in rows, the PNG at its natural width, and slider maxima that follow
    another control (``caps``: slider name -> (control it follows, function giving the maximum))."""

    def __init__(self, state_fn: Any, controls: dict[str, W.ValueWidget], rows: Sequence[Sequence[str]],
                 caps: dict[str, tuple[str, Any]] | None = None) -> None:
        self.caps = caps or {}
        self._capping = False
        super().__init__(state_fn, controls, fast_text=True)
        cache_text_bitmaps(self)
        arrange(self, rows)
        natural_width(self)

    def _on_change(self, change: dict[str, Any]) -> None:
        if self._capping:
            return
        self._capping = True
        try:
            for name, (follows, fn) in self.caps.items():
                if change["owner"] is self.controls[follows]:
                    _cap(self.controls[name], fn(change["new"]))
        finally:
            self._capping = False
        self.update()
        natural_width(self)


# --------------------------------------------------------------------------------------------------
# A GSO skb down a stack


def stack_panel_state(*, kernel: str = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                      fraglist: bool = True, segs: int = 44, gso_size: int = 1472,
                      ethtool: Sequence[EthtoolCommand] = (), fig: Figure | None = None) -> PanelState:
    """Build the stack (stacks.build_stack), run the ``ethtool`` commands ((device, {ethtool name: on}), in order;
    a fixed feature's command is refused, see explorer.apply_ethtool), send a UDP GRO skb and draw it."""
    st = stacks.build_stack(kernel=kernel, upper=upper, nic=nic)
    applied, refused = apply_ethtool(st, ethtool)
    skb, tx = stacks.send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)
    figure = stacks.draw_stack(st, skb, tx, fig=fig)
    text = "<br>".join([f"segmented at <b>{html.escape(tx.segmented_at or 'no device (hardware GSO or none)')}</b>; "
                        f"<b>{len(tx.segments)}</b> packets on the wire",
                        *(html.escape(str(h)) for h in tx.hops), *refusal_html(applied, refused)])
    grid = featuregrid.feature_grid(st, columns=stacks.STACK_FEATURES, send=False)
    return PanelState(dict(kernel=kernel, upper=upper, nic=nic, fraglist=fraglist, segs=segs, gso_size=gso_size,
                           ethtool=tuple((d, dict(s)) for d, s in ethtool)),
                      figure, text, tx, extra={"stack": st, "skb": skb, "grid": grid, "refused": refused,
                                               "applied": applied})


class _StackPanel(EthtoolPanel):
    """The stack panel: the explorer's ethtool -K toggles, plus segments / gso_size sliders whose range follows
    the GRO skb's cap (xmit.max_gro_segs: 64 KiB, UDP_GRO_CNT_MAX)."""

    def _on_change(self, change: dict[str, Any]) -> None:
        if change["owner"] is self.controls["gso_size"]:
            segs = self.controls["segs"]
            cap = xmit.max_gro_segs(change["new"])
            if segs.max != cap:
                segs.unobserve(self._on_change, names="value")
                try:
                    _cap(segs, cap)
                finally:
                    segs.observe(self._on_change, names="value")
        super()._on_change(change)


def stack_panel(*, kernel: str = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                fraglist: bool = True, segs: int = 44, gso_size: int = 1472) -> EthtoolPanel:
    """A UDP GRO skb down a device stack, with ethtool -K toggles per device and the skb's size as sliders."""
    controls = {
        "kernel": dropdown(kernel, known_kernels(), "kernel"),
        "upper": dropdown(upper, [(k.replace("_", " "), k) for k in stacks.UPPERS], "stacked on the NIC"),
        "nic": dropdown(nic, [(label, k) for k, (label, *_r) in stacks.NICS.items()], "lower device"),
        "fraglist": W.Checkbox(value=fraglist, description="fraglist GRO skb (rx-gro-list)", indent=False,
                               layout=W.Layout(width="260px")),
        "gso_size": int_slider(gso_size, 64, 1472, "gso_size (B per segment)"),
        "segs": int_slider(segs, 1, xmit.max_gro_segs(gso_size), "segments (gso_segs)"),
    }
    return _StackPanel(stack_panel_state, controls, rows=(("kernel", "upper", "nic"), ("fraglist",),
                                                          ("gso_size", "segs")))


# --------------------------------------------------------------------------------------------------
# Router


def router_panel_state(*, kernel: str = stacks.PATCH_KERNELS[0], nic: str = "router", gro: str = "fraglist",
                       upper: str = "vlan", drop_untranslated: bool = False, segs: int = 44, gso_size: int = 1472,
                       fig: Figure | None = None) -> PanelState:
    """The router scenario for one kernel: the stack the GRO skb goes down (left) and the model goodput against
    the seed's 20 Mbps / 1 Gbps (right). ``drop_untranslated``: count only the segments that carry the NATed
    header (before c3df39ac9b0e skb_segment_list left segments 2..N un-NATed)."""
    if upper not in routerfig.ROUTER_UPPERS:
        raise ValueError(f"upper must be one of {routerfig.ROUTER_UPPERS}, got {upper!r}")
    rr, thr = routerfig.router_run(kernel=kernel, nic=nic, gro=gro, upper=upper, segs=segs, gso_size=gso_size,
                                   drop_untranslated=drop_untranslated)
    st = stacks.build_stack(kernel=rr.kernel, upper=upper, nic=nic)
    aggregated = rr.gro_skbs == 1 and rr.packets_in > 1
    skb = xmit.gso_skb(segs=rr.packets_in if aggregated else 1, gso_size=rr.gso_size,
                       fraglist=aggregated and gro == "fraglist")
    figure = routerfig.draw_router_panel(st, skb, rr, thr, fig=fig)
    text = (f"{rr.packets_in} packets in → {rr.gro_skbs} skb(s) routed → <b>{rr.wire_packets}</b> out, segmented at "
            f"<b>{html.escape(rr.segmented_at or 'no device (hardware or none)')}</b>; model goodput "
            f"<b>{thr.goodput_bps / 1e6:,.0f} Mbps</b> ({thr.bound}-bound, {thr.cycles_per_packet:,.0f} cycles/packet"
            f"{f', {rr.nat_translated} of {rr.wire_packets} NATed' if drop_untranslated else ''})"
            + "".join(f"<br><i>{html.escape(n)}</i>" for n in rr.notes))
    return PanelState(dict(kernel=kernel, nic=nic, gro=gro, upper=upper, drop_untranslated=drop_untranslated,
                           segs=segs, gso_size=gso_size), figure, text, rr, extra={"throughput": thr})


def router_panel(*, kernel: str = stacks.PATCH_KERNELS[0], nic: str = "router", gro: str = "fraglist",
                 upper: str = "vlan", segs: int = 44, gso_size: int = 1472) -> Panel:
    """The VLAN NAT router of the GSO_SOFTWARE patch, one kernel at a time."""
    nics = [(label, k) for k, (label, driver, params) in stacks.NICS.items() if driver != "veth" and not params]
    controls = {
        "kernel": dropdown(kernel, known_kernels(), "kernel"),
        "nic": dropdown(nic, nics, "NIC"),
        "gro": dropdown(gro, routerfig.GRO_MODES, "GRO mode"),
        "upper": dropdown(upper, routerfig.ROUTER_UPPERS, "upper device"),
        "drop_untranslated": W.Checkbox(value=False, description="count only NATed segments (before c3df39ac9b0e)",
                                        indent=False, layout=W.Layout(width="380px")),
        "gso_size": int_slider(gso_size, 64, 1472, "gso_size (B per packet)"),
        "segs": int_slider(segs, 1, xmit.max_gro_segs(gso_size), "packets per GRO batch"),
    }
    return _SliderPanel(router_panel_state, controls,
                        rows=(("kernel", "nic"), ("gro", "upper", "drop_untranslated"), ("gso_size", "segs")),
                        caps={"segs": ("gso_size", xmit.max_gro_segs)})


# --------------------------------------------------------------------------------------------------
# Cost model

# slider keyword -> cost.OPS name (ns per operation; memcpy per byte)
COST_SLIDERS = {
    "stack_ns": "stack/udp_no_socket",
    "cache_line_miss_ns": "cache_line_miss",
    "kmalloc_head_ns": "napi_alloc_skb/kmalloc",
    "build_skb_ns": "build_skb",
    "memcpy_byte_ns": "memcpy/byte",
    "gro_receive_ns": "dev_gro_receive",
}


def cost_panel_state(*, kernel: str = "5.13", payload_len: int = 1000, l4: str = "udp",
                     destination: str = "no_socket", fig: Figure | None = None, **op_ns: float) -> PanelState:
    """rx cost per operation for every kernel (``kernel`` highlighted) for one payload size, with costs = the
    2-parameter calibration overridden by the sliders (``stack_ns=...``, see COST_SLIDERS)."""
    unknown = set(op_ns) - set(COST_SLIDERS)
    if unknown:
        raise ValueError(f"unknown cost sliders {sorted(unknown)}; known: {', '.join(COST_SLIDERS)}")
    base = _calibrated()
    c = base.with_values({COST_SLIDERS[k]: float(v) for k, v in op_ns.items() if v is not None}, "cost panel")
    traffic = cost.Traffic(f"{l4.upper()} {payload_len} B, {destination.replace('_', ' ')}", (payload_len,), l4=l4,
                           destination=destination)
    if kernel not in cost.KERNELS:
        raise ValueError(f"kernel={kernel!r}: the cost model knows {', '.join(cost.KERNELS)}")
    figure = costfig.draw_cost_breakdown(traffic, costs=c, highlight=kernel, fig=fig)
    res = costfig.rx_costs(traffic, cost.KERNELS, c)
    r = res[kernel]
    text = (f"kernel {kernel}: <b>{r.ns_per_packet:.0f} ns/packet</b>, {r.pps / 1e3:,.0f} kpps; "
            + ", ".join(f"{g} {r.group_ns(g):.0f} ns" for g in cost.OP_GROUPS)
            + f"; {r.ops.packets_per_gro_skb:.2f} packets per GRO skb")
    return PanelState(dict(kernel=kernel, payload_len=payload_len, l4=l4, destination=destination, **op_ns), figure,
                      text, r, extra={"all": res})


_CAL: list[cost.Costs] = []


def _calibrated() -> cost.Costs:
    # The calibration is deterministic and costs ~0.2 s: computed once per process.
    if not _CAL:
        _CAL.append(cost.calibrate().two_param)
    return _CAL[0]


def cost_panel(*, kernel: str = "5.13", payload_len: int = 1000, l4: str = "udp",
               destination: str = "no_socket") -> Panel:
    """The receive cost model per kernel, with sliders for the payload and the main per-operation costs."""
    base = _calibrated()
    controls: dict[str, W.ValueWidget] = {
        "kernel": dropdown(kernel, cost.KERNELS, "kernel"),
        "l4": dropdown(l4, ("udp", "tcp"), "l4"),
        "destination": dropdown(destination, cost.DESTINATIONS, "destination"),
        "payload_len": int_slider(payload_len, 0, cost.max_payload(l4), "L4 payload (B)"),
    }
    for key, op in COST_SLIDERS.items():
        v = base[op]
        per_byte = "byte" in op
        controls[key] = float_slider(round(v, 3 if per_byte else 1), 0.0, round(max(4 * v, 1.0), 2),
                                     f"{op} (ns{'/B' if per_byte else ''})", step=0.001 if per_byte else 1.0,
                                     fmt=".3f" if per_byte else ".0f")
    keys = list(COST_SLIDERS)
    return _SliderPanel(cost_panel_state, controls,
                        rows=(("kernel", "l4", "destination"), ("payload_len",), *zip(keys[::2], keys[1::2])),
                        caps={"payload_len": ("l4", cost.max_payload)})
