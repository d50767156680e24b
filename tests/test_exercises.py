"""The exercises' answers against values that do not come from vnetlab: the kernel source (file, function,
version), BTF, the QEMU lab's measurements of Debian 6.1 (data/lab/, read here as plain JSON) and the patch mails.
Each expected value says where it comes from. Then the checker's behaviour: right, not answered, wrong with a hint
that does not give the number away."""

import json
import re
from pathlib import Path

import pytest

from vnetlab import exercises

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "data" / "lab" / "6.1"  # Debian 6.1.192 in QEMU

# Kernel constants, each as the source defines it.
ETH_HLEN, IPV4_HLEN, UDP_HLEN = 14, 20, 8  # include/uapi/linux/if_ether.h; struct iphdr without options; udphdr
VNET_HDR_MRG = 12  # sizeof(struct virtio_net_hdr_mrg_rxbuf), include/uapi/linux/virtio_net.h
SHINFO_ALIGNED = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)): 320 in the Debian 6.1 lab's BTF, 64-byte lines
GOOD_PACKET_LEN = ETH_HLEN + 4 + 1500  # drivers/net/virtio_net.c (6.1): ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN


def _lab(name: str) -> dict:
    return json.loads((LAB / f"{name}.json").read_text())


def _lab_rx(name: str) -> list[tuple[int, dict]]:
    rx = _lab(name)["rx"]
    return list(zip(rx["payload_sizes_sent"], rx["packets"]))


def _lab_ethtool_k(phase: str, step: int, dev: str) -> dict[str, str]:
    rows = _lab("mergeable")["features"]["ethtool_k"]
    return next(r["ethtool_k"] for r in rows if (r["phase"], r["step"], r["dev"]) == (phase, step, dev))


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


UDP_GRO_CNT_MAX = 64  # net/ipv4/udp_offload.c (5.10, 6.1): udp_gro_receive_segment completes the skb at 64


def _udp_fraglist_gro_packets(payload: int = 1472, ip_hlen: int = IPV4_HLEN) -> int:
    """Datagrams in one full fraglist GRO skb. net/core/gro.c skb_gro_receive_list (Debian 6.1/6.12;
    net/core/skbuff.c in 5.10): merge while p->len + skb->len < 65536, where skb->len counts from the IP header
    (the MAC header is already pulled) and, once merged, each skb adds its payload (skb_pull of skb_gro_offset:
    IP + UDP headers, pulled by udp_gro_receive_segment); udp_gro_receive_segment flushes at UDP_GRO_CNT_MAX."""
    ip_len = ip_hlen + UDP_HLEN + payload
    count, p_len = 1, ip_len
    while p_len + ip_len < 65536 and count < UDP_GRO_CNT_MAX:
        p_len += payload
        count += 1
    return count


def _lab_segmented_at(kernel: str, route_dev: str) -> list[str]:
    """The QEMU lab's __skb_gso_segment kprobe: the devices that segmented the UDP_SEGMENT datagrams sent
    through ``route_dev`` (data/lab/<kernel>/gso.json, read as plain JSON)."""
    doc = json.loads((ROOT / "data" / "lab" / kernel / "gso.json").read_text())
    return next(c["segmented_at"] for c in doc["gso"]["cases"] if c["route_dev"] == route_dev)


def _expected() -> dict:
    lab_1472 = next(p for size, p in _lab_rx("mergeable") if size == 1472)
    build_skb_2048 = {p["page_to_skb_ret"]["truesize"] for _, p in _lab_rx("mergeable")
                      if p["path"] == "build_skb" and p["page_to_skb"]["truesize"] == 2048}
    assert len(build_skb_2048) == 1
    vlan = _lab_ethtool_k("vlan_macvlan", 0, "eth0.10")
    # skb_gso_ok() (include/linux/netdevice.h): net_gso_ok for SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST, plus
    # NETIF_F_FRAGLIST for an skb with a frag_list; the ethtool names of those three features:
    needed = ("tx-udp-segmentation", "tx-gso-list", "tx-scatter-gather-fraglist")
    vlan_off = [n for n in needed if not vlan[n].startswith("on")]
    assert len(vlan_off) == 1
    after_tx_off = _lab_ethtool_k("vlan_macvlan", 2, "eth0.10")  # step 2: ethtool -K eth0 tx off
    assert after_tx_off["tx-checksum-ip-generic"].startswith("off")
    assert 1536 - VNET_HDR_MRG - (ETH_HLEN + IPV4_HLEN + UDP_HLEN + 1472) < SHINFO_ALIGNED  # 00.2: no room for shinfo
    return {
        # Xuan Zhuo's patch mail (fb32856b16ad): 1158465.00 rxpck/s after, one CPU at 100 % softirq: ns per packet
        "00.1": round(1e9 / 1158465, 1),
        # page_to_skb (v5.13, and 6.1 alike): tailroom = 1536 - hdr_padded_len 12 - the 1514-byte frame = 10 bytes,
        # below SKB_DATA_ALIGN(shinfo) 320 (asserted above); the QEMU lab's Debian 6.1 recorded this path for it
        "00.2": lab_1472["path"],
        # c3df39ac9b0e's commit message and the lab's 5.10-revert-3d6df63a5cbe router run (one intact datagram per
        # GRO skb): 1 in N, N = datagrams in a full fraglist GRO skb of 1000-byte datagrams
        "00.3": round(1 / _udp_fraglist_gro_packets(1000), 3),
        # ETH_HLEN + IPv4 header + TCP header (20) with TCPOLEN_TSTAMP_ALIGNED (12, include/net/tcp.h) + payload
        "05.1": ETH_HLEN + IPV4_HLEN + 20 + 12 + 1000,
        # page_to_skb (v5.10): copy = min(len, skb_tailroom(napi_alloc_skb(GOOD_COPY_LEN))) = 128 bytes into the
        # head; the rest of the 1066-byte TCP frame (05.1) stays in frag 0
        "05.2": ETH_HLEN + IPV4_HLEN + 20 + 12 + 1000 - 128,
        # add_recvbuf_mergeable (6.1): 32768 = 20 x 1536 + a last buffer of 1536 + the 512-byte hole; page_to_skb
        # (6.1): tailroom = truesize - headroom - hdr_padded_len - len
        "10.1": 2048 - 0 - VNET_HDR_MRG - (ETH_HLEN + IPV4_HLEN + UDP_HLEN + 1200),
        # QEMU lab, Debian 6.1: truesize of every skb built around a 2048-byte buffer (kprobe on page_to_skb return)
        "10.2": build_skb_2048.pop(),
        # add_recvbuf_small (6.1): SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN + VIRTIO_XDP_HEADROOM)
        # + SKB_DATA_ALIGN(sizeof(shinfo)); VIRTNET_RX_PAD = NET_IP_ALIGN 0 + NET_SKB_PAD 64 on x86_64
        "10.3": _align(VNET_HDR_MRG + 64 + GOOD_PACKET_LEN + 256, 64) + SHINFO_ALIGNED,
        # include/net/sock.h SKB_FRAG_PAGE_ORDER = get_order(32768) = 0 with 64 KiB pages, so
        # skb_page_frag_refill (net/core/sock.c, 6.1) takes one 65536-byte page; get_mergeable_buf_len gives
        # ALIGN(12 + 1518, L1_CACHE_BYTES 64 on arm64) = 1536; add_recvbuf_mergeable gives the hole to the last
        "10.4": 65536 // _align(VNET_HDR_MRG + GOOD_PACKET_LEN, 64),
        # receive_mergeable (6.1) adds head_skb->len (2042: the frame) to DECLARE_EWMA(pkt_len, 0, 64), whose first
        # add sets it and whose later adds of the same value keep it; get_mergeable_buf_len: ALIGN(12 + 2042, 64)
        "10.5": _align(VNET_HDR_MRG + ETH_HLEN + IPV4_HLEN + UDP_HLEN + 2000, 64),
        # page_to_skb (6.1): frame <= truesize - hdr_padded_len - SKB_DATA_ALIGN(shinfo); frame = payload + 42
        "20.1": 2048 - VNET_HDR_MRG - SHINFO_ALIGNED - (ETH_HLEN + IPV4_HLEN + UDP_HLEN),
        # ppc64: L1_CACHE_SHIFT 7 (arch/powerpc/include/asm/cache.h), so SKB_DATA_ALIGN(shinfo) = 384
        "20.2": 2048 - VNET_HDR_MRG - 384 - (ETH_HLEN + IPV4_HLEN + UDP_HLEN),
        # SKB_FRAG_PAGE_ORDER get_order(32768) = 0 on 64 KiB pages: one 65536-byte frag = 41 x 1536 + one 2560-byte
        # hole buffer; 2560 - 12 - 1514 >= SKB_DATA_ALIGN(shinfo), 1536 - 12 - 1514 = 10 is not
        "20.3": round(1 / (65536 // _align(VNET_HDR_MRG + GOOD_PACKET_LEN, 64)), 3),
        # receive_mergeable adds head_skb->len (3042) to DECLARE_EWMA(pkt_len, 0, 64); get_mergeable_buf_len then
        # gives ALIGN(12 + 3042, 64) = 3072 (or less while the EWMA is still below 3042), leaving at most
        # 3072 - 12 - 3042 = 18 bytes of tailroom < 320: page_to_skb copies the header and adds the rest as a frag
        "20.4": "copy+frag",
        # get_mergeable_buf_len (6.1): ALIGN(hdr_len + clamp(ewma 9014, 1518, PAGE_SIZE - hdr_len), 64) = 4096;
        # page_to_skb: frame <= 4096 - 12 - SKB_DATA_ALIGN(shinfo); payload = frame - 42
        "20.5": _align(VNET_HDR_MRG + min(ETH_HLEN + 9000, 4096 - VNET_HDR_MRG), 64) - VNET_HDR_MRG - SHINFO_ALIGNED
        - (ETH_HLEN + IPV4_HLEN + UDP_HLEN),
        # net/core/skbuff.c skb_gro_receive (v5.10) case 2: a merged packet with a page-frag head (headlen > offset,
        # head_frag) gives its stolen head one slot and its one page frag another; the first packet's 128-byte head
        # is the GRO skb's linear part and its frag the first slot; PSH ends the flow (tcp_gro_receive flush)
        "30.1": 1 + 2 * (6 - 1),
        # net/core/gro.c skb_gro_receive (6.1): refuse once p->len + len >= gro_max_size (65536); p->len starts at
        # the first packet from its IP header (20 + 32 + 1000) and grows by each merged payload (1000): merge k is
        # refused once p->len after k - 1 merges plus 1000 reaches 65536
        "30.2": 1 + max(k for k in range(100) if IPV4_HLEN + 32 + 1000 + 1000 * k < 65536),
        # net/ipv4/udp_offload.c udp4_gro_receive (6.1): NETIF_F_GRO_UDP_FWD aggregates without a socket;
        # udp_gro_receive_segment pulls the UDP header, so skb_gro_receive adds 1200 per packet to p->len
        # (IP + UDP + 1200 for the first) below 65536, and UDP_GRO_CNT_MAX (64) is not reached
        "30.3": min(UDP_GRO_CNT_MAX, 1 + max(k for k in range(100) if IPV4_HLEN + UDP_HLEN + 1200 + 1200 * k < 65536)),
        # include/linux/skbuff.h (Debian 6.1): MAX_SKB_FRAGS = 65536/PAGE_SIZE + 1 but at least 16 -> 16 on 64 KiB;
        # skb_gro_receive case 1: each header-only packet's one frag takes one slot, the first packet's included
        "30.4": 16,
        # v5.10 include/linux/netdev_features.h: NETIF_F_GSO_SOFTWARE = ALL_TSO | GSO_SCTP (no GSO_UDP_L4), and
        # net/8021q/vlan_dev.c (v5.10) vlan_dev_init / vlan_dev_fix_features give the VLAN no more than that, so
        # validate_xmit_skb segments at eth0.10; net/ipv4/udp_offload.c __udp_gso_segment: one segment per gso_size
        "40.1": -(-24000 // 1200),
        # drivers/net/macvlan.c (Debian 6.1/6.12) macvlan_fix_features: features |= ALWAYS_ON_FEATURES, which hold
        # NETIF_F_GSO_SOFTWARE (with GSO_UDP_L4 since v5.11): mv0 passes, eth0 (USO off) segments in software:
        # __udp_gso_segment cuts ceil(26400 / 1200) skbs. The running 6.18 kernel shows the same: a macvlan keeps
        # tx-udp-segmentation "on [fixed]" after its veth turned it off.
        "40.2": -(-26400 // 1200),
        # the running 6.18 kernel (notebook 60's bridge cell, two veth ports, v1 off): br0 keeps it "on";
        # net/bridge/br_if.c br_features_recompute + net/core/dev.c netdev_increment_features: a ONE_FOR_ALL bit
        # is kept if any port has it
        "40.3": True,
        # QEMU lab, Debian 6.1: `ethtool -k eth0.10` on virtio_net has one of the three features skb_gso_ok needs off,
        # so validate_xmit_skb segments there: skb_segment_list (net/core/skbuff.c) unchains every member, one per
        # 1472-byte datagram of the 39,744 bytes
        "40.4": 39744 // 1472 if vlan_off else 1,
        # QEMU lab, 5.10-2e4ef10f5850 (Debian 5.10.223 + the patch): __skb_gso_segment ran at br0 for br0's route,
        # so br0 hands eth0 the segments: ceil(11700 / 900) (__udp_gso_segment)
        "40.5": -(-11700 // 900) if _lab_segmented_at("5.10-2e4ef10f5850", "br0") == ["br0"] else 1,
        # v5.10: GSO_FRAGLIST is not in NETIF_F_GSO_SOFTWARE (include/linux/netdev_features.h) nor in bond_setup's
        # hw_features (drivers/net/bonding/bond_main.c), so bond0 segments with skb_segment_list: one skb per
        # datagram of a full fraglist GRO skb of 1200-byte datagrams
        "50.1": _udp_fraglist_gro_packets(1200),
        # net/core/dev.c: one dev_queue_xmit at eth0.10 (the routed skb), then vlan_dev_hard_start_xmit calls
        # dev_queue_xmit on eth0 once per segment of the full GRO skb of 1400-byte datagrams
        "50.2": 1 + _udp_fraglist_gro_packets(1400),
        # the link (1 Gbps, the seed's "1 Gbps / link speed") carries 1200-byte payloads in frames of
        # 1200 + UDP 8 + IPv4 20 + Ethernet 14 + VLAN 4 + 24 (preamble, FCS, gap: IEEE 802.3); before c3df39ac9b0e
        # only the head of each GRO skb is NATed: divide by N
        "50.3": round(1e9 * 1200 / (1200 + 8 + 20 + 14 + 4 + 24) / _udp_fraglist_gro_packets(1200) / 1e6, 1),
        # c3df39ac9b0e's commit message ("UDP/IP header of UDP GROed frag_skbs are not updated even after NAT
        # forwarding") and Lobakin's mail of 15 Jan 2021: only the head of each fraglist GRO skb is translated
        "50.4": round(1 / 20, 3),
        # Debian 5.10.223 net/ipv4/udp_offload.c __udp_gso_segment_list (line 257): "return is_ipv6 ? skb :
        # __udpv4_gso_segment_list_csum(skb)": the backported fix rewrites IPv4 segments only, so NAT66 keeps one
        # translated head per full fraglist GRO skb of 1452-byte datagrams (40-byte IPv6 header)
        "50.5": _udp_fraglist_gro_packets(1452, ip_hlen=40),
        # net/core/dev.c netdev_fix_features (Debian 6.12, and the running 6.18): "Dropping USO feature since no
        # CSUM feature"
        "60.1": False,
        # QEMU lab, Debian 6.1: after `ethtool -K eth0 tx off`, eth0.10 still shows tx-udp-segmentation on
        # (6.1's netdev_fix_features has no USO rule)
        "60.2": after_tx_off["tx-udp-segmentation"].startswith("on"),
        # include/linux/udp.h (v5.10, and Debian 5.10.223): UDP_MAX_SEGMENTS (1 << 6); net/ipv4/udp.c udp_send_skb:
        # "if (datalen > cork->gso_size * UDP_MAX_SEGMENTS) return -EINVAL"
        "60.3": 500 * (1 << 6),
        # include/linux/skbuff.h (6.18): struct skb_shared_info ends in frags[MAX_SKB_FRAGS] of 16-byte skb_frag_t;
        # the running 6.18.44's BTF (pahole alike) puts frags at offset 48, so 45 frags make 48 + 45 x 16 = 768
        # (a multiple of 64, SKB_DATA_ALIGN leaves it); page_to_skb (v5.13+) needs vnet header + frame + 768
        # within the 1536-byte buffer
        "65.1": 1536 - VNET_HDR_MRG - (48 + 45 * 16) - (ETH_HLEN + IPV4_HLEN + UDP_HLEN),
    }


EXPECTED = _expected()


def test_every_exercise_has_an_independent_expected_value():
    assert set(EXPECTED) == set(exercises.EXERCISES)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_model_answer_matches_the_kernel(key):
    assert exercises.check(key, EXPECTED[key]), (key, EXPECTED[key], exercises.solution(key))


def test_notebook_keys_exist():
    # the notebooks' checker cells use these keys (tools/nbtools.py reads them)
    cells = " ".join(p.read_text() for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    used = set(re.findall(r'exercises\.check\(\\"(\d\d\.\d+)\\"', cells))
    assert used and used <= set(exercises.EXERCISES)


@pytest.mark.parametrize("key", sorted(exercises.EXERCISES))
def test_unanswered_says_so(key):
    verdict = exercises.check(key, None)
    assert not verdict and not verdict.answered
    assert exercises.NOT_ANSWERED in repr(verdict) and "Hint" not in repr(verdict)


def _wrong(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1]
    return value + 7


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_wrong_answer_gets_a_hint_not_the_number(key):
    value = EXPECTED[key]
    verdict = exercises.check(key, _wrong(value))
    text = repr(verdict)
    assert not verdict and verdict.answered and "✗" in text and "Hint:" in text
    hint = text.split("Hint:", 1)[1]
    if isinstance(value, str):
        assert value not in hint
    elif isinstance(value, list):
        assert str(value) not in hint
    elif not isinstance(value, bool):
        shown = {str(value), f"{value:g}", f"{value:,}"}
        assert not any(re.search(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)", hint) for s in shown), hint


def test_wrong_kind_of_answer_is_named():
    assert "a number" in repr(exercises.check("10.1", "482"))
    assert "True or False" in repr(exercises.check("40.3", 1))
    assert not exercises.check("40.3", 1)  # 1 is not True here


def test_tolerance():
    assert exercises.check("00.1", 863.24) and not exercises.check("00.1", 863.3)


def test_unknown_exercise():
    with pytest.raises(ValueError, match="exercise '9.9' does not exist"):
        exercises.check("9.9", 1)


# --- Worked solutions: the reasoning the answer key prints (docs/answer_key.py) -------------------------------------

_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
# "2048 - 12 - 1242 = 794", "1228 + 53 x 1200 = 64,828", "944.9 / 54 = 17.5": a chain of + - x / and its result
_CHAIN = re.compile(rf"(?<![\w.(^]){_NUM}(?:\s*[-+x/]\s*{_NUM})+\s*=\s*{_NUM}(?![\w(^])")


def _arithmetic(text: str) -> list[tuple[str, float, float]]:
    """(expression, its value, the value the text states) for every arithmetic chain in ``text``."""
    found = []
    for m in _CHAIN.finditer(text.replace("10^9", "1000000000")):
        left, right = m.group(0).rsplit("=", 1)
        value = eval(left.replace(",", "").replace("x", "*"), {"__builtins__": {}})  # digits and + - * / only
        decimals = len(right.strip().split(".")[1]) if "." in right else 0
        found.append((m.group(0), round(value, decimals), float(right.strip().replace(",", ""))))
    return found


def _states(answer, text: str) -> bool:
    if isinstance(answer, bool) or isinstance(answer, str):
        return re.search(rf"(?<![\w+-]){re.escape(str(answer))}(?![\w+-])", text) is not None
    shown = {f"{answer:g}", f"{answer:,}"} if isinstance(answer, float) else {str(answer), f"{answer:,}"}
    return any(re.search(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)", text) for s in shown)


@pytest.mark.parametrize("key", sorted(exercises.EXERCISES))
def test_every_exercise_has_a_worked_solution_that_reaches_its_answer(key):
    """The worked solution states the checker's answer, and every arithmetic chain in it adds up."""
    text = exercises.worked(key)
    assert len(text.split()) >= 15, f"{key}: no worked solution (the reasoning, not only the number)"
    answer = exercises.solution(key)
    assert _states(answer, text), f"{key}: its worked solution never states {answer!r}"
    wrong = [(expr, got) for expr, got, stated in _arithmetic(text) if got != stated]
    assert not wrong, f"{key}: {wrong}"


def test_arithmetic_check_catches_a_wrong_sum():
    # source: the sums themselves (10.1's and 50.1's worked solutions), checked digit by digit here
    assert _arithmetic("2048 - 12 - 1242 = 794 and 1228 + 53 x 1200 = 64,828") == [
        ("2048 - 12 - 1242 = 794", 794, 794), ("1228 + 53 x 1200 = 64,828", 64828, 64828)]
    assert [e for e, got, stated in _arithmetic("1/63 = 0.017") if got != stated] == ["1/63 = 0.017"]
    assert not _states(794, "a tailroom of 1794 bytes") and _states(0.05, "1 of 20 = 0.05.")
