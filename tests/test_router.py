"""The VLAN NAT router of 2e4ef10f5850 (vnetlab.router): where the GRO skb is segmented, per kernel, and the
throughput model (whose per-operation costs are assumptions, see router.LIMITATIONS)."""

from __future__ import annotations

import pytest

from vnetlab import labdata, router
from vnetlab.profiles import kernel as _profile
from vnetlab.profiles import known_kernels
from vnetlab.segment import gso_skb
from vnetlab.stack import build_stack
from vnetlab.xmit import send


def _stack(kernel, upper, **nic_params):
    """The top device of ``upper`` on the router NIC (vnetlab.stack.build_stack, the one stack builder)."""
    return build_stack(kernel=kernel, upper=upper, nic="router", nic_params=nic_params).egress


@pytest.mark.parametrize("upper", ["vlan", "macvlan"])
@pytest.mark.parametrize("kernel, where", [("5.10", "upper"), ("5.11", None), ("6.1", None), ("6.18", None)])
def test_gso_software_change_moves_segmentation(upper, kernel, where):
    # include/linux/netdev_features.h NETIF_F_GSO_SOFTWARE gains GSO_UDP_L4 in 5.11 (2e4ef10f5850, ecb8fed408b6)
    dev = _stack(kernel, upper)
    r = send(dev, gso_skb(segs=16, gso_size=1400))
    assert r.segmented_at == (dev.name if where == "upper" else None)
    assert r.wire_packets == 16  # the 16 segments sent: segmented in software or by the NIC, none lost


def test_bond_had_udp_l4_before_the_patch_but_not_gso_fraglist():
    # drivers/net/bonding/bond_main.c bond_setup (5.10): hw_features |= GSO_ENCAP_ALL | GSO_UDP_L4 explicitly;
    # GSO_FRAGLIST only arrives with NETIF_F_GSO_SOFTWARE (ecb8fed408b6, 5.11)
    udp = gso_skb(segs=16, gso_size=1400)
    flist = gso_skb(segs=16, gso_size=1400, fraglist=True)
    assert send(_stack("5.10", "bond"), udp).segmented_at is None
    assert send(_stack("5.10", "bond"), flist).segmented_at == "bond0"
    assert send(_stack("5.11", "bond"), flist).segmented_at is None


def test_bridge_unaffected_by_the_patch_for_udp_l4():
    # net/bridge/br_device.c COMMON_FEATURES has NETIF_F_GSO_MASK (5.10..6.18): UDP_L4 passes br0 either way
    for kernel in ("5.10", "6.1"):
        assert send(_stack(kernel, "bridge"), gso_skb(segs=16, gso_size=1400)).segmented_at is None


def test_bridge_one_for_all_subtlety():
    # net/bridge/br_if.c br_features_recompute: ONE_FOR_ALL (UDP_L4 from 5.11) cleared, re-added only from ports
    s = gso_skb(segs=16, gso_size=1400)
    bare = dict(gso_udp_l4=False, gso_fraglist=False, fraglist=False)
    assert send(_stack("5.10", "bridge", **bare), s).segmented_at == "eth0"
    assert send(_stack("6.1", "bridge", **bare), s).segmented_at == "br0"


def test_fraglist_on_virtio_net_vlan_is_segmented_at_the_vlan_after_the_patch():
    # docs/kernel/gso-features.md#d6: the VLAN's NETIF_F_FRAGLIST follows virtio_net's (none), so skb_gso_ok fails at
    # the VLAN
    v = build_stack(kernel="6.1", upper="vlan", nic="virtio_net").egress
    r = send(v, gso_skb(segs=20, gso_size=1400, fraglist=True))
    assert r.segmented_at == "eth0.10" and r.hop("eth0.10").method == "skb_segment_list"


def test_router_scenario_510_vs_511():
    before = router.router_scenario(kernel="5.10")
    after = router.router_scenario(kernel="5.11")
    assert before.segmented_at == "eth0.10" and after.segmented_at is None
    assert before.gro_skbs == after.gro_skbs == 1
    # net/core/gro.c: 44 x 1472-byte segments fit one GRO skb (44 * 1472 + 28 + 1500 < 65536, 45 would not)
    assert before.wire_packets == after.wire_packets == 44
    assert before.payload_bytes == after.payload_bytes == 44 * 1472
    # net/8021q/vlan_dev.c vlan_dev_hard_start_xmit: dev_queue_xmit on eth0 per skb it gets, so 1 + 44 segments
    # before the patch and 1 + the whole GRO skb after
    assert before.ops["dev_queue_xmit"] == 45 and after.ops["dev_queue_xmit"] == 2


@pytest.mark.parametrize("upper, top", [("vlan_on_bond", "bond0.10"), ("macvlan_on_vlan", "mv0"),
                                        ("vlan_on_bridge", "br0.10")])
def test_router_on_a_nested_stack_segments_at_the_top_before_the_patch(upper, top):
    # 2e4ef10f5850 (v5.11): NETIF_F_GSO_SOFTWARE gains GSO_FRAGLIST; before it the top logical device lacks it
    # (vlan_dev_fix_features, macvlan_fix_features keep GSO_SOFTWARE only), so validate_xmit_skb runs
    # skb_segment_list at the first device the routed GRO skb meets; after it every device passes it whole
    before = router.router_scenario(kernel="5.10", upper=upper)
    after = router.router_scenario(kernel="5.11", upper=upper)
    assert before.egress == top and before.segmented_at == top and before.tx[0].hop(top).method == "skb_segment_list"
    assert after.segmented_at is None and [h.action for h in after.hops][:-1] == ["passed", "passed"]
    # 44 x 1472-byte datagrams fill one GRO skb (net/core/gro.c, 64 KiB cap); all reach the wire either way
    assert before.wire_packets == after.wire_packets == 44


def test_router_scenario_ipv6():
    # MTU 1500 - 40 (ipv6hdr) - 8 (udphdr) = 1452 by default; 45 segments fit a GRO skb (segment.max_gro_segs)
    r = router.router_scenario(kernel="6.1", ip=6)
    # include/uapi/linux/if_ether.h ETH_DATA_LEN 1500, ETH_HLEN 14, if_vlan.h VLAN_HLEN 4; net/core/gro.c 64 KiB cap
    assert r.gso_size == 1452 and r.packets_in == 45 and r.wire_packets == 45
    assert all(p.frame_len == 14 + 4 + 40 + 8 + 1452 for p in r.tx[0].segments)  # tagged frames
    assert router.router_scenario(kernel="5.10", ip=6).segmented_at == "eth0.10"


@pytest.mark.parametrize("version", known_kernels())
def test_every_profile_says_whether_it_rewrites_fraglist_segments(version):
    for rule in ("udp_gso_list_nat_fix", "udp6_gso_list_nat_fix"):
        assert isinstance(_profile(version).rule(rule), bool)
        assert "udp_offload.c" in _profile(version).source(rule)


def test_nat_fix_is_a_kernel_rule_not_a_version():
    """Debian's 5.10.223 carries the NAT fix (3d6df63a5cbe, 5.10.15): the lab counted 1760 of 1760 datagrams
    intact behind the VLAN on it (data/lab/5.10/router.json); mainline 5.10 delivers 1 per GRO skb."""
    measured = {c["case"]: c["receiver"]["intact"] for c in labdata.load("router", "5.10")["router"]["cases"]}
    assert measured["vlan_virtio"] == measured["vlan_veth"] == 1760
    fixed = router.router_scenario(kernel="5.10.223", nic="virtio_net")
    assert fixed.segmented_at == "eth0.10" and fixed.nat_translated == fixed.datagrams_out == 44
    broken = router.router_scenario(kernel="5.10", nic="virtio_net")
    assert broken.segmented_at == "eth0.10" and (broken.nat_translated, broken.datagrams_out) == (1, 44)
    assert any("udp_gso_list_nat_fix = false" in n for n in broken.notes)
    # IPv6: Debian 5.10.223's __udp_gso_segment_list returns "is_ipv6 ? skb : ..." (no IPv6 rewrite until
    # b936a9b8d4a5, v6.15); Debian 6.1.192 has __udpv6_gso_segment_list_csum
    assert router.router_scenario(kernel="5.10.223", nic="virtio_net", ip=6).nat_translated == 1
    assert router.router_scenario(kernel="6.1", nic="virtio_net", ip=6).nat_translated == 45


def _lab_router_cases():
    return [(r.kernel, r.case) for r in labdata.router_rows() if r.case != "vlan_virtio_nogro"]


@pytest.mark.parametrize("kernel, case", _lab_router_cases())
def test_router_scenario_delivers_what_the_lab_measured(kernel, case):
    """router_scenario on each lab kernel (its profile with its patch's rules), fed the GRO skbs the router
    really built, gives the datagrams the lab's receiver counted intact (data/lab/<kernel>/router.json) and
    segments where the lab's __skb_gso_segment kprobe fired: at the VLAN, or on the veth peer's receiving side
    (udp_rcv_segment) when the VLAN passes the fraglist skb whole."""
    doc = labdata.load("router", kernel)
    measured = next(c for c in doc["router"]["cases"] if c["case"] == case)
    payload = doc["router"]["payload"]
    if case == "vlan_virtio":
        nic = dict(nic="virtio_net", nic_params=labdata.probe_params(doc, "eth2"))
    else:
        nic = dict(nic=router.VETH)
    results = [router.router_scenario(kernel=labdata.model_kernel(kernel), upper="vlan", gro="fraglist", segs=n,
                                      gso_size=payload, **nic) for n in labdata.gro_skb_segs(measured, payload)]
    assert sum(r.datagrams_out for r in results) == sum(labdata.gro_skb_segs(measured, payload))
    assert sum(r.nat_translated for r in results) == measured["receiver"]["intact"]
    rx_side = [d for d in measured["segmented_at"] if d.endswith("(rx)")]
    for r in results:
        if r.packets_in > 1:
            assert (r.segmented_at is None) == bool(rx_side)
            assert (r.received is not None and r.received.segmented == 1) == bool(rx_side)


def test_router_scenario_udp_fwd_needs_512():
    # docs/kernel/gro.md#c4: NETIF_F_GRO_UDP_FWD arrived in v5.12 (6f1c0ea133a6): before it, UDP is forwarded packet by
    # packet (10 skbs for the 10 sent), after it one GRO skb
    r = router.router_scenario(kernel="5.11", gro="udp_fwd", segs=10)
    assert r.gro_skbs == 10 and r.segmented_at is None
    assert router.router_scenario(kernel="6.1", gro="udp_fwd", segs=10).gro_skbs == 1


@pytest.mark.parametrize("kwargs, param", [({"gro": "tcp"}, "gro"), ({"upper": "tun"}, "upper"), ({"segs": 0}, "segs"),
                                           ({"ip": 5}, "ip"), ({"segs": 65}, "segs")])
def test_router_scenario_rejects_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=param):
        router.router_scenario(**kwargs)


# --- the throughput model -----------------------------------------------------------------------------


def test_costs_have_sources():
    costs = router.RouterCosts.from_table()
    assert costs["cpu_hz"] > 0 and all(costs.sources[n] for n in costs.values)
    with pytest.raises(ValueError, match="no_such_cost"):
        router.RouterCosts.from_table(no_such_cost=1)


def test_cpu_costs_alone_do_not_make_50x():
    before, after = router.router_scenario(kernel="5.10"), router.router_scenario(kernel="5.11")
    assert router.router_gap(before, after) < 2.0
    need = router.router_gap_requirements(before, after, target=50)
    # only the per-segment resegmentation cost can get there alone, and only at ~10^5 cycles per segment
    # source: vnetlab/router.py router_gap_requirements: a model regression bound, no kernel number
    assert need["skb_segment_list_per_seg"] > 1e5
    assert need["dev_queue_xmit_per_skb"] is None  # 45 vs 2 calls per batch caps its effect below 50x


def test_untranslated_hypothesis_gives_link_over_segments():
    # docs/kernel/history.md#f: before c3df39ac9b0e only the head segment of 44 carried the NATed header: 1/44 of the
    # link
    before, after = router.router_scenario(kernel="5.10"), router.router_scenario(kernel="5.11")
    assert router.router_gap(before, after, drop_untranslated=True) == pytest.approx(44, rel=0.01)


def test_throughput_is_link_capped_and_sensitivity_moves():
    r = router.router_scenario(kernel="5.11")
    t = router.router_throughput(r)
    # source: data/router_costs.toml link_bps, the 1 Gbps of commit 2e4ef10f5850's message (docs/kernel/history.md#f)
    assert t.bound == "link" and t.goodput_bps < 1e9
    slow = router.router_throughput(r, router.RouterCosts.from_table(cpu_hz=20e6))
    assert slow.bound == "cpu" and slow.goodput_bps < t.goodput_bps
    table = router.sensitivity(router.router_scenario(kernel="5.10"), r, router.RouterCosts.from_table(cpu_hz=100e6))
    lo, hi = table["skb_segment_list_per_seg"]
    assert hi > lo


def test_lost_segments_is_the_one_1_in_n_number():
    # docs/kernel/history.md#f: before c3df39ac9b0e only the head of each fraglist GRO skb is NATed; N = 44 for
    # 1472-byte
    # datagrams (skb_gro_receive_list keeps p->len < 65536: 44 * 1500 = 66000 > 65536 counts from the IP header,
    # so 43 + head = 44 is max_gro_segs). Goodput: 1 Gbps (the seed's "1 Gbps / link speed") carrying 1472-byte
    # payloads in 1518-byte VLAN frames (+ 24 bytes of preamble, FCS and gap, IEEE 802.3), divided by 44.
    ls = router.lost_segments()
    assert ls.n == 44 and ls.delivered == pytest.approx(1 / 44)
    payload_bps = 1e9 * 1472 / (1472 + 8 + 20 + 14 + 4 + 24)
    assert ls.full_goodput_bps == pytest.approx(payload_bps, rel=1e-9)
    assert ls.goodput_bps == pytest.approx(payload_bps / 44, rel=1e-9)
    assert ls.mbps == 22
    assert "1 in 44" in ls.describe() and "= 22 Mbps" in ls.describe()
    # Debian 5.10.223 carries 3d6df63a5cbe: every datagram NATed, the whole link's goodput
    fixed = router.lost_segments(kernel="5.10.223")
    assert fixed.delivered == 1.0 and fixed.goodput_bps == pytest.approx(payload_bps, rel=1e-9)


def test_readme_quotes_the_one_lost_segments_number():
    # the README cannot call router.lost_segments(); it states its number, and this keeps the two the same
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    ls = router.lost_segments()
    # the README's intro no longer states the inference (notebook 50 asks the reader to predict it); where the
    # README names the function, it quotes its number
    if "router.lost_segments()" in readme:
        assert f"`router.lost_segments()`, {ls.full_goodput_bps / 1e6:,.0f} Mbps of UDP payload / {ls.n} ≈ " \
            f"{ls.mbps} Mbps" in readme
    assert "≈ 23 Mbps" not in readme and "1 Gbps / 44" not in readme
