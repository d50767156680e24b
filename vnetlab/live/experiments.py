"""The experiments: one set-up built in the running kernel and in the model, compared step by step.

:func:`mirror_lab` (features of veth / macvlan / bridge devices through ethtool -K steps), and UDP sends across a
veth pair (:func:`udp_segment_lab`, :func:`veth_gro_lab`, :func:`vxlan_lab`), printed by :func:`transfer_table`.
"""

from __future__ import annotations

import errno
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from vnetlab.checks import DeviceMtu, In, IpVersion, UdpPayloadLen, public
from vnetlab.errors import ArgumentError
from vnetlab.ethtool import FeatureState
from vnetlab.headers import SOL_UDP, UDP_GRO, UDP_SEGMENT
from vnetlab.live.compare import Comparison, compare_k
from vnetlab.live.lab import Lab, LiveDevice
from vnetlab.live.profile import running_profile
from vnetlab.live.sockets import drain, udp_socket_in

# ---------------------------------------------------------------------------------------------------------
# The model (vnetlab.netdev) against this kernel, step by step (notebook 60 and tests/test_live.py)
# ---------------------------------------------------------------------------------------------------------

# One topology built both ways: veth v0-v1 with macvlan mv0 on v0; veth v2-v3; bridge br0 with ports v1, v3;
# macvlan mv1 on br0, so that a port's change must travel two levels up (port -> bridge -> macvlan).
MIRROR_DEVICES = ("v0", "v1", "mv0", "v2", "v3", "br0", "mv1")

# Cumulative steps: (label, operations). An operation is ("master", port, bridge) or ("K", device, changes),
# the latter applied as `ethtool -K` to the kernel and as ethtool_K() to the model.
MIRROR_STEPS: tuple[tuple[str, tuple[tuple, ...]], ...] = (
    ("built, bridge without ports", ()),
    ("v1 and v3 enslaved to br0", (("master", "v1", "br0"), ("master", "v3", "br0"))),
    ("v0 tx-udp-segmentation off", (("K", "v0", {"tx-udp-segmentation": False}),)),
    ("v0 tx-gso-list off", (("K", "v0", {"tx-gso-list": False}),)),
    ("v0 scatter-gather off", (("K", "v0", {"tx-scatter-gather": False, "tx-scatter-gather-fraglist": False}),)),
    ("v0 tx-checksumming off", (("K", "v0", {"tx-checksum-ip-generic": False, "tx-checksum-sctp": False}),)),
    ("v1 tx-udp-segmentation off (one bridge port)", (("K", "v1", {"tx-udp-segmentation": False}),)),
    ("v3 tx-udp-segmentation off (both bridge ports)", (("K", "v3", {"tx-udp-segmentation": False}),)),
    ("v1 tx-gso-list and rx-gro-list toggled", (("K", "v1", {"tx-gso-list": False, "rx-gro-list": True}),)),
    ("v3 scatter-gather off (bridge port)", (("K", "v3", {"tx-scatter-gather": False}),)),
    ("v1 scatter-gather off too (all bridge ports)", (("K", "v1", {"tx-scatter-gather": False}),)),
    ("v0 and v3 back on", (
        ("K", "v0", {"tx-udp-segmentation": True, "tx-gso-list": True, "tx-scatter-gather": True,
                     "tx-scatter-gather-fraglist": True, "tx-checksum-ip-generic": True,
                     "tx-checksum-sctp": True}),
        ("K", "v3", {"tx-scatter-gather": True, "tx-udp-segmentation": True}),
        ("K", "v1", {"tx-scatter-gather": True}),
    )),
    ("v0 rx-gro on, mv0 rx-lro on", (("K", "v0", {"rx-gro": True}), ("K", "mv0", {"rx-lro": True}))),
    ("mv0 rx-gro off, br0 tx-udp-segmentation off", (
        ("K", "mv0", {"rx-gro": False}),
        ("K", "br0", {"tx-udp-segmentation": False}),
    )),
    ("br0 back on, v1 tx-gso-list on, v3 tx-checksumming off", (
        ("K", "br0", {"tx-udp-segmentation": True}),
        ("K", "v1", {"tx-gso-list": True}),
        ("K", "v3", {"tx-checksum-ip-generic": False, "tx-checksum-sctp": False}),
    )),
    # ethtool's legacy names (vnetlab.ethtool): the same words on both sides, each expanded per device
    ("legacy names: v0 sg off, v2 gro on, v3 tx on", (
        ("K", "v0", {"sg": False}), ("K", "v2", {"gro": True}), ("K", "v3", {"tx": True}),
    )),
    ("legacy names: v0 scatter-gather on, v2 generic-receive-offload off, mv0 gro on", (
        ("K", "v0", {"scatter-gather": True}), ("K", "v2", {"generic-receive-offload": False}),
        ("K", "mv0", {"gro": True}),
    )),
)



@dataclass(frozen=True)
class MirrorRow:
    """One device after one step: the comparison, or why the model could not follow the kernel; ``kernel_k``
    is what the kernel showed, {feature: FeatureState}."""

    step: str
    device: str
    result: Comparison | str
    kernel_k: Mapping[str, FeatureState] | None = field(default=None, repr=False, compare=False)

    @property
    def agrees(self) -> bool:
        return not isinstance(self.result, str) and bool(self.result)


class _MirrorModel:
    """MIRROR_DEVICES in vnetlab.netdev for ``kernel``; :meth:`apply` is one step's operation, :attr:`broken`
    says where the model first refused what the kernel did (every later step then fails)."""

    def __init__(self, kernel: str) -> None:
        from vnetlab import netdev

        self.net = net = netdev.Namespace(kernel=kernel)
        self.devices: dict[str, Any] = {}
        self.devices["v0"], self.devices["v1"] = net.veth("v0", "v1")
        self.devices["v2"], self.devices["v3"] = net.veth("v2", "v3")
        self.devices["mv0"] = net.macvlan("mv0", lower=self.devices["v0"])
        self.devices["br0"] = net.bridge("br0")
        self.devices["mv1"] = net.macvlan("mv1", lower=self.devices["br0"])
        self.broken: str | None = None

    def apply(self, label: str, op: tuple) -> None:
        if self.broken is not None:
            return
        try:
            if op[0] == "master":
                self.net.set_master(self.devices[op[1]], self.devices[op[2]])
            else:
                self.devices[op[1]].ethtool_K(op[2])
        except Exception as exc:  # the model refused what the kernel did
            self.broken = f"model failed at {label!r}, {op}: {type(exc).__name__}: {exc}"

    def row(self, label: str, name: str, kernel_k: Mapping[str, FeatureState],
            fields: tuple[str, ...]) -> MirrorRow:
        if self.broken is not None:
            return MirrorRow(label, name, self.broken, kernel_k)
        return MirrorRow(label, name, compare_k(self.devices[name].ethtool_k(), kernel_k, device=name,
                                                fields=fields), kernel_k)


@public
def mirror_lab(*, kernel: str | None = None, steps: Iterable[tuple[str, tuple[tuple, ...]]] | None = None,
               fields: Iterable[str] = ("on", "fixed", "wanted")) -> list[MirrorRow]:
    """Build MIRROR_DEVICES in a namespace lab and in the model (``kernel``, default the running kernel's
    profile), apply each step to both, compare every feature."""
    kernel = kernel or running_profile()
    steps = MIRROR_STEPS if steps is None else steps
    fields = tuple(fields)
    rows: list[MirrorRow] = []
    with Lab(tag="mirror") as lab:
        model = _MirrorModel(kernel)
        real: dict[str, LiveDevice] = {}
        real["v0"], real["v1"] = lab.veth("v0", "v1")
        real["v2"], real["v3"] = lab.veth("v2", "v3")
        real["mv0"] = lab.macvlan("mv0", lower=real["v0"])
        real["br0"] = lab.bridge("br0")
        real["mv1"] = lab.macvlan("mv1", lower=real["br0"])
        for label, operations in steps:
            for op in operations:
                if op[0] == "master":
                    lab.set_master(real[op[1]], real[op[2]])
                else:
                    real[op[1]].ethtool_K(op[2])
                model.apply(label, op)
            for name in MIRROR_DEVICES:
                rows.append(model.row(label, name, real[name].features(), fields))
    return rows


@public
def mirror_replay(recorded: Iterable[tuple[str, tuple[tuple, ...], Mapping[str, Mapping[str, FeatureState]]]], *,
                  kernel: str, fields: Iterable[str] = ("on", "fixed", "wanted")) -> list[MirrorRow]:
    """:func:`mirror_lab` against a recorded kernel: each (step label, operations, {device: kernel_k}) applied
    to the model of ``kernel`` and compared with what that kernel showed then."""
    fields = tuple(fields)
    model = _MirrorModel(kernel)
    rows = []
    for label, operations, kernel_ks in recorded:
        for op in operations:
            model.apply(label, op)
        rows.extend(model.row(label, name, kernel_ks[name], fields) for name in MIRROR_DEVICES)
    return rows



@public
def mirror_table(rows: Iterable[MirrorRow]) -> str:
    """One line per step of :func:`mirror_lab`: ``agree`` when all devices show the same features in the kernel
    and the model, else ``DIFFER`` with each differing device's features below; a count at the end."""
    rows = list(rows)
    lines = []
    for step in dict.fromkeys(r.step for r in rows):
        bad = [r for r in rows if r.step == step and not r.agrees]
        lines.append(f"{'agree' if not bad else 'DIFFER':6} {step}")
        lines += [f"       {r.device} {r.result}" for r in bad]
    lines.append(f"{sum(r.agrees for r in rows)} of {len(rows)} device states agree")
    return "\n".join(lines)


# The two steps of MIRROR_STEPS that turn tx-udp-segmentation off on br0's ports, one and then both.
BRIDGE_STEPS = ("v1 tx-udp-segmentation off (one bridge port)", "v3 tx-udp-segmentation off (both bridge ports)")


@public
def bridge_ports(rows: Iterable[MirrorRow], *, kernel: str) -> str:
    """br0's ``tx-udp-segmentation`` after each of :data:`BRIDGE_STEPS`, the kernel's (from ``rows``, live or
    recorded :class:`MirrorRow`) beside a fresh model of ``kernel`` with only the two ports (net/bridge/br_if.c
    br_features_recompute: a NETIF_F_ONE_FOR_ALL bit stays while one port has it)."""
    from vnetlab import netdev

    by_step = {r.step: r.kernel_k for r in rows if r.device == "br0"}
    net = netdev.Namespace(kernel=kernel)
    br0 = net.bridge("br0")
    ports = {"v1": net.veth("v0", "v1")[1], "v3": net.veth("v2", "v3")[1]}
    for port in ports.values():
        net.set_master(port, br0)
    lines = []
    for port, step in zip(("v1", "v3"), BRIDGE_STEPS):
        ports[port].ethtool_K({"tx-udp-segmentation": False})
        model = br0.ethtool_k()["tx-udp-segmentation"]
        seen = by_step.get(step)
        real = "(not run)" if seen is None else seen["tx-udp-segmentation"]
        lines.append(f"ethtool -K {port} tx-udp-segmentation off -> br0: model {model}, kernel {real}")
    return "\n".join(lines)

_ADDR = {4: ("10.77.0.1", "10.77.0.2", 24), 6: ("fd77::1", "fd77::2", 64)}
_PORT = 9000


@dataclass(frozen=True)
class SideResult:
    """One side of a UDP transfer: the send's errno name (or None), what recvmsg returned (bytes per call and
    the UDP_GRO cmsg, None when absent), and the skbs the receiving veth took in by each path."""

    error: str | None
    sizes: tuple[int, ...] = ()
    gso_sizes: tuple[int | None, ...] = ()
    rx_skbs: int | None = None
    napi_skbs: int | None = None
    inner_skbs: int | None = None  # vxlan_lab: the skbs the vxlan device handed up (its rx_packets)

    def key(self) -> tuple:
        return (self.error, self.sizes, self.gso_sizes, self.rx_skbs, self.napi_skbs, self.inner_skbs)


@dataclass(frozen=True)
class TransferRow:
    """One UDP send across a veth pair, kernel beside model."""

    label: str
    length: int
    gso_size: int
    ip: int
    udp_gro: bool
    kernel: SideResult
    model: SideResult

    @property
    def agrees(self) -> bool:
        return self.kernel.key() == self.model.key()

    def __str__(self) -> str:
        def show(r: SideResult) -> str:
            if r.error:
                return r.error
            calls = len(r.sizes)
            head = f"{calls} recvmsg" + (f" {r.sizes[0]}" + ("..." if calls > 1 else "") if calls else "")
            gso = sorted({g for g in r.gso_sizes if g})
            return (head + (f" gso_size {gso}" if gso else "") +
                    (f", {r.rx_skbs} skb(s) in ({r.napi_skbs} by NAPI)" if r.rx_skbs is not None else ""))

        mark = "agree " if self.agrees else "DIFFER"
        sock = "UDP_GRO" if self.udp_gro else "plain"
        return (f"{mark} {self.label}: IPv{self.ip} {self.length} B, UDP_SEGMENT {self.gso_size}, {sock} receiver: "
                f"kernel {show(self.kernel)} | model {show(self.model)}")


_TABLE_BY = ("send", "receiver")


def _side_text(r: SideResult) -> str:
    """The errno, or "N recv ×first size [gso G], S skb (P NAPI)"."""
    if r.error:
        return r.error
    gso = sorted({g for g in r.gso_sizes if g})
    text = f"{len(r.sizes)} recv" + (f" ×{r.sizes[0]}" if r.sizes else "") + (f" gso {gso[0]}" if gso else "")
    if r.rx_skbs is not None:
        text += f", {r.rx_skbs} skb" + ("" if r.napi_skbs is None else f" ({r.napi_skbs} NAPI)")
    if r.inner_skbs is not None:
        text += f", {r.inner_skbs} inner"
    return text


@public
def transfer_table(rows: Iterable[TransferRow], *, by: str = "send") -> str:
    """One line per transfer of :func:`udp_segment_lab`, :func:`veth_gro_lab` or :func:`vxlan_lab`: ``agree``
    or ``DIFFER``, the case, then the kernel's result and the model's: "(same)" where they agree, else the model's
    on a line of its own under the kernel's (so that a table fits 100 columns).

    A result is the send's errno, or the datagrams the receiver read (recvmsg calls × the first one's size, and
    UDP_GRO's gso_size cmsg) and the skbs the receiving veth took in (how many through its NAPI poll).
    ``by``: "send" names each case by its payload and UDP_SEGMENT, "receiver" by the receiver's configuration
    (the row's label, as :func:`veth_gro_lab` varies it).
    """
    if by not in _TABLE_BY:
        raise ArgumentError(f"by={by!r} must be one of {', '.join(_TABLE_BY)}: name each line by the send (payload "
                            "and UDP_SEGMENT) or by the receiver's configuration", param="by")
    lines = [f"{'':6} {by:33} {'kernel':40} model"]
    for r in rows:
        if not isinstance(r, TransferRow):
            raise ArgumentError(f"rows must hold live.TransferRow (from udp_segment_lab, veth_gro_lab or vxlan_lab), "
                                f"got {type(r).__name__}", param="rows")
        case = r.label if by == "receiver" else f"{r.length} B, UDP_SEGMENT {r.gso_size}"
        kernel = _side_text(r.kernel)
        if r.agrees:  # within 100 columns: the model's column repeats nothing
            lines.append(f"{'agree':6} {case:33} {kernel:40} (same)")
        else:
            lines.append(f"{'DIFFER':6} {case:33} {kernel}")
            lines.append(f"{'':6} {'model:':>33} {_side_text(r.model)}")
    return "\n".join(lines)


@dataclass
class _Pair:
    lab: Lab
    tx_ns: str
    rx_ns: str
    v0: LiveDevice
    v1: LiveDevice
    ip: int


def _udp_pair(lab: Lab, ip: int, mtu: int) -> _Pair:
    """v0 in one namespace, v1 in another, addressed, with permanent neighbours (no ARP/ND while measuring);
    IPv6 off for an IPv4 pair so no router solicitation or MLD report is counted."""
    tx_ns = lab.netns
    rx_ns = lab.add_namespace()
    for ns in (tx_ns, rx_ns):
        if ip == 4:
            lab.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            lab.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        else:
            # no router solicitation, no DAD probe of the link-local address while measuring
            for key, value in (("router_solicitations", "0"), ("accept_ra", "0"), ("accept_dad", "0"),
                               ("dad_transmits", "0")):
                lab.sysctl(ns, f"net.ipv6.conf.default.{key}", value)
            # MLD reports (and their repeats) within a millisecond of each group join, i.e. while the lab is built
            lab.sysctl(ns, "net.ipv6.conf.default.mldv1_unsolicited_report_interval", "1")
            lab.sysctl(ns, "net.ipv6.conf.default.mldv2_unsolicited_report_interval", "1")
    v0, v1 = lab.veth("v0", "v1", peer_netns=rx_ns, up=False)
    for d in (v0, v1):
        lab.set_mtu(d, mtu)
        # no MLD reports (IPv6 joins its solicited-node groups by multicast) in the middle of a measurement
        lab.set_multicast(d, False)
    a0, a1, plen = _ADDR[ip]
    lab.addr(v0, f"{a0}/{plen}")
    lab.addr(v1, f"{a1}/{plen}")
    lab.up(v0)
    lab.up(v1)
    lab.neigh(v0, a1, lab.link_json(v1)["address"])
    lab.neigh(v1, a0, lab.link_json(v0)["address"])
    if ip == 6:
        time.sleep(0.1)  # let the last MLD report of the group joins pass before anything is counted
    return _Pair(lab, tx_ns, rx_ns, v0, v1, ip)


def _kernel_transfer(pair: _Pair, length: int, gso_size: int, udp_gro: bool) -> SideResult:
    import socket

    a0, a1, _ = _ADDR[pair.ip]
    rx = udp_socket_in(pair.rx_ns, pair.ip)
    tx = udp_socket_in(pair.tx_ns, pair.ip)
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        if udp_gro:
            rx.setsockopt(SOL_UDP, UDP_GRO, 1)
        rx.bind((a1, _PORT))
        tx.connect((a1, _PORT))
        if gso_size:
            tx.setsockopt(SOL_UDP, UDP_SEGMENT, gso_size)
        rx_before, napi_before = pair.lab.rx_packets(pair.v1), _napi_packets(pair)
        try:
            tx.send(bytes(length))
        except OSError as exc:
            return SideResult(errno.errorcode.get(exc.errno, str(exc.errno)))
        sizes, gsos = drain(rx, length)
        rx_skbs = pair.lab.rx_packets(pair.v1) - rx_before
        return SideResult(None, tuple(sizes), tuple(gsos), rx_skbs, _napi_packets(pair) - napi_before)
    finally:
        tx.close()
        rx.close()


def _napi_packets(pair: _Pair) -> int:
    stats = pair.lab.ethtool_stats(pair.v1)
    return sum(v for k, v in stats.items() if re.fullmatch(r"rx_queue_\d+_xdp_packets", k))


@public
def model_transfer(kernel: str, config: Mapping[str, bool], mtu: DeviceMtu, length: int, gso_size: int,
                   ip: IpVersion, udp_gro: bool, sender: Mapping[str, bool] | None = None) -> SideResult:
    """vnetlab's side of one transfer of :func:`udp_segment_lab` / :func:`veth_gro_lab`: a veth pair at ``mtu``,
    the sender's ``ethtool -K`` ``sender``, the receiver configured by ``config``, one UDP send across it
    (:func:`vnetlab.udp.send_over_veth`)."""
    from vnetlab import netdev, udp

    net = netdev.Namespace(kernel=kernel)
    v0, v1 = net.veth("v0", "v1")
    for d in (v0, v1):
        d.set_mtu(mtu)
    if sender:
        v0.ethtool_K(sender)
    _configure_model_rx(v1, config)
    t = udp.send_over_veth(v0, length, gso_size=gso_size, udp_gro=udp_gro, ip=ip)
    if t.send.error is not None:
        return SideResult(t.send.error)
    assert t.rx is not None and t.recv is not None
    return SideResult(None, t.recv.sizes, t.recv.gso_sizes, len(t.rx.paths),
                      sum(p == "napi" for p in t.rx.paths))


def _rx_settings(config: Mapping[str, bool]) -> dict[str, bool]:
    """The receiving veth's `ethtool -K` for one configuration, the same words for the model and the kernel."""
    settings = {"rx-gro": config.get("gro", False)}
    if config.get("udp_gro_fwd"):
        settings["rx-udp-gro-forwarding"] = True
    if config.get("gro_list"):
        settings["rx-gro-list"] = True
    return settings


def _configure_model_rx(v1: Any, config: Mapping[str, bool]) -> None:
    v1.ethtool_K(_rx_settings(config))
    if config.get("xdp"):
        v1.set_xdp(True)


def _configure_kernel_rx(pair: _Pair, config: Mapping[str, bool]) -> None:
    pair.v1.ethtool_K(_rx_settings(config))
    if config.get("xdp"):
        pair.lab.attach_xdp_pass(pair.v1)


# The kernel's own selftest cases (tools/testing/selftests/net/udpgso.c testcases_v4 / _v6, MTU 1500), as
# (payload length, UDP_SEGMENT) with the IPv4 / IPv6 MSS 1472 / 1452 written out per IP version.
@public
def udp_segment_cases(ip: IpVersion = 4, kernel: str | None = None) -> tuple[tuple[int, int], ...]:
    """(length, gso_size) pairs of the selftest for ``ip`` at MTU 1500, with UDP_MAX_SEGMENTS of ``kernel``."""
    from vnetlab import udp

    mss = 1500 - (28 if ip == 4 else 48)
    most = 65535 - 28 if ip == 4 else 65535 + 40 - 48  # ETH_MAX_MTU - hdrs / IP6_MAX_MTU - hdrs
    segs = udp.udp_max_segments(kernel or running_profile())
    return ((1, 0), (mss, 0), (mss + 1, 0), (mss, mss), (mss, mss + 1), (mss + 1, mss + 2), (mss + 1, mss),
            (2 * mss, mss), (2 * mss + 1, mss), (most // mss * mss, mss), (most, mss), (most + 1, mss),
            (1, 1), (2, 1), (5, 2), (segs, 1), (segs + 1, 1))


@public
def udp_segment_lab(cases: Iterable[tuple[int, int]] | None = None, *, ip: IpVersion = 4,
                    mtu: DeviceMtu = 1500, udp_gro: bool = False, sender: Mapping[str, bool] | None = None,
                    kernel: str | None = None) -> list[TransferRow]:
    """Each (length, gso_size) sent with a real UDP_SEGMENT socket over a veth pair into a socket in another
    namespace (UDP_GRO set when ``udp_gro``), beside vnetlab.udp for the running kernel's profile.
    ``sender``: ``ethtool -K`` settings of the sending veth first (e.g. {"tx": False}: no checksum offload)."""
    kernel = kernel or running_profile()
    rows = []
    label = "udpgso" + (" " + " ".join(f"{k} {'on' if v else 'off'}" for k, v in sender.items()) if sender else "")
    with Lab(tag="udpgso", timeout=300) as lab:
        pair = _udp_pair(lab, ip, mtu)
        if sender:
            pair.v0.ethtool_K(sender)
        for length, gso in (udp_segment_cases(ip, kernel) if cases is None else cases):
            k = _kernel_transfer(pair, length, gso, udp_gro)
            m = model_transfer(kernel, {}, mtu, length, gso, ip, udp_gro, sender)
            rows.append(TransferRow(label, length, gso, ip, udp_gro, k, m))
    return rows


# Receive-side configurations of the veth v1 (the receiver): (label, settings)
VETH_GRO_CONFIGS: tuple[tuple[str, Mapping[str, bool]], ...] = (
    ("default (GRO off, no XDP)", {}),
    ("gro on", {"gro": True}),
    ("gro on, rx-udp-gro-forwarding on", {"gro": True, "udp_gro_fwd": True}),
    ("gro on, rx-gro-list on", {"gro": True, "gro_list": True}),
    ("XDP_PASS attached, gro off", {"xdp": True}),
    ("XDP_PASS attached, gro on", {"xdp": True, "gro": True}),
)


@public
def veth_gro_lab(configs: Iterable[tuple[str, Mapping[str, bool]]] | None = None, *,
                 segs: Annotated[int, In(1, 64, "segments per send: UDP_MAX_SEGMENTS (1 << 6) of 5.10-6.1")] = 10,
                 gso_size: UdpPayloadLen = 1400,
                 ip: IpVersion = 4, udp_gro: bool = True,
                 kernel: str | None = None) -> list[TransferRow]:
    """A UDP_SEGMENT send of ``segs`` x ``gso_size`` across a veth pair per receive configuration of the
    peer (GRO, rx-udp-gro-forwarding, rx-gro-list, an XDP_PASS program), kernel beside vnetlab: recvmsg calls
    and UDP_GRO cmsg of the receiving socket, and the skbs the peer took in (rx_packets) and by NAPI
    (ethtool -S rx_queue_N_xdp_packets)."""
    kernel = kernel or running_profile()
    rows = []
    for label, config in (VETH_GRO_CONFIGS if configs is None else configs):
        with Lab(tag="vethgro", timeout=120) as lab:
            pair = _udp_pair(lab, ip, 1500)
            _configure_kernel_rx(pair, config)
            time.sleep(0.05)
            k = _kernel_transfer(pair, segs * gso_size, gso_size, udp_gro)
            m = model_transfer(kernel, config, 1500, segs * gso_size, gso_size, ip, udp_gro)
            rows.append(TransferRow(label, segs * gso_size, gso_size, ip, udp_gro, k, m))
    return rows


# Receive-side configurations of the underlay veth v1 under vx1. tools/testing/selftests/net/udpgro_fwd.sh's
# tunnel cases attach an XDP program to the receiving veth (create_ns), which takes GSO_SOFTWARE off the sending
# veth (drivers/net/veth.c veth_fix_features): the vxlan skb is segmented there and 10 outer packets cross; then
# "GRO frag list over UDP tunnel" sets rx-gro-list and "GRO fwd over UDP tunnel" rx-udp-gro-forwarding, and both
# expect 10 inner and 10 vxlan packets at INPUT.
VXLAN_RX_CONFIGS: tuple[tuple[str, Mapping[str, bool]], ...] = (
    ("vxlan over veth", {}),
    ("vxlan, v1 gro + rx-gro-list", {"gro": True, "gro_list": True}),
    ("vxlan, v1 XDP + gro", {"xdp": True, "gro": True}),
    ("vxlan, v1 XDP + rx-gro-list", {"xdp": True, "gro": True, "gro_list": True}),
    ("vxlan, v1 XDP + rx-udp-gro-fwd", {"xdp": True, "gro": True, "udp_gro_fwd": True}),
)


@public
def vxlan_lab(lengths: Iterable[tuple[int, int]] = ((14000, 1400), (1400, 0)), *,
              configs: Iterable[tuple[str, Mapping[str, bool]]] | None = None, udp_gro: bool = False,
              kernel: str | None = None) -> list[TransferRow]:
    """UDP_SEGMENT sends through a vxlan device (vx0 over veth v0, peer v1 with vx1 in another namespace):
    the skbs that cross the veth (v1's rx_packets), the skbs vx1 hands up (its rx_packets: vxlan_rcv ->
    gro_cells_receive) and the datagrams the socket behind vx1 reads, kernel beside vnetlab
    (netdev.Namespace.vxlan, xmit.send's encapsulation, vnetlab.vxlan's receive side).

    ``configs``: (label, settings) of the underlay v1 (:data:`VXLAN_RX_CONFIGS`; default: the first only, as
    recorded); ``udp_gro``: the receiving socket sets UDP_GRO."""
    kernel = kernel or running_profile()
    rows = []
    for label, config in (VXLAN_RX_CONFIGS[:1] if configs is None else configs):
        rows.extend(_vxlan_config(label, config, lengths, udp_gro, kernel))
    return rows


def _vxlan_config(label: str, config: Mapping[str, bool], lengths: Iterable[tuple[int, int]], udp_gro: bool,
                  kernel: str) -> list[TransferRow]:
    import socket

    rows = []
    with Lab(tag="vxlan", timeout=120) as lab:
        pair = _udp_pair(lab, 4, 1500)
        inner = ("10.88.0.1", "10.88.0.2")
        vxs = []
        for dev, local, remote, addr in ((pair.v0, "10.77.0.1", "10.77.0.2", inner[0]),
                                         (pair.v1, "10.77.0.2", "10.77.0.1", inner[1])):
            vx = lab.vxlan("vx0" if dev is pair.v0 else "vx1", vni=42, underlay=dev, local=local, remote=remote,
                           up=False)
            lab.set_multicast(vx, False)
            lab.addr(vx, f"{addr}/24")
            lab.up(vx)
            vxs.append(vx)
        lab.neigh(vxs[0], inner[1], lab.link_json(vxs[1])["address"])
        lab.neigh(vxs[1], inner[0], lab.link_json(vxs[0])["address"])
        if config:
            _configure_kernel_rx(pair, config)
            time.sleep(0.05)
        for length, gso in lengths:
            rx = udp_socket_in(pair.rx_ns, 4)
            tx = udp_socket_in(pair.tx_ns, 4)
            try:
                rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
                if udp_gro:
                    rx.setsockopt(SOL_UDP, UDP_GRO, 1)
                rx.bind((inner[1], _PORT))
                tx.connect((inner[1], _PORT))
                if gso:
                    tx.setsockopt(SOL_UDP, UDP_SEGMENT, gso)
                before, inner_before = lab.rx_packets(pair.v1), lab.rx_packets(vxs[1])
                err = None
                try:
                    tx.send(bytes(length))
                except OSError as exc:
                    err = errno.errorcode.get(exc.errno, str(exc.errno))
                sizes, gsos = drain(rx, 0 if err else length)
                k = SideResult(err, tuple(sizes), tuple(gsos), lab.rx_packets(pair.v1) - before, None,
                               None if err else lab.rx_packets(vxs[1]) - inner_before)
            finally:
                tx.close()
                rx.close()
            rows.append(TransferRow(label, length, gso, 4, udp_gro, k,
                                    model_vxlan(kernel, length, gso, config, udp_gro)))
    return rows


@public
def model_vxlan(kernel: str, length: int, gso_size: int, config: Mapping[str, bool] | None = None,
                udp_gro: bool = False) -> SideResult:
    """vnetlab's side of :func:`vxlan_lab`: vx0 (VNI 42) on veth v0, vx1 on its peer v1 configured by
    ``config``, one UDP send through it (:func:`vnetlab.udp.send_over_vxlan`)."""
    from vnetlab import netdev, udp

    net = netdev.Namespace(kernel=kernel)
    v0, v1 = net.veth("v0", "v1")
    vx0 = net.vxlan("vx0", vni=42, underlay=v0)
    vx1 = net.vxlan("vx1", vni=42, underlay=v1)
    _configure_model_rx(v1, config or {})
    t = udp.send_over_vxlan(vx0, vx1, length, gso_size=gso_size, udp_gro=udp_gro)
    if t.send.error is not None:
        return SideResult(t.send.error)
    assert t.rx is not None and t.recv is not None and t.vxlan is not None
    return SideResult(None, t.recv.sizes, t.recv.gso_sizes, len(t.rx.paths), None, t.vxlan.rx_packets)
