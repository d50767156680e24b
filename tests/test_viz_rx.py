"""Figures of the receive path, checked where the reader looks: the sizes drawn against kernel numbers, the PNG a
notebook shows (its width and its smallest text), and one drawing per figure (a redraw in place draws what a new
figure draws)."""

import io

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.text import Text
from PIL import Image

from vnetlab import rx
from vnetlab.viz import grofig, memory, style, thresholds
from vnetlab.viz.style import regions

BUFFER_GIDS = {"headroom", "vnet_hdr", "eth", "ip", "l4", "payload", "tailroom", "skb_shared_info"}


def _w(fig, gid):
    return regions(fig)[gid].get_width()


def _x(fig, gid):
    return regions(fig)[gid].get_x()


# --------------------------------------------------------------------------------------------------
# Sizes drawn against the kernel's numbers

def test_rx_buffer_seed_numbers():
    """The seed's 1000-byte UDP in a 1536-byte mergeable buffer on x86_64 (docs/kernel/rx.md#a5, the worked numbers).

    frame 1042 = ETH_HLEN 14 + struct iphdr 20 + struct udphdr 8 + 1000 (include/uapi/linux/if_ether.h, ip.h, udp.h);
    buffer 1536 = ALIGN(hdr_len 12 + min_buf_len 1518, L1_CACHE_BYTES 64) (virtio_net.c get_mergeable_buf_len);
    tailroom 482 = 1536 - headroom 0 - hdr_padded_len 12 - 1042 (virtio_net.c page_to_skb, 6.1);
    SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) = 320 (pahole on the 6.18 BTF: 320, already 64-aligned)."""
    fig = memory.draw_rx_buffer(rx.receive(1000))
    assert sum(_w(fig, g) for g in ("eth", "ip", "l4", "payload")) == 1042
    assert (_w(fig, "eth"), _w(fig, "ip"), _w(fig, "l4"), _w(fig, "payload")) == (14, 20, 8, 1000)
    assert _w(fig, "vnet_hdr") == 12
    assert _w(fig, "tailroom") == 482
    assert _w(fig, "skb_shared_info") == 320
    assert _x(fig, "skb_shared_info") + 320 == 1536 == _x(fig, "tailroom") + _w(fig, "tailroom")
    # the verdict under the drawing: all three terms hold -> build_skb()
    cond = [t.get_text() for t in fig.axes[2].texts if t.get_gid() == "condition"]
    assert "1536 − 0 − 12 − 1042 = 482 B" in cond[0] and cond[-1] == "→ build_skb()"


def test_rx_buffer_full_mtu_does_not_fit():
    """UDP 1472 (full MTU 1500): frame 1514, tailroom 1536 - 12 - 1514 = 10 < 320 -> copy path
    (docs/kernel/rx.md#a5)."""
    fig = memory.draw_rx_buffer(rx.receive(1472))
    assert _w(fig, "tailroom") == 10
    assert "shinfo_overlap" in {a.get_gid() for a in fig.axes[1].get_children()}
    cond = [t.get_text() for t in fig.axes[2].texts if t.get_gid() == "condition"]
    assert cond[3].endswith("✗") and cond[-1].startswith("→ copy+frag")


def test_window_edges_are_87_and_1162():
    """1536-byte buffer, x86_64: build_skb for UDP payload 87..1162 (frame 129..1204; docs/kernel/rx.md#a5): len >
    GOOD_COPY_LEN 128 from frame 129, tailroom >= 320 up to frame 1536 - 12 - 320 = 1204."""
    fig = thresholds.draw_path_vs_payload(1536)
    p = regions(fig)["path:build_skb"]
    assert (p.get_x() + 0.5, p.get_x() + p.get_width() - 0.5) == (87, 1162)
    ticks = list(fig.axes[1].get_xticks())
    assert 87 in ticks and 1162 in ticks


def test_carving_numbers():
    """add_recvbuf_mergeable at MTU 1500 (docs/kernel/rx.md#a5): a 32 KiB frag gives 20 buffers of 1536 and a 21st
    of 2048 (the 512-byte hole added); a 4 KiB page gives 1536 and 2560."""
    fig = thresholds.draw_mergeable_carving()
    found = regions(fig)
    widths = [found[f"32K:buf{i}"].get_width() for i in range(21)]
    assert widths == [1536] * 20 + [2048] and "32K:buf21" not in found
    assert [found["4K:buf0"].get_width(), found["4K:buf1"].get_width()] == [1536, 2560]
    assert found["32K:hole20"].get_width() == 512 and found["4K:hole1"].get_width() == 1024


def test_skb_seed_numbers():
    """build_skb around the 1536-byte buffer (docs/kernel/rx.md#a3): head =
    1536 - 320 = 1216 bytes, skb->truesize = 1216 + SKB_DATA_ALIGN(sizeof(struct sk_buff)) 256 + 320 = 1792;
    the frame is all linear (1042 B) after the 12-byte vnet header."""
    fig = memory.draw_skb(rx.receive(1000))
    found = regions(fig)
    assert found["linear"].get_width() == 1042 and found["headroom"].get_width() == 12
    assert found["truesize:head"].get_width() == 1216 and found["truesize:sk_buff"].get_width() == 256
    assert sum(p.get_width() for g, p in found.items() if g.startswith("truesize:")) == 1792
    assert "frags[0]" not in found


def test_paths_side_by_side_seed():
    """5.12 copies (napi_alloc_skb(GOOD_COPY_LEN): ETH_HLEN 14 in the head, 1028 B as a frag), 6.1 builds around
    the buffer (docs/kernel/rx.md#a5); each row has one byte scale for both kernels."""
    fig = memory.draw_paths_side_by_side(1000, kernels=("5.12", "6.1"))
    found = regions(fig)
    assert found["5.12/linear"].get_width() == 14 and found["5.12/frag0"].get_width() == 1028
    assert found["6.1/linear"].get_width() == 1042 and "6.1/frags[0]" not in found
    for gid in ("linear", "truesize:sk_buff"):
        assert found[f"5.12/{gid}"].axes.get_xlim() == found[f"6.1/{gid}"].axes.get_xlim()


# --------------------------------------------------------------------------------------------------
# Sizes drawn against the model, over many cases

@pytest.mark.parametrize("kw", [
    dict(payload_len=1000), dict(payload_len=1472), dict(payload_len=50), dict(payload_len=1000, kernel="5.12"),
    dict(payload_len=1000, xdp=True), dict(payload_len=1000, xdp=True, kernel="6.18"),
    dict(payload_len=1000, arch="ppc64le"), dict(payload_len=1000, arch="mips32"),
    dict(payload_len=1448, l4="tcp", buf_len=2048), dict(payload_len=1000, mode="big"),
])
def test_rx_buffer_regions_match_model(kw):
    r = rx.receive(**kw)
    fig = memory.draw_rx_buffer(r, l4=kw.get("l4", "udp"))
    assert BUFFER_GIDS <= set(regions(fig))
    assert sum(_w(fig, g) for g in ("eth", "ip", "l4", "payload")) == r.frame_len
    assert _w(fig, "vnet_hdr") == r.hdr_len
    assert _w(fig, "skb_shared_info") == r.shinfo_size
    assert _w(fig, "headroom") == r.buffers[0].headroom
    assert _x(fig, "eth") == r.buffers[0].headroom + r.hdr_padded_len
    if r.tailroom is not None:
        assert _w(fig, "tailroom") == r.tailroom
    lay = memory.rx_buffer_layout(r, l4=kw.get("l4", "udp"))
    assert _x(fig, "skb_shared_info") + r.shinfo_size == lay.buffer_end
    assert _x(fig, "tailroom") + _w(fig, "tailroom") == lay.buffer_end


def test_rx_buffer_big_mode_padded_header():
    """Big mode: struct padded_vnet_hdr is 32 bytes (virtio_net.c), the buffer is one 4 KiB page."""
    r = rx.receive(1000, mode="big")
    fig = memory.draw_rx_buffer(r)
    assert _w(fig, "hdr_pad") == 32 - r.hdr_len
    assert _x(fig, "eth") == 32
    assert _w(fig, "tailroom") == 4096 - 32 - 1042 == r.tailroom


def test_rx_buffer_multi_buffer_shows_first_buffer():
    r = rx.receive(3000, l4="tcp", mtu=9000)
    assert r.num_buffers > 1
    fig = memory.draw_rx_buffer(r, l4="tcp")
    assert sum(_w(fig, g) for g in ("eth", "ip", "l4", "payload")) == r.buffers[0].len - r.hdr_len
    assert _w(fig, "tailroom") == r.tailroom == 0


def test_rx_buffer_small_mode():
    r = rx.receive(1000, mode="small")
    fig = memory.draw_rx_buffer(r)
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
    for i, f in enumerate(skb.frags):
        assert f"frags[{i}]" in found
        assert _w(fig, f"frag{i}") == f.size and _w(fig, f"page{i}") == f.truesize
        assert _w(fig, f"truesize:frag{i}") == f.truesize
    assert sum(p.get_width() for g, p in found.items() if g.startswith("truesize:")) == skb.truesize


def test_paths_side_by_side_bad_input():
    with pytest.raises(ValueError, match="kernel"):
        memory.draw_paths_side_by_side(1000, kernels=("5.12", "9.9"))
    with pytest.raises(ValueError, match="payload_len"):
        memory.draw_paths_side_by_side(-1)
    with pytest.raises(ValueError, match="two kernel"):
        memory.draw_paths_side_by_side(1000, kernels=("6.1",))


def test_payload_window_other_buffers_and_kernels():
    # 2048: frame <= 2048 - 12 - 320 = 1716, payload <= 1674; 5.12 has no build_skb branch; mips32 NET_IP_ALIGN 2
    # docs/kernel/rx.md#a5: build_skb for 129 <= frame <= truesize - 332; IPv4 UDP payload = frame - 42
    assert thresholds.payload_sweep(2048).window() == (87, 1674)
    assert thresholds.payload_sweep(1536, kernel="5.12").window() is None
    assert thresholds.payload_sweep(1536, arch="mips32").window() is None


def test_threshold_grid_matches_page_to_skb():
    frames = [60, 129, 1042, 1204, 1205, 1514, 3000]
    trues = [1536, 2048, 2560]
    grid = thresholds.threshold_grid(frames, trues)
    # page_to_skb's rule at the window's edges (docs/kernel/rx.md#a5): 1204 builds in 1536, 1205 does not
    assert grid[0, frames.index(1204)] == rx.PATH_CODES["build_skb"]
    assert grid[0, frames.index(1205)] != rx.PATH_CODES["build_skb"]
    assert grid[0, frames.index(60)] == rx.PATH_CODES["copy"]
    assert grid[0, frames.index(3000)] == thresholds.INVALID


def test_threshold_map_labels_each_path_in_its_region():
    """Each path is named inside its own region of the map (a direct label, not only a colour)."""
    fig = thresholds.draw_threshold_map()
    ax = fig.axes[0]
    labels = {t.get_text(): t.get_position() for t in ax.texts if (t.get_gid() or "").startswith("label:")}
    assert {"build_skb", "copy", "copy+frag", "frame > buffer"} <= set(labels)
    for name, (frame, truesize) in labels.items():
        code = thresholds.threshold_grid([frame], [truesize])[0, 0]
        assert code == (thresholds.INVALID if name == "frame > buffer" else rx.PATH_CODES[name])
    gids = {a.get_gid() for a in ax.get_children()}
    assert {"buffers", "frames", "path_map"} <= gids
    fig = thresholds.draw_threshold_maps(kernels=("5.12", "6.1"), arches=("x86_64",))
    assert len([a for a in fig.axes if a.get_images()]) == 2


def test_path_strip_hatches_differ():
    """In the window plot each path's bars carry the path's own hatch: colour is not the only cue."""
    fig = thresholds.draw_path_vs_payload(1536)
    hatches = {g.split(":")[1].rstrip("0123456789"): p.get_hatch() for g, p in regions(fig).items()
               if g.startswith("path:")}
    assert set(hatches) == {"copy", "copy+frag", "build_skb"}
    assert len(set(hatches.values())) == 3


def test_thresholds_bad_input():
    with pytest.raises(ValueError, match="kernel"):
        thresholds.draw_threshold_map(kernel="4.19")
    with pytest.raises(ValueError, match="buf_len"):
        thresholds.payload_sweep(40)


# --------------------------------------------------------------------------------------------------
# The PNG a notebook shows

# JupyterLab's notebook output area is about 900-1000 CSS px wide at default zoom; a wider PNG is scaled down
# (its text shrinks), a narrower one in a widget was stretched. Figures are drawn at 900 px.
SHOWN_WIDTH = 900
MIN_TEXT_PX = 10.5  # glyphs of at least ~10 px

FIGURES = {
    "draw_rx_buffer": lambda: memory.draw_rx_buffer(rx.receive(1000)),
    "draw_rx_buffer multi": lambda: memory.draw_rx_buffer(rx.receive(3000, l4="tcp", mtu=9000), l4="tcp"),
    "draw_skb": lambda: memory.draw_skb(rx.receive(1472)),
    "draw_skb 60000": lambda: memory.draw_skb(rx.receive(60000, l4="tcp")),
    "draw_paths_side_by_side": lambda: memory.draw_paths_side_by_side(1000),
    "draw_threshold_map": lambda: thresholds.draw_threshold_map(),
    "draw_threshold_map xdp ppc64le": lambda: thresholds.draw_threshold_map("6.18", "ppc64le", headroom=256),
    "draw_rx_buffer small": lambda: memory.draw_rx_buffer(rx.receive(1000, mode="small")),
    "draw_rx_buffer xdp": lambda: memory.draw_rx_buffer(rx.receive(1400, xdp=True, kernel="5.13")),
    "draw_paths_side_by_side 60000": lambda: memory.draw_paths_side_by_side(60000, l4="tcp"),
    "draw_mergeable_carving xdp": lambda: thresholds.draw_mergeable_carving(kernel="6.18", xdp=True, mtu=9000),
    "draw_threshold_maps": lambda: thresholds.draw_threshold_maps(),
    "draw_path_vs_payload": lambda: thresholds.draw_path_vs_payload(),
    "draw_mergeable_carving": lambda: thresholds.draw_mergeable_carving(),
    "draw_gro_fill": lambda: grofig.draw_gro_fill(grofig.gro_fill("build_skb", n_packets=40)),
    "draw_packets_per_skb": lambda: grofig.draw_packets_per_skb(
        grofig.packets_per_skb(kernels=("5.10", "6.1"), payloads=(400, 1472), n_packets=256)),
}


def test_every_public_draw_function_is_covered():
    names = {n.split(" ")[0] for n in FIGURES}
    for mod in (memory, thresholds, grofig):
        assert {n for n in dir(mod) if n.startswith("draw_")} <= names, mod.__name__


def _visible_texts(fig):
    """Text artists a reader sees: non-empty, visible, in a drawn axes (tick labels of hidden axes excluded)."""
    fig.canvas.draw()  # tick labels exist once drawn
    out = []
    for t in fig.findobj(Text):
        if not t.get_text().strip() or not t.get_visible():
            continue
        ax = t.axes
        if ax is not None and not ax.axison and t not in ax.texts:
            continue
        if t.get_window_extent().width == 0:
            continue
        out.append(t)
    return out


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_shows_as_png_at_shown_width_with_legible_text(name):
    fig = FIGURES[name]()
    assert isinstance(fig, style.ShownFigure)
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(io.BytesIO(png)).size[0] == SHOWN_WIDTH
    shown = _visible_texts(fig)
    small = sorted({(t.get_fontsize() * fig.dpi / 72, t.get_text()[:30]) for t in shown})[:3]
    assert small[0][0] >= MIN_TEXT_PX, small
    # no text runs off the image (cut off where the PNG ends)
    w, h = fig.bbox.width, fig.bbox.height
    cut = [t.get_text()[:40] for t in shown if (e := t.get_window_extent()).x0 < -1 or e.x1 > w + 1
           or e.y0 < -1 or e.y1 > h + 1]
    assert not cut, cut


def test_figures_deterministic():
    a = memory.draw_rx_buffer(rx.receive(1000))._repr_png_()
    b = memory.draw_rx_buffer(rx.receive(1000))._repr_png_()
    assert a == b


def _drawn(fig):
    """What a reader sees: each region's gid -> (axes position, x, width), texts, titles, limits."""
    boxes = {g: (tuple(round(v, 6) for v in p.axes.get_position().bounds), p.get_x(), p.get_width(), p.get_hatch())
             for g, p in regions(fig).items()}
    texts = sorted(t.get_text() for t in fig.texts) + sorted(t.get_text() for ax in fig.axes for t in ax.texts)
    titles = [(ax.get_title("left"), ax.get_title()) for ax in fig.axes]
    return boxes, texts, titles, [(ax.get_xlim(), ax.get_ylim()) for ax in fig.axes], fig.get_size_inches().tolist()


@pytest.mark.parametrize("draw, first, second", [
    (lambda r, fig=None: memory.draw_rx_buffer(r, fig=fig), rx.receive(1000), rx.receive(1472)),
    (lambda r, fig=None: memory.draw_rx_buffer(r, fig=fig), rx.receive(1000), rx.receive(3000, mtu=9000)),
    (lambda r, fig=None: memory.draw_skb(r, fig=fig), rx.receive(1000), rx.receive(1472)),
    (lambda p, fig=None: memory.draw_paths_side_by_side(p, fig=fig), 1000, 50),
    (lambda k, fig=None: thresholds.draw_threshold_map(k, fig=fig), "6.1", "5.12"),
    (lambda b, fig=None: thresholds.draw_path_vs_payload(b, fig=fig), 1536, 2048),
    (lambda a, fig=None: thresholds.draw_mergeable_carving(arch=a, fig=fig), "x86_64", "ppc64le"),
])
def test_redraw_in_place_draws_what_a_new_figure_draws(draw, first, second):
    """One drawing per figure: a figure redrawn in place (the widget path) equals a new one (the notebook path)."""
    fig = draw(first)
    again = draw(second, fig=fig)
    assert again is fig
    assert _drawn(fig) == _drawn(draw(second))


def test_threshold_maps_mark_each_kernels_own_buffers_through_7x():
    # drivers/net/virtio_net.c add_recvbuf_mergeable at the EWMA floor (MTU 1500, 1536-byte buffers): 6.1 carves
    # 32 KiB frags (hole buffer 2048) with a 4 KiB fallback (2560); 6.18 puts a 16-byte virtnet_rq_dma first
    # (2032, 2544); Debian 7.2.12 / 7.3.4 use an order-0 page_pool: (0, 1536), (1536, 2560), as the lab measured
    # (data/lab/7.3.4/mergeable.json page_to_skb truesize: 35 x 1536, 35 x 2560).
    assert thresholds.marked_buffers("6.1") == (1536, 2048, 2560)
    assert thresholds.marked_buffers("6.18") == (1536, 2032, 2544)
    assert thresholds.marked_buffers("7.3.4") == thresholds.marked_buffers("7.2.12") == (1536, 2560)
    kernels = ("5.12", "5.13", "6.18", "7.3.4")
    fig = thresholds.draw_threshold_maps(kernels=kernels, arches=("x86_64",))
    for ax, k in zip(fig.axes, kernels):
        (lines,) = [c for c in ax.collections if c.get_gid() == "buffers"]
        ys = sorted({round(float(seg[0][1])) for seg in lines.get_segments()})
        assert tuple(ys) == thresholds.marked_buffers(k), k
        assert ax.get_title().startswith(f"{k}, x86_64")


@pytest.mark.parametrize("call, match", [
    (lambda: thresholds.threshold_grid([100.5], [1536]), r"frame_lens must hold whole numbers"),
    (lambda: thresholds.carve(count=-1), r"count must be an int in 0..65536"),
    (lambda: memory.frame_parts(-1), r"frame_len must be an int in 0\.\."),
    (lambda: grofig.receive_fill(1000, n_packets=0), r"n_packets must be an int in 1..16384"),
    (lambda: grofig.packet_color(-1), r"i must be an int >= 0"),
])
def test_viz_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_rx_buffer_figure_draws_rx_xdp_room_before_build_skb():
    """5.12 with XDP: the figure's tailroom is what vnetlab.rx says the buffer holds. drivers/net/virtio_net.c
    add_recvbuf_mergeable (5.12): the buffer ends at len + room = PAGE_SIZE (4096) from its start; the frame
    (1000-byte UDP payload: 1042 bytes) starts after VIRTIO_XDP_HEADROOM 256 and the 12-byte header, so the
    tailroom drawn is 4096 - 256 - 12 - 1042 = 2786 (2210 if the 576-byte XDP room were left out)."""
    r = rx.receive(1000, xdp=True, kernel="5.12")
    fig = memory.draw_rx_buffer(r)
    assert _w(fig, "tailroom") == 2786 == r.buffer_end - 256 - 12 - 1042  # 5.12 virtio_net.c, as above
    assert _x(fig, "skb_shared_info") + r.shinfo_size == r.buffer_end
