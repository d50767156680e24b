"""lab.probes and `python -m lab profile`: rules read from kernel source, and the corrections they brought.

Expected values come from the Debian trees: tests/data/ksrc/<version>/ holds excerpts (each file says which package,
file and lines it was cut from) of Debian linux-source-5.10 (5.10.262-1), -6.1 (6.1.192-3), -6.12 (6.12.95-1~bpo12+1
and 6.12.117-1~deb12u1) and -7.3 (7.3.4-1~bpo13+1). The whole-tree tests run where `python -m lab profile` has
unpacked those packages under lab/work/trees/ and skip elsewhere.
"""

from pathlib import Path

import pytest

import vnetlab
from lab import profile as lab_profile
from lab.probes import HAND_WRITTEN, PROBES, ProbeError, Tree
from vnetlab import gro, rx
from vnetlab.profiles import kernel, known_kernels

KSRC = Path(__file__).parent / "data" / "ksrc"
WORK = Path(__file__).parent.parent / "lab" / "work" / "trees"


def probe(rule: str):
    return next(p for p in PROBES if p.rule == rule)


@pytest.mark.parametrize("tree, size, line", [
    ("5.10.262", 16, "char padding[4];"),  # struct virtio_net_hdr_mrg_rxbuf hdr (12) + padding[4]
    ("6.1.192", 32, "char padding[12];"),  # struct virtio_net_hdr_v1_hash hdr (20) + padding[12]
    ("6.12.95", 32, "char padding[12];"),
    ("7.3.4", 32, "char padding[12];"),
])
def test_padded_vnet_hdr_probe(tree, size, line):
    f = probe("padded_vnet_hdr_len").run(Tree(KSRC / tree))
    assert (f.value, f.match.text.strip(), f.match.file) == (size, line, "drivers/net/virtio_net.c")


def test_padded_vnet_hdr_per_kernel_in_the_profiles():
    # c1ddc42da2b2 (v5.18) made it 32; every profile before that has the 16-byte struct (Debian 5.10 trees above).
    for k in known_kernels():
        assert kernel(k).rule("padded_vnet_hdr_len") == (16 if kernel(k) < "5.18" else 32), k


@pytest.mark.parametrize("k, limit", [("5.13", 3760), ("6.1", 3744), ("7.3.4", 3744)])
def test_big_mode_build_skb_limit(k, limit):
    # page_to_skb: tailroom = PAGE_SIZE - 0 - sizeof(padded_vnet_hdr) - len >= SKB_DATA_ALIGN(shinfo) (320):
    # 4096 - 16 - 320 = 3760 before v5.18, 4096 - 32 - 320 = 3744 after.
    assert rx.page_to_skb(limit, 4096, mode="big", kernel=k).path == "build_skb"
    assert rx.page_to_skb(limit + 1, 4096, mode="big", kernel=k).path != "build_skb"


@pytest.mark.parametrize("k, first_frag_offset", [("5.13", 16 + 14), ("6.1", 32 + 14)])
def test_big_mode_copy_path_frag_starts_after_the_padded_header(k, first_frag_offset):
    # page_to_skb copy path: frame > 3760/3744 -> copy ETH_HLEN, the first frag starts at hdr_padded_len + 14.
    skb = rx.page_to_skb(4000, 4096, mode="big", kernel=k).skb
    assert skb.frags[0].offset == first_frag_offset


@pytest.mark.parametrize("tree, bound, needle", [
    ("5.10.262", "none", None),
    ("6.12.95", "pages", "if (unlikely(len > (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE)) {"),
    ("6.12.117", "padded", "max_len = (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE -"),
    ("6.1.192", "padded", "max_len = (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE -"),
])
def test_receive_big_bound_probe(tree, bound, needle):
    f = probe("receive_big_len_check").run(Tree(KSRC / tree))
    assert f.value == bound and f.found == (needle is not None)
    if needle:
        assert f.match.text.strip() == needle


@pytest.mark.parametrize("k, max_frame", [("5.10.223", 17 * 4096 - 16), ("6.12", 17 * 4096 - 32)])
def test_receive_big_takes_what_max_skb_frags_hold(k, max_frame):
    # add_recvbuf_big chains sg[1] (from sizeof(padded_vnet_hdr): 16 B before v5.18, 32 after, docs/kernel/rx.md#a0) to
    # the page end, then MAX_SKB_FRAGS whole pages; page_to_skb adds one frag per page, and skb_shinfo()->frags[]
    # holds MAX_SKB_FRAGS (17, include/linux/skbuff.h): 17 frags from that offset, the chain's last page never used.
    skb = rx.receive_big(max_frame, kernel=k).skb
    assert (skb.len, skb.nr_frags) == (max_frame, 17)
    with pytest.raises(ValueError, match=r"frame_len"):
        rx.receive_big(max_frame + 1, kernel=k)


@pytest.mark.parametrize("tree, checks", [("5.10.262", False), ("6.12.95", False), ("6.12.117", True),
                                          ("6.1.192", True), ("7.3.4", True)])
def test_receive_list_flush_probe(tree, checks):
    # "net: gro: fix double aggregation of flush-marked skbs" (Debian changelog 6.1.184, 6.12.101); the matched
    # line is skb_gro_receive_list's 64 KiB cap, "p->len + skb->len >= 65536" (tests/data/ksrc/<tree>/net/core/gro.c)
    f = probe("receive_list_checks_flush").run(Tree(KSRC / tree))
    assert f.value is checks and "65536" in f.match.text


@pytest.mark.parametrize("k, chained", [("6.12", True), ("6.12.117", False), ("7.3.4", False)])
def test_skb_gro_receive_list_flush_rule_per_kernel(k, chained):
    # As tests/test_gro.py's 6.1 case: a held jumbo datagram, then a flush-marked 2-segment fraglist GSO skb.
    from tests.test_gro import FRAGLIST, gro_built

    jumbo = rx.receive(8000, l4="udp", kernel=k, mtu=9000).skb
    small_gso = gro_built("udp", 2, 1472, k, features=FRAGLIST)
    trace = gro.aggregate_trace([jumbo, small_gso], l4="udp", features=FRAGLIST, kernel=k)
    assert len(trace.skbs) == (1 if chained else 2)


@pytest.mark.parametrize("tree, segs", [("5.10.262", 64), ("6.1.192", 128)])
def test_udp_max_segments_probe(tree, segs):
    # 1382e3b6a350 "net: change maximum number of UDP segments to 128" is v6.9 (6.1.107, 6.8.y), not 5.10.y.
    f = probe("udp_max_segments").run(Tree(KSRC / tree))
    assert f.value == segs and f.match.text.startswith("#define UDP_MAX_SEGMENTS")


def test_7x_rx_buffers_come_from_an_order0_page_pool():
    t = Tree(KSRC / "7.3.4")
    assert probe("rx_page_pool").run(t).value is True
    f = probe("rx_frag_order").run(t)
    assert (f.value, f.match.text.strip()) == (0, "pp_params.order = 0;")
    assert probe("mergeable_hole").run(t).value == "page_pool"


def test_missing_file_or_function_is_a_probe_error(tmp_path):
    (tmp_path / "Makefile").write_text("VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 0\n")
    with pytest.raises(ProbeError, match="none of net/core/gro.c, net/core/skbuff.c"):
        probe("receive_list_checks_flush").run(Tree(tmp_path))
    (tmp_path / "drivers/net").mkdir(parents=True)
    (tmp_path / "drivers/net/virtio_net.c").write_text("static int other(void)\n{\n}\n")
    with pytest.raises(ProbeError, match="has no struct padded_vnet_hdr"):
        probe("padded_vnet_hdr_len").run(Tree(tmp_path))


def test_hand_written_rules_are_few_and_marked():
    assert set(HAND_WRITTEN) == {"sk_buff_size_64", "small_head_request"}
    for k in known_kernels():
        rules = kernel(k).rules
        for r in HAND_WRITTEN:
            if r in rules.sources and k in ("7.2.12", "7.3.4", "6.12.117"):
                assert rules.probes.get(r, "").startswith("none: ") or "BTF" in rules.source(r), (k, r)


def test_probe_marker_must_say_why():
    from vnetlab.tables import TableError, parse_table

    with pytest.raises(TableError, match="probe must be"):
        parse_table("kernels", '["9.9"]\nx = { value = 1, source = "s", probe = "yes" }\n')
    sec = parse_table("kernels", '["9.9"]\nx = { value = 1, source = "s", probe = "none: config" }\n')["9.9"]
    assert sec["x"] == 1 and sec.probes["x"] == "none: config"


TREES = {k: WORK / v for k, v in {"5.10.262": "5.10.262", "6.1": "6.1.192", "6.12.117": "6.12.117",
                                   "7.2.12": "7.2.12", "7.3.4": "7.3.4", "5.10.223": "5.10.223",
                                   "6.12": "6.12.95"}.items()}


@pytest.mark.parametrize("k", sorted(TREES))
def test_committed_profile_agrees_with_its_tree(k, capsys):
    roots = sorted(TREES[k].glob("linux-source-*"))
    if not roots:
        pytest.skip(f"no Debian tree for {k} under lab/work/trees (python -m lab profile <linux-source .deb>)")
    assert lab_profile.main([str(roots[0]), "--kernel", k, "--compare"]) == 0, capsys.readouterr().out


def test_7x_profiles_load_everywhere():
    for k in ("7.2.12", "7.3.4"):
        assert vnetlab.arch("x86_64", kernel=k).sk_buff_size == 232  # BTF of Debian's 7.x images (pahole)
        assert vnetlab.features.table(k).bits["GSO_ACCECN"] == 35


def test_5_10_262_differs_from_5_10_223_where_the_trees_do():
    # Debian linux-source-5.10 5.10.262-1 vs 5.10.223-1, read by the probes (docs/kernel/history.md#g): the EMSGSIZE
    # MTU check (udp.c: hlen + min_t(int, datalen, cork->gso_size) > cork->fragsize), the IPv6 fraglist NAT fix,
    # the bond's GSO_SOFTWARE (ALL_TSO | GSO_SCTP in 5.10, so no UDP_L4) and the inert GRO_UDP_FWD bit.
    old, new = kernel("5.10.223"), kernel("5.10.262")
    assert (old.rule("udp_gso_mtu_check"), new.rule("udp_gso_mtu_check")) == ("gso_size", "min_datalen")
    assert (old.rule("udp6_gso_list_nat_fix"), new.rule("udp6_gso_list_nat_fix")) == (False, True)
    assert (old.rule("bond_gso_software"), new.rule("bond_gso_software")) == (False, True)
    from vnetlab import features, netdev

    for k, has in (("5.10.223", True), ("5.10.262", False)):
        ns = netdev.Namespace(kernel=k)
        bond = ns.bond("bond0")
        ns.set_master(ns.nic("eth1", driver="router"), bond)
        assert ("GSO_UDP_L4" in bond.hw_features, "GSO_UDP_L4" in bond.features) == (has, has), k
    assert "GRO_UDP_FWD" not in features.names("5.10.223") and features.bit("GRO_UDP_FWD", "5.10.262") == 59
    assert vnetlab.tables.load_table("gro")["5.10.262"]["gro_udp_fwd"] is False  # no test in udp_gro_receive


def test_corrected_dates_and_credits():
    import tomllib

    data = Path(__file__).parent.parent / "data"
    text = (data / "kernels.toml").read_text() + (data / "gro.toml").read_text()
    assert "mainline v6.8" not in text and "since v6.8" not in text  # 24ab059d2ebd is v6.7
    assert "1382e3b6a350, v6.11" not in text and "128', v6.11" not in text  # 1382e3b6a350 is v6.9
    assert "arrived in 5.17" not in text  # hash report (virtio_net_hdr_v1_hash) is v5.18
    gro_toml = tomllib.loads((data / "gro.toml").read_text())
    # NETIF_F_GRO_UDP_FWD: 6f1c0ea133a6 and 36707061d6ba are Alexander Lobakin's (the v4 mails), Suggested-by Abeni
    assert "Alexander Lobakin" in gro_toml["5.12"]["gro_udp_fwd"]["source"]
    assert "packets', Paolo Abeni)" not in text


@pytest.mark.parametrize("xdp, lens", [(False, [1536, 2560, 1536, 2560]), (True, [4096, 4096])])
def test_7x_mergeable_buffers_from_the_page_pool(xdp, lens):
    # Debian 7.3.4 add_recvbuf_mergeable: alloc_len = len + room; page_pool_alloc_va (include/net/page_pool/
    # helpers.h page_pool_alloc_netmem) on order-0 pages (virtnet_create_page_pools: pp_params.order = 0):
    # 1536 at offset 0, 1536 at 1536, and as 3072 + 1536 > 4096 the second gets 4096 - 1536 = 2560; with XDP,
    # len = PAGE_SIZE - room and (alloc_len << 1) > PAGE_SIZE takes the whole page; ctx = len + room.
    assert rx.mergeable_buf_lens(len(lens), kernel="7.3.4", xdp=xdp) == lens
    # 6.12.117 still carves a 32 KiB skb_page_frag_refill frag: 20 x 1536, then 2048 (the hole rule)
    assert rx.mergeable_buf_lens(21, kernel="6.12.117")[-2:] == [1536, 2048]


@pytest.mark.parametrize("arch, field, value", [
    ("x86_64", "net_ip_align", 0),  # arch/x86/include/asm/processor.h: #define NET_IP_ALIGN 0
    ("ppc64le", "net_ip_align", 0),  # arch/powerpc/include/asm/processor.h, under CONFIG_PPC64
    ("ppc64le", "l1_cache_bytes", 128),  # arch/powerpc/include/asm/cache.h: CONFIG_PPC64 L1_CACHE_SHIFT 7
    ("mips32", "net_ip_align", 2),  # no override in arch/mips: include/linux/skbuff.h #define NET_IP_ALIGN 2
])
def test_arch_probes(arch, field, value):
    from lab.probes import arch_findings

    found = {f.rule: f.value for f in arch_findings(Tree(KSRC / "7.3.4"), arch)}
    assert found[field] == value
    assert vnetlab.tables.load_table("arches")[arch][field] == value


def test_profiles_without_a_tree_are_named():
    from vnetlab.tables import load_table

    meta = load_table("kernels").meta
    derived = set(known_kernels()) - set(meta["hand_written_profiles"])
    # every derived profile's rules cite a file:line of a Debian tree (lab/probes.py), hand-written ones say why
    for k in derived:
        rules = kernel(k).rules
        for r in rules.values:
            src = rules.source(r)
            assert r in rules.probes or r == "released" or "BTF" in src or any(
                s in src for s in (".c:", ".h:", "Kconfig:")), (k, r)
    assert derived == {"5.10.223", "5.10.262", "6.1", "6.12", "6.12.117", "7.2.12", "7.3.4"}


def test_7x_keeps_the_private_fixedid_bit():
    # Debian 7.3.4 include/linux/skbuff.h:677 `__SKB_GSO_TCP_FIXEDID = 1 << 3,`, :714 `SKB_GSO_TCP_FIXEDID = 1 << 30,`
    # (lab.kernelsrc read the "__" name as TCP_FIXEDID and lost bit 3 before).
    for k in ("6.18", "7.2.12", "7.3.4"):
        gso = vnetlab.features.table(k).skb_gso
        assert (gso["__TCP_FIXEDID"], gso["TCP_FIXEDID"], gso["TCP_FIXEDID_INNER"]) == (3, 30, 31), k
