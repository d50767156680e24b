"""skb head allocators (net/core/skbuff.c): napi_alloc_skb, __alloc_skb, build_skb's truesize.

Both directions use them: the receive path's copy heads (page_to_skb, receive_mergeable's frag_list chain)
and the transmit path's segments (skb_segment). Sizes come from the architecture profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from vnetlab.checks import In, check_int, public
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve

# kmalloc size classes (mm/slab_common.c kmalloc_info): sizes a kmalloc'ed skb head is rounded up to.
_KMALLOC_SIZES = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)
# include/linux/slab.h KMALLOC_MAX_SIZE (4 MiB: 2^(MAX_PAGE_ORDER + PAGE_SHIFT) with 4 KiB pages, order 10)
KMALLOC_MAX_SIZE = 1 << 22


@public
def kmalloc_size_roundup(size: Annotated[int, In(0, KMALLOC_MAX_SIZE, "a kmalloc request in bytes, up to "
                                                     "KMALLOC_MAX_SIZE (4 MiB: 2^(MAX_PAGE_ORDER + PAGE_SHIFT))")]
                         ) -> int:
    """kmalloc_size_roundup() / ksize(): the slab object size a kmalloc(size) really gets."""
    for s in _KMALLOC_SIZES:
        if size <= s:
            return s
    return 1 << (size - 1).bit_length()  # larger heads come from the page allocator, rounded to an order


@dataclass(frozen=True)
class Head:
    """A freshly allocated skb head: where it came from, its usable size and what it charges."""

    kind: str
    head_frag: bool
    end_offset: int  # skb_end_offset(): usable bytes before skb_shared_info
    truesize: int
    reserve: int  # skb_reserve() applied by the allocator

    @property
    def tailroom(self) -> int:
        return self.end_offset - self.reserve


@public
def small_head_cache_size(k: Kernel, a: Arch) -> int:
    """SKB_SMALL_HEAD_CACHE_SIZE (net/core/skbuff.c, 6.3+): SKB_HEAD_ALIGN(max(MAX_TCP_HEADER, GRO_MAX_HEAD_PAD)),
    plus L1_CACHE_BYTES when that is a power of two (to keep the cache apart from kmalloc-N)."""
    size = a.skb_head_align(int(k.rule("small_head_request")))
    return size + a.l1_cache_bytes if size & (size - 1) == 0 else size


@public
def alloc_skb_head(size: Annotated[int, In(0, KMALLOC_MAX_SIZE, "the __alloc_skb request in bytes")], k: Kernel,
                   a: Arch, *, reserve: Annotated[int, In(0, KMALLOC_MAX_SIZE, "skb_reserve bytes")] = 0) -> Head:
    """__alloc_skb(size): a kmalloc'ed head (kmalloc_reserve; 6.3+ the skb_small_head_cache)."""
    obj = a.skb_head_align(size)
    if k.rule("napi_head") == "small_head_cache" and obj <= small_head_cache_size(k, a):
        # net/core/skbuff.c kmalloc_reserve (6.3+): small heads come from skb_small_head_cache.
        obj, kind = small_head_cache_size(k, a), "small_head_cache"
    else:
        # net/core/skbuff.c __alloc_skb: size = SKB_WITH_OVERHEAD(ksize / kmalloc_size_roundup(obj)).
        obj, kind = kmalloc_size_roundup(obj), "kmalloc"
    end = a.skb_with_overhead(obj)
    return Head(kind, False, end, a.skb_truesize(end), reserve)


@public
def napi_alloc_skb(length: int, *, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> Head:
    """napi_alloc_skb(napi, length) as page_to_skb calls it with GOOD_COPY_LEN (net/core/skbuff.c); ``length`` 0
    is a head with only its NET_SKB_PAD + NET_IP_ALIGN headroom."""
    k, a = resolve(kernel, arch)
    check_int("length", length, 0, a.page_size, "the napi_alloc_skb() request in bytes")
    reserve = a.net_skb_pad + a.net_ip_align
    n = length + reserve  # len += NET_SKB_PAD + NET_IP_ALIGN
    rule = k.rule("napi_head")
    if n > a.skb_with_overhead(a.page_size):
        return alloc_skb_head(n, k, a, reserve=reserve)
    if rule == "page_frag":
        # 5.10 __napi_alloc_skb: page_frag_alloc(SKB_DATA_ALIGN(len + SKB_DATA_ALIGN(shinfo))) + __build_skb.
        frag = a.skb_data_align(n + a.shinfo_size)
        end = frag - a.shinfo_size
        return Head("napi_page_frag", True, end, a.skb_truesize(end), reserve)
    if rule == "kmalloc":
        # 5.11 3226b158e67c: len <= SKB_WITH_OVERHEAD(1024) -> __alloc_skb (kmalloc head, head_frag 0).
        if n <= a.skb_with_overhead(1024):
            return alloc_skb_head(n, k, a, reserve=reserve)
        frag = a.skb_head_align(n)
        end = frag - a.shinfo_size
        return Head("napi_page_frag", True, end, a.skb_truesize(end), reserve)
    if rule == "page_frag_1k":
        # 6.1 __napi_alloc_skb: NAPI_HAS_SMALL_PAGE_FRAG (PAGE_SIZE == 4K) -> 1 KiB frag, __napi_build_skb(data, 1024).
        if n <= a.skb_with_overhead(1024):
            if a.page_size == 4096:
                end = 1024 - a.shinfo_size
                return Head("napi_page_frag_1k", True, end, a.skb_truesize(end), reserve)
            return alloc_skb_head(n, k, a, reserve=reserve)
        frag = a.skb_head_align(n)
        end = frag - a.shinfo_size
        return Head("napi_page_frag", True, end, a.skb_truesize(end), reserve)
    if rule == "small_head_cache":
        # 6.14+ napi_alloc_skb: len <= SKB_WITH_OVERHEAD(SKB_SMALL_HEAD_CACHE_SIZE) -> __alloc_skb.
        if n <= a.skb_with_overhead(small_head_cache_size(k, a)):
            return alloc_skb_head(n, k, a, reserve=reserve)
        frag = a.skb_head_align(n)
        end = frag - a.shinfo_size
        return Head("napi_page_frag", True, end, a.skb_truesize(end), reserve)
    raise ValueError(f"data/kernels.toml: [{k.version}].napi_head has unknown value {rule!r}")


@public
def build_skb_truesize(frag_size: int, a: Arch) -> int:
    """build_skb(data, frag_size): truesize = SKB_TRUESIZE(frag_size - SKB_DATA_ALIGN(shinfo)) (__build_skb_around)."""
    check_int("frag_size", frag_size, a.shinfo_size, KMALLOC_MAX_SIZE,
              "build_skb's buffer, SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) at its end included",
              function="skbuff.build_skb_truesize")
    return a.skb_truesize(frag_size - a.shinfo_size)

