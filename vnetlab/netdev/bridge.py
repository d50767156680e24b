"""Linux bridges (net/bridge)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import public
from vnetlab.features import add_tso_bits, increment_bits
from vnetlab.headers import ETH_MAX_MTU
from vnetlab.netdev.core import Device, Handoff, NetCore, NetdevFeatures, check_skbs, is_skb_forwardable, port_of
from vnetlab.skb import Skb


class Bridge(Device):
    """net/bridge: br_dev_setup, br_fix_features -> br_features_recompute, br_device_event."""

    kind = "bridge"
    passthru_features_check = True  # br_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """net/bridge/br_device.c br_dev_xmit -> br_forward.c br_forward to the port the FDB names (``port``,
        default the first), br_dev_queue_push_xmit: is_skb_forwardable on it; br_flood to no port frees them."""
        check_skbs(skbs)
        if not self.lowers:
            why = "no port to forward or flood to (br_dev_xmit -> br_flood: kfree_skb)"
            return Handoff((), "drop", None, "dropped", "bridge_start_xmit", tuple((self.name, why) for _ in skbs))
        out = port_of(self, port)
        kept = tuple(s for s in skbs if is_skb_forwardable(out, s))
        why = "longer than the port's MTU (is_skb_forwardable)"
        return Handoff(kept, "lower", out, "", "bridge_start_xmit",
                       tuple((out.name, why) for _ in range(len(skbs) - len(kept))))

    @public
    def __init__(self, ns: NetCore, name: str) -> None:
        super().__init__(ns, name)
        k = ns
        common = k.m("SG", "FRAGLIST", "HIGHDMA", "HW_CSUM") | k.mask("GSO_MASK")
        # net/bridge/br_device.c, br_dev_setup, 6.1 (6.18: LLTX and NETNS_LOCAL became dev->lltx/netns_local).
        self._features = common | k.m_opt("LLTX") | k.m_opt("NETNS_LOCAL") | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        self._hw_features = common | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        self._vlan_features = common
        self.max_mtu = ETH_MAX_MTU  # net/bridge/br_device.c br_dev_setup
        self.mtu_set_by_user = False

    @public
    def fix_features(self, features: NetdevFeatures) -> int:
        k = self.ns
        ports = self.lowers
        # net/bridge/br_if.c, br_features_recompute, 5.10..6.18: no ports -> features unchanged.
        if not ports:
            return features
        mask_ = features
        # net/bridge/br_if.c, br_features_recompute: clear ONE_FOR_ALL, re-add what some port has, add TSO.
        features &= ~k.mask("ONE_FOR_ALL")
        for p in ports:
            features = increment_bits(features, p._features, mask_, k.table)
        return add_tso_bits(features, mask_, k.table)

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # net/bridge/br.c, br_device_event NETDEV_FEAT_CHANGE: netdev_update_features(br->dev).
        self.ns.netdev_update_features(self)

    @public
    def set_mtu(self, mtu: int) -> Device:
        # net/bridge/br_device.c br_change_mtu (6.1): the user's value sticks (BROPT_MTU_SET_BY_USER).
        super().set_mtu(mtu)
        self.mtu_set_by_user = True
        return self

    def auto_mtu(self) -> None:
        """net/bridge/br_if.c br_mtu_auto_adjust (6.1): the smallest port MTU, unless the user set one."""
        if self.lowers and not self.mtu_set_by_user:
            self.mtu = min(p.mtu for p in self.lowers)

    @public
    def on_lower_mtu_change(self, lower: Device) -> None:
        # net/bridge/br.c br_device_event NETDEV_CHANGEMTU -> br_mtu_auto_adjust (6.1).
        self.auto_mtu()

