"""Figures of the receive path: labelled regions exist and the sizes drawn are the sizes the model computed."""

import matplotlib

matplotlib.use("Agg")

import pytest

from vnetlab import rx
from vnetlab.viz import memory
from vnetlab.viz.style import regions

BUFFER_GIDS = {"headroom", "vnet_hdr", "eth", "ip", "l4", "payload", "tailroom", "skb_shared_info"}


def _w(fig, gid):
    return regions(fig)[gid].get_width()


def _x(fig, gid):
    return regions(fig)[gid].get_x()


@pytest.mark.parametrize("kw", [
    dict(payload_len=1000), dict(payload_len=1472), dict(payload_len=50), dict(payload_len=1000, kernel="5.12"),
    dict(payload_len=1000, xdp=True), dict(payload_len=1000, xdp=True, kernel="6.18"),
    dict(payload_len=1000, arch="ppc64le"), dict(payload_len=1000, arch="mips32"),
    dict(payload_len=1448, l4="tcp", buf_len=2048), dict(payload_len=1000, mode="big"),
])
def test_rx_buffer_regions_match_model(kw):
    r = rx.receive(**kw)
    fig = memory.draw_rx_buffer(r, l4=kw.get("l4", "udp"))
    found = regions(fig)
    assert BUFFER_GIDS <= set(found)
    frame = sum(_w(fig, g) for g in ("eth", "ip", "l4", "payload"))
    assert frame == r.frame_len
    assert _w(fig, "vnet_hdr") == r.hdr_len
    assert _w(fig, "skb_shared_info") == r.shinfo_size
    assert _w(fig, "headroom") == r.buffers[0].headroom
    assert _x(fig, "eth") == r.buffers[0].headroom + r.hdr_padded_len
    if r.tailroom is not None:
        assert _w(fig, "tailroom") == r.tailroom
    # skb_shared_info sits at end - SKB_DATA_ALIGN(sizeof(struct skb_shared_info)).
    lay = memory.rx_buffer_layout(r, l4=kw.get("l4", "udp"))
    assert _x(fig, "skb_shared_info") + r.shinfo_size == lay.buffer_end
    assert _x(fig, "tailroom") + _w(fig, "tailroom") == lay.buffer_end


def test_rx_buffer_seed_numbers():
    """The seed's 1000-byte UDP in a 1536-byte buffer: tailroom 482 >= 320 -> build_skb."""
    r = rx.receive(1000)
    fig = memory.draw_rx_buffer(r)
    assert _w(fig, "tailroom") == 482 and _w(fig, "payload") == 1000 and _w(fig, "skb_shared_info") == 320
    lay = memory.rx_buffer_layout(r)
    assert lay.buffer_end == 1536 and [ok for _, ok in lay.condition if ok is not None] == [True, True, True]
    r = rx.receive(1472)
    lay = memory.rx_buffer_layout(r)
    assert lay.tailroom == 10 and [ok for _, ok in lay.condition if ok is not None] == [True, True, False]


def test_rx_buffer_big_mode_padded_header():
    r = rx.receive(1000, mode="big")
    fig = memory.draw_rx_buffer(r)
    assert _w(fig, "hdr_pad") == rx.PADDED_VNET_HDR_LEN - r.hdr_len
    assert _x(fig, "eth") == rx.PADDED_VNET_HDR_LEN
    assert _w(fig, "tailroom") == 4096 - 32 - r.frame_len == r.tailroom


def test_rx_buffer_multi_buffer_shows_first_buffer():
    r = rx.receive(3000, l4="tcp", mtu=9000)
    assert r.num_buffers > 1
    fig = memory.draw_rx_buffer(r, l4="tcp")
    frame_in_first = sum(_w(fig, g) for g in ("eth", "ip", "l4", "payload"))
    assert frame_in_first == r.buffers[0].len - r.hdr_len
    assert _w(fig, "tailroom") == r.tailroom == 0


def test_rx_buffer_small_mode():
    r = rx.receive(1000, mode="small")
    fig = memory.draw_rx_buffer(r)
    # receive_small's RxResult.tailroom is skb_tailroom after build_skb; the drawn tailroom runs to the buffer end.
    assert _w(fig, "tailroom") == r.tailroom + r.shinfo_size
    assert _x(fig, "skb_shared_info") == r.skb.end_offset


def test_rx_buffer_rejects_unsplittable_l4():
    with pytest.raises(ValueError, match="l4"):
        memory.draw_rx_buffer(rx.receive(1000), l4="sctp")


@pytest.mark.parametrize("kw", [
    dict(payload_len=1000), dict(payload_len=1472), dict(payload_len=50), dict(payload_len=1000, kernel="5.12"),
    dict(payload_len=1000, kernel="5.10"), dict(payload_len=60000, l4="tcp", mode="big"),
    dict(payload_len=60000, l4="tcp"), dict(payload_len=3000, l4="tcp", mtu=9000),
])
def test_skb_regions_match_model(kw):
    r = rx.receive(**kw)
    skb = r.skb
    fig = memory.draw_skb(r)
    found = regions(fig)
    assert {"headroom", "linear", "tailroom", "skb_shared_info", "nr_frags", "frag_list",
            "truesize:sk_buff", "truesize:head", "truesize:skb_shared_info"} <= set(found)
    assert _w(fig, "headroom") == skb.headroom
    assert _w(fig, "linear") == skb.headlen
    assert _w(fig, "tailroom") == skb.head_tailroom
    assert _x(fig, "skb_shared_info") == skb.end_offset
    assert _w(fig, "skb_shared_info") == r.shinfo_size
    for i, f in enumerate(skb.frags):
        assert f"frags[{i}]" in found
        assert _w(fig, f"frag{i}") == f.size and _w(fig, f"page{i}") == f.truesize
        assert _w(fig, f"truesize:frag{i}") == f.truesize
    truesize_drawn = sum(p.get_width() for g, p in found.items() if g.startswith("truesize:"))
    assert truesize_drawn == skb.truesize


def test_truesize_parts_add_up():
    for kw in (dict(payload_len=1000), dict(payload_len=1472), dict(payload_len=200000 // 4, l4="tcp")):
        r = rx.receive(**kw)
        assert memory.truesize_parts(r.skb, kernel=r.kernel, arch=r.arch).total == r.skb.truesize


def test_paths_side_by_side():
    fig = memory.draw_paths_side_by_side(1000)
    found = regions(fig)
    copy, built = rx.receive(1000, kernel="5.12"), rx.receive(1000, kernel="6.1")
    assert copy.path == "copy+frag" and built.path == "build_skb"
    assert found["5.12/linear"].get_width() == copy.skb.headlen == 14
    assert found["6.1/linear"].get_width() == built.skb.headlen == 1042
    assert "5.12/frags[0]" in found and "6.1/frags[0]" not in found
    assert found["6.1/truesize:head"].get_width() == built.skb.end_offset
    # one byte scale on both sides
    ax_a, ax_b = found["5.12/linear"].axes, found["6.1/linear"].axes
    assert ax_a.get_xlim() == ax_b.get_xlim()


def test_paths_side_by_side_bad_input():
    with pytest.raises(ValueError, match="kernel"):
        memory.draw_paths_side_by_side(1000, kernels=("5.12", "9.9"))
    with pytest.raises(ValueError, match="payload_len"):
        memory.draw_paths_side_by_side(-1)


def test_figures_deterministic(tmp_path):
    from vnetlab.viz.style import save_png
    r = rx.receive(1000)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    save_png(memory.draw_rx_buffer(r), a)
    save_png(memory.draw_rx_buffer(rx.receive(1000)), b)
    assert a.read_bytes() == b.read_bytes()
