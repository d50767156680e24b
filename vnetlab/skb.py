"""struct sk_buff as the models need it: linear part, frags, frag_list, truesize, GSO fields.

Terms follow include/linux/skbuff.h: ``headlen`` = skb_headlen() (bytes in the linear part),
``data_len`` = bytes in frags and frag_list, ``len`` = headlen + data_len, ``end_offset`` =
skb_end_offset() (where skb_shared_info starts), ``tailroom`` = skb_tailroom(), ``truesize`` = memory
charged to the skb. len, data_len and nr_frags are derived, so they can never disagree with the frags.

The packet geometry lives here too: ``l4`` (the IP header's protocol), in-band 802.1Q tags in the linear part
(``vlan_inband``), tunnel headers pushed in front of the inner IP header (``tunnel_hlen``: vxlan's outer IP,
UDP, VXLAN and inner Ethernet headers) and the IP fragment position (``ipfrag``) say where the L4 payload
starts (:meth:`Skb.header_len`, :meth:`Skb.payload_len`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from vnetlab.checks import VLAN_TAG, In, IpVersion, VxlanVni, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_HLEN, IP_HLEN, TCP_HLEN_TS, UDP_HLEN, VLAN_HLEN, VXLAN_N_VID

# How the linear part (skb->head) was obtained; the kernel's allocator decides head_frag and truesize.
HEAD_KINDS = {
    "build_skb": "build_skb() around the receive buffer (head_frag=1)",
    "napi_page_frag": "napi_alloc_skb() head from the NAPI page-frag cache (head_frag=1)",
    "napi_page_frag_1k": "napi_alloc_skb() head from the 1 KiB page_small frag cache (head_frag=1)",
    "kmalloc": "kmalloc'ed head from __alloc_skb() (head_frag=0)",
    "small_head_cache": "head from skb_small_head_cache via kmalloc_reserve() (head_frag=0)",
    "alloc_skb0": "alloc_skb(0): an empty skb chained on frag_list (head_frag=0)",
}

# SKB_GSO_* names (include/linux/skbuff.h), without the prefix.
SKB_GSO_NAMES = (
    "TCPV4", "DODGY", "TCP_ECN", "TCP_FIXEDID", "TCPV6", "FCOE", "GRE", "GRE_CSUM", "IPXIP4", "IPXIP6",
    "UDP_TUNNEL", "UDP_TUNNEL_CSUM", "PARTIAL", "TUNNEL_REMCSUM", "SCTP", "ESP", "UDP", "UDP_L4",
    "FRAGLIST", "TCP_ACCECN",
)
# The transport header in front of each segment's payload: struct udphdr, or a TCP header with timestamps.
L4_HLEN = {"udp": UDP_HLEN, "tcp": TCP_HLEN_TS}
# SKB_GSO_* types that name the transport (include/linux/skbuff.h): TCP has one per IP version.
GSO_L4 = {"TCPV4": "tcp", "TCPV6": "tcp", "UDP_L4": "udp", "UDP": "udp"}
_GSO_NAME_SET = frozenset(SKB_GSO_NAMES)
_INT_FIELDS = ("headlen", "truesize", "end_offset", "headroom", "gso_size", "gso_segs", "tunnel_hlen")
# skb->ip_summed (include/linux/skbuff.h: CHECKSUM_NONE 0, _UNNECESSARY 1, _COMPLETE 2, _PARTIAL 3)
IP_SUMMED = ("CHECKSUM_NONE", "CHECKSUM_UNNECESSARY", "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL")
U16_FIELDS = ("gso_size", "gso_segs")  # skb_shared_info: unsigned short gso_size, gso_segs
IPFRAG_KINDS = ("", "first", "next")  # not a fragment / offset 0 (carries the L4 header) / a later fragment
FRAG_HDR_LEN = 8  # include/uapi/linux/ipv6.h struct frag_hdr, in every IPv6 fragment


@dataclass(frozen=True)
class Page:
    """A page (or compound page) that frags and heads point into; ``pfn`` only identifies it."""

    pfn: int
    size: int = 4096
    label: str = ""


@dataclass(frozen=True)
class Frag:
    """One skb_frag_t (page, offset, size) and the truesize its skb_add_rx_frag() charged."""

    page: Page
    offset: int
    size: int
    truesize: int = 0


@dataclass(eq=False)
class Skb:
    """One sk_buff. Mutable where the kernel mutates (GRO appends frags and frag_list members)."""

    headlen: int
    truesize: int
    head_frag: bool
    end_offset: int
    headroom: int = 0
    head_kind: str = "kmalloc"
    head_page: Page | None = None
    head_offset: int = 0
    frags: list[Frag] = field(default_factory=list)
    frag_list: list[Skb] = field(default_factory=list)
    gso_type: frozenset[str] = frozenset()
    gso_size: int = 0
    gso_segs: int = 0
    vlan_tag: int | None = None
    encapsulation: bool = False
    ip_summed: str = "CHECKSUM_UNNECESSARY"
    note: str = ""
    l4: str | None = None  # iphdr->protocol / ipv6hdr->nexthdr: "udp" or "tcp"; None = not known to the model
    vlan_inband: tuple[int, ...] = ()  # VIDs of 802.1Q tags in the linear part, outermost first (vlan_insert_tag)
    tunnel_hlen: int = 0  # bytes from the outer network header to the inner one (vxlan: outer IP+UDP+VXLAN+ETH)
    ipfrag: str = ""  # "" not an IP fragment, "first" (MF, offset 0: has the L4 header) or "next"
    # the UDP tunnels around the inner frame, outermost first: (outer IP version, VNI, header bytes) as the
    # vxlan_xmit_one that pushed them wrote them; what the receiving vxlan_rcv matches its socket and VNI against
    tunnels: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.head_kind not in HEAD_KINDS:
            raise ArgumentError(f"head_kind must be one of {sorted(HEAD_KINDS)}, got {self.head_kind!r}",
                                param="head_kind")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if type(value) is not int or value < 0:  # bool and numpy ints are not sk_buff fields
                raise ValueError(f"Skb.{name} must be a non-negative int, got {value!r}")
        for name in U16_FIELDS:
            if getattr(self, name) > 0xFFFF:
                raise ValueError(f"Skb.{name} must fit skb_shared_info's unsigned short (0..65535), "
                                 f"got {getattr(self, name)}")
        for name in ("head_frag", "encapsulation"):
            if type(getattr(self, name)) is not bool:  # sk_buff bit fields: head_frag:1, encapsulation:1
                raise ValueError(f"Skb.{name} must be True or False (a 1-bit sk_buff field), "
                                 f"got {getattr(self, name)!r}")
        if self.ip_summed not in IP_SUMMED:
            raise ArgumentError(f"Skb.ip_summed must be one of {IP_SUMMED} (include/linux/skbuff.h), "
                                f"got {self.ip_summed!r}", param="ip_summed")
        if self.vlan_tag is not None:
            # the range segment.gso_skb's vlan_tag annotation (checks.VlanTag) gives, with the same error
            self.vlan_tag = check_int("vlan_tag", self.vlan_tag, VLAN_TAG.lo, VLAN_TAG.hi, VLAN_TAG.meaning,
                                      function="skb.Skb")
        if self.vlan_inband:
            self.vlan_inband = tuple(check_int(f"vlan_inband[{i}]", v, VLAN_TAG.lo, VLAN_TAG.hi, VLAN_TAG.meaning,
                                               function="skb.Skb") for i, v in enumerate(self.vlan_inband))
        if self.l4 is not None and self.l4 not in L4_HLEN:
            raise ArgumentError(f"Skb.l4 must be one of {sorted(L4_HLEN)} or None, got {self.l4!r}", param="l4")
        if self.ipfrag not in IPFRAG_KINDS:
            raise ArgumentError(f"Skb.ipfrag must be one of {IPFRAG_KINDS}, got {self.ipfrag!r}", param="ipfrag")
        if self.tunnels:
            self.tunnels = tuple(tuple(t) for t in self.tunnels)
            if not all(len(t) == 3 and t[0] in (4, 6) and type(t[1]) is int and 0 <= t[1] < VXLAN_N_VID
                       and type(t[2]) is int and t[2] > 0 for t in self.tunnels) \
                    or sum(t[2] for t in self.tunnels) > self.tunnel_hlen:
                raise ArgumentError(f"Skb.tunnels must hold (outer IP 4|6, VNI 0..2^24-1, header bytes > 0) whose "
                                    f"bytes fit tunnel_hlen {self.tunnel_hlen}, got {self.tunnels!r}", param="tunnels")
        for i, m in enumerate(self.frag_list):
            if not isinstance(m, Skb):
                raise ArgumentError(f"Skb.frag_list[{i}] must be an Skb, got {type(m).__name__}", param="frag_list")
        if isinstance(self.gso_type, str) or not isinstance(self.gso_type, frozenset | set | tuple | list):
            raise ArgumentError(f"Skb.gso_type must be a set of SKB_GSO names such as {{'UDP_L4'}}, "
                                f"got {self.gso_type!r}",
                                param="gso_type")
        if self.gso_type:
            self.gso_type = frozenset(self.gso_type)
            unknown = self.gso_type - _GSO_NAME_SET
            if unknown:
                raise ArgumentError(f"gso_type has unknown SKB_GSO names {sorted(unknown)}; known: {SKB_GSO_NAMES}",
                                    param="gso_type")
            named = {GSO_L4[t] for t in self.gso_type if t in GSO_L4}
            if self.l4 is not None and named and named != {self.l4}:
                raise ArgumentError(f"Skb.l4={self.l4!r} disagrees with gso_type {sorted(self.gso_type)}", param="l4")
        elif not isinstance(self.gso_type, frozenset):
            self.gso_type = frozenset(self.gso_type)
        self._check_part()  # the members were checked when they were built; validate() re-checks them all
        if self.truesize < self.len:
            raise ValueError(f"Skb.truesize {self.truesize} < len {self.len}: truesize charges every byte the "
                             "skb holds (include/linux/skbuff.h)")

    def _check_part(self) -> None:
        for i, f in enumerate(self.frags):
            if not isinstance(f, Frag):
                raise ValueError(f"Skb.frags[{i}] must be a Frag (skb_frag_t), got {type(f).__name__}")
            if not all(type(v) is int and v >= 0 for v in (f.size, f.offset, f.truesize)):
                raise ValueError(f"Skb frag {i} has size {f.size!r}, offset {f.offset!r}, truesize {f.truesize!r}: "
                                 "skb_frag_t fields are unsigned ints")
            if f.offset + f.size > f.page.size:
                raise ValueError(f"Skb frag {i} ends at {f.offset + f.size}, past its page of {f.page.size} B: "
                                 "skb_frag_t (page, offset, size) lies inside one (compound) page")
        if self.headroom + self.headlen > self.end_offset:
            raise ValueError(
                f"Skb linear part overflows the head: headroom {self.headroom} + headlen {self.headlen} "
                f"> skb_end_offset {self.end_offset} (skb_over_panic in the kernel)")

    def validate(self) -> Skb:
        """The sk_buff invariants, also after in-place changes (GRO appends frags and members): frag_list
        acyclic, no negative frag (skb_frag_size is unsigned), truesize >= len (every byte is charged,
        include/linux/skbuff.h skb->truesize), the linear part inside the head (skb_over_panic)."""
        for part in self.walk():
            part._check_part()
        if self.truesize < self.len:
            raise ValueError(f"Skb.truesize {self.truesize} < len {self.len}: truesize charges every byte the "
                             "skb holds (include/linux/skbuff.h)")
        return self

    @property
    def nr_frags(self) -> int:
        return len(self.frags)

    @property
    def data_len(self) -> int:
        if not self.frag_list:
            return sum(f.size for f in self.frags)
        # every member's linear part and frags (walk() refuses a frag_list that reaches an skb twice)
        return sum(sum(f.size for f in part.frags) + (part.headlen if part is not self else 0) for part in self.walk())

    @property
    def len(self) -> int:
        return self.headlen + self.data_len

    @property
    def tailroom(self) -> int:
        """skb_tailroom(): end - tail for a linear skb; 0 once the skb has paged data (skb_is_nonlinear)."""
        if self.frags or self.frag_list:
            return 0
        return self.end_offset - self.headroom - self.headlen

    @property
    def head_tailroom(self) -> int:
        """end - tail whether or not the skb has frags (the free space drawn after the linear part)."""
        return self.end_offset - self.headroom - self.headlen

    def has_frag_list(self) -> bool:
        return bool(self.frag_list)

    def is_gso(self) -> bool:
        """skb_is_gso(): gso_size != 0."""
        return self.gso_size != 0

    @public
    def segments(self, header_len: int = 0) -> int:
        """Wire packets this skb carries: what segmenting it gives back (1 for a non-GSO skb).

        ``header_len`` is the header bytes in front of the payload (the GRO offset, plus ETH_HLEN before
        eth_type_trans). A FRAGLIST skb is cut one sk_buff at a time (net/core/skbuff.c skb_segment_list):
        each frag_list member counts its own segments (headers pulled, so ``header_len`` 0), and the head
        DIV_ROUND_UP(its payload, gso_size): 1 for a GRO head, more when GRO held a whole GSO skb as p, which
        tcp4_gso_segment / __udp_gso_segment (mirror 6.18) then cut by gso_size instead. Other GSO skbs carry
        gso_segs; where gso_segs is 0 (SKB_GSO_DODGY from include/linux/virtio_net.h virtio_net_hdr_to_skb)
        the GSO code recomputes DIV_ROUND_UP(payload, gso_size) (net/ipv4/tcp_offload.c tcp_gso_segment).
        """
        if not self.gso_size:
            return 1
        if "FRAGLIST" in self.gso_type:
            head = self.headlen + sum(f.size for f in self.frags) - header_len
            return max(1, -(-head // self.gso_size)) + sum(m.segments(0) for m in self.frag_list)
        if self.gso_segs:
            return self.gso_segs
        return max(1, -(-(self.len - header_len) // self.gso_size))

    def walk(self) -> Iterator[Skb]:
        """This skb and every frag_list member (skb_walk_frags order); a frag_list that reaches an skb twice
        (itself, or a member shared) is a ValueError, not a RecursionError."""
        if not self.frag_list:
            yield self
            return
        seen: set[int] = set()
        stack = [self]
        while stack:
            skb = stack.pop()
            if id(skb) in seen:
                raise ValueError("Skb.frag_list reaches the same sk_buff twice (a frag_list containing itself)")
            seen.add(id(skb))
            yield skb
            stack.extend(reversed(skb.frag_list))

    @public
    def copy(self, **changes: Any) -> Skb:
        """dataclasses.replace with the frags and frag_list lists copied (the new skb may append to them)."""
        changes.setdefault("frags", list(self.frags))
        changes.setdefault("frag_list", list(self.frag_list))
        return dataclasses.replace(self, **changes)

    # -- packet geometry ---------------------------------------------------------------------------
    @property
    def transport(self) -> str:
        """The L4 protocol: ``l4``, else the one the gso_type names; an skb with neither is refused."""
        if self.l4 is not None:
            return self.l4
        named = {GSO_L4[t] for t in self.gso_type if t in GSO_L4}
        if len(named) == 1:
            return named.pop()
        raise ValueError("the skb does not say its L4 protocol: set Skb.l4 ('udp' or 'tcp')")

    @public
    def header_len(self, *, ip: int = 4, link_hlen: int = ETH_HLEN) -> int:
        """Bytes in front of the L4 payload: link header, in-band VLAN tags, tunnel headers, the IP header
        (+ the IPv6 fragment header in a fragment) and the L4 header (absent from non-first fragments)."""
        if ip not in IP_HLEN or isinstance(ip, bool):
            raise ArgumentError(f"ip must be 4 (struct iphdr) or 6 (struct ipv6hdr), got {ip!r}", param="ip")
        if "TCPV6" in self.gso_type and ip != 6 or "TCPV4" in self.gso_type and ip != 4:
            raise ArgumentError(f"ip={ip} does not match the skb's gso_type {sorted(self.gso_type)}", param="ip")
        hdr = link_hlen + VLAN_HLEN * len(self.vlan_inband) + self.tunnel_hlen + IP_HLEN[ip]
        if self.ipfrag:
            hdr += FRAG_HDR_LEN if ip == 6 else 0
        if self.ipfrag != "next":
            hdr += L4_HLEN[self.transport]
        return hdr

    @public
    def payload_len(self, *, ip: int = 4, link_hlen: int = ETH_HLEN) -> int:
        """L4 payload bytes this skb carries (len minus one set of headers)."""
        return self.len - self.header_len(ip=ip, link_hlen=link_hlen)

    @public
    def network_len(self, *, link_hlen: int = ETH_HLEN) -> int:
        """Bytes from the (outer) network header on: what an MTU is compared with."""
        return self.len - link_hlen - VLAN_HLEN * len(self.vlan_inband)

    @public
    def push(self, n: Annotated[int, In(0, None, "header bytes")]) -> None:
        """skb_cow_head + skb_push (net/core/skbuff.c), in place: ``n`` header bytes in front of the data, from the
        headroom, or from a head pskb_expand_head reallocates (its growth charged to truesize)."""
        if self.headroom >= n:
            self.headroom -= n
        else:
            self.end_offset += n
            self.truesize += n
        self.headlen += n

    def vlan_push_inside(self) -> Skb:
        """include/linux/if_vlan.h __vlan_hwaccel_push_inside: the hwaccel tag goes in-band (4 bytes)."""
        out = self.copy(vlan_tag=None, vlan_inband=(self.vlan_tag or 0, *self.vlan_inband))
        out.push(VLAN_HLEN)
        return out

    def vlan_untag(self) -> Skb:
        """net/core/skbuff.c skb_vlan_untag: an in-band tag leaves the data and becomes vlan_tci (receive)."""
        if not self.vlan_inband:
            return self
        return self.copy(vlan_inband=self.vlan_inband[1:], vlan_tag=self.vlan_inband[0],
                         headlen=self.headlen - VLAN_HLEN, headroom=self.headroom + VLAN_HLEN)

    @public
    def encapsulate(self, hlen: Annotated[int, In(1, 255, "tunnel header bytes pushed (vxlan: outer IP + UDP + "
                                                   "VXLAN + inner ETH, 50 or 70)")],
                    gso_tunnel: Literal["UDP_TUNNEL", "UDP_TUNNEL_CSUM"], *, vni: VxlanVni | None = None,
                    ip: IpVersion = 4) -> Skb:
        """The tunnel headers (``hlen`` bytes, outer link header excluded) pushed in front; skb->encapsulation set
        and ``gso_tunnel`` (SKB_GSO_UDP_TUNNEL[_CSUM]) added to a GSO skb (iptunnel_handle_offloads). The inner
        frame's in-band tags become part of the tunnel headers' payload. ``vni`` and ``ip`` (the outer IP
        version) are what the tunnel header says, kept in :attr:`tunnels` for the receiving end."""
        gso_type = self.gso_type | ({gso_tunnel} if self.is_gso() else set())
        inner_tags = VLAN_HLEN * len(self.vlan_inband)
        tunnels = ((ip, vni, hlen + inner_tags), *self.tunnels) if vni is not None else self.tunnels
        out = self.copy(encapsulation=True, gso_type=frozenset(gso_type), vlan_tag=None, vlan_inband=(),
                        tunnel_hlen=self.tunnel_hlen + hlen + inner_tags, tunnels=tunnels)
        out.push(hlen)
        return out

    def total_frags(self) -> int:
        return sum(s.nr_frags for s in self.walk())

    def describe(self) -> str:
        parts = [
            f"len {self.len}",
            f"headlen {self.headlen}",
            f"data_len {self.data_len}",
            f"nr_frags {self.nr_frags}",
            f"truesize {self.truesize}",
            f"head {self.head_kind}{' (head_frag)' if self.head_frag else ''}",
        ]
        if self.frag_list:
            parts.append(f"frag_list {len(self.frag_list)} skbs")
        if self.gso_type:
            parts.append(f"gso {'|'.join(sorted(self.gso_type))} size {self.gso_size} segs {self.gso_segs}")
        return ", ".join(parts)

