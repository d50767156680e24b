"""The transmit decision: which device segments a GSO skb, what the MTU allows, what reaches the wire or the peer.

- :func:`netif_skb_features`, :func:`netif_needs_gso`, :func:`skb_needs_linearize` and
  :func:`validate_xmit_skb` follow net/core/dev.c and include/linux/netdevice.h, on
  :class:`vnetlab.features.FeatureSet`;
- :func:`ip_output_mtu` is the IP layer's MTU rule at the route device (ip_forward's ip_exceeds_mtu,
  ip_finish_output_gso, ip_fragment; ip6_forward's ip6_pkt_too_big);
- :func:`send` walks a device stack the way each ndo_start_xmit hands the skb down, segmenting with
  :mod:`vnetlab.segment` where validate_xmit_skb says so;
- the receive side of a veth pair or a vxlan device (``veth_xmit``, ``vxlan_rcv``) is :mod:`vnetlab.virtual_rx`,
  its names also reachable from here.

Sources read: Debian linux-source-6.1 (6.1.192) net/core/dev.c, include/linux/netdevice.h,
include/linux/skbuff.h, include/linux/if_vlan.h, net/ipv4/ip_forward.c, net/ipv4/ip_output.c,
drivers/net/veth.c; drivers/net/veth.c of 5.10 (Debian 5.10.223) and ≈6.18 (Kingxukai/linux @ 0291023e7330).
Each rule names its source in one comment line.

Devices are vnetlab.netdev devices; each device class owns its transmit behaviour (its ndo_features_check
and what its ndo_start_xmit hands on, :class:`vnetlab.netdev.Handoff`), so :func:`send` is one loop over
validate_xmit_skb and those hooks. The packet geometry (headers, in-band tags, tunnel bytes, IP fragments) is
the skb's own (:mod:`vnetlab.skb`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.features import (
    FeatureSet,
    can_checksum_protocol,
    gso_feature,
    mask,
    netdev_intersect_features,
    skb_gso_ok,
)
from vnetlab.headers import ETH_HLEN, ETH_MIN_MTU, GSO_MAX_SEGS, GSO_MAX_SIZE, IP_HLEN, IP_MAX_MTU, VLAN_HLEN
from vnetlab.netdev import Device, Handoff, Vxlan
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, device_kernel
from vnetlab.profiles import arch as _arch
from vnetlab.segment import InbandTags, SegmentResult, check_headers, gso_skb, skb_gso_segment
from vnetlab.skb import FRAG_HDR_LEN, GSO_L4, Skb
from vnetlab.skbuff import alloc_skb_head
from vnetlab.virtual_rx import (  # noqa: F401 (the receive ends were xmit's names before)
    OuterFragment,
    VethRx,
    VxlanRx,
    veth_napi_active,
    veth_receive,
    veth_xmit,
    vxlan_rcv,
)

__all__ = [
    "GSO_MAX_SEGS", "GSO_MAX_SIZE", "FeatureSteps", "Hop", "IcmpError", "MtuVerdict", "OuterFragment",
    "TunnelPmtu", "TxResult", "Validated", "skb_tunnel_check_pmtu",
    "VethRx", "WirePacket", "gso_skb", "ip_fragment_sizes", "ip_output_mtu", "netif_needs_gso",
    "netif_skb_features", "netif_skb_features_steps", "send", "skb_needs_linearize", "validate_xmit_skb",
    "veth_napi_active", "veth_xmit", "VxlanRx", "vxlan_rcv",
]


RouteMtu = Annotated[int, In(ETH_MIN_MTU, IP_MAX_MTU, "the route MTU, ETH_MIN_MTU..IP_MAX_MTU")]
EncapMtu = Annotated[int, In(ETH_MIN_MTU, IP_MAX_MTU, "dst_mtu(encap_dst): the underlay route's MTU, "
                                                      "ETH_MIN_MTU..IP_MAX_MTU")]
TunnelHeadroom = Annotated[int, In(1, 255, "the tunnel's header room (vxlan_headroom: outer IP + UDP + VXLAN + "
                                           "inner Ethernet, 50 for IPv4, 70 for IPv6)")]

# net/ipv4/route.c DEFAULT_MIN_PMTU (512 + 20 + 20): __ip_rt_update_pmtu never learns less (it locks the route)
IP_RT_MIN_PMTU = 552
# include/linux/ipv6.h IPV6_MIN_MTU: __ip6_rt_update_pmtu ignores less, ip6_fragment and IPv6 itself need it
IPV6_MIN_MTU = 1280
# net/ipv4/ip_tunnel_core.c iptunnel_pmtud_check_icmp: no ICMP reply built for a path MTU under 576
ICMP_REPLY_MIN_MTU = 576


def _fs(dev: Device, attr: str, kernel: Kernel) -> FeatureSet:
    return FeatureSet.coerce(getattr(dev, attr), kernel)


# ---------------------------------------------------------------------------------------------------------
# The transmit decision


@public
def netif_needs_gso(skb: Skb, features: FeatureSet) -> bool:
    """include/linux/netdevice.h netif_needs_gso (6.1): a GSO skb the features cannot take whole, or whose
    ip_summed is neither CHECKSUM_PARTIAL nor CHECKSUM_UNNECESSARY."""
    return skb.is_gso() and (
        not skb_gso_ok(features, skb.gso_type, has_frag_list=skb.has_frag_list())
        or skb.ip_summed not in ("CHECKSUM_PARTIAL", "CHECKSUM_UNNECESSARY")
    )


@public
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


@public
def netif_skb_features_steps(dev: Device, skb: Skb, *, kernel: str | Kernel | None = None,
                             inband_vlan_tags: InbandTags = 0, ip: Literal[4, 6] = 4) -> FeatureSteps:
    """:func:`netif_skb_features` with every intermediate feature set, for the notebook. ``inband_vlan_tags``:
    802.1Q tags in the frame beyond ``skb.vlan_inband``."""
    return _features_steps(dev, skb, device_kernel(dev, kernel), inband_vlan_tags, ip)


def _features_steps(dev: Device, skb: Skb, kv: Kernel, inband_vlan_tags: int, ip: int) -> FeatureSteps:
    """netif_skb_features_steps with the kernel resolved by the public entry that called it."""
    k = kv
    gmask = mask("GSO_MASK", kv)
    start = _fs(dev, "features", kv)
    feats = start
    steps: list[tuple[str, FeatureSet]] = []
    tags = len(skb.vlan_inband) + inband_vlan_tags
    if skb.is_gso():
        # net/core/dev.c gso_features_check (6.1): each limit drops all of NETIF_F_GSO_MASK
        max_segs, max_size = dev.gso_max_segs, dev.gso_max_size
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
    if skb.vlan_tag is not None or tags:
        # net/core/dev.c netif_skb_features (6.1): tagged skb -> intersect(vlan_features | CTAG_TX | STAG_TX)
        feats = netdev_intersect_features(
            feats, _fs(dev, "vlan_features", kv) | {"HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX"})
        steps.append(("VLAN tag: intersect with vlan_features | HW_VLAN_CTAG_TX | HW_VLAN_STAG_TX", feats))
    # the device's ndo_features_check (passthru, or dflt_features_check -> vlan_features_check)
    checked = dev.features_check(skb, feats, inband_vlan_tags)
    if checked != feats:
        feats = checked
        steps.append(("vlan_features_check: multi-tagged skb", feats))
    # net/core/dev.c harmonize_features (6.1): no checksum offload for the protocol -> drop CSUM_MASK and GSO_MASK
    if skb.ip_summed != "CHECKSUM_NONE" and not can_checksum_protocol(feats, ip):
        before = feats
        feats -= mask("CSUM_MASK", kv) | gmask
        if before != feats:
            steps.append((f"harmonize_features: cannot checksum IPv{ip}: drop CSUM_MASK and GSO_MASK", feats))
    return FeatureSteps(start, tuple(steps))


@public
def netif_skb_features(dev: Device, skb: Skb, *, kernel: str | Kernel | None = None, inband_vlan_tags: InbandTags = 0,
                       ip: Literal[4, 6] = 4) -> FeatureSet:
    """The features validate_xmit_skb() uses for ``skb`` on ``dev`` (net/core/dev.c netif_skb_features, 6.1):
    dev->features, gso_features_check, hw_enc_features, the VLAN intersection, ndo_features_check
    (passthru or vlan_features_check) and harmonize_features."""
    return _features_steps(dev, skb, device_kernel(dev, kernel), inband_vlan_tags, ip).result


@dataclass(frozen=True)
class Validated:
    """validate_xmit_skb() at one device for one skb."""

    action: str  # "segmented", "linearized", "passed" or "dropped"
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


@public
def validate_xmit_skb(dev: Device, skb: Skb, *, kernel: str | Kernel | None = None, inband_vlan_tags: InbandTags = 0,
                      ip: Literal[4, 6] = 4, outer: Annotated[int, In(0, 255, "tunnel header bytes")] = 0,
                      arch: str | Arch = DEFAULT_ARCH) -> Validated:
    """net/core/dev.c validate_xmit_skb (6.1): features; validate_xmit_vlan (software tag insert when the
    device lacks VLAN TX offload); then segment if netif_needs_gso, else linearize if skb_needs_linearize.
    ``inband_vlan_tags`` / ``outer``: tags and tunnel header bytes in front beyond those the skb records.
    A :class:`Kernel` for ``kernel`` carries its rules (segmentation reads them) into the device's feature
    tables of that version; ``arch`` sizes the segments' heads.

    A GSO skb whose gso_type names no transport (gso_size set, gso_type 0) is dropped: gso_features_check
    warns (skb_warn_bad_offload) and neither inet_gso_segment nor a driver (virtio_net_hdr_from_skb: -EINVAL)
    can segment it, so it is freed (kfree_skb)."""
    kv = device_kernel(dev, kernel)
    return _validate(dev, skb, kv, _arch(arch, kv), inband_vlan_tags, ip, outer)


def _validate(dev: Device, skb: Skb, kv: Kernel, a: Arch, inband_vlan_tags: int, ip: int, outer: int) -> Validated:
    """validate_xmit_skb with the kernel and arch resolved by the public entry that called it."""
    feats = _features_steps(dev, skb, kv, inband_vlan_tags, ip).result
    if skb.is_gso() and not skb.gso_type & set(GSO_L4):
        return Validated("dropped", (), feats, reason=f"gso_size {skb.gso_size} with gso_type "
                         f"{sorted(skb.gso_type) or 0}: no GSO handler (skb_warn_bad_offload, kfree_skb)")
    tag_inserted = False
    if skb.vlan_tag is not None and "HW_VLAN_CTAG_TX" not in feats:
        # net/core/dev.c validate_xmit_vlan (6.1): __vlan_hwaccel_push_inside when !vlan_hw_offload_capable
        skb = skb.vlan_push_inside()
        tag_inserted = True
    if netif_needs_gso(skb, feats):
        missing = _missing_gso(skb, feats)
        reason = "lacks " + ", ".join(missing) if missing else f"ip_summed {skb.ip_summed}"
        seg = skb_gso_segment(skb, feats, kernel=kv, inband_vlan_tags=inband_vlan_tags, ip=ip, outer=outer,
                              arch=a)
        return Validated("segmented", seg.segs, feats, tag_inserted, seg, reason)
    if skb_needs_linearize(skb, feats):
        flat = skb.copy(headlen=skb.len, frags=[], frag_list=[], end_offset=skb.headroom + skb.len)
        return Validated("linearized", (flat,), feats, tag_inserted, None,
                         "frag_list without FRAGLIST" if skb.has_frag_list() and "FRAGLIST" not in feats
                         else "frags without SG")
    return Validated("passed", (skb,), feats, tag_inserted)


# ---------------------------------------------------------------------------------------------------------
# The IP layer's MTU rule at the route device


def _network_seglen(skb: Skb, ip: int) -> int:
    """include/linux/skbuff.h skb_gso_network_seglen: IP + L4 header + gso_size (the largest segment)."""
    return skb.header_len(ip=ip) - ETH_HLEN - VLAN_HLEN * len(skb.vlan_inband) + skb.gso_size


@public
def ip_fragment_sizes(l3_payload: Annotated[int, In(0, 65535, "bytes of IP payload")],
                      mtu: RouteMtu, *,
                      ip: Literal[4, 6] = 4) -> list[int]:
    """The IP payload bytes of each fragment: net/ipv4/ip_output.c ip_do_fragment / __ip_append_data put
    (mtu - 20) & ~7 bytes in every fragment but the last; net/ipv6/ip6_output.c ip6_fragment leaves room
    for the 8-byte fragment header, (mtu - 40 - 8) & ~7 (both 6.1; no IP options, no extension headers)."""
    per = (mtu - IP_HLEN[ip] - (FRAG_HDR_LEN if ip == 6 else 0)) & ~7  # > 0: mtu >= 68
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


@public
def ip_output_mtu(skb: Skb, mtu: RouteMtu, *,
                  ip: Literal[4, 6] = 4, df: bool = True, inband_vlan_tags: InbandTags = 0) -> MtuVerdict:
    """The MTU rule of the IP layer for ``skb`` leaving through a route device of MTU ``mtu``.

    - net/ipv4/ip_forward.c ip_exceeds_mtu (6.1): larger than the MTU with DF set is refused, unless it is a
      GSO skb whose every segment fits (skb_gso_validate_network_len); net/ipv6/ip6_forward.c
      ip6_pkt_too_big the same for IPv6, where a router never fragments;
    - net/ipv4/ip_output.c ip_finish_output_gso / __ip_finish_output (6.1): without DF a GSO skb whose
      segments do not fit is segmented in software and each segment fragmented; a plain skb is fragmented.
    ``df``: the IPv4 DF bit; for IPv6 ``df=False`` means a local sender that may fragment (no IPV6_DONTFRAG).
    """
    l3 = skb.network_len() - VLAN_HLEN * inband_vlan_tags
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


@dataclass(frozen=True)
class IcmpError:
    """An ICMP error the kernel built during a send: ``kind`` "frag_needed" (ICMP_DEST_UNREACH /
    ICMP_FRAG_NEEDED) or "pkt_too_big" (ICMPV6_PKT_TOOBIG), the ``mtu`` it carries, who gets it (``to``) and
    the kernel function that built it (``by``)."""

    kind: str
    mtu: int
    to: str
    by: str


@dataclass(frozen=True)
class TunnelPmtu:
    """net/ipv4/ip_tunnel_core.c skb_tunnel_check_pmtu for one inner skb (v5.9 on; Debian 6.1.192, 6.12.118).

    ``mtu``: dst_mtu(encap_dst) - headroom, what the inner packet (each segment, for GSO) must fit; ``fits``;
    ``learned``: the PMTU skb_dst_update_pmtu_no_confirm leaves on the inner route when it does not fit (None:
    it fits, or the skb has no route: a bridged frame), after net/ipv4/route.c __ip_rt_update_pmtu (never
    below DEFAULT_MIN_PMTU 552, then locked; never above the route's MTU) or net/ipv6/route.c
    __ip6_rt_update_pmtu (nothing below IPV6_MIN_MTU 1280); ``icmp``: the ICMP error built back to the inner
    sender when ``reply`` (the vxlan device is a bridge port): the skb becomes that ICMP and vxlan_encap_bypass
    hands it back to the vxlan device's receive side, so the packet itself never leaves."""

    fits: bool
    mtu: int
    learned: int | None = None
    icmp: IcmpError | None = None


@public
def skb_tunnel_check_pmtu(skb: Skb, encap_mtu: EncapMtu, headroom: TunnelHeadroom, *, reply: bool = False,
                          ip: Literal[4, 6] = 4, df: bool = True,
                          route_mtu: Annotated[int, In(ETH_MIN_MTU, IP_MAX_MTU, "the inner route's MTU "
                                                       "(ipv4_mtu / dst6_mtu of the skb's dst)")] | None = None
                          ) -> TunnelPmtu:
    """net/ipv4/ip_tunnel_core.c skb_tunnel_check_pmtu (Debian 6.1.192 :425, 6.12.118 :441) for ``skb`` as
    vxlan_xmit_one holds it (inner Ethernet header first): mtu = dst_mtu(encap_dst) - headroom; a GSO skb fits
    when every segment does (skb_gso_validate_network_len), another when skb->len - skb_network_offset <= mtu.
    Else skb_dst_update_pmtu_no_confirm(skb, mtu) on the inner route (``route_mtu``: its MTU; None: a bridged
    frame, no route) and, with ``reply``, iptunnel_pmtud_check_icmp / iptunnel_pmtud_check_icmpv6: an ICMP
    "fragmentation needed" (IPv4 ``ip``: only for mtu >= 576 and an inner header whose frag_off is exactly DF,
    ``df`` and not a fragment) or ICMPv6 "packet too big" (mtu >= IPV6_MIN_MTU, not a non-first fragment).
    ``ip``: the inner IP version. ``encap_mtu`` must leave room for the tunnel headers: the kernel's u32
    subtraction would wrap (an ArgumentError here)."""
    if encap_mtu <= headroom:
        raise ArgumentError(f"xmit.skb_tunnel_check_pmtu: encap_mtu must exceed headroom ({headroom}: "
                            f"vxlan_headroom, the outer headers and inner Ethernet header) because "
                            f"dst_mtu(encap_dst) - headroom is a u32 in the kernel, got {encap_mtu}")
    mtu = encap_mtu - headroom
    check_headers(skb, skb.header_len(ip=ip), "xmit.skb_tunnel_check_pmtu")
    if skb.is_gso():
        fits = _network_seglen(skb, ip) <= mtu
    else:
        fits = skb.network_len() <= mtu
    if fits:
        return TunnelPmtu(True, mtu)
    learned: int | None = None
    if route_mtu is not None:
        if ip == 4:
            # net/ipv4/route.c __ip_rt_update_pmtu: old_mtu < mtu -> return; mtu < min_pmtu -> min(old, 552), locked
            learned = None if route_mtu < mtu else (mtu if mtu >= IP_RT_MIN_PMTU else min(route_mtu, IP_RT_MIN_PMTU))
        else:
            # net/ipv6/route.c __ip6_rt_update_pmtu: mtu < IPV6_MIN_MTU or mtu >= dst6_mtu(dst) -> return
            learned = mtu if IPV6_MIN_MTU <= mtu < route_mtu else None
    icmp = None
    if reply:
        if ip == 4 and mtu >= ICMP_REPLY_MIN_MTU and df and not skb.ipfrag:
            icmp = IcmpError("frag_needed", mtu, "the inner sender (vxlan_encap_bypass: back through the bridge)",
                             "iptunnel_pmtud_build_icmp")
        elif ip == 6 and mtu >= IPV6_MIN_MTU and skb.ipfrag != "next":
            icmp = IcmpError("pkt_too_big", mtu, "the inner sender (vxlan_encap_bypass: back through the bridge)",
                             "iptunnel_pmtud_build_icmpv6")
    return TunnelPmtu(False, mtu, learned, icmp)


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
class TxResult:
    """The outcome of :func:`send`.

    ``segmented_at``: name of the first device whose validate_xmit_skb segmented in software, or None.
    ``segments``: the packets that reach the wire (WirePacket each), after any hardware segmentation; for a
    veth, one per skb handed to the peer. ``hops``: one :class:`Hop` per device in the order the skb reached
    them. ``ops``: operation counts for the cost model (dev_queue_xmit, validate_xmit_skb, skb_segment_segs,
    ...). ``dropped``: (where, reason) per skb the path refused (MTU); ``peer_rx``: a veth's receive side;
    ``icmp``: the ICMP errors the path built (:class:`IcmpError`); ``pmtu``: the PMTU a tunnel taught the inner
    route (docs/kernel/gso-features.md#d8), None when it taught none.
    """

    segmented_at: str | None
    segments: tuple[WirePacket, ...]
    hops: tuple[Hop, ...]
    ops: Mapping[str, int]
    skbs_to_driver: tuple[Skb, ...] = ()
    kernel: Kernel | str = DEFAULT_KERNEL  # the Kernel the send ran
    dropped: tuple[tuple[str, str], ...] = ()
    peer_rx: VethRx | None = None
    # what a tunnel on the path made of an underlay MTU its packets do not fit (skb_tunnel_check_pmtu, the
    # outer ip_fragment): the ICMP errors built, and the PMTU the inner route learned (None: none learned)
    icmp: tuple[IcmpError, ...] = ()
    pmtu: int | None = None

    @property
    def wire_packets(self) -> int:
        return len(self.segments)

    @property
    def payload_bytes(self) -> int:
        return sum(p.payload_len for p in self.segments)

    @public
    def hop(self, name: str) -> Hop:
        for h in self.hops:
            if h.name == name:
                return h
        raise ArgumentError(f"TxResult.hop: no hop named {name!r} on this path; hops: {[h.name for h in self.hops]}",
                            param="name")

    def describe(self) -> str:
        lines = [str(h) for h in self.hops]
        lines.append(f"segmented at: {self.segmented_at or 'nowhere in software'}; "
                     f"{self.wire_packets} packet(s) on the wire")
        lines.extend(f"dropped at {where}: {why}" for where, why in self.dropped)
        return "\n".join(lines)


def _wire(skb: Skb, ip: int, by_driver: bool, fragments_by: str) -> list[WirePacket]:
    """The packets one skb becomes on the wire (the driver inserts a hwaccel tag, a GSO skb is segmented by
    the hardware) or, for a veth (``by_driver`` False), the one packet handed to the peer."""
    hdr = skb.header_len(ip=ip)
    tagged = skb.vlan_tag is not None or bool(skb.vlan_inband)
    extra = VLAN_HLEN if skb.vlan_tag is not None and by_driver else 0
    if skb.ipfrag:
        return [WirePacket(skb.len + extra, skb.len - hdr, tagged, fragments_by, fragment=True)]
    if not skb.is_gso() or not by_driver:
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


def _ip_fragment(skb: Skb, mtu: int, ip: int, k: Kernel, a: Arch) -> list[Skb]:
    """net/ipv4/ip_output.c ip_do_fragment (net/ipv6/ip6_output.c ip6_fragment) slow path, 6.1: one new skb
    per fragment, alloc_skb(len + hlen + LL_RESERVED_SPACE) with the link header room; the IP header (and for
    IPv6 the fragment header) in each, the L4 header only in the first (offset 0) fragment. The link-layer
    state (hwaccel tag, in-band tags) rides along as skb metadata and header bytes, never as fragment data."""
    l3_payload = skb.network_len() - IP_HLEN[ip]
    link = ETH_HLEN + VLAN_HLEN * len(skb.vlan_inband)
    ll_rs = -(-link // 16) * 16  # LL_RESERVED_SPACE: ALIGN(hard_header_len, HH_DATA_MOD 16)
    out = []
    for i, chunk in enumerate(ip_fragment_sizes(l3_payload, mtu, ip=ip)):
        hlen = IP_HLEN[ip] + (FRAG_HDR_LEN if ip == 6 else 0)
        head = alloc_skb_head(chunk + hlen + ll_rs, k, a)
        out.append(Skb(headlen=link + hlen + chunk, truesize=head.truesize, head_frag=False, head_kind=head.kind,
                       end_offset=head.end_offset, headroom=ll_rs - link, ip_summed="CHECKSUM_NONE",
                       note="IP fragment", l4=skb.transport, vlan_tag=skb.vlan_tag, vlan_inband=skb.vlan_inband,
                       ipfrag="first" if i == 0 else "next"))
    return out


def _ip_fragment_outer(skb: Skb, mtu: int, k: Kernel, a: Arch) -> list[Skb]:
    """net/ipv4/ip_output.c ip_do_fragment (net/ipv6/ip6_output.c ip6_fragment) slow path on a tunnel's outer
    packet: each fragment a new skb of the outer IP header (+ the IPv6 fragment header) and (mtu - hlen) & ~7
    bytes of the outer IP payload (the last: the rest); the outer UDP, VXLAN and inner headers ride in the
    first fragment only. The receiver's ip_defrag gives the outer packet back to vxlan's socket."""
    outer_ip = skb.tunnels[0][0] if skb.tunnels else 4
    hlen = IP_HLEN[outer_ip] + (FRAG_HDR_LEN if outer_ip == 6 else 0)
    link = ETH_HLEN
    ll_rs = -(-link // 16) * 16  # LL_RESERVED_SPACE: ALIGN(hard_header_len, HH_DATA_MOD 16)
    out: list[Skb] = []
    offset = 0
    for i, chunk in enumerate(ip_fragment_sizes(skb.network_len() - IP_HLEN[outer_ip], mtu, ip=outer_ip)):
        head = alloc_skb_head(chunk + hlen + ll_rs, k, a)
        out.append(OuterFragment(headlen=link + hlen + chunk, truesize=head.truesize, head_frag=False,
                                 head_kind=head.kind, end_offset=head.end_offset, headroom=ll_rs - link,
                                 ip_summed="CHECKSUM_NONE", note="outer IP fragment", l4="udp",
                                 ipfrag="first" if i == 0 else "next", datagram=skb, offset=offset,
                                 outer_ip=outer_ip))
        offset += chunk
    return out


def _tunnel_ip_output(vx: Vxlan, skbs: Sequence[Skb], *, inner_ip: int, inner_df: bool, kernel: Kernel, arch: Arch,
                      ops: Counter[str]) -> tuple[list[Skb], list[tuple[str, str]], list[IcmpError], str]:
    """udp_tunnel_xmit_skb -> iptunnel_xmit -> ip_local_out (udp_tunnel6_xmit_skb -> ip6tunnel_xmit ->
    ip6_local_out) for vxlan's outer packets at the underlay route (its device's MTU):

    - IPv4: iptunnel_xmit writes frag_off = df (vxlan's ``df`` option, :meth:`Vxlan.outer_df`) after
      skb_scrub_packet cleared ignore_df; __ip_finish_output fragments a packet over the MTU (ip_fragment:
      without DF ip_do_fragment, with DF IPSTATS_MIB_FRAGFAILS, icmp_send(ICMP_FRAG_NEEDED, mtu) to the outer
      source, this host, and kfree_skb); ip_finish_output_gso segments a GSO skb whose segments do not fit
      (skb_gso_segment without GSO features) and hands every segment to ip_fragment;
    - IPv6: vxlan_xmit_one's skb_scrub_packet clears ignore_df, so ip6_fragment refuses any packet over the
      MTU (fail_toobig: icmpv6_send(ICMPV6_PKT_TOOBIG, mtu), FRAGFAILS): an IPv6 outer packet is never
      fragmented.

    Returns the skbs that go on to the underlay, the drops, the ICMP errors and the hop's action."""
    under = vx.underlay
    assert under is not None
    mtu = under.mtu
    df = True if vx.ip == 6 else vx.outer_df(inner_ip, inner_df)
    kind = "pkt_too_big" if vx.ip == 6 else "frag_needed"
    by = "ip6_fragment (fail_toobig)" if vx.ip == 6 else "ip_fragment"
    kept: list[Skb] = []
    dropped: list[tuple[str, str]] = []
    icmp: list[IcmpError] = []
    action = ""
    for s in skbs:
        verdict = ip_output_mtu(s, mtu, ip=inner_ip, df=df)
        if verdict.action == "pass":
            kept.append(s)
            continue
        if verdict.action == "drop":
            # every segment of a GSO skb goes through ip_fragment, which frees each one with DF set
            n = s.segments(s.header_len(ip=inner_ip)) if s.is_gso() else 1
            why = (f"outer IPv{vx.ip} packet of {verdict.l3_len if not s.is_gso() else _network_seglen(s, inner_ip)}"
                   f" B > {under.name} MTU {mtu} with DF ({by}: FRAGFAILS, ICMP to this host)")
            dropped.extend((under.name, why) for _ in range(n))
            icmp.extend(IcmpError(kind, mtu, "the outer source (this host)", by) for _ in range(n))
            action = "outer packet dropped (DF)"
            continue
        pending = [s]
        if s.is_gso():
            # net/ipv4/ip_output.c ip_finish_output_gso: skb_gso_segment(features & ~GSO_MASK), then ip_fragment
            feats = _features_steps(under, s, kernel, 0, inner_ip).result - mask("GSO_MASK", kernel)
            seg = skb_gso_segment(s, feats, kernel=kernel, ip=inner_ip, arch=arch)
            ops["skb_segment_segs"] += len(seg.segs)
            ops["kept_header_segs"] += seg.kept_headers
            pending = list(seg.segs)
        for p in pending:
            kept.extend(_ip_fragment_outer(p, mtu, kernel, arch) if p.network_len() > mtu else [p])
        action = "outer IP fragmented (ip_fragment)"
    return kept, dropped, icmp, action


def _add(items: list[str], item: str, front: bool = False) -> None:
    if not item or item in items:
        return
    if front:
        items.insert(0, item)
    else:
        items.append(item)


def _ip_output(dev: Device, skb: Skb, *, df: bool, ip: int, kernel: Kernel, arch: Arch,
               ops: Counter[str]) -> tuple[MtuVerdict, list[Skb]]:
    """The IP layer at the route device: its MTU rule, and the skbs that go on to dev_queue_xmit."""
    verdict = ip_output_mtu(skb, dev.mtu, ip=ip, df=df)
    if verdict.action != "fragment":
        return verdict, [] if verdict.action == "drop" else [skb]
    pending = [skb]
    if skb.is_gso():
        # net/ipv4/ip_output.c ip_finish_output_gso: skb_gso_segment(features & ~GSO_MASK), then fragment
        feats = _features_steps(dev, skb, kernel, 0, ip).result - mask("GSO_MASK", kernel)
        seg = skb_gso_segment(skb, feats, kernel=kernel, ip=ip, arch=arch)
        ops["skb_segment_segs"] += len(seg.segs)
        ops["kept_header_segs"] += seg.kept_headers
        pending = list(seg.segs)
    # ip_fragment only where the packet exceeds the MTU (a segment that fits leaves whole)
    mtu = verdict.mtu
    return verdict, [f for s in pending
                     for f in (_ip_fragment(s, mtu, ip, kernel, arch) if s.network_len() > mtu else [s])]


def _tally(v: Validated, skb: Skb, ops: Counter[str]) -> None:
    """The operation counts of one dev_queue_xmit -> validate_xmit_skb (for vnetlab.cost and the router)."""
    ops["dev_queue_xmit"] += 1
    ops["validate_xmit_skb"] += 1
    ops["vlan_tag_insert_sw"] += v.tag_inserted
    if v.segment is not None:
        key = "skb_segment_list_segs" if v.segment.method == "skb_segment_list" else "skb_segment_segs"
        ops[key] += len(v.segment.segs)
        ops["segment_copied_bytes"] += v.segment.copied_bytes
        ops["skb_allocs"] += v.segment.skb_allocs
        ops["kept_header_segs"] += v.segment.kept_headers
    elif v.action == "linearized":
        ops["linearized_bytes"] += skb.data_len


@public
def send(dev: Device, skb: Skb, *, kernel: str | Kernel | None = None, port: Device | None = None,
         ip: Literal[4, 6] = 4, df: bool = True, route: bool = True, local_udp: bool = False, udp_gro: bool = False,
         local_socket: bool = True, arch: str | Arch = DEFAULT_ARCH) -> TxResult:
    """ip output at ``dev`` and dev_queue_xmit(skb) on it and down the stack: at every device
    validate_xmit_skb, then that device's ndo_start_xmit (:meth:`vnetlab.netdev.Device.start_xmit`), which
    hands the skbs to a lower device (vlan: the tag set; macvlan; bond: a slave; bridge: the port; vxlan:
    encapsulated, to its underlay), to a veth peer's receive (:func:`veth_xmit`), to the wire (a NIC's
    driver; the hardware segments a GSO skb it accepted) or drops them (a bridge without ports, a bond
    without slaves).

    - ``route=True``: ``dev`` is the route device and the IP layer's MTU rule (:func:`ip_output_mtu`, with
      ``df``) runs first; an skb it fragments leaves as IP fragments (ip_fragment, after
      ip_finish_output_gso's software segmentation for a GSO skb), each going down the stack on its own;
      ``route=False`` for a bridged frame (only the ports' is_skb_forwardable applies);
    - a vxlan device with an underlay: vxlan_xmit_one's skb_tunnel_check_pmtu against the underlay's MTU
      (:func:`skb_tunnel_check_pmtu`: the inner route's learned PMTU in ``TxResult.pmtu``; on a bridge port an
      oversized DF packet becomes an ICMP back to its sender), then the outer packet's IP rule at the underlay
      (:func:`_tunnel_ip_output`): fragmented (:class:`OuterFragment`, put back together by the receiving
      veth's ip_defrag) or, with the vxlan ``df`` set (:meth:`vnetlab.netdev.Vxlan.set_df`) or an IPv6 outer
      header, freed with one ICMP to this host each (``TxResult.icmp``, ``TxResult.dropped``);
    - ``port``: the bridge port or bond slave the frame leaves by (default the first);
    - ``local_udp``, ``udp_gro``, ``local_socket``: a veth's receive side (:func:`veth_xmit`).

    ``ops["kept_header_segs"]`` counts segments that left with the IP/UDP header they arrived with
    (:attr:`vnetlab.segment.SegmentResult.kept_headers`). ``arch`` sizes the heads segmentation allocates.
    """
    kv = device_kernel(dev, kernel)  # resolved once here and handed to every step below
    a = _arch(arch, kv)
    check_headers(skb, skb.header_len(ip=ip), "xmit.send")
    hops: list[Hop] = []
    ops: Counter[str] = Counter()
    wire: list[WirePacket] = []
    to_driver: list[Skb] = []
    dropped: list[tuple[str, str]] = []
    segmented_at: str | None = None
    peer_rx: VethRx | None = None
    icmp: list[IcmpError] = []
    pmtu: int | None = None
    pending: list[Skb] = [skb]
    if route:
        verdict, pending = _ip_output(dev, skb, df=df, ip=ip, kernel=kv, arch=a, ops=ops)
        if verdict.action == "drop":
            dropped.append((dev.name, verdict.reason))
            hops.append(Hop(dev.name, dev.kind, ("dropped",), 1, 0, None, verdict.reason, "ip_output"))
            return TxResult(None, (), tuple(hops), dict(ops), (), kv, tuple(dropped))
        segmented_at = dev.name if skb.is_gso() and verdict.action == "fragment" else None
    fragments_by = "software" if segmented_at else "none"
    current: Device | None = dev  # netdev refuses upper/lower loops (set_master), so the walk ends
    while current is not None and pending:
        actions: list[str] = []
        reasons: list[str] = []
        methods: set[str] = set()
        out: list[Skb] = []
        feats: FeatureSet | None = None
        for p in pending:
            v = _validate(current, p, kv, a, 0, ip, 0)
            _tally(v, p, ops)
            feats = v.features
            _add(actions, "tag inserted" if v.tag_inserted else "")
            if v.segment is not None:
                segmented_at = segmented_at or current.name
                methods.add(v.segment.method)
            if v.action == "dropped":
                dropped.append((current.name, v.reason))
            _add(actions, v.action, front=v.action != "passed")
            _add(reasons, v.reason)
            out.extend(v.skbs)
        tunnel = isinstance(current, Vxlan) and current.underlay is not None
        if tunnel:
            out, learned = _vxlan_check_pmtu(current, out, ip=ip, df=df, route=route, icmp=icmp, dropped=dropped,
                                             actions=actions)
            pmtu = learned if learned is not None else pmtu
        h: Handoff = current.start_xmit(out, port=port)
        ops[h.op] += len(h.skbs)
        _add(actions, h.action, front=h.to == "drop")
        dropped.extend(h.dropped)
        if tunnel and h.to == "lower":
            assert isinstance(current, Vxlan)
            kept, lost, errors, what = _tunnel_ip_output(current, h.skbs, inner_ip=ip, inner_df=df, kernel=kv,
                                                         arch=a, ops=ops)
            dropped.extend(lost)
            icmp.extend(errors)
            _add(actions, what)
            h = Handoff(tuple(kept), h.to, h.lower, h.action, h.op, h.dropped)
        if h.to == "peer":
            assert h.lower is not None
            peer_rx = veth_receive(current, h.skbs, kv, ip=ip, local_udp=local_udp, udp_gro=udp_gro,
                                   local_socket=local_socket)
            dropped.extend((peer_rx.device, peer_rx.reason) for _ in range(peer_rx.dropped))
        if h.to in ("peer", "wire"):
            to_driver.extend(h.skbs)
            for s in h.skbs:
                wire.extend(_wire(s, ip, h.to == "wire", fragments_by))
            if any(s.ipfrag for s in h.skbs):
                _add(actions, "fragmented")
        hops.append(Hop(current.name, current.kind, tuple(actions), len(pending), len(h.skbs), feats,
                        "; ".join(reasons), ", ".join(sorted(methods))))
        pending = list(h.skbs)
        current = h.lower if h.to == "lower" else None
    ops["wire_packets"] = len(wire)
    ops["wire_bytes"] = sum(p.frame_len for p in wire)
    return TxResult(segmented_at, tuple(wire), tuple(hops), dict(ops), tuple(to_driver), kv, tuple(dropped), peer_rx,
                    tuple(icmp), pmtu)


def _vxlan_check_pmtu(vx: Vxlan, skbs: list[Skb], *, ip: int, df: bool, route: bool, icmp: list[IcmpError],
                      dropped: list[tuple[str, str]], actions: list[str]) -> tuple[list[Skb], int | None]:
    """drivers/net/vxlan/vxlan_core.c vxlan_xmit_one (Debian 6.1.192 :2697, 6.12.118 :2547): before
    vxlan_build_skb, skb_tunnel_check_pmtu(skb, ndst, vxlan_headroom, netif_is_any_bridge_port(dev)) against
    the underlay route's MTU. An skb turned into an ICMP reply (err > 0) goes back through vxlan_encap_bypass
    and is not encapsulated; every other skb goes on, whatever the check learned. ``route``: the skb was
    routed to the vxlan device (it has an inner dst whose PMTU the check lowers); a bridged frame has none."""
    under = vx.underlay
    assert under is not None
    if vx.ip == 6 and under.mtu < IPV6_MIN_MTU:
        # net/ipv6/addrconf.c addrconf_notify (NETDEV_CHANGEMTU): below IPV6_MIN_MTU addrconf_ifdown takes IPv6 off
        # the underlay, so udp_tunnel6_dst_lookup finds no route and vxlan_xmit_one goes to tx_error (measured on
        # 6.18: no address left, tx_carrier_errors, nothing sent)
        why = (f"no IPv6 route: {under.name}'s MTU {under.mtu} < IPV6_MIN_MTU {IPV6_MIN_MTU} took IPv6 off it "
               "(addrconf_ifdown); udp_tunnel6_dst_lookup fails, vxlan_xmit_one tx_error")
        dropped.extend((vx.name, why) for _ in skbs)
        _add(actions, "dropped (no IPv6 route)")
        return [], None
    kept: list[Skb] = []
    learned: int | None = None
    for s in skbs:
        # the inner frame's DF: the IP layer's for a routed packet; fragments never carry it
        c = skb_tunnel_check_pmtu(s, under.mtu, vx.headroom(), reply=vx.is_any_bridge_port(), ip=ip,  # type: ignore[arg-type]
                                  df=df and not s.ipfrag, route_mtu=vx.mtu if route else None)
        if c.fits:
            kept.append(s)
            continue
        learned = c.learned if c.learned is not None else learned
        if c.icmp is not None:
            icmp.append(c.icmp)
            dropped.append((vx.name, f"inner packet over {c.mtu} B (underlay {under.name} MTU {under.mtu} - "
                                     f"{vx.headroom()}): turned into an ICMP {c.icmp.kind} back to the sender "
                                     "(skb_tunnel_check_pmtu)"))
            continue
        kept.append(s)
    if learned is not None:
        _add(actions, f"PMTU {learned} learned (skb_tunnel_check_pmtu)")
    return kept, learned
