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
