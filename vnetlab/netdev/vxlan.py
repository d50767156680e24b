"""VXLAN devices (drivers/net/vxlan/vxlan_core.c; drivers/net/vxlan.c before 5.18)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import IpVersion, VxlanVni, public
from vnetlab.headers import ETH_HLEN, ETH_MAX_MTU, ETH_MIN_MTU, IP_HLEN, UDP_HLEN
from vnetlab.netdev.core import Device, Handoff, NetCore
from vnetlab.skb import Skb

VXLAN_HLEN = 8  # struct vxlanhdr (include/net/vxlan.h)



class Vxlan(Device):
    """drivers/net/vxlan/vxlan_core.c (6.1; drivers/net/vxlan.c before 5.18): vxlan_setup, vxlan_dev_configure.

    A vxlan device advertises GSO_SOFTWARE, so from 5.11 a UDP_L4 or fraglist GSO skb passes it whole; its
    xmit (vxlan_xmit_one -> vxlan_build_skb -> iptunnel_handle_offloads) marks the skb encapsulated with
    SKB_GSO_UDP_TUNNEL[_CSUM] and sends it out of the underlay route device, whose validate_xmit_skb looks
    at hw_enc_features (see vnetlab.xmit).
    """

    kind = "vxlan"
    passthru_features_check = True  # vxlan_netdev_ether_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """vxlan_xmit_one -> vxlan_build_skb -> iptunnel_handle_offloads (6.1): outer headers pushed,
        skb->encapsulation set, gso_type |= SKB_GSO_UDP_TUNNEL (UDP_TUNNEL_CSUM when the outer UDP checksum is
        on: the IPv6 default, udp6zerocsumtx off; IPv4 vxlan defaults to no outer checksum); then out of the
        underlay (without one the route's device is not modelled: the frames leave as they are)."""
        tunnel = "UDP_TUNNEL_CSUM" if self.ip == 6 else "UDP_TUNNEL"
        out = tuple(s.encapsulate(self.headroom(), tunnel, vni=self.vni, ip=self.ip) for s in skbs)
        to = "lower" if self.underlay is not None else "wire"
        return Handoff(out, to, self.underlay, "encapsulated (vxlan_xmit_one)", "vxlan_xmit")

    @public
    def __init__(self, ns: NetCore, name: str, vni: VxlanVni, ip: IpVersion, underlay: Device | None) -> None:
        super().__init__(ns, name)
        self.vni = vni
        self.ip = ip
        # the device its encapsulated packets leave through (ip link add ... type vxlan dev UNDERLAY); vxlan
        # makes no upper/lower link to it, so its feature changes do not reach the vxlan device.
        self.underlay = underlay
        k = ns
        # vxlan_setup (6.1): LLTX (6.18: dev->lltx), SG | HW_CSUM | FRAGLIST, RXCSUM, GSO_SOFTWARE; FRAGLIST
        # from cb2c57112432 ("vxlan: add NETIF_F_FRAGLIST flag for dev features", v5.12; kernel rule vxlan_fraglist).
        fraglist = k.m("FRAGLIST") if k.rule("vxlan_fraglist") else 0
        self._features = k.m_opt("LLTX") | k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self._vlan_features = self._features
        self._hw_features = k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self.max_mtu = ETH_MAX_MTU

    def headroom(self) -> int:
        """include/net/vxlan.h vxlan_headroom: outer IP + UDP + VXLAN header + the inner Ethernet header."""
        return IP_HLEN[self.ip] + UDP_HLEN + VXLAN_HLEN + ETH_HLEN

    def init(self) -> None:
        if self.underlay is not None:
            # vxlan_dev_configure (6.1): with a lower device, mtu = max_mtu = lowerdev->mtu - vxlan_headroom.
            self.mtu = max(ETH_MIN_MTU, self.underlay.mtu - self.headroom())

    def mtu_limit(self) -> int:
        # vxlan_change_mtu (6.1): with a lower device, at most lowerdev->mtu - vxlan_headroom.
        if self.underlay is not None:
            return min(self.max_mtu, self.underlay.mtu - self.headroom())
        return self.max_mtu

