"""virtio-net's receive path, from receive buffer to sk_buff, for each kernel version.

The rules are those of drivers/net/virtio_net.c (page_to_skb, receive_small, receive_big,
receive_mergeable, add_recvbuf_*, get_mergeable_buf_len) and of the skb allocators in net/core/skbuff.c
(napi_alloc_skb, __alloc_skb, build_skb). Version differences are rules in data/kernels.toml; sizes come
from the architecture profile (vnetlab.profiles.Arch), never from constants in this file.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple

from vnetlab.checks import In, check_choice, check_int, public
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, IP_HLEN, IP_MAX_MTU, TCP_HLEN_TS, UDP_HLEN, VLAN_HLEN
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Frag, Page, Skb

if TYPE_CHECKING:  # numpy is imported lazily: `import vnetlab.rx` stays light (tests/test_profiles.py)
    import numpy as np
    from numpy.typing import ArrayLike

# drivers/net/virtio_net.c constants (unchanged from 5.10 to 6.18).
GOOD_COPY_LEN = 128
GOOD_PACKET_LEN = ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN
VIRTIO_XDP_HEADROOM = 256
# sizeof(struct padded_vnet_hdr) from v5.18 (c1ddc42da2b2): a v1_hash header (20) plus char padding[12]; before
# v5.18 it is a mrg_rxbuf header (12) plus char padding[4] = 16. Per kernel: padded_vnet_hdr_len(k).
PADDED_VNET_HDR_LEN = 32
# sizeof(struct virtio_net_hdr_mrg_rxbuf): the header MRG_RXBUF or VERSION_1 negotiates (virtnet_probe), the
# default hdr_len everywhere; also what 5.x get_mergeable_buf_len adds (drivers/net/virtio_net.c).
MRG_RXBUF_HDR_LEN = 12
# include/net/sock.h: SKB_FRAG_PAGE_ORDER = get_order(32768), the rq page frag skb_page_frag_refill tries first.
SKB_FRAG_PAGE_SIZE = 32768
# include/linux/netdevice.h NAPI_POLL_WEIGHT: virtnet_alloc_queues registers each rx NAPI with it.
NAPI_POLL_WEIGHT = 64
# QEMU hw/net/virtio-net.c VIRTIO_NET_RX_QUEUE_DEFAULT_SIZE: the rx virtqueue size a guest usually sees.
RX_QUEUE_SIZE = 256

# The virtio-net header sizes virtnet_probe can pick (include/uapi/linux/virtio_net.h), per struct.
VNET_HDR_STRUCTS = {
    10: "virtio_net_hdr (neither MRG_RXBUF nor VERSION_1)",
    12: "virtio_net_hdr_mrg_rxbuf / virtio_net_hdr_v1 (MRG_RXBUF or VERSION_1)",
    20: "virtio_net_hdr_v1_hash (HASH_REPORT)",
    24: "virtio_net_hdr_v1_hash_tunnel (UDP tunnel GSO)",
}

# mergeable_buf_lens / small_buf_lens carve one buffer object each (~10 us): 65536 stay within a second or so
# (10,000,000 took 2 minutes).
MAX_BUFFERS = 1 << 16

PATHS = ("copy", "copy+frag", "build_skb")
MODES = ("small", "big", "mergeable")

# Annotations @public enforces (vnetlab.checks): the names and ranges a caller meets everywhere in rx and gro.
L4 = Literal["udp", "tcp"]
IpVersion = Literal[4, 6]
Mode = Literal["small", "big", "mergeable"]
PayloadLen = Annotated[int, In(0, IP_MAX_MTU, "L4 payload bytes")]

L4_HDR_LEN = {"udp": UDP_HLEN, "tcp": TCP_HLEN_TS}  # TCP with the timestamp option, as Linux sends by default


# --------------------------------------------------------------------------------------------------
# Argument checks: every bad value names the parameter, the allowed range and its kernel meaning.

# include/uapi/linux/if_ether.h ETH_MIN_MTU: virtnet_probe's dev->min_mtu; dev->max_mtu is MAX_MTU (ETH_MAX_MTU
# 65535) without VIRTIO_NET_F_MTU, the device's own mtu with it.
ETH_MIN_MTU = 68
MTU_MEANING = ("the device MTU: virtnet_probe sets dev->min_mtu = ETH_MIN_MTU (68) and dev->max_mtu = MAX_MTU "
               "(65535, or the device's VIRTIO_NET_F_MTU value)")


Mtu = Annotated[int, In(ETH_MIN_MTU, IP_MAX_MTU, MTU_MEANING)]


@public
def check_mtu(mtu: object) -> int:
    return check_int("mtu", mtu, ETH_MIN_MTU, IP_MAX_MTU, MTU_MEANING)


@public
def check_hdr_len(hdr_len: object, k: Kernel) -> int:
    allowed = list(k.rule("vnet_hdr_lens"))
    if not isinstance(hdr_len, int) or isinstance(hdr_len, bool) or hdr_len not in allowed:
        names = "; ".join(f"{n} = {VNET_HDR_STRUCTS[n]}" for n in allowed)
        raise ValueError(
            f"hdr_len={hdr_len!r} is not a virtio-net header size kernel {k.version} can negotiate "
            f"(virtnet_probe): allowed {allowed} ({names})"
        )
    return hdr_len  # type: ignore[return-value]


def _resolve(kernel: str | Kernel, arch: str | Arch) -> tuple[Kernel, Arch]:
    k = _kernel(kernel)
    return k, _arch(arch, k)


@public
def int_array(name: str, values: object, meaning: str, *, ndim: int | None = None) -> np.ndarray:
    """``values`` as an int64 array of byte counts (or one int), refusing what numpy would silently cast: bools,
    strings, objects, non-whole or non-finite floats. ``ndim``: the number of dimensions it must have."""
    import numpy as np

    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as e:  # ragged nested lists
        raise ValueError(f"{name} must be an array of ints ({meaning}): {e}") from None
    kind = arr.dtype.kind
    if kind == "f" and arr.size:
        whole = np.isfinite(arr).all() and (np.floor(arr) == arr).all()
        if not whole:
            raise ValueError(f"{name} must hold whole numbers ({meaning}), got {arr.dtype} values such as "
                             f"{arr.flat[int(np.argmax(~np.isfinite(arr) | (np.floor(arr) != arr)))]!r}")
    elif kind not in "iuf":
        raise ValueError(f"{name} must be ints ({meaning}), got {arr.dtype} values"
                         + (f" such as {arr.flat[0]!r}" if arr.size else ""))
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array ({meaning}), got shape {arr.shape}")
    return arr if kind in "iu" else arr.astype(np.int64)


# --------------------------------------------------------------------------------------------------
# skb head allocators (net/core/skbuff.c)

# kmalloc size classes (mm/slab_common.c kmalloc_info): sizes a kmalloc'ed skb head is rounded up to.
_KMALLOC_SIZES = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)


@public
def kmalloc_size_roundup(size: Annotated[int, In(0, 1 << 22, "a kmalloc request in bytes, up to KMALLOC_MAX_SIZE "
                                                     "(4 MiB: 2^(MAX_PAGE_ORDER + PAGE_SHIFT))")]) -> int:
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
def alloc_skb_head(size: int, k: Kernel, a: Arch, *, reserve: int = 0) -> Head:
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
    """napi_alloc_skb(napi, length) as page_to_skb calls it with GOOD_COPY_LEN (net/core/skbuff.c)."""
    k, a = _resolve(kernel, arch)
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
    return a.skb_truesize(frag_size - a.shinfo_size)


# --------------------------------------------------------------------------------------------------
# page_to_skb()

@dataclass(frozen=True)
class RxBuffer:
    """One receive buffer as the driver posted it: where it lies, what the device may fill, its truesize."""

    page: Page
    offset: int  # of the buffer start (the headroom start) in the page
    headroom: int
    len: int  # sg length offered to the device
    truesize: int  # as the ctx / receive function hands it on


@dataclass
class RxResult:
    """What the receive path made of one packet."""

    path: str
    skb: Skb
    tailroom: int | None
    shinfo_size: int
    frame_len: int
    mode: str
    kernel: Kernel  # the kernel that received it (a lab kernel with its patch's rules)
    arch: str
    hdr_len: int
    hdr_padded_len: int
    buffers: tuple[RxBuffer, ...] = ()
    copied: int = 0
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def num_buffers(self) -> int:
        return len(self.buffers)

    @property
    def frags(self) -> int:
        """Frag slots the packet uses in its first skb (what GRO has to merge)."""
        return self.skb.nr_frags


_PAGE_IDS = itertools.count(1)


def _new_page(size: int, label: str) -> Page:
    return Page(next(_PAGE_IDS), size, label)


@public
def padded_vnet_hdr_len(k: Kernel) -> int:
    """sizeof(struct padded_vnet_hdr) in drivers/net/virtio_net.c: 16 before v5.18, 32 from c1ddc42da2b2 (v5.18)."""
    return int(k.rule("padded_vnet_hdr_len"))


@public
def receive_big_max_frame(pages: int, hdr_len: int, k: Kernel, a: Arch) -> int:
    """The longest frame a big-mode chain of ``pages`` pages holds: sg[0] = hdr_len bytes, sg[1] from
    sizeof(padded_vnet_hdr) to the page end, then whole pages (add_recvbuf_big). The kernel's own test differs
    (receive_big_len_check): len > pages * PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len ("padded", 6.1.159+ /
    6.12.97+), len > pages * PAGE_SIZE ("pages", 6.12.58..96), or none in receive_big ("none", 5.10; page_to_skb
    drops a remainder over MAX_SKB_FRAGS * PAGE_SIZE); none of them lets through a frame the buffer cannot hold."""
    return pages * a.page_size - padded_vnet_hdr_len(k)


@public
def big_pages_range(a: Arch) -> tuple[int, int]:
    """big_packets_num_skbfrags + 1, the pages add_recvbuf_big chains: DIV_ROUND_UP(mtu, PAGE_SIZE) + 1 >= 2 without
    guest GSO, MAX_SKB_FRAGS + 1 with it (virtnet_set_big_packets)."""
    return 2, a.max_skb_frags + 1


@public
def big_max_frame(pages: int, hdr_len: int, k: Kernel, a: Arch) -> tuple[int, str]:
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


@public
def hdr_padded_len(mode: str, hdr_len: int, k: Kernel) -> int:
    """page_to_skb: hdr_padded_len = hdr_len (mergeable; 12 = sizeof(*hdr) before that) or sizeof(padded_vnet_hdr)."""
    if mode == "mergeable":
        return MRG_RXBUF_HDR_LEN if k.rule("mergeable_hdr_padded_len") == "mrg_rxbuf" else hdr_len
    return padded_vnet_hdr_len(k)


@public
def build_skb_tailroom(frame_len: int, truesize: int, *, mode: str, hdr_len: int, headroom: int,
                       k: Kernel, a: Arch) -> int | None:
    """The tailroom page_to_skb tests against SKB_DATA_ALIGN(sizeof(shinfo)); None where it has no build_skb branch."""
    if k.rule("page_to_skb") != "build_skb":
        return None
    if headroom and k.rule("xdp_truesize") == "page_size":
        # page_to_skb (5.13-6.2): buffers with headroom use PAGE_SIZE as alloc size.
        truesize = a.page_size
    # page_to_skb (5.13+ with 1a8024239dac): tailroom = truesize - headroom - hdr_padded_len - len.
    return truesize - headroom - hdr_padded_len(mode, hdr_len, k) - frame_len


@public
def page_to_skb(frame_len: int, truesize: int, *, mode: str = "mergeable", hdr_len: int = MRG_RXBUF_HDR_LEN,
                headroom: int = 0,
                kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                page: Page | None = None, offset: int = 0, big_pages: int | None = None) -> RxResult:
    """page_to_skb() for one receive buffer (drivers/net/virtio_net.c, per kernel version).

    ``frame_len`` is the Ethernet frame after the virtio-net header (the function's ``len - hdr_len``);
    ``truesize`` is what the caller passes (the mergeable ctx truesize, or PAGE_SIZE from receive_big);
    ``headroom`` is the XDP headroom of a mergeable buffer (0 or VIRTIO_XDP_HEADROOM).
    """
    k, a = _resolve(kernel, arch)
    check_choice("mode", mode, ("mergeable", "big"), "page_to_skb() is called by receive_mergeable and receive_big; "
                  "small mode builds its skb in receive_small")
    check_hdr_len(hdr_len, k)
    check_choice("headroom", headroom, (0, VIRTIO_XDP_HEADROOM) if mode == "mergeable" else (0,),
                  "0, or VIRTIO_XDP_HEADROOM (256) for a mergeable buffer with an XDP program")
    padded = hdr_padded_len(mode, hdr_len, k)
    if mode == "big":
        check_int("truesize", truesize, a.page_size, a.page_size,
                   f"receive_big passes truesize = PAGE_SIZE ({a.page_size} on {a.name})")
        lo_pages, hi_pages = big_pages_range(a)
        pages = hi_pages if big_pages is None else check_int(
            "big_pages", big_pages, lo_pages, hi_pages, "the pages add_recvbuf_big chains, big_packets_num_skbfrags "
            f"+ 1: DIV_ROUND_UP(mtu, PAGE_SIZE) + 1 without guest GSO, MAX_SKB_FRAGS + 1 = {hi_pages} with it")
        max_frame, why = big_max_frame(pages, hdr_len, k, a)
        check_int("frame_len", frame_len, ETH_HLEN, max_frame,
                   f"kernel {k.version} on {a.name} makes an skb of a big-mode frame up to {max_frame} bytes: {why}")
    else:
        room = mergeable_room(headroom, a)
        check_int("truesize", truesize, 1, *mergeable_truesize_max(headroom, k, a))
        limit = truesize if k.rule("mergeable_truesize") == "len" else truesize - room
        check_int("frame_len", frame_len, ETH_HLEN, max(ETH_HLEN, limit - hdr_len),
                   f"a frame longer than its buffer is a length error in receive_mergeable "
                   f"(len {hdr_len} + frame > {limit})")

    if page is not None and not isinstance(page, Page):
        raise ValueError(f"page must be a vnetlab.skb.Page (the page the buffer lies in) or None, got {page!r}")
    page = page or _new_page(a.page_size if mode == "big" else SKB_FRAG_PAGE_SIZE, "rx buffer")
    if mode == "big":
        check_int("offset", offset, 0, 0, "receive_big calls page_to_skb with offset 0: the chain's first page")
    else:
        check_int("offset", offset, 0, max(0, page.size - (headroom + padded + frame_len)),
                   f"the buffer's start in its {page.size}-byte page (add_recvbuf_mergeable's alloc_frag offset); "
                   f"headroom {headroom} + header {padded} + frame {frame_len} must end inside the page")
    data_offset = offset + headroom + padded  # p = page_address(page) + offset + hdr_padded_len
    shinfo = a.shinfo_size
    tailroom = build_skb_tailroom(frame_len, truesize, mode=mode, hdr_len=hdr_len, headroom=headroom, k=k, a=a)
    notes: list[str] = []

    if tailroom is not None and a.net_ip_align == 0 and frame_len > GOOD_COPY_LEN and tailroom >= shinfo:
        # page_to_skb (5.13+): !NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= shinfo_size -> build_skb(buf, ...).
        frag_size = a.page_size if (headroom and k.rule("xdp_truesize") == "page_size") else truesize
        skb = Skb(
            headlen=frame_len,
            truesize=build_skb_truesize(frag_size, a),
            head_frag=True,
            end_offset=frag_size - shinfo,
            headroom=headroom + padded,
            head_kind="build_skb",
            head_page=page,
            head_offset=offset,
        )
        if mode == "big" and k.rule("big_build_skb_gives_pages") is False:
            notes.append(f"{k.version} does not return the unused pages of the big-mode chain after build_skb "
                         "(fixed by 'virtio-net: fix pages leaking when building skb in big mode', ~5.15)")
        reason = (f"len {frame_len} > GOOD_COPY_LEN {GOOD_COPY_LEN} and tailroom {tailroom} >= "
                  f"SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {shinfo}: build_skb around the buffer")
        return RxResult("build_skb", skb, tailroom, shinfo, frame_len, mode, k, a.name, hdr_len, padded,
                        reason=reason, notes=tuple(notes))

    if tailroom is None:
        reason = f"kernel {k.version} has no build_skb branch in page_to_skb"
    elif a.net_ip_align:
        reason = f"NET_IP_ALIGN is {a.net_ip_align} on {a.name}: the build_skb branch is compiled out"
    elif frame_len <= GOOD_COPY_LEN:
        reason = f"len {frame_len} <= GOOD_COPY_LEN {GOOD_COPY_LEN}: small frames are copied"
    else:
        reason = f"tailroom {tailroom} < SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) {shinfo}"

    # napi_alloc_skb(&rq->napi, GOOD_COPY_LEN), then copy into skb->head.
    head = napi_alloc_skb(GOOD_COPY_LEN, kernel=k, arch=a)
    if k.rule("page_to_skb") == "copy128":
        # page_to_skb (<= 5.11): copy = min(len, skb_tailroom(skb)).
        copy = min(frame_len, head.tailroom)
    else:
        # page_to_skb (0f6925b3e8da, 5.12+): copy all if it fits skb_tailroom, else ETH_HLEN (+ metasize).
        copy = frame_len if frame_len <= head.tailroom else ETH_HLEN
    skb = Skb(headlen=copy, truesize=head.truesize, head_frag=head.head_frag, end_offset=head.end_offset,
              headroom=head.reserve, head_kind=head.kind)
    remaining = frame_len - copy
    frag_offset = data_offset + copy
    if mode == "mergeable":
        if remaining:
            # skb_add_rx_frag(skb, 0, page, offset, len, truesize): the rest of the buffer is one frag.
            frag_truesize = a.page_size if (headroom and k.rule("xdp_truesize") == "page_size") else truesize
            skb.frags.append(Frag(page, frag_offset, remaining, frag_truesize))
            skb.truesize += frag_truesize
    else:
        # Big mode: page-sized frags along the page->private chain, each charged truesize (PAGE_SIZE).
        pg, off = page, frag_offset
        while remaining:
            size = min(a.page_size - off, remaining)
            skb.frags.append(Frag(pg, off, size, truesize))
            skb.truesize += truesize
            remaining -= size
            pg, off = _new_page(a.page_size, "big-mode chain page"), 0
    path = "copy+frag" if skb.frags else "copy"
    return RxResult(path, skb, tailroom, shinfo, frame_len, mode, k, a.name, hdr_len, padded,
                    copied=copy, reason=reason + f"; copied {copy} bytes into a {head.kind} head")


# --------------------------------------------------------------------------------------------------
# Mergeable buffers: sizing and carving (add_recvbuf_mergeable, get_mergeable_buf_len)

@public
def mergeable_min_buf_len(*, mtu: int = ETH_DATA_LEN, hdr_len: int = MRG_RXBUF_HDR_LEN, ring_size: int = RX_QUEUE_SIZE,
                          big_packets: bool = False,
                          f_mtu: bool = False) -> int:
    """mergeable_min_buf_len (drivers/net/virtio_net.c): max(DIV_ROUND_UP(buf_len, ring) - hdr_len, GOOD_PACKET_LEN).

    packet_len is IP_MAX_MTU with big packets, else dev->max_mtu (the device MTU with VIRTIO_NET_F_MTU,
    MAX_MTU 65535 without it)."""
    check_mtu(mtu)
    check_int("ring_size", ring_size, 1, 32768, "the virtqueue size (virtqueue_get_vring_size)")
    packet_len = IP_MAX_MTU if big_packets or not f_mtu else mtu
    buf_len = hdr_len + ETH_HLEN + VLAN_HLEN + packet_len
    per_buf = -(-buf_len // ring_size)
    return max(max(per_buf, hdr_len) - hdr_len, GOOD_PACKET_LEN)


class Ewma:
    """DECLARE_EWMA(pkt_len, 0, 64) (include/linux/average.h): precision 0, weight reciprocal 64."""

    @public
    def __init__(self, value: int = 0) -> None:
        self.internal = value

    @public
    def add(self, sample: int) -> None:
        # ewma_pkt_len_add: internal = internal ? ((internal << 6) - internal + sample) >> 6 : sample.
        self.internal = ((self.internal << 6) - self.internal + sample) >> 6 if self.internal else sample

    def read(self) -> int:
        return self.internal


@public
def mergeable_room(headroom: int, a: Arch) -> int:
    """add_recvbuf_mergeable's room = SKB_DATA_ALIGN(headroom + tailroom), tailroom = headroom ? sizeof(struct
    skb_shared_info) : 0: what get_mergeable_buf_len takes off PAGE_SIZE with an XDP program (0 without)."""
    return a.skb_data_align(headroom + a.skb_shared_info_size) if headroom else 0


@public
def mergeable_truesize_max(headroom: int, k: Kernel, a: Arch) -> tuple[int, str]:
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
def get_mergeable_buf_len(avg_pkt_len: int, *, min_buf_len: int, hdr_len: int, room: int, a: Arch) -> int:
    """get_mergeable_buf_len: PAGE_SIZE - room with XDP, else
    ALIGN(hdr_len + clamp(ewma, min, PAGE_SIZE - hdr_len), L1_CACHE_BYTES)."""
    if room:
        return a.page_size - room
    length = hdr_len + min(max(avg_pkt_len, min_buf_len), a.page_size - hdr_len)
    return (length + a.l1_cache_bytes - 1) // a.l1_cache_bytes * a.l1_cache_bytes


class PageFrag:
    """rq->alloc_frag refilled by skb_page_frag_refill (net/core/sock.c): 32 KiB compound pages, or order 0."""

    @public
    def __init__(self, frag_size: int, a: Arch) -> None:
        self.size = frag_size
        self.page: Page | None = None
        self.offset = 0
        self.arch = a

    @public
    def refill(self, size: int) -> None:
        # skb_page_frag_refill: keep the page while offset + sz <= size, else take a new one from offset 0.
        if self.page is None or self.offset + size > self.size:
            self.page = _new_page(self.size, f"{self.size // 1024} KiB rx page frag")
            self.offset = 0


class PagePool:
    """rq->page_pool of 7.x virtio-net (virtnet_create_page_pools: pages of order pp_params.order) as
    page_pool_alloc_va() carves it: page_pool_alloc_netmem (include/net/page_pool/helpers.h) over
    page_pool_alloc_frag_netmem (net/core/page_pool.c), read in Debian linux-source-7.2 (7.2.12) and 7.3 (7.3.4)."""

    @public
    def __init__(self, page_bytes: int, a: Arch) -> None:
        self.size = page_bytes
        self.page: Page | None = None
        self.offset = 0  # pool->frag_offset
        self.arch = a

    @public
    def alloc(self, size: int) -> tuple[Page, int, int]:
        """(page, offset, size) for a request of ``size`` bytes; size comes back as the allocation's real size."""
        if size << 1 > self.size:
            # page_pool_alloc_netmem: more than half a page takes a whole page (*size = max_size, *offset = 0).
            return _new_page(self.size, "page_pool page"), 0, self.size
        # page_pool_alloc_frag_netmem: size = ALIGN(size, dma_get_cache_alignment()); a new page when it won't fit.
        step = -(-size // self.arch.dma_cache_alignment) * self.arch.dma_cache_alignment
        if self.page is None or self.offset + step > self.size:
            self.page = _new_page(self.size, f"{self.size // 1024} KiB page_pool page")
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
def rx_page_allocator(k: Kernel, a: Arch, frag_size: int | None = None) -> PageFrag | PagePool:
    """A fresh rq allocator for receive buffers as the kernel has it: rq->alloc_frag or rq->page_pool."""
    sizes = rx_frag_sizes(k, a)
    size = sizes[0] if frag_size is None else frag_size
    if k.rule("rx_page_pool"):
        check_choice("frag_size", size, sizes, f"kernel {k.version} carves receive buffers from a page_pool of "
                      f"order-{k.rule('rx_frag_order')} pages (virtnet_create_page_pools), not from a page frag")
        return PagePool(size, a)
    check_choice("frag_size", size, sorted(sizes), "skb_page_frag_refill takes an order-3 (32 KiB) compound page, "
                  "or falls back to one page")
    return PageFrag(size, a)


@public
def carve_mergeable_buffer(frag: PageFrag | PagePool, avg_pkt_len: int, *, min_buf_len: int, hdr_len: int, xdp: bool,
                           k: Kernel, a: Arch) -> RxBuffer:
    """add_recvbuf_mergeable: one receive buffer carved from the rq page frag (or 7.x page_pool), the hole
    rule included."""
    headroom = VIRTIO_XDP_HEADROOM if xdp else 0
    room = mergeable_room(headroom, a)
    length = get_mergeable_buf_len(avg_pkt_len, min_buf_len=min_buf_len, hdr_len=hdr_len, room=room, a=a)
    if isinstance(frag, PagePool) != bool(k.rule("rx_page_pool")):
        raise ValueError(f"frag={type(frag).__name__}: kernel {k.version} carves receive buffers from "
                         f"{'a page_pool' if k.rule('rx_page_pool') else 'rq->alloc_frag'} (rx_page_allocator)")
    if isinstance(frag, PagePool):
        # add_recvbuf_mergeable (Debian 7.2.12/7.3.4): alloc_len = len + room from page_pool_alloc_va, whose
        # allocation may exceed the request (the page's rest); without XDP len = alloc_len - room.
        page, start, alloc = frag.alloc(length + room)
        if not headroom:
            length = alloc - room
        truesize = length if k.rule("mergeable_truesize") == "len" else length + room  # ctx: len + room
        return RxBuffer(page, start, headroom, length, truesize)
    frag.refill(length + room)
    dma = int(k.rule("rq_dma_header"))
    if dma and frag.offset == 0:
        # add_recvbuf_mergeable (~6.18): len -= sizeof(virtnet_rq_dma) when it would not fit after the header;
        # virtnet_rq_alloc puts struct virtnet_rq_dma at offset 0 of each new frag page.
        if length + room + dma > frag.size:
            length -= dma
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
    return RxBuffer(frag.page, start, headroom, length, truesize)


@public
def mergeable_buf_lens(count: int, *, avg_pkt_len: int | None = None, mtu: int = ETH_DATA_LEN,
                       frag_size: int | None = None,
                       hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False, kernel: str | Kernel = DEFAULT_KERNEL,
                       arch: str | Arch = DEFAULT_ARCH, ring_size: int = RX_QUEUE_SIZE) -> list[int]:
    """The truesize of each successive mergeable buffer as add_recvbuf_mergeable() carves them.

    ``frag_size``: the rq page frag, SKB_FRAG_PAGE_SIZE (order 3) or one page (default: order 3, or one page
    where PAGE_SIZE is larger, as skb_page_frag_refill); on 7.x the page_pool's page (rx_frag_sizes)."""
    k, a = _resolve(kernel, arch)
    check_int("count", count, 0, MAX_BUFFERS, "how many buffers to carve (one Python object each)")
    _check_mergeable_hdr_len(hdr_len, k)
    check_mtu(mtu)
    frag = rx_page_allocator(k, a, frag_size)
    avg = 0 if avg_pkt_len is None else check_int("avg_pkt_len", avg_pkt_len, 0, IP_MAX_MTU,
                                                      "the EWMA of received packet length (ewma_pkt_len_read)")
    min_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, ring_size=ring_size, big_packets=mtu > ETH_DATA_LEN)
    return [carve_mergeable_buffer(frag, avg, min_buf_len=min_len, hdr_len=hdr_len, xdp=xdp, k=k, a=a).truesize
            for _ in range(count)]


def _check_mergeable_hdr_len(hdr_len: object, k: Kernel) -> int:
    check_hdr_len(hdr_len, k)
    if hdr_len == 10:
        raise ValueError("hdr_len=10 (struct virtio_net_hdr) cannot go with mergeable buffers: VIRTIO_NET_F_MRG_RXBUF "
                         "makes virtnet_probe use virtio_net_hdr_mrg_rxbuf (12) or a larger header")
    return hdr_len  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------
# Whole packets: receive_small, receive_big, receive_mergeable

@public
def frame_len_for(payload_len: PayloadLen, *, l4: L4 = "udp", ip: IpVersion = 4, vlan: bool = False) -> int:
    """The Ethernet frame (no FCS) carrying ``payload_len`` bytes of L4 payload."""
    check_choice("l4", l4, tuple(L4_HDR_LEN), "udp, or tcp (32-byte header with timestamps)")
    check_choice("ip", ip, tuple(IP_HLEN), "IPv4 (20-byte header) or IPv6 (40-byte header)")
    return ETH_HLEN + (VLAN_HLEN if vlan else 0) + IP_HLEN[ip] + L4_HDR_LEN[l4] + payload_len


@public
def small_buf_len(*, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False, kernel: str | Kernel = DEFAULT_KERNEL,
                  arch: str | Arch = DEFAULT_ARCH) -> int:
    """add_recvbuf_small's request: SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN + xdp_headroom)
    + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (drivers/net/virtio_net.c)."""
    k, a = _resolve(kernel, arch)
    check_hdr_len(hdr_len, k)
    xdp_headroom = VIRTIO_XDP_HEADROOM if xdp else 0
    return a.skb_data_align(hdr_len + a.net_ip_align + a.net_skb_pad + GOOD_PACKET_LEN + xdp_headroom) + a.shinfo_size


@public
def small_buf_lens(count: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False,
                   kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> list[int]:
    """The buflen receive_small hands build_skb for each successive small-mode buffer from a fresh allocator.

    Up to 6.18 every buffer is the request (skb_page_frag_refill, buflen computed again in receive_small);
    7.x takes it from a page_pool, whose last fragment of a page gets the page's rest, and receive_small
    reads that real size from the ctx (add_recvbuf_small: ctx = mergeable_len_to_ctx(alloc_len, xdp_headroom))."""
    k, a = _resolve(kernel, arch)
    check_int("count", count, 0, MAX_BUFFERS, "how many buffers to post (one Python object each)")
    want = small_buf_len(hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)
    if not k.rule("rx_page_pool"):
        return [want] * count
    pool = rx_page_allocator(k, a)
    return [pool.alloc(want)[2] for _ in range(count)]


@public
def receive_small(frame_len: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False,
                  kernel: str | Kernel = DEFAULT_KERNEL,
                  arch: str | Arch = DEFAULT_ARCH, buflen: int | None = None) -> RxResult:
    """receive_small: build_skb(buf, buflen) around a small-mode buffer, always (drivers/net/virtio_net.c).

    ``buflen``: the buffer's real size (7.x page_pool: the request or, for a page's last fragment, the page's
    rest, as small_buf_lens gives them; default the request). Up to 6.18 it is always the request."""
    k, a = _resolve(kernel, arch)
    check_hdr_len(hdr_len, k)
    check_int("frame_len", frame_len, ETH_HLEN, GOOD_PACKET_LEN,
               f"small-mode buffers hold GOOD_PACKET_LEN ({GOOD_PACKET_LEN}) bytes; longer frames are length errors")
    xdp_headroom = VIRTIO_XDP_HEADROOM if xdp else 0
    rx_pad = a.net_ip_align + a.net_skb_pad  # VIRTNET_RX_PAD
    want = small_buf_len(hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)
    if buflen is None:
        buflen = want
    elif k.rule("rx_page_pool"):
        # add_recvbuf_small (7.x): page_pool_alloc_va gives the request, or up to the rest of the pool's page.
        check_int("buflen", buflen, want, rx_frag_sizes(k, a)[0],
                   f"a small-mode buffer from the page_pool: the request {want} up to the pool's page")
    else:
        check_int("buflen", buflen, want, want, f"kernel {k.version}'s receive_small computes buflen = {want} "
                   "again from add_recvbuf_small's formula; only 7.x's page_pool passes the real size in the ctx")
    headroom = rx_pad + xdp_headroom + hdr_len
    page = _new_page(rx_frag_sizes(k, a)[0], "rx page_pool page" if k.rule("rx_page_pool") else "32 KiB rx page frag")
    skb = Skb(headlen=frame_len, truesize=build_skb_truesize(buflen, a), head_frag=True,
              end_offset=buflen - a.shinfo_size, headroom=headroom, head_kind="build_skb", head_page=page)
    buf = RxBuffer(page, 0, rx_pad + xdp_headroom, hdr_len + GOOD_PACKET_LEN, buflen)
    # Reported as page_to_skb computes tailroom: buffer end minus tail, skb_shared_info included.
    return RxResult("build_skb", skb, buflen - headroom - frame_len, a.shinfo_size, frame_len, "small", k,
                    a.name,
                    hdr_len, hdr_len, buffers=(buf,),
                    reason=f"receive_small always builds the skb around its {buflen}-byte buffer")


def _xdp_pass_build_skb(frame_len: int, buf: RxBuffer, hdr_len: int, k: Kernel, a: Arch) -> RxResult:
    # receive_mergeable_xdp (6.3+): XDP_PASS -> build_skb_from_xdp_buff: build_skb(data_hard_start, frame_sz).
    frag_size = a.page_size
    skb = Skb(headlen=frame_len, truesize=build_skb_truesize(frag_size, a), head_frag=True,
              end_offset=frag_size - a.shinfo_size, headroom=buf.headroom + hdr_len, head_kind="build_skb",
              head_page=buf.page, head_offset=buf.offset)
    return RxResult("build_skb", skb, None, a.shinfo_size, frame_len, "mergeable", k, a.name, hdr_len, hdr_len,
                    buffers=(buf,), reason="XDP_PASS: build_skb_from_xdp_buff() builds around the whole XDP buffer "
                    "(6.3+), whatever the frame length")


def _append_buffer(head: Skb, curr: Skb, buf: RxBuffer, used: int, k: Kernel, a: Arch) -> Skb:
    """receive_mergeable's loop for buffers 2..num_buffers (virtnet_skb_append_frag in 6.12+)."""
    if curr.nr_frags == a.max_skb_frags:
        # nr_frags == MAX_SKB_FRAGS: chain alloc_skb(0) on frag_list (then ->next); head pays its truesize.
        h = alloc_skb_head(0, k, a)
        nskb = Skb(headlen=0, truesize=h.truesize, head_frag=False, end_offset=h.end_offset, head_kind="alloc_skb0")
        head.frag_list.append(nskb)
        head.truesize += nskb.truesize
        curr = nskb
    if curr is not head:
        head.truesize += buf.truesize  # head_skb->len/data_len grow by derivation (frag_list member len)
    last = curr.frags[-1] if curr.frags else None
    if last is not None and last.page == buf.page and last.offset + last.size == buf.offset + buf.headroom:
        # skb_can_coalesce: the buffer continues the previous frag in the same page -> skb_coalesce_rx_frag.
        curr.frags[-1] = Frag(last.page, last.offset, last.size + used, last.truesize + buf.truesize)
    else:
        curr.frags.append(Frag(buf.page, buf.offset + buf.headroom, used, buf.truesize))
    curr.truesize += buf.truesize
    return curr


@public
def receive_mergeable(frame_len: int, buffers: Sequence[RxBuffer], *, hdr_len: int = MRG_RXBUF_HDR_LEN,
                      xdp: bool = False,
                      kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> RxResult:
    """receive_mergeable: the device spreads hdr + frame over num_buffers buffers; page_to_skb on the first."""
    k, a = _resolve(kernel, arch)
    _check_mergeable_hdr_len(hdr_len, k)
    for i, buf in enumerate(buffers):
        if not isinstance(buf, RxBuffer):
            raise ValueError(f"buffers[{i}] must be an rx.RxBuffer (a posted receive buffer), got {buf!r}")
    total = hdr_len + frame_len
    fills: list[int] = []
    for buf in buffers:
        take = min(total, buf.len)
        if take <= 0:
            break
        fills.append(take)
        total -= take
    if total > 0:
        raise ValueError(f"frame_len={frame_len} does not fit the {len(buffers)} buffers given "
                         f"({sum(b.len for b in buffers)} bytes with the {hdr_len}-byte header)")
    used_buffers = tuple(buffers[: len(fills)])
    first = used_buffers[0]
    if xdp and len(fills) == 1 and k.rule("xdp_pass_path") == "build_skb_from_xdp_buff":
        return _xdp_pass_build_skb(frame_len, first, hdr_len, k, a)
    result = page_to_skb(fills[0] - hdr_len, first.truesize, mode="mergeable", hdr_len=hdr_len,
                         headroom=first.headroom, kernel=k, arch=a, page=first.page, offset=first.offset)
    head = curr = result.skb
    for buf, used in zip(used_buffers[1:], fills[1:]):
        curr = _append_buffer(head, curr, buf, used, k, a)
    result.frame_len = frame_len
    result.buffers = used_buffers
    if len(fills) > 1:
        result.reason += f"; num_buffers {len(fills)}: buffers 2..{len(fills)} become frags"
        if head.frag_list:
            result.reason += f", {len(head.frag_list)} skb(s) chained on frag_list past MAX_SKB_FRAGS"
    return result


@public
def receive_big(frame_len: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, mtu: int = ETH_DATA_LEN, guest_gso: bool = True,
                kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> RxResult:
    """receive_big: page_to_skb(vi, rq, page, 0, len, PAGE_SIZE, ...) on a chain of big_packets_num_skbfrags + 1
    pages."""
    k, a = _resolve(kernel, arch)
    check_mtu(mtu)
    # virtnet_set_big_packets: num_skbfrags = guest_gso ? MAX_SKB_FRAGS : DIV_ROUND_UP(mtu, PAGE_SIZE).
    skbfrags = a.max_skb_frags if guest_gso else -(-mtu // a.page_size)
    first = _new_page(a.page_size, "big-mode first page")
    result = page_to_skb(frame_len, a.page_size, mode="big", hdr_len=hdr_len, kernel=k, arch=a,
                         big_pages=skbfrags + 1, page=first)
    result.buffers = (RxBuffer(first, 0, 0,
                               receive_big_max_frame(skbfrags + 1, hdr_len, k, a) + hdr_len, a.page_size),)
    return result


def _guest_gso_mss(payload_len: int, *, l4: str, ip: int, vlan: bool, mtu: int, gso_size: int | None, k: Kernel,
                   mode: str = "mergeable", guest_gso: bool = True) -> int:
    """The virtio-net header's gso_size for a packet above the MTU (0 when the packet fits the MTU)."""
    l3 = frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan) - ETH_HLEN - (VLAN_HLEN if vlan else 0)
    gso_ok = mode != "small" and guest_gso and (l4 == "tcp" or k.rule("guest_uso"))
    if l3 > mtu and not gso_ok:
        raise ValueError(f"payload_len={payload_len} makes a {l3}-byte IP packet, above mtu={mtu}; only a GSO packet "
                         f"can be that long (guest_gso=True in big or mergeable mode, TCP, or UDP with guest USO "
                         f"from 6.2; kernel {k.version} {'has' if k.rule('guest_uso') else 'has no'} guest USO)")
    if l3 > IP_MAX_MTU:
        raise ValueError(f"payload_len={payload_len} makes a {l3}-byte IP packet, above IP_MAX_MTU {IP_MAX_MTU}")
    if l3 <= mtu:
        if gso_size is not None:
            raise ValueError(f"gso_size={gso_size} given for a {l3}-byte IP packet that fits mtu={mtu}: the host sets "
                             "a virtio-net gso_size only on packets it did not segment")
        return 0
    mss = mtu - IP_HLEN[ip] - L4_HDR_LEN[l4] if gso_size is None else gso_size
    return check_int("gso_size", mss, 1, max(1, payload_len - 1),
                      "the virtio-net header's gso_size: segment payload, less than the packet's payload")


def _virtio_net_hdr_to_skb(skb: Skb, mss: int, *, l4: str, ip: int) -> None:
    """include/linux/virtio_net.h virtio_net_hdr_to_skb (6.1): a guest-GSO packet longer than gso_size gets
    gso_size, gso_type = the header's type | SKB_GSO_DODGY, and gso_segs = 0 ("Header must be checked")."""
    if mss:
        skb.gso_size = mss
        skb.gso_type = frozenset({("TCPV4" if ip == 4 else "TCPV6") if l4 == "tcp" else "UDP_L4", "DODGY"})
        skb.gso_segs = 0


def _frag_size(frag_size: int | None, k: Kernel, a: Arch) -> int | None:
    """receive()/RxQueue's frag_size: None for the kernel's usual allocator page; a page frag smaller than
    PAGE_SIZE is one page (skb_page_frag_refill never takes less)."""
    if frag_size is None or k.rule("rx_page_pool"):
        return frag_size
    return frag_size if frag_size >= a.page_size else a.page_size


@public
def receive(payload_len: PayloadLen, *, l4: L4 = "udp", ip: IpVersion = 4, vlan: bool = False,
            mode: Mode = "mergeable", mtu: Mtu = ETH_DATA_LEN, xdp: bool = False, kernel: str | Kernel = DEFAULT_KERNEL,
            arch: str | Arch = DEFAULT_ARCH, buf_len: int | None = None, hdr_len: int = MRG_RXBUF_HDR_LEN,
            frag_size: int | None = None, guest_gso: bool = True, gso_size: int | None = None) -> RxResult:
    """A whole packet from L4 payload to skb, choosing the buffer(s) the way the driver would.

    Mergeable buffers are carved from a fresh page frag at the EWMA floor (min_buf_len), the state of a
    queue that has seen no packet longer than MTU 1500; ``buf_len`` pins every buffer's truesize instead.
    A packet above the MTU is a guest-GSO packet: its skb carries the virtio-net header's ``gso_size``
    (default the MTU's MSS) as virtio_net_hdr_to_skb sets it (SKB_GSO_DODGY, gso_segs 0).
    """
    k, a = _resolve(kernel, arch)
    check_int("payload_len", payload_len, 0, IP_MAX_MTU, "L4 payload bytes")
    check_choice("mode", mode, MODES, "virtio-net receive modes: small (no MRG_RXBUF, no big packets), "
                  "big (guest GSO or MTU > 1500 without MRG_RXBUF), mergeable (MRG_RXBUF)")
    check_mtu(mtu)
    mss = _guest_gso_mss(payload_len, l4=l4, ip=ip, vlan=vlan, mtu=mtu, gso_size=gso_size, k=k, mode=mode,
                         guest_gso=guest_gso)
    result = _receive(payload_len, l4=l4, ip=ip, vlan=vlan, mode=mode, mtu=mtu, xdp=xdp, k=k, a=a, buf_len=buf_len,
                      hdr_len=hdr_len, frag_size=frag_size, guest_gso=guest_gso)
    _virtio_net_hdr_to_skb(result.skb, mss, l4=l4, ip=ip)
    return result


def _receive(payload_len: int, *, l4: str, ip: int, vlan: bool, mode: str, mtu: int, xdp: bool, k: Kernel, a: Arch,
             buf_len: int | None, hdr_len: int, frag_size: int | None, guest_gso: bool) -> RxResult:
    frame = frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan)
    frag_size = rq_frag_size(k, a) if frag_size is None else frag_size
    if mode == "small":
        if mtu > ETH_DATA_LEN:
            raise ValueError(f"mtu={mtu} with mode='small': virtnet_set_big_packets turns big packets on for "
                             "MTU > 1500, so the driver would be in big mode")
        if buf_len is not None:
            raise ValueError("buf_len cannot be pinned in small mode: add_recvbuf_small sizes the buffers "
                             "(receive_small(buflen=...) takes one of small_buf_lens)")
        return receive_small(frame, hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)
    if mode == "big":
        if buf_len is not None:
            raise ValueError("buf_len cannot be pinned in big mode: receive_big always passes PAGE_SIZE "
                             f"({a.page_size})")
        if xdp:
            raise ValueError("xdp=True with mode='big': virtnet_xdp_set refuses XDP while big packets without "
                             "mergeable buffers are in use")
        return receive_big(frame, hdr_len=hdr_len, mtu=mtu, guest_gso=guest_gso, kernel=k, arch=a)
    _check_mergeable_hdr_len(hdr_len, k)
    if buf_len is not None:
        headroom = VIRTIO_XDP_HEADROOM if xdp else 0
        room = mergeable_room(headroom, a)
        check_int("buf_len", buf_len, hdr_len + ETH_HLEN + 1, *mergeable_truesize_max(headroom, k, a))
        sg_len = buf_len if k.rule("mergeable_truesize") == "len" else buf_len - room
        if sg_len < hdr_len + ETH_HLEN:
            raise ValueError(f"buf_len={buf_len} leaves no room for a frame after XDP room {room}")
        count = -(-(frame + hdr_len) // sg_len)
        buffers = [RxBuffer(_new_page(a.page_size, "pinned buffer"), 0, headroom, sg_len, buf_len)
                   for _ in range(count)]
    else:
        min_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, big_packets=mtu > ETH_DATA_LEN or guest_gso)
        frag = rx_page_allocator(k, a, _frag_size(frag_size, k, a))
        buffers = []
        remaining = frame + hdr_len
        while remaining > 0:
            buf = carve_mergeable_buffer(frag, 0, min_buf_len=min_len, hdr_len=hdr_len, xdp=xdp, k=k, a=a)
            buffers.append(buf)
            remaining -= buf.len
    return receive_mergeable(frame, buffers, hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)


class RxQueue:
    """One mergeable receive queue over time: buffers posted ahead from the page frag at the EWMA of the
    time, consumed in order by packets, refilled after each NAPI poll (drivers/net/virtio_net.c).

    virtnet_receive: up to ``budget`` packets per poll, then try_fill_recv when num_free >
    min(budget, ring_size) / 2; try_fill_recv posts buffers until the ring is full; receive_mergeable feeds
    head_skb->len to the EWMA. A buffer posted before the EWMA moved keeps the size it was given.
    """

    @public
    def __init__(self, *, ring_size: int = RX_QUEUE_SIZE, budget: int = NAPI_POLL_WEIGHT, mtu: int = ETH_DATA_LEN,
                 hdr_len: int = MRG_RXBUF_HDR_LEN,
                 frag_size: int | None = None, xdp: bool = False, guest_gso: bool = True,
                 kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> None:
        self.k, self.a = _resolve(kernel, arch)
        check_int("ring_size", ring_size, 2, 32768, "the virtqueue size (virtqueue_get_vring_size)")
        check_int("budget", budget, 1, 65536, "the NAPI budget (packets per poll)")
        check_mtu(mtu)
        _check_mergeable_hdr_len(hdr_len, self.k)
        self.ring_size, self.budget, self.mtu, self.hdr_len, self.xdp = ring_size, budget, mtu, hdr_len, xdp
        self.guest_gso = guest_gso
        self.min_buf_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, ring_size=ring_size,
                                                 big_packets=mtu > ETH_DATA_LEN or guest_gso)
        self.frag = rx_page_allocator(self.k, self.a, _frag_size(frag_size, self.k, self.a))
        self.ewma = Ewma()
        self.posted: list[RxBuffer] = []
        self.polled = 0
        self.refills = 0
        self.try_fill_recv()

    def try_fill_recv(self) -> int:
        """Post buffers until the ring is full; returns how many were added."""
        added = 0
        while len(self.posted) < self.ring_size:
            self.posted.append(carve_mergeable_buffer(self.frag, self.ewma.read(), min_buf_len=self.min_buf_len,
                                                      hdr_len=self.hdr_len, xdp=self.xdp, k=self.k, a=self.a))
            added += 1
        self.refills += 1
        return added

    @public
    def receive(self, payload_len: PayloadLen, *, l4: L4 = "udp", ip: IpVersion = 4, vlan: bool = False) -> RxResult:
        """One packet through the queue: takes the buffers it needs, updates the EWMA, refills at poll end."""
        check_int("payload_len", payload_len, 0, IP_MAX_MTU, "L4 payload bytes")
        frame = frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan)
        mss = _guest_gso_mss(payload_len, l4=l4, ip=ip, vlan=vlan, mtu=self.mtu, gso_size=None, k=self.k,
                             guest_gso=self.guest_gso)
        need = self._buffers_needed(frame)
        if need is None:
            # The device holds the packet until the driver posts buffers: the poll ends, the ring is refilled.
            self.end_poll()
            need = self._buffers_needed(frame)
            if need is None:
                raise ValueError(f"payload_len={payload_len}: the packet needs more than the {self.ring_size} "
                                 "buffers of the ring (num_buffers larger than the ring)")
        buffers, self.posted = self.posted[:need], self.posted[need:]
        result = receive_mergeable(frame, buffers, hdr_len=self.hdr_len, xdp=self.xdp, kernel=self.k, arch=self.a)
        _virtio_net_hdr_to_skb(result.skb, mss, l4=l4, ip=ip)
        if not self.xdp:
            self.ewma.add(result.skb.len)  # receive_mergeable: ewma_pkt_len_add(&rq->mrg_avg_pkt_len, head_skb->len)
        self.polled += 1
        if self.polled == self.budget:
            self.end_poll()
        return result

    def _buffers_needed(self, frame: int) -> int | None:
        total, need = frame + self.hdr_len, 0
        while total > 0:
            if need >= len(self.posted):
                return None
            total -= self.posted[need].len
            need += 1
        return need

    def end_poll(self) -> None:
        """The end of a NAPI poll: refill when more than min(budget, ring) / 2 slots are free."""
        self.polled = 0
        if self.ring_size - len(self.posted) > min(self.budget, self.ring_size) // 2:
            self.try_fill_recv()

    def next_buffer_len(self) -> int:
        """The size add_recvbuf_mergeable would give the next buffer now (get_mergeable_buf_len)."""
        room = mergeable_room(VIRTIO_XDP_HEADROOM if self.xdp else 0, self.a)
        return get_mergeable_buf_len(self.ewma.read(), min_buf_len=self.min_buf_len, hdr_len=self.hdr_len,
                                     room=room, a=self.a)


# --------------------------------------------------------------------------------------------------
# The head an skb leaves the receive path with (kernel-facts C.3: what GRO has to merge)

@dataclass(frozen=True)
class HeadCase:
    """One per-packet skb shape of kernel-facts C.3 and the kernels whose receive path builds it."""

    name: str
    label: str  # the letter of kernel-facts C.3
    kernels: tuple[str, ...]  # kernels whose page_to_skb produces it for a single-buffer frame (first = reference)
    description: str


HEAD_CASES: dict[str, HeadCase] = {
    "build_skb": HeadCase("build_skb", "(a)", ("5.13", "6.1", "6.18"),
                          "build_skb() around the receive buffer: the whole frame linear, head_frag "
                          "(page_to_skb, fb32856b16ad, 5.13+)"),
    "kmalloc128": HeadCase("kmalloc128", "(b1)", ("5.11",),
                           "napi_alloc_skb(128) kmalloc head holding 128 copied bytes, the rest in 1 frag "
                           "(page_to_skb copy of <= 5.11 with 3226b158e67c's kmalloc heads)"),
    "pagefrag128": HeadCase("pagefrag128", "(b2)", ("5.10",),
                            "napi_alloc_skb(128) page-frag head (head_frag) holding 128 copied bytes, the rest in "
                            "1 frag (page_to_skb and __napi_alloc_skb of 5.10)"),
    "eth_hlen": HeadCase("eth_hlen", "(c)", ("5.12", "5.13", "6.1", "6.18"),
                         "ETH_HLEN copied into the napi head, the rest in 1 frag (0f6925b3e8da, 5.12+; "
                         "the 5.13+ copy path when the buffer's tailroom is short)"),
}


@public
def head_case(skb: Skb) -> str:
    """The C.3 case of an skb as page_to_skb built it: a HEAD_CASES name, "copy" (whole frame copied, no
    frag) or "other"."""
    if skb.head_kind == "build_skb":
        return "build_skb"
    if not skb.frags and not skb.frag_list:
        return "copy"
    if skb.headlen == ETH_HLEN:
        return "eth_hlen"
    if skb.headlen == GOOD_COPY_LEN:
        return "pagefrag128" if skb.head_frag else "kmalloc128"
    return "other"


# --------------------------------------------------------------------------------------------------
# Vectorised decision for many frames (the benchmark and the threshold maps)

PATH_CODES = {"copy": 0, "copy+frag": 1, "build_skb": 2}


class Classification(NamedTuple):
    """page_to_skb()'s decision for an array of frames (see :func:`classify`)."""

    codes: np.ndarray  # int8 PATH_CODES
    tailroom: np.ndarray  # the tailroom page_to_skb tests (-1 where the kernel has no build_skb branch)
    frags: np.ndarray  # int32 frag slots the skb uses
    copied: np.ndarray  # bytes copied into the napi_alloc_skb head (0 on the build_skb path)


@public
def classify(frame_lens: ArrayLike, truesizes: ArrayLike, *, mode: str = "mergeable",
             hdr_len: int = MRG_RXBUF_HDR_LEN, headroom: int = 0, kernel: str | Kernel = DEFAULT_KERNEL,
             arch: str | Arch = DEFAULT_ARCH) -> Classification:
    """page_to_skb()'s decision for arrays of single-buffer frames: (path codes, tailroom, frags, copied).

    Codes follow PATH_CODES. Same rules as :func:`page_to_skb` (tests cross-check them), written as a few
    whole-array passes: the build_skb test, the copy test against the napi head's tailroom, and the codes.
    """
    import numpy as np

    k, a = _resolve(kernel, arch)
    check_choice("mode", mode, ("mergeable", "big"), "page_to_skb() runs in mergeable and big mode")
    check_hdr_len(hdr_len, k)
    check_choice("headroom", headroom, (0, VIRTIO_XDP_HEADROOM) if mode == "mergeable" else (0,),
                  "0, or VIRTIO_XDP_HEADROOM (256) for a mergeable buffer with an XDP program")
    frames = int_array("frame_lens", frame_lens, "frame lengths in bytes", ndim=1)
    trues = int_array("truesizes", truesizes, "buffer truesizes in bytes, one int or one per frame")
    if trues.ndim and trues.shape != frames.shape:
        raise ValueError(f"truesizes must be one int or one per frame ({frames.size}), got shape {trues.shape}")
    if trues.size:
        if mode == "big":
            t_lo = t_hi = a.page_size
            t_why = f"receive_big passes truesize = PAGE_SIZE ({a.page_size} on {a.name})"
        else:
            t_lo, (t_hi, t_why) = 1, mergeable_truesize_max(headroom, k, a)
        t_min, t_max = int(trues.min()), int(trues.max())
        if t_min < t_lo or t_max > t_hi:
            raise ValueError(f"truesizes has {t_min if t_min < t_lo else t_max}, out of range {t_lo}..{t_hi}: {t_why}")
    padded = hdr_padded_len(mode, hdr_len, k)
    head = napi_alloc_skb(GOOD_COPY_LEN, kernel=k, arch=a)
    has_build = k.rule("page_to_skb") == "build_skb"
    # page_to_skb (5.13-6.2): a buffer with XDP headroom is taken as PAGE_SIZE long.
    xdp_page = bool(headroom) and k.rule("xdp_truesize") == "page_size"
    # tailroom = truesize - headroom - hdr_padded_len - len (page_to_skb, 5.13+ with 1a8024239dac).
    tail = np.subtract((a.page_size if xdp_page else trues) - (headroom + padded), frames)
    if frames.size:
        lo = int(frames.min())
        if lo < ETH_HLEN:
            raise ValueError(f"frame_lens has {lo}: receive_buf drops frames shorter than ETH_HLEN ({ETH_HLEN})")
        if mode == "mergeable":
            # receive_mergeable: a frame longer than its buffer (len > truesize) is a length error.
            slack = tail if not xdp_page else np.subtract(trues - (headroom + padded), frames)
            if int(slack.min()) < hdr_len - (headroom + padded):
                i = int(np.argmax(slack < hdr_len - (headroom + padded)))
                t = int(trues if trues.ndim == 0 else trues[i])
                raise ValueError(f"frame_lens[{i}]={int(frames[i])} is longer than its buffer (truesize {t} "
                                 f"with a {hdr_len}-byte header): a length error in receive_mergeable")
        else:
            max_frame, why = big_max_frame(big_pages_range(a)[1], hdr_len, k, a)
            if int(frames.max()) > max_frame:
                raise ValueError(f"frame_lens has {int(frames.max())}: kernel {k.version} on {a.name} makes an skb "
                                 f"of a big-mode frame up to {max_frame} bytes: {why}")
    if has_build and a.net_ip_align == 0:
        # page_to_skb (5.13+): !NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= SKB_DATA_ALIGN(shinfo).
        build = frames > GOOD_COPY_LEN
        np.logical_and(build, tail >= a.shinfo_size, out=build)
    else:
        build = np.zeros(frames.shape, dtype=bool)
    if not has_build:
        tail.fill(-1)
    if k.rule("page_to_skb") == "copy128":
        # page_to_skb (<= 5.11): copy = min(len, skb_tailroom(skb)); the rest is the frag.
        copied = np.minimum(frames, head.tailroom)
        frag = frames > head.tailroom
    else:
        # page_to_skb (0f6925b3e8da, 5.12+): the whole frame if it fits skb_tailroom, else ETH_HLEN + 1 frag.
        frag = frames > head.tailroom
        np.logical_and(frag, ~build, out=frag)
        copied = np.where(frag, ETH_HLEN, frames)
        np.putmask(copied, build, 0)
    codes = build.view(np.int8) * np.int8(2)
    codes += frag.view(np.int8)
    if mode == "mergeable":
        frags = frag.astype(np.int32)
    else:
        # receive_big: the rest of the frame spreads over page-sized frags along the page chain.
        rest = frames - copied
        first = a.page_size - padded - copied
        frags = np.where(frag, 1 + np.maximum(0, -(-(rest - first) // a.page_size)), 0).astype(np.int32)
    return Classification(codes, tail, frags, copied)
