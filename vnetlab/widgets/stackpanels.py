"""Transmit-side and cost panels: device stack with ethtool -K toggles, the VLAN NAT router, the rx cost model.

Each ``<name>_panel_state(**params)`` is a plain function (tested without a frontend) returning a
PanelState; ``<name>_panel(**initial)`` wraps it in a panel whose figure is redrawn in place as a PNG.
Model ValueErrors (a fixed feature's FixedFeatureError, an unknown kernel, a bad cost) show as text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
from matplotlib.figure import Figure

from vnetlab import cost, xmit
from vnetlab.features import ethtool_name
from vnetlab.netdev import DRIVERS
from vnetlab.profiles import known_kernels
from vnetlab.viz import costfig, stacks
from vnetlab.widgets.base import Panel, PanelState, choice, int_box

__all__ = [
    "TOGGLE_FEATURES", "ROLES", "StackPanel",
    "stack_panel_state", "stack_panel",
    "router_panel_state", "router_panel",
    "COST_SLIDERS", "cost_panel_state", "cost_panel",
]

# Per-device toggles of the stack panel (NETIF_F names; the widgets show the ethtool names).
TOGGLE_FEATURES = ("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST", "SG", "HW_CSUM")
ROLES = ("upper", "lower")  # upper = the egress device the skb is sent to; lower = the NIC under it


def _role_devices(stack: stacks.Stack) -> dict[str, Any]:
    devs = stack.devices()
    return {"upper": devs[0], "lower": devs[1] if len(devs) > 1 else None}


def stack_panel_state(*, kernel: str = "5.10", upper: str = "vlan", nic: str = "router", fraglist: bool = True,
                      segs: int = 44, gso_size: int = 1472, upper_features: Mapping[str, bool] | None = None,
                      lower_features: Mapping[str, bool] | None = None, fig: Figure | None = None) -> PanelState:
    """Build the stack, apply ``ethtool -K`` (``{ethtool name: on}``) to the lower device then the upper one,
    send a UDP GRO skb and draw it. A fixed feature raises netdev.FixedFeatureError (a ValueError)."""
    st = stacks.build_stack(kernel=kernel, upper=upper, nic=nic)
    roles = _role_devices(st)
    for role, wanted in (("lower", lower_features), ("upper", upper_features)):
        dev = roles[role]
        if wanted and dev is not None:
            dev.ethtool_K(dict(wanted))
    skb, tx = stacks.send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)
    figure = stacks.draw_stack(st, skb, tx, fig=fig)
    text = (f"segmented at <b>{html.escape(tx.segmented_at or 'no device (hardware GSO or none)')}</b>; "
            f"<b>{len(tx.segments)}</b> packets on the wire<br>"
            + "<br>".join(html.escape(str(h)) for h in tx.hops))
    return PanelState(dict(kernel=kernel, upper=upper, nic=nic, fraglist=fraglist, segs=segs, gso_size=gso_size,
                           upper_features=dict(upper_features or {}), lower_features=dict(lower_features or {})),
                      figure, text, tx, extra={"stack": st, "skb": skb})


class StackPanel(Panel):
    """The stack panel: structural controls plus one checkbox per (device role, feature), acting like
    ``ethtool -K``. Changing kernel, upper or NIC re-reads the new devices' features into the checkboxes;
    only checkboxes that differ from the device's current state are sent to ethtool_K."""

    def __init__(self, controls: dict[str, W.ValueWidget], toggles: dict[tuple[str, str], W.Checkbox]) -> None:
        self.toggles = toggles
        self._syncing = False
        self._defaults: dict[tuple[str, str], bool] = {}
        super().__init__(self._state, controls, fast_text=True)
        self.role_labels = {role: W.Label(f"{role} device", layout=W.Layout(width="130px")) for role in ROLES}
        grid = [W.HBox([self.role_labels[role]] + [toggles[(role, f)] for f in TOGGLE_FEATURES]) for role in ROLES]
        self.toggle_box = W.VBox(grid)
        self.children = (*self.children[:-2], self.toggle_box, *self.children[-2:])
        for t in toggles.values():
            t.observe(self._on_toggle, names="value")
        self._sync()

    def _state(self, **params: Any) -> PanelState:
        wanted: dict[str, dict[str, bool]] = {r: {} for r in ROLES}
        for (role, feat), box in self.toggles.items():
            if (role, feat) in self._defaults and box.value != self._defaults[(role, feat)]:
                wanted[role][box.description.split(" ")[0]] = box.value
        return stack_panel_state(**params, upper_features=wanted["upper"], lower_features=wanted["lower"])

    def _sync(self) -> None:
        """Checkboxes := the freshly built devices' features (ethtool -k), fixed ones marked."""
        p = self.params()
        try:
            st = stacks.build_stack(kernel=p["kernel"], upper=p["upper"], nic=p["nic"])
        except ValueError:
            return
        roles = _role_devices(st)
        self._syncing = True
        try:
            self._defaults = {}
            for role, label in getattr(self, "role_labels", {}).items():
                dev = roles[role]
                label.value = f"{dev.name} ({role}): ethtool -K" if dev is not None else f"no {role} device"
            for (role, feat), box in self.toggles.items():
                dev = roles[role]
                states = {n: (eth, on, fixed) for n, eth, on, fixed in stacks.feature_states(dev, (feat,))} \
                    if dev is not None else {}
                if feat not in states:
                    box.value = False
                    box.disabled = True
                    box.description = f"{feat} (n/a)"
                    continue
                eth, on, fixed = states[feat]
                box.disabled = False
                box.description = f"{eth} [fixed]" if fixed else eth
                box.value = on
                self._defaults[(role, feat)] = on
        finally:
            self._syncing = False
        self.update()

    def _on_change(self, change) -> None:
        if change["owner"] in (self.controls.get("kernel"), self.controls.get("upper"), self.controls.get("nic")):
            self._sync()
        else:
            self.update()

    def _on_toggle(self, _change) -> None:
        if not self._syncing:
            self.update()


def stack_panel(*, kernel: str = "5.10", upper: str = "vlan", nic: str = "router", fraglist: bool = True) -> StackPanel:
    """The device stack with per-device feature toggles (ethtool -K) for a UDP GRO skb."""
    controls = {
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "upper": choice(upper, tuple(stacks.UPPERS), "upper device"),
        "nic": choice(nic, tuple(stacks.NICS), "NIC driver"),
        "fraglist": W.Checkbox(value=fraglist, description="fraglist GRO skb (rx-gro-list)", indent=False,
                               layout=W.Layout(width="230px")),
    }
    toggles = {(role, f): W.Checkbox(value=False, description=ethtool_name(f, kernel="6.18"), indent=False,
                                     layout=W.Layout(width="250px"))
               for role in ROLES for f in TOGGLE_FEATURES}
    return StackPanel(controls, toggles)


# --------------------------------------------------------------------------------------------------
# Router

ROUTER_UPPERS = ("vlan", "macvlan", "bond", "bridge", "none")


def router_panel_state(*, kernel: str = "5.10", nic: str = "router", gro: str = "fraglist", upper: str = "vlan",
                       drop_untranslated: bool = False, fig: Figure | None = None) -> PanelState:
    """xmit.router_scenario for one kernel: the stack the GRO skb goes down (left) and the model goodput
    against the seed's 20 Mbps / 1 Gbps and the link cap (right)."""
    if upper not in ROUTER_UPPERS:
        raise ValueError(f"upper must be one of {ROUTER_UPPERS}, got {upper!r}")
    rr = xmit.router_scenario(kernel=kernel, nic=nic, gro=gro, upper=upper)
    c = xmit.RouterCosts.from_table()
    thr = xmit.router_throughput(rr, c, drop_untranslated=drop_untranslated)
    st = stacks.build_stack(kernel=rr.kernel, upper=upper, nic=nic)
    aggregated = rr.gro_skbs == 1 and rr.packets_in > 1
    skb = xmit.gso_skb(segs=rr.packets_in if aggregated else 1, gso_size=rr.gso_size,
                       fraglist=aggregated and gro == "fraglist")
    figure = costfig.draw_router_panel(st, skb, rr, thr, c, fig=fig, compact=True)
    text = (f"{rr.packets_in} packets in → {rr.gro_skbs} skb(s) routed → <b>{rr.wire_packets}</b> out, segmented at "
            f"<b>{html.escape(rr.segmented_at or 'no device (hardware or none)')}</b>; model goodput "
            f"<b>{thr.goodput_bps / 1e6:,.0f} Mbps</b> ({thr.bound}-bound, {thr.cycles_per_packet:,.0f} cycles/packet)"
            + "".join(f"<br><i>{html.escape(n)}</i>" for n in rr.notes))
    return PanelState(dict(kernel=kernel, nic=nic, gro=gro, upper=upper, drop_untranslated=drop_untranslated),
                      figure, text, rr, extra={"throughput": thr})


def router_panel(*, kernel: str = "5.10", nic: str = "router", gro: str = "fraglist", upper: str = "vlan") -> Panel:
    """The VLAN NAT router of the GSO_SOFTWARE patch, one kernel at a time."""
    return Panel(router_panel_state, fast_text=True, controls={
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "nic": choice(nic, tuple(DRIVERS), "NIC profile"),
        "gro": choice(gro, xmit.GRO_MODES, "GRO mode"),
        "upper": choice(upper, ROUTER_UPPERS, "upper device"),
        "drop_untranslated": W.Checkbox(value=False, description="drop untranslated segments (5.10 hypothesis)",
                                        indent=False, layout=W.Layout(width="320px")),
    })


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
    figure = costfig.draw_cost_breakdown(traffic, costs=c, highlight=kernel, fig=fig, compact=True)
    res = costfig.rx_costs(traffic, cost.KERNELS, c)
    r = res[kernel]
    text = (f"{html.escape(traffic.label)}: receive cost per operation (stacked), per kernel and path<br>"
            f"kernel {kernel}: <b>{r.ns_per_packet:.0f} ns/packet</b>, {r.pps / 1e3:,.0f} kpps; "
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
    """The receive cost model per kernel, with sliders for the main per-operation costs."""
    base = _calibrated()
    controls: dict[str, W.ValueWidget] = {
        "kernel": choice(kernel, cost.KERNELS, "kernel"),
        "payload_len": int_box(payload_len, -1, 65535, "payload (B)"),
        "l4": choice(l4, ("udp", "tcp"), "l4"),
        "destination": choice(destination, cost.DESTINATIONS, "destination"),
    }
    for key, op in COST_SLIDERS.items():
        v = base[op]
        step = 0.01 if v < 1 else 1.0
        controls[key] = W.FloatSlider(value=round(v, 2), min=0.0, max=round(max(4 * v, 1.0), 2), step=step,
                                      description=f"{op} (ns{'/B' if 'byte' in op else ''})",
                                      style={"description_width": "initial"}, layout=W.Layout(width="330px"),
                                      continuous_update=False)
    return Panel(cost_panel_state, controls, fast_text=True)
