"""The workbook's exercises, with answers computed from the models (never typed in).

``check("10.1", answer)`` returns a verdict that shows itself in a notebook; ``solution("10.1")`` gives the model's answer;
``ask("10.1")`` prints the question. Tests run every solution through its checker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Exercise:
    key: str
    question: str
    solve: Callable[[], Any]
    unit: str = ""
    tolerance: float = 0.0
    hint: str = ""
    explain: str = ""


def _pct_gain() -> float:
    from vnetlab import cost

    m = cost.seed_measurement()
    return round(100 * (m.patched_pps / m.baseline_pps - 1), 1)


def _tailroom_1000() -> int:
    from vnetlab import rx

    return rx.receive(1000).tailroom


def _truesize_build_skb_1536() -> int:
    from vnetlab import rx

    return rx.receive(1000).skb.truesize


def _small_xdp_buffer() -> int:
    from vnetlab import rx

    return rx.receive(100, mode="small", xdp=True).buffers[0].truesize


def _largest_payload(buf_len: int, arch: str = "x86_64") -> int:
    from vnetlab import rx

    best = None
    for payload in range(0, 4000):
        frame = rx.frame_len_for(payload)
        if frame + 12 > buf_len:
            break
        if rx.page_to_skb(frame, buf_len, arch=arch).path == "build_skb":
            best = payload
    return best if best is not None else -1


def _largest_frame_ppc() -> int:
    from vnetlab import rx

    return max(f for f in range(14, 1525) if rx.page_to_skb(f, 1536, arch="ppc64le").path == "build_skb")


def _full_mtu_build_skb_share() -> float:
    from vnetlab import rx

    lens = rx.mergeable_buf_lens(21 * 10)
    return round(sum(rx.page_to_skb(1514, t).path == "build_skb" for t in lens) / len(lens), 3)


def _first_skb_packets(shape: str, kernel: str) -> int:
    from vnetlab import gro

    skbs = gro.head_case_flow(shape, 1448, 40, kernel=kernel)
    return gro.aggregate_trace(skbs, l4="tcp", kernel=kernel).packets_in_first_skb(0)


def _gro_share_of_seed_gain() -> float:
    from vnetlab import cost

    b = cost.breakdown(cost.seed_traffic(), "5.11", "5.13")
    return round(100 * b.gro_saved_ns / b.total_saved_ns, 1)


def _gso_software_bits(kernel: str) -> list[int]:
    from vnetlab import features

    return sorted(features.bit(n, kernel) for n in features.mask("GSO_SOFTWARE", kernel))


def _bridge_udp_after_port_off() -> bool:
    from vnetlab import netdev

    net = netdev.Namespace(kernel="6.18")
    a, b = net.veth("v0", "v1")
    br = net.bridge("br0")
    net.set_master(b, br)
    b.ethtool_K({"tx-udp-segmentation": False})
    return br.ethtool_k()["tx-udp-segmentation"][0]


def _udp_seg_without_csum(kernel: str) -> bool:
    from vnetlab import netdev

    net = netdev.Namespace(kernel=kernel)
    v0, _ = net.veth("v0", "v1")
    v0.ethtool_K({"tx-checksum-ip-generic": False})
    return v0.ethtool_k()["tx-udp-segmentation"][0]


def _router(kernel: str, nic: str, gro_mode: str) -> str | None:
    from vnetlab import router

    return router.router_scenario(kernel=kernel, nic=nic, gro=gro_mode).segmented_at


def _router_segments() -> int:
    from vnetlab import router

    return router.router_scenario(kernel="5.10", nic="router", gro="fraglist").wire_packets


EXERCISES: dict[str, Exercise] = {e.key: e for e in [
    Exercise("00.1", "By how many percent did the build_skb patch raise the receive rate in its own benchmark "
             "(956,864 -> 1,158,465 pps)? One decimal.", _pct_gain, "%", 0.05),
    Exercise("10.1", "x86_64, kernel 6.1, mergeable 1536-byte buffer: what tailroom does page_to_skb compute for a "
             "1000-byte UDP payload?", _tailroom_1000, "bytes", hint="tailroom = truesize - headroom - hdr_padded_len - len"),
    Exercise("10.2", "What truesize does the sk_buff built around that 1536-byte buffer carry?",
             _truesize_build_skb_1536, "bytes", hint="SKB_TRUESIZE(truesize - SKB_DATA_ALIGN(sizeof(shinfo)))"),
    Exercise("10.3", "Small mode with an XDP program on x86_64: how many bytes does add_recvbuf_small take per buffer?",
             _small_xdp_buffer, "bytes", hint="SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN + XDP headroom) "
             "+ SKB_DATA_ALIGN(sizeof(shinfo))"),
    Exercise("20.1", "The largest IPv4 UDP payload that still gets build_skb in a 2048-byte buffer (x86_64, 6.1)?",
             lambda: _largest_payload(2048), "bytes", hint="frame <= truesize - hdr_len - 320, frame = payload + 42"),
    Exercise("20.2", "ppc64le, 1536-byte buffer: the largest frame that gets build_skb?", _largest_frame_ppc, "bytes",
             hint="SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) is 384 with 128-byte cache lines"),
    Exercise("20.3", "Full-MTU frames (1514 bytes), buffers carved from 32 KiB frags: what fraction of them get "
             "build_skb? Three decimals.", _full_mtu_build_skb_share, "", 0.0005,
             hint="only the hole-extended last buffer of each frag has room for skb_shared_info"),
    Exercise("30.1", "MAX_SKB_FRAGS 17, TCP MSS 1448, build_skb heads (6.1): how many packets sit in the first "
             "sk_buff of a GRO skb?", lambda: _first_skb_packets("build_skb", "6.1"), "packets"),
    Exercise("30.2", "The same with 128-byte page-frag heads plus one frag (5.10)?",
             lambda: _first_skb_packets("pagefrag128", "5.10"), "packets"),
    Exercise("30.3", "Which share (in %) of the seed benchmark's gain comes from GRO?", _gro_share_of_seed_gain, "%", 0.05,
             hint="does udp4_gro_receive aggregate packets for a port with no socket and no UDP_GRO?"),
    Exercise("40.1", "Which NETIF_F bit numbers make up NETIF_F_GSO_SOFTWARE in 6.1? (a sorted list)",
             lambda: _gso_software_bits("6.1"), hint="ALL_TSO | GSO_SCTP | GSO_UDP_L4 | GSO_FRAGLIST"),
    Exercise("40.2", "And in 5.10, before 2e4ef10f5850?", lambda: _gso_software_bits("5.10")),
    Exercise("40.3", "6.18: a bridge br0 with one veth port; `ethtool -K v1 tx-udp-segmentation off`. Is "
             "tx-udp-segmentation still on for br0? (True/False)", _bridge_udp_after_port_off,
             hint="after the patch GSO_UDP_L4 is in NETIF_F_ONE_FOR_ALL, which br_features_recompute re-derives "
             "from the ports"),
    Exercise("50.1", "5.10 router, UDP fraglist GRO, VLAN on the router NIC: at which device is the GRO skb "
             "segmented?", lambda: _router("5.10", "router", "fraglist")),
    Exercise("50.2", "6.1, the same but the VLAN sits on a virtio_net NIC: where now?",
             lambda: _router("6.1", "virtio_net", "fraglist"),
             hint="a fraglist skb needs NETIF_F_FRAGLIST as well as NETIF_F_GSO_FRAGLIST (skb_gso_ok)"),
    Exercise("60.1", "6.18: `ethtool -K v0 tx-checksum-ip-generic off` on a veth. Does the model keep "
             "tx-udp-segmentation on? (True/False; then ask the running kernel)", lambda: _udp_seg_without_csum("6.18"),
             hint="netdev_fix_features in 6.18 drops GSO_UDP_L4 when no checksum offload is left"),
    Exercise("50.3", "How many packets leave the 5.10 router for one GRO skb?", _router_segments, "packets"),
]}


def ask(key: str) -> None:
    """Print the question of exercise ``key``."""
    print(f"Exercise {key}: {_get(key).question}")


def _get(key: str) -> Exercise:
    if key not in EXERCISES:
        raise ValueError(f"exercise {key!r} does not exist; known: {', '.join(EXERCISES)}")
    return EXERCISES[key]


def solution(key: str) -> Any:
    """The model's answer to exercise ``key``."""
    return _get(key).solve()


def _matches(answer: Any, expected: Any, tolerance: float) -> bool:
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return answer == expected
    if isinstance(expected, (int, float)):
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return False
        return abs(answer - expected) <= tolerance
    if isinstance(expected, (list, tuple)):
        return isinstance(answer, (list, tuple)) and sorted(answer) == sorted(expected)
    return answer == expected


class Verdict:
    """The outcome of :func:`check`: true when right; shows its message in a notebook."""

    def __init__(self, ok: bool, message: str) -> None:
        self.ok = ok
        self.message = message

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


def check(key: str, answer: Any) -> Verdict:
    """Whether ``answer`` is right for exercise ``key``, with a hint when it is not."""
    ex = _get(key)
    expected = ex.solve()
    ok = _matches(answer, expected, ex.tolerance)
    unit = f" {ex.unit}" if ex.unit else ""
    if ok:
        return Verdict(True, f"✓ {key}: {answer!r}{unit} is right.")
    return Verdict(False, f"✗ {key}: {answer!r}{unit} is not it."
                   + (f" Hint: {ex.hint}." if ex.hint else " Try the model again."))
