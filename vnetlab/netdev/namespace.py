"""The network namespace: creating devices the way their rtnl_link_ops / probe functions do, and linking them.

``Namespace(kernel=...)`` creates devices (veth, macvlan, vlan, bridge, bond, vxlan, NICs), registers them
(register_netdevice, vnetlab.netdev.core) and links uppers to lowers (br_add_if, bond_enslave, ...). Each
device also has an MTU (dev_set_mtu and the uppers' NETDEV_CHANGEMTU handling), which vnetlab.xmit honours.
"""

from __future__ import annotations

from collections.abc import Iterable

from vnetlab.checks import IpVersion, VlanId, VxlanVni, public
from vnetlab.errors import DeviceError
from vnetlab.netdev.bond import Bond
from vnetlab.netdev.bridge import Bridge
from vnetlab.netdev.core import Device, NetCore
from vnetlab.netdev.macvlan import Macvlan
from vnetlab.netdev.nic import DRIVERS, Nic
from vnetlab.netdev.veth import Veth
from vnetlab.netdev.vlan import Vlan
from vnetlab.netdev.vxlan import Vxlan

IFNAMSIZ = 16  # include/uapi/linux/if.h: names are at most IFNAMSIZ - 1 characters


class Namespace(NetCore):
    """A network namespace of one kernel holding the devices created in it (see :class:`NetCore`)."""

    def __getitem__(self, name: str) -> Device:
        return self.devices[name]

    def _new_name(self, name: str, param: str = "name") -> None:
        # net/core/dev.c dev_valid_name (5.10..6.18): not empty, shorter than IFNAMSIZ bytes, not "." or "..",
        # no '/', ':' or whitespace (isspace, which in lib/ctype.c includes 0xa0)
        if not isinstance(name, str):
            raise DeviceError(f"{param}={name!r} must be a str (an interface name)", param=param)
        bad = [c for c in name if c in "/:" or c.isspace() or c == "\xa0"]
        size = len(name.encode())
        if not name or size >= IFNAMSIZ or name in (".", "..") or bad:
            why = ("empty" if not name else f"{size} bytes, at most IFNAMSIZ - 1 = {IFNAMSIZ - 1}" if size >= IFNAMSIZ
                   else f"{name!r} is reserved" if name in (".", "..") else f"contains {bad[0]!r}")
            raise DeviceError(f"{param}={name!r} is not a valid interface name ({why}; dev_valid_name: -EINVAL)",
                              param=param)
        if name in self.devices:
            raise DeviceError(f"{param}={name!r} already exists in this namespace (-EEXIST)", param=param)

    @staticmethod
    def _link(lower: Device, upper: Device) -> None:
        lower.uppers.append(upper)
        upper.lowers.append(lower)

    # -- public constructors ---------------------------------------------------------------------

    # -- public constructors ---------------------------------------------------------------------
    @public
    def veth(self, a: str, b: str) -> tuple[Veth, Veth]:
        """ip link add a type veth peer name b (drivers/net/veth.c veth_newlink)."""
        self._new_name(a, "a")
        self._new_name(b, "b")
        if a == b:
            raise DeviceError(f"b={b!r} must differ from a", param="b")
        dev_a, dev_b = Veth(self, a), Veth(self, b)
        dev_a.peer, dev_b.peer = dev_b, dev_a
        for d in (dev_b, dev_a):
            self.register_netdevice(d)
            if self.rule("veth_gro_off_by_default"):
                # drivers/net/veth.c, veth_newlink -> veth_disable_gro (d3256efd8e8b, v5.13): GRO off by default.
                d._features &= ~self.m("GRO")
                d._wanted_features &= ~self.m("GRO")
                self.netdev_update_features(d)
        return dev_a, dev_b

    @public
    def macvlan(self, name: str, *, lower: Device | str) -> Macvlan:
        """ip link add name link lower type macvlan (macvlan_common_newlink)."""
        self._new_name(name)
        lower = self._device(lower, "lower")
        dev = Macvlan(self, name)
        dev.lowers.append(lower)
        self.register_netdevice(dev)
        # macvlan_common_newlink: netdev_upper_dev_link(lowerdev, dev) after register_netdevice.
        lower.uppers.append(dev)
        return dev

    @public
    def vlan(self, name: str, *, lower: Device | str, vid: VlanId) -> Vlan:
        """ip link add name link lower type vlan id vid (net/8021q/vlan.c register_vlan_dev)."""
        self._new_name(name)
        lower = self._device(lower, "lower")
        if any(isinstance(u, Vlan) and u.vid == vid for u in lower.uppers):
            # net/8021q/vlan.c vlan_check_real_dev: vlan_find_dev(real_dev, ETH_P_8021Q, vid) -> -EEXIST
            raise DeviceError(f"vid={vid} already has a VLAN device on {lower.name} (vlan_check_real_dev: -EEXIST)",
                              param="vid")
        if lower._features & self.m("VLAN_CHALLENGED"):
            # net/8021q/vlan.c, vlan_check_real_dev: VLAN challenged devices refuse VLANs.
            raise DeviceError(f"lower={lower.name!r} is VLAN challenged", param="lower")
        dev = Vlan(self, name, vid)
        dev.lowers.append(lower)
        self.register_netdevice(dev)
        lower.uppers.append(dev)
        return dev

    @public
    def bridge(self, name: str) -> Bridge:
        self._new_name(name)
        return self.register_netdevice(Bridge(self, name))  # type: ignore[return-value]

    @public
    def vxlan(self, name: str, *, vni: VxlanVni, underlay: Device | str | None = None, ip: IpVersion = 4) -> Vxlan:
        """ip link add name type vxlan id vni [dev underlay] (drivers/net/vxlan/vxlan_core.c vxlan_newlink);
        ``ip``: the outer IP version (remote/local address family)."""
        self._new_name(name)
        under = None if underlay is None else self._device(underlay, "underlay")
        return self.register_netdevice(Vxlan(self, name, vni, ip, under))  # type: ignore[return-value]

    @public
    def bond(self, name: str) -> Bond:
        self._new_name(name)
        return self.register_netdevice(Bond(self, name))  # type: ignore[return-value]

    @public
    def nic(self, name: str, *, driver: str = "virtio_net", **params: object) -> Nic:
        """A NIC as its driver's probe leaves it; ``params`` are the driver's negotiated offloads."""
        self._new_name(name)
        if driver not in DRIVERS:
            raise DeviceError(f"driver={driver!r} is not a modelled driver; valid: {', '.join(DRIVERS)}",
                              param="driver")
        dev = Nic(self, name, driver, params)
        try:
            DRIVERS[driver](dev, **params)  # type: ignore[arg-type]
        except TypeError as exc:
            raise DeviceError(f"driver={driver!r}: {exc}", param="driver") from None
        return self.register_netdevice(dev)  # type: ignore[return-value]

    @public
    def set_master(self, port: Device | str, master: Device | str) -> None:
        """ip link set port master master: br_add_if or bond_enslave."""
        port = self._device(port, "port")
        master = self._device(master, "master")
        if port.master is not None:
            raise DeviceError(f"port={port.name!r} already has master {port.master.name!r}", param="port")
        if port is master:
            raise DeviceError("port and master must be different devices")
        if isinstance(master, Bridge) and isinstance(port, Bridge):
            # net/bridge/br_if.c br_add_if (5.10..6.18): "Can not enslave a bridge to a bridge" -> -ELOOP
            raise DeviceError(f"port={port.name!r} is a bridge: a bridge cannot be a bridge port (br_add_if: -ELOOP)",
                              param="port")
        above: list[Device] = list(master.uppers)
        while above:
            d = above.pop()
            if d is port:
                # net/core/dev.c __netdev_upper_dev_link: the master already sits on the port -> -EBUSY
                raise DeviceError(f"port={port.name!r} is stacked above master={master.name!r}: linking them "
                                  "would make a loop (__netdev_upper_dev_link: -EBUSY)", param="port")
            above.extend(d.uppers)
        if isinstance(master, Bridge):
            # net/bridge/br_if.c, br_add_if: link, dev_disable_lro(port), then netdev_update_features(br).
            self._link(port, master)
            port.master = master
            self.dev_disable_lro(port)
            self.netdev_update_features(master)
            master.auto_mtu()  # br_add_if -> br_mtu_auto_adjust
        elif isinstance(master, Bond):
            # drivers/net/bonding/bond_main.c, bond_enslave: LRO off unless the bond has it, link, compute.
            if not master._features & self.m("LRO"):
                self.dev_disable_lro(port)
            # bond_enslave (6.1): dev_set_mtu(slave_dev, bond->dev->mtu) (an Ethernet slave takes the bond's)
            port.set_mtu(master.mtu)
            self._link(port, master)
            port.master = master
            master.compute_features()
        else:
            raise DeviceError(f"master={master.name!r} is a {master.kind}; only bridge and bond take ports",
                              param="master")

    def _device(self, dev: Device | str, param: str) -> Device:
        if isinstance(dev, str):
            if dev not in self.devices:
                raise DeviceError(f"{param}={dev!r} is not a device of this namespace; have: "
                                  f"{', '.join(self.devices)}", param=param)
            return self.devices[dev]
        if not isinstance(dev, Device) or dev.ns is not self:
            raise DeviceError(f"{param}={dev!r} is not a device of this namespace", param=param)
        return dev

    def walk(self) -> Iterable[Device]:
        return iter(self.devices.values())
