"""The guest's initramfs: busybox-static, lab/guest/init, udptool, ip/ethtool/tc/nft with their libraries, modules.

Written as a cpio newc archive by this module (no root filesystem image). ip, tc and ethtool are the host's
(the lab needs Debian's iproute2 and ethtool anyway); nft comes from Debian's nftables .deb and its library
packages, downloaded through the lab's private apt configuration and unpacked with dpkg-deb -x under
lab/work/userland (never installed on the host).
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import subprocess
from pathlib import Path

from lab.debian import Apt, Suite, unpack
from lab.util import sh

LAB = Path(__file__).resolve().parent
# 8021q, macvlan, bridge, veth and nf_tables NAT for the feature, GSO and router stages (crc32c_generic: the
# crypto module libcrc32c asks for at run time, not in modules.dep); virtio_pci + virtio_net
# for the NICs. Their dependencies (virtio_ring, net_failover, stp, llc, nf_conntrack, ...) come from modules.dep.
MODULES = ["virtio_pci", "virtio_net", "8021q", "macvlan", "bridge", "veth", "crc32c_generic", "nf_tables",
           "nft_chain_nat", "nft_masq", "nf_nat", "nf_conntrack"]
# Modules only some kernels have, each with the module that needs it: 6.15+ compute crc32c in lib/crc (built
# in), so Debian 7.x has neither libcrc32c nor crc32c_generic.
NEEDED_BY = {"crc32c_generic": "libcrc32c"}
# nft and the libraries it links (bookworm: nftables -> libnftables1 -> libnftnl11, libjansson4, libxtables12,
# libgmp10, libmnl0; nft itself -> libedit2 -> libbsd0, libmd0, libtinfo6).
NFT_DEBS = ["nftables", "libnftables1", "libnftnl11", "libjansson4", "libxtables12", "libgmp10", "libmnl0",
            "libedit2", "libbsd0", "libmd0", "libtinfo6"]
USERLAND_SUITE = Suite("bookworm")


def module_closure(moddir: Path, wanted: list[str]) -> list[str]:
    """Module paths (relative to moddir) in load order: dependencies first, from modules.dep."""
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
        by_name[Path(mod).name.split(".ko")[0].replace("-", "_")] = mod
    builtin = {Path(path).name.split(".ko")[0].replace("-", "_")
               for path in (moddir / "modules.builtin").read_text().split()}
    order: list[str] = []

    def visit(mod: str) -> None:
        if mod in order:
            return
        for d in reversed(deps[mod]):  # modules.dep lists the deepest dependency last
            visit(d)
        order.append(mod)

    for name in wanted:
        key = name.replace("-", "_")
        if key in builtin or (name in NEEDED_BY and NEEDED_BY[name] not in by_name):
            continue
        if key not in by_name:
            raise SystemExit(f"module {name} is neither in modules.dep nor built in")
        visit(by_name[key])
    return order


def _ldd_libs(binary: str, env: dict | None = None) -> list[str]:
    p = sh(["ldd", binary], env=env, check=False)
    if "not found" in p.stdout:
        raise SystemExit(f"ldd {binary}: {p.stdout}")
    libs = re.findall(r"=> (/\S+)", p.stdout) + re.findall(r"^\s*(/\S+ld-linux\S*)", p.stdout, re.M)
    return sorted(set(libs))


def newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A cpio newc archive: (path, mode, data) entries, then the trailer."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate(entries + [("TRAILER!!!", 0, b"")], start=1):
        nm = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nm), 0))
        out += hdr.encode() + nm
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def nft_userland(work: Path) -> tuple[Path, dict]:
    """nft unpacked from Debian's .debs; returns (the nft binary, env for ldd to resolve its libraries)."""
    root = work / "userland"
    apt = Apt(USERLAND_SUITE, work)
    for pkg in NFT_DEBS:
        deb = apt.download(pkg, work / "debs" / USERLAND_SUITE.name)
        unpack(deb, root, root / ".unpacked" / pkg)
        (root / ".unpacked").mkdir(parents=True, exist_ok=True)
        (root / ".unpacked" / pkg).touch()
    libdirs = [root / "usr" / "lib" / "x86_64-linux-gnu", root / "lib" / "x86_64-linux-gnu"]
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(str(d) for d in libdirs if d.is_dir()))
    return root / "usr" / "sbin" / "nft", env


def _module_bytes(path: Path) -> tuple[str, bytes]:
    """A module file as busybox insmod needs it: decompressed (Debian's 6.12 ships .ko.xz)."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return path.name[:-3], lzma.decompress(data)
    if path.name.endswith(".zst"):
        return path.name[:-4], subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True,
                                              timeout=60).stdout
    return path.name, data


def build_initramfs(work: Path, kern: dict, modules: list[str] | None = None) -> tuple[Path, list[str]]:
    """The initramfs shared by every boot of one kernel (lab.conf is appended per boot)."""
    initrd = work / f"initramfs-{kern['id']}.cpio"
    busybox = shutil.which("busybox") or "/bin/busybox"
    ldd = sh(["ldd", busybox], check=False) if Path(busybox).exists() else None
    if ldd is None or "not a dynamic executable" not in ldd.stdout + ldd.stderr:
        raise SystemExit("busybox-static is needed (apt-get install -y busybox-static)")
    udptool = work / "udptool"
    src = LAB / "guest" / "udptool.c"
    if not udptool.exists() or udptool.stat().st_mtime < src.stat().st_mtime:
        sh(["gcc", "-static", "-O2", "-Wall", "-o", str(udptool), str(src)], timeout=120)
    dirs = ["bin", "sbin", "usr", "usr/bin", "usr/sbin", "usr/lib", "usr/lib/x86_64-linux-gnu", "lib", "lib64",
            "lib/x86_64-linux-gnu", "proc", "sys", "dev", "run", "tmp", "etc", "modules", "var", "var/run"]
    entries: list[tuple[str, int, bytes]] = [(d, 0o40755, b"") for d in dirs]
    entries.append(("bin/busybox", 0o100755, Path(busybox).read_bytes()))
    entries.append(("bin/udptool", 0o100755, udptool.read_bytes()))
    entries.append(("init", 0o100755, (LAB / "guest" / "init").read_bytes()))
    libs: dict[str, Path] = {}
    for tool in ("ip", "ethtool", "tc"):  # tc: the sender's qdisc statistics (router stage)
        path = shutil.which(tool) or f"/usr/sbin/{tool}"
        if not Path(path).exists():
            raise SystemExit(f"{tool} is needed on the host (apt-get install -y iproute2 ethtool)")
        entries.append((f"usr/sbin/{tool}", 0o100755, Path(path).read_bytes()))
        libs.update({lib.lstrip("/"): Path(lib).resolve() for lib in _ldd_libs(path)})
    nft, env = nft_userland(work)
    entries.append(("usr/sbin/nft", 0o100755, nft.read_bytes()))
    for lib in _ldd_libs(str(nft), env):
        dest = lib.lstrip("/")
        if str(work.resolve()) in str(Path(lib).resolve()) or lib.startswith(str(work)):
            dest = "usr/lib/x86_64-linux-gnu/" + Path(lib).name
        libs.setdefault(dest, Path(lib).resolve())
    for dest, real in sorted(libs.items()):
        entries.append((dest, 0o100755, real.read_bytes()))
    names = []
    if kern.get("moddir"):
        for mod in module_closure(kern["moddir"], modules or MODULES):
            name, data = _module_bytes(kern["moddir"] / mod)
            names.append(name)
            entries.append((f"modules/{name}", 0o100644, data))
    entries.append(("modules.order", 0o100644, ("\n".join(names) + "\n").encode()))
    initrd.write_bytes(newc(entries))
    return initrd, names
