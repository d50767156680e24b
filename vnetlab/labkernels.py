"""The one catalogue of the lab's kernels: what the lab boots, where it comes from, which profile models it.

Every other list derives from :data:`KERNELS`: lab/kernels.py (the stock images it downloads), lab/build.py (the
one-patch builds), vnetlab.labdata (the model each measurement is checked against) and vnetlab.viz.labfig (the
stock kernels it draws). It lives in the package, not in lab/, because an installed vnetlab checks the shipped
measurements (data/lab/) against it without the lab's code.

Two kinds of kernel:

- ``stock``: Debian's ``package`` (``linux-image-amd64``) of ``suite`` from ``archive`` (deb.debian.org's
  debian or debian-security), modelled by the vnetlab profile of that Debian kernel;
- ``built``: Debian's ``linux-source`` of the stock kernel ``base`` with the lab config and ``patches``
  (lab/patches/) on top of ``parent``'s; modelled by ``model`` with the kernel rules the patch changes
  (``overrides``), see :func:`model_kernel`.

    >>> from vnetlab import labkernels
    >>> labkernels.stock_ids()
    ('5.10', '6.1', '6.12', '7.2.12', '7.3.4')
    >>> labkernels.model_kernel("5.10-revert-3d6df63a5cbe").rule("udp_gso_list_nat_fix")
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import DEFAULT_KERNEL, Kernel
from vnetlab.profiles import kernel as _profile

#: The archives at deb.debian.org the stock kernels come from (lab/debian.py's MIRROR and SECURITY).
DEBIAN = "http://deb.debian.org/debian"
DEBIAN_SECURITY = "http://deb.debian.org/debian-security"

__all__ = ["LabKernel", "KERNELS", "DEFAULT_LAB_KERNEL", "lab_kernel", "stock_ids", "built_ids", "model_kernel"]


@dataclass(frozen=True)
class LabKernel:
    """A kernel the lab boots: where it comes from and which vnetlab profile models it.

    ``overrides``: rule -> (value, source) that the kernel's patch changes in its model profile (data/kernels.toml
    rules). ``pair``: the other kernel of a one-patch pair (same source, same config, one patch apart).
    """

    id: str  # the lab's kernel id: its measurements are data/lab/<id>/
    kind: str  # "stock" (Debian's image) or "built" (the lab's one-patch build of Debian's source)
    model: str  # the vnetlab profile (data/kernels.toml section) whose rules and tables apply
    description: str
    suite: str | None = None  # stock: the Debian suite its package comes from
    archive: str = DEBIAN  # stock: the apt archive URI of its suite
    package: str = "linux-image-amd64"  # stock: the metapackage whose linux-image-* dependency is booted
    base: str | None = None  # built: the stock kernel whose linux-source-<base> is used
    parent: str | None = None  # built: the kernel whose patches this one extends (None: Debian's source as is)
    patches: tuple[str, ...] = ()  # built: files in lab/patches/, applied in order after the parent's
    overrides: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    pair: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("stock", "built"):
            raise ValueError(f"kind={self.kind!r} of lab kernel {self.id}: must be 'stock' or 'built'")
        if self.kind == "stock" and (self.suite is None or self.base is not None or self.patches):
            raise ValueError(f"stock lab kernel {self.id} needs a suite and has no base or patches")
        if self.kind == "built" and self.base is None:
            raise ValueError(f"built lab kernel {self.id} needs the stock kernel base of its source")
        if self.archive not in (DEBIAN, DEBIAN_SECURITY):
            raise ValueError(f"archive={self.archive!r} of lab kernel {self.id}: {DEBIAN} or {DEBIAN_SECURITY}")

    @property
    def all_patches(self) -> tuple[str, ...]:
        """The parent chain's patches, then this kernel's own (lab/build.py applies them in this order)."""
        chain = lab_kernel(self.parent).all_patches if self.parent else ()
        return chain + self.patches


_NAT_REVERTED = {"udp_gso_list_nat_fix": (
    False, "lab/patches/5.10-revert-3d6df63a5cbe.patch: net/ipv4/udp_offload.c __udp_gso_segment_list returns "
           "skb_segment_list()'s segments unchanged (v5.10.14 behaviour)")}
_NO_BUILD_SKB = {"page_to_skb": (
    "copy_eth_hlen", "lab/patches/6.1-no-build-skb.patch: drivers/net/virtio_net.c page_to_skb without the "
                     "build_skb branch: napi_alloc_skb(GOOD_COPY_LEN), copy the frame if it fits, else ETH_HLEN")}

#: Every lab kernel. The 2e4ef10f5850 builds use the 5.11 profile: data/netdev_features.toml 5.11 differs from
#: 5.10.223 only in NETIF_F_GSO_SOFTWARE (+GSO_UDP_L4, +GSO_FRAGLIST), which is exactly what the patch changes,
#: and data/gro.toml 5.11 equals 5.10.223 (tests/test_lab_data.py checks both). Their receive path (5.11's
#: copy128 page_to_skb vs 5.10.223's ETH_HLEN copy) is not measured.
KERNELS: dict[str, LabKernel] = {k.id: k for k in [
    LabKernel("5.10", "stock", "5.10.223", "Debian 11 bullseye linux-image-amd64 (5.10.223-1)",
              suite="bullseye"),
    LabKernel("6.1", "stock", "6.1", "Debian 12 bookworm linux-image-amd64 (6.1.192-3, bookworm-security)",
              suite="bookworm-security", archive=DEBIAN_SECURITY),
    LabKernel("6.12", "stock", "6.12", "Debian 12 bookworm-backports linux-image-amd64 (6.12.95-1~bpo12+1)",
              suite="bookworm-backports"),
    LabKernel("7.2.12", "stock", "7.2.12", "Debian 14 forky linux-image-amd64 (7.2.12-1): linux-binary-, "
              "linux-modules- and linux-base-7.2.12+deb14-amd64 under /usr/lib/modules", suite="forky"),
    LabKernel("7.3.4", "stock", "7.3.4", "Debian 13 trixie-backports linux-image-amd64 (7.3.4-1~bpo13+1): "
              "linux-binary-, linux-modules- and linux-base-7.3.4+deb13-amd64 under /usr/lib/modules",
              suite="trixie-backports"),
    LabKernel("6.1-plain", "built", "6.1", "Debian 6.1 source with the lab config, unpatched: the pair partner of "
              "6.1-no-build-skb", base="6.1", pair="6.1-no-build-skb"),
    LabKernel("6.1-no-build-skb", "built", "6.1", "6.1 with page_to_skb's build_skb branch (fb32856b16ad and its "
              "5.13 fixes) taken out: every frame takes the napi_alloc_skb copy path", base="6.1",
              parent="6.1-plain", patches=("6.1-no-build-skb.patch",), overrides=_NO_BUILD_SKB, pair="6.1-plain"),
    LabKernel("5.10-plain", "built", "5.10.223", "Debian 5.10 source with the lab config, unpatched: the pair "
              "partner of every 5.10 variant", base="5.10", pair="5.10-2e4ef10f5850"),
    LabKernel("5.10-revert-3d6df63a5cbe", "built", "5.10.223", "5.10 without the NAT fraglist fix "
              "(__udpv4_gso_segment_list_csum): v5.10.14's UDP fraglist GSO", base="5.10", parent="5.10-plain",
              patches=("5.10-revert-3d6df63a5cbe.patch",), overrides=_NAT_REVERTED, pair="5.10-plain"),
    LabKernel("5.10-2e4ef10f5850", "built", "5.11", "5.10 with NETIF_F_GSO_SOFTWARE += GSO_UDP_L4 | GSO_FRAGLIST "
              "(Lobakin, v5.11)", base="5.10", parent="5.10-plain", patches=("5.10-2e4ef10f5850.patch",),
              pair="5.10-plain"),
    LabKernel("5.10-2e4ef10f5850-revert-3d6df63a5cbe", "built", "5.11", "5.10 with 2e4ef10f5850 and without the "
              "NAT fraglist fix", base="5.10", parent="5.10-2e4ef10f5850",
              patches=("5.10-revert-3d6df63a5cbe.patch",), overrides=_NAT_REVERTED, pair="5.10-2e4ef10f5850"),
]}
#: The lab kernel shown by default: the stock Debian kernel that profiles.DEFAULT_KERNEL models.
DEFAULT_LAB_KERNEL = next(k.id for k in KERNELS.values() if k.kind == "stock" and k.model == DEFAULT_KERNEL)


@public
def lab_kernel(kernel: str) -> LabKernel:
    """The catalogue entry of lab kernel id ``kernel``; ValueError listing the known ids otherwise."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ArgumentError(f"kernel={kernel!r} is not a lab kernel; known: {', '.join(KERNELS)}", param="kernel")
    return KERNELS[kernel]


def stock_ids() -> tuple[str, ...]:
    """The ids of Debian's own kernel images, in catalogue order."""
    return tuple(k.id for k in KERNELS.values() if k.kind == "stock")


def built_ids() -> tuple[str, ...]:
    """The ids of the lab's one-patch builds, in catalogue order."""
    return tuple(k.id for k in KERNELS.values() if k.kind == "built")


@public
@cache
def model_kernel(kernel: str) -> Kernel:
    """The vnetlab Kernel of lab kernel ``kernel``: its model profile with the rules its patch changes.

    Pass it as ``kernel=`` to any model (rx, gro, netdev, features, xmit, segment, udp, router): each honours
    its rules."""
    lk = lab_kernel(kernel)
    base = _profile(lk.model)
    return base.with_overrides(kernel, lk.overrides) if lk.overrides else base
