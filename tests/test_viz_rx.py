"""Figures of the receive path: labelled regions exist and the sizes drawn are the sizes the model computed."""

import matplotlib

matplotlib.use("Agg")

import pytest

from vnetlab import rx
from vnetlab.viz import memory
from vnetlab.viz.style import new_figure, regions

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
    # receive_small's tailroom is counted as page_to_skb counts it: to the buffer end, shinfo included.
    assert _w(fig, "tailroom") == r.tailroom
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


# --------------------------------------------------------------------------------------------------
# thresholds

from vnetlab.viz import thresholds  # noqa: E402


def test_payload_window_is_87_to_1162():
    sw = thresholds.payload_sweep(1536)
    assert sw.window("build_skb") == (87, 1162)
    fig = thresholds.draw_path_vs_payload(1536)
    found = regions(fig)
    p = found["path:build_skb"]
    assert (p.get_x() + 0.5, p.get_x() + p.get_width() - 0.5) == (87, 1162)
    assert {"path:copy", "path:copy+frag"} <= set(found)


def test_payload_window_other_buffers_and_kernels():
    assert thresholds.payload_sweep(2048).window() == (87, 2048 - 12 - 320 - 42)
    assert thresholds.payload_sweep(1536, kernel="5.12").window() is None
    assert thresholds.payload_sweep(1536, arch="mips32").window() is None


def test_threshold_grid_matches_page_to_skb():
    frames = [60, 129, 1042, 1204, 1205, 1514, 3000]
    trues = [1536, 2048, 2560]
    grid = thresholds.threshold_grid(frames, trues)
    for i, t in enumerate(trues):
        for j, f in enumerate(frames):
            if f + 12 > t:
                assert grid[i, j] == thresholds.INVALID
            else:
                assert grid[i, j] == rx.PATH_CODES[rx.page_to_skb(f, t).path]


def test_threshold_map_marks():
    fig = thresholds.draw_threshold_map()
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children()}
    assert {"buffer:1536", "buffer:2048", "buffer:2560", "frame:60", "frame:1042", "frame:1514", "path_map"} <= gids
    fig = thresholds.draw_threshold_maps(kernels=("5.12", "6.1"), arches=("x86_64",))
    assert len([ax for ax in fig.axes if ax.get_images()]) == 2


def test_carving_matches_mergeable_buf_lens():
    for kernel in ("6.1", "6.18"):
        for size in (32768, 4096):
            bufs = thresholds.carve(size, kernel=kernel)
            assert [b.truesize for b in bufs] == rx.mergeable_buf_lens(len(bufs), frag_size=size, kernel=kernel)
            fig = thresholds.draw_mergeable_carving(kernel=kernel)
            name = f"{size // 1024}K"
            widths = [regions(fig)[f"{name}:buf{i}"].get_width() for i in range(len(bufs))]
            assert widths == [b.truesize for b in bufs]
    assert [b.truesize for b in thresholds.carve(4096)] == [1536, 2560]
    assert thresholds.carve(32768)[-1].truesize == 2048 and len(thresholds.carve(32768)) == 21


def test_thresholds_bad_input():
    with pytest.raises(ValueError, match="kernel"):
        thresholds.draw_threshold_map(kernel="4.19")
    with pytest.raises(ValueError, match="buf_len"):
        thresholds.payload_sweep(40)


# --------------------------------------------------------------------------------------------------
# widgets: values drive the computation; errors become text

from vnetlab.widgets import rxpanels  # noqa: E402


def test_rxpanels_all():
    assert {"buffer_panel", "skb_panel", "paths_panel", "threshold_panel", "window_panel", "carving_panel",
            "buffer_panel_state"} <= set(rxpanels.__all__)
    for name in rxpanels.__all__:
        assert hasattr(rxpanels, name)


def test_buffer_panel_state_plain():
    st = rxpanels.buffer_panel_state(payload_len=1472)
    assert st.result.path == "copy+frag" and regions(st.figure)["tailroom"].get_width() == 10
    with pytest.raises(ValueError, match="payload_len"):
        rxpanels.buffer_panel_state(payload_len=-5)
    with pytest.raises(ValueError, match="kernel"):
        rxpanels.buffer_panel_state(kernel="4.4")


def test_buffer_panel_updates_in_place():
    p = rxpanels.buffer_panel()
    fig, png = p.figure, p.image.value
    assert p.state.result.path == "build_skb" and png[:4] == b"\x89PNG"
    p.controls["payload_len"].value = 1472
    assert p.state.result.path == "copy+frag" and p.figure is fig and p.state.figure is fig
    assert p.image.value != png
    assert regions(p.figure)["tailroom"].get_width() == 10
    p.controls["buf_len"].value = 2048
    assert p.state.result.path == "build_skb" and regions(p.figure)["tailroom"].get_width() == 2048 - 12 - 1514
    p.controls["kernel"].value = "5.12"
    assert p.state.result.path == "copy+frag"


def test_panel_shows_model_error_as_text():
    p = rxpanels.buffer_panel()
    p.controls["payload_len"].value = 5000  # above MTU 1500 for UDP without guest USO in 6.1
    assert p.state is None and "payload_len=5000" in p.error
    assert "payload_len=5000" in p.message.value and "Traceback" not in p.message.value
    assert p.image.layout.display == "none"
    p.controls["payload_len"].value = 1000
    assert p.error is None and p.state.result.path == "build_skb" and p.image.layout.display is None


def test_other_panels_follow_controls():
    s = rxpanels.skb_panel(payload_len=1472)
    assert "frags[0]" in regions(s.figure)
    s.controls["payload_len"].value = 1000
    assert "frags[0]" not in regions(s.figure) and s.state.result.skb.nr_frags == 0
    w = rxpanels.window_panel()
    assert w.state.extra["window"] == (87, 1162)
    w.controls["buf_len"].value = 2048
    assert w.state.extra["window"] == (87, 1674)
    w.controls["buf_len"].value = 40
    assert w.error and "buf_len" in w.error
    c = rxpanels.carving_panel()
    assert c.state.result[:2] == [1536, 1536]
    t = rxpanels.threshold_panel()
    t.controls["arch"].value = "mips32"
    assert "mips32" in t.figure.axes[0].get_title()
    pp = rxpanels.paths_panel()
    assert [r.path for r in pp.state.result] == ["copy+frag", "build_skb"]
    pp.controls["old_kernel"].value = "6.18"
    assert [r.kernel for r in pp.state.result] == ["6.18", "6.1"]


def _layout_of(fig):
    """Each region's gid -> (its axes' position, x, width): what a reader sees where."""
    return {g: (tuple(round(v, 6) for v in p.axes.get_position().bounds), p.get_x(), p.get_width())
            for g, p in regions(fig).items()}


@pytest.mark.parametrize("name, control, value", [
    ("buffer_panel", "payload_len", 1472), ("skb_panel", "payload_len", 1400), ("paths_panel", "payload_len", 50),
    ("paths_panel", "old_kernel", "6.18"), ("window_panel", "buf_len", 2048), ("carving_panel", "kernel", "6.18"),
    ("carving_panel", "arch", "ppc64le"),
])
def test_panel_update_in_place_draws_what_a_fresh_figure_draws(name, control, value):
    """Reused axes (artists removed, not the figure cleared) give the same drawing as a new figure."""
    p = getattr(rxpanels, name)()
    axes_before = list(p.figure.axes)
    p.controls[control].value = value
    fresh = getattr(rxpanels, name)(**{control: value})
    assert _layout_of(p.figure) == _layout_of(fresh.figure)
    assert [ax.get_xlim() for ax in p.figure.axes] == [ax.get_xlim() for ax in fresh.figure.axes]
    assert sorted(t.get_text() for ax in p.figure.axes for t in ax.texts) == \
        sorted(t.get_text() for ax in fresh.figure.axes for t in ax.texts)
    if control != "arch":  # same layout: the axes themselves were kept
        assert p.figure.axes == axes_before


def test_panel_text_carries_what_left_the_figure():
    """The compact panel figures leave the long explanations to the panel's HTML (PanelState.text)."""
    import html
    st = rxpanels.buffer_panel_state(payload_len=1472)
    assert "tailroom = truesize − headroom − hdr_padded_len − len = 1536 − 0 − 12 − 1514 = 10 B" in st.text
    assert "tailroom 10 ≥ SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) 320 ✗" in st.text
    assert "napi_alloc_skb(GOOD_COPY_LEN) + copy" in st.text and "add_recvbuf_mergeable" in st.text
    st = rxpanels.buffer_panel_state(payload_len=3000, l4="tcp", mtu=9000)
    assert "num_buffers" in st.text
    st = rxpanels.skb_panel_state(payload_len=1472)
    text = html.unescape(st.text)
    assert "skb_tail_pointer() = 78" in text and "frags[0]: 32 KiB page" in text
    assert f"skb->truesize {st.result.skb.truesize} B = SKB_DATA_ALIGN(sizeof(struct sk_buff))" in text
    st = rxpanels.paths_panel_state(payload_len=1000)
    assert "kernel 5.12: <b>copy+frag</b>" in st.text and "kernel 6.1: <b>build_skb</b>" in st.text
    st = rxpanels.threshold_panel_state(arch="mips32")
    assert "NET_IP_ALIGN 2" in st.text and "build_skb" in st.text and "frame 1514 B" in st.text
    st = rxpanels.window_panel_state()
    assert "payload 87..1162 B (frame 129..1204)" in st.text and "GOOD_COPY_LEN 128" in st.text
    st = rxpanels.carving_panel_state()
    assert "21 buffers" in st.text and "buffer 20 takes the hole: +512 B" in st.text
    # 64 KiB pages: the page itself is the frag the driver carves
    st = rxpanels.carving_panel_state(arch="ppc64le")
    assert st.result == rx.mergeable_buf_lens(8, frag_size=65536, arch="ppc64le") and "64 KiB" in st.text


@pytest.mark.parametrize("name", ["buffer_panel", "paths_panel", "threshold_panel"])
def test_fast_text_png_looks_like_matplotlibs(name):
    """The panels' whole-string text rendering puts the same text at the same places as matplotlib's own."""
    import io

    import numpy as np
    from PIL import Image

    p = getattr(rxpanels, name)()
    fast = np.asarray(Image.open(io.BytesIO(p.image.value)).convert("L"), dtype=float)
    plain = getattr(rxpanels, name)()
    plain.fast_text = False
    plain.figure = new_figure()
    plain.update()
    ref = np.asarray(Image.open(io.BytesIO(plain.image.value)).convert("L"), dtype=float)
    assert fast.shape == ref.shape
    # same ink in the same places: antialiasing and sub-pixel placement of glyphs differ a little
    assert abs(fast.mean() - ref.mean()) < 0.5
    assert np.abs(fast - ref).mean() < 1.8  # all texts 4 px off: 2.35
