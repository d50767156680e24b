"""Network namespaces with veth / macvlan / bridge / vxlan devices in them, deleted again (:class:`Lab`)."""

from __future__ import annotations

import atexit
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vnetlab.checks import DeviceMtu, VxlanVni, check_float, public
from vnetlab.errors import LabTimeout, LiveError
from vnetlab.live.capability import require
from vnetlab.live.commands import COMMAND_TIMEOUT, check_ifname, netns_argv, run, unique_netns_name
from vnetlab.live.device_features import DeviceFeatures, SetResult, read_features, set_features
from vnetlab.live.xdp import attach_xdp_pass

# Namespaces created by this process and not yet deleted; atexit deletes any a crash left behind.
_OWNED_NETNS: set[str] = set()
# (name, inode) of every namespace this process created, so that a test can look for it afterwards.
CREATED_NETNS: list[tuple[str, int]] = []
_OWNED_LOCK = threading.Lock()


def _delete_netns(name: str) -> str | None:
    try:
        run(["ip", "netns", "delete", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        if os.path.exists(os.path.join("/run/netns", name)):
            return str(exc)
    with _OWNED_LOCK:
        _OWNED_NETNS.discard(name)
    return None


@atexit.register
def _delete_leftovers() -> None:
    with _OWNED_LOCK:
        names = sorted(_OWNED_NETNS)
    for name in names:
        _delete_netns(name)


@dataclass(frozen=True)
class LiveDevice:
    """A real device inside a lab namespace, with the same feature calls as a model device."""

    name: str
    netns: str | None
    kind: str = "device"

    @public
    def features(self, *, backend: str = "auto") -> DeviceFeatures:
        return read_features(self.name, netns=self.netns, backend=backend)

    def ethtool_k(self) -> DeviceFeatures:
        """What ``ethtool -k`` shows for this device, {feature: FeatureState}, as the model's ``ethtool_k()``."""
        return self.features()

    @public
    def ethtool_K(self, changes: Mapping[str, bool]) -> SetResult:  # noqa: N802 (ethtool's own spelling)
        return set_features(self.name, changes, netns=self.netns)


@dataclass
class Lab:
    """Network namespaces for experiments, deleted again on exit (only the ones this Lab created).

    >>> with Lab() as lab:                                   # doctest: +SKIP
    ...     v0, v1 = lab.veth("v0", "v1")
    ...     mv0 = lab.macvlan("mv0", lower=v0)
    ...     lab.set_master(v1, lab.bridge("br0"))
    ...     v0.ethtool_K({"tx-udp-segmentation": False})

    ``timeout`` (seconds) bounds the whole lab: a step started after it raises :class:`LabTimeout`, and
    every command has its own limit of :data:`COMMAND_TIMEOUT`. Deleting a namespace destroys the devices
    in it, so cleanup is one ``ip netns delete`` per namespace.
    """

    timeout: float = 120.0
    tag: str = "lab"
    namespaces: list[str] = field(default_factory=list, init=False)
    _deadline: float | None = field(default=None, init=False, repr=False)
    _devices: dict[tuple[str, str], LiveDevice] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        check_float("timeout", self.timeout, 0, None, "seconds the whole lab may take", lo_excluded=True,
                    function="live.Lab")
        if not re.fullmatch(r"[a-z0-9]{1,12}", self.tag):
            raise ValueError(f"tag must be 1-12 lowercase letters or digits, got {self.tag!r}")

    # context management ---------------------------------------------------------------------------------

    def __enter__(self) -> Lab:
        require(labs=True)
        self._deadline = time.monotonic() + self.timeout
        try:
            self.add_namespace()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete every namespace this lab created; raises LiveError naming any that would not go."""
        failures = []
        while self.namespaces:
            name = self.namespaces.pop()
            err = _delete_netns(name)
            if err is not None:
                failures.append(f"{name}: {err}")
        self._devices.clear()
        if failures:
            raise LiveError("could not delete lab namespaces: " + "; ".join(failures))

    # building -------------------------------------------------------------------------------------------

    @property
    def netns(self) -> str:
        """The lab's first namespace, where devices go unless told otherwise."""
        if not self.namespaces:
            raise LiveError("the lab is not open; use `with Lab() as lab:`")
        return self.namespaces[0]

    def _remaining(self) -> float:
        if self._deadline is None:
            raise LiveError("the lab is not open; use `with Lab() as lab:`")
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise LabTimeout(f"lab ran past its {self.timeout:.0f} s budget; namespaces are deleted on exit")
        return min(left, COMMAND_TIMEOUT)

    def _ip(self, netns: str | None, *args: str) -> None:
        argv = ["ip"] + (["-n", netns] if netns else []) + list(args)
        run(argv, timeout=self._remaining())

    def add_namespace(self) -> str:
        """Create one more uniquely named namespace owned by this lab and return its name."""
        self._remaining()
        name = unique_netns_name(self.tag)
        with _OWNED_LOCK:
            _OWNED_NETNS.add(name)
        try:
            run(["ip", "netns", "add", name], timeout=self._remaining())
        except BaseException:
            _delete_netns(name)
            raise
        self.namespaces.append(name)
        try:
            CREATED_NETNS.append((name, os.stat(os.path.join("/run/netns", name)).st_ino))
        except OSError:
            pass
        self._ip(name, "link", "set", "dev", "lo", "up")
        return name

    def _own_netns(self, netns: str | None) -> str:
        netns = netns or self.netns
        if netns not in self.namespaces:
            raise ValueError(f"netns: {netns!r} was not created by this lab")
        return netns

    def _register(self, name: str, netns: str, kind: str) -> LiveDevice:
        dev = LiveDevice(name=name, netns=netns, kind=kind)
        self._devices[(netns, name)] = dev
        return dev

    def _resolve(self, dev: LiveDevice | str, param: str, netns: str | None = None) -> LiveDevice:
        if isinstance(dev, LiveDevice):
            if dev.netns not in self.namespaces:
                raise ValueError(f"{param}: {dev.name!r} is not in this lab")
            return dev
        check_ifname(dev, param)
        ns = self._own_netns(netns)
        return self._devices.get((ns, dev)) or LiveDevice(name=dev, netns=ns)

    @public
    def veth(self, name: str, peer: str, *, netns: str | None = None, peer_netns: str | None = None,
             up: bool = True) -> tuple[LiveDevice, LiveDevice]:
        """A veth pair; ``peer_netns`` puts the peer in another namespace of this lab."""
        check_ifname(name, "name")
        check_ifname(peer, "peer")
        ns = self._own_netns(netns)
        peer_ns = self._own_netns(peer_netns)
        args = ["link", "add", "name", name, "type", "veth", "peer", "name", peer]
        if peer_ns != ns:
            args += ["netns", peer_ns]
        self._ip(ns, *args)
        a, b = self._register(name, ns, "veth"), self._register(peer, peer_ns, "veth")
        if up:
            self.up(a)
            self.up(b)
        return a, b

    @public
    def macvlan(self, name: str, *, lower: LiveDevice | str, mode: str = "bridge", up: bool = True) -> LiveDevice:
        """A macvlan device on ``lower`` (in the lower device's namespace)."""
        check_ifname(name, "name")
        if mode not in ("private", "vepa", "bridge", "passthru", "source"):
            raise ValueError(f"mode must be a macvlan mode (private, vepa, bridge, passthru, source), got {mode!r}")
        low = self._resolve(lower, "lower")
        assert low.netns is not None
        self._ip(low.netns, "link", "add", "name", name, "link", low.name, "type", "macvlan", "mode", mode)
        dev = self._register(name, low.netns, "macvlan")
        if up:
            self.up(dev)
        return dev

    @public
    def bridge(self, name: str, *, netns: str | None = None, up: bool = True) -> LiveDevice:
        check_ifname(name, "name")
        ns = self._own_netns(netns)
        self._ip(ns, "link", "add", "name", name, "type", "bridge")
        dev = self._register(name, ns, "bridge")
        if up:
            self.up(dev)
        return dev

    @public
    def set_master(self, port: LiveDevice | str, master: LiveDevice | str) -> None:
        """Enslave ``port`` to ``master`` (a bridge), as ``ip link set PORT master MASTER``."""
        p = self._resolve(port, "port")
        m = self._resolve(master, "master", p.netns)
        if p.netns != m.netns:
            raise ValueError(f"master: {m.name!r} is in {m.netns}, port {p.name!r} in {p.netns}")
        assert p.netns is not None
        self._ip(p.netns, "link", "set", "dev", p.name, "master", m.name)

    @public
    def up(self, dev: LiveDevice | str) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "link", "set", "dev", d.name, "up")

    @public
    def vxlan(self, name: str, *, vni: VxlanVni, underlay: LiveDevice | str, local: str = "10.0.0.1",
              remote: str | None = None, up: bool = True) -> LiveDevice:
        """``ip link add NAME type vxlan id VNI dstport 4789 dev UNDERLAY local LOCAL [remote REMOTE]`` in the
        underlay's namespace (VNI: 24 bits, drivers/net/vxlan/vxlan_core.c VXLAN_N_VID)."""
        check_ifname(name, "name")
        low = self._resolve(underlay, "underlay")
        assert low.netns is not None
        args = ["link", "add", name, "type", "vxlan", "id", str(vni), "dstport", "4789", "dev", low.name,
                "local", local] + (["remote", remote] if remote else [])
        self._ip(low.netns, *args)
        dev = self._register(name, low.netns, "vxlan")
        if up:
            self.up(dev)
        return dev

    @public
    def set_multicast(self, dev: LiveDevice | str, on: bool) -> None:
        """``ip link set DEV multicast on|off`` (IFF_MULTICAST): off, IPv6 sends no MLD reports while measuring."""
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "link", "set", "dev", d.name, "multicast", "on" if on else "off")

    @public
    def mtu(self, dev: LiveDevice | str) -> int:
        """The device's MTU (ip -j link show)."""
        return int(self.link_json(dev)["mtu"])

    @public
    def set_mtu(self, dev: LiveDevice | str,
                mtu: DeviceMtu) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "link", "set", "dev", d.name, "mtu", str(int(mtu)))

    @public
    def link_json(self, dev: LiveDevice | str) -> dict[str, Any]:
        """``ip -j -s link show DEV`` (with the stats64 counters)."""
        d = self._resolve(dev, "dev")
        done = run(["ip", "-n", str(d.netns), "-j", "-s", "link", "show", "dev", d.name], timeout=self._remaining())
        return json.loads(done.stdout)[0]

    @public
    def rx_packets(self, dev: LiveDevice | str) -> int:
        """rx packets of ``dev`` (for a veth: veth_get_stats64, the skbs it received by either path)."""
        return int(self.link_json(dev)["stats64"]["rx"]["packets"])

    @public
    def ethtool_stats(self, dev: LiveDevice | str) -> dict[str, int]:
        """``ethtool -S DEV`` as {name: value} (a veth: rx_queue_N_xdp_packets counts its NAPI path)."""
        d = self._resolve(dev, "dev")
        done = run(netns_argv(d.netns, ["ethtool", "-S", d.name]), timeout=self._remaining())
        out = {}
        for line in done.stdout.splitlines()[1:]:
            name, _, value = line.strip().partition(":")
            if value.strip().lstrip("-").isdigit():
                out[name.strip()] = int(value)
        return out

    @public
    def sysctl(self, netns: str, key: str, value: str) -> None:
        run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", f"{key}={value}"], timeout=self._remaining())

    @public
    def addr(self, dev: LiveDevice | str, cidr: str) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        extra = ["nodad"] if ":" in cidr else []
        self._ip(d.netns, "addr", "add", cidr, "dev", d.name, *extra)

    @public
    def neigh(self, dev: LiveDevice | str, ip_addr: str, lladdr: str) -> None:
        """A permanent neighbour entry, so no ARP / ND packet crosses the link during a measurement."""
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "neigh", "replace", ip_addr, "lladdr", lladdr, "dev", d.name, "nud", "permanent")

    @public
    def attach_xdp_pass(self, dev: LiveDevice | str) -> None:
        """Attach a two-instruction XDP_PASS program in native mode (r0 = XDP_PASS; exit), loaded with the
        bpf() syscall and attached over rtnetlink (IFLA_XDP_FD); it lives as long as the device does."""
        d = self._resolve(dev, "dev")
        attach_xdp_pass(d.name, d.netns)

    @public
    def device(self, name: str, *, netns: str | None = None) -> LiveDevice:
        return self._resolve(name, "name", netns)

    def devices(self) -> list[LiveDevice]:
        return list(self._devices.values())


# --------------------------------------------------------------------------------------------------------
# Model versus kernel
