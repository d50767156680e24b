"""macvlan devices (drivers/net/macvlan.c)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import public
from vnetlab.features import increment_bits
from vnetlab.headers import ETH_MAX_MTU
from vnetlab.netdev.core import Device, Handoff, NetdevFeatures, StackedDevice, check_skbs
from vnetlab.skb import Skb


class Macvlan(StackedDevice):
    """drivers/net/macvlan.c: macvlan_init, macvlan_fix_features, macvlan_device_event."""

    kind = "macvlan"
    passthru_features_check = True  # macvlan_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        check_skbs(skbs)
        # drivers/net/macvlan.c macvlan_start_xmit -> macvlan_queue_xmit: dev_queue_xmit_accel on the lower
        return Handoff(tuple(skbs), "lower", self.lowers[0], "", "macvlan_start_xmit")

    def _macros(self) -> tuple[int, int, int]:
        k = self.ns
        always_on_offloads = k.m("SG", "HW_CSUM", "GSO_ROBUST") | k.mask("GSO_SOFTWARE") | k.mask("GSO_ENCAP_ALL")
        # drivers/net/macvlan.c, ALWAYS_ON_FEATURES, 6.1: ALWAYS_ON_OFFLOADS | LLTX (6.18: dev->lltx instead).
        always_on_features = always_on_offloads | k.m_opt("LLTX")
        # drivers/net/macvlan.c, MACVLAN_FEATURES, 5.10..6.18.
        macvlan_features = k.m("SG", "HW_CSUM", "HIGHDMA", "FRAGLIST", "GSO", "TSO", "LRO", "TSO_ECN", "TSO6",
                               "GRO", "RXCSUM", "HW_VLAN_CTAG_FILTER", "HW_VLAN_STAG_FILTER")
        return always_on_offloads, always_on_features, macvlan_features

    def init(self) -> None:
        lower = self.lowers[0]
        on_off, on_feat, mv = self._macros()
        # drivers/net/macvlan.c, macvlan_init, 6.1: features from the lower, plus the always-on ones.
        self._features = (lower._features & mv) | on_feat
        self._hw_features |= self.ns.m("LRO")
        self._vlan_features = (lower._vlan_features & mv) | on_off
        self._hw_enc_features |= self._features
        # drivers/net/macvlan.c macvlan_setup: max_mtu ETH_MAX_MTU; macvlan_common_newlink: mtu = lowerdev->mtu.
        self.max_mtu = ETH_MAX_MTU
        self.mtu = lower.mtu

    @public
    def fix_features(self, features: NetdevFeatures) -> int:
        k = self.ns
        on_off, on_feat, mv = self._macros()
        lower = self.lowers[0]._features
        # drivers/net/macvlan.c, macvlan_fix_features, 6.1 (vlan->set_features = MACVLAN_FEATURES).
        features |= k.mask("ALL_FOR_ALL")
        set_features = mv  # macvlan_common_newlink: vlan->set_features = MACVLAN_FEATURES
        features &= set_features | ~mv
        mask_ = features
        lower &= features | ~k.m("LRO")
        features = increment_bits(lower, features, mask_, k.table)
        features |= on_feat
        features &= on_feat | mv
        return features

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # drivers/net/macvlan.c, macvlan_device_event NETDEV_FEAT_CHANGE: netdev_update_features(vlan->dev).
        self.ns.netdev_update_features(self)


