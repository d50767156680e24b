"""virtio-net's receive path, from receive buffer to sk_buff, for each kernel version.

The rules are those of drivers/net/virtio_net.c (page_to_skb, receive_small, receive_big, receive_mergeable)
over the buffers vnetlab.rxbuf posts and the heads vnetlab.skbuff allocates. Version differences are rules in
data/kernels.toml; sizes come from the architecture profile (vnetlab.profiles.Arch), never from constants here.
The numpy classifier for many frames is vnetlab.rx_classify (``rx.classify`` loads it on first use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vnetlab.checks import check_choice, check_int, int_array, public  # noqa: F401 (int_array: rx's name)
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, IP_HLEN, IP_MAX_MTU, VLAN_HLEN
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve
from vnetlab.rxbuf import (  # noqa: F401
    Ewma,
    PageFrag,
    PagePool,
    RxBuffer,
    big_max_frame,
    big_pages_range,
    carve_mergeable_buffer,
    frag_size_for,
    get_mergeable_buf_len,
    mergeable_buf_lens,
    mergeable_min_buf_len,
    mergeable_room,
    mergeable_truesize_max,
    new_page,
    receive_big_max_frame,
    rq_frag_size,
    rx_frag_sizes,
    rx_page_allocator,
    small_buf_len,
    small_buf_lens,
)
from vnetlab.skb import Frag, Page, Skb
from vnetlab.skbuff import (  # noqa: F401
    Head,
    alloc_skb_head,
    build_skb_truesize,
    kmalloc_size_roundup,
    napi_alloc_skb,
    small_head_cache_size,
)
from vnetlab.virtio import (  # noqa: F401 (rx's names before the split stay importable from here)
    ETH_MIN_MTU,
    GOOD_COPY_LEN,
    GOOD_PACKET_LEN,
    L4,
    L4_HDR_LEN,
    MAX_BUFFERS,
    MODES,
    MRG_RXBUF_HDR_LEN,
    MTU_MEANING,
    NAPI_POLL_WEIGHT,
    PADDED_VNET_HDR_LEN,
    PATH_CODES,
    PATHS,
    RX_QUEUE_SIZE,
    SKB_FRAG_PAGE_SIZE,
    VIRTIO_XDP_HEADROOM,
    VNET_HDR_STRUCTS,
    BufBytes,
    BufSize,
    HdrLen,
    IpVersion,
    Mode,
    Mtu,
    PayloadLen,
    XdpHeadroom,
    check_hdr_len,
    check_mergeable_hdr_len,
    check_mtu,
    frame_len_for,
    hdr_padded_len,
    padded_vnet_hdr_len,
)


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

    @property
    def first_len(self) -> int:
        """The frame length page_to_skb() saw in the first buffer (its len - hdr_len): the whole frame, or
        what fits the first of several mergeable buffers."""
        if self.mode == "mergeable" and self.buffers:
            return min(self.hdr_len + self.frame_len, self.buffers[0].len) - self.hdr_len
        return self.frame_len

    @property
    def buffer_end(self) -> int:
        """Where the first buffer ends, counted from its start (the headroom's start): where page_to_skb
        computes the tailroom against (truesize, or PAGE_SIZE for an XDP buffer on 5.13-6.2), else what the
        driver set aside for it (RxBuffer.end: the XDP room included)."""
        if not self.buffers:
            raise ValueError("this result has no receive buffer (RxResult.buffers is empty)")
        buf = self.buffers[0]
        if self.tailroom is not None and self.mode != "small":
            return buf.headroom + self.hdr_padded_len + self.first_len + self.tailroom
        return buf.end


@public
def build_skb_tailroom(frame_len: BufBytes, truesize: BufSize, *, mode: Literal["mergeable", "big"],
                       hdr_len: HdrLen, headroom: XdpHeadroom, k: Kernel, a: Arch) -> int | None:
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
    k, a = resolve(kernel, arch)
    check_choice("mode", mode, ("mergeable", "big"), "page_to_skb() is called by receive_mergeable and receive_big; "
                  "small mode builds its skb in receive_small")
    check_hdr_len(hdr_len, k)
    check_choice("headroom", headroom, (0, VIRTIO_XDP_HEADROOM) if mode == "mergeable" else (0,),
                  "0, or VIRTIO_XDP_HEADROOM (256) for a mergeable buffer with an XDP program")
    padded = hdr_padded_len(mode, hdr_len, k)
    if mode == "mergeable" and big_pages is not None:
        raise ArgumentError(f"big_pages={big_pages!r} with mode='mergeable': big_pages is the page count of a big-mode "
                            "chain (add_recvbuf_big); a mergeable buffer is one page frag", param="big_pages")
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
        raise ArgumentError(f"page must be a vnetlab.skb.Page (the page the buffer lies in) or None, got {page!r}",
                            param="page")
    page = page or new_page(a.page_size if mode == "big" else SKB_FRAG_PAGE_SIZE, "rx buffer")
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
            pg, off = new_page(a.page_size, "big-mode chain page"), 0
    path = "copy+frag" if skb.frags else "copy"
    return RxResult(path, skb, tailroom, shinfo, frame_len, mode, k, a.name, hdr_len, padded,
                    copied=copy, reason=reason + f"; copied {copy} bytes into a {head.kind} head")


@public
def receive_small(frame_len: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, xdp: bool = False,
                  kernel: str | Kernel = DEFAULT_KERNEL,
                  arch: str | Arch = DEFAULT_ARCH, buflen: int | None = None) -> RxResult:
    """receive_small: build_skb(buf, buflen) around a small-mode buffer, always (drivers/net/virtio_net.c).

    ``buflen``: the buffer's real size (7.x page_pool: the request or, for a page's last fragment, the page's
    rest, as small_buf_lens gives them; default the request). Up to 6.18 it is always the request."""
    k, a = resolve(kernel, arch)
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
    page = new_page(rx_frag_sizes(k, a)[0], "rx page_pool page" if k.rule("rx_page_pool") else "32 KiB rx page frag")
    skb = Skb(headlen=frame_len, truesize=build_skb_truesize(buflen, a), head_frag=True,
              end_offset=buflen - a.shinfo_size, headroom=headroom, head_kind="build_skb", head_page=page)
    buf = RxBuffer(page, 0, rx_pad + xdp_headroom, hdr_len + GOOD_PACKET_LEN, buflen, buflen)
    # Reported as page_to_skb computes tailroom: buffer end minus tail, skb_shared_info included.
    return RxResult("build_skb", skb, buflen - headroom - frame_len, a.shinfo_size, frame_len, "small", k,
                    a.name,
                    hdr_len, hdr_len, buffers=(buf,),
                    reason=f"receive_small always builds the skb around its {buflen}-byte buffer")


def _xdp_pass_build_skb(frame_len: int, buf: RxBuffer, hdr_len: int, k: Kernel, a: Arch) -> RxResult:
    # receive_mergeable_xdp (6.3+): XDP_PASS -> build_skb_from_xdp_buff: build_skb(data_hard_start, frame_sz),
    # frame_sz = the ctx's truesize (mergeable_xdp_get_buf): PAGE_SIZE, less a 6.12 virtnet_rq_dma reserve.
    frag_size = buf.truesize
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
    k, a = resolve(kernel, arch)
    check_mergeable_hdr_len(hdr_len, k)
    for i, buf in enumerate(buffers):
        if not isinstance(buf, RxBuffer):
            raise ArgumentError(f"buffers[{i}] must be an rx.RxBuffer (a posted receive buffer), got {buf!r}",
                                param="buffers")
    total = hdr_len + frame_len
    fills: list[int] = []
    for buf in buffers:
        take = min(total, buf.len)
        if take <= 0:
            break
        fills.append(take)
        total -= take
    if total > 0:
        raise ArgumentError(f"frame_len={frame_len} does not fit the {len(buffers)} buffers given "
                            f"({sum(b.len for b in buffers)} bytes with the {hdr_len}-byte header)", param="frame_len")
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
def receive_big(frame_len: int, *, hdr_len: int = MRG_RXBUF_HDR_LEN, mtu: Mtu = ETH_DATA_LEN, guest_gso: bool = True,
                kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> RxResult:
    """receive_big: page_to_skb(vi, rq, page, 0, len, PAGE_SIZE, ...) on a chain of big_packets_num_skbfrags + 1
    pages."""
    k, a = resolve(kernel, arch)
    # virtnet_set_big_packets: num_skbfrags = guest_gso ? MAX_SKB_FRAGS : DIV_ROUND_UP(mtu, PAGE_SIZE).
    skbfrags = a.max_skb_frags if guest_gso else -(-mtu // a.page_size)
    first = new_page(a.page_size, "big-mode first page")
    result = page_to_skb(frame_len, a.page_size, mode="big", hdr_len=hdr_len, kernel=k, arch=a,
                         big_pages=skbfrags + 1, page=first)
    result.buffers = (RxBuffer(first, 0, 0,
                               receive_big_max_frame(skbfrags + 1, hdr_len, k, a) + hdr_len, a.page_size,
                               a.page_size),)
    return result


def _guest_gso_mss(payload_len: int, *, l4: str, ip: int, vlan: bool, mtu: int, gso_size: int | None, k: Kernel,
                   mode: str = "mergeable", guest_gso: bool = True) -> int:
    """The virtio-net header's gso_size for a packet above the MTU (0 when the packet fits the MTU)."""
    l3 = frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan) - ETH_HLEN - (VLAN_HLEN if vlan else 0)
    gso_ok = mode != "small" and guest_gso and (l4 == "tcp" or k.rule("guest_uso"))
    if l3 > mtu and not gso_ok:
        raise ArgumentError(f"payload_len={payload_len} makes a {l3}-byte IP packet, above mtu={mtu}; only a GSO "
                            f"packet can be that long (guest_gso=True in big or mergeable mode, TCP, or UDP with guest "
                            f"USO from 6.2; kernel {k.version} {'has' if k.rule('guest_uso') else 'has no'} guest USO)",
                            param="payload_len")
    if l3 > IP_MAX_MTU:
        raise ArgumentError(f"payload_len={payload_len} makes a {l3}-byte IP packet, above IP_MAX_MTU {IP_MAX_MTU}",
                            param="payload_len")
    if l3 <= mtu:
        if gso_size is not None:
            raise ArgumentError(f"gso_size={gso_size} given for a {l3}-byte IP packet that fits mtu={mtu}: the host "
                                "sets a virtio-net gso_size only on packets it did not segment", param="gso_size")
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
    k, a = resolve(kernel, arch)  # payload_len, l4, ip, mode and mtu: checked once, by their annotations
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
            raise ArgumentError(f"mtu={mtu} with mode='small': virtnet_set_big_packets turns big packets on for "
                                "MTU > 1500, so the driver would be in big mode", param="mtu")
        if buf_len is not None:
            raise ValueError("buf_len cannot be pinned in small mode: add_recvbuf_small sizes the buffers "
                             "(receive_small(buflen=...) takes one of small_buf_lens)")
        return receive_small(frame, hdr_len=hdr_len, xdp=xdp, kernel=k, arch=a)
    if mode == "big":
        if buf_len is not None:
            raise ValueError("buf_len cannot be pinned in big mode: receive_big always passes PAGE_SIZE "
                             f"({a.page_size})")
        if xdp:
            raise ArgumentError("xdp=True with mode='big': virtnet_xdp_set refuses XDP while big packets without "
                                "mergeable buffers are in use", param="xdp")
        return receive_big(frame, hdr_len=hdr_len, mtu=mtu, guest_gso=guest_gso, kernel=k, arch=a)
    check_mergeable_hdr_len(hdr_len, k)
    if buf_len is not None:
        headroom = VIRTIO_XDP_HEADROOM if xdp else 0
        room = mergeable_room(headroom, a)
        check_int("buf_len", buf_len, hdr_len + ETH_HLEN + 1, *mergeable_truesize_max(headroom, k, a))
        sg_len = buf_len if k.rule("mergeable_truesize") == "len" else buf_len - room
        if sg_len < hdr_len + ETH_HLEN:
            raise ArgumentError(f"buf_len={buf_len} leaves no room for a frame after XDP room {room}", param="buf_len")
        count = -(-(frame + hdr_len) // sg_len)
        buffers = [RxBuffer(new_page(a.page_size, "pinned buffer"), 0, headroom, sg_len, buf_len, sg_len + room)
                   for _ in range(count)]
    else:
        min_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, big_packets=mtu > ETH_DATA_LEN or guest_gso)
        frag = rx_page_allocator(k, a, frag_size_for(frag_size, k, a))
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
    def __init__(self, *, ring_size: int = RX_QUEUE_SIZE, budget: int = NAPI_POLL_WEIGHT, mtu: Mtu = ETH_DATA_LEN,
                 hdr_len: int = MRG_RXBUF_HDR_LEN,
                 frag_size: int | None = None, xdp: bool = False, guest_gso: bool = True,
                 kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH) -> None:
        self.k, self.a = resolve(kernel, arch)
        check_int("ring_size", ring_size, 2, 32768, "the virtqueue size (virtqueue_get_vring_size)")
        check_int("budget", budget, 1, 65536, "the NAPI budget (packets per poll)")
        check_mergeable_hdr_len(hdr_len, self.k)
        self.ring_size, self.budget, self.mtu, self.hdr_len, self.xdp = ring_size, budget, mtu, hdr_len, xdp
        self.guest_gso = guest_gso
        self.min_buf_len = mergeable_min_buf_len(mtu=mtu, hdr_len=hdr_len, ring_size=ring_size,
                                                 big_packets=mtu > ETH_DATA_LEN or guest_gso)
        self.frag = rx_page_allocator(self.k, self.a, frag_size_for(frag_size, self.k, self.a))
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
        frame = frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan)
        mss = _guest_gso_mss(payload_len, l4=l4, ip=ip, vlan=vlan, mtu=self.mtu, gso_size=None, k=self.k,
                             guest_gso=self.guest_gso)
        need = self._buffers_needed(frame)
        if need is None:
            # The device holds the packet until the driver posts buffers: the poll ends, the ring is refilled.
            self.end_poll()
            need = self._buffers_needed(frame)
            if need is None:
                raise ArgumentError(f"payload_len={payload_len}: the packet needs more than the {self.ring_size} "
                                    "buffers of the ring (num_buffers larger than the ring)", param="payload_len")
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
# The head an skb leaves the receive path with (docs/kernel/gro.md#c3: what GRO has to merge)

@dataclass(frozen=True)
class HeadCase:
    """One per-packet skb shape of docs/kernel/gro.md#c3 and the kernels whose receive path builds it."""

    name: str
    label: str  # the letter of docs/kernel/gro.md#c3
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




def __getattr__(name: str) -> Any:
    """rx.classify and rx.Classification live in vnetlab.rx_classify, imported (with numpy) on first use."""
    if name in ("classify", "Classification"):
        from vnetlab import rx_classify

        return getattr(rx_classify, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
