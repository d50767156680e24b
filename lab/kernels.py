"""The kernels the lab boots: Debian's stock images and the lab's one-patch builds (lab/build.py).

A kernel id names one: ``5.10``, ``6.1``, ``6.12`` are Debian's ``linux-image-amd64`` of bullseye,
bookworm(-security) and bookworm-backports; ``5.10-plain``, ``6.1-no-build-skb``, ... are lab builds. Stock
images are fetched with ``apt-get download`` through the lab's private apt configuration (lab/debian.py) and
unpacked with ``dpkg-deb -x``: never installed on the host.
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
    """Download and unpack the stock image of kernel id ``kid``; returns what the boot needs."""
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
    unpack(deb, tree, tree / "boot" / f"vmlinuz-{release}")
    moddir = tree / "lib" / "modules" / release
    if not (moddir / "modules.dep").exists():
        sh(["depmod", "-b", str(tree), release], timeout=300)
    vmlinuz = tree / "boot" / f"vmlinuz-{release}"
    return {"kind": "stock", "id": kid, "package": image_pkg, "package_version": deb_field(deb, "Version"),
            "suite": stock.suite.name, "release": release, "vmlinuz": vmlinuz,
            "vmlinux": extract_vmlinux(vmlinuz, work / f"vmlinux-{release}"), "moddir": moddir,
            "config": tree / "boot" / f"config-{release}"}


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
    # the guest probes the first name of each list that the kernel accepts
    return {"P2S_ARGS": p2s, "ADD_FRAG_FNS": "skb_add_rx_frag skb_add_rx_frag_netmem",
            "NAPI_ALLOC_FNS": "__napi_alloc_skb napi_alloc_skb"}
