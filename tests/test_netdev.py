"""vnetlab.netdev: device features as the kernel computes them, rule by rule, and ethtool -k/-K."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vnetlab import features as F
from vnetlab import live
from vnetlab.errors import ArgumentError, DeviceError, FixedFeatureError, UnknownFeatureError
from vnetlab.netdev import Namespace
from vnetlab.profiles import DEFAULT_KERNEL
from vnetlab.profiles import kernel as _profile

KERNELS = ("5.10", "5.11", "5.12", "5.13", "6.1", "6.18")
POST = ("5.11", "5.12", "5.13", "6.1", "6.18")


def test_unknown_kernel_and_driver():
    with pytest.raises(ValueError, match="kernel="):
        Namespace(kernel="4.19")
    ns = Namespace()
    assert ns.kernel == DEFAULT_KERNEL  # the one package-wide default (vnetlab.profiles)
    with pytest.raises(ValueError, match=r"driver='e1000'.*virtio_net"):
        ns.nic("eth0", driver="e1000")
    with pytest.raises(ValueError, match="host_uso"):
        Namespace("6.1").nic("eth0", driver="virtio_net", host_uso=True)
    # one rule, one exception type from every entry point (vlan_validate: vid >= VLAN_VID_MASK is -ERANGE)
    with pytest.raises(ArgumentError, match=r"vid must be .*0\.\.4094"):
        ns.vlan("x.1", lower=ns.nic("eth1"), vid=4095)
    with pytest.raises(ValueError, match="name="):
        ns.bridge("eth1")


def test_device_attributes():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="virtio_net")
    v = ns.vlan("eth0.10", lower=eth, vid=10)
    for dev in (eth, v):
        for attr in ("features", "hw_features", "wanted_features", "vlan_features", "hw_enc_features"):
            assert isinstance(getattr(dev, attr), F.FeatureSet)
    assert v.kind == "vlan" and v.lower is eth and eth.uppers == [v]


# --- register_netdevice ----------------------------------------------------------------------------

@pytest.mark.parametrize("k", KERNELS)
def test_register_adds_soft_features(k):
    ns = Namespace(k)
    eth = ns.nic("eth0", driver="virtio_net")
    # net/core/dev.c register_netdevice: SOFT_FEATURES on and changeable, SOFT_FEATURES_OFF changeable but off.
    assert F.mask("SOFT_FEATURES", kernel=k) <= eth.features
    assert F.mask("SOFT_FEATURES_OFF", kernel=k) <= eth.hw_features
    assert not (F.mask("SOFT_FEATURES_OFF", kernel=k) & eth.features)
    assert "NOCACHE_COPY" in eth.hw_features
    assert "TSO_MANGLEID" in eth.hw_features and "TSO_MANGLEID" not in eth.features
    assert "HIGHDMA" in eth.vlan_features and {"SG", "GSO_PARTIAL"} <= set(eth.hw_enc_features)


# --- netdev_fix_features ---------------------------------------------------------------------------

def _fix(k, names, partial=()):
    ns = Namespace(k)
    dev = ns.nic("eth0", driver="router")
    dev.gso_partial_features = F.FeatureSet.from_names(partial, kernel=k).bits
    return set(F.FeatureSet(ns.netdev_fix_features(dev, F.FeatureSet.from_names(names, kernel=k).bits), k))


@pytest.mark.parametrize("k", ("6.1", "6.18"))
def test_netdev_fix_features_rules(k):
    assert _fix(k, ["HW_CSUM", "IP_CSUM", "IPV6_CSUM"]) == {"HW_CSUM"}
    assert _fix(k, ["HW_CSUM", "TSO", "TSO6"]) == {"HW_CSUM"}  # ALL_TSO needs SG
    assert _fix(k, ["SG", "TSO", "TSO_ECN"]) == {"SG"}  # TSO needs a csum
    assert _fix(k, ["SG", "TSO6", "IP_CSUM"]) == {"SG", "IP_CSUM"}  # TSO6 needs HW or IPV6 csum
    assert _fix(k, ["SG", "HW_CSUM", "TSO_MANGLEID", "TSO6"]) == {"SG", "HW_CSUM", "TSO6"}
    assert _fix(k, ["SG", "HW_CSUM", "TSO_ECN"]) == {"SG", "HW_CSUM"}
    assert _fix(k, ["GSO", "HW_CSUM"]) == {"HW_CSUM"}  # GSO needs SG
    assert _fix(k, ["GSO_GRE", "SG"], partial=["GSO_GRE"]) == {"SG"}
    assert _fix(k, ["GSO_GRE", "SG", "GSO_PARTIAL"], partial=["GSO_GRE"]) == {"SG", "GSO_GRE", "GSO_PARTIAL"}
    assert _fix(k, ["GRO_HW"]) == set()
    assert _fix(k, ["RXFCS", "LRO", "GRO_HW", "RXCSUM"]) == {"RXFCS", "RXCSUM"}
    assert _fix(k, ["GRO_HW", "LRO", "RXCSUM"]) == {"GRO_HW", "RXCSUM"}
    assert _fix(k, ["HW_TLS_TX", "IP_CSUM"]) == {"IP_CSUM"}
    assert _fix(k, ["HW_TLS_TX", "IP_CSUM", "IPV6_CSUM"]) == {"HW_TLS_TX", "IP_CSUM", "IPV6_CSUM"}
    assert _fix(k, ["HW_TLS_RX"]) == set()
    # facts D.5: no rule for GSO_FRAGLIST, GSO_SCTP, FRAGLIST: they survive without SG or csum.
    assert _fix(k, ["GSO_FRAGLIST", "GSO_SCTP", "FRAGLIST"]) == {"GSO_FRAGLIST", "GSO_SCTP", "FRAGLIST"}


def test_uso_needs_csum_only_in_618():
    # 6.1 netdev_fix_features has no USO rule; ≈6.18 drops GSO_UDP_L4 without a usable checksum.
    assert _fix("6.1", ["GSO_UDP_L4"]) == {"GSO_UDP_L4"}
    assert _fix("6.18", ["GSO_UDP_L4"]) == set()
    assert _fix("6.18", ["GSO_UDP_L4", "HW_CSUM"]) == {"GSO_UDP_L4", "HW_CSUM"}


# --- drivers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", KERNELS)
def test_virtio_net_never_fraglist(k):
    eth = Namespace(k).nic("eth0", driver="virtio_net")
    assert "FRAGLIST" not in eth.features and "GSO_FRAGLIST" not in eth.features
    assert "GSO_UDP_L4" not in eth.features  # no HOST_USO by default
    assert {"SG", "HW_CSUM", "TSO", "TSO6", "GSO_ROBUST", "RXCSUM", "GRO_HW"} <= set(eth.features)


# drivers/net/virtio_net.c virtnet_probe: HOST_USO -> hw_features |= GSO_UDP_L4 (Debian 6.12.95 :6524-6525, ≈6.18
# mirror; absent in Debian 6.1.192). Then "if (gso) features |= hw_features & NETIF_F_ALL_TSO" (6.12.95 :6530):
# USO stays off but changeable; the ≈6.18 mirror has "features |= hw_features": on.
@pytest.mark.parametrize("k, on", [("6.12", False), ("6.18", True)])
def test_virtio_net_host_uso(k, on):
    eth = Namespace(k).nic("eth0", driver="virtio_net", host_uso=True)
    assert "GSO_UDP_L4" in eth.hw_features
    assert ("GSO_UDP_L4" in eth.features) is on and ("GSO_UDP_L4" in eth.vlan_features) is on
    assert eth.ethtool_k()["tx-udp-segmentation"] == (on, False)
    eth.ethtool_K({"tx-udp-segmentation": True})
    assert "GSO_UDP_L4" in eth.features


@pytest.mark.parametrize("k", ["5.10", "5.10.223", "5.13", "6.1"])
def test_virtio_net_has_no_uso_before_62(k):
    with pytest.raises(ValueError, match="host_uso"):
        Namespace(k).nic("eth0", driver="virtio_net", host_uso=True)


def test_ixgbe_profile():
    eth = Namespace("6.1").nic("eth0", driver="ixgbe")
    assert {"SG", "HW_CSUM", "TSO", "TSO6", "GSO_UDP_L4", "GSO_PARTIAL", "LRO", "HW_VLAN_CTAG_TX"} <= set(eth.features)
    assert "FRAGLIST" not in eth.features and "GSO_FRAGLIST" not in eth.features
    assert "HW_VLAN_CTAG_TX" not in eth.vlan_features and "TSO_MANGLEID" in eth.vlan_features


# --- VLAN ------------------------------------------------------------------------------------------

def test_vlan_on_virtio_net_lacks_fraglist():
    for k in KERNELS:
        ns = Namespace(k)
        v = ns.vlan("eth0.10", lower=ns.nic("eth0", driver="virtio_net"), vid=10)
        # vlan_dev_fix_features: FRAGLIST is intersected with the real device's, which lacks it.
        assert "FRAGLIST" not in v.features
        assert "FRAGLIST" in v.hw_features


@pytest.mark.parametrize("k,expect", [("5.10", False)] + [(k, True) for k in POST])
def test_vlan_udp_segmentation_after_patch(k, expect):
    ns = Namespace(k)
    v = ns.vlan("eth0.10", lower=ns.nic("eth0", driver="virtio_net"), vid=10)
    # vlan_dev_fix_features re-adds GSO_SOFTWARE whatever the real device has: UDP_L4 from 5.11.
    assert ("GSO_UDP_L4" in v.features) is expect
    assert ("GSO_FRAGLIST" in v.features) is expect
    assert v.ethtool_k()["tx-udp-segmentation"][0] is expect


def test_vlan_router_nic_passes_fraglist_post_patch():
    ns = Namespace("5.11")
    eth = ns.nic("eth0", driver="router")
    v = ns.vlan("eth0.10", lower=eth, vid=10)
    assert {"FRAGLIST", "GSO_FRAGLIST", "GSO_UDP_L4"} <= set(v.features)
    pre = Namespace("5.10")
    v5 = pre.vlan("eth0.10", lower=pre.nic("eth0", driver="router"), vid=10)
    assert "FRAGLIST" in v5.features and "GSO_UDP_L4" not in v5.features


def test_vlan_follows_real_device_changes():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="virtio_net")
    v = ns.vlan("eth0.10", lower=eth, vid=10)
    assert "HW_CSUM" in v.features
    eth.ethtool_K({"tx-checksum-ip-generic": False})
    # vlan_transfer_features on NETDEV_FEAT_CHANGE: the csum goes, and TSO with it (fix rules).
    assert "HW_CSUM" not in eth.features and "TSO" not in eth.features
    assert "HW_CSUM" not in v.features and "TSO" not in v.features
    eth.ethtool_K({"tx-checksum-ip-generic": True})
    assert "HW_CSUM" in v.features


# --- macvlan ---------------------------------------------------------------------------------------

# net/8021q/vlan_dev.c vlan_dev_init: "if (real_dev->vlan_features & NETIF_F_HW_MACSEC) hw_features |= HW_MACSEC"
# in Debian 6.12.95 (:546-547) and ≈6.18; not in Debian 6.1.192 (:545) or 5.10.223 (:543).
@pytest.mark.parametrize("k, macsec", [("5.10.223", False), ("6.1", False), ("6.12", True), ("6.18", True)])
def test_vlan_offers_macsec_where_the_real_device_has_it(k, macsec):
    ns = Namespace(k)
    eth = ns.nic("eth0", driver="ixgbe")
    eth._vlan_features |= ns.m("HW_MACSEC")  # a NIC with MACsec offload for tagged frames (none is modelled)
    v = ns.vlan("eth0.10", lower=eth, vid=10)
    assert ("HW_MACSEC" in v.hw_features) is macsec
    assert "HW_MACSEC" not in ns.vlan("eth0.11", lower=ns.nic("eth1", driver="ixgbe"), vid=11).hw_features


@pytest.mark.parametrize("k", KERNELS)
def test_macvlan_always_on(k):
    ns = Namespace(k)
    eth = ns.nic("eth0", driver="virtio_net", csum=False)
    mv = ns.macvlan("mv0", lower=eth)
    # macvlan_fix_features: ALWAYS_ON_FEATURES regardless of the lower (which has no SG/csum here).
    on = F.mask("GSO_SOFTWARE", kernel=k) | {"SG", "HW_CSUM", "GSO_ROBUST"} | F.mask("GSO_ENCAP_ALL", kernel=k)
    assert on <= mv.features
    assert ("GSO_UDP_L4" in mv.features) is (k != "5.10")
    assert mv.ethtool_k()["tx-udp-segmentation"] == (k != "5.10", True)


def test_macvlan_follows_lower_gro():
    ns = Namespace("6.18")
    a, _ = ns.veth("v0", "v1")
    mv = ns.macvlan("mv0", lower=a)
    # GRO is not one-for-all: it follows the lower (veth keeps GRO off), "[requested on]" in ethtool.
    assert "GRO" not in mv.features and "GRO" in mv.wanted_features
    a.ethtool_K({"rx-gro": True})
    assert "GRO" in mv.features


# --- veth ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k,expect", [("5.10", False)] + [(k, True) for k in POST])
def test_veth_udp_l4_post_patch(k, expect):
    a, b = Namespace(k).veth("v0", "v1")
    assert ("GSO_UDP_L4" in a.features) is expect and ("GSO_FRAGLIST" in b.features) is expect
    assert "FRAGLIST" in a.features


def test_veth_xdp_on_peer_drops_gso_software():
    a, b = Namespace("6.1").veth("v0", "v1")
    a.set_xdp(True)
    assert not (F.mask("GSO_SOFTWARE", kernel="6.1") & b.features)
    assert "TSO" in a.features
    a.set_xdp(False)
    assert F.mask("GSO_SOFTWARE", kernel="6.1") <= b.features


# drivers/net/veth.c veth_newlink -> veth_disable_gro: absent in Debian 5.10.223 (no such function in veth.c),
# present in Debian 6.1.192 (:1655, called at :1750/:1794) and 6.12.95 (:1786, :1881/:1925), ≈6.18 and the
# running 6.18.44; mainline: from d3256efd8e8b (v5.13).
# veth_xdp_set turning GRO on for an XDP program: d3256efd8e8b (v5.13) until d7db7775ea2e (v6.9, in 6.1.y); no
# NETIF_F_GRO in Debian 5.10.223's veth.c, none in 6.1.192 veth_enable_xdp (:1129) / veth_xdp_set (:1490) nor
# in 6.12.95's (:1167 / :1564).
VETH_GRO = {"5.10": (True, False), "5.10.223": (True, False), "5.11": (True, False), "5.12": (True, False),
            "5.13": (False, True), "6.1": (False, False), "6.12": (False, False), "6.18": (False, False)}


@pytest.mark.parametrize("k", sorted(VETH_GRO))
def test_veth_gro_default_and_xdp_per_kernel(k):
    gro_on, xdp_turns_it_on = VETH_GRO[k]
    a, _b = Namespace(k).veth("v0", "v1")
    assert ("GRO" in a.features) is gro_on
    a.set_xdp(True)
    assert ("GRO" in a.features) is (gro_on or xdp_turns_it_on)
    a.set_xdp(False)
    assert ("GRO" in a.features) is gro_on


# --- bridge ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", KERNELS)
def test_bridge_without_ports_has_gso_mask(k):
    br = Namespace(k).bridge("br0")
    assert F.mask("GSO_MASK", kernel=k) <= br.features
    assert "GSO_UDP_L4" in br.features


@pytest.mark.parametrize("k", KERNELS)
def test_bridge_udp_l4_with_a_port_that_has_it(k):
    ns = Namespace(k)
    br = ns.bridge("br0")
    ns.set_master(ns.veth("v0", "v1")[0], br)
    assert "GSO_UDP_L4" in br.features


@pytest.mark.parametrize("k,expect", [("5.10", True)] + [(k, False) for k in POST])
def test_bridge_clears_udp_l4_when_no_port_has_it(k, expect):
    ns = Namespace(k)
    br = ns.bridge("br0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), br)
    # br_features_recompute: post-patch UDP_L4 is in ONE_FOR_ALL, cleared and re-added only if a port has it.
    assert ("GSO_UDP_L4" in br.features) is expect
    assert "GSO_ESP" in br.features  # GSO_MASK bits outside ONE_FOR_ALL stay
    assert "GSO_ROBUST" in br.features  # virtio_net has GSO_ROBUST


def test_bridge_all_for_all_and_one_for_all():
    ns = Namespace("6.18")
    br = ns.bridge("br0")
    a, _ = ns.veth("v0", "v1")
    assert {"GSO_ROBUST", "FSO"} <= set(br.features)
    ns.set_master(a, br)
    # veth lacks GSO_ROBUST (one-for-all) and FSO (all-for-all): both go, "[requested on]".
    assert "GSO_ROBUST" not in br.features and "FSO" not in br.features
    assert "GSO_ROBUST" in br.wanted_features


def test_bridge_recomputes_when_port_changes():
    ns = Namespace("6.1")
    br = ns.bridge("br0")
    a, _ = ns.veth("v0", "v1")
    ns.set_master(a, br)
    a.ethtool_K({"tx-udp-segmentation": False})
    assert "GSO_UDP_L4" not in br.features
    a.ethtool_K({"tx-udp-segmentation": True})
    assert "GSO_UDP_L4" in br.features


def test_bridge_port_lro_disabled():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="ixgbe")
    assert "LRO" in eth.features
    ns.set_master(eth, ns.bridge("br0"))
    # br_add_if -> dev_disable_lro; netdev_sync_upper_features keeps it off afterwards.
    assert "LRO" not in eth.features
    eth.ethtool_K({"rx-lro": True})
    assert "LRO" not in eth.features


# --- bond ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", POST)
def test_bond_udp_l4_only_if_a_slave_has_it(k):
    ns = Namespace(k)
    bond = ns.bond("bond0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), bond)
    assert "GSO_UDP_L4" not in bond.features
    assert "GSO_UDP_L4" in bond.hw_features
    ns.set_master(ns.nic("eth1", driver="router"), bond)
    assert "GSO_UDP_L4" in bond.features
    assert "GSO_FRAGLIST" in bond.features


def test_bond_pre_patch_advertised_udp_l4_itself():
    # v5.10 bond_setup: hw_features |= GSO_ENCAP_ALL | GSO_UDP_L4 (removed by ecb8fed408b6), and UDP_L4 is not
    # one-for-all, so bond_fix_features keeps it whatever the slaves have.
    ns = Namespace("5.10")
    bond = ns.bond("bond0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), bond)
    assert "GSO_UDP_L4" in bond.features and "GSO_FRAGLIST" not in bond.features


def test_bond_vlan_features_from_slaves():
    ns = Namespace("6.1")
    bond = ns.bond("bond0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), bond)
    assert "GSO_UDP_L4" not in bond.vlan_features
    assert {"SG", "TSO"} <= set(bond.vlan_features)
    ns.set_master(ns.nic("eth1", driver="router"), bond)
    assert "GSO_UDP_L4" in bond.vlan_features


def test_bond_empty_has_no_sg():
    # bond_fix_features with no slaves: ONE_FOR_ALL cleared, nothing re-adds SG, so TSO goes too.
    bond = Namespace("6.1").bond("bond0")
    assert "SG" not in bond.features and "TSO" not in bond.features


# A bond with one virtio_net slave (QEMU defaults), worked out by hand from the source. The slave
# (drivers/net/virtio_net.c virtnet_probe + net/core/dev.c register_netdevice): vlan_features = HIGHDMA HW_CSUM
# SG TSO TSO6 TSO_ECN GSO_ROBUST RXCSUM GRO_HW (+ TSO_MANGLEID), hw_enc_features = SG GSO_PARTIAL,
# mpls_features = SG. netdev_increment_features (net/core/dev.c) adds only the slave's ONE_FOR_ALL and checksum
# bits within the mask, and keeps ALL_FOR_ALL bits only if the slave has them.
VIRTIO_SLAVE_VLAN = {"HW_CSUM", "SG", "HIGHDMA", "TSO", "TSO6", "TSO_ECN", "TSO_MANGLEID"}
ENCAP_ALL = {"GSO_GRE", "GSO_GRE_CSUM", "GSO_IPXIP4", "GSO_IPXIP6", "GSO_UDP_TUNNEL", "GSO_UDP_TUNNEL_CSUM"}
XFRM = {"HW_ESP", "HW_ESP_TX_CSUM", "GSO_ESP"}  # include/net/bonding.h BOND_XFRM_FEATURES, CONFIG_XFRM_OFFLOAD=y
TX_TAGS = {"HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX"}
GSO_SW = {"TSO", "TSO6", "TSO_ECN", "TSO_MANGLEID", "GSO_SCTP", "GSO_UDP_L4", "GSO_FRAGLIST"}
BOND_6X = {
    # Debian 6.1.192 bond_main.c: :1496-1497 vlan/mpls_features &= NETIF_F_ALL_FOR_ALL (= 0 here) before the
    # slaves; enc_features from the whole BOND_ENC_FEATURES (:1470-1471 HW_CSUM SG RXCSUM GSO_SOFTWARE);
    # :1528-1532 hw_enc_features = enc | GSO_ENCAP_ALL | VLAN tx tags | xfrm; no GSO_PARTIAL anywhere.
    "6.1": dict(vlan=VIRTIO_SLAVE_VLAN, mpls={"SG"},
                enc={"HW_CSUM", "SG", "RXCSUM"} | GSO_SW | ENCAP_ALL | TX_TAGS | XFRM,
                gso_partial=set(), partial_on=False),
    # Debian 6.12.95 net/core/dev.c:11897-11899 netdev_compute_master_upper_features: vlan, mpls and enc start
    # as netdev_base_features(MASTER_UPPER_DEV_*) (include/linux/netdev_features.h:257-279: ONE_FOR_ALL
    # cleared, so SG and GSO_SOFTWARE come only from the slave; HW_CSUM, GSO_ENCAP_ALL, LRO, RXCSUM,
    # GSO_PARTIAL stay); :11935 gso_partial_features = GSO_ESP; :11937-11941 hw_enc_features as 6.1;
    # bond_main.c:6110 bond_setup features |= GSO_PARTIAL.
    "6.12": dict(vlan=VIRTIO_SLAVE_VLAN | ENCAP_ALL | {"LRO"}, mpls={"HW_CSUM", "SG"},
                 enc={"HW_CSUM", "SG", "RXCSUM", "GSO_PARTIAL"} | ENCAP_ALL | TX_TAGS | XFRM,
                 gso_partial={"GSO_ESP"}, partial_on=True),
    # ≈6.18 mirror bond_compute_features: with slaves vlan/mpls = netdev_base_features(BOND_*), enc from the
    # whole BOND_ENC_FEATURES (with GSO_PARTIAL); gso_partial_features GSO_ESP; bond_setup |= GSO_PARTIAL.
    "6.18": dict(vlan=VIRTIO_SLAVE_VLAN | ENCAP_ALL | {"LRO"}, mpls={"HW_CSUM", "SG"},
                 enc={"HW_CSUM", "SG", "RXCSUM", "GSO_PARTIAL", "GSO_ACCECN"} | GSO_SW | ENCAP_ALL | TX_TAGS | XFRM,
                 gso_partial={"GSO_ESP"}, partial_on=True),  # ≈6.18 NETIF_F_GSO_SOFTWARE also holds GSO_ACCECN
}


@pytest.mark.parametrize("k", sorted(BOND_6X))
def test_bond_compute_features_per_kernel(k):
    want = BOND_6X[k]
    ns = Namespace(k)
    bond = ns.bond("bond0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), bond)
    assert set(bond.vlan_features) == want["vlan"]
    assert set(bond.mpls_features) == want["mpls"]
    assert set(bond.hw_enc_features) == want["enc"]
    assert set(F.FeatureSet(bond.gso_partial_features, k)) == want["gso_partial"]
    # ethtool -k bond0: GSO_PARTIAL is set in features but never in hw_features
    assert bond.ethtool_k()["tx-gso-partial"] == (want["partial_on"], True)


@pytest.mark.parametrize("k, tunnel", [("6.1", False), ("6.12", True), ("6.18", True)])
def test_vlan_on_bond_keeps_tunnel_gso_only_with_base_features(k, tunnel):
    # net/8021q/vlan_dev.c vlan_dev_fix_features intersects with the bond's vlan_features: GSO_ENCAP_ALL is
    # there only where vlan_features start from netdev_base_features (77b11c8bf3a2's "Before": "off [requested
    # on]" on bond0.100; Debian 6.1.121 took that patch without "Fix initial {vlan,mpls}_feature set").
    ns = Namespace(k)
    bond = ns.bond("bond0")
    ns.set_master(ns.nic("eth0", driver="virtio_net"), bond)
    v = ns.vlan("bond0.100", lower=bond, vid=100)
    assert v.ethtool_k()["tx-udp_tnl-segmentation"][0] is tunnel
    assert "GSO_UDP_TUNNEL" in v.wanted_features


def test_bond_without_slaves_in_612_starts_from_base_features():
    # Debian 6.12.95 net/core/dev.c:11897-11899: netdev_base_features() also without lowers (no has_slaves
    # check), so an empty bond's vlan_features lose SG and GSO_SOFTWARE and gain NOCACHE_COPY and FSO; 6.1.192
    # bond_main.c:1493-1494 ("if (!bond_has_slaves(bond)) goto done") leaves BOND_VLAN_FEATURES whole.
    for k, sg in (("6.1", True), ("6.12", False)):
        ns = Namespace(k)
        bond = ns.bond("bond0")
        bond.compute_features()
        assert ("SG" in bond.vlan_features) is sg and ("TSO" in bond.vlan_features) is sg
        assert ("NOCACHE_COPY" in bond.vlan_features) is not sg and "HW_CSUM" in bond.vlan_features


# --- ethtool ---------------------------------------------------------------------------------------

def test_ethtool_k_fixed_flags():
    ns = Namespace("6.1")
    mv = ns.macvlan("mv0", lower=ns.nic("eth0", driver="virtio_net"))
    k = mv.ethtool_k()
    assert k["tx-udp-segmentation"] == (True, True)
    assert k["rx-lro"][1] is False  # macvlan_init: hw_features |= LRO
    assert k["tx-lockless"] == (True, True)  # NEVER_CHANGE
    assert "tx-lockless" not in Namespace("6.18").bridge("br0").ethtool_k()


def test_ethtool_K_fixed_raises_naming_feature():
    ns = Namespace("6.18")
    mv = ns.macvlan("mv0", lower=ns.nic("eth0", driver="virtio_net"))
    with pytest.raises(FixedFeatureError, match="tx-udp-segmentation"):
        mv.ethtool_K({"tx-udp-segmentation": False})
    mv.ethtool_K({"tx-udp-segmentation": True})  # no change requested: accepted
    with pytest.raises(UnknownFeatureError, match="no-such-feature"):
        mv.ethtool_K({"no-such-feature": True})


def test_ethtool_K_requested_but_fixed_up():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="virtio_net")
    eth.ethtool_K({"tx-scatter-gather": False})
    assert "TSO" not in eth.features and "TSO" in eth.wanted_features  # "[requested on]"
    assert "GSO" not in eth.features
    eth.ethtool_K({"tx-scatter-gather": True})
    assert {"TSO", "GSO"} <= set(eth.features)


# --- invariants under random ethtool -K sequences ---------------------------------------------------

def _stack(k):
    ns = Namespace(k)
    eth = ns.nic("eth0", driver="virtio_net")
    r = ns.nic("eth1", driver="router")
    x = ns.nic("eth2", driver="ixgbe")
    a, b = ns.veth("v0", "v1")
    ns.vlan("eth0.10", lower=eth, vid=10)
    ns.vlan("eth1.20", lower=r, vid=20)
    ns.macvlan("mv0", lower=a)
    br = ns.bridge("br0")
    ns.set_master(b, br)
    ns.set_master(x, br)
    bond = ns.bond("bond0")
    ns.set_master(r, bond)
    return ns


def _check_invariants(ns):
    k = ns.kernel
    for dev in ns.walk():
        f = dev._features
        # the generic fix-ups are idempotent on what a device advertises
        assert ns.netdev_fix_features(dev, f) == f, dev
        # and the device's own fix_features, applied to its wanted set, gives the same answer again
        wanted = (f & ~dev._hw_features) | dev._wanted_features
        assert dev._features == ns.netdev_fix_features(dev, dev.fix_features(wanted)) or dev.uppers, dev
        for upper in dev.uppers:
            # LRO off on an upper's wanted set stays off below it
            assert not (f & ns.mask("UPPER_DISABLES") & ~upper._wanted_features)
    # uppers reflect their lowers: recomputing from scratch changes nothing
    for dev in ns.walk():
        before = dev._features
        assert not ns.update_features(dev), (dev, F.FeatureSet(before, k), dev.features)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(KERNELS), st.data())
def test_random_ethtool_K_keeps_invariants(k, data):
    ns = _stack(k)
    devs = list(ns.walk())
    for _ in range(data.draw(st.integers(0, 8))):
        dev = data.draw(st.sampled_from(devs))
        changeable = [F.ethtool_name(n, kernel=k) for n in dev.hw_features
                      if n in F.table(k).ethtool and n not in F.mask("NEVER_CHANGE", kernel=k)]
        if not changeable:
            continue
        eth = data.draw(st.sampled_from(sorted(changeable)))
        dev.ethtool_K({eth: data.draw(st.booleans())})
    _check_invariants(ns)
    vlan = ns["eth0.10"]
    # VLAN over virtio_net never has FRAGLIST; post-patch it always has GSO_UDP_L4 (kept by fix_features)
    assert "FRAGLIST" not in vlan.features
    bond = ns["bond0"]
    slaves_have = any("GSO_UDP_L4" in s.features for s in bond.lowers)
    if k != "5.10":
        # net/core/dev.c netdev_fix_features (2b2bc3bab158, v6.11; Debian 6.12.95, 6.18): no USO without HW_CSUM
        # or IP_CSUM + IPV6_CSUM
        csum = "HW_CSUM" in bond.features or {"IP_CSUM", "IPV6_CSUM"} <= set(bond.features)
        uso_ok = csum or not _profile(k).rule("uso_needs_csum")
        assert ("GSO_UDP_L4" in bond.features) == (slaves_have and "GSO_UDP_L4" in bond.wanted_features and uso_ok)


# --- ethtool -K with every name ethtool accepts ------------------------------------------------------

@pytest.mark.parametrize("word", ["gro", "generic-receive-offload", "rx-gro"])
def test_ethtool_K_accepts_legacy_names(word):
    # ethtool netlink/features.c fill_legacy_flag: "gro" and "generic-receive-offload" stand for rx-gro
    a, _ = Namespace("6.18").veth("v0", "v1")
    a.ethtool_K({word: True})
    assert "GRO" in a.features and "GRO" in a.wanted_features
    a.ethtool_K({word: False})
    assert "GRO" not in a.features


def test_ethtool_K_legacy_group_and_fixed_members():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="virtio_net")
    # "sg" expands to tx-scatter-gather and tx-scatter-gather-fraglist; virtio_net has no FRAGLIST in
    # hw_features (fixed off), so "sg off" changes the changeable member and leaves the fixed one
    eth.ethtool_K({"sg": False})
    assert "SG" not in eth.features and "TSO" not in eth.features  # netdev_fix_features: ALL_TSO needs SG
    eth.ethtool_K({"scatter-gather": True})
    assert {"SG", "TSO"} <= set(eth.features)
    eth.ethtool_K({"ufo": False})  # matches no feature string in any modelled kernel: nothing to do
    mv = ns.macvlan("mv0", lower=eth)
    # macvlan: every tx-checksum-* member is fixed (HW_CSUM always on, the rest off): ethtool changes nothing
    with pytest.raises(FixedFeatureError, match="tx-checksum-ip-generic"):
        mv.ethtool_K({"tx": False})
    with pytest.raises(ValueError, match="True or False"):
        eth.ethtool_K({"gro": "off"})


# --- MTU ---------------------------------------------------------------------------------------------

def test_mtu_of_stacked_devices_follows_the_lower():
    ns = Namespace("6.1")
    eth = ns.nic("eth0", driver="virtio_net")
    v = ns.vlan("eth0.10", lower=eth, vid=10)
    mv = ns.macvlan("mv0", lower=eth)
    # net/ethernet/eth.c ether_setup: ETH_DATA_LEN; net/8021q/vlan_netlink.c vlan_newlink and drivers/net/macvlan.c
    # macvlan_common_newlink copy the lower's mtu; vlan.c / macvlan.c NETDEV_CHANGEMTU only lower a bigger upper
    assert eth.mtu == v.mtu == mv.mtu == 1500
    eth.set_mtu(9000)
    assert v.mtu == mv.mtu == 1500  # NETDEV_CHANGEMTU lowers uppers only when they exceed the new mtu
    v.set_mtu(9000)
    eth.set_mtu(1400)
    assert v.mtu == 1400 and mv.mtu == 1400  # vlan_device_event / macvlan_device_event
    with pytest.raises(DeviceError, match="mtu=1401"):
        v.set_mtu(1401)  # vlan_dev_change_mtu: -ERANGE above real_dev->mtu
    with pytest.raises(DeviceError, match="mtu=67"):
        eth.set_mtu(67)  # ETH_MIN_MTU 68
    with pytest.raises(DeviceError, match="9711"):
        ns.nic("eth1", driver="ixgbe").set_mtu(9711)  # ixgbe max_mtu 9728 - 18


def test_bridge_takes_the_smallest_port_mtu():
    ns = Namespace("6.1")
    br = ns.bridge("br0")
    a, _ = ns.veth("v0", "v1")
    c, _ = ns.veth("v2", "v3")
    a.set_mtu(9000)
    c.set_mtu(4000)
    ns.set_master(a, br)
    ns.set_master(c, br)
    assert br.mtu == 4000  # br_mtu_auto_adjust
    c.set_mtu(3000)
    assert br.mtu == 3000


def test_bond_slave_takes_the_bond_mtu():
    ns = Namespace("6.1")
    bond = ns.bond("bond0")
    eth = ns.nic("eth0", driver="virtio_net")
    eth.set_mtu(9000)
    ns.set_master(eth, bond)
    # drivers/net/bonding/bond_main.c bond_enslave: dev_set_mtu(slave_dev, bond->dev->mtu); bond_setup: ETH_DATA_LEN
    assert eth.mtu == 1500
    bond.set_mtu(4000)
    assert eth.mtu == 4000  # bond_change_mtu sets every slave


# --- vxlan -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k,udp_l4,fraglist", [("5.10", False, False), ("5.10.223", False, False),
                                               ("5.11", True, False), ("5.12", True, True), ("5.13", True, True),
                                               ("6.1", True, True), ("6.12", True, True), ("6.18", True, True)])
def test_vxlan_features(k, udp_l4, fraglist):
    # vxlan_setup: GSO_SOFTWARE (UDP_L4 and GSO_FRAGLIST from 5.11, 2e4ef10f5850); NETIF_F_FRAGLIST from
    # cb2c57112432 (v5.12): absent in Debian 5.10.223 vxlan_core.c:3303, present in 6.1.192 :3292, 6.12.95 :3363
    ns = Namespace(k)
    vx = ns.vxlan("vx0", vni=42, underlay=ns.nic("eth0", driver="virtio_net"))
    assert ("GSO_UDP_L4" in vx.features) is udp_l4 and ("GSO_FRAGLIST" in vx.features) is udp_l4
    assert ("FRAGLIST" in vx.features) is fraglist
    assert vx.mtu == 1450  # vxlan_dev_configure: lowerdev->mtu - vxlan_headroom (20 + 8 + 8 + 14)
    assert ns.vxlan("vx6", vni=43, underlay=ns["eth0"], ip=6).mtu == 1430  # IPv6 outer header: 40
    with pytest.raises(ArgumentError, match=r"vni must be .*0\.\.16777215"):  # vxlan_validate: VXLAN_N_VID
        ns.vxlan("vx1", vni=1 << 24)


# --- the running kernel ------------------------------------------------------------------------------

@pytest.mark.live
def test_live_veth_macvlan_bridge_vxlan_match_model():
    """The model of the running kernel's profile against the kernel: veth, macvlan, bridge, vxlan, and the MTU
    of a vxlan on a veth (ip -d link: 1450)."""
    cap = live.available(labs=True)
    if not cap:
        pytest.skip(cap.reason)
    ns = Namespace(live.running_profile())
    v0, v1 = ns.veth("v0", "v1")
    mv = ns.macvlan("mv0", lower=v0)
    br = ns.bridge("br0")
    vx = ns.vxlan("vx0", vni=42, underlay=v0)
    with live.Lab(tag="netdev") as lab:
        r0, r1 = lab.veth("v0", "v1")
        rmv = lab.macvlan("mv0", lower=r0)
        rbr = lab.bridge("br0")
        rvx = lab.vxlan("vx0", vni=42, underlay=r0, local="10.0.0.1", up=False)
        for model, real in ((v0, r0), (mv, rmv), (br, rbr), (vx, rvx)):
            assert live.compare(model, real, fields=("on", "fixed", "wanted")), model.name
        lab.set_master(r1, rbr)
        ns.set_master(v1, br)
        r1.ethtool_K({"tx-udp-segmentation": False})
        v1.ethtool_K({"tx-udp-segmentation": False})
        assert live.compare(br, rbr, fields=("on", "fixed", "wanted"))
        # drivers/net/vxlan/vxlan_core.c vxlan_config_apply: lower mtu 1500 - VXLAN_HEADROOM 50, and the live lab agrees
        assert lab.mtu("vx0") == vx.mtu == 1450


# --- what the kernel refuses when devices are created or linked -----------------------------


@pytest.mark.parametrize("name", ["", "a" * 16, "é" * 8, ".", "..", "a/b", "a:b", "a b", "a\tb", "a\nb", "a\xa0b"])
def test_names_dev_valid_name_refuses(name):
    # net/core/dev.c dev_valid_name (5.10..6.18): empty, strnlen == IFNAMSIZ (16 bytes, so "é" * 8 too), "." and
    # "..", '/', ':' and isspace() characters (lib/ctype.c counts 0xa0 as space) -> -EINVAL
    with pytest.raises(DeviceError, match="not a valid interface name"):
        Namespace("6.1").bridge(name)


def test_names_dev_valid_name_accepts():
    ns = Namespace("6.1")
    for name in ("a" * 15, "eth0.10", "br-lan", "v@x"):
        assert ns.bridge(name).name == name


def test_second_vlan_with_the_same_vid_is_refused():
    # net/8021q/vlan.c vlan_check_real_dev: vlan_find_dev(real_dev, ETH_P_8021Q, vid) -> -EEXIST
    ns = Namespace("6.1")
    eth = ns.nic("eth0")
    ns.vlan("eth0.10", lower=eth, vid=10)
    with pytest.raises(DeviceError, match="-EEXIST"):
        ns.vlan("vlan10b", lower=eth, vid=10)
    assert ns.vlan("eth0.11", lower=eth, vid=11).vid == 11


def test_master_loops_are_refused():
    # net/bridge/br_if.c br_add_if: a bridge as a bridge port -> -ELOOP; net/core/dev.c __netdev_upper_dev_link:
    # linking a master that already sits above the port -> -EBUSY (bonds may nest, but not in a circle)
    ns = Namespace("6.1")
    b1, b2 = ns.bridge("br1"), ns.bridge("br2")
    with pytest.raises(DeviceError, match="-ELOOP"):
        ns.set_master(b1, b2)
    bd1, bd2 = ns.bond("bond1"), ns.bond("bond2")
    ns.set_master(bd1, bd2)
    with pytest.raises(DeviceError, match="-EBUSY"):
        ns.set_master(bd2, bd1)
    vl = ns.vlan("br1.5", lower=b1, vid=5)
    with pytest.raises(DeviceError, match="-EBUSY"):
        ns.set_master(vl, b1)


def test_driver_parameters_must_be_bools():
    # Namespace.nic(**params) passed "no" straight to the probe, where it read as True
    with pytest.raises(DeviceError, match="gso_udp_l4 must be a bool"):
        Namespace("6.1").nic("eth0", driver="router", gso_udp_l4="no")
