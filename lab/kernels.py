"""The kernels the lab boots: Debian's stock images and the lab's one-patch builds (lab/build.py).

A kernel id names one: ``5.10``, ``6.1``, ``6.12``, ``7.2.12``, ``7.3.4`` are Debian's ``linux-image-amd64`` of
bullseye, bookworm(-security), bookworm-backports, forky and trixie-backports (vnetlab.labkernels);
``5.10-plain``, ``6.1-no-build-skb``, ... are lab builds. Stock images are fetched with ``apt-get download``
through the lab's private apt configuration (lab/debian.py) and unpacked with ``dpkg-deb -x``: never
installed on the host. From 7.x the image package is split (linux-binary/modules/base, see fetch_stock).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lab import build
from lab.debian import Apt, Suite, deb_field, unpack
from lab.util import sh
from vnetlab import labkernels
from vnetlab.labkernels import LabKernel


@dataclass(frozen=True)
class Stock:
    """A Debian kernel: ``package`` (``linux-image-amd64``) of ``suite`` names the linux-image-<abi>-amd64 booted."""

    id: str  # the lab's kernel id: the data goes to data/lab/<id>/
    suite: Suite
    description: str
    package: str = "linux-image-amd64"


def stock_of(lk: LabKernel) -> Stock:
    """The apt side of a stock catalogue entry: its suite, from its archive."""
    return Stock(lk.id, Suite(lk.suite, lk.archive), lk.description, lk.package)


#: The stock kernels of the one catalogue (vnetlab.labkernels), with the apt suite each comes from.
STOCK = {kid: stock_of(labkernels.lab_kernel(kid)) for kid in labkernels.stock_ids()}


def fetch_stock(kid: str, work: Path) -> dict:
    """Download and unpack the stock image of kernel id ``kid``; returns what the boot needs.

    Two Debian layouts: up to 6.x ``linux-image-<abi>`` holds /boot/vmlinuz-<abi>, /boot/config-<abi> and
    /lib/modules/<abi>; from 7.x it is an empty package depending on ``linux-binary-<abi>`` (vmlinuz),
    ``linux-modules-<abi>`` (the modules) and ``linux-base-<abi>`` (config, System.map, modules.builtin,
    modules.order), all under /usr/lib/modules/<abi>/ and without modules.dep (postinst runs depmod)."""
    stock = STOCK[kid]
    apt = Apt(stock.suite, work)
    debs = work / "debs" / stock.suite.name
    meta = apt.download(stock.package, debs)
    depends = deb_field(meta, "Depends")
    m = re.search(r"(linux-image-[0-9][^ ,(|]*-amd64)", depends)
    if not m:
        raise SystemExit(f"{stock.package} ({stock.suite.name}) depends on {depends!r}: no linux-image-*-amd64")
    image_pkg = m.group(1)
    deb = apt.download(image_pkg, debs)
    release = image_pkg.removeprefix("linux-image-")
    tree = work / "kernel" / kid
    split = split_packages(deb_field(deb, "Depends"), release)
    if split:
        # 7.x: the image is a metapackage; every file is in the split packages, under /usr/lib/modules/<abi>
        for pkg in split:
            part = apt.download(pkg, debs)
            unpack(part, tree, tree / ".unpacked" / pkg)
            (tree / ".unpacked").mkdir(parents=True, exist_ok=True)
            (tree / ".unpacked" / pkg).touch()
        moddir = tree / "usr" / "lib" / "modules" / release
        vmlinuz, config = moddir / "vmlinuz", moddir / "config"
    else:
        unpack(deb, tree, tree / "boot" / f"vmlinuz-{release}")
        moddir = tree / "lib" / "modules" / release
        vmlinuz, config = tree / "boot" / f"vmlinuz-{release}", tree / "boot" / f"config-{release}"
    if not vmlinuz.exists():
        raise SystemExit(f"{image_pkg} ({stock.suite.name}): no kernel image at {vmlinuz}")
    if not (moddir / "modules.dep").exists():
        depmod(tree, moddir, release)
    return {"kind": "stock", "id": kid, "package": image_pkg, "package_version": deb_field(deb, "Version"),
            "suite": stock.suite.name, "release": release, "vmlinuz": vmlinuz,
            "vmlinux": extract_vmlinux(vmlinuz, work / f"vmlinux-{release}"), "moddir": moddir,
            "config": config, "packages": [image_pkg, *split]}


def split_packages(depends: str, release: str) -> list[str]:
    """The 7.x split of linux-image-<abi>: the linux-binary-, linux-modules- and linux-base-<abi> it depends on
    (empty for the 5.10..6.12 layout, where the image package holds the files itself)."""
    want = [f"linux-{part}-{release}" for part in ("binary", "modules", "base")]
    names = set(re.findall(r"(linux-[a-z]+-[0-9][^ ,(|]*)", depends))
    have = [w for w in want if w in names]
    if have and len(have) != len(want):
        raise SystemExit(f"linux-image-{release} depends on {sorted(names)}: expected all of {want}")
    return have


def depmod(tree: Path, moddir: Path, release: str) -> None:
    """modules.dep for an unpacked tree. depmod -b BASE reads BASE/lib/modules/<release>; the 7.x packages put
    the modules in BASE/usr/lib/modules/<release>, so a lib/modules link points depmod there."""
    if moddir.parent != tree / "lib" / "modules":
        link = tree / "lib" / "modules"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("..") / moddir.parent.relative_to(tree))
    if not shutil.which("depmod"):
        raise SystemExit("depmod (Debian package kmod) is needed to index the kernel's modules")
    sh(["depmod", "-b", str(tree), release], timeout=300)


def resolve(kid: str, work: Path) -> dict:
    """The kernel of id ``kid``: a stock image (fetched) or a lab build (built if missing)."""
    if kid in STOCK:
        return fetch_stock(kid, work)
    if kid not in labkernels.built_ids():
        raise SystemExit(f"unknown kernel {kid!r}; stock: {', '.join(STOCK)}; "
                         f"built: {', '.join(labkernels.built_ids())}")
    build.build(kid, work)
    return build.kernel_files(kid, work)


def known_ids() -> list[str]:
    """Every lab kernel id, in catalogue order (vnetlab.labkernels.KERNELS)."""
    return list(labkernels.KERNELS)


def extract_vmlinux(vmlinuz: Path, out: Path) -> Path:
    """The bzImage payload, decompressed (Debian's amd64 kernels are xz-compressed): an ELF with .BTF."""
    if out.exists():
        return out
    data = vmlinuz.read_bytes()
    for magic, cmd in ((b"\xfd7zXZ\x00", ["xz", "-dc", "--single-stream"]), (b"\x28\xb5\x2f\xfd", ["zstd", "-dc"]),
                       (b"\x1f\x8b\x08", ["gzip", "-dc"])):
        i = data.find(magic)
        if i < 0:
            continue
        p = subprocess.run(cmd, input=data[i:], capture_output=True, timeout=120)
        if p.stdout[:4] == b"\x7fELF":
            out.write_bytes(p.stdout)
            return out
    raise SystemExit(f"could not find a compressed ELF in {vmlinuz}")


def btf_offsets(vmlinux: Path) -> dict:
    """sk_buff member offsets from the kernel's own BTF (pahole), for the kprobe fetch args."""
    if not shutil.which("pahole"):
        raise SystemExit("pahole (Debian package dwarves) is needed to read the kernel's BTF")
    text = sh(["pahole", "-C", "sk_buff", str(vmlinux)]).stdout
    shinfo = sh(["pahole", "-C", "skb_shared_info", str(vmlinux)]).stdout
    netdev = sh(["pahole", "-C", "net_device", str(vmlinux)]).stdout

    def member(name: str, src: str = text) -> tuple[int, int | None]:
        m = re.search(rf"[\s*]{re.escape(name)}(?::\d+)?;\s*/\*\s*(\d+)(?::\s*(\d+))?", src)
        if not m:
            raise SystemExit(f"pahole: no member {name}")
        return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)

    size = int(re.search(r"/\* size: (\d+)", text).group(1))
    hf_byte, hf_bit = member("head_frag")
    return {
        "sk_buff.dev": member("dev")[0], "sk_buff.len": member("len")[0], "sk_buff.data_len": member("data_len")[0],
        "sk_buff.truesize": member("truesize")[0], "sk_buff.head_frag.byte": hf_byte, "sk_buff.head_frag.bit": hf_bit,
        "sk_buff.head": member("head")[0], "sk_buff.network_header": member("network_header")[0],
        "sizeof(sk_buff)": size,
        "sizeof(skb_shared_info)": int(re.search(r"/\* size: (\d+)", shinfo).group(1)),
        "skb_shared_info.gso_segs": member("gso_segs", shinfo)[0],
        "skb_shared_info.gso_size": member("gso_size", shinfo)[0],
        "skb_shared_info.frag_list": member("frag_list", shinfo)[0],
        "sk_buff.end": member("end")[0],
        # 6.8+ reordered struct net_device: name[] is no longer at offset 0 (304 in Debian's 6.12)
        "net_device.name": int(re.search(r"\sname\[\d+\];\s*/\*\s*(\d+)", netdev).group(1)),
    }


def probes_for(release: str) -> dict:
    """The kprobe definitions that differ between kernel versions (x86_64 calling convention: %di %si %dx %cx
    %r8 %r9, then the stack; $stack0 is the return address)."""
    ver = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", release).groups())
    if ver < (5, 13):
        # 5.10 page_to_skb(vi, rq, page, offset, len, truesize, hdr_valid, metasize): no headroom argument
        p2s = "offset=%cx:u32 len=%r8:u32 truesize=%r9:u32 hdr_valid=$stack1:u8 metasize=$stack2:u32"
    elif ver < (6, 3):
        # 6.1 page_to_skb(vi, rq, page, offset, len, truesize, hdr_valid, metasize, headroom)
        p2s = ("offset=%cx:u32 len=%r8:u32 truesize=%r9:u32 hdr_valid=$stack1:u8 metasize=$stack2:u32 "
               "headroom=$stack3:u32")
    else:
        # 6.12 page_to_skb(vi, rq, page, offset, len, truesize, headroom)
        p2s = "offset=%cx:u32 len=%r8:u32 truesize=%r9:u32 headroom=$stack1:u32"
    # 6.12: skb_add_rx_frag is an inline wrapper of skb_add_rx_frag_netmem and napi_alloc_skb lost its "__";
    # 7.x: skb_add_rx_frag_netmem is inline too (include/linux/skbuff.h: no probe; nr_frags comes from the
    # napi_gro_receive_entry tracepoint) and napi_gro_receive is an inline wrapper of gro_receive_skb(gro, skb)
    # (include/linux/netdevice.h), skb still the second argument. The guest probes the first name of each list
    # that the kernel accepts.
    return {"P2S_ARGS": p2s, "ADD_FRAG_FNS": "skb_add_rx_frag skb_add_rx_frag_netmem",
            "NAPI_ALLOC_FNS": "__napi_alloc_skb napi_alloc_skb", "GRO_FNS": "napi_gro_receive gro_receive_skb"}
