"""NICs as their drivers' probe functions leave them: virtio_net, ixgbe and a router SoC profile."""

from __future__ import annotations

from collections.abc import Mapping

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_HLEN, ETH_MAX_MTU
from vnetlab.netdev.core import Device, NetCore


class Nic(Device):
    """A physical or paravirtual NIC whose probe function set its features (see DRIVERS)."""

    kind = "nic"

    @public
    def __init__(self, ns: NetCore, name: str, driver: str, params: Mapping[str, object]) -> None:
        super().__init__(ns, name)
        self.driver = driver
        self.params = dict(params)
        # drivers/net/virtio_net.c virtnet_netdev .ndo_features_check = passthru_features_check (6.1)
        self.passthru_features_check = driver == "virtio_net"

@public  # the driver parameters a user passes to Namespace.nic
def _probe_virtio_net(dev: Nic, csum: bool = True, gso: bool = True, host_tso4: bool = True,
                      host_tso6: bool = True, host_ecn: bool = True, host_uso: bool = False,
                      guest_tso: bool = True, ctrl_guest_offloads: bool = True, rss: bool = False,
                      ctrl_vlan: bool = True) -> None:
    """drivers/net/virtio_net.c virtnet_probe: the offloads follow the negotiated VIRTIO_NET_F_* bits.

    The defaults are what QEMU's virtio-net-pci offers (CTRL_VQ and CTRL_VLAN included)."""
    k = dev.ns
    # virtnet_probe: max_mtu = MAX_MTU (65535) unless VIRTIO_NET_F_MTU, which QEMU does not offer by default.
    dev.max_mtu = ETH_MAX_MTU
    if host_uso and not k.rule("virtio_host_uso"):
        # kernel rule virtio_host_uso: VIRTIO_NET_F_HOST_USO arrived with 418044e1de30 (v6.2)
        raise ArgumentError(f"host_uso=True: virtio_net of kernel {k.kernel} has no USO (VIRTIO_NET_F_HOST_USO, "
                            "418044e1de30, v6.2)", param="host_uso")
    # drivers/net/virtio_net.c, virtnet_probe, 6.1 and ≈6.18: HIGHDMA always.
    dev._features = k.m("HIGHDMA")
    if csum:
        # virtnet_probe: VIRTIO_NET_F_CSUM -> hw HW_CSUM|SG, and features too with the csum module param.
        dev._hw_features |= k.m("HW_CSUM", "SG")
        dev._features |= k.m("HW_CSUM", "SG")
        if host_tso4:
            dev._hw_features |= k.m("TSO")
        if host_tso6:
            dev._hw_features |= k.m("TSO6")
        if host_ecn:
            dev._hw_features |= k.m("TSO_ECN")
        if host_uso:
            # drivers/net/virtio_net.c, virtnet_probe, 6.2+ (6.12.95, ≈6.18 read): HOST_USO -> hw GSO_UDP_L4.
            dev._hw_features |= k.m("GSO_UDP_L4")
        dev._features |= k.m("GSO_ROBUST")
        if gso:
            # virtnet_probe (kernel rule virtio_gso_features): features |= hw_features & ALL_TSO up to 6.12.95, so
            # USO starts off; ≈6.18 (virtio_net UDP tunnel GSO, 2025): features |= hw_features.
            tso_only = k.choice("virtio_gso_features", ("all_tso", "hw_features")) == "all_tso"
            dev._features |= dev._hw_features & k.mask("ALL_TSO") if tso_only else dev._hw_features
    dev._features |= k.m("RXCSUM")
    if guest_tso:
        # virtnet_probe: GUEST_TSO4/6 -> GRO_HW in features.
        dev._features |= k.m("GRO_HW")
    if ctrl_guest_offloads and (guest_tso or not k.rule("virtio_gro_hw_needs_guest_gso")):
        # virtnet_probe: CTRL_GUEST_OFFLOADS makes GRO_HW changeable; 7.x (rule virtio_gro_hw_needs_guest_gso)
        # only with a guest offload of GUEST_OFFLOAD_GRO_HW_MASK negotiated (guest_tso here), else "off [fixed]".
        dev._hw_features |= k.m("GRO_HW")
    # virtnet_probe: vlan_features = features, copied once here (never FRAGLIST / GSO_FRAGLIST).
    dev._vlan_features = dev._features
    if ctrl_vlan:
        # virtnet_find_vqs (6.1), from virtnet_probe after vlan_features: has_cvq && CTRL_VLAN ->
        # features |= HW_VLAN_CTAG_FILTER, not in hw_features, so "on [fixed]" (checked in the QEMU lab).
        dev._features |= k.m("HW_VLAN_CTAG_FILTER")
    if rss:
        dev._hw_features |= k.m("RXHASH")


@public  # the driver parameters a user passes to Namespace.nic
def _probe_ixgbe(dev: Nic, mac_82599: bool = True, rsc: bool = True) -> None:
    """drivers/net/ethernet/intel/ixgbe/ixgbe_main.c ixgbe_probe (82599 and later, no IPsec/FCoE)."""
    k = dev.ns
    # ixgbe_probe: max_mtu = IXGBE_MAX_JUMBO_FRAME_SIZE (9728) - (ETH_HLEN + ETH_FCS_LEN).
    dev.max_mtu = 9728 - (ETH_HLEN + 4)
    partial = k.mask("GSO_ENCAP_ALL")
    # ixgbe_probe: SG|TSO|TSO6|RXHASH|RXCSUM|HW_CSUM, GSO_PARTIAL with the tunnel types as partial features.
    dev._features = k.m("SG", "TSO", "TSO6", "RXHASH", "RXCSUM", "HW_CSUM", "GSO_PARTIAL") | partial
    dev.gso_partial_features = partial
    if mac_82599:
        # ixgbe_probe: 82599+ -> SCTP_CRC | GSO_UDP_L4 (USO support, ~v5.6, "ixgbe: add UDP segmentation offload").
        dev._features |= k.m("SCTP_CRC", "GSO_UDP_L4")
    dev._hw_features |= dev._features | k.m("HW_VLAN_CTAG_FILTER", "HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_TX",
                                            "RXALL", "HW_L2FW_DOFFLOAD")
    if mac_82599:
        dev._hw_features |= k.m("NTUPLE", "HW_TC")
    dev._features |= k.m("HIGHDMA")
    # ixgbe_probe: vlan_features = features | TSO_MANGLEID; hw_enc_features = vlan_features.
    dev._vlan_features |= dev._features | k.m("TSO_MANGLEID")
    dev._hw_enc_features |= dev._vlan_features
    dev._mpls_features |= k.m("SG", "TSO", "TSO6", "HW_CSUM") | partial
    # ixgbe_probe: VLAN offloads last, they cannot be part of vlan_features.
    dev._features |= k.m("HW_VLAN_CTAG_FILTER", "HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_TX")
    if rsc:
        dev._hw_features |= k.m("LRO")
        dev._features |= k.m("LRO")


@public  # the driver parameters a user passes to Namespace.nic
def _probe_router(dev: Nic, gso_udp_l4: bool = True, gso_fraglist: bool = True, fraglist: bool = True,
                  vlan_offload: bool = False) -> None:
    """A router SoC NIC like the patch author's WIP MIPS32 driver (2e4ef10f5850 commit text): SG, HW_CSUM,
    TSO, and optionally UDP L4 / fraglist GSO and NETIF_F_FRAGLIST. Not a mainline driver: a parameterised
    profile to show what "a driver that supports and advertises this" means."""
    k = dev.ns
    dev.max_mtu = ETH_MAX_MTU  # a hypothetical profile: no hardware limit is modelled
    f = k.m("SG", "HW_CSUM", "HIGHDMA", "RXCSUM", "TSO", "TSO6")
    if gso_udp_l4:
        f |= k.m("GSO_UDP_L4")
    if gso_fraglist:
        f |= k.m("GSO_FRAGLIST")
    if fraglist:
        f |= k.m("FRAGLIST")
    dev._features = f
    dev._hw_features = f
    dev._vlan_features = f
    if vlan_offload:
        dev._features |= k.m("HW_VLAN_CTAG_TX", "HW_VLAN_CTAG_RX")
        dev._hw_features |= k.m("HW_VLAN_CTAG_TX", "HW_VLAN_CTAG_RX")


DRIVERS = {"virtio_net": _probe_virtio_net, "ixgbe": _probe_ixgbe, "router": _probe_router}
