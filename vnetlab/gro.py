"""GRO for one flow: dev_gro_receive() / skb_gro_receive() / skb_gro_receive_list() as the kernel does them.

``aggregate(skbs, ...)`` takes one flow's skbs as the receive path built them (Ethernet header still in the
linear part), applies eth_type_trans (pull ETH_HLEN) and GRO, and returns the skbs handed up the stack.
``simulate_stream(...)`` (vnetlab.gro_stream, loaded on first use) does the same arithmetic for a million
packets at once with numpy; what both read of a flow is vnetlab.groflow.

Offsets follow the kernel: after eth_type_trans skb->data is at the network header, so the GRO offset is
VLAN (4, if tagged) + IP header + L4 header, and ``p->len`` counts from the network header.
Per-version rules are in data/gro.toml.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from vnetlab import rx
from vnetlab.checks import In, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.groflow import (  # noqa: F401 (gro's names before the split stay importable from here)
    FINAL_FLUSH,
    MAX_GRO_SKBS,
    TCP_FLAG_BIT,
    TCP_FLAGS,
    FlowParams,
    cmp_mask,
    cwr_flush_mask,
    flag_bits,
    flow_params,
    gro_rules,
    has_feature,
)
from vnetlab.headers import (  # noqa: F401
    ETH_DATA_LEN,
    ETH_HLEN,
    GRO_LEGACY_MAX_SIZE,
    GRO_MAX_SIZE,
    IP_HLEN,
    TCP_FRAGLIST_CNT_MAX,
    TCP_HLEN_MAX,
    TCP_HLEN_MIN,
    TCP_HLEN_TS,
    UDP_GRO_CNT_MAX,
    UDP_HLEN,
    VLAN_HLEN,
)
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve
from vnetlab.skb import Frag, Page, Skb

# ---------------------------------------------------------------- GRO's input: skbs from the receive model

# receive_flow builds one Skb (about 1 KiB, 30-150 us) per packet: 256 NAPI polls of 64 stay within seconds and
# tens of MiB (tests/test_gro.py runs the maximum under a memory and CPU-time limit).
MAX_FLOW_PACKETS = 1 << 14
FlowPackets = Annotated[int, In(1, MAX_FLOW_PACKETS, "packets in the flow, one Skb object each (longer flows: "
                                                     "simulate_stream, the same rules over arrays)")]

_page_ids = itertools.count(1)


@public
def receive_flow(payload_len: rx.PayloadLen, n_packets: FlowPackets, *, l4: rx.L4 = "tcp", ip: rx.IpVersion = 4,
                 vlan: bool = False, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                 mode: rx.Mode = "mergeable", buf_len: int | None = None, mtu: rx.Mtu = ETH_DATA_LEN, xdp: bool = False,
                 hdr_len: int = rx.MRG_RXBUF_HDR_LEN) -> list[Skb]:
    """``n_packets`` packets of one flow as virtio-net's receive path hands them to napi_gro_receive().

    Mergeable mode without ``buf_len``: one receive queue (rx.RxQueue: buffers carved ahead from the rq page
    frag, the EWMA, the refills), so 1 buffer in 21 is the hole-extended one as on a real queue. With
    ``buf_len``, or in small or big mode: rx.receive() per packet. The skbs still hold the Ethernet header
    (receive_buf calls eth_type_trans just before napi_gro_receive; :func:`aggregate` does that pull).
    At most MAX_FLOW_PACKETS (16384) packets: one Skb object each; :func:`simulate_stream` takes longer flows.
    """
    if mode == "mergeable" and buf_len is None:
        q = rx.RxQueue(mtu=mtu, hdr_len=hdr_len, xdp=xdp, kernel=kernel, arch=arch)
        return [q.receive(payload_len, l4=l4, ip=ip, vlan=vlan).skb for _ in range(n_packets)]
    return [rx.receive(payload_len, l4=l4, ip=ip, vlan=vlan, mode=mode, mtu=mtu, xdp=xdp, kernel=kernel, arch=arch,
                       buf_len=buf_len, hdr_len=hdr_len).skb for _ in range(n_packets)]


@public
def head_case_flow(case: str, payload_len: int, n_packets: FlowPackets, *, l4: rx.L4 = "tcp", ip: rx.IpVersion = 4,
                   vlan: bool = False, kernel: str | Kernel | None = None,
                   arch: str | Arch = DEFAULT_ARCH) -> list[Skb]:
    """:func:`receive_flow` on a kernel whose receive path builds every packet in head case ``case``
    (rx.HEAD_CASES, docs/kernel/gro.md#c3): "build_skb" (a), "kmalloc128" (b1), "pagefrag128" (b2), "eth_hlen" (c).

    ``kernel`` defaults to the case's reference kernel (5.13, 5.11, 5.10, 5.12). Every packet sits in the
    same mergeable buffer size, as carved at MTU 1500: for (a) the smallest carved size whose tailroom takes
    skb_shared_info (the hole-extended 2048 for full-MTU frames), otherwise the EWMA-floor buffer (1536).
    A combination the kernel cannot produce is a ValueError naming the case, the payload and the kernel.
    """
    if case not in rx.HEAD_CASES:
        raise ArgumentError(f"case={case!r} is not a head case (rx.HEAD_CASES, docs/kernel/gro.md#c3); known: "
                            f"{', '.join(rx.HEAD_CASES)}", param="case")
    k, a = resolve(rx.HEAD_CASES[case].kernels[0] if kernel is None else kernel, arch)
    # the sizes add_recvbuf_mergeable carves at MTU 1500 from order-3 frags and from single pages
    carved = sorted(set(rx.mergeable_buf_lens(42, kernel=k, arch=a))
                    | set(rx.mergeable_buf_lens(2, frag_size=a.page_size, kernel=k, arch=a)))
    frame = rx.frame_len_for(payload_len, l4=l4, ip=ip, vlan=vlan)
    if case == "build_skb":
        hdr = rx.MRG_RXBUF_HDR_LEN
        fits = [t for t in carved
                if frame + hdr <= t and rx.page_to_skb(frame, t, kernel=k, arch=a).path == "build_skb"]
        buf = fits[0] if fits else carved[-1]
    else:
        buf = carved[0]
    skbs = receive_flow(payload_len, n_packets, l4=l4, ip=ip, vlan=vlan, kernel=k, arch=a, buf_len=buf)
    got = rx.head_case(skbs[0])
    if got != case:
        raise ArgumentError(f"case={case!r}: on kernel {k.version} ({a.name}) the receive path builds a {frame}-byte "
                            "frame "
                            f"(payload_len={payload_len}) in a {buf}-byte buffer as {got!r}, not {case!r}; the case "
                            f"arises on kernels {', '.join(rx.HEAD_CASES[case].kernels)} for frames it fits",
                            param="case")
    return skbs


# ---------------------------------------------------------------- the object-level model

@dataclass
class GroEvent:
    """What dev_gro_receive() did with one input skb."""

    index: int
    action: str  # "held", "merged", "normal"
    case: str = ""  # "frags" (case 1), "head_frag" (case 2), "frag_list" (case 3), "receive_list"
    skb_index: int = 0  # 0 = the first sk_buff of the GRO skb, k = k-th frag_list member
    gro_skb: int = -1  # index in GroTrace.skbs of the skb this packet went up in
    consumed_truesize: int = 0  # truesize left on the freed input skb
    packets: int = 1  # wire packets the input skb carried (Skb.segments): 1, or a GSO skb's segments
    counted: int = 1  # what NAPI_GRO_CB(p)->count grew by (skb_gro_receive_list adds 1 whatever it chains)


@dataclass
class GroTrace:
    skbs: list[Skb] = field(default_factory=list)
    events: list[GroEvent] = field(default_factory=list)

    @public
    def packets_in_first_skb(self, gro_skb: Annotated[int, In(0, None, "index of a GRO skb handed up")] = 0) -> int:
        """Packets whose payload sits in the first sk_buff (head + frags) of GRO skb ``gro_skb``."""
        if gro_skb >= len(self.skbs):
            raise ArgumentError(f"gro_skb={gro_skb}: GRO handed up {len(self.skbs)} skbs (0..{len(self.skbs) - 1})",
                                param="gro_skb")
        return sum(e.packets for e in self.events if e.gro_skb == gro_skb and e.skb_index == 0)

    def packets_per_skb(self) -> list[int]:
        """Wire packets in each skb handed up (what segmenting it would give back)."""
        counts = [0] * len(self.skbs)
        for e in self.events:
            counts[e.gro_skb] += e.packets
        return counts


@dataclass(eq=False)
class _Held:
    p: Skb
    count: int  # NAPI_GRO_CB(p)->count
    mss: int  # skb_shinfo(p)->gso_size
    ulen: int  # the held packet's UDP length (udp_hdr(p)->len)
    flags: int
    members: list[int]
    is_flist: bool
    plen: int = 0  # p->len, kept as skb_gro_receive keeps it (Skb.len would re-walk the frag_list every merge)


def _eth_type_trans(skb: Skb, index: int) -> Skb:
    if skb.headlen < ETH_HLEN:
        raise ArgumentError(f"skbs[{index}] has headlen {skb.headlen} < ETH_HLEN {ETH_HLEN}: pass skbs as the "
                            "receive path built them, with the Ethernet header in the linear part", param="skbs")
    s = dataclasses.replace(skb, frags=list(skb.frags), frag_list=list(skb.frag_list))
    # net/ethernet/eth.c eth_type_trans: skb_pull_inline(skb, ETH_HLEN).
    s.headroom += ETH_HLEN
    s.headlen -= ETH_HLEN
    return s


def _pull_from_frag0(skb: Skb, grow: int) -> None:
    # net/core/gro.c gro_pull_from_frag0 (6.1): copy grow bytes of frag 0 into the head, drop frag 0 if emptied.
    f0 = skb.frags[0]
    skb.headlen += grow
    if f0.size == grow:
        skb.frags.pop(0)
    else:
        skb.frags[0] = dataclasses.replace(f0, offset=f0.offset + grow, size=f0.size - grow)


def _headers_into_head(skb: Skb, offset: int) -> None:
    grow = offset - skb.headlen
    if grow > 0:
        if not skb.frags or skb.frags[0].size < grow:
            raise ArgumentError(f"packet shorter than its headers (offset {offset})", param="skbs")
        _pull_from_frag0(skb, grow)


_TCP_GSO = frozenset({"TCPV4", "TCPV6"})
_UDP_GSO = frozenset({"UDP_L4", "UDP"})


def _check_gso(skb: Skb, i: int, fp: FlowParams) -> None:
    """A GSO skb must be of the flow's protocol (SKB_GSO_TCPV4/TCPV6 for TCP, UDP_L4 for UDP)."""
    if not skb.gso_size:
        return
    want = ({"TCPV4"} if fp.ip == 4 else {"TCPV6"}) if fp.l4 == "tcp" else {"UDP_L4", "UDP"}
    if not skb.gso_type & want:
        raise ArgumentError(f"skbs[{i}] is a GSO skb (gso_size {skb.gso_size}) with gso_type {sorted(skb.gso_type)}: "
                            f"an IPv{fp.ip} {fp.l4.upper()} flow's GSO skbs carry SKB_GSO_{'/'.join(sorted(want))}",
                            param="skbs")


def _check_skb(skb: object, i: int, a: Arch) -> None:
    """An input skb must be one the kernel can hold: frags inside their pages, the linear part inside the head, no
    frag_list loop, and truesize >= SKB_TRUESIZE(skb_end_offset) + data_len. __alloc_skb / build_skb charge
    SKB_TRUESIZE(end), skb_add_rx_frag / skb_segment add each frag's truesize >= its size, frag_list members
    their own truesize; skb_gro_receive (6.1) takes skb->truesize - SKB_TRUESIZE(end) (case 1) or
    - SKB_DATA_ALIGN(sizeof(struct sk_buff)) (case 2) into p, which is >= 0 only for such skbs."""
    if not isinstance(skb, Skb):
        raise ArgumentError(f"skbs[{i}] must be a vnetlab.skb.Skb, got {type(skb).__name__}", param="skbs")
    seen: set[int] = set()
    todo = [(skb, f"skbs[{i}]")]
    while todo:
        s, name = todo.pop()
        if id(s) in seen:
            raise ArgumentError(f"{name} is already in skbs[{i}]'s frag_list chain: a frag_list loop no sk_buff can "
                                "have", param="skbs")
        seen.add(id(s))
        for j, f in enumerate(s.frags):
            if not (isinstance(f.size, int) and isinstance(f.offset, int)) or f.size < 0 or f.offset < 0 \
                    or f.offset + f.size > f.page.size:
                raise ArgumentError(f"{name}.frags[{j}] (offset {f.offset}, size {f.size}) must lie inside its "
                                    f"{f.page.size}-byte page (skb_frag_t: page, offset, size)", param="skbs")
        if s.headroom + s.headlen > s.end_offset:
            raise ArgumentError(f"{name}: headroom {s.headroom} + headlen {s.headlen} > skb_end_offset {s.end_offset} "
                                "(skb_over_panic in the kernel)", param="skbs")
        todo.extend((m, f"{name}.frag_list[{j}]") for j, m in enumerate(s.frag_list))
    for s in skb.walk():
        least = a.skb_truesize(s.end_offset) + s.data_len
        if s.truesize < least:
            raise ArgumentError(f"skbs[{i}]{'' if s is skb else ' (a frag_list member)'} has truesize {s.truesize} < "
                                f"SKB_TRUESIZE(skb_end_offset {s.end_offset}) + data_len {s.data_len} = {least}: "
                                f"__alloc_skb/build_skb charge SKB_TRUESIZE(end) on {a.name} and every frag or "
                                "frag_list member adds at least its size (skb_add_rx_frag, skb_segment)", param="skbs")


def _gro_flush(skb: Skb, fp: FlowParams) -> bool:
    """NAPI_GRO_CB(skb)->flush as dev_gro_receive sets it before the protocol handlers run."""
    if skb.frag_list:
        # net/core/gro.c dev_gro_receive (6.1, 6.18), net/core/dev.c (5.10): skb_has_frag_list(skb) flushes.
        return True
    if not skb.gso_size:
        return False
    if fp.rules["gso_skb_gro"] == "flush":
        # net/core/dev.c dev_gro_receive (5.10-5.13): flush = skb_is_gso(skb) || skb_has_frag_list(skb).
        return True
    # net/core/gro.c dev_gro_receive (6.1, 6.18): count = gso_segs; flush unless skb_is_gso_tcp and not DODGY.
    return not (skb.gso_type & _TCP_GSO) or "DODGY" in skb.gso_type


def _skb_gro_receive(h: _Held, skb: Skb, fp: FlowParams, lp: Skb, members: list[Skb],
                     flush: bool) -> tuple[str, int] | None:
    """net/core/gro.c skb_gro_receive (6.1) / net/core/skbuff.c (5.10); None = refused (-E2BIG)."""
    a = fp.arch
    offset = fp.offset
    headlen = skb.headlen
    length = skb.len - offset
    # skb_gro_receive (5.10 skbuff.c, 6.1 gro.c): p->len + len >= cap || NAPI_GRO_CB(skb)->flush -> -E2BIG.
    if h.plen + length >= fp.cap_limit or flush:
        return None
    h.plen += length  # skb_gro_receive, every case: p->len += len
    rules_5x = fp.rules["consumed_truesize"] == "5.x"
    if headlen <= offset:
        if lp.nr_frags + skb.nr_frags <= fp.max_skb_frags and skb.nr_frags > 0:
            # skb_gro_receive case 1 (6.1): move skb's frags into lp, trim the first by offset - headlen.
            eat = offset - headlen
            moved = list(skb.frags)
            moved[0] = dataclasses.replace(moved[0], offset=moved[0].offset + eat, size=moved[0].size - eat)
            new_truesize = a.skb_truesize(skb.end_offset)
            delta = skb.truesize - new_truesize
            # 5.10 skbuff.c: skb->truesize -= skb->data_len; 6.1 gro.c: skb->truesize = SKB_TRUESIZE(end).
            consumed = skb.truesize - skb.data_len if rules_5x else new_truesize
            lp.frags.extend(moved)
            _account(h.p, lp, delta)
            return "frags", consumed
    elif skb.head_frag:
        if lp.nr_frags + 1 + skb.nr_frags <= fp.max_skb_frags:
            # skb_gro_receive case 2 (6.1): the head becomes one frag (head stolen), then skb's frags.
            new_truesize = a.skb_data_align(a.sk_buff_size)
            delta = skb.truesize - new_truesize
            page = skb.head_page or Page(next(_page_ids), size=a.page_size, label="stolen head")
            head_frag = Frag(page=page, offset=skb.head_offset + skb.headroom + offset, size=headlen - offset,
                             truesize=delta)
            lp.frags.append(head_frag)
            lp.frags.extend(skb.frags)
            consumed = skb.truesize if rules_5x else new_truesize
            _account(h.p, lp, delta)
            return "head_frag", consumed
    # skb_gro_receive merge (6.1): eat offset - headlen from frag 0, pull offset, chain on p's frag_list.
    if offset > headlen:
        eat = offset - headlen
        f0 = skb.frags[0]
        skb.frags[0] = dataclasses.replace(f0, offset=f0.offset + eat, size=f0.size - eat)
        skb.headroom += headlen
        skb.headlen = 0
    else:
        skb.headroom += offset
        skb.headlen -= offset
    members.append(skb)
    h.p.truesize += skb.truesize
    return "frag_list", 0


def _account(p: Skb, lp: Skb, delta: int) -> None:
    p.truesize += delta
    if lp is not p:
        lp.truesize += delta


def _complete(h: _Held, fp: FlowParams, members: list[Skb]) -> Skb:
    p = h.p
    if h.count == 1:
        # net/core/gro.c napi_gro_complete (6.1): count == 1 -> gso_size = 0, not a GSO skb.
        p.gso_size = 0
        return p
    p.gso_segs = h.count
    if fp.l4 == "tcp":
        # net/ipv4/tcp_offload.c tcp4_gro_complete / net/ipv6/tcpv6_offload.c tcp6_gro_complete (6.1): |=.
        base = "TCPV4" if fp.ip == 4 else "TCPV6"
        p.gso_type = p.gso_type | ({base, "FRAGLIST"} if h.is_flist else {base})
    else:
        # net/ipv4/udp_offload.c udp4_gro_complete, net/ipv6/udp_offload.c udp6_gro_complete (6.1):
        # FRAGLIST|UDP_L4 for is_flist, else udp_gro_complete_segment's UDP_L4 (|=).
        p.gso_type = p.gso_type | ({"UDP_L4", "FRAGLIST"} if h.is_flist else {"UDP_L4"})
    p.ip_summed = "CHECKSUM_UNNECESSARY" if h.is_flist else "CHECKSUM_PARTIAL"
    return p


@public
def aggregate_trace(skbs: Sequence[Skb], *, l4: rx.L4 = "tcp", udp_gro: bool = False, features: Any = None,
                    kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                    gro_max_size: int = GRO_LEGACY_MAX_SIZE, ip: rx.IpVersion = 4, vlan: bool = False,
                    tcp_hdr_len: int = TCP_HLEN_TS, tcp_flags: Sequence[object] | None = None,
                    local_socket: bool | None = None, udp_encap_needed: bool | None = None,
                    napi_budget: int | None = None) -> GroTrace:
    """:func:`aggregate` with a per-skb record of what GRO did (held / merged by which case / normal).

    ``napi_budget``: the NAPI poll ends after every ``napi_budget`` skbs with the ring drained, so
    napi_complete_done() flushes every held skb (net/core/dev.c napi_complete_done, 6.1); None = one poll.
    ``tcp_flags``: per-skb TCP flag sets (names of TCP_FLAGS), default ACK only.
    """
    fp = flow_params(l4=l4, ip=ip, vlan=vlan, tcp_hdr_len=tcp_hdr_len, udp_gro=udp_gro, local_socket=local_socket,
                     udp_encap_needed=udp_encap_needed, features=features, kernel=kernel, arch=arch,
                     gro_max_size=gro_max_size)
    skbs = list(skbs)
    for i, s in enumerate(skbs):
        _check_skb(s, i, fp.arch)
        _check_gso(s, i, fp)
    if tcp_flags is not None:
        if l4 != "tcp":
            raise ArgumentError("tcp_flags is only meaningful with l4='tcp'", param="tcp_flags")
        if len(tcp_flags) != len(skbs):
            raise ArgumentError(f"tcp_flags must have one entry per skb ({len(skbs)}), got {len(tcp_flags)}",
                                param="tcp_flags")
    if napi_budget is not None:
        check_int("napi_budget", napi_budget, 1, 1 << 30, "packets per NAPI poll")
    list_checks_flush = bool(fp.rules["receive_list_checks_flush"])
    compared = cmp_mask(fp)
    cwr_alone = cwr_flush_mask(fp)
    trace = GroTrace()
    held: _Held | None = None
    members: list[Skb] = []

    def flush() -> None:
        nonlocal held, members
        if held is not None:
            idx = len(trace.skbs)
            trace.skbs.append(_complete(held, fp, members))
            for e in trace.events:
                if e.gro_skb == -2:
                    e.gro_skb = idx
            held, members = None, []

    def deliver_alone(i: int, skb: Skb, pulled: int, packets: int) -> None:
        # dev_gro_receive normal: gro_pull_from_frag0 up to the GRO offset the protocol handlers reached.
        _headers_into_head(skb, min(pulled, skb.len))
        trace.events.append(GroEvent(i, "normal", gro_skb=len(trace.skbs), packets=packets, counted=0))
        trace.skbs.append(skb)

    def hold(i: int, skb: Skb, flags: int, packets: int) -> None:
        nonlocal held, members
        # dev_gro_receive (6.1): gro_pull_from_frag0, NAPI_GRO_CB(skb)->last = skb, and for a non-GSO skb
        # gso_size = skb_gro_len; a held GSO skb (6.1+, TCP) keeps its gso_size and count = gso_segs.
        _headers_into_head(skb, fp.offset)
        payload = skb.len - fp.offset
        count = 1
        if skb.gso_size:
            count = skb.gso_segs
        else:
            skb.gso_size = payload
        held = _Held(skb, count, skb.gso_size, payload + UDP_HLEN, flags, [i], fp.is_flist, skb.len)
        members = []
        skb.frag_list = members
        trace.events.append(GroEvent(i, "held", gro_skb=-2, packets=packets, counted=count))

    def merge(skb: Skb, flush_skb: bool) -> tuple[str, int, int, int] | None:
        """Merge skb into held p: (case, sk_buff index, consumed truesize, count added) or None if refused."""
        assert held is not None
        if held.is_flist:
            # net/core/gro.c skb_gro_receive_list: p->len + skb->len >= 65536 refuses (headers included);
            # NAPI_GRO_CB(skb)->flush refused from the gro.toml rule receive_list_checks_flush (lab/probes.py reads it:
            # Debian 6.1.192, 6.12.117 and 7.x have the test; 5.10 skbuff.c, 6.12.95 and mainline 6.18 do not).
            if held.plen + skb.len >= GRO_LEGACY_MAX_SIZE or (flush_skb and list_checks_flush):
                return None
            held.plen += skb.len - fp.offset  # skb_gro_receive_list: skb_pull(offset), then p->len += skb->len
            _headers_into_head(skb, fp.offset)
            skb.headroom += fp.offset
            skb.headlen -= fp.offset
            members.append(skb)
            held.p.truesize += skb.truesize
            return "receive_list", len(members), 0, 1  # NAPI_GRO_CB(p)->count++
        lp = members[-1] if members else held.p
        res = _skb_gro_receive(held, skb, fp, lp, members, flush_skb)
        if res is None:
            return None
        # skb_gro_receive (6.1): count += NAPI_GRO_CB(skb)->count (gso_segs for a GSO skb); 5.10: count++.
        return res[0], len(members), res[1], (skb.gso_segs if skb.gso_size else 1)

    for i, raw in enumerate(skbs):
        if napi_budget is not None and i and i % napi_budget == 0:
            flush()
        packets = raw.segments(ETH_HLEN + fp.offset)
        skb = _eth_type_trans(raw, i)
        if skb.len < fp.offset:
            raise ArgumentError(f"skbs[{i}] is shorter ({skb.len + ETH_HLEN}) than its headers "
                                f"({ETH_HLEN + fp.offset})", param="skbs")
        if not fp.gro_on:
            # net/core/gro.c dev_gro_receive: netif_elide_gro -> normal before any header is parsed.
            deliver_alone(i, skb, 0, packets)
            continue
        if not fp.aggregates:
            # udp_gro_receive: no UDP_GRO socket, no GRO_UDP_FWD, no GRO_FRAGLIST: out before the UDP pull.
            deliver_alone(i, skb, fp.l3_offset, packets)
            continue
        flush_skb = _gro_flush(skb, fp)
        payload = skb.len - fp.offset
        flags = flag_bits(tcp_flags[i] if tcp_flags is not None else None, i) if l4 == "tcp" else 0
        if fp.l4 == "tcp":
            merged = None
            if held is not None:
                # tcp_gro_receive (6.1): CWR (up to 6.18, tcp_cwr_flush), flag mismatch, payload > mss, 0-byte
                # payload refuse the merge; a GSO skb (6.1+) merges only with gso_size == mss.
                refuse = bool(flags & cwr_alone) or ((flags ^ held.flags) & compared) != 0
                if skb.gso_size:
                    refuse |= skb.gso_size != held.mss
                else:
                    refuse |= payload == 0 or payload > held.mss
                # tcp_gro_receive (mirror 6.18): fraglist flows also need equal flags and count < 64.
                if held.is_flist:
                    refuse |= flags != held.flags or held.count >= TCP_FRAGLIST_CNT_MAX
                if not refuse:
                    merged = merge(skb, flush_skb)
            # tcp_gro_receive out_check_final (6.1): a GSO skb flushes unless len == count * gso_size; a
            # plain one when payload < mss (mss = 1 when nothing merged); URG|PSH|RST|SYN|FIN flush.
            if skb.gso_size:
                final_flush = payload != skb.gso_segs * skb.gso_size
            else:
                final_flush = payload < (held.mss if (held is not None and merged is not None) else 1)
            final_flush |= bool(flags & FINAL_FLUSH)
            if merged is not None:
                assert held is not None
                trace.events.append(GroEvent(i, "merged", merged[0], merged[1], -2, merged[2], packets, merged[3]))
                held.count += merged[3]
                held.flags |= flags & (TCP_FLAG_BIT["FIN"] | TCP_FLAG_BIT["PSH"])
                if final_flush:
                    flush()
                continue
            flush()
            if final_flush or flush_skb:
                deliver_alone(i, skb, fp.offset, packets)
            else:
                hold(i, skb, flags, packets)
        else:
            merged = None
            ulen = payload + UDP_HLEN
            if payload == 0:
                # udp_gro_receive_segment (6.1): uh->len <= sizeof(*uh) is flushed before the UDP pull.
                deliver_alone(i, skb, fp.l3_offset, packets)
                continue
            if held is not None and ulen <= held.ulen:
                merged = merge(skb, flush_skb)
            if merged is not None:
                assert held is not None
                trace.events.append(GroEvent(i, "merged", merged[0], merged[1], -2, merged[2], packets, merged[3]))
                held.count += merged[3]
                # udp_gro_receive_segment (6.1): a shorter segment or count >= UDP_GRO_CNT_MAX completes p.
                if ulen != held.ulen or held.count >= UDP_GRO_CNT_MAX:
                    flush()
                continue
            # longer than gso_size, or refused: p completes; this skb is held, or goes up alone if flushed.
            flush()
            if flush_skb:
                deliver_alone(i, skb, fp.offset, packets)
            else:
                hold(i, skb, 0, packets)
    flush()
    return trace


@public
def aggregate(skbs: Sequence[Skb], *, l4: rx.L4 = "tcp", udp_gro: bool = False, features: Any = None,
              kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
              gro_max_size: int = GRO_LEGACY_MAX_SIZE, **flow: Any) -> list[Skb]:
    """One flow's skbs (arrival order, as the receive path or a veth peer hands them over, Ethernet header
    still in the linear part) through dev_gro_receive().

    Returns the skbs handed up the stack. A GRO skb has ``gso_segs`` = NAPI_GRO_CB(p)->count (a packet that
    went up alone keeps gso_segs 0 and gso_size 0, as napi_gro_complete leaves it). A GSO skb that arrives
    whole (gso_size set, or a frag_list) is held or merged only where that kernel's dev_gro_receive allows
    it (6.1+: TCP, not DODGY, no frag_list); otherwise it completes the held skb of its flow and goes up
    untouched. Extra keywords: ``ip``, ``vlan``, ``tcp_hdr_len``, ``tcp_flags``, ``local_socket``,
    ``udp_encap_needed``, ``napi_budget``.

    ``features``: the receiving device's FeatureSet or a set of NETIF_F names (None: GRO on); an empty set is
    NETIF_F_GRO off, so every packet goes up alone. ``gro_max_size`` 0 (``ip link set DEV gro_max_size 0``, 5.19+)
    makes skb_gro_receive's ``p->len + len >= gro_max_size`` true for every packet: nothing merges.
    """
    return aggregate_trace(skbs, l4=l4, udp_gro=udp_gro, features=features, kernel=kernel, arch=arch,
                           gro_max_size=gro_max_size, **flow).skbs


@public
def gro_segs(skb: Skb) -> int:
    """Packets carried by a delivered skb: gso_segs, or 1 for a packet that went up alone."""
    return skb.gso_segs if skb.gso_segs else 1



def __getattr__(name: str) -> Any:
    """The numpy stream engine (simulate_stream, StreamStats, MAX_STREAM_PACKETS) lives in vnetlab.gro_stream,
    imported (with numpy) on first use."""
    if name in ("simulate_stream", "StreamStats", "MAX_STREAM_PACKETS"):
        from vnetlab import gro_stream

        return getattr(gro_stream, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
