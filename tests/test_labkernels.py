"""The one catalogue of lab kernels (vnetlab.labkernels): every other list of them derives from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnetlab import labdata, labkernels
from vnetlab.profiles import kernel as _profile
from vnetlab.viz import labfig

ROOT = Path(__file__).resolve().parent.parent


def test_the_lab_lists_are_the_catalogue():
    from lab import build, debian, kernels

    assert list(kernels.STOCK) == list(labkernels.stock_ids())
    assert list(build.VARIANTS) == list(labkernels.built_ids())
    assert kernels.known_ids() == list(labkernels.KERNELS)
    assert labdata.LAB_KERNELS is labkernels.KERNELS
    assert set(labfig.STOCK_KERNELS) <= set(labkernels.stock_ids())
    assert list(labfig.STOCK_KERNELS) == [k for k in labkernels.stock_ids() if k in labdata.lab_kernels()]
    # the catalogue's archive URIs are the lab's apt archives
    assert {labkernels.DEBIAN, labkernels.DEBIAN_SECURITY} == {debian.MIRROR, debian.SECURITY}
    for kid, stock in kernels.STOCK.items():
        assert stock.suite.name == labkernels.lab_kernel(kid).suite


def test_every_lab_kernel_is_well_formed():
    for lk in labkernels.KERNELS.values():
        _profile(lk.model)  # its model profile exists
        if lk.kind == "built":
            assert labkernels.lab_kernel(lk.base).kind == "stock"
            if lk.parent is not None:
                assert labkernels.lab_kernel(lk.parent).base == lk.base
            for p in lk.all_patches:
                assert (ROOT / "lab" / "patches" / p).is_file(), p
        if lk.pair is not None:
            other = labkernels.lab_kernel(lk.pair)
            assert len(set(lk.all_patches) ^ set(other.all_patches)) == 1, (lk.id, other.id)
        for rule in lk.overrides:
            _profile(lk.model).rule(rule)  # an override replaces a rule the model has


def test_bad_lab_kernel_names_the_known_ones():
    with pytest.raises(ValueError, match="kernel='5.9' is not a lab kernel; known: 5.10, 6.1"):
        labkernels.lab_kernel("5.9")
    with pytest.raises(ValueError, match="needs a suite"):
        labkernels.LabKernel("x", "stock", "6.1", "no suite")


def test_a_patched_kernel_is_its_profile_with_the_patch_rules():
    """lab/patches/5.10-revert-3d6df63a5cbe.patch takes __udpv4_gso_segment_list_csum out of
    net/ipv4/udp_offload.c: the NAT fraglist fix is gone; 6.1-no-build-skb.patch takes page_to_skb's build_skb
    branch out of drivers/net/virtio_net.c."""
    revert = (ROOT / "lab" / "patches" / "5.10-revert-3d6df63a5cbe.patch").read_text()
    assert "-static struct sk_buff *__udpv4_gso_segment_list_csum" in revert
    k = labkernels.model_kernel("5.10-revert-3d6df63a5cbe")
    assert k.version == "5.10.223" and k.name == "5.10-revert-3d6df63a5cbe"
    assert k.rule("udp_gso_list_nat_fix") is False and _profile("5.10.223").rule("udp_gso_list_nat_fix") is True
    assert k != _profile("5.10.223") and k.key == _profile("5.10.223").key
    no_bs = (ROOT / "lab" / "patches" / "6.1-no-build-skb.patch").read_text()
    assert "build_skb" in no_bs
    assert labkernels.model_kernel("6.1-no-build-skb").rule("page_to_skb") == "copy_eth_hlen"
    assert labkernels.model_kernel("6.1-plain") is _profile("6.1")


# --------------------------------------------------------------------------------------------------
# Every module honours a lab kernel's patch ("one meaning of kernel=").
#
# Expected values: lab/patches/5.10-revert-3d6df63a5cbe.patch makes __udp_gso_segment_list return
# skb_segment_list()'s segments unchanged, so of a fraglist GSO skb of N packets only the head keeps the NATed
# header and N - 1 segments leave with the header they arrived with (the lab counted one intact datagram per
# GRO skb: data/lab/5.10-revert-3d6df63a5cbe/router.json, 73 and 79 of 1760); 5.10-plain (Debian's 5.10.223,
# 3d6df63a5cbe in) rewrites all of them. lab/patches/6.1-no-build-skb.patch takes page_to_skb's build_skb branch
# out: every frame is copied (napi_alloc_skb(GOOD_COPY_LEN), ETH_HLEN copied when the frame is longer).

import vnetlab  # noqa: E402
from vnetlab import features, gro, netdev, router, rx, segment, udp, xmit  # noqa: E402
from vnetlab.viz import featuregrid, stacks  # noqa: E402

REVERT = "5.10-revert-3d6df63a5cbe"
NAT_LAB_KERNELS = [k for k, lk in labkernels.KERNELS.items() if "udp_gso_list_nat_fix" in lk.overrides]
N = 10  # packets of the fraglist GSO skb


def _pair_partner(kid):
    return labkernels.lab_kernel(kid).pair


def _vlan_on_virtio(k):
    ns = netdev.Namespace(kernel=k)
    eth = ns.nic("eth0", driver="virtio_net")
    return ns, ns.vlan("eth0.10", lower=eth, vid=10)


def test_the_nat_reverting_lab_kernels_are_the_ones_with_the_revert_patch():
    assert NAT_LAB_KERNELS == [k for k, lk in labkernels.KERNELS.items()
                               if "5.10-revert-3d6df63a5cbe.patch" in lk.patches]
    assert len(NAT_LAB_KERNELS) == 2


@pytest.mark.parametrize("kid", NAT_LAB_KERNELS)
def test_netdev_namespace_and_devices_carry_the_lab_kernel(kid):
    """The issue's example: Namespace(kernel=model_kernel(...)).rule('udp_gso_list_nat_fix') was True."""
    k = labkernels.model_kernel(kid)
    ns, vlan = _vlan_on_virtio(k)
    assert ns.rule("udp_gso_list_nat_fix") is False
    assert netdev.Namespace(kernel=labkernels.model_kernel(_pair_partner(kid))).rule("udp_gso_list_nat_fix") is True
    assert ns.kernel is k
    for dev in ns.devices.values():
        for fs in (dev.features, dev.hw_features, dev.wanted_features, dev.vlan_features, dev.hw_enc_features):
            assert fs.kernel is k
    assert kid in repr(vlan)


def test_features_keep_the_kernel_object():
    k = labkernels.model_kernel(REVERT)
    fs = features.FeatureSet.from_names(["SG", "GSO_UDP_L4"], kernel=k)
    assert fs.kernel is k and (fs | {"HW_CSUM"}).kernel is k and (fs - "SG").kernel is k
    assert features.mask("GSO_SOFTWARE", kernel=k).kernel is k
    assert features.FeatureSet.from_ethtool({"tx-udp-segmentation": True}, kernel=k).kernel is k
    assert features.bit("GSO_UDP_L4", kernel=k) == features.bit("GSO_UDP_L4", kernel="5.10.223")
    # same version, same feature table: sets of the lab kernel and of its profile combine and compare equal
    assert fs == features.FeatureSet.from_names(["SG", "GSO_UDP_L4"], kernel="5.10.223")
    # the table is built once per kernel object and kept on it
    assert features.table(k) is features.table(k) is fs.table


def test_features_of_the_2e4ef10f5850_builds_have_the_patched_macro():
    """lab/patches/5.10-2e4ef10f5850.patch: NETIF_F_GSO_SOFTWARE += GSO_UDP_L4 | GSO_FRAGLIST."""
    patched = set(features.mask("GSO_SOFTWARE", kernel=labkernels.model_kernel("5.10-2e4ef10f5850")).names)
    plain = set(features.mask("GSO_SOFTWARE", kernel=labkernels.model_kernel("5.10-plain")).names)
    assert patched - plain == {"GSO_UDP_L4", "GSO_FRAGLIST"}


@pytest.mark.parametrize("kid", NAT_LAB_KERNELS)
def test_segment_honours_the_revert(kid):
    s = xmit.gso_skb(segs=N, gso_size=1000, fraglist=True)
    for k, kept in ((labkernels.model_kernel(kid), N - 1), (labkernels.model_kernel("5.10-plain"), 0)):
        feats = features.FeatureSet.from_names(["SG", "HW_CSUM"], kernel=k)
        assert segment.skb_gso_segment(s, feats, kernel=k).kept_headers == kept


@pytest.mark.parametrize("kid", NAT_LAB_KERNELS)
def test_xmit_honours_the_revert_from_the_device_alone(kid):
    """No kernel= given, or the device's own version string given: the device's lab kernel decides."""
    k = labkernels.model_kernel(kid)
    s = xmit.gso_skb(segs=N, gso_size=1000, fraglist=True)
    _ns, vlan = _vlan_on_virtio(k)
    for tx in (xmit.send(vlan, s), xmit.send(vlan, s, kernel=k.version)):
        assert tx.segmented_at == "eth0.10" and tx.ops["kept_header_segs"] == N - 1 and tx.kernel is k
    _ns, fixed = _vlan_on_virtio(labkernels.model_kernel("5.10-plain"))
    assert xmit.send(fixed, s).ops.get("kept_header_segs", 0) == 0


def test_udp_socket_segments_with_the_lab_kernel_rules():
    """udp_rcv_segment (__skb_gso_segment) of a fraglist skb that reached a socket without UDP_GRO."""
    s = xmit.gso_skb(segs=N, gso_size=1000, fraglist=True)
    k = labkernels.model_kernel(REVERT)
    assert udp.udp_recv([s], kernel=k).kept_headers == N - 1
    assert udp.udp_recv([s], kernel=labkernels.model_kernel("5.10-plain")).kept_headers == 0
    ns = netdev.Namespace(kernel=k)
    a, _b = ns.veth("v0", "v1")
    assert udp.udp_sendmsg(a, 1000).kernel is k  # the device's kernel, not a version looked up again


@pytest.mark.parametrize("kid", NAT_LAB_KERNELS)
def test_router_translates_one_datagram_per_gro_skb_on_the_revert(kid):
    """data/lab/<kid>/router.json: one intact datagram per fraglist GRO skb behind the VLAN."""
    k = labkernels.model_kernel(kid)
    r = router.router_scenario(kernel=k, nic="virtio_net", segs=N, gso_size=1000)
    assert (r.nat_translated, r.datagrams_out) == (1, N) and r.kernel is k
    net = router.router_stack(kernel=k, upper="vlan", nic="virtio_net").net
    assert net.rule("udp_gso_list_nat_fix") is False


def test_labdata_predictions_use_the_lab_kernel():
    from vnetlab import labdata

    n = labdata.packets_per_gro_skb(REVERT, 1472)
    assert labdata.router_case_prediction(REVERT, "vlan_virtio", n, payload=1472).intact_per_gro_skb == 1
    fixed = labdata.router_case_prediction("5.10-plain", "vlan_virtio", n, payload=1472)
    assert fixed.nat_fix is True and fixed.intact_per_gro_skb == n
    doc = labdata.load("gso", "5.10-2e4ef10f5850")
    ns, _tx = labdata.gso_model(doc, "eth0.10")
    assert ns.kernel is labkernels.model_kernel("5.10-2e4ef10f5850")


def test_stacks_and_feature_grid_keep_the_lab_kernel():
    k = labkernels.model_kernel(REVERT)
    st = stacks.build_stack(kernel=k, upper="vlan", nic="virtio_net")
    assert st.kernel is k and st.net.rule("udp_gso_list_nat_fix") is False
    _skb, tx = stacks.send_gso(st, segs=N, gso_size=1000)
    assert tx.ops["kept_header_segs"] == N - 1
    assert featuregrid.feature_grid(st).kernel is k


def test_rx_honours_the_no_build_skb_patch():
    """A 1514-byte frame in a 2048-byte mergeable buffer: page_to_skb builds the skb around the buffer on 6.1-plain
    (tailroom 2048 - 12 - 1514 = 522 >= SKB_DATA_ALIGN(sizeof(skb_shared_info)) 320 on x86_64), and copies
    ETH_HLEN + frag without the build_skb branch."""
    nb, plain = labkernels.model_kernel("6.1-no-build-skb"), labkernels.model_kernel("6.1-plain")
    r = rx.page_to_skb(1514, 2048, kernel=nb)
    assert r.path == "copy+frag" and r.kernel is nb
    assert rx.page_to_skb(1514, 2048, kernel=plain).path == "build_skb"


def test_gro_merges_what_the_lab_kernels_receive_path_built():
    """skb_gro_receive appends each packet's payload as frags: after a copy (6.1-no-build-skb) the first packet's
    payload is a frag too (4 frags for 4 packets), after build_skb it is in the head (3 frags)."""
    out = {}
    for kid in ("6.1-no-build-skb", "6.1-plain"):
        k = labkernels.model_kernel(kid)
        (merged,) = gro.aggregate(gro.receive_flow(1448, 4, kernel=k, buf_len=2048), kernel=k)
        out[kid] = merged.nr_frags
    assert out == {"6.1-no-build-skb": 4, "6.1-plain": 3}


def test_version_strings_still_work_and_resolve_once():
    """contract.md: kernel= takes a version string; the object is resolved once and kept."""
    ns = netdev.Namespace(kernel="6.18")
    assert ns.kernel == "6.18" and ns.kernel is vnetlab.kernel("6.18")
    a, _b = ns.veth("v0", "v1")
    assert a.features.kernel is ns.kernel and str(a.features.kernel) == "6.18" and f"{ns.kernel:6}|" == "6.18  |"


def test_a_profile_is_interchangeable_with_its_version_string_as_a_key():
    k = vnetlab.kernel("6.1")
    assert {"6.1": 1}[k] == 1 and k in {"6.1"} and hash(k) == hash("6.1")
    lab = labkernels.model_kernel(REVERT)
    assert lab != "5.10.223" and lab != vnetlab.kernel("5.10.223") and lab == labkernels.model_kernel(REVERT)
    assert len({lab, vnetlab.kernel("5.10.223")}) == 2


def test_a_feature_grid_never_resolves_a_kernel_string_again():
    """Before: features._version ran 17,740 times in 20 feature_grid calls (5.10, vlan on the router NIC);
    the stack's Kernel is resolved once by build_stack and every device, FeatureSet and send asks it."""
    from vnetlab import profiles

    st = stacks.build_stack(kernel="5.10", upper="vlan", nic="router")
    before = profiles._kernel.cache_info()
    grid = featuregrid.feature_grid(st)
    after = profiles._kernel.cache_info()
    assert (after.hits + after.misses) - (before.hits + before.misses) == 0
    assert grid.segmented_at("udp_gso") == "eth0.10"  # 5.10: GSO_SOFTWARE lacks GSO_UDP_L4 (2e4ef10f5850)
