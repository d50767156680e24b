"""Device stacks: a UDP GSO skb sent down VLAN / macvlan / bond / bridge over a NIC (or a veth).

- :func:`build_stack` wires a vnetlab.netdev.Namespace as router.router_scenario does (plus veth), applies
  ``ethtool -K`` settings per device, and :func:`send_gso` sends one forwarded GRO skb through it.
- :func:`draw_stack` draws each device the skb meets as a box with its transmit features (ethtool names,
  on/off, [fixed]), the skb's path down (xmit.send hops), where validate_xmit_skb segmented it and how
  many packets reach the wire.
- :func:`draw_stacks_side_by_side`: the same stack before (5.10) and after (5.11+) NETIF_F_GSO_SOFTWARE
  gained GSO_UDP_L4 and GSO_FRAGLIST.

Gids: "<col>:<device>" for a device, "<col>:<device>:<FEATURE>" for a feature lamp, "<col>:gso_skb",
"<col>:wire" (its label text gid "<col>:wire:label" states the wire packet count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from vnetlab import netdev, router, xmit
from vnetlab.features import ethtool_name
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Skb
from vnetlab.viz.memory import reuse_axes
from vnetlab.viz.style import COLORS, fast_region, region, target_figure

# The transmit features that decide a UDP GSO skb's fate, NETIF_F names (drawn with their ethtool names).
STACK_FEATURES = ("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST", "SG", "HW_CSUM", "HW_VLAN_CTAG_TX")
UPPERS = ("vlan", "macvlan", "bond", "bridge", "veth", "none")
ON_COLOR = "#a1d99b"
OFF_COLOR = "#f0f0f0"
FIXED_OFF_COLOR = "#d9d9d9"


@dataclass
class Stack:
    """A namespace with one egress device on top of eth0 (or a veth pair)."""

    net: netdev.Namespace
    egress: Any
    port: Any  # the NIC (bridge port / bond slave / vlan's real device)
    kernel: str
    upper: str

    def devices(self) -> list[Any]:
        """Top (egress) to bottom."""
        out = [self.egress]
        if self.port is not None and self.port is not self.egress:
            out.append(self.port)
        return out


def build_stack(*, kernel: str = "5.10", upper: str = "vlan", nic: str = "router",
                nic_params: Mapping[str, Any] | None = None,
                settings: Mapping[str, Mapping[str, bool]] | None = None) -> Stack:
    """eth0 (driver ``nic``) with ``upper`` on it (as router.router_scenario wires it), or a veth pair;
    then ``settings`` {device: {ethtool name: on}} applied with Device.ethtool_K, lowest device first
    (so an upper device sees its lower device's final features). FixedFeatureError propagates."""
    if upper not in UPPERS:
        raise ValueError(f"upper must be one of {UPPERS}, got {upper!r}")
    kv = _kernel(kernel).version
    if upper == "veth":
        net = netdev.Namespace(kernel=kv)
        a, _b = net.veth("veth0", "veth1")
        stack = Stack(net, a, None, kv, upper)
    else:
        net, egress, eth = router.egress_stack(kernel=kv, upper=upper, nic=nic, nic_params=nic_params)
        stack = Stack(net, egress, eth, kv, upper)
    for dev in reversed(stack.devices()):
        wanted = (settings or {}).get(dev.name)
        if wanted:
            dev.ethtool_K(dict(wanted))
    unknown = set(settings or {}) - {d.name for d in stack.devices()}
    if unknown:
        raise ValueError(f"settings names unknown devices {sorted(unknown)}; this stack has "
                         f"{[d.name for d in stack.devices()]}")
    return stack


def send_gso(stack: Stack, *, segs: int = 44, gso_size: int = 1472, fraglist: bool = True) -> tuple[Skb, xmit.TxResult]:
    """A forwarded UDP GRO skb (fraglist: rx-gro-list; else rx-udp-gro-forwarding) through the stack."""
    skb = xmit.gso_skb(segs=segs, gso_size=gso_size, fraglist=fraglist)
    return skb, xmit.send(stack.egress, skb, kernel=stack.kernel, port=stack.port)


def feature_states(dev: Any, names: Sequence[str] = STACK_FEATURES) -> list[tuple[str, str, bool, bool]]:
    """(NETIF_F name, ethtool name, on, fixed) for the features this kernel has (ethtool -k)."""
    k = dev.ns.kernel
    shown = dev.ethtool_k()
    out = []
    for n in names:
        try:
            eth = ethtool_name(n, kernel=k)
        except ValueError:
            continue  # this kernel has no such feature (NETIF_F_GSO_FRAGLIST before 5.6, ...)
        on, fixed = shown[eth]
        out.append((n, eth, on, fixed))
    return out


# --------------------------------------------------------------------------------------------------
# Drawing

_W = 10.0  # data units across one column
_DEV_H = 1.7


def _hop_color(action: str) -> str:
    return COLORS["segmented"] if action in ("segmented", "linearized") else COLORS["passed"]


def _draw_column(ax, col: str, stack: Stack, skb: Skb, tx: xmit.TxResult, *, lamps: bool = True,
                 compact: bool = False) -> None:
    """One stack, top to bottom. ``compact`` (widget panels, axes reused between updates): the same regions and
    texts, added without data-limit updates (fast_region; the limits are set here anyway)."""
    draw = fast_region if compact else region

    def arrow(start, end, **kw) -> None:
        a = FancyArrowPatch(start, end, arrowstyle="-|>", **kw)
        if compact:
            ax.add_artist(a)
        else:
            ax.add_patch(a)

    y = 0.0
    fl = "FRAGLIST" in skb.gso_type
    if skb.is_gso():
        label = (f"GRO skb: {skb.gso_segs} × {skb.gso_size} B UDP, gso_type {'|'.join(sorted(skb.gso_type))}"
                 + (f", frag_list {len(skb.frag_list)} skbs" if fl else f", nr_frags {skb.nr_frags}"))
    else:
        label = f"one UDP packet, skb->len {skb.len} B (not a GSO skb: GRO did not aggregate)"
    draw(ax, f"{col}:gso_skb", 0.5, y - 0.9, _W - 1, 0.9, color=COLORS["frag_list"] if fl else COLORS["frag"],
           label=label, fontsize=7)
    y -= 0.9
    hops = {h.name: h for h in tx.hops}
    for dev in stack.devices():
        h = hops.get(dev.name)
        if h is None:
            continue
        # arrow with the skb count into this device
        arrow((_W / 2, y), (_W / 2, y - 0.55), mutation_scale=9, linewidth=0.9)
        ax.text(_W / 2 + 0.2, y - 0.28, f"dev_queue_xmit: {h.skbs_in} skb{'s' if h.skbs_in != 1 else ''}",
                fontsize=6.5, va="center", ha="left")
        y -= 0.55
        top = y
        y -= _DEV_H if lamps else 0.8
        box = draw(ax, f"{col}:{dev.name}", 0.5, y, _W - 1, top - y, color="white")
        box.set_edgecolor(_hop_color(h.action))
        box.set_linewidth(1.6 if h.action != "passed" else 0.8)
        what = h.what + (f" ({h.method})" if h.method else "")
        ax.text(0.65, top - 0.12, f"{dev.name} [{dev.kind}]: {what}", fontsize=7.5, va="top", ha="left",
                color=_hop_color(h.action), weight="bold")
        if h.reason:
            ax.text(0.65, top - 0.42, h.reason, fontsize=6.5, va="top", ha="left", color="#444444")
        states = feature_states(dev) if lamps else []
        lw = (_W - 1.3) / 3
        for i, (n, eth, on, fixed) in enumerate(states):
            r, c = divmod(i, 3)
            lx = 0.65 + c * lw
            ly = y + 0.1 + (1 - r) * 0.5
            lamp = draw(ax, f"{col}:{dev.name}:{n}", lx, ly, lw - 0.1, 0.42,
                   color=ON_COLOR if on else (FIXED_OFF_COLOR if fixed else OFF_COLOR),
                   label=f"{eth} {'on' if on else 'off'}{' [fixed]' if fixed else ''}", fontsize=5.8)
            if fixed:
                lamp.set_linestyle((0, (2, 1.5)))  # dashed edge: ethtool -K cannot change it
    arrow((_W / 2, y), (_W / 2, y - 0.55), mutation_scale=9, linewidth=0.9)
    y -= 1.45
    n = len(tx.segments)
    by = sorted({p.segmented_by for p in tx.segments})
    where = (f"segmented in software at {tx.segmented_at}" if tx.segmented_at else
             "segmented by the NIC: hardware GSO" if "hardware" in by else "not segmented")
    last = tx.hops[-1] if tx.hops else None
    if last is not None and last.kind == "veth":
        # veth_xmit hands the skb to the peer as it is: no wire, no segmentation here
        k = len(tx.skbs_to_driver)
        text = (f"to the peer: {k} skb{'s' if k != 1 else ''} carrying {n} packet{'s' if n != 1 else ''} "
                f"({'segmented at ' + tx.segmented_at if tx.segmented_at else 'veth_xmit does not segment'})")
    else:
        text = f"wire: {n} packet{'s' if n != 1 else ''} ({where})"
    draw(ax, f"{col}:wire", 0.5, y, _W - 1, 0.9, color="#fee0d2" if tx.segmented_at else "#e5f5e0",
           label=text, fontsize=7.5)
    ax.set_xlim(0, _W)
    ax.set_ylim(y - 0.1, 0.1)
    ax.set_axis_off()


def draw_stack(stack: Stack, skb: Skb, tx: xmit.TxResult, *, fig: Figure | None = None, title: str = "",
               compact: bool = False) -> Figure:
    """One stack: GRO skb on top, each device the skb meets (features, validate_xmit_skb's verdict), the wire.

    ``compact`` (the stack panel): the same drawing into axes reused between updates (memory.reuse_axes)."""
    if compact:
        fig, (ax,) = reuse_axes(fig, ("stack", "compact"), 5.6, 4.6, lambda f: [f.subplots(gridspec_kw=dict(
            left=0.01, right=0.99, top=0.93, bottom=0.01))])
    else:
        fig = target_figure(fig, 5.6, 4.6)
        ax = fig.subplots(gridspec_kw=dict(left=0.01, right=0.99, top=0.9, bottom=0.01))
    _draw_column(ax, "0", stack, skb, tx, compact=compact)
    ax.set_title(title or f"kernel {stack.kernel}: UDP GSO skb down {stack.egress.name}", fontsize=9, loc="left", y=1.0)
    return fig


def draw_stacks_side_by_side(*, upper: str = "vlan", kernels: Sequence[str] = ("5.10", "5.11"), nic: str = "router",
                             nic_params: Mapping[str, Any] | None = None, segs: int = 44, gso_size: int = 1472,
                             fraglist: bool = True, fig: Figure | None = None) -> Figure:
    """The same stack and skb on each kernel, left to right (before and after the GSO_SOFTWARE change)."""
    if not kernels:
        raise ValueError("kernels must not be empty")
    fig = target_figure(fig, 5.4 * len(kernels), 4.8)
    axes = fig.subplots(1, len(kernels), squeeze=False, gridspec_kw=dict(left=0.01, right=0.99, top=0.86,
                                                                          bottom=0.01, wspace=0.06))[0]
    results = []
    for i, (ax, k) in enumerate(zip(axes, kernels)):
        st = build_stack(kernel=k, upper=upper, nic=nic, nic_params=nic_params)
        skb, tx = send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)
        results.append(tx)
        _draw_column(ax, str(i), st, skb, tx)
        gs = "GSO_SOFTWARE without GSO_UDP_L4 / GSO_FRAGLIST" if _kernel(k) < "5.11" else \
            "GSO_SOFTWARE with GSO_UDP_L4 | GSO_FRAGLIST"
        ax.set_title(f"kernel {k} ({gs})", fontsize=8.5, loc="left", y=1.0)
    fig.suptitle(f"A forwarded UDP GRO skb sent through {upper} over eth0 ({nic} NIC): where validate_xmit_skb "
                 "segments it",
                 fontsize=9.5, x=0.01, ha="left")
    return fig
