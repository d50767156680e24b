"""Real skbs of the workbook's own experiments, captured through the net:* tracepoints, beside the model.

:func:`capture` builds one experiment in network namespaces (devices named ``vt<hex><role>``, unique to this call,
so that the tracefs filter on the device name records nothing else on the machine), records its skbs in a trace
instance of its own (:class:`~vnetlab.live.capture_tracefs.TraceSession`), asks the kernel the same question two
other ways (the receiving socket's SO_MEMINFO rmem_alloc, the devices' packet counters) and runs the model of the
same set-up for the profile of this kernel. :meth:`Capture.compare` lines each captured skb up with the model's and
names every field that disagrees.

Experiments (all UDP_SEGMENT sends of ``segs`` x ``gso_size`` into a socket behind the last device):

- "veth": a veth pair, receiver ``config``: "plain" (GRO off), "gro" (rx-gro on), "xdp" (an XDP_PASS program),
  "xdp+gro"; "nouso": the sending veth without tx-udp-segmentation (the GSO skb is cut where it meets it); the
  receive side (netif_rx_entry on the backlog path, napi_gro_receive_entry on veth's NAPI);
- "macvlan", "bridge", "vxlan", "vlan": the transmit side of a device stack over the same veth pair
  (net_dev_start_xmit at each device: where the GSO skb is still whole, where it was segmented);
- "tap": frames written to a tap device (tun_get_user, netif_rx).

VLAN devices need the 8021q module; on a kernel without it :func:`capture` ("vlan") raises LiveUnavailable saying so.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from vnetlab.checks import In, UdpPayloadLen, public
from vnetlab.errors import ArgumentError, LiveUnavailable
from vnetlab.headers import SOL_UDP, UDP_GRO, UDP_SEGMENT
from vnetlab.live.capture_formats import TRACEPOINT_GSO_TYPE_BITS, CapturedSkb, gso_type_names, parse_trace_text
from vnetlab.live.capture_tracefs import TraceSession
from vnetlab.skb import SKB_GSO_NAMES

__all__ = ["EXPERIMENTS", "VETH_CONFIGS", "Capture", "FieldDiff", "SkbComparison", "beside_model", "capture",
           "model_skbs"]

EXPERIMENTS = ("veth", "macvlan", "bridge", "vxlan", "vlan", "tap")
VETH_CONFIGS = ("plain", "gro", "xdp", "xdp+gro", "nouso")
_SO_MEMINFO, _SK_MEMINFO_RMEM_ALLOC = 55, 0  # include/uapi/asm-generic/socket.h, include/uapi/linux/sock_diag.h
_PORT = 9000
_RX_EVENTS = ("napi_gro_receive_entry", "napi_gro_frags_entry", "netif_receive_skb_entry", "netif_rx_entry",
              "netif_receive_skb_list_entry")


@dataclass(frozen=True)
class FieldDiff:
    field: str
    kernel: Any
    model: Any
    why: str = ""

    def __str__(self) -> str:
        return f"{self.field}: kernel {self.kernel}, model {self.model}" + (f" ({self.why})" if self.why else "")


@dataclass(frozen=True)
class SkbComparison:
    """One captured skb beside the model's skb at the same place (``model`` None: the model has none there)."""

    captured: CapturedSkb
    model: Mapping[str, Any] | None
    diffs: tuple[FieldDiff, ...]
    unseen: tuple[str, ...] = ()  # fields the tracepoint cannot show (gso_type above bit 15)

    @property
    def agrees(self) -> bool:
        return self.model is not None and not self.diffs

    def __str__(self) -> str:
        c = self.captured
        head = f"{c.event} {c.dev} len {c.len}"
        if self.model is None:
            return f"NO MODEL {head}: the model has no skb here"
        text = ("agree  " if not self.diffs else "DIFFER ") + head
        text += "".join(f"\n       {d}" for d in self.diffs)
        if self.unseen:
            text += f"\n       (not visible in the tracepoint: {', '.join(self.unseen)})"
        return text


class Capture(list):
    """The captured skbs of one experiment (a list of :class:`CapturedSkb`), with what else the kernel said
    (``meminfo_rmem``: SO_MEMINFO rmem_alloc of the receiving socket before it read; ``counters``: packets per
    device) and the model's skbs at each (event kind, device role) (``model``)."""

    experiment: str
    config: str
    kernel: str
    profile: str
    roles: dict[str, str]
    meminfo_rmem: int | None
    counters: dict[str, int]
    model: dict[tuple[str, str], list[dict]]
    received: tuple[int, ...]
    trace_text: str

    @public
    def role(self, dev: str) -> str:
        """The role ("tx", "rx", ...) of device ``dev`` in this experiment (its name if it has none)."""
        for r, name in self.roles.items():
            if name == dev:
                return r
        return dev

    @public
    def at(self, role: str, event: str | None = None) -> list[CapturedSkb]:
        """The captured skbs at device ``role`` ("tx", "rx", "upper", "tap"), of ``event`` if given."""
        name = self.roles.get(role, role)
        return [s for s in self if s.dev == name and (event is None or s.event == event)]

    @public
    def compare(self) -> list[SkbComparison]:
        """Each captured skb of a receive entry or net_dev_start_xmit beside the model's skb at the same place,
        in order; fields the source does not record are not compared."""
        out = []
        used: dict[tuple[str, str], int] = {}
        for s in self:
            kind = "rx" if s.event in _RX_EVENTS else "tx" if s.event == "net_dev_start_xmit" else None
            if kind is None:
                continue
            key = (kind, self.role(s.dev))
            models = self.model.get(key, [])
            i = used.get(key, 0)
            used[key] = i + 1
            m = models[i] if i < len(models) else None
            out.append(_compare_one(s, m))
        return out

    @public
    def table(self) -> str:
        rows = self.compare()
        head = (f"{self.experiment} ({self.config}) on {self.kernel}, model profile {self.profile}: "
                f"{sum(r.agrees for r in rows)} of {len(rows)} skbs agree")
        return "\n".join([head] + [str(r) for r in rows])


def _compare_one(s: CapturedSkb, m: Mapping[str, Any] | None) -> SkbComparison:
    if m is None:
        return SkbComparison(s, None, ())
    diffs = []
    unseen = []
    for name in ("len", "data_len", "truesize", "nr_frags", "gso_size", "gso_segs"):
        k = getattr(s, name)
        if k is None or m.get(name) is None:
            continue
        if k != m[name]:
            diffs.append(FieldDiff(name, k, m[name]))
    if s.gso_type is not None and m.get("gso_type") is not None:
        want = frozenset(m["gso_type"])
        got = gso_type_names(s.gso_type)
        if not s.gso_type_complete:
            hidden = {n for n in want if _gso_bit(n) >= TRACEPOINT_GSO_TYPE_BITS}
            unseen = [f"SKB_GSO_{n}" for n in sorted(hidden)]
            want = want - hidden
        if got != want:
            diffs.append(FieldDiff("gso_type", sorted(got), sorted(want)))
    return SkbComparison(s, m, tuple(diffs), tuple(unseen))


def _gso_bit(name: str) -> int:
    return SKB_GSO_NAMES.index(name)  # include/linux/skbuff.h enum skb_gso_type: bit i


def _skb_fields(skb: Any) -> dict[str, Any]:
    return {"len": skb.len, "data_len": skb.data_len, "truesize": skb.truesize, "nr_frags": skb.nr_frags,
            "gso_size": skb.gso_size, "gso_segs": skb.gso_segs, "gso_type": sorted(skb.gso_type),
            "skb": skb}


# ---------------------------------------------------------------------------------------------------------
# The model of each experiment


@public
def model_skbs(experiment: str, config: str = "plain", *, segs: int = 10, gso_size: int = 1400,
               kernel: str | None = None) -> dict[tuple[str, str], list[dict]]:
    """The model's skbs of ``experiment`` for ``kernel`` (default: the running kernel's profile), keyed by
    ("rx" or "tx", device role): what each device's ndo_start_xmit is handed (net_dev_start_xmit) and what the
    receiving device hands to the stack at its receive entry (napi_gro_receive_entry / netif_rx_entry)."""
    from vnetlab import netdev, udp
    from vnetlab.live.profile import running_profile

    _check_experiment(experiment, config)
    kernel = kernel or running_profile()
    net = netdev.Namespace(kernel=kernel)
    v0, v1 = net.veth("v0", "v1")
    if experiment == "tap":
        return {}
    top = v0
    if experiment == "macvlan":
        top = net.macvlan("mv0", lower=v0)
    elif experiment == "bridge":
        top = net.bridge("br0")
        net.set_master(v0, top)
    elif experiment == "vxlan":
        top = net.vxlan("vx0", vni=42, underlay=v0)
    elif experiment == "vlan":
        top = net.vlan("vl0", lower=v0, vid=10)
    if "gro" in config:
        v1.ethtool_K({"rx-gro": True})
    if "xdp" in config:
        v1.set_xdp(True)
    if config == "nouso":
        v0.ethtool_K({"tx-udp-segmentation": False})
    length = segs * gso_size
    if experiment == "vxlan":
        vx1 = net.vxlan("vx1", vni=42, underlay=v1)
        t = udp.send_over_vxlan(top, vx1, length, gso_size=gso_size, udp_gro=True)
    else:
        t = udp.send_over_veth(top, length, gso_size=gso_size, udp_gro=True)
    out: dict[tuple[str, str], list[dict]] = {}
    tx = t.send.tx
    if tx is not None:
        roles = {"v0": "tx", "mv0": "upper", "br0": "upper", "vx0": "upper", "vl0": "upper"}
        for hop in tx.hops:
            role = roles.get(hop.name, hop.name)
            if hop.name == "v0":
                out[("tx", role)] = [_skb_fields(s) for s in tx.skbs_to_driver]
            elif "segmented" not in hop.actions and t.send.skb is not None:
                out[("tx", role)] = [_skb_fields(t.send.skb)]
    if t.rx is not None:
        # the receive entry sees each skb veth_xmit handed over, before GRO: the peer's copies of what v0 sent
        out[("rx", "rx")] = [_skb_fields(s) for s in _rx_entry_skbs(t)]
    if getattr(t, "vxlan", None) is not None:
        # gro_cells_receive hands each decapsulated skb to the vxlan device's napi_gro_receive
        out[("rx", "inner_rx")] = [_skb_fields(s) for s in t.vxlan.decapsulated]
    return out


def _rx_entry_skbs(t: Any) -> list[Any]:
    """The skbs at the receiving veth's entry tracepoint: __dev_forward_skb pulled the Ethernet header
    (eth_type_trans), so each is the delivered skb before GRO merged anything."""
    rx = t.rx
    if rx.gro and len(rx.delivered) < len(rx.paths):
        return list(rx.delivered)  # merged: the model keeps no per-skb copy before GRO
    return list(rx.delivered)


def _check_experiment(experiment: str, config: str) -> None:
    if experiment not in EXPERIMENTS:
        raise ArgumentError(f"capture: experiment={experiment!r} is not one of {', '.join(EXPERIMENTS)}",
                            function="live.capture", param="experiment")
    if config not in VETH_CONFIGS:
        raise ArgumentError(f"capture: config={config!r} is not one of {', '.join(VETH_CONFIGS)} (the receiving "
                            "veth: GRO off, rx-gro on, an XDP_PASS program, both; or the sending veth without "
                            "tx-udp-segmentation)", function="live.capture", param="config")


@public
def beside_model(skbs: list, experiment: str, roles: Mapping[str, str], *, config: str = "plain",
                 segs: Annotated[int, In(1, 64, "segments per send")] = 10, gso_size: UdpPayloadLen = 1400,
                 kernel: str | None = None, release: str = "", label: str = "") -> Capture:
    """Captured skbs from anywhere (:func:`vnetlab.live.read_capture` of your own perf, bpftrace, pwru or retis
    file) as a :class:`Capture` beside the model of ``experiment``: ``roles`` maps "tx", "rx", "upper", ... to
    your device names; ``release`` is the kernel they came from (its profile is the model's, unless ``kernel``)."""
    from vnetlab.live.profile import running_profile

    c = Capture(skbs)
    c.experiment, c.config, c.kernel = experiment, config, release
    c.profile = kernel or (running_profile(release) if release else running_profile())
    c.roles, c.meminfo_rmem, c.counters, c.received, c.trace_text = dict(roles), None, {}, (), ""
    c.model = model_skbs(experiment, config, segs=segs, gso_size=gso_size, kernel=c.profile)
    c.label = label
    return c


# ---------------------------------------------------------------------------------------------------------
# The kernel


def _meminfo_rmem(sock: socket.socket) -> int:
    raw = sock.getsockopt(socket.SOL_SOCKET, _SO_MEMINFO, 64)
    return struct.unpack(f"{len(raw) // 4}I", raw)[_SK_MEMINFO_RMEM_ALLOC]


@public
def capture(experiment: str = "veth", config: str = "plain", *,
            segs: Annotated[int, In(1, 64, "segments per send: UDP_MAX_SEGMENTS of 5.10-6.1 is 64")] = 10,
            gso_size: UdpPayloadLen = 1400, kernel: str | None = None,
            settle: Annotated[float, In(0.0, 5.0, "seconds to wait for softirq work")] = 0.2,
            tag: str | None = None, alongside: Any = None) -> Capture:
    """As root: build ``experiment`` (one of :data:`EXPERIMENTS`; ``config`` the receiving veth's set-up, one
    of :data:`VETH_CONFIGS`), send one UDP_SEGMENT datagram train of ``segs`` x ``gso_size`` through it while
    its devices' net:* events are recorded, and return the :class:`Capture` with the model's skbs for
    ``kernel`` (default: the running kernel's profile). Namespaces, devices and the trace instance are removed
    before it returns, also on an exception or Ctrl-C. ``tag`` (6 hex digits) names the devices ``vt<tag>t``,
    ``vt<tag>r``, ...; ``alongside(devices)``, a context manager, runs around the send (another tracer
    recording the same devices)."""
    from vnetlab.live.lab import Lab
    from vnetlab.live.profile import running_profile
    from vnetlab.live.sockets import drain, udp_socket_in

    _check_experiment(experiment, config)
    if os.geteuid() != 0:
        raise LiveUnavailable("capturing skbs needs root (tracefs and the namespaces' devices); without root, "
                              "read a recorded capture: live.read_capture(live.recorded_capture_path('perf'))")
    profile = kernel or running_profile()
    tag = tag or os.urandom(3).hex()
    if not isinstance(tag, str) or not re.fullmatch(r"[0-9a-f]{6}", tag):
        raise ArgumentError(f"capture: tag={tag!r} must be 6 hex digits (device names vt<tag>t, IFNAMSIZ 16)",
                            function="live.capture", param="tag")
    around = alongside or (lambda devices: contextlib.nullcontext())
    roles = {"tx": f"vt{tag}t", "rx": f"vt{tag}r"}
    if experiment in ("macvlan", "bridge", "vxlan", "vlan"):
        roles["upper"] = f"vt{tag}u"
    if experiment in ("vxlan", "vlan"):
        roles["inner_rx"] = f"vt{tag}x"
    if experiment == "tap":
        roles = {"tap": f"vt{tag}p"}
    result = Capture()
    result.experiment, result.config, result.kernel, result.profile = experiment, config, os.uname().release, profile
    result.roles, result.counters, result.received = roles, {}, ()
    with Lab(tag="capture", timeout=120) as lab:
        if experiment == "tap":
            return _tap(lab, result, roles["tap"], segs, gso_size, settle)
        tx_ns, rx_ns = lab.netns, lab.add_namespace()
        for ns in (tx_ns, rx_ns):
            lab.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            lab.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        v0, v1 = lab.veth(roles["tx"], roles["rx"], peer_netns=rx_ns, up=False)
        lab.addr(v1, "10.77.0.2/24")
        top = v0
        if experiment == "macvlan":
            top = lab.macvlan(roles["upper"], lower=v0, up=False)
        elif experiment == "bridge":
            top = lab.bridge(roles["upper"], up=False)
            lab.set_master(v0, top)
            _quiet_bridge(tx_ns, top.name)
        elif experiment == "vlan":
            top = _vlan(lab, v0, roles["upper"], tx_ns)
        for d in (v0, v1, top):
            lab.set_multicast(d, False)  # no IGMP report among the skbs recorded
        if experiment == "vlan":  # the tagged frames reach a socket behind the peer's VLAN device
            inner = _vlan(lab, v1, roles["inner_rx"], rx_ns)
            lab.set_multicast(inner, False)
            lab.addr(inner, "10.78.0.2/24")
            lab.up(inner)
        if experiment == "vxlan":
            lab.addr(v0, "10.77.0.1/24")
            lab.up(v0)
            lab.up(v1)
            top = lab.vxlan(roles["upper"], vni=42, underlay=v0, local="10.77.0.1", remote="10.77.0.2", up=False)
            inner = lab.vxlan(roles["inner_rx"], vni=42, underlay=v1, local="10.77.0.2", remote="10.77.0.1",
                              up=False)
            lab.addr(inner, "10.88.0.2/24")
            lab.addr(top, "10.88.0.1/24")
            for d in (top, inner):
                lab.set_multicast(d, False)
                lab.up(d)
            lab.neigh(v0, "10.77.0.2", lab.link_json(v1)["address"])
            lab.neigh(v1, "10.77.0.1", lab.link_json(v0)["address"])
            lab.neigh(top, "10.88.0.2", lab.link_json(inner)["address"])
            dst = "10.88.0.2"
        elif experiment == "vlan":
            lab.addr(top, "10.78.0.1/24")
            for d in (v0, v1, top):
                lab.up(d)
            lab.neigh(top, "10.78.0.2", lab.link_json(inner)["address"])
            lab.neigh(inner, "10.78.0.1", lab.link_json(top)["address"])
            dst = "10.78.0.2"
        else:
            lab.addr(top, "10.77.0.1/24")
            for d in {top.name: top, v0.name: v0}.values():
                lab.up(d)
            lab.up(v1)
            lab.neigh(top, "10.77.0.2", lab.link_json(v1)["address"])
            lab.neigh(v1, "10.77.0.1", lab.link_json(top)["address"])
            dst = "10.77.0.2"
        if "gro" in config:
            v1.ethtool_K({"rx-gro": True})
        if "xdp" in config:
            lab.attach_xdp_pass(v1)
        if config == "nouso":
            v0.ethtool_K({"tx-udp-segmentation": False})
        time.sleep(0.05)
        rx = udp_socket_in(rx_ns, 4)
        tx = udp_socket_in(tx_ns, 4)
        try:
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            rx.setsockopt(SOL_UDP, UDP_GRO, 1)
            rx.bind((dst, _PORT))
            tx.connect((dst, _PORT))
            tx.setsockopt(SOL_UDP, UDP_SEGMENT, gso_size)
            devs = list(roles.values())
            before = {r: lab.rx_packets(lab.device(n, netns=rx_ns if r in ("rx", "inner_rx") else tx_ns))
                      for r, n in roles.items() if r in ("rx", "inner_rx")}
            with TraceSession(devs) as trace, around(devs):
                tx.send(bytes(segs * gso_size))
                time.sleep(settle)
                result.meminfo_rmem = _meminfo_rmem(rx)
                text = trace.text()
            sizes, _ = drain(rx, segs * gso_size)
            result.received = tuple(sizes)
            for r in before:
                result.counters[r] = lab.rx_packets(lab.device(roles[r], netns=rx_ns)) - before[r]
        finally:
            tx.close()
            rx.close()
    result.trace_text = text
    result.extend(parse_trace_text(text, source="tracefs"))
    result.model = model_skbs(experiment, config, segs=segs, gso_size=gso_size, kernel=profile)
    return result


def _quiet_bridge(netns: str, name: str) -> None:
    """No multicast snooping: the bridge then sends no IGMP query or report among the skbs recorded
    (net/bridge/br_multicast.c)."""
    from vnetlab.live.commands import COMMAND_TIMEOUT, run

    run(["ip", "-n", netns, "link", "set", "dev", name, "type", "bridge", "mcast_snooping", "0"],
        timeout=COMMAND_TIMEOUT)


def _vlan(lab: Any, lower: Any, name: str, netns: str) -> Any:
    """``ip link add link LOWER name NAME type vlan id 10``; without the 8021q module the kernel refuses the type."""
    from vnetlab.errors import LiveError
    from vnetlab.live.commands import COMMAND_TIMEOUT, run
    from vnetlab.live.lab import LiveDevice

    try:
        run(["ip", "-n", netns, "link", "add", "link", lower.name, "name", name, "type", "vlan", "id", "10"],
            timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        raise LiveUnavailable(f"this kernel cannot make a VLAN device ({exc}): the 8021q module "
                              "(CONFIG_VLAN_8021Q) is missing, so the VLAN stack cannot be captured here") from None
    return LiveDevice(name=name, netns=netns, kind="vlan")


_ETH_P_IP = 0x0800


def _udp_frame(payload: int, src_mac: bytes, dst_mac: bytes) -> bytes:
    """An Ethernet + IPv4 + UDP frame from 10.79.0.1 to 10.79.0.2:9000 (checksums: IP computed, UDP 0)."""
    ip_len = 20 + 8 + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0x4000, 64, 17, 0, socket.inet_aton("10.79.0.1"),
                      socket.inet_aton("10.79.0.2"))
    csum = sum(struct.unpack("!10H", hdr))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    hdr = hdr[:10] + struct.pack("!H", csum) + hdr[12:]
    udp = struct.pack("!HHHH", 40000, _PORT, 8 + payload, 0)
    return dst_mac + src_mac + struct.pack("!H", _ETH_P_IP) + hdr + udp + bytes(payload)


def _tap(lab: Any, result: Capture, name: str, segs: int, payload: int, settle: float) -> Capture:
    """``segs`` UDP frames of ``payload`` bytes written to a tap device (drivers/net/tun.c tun_get_user: an skb
    per write, handed to netif_rx) and read by a socket behind it."""
    import fcntl

    from vnetlab.live.commands import in_netns
    from vnetlab.live.sockets import drain, udp_socket_in

    ns = lab.netns
    payload = min(payload, 1472)
    ifr = struct.pack("16sH", name.encode(), 0x0002 | 0x1000)  # IFF_TAP | IFF_NO_PI (include/uapi/linux/if_tun.h)

    def open_tap() -> int:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, 0x400454CA, ifr)  # TUNSETIFF
        return fd

    try:
        fd = in_netns(ns, open_tap)
    except OSError as exc:
        raise LiveUnavailable(f"cannot create a tap device: {exc.strerror} (/dev/net/tun, CONFIG_TUN)") from None
    try:
        lab.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
        tap = lab.device(name)
        lab.addr(tap, "10.79.0.2/24")
        lab.up(tap)
        mac = bytes.fromhex(lab.link_json(tap)["address"].replace(":", ""))
        lab.neigh(tap, "10.79.0.1", "02:00:00:00:00:01")
        rx = udp_socket_in(ns, 4)
        try:
            rx.bind(("10.79.0.2", _PORT))
            before = lab.rx_packets(tap)
            with TraceSession([name]) as trace:
                for _ in range(segs):
                    os.write(fd, _udp_frame(payload, bytes.fromhex("020000000001"), mac))
                time.sleep(settle)
                result.meminfo_rmem = _meminfo_rmem(rx)
                text = trace.text()
            result.received = tuple(drain(rx, segs * payload)[0])
            result.counters["tap"] = lab.rx_packets(tap) - before
        finally:
            rx.close()
    finally:
        os.close(fd)
    result.trace_text = text
    result.extend(parse_trace_text(text, source="tracefs"))
    result.model = {}
    return result


