"""Property tests of every skb-returning receive API: bytes and packets are conserved and every sk_buff keeps the
kernel's invariants, over kernels, arches, receive modes, XDP, IPv4/IPv6 and TCP/UDP.

The invariants are the kernel's own: skb->len = skb_headlen + skb->data_len (include/linux/skbuff.h), the linear
part inside the head (skb_put's skb_over_panic: tail <= end), at most MAX_SKB_FRAGS frags of that kernel and arch
(skb_shinfo(skb)->frags[MAX_SKB_FRAGS], docs/kernel/arch.md#b2), frags inside their pages, and truesize >= len (every
allocator charges at least the bytes it holds: __alloc_skb / build_skb SKB_TRUESIZE(end), skb_add_rx_frag the
buffer's truesize). Conservation: page_to_skb and receive keep the frame's bytes; GRO hands up every payload byte
once, the headers once per skb (eth_type_trans pulled ETH_HLEN), every wire packet once, and frees truesize, never
invents it (skb_gro_receive: p->truesize += delta <= skb->truesize).

Reproducible and bounded: derandomize=True, no example database, max_examples so the file runs in well under a
minute on a quiet core.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vnetlab
from vnetlab import gro, rx
from vnetlab.headers import ETH_HLEN, IP_HLEN, IP_MAX_MTU
from vnetlab.profiles import known_kernels
from vnetlab.skb import Skb

KERNELS = list(known_kernels())
ARCHES = ["x86_64", "arm64", "arm64-64k", "ppc64le", "ppc64le-4k", "mips32"]
PROPS = settings(derandomize=True, database=None, deadline=None, max_examples=150,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_skb_ok(skb: Skb, kernel: str, arch: str) -> None:
    """The sk_buff invariants for ``skb`` and every frag_list member."""
    a = vnetlab.arch(arch, vnetlab.kernel(kernel))
    for s in skb.walk():
        assert s.len == s.headlen + s.data_len
        assert s.truesize >= s.len, (s.truesize, s.len, s.describe())
        assert s.nr_frags <= a.max_skb_frags, (s.nr_frags, a.max_skb_frags)
        assert 0 <= s.headroom and s.headroom + s.headlen <= s.end_offset, s.describe()
        for f in s.frags:
            assert 0 <= f.size and 0 <= f.offset and f.offset + f.size <= f.page.size, f


@st.composite
def a_packet(draw, *, tcp_gso: bool = True):
    """Valid rx.receive arguments: a payload the mode and MTU carry (guest-GSO TCP above the MTU in big and
    mergeable mode; small mode at MTU 1500 only, virtnet_set_big_packets; no XDP in big mode, virtnet_xdp_set)."""
    kernel, arch = draw(st.sampled_from(KERNELS)), draw(st.sampled_from(ARCHES))
    mode = draw(st.sampled_from(rx.MODES))
    l4, ip, vlan = draw(st.sampled_from(["udp", "tcp"])), draw(st.sampled_from([4, 6])), draw(st.booleans())
    xdp = mode != "big" and draw(st.booleans())
    mtu = 1500 if mode == "small" else draw(st.sampled_from([1500, 9000]))
    most = mtu - IP_HLEN[ip] - rx.L4_HDR_LEN[l4]
    if tcp_gso and l4 == "tcp" and mode != "small" and draw(st.booleans()):
        most = IP_MAX_MTU - IP_HLEN[ip] - rx.L4_HDR_LEN[l4]
    # full-MTU payloads half the time: they fill frags to MAX_SKB_FRAGS in GRO
    payload = draw(st.one_of(st.just(mtu - IP_HLEN[ip] - rx.L4_HDR_LEN[l4]), st.integers(0, most)))
    return dict(payload_len=payload, l4=l4, ip=ip, vlan=vlan, mode=mode, mtu=mtu, xdp=xdp, kernel=kernel, arch=arch)


@st.composite
def a_buffer(draw):
    """page_to_skb arguments as receive_mergeable / receive_big pass them: a header the kernel negotiates, a
    truesize the driver carves (<= PAGE_SIZE - room with XDP, add_recvbuf_mergeable; PAGE_SIZE in big mode) and a
    frame that fits it (receive_mergeable's length error; big_max_frame)."""
    kernel, arch = draw(st.sampled_from(KERNELS)), draw(st.sampled_from(ARCHES))
    k = vnetlab.kernel(kernel)
    a = vnetlab.arch(arch, k)
    mode = draw(st.sampled_from(["mergeable", "big"]))
    hdr_lens = [h for h in k.rule("vnet_hdr_lens") if mode == "big" or h != 10]
    hdr_len = draw(st.sampled_from(hdr_lens))
    if mode == "big":
        pages = draw(st.integers(*rx.big_pages_range(a)))
        frame = draw(st.integers(ETH_HLEN, rx.big_max_frame(pages, hdr_len, k, a)[0]))
        return dict(frame_len=frame, truesize=a.page_size, mode=mode, hdr_len=hdr_len, kernel=kernel, arch=arch,
                    big_pages=pages)
    headroom = draw(st.sampled_from([0, rx.VIRTIO_XDP_HEADROOM]))
    room = rx.mergeable_room(headroom, a)
    len_ctx = k.rule("mergeable_truesize") == "len"
    hi = (a.page_size - room if len_ctx else a.page_size) if headroom else rx.SKB_FRAG_PAGE_SIZE
    lo = hdr_len + ETH_HLEN + (0 if len_ctx else room)
    truesize = draw(st.integers(lo, hi))
    frame = draw(st.integers(ETH_HLEN, (truesize if len_ctx else truesize - room) - hdr_len))
    return dict(frame_len=frame, truesize=truesize, mode=mode, hdr_len=hdr_len, headroom=headroom, kernel=kernel,
                arch=arch)


@PROPS
@given(a_buffer())
def test_page_to_skb_keeps_the_frame(args):
    r = rx.page_to_skb(**args)
    assert r.skb.len == args["frame_len"]
    assert_skb_ok(r.skb, args["kernel"], args["arch"])


@PROPS
@given(a_packet())
def test_receive_keeps_the_frame(args):
    r = rx.receive(**args)
    frame = rx.frame_len_for(args["payload_len"], l4=args["l4"], ip=args["ip"], vlan=args["vlan"])
    assert r.skb.len == frame
    assert_skb_ok(r.skb, args["kernel"], args["arch"])


def _features(kernel: str, which: str) -> frozenset[str]:
    if which == "GRO_UDP_FWD" and not vnetlab.kernel(kernel).table("gro")["gro_udp_fwd"]:
        return frozenset({"GRO"})
    return frozenset({"GRO"} | ({which} if which else set()))


@settings(PROPS, max_examples=60)
@given(a_packet(), st.integers(1, 80), st.sampled_from(["", "GRO_FRAGLIST", "GRO_UDP_FWD", "off"]), st.booleans(),
       st.sampled_from([None, 1, 7, 64]))
def test_receive_flow_through_gro_conserves_bytes_packets_and_truesize(args, n, feature, udp_gro, budget):
    kernel, arch, l4 = args["kernel"], args["arch"], args["l4"]
    udp_gro = udp_gro and l4 == "udp"
    features = frozenset() if feature == "off" else _features(kernel, feature)
    skbs = gro.receive_flow(args["payload_len"], n, l4=l4, ip=args["ip"], vlan=args["vlan"], kernel=kernel, arch=arch,
                            mode=args["mode"], mtu=args["mtu"], xdp=args["xdp"])
    frame = rx.frame_len_for(args["payload_len"], l4=l4, ip=args["ip"], vlan=args["vlan"])
    assert len(skbs) == n and all(s.len == frame for s in skbs)
    for s in skbs:
        assert_skb_ok(s, kernel, arch)
    fp = gro.flow_params(l4=l4, ip=args["ip"], vlan=args["vlan"], udp_gro=udp_gro, features=features, kernel=kernel,
                         arch=arch)
    packets_in = sum(s.segments(ETH_HLEN + fp.offset) for s in skbs)
    truesize_in = sum(s.truesize for s in skbs)
    out = gro.aggregate(skbs, l4=l4, ip=args["ip"], vlan=args["vlan"], udp_gro=udp_gro, features=features,
                        kernel=kernel, arch=arch, napi_budget=budget)
    # eth_type_trans pulled ETH_HLEN from each input; GRO keeps one set of L3/L4 headers per skb handed up
    merged = n - len(out)
    assert sum(o.len for o in out) == n * (frame - ETH_HLEN) - merged * fp.offset
    assert sum(o.segments(fp.offset) for o in out) == packets_in
    assert sum(o.truesize for o in out) <= truesize_in
    for o in out:
        assert_skb_ok(o, kernel, arch)


@settings(PROPS, max_examples=80)
@given(st.sampled_from(KERNELS), st.sampled_from(ARCHES), st.sampled_from(["udp", "tcp"]), st.sampled_from([4, 6]),
       st.booleans(), st.lists(st.sampled_from([0, 1, 100, 536, 1000, 1200, 1400, 1448, 1460]), min_size=1,
                                max_size=300),
       st.sampled_from([None, 1, 5, 64]), st.sampled_from(["", "GRO_FRAGLIST", "GRO_UDP_FWD"]))
def test_simulate_stream_conserves_and_agrees_with_aggregate(kernel, arch, l4, ip, udp_gro, payloads, budget, feat):
    udp_gro = udp_gro and l4 == "udp"
    features = _features(kernel, feat)
    most = 1500 - IP_HLEN[ip] - rx.L4_HDR_LEN[l4]
    payloads = [min(p, most) for p in payloads]
    bufs = rx.mergeable_buf_lens(len(payloads), kernel=kernel, arch=arch)
    flow = dict(l4=l4, ip=ip, udp_gro=udp_gro, features=features, kernel=kernel, arch=arch)
    s = gro.simulate_stream(None, payloads, buf_lens=bufs, napi_budget=budget, **flow)
    fp = gro.flow_params(**flow)
    assert int(s.segs_per_skb.sum()) == len(payloads) and s.payload_bytes == sum(payloads)
    assert int(s.len_per_skb.sum()) == s.payload_bytes + s.gro_skbs * fp.offset
    assert (s.truesize_per_skb >= s.len_per_skb).all()
    assert (s.frags_per_skb <= fp.max_skb_frags * s.sk_buffs_per_skb).all()
    assert int(s.truesize_per_skb.sum()) <= s.rx_truesize
    skbs = [rx.receive(p, l4=l4, ip=ip, kernel=kernel, arch=arch, buf_len=b).skb for p, b in zip(payloads, bufs)]
    out = gro.aggregate(skbs, napi_budget=budget, **flow)
    assert [gro.gro_segs(o) for o in out] == s.segs_per_skb.tolist()
    assert [o.truesize for o in out] == s.truesize_per_skb.tolist()
    assert [o.len for o in out] == s.len_per_skb.tolist()
