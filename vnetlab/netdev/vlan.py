"""802.1Q VLAN devices (net/8021q)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import VlanId, public
from vnetlab.features import intersect_bits
from vnetlab.headers import ETH_MAX_MTU
from vnetlab.netdev.core import Device, Handoff, NetCore, NetdevFeatures, StackedDevice, check_skbs
from vnetlab.skb import Skb


class Vlan(StackedDevice):
    """net/8021q: vlan_dev_init, vlan_dev_fix_features, vlan_transfer_features."""

    kind = "vlan"

    @public
    def __init__(self, ns: NetCore, name: str, vid: VlanId) -> None:
        super().__init__(ns, name)
        self.vid = vid

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        check_skbs(skbs)
        # net/8021q/vlan_dev.c vlan_dev_hard_start_xmit (6.1): REORDER_HDR -> __vlan_hwaccel_put_tag, then
        # dev_queue_xmit on the real device; a tag still hwaccel (QinQ below a device with CTAG_TX) goes in-band
        out = tuple((s if s.vlan_tag is None else s.vlan_push_inside()).copy(vlan_tag=self.vid) for s in skbs)
        return Handoff(out, "lower", self.lowers[0], "tag set (hwaccel)", "vlan_start_xmit")

    def _tnl_features(self) -> int:
        k = self.ns
        real = self.lowers[0]
        csum = k.mask("CSUM_MASK")
        encap = k.mask("GSO_ENCAP_ALL")
        # net/8021q/vlan.h, vlan_tnl_features, 6.1: only with an encap bit and a csum bit, in HW_CSUM form.
        ret = real._hw_enc_features & (csum | k.mask("GSO_SOFTWARE") | encap)
        if ret & encap and ret & csum:
            return (ret & ~csum) | k.m("HW_CSUM")
        return 0

    def init(self) -> None:
        k = self.ns
        real = self.lowers[0]
        if k.has("FCOE_MTU"):
            fcoe = k.mask("ALL_FCOE")
        else:
            fcoe = k.m("FCOE_CRC", "FSO")
        # net/8021q/vlan_dev.c, vlan_dev_init, 6.1 (6.12, 6.18: FCOE_CRC|FSO, FCOE_MTU is gone).
        self._hw_features = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "SCTP_CRC") | k.mask("GSO_SOFTWARE") \
            | k.mask("GSO_ENCAP_ALL") | fcoe
        if k.rule("vlan_hw_macsec") and real._vlan_features & k.m("HW_MACSEC"):
            # vlan_dev_init (kernel rule vlan_hw_macsec, 6.12 and 6.18): MACsec offload when the real device has it.
            self._hw_features |= k.m("HW_MACSEC")
        self._features |= self._hw_features | k.m_opt("LLTX")
        self._vlan_features = real._vlan_features & ~fcoe
        self._hw_enc_features = self._tnl_features()
        self._mpls_features = real._mpls_features
        # net/8021q/vlan_dev.c vlan_setup: max_mtu ETH_MAX_MTU; vlan_newlink / register_vlan_device: mtu = real mtu.
        self.max_mtu = ETH_MAX_MTU
        self.mtu = real.mtu

    @public
    def fix_features(self, features: NetdevFeatures) -> int:
        k = self.ns
        real = self.lowers[0]
        old = features
        # net/8021q/vlan_dev.c, vlan_dev_fix_features, 5.10..6.18: intersect with what the real device does
        # for tagged frames, but keep SOFT_FEATURES and GSO_SOFTWARE whatever the real device has.
        lower = intersect_bits(real._vlan_features | k.m("RXCSUM"), real._features, k.table)
        if lower & k.m("IP_CSUM", "IPV6_CSUM"):
            lower |= k.m("HW_CSUM")
        features = intersect_bits(features, lower, k.table)
        features |= old & (k.mask("SOFT_FEATURES") | k.mask("GSO_SOFTWARE"))
        features |= k.m_opt("LLTX")
        return features

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # net/8021q/vlan.c, vlan_device_event NETDEV_FEAT_CHANGE -> vlan_transfer_features, 6.1.
        self._hw_enc_features = self._tnl_features()
        self.ns.netdev_update_features(self)

