"""The real-kernel lab: boot Debian's own 6.1 kernel in QEMU with two virtio-net NICs and measure.

``python -m lab run`` does everything, unattended and bounded in time:

1. fetch: ``apt-get download linux-image-amd64`` and the ``linux-image-6.1.0-*-amd64`` it depends on, unpacked
   with ``dpkg-deb -x`` under lab/work/ (never installed on the host); vmlinux is extracted from the bzImage
   for its BTF (pahole gives the sk_buff offsets the kprobes read).
2. initramfs: busybox-static, lab/guest/init, a static udptool (gcc -static), ip and ethtool with their shared
   libraries (ldd), and the needed modules with their dependencies (modules.dep made by ``depmod -b`` in the
   unpacked tree).
3. one QEMU boot per configuration in CONFIGS (KVM when /dev/kvm opens, else ``-accel tcg``), each under a
   timeout. The two NICs are wired to each other: by default through two tap devices (vnet_hdr=on, so the
   virtio offloads are negotiated as with a real host) on a bridge inside a private network namespace that
   the lab creates and deletes (no address, no route: frames only go from one guest NIC to the other);
   ``--backend hub`` uses QEMU's own hub instead (no vnet header, so no offloads at all).
4. parse the guest's serial console and write data/lab/<config>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

LAB = Path(__file__).resolve().parent
ROOT = LAB.parent
WORK = LAB / "work"
DATA = ROOT / "data" / "lab"
SCHEMA = 1

MAC_A = "52:54:00:12:34:01"
MAC_B = "52:54:00:12:34:02"
# 8021q, macvlan and bridge for the feature and GSO stages; virtio_pci + virtio_net for the NICs. Their
# dependencies (virtio, virtio_ring, net_failover, failover, stp, llc, garp, mrp, ...) come from modules.dep.
MODULES = ["virtio_pci", "virtio_net", "8021q", "macvlan", "bridge"]

# ethtool -K steps on the virtio NIC (and one on each upper device), each followed by ethtool -k of every
# device. Kept here so the test replays exactly the same steps in vnetlab.netdev (it reads them from the data).
STEPS = [
    ("eth0", "tso off"),
    ("eth0", "tx off"),
    ("eth0", "tx on"),
    ("eth0", "sg off"),
    ("eth0", "sg on tso on"),
    ("eth0", "gso off"),
    ("eth0", "gso on"),
    ("eth0", "rx-gro-hw off"),
    ("eth0", "rx-gro-hw on"),
    ("eth0", "tx-udp-segmentation on"),
]
RESET_K = "tso on tx on sg on gso on rx-gro-hw on"

STEP50 = list(range(64, 1473, 50))
BOUNDARY = [18, 86, 87, 1162, 1163, 1472]
SWEEP_1500 = sorted(set(STEP50 + BOUNDARY))
# MTU 9000: big mode's build_skb bound is frame 3744 = payload 3702; mergeable's follows the EWMA-sized buffer.
SWEEP_9000 = sorted(set(list(range(64, 8973, 400)) + [86, 87, 1162, 1163, 1472, 3702, 3703, 4054, 8972]))

GSO_SIZE = 1000
GSO_PAYLOADS = "4000 4000 4000"  # 3 datagrams of 4 segments each


@dataclass
class Config:
    name: str
    description: str
    device_props: str = ""
    rx_sizes: list[int] = field(default_factory=list)
    repeat: int = 2
    features: bool = False
    gso: bool = False
    backend: str | None = None  # None: the command-line backend

    @property
    def mtu9000(self) -> bool:
        return "host_mtu=9000" in self.device_props


GUEST_OFF = "guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off"
CONFIGS = [
    Config("mergeable", "MRG_RXBUF (QEMU default), MTU 1500; receive sweep, ethtool steps, UDP GSO",
           "", SWEEP_1500, features=True, gso=True),
    Config("small", "small mode: mrg_rxbuf=off and no guest GSO, MTU 1500",
           f"mrg_rxbuf=off,{GUEST_OFF}", SWEEP_1500),
    Config("big", "big mode: mrg_rxbuf=off with guest TSO (virtnet_set_big_packets), MTU 1500",
           "mrg_rxbuf=off", SWEEP_1500),
    Config("mergeable_mtu9000", "MRG_RXBUF with VIRTIO_NET_F_MTU host_mtu=9000",
           "host_mtu=9000", SWEEP_9000),
    Config("big_mtu9000", "big mode with host_mtu=9000 and no guest GSO (DIV_ROUND_UP(mtu, PAGE_SIZE) frags)",
           f"mrg_rxbuf=off,{GUEST_OFF},host_mtu=9000", SWEEP_9000),
    Config("hub_mergeable", "QEMU hub backend (no vnet header: no offloads negotiated); ethtool steps. QEMU answers "
           "VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET with VIRTIO_NET_ERR without a vnet header, so 'rx-gro-hw on' fails "
           "here although CTRL_GUEST_OFFLOADS puts GRO_HW in hw_features; UDP_SEGMENT sends fail with EIO "
           "out of eth0 and eth0.10 (no checksum offload there) but not out of mv0 and br0 (HW_CSUM always on)",
           "", [], features=True, gso=True, backend="hub"),
]


def log(msg: str) -> None:
    print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd: list[str], *, timeout: float = 600, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, timeout=timeout, text=True, capture_output=True, **kw)


# ---------------------------------------------------------------------------------------------------------
# 1. the kernel package

def fetch_kernel(work: Path) -> dict:
    pkgs = work / "debs"
    tree = work / "kernel"
    pkgs.mkdir(parents=True, exist_ok=True)
    if not shutil.which("dpkg-deb") or not shutil.which("apt-get"):
        raise SystemExit("the lab needs Debian's apt-get and dpkg-deb")
    if not list(pkgs.glob("linux-image-amd64_*.deb")):
        log("apt-get download linux-image-amd64")
        sh(["apt-get", "download", "linux-image-amd64"], cwd=pkgs, timeout=300)
    meta = next(pkgs.glob("linux-image-amd64_*.deb"))
    depends = sh(["dpkg-deb", "-f", str(meta), "Depends"]).stdout.strip()
    m = re.search(r"(linux-image-[0-9][^ ,(]*-amd64)", depends)
    if not m:
        raise SystemExit(f"linux-image-amd64 depends on {depends!r}: no linux-image-<version>-amd64 there")
    image_pkg = m.group(1)
    if not list(pkgs.glob(f"{image_pkg}_*.deb")):
        log(f"apt-get download {image_pkg}")
        sh(["apt-get", "download", image_pkg], cwd=pkgs, timeout=600)
    deb = next(pkgs.glob(f"{image_pkg}_*.deb"))
    pkg_version = sh(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip()
    release = image_pkg.removeprefix("linux-image-")
    if not (tree / "boot" / f"vmlinuz-{release}").exists():
        log(f"dpkg-deb -x {deb.name} (unpacked under {tree}, not installed)")
        shutil.rmtree(tree, ignore_errors=True)
        sh(["dpkg-deb", "-x", str(deb), str(tree)], timeout=600)
    moddir = tree / "lib" / "modules" / release
    if not (moddir / "modules.dep").exists():
        sh(["depmod", "-b", str(tree), release], timeout=300)
    return {"package": image_pkg, "package_version": pkg_version, "release": release,
            "vmlinuz": tree / "boot" / f"vmlinuz-{release}", "moddir": moddir, "tree": tree,
            "config": tree / "boot" / f"config-{release}"}


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
        "sizeof(sk_buff)": size,
        "sizeof(skb_shared_info)": int(re.search(r"/\* size: (\d+)", shinfo).group(1)),
    }


# ---------------------------------------------------------------------------------------------------------
# 2. the initramfs

def module_closure(moddir: Path, wanted: list[str]) -> list[str]:
    """Module paths (relative to moddir) in load order: dependencies first, from modules.dep."""
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
        by_name[Path(mod).name.split(".ko")[0].replace("-", "_")] = mod
    builtin = {Path(l).name.split(".ko")[0].replace("-", "_")
               for l in (moddir / "modules.builtin").read_text().split()}
    order: list[str] = []

    def visit(mod: str) -> None:
        if mod in order:
            return
        for d in reversed(deps[mod]):  # modules.dep lists the deepest dependency last
            visit(d)
        order.append(mod)

    for name in wanted:
        key = name.replace("-", "_")
        if key in builtin:
            continue
        if key not in by_name:
            raise SystemExit(f"module {name} is neither in modules.dep nor built in")
        visit(by_name[key])
    return order


def _ldd_libs(binary: str) -> list[str]:
    out = sh(["ldd", binary]).stdout
    libs = re.findall(r"=> (/\S+)", out) + re.findall(r"^\s*(/\S+ld-linux\S*)", out, re.M)
    return sorted(set(libs))


def _newc(entries: list[tuple[str, int, bytes]]) -> bytes:
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


def build_initramfs(work: Path, kern: dict) -> tuple[Path, list[str]]:
    initrd = work / "initramfs-base.cpio"
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not Path(busybox).exists() or "statically linked" not in sh(["file", "-L", busybox], check=False).stdout \
            and "not a dynamic executable" not in sh(["ldd", busybox], check=False).stdout + \
            sh(["ldd", busybox], check=False).stderr:
        raise SystemExit("busybox-static is needed (apt-get install -y busybox-static)")
    udptool = work / "udptool"
    src = LAB / "guest" / "udptool.c"
    if not udptool.exists() or udptool.stat().st_mtime < src.stat().st_mtime:
        sh(["gcc", "-static", "-O2", "-Wall", "-o", str(udptool), str(src)], timeout=120)
    mods = module_closure(kern["moddir"], MODULES)
    dirs = ["bin", "sbin", "usr", "usr/bin", "usr/sbin", "lib", "lib64", "lib/x86_64-linux-gnu", "proc", "sys",
            "dev", "run", "tmp", "etc", "modules", "var", "var/run"]
    entries: list[tuple[str, int, bytes]] = [(d, 0o40755, b"") for d in dirs]
    entries.append(("bin/busybox", 0o100755, Path(busybox).read_bytes()))
    entries.append(("bin/udptool", 0o100755, udptool.read_bytes()))
    entries.append(("init", 0o100755, (LAB / "guest" / "init").read_bytes()))
    libs: set[str] = set()
    for tool in ("ip", "ethtool"):
        path = shutil.which(tool) or f"/usr/sbin/{tool}"
        if not Path(path).exists():
            raise SystemExit(f"{tool} is needed on the host (apt-get install -y iproute2 ethtool)")
        entries.append((f"usr/sbin/{tool}", 0o100755, Path(path).read_bytes()))
        libs.update(_ldd_libs(path))
    for lib in sorted(libs):
        real = Path(lib).resolve()
        entries.append((lib.lstrip("/"), 0o100755, real.read_bytes()))
    names = []
    for mod in mods:
        name = Path(mod).name
        names.append(name)
        entries.append((f"modules/{name}", 0o100644, (kern["moddir"] / mod).read_bytes()))
    entries.append(("modules.order", 0o100644, ("\n".join(names) + "\n").encode()))
    initrd.write_bytes(_newc(entries))
    return initrd, names


# ---------------------------------------------------------------------------------------------------------
# 3. QEMU

def kvm_usable(kern: dict, work: Path) -> tuple[bool, str]:
    """/dev/kvm opens and a kernel boots under it (nested KVM can fail: "failed to set MSR 0x10a" with
    -cpu host, a silent hang with -cpu kvm64). A 25-second probe boot to the root-mount panic decides."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return False, f"/dev/kvm: {e.strerror}"
    os.close(fd)
    argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults",
            "-no-reboot", "-display", "none", "-serial", "stdio", "-monitor", "none", "-kernel", str(kern["vmlinuz"]),
            "-append", "console=ttyS0 panic=-1"]
    out, secs, timed_out = run_qemu(argv, [], work / "kvm-probe.log", 25)
    if "Linux version" in out and not timed_out:
        return True, f"probe boot under KVM took {secs:.1f} s"
    last = [l for l in out.splitlines() if l.strip()][-1:] or ["no console output"]
    return False, f"KVM probe boot failed ({'timed out' if timed_out else 'exited'}: {last[0][:120]})"


class TapWire:
    """Two taps on a bridge in a private network namespace: the guest's NICs wired to each other."""

    def __init__(self, tag: str) -> None:
        self.ns = f"vnetlab-lab-{tag}"
        self.taps = ("vlt0", "vlt1")

    def __enter__(self) -> "TapWire":
        ns = self.ns
        sh(["ip", "netns", "add", ns])
        try:
            run = lambda *c: sh(["ip", "netns", "exec", ns, *c])
            run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            run("ip", "link", "add", "vlbr", "type", "bridge", "stp_state", "0", "forward_delay", "0")
            for t in self.taps:
                run("ip", "tuntap", "add", t, "mode", "tap", "vnet_hdr")
                run("ip", "link", "set", t, "mtu", "65000", "master", "vlbr", "up")
            run("ip", "link", "set", "vlbr", "mtu", "65000", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def netdev_args(self) -> list[str]:
        return [f"tap,id=n{i},ifname={t},script=no,downscript=no,vnet_hdr=on" for i, t in enumerate(self.taps)]

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]

    def __exit__(self, *exc) -> None:
        for t in self.taps:
            sh(["ip", "netns", "exec", self.ns, "ip", "link", "del", t], check=False)
        sh(["ip", "netns", "del", self.ns], check=False)


class HubWire:
    def __enter__(self) -> "HubWire":
        return self

    def netdev_args(self) -> list[str]:
        return ["hubport,id=n0,hubid=0", "hubport,id=n1,hubid=0"]

    def prefix(self) -> list[str]:
        return []

    def __exit__(self, *exc) -> None:
        pass


def qemu_argv(kern: dict, initrd: Path, cfg: Config, netdevs: list[str], accel: str) -> list[str]:
    props = f",{cfg.device_props}" if cfg.device_props else ""
    argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
            "-m", "512", "-smp", "1", "-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio",
            "-monitor", "none", "-kernel", str(kern["vmlinuz"]), "-initrd", str(initrd),
            "-append", "console=ttyS0 quiet loglevel=1 panic=-1 nokaslr"]
    for i, (nd, mac) in enumerate(zip(netdevs, (MAC_A, MAC_B))):
        argv += ["-netdev", nd, "-device", f"virtio-net-pci,netdev=n{i},mac={mac}{props}"]
    return argv


def guest_conf(cfg: Config, offsets: dict, guest_timeout: int) -> str:
    sizes = " ".join(str(s) for s in cfg.rx_sizes * cfg.repeat)
    steps = "\n".join(f"{d} {a}" for d, a in STEPS)
    return "\n".join([
        f"MAC_A={MAC_A}", f"MAC_B={MAC_B}", f"GUEST_TIMEOUT={guest_timeout}",
        f"RX_SIZES='{sizes}'", "RX_DELAY_US=3000",
        f"RUN_FEATURES={int(cfg.features)}", f"RUN_GSO={int(cfg.gso)}",
        f"STEPS='{steps}'", f"RESET_K='{RESET_K}'",
        f"GSO_SIZE={GSO_SIZE}", f"GSO_PAYLOADS='{GSO_PAYLOADS}'",
        f"OFF_DEV={offsets['sk_buff.dev']}", f"OFF_LEN={offsets['sk_buff.len']}",
        f"OFF_DATA_LEN={offsets['sk_buff.data_len']}", f"OFF_TRUESIZE={offsets['sk_buff.truesize']}",
        f"OFF_HEAD_FRAG_BYTE={offsets['sk_buff.head_frag.byte']}",
        f"OFF_HEAD_FRAG_BIT={offsets['sk_buff.head_frag.bit']}", "",
    ])


def run_qemu(argv: list[str], prefix: list[str], log_path: Path, timeout: float) -> tuple[str, float, bool]:
    t0 = time.monotonic()
    with open(log_path, "w") as out:
        proc = subprocess.Popen(prefix + argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # only the QEMU process group this function started
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    return log_path.read_text(errors="replace"), time.monotonic() - t0, timed_out


# ---------------------------------------------------------------------------------------------------------
# 4. parsing

def blocks(console: str) -> list[tuple[str, list[str], list[str]]]:
    """(kind, labels, lines) for every @@BEGIN kind labels... / @@END block of the console log."""
    out = []
    cur = None
    for raw in console.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("@@BEGIN "):
            words = line.split()[1:]
            cur = (words[0], words[1:], [])
        elif line.startswith("@@END"):
            if cur:
                out.append(cur)
            cur = None
        elif cur is not None:
            cur[2].append(line)
    return out


_EV = re.compile(r"^\s*(?P<task>.+?)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>[\d.]+):\s+(?P<event>[\w/]+):\s+(?P<rest>.*)$")


def trace_events(lines: list[str]) -> list[dict]:
    evs = []
    for line in lines:
        m = _EV.match(line)
        if not m:
            continue
        rest = m.group("rest")
        name = m.group("event")
        fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', rest))
        for k, v in list(fields.items()):
            v = v.strip('"')
            try:
                fields[k] = int(v, 0)
            except ValueError:
                fields[k] = v
        evs.append({"event": name, "ts": float(m.group("ts")), **fields})
    return evs


def rx_packets(events: list[dict]) -> list[dict]:
    """One record per skb handed to napi_gro_receive on eth1: how the driver built it."""
    pkts: list[dict] = []
    cur: dict = {}
    for ev in events:
        e = ev["event"]
        if e == "p2s":
            cur = {"page_to_skb": {k: ev[k] for k in ("offset", "len", "truesize", "headroom", "hdr_valid", "metasize")}}
        elif e == "build_skb":
            cur.setdefault("alloc", "build_skb")
            cur["build_skb_frag_size"] = ev["frag_size"]
        elif e == "napi_alloc":
            cur.setdefault("alloc", "napi_alloc_skb")
            cur["napi_alloc_len"] = ev["len"]
        elif e == "p2s_ret":
            cur["page_to_skb_ret"] = {k: ev[k] for k in ("len", "data_len", "truesize", "head_frag")}
        elif e == "add_frag":
            cur.setdefault("add_rx_frag", []).append({k: ev[k] for k in ("i", "size", "truesize")})
        elif e == "gro":
            cur["gro"] = {k: ev[k] for k in ("dev", "len", "data_len", "truesize", "head_frag")}
        elif e == "napi_gro_receive_entry":
            if cur.get("gro", {}).get("dev") != "eth1":
                cur = {}
                continue
            cur["gro"]["nr_frags"] = ev.get("nr_frags")
            cur["gro"]["gso_size"] = ev.get("gso_size")
            cur["gro"]["ip_summed"] = ev.get("ip_summed")  # 3 = CHECKSUM_PARTIAL: the sender's NEEDS_CSUM
            # The path page_to_skb (or receive_small) took, as vnetlab.rx.RxResult.path names it.
            ret = cur.get("page_to_skb_ret")
            if cur.get("alloc") == "build_skb":
                cur["path"] = "build_skb"
            elif ret is not None:
                cur["path"] = "copy+frag" if ret["data_len"] else "copy"
            cur["frame_len"] = cur["gro"]["len"] + 14  # eth_type_trans pulled ETH_HLEN before napi_gro_receive
            pkts.append(cur)
            cur = {}
    return pkts


def parse_ethtool_k(lines: list[str]) -> dict:
    feats = {}
    for line in lines:
        m = re.match(r"^\s*([a-z0-9_-]+): (on|off)( \[fixed\]| \[requested on\]| \[requested off\])?$", line)
        if m:
            feats[m.group(1)] = m.group(2) + (" fixed" if m.group(3) == " [fixed]" else "")
    return feats


def parse_netdev(lines: list[str]) -> dict:
    out: dict = {"a": {}, "b": {}}
    side = "a"
    for line in lines:
        if line.startswith("--- b"):
            side = "b"
            continue
        m = re.match(r"^\s*([^:\s]+):\s*(.*)$", line)
        if m and not line.lstrip().startswith(("Inter", "face")):
            nums = [int(x) for x in m.group(2).split()]
            if len(nums) == 16:
                out[side][m.group(1)] = {"rx_packets": nums[1], "tx_packets": nums[9], "rx_bytes": nums[0],
                                         "tx_bytes": nums[8], "tx_dropped": nums[11]}
    return out


def virtio_feature_bits(bitstring: str) -> list[int]:
    return [i for i, c in enumerate(bitstring) if c == "1"]


VIRTIO_NET_F = {0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC", 7: "GUEST_TSO4",
                8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO", 11: "HOST_TSO4", 12: "HOST_TSO6",
                13: "HOST_ECN", 14: "HOST_UFO", 15: "MRG_RXBUF", 16: "STATUS", 17: "CTRL_VQ", 18: "CTRL_RX",
                19: "CTRL_VLAN", 21: "GUEST_ANNOUNCE", 22: "MQ", 23: "CTRL_MAC_ADDR", 24: "NOTIFY_ON_EMPTY",
                27: "ANY_LAYOUT", 28: "RING_INDIRECT_DESC", 29: "RING_EVENT_IDX", 32: "VERSION_1",
                33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER", 36: "ORDER_PLATFORM",
                37: "SR_IOV", 38: "NOTIFICATION_DATA", 54: "HOST_USO", 55: "HASH_REPORT", 56: "GUEST_HDRLEN",
                60: "RSS", 61: "RSC_EXT", 62: "STANDBY", 63: "SPEED_DUPLEX"}


def parse_console(console: str, cfg: Config) -> dict:
    res: dict = {"rx": None, "features": [], "gso": []}
    steps_done: list[dict] = []
    netdev: dict = {}
    gso_traces: dict = {}
    gso_send: dict = {}
    for kind, labels, lines in blocks(console):
        if kind == "kernel":
            res["uname_r"] = lines[0].strip() if lines else None
            res["proc_version"] = lines[1].strip() if len(lines) > 1 else None
        elif kind == "virtio_features":
            nics = {}
            for line in lines:
                parts = line.split()
                if len(parts) == 2:
                    bits = virtio_feature_bits(parts[1])
                    nics[parts[0]] = {"bits": parts[1], "names": [VIRTIO_NET_F.get(b, f"bit{b}") for b in bits]}
            res["virtio_features"] = nics
        elif kind == "links":
            res["links"] = [l.strip() for l in lines if l.strip()]
        elif kind == "mergeable_rx_buffer_size":
            res["mergeable_rx_buffer_size_before"] = [l.strip() for l in lines if l.strip()]
        elif kind == "mergeable_rx_buffer_size_after":
            res["mergeable_rx_buffer_size_after"] = [l.strip() for l in lines if l.strip()]
        elif kind == "kprobe_events":
            res["kprobe_events"] = [l.strip() for l in lines if l.strip()]
        elif kind == "trace" and labels and labels[0] == "rx":
            res["rx"] = rx_packets(trace_events(lines))
        elif kind == "trace" and labels and labels[0] == "gso":
            gso_traces[labels[1]] = trace_events(lines)
        elif kind == "udptool" and labels and labels[0] == "gso":
            gso_send[labels[1]] = [l.strip() for l in lines if l.strip()]
        elif kind == "udptool" and labels and labels[0] == "rx":
            res["rx_sender"] = [l.strip() for l in lines if l.strip()]
        elif kind == "receiver":
            res[f"receiver_{labels[0]}"] = [l.strip() for l in lines if l.strip()]
        elif kind == "ethtool_K":
            phase, _, n = labels[0].partition(".")
            rc = next((int(l[3:]) for l in lines if l.startswith("rc=")), None)
            steps_done.append({"phase": phase, "step": int(n), "dev": labels[1],
                               "command": lines[0].strip() if lines else "",
                               "output": [l.strip() for l in lines[1:] if l.strip() and not l.startswith("rc=")],
                               "rc": rc})
        elif kind == "ethtool":
            phase, _, n = labels[0].partition(".")
            res["features"].append({"phase": phase, "step": int(n), "dev": labels[1],
                                    "ethtool_k": parse_ethtool_k(lines)})
        elif kind == "netdev":
            netdev[labels[0]] = parse_netdev(lines)
    res["ethtool_K"] = steps_done
    for case, evs in gso_traces.items():
        before, after = netdev.get(f"{case}.before", {}), netdev.get(f"{case}.after", {})
        delta = {}
        for side in ("a", "b"):
            for dev, c in after.get(side, {}).items():
                b = before.get(side, {}).get(dev)
                if b and dev != "lo":
                    d = {k: c[k] - b[k] for k in ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes", "tx_dropped")}
                    if any(d.values()):
                        delta[f"{side}:{dev}"] = d
        xmit = [{"dev": e.get("dev"), "len": e.get("len"), "gso_size": e.get("gso_size"),
                 "gso_segs": e.get("gso_segs"), "gso_type": e.get("gso_type")}
                for e in evs if e["event"] == "net_dev_start_xmit"]
        seg = [{"dev": e.get("dev"), "len": e.get("len")} for e in evs if e["event"] == "gso"]
        res["gso"].append({"route_dev": case, "sender": gso_send.get(case, []), "counters_delta": delta,
                           "start_xmit": xmit, "skb_gso_segment": seg,
                           "segmented_at": sorted({s["dev"] for s in seg})})
    res["done"] = "@@ done" in console
    return res


# ---------------------------------------------------------------------------------------------------------
# driver

def dumps(obj, depth: int = 0) -> str:
    """JSON with one line per list item below the top levels: small diffs, readable, small files."""
    if depth >= 3 or not isinstance(obj, (dict, list)) or not obj:
        return json.dumps(obj, separators=(", ", ": "))
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(f"{inner}{dumps(v, depth + 1)}" for v in obj) + f"\n{pad}]"


def write_result(cfg: Config, meta: dict, console: str, out: Path) -> dict:
    res = parse_console(console, cfg)
    doc = dict(meta)
    doc["guest"] = {"modules": meta["modules"], "virtio_features": res.get("virtio_features"),
                    "links": res.get("links"), "kprobe_events": res.get("kprobe_events"),
                    "mergeable_rx_buffer_size_before": res.get("mergeable_rx_buffer_size_before"),
                    "mergeable_rx_buffer_size_after": res.get("mergeable_rx_buffer_size_after")}
    del doc["modules"]
    doc["kernel"]["uname_r"] = res.get("uname_r")
    doc["kernel"]["proc_version"] = res.get("proc_version")
    if cfg.rx_sizes:
        doc["rx"] = {"payload_sizes_sent": cfg.rx_sizes * cfg.repeat, "l4": "udp", "ip": 4,
                     "sender": res.get("rx_sender"), "receiver": res.get("receiver_rx"),
                     "packets": res["rx"]}
    if cfg.features:
        doc["features"] = {"steps": [{"dev": d, "args": a} for d, a in STEPS], "reset": RESET_K,
                           "ethtool_K": res["ethtool_K"], "ethtool_k": res["features"]}
    if cfg.gso:
        doc["gso"] = {"gso_size": GSO_SIZE, "payloads": [int(x) for x in GSO_PAYLOADS.split()],
                      "receiver": res.get("receiver_gso"), "cases": res["gso"]}
    (out / f"{cfg.name}.json").write_text(dumps(doc) + "\n")
    return res


def reparse(work: Path, out: Path) -> int:
    """Rebuild data/lab/*.json from the console logs and run metadata of the last run (no QEMU)."""
    n = 0
    for cfg in CONFIGS:
        meta_path, log_path = work / f"run-{cfg.name}.json", work / f"console-{cfg.name}.log"
        if meta_path.exists() and log_path.exists():
            write_result(cfg, json.loads(meta_path.read_text()), log_path.read_text(errors="replace"), out)
            log(f"rewrote {out / (cfg.name + '.json')}")
            n += 1
    return 0 if n else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="fetch the kernel, build the initramfs, boot each configuration, write data/lab/")
    r.add_argument("--only", nargs="*", help="configurations to run (default: all): "
                   + ", ".join(c.name for c in CONFIGS))
    r.add_argument("--backend", choices=("tap", "hub"), default="tap",
                   help="how the two NICs are wired (default tap: vnet headers, offloads negotiated)")
    r.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    r.add_argument("--timeout", type=int, default=0, help="seconds per QEMU boot (default 180 KVM, 900 TCG)")
    r.add_argument("--work", type=Path, default=WORK)
    r.add_argument("--out", type=Path, default=DATA, help="where the JSON results go (default data/lab/)")
    p = sub.add_parser("parse", help="rewrite data/lab/ from the console logs of the last run (no QEMU)")
    p.add_argument("--work", type=Path, default=WORK)
    p.add_argument("--out", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.cmd == "parse":
        return reparse(args.work, args.out)
    # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C: QEMU is stopped and the netns deleted.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if os.geteuid() != 0:
        raise SystemExit("the lab needs root (network namespace and tap devices for QEMU)")
    if not shutil.which("qemu-system-x86_64"):
        raise SystemExit("qemu-system-x86_64 missing: apt-get install -y qemu-system-x86")
    t_start = time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    kern = fetch_kernel(args.work)
    vmlinux = extract_vmlinux(kern["vmlinuz"], args.work / f"vmlinux-{kern['release']}")
    offsets = btf_offsets(vmlinux)
    initrd, modnames = build_initramfs(args.work, kern)
    if args.accel == "auto":
        usable, why = kvm_usable(kern, args.work)
        accel = "kvm" if usable else "tcg"
        log(f"accel {accel}: {why}")
    else:
        accel = args.accel
    timeout = args.timeout or (180 if accel == "kvm" else 900)
    qemu_version = sh(["qemu-system-x86_64", "--version"]).stdout.splitlines()[0]
    log(f"kernel {kern['release']} ({kern['package_version']}), accel {accel}, {qemu_version}")
    configs = [c for c in CONFIGS if not args.only or c.name in args.only]
    failures = 0
    for cfg in configs:
        backend = cfg.backend or args.backend
        guest_timeout = timeout - 15
        conf = guest_conf(cfg, offsets, guest_timeout)
        run_initrd = args.work / f"initramfs-{cfg.name}.cpio"
        run_initrd.write_bytes(initrd.read_bytes() + _newc([("lab.conf", 0o100644, conf.encode())]))
        wire = TapWire(str(os.getpid())) if backend == "tap" else HubWire()
        with wire:
            argv_q = qemu_argv(kern, run_initrd, cfg, wire.netdev_args(), accel)
            log(f"boot {cfg.name}: {cfg.description}")
            console, secs, timed_out = run_qemu(argv_q, wire.prefix(), args.work / f"console-{cfg.name}.log", timeout)
        res = parse_console(console, cfg)
        ok = res["done"] and not timed_out and (not cfg.rx_sizes or res["rx"])
        log(f"  {cfg.name}: {secs:.1f} s, {'ok' if ok else 'FAILED'}; "
            f"{len(res['rx'] or [])} rx packets, {len(res['features'])} ethtool -k, {len(res['gso'])} gso cases")
        if not ok:
            failures += 1
            continue
        rel = lambda p: str(p).replace(str(args.work), "lab/work")
        meta = {
            "schema": SCHEMA,
            "config": cfg.name,
            "description": cfg.description,
            "kernel": {"package": kern["package"], "package_version": kern["package_version"],
                       "release": kern["release"], "btf_offsets": offsets},
            "qemu": {"version": qemu_version, "accel": accel, "backend": backend,
                     "argv": [rel(a) for a in argv_q], "device_props": cfg.device_props,
                     "wire": ("two taps (vnet_hdr=on) on a bridge in a private netns, no addresses"
                              if backend == "tap" else "QEMU hub (hubport), no vnet header")},
            "modules": modnames,
            "run_seconds": round(secs, 1),
        }
        (args.work / f"run-{cfg.name}.json").write_text(json.dumps(meta, indent=1))
        write_result(cfg, meta, console, args.out)
        log(f"  wrote {args.out / (cfg.name + '.json')}")
    log(f"total {time.monotonic() - t_start:.1f} s, {failures} configuration(s) failed")
    return 1 if failures else 0
