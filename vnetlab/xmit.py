"""Transmit path: which device segments a GSO skb, and what that costs a router.

Models the kernel's per-device transmit decision and software segmentation:

- :func:`gso_skb` builds a GSO skb as GRO leaves it (fraglist or frags + frag_list);
- :func:`netif_skb_features`, :func:`net_gso_ok`, :func:`skb_gso_ok`, :func:`netif_needs_gso`,
  :func:`skb_needs_linearize` and :func:`validate_xmit_skb` follow net/core/dev.c and
  include/linux/netdevice.h;
- :func:`skb_gso_segment` follows __udp_gso_segment / skb_segment / skb_segment_list;
- :func:`send` walks a device stack the way each ndo_start_xmit hands the skb down;
- :func:`router_scenario` and :func:`router_throughput` model the VLAN NAT router of commit 2e4ef10f5850
  ("net: add GSO UDP L4 and GSO fraglists to the list of software-backed types", v5.11).

Sources read: Debian linux-source-6.1 (6.1.192) net/core/dev.c, include/linux/netdevice.h,
include/linux/skbuff.h, net/ipv4/udp_offload.c, net/core/skbuff.c, net/8021q/vlan_dev.c,
drivers/net/macvlan.c; include/linux/if_vlan.h from torvalds/linux; 5.10-era __udp_gso_segment from the
9fd1ff5d2ac7 / NAT-fix patch mails. Each rule below names its source in one comment line.

Devices are duck-typed: anything with ``name``, ``kind`` and ``features`` (an iterable of NETIF_F names, e.g.
a :class:`vnetlab.features.FeatureSet`) works; ``vlan_features``, ``hw_enc_features``, ``gso_max_segs``,
``gso_max_size`` and the lower links are read when present. :class:`TxDevice` is a plain stand-in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vnetlab.gro import UDP_GRO_CNT_MAX
from vnetlab.headers import ETH_HLEN, IP_MAX_MTU, IPV4_HLEN, TCP_HLEN_TS, UDP_HLEN, VLAN_HLEN
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import SKB_GSO_NAMES, Frag, Page, Skb

# ---------------------------------------------------------------------------------------------------------
# Constants (bytes)

GSO_MAX_SEGS = 65535  # include/linux/netdevice.h GSO_MAX_SEGS (dev->gso_max_segs default), 5.10..6.18
GSO_MAX_SIZE = 65536  # GSO_LEGACY_MAX_SIZE, dev->gso_max_size default (include/linux/netdevice.h 6.1)
RX_FRAG_TRUESIZE = 2048  # truesize charged per received page frag in gso_skb (a half-page rx buffer)

# SKB_GSO_x == NETIF_F_GSO_x >> NETIF_F_GSO_SHIFT (include/linux/netdevice.h net_gso_ok BUILD_BUG_ONs, 6.1)
NETIF_F_GSO_NAMES = (
    "TSO", "GSO_ROBUST", "TSO_ECN", "TSO_MANGLEID", "TSO6", "FSO", "GSO_GRE", "GSO_GRE_CSUM",
    "GSO_IPXIP4", "GSO_IPXIP6", "GSO_UDP_TUNNEL", "GSO_UDP_TUNNEL_CSUM", "GSO_PARTIAL",
    "GSO_TUNNEL_REMCSUM", "GSO_SCTP", "GSO_ESP", "GSO_UDP", "GSO_UDP_L4", "GSO_FRAGLIST", "GSO_ACCECN",
)
SKB_GSO_TO_NETIF_F = dict(zip(SKB_GSO_NAMES, NETIF_F_GSO_NAMES))
CSUM_MASK = frozenset({"IP_CSUM", "IPV6_CSUM", "HW_CSUM"})
VLAN_TX = frozenset({"HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX"})
# include/linux/if_vlan.h vlan_features_check: the direct mask for multi-tagged skbs (5.x..6.18)
VLAN_MULTI_TAG_MASK = frozenset({"SG", "HIGHDMA", "HW_CSUM", "FRAGLIST", "HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX"})

L4_HEADER = {"udp": UDP_HLEN, "tcp": TCP_HLEN_TS}
L4_GSO_TYPE = {"udp": "UDP_L4", "tcp": "TCPV4"}


def gso_mask(kernel: str = "6.1") -> frozenset[str]:
    """NETIF_F_GSO_MASK: bits GSO_SHIFT..GSO_LAST; GSO_LAST is GSO_FRAGLIST until GSO_ACCECN (6.18)."""
    k = _kernel(kernel)
    names = set(NETIF_F_GSO_NAMES)
    if k < "6.18":
        names.discard("GSO_ACCECN")
    return frozenset(names)


def _names(features: Any, kernel: str = "6.1") -> frozenset[str]:
    """A FeatureSet (or any iterable of NETIF_F names, or a netdev_features_t int) as a frozenset of names."""
    if features is None:
        return frozenset()
    if isinstance(features, int) and not isinstance(features, bool):
        from vnetlab.features import FeatureSet  # a raw netdev_features_t word, e.g. gso_partial_features

        return frozenset(FeatureSet.from_bits(features, kernel=kernel))
    if isinstance(features, str):
        raise ValueError(f"features must be an iterable of NETIF_F names, got the string {features!r}")
    return frozenset(str(n).removeprefix("NETIF_F_") for n in features)


# ---------------------------------------------------------------------------------------------------------
# Building GSO skbs


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")
    return value


def header_len(l4: str = "udp") -> int:
    """Ethernet + IPv4 + L4 header bytes in front of each segment's payload (no in-band VLAN tag)."""
    if l4 not in L4_HEADER:
        raise ValueError(f"l4 must be one of {sorted(L4_HEADER)}, got {l4!r}")
    return ETH_HLEN + IPV4_HLEN + L4_HEADER[l4]


def max_gro_segs(gso_size: int, *, l4: str = "udp", gro_max_size: int = GSO_MAX_SIZE) -> int:
    """How many full segments one GRO skb holds: p->len + len < gro_max_size (net/core/gro.c
    skb_gro_receive / skb_gro_receive_list, 6.1), and for UDP at most UDP_GRO_CNT_MAX = 64."""
    _check_int("gso_size", gso_size, 1, IP_MAX_MTU)
    l3l4 = IPV4_HLEN + L4_HEADER[l4] if l4 in L4_HEADER else None
    if l3l4 is None:
        raise ValueError(f"l4 must be one of {sorted(L4_HEADER)}, got {l4!r}")
    n = (gro_max_size - 1 - l3l4) // gso_size
    return max(1, min(n, UDP_GRO_CNT_MAX) if l4 == "udp" else n)


def gso_skb(
    *,
    l4: str = "udp",
    segs: int,
    gso_size: int,
    fraglist: bool = False,
    vlan_tag: int | None = None,
    tail_size: int | None = None,
    max_skb_frags: int = 17,
) -> Skb:
    """A forwarded GSO skb as GRO hands it up, at the point dev_queue_xmit() sees it (skb->data at the MAC
    header, so ``len`` counts ETH_HLEN + IPv4 + L4 header once plus every segment's payload).

    - ``fraglist=True`` (skb_gro_receive_list, net/core/gro.c 6.1): the head is the first packet, linear
      (headers + first payload, a build_skb head); each further packet is a whole skb on ``frag_list`` with
      its headers pulled (headlen = its payload). gso_type {UDP_L4, FRAGLIST} (udp4_gro_complete, 6.1).
    - otherwise (skb_gro_receive cases 1/2, C.1 of the fact sheet): the head holds only the headers, each
      packet's payload is one page frag; once the head has ``max_skb_frags`` frags, GRO case 3 chains a
      new skb on ``frag_list`` (headlen 0 after the header pull) which takes up to ``max_skb_frags`` frags
      in turn. That is the layout an ETH_HLEN-copy or build_skb receive path gives (17 per sk_buff).

    ``tail_size`` is the last segment's payload (default ``gso_size``): GRO merges one shorter segment and
    then flushes. ``vlan_tag`` sets a hardware-accelerated tag (skb->vlan_tci), as a VLAN device's
    ndo_start_xmit would. ip_summed is CHECKSUM_UNNECESSARY for fraglist (__skb_incr_checksum_unnecessary)
    and CHECKSUM_PARTIAL otherwise (udp_gro_complete_segment / tcp_gro_complete), both 6.1.
    """
    if l4 not in L4_HEADER:
        raise ValueError(f"l4 must be one of {sorted(L4_HEADER)}, got {l4!r}")
    if not isinstance(fraglist, bool):
        raise ValueError(f"fraglist must be True or False, got {fraglist!r}")
    _check_int("max_skb_frags", max_skb_frags, 16, 45)
    _check_int("gso_size", gso_size, 1, IP_MAX_MTU - IPV4_HLEN - L4_HEADER[l4])
    seg_cap = UDP_GRO_CNT_MAX if l4 == "udp" else GSO_MAX_SEGS
    _check_int("segs", segs, 1, seg_cap)
    if tail_size is None:
        tail_size = gso_size
    _check_int("tail_size", tail_size, 1, gso_size)
    if vlan_tag is not None:
        _check_int("vlan_tag", vlan_tag, 0, 4095)
    payload = (segs - 1) * gso_size + tail_size
    ip_len = IPV4_HLEN + L4_HEADER[l4] + payload
    if ip_len > IP_MAX_MTU:
        raise ValueError(
            f"segs * gso_size too large: the IPv4 packet would be {ip_len} bytes, more than {IP_MAX_MTU} "
            f"(segs must be at most {(IP_MAX_MTU - IPV4_HLEN - L4_HEADER[l4]) // gso_size} for gso_size {gso_size})"
        )
    hdr = header_len(l4)
    sizes = [gso_size] * (segs - 1) + [tail_size]
    gso_type = {L4_GSO_TYPE[l4]}
    gso = {"gso_size": gso_size if segs > 1 else 0, "gso_segs": segs if segs > 1 else 0}
    headroom = 64  # NET_SKB_PAD on x86_64; only relevant to skb_cow_head, which we do not model
    if fraglist:
        members = [
            Skb(
                headlen=size, truesize=RX_FRAG_TRUESIZE, head_frag=True, head_kind="build_skb",
                end_offset=headroom + hdr + size, headroom=headroom + hdr,
                head_page=Page(pfn=1000 + i), ip_summed="CHECKSUM_UNNECESSARY",
            )
            for i, size in enumerate(sizes[1:], start=1)
        ]
        return Skb(
            headlen=hdr + sizes[0], truesize=RX_FRAG_TRUESIZE + sum(m.truesize for m in members),
            head_frag=True, head_kind="build_skb", end_offset=headroom + hdr + sizes[0], headroom=headroom,
            head_page=Page(pfn=1000), frag_list=members,
            gso_type=frozenset(gso_type | {"FRAGLIST"}) if segs > 1 else frozenset(),
            vlan_tag=vlan_tag, ip_summed="CHECKSUM_UNNECESSARY", **gso,
            note="fraglist GRO skb (skb_gro_receive_list)",
        )
    frags = [Frag(Page(pfn=2000 + i), offset=0, size=s, truesize=RX_FRAG_TRUESIZE) for i, s in enumerate(sizes)]
    head_frags, rest = frags[:max_skb_frags], frags[max_skb_frags:]
    members = []
    while rest:
        chunk, rest = rest[:max_skb_frags], rest[max_skb_frags:]
        members.append(
            Skb(headlen=0, truesize=256 + sum(f.truesize for f in chunk), head_frag=False, head_kind="kmalloc",
                end_offset=headroom + hdr, headroom=headroom + hdr, frags=chunk)
        )
    return Skb(
        headlen=hdr, truesize=512 + sum(f.truesize for f in head_frags) + sum(m.truesize for m in members),
        head_frag=False, head_kind="kmalloc", end_offset=headroom + 128, headroom=headroom,
        frags=head_frags, frag_list=members,
        gso_type=frozenset(gso_type) if segs > 1 else frozenset(), vlan_tag=vlan_tag,
        ip_summed="CHECKSUM_PARTIAL", note="GRO skb (skb_gro_receive)", **gso,
    )


def _skb_header_len(skb: Skb, inband_vlan_tags: int = 0) -> int:
    l4 = "tcp" if skb.gso_type & {"TCPV4", "TCPV6"} else "udp"
    return header_len(l4) + VLAN_HLEN * inband_vlan_tags


def payload_len(skb: Skb, inband_vlan_tags: int = 0) -> int:
    """L4 payload bytes carried by ``skb`` (its len minus one set of headers)."""
    return skb.len - _skb_header_len(skb, inband_vlan_tags)


# ---------------------------------------------------------------------------------------------------------
# Devices


@dataclass(frozen=True)
class TxDevice:
    """A device as the transmit path sees it; a stand-in for vnetlab.netdev devices in tests.

    ``lower`` is the real device (vlan, macvlan), the chosen slave (bond) or port (bridge); None for a NIC.
    ``features_check`` is the ndo_features_check: "passthru" (passthru_features_check) or "vlan"
    (dflt_features_check -> vlan_features_check).
    """

    name: str
    kind: str
    features: frozenset[str]
    vlan_features: frozenset[str] = frozenset()
    hw_enc_features: frozenset[str] = frozenset()
    lower: Any = None
    features_check: str = "vlan"
    gso_max_segs: int = GSO_MAX_SEGS
    gso_max_size: int = GSO_MAX_SIZE
    kernel: str = "6.1"


# ndo_features_check per device kind (6.1): macvlan.c, br_device.c, bond_main.c, veth.c and virtio_net.c set
# passthru_features_check; vlan_dev.c sets none, so dflt_features_check -> vlan_features_check applies.
PASSTHRU_KINDS = frozenset({"macvlan", "bridge", "bond", "veth"})
PASSTHRU_DRIVERS = frozenset({"virtio_net"})


def _features_check_of(dev: Any) -> str:
    explicit = getattr(dev, "features_check", None)
    if explicit in ("passthru", "vlan"):
        return explicit
    if getattr(dev, "kind", None) in PASSTHRU_KINDS or getattr(dev, "driver", None) in PASSTHRU_DRIVERS:
        return "passthru"
    return "vlan"


def _first(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda d: getattr(d, "name", ""))[0] if value else None
    if isinstance(value, Mapping):
        return next(iter(value.values()), None)
    return value


def _lower_of(dev: Any, port: Any = None) -> Any:
    """The device an upper device's ndo_start_xmit hands the skb to."""
    kind = getattr(dev, "kind", None)
    if kind in ("bridge", "bond") and port is not None:
        return port
    for attr in ("lower", "real_dev", "lowerdev", "slaves", "ports", "lowers", "lower_devs"):
        found = _first(getattr(dev, attr, None))
        if found is not None:
            return found
    return None


def _dev_kernel(dev: Any, kernel: str | None) -> str:
    if kernel is not None:
        return _kernel(kernel).version
    for obj in (dev, getattr(dev, "ns", None), getattr(dev, "net", None), getattr(dev, "namespace", None)):
        k = getattr(obj, "kernel", None)
        if k is not None:
            return _kernel(str(k)).version
    return "6.1"


# ---------------------------------------------------------------------------------------------------------
# The transmit decision


def netdev_intersect_features(f1: Iterable[str], f2: Iterable[str]) -> frozenset[str]:
    # include/linux/netdevice.h netdev_intersect_features (6.1): the HW_CSUM side also claims IP/IPV6_CSUM
    a, b = set(f1), set(f2)
    if ("HW_CSUM" in a) != ("HW_CSUM" in b):
        (a if "HW_CSUM" in a else b).update({"IP_CSUM", "IPV6_CSUM"})
    return frozenset(a & b)


def net_gso_ok(features: Iterable[str], gso_type: Iterable[str]) -> bool:
    # include/linux/netdevice.h net_gso_ok (6.1): every gso_type bit << NETIF_F_GSO_SHIFT must be in features
    feats = _names(features)
    return all(SKB_GSO_TO_NETIF_F[t] in feats for t in gso_type)


def skb_gso_ok(skb: Skb, features: Iterable[str]) -> bool:
    # include/linux/netdevice.h skb_gso_ok (5.10..6.18): a frag_list needs NETIF_F_FRAGLIST, no gso_type exempt
    feats = _names(features)
    return net_gso_ok(feats, skb.gso_type) and (not skb.has_frag_list() or "FRAGLIST" in feats)


def netif_needs_gso(skb: Skb, features: Iterable[str]) -> bool:
    # include/linux/netdevice.h netif_needs_gso (6.1): GSO skb and (!skb_gso_ok or ip_summed not PARTIAL/UNNECESSARY)
    return skb.is_gso() and (
        not skb_gso_ok(skb, features) or skb.ip_summed not in ("CHECKSUM_PARTIAL", "CHECKSUM_UNNECESSARY")
    )


def skb_needs_linearize(skb: Skb, features: Iterable[str]) -> bool:
    # include/linux/skbuff.h skb_needs_linearize (6.1): frag_list without FRAGLIST, or frags without SG
    feats = _names(features)
    return bool(skb.frags or skb.frag_list) and (
        (skb.has_frag_list() and "FRAGLIST" not in feats) or (bool(skb.frags) and "SG" not in feats)
    )


def can_checksum_protocol(features: Iterable[str], protocol: str = "ipv4") -> bool:
    # include/linux/netdevice.h can_checksum_protocol (6.1): HW_CSUM covers all, else IP_CSUM / IPV6_CSUM
    feats = _names(features)
    if "HW_CSUM" in feats:
        return True
    return {"ipv4": "IP_CSUM", "ipv6": "IPV6_CSUM"}.get(protocol, "") in feats


@dataclass(frozen=True)
class FeatureSteps:
    """netif_skb_features() step by step: the feature set after each rule, and why it changed."""

    start: frozenset[str]
    steps: tuple[tuple[str, frozenset[str]], ...]

    @property
    def result(self) -> frozenset[str]:
        return self.steps[-1][1] if self.steps else self.start


def netif_skb_features_steps(
    dev: Any, skb: Skb, *, kernel: str | None = None, inband_vlan_tags: int = 0, protocol: str = "ipv4"
) -> FeatureSteps:
    """:func:`netif_skb_features` with every intermediate feature set, for the notebook."""
    k = _kernel(_dev_kernel(dev, kernel))
    gmask = gso_mask(k.version)
    start = _names(dev.features)
    feats = set(start)
    steps: list[tuple[str, frozenset[str]]] = []
    if skb.is_gso():
        # net/core/dev.c gso_features_check (6.1): each limit drops all of NETIF_F_GSO_MASK
        max_segs = getattr(dev, "gso_max_segs", GSO_MAX_SEGS)
        max_size = getattr(dev, "gso_max_size", GSO_MAX_SIZE)
        if skb.gso_segs > max_segs:
            feats -= gmask
            steps.append((f"gso_features_check: gso_segs {skb.gso_segs} > gso_max_segs {max_segs}", frozenset(feats)))
        # net/core/dev.c gso_features_check: skb->len >= gso_max_size, mainline 6.8, in 6.1.y stable (6.1.192)
        elif k >= "6.1" and skb.len >= max_size:
            feats -= gmask
            steps.append((f"gso_features_check: len {skb.len} >= gso_max_size {max_size}", frozenset(feats)))
        elif not skb.gso_type:
            feats -= gmask
            steps.append(("gso_features_check: gso_type 0 (skb_warn_bad_offload)", frozenset(feats)))
        else:
            partial = _names(getattr(dev, "gso_partial_features", ()), k.version)
            if "PARTIAL" not in skb.gso_type and partial & feats:
                feats -= partial
                steps.append(("gso_features_check: gso_partial_features removed", frozenset(feats)))
    if skb.encapsulation:
        # net/core/dev.c netif_skb_features (6.1): encapsulated skbs use hw_enc_features
        feats &= _names(getattr(dev, "hw_enc_features", ()))
        steps.append(("encapsulation: & hw_enc_features", frozenset(feats)))
    if skb.vlan_tag is not None or inband_vlan_tags:
        # net/core/dev.c netif_skb_features (6.1): tagged skb -> intersect(vlan_features | CTAG_TX | STAG_TX)
        feats = set(netdev_intersect_features(feats, _names(getattr(dev, "vlan_features", ())) | VLAN_TX))
        steps.append(("VLAN tag: intersect with vlan_features | HW_VLAN_CTAG_TX | HW_VLAN_STAG_TX", frozenset(feats)))
    check = _features_check_of(dev)
    tags = inband_vlan_tags + (1 if skb.vlan_tag is not None else 0)
    if check == "vlan" and tags >= 2:
        # include/linux/if_vlan.h vlan_features_check (6.1): multi-tagged -> direct mask, no GSO at all
        feats &= VLAN_MULTI_TAG_MASK
        steps.append(("vlan_features_check: multi-tagged skb", frozenset(feats)))
    # net/core/dev.c harmonize_features (6.1): no checksum offload for the protocol -> drop CSUM and GSO masks
    if skb.ip_summed != "CHECKSUM_NONE" and not can_checksum_protocol(feats, protocol):
        before = frozenset(feats)
        feats -= CSUM_MASK | gmask
        if before != feats:
            steps.append((f"harmonize_features: cannot checksum {protocol}: drop CSUM_MASK and GSO_MASK", frozenset(feats)))
    return FeatureSteps(start, tuple(steps))


def netif_skb_features(
    dev: Any, skb: Skb, *, kernel: str | None = None, inband_vlan_tags: int = 0, protocol: str = "ipv4"
) -> frozenset[str]:
    """The features validate_xmit_skb() uses for ``skb`` on ``dev`` (net/core/dev.c netif_skb_features, 6.1):
    dev->features, gso_features_check, hw_enc_features, the VLAN intersection, ndo_features_check
    (passthru or vlan_features_check) and harmonize_features. Returns NETIF_F names."""
    return netif_skb_features_steps(
        dev, skb, kernel=kernel, inband_vlan_tags=inband_vlan_tags, protocol=protocol
    ).result


# ---------------------------------------------------------------------------------------------------------
# Software segmentation


@dataclass(frozen=True)
class SegmentResult:
    """What skb_gso_segment() returned: the new skbs and how they were made.

    ``method``: "skb_segment", "skb_segment_list", "skb_segment (split at frag_list boundaries)" or
    "linearize+skb_segment". ``skb_allocs`` counts new sk_buffs (__alloc_skb or skb_clone); ``header_copies``
    counts header blocks written; ``copied_bytes`` counts payload bytes copied (0 with SG).
    """

    method: str
    segs: tuple[Skb, ...]
    skb_allocs: int
    header_copies: int
    copied_bytes: int
    note: str = ""


def _segment_skb(hdr: int, payload: int, *, sg: bool, frags: Sequence[Frag] = (), template: Skb) -> Skb:
    if sg and frags:
        return Skb(headlen=hdr, truesize=512 + payload, head_frag=False, end_offset=64 + hdr + 64,
                   headroom=64, frags=list(frags), vlan_tag=template.vlan_tag, ip_summed=template.ip_summed)
    return Skb(headlen=hdr + payload, truesize=512 + hdr + payload, head_frag=False,
               end_offset=64 + hdr + payload, headroom=64, vlan_tag=template.vlan_tag,
               ip_summed=template.ip_summed)


def _payload_frags(skb: Skb, hdr: int) -> list[tuple[int, Frag | None]]:
    """The payload of skb in order, as (size, frag-or-None-for-linear) pieces (skb_walk_frags order)."""
    pieces: list[tuple[int, Frag | None]] = []
    for i, part in enumerate(skb.walk()):
        lin = part.headlen - (hdr if i == 0 else 0)
        if lin > 0:
            pieces.append((lin, None))
        pieces.extend((f.size, f) for f in part.frags)
    return pieces


def skb_segment(skb: Skb, features: Iterable[str], *, inband_vlan_tags: int = 0,
                protocol: str = "ipv4") -> SegmentResult:
    """net/core/skbuff.c skb_segment (6.1): one new skb per gso_size of payload, headers copied into each.

    With SG and checksum offload the new skbs share the payload pages (frag refs); without SG the payload
    is copied into each new linear skb. With a frag_list, SG, checksum and the gso_type supported (only
    FRAGLIST missing), and uniform geometry (no linear non-head_frag members, every member but the last
    of equal length, the head's payload equal to it), the skb is split into GSO skbs at frag_list
    boundaries instead (the "partial_segs" path), which the driver then segments in hardware.
    """
    feats = _names(features)
    hdr = _skb_header_len(skb, inband_vlan_tags)
    mss = skb.gso_size
    payload = skb.len - hdr
    sg = "SG" in feats
    csum = can_checksum_protocol(feats, protocol)
    if sg and csum and skb.frag_list and net_gso_ok(feats, skb.gso_type):
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
                seg = _segment_skb(hdr, size, sg=False, template=skb)
                n = math.ceil(size / mss)
                # skb_segment (6.1): the tail gets gso_size 0 when it is at most one gso_size
                segs.append(replace(seg, gso_type=skb.gso_type, gso_size=mss if n > 1 else 0,
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
        segs.append(_segment_skb(hdr, size, sg=sg, frags=frags, template=skb))
        left -= size
    return SegmentResult("skb_segment", tuple(segs), len(segs), len(segs), copied)


def skb_segment_list(skb: Skb, features: Iterable[str], *, inband_vlan_tags: int = 0) -> SegmentResult:
    """net/core/skbuff.c skb_segment_list (6.1): the head and each frag_list member become the segments;
    the head's headers are copied in front of each member (skb_copy_from_linear_data_offset); no new
    sk_buffs and no payload copy, unless a member needs linearizing (frags without SG)."""
    feats = _names(features)
    hdr = _skb_header_len(skb, inband_vlan_tags)
    out = []
    copied = 0
    head = Skb(headlen=skb.headlen, truesize=skb.truesize - sum(m.truesize for m in skb.frag_list),
               head_frag=skb.head_frag, head_kind=skb.head_kind, end_offset=skb.end_offset,
               headroom=skb.headroom, frags=list(skb.frags), vlan_tag=skb.vlan_tag, ip_summed=skb.ip_summed)
    for member in [head] + [
        Skb(headlen=m.headlen + hdr, truesize=m.truesize, head_frag=m.head_frag, head_kind=m.head_kind,
            end_offset=m.end_offset, headroom=max(0, m.headroom - hdr), frags=list(m.frags),
            vlan_tag=skb.vlan_tag, ip_summed=skb.ip_summed)
        for m in skb.frag_list
    ]:
        if skb_needs_linearize(member, feats):
            copied += member.data_len
            member = replace(member, headlen=member.len, frags=[], end_offset=member.headroom + member.len)
        out.append(member)
    return SegmentResult("skb_segment_list", tuple(out), 0, len(skb.frag_list), copied)


def skb_gso_segment(skb: Skb, features: Iterable[str], *, kernel: str = "6.1", inband_vlan_tags: int = 0,
                    protocol: str = "ipv4") -> SegmentResult:
    """skb_gso_segment -> inet_gso_segment -> udp4_ufo_fragment -> __udp_gso_segment (UDP_L4), or
    tcp4_gso_segment -> skb_segment (TCP). For FRAGLIST:

    - 5.10: __udp_gso_segment goes straight to __udp_gso_segment_list / skb_segment_list (9fd1ff5d2ac7, 5.6);
    - 6.1 (6.1.113+ stable, mainline 6.12) and 6.18: only if the head holds exactly one gso_size of
      payload and the skb is not DODGY; otherwise the skb is linearized and goes to skb_segment
      (a1e40ac5b5e9, "gso: fix udp gso fraglist segmentation after pull from frag_list").
    """
    if not skb.is_gso():
        raise ValueError("skb must be a GSO skb (gso_size != 0) to be segmented")
    k = _kernel(kernel)
    hdr = _skb_header_len(skb, inband_vlan_tags)
    if "FRAGLIST" in skb.gso_type:
        head_payload = skb.headlen - hdr + sum(f.size for f in skb.frags)
        valid = head_payload == skb.gso_size and "DODGY" not in skb.gso_type and skb.frag_list
        # net/ipv4/udp_offload.c __udp_gso_segment (5.10): FRAGLIST -> __udp_gso_segment_list unconditionally
        if k < "6.1" or valid:
            return skb_segment_list(skb, features, inband_vlan_tags=inband_vlan_tags)
        # net/ipv4/udp_offload.c __udp_gso_segment (6.1.192): modified geometry -> __skb_linearize + skb_segment
        flat = Skb(headlen=skb.len, truesize=skb.truesize, head_frag=False, end_offset=skb.len + 64,
                   headroom=64, gso_type=skb.gso_type, gso_size=skb.gso_size, gso_segs=skb.gso_segs,
                   vlan_tag=skb.vlan_tag, ip_summed="CHECKSUM_PARTIAL")
        res = skb_segment(flat, features, inband_vlan_tags=inband_vlan_tags, protocol=protocol)
        return replace(res, method="linearize+skb_segment", copied_bytes=res.copied_bytes + skb.data_len)
    return skb_segment(skb, features, inband_vlan_tags=inband_vlan_tags, protocol=protocol)


# ---------------------------------------------------------------------------------------------------------
# validate_xmit_skb and the walk down the stack


@dataclass(frozen=True)
class Validated:
    """validate_xmit_skb() at one device for one skb."""

    action: str  # "segmented", "linearized" or "passed"
    skbs: tuple[Skb, ...]
    features: frozenset[str]
    tag_inserted: bool = False
    segment: SegmentResult | None = None
    reason: str = ""


def validate_xmit_skb(dev: Any, skb: Skb, *, kernel: str | None = None, inband_vlan_tags: int = 0,
                      protocol: str = "ipv4") -> Validated:
    """net/core/dev.c validate_xmit_skb (6.1): features; validate_xmit_vlan (software tag insert when the
    device lacks VLAN TX offload); then segment if netif_needs_gso, else linearize if skb_needs_linearize."""
    kv = _dev_kernel(dev, kernel)
    feats = netif_skb_features(dev, skb, kernel=kv, inband_vlan_tags=inband_vlan_tags, protocol=protocol)
    tag_inserted = False
    if skb.vlan_tag is not None and "HW_VLAN_CTAG_TX" not in feats:
        # net/core/dev.c validate_xmit_vlan (6.1): __vlan_hwaccel_push_inside when !vlan_hw_offload_capable
        skb = replace(skb, headlen=skb.headlen + VLAN_HLEN, end_offset=skb.end_offset + VLAN_HLEN, vlan_tag=None)
        inband_vlan_tags += 1
        tag_inserted = True
    if netif_needs_gso(skb, feats):
        missing = sorted(SKB_GSO_TO_NETIF_F[t] for t in skb.gso_type if SKB_GSO_TO_NETIF_F[t] not in feats)
        if skb.has_frag_list() and "FRAGLIST" not in feats:
            missing.append("FRAGLIST (skb has a frag_list)")
        reason = "lacks " + ", ".join(missing) if missing else f"ip_summed {skb.ip_summed}"
        seg = skb_gso_segment(skb, feats, kernel=kv, inband_vlan_tags=inband_vlan_tags, protocol=protocol)
        return Validated("segmented", seg.segs, feats, tag_inserted, seg, reason)
    if skb_needs_linearize(skb, feats):
        flat = replace(skb, headlen=skb.len, frags=[], frag_list=[], end_offset=skb.headroom + skb.len)
        return Validated("linearized", (flat,), feats, tag_inserted, None,
                         "frag_list without FRAGLIST" if skb.has_frag_list() and "FRAGLIST" not in feats
                         else "frags without SG")
    return Validated("passed", (skb,), feats, tag_inserted)


@dataclass(frozen=True)
class Hop:
    """What happened at one device during :func:`send` (aggregated over the skbs that reached it)."""

    name: str
    kind: str
    actions: tuple[str, ...]
    skbs_in: int
    skbs_out: int
    features: frozenset[str] = frozenset()
    reason: str = ""
    method: str = ""

    @property
    def action(self) -> str:
        """The main action: "segmented", "linearized", "passed" or what the driver did."""
        return self.actions[0] if self.actions else "passed"

    @property
    def what(self) -> str:
        return ", ".join(self.actions)

    def __str__(self) -> str:
        extra = f" ({self.reason})" if self.reason else ""
        return f"{self.name} [{self.kind}]: {self.what}{extra}; {self.skbs_in} skb(s) in, {self.skbs_out} out"


@dataclass(frozen=True)
class WirePacket:
    """One packet leaving the host: its frame bytes (no FCS) and L4 payload, and who segmented it."""

    frame_len: int
    payload_len: int
    vlan_tagged: bool
    segmented_by: str  # "none", "software" or "hardware"


@dataclass(frozen=True)
class TxResult:
    """The outcome of :func:`send`.

    ``segmented_at``: name of the first device whose validate_xmit_skb segmented in software, or None.
    ``segments``: the packets that reach the wire (WirePacket each), after any hardware segmentation.
    ``hops``: one :class:`Hop` per device in the order the skb reached them.
    ``ops``: operation counts for the cost model (dev_queue_xmit, validate_xmit_skb, skb_segment_segs, ...).
    """

    segmented_at: str | None
    segments: tuple[WirePacket, ...]
    hops: tuple[Hop, ...]
    ops: Mapping[str, int]
    skbs_to_driver: tuple[Skb, ...] = ()
    kernel: str = "6.1"

    @property
    def wire_packets(self) -> int:
        return len(self.segments)

    @property
    def payload_bytes(self) -> int:
        return sum(p.payload_len for p in self.segments)

    def hop(self, name: str) -> Hop:
        for h in self.hops:
            if h.name == name:
                return h
        raise KeyError(f"no hop named {name!r}; hops: {[h.name for h in self.hops]}")

    def describe(self) -> str:
        lines = [str(h) for h in self.hops]
        lines.append(f"segmented at: {self.segmented_at or 'nowhere in software'}; "
                     f"{self.wire_packets} packet(s) on the wire")
        return "\n".join(lines)


def _driver_wire(skb: Skb, feats: frozenset[str], tags: int) -> list[WirePacket]:
    hdr = _skb_header_len(skb, tags)
    tagged = skb.vlan_tag is not None or tags > 0
    extra = VLAN_HLEN if skb.vlan_tag is not None else 0  # the NIC inserts the hwaccel tag
    if not skb.is_gso():
        return [WirePacket(skb.len + extra, skb.len - hdr, tagged, "none")]
    if "FRAGLIST" in skb.gso_type:
        # a driver advertising GSO_FRAGLIST sends the head and each frag_list member as one packet
        sizes = [skb.headlen - hdr + sum(f.size for f in skb.frags)] + [m.len for m in skb.frag_list]
    else:
        payload = skb.len - hdr
        sizes = [skb.gso_size] * (payload // skb.gso_size)
        if payload % skb.gso_size:
            sizes.append(payload % skb.gso_size)
    return [WirePacket(hdr + s + extra, s, tagged, "hardware") for s in sizes]


def send(dev: Any, skb: Skb, *, kernel: str | None = None, port: Any = None,
         protocol: str = "ipv4") -> TxResult:
    """dev_queue_xmit(skb) on ``dev`` and down the stack, running validate_xmit_skb at every device.

    - vlan (net/8021q/vlan_dev.c vlan_dev_hard_start_xmit, 6.1): sets the hwaccel tag
      (__vlan_hwaccel_put_tag, REORDER_HDR default) and calls dev_queue_xmit on the real device;
    - macvlan (drivers/net/macvlan.c macvlan_queue_xmit, 6.1): dev_queue_xmit_accel on the lower device;
    - bond (drivers/net/bonding/bond_main.c bond_dev_queue_xmit): dev_queue_xmit on a slave (``port`` or
      the first);
    - bridge (net/bridge/br_device.c br_dev_xmit -> br_forward.c br_dev_queue_push_xmit): dev_queue_xmit on
      the egress port (``port`` or the first); traffic forwarded port-to-port never meets br0's validate;
    - veth: veth_xmit hands the skb to the peer unsegmented (the walk stops);
    - anything without a lower device is the driver: a GSO skb it accepted is segmented by the hardware.
    """
    kv = _dev_kernel(dev, kernel)
    hops: list[Hop] = []
    ops: Counter[str] = Counter()
    wire: list[WirePacket] = []
    to_driver: list[Skb] = []
    segmented_at: str | None = None
    pending: list[tuple[Skb, int]] = [(skb, 0)]
    current = dev
    seen: set[int] = set()
    while current is not None and pending:
        if id(current) in seen:
            raise ValueError(f"device loop at {getattr(current, 'name', current)!r}")
        seen.add(id(current))
        name = getattr(current, "name", "?")
        kind = getattr(current, "kind", "nic")
        actions: list[str] = []
        reasons: list[str] = []
        methods: set[str] = set()
        out: list[tuple[Skb, int]] = []
        feats: frozenset[str] = frozenset()
        for s, tags in pending:
            ops["dev_queue_xmit"] += 1
            ops["validate_xmit_skb"] += 1
            v = validate_xmit_skb(current, s, kernel=kv, inband_vlan_tags=tags, protocol=protocol)
            feats = v.features
            ntags = tags + (1 if v.tag_inserted else 0)
            if v.tag_inserted:
                ops["vlan_tag_insert_sw"] += 1
                _add(actions, "tag inserted")
            if v.action == "segmented":
                assert v.segment is not None
                segmented_at = segmented_at or name
                methods.add(v.segment.method)
                key = "skb_segment_list_segs" if v.segment.method == "skb_segment_list" else "skb_segment_segs"
                ops[key] += len(v.segment.segs)
                ops["segment_copied_bytes"] += v.segment.copied_bytes
                ops["skb_allocs"] += v.segment.skb_allocs
            elif v.action == "linearized":
                ops["linearized_bytes"] += s.data_len
            _add(actions, v.action, front=v.action != "passed")
            if v.reason:
                _add(reasons, v.reason)
            out.extend((o, ntags) for o in v.skbs)
        lower = _lower_of(current, port) if kind in ("vlan", "macvlan", "bond", "bridge") else None
        if kind == "vlan":
            # vlan_dev_hard_start_xmit (6.1): REORDER_HDR -> __vlan_hwaccel_put_tag, skb->dev = real_dev
            vid = getattr(current, "vid", getattr(current, "vlan_id", 1))
            out = [(replace(o, vlan_tag=vid), t) if o.vlan_tag is None else (_push_tag(o, vid), t + 1)
                   for o, t in out]
            ops["vlan_start_xmit"] += len(out)
            _add(actions, "tag set (hwaccel)")
        elif kind in ("macvlan", "bond", "bridge"):
            ops[f"{kind}_start_xmit"] += len(out)
        if lower is None:
            if kind == "veth":
                _add(actions, "handed to peer")
            else:
                ops["driver_xmit_skbs"] += len(out)
                if any(o.is_gso() for o, _ in out):
                    _add(actions, "segmented by hardware")
            for o, t in out:
                to_driver.append(o)
                if kind == "veth":
                    # veth_xmit: the peer receives the skb as it is, GSO or not (one "packet" on the pair).
                    tagged = o.vlan_tag is not None or t > 0
                    wire.append(WirePacket(o.len, o.len - _skb_header_len(o, t), tagged, "none"))
                else:
                    wire.extend(_driver_wire(o, feats, t))
        hops.append(Hop(name, kind, tuple(actions), len(pending), len(out), feats, "; ".join(reasons),
                        ", ".join(sorted(methods))))
        pending = out
        current = lower
    ops["wire_packets"] = len(wire)
    ops["wire_bytes"] = sum(p.frame_len for p in wire)
    return TxResult(segmented_at, tuple(wire), tuple(hops), dict(ops), tuple(to_driver), kv)


def _push_tag(skb: Skb, vid: int) -> Skb:
    # an skb still carrying a hwaccel tag (QinQ): the inner tag goes in-band and the new one is hwaccel
    return replace(skb, headlen=skb.headlen + VLAN_HLEN, end_offset=skb.end_offset + VLAN_HLEN, vlan_tag=vid)


def _add(items: list[str], item: str, front: bool = False) -> None:
    if item in items:
        return
    if front:
        items.insert(0, item)
    else:
        items.append(item)


# ---------------------------------------------------------------------------------------------------------
# The VLAN NAT router of 2e4ef10f5850

GRO_MODES = ("fraglist", "udp_fwd", "off")
UPPERS = ("vlan", "macvlan", "bond", "bridge", "bridge_forward", "none")


@dataclass(frozen=True)
class RouterResult:
    """One GRO batch forwarded by the router: how it was received, where it was segmented, what left.

    ``packets_in``: UDP packets received; ``gro_skbs``: skbs handed to IP (1 when GRO aggregated them all);
    ``tx``: the :class:`TxResult` of each skb sent; ``nat_translated``: wire packets carrying the NATed
    addresses (see :data:`LIMITATIONS` and the notes); ``notes``: kernel-specific remarks.
    """

    kernel: str
    nic: str
    gro: str
    upper: str
    packets_in: int
    gso_size: int
    gro_skbs: int
    egress: str
    tx: tuple[TxResult, ...]
    nat_translated: int
    notes: tuple[str, ...] = ()

    @property
    def segmented_at(self) -> str | None:
        return next((t.segmented_at for t in self.tx if t.segmented_at), None)

    @property
    def wire_packets(self) -> int:
        return sum(t.wire_packets for t in self.tx)

    @property
    def payload_bytes(self) -> int:
        return sum(t.payload_bytes for t in self.tx)

    @property
    def hops(self) -> tuple[Hop, ...]:
        """The hops of the first skb sent (all skbs of a batch take the same path)."""
        return self.tx[0].hops if self.tx else ()

    @property
    def ops(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for t in self.tx:
            total.update(t.ops)
        total["rx_packets"] = self.packets_in
        total["gro_packets"] = self.packets_in if self.gro != "off" and self.gro_skbs < self.packets_in else 0
        total["route_nat_skbs"] = self.gro_skbs
        return dict(total)

    def describe(self) -> str:
        head = (f"kernel {self.kernel}, nic {self.nic}, GRO {self.gro}, egress {self.egress} ({self.upper}): "
                f"{self.packets_in} packets in, {self.gro_skbs} skb(s) routed, {self.wire_packets} out, "
                f"segmented at {self.segmented_at or 'no device (hardware or none)'}")
        return "\n".join([head, *(str(h) for h in self.hops), *self.notes])


def _has_feature(name: str, kernel: str) -> bool:
    from vnetlab import features

    try:
        features.bit(name, kernel=kernel)
    except ValueError:
        return False
    return True


def egress_stack(*, kernel: str, upper: str, nic: str = "router", nic_params: Mapping[str, Any] | None = None,
                 port_nic: str | None = None) -> tuple[Any, Any, Any]:
    """A vnetlab.netdev namespace with eth0 (driver ``nic``) and ``upper`` on it: (namespace, egress, eth0).

    "vlan" eth0.10 on eth0; "macvlan" mv0 on eth0; "bond" bond0 with eth0 enslaved; "bridge" br0 with eth0
    as port (egress br0); "bridge_forward" the same with egress eth0; "none" eth0 itself. ``port_nic`` adds
    eth1 of that driver as another bond slave or bridge port.
    """
    from vnetlab import netdev

    if upper not in UPPERS:
        raise ValueError(f"upper must be one of {UPPERS}, got {upper!r}")
    net = netdev.Namespace(kernel=_kernel(kernel).version)
    eth = net.nic("eth0", driver=nic, **dict(nic_params or {}))
    extra = net.nic("eth1", driver=port_nic) if port_nic else None
    egress = eth
    if upper == "vlan":
        egress = net.vlan("eth0.10", lower=eth, vid=10)
    elif upper == "macvlan":
        egress = net.macvlan("mv0", lower=eth)
    elif upper in ("bond", "bridge", "bridge_forward"):
        master = net.bond("bond0") if upper == "bond" else net.bridge("br0")
        for port in (eth, extra):
            if port is not None:
                net.set_master(port, master)
        egress = eth if upper == "bridge_forward" else master
    return net, egress, eth


def router_scenario(
    *,
    kernel: str = "5.10",
    nic: str = "router",
    nic_params: Mapping[str, Any] | None = None,
    gro: str = "fraglist",
    upper: str = "vlan",
    segs: int | None = None,
    gso_size: int = 1472,
    port_nic: str | None = None,
) -> RouterResult:
    """UDP received with GRO, routed and NATed as one skb, sent out through ``upper`` on a NIC.

    ``gro``: "fraglist" (rx-gro-list, NETIF_F_GRO_FRAGLIST, 5.6+), "udp_fwd" (rx-udp-gro-forwarding,
    NETIF_F_GRO_UDP_FWD, ~5.12+; on older kernels the packets are forwarded one by one) or "off".
    ``upper``: "vlan" (eth0.10 on eth0), "macvlan", "bond" (eth0 enslaved), "bridge" (routed out through
    br0 with eth0 as port), "bridge_forward" (bridged port-to-port: br_forward -> dev_queue_xmit on the
    port, br0's own validate never runs), or "none" (eth0 directly). ``nic``/``nic_params`` choose the
    vnetlab.netdev driver profile ("router", "virtio_net", "ixgbe"). ``port_nic``: a second NIC driver to add
    as another bridge port or bond slave (the ONE_FOR_ALL subtlety needs some port's features).
    """
    if gro not in GRO_MODES:
        raise ValueError(f"gro must be one of {GRO_MODES}, got {gro!r}")
    if upper not in UPPERS:
        raise ValueError(f"upper must be one of {UPPERS}, got {upper!r}")
    kv = _kernel(kernel).version
    if segs is None:
        segs = max_gro_segs(gso_size)
    _check_int("segs", segs, 1, UDP_GRO_CNT_MAX)
    notes: list[str] = []
    net, egress, eth = egress_stack(kernel=kv, upper=upper, nic=nic, nic_params=nic_params, port_nic=port_nic)
    if upper == "bridge_forward":
        notes.append("bridged port to port: br_forward -> br_dev_queue_push_xmit -> dev_queue_xmit(eth0); "
                     "br0's features are never consulted (net/bridge/br_forward.c, 6.1)")
    aggregate = gro == "fraglist" or (gro == "udp_fwd" and _has_feature("GRO_UDP_FWD", kv))
    if gro == "udp_fwd" and not aggregate:
        notes.append(f"kernel {kv} has no NETIF_F_GRO_UDP_FWD (added ~5.12): packets are forwarded one by one")
    if aggregate and segs > 1:
        skbs = [gso_skb(segs=segs, gso_size=gso_size, fraglist=gro == "fraglist")]
    else:
        skbs = [gso_skb(segs=1, gso_size=gso_size) for _ in range(segs)]
    tx = tuple(send(egress, s, kernel=kv, port=eth) for s in skbs)
    translated = sum(t.wire_packets for t in tx)
    if gro == "fraglist" and aggregate and segs > 1:
        methods = {h.method for t in tx for h in t.hops}
        if "skb_segment_list" in methods and _kernel(kv) < "5.11":
            # net/ipv4/udp_offload.c __udp_gso_segment_list (5.10): only the MAC header is copied to each
            # segment; __udpv4_gso_segment_list_csum (Dongseok Yi, in 5.11) rewrites addresses/ports after NAT
            translated = sum(1 for t in tx)
            notes.append("5.10: skb_segment_list copies only the MAC header to each frag_list segment; after NAT "
                         "only the head segment carries the translated IP/UDP header (fixed in 5.11 by "
                         "__udpv4_gso_segment_list_csum; 5.10.y backport not verified)")
        if "skb_segment_list" in methods:
            notes.append("fraglist GRO skb segmented with skb_segment_list: no new skbs, headers copied per segment")
    return RouterResult(kv, nic, gro, upper, segs, gso_size, len(skbs), egress.name, tx, translated, tuple(notes))


# ---------------------------------------------------------------------------------------------------------
# Throughput model

LIMITATIONS = """\
What this throughput model can and cannot tell you.

- Every per-operation cost in data/router_costs.toml is an order-of-magnitude assumption for an in-order
  MIPS32 core (MT7621-class, 880 MHz). None was measured on the patch author's board, whose SoC, NIC
  driver (a work-in-progress, never merged) and traffic generator are unknown.
- The model counts operations the kernel code really performs (dev_queue_xmit calls, skbs allocated by
  skb_segment, segments built by skb_segment_list, bytes copied) and multiplies them by those costs. It has
  no caches, no contention, no interrupts or NAPI budget, no qdisc or TX-ring limits, no drops, no
  retransmissions and no receiver. Any effect that lives there (ring overflow when a GRO batch becomes
  44 packets at once, cache misses on 44 fresh skbs, a receiver discarding packets) is invisible to it.
- "20 Mbps -> 1 Gbps" is one measurement quoted in a commit message. A 50x gap needs the slow path to
  cost about 50x the fast path per packet (when the fast path is at link speed), i.e. hundreds of
  thousands of cycles per packet on an 880 MHz core. Software segmentation, even with plausible costs
  several times higher than assumed here, is nowhere near that; see router_gap_requirements().
- One mechanism that could give a gap of that size without CPU cost (a hypothesis, UNVERIFIED): in 5.10
  skb_segment_list copied only the MAC header to each segment, so after NAT only the head segment of each
  fraglist GRO skb carried translated addresses. If the receiver discarded the rest, goodput would be
  about link speed / segments per GRO skb (1 Gbps / 44 = 23 Mbps). router_throughput(..., 
  drop_untranslated=True) shows it. Whether that happened on the author's setup is not known.
"""


@dataclass(frozen=True)
class RouterCosts:
    """Per-operation costs (cycles unless the name says per_byte) and the CPU/link they run on.

    Defaults come from data/router_costs.toml; :meth:`from_table` reads it and keyword overrides replace
    single values. ``sources`` keeps the provenance of every value.
    """

    values: Mapping[str, float]
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_table(cls, **overrides: float) -> RouterCosts:
        from vnetlab.tables import load_table

        table = load_table("router_costs")
        values: dict[str, float] = {}
        sources: dict[str, str] = {}
        for sec in table:
            section = table[sec]
            for name in section.values:
                values[name] = float(section.typed(name, (int, float)))
                sources[name] = section.source(name)
        for name, value in overrides.items():
            if name not in values:
                raise ValueError(f"unknown cost parameter {name!r}; known: {', '.join(sorted(values))}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
            values[name] = float(value)
            sources[name] = "override"
        return cls(values, sources)

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def with_(self, **overrides: float) -> RouterCosts:
        merged = dict(self.values)
        for name, value in overrides.items():
            if name not in merged:
                raise ValueError(f"unknown cost parameter {name!r}; known: {', '.join(sorted(merged))}")
            merged[name] = float(value)
        return RouterCosts(merged, {**self.sources, **{n: "override" for n in overrides}})


COST_OF_OP = {
    # ops key -> cost parameter (cycles per unit)
    "rx_packets": "rx_per_packet",
    "gro_packets": "gro_per_packet",
    "route_nat_skbs": "route_nat_per_skb",
    "dev_queue_xmit": "dev_queue_xmit_per_skb",
    "validate_xmit_skb": "validate_xmit_per_skb",
    "vlan_start_xmit": "upper_start_xmit_per_skb",
    "macvlan_start_xmit": "upper_start_xmit_per_skb",
    "bond_start_xmit": "upper_start_xmit_per_skb",
    "bridge_start_xmit": "upper_start_xmit_per_skb",
    "skb_segment_segs": "skb_segment_per_seg",
    "skb_segment_list_segs": "skb_segment_list_per_seg",
    "vlan_tag_insert_sw": "sw_vlan_insert_per_skb",
    "driver_xmit_skbs": "driver_tx_per_skb",
    "wire_packets": "tx_complete_per_packet",
    "segment_copied_bytes": "copy_per_byte",
    "linearized_bytes": "copy_per_byte",
}


@dataclass(frozen=True)
class RouterThroughput:
    """Throughput of one :func:`router_scenario` under :class:`RouterCosts`."""

    cycles_per_batch: float
    cycles_by_op: Mapping[str, float]
    packets_per_batch: int
    cpu_pps: float
    link_pps: float
    goodput_bps: float
    bound: str  # "cpu" or "link"
    translated_fraction: float

    @property
    def cycles_per_packet(self) -> float:
        return self.cycles_per_batch / self.packets_per_batch


def router_throughput(result: RouterResult, costs: RouterCosts | None = None, *,
                      drop_untranslated: bool = False) -> RouterThroughput:
    """UDP goodput (payload bits per second) of the router in ``result``: the CPU-bound packet rate
    (cpu_hz / cycles per packet) or the link-bound rate (link_bps / wire bits per frame), whichever is
    lower. ``drop_untranslated`` counts only wire packets carrying the NATed header (the 5.10 hypothesis
    in :data:`LIMITATIONS`). See LIMITATIONS for what the numbers mean."""
    c = costs or RouterCosts.from_table()
    ops = result.ops
    by_op: dict[str, float] = {}
    for op, param in COST_OF_OP.items():
        if ops.get(op):
            by_op[op] = ops[op] * c[param]
    wire_bytes = ops.get("wire_bytes", 0)
    by_op["dma_cache_bytes"] = 2 * wire_bytes * c["dma_cache_per_byte"]  # received and transmitted once
    total = sum(by_op.values())
    n = max(1, result.wire_packets)
    cpu_pps = c["cpu_hz"] / (total / n)
    frame = wire_bytes / n + c["ethernet_overhead_bytes"]
    link_pps = c["link_bps"] / (8 * frame)
    pps = min(cpu_pps, link_pps)
    fraction = result.nat_translated / n if drop_untranslated else 1.0
    payload = result.payload_bytes / n
    return RouterThroughput(total, by_op, n, cpu_pps, link_pps, pps * payload * 8 * fraction,
                            "cpu" if cpu_pps < link_pps else "link", fraction)


def router_gap(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
               drop_untranslated: bool = False) -> float:
    """goodput(after) / goodput(before) under the same costs."""
    a = router_throughput(after, costs, drop_untranslated=drop_untranslated)
    b = router_throughput(before, costs, drop_untranslated=drop_untranslated)
    return a.goodput_bps / b.goodput_bps


def sensitivity(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
                factors: Sequence[float] = (0.5, 2.0)) -> dict[str, tuple[float, ...]]:
    """How the gap moves when one cost at a time is scaled by each of ``factors`` (a tornado table):
    parameter -> gap at each factor. CPU and link parameters are scaled too."""
    c = costs or RouterCosts.from_table()
    out: dict[str, tuple[float, ...]] = {}
    for name in sorted(c.values):
        out[name] = tuple(router_gap(before, after, c.with_(**{name: c[name] * f})) for f in factors)
    return out


def router_gap_requirements(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
                            target: float = 50.0, max_factor: float = 1e6) -> dict[str, float | None]:
    """For each cost parameter alone: the value it would need for goodput(after)/goodput(before) to reach
    ``target`` (None if no value up to ``max_factor`` times the default gets there). This is the "what
    has to be true for a 50x gap" question; compare each answer with what the operation could cost."""
    c = costs or RouterCosts.from_table()
    if not target > 0:
        raise ValueError(f"target must be a positive ratio, got {target!r}")
    out: dict[str, float | None] = {}
    for name in sorted(c.values):
        base = c[name] if c[name] > 0 else 1.0

        def gap(f: float) -> float:
            return router_gap(before, after, c.with_(**{name: base * f}))

        lo, hi = 0.0 if c[name] > 0 else 0.0, max_factor
        if gap(hi) < target:
            out[name] = None
            continue
        for _ in range(100):
            mid = (lo + hi) / 2 if hi / max(lo, 1e-12) < 4 else math.sqrt(max(lo, 1e-12) * hi)
            if gap(mid) >= target:
                hi = mid
            else:
                lo = mid
        out[name] = base * hi
    return out
