"""The workbook's exercises, with answers computed from the models (never typed in).

``check("10.1", answer)`` returns a :class:`Verdict` that shows itself in a notebook: right, not answered yet
(``answer`` is still ``None``), or wrong with a hint that names the kernel rule or quantity to look at, never the
number. ``solution("10.1")`` gives the model's answer; ``ask("10.1")`` prints the question. The tests compare the
solutions with values taken from the kernel source, BTF, the QEMU lab's measurements and the patch mails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL
from vnetlab.room import reported


@dataclass(frozen=True)
class Exercise:
    """One exercise: the question, how the models answer it, and the hint a wrong answer gets."""

    key: str
    question: str
    solve: Callable[[], Any]
    unit: str = ""
    tolerance: float = 0.0
    hint: str = ""
    worked: str = ""  # the worked solution for the instructor: which kernel rule, which numbers, why


# --------------------------------------------------------------------------------------------------
# Answers, from the models

def _ns_per_packet_after() -> float:
    """The seed's one receive CPU, at 100 % softirq, spread over the patched rate: nanoseconds per packet."""
    from vnetlab import cost

    return round(1e9 / cost.seed_measurement().patched_pps, 1)


def _skb_attr(payload_len: int, attr: str, kernel: str = DEFAULT_KERNEL, l4: str = "udp") -> int:
    from vnetlab import rx

    return getattr(rx.receive(payload_len, kernel=kernel, l4=l4).skb, attr)


def _path(payload_len: int, kernel: str = DEFAULT_KERNEL) -> str:
    from vnetlab import rx

    return rx.receive(payload_len, kernel=kernel).path


def _tailroom(payload_len: int, buf_len: int | None = None) -> int:
    from vnetlab import rx

    return rx.receive(payload_len, buf_len=buf_len).tailroom


def _truesize_in(payload_len: int, buf_len: int) -> int:
    from vnetlab import rx

    return rx.receive(payload_len, buf_len=buf_len).skb.truesize


def _small_xdp_buffer() -> int:
    from vnetlab import rx

    return rx.receive(100, mode="small", xdp=True).buffers[0].truesize


def _buffers_per_page_frag(arch: str, frag_size: int) -> int:
    """Buffers add_recvbuf_mergeable() carves from one page frag: the one that takes the hole is the last."""
    from vnetlab import rx

    lens = rx.mergeable_buf_lens(128, arch=arch, frag_size=frag_size)
    first = lens[0]
    return next(i for i, n in enumerate(lens) if n != first) + 1


def _last_buffer(frag_size: int, arch: str = DEFAULT_ARCH) -> int:
    """The buffer add_recvbuf_mergeable() extends with the page frag's hole (MTU 1500)."""
    from vnetlab import rx

    return rx.mergeable_buf_lens(_buffers_per_page_frag(arch, frag_size), arch=arch, frag_size=frag_size)[-1]


def _largest_payload(buf_len: int, arch: str = DEFAULT_ARCH) -> int:
    from vnetlab import rx

    best = None
    for payload in range(0, 4000):
        frame = rx.frame_len_for(payload)
        if frame + 12 > buf_len:
            break
        if rx.page_to_skb(frame, buf_len, arch=arch).path == "build_skb":
            best = payload
    return best if best is not None else -1


def _largest_payload_frags(buf_len: int, kernel: str, max_skb_frags: int, arch: str = DEFAULT_ARCH) -> int:
    """_largest_payload on a kernel built with CONFIG_MAX_SKB_FRAGS=``max_skb_frags`` (6.3+, net/Kconfig):
    skb_shared_info grows by one skb_frag_t per frag, and so does page_to_skb()'s tailroom test."""
    from vnetlab import profiles, rx

    a = profiles.arch(arch, kernel, max_skb_frags=max_skb_frags)
    best = None
    for payload in range(0, 4000):
        frame = rx.frame_len_for(payload)
        if frame + 12 > buf_len:
            break
        if rx.page_to_skb(frame, buf_len, kernel=kernel, arch=a).path == "build_skb":
            best = payload
    return best if best is not None else -1


def _full_mtu_build_skb_share(arch: str = DEFAULT_ARCH, frag_size: int = 32768) -> float:
    """Share of full-MTU frames (1514 bytes) that get build_skb over the buffers one page frag is carved into."""
    from vnetlab import rx

    lens = rx.mergeable_buf_lens(_buffers_per_page_frag(arch, frag_size), arch=arch, frag_size=frag_size)
    return round(sum(rx.page_to_skb(1514, t, arch=arch).path == "build_skb" for t in lens) / len(lens), 3)


def _steady_stream_path(payload_len: int, mtu: int, packets: int = 500) -> str:
    """The path of a steady stream's packets once the EWMA has sized the buffers for them (RxQueue)."""
    from vnetlab import rx

    q = rx.RxQueue(mtu=mtu)
    result = None
    for _ in range(packets):
        result = q.receive(payload_len)
    return result.path


def _next_buffer_after_stream(payload_len: int, mtu: int, packets: int = 200) -> int:
    """get_mergeable_buf_len() once a steady stream's EWMA has settled (RxQueue)."""
    from vnetlab import rx

    q = rx.RxQueue(mtu=mtu)
    for _ in range(packets):
        q.receive(payload_len)
    return q.next_buffer_len()


def _steady_stream_window_top(payload_len: int, mtu: int, packets: int = 200) -> int:
    """The largest UDP payload that gets build_skb in the buffers a steady stream has grown (RxQueue's EWMA)."""
    from vnetlab import rx

    q = rx.RxQueue(mtu=mtu)
    for _ in range(packets):
        q.receive(payload_len)
    return _largest_payload(q.next_buffer_len())


def _first_skb_packets(shape: str, kernel: str, arch: str = DEFAULT_ARCH) -> int:
    from vnetlab import gro

    skbs = gro.head_case_flow(shape, 1448, 40, kernel=kernel, arch=arch)
    return gro.aggregate_trace(skbs, l4="tcp", kernel=kernel, arch=arch).packets_in_first_skb(0)


def _burst_nr_frags(shape: str, kernel: str, packets: int) -> int:
    """nr_frags of the GRO skb after a TCP burst of ``packets`` MSS-1448 packets whose last carries PSH."""
    from vnetlab import gro

    skbs = gro.head_case_flow(shape, 1448, packets, kernel=kernel)
    flags = [("ACK",)] * (packets - 1) + [("ACK", "PSH")]
    return gro.aggregate_trace(skbs, l4="tcp", kernel=kernel, tcp_flags=flags).skbs[0].nr_frags


def _tcp_packets_per_gro_skb(shape: str, kernel: str, mss: int) -> int:
    """Packets in one full TCP GRO skb (skb_gro_receive's gro_max_size limit) for heads of kind ``shape``."""
    from vnetlab import gro

    skbs = gro.head_case_flow(shape, mss, 2 * (65536 // mss), kernel=kernel)
    return gro.aggregate_trace(skbs, l4="tcp", kernel=kernel).packets_per_skb()[0]


def _udp_packets_per_gro_skb(payload_len: int, kernel: str, features: frozenset[str]) -> int:
    """Packets per GRO skb of a UDP flow without a socket on a device with ``features``, never flushed by NAPI."""
    from vnetlab import gro

    s = gro.simulate_stream(6400, payload_len, l4="udp", kernel=kernel, udp_gro=False, features=features,
                            napi_budget=None)
    return round(s.packets / s.gro_skbs)


def _vlan_skbs_down(kernel: str, length: int, gso_size: int) -> int:
    """skbs a VLAN on the router NIC hands to its real device for one UDP_SEGMENT send (xmit.send's hops)."""
    from vnetlab import udp
    from vnetlab.stack import build_stack

    vlan = build_stack(kernel=kernel, upper="vlan", nic="router").egress
    return udp.udp_sendmsg(vlan, length, gso_size=gso_size).tx.hop(vlan.name).skbs_out


def _bridge_udp_after_port_off() -> bool:
    """6.18: a bridge with two veth ports, tx-udp-segmentation turned off on the first: br0's state."""
    from vnetlab.stack import build_stack

    st = build_stack(kernel="6.18", upper="bridge", nic="veth", port_nic="veth",
                     settings={"veth0": {"tx-udp-segmentation": False}})
    return st.egress.ethtool_k()["tx-udp-segmentation"][0]


def _virtio_vlan(kernel: str) -> tuple[Any, Any]:
    from vnetlab.stack import build_stack

    st = build_stack(kernel=kernel, upper="vlan", nic="virtio_net")
    return st.port, st.egress


def _vlan_uso_after_tx_off(kernel: str) -> bool:
    eth, vlan = _virtio_vlan(kernel)
    eth.ethtool_K({"tx-checksum-ip-generic": False})
    return vlan.ethtool_k()["tx-udp-segmentation"][0]


def _udp_seg_without_csum(kernel: str) -> bool:
    from vnetlab.stack import build_stack

    v0 = build_stack(kernel=kernel, upper="none", nic="veth",
                     settings={"veth0": {"tx-checksum-ip-generic": False}}).egress
    return v0.ethtool_k()["tx-udp-segmentation"][0]


def _router(kernel: str, nic: str, gro_mode: str, upper: str = "vlan") -> str | None:
    from vnetlab import router

    return router.router_scenario(kernel=kernel, nic=nic, gro=gro_mode, upper=upper).segmented_at


def _router_skbs_down(kernel: str, upper: str, gso_size: int) -> int:
    """skbs the upper device hands to eth0 (the router NIC) for one full fraglist GRO skb (router_scenario)."""
    from vnetlab import router

    r = router.router_scenario(kernel=kernel, nic="router", gro="fraglist", upper=upper, gso_size=gso_size)
    return next(h.skbs_out for h in r.hops if h.name != "eth0")


def _router_ops(kernel: str, upper: str, gso_size: int, op: str) -> int:
    """One operation count of the router for one full fraglist GRO skb (RouterResult.ops, the cost model's)."""
    from vnetlab import router

    r = router.router_scenario(kernel=kernel, nic="router", gro="fraglist", upper=upper, gso_size=gso_size)
    return r.ops[op]


def _lost_segments_mbps(gso_size: int) -> float:
    from vnetlab import router

    return round(router.lost_segments(gso_size=gso_size).goodput_bps / 1e6, 1)


def _driver_skbs(kernel: str, upper: str, length: int, gso_size: int, eth0: dict[str, bool]) -> int:
    """skbs eth0's driver gets for one UDP_SEGMENT send through ``upper`` on the router NIC after ``eth0``'s
    ethtool -K settings."""
    from vnetlab import udp
    from vnetlab.stack import build_stack

    st = build_stack(kernel=kernel, upper=upper, nic="router", settings={"eth0": eth0})
    return udp.udp_sendmsg(st.egress, length, gso_size=gso_size).tx.hop(st.port.name).skbs_out


def _vlan_fraglist_skbs_down(kernel: str, segs: int) -> int:
    """skbs a VLAN on virtio_net hands to eth0 for one fraglist GSO skb of ``segs`` 1472-byte datagrams."""
    from vnetlab import router

    r = router.router_scenario(kernel=kernel, nic="virtio_net", gro="fraglist", upper="vlan", segs=segs)
    return next(h.skbs_out for h in r.hops if h.name == "eth0.10")


def _bridge_skbs_down(lab_kernel: str, length: int, gso_size: int) -> int:
    """skbs br0 (one port: the lab's virtio_net eth0) hands to eth0 for one UDP_SEGMENT send (labdata.gso_model's
    stack for that lab kernel)."""
    from vnetlab import labdata, udp

    net, _ = labdata.gso_model(labdata.load("gso", lab_kernel), "br0", lab_kernel)
    return udp.udp_sendmsg(net["br0"], length, gso_size=gso_size).tx.hop("br0").skbs_out


def _nat_share(kernel: str, *, gso_size: int | None = None, segs: int | None = None, ip: int = 4) -> float:
    """Share of a NATed fraglist GRO skb's datagrams that leave with the translated header (router_scenario; by
    default ``segs`` is what one GRO skb of ``gso_size``-byte datagrams holds)."""
    from vnetlab import router

    r = router.router_scenario(kernel=kernel, nic="router", gro="fraglist", gso_size=gso_size, segs=segs, ip=ip)
    return r.nat_translated / r.wire_packets


def _nat_one_in(kernel: str, gso_size: int, ip: int = 4) -> int:
    """Full fraglist GRO skbs of ``gso_size``-byte datagrams, NATed and resegmented: one datagram in how many
    keeps the translated header."""
    return round(1 / _nat_share(kernel, gso_size=gso_size, ip=ip))


def _largest_udp_segment_send(kernel: str, gso_size: int) -> int:
    """The longest payload one UDP_SEGMENT send() accepts on a veth at MTU 1500 (udp.udp_sendmsg)."""
    from vnetlab import udp
    from vnetlab.stack import build_stack

    v0 = build_stack(kernel=kernel, upper="none", nic="veth").egress
    lo, hi = gso_size, 65507  # 65535 - IPv4 and UDP headers: the longest UDP payload of all
    if udp.udp_sendmsg(v0, hi, gso_size=gso_size).error is None:
        return hi
    while hi - lo > 1:  # the limits are thresholds: accepted below, refused above
        mid = (lo + hi) // 2
        if udp.udp_sendmsg(v0, mid, gso_size=gso_size).error is None:
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------------------------------
# The exercises

_PAGE_TO_SKB = ("page_to_skb() (drivers/net/virtio_net.c) builds the skb around the buffer only when the frame is "
                "longer than GOOD_COPY_LEN and tailroom = truesize - headroom - hdr_padded_len - len still holds "
                "SKB_DATA_ALIGN(sizeof(struct skb_shared_info))")

EXERCISES: dict[str, Exercise] = {e.key: e for e in [
    Exercise("00.1", "Seed 1 did all its receive work on one CPU at 100 % softirq. After the patch (1,158,465 "
             "packets per second), how many nanoseconds of that CPU did one packet take on average? One decimal.",
             _ns_per_packet_after, "ns", 0.05,
             hint="one CPU busy for a whole second is 10^9 ns, shared by every packet received in that second",
             worked="One CPU busy for one second is 10^9 ns of work; after the patch it received 1,158,465 "
             "packets in that second (the patch mail's sar count), so 10^9 / 1,158,465 = 863.2 ns per "
             "packet (before: 10^9 / 956,864 = 1045.1 ns; the patch saved about 182 ns per packet)."),
    Exercise("00.2", "Kernel 5.13, x86_64, a 1536-byte mergeable buffer: a full-size frame arrives (1472-byte UDP "
             "payload, a 1500-byte IP packet, a 1514-byte frame behind the 12-byte vnet header). Which path does "
             "page_to_skb() take: 'copy', 'copy+frag' or 'build_skb'?",
             lambda: _path(1472, kernel="5.13"), "",
             hint=_PAGE_TO_SKB + ": work out the tailroom the frame leaves in its buffer",
             worked="page_to_skb() (v5.13) takes build_skb() only if tailroom >= SKB_DATA_ALIGN(sizeof(struct "
             "skb_shared_info)) = 320 on x86_64. Tailroom = 1536 - 0 (no XDP headroom) - 12 (vnet header) "
             "- 1514 (frame) = 10 bytes, so it copies the frame's Ethernet header into a small head and "
             "attaches the buffer as frag 0: 'copy+frag'."),
    Exercise("00.3", "Seed 2's router on mainline 5.10 (no NAT fix), but the flow carries 1000-byte UDP datagrams and "
             "every fraglist GRO skb is as full as GRO lets it be. What share of the datagrams arrives with the NATed "
             "header? Three decimals.", lambda: round(_nat_share("5.10", gso_size=1000), 3), "", 0.0005,
             hint="only the head of each GRO skb carries the NATed header, so the share is 1/N; N, the datagrams one "
             "fraglist GRO skb holds, has two limits: skb_gro_receive_list() keeps p->len below 64 KiB and "
             "udp_gro_receive_segment() stops at UDP_GRO_CNT_MAX segments",
             worked="Without c3df39ac9b0e only the head of each fraglist GRO skb leaves NATed, so the share is "
             "1/N. skb_gro_receive_list() refuses a datagram once p->len + its 1028 bytes (IPv4 20 + UDP 8"
             " + 1000) would reach 65536: 63 x 1028 = 64,764 fits, a 64th would not; UDP_GRO_CNT_MAX (64) "
             "is not reached. N = 63, 1/63 = 0.016."),
    Exercise("05.1", "A 1000-byte TCP payload (with the timestamp option Linux sends by default) over IPv4 arrives "
             "on Ethernet: what is skb->len when page_to_skb() returns the sk_buff (before receive_buf's "
             "eth_type_trans() pulls the Ethernet header)?",
             lambda: _skb_attr(1000, "len", l4="tcp"), "bytes",
             hint="skb->len counts every byte from the Ethernet header on: ETH_HLEN, the IPv4 header without "
             "options, the TCP header with its options, then the payload (napi_gro_receive() then sees ETH_HLEN "
             "less: eth_type_trans() pulls it)",
             worked="skb->len counts from the Ethernet header: ETH_HLEN 14 + IPv4 header 20 + TCP header 20 + the"
             " timestamp option 12 (TCPOLEN_TSTAMP_ALIGNED) + 1000 bytes of payload = 1066 bytes."),
    Exercise("05.2", "The same TCP frame on mainline 5.10, before 0f6925b3e8da: how many of its bytes stay in the "
             "page frag (skb->data_len)?", lambda: _skb_attr(1000, "data_len", kernel="5.10", l4="tcp"), "bytes",
             hint="mainline 5.10's page_to_skb() copies as much of the frame as its napi_alloc_skb(GOOD_COPY_LEN) head "
             "holds, GOOD_COPY_LEN bytes, and leaves the rest of skb->len in frag 0",
             worked="Mainline 5.10's page_to_skb() copies min(len, skb_tailroom(head)) into a "
             "napi_alloc_skb(GOOD_COPY_LEN) head: 128 bytes. The rest of the 1066-byte frame stays in frag"
             " 0: 1066 - 128 = 938 bytes of data_len."),
    Exercise("10.1", "x86_64, kernel 6.1, MTU 1500: a 1200-byte UDP payload lands in the last buffer of a 32 KiB page "
             "frag, the one that took the hole. What tailroom does page_to_skb() compute?",
             lambda: _tailroom(1200, buf_len=_last_buffer(32768)), "bytes",
             hint="tailroom = truesize - headroom - hdr_padded_len - len, where len is the whole Ethernet frame and "
             "truesize is that last buffer's (section 2)",
             worked="add_recvbuf_mergeable() (6.1) carves a 32 KiB frag into 20 buffers of 1536 and gives the "
             "512-byte hole to the 21st: 2048 bytes. Frame = 1200 + 42 (Ethernet 14, IPv4 20, UDP 8) = "
             "1242; tailroom = 2048 - 0 - 12 - 1242 = 794 bytes, well above 320: build_skb."),
    Exercise("10.2", "What truesize does the sk_buff that build_skb() makes around that last buffer carry?",
             lambda: _truesize_in(1200, _last_buffer(32768)), "bytes",
             hint="build_skb() charges SKB_TRUESIZE() of the buffer minus its skb_shared_info: the data area plus "
             "SKB_DATA_ALIGN(sizeof(struct sk_buff)) and SKB_DATA_ALIGN(sizeof(struct skb_shared_info))",
             worked="build_skb() charges the buffer as the skb's head: the 2048-byte buffer (its data area plus "
             "the 320 bytes of skb_shared_info at its end) plus SKB_DATA_ALIGN(sizeof(struct sk_buff)) = "
             "256 on x86_64: 2048 + 256 = 2304 bytes (SKB_TRUESIZE(2048 - 320))."),
    Exercise("10.3", "Small mode with an XDP program on x86_64: how many bytes does add_recvbuf_small take per "
             "buffer?", _small_xdp_buffer, "bytes",
             hint="add_recvbuf_small() reserves the XDP headroom (VIRTIO_XDP_HEADROOM) in front of "
             "VIRTNET_RX_PAD + GOOD_PACKET_LEN, aligns, and adds room for skb_shared_info",
             worked="add_recvbuf_small() (6.1): SKB_DATA_ALIGN(12 + VIRTNET_RX_PAD 64 (NET_IP_ALIGN 0 + "
             "NET_SKB_PAD 64) + GOOD_PACKET_LEN 1518 + VIRTIO_XDP_HEADROOM 256) = SKB_DATA_ALIGN(1850) = "
             "1856, plus SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) 320 = 2176 bytes."),
    Exercise("10.4", "arm64 with 64 KiB pages, kernel 6.1, MTU 1500: how many mergeable receive buffers does "
             "add_recvbuf_mergeable() carve from one page frag?", lambda: _buffers_per_page_frag("arm64-64k", 65536),
             "buffers",
             hint="SKB_FRAG_PAGE_ORDER is get_order(32768): with 64 KiB pages, what page frag does "
             "skb_page_frag_refill() get, and which buffer takes the hole at its end?",
             worked="SKB_FRAG_PAGE_ORDER is get_order(32768) = 0 with 64 KiB pages, so skb_page_frag_refill() "
             "gives one 65536-byte page. Buffers are ALIGN(12 + 1518, 64) = 1536: after 41 of them 2560 "
             "bytes are left, the 42nd takes 1536 and, since the 1024 left cannot hold another, the hole "
             "too (2560). 42 buffers."),
    Exercise("10.5", "x86_64, kernel 6.1, MTU 9000: after a long steady stream of 2000-byte UDP payloads, what "
             "truesize does get_mergeable_buf_len() give each new mergeable buffer (before any hole is added)?",
             lambda: _next_buffer_after_stream(2000, 9000), "bytes",
             hint="receive_mergeable() feeds each packet's length (head_skb->len, the Ethernet frame) to the EWMA; "
             "get_mergeable_buf_len() adds the vnet header and rounds up to L1_CACHE_BYTES",
             worked="receive_mergeable() feeds head_skb->len, the 2042-byte frame (2000 + 42), to the EWMA; a "
             "steady stream keeps it at 2042. get_mergeable_buf_len() = ALIGN(12 + 2042, L1_CACHE_BYTES "
             "64) = ALIGN(2054, 64) = 2112 bytes."),
    Exercise("20.1", "The largest IPv4 UDP payload that still gets build_skb in a 2048-byte buffer (x86_64, 6.1)?",
             lambda: _largest_payload(2048), "bytes",
             hint=_PAGE_TO_SKB + "; the frame is the payload plus the Ethernet, IPv4 and UDP headers",
             worked="build_skb needs 12 (vnet header) + frame + 320 (SKB_DATA_ALIGN(sizeof(struct "
             "skb_shared_info))) <= 2048, so frame <= 1716 and payload <= 1716 - 42 = 1674 bytes."),
    Exercise("20.2", "ppc64le, kernel 6.1, a 2048-byte mergeable buffer: the largest IPv4 UDP payload that still gets "
             "build_skb?", lambda: _largest_payload(2048, arch="ppc64le"), "bytes",
             hint="SKB_DATA_ALIGN() rounds sizeof(struct skb_shared_info) up to SMP_CACHE_BYTES, and ppc64 has "
             "128-byte cache lines; the frame is the payload plus the Ethernet, IPv4 and UDP headers",
             worked="ppc64 has 128-byte cache lines, so SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) is 384: "
             "frame <= 2048 - 12 - 384 = 1652, payload <= 1652 - 42 = 1610 bytes."),
    Exercise("20.3", "arm64 with 64 KiB pages, kernel 6.1, MTU 1500: the page frag is one 64 KiB page. What fraction "
             "of full-MTU frames (1514 bytes) get build_skb? Three decimals.",
             lambda: _full_mtu_build_skb_share("arm64-64k", 65536), "", 0.0005,
             hint="only a buffer that add_recvbuf_mergeable() extended with the page frag's hole has room for "
             "skb_shared_info behind a full-size frame; count the buffers one frag gives (exercise 10.4)",
             worked="One 64 KiB page frag gives 42 buffers (exercise 10.4): 41 of 1536 and one of 2560. A "
             "1514-byte frame leaves 1536 - 12 - 1514 = 10 bytes in the small ones and 2560 - 12 - 1514 = "
             "1034 >= 320 in the last: 1 in 42 = 0.024."),
    Exercise("20.4", "MTU 9000, mergeable buffers, kernel 6.1: a long steady stream of 3000-byte UDP payloads has "
             "grown the buffers to fit. Which path do these packets take?", lambda: _steady_stream_path(3000, 9000),
             hint="get_mergeable_buf_len() sizes each buffer from the EWMA of packet length (rounded up to "
             "L1_CACHE_BYTES): how much tailroom is left behind a packet of exactly the average size?",
             worked="The EWMA settles on the 3042-byte frame; get_mergeable_buf_len() = ALIGN(12 + 3042, 64) = "
             "3072. Tailroom = 3072 - 12 - 3042 = 18 bytes < 320, so the frame is copied (its Ethernet "
             "header) and the buffer becomes a frag: 'copy+frag'."),
    Exercise("20.5", "MTU 9000, mergeable buffers, x86_64, kernel 6.1: a long stream of full-size 9000-byte IP "
             "packets (8972-byte UDP payloads) has grown the buffers as far as get_mergeable_buf_len() lets them. "
             "What is the largest UDP payload that a later, single-buffer packet can have and still get build_skb?",
             lambda: _steady_stream_window_top(8972, 9000), "bytes",
             hint="get_mergeable_buf_len() clamps the average to PAGE_SIZE - hdr_len before it aligns to "
             "L1_CACHE_BYTES; in that buffer, " + _PAGE_TO_SKB,
             worked="get_mergeable_buf_len() clamps the EWMA (9014) to PAGE_SIZE - hdr_len = 4096 - 12 = 4084 and"
             " aligns: ALIGN(12 + 4084, 64) = 4096. In a 4096-byte buffer build_skb needs frame <= 4096 - "
             "12 - 320 = 3764, payload <= 3764 - 42 = 3722 bytes."),
    Exercise("30.1", "Kernel 5.10 (128-byte page-frag heads plus one frag), TCP MSS 1448: a burst of 6 packets of one "
             "flow, the last with PSH, so GRO flushes the skb after it. How many frag slots (nr_frags) does the GRO "
             "skb use?", lambda: _burst_nr_frags("pagefrag128", "5.10", 6), "frags",
             hint="skb_gro_receive() case 2: a merged packet whose head is a page fragment gives its stolen head one "
             "slot and its page frag another; the first packet's head is the GRO skb's own linear part, its frag "
             "already sits in a slot",
             worked="skb_gro_receive() (5.10): the first packet's 128-byte page-frag head is the GRO skb's linear"
             " part and its frag takes 1 slot; each of the 5 merged packets gives its stolen head 1 slot "
             "and its frag another (case 2): 1 + 5 x 2 = 11 frags."),
    Exercise("30.2", "Kernel 6.1, build_skb heads, bulk TCP with MSS 1000 (20-byte IPv4 header, 32-byte TCP header "
             "with timestamps): how many packets make one GRO skb?",
             lambda: _tcp_packets_per_gro_skb("build_skb", "6.1", 1000), "packets",
             hint="skb_gro_receive() refuses a packet once p->len + its payload would reach gro_max_size (65536); "
             "p->len counts the first packet from its IP header (headers and payload), each merged packet adds "
             "only its payload; the frag slots do not limit it, a full sk_buff continues on frag_list",
             worked="p->len counts the first packet from its IP header: 20 + 32 + 1000 = 1052; each merged packet"
             " adds its 1000 bytes of payload. 1052 + 64 x 1000 = 65,052 < 65536, a 65th merged packet "
             "would reach 66,052: 1 + 64 = 65 packets (the 17 frag slots do not limit it: a full sk_buff "
             "continues on frag_list)."),
    Exercise("30.3", "A flow of 1200-byte UDP datagrams to a port with no socket, kernel 6.1, but the "
             "receiving device has rx-udp-gro-forwarding on (NETIF_F_GRO_UDP_FWD) and the packets come faster than "
             "NAPI drains the ring (no flush at the end of a poll): how many packets make one GRO skb?",
             lambda: _udp_packets_per_gro_skb(1200, "6.1", frozenset({"GRO", "GRO_UDP_FWD"})), "packets",
             hint="with GRO_UDP_FWD udp4_gro_receive() aggregates without a socket; skb_gro_receive() then refuses "
             "a packet once p->len (the first packet from its IP header, then each merged payload) plus the new "
             "payload would reach 65536, and udp_gro_receive_segment() stops at UDP_GRO_CNT_MAX (64) packets",
             worked="With NETIF_F_GRO_UDP_FWD udp4_gro_receive() aggregates without a socket. p->len starts at 20"
             " + 8 + 1200 = 1228 and grows by 1200 per merged datagram: 1228 + 53 x 1200 = 64,828 < 65536,"
             " a 54th merge would pass it; UDP_GRO_CNT_MAX (64) is not reached: 1 + 53 = 54 packets."),
    Exercise("30.4", "arm64 with 64 KiB pages (PAGE_SIZE 65536), kernel 6.1, bulk TCP at MTU 1500 (MSS 1448: the "
             "copy path leaves only the Ethernet header in each head): how many packets sit in the first sk_buff "
             "of a GRO skb?",
             lambda: _first_skb_packets("eth_hlen", "6.1", "arm64-64k"), "packets",
             hint="skb_gro_receive() moves a header-only packet's frags over, one slot each, and the first packet's "
             "own frag already takes a slot; before 6.3, MAX_SKB_FRAGS depends on PAGE_SIZE "
             "(include/linux/skbuff.h): work it out for 64 KiB pages",
             worked="Before 6.3 MAX_SKB_FRAGS is max(65536 / PAGE_SIZE + 1, 16) = 16 with 64 KiB pages. The first"
             " packet's frag takes one slot and each header-only packet moves its one frag over: 16 "
             "packets in the first sk_buff."),
    Exercise("40.1", "Kernel 5.10 (before 2e4ef10f5850): an application sends 24,000 bytes with UDP_SEGMENT 1200 "
             "through a VLAN eth0.10 on the router NIC (which has USO). How many skbs does eth0.10 hand down to "
             "eth0?", lambda: _vlan_skbs_down("5.10", 24000, 1200), "skbs",
             hint="validate_xmit_skb() at the VLAN asks whether the VLAN's features hold the GSO type of the "
             "skb; vlan_dev_fix_features() keeps NETIF_F_GSO_SOFTWARE, so look at what 5.10's "
             "NETIF_F_GSO_SOFTWARE contains, and at how many segments __udp_gso_segment() cuts",
             worked="5.10's NETIF_F_GSO_SOFTWARE has no GSO_UDP_L4, and vlan_dev_fix_features() keeps only "
             "GSO_SOFTWARE's types for the VLAN, so validate_xmit_skb() at eth0.10 segments the UDP GSO "
             "skb: __udp_gso_segment() cuts 24,000 / 1200 = 20 skbs, each sent on to eth0."),
    Exercise("40.2", "Kernel 6.1: a macvlan mv0 on the router NIC, then `ethtool -K eth0 tx-udp-segmentation off`. "
             "An application sends 26,400 bytes with UDP_SEGMENT 1200 through mv0: how many skbs does eth0's driver "
             "get?", lambda: _driver_skbs("6.1", "macvlan", 26400, 1200, {"tx-udp-segmentation": False}), "skbs",
             hint="macvlan_fix_features() adds ALWAYS_ON_OFFLOADS, which include NETIF_F_GSO_SOFTWARE, whatever "
             "the lower device has: which device in the stack lacks GSO_UDP_L4 after the ethtool command, and how "
             "many segments does __udp_gso_segment() cut there?",
             worked="mv0 keeps NETIF_F_GSO_SOFTWARE (ALWAYS_ON_OFFLOADS in macvlan_fix_features()) and passes the"
             " skb whole; eth0 no longer has GSO_UDP_L4, so its validate_xmit_skb() segments in software: "
             "26,400 / 1200 = 22 skbs reach the driver."),
    Exercise("40.3", "6.18: a bridge br0 with two veth ports, v1 and v3; `ethtool -K v1 tx-udp-segmentation off`. Is "
             "tx-udp-segmentation still on for br0? (True/False)", _bridge_udp_after_port_off,
             hint="after the patch GSO_UDP_L4 is in NETIF_F_ONE_FOR_ALL; br_features_recompute() clears it and "
             "netdev_increment_features() adds it back for each port: how many ports must have it?",
             worked="After 2e4ef10f5850 GSO_UDP_L4 is in NETIF_F_ONE_FOR_ALL: br_features_recompute() clears it "
             "and netdev_increment_features() adds it back if any port has it. v3 still has it, so br0 "
             "keeps tx-udp-segmentation on: True."),
    Exercise("40.4", "Kernel 6.1, a VLAN eth0.10 on a virtio_net NIC, after the patch: a fraglist GSO skb that "
             "rx-gro-list built from a short burst of 1472-byte datagrams, 39,744 bytes of UDP payload, is sent to "
             "eth0.10. How many skbs does eth0.10 hand down to eth0?",
             lambda: _vlan_fraglist_skbs_down("6.1", 39744 // 1472), "skbs",
             hint="skb_gso_ok() asks for the NETIF_F_GSO_* bit of every SKB_GSO type and, for an skb with a "
             "frag_list, NETIF_F_FRAGLIST; vlan_dev_fix_features() takes that one from the real device's "
             "vlan_features. Where it is missing, skb_segment_list() unchains every frag_list member",
             worked="skb_gso_ok() needs NETIF_F_FRAGLIST for an skb with a frag_list, and the VLAN takes its "
             "features from virtio_net's vlan_features, which never hold FRAGLIST; so eth0.10 calls "
             "skb_segment_list(), one skb per datagram: 39,744 / 1472 = 27 skbs."),
    Exercise("40.5", "The lab's one-patch pair (Debian 5.10.223 with and without 2e4ef10f5850, a QEMU virtio_net "
             "NIC eth0 without USO): an application sends 11,700 bytes with UDP_SEGMENT 900 through a bridge br0 "
             "whose only port is eth0. With the patch, how many skbs does br0 hand to eth0?",
             lambda: _bridge_skbs_down("5.10-2e4ef10f5850", 11700, 900), "skbs",
             hint="the patch put GSO_UDP_L4 into NETIF_F_GSO_SOFTWARE and with it into NETIF_F_ONE_FOR_ALL; "
             "br_features_recompute() clears every ONE_FOR_ALL bit and re-adds it only if some port has it: "
             "does br0 still take the GSO skb whole?",
             worked="With the patch GSO_UDP_L4 is ONE_FOR_ALL; br0's only port, the virtio_net eth0 without USO, "
             "lacks it, so br_features_recompute() leaves it off br0 and br0 segments the skb itself: "
             "11,700 / 900 = 13 skbs (the lab's 5.10-2e4ef10f5850 run recorded br0 as the segmenting "
             "device)."),
    Exercise("50.1", "Kernel 5.10, the router with a bond bond0 (eth0, the router NIC, its only slave) instead of the "
             "VLAN, and the sender's datagrams carry 1200 bytes: how many skbs does bond0 hand to eth0 for one full "
             "fraglist GRO skb?", lambda: _router_skbs_down("5.10", "bond", 1200), "skbs",
             hint="does 5.10's bond advertise GSO_FRAGLIST (NETIF_F_GSO_SOFTWARE before 2e4ef10f5850, bond_setup's "
             "hw_features)? If not, skb_segment_list() gives one skb per datagram: count the datagrams that "
             "skb_gro_receive_list() merges while p->len stays below 65536 (IP + UDP headers once, then payloads)",
             worked="5.10's bond lacks GSO_FRAGLIST (not in NETIF_F_GSO_SOFTWARE before 2e4ef10f5850), so bond0 "
             "segments with skb_segment_list(): one skb per datagram. skb_gro_receive_list() counts IP + "
             "UDP headers once (1228) and then 1200 per datagram: 1228 + 53 x 1200 = 64,828, and one more "
             "1228-byte datagram would reach 65536: 54 skbs."),
    Exercise("50.2", "Kernel 5.10, the VLAN router of section 1, but 1400-byte datagrams: how many times is "
             "dev_queue_xmit() called for one full fraglist GRO skb (the cost model's dev_queue_xmit count)?",
             lambda: _router_ops("5.10", "vlan", 1400, "dev_queue_xmit"), "calls",
             hint="the routed skb enters the VLAN through dev_queue_xmit(); if eth0.10 segments it, each segment "
             "takes vlan_dev_hard_start_xmit() and dev_queue_xmit() on eth0. Count the datagrams that "
             "skb_gro_receive_list() merges while p->len stays below 65536",
             worked="One dev_queue_xmit() hands the GRO skb to eth0.10, which segments it; each segment then "
             "takes vlan_dev_hard_start_xmit() and one dev_queue_xmit() on eth0. With 1400-byte datagrams "
             "(1428 with IP and UDP headers) a full GRO skb holds 46: 1428 + 45 x 1400 = 64,428, and "
             "64,428 + 1428 >= 65536; 1 + 46 = 47 calls."),
    Exercise("50.3", "Mainline 5.10 (no c3df39ac9b0e), the VLAN router of section 1 filling its 1 Gbps link, but with "
             "1200-byte datagrams: what goodput (Mbps of UDP payload, one decimal) reaches the far end if only the "
             "NATed datagrams count? On the wire each datagram takes its payload plus 70 bytes: Ethernet header 14, "
             "VLAN tag 4, IPv4 header 20, UDP header 8, and 24 of preamble, FCS and inter-frame gap.",
             lambda: _lost_segments_mbps(1200), "Mbps", 0.05,
             hint="router.lost_segments(): the link-bound UDP goodput (1 Gbps, each frame with VLAN, IP and UDP "
             "headers and 24 bytes of preamble, FCS and gap) divided by N, the datagrams per full GRO skb",
             worked="Each 1200-byte datagram takes 1200 + 70 = 1270 bytes of wire time: 10^9 / (1270 x 8) = "
             "98,425 datagrams/s, 944.9 Mbps of UDP payload. A full GRO skb holds N = 54 datagrams (1228 +"
             " 53 x 1200 < 65536) and only its NATed head counts: 944.9 / 54 = 17.5 Mbps."),
    Exercise("50.4", "Mainline 5.10 (before c3df39ac9b0e, 3d6df63a5cbe in 5.10.15): the router's GRO skbs hold 20 "
             "datagrams each, NAT rewrites the GRO skb, the VLAN segments it with skb_segment_list(). Which "
             "fraction of the datagrams leave with the translated addresses? Three decimals.",
             lambda: round(_nat_share("5.10", segs=20), 3), "", 0.0005,
             hint="NAT rewrites the headers of the skb it is handed; skb_segment_list() copies only the MAC header "
             "onto the frag_list members, which keep the IP and UDP headers they arrived with",
             worked="NAT rewrites the GRO skb's own headers; skb_segment_list() copies only the MAC header onto "
             "the 19 frag_list members, which keep the addresses they arrived with: 1 of 20 = 0.05."),
    Exercise("50.5", "Debian's 5.10.223 carries the NAT fix 3d6df63a5cbe. The same router on it, but NATing IPv6 "
             "(NAT66) with 1452-byte datagrams (a full 1500-byte IPv6 packet) and every fraglist GRO skb full. One "
             "datagram in how many leaves with the translated header?",
             lambda: _nat_one_in("5.10.223", 1452, ip=6), "datagrams",
             hint="read where the fix rewrites the segments' headers in net/ipv4/udp_offload.c "
             "__udp_gso_segment_list(): for which IP version? Then count what one fraglist GRO skb holds: "
             "skb_gro_receive_list() stops below 65536 bytes (p->len + skb->len, from the IPv6 header on) and "
             "udp_gro_receive_segment() stops at UDP_GRO_CNT_MAX packets",
             worked="3d6df63a5cbe rewrites the segments' headers for IPv4 only (__udp_gso_segment_list(), its "
             "IPv4 branch), so with NAT66 only the head keeps the translated header. Each datagram is 40 +"
             " 8 + 1452 = 1500 bytes from the IPv6 header on: 1500 + 44 x 1452 = 65,388, and a 46th would "
             "pass 65536 (UDP_GRO_CNT_MAX 64 not reached): one in 45 datagrams."),
    Exercise("60.1", "6.18: `ethtool -K v0 tx-checksum-ip-generic off` on a veth. Does the model keep "
             "tx-udp-segmentation on? (True/False; then ask the running kernel)", lambda: _udp_seg_without_csum("6.18"),
             hint="read netdev_fix_features() in net/core/dev.c of that kernel: what does it do with GSO_UDP_L4 "
             "when no checksum offload is left?",
             worked="6.18's netdev_fix_features() drops GSO_UDP_L4 when neither NETIF_F_HW_CSUM nor both IP_CSUM "
             "and IPV6_CSUM are left (\"Dropping USO feature since no CSUM feature\"), so after "
             "tx-checksum-ip-generic off the veth shows tx-udp-segmentation off [requested on]: False."),
    Exercise("60.2", "Kernel 6.1: `ethtool -K eth0 tx-checksum-ip-generic off` on a virtio_net NIC with a VLAN "
             "eth0.10 on it. Is tx-udp-segmentation still on for eth0.10? (True/False)",
             lambda: _vlan_uso_after_tx_off("6.1"),
             hint="compare netdev_fix_features() in 6.1 with the 6.18 one behind exercise 60.1, then follow the "
             "VLAN's features: where does its GSO_UDP_L4 come from?",
             worked="6.1's netdev_fix_features() has no such rule for USO, and eth0.10's GSO_UDP_L4 comes from "
             "NETIF_F_GSO_SOFTWARE, which vlan_dev_fix_features() keeps whatever eth0 offers: the VLAN "
             "keeps tx-udp-segmentation on: True."),
    Exercise("60.3", "Kernel 5.10, IPv4, a veth at MTU 1500, UDP_SEGMENT 500: what is the longest payload one send() "
             "may carry? (Then try that length and one byte more on your own kernel.)",
             lambda: _largest_udp_segment_send("5.10", 500), "bytes",
             hint="udp_send_skb() (net/ipv4/udp.c) refuses a UDP_SEGMENT send whose payload needs more than "
             "UDP_MAX_SEGMENTS segments of gso_size; look that constant up in include/linux/udp.h of that kernel",
             worked="udp_send_skb() refuses a UDP_SEGMENT send that needs more than UDP_MAX_SEGMENTS segments, 64"
             " in 5.10 (include/linux/udp.h): 64 x 500 = 32000 bytes is the longest payload."),
    Exercise("65.1", "A 6.18 x86_64 kernel built with CONFIG_MAX_SKB_FRAGS=45 (its BTF: skb_shared_info.frags[45]). "
             "What is the largest IPv4 UDP payload that still gets build_skb in a 1536-byte mergeable buffer?",
             lambda: _largest_payload_frags(1536, "6.18", 45), "bytes",
             hint="first sizeof(struct skb_shared_info): the part before frags[] stays, each frag is one skb_frag_t "
             "(the BTF table of section 1 gives both sizes); then page_to_skb()'s test: vnet header + frame + "
             "SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) must fit the buffer",
             worked="skb_shared_info is 320 bytes with 17 frags of 16 bytes, so 320 - 17 x 16 = 48 bytes come "
             "before frags[]; with 45 frags it is 48 + 45 x 16 = 768, already a multiple of the 64-byte cache "
             "line, so SKB_DATA_ALIGN gives 768. page_to_skb() takes build_skb when 12 (vnet header) + frame + "
             "768 <= 1536, so frame <= 756 and payload <= 756 - 42 = 714 bytes (17 frags allow 1162)."),
]}

NOT_ANSWERED = "not answered yet"


@public
def ask(key: str) -> None:
    """Print the question of exercise ``key``."""
    print(f"Exercise {key}: {_get(key).question}")


def _get(key: str) -> Exercise:
    if key not in EXERCISES:
        raise ArgumentError(f"exercise {key!r} does not exist; known: {', '.join(EXERCISES)}", param="key")
    return EXERCISES[key]


@public
def worked(key: str) -> str:
    """The worked solution of exercise ``key`` for the instructor: the kernel rule, the numbers and why."""
    return _get(key).worked


@public
def solution(key: str) -> Any:
    """The model's answer to exercise ``key``."""
    return _get(key).solve()


def _kind(expected: Any) -> str:
    if isinstance(expected, bool):
        return "True or False"
    if isinstance(expected, (int, float)):
        return "a number"
    if isinstance(expected, (list, tuple)):
        return "a list"
    if isinstance(expected, str):
        return "a name in quotes"
    return type(expected).__name__


def _same_kind(answer: Any, expected: Any) -> bool:
    if isinstance(expected, bool):
        return isinstance(answer, bool)
    if isinstance(expected, (int, float)):
        return isinstance(answer, (int, float)) and not isinstance(answer, bool)
    if isinstance(expected, (list, tuple)):
        return isinstance(answer, (list, tuple, set, frozenset))
    return isinstance(answer, type(expected))


def _matches(answer: Any, expected: Any, tolerance: float) -> bool:
    if not _same_kind(answer, expected):
        return False
    if isinstance(expected, bool) or isinstance(expected, str):
        return answer == expected
    if isinstance(expected, (int, float)):
        return abs(answer - expected) <= tolerance
    if isinstance(expected, (list, tuple)):
        return sorted(answer) == sorted(expected)
    return answer == expected


class Verdict:
    """The outcome of :func:`check`: true when right; shows its message in a notebook."""

    @public
    def __init__(self, ok: bool, message: str, *, answered: bool = True) -> None:
        self.ok = ok
        self.answered = answered
        self.message = message

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


@public
@reported  # the room board of a workshop hub counts it (vnetlab/room.py); elsewhere nothing is sent
def check(key: str, answer: Any) -> Verdict:
    """Whether ``answer`` is right for exercise ``key``; ``None`` means not answered yet; a wrong answer gets a hint."""
    ex = _get(key)
    if type(answer).__module__ == "numpy" and getattr(answer, "ndim", None) == 0:
        answer = answer.item()  # np.int64(2816), np.True_: what a numpy expression gives is the reader's number
    if answer is None:
        return Verdict(False, f"… {key}: {NOT_ANSWERED}. Replace None in the cell above with your answer, run that "
                       "cell, then run this one again.", answered=False)
    expected = ex.solve()
    unit = f" {ex.unit}" if ex.unit and not isinstance(expected, str) else ""
    if _matches(answer, expected, ex.tolerance):
        return Verdict(True, f"✓ {key}: {answer!r}{unit} is right.")
    if not _same_kind(answer, expected):
        return Verdict(False, f"✗ {key}: the answer is {_kind(expected)}{unit and ' (' + unit.strip() + ')'}, "
                       f"not {type(answer).__name__} {answer!r}.")
    return Verdict(False, f"✗ {key}: {answer!r}{unit} is not it. Hint: {ex.hint or 'run the model again'}.")
