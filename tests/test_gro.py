"""GRO model tests: each number comes from the kernel's skb_gro_receive / tcp_gro_receive / udp_gro_receive."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vnetlab
from vnetlab import gro, rx


def flow(case, n, payload, kernel=None, l4="tcp", **kw):
    """n packets in head case ``case`` (kernel-facts C.3) as that kernel's receive path builds them."""
    return gro.head_case_flow(case, payload, n, kernel=kernel, l4=l4, **kw)


def built(payload, l4="tcp", kernel="6.1", buf_len=2048):
    """One packet in a hole-extended 2048-byte buffer: build_skb for every frame up to 1716 (kernel-facts A.5)."""
    return rx.receive(payload, l4=l4, kernel=kernel, buf_len=buf_len).skb


# kernel-facts C.3 with MAX_SKB_FRAGS 17: packets in the first sk_buff of a GRO skb.
@pytest.mark.parametrize(
    "case, kernel, expected",
    [
        ("build_skb", "6.1", 18),  # case 2: p linear + 17 stolen heads
        ("build_skb", "5.13", 18),
        ("eth_hlen", "6.1", 17),  # case 1: p has 1 frag + 16
        ("eth_hlen", "5.12", 17),
        ("pagefrag128", "5.10", 9),  # case 2 with 2 slots per packet: 1 + 8*2 = 17
        ("kmalloc128", "5.11", 1),  # case 3 for every packet
    ],
)
def test_packets_in_first_skb(case, kernel, expected):
    # kernel-facts C.3 (MSS 1448): net/core/gro.c skb_gro_receive cases 1-3 with MAX_SKB_FRAGS 17.
    assert vnetlab.arch("x86_64", kernel).max_skb_frags == 17
    trace = gro.aggregate_trace(flow(case, 40, 1448, kernel), kernel=kernel)
    assert trace.packets_per_skb() == [40]
    assert trace.packets_in_first_skb(0) == expected
    skb = trace.skbs[0]
    assert skb.nr_frags <= 17 and all(m.nr_frags <= 17 for m in skb.frag_list)


def test_kmalloc_heads_chain_every_packet_on_frag_list():
    skb = gro.aggregate(flow("kmalloc128", 10, 1000), kernel="5.11")[0]
    assert len(skb.frag_list) == 9
    assert all(m.nr_frags == 1 and m.headlen == 128 - 14 - 52 for m in skb.frag_list)


def test_build_skb_second_sk_buff_also_takes_18():
    trace = gro.aggregate_trace(flow("build_skb", 40, 1000, "6.1"), kernel="6.1")
    in_second = sum(1 for e in trace.events if e.skb_index == 1)
    assert in_second == 18


@pytest.mark.parametrize("case", ["build_skb", "eth_hlen"])
def test_64k_cap_tcp_1448(case):
    # net/core/gro.c skb_gro_receive: p->len (1500) + 1448*k must stay < 65536 -> 45 segments.
    out = gro.aggregate(flow(case, 100, 1448, "6.1"), kernel="6.1")
    assert [s.gso_segs for s in out] == [45, 45, 10]
    assert out[0].len == 52 + 45 * 1448 < 65536
    assert out[0].gso_size == 1448 and out[0].gso_type == {"TCPV4"}


def test_gro_max_size_smaller_cap_and_version_check():
    out = gro.aggregate(flow("eth_hlen", 30, 1448, "6.1"), kernel="6.1", gro_max_size=16384)
    assert out[0].gso_segs == 11  # 1500 + 1448*10 = 15980 < 16384
    with pytest.raises(ValueError, match="gro_max_size"):
        gro.aggregate(gro.receive_flow(1448, 3, kernel="5.10"), kernel="5.10", gro_max_size=16384)
    # 6.1: above 65536 only IPv6 TCP (BIG TCP); IPv4 stays at the legacy cap.
    out4 = gro.aggregate(flow("eth_hlen", 100, 1448, "6.1"), kernel="6.1", gro_max_size=185000)
    assert out4[0].gso_segs == 45
    skbs6 = flow("eth_hlen", 100, 1428, "6.1", ip=6)
    out6 = gro.aggregate(skbs6, kernel="6.1", gro_max_size=185000, ip=6)
    assert out6[0].gso_segs == 100 and out6[0].gso_type == {"TCPV6"}


@pytest.mark.parametrize("kernel", ["5.10", "5.11", "5.12", "5.13", "6.1", "6.18"])
def test_no_udp_aggregation_without_udp_gro_fraglist_or_fwd(kernel):
    out = gro.aggregate(flow("build_skb", 20, 1000, "6.1", l4="udp"), l4="udp", kernel=kernel)
    assert len(out) == 20 and all(s.gso_segs == 0 and not s.gso_type for s in out)


def test_udp_gro_socket_caps_at_64_segments():
    out = gro.aggregate(flow("build_skb", 200, 1000, "6.1", l4="udp"), l4="udp", udp_gro=True)
    assert [s.gso_segs for s in out] == [64, 64, 64, 8]
    assert out[0].gso_type == {"UDP_L4"} and out[0].gso_size == 1000


def test_udp_fraglist_chains_every_packet_whole():
    out = gro.aggregate(flow("build_skb", 10, 1000, "6.1", l4="udp"), l4="udp", features={"GRO", "GRO_FRAGLIST"})
    skb = out[0]
    assert skb.gso_type == {"UDP_L4", "FRAGLIST"} and skb.gso_segs == 10
    assert len(skb.frag_list) == 9 and skb.nr_frags == 0
    assert all(m.len == 1000 for m in skb.frag_list)


def test_udp_is_flist_rule_and_encap_key():
    def skbs():
        return flow("build_skb", 10, 1000, "6.1", l4="udp")

    feats = {"GRO", "GRO_FRAGLIST"}
    # sk ? !udp_gro : 1 -> a UDP_GRO socket turns fraglist off: plain UDP_L4.
    out = gro.aggregate(skbs(), l4="udp", udp_gro=True, features=feats)
    assert out[0].gso_type == {"UDP_L4"}
    # local socket without UDP_GRO but the key on: is_flist = 1 (no UDP_GRO on the socket).
    out = gro.aggregate(skbs(), l4="udp", features=feats, udp_encap_needed=True)
    assert out[0].gso_type == {"UDP_L4", "FRAGLIST"}
    # GRO_UDP_FWD applies only when sk is NULL: key off -> NULL even for local traffic (facts C.4).
    fwd = {"GRO", "GRO_UDP_FWD"}
    assert gro.aggregate(skbs(), l4="udp", features=fwd)[0].gso_segs == 10
    assert len(gro.aggregate(skbs(), l4="udp", features=fwd, udp_encap_needed=True)) == 10
    with pytest.raises(ValueError, match="GRO_UDP_FWD"):
        gro.aggregate(skbs(), l4="udp", features=fwd, kernel="5.11")


def test_udp_longer_not_merged_shorter_merged_then_flush():
    sizes = [1000, 1000, 1200, 1200, 800, 1200]
    skbs = [built(n, l4="udp") for n in sizes]
    out = gro.aggregate(skbs, l4="udp", udp_gro=True)
    assert [gro.gro_segs(s) for s in out] == [2, 3, 1]
    assert out[1].len == 28 + 1200 + 1200 + 800


def test_tcp_flush_rules():
    sizes = [1000, 1000, 600, 1000, 1200, 1000]
    out = gro.aggregate([built(n) for n in sizes])
    # 600 < mss merges then flushes; 1200 > mss is not merged and starts a new skb.
    assert [gro.gro_segs(s) for s in out] == [3, 1, 2]
    flags = [None, None, {"ACK", "PSH"}, None, {"ACK", "SYN"}, None, None]
    out = gro.aggregate([built(1000) for _ in flags], tcp_flags=flags)
    # PSH merges then flushes; SYN is not merged and goes up alone.
    assert [gro.gro_segs(s) for s in out] == [3, 1, 1, 2]
    assert len(gro.aggregate([built(0) for _ in range(3)])) == 3


def test_napi_budget_flushes_at_poll_end():
    out = gro.aggregate(flow("build_skb", 100, 1448, "6.1"), napi_budget=50)
    assert [gro.gro_segs(s) for s in out] == [45, 5, 45, 5]  # 64 KiB cap at 45, napi_complete_done at 50


def test_gro_feature_off_means_no_aggregation():
    out = gro.aggregate(flow("build_skb", 5, 1000, "6.1"), features=frozenset({"SG"}))
    assert len(out) == 5


def test_6_18_tcp_fraglist_for_forwarded_flow():
    feats = {"GRO", "GRO_FRAGLIST"}
    out = gro.aggregate(flow("build_skb", 100, 1000, "6.18"), kernel="6.18", features=feats, local_socket=False)
    assert out[0].gso_type == {"TCPV4", "FRAGLIST"} and out[0].gso_segs == 64
    out = gro.aggregate(flow("build_skb", 10, 1000, "6.1"), kernel="6.1", features=feats, local_socket=False)
    assert out[0].gso_type == {"TCPV4"}


def test_truesize_bookkeeping_per_case():
    a = vnetlab.arch("x86_64", "6.1")
    skbs = flow("build_skb", 2, 1000, "6.1")
    t0, t1 = skbs[0].truesize, skbs[1].truesize
    out = gro.aggregate(skbs)
    # case 2: p gains skb->truesize - SKB_DATA_ALIGN(sizeof(struct sk_buff)).
    assert out[0].truesize == t0 + t1 - a.skb_data_align(a.sk_buff_size)
    skbs = flow("eth_hlen", 2, 1448, "6.1")
    t0, t1, end = skbs[0].truesize, skbs[1].truesize, skbs[1].end_offset
    trace = gro.aggregate_trace(skbs)
    # case 1: p gains skb->truesize - SKB_TRUESIZE(skb_end_offset(skb)).
    assert trace.skbs[0].truesize == t0 + t1 - a.skb_truesize(end)
    assert trace.events[1].consumed_truesize == a.skb_truesize(end)
    s5 = flow("eth_hlen", 2, 1448, "5.12")
    t5 = gro.aggregate_trace(s5, kernel="5.12")
    # net/core/skbuff.c skb_gro_receive (5.10 tree) case 1: skb->truesize -= skb->data_len, data_len = 52 + 1448.
    assert t5.events[1].consumed_truesize == s5[1].truesize - 1448 - 52


@pytest.mark.parametrize(
    "kwargs, name",
    [({"l4": "sctp"}, "l4"), ({"ip": 5}, "ip"), ({"tcp_hdr_len": 18}, "tcp_hdr_len"),
     ({"gro_max_size": -1}, "gro_max_size"), ({"napi_budget": 0}, "napi_budget"),
     ({"kernel": "4.19"}, "kernel"), ({"tcp_flags": [{"BOGUS"}]}, "tcp_flags")],
)
def test_bad_input_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gro.aggregate(flow("build_skb", 1, 1000, "6.1"), **kwargs)


def test_head_case_flow_checks():
    with pytest.raises(ValueError, match="case='jumbo'"):
        gro.head_case_flow("jumbo", 100, 1)
    # page_to_skb (6.1): a 1066-byte frame in a 1536-byte buffer has tailroom 458 >= 320, so build_skb, not (c).
    with pytest.raises(ValueError, match="case='eth_hlen'.*'build_skb'"):
        gro.head_case_flow("eth_hlen", 1000, 1, kernel="6.1")
    # 5.12 has no build_skb branch in page_to_skb (fb32856b16ad is 5.13).
    with pytest.raises(ValueError, match="case='build_skb'"):
        gro.head_case_flow("build_skb", 1000, 1, kernel="5.12")


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.integers(0, 1448), min_size=1, max_size=80),
    bufs=st.lists(st.sampled_from([1536, 2048, 2560]), min_size=80, max_size=80),
    kernel=st.sampled_from(["6.1", "6.18"]),
    l4=st.sampled_from(["tcp", "udp"]),
    budget=st.one_of(st.none(), st.integers(1, 70)),
    flist=st.booleans(),
)
def test_invariants(payloads, bufs, kernel, l4, budget, flist):
    skbs = [rx.receive(p, l4=l4, kernel=kernel, buf_len=b).skb for p, b in zip(payloads, bufs)]
    sum_len = sum(s.len - 14 for s in skbs)
    sum_truesize = sum(s.truesize for s in skbs)
    feats = {"GRO", "GRO_FRAGLIST"} if flist else None
    trace = gro.aggregate_trace(skbs, l4=l4, udp_gro=(l4 == "udp" and not flist), features=feats,
                                napi_budget=budget, kernel=kernel)
    out = trace.skbs
    offset = 52 if l4 == "tcp" else 28
    merged = len(skbs) - len(out)
    # bytes conserved: every merged packet loses its headers (offset bytes), nothing else.
    assert sum(s.len for s in out) == sum_len - merged * offset
    assert sum(gro.gro_segs(s) for s in out) == len(skbs)
    for s in out:
        for member in s.walk():
            assert member.nr_frags <= 17
    consumed = sum(e.consumed_truesize for e in trace.events)
    # truesize (6.x gro.c forms): what p gains plus what the freed skbs keep is what came in.
    assert sum(s.truesize for s in out) + consumed == sum_truesize


# ---------------------------------------------------------------- the vectorised stream against the object model

def _object_stream(sizes, bufs, kernel, l4="tcp", budget=64, **flow):
    from vnetlab import rx

    fp = gro.flow_params(l4=l4, kernel=kernel)
    skbs = [rx.page_to_skb(14 + fp.offset + int(p), int(b), kernel=kernel).skb for p, b in zip(sizes, bufs)]
    return gro.aggregate_trace(skbs, l4=l4, kernel=kernel, napi_budget=budget, **flow)


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([40, 100, 1000, 1162, 1163, 1448]), min_size=1, max_size=150),
    kernel=st.sampled_from(["5.10", "5.11", "5.12", "5.13", "6.1", "6.18"]),
    l4=st.sampled_from(["tcp", "udp"]),
    budget=st.sampled_from([None, 64, 7]),
    flist=st.booleans(),
)
def test_stream_matches_object_model(sizes, kernel, l4, budget, flist):
    bufs = [[1536, 2048, 2560][i % 3] for i in range(len(sizes))]
    flow = {"udp_gro": l4 == "udp" and not flist, "features": {"GRO", "GRO_FRAGLIST"} if flist else None}
    if flist and l4 == "tcp":
        flow["local_socket"] = False
    trace = _object_stream(sizes, bufs, kernel, l4=l4, budget=budget, **flow)
    stats = gro.simulate_stream(payload_len=sizes, buf_lens=bufs, l4=l4, kernel=kernel, napi_budget=budget, **flow)
    assert stats.segs_per_skb.tolist() == [gro.gro_segs(s) for s in trace.skbs]
    assert stats.first_skb_packets.tolist() == [trace.packets_in_first_skb(i) for i in range(len(trace.skbs))]
    assert stats.len_per_skb.tolist() == [s.len for s in trace.skbs]
    assert stats.frags_per_skb.tolist() == [s.total_frags() for s in trace.skbs]
    assert stats.sk_buffs_per_skb.tolist() == [1 + len(s.frag_list) for s in trace.skbs]
    assert stats.truesize_per_skb.tolist() == [s.truesize for s in trace.skbs]


def test_stream_reproduces_c3_and_cap():
    s = gro.simulate_stream(10_000, 1000, kernel="6.1", napi_budget=None)  # 1536 buffers: build_skb
    assert s.first_skb_packets[0] == 18 and s.segs_per_skb[0] == 65
    s = gro.simulate_stream(10_000, 1448, kernel="6.1", napi_budget=None)
    assert s.segs_per_skb[0] == 45 and s.path_counts["copy+frag"] > s.path_counts["build_skb"]
    s = gro.simulate_stream(1000, 1000, kernel="5.11", napi_budget=None)  # copy128 with kmalloc heads
    assert (s.first_skb_packets == 1).all()
    s = gro.simulate_stream(1000, 1000, kernel="5.10", napi_budget=None)  # copy128 with page-frag heads
    assert s.first_skb_packets[0] == 9
    s = gro.simulate_stream(1000, 1000, l4="udp", kernel="6.1")
    assert s.gro_skbs == 1000


def test_stream_bad_input():
    with pytest.raises(ValueError, match="n_packets"):
        gro.simulate_stream(0, 1000)
    with pytest.raises(ValueError, match="payload_len"):
        gro.simulate_stream(10, 70000)
    with pytest.raises(ValueError, match="buf_lens"):
        gro.simulate_stream(payload_len=[1000, 1000], buf_lens=[1536])


@settings(max_examples=25, deadline=None)
@given(flags=st.lists(st.sampled_from([None, {"ACK", "PSH"}, {"ACK", "FIN"}, {"ACK", "CWR"}, {"ACK", "URG"},
                                       {"ACK", "ECE"}]), min_size=1, max_size=80))
def test_stream_tcp_flags_match_object_model(flags):
    sizes = [1000] * len(flags)
    bufs = [1536] * len(flags)
    trace = _object_stream(sizes, bufs, "6.1", budget=None, tcp_flags=flags)
    bits = [gro._flag_bits(f, i) for i, f in enumerate(flags)]
    stats = gro.simulate_stream(payload_len=sizes, buf_lens=bufs, kernel="6.1", napi_budget=None, tcp_flags=bits)
    assert stats.segs_per_skb.tolist() == [gro.gro_segs(s) for s in trace.skbs]
