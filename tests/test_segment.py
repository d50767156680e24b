"""GSO skbs and their software segmentation (vnetlab.segment), and the no-byte-lost property of every
transmit-side API that turns skbs into skbs (segment, xmit.send, xmit.veth_xmit, udp, router)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vnetlab import features as F
from vnetlab import netdev, router, segment, udp, xmit
from vnetlab.segment import gso_skb, header_len, payload_len

KERNELS = ("5.10", "5.11", "5.12", "5.13", "6.1", "6.18")


def fs(*names: str, kernel: str = "6.1") -> F.FeatureSet:
    return F.FeatureSet.from_names(names, kernel=kernel)


# --- gso_skb ------------------------------------------------------------------------------------------


def test_fraglist_skb_layout():
    # net/core/gro.c skb_gro_receive_list (6.1): one whole skb per segment on frag_list
    s = gso_skb(segs=10, gso_size=1000, fraglist=True)
    assert len(s.frag_list) == 9
    assert s.gso_type == {"UDP_L4", "FRAGLIST"}
    assert s.gso_segs == 10 and s.gso_size == 1000
    assert s.headlen == header_len("udp") + 1000 == 14 + 20 + 8 + 1000
    assert all(m.len == 1000 for m in s.frag_list)
    assert s.len == 42 + 10 * 1000


def test_frags_skb_spills_into_frag_list_past_max_skb_frags():
    # net/core/gro.c skb_gro_receive (6.1): case 3 chains a new skb once lp has MAX_SKB_FRAGS (17) frags
    s = gso_skb(segs=40, gso_size=1000)
    assert s.nr_frags == 17
    assert [m.nr_frags for m in s.frag_list] == [17, 6]
    assert s.gso_type == {"UDP_L4"}
    assert not gso_skb(segs=17, gso_size=1000).frag_list


def test_ipv6_and_tcp_gso_types():
    # include/linux/skbuff.h: UDP_L4 for both IP versions, TCPV4 / TCPV6 for TCP (tcp{4,6}_gro_complete)
    assert gso_skb(segs=2, gso_size=100, ip=6).gso_type == {"UDP_L4"}
    assert gso_skb(l4="tcp", segs=2, gso_size=100, ip=6).gso_type == {"TCPV6"}
    assert gso_skb(segs=2, gso_size=100, ip=6).len == 14 + 40 + 8 + 200


def test_max_gro_segs():
    # net/core/gro.c (6.1): p->len + len < 65536 with p->len from the IP header: 44 * 1472 + 28 = 64796
    assert segment.max_gro_segs(1472) == 44
    assert segment.max_gro_segs(1452, ip=6) == 45  # 45 * 1452 + 48 = 65388 < 65536, 46 would not be
    assert segment.max_gro_segs(100) == 64  # net/ipv4/udp_offload.c UDP_GRO_CNT_MAX


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"segs": 0, "gso_size": 1000}, "segs"),
        ({"segs": 65, "gso_size": 100}, "segs"),  # UDP_GRO_CNT_MAX 64
        ({"segs": 2, "gso_size": 0}, "gso_size"),
        ({"segs": 2, "gso_size": 100, "l4": "sctp"}, "l4"),
        ({"segs": 2, "gso_size": 100, "vlan_tag": 4096}, "vlan_tag"),
        ({"segs": 60, "gso_size": 1472}, "segs"),
        ({"segs": 2, "gso_size": 100, "tail_size": 101}, "tail_size"),
        ({"segs": 2, "gso_size": 100, "ip": 5}, "ip"),
    ],
)
def test_gso_skb_rejects_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=param):
        gso_skb(**kwargs)


# --- segmentation -------------------------------------------------------------------------------------


def test_fraglist_uses_skb_segment_list_without_allocations():
    # net/ipv4/udp_offload.c __udp_gso_segment_list -> net/core/skbuff.c skb_segment_list (6.1)
    r = segment.skb_gso_segment(gso_skb(segs=10, gso_size=1000, fraglist=True), fs("SG", "HW_CSUM"))
    assert r.method == "skb_segment_list"
    assert r.skb_allocs == 0 and len(r.segs) == 10
    assert all(seg.len == 42 + 1000 for seg in r.segs)


@pytest.mark.parametrize("kernel, ip, kept", [
    # net/ipv4/udp_offload.c __udp_gso_segment_list: mainline v5.10 returns skb_segment_list()'s segments as they
    # are (docs/kernel/history.md#f); Debian linux-source-5.10 (5.10.223) has __udpv4_gso_segment_list_csum
    # (3d6df63a5cbe)
    # but "is_ipv6 ? skb :"; Debian 6.1.192 and 6.12.95 also have __udpv6_gso_segment_list_csum (b936a9b8d4a5)
    ("5.10", 4, 9), ("5.10", 6, 9), ("5.10.223", 4, 0), ("5.10.223", 6, 9), ("5.11", 6, 9), ("6.1", 4, 0),
    ("6.1", 6, 0), ("6.12", 6, 0),
])
def test_fraglist_segments_keep_their_own_headers_without_the_nat_fix(kernel, ip, kept):
    s = gso_skb(segs=10, gso_size=1000, fraglist=True, ip=ip)
    r = segment.skb_gso_segment(s, fs("SG", "HW_CSUM", kernel=kernel), kernel=kernel, ip=ip)
    assert r.method == "skb_segment_list" and r.kept_headers == kept


def test_tcp_fraglist_segments_are_always_rewritten():
    # net/ipv4/tcp_offload.c __tcp4_gso_segment_list -> __tcpv4_gso_segment_list_csum (Debian 6.12.95)
    s = gso_skb(segs=10, gso_size=1000, fraglist=True, l4="tcp")
    assert segment.skb_gso_segment(s, fs("SG", "HW_CSUM", kernel="6.12"), kernel="6.12").kept_headers == 0


def test_udp_l4_uses_skb_segment_with_new_skbs():
    # net/ipv4/udp_offload.c __udp_gso_segment -> skb_segment (6.1): a new skb per gso_size, frags shared with SG
    s = gso_skb(segs=10, gso_size=1000, tail_size=300)
    r = segment.skb_gso_segment(s, fs("SG", "HW_CSUM"))
    assert r.method == "skb_segment" and r.skb_allocs == 10 and r.copied_bytes == 0
    assert [payload_len(x) for x in r.segs] == [1000] * 9 + [300]
    nosg = segment.skb_gso_segment(s, fs("HW_CSUM"))
    assert nosg.copied_bytes == 9300 and all(not x.frags for x in nosg.segs)


# net/ipv4/udp_offload.c __udp_gso_segment: Debian 5.10.223 :272-273 sends every FRAGLIST skb to
# __udp_gso_segment_list; Debian 6.1.192 :354-358 and 6.12.95 :359-363 do so only for an unmodified geometry
# (skb_pagelen - udphdr == gso_size, a1e40ac5b5e9, v6.12), else __skb_linearize + skb_segment. Mainline
# 5.10..5.13 predate a1e40ac5b5e9; ≈6.18 has it.
@pytest.mark.parametrize("kernel, method", [
    ("5.10", "skb_segment_list"), ("5.10.223", "skb_segment_list"), ("5.11", "skb_segment_list"),
    ("5.12", "skb_segment_list"), ("5.13", "skb_segment_list"), ("6.1", "linearize+skb_segment"),
    ("6.12", "linearize+skb_segment"), ("6.18", "linearize+skb_segment"),
])
def test_modified_fraglist_geometry_per_kernel(kernel, method):
    s = gso_skb(segs=4, gso_size=1000, fraglist=True)
    pulled = replace(s, headlen=s.headlen + 500, end_offset=s.end_offset + 500,
                     frag_list=[replace(s.frag_list[0], headlen=500)] + s.frag_list[1:])
    res = segment.skb_gso_segment(pulled, fs("SG", "HW_CSUM", kernel=kernel), kernel=kernel)
    assert res.method == method
    # the unmodified skb goes to skb_segment_list on every kernel
    assert segment.skb_gso_segment(s, fs("SG", "HW_CSUM", kernel=kernel), kernel=kernel).method == "skb_segment_list"


def test_skb_segment_splits_frag_list_gso_skb_when_only_fraglist_is_missing():
    # net/core/skbuff.c skb_segment (6.1): sg && csum && net_gso_ok && frag_list -> GSO skbs per frag_list member
    r = segment.skb_gso_segment(gso_skb(segs=34, gso_size=1000), fs("SG", "HW_CSUM", "GSO_UDP_L4"))
    assert r.method.startswith("skb_segment (split")
    assert [x.gso_segs for x in r.segs] == [17, 17]
    assert sum(payload_len(x) for x in r.segs) == 34000


# --- no byte lost, no byte invented ----------------------------------------------------------------------

geometry = st.tuples(st.integers(2, 64), st.integers(1, 1472), st.floats(0.01, 1.0))


def _skb(draw_geom, fraglist: bool, ip: int):
    segs, gso_size, tail = draw_geom
    l3l4 = (20 if ip == 4 else 40) + 8
    segs = min(segs, (65535 - l3l4) // gso_size)
    assume(segs >= 2)
    tail_size = max(1, int(gso_size * tail))
    return gso_skb(segs=segs, gso_size=gso_size, fraglist=fraglist, tail_size=tail_size, ip=ip), segs, tail_size


@settings(deadline=None)
@given(geom=geometry, fraglist=st.booleans(), sg=st.booleans(), kernel=st.sampled_from(KERNELS),
       ip=st.sampled_from([4, 6]))
def test_segmentation_conserves_payload(geom, fraglist, sg, kernel, ip):
    s, segs, tail = _skb(geom, fraglist, ip)
    feats = fs("HW_CSUM", *(["SG"] if sg else []), kernel=kernel)
    r = segment.skb_gso_segment(s, feats, kernel=kernel, ip=ip)
    assert sum(payload_len(x, ip=ip) for x in r.segs) == payload_len(s, ip=ip) == (segs - 1) * s.gso_size + tail
    assert all(payload_len(x, ip=ip) <= s.gso_size for x in r.segs)
    assert len(r.segs) == segs  # packets out == packets in after segmentation


@settings(deadline=None, max_examples=60)
@given(geom=geometry, fraglist=st.booleans(), kernel=st.sampled_from(KERNELS), ip=st.sampled_from([4, 6]),
       upper=st.sampled_from(router.UPPERS), nic=st.sampled_from(["router", "virtio_net", "ixgbe"]))
def test_send_conserves_payload(geom, fraglist, kernel, ip, upper, nic):
    s, segs, _ = _skb(geom, fraglist, ip)
    assume(s.gso_size + (20 if ip == 4 else 40) + 8 <= 1500)  # fits the MTU: nothing dropped on the way
    st_ = router.router_stack(kernel=kernel, upper=upper, nic=nic)
    egress, eth = router.route_device(st_, upper), st_.port
    tx = xmit.send(egress, s, port=eth, ip=ip, route=upper != "bridge_forward")
    assert not tx.dropped
    assert tx.payload_bytes == payload_len(s, ip=ip)
    assert tx.wire_packets == segs


@settings(deadline=None, max_examples=60)
@given(geom=geometry, fraglist=st.booleans(), kernel=st.sampled_from(KERNELS), ip=st.sampled_from([4, 6]),
       df=st.booleans(), mtu=st.integers(576, 1500))
def test_send_over_mtu_fragments_or_drops_whole_packets(geom, fraglist, kernel, ip, df, mtu):
    s, _segs, _ = _skb(geom, fraglist, ip)
    eth = netdev.Namespace(kernel).nic("eth0", driver="router")
    eth.set_mtu(mtu)
    tx = xmit.send(eth, s, ip=ip, df=df)
    # either every byte leaves (whole segments or fragments of them) or the skb is dropped, never a part
    assert tx.payload_bytes in (payload_len(s, ip=ip), 0)
    assert bool(tx.dropped) == (tx.payload_bytes == 0)
    assert all(p.frame_len - 14 <= mtu for p in tx.segments if p.fragment)


@settings(deadline=None, max_examples=60)
@given(segs=st.integers(1, 40), gso_size=st.integers(1, 1472), kernel=st.sampled_from(KERNELS),
       ip=st.sampled_from([4, 6]), udp_gro=st.booleans(), xdp=st.booleans(), gro=st.booleans(),
       fwd=st.booleans())
def test_udp_over_veth_conserves_payload(segs, gso_size, kernel, ip, udp_gro, xdp, gro, fwd):
    assume(gso_size + (20 if ip == 4 else 40) + 8 <= 1500)
    net = netdev.Namespace(kernel)
    a, b = net.veth("v0", "v1")
    b.ethtool_K({"rx-gro": gro})
    if fwd and kernel not in ("5.10", "5.11"):
        b.ethtool_K({"rx-udp-gro-forwarding": True})
    b.set_xdp(xdp)
    length = segs * gso_size
    t = udp.send_over_veth(a, length, gso_size=gso_size, udp_gro=udp_gro, ip=ip)
    assert t.send.error is None
    assert sum(t.send.datagrams) == length
    assert t.recv is not None and t.recv.bytes == length  # the socket reads every byte once
    assert t.recv.datagrams == len(t.send.datagrams)  # and as many datagrams as were sent


@settings(deadline=None, max_examples=60)
@given(length=st.integers(0, 70000), gso_size=st.integers(0, 3000), kernel=st.sampled_from(KERNELS),
       ip=st.sampled_from([4, 6]), mtu=st.integers(1280, 9000))
def test_udp_sendmsg_datagrams_add_up(length, gso_size, kernel, ip, mtu):
    eth = netdev.Namespace(kernel).nic("eth0", driver="router")
    eth.set_mtu(mtu)
    r = udp.udp_sendmsg(eth, length, gso_size=gso_size, ip=ip)
    if r.error is None:
        assert sum(r.datagrams) == length
        assert r.tx is not None and r.tx.payload_bytes == length  # wire payload, fragments included
    else:
        assert r.tx is None and r.datagrams == ()


@settings(deadline=None, max_examples=40)
@given(kernel=st.sampled_from(KERNELS), upper=st.sampled_from(router.UPPERS), gro=st.sampled_from(router.GRO_MODES),
       ip=st.sampled_from([4, 6]), segs=st.integers(1, 44))
def test_router_conserves_packets_and_bytes(kernel, upper, gro, ip, segs):
    r = router.router_scenario(kernel=kernel, upper=upper, gro=gro, ip=ip, segs=segs)
    assert r.wire_packets == segs
    assert r.payload_bytes == segs * r.gso_size


@pytest.mark.parametrize("udp_gro", [False, True])
def test_whole_gso_skb_through_veth_gro(udp_gro):
    # running 6.18 kernel (live.veth_gro_lab, "gro on, rx-udp-gro-forwarding on"): the UDP_SEGMENT skb of
    # 10 x 1400 crosses the veth whole, goes through NAPI and GRO untouched; a UDP_GRO socket reads it in one
    # recvmsg with cmsg gso_size 1400, a plain socket reads 10 datagrams
    a, b = netdev.Namespace("6.18").veth("v0", "v1")
    b.ethtool_K({"rx-gro": True, "rx-udp-gro-forwarding": True})
    t = udp.send_over_veth(a, 14000, gso_size=1400, udp_gro=udp_gro)
    assert t.rx is not None and t.rx.paths == ("napi",)
    assert t.recv is not None
    assert t.recv.gso_sizes == ((1400,) if udp_gro else (None,) * 10)
    assert t.recv.sizes == ((14000,) if udp_gro else (1400,) * 10)


@settings(deadline=None, max_examples=40)
@given(geom=geometry, fraglist=st.booleans(), kernel=st.sampled_from(KERNELS),
       underlay=st.sampled_from(["veth", "virtio_net", "router"]))
def test_send_through_vxlan_conserves_payload(geom, fraglist, kernel, underlay):
    s, segs, _ = _skb(geom, fraglist, 4)
    assume(s.gso_size + 28 <= 1450)  # the vxlan MTU over a 1500-byte underlay
    net = netdev.Namespace(kernel)
    low = net.veth("u0", "u1")[0] if underlay == "veth" else net.nic("u0", driver=underlay)
    tx = xmit.send(net.vxlan("vx0", vni=1, underlay=low), s)
    assert tx.payload_bytes == payload_len(s)
    if tx.peer_rx is not None:  # a veth takes skbs (GSO ones whole): count the packets they carry
        assert sum(x.gso_segs if x.is_gso() else 1 for x in tx.skbs_to_driver) == segs
    else:
        assert tx.wire_packets == segs


# --- truesize, the skb's protocol and its field checks ---------------------------------------


@pytest.mark.parametrize("fraglist", [False, True])
def test_gso_skb_truesize_charges_every_byte(fraglist):
    # include/linux/skbuff.h: truesize covers the buffers behind every byte; a 2300 B frame fills two half-page
    # buffers (skb_add_rx_frag charges each), a build_skb member SKB_TRUESIZE of its buffer (__build_skb_around)
    s = gso_skb(segs=2, gso_size=2300, fraglist=fraglist)
    assert s.truesize >= s.len == 14 + 20 + 8 + 4600
    assert all(m.truesize >= m.len for m in s.walk())


def test_skb_segment_truesize_is_its_head_plus_the_payload():
    # net/core/skbuff.c skb_segment (6.1): nskb = __alloc_skb(hsize + doffset + headroom): SKB_TRUESIZE of the
    # kmalloc'ed head (64 + 42 B -> SKB_HEAD_ALIGN -> kmalloc-512 on x86_64 6.1), then truesize += data_len
    from vnetlab import profiles, rx
    k, a = profiles.kernel("6.1"), profiles.arch("x86_64", "6.1")
    head = rx.alloc_skb_head(64 + 42, k, a)
    res = segment.skb_gso_segment(gso_skb(segs=4, gso_size=1000), fs("SG", "HW_CSUM"), kernel=k, arch=a)
    assert [s.truesize for s in res.segs] == [head.truesize + 1000] * 4
    linear = segment.skb_gso_segment(gso_skb(segs=4, gso_size=1000), fs("HW_CSUM"), kernel=k, arch=a)
    assert all(s.truesize == rx.alloc_skb_head(64 + 42 + 1000, k, a).truesize for s in linear.segs)


def test_tcp_segments_stay_tcp():
    # skb_segment -> __copy_skb_header: a TCP segment is TCP whether or not it is still GSO
    res = segment.skb_gso_segment(gso_skb(l4="tcp", segs=3, gso_size=500), fs("SG", "HW_CSUM"))
    assert [segment.l4_of(s) for s in res.segs] == ["tcp"] * 3
    assert [segment.payload_len(s) for s in res.segs] == [500] * 3


def test_skb_field_checks():
    from vnetlab.skb import Frag, Page, Skb
    with pytest.raises(ValueError, match="unsigned"):
        Skb(headlen=10, truesize=100, head_frag=False, end_offset=100, frags=[Frag(Page(1), 0, -5)])
    with pytest.raises(ValueError, match="truesize 10 < len 100"):
        Skb(headlen=100, truesize=10, head_frag=False, end_offset=100)
    s = Skb(headlen=10, truesize=100, head_frag=False, end_offset=100)
    s.frag_list.append(s)
    with pytest.raises(ValueError, match="frag_list containing itself"):
        s.validate()
    with pytest.raises(ValueError, match="l4"):
        Skb(headlen=10, truesize=100, head_frag=False, end_offset=100, l4="sctp")
    with pytest.raises(ValueError, match="disagrees"):
        Skb(headlen=10, truesize=100, head_frag=False, end_offset=100, l4="udp", gso_type={"TCPV4"}, gso_size=1)
    with pytest.raises(ValueError, match="does not say its L4 protocol"):
        segment.l4_of(Skb(headlen=10, truesize=100, head_frag=False, end_offset=100))


@pytest.mark.parametrize("kw", [{"inband_vlan_tags": -1}, {"outer": 1000}, {"link_hlen": -1}])
def test_skb_gso_segment_refuses_impossible_geometry(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        segment.skb_gso_segment(gso_skb(segs=2, gso_size=100), fs("SG"), **kw)


def test_tcp_fraglist_gso_skb_holds_at_most_64_packets():
    # net/ipv4/tcp_offload.c tcp_gro_receive (6.10+, mirror 6.18): a fraglist flow completes at count >= 64
    assert gso_skb(l4="tcp", segs=64, gso_size=100, fraglist=True).gso_segs == 64
    with pytest.raises(ValueError, match="segs must be an int in 1..64"):
        gso_skb(l4="tcp", segs=65, gso_size=100, fraglist=True)


def test_an_skb_shorter_than_its_headers_is_refused_where_it_enters():
    # skb_mac_gso_segment / inet_gso_segment pskb_may_pull the link, IP and UDP headers; no path hands
    # skb_gso_segment or dev_queue_xmit an skb that does not hold them. Before, segmenting gave no segment (the
    # bytes were lost) and send put a 20-byte frame with a payload of -22 bytes on the wire.
    from vnetlab.errors import ArgumentError
    from vnetlab.skb import Skb

    short = Skb(headlen=20, truesize=512, head_frag=False, end_offset=256, l4="udp", gso_size=100,
                gso_type={"UDP_L4"}, gso_segs=2)
    fs = F.FeatureSet.from_names(["SG"], kernel="6.1")
    with pytest.raises(ArgumentError, match="shorter than its own headers"):
        segment.skb_gso_segment(short, fs, kernel="6.1")
    net = netdev.Namespace(kernel="6.1")
    v0, _ = net.veth("v0", "v1")
    with pytest.raises(ArgumentError, match="shorter than its own headers"):
        xmit.send(v0, short)
