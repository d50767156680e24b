"""The virtio-net receive path, checked against drivers/net/virtio_net.c behaviour per kernel."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import vnetlab
from vnetlab import rx

KERNELS = ["5.10", "5.11", "5.12", "5.13", "6.1", "6.18"]
ARCHES = ["x86_64", "arm64", "arm64-64k", "ppc64le", "ppc64le-4k", "mips32"]


# --- buffer sizing (add_recvbuf_mergeable, get_mergeable_buf_len) ---------------------------------

def test_mergeable_buffers_are_1536_at_mtu_1500():
    # docs/kernel/rx.md#a5: ALIGN(12 + GOOD_PACKET_LEN, 64); rx.md#a1 mergeable_min_buf_len = 1518 with ring 256
    assert rx.mergeable_buf_lens(1) == [1536]
    assert rx.mergeable_min_buf_len() == 1518


def test_32k_frag_gives_twenty_1536_then_2048():
    assert rx.mergeable_buf_lens(21) == [1536] * 20 + [2048]
    assert rx.mergeable_buf_lens(42) == ([1536] * 20 + [2048]) * 2


def test_4k_page_gives_1536_then_2560():
    # docs/kernel/rx.md#a5: order-0 frag, the second buffer takes the hole (1536 + 1024)
    assert rx.mergeable_buf_lens(2, frag_size=4096) == [1536, 2560]


# drivers/net/virtio_net.c (mirror ~6.18) virtnet_rq_alloc; docs/kernel/rx.md#a1, docs/kernel/rx.md#a5 (last 2032; 4K:
# 1536, 2544)
def test_6_18_carves_a_virtnet_rq_dma_header_per_frag_page():
    # virtnet_rq_alloc (~6.18): 16 bytes at offset 0 of each new frag page, so the hole is 496.
    assert rx.mergeable_buf_lens(21, kernel="6.18") == [1536] * 20 + [2032]
    assert rx.mergeable_buf_lens(2, frag_size=4096, kernel="6.18") == [1536, 2544]


def test_ewma_grows_buffers_and_clamps_at_page():
    # drivers/net/virtio_net.c get_mergeable_buf_len (v6.1): hdr_len + clamp(ewma, min, PAGE_SIZE - hdr_len), ALIGN 64
    assert rx.mergeable_buf_lens(1, avg_pkt_len=2000) == [2048]  # ALIGN(12 + 2000, 64)
    assert rx.mergeable_buf_lens(1, avg_pkt_len=60000, frag_size=32768) == [4096]  # clamp(PAGE_SIZE - hdr_len)


def test_ewma_arithmetic_matches_declare_ewma():
    e = rx.Ewma()
    e.add(1000)
    assert e.read() == 1000  # the first sample is stored as is
    e.add(64000)
    # include/linux/average.h DECLARE_EWMA(pkt_len, 0, 64): ((old << 6) - old + sample) >> 6 (docs/kernel/rx.md#a0)
    assert e.read() == (1000 * 63 + 64000) >> 6


def test_xdp_buffers_take_a_whole_page():
    # drivers/net/virtio_net.c add_recvbuf_mergeable (6.1 truesize = len; 6.3+ len + room), docs/kernel/rx.md#a1
    # room = SKB_DATA_ALIGN(256 + 320) = 576; len = PAGE_SIZE - room = 3520; 6.3+ records len + room.
    assert rx.mergeable_buf_lens(1, xdp=True, kernel="6.1") == [3520]
    assert rx.mergeable_buf_lens(1, xdp=True, kernel="6.18") == [4096]


def test_min_buf_len_small_ring_with_big_packets():
    # drivers/net/virtio_net.c mergeable_min_buf_len: ceil((12 + 14 + 4 + 65535) / 32) - 12 = 2037
    # (docs/kernel/rx.md#a1)
    assert rx.mergeable_min_buf_len(ring_size=32, big_packets=True) == 2037


# --- the build_skb window --------------------------------------------------------------------------

def test_build_skb_window_in_a_1536_buffer():
    frames = np.arange(14, 1525)
    codes, tailroom, frags, _ = rx.classify(frames, 1536, kernel="6.1")
    built = frames[codes == rx.PATH_CODES["build_skb"]]
    # docs/kernel/rx.md#a5: build_skb when 129 <= frame <= truesize - 332 (GOOD_COPY_LEN 128, hdr_len 12, shinfo 320)
    assert built.min() == 129 and built.max() == 1204
    assert len(built) == 1204 - 129 + 1


def test_build_skb_window_in_udp_payload_terms():
    assert rx.receive(86).path == "copy"
    assert rx.receive(87).path == "build_skb"
    assert rx.receive(1162).path == "build_skb"
    assert rx.receive(1163).path == "copy+frag"


def test_1000_byte_udp_the_seed_benchmark():
    r = rx.receive(1000)
    # docs/kernel/rx.md#a5 table, row 1000: frame 1042, tailroom 482, build_skb; rx.md#a3: truesize 1216 + 256 + 320 =
    # 1792
    assert (r.frame_len, r.tailroom, r.path, r.skb.nr_frags) == (1042, 482, "build_skb", 0)
    assert r.skb.truesize == 1792 and r.skb.head_frag and r.skb.headlen == 1042


def test_1472_byte_udp_full_mtu():
    # docs/kernel/rx.md#a5 table, row 1472: frame 1514, tailroom 10, 14 B head + 1500 B frag of truesize 1536, 522 /
    # 1034
    r = rx.receive(1472)
    assert (r.frame_len, r.tailroom, r.path) == (1514, 10, "copy+frag")
    assert r.skb.headlen == 14 and r.skb.nr_frags == 1 and r.skb.frags[0].size == 1500
    assert r.skb.frags[0].truesize == 1536
    assert rx.receive(1472, buf_len=2048).path == "build_skb"
    assert rx.receive(1472, buf_len=2048).tailroom == 522
    assert rx.receive(1472, buf_len=2560).tailroom == 1034


@pytest.mark.parametrize("payload", [0, 1, 50, 86])
def test_small_udp_is_copied_whole(payload):
    r = rx.receive(payload)
    assert r.path == "copy" and r.skb.nr_frags == 0 and r.skb.headlen == payload + 42


def test_full_mtu_tcp_mostly_misses_build_skb():
    # MSS 1448 with timestamps: frame 1514, the same tailroom 10 as 1472-byte UDP.
    assert rx.receive(1448, l4="tcp").path == "copy+frag"


# --- per kernel ---------------------------------------------------------------------------------------

def test_5_10_copies_128_bytes_into_a_page_frag_head():
    r = rx.receive(1000, kernel="5.10")
    assert r.path == "copy+frag" and r.tailroom is None
    # docs/kernel/rx.md#a3 (<= v5.10 napi_alloc_skb head, SKB_TRUESIZE(192) = 768) + the 1536 frag (rx.md#a5);
    # rx.md#a2: 128
    assert r.skb.headlen == 128 and r.skb.head_frag and r.skb.head_kind == "napi_page_frag"
    assert r.skb.truesize == 768 + 1536


def test_5_11_copies_128_bytes_into_a_kmalloc_head():
    r = rx.receive(1000, kernel="5.11")
    # docs/kernel/rx.md#a2: <= v5.11 copies min(len, tailroom) = 128; rx.md#a3: 3226b158e67c kmallocs the 128-byte head
    assert r.skb.headlen == 128 and not r.skb.head_frag and r.skb.head_kind == "kmalloc"


def test_5_12_copies_only_eth_hlen():
    r = rx.receive(1000, kernel="5.12")
    # docs/kernel/rx.md#a2, 0f6925b3e8da: copy only ETH_HLEN; frag = frame 1042 - 14
    assert r.path == "copy+frag" and r.skb.headlen == 14 and r.skb.frags[0].size == 1028


def test_5_13_and_later_build_skb():
    for k in ("5.13", "6.1", "6.18"):
        assert rx.receive(1000, kernel=k).path == "build_skb"


@pytest.mark.parametrize("kernel, kind, head_frag, tailroom, truesize", [
    ("5.10", "napi_page_frag", True, 128, 768),
    ("5.11", "kmalloc", False, 128, 768),
    ("6.1", "napi_page_frag_1k", True, 640, 1280),
    ("6.18", "small_head_cache", False, 192, 832),  # skbuff_small_head object_size 576 on the 6.18 kernel here
])
def test_napi_alloc_skb_head_per_version(kernel, kind, head_frag, tailroom, truesize):
    h = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=kernel)
    assert (h.kind, h.head_frag, h.tailroom, h.truesize) == (kind, head_frag, tailroom, truesize)


def test_6_1_small_page_frag_only_with_4k_pages():
    assert rx.napi_alloc_skb(128, kernel="6.1", arch="arm64-64k").kind == "kmalloc"


def test_copy_threshold_follows_head_tailroom():
    # frames up to skb_tailroom are copied whole: 128 (<= 6.0), 640 (6.1, 4K pages), 192 (6.18 here).
    assert rx.page_to_skb(128, 1536, kernel="5.12").path == "copy"
    assert rx.page_to_skb(129, 1536, kernel="5.12").path == "copy+frag"
    assert rx.page_to_skb(1400, 1536, kernel="6.1").skb.headlen == 14
    # mips32 on 6.1: 1 KiB frag head, end 1024 - 256 = 768, tailroom 768 - (32 + 2) = 734.
    assert rx.napi_alloc_skb(128, kernel="6.1", arch="mips32").tailroom == 734
    assert rx.page_to_skb(734, 1536, kernel="6.1", arch="mips32").path == "copy"
    assert rx.page_to_skb(735, 1536, kernel="6.1", arch="mips32").skb.headlen == 14


# --- per arch -------------------------------------------------------------------------------------------

def test_mips32_never_builds_skb():
    frames = np.arange(14, 1525)
    codes, *_ = rx.classify(frames, 1536, kernel="6.18", arch="mips32")
    assert not (codes == rx.PATH_CODES["build_skb"]).any()
    r = rx.receive(1000, arch="mips32")
    assert r.path == "copy+frag" and "NET_IP_ALIGN is 2" in r.reason


def test_arm64_gets_the_x86_64_window():
    frames = np.arange(14, 1525)
    a, *_ = rx.classify(frames, 1536, arch="arm64")
    b, *_ = rx.classify(frames, 1536, arch="x86_64")
    assert (a == b).all()


def test_ppc64le_threshold_is_384():
    r = rx.receive(1000, arch="ppc64le")
    # docs/kernel/arch.md#b1: ppc64 SMP_CACHE_BYTES 128, SKB_DATA_ALIGN(320) = 384
    assert r.shinfo_size == 384 and r.path == "build_skb"
    assert rx.page_to_skb(1536 - 12 - 383, 1536, arch="ppc64le").path == "copy+frag"
    assert rx.page_to_skb(1536 - 12 - 384, 1536, arch="ppc64le").path == "build_skb"


# --- big and small modes ------------------------------------------------------------------------------

def test_big_mode_builds_skb_up_to_3744():
    # docs/kernel/rx.md#a2-ii table: big mode builds while frame <= 4096 - 32 - 320 = 3744; 3745 leaves tailroom 319
    assert rx.page_to_skb(3744, 4096, mode="big").path == "build_skb"
    r = rx.page_to_skb(3745, 4096, mode="big")
    assert r.path == "copy+frag" and r.tailroom == 319


def test_big_mode_multi_page_frags_charge_page_size():
    # docs/kernel/rx.md#a1, docs/kernel/rx.md#a2-ii: receive_big passes truesize PAGE_SIZE; sg[1] starts at
    # sizeof(padded_vnet_hdr) = 32
    r = rx.receive(20000, mode="big", mtu=1500, l4="tcp")
    assert r.path == "copy+frag" and r.buffers[0].page == r.skb.frags[0].page
    assert all(f.truesize == 4096 for f in r.skb.frags)
    assert r.skb.frags[0].offset == 32 + 14 and r.skb.frags[0].size == 4096 - 46
    assert r.skb.len == r.frame_len


def test_big_mode_5_13_leaks_chain_pages_note():
    r = rx.page_to_skb(1000, 4096, mode="big", kernel="5.13")
    assert r.path == "build_skb" and any("leaking" in n for n in r.notes)


def test_small_mode_always_builds_skb_in_1920_bytes():
    # docs/kernel/rx.md#a1 small mode: headroom 76, buffer ALIGN(1594, 64) + 320 = 1920; with XDP 2176
    r = rx.receive(1000, mode="small")
    assert r.path == "build_skb" and r.buffers[0].truesize == 1920
    assert r.tailroom == 1920 - (64 + 12) - 1042  # buffer end minus tail, shinfo included, as page_to_skb counts
    assert rx.receive(10, mode="small").path == "build_skb"
    assert rx.receive(10, mode="small", xdp=True).buffers[0].truesize == 2176


# --- multi-buffer --------------------------------------------------------------------------------------

def test_multi_buffer_head_takes_copy_path_with_zero_tailroom():
    r = rx.receive(3000, l4="tcp")  # 12 + 3066 bytes over three 1536-byte buffers
    assert r.num_buffers == 3 and r.path == "copy+frag" and r.tailroom == 0
    assert r.skb.headlen == 14 and r.skb.len == r.frame_len


def test_multi_buffer_contiguous_buffers_coalesce():
    # Buffers carved back to back from one 32 KiB frag: skb_can_coalesce merges them into one frag.
    r = rx.receive(8900, mtu=9000)  # 12 + 8942 bytes: six 1536-byte buffers
    assert r.num_buffers == 6 and r.skb.nr_frags == 1
    assert r.skb.truesize == rx.napi_alloc_skb(128).truesize + 6 * 1536


def test_multi_buffer_frag_list_past_max_skb_frags():
    # Pinned buffers in separate pages never coalesce: 17 frags, then alloc_skb(0) on frag_list.
    r = rx.receive(40000, buf_len=1536, l4="tcp")
    assert r.skb.nr_frags == 17 and r.skb.frag_list
    assert r.skb.frag_list[0].head_kind == "alloc_skb0"
    assert r.skb.len == r.frame_len
    assert max(s.nr_frags for s in r.skb.walk()) <= 17


# --- XDP -------------------------------------------------------------------------------------------------

def test_xdp_6_1_uses_page_size_truesize():
    r = rx.receive(1000, xdp=True, kernel="6.1")
    # docs/kernel/rx.md#a2-ii: 6.1 page_to_skb with headroom: truesize PAGE_SIZE, tailroom = it - len - offset
    assert r.path == "build_skb" and r.tailroom == 4096 - 256 - 12 - 1042


def test_xdp_6_18_builds_from_xdp_buff_for_any_length():
    assert rx.receive(10, xdp=True, kernel="6.18").path == "build_skb"


# --- properties ----------------------------------------------------------------------------------------

frames_and_buffers = st.tuples(st.integers(14, 4000), st.sampled_from([1536, 2048, 2560, 4096]))


@given(frames_and_buffers, st.sampled_from(KERNELS), st.sampled_from(ARCHES))
def test_single_buffer_invariants(fb, kernel, arch):
    frame, truesize = fb
    assume(frame + 12 <= truesize)
    r = rx.page_to_skb(frame, truesize, kernel=kernel, arch=arch)
    a = vnetlab.arch(arch, kernel)
    skb = r.skb
    assert skb.len == frame  # bytes conserved
    assert skb.headlen + sum(f.size for f in skb.frags) == skb.len
    assert skb.nr_frags <= a.max_skb_frags
    if r.path == "build_skb":
        assert skb.truesize == a.skb_truesize(truesize - a.shinfo_size)
        assert r.tailroom == truesize - 12 - frame and r.tailroom >= a.shinfo_size
    else:
        assert skb.truesize >= sum(f.truesize for f in skb.frags)  # never below what was allocated
        assert skb.truesize >= truesize or skb.nr_frags == 0


@given(st.integers(0, 64000), st.sampled_from(KERNELS), st.sampled_from(["x86_64", "arm64", "mips32", "ppc64le-4k"]),
       st.sampled_from(["udp", "tcp"]))
def test_receive_invariants(payload, kernel, arch, l4):
    if l4 == "udp":
        payload = payload % 1473  # UDP beyond the MTU needs guest USO (6.2+)
    r = rx.receive(payload, l4=l4, kernel=kernel, arch=arch, mtu=1500)
    a = vnetlab.arch(arch, kernel)
    skb = r.skb
    assert skb.len == r.frame_len
    total = 0
    for s in skb.walk():
        assert s.nr_frags <= a.max_skb_frags
        total += s.headlen + sum(f.size for f in s.frags)
    assert total == r.frame_len
    assert skb.truesize >= sum(b.truesize for b in r.buffers) or r.path != "copy+frag"


@given(st.lists(st.integers(14, 1524), min_size=1, max_size=50), st.sampled_from(KERNELS), st.sampled_from(ARCHES))
def test_classify_agrees_with_page_to_skb(frames, kernel, arch):
    codes, tailroom, frags, copied = rx.classify(frames, 1536, kernel=kernel, arch=arch)
    for i, f in enumerate(frames):
        r = rx.page_to_skb(f, 1536, kernel=kernel, arch=arch)
        assert rx.PATH_CODES[r.path] == codes[i]
        assert r.skb.nr_frags == frags[i]
        assert (r.tailroom if r.tailroom is not None else -1) == tailroom[i]
        assert r.copied == copied[i]  # bytes page_to_skb copied into the napi head (0 on the build_skb path)


# --- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: rx.page_to_skb(-1, 1536), r"frame_len must be an int in 14\.\.1524 .*got -1"),
    (lambda: rx.page_to_skb(1600, 1536), r"frame_len must be an int in 14..1524 .*1600"),
    (lambda: rx.page_to_skb(100, 1536, hdr_len=16), "hdr_len=16 is not a virtio-net header size"),
    (lambda: rx.page_to_skb(100, 1536, hdr_len=20, kernel="5.10"), "hdr_len=20"),
    (lambda: rx.page_to_skb(100, 1536, mode="small"), "mode must be one of 'mergeable', 'big' .*got 'small'"),
    (lambda: rx.page_to_skb(100, 1536, mode="big"), r"truesize must be an int in 4096..4096 .*1536"),
    (lambda: rx.page_to_skb(100, 1536, kernel="4.19"), "kernel='4.19' is not a known kernel"),
    (lambda: rx.page_to_skb(100, 1536, arch="riscv"), "arch='riscv'"),
    (lambda: rx.receive(-5), "payload_len must be an int in 0..65535 .*got -5"),
    (lambda: rx.receive(2000), "above mtu=1500.*6.1 has no guest USO"),
    (lambda: rx.receive(2000, mode="small", mtu=9000), "mtu=9000 with mode='small'"),
    (lambda: rx.receive(100, l4="sctp"), "l4 must be one of 'udp', 'tcp'.*got 'sctp'"),
    (lambda: rx.receive(100, buf_len=10), "buf_len must be an int in 27..4194304 .*got 10"),
    (lambda: rx.mergeable_buf_lens(1, hdr_len=10), "hdr_len=10 .*mergeable"),
    (lambda: rx.mergeable_buf_lens(1, frag_size=8192), "frag_size must be one of 4096, 32768 .*got 8192"),
    (lambda: rx.classify([10], 1536), "shorter than ETH_HLEN"),
    (lambda: rx.classify([1600], 1536), "longer than its buffer"),
    (lambda: rx.page_to_skb(100.5, 1536), "frame_len must be an int"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- a queue over time (EWMA, refill) --------------------------------------------------------------------

def test_queue_at_mtu_1500_keeps_1536_buffers():
    q = rx.RxQueue()
    for _ in range(300):
        r = q.receive(1472)
    # docs/kernel/rx.md#a5 (1536 buffers); rx.md#a0, rx.md#a1: the EWMA of a constant head_skb->len 1514 stays 1514
    assert q.next_buffer_len() == 1536 and r.num_buffers == 1
    assert q.ewma.read() == 1514


def test_queue_ewma_grows_buffers_with_gso_packets():
    # docs/kernel/rx.md#a5: 1536 buffers and the hole-extended 2048; rx.md#a1 get_mergeable_buf_len clamp -> 4096
    # 64 KiB guest-GSO TCP packets: the EWMA climbs, new buffers reach clamp(PAGE_SIZE - hdr_len) -> 4096.
    q = rx.RxQueue()
    first = q.receive(60000, l4="tcp")
    assert all(b.truesize in (1536, 2048) for b in first.buffers)
    for _ in range(200):
        r = q.receive(60000, l4="tcp")
    assert q.next_buffer_len() == 4096
    assert max(b.truesize for b in r.buffers) >= 4096
    assert r.num_buffers < first.num_buffers


def test_queue_refills_only_past_half_the_budget():
    q = rx.RxQueue(ring_size=256, budget=64)
    for _ in range(64):
        q.receive(100)
    assert len(q.posted) == 256 and q.refills == 2  # 64 free > min(64, 256) / 2: refilled at poll end
    q2 = rx.RxQueue(ring_size=256, budget=64)
    for _ in range(20):
        q2.receive(100)
    q2.end_poll()
    # drivers/net/virtio_net.c virtnet_receive: refill when num_free > min(budget, ring) / 2; 256 - 20 posted
    assert len(q2.posted) == 236 and q2.refills == 1  # 20 free <= 32: no refill


def test_queue_bad_input():
    with pytest.raises(ValueError, match="ring_size must be an int in 2..32768 .*got 1"):
        rx.RxQueue(ring_size=1)
    with pytest.raises(ValueError, match="hdr_len=10"):
        rx.RxQueue(hdr_len=10)


# --- the head each kernel's receive path builds (docs/kernel/gro.md#c3) ---------------------------------------

@pytest.mark.parametrize("kernel, payload, buf_len, case", [
    ("5.10", 1448, 1536, "pagefrag128"),  # page_to_skb copies min(len, 128) into a __napi_alloc_skb page-frag head
    ("5.11", 1448, 1536, "kmalloc128"),  # 3226b158e67c: napi_alloc_skb(128) heads are kmalloc'ed (head_frag 0)
    ("5.12", 1448, 1536, "eth_hlen"),  # 0f6925b3e8da: copy ETH_HLEN when the frame does not fit skb_tailroom
    ("5.12", 1000, 1536, "eth_hlen"),
    ("5.13", 1000, 1536, "build_skb"),  # fb32856b16ad: tailroom 1536 - 12 - 1042 = 482 >= 320
    ("6.1", 1448, 1536, "eth_hlen"),  # tailroom 1536 - 12 - 1514 = 10 < 320: the copy path
    ("6.1", 1448, 2048, "build_skb"),  # the hole-extended buffer: tailroom 522
    ("6.1", 50, 1536, "copy"),  # frame 92 <= GOOD_COPY_LEN: copied whole, no frag
])
def test_head_case_per_kernel(kernel, payload, buf_len, case):
    skb = rx.receive(payload, l4="tcp", kernel=kernel, buf_len=buf_len).skb
    assert rx.head_case(skb) == case
    assert case == "copy" or kernel in rx.HEAD_CASES[case].kernels


@given(st.integers(0, 64000), st.sampled_from(KERNELS), st.sampled_from(["tcp", "udp"]), st.sampled_from([4, 6]),
       st.sampled_from(["mergeable", "big"]))
def test_receive_conserves_bytes_and_counts_gso_packets(payload, kernel, l4, ip, mode):
    mss = 1500 - {4: 20, 6: 40}[ip] - {"tcp": 32, "udp": 8}[l4]
    if l4 == "udp" and not vnetlab.kernel(kernel).rule("guest_uso"):
        payload %= mss + 1  # virtnet_probe: no VIRTIO_NET_F_GUEST_USO4/6 before 6.2, so no UDP above the MTU
    payload = min(payload, 65535 - {4: 20, 6: 40}[ip] - {"tcp": 32, "udp": 8}[l4])
    r = rx.receive(payload, l4=l4, ip=ip, mode=mode, kernel=kernel)
    assert r.skb.len == r.frame_len == payload + 14 + {4: 20, 6: 40}[ip] + {"tcp": 32, "udp": 8}[l4]
    # virtio_net_hdr_to_skb: above the MTU the skb is DODGY GSO with the header's gso_size, segments recomputed
    # by the GSO code as DIV_ROUND_UP(payload, gso_size); a packet within the MTU is one packet.
    assert r.skb.segments(r.frame_len - payload) == (-(-payload // mss) if payload > mss else 1)


# --- 7.x: receive buffers from a page_pool (Debian linux-source-7.2 7.2.12 / 7.3 7.3.4, data/lab/7.*) ---------

@pytest.mark.parametrize("kernel", ["7.2.12", "7.3.4"])
def test_7x_mergeable_buffers_alternate_1536_and_2560(kernel):
    # add_recvbuf_mergeable -> page_pool_alloc_va on order-0 pages (virtnet_create_page_pools): 1536 at offset 0,
    # then 1536 at 1536 gets the page's rest (2560) since 3072 + 1536 > 4096 (page_pool_alloc_netmem).
    # Measured in the lab: every mergeable buffer at the EWMA floor is (0, 1536) or (1536, 2560).
    assert rx.mergeable_buf_lens(6, kernel=kernel) == [1536, 2560] * 3
    # Debian 7.2.12 drivers/net/virtio_net.c virtnet_create_page_pools: order-0 pages; data/lab/7.2.12/mergeable.json
    assert rx.rx_frag_sizes(vnetlab.kernel(kernel), vnetlab.arch("x86_64", kernel)) == (4096,)
    with pytest.raises(ValueError, match="page_pool"):
        rx.mergeable_buf_lens(2, frag_size=32768, kernel=kernel)


def test_7x_full_mtu_datagrams_take_build_skb_in_every_second_buffer():
    # frame 1514 in a 2560 buffer: tailroom 2560 - 12 - 1514 = 1034 >= 320 -> build_skb (A.5's order-0 case).
    r = [rx.receive(1472, kernel="7.2.12", buf_len=b) for b in (1536, 2560)]
    assert [x.path for x in r] == ["copy+frag", "build_skb"]


def test_page_pool_more_than_half_a_page_takes_a_whole_page():
    # include/net/page_pool/helpers.h (Debian 7.2.12) page_pool_alloc_netmem
    # page_pool_alloc_netmem: (*size << 1) > max_size -> a whole page, *size = max_size.
    assert rx.mergeable_buf_lens(2, avg_pkt_len=2100, kernel="7.2.12") == [4096, 4096]
    assert rx.mergeable_buf_lens(1, xdp=True, kernel="7.2.12") == [4096]


def test_page_pool_fragments_align_to_dma_cache_alignment():
    # net/core/page_pool.c (Debian 7.2.12) page_pool_alloc_frag_netmem; helpers.h hands the rest of the page
    # page_pool_alloc_frag_netmem: size = ALIGN(size, dma_get_cache_alignment()): 1 on x86_64, 128 on arm64.
    # A 1600-byte request: x86_64 fragments at 0 and 1600 (+ the rest: 2496); arm64 steps 1664, rest 2432.
    assert rx.mergeable_buf_lens(2, avg_pkt_len=1588, kernel="7.2.12") == [1600, 2496]
    assert rx.mergeable_buf_lens(2, avg_pkt_len=1588, kernel="7.2.12", arch="arm64") == [1600, 2432]


def test_7x_small_mode_buffers_alternate_1920_and_2176():
    # add_recvbuf_small (7.x): page_pool_alloc_va(1920): 0..1920, then 1920 + the rest = 2176; ctx carries it and
    # receive_small builds around it. Measured: build_skb frag_size 1920 / 2176 alternately (data/lab/7.*/small).
    assert rx.small_buf_lens(4, kernel="7.2.12") == [1920, 2176, 1920, 2176]
    assert rx.small_buf_lens(2, kernel="6.18") == [1920, 1920]
    r = rx.receive_small(1042, kernel="7.2.12", buflen=2176)
    assert r.skb.truesize == 2176 - 320 + 256 + 320
    with pytest.raises(ValueError, match="buflen"):
        rx.receive_small(1042, kernel="6.18", buflen=2176)


@pytest.mark.parametrize("kernel", ["7.2.12", "7.3.4"])
def test_7x_napi_head_is_a_704_byte_small_head(kernel):
    # Debian's config: GRO_MAX_HEAD_PAD 368 > MAX_TCP_HEADER 320 -> SKB_SMALL_HEAD_CACHE_SIZE 704; measured:
    # page_to_skb's napi_alloc_skb(128) head has truesize 960 and head_frag 0 (data/lab/7.*/mergeable).
    h = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=kernel)
    assert (h.kind, h.head_frag, h.tailroom, h.truesize) == ("small_head_cache", False, 320, 960)


# --- what the kernel refuses, the model refuses -----------------------------------------------

@pytest.mark.parametrize("kernel, longest", [
    # 5.10 drivers/net/virtio_net.c page_to_skb ("too much data": remainder > MAX_SKB_FRAGS * PAGE_SIZE) lets
    # through remainders up to 69632, but from 69617 the loop would add an 18th frag; frags start at
    # sizeof(padded_vnet_hdr) = 16 (docs/kernel/rx.md#a1), so 17 frags hold 17 * 4096 - 16 = 69616.
    ("5.10", 17 * 4096 - 16),
    # Debian 6.1.192 receive_big drops len > 18 * 4096 - 32 + hdr_len (tests/data/ksrc/6.1.192); 17 frags from
    # offset sizeof(padded_vnet_hdr) = 32 hold 17 * 4096 - 32 = 69600 (frame 69601 is the issue's 18-frag case).
    ("6.1", 17 * 4096 - 32),
])
def test_big_mode_refuses_frames_no_skb_can_hold(kernel, longest):
    r = rx.page_to_skb(longest, 4096, mode="big", kernel=kernel)
    assert r.skb.nr_frags == 17 and r.skb.len == longest
    with pytest.raises(ValueError, match=rf"frame_len must be an int in 14..{longest} .*MAX_SKB_FRAGS.*{longest + 1}"):
        rx.page_to_skb(longest + 1, 4096, mode="big", kernel=kernel)
    with pytest.raises(ValueError, match=rf"frame_lens has {longest + 1}.*up to {longest}"):
        rx.classify([longest + 1], 4096, mode="big", kernel=kernel)


def test_big_mode_short_chain_bound_is_receive_bigs_own():
    # tests/data/ksrc/6.12.95 and 6.1.192 drivers/net/virtio_net.c receive_big; docs/kernel/rx.md#a1 (big mode)
    # Debian 6.12.95 receive_big: len > (num_skbfrags + 1) * PAGE_SIZE is dropped ("pages", kernels.toml 6.12);
    # Debian 6.1.192: len > pages * PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len ("padded").
    assert rx.big_max_frame(3, 12, vnetlab.kernel("6.12"), vnetlab.arch("x86_64"))[0] == 3 * 4096 - 32
    assert rx.big_max_frame(3, 12, vnetlab.kernel("6.1"), vnetlab.arch("x86_64"))[0] == 3 * 4096 - 32
    # 5.10: no receive_big test; the chain (3 pages from offset 16) is the bound.
    assert rx.big_max_frame(3, 12, vnetlab.kernel("5.10"), vnetlab.arch("x86_64"))[0] == 3 * 4096 - 16


@pytest.mark.parametrize("pages", [1, 19, 100])
def test_big_pages_is_big_packets_num_skbfrags_plus_one(pages):
    # virtnet_set_big_packets: num_skbfrags = DIV_ROUND_UP(mtu, PAGE_SIZE) >= 1, or MAX_SKB_FRAGS (17) with guest GSO.
    with pytest.raises(ValueError, match=rf"big_pages must be an int in 2..18 .*got {pages}"):
        rx.page_to_skb(1000, 4096, mode="big", big_pages=pages)


@pytest.mark.parametrize("kernel, hi", [("5.13", 4096 - 576), ("6.18", 4096)])
def test_xdp_buffers_are_at_most_a_page(kernel, hi):
    # add_recvbuf_mergeable with XDP: len = get_mergeable_buf_len = PAGE_SIZE - room, room = SKB_DATA_ALIGN(256 +
    # sizeof(shinfo) 320) = 576 (x86_64, docs/kernel/arch.md#b1); the ctx holds len (<= 6.2) or len + room (6.3+).
    a = vnetlab.arch("x86_64")
    assert rx.mergeable_room(rx.VIRTIO_XDP_HEADROOM, a) == 576 and rx.mergeable_room(0, a) == 0
    # ppc64le-4k: SKB_DATA_ALIGN to SMP_CACHE_BYTES 128 of 256 + sizeof(shinfo) 320 (docs/kernel/arch.md#b1 table) = 640
    assert rx.mergeable_room(rx.VIRTIO_XDP_HEADROOM, vnetlab.arch("ppc64le-4k")) == 640
    assert rx.mergeable_buf_lens(1, xdp=True, kernel=kernel) == [hi]
    rx.page_to_skb(1000, hi, headroom=256, kernel=kernel)
    with pytest.raises(ValueError, match=rf"truesize must be an int in 1..{hi} \(with XDP.*got {hi + 1}"):
        rx.page_to_skb(1000, hi + 1, headroom=256, kernel=kernel)
    with pytest.raises(ValueError, match=rf"buf_len must be an int in 27..{hi} \(with XDP.*got 8192"):
        rx.receive(5000, xdp=True, buf_len=8192, mtu=9000, kernel=kernel)
    with pytest.raises(ValueError, match=rf"truesizes has 8192, out of range 1..{hi}"):
        rx.classify([1000], 8192, headroom=256, kernel=kernel)


@pytest.mark.parametrize("call, match", [
    # the reported cause: hdr_len 12.0 used to pass the header test and blame truesize
    (lambda: rx.receive(1000, hdr_len=12.0), r"rx.receive: hdr_len must be an int, got 12.0"),
    (lambda: rx.page_to_skb(1000, 2048, offset=-1), r"offset must be an int in 0\.\.31756 .*got -1"),
    (lambda: rx.page_to_skb(1000, 2048, offset=32000), r"offset must be an int in 0..31756 .*page\), got 32000"),
    (lambda: rx.page_to_skb(1000, 4096, mode="big", offset=16), r"offset must be an int in 0..0 .*got 16"),
    (lambda: rx.page_to_skb(1000, 2048, page="p"), r"rx.page_to_skb: page must be a Page or None"),
    (lambda: rx.RxQueue(mtu=0), r"mtu must be an int in 68\.\.65535 \(the device MTU: .*ETH_MIN_MTU.*got 0"),
    (lambda: rx.receive(10, mtu=28), r"mtu must be an int in 68\.\.65535 .*got 28"),
    (lambda: rx.mergeable_min_buf_len(mtu=67), r"mtu must be an int in 68\.\.65535 .*got 67"),
    (lambda: rx.classify("abc", 1536), r"frame_lens must be ints .* <U3"),
    (lambda: rx.classify([100.5], 1536), r"frame_lens must hold whole numbers"),
    (lambda: rx.classify([np.nan], 1536), r"frame_lens must hold whole numbers"),
    (lambda: rx.classify([True], 1536), r"frame_lens must be ints .* bool"),
    (lambda: rx.classify([None], 1536), r"frame_lens must be ints .* object"),
    (lambda: rx.classify([100], "x"), r"truesizes must be ints"),
    (lambda: rx.classify([100], 1536.5), r"truesizes must hold whole numbers"),
    (lambda: rx.classify([100], 1 << 40), r"truesizes has 1099511627776, out of range 1..4194304"),
    (lambda: rx.classify([1000], 2048, mode="big"), r"truesizes has 2048, out of range 4096..4096"),
    (lambda: rx.classify([1000], 2048, headroom=100), r"headroom must be one of 0, 256 .*got 100"),
])
def test_bad_input_issue_21(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: rx.receive(1000, xdp="no"), r"rx.receive: xdp must be a bool \(True/False\), got 'no'"),
    (lambda: rx.RxQueue(xdp="no"), r"rx.RxQueue.__init__: xdp must be a bool"),
    (lambda: rx.frame_len_for(-5), r"payload_len must be an int in 0..65535"),
    (lambda: rx.frame_len_for(100, vlan="no"), r"vlan must be a bool"),
    (lambda: rx.kmalloc_size_roundup(-1), r"size must be an int in 0..4194304"),
    # 10,000,000 buffers took 2 minutes: the documented range is what completes in about a second
    (lambda: rx.mergeable_buf_lens(rx.MAX_BUFFERS + 1), r"count must be an int in 0..65536"),
    (lambda: rx.small_buf_lens(rx.MAX_BUFFERS + 1), r"count must be an int in 0..65536"),
    (lambda: rx.receive_mergeable(100, ["x"]), r"buffers\[0\] must be an rx.RxBuffer"),
])
def test_flags_and_ranges_at_the_boundary(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_buffer_end_includes_the_xdp_room_where_no_build_skb_reads_it():
    # drivers/net/virtio_net.c add_recvbuf_mergeable (5.12) with an XDP program: room = SKB_DATA_ALIGN(256 +
    # sizeof(struct skb_shared_info)) = 576 on x86_64, len = get_mergeable_buf_len = PAGE_SIZE - room = 3520, and
    # skb_page_frag_refill takes len + room = PAGE_SIZE (4096) of the frag for it; page_to_skb has no build_skb
    # branch there, so nothing but the buffer itself says where it ends.
    r = rx.receive(1000, xdp=True, kernel="5.12")
    assert r.tailroom is None and r.buffers[0].len == 3520
    assert r.buffer_end == 4096 == r.buffers[0].end
    # 6.1 (page_to_skb with build_skb, xdp_truesize "page_size" up to 6.2): PAGE_SIZE too, read from the tailroom
    assert rx.receive(1000, xdp=True, kernel="6.1").buffer_end == 4096
    # without XDP the buffer ends at its truesize (1536 at MTU 1500: mergeable_min_buf_len, virtio_net.c 6.1)
    plain = rx.receive(1000, kernel="6.1")
    assert plain.buffer_end == plain.buffers[0].end == plain.buffers[0].truesize == 1536
