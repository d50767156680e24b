"""Device stacks: a lower device (a NIC driver profile or a veth pair) with upper devices stacked on it, and the
feature grid's data (what ``ethtool -k`` shows for every device, and what validate_xmit_skb did to two GSO skbs).

- :func:`build_stack` is the one stack builder (notebooks, exercises, vnetlab.router, the panels and the tests):
  the devices are made with vnetlab.netdev's public API (Namespace, nic, veth, vlan, macvlan, bridge, bond,
  set_master) in the order ``ip link add ... link`` / ``ip link set ... master`` would make them, then ``ethtool
  -K`` settings are applied per device.
- :func:`send_gso` sends one forwarded GRO skb down a stack with xmit.send.
- :func:`device_cells` reads one device's features as ``ethtool -k`` prints them plus wanted_features
  (:class:`Cell`, with the reason it is in that state); :func:`feature_grid` gives every device's cells and, per
  device, what happened to a UDP GSO skb and a fraglist GSO skb sent to the top (:class:`FeatureGrid`).

Nothing here draws: vnetlab.viz.stacks and vnetlab.viz.featuregrid draw these objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from vnetlab import features as F
from vnetlab import netdev, xmit
from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import IP_HLEN, IP_MAX_MTU, UDP_GRO_CNT_MAX, UDP_HLEN
from vnetlab.profiles import DEFAULT_KERNEL, Kernel
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Skb

__all__ = ["PATCH_KERNELS", "NICS", "UPPERS", "MASTERS", "STACK_FEATURES", "GRID_FEATURES", "SKB_KINDS", "STATES",
           "Stack", "build_stack", "send_gso", "Cell", "device_cells", "feature_states", "Verdict", "GridRow",
           "FeatureGrid", "feature_grid"]

# Before and after 2e4ef10f5850 (NETIF_F_GSO_SOFTWARE gains GSO_UDP_L4 | GSO_FRAGLIST, v5.11-rc1).
PATCH_KERNELS = ("5.10", "5.11")

# The lower device: a vnetlab.netdev driver profile with its probe parameters, or a veth pair. The router NIC
# stands for the patch author's WIP driver (2e4ef10f5850: it advertised GSO_FRAGLIST); ixgbe 82599 has USO.
# key -> (label, driver ("veth" = Namespace.veth), probe parameters)
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
# Upper kinds that take their lower device as a port (ip link set ... master) rather than as a link.
MASTERS = ("bridge", "bond")

# The transmit features that decide a UDP GSO skb's fate, NETIF_F names (the stack drawing's lamps).
STACK_FEATURES = ("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST", "SG", "HW_CSUM", "HW_VLAN_CTAG_TX")

# The grid's columns: net_gso_ok needs GSO_UDP_L4 (and GSO_FRAGLIST for a fraglist skb), skb_gso_ok needs FRAGLIST
# for any frag_list, harmonize_features needs a checksum feature, TSO shows the GSO_SOFTWARE members that always
# were, SG gates every ALL_TSO bit (netdev_fix_features), HW_VLAN_CTAG_TX decides software tag insertion.
GRID_FEATURES = ("SG", "IP_CSUM", "HW_CSUM", "FRAGLIST", "TSO", "GSO_UDP_L4", "GSO_FRAGLIST", "HW_VLAN_CTAG_TX")

# skb key -> (column title, fraglist?)
SKB_KINDS = {"udp_gso": ("UDP GSO skb", False), "fraglist": ("fraglist GSO skb", True)}

# A GRO skb's sizes: udp_gro_receive_segment stops at UDP_GRO_CNT_MAX packets (net/ipv4/udp_offload.c); a segment
# carries at most what an IPv4 packet's 16-bit tot_len leaves after the IP and UDP headers.
GroSegs = Annotated[int, In(1, UDP_GRO_CNT_MAX, "packets one UDP GRO skb holds (UDP_GRO_CNT_MAX)")]
GsoSize = Annotated[int, In(1, IP_MAX_MTU - IP_HLEN[4] - UDP_HLEN, "UDP payload bytes per segment (gso_size)")]


# --------------------------------------------------------------------------------------------------
# The stack


@dataclass
class Stack:
    """A namespace holding one device stack: ``devices_top_down`` from the top (the egress device the skb is sent
    to) to the bottom (the NIC or veth: a bridge's port, a bond's slave, a VLAN's real device); ``ports``: further
    bridge ports or bond slaves (``port_nic``), not on the skb's path."""

    net: netdev.Namespace
    devices_top_down: tuple[Any, ...]
    kernel: Kernel  # resolved once (build_stack): a lab kernel keeps its patch's rules
    upper: str
    nic: str
    ports: tuple[Any, ...] = ()

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


def _lower(net: netdev.Namespace, nic: str, name: str | None, peer: str | None,
           nic_params: Mapping[str, Any] | None) -> Any:
    """The NICS entry ``nic`` in ``net``: a NIC (eth0, or the next free ethN) or one end of a veth pair (veth0 and
    its peer veth1, or the next free pair)."""
    _label, driver, params = NICS[nic]
    if driver == "veth":
        if nic_params:
            raise ArgumentError(f"nic_params={dict(nic_params)!r}: a veth pair takes no probe parameters",
                                param="nic_params")
        i = next(i for i in range(0, 64, 2) if not {f"veth{i}", f"veth{i + 1}"} & set(net.devices))
        return net.veth(name or f"veth{i}", peer or f"veth{i + 1}")[0]
    free = next(f"eth{i}" for i in range(64) if f"eth{i}" not in net.devices)
    return net.nic(name or free, driver=driver, **{**params, **dict(nic_params or {})})


def _one_of(name: str, value: object, known: Sequence[str], meaning: str) -> None:
    if not isinstance(value, str) or value not in known:
        raise ArgumentError(f"{name} must be one of {', '.join(known)} ({meaning}), got {value!r}", param=name)


@public
def build_stack(*, kernel: str | Kernel = DEFAULT_KERNEL, upper: str = "vlan", nic: str = "router",
                nic_params: Mapping[str, Any] | None = None,
                settings: Mapping[str, Mapping[str, bool]] | None = None, port_nic: str | None = None,
                lower_name: str | None = None, peer_name: str | None = None) -> Stack:
    """The lower device ``nic`` (a key of NICS) with the devices of ``upper`` (a key of UPPERS) stacked on it,
    bottom-up, on ``kernel``.

    The lower device is ``lower_name`` (default eth0 for a NIC, veth0 for a veth pair, whose peer is
    ``peer_name``, default veth1); ``nic_params`` override its driver profile's probe parameters. ``port_nic`` (a
    key of NICS) adds eth1 (or the next veth pair) as a further port of the stack's bridge or slave of its bond
    (br_add_if / bond_enslave: a ONE_FOR_ALL feature needs some port to have it). Then ``settings`` {device:
    {ethtool name: on}} are applied with Device.ethtool_K, lowest device first (an upper device then sees its
    lower device's final features); a fixed feature raises FixedFeatureError."""
    _one_of("upper", upper, tuple(UPPERS), "the devices stacked on the lower device")
    _one_of("nic", nic, tuple(NICS), "the lower device: a vnetlab.netdev driver profile or a veth pair")
    k = _kernel(kernel)
    net = netdev.Namespace(kernel=k)
    below = _lower(net, nic, lower_name, peer_name, nic_params)
    chain = [below]
    for kind in UPPERS[upper]:
        chain.append(_stack_on(net, kind, chain[-1]))
    ports = ()
    if port_nic is not None:
        _one_of("port_nic", port_nic, tuple(NICS), "a lower device added as another bridge port or bond slave")
        master = next((d for d in chain if d.kind in MASTERS), None)
        if master is None:
            raise ArgumentError(f"port_nic={port_nic!r} needs a bridge or bond in the stack; upper={upper!r} has none",
                                param="port_nic")
        ports = (_lower(net, port_nic, None, None, None),)
        net.set_master(ports[0], master)
    stack = Stack(net, tuple(reversed(chain)), k, upper, nic, ports)
    names = [d.name for d in (*chain, *ports)]
    unknown = set(settings or {}) - set(names)
    if unknown:
        raise ValueError(f"settings names unknown devices {sorted(unknown)}; this stack has {names}")
    for dev in (*ports, *chain):
        wanted = (settings or {}).get(dev.name)
        if wanted:
            dev.ethtool_K(dict(wanted))
    return stack


@public
def send_gso(stack: Stack, *, segs: GroSegs = 44, gso_size: GsoSize = 1472,
             fraglist: bool = True) -> tuple[Skb, xmit.TxResult]:
    """A forwarded UDP GRO skb (fraglist: rx-gro-list; else rx-udp-gro-forwarding) sent to the stack's top device
    (xmit.gso_skb, xmit.send)."""
    skb = xmit.gso_skb(segs=segs, gso_size=gso_size, fraglist=fraglist, kernel=stack.kernel)
    return skb, xmit.send(stack.egress, skb, kernel=stack.kernel, port=stack.port)


# --------------------------------------------------------------------------------------------------
# One feature as ethtool -k shows it

STATES = ("on", "off", "on, fixed", "off, fixed", "requested on, off")


@dataclass(frozen=True)
class Cell:
    """One feature of one device as ethtool -k shows it, plus whether it is in wanted_features.

    "requested on, off" is what ethtool prints as ``off [requested on]`` (net/ethtool/features.c
    ethnl_set_features keeps the request in wanted_features; ethtool's dump_features prints it)."""

    feature: str  # NETIF name
    ethtool: str
    on: bool
    fixed: bool  # not in hw_features, or in NETIF_F_NEVER_CHANGE (Device.ethtool_k)
    wanted: bool

    @property
    def state(self) -> str:
        """One of STATES."""
        if self.fixed:
            return "on, fixed" if self.on else "off, fixed"
        if self.on:
            return "on"
        return "requested on, off" if self.wanted else "off"

    @property
    def reason(self) -> str:
        """Why the cell is in its state, in the kernel's terms (net/core/dev.c __netdev_update_features,
        net/ethtool/features.c)."""
        return {
            "on, fixed": "set by the driver or the stacking, not in hw_features: ethtool -K cannot change it",
            "off, fixed": "not in hw_features (nor set by the driver or the stacking): ethtool -K cannot turn it on",
            "on": "in hw_features and wanted_features, and the fix-ups keep it",
            "off": "in hw_features but not in wanted_features (turned off, or off by default)",
            "requested on, off": "in wanted_features, but netdev_fix_features, the device's ndo_fix_features or "
                                 "what its lower device has turns it off",
        }[self.state]


@public
def device_cells(dev: netdev.Device, names: Sequence[str]) -> list[Cell]:
    """The cells of ``names`` (NETIF names) that this device's kernel has (NETIF_F_GSO_FRAGLIST is absent before
    5.6, ...), read from Device.ethtool_k and wanted_features."""
    t = F.table(dev.ns.kernel)
    unknown = [n for n in names if n not in F.any_kernel_features()]  # a typo, not a bit this kernel lacks
    if unknown:
        raise ValueError(f"names {unknown} are no NETIF_F feature of any modelled kernel "
                         "(NETIF names without the prefix, e.g. 'GSO_UDP_L4')")
    shown = dev.ethtool_k()
    wanted = dev.wanted_features
    out = []
    for n in names:
        eth = t.ethtool.get(n)
        if eth is None:
            continue
        on, fixed = shown[eth]
        out.append(Cell(n, eth, on, fixed, n in wanted))
    return out


@public
def feature_states(dev: netdev.Device, names: Sequence[str] = STACK_FEATURES) -> list[tuple[str, str, bool, bool]]:
    """(NETIF_F name, ethtool name, on, fixed) for the features this kernel has, as ethtool -k shows them."""
    return [(c.feature, c.ethtool, c.on, c.fixed) for c in device_cells(dev, names)]


# --------------------------------------------------------------------------------------------------
# The feature grid: every device's cells and what validate_xmit_skb did to each skb kind there


@dataclass(frozen=True)
class Verdict:
    """What validate_xmit_skb and the driver did to one skb kind at one device (from xmit.send's hops)."""

    action: str  # "segments", "linearizes", "passes", "hw_gso", "to_peer", "not_reached"
    skbs_in: int = 0
    skbs_out: int = 0
    method: str = ""  # the segmentation function: skb_segment, skb_segment_list, __udp_gso_segment, ...
    reason: str = ""  # why validate_xmit_skb segmented or linearized here


@dataclass(frozen=True)
class GridRow:
    name: str
    kind: str
    label: str
    cells: tuple[Cell, ...]
    verdicts: Mapping[str, Verdict]


@dataclass(frozen=True)
class FeatureGrid:
    """A stack's devices top-down with their feature cells and what happened to each skb kind."""

    stack: Stack
    columns: tuple[str, ...]
    rows: tuple[GridRow, ...]
    gso_software: frozenset[str]
    sent: Mapping[str, tuple[Skb, xmit.TxResult]]  # skb kind -> (skb, xmit.send's result); empty if not sent

    @property
    def kernel(self) -> Kernel:
        return self.stack.kernel

    @public
    def row(self, name: str) -> GridRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no device {name!r} in this grid; rows: {[r.name for r in self.rows]}")

    @public
    def segmented_at(self, skb_kind: str) -> str | None:
        return self.sent[skb_kind][1].segmented_at


def _verdict(hop: xmit.Hop | None) -> Verdict:
    if hop is None:
        return Verdict("not_reached")
    n_in, n_out = hop.skbs_in, hop.skbs_out
    if hop.action == "segmented":
        return Verdict("segments", n_in, n_out, hop.method, hop.reason)
    if hop.action == "linearized":
        return Verdict("linearizes", n_in, n_out, reason=hop.reason)
    if "handed to peer" in hop.actions:
        return Verdict("to_peer", n_in, n_out)
    if "segmented by hardware" in hop.actions:
        return Verdict("hw_gso", n_in, n_out)
    return Verdict("passes", n_in, n_out)


def _row_label(dev: Any) -> str:
    below = dev.lowers[0].name if dev.lowers else ""
    if dev.kind == "nic":
        return f"nic, driver {dev.driver}"
    if dev.kind in MASTERS:
        return f"{dev.kind}, {'port' if dev.kind == 'bridge' else 'slave'} {below}"
    if dev.kind == "veth":
        return f"veth, peer {dev.peer.name}" if getattr(dev, "peer", None) is not None else "veth"
    return f"{dev.kind} on {below}"


@public
def feature_grid(stack: Stack, *, udp_segs: GroSegs = 17, fraglist_segs: GroSegs = 44, gso_size: GsoSize = 1472,
                 columns: Sequence[str] = GRID_FEATURES, send: bool = True) -> FeatureGrid:
    """Cells of every device (ethtool -k, wanted_features) and where each skb kind sent to ``stack.egress``
    is segmented. The UDP GSO skb holds its payload in frags (``udp_segs`` <= MAX_SKB_FRAGS 17 keeps it free of a
    frag_list, as a UDP_SEGMENT socket builds it); the fraglist skb is what rx-gro-list builds (xmit.gso_skb).
    ``send=False``: the cells only (no skb sent, no verdicts)."""
    sent = {"udp_gso": send_gso(stack, segs=udp_segs, gso_size=gso_size, fraglist=False),
            "fraglist": send_gso(stack, segs=fraglist_segs, gso_size=gso_size, fraglist=True)} if send else {}
    devs = stack.devices()
    rows = []
    for dev in devs:
        cells = tuple(device_cells(dev, columns))
        verdicts = {}
        for key, (_skb, tx) in sent.items():
            hop = next((h for h in tx.hops if h.name == dev.name), None)
            verdicts[key] = _verdict(hop)
        rows.append(GridRow(dev.name, dev.kind, _row_label(dev), cells, verdicts))
    cols = tuple(c.feature for c in rows[0].cells)
    soft = frozenset(F.mask("GSO_SOFTWARE", kernel=stack.kernel)) & frozenset(cols)
    return FeatureGrid(stack, cols, tuple(rows), soft, sent)
