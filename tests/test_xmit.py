"""The transmit decision (vnetlab.xmit), each rule checked against the kernel behaviour it models.

Evidence is named per test: the kernel function and version it models, or the running kernel (the live tests
at the end, which compare send() across a veth pair with real sockets).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from vnetlab import features as F
from vnetlab import netdev, xmit
from vnetlab.segment import gso_skb, header_len

K = "6.1"


def fs(*names: str, kernel: str = K) -> F.FeatureSet:
    return F.FeatureSet.from_names(names, kernel=kernel)


def nic(kernel: str = K, name: str = "eth0", **params) -> netdev.Nic:
    """The router profile's NIC (vnetlab.netdev _probe_router): SG, HW_CSUM, TSO and the offloads asked for."""
    return netdev.Namespace(kernel).nic(name, driver="router", **params)


def vlan(lower: netdev.Device, vid: int = 10) -> netdev.Vlan:
    return lower.ns.vlan(f"{lower.name}.{vid}", lower=lower, vid=vid)


# --- the decision functions ---------------------------------------------------------------------------


@pytest.mark.parametrize("dev", [None, "eth0", object()])
def test_send_refuses_what_is_not_a_device(dev):
    # send(None, skb) made the skb vanish and send("eth0", skb) sent through a featureless device
    with pytest.raises(ValueError, match="dev must be a Device"):
        xmit.send(dev, gso_skb(segs=2, gso_size=100))


def test_netif_needs_gso_checksum_state():
    # include/linux/netdevice.h netif_needs_gso (6.1): ip_summed other than PARTIAL/UNNECESSARY forces GSO
    s = gso_skb(segs=4, gso_size=1000)
    feats = fs("GSO_UDP_L4", "SG", "HW_CSUM")
    assert not xmit.netif_needs_gso(s, feats)
    assert xmit.netif_needs_gso(replace(s, ip_summed="CHECKSUM_NONE"), feats)
    assert xmit.netif_needs_gso(s, fs("SG", "HW_CSUM"))  # net_gso_ok: GSO_UDP_L4 missing
    assert not xmit.netif_needs_gso(gso_skb(segs=1, gso_size=1000), fs())


def test_skb_needs_linearize():
    # include/linux/skbuff.h skb_needs_linearize (6.1): frag_list without FRAGLIST, or frags without SG
    s = gso_skb(segs=4, gso_size=1000)
    assert xmit.skb_needs_linearize(s, fs("HW_CSUM"))
    assert not xmit.skb_needs_linearize(s, fs("SG"))
    f = gso_skb(segs=4, gso_size=1000, fraglist=True)
    assert xmit.skb_needs_linearize(f, fs("SG"))
    assert not xmit.skb_needs_linearize(f, fs("FRAGLIST"))


def test_gso_features_check_max_segs():
    # net/core/dev.c gso_features_check (6.1): gso_segs > gso_max_segs drops NETIF_F_GSO_MASK
    dev = nic().set_gso_max(segs=8)
    feats = xmit.netif_skb_features(dev, gso_skb(segs=9, gso_size=1000))
    assert not feats & F.mask("GSO_MASK", kernel=K)
    assert "SG" in feats


def test_gso_features_check_max_size_is_kernel_dependent():
    # net/core/dev.c gso_features_check: skb->len >= gso_max_size, in 6.1.y stable (6.1.192), absent in 5.10
    s = gso_skb(segs=16, gso_size=1400)
    assert "GSO_UDP_L4" not in xmit.netif_skb_features(nic().set_gso_max(size=20000), s)
    assert "GSO_UDP_L4" in xmit.netif_skb_features(nic("5.10").set_gso_max(size=20000), s)
    # Debian linux-source-5.10 (5.10.223) net/core/dev.c gso_features_check has the stable backport
    assert "GSO_UDP_L4" not in xmit.netif_skb_features(nic("5.10.223").set_gso_max(size=20000), s)


def test_vlan_tag_intersects_with_vlan_features():
    # net/core/dev.c netif_skb_features (6.1): tagged -> & (vlan_features | CTAG_TX | STAG_TX). virtio_net 6.12
    # copies vlan_features from features in virtnet_probe while USO is still off (rule virtio_gso_features):
    # turned on later with ethtool, GSO_UDP_L4 is in features but not in vlan_features.
    dev = netdev.Namespace("6.12").nic("eth0", driver="virtio_net", host_uso=True)
    dev.ethtool_K({"tx-udp-segmentation": True})
    assert "GSO_UDP_L4" in xmit.netif_skb_features(dev, gso_skb(segs=4, gso_size=1000))
    feats = xmit.netif_skb_features(dev, gso_skb(segs=4, gso_size=1000, vlan_tag=10))
    assert "GSO_UDP_L4" not in feats and "TSO" in feats


def test_vlan_features_check_multi_tag_drops_gso_but_not_for_passthru():
    # include/linux/if_vlan.h vlan_features_check (6.1): multi-tagged -> SG|HIGHDMA|HW_CSUM|FRAGLIST|VLAN TX only;
    # ixgbe has its own ndo_features_check (modelled as dflt_features_check), virtio_net passthru_features_check
    s = gso_skb(segs=4, gso_size=1000, vlan_tag=10)
    ixgbe = netdev.Namespace("6.18").nic("eth0", driver="ixgbe")
    feats = xmit.netif_skb_features(ixgbe, s, inband_vlan_tags=1)
    assert feats <= fs("SG", "HIGHDMA", "HW_CSUM", "FRAGLIST", "HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX", kernel="6.18")
    assert "GSO_UDP_L4" in xmit.netif_skb_features(ixgbe, s)
    passthru = netdev.Namespace("6.18").nic("eth0", driver="virtio_net", host_uso=True)
    assert "GSO_UDP_L4" in xmit.netif_skb_features(passthru, s, inband_vlan_tags=1)


def test_harmonize_features_without_checksum_drops_gso():
    # net/core/dev.c harmonize_features (6.1): !can_checksum_protocol -> drop CSUM_MASK | GSO_MASK
    s = gso_skb(segs=4, gso_size=1000)
    dev = nic()
    assert "GSO_UDP_L4" in xmit.netif_skb_features(dev, s)
    assert "GSO_UDP_L4" in xmit.netif_skb_features(dev, gso_skb(segs=4, gso_size=1000, ip=6), ip=6)  # HW_CSUM
    dev.ethtool_K({"tx-checksum-ip-generic": False})  # SG and GSO_UDP_L4 stay on 6.1 (no uso_needs_csum rule)
    assert "GSO_UDP_L4" in dev.features
    assert not xmit.netif_skb_features(dev, s) & F.mask("GSO_MASK", kernel=K)


def test_encapsulation_uses_hw_enc_features():
    # net/core/dev.c netif_skb_features (6.1): skb->encapsulation -> & hw_enc_features (the router NIC's are only
    # what register_netdevice adds: SG | GSO_PARTIAL)
    s = gso_skb(segs=4, gso_size=1000).copy(encapsulation=True)
    assert xmit.netif_skb_features(nic(), s) <= fs("SG", "GSO_PARTIAL")


def test_feature_steps_name_each_rule():
    s = gso_skb(segs=4, gso_size=1000, vlan_tag=10)
    dev = nic()
    steps = xmit.netif_skb_features_steps(dev, s)
    assert steps.start == dev.features
    assert [why.split(":")[0] for why, _ in steps.steps] == ["VLAN tag"]
    assert steps.result == xmit.netif_skb_features(dev, s)


# --- send ---------------------------------------------------------------------------------------------


def test_510_vlan_segments_in_software():
    # include/linux/netdev_features.h NETIF_F_GSO_SOFTWARE (5.10): no GSO_UDP_L4 -> the VLAN device segments
    r = xmit.send(vlan(nic("5.10")), gso_skb(segs=20, gso_size=1400))
    assert r.segmented_at == "eth0.10"
    assert r.hop("eth0.10").action == "segmented"
    assert r.hop("eth0").skbs_in == 20 and r.ops["dev_queue_xmit"] == 21
    assert r.wire_packets == 20 and r.payload_bytes == 28000


def test_511_vlan_passes_and_the_nic_segments_or_not():
    # 2e4ef10f5850 (5.11): GSO_UDP_L4 in GSO_SOFTWARE; segmentation moves to the real device
    s = gso_skb(segs=10, gso_size=1400)
    r = xmit.send(vlan(nic("5.11", gso_udp_l4=False)), s)
    assert r.hop("eth0.10").action == "passed"
    assert r.segmented_at == "eth0" and r.wire_packets == 10
    r2 = xmit.send(vlan(nic("5.11")), s)  # USO in the NIC's features and vlan_features
    assert r2.segmented_at is None and r2.wire_packets == 10
    assert all(p.segmented_by == "hardware" for p in r2.segments)


def test_fraglist_still_segmented_at_vlan_without_netif_f_fraglist():
    # include/linux/netdevice.h skb_gso_ok: the VLAN has GSO_FRAGLIST (5.11+) but no FRAGLIST (vlan_dev_fix_features
    # intersects with the real device, which has none) -> segments there
    s = gso_skb(segs=10, gso_size=1400, fraglist=True)
    r = xmit.send(vlan(nic(fraglist=False)), s)
    assert r.segmented_at == "eth0.10" and r.hop("eth0.10").method == "skb_segment_list"
    r2 = xmit.send(vlan(nic()), s)
    assert r2.segmented_at is None and r2.wire_packets == 10


def test_software_tag_insert_without_ctag_tx():
    # net/core/dev.c validate_xmit_vlan (6.1): no HW_VLAN_CTAG_TX -> __vlan_hwaccel_push_inside
    r = xmit.send(vlan(nic(vlan_offload=False)), gso_skb(segs=1, gso_size=1000))
    assert "tag inserted" in r.hop("eth0").actions
    assert r.segments[0].frame_len == header_len() + 1000 + 4  # VLAN_HLEN
    assert r.segments[0].payload_len == 1000


def test_linearize_frag_list_without_netif_f_fraglist():
    # net/core/dev.c validate_xmit_skb (6.1): non-GSO skb with frag_list, no FRAGLIST -> __skb_linearize
    s = gso_skb(segs=3, gso_size=400, fraglist=True).copy(gso_size=0, gso_segs=0, gso_type=frozenset())
    r = xmit.send(nic(fraglist=False), s)
    assert r.hop("eth0").action == "linearized" and r.wire_packets == 1


def test_send_ipv6_headers():
    # struct ipv6hdr is 40 bytes: a 1400-byte segment is a 1462-byte frame (14 + 40 + 8 + 1400)
    r = xmit.send(nic(), gso_skb(segs=3, gso_size=1400, ip=6), ip=6)
    assert [p.frame_len for p in r.segments] == [1462] * 3


# --- the MTU of the route device ----------------------------------------------------------------------


def test_ip_output_mtu_rules():
    # net/ipv4/ip_forward.c ip_exceeds_mtu: GSO passes when every segment fits (skb_gso_validate_network_len)
    ok = gso_skb(segs=10, gso_size=1472)
    assert xmit.ip_output_mtu(ok, 1500).action == "pass"
    big = gso_skb(segs=10, gso_size=1600)
    assert xmit.ip_output_mtu(big, 1500, df=True).action == "drop"
    # net/ipv4/ip_output.c ip_finish_output_gso: without DF, segment then fragment
    assert xmit.ip_output_mtu(big, 1500, df=False).action == "fragment"
    plain = gso_skb(segs=1, gso_size=3000)
    assert xmit.ip_output_mtu(plain, 1500, df=True).action == "drop"
    assert xmit.ip_output_mtu(plain, 1500, df=False).action == "fragment"


def test_ip_fragment_sizes():
    # net/ipv4/ip_output.c ip_do_fragment: (1500 - 20) & ~7 = 1480 bytes per fragment but the last;
    # net/ipv6/ip6_output.c ip6_fragment: (1500 - 40 - 8) & ~7 = 1448
    assert xmit.ip_fragment_sizes(3008, 1500, ip=4) == [1480, 1480, 48]
    assert xmit.ip_fragment_sizes(1461, 1500, ip=6) == [1448, 13]
    with pytest.raises(ValueError, match="mtu must be an int in 68..65535"):
        xmit.ip_fragment_sizes(100, 20, ip=4)


def test_send_honours_the_device_mtu():
    # 1600-byte segments never leave an MTU-1500 device (ip_exceeds_mtu with DF: dropped)
    ns = netdev.Namespace("6.1")
    eth = ns.nic("eth0", driver="router")
    r = xmit.send(eth, gso_skb(segs=4, gso_size=1600))
    # net/ethernet/eth.c ether_setup: mtu ETH_DATA_LEN 1500; net/ipv4/ip_output.c ip_fragment drops DF segments
    assert r.wire_packets == 0 and r.dropped and "MTU 1500" in r.dropped[0][1]
    r2 = xmit.send(eth, gso_skb(segs=4, gso_size=1600), df=False)
    # ip_finish_output_gso: 4 segments of 1628 B of IP, each fragmented into 1480 + 148 (+ UDP header in the 1st)
    assert [p.frame_len for p in r2.segments] == [1514, 162] * 4
    # source: the input, 4 segments of gso_size 1600; net/ipv4/ip_output.c ip_do_fragment keeps every payload byte
    assert sum(p.payload_len for p in r2.segments) == 4 * 1600
    eth.set_mtu(1700)
    assert xmit.send(eth, gso_skb(segs=4, gso_size=1600)).wire_packets == 4


# --- veth's receive side ------------------------------------------------------------------------------


def test_veth_hands_the_gso_skb_to_its_peer_whole():
    # veth_xmit (drivers/net/veth.c): no segmentation at all; the peer receives one GSO skb.
    net = netdev.Namespace("6.1")
    a, _b = net.veth("v0", "v1")
    tx = xmit.send(a, gso_skb(l4="udp", segs=44, gso_size=1472, fraglist=True))
    assert tx.segmented_at is None
    assert tx.wire_packets == 1 and tx.segments[0].segmented_by == "none"
    assert tx.segments[0].payload_len == 44 * 1472
    assert tx.peer_rx is not None and tx.peer_rx.paths == ("backlog",)


@pytest.mark.parametrize("kernel,napi", [("5.10", False), ("5.12", False), ("5.13", True), ("6.1", True)])
def test_veth_napi_with_gro_requested(kernel, napi):
    # drivers/net/veth.c veth_xmit: before d3256efd8e8b (5.13) NAPI only with XDP; after it also with GRO wanted
    net = netdev.Namespace(kernel)
    a, b = net.veth("v0", "v1")
    b.ethtool_K({"rx-gro": True})
    assert xmit.veth_napi_active(b) is napi
    b.set_xdp(True)
    assert xmit.veth_napi_active(b)


def test_veth_xdp_sets_gro_only_in_513_to_68():
    # drivers/net/veth.c veth_enable_xdp (5.13 .. 6.8) turned GRO on; d7db7775ea2e (6.9, in 6.1.y) stopped it
    for kernel, gro in (("5.13", True), ("6.1", False), ("6.18", False)):
        _, b = netdev.Namespace(kernel).veth("v0", "v1")
        b.set_xdp(True)
        assert ("GRO" in b.features) is gro, kernel
        b.set_xdp(False)
        assert "GRO" not in b.features


def test_veth_eligible_for_gro():
    # drivers/net/veth.c veth_skb_is_eligible_for_gro (5.13+): xmit device with TSO -> NAPI only for local UDP
    # towards GRO_FRAGLIST | GRO_UDP_FWD
    net = netdev.Namespace("6.1")
    a, b = net.veth("v0", "v1")
    b.ethtool_K({"rx-gro": True})
    s = gso_skb(segs=4, gso_size=1000)
    assert xmit.veth_xmit(a, [s], local_udp=True).paths == ("backlog",)
    b.ethtool_K({"rx-udp-gro-forwarding": True})
    assert xmit.veth_xmit(a, [s], local_udp=True).paths == ("napi",)
    assert xmit.veth_xmit(a, [s], local_udp=False).paths == ("backlog",)
    a.ethtool_K({"tso": False})  # no ALL_TSO on the xmit side: everything is eligible
    assert xmit.veth_xmit(a, [s], local_udp=False).paths == ("napi",)


def test_veth_peer_mtu_drops_long_frames():
    # include/linux/netdevice.h __is_skb_forwardable: len > peer mtu + 14 + 4 and not GSO -> dropped
    net = netdev.Namespace("6.1")
    a, b = net.veth("v0", "v1")
    b.set_mtu(1000)
    rx = xmit.veth_xmit(a, [gso_skb(segs=1, gso_size=1400)])
    assert rx.dropped == 1 and rx.delivered == ()
    assert xmit.veth_xmit(a, [gso_skb(segs=4, gso_size=1400)]).dropped == 0  # GSO is always forwardable


# --- vxlan -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel,underlay,where", [
    ("5.10", "veth", "vx0"),  # vxlan_setup GSO_SOFTWARE without UDP_L4 before 2e4ef10f5850
    ("6.1", "veth", None),  # veth hw_enc_features = VETH_FEATURES: UDP_TUNNEL and UDP_L4, the pair takes it whole
    ("6.1", "virtio_net", "eth0"),  # virtio_net 6.1 sets no hw_enc_features: skb_udp_tunnel_segment at eth0
])
def test_where_udp_gso_through_vxlan_is_segmented(kernel, underlay, where):
    net = netdev.Namespace(kernel)
    low = net.veth("eth0", "eth0p")[0] if underlay == "veth" else net.nic("eth0", driver="virtio_net")
    vx = net.vxlan("vx0", vni=42, underlay=low)
    r = xmit.send(vx, gso_skb(segs=10, gso_size=1400))
    assert r.segmented_at == where
    assert "encapsulated (vxlan_xmit_one)" in r.hop("vx0").actions
    if underlay == "virtio_net":
        # outer Ethernet + IPv4 + UDP + VXLAN + inner Ethernet = 50 bytes in front of every inner frame
        assert [p.frame_len for p in r.segments] == [50 + 14 + 20 + 8 + 1400] * 10
    # source: the input, 10 segments of gso_size 1400; net/core/skbuff.c skb_segment keeps every payload byte
    assert r.payload_bytes == 14000


def test_vxlan_rcv_pulls_the_outer_headers_and_runs_gro_cells():
    """drivers/net/vxlan/vxlan_core.c vxlan_rcv: 36 B (IPv4 + UDP + VXLAN) and the inner Ethernet header come
    off each outer skb, skb->encapsulation and the tunnel GSO bits go; gro_cells' GRO runs on the vxlan device."""
    net = netdev.Namespace("6.18")
    v0, v1 = net.veth("v0", "v1")
    vx1 = net.vxlan("vx1", vni=42, underlay=v1)
    outer = [gso_skb(segs=1, gso_size=1300).encapsulate(50, "UDP_TUNNEL") for _ in range(3)]  # +outer ETH
    outer = [s.copy(headlen=s.headlen - 14, headroom=s.headroom + 14) for s in outer]  # at the outer IP header
    r = xmit.vxlan_rcv(vx1, outer)
    assert r.rx_packets == 3 and [s.len for s in r.decapsulated] == [s.len - 50 for s in outer]
    assert not any(s.encapsulation for s in r.decapsulated)
    vx1.ethtool_K({"rx-gro": False})
    assert not xmit.vxlan_rcv(vx1, outer).gro
    with pytest.raises(ValueError, match="vx must be a Vxlan"):
        xmit.vxlan_rcv(v1, outer)
    with pytest.raises(ValueError, match="less than the outer headers"):
        xmit.vxlan_rcv(vx1, [replace(outer[0], headlen=20)])


# --- the transmit model bugs, each from the kernel behaviour ---------------------------------


def test_a_non_gso_tcp_skb_keeps_its_tcp_header():
    # l4_of() called every non-GSO skb UDP, so 1 B of TCP left as a 25 B "payload". The skb carries
    # its protocol (iphdr->protocol); a 1-byte TCP segment is 14 + 20 + 32 (TCP with timestamps) + 1 on the wire.
    eth = netdev.Namespace("5.10").nic("eth0", driver="ixgbe")
    r = xmit.send(eth, gso_skb(l4="tcp", segs=1, gso_size=1), df=False)
    # include/uapi/linux/if_ether.h ETH_HLEN 14, iphdr 20, tcphdr 20 + TCPOLEN_TSTAMP_ALIGNED 12 (include/net/tcp.h)
    assert [(p.frame_len, p.payload_len) for p in r.segments] == [(14 + 20 + 32 + 1, 1)]


def test_software_segmented_tcp_over_veth_is_grod_as_tcp():
    # net/core/skbuff.c skb_segment -> __copy_skb_header: the segments are still TCP; the peer's GRO
    # (tcp4_gro_complete) marks the merged skb SKB_GSO_TCPV4, never UDP_L4 | FRAGLIST
    ns = netdev.Namespace("6.1")
    a, b = ns.veth("v0", "v1")
    a.ethtool_K({"tcp-segmentation-offload": False})
    b.ethtool_K({"rx-gro": True, "rx-gro-list": True})
    r = xmit.send(a, gso_skb(l4="tcp", segs=4, gso_size=1000))
    assert r.segmented_at == "v0"
    assert {s.transport for s in r.peer_rx.delivered} == {"tcp"}
    assert all(not s.gso_type & {"UDP_L4"} for s in r.peer_rx.delivered)


def test_vxlan_fragments_the_inner_packet_before_encapsulating():
    # net/ipv4/ip_output.c ip_fragment at the route device (vx0, MTU 1450) before vxlan_xmit_one: each inner
    # fragment is encapsulated, so the fragments carry 1423 B of UDP payload, not 1423 + the 50 B outer header
    ns = netdev.Namespace("6.1")
    vx = ns.vxlan("vx0", vni=1, underlay=ns.nic("eth0", driver="virtio_net"))
    r = xmit.send(vx, gso_skb(segs=1, gso_size=1423), df=False)
    assert all(p.fragment for p in r.segments) and r.payload_bytes == 1423
    # ip_do_fragment: (1450 - 20) & ~7 = 1424 B of IP payload in the first fragment (UDP header + 1416 B)
    assert [p.payload_len for p in r.segments] == [1416, 7]
    assert [p.frame_len for p in r.segments] == [14 + 50 + 20 + 1424, 14 + 50 + 20 + 7]


def test_fragments_over_a_vlan_carry_the_tag_in_the_header_not_the_data():
    # ip_fragment runs at the VLAN device before vlan_dev_hard_start_xmit tags each fragment; on the veth's
    # peer ip_defrag gives back exactly the datagram (1600 B of UDP payload + 8 + 20)
    ns = netdev.Namespace("6.1")
    a, _b = ns.veth("v0", "v1")
    vl = ns.vlan("v0.10", lower=a, vid=10)
    a.ethtool_K({"tx-vlan-hw-insert": False})  # the tag goes in-band at v0 (validate_xmit_vlan)
    r = xmit.send(vl, gso_skb(segs=1, gso_size=1600), df=False)
    assert r.payload_bytes == 1600 and all(p.vlan_tagged for p in r.segments)
    # net/ipv4/ip_fragment.c ip_defrag: the whole datagram back, iphdr 20 + udphdr 8 + the 1600-byte input
    assert [s.len for s in r.peer_rx.delivered] == [20 + 8 + 1600]


def test_an_inband_tag_is_removed_on_receive():
    # net/core/dev.c __netif_receive_skb_core -> skb_vlan_untag: 1 B sent through a VLAN whose real device
    # inserts the tag in software reaches the peer's stack as 20 + 8 + 1 B, the tag in vlan_tci
    ns = netdev.Namespace("6.1")
    a, _b = ns.veth("v0", "v1")
    vl = ns.vlan("v0.10", lower=a, vid=10)
    a.ethtool_K({"tx-vlan-hw-insert": False})
    r = xmit.send(vl, gso_skb(segs=1, gso_size=1))
    assert [(s.len, s.vlan_tag, s.vlan_inband) for s in r.peer_rx.delivered] == [(29, 10, ())]


def test_bridge_without_ports_and_bond_without_slaves_drop():
    # net/bridge/br_device.c br_dev_xmit -> br_flood to no port: kfree_skb; drivers/net/bonding/bond_main.c
    # bond_start_xmit without slaves: bond_tx_drop. Nothing reaches a wire.
    ns = netdev.Namespace("6.1")
    for dev in (ns.bridge("br0"), ns.bond("bond0")):
        r = xmit.send(dev, gso_skb(segs=1, gso_size=100))
        assert r.wire_packets == 0 and len(r.dropped) == 1 and r.dropped[0][0] == dev.name
        assert r.hops[-1].action == "dropped"


def test_gso_size_without_gso_type_is_dropped():
    # net/core/dev.c gso_features_check: gso_type 0 -> skb_warn_bad_offload; no GSO handler takes it
    # (inet_gso_segment / virtio_net_hdr_from_skb: -EINVAL), so validate_xmit_skb frees it
    s = gso_skb(segs=1, gso_size=1000).copy(gso_size=100)
    r = xmit.send(nic(), s)
    assert r.wire_packets == 0 and "skb_warn_bad_offload" in r.dropped[0][1]


def test_fraglist_through_an_ipv6_vxlan_segments():
    # net/core/skbuff.c skb_segment_list (6.1) copies offset + tnl_hlen bytes in front of each member; with the
    # 70 B of an IPv6 vxlan there is less headroom than that, so the head is reallocated (it used to fail)
    ns = netdev.Namespace("6.1")
    vx = ns.vxlan("vx6", vni=1, underlay=ns.nic("eth0", driver="virtio_net"), ip=6)
    r = xmit.send(vx, gso_skb(segs=4, gso_size=1000, fraglist=True))
    assert r.wire_packets == 4 and r.payload_bytes == 4000
    assert all(s.truesize >= s.len for s in r.skbs_to_driver)
