"""Bonding devices, mode balance-rr (drivers/net/bonding/bond_main.c)."""

from __future__ import annotations

from collections.abc import Sequence

from vnetlab.checks import public
from vnetlab.features import add_tso_bits, increment_bits
from vnetlab.headers import ETH_MAX_MTU
from vnetlab.netdev.core import Device, Handoff, NetCore, NetdevFeatures, check_skbs, port_of
from vnetlab.skb import Skb


class Bond(Device):
    """drivers/net/bonding/bond_main.c: bond_setup, bond_fix_features, bond_compute_features (mode balance-rr).

    Three kernel rules shape it: ``bond_gso_software`` (ecb8fed408b6, v5.11: BOND_*_FEATURES name
    NETIF_F_GSO_SOFTWARE instead of ALL_TSO + GSO_UDP_L4), ``bond_gso_partial`` ("bonding: Correctly support
    GSO ESP offload": GSO_PARTIAL on the bond, GSO_ESP as a partial feature) and ``bond_compute`` (how the
    vlan/enc/mpls features start before each slave is folded in; see :meth:`compute_features`).
    """

    kind = "bond"
    passthru_features_check = True  # bond_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """drivers/net/bonding/bond_main.c bond_start_xmit: with no slave bond_tx_drop; else the slave
        bond_xmit_roundrobin picks (``port``, default the first) gets dev_queue_xmit (bond_dev_queue_xmit)."""
        check_skbs(skbs)
        if not self.lowers:
            why = "no slave (bond_start_xmit -> bond_tx_drop)"
            return Handoff((), "drop", None, "dropped", "bond_start_xmit", tuple((self.name, why) for _ in skbs))
        return Handoff(tuple(skbs), "lower", port_of(self, port), "", "bond_start_xmit")

    def _macros(self) -> tuple[int, int, int]:
        """BOND_VLAN_FEATURES, BOND_ENC_FEATURES, BOND_MPLS_FEATURES (6.12: MASTER_UPPER_DEV_*_FEATURES)."""
        k = self.ns
        if k.rule("bond_gso_software"):
            # bond_main.c (6.1) / netdev_features.h (6.12): GSO_SOFTWARE; GSO_ENCAP_ALL in the VLAN set from
            # 77b11c8bf3a2 (v6.13, 6.1.121): no effect where vlan_features start from X & ALL_FOR_ALL.
            soft = k.mask("GSO_SOFTWARE")
            vlan = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "LRO") | soft | k.mask("GSO_ENCAP_ALL")
        else:
            # drivers/net/bonding/bond_main.c, BOND_*_FEATURES before ecb8fed408b6 (5.10.223:1352-1360): ALL_TSO.
            soft = k.mask("ALL_TSO")
            vlan = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "LRO") | soft
        enc = k.m("HW_CSUM", "SG", "RXCSUM") | soft
        if k.rule("bond_gso_partial"):
            enc |= k.m("GSO_PARTIAL")  # 6.12.95 include/linux/netdev_features.h:262-264 (ENC with GSO_PARTIAL)
        mpls = k.m("HW_CSUM", "SG") | soft
        return vlan, enc, mpls

    @public
    def __init__(self, ns: NetCore, name: str) -> None:
        super().__init__(ns, name)
        k = ns
        vlan, _, _ = self._macros()
        # drivers/net/bonding/bond_main.c, bond_setup, 6.1: LLTX, NETNS_LOCAL (6.12, 6.18: device flags, no bits).
        self._features |= k.m_opt("LLTX") | k.m_opt("NETNS_LOCAL")
        self._hw_features = vlan | k.m("HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_FILTER", "HW_VLAN_STAG_RX",
                                       "HW_VLAN_STAG_FILTER")
        # drivers/net/bonding/bond_main.c, bond_setup: hw_features |= GSO_ENCAP_ALL (v5.10: | GSO_UDP_L4).
        self._hw_features |= k.mask("GSO_ENCAP_ALL") | (0 if k.rule("bond_gso_software") else k.m("GSO_UDP_L4"))
        self._features |= self._hw_features | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        if k.rule("bond_gso_partial"):
            # bond_setup (6.12.95 bond_main.c:6110): features |= GSO_PARTIAL, outside hw_features: "on [fixed]".
            self._features |= k.m("GSO_PARTIAL")
        # drivers/net/bonding/bond_main.c, bond_setup, CONFIG_XFRM_OFFLOAD: XFRM bits changeable, on only in
        # active-backup (not the default balance-rr).
        self._hw_features |= self._xfrm_features()
        self.max_mtu = ETH_MAX_MTU  # drivers/net/bonding/bond_main.c bond_setup

    def _xfrm_features(self) -> int:
        """include/net/bonding.h BOND_XFRM_FEATURES (6.12: MASTER_UPPER_DEV_XFRM_FEATURES), CONFIG_XFRM_OFFLOAD=y."""
        return self.ns.m("HW_ESP", "HW_ESP_TX_CSUM", "GSO_ESP")

    @public
    def fix_features(self, features: NetdevFeatures) -> int:
        k = self.ns
        # drivers/net/bonding/bond_main.c, bond_fix_features (5.10..6.18): netdev_base_features (clear ONE_FOR_ALL,
        # set ALL_FOR_ALL), fold each slave's features, add TSO. 6.1's BOND_TLS_FEATURES step is not modelled:
        # TLS bits are in no bond's hw_features, so balance-rr never has them to clear.
        mask_ = features
        features &= ~k.mask("ONE_FOR_ALL")
        features |= k.mask("ALL_FOR_ALL")
        for s in self.lowers:
            features = increment_bits(features, s._features, mask_, k.table)
        return add_tso_bits(features, mask_, k.table)

    def compute_features(self) -> None:
        """bond_compute_features (6.12.95: netdev_compute_master_upper_features), then netdev_change_features.

        Kernel rule ``bond_compute``, how vlan/mpls (and enc) features start before each slave is folded in:
        "all_for_all" (5.10 .. 6.1.192 bond_main.c:1496-1497): with slaves, X & NETIF_F_ALL_FOR_ALL, so only
        one-for-all and checksum bits of the slaves come back; "base_features" (≈6.18): with slaves,
        netdev_base_features(X), which keeps the bond's own bits such as GSO_ENCAP_ALL and LRO; "master_upper"
        (6.12.95 net/core/dev.c:11897-11899): netdev_base_features() for vlan, mpls and enc alike, with or
        without slaves. enc otherwise starts from the whole BOND_ENC_FEATURES.
        """
        k = self.ns
        vlan_m, enc_m, mpls_m = self._macros()
        scheme = k.choice("bond_compute", ("all_for_all", "base_features", "master_upper"))
        one_for_all, all_for_all = k.mask("ONE_FOR_ALL"), k.mask("ALL_FOR_ALL")

        def base(f: int) -> int:
            # include/linux/netdev_features.h netdev_base_features (6.12.95 :274-279)
            return (f & ~one_for_all) | all_for_all

        vlan, enc, mpls = vlan_m, enc_m, mpls_m
        if scheme == "master_upper":
            vlan, enc, mpls = base(vlan), base(enc), base(mpls)
        elif self.lowers and scheme == "base_features":
            vlan, mpls = base(vlan), base(mpls)
        elif self.lowers:
            vlan, mpls = vlan & all_for_all, mpls & all_for_all
        gso_partial = k.m("GSO_ESP") if k.rule("bond_gso_partial") else 0
        xfrm = self._xfrm_features()
        for s in self.lowers:
            vlan = increment_bits(vlan, s._vlan_features, vlan_m, k.table)
            enc = increment_bits(enc, s._hw_enc_features, enc_m, k.table)
            xfrm = increment_bits(xfrm, s._hw_enc_features, self._xfrm_features(), k.table)
            if gso_partial:
                gso_partial = increment_bits(gso_partial, s.gso_partial_features, k.m("GSO_ESP"), k.table)
            mpls = increment_bits(mpls, s._mpls_features, mpls_m, k.table)
        self._vlan_features = vlan
        # bond_compute_features: hw_enc_features = enc | ENCAP_ALL | VLAN tx tags (v5.10: | GSO_UDP_L4), and
        # with CONFIG_XFRM_OFFLOAD | xfrm_features (5.10.223 bond_main.c:1419, 6.1.192 :1532, 6.12.95 dev.c:11941).
        self._hw_enc_features = enc | k.mask("GSO_ENCAP_ALL") | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX") \
            | (0 if k.rule("bond_gso_software") else k.m("GSO_UDP_L4")) | xfrm
        self._mpls_features = mpls
        if k.rule("bond_gso_partial"):
            # 6.12.95 net/core/dev.c:11935 (≈6.18 bond_compute_features): dev->gso_partial_features
            self.gso_partial_features = gso_partial
        # netdev_change_features: update and always notify.
        k.update_features(self)
        k.netdev_features_change(self)

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # drivers/net/bonding/bond_main.c, bond_slave_netdev_event NETDEV_FEAT_CHANGE -> bond_compute_features.
        self.compute_features()

    @public
    def set_mtu(self, mtu: int) -> Device:
        # drivers/net/bonding/bond_main.c bond_change_mtu (6.1): every slave is set to the new mtu first.
        for slave in self.lowers:
            slave.set_mtu(mtu)
        return super().set_mtu(mtu)

