"""Rules a source review of the Debian trees found wrong or missing, each from its line in the tree.

tests/data/ksrc/<version>/ holds the excerpts (each names the Debian package, file and lines): Debian
linux-source-5.10 (5.10.262-1), -6.1 (6.1.192-3), -6.12 (6.12.117-1~deb12u1 and 6.12.118-1~deb12u1, the newest 6.12
Debian serves: bookworm-security and trixie-security) and -7.3 (7.3.4-1~bpo13+1).
"""

from pathlib import Path

import pytest

from lab.probes import PROBES, Tree
from vnetlab import gro, rx, rxbuf
from vnetlab.profiles import kernel

KSRC = Path(__file__).parent / "data" / "ksrc"


def probe(rule: str):
    return next(p for p in PROBES if p.rule == rule)


# ------------------------------------------------------------------ tcp_gro_receive's CWR-only flush

@pytest.mark.parametrize("tree, flushes, line", [
    ("5.10.262", True, "flush |= (__force int)(flags & TCP_FLAG_CWR);"),  # net/ipv4/tcp_offload.c:242
    ("6.1.192", True, "flush |= (__force int)(flags & TCP_FLAG_CWR);"),  # :316
    ("6.12.117", True, "flush = (__force int)(flags & TCP_FLAG_CWR);"),  # :330
    ("6.12.118", True, "flush = (__force int)(flags & TCP_FLAG_CWR);"),
    ("7.3.4", False, None),  # ab4c8b6f7fcb: only `flush = (flags ^ tcp_flag_word(th2)) & ~(FIN | PSH)` (:307)
])
def test_cwr_flush_probe(tree, flushes, line):
    f = probe("tcp_cwr_flush").run(Tree(KSRC / tree))
    assert f.value is flushes and f.found is flushes
    if line:
        assert f.match.text.strip() == line


def _tcp(flags, k):
    # 1448-byte MSS segments (an Ethernet MTU with timestamps), each in its own hole-extended 2048-byte buffer
    skbs = [rx.receive(1448, l4="tcp", kernel=k, buf_len=2048).skb for _ in flags]
    return [gro.gro_segs(s) for s in gro.aggregate(skbs, kernel=k, tcp_flags=flags)]


def _stream(flags, k):
    bits = [gro.flag_bits(f, i) for i, f in enumerate(flags)]
    stats = gro.simulate_stream(payload_len=[1448] * len(flags), buf_lens=[2048] * len(flags), kernel=k,
                                napi_budget=None, tcp_flags=bits)
    return stats.segs_per_skb.tolist()


ACK_CWR = {"ACK", "CWR"}


@pytest.mark.parametrize("k, all_cwr, ack_then_cwr", [
    # up to 6.18 each CWR segment flushes the held skb and is held itself (out_check_final: flush = len < mss
    # with mss = 1, so NAPI_GRO_CB(skb)->flush stays 0): every skb carries one segment.
    ("6.12.117", [1, 1, 1, 1], [1, 1, 1, 1]),
    ("5.10.262", [1, 1, 1, 1], [1, 1, 1, 1]),
    # 7.x: equal flags merge (CWR included); the first ACK|CWR differs from the held ACK, flushes it and is
    # held, the next two merge into it.
    ("7.3.4", [4], [1, 3]),
    ("7.2.12", [4], [1, 3]),
])
def test_cwr_segments_per_kernel(k, all_cwr, ack_then_cwr):
    assert _tcp([ACK_CWR] * 4, k) == all_cwr
    assert _tcp([{"ACK"}] + [ACK_CWR] * 3, k) == ack_then_cwr
    assert _stream([ACK_CWR] * 4, k) == all_cwr
    assert _stream([{"ACK"}] + [ACK_CWR] * 3, k) == ack_then_cwr


# ------------------------------------------------------------------ 5.10.262's inert NETIF_F_GRO_UDP_FWD

def test_gro_udp_fwd_is_inert_on_5_10_262():
    # include/linux/netdev_features.h:87 has NETIF_F_GRO_UDP_FWD_BIT (5.10.231's backport), udp_gro_receive
    # (net/ipv4/udp_offload.c:594..) tests only NETIF_F_GRO_FRAGLIST: a forwarded flow merges nothing.
    f = probe("gro_udp_fwd").run(Tree(KSRC / "5.10.262"))
    assert f.value is False and not f.found
    feats = {"GRO", "GRO_UDP_FWD"}
    skbs = [rx.receive(1000, l4="udp", kernel="5.10.262", buf_len=2048).skb for _ in range(8)]
    out = gro.aggregate(skbs, l4="udp", kernel="5.10.262", features=feats, local_socket=False)
    assert [gro.gro_segs(s) for s in out] == [1] * 8
    stats = gro.simulate_stream(8, 1000, l4="udp", kernel="5.10.262", features=feats, local_socket=False)
    assert stats.segs_per_skb.tolist() == [1] * 8
    # 6.1.192 udp_gro_receive: `if ((!sk && (skb->dev->features & NETIF_F_GRO_UDP_FWD)) ||` aggregates
    out = gro.aggregate([rx.receive(1000, l4="udp", kernel="6.1", buf_len=2048).skb for _ in range(8)], l4="udp",
                        kernel="6.1", features=feats, local_socket=False)
    assert [gro.gro_segs(s) for s in out] == [8]
    # 5.10.223 has no such bit (include/linux/netdev_features.h of 5.10.223-1): asking for it is an error
    with pytest.raises(ValueError, match="GRO_UDP_FWD does not exist in kernel 5.10.223"):
        gro.flow_params(l4="udp", kernel="5.10.223", features=feats)


def test_ethtool_turns_gro_udp_fwd_on_and_the_veth_path_merges_nothing():
    # 5.10.262: `ethtool -K vb rx-gro on rx-udp-gro-forwarding on` (net/core/dev.c:10016 puts
    # NETIF_F_SOFT_FEATURES_OFF, GRO_FRAGLIST | GRO_UDP_FWD, into hw_features) and an XDP program on vb, so veth_xmit
    # hands the skbs to vb's NAPI and GRO (drivers/net/veth.c); a 10 x 1400 UDP_SEGMENT send is segmented on the
    # way (XDP takes no GSO), and udp_gro_receive, which never tests the bit, merges none of the 10 datagrams of
    # 1428 bytes (20 + 8 + 1400).
    from vnetlab import netdev, udp

    a, b = netdev.Namespace(kernel="5.10.262").veth("va", "vb")
    b.set_xdp(True)
    b.ethtool_K({"rx-gro": True, "rx-udp-gro-forwarding": True})
    assert {"GRO", "GRO_UDP_FWD"} <= set(b.features)
    t = udp.send_over_veth(a, 14000, gso_size=1400)
    assert t.rx is not None and set(t.rx.paths) == {"napi"}
    assert [s.len for s in t.rx.delivered] == [1428] * 10
    assert t.recv is not None and t.recv.bytes == 14000


# ------------------------------------------------------------------ 6.12's sizeof(struct virtnet_rq_dma) reserve

@pytest.mark.parametrize("tree, reserve", [("5.10.262", 0), ("6.1.192", 0), ("6.12.117", 16), ("6.12.118", 16),
                                           ("7.3.4", 0)])
def test_dma_reserve_probe(tree, reserve):
    # drivers/net/virtio_net.c:2593-2594 (6.12.117) add_recvbuf_mergeable: `if (!alloc_frag->offset && len + room +
    # sizeof(struct virtnet_rq_dma) > alloc_frag->size)` / `len -= sizeof(struct virtnet_rq_dma);`, and
    # struct virtnet_rq_dma {dma_addr_t addr; u32 ref; u16 len; u16 need_sync;} = 16 bytes on 64-bit.
    f = probe("mergeable_dma_reserve").run(Tree(KSRC / tree))
    assert f.value == reserve
    if reserve:
        assert f.match.text.strip() == "len -= sizeof(struct virtnet_rq_dma);"


@pytest.mark.parametrize("arch, page, buf", [("x86_64", 4096, 4080), ("arm64-64k", 65536, 65520)])
def test_xdp_buffers_on_one_page_frags_in_6_12(arch, page, buf):
    # With XDP, len = PAGE_SIZE - room, so len + room + 16 > PAGE_SIZE on a one-page frag (x86's order-0
    # fallback; always on 64 KiB pages, SKB_FRAG_PAGE_ORDER 0): len -= 16 and, with headroom, the hole is not
    # given back (`if (!headroom) len += hole;`): ctx truesize = len + room = PAGE_SIZE - 16.
    assert rx.mergeable_buf_lens(3, kernel="6.12.117", xdp=True, frag_size=page, arch=arch) == [buf] * 3
    # 6.1.192 and 7.3.4 have no such cut (6.1: ctx = len = PAGE_SIZE - room; 7.3.4: page_pool, PAGE_SIZE)
    assert rx.mergeable_buf_lens(1, kernel="7.3.4", xdp=True, arch=arch) == [page]
    # without XDP the 16 bytes come back through the hole rule (add_recvbuf_mergeable, drivers/net/virtio_net.c):
    # 1536 (docs/kernel/rx.md#a5) then the page's rest
    assert rx.mergeable_buf_lens(2, kernel="6.12.117", frag_size=4096) == [1536, 2560]


def test_xdp_pass_skb_is_built_on_the_ctx_truesize():
    # mergeable_xdp_get_buf (:2119) `*frame_sz = truesize;` (the ctx's), build_skb_from_xdp_buff (:1974)
    # `build_skb(xdp->data_hard_start, xdp->frame_sz)`: size = frame_sz - SKB_DATA_ALIGN(sizeof(skb_shared_info))
    # (320, BTF), truesize = SKB_TRUESIZE(size) = size + 256 (SKB_DATA_ALIGN(sizeof(struct sk_buff)) 224 -> 256)
    # + 320 (include/linux/skbuff.h).
    r = rx.receive(1000, kernel="6.12.117", xdp=True, frag_size=4096)
    assert (r.path, r.buffers[0].truesize) == ("build_skb", 4080)
    assert (r.skb.truesize, r.skb.end_offset) == (4080 - 320 + 256 + 320, 4080 - 320)
    r = rx.receive(1000, kernel="6.12.117", xdp=True)  # the usual 32 KiB frag: a whole page per buffer
    assert (r.skb.truesize, r.skb.end_offset) == (4096 + 256, 4096 - 320)


def test_6_12_118_changes_no_rule():
    # Debian 6.12.118-1~deb12u1 (bookworm-security) against 6.12.117: of the files the probes read only
    # net/core/dev.c (qdisc_pkt_len_init, __netif_receive_skb_core's VLAN untag depth), drivers/net/veth.c
    # (veth_set_channels' carrier) and vxlan_core.c (nexthop fdb) differ, none a modelled rule; its excerpts
    # decide what 6.12.117's profile says.
    t = Tree(KSRC / "6.12.118")
    assert t.version == "6.12.118"
    for rule in ("tcp_cwr_flush", "tcp_flags_not_compared"):
        assert probe(rule).run(t).value == kernel("6.12.117").table("gro")[rule], rule
    assert probe("mergeable_dma_reserve").run(t).value == kernel("6.12.117").rule("mergeable_dma_reserve")


def test_receive_big_check_dates():
    # Debian linux-source-6.1 (6.1.192-3) changelog: ChangeLog-6.1.159 "virtio-net: fix received length check in
    # big packets" (the 'pages' form), ChangeLog-6.1.178 "virtio-net: fix len check in receive_big()" (the
    # 'padded' form); 6.12: ChangeLog-6.12.58 and ChangeLog-6.12.97.
    doc = rxbuf.receive_big_max_frame.__doc__
    assert '"padded", 6.1.178+ /\n    6.12.97+' in doc and '"pages", 6.1.159..177 / 6.12.58..96' in doc


# ------------------------------------------------------------------ page_pool fragment alignment, mips32 DMA alignment

@pytest.mark.parametrize("tree, rule", [("7.2.12", "dma"), ("7.3.4", "dma_shinfo")])
def test_page_pool_frag_align_probe(tree, rule):
    # net/core/page_pool.c:1076 page_pool_alloc_frag_netmem: 7.2.12 `size = ALIGN(size, dma_get_cache_alignment());`,
    # 7.3.4 `size = ALIGN(size, max_t(unsigned int, dma_get_cache_alignment(),` `__alignof__(struct skb_shared_info)));`
    f = probe("page_pool_frag_align").run(Tree(KSRC / tree))
    assert f.value == rule and f.match.text.strip().startswith("size = ALIGN(size, ")


def test_page_pool_fragments_align_to_skb_shared_info_on_7_3_4():
    # x86_64: dma_get_cache_alignment() is 1 (no ARCH_DMA_MINALIGN, data/arches.toml), __alignof__(struct
    # skb_shared_info) 8 (its pointers and s64 hwtstamps; BTF 6.18): 100-byte fragments at 0, 100, 200 on 7.2.12
    # and 0, 104, 208 on 7.3.4. virtio-net's own requests (multiples of L1_CACHE_BYTES) do not move.
    from vnetlab.profiles import arch

    for k, starts in (("7.2.12", [0, 100, 200]), ("7.3.4", [0, 104, 208])):
        pool = rxbuf.rx_page_allocator(kernel(k), arch("x86_64", kernel=k))
        assert [pool.alloc(100)[1] for _ in range(3)] == starts, k
    assert rx.mergeable_buf_lens(2, avg_pkt_len=1588, kernel="7.3.4") == [1600, 2496]  # as 7.2.12 (test_rx.py)


def test_mips32_router_socs_align_dma_to_a_cache_line():
    # arch/mips/include/asm/mach-ralink/kmalloc.h:6 and mach-ath79/kmalloc.h:5: ARCH_DMA_MINALIGN L1_CACHE_BYTES
    # (32 with CONFIG_MIPS_L1_CACHE_SHIFT 5); mach-generic/kmalloc.h:10: 128 under CONFIG_DMA_NONCOHERENT only
    # (tests/data/ksrc/7.3.4, whole files).
    mips = KSRC / "7.3.4" / "arch" / "mips" / "include" / "asm"
    assert "#define ARCH_DMA_MINALIGN\tL1_CACHE_BYTES" in (mips / "mach-ralink" / "kmalloc.h").read_text()
    assert "#define ARCH_DMA_MINALIGN\tL1_CACHE_BYTES" in (mips / "mach-ath79" / "kmalloc.h").read_text()
    assert "#ifdef CONFIG_DMA_NONCOHERENT" in (mips / "mach-generic" / "kmalloc.h").read_text()
    from vnetlab.profiles import arch

    a = arch("mips32", kernel="7.3.4")
    assert (a.dma_cache_alignment, a.l1_cache_bytes) == (32, 32)
    # 7.3.4's page_pool: max(32, __alignof__(struct skb_shared_info) = 8 under o32) = 32
    assert rxbuf.page_pool_frag_align(kernel("7.3.4"), a) == 32


def test_udp_rule_dates():
    # Debian changelogs: ChangeLog-5.10.235, -6.1.129 and -6.12.14 "udp: gso: do not drop small packets when PMTU
    # reduces" (235174b2bed8); ChangeLog-6.1.107 "net: change maximum number of UDP segments to 128" (1382e3b6a350,
    # v6.9). net/ipv4/udp.c:926-928 (5.10.262) already fails the min(datalen, gso_size) test with EMSGSIZE.
    from vnetlab import udp

    assert "stable 5.10.235, 6.1.129 and\n  6.12.14" in udp.__doc__ and "v6.9; stable 6.8.y and 6.1.107" in udp.__doc__
    assert kernel("5.10.262").rule("udp_gso_mtu_check") == "min_datalen"
    assert probe("udp_gso_mtu_check").run(Tree(KSRC / "5.10.262")).value == "min_datalen"
