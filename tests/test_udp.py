"""A UDP socket with UDP_SEGMENT (vnetlab.udp) against the kernel's own selftest and the running kernel.

Evidence: tools/testing/selftests/net/udpgso.c (testcases_v4 / testcases_v6, MTU 1500, IP_PMTUDISC_DO) as
shipped in Debian linux-source-6.1 (6.1.192) and linux-source-5.10 (5.10.223); net/ipv4/udp.c udp_send_skb
and include/linux/udp.h of those trees and of the ≈6.18 mirror; and the running kernel (live tests), whose
profile is live.running_profile().
"""

from __future__ import annotations

import pytest

from vnetlab import live, netdev, udp
from vnetlab.segment import gso_skb
from vnetlab.skb import Skb

MTU = 1500
MSS = {4: MTU - 20 - 8, 6: MTU - 40 - 8}  # udpgso.c CONST_MSS_V4 / CONST_MSS_V6
MAX_BYTES = {4: 65535 - 28, 6: 65535 + 40 - 48}  # ETH_MAX_MTU - CONST_HDRLEN_V4, IP6_MAX_MTU - CONST_HDRLEN_V6


def selftest_cases(ip: int, max_segments: int, with_2025_cases: bool) -> list[tuple[int, int, bool, int, int]]:
    """udpgso.c testcases_v4 / testcases_v6: (tlen, gso_len, tfail, r_num_mss, r_len_last), in file order;
    the two "datalen <= MSS < gso_len" / "MSS < datalen < gso_len" cases arrived with 235174b2bed8."""
    mss = MSS[ip]
    top = 65535 if ip == 4 else 65535 + 40  # ETH_MAX_MTU / IP6_MAX_MTU
    cases = [(1, 0, False, 0, 1), (mss, 0, False, 1, 0), (mss + 1, 0, True, 0, 0), (mss, mss, False, 1, 0)]
    if with_2025_cases:
        cases += [(mss, mss + 1, False, 0, mss), (mss + 1, mss + 2, True, 0, 0)]
    cases += [(mss + 1, mss, False, 1, 1), (mss * 2, mss, False, 2, 0), (mss * 2 + 1, mss, False, 2, 1),
              (top // mss * mss, mss, False, top // mss, 0),
              (MAX_BYTES[ip], mss, False, MAX_BYTES[ip] // mss, MAX_BYTES[ip] - MAX_BYTES[ip] // mss * mss),
              (MAX_BYTES[ip] + 1, mss, True, 0, 0), (1, 1, False, 1, 0), (2, 1, False, 2, 0), (5, 2, False, 2, 1),
              (max_segments, 1, False, max_segments, 0), (max_segments + 1, 1, True, 0, 0)]
    return cases


def _expected(case: tuple[int, int, bool, int, int], ip: int) -> tuple[int, ...]:
    tlen, gso, _fail, n, last = case
    return (gso or MSS[ip],) * n + ((last,) if last else ())


@pytest.mark.parametrize("kernel, max_segments, new_cases", [("6.1", 128, True), ("6.18", 128, True),
                                                               ("5.10", 64, False)])
@pytest.mark.parametrize("ip", [4, 6])
def test_kernel_selftest_cases(kernel, max_segments, new_cases, ip):
    # udpgso.c of Debian 6.1.192 (UDP_MAX_SEGMENTS 1 << 7, the 2025 cases) and of 5.10.223 (1 << 6, without)
    v0, _ = netdev.Namespace(kernel).veth("v0", "v1")
    assert udp.udp_max_segments(kernel) == max_segments
    for case in selftest_cases(ip, max_segments, new_cases):
        r = udp.udp_sendmsg(v0, case[0], gso_size=case[1], ip=ip, dontfrag=True)
        if case[2]:
            assert r.error is not None, case
        else:
            assert r.error is None, (case, r.reason)
            assert r.datagrams == _expected(case, ip), case


def test_errno_per_rule():
    v0, _ = netdev.Namespace("6.1").veth("v0", "v1")
    # net/ipv4/udp.c udp_sendmsg: len > 0xFFFF -> EMSGSIZE; IPv6 has no such check: 65536 fails in
    # __ip6_append_data instead (length > IPV6_MAXPLEN)
    assert udp.udp_sendmsg(v0, 65536, gso_size=1472).error == "EMSGSIZE"
    assert udp.udp_sendmsg(v0, 65536, gso_size=1452, ip=6).error == "EMSGSIZE"
    # udp_lib_setsockopt UDP_SEGMENT: outside 0..USHRT_MAX -> EINVAL
    assert udp.udp_sendmsg(v0, 1000, gso_size=65536).error == "EINVAL"
    assert udp.udp_sendmsg(v0, 1000, gso_size=-1).error == "EINVAL"
    # udp_send_skb: sk_no_check_tx with gso_size -> EINVAL
    assert udp.udp_sendmsg(v0, 3000, gso_size=1000, no_check_tx=True).error == "EINVAL"
    r = udp.udp_sendmsg(v0, 3000, gso_size=1000)
    assert r.error is None and r.errno is None and r.gso_segs == 3


# include/linux/udp.h UDP_MAX_SEGMENTS, read in each tree: Debian 5.10.223 :96 (1 << 6UL), Debian 6.1.192 :105 and
# 6.12.95 :111 (1 << 7UL, 1382e3b6a350), the ≈6.18 mirror (1 << 7UL); mainline 5.10..5.13 predate 1382e3b6a350 (v6.9;
# stable 6.8.y and 6.1.107).
UDP_MAX_SEGMENTS = {"5.10": 64, "5.10.223": 64, "5.11": 64, "5.12": 64, "5.13": 64, "6.1": 128, "6.12": 128,
                    "6.18": 128}


@pytest.mark.parametrize("kernel", sorted(UDP_MAX_SEGMENTS))
def test_udp_max_segments_per_kernel(kernel):
    most = UDP_MAX_SEGMENTS[kernel]
    assert udp.udp_max_segments(kernel) == most
    v0, _ = netdev.Namespace(kernel).veth("v0", "v1")
    # udp_send_skb: datalen > gso_size * UDP_MAX_SEGMENTS -> -EINVAL
    assert udp.udp_sendmsg(v0, most, gso_size=1).gso_segs == most
    r = udp.udp_sendmsg(v0, most + 1, gso_size=1)
    assert r.error == "EINVAL" and f"UDP_MAX_SEGMENTS ({most})" in r.reason


# udp_send_skb / udp_v6_send_skb with gso_size above what the MTU leaves: before 235174b2bed8 (Debian 5.10.223
# net/ipv4/udp.c:926, net/ipv6/udp.c:1213) hlen + gso_size > fragsize -> -EINVAL even for one short datagram;
# after it (Debian 6.1.192 udp.c:1007 / ipv6 :1306, 6.12.95 udp.c:988 / ipv6 :1298, ≈6.18 mirror)
# hlen + min(datalen, gso_size) > fragsize -> -EMSGSIZE. Mainline 5.10..5.13 predate it (2025).
GSO_ABOVE_MTU = {"5.10": ("EINVAL", "EINVAL"), "5.10.223": ("EINVAL", "EINVAL"), "5.11": ("EINVAL", "EINVAL"),
                 "5.12": ("EINVAL", "EINVAL"), "5.13": ("EINVAL", "EINVAL"), "6.1": (None, "EMSGSIZE"),
                 "6.12": (None, "EMSGSIZE"), "6.18": (None, "EMSGSIZE")}


@pytest.mark.parametrize("ip", [4, 6])
@pytest.mark.parametrize("kernel", sorted(GSO_ABOVE_MTU))
def test_gso_size_above_mtu_by_kernel(kernel, ip):
    short, long_ = GSO_ABOVE_MTU[kernel]
    v0, _ = netdev.Namespace(kernel).veth("v0", "v1")
    assert udp.udp_sendmsg(v0, 1000, gso_size=1600, ip=ip).error == short
    assert udp.udp_sendmsg(v0, 3000, gso_size=1600, ip=ip).error == long_


def test_malformed_udp_rules_name_the_field():
    from vnetlab.errors import TableError
    from vnetlab.profiles import Kernel
    from vnetlab.tables import Section

    bad = Kernel("6.1", Section("kernels", "6.1", {"udp_gso_mtu_check": "min", "udp_max_segments": 0},
                                {"udp_gso_mtu_check": "x", "udp_max_segments": "x"}))
    with pytest.raises(TableError, match=r"\[6.1\]\.udp_max_segments"):
        udp.udp_max_segments(bad)
    with pytest.raises(TableError, match=r"\[6.1\]\.udp_gso_mtu_check must be one of"):
        udp.udp_sendmsg(netdev.Namespace("6.1").veth("v0", "v1")[0], 3000, gso_size=1000, kernel=bad)


def test_route_device_without_checksum_offload_by_kernel():
    # udp_send_skb (6.1.192): ip_summed != CHECKSUM_PARTIAL -> EIO; 10154dbded6d (v6.11, ≈6.18): accepted and
    # segmented in software where the device cannot checksum (netdev_fix_features also drops USO there)
    for kernel in ("6.1", "6.18"):
        v0, _ = netdev.Namespace(kernel).veth("v0", "v1")
        v0.ethtool_K({"tx": False})
        r = udp.udp_sendmsg(v0, 14000, gso_size=1400)
        if kernel == "6.1":
            assert r.error == "EIO"
        else:
            assert r.error is None and r.tx is not None and r.tx.segmented_at == "v0" and r.tx.wire_packets == 10
        assert udp.udp_sendmsg(v0, 1400).error is None  # without UDP_SEGMENT the stack checksums in software


def test_datagrams_on_a_nic_are_cut_by_hardware_or_software():
    # virtio_net 6.1 has no USO (GSO_UDP_L4 absent): validate_xmit_skb segments; 6.18 with HOST_USO: the NIC does
    eth = netdev.Namespace("6.1").nic("eth0", driver="virtio_net")
    r = udp.udp_sendmsg(eth, 10000, gso_size=1472)
    assert r.tx is not None and r.tx.segmented_at == "eth0"
    assert [p.payload_len for p in r.tx.segments] == [1472] * 6 + [1168]  # the short last one
    eth6 = netdev.Namespace("6.18").nic("eth0", driver="virtio_net", host_uso=True)
    r6 = udp.udp_sendmsg(eth6, 10000, gso_size=1472)
    assert r6.tx is not None and r6.tx.segmented_at is None
    assert {p.segmented_by for p in r6.tx.segments} == {"hardware"} and r6.datagrams == r.datagrams


def test_local_datagram_over_mtu_is_fragmented_without_dontfrag():
    # net/ipv4/ip_output.c __ip_make_skb: no DF above the MTU unless IP_PMTUDISC_DO; ip_fragment: 1480-byte pieces
    v0, _ = netdev.Namespace("6.1").veth("v0", "v1")
    r = udp.udp_sendmsg(v0, 3000)
    assert r.error is None and r.datagrams == (3000,)
    assert r.tx is not None and [p.fragment for p in r.tx.segments] == [True, True, True]
    assert udp.udp_sendmsg(v0, 3000, dontfrag=True).error == "EMSGSIZE"  # __ip_append_data, maxnonfragsize = mtu


# --- the receiving socket ----------------------------------------------------------------------------


def _rx(skb):
    """An skb as the stack hands it to UDP: eth_type_trans pulled the Ethernet header."""
    from dataclasses import replace

    return replace(skb, headroom=skb.headroom + 14, headlen=skb.headlen - 14)


def test_udp_recv_segments_unexpected_gso():
    # include/linux/udp.h udp_unexpected_gso -> udp_rcv_segment: a plain socket gets one datagram per segment
    s = _rx(gso_skb(segs=4, gso_size=1000, tail_size=10))
    plain = udp.udp_recv([s])
    assert plain.sizes == (1000, 1000, 1000, 10) and plain.gso_sizes == (None,) * 4 and plain.segmented == 1
    # UDP_GRO (accept_udp_l4): one recvmsg of everything, udp_cmsg_recv gives gso_size
    grosock = udp.udp_recv([s], udp_gro=True)
    assert grosock.sizes == (3010,) and grosock.gso_sizes == (1000,) and grosock.datagrams == 4


def test_udp_gro_socket_and_fraglist_skbs_by_kernel():
    # 78352f73dc50 "udp: never accept GSO_FRAGLIST packets" (v5.13): before, gro_enabled accepted any UDP_L4 skb
    s = _rx(gso_skb(segs=3, gso_size=1000, fraglist=True))
    assert udp.udp_recv([s], udp_gro=True, kernel="5.12").sizes == (3000,)
    assert udp.udp_recv([s], udp_gro=True, kernel="5.13").sizes == (1000, 1000, 1000)
    # Debian linux-source-5.10 (5.10.223) include/linux/udp.h: FRAGLIST && !accept_udp_fraglist, never set
    assert udp.udp_recv([s], udp_gro=True, kernel="5.10.223").sizes == (1000, 1000, 1000)


# --- the running kernel --------------------------------------------------------------------------------


def _require_labs():
    cap = live.available(labs=True)
    if not cap:
        pytest.skip(cap.reason)


@pytest.mark.live
@pytest.mark.parametrize("ip", [4, 6])
def test_live_udp_segment_limits_and_errors(ip):
    """The selftest's sizes (live.udp_segment_cases) with real UDP_SEGMENT sockets over a veth pair."""
    _require_labs()
    rows = live.udp_segment_lab(ip=ip)
    assert len(rows) == 17
    bad = [str(r) for r in rows if not r.agrees]
    assert not bad, "\n".join(bad)


@pytest.mark.live
def test_live_udp_segment_without_checksum_offload_and_with_udp_gro():
    _require_labs()
    rows = live.udp_segment_lab([(14000, 1400), (1400, 0), (2945, 1472)], sender={"tx": False})
    rows += live.udp_segment_lab([(14000, 1400), (2945, 1472), (1, 1)], udp_gro=True)
    bad = [str(r) for r in rows if not r.agrees]
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def veth_gro_rows():
    _require_labs()
    return {(r.label, r.udp_gro): r for g in (False, True) for r in live.veth_gro_lab(udp_gro=g)}


@pytest.mark.live
@pytest.mark.parametrize("udp_gro", [False, True], ids=["plain", "udp_gro"])
@pytest.mark.parametrize("label", [label for label, _ in live.VETH_GRO_CONFIGS])
def test_live_gro_across_veth(veth_gro_rows, label, udp_gro):
    row = veth_gro_rows[(label, udp_gro)]
    assert row.agrees, str(row)


@pytest.mark.live
def test_live_vxlan_passes_udp_gso_whole():
    """From 5.11 a vxlan device takes a UDP_L4 GSO skb whole (GSO_SOFTWARE); over a veth underlay (which has
    UDP_TUNNEL and UDP_L4 in hw_enc_features) one skb crosses the pair and the receiver reads 10 datagrams."""
    _require_labs()
    rows = live.vxlan_lab()
    bad = [str(r) for r in rows if not r.agrees]
    assert not bad, "\n".join(bad)


# --- vxlan: the receive side (udpgro_fwd.sh's tunnel cases) -------------------------------------------------


def _vxlan_pair(kernel, rx=None, xdp=False, outer_ip=4):
    net = netdev.Namespace(kernel=kernel)
    v0, v1 = net.veth("v0", "v1")
    vx0 = net.vxlan("vx0", vni=42, underlay=v0, ip=outer_ip)
    vx1 = net.vxlan("vx1", vni=42, underlay=v1, ip=outer_ip)
    if rx:
        v1.ethtool_K(rx)
    if xdp:
        v1.set_xdp(True)
    return vx0, vx1


TUNNEL_RX = [{"rx-gro": True, "rx-gro-list": True}, {"rx-gro": True, "rx-udp-gro-forwarding": True}]


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "6.12.117", "6.18", "7.2.12", "7.3.4"])
@pytest.mark.parametrize("rx", TUNNEL_RX, ids=["rx-gro-list", "rx-udp-gro-forwarding"])
def test_vxlan_tunnel_cases_deliver_ten_inner_datagrams(kernel, rx):
    """tools/testing/selftests/net/udpgro_fwd.sh "GRO frag list / GRO fwd over UDP tunnel": XDP on the receiving
    veth (create_ns) makes the sender segment the vxlan skb (veth_fix_features), one 13000 B send of gso 1300
    crosses as 10 outer packets, and the test expects 10 vxlan and 10 inner packets at INPUT. The underlay does
    not aggregate them: udp_gro_receive's `if (skb->encapsulation) goto out` (Debian 6.1.192 udp_offload.c:641,
    6.12.117 :650, 7.2.12 :800; measured on 6.18.44: v1 and vx1 rx_packets 10 each, live.vxlan_lab)."""
    vx0, vx1 = _vxlan_pair(kernel, rx, xdp=True)
    t = udp.send_over_vxlan(vx0, vx1, 13000, gso_size=1300)
    assert t.rx is not None and t.vxlan is not None and t.recv is not None
    assert t.rx.paths == ("napi",) * 10 and len(t.rx.delivered) == 10  # 10 outer skbs up the underlay
    assert t.vxlan.rx_packets == 10 and all(not s.encapsulation for s in t.vxlan.decapsulated)
    assert t.recv.sizes == (1300,) * 10 and t.recv.segmented == 0  # a plain socket: 10 datagrams
    # a UDP_GRO socket behind vx1: gro_cells' GRO on vx1 aggregates the 10 inner datagrams (6.18.44: one
    # recvmsg of 13000 B with UDP_GRO cmsg 1300)
    vx0, vx1 = _vxlan_pair(kernel, rx, xdp=True)
    g = udp.send_over_vxlan(vx0, vx1, 13000, gso_size=1300, udp_gro=True)
    assert g.vxlan is not None and g.recv is not None
    assert g.vxlan.rx_packets == 10 and len(g.vxlan.delivered) == 1
    assert g.recv.sizes == (13000,) and g.recv.gso_sizes == (1300,)


@pytest.mark.parametrize("kernel", ["5.10.223", "5.10.262"])
def test_vxlan_underlay_aggregates_before_the_encapsulation_test(kernel):
    """Debian 5.10.223 / 5.10.262 udp_gro_receive has no skb->encapsulation test (probe udp_gro_skips_local_encap):
    the underlay's rx-gro-list GRO aggregates the 10 outer packets (not measured here: no 5.10 run of vxlan_lab)."""
    vx0, vx1 = _vxlan_pair(kernel, TUNNEL_RX[0], xdp=True)
    t = udp.send_over_vxlan(vx0, vx1, 13000, gso_size=1300)
    assert t.rx is not None and t.vxlan is not None and t.recv is not None
    assert len(t.rx.paths) == 10 and len(t.rx.delivered) == 1 and t.vxlan.rx_packets == 1
    assert t.recv.calls == 10  # the plain socket segments the fraglist skb (udp_unexpected_gso)


def test_vxlan_gso_skb_crosses_whole_without_xdp():
    """Without XDP the veth pair takes the encapsulated GSO skb whole (6.18.44: v1 and vx1 rx_packets 1; a plain
    socket reads 10 datagrams, a UDP_GRO one 1 of 14000 B with cmsg 1400), whatever the underlay's GRO."""
    for rx in (None, *TUNNEL_RX):
        vx0, vx1 = _vxlan_pair("6.18", rx)
        t = udp.send_over_vxlan(vx0, vx1, 14000, gso_size=1400)
        assert t.rx is not None and t.vxlan is not None and t.recv is not None
        assert len(t.rx.delivered) == 1 and t.vxlan.rx_packets == 1 and t.recv.sizes == (1400,) * 10
        vx0, vx1 = _vxlan_pair("6.18", rx)
        g = udp.send_over_vxlan(vx0, vx1, 14000, gso_size=1400, udp_gro=True)
        assert g.recv is not None and g.recv.sizes == (14000,) and g.recv.gso_sizes == (1400,)


def test_send_over_vxlan_refuses_devices_that_are_not_a_vxlan_pair():
    net = netdev.Namespace(kernel="6.18")
    v0, v1 = net.veth("v0", "v1")
    v2, _ = net.veth("v2", "v3")
    vx0, vx2 = net.vxlan("vx0", vni=42, underlay=v0), net.vxlan("vx2", vni=42, underlay=v2)
    with pytest.raises(ValueError, match="vx must be a Vxlan"):
        udp.send_over_vxlan(v0, vx2, 1400)
    with pytest.raises(ValueError, match="vx='vx9' must be a vxlan device on a veth underlay"):
        udp.send_over_vxlan(net.vxlan("vx9", vni=9, underlay=net.nic("eth0")), vx2, 1400)
    with pytest.raises(ValueError, match="peer_vx='vx2' must be a vxlan device on the peer of 'v0'"):
        udp.send_over_vxlan(vx0, vx2, 1400)


@pytest.mark.live
def test_live_vxlan_receive_side_matches_the_model():
    """vxlan_lab over every VXLAN_RX_CONFIGS (udpgro_fwd.sh's XDP + rx-gro-list / rx-udp-gro-forwarding cases and
    the plain pair), plain and UDP_GRO receivers: v1's and vx1's rx_packets and what recvmsg returns, kernel
    beside the model."""
    _require_labs()
    for udp_gro in (False, True):
        rows = live.vxlan_lab(((13000, 1300), (1400, 0)), configs=live.VXLAN_RX_CONFIGS, udp_gro=udp_gro)
        assert len(rows) == 2 * len(live.VXLAN_RX_CONFIGS)
        bad = [str(r) for r in rows if not r.agrees]
        assert not bad, "\n".join(bad)


@pytest.mark.parametrize("ip", [4, 6])
def test_vxlan6_tunnel_cases_deliver_ten_inner_datagrams(ip):
    """udpgro_fwd.sh runs the tunnel cases again over vxlan6 (IPv6 outer, UDP_TUNNEL_CSUM: udp6_gro_receive ->
    the same udp_gro_receive test) and expects 10 and 10 there too (from the script; the lab here is IPv4 only)."""
    for rx in TUNNEL_RX:
        vx0, vx1 = _vxlan_pair("6.18", rx, xdp=True, outer_ip=6)
        t = udp.send_over_vxlan(vx0, vx1, 13000, gso_size=1300, ip=ip)
        assert t.rx is not None and t.vxlan is not None and t.recv is not None
        assert len(t.rx.delivered) == 10 and t.vxlan.rx_packets == 10 and t.recv.sizes == (1300,) * 10


def test_udp_sendmsg_refuses_a_missing_device_and_non_bool_flags():
    # udp_sendmsg(None, 1000) reported success with nothing on the wire; dontfrag="no" was truthy
    eth = netdev.Namespace("6.1").nic("eth0", driver="router")
    with pytest.raises(ValueError, match="dev must be a Device"):
        udp.udp_sendmsg(None, 1000)
    for flag in ("dontfrag", "no_check_tx", "peer_udp_gro"):
        with pytest.raises(ValueError, match=f"{flag} must be True or False|{flag} must be a bool"):
            udp.udp_sendmsg(eth, 1000, **{flag: "no"})


# --- what can reach a UDP socket ------------------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: None, "must be an Skb"),
    # ip_protocol_deliver_rcu (net/ipv4/ip_input.c) demuxes on iph->protocol: TCP never reaches udp_rcv
    (lambda: _rx(gso_skb(l4="tcp", segs=2, gso_size=1000)), "TCP skb"),
    # __udp4_lib_rcv (net/ipv4/udp.c) drops what cannot hold a struct udphdr before any socket sees it
    (lambda: Skb(headlen=20, truesize=512, head_frag=False, end_offset=256, l4="udp"),
     "shorter than the IPv4 and UDP headers"),
])
def test_udp_recv_refuses_skbs_no_udp_socket_is_handed(make, message):
    from vnetlab.errors import ArgumentError

    with pytest.raises(ArgumentError, match=message):
        udp.udp_recv([make()])


@pytest.mark.parametrize("kernel", ["5.10", "5.11", "5.12", "5.13", "5.10.223", "5.10.262"])
@pytest.mark.parametrize("rx", [None, {"rx-gro": True, "rx-udp-gro-forwarding": True}], ids=["gro", "gro-fwd"])
def test_the_inner_sockets_udp_gro_never_merges_the_outer_flow(kernel, rx):
    """With XDP on the underlay the vxlan GSO skb crosses as 10 outer packets into the underlay's NAPI GRO. The
    outer lookup finds the tunnel's socket (net/ipv4/udp_offload.c udp4_gro_receive, Debian 5.10.223), which has
    no gro_enabled: udp_gro_receive's `(sk && udp_sk(sk)->gro_enabled) || is_flist` is false, and GRO_UDP_FWD
    (5.12) is only for `!sk`. So the outer packets go up one by one, vxlan_rcv decapsulates each, and the inner
    UDP_GRO socket reads exactly what was sent (the model read the outer headers as payload: 14450 of 14000 B)."""
    if rx and "rx-udp-gro-forwarding" not in netdev.Namespace(kernel=kernel).veth("a", "b")[0].ethtool_k():
        pytest.skip(f"{kernel} has no rx-udp-gro-forwarding")
    vx0, vx1 = _vxlan_pair(kernel, rx, xdp=True)
    t = udp.send_over_vxlan(vx0, vx1, 14000, gso_size=1400, udp_gro=True)
    assert t.rx is not None and t.vxlan is not None and t.recv is not None
    assert len(t.rx.delivered) == 10 and t.vxlan.rx_packets == 10
    assert t.recv.bytes == 14000 and t.recv.sizes == (14000,) and t.recv.gso_sizes == (1400,)  # the length sent


@pytest.mark.parametrize("end1, why", [((43, 6), "IPv6 only"), ((43, 4), "VNI 42"), ((42, 6), "IPv6 only")])
def test_mismatched_vxlan_ends_drop_and_say_why(end1, why):
    # drivers/net/vxlan/vxlan_core.c (6.1): vxlan_vs_find_vni finds no device for another VNI; an IPv6 vxlan
    # socket is v6only (vxlan_socket_create), so an IPv4 outer header finds no socket. Before: 980 of 1000 B.
    net = netdev.Namespace(kernel="6.1")
    v0, v1 = net.veth("v0", "v1")
    vx0 = net.vxlan("vx0", vni=42, underlay=v0, ip=4)
    vx1 = net.vxlan("vx1", vni=end1[0], underlay=v1, ip=end1[1])
    t = udp.send_over_vxlan(vx0, vx1, 1000)
    assert t.recv is not None and t.vxlan is not None
    assert t.recv.bytes == 0 and t.vxlan.rx_packets == 0 and len(t.vxlan.dropped) == 1
    assert why in t.vxlan.dropped[0][1]


def test_vxlan_rcv_drops_a_plain_skb_instead_of_stripping_it():
    # vxlan_rcv drops what has no VXLAN header (pskb_may_pull(VXLAN_HLEN), the VNI flag); before, a plain
    # 1000-byte datagram lost its first 64 bytes as "outer headers".
    net = netdev.Namespace(kernel="6.1")
    v0, v1 = net.veth("v0", "v1")
    vx1 = net.vxlan("vx1", vni=42, underlay=v1)
    plain = udp.udp_sendmsg(v0, 1000).skb
    from vnetlab import xmit
    r = xmit.vxlan_rcv(vx1, [plain.copy(headroom=plain.headroom + 14, headlen=plain.headlen - 14)])
    assert r.rx_packets == 0 and not r.delivered and "no VXLAN header" in r.dropped[0][1]


@pytest.mark.parametrize("given", [None, "6.1", "kernel object"])
def test_each_public_entry_resolves_the_kernel_once_and_carries_it(monkeypatch, given):
    # the kernel is resolved at the public entry (profiles.device_kernel, or profiles.kernel for udp_recv) and the
    # very Kernel object is handed on: to the send, xmit.send, vxlan_rcv and the receiving socket
    from vnetlab import profiles

    calls: list[str] = []
    for name in ("device_kernel", "_kernel"):
        real = getattr(udp, name)
        monkeypatch.setattr(udp, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    net = netdev.Namespace(kernel="6.1")
    v0, _ = net.veth("v0", "v1")
    u0, u1 = net.veth("u0", "u1")
    vx0, vx1 = net.vxlan("vx0", vni=42, underlay=u0), net.vxlan("vx1", vni=42, underlay=u1)
    kernel = profiles.kernel("6.1") if given == "kernel object" else given
    entries = {
        "udp_sendmsg": lambda: udp.udp_sendmsg(v0, 3000, gso_size=1000, kernel=kernel),
        "send_over_veth": lambda: udp.send_over_veth(v0, 3000, gso_size=1000, udp_gro=True, kernel=kernel),
        "send_over_vxlan": lambda: udp.send_over_vxlan(vx0, vx1, 3000, gso_size=1000, kernel=kernel),
        "udp_recv": lambda: udp.udp_recv([], kernel=kernel or "6.1"),
    }
    for name, entry in entries.items():
        calls.clear()
        out = entry()
        assert len(calls) == 1, f"{name} resolved its kernel {len(calls)} times: {calls}"
        send = out if isinstance(out, udp.UdpSend) else getattr(out, "send", None)
        if send is not None:
            assert send.tx is not None and send.tx.kernel is send.kernel is net.kernel, name
