"""vnetlab.stack: the one device-stack builder and the feature grid's data. Expected values come from
the kernel source named at each test; device names are the builder's own convention (eth0, eth0.10, mv0, br0,
bond0, veth0/veth1), which notebooks 40 and 50 show."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vnetlab import router
from vnetlab.profiles import kernel as _kernel
from vnetlab.stack import (
    GRID_FEATURES,
    NICS,
    UPPERS,
    Stack,
    build_stack,
    device_cells,
    feature_grid,
    send_gso,
)
from vnetlab.viz import featuregrid, stacks

# --- what the builder makes ------------------------------------------------------------------------------


@pytest.mark.parametrize("upper, nic, names", [
    ("none", "router", ["eth0"]),
    ("vlan", "router", ["eth0.10", "eth0"]),
    ("vlan_on_bond", "ixgbe", ["bond0.10", "bond0", "eth0"]),
    ("macvlan_on_bridge", "veth", ["mv0", "br0", "veth0"]),
    ("macvlan_on_vlan", "virtio_net", ["mv0", "eth0.10", "eth0"]),
])
def test_devices_top_down_each_on_the_one_below(upper, nic, names):
    st = build_stack(kernel="6.1", upper=upper, nic=nic)
    assert [d.name for d in st.devices()] == names
    assert st.egress.name == names[0] and st.port.name == names[-1]
    for upper_dev, lower_dev in zip(st.devices(), st.devices()[1:]):
        assert upper_dev.lowers == [lower_dev]  # one link each: ip link add ... link / ip link set ... master
    assert all(d.ns is st.net for d in st.devices())


def test_the_kernel_is_resolved_once_and_shared():
    k = _kernel("5.10")
    st = build_stack(kernel=k, upper="vlan_on_bond")
    assert st.kernel is k and all(d.ns.kernel is k for d in st.devices())


def test_router_stack_is_the_same_builder_with_the_labs_names():
    # the lab's vlan_veth: eth0 is a veth whose peer leads to the receiving socket (router.PEER)
    st = router.router_stack(kernel="6.1", upper="vlan", nic="veth")
    assert isinstance(st, Stack) and [d.name for d in st.devices()] == ["eth0.10", "eth0"]
    assert st.port.peer.name == router.PEER
    fwd = router.router_stack(kernel="6.1", upper="bridge_forward")
    net, egress, eth = fwd.net, router.route_device(fwd, "bridge_forward"), fwd.port
    assert (egress.name, eth.name, egress is eth) == ("eth0", "eth0", True)  # a bridged frame leaves by the port
    assert net.devices["eth0"].master is net.devices["br0"]
    assert router.router_scenario(kernel="6.1").stack.egress.name == "eth0.10"


def test_the_notebooks_names_in_viz_are_the_models():
    # notebooks 05, 40 and 50 call these through vnetlab.viz; they must be the model's objects, not copies
    for name in ("build_stack", "send_gso", "NICS", "UPPERS", "Stack", "feature_states", "STACK_FEATURES"):
        assert getattr(stacks, name) is getattr(__import__("vnetlab.stack").stack, name)
    for name in ("feature_grid", "FeatureGrid", "device_cells", "Cell", "GRID_FEATURES", "SKB_KINDS", "STATES"):
        assert getattr(featuregrid, name) is getattr(__import__("vnetlab.stack").stack, name)
    assert set(featuregrid.STATE_STYLE) == set(featuregrid.STATES)  # every state has its drawing style


def test_the_model_loads_without_the_drawings():
    # the stack model is what exercises, router and lab data use: it must not pull matplotlib or ipywidgets in
    code = ("import sys, vnetlab; st = vnetlab.stack.build_stack(); vnetlab.stack.feature_grid(st); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets') "
            "or m.startswith(('vnetlab.viz', 'vnetlab.widgets'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


# --- ports and settings: the kernel's feature rules through the builder ----------------------------------


@pytest.mark.parametrize("kernel, both_off, expected", [
    # net/core/dev.c netdev_increment_features: a NETIF_F_ONE_FOR_ALL bit is on when one port has it. 6.18:
    # GSO_UDP_L4 is in ONE_FOR_ALL via NETIF_F_GSO_SOFTWARE (2e4ef10f5850, v5.11) ...
    ("6.18", False, True), ("6.18", True, False),
    # ... 5.10: it is not, so br_features_recompute leaves br0's own bit (COMMON_FEATURES has NETIF_F_GSO_MASK)
    ("5.10", True, True),
])
def test_a_bridge_with_a_second_port_follows_one_for_all(kernel, both_off, expected):
    off = {"tx-udp-segmentation": False}
    settings = {"veth0": off, "veth2": off} if both_off else {"veth0": off}
    st = build_stack(kernel=kernel, upper="bridge", nic="veth", port_nic="veth", settings=settings)
    assert [p.name for p in st.ports] == ["veth2"] and st.ports[0].master is st.egress
    assert st.egress.ethtool_k()["tx-udp-segmentation"][0] is expected


def test_a_requested_feature_the_kernel_turns_off_says_why():
    # net/core/dev.c netdev_fix_features (5.10): "Dropping TSO features since no SG feature"; ethtool prints
    # the feature still in wanted_features as "off [requested on]" (net/ethtool/features.c, ethtool dump_features)
    st = build_stack(kernel="5.10", upper="none", nic="router", settings={"eth0": {"tx-scatter-gather": False}})
    (tso,) = device_cells(st.egress, ("TSO",))
    assert (tso.on, tso.fixed, tso.wanted, tso.state) == (False, False, True, "requested on, off")
    assert "netdev_fix_features" in tso.reason
    (sg,) = device_cells(st.egress, ("SG",))
    assert sg.state == "off" and "not in wanted_features" in sg.reason


def test_absent_features_are_left_out_not_refused():
    # docs/kernel/gso-features.md#d1: NETIF_F_GRO_UDP_FWD (bit 59) arrived ~5.12, so mainline 5.10
    # has no such cell and 6.1 has; a feature no modelled kernel has is a typo
    names = ("GRO_UDP_FWD", "SG")
    assert [c.feature for c in device_cells(build_stack(kernel="5.10").egress, names)] == ["SG"]
    assert [c.feature for c in device_cells(build_stack(kernel="6.1").egress, names)] == ["GRO_UDP_FWD", "SG"]
    with pytest.raises(ValueError, match="GSO_UDP_L5"):
        device_cells(build_stack(kernel="6.1").egress, ("GSO_UDP_L5",))


# --- the feature grid's data -----------------------------------------------------------------------------


@pytest.mark.parametrize("kernel, soft, at_vlan, at_eth0", [
    # include/linux/netdev_features.h: 5.10's NETIF_F_GSO_SOFTWARE is ALL_TSO | GSO_SCTP (TSO of the grid's
    # columns); 5.11 adds GSO_UDP_L4 | GSO_FRAGLIST (2e4ef10f5850). Without them vlan_dev_fix_features leaves the
    # VLAN without GSO_UDP_L4 and validate_xmit_skb segments the 17-segment UDP GSO skb there (17 skbs down);
    # after, the router NIC (USO) segments it in hardware.
    ("5.10", {"TSO"}, ("segments", 1, 17), ("passes", 17, 17)),
    ("5.11", {"TSO", "GSO_UDP_L4", "GSO_FRAGLIST"}, ("passes", 1, 1), ("hw_gso", 1, 1)),
])
def test_grid_rows_cells_and_verdicts(kernel, soft, at_vlan, at_eth0):
    grid = feature_grid(build_stack(kernel=kernel, upper="vlan", nic="router"))
    assert grid.columns == GRID_FEATURES and grid.gso_software == frozenset(soft)
    assert [r.name for r in grid.rows] == ["eth0.10", "eth0"]
    for row in grid.rows:
        dev = grid.stack.net.devices[row.name]
        # each cell is the device's ethtool -k and wanted_features
        assert [(c.on, c.fixed) for c in row.cells] == [dev.ethtool_k()[c.ethtool] for c in row.cells]
        assert [c.wanted for c in row.cells] == [c.feature in dev.wanted_features for c in row.cells]
    for name, want in (("eth0.10", at_vlan), ("eth0", at_eth0)):
        v = grid.row(name).verdicts["udp_gso"]
        assert (v.action, v.skbs_in, v.skbs_out) == want
    assert grid.row("eth0").label == "nic, driver router" and grid.row("eth0.10").label == "vlan on eth0"
    with pytest.raises(KeyError, match="eth0.10"):
        grid.row("eth9")


def test_cells_only_without_sending():
    grid = feature_grid(build_stack(kernel="6.1", upper="bond"), send=False)
    assert grid.sent == {} and all(r.verdicts == {} for r in grid.rows)


# --- bad input is refused with the known values ----------------------------------------------------------


@pytest.mark.parametrize("kwargs, words", [
    (dict(upper="tun"), ["upper must be one of", *UPPERS, "'tun'"]),
    (dict(nic="e1000"), ["nic must be one of", *NICS, "'e1000'"]),
    (dict(nic="veth", nic_params={"host_uso": True}), ["nic_params", "veth pair takes no probe parameters"]),
    (dict(settings={"eth1": {"tx-udp-segmentation": False}}), ["eth1", "this stack has", "eth0.10"]),
    (dict(port_nic="router"), ["port_nic='router' needs a bridge or bond", "upper='vlan'"]),
    (dict(upper="bridge", port_nic="tun0"), ["port_nic must be one of", "virtio_net", "'tun0'"]),
    (dict(kernel="5.99"), ["5.99", "5.10", "6.18"]),
])
def test_build_stack_refuses_bad_input(kwargs, words):
    with pytest.raises(ValueError) as err:
        build_stack(**kwargs)
    for w in words:
        assert w in str(err.value)


def test_send_and_grid_want_a_stack():
    with pytest.raises(TypeError, match="stack"):
        send_gso("eth0.10")
    with pytest.raises(TypeError, match="stack"):
        feature_grid(build_stack().egress)
    # segs above UDP_GRO_CNT_MAX (64, net/ipv4/udp_offload.c udp_gro_receive_segment) is no GRO skb
    with pytest.raises(ValueError, match="segs"):
        send_gso(build_stack(), segs=65)
