"""Device stacks: a UDP GSO skb sent down VLAN / macvlan / bond / bridge (or stacks of them) over a NIC or a veth.

- :func:`build_stack` creates the devices with vnetlab.netdev's public API (Namespace, nic, veth, vlan,
  macvlan, bridge, bond, set_master) and applies ``ethtool -K`` settings per device; :func:`send_gso` sends one
  forwarded GRO skb down it with xmit.send.
- :func:`draw_stack` draws each device the skb meets as a box with its transmit features (ethtool names and
  their state, see vnetlab.viz.featuregrid), the skb's path down (xmit.send hops), where validate_xmit_skb
  segmented it and how many packets reach the wire. One drawing for notebooks and panels: a panel passes its
  figure back in and the axes are reused.
- :func:`draw_stacks_side_by_side`: the same stack before (5.10) and after (5.11) NETIF_F_GSO_SOFTWARE gained
  GSO_UDP_L4 and GSO_FRAGLIST (2e4ef10f5850).

Gids: "<col>:<device>" for a device, "<col>:<device>:<FEATURE>" for a feature lamp, "<col>:gso_skb",
"<col>:wire" (its label text gid "<col>:wire:label" states the wire packet count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from vnetlab import netdev, xmit
from vnetlab.profiles import DEFAULT_KERNEL
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Skb
from vnetlab.viz.memory import reuse_axes
from vnetlab.viz.style import COLORS, fast_region

__all__ = ["NICS", "UPPERS", "PATCH_KERNELS", "STACK_FEATURES", "Stack", "build_stack", "send_gso",
           "feature_states", "draw_stack", "draw_stacks_side_by_side"]

# Before and after 2e4ef10f5850 (NETIF_F_GSO_SOFTWARE gains GSO_UDP_L4 | GSO_FRAGLIST, v5.11-rc1).
PATCH_KERNELS = ("5.10", "5.11")

# The lower device: a vnetlab.netdev driver profile with its probe parameters, or a veth pair. The router NIC
# stands for the patch author's WIP driver (2e4ef10f5850: it advertised GSO_FRAGLIST); ixgbe 82599 has USO.
# label, driver ("veth" = Namespace.veth), probe parameters
NICS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "router": ("router NIC: USO, GSO_FRAGLIST, FRAGLIST", "router", {}),
    "router_no_fraglist": ("router NIC: USO only", "router",
                           {"gso_fraglist": False, "fraglist": False}),
    "router_gso_list_only": ("router NIC: GSO_FRAGLIST, no FRAGLIST", "router", {"fraglist": False}),
    "ixgbe": ("ixgbe (82599): USO", "ixgbe", {}),
    "ixgbe_82598": ("ixgbe (82598): no USO", "ixgbe", {"mac_82599": False}),
    "virtio_net": ("virtio_net (QEMU defaults, no USO)", "virtio_net", {}),
    "virtio_net_uso": ("virtio_net + HOST_USO (6.2+)", "virtio_net", {"host_uso": True}),
    "veth": ("veth pair (veth0, peer veth1)", "veth", {}),
}

# The devices stacked on the lower device, bottom-up: each one on the previous.
UPPERS: dict[str, tuple[str, ...]] = {
    "none": (),
    "vlan": ("vlan",),
    "macvlan": ("macvlan",),
    "bridge": ("bridge",),
    "bond": ("bond",),
    "vlan_on_macvlan": ("macvlan", "vlan"),
    "vlan_on_bond": ("bond", "vlan"),
    "vlan_on_bridge": ("bridge", "vlan"),
    "macvlan_on_bridge": ("bridge", "macvlan"),
    "macvlan_on_vlan": ("vlan", "macvlan"),
}

# The transmit features that decide a UDP GSO skb's fate, NETIF_F names (drawn with their ethtool names).
STACK_FEATURES = ("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST", "SG", "HW_CSUM", "HW_VLAN_CTAG_TX")
HATCH_COLOR = "#888888"  # hatches a shade lighter than the edges: the words on a hatched cell stay legible


@dataclass
class Stack:
    """A namespace holding one device stack: ``devices`` top (the egress device the skb is sent to) to bottom
    (the NIC or veth); ``port`` is the bottom device (a bridge's port, a bond's slave, a VLAN's real device)."""

    net: netdev.Namespace
    devices_top_down: tuple[Any, ...]
    kernel: str
    upper: str
    nic: str

    @property
    def egress(self) -> Any:
        return self.devices_top_down[0]

    @property
    def port(self) -> Any:
        return self.devices_top_down[-1]

    def devices(self) -> list[Any]:
        """Top (egress) to bottom."""
        return list(self.devices_top_down)

    def describe(self) -> str:
        """e.g. "eth0.10 (vlan) on eth0 (nic router)"."""
        return " on ".join(f"{d.name} ({d.kind}{' ' + d.driver if getattr(d, 'driver', '') else ''})"
                           for d in self.devices_top_down)


def _stack_on(net: netdev.Namespace, kind: str, below: Any) -> Any:
    """One device of type ``kind`` on ``below``, named as ip-link users usually name it."""
    if kind == "vlan":
        return net.vlan(f"{below.name}.10", lower=below, vid=10)
    if kind == "macvlan":
        name = next(f"mv{i}" for i in range(16) if f"mv{i}" not in net.devices)
        return net.macvlan(name, lower=below)
    master = net.bridge("br0") if kind == "bridge" else net.bond("bond0")
    net.set_master(below, master)
    return master


def build_stack(*, kernel: str = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                nic_params: Mapping[str, Any] | None = None,
                settings: Mapping[str, Mapping[str, bool]] | None = None) -> Stack:
    """The lower device ``nic`` (a key of NICS: eth0 with a driver profile, or veth0 of a veth pair) with the
    devices of ``upper`` (a key of UPPERS) stacked on it, bottom-up; ``nic_params`` override the profile's probe
    parameters. Then ``settings`` {device: {ethtool name: on}} applied with Device.ethtool_K, lowest device
    first (an upper device then sees its lower device's final features). FixedFeatureError propagates."""
    if upper not in UPPERS:
        raise ValueError(f"upper must be one of {', '.join(UPPERS)} (devices stacked on the NIC), got {upper!r}")
    if nic not in NICS:
        raise ValueError(f"nic must be one of {', '.join(NICS)} (vnetlab.netdev driver profiles), got {nic!r}")
    kv = _kernel(kernel).version
    _label, driver, params = NICS[nic]
    net = netdev.Namespace(kernel=kv)
    if driver == "veth":
        if nic_params:
            raise ValueError(f"nic_params={dict(nic_params)!r}: a veth pair takes no probe parameters")
        below, _peer = net.veth("veth0", "veth1")
    else:
        below = net.nic("eth0", driver=driver, **{**params, **dict(nic_params or {})})
    chain = [below]
    for kind in UPPERS[upper]:
        chain.append(_stack_on(net, kind, chain[-1]))
    stack = Stack(net, tuple(reversed(chain)), kv, upper, nic)
    unknown = set(settings or {}) - {d.name for d in chain}
    if unknown:
        raise ValueError(f"settings names unknown devices {sorted(unknown)}; this stack has "
                         f"{[d.name for d in stack.devices()]}")
    for dev in chain:
        wanted = (settings or {}).get(dev.name)
        if wanted:
            dev.ethtool_K(dict(wanted))
    return stack


def send_gso(stack: Stack, *, segs: int = 44, gso_size: int = 1472, fraglist: bool = True) -> tuple[Skb, xmit.TxResult]:
    """A forwarded UDP GRO skb (fraglist: rx-gro-list; else rx-udp-gro-forwarding) through the stack."""
    skb = xmit.gso_skb(segs=segs, gso_size=gso_size, fraglist=fraglist)
    return skb, xmit.send(stack.egress, skb, kernel=stack.kernel, port=stack.port)


def feature_states(dev: Any, names: Sequence[str] = STACK_FEATURES) -> list[tuple[str, str, bool, bool]]:
    """(NETIF_F name, ethtool name, on, fixed) for the features this kernel has, as ethtool -k shows them."""
    from vnetlab.viz.featuregrid import device_cells

    return [(c.feature, c.ethtool, c.on, c.fixed) for c in device_cells(dev, names)]


# --------------------------------------------------------------------------------------------------
# Drawing

_W = 10.0  # data units across one column
_DEV_H = 1.25


def _hop_color(action: str) -> str:
    return COLORS["segmented"] if action in ("segmented", "linearized") else COLORS["passed"]


def _draw_column(ax: Any, col: str, stack: Stack, skb: Skb, tx: xmit.TxResult, *, lamps: bool = True,
                 lamp_rows: int = 1) -> float:
    """One stack, top to bottom, into axes whose limits are set here (regions added without data-limit updates).
    Returns the lowest y used. Feature lamps: ``lamp_rows`` rows of STACK_FEATURES, in the grid's cell style."""
    from vnetlab.viz.featuregrid import cell_style, device_cells

    def arrow(start: tuple[float, float], end: tuple[float, float]) -> None:
        ax.add_artist(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, linewidth=0.9))

    y = 0.0
    fl = "FRAGLIST" in skb.gso_type
    if skb.is_gso():
        label = (f"GRO skb: {skb.gso_segs} × {skb.gso_size} B UDP, gso_type {'|'.join(sorted(skb.gso_type))}"
                 + (f", frag_list {len(skb.frag_list)} skbs" if fl else f", nr_frags {skb.nr_frags}"
                    + (f" + frag_list {len(skb.frag_list)} skbs" if skb.frag_list else "")))
    else:
        label = f"one UDP packet, skb->len {skb.len} B (not a GSO skb: GRO did not aggregate)"
    fast_region(ax, f"{col}:gso_skb", 0.5, y - 0.7, _W - 1, 0.7, color=COLORS["frag_list"] if fl else COLORS["frag"],
                label=label, fontsize=7.5)
    y -= 0.7
    hops = {h.name: h for h in tx.hops}
    per_row = -(-len(STACK_FEATURES) // lamp_rows)
    for dev in stack.devices():
        h = hops.get(dev.name)
        if h is None:
            continue
        arrow((_W / 2, y), (_W / 2, y - 0.45))
        ax.text(_W / 2 + 0.15, y - 0.22, f"dev_queue_xmit: {h.skbs_in} skb{'s' if h.skbs_in != 1 else ''}",
                fontsize=7, va="center", ha="left")
        y -= 0.45
        top = y
        y -= (0.62 + 0.5 * lamp_rows) if lamps else 0.75
        box = fast_region(ax, f"{col}:{dev.name}", 0.5, y, _W - 1, top - y, color="white")
        cut = h.action in ("segmented", "linearized")
        box.set_edgecolor(_hop_color(h.action))
        box.set_linewidth(1.8 if cut else 0.8)
        if cut:
            box.set_linestyle((0, (4, 2)))  # segmented / linearized: dashed as well as red
        what = h.what + (f" ({h.method})" if h.method else "")
        mark = "✂ " if h.action == "segmented" else ""
        ax.text(0.65, top - 0.1, f"{mark}{dev.name} [{dev.kind}]: {what}", fontsize=7.5, va="top", ha="left",
                color=_hop_color(h.action), weight="bold")
        if h.reason:
            ax.text(0.65, top - 0.36, h.reason, fontsize=7, va="top", ha="left", color="#333333")
        if not lamps:
            continue
        lw = (_W - 1.3) / per_row
        for i, c in enumerate(device_cells(dev, STACK_FEATURES)):
            r, k = divmod(i, per_row)
            face, hatch, word = cell_style(c)
            lamp = fast_region(ax, f"{col}:{dev.name}:{c.feature}", 0.65 + k * lw, y + 0.08 + (lamp_rows - 1 - r) * 0.5,
                               lw - 0.1, 0.42, color=face, hatch=hatch,
                               label=f"{c.ethtool}\n{word}", fontsize=6.5)
            lamp.set_edgecolor("#555555")
            lamp.set_hatchcolor(HATCH_COLOR)
            if c.state == "requested on, off":
                lamp.set_linestyle((0, (3, 2)))
    arrow((_W / 2, y), (_W / 2, y - 0.45))
    y -= 1.15
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
    fast_region(ax, f"{col}:wire", 0.5, y, _W - 1, 0.7, color="#fee0d2" if tx.segmented_at else "#e5f5e0",
                label=text, fontsize=7.5)
    ax.set_xlim(0, _W)
    ax.set_axis_off()
    return y


def _stack_height(n_devices: int, lamp_rows: int) -> float:
    """Data units of one column (see _draw_column)."""
    return 0.7 + n_devices * (0.45 + 0.62 + 0.5 * lamp_rows) + 0.45 + 1.15 - 0.45 + 0.1


# Widget figures are drawn at the width they are shown (JupyterLab's output area is about 900-1000 px).
FIG_WIDTH_IN = 9.0


def draw_stack(stack: Stack, skb: Skb, tx: xmit.TxResult, *, fig: Figure | None = None, title: str = "") -> Figure:
    """One stack: GRO skb on top, each device the skb meets (features, validate_xmit_skb's verdict), the wire.

    The same drawing in a notebook and in the stack panel: pass the figure of a previous call to redraw into
    its axes (memory.reuse_axes)."""
    n = sum(1 for d in stack.devices() if any(h.name == d.name for h in tx.hops))
    units = _stack_height(n, 1)
    height = 0.42 + units * 0.62  # inches: 0.62 in per data unit, plus the title
    fig, (ax,) = reuse_axes(fig, ("stack", n), FIG_WIDTH_IN, height, lambda f: [f.add_axes(
        (0.01, 0.005, 0.98, 1 - 0.42 / height))])
    _draw_column(ax, "0", stack, skb, tx)
    ax.set_ylim(-units, 0.05)
    ax.set_title(title or f"kernel {stack.kernel}: a UDP GRO skb sent to {stack.describe()}", fontsize=8.5,
                 loc="left", y=1.0)
    return fig


def draw_stacks_side_by_side(*, upper: str = "vlan", kernels: Sequence[str] = PATCH_KERNELS, nic: str = "router",
                             nic_params: Mapping[str, Any] | None = None, segs: int = 44, gso_size: int = 1472,
                             fraglist: bool = True, fig: Figure | None = None) -> Figure:
    """The same stack and skb on each kernel, left to right (before and after the GSO_SOFTWARE change)."""
    if not kernels:
        raise ValueError("kernels must not be empty")
    built = []
    for k in kernels:
        st = build_stack(kernel=k, upper=upper, nic=nic, nic_params=nic_params)
        built.append((st, *send_gso(st, segs=segs, gso_size=gso_size, fraglist=fraglist)))
    n = max(len(tx.hops) for _st, _skb, tx in built)
    units = _stack_height(n, 2)
    height = 0.75 + units * 0.62
    top = 1 - 0.75 / height
    fig, axes = reuse_axes(fig, ("stacks_side_by_side", len(kernels), n), 4.5 * len(kernels), height,
                           lambda f: f.subplots(1, len(kernels), squeeze=False, gridspec_kw=dict(
                               left=0.01, right=0.99, top=top, bottom=0.005, wspace=0.05))[0])
    for i, (ax, k, (st, skb, tx)) in enumerate(zip(axes, kernels, built)):
        _draw_column(ax, str(i), st, skb, tx, lamp_rows=2)
        ax.set_ylim(-units, 0.05)
        gs = ("GSO_SOFTWARE without GSO_UDP_L4 | GSO_FRAGLIST" if _kernel(k) < "5.11" else
              "GSO_SOFTWARE with GSO_UDP_L4 | GSO_FRAGLIST")
        ax.set_title(f"kernel {k}: {gs}", fontsize=8, loc="left", y=1.0)
    fig.suptitle(f"A forwarded UDP GRO skb sent to {built[0][0].describe()}:\n"
                 "where validate_xmit_skb segments it", fontsize=9, x=0.01, y=0.995, ha="left", va="top")
    return fig
