"""struct sk_buff as the models need it: linear part, frags, frag_list, truesize, GSO fields.

Terms follow include/linux/skbuff.h: ``headlen`` = skb_headlen() (bytes in the linear part),
``data_len`` = bytes in frags and frag_list, ``len`` = headlen + data_len, ``end_offset`` =
skb_end_offset() (where skb_shared_info starts), ``tailroom`` = skb_tailroom(), ``truesize`` = memory
charged to the skb. len, data_len and nr_frags are derived, so they can never disagree with the frags.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

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

    def __post_init__(self) -> None:
        if self.head_kind not in HEAD_KINDS:
            raise ValueError(f"head_kind must be one of {sorted(HEAD_KINDS)}, got {self.head_kind!r}")
        for name in ("headlen", "truesize", "end_offset", "headroom", "gso_size", "gso_segs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Skb.{name} must be a non-negative int, got {value!r}")
        if self.headroom + self.headlen > self.end_offset:
            raise ValueError(
                f"Skb linear part overflows the head: headroom {self.headroom} + headlen {self.headlen} "
                f"> skb_end_offset {self.end_offset} (skb_over_panic in the kernel)"
            )
        self.gso_type = frozenset(self.gso_type)
        unknown = self.gso_type - set(SKB_GSO_NAMES)
        if unknown:
            raise ValueError(f"gso_type has unknown SKB_GSO names {sorted(unknown)}; known: {SKB_GSO_NAMES}")

    @property
    def nr_frags(self) -> int:
        return len(self.frags)

    @property
    def data_len(self) -> int:
        return sum(f.size for f in self.frags) + sum(s.len for s in self.frag_list)

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
        """This skb and every frag_list member (skb_walk_frags order)."""
        yield self
        for member in self.frag_list:
            yield from member.walk()

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

