"""QEMU for the lab: how the guest's NICs are wired, the command line, and a bounded run.

Wires connect the guest's NICs in pairs (NIC 0 with 1, NIC 2 with 3). ``TapWire``: per pair two tap devices with
``vnet_hdr=on`` on a bridge inside a private network namespace the lab creates and deletes (no address, no
route: frames only go from one guest NIC to its partner), so QEMU negotiates the virtio offloads as with a real
host. ``HubWire``: QEMU's own hubs (no host device; no vnet header, so no offloads).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from lab.util import sh

MACS = ["52:54:00:12:34:01", "52:54:00:12:34:02", "52:54:00:12:34:03", "52:54:00:12:34:04"]


class TapWire:
    """Taps on bridges in a private network namespace: NIC 2i wired to NIC 2i+1."""

    def __init__(self, tag: str, nics: int = 2) -> None:
        self.ns = f"vnetlab-lab-{tag}"
        self.taps = tuple(f"vlt{i}" for i in range(nics))

    def __enter__(self) -> TapWire:
        ns = self.ns
        sh(["ip", "netns", "add", ns])
        try:
            def run(*c: str) -> None:
                sh(["ip", "netns", "exec", ns, *c])

            run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            for i, t in enumerate(self.taps):
                br = f"vlbr{i // 2}"
                if i % 2 == 0:
                    run("ip", "link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0")
                run("ip", "tuntap", "add", t, "mode", "tap", "vnet_hdr")
                run("ip", "link", "set", t, "mtu", "65000", "master", br, "up")
                if i % 2 == 1:
                    run("ip", "link", "set", br, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def netdev_args(self) -> list[str]:
        return [f"tap,id=n{i},ifname={t},script=no,downscript=no,vnet_hdr=on" for i, t in enumerate(self.taps)]

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]

    def describe(self) -> str:
        return (f"{len(self.taps)} taps (vnet_hdr=on) on {len(self.taps) // 2} bridge(s) in a private netns, "
                "NIC 2i wired to NIC 2i+1, no addresses")

    def __exit__(self, *exc) -> None:
        for t in self.taps:
            sh(["ip", "netns", "exec", self.ns, "ip", "link", "del", t], check=False)
        sh(["ip", "netns", "del", self.ns], check=False)


class HubWire:
    def __init__(self, nics: int = 2) -> None:
        self.nics = nics

    def __enter__(self) -> HubWire:
        return self

    def netdev_args(self) -> list[str]:
        return [f"hubport,id=n{i},hubid={i // 2}" for i in range(self.nics)]

    def prefix(self) -> list[str]:
        return []

    def describe(self) -> str:
        return "QEMU hub (hubport), no vnet header; NIC 2i wired to NIC 2i+1"

    def __exit__(self, *exc) -> None:
        pass


def argv(kern: dict, initrd: Path, netdevs: list[str], accel: str, *, device_props: str = "", smp: int = 1,
         plugin: tuple[Path, Path] | None = None, tcg_single_thread: bool = False) -> list[str]:
    """The QEMU command line: q35, serial console, the kernel and initramfs, one virtio-net-pci per netdev."""
    props = f",{device_props}" if device_props else ""
    acc = "tcg,thread=single" if accel == "tcg" and tcg_single_thread else accel
    out = ["qemu-system-x86_64", "-machine", "q35", "-accel", acc, "-cpu", "host" if accel == "kvm" else "max",
           "-m", "512", "-smp", str(smp), "-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio",
           "-monitor", "none", "-kernel", str(kern["vmlinuz"]), "-initrd", str(initrd),
           "-append", "console=ttyS0 quiet loglevel=1 panic=-1 nokaslr"]
    if plugin:
        out += ["-plugin", str(plugin[0]), "-d", "plugin", "-D", str(plugin[1])]
    for i, nd in enumerate(netdevs):
        out += ["-netdev", nd, "-device", f"virtio-net-pci,netdev=n{i},mac={MACS[i]}{props}"]
    return out


def run(cmd: list[str], prefix: list[str], log_path: Path, timeout: float) -> tuple[str, float, bool]:
    """Run QEMU in its own process group under a timeout; returns (console, seconds, timed_out)."""
    t0 = time.monotonic()
    with open(log_path, "w") as out:
        proc = subprocess.Popen(prefix + cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
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


def kvm_usable(kern: dict, work: Path) -> tuple[bool, str]:
    """/dev/kvm opens and a kernel boots under it (nested KVM can fail: "failed to set MSR 0x10a" with
    -cpu host, a silent hang with -cpu kvm64). A 25-second probe boot to the root-mount panic decides."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return False, f"/dev/kvm: {e.strerror}"
    os.close(fd)
    cmd = ["qemu-system-x86_64", "-machine", "q35", "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults",
           "-no-reboot", "-display", "none", "-serial", "stdio", "-monitor", "none", "-kernel", str(kern["vmlinuz"]),
           "-append", "console=ttyS0 panic=-1"]
    out, secs, timed_out = run(cmd, [], work / "kvm-probe.log", 25)
    if "Linux version" in out and not timed_out:
        return True, f"probe boot under KVM took {secs:.1f} s"
    last = [line for line in out.splitlines() if line.strip()][-1:] or ["no console output"]
    return False, f"KVM probe boot failed ({'timed out' if timed_out else 'exited'}: {last[0][:120]})"


def version() -> str:
    return sh(["qemu-system-x86_64", "--version"]).stdout.splitlines()[0]
