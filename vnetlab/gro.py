"""GRO for one flow: dev_gro_receive() / skb_gro_receive() / skb_gro_receive_list() as the kernel does them.

``aggregate(skbs, ...)`` takes one flow's skbs as the receive path built them (Ethernet header still in the
linear part), applies eth_type_trans (pull ETH_HLEN) and GRO, and returns the skbs handed up the stack.
``simulate_stream(...)`` does the same arithmetic for a million packets at once with numpy.

Offsets follow the kernel: after eth_type_trans skb->data is at the network header, so the GRO offset is
VLAN (4, if tagged) + IP header + L4 header, and ``p->len`` counts from the network header.
Per-version rules are in data/gro.toml.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from vnetlab import rx
from vnetlab.checks import In, check_int, public
from vnetlab.headers import (
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
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.skb import Frag, Page, Skb

# GRO_LEGACY_MAX_SIZE, GRO_MAX_SIZE, UDP_GRO_CNT_MAX, TCP_FRAGLIST_CNT_MAX: vnetlab.headers (shared with GSO).
# net/core/gro.c (6.1, 6.18), net/core/dev.c (5.x): MAX_GRO_SKBS 8 held skbs per bucket.
MAX_GRO_SKBS = 8

TCP_FLAGS = ("FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR")
_FLAG_BIT = {name: 1 << i for i, name in enumerate(TCP_FLAGS)}


def _cmp_mask(fp: FlowParams) -> int:
    """tcp_gro_receive: the flag bits that must equal p's (6.1: all but CWR|FIN|PSH; 6.18: all but FIN|PSH)."""
    return 0xFF & ~sum(_FLAG_BIT[name] for name in fp.rules["tcp_flags_not_compared"])
# tcp_gro_receive out_check_final (6.1): URG|PSH|RST|SYN|FIN force a flush.
_FINAL_FLUSH = _FLAG_BIT["URG"] | _FLAG_BIT["PSH"] | _FLAG_BIT["RST"] | _FLAG_BIT["SYN"] | _FLAG_BIT["FIN"]

# ---------------------------------------------------------------- parameters

def _rules(k: Kernel) -> Any:
    """The kernel's data/gro.toml section, asked of the Kernel object (Kernel.table)."""
    return k.table("gro")


def _has(features: Any, name: str) -> bool:
    return name in features


def _check_features(features: Any, rules: Any, k: Kernel) -> Any:
    if features is None:
        return frozenset({"GRO"})
    try:
        _has(features, "GRO")
    except TypeError:
        raise ValueError(f"features must support 'in' (a FeatureSet or a set of names), got {features!r}") from None
    if _has(features, "GRO_UDP_FWD") and not rules["gro_udp_fwd"]:
        raise ValueError(f"features: GRO_UDP_FWD does not exist in kernel {k.version} (added in 5.12)")
    return features


@dataclass(frozen=True)
class FlowParams:
    """The per-flow inputs GRO looks at, resolved and checked."""

    l4: str
    ip: int
    vlan: bool
    tcp_hdr_len: int
    offset: int  # skb_gro_offset() at the payload: VLAN + IP + L4 header, after eth_type_trans
    kernel: Kernel
    arch: Arch
    gro_max_size: int
    gro_on: bool
    is_flist: bool
    aggregates: bool
    cap_limit: int  # refuse when p->len + len >= cap_limit

    @property
    def max_skb_frags(self) -> int:
        return self.arch.max_skb_frags

    @property
    def l3_offset(self) -> int:
        """skb_gro_offset() once inet_gro_receive / ipv6_gro_receive pulled the (VLAN and) IP header."""
        return self.offset - (self.tcp_hdr_len if self.l4 == "tcp" else UDP_HLEN)

    @property
    def rules(self) -> Any:
        return _rules(self.kernel)


@public
def flow_params(*, l4: rx.L4 = "tcp", ip: rx.IpVersion = 4, vlan: bool = False, tcp_hdr_len: int = TCP_HLEN_TS,
                udp_gro: bool = False, local_socket: bool | None = None, udp_encap_needed: bool | None = None,
                features: Any = None, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                gro_max_size: int = GRO_LEGACY_MAX_SIZE) -> FlowParams:
    """Check the flow parameters and decide whether (and how) this flow aggregates."""
    tcp_hdr_len = check_int("tcp_hdr_len", tcp_hdr_len, TCP_HLEN_MIN, TCP_HLEN_MAX, "doff*4, a multiple of 4")
    if tcp_hdr_len % 4:
        raise ValueError(f"tcp_hdr_len must be a multiple of 4 in 20..60 (doff*4), got {tcp_hdr_len}")
    k = _kernel(kernel)
    a = _arch(arch, k)
    rules = _rules(k)
    feats = _check_features(features, rules, k)
    cap_rule = rules["size_cap"]
    if cap_rule == "constant":
        # net/core/skbuff.c skb_gro_receive (5.10): the constant 65536, no dev->gro_max_size yet.
        if gro_max_size != GRO_LEGACY_MAX_SIZE:
            raise ValueError(f"gro_max_size must be {GRO_LEGACY_MAX_SIZE} for kernel {k.version} "
                             f"(dev->gro_max_size exists from 5.19), got {gro_max_size!r}")
    else:
        check_int("gro_max_size", gro_max_size, 0, GRO_MAX_SIZE, "ip link set gro_max_size, GRO_MAX_SIZE = 8*65535")
    if udp_gro and l4 != "udp":
        raise ValueError("udp_gro=True needs l4='udp'")
    if local_socket is None:
        local_socket = True
    if udp_gro and not local_socket:
        raise ValueError("udp_gro=True means the flow ends at a local UDP_GRO socket; local_socket must be True")
    # net/ipv4/udp.c udp_setsockopt UDP_GRO (6.1): enabling UDP_GRO turns udp_encap_needed_key on.
    encap_key = bool(udp_gro) if udp_encap_needed is None else bool(udp_encap_needed)
    if udp_gro and not encap_key:
        raise ValueError("udp_encap_needed must be True when udp_gro=True (setsockopt(UDP_GRO) enables the key)")
    gro_on = _has(feats, "GRO")
    offset = (VLAN_HLEN if vlan else 0) + IP_HLEN[ip] + (tcp_hdr_len if l4 == "tcp" else UDP_HLEN)
    is_flist = False
    if l4 == "udp":
        # net/ipv4/udp_offload.c udp4_gro_receive (5.10, 6.1): the socket is looked up only if udp_encap_needed_key.
        sk = local_socket and encap_key
        # udp_gro_receive (5.10, 6.1): is_flist = sk ? !udp_gro : 1 when NETIF_F_GRO_FRAGLIST.
        if _has(feats, "GRO_FRAGLIST"):
            is_flist = (not udp_gro) if sk else True
        fwd = (not sk) and rules["gro_udp_fwd"] and _has(feats, "GRO_UDP_FWD")
        aggregates = gro_on and (fwd or (sk and udp_gro) or is_flist)
    else:
        # net/ipv4/tcp_offload.c tcp4_check_fraglist_gro (~6.10+): fraglist when no established socket.
        if rules["tcp_fraglist"] and _has(feats, "GRO_FRAGLIST"):
            is_flist = not local_socket
        aggregates = gro_on
    if cap_rule == "constant":
        cap = GRO_LEGACY_MAX_SIZE
    elif cap_rule == "dev_ipv6_tcp":
        # net/core/gro.c skb_gro_receive (6.1): above 65536 only IPv6 TCP (BIG TCP).
        cap = gro_max_size if (l4 == "tcp" and ip == 6) else min(gro_max_size, GRO_LEGACY_MAX_SIZE)
    else:
        # net/core/gro.c skb_gro_receive (6.18): above 65536 only TCP.
        cap = gro_max_size if l4 == "tcp" else min(gro_max_size, GRO_LEGACY_MAX_SIZE)
    return FlowParams(l4, ip, vlan, tcp_hdr_len, offset, k, a, gro_max_size, gro_on, is_flist, bool(aggregates), cap)


def _flag_bits(flags: object, index: int) -> int:
    if flags is None:
        return _FLAG_BIT["ACK"]
    if isinstance(flags, str):
        flags = {f for f in flags.replace("|", ",").split(",") if f}
    bits = 0
    for name in flags:  # type: ignore[union-attr]
        key = str(name).upper().strip()
        if key not in _FLAG_BIT:
            raise ValueError(f"tcp_flags[{index}] has unknown flag {name!r}; allowed: {', '.join(TCP_FLAGS)}")
        bits |= _FLAG_BIT[key]
    return bits


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
    (rx.HEAD_CASES, kernel-facts C.3): "build_skb" (a), "kmalloc128" (b1), "pagefrag128" (b2), "eth_hlen" (c).

    ``kernel`` defaults to the case's reference kernel (5.13, 5.11, 5.10, 5.12). Every packet sits in the
    same mergeable buffer size, as carved at MTU 1500: for (a) the smallest carved size whose tailroom takes
    skb_shared_info (the hole-extended 2048 for full-MTU frames), otherwise the EWMA-floor buffer (1536).
    A combination the kernel cannot produce is a ValueError naming the case, the payload and the kernel.
    """
    if case not in rx.HEAD_CASES:
        raise ValueError(f"case={case!r} is not a head case of kernel-facts C.3; known: {', '.join(rx.HEAD_CASES)}")
    k = _kernel(rx.HEAD_CASES[case].kernels[0] if kernel is None else kernel)
    a = _arch(arch, k)
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
        raise ValueError(f"case={case!r}: on kernel {k.version} ({a.name}) the receive path builds a {frame}-byte "
                         "frame "
                         f"(payload_len={payload_len}) in a {buf}-byte buffer as {got!r}, not {case!r}; the case "
                         f"arises on kernels {', '.join(rx.HEAD_CASES[case].kernels)} for frames it fits")
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
    def packets_in_first_skb(self, gro_skb: int = 0) -> int:
        """Packets whose payload sits in the first sk_buff (head + frags) of GRO skb ``gro_skb``."""
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


def _eth_type_trans(skb: Skb, index: int) -> Skb:
    if skb.headlen < ETH_HLEN:
        raise ValueError(f"skbs[{index}] has headlen {skb.headlen} < ETH_HLEN {ETH_HLEN}: pass skbs as the "
                         "receive path built them, with the Ethernet header in the linear part")
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
            raise ValueError(f"packet shorter than its headers (offset {offset})")
        _pull_from_frag0(skb, grow)


_TCP_GSO = frozenset({"TCPV4", "TCPV6"})
_UDP_GSO = frozenset({"UDP_L4", "UDP"})


def _check_gso(skb: Skb, i: int, fp: FlowParams) -> None:
    """A GSO skb must be of the flow's protocol (SKB_GSO_TCPV4/TCPV6 for TCP, UDP_L4 for UDP)."""
    if not skb.gso_size:
        return
    want = ({"TCPV4"} if fp.ip == 4 else {"TCPV6"}) if fp.l4 == "tcp" else {"UDP_L4", "UDP"}
    if not skb.gso_type & want:
        raise ValueError(f"skbs[{i}] is a GSO skb (gso_size {skb.gso_size}) with gso_type {sorted(skb.gso_type)}: "
                         f"an IPv{fp.ip} {fp.l4.upper()} flow's GSO skbs carry SKB_GSO_{'/'.join(sorted(want))}")


def _check_skb(skb: object, i: int, a: Arch) -> None:
    """An input skb must be one the kernel can hold: frags inside their pages, the linear part inside the head, no
    frag_list loop, and truesize >= SKB_TRUESIZE(skb_end_offset) + data_len. __alloc_skb / build_skb charge
    SKB_TRUESIZE(end), skb_add_rx_frag / skb_segment add each frag's truesize >= its size, frag_list members
    their own truesize; skb_gro_receive (6.1) takes skb->truesize - SKB_TRUESIZE(end) (case 1) or
    - SKB_DATA_ALIGN(sizeof(struct sk_buff)) (case 2) into p, which is >= 0 only for such skbs."""
    if not isinstance(skb, Skb):
        raise ValueError(f"skbs[{i}] must be a vnetlab.skb.Skb, got {type(skb).__name__}")
    seen: set[int] = set()
    todo = [(skb, f"skbs[{i}]")]
    while todo:
        s, name = todo.pop()
        if id(s) in seen:
            raise ValueError(f"{name} is already in skbs[{i}]'s frag_list chain: a frag_list loop no sk_buff can have")
        seen.add(id(s))
        for j, f in enumerate(s.frags):
            if not (isinstance(f.size, int) and isinstance(f.offset, int)) or f.size < 0 or f.offset < 0 \
                    or f.offset + f.size > f.page.size:
                raise ValueError(f"{name}.frags[{j}] (offset {f.offset}, size {f.size}) must lie inside its "
                                 f"{f.page.size}-byte page (skb_frag_t: page, offset, size)")
        if s.headroom + s.headlen > s.end_offset:
            raise ValueError(f"{name}: headroom {s.headroom} + headlen {s.headlen} > skb_end_offset {s.end_offset} "
                             "(skb_over_panic in the kernel)")
        todo.extend((m, f"{name}.frag_list[{j}]") for j, m in enumerate(s.frag_list))
    for s in skb.walk():
        least = a.skb_truesize(s.end_offset) + s.data_len
        if s.truesize < least:
            raise ValueError(f"skbs[{i}]{'' if s is skb else ' (a frag_list member)'} has truesize {s.truesize} < "
                             f"SKB_TRUESIZE(skb_end_offset {s.end_offset}) + data_len {s.data_len} = {least}: "
                             f"__alloc_skb/build_skb charge SKB_TRUESIZE(end) on {a.name} and every frag or "
                             "frag_list member adds at least its size (skb_add_rx_frag, skb_segment)")


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
    if h.p.len + length >= fp.cap_limit or flush:
        return None
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
            raise ValueError("tcp_flags is only meaningful with l4='tcp'")
        if len(tcp_flags) != len(skbs):
            raise ValueError(f"tcp_flags must have one entry per skb ({len(skbs)}), got {len(tcp_flags)}")
    if napi_budget is not None:
        check_int("napi_budget", napi_budget, 1, 1 << 30, "packets per NAPI poll")
    list_checks_flush = bool(fp.rules["receive_list_checks_flush"])
    cmp_mask = _cmp_mask(fp)
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
        held = _Held(skb, count, skb.gso_size, payload + UDP_HLEN, flags, [i], fp.is_flist)
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
            if held.p.len + skb.len >= GRO_LEGACY_MAX_SIZE or (flush_skb and list_checks_flush):
                return None
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
            raise ValueError(f"skbs[{i}] is shorter ({skb.len + ETH_HLEN}) than its headers "
                             f"({ETH_HLEN + fp.offset})")
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
        flags = _flag_bits(tcp_flags[i] if tcp_flags is not None else None, i) if l4 == "tcp" else 0
        if fp.l4 == "tcp":
            merged = None
            if held is not None:
                # tcp_gro_receive (6.1): CWR, flag mismatch, payload > mss, 0-byte payload refuse the merge;
                # a GSO skb (6.1+) merges only with gso_size == mss.
                refuse = bool(flags & _FLAG_BIT["CWR"]) or ((flags ^ held.flags) & cmp_mask) != 0
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
            final_flush |= bool(flags & _FINAL_FLUSH)
            if merged is not None:
                assert held is not None
                trace.events.append(GroEvent(i, "merged", merged[0], merged[1], -2, merged[2], packets, merged[3]))
                held.count += merged[3]
                held.flags |= flags & (_FLAG_BIT["FIN"] | _FLAG_BIT["PSH"])
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
    """
    return aggregate_trace(skbs, l4=l4, udp_gro=udp_gro, features=features, kernel=kernel, arch=arch,
                           gro_max_size=gro_max_size, **flow).skbs


@public
def gro_segs(skb: Skb) -> int:
    """Packets carried by a delivered skb: gso_segs, or 1 for a packet that went up alone."""
    return skb.gso_segs if skb.gso_segs else 1


# ---------------------------------------------------------------- vectorised stream simulation

@dataclass
class StreamStats:
    """One flow of packets through the receive model and GRO (see :func:`simulate_stream`)."""

    packets: int
    path_counts: dict[str, int]
    gro_skbs: int
    segs_per_skb: np.ndarray  # packets in each skb handed up, in order
    first_skb_packets: np.ndarray  # packets in the first sk_buff of each skb handed up
    sk_buffs_per_skb: np.ndarray  # sk_buffs (p + frag_list members) of each skb handed up
    frags_per_skb: np.ndarray  # frags over p and its frag_list members
    len_per_skb: np.ndarray  # p->len (from the network header)
    truesize_per_skb: np.ndarray
    payload_bytes: int
    rx_truesize: int  # truesize of the skbs page_to_skb built

    @property
    def mean_segs(self) -> float:
        return float(self.segs_per_skb.mean()) if self.gro_skbs else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "packets": self.packets, "paths": dict(self.path_counts), "gro_skbs": self.gro_skbs,
            "mean_packets_per_gro_skb": round(self.mean_segs, 3), "frags": int(self.frags_per_skb.sum()),
            "frag_list_members": int((self.sk_buffs_per_skb - 1).sum()), "payload_bytes": self.payload_bytes,
            "truesize": int(self.truesize_per_skb.sum()),
        }


def _next_change(x: np.ndarray) -> np.ndarray:
    """For each i, the first j > i with x[j] != x[i] (len(x) if none)."""
    n = x.size
    starts = np.flatnonzero(x[1:] != x[:-1]) + 1
    bounds = np.concatenate(([0], starts, [n]))
    return np.repeat(bounds[1:], np.diff(bounds))


def _next_true(mask: np.ndarray) -> np.ndarray:
    """For each i, the first j > i with mask[j] (len(mask) if none)."""
    n = mask.size
    pos = np.flatnonzero(mask)
    bounds = np.concatenate(([0], pos, [n]))
    return np.repeat(np.append(pos, n), np.diff(bounds))


# add_recvbuf_mergeable's carving repeats every 21 buffers per 32 KiB frag (kernel-facts A.5); 32 frags of it
# also cover the 64 KiB-page arches (42 buffers per frag).
_BUF_PERIOD = 32 * 21
# packets per block of NAPI polls in simulate_stream: its temporaries stay in the CPU caches
_BLOCK = 1 << 16
# simulate_stream's longest flow: a few seconds and a few hundred MiB for a payload mix on one core (its
# per-GRO-skb arrays grow with the flow; tests/test_gro.py runs the maximum under memory and CPU-time limits).
MAX_STREAM_PACKETS = 1 << 22
_STREAM_N_MEANING = f"packets in the flow (at most {MAX_STREAM_PACKETS}: the per-skb arrays are kept in memory)"
_BUF_MEANING = "the mergeable buffer truesize per packet (ctx holds it in 22 bits)"


@dataclass(frozen=True)
class _Shapes:
    """What page_to_skb built for each (buffer, payload) entry and what skb_gro_receive does with it."""

    code: np.ndarray  # PATH_CODES
    truesize: np.ndarray  # truesize page_to_skb charged
    slots: np.ndarray  # frag slots the packet takes in lp when merged; MAX_SKB_FRAGS + 1 = never fits (case 3)
    delta: np.ndarray  # truesize p (and lp) gain when the packet is merged by case 1 or 2
    own_frags: np.ndarray  # frags of the packet's own skb (when it is p or a chained sk_buff)
    unfit: np.ndarray | None = None  # entries whose frame does not fit the buffer (no packet may use them)


def _shapes(frames: np.ndarray, bufs: np.ndarray, fp: FlowParams, hdr_len: int) -> _Shapes:
    k, a = fp.kernel, fp.arch
    # receive_mergeable: len > truesize is a length error; a table entry no packet has may be such a pair, so it
    # is classified as a stand-in frame and refused only if a packet uses it (_check_fit).
    unfit = frames + hdr_len > bufs
    if unfit.any():
        frames = np.where(unfit, ETH_HLEN, frames)
    else:
        unfit = None
    cls = rx.classify(frames, bufs, hdr_len=hdr_len, kernel=k, arch=a)
    build = cls.codes == rx.PATH_CODES["build_skb"]
    own_frags = cls.frags.astype(np.int64)
    head = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=k, arch=a)
    off, most = fp.offset, fp.max_skb_frags
    # page_to_skb: build_skb(buf, truesize) -> SKB_TRUESIZE(truesize - shinfo); else head + the buffer as a frag.
    truesize = np.where(build, bufs - a.shinfo_size + a.skb_truesize(0),
                        head.truesize + np.where(own_frags > 0, bufs, 0))
    end = np.where(build, bufs - a.shinfo_size, head.end_offset)
    headlen = np.where(build, frames, cls.copied) - ETH_HLEN
    in_frags = headlen <= off
    # skb_gro_receive (6.1): slots in lp: case 1 nr_frags, case 2 (head_frag) 1 + nr_frags, case 3 never.
    slots = np.where(in_frags, own_frags, np.where(build | bool(head.head_frag), 1 + own_frags, most + 1))
    slots = np.where(in_frags & (own_frags == 0), most + 1, slots)
    # skb_gro_receive (6.1): case 1 keeps SKB_TRUESIZE(skb_end_offset), case 2 SKB_DATA_ALIGN(sizeof(sk_buff)).
    delta = np.where(in_frags, truesize - a.skb_truesize(end), truesize - a.skb_data_align(a.sk_buff_size))
    return _Shapes(cls.codes, truesize.astype(np.int64), slots.astype(np.int64), delta.astype(np.int64), own_frags,
                   unfit)


def _check_fit(sh: _Shapes, flat: np.ndarray, first: int, payload: Callable[[int], int],
               buf: Callable[[int], int], hdr_len: int) -> None:
    """Refuse the first packet of a block (``flat``: its entries; ``first``: its first packet) whose frame and
    virtio-net header do not fit its buffer: receive_mergeable's length error (single-buffer packets only)."""
    if sh.unfit is None:
        return
    bad = sh.unfit[flat]
    if bad.any():
        i = first + int(np.argmax(bad))
        raise ValueError(f"packet {i}: payload_len {payload(i)} with its headers and the {hdr_len}-byte virtio-net "
                         f"header does not fit its {buf(i)}-byte buffer (buf_lens): a length error in "
                         "receive_mergeable; simulate_stream takes single-buffer packets only")


def _few_values(x: np.ndarray, block: int, lo: int, hi: int, most: int = 16
                ) -> tuple[int, np.ndarray, np.ndarray] | None:
    """(lo, lut, values) when x (whose min and max are lo and hi) holds at most ``most`` distinct ints in a short
    range, with lut[v - lo] the index of v in the sorted distinct values; None otherwise. Avoids sorting x (and
    temporaries as large as x)."""
    if hi - lo > 1 << 16:
        return None
    present = np.zeros(hi - lo + 1, dtype=bool)
    for s in range(0, x.size, block):
        present[x[s:s + block] - lo] = True
    vals = np.flatnonzero(present)
    if vals.size > most:
        return None
    lut = np.zeros(hi - lo + 1, dtype=np.intp)
    lut[vals] = np.arange(vals.size)
    return lo, lut, vals + lo


@functools.lru_cache(maxsize=64)
def _carved_period(k: Kernel, a: Arch, hdr_len: int) -> tuple[int, ...]:
    """add_recvbuf_mergeable's buffer truesizes at the EWMA floor, one carving period (rx.mergeable_buf_lens)."""
    return tuple(rx.mergeable_buf_lens(_BUF_PERIOD, kernel=k, arch=a, hdr_len=hdr_len))


def _cumsum0(x: np.ndarray) -> np.ndarray:
    """[0, x0, x0 + x1, ...] in one pass."""
    out = np.empty(x.size + 1, dtype=np.int64)
    out[0] = 0
    np.cumsum(x, out=out[1:])
    return out


def _uniform(x: np.ndarray, used: np.ndarray) -> int | None:
    """The one value x takes over the used entries, or None."""
    vals = x[used]
    lo = int(vals.min())
    return lo if lo == int(vals.max()) else None


@public
def simulate_stream(n_packets: int | None = None, payload_len: Any = 1448, *, l4: rx.L4 = "tcp", ip: rx.IpVersion = 4,
                    vlan: bool = False, tcp_hdr_len: int = TCP_HLEN_TS, udp_gro: bool = False, features: Any = None,
                    local_socket: bool | None = None, udp_encap_needed: bool | None = None,
                    kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                    gro_max_size: int = GRO_LEGACY_MAX_SIZE, napi_budget: int | None = rx.NAPI_POLL_WEIGHT,
                    buf_lens: Any = None, hdr_len: int = rx.MRG_RXBUF_HDR_LEN, tcp_flags: Any = None,
                    seed: int | None = 0) -> StreamStats:
    """A flow of ``n_packets`` through virtio-net's mergeable page_to_skb() and GRO, with numpy.

    ``payload_len``: one size, an array of sizes (one per packet), or a dict {size: weight} drawn with
    ``seed``. ``buf_lens``: buffer truesize per packet (default: rx.mergeable_buf_lens carving, repeated).
    ``tcp_flags``: optional int array of TCP flag bits (gro._FLAG_BIT). Single-buffer packets only: a packet whose
    frame and header do not fit its buffer is refused by its index. At most MAX_STREAM_PACKETS (4,194,304) packets.

    The same rules as :func:`aggregate_trace` (the tests cross-check every statistic), as numpy passes over
    blocks of NAPI polls: Python loops only over the blocks, and over the k-th GRO skb of all polls of a block
    at once, never over packets.
    """
    fp = flow_params(l4=l4, ip=ip, vlan=vlan, tcp_hdr_len=tcp_hdr_len, udp_gro=udp_gro, local_socket=local_socket,
                     udp_encap_needed=udp_encap_needed, features=features, kernel=kernel, arch=arch,
                     gro_max_size=gro_max_size)
    k, a = fp.kernel, fp.arch
    # ---- the payload of every packet
    const_p: int | None = None
    cols: np.ndarray | None = None  # the payload sizes the table has a column for
    col: np.ndarray | None = None  # each packet's column
    if seed is not None:
        check_int("seed", seed, 0, 2**63 - 1, "the numpy.random.default_rng seed of the payload draws")
    if isinstance(payload_len, dict):
        n = check_int("n_packets", n_packets, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
        if not payload_len:
            raise ValueError("payload_len must not be an empty dict: give {payload bytes: weight}")
        for p, wt in payload_len.items():
            check_int("payload_len key", p, 0, 65535, "L4 payload bytes")
            if isinstance(wt, bool) or not isinstance(wt, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(wt) or wt < 0:
                raise ValueError(f"payload_len[{p}]={wt!r}: a weight must be a finite number >= 0")
        cols = np.fromiter(payload_len.keys(), dtype=np.int64)
        weights = np.asarray(list(payload_len.values()), dtype=float)
        if weights.sum() <= 0:
            raise ValueError("payload_len weights must be non-negative with a positive sum")
        cdf = np.cumsum(weights / weights.sum())
        cdf /= cdf[-1]  # numpy Generator.choice(p=...): the same draws as before
        draws = np.random.default_rng(seed).random(n)
        if cols.size <= 16:
            # how many cdf values are <= u, as searchsorted(side="right") counts them, in a few passes
            col = np.zeros(n, dtype=np.intp)
            for c in cdf[:-1]:
                col += draws >= c
        else:
            col = np.minimum(np.searchsorted(cdf, draws, side="right"), cols.size - 1)
        payloads = cols[col]
        pmin, pmax = int(cols.min()), int(cols.max())
    elif np.ndim(payload_len) == 0:
        n = check_int("n_packets", n_packets, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
        const_p = check_int("payload_len", payload_len, 0, 65535, "L4 payload bytes")
        payloads = None
    else:
        payloads = rx.int_array("payload_len", payload_len, "L4 payload bytes, one per packet", ndim=1).astype(np.int64,
                                                                                                       copy=False)
        n = payloads.size
        if n_packets is not None and n_packets != n:
            raise ValueError(f"n_packets ({n_packets}) must match len(payload_len) ({n})")
        if n == 0:
            raise ValueError("payload_len must not be empty")
        check_int("len(payload_len)", n, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
    if payloads is not None and cols is None:
        pmin, pmax = int(payloads.min()), int(payloads.max())
        if pmin < 0 or pmax > 65535:
            raise ValueError("payload_len must be in 0..65535")
        cols = np.arange(pmin, pmax + 1, dtype=np.int64)
    if payloads is not None and pmin == pmax:
        const_p, payloads, cols, col = pmin, None, None, None
    if napi_budget is not None:
        check_int("napi_budget", napi_budget, 1, 1 << 30, "packets per NAPI poll")
    budget = n if napi_budget is None else min(int(napi_budget), n)
    flags = None
    if tcp_flags is not None:
        if l4 != "tcp":
            raise ValueError("tcp_flags is only meaningful with l4='tcp'")
        flags = rx.int_array("tcp_flags", tcp_flags, "TCP flag bits per packet (gro.TCP_FLAGS, bit i = TCP_FLAGS[i])")
        if flags.shape != (n,):
            raise ValueError(f"tcp_flags must be an int array with one entry per packet ({n})")
        if n and (int(flags.min()) < 0 or int(flags.max()) > 0xFF):
            raise ValueError(f"tcp_flags has {int(flags.min()) if flags.min() < 0 else int(flags.max())}: the 8 flag "
                             "bits of "
                             "the TCP header (FIN..CWR) are 0..255")
        flags = flags.astype(np.int64, copy=False)
    off = fp.offset
    hdrs = ETH_HLEN + off
    # net/core/dev.c napi_complete_done (6.1): napi_gro_flush() at every poll end (gro_flush_timeout 0), so polls
    # are independent: the flow goes through in blocks of whole polls that stay in the CPU caches (one block
    # without a budget)
    block = n if napi_budget is None else budget * max(1, _BLOCK // budget)
    # ---- what page_to_skb built: a table per (buffer, payload), or per packet when buffers are given per packet
    cols_ = np.asarray([const_p], dtype=np.int64) if cols is None else cols
    width = cols_.size
    # a packet's table entry is row * width + its payload's column (col, or payloads - pmin when given per packet)
    base = pmin if (payloads is not None and col is None) else 0
    rows: Callable[[int, int], np.ndarray] | None = None  # row * width - base of packets s..e-1; None: per packet
    if buf_lens is None or np.ndim(buf_lens) == 0:
        if buf_lens is None:
            period = np.asarray(_carved_period(k, a, hdr_len), dtype=np.int64)
        else:
            period = np.asarray([check_int("buf_lens", buf_lens, 1, 1 << 22, _BUF_MEANING)], dtype=np.int64)
        bufs_in = period

        def buf_of(i: int) -> int:
            return int(bufs_in[i % bufs_in.size])

        bvals, per_idx = np.unique(period, return_inverse=True)
        sh = _shapes(np.tile(cols_ + hdrs, bvals.size), np.repeat(bvals, width), fp, hdr_len)
        tiled = np.resize(per_idx.astype(np.intp) * width - base, min(n, block + period.size))

        def carved_rows(s: int, e: int) -> np.ndarray:
            return tiled[s % period.size:][:e - s].copy()

        rows = carved_rows

    else:
        bufs = rx.int_array("buf_lens", buf_lens, _BUF_MEANING).astype(np.int64, copy=False)
        if bufs.shape != (n,):
            raise ValueError(f"buf_lens must be one int or one per packet ({n})")
        b_lo, b_hi = int(bufs.min()), int(bufs.max())
        if b_lo < 1 or b_hi > 1 << 22:
            raise ValueError(f"buf_lens has {b_lo if b_lo < 1 else b_hi}, out of range 1..{1 << 22}: {_BUF_MEANING}")

        def buf_of(i: int) -> int:
            return int(bufs[i])

        few = _few_values(bufs, block, b_lo, b_hi)
        if few is not None and few[2].size * width <= max(4096, n // 4):
            # a few buffer sizes (the carving gives 2 or 3): one table entry per (buffer, payload)
            lo, lut, bvals = few
            sh = _shapes(np.tile(cols_ + hdrs, bvals.size), np.repeat(bvals, width), fp, hdr_len)
            lut = lut * width - base

            def given_rows(s: int, e: int) -> np.ndarray:
                return lut[bufs[s:e] - lo]

            rows = given_rows

        else:
            sh = _shapes((np.full(n, const_p, np.int64) if payloads is None else payloads) + hdrs, bufs, fp, hdr_len)

    def payload_of(i: int) -> int:
        return int(const_p if payloads is None else payloads[i])

    counts = np.zeros(sh.code.size, dtype=np.int64) if rows is not None else np.ones(n, dtype=np.int64)
    pieces = []
    for s in range(0, n, block):
        e = min(n, s + block)
        if rows is not None:
            flat = rows(s, e)
            if width > 1:
                flat += payloads[s:e] if col is None else col[s:e]
            _check_fit(sh, flat, s, payload_of, buf_of, hdr_len)
            per_entry = np.bincount(flat, minlength=sh.code.size)
            counts += per_entry
            sh_b = sh
        else:
            _check_fit(sh, np.arange(s, e), s, payload_of, buf_of, hdr_len)
            flat, per_entry = np.arange(e - s), np.ones(e - s, dtype=np.int64)
            sh_b = _Shapes(*(x[s:e] for x in (sh.code, sh.truesize, sh.slots, sh.delta, sh.own_frags)))
        pieces.append(_stream_block(fp, e - s, budget, const_p, None if payloads is None else payloads[s:e],
                                    None if flags is None else flags[s:e], sh_b, per_entry, flat))
    # the six per-skb arrays in one buffer: one allocation, which the allocator can hand back call after call
    out = np.empty((6, sum(p[0].size for p in pieces)), dtype=np.int64)
    for row, parts in zip(out, zip(*pieces)):
        np.concatenate(parts, out=row)
    path_counts = {name: int(counts[sh.code == c].sum()) for name, c in rx.PATH_CODES.items()}
    return StreamStats(packets=n, path_counts=path_counts, gro_skbs=int(out[0].size), segs_per_skb=out[0],
                       first_skb_packets=out[1], sk_buffs_per_skb=out[2], frags_per_skb=out[3], len_per_skb=out[4],
                       truesize_per_skb=out[5],
                       payload_bytes=n * const_p if payloads is None else int(payloads.sum(dtype=np.int64)),
                       rx_truesize=int((counts * sh.truesize).sum()))


def _stream_block(fp: FlowParams, n: int, budget: int, const_p: int | None, payloads: np.ndarray | None,
                  flags: np.ndarray | None, sh: _Shapes, counts: np.ndarray,
                  flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """A block of whole NAPI polls through GRO: (packets, packets in the first sk_buff, sk_buffs, frags, len,
    truesize) of each skb handed up, in order. ``flat``: each packet's entry in ``sh``; ``counts``: the block's
    packets per entry."""
    off = fp.offset
    if not fp.aggregates:
        ones = np.ones(n, dtype=np.int64)
        return (ones, ones, ones, sh.own_frags[flat].astype(np.int64),
                (np.full(n, const_p, np.int64) if payloads is None else payloads) + off, sh.truesize[flat])
    if fp.l4 != "udp" or payloads is None or payloads.min() > 0:
        return _gro_skb_stats(fp, _stream_groups(fp, n, budget, const_p, payloads, flags, None), sh, counts, flat)
    # udp_gro_receive_segment (6.1): uh->len <= sizeof(*uh) is flushed without completing p, so 0-byte
    # datagrams go up alone while the held skb stays: group the others, then put them back in order.
    zeros = np.flatnonzero(payloads == 0)
    ones = np.ones(zeros.size, np.int64)
    alone = (ones, ones, ones, sh.own_frags[flat[zeros]].astype(np.int64), ones * off, sh.truesize[flat[zeros]])
    if zeros.size == n:
        return alone
    orig = np.flatnonzero(payloads)
    groups = _stream_groups(fp, n, budget, const_p, payloads, flags, orig)
    st = _gro_skb_stats(fp, groups, sh, counts, flat[orig])
    order = np.argsort(np.concatenate((groups.times, zeros.astype(float))), kind="stable")
    return tuple(np.concatenate((g, z))[order] for g, z in zip(st, alone))


@dataclass(frozen=True)
class _Groups:
    starts: np.ndarray  # first packet of each GRO skb, in the order they go up
    ends: np.ndarray  # one past its last packet
    segs: np.ndarray  # its packets
    payload: np.ndarray  # its payload bytes
    times: np.ndarray  # when it goes up, in packet indices of the uncompressed flow (only with 0-byte UDP)


def _stream_groups(fp: FlowParams, n: int, budget: int, const_p: int | None, payloads: np.ndarray | None,
                   flags: np.ndarray | None, orig: np.ndarray | None) -> _Groups:
    """The GRO skbs of the flow: the rules of aggregate_trace (tcp_gro_receive / udp_gro_receive_segment, the
    size cap, UDP_GRO_CNT_MAX, napi_complete_done at every poll end). Where a GRO skb that begins at a packet
    ends follows from the payloads and flags alone, for every packet at once; the GRO skbs are then chained
    from each poll's first packet, all polls together."""
    l4, off = fp.l4, fp.offset
    # skb_gro_receive: refused once p->len + len >= cap; skb_gro_receive_list: p->len + skb->len >= 65536.
    cap_room = (GRO_LEGACY_MAX_SIZE - 2 * off) if fp.is_flist else (fp.cap_limit - off)
    # udp_gro_receive_segment: UDP_GRO_CNT_MAX; tcp_gro_receive (6.10+): a fraglist flow completes at 64.
    cnt_max = UDP_GRO_CNT_MAX if l4 == "udp" else (TCP_FRAGLIST_CNT_MAX if fp.is_flist else n)
    if payloads is None and flags is None:
        # constant payload: every GRO skb holds what the cap and the count allow, or what is left of the poll
        # (tcp_gro_receive and udp_gro_receive_segment merge no 0-byte payload)
        per = 1 if const_p == 0 else min(max(1, -(-cap_room // const_p) - 1), cnt_max)
        polls = np.arange(0, n, budget)
        lens = np.minimum(budget, n - polls)
        reps = -(-lens // per)
        g_s = np.repeat(polls, reps) + (np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)) * per
        g_e = np.minimum(g_s + per, np.repeat(polls + lens, reps))
        segs = g_e - g_s
        return _Groups(g_s, g_e, segs, segs * const_p, np.zeros(0))
    if payloads is None:
        payloads = np.full(n, const_p, dtype=np.int64)
    if orig is not None:
        payloads = payloads[orig]
    n_kept = payloads.size
    first = np.arange(0, n, budget)
    if orig is not None:
        first = np.searchsorted(orig, first)
    poll_start = np.zeros(n_kept + 1, dtype=bool)  # each poll's first packet, and n_kept
    poll_start[first] = True
    poll_start[n_kept] = True
    # ---- end[i]: one past the last packet of a GRO skb that begins at packet i. It takes the rest of its run
    # of equal payloads (runs are cut at poll starts), and the next packet too if that one is shorter:
    # tcp_gro_receive (6.1): payload > mss (or 0) is refused; a shorter one merges, then flushes.
    # udp_gro_receive_segment (6.1): a longer datagram is refused; a shorter one merges, then completes p.
    new_run = poll_start[:n_kept].copy()
    np.logical_or(new_run[1:], payloads[1:] != payloads[:-1], out=new_run[1:])
    run_starts = np.flatnonzero(new_run)
    run_payload = payloads[run_starts]
    shorter = np.append(run_payload[1:] < run_payload[:-1], False)
    shorter[:-1] &= ~poll_start[run_starts[1:]]
    if l4 == "tcp":
        shorter[:-1] &= run_payload[1:] != 0
    run_end = np.append(run_starts[1:], n_kept) + shorter
    # the size cap can only cut into a run whose payloads from its first packet to run_end reach cap_room
    capped = (run_end - run_starts) * run_payload >= cap_room
    run = np.cumsum(new_run)
    run -= 1
    end = run_end[run]
    if l4 == "tcp":
        alone = payloads == 0
        if flags is not None:
            # tcp_gro_receive (6.1): CWR and a flag mismatch refuse; PSH|FIN merge then flush; URG|PSH|RST|SYN|FIN
            # at the head of a group (nothing to merge into) go up alone (out_check_final).
            alone |= (flags & _FINAL_FLUSH) != 0
            refs = [_next_change(flags & _cmp_mask(fp)), _next_true((flags & _FLAG_BIT["CWR"]) != 0)]
            if fp.is_flist:
                refs.append(_next_change(flags))  # tcp_gro_receive (6.18): fraglist flows need equal flags
            is_close = shorter[run]
            ref_all = np.where(is_close, n_kept, end)
            np.minimum(ref_all, np.minimum.reduce(refs), out=ref_all)
            close_all = np.where(is_close, end, n_kept + 1)
            np.minimum(close_all, _next_true((flags & (_FLAG_BIT["PSH"] | _FLAG_BIT["FIN"])) != 0) + 1, out=close_all)
            end = np.minimum(ref_all, close_all)
        single = np.flatnonzero(alone)
        end[single] = single + 1
    if cnt_max < budget:  # (a poll of at most cnt_max packets never reaches the count)
        np.minimum(end, np.arange(cnt_max, n_kept + cnt_max), out=end)
    if capped.any():
        # skb_gro_receive (6.1): refused, the first packet that takes the payload from i to cap_room or more
        big = np.flatnonzero(capped[run])
        payload_cum = _cumsum0(payloads)
        cut = np.searchsorted(payload_cum, payload_cum[big] + cap_room, side="left") - 1
        end[big] = np.minimum(end[big], np.maximum(cut, big + 1))
    # ---- chain the GRO skbs from each poll's first packet; a chain stops at the next poll's first packet
    pos = np.flatnonzero(poll_start[:n_kept])
    free = ~poll_start  # packets no GRO skb begins at yet
    while pos.size:
        pos = end[pos]
        pos = pos[free[pos]]
        free[pos] = False
    g_s = np.flatnonzero(~free[:n_kept])
    g_e = np.append(g_s[1:], n_kept)
    segs = g_e - g_s
    # every packet of a GRO skb has its first packet's payload, but the last, which may be shorter
    last = payloads[g_e - 1]
    payload = segs - 1
    payload *= payloads[g_s]
    payload += last
    times = np.zeros(0)
    if orig is not None:
        # when the GRO skb goes up: right after merging its last datagram (a shorter one, or the 64th),
        # else just before the refused one, else at the poll end
        after = (last < payloads[g_s]) | (segs == cnt_max)
        poll_end = np.minimum((orig[g_s] // budget + 1) * budget, n)
        refused = np.minimum(np.append(orig, n)[g_e], poll_end)
        times = np.where(after, orig[g_e - 1] + 0.5, refused - 0.5)
    return _Groups(g_s, g_e, segs, payload, times)


@dataclass(frozen=True)
class _SkBuffs:
    per_group: np.ndarray  # sk_buffs (p and its frag_list members) of each group
    first: np.ndarray  # packets in each group's first sk_buff
    chained: np.ndarray | None  # first packet of every sk_buff chained on a frag_list; None: every packet's own
    group: np.ndarray | None  # the group of each chained sk_buff


def _stream_sk_buffs(fp: FlowParams, g_s: np.ndarray, g_e: np.ndarray, segs: np.ndarray, ent: np.ndarray,
                     sh: _Shapes, counts: np.ndarray, flat: np.ndarray) -> _SkBuffs:
    """Where each GRO skb's sk_buffs begin: skb_gro_receive fills lp's frags (next fit) and chains a new
    sk_buff on frag_list (case 3) when a packet does not fit; fraglist GRO chains every packet.
    ``ent``: the table entry of each group's first packet."""
    n_groups = g_s.size
    most = fp.max_skb_frags
    if fp.is_flist or n_groups == flat.size:
        # skb_gro_receive_list chains every packet whole
        return _SkBuffs(segs, np.ones(n_groups, np.int64), None, None)
    used = counts > 0
    # the frag slots a merged packet takes (those a GRO skb took after its first; not those of a packet that
    # only ever goes up alone, a 0-byte TCP segment)
    slots_u = _uniform(sh.slots, used)
    if slots_u is None:
        slots_u = _uniform(sh.slots, counts > np.bincount(ent, minlength=counts.size))
    if slots_u is not None and slots_u > most:
        # case 3 for every packet: each packet is an sk_buff of its own
        return _SkBuffs(segs, np.ones(n_groups, np.int64), None, None)
    own_frags_u = _uniform(sh.own_frags, used)
    if slots_u is not None and own_frags_u is not None:
        # the same shape for every packet: every sk_buff holds 1 + (MAX_SKB_FRAGS - own_frags) // slots packets
        per = 1 + max(most - own_frags_u, 0) // slots_u
        reps = -(-segs // per)
        multi = np.flatnonzero(reps > 1)
        more = reps[multi] - 1  # the sk_buffs chained on those groups' frag_list
        group = np.repeat(multi, more)
        k = np.arange(1, group.size + 1) - np.repeat(np.cumsum(more) - more, more)  # 1, 2, .. in each group
        return _SkBuffs(reps, np.minimum(per, segs), g_s[group] + k * per, group)
    room = most - sh.own_frags  # frag slots left in an sk_buff after its first packet, per table entry
    slots_cum = _cumsum0(sh.slots[flat]) if slots_u is None else None
    take = None if slots_u is None else 1 + np.maximum(room, 0) // slots_u  # packets per sk_buff

    def sk_buff_end(pos: np.ndarray, entry: np.ndarray, end: np.ndarray) -> np.ndarray:
        """One past the last packet of the sk_buff that begins at each of pos (table entry ``entry``)."""
        if take is not None:
            nxt = pos + take[entry]
        else:
            nxt = np.searchsorted(slots_cum, slots_cum[pos + 1] + room[entry], side="right") - 1
            np.maximum(nxt, pos + 1, out=nxt)
        return np.minimum(nxt, end, out=nxt)

    first = sk_buff_end(g_s, ent, g_e)
    gid = np.flatnonzero(first < g_e)
    first -= g_s
    pos, end = g_s[gid] + first[gid], g_e[gid]
    s_pos, s_gid = [], []
    while pos.size:
        s_pos.append(pos)
        s_gid.append(gid)
        nxt = sk_buff_end(pos, flat[pos], end)
        keep = nxt < end
        pos, gid, end = nxt[keep], gid[keep], end[keep]
    chained = np.concatenate(s_pos) if s_pos else np.zeros(0, np.intp)
    group = np.concatenate(s_gid) if s_gid else np.zeros(0, np.intp)
    per_group = np.bincount(group, minlength=n_groups)
    per_group += 1
    return _SkBuffs(per_group, first, chained, group)


def _gro_skb_stats(fp: FlowParams, groups: _Groups, sh: _Shapes, counts: np.ndarray,
                   flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """(packets, packets in the first sk_buff, sk_buffs, frags, len, truesize) of each GRO skb."""
    g_s, g_e, segs = groups.starts, groups.ends, groups.segs
    n_groups = g_s.size
    ent = flat[g_s]  # the table entry of each group's first packet
    sk = _stream_sk_buffs(fp, g_s, g_e, segs, ent, sh, counts, flat)
    used = counts > 0

    def group_sum(x: np.ndarray) -> np.ndarray:
        """Per group sum of a per-table-entry quantity over the group's packets (groups tile the flow)."""
        same = _uniform(x, used)
        if same is not None:
            return segs * same
        c = _cumsum0(x[flat])
        return c[g_e] - c[g_s]

    if sk.chained is None:
        # every packet an sk_buff of its own: its frags and its whole truesize
        frags = group_sum(sh.own_frags)
        truesize = group_sum(sh.truesize)
    else:
        # an sk_buff's first packet brings its own frags and whole truesize; the others d slots and delta
        corr_f = sh.own_frags - sh.slots
        corr_t = sh.truesize - sh.delta
        frags = group_sum(sh.slots)
        frags += corr_f[ent]
        truesize = group_sum(sh.delta)
        truesize += corr_t[ent]
        if sk.chained.size:
            ent = flat[sk.chained]
            frags += np.bincount(sk.group, weights=corr_f[ent], minlength=n_groups).astype(np.int64)
            truesize += np.bincount(sk.group, weights=corr_t[ent], minlength=n_groups).astype(np.int64)
    lens = groups.payload
    lens += fp.offset
    return segs, sk.first, sk.per_group, frags, lens, truesize
