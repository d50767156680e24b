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
from typing import Annotated, Any

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab import cost, segment, xmit
from vnetlab.checks import In, check_int, public
from vnetlab.profiles import DEFAULT_KERNEL, known_kernels
from vnetlab.stack import (
    NICS,
    PATCH_KERNELS,
    STACK_FEATURES,
    UPPERS,
    GroSegs,
    GsoSize,
    build_stack,
    feature_grid,
    send_gso,
)
from vnetlab.virtio import PayloadLen
from vnetlab.viz import costfig, routerfig, stacks
from vnetlab.widgets.base import Panel, PanelState, checkbox, choice, float_slider, size_slider
from vnetlab.widgets.explorer import EthtoolCommand, EthtoolPanel, apply_ethtool, refusal_html

__all__ = [
    "stack_panel_state", "stack_panel",
    "router_panel_state", "router_panel",
    "COST_SLIDERS", "cost_panel_state", "cost_panel",
]

def _segs_cap(panel: Panel) -> None:
    """segments follow gso_size: what one GRO skb holds (segment.max_gro_segs: 64 KiB, UDP_GRO_CNT_MAX)."""
    try:
        cap = segment.max_gro_segs(panel.controls["gso_size"].value)
    except ValueError:
        return  # a typed gso_size the model refuses: the panel's update shows its message
    panel.controls["segs"].set_range(1, cap)


# --------------------------------------------------------------------------------------------------
# A GSO skb down a stack


@public
def stack_panel_state(*, kernel: str = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                      fraglist: bool = True, segs: GroSegs = 44, gso_size: GsoSize = 1472,
                      ethtool: Sequence[EthtoolCommand] = (), fig: Figure | None = None) -> PanelState:
    """Build the stack (vnetlab.stack.build_stack), run the ``ethtool`` commands ((device, {ethtool name: on}), in
    order; a fixed feature's command is refused, see explorer.apply_ethtool), send a UDP GRO skb and draw it."""
    st = build_stack(kernel=kernel, upper=upper, nic=nic)
    applied, refused = apply_ethtool(st, ethtool)
    skb, tx = send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)
    figure = stacks.draw_stack(st, skb, tx, fig=fig)
    hops = [f"{h.name} [{h.kind}]: {stacks.hop_text(h)}" + (f" ({h.reason})" if h.reason else "")
            + f"; {h.skbs_in} skb(s) in, {h.skbs_out} out" for h in tx.hops]
    text = "<br>".join([f"<b>{html.escape(stacks.wire_summary(tx))}</b>",
                        *(html.escape(h) for h in hops), *refusal_html(applied, refused)])
    if segs == 1:
        # segment.gso_skb: one packet is no GSO skb (gso_size 0): GRO merged nothing, so nothing is chained
        text += ("<br><b>Note:</b> the fraglist tick changes nothing with 1 segment: GRO hands a lone packet up "
                 "unmerged (gso_size 0, no frag_list), so every device sees one plain packet either way")
    grid = feature_grid(st, columns=STACK_FEATURES, send=False)
    return PanelState(dict(kernel=kernel, upper=upper, nic=nic, fraglist=fraglist, segs=segs, gso_size=gso_size,
                           ethtool=tuple((d, dict(s)) for d, s in ethtool)),
                      figure, text, tx, extra={"stack": st, "skb": skb, "grid": grid, "refused": refused,
                                               "applied": applied})


@public
def stack_panel(*, kernel: str = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                fraglist: bool = True, segs: GroSegs = 44, gso_size: GsoSize = 1472) -> EthtoolPanel:
    """A UDP GRO skb down a device stack, with ethtool -K toggles per device and the skb's size as sliders."""
    controls = {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "upper": choice(upper, [(k.replace("_", " "), k) for k in UPPERS], "stacked on the NIC"),
        "nic": choice(nic, [(label, k) for k, (label, *_r) in NICS.items()], "lower device"),
        "fraglist": checkbox(fraglist, "fraglist GRO skb (rx-gro-list)"),
        "gso_size": size_slider(gso_size, 64, 1472, "gso_size (B per segment)"),
        "segs": size_slider(segs, 1, segment.max_gro_segs(gso_size), "segments (gso_segs)"),
    }
    return EthtoolPanel(stack_panel_state, controls, rows=(("kernel", "upper", "nic"), ("fraglist",),
                                                          ("gso_size", "segs")), constrain=_segs_cap)


# --------------------------------------------------------------------------------------------------
# Router


def _why_all_nated(rr: Any) -> str:
    """Why every datagram of this router leaves with the NATed header (the panel says so when the tick does nothing)."""
    if rr.gro_skbs != 1 or rr.packets_in == 1:
        return "GRO did not aggregate, so NAT rewrote every packet itself"
    if rr.segmented_at is None and rr.received is None:
        return "nothing resegments the GRO skb in software: the NIC's driver takes it whole"
    rule = "udp_gso_list_nat_fix" if rr.ip == 4 else "udp6_gso_list_nat_fix"
    return (f"kernel {rr.kernel} has the NAT fix ({rule}: c3df39ac9b0e for IPv4), so every segment gets the head's "
            "addresses; choose mainline 5.10 to see the lost segments")


@public
def router_panel_state(*, kernel: str = PATCH_KERNELS[0], nic: str = "router", gro: str = "fraglist",
                       upper: str = "vlan", drop_untranslated: bool = False, segs: GroSegs = 44,
                       gso_size: GsoSize = 1472, fig: Figure | None = None) -> PanelState:
    """The router scenario for one kernel: the stack the GRO skb goes down (left) and the model goodput against
    the seed's 20 Mbps / 1 Gbps (right). ``drop_untranslated``: count only the segments that carry the NATed
    header (before c3df39ac9b0e skb_segment_list left segments 2..N un-NATed)."""
    if upper not in routerfig.ROUTER_UPPERS:
        raise ValueError(f"upper must be one of {routerfig.ROUTER_UPPERS}, got {upper!r}")
    rr, thr = routerfig.router_run(kernel=kernel, nic=nic, gro=gro, upper=upper, segs=segs, gso_size=gso_size,
                                   drop_untranslated=drop_untranslated)
    st = rr.stack  # the devices the router sent its skbs down
    aggregated = rr.gro_skbs == 1 and rr.packets_in > 1
    skb = xmit.gso_skb(segs=rr.packets_in if aggregated else 1, gso_size=rr.gso_size,
                       fraglist=aggregated and gro == "fraglist")
    figure = routerfig.draw_router_panel(st, skb, rr, thr, fig=fig)
    text = (f"{rr.packets_in} packets in → {rr.gro_skbs} skb(s) routed → <b>{rr.wire_packets}</b> out, segmented at "
            f"<b>{html.escape(rr.segmented_at or 'no device (hardware or none)')}</b>; model goodput "
            f"<b>{thr.goodput_bps / 1e6:,.0f} Mbps</b> ("
            f"{f'only {rr.nat_translated} of {rr.wire_packets} NATed, ' if thr.translated_fraction < 1 else ''}"
            f"packet rate {thr.bound}-bound, {thr.cycles_per_packet:,.0f} cycles/packet)"
            + (f"<br><b>count only NATed changes nothing here</b>: {html.escape(_why_all_nated(rr))}"
               if drop_untranslated and thr.translated_fraction >= 1 else "")
            + "".join(f"<br><i>{html.escape(n)}</i>" for n in rr.notes)
            + ("" if aggregated else _same_nics_note(rr, thr, kernel=kernel, nic=nic, gro=gro, upper=upper,
                                                      segs=segs, gso_size=gso_size,
                                                      drop_untranslated=drop_untranslated)))
    return PanelState(dict(kernel=kernel, nic=nic, gro=gro, upper=upper, drop_untranslated=drop_untranslated,
                           segs=segs, gso_size=gso_size), figure, text, rr, extra={"throughput": thr})


def _router_nics() -> list[tuple[str, str]]:
    """(label, key) of the NICs the router panel offers: the physical ones, as the NIC defaults them."""
    return [(label, k) for k, (label, driver, params) in NICS.items() if driver != "veth" and not params]


def _same_nics_note(rr: Any, thr: Any, *, nic: str, **run: Any) -> str:  # noqa: ANN401
    """Where GRO merged nothing no NIC takes a GSO skb: name the other NICs that give this very result (they
    differ only in per-packet work, such as inserting the VLAN tag in hardware or in software)."""
    same = [label for label, k in _router_nics() if k != nic
            and (lambda o: (o[0].wire_packets, o[0].segmented_at, o[1].goodput_bps)
                 == (rr.wire_packets, rr.segmented_at, thr.goodput_bps))(routerfig.router_run(nic=k, **run))]
    if not same:
        return ""
    return (f"<br><b>the NIC changes nothing between this one and {html.escape(', '.join(same))}</b>: GRO merged "
            "nothing, so no NIC takes a GSO skb, and the per-packet work left is the same on them")


@public
def router_panel(*, kernel: str = PATCH_KERNELS[0], nic: str = "router", gro: str = "fraglist",
                 upper: str = "vlan", drop_untranslated: bool = False, segs: GroSegs = 44,
                 gso_size: GsoSize = 1472) -> Panel:
    """The VLAN NAT router of the GSO_SOFTWARE patch, one kernel at a time."""
    nics = _router_nics()
    controls = {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "nic": choice(nic, nics, "NIC"),
        "gro": choice(gro, routerfig.GRO_MODES, "GRO mode"),
        "upper": choice(upper, routerfig.ROUTER_UPPERS, "upper device"),
        "drop_untranslated": checkbox(drop_untranslated, "count only NATed segments (before c3df39ac9b0e)"),
        "gso_size": size_slider(gso_size, 64, 1472, "gso_size (B per packet)"),
        "segs": size_slider(segs, 1, segment.max_gro_segs(gso_size), "packets per GRO batch"),
    }
    return Panel(router_panel_state, controls,
                 rows=(("kernel", "nic"), ("gro", "upper", "drop_untranslated"), ("gso_size", "segs")),
                 constrain=_segs_cap)


# --------------------------------------------------------------------------------------------------
# Cost model

# A cost slider's value: nanoseconds per operation (memcpy: per byte), the unit of cost.OPS
OpNs = Annotated[float, In(0, None, "ns per operation (memcpy/byte: per byte), cost.OPS's unit")]
# slider keyword -> cost.OPS name (ns per operation; memcpy per byte)
COST_SLIDERS = {
    "stack_ns": "stack/udp_no_socket",
    "cache_line_miss_ns": "cache_line_miss",
    "kmalloc_head_ns": "napi_alloc_skb/kmalloc",
    "build_skb_ns": "build_skb",
    "memcpy_byte_ns": "memcpy/byte",
    "gro_receive_ns": "dev_gro_receive",
}


@public
def cost_panel_state(*, kernel: str = "5.13", payload_len: PayloadLen = 1000, l4: str = "udp",
                     destination: str = "no_socket", fig: Figure | None = None, **op_ns: OpNs) -> PanelState:
    """rx cost per operation for every kernel (``kernel`` highlighted) for one payload size, with costs = the
    2-parameter calibration overridden by the sliders (``stack_ns=...``, see COST_SLIDERS)."""
    unknown = set(op_ns) - set(COST_SLIDERS)
    if unknown:
        raise ValueError(f"unknown cost sliders {sorted(unknown)}; known: {', '.join(COST_SLIDERS)}")
    # cost.Traffic's own check names its payloads[0]; the panel's control is payload_len
    check_int("payload_len", payload_len, 0, cost.max_payload(l4), f"{l4} payload of one MTU-1500 frame, single "
              "mergeable buffer", function="widgets.stackpanels.cost_panel_state")
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
    # a slider's operation that no kernel in the figure performs for this traffic cannot move it
    idle = [op for op in COST_SLIDERS.values() if all(not x.ops.counts.get(op) for x in res.values())]
    text += "".join(f"<br><b>Note:</b> the {html.escape(op)} cost changes nothing here: no kernel in the figure "
                    "does it for this traffic (0 per packet)" for op in idle)
    return PanelState(dict(kernel=kernel, payload_len=payload_len, l4=l4, destination=destination, **op_ns), figure,
                      text, r, extra={"all": res})


_CAL: list[cost.Costs] = []


def _calibrated() -> cost.Costs:
    # The calibration is deterministic and costs ~0.2 s: computed once per process.
    if not _CAL:
        _CAL.append(cost.calibrate().two_param)
    return _CAL[0]


@public
def cost_panel(*, kernel: str = "5.13", payload_len: int = 1000, l4: str = "udp",
               destination: str = "no_socket") -> Panel:
    """The receive cost model per kernel, with sliders for the payload and the main per-operation costs."""
    base = _calibrated()
    controls: dict[str, W.ValueWidget] = {
        "kernel": choice(kernel, cost.KERNELS, "kernel"),
        "l4": choice(l4, ("udp", "tcp"), "l4"),
        "destination": choice(destination, cost.DESTINATIONS, "destination"),
        "payload_len": size_slider(payload_len, 0, cost.max_payload(l4), "L4 payload (B)"),
    }
    for key, op in COST_SLIDERS.items():
        v = base[op]
        per_byte = "byte" in op
        controls[key] = float_slider(round(v, 3 if per_byte else 1), 0.0, round(max(4 * v, 1.0), 2),
                                     f"{op} (ns{'/B' if per_byte else ''})", step=0.001 if per_byte else 1.0,
                                     fmt=".3f" if per_byte else ".0f")
    keys = list(COST_SLIDERS)
    return Panel(cost_panel_state, controls,
                 rows=(("kernel", "l4", "destination"), ("payload_len",), *zip(keys[::2], keys[1::2])),
                 constrain=_payload_cap)


def _payload_cap(panel: Panel) -> None:
    """The payload slider follows l4: at most what one MTU-1500 frame carries (cost.max_payload)."""
    panel.controls["payload_len"].set_range(0, cost.max_payload(panel.controls["l4"].value))
