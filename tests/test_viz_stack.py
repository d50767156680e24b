"""GRO, device-stack and cost figures and their panels: regions exist and what is drawn is what the model says."""

import matplotlib

matplotlib.use("Agg")

import pytest

from vnetlab import cost, gro, xmit
from vnetlab.netdev import FixedFeatureError
from vnetlab.viz import costfig, featuregrid, grofig, stacks
from vnetlab.viz.style import regions
from vnetlab.widgets import gropanels, stackpanels


def _slots(fig, key, skb_prefix=":frags["):
    return {g: p for g, p in regions(fig).items() if g.startswith(key + skb_prefix)}


# ---------------------------------------------------------------------------------------------- GRO fill

@pytest.fixture(scope="module")
def head_fills():
    return grofig.head_case_fills()


def test_head_cases_first_skb_counts(head_fills):
    # build_skb 18, ETH_HLEN copy 17, 128-byte page-frag (5.10) 9, 128-byte kmalloc (5.11) 1
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
    assert by[("5.10", 400)].first_skb_packets == 9 and by[("6.1", 400)].first_skb_packets == 18
    assert by[("6.1", 400)].packets_per_skb == gro.UDP_GRO_CNT_MAX


def test_gro_panel_state_changes_with_controls():
    a = gropanels.gro_panel_state(kernel="6.1")
    b = gropanels.gro_panel_state(kernel="5.11")
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
    assert panel.state.result.first_skb_packets == 9
    panel.controls["gro_udp_fwd"].value = True
    assert panel.error and "GRO_UDP_FWD" in panel.error and panel.image.layout.display == "none"


# ---------------------------------------------------------------------------------------------- stacks

@pytest.mark.parametrize("upper", ["vlan", "macvlan", "bond", "bridge"])
def test_stacks_side_by_side_match_send(upper):
    fig = stacks.draw_stacks_side_by_side(upper=upper)
    found = regions(fig)
    texts = {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}
    for col, k in enumerate(("5.10", "5.11")):
        st = stacks.build_stack(kernel=k, upper=upper)
        skb, tx = stacks.send_gso(st)
        assert f"{col}:gso_skb" in found
        n = len(tx.segments)
        assert texts[f"{col}:wire:label"].startswith(f"wire: {n} packet")
        for h in tx.hops:
            assert f"{col}:{h.name}" in found
            dev = st.net.devices[h.name]
            shown = dev.ethtool_k()  # expected: netdev's ethtool -k of the device
            for name, eth, on, fixed in stacks.feature_states(dev):
                assert (on, fixed) == shown[eth]
                lamp = found[f"{col}:{h.name}:{name}"]
                word = f"{'on' if on else 'off'}{' [fixed]' if fixed else ''}"
                assert texts[f"{col}:{h.name}:{name}:label"] in (f"{eth}\n{word}", f"{eth}\noff [requested on]")
                state = featuregrid.device_cells(dev, (name,))[0].state
                assert matplotlib.colors.to_hex(lamp.get_facecolor()) == featuregrid.STATE_STYLE[state][0].lower()
                assert (lamp.get_hatch() is not None) == (fixed or state == "requested on, off")
    # the patch: 5.10 segments in software at the upper device (not the bridge: full GSO_MASK), 5.11 does not
    before = stacks.send_gso(stacks.build_stack(kernel="5.10", upper=upper))[1]
    after = stacks.send_gso(stacks.build_stack(kernel="5.11", upper=upper))[1]
    assert after.segmented_at is None
    assert (before.segmented_at is None) == (upper == "bridge")


def test_stack_panel_state_ethtool_K():
    s = stackpanels.stack_panel_state(kernel="5.11")
    assert s.result.segmented_at is None
    s2 = stackpanels.stack_panel_state(kernel="5.11", upper_features={"tx-udp-segmentation": False})
    assert s2.result.segmented_at == "eth0.10"
    texts = [t.get_text() for ax in s2.figure.axes for t in ax.texts if t.get_gid() == "0:wire:label"]
    assert texts == [f"wire: {len(s2.result.segments)} packets (segmented in software at eth0.10)"]
    with pytest.raises(FixedFeatureError, match="tx-udp-segmentation"):
        stackpanels.stack_panel_state(kernel="5.10", upper_features={"tx-udp-segmentation": True})


def test_stack_panel_widget_toggles():
    panel = stackpanels.stack_panel(kernel="5.11")
    assert panel.error is None and panel.state.result.segmented_at is None
    box = panel.toggles[("upper", "GSO_UDP_L4")]
    assert box.value is True and box.description == "tx-udp-segmentation"
    box.value = False
    assert panel.state.result.segmented_at == "eth0.10"
    panel.controls["kernel"].value = "5.10"  # re-reads the devices: the vlan's GSO_UDP_L4 is fixed off
    box = panel.toggles[("upper", "GSO_UDP_L4")]
    assert box.value is False and "[fixed]" in box.description
    assert panel.state.result.segmented_at == "eth0.10"
    box.value = True
    assert panel.error and "fixed" in panel.error
    box.value = False
    assert panel.error is None
    panel.controls["upper"].value = "none"
    panel.controls["nic"].value = "veth"  # one device: the lower toggles are disabled, the skb goes to the peer
    assert panel.error is None and panel.state.result.hops[0].kind == "veth"
    assert all(panel.toggles[("lower", f)].disabled for f in stackpanels.TOGGLE_FEATURES)


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


def test_router_figure_matches_throughput_and_sensitivity():
    fig = costfig.draw_router()
    found = regions(fig)
    res = costfig.router_results()
    for k, r in res.items():
        assert found[f"router:{k}"].get_height() == pytest.approx(xmit.router_throughput(r).goodput_bps)
        assert found[f"router:{k}:measured"].get_height() == costfig.ROUTER_MEASURED_BPS[k]
    assert found["router:5.10:drop_untranslated"].get_height() == pytest.approx(
        xmit.router_throughput(res["5.10"], drop_untranslated=True).goodput_bps)
    sens = xmit.sensitivity(res["5.10"], res["5.11"])
    for name, v in sens.items():
        g = f"tornado:{name}"
        if max(v) - min(v) > 1e-9:
            assert found[g].get_x() == pytest.approx(min(v)) and found[g].get_width() == pytest.approx(max(v) - min(v))
        else:
            assert g not in found


def test_router_panel_state_and_widget():
    s = stackpanels.router_panel_state(kernel="5.10")
    assert s.result.segmented_at == "eth0.10"
    assert regions(s.figure)["router:5.10"].get_height() == pytest.approx(s.extra["throughput"].goodput_bps)
    panel = stackpanels.router_panel()
    panel.controls["kernel"].value = "5.11"
    assert panel.error is None and panel.state.result.segmented_at is None
    panel.controls["gro"].value = "off"
    assert panel.state.result.gro_skbs == panel.state.result.packets_in


def test_cost_panel_sliders_change_result():
    a = stackpanels.cost_panel_state(kernel="5.13")
    b = stackpanels.cost_panel_state(kernel="5.13", stack_ns=300.0)
    assert b.result.ns_per_packet < a.result.ns_per_packet
    assert regions(b.figure)["5.13:stack/udp_no_socket"].get_height() == pytest.approx(300.0)
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


def test_cost_panel_compact_figure_draws_the_static_segments():
    # the panel's compact figure: the same segments as the static breakdown; the title moved to the HTML
    s = stackpanels.cost_panel_state(kernel="5.11", payload_len=300, stack_ns=500.0)
    c = stackpanels._calibrated().with_values({"stack/udp_no_socket": 500.0}, "cost panel")
    static = costfig.draw_cost_breakdown(s.result.ops.traffic, costs=c, highlight="5.11")
    bars = {g: (p.get_x(), p.get_y(), p.get_height()) for g, p in regions(s.figure).items()
            if not g.startswith("legend:")}
    assert bars == {g: (p.get_x(), p.get_y(), p.get_height()) for g, p in regions(static).items()}
    assert "UDP 300 B, no socket: receive cost per operation" in s.text
    labels = {t.get_gid(): t.get_text() for ax in s.figure.axes for t in ax.texts if t.get_gid()}
    for k in cost.KERNELS:
        assert labels[f"{k}:path_label"] == costfig._head_label(s.extra["all"][k])
    legend = {g.split(":", 1)[1] for g in regions(s.figure) if g.startswith("legend:")}
    assert legend == {g.split(":", 1)[1] for g in bars}


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
    (lambda **kw: stackpanels.router_panel(**kw), "kernel", "5.11"),
    (lambda **kw: stackpanels.router_panel(**kw), "gro", "off"),
    (lambda **kw: stackpanels.cost_panel(**kw), "payload_len", 300),
    (lambda **kw: stackpanels.cost_panel(**kw), "kernel", "5.10"),
])
def test_panel_update_in_place_draws_what_a_fresh_panel_draws(make, control, value):
    """Reused axes (artists removed, not the figure cleared) give the same drawing as a new panel."""
    p = make()
    fig, axes_before = p.figure, list(p.figure.axes)
    p.controls[control].value = value
    assert p.error is None and p.figure is fig
    fresh = make(**{control: value})
    assert _drawn(p.figure) == _drawn(fresh.figure)
    assert p.image.value == fresh.image.value
    if getattr(fig, "_vnetlab_layout", None) is not None:  # compact drawings keep their axes
        assert p.figure.axes == axes_before


def test_gro_panel_text_carries_what_left_the_figure():
    s = gropanels.gro_panel_state(kernel="5.10", payload_len=200)
    assert s.result.label in s.text and "skb_shinfo(skb)-&gt;frags[0..MAX_SKB_FRAGS-1]" in s.text
    title = s.figure.axes[0].get_title("left")
    assert title.startswith("kernel 5.10, x86_64: 9 packets in the first sk_buff (nr_frags 17/17)")
    assert not s.figure.texts  # no suptitle: the key is in the HTML
    static = grofig.draw_gro_fill(s.result)
    assert static._suptitle.get_text() == grofig.GRO_FILL_KEY
    assert {g: p.get_facecolor() for g, p in regions(static).items()} == \
        {g: p.get_facecolor() for g, p in regions(s.figure).items()}
