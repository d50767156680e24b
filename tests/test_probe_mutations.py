"""Mutation tests of lab/probes.py: each probe notices what a line does, not how it is written.

Every edit below is applied to a real excerpt of a Debian tree (tests/data/ksrc/<version>/, each file names the
package, file and lines it was cut from). An edit that makes the rule false ("false") must change the probe's
answer or make it say it cannot decide (ProbeError); an edit that keeps the rule true ("true") must leave the
answer as it is. What each edit does is argued from the kernel code it edits, in its `why`.
"""

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab import profile as lab_profile
from lab.probes import PROBES, ProbeError, Tree

KSRC = Path(__file__).parent / "data" / "ksrc"


@dataclass(frozen=True)
class Edit:
    name: str
    tree: str
    file: str
    old: str
    new: str
    rule: str
    keeps: bool  # True: the rule still holds after the edit; False: it no longer does
    why: str


EDITS = (
    # -- the fourteen edits of the source review: 8 missed, 2 false alarms, 1 crash, 3 noticed by the text probes
    Edit("encap test no longer jumps out", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\tif (skb->encapsulation)\n\t\t\tgoto out;\n", "\t\tif (skb->encapsulation)\n",
         "udp_gro_skips_local_encap", False,
         "udp_gro_receive: without the goto, an encapsulated skb goes on to the L4 GRO tests"),
    Edit("GSO_UDP_L4 no longer dropped", "6.12.117", "net/core/dev.c",
         "\t\tfeatures &= ~NETIF_F_GSO_UDP_L4;\n", "", "uso_needs_csum", False,
         "netdev_fix_features: the test stays, only a debug message is left under it"),
    Edit("GSO features kept past gso_max_size", "6.12.117", "net/core/dev.c",
         "netif_get_gso_max_size(dev, skb)))\n\t\treturn features & ~NETIF_F_GSO_MASK;",
         "netif_get_gso_max_size(dev, skb)))\n\t\treturn features;", "gso_max_size_check", False,
         "gso_features_check: a GSO skb of gso_max_size bytes or more keeps its GSO features"),
    Edit("EMSGSIZE turned into EINVAL", "6.12.117", "net/ipv4/udp.c",
         "\t\t\treturn -EMSGSIZE;\n", "\t\t\treturn -EINVAL;\n", "udp_gso_mtu_check", False,
         "udp_send_skb: the min(datalen, gso_size) test now fails with EINVAL, not the EMSGSIZE of 235174b2bed8"),
    Edit("64 hard-coded instead of UDP_MAX_SEGMENTS", "6.1.192", "net/ipv4/udp.c",
         "cork->gso_size * UDP_MAX_SEGMENTS", "cork->gso_size * 64", "udp_max_segments", False,
         "udp_send_skb allows 64 segments, whatever include/linux/udp.h says (128 in 6.1.192)"),
    Edit("a member added to padded_vnet_hdr", "6.12.117", "drivers/net/virtio_net.c",
         "\tchar padding[12];\n};", "\tchar padding[12];\n\tu32 extra;\n};", "padded_vnet_hdr_len", False,
         "sizeof(struct padded_vnet_hdr) becomes 36"),
    Edit("DODGY term dropped from dev_gro_receive", "6.12.117", "net/core/gro.c",
         "if (!skb_is_gso_tcp(skb) ||\n\t\t    (skb_shinfo(skb)->gso_type & SKB_GSO_DODGY))",
         "if (!skb_is_gso_tcp(skb))", "gso_skb_gro", False,
         "dev_gro_receive: a DODGY TCP GSO skb is no longer flushed"),
    Edit("&& turned into || in the GRO_HW condition", "7.3.4", "drivers/net/virtio_net.c",
         "VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) &&\n\t    (vi->guest_offloads_capable",
         "VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) ||\n\t    (vi->guest_offloads_capable",
         "virtio_gro_hw_needs_guest_gso", False,
         "virtnet_probe: GRO_HW is offered with CTRL_GUEST_OFFLOADS alone again"),
    Edit("<= to < where equality cannot happen", "6.1.192", "net/core/skbuff.c",
         "if (NAPI_HAS_SMALL_PAGE_FRAG && len <= SKB_WITH_OVERHEAD(1024)) {",
         "if (NAPI_HAS_SMALL_PAGE_FRAG && len < SKB_WITH_OVERHEAD(1024)) {", "napi_head", True,
         "__napi_alloc_skb: the model asks for GOOD_COPY_LEN (128) + NET_SKB_PAD, far below "
         "SKB_WITH_OVERHEAD(1024) = 704 on x86_64, so < and <= give the same head"),
    Edit("one if split in two", "6.12.117", "net/core/gro.c",
         "\tif (unlikely(p->len + skb->len >= 65536 ||\n\t\t     NAPI_GRO_CB(skb)->flush))\n\t\treturn -E2BIG;\n",
         "\tif (unlikely(p->len + skb->len >= 65536))\n\t\treturn -E2BIG;\n"
         "\tif (NAPI_GRO_CB(skb)->flush)\n\t\treturn -E2BIG;\n", "receive_list_checks_flush", True,
         "skb_gro_receive_list: the same two refusals, one if each"),
    Edit("page_pool order routed through a macro", "7.3.4", "drivers/net/virtio_net.c",
         "\t\tpp_params.order = 0;\n", "\t\tpp_params.order = VIRTNET_PP_ORDER;\n#define VIRTNET_PP_ORDER 0\n",
         "rx_frag_order", True, "virtnet_create_page_pools: still order-0 pages"),
    Edit("GRO_UDP_FWD test removed", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\tif ((!sk && (skb->dev->features & NETIF_F_GRO_UDP_FWD)) ||\n\t\t    (sk && ",
         "\t\tif ((sk && ", "gro_udp_fwd", False,
         "udp_gro_receive: a forwarded (socketless) skb no longer aggregates on rx-udp-gro-forwarding"),
    Edit("CWR masked out of the flag comparison", "7.3.4", "net/ipv4/tcp_offload.c",
         "~(TCP_FLAG_FIN | TCP_FLAG_PSH)", "~(TCP_FLAG_CWR | TCP_FLAG_FIN | TCP_FLAG_PSH)",
         "tcp_flags_not_compared", False, "tcp_gro_receive: CWR no longer has to match the held skb's"),
    Edit("receive_big bound without the padded header", "6.12.117", "drivers/net/virtio_net.c",
         "PAGE_SIZE -\n\t\t  sizeof(struct padded_vnet_hdr) + vi->hdr_len;", "PAGE_SIZE;",
         "receive_big_len_check", False, "receive_big: the 'pages' bound of 6.12.58..96"),
    # -- the rules read by structure, each both ways
    Edit("CWR flush operands swapped", "6.12.117", "net/ipv4/tcp_offload.c",
         "flush = (__force int)(flags & TCP_FLAG_CWR);", "flush = (__force int)(TCP_FLAG_CWR & flags);",
         "tcp_cwr_flush", True, "tcp_gro_receive: the same CWR-only flush"),
    Edit("CWR flush removed (ab4c8b6f7fcb)", "6.12.117", "net/ipv4/tcp_offload.c",
         "\tflush = (__force int)(flags & TCP_FLAG_CWR);\n\tflush |= ", "\tflush = ", "tcp_cwr_flush", False,
         "tcp_gro_receive as 7.x: CWR alone no longer flushes"),
    Edit("CWR flush removed, flag comparison kept", "6.12.117", "net/ipv4/tcp_offload.c",
         "\tflush = (__force int)(flags & TCP_FLAG_CWR);\n\tflush |= ",
         "\tflush = ", "tcp_flags_not_compared", True, "the flag comparison itself is unchanged"),
    Edit("virtnet_rq_dma cut removed", "6.12.117", "drivers/net/virtio_net.c",
         "\tif (!alloc_frag->offset && len + room + sizeof(struct virtnet_rq_dma) > alloc_frag->size)\n"
         "\t\tlen -= sizeof(struct virtnet_rq_dma);\n", "", "mergeable_dma_reserve", False,
         "add_recvbuf_mergeable: a fresh one-page frag keeps the whole len"),
    Edit("virtnet_rq_dma cut only with do_dma", "6.12.117", "drivers/net/virtio_net.c",
         "\tif (!alloc_frag->offset && len + room", "\tif (rq->do_dma && !alloc_frag->offset && len + room",
         "mergeable_dma_reserve", False, "the cut would then never happen in 6.12 (nothing sets do_dma)"),
    Edit("virtnet_rq_dma cut reordered", "6.12.117", "drivers/net/virtio_net.c",
         "\tif (!alloc_frag->offset && len + room + sizeof(struct virtnet_rq_dma) > alloc_frag->size)\n",
         "\tif (alloc_frag->size < sizeof(struct virtnet_rq_dma) + room + len && !alloc_frag->offset)\n",
         "mergeable_dma_reserve", True, "the same test written the other way round"),
    Edit("virtnet_rq_dma grows", "6.12.117", "drivers/net/virtio_net.c",
         "\tu16 need_sync;\n", "\tu16 need_sync;\n\tu32 pad;\n", "mergeable_dma_reserve", False,
         "sizeof(struct virtnet_rq_dma) becomes 24 (8-byte alignment of dma_addr_t)"),
    Edit(">= to > in gso_features_check", "6.12.117", "net/core/dev.c",
         "skb->len >= netif_get_gso_max_size(dev, skb)", "skb->len > netif_get_gso_max_size(dev, skb)",
         "gso_max_size_check", False, "an skb of exactly gso_max_size bytes keeps its GSO features"),
    Edit("gso_max_size test as > size - 1", "6.12.117", "net/core/dev.c",
         "skb->len >= netif_get_gso_max_size(dev, skb)", "netif_get_gso_max_size(dev, skb) <= skb->len",
         "gso_max_size_check", True, "the same test, sides swapped"),
    Edit("segment limit operands swapped", "6.1.192", "net/ipv4/udp.c",
         "cork->gso_size * UDP_MAX_SEGMENTS", "UDP_MAX_SEGMENTS * cork->gso_size", "udp_max_segments", True,
         "udp_send_skb: the same limit"),
    Edit("UDP_MAX_SEGMENTS halved in the header", "6.12.117", "include/linux/udp.h",
         "(1 << 7UL)", "(1 << 6UL)", "udp_max_segments", False, "udp_send_skb then allows 64 segments"),
    Edit("padding renamed", "6.12.117", "drivers/net/virtio_net.c",
         "\tchar padding[12];\n};", "\tchar pad[12];\n};", "padded_vnet_hdr_len", True, "sizeof unchanged (32)"),
    Edit("DODGY terms swapped", "6.12.117", "net/core/gro.c",
         "if (!skb_is_gso_tcp(skb) ||\n\t\t    (skb_shinfo(skb)->gso_type & SKB_GSO_DODGY))",
         "if ((skb_shinfo(skb)->gso_type & SKB_GSO_DODGY) || !skb_is_gso_tcp(skb))", "gso_skb_gro", True,
         "dev_gro_receive: the same two flush conditions"),
    Edit("USO test written with a helper's negation first", "6.12.117", "net/core/dev.c",
         "if ((features & NETIF_F_GSO_UDP_L4) && !netdev_has_ip_or_hw_csum(features)) {",
         "if (!netdev_has_ip_or_hw_csum(features) && (features & NETIF_F_GSO_UDP_L4)) {", "uso_needs_csum", True,
         "netdev_fix_features: the same test"),
    Edit("flush no longer refuses a list merge", "6.12.117", "net/core/gro.c",
         "\tif (unlikely(p->len + skb->len >= 65536 ||\n\t\t     NAPI_GRO_CB(skb)->flush))\n",
         "\tif (unlikely(p->len + skb->len >= 65536))\n", "receive_list_checks_flush", False,
         "skb_gro_receive_list as before 'net: gro: fix double aggregation of flush-marked skbs'"),
    Edit("min() spelled min_t()", "6.12.117", "net/ipv4/udp.c",
         "hlen + min(datalen, cork->gso_size) > cork->fragsize", "hlen + min_t(int, datalen, cork->gso_size) > "
         "cork->fragsize", "udp_gso_mtu_check", True, "udp_send_skb: the same test (5.10.262 writes it so)"),
    Edit("no small page frag for napi heads", "6.1.192", "net/core/skbuff.c",
         "if (NAPI_HAS_SMALL_PAGE_FRAG && len <= SKB_WITH_OVERHEAD(1024)) {", "if (0) {", "napi_head", False,
         "__napi_alloc_skb: a 128-byte request no longer takes the 1 KiB page frag head"),
    Edit("GRO_UDP_FWD operands swapped", "6.12.117", "net/ipv4/udp_offload.c",
         "(!sk && (skb->dev->features & NETIF_F_GRO_UDP_FWD))",
         "((skb->dev->features & NETIF_F_GRO_UDP_FWD) && !sk)", "gro_udp_fwd", True, "the same test"),
    Edit("GRO_UDP_FWD for local sockets only", "6.12.117", "net/ipv4/udp_offload.c",
         "(!sk && (skb->dev->features & NETIF_F_GRO_UDP_FWD))",
         "(sk && (skb->dev->features & NETIF_F_GRO_UDP_FWD))", "gro_udp_fwd", False,
         "a forwarded skb no longer aggregates on the feature"),
    Edit("encap test spelled with unlikely()", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\tif (skb->encapsulation)\n", "\t\tif (unlikely(skb->encapsulation))\n",
         "udp_gro_skips_local_encap", True, "the same test"),
    Edit("GRO_HW condition in two nested ifs", "7.3.4", "drivers/net/virtio_net.c",
         "VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) &&\n\t    (vi->guest_offloads_capable & GUEST_OFFLOAD_GRO_HW_MASK))",
         "VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) &&\n\t    ((vi->guest_offloads_capable & GUEST_OFFLOAD_GRO_HW_MASK)))",
         "virtio_gro_hw_needs_guest_gso", True, "extra parentheses only"),
    Edit("page_pool alignment operands swapped", "7.3.4", "net/core/page_pool.c",
         "max_t(unsigned int, dma_get_cache_alignment(),\n\t\t\t\t __alignof__(struct skb_shared_info))",
         "max_t(unsigned int, __alignof__(struct skb_shared_info),\n\t\t\t\t dma_get_cache_alignment())",
         "page_pool_frag_align", True, "page_pool_alloc_frag_netmem: the same alignment"),
    Edit("page_pool alignment back to the DMA one", "7.3.4", "net/core/page_pool.c",
         "max_t(unsigned int, dma_get_cache_alignment(),\n\t\t\t\t __alignof__(struct skb_shared_info))",
         "dma_get_cache_alignment()", "page_pool_frag_align", False, "as 7.2.12: 1-byte alignment on x86_64"),
    Edit("page_pool order 1", "7.3.4", "drivers/net/virtio_net.c",
         "\t\tpp_params.order = 0;\n", "\t\tpp_params.order = 1;\n", "rx_frag_order", False,
         "8 KiB pool pages"),
    # -- the probes that read calls, assignments and guarded statements
    Edit("build_skb on the post-header pointer", "6.12.117", "drivers/net/virtio_net.c",
         "skb = virtnet_build_skb(buf, truesize, p - buf, len);", "skb = virtnet_build_skb(p, truesize, 0, len);",
         "page_to_skb", False, "page_to_skb no longer builds around the buffer (the bug 'fix use-after-free in "
         "skb_gro_receive' fixed)"),
    Edit("build_skb's buf in parentheses", "6.12.117", "drivers/net/virtio_net.c",
         "skb = virtnet_build_skb(buf, truesize, p - buf, len);",
         "skb = virtnet_build_skb((buf), truesize, p - buf, len);", "page_to_skb", True, "the same call"),
    Edit("ctx truesize without room", "6.12.117", "drivers/net/virtio_net.c",
         "ctx = mergeable_len_to_ctx(len + room, headroom);", "ctx = mergeable_len_to_ctx(len, headroom);",
         "mergeable_truesize", False, "the ctx stores len, as 6.1"),
    Edit("ctx truesize room + len", "6.12.117", "drivers/net/virtio_net.c",
         "ctx = mergeable_len_to_ctx(len + room, headroom);", "ctx = mergeable_len_to_ctx(room + len, headroom);",
         "mergeable_truesize", True, "the same sum"),
    Edit("hole given back with XDP too", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tif (!headroom)\n\t\t\tlen += hole;\n", "\t\tlen += hole;\n", "mergeable_hole", False,
         "add_recvbuf_mergeable as 6.1: the hole always goes to the buffer"),
    Edit("hole test written == 0", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tif (!headroom)\n\t\t\tlen += hole;\n", "\t\tif (headroom == 0)\n\t\t\tlen += hole;\n",
         "mergeable_hole", True, "the same test"),
    Edit("receive_big test turned round", "6.12.117", "drivers/net/virtio_net.c",
         "if (unlikely(len > max_len)) {", "if (max_len < len) {", "receive_big_len_check", True, "the same test"),
    Edit("XDP truesize no longer a page", "6.1.192", "drivers/net/virtio_net.c",
         "\ttruesize = headroom ? PAGE_SIZE : truesize;\n", "", "xdp_truesize", False,
         "page_to_skb takes the ctx's truesize, as 6.3+"),
    Edit("XDP truesize with parentheses", "6.1.192", "drivers/net/virtio_net.c",
         "\ttruesize = headroom ? PAGE_SIZE : truesize;\n", "\ttruesize = (headroom) ? (PAGE_SIZE) : truesize;\n",
         "xdp_truesize", True, "the same assignment"),
    Edit("mergeable header padded to the mrg_rxbuf size", "6.1.192", "drivers/net/virtio_net.c",
         "\t\thdr_padded_len = hdr_len;\n", "\t\thdr_padded_len = sizeof(*hdr);\n", "mergeable_hdr_padded_len",
         False, "page_to_skb as before c1ddc42da2b2"),
    Edit("hdr_padded_len from a parenthesised hdr_len", "6.1.192", "drivers/net/virtio_net.c",
         "\t\thdr_padded_len = hdr_len;\n", "\t\thdr_padded_len = (hdr_len);\n", "mergeable_hdr_padded_len", True,
         "the same value"),
    Edit("build_skb branch keeps big mode's pages", "6.1.192", "drivers/net/virtio_net.c",
         "\t\tif (page)\n\t\t\tgive_pages(rq, page);\n\t\tgoto ok;", "\t\tgoto ok;", "big_build_skb_gives_pages", False,
         "the chained pages after build_skb leak, as before 'fix pages leaking when building skb in big mode'"),
    Edit("give_pages braced", "6.1.192", "drivers/net/virtio_net.c",
         "\t\tif (page)\n\t\t\tgive_pages(rq, page);\n\t\tgoto ok;",
         "\t\tif (page) {\n\t\t\tgive_pages(rq, page);\n\t\t}\n\t\tgoto ok;", "big_build_skb_gives_pages", True,
         "the same statement"),
    Edit("IPv4 NAT checksum fix removed", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\treturn __udpv4_gso_segment_list_csum(skb);\n", "\t\treturn skb;\n", "udp_gso_list_nat_fix",
         False, "__udp_gso_segment_list as before 3d010c8031e3"),
    Edit("IPv4 NAT checksum fix called through a variable", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\treturn __udpv4_gso_segment_list_csum(skb);\n",
         "\t\tskb = __udpv4_gso_segment_list_csum(skb);\n\t\treturn skb;\n", "udp_gso_list_nat_fix", True,
         "the same call"),
    Edit("IPv6 NAT checksum fix removed", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\treturn __udpv6_gso_segment_list_csum(skb);\n", "\t\treturn skb;\n", "udp6_gso_list_nat_fix",
         False, "__udp_gso_segment_list without the IPv6 fix"),
    Edit("IPv6 NAT checksum fix called through a variable", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\treturn __udpv6_gso_segment_list_csum(skb);\n",
         "\t\tskb = __udpv6_gso_segment_list_csum(skb);\n\t\treturn skb;\n", "udp6_gso_list_nat_fix", True,
         "the same call"),
    Edit("IPv6 fix named only in a string", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\treturn __udpv6_gso_segment_list_csum(skb);\n",
         "\t\tpr_debug(\"__udpv6_gso_segment_list_csum(skb)\");\n\t\treturn skb;\n", "udp6_gso_list_nat_fix", False,
         "a mention is not a call"),
    Edit("EIO test gone", "6.1.192", "net/ipv4/udp.c",
         "\t\t\treturn -EIO;\n", "\t\t\treturn 0;\n", "udp_segment_needs_csum_offload", False,
         "udp_send_skb no longer refuses a skb without checksum offload"),
    Edit("EIO test operands swapped", "6.1.192", "net/ipv4/udp.c",
         "if (skb->ip_summed != CHECKSUM_PARTIAL || is_udplite ||",
         "if (CHECKSUM_PARTIAL != skb->ip_summed || is_udplite ||", "udp_segment_needs_csum_offload", True,
         "the same test"),
    Edit("fraglist refusal dropped", "6.12.117", "include/linux/udp.h",
         "\tif (skb_shinfo(skb)->gso_type & SKB_GSO_FRAGLIST &&\n\t    !udp_test_bit(ACCEPT_FRAGLIST, sk))\n"
         "\t\treturn true;\n", "", "udp_gro_accepts_fraglist", False,
         "udp_unexpected_gso no longer refuses a fraglist skb (before 78352f73dc50)"),
    Edit("fraglist refusal reordered", "6.12.117", "include/linux/udp.h",
         "\tif (skb_shinfo(skb)->gso_type & SKB_GSO_FRAGLIST &&\n\t    !udp_test_bit(ACCEPT_FRAGLIST, sk))\n",
         "\tif (!udp_test_bit(ACCEPT_FRAGLIST, sk) &&\n\t    (skb_shinfo(skb)->gso_type & SKB_GSO_FRAGLIST))\n",
         "udp_gro_accepts_fraglist", True, "the same test"),
    Edit("geometry test removed", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\tif ((skb_pagelen(gso_skb) - sizeof(*uh) == skb_shinfo(gso_skb)->gso_size) &&\n"
         "\t\t    !(skb_shinfo(gso_skb)->gso_type & SKB_GSO_DODGY))\n", "\t\tif (1)\n",
         "udp_gso_list_geometry_check", False, "every fraglist skb takes the list path, as before the fix"),
    Edit("geometry test reordered", "6.12.117", "net/ipv4/udp_offload.c",
         "\t\tif ((skb_pagelen(gso_skb) - sizeof(*uh) == skb_shinfo(gso_skb)->gso_size) &&\n"
         "\t\t    !(skb_shinfo(gso_skb)->gso_type & SKB_GSO_DODGY))\n",
         "\t\tif (!(skb_shinfo(gso_skb)->gso_type & SKB_GSO_DODGY) &&\n"
         "\t\t    skb_shinfo(gso_skb)->gso_size == skb_pagelen(gso_skb) - sizeof(*uh))\n",
         "udp_gso_list_geometry_check", True, "the same test"),
    Edit("veth keeps GRO on", "6.12.117", "drivers/net/veth.c",
         "\tveth_disable_gro(dev);\n", "", "veth_gro_off_by_default", False,
         "veth_newlink leaves the new device's GRO on (veth_disable_gro(peer) alone stays)"),
    Edit("veth peer's GRO call only in a comment", "6.12.117", "drivers/net/veth.c",
         "\tveth_disable_gro(peer);\n", "\t/* veth_disable_gro(peer) */\n", "veth_gro_off_by_default", False,
         "the peer keeps GRO on: the rule (both ends off) no longer holds"),
    Edit("veth_disable_gro's argument in parentheses", "6.12.117", "drivers/net/veth.c",
         "\tveth_disable_gro(dev);\n", "\tveth_disable_gro((dev));\n", "veth_gro_off_by_default", True,
         "the same call"),
    Edit("veth GRO eligibility through a local", "6.12.117", "drivers/net/veth.c",
         "veth_skb_is_eligible_for_gro(dev, rcv, skb)", "(veth_skb_is_eligible_for_gro(dev, rcv, skb))",
         "veth_napi_for_gro", True, "the same call"),
    Edit("veth NAPI regardless of GRO eligibility", "6.12.117", "drivers/net/veth.c",
         "veth_skb_is_eligible_for_gro(dev, rcv, skb)", "true", "veth_napi_for_gro", False,
         "veth_xmit uses NAPI whenever it exists"),
    Edit("HW_MACSEC no longer offered", "6.12.117", "net/8021q/vlan_dev.c",
         "\t\tdev->hw_features |= NETIF_F_HW_MACSEC;\n", "\t\t;\n", "vlan_hw_macsec", False,
         "vlan_dev_init without the MACsec offload"),
    Edit("HW_MACSEC among other features", "6.12.117", "net/8021q/vlan_dev.c",
         "\t\tdev->hw_features |= NETIF_F_HW_MACSEC;\n", "\t\tdev->hw_features |= NETIF_F_SG | NETIF_F_HW_MACSEC;\n",
         "vlan_hw_macsec", True, "still offered"),
    Edit("vxlan without FRAGLIST in hw_features", "6.12.117", "drivers/net/vxlan/vxlan_core.c",
         "\tdev->hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_FRAGLIST;",
         "\tdev->hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM;", "vxlan_fraglist", False, "vxlan_setup as before"),
    Edit("vxlan hw_features reordered", "6.12.117", "drivers/net/vxlan/vxlan_core.c",
         "\tdev->hw_features |= NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_FRAGLIST;",
         "\tdev->hw_features |= NETIF_F_FRAGLIST | NETIF_F_SG | NETIF_F_HW_CSUM;", "vxlan_fraglist", True,
         "the same features"),
    Edit("bond without GSO_PARTIAL", "6.12.117", "drivers/net/bonding/bond_main.c",
         "\tbond_dev->features |= NETIF_F_GSO_PARTIAL;\n", "", "bond_gso_partial", False, "bond_setup as 5.10"),
    Edit("bond GSO_PARTIAL with another bit", "6.12.117", "drivers/net/bonding/bond_main.c",
         "\tbond_dev->features |= NETIF_F_GSO_PARTIAL;\n", "\tbond_dev->features |= NETIF_F_GSO_PARTIAL | 0;\n",
         "bond_gso_partial", True, "the same bit"),
    Edit("page_pool_alloc_va's result cast", "7.3.4", "drivers/net/virtio_net.c",
         "page_pool_alloc_va(", "(void *)page_pool_alloc_va(", "rx_page_pool", True, "the same call"),
    Edit("rx buffers from a page frag again", "7.3.4", "drivers/net/virtio_net.c",
         "page_pool_alloc_va(", "my_alloc_va(", "rx_page_pool", False, "add_recvbuf_mergeable off the page_pool"),
    Edit("GRO cap a constant again", "6.12.117", "net/core/gro.c",
         "p->len + len >= netif_get_gro_max_size(p->dev, p) ||", "p->len + len >= 65536 ||", "size_cap", False,
         "skb_gro_receive as 5.10"),
    Edit("GRO cap test turned round", "6.12.117", "net/core/gro.c",
         "p->len + len >= netif_get_gro_max_size(p->dev, p) ||", "netif_get_gro_max_size(p->dev, p) <= len + p->len ||",
         "size_cap", True, "the same test"),
    Edit("GSO features on every guest GSO", "6.12.117", "drivers/net/virtio_net.c",
         "dev->features |= dev->hw_features & NETIF_F_ALL_TSO;", "dev->features |= dev->hw_features;",
         "virtio_gso_features", False, "virtnet_probe turns on every hw feature"),
    Edit("ALL_TSO operands swapped", "6.12.117", "drivers/net/virtio_net.c",
         "dev->features |= dev->hw_features & NETIF_F_ALL_TSO;", "dev->features |= NETIF_F_ALL_TSO & dev->hw_features;",
         "virtio_gso_features", True, "the same mask"),
    Edit("HOST_USO no longer offers GSO_UDP_L4", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tif (virtio_has_feature(vdev, VIRTIO_NET_F_HOST_USO))\n\t\t\tdev->hw_features |= NETIF_F_GSO_UDP_L4;\n",
         "", "virtio_host_uso", False, "virtnet_probe as before virtio-net USO"),
    Edit("HOST_USO test braced", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tif (virtio_has_feature(vdev, VIRTIO_NET_F_HOST_USO))\n\t\t\tdev->hw_features |= NETIF_F_GSO_UDP_L4;\n",
         "\t\tif (virtio_has_feature(vdev, VIRTIO_NET_F_HOST_USO)) {\n\t\t\tdev->hw_features |= NETIF_F_GSO_UDP_L4;"
         "\n\t\t}\n", "virtio_host_uso", True, "the same statement"),
    Edit("hash-report header dropped", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr_v1_hash);\n", "\t\t;\n", "vnet_hdr_lens", False,
         "virtnet_probe never picks the 20-byte header"),
    Edit("a header size through a typedef", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr);\n", "\t\tvi->hdr_len = sizeof(my_hdr_t);\n",
         "vnet_hdr_lens", False, "a size the probe cannot read: it must say so"),
    Edit("hash header size in parentheses", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr_v1_hash);\n",
         "\t\tvi->hdr_len = (sizeof(struct virtio_net_hdr_v1_hash));\n", "vnet_hdr_lens", True, "the same size"),
    Edit("XDP_PASS through page_to_skb", "6.12.117", "drivers/net/virtio_net.c",
         "head_skb = build_skb_from_xdp_buff(dev, vi, &xdp, xdp_frags_truesz);",
         "head_skb = page_to_skb(vi, rq, page, offset, len, PAGE_SIZE, 0);", "xdp_pass_path", False,
         "receive_mergeable_xdp as 6.1"),
    Edit("XDP_PASS call reformatted", "6.12.117", "drivers/net/virtio_net.c",
         "head_skb = build_skb_from_xdp_buff(dev, vi, &xdp, xdp_frags_truesz);",
         "head_skb = build_skb_from_xdp_buff(dev, vi,\n\t\t\t\t\t\t   &xdp, xdp_frags_truesz);", "xdp_pass_path",
         True, "the same call"),
    Edit("TCP fraglist GRO gone", "6.12.117", "net/ipv4/tcp_offload.c",
         "\tif (unlikely(NAPI_GRO_CB(p)->is_flist)) {\n\t\tflush |= (__force int)(flags ^ tcp_flag_word(th2));\n"
         "\t\tflush |= skb->ip_summed != p->ip_summed;\n\t\tflush |= skb->csum_level != p->csum_level;\n"
         "\t\tflush |= NAPI_GRO_CB(p)->count >= 64;\n"
         "\t\tflush |= NAPI_GRO_CB(p)->is_flist != NAPI_GRO_CB(skb)->is_flist;\n", "\tif (0) {\n",
         "tcp_fraglist", False, "no fraglist branch left in tcp_gro_receive (the excerpt is the file for the probe)"),
    Edit("is_flist read once more", "6.12.117", "net/ipv4/tcp_offload.c",
         "\tif (unlikely(NAPI_GRO_CB(p)->is_flist)) {", "\tif (unlikely(!!NAPI_GRO_CB(p)->is_flist)) {",
         "tcp_fraglist", True, "the same branch"),
    Edit("veth XDP switches GRO on", "6.12.117", "drivers/net/veth.c",
         "static int veth_enable_xdp(struct net_device *dev)\n{\n",
         "static int veth_enable_xdp(struct net_device *dev)\n{\n\tdev->features |= NETIF_F_GRO;\n",
         "veth_xdp_toggles_gro", False, "veth_enable_xdp as d3256efd8e8b had it"),
    Edit("veth XDP GRO only in a comment", "6.12.117", "drivers/net/veth.c",
         "static int veth_enable_xdp(struct net_device *dev)\n{\n",
         "static int veth_enable_xdp(struct net_device *dev)\n{\n\t/* dev->features |= NETIF_F_GRO; */\n",
         "veth_xdp_toggles_gro", True, "a comment does nothing"),
    Edit("premapped DMA switched on", "6.12.117", "drivers/net/virtio_net.c",
         "\tunsigned int len, hole;\n\tvoid *ctx;\n",
         "\tunsigned int len, hole;\n\tvoid *ctx;\n\n\trq->do_dma = true;\n",
         "rq_dma_header", False, "something sets do_dma: the header is written on every new frag"),
    Edit("do_dma tested against 0", "6.12.117", "drivers/net/virtio_net.c",
         "\tif (rq->do_dma) {\n\t\tdma = head;", "\tif (rq->do_dma != 0) {\n\t\tdma = head;", "rq_dma_header", True,
         "the same gate, still never opened"),
    Edit("bond vlan features from the base mask", "6.1.192", "drivers/net/bonding/bond_main.c",
         "\tvlan_features &= NETIF_F_ALL_FOR_ALL;\n", "\tvlan_features = netdev_base_features(vlan_features);\n",
         "bond_compute", False, "bond_compute_features as the \u22486.18 mirror"),
    Edit("bond vlan mask through a local", "6.1.192", "drivers/net/bonding/bond_main.c",
         "\tvlan_features &= NETIF_F_ALL_FOR_ALL;\n", "\tvlan_features &= (NETIF_F_ALL_FOR_ALL);\n",
         "bond_compute", True, "the same mask"),
    Edit("GUEST_USO4 only in a comment", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr);\n",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr); /* VIRTIO_NET_F_GUEST_USO4 */\n", "guest_uso", True,
         "the 6.12.117 excerpt names no GUEST_USO4 in code; a comment adds none"),
    Edit("GUEST_USO4 tested", "6.12.117", "drivers/net/virtio_net.c",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr);\n",
         "\t\tvi->hdr_len = sizeof(struct virtio_net_hdr);\n\tif (virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_USO4))"
         "\n\t\tvi->big_packets = true;\n", "guest_uso", False, "the driver now knows GUEST_USO4"),
)


def probe(rule: str):
    return next(p for p in PROBES if p.rule == rule)


def mutated(tmp_path: Path, e: Edit) -> Tree:
    root = tmp_path / e.tree
    shutil.copytree(KSRC / e.tree, root)
    path = root / e.file
    text = path.read_text()
    assert text.count(e.old) == 1, f"{e.name}: the edit's text must occur once in {e.tree}/{e.file}"
    path.write_text(text.replace(e.old, e.new))
    return Tree(root)


def outcome(run, original: Tree, edited: Tree) -> str:
    """'same', 'changed', 'undecided' (ProbeError) or 'crash' (any other exception)."""
    before = run(original)
    try:
        after = run(edited)
    except ProbeError:
        return "undecided"
    except Exception:  # noqa: BLE001 (a crash is an outcome the score counts)
        return "crash"
    return "same" if after == before else "changed"


def score(run_rule, tmp_path: Path) -> dict[str, list[str]]:
    """{'right': [...], 'missed': [...], 'false_alarm': [...], 'crash': [...]} over EDITS."""
    out: dict[str, list[str]] = {"right": [], "missed": [], "false_alarm": [], "crash": []}
    for i, e in enumerate(EDITS):
        got = outcome(lambda t, e=e: run_rule(e.rule, t), Tree(KSRC / e.tree), mutated(tmp_path / str(i), e))
        if got == "crash":
            out["crash"].append(e.name)
        elif e.keeps:
            out["right" if got == "same" else "false_alarm"].append(e.name)
        else:
            out["right" if got in ("changed", "undecided") else "missed"].append(e.name)
    return out


@pytest.mark.parametrize("e", EDITS, ids=[e.name for e in EDITS])
def test_probe_notices_what_the_edit_does(e, tmp_path):
    original = probe(e.rule).run(Tree(KSRC / e.tree)).value
    got = outcome(lambda t: probe(e.rule).run(t).value, Tree(KSRC / e.tree), mutated(tmp_path, e))
    if e.keeps:
        assert got == "same", f"{e.name}: the rule still holds ({e.why}), the probe said {got} (was {original!r})"
    else:
        assert got in ("changed", "undecided"), f"{e.name}: the rule no longer holds ({e.why}), probe still " \
                                                f"says {original!r}"


def test_every_structural_probe_has_both_kinds_of_edit():
    rules = {e.rule for e in EDITS}
    for rule in rules:
        kinds = {e.keeps for e in EDITS if e.rule == rule}
        assert kinds == {True, False} or rule in ("receive_big_len_check",), rule


def test_the_score(tmp_path):
    s = score(lambda rule, t: probe(rule).run(t).value, tmp_path)
    assert (len(s["missed"]), len(s["false_alarm"]), len(s["crash"])) == (0, 0, 0), s
    assert len(s["right"]) == len(EDITS)


def test_an_undecided_probe_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    # The DODGY edit leaves dev_gro_receive in a form gso_skb_gro cannot read: --compare must not agree and
    # --write must not touch data/gro.toml.
    e = next(x for x in EDITS if x.rule == "gso_skb_gro" and not x.keeps)
    tree = mutated(tmp_path, e)
    data = tmp_path / "data"
    shutil.copytree(lab_profile.DATA, data)
    monkeypatch.setattr(lab_profile, "DATA", data)
    monkeypatch.setattr(lab_profile, "PROBES", (probe("gso_skb_gro"),))
    monkeypatch.setattr(lab_profile.kernelsrc, "read_tree", lambda root: {"": {}, ".ethtool": {}, ".masks": {},
                                                                          ".skb_gso": {}})
    monkeypatch.setattr(lab_profile, "derive_arches", lambda tree: {})
    before = (data / "gro.toml").read_text()
    assert lab_profile.main([str(tree.root), "--kernel", "6.12.117", "--compare"]) == 2
    assert "undecided: " in capsys.readouterr().out
    assert lab_profile.main([str(tree.root), "--kernel", "6.12.117", "--write"]) == 2
    assert (data / "gro.toml").read_text() == before
