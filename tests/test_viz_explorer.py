"""The device-stack explorer (notebook 40): the feature grid shows what netdev and the kernel say, toggles act like
ethtool -K (a fixed feature refuses and changes nothing), and the PNG a reader sees follows the controls."""

import struct

import matplotlib

matplotlib.use("Agg")

import pytest

from vnetlab import labdata, netdev
from vnetlab.viz import featuregrid, stacks
from vnetlab.viz.style import regions
from vnetlab.widgets import explorer


def _texts(fig):
    return {t.get_gid(): t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid()}


def _png_width(png: bytes) -> int:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", png[16:20])[0]


def _netdev_stack(kernel, nic_driver, upper, **params):
    """The same stacks as stacks.build_stack, built here with netdev's public API only (the contract)."""
    net = netdev.Namespace(kernel=kernel)
    if nic_driver == "veth":
        low, _peer = net.veth("veth0", "veth1")
    else:
        low = net.nic("eth0", driver=nic_driver, **params)
    if upper == "vlan":
        return net, [net.vlan(f"{low.name}.10", lower=low, vid=10), low]
    if upper == "macvlan":
        return net, [net.macvlan("mv0", lower=low), low]
    if upper == "bond":
        bond = net.bond("bond0")
        net.set_master(low, bond)
        return net, [bond, low]
    if upper == "vlan_on_bond":
        bond = net.bond("bond0")
        net.set_master(low, bond)
        return net, [net.vlan("bond0.10", lower=bond, vid=10), bond, low]
    if upper == "macvlan_on_bridge":
        br = net.bridge("br0")
        net.set_master(low, br)
        return net, [net.macvlan("mv0", lower=br), br, low]
    if upper == "vlan_on_macvlan":
        mv = net.macvlan("mv0", lower=low)
        return net, [net.vlan("mv0.10", lower=mv, vid=10), mv, low]
    raise AssertionError(upper)


CASES = [("5.10", "router", "router", "vlan"), ("5.11", "router", "router", "vlan"),
         ("6.1", "virtio_net", "virtio_net", "vlan"), ("6.18", "ixgbe", "ixgbe", "vlan_on_bond"),
         ("6.1", "veth", "veth", "macvlan_on_bridge"), ("5.11", "ixgbe_82598", "ixgbe", "vlan_on_macvlan"),
         ("6.18", "router_no_fraglist", "router", "bond")]


@pytest.mark.parametrize("kernel, nic, driver, upper", CASES)
def test_grid_cells_are_what_ethtool_k_shows(kernel, nic, driver, upper):
    # expected: netdev's ethtool -k of the same stack built with the contract API (not the explorer's builder)
    params = stacks.NICS[nic][2]
    _net, devs = _netdev_stack(kernel, driver, upper, **params)
    s = explorer.explorer_state(kernel=kernel, nic=nic, upper=upper)
    grid = s.result
    assert [r.name for r in grid.rows] == [d.name for d in devs]
    found, texts = regions(s.figure), _texts(s.figure)
    for row, dev in zip(grid.rows, devs):
        shown = dev.ethtool_k()
        for cell in row.cells:
            assert (cell.on, cell.fixed) == shown[cell.ethtool], (row.name, cell.feature)
            assert cell.wanted == (cell.feature in dev.wanted_features)
            # the figure: the cell is drawn, with the words and the fill of its state
            face, hatch, _w, words = featuregrid.STATE_STYLE[cell.state]
            patch = found[f"grid:{row.name}:{cell.feature}"]
            assert texts[f"grid:{row.name}:{cell.feature}:label"] == words
            assert matplotlib.colors.to_hex(patch.get_facecolor()) == face.lower()
            assert patch.get_hatch() == hatch


def test_states_differ_without_colour():
    # every state has its own words, and the fixed states a hatch: readable in greyscale / colour blindness
    words = [v[3] for v in featuregrid.STATE_STYLE.values()]
    assert len(set(words)) == len(words)
    assert len({(v[1], v[3]) for v in featuregrid.STATE_STYLE.values()}) == len(featuregrid.STATES)


def test_5_10_vlan_has_no_udp_segmentation_5_11_has():
    # Kernel source: include/linux/netdev_features.h v5.10 (Debian 5.10 tree, line 210) NETIF_F_GSO_SOFTWARE =
    # ALL_TSO | GSO_SCTP; net/8021q/vlan_dev.c vlan_dev_init (5.10) hw_features = ... | NETIF_F_GSO_SOFTWARE, so
    # GSO_UDP_L4 is outside the VLAN's hw_features: "off [fixed]". 2e4ef10f5850 (v5.11) added GSO_UDP_L4 and
    # GSO_FRAGLIST to GSO_SOFTWARE and vlan_dev_fix_features keeps old_features & GSO_SOFTWARE: "on".
    before = explorer.explorer_state(kernel="5.10", nic="router", upper="vlan").result.row("eth0.10")
    after = explorer.explorer_state(kernel="5.11", nic="router", upper="vlan").result.row("eth0.10")
    cell = {c.feature: c for c in before.cells}
    assert cell["GSO_UDP_L4"].state == "off, fixed" and cell["GSO_FRAGLIST"].state == "off, fixed"
    cell = {c.feature: c for c in after.cells}
    assert cell["GSO_UDP_L4"].state == "on" and cell["GSO_FRAGLIST"].state == "on"
    # and the header row marks the two as GSO_SOFTWARE members from 5.11 on
    s10 = explorer.explorer_state(kernel="5.10", nic="router", upper="vlan")
    s11 = explorer.explorer_state(kernel="5.11", nic="router", upper="vlan")
    assert _texts(s10.figure)["gso_software:GSO_UDP_L4"] == "no"
    assert _texts(s11.figure)["gso_software:GSO_UDP_L4"].endswith("yes")
    # 5.10: both skbs are segmented at the VLAN (the 20 Mbps router); 5.11: neither is cut in software
    assert s10.result.segmented_at("fraglist") == "eth0.10" and s10.result.segmented_at("udp_gso") == "eth0.10"
    assert s11.result.segmented_at("fraglist") is None and s11.result.segmented_at("udp_gso") is None


def test_6_1_vlan_on_virtio_net_still_resegments_fraglist():
    # Kernel source, Debian linux-source-6.1 (6.1.192): drivers/net/virtio_net.c virtnet_probe sets no
    # NETIF_F_FRAGLIST (nor GSO_FRAGLIST) and copies vlan_features = features; net/8021q/vlan_dev.c
    # vlan_dev_fix_features intersects the VLAN's FRAGLIST (not in GSO_SOFTWARE) with the real device's;
    # include/linux/netdevice.h skb_gso_ok needs NETIF_F_FRAGLIST for any skb with a frag_list. So the fraglist
    # GSO skb is cut at the VLAN even after 2e4ef10f5850, with skb_segment_list.
    s = explorer.explorer_state(kernel="6.1", nic="virtio_net", upper="vlan")
    grid = s.result
    fl = {c.feature: c for c in grid.row("eth0.10").cells}["FRAGLIST"]
    assert not fl.on and fl.wanted  # the VLAN asked for it (vlan_dev_init hw_features) but cannot have it
    assert grid.segmented_at("fraglist") == "eth0.10"
    assert grid.row("eth0.10").verdicts["fraglist"].action == "segments"
    assert "skb_segment_list" in _texts(s.figure)["skb:eth0.10:fraglist:label"]
    footer = _texts(s.figure)["footer:fraglist"].replace("\n", " ")  # wrapped to the figure's width at spaces
    assert footer.count("segmented in software at eth0.10") == 1


@pytest.mark.parametrize("upper, route_dev", [("none", "eth0"), ("vlan", "eth0.10"), ("macvlan", "mv0"),
                                              ("bridge", "br0")])
def test_udp_gso_segmentation_point_matches_the_qemu_lab(upper, route_dev):
    # Expected: the QEMU lab's kprobes on Debian 6.1 (data/lab, labdata "mergeable"): where the real kernel's
    # validate_xmit_skb segmented a UDP_SEGMENT datagram sent through each device over virtio_net.
    doc = labdata.load("mergeable")
    case = next(c for c in doc["gso"]["cases"] if c["route_dev"] == route_dev)
    segs = doc["gso"]["payloads"][0] // doc["gso"]["gso_size"]
    s = explorer.explorer_state(kernel="6.1", nic="virtio_net", upper=upper, udp_segs=segs,
                                gso_size=doc["gso"]["gso_size"])
    assert [s.result.segmented_at("udp_gso")] == case["segmented_at"]


def test_fixed_toggle_refuses_and_leaves_grid_unchanged():
    p = explorer.explorer_panel(kernel="5.10", nic="router", upper="vlan")
    png, cells = p.image.value, [r.cells for r in p.state.result.rows]
    box = p.toggles[("eth0.10", "GSO_UDP_L4")]
    assert box.value is False and box.icon == "lock"
    box.value = True  # ethtool -K eth0.10 tx-udp-segmentation on
    assert box.value is False  # sprang back
    assert "refused" in p.message.value and "cannot change fixed feature(s): tx-udp-segmentation" in p.message.value
    assert p.commands == []
    assert [r.cells for r in p.state.result.rows] == cells and p.image.value == png
    # a changeable feature is applied: the VLAN's SG follows eth0's (vlan_dev_fix_features intersects it) and
    # stays wanted: "requested on, off"; the PNG changes
    p.toggles[("eth0", "SG")].value = False
    assert p.commands == [("eth0", {"tx-scatter-gather": False})] and "applied" in p.message.value
    sg = {c.feature: c for c in p.state.result.row("eth0.10").cells}["SG"]
    assert sg.state == "requested on, off"
    assert p.toggles[("eth0.10", "SG")].value is True  # the button shows what was asked (wanted_features)
    assert p.image.value != png


def test_state_function_refusal_changes_nothing():
    base = explorer.explorer_state(kernel="5.10")
    s = explorer.explorer_state(kernel="5.10", ethtool=[("eth0.10", {"tx-udp-segmentation": True})])
    assert s.extra["refused"] and s.extra["applied"] == []
    assert [r.cells for r in s.result.rows] == [r.cells for r in base.result.rows]
    with pytest.raises(ValueError, match="ethtool names device 'eth9'"):
        explorer.explorer_state(kernel="5.10", ethtool=[("eth9", {"tx-scatter-gather": False})])


@pytest.mark.parametrize("control, value", [("kernel", "5.11"), ("nic", "virtio_net"), ("upper", "bond")])
def test_moving_a_control_changes_the_png(control, value):
    p = explorer.explorer_panel(kernel="5.10")
    png = p.image.value
    p.controls[control].value = value
    assert p.error is None and p.image.value != png
    # the toggle grid follows the new stack's devices
    assert {d for d, _f in p.toggles} == {r.name for r in p.state.result.rows}


def test_png_is_shown_at_the_width_it_is_drawn():
    p = explorer.explorer_panel()
    w = _png_width(p.image.value)
    # source: vnetlab/viz/style.py, FIG_WIDTH 9 in at DPI 100: the one figure width JupyterLab shows unscaled
    assert w == round(p.figure.get_figwidth() * p.figure.dpi) == 900
    assert p.image.layout.width == f"{w}px" and p.image.layout.max_width == "100%"


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="upper must be one of"):
        explorer.explorer_state(upper="vxlan")
    with pytest.raises(ValueError, match="nic must be one of"):
        explorer.explorer_state(nic="e1000")
    p = explorer.explorer_panel(kernel="5.10")
    p.controls["nic"].value = "virtio_net_uso"  # virtio_net has no USO before 6.2: the model's text, no figure
    assert p.error and "host_uso" in p.error and p.image.layout.display == "none"


def test_static_figure_is_the_explorer_figure():
    # a notebook cell's figure and the panel's figure are one drawing
    settings = {"eth0": {"tx-scatter-gather": False}}
    fig = featuregrid.draw_stack_features(kernel="5.11", nic="ixgbe", upper="vlan", settings=settings)
    s = explorer.explorer_state(kernel="5.11", nic="ixgbe", upper="vlan",
                                ethtool=[("eth0", {"tx-scatter-gather": False})])
    assert sorted(t.get_text() for ax in fig.axes for t in ax.texts) == \
        sorted(t.get_text() for ax in s.figure.axes for t in ax.texts)
    with pytest.raises(netdev.FixedFeatureError, match="tx-udp-segmentation"):
        featuregrid.draw_stack_features(kernel="5.10", settings={"eth0.10": {"tx-udp-segmentation": True}})


def test_cached_string_bitmaps_draw_the_same_png():
    # a panel's PNG after other updates (renderer and bitmap cache reused) is byte for byte a fresh figure's
    from vnetlab.widgets.base import render_png

    p = explorer.explorer_panel(kernel="6.1", nic="virtio_net")
    for value in ("5.11", "6.1"):
        p.controls["kernel"].value = value
    cached = p.image.value
    fresh = explorer.explorer_state(kernel="6.1", nic="virtio_net").figure
    assert render_png(fresh) == cached


def _look(patch):
    """What tells a cell's meaning apart without its words: fill, hatch, edge style."""
    return matplotlib.colors.to_hex(patch.get_facecolor()), patch.get_hatch() or None, patch.get_linestyle()


@pytest.mark.parametrize("kernel, nic, upper, ethtool", [
    ("6.18", "ixgbe", "vlan_on_bond", ()),  # NIC segments (hardware GSO), requested-on-but-off cells
    ("5.10", "router", "vlan", ()),  # segmented in software
    ("5.11", "veth", "vlan_on_macvlan", ()),  # handed to the veth peer
    ("5.10", "router", "vlan", (("eth0", {"tx-scatter-gather": False}),)),
])
def test_grid_legend_has_every_fill_and_hatch_drawn(kernel, nic, upper, ethtool):
    fig = explorer.explorer_state(kernel=kernel, nic=nic, upper=upper, ethtool=ethtool).figure
    found = regions(fig)
    drawn = {_look(p) for g, p in found.items() if g.startswith(("grid:", "skb:"))}
    legend = {_look(p) for g, p in found.items() if g.startswith("legend:")}
    assert drawn <= legend, drawn - legend
    # the verdicts a reader may not guess from a colour are named in the legend
    texts = _texts(fig)
    assert "hardware GSO" in texts["legend:hw_gso:text"] and "veth peer" in texts["legend:to_peer:text"]
    assert "segmented" in texts["legend:segments:text"]


def test_hardware_gso_and_veth_peer_verdicts_are_drawn():
    # drivers/net/ethernet/intel/ixgbe/ixgbe_main.c ixgbe_probe (5.10): mac.type >= ixgbe_mac_82599EB adds
    # NETIF_F_GSO_UDP_L4, so the UDP GSO skb reaches eth0 whole and the NIC segments it; drivers/net/veth.c veth_xmit
    # (6.1) hands any skb to veth_forward_skb unsegmented
    hw = regions(explorer.explorer_state(kernel="6.18", nic="ixgbe", upper="vlan_on_bond").figure)
    fill = featuregrid.VERDICT_FILL
    assert matplotlib.colors.to_hex(hw["skb:eth0:udp_gso"].get_facecolor()) == fill["hw_gso"].lower()
    peer = regions(explorer.explorer_state(kernel="5.11", nic="veth", upper="vlan_on_macvlan").figure)
    assert matplotlib.colors.to_hex(peer["skb:veth0:fraglist"].get_facecolor()) == fill["to_peer"].lower()
