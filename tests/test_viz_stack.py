"""GRO, device-stack and cost figures and their panels: regions exist and what is drawn is what the model says."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets
import pytest

from vnetlab import cost, gro, router
from vnetlab.stack import build_stack, device_cells, feature_states, send_gso
from vnetlab.viz import costfig, featuregrid, grofig, labfig, routerfig, stacks
from vnetlab.viz.style import MIN_FONT, regions
from vnetlab.widgets import explorer, gropanels, stackpanels
from vnetlab.widgets.base import SizeSlider


def _slots(fig, key, skb_prefix=":frags["):
    return {g: p for g, p in regions(fig).items() if g.startswith(key + skb_prefix)}


# ---------------------------------------------------------------------------------------------- GRO fill

@pytest.fixture(scope="module")
def head_fills():
    return grofig.head_case_fills()


def test_head_cases_first_skb_counts(head_fills):
    # docs/kernel/gro.md#c3 (net/core/gro.c skb_gro_receive, 6.1): packets in the first sk_buff: build_skb 18,
    # ETH_HLEN copy 17, 128-byte page-frag head (5.10) 9, 128-byte kmalloc head (5.11) 1
    assert [f.first_skb_packets for f in head_fills] == [18, 17, 9, 1]
    for f in head_fills:
        assert f.first_skb_packets == f.trace.packets_in_first_skb()
        assert f.packets == f.skb.gso_segs


def test_gro_fill_slots_match_model(head_fills):
    fig = grofig.draw_gro_fill(head_fills)
    found = regions(fig)
    for f in head_fills:
        assert f"{f.key}:linear" in found
        slots = _slots(fig, f.key)
        assert len(slots) == f.skb.nr_frags
        free = [g for g in found if g.startswith(f"{f.key}:free_slot[")]
        assert len(slots) + len(free) == f.max_skb_frags
        chain = [g for g in found if g.startswith(f"{f.key}:frag_list[")]
        assert len(chain) == min(len(f.skb.frag_list), grofig._CHAIN_SHOWN)
        # each slot is coloured by the packet the model says it came from
        for i, p in enumerate(f.sk_buffs[0].slot_packets):
            assert matplotlib.colors.to_hex(found[f"{f.key}:frags[{i}]"].get_facecolor()) == grofig.packet_color(p)


def test_gro_fill_ownership_per_case(head_fills):
    # docs/kernel/gro.md#c3: case (a) the first packet's head plus one stolen head per slot (17 slots); (c) one frag per
    # packet; (b2) two slots per packet after the first's one; (b1) every packet on frag_list
    build, eth, pf, km = head_fills
    assert build.sk_buffs[0].head_packet == 0 and build.sk_buffs[0].slot_packets == list(range(1, 18))
    assert eth.sk_buffs[0].head_packet is None and eth.sk_buffs[0].slot_packets == list(range(17))
    assert pf.sk_buffs[0].slot_packets == [0] + [p for p in range(1, 9) for _ in (0, 1)]
    assert km.sk_buffs[0].slot_packets == [0] and all(len(m.packets) == 1 for m in km.sk_buffs[1:])
    for f in head_fills:
        assert [s.nr_frags for s in f.skb.walk()] == [len(s.slot_packets) for s in f.sk_buffs]


def test_packets_per_skb_bars_equal_model():
    pts = grofig.packets_per_skb(kernels=("5.10", "6.1"), payloads=(400, 1472), n_packets=512)
    fig = grofig.draw_packets_per_skb(pts)
    found = regions(fig)
    for p in pts:
        first = found[f"{p.kernel}/{p.payload_len}:first_skb"]
        chained = found[f"{p.kernel}/{p.payload_len}:frag_list"]
        assert first.get_height() == p.first_skb_packets
        assert first.get_height() + chained.get_height() == pytest.approx(p.packets_per_skb)
    by = {(p.kernel, p.payload_len): p for p in pts}
    # docs/kernel/gro.md#c3: 400-byte UDP is a 128-byte page-frag head copy on 5.10 (9) and build_skb on 6.1 (18);
    # gro.md#c4:
    # UDP GRO stops at UDP_GRO_CNT_MAX
    assert by[("5.10", 400)].first_skb_packets == 9 and by[("6.1", 400)].first_skb_packets == 18
    assert by[("6.1", 400)].packets_per_skb == gro.UDP_GRO_CNT_MAX


def test_gro_panel_state_changes_with_controls():
    a = gropanels.gro_panel_state(kernel="6.1")
    b = gropanels.gro_panel_state(kernel="5.11")
    # docs/kernel/gro.md#c3: build_skb (6.1) 18 packets in the first sk_buff, the 5.11 kmalloc head 1
    assert a.result.first_skb_packets == 18 and b.result.first_skb_packets == 1
    assert len(_slots(b.figure, b.result.key)) == b.result.skb.nr_frags
    off = gropanels.gro_panel_state(udp_gro=False)
    assert off.extra["packets_per_skb"] == [1] * gro.UDP_GRO_CNT_MAX and "did not aggregate" in off.text
    fl = gropanels.gro_panel_state(udp_gro=False, gro_fraglist=True)
    assert "FRAGLIST" in fl.result.skb.gso_type and fl.result.frag_list_len == gro.UDP_GRO_CNT_MAX - 1
    with pytest.raises(ValueError, match="GRO_UDP_FWD"):
        gropanels.gro_panel_state(kernel="5.10", gro_udp_fwd=True)


def test_gro_panel_widget_updates_in_place():
    panel = gropanels.gro_panel(kernel="6.1")
    fig = panel.figure
    png = panel.image.value
    panel.controls["kernel"].value = "5.10"
    assert panel.error is None and panel.figure is fig and panel.image.value != png
    assert panel.state.result.first_skb_packets == 9  # docs/kernel/gro.md#c3 (b2): 5.10's page-frag head
    panel.controls["gro_udp_fwd"].value = True
    assert panel.error and "GRO_UDP_FWD" in panel.error and panel.image.layout.display == "none"


# ---------------------------------------------------------------------------------------------- stacks

@pytest.mark.parametrize("upper", ["vlan", "macvlan", "bond", "bridge"])
def test_stacks_side_by_side_match_send(upper):
    fig = stacks.draw_stacks_side_by_side(upper=upper)
    found = regions(fig)
    texts = {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}
    for col, k in enumerate(("5.10", "5.11")):
        st = build_stack(kernel=k, upper=upper)
        skb, tx = send_gso(st)
        assert f"{col}:gso_skb" in found
        n = len(tx.segments)
        assert texts[f"{col}:wire:label"].startswith(f"wire: {n} packet")
        for h in tx.hops:
            assert f"{col}:{h.name}" in found
            dev = st.net.devices[h.name]
            shown = dev.ethtool_k()  # expected: netdev's ethtool -k of the device
            for name, eth, on, fixed in feature_states(dev):
                assert (on, fixed) == shown[eth]
                lamp = found[f"{col}:{h.name}:{name}"]
                word = f"{'on' if on else 'off'}{' [fixed]' if fixed else ''}"
                assert texts[f"{col}:{h.name}:{name}:label"] in (f"{eth}\n{word}", f"{eth}\noff [requested on]")
                state = device_cells(dev, (name,))[0].state
                assert matplotlib.colors.to_hex(lamp.get_facecolor()) == featuregrid.STATE_STYLE[state][0].lower()
                assert (lamp.get_hatch() is not None) == (fixed or state == "requested on, off")
    # the patch: 5.10 segments in software at the upper device (not the bridge: full GSO_MASK), 5.11 does not
    before = send_gso(build_stack(kernel="5.10", upper=upper))[1]
    after = send_gso(build_stack(kernel="5.11", upper=upper))[1]
    assert after.segmented_at is None
    assert (before.segmented_at is None) == (upper == "bridge")


def test_veth_column_counts_the_packets_the_gso_skb_carries():
    # drivers/net/veth.c veth_xmit hands the skb to the peer whole: on 5.11 the macvlan passes the 44-segment
    # fraglist GRO skb, so one skb carrying the 44 packets sent (send_gso's segs) crosses the pair
    fig = stacks.draw_stacks_side_by_side(upper="macvlan", nic="veth", segs=44)
    texts = {t.get_gid(): t.get_text().replace("\n", " ") for ax in fig.axes for t in ax.texts if t.get_gid()}
    assert texts["1:wire:label"].startswith("to the peer: 1\u00a0skb carrying 44\u00a0packets")
    assert texts["0:wire:label"].startswith("to the peer: 44\u00a0skbs carrying 44\u00a0packets")


def test_stack_panel_state_ethtool_K():
    # 2e4ef10f5850 (v5.11): the VLAN keeps GSO_UDP_L4 through NETIF_F_GSO_SOFTWARE; turned off, or fixed off on
    # 5.10 (vlan_dev_fix_features), validate_xmit_skb segments at eth0.10
    s = stackpanels.stack_panel_state(kernel="5.11")
    assert s.result.segmented_at is None
    s2 = stackpanels.stack_panel_state(kernel="5.11", ethtool=[("eth0.10", {"tx-udp-segmentation": False})])
    assert s2.result.segmented_at == "eth0.10"
    texts = [t.get_text() for ax in s2.figure.axes for t in ax.texts if t.get_gid() == "0:wire:label"]
    assert texts == [f"wire: {len(s2.result.segments)} packets (segmented in software at eth0.10)"]
    # a fixed feature: the command is refused (as ethtool -K fails) and the drawing is that of no command
    s3 = stackpanels.stack_panel_state(kernel="5.10", ethtool=[("eth0.10", {"tx-udp-segmentation": True})])
    assert s3.extra["refused"] and "tx-udp-segmentation" in s3.extra["refused"][0][1]
    assert "refused" in s3.text
    assert s3.result.segmented_at == stackpanels.stack_panel_state(kernel="5.10").result.segmented_at


def test_stack_panel_widget_toggles():
    panel = stackpanels.stack_panel(kernel="5.11")
    assert panel.error is None and panel.state.result.segmented_at is None
    box = panel.toggles[("eth0.10", "GSO_UDP_L4")]
    assert box.value is True and box.description == "on" and box.icon == ""
    box.value = False
    assert panel.state.result.segmented_at == "eth0.10"
    panel.controls["kernel"].value = "5.10"  # fresh devices: the vlan's GSO_UDP_L4 is fixed off
    box = panel.toggles[("eth0.10", "GSO_UDP_L4")]
    assert box.value is False and box.icon == "lock"
    assert panel.state.result.segmented_at == "eth0.10"
    png = panel.image.value
    box.value = True
    assert box.value is False and "refused" in panel.message.value and panel.image.value == png
    panel.controls["upper"].value = "none"
    panel.controls["nic"].value = "veth"  # one device: the skb goes to the peer
    assert panel.error is None and panel.state.result.hops[0].kind == "veth"
    assert {d for d, _f in panel.toggles} == {"veth0"}


def test_stack_panel_segments_slider_follows_the_gro_cap():
    # segment.max_gro_segs: p->len + len < 64 KiB (net/core/gro.c skb_gro_receive) and UDP_GRO_CNT_MAX 64
    panel = stackpanels.stack_panel(kernel="6.1", segs=44, gso_size=1472)
    segs = panel.controls["segs"]
    assert segs.max == (65536 - 1 - 28) // 1472 == 44
    png = panel.image.value
    panel.controls["gso_size"].value = 1000
    assert segs.max == min(64, (65536 - 1 - 28) // 1000) == 64 and segs.value == 44 and panel.image.value != png
    segs.value = 64
    panel.controls["gso_size"].value = 1472  # the value is clamped to the new maximum, one redraw, no error
    assert segs.value == 44 and panel.error is None
    assert panel.state.extra["skb"].gso_segs == 44


# ---------------------------------------------------------------------------------------------- costs

def test_rx_rate_bars_equal_model_and_measurement_marked():
    fig = costfig.draw_rx_rate()
    found = regions(fig)
    cal = cost.calibrate()
    m = cal.measurement
    for k in cost.KERNELS:
        assert found[f"{k}:rate"].get_height() == pytest.approx(cost.rx_cost(m.traffic, k, cal.two_param).pps)
        assert found[f"{k}:rate:1p"].get_height() == pytest.approx(cost.rx_cost(m.traffic, k, cal.one_param).pps)
    lines = {ln.get_gid(): ln for ax in fig.axes for ln in ax.lines}
    # patch (1)'s commit message (fb32856b16ad): 956,864 -> 1,158,465 pps (docs/kernel/rx.md#a5)
    assert lines["5.11:measured"].get_ydata()[0] == 956864
    assert lines["5.13:measured"].get_ydata()[0] == 1158465


def test_cost_breakdown_stacks_sum_to_ns_per_packet():
    fig = costfig.draw_cost_breakdown()
    found = regions(fig)
    c = cost.calibrate().two_param
    for k in cost.KERNELS:
        r = cost.rx_cost(cost.seed_traffic(), k, c)
        drawn = {g.split(":", 1)[1]: p.get_height() for g, p in found.items() if g.startswith(k + ":")}
        assert sum(drawn.values()) == pytest.approx(r.ns_per_packet)
        per = r.per_op_ns
        for group, ops in cost.OP_GROUPS.items():
            alone = {op: drawn[op] for op in ops if op in drawn}
            assert alone == pytest.approx({op: per[op] for op in alone})
            other = drawn.get(f"other {group} ops", 0.0)
            assert other == pytest.approx(sum(per[op] for op in ops if op not in alone))
        assert "stack/udp_no_socket" in drawn  # the dominant op is always named


def test_router_story_numbers_and_bars():
    story = routerfig.router_story()
    found = regions(routerfig.draw_router_story(story))
    # MEASURED: the seed's commit message (2e4ef10f5850): 20 Mbps before, 1 Gbps after
    assert found["story:measured_before"].get_height() == 20e6
    assert found["story:measured_after"].get_height() == 1e9
    # the mechanism: before c3df39ac9b0e only the head segment is NATed, so 1 in N arrives; N is the GRO skb's
    # packet count, 44 for 1472-byte datagrams under the 64 KiB cap ((65536 - 1 - 28) // 1472, gro.c)
    assert story.packets_per_gro_skb == 44
    assert story.delivery_model == tuple(1 / n for n in story.delivery_n)
    assert found["story:mechanism_before"].get_height() == pytest.approx(story.model_before / 44)
    # the bar is the workbook's one "1 Gbps / N" number, router.lost_segments(), not a second computation
    assert story.mechanism_before == router.lost_segments().goodput_bps
    # the measured ratio 1/50 lies within 15 % of the mechanism's 1/44 and far from the cost-only bound
    assert story.measured_ratio == pytest.approx(story.model_ratio, rel=0.15)
    assert story.bound_gap < 10 < 50
    assert found["story:bound_before"].get_height() == story.bound_before > story.measured_before * 5
    assert story.segmented_at == "eth0.10"
    # after the patch the GRO skb passes whole: no segment is lost and the link is the limit
    assert found["story:model_after"].get_height() == pytest.approx(story.model_after)
    # source: data/router_costs.toml link_bps 1e9 (commit 2e4ef10f5850's 1 Gbps); 0.9 leaves room for framing
    assert story.model_after > 0.9e9


def test_router_story_kinds_differ_without_colour():
    fig = routerfig.draw_router_story()
    found = regions(fig)
    look = {g: (p.get_hatch(), p.get_linestyle(), matplotlib.colors.to_hex(p.get_facecolor()))
            for g, p in found.items() if g.startswith("story:")}
    assert look["story:measured_before"] == look["story:measured_after"]
    assert len({look["story:measured_before"], look["story:model_before"], look["story:bound_before"],
                look["story:mechanism_before"]}) == 4
    # and each bar says what it is under it
    ticks = [t.get_text().split("\n")[0] for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["MEASURED", "MODEL", "BOUND", "MODEL", "MEASURED", "MODEL"]


def test_router_panel_state_and_widget():
    s = stackpanels.router_panel_state(kernel="5.10")
    assert s.result.segmented_at == "eth0.10"
    assert regions(s.figure)["router:5.10"].get_height() == pytest.approx(s.extra["throughput"].goodput_bps)
    lost = stackpanels.router_panel_state(kernel="5.10", drop_untranslated=True)
    # docs/kernel/history.md#f: before c3df39ac9b0e 1 datagram of the 44 (1472-byte, 64 KiB GRO cap) is NATed
    assert lost.extra["throughput"].translated_fraction == pytest.approx(1 / 44)
    assert "changes nothing" not in lost.text
    # where every datagram is NATed the tick changes no bar: the panel says why (the kernel has c3df39ac9b0e,
    # udp_gso_list_nat_fix; or nothing resegments the skb), never silently
    fixed = stackpanels.router_panel_state(kernel="6.1", nic="virtio_net", drop_untranslated=True)
    assert fixed.extra["throughput"].translated_fraction == 1 and "changes nothing here" in fixed.text
    assert "udp_gso_list_nat_fix" in fixed.text
    whole = stackpanels.router_panel_state(kernel="5.11", drop_untranslated=True)
    assert "changes nothing here" in whole.text and "takes it whole" in whole.text
    panel = stackpanels.router_panel()
    panel.controls["kernel"].value = "5.11"
    assert panel.error is None and panel.state.result.segmented_at is None
    panel.controls["gro"].value = "off"
    assert panel.state.result.gro_skbs == panel.state.result.packets_in
    panel.controls["segs"].value = 10
    assert panel.state.result.packets_in == 10


def test_cost_panel_sliders_change_result():
    a = stackpanels.cost_panel_state(kernel="5.13")
    b = stackpanels.cost_panel_state(kernel="5.13", stack_ns=300.0)
    assert b.result.ns_per_packet < a.result.ns_per_packet
    assert regions(b.figure)["5.13:stack/udp_no_socket"].get_height() == pytest.approx(300.0)  # the stack_ns set
    with pytest.raises(ValueError):
        stackpanels.cost_panel_state(stack_ns=-1.0)
    panel = stackpanels.cost_panel()
    before = panel.state.result.pps
    panel.controls["cache_line_miss_ns"].value = 0.0
    assert panel.error is None and panel.state.result.pps > before


def test_figures_are_deterministic(tmp_path):
    from vnetlab.widgets.base import render_png

    for make in (lambda: grofig.draw_gro_fill(grofig.head_case_fills()),
                 lambda: stacks.draw_stacks_side_by_side(upper="bond")):
        assert render_png(make()) == render_png(make())


def test_cost_panel_draws_what_the_notebook_figure_draws():
    # one drawing: the panel's figure is draw_cost_breakdown with the panel's traffic and costs
    s = stackpanels.cost_panel_state(kernel="5.11", payload_len=300, stack_ns=500.0)
    c = stackpanels._calibrated().with_values({"stack/udp_no_socket": 500.0}, "cost panel")
    static = costfig.draw_cost_breakdown(s.result.ops.traffic, costs=c, highlight="5.11")
    assert _drawn(s.figure) == _drawn(static)
    labels = {t.get_gid(): t.get_text() for ax in s.figure.axes for t in ax.texts if t.get_gid()}
    assert labels["traffic_label"].startswith("UDP 300 B, no socket: receive cost per operation")
    for k in cost.KERNELS:  # the label is wrapped to its kernel's width: the same words, line breaks aside
        assert labels[f"{k}:path_label"].split() == costfig._head_label(s.extra["all"][k], float("inf")).split()
    bars = {g for g in regions(s.figure) if not g.startswith("legend:")}
    legend = {g.split(":", 1)[1] for g in regions(s.figure) if g.startswith("legend:")}
    assert legend == {g.split(":", 1)[1] for g in bars}


def test_cost_panel_payload_slider_range_follows_l4():
    # docs/kernel/rx.md#a5: MSS 1448 at MTU 1500; TCPOLEN_TSTAMP_ALIGNED 12 from include/net/tcp.h
    # cost.max_payload: one IPv4 packet at MTU 1500: UDP 1500 - 20 - 8, TCP 1500 - 20 - 32 (timestamps)
    p = stackpanels.cost_panel()
    assert p.controls["payload_len"].max == 1472 and isinstance(p.controls["payload_len"], SizeSlider)
    p.controls["payload_len"].value = 1472
    p.controls["l4"].value = "tcp"
    assert p.controls["payload_len"].max == 1448 and p.controls["payload_len"].value == 1448 and p.error is None


def _drawn(fig):
    """What a reader sees: each region's gid -> (axes position, x, y, width, height), the texts, the axis limits."""
    boxes = {g: (tuple(round(v, 6) for v in p.axes.get_position().bounds), p.get_x(), p.get_y(), p.get_width(),
                 p.get_height()) for g, p in regions(fig).items()}
    texts = sorted(t.get_text() for ax in fig.axes for t in ax.texts)
    titles = [(ax.get_title("left"), ax.get_title()) for ax in fig.axes]
    return boxes, texts, titles, [(ax.get_xlim(), ax.get_ylim()) for ax in fig.axes]


@pytest.mark.parametrize("make, control, value", [
    (lambda **kw: gropanels.gro_panel(**kw), "payload_len", 200),
    (lambda **kw: gropanels.gro_panel(**kw), "kernel", "5.11"),
    (lambda **kw: stackpanels.stack_panel(**kw), "upper", "bond"),
    (lambda **kw: stackpanels.stack_panel(**kw), "gso_size", 1000),
    (lambda **kw: explorer.explorer_panel(**kw), "upper", "vlan_on_bond"),
    (lambda **kw: stackpanels.router_panel(**kw), "kernel", "5.11"),
    (lambda **kw: stackpanels.router_panel(**kw), "gro", "off"),
    (lambda **kw: stackpanels.router_panel(**kw), "segs", 20),
    (lambda **kw: stackpanels.cost_panel(**kw), "payload_len", 300),
    (lambda **kw: stackpanels.cost_panel(**kw), "kernel", "5.10"),
])
def test_panel_update_in_place_draws_what_a_fresh_panel_draws(make, control, value):
    """Reused axes (artists removed, not the figure cleared) give the same drawing as a new panel."""
    p = make()
    fig, axes_before, layout = p.figure, list(p.figure.axes), getattr(p.figure, "_vnetlab_layout", None)
    p.controls[control].value = value
    assert p.error is None and p.figure is fig
    fresh = make(**{control: value})
    assert _drawn(p.figure) == _drawn(fresh.figure)
    assert p.image.value == fresh.image.value
    if layout is not None and getattr(fig, "_vnetlab_layout", None) == layout:  # same layout: axes are reused
        assert p.figure.axes == axes_before


def test_gro_panel_text_carries_what_left_the_figure():
    s = gropanels.gro_panel_state(kernel="5.10", payload_len=200)
    assert s.result.label in s.text and "skb_shinfo(skb)-&gt;frags[0..MAX_SKB_FRAGS-1]" in s.text
    title = s.figure.axes[0].get_title("left")
    # docs/kernel/gro.md#c3 (b2): 5.10's page-frag head, 9 packets fill MAX_SKB_FRAGS 17 (arch.md#b2)
    assert title.startswith("kernel 5.10, x86_64: 9 packets in the first sk_buff (nr_frags 17/17)")
    assert not s.figure.texts  # no suptitle: the key is in the HTML
    static = grofig.draw_gro_fill(s.result)
    assert static._suptitle.get_text() == grofig.GRO_FILL_KEY
    assert {g: p.get_facecolor() for g, p in regions(static).items()} == \
        {g: p.get_facecolor() for g, p in regions(s.figure).items()}


# ---------------------------------------------------------------------------------------------- legibility

def _shown_texts(fig):
    """Every non-empty text a reader sees: texts, titles, axis labels, tick labels in view, legend entries."""
    out = list(fig.texts)  # the suptitle is one of them
    for lg in fig.legends:
        out += lg.get_texts()
    for ax in fig.axes:
        out += [*ax.texts, ax.title, ax._left_title, ax._right_title]
        if not ax.axison:
            continue
        out += [ax.xaxis.label, ax.yaxis.label]
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(lim), max(lim)
            out += [t for t, loc in zip(axis.get_ticklabels(), axis.get_majorticklocs()) if lo <= loc <= hi]
        if ax.legend_ is not None:
            out += ax.legend_.get_texts()
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def _legibility_problems(fig):
    """Texts smaller than MIN_FONT, cut off by the figure's edge, region labels sticking out of their region, texts
    overlapping."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw(canvas.get_renderer())
    r = canvas.get_renderer()
    fb, regs, problems = fig.bbox, regions(fig), []
    boxes = []
    for t in _shown_texts(fig):
        if t.get_fontsize() < MIN_FONT:
            problems.append(f"smaller than {MIN_FONT} pt ({t.get_fontsize()} pt): {t.get_text()!r}")
        bb = t.get_window_extent(r)
        if bb.x0 < fb.x0 - 0.5 or bb.x1 > fb.x1 + 0.5 or bb.y0 < fb.y0 - 0.5 or bb.y1 > fb.y1 + 0.5:
            problems.append(f"cut off by the figure edge: {t.get_text()!r}")
        gid = t.get_gid() or ""
        if gid.endswith(":label") and gid[:-6] in regs:
            rb = regs[gid[:-6]].get_window_extent(r)
            if bb.x0 < rb.x0 - 0.5 or bb.x1 > rb.x1 + 0.5 or bb.y0 < rb.y0 - 0.5 or bb.y1 > rb.y1 + 0.5:
                problems.append(f"sticks out of its region {gid[:-6]}: {t.get_text()!r}")
        boxes.append((bb.shrunk(0.97, 0.9), t.get_text()))
    for i, (a, ta) in enumerate(boxes):
        for b, tb in boxes[i + 1:]:
            if a.overlaps(b):
                problems.append(f"overlap: {ta!r} / {tb!r}")
    return problems


def test_legibility_check_finds_cut_off_and_overlapping_labels():
    # the check itself can fail: a label running off the right edge, two labels on top of each other
    from vnetlab.viz.style import new_figure

    fig = new_figure(3.0, 1.0)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.text(0.9, 0.5, "eth0.10 (upper device)")
    ax.text(0.1, 0.2, "on")
    ax.text(0.1, 0.2, "off")
    ax.text(0.5, 0.8, "tx-gso-list", fontsize=6.5)
    problems = _legibility_problems(fig)
    assert any("cut off" in p and "eth0.10" in p for p in problems)
    assert any(p.startswith("overlap: 'on'") for p in problems)
    assert any(p.startswith("smaller than 8.0 pt") and "tx-gso-list" in p for p in problems)


def _stack_05():
    # notebook 05's figure: a UDP GSO skb (10 × 1000 B) down a VLAN on virtio_net
    st = build_stack(kernel="6.1", upper="vlan", nic="virtio_net")
    return (st, *send_gso(st, segs=10, gso_size=1000, fraglist=False))


def _explorer_fig(kernel, nic, upper):
    return explorer.explorer_state(kernel=kernel, nic=nic, upper=upper).figure


@pytest.mark.parametrize("make", [
    pytest.param(lambda: _explorer_fig("5.10", "router", "vlan"), id="grid-5.10-vlan"),
    pytest.param(lambda: _explorer_fig("6.18", "ixgbe", "vlan_on_bond"), id="grid-6.18-vlan_on_bond"),
    pytest.param(lambda: _explorer_fig("6.1", "virtio_net", "macvlan_on_bridge"), id="grid-6.1-macvlan_on_bridge"),
    pytest.param(lambda: _explorer_fig("5.11", "veth", "vlan_on_macvlan"), id="grid-5.11-veth"),
    pytest.param(lambda: explorer.explorer_state(kernel="5.10", ethtool=[("eth0", {"tx-scatter-gather": False})]
                                                 ).figure, id="grid-requested"),
    pytest.param(lambda: stackpanels.stack_panel_state(kernel="5.10").figure, id="stack-panel"),
    pytest.param(lambda: stackpanels.stack_panel_state(kernel="6.1", nic="veth", upper="none").figure,
                 id="stack-panel-veth"),
    pytest.param(lambda: stacks.draw_stacks_side_by_side(upper="vlan"), id="side-by-side"),
    pytest.param(lambda: stacks.draw_stacks_side_by_side(upper="vlan_on_bond"), id="side-by-side-vlan_on_bond"),
    pytest.param(lambda: stacks.draw_stacks_side_by_side(upper="macvlan", nic="veth"), id="side-by-side-veth"),
    pytest.param(lambda: stacks.draw_stacks_side_by_side(upper="vlan", kernels=("5.10", "5.11", "6.18")),
                 id="side-by-side-3"),
    pytest.param(lambda: stacks.draw_stack(*_stack_05()), id="stack-primer-05"),
    pytest.param(lambda: _explorer_fig("6.1", "virtio_net", "vlan"), id="grid-6.1-vlan-virtio"),
    pytest.param(lambda: _explorer_fig("6.18", "router", "vlan_on_macvlan"), id="grid-6.18-vlan_on_macvlan"),
    pytest.param(lambda: _explorer_fig("5.10", "ixgbe_82598", "macvlan_on_vlan"), id="grid-5.10-macvlan_on_vlan"),
    pytest.param(lambda: costfig.draw_rx_rate(), id="rx-rate"),
    pytest.param(lambda: costfig.draw_cost_breakdown(), id="cost-breakdown"),
    pytest.param(lambda: stackpanels.router_panel_state(kernel="5.11", gro="off", upper="bridge").figure,
                 id="router-panel-bridge"),
    pytest.param(lambda: stackpanels.router_panel_state(kernel="5.10", drop_untranslated=True).figure,
                 id="router-panel-lost"),
    pytest.param(lambda: labfig.draw_results(), id="lab-results"),
    pytest.param(lambda: labfig.draw_rx_measured(labfig.STOCK_KERNELS), id="lab-rx-measured"),
    pytest.param(lambda: labfig.draw_seed1_rate(), id="lab-seed1-rate"),
    pytest.param(lambda: labfig.draw_nat_delivery(), id="lab-nat-delivery"),
    pytest.param(lambda: stackpanels.router_panel_state(kernel="5.10").figure, id="router-panel"),
    pytest.param(lambda: stackpanels.router_panel_state(kernel="5.11", gro="off").figure, id="router-panel-off"),
    pytest.param(lambda: routerfig.draw_router_story(), id="router-story"),
    pytest.param(lambda: stackpanels.cost_panel_state().figure, id="cost-panel"),
    pytest.param(lambda: stackpanels.cost_panel_state(payload_len=100, l4="tcp").figure, id="cost-panel-tcp"),
])
def test_no_cut_off_or_overlapping_label(make):
    assert _legibility_problems(make()) == []


@pytest.mark.parametrize("make", [lambda: explorer.explorer_panel(), lambda: stackpanels.stack_panel(),
                                  lambda: stackpanels.router_panel(), lambda: stackpanels.cost_panel()])
def test_panel_png_is_shown_at_its_natural_width(make):
    # the PNG's own width (IHDR) is the width the image widget shows it at, and at most JupyterLab's ~900 px
    import struct

    p = make()
    width = struct.unpack(">I", p.image.value[16:20])[0]
    # source: vnetlab/viz/style.py FIG_WIDTH 9.0 inches x DPI 100 = 900 px
    assert width == round(p.figure.get_figwidth() * p.figure.dpi) <= 900
    assert p.image.layout.width == f"{width}px" and p.image.layout.max_width == "100%"


def test_cost_sliders_have_room_for_their_track():
    # four cost-panel slider tracks were 0 px wide. Every slider keeps a minimum track width whatever
    # its label (the browser tests measure the rendered track); sizes sweep with an editable number beside them.
    p = stackpanels.cost_panel()
    sliders = [c for c in p.controls.values() if isinstance(c, (SizeSlider, ipywidgets.FloatSlider))]
    assert len(sliders) == 1 + len(stackpanels.COST_SLIDERS)
    for c in sliders:
        track = c.slider if isinstance(c, SizeSlider) else c
        # source: vnetlab/widgets/base.py sets 220px / 300px track minimums; 200 is this test's floor
        assert int(track.layout.min_width.removesuffix("px")) >= 200, c.description
        assert not track.continuous_update
        assert isinstance(c, SizeSlider) or c.readout


@pytest.mark.parametrize("make, control, value", [
    (lambda: stackpanels.stack_panel(kernel="5.11"), "segs", 20),
    (lambda: stackpanels.stack_panel(kernel="5.11"), "gso_size", 800),
    (lambda: stackpanels.stack_panel(kernel="5.11"), "fraglist", False),
    (lambda: stackpanels.stack_panel(kernel="5.11"), "nic", "virtio_net"),
    (lambda: stackpanels.router_panel(), "drop_untranslated", True),
    (lambda: stackpanels.router_panel(), "segs", 10),
    (lambda: stackpanels.router_panel(), "gso_size", 1000),
    (lambda: stackpanels.cost_panel(), "payload_len", 1400),
    (lambda: stackpanels.cost_panel(), "memcpy_byte_ns", 0.5),
    (lambda: stackpanels.cost_panel(), "destination", "udp_gro_socket"),
])
def test_moving_a_control_changes_the_png(make, control, value):
    p = make()
    png = p.image.value
    p.controls[control].value = value
    assert p.error is None and p.image.value != png


@pytest.mark.parametrize("make", [lambda: explorer.explorer_panel(), lambda: stackpanels.stack_panel(),
                                  lambda: stackpanels.router_panel(), lambda: stackpanels.cost_panel()])
def test_dropdowns_size_to_their_labels(make):
    # "eth0.10 (upp..." was cut off by a fixed 210-px dropdown. Every dropdown is as wide as its
    # description and longest option (CSS width auto, description_width initial); the browser tests measure that
    # no rendered label is cut off.
    dropdowns = [c for c in make().controls.values() if isinstance(c, ipywidgets.Dropdown)]
    assert dropdowns
    for c in dropdowns:
        assert c.layout.width == "auto" and c.style.description_width == "initial", c.description
