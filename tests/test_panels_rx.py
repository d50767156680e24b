"""Receive-path and GRO panels as a reader uses them: sliders that sweep and take typed values, one packet's
controls driving every view, errors shown instead of a stale figure, the PNG shown at its own width, and a
static fallback (image + summary) where widgets cannot run."""

import base64
import html
import io

import matplotlib

matplotlib.use("Agg")

import ipywidgets as W
import numpy as np
import pytest
from PIL import Image

import vnetlab
from vnetlab import rx
from vnetlab.profiles import arch as arch_profile
from vnetlab.viz.style import new_figure, regions
from vnetlab.widgets import base, gropanels, rxpanels
from vnetlab.widgets.base import SizeSlider, png_width

PANELS = {
    "packet_panel": rxpanels.packet_panel, "buffer_panel": rxpanels.buffer_panel, "skb_panel": rxpanels.skb_panel,
    "paths_panel": rxpanels.paths_panel, "threshold_panel": rxpanels.threshold_panel,
    "window_panel": rxpanels.window_panel, "carving_panel": rxpanels.carving_panel, "gro_panel": gropanels.gro_panel,
}
# The swept sizes that these panels own: payload, MTU, buffer truesize, EWMA average, packets.
SWEPT = {
    "packet_panel": ("payload_len", "mtu", "buf_len"), "buffer_panel": ("payload_len", "mtu", "buf_len"),
    "skb_panel": ("payload_len", "mtu", "buf_len"), "paths_panel": ("payload_len", "mtu", "buf_len"),
    "window_panel": ("buf_len",), "carving_panel": ("avg_pkt_len",), "gro_panel": ("payload_len", "n_packets"),
    "threshold_panel": (),
}


def _png(p):
    return np.asarray(Image.open(io.BytesIO(p.image.value)).convert("L"), dtype=float)


def test_panels_exported():
    assert {"packet_panel", "packet_panel_state", "buffer_panel", "skb_panel", "paths_panel", "threshold_panel",
            "window_panel", "carving_panel"} <= set(rxpanels.__all__)
    for name in rxpanels.__all__:
        assert hasattr(rxpanels, name)


@pytest.mark.parametrize("name", list(PANELS))
def test_swept_sizes_are_sliders_with_editable_readout(name):
    p = PANELS[name]()
    for ctl in SWEPT[name]:
        s = p.controls[ctl]
        assert isinstance(s, SizeSlider), ctl
        assert isinstance(s.slider, W.IntSlider) and s.slider.max > s.slider.min and not s.slider.continuous_update
        assert isinstance(s.readout, W.IntText) and not s.readout.disabled  # typed values are taken as typed
        assert s.slider.style.description_width == "initial"  # the label is never cut off
    for c in p.controls.values():
        # every label as wide as its text, every control as wide as it needs
        if getattr(c, "description", "") and not isinstance(c, SizeSlider):
            assert c.style.description_width == "initial" and c.layout.width in ("auto", None), c.description


@pytest.mark.parametrize("name, ctl, value", [
    ("packet_panel", "payload_len", 1472), ("packet_panel", "mtu", 1000), ("packet_panel", "buf_len", 2048),
    ("buffer_panel", "payload_len", 1162), ("skb_panel", "payload_len", 1472), ("paths_panel", "payload_len", 50),
    ("window_panel", "buf_len", 2048), ("carving_panel", "avg_pkt_len", 3000),
    ("gro_panel", "payload_len", 200), ("gro_panel", "n_packets", 10),
])
def test_moving_a_slider_changes_the_png(name, ctl, value):
    p = PANELS[name]()
    before = p.image.value
    p.controls[ctl].slider.value = value  # as dragged
    assert p.error is None, p.error
    assert p.controls[ctl].value == value and p.image.value != before


def test_payload_edge_reachable_by_slider_and_by_typing():
    """The build_skb window of a 1536-byte buffer ends at UDP payload 1162 (docs/kernel/rx.md#a5): 1162 builds, 1163
    copies; the slider steps by 1 byte and the readout takes the exact number."""
    p = rxpanels.packet_panel()
    s = p.controls["payload_len"]
    assert s.step == 1 and s.min <= 1162 <= s.max
    s.slider.value = 1162
    assert p.state.result.path == "build_skb"
    s.readout.value = 1163
    assert p.state.result.path == "copy+frag" and s.slider.value == 1163


def test_payload_range_follows_mtu_and_l4():
    """The payload slider ends at the largest unsegmented packet: MTU - iphdr 20 - udphdr 8 (or TCP 32 with
    timestamps) (include/uapi/linux/ip.h struct iphdr, include/uapi/linux/udp.h struct udphdr, tcphdr 20 +
    TCPOLEN_TSTAMP_ALIGNED 12 from include/net/tcp.h); buffer truesize steps by L1_CACHE_BYTES (64 on x86_64,
    arch/x86/include/asm/cache.h; 128 on ppc64le, arch/powerpc/include/asm/cache.h) up to its 65536-byte page
    (data/arches.toml sources)."""
    p = rxpanels.packet_panel()
    assert p.controls["payload_len"].max == 1472
    p.controls["mtu"].value = 9000
    assert p.controls["payload_len"].max == 8972
    p.controls["l4"].value = "tcp"
    assert p.controls["payload_len"].max == 8948
    p.controls["mtu"].value = 1500
    assert p.controls["payload_len"].max == 1448 and p.controls["payload_len"].value == 1000
    assert p.controls["buf_len"].step == 64
    p.controls["arch"].value = "ppc64le"
    assert p.controls["buf_len"].step == 128 and p.controls["buf_len"].max == 65536


def test_typed_value_outside_the_range_shows_the_models_error():
    p = rxpanels.packet_panel()
    p.controls["payload_len"].readout.value = 5000  # above the slider's end: kept for the model to judge
    # the slider ends at ETH_DATA_LEN 1500 - iphdr 20 - udphdr 8 (include/uapi/linux/if_ether.h, ip.h, udp.h)
    assert p.controls["payload_len"].value == 5000 and p.controls["payload_len"].slider.value == 1472
    assert p.state is None and "payload_len=5000" in p.error and "mtu=1500" in p.message.value
    assert p.image.layout.display == "none" and p.png is None
    bundle = p._repr_mimebundle_()
    assert "image/png" not in bundle and "payload_len=5000" in bundle["text/plain"]
    assert "<img" not in bundle["text/html"]
    p.controls["payload_len"].readout.value = 1000
    assert p.error is None and p.state.result.path == "build_skb" and p.image.layout.display is None


def test_bad_combination_shows_error_not_stale_figure():
    p = rxpanels.buffer_panel()
    good = p.image.value
    p.controls["mode"].value = "small"
    p.controls["mtu"].value = 9000  # receive_small has no room for jumbo frames: the driver would be in big mode
    assert p.state is None and "mtu=9000" in p.error and "Traceback" not in p.message.value
    assert p.image.layout.display == "none" and p.png is None
    p.controls["mtu"].value = 1500
    assert p.error is None and p.image.layout.display is None and p.image.value != good


def test_one_control_row_drives_every_view():
    p = rxpanels.packet_panel(payload_len=1472)
    seen = {}
    for view, _ in rxpanels.PACKET_VIEWS:
        p.controls["view"].value = view
        seen[view] = p.state
        assert p.state.params["payload_len"] == 1472
    assert regions(seen["buffer"].figure)["tailroom"].get_width() == 10
    assert "frags[0]" in regions(seen["skb"].figure)
    assert [r.kernel for r in seen["paths"].result] == ["5.12", "6.1"]
    p.controls["payload_len"].value = 1000
    assert [r.path for r in p.state.result] == ["copy+frag", "build_skb"]  # the paths view follows
    p.controls["view"].value = "buffer"
    # docs/kernel/rx.md#a5: 1000-byte UDP in a 1536-byte buffer, tailroom 1536 - 1054 = 482 -> build_skb
    assert p.state.result.path == "build_skb" and regions(p.figure)["tailroom"].get_width() == 482
    p.controls["view"].value = "skb"
    assert "frags[0]" not in regions(p.figure)
    # each view keeps its own figure (its axes are made once), the panel shows the current one
    assert len({id(f) for f in p._figures.values()}) == 3
    # the older kernel's control is shown in its view only
    assert p.controls["old_kernel"].layout.display == "none"
    p.controls["view"].value = "paths"
    assert p.controls["old_kernel"].layout.display is None


@pytest.mark.parametrize("name", list(PANELS))
def test_image_shown_at_png_width(name):
    """The PNG is shown at its own pixel width (never stretched; narrower windows scale it down)."""
    p = PANELS[name]()
    assert p.image.layout.width == f"{png_width(p.image.value)}px" == "900px"
    assert p.image.layout.max_width == "100%"


def test_static_fallback_bundle():
    """Where widgets cannot run (nbconvert HTML), a panel is its summary and its current figure."""
    p = rxpanels.packet_panel()
    b = p._repr_mimebundle_()
    assert b["application/vnd.jupyter.widget-view+json"]["model_id"] == p.model_id
    assert base64.b64decode(b["image/png"]) == p.image.value
    assert b["text/html"].count("<img") == 1 and b["image/png"] in b["text/html"]
    assert b["text/plain"].startswith("build_skb")
    p.controls["payload_len"].value = 1472
    assert base64.b64decode(p._repr_mimebundle_()["image/png"]) == p.image.value


def test_panel_state_plain():
    st = rxpanels.packet_panel_state(payload_len=1472)
    assert st.result.path == "copy+frag" and regions(st.figure)["tailroom"].get_width() == 10
    with pytest.raises(ValueError, match="view"):
        rxpanels.packet_panel_state(view="nope")
    with pytest.raises(ValueError, match="payload_len"):
        rxpanels.buffer_panel_state(payload_len=-5)
    with pytest.raises(ValueError, match="kernel"):
        rxpanels.buffer_panel_state(kernel="4.4")


def test_panel_texts():
    """Numbers from docs/kernel/rx.md#a5 (x86_64, MTU 1500): the copy path's 14-byte head after NET_SKB_PAD 64
    (B.3) ends at 78; frame 1514 = ETH_HLEN + ETH_DATA_LEN; build_skb for payload 87..1162 (frame 129..1204) in a
    1536-byte buffer; 21 buffers per 32 KiB frag, the last one with the 512-byte hole; a 64 KiB page is the frag
    itself (B.3: SKB_FRAG_PAGE_ORDER is 0 when PAGE_SIZE >= 32 KiB). mips32 keeps NET_IP_ALIGN 2 (B.3)."""
    st = rxpanels.skb_panel_state(payload_len=1472)
    assert "skb_tail_pointer() = 78" in st.text and "frags[0]: 32 KiB page" in st.text
    st = rxpanels.paths_panel_state(payload_len=1000)
    assert "kernel 5.12: <b>copy+frag</b>" in st.text and "kernel 6.1: <b>build_skb</b>" in st.text
    st = rxpanels.threshold_panel_state(arch="mips32")
    assert "NET_IP_ALIGN 2" in st.text and "frame 1514 B" in st.text
    st = rxpanels.window_panel_state()
    assert "payload 87..1162 B (frame 129..1204)" in st.text
    st = rxpanels.carving_panel_state()
    # 32768 - 20 x 1536 = 2048: the last buffer gets the 512-byte hole (add_recvbuf_mergeable, drivers/net/virtio_net.c)
    assert "the last buffer takes the hole: +512 B" in st.text
    st = rxpanels.carving_panel_state(arch="ppc64le")  # 64 KiB pages: the page itself is the frag
    assert st.result == rx.mergeable_buf_lens(8, frag_size=65536, arch="ppc64le") and "64 KiB" in st.text


def test_gro_panel_tcp_unticks_udp_gro():
    """setsockopt(UDP_GRO) is a UDP socket option: with TCP the box is cleared and disabled, GRO still runs."""
    g = gropanels.gro_panel()
    g.controls["l4"].value = "tcp"
    assert g.error is None and g.controls["udp_gro"].value is False and g.controls["udp_gro"].disabled
    # MSS 1448 = 1500 - iphdr 20 - tcphdr 20 - timestamps 12 (docs/kernel/rx.md#a5: "MSS 1448, frame 1514")
    assert g.controls["payload_len"].max == 1448


@pytest.mark.parametrize("name, control, value", [
    ("buffer_panel", "payload_len", 1472), ("skb_panel", "payload_len", 1400), ("paths_panel", "payload_len", 50),
    ("paths_panel", "old_kernel", "6.18"), ("window_panel", "buf_len", 2048), ("carving_panel", "kernel", "6.18"),
    ("carving_panel", "arch", "ppc64le"), ("packet_panel", "payload_len", 1472),
])
def test_panel_update_in_place_renders_what_a_fresh_panel_renders(name, control, value):
    p = PANELS[name]()
    p.controls[control].value = value
    fresh = PANELS[name](**{control: value})
    assert p.image.value == fresh.image.value


@pytest.mark.parametrize("name", ["buffer_panel", "paths_panel", "gro_panel"])
def test_whole_string_text_looks_like_matplotlibs(name):
    """The panels' string-at-a-time text (widgets._textrender) puts the same text at the same places as
    matplotlib's own glyph-by-glyph rendering of the same figure."""
    if not base._textrender.AVAILABLE:
        pytest.skip("matplotlib draws whole strings itself on this version")
    p = PANELS[name]()
    fast = _png(p)
    fig = new_figure()
    p.state_fn(**p.params(), fig=fig)
    ref = np.asarray(Image.open(io.BytesIO(fig._repr_png_())).convert("L"), dtype=float)
    assert fast.shape == ref.shape
    assert abs(fast.mean() - ref.mean()) < 0.5
    # same ink in the same places: ink (< 128) in one where the other is blank (> 240), as a share of all ink;
    # antialiasing differs a little (about 1 %), every text one pixel off gives 20-38 % on these figures
    ink_f, ink_r = fast < 128, ref < 128
    stray = ((ink_f & (ref > 240)).sum() + (ink_r & (fast > 240)).sum()) / (ink_f.sum() + ink_r.sum())
    assert stray < 0.03


@pytest.mark.parametrize("name, kw", [(n, {}) for n in PANELS] + [
    ("paths_panel", dict(payload_len=8000, l4="tcp", mtu=9000)), ("packet_panel", dict(view="skb", mtu=9000)),
    ("gro_panel", dict(l4="tcp", udp_gro=False, payload_len=1448)),
])
def test_panel_figure_text_fits_the_image(name, kw):
    """No label of a panel's figure runs off its PNG (titles name MTU, kernels, counts)."""
    from test_viz_rx import MIN_TEXT_PX, _visible_texts

    fig = PANELS[name](**kw).figure
    w, h = fig.bbox.width, fig.bbox.height
    shown = _visible_texts(fig)
    assert min(t.get_fontsize() * fig.dpi / 72 for t in shown) >= MIN_TEXT_PX
    cut = [t.get_text()[:40] for t in shown if (e := t.get_window_extent()).x0 < -1 or e.x1 > w + 1
           or e.y0 < -1 or e.y1 > h + 1]
    assert not cut, cut


def test_float_slider_and_default_rows():
    """Costs and rates sweep on a FloatSlider that keeps its track (the cost panel's were 0 px wide);
    by default sliders get two to a row, other controls four."""
    s = base.float_slider(12.5, 0.0, 100.0, "cache-line miss (ns)")
    assert not s.continuous_update and s.readout and s.style.description_width == "initial"
    assert s.layout.width == "430px" and s.layout.min_width == "300px"
    p = base.Panel(lambda x, y, z, fig: rxpanels.window_panel_state(buf_len=1536 + 64 * round(x), fig=fig),
                   {"x": s, "y": base.choice("a", "ab", "y"), "z": base.checkbox(False, "z")})
    rows = [[type(w).__name__ for w in row.children] for row in p.children[:-2]]
    assert rows == [["FloatSlider"], ["Dropdown", "Checkbox"]]
    before = p.image.value
    s.value = 20.0
    assert p.error is None and p.image.value != before


def test_window_slider_moves_a_cache_line_every_few_pixels():
    """Before: the window panel's buffer slider spanned 4 pages (on ppc64le 256 KiB, ~750 B per pixel). It spans
    the buffers get_mergeable_buf_len() gives (up to the 4 KiB page it clamps to, drivers/net/virtio_net.c) in
    L1_CACHE_BYTES steps, so a drag moves one step every few pixels of a ~400 px slider; typed values still work."""
    for arch in ("x86_64", "ppc64le", "mips32"):
        p = rxpanels.window_panel(arch=arch)
        s = p.controls["buf_len"]
        assert s.min <= 1536 and s.max >= 4096 - s.step and s.step == arch_profile(arch).l1_cache_bytes
        assert (s.max - s.min) / 400 <= 10, (arch, s.min, s.max)  # bytes per pixel of a 400-pixel slider
        assert (s.max - s.min) // s.step <= 120  # at least ~3 pixels per step
    p = rxpanels.window_panel()
    p.controls["arch"].value = "ppc64le"
    assert p.controls["buf_len"].step == 128 and p.controls["buf_len"].max == 4096
    p.controls["buf_len"].readout.value = 16384  # typed beyond the slider: the model still draws it
    assert p.error is None and p.state.params["buf_len"] == 16384


def test_buffer_control_in_small_mode_says_why_it_does_nothing():
    """A typed buffer truesize in small mode blanked the figure (the model refuses a pinned small buffer): the
    panel keeps the driver's buffer, greys the control out and says why, in the model's words."""
    p = rxpanels.packet_panel()
    p.controls["buf_len"].readout.value = 2048
    p.controls["mode"].value = "small"
    assert p.error is None and p.image.layout.display is None
    assert "has no effect in small mode" in p.message.value or "has no effect in small mode" in p.state.text
    with pytest.raises(ValueError) as refused:  # the model's own reason, which the panel relays
        rx.receive(1000, mode="small", buf_len=2048)
    assert "add_recvbuf_small" in str(refused.value)
    assert html.escape(str(refused.value).split(": ", 1)[1]) in p.state.text
    assert p.controls["buf_len"].slider.disabled and p.controls["buf_len"].readout.disabled
    p.controls["mode"].value = "mergeable"
    assert not p.controls["buf_len"].slider.disabled and "Note:" not in p.state.text
    assert p.state.result.buffers[0].truesize == 2048


def test_mtu_with_xdp_says_why_the_tailroom_does_not_move():
    """With XDP, page_to_skb() (5.13-6.2) counts PAGE_SIZE as the buffer's truesize, so the MTU slider moves
    nothing but the payload range: the panel says so; on 6.18 XDP_PASS bypasses page_to_skb()'s test.
    Source: docs/kernel/rx.md#a2-ii, drivers/net/virtio_net.c page_to_skb in Debian 6.1: ``truesize = headroom ?
    PAGE_SIZE : truesize``; PAGE_SIZE 4096 on x86_64 (data/arches.toml)."""
    a = rxpanels.packet_panel_state(xdp=True, mtu=1500)
    b = rxpanels.packet_panel_state(xdp=True, mtu=9000)
    assert a.result.tailroom == b.result.tailroom  # the model: nothing moves
    assert "counts PAGE_SIZE (4096 B)" in a.text and "the MTU only sets the payload range" in a.text
    assert "build_skb_from_xdp_buff" in rxpanels.packet_panel_state(xdp=True, kernel="6.18", view="skb").text
    assert "Note:" not in rxpanels.packet_panel_state().text
    paths = rxpanels.packet_panel_state(view="paths", xdp=True)
    assert paths.extra["notes"] and "6.1" in paths.text


@pytest.mark.parametrize("kernel", vnetlab.known_kernels())
def test_carving_panel_takes_every_known_kernel(kernel):
    """The kernel dropdown offers every profile: 7.x's page_pool (4 KiB pages) used to raise here because the panel
    asked for a 32 KiB frag. Expected on 7.3.4: buffers alternate 1536 / 2560 in each 4 KiB page, as the lab measured
    (data/lab/7.3.4/mergeable.json; drivers/net/virtio_net.c add_recvbuf_mergeable, Debian 7.3.4)."""
    state = rxpanels.carving_panel_state(kernel=kernel)
    assert state.result and all(isinstance(n, int) and n > 0 for n in state.result)
    if kernel in ("7.2.12", "7.3.4"):
        assert state.result[:4] == [1536, 2560, 1536, 2560]


def test_gro_panel_takes_a_flow_of_one_receive_ring_at_most():
    """Typed into the packets box, 0 raised IndexError and 10**6 ran for minutes. A flow is 1..256
    packets, one receive ring: QEMU hw/net/virtio-net.c VIRTIO_NET_RX_QUEUE_DEFAULT_SIZE 256 (rx.RX_QUEUE_SIZE);
    a UDP_GRO socket merges 64 packets per GRO skb (net/ipv4/udp_offload.c UDP_GRO_CNT_MAX, docs/kernel/gro.md#c4)."""
    g = gropanels.gro_panel()
    for typed in (0, -1, 257, 10**6):
        g.controls["n_packets"].readout.set_state({"value": typed})  # what the browser's comm message calls
        assert g.state is None and "n_packets must be an int in 1..256" in g.error, typed
        assert g.image.layout.display == "none"
    g.controls["n_packets"].readout.set_state({"value": 256})
    assert g.error is None and "256 packets → 4 GRO skb(s)</b> of 64, 64, 64, 64 packets" in g.message.value


def test_window_panel_takes_a_buffer_of_one_page_frag_at_most():
    """A typed buffer truesize of 2**31 - 1 asked numpy for 16 GiB. add_recvbuf_mergeable carves every
    buffer from one page frag and gives the last the frag's rest, so none is larger than the frag:
    skb_page_frag_refill's 32768 bytes (include/net/sock.h SKB_FRAG_PAGE_ORDER = get_order(32768),
    docs/kernel/arch.md#b3) or the 65536-byte page of ppc64le (data/arches.toml)."""
    p = rxpanels.window_panel()
    p.controls["buf_len"].readout.set_state({"value": 32768})
    assert p.error is None and p.state.params["buf_len"] == 32768
    p.controls["buf_len"].readout.set_state({"value": 32769})
    assert p.state is None and "buf_len must be an int in 1..32768" in p.error
    assert rxpanels.max_buf_len("ppc64le", "6.1") == 65536 and rxpanels.max_buf_len("x86_64", "7.3.4") == 32768


def test_a_typed_mtu_the_model_refuses_is_the_panels_message():
    """The packet panel's payload range follows the MTU (constrain); a typed MTU outside ETH_MIN_MTU..IP_MAX_MTU
    (include/uapi/linux/if_ether.h, include/net/ip.h) raised out of the browser's message there. The
    range is left as it was and the model's refusal, naming mtu, is what the panel shows."""
    p = rxpanels.packet_panel()
    for typed in (67, 70000):
        p.controls["mtu"].readout.set_state({"value": typed})
        assert p.state is None and "mtu must be an int in 68..65535" in p.error and f"got {typed}" in p.error
        assert p.controls["payload_len"].max == 1472  # ETH_DATA_LEN 1500 - iphdr 20 - udphdr 8, as before
    p.controls["mtu"].readout.set_state({"value": 9000})
    assert p.error is None and p.controls["payload_len"].max == 9000 - 20 - 8


def test_threshold_panel_offers_the_header_sizes_the_kernel_negotiates():
    """The hdr_len dropdown offered 24 on every kernel, and 6.1 refused it (the panel sweep found it). It offers
    what virtnet_probe can pick on the chosen kernel: 10 and 12 on 5.10 (drivers/net/virtio_net.c virtnet_probe,
    Debian linux-source-5.10), 10, 12, 20 on 6.1, and 24 (virtio_net_hdr_v1_hash_tunnel) from ~6.18
    (Debian linux-source-7.2 virtnet_probe); data/kernels.toml vnet_hdr_lens holds each source."""
    p = rxpanels.threshold_panel(kernel="6.1")
    assert list(p.controls["hdr_len"].options) == [10, 12, 20]
    p.controls["kernel"].set_state({"index": list(p.controls["kernel"].options).index("7.3.4")})
    assert list(p.controls["hdr_len"].options) == [10, 12, 20, 24]
    p.controls["hdr_len"].set_state({"index": 3})
    assert p.error is None and p.state.params["hdr_len"] == 24
    p.controls["kernel"].set_state({"index": list(p.controls["kernel"].options).index("5.10")})
    assert list(p.controls["hdr_len"].options) == [10, 12] and p.state.params["hdr_len"] == 12 and p.error is None
    with pytest.raises(ValueError, match="hdr_len=20 is not a virtio-net header size kernel 5.10"):
        rxpanels.threshold_panel(kernel="5.10", hdr_len=20)
