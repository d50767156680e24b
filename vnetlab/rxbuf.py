"""Receive buffers: how virtio-net posts them and what each may hold (drivers/net/virtio_net.c).

add_recvbuf_small / add_recvbuf_big / add_recvbuf_mergeable carve buffers from the rq page frag
(net/core/sock.c skb_page_frag_refill) or, on 7.x, a page_pool (net/core/page_pool.c); get_mergeable_buf_len
sizes them from the EWMA of packet lengths; big mode chains pages. page_to_skb (vnetlab.rx) turns them into skbs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from vnetlab.checks import check_choice, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, IP_MAX_MTU, VLAN_HLEN
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve
from vnetlab.skb import Page
from vnetlab.skbuff import napi_alloc_skb
from vnetlab.virtio import (
    GOOD_COPY_LEN,
    GOOD_PACKET_LEN,
    MAX_BUFFERS,
    MRG_RXBUF_HDR_LEN,
    RX_QUEUE_SIZE,
    SKB_FRAG_PAGE_SIZE,
    VIRTIO_XDP_HEADROOM,
    BufBytes,
    BufSize,
    HdrLen,
    Mtu,
    XdpHeadroom,
    check_hdr_len,
    check_mergeable_hdr_len,
    padded_vnet_hdr_len,
)


@dataclass(frozen=True)
class RxBuffer:
    """One receive buffer as the driver posted it: where it lies, what the device may fill, its truesize."""

    page: Page
    offset: int  # of the buffer start (the headroom start) in the page
    headroom: int
    len: int  # sg length offered to the device
    truesize: int  # as the ctx / receive function hands it on
    # what the driver set aside from the buffer start: mergeable len + room (add_recvbuf_mergeable's
    # alloc_frag step, XDP room included), small buflen, big PAGE_SIZE; skb_shared_info would end here
    end: int


_PAGE_IDS = itertools.count(1)


@public
def new_page(size: BufSize, label: str) -> Page:
    return Page(next(_PAGE_IDS), size, label)


@public
def receive_big_max_frame(pages: int, hdr_len: HdrLen, k: Kernel, a: Arch) -> int:
    """The longest frame a big-mode chain of ``pages`` pages holds: sg[0] = hdr_len bytes, sg[1] from
    sizeof(padded_vnet_hdr) to the page end, then whole pages (add_recvbuf_big). The kernel's own test differs
    (receive_big_len_check): len > pages * PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len ("padded", 6.1.178+ /
    6.12.97+), len > pages * PAGE_SIZE ("pages", 6.1.159..177 / 6.12.58..96), or none in receive_big ("none",
    5.10; page_to_skb drops a remainder over MAX_SKB_FRAGS * PAGE_SIZE); none of them lets through a frame the
    buffer cannot hold."""
    check_int("pages", pages, *big_pages_range(a), "the pages add_recvbuf_big chains, big_packets_num_skbfrags + 1",
              function="rxbuf.receive_big_max_frame")
    return pages * a.page_size - padded_vnet_hdr_len(k)


@public
def big_pages_range(a: Arch) -> tuple[int, int]:
    """big_packets_num_skbfrags + 1, the pages add_recvbuf_big chains: DIV_ROUND_UP(mtu, PAGE_SIZE) + 1 >= 2 without
    guest GSO, MAX_SKB_FRAGS + 1 with it (virtnet_set_big_packets)."""
    return 2, a.max_skb_frags + 1


@public
def big_max_frame(pages: int, hdr_len: HdrLen, k: Kernel, a: Arch) -> tuple[int, str]:
    """The longest frame receive_big turns into an skb on a chain of ``pages`` pages, and why: the least of what
    the chain holds (receive_big_max_frame), the kernel's own drop test, and what MAX_SKB_FRAGS frags hold.

    Drop tests: receive_big "padded" len > pages * PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len, "pages"
    len > pages * PAGE_SIZE; "none" (5.x): page_to_skb drops a remainder (after the copy into the napi head)
    over MAX_SKB_FRAGS * PAGE_SIZE as "too much data". The frags start sizeof(padded_vnet_hdr) + copy into the
    first page, so MAX_SKB_FRAGS of them hold MAX_SKB_FRAGS * PAGE_SIZE - sizeof(padded_vnet_hdr) bytes with
    the copy; a longer frame that passes the drop test would make page_to_skb's loop write past
    skb_shinfo(skb)->frags[MAX_SKB_FRAGS] (no test in any version stops it), which no sk_buff can be."""
    padded = padded_vnet_hdr_len(k)
    bounds = [(receive_big_max_frame(pages, hdr_len, k, a),
               f"the {pages}-page chain holds {pages} * PAGE_SIZE - sizeof(padded_vnet_hdr) ({padded})")]
    rule = k.rule("receive_big_len_check")
    if rule == "padded":
        bounds.append((pages * a.page_size - padded,
                       "receive_big drops len > pages * PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len"))
    elif rule == "pages":
        bounds.append((pages * a.page_size - hdr_len, "receive_big drops len > pages * PAGE_SIZE"))
    else:
        head = napi_alloc_skb(GOOD_COPY_LEN, kernel=k, arch=a)
        copy = head.tailroom if k.rule("page_to_skb") == "copy128" else ETH_HLEN
        bounds.append((a.max_skb_frags * a.page_size + copy,
                       f"page_to_skb drops a remainder after its {copy}-byte copy over MAX_SKB_FRAGS * PAGE_SIZE "
                       "('too much data')"))
    bounds.append((a.max_skb_frags * a.page_size - padded,
                   f"MAX_SKB_FRAGS ({a.max_skb_frags}) page frags from offset sizeof(padded_vnet_hdr) hold no more "
                   "(a longer frame would overrun skb_shinfo(skb)->frags[])"))
    return min(bounds)


# --------------------------------------------------------------------------------------------------
# Mergeable buffers: sizing and carving (add_recvbuf_mergeable, get_mergeable_buf_len)

@public
def mergeable_min_buf_len(*, mtu: Mtu = ETH_DATA_LEN, hdr_len: HdrLen = MRG_RXBUF_HDR_LEN,
                          ring_size: int = RX_QUEUE_SIZE, big_packets: bool = False,
                          f_mtu: bool = False) -> int:
    """mergeable_min_buf_len (drivers/net/virtio_net.c): max(DIV_ROUND_UP(buf_len, ring) - hdr_len, GOOD_PACKET_LEN).

    packet_len is IP_MAX_MTU with big packets, else dev->max_mtu (the device MTU with VIRTIO_NET_F_MTU,
    MAX_MTU 65535 without it)."""
    check_int("ring_size", ring_size, 1, 32768, "the virtqueue size (virtqueue_get_vring_size)")
    packet_len = IP_MAX_MTU if big_packets or not f_mtu else mtu
    buf_len = hdr_len + ETH_HLEN + VLAN_HLEN + packet_len
    per_buf = -(-buf_len // ring_size)
    return max(max(per_buf, hdr_len) - hdr_len, GOOD_PACKET_LEN)


class Ewma:
    """DECLARE_EWMA(pkt_len, 0, 64) (include/linux/average.h): precision 0, weight reciprocal 64."""

    @public
    def __init__(self, value: BufBytes = 0) -> None:
        self.internal = value

    @public
    def add(self, sample: BufBytes) -> None:
        # ewma_pkt_len_add: internal = internal ? ((internal << 6) - internal + sample) >> 6 : sample.
        self.internal = ((self.internal << 6) - self.internal + sample) >> 6 if self.internal else sample

    def read(self) -> int:
        return self.internal


@public
def mergeable_room(headroom: XdpHeadroom, a: Arch) -> int:
    """add_recvbuf_mergeable's room = SKB_DATA_ALIGN(headroom + tailroom), tailroom = headroom ? sizeof(struct
    skb_shared_info) : 0: what get_mergeable_buf_len takes off PAGE_SIZE with an XDP program (0 without)."""
    return a.skb_data_align(headroom + a.skb_shared_info_size) if headroom else 0


@public
def mergeable_truesize_max(headroom: XdpHeadroom, k: Kernel, a: Arch) -> tuple[int, str]:
    """The largest truesize a mergeable buffer's ctx can hold, and why: 22 bits (mergeable_len_to_ctx) without
    XDP; with XDP headroom add_recvbuf_mergeable carves get_mergeable_buf_len = PAGE_SIZE - room, and the ctx
    holds that len (<= 6.2) or len + room = PAGE_SIZE (6.3+, rule mergeable_truesize)."""
    if not headroom:
        return 1 << 22, "the mergeable buffer truesize (ctx holds it in 22 bits)"
    room = mergeable_room(headroom, a)
    hi = a.page_size - room if k.rule("mergeable_truesize") == "len" else a.page_size
    return hi, (f"with XDP headroom add_recvbuf_mergeable carves PAGE_SIZE - room = {a.page_size - room}-byte "
                f"buffers (get_mergeable_buf_len), ctx truesize {hi} in kernel {k.version}")


@public
def get_mergeable_buf_len(avg_pkt_len: BufBytes, *, min_buf_len: BufSize, hdr_len: HdrLen, room: BufBytes,
                          a: Arch) -> int:
    """get_mergeable_buf_len: PAGE_SIZE - room with XDP, else
    ALIGN(hdr_len + clamp(ewma, min, PAGE_SIZE - hdr_len), L1_CACHE_BYTES)."""
    if room:
        return a.page_size - room
    length = hdr_len + min(max(avg_pkt_len, min_buf_len), a.page_size - hdr_len)
    return (length + a.l1_cache_bytes - 1) // a.l1_cache_bytes * a.l1_cache_bytes


class PageFrag:
    """rq->alloc_frag refilled by skb_page_frag_refill (net/core/sock.c): 32 KiB compound pages, or order 0."""

    @public
    def __init__(self, frag_size: BufSize, a: Arch) -> None:
        self.size = frag_size
        self.page: Page | None = None
        self.offset = 0
        self.arch = a

    @public
    def refill(self, size: BufSize) -> None:
        # skb_page_frag_refill: keep the page while offset + sz <= size, else take a new one from offset 0.
        if self.page is None or self.offset + size > self.size:
            self.page = new_page(self.size, f"{self.size // 1024} KiB rx page frag")
            self.offset = 0


class PagePool:
    """rq->page_pool of 7.x virtio-net (virtnet_create_page_pools: pages of order pp_params.order) as
    page_pool_alloc_va() carves it: page_pool_alloc_netmem (include/net/page_pool/helpers.h) over
    page_pool_alloc_frag_netmem (net/core/page_pool.c), read in Debian linux-source-7.2 (7.2.12) and 7.3 (7.3.4)."""

    @public
    def __init__(self, page_bytes: BufSize, a: Arch, frag_align: BufSize | None = None) -> None:
        self.size = page_bytes
        self.page: Page | None = None
        self.offset = 0  # pool->frag_offset
        self.arch = a
        # what page_pool_alloc_frag_netmem aligns a fragment's size to (page_pool_frag_align below)
        self.frag_align = a.dma_cache_alignment if frag_align is None else frag_align

    @public
    def alloc(self, size: BufSize) -> tuple[Page, int, int]:
        """(page, offset, size) for a request of ``size`` bytes; size comes back as the allocation's real size."""
        if size << 1 > self.size:
            # page_pool_alloc_netmem: more than half a page takes a whole page (*size = max_size, *offset = 0).
            return new_page(self.size, "page_pool page"), 0, self.size
        # page_pool_alloc_frag_netmem: size = ALIGN(size, dma_get_cache_alignment()) (7.3.4: or
        # __alignof__(struct skb_shared_info) if larger); a new page when it won't fit.
        step = -(-size // self.frag_align) * self.frag_align
        if self.page is None or self.offset + step > self.size:
            self.page = new_page(self.size, f"{self.size // 1024} KiB page_pool page")
            self.offset = 0
        start = self.offset
        self.offset = start + step
        if self.offset + size > self.size:
            # page_pool_alloc_netmem: "very likely not enough space for another fragment", the rest goes here.
            size = self.size - start
            self.offset = self.size
        return self.page, start, size


@public
def rx_frag_sizes(k: Kernel, a: Arch) -> tuple[int, ...]:
    """The page sizes receive buffers are carved from, the usual one first: skb_page_frag_refill's order-3
    (32 KiB) compound page or its order-0 fallback (rq->alloc_frag, <= 6.18), or 7.x's page_pool of
    PAGE_SIZE << pp_params.order pages (rules rx_page_pool, rx_frag_order)."""
    if k.rule("rx_page_pool"):
        return (a.page_size << int(k.rule("rx_frag_order")),)
    return tuple(dict.fromkeys((max(a.page_size, SKB_FRAG_PAGE_SIZE), a.page_size)))


@public
def rq_frag_size(k: Kernel, a: Arch) -> int:
    """The memory mergeable buffers are usually carved from: the first of rx_frag_sizes."""
    return rx_frag_sizes(k, a)[0]


@public
def page_pool_frag_align(k: Kernel, a: Arch) -> int:
    """What page_pool_alloc_frag_netmem aligns a fragment to (kernel rule page_pool_frag_align):
    dma_get_cache_alignment() ("dma", 7.2.12), or max_t(unsigned int, dma_get_cache_alignment(),
    __alignof__(struct skb_shared_info)) ("dma_shinfo", 7.3.4 and the stable backport "page_pool: keep
    frag_offset aligned for odd-sized requests", in 6.1.192 and 6.12.117 too)."""
    if k.rule("page_pool_frag_align") == "dma_shinfo":
        return max(a.dma_cache_alignment, a.shinfo_align)
    return a.dma_cache_alignment


@public
def rx_page_allocator(k: Kernel, a: Arch, frag_size: int | None = None) -> PageFrag | PagePool:
    """A fresh rq allocator for receive buffers as the kernel has it: rq->alloc_frag or rq->page_pool."""
    sizes = rx_frag_sizes(k, a)
    size = sizes[0] if frag_size is None else frag_size
    if k.rule("rx_page_pool"):
        check_choice("frag_size", size, sizes, f"kernel {k.version} carves receive buffers from a page_pool of "
                      f"order-{k.rule('rx_frag_order')} pages (virtnet_create_page_pools), not from a page frag")
        return PagePool(size, a, page_pool_frag_align(k, a))
    check_choice("frag_size", size, sorted(sizes), "skb_page_frag_refill takes an order-3 (32 KiB) compound page, "
                  "or falls back to one page")
    return PageFrag(size, a)


@public
def carve_mergeable_buffer(frag: PageFrag | PagePool, avg_pkt_len: BufBytes, *, min_buf_len: BufSize,
                           hdr_len: HdrLen, xdp: bool, k: Kernel, a: Arch) -> RxBuffer:
    """add_recvbuf_mergeable: one receive buffer carved from the rq page frag (or 7.x page_pool), the hole
    rule included."""
    headroom = VIRTIO_XDP_HEADROOM if xdp else 0
    room = mergeable_room(headroom, a)
    length = get_mergeable_buf_len(avg_pkt_len, min_buf_len=min_buf_len, hdr_len=hdr_len, room=room, a=a)
    if isinstance(frag, PagePool) != bool(k.rule("rx_page_pool")):
        raise ArgumentError(f"frag={type(frag).__name__}: kernel {k.version} carves receive buffers from "
                            f"{'a page_pool' if k.rule('rx_page_pool') else 'rq->alloc_frag'} (rx_page_allocator)",
                            param="frag")
    if isinstance(frag, PagePool):
        # add_recvbuf_mergeable (Debian 7.2.12/7.3.4): alloc_len = len + room from page_pool_alloc_va, whose
        # allocation may exceed the request (the page's rest); without XDP len = alloc_len - room.
        page, start, alloc = frag.alloc(length + room)
        if not headroom:
            length = alloc - room
        truesize = length if k.rule("mergeable_truesize") == "len" else length + room  # ctx: len + room
        return RxBuffer(page, start, headroom, length, truesize, length + room)
    frag.refill(length + room)
    reserve = int(k.rule("mergeable_dma_reserve"))
    if reserve and frag.offset == 0 and length + room + reserve > frag.size:
        # add_recvbuf_mergeable (6.12..6.18): len -= sizeof(struct virtnet_rq_dma) on a fresh frag that cannot
        # hold both, whatever rq->do_dma is (6.12 never sets do_dma); with XDP the hole is not given back.
        length -= reserve
    dma = int(k.rule("rq_dma_header"))
    if dma and frag.offset == 0:
        # virtnet_rq_alloc (~6.18): struct virtnet_rq_dma at offset 0 of each new frag page.
        frag.offset = dma
    assert frag.page is not None
    start = frag.offset
    frag.offset += length + room
    hole = frag.size - frag.offset
    if hole < length + room:
        # "if there is very likely not enough space for another buffer, add the remaining space".
        if k.rule("mergeable_hole") == "always" or not headroom:
            length += hole
        frag.offset += hole
    # ctx = mergeable_len_to_ctx(len, headroom) (<= 6.2) or (len + room, headroom) (6.3+).
    truesize = length if k.rule("mergeable_truesize") == "len" else length + room
    return RxBuffer(frag.page, start, headroom, length, truesize, length + room)


@public
def mergeable_buf_lens(count: int, *, avg_pkt_len: int | None = None, mtu: Mtu = ETH_DATA_LEN,
                       frag_size: int | None = None,
                       hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False, kernel: str | Kernel = DEFAULT_KERNEL,
                       arch: str | Arch = DEFAULT_ARCH, ring_size: int = RX_QUEUE_SIZE) -> list[int]:
    """The truesize of each successive mergeable buffer as add_recvbuf_mergeable() carves them.

    ``frag_size``: the rq page frag, SKB_FRAG_PAGE_SIZE (order 3) or one page (default: order 3, or one page
    where PAGE_SIZE is larger, as skb_page_frag_refill); on 7.x the page_pool's page (rx_frag_sizes).
    ``count`` 0 is an empty list; ``avg_pkt_len`` 0 (or None) is the EWMA before any packet, so each buffer is
    min_buf_len (get_mergeable_buf_len clamps the average to it)."""
    k, a = resolve(kernel, arch)
    check_int("count", count, 0, MAX_BUFFERS, "how many buffers to carve (one Python object each)")
    check_mergeable_hdr_len(hdr_len, k)
    frag = rx_page_allocator(k, a, frag_size)
    avg = 0 if avg_pkt_len is None else check_int("avg_pkt_len", avg_pkt_len, 0, IP_MAX_MTU,
                                                      "the EWMA of received packet length (ewma_pkt_len_read)")
    min_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, ring_size=ring_size, big_packets=mtu > ETH_DATA_LEN)
    return [carve_mergeable_buffer(frag, avg, min_buf_len=min_len, hdr_len=hdr_len, xdp=xdp, k=k, a=a).truesize
            for _ in range(count)]


@public
def small_buf_len(*, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False, kernel: str | Kernel = DEFAULT_KERNEL,
                  arch: str | Arch = DEFAULT_ARCH) -> int:
    """add_recvbuf_small's request: SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN + xdp_headroom)
    + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (drivers/net/virtio_net.c)."""
    k, a = resolve(kernel, arch)
    check_hdr_len(hdr_len, k)
    xdp_headroom = VIRTIO_XDP_HEADROOM if xdp else 0
    return a.skb_data_align(hdr_len + a.net_ip_align + a.net_skb_pad + GOOD_PACKET_LEN + xdp_headroom) + a.shinfo_size


@public
def small_buf_lens(count: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False,
                   kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> list[int]:
    """The buflen receive_small hands build_skb for each successive small-mode buffer from a fresh allocator.

    Up to 6.18 every buffer is the request (skb_page_frag_refill, buflen computed again in receive_small);
    7.x takes it from a page_pool, whose last fragment of a page gets the page's rest, and receive_small
    reads that real size from the ctx (add_recvbuf_small: ctx = mergeable_len_to_ctx(alloc_len, xdp_headroom)).
    ``count`` 0 is an empty list."""
    k, a = resolve(kernel, arch)
    check_int("count", count, 0, MAX_BUFFERS, "how many buffers to post (one Python object each)")
    want = small_buf_len(hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)
    if not k.rule("rx_page_pool"):
        return [want] * count
    pool = rx_page_allocator(k, a)
    return [pool.alloc(want)[2] for _ in range(count)]


@public
def frag_size_for(frag_size: BufSize | None, k: Kernel, a: Arch) -> int | None:
    """receive()/RxQueue's frag_size: None for the kernel's usual allocator page; a page frag smaller than
    PAGE_SIZE is one page (skb_page_frag_refill never takes less)."""
    if frag_size is None or k.rule("rx_page_pool"):
        return frag_size
    return frag_size if frag_size >= a.page_size else a.page_size

