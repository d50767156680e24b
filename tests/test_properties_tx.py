"""Property tests of the transmit models: every skb-returning transmit API keeps the bytes and the
packets it was given and returns skbs that keep the sk_buff invariants, over device stacks with VLAN, vxlan,
veth, bridge, bond, IP fragmentation, TCP and UDP, IPv4 and IPv6, and several kernels.

The invariants are those of include/linux/skbuff.h: len == skb_headlen + data_len (data_len = the frags and
every frag_list member), truesize >= len (truesize charges every byte the skb holds), nr_frags <=
MAX_SKB_FRAGS of that kernel and architecture (vnetlab.profiles.arch), the linear part inside the head
(headroom + headlen <= skb_end_offset, else skb_over_panic). Conservation: the L4 payload bytes that leave
(or that the peer's stack hands up) add up to what was sent, and the datagrams (segments, or IP datagrams
counted once however many fragments they left as) are the ones the GSO skb carried.

Hypothesis runs derandomized with a bounded number of examples and no example database, so CI sees the same
examples on every run (the file runs in well under a minute on a quiet core).
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from vnetlab import netdev, profiles, segment, udp, xmit
from vnetlab.features import FeatureSet
from vnetlab.headers import IP_HLEN
from vnetlab.skb import L4_HLEN, Skb

KERNELS = ("5.10", "5.11", "5.13", "6.1", "6.12", "6.18")
ARCHES = ("x86_64", "arm64-64k", "mips32")
PROPS = settings(max_examples=300, derandomize=True, database=None, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])
STACKS = ("nic", "vlan/nic", "vlan/veth", "veth", "vxlan/veth", "vxlan/nic", "bridge/veth", "bond/nic",
          "macvlan/nic", "vlan/vlan/nic")


def check_skb(skb: Skb, kernel: str, arch: str = "x86_64") -> None:
    """The sk_buff invariants, recomputed from the parts (not from the derived properties)."""
    most = profiles.arch(arch, kernel).max_skb_frags
    for part in skb.walk():
        assert part.headroom + part.headlen <= part.end_offset, part.describe()
        assert part.nr_frags <= most, part.describe()
        assert all(f.size >= 0 for f in part.frags)
    data = sum(f.size for f in skb.frags) + sum(m.len for m in skb.frag_list)
    assert skb.len == skb.headlen + data == skb.headlen + skb.data_len
    assert skb.truesize >= skb.len, skb.describe()


def build(stack: str, kernel: str, *, inband_tag: bool = False, vxlan_ip: int = 4) -> netdev.Device:
    """The top device of one of STACKS, in a fresh namespace of ``kernel``."""
    ns = netdev.Namespace(kernel)
    parts = stack.split("/")
    bottom = parts[-1]
    if bottom == "veth":
        low: netdev.Device = ns.veth("v0", "v1")[0]
    else:
        low = ns.nic("eth0", driver="router")
    if inband_tag and "HW_VLAN_CTAG_TX" in low.hw_features:
        low.ethtool_K({"tx-vlan-hw-insert": False})  # validate_xmit_vlan puts the tag in-band
    dev = low
    for i, kind in enumerate(reversed(parts[:-1])):
        if kind == "vlan":
            dev = ns.vlan(f"vl{i}", lower=dev, vid=10 + i)
        elif kind == "vxlan":
            dev = ns.vxlan(f"vx{i}", vni=42, underlay=dev, ip=vxlan_ip)
        elif kind == "macvlan":
            dev = ns.macvlan(f"mv{i}", lower=dev)
        elif kind in ("bridge", "bond"):
            master = ns.bridge(f"br{i}") if kind == "bridge" else ns.bond(f"bd{i}")
            ns.set_master(dev, master)
            dev = master
    return dev


@st.composite
def gso_skbs(draw: st.DrawFn) -> tuple[Skb, dict]:
    l4 = draw(st.sampled_from(["udp", "tcp"]))
    ip = draw(st.sampled_from([4, 6]))
    kernel = draw(st.sampled_from(KERNELS))
    arch = draw(st.sampled_from(ARCHES))
    # TCP fraglist GRO (and so TCP fraglist GSO skbs) exists from 6.10 (net/ipv4/tcp_offload.c tcp_gro_receive)
    fraglist = draw(st.booleans()) if l4 == "udp" or kernel in ("6.12", "6.18") else False
    gso_size = draw(st.integers(1, 3000))
    hdr = IP_HLEN[ip] + L4_HLEN[l4]
    most = min((65535 - hdr) // gso_size, 64 if l4 == "udp" or fraglist else 400)
    segs = draw(st.integers(1, max(1, most)))
    tail = draw(st.integers(1, gso_size))
    if hdr + (segs - 1) * gso_size + tail >= 65536:
        segs = 1
    skb = segment.gso_skb(l4=l4, segs=segs, gso_size=gso_size, tail_size=tail, fraglist=fraglist, ip=ip,
                          kernel=kernel, arch=arch)
    return skb, {"l4": l4, "ip": ip, "kernel": kernel, "arch": arch, "segs": segs,
                 "payload": (segs - 1) * gso_size + tail}


@PROPS
@given(gso_skbs())
def test_gso_skb_keeps_the_invariants(case):
    skb, c = case
    check_skb(skb, c["kernel"], c["arch"])
    assert skb.payload_len(ip=c["ip"]) == c["payload"]
    assert skb.segments(skb.header_len(ip=c["ip"])) == c["segs"]
    assert skb.transport == c["l4"]


@PROPS
@given(gso_skbs(), st.sampled_from([(), ("SG",), ("SG", "HW_CSUM"), ("HW_CSUM",), ("SG", "HW_CSUM", "FRAGLIST")]))
def test_skb_gso_segment_conserves_bytes_and_segments(case, names):
    skb, c = case
    if not skb.is_gso():
        return
    feats = FeatureSet.from_names(names, c["kernel"])
    res = segment.skb_gso_segment(skb, feats, kernel=c["kernel"], ip=c["ip"], arch=c["arch"])
    for s in res.segs:
        check_skb(s, c["kernel"], c["arch"])
        assert s.transport == c["l4"]
    assert sum(s.payload_len(ip=c["ip"]) for s in res.segs) == c["payload"]
    assert sum(s.segments(s.header_len(ip=c["ip"])) for s in res.segs) == c["segs"]


@PROPS
@given(gso_skbs(), st.sampled_from(STACKS), st.booleans(), st.booleans(), st.sampled_from([4, 6]),
       st.sampled_from([None, 1280, 1400, 9000]))
def test_send_conserves_bytes_and_datagrams(case, stack, df, inband_tag, vxlan_ip, mtu):
    skb, c = case
    top = build(stack, c["kernel"], inband_tag=inband_tag, vxlan_ip=vxlan_ip)
    if mtu is not None and mtu <= top.mtu_limit():
        top.set_mtu(mtu)
    r = xmit.send(top, skb, ip=c["ip"], df=df, arch=c["arch"])
    for s in r.skbs_to_driver:
        check_skb(s, c["kernel"], c["arch"])
    if r.dropped:
        # the drops a kernel makes here: the IP layer's MTU rule (DF, or IPv6, and a packet over the MTU; all or
        # nothing) or is_skb_forwardable at a veth peer or bridge port with a smaller MTU (a software segment)
        mtu_rule = r.hops[0].action == "dropped" and r.wire_packets == 0
        assert mtu_rule or all("is_skb_forwardable" in why for _, why in r.dropped), r.dropped
        return
    assert r.payload_bytes == c["payload"]
    whole = [p for p in r.segments if not p.fragment]
    firsts = [s for s in r.skbs_to_driver if s.ipfrag == "first"]
    carried = sum(s.segments(s.header_len(ip=c["ip"])) for s in r.skbs_to_driver if not s.ipfrag)
    via_driver = len(whole) if r.peer_rx is None else carried
    assert via_driver + len(firsts) == c["segs"]
    if r.peer_rx is not None:
        # the peer's stack gets it all back: IP datagrams reassembled, tags and tunnel headers stripped
        # where the receive path does so (eth_type_trans, skb_vlan_untag; vxlan stays encapsulated on v1)
        delivered = r.peer_rx.delivered
        for s in delivered:
            check_skb(s, c["kernel"])
        got = sum(s.payload_len(ip=c["ip"], link_hlen=0) for s in delivered)
        assert got == c["payload"]


@PROPS
@given(st.sampled_from(KERNELS), st.integers(0, 65507), st.sampled_from([0, 1, 100, 1200, 1400, 1472]),
       st.sampled_from([4, 6]), st.booleans(), st.booleans())
def test_udp_sendmsg_and_veth_conserve_the_datagrams(kernel, length, gso_size, ip, udp_gro, dontfrag):
    ns = netdev.Namespace(kernel)
    v0, v1 = ns.veth("v0", "v1")
    v1.ethtool_K({"rx-gro": True})
    t = udp.send_over_veth(v0, length, gso_size=gso_size, ip=ip, udp_gro=udp_gro, dontfrag=dontfrag)
    s = t.send
    if s.error is not None:
        return
    assert sum(s.datagrams) == length
    assert s.skb is not None and s.tx is not None
    check_skb(s.skb, kernel)
    for skb in s.tx.skbs_to_driver:
        check_skb(skb, kernel)
    assert s.tx.payload_bytes == length
    if t.recv is not None:
        assert t.recv.bytes == length
        assert t.recv.datagrams == len(s.datagrams) or (gso_size == 0 and t.recv.datagrams == 1)
        for skb in t.rx.delivered:
            check_skb(skb, kernel)


@PROPS
@given(st.sampled_from(("5.13", "6.1", "6.12", "6.18")), st.integers(1, 14000), st.sampled_from([0, 1300, 1400]),
       st.sampled_from([4, 6]), st.booleans())
def test_send_over_vxlan_conserves_the_datagrams(kernel, length, gso_size, ip, udp_gro):
    net = netdev.Namespace(kernel)
    v0, v1 = net.veth("v0", "v1")
    vx0, vx1 = net.vxlan("vx0", vni=42, underlay=v0), net.vxlan("vx1", vni=42, underlay=v1)
    t = udp.send_over_vxlan(vx0, vx1, length, gso_size=gso_size, ip=ip, udp_gro=udp_gro)
    if t.send.error is not None or t.recv is None:
        return
    assert t.recv.bytes == length
    assert t.vxlan is not None
    for skb in (*t.vxlan.decapsulated, *t.vxlan.delivered):
        check_skb(skb, kernel)
        assert not skb.encapsulation


@PROPS
@given(gso_skbs(), st.booleans(), st.booleans())
def test_veth_xmit_hands_up_every_byte(case, gro, gro_list):
    skb, c = case
    ns = netdev.Namespace(c["kernel"])
    a, b = ns.veth("v0", "v1")
    b.ethtool_K({"rx-gro": gro})
    if gro and "rx-gro-list" in b.ethtool_k():
        b.ethtool_K({"rx-gro-list": gro_list})
    rx = xmit.veth_xmit(a, [skb], ip=c["ip"])
    if rx.dropped:
        return
    assert sum(s.payload_len(ip=c["ip"], link_hlen=0) for s in rx.delivered) == c["payload"]
    assert sum(s.segments(s.header_len(ip=c["ip"], link_hlen=0)) for s in rx.delivered) == c["segs"]
    for s in rx.delivered:
        check_skb(s, c["kernel"], c["arch"])


@PROPS
@given(st.sampled_from(("5.10", "5.13", "6.1", "6.12", "6.18", "7.3.4")), st.integers(1, 14000),
       st.sampled_from([0, 1300, 1400]), st.sampled_from([4, 6]), st.booleans(),
       st.tuples(st.sampled_from([42, 43]), st.sampled_from([4, 6])), st.tuples(st.sampled_from([42, 43]),
                                                                              st.sampled_from([4, 6])),
       st.booleans())
def test_vxlan_ends_deliver_every_byte_or_count_its_drop(kernel, length, gso_size, ip, udp_gro, end0, end1, xdp):
    """Matched ends (same VNI, same outer IP family) deliver exactly what was sent; mismatched ends deliver nothing
    and count every outer skb the underlay handed up as dropped (drivers/net/vxlan/vxlan_core.c vxlan_rcv:
    vxlan_vs_find_vni; vxlan_socket_create: one socket per family, IPv6 v6only). Never a byte invented or lost."""
    net = netdev.Namespace(kernel)
    v0, v1 = net.veth("v0", "v1")
    vx0 = net.vxlan("vx0", vni=end0[0], underlay=v0, ip=end0[1])
    vx1 = net.vxlan("vx1", vni=end1[0], underlay=v1, ip=end1[1])
    if xdp:
        v1.set_xdp(True)
    t = udp.send_over_vxlan(vx0, vx1, length, gso_size=gso_size, ip=ip, udp_gro=udp_gro)
    if t.send.error is not None or t.recv is None:
        return
    assert t.vxlan is not None and t.rx is not None
    if end0 == end1:
        assert t.recv.bytes == length and not t.vxlan.dropped
    else:
        assert t.recv.bytes == 0 and len(t.vxlan.dropped) == len(t.rx.delivered) > 0
        assert all(reason for _, reason in t.vxlan.dropped)


_LAB_RULES = {  # rules whose words the receive and transmit paths branch on (data/kernels.toml's own values)
    "udp_gro_skips_local_encap": [False, True], "veth_napi_for_gro": [False, True],
    "udp_gro_accepts_fraglist": [False, True], "vxlan_fraglist": [False, True], "udp_max_segments": [64, 128],
}


@PROPS
@given(st.sampled_from(("5.10.223", "6.1", "6.18")), st.dictionaries(st.sampled_from(sorted(_LAB_RULES)),
                                                                     st.integers(0, 1), max_size=3),
       st.integers(1, 14000), st.sampled_from([0, 1300, 1400]), st.booleans(), st.booleans(), st.booleans())
def test_kernels_built_with_overrides_conserve_bytes_over_vxlan(base, picks, length, gso_size, udp_gro, xdp, match):
    """A kernel made with Kernel.with_overrides (as the lab's one-patch builds are) is a kernel like any other:
    over a vxlan pair every byte sent arrives once (matched ends) or is counted as dropped (another VNI)."""
    overrides = {r: (_LAB_RULES[r][i], "source: this property test") for r, i in picks.items()}
    k = profiles.kernel(base).with_overrides("prop", overrides) if overrides else profiles.kernel(base)
    net = netdev.Namespace(k)
    v0, v1 = net.veth("v0", "v1")
    vx0 = net.vxlan("vx0", vni=42, underlay=v0)
    vx1 = net.vxlan("vx1", vni=42 if match else 43, underlay=v1)
    if xdp:
        v1.set_xdp(True)
    t = udp.send_over_vxlan(vx0, vx1, length, gso_size=gso_size, udp_gro=udp_gro)
    if t.send.error is not None or t.recv is None:
        return
    assert t.vxlan is not None and t.rx is not None
    assert t.recv.bytes == (length if match else 0)
    assert match or len(t.vxlan.dropped) == len(t.rx.delivered)


def _subset_sums(sizes: tuple[int, ...]) -> set[int]:
    sums = {0}
    for s in sizes:
        sums |= {x + s for x in sums}
    return sums


@PROPS
@given(st.sampled_from(("5.10", "5.13", "6.1", "6.12", "6.18")), st.integers(1, 14000),
       st.sampled_from([0, 1200, 1300, 1400]), st.sampled_from([4, 6]), st.sampled_from([4, 6]),
       st.sampled_from(["unset", "set", "inherit"]), st.sampled_from([576, 1000, 1280, 1400, 1449, 1500]),
       st.booleans())
def test_send_over_vxlan_through_a_lowered_underlay_loses_only_whole_datagrams(kernel, length, gso_size, ip, outer,
                                                                                df, underlay_mtu, udp_gro):
    """The underlay's MTU lowered under a vxlan device made at the default one (docs/kernel/gso-features.md#d8):
    outer packets that do not fit are fragmented (IPv4 outer without DF) and every byte arrives, or they are
    freed with an ICMP each (DF, or any IPv6 outer packet) and only whole datagrams go missing: what arrives
    is the sum of some of the datagrams sent, never a piece of one, and every loss has its drop and its ICMP."""
    net = netdev.Namespace(kernel)
    v0, v1 = net.veth("v0", "v1")
    vx0, vx1 = net.vxlan("vx0", vni=42, underlay=v0, ip=outer), net.vxlan("vx1", vni=42, underlay=v1, ip=outer)
    vx0.set_df(df)
    v0.set_mtu(underlay_mtu)
    v1.set_mtu(underlay_mtu)
    t = udp.send_over_vxlan(vx0, vx1, length, gso_size=gso_size, ip=ip, udp_gro=udp_gro)
    if t.send.error is not None:
        event("refused by udp_sendmsg")
        return
    tx = t.send.tx
    assert tx is not None
    for skb in tx.skbs_to_driver:
        check_skb(skb, kernel)
    event("dropped for DF / IPv6" if tx.dropped else "outer fragments" if any(
        isinstance(s, xmit.OuterFragment) for s in tx.skbs_to_driver) else "fits")
    delivered = t.recv.bytes if t.recv is not None else 0
    if outer == 6 and underlay_mtu < xmit.IPV6_MIN_MTU:
        # addrconf takes IPv6 off an underlay below IPV6_MIN_MTU: no route for the outer header at all
        assert delivered == 0 and tx.dropped and all("no IPv6 route" in why for _, why in tx.dropped)
        return
    tunnel_drops = [why for _, why in tx.dropped if "with DF" in why]
    assert len(tunnel_drops) == len(tx.dropped)  # nothing else on this path drops
    assert len(tx.icmp) == len(tx.dropped)
    if not tx.dropped:
        assert delivered == length
        if t.vxlan is not None:
            for skb in (*t.vxlan.decapsulated, *t.vxlan.delivered):
                check_skb(skb, kernel)
                assert not skb.encapsulation
    else:
        # __ip_make_skb under the default IP_PMTUDISC_WANT: DF on an IPv4 datagram that fits vx0's route
        inner_df = ip == 4 and t.send.skb is not None and t.send.skb.network_len() <= vx0.mtu
        assert outer == 6 or vx0.outer_df(ip, inner_df)
        assert delivered < length and delivered in _subset_sums(t.send.datagrams)
    if tx.pmtu is not None:  # skb_tunnel_check_pmtu lowered the inner route: it did not fit vx0's tunnel
        assert tx.pmtu <= underlay_mtu - vx0.headroom() or tx.pmtu == xmit.IP_RT_MIN_PMTU
