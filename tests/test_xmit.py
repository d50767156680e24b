"""Transmit path rules (vnetlab.xmit), each checked against the kernel behaviour it models."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vnetlab import xmit
from vnetlab.xmit import TxDevice

GSO_SOFTWARE_510 = frozenset({"TSO", "TSO_ECN", "TSO_MANGLEID", "TSO6", "GSO_SCTP"})
GSO_SOFTWARE_511 = GSO_SOFTWARE_510 | {"GSO_UDP_L4", "GSO_FRAGLIST"}
BASE = frozenset({"SG", "HW_CSUM", "HIGHDMA"})


def nic(*extra: str, vlan_extra: tuple[str, ...] = (), name: str = "eth0", **kw) -> TxDevice:
    feats = BASE | GSO_SOFTWARE_510 | {"HW_VLAN_CTAG_TX"} | set(extra)
    return TxDevice(name, "nic", frozenset(feats), vlan_features=frozenset(BASE | GSO_SOFTWARE_510 | set(vlan_extra)), **kw)


def vlan(lower: TxDevice, soft: frozenset[str], *extra: str) -> TxDevice:
    return TxDevice(f"{lower.name}.10", "vlan", frozenset(BASE | soft | set(extra)), vlan_features=lower.vlan_features,
                    lower=lower, features_check="vlan")


# --- gso_skb ------------------------------------------------------------------------------------------


def test_fraglist_skb_layout():
    # net/core/gro.c skb_gro_receive_list (6.1): one whole skb per segment on frag_list
    s = xmit.gso_skb(segs=10, gso_size=1000, fraglist=True)
    assert len(s.frag_list) == 9
    assert s.gso_type == {"UDP_L4", "FRAGLIST"}
    assert s.gso_segs == 10 and s.gso_size == 1000
    assert s.headlen == xmit.header_len("udp") + 1000
    assert all(m.len == 1000 for m in s.frag_list)
    assert s.len == xmit.header_len("udp") + 10 * 1000


def test_frags_skb_spills_into_frag_list_past_max_skb_frags():
    # net/core/gro.c skb_gro_receive (6.1): case 3 chains a new skb once lp has MAX_SKB_FRAGS frags
    s = xmit.gso_skb(segs=40, gso_size=1000)
    assert s.nr_frags == 17
    assert [m.nr_frags for m in s.frag_list] == [17, 6]
    assert s.gso_type == {"UDP_L4"}
    small = xmit.gso_skb(segs=17, gso_size=1000)
    assert not small.frag_list


def test_max_gro_segs():
    # net/core/gro.c (6.1): p->len + len < 65536; 44 * 1472 + 28 = 64796
    assert xmit.max_gro_segs(1472) == 44
    assert xmit.max_gro_segs(100) == 64  # UDP_GRO_CNT_MAX


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"segs": 0, "gso_size": 1000}, "segs"),
        ({"segs": 65, "gso_size": 100}, "segs"),
        ({"segs": 2, "gso_size": 0}, "gso_size"),
        ({"segs": 2, "gso_size": 100, "l4": "sctp"}, "l4"),
        ({"segs": 2, "gso_size": 100, "vlan_tag": 4096}, "vlan_tag"),
        ({"segs": 60, "gso_size": 1472}, "segs"),
        ({"segs": 2, "gso_size": 100, "tail_size": 101}, "tail_size"),
    ],
)
def test_gso_skb_rejects_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=param):
        xmit.gso_skb(**kwargs)


# --- the decision functions ---------------------------------------------------------------------------


def test_net_gso_ok_needs_every_type_bit():
    # include/linux/netdevice.h net_gso_ok (6.1): (features & feature) == feature
    assert xmit.net_gso_ok({"GSO_UDP_L4", "GSO_FRAGLIST"}, {"UDP_L4", "FRAGLIST"})
    assert not xmit.net_gso_ok({"GSO_UDP_L4"}, {"UDP_L4", "FRAGLIST"})
    assert xmit.net_gso_ok(set(), set())


def test_skb_gso_ok_frag_list_rule_has_no_exemption():
    # include/linux/netdevice.h skb_gso_ok (6.1): frag_list needs NETIF_F_FRAGLIST, even for GSO_FRAGLIST skbs
    s = xmit.gso_skb(segs=4, gso_size=1000, fraglist=True)
    assert not xmit.skb_gso_ok(s, {"GSO_UDP_L4", "GSO_FRAGLIST"})
    assert xmit.skb_gso_ok(s, {"GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST"})
    spilled = xmit.gso_skb(segs=20, gso_size=1000)
    assert not xmit.skb_gso_ok(spilled, {"GSO_UDP_L4"})
    assert xmit.skb_gso_ok(xmit.gso_skb(segs=10, gso_size=1000), {"GSO_UDP_L4"})


def test_netif_needs_gso_checksum_state():
    # include/linux/netdevice.h netif_needs_gso (6.1): ip_summed other than PARTIAL/UNNECESSARY forces GSO
    from dataclasses import replace

    s = xmit.gso_skb(segs=4, gso_size=1000)
    feats = {"GSO_UDP_L4", "SG", "HW_CSUM"}
    assert not xmit.netif_needs_gso(s, feats)
    assert xmit.netif_needs_gso(replace(s, ip_summed="CHECKSUM_NONE"), feats)
    assert not xmit.netif_needs_gso(xmit.gso_skb(segs=1, gso_size=1000), set())


def test_skb_needs_linearize():
    # include/linux/skbuff.h skb_needs_linearize (6.1)
    s = xmit.gso_skb(segs=4, gso_size=1000)
    assert xmit.skb_needs_linearize(s, {"HW_CSUM"})
    assert not xmit.skb_needs_linearize(s, {"SG"})
    f = xmit.gso_skb(segs=4, gso_size=1000, fraglist=True)
    assert xmit.skb_needs_linearize(f, {"SG"})
    assert not xmit.skb_needs_linearize(f, {"FRAGLIST"})


def test_gso_features_check_max_segs():
    # net/core/dev.c gso_features_check (6.1): gso_segs > gso_max_segs drops NETIF_F_GSO_MASK
    dev = nic("GSO_UDP_L4", gso_max_segs=8)
    s = xmit.gso_skb(segs=9, gso_size=1000)
    feats = xmit.netif_skb_features(dev, s, kernel="6.1")
    assert not feats & xmit.gso_mask("6.1")
    assert "SG" in feats


def test_gso_features_check_max_size_is_kernel_dependent():
    # net/core/dev.c gso_features_check: skb->len >= gso_max_size, in 6.1.y stable, absent in 5.10
    dev = nic("GSO_UDP_L4", gso_max_size=20000)
    s = xmit.gso_skb(segs=16, gso_size=1400)
    assert "GSO_UDP_L4" not in xmit.netif_skb_features(dev, s, kernel="6.1")
    assert "GSO_UDP_L4" in xmit.netif_skb_features(dev, s, kernel="5.10")


def test_vlan_tag_intersects_with_vlan_features():
    # net/core/dev.c netif_skb_features (6.1): tagged -> & (vlan_features | CTAG_TX | STAG_TX)
    dev = nic("GSO_UDP_L4")  # UDP_L4 in features, not in vlan_features
    tagged = xmit.gso_skb(segs=4, gso_size=1000, vlan_tag=10)
    untagged = xmit.gso_skb(segs=4, gso_size=1000)
    assert "GSO_UDP_L4" in xmit.netif_skb_features(dev, untagged)
    feats = xmit.netif_skb_features(dev, tagged)
    assert "GSO_UDP_L4" not in feats and "HW_VLAN_CTAG_TX" in feats


def test_vlan_features_check_multi_tag_drops_gso_but_not_for_passthru():
    # include/linux/if_vlan.h vlan_features_check (6.1): multi-tagged skbs keep only SG/HIGHDMA/HW_CSUM/FRAGLIST/VLAN TX
    dev = nic("GSO_UDP_L4", vlan_extra=("GSO_UDP_L4",))
    s = xmit.gso_skb(segs=4, gso_size=1000, vlan_tag=10)
    feats = xmit.netif_skb_features(dev, s, inband_vlan_tags=1)
    assert feats <= xmit.VLAN_MULTI_TAG_MASK
    passthru = TxDevice("vnet0", "nic", dev.features, dev.vlan_features, features_check="passthru")
    assert "GSO_UDP_L4" in xmit.netif_skb_features(passthru, s, inband_vlan_tags=1)


def test_harmonize_features_without_checksum_drops_gso():
    # net/core/dev.c harmonize_features (6.1): !can_checksum_protocol -> drop CSUM_MASK | GSO_MASK
    dev = TxDevice("eth0", "nic", frozenset({"SG", "GSO_UDP_L4", "FRAGLIST", "GSO_FRAGLIST"}))
    s = xmit.gso_skb(segs=4, gso_size=1000)
    assert not xmit.netif_skb_features(dev, s) & xmit.gso_mask("6.1")
    ipcsum = TxDevice("eth0", "nic", frozenset({"SG", "IP_CSUM", "GSO_UDP_L4"}))
    assert "GSO_UDP_L4" in xmit.netif_skb_features(ipcsum, s, protocol="ipv4")
    assert "GSO_UDP_L4" not in xmit.netif_skb_features(ipcsum, s, protocol="ipv6")


def test_encapsulation_uses_hw_enc_features():
    # net/core/dev.c netif_skb_features (6.1): skb->encapsulation -> & hw_enc_features
    from dataclasses import replace

    dev = nic("GSO_UDP_L4")
    s = replace(xmit.gso_skb(segs=4, gso_size=1000), encapsulation=True)
    assert xmit.netif_skb_features(dev, s) == frozenset()


def test_gso_mask_grows_in_618():
    # include/linux/netdev_features.h NETIF_F_GSO_MASK: GSO_LAST = GSO_FRAGLIST (6.1), GSO_ACCECN (6.18)
    assert "GSO_ACCECN" not in xmit.gso_mask("6.1")
    assert "GSO_ACCECN" in xmit.gso_mask("6.18")
    assert len(xmit.gso_mask("5.10")) == 19


# --- segmentation -------------------------------------------------------------------------------------


def test_fraglist_uses_skb_segment_list_without_allocations():
    # net/ipv4/udp_offload.c __udp_gso_segment_list -> net/core/skbuff.c skb_segment_list (6.1)
    s = xmit.gso_skb(segs=10, gso_size=1000, fraglist=True)
    r = xmit.skb_gso_segment(s, {"SG", "HW_CSUM"})
    assert r.method == "skb_segment_list"
    assert r.skb_allocs == 0 and len(r.segs) == 10
    assert all(seg.len == xmit.header_len() + 1000 for seg in r.segs)


def test_udp_l4_uses_skb_segment_with_new_skbs():
    # net/ipv4/udp_offload.c __udp_gso_segment -> skb_segment (6.1): a new skb per gso_size, frags shared with SG
    s = xmit.gso_skb(segs=10, gso_size=1000, tail_size=300)
    r = xmit.skb_gso_segment(s, {"SG", "HW_CSUM"})
    assert r.method == "skb_segment"
    assert r.skb_allocs == 10 and r.copied_bytes == 0
    assert [xmit.payload_len(x) for x in r.segs] == [1000] * 9 + [300]
    nosg = xmit.skb_gso_segment(s, {"HW_CSUM"})
    assert nosg.copied_bytes == 9300 and all(not x.frags for x in nosg.segs)


def test_modified_fraglist_geometry_goes_to_skb_segment_from_61():
    # net/ipv4/udp_offload.c __udp_gso_segment (6.1.192, a1e40ac5b5e9): pulled head -> linearize + skb_segment
    from dataclasses import replace

    s = xmit.gso_skb(segs=4, gso_size=1000, fraglist=True)
    pulled = replace(s, headlen=s.headlen + 500, end_offset=s.end_offset + 500,
                     frag_list=[replace(s.frag_list[0], headlen=500)] + s.frag_list[1:])
    assert xmit.skb_gso_segment(pulled, {"SG", "HW_CSUM"}, kernel="6.1").method == "linearize+skb_segment"
    assert xmit.skb_gso_segment(pulled, {"SG", "HW_CSUM"}, kernel="5.10").method == "skb_segment_list"


def test_skb_segment_splits_frag_list_gso_skb_when_only_fraglist_is_missing():
    # net/core/skbuff.c skb_segment (6.1): sg && csum && net_gso_ok && frag_list -> GSO skbs per frag_list member
    s = xmit.gso_skb(segs=34, gso_size=1000)
    r = xmit.skb_gso_segment(s, {"SG", "HW_CSUM", "GSO_UDP_L4"})
    assert r.method.startswith("skb_segment (split")
    assert [x.gso_segs for x in r.segs] == [17, 17]
    assert sum(xmit.payload_len(x) for x in r.segs) == 34000


@settings(max_examples=150, deadline=None)
@given(
    segs=st.integers(2, 64),
    gso_size=st.integers(1, 1472),
    tail=st.floats(0.01, 1.0),
    fraglist=st.booleans(),
    sg=st.booleans(),
    kernel=st.sampled_from(["5.10", "6.1", "6.18"]),
)
def test_segmentation_conserves_payload(segs, gso_size, tail, fraglist, sg, kernel):
    segs = min(segs, (65535 - 28) // gso_size)
    assume(segs >= 2)
    tail_size = max(1, int(gso_size * tail))
    s = xmit.gso_skb(segs=segs, gso_size=gso_size, fraglist=fraglist, tail_size=tail_size)
    feats = {"HW_CSUM"} | ({"SG"} if sg else set())
    r = xmit.skb_gso_segment(s, feats, kernel=kernel)
    assert sum(xmit.payload_len(x) for x in r.segs) == (segs - 1) * gso_size + tail_size
    assert all(xmit.payload_len(x) <= gso_size for x in r.segs)
    assert len(r.segs) == segs


# --- send ---------------------------------------------------------------------------------------------


def test_510_vlan_segments_in_software():
    # include/linux/netdev_features.h NETIF_F_GSO_SOFTWARE (5.10): no GSO_UDP_L4 -> the VLAN device segments
    real = nic()
    r = xmit.send(vlan(real, GSO_SOFTWARE_510, "FRAGLIST"), xmit.gso_skb(segs=20, gso_size=1400), kernel="5.10")
    assert r.segmented_at == "eth0.10"
    assert r.hop("eth0.10").action == "segmented"
    assert r.hop("eth0").skbs_in == 20 and r.ops["dev_queue_xmit"] == 21
    assert r.wire_packets == 20 and r.payload_bytes == 28000


def test_511_vlan_passes_and_the_nic_segments_or_not():
    # 2e4ef10f5850 (5.11): GSO_UDP_L4 in GSO_SOFTWARE; segmentation moves to the real device
    s = xmit.gso_skb(segs=10, gso_size=1400)
    r = xmit.send(vlan(nic(), GSO_SOFTWARE_511), s, kernel="5.11")
    assert r.hop("eth0.10").action == "passed"
    assert r.segmented_at == "eth0" and r.wire_packets == 10
    uso = nic("GSO_UDP_L4", vlan_extra=("GSO_UDP_L4",))
    r2 = xmit.send(vlan(uso, GSO_SOFTWARE_511), s, kernel="5.11")
    assert r2.segmented_at is None and r2.wire_packets == 10
    assert all(p.segmented_by == "hardware" for p in r2.segments)


def test_fraglist_still_segmented_at_vlan_without_netif_f_fraglist():
    # include/linux/netdevice.h skb_gso_ok: the VLAN has GSO_FRAGLIST (5.11+) but no FRAGLIST -> segments there
    s = xmit.gso_skb(segs=10, gso_size=1400, fraglist=True)
    r = xmit.send(vlan(nic(), GSO_SOFTWARE_511), s, kernel="6.1")
    assert r.segmented_at == "eth0.10"
    assert r.hop("eth0.10").method == "skb_segment_list"
    full = nic("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST", vlan_extra=("GSO_UDP_L4", "GSO_FRAGLIST", "FRAGLIST"))
    r2 = xmit.send(vlan(full, GSO_SOFTWARE_511, "FRAGLIST"), s, kernel="6.1")
    assert r2.segmented_at is None and r2.wire_packets == 10


def test_software_tag_insert_without_ctag_tx():
    # net/core/dev.c validate_xmit_vlan (6.1): no HW_VLAN_CTAG_TX -> __vlan_hwaccel_push_inside
    real = TxDevice("eth0", "nic", frozenset(BASE), vlan_features=frozenset(BASE))
    s = xmit.gso_skb(segs=1, gso_size=1000)
    r = xmit.send(vlan(real, GSO_SOFTWARE_511), s, kernel="6.1")
    assert "tag inserted" in r.hop("eth0").actions
    assert r.segments[0].frame_len == xmit.header_len() + 1000 + 4


def test_linearize_frag_list_without_netif_f_fraglist():
    # net/core/dev.c validate_xmit_skb (6.1): non-GSO skb with frag_list, no FRAGLIST -> __skb_linearize
    from dataclasses import replace

    s = replace(xmit.gso_skb(segs=3, gso_size=500, fraglist=True), gso_size=0, gso_segs=0, gso_type=frozenset())
    r = xmit.send(nic(), s, kernel="6.1")
    assert r.hop("eth0").action == "linearized" and r.wire_packets == 1


def test_send_refuses_device_loop():
    a = TxDevice("a", "macvlan", BASE)
    object.__setattr__(a, "lower", a)
    with pytest.raises(ValueError, match="loop"):
        xmit.send(a, xmit.gso_skb(segs=2, gso_size=100))


# --- with vnetlab.netdev devices ----------------------------------------------------------------------

netdev = pytest.importorskip("vnetlab.netdev")


def _stack(kernel, upper, **nic_params):
    net = netdev.Namespace(kernel=kernel)
    eth = net.nic("eth0", driver="router", **nic_params)
    if upper == "vlan":
        return net.vlan("eth0.10", lower=eth, vid=10)
    if upper == "macvlan":
        return net.macvlan("mv0", lower=eth)
    master = net.bridge("br0") if upper == "bridge" else net.bond("bond0")
    net.set_master(eth, master)
    return master


@pytest.mark.parametrize("upper", ["vlan", "macvlan"])
@pytest.mark.parametrize("kernel, where", [("5.10", "upper"), ("5.11", None), ("6.1", None), ("6.18", None)])
def test_gso_software_change_moves_segmentation(upper, kernel, where):
    # include/linux/netdev_features.h NETIF_F_GSO_SOFTWARE gains GSO_UDP_L4 in 5.11 (2e4ef10f5850, ecb8fed408b6)
    dev = _stack(kernel, upper)
    r = xmit.send(dev, xmit.gso_skb(segs=16, gso_size=1400))
    assert r.segmented_at == (dev.name if where == "upper" else None)
    assert r.wire_packets == 16


def test_bond_had_udp_l4_before_the_patch_but_not_gso_fraglist():
    # drivers/net/bonding/bond_main.c bond_setup (5.10): hw_features |= GSO_ENCAP_ALL | GSO_UDP_L4 explicitly;
    # GSO_FRAGLIST only arrives with NETIF_F_GSO_SOFTWARE (ecb8fed408b6, 5.11)
    udp = xmit.gso_skb(segs=16, gso_size=1400)
    flist = xmit.gso_skb(segs=16, gso_size=1400, fraglist=True)
    assert xmit.send(_stack("5.10", "bond"), udp).segmented_at is None
    assert xmit.send(_stack("5.10", "bond"), flist).segmented_at == "bond0"
    assert xmit.send(_stack("5.11", "bond"), flist).segmented_at is None


def test_bridge_unaffected_by_the_patch_for_udp_l4():
    # net/bridge/br_device.c COMMON_FEATURES has NETIF_F_GSO_MASK (5.10..6.18): UDP_L4 passes br0 either way
    for kernel in ("5.10", "6.1"):
        r = xmit.send(_stack(kernel, "bridge"), xmit.gso_skb(segs=16, gso_size=1400))
        assert r.segmented_at is None


def test_bridge_one_for_all_subtlety():
    # net/bridge/br_if.c br_features_recompute: ONE_FOR_ALL (UDP_L4 from 5.11) cleared, re-added only from ports
    s = xmit.gso_skb(segs=16, gso_size=1400)
    bare = dict(gso_udp_l4=False, gso_fraglist=False, fraglist=False)
    assert xmit.send(_stack("5.10", "bridge", **bare), s).segmented_at == "eth0"
    assert xmit.send(_stack("6.1", "bridge", **bare), s).segmented_at == "br0"


def test_fraglist_on_virtio_net_vlan_is_segmented_at_the_vlan_after_the_patch():
    # kernel-facts D.6: the VLAN's NETIF_F_FRAGLIST follows virtio_net's (none), so skb_gso_ok fails at the VLAN
    net = netdev.Namespace(kernel="6.1")
    v = net.vlan("eth0.10", lower=net.nic("eth0", driver="virtio_net"), vid=10)
    r = xmit.send(v, xmit.gso_skb(segs=20, gso_size=1400, fraglist=True))
    assert r.segmented_at == "eth0.10" and r.hop("eth0.10").method == "skb_segment_list"


def test_router_scenario_510_vs_511():
    before = xmit.router_scenario(kernel="5.10")
    after = xmit.router_scenario(kernel="5.11")
    assert before.segmented_at == "eth0.10" and after.segmented_at is None
    assert before.gro_skbs == after.gro_skbs == 1
    assert before.wire_packets == after.wire_packets == 44
    assert before.payload_bytes == after.payload_bytes == 44 * 1472
    assert before.ops["dev_queue_xmit"] == 45 and after.ops["dev_queue_xmit"] == 2


def test_router_scenario_udp_fwd_needs_512():
    # NETIF_F_GRO_UDP_FWD arrived ~5.12: before it, UDP is forwarded packet by packet
    r = xmit.router_scenario(kernel="5.11", gro="udp_fwd", segs=10)
    assert r.gro_skbs == 10 and r.segmented_at is None
    assert xmit.router_scenario(kernel="6.1", gro="udp_fwd", segs=10).gro_skbs == 1


@pytest.mark.parametrize("kwargs, param", [({"gro": "tcp"}, "gro"), ({"upper": "tun"}, "upper"), ({"segs": 0}, "segs")])
def test_router_scenario_rejects_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=param):
        xmit.router_scenario(**kwargs)


# --- the throughput model -----------------------------------------------------------------------------


def test_costs_have_sources():
    costs = xmit.RouterCosts.from_table()
    assert costs["cpu_hz"] > 0 and all(costs.sources[n] for n in costs.values)
    with pytest.raises(ValueError, match="no_such_cost"):
        xmit.RouterCosts.from_table(no_such_cost=1)


def test_cpu_costs_alone_do_not_make_50x():
    before, after = xmit.router_scenario(kernel="5.10"), xmit.router_scenario(kernel="5.11")
    assert xmit.router_gap(before, after) < 2.0
    need = xmit.router_gap_requirements(before, after, target=50)
    # only the per-segment resegmentation cost can get there alone, and only at ~10^5 cycles per segment
    assert need["skb_segment_list_per_seg"] > 1e5
    assert need["dev_queue_xmit_per_skb"] is None  # 45 vs 2 calls per batch caps its effect below 50x


def test_untranslated_hypothesis_gives_link_over_segments():
    before, after = xmit.router_scenario(kernel="5.10"), xmit.router_scenario(kernel="5.11")
    gap = xmit.router_gap(before, after, drop_untranslated=True)
    assert gap == pytest.approx(44, rel=0.01)


def test_throughput_is_link_capped_and_sensitivity_moves():
    r = xmit.router_scenario(kernel="5.11")
    t = xmit.router_throughput(r)
    assert t.bound == "link" and t.goodput_bps < 1e9
    slow = xmit.router_throughput(r, xmit.RouterCosts.from_table(cpu_hz=20e6))
    assert slow.bound == "cpu" and slow.goodput_bps < t.goodput_bps
    table = xmit.sensitivity(xmit.router_scenario(kernel="5.10"), r,
                             xmit.RouterCosts.from_table(cpu_hz=100e6))
    lo, hi = table["skb_segment_list_per_seg"]
    assert hi > lo
    assert "not measured" in xmit.LIMITATIONS or "assumption" in xmit.LIMITATIONS


def test_skb_gso_to_netif_f_follows_the_shift():
    # include/linux/netdevice.h net_gso_ok BUILD_BUG_ONs: SKB_GSO_x == NETIF_F_GSO_x >> NETIF_F_GSO_SHIFT (16)
    from vnetlab import features
    from vnetlab.skb import SKB_GSO_NAMES

    for i, name in enumerate(SKB_GSO_NAMES[:19]):
        assert features.bit(xmit.SKB_GSO_TO_NETIF_F[name], kernel="6.1") == 16 + i
    assert features.bit("GSO_ACCECN", kernel="6.18") == 16 + 19


def test_veth_hands_the_gso_skb_to_its_peer_whole():
    # veth_xmit (drivers/net/veth.c): no segmentation at all; the peer receives one GSO skb.
    from vnetlab import netdev
    net = netdev.Namespace(kernel="6.1")
    a, _b = net.veth("v0", "v1")
    skb = xmit.gso_skb(l4="udp", segs=44, gso_size=1472, fraglist=True)
    tx = xmit.send(a, skb)
    assert tx.segmented_at is None
    assert tx.wire_packets == 1 and tx.segments[0].segmented_by == "none"
    assert tx.segments[0].payload_len == 44 * 1472
