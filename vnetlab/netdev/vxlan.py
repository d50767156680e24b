"""VXLAN devices (drivers/net/vxlan/vxlan_core.c; drivers/net/vxlan.c before 5.18)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from vnetlab.checks import IpVersion, VxlanVni, public
from vnetlab.headers import ETH_HLEN, ETH_MAX_MTU, ETH_MIN_MTU, IP_HLEN, UDP_HLEN
from vnetlab.netdev.core import Device, Handoff, NetCore, check_skbs
from vnetlab.skb import Skb

VXLAN_HLEN = 8  # struct vxlanhdr (include/net/vxlan.h)
# IFLA_VXLAN_DF (include/uapi/linux/if_link.h enum ifla_vxlan_df): VXLAN_DF_UNSET, VXLAN_DF_SET, VXLAN_DF_INHERIT
VxlanDf = Literal["unset", "set", "inherit"]


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
        check_skbs(skbs)
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
        # the outer IPv4 header's DF bit (vxlan_xmit_one): "unset" by default (vxlan_nl2conf leaves cfg.df 0)
        self.df: VxlanDf = "unset"
        k = ns
        # vxlan_setup (6.1): LLTX (6.18: dev->lltx), SG | HW_CSUM | FRAGLIST, RXCSUM, GSO_SOFTWARE; FRAGLIST
        # from cb2c57112432 ("vxlan: add NETIF_F_FRAGLIST flag for dev features", v5.12; kernel rule vxlan_fraglist).
        fraglist = k.m("FRAGLIST") if k.rule("vxlan_fraglist") else 0
        self._features = k.m_opt("LLTX") | k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self._vlan_features = self._features
        self._hw_features = k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self.max_mtu = ETH_MAX_MTU

    @public
    def set_df(self, df: VxlanDf) -> Vxlan:
        """ip link set NAME type vxlan df unset|set|inherit (IFLA_VXLAN_DF): what vxlan_xmit_one writes in the
        outer IPv4 header's DF bit; "inherit" copies the inner IPv4 DF bit and sets DF for inner IPv6. The IPv6
        branch of vxlan_xmit_one has no DF (an IPv6 outer packet is never fragmented on the way out)."""
        self.df = df
        return self

    @public
    def outer_df(self, inner_ip: IpVersion, inner_df: bool) -> bool:
        """drivers/net/vxlan/vxlan_core.c vxlan_xmit_one (Debian 6.1.192 / 6.12.118): df = htons(IP_DF) for
        VXLAN_DF_SET, or for VXLAN_DF_INHERIT when the inner frame is IPv6 or an IPv4 packet with DF."""
        return self.df == "set" or (self.df == "inherit" and (inner_ip == 6 or inner_df))

    def is_any_bridge_port(self) -> bool:
        """include/linux/netdevice.h netif_is_any_bridge_port: enslaved to a bridge (IFF_BRIDGE_PORT; Open
        vSwitch ports are not modelled), the ``reply`` argument vxlan_xmit_one gives skb_tunnel_check_pmtu."""
        return self.master is not None and self.master.kind == "bridge"

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

