"""The transmit decision: which device segments a GSO skb, what the MTU allows, what reaches the wire or the peer.

- :func:`netif_skb_features`, :func:`netif_needs_gso`, :func:`skb_needs_linearize` and
  :func:`validate_xmit_skb` follow net/core/dev.c and include/linux/netdevice.h, on
  :class:`vnetlab.features.FeatureSet`;
- :func:`ip_output_mtu` is the IP layer's MTU rule at the route device (ip_forward's ip_exceeds_mtu,
  ip_finish_output_gso, ip_fragment; ip6_forward's ip6_pkt_too_big);
- :func:`send` walks a device stack the way each ndo_start_xmit hands the skb down, segmenting with
  :mod:`vnetlab.segment` where validate_xmit_skb says so;
- :func:`veth_xmit` is the receive side of a veth pair per kernel: the backlog (netif_rx) or the peer's NAPI
  and GRO (:func:`vnetlab.gro.aggregate`).

Sources read: Debian linux-source-6.1 (6.1.192) net/core/dev.c, include/linux/netdevice.h,
include/linux/skbuff.h, include/linux/if_vlan.h, net/ipv4/ip_forward.c, net/ipv4/ip_output.c,
drivers/net/veth.c; drivers/net/veth.c of 5.10 (Debian 5.10.223) and ≈6.18 (Kingxukai/linux @ 0291023e7330).
Each rule names its source in one comment line.

Devices are duck-typed: anything with ``name``, ``kind`` and ``features`` works (a vnetlab.netdev device or a
:class:`TxDevice`); ``vlan_features``, ``hw_enc_features``, ``gso_partial_features``, ``gso_max_segs``,
``gso_max_size``, ``mtu`` and the lower links are read when present.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vnetlab import gro
from vnetlab.features import (
    FeatureSet,
    can_checksum_protocol,
    gso_feature,
    mask,
    netdev_intersect_features,
    skb_gso_ok,
)
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, IP_HLEN, UDP_HLEN, VLAN_HLEN
from vnetlab.profiles import DEFAULT_KERNEL, Kernel, device_kernel
from vnetlab.profiles import kernel as _kernel
from vnetlab.segment import (
    SegmentResult,
    _skb_header_len,
    check_ip,
    gso_skb,
    l4_of,
    skb_gso_segment,
)
from vnetlab.skb import Skb

__all__ = [
    "GSO_MAX_SEGS", "GSO_MAX_SIZE", "FeatureSteps", "Hop", "MtuVerdict", "TxDevice", "TxResult", "Validated",
    "VethRx", "WirePacket", "gso_skb", "ip_fragment_sizes", "ip_output_mtu", "netif_needs_gso",
    "netif_skb_features", "netif_skb_features_steps", "send", "skb_needs_linearize", "validate_xmit_skb",
    "veth_napi_active", "veth_xmit", "VxlanRx", "vxlan_rcv",
]

GSO_MAX_SEGS = 65535  # include/linux/netdevice.h GSO_MAX_SEGS (dev->gso_max_segs default), 5.10..6.18
GSO_MAX_SIZE = 65536  # GSO_LEGACY_MAX_SIZE, dev->gso_max_size default (include/linux/netdevice.h 6.1)
# include/linux/if_vlan.h vlan_features_check: the direct mask for multi-tagged skbs (5.x..6.18)
_VLAN_MULTI_TAG = ("SG", "HIGHDMA", "HW_CSUM", "FRAGLIST", "HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
# include/uapi/linux/ipv6.h struct frag_hdr
_FRAG_HDR = 8


# ---------------------------------------------------------------------------------------------------------
# Devices


@dataclass(frozen=True)
class TxDevice:
    """A device as the transmit path sees it; a stand-in for vnetlab.netdev devices in tests.

    Feature fields take FeatureSets or iterables of NETIF_F names (converted for ``kernel``).
    ``lower`` is the real device (vlan, macvlan), the chosen slave (bond) or port (bridge); None for a NIC.
    ``features_check`` is the ndo_features_check: "passthru" (passthru_features_check) or "vlan"
    (dflt_features_check -> vlan_features_check).
    """

    name: str
    kind: str
    features: FeatureSet
    vlan_features: FeatureSet = None  # type: ignore[assignment]
    hw_enc_features: FeatureSet = None  # type: ignore[assignment]
    lower: Any = None
    features_check: str = "vlan"
    gso_max_segs: int = GSO_MAX_SEGS
    gso_max_size: int = GSO_MAX_SIZE
    kernel: str | Kernel = DEFAULT_KERNEL
    mtu: int = ETH_DATA_LEN
    gso_partial_features: FeatureSet = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        k = _kernel(self.kernel)  # resolved once: a lab kernel's rules stay with the device
        object.__setattr__(self, "kernel", k)
        for name in ("features", "vlan_features", "hw_enc_features", "gso_partial_features"):
            object.__setattr__(self, name, FeatureSet.coerce(getattr(self, name), k))


# ndo_features_check per device kind (6.1): macvlan.c, br_device.c, bond_main.c, veth.c, vxlan_core.c and
# virtio_net.c set passthru_features_check; vlan_dev.c sets none, so dflt_features_check -> vlan_features_check.
PASSTHRU_KINDS = frozenset({"macvlan", "bridge", "bond", "veth", "vxlan"})
PASSTHRU_DRIVERS = frozenset({"virtio_net"})
_UPPER_KINDS = ("vlan", "macvlan", "bond", "bridge")


def _features_check_of(dev: Any) -> str:
    explicit = getattr(dev, "features_check", None)
    if explicit in ("passthru", "vlan"):
        return explicit
    if getattr(dev, "kind", None) in PASSTHRU_KINDS or getattr(dev, "driver", None) in PASSTHRU_DRIVERS:
        return "passthru"
    return "vlan"


def _lower_of(dev: Any, port: Any = None) -> Any:
    """The device an upper device's ndo_start_xmit hands the skb to."""
    if getattr(dev, "kind", None) in ("bridge", "bond") and port is not None:
        return port
    lower = getattr(dev, "lower", None)
    if lower is not None:
        return lower
    lowers = getattr(dev, "lowers", None)
    return lowers[0] if lowers else None


def _fs(dev: Any, attr: str, kernel: Kernel) -> FeatureSet:
    return FeatureSet.coerce(getattr(dev, attr, None), kernel)


# ---------------------------------------------------------------------------------------------------------
# The transmit decision


def netif_needs_gso(skb: Skb, features: FeatureSet) -> bool:
    """include/linux/netdevice.h netif_needs_gso (6.1): a GSO skb the features cannot take whole, or whose
    ip_summed is neither CHECKSUM_PARTIAL nor CHECKSUM_UNNECESSARY."""
    return skb.is_gso() and (
        not skb_gso_ok(features, skb.gso_type, has_frag_list=skb.has_frag_list())
        or skb.ip_summed not in ("CHECKSUM_PARTIAL", "CHECKSUM_UNNECESSARY")
    )


def skb_needs_linearize(skb: Skb, features: FeatureSet) -> bool:
    """include/linux/skbuff.h skb_needs_linearize (6.1): a frag_list without FRAGLIST, or frags without SG."""
    return bool(skb.frags or skb.frag_list) and (
        (skb.has_frag_list() and "FRAGLIST" not in features) or (bool(skb.frags) and "SG" not in features)
    )


@dataclass(frozen=True)
class FeatureSteps:
    """netif_skb_features() step by step: the feature set after each rule, and why it changed."""

    start: FeatureSet
    steps: tuple[tuple[str, FeatureSet], ...]

    @property
    def result(self) -> FeatureSet:
        return self.steps[-1][1] if self.steps else self.start


def netif_skb_features_steps(dev: Any, skb: Skb, *, kernel: str | Kernel | None = None, inband_vlan_tags: int = 0,
                             ip: int = 4) -> FeatureSteps:
    """:func:`netif_skb_features` with every intermediate feature set, for the notebook."""
    kv = k = device_kernel(dev, kernel)
    check_ip(ip)
    gmask = mask("GSO_MASK", kv)
    start = _fs(dev, "features", kv)
    feats = start
    steps: list[tuple[str, FeatureSet]] = []
    if skb.is_gso():
        # net/core/dev.c gso_features_check (6.1): each limit drops all of NETIF_F_GSO_MASK
        max_segs = getattr(dev, "gso_max_segs", GSO_MAX_SEGS)
        max_size = getattr(dev, "gso_max_size", GSO_MAX_SIZE)
        if skb.gso_segs > max_segs:
            feats -= gmask
            steps.append((f"gso_features_check: gso_segs {skb.gso_segs} > gso_max_segs {max_segs}", feats))
        # net/core/dev.c gso_features_check: skb->len >= gso_max_size (kernel rule gso_max_size_check: mainline
        # 24ab059d2ebd, v6.7; stable 6.6.9, 6.1.70, 5.10.206, so in Debian's 5.10.223 and 6.1.192)
        elif k.rule("gso_max_size_check") and skb.len >= max_size:
            feats -= gmask
            steps.append((f"gso_features_check: len {skb.len} >= gso_max_size {max_size}", feats))
        elif not skb.gso_type:
            feats -= gmask
            steps.append(("gso_features_check: gso_type 0 (skb_warn_bad_offload)", feats))
        else:
            partial = _fs(dev, "gso_partial_features", kv)
            if "PARTIAL" not in skb.gso_type and partial & feats:
                feats -= partial
                steps.append(("gso_features_check: gso_partial_features removed", feats))
    if skb.encapsulation:
        # net/core/dev.c netif_skb_features (6.1): encapsulated skbs use hw_enc_features
        feats &= _fs(dev, "hw_enc_features", kv)
        steps.append(("encapsulation: & hw_enc_features", feats))
    if skb.vlan_tag is not None or inband_vlan_tags:
        # net/core/dev.c netif_skb_features (6.1): tagged skb -> intersect(vlan_features | CTAG_TX | STAG_TX)
        feats = netdev_intersect_features(
            feats, _fs(dev, "vlan_features", kv) | {"HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX"})
        steps.append(("VLAN tag: intersect with vlan_features | HW_VLAN_CTAG_TX | HW_VLAN_STAG_TX", feats))
    tags = inband_vlan_tags + (1 if skb.vlan_tag is not None else 0)
    if _features_check_of(dev) == "vlan" and tags >= 2:
        # include/linux/if_vlan.h vlan_features_check (6.1): multi-tagged -> direct mask, no GSO at all
        feats &= set(_VLAN_MULTI_TAG)
        steps.append(("vlan_features_check: multi-tagged skb", feats))
    # net/core/dev.c harmonize_features (6.1): no checksum offload for the protocol -> drop CSUM_MASK and GSO_MASK
    if skb.ip_summed != "CHECKSUM_NONE" and not can_checksum_protocol(feats, ip):
        before = feats
        feats -= mask("CSUM_MASK", kv) | gmask
        if before != feats:
            steps.append((f"harmonize_features: cannot checksum IPv{ip}: drop CSUM_MASK and GSO_MASK", feats))
    return FeatureSteps(start, tuple(steps))


def netif_skb_features(dev: Any, skb: Skb, *, kernel: str | Kernel | None = None, inband_vlan_tags: int = 0,
                       ip: int = 4) -> FeatureSet:
    """The features validate_xmit_skb() uses for ``skb`` on ``dev`` (net/core/dev.c netif_skb_features, 6.1):
    dev->features, gso_features_check, hw_enc_features, the VLAN intersection, ndo_features_check
    (passthru or vlan_features_check) and harmonize_features."""
    return netif_skb_features_steps(dev, skb, kernel=kernel, inband_vlan_tags=inband_vlan_tags, ip=ip).result


@dataclass(frozen=True)
class Validated:
    """validate_xmit_skb() at one device for one skb."""

    action: str  # "segmented", "linearized" or "passed"
    skbs: tuple[Skb, ...]
    features: FeatureSet
    tag_inserted: bool = False
    segment: SegmentResult | None = None
    reason: str = ""


def _missing_gso(skb: Skb, feats: FeatureSet) -> list[str]:
    missing = sorted(n for n in (gso_feature(t, feats.kernel) for t in skb.gso_type) if n not in feats)
    if skb.has_frag_list() and "FRAGLIST" not in feats:
        missing.append("FRAGLIST (skb has a frag_list)")
    return missing


def validate_xmit_skb(dev: Any, skb: Skb, *, kernel: str | Kernel | None = None, inband_vlan_tags: int = 0,
                      ip: int = 4, outer: int = 0) -> Validated:
    """net/core/dev.c validate_xmit_skb (6.1): features; validate_xmit_vlan (software tag insert when the
    device lacks VLAN TX offload); then segment if netif_needs_gso, else linearize if skb_needs_linearize.
    ``outer``: tunnel header bytes in front of an encapsulated skb (vxlan). A :class:`Kernel` for ``kernel``
    carries its rules (segmentation reads them) into the device's feature tables of that version."""
    kv = rules = device_kernel(dev, kernel)
    feats = netif_skb_features(dev, skb, kernel=kv, inband_vlan_tags=inband_vlan_tags, ip=ip)
    tag_inserted = False
    if skb.vlan_tag is not None and "HW_VLAN_CTAG_TX" not in feats:
        # net/core/dev.c validate_xmit_vlan (6.1): __vlan_hwaccel_push_inside when !vlan_hw_offload_capable
        skb = replace(skb, headlen=skb.headlen + VLAN_HLEN, end_offset=skb.end_offset + VLAN_HLEN, vlan_tag=None)
        inband_vlan_tags += 1
        tag_inserted = True
    if netif_needs_gso(skb, feats):
        missing = _missing_gso(skb, feats)
        reason = "lacks " + ", ".join(missing) if missing else f"ip_summed {skb.ip_summed}"
        seg = skb_gso_segment(skb, feats, kernel=rules, inband_vlan_tags=inband_vlan_tags, ip=ip, outer=outer)
        return Validated("segmented", seg.segs, feats, tag_inserted, seg, reason)
    if skb_needs_linearize(skb, feats):
        flat = replace(skb, headlen=skb.len, frags=[], frag_list=[], end_offset=skb.headroom + skb.len)
        return Validated("linearized", (flat,), feats, tag_inserted, None,
                         "frag_list without FRAGLIST" if skb.has_frag_list() and "FRAGLIST" not in feats
                         else "frags without SG")
    return Validated("passed", (skb,), feats, tag_inserted)


# ---------------------------------------------------------------------------------------------------------
# The IP layer's MTU rule at the route device


def _network_seglen(skb: Skb, ip: int) -> int:
    """include/linux/skbuff.h skb_gso_network_seglen: IP + L4 header + gso_size (the largest segment)."""
    return _skb_header_len(skb, 0, ip) - ETH_HLEN + skb.gso_size


def ip_fragment_sizes(l3_payload: int, mtu: int, *, ip: int = 4) -> list[int]:
    """The IP payload bytes of each fragment: net/ipv4/ip_output.c ip_do_fragment / __ip_append_data put
    (mtu - 20) & ~7 bytes in every fragment but the last; net/ipv6/ip6_output.c ip6_fragment leaves room
    for the 8-byte fragment header, (mtu - 40 - 8) & ~7 (both 6.1; no IP options, no extension headers)."""
    check_ip(ip)
    per = (mtu - IP_HLEN[ip] - (_FRAG_HDR if ip == 6 else 0)) & ~7
    if per <= 0:
        raise ValueError(f"mtu={mtu} leaves no room for an IPv{ip} fragment")
    sizes = [per] * (l3_payload // per)
    if l3_payload % per:
        sizes.append(l3_payload % per)
    return sizes


@dataclass(frozen=True)
class MtuVerdict:
    """What the IP layer does with one skb at the route device: "pass", "fragment" (ip_fragment, or
    ip_finish_output_gso's segment-then-fragment for a GSO skb) or "drop" (ICMP frag needed / packet too big)."""

    action: str
    mtu: int
    l3_len: int
    reason: str = ""


def ip_output_mtu(skb: Skb, mtu: int, *, ip: int = 4, df: bool = True, inband_vlan_tags: int = 0) -> MtuVerdict:
    """The MTU rule of the IP layer for ``skb`` leaving through a route device of MTU ``mtu``.

    - net/ipv4/ip_forward.c ip_exceeds_mtu (6.1): larger than the MTU with DF set is refused, unless it is a
      GSO skb whose every segment fits (skb_gso_validate_network_len); net/ipv6/ip6_forward.c
      ip6_pkt_too_big the same for IPv6, where a router never fragments;
    - net/ipv4/ip_output.c ip_finish_output_gso / __ip_finish_output (6.1): without DF a GSO skb whose
      segments do not fit is segmented in software and each segment fragmented; a plain skb is fragmented.
    ``df``: the IPv4 DF bit; for IPv6 ``df=False`` means a local sender that may fragment (no IPV6_DONTFRAG).
    """
    check_ip(ip)
    l3 = skb.len - ETH_HLEN - VLAN_HLEN * inband_vlan_tags
    if skb.is_gso():
        seglen = _network_seglen(skb, ip)
        if seglen <= mtu:
            return MtuVerdict("pass", mtu, l3)
        if df:
            return MtuVerdict("drop", mtu, l3, f"GSO segments of {seglen} B exceed MTU {mtu} with DF "
                              "(ip_exceeds_mtu / ip6_pkt_too_big: ICMP frag needed)")
        return MtuVerdict("fragment", mtu, l3, f"GSO segments of {seglen} B exceed MTU {mtu}: ip_finish_output_gso "
                          "segments in software, then ip_fragment")
    if l3 <= mtu:
        return MtuVerdict("pass", mtu, l3)
    if df:
        return MtuVerdict("drop", mtu, l3, f"{l3} B > MTU {mtu} with DF (ICMP frag needed / packet too big)")
    return MtuVerdict("fragment", mtu, l3, f"{l3} B > MTU {mtu}: ip_fragment")


# ---------------------------------------------------------------------------------------------------------
# What leaves: hops, wire packets, drops


@dataclass(frozen=True)
class Hop:
    """What happened at one device during :func:`send` (aggregated over the skbs that reached it)."""

    name: str
    kind: str
    actions: tuple[str, ...]
    skbs_in: int
    skbs_out: int
    features: FeatureSet | None = None
    reason: str = ""
    method: str = ""

    @property
    def action(self) -> str:
        """The main action: "segmented", "linearized", "passed", "fragmented", "dropped" or what the driver did."""
        return self.actions[0] if self.actions else "passed"

    @property
    def what(self) -> str:
        return ", ".join(self.actions)

    def __str__(self) -> str:
        extra = f" ({self.reason})" if self.reason else ""
        return f"{self.name} [{self.kind}]: {self.what}{extra}; {self.skbs_in} skb(s) in, {self.skbs_out} out"


@dataclass(frozen=True)
class WirePacket:
    """One packet leaving the host: its frame bytes (no FCS), the L4 payload bytes it carries, who segmented
    it, and whether it is an IP fragment (only the first fragment carries the L4 header)."""

    frame_len: int
    payload_len: int
    vlan_tagged: bool
    segmented_by: str  # "none", "software" or "hardware"
    fragment: bool = False


@dataclass(frozen=True)
class VethRx:
    """The receive side of a veth pair for the skbs veth_xmit handed over (drivers/net/veth.c).

    ``paths``: per skb "napi" (the peer's ptr_ring, veth_poll, napi_gro_receive) or "backlog" (__netif_rx,
    no GRO); ``gro``: whether napi_gro_receive aggregated (the peer has NETIF_F_GRO: netif_elide_gro);
    ``delivered``: the skbs handed up the peer's stack, in order; ``dropped``: skbs refused by
    is_skb_forwardable (too long for the peer's MTU).
    """

    device: str
    kernel: Kernel  # the kernel the send ran (a lab kernel with its patch's rules)
    paths: tuple[str, ...]
    gro: bool
    delivered: tuple[Skb, ...]
    dropped: int = 0
    reason: str = ""

    @property
    def skbs(self) -> int:
        return len(self.delivered)


@dataclass(frozen=True)
class TxResult:
    """The outcome of :func:`send`.

    ``segmented_at``: name of the first device whose validate_xmit_skb segmented in software, or None.
    ``segments``: the packets that reach the wire (WirePacket each), after any hardware segmentation; for a
    veth, one per skb handed to the peer. ``hops``: one :class:`Hop` per device in the order the skb reached
    them. ``ops``: operation counts for the cost model (dev_queue_xmit, validate_xmit_skb, skb_segment_segs,
    ...). ``dropped``: (where, reason) per skb the path refused (MTU); ``peer_rx``: a veth's receive side.
    """

    segmented_at: str | None
    segments: tuple[WirePacket, ...]
    hops: tuple[Hop, ...]
    ops: Mapping[str, int]
    skbs_to_driver: tuple[Skb, ...] = ()
    kernel: Kernel | str = DEFAULT_KERNEL  # the Kernel the send ran
    dropped: tuple[tuple[str, str], ...] = ()
    peer_rx: VethRx | None = None

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
        lines.extend(f"dropped at {where}: {why}" for where, why in self.dropped)
        return "\n".join(lines)


def _driver_wire(skb: Skb, tags: int, ip: int, outer: int = 0) -> list[WirePacket]:
    hdr = _skb_header_len(skb, tags, ip, outer)
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


def _fragment_wire(skb: Skb, mtu: int, tags: int, ip: int, segmented_by: str) -> list[WirePacket]:
    """IP fragments of one non-GSO skb (ip_fragment / ip6_fragment): the L4 header rides in the first."""
    l4 = UDP_HLEN if l4_of(skb) == "udp" else _skb_header_len(skb, 0, ip) - ETH_HLEN - IP_HLEN[ip]
    l3_payload = skb.len - ETH_HLEN - VLAN_HLEN * tags - IP_HLEN[ip]
    tagged = skb.vlan_tag is not None or tags > 0
    extra = VLAN_HLEN if skb.vlan_tag is not None else 0
    out = []
    for i, chunk in enumerate(ip_fragment_sizes(l3_payload, mtu, ip=ip)):
        frame = ETH_HLEN + VLAN_HLEN * tags + extra + IP_HLEN[ip] + (_FRAG_HDR if ip == 6 else 0) + chunk
        out.append(WirePacket(frame, chunk - (l4 if i == 0 else 0), tagged, segmented_by, fragment=True))
    return out


def _fragment_skbs(skb: Skb, mtu: int, tags: int, ip: int) -> list[Skb]:
    """The linear skbs ip_fragment / ip6_fragment make of one non-GSO skb (as they reach dev_queue_xmit)."""
    return [Skb(headlen=p.frame_len, truesize=512 + p.frame_len, head_frag=False, end_offset=64 + p.frame_len,
                headroom=64, ip_summed="CHECKSUM_NONE", note="IP fragment")
            for p in _fragment_wire(skb, mtu, tags, ip, "none")]


def _add(items: list[str], item: str, front: bool = False) -> None:
    if item in items:
        return
    if front:
        items.insert(0, item)
    else:
        items.append(item)


def _push_tag(skb: Skb, vid: int) -> Skb:
    # an skb still carrying a hwaccel tag (QinQ): the inner tag goes in-band and the new one is hwaccel
    return replace(skb, headlen=skb.headlen + VLAN_HLEN, end_offset=skb.end_offset + VLAN_HLEN, vlan_tag=vid)


def _is_skb_forwardable(dev: Any, skb: Skb) -> bool:
    # include/linux/netdevice.h __is_skb_forwardable (6.1): len <= mtu + hard_header_len + VLAN_HLEN, or GSO
    return skb.is_gso() or skb.len <= getattr(dev, "mtu", ETH_DATA_LEN) + ETH_HLEN + VLAN_HLEN


@dataclass(frozen=True)
class _Pkt:
    """One skb on its way down: in-band VLAN tags pushed so far and tunnel header bytes in front."""

    skb: Skb
    tags: int = 0
    outer: int = 0


def _encapsulate(p: _Pkt, dev: Any) -> _Pkt:
    # drivers/net/vxlan/vxlan_core.c vxlan_build_skb -> iptunnel_handle_offloads (6.1): outer headers pushed,
    # skb->encapsulation set, gso_type |= SKB_GSO_UDP_TUNNEL (UDP_TUNNEL_CSUM when the outer UDP checksum is on:
    # the IPv6 default, udp6zerocsumtx off; IPv4 vxlan defaults to no outer checksum).
    hl = dev.headroom()
    s = p.skb
    gso_type = s.gso_type | ({"UDP_TUNNEL_CSUM" if dev.ip == 6 else "UDP_TUNNEL"} if s.is_gso() else set())
    s = replace(s, headlen=s.headlen + hl, end_offset=s.end_offset + hl, encapsulation=True,
                gso_type=frozenset(gso_type), vlan_tag=None)
    return _Pkt(s, 0, p.outer + hl)


def send(dev: Any, skb: Skb, *, kernel: str | Kernel | None = None, port: Any = None, ip: int = 4, df: bool = True,
         route: bool = True, local_udp: bool = False, udp_gro: bool = False, local_socket: bool = True) -> TxResult:
    """ip output at ``dev`` and dev_queue_xmit(skb) on it and down the stack, running validate_xmit_skb at
    every device.

    - ``route=True``: ``dev`` is the route device and the IP layer's MTU rule (:func:`ip_output_mtu`, with
      ``df``) runs first; ``route=False`` for a bridged frame (br_dev_queue_push_xmit: is_skb_forwardable);
    - vlan (net/8021q/vlan_dev.c vlan_dev_hard_start_xmit, 6.1): sets the hwaccel tag
      (__vlan_hwaccel_put_tag, REORDER_HDR default) and calls dev_queue_xmit on the real device;
    - macvlan (drivers/net/macvlan.c macvlan_queue_xmit, 6.1): dev_queue_xmit_accel on the lower device;
    - bond (drivers/net/bonding/bond_main.c bond_dev_queue_xmit): dev_queue_xmit on a slave (``port`` or
      the first);
    - bridge (net/bridge/br_device.c br_dev_xmit -> br_forward.c br_dev_queue_push_xmit): dev_queue_xmit on
      the egress port (``port`` or the first); traffic forwarded port-to-port never meets br0's validate;
    - vxlan (drivers/net/vxlan/vxlan_core.c vxlan_xmit_one, 6.1): encapsulates (:func:`_encapsulate`) and
      sends on its underlay device, whose validate_xmit_skb then uses hw_enc_features (the underlay's own IP
      output is not re-checked: the vxlan MTU already leaves room for the outer headers);
    - veth: veth_xmit hands each skb to the peer unsegmented; :func:`veth_xmit` decides the peer's receive
      path and GRO (``local_udp``: the skb comes from a local UDP socket, destructor sock_wfree; ``udp_gro``
      and ``local_socket``: the receiving socket, as :func:`vnetlab.gro.aggregate` takes them);
    - anything without a lower device is the driver: a GSO skb it accepted is segmented by the hardware.

    ``ops["kept_header_segs"]`` counts segments that left with the IP/UDP header they arrived with
    (:attr:`vnetlab.segment.SegmentResult.kept_headers`).
    """
    kv = rules = device_kernel(dev, kernel)
    check_ip(ip)
    hops: list[Hop] = []
    ops: Counter[str] = Counter()
    wire: list[WirePacket] = []
    to_driver: list[Skb] = []
    dropped: list[tuple[str, str]] = []
    segmented_at: str | None = None
    peer_rx: VethRx | None = None
    pending: list[_Pkt] = [_Pkt(skb)]
    fragment_mtu: int | None = None
    if route:
        verdict = ip_output_mtu(skb, getattr(dev, "mtu", ETH_DATA_LEN), ip=ip, df=df)
        name = getattr(dev, "name", "?")
        if verdict.action == "drop":
            dropped.append((name, verdict.reason))
            hops.append(Hop(name, getattr(dev, "kind", "nic"), ("dropped",), 1, 0, None, verdict.reason,
                            "ip_output"))
            return TxResult(None, (), tuple(hops), dict(ops), (), kv, tuple(dropped))
        if verdict.action == "fragment":
            fragment_mtu = verdict.mtu
            if skb.is_gso():
                # net/ipv4/ip_output.c ip_finish_output_gso: skb_gso_segment(features & ~GSO_MASK), then fragment
                feats = netif_skb_features(dev, skb, kernel=kv, ip=ip) - mask("GSO_MASK", kv)
                seg = skb_gso_segment(skb, feats, kernel=rules, ip=ip)
                ops["skb_segment_segs"] += len(seg.segs)
                ops["kept_header_segs"] += seg.kept_headers
                segmented_at = name
                pending = [_Pkt(s) for s in seg.segs]
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
        out: list[_Pkt] = []
        feats: FeatureSet | None = None
        for p in pending:
            ops["dev_queue_xmit"] += 1
            ops["validate_xmit_skb"] += 1
            v = validate_xmit_skb(current, p.skb, kernel=rules, inband_vlan_tags=p.tags, ip=ip, outer=p.outer)
            feats = v.features
            ntags = p.tags + (1 if v.tag_inserted else 0)
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
                ops["kept_header_segs"] += v.segment.kept_headers
            elif v.action == "linearized":
                ops["linearized_bytes"] += p.skb.data_len
            _add(actions, v.action, front=v.action != "passed")
            if v.reason:
                _add(reasons, v.reason)
            out.extend(_Pkt(o, ntags, p.outer) for o in v.skbs)
        lower = _lower_of(current, port) if kind in _UPPER_KINDS else None
        if kind == "vlan":
            # vlan_dev_hard_start_xmit (6.1): REORDER_HDR -> __vlan_hwaccel_put_tag, skb->dev = real_dev
            vid = getattr(current, "vid", 1)
            out = [_Pkt(replace(o.skb, vlan_tag=vid), o.tags, o.outer) if o.skb.vlan_tag is None
                   else _Pkt(_push_tag(o.skb, vid), o.tags + 1, o.outer) for o in out]
            ops["vlan_start_xmit"] += len(out)
            _add(actions, "tag set (hwaccel)")
        elif kind in ("macvlan", "bond", "bridge"):
            ops[f"{kind}_start_xmit"] += len(out)
        elif kind == "vxlan" and getattr(current, "underlay", None) is not None:
            out = [_encapsulate(o, current) for o in out]
            ops["vxlan_xmit"] += len(out)
            _add(actions, "encapsulated (vxlan_xmit_one)")
            lower = current.underlay
        if lower is not None and not route and kind == "bridge":
            # net/bridge/br_forward.c br_dev_queue_push_xmit (6.1): is_skb_forwardable on the port
            kept = [o for o in out if _is_skb_forwardable(lower, o.skb)]
            dropped.extend((lower.name, "longer than the port's MTU (is_skb_forwardable)")
                           for _ in range(len(out) - len(kept)))
            out = kept
        if lower is None:
            def fragmented(o: _Pkt) -> bool:
                # ip_fragment ran before dev_queue_xmit: these leave as IP fragments (reassembled by the peer)
                return (fragment_mtu is not None and not o.skb.is_gso()
                        and o.skb.len - ETH_HLEN - VLAN_HLEN * o.tags > fragment_mtu)

            if kind == "veth":
                _add(actions, "handed to peer")
                veth_in: list[Skb] = []
                groups: list[int] = []
                for i, o in enumerate(out):
                    pieces = _fragment_skbs(o.skb, fragment_mtu or 0, o.tags, ip) if fragmented(o) else [o.skb]
                    veth_in.extend(pieces)
                    groups.extend([i if fragmented(o) else -1] * len(pieces))
                peer_rx = veth_xmit(current, veth_in, kernel=kv, ip=ip, local_udp=local_udp, udp_gro=udp_gro,
                                    local_socket=local_socket, fragment_of=groups)
                dropped.extend((peer_rx.device, peer_rx.reason) for _ in range(peer_rx.dropped))
            else:
                ops["driver_xmit_skbs"] += len(out)
                if any(o.skb.is_gso() for o in out):
                    _add(actions, "segmented by hardware")
            for o in out:
                to_driver.append(o.skb)
                if fragmented(o):
                    _add(actions, "fragmented")
                    wire.extend(_fragment_wire(o.skb, fragment_mtu or 0, o.tags, ip,
                                               "software" if segmented_at else "none"))
                elif kind == "veth":
                    # veth_xmit: the peer receives the skb as it is, GSO or not (one "packet" on the pair).
                    tagged = o.skb.vlan_tag is not None or o.tags > 0
                    hdr = _skb_header_len(o.skb, o.tags, ip, o.outer)
                    wire.append(WirePacket(o.skb.len, o.skb.len - hdr, tagged, "none"))
                else:
                    wire.extend(_driver_wire(o.skb, o.tags, ip, o.outer))
        hops.append(Hop(name, kind, tuple(actions), len(pending), len(out), feats, "; ".join(reasons),
                        ", ".join(sorted(methods))))
        pending = out
        current = lower
    ops["wire_packets"] = len(wire)
    ops["wire_bytes"] = sum(p.frame_len for p in wire)
    return TxResult(segmented_at, tuple(wire), tuple(hops), dict(ops), tuple(to_driver), kv, tuple(dropped), peer_rx)


# ---------------------------------------------------------------------------------------------------------
# veth: the peer's receive side


def veth_napi_active(rcv: Any, kernel: str | Kernel | None = None) -> bool:
    """Whether the receiving veth has NAPI instances (rq->napi set), per kernel (drivers/net/veth.c):

    - without the kernel rule veth_napi_for_gro (5.10..5.12, Debian 5.10.223) veth_xmit uses NAPI only with an XDP
      program on the receiver (rcv_xdp = rq->xdp_prog);
    - with it (5.13+, d3256efd8e8b "veth: allow enabling NAPI even without XDP"): an XDP program, or GRO requested
      (veth_gro_requested: NETIF_F_GRO in wanted_features) on the receiver, when it is up.
    """
    k = device_kernel(rcv, kernel)
    xdp = bool(getattr(rcv, "xdp", False))
    if not k.rule("veth_napi_for_gro"):
        return xdp
    return xdp or "GRO" in FeatureSet.coerce(getattr(rcv, "wanted_features", None), k)


def _eligible_for_gro(dev: Any, rcv: Any, local_udp: bool, kernel: Kernel) -> bool:
    # drivers/net/veth.c veth_skb_is_eligible_for_gro (47e550e0105b, 5.13; same in 6.1 and ≈6.18): the xmit
    # device without ALL_TSO, or a local UDP skb (destructor sock_wfree) towards GRO_FRAGLIST | GRO_UDP_FWD.
    xmit_feats = _fs(dev, "features", kernel)
    rcv_feats = _fs(rcv, "features", kernel)
    return not (xmit_feats & mask("ALL_TSO", kernel)) or (
        local_udp and ("GRO_FRAGLIST" in rcv_feats or "GRO_UDP_FWD" in rcv_feats))


def veth_xmit(dev: Any, skbs: Iterable[Skb], *, kernel: str | Kernel | None = None, ip: int = 4,
              local_udp: bool = False, udp_gro: bool = False, local_socket: bool = True,
              fragment_of: Sequence[int] = ()) -> VethRx:
    """drivers/net/veth.c veth_xmit for ``skbs`` sent on veth ``dev``: what its peer's stack receives.

    Per skb: __dev_forward_skb drops it if is_skb_forwardable fails (non-GSO longer than the peer's MTU);
    it takes the NAPI path (veth_xdp_rx -> veth_poll -> XDP_PASS -> napi_gro_receive) when the peer's rq has
    NAPI (:func:`veth_napi_active`) and, from 5.13, veth_skb_is_eligible_for_gro; else __netif_rx (the
    backlog: no GRO). napi_gro_receive aggregates only when the peer has NETIF_F_GRO (netif_elide_gro,
    include/linux/netdevice.h 6.1); GRO is :func:`vnetlab.gro.aggregate` on the NAPI skbs (one flow, one
    poll), with the peer's features and the receiving socket given by ``udp_gro`` / ``local_socket``.
    ``fragment_of[i]`` >= 0 marks skb i as an IP fragment of datagram number ``fragment_of[i]``: GRO leaves
    fragments alone (inet_gro_receive flushes them) and ip_defrag hands up one reassembled datagram.
    A locally encapsulated UDP skb (a vxlan's, skb->encapsulation) gets no GRO where the kernel rule
    udp_gro_skips_local_encap holds (net/ipv4/udp_offload.c udp_gro_receive, Debian 6.1.192 on); :func:`vxlan_rcv`
    is the vxlan device above.
    """
    kv = k = device_kernel(dev, kernel)
    rcv = getattr(dev, "peer", None)
    if rcv is None:
        raise ValueError(f"dev={getattr(dev, 'name', dev)!r} is not a veth with a peer")
    skbs = list(skbs)
    napi = veth_napi_active(rcv, kv)
    paths: list[str] = []
    kept: list[Skb] = []
    kept_index: list[int] = []
    dropped = 0
    for i, s in enumerate(skbs):
        if not _is_skb_forwardable(rcv, s):
            dropped += 1
            continue
        use_napi = napi and (not k.rule("veth_napi_for_gro") or _eligible_for_gro(dev, rcv, local_udp, kv))
        paths.append("napi" if use_napi else "backlog")
        kept.append(s)
        kept_index.append(i)
    rcv_feats = _fs(rcv, "features", kv)
    gro_on = "GRO" in rcv_feats
    napi_skbs = [s for s, p in zip(kept, paths) if p == "napi"]
    # __dev_forward_skb -> eth_type_trans: what the peer's stack sees starts at the network header
    delivered = [replace(s, headroom=s.headroom + ETH_HLEN, headlen=s.headlen - ETH_HLEN, frags=list(s.frags),
                         frag_list=list(s.frag_list)) for s in kept]
    frag_ids = [fragment_of[i] if i < len(fragment_of) else -1 for i in kept_index]
    # net/ipv4/udp_offload.c udp_gro_receive (kernel rule udp_gro_skips_local_encap): a locally encapsulated
    # skb (skb->encapsulation, kept across veth) found no tunnel GRO and gets no L4 GRO either: each goes up
    local_encap = bool(napi_skbs) and napi_skbs[0].encapsulation and l4_of(napi_skbs[0]) == "udp" and bool(
        k.rule("udp_gro_skips_local_encap"))
    if napi_skbs and gro_on and all(f < 0 for f in frag_ids) and not local_encap:
        l4 = l4_of(napi_skbs[0])
        merged = gro.aggregate([copy.deepcopy(s) for s in napi_skbs], l4=l4, udp_gro=udp_gro and l4 == "udp",
                               features=rcv_feats, kernel=kv, ip=ip, local_socket=local_socket)
        # the backlog is processed after this NAPI poll's GRO flush; one flow takes one path per send
        delivered = [s for s, p in zip(delivered, paths) if p == "backlog"] + list(merged)
    elif any(f >= 0 for f in frag_ids):
        # net/ipv4/ip_fragment.c ip_defrag (net/ipv6/reassembly.c ipv6_frag_rcv): one datagram per group
        out: list[Skb] = []
        for fid in dict.fromkeys(frag_ids):
            group = [s for s, f in zip(delivered, frag_ids) if f == fid]
            if fid < 0:
                out.extend(group)
                continue
            l3 = sum(s.len - IP_HLEN[ip] - (_FRAG_HDR if ip == 6 else 0) for s in group) + IP_HLEN[ip]
            out.append(Skb(headlen=l3, truesize=sum(s.truesize for s in group), head_frag=False,
                           end_offset=64 + l3, headroom=64, note="reassembled by ip_defrag"))
        delivered = out
    reason = "longer than the peer's MTU (is_skb_forwardable)" if dropped else ""
    return VethRx(getattr(rcv, "name", "?"), kv, tuple(paths), bool(napi_skbs) and gro_on, tuple(delivered),
                  dropped, reason)



# ---------------------------------------------------------------------------------------------------------
# vxlan: the receive side (decapsulation and the vxlan device's own GRO)


@dataclass(frozen=True)
class VxlanRx:
    """What a vxlan device hands up for the skbs its underlay delivered (:func:`vxlan_rcv`).

    ``decapsulated``: the inner skbs vxlan_rcv made (one per outer skb: vxlan counts them in its rx_packets);
    ``delivered``: what gro_cells' NAPI poll handed up the inner stack (network header first); ``gro``: whether
    that poll aggregated (the vxlan device has NETIF_F_GRO)."""

    device: str
    kernel: Kernel
    decapsulated: tuple[Skb, ...]
    gro: bool
    delivered: tuple[Skb, ...]

    @property
    def rx_packets(self) -> int:
        return len(self.decapsulated)


def vxlan_rcv(vx: Any, skbs: Iterable[Skb], *, kernel: str | Kernel | None = None, ip: int = 4,
              udp_gro: bool = False, local_socket: bool = True) -> VxlanRx:
    """drivers/net/vxlan/vxlan_core.c vxlan_udp_encap_recv -> vxlan_rcv (6.1; same in 6.12 and 7.2) for the
    skbs the underlay handed to vxlan's UDP socket (``skbs``: each starting at the outer IP header, as
    :attr:`VethRx.delivered` holds them), then net/core/gro_cells.c gro_cells_receive -> the vxlan device's
    NAPI poll -> napi_gro_receive. ``ip``: the inner IP version (the vxlan device's ``ip`` is the outer one).

    Per outer skb: __iptunnel_pull_header pulls the outer IP + UDP + VXLAN headers, eth_type_trans the inner
    Ethernet header; the skb is no longer encapsulated (vxlan's socket takes GSO skbs whole: udp_allow_gso in
    vxlan_socket_create, so a GRO skb of the underlay is decapsulated as one skb, its tunnel GSO bits gone).
    gro_cells_receive queues it for the vxlan device's NAPI, whose GRO is :func:`vnetlab.gro.aggregate` with
    the vxlan device's features and the inner socket (``udp_gro``: UDP_GRO set; ``local_socket``: found).
    """
    check_ip(ip)
    kv = device_kernel(vx, kernel)
    if getattr(vx, "kind", None) != "vxlan":
        raise ValueError(f"vx={getattr(vx, 'name', vx)!r} must be a vxlan device (netdev.Namespace.vxlan)")
    outer = vx.headroom() - ETH_HLEN  # include/net/vxlan.h vxlan_headroom: outer IP + UDP + VXLAN header
    decap: list[Skb] = []
    for i, s in enumerate(skbs):
        if not isinstance(s, Skb):
            raise ValueError(f"skbs[{i}] must be a vnetlab.skb.Skb, got {type(s).__name__}")
        if s.headlen < outer + ETH_HLEN:
            raise ValueError(f"skbs[{i}] has {s.headlen} B linear, less than the outer headers and inner Ethernet "
                             f"header ({outer + ETH_HLEN} B) vxlan_rcv pulls (pskb_may_pull)")
        gso_type = s.gso_type - {"UDP_TUNNEL", "UDP_TUNNEL_CSUM"}
        decap.append(replace(s, headroom=s.headroom + outer + ETH_HLEN, headlen=s.headlen - outer - ETH_HLEN,
                             frags=list(s.frags), frag_list=list(s.frag_list), encapsulation=False,
                             gso_type=frozenset(gso_type)))
    feats = _fs(vx, "features", kv)
    gro_on = "GRO" in feats and bool(decap)
    delivered = list(decap)
    if gro_on:
        # gro_cells_receive -> napi_gro_receive on the vxlan device: the skb starts at the inner IP header
        # there, so GRO sees it with the Ethernet header in front again (eth_gro_receive)
        withmac = [replace(s, headroom=s.headroom - ETH_HLEN, headlen=s.headlen + ETH_HLEN, frags=list(s.frags),
                           frag_list=list(s.frag_list)) for s in decap]
        l4 = l4_of(withmac[0])
        merged = gro.aggregate(withmac, l4=l4, udp_gro=udp_gro and l4 == "udp", features=feats, kernel=kv,
                               ip=ip, local_socket=local_socket)
        delivered = list(merged)  # aggregate hands them up past eth_gro_receive: network header first
    return VxlanRx(getattr(vx, "name", "?"), kv, tuple(decap), gro_on, tuple(delivered))
