"""vnetlab.viz.labfig: the lab's measurements beside the model. Expected values come from the kernel source (file,
function, version), the patch mails and the lab's JSON files read here directly, never from labfig itself."""

import json
import statistics
from pathlib import Path

import pytest

from vnetlab.viz import labfig
from vnetlab.viz.style import DPI, regions

LAB = Path(__file__).resolve().parents[1] / "data" / "lab"
ETH_IP_UDP = 14 + 20 + 8  # ethhdr + iphdr + udphdr
VNET_HDR = 12  # sizeof(struct virtio_net_hdr_mrg_rxbuf)
GOOD_COPY_LEN = 128  # drivers/net/virtio_net.c
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), x86_64 (BTF of the lab's 6.1)
# ETH_DATA_LEN - iphdr - udphdr (include/uapi/linux/if_ether.h, ip.h, udp.h): the sweep's largest payload
FULL_MTU_PAYLOAD = 1500 - 20 - 8
# source: vnetlab/viz/style.py, FIG_WIDTH 9 in at DPI 100: the one figure width JupyterLab shows unscaled
FIGURE_PX = 900


def _doc(kernel: str, config: str) -> dict:
    return json.loads((LAB / kernel / f"{config}.json").read_text())


def _measured_first_buffer(kernel: str) -> dict[int, dict]:
    """{payload: packet} for the lab's mergeable sweep, first packet of each size in a 1536-byte buffer."""
    doc = _doc(kernel, "mergeable")
    out = {}
    for size, pkt in zip(doc["rx"]["payload_sizes_sent"], doc["rx"]["packets"]):
        if pkt["page_to_skb"]["truesize"] == 1536:
            out.setdefault(size, pkt)
    return out


def test_rx_bands_after_are_the_build_skb_window():
    # page_to_skb (Debian 6.1): build_skb when len > GOOD_COPY_LEN and 1536 - 12 - len >= 320
    bands = [(b.path, b.lo, b.hi) for b in labfig.rx_bands("6.1-plain")]
    assert bands == [("copy", 0, GOOD_COPY_LEN - ETH_IP_UDP),
                     ("build_skb", GOOD_COPY_LEN - ETH_IP_UDP + 1, 1536 - VNET_HDR - SHINFO - ETH_IP_UDP),
                     ("copy+frag", 1536 - VNET_HDR - SHINFO - ETH_IP_UDP + 1, FULL_MTU_PAYLOAD)]


def test_rx_bands_before_copy_into_the_1k_napi_head():
    # lab/patches/6.1-no-build-skb.patch: napi_alloc_skb(GOOD_COPY_LEN), whole frame copied while it fits the
    # head's tailroom; 6.1's __napi_alloc_skb slices 1 KiB page frags: tailroom SKB_WITH_OVERHEAD(1024) - 64
    # (NET_SKB_PAD) = 1024 - 320 - 64 = 640 bytes; truesize SKB_TRUESIZE(704) = 704 + 256 + 320 = 1280
    # (net/core/skbuff.c __napi_alloc_skb, 6.1), plus the 1536-byte frag for a frame that does not fit: 2816
    bands = [(b.path, b.lo, b.hi, b.truesize, b.nr_frags) for b in labfig.rx_bands("6.1-no-build-skb")]
    assert bands == [("copy", 0, 640 - ETH_IP_UDP, 1280, 0),
                     ("copy+frag", 640 - ETH_IP_UDP + 1, FULL_MTU_PAYLOAD, 2816, 1)]
    measured = _measured_first_buffer("6.1-no-build-skb")
    assert max(p for p, pkt in measured.items() if pkt["path"] == "copy") <= 640 - ETH_IP_UDP
    assert min(p for p, pkt in measured.items() if pkt["path"] == "copy+frag") > 640 - ETH_IP_UDP


@pytest.mark.parametrize("kernel", ["6.1-plain", "6.1-no-build-skb", "5.10", "6.1", "6.12"])
def test_rx_marks_are_the_measured_packets(kernel):
    measured = _measured_first_buffer(kernel)
    marks = labfig.rx_marks(kernel)
    assert [m.payload for m in marks] == sorted(measured)
    for m in marks:
        pkt = measured[m.payload]
        assert (m.path, m.truesize, m.nr_frags) == (pkt["path"], pkt["gro"]["truesize"], pkt["gro"]["nr_frags"])
    assert all(m.agrees for m in marks)  # lab/README.md: every measured packet agrees with the model


def test_draw_rx_measured_marks_every_packet_and_refuses_an_unmeasured_kernel():
    fig = labfig.draw_rx_measured(labfig.SEED1_PAIR)
    assert round(fig.get_figwidth() * DPI) == FIGURE_PX
    drawn = {ln.get_gid() for ax in fig.axes for ln in ax.lines}
    for k in labfig.SEED1_PAIR:
        assert {f"{k}:measured:{p}" for p in _measured_first_buffer(k)} <= drawn
    assert any(gid.startswith("6.1-plain:model") for gid in regions(fig))
    with pytest.raises(ValueError, match="mergeable"):
        labfig.draw_rx_measured(["5.10-plain"])  # the 5.10 builds measured the router and gso only
    with pytest.raises(ValueError, match="at least one"):
        labfig.draw_rx_measured([])


def test_seed1_ratios_say_what_is_measured_fitted_predicted():
    ratios = {r.label: r for r in labfig.seed1_ratios()}
    seed = 1158465 / 956864  # fb32856b16ad commit message
    hw = [r for r in ratios.values() if r.kind == "measured, hardware"]
    assert len(hw) == 1 and hw[0].value == pytest.approx(seed)
    # the 2-parameter fit is exact by construction: it must be labelled a fit, never a prediction
    fitted = [r for r in ratios.values() if r.kind == "fitted"]
    assert len(fitted) == 1 and fitted[0].value == pytest.approx(seed, rel=1e-9)
    assert all(r.value != pytest.approx(seed, rel=1e-6) for r in ratios.values() if r.kind == "predicted")

    def median_insn(kernel):
        return statistics.median(r["instructions_per_rx_packet_vcpu1"] for r in _doc(kernel, "insn")["rate"]["runs"])

    insn = [r for r in ratios.values() if r.kind == "measured, TCG" and "instructions" in r.label]
    assert len(insn) == 1
    assert insn[0].value == pytest.approx(median_insn("6.1-no-build-skb") / median_insn("6.1-plain"))
    assert insn[0].value == pytest.approx(12755 / 9957, rel=1e-3)  # lab/README.md's table


def test_nat_delivery_is_one_intact_datagram_per_gro_skb_without_the_fix():
    rows = labfig.nat_delivery()
    assert rows and [d.nat_fix for d in rows] == sorted((d.nat_fix for d in rows), reverse=True)
    for d in rows:
        case = next(c for c in _doc(d.kernel, "router")["router"]["cases"] if c["case"] == d.case)
        assert d.intact == case["receiver"]["intact"]
        if "revert-3d6df63a5cbe" in d.kernel:
            # c3df39ac9b0e's commit message: only the head of a NATed fraglist GRO skb is translated
            assert not d.nat_fix and d.intact == len(case["gro_skb_lens"]) == d.predicted_intact
        else:
            # less what the sender's own qdisc dropped (fq_codel under TCG; recorded from the 7.x runs on)
            q = case.get("sender_qdisc") or {}
            dropped = q["after"]["dropped"] - q["before"]["dropped"] if q.get("after") and q.get("before") else 0
            assert d.nat_fix and d.intact == d.forwarded == case["sent"] - dropped


def test_delivery_and_results_figures():
    fig = labfig.draw_nat_delivery()
    gids = {p.get_gid() for ax in fig.axes for p in ax.patches}
    assert {f"delivery:{d.kernel}:{d.case}" for d in labfig.nat_delivery()} <= gids
    fig = labfig.draw_results()
    assert round(fig.get_figwidth() * DPI) == FIGURE_PX and len(fig.axes) == 2
    fig = labfig.draw_seed1_rate()
    assert len([p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("ratio:")]) == len(
        labfig.seed1_ratios())
    with pytest.raises(ValueError):
        labfig.draw_seed1_rate([])
    with pytest.raises(ValueError):
        labfig.draw_nat_delivery([])


def test_debian_5_10_matches_its_own_profile_not_mainline():
    doc = _doc("5.10", "mergeable")
    n = len(doc["rx"]["packets"])
    measured_head_frag = sum(bool(p["page_to_skb_ret"]["head_frag"]) for p in doc["rx"]["packets"])
    assert measured_head_frag == 0  # 3226b158e67c (backported): kmalloc'ed napi_alloc_skb heads
    debian = labfig.profile_check("5.10", "5.10.223")
    assert all(v == (n, n) for v in debian.values())
    # v5.10 __napi_alloc_skb gives a 128-byte copy a NAPI page-frag head (head_frag 1): right only where the
    # measurement says head_frag 1, which is nowhere
    mainline = labfig.profile_check("5.10", "5.10")
    assert mainline["head_frag"] == (measured_head_frag, n)
    # v5.10 page_to_skb copies min(len, 128); Debian's 0f6925b3e8da backport copies ETH_HLEN when the frame does
    # not fit: data_len agrees only for frames copied whole (len <= 128)
    whole = sum(p["page_to_skb_ret"]["data_len"] == 0 for p in doc["rx"]["packets"])
    assert mainline["data_len"] == (whole, n)
    assert "5.10.223" in labfig.profile_table("5.10", ("5.10", "5.10.223"))


def _lab_counts(values) -> str:
    c: dict = {}
    for v in values:
        c[v] = c.get(v, 0) + 1
    return ", ".join(f"{n} x {v}" for v, n in sorted(c.items()))


@pytest.mark.parametrize("kernel", ["7.2.12", "7.3.4"])
def test_seven_x_notes_put_the_lab_measurement_beside_the_page_pool_model(kernel):
    # Debian 7.x drivers/net/virtio_net.c add_recvbuf_mergeable: page_pool_alloc_va from an order-0 pool, so each
    # 4 KiB page gives (0, 1536) and (1536, 2560); add_recvbuf_small 1920 / 2176; skbuff_small_head 704 -> 960.
    # Expected values: the lab's JSON (data/lab/<kernel>/mergeable.json, small.json), read here directly.
    merg, small = _doc(kernel, "mergeable")["rx"]["packets"], _doc(kernel, "small")["rx"]["packets"]
    carving = labfig.seven_x_note("carving", kernel=kernel, width=10_000)
    assert "1536 / 2560 per 4 KiB page" in carving
    assert "20 x 1536 + 2032 per 32 KiB frag" in carving  # 6.18: 16-byte virtnet_rq_dma in the hole buffer
    assert "head truesize is 960 (was 832" in carving
    assert "mergeable buffers " + _lab_counts(p["page_to_skb"]["truesize"] for p in merg) in carving
    small_note = labfig.seven_x_note("small", kernel=kernel, width=10_000)
    assert "frag_size alternates 1920 / 2176 (6.18: 1920 every time)" in small_note
    assert "frag_size " + _lab_counts(p["build_skb_frag_size"] for p in small if "build_skb_frag_size" in p) \
        in small_note
    full = [p for p in merg if p["frame_len"] == 14 + 1500]
    hits = sum(p["path"] == "build_skb" for p in full)
    note = labfig.seven_x_note("full_mtu", kernel=kernel, width=10_000)
    assert f"in 42 of 84 buffers on {kernel} (0.500)" in note  # every second buffer is 2560: tailroom 1034
    assert "4 of 84 (0.048) on 6.18" in note  # one 2032-byte hole buffer per 21
    assert f"{hits} of {len(full)} full-MTU frames took build_skb" in note
    gro_note = labfig.seven_x_note("gro", kernel=kernel, width=10_000)
    assert f"{kernel}: 22 build_skb and 23 eth_hlen heads in 45 packets" in gro_note or \
        f"{kernel}: 23 build_skb and 22 eth_hlen heads in 45 packets" in gro_note
    # source: tests/test_output_width.py, every printed line fits 100 columns
    assert all(len(line) <= 100 for t in labfig.SEVEN_X_TOPICS
               for line in labfig.seven_x_note(t, kernel=kernel).splitlines())


def test_seven_x_note_refuses_an_unknown_topic():
    with pytest.raises(ValueError, match="topic must be one of carving, small, full_mtu, gro"):
        labfig.seven_x_note("memory")
