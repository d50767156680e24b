"""Software segmentation of a GSO skb, and the GSO skbs GRO hands to the forwarding path.

- :func:`gso_skb` builds a GSO skb as GRO leaves it (fraglist, or frags spilling into frag_list);
- :func:`skb_gso_segment` is skb_gso_segment -> inet_gso_segment / ipv6_gso_segment -> __udp_gso_segment
  (UDP_L4) or tcp{4,6}_gso_segment, ending in :func:`skb_segment` or :func:`skb_segment_list`.

Every function keeps the bytes: the payload of the segments adds up to the payload of the GSO skb, and each
segment carries one copy of the headers (tests/test_segment.py checks it with hypothesis).

Sources read: Debian linux-source-6.1 (6.1.192) net/core/skbuff.c (skb_segment, skb_segment_list),
net/ipv4/udp_offload.c (__udp_gso_segment), net/core/gro.c (skb_gro_receive, skb_gro_receive_list); the 5.10
__udp_gso_segment from the 9fd1ff5d2ac7 / NAT-fix patch mails.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from vnetlab import skbuff
from vnetlab.checks import In, VlanTag, check_choice, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.features import FeatureSet, can_checksum_protocol, net_gso_ok
from vnetlab.headers import (
    ETH_HLEN,
    GRO_LEGACY_MAX_SIZE,
    GRO_MAX_SIZE,
    IP_HLEN,
    IP_MAX_MTU,
    TCP_FRAGLIST_CNT_MAX,
    UDP_GRO_CNT_MAX,
    VLAN_HLEN,
)
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import L4_HLEN, Frag, Page, Skb

__all__ = [
    "L4_HEADER", "RX_FRAG_TRUESIZE", "SegmentResult", "check_ip", "gso_skb", "header_len", "l4_of",
    "max_gro_segs", "payload_len", "skb_gso_segment", "skb_segment", "skb_segment_list",
]

# Geometry a caller adds to what the skb records: 802.1Q tags, tunnel header bytes, the link header.
InbandTags = Annotated[int, In(0, 8, "802.1Q tags in front beyond the skb's own")]
_Tunnel = Annotated[int, In(0, 255, "tunnel header bytes in front beyond skb.tunnel_hlen")]
_Link = Annotated[int, In(0, 255, "link header bytes in front of the IP header (ETH_HLEN, or 0 once pulled)")]
RX_FRAG_TRUESIZE = 2048  # truesize of one receive buffer behind a page frag in gso_skb (a half page)
L4_HEADER = L4_HLEN  # the earlier name of vnetlab.skb.L4_HLEN
# include/linux/skbuff.h SKB_GSO_*: UDP_L4 serves IPv4 and IPv6; TCP has one type per IP version.
_L4_GSO_TYPE = {("udp", 4): "UDP_L4", ("udp", 6): "UDP_L4", ("tcp", 4): "TCPV4", ("tcp", 6): "TCPV6"}
_HEADROOM = 64  # NET_SKB_PAD on x86_64; only skb_cow_head would look at it, which is not modelled


@public
def check_ip(ip: object) -> int:
    """4 or 6, else a ValueError naming ``ip``."""
    return check_choice("ip", ip, tuple(IP_HLEN), "the IP version: 4 (struct iphdr, 20 bytes) or 6 (struct "
                        "ipv6hdr, 40 bytes)")


def _check_l4(l4: object) -> str:
    if l4 not in L4_HLEN:
        raise ArgumentError(f"l4 must be one of {sorted(L4_HLEN)}, got {l4!r}", param="l4")
    return str(l4)


@public
def check_skb(skb: object, name: str = "skb") -> Skb:
    """``skb`` itself when it is a vnetlab.skb.Skb, else a ValueError naming the parameter."""
    if not isinstance(skb, Skb):
        raise ValueError(f"{name} must be a vnetlab.skb.Skb, got {type(skb).__name__}")
    return skb


def check_headers(skb: Skb, hdr: int, function: str) -> None:
    """An skb holds at least its own headers: the link, IP and L4 headers every path in front of it pulls
    (skb_mac_gso_segment / inet_gso_segment pskb_may_pull them, ip_output's callers built them)."""
    if skb.len < hdr:
        raise ArgumentError(f"{function.rsplit('.', 1)[-1]}: skb is {skb.len} B, shorter than its own headers "
                            f"({hdr} B: link, IP and {skb.transport.upper()} header); no path hands the kernel such "
                            "an skb (pskb_may_pull of the headers fails)", function=function, param="skb")


@public
def header_len(l4: Literal["udp", "tcp"] = "udp", ip: Literal[4, 6] = 4) -> int:
    """Ethernet + IP + L4 header bytes in front of each segment's payload (no in-band VLAN tag)."""
    return ETH_HLEN + IP_HLEN[check_ip(ip)] + L4_HLEN[_check_l4(l4)]


@public
def l4_of(skb: Skb) -> str:
    """The skb's L4 protocol (:attr:`vnetlab.skb.Skb.transport`: ``skb.l4``, else what its gso_type names)."""
    return check_skb(skb).transport


def _skb_header_len(skb: Skb, inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4, outer: _Tunnel = 0,
                    link_hlen: _Link = ETH_HLEN) -> int:
    # the skb's own geometry plus tags / tunnel bytes a caller says are in front beyond what the skb records
    return skb.header_len(ip=check_ip(ip), link_hlen=link_hlen) + VLAN_HLEN * inband_vlan_tags + outer


@public
def payload_len(skb: Skb, inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4, outer: _Tunnel = 0) -> int:
    """L4 payload bytes carried by ``skb`` (its len minus one set of headers; ``inband_vlan_tags`` and ``outer``:
    tags and tunnel headers in front beyond those the skb records, :meth:`vnetlab.skb.Skb.payload_len`)."""
    return check_skb(skb).len - _skb_header_len(skb, inband_vlan_tags, ip, outer)


@public
def max_gro_segs(gso_size: int, *, l4: Literal["udp", "tcp"] = "udp", ip: Literal[4, 6] = 4,
                 gro_max_size: Annotated[int, In(1, GRO_MAX_SIZE, "GRO_MAX_SIZE")] = GRO_LEGACY_MAX_SIZE) -> int:
    """How many full segments one GRO skb holds: p->len + len < gro_max_size, p->len counted from the network
    header (net/core/gro.c skb_gro_receive / skb_gro_receive_list, 6.1), and for UDP at most UDP_GRO_CNT_MAX
    (net/ipv4/udp_offload.c udp_gro_receive_segment)."""
    check_int("gso_size", gso_size, 1, IP_MAX_MTU)
    l3l4 = IP_HLEN[check_ip(ip)] + L4_HLEN[_check_l4(l4)]
    n = (gro_max_size - 1 - l3l4) // gso_size
    return max(1, min(n, UDP_GRO_CNT_MAX) if l4 == "udp" else n)


def _rx_frag_truesize(size: int) -> int:
    # a received frame's bytes fill whole half-page buffers; each buffer's truesize is charged (skb_add_rx_frag)
    return RX_FRAG_TRUESIZE * max(1, -(-size // RX_FRAG_TRUESIZE))


@public
def gso_skb(
    *,
    l4: Literal["udp", "tcp"] = "udp",
    segs: int,
    gso_size: int,
    fraglist: bool = False,
    vlan_tag: VlanTag | None = None,
    tail_size: int | None = None,
    max_skb_frags: int | None = None,
    ip: Literal[4, 6] = 4,
    kernel: str | Kernel = DEFAULT_KERNEL,
    arch: str | Arch = DEFAULT_ARCH,
) -> Skb:
    """A forwarded GSO skb as GRO hands it up, at the point dev_queue_xmit() sees it (skb->data at the MAC
    header, so ``len`` counts ETH_HLEN + IP + L4 header once plus every segment's payload).

    - ``fraglist=True`` (skb_gro_receive_list, net/core/gro.c 6.1): the head is the first packet, linear
      (headers + first payload, a build_skb head); each further packet is a whole skb on ``frag_list`` with
      its headers pulled (headlen = its payload), a build_skb head of its own receive buffer (truesize
      SKB_TRUESIZE of that buffer, __build_skb_around). gso_type {UDP_L4, FRAGLIST} (udp{4,6}_gro_complete, 6.1).
    - otherwise (skb_gro_receive cases 1/2, docs/kernel/gro.md#c1): the head holds only the headers, each
      packet's payload is one page frag charged the half-page buffers it filled; once the head has
      MAX_SKB_FRAGS frags, GRO case 3 chains a new skb on ``frag_list`` (headlen 0 after the header pull) which
      takes up to MAX_SKB_FRAGS frags in turn. That is the layout an ETH_HLEN-copy or build_skb receive path gives.

    ``max_skb_frags``: MAX_SKB_FRAGS, by default that of ``kernel`` on ``arch`` (vnetlab.profiles.arch); ``kernel``
    and ``arch`` also size the heads (truesize): pass the stack's Kernel to build the skb its receive path gave.
    UDP GRO stops at UDP_GRO_CNT_MAX packets (udp_gro_receive_segment), so ``segs`` is at most that for
    ``l4="udp"``; a socket's own UDP_SEGMENT skb is built by :func:`vnetlab.udp.udp_sendmsg` instead.
    ``tail_size`` is the last segment's payload (default ``gso_size``): GRO merges one shorter segment and
    then flushes. ``vlan_tag`` sets a hardware-accelerated tag (skb->vlan_tci), as a VLAN device's
    ndo_start_xmit would. ip_summed is CHECKSUM_UNNECESSARY for fraglist (__skb_incr_checksum_unnecessary)
    and CHECKSUM_PARTIAL otherwise (udp_gro_complete_segment / tcp_gro_complete), both 6.1.
    """
    _check_l4(l4)
    check_ip(ip)
    if not isinstance(fraglist, bool):
        raise ArgumentError(f"fraglist must be True or False, got {fraglist!r}", param="fraglist")
    k = _kernel(kernel)
    a = _arch(arch, k)
    if max_skb_frags is None:
        max_skb_frags = a.max_skb_frags
    check_int("max_skb_frags", max_skb_frags, 16, 45, "MAX_SKB_FRAGS")
    l3l4 = IP_HLEN[ip] + L4_HLEN[l4]
    check_int("gso_size", gso_size, 1, IP_MAX_MTU - l3l4)
    if l4 == "udp":
        check_int("segs", segs, 1, UDP_GRO_CNT_MAX, "UDP GRO merges at most UDP_GRO_CNT_MAX packets")
    elif fraglist:
        check_int("segs", segs, 1, TCP_FRAGLIST_CNT_MAX, "TCP fraglist GRO completes at TCP_FRAGLIST_CNT_MAX")
    else:
        check_int("segs", segs, 1, IP_MAX_MTU)
    if tail_size is None:
        tail_size = gso_size
    check_int("tail_size", tail_size, 1, gso_size, "the last segment is at most gso_size")
    payload = (segs - 1) * gso_size + tail_size
    # net/core/gro.c skb_gro_receive: GRO refuses a merge that would reach 65536 bytes from the network header.
    if l3l4 + payload >= GRO_LEGACY_MAX_SIZE:
        most = (GRO_LEGACY_MAX_SIZE - 1 - l3l4 - tail_size) // gso_size + 1
        raise ValueError(
            f"segs * gso_size too large: the IPv{ip} packet would be {l3l4 + payload} bytes and GRO stops below "
            f"{GRO_LEGACY_MAX_SIZE} (segs must be at most {most} for gso_size {gso_size})"
        )
    hdr = header_len(l4, ip)
    sizes = [gso_size] * (segs - 1) + [tail_size]
    gso_type = {_L4_GSO_TYPE[(l4, ip)]}
    gso = {"gso_size": gso_size if segs > 1 else 0, "gso_segs": segs if segs > 1 else 0}
    if fraglist:
        def rx_buffer(size: int) -> int:
            # a build_skb receive buffer: headroom + frame, then room for skb_shared_info, in half pages
            return RX_FRAG_TRUESIZE * -(-(_HEADROOM + hdr + size + a.shinfo_size) // RX_FRAG_TRUESIZE)

        members = [
            Skb(
                headlen=size, truesize=skbuff.build_skb_truesize(rx_buffer(size), a), head_frag=True,
                head_kind="build_skb", end_offset=rx_buffer(size) - a.shinfo_size, headroom=_HEADROOM + hdr,
                head_page=Page(pfn=1000 + i), ip_summed="CHECKSUM_UNNECESSARY", l4=l4,
            )
            for i, size in enumerate(sizes[1:], start=1)
        ]
        head_buf = rx_buffer(sizes[0])
        return Skb(
            headlen=hdr + sizes[0],
            truesize=skbuff.build_skb_truesize(head_buf, a) + sum(m.truesize for m in members),
            head_frag=True, head_kind="build_skb", end_offset=head_buf - a.shinfo_size, headroom=_HEADROOM,
            head_page=Page(pfn=1000), frag_list=members,
            gso_type=frozenset(gso_type | {"FRAGLIST"}) if segs > 1 else frozenset(),
            vlan_tag=vlan_tag, ip_summed="CHECKSUM_UNNECESSARY", l4=l4, **gso,
            note="fraglist GRO skb (skb_gro_receive_list)",
        )
    frags = [Frag(Page(pfn=2000 + i), offset=0, size=s, truesize=_rx_frag_truesize(s)) for i, s in enumerate(sizes)]
    head_frags, rest = frags[:max_skb_frags], frags[max_skb_frags:]
    members = []
    while rest:
        chunk, rest = rest[:max_skb_frags], rest[max_skb_frags:]
        # net/core/gro.c skb_gro_receive case 3: the skb whose frags these are, its (header-only) head included
        head = skbuff.alloc_skb_head(_HEADROOM + hdr, k, a)
        members.append(
            Skb(headlen=0, truesize=head.truesize + sum(f.truesize for f in chunk), head_frag=False,
                head_kind="kmalloc", end_offset=head.end_offset, headroom=_HEADROOM + hdr, frags=chunk, l4=l4)
        )
    head = skbuff.alloc_skb_head(_HEADROOM + hdr, k, a)
    return Skb(
        headlen=hdr, truesize=head.truesize + sum(f.truesize for f in head_frags) + sum(m.truesize for m in members),
        head_frag=False, head_kind=head.kind, end_offset=head.end_offset, headroom=_HEADROOM,
        frags=head_frags, frag_list=members,
        gso_type=frozenset(gso_type) if segs > 1 else frozenset(), vlan_tag=vlan_tag,
        ip_summed="CHECKSUM_PARTIAL", note="GRO skb (skb_gro_receive)", l4=l4, **gso,
    )


# ---------------------------------------------------------------------------------------------------------
# Software segmentation


@dataclass(frozen=True)
class SegmentResult:
    """What skb_gso_segment() returned: the new skbs and how they were made.

    ``method``: "skb_segment", "skb_segment_list", "skb_segment (split at frag_list boundaries)" or
    "linearize+skb_segment". ``skb_allocs`` counts new sk_buffs (__alloc_skb or skb_clone); ``header_copies``
    counts header blocks written; ``copied_bytes`` counts payload bytes copied (0 with SG). ``kept_headers``
    counts segments that leave with the IP/UDP header they arrived with instead of the head's: after NAT
    rewrote the head of a fraglist GRO skb, those carry the untranslated addresses and ports.
    """

    method: str
    segs: tuple[Skb, ...]
    skb_allocs: int
    header_copies: int
    copied_bytes: int
    note: str = ""
    kept_headers: int = 0


@functools.lru_cache(maxsize=512)
def _alloc_head(size: int, k: Kernel, a: Arch) -> skbuff.Head:
    # every segment of one skb asks __alloc_skb for the same size: one answer per (size, kernel, arch)
    return skbuff.alloc_skb_head(size, k, a)


def _segment_skb(hdr: int, payload: int, *, sg: bool, frags: Sequence[Frag] = (), template: Skb, k: Kernel,
                 a: Arch) -> Skb:
    """One new segment: net/core/skbuff.c skb_segment (6.1) __alloc_skb(hsize + doffset + headroom) for the
    head (hsize = the payload copied into it: all of it without SG), then truesize += data_len for the frags."""
    linear = 0 if sg and frags else payload
    head = _alloc_head(_HEADROOM + hdr + linear, k, a)
    # skb_segment -> __copy_skb_header: the segments keep the protocol, tags and skb->encapsulation (vxlan)
    keep = {"vlan_tag": template.vlan_tag, "ip_summed": template.ip_summed, "encapsulation": template.encapsulation,
            "l4": template.transport, "vlan_inband": template.vlan_inband, "tunnel_hlen": template.tunnel_hlen,
            "tunnels": template.tunnels}
    return Skb(headlen=hdr + linear, truesize=head.truesize + payload - linear, head_frag=False,
               head_kind=head.kind, end_offset=head.end_offset, headroom=_HEADROOM,
               frags=list(frags) if linear == 0 else [], **keep)


def _payload_frags(skb: Skb, hdr: int) -> list[tuple[int, Frag | None]]:
    """The payload of skb in order, as (size, frag-or-None-for-linear) pieces (skb_walk_frags order)."""
    pieces: list[tuple[int, Frag | None]] = []
    for i, part in enumerate(skb.walk()):
        lin = part.headlen - (hdr if i == 0 else 0)
        if lin > 0:
            pieces.append((lin, None))
        pieces.extend((f.size, f) for f in part.frags)
    return pieces


@public
def skb_segment(skb: Skb, features: FeatureSet, *, inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4,
                outer: _Tunnel = 0, link_hlen: _Link = ETH_HLEN, kernel: str | Kernel = DEFAULT_KERNEL,
                arch: str | Arch = DEFAULT_ARCH) -> SegmentResult:
    """net/core/skbuff.c skb_segment (6.1): one new skb per gso_size of payload, headers copied into each.

    With SG and checksum offload the new skbs share the payload pages (frag refs); without SG the payload
    is copied into each new linear skb. With a frag_list, SG, checksum and the gso_type supported (only
    FRAGLIST missing), and uniform geometry (no linear non-head_frag members, every member but the last
    of equal length, the head's payload equal to it), the skb is split into GSO skbs at frag_list
    boundaries instead (the "partial_segs" path), which the driver then segments in hardware. ``outer``:
    tunnel headers in front beyond ``skb.tunnel_hlen`` (skb_udp_tunnel_segment copies them into every segment
    as well); ``link_hlen``: the link header in front of the IP header (ETH_HLEN on the transmit path, 0 for a
    received skb). Each segment's truesize is its own head (__alloc_skb on ``kernel`` and ``arch``) plus the
    payload it references.
    """
    check_skb(skb)
    k = _kernel(kernel)
    a = _arch(arch, k)
    hdr = _skb_header_len(skb, inband_vlan_tags, ip, outer, link_hlen)
    mss = skb.gso_size
    if not mss:
        raise ArgumentError("skb must be a GSO skb (gso_size != 0) to be segmented", param="skb")
    payload = skb.len - hdr
    sg = "SG" in features
    csum = can_checksum_protocol(features, ip)
    if sg and csum and skb.frag_list and net_gso_ok(features, skb.gso_type):
        # net/core/skbuff.c skb_segment (6.1): split a frag_list GSO skb into GSO skbs without frag_list
        frag_len = skb.frag_list[0].len
        uniform = all(
            (m.len == frag_len or m is skb.frag_list[-1]) and not (m.headlen and not m.head_frag)
            for m in skb.frag_list
        )
        head_payload = payload - sum(m.len for m in skb.frag_list)
        if uniform and head_payload == frag_len and frag_len // mss > 1:
            per = (frag_len // mss) * mss
            segs = []
            left = payload
            while left > 0:
                size = min(per, left)
                seg = _segment_skb(hdr, size, sg=False, template=skb, k=k, a=a)
                n = math.ceil(size / mss)
                # skb_segment (6.1): the tail gets gso_size 0 when it is at most one gso_size
                segs.append(seg.copy(gso_type=skb.gso_type, gso_size=mss if n > 1 else 0,
                                     gso_segs=n if n > 1 else 0))
                left -= size
            return SegmentResult("skb_segment (split at frag_list boundaries)", tuple(segs), len(segs),
                                 len(segs), 0, note="GSO skbs of one frag_list member each; hardware segments them")
    pieces = _payload_frags(skb, hdr)
    segs = []
    copied = 0
    left = payload
    while left > 0:
        size = min(mss, left)
        frags: list[Frag] = []
        need = size
        while need > 0 and pieces:
            psize, frag = pieces[0]
            take = min(psize, need)
            if frag is not None:
                frags.append(Frag(frag.page, frag.offset + (frag.size - psize), take, 0))
            else:
                copied += take  # payload in a linear part is copied into the new head
            need -= take
            pieces[0] = (psize - take, frag)
            if pieces[0][0] == 0:
                pieces.pop(0)
        if not sg:
            copied += sum(f.size for f in frags)
            frags = []
        segs.append(_segment_skb(hdr, size, sg=sg, frags=frags, template=skb, k=k, a=a))
        left -= size
    return SegmentResult("skb_segment", tuple(segs), len(segs), len(segs), copied)


@public
def skb_segment_list(skb: Skb, features: FeatureSet, *, inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4,
                     outer: _Tunnel = 0, link_hlen: _Link = ETH_HLEN) -> SegmentResult:
    """net/core/skbuff.c skb_segment_list (5.10..6.18): the head and each frag_list member become the segments;
    each member is pushed back to its own network header and only the head's link (and tunnel) header
    (``offset`` + tnl_hlen) is copied in front of it (skb_copy_from_linear_data_offset), so its IP/UDP header is
    the one it arrived with; no new sk_buffs and no payload copy, unless a member needs linearizing (frags
    without SG) or has less headroom than the headers (the head is reallocated, its truesize grows). The callers
    rewrite those headers where the kernel does (:func:`skb_gso_segment`)."""
    check_skb(skb)
    hdr = _skb_header_len(skb, inband_vlan_tags, ip, outer, link_hlen)
    keep = {"vlan_tag": skb.vlan_tag, "ip_summed": skb.ip_summed, "encapsulation": skb.encapsulation,
            "l4": skb.transport, "vlan_inband": skb.vlan_inband, "tunnel_hlen": skb.tunnel_hlen,
            "tunnels": skb.tunnels}
    out = []
    copied = 0
    head = skb.copy(truesize=skb.truesize - sum(m.truesize for m in skb.frag_list), frag_list=[], gso_type=frozenset(),
                    gso_size=0, gso_segs=0, note="", **keep)
    members = []
    for m in skb.frag_list:
        seg = m.copy(gso_type=frozenset(), gso_size=0, gso_segs=0, **keep)
        seg.push(hdr)  # skb_push back to the network header, the head's link/tunnel header copied in
        members.append(seg)
    for member in [head, *members]:
        # include/linux/skbuff.h skb_needs_linearize (6.1): frags without NETIF_F_SG
        if member.frags and "SG" not in features:
            copied += member.data_len
            member = member.copy(headlen=member.len, frags=[], end_offset=member.headroom + member.len,
                                 truesize=max(member.truesize, member.len))
        out.append(member)
    return SegmentResult("skb_segment_list", tuple(out), 0, len(skb.frag_list), copied)


@public
def skb_gso_segment(skb: Skb, features: FeatureSet, *, kernel: str | Kernel = DEFAULT_KERNEL,
                    inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4, outer: _Tunnel = 0,
                    link_hlen: _Link = ETH_HLEN, arch: str | Arch = DEFAULT_ARCH) -> SegmentResult:
    """skb_gso_segment -> inet_gso_segment / ipv6_gso_segment -> __udp_gso_segment (UDP_L4), or
    tcp{4,6}_gso_segment -> skb_segment (TCP). For FRAGLIST:

    - 5.10 (and Debian 5.10.223) to 5.13: __udp_gso_segment goes straight to __udp_gso_segment_list /
      skb_segment_list (9fd1ff5d2ac7, 5.6);
    - kernel rule ``udp_gso_list_geometry_check`` (6.1.113+ stable, 6.12, 6.18): only if the head holds
      exactly one gso_size of payload and the skb is not DODGY; otherwise the skb is linearized and goes to
      skb_segment (a1e40ac5b5e9, "gso: fix udp gso fraglist segmentation after pull from frag_list").

    After skb_segment_list, __udp_gso_segment_list copies the head's addresses and ports into segments 2..N
    only where the kernel has __udpv4_gso_segment_list_csum (rule udp_gso_list_nat_fix: c3df39ac9b0e,
    v5.11-rc7; 5.10.15 as 3d6df63a5cbe) or __udpv6_gso_segment_list_csum (rule udp6_gso_list_nat_fix:
    b936a9b8d4a5, v6.15); elsewhere they keep their own (``kept_headers``). TCP fraglist GSO (6.10+,
    net/ipv4/tcp_offload.c __tcp4_gso_segment_list) always rewrites them.

    An skb whose gso_type names no protocol (gso_size set, gso_type 0) is refused: inet_gso_segment finds no
    handler for it and returns -EINVAL (validate_xmit_skb then frees it, see vnetlab.xmit).
    ``outer`` > 0: an encapsulated skb (SKB_GSO_UDP_TUNNEL): net/ipv4/udp_offload.c skb_udp_tunnel_segment
    segments the inner packet the same way and copies the ``outer`` header bytes into every segment.
    """
    check_skb(skb)
    if not skb.is_gso():
        raise ArgumentError("skb must be a GSO skb (gso_size != 0) to be segmented", param="skb")
    if not skb.gso_type & {"UDP_L4", "UDP", "TCPV4", "TCPV6"}:
        raise ArgumentError(f"skb has gso_size {skb.gso_size} but gso_type {sorted(skb.gso_type)} names no L4 GSO type "
                            "(inet_gso_segment: -EINVAL)", param="skb")
    k = _kernel(kernel)
    hdr = _skb_header_len(skb, inband_vlan_tags, ip, outer, link_hlen)
    check_headers(skb, hdr, "segment.skb_gso_segment")
    kw = {"inband_vlan_tags": inband_vlan_tags, "ip": ip, "outer": outer, "link_hlen": link_hlen}
    if "FRAGLIST" in skb.gso_type:
        head_payload = skb.headlen - hdr + sum(f.size for f in skb.frags)
        valid = head_payload == skb.gso_size and "DODGY" not in skb.gso_type and skb.frag_list
        # net/ipv4/udp_offload.c __udp_gso_segment: FRAGLIST -> __udp_gso_segment_list, unconditionally before
        # a1e40ac5b5e9 (kernel rule udp_gso_list_geometry_check), after it only for an unmodified geometry
        if not k.rules.typed("udp_gso_list_geometry_check", bool) or valid:
            res = skb_segment_list(skb, features, **kw)
            fixed = skb.transport == "tcp" or k.rule("udp_gso_list_nat_fix" if ip == 4 else "udp6_gso_list_nat_fix")
            return res if fixed else dataclasses.replace(res, kept_headers=len(res.segs) - 1)
        # net/ipv4/udp_offload.c __udp_gso_segment (6.1.192): modified geometry -> __skb_linearize + skb_segment
        flat = skb.copy(headlen=skb.len, frags=[], frag_list=[], end_offset=skb.len + _HEADROOM, headroom=_HEADROOM,
                        head_frag=False, head_kind="kmalloc", ip_summed="CHECKSUM_PARTIAL", l4=skb.transport)
        res = skb_segment(flat, features, kernel=k, arch=arch, **kw)
        return dataclasses.replace(res, method="linearize+skb_segment", copied_bytes=res.copied_bytes + skb.data_len)
    return skb_segment(skb, features, kernel=k, arch=arch, **kw)
