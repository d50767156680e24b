"""What the panels and figures tell a reader is what the kernel does: each test names the kernel rule and fails on
the wording or drawing that said something else (skb_tailroom with the shinfo in it, a carving control that
changed only the title, the non-XDP buffers drawn on the XDP map, a one-packet GRO flow blamed on the socket,
"tag inserted" on a NIC whose tx-vlan-hw-insert is off [fixed], "no device in software" and "1 packets", the
"on, fixed" swatch drawn like "on", an inference titled as fact, truesize labels under a neighbour's block, and a
panel that let a refused value escape its observer)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vnetlab import profiles, rx
from vnetlab.stack import build_stack
from vnetlab.viz import featuregrid, labfig, memory, routerfig, thresholds
from vnetlab.viz.style import regions
from vnetlab.widgets import explorer, gropanels, rxpanels, stackpanels
from vnetlab.widgets.base import render_png


def _plain(html_text: str) -> str:
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", html_text.replace("<br>", "\n")))


# -- notebook 10: small mode --------------------------------------------------------------------------------

def test_small_mode_prints_skb_tailroom_without_the_shinfo():
    """receive_small (drivers/net/virtio_net.c, 6.1): build_skb(buf, buflen) with buflen =
    SKB_DATA_ALIGN(GOOD_PACKET_LEN + VIRTNET_RX_PAD + hdr_len) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
    = 1600 + 320 on x86_64, so end = 1600; data at VIRTNET_RX_PAD 64 + hdr_len 12; a 1448-byte UDP payload makes
    a 1490-byte frame, tail = 76 + 1490 = 1566, and skb_tailroom() (include/linux/skbuff.h: end - tail) is 34.
    The old text printed 354 (end - tail counted to buflen, the shinfo included)."""
    r = rx.receive(1448, mode="small")
    lay = memory.rx_buffer_layout(r)
    text = " ".join(t for t, _ok in lay.condition)
    assert "skb_tailroom() = end − tail = 1600 − 1566 = 34 B" in text  # drivers/net/virtio_net.c receive_small
    assert "354" not in text.replace("354 B = skb_tailroom", "")
    assert r.skb.tailroom == 34  # the Skb's own skb_tailroom(): the panel prints the same number
    assert lay.span("tailroom").label == "354 B = skb_tailroom 34 + skb_shared_info 320"  # receive_small, as above
    st = rxpanels.packet_panel_state(view="buffer", mode="small", payload_len=1448)
    assert st.figure is not None


# -- truesize bar: each label under its own block ----------------------------------------------------------

def _truesize_labels_misplaced(fig) -> list[str]:
    """Labels of the truesize bar that do not span their own block's centre, or that overlap another label."""
    found = regions(fig)
    bad = []
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                 if "truesize:" in (t.get_gid() or "") and (t.get_gid() or "").endswith(":label")]
        bad += [f"{a} overlaps {b}" for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
                if ba.overlaps(bb)]
        for t in ax.texts:
            gid = t.get_gid() or ""
            if "truesize:" not in gid or not gid.endswith(":label"):
                continue
            rect = found[gid.removesuffix(":label")]
            centre = rect.get_x() + rect.get_width() / 2
            bb = t.get_window_extent(fig.canvas.get_renderer())
            lo, hi = ax.transData.inverted().transform([[bb.x0, 0], [bb.x1, 0]])[:, 0]
            if not lo <= centre <= hi:
                bad.append(t.get_text())
    return bad


@pytest.mark.parametrize("draw", [
    lambda: memory.draw_paths_side_by_side(1000, kernels=("5.12", "5.13")),  # notebook 00's figure
    lambda: rxpanels.packet_panel_state(view="paths", payload_len=1000).figure,  # notebook 10's tab
    lambda: rxpanels.packet_panel_state(view="skb", payload_len=1472).figure,
    lambda: rxpanels.paths_panel_state(payload_len=8000, l4="tcp", mtu=9000).figure,
], ids=["00", "10-paths", "10-skb", "10-jumbo"])
def test_truesize_labels_sit_under_their_own_blocks(draw):
    fig = draw()
    render_png(fig)  # lay the text out as shown
    assert _truesize_labels_misplaced(fig) == []


# -- notebook 10: carving ----------------------------------------------------------------------------------

def test_carving_panel_has_no_mtu_control_and_says_why():
    """mergeable_min_buf_len (drivers/net/virtio_net.c): max(DIV_ROUND_UP(hdr_len + ETH_HLEN + VLAN_HLEN +
    packet_len, ring) - hdr_len, GOOD_PACKET_LEN) is GOOD_PACKET_LEN for MTU 1500 and 65535 with a 256-entry ring,
    so the MTU changes no buffer: the panel offers no MTU slider and its text says why."""
    p = rxpanels.carving_panel()
    assert "mtu" not in p.controls
    assert "No MTU control" in p.summary() and "mergeable_min_buf_len" in p.summary()
    lens = {m: rx.mergeable_buf_lens(40, mtu=m) for m in (1500, 9000, 65535)}
    assert lens[1500] == lens[9000] == lens[65535]  # what the missing slider would have shown: nothing


@pytest.mark.parametrize("arch", ["x86_64", "ppc64le", "arm64-64k"])
def test_carving_panel_does_not_print_how_many_buffers_a_frag_gives(arch):
    """Exercise 10.4 asks how many buffers one page frag gives on 64 KiB pages: the panel draws them, it does
    not print the count."""
    st = rxpanels.carving_panel_state(arch=arch)
    text = _plain(st.text)
    titles = " ".join(ax.get_title(loc="left") for ax in st.figure.axes)
    for size in rx.rx_frag_sizes(*profiles.resolve(rx.DEFAULT_KERNEL, arch)):
        n = len(thresholds.carve(size, arch=arch))
        for shown in (text, titles):
            assert f"{n} buffers" not in shown and f"of {n}" not in shown


# -- notebook 20: the XDP map --------------------------------------------------------------------------------

def test_threshold_map_with_xdp_draws_the_xdp_buffers():
    """get_mergeable_buf_len (drivers/net/virtio_net.c, 6.1): with XDP headroom every buffer is PAGE_SIZE - room,
    room = SKB_DATA_ALIGN(VIRTIO_XDP_HEADROOM 256 + sizeof(struct skb_shared_info) 320) = 576: 4096 - 576 =
    3520. The map's dashed lines are those buffers, not the 1536/2048/2560 of the non-XDP carving."""
    st = rxpanels.threshold_panel_state(kernel="6.1", xdp=True)
    lines = [c for ax in st.figure.axes for c in ax.collections if c.get_gid() == "buffers"]
    ys = sorted({round(seg[0][1]) for c in lines for seg in c.get_segments()})
    assert ys == [3520]  # drivers/net/virtio_net.c get_mergeable_buf_len: PAGE_SIZE - room
    assert "the 3520 B buffers" in st.text and "1536" not in st.text
    plain = rxpanels.threshold_panel_state(kernel="6.1", xdp=False)
    assert "1536/2048/2560" in plain.text  # add_recvbuf_mergeable without XDP (test_viz_rx checks the carve)


# -- notebook 30: GRO of one packet ------------------------------------------------------------------------

def test_gro_panel_one_packet_reason_is_the_missing_second_packet():
    """net/core/gro.c dev_gro_receive holds the first packet of a flow; with UDP_GRO set, udp_gro_receive
    would merge a second one: one packet goes up alone because there is none, not for want of a socket."""
    st = gropanels.gro_panel_state(n_packets=1, udp_gro=True)
    text = _plain(st.text)
    assert "single packet" in text and "no second packet" in text
    assert "no UDP_GRO socket" not in text
    two = _plain(gropanels.gro_panel_state(n_packets=4, udp_gro=False).text)
    assert "no UDP_GRO socket" in two  # udp_gro_receive (net/ipv4/udp_offload.c) flushes without one


# -- notebook 50: who inserts the tag ----------------------------------------------------------------------

def test_stack_says_the_tag_is_inserted_in_software():
    """The router NIC's tx-vlan-hw-insert is off [fixed], so validate_xmit_vlan (net/core/dev.c) pushes the tag
    into the packet in software; the figure and panel say so."""
    st = build_stack(kernel="5.10", upper="vlan", nic="router")
    assert "HW_VLAN_CTAG_TX" not in st.net.devices["eth0"].features
    ps = stackpanels.stack_panel_state(kernel="5.10", upper="vlan", nic="router")
    text = _plain(ps.text)
    assert "eth0 [nic]: tag inserted in software (validate_xmit_vlan)" in text
    assert "eth0 [nic]: tag inserted," not in text
    titles = [t.get_text() for ax in ps.figure.axes for t in ax.texts]
    assert any("tag inserted in software" in t for t in titles)
    assert not any("tag inserted, passed" in t for t in titles)


# -- notebook 40: the explorer's words and legend ----------------------------------------------------------

def test_explorer_says_where_and_counts_right():
    """veth_xmit (drivers/net/veth.c) hands the GSO skb to the peer whole; the router NIC of 5.11 takes it and
    segments in hardware. Neither is "segmented at no device", and one skb is not "1 packets"."""
    veth = _plain(explorer.explorer_state(kernel="6.18", nic="veth", upper="vlan").text)
    assert "to the peer: 1 skb carrying 17 packets" in veth  # 17 = udp_segs, the explorer's default skb
    router = _plain(explorer.explorer_state(kernel="5.11", nic="router", upper="vlan").text)
    assert "hardware GSO" in router
    for text in (veth, router):
        assert "no device" not in text and "1 packets" not in text


def test_on_fixed_swatch_does_not_look_like_on():
    fig = featuregrid.draw_stack_features(kernel="5.10", nic="router", upper="vlan")
    png = np.asarray(Image.open(io.BytesIO(render_png(fig))).convert("RGB"), dtype=int)
    found = regions(fig)

    def pixels(gid):
        bb = found[gid].get_window_extent()
        h = png.shape[0]
        return png[int(h - bb.y1) + 2:int(h - bb.y0) - 1, int(bb.x0) + 2:int(bb.x1) - 1]

    on, fixed = pixels("legend:on"), pixels("legend:on, fixed")
    assert on.shape == fixed.shape
    # a hatch stroke that stands out: summed RGB difference over 150 (a grey stroke on the blue differs by ~136)
    differ = (np.abs(on - fixed).sum(axis=2) > 150).mean()
    assert differ > 0.03, f"only {differ:.1%} of the swatch's pixels stand out from the 'on' swatch"


# -- notebooks 00 and 50: inference labelled -----------------------------------------------------------------

def test_router_titles_label_the_inference():
    """That lost NAT headers made the seed's 20 Mbps is inferred (2e4ef10f5850's mail blames resegmentation)."""
    fig = labfig.draw_results()
    titles = [t.get_text() for t in fig.texts if "Seed 2" in t.get_text()]
    assert titles and all("INFERRED" in t for t in titles)
    story = routerfig.draw_router_story()
    ax_titles = [ax.get_title(loc="left") for ax in story.axes if "20 Mbps" in ax.get_title(loc="left")]
    assert ax_titles and all("inferred" in t for t in ax_titles)


# -- panels stay live on a value they refuse ---------------------------------------------------------------

@pytest.mark.parametrize("make", [gropanels.gro_panel, stackpanels.cost_panel])
def test_panel_shows_a_refused_value_and_stays_live(make):
    """A value the front end sends that the panel's range rule refuses (an L4 outside udp/tcp) is shown as a
    message in the panel, not raised out of the widget observer; the next good value draws again."""
    p = make()
    p.controls["l4"].options = ("udp", "tcp", "sctp")
    p.controls["l4"].value = "sctp"
    assert p.error is not None and "l4" in p.error and "sctp" in p.summary()
    assert p.image.layout.display == "none"
    p.controls["l4"].value = "tcp"
    assert p.error is None and p.image.layout.display is None and p.png


@pytest.mark.parametrize("feature", ["gro_fraglist", "gro_udp_fwd"])
def test_gro_panel_says_why_a_ticked_feature_changes_nothing(feature):
    """net/ipv4/udp_offload.c udp_gro_receive (6.1): is_flist = sk ? !udp_sk(sk)->gro_enabled : 1, and GRO_UDP_FWD
    is tested only when no socket matches (!sk): with a UDP_GRO socket neither box changes the GRO skb, so the
    panel says why; without the socket each one merges the flow (the box does something there)."""
    off = gropanels.gro_panel_state(udp_gro=True)
    on = gropanels.gro_panel_state(udp_gro=True, **{feature: True})
    assert on.extra["packets_per_skb"] == off.extra["packets_per_skb"]
    assert render_png(on.figure) == render_png(gropanels.gro_panel_state(udp_gro=True).figure)
    name = {"gro_fraglist": "rx-gro-list", "gro_udp_fwd": "rx-udp-gro-forwarding"}[feature]
    assert f"{name} changes nothing here" in _plain(on.text) and "changes nothing" not in _plain(off.text)
    alone = gropanels.gro_panel_state(udp_gro=False, **{feature: True})
    assert len(alone.extra["packets_per_skb"]) == 1 and "changes nothing" not in _plain(alone.text)


def test_skb_view_says_why_a_pinned_buffer_changes_nothing_for_a_copied_frame():
    """drivers/net/virtio_net.c page_to_skb (6.1): a frame of len <= GOOD_COPY_LEN (128) is copied whole into the
    head (copy = len), nothing of the buffer is added as a frag, so the sk_buff view is the same for every pinned
    buffer truesize; the panel says so (found by sweeping every control against every other's values)."""
    same = [rxpanels.skb_panel_state(payload_len=0, buf_len=b) for b in (1536, 2048)]
    assert same[0].result.path == "copy" and same[0].result.skb.nr_frags == 0
    assert render_png(same[0].figure) == render_png(same[1].figure)
    assert all(f"buffer truesize {b} B does not change this sk_buff" in _plain(s.text)
               for b, s in zip((1536, 2048), same))
    built = rxpanels.skb_panel_state(payload_len=1000, buf_len=1536)
    assert "does not change this sk_buff" not in _plain(built.text)
    assert "does not change" not in _plain(rxpanels.skb_panel_state(payload_len=0).text)  # the driver's buffer
    paths = [rxpanels.paths_panel_state(payload_len=0, buf_len=b) for b in (1536, 2048)]
    assert render_png(paths[0].figure) == render_png(paths[1].figure)
    assert "buffer truesize 2048 B does not change this sk_buff" in _plain(paths[1].text)


@pytest.mark.parametrize("kernel, why", [("6.1", "fraglist GRO is UDP's alone"),
                                         ("6.12", "tcp4_check_fraglist_gro() chains a TCP flow")])
@pytest.mark.parametrize("feature", ["gro_fraglist", "gro_udp_fwd"])
def test_gro_panel_says_why_a_udp_feature_changes_nothing_for_tcp(feature, kernel, why):
    """For a TCP flow to a local socket neither box changes the GRO skb: rx-udp-gro-forwarding is read only by
    net/ipv4/udp_offload.c udp_gro_receive; rx-gro-list is UDP's alone on 6.1 (Debian linux-source-6.1
    net/ipv4/tcp_offload.c: no is_flist), and from 6.12 (tcp_offload.c:354, data/gro.toml tcp_fraglist)
    tcp4_check_fraglist_gro uses it only where no established socket matches (found by moving every control
    against every other's values: the figure and summary did not change)."""
    off = gropanels.gro_panel_state(l4="tcp", udp_gro=False, kernel=kernel)
    on = gropanels.gro_panel_state(l4="tcp", udp_gro=False, kernel=kernel, **{feature: True})
    assert on.extra["packets_per_skb"] == off.extra["packets_per_skb"]
    assert render_png(on.figure) == render_png(off.figure)
    name = {"gro_fraglist": "rx-gro-list", "gro_udp_fwd": "rx-udp-gro-forwarding"}[feature]
    assert f"{name} changes nothing" in _plain(on.text) and "changes nothing" not in _plain(off.text)
    if feature == "gro_fraglist":
        assert why in _plain(on.text)



def test_stack_panel_says_why_fraglist_changes_nothing_for_one_segment():
    """A GRO skb of one packet is none: segment.gso_skb gives it gso_size 0 (net/core/gro.c: a lone packet is
    passed up by napi_gro_complete unmerged), so the fraglist tick draws the same stack and wire; the panel says
    why (found by moving every control against every other's values)."""
    one = [stackpanels.stack_panel_state(segs=1, fraglist=f) for f in (True, False)]
    assert render_png(one[0].figure) == render_png(one[1].figure)
    assert all("fraglist tick changes nothing with 1 segment" in _plain(s.text) for s in one)
    assert "fraglist tick changes nothing" not in _plain(stackpanels.stack_panel_state(segs=2).text)



@pytest.mark.parametrize("kw", [dict(gro="udp_fwd"), dict(segs=1)])
def test_router_panel_says_which_nics_change_nothing_without_a_gso_skb(kw):
    """Kernel 5.10 has no NETIF_F_GRO_UDP_FWD (data/kernels.toml, added in 5.12), and one packet is no GRO skb: the
    router forwards plain packets, and the NICs that draw the same figure are named as changing nothing (found by
    the control sweep: the router NIC and virtio_net); a NIC that differs (ixgbe inserts the VLAN tag itself) is
    not named. With a fraglist GRO skb no such note shows."""
    nics = [k for k, (_label, driver, params) in stackpanels.NICS.items() if driver != "veth" and not params]
    states = {n: stackpanels.router_panel_state(nic=n, **kw) for n in nics}
    pngs = {n: render_png(st.figure) for n, st in states.items()}
    for n, st in states.items():
        twins = [stackpanels.NICS[o][0] for o in nics if o != n and pngs[o] == pngs[n]]
        text = _plain(st.text)
        assert ("the NIC changes nothing between this one and " + ", ".join(twins) in text) if twins \
            else "NIC changes nothing" not in text, (n, twins)
    assert "NIC changes nothing" not in _plain(stackpanels.router_panel_state().text)



def test_cost_panel_says_why_a_cost_no_kernel_pays_changes_nothing():
    """A 0-byte UDP payload makes a 42-byte frame, below GOOD_COPY_LEN 128 (drivers/net/virtio_net.c page_to_skb):
    every kernel copies it, none calls build_skb, so the build_skb slider draws the same figure; the panel says
    so (found by the control sweep). At 1000 B the build_skb kernels (5.13+) pay it and no note shows."""
    cheap, dear = (stackpanels.cost_panel_state(payload_len=0, build_skb_ns=v) for v in (0.0, 500.0))
    assert render_png(cheap.figure) == render_png(dear.figure)
    assert "the build_skb cost changes nothing here" in _plain(cheap.text)
    assert "build_skb cost changes nothing" not in _plain(stackpanels.cost_panel_state(payload_len=1000).text)
