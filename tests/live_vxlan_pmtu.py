"""Measure a vxlan device whose underlay MTU was lowered under it (run as root on Linux).

Two network namespaces joined by a veth pair (a0 / b0, the underlay, 10.0.0.0/24); vxlan vx0 on a0 and vx1 on b0
(VNI 42, 192.168.42.0/24 inside). vx0 is made while a0 has the default MTU 1500, so vx0 gets 1500 - 50 = 1450
(drivers/net/vxlan/vxlan_core.c vxlan_config_apply: lowerdev->mtu - vxlan_headroom); then a0 and b0 are lowered
to 1400 and vx0 keeps 1450 (vxlan has no NETDEV_CHANGEMTU handler for its lower device). Each case sends from
the vx0 side with a fresh route cache and records:

- what the sender's calls returned (errno names), the sender's IP and ICMP counters (/proc/net/snmp) and the
  inner route's cached PMTU afterwards (``ip route get``);
- every frame b0 received (an AF_PACKET socket on b0: outer IP length, whether an IP fragment), the receiver's
  reassembly counters, the datagrams / bytes the UDP (TCP) socket behind vx1 got.

``python tests/live_vxlan_pmtu.py data/live/pmtu/vxlan_underlay_mtu.json`` writes the recording the tests compare
the model with (tests/test_vxlan_pmtu.py); :class:`Pair` is what the live test runs.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import subprocess
import sys
import time
from pathlib import Path

UNDERLAY_MTU = 1400
INNER_DST = "192.168.42.2"

# The receiver: an AF_PACKET socket on b0 (outer frames), a UDP socket on 9000, a TCP listener on 9001; it prints
# one JSON line when its stdin closes.
RECEIVER = r"""
import json, socket, struct, sys, threading
frames, dgrams, tcp = [], [], [0]
pk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
pk.bind(("b0", 0))
pk.settimeout(0.2)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("192.168.42.2", 9000))
u.settimeout(0.2)
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("192.168.42.2", 9001))
t.listen(1)
t.settimeout(0.2)
stop = threading.Event()
def sniff():
    while not stop.is_set():
        try:
            f, addr = pk.recvfrom(70000)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 34:
            continue
        if f[12:14] == b"\x08\x00":
            tot, fo = struct.unpack("!H2xH", f[16:22])
            frames.append([tot, bool(fo & 0x3FFF), f[23]])
        elif f[12:14] == b"\x86\xdd" and len(f) >= 54 and f[20] in (17, 44):  # UDP, or a fragment header
            frames.append([40 + struct.unpack("!H", f[18:20])[0], f[20] == 44, f[20]])
def udp():
    while not stop.is_set():
        try:
            dgrams.append(len(u.recv(70000)))
        except socket.timeout:
            pass
def tcps():
    while not stop.is_set():
        try:
            c, _ = t.accept()
        except socket.timeout:
            continue
        c.settimeout(0.2)
        while not stop.is_set():
            try:
                d = c.recv(65536)
            except socket.timeout:
                continue
            if not d:
                break
            tcp[0] += len(d)
        c.close()
ths = [threading.Thread(target=f) for f in (sniff, udp, tcps)]
for th in ths:
    th.start()
print("ready", flush=True)
sys.stdin.read()
stop.set()
for th in ths:
    th.join()
print(json.dumps({"frames": frames, "datagrams": dgrams, "tcp_bytes": tcp[0]}), flush=True)
"""

SENDER = r"""
import errno, json, socket, sys
case = json.loads(sys.argv[1])
out = {"errors": []}
if case["proto"] == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if case.get("gso_size"):
        s.setsockopt(socket.SOL_UDP, 103, case["gso_size"])  # UDP_SEGMENT (include/uapi/linux/udp.h)
    for _ in range(case["count"]):
        try:
            s.sendto(b"x" * case["size"], ("192.168.42.2", 9000))
        except OSError as e:
            out["errors"].append(errno.errorcode[e.errno])
else:
    try:
        s = socket.create_connection(("192.168.42.2", 9001), timeout=10)
        s.sendall(b"x" * case["size"])
        s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        s.recv(1)
        out["mss_at_end"] = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
        s.close()
    except OSError as e:
        out["errors"].append(errno.errorcode.get(e.errno, str(e)))
print(json.dumps(out))
"""

COUNTERS = {"Ip": ("FragCreates", "FragOKs", "FragFails", "ReasmReqds", "ReasmOKs", "ReasmFails"),
            "Icmp": ("OutDestUnreachs", "InDestUnreachs")}
COUNTERS6 = ("Ip6FragCreates", "Ip6FragOKs", "Ip6FragFails", "Ip6ReasmReqds", "Ip6ReasmOKs", "Icmp6OutPktTooBigs",
             "Icmp6InPktTooBigs")


def _sh(*argv: str, ns: str | None = None, **kw) -> subprocess.CompletedProcess:
    cmd = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60, **kw)


def _snmp(ns: str) -> dict[str, int]:
    lines = _sh("cat", "/proc/net/snmp", ns=ns).stdout.splitlines()
    got: dict[str, int] = {}
    for head, vals in zip(lines[::2], lines[1::2]):
        group, names = head.split(":")
        if group in COUNTERS:
            for n, v in zip(names.split(), vals.split(":")[1].split()):
                if n in COUNTERS[group]:
                    got[group + n] = int(v)
    for line in _sh("cat", "/proc/net/snmp6", ns=ns).stdout.splitlines():
        name, value = line.split()
        if name in COUNTERS6:
            got[name] = int(value)
    return got


def _route_mtu(ns: str) -> int | None:
    out = _sh("ip", "route", "get", INNER_DST, ns=ns).stdout
    words = out.split()
    return int(words[words.index("mtu") + 1]) if "mtu" in words else None


class Pair:
    """The two namespaces, the underlay and the two vxlan ends, made with ``df`` on vx0 (unset or set)."""

    def __init__(self, df: str, outer: int = 4, bridged: bool = False) -> None:
        tag = secrets.token_hex(3)
        self.a, self.b = f"vnlivepmtuA{tag}", f"vnlivepmtuB{tag}"
        self.df = df
        self.outer = outer
        self.bridged = bridged  # vx0 a port of bridge br0, which holds the inner address

    def __enter__(self) -> Pair:
        try:
            return self._make()
        except BaseException:
            self.__exit__()
            raise

    def _make(self) -> Pair:
        a, b = self.a, self.b
        _sh("ip", "netns", "add", a)
        _sh("ip", "netns", "add", b)
        for ns in (a, b):  # no IPv6 autoconfiguration or MLD frames in the counts (an IPv6 underlay keeps it)
            off = "0" if self.outer == 6 else "1"
            _sh("sysctl", "-qw", f"net.ipv6.conf.all.disable_ipv6={off}", f"net.ipv6.conf.default.disable_ipv6={off}",
                ns=ns)
        _sh("ip", "link", "add", "a0", "netns", a, "type", "veth", "peer", "b0", "netns", b)
        ends = ((a, "a0", "10.0.0.1", "10.0.0.2", "vx0"), (b, "b0", "10.0.0.2", "10.0.0.1", "vx1"))
        if self.outer == 6:
            ends = ((a, "a0", "fd00::1", "fd00::2", "vx0"), (b, "b0", "fd00::2", "fd00::1", "vx1"))
        for ns, dev, me, peer, vx in ends:
            _sh("ip", "link", "set", "lo", "up", ns=ns)
            _sh("ip", "addr", "add", me + ("/64" if self.outer == 6 else "/24"), "dev", dev,
                *(["nodad"] if self.outer == 6 else []), ns=ns)
            _sh("ip", "link", "set", dev, "up", ns=ns)
            df = ["df", self.df] if vx == "vx0" and self.outer == 4 else []
            _sh("ip", "link", "add", vx, "type", "vxlan", "id", "42", "dstport", "4789", "dev", dev, "local", me,
                "remote", peer, *df, ns=ns)
            inner = "192.168.42.1/24" if vx == "vx0" else "192.168.42.2/24"
            top = vx
            if self.bridged and vx == "vx0":
                _sh("ip", "link", "add", "br0", "type", "bridge", ns=ns)
                _sh("ip", "link", "set", vx, "master", "br0", ns=ns)
                _sh("ip", "link", "set", "br0", "up", ns=ns)
                top = "br0"
            if self.outer == 6:  # no MLD / ND over the tunnel: IPv6 off on the vxlan device before it is up
                _sh("sysctl", "-qw", f"net.ipv6.conf.{vx}.disable_ipv6=1", ns=ns)
            _sh("ip", "addr", "add", inner, "dev", top, ns=ns)
            _sh("ip", "link", "set", vx, "up", ns=ns)
        # permanent neighbour entries for the inner addresses: no ARP probe rides the tunnel between the cases
        top_a = "br0" if self.bridged else "vx0"
        mac_a = json.loads(_sh("ip", "-j", "link", "show", top_a, ns=a).stdout)[0]["address"]
        mac_b = json.loads(_sh("ip", "-j", "link", "show", "vx1", ns=b).stdout)[0]["address"]
        _sh("ip", "neigh", "replace", INNER_DST, "lladdr", mac_b, "dev", top_a, "nud", "permanent", ns=a)
        _sh("ip", "neigh", "replace", "192.168.42.1", "lladdr", mac_a, "dev", "vx1", "nud", "permanent", ns=b)
        self.vx_mtu_before = self.mtu(a, "vx0")
        for ns, dev in ((a, "a0"), (b, "b0")):
            _sh("ip", "link", "set", dev, "mtu", str(UNDERLAY_MTU), ns=ns)
        self.vx_mtu_after = self.mtu(a, "vx0")
        # the underlay's neighbour entries first, so that no case waits on ARP
        warm = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'w', ('%s', 9))"
        _sh(sys.executable, "-c", warm % INNER_DST, ns=a)
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    @staticmethod
    def mtu(ns: str, dev: str) -> int:
        return json.loads(_sh("ip", "-j", "link", "show", dev, ns=ns).stdout)[0]["mtu"]

    def run(self, case: dict) -> dict:
        a, b = self.a, self.b
        _sh("ip", "route", "flush", "cache", ns=a)
        if case.get("primed"):  # one send first, so that this one meets the route's cached PMTU
            _sh(sys.executable, "-c", SENDER, json.dumps({**case, "count": 1}), ns=a)
            time.sleep(0.3)
        rcv = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", RECEIVER], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        assert rcv.stdout is not None and rcv.stdin is not None
        assert rcv.stdout.readline().strip() == "ready"
        sa, sb = _snmp(a), _snmp(b)
        sent = json.loads(_sh(sys.executable, "-c", SENDER, json.dumps(case), ns=a).stdout)
        time.sleep(0.5)
        ea, eb = _snmp(a), _snmp(b)
        out, _ = rcv.communicate("", timeout=30)
        got = json.loads(out.strip().splitlines()[-1])
        frames = got["frames"]
        return {
            "case": case, "df": self.df, "outer": self.outer, "bridged": self.bridged, "sender": sent,
            "route_mtu_after": _route_mtu(a),
            "sender_counters": {k: ea[k] - sa[k] for k in ea},
            "receiver_counters": {k: eb[k] - sb[k] for k in eb},
            "b0_frames": len(frames), "b0_fragments": sum(1 for f in frames if f[1]),
            "b0_largest": max((f[0] for f in frames), default=0),
            "b0_icmp": sum(1 for f in frames if f[2] == 1),
            "datagrams": got["datagrams"], "udp_bytes": sum(got["datagrams"]), "tcp_bytes": got["tcp_bytes"],
        }


CASES = (
    [{"proto": "udp", "size": n, "count": 1} for n in (100, 1322, 1323, 1422, 1423, 3000, 9000)]
    + [{"proto": "udp", "size": n, "count": 1, "primed": True} for n in (1323, 3000)]
    + [{"proto": "udp", "size": 14000, "gso_size": 1400, "count": 1},
       {"proto": "udp", "size": 14000, "gso_size": 1400, "count": 1, "primed": True},
       {"proto": "udp", "size": 14000, "gso_size": 1300, "count": 1},
       {"proto": "tcp", "size": 200000}]
)


# vx0 a bridge port: skb_tunnel_check_pmtu's reply argument (netif_is_any_bridge_port) is true
BRIDGED_CASES = ({"proto": "udp", "size": 1322, "count": 1}, {"proto": "udp", "size": 1323, "count": 1},
                 {"proto": "udp", "size": 14000, "gso_size": 1400, "count": 1})


def measure() -> dict:
    """Every case with df unset and df set; the kernel it ran on."""
    runs = []
    meta = {}
    for df, outer in (("unset", 4), ("set", 4), ("unset", 6)):
        with Pair(df, outer) as p:
            meta[f"vx_mtu_ipv{outer}"] = [p.vx_mtu_before, p.vx_mtu_after]
            runs.extend(p.run(c) for c in CASES)
    with Pair("unset", 4, bridged=True) as p:
        runs.extend(p.run(c) for c in BRIDGED_CASES)
    return {"kernel": platform.release(), "underlay_mtu": UNDERLAY_MTU, **meta, "runs": runs}


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    data = measure()
    text = json.dumps(data, indent=1)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text + "\n")
    print(text)
