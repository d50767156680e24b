"""A vxlan device over an underlay whose MTU is lower than the vxlan device's own: the model against the kernel.

Expected values come from two places independent of the model:

- the recording ``data/live/pmtu/vxlan_underlay_mtu.json``, made by ``tests/live_vxlan_pmtu.py`` on this
  machine's 6.18.44 as root (veth underlay lowered to 1400 under a vxlan made at 1500, so vx0 keeps 1450; IPv4
  outer with df unset and set, IPv6 outer, and vx0 as a bridge port): the sender's errno, its IP / ICMP counters
  (/proc/net/snmp, /proc/net/snmp6), the inner route's PMTU (``ip route get``), every frame the peer's veth
  received, the datagrams and bytes the receiving socket got; ``test_live_run_agrees`` repeats the measurement
  where root and network namespaces are available;
- the kernel lines kept under tests/data/ksrc/<version>/ (Debian 5.10.262, 6.1.192, 6.12.118):
  drivers/net/vxlan/vxlan_core.c vxlan_xmit_one, net/ipv4/ip_tunnel_core.c skb_tunnel_check_pmtu and
  iptunnel_pmtud_check_icmp, net/ipv4/ip_output.c ip_fragment / ip_finish_output_gso, net/ipv6/ip6_output.c
  ip6_fragment, net/ipv4/route.c and net/ipv6/route.c update_pmtu (docs/kernel/gso-features.md#d8).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from vnetlab import netdev, segment, udp, xmit
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, IP_HLEN, TCP_HLEN_TS
from vnetlab.skb import Skb

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "data" / "live" / "pmtu" / "vxlan_underlay_mtu.json"
KSRC = Path(__file__).parent / "data" / "ksrc"
DEBIAN = ("5.10.262", "6.1.192", "6.12.118")
DOC = json.loads(RECORDING.read_text())
RUNS = DOC["runs"]
UNDERLAY_MTU = DOC["underlay_mtu"]


def _pair(outer: int, df: str, *, bridged: bool = False, kernel: str = "6.18"):
    """The recorded set-up in the model: vx0 / vx1 made at the default MTU, the veth underlay lowered after."""
    net = netdev.Namespace(kernel)
    v0, v1 = net.veth("a0", "b0")
    vx0 = net.vxlan("vx0", vni=42, underlay=v0, ip=outer)
    vx1 = net.vxlan("vx1", vni=42, underlay=v1, ip=outer)
    vx0.set_df(df)  # type: ignore[arg-type]
    top = vx0
    if bridged:
        top = net.bridge("br0")
        net.set_master(vx0, top)
    v0.set_mtu(UNDERLAY_MTU)
    v1.set_mtu(UNDERLAY_MTU)
    return net, top, vx0, vx1


def _counts(tx: xmit.TxResult) -> dict[str, int]:
    """What the recording counts, read off the model's send: frames the peer veth got, outer IP fragments among
    them, the largest outer IP packet, ICMP errors to this host and the packets freed for DF."""
    frames = tx.skbs_to_driver
    return {"frames": len(frames), "outer_fragments": sum(isinstance(s, xmit.OuterFragment) for s in frames),
            "largest": max((s.network_len() for s in frames), default=0), "icmp": len(tx.icmp),
            "fragfails": sum("with DF" in why for _, why in tx.dropped)}


def _case_id(run: dict) -> str:
    c = run["case"]
    where = "bridged" if run.get("bridged") else f"ipv{run['outer']}-df-{run['df']}"
    extra = f"-gso{c['gso_size']}" if c.get("gso_size") else ""
    return f"{where}-{c['proto']}{c['size']}{extra}{'-primed' if c.get('primed') else ''}"


UDP_RUNS = [r for r in RUNS if r["case"]["proto"] == "udp" and not r.get("bridged")]


def test_the_recording_is_the_set_up_the_model_builds():
    # drivers/net/vxlan/vxlan_core.c vxlan_config_apply: lowerdev->mtu - vxlan_headroom at creation, and vxlan has
    # no NETDEV_CHANGEMTU handler for its lower device: both stay when the underlay drops to 1400 (the recording)
    assert DOC["kernel"].startswith("6.18")
    for outer in (4, 6):
        _, _, vx0, _ = _pair(outer, "unset")
        assert DOC[f"vx_mtu_ipv{outer}"] == [vx0.mtu, vx0.mtu]
        assert vx0.mtu + vx0.headroom() == ETH_DATA_LEN


@pytest.mark.parametrize("run", UDP_RUNS, ids=_case_id)
def test_udp_through_a_lowered_underlay_matches_the_kernel(run):
    """Each recorded UDP send (a fresh route cache; "primed": after one send of the same size taught the inner
    route its PMTU, which the model takes as the inner route's MTU) against send_over_vxlan on the 6.18 profile."""
    c = run["case"]
    _, _, vx0, vx1 = _pair(run["outer"], run["df"])
    tunnel_mtu = UNDERLAY_MTU - vx0.headroom()
    if c.get("primed"):
        vx0.set_mtu(tunnel_mtu)  # ip_append_data's fragsize and ip_finish_output's mtu: the route's learned PMTU
    t = udp.send_over_vxlan(vx0, vx1, c["size"], gso_size=c.get("gso_size", 0))
    assert (t.send.error,) == tuple(run["sender"]["errors"] or [None])
    if t.send.error:
        return
    assert t.send.tx is not None
    got = _counts(t.send.tx)
    s = run["sender_counters"]
    icmp_key, fails_key = ("IcmpOutDestUnreachs", "IpFragFails") if run["outer"] == 4 else (
        "Icmp6OutPktTooBigs", "Ip6FragFails")
    assert got == {"frames": run["b0_frames"], "outer_fragments": run["b0_fragments"], "largest": run["b0_largest"],
                   "icmp": s[icmp_key], "fragfails": s[fails_key]}
    if not c.get("primed"):
        assert t.send.tx.pmtu == run["route_mtu_after"]
    received = (t.recv.datagrams, t.recv.bytes) if t.recv is not None else (0, 0)
    assert received == (len(run["datagrams"]), run["udp_bytes"])


@pytest.mark.parametrize("run", [r for r in RUNS if r["case"]["proto"] == "tcp"], ids=_case_id)
def test_tcp_learns_the_tunnel_pmtu(run):
    """A TCP stream's first full-sized GSO skb (MSS 1398 from vx0's 1450 with timestamps) meets the check; the
    PMTU it teaches the route is what TCP's MSS ends at (tcp_sync_mss: pmtu - IP - TCP header with timestamps),
    and with DF every one of its segments is dropped with an ICMP to this host."""
    _, _, vx0, _ = _pair(run["outer"], run["df"])
    mss = vx0.mtu - IP_HLEN[4] - TCP_HLEN_TS
    skb = segment.gso_skb(l4="tcp", segs=10, gso_size=mss, kernel="6.18")
    r = xmit.send(vx0, skb, df=True)  # TCP sets DF (ip_queue_xmit, IP_PMTUDISC_WANT)
    assert r.pmtu is not None and r.pmtu - IP_HLEN[4] - TCP_HLEN_TS == run["sender"]["mss_at_end"]
    assert run["tcp_bytes"] == run["case"]["size"]  # the stream arrived whole in the end
    if vx0.outer_df(4, True) or run["outer"] == 6:
        assert len(r.icmp) == 10 and r.wire_packets == 0
    else:
        assert len(r.icmp) == 0 and r.payload_bytes == 10 * mss


BRIDGED = {r["case"]["size"]: r for r in RUNS if r.get("bridged")}


def test_a_bridge_port_turns_an_oversized_df_packet_into_an_icmp_reply():
    """vx0 a port of br0: skb_tunnel_check_pmtu's reply is true (netif_is_any_bridge_port), and in Debian
    5.10.262 / 6.1.192 / 6.12.118 and the recorded 6.18 nothing tests pkt_type, so even this host's own datagram
    becomes an ICMP frag needed that vxlan_encap_bypass hands back (IcmpInDestUnreachs, no IcmpOut: it is not
    icmp_send's) and the packet never leaves. The datagram has DF because it fits br0's route (__ip_make_skb,
    tests/data/ksrc/6.12.118/net/ipv4/ip_output.c); the UDP GSO skb is longer than the route MTU, so it has
    none, gets no reply and leaves as outer fragments."""
    _, br0, vx0, _ = _pair(4, "unset", bridged=True)
    for size, df in ((1322, True), (1323, True)):
        run = BRIDGED[size]
        skb = udp.udp_sendmsg(br0, size).skb
        assert skb is not None
        r = xmit.send(br0, skb, df=df)
        assert len(r.icmp) == run["sender_counters"]["IcmpInDestUnreachs"]
        assert r.pmtu == run["route_mtu_after"]
        assert r.wire_packets == run["b0_frames"]
    assert {e.kind for e in r.icmp} == {"frag_needed"} and r.icmp[0].mtu == UNDERLAY_MTU - vx0.headroom()
    run = BRIDGED[14000]
    gso = udp.udp_sendmsg(br0, 14000, gso_size=1400).skb
    assert gso is not None
    r = xmit.send(br0, gso, df=False)
    assert len(r.icmp) == run["sender_counters"]["IcmpInDestUnreachs"]
    assert _counts(r)["outer_fragments"] == run["b0_fragments"]


@pytest.mark.parametrize("version", DEBIAN)
def test_the_kernel_lines_the_model_follows(version):
    """The lines the tunnel model rests on, the same in the three Debian trees (tests/data/ksrc/<version>/:
    net/ipv4/ip_tunnel_core.c, drivers/net/vxlan/vxlan_core.c, net/ipv4/ip_output.c, net/ipv6/ip6_output.c,
    net/ipv4/route.c, net/ipv6/route.c)."""
    core = (KSRC / version / "net/ipv4/ip_tunnel_core.c").read_text()
    assert "u32 mtu = dst_mtu(encap_dst) - headroom;" in core
    assert "(!skb_is_gso(skb) && (skb->len - skb_network_offset(skb)) <= mtu))" in core
    assert "skb_dst_update_pmtu_no_confirm(skb, mtu);" in core
    assert "\tif (!reply)\n\t\treturn 0;" in core  # no pkt_type == PACKET_HOST test
    assert "if (mtu < 576 || iph->frag_off != htons(IP_DF))" in core
    assert "iph->frag_off\t=\tip_mtu_locked(&rt->dst) ? 0 : df;" in core
    vx = (KSRC / version / "drivers/net/vxlan/vxlan_core.c").read_text()
    assert "netif_is_any_bridge_port(dev));" in vx and "vxlan_headroom(flags & VXLAN_F_GPE)" in vx
    assert "skb_scrub_packet(skb, xnet);" in vx.split("IPv6:")[1]
    out = (KSRC / version / "net/ipv4/ip_output.c").read_text()
    assert "if ((iph->frag_off & htons(IP_DF)) == 0)\n\t\treturn ip_do_fragment(net, sk, skb, output);" in out
    assert "icmp_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED," in out
    assert "segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);" in out
    out6 = (KSRC / version / "net/ipv6/ip6_output.c").read_text()
    assert "if (unlikely(!skb->ignore_df && skb->len > mtu))" in out6
    assert "icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);" in out6
    route = (KSRC / version / "net/ipv4/route.c").read_text()
    assert "= 512 + 20 + 20;" in route or "(512 + 20 + 20)" in route
    assert xmit.IP_RT_MIN_PMTU == 512 + 20 + 20
    assert "if (mtu < IPV6_MIN_MTU)\n\t\treturn;" in (KSRC / version / "net/ipv6/route.c").read_text()


# --- skb_tunnel_check_pmtu on its own, from the source lines --------------------------------------------------


def _inner(size: int, ip: int = 4) -> Skb:
    # a UDP datagram of ``size`` payload bytes as vxlan_xmit_one holds it (inner Ethernet header first)
    dev = netdev.Namespace("6.1").veth("x0", "x1")[0]
    dev.set_mtu(9000)
    skb = udp.udp_sendmsg(dev, size, ip=ip).skb  # type: ignore[arg-type]
    assert skb is not None and not skb.ipfrag
    return skb


def test_check_pmtu_compares_the_inner_packet_with_the_underlay_less_the_header_room():
    # tests/data/ksrc/6.1.192/net/ipv4/ip_tunnel_core.c: mtu = dst_mtu - headroom, skb->len - network offset <= mtu
    fits = xmit.skb_tunnel_check_pmtu(_inner(1322), 1400, 50, route_mtu=1450)
    assert fits.fits and fits.mtu == 1400 - 50 and fits.learned is None
    over = xmit.skb_tunnel_check_pmtu(_inner(1323), 1400, 50, route_mtu=1450)
    assert not over.fits and over.learned == 1400 - 50 and over.icmp is None  # no reply: not a bridge port
    # net/ipv4/route.c __ip_rt_update_pmtu: below ip_rt_min_pmtu (552) the route keeps min(old, 552), locked
    small = xmit.skb_tunnel_check_pmtu(_inner(600), 500, 50, route_mtu=1450)
    assert small.learned == xmit.IP_RT_MIN_PMTU
    # net/ipv6/route.c __ip6_rt_update_pmtu: nothing learned below IPV6_MIN_MTU (an inner IPv6 packet)
    assert xmit.skb_tunnel_check_pmtu(_inner(1320, 6), 1300, 50, ip=6, route_mtu=1450).learned is None
    assert xmit.skb_tunnel_check_pmtu(_inner(1320, 6), 1400, 50, ip=6, route_mtu=1450).learned == 1400 - 50


def test_check_pmtu_reply_needs_df_and_576():
    # tests/data/ksrc/6.12.118/net/ipv4/ip_tunnel_core.c iptunnel_pmtud_check_icmp: mtu >= 576, frag_off == DF
    big = _inner(1500)
    assert xmit.skb_tunnel_check_pmtu(big, 1400, 50, reply=True, df=True).icmp is not None
    assert xmit.skb_tunnel_check_pmtu(big, 1400, 50, reply=True, df=False).icmp is None
    assert xmit.skb_tunnel_check_pmtu(big, 600, 50, reply=True, df=True).icmp is None  # 550 < 576
    assert xmit.skb_tunnel_check_pmtu(big, 626, 50, reply=True, df=True).icmp is not None  # 576


def test_check_pmtu_refuses_an_underlay_without_room_for_the_headers():
    with pytest.raises(ArgumentError, match="encap_mtu must exceed headroom"):
        xmit.skb_tunnel_check_pmtu(_inner(100), 70, 70)
    with pytest.raises(ArgumentError, match="dst_mtu"):
        xmit.skb_tunnel_check_pmtu(_inner(100), 67, 50)  # below ETH_MIN_MTU
    with pytest.raises(ArgumentError, match="vxlan_headroom"):
        xmit.skb_tunnel_check_pmtu(_inner(100), 1400, 0)


def test_set_df_takes_the_three_iproute2_words():
    _, _, vx0, _ = _pair(4, "unset")
    with pytest.raises(ArgumentError):
        vx0.set_df("on")  # type: ignore[arg-type]
    assert vx0.set_df("inherit").outer_df(4, True) and not vx0.outer_df(4, False) and vx0.outer_df(6, False)


@pytest.mark.parametrize("kernel", ["5.10", "5.10.262", "6.1", "6.12", "6.18", "7.3.4"])
@pytest.mark.parametrize("df", ["unset", "set"])
def test_every_kernel_fragments_or_drops_the_outer_packet(kernel, df):
    """The same lines in every tree the profiles come from (test_the_kernel_lines_the_model_follows): an
    outer IPv4 packet over the underlay MTU is fragmented without DF and every byte arrives; with DF it is
    dropped with one ICMP to this host."""
    _, _, vx0, vx1 = _pair(4, df, kernel=kernel)
    t = udp.send_over_vxlan(vx0, vx1, 1400)
    assert t.send.tx is not None and t.send.tx.pmtu == UNDERLAY_MTU - vx0.headroom()
    if df == "set":
        assert t.recv is None and len(t.send.tx.icmp) == 1
    else:
        assert t.recv is not None and t.recv.bytes == 1400 and _counts(t.send.tx)["outer_fragments"] == 2


def test_outer_fragments_carry_every_byte_once():
    # ip_do_fragment's (mtu - 20) & ~7 of the outer IP payload per fragment (tests/data/ksrc/6.1.192/net/ipv4/
    # ip_output.c); the inner L4 payload each holds adds up to the datagram's
    _, _, vx0, vx1 = _pair(4, "unset")
    t = udp.send_over_vxlan(vx0, vx1, 1422)
    assert t.send.tx is not None
    frags = [s for s in t.send.tx.skbs_to_driver if isinstance(s, xmit.OuterFragment)]
    assert [f.data_bytes() for f in frags][0] == (UNDERLAY_MTU - IP_HLEN[4]) & ~7
    assert sum(f.payload_len() for f in frags) == 1422
    assert t.vxlan is not None and t.vxlan.rx_packets == 1


def test_df_inherit_follows_the_inner_df_bit():
    """data/live/pmtu/vxlan_df_inherit.json (6.18, vx0 with df inherit): the 1323-byte datagram fits vx0's route,
    so __ip_make_skb gives it DF (IP_PMTUDISC_WANT, tests/data/ksrc/6.12.118/net/ipv4/ip_output.c), the outer
    header inherits it and the packet is freed with an ICMP; the 3000-byte one is fragmented at vx0, its
    fragments carry no DF, and their outer packets are fragmented and delivered (vxlan_xmit_one
    VXLAN_DF_INHERIT)."""
    rec = {r["case"]["size"]: r for r in json.loads((RECORDING.parent / "vxlan_df_inherit.json").read_text())["runs"]}
    for size, r in rec.items():
        _, _, vx0, vx1 = _pair(4, "inherit")
        skb = udp.udp_sendmsg(vx0, size).skb
        assert skb is not None
        fits_route = skb.network_len() <= vx0.mtu
        tx = xmit.send(vx0, skb, df=fits_route)
        got = _counts(tx)
        assert (got["frames"], got["outer_fragments"], got["icmp"], tx.pmtu) == (
            r["b0_frames"], r["b0_fragments"], r["sender_counters"]["IcmpOutDestUnreachs"], r["route_mtu_after"])
        delivered = xmit.vxlan_rcv(vx1, tx.peer_rx.delivered).delivered if tx.peer_rx is not None else ()
        assert len(delivered) == len(r["datagrams"])
        # udp_sendmsg itself gives the datagram that DF (the socket's default IP_PMTUDISC_WANT)
        _, _, vx0, vx1 = _pair(4, "inherit")
        sent = udp.udp_sendmsg(vx0, size).tx
        assert sent is not None and _counts(sent) == got and sent.pmtu == tx.pmtu


def test_an_ipv6_underlay_below_1280_has_no_route():
    """data/live/pmtu/vxlan6_underlay_below_1280.json (6.18): the underlay lowered to 1000 lost its IPv6
    addresses (net/ipv6/addrconf.c addrconf_notify, tests/data/ksrc/6.12.118/net/ipv6/addrconf.c) and vx0 counted
    each send as a tx carrier error (udp_tunnel6_dst_lookup failed): nothing reached the peer."""
    rec = json.loads((RECORDING.parent / "vxlan6_underlay_below_1280.json").read_text())
    assert rec["a0_ipv6_addrs"] == [] and rec["b0_frames"] == 0 and rec["vx0_tx"]["packets"] == 0
    net = netdev.Namespace("6.18")
    v0, v1 = net.veth("a0", "b0")
    vx0, vx1 = net.vxlan("vx0", vni=42, underlay=v0, ip=6), net.vxlan("vx1", vni=42, underlay=v1, ip=6)
    v0.set_mtu(rec["underlay_mtu"])
    t = udp.send_over_vxlan(vx0, vx1, 100)
    assert t.send.tx is not None and t.recv is None and t.send.tx.wire_packets == rec["b0_frames"]
    assert [where for where, _ in t.send.tx.dropped] == ["vx0"] and "no IPv6 route" in t.send.tx.dropped[0][1]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2")
def test_live_run_agrees():
    """The measurement again on this machine's kernel, compared with the recording where the model is checked."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("live_vxlan_pmtu", Path(__file__).parent / "live_vxlan_pmtu.py")
    assert spec is not None and spec.loader is not None
    live = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(live)
    with live.Pair("set") as p:
        run = p.run({"proto": "udp", "size": 1323, "count": 1})
    assert run["sender_counters"]["IpFragFails"] == 1 and run["route_mtu_after"] == UNDERLAY_MTU - 50
    assert run["datagrams"] == []
