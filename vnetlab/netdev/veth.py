"""veth pairs (drivers/net/veth.c)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import public
from vnetlab.headers import ETH_MAX_MTU
from vnetlab.netdev.core import Device, Handoff, NetCore, NetdevFeatures, check_skbs
from vnetlab.skb import Skb


class Veth(Device):
    """drivers/net/veth.c: veth_setup, veth_fix_features, veth_xdp_set; veth_xmit hands each skb to the peer."""

    kind = "veth"
    passthru_features_check = True  # veth_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        check_skbs(skbs)
        # drivers/net/veth.c veth_xmit (5.10..6.18): the peer receives each skb as it is, GSO or not
        return Handoff(tuple(skbs), "peer", self.peer, "handed to peer", "veth_xmit")

    @public
    def __init__(self, ns: NetCore, name: str) -> None:
        super().__init__(ns, name)
        self.peer: Veth | None = None
        self.xdp = False
        k = ns
        veth_features = k.m("SG", "FRAGLIST", "HW_CSUM", "RXCSUM", "SCTP_CRC", "HIGHDMA", "HW_VLAN_CTAG_TX",
                            "HW_VLAN_CTAG_RX", "HW_VLAN_STAG_TX", "HW_VLAN_STAG_RX") | k.mask("GSO_SOFTWARE") \
            | k.mask("GSO_ENCAP_ALL")
        # drivers/net/veth.c, veth_setup, 5.10..6.18: features |= LLTX (6.18: dev->lltx, no bit) | VETH_FEATURES.
        self._features |= k.m_opt("LLTX") | veth_features
        # drivers/net/veth.c, veth_setup: vlan_features = features & ~(CTAG_TX|STAG_TX|CTAG_RX|STAG_RX).
        self._vlan_features = self._features & ~k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX", "HW_VLAN_CTAG_RX",
                                                     "HW_VLAN_STAG_RX")
        self._hw_features = veth_features
        self._hw_enc_features = veth_features
        self._mpls_features = k.m("HW_CSUM") | k.mask("GSO_SOFTWARE")
        self.max_mtu = ETH_MAX_MTU  # drivers/net/veth.c veth_setup (5.10..6.18)

    @public
    def fix_features(self, features: NetdevFeatures) -> int:
        # drivers/net/veth.c, veth_fix_features, 5.10..6.18: an XDP program on the peer removes GSO_SOFTWARE.
        if self.peer is not None and self.peer.xdp:
            features &= ~self.ns.mask("GSO_SOFTWARE")
        return features

    @public
    def set_xdp(self, attached: bool) -> Veth:
        """Attach (True) or remove (False) an XDP program on this veth (ip link set dev NAME xdp ...)."""
        if bool(attached) == self.xdp:
            return self
        self.xdp = bool(attached)
        peer = self.peer
        assert peer is not None
        k = self.ns
        gso_sw = k.mask("GSO_SOFTWARE")
        # drivers/net/veth.c, veth_xdp_set, 6.1: the peer loses (and later regains) GSO_SOFTWARE in hw_features.
        if attached:
            peer._hw_features &= ~gso_sw
        else:
            peer._hw_features |= gso_sw
        if k.rule("veth_xdp_toggles_gro"):
            # drivers/net/veth.c veth_xdp_set (kernel rule veth_xdp_toggles_gro: 5.13, d3256efd8e8b): XDP switches
            # GRO on when the user did not request it, and off again on removal, until d7db7775ea2e (v6.9, 6.1.y).
            gro = k.m("GRO")
            if attached and not self._wanted_features & gro:
                self._features |= gro
                self._wanted_features |= gro
                self._xdp_set_gro = True
            elif not attached and getattr(self, "_xdp_set_gro", False):
                self._features &= ~gro
                self._wanted_features &= ~gro
                self._xdp_set_gro = False
            k.netdev_features_change(self)
        k.netdev_update_features(peer)
        return self

