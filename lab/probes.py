"""Probes: each per-kernel rule of data/kernels.toml, data/gro.toml and data/arches.toml decided from a source tree.

A probe names the file, the function (or macro / struct) and what it looks for, and returns a :class:`Finding`:
the value, and the line it matched (file:line and the line itself). When the rule is decided by an absence (no
such test in the function), the finding records the function's first line and says what was not found. Rules no
probe can decide are listed in :data:`HAND_WRITTEN` with the reason; ``python -m lab profile`` keeps them from the
committed profile.

A tree is a kernel source directory: Debian's linux-source-X.Y unpacked (only the files of :data:`FILES` are needed;
:func:`lab.profile.extract` takes just those from the .deb).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from lab import csyntax

# Every file a probe reads (tar member names under the tree's top directory); lab.profile extracts only these.
FILES = (
    "Makefile",
    "drivers/net/virtio_net.c", "drivers/net/veth.c", "drivers/net/vxlan.c", "drivers/net/vxlan/vxlan_core.c",
    "drivers/net/bonding/bond_main.c",
    "include/linux/netdev_features.h", "include/linux/netdevice.h", "include/linux/skbuff.h", "include/linux/udp.h",
    "include/net/page_pool/helpers.h",
    "net/core/dev.c", "net/core/gro.c", "net/core/skbuff.c", "net/core/page_pool.c",
    "net/ipv4/udp.c", "net/ipv4/udp_offload.c", "net/ipv4/tcp_offload.c",
    "net/8021q/vlan_dev.c", "net/ethtool/common.c", "net/Kconfig",
    "arch/x86/include/asm/processor.h", "arch/arm64/include/asm/processor.h", "arch/powerpc/include/asm/processor.h",
    "arch/mips/include/asm/processor.h", "arch/x86/include/asm/page_types.h", "arch/arm64/include/asm/cache.h",
    "arch/powerpc/include/asm/cache.h",
)


class ProbeError(Exception):
    """A probe could not decide its rule from the tree (a file or function it reads is not there)."""


@dataclass(frozen=True)
class Match:
    file: str
    line: int  # 1-based
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text.strip()}"


@dataclass(frozen=True)
class Finding:
    table: str
    rule: str
    value: Any
    match: Match
    function: str
    found: bool  # False: the value follows from an absence in `function`
    looks_for: str

    def source(self, label: str) -> str:
        if self.found:
            what = f"`{self.match.text.strip()}`"
        elif self.function == self.match.file:
            what = f"no {self.looks_for} in the file"
        else:
            what = f"no {self.looks_for} in the function (it starts `{self.match.text.strip()}`)"
        return f"{self.match.file}:{self.match.line} {self.function}, {label}: {what}"


def _strip_comments(text: str) -> str:
    # keep line numbers: blank out comment bodies but keep their newlines
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


class Tree:
    """A kernel source tree on disk, read file by file."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        if not (self.root / "Makefile").exists():
            raise ProbeError(f"{self.root} is not a kernel source tree (no Makefile)")
        self._cache: dict[str, list[str] | None] = {}

    @cached_property
    def version(self) -> str:
        text = (self.root / "Makefile").read_text()
        parts = [re.search(rf"^{k}\s*=\s*(\d+)", text, re.M) for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL")]
        if not all(parts):
            raise ProbeError(f"{self.root}/Makefile has no VERSION/PATCHLEVEL/SUBLEVEL")
        return ".".join(p.group(1) for p in parts)  # type: ignore[union-attr]

    @cached_property
    def debian_version(self) -> str | None:
        """The Debian package version (first line of changelog.Debian.gz kept beside the tree), if any."""
        log = self.root / "changelog.Debian.gz"
        if not log.exists():
            return None
        first = gzip.open(log, "rt").readline()
        m = re.match(r"[\w.+-]+ \(([^)]+)\)", first)
        return m.group(1) if m else None

    @cached_property
    def label(self) -> str:
        mm = ".".join(self.version.split(".")[:2])
        if self.debian_version:
            return f"Debian linux-source-{mm} ({self.debian_version})"
        return f"tree {self.root.name} (v{self.version})"

    def has(self, file: str) -> bool:
        return self.lines(file) is not None

    def lines(self, file: str) -> list[str] | None:
        if file not in self._cache:
            path = self.root / file
            self._cache[file] = _strip_comments(path.read_text(errors="replace")).split("\n") if path.exists() else None
        return self._cache[file]

    def raw_line(self, file: str, n: int) -> str:
        return (self.root / file).read_text(errors="replace").split("\n")[n - 1]

    def body(self, file: str, name: str) -> tuple[int, list[str]]:
        """(first line number, lines) of C function / struct / enum / macro ``name`` in ``file``."""
        lines = self.lines(file)
        if lines is None:
            raise ProbeError(f"{self.label}: {file} is not in the tree")
        if name.startswith("#define "):
            macro = name.removeprefix("#define ")
            for i, ln in enumerate(lines):
                if re.match(rf"\s*#\s*define\s+{re.escape(macro)}\b", ln):
                    j = i
                    while lines[j].rstrip().endswith("\\"):
                        j += 1
                    return i + 1, lines[i:j + 1]
            raise ProbeError(f"{self.label}: {file} has no macro {macro}")
        for alt in name.split("|"):  # "napi_alloc_skb|__napi_alloc_skb": the first the file defines
            if alt.startswith(("struct ", "enum ")):
                pat = re.compile(rf"^{re.escape(alt)}\s*{{")
            else:
                pat = re.compile(rf"^(\S.*[\s*])?{re.escape(alt)}\s*\([^;]*$")
            for i, ln in enumerate(lines):
                if not pat.match(ln):
                    continue
                j = i
                while "{" not in lines[j] and ";" not in lines[j] and j < len(lines) - 1:
                    j += 1
                if "{" not in lines[j]:
                    continue  # a prototype, not the definition
                for j in range(i, len(lines)):
                    if re.match(r"^}", lines[j]):
                        return i + 1, lines[i:j + 1]
        raise ProbeError(f"{self.label}: {file} has no {name}")

    def which(self, file: str, names: str | None) -> str | None:
        """The first of "a|b" that ``file`` defines (a function renamed between versions)."""
        if names is None or "|" not in names:
            return names
        for alt in names.split("|"):
            try:
                self.body(file, alt)
                return alt
            except ProbeError:
                continue
        raise ProbeError(f"{self.label}: {file} defines none of {names}")

    def search(self, file: str, within: str | None, pattern: str) -> Match | None:
        if within is None:
            lines = self.lines(file)
            if lines is None:
                raise ProbeError(f"{self.label}: {file} is not in the tree")
            start = 1
        else:
            start, lines = self.body(file, within)
        rx = re.compile(pattern)
        for k, ln in enumerate(lines):
            if rx.search(ln):
                return Match(file, start + k, self.raw_line(file, start + k))
        return None

    def head(self, file: str, within: str | None) -> Match:
        start = 1 if within is None else self.body(file, within)[0]
        return Match(file, start, self.raw_line(file, start))


@dataclass(frozen=True)
class Probe:
    """One rule: in ``file`` (the first of ``files`` the tree has), ``function``, the first case whose regex matches
    gives the value; with no match, ``default`` (an absence), unless default is _REQUIRED."""

    table: str
    rule: str
    files: tuple[str, ...]
    function: str | None
    looks_for: str
    cases: tuple[tuple[str, Any], ...] = ()
    default: Any = None
    decide: Callable[[Tree, Probe], Finding] | None = field(default=None, compare=False)
    required: bool = False  # no default: the tree must match one case

    def file_in(self, tree: Tree) -> str:
        for f in self.files:
            if tree.has(f):
                return f
        raise ProbeError(f"{tree.label}: none of {', '.join(self.files)} is in the tree ({self.rule})")

    def run(self, tree: Tree) -> Finding:
        if self.decide is not None:
            return self.decide(tree, self)
        file = self.file_in(tree)
        function = tree.which(file, self.function)
        for pattern, value in self.cases:
            m = tree.search(file, function, pattern)
            if m is not None:
                return Finding(self.table, self.rule, value, m, function or file, True, self.looks_for)
        if self.required:
            raise ProbeError(f"{tree.label}: {file} {function}: none of the patterns for {self.rule} matched")
        return Finding(self.table, self.rule, self.default, tree.head(file, function), function or file,
                       False, self.looks_for)


def _p(table: str, rule: str, files: str | Sequence[str], function: str | None, looks_for: str,
       cases: Sequence[tuple[str, Any]] = (), default: Any = None, *, required: bool = False,
       decide: Callable[[Tree, Probe], Finding] | None = None) -> Probe:
    files = (files,) if isinstance(files, str) else tuple(files)
    return Probe(table, rule, files, function, looks_for, tuple(cases), default, decide, required)


# --- probes that compute their value --------------------------------------------------------------------------


def _config_max_skb_frags(tree: Tree, probe: Probe) -> Finding:
    """net/Kconfig config MAX_SKB_FRAGS: its default (the Debian configs keep it, 17)."""
    start, lines = 1, tree.lines("net/Kconfig") or []
    for i, ln in enumerate(lines):
        if re.match(r"config MAX_SKB_FRAGS\b", ln):
            for k in range(i, min(i + 20, len(lines))):
                m = re.match(r"\s*default\s+(\d+)", lines[k])
                if m:
                    return Finding(probe.table, probe.rule, int(m.group(1)),
                                   Match("net/Kconfig", start + k, tree.raw_line("net/Kconfig", start + k)),
                                   "config MAX_SKB_FRAGS", True, probe.looks_for)
    raise NotApplicable(f"{tree.label}: net/Kconfig has no config MAX_SKB_FRAGS default")


def _released(tree: Tree, probe: Probe) -> Finding:
    """The date of the Debian upload (the changelog trailer line); the tree's Makefile version otherwise."""
    log = tree.root / "changelog.Debian.gz"
    if not log.exists():
        raise ProbeError(f"{tree.label}: no changelog.Debian.gz beside the tree to date it")
    import email.utils

    lines = gzip.open(log, "rt").read().split("\n")
    for i, ln in enumerate(lines):
        m = re.match(r" -- .+>\s+(.+)$", ln)
        if m:
            date = email.utils.parsedate_to_datetime(m.group(1)).date().isoformat()
            return Finding(probe.table, probe.rule, date, Match("changelog.Debian.gz", i + 1, ln), "first entry",
                           True, probe.looks_for)
    raise ProbeError(f"{tree.label}: changelog.Debian.gz has no trailer line")



# --- the probes ----------------------------------------------------------------------------------------------

VIRTIO = "drivers/net/virtio_net.c"
SKBUFF_C = "net/core/skbuff.c"
GRO_FILES = ("net/core/gro.c", "net/core/skbuff.c")  # skb_gro_receive* moved to gro.c (~5.18)
DEV_GRO = ("net/core/gro.c", "net/core/dev.c")
UDP_C = "net/ipv4/udp.c"
UDP_OFF = "net/ipv4/udp_offload.c"
VXLAN = ("drivers/net/vxlan/vxlan_core.c", "drivers/net/vxlan.c")
BOND = "drivers/net/bonding/bond_main.c"

K = "kernels"
PROBES: tuple[Probe, ...] = (
    _p(K, "released", (), None, "the Debian upload date", decide=_released),
    _p(K, "page_to_skb", VIRTIO, "page_to_skb", "the build_skb branch, else what the copy path copies",
       decide=lambda t, p: _page_to_skb_ast(t, p)),
    _p(K, "napi_head", SKBUFF_C, "napi_alloc_skb|__napi_alloc_skb", "which head napi_alloc_skb(GOOD_COPY_LEN) gets",
       decide=lambda t, p: _napi_head_ast(t, p)),
    _p(K, "mergeable_truesize", VIRTIO, "add_recvbuf_mergeable", "the truesize stored in the buffer's ctx",
       decide=lambda t, p: _mergeable_truesize_ast(t, p)),
    _p(K, "mergeable_hole", VIRTIO, "add_recvbuf_mergeable", "who gets the rest of the frag page",
       decide=lambda t, p: _mergeable_hole_ast(t, p)),
    _p(K, "rq_dma_header", VIRTIO, "virtnet_rq_alloc", "a struct virtnet_rq_dma written at a new frag's offset 0",
       decide=lambda t, p: _rq_dma_ast(t, p)),
    _p(K, "max_skb_frags_rule", "include/linux/skbuff.h", None, "how MAX_SKB_FRAGS is defined",
       [(r"#define\s+MAX_SKB_FRAGS\s+CONFIG_MAX_SKB_FRAGS", "config"),
        (r"#define\s+MAX_SKB_FRAGS\s+\(65536/PAGE_SIZE", "page_size")], required=True),
    _p(K, "config_max_skb_frags_default", "net/Kconfig", None, "config MAX_SKB_FRAGS default",
       decide=_config_max_skb_frags),
    _p(K, "mergeable_hdr_padded_len", VIRTIO, "page_to_skb", "hdr_padded_len for mergeable buffers",
       decide=lambda t, p: _hdr_padded_len(t, p)),
    _p(K, "padded_vnet_hdr_len", VIRTIO, "struct padded_vnet_hdr", "sizeof(struct padded_vnet_hdr)",
       decide=lambda t, p: _padded_vnet_hdr_ast(t, p)),
    _p(K, "receive_big_len_check", VIRTIO, "receive_big", "receive_big's len > max_len drop test",
       decide=lambda t, p: _receive_big_bound_ast(t, p)),
    _p(K, "vnet_hdr_lens", VIRTIO, "virtnet_probe", "vi->hdr_len = sizeof(struct ...)",
       decide=lambda t, p: _vnet_hdr_lens_ast(t, p)),
    _p(K, "xdp_truesize", VIRTIO, "page_to_skb", "truesize = headroom ? PAGE_SIZE : truesize",
       decide=lambda t, p: _xdp_truesize(t, p)),
    _p(K, "xdp_pass_path", VIRTIO, None, "build_skb_from_xdp_buff (XDP_PASS)",
       decide=lambda t, p: _xdp_pass_path_ast(t, p)),
    _p(K, "big_build_skb_gives_pages", VIRTIO, "page_to_skb", "give_pages after the build_skb branch",
       decide=lambda t, p: _gives_pages_ast(t, p)),
    _p(K, "guest_uso", VIRTIO, None, "VIRTIO_NET_F_GUEST_USO4",
       decide=lambda t, p: _names_in_file("VIRTIO_NET_F_GUEST_USO4", True, False)(t, p)),
    _p(K, "udp_gso_list_nat_fix", UDP_OFF, "__udp_gso_segment_list", "__udpv4_gso_segment_list_csum",
       decide=lambda t, p: _call_probe("__udpv4_gso_segment_list_csum")(t, p)),
    _p(K, "udp6_gso_list_nat_fix", UDP_OFF, "__udp_gso_segment_list", "__udpv6_gso_segment_list_csum",
       decide=lambda t, p: _call_probe("__udpv6_gso_segment_list_csum")(t, p)),
    _p(K, "udp_segment_needs_csum_offload", UDP_C, "udp_send_skb", "ip_summed != CHECKSUM_PARTIAL -> -EIO",
       decide=lambda t, p: _csum_offload_eio(t, p)),
    _p(K, "uso_needs_csum", "net/core/dev.c", "netdev_fix_features", "GSO_UDP_L4 dropped without a csum feature",
       decide=lambda t, p: _uso_needs_csum(t, p)),
    _p(K, "udp_gro_accepts_fraglist", "include/linux/udp.h", "udp_unexpected_gso", "who refuses a FRAGLIST skb",
       decide=lambda t, p: _unexpected_gso_ast(t, p)),
    _p(K, "udp_gro_skips_local_encap", UDP_OFF, "udp_gro_receive", "skb->encapsulation test (no L4 GRO)",
       decide=lambda t, p: _udp_gro_skips_local_encap(t, p)),
    _p(K, "gso_max_size_check", "net/core/dev.c", "gso_features_check", "skb->len >= gso_max_size",
       decide=lambda t, p: _gso_max_size_check(t, p)),
    _p(K, "udp_max_segments", (UDP_C, "include/linux/udp.h"), "udp_send_skb", "datalen > cork->gso_size * N",
       decide=lambda t, p: _udp_max_segments_ast(t, p)),
    _p(K, "udp_gso_mtu_check", UDP_C, "udp_send_skb", "the UDP_SEGMENT size test against cork->fragsize",
       decide=lambda t, p: _udp_gso_mtu_check_ast(t, p)),
    _p(K, "udp_gso_list_geometry_check", UDP_OFF, "__udp_gso_segment", "'Detect modified geometry' before the list",
       decide=lambda t, p: _geometry_ast(t, p)),
    _p(K, "veth_gro_off_by_default", "drivers/net/veth.c", "veth_newlink", "veth_disable_gro",
       decide=lambda t, p: _veth_disables_gro(t, p)),
    _p(K, "veth_napi_for_gro", "drivers/net/veth.c", "veth_xmit", "veth_skb_is_eligible_for_gro",
       decide=lambda t, p: _call_probe("veth_skb_is_eligible_for_gro")(t, p)),
    _p(K, "veth_xdp_toggles_gro", "drivers/net/veth.c", "veth_enable_xdp", "NETIF_F_GRO switched with XDP",
       decide=lambda t, p: _veth_xdp_gro_ast(t, p)),
    _p(K, "vlan_hw_macsec", "net/8021q/vlan_dev.c", "vlan_dev_init", "NETIF_F_HW_MACSEC",
       decide=lambda t, p: _or_assign_probe("dev->hw_features", "NETIF_F_HW_MACSEC")(t, p)),
    _p(K, "vxlan_fraglist", VXLAN, "vxlan_setup", "NETIF_F_FRAGLIST in hw_features",
       decide=lambda t, p: _or_assign_probe("dev->hw_features", "NETIF_F_FRAGLIST")(t, p)),
    _p(K, "virtio_host_uso", VIRTIO, "virtnet_probe", "VIRTIO_NET_F_HOST_USO -> GSO_UDP_L4",
       decide=lambda t, p: _host_uso_ast(t, p)),
    _p(K, "virtio_gso_features", VIRTIO, "virtnet_probe", "what 'if (gso)' turns on",
       decide=lambda t, p: _gso_features_ast(t, p)),
    _p(K, "virtio_gro_hw_needs_guest_gso", VIRTIO, "virtnet_probe", "GRO_HW only with a guest offload",
       decide=lambda t, p: _gro_hw_needs_guest_gso(t, p)),
    _p(K, "bond_gso_software", BOND, "#define BOND_VLAN_FEATURES", "NETIF_F_GSO_SOFTWARE in BOND_VLAN_FEATURES",
       decide=lambda t, p: _bond_gso_software(t, p)),
    _p(K, "bond_gso_partial", BOND, "bond_setup", "features |= NETIF_F_GSO_PARTIAL",
       decide=lambda t, p: _or_assign_probe("bond_dev->features", "NETIF_F_GSO_PARTIAL")(t, p)),
    _p(K, "bond_compute", BOND, "bond_compute_features", "how vlan/mpls features start",
       decide=lambda t, p: _bond_compute_ast(t, p)),
    _p(K, "mergeable_dma_reserve", VIRTIO, "add_recvbuf_mergeable",
       "len -= sizeof(struct virtnet_rq_dma) on a fresh frag that cannot hold it",
       decide=lambda t, p: _mergeable_dma_reserve(t, p)),
    _p(K, "rx_page_pool", VIRTIO, "add_recvbuf_mergeable", "page_pool_alloc_va (virtio-net rx on a page_pool)",
       decide=lambda t, p: _call_probe("page_pool_alloc_va")(t, p)),
    _p(K, "page_pool_frag_align", "net/core/page_pool.c", "page_pool_alloc_frag_netmem|page_pool_alloc_frag",
       "size = ALIGN(size, ...)", decide=lambda t, p: _page_pool_frag_align(t, p)),
    _p(K, "rx_frag_order", VIRTIO, None, "the order of the pages rx buffers are carved from",
       decide=lambda t, p: _rx_frag_order_ast(t, p)),
    # gro.toml
    _p("gro", "skb_gro_receive_file", GRO_FILES, "skb_gro_receive", "where skb_gro_receive lives",
       decide=lambda t, p: _where(t, p, "skb_gro_receive")),
    _p("gro", "size_cap", GRO_FILES, "skb_gro_receive", "the byte cap",
       decide=lambda t, p: _size_cap_ast(t, p)),
    _p("gro", "consumed_truesize", GRO_FILES, "skb_gro_receive", "how the merged skb's truesize is charged",
       decide=lambda t, p: _consumed_truesize_ast(t, p)),
    _p("gro", "gro_udp_fwd", UDP_OFF, "udp_gro_receive", "NETIF_F_GRO_UDP_FWD",
       decide=lambda t, p: _gro_udp_fwd(t, p)),
    _p("gro", "tcp_fraglist", "net/ipv4/tcp_offload.c", None, "is_flist",
       decide=lambda t, p: _names_in_file("is_flist", True, False)(t, p)),
    _p("gro", "gso_skb_gro", DEV_GRO, "dev_gro_receive", "the flush rule for a GSO skb",
       decide=lambda t, p: _gso_skb_gro(t, p)),
    _p("gro", "receive_list_checks_flush", GRO_FILES, "skb_gro_receive_list", "NAPI_GRO_CB(skb)->flush refused",
       decide=lambda t, p: _receive_list_flush_ast(t, p)),
    _p("gro", "tcp_cwr_flush", "net/ipv4/tcp_offload.c", "tcp_gro_receive", "flush = flags & TCP_FLAG_CWR",
       decide=lambda t, p: _tcp_cwr_flush(t, p)),
    _p("gro", "tcp_flags_not_compared", "net/ipv4/tcp_offload.c", "tcp_gro_receive", "flags masked out",
       decide=lambda t, p: _tcp_flags_not_compared(t, p)),
)

# Rules no probe decides, and why (python -m lab profile keeps their committed value).
HAND_WRITTEN = {
    "sk_buff_size_64": "sizeof(struct sk_buff) depends on the config: read from the kernel's BTF (pahole on the "
                       "image's vmlinux, or the QEMU lab's btf_offsets), not from the source",
    "small_head_request": "SKB_SMALL_HEAD_CACHE_SIZE depends on MAX_HEADER, i.e. on the config: read from "
                          "/sys/kernel/slab/skbuff_small_head/object_size of a running kernel",
}



def _bond_gso_software(tree: Tree, probe: Probe) -> Finding:
    for where, file in (("#define BOND_VLAN_FEATURES", BOND), ("#define MASTER_UPPER_DEV_VLAN_FEATURES",
                                                               "include/linux/netdev_features.h")):
        try:
            start, lines = tree.body(file, where)
        except ProbeError:
            continue
        for k, ln in enumerate(lines):
            if "NETIF_F_GSO_SOFTWARE" in ln or "NETIF_F_ALL_TSO" in ln:
                return Finding(probe.table, probe.rule, "NETIF_F_GSO_SOFTWARE" in ln,
                               Match(file, start + k, tree.raw_line(file, start + k)), where.split()[1], True,
                               probe.looks_for)
    raise ProbeError(f"{tree.label}: no BOND_VLAN_FEATURES / MASTER_UPPER_DEV_VLAN_FEATURES with GSO bits")



def _where(tree: Tree, probe: Probe, function: str) -> Finding:
    for f in probe.files:
        if tree.has(f):
            try:
                start, _ = tree.body(f, function)
            except ProbeError:
                continue
            return Finding(probe.table, probe.rule, f, Match(f, start, tree.raw_line(f, start)), function, True,
                           probe.looks_for)
    raise ProbeError(f"{tree.label}: {function} is in none of {', '.join(probe.files)}")



def run_all(tree: Tree, tables: Sequence[str] = ("kernels", "gro")) -> list[Finding]:
    """Every probe of ``tables`` on ``tree``."""
    return [p.run(tree) for p in PROBES if p.table in tables]


# --- data/arches.toml: the per-architecture constants a source tree decides -----------------------------------

ARCH_DIRS = {"x86_64": "x86", "arm64": "arm64", "arm64-64k": "arm64", "ppc64le": "powerpc", "ppc64le-4k": "powerpc",
             "mips32": "mips"}

# Arch fields no probe decides, and why.
ARCH_HAND_WRITTEN = {
    "pointer_bytes": "the ABI (LP64 or ILP32), not a kernel source constant",
    "s64_align": "the ABI's alignment of a 64-bit integer, not a kernel source constant",
    "sk_buff_size": "sizeof(struct sk_buff) depends on the config: from a kernel's BTF (pahole), per kernel in "
                    "kernels.toml sk_buff_size_64 where read",
    "description": "prose",
}


def _define(tree: Tree, file: str, macro: str, *, last_before: str | None = None) -> Match | None:
    lines = tree.lines(file)
    if lines is None:
        return None
    hits = []
    for i, ln in enumerate(lines):
        if last_before and re.match(rf"\s*#\s*define\s+{last_before}\b", ln):
            break
        if re.match(rf"\s*#\s*define\s+{macro}\s", ln):
            hits.append(i)
            if not last_before:
                break
    return Match(file, hits[-1] + 1, tree.raw_line(file, hits[-1] + 1)) if hits else None


def arch_findings(tree: Tree, arch: str) -> list[Finding]:
    """net_ip_align (every arch), l1_cache_bytes (where cache.h fixes it) and page_size (x86's fixed PAGE_SHIFT)."""
    d = ARCH_DIRS[arch]
    out = []
    proc = f"arch/{d}/include/asm/processor.h"
    if not tree.has(proc):
        return out  # a tree unpacked without this arch's headers decides nothing for it
    m = _define(tree, proc, "NET_IP_ALIGN")
    if m is not None:
        out.append(Finding("arches", "net_ip_align", int(re.search(r"NET_IP_ALIGN\s+(\d+)", m.text).group(1)), m,
                           "NET_IP_ALIGN", True, "#define NET_IP_ALIGN"))
    else:  # include/linux/skbuff.h: #ifndef NET_IP_ALIGN / #define NET_IP_ALIGN 2
        g = _define(tree, "include/linux/skbuff.h", "NET_IP_ALIGN")
        if g is None:
            raise ProbeError(f"{tree.label}: include/linux/skbuff.h has no generic NET_IP_ALIGN")
        out.append(Finding("arches", "net_ip_align", int(re.search(r"NET_IP_ALIGN\s+(\d+)", g.text).group(1)), g,
                           "NET_IP_ALIGN", True, f"#define NET_IP_ALIGN (none in {proc}: the generic one)"))
    cache = f"arch/{d}/include/asm/cache.h"
    if d in ("arm64", "powerpc"):
        # arm64: one L1_CACHE_SHIFT; powerpc: the CONFIG_PPC64 branch, the last before L1_CACHE_BYTES
        m = _define(tree, cache, "L1_CACHE_SHIFT", last_before="L1_CACHE_BYTES" if d == "powerpc" else None)
        n = re.search(r"L1_CACHE_SHIFT\s+\(?(\d+)", m.text) if m is not None else None
        if m is not None and n is not None:  # a tree unpacked without cache.h leaves the field undecided
            out.append(Finding("arches", "l1_cache_bytes", 1 << int(n.group(1)), m, "L1_CACHE_SHIFT", True,
                               "#define L1_CACHE_SHIFT"))
    if d == "x86":
        m = _define(tree, "arch/x86/include/asm/page_types.h", "PAGE_SHIFT")
        n = re.search(r"PAGE_SHIFT\s+(\d+)\b", m.text) if m is not None else None
        if m is not None and n is not None:  # later trees: PAGE_SHIFT = CONFIG_PAGE_SHIFT (include/vdso/page.h)
            out.append(Finding("arches", "page_size", 1 << int(n.group(1)), m, "PAGE_SHIFT", True,
                               "#define PAGE_SHIFT"))
    return out


ARCH_CONFIG = {  # fields a Kconfig choice decides per arch profile (the profile names the choice)
    ("x86_64", "l1_cache_bytes"): "CONFIG_X86_L1_CACHE_SHIFT (Kconfig; 6 for x86_64 generic)",
    ("x86_64", "page_size"): "PAGE_SHIFT is CONFIG_PAGE_SHIFT (include/vdso/page.h) in 6.x/7.x trees, not a literal in "
                             "arch/x86/include/asm/page_types.h any more (12 on x86)",
    ("mips32", "l1_cache_bytes"): "CONFIG_MIPS_L1_CACHE_SHIFT (Kconfig; platforms choose 4..7)",
    ("arm64", "page_size"): "CONFIG_ARM64_4K_PAGES (a Kconfig choice)",
    ("arm64-64k", "page_size"): "CONFIG_ARM64_64K_PAGES (a Kconfig choice)",
    ("ppc64le", "page_size"): "CONFIG_PPC_64K_PAGES (a Kconfig choice)",
    ("ppc64le-4k", "page_size"): "CONFIG_PPC_4K_PAGES (a Kconfig choice)",
    ("mips32", "page_size"): "CONFIG_PAGE_SIZE_4KB (a Kconfig choice)",
}


# --- probes that read the structure of the code (lab.csyntax): what a line does, not how it is written ---------


class NotApplicable(ProbeError):
    """The rule does not exist in this kernel (e.g. config MAX_SKB_FRAGS before 6.3): no value, and not an error."""


def _fn(tree: Tree, file: str, name: str) -> csyntax.Node:
    start, lines = tree.body(file, name)
    node = csyntax.parse("\n".join(lines), start)
    return node


def _at(tree: Tree, file: str, node: csyntax.Node) -> Match:
    return Match(file, node.line, tree.raw_line(file, node.line))


def _found(probe: Probe, value: Any, tree: Tree, file: str, node: csyntax.Node, function: str) -> Finding:
    return Finding(probe.table, probe.rule, value, _at(tree, file, node), function, True, probe.looks_for)


def _absent(probe: Probe, value: Any, tree: Tree, file: str, function: str, what: str | None = None) -> Finding:
    return Finding(probe.table, probe.rule, value, tree.head(file, function), function, False,
                   what or probe.looks_for)


def _undecided(tree: Tree, probe: Probe, why: str) -> ProbeError:
    return ProbeError(f"{tree.label}: {probe.rule} undecided: {why}")


def _not_in_flist_branch(n: csyntax.Node) -> bool:
    """tcp_gro_receive: a statement outside the `if (unlikely(NAPI_GRO_CB(p)->is_flist))` branch."""
    p = n.parent
    while p is not None:
        if p.type == "if_statement" and "is_flist" in csyntax.canon(p.field("condition")):
            return False
        p = p.parent
    return True


_TCP_CMP = "(flags^tcp_flag_word(th2))"


def _tcp_flag_flushes(tree: Tree, probe: Probe) -> tuple[csyntax.Node, list[str], csyntax.Node | None]:
    """tcp_gro_receive: the flush term comparing the flag words (and the flags it masks out), and the
    CWR-only flush term if there is one; both outside the fraglist branch."""
    file = "net/ipv4/tcp_offload.c"
    fn = _fn(tree, file, "tcp_gro_receive")
    cmp_node, masked, cwr = None, None, None
    for node, lhs, op, rhs in csyntax.assignments(fn):
        if lhs != "flush" or op not in ("=", "|=") or not _not_in_flist_branch(node):
            continue
        r = csyntax.strip(rhs)
        c = csyntax.canon(r)
        if c == "(TCP_FLAG_CWR&flags)":
            cwr = node
        elif r.type == "binary_expression" and c.startswith("(") and _TCP_CMP in c and "~" in c:
            terms = csyntax._chain(r, "&")
            if len(terms) == 2 and {csyntax.canon(t)[:1] for t in terms} >= {"~"}:
                neg = next(t for t in terms if csyntax.canon(t).startswith("~"))
                if csyntax.canon(next(t for t in terms if t is not neg)) != _TCP_CMP:
                    continue
                names = [csyntax.canon(x) for x in csyntax._chain(csyntax.strip(neg).field("argument"), "|")]
                if not all(re.fullmatch(r"TCP_FLAG_[A-Z]+", x) for x in names):
                    raise _undecided(tree, probe, f"the flag mask `{neg.text}` is not an OR of TCP_FLAG_* names")
                cmp_node, masked = node, sorted(x.removeprefix("TCP_FLAG_") for x in names)
        elif _TCP_CMP in c:
            raise _undecided(tree, probe, f"tcp_gro_receive compares the flag words as `{rhs.text}`")
    if cmp_node is None or masked is None:
        raise _undecided(tree, probe, "tcp_gro_receive has no flush |= (flags ^ tcp_flag_word(th2)) & ~(...)")
    return cmp_node, masked, cwr


def _tcp_flags_not_compared(tree: Tree, probe: Probe) -> Finding:
    node, masked, _ = _tcp_flag_flushes(tree, probe)
    return _found(probe, masked, tree, "net/ipv4/tcp_offload.c", node, "tcp_gro_receive")


def _tcp_cwr_flush(tree: Tree, probe: Probe) -> Finding:
    """True where tcp_gro_receive flushes the held skb on CWR alone (flush = flags & TCP_FLAG_CWR), up to 6.18;
    ab4c8b6f7fcb removed it (7.x compares CWR with the other flags instead)."""
    _, masked, cwr = _tcp_flag_flushes(tree, probe)
    if cwr is not None:
        return _found(probe, True, tree, "net/ipv4/tcp_offload.c", cwr, "tcp_gro_receive")
    return _absent(probe, False, tree, "net/ipv4/tcp_offload.c", "tcp_gro_receive",
                   f"flush from flags & TCP_FLAG_CWR alone (CWR {'masked' if 'CWR' in masked else 'compared'})")


def _gro_udp_fwd(tree: Tree, probe: Probe) -> Finding:
    """udp_gro_receive: whether the test that sends a socketless skb to udp_gro_receive_segment reads
    NETIF_F_GRO_UDP_FWD (5.12+); a kernel whose feature table has the bit but whose test does not is 'inert'."""
    file = UDP_OFF
    fn = _fn(tree, file, "udp_gro_receive")
    gate = [(n, csyntax.disjuncts(cond)) for n, cond, body in csyntax.ifs(fn)
            if any(x.type == "call_expression" and csyntax.canon(x).startswith(
                "call_gro_receive(udp_gro_receive_segment,") for s in body for x in s.walk())]
    if not gate:
        raise _undecided(tree, probe, "udp_gro_receive has no if that returns call_gro_receive("
                                      "udp_gro_receive_segment, ...)")
    for n, terms in gate:
        for t in terms:
            conj = [csyntax.canon(c) for c in csyntax.conjuncts(t)]
            if "!sk" in conj and "(NETIF_F_GRO_UDP_FWD&skb->dev->features)" in conj:
                return _found(probe, True, tree, file, n, "udp_gro_receive")
    if "NETIF_F_GRO_UDP_FWD" in fn.text:
        raise _undecided(tree, probe, "udp_gro_receive reads NETIF_F_GRO_UDP_FWD, not as `!sk && (skb->dev->"
                                      "features & NETIF_F_GRO_UDP_FWD)` in the test that aggregates")
    return Finding(probe.table, probe.rule, False, _at(tree, file, gate[0][0]), "udp_gro_receive", False,
                   "NETIF_F_GRO_UDP_FWD in the test that sends the skb to udp_gro_receive_segment")


def _udp_gro_skips_local_encap(tree: Tree, probe: Probe) -> Finding:
    file = UDP_OFF
    fn = _fn(tree, file, "udp_gro_receive")
    for n, cond, body in csyntax.ifs(fn):
        if "skb->encapsulation" in [csyntax.canon(d) for d in csyntax.disjuncts(cond)]:
            if body and body[0].type in ("goto_statement", "return_statement"):
                return _found(probe, True, tree, file, n, "udp_gro_receive")
            return Finding(probe.table, probe.rule, False, _at(tree, file, n), "udp_gro_receive", False,
                           "a jump out (goto/return) under if (skb->encapsulation)")
    return _absent(probe, False, tree, file, "udp_gro_receive")


def _clears(stmts: list[csyntax.Node], var: str, feature: str) -> csyntax.Node | None:
    """The statement among ``stmts`` that clears ``feature`` from ``var`` (var &= ~(... feature ...))."""
    for s in stmts:
        c = csyntax.stmt_canon(s)
        m = re.fullmatch(rf"{re.escape(var)}&=~\(?(.*?)\)?;", c)
        if m and feature in m.group(1).split("|"):
            return s
    return None


def _uso_needs_csum(tree: Tree, probe: Probe) -> Finding:
    """netdev_fix_features: if GSO_UDP_L4 is on without a checksum feature, it is cleared (v6.1+)."""
    file = "net/core/dev.c"
    fn = _fn(tree, file, "netdev_fix_features")
    for n, cond, body in csyntax.ifs(fn):
        conj = [csyntax.canon(c) for c in csyntax.conjuncts(cond)]
        if "(NETIF_F_GSO_UDP_L4&features)" in conj and any(c.startswith("!") for c in conj):
            s = _clears(body, "features", "NETIF_F_GSO_UDP_L4")
            if s is not None:
                return _found(probe, True, tree, file, s, "netdev_fix_features")
            return Finding(probe.table, probe.rule, False, _at(tree, file, n), "netdev_fix_features", False,
                           "features &= ~NETIF_F_GSO_UDP_L4 under the GSO_UDP_L4-without-checksum test")
    return _absent(probe, False, tree, file, "netdev_fix_features")


_GSO_MAX = {"dev->gso_max_size", "netif_get_gso_max_size(dev,skb)"}


def _gso_max_size_check(tree: Tree, probe: Probe) -> Finding:
    """gso_features_check: skb->len >= gso_max_size drops every GSO feature (24ab059d2ebd, v6.7)."""
    file = "net/core/dev.c"
    fn = _fn(tree, file, "gso_features_check")
    for n, cond, body in csyntax.ifs(fn):
        for d in csyntax.disjuncts(cond):
            c = csyntax.canon(d)
            if not any(g in c for g in _GSO_MAX) or "skb->len" not in c:
                continue
            if c not in {f"({g}<=skb->len)" for g in _GSO_MAX}:
                raise _undecided(tree, probe, f"gso_features_check tests `{d.text}`, not skb->len >= gso_max_size")
            if any(csyntax.stmt_canon(s) == "return(features&~NETIF_F_GSO_MASK);" for s in body):
                return _found(probe, True, tree, file, n, "gso_features_check")
            raise _undecided(tree, probe, "the skb->len >= gso_max_size test does not return "
                                          "features & ~NETIF_F_GSO_MASK")
    return _absent(probe, False, tree, file, "gso_features_check")


def _gso_skb_gro(tree: Tree, probe: Probe) -> Finding:
    """dev_gro_receive: which GSO skbs are flushed ('flush': every one, skb_is_gso(skb) || frag_list;
    'tcp_not_dodgy': all but non-DODGY TCP ones)."""
    file = probe.file_in(tree)
    fn = _fn(tree, file, "dev_gro_receive")
    for node, lhs, op, rhs in csyntax.assignments(fn):
        if lhs == "NAPI_GRO_CB(skb)->flush" and op == "=" and \
                csyntax.canon(rhs) == "(skb_has_frag_list(skb)||skb_is_gso(skb))":
            return _found(probe, "flush", tree, file, node, "dev_gro_receive")
    guards = csyntax.guarded(fn, "NAPI_GRO_CB(skb)->flush=1;")
    terms = {csyntax.canon(t) for _, ds in guards for t in ds}
    if terms == {"!skb_is_gso_tcp(skb)", "(SKB_GSO_DODGY&skb_shinfo(skb)->gso_type)"}:
        return _found(probe, "tcp_not_dodgy", tree, file, guards[0][0], "dev_gro_receive")
    raise _undecided(tree, probe, f"dev_gro_receive flushes a GSO skb on {sorted(terms) or 'nothing known'}")


def _receive_list_flush_ast(tree: Tree, probe: Probe) -> Finding:
    """skb_gro_receive_list: whether NAPI_GRO_CB(skb)->flush refuses the merge beside the 64 KiB cap."""
    file = next((f for f in probe.files if tree.has(f) and tree.search(f, None, r"^int skb_gro_receive_list\(")), None)
    if file is None:
        raise ProbeError(f"{tree.label}: none of {', '.join(probe.files)} defines skb_gro_receive_list")
    fn = _fn(tree, file, "skb_gro_receive_list")
    guards = csyntax.guarded(fn, "return-E2BIG;")
    terms = {csyntax.canon(t): n for n, ds in guards for t in ds}
    cap = terms.get("(65536<=(p->len+skb->len))")
    if cap is None:
        raise _undecided(tree, probe, "skb_gro_receive_list has no p->len + skb->len >= 65536 refusing with -E2BIG")
    return _found(probe, "NAPI_GRO_CB(skb)->flush" in terms, tree, file, cap, "skb_gro_receive_list")


def _gro_hw_needs_guest_gso(tree: Tree, probe: Probe) -> Finding:
    """virtnet_probe: GRO_HW in hw_features only when a guest GRO offload is also capable (&&)."""
    file = VIRTIO
    fn = _fn(tree, file, "virtnet_probe")
    guards = csyntax.guarded(fn, "dev->hw_features|=NETIF_F_GRO_HW;")
    if not guards:
        raise _undecided(tree, probe, "virtnet_probe never sets dev->hw_features |= NETIF_F_GRO_HW under an if")
    for n, ds in guards:
        if len(ds) == 1 and "(GUEST_OFFLOAD_GRO_HW_MASK&vi->guest_offloads_capable)" in \
                [csyntax.canon(c) for c in csyntax.conjuncts(ds[0])]:
            return _found(probe, True, tree, file, n, "virtnet_probe")
    return Finding(probe.table, probe.rule, False, _at(tree, file, guards[0][0]), "virtnet_probe", False,
                   "guest_offloads_capable & GUEST_OFFLOAD_GRO_HW_MASK required (&&) for hw_features |= GRO_HW")


# include/uapi/linux/virtio_net.h and the C ABI of the arches data/arches.toml models (LP64): size, alignment
_C_TYPES = {"char": (1, 1), "u8": (1, 1), "__u8": (1, 1), "u16": (2, 2), "__u16": (2, 2), "__le16": (2, 2),
            "__virtio16": (2, 2), "u32": (4, 4), "__u32": (4, 4), "__le32": (4, 4), "u64": (8, 8),
            "dma_addr_t": (8, 8),  # CONFIG_ARCH_DMA_ADDR_T_64BIT (x86_64)
            "struct virtio_net_hdr_mrg_rxbuf": (12, 2), "struct virtio_net_hdr_v1_hash": (20, 4)}


def _sizeof_struct(tree: Tree, probe: Probe, file: str, name: str) -> tuple[int, csyntax.Node]:
    """sizeof(struct name) from its members (each a type of _C_TYPES, arrays multiplied), C alignment rules."""
    start, lines = tree.body(file, f"struct {name}")
    root = csyntax.parse("\n".join(lines) + ";", start)
    fields = [n for n in root.walk() if n.type == "field_declaration"]
    if not fields or root.has_error():
        raise _undecided(tree, probe, f"struct {name} cannot be read as plain members")
    size, align, last = 0, 1, fields[-1]
    for f in fields:
        t = f.field("type")
        tname = re.sub(r"\s+", " ", t.text) if t is not None else ""
        if tname not in _C_TYPES:
            raise _undecided(tree, probe, f"struct {name} has a member of type {tname!r} whose size is not known")
        n, a = _C_TYPES[tname]
        decl = f.field("declarator")
        count = 1
        while decl is not None and decl.type == "array_declarator":
            k = csyntax.eval_int(decl.field("size")) if decl.field("size") is not None else None
            if k is None:
                raise _undecided(tree, probe, f"struct {name}: array size `{decl.text}` is not a constant")
            count *= k
            decl = decl.field("declarator")
        size = -(-size // a) * a + n * count
        align = max(align, a)
    return -(-size // align) * align, last


def _padded_vnet_hdr_ast(tree: Tree, probe: Probe) -> Finding:
    file = probe.file_in(tree)
    size, last = _sizeof_struct(tree, probe, file, "padded_vnet_hdr")
    return _found(probe, size, tree, file, last, "struct padded_vnet_hdr")


def _udp_send_skb_gso_test(tree: Tree, probe: Probe) -> tuple[csyntax.Node, csyntax.Node]:
    """udp_send_skb: the `datalen > cork->gso_size * N` test and N."""
    fn = _fn(tree, UDP_C, "udp_send_skb")
    for n, cond, _ in csyntax.ifs(fn):
        c = csyntax.strip(cond)
        if c.type == "binary_expression" and csyntax.canon(c.field("left")) == "datalen" and \
                csyntax._operator(c) == ">":
            terms = csyntax._chain(c.field("right"), "*")  # type: ignore[arg-type]
            rest = [t for t in terms if csyntax.canon(t) != "cork->gso_size"]
            if len(terms) == 2 and len(rest) == 1:
                return n, rest[0]
    raise _undecided(tree, probe, "udp_send_skb has no datalen > cork->gso_size * N test")


def _udp_max_segments_ast(tree: Tree, probe: Probe) -> Finding:
    """The number of segments udp_send_skb allows (datalen > cork->gso_size * UDP_MAX_SEGMENTS -> -EINVAL),
    UDP_MAX_SEGMENTS read from include/linux/udp.h."""
    n, factor = _udp_send_skb_gso_test(tree, probe)
    value = csyntax.eval_int(factor)
    if value is not None:
        return _found(probe, value, tree, UDP_C, n, "udp_send_skb")
    name = csyntax.canon(factor)
    header = "include/linux/udp.h"
    text = "\n".join(tree.lines(header) or [])
    value = csyntax.eval_int(factor, csyntax.macros(text))
    if value is None:
        raise _undecided(tree, probe, f"udp_send_skb multiplies by {name}, not a constant of {header}")
    m = tree.search(header, None, rf"#\s*define\s+{re.escape(name)}\b")
    return Finding(probe.table, probe.rule, value, m or _at(tree, UDP_C, n), name, True, probe.looks_for)


_MTU_SHAPES = {"(cork->fragsize<(hlen+min(cork->gso_size,datalen)))": "min_datalen",
               "(cork->fragsize<(cork->gso_size+hlen))": "gso_size"}
# vnetlab.udp: "gso_size" fails with EINVAL (before 235174b2bed8), "min_datalen" with EMSGSIZE (after it)
_MTU_ERRNO = {"min_datalen": "EMSGSIZE", "gso_size": "EINVAL"}


def _udp_gso_mtu_check_ast(tree: Tree, probe: Probe) -> Finding:
    """udp_send_skb: the UDP_SEGMENT size test against cork->fragsize, and the errno it returns."""
    fn = _fn(tree, UDP_C, "udp_send_skb")
    for n, cond, body in csyntax.ifs(fn):
        shape = _MTU_SHAPES.get(csyntax.canon(cond))
        if shape is None:
            if "cork->fragsize" in csyntax.canon(cond) and "hlen" in csyntax.canon(cond):
                raise _undecided(tree, probe, f"udp_send_skb tests `{cond.text}` against cork->fragsize")
            continue
        errno = _MTU_ERRNO[shape]
        if not any(csyntax.stmt_canon(s) == f"return-{errno};" for s in body):
            raise _undecided(tree, probe, f"the cork->fragsize test does not return -{errno} (the model's "
                                          f"{shape!r} rule fails with {errno} there)")
        return _found(probe, shape, tree, UDP_C, n, "udp_send_skb")
    raise _undecided(tree, probe, "udp_send_skb has no hlen + ... > cork->fragsize test")


def _rx_frag_order_ast(tree: Tree, probe: Probe) -> Finding:
    """3 (skb_page_frag_refill's 32 KiB compound page, SKB_FRAG_PAGE_ORDER) or the page_pool's pp_params.order."""
    calls = {n.text.split("(")[0].strip() for n in _fn(tree, VIRTIO, "add_recvbuf_mergeable").walk()
             if n.type == "call_expression"}
    if "page_pool_alloc_va" in calls:
        fn = _fn(tree, VIRTIO, "virtnet_create_page_pools")
        for node, lhs, op, rhs in csyntax.assignments(fn):
            if lhs == "pp_params.order" and op == "=":
                order = csyntax.eval_int(rhs, csyntax.macros("\n".join(tree.lines(VIRTIO) or [])))
                if order is None:
                    raise _undecided(tree, probe, f"pp_params.order = {rhs.text} is not a constant")
                return _found(probe, order, tree, VIRTIO, node, "virtnet_create_page_pools")
        raise _undecided(tree, probe, "virtnet_create_page_pools sets no pp_params.order")
    if "skb_page_frag_refill" in calls:
        m = tree.search(VIRTIO, "add_recvbuf_mergeable", r"skb_page_frag_refill\(")
        return Finding(probe.table, probe.rule, 3, m, "add_recvbuf_mergeable", True,  # type: ignore[arg-type]
                       "skb_page_frag_refill (SKB_FRAG_PAGE_ORDER = get_order(32768))")
    raise _undecided(tree, probe, "add_recvbuf_mergeable uses neither skb_page_frag_refill nor a page_pool")


def _napi_head_ast(tree: Tree, probe: Probe) -> Finding:
    """Which head napi_alloc_skb(GOOD_COPY_LEN) gets: the small-request test and what it is and-ed with."""
    file = probe.file_in(tree)
    function = tree.which(file, probe.function)
    assert function is not None
    fn = _fn(tree, file, function)
    found: dict[str, csyntax.Node] = {}
    for n, left, op, right in csyntax.comparisons(fn):
        if left != "len" or op not in ("<", "<=") or not right.startswith("SKB_WITH_OVERHEAD("):
            continue
        arg = right.removeprefix("SKB_WITH_OVERHEAD(").removesuffix(")")
        beside = csyntax.siblings_in_and(n)
        if "NAPI_HAS_SMALL_PAGE_FRAG" in beside and arg == "1024":
            found.setdefault("page_frag_1k", n)
        elif arg == "SKB_SMALL_HEAD_CACHE_SIZE":
            found.setdefault("small_head_cache", n)
        elif arg == "1024":
            found.setdefault("kmalloc", n)
    for value in ("page_frag_1k", "small_head_cache", "kmalloc"):
        if value in found:
            return _found(probe, value, tree, file, found[value], function)
    return _absent(probe, "page_frag", tree, file, function)


def _mergeable_dma_reserve(tree: Tree, probe: Probe) -> Finding:
    """add_recvbuf_mergeable (6.12..6.18): on a fresh frag (offset 0) whose size cannot hold len + room +
    sizeof(struct virtnet_rq_dma), len is cut by that size, whatever rq->do_dma is; 0 where there is no such cut."""
    fn = _fn(tree, VIRTIO, "add_recvbuf_mergeable")
    for _, cond, body in csyntax.ifs(fn):
        cut = [s for s in body if re.fullmatch(r"len-=sizeof\(structvirtnet_rq_dma\);|len-=sizeof\(\*dma\);",
                                               csyntax.stmt_canon(s))]
        if not cut:
            continue
        conj = [csyntax.canon(c) for c in csyntax.conjuncts(cond)]
        if "!alloc_frag->offset" not in conj or "do_dma" in csyntax.canon(cond):
            raise _undecided(tree, probe, f"add_recvbuf_mergeable cuts len under `{cond.text}`")
        size, _ = _sizeof_struct(tree, probe, VIRTIO, "virtnet_rq_dma")
        return _found(probe, size, tree, VIRTIO, cut[0], "add_recvbuf_mergeable")
    if "virtnet_rq_dma" in fn.text:
        raise _undecided(tree, probe, "add_recvbuf_mergeable names virtnet_rq_dma outside a len cut")
    return _absent(probe, 0, tree, VIRTIO, "add_recvbuf_mergeable")


def _page_pool_frag_align(tree: Tree, probe: Probe) -> Finding:
    """page_pool_alloc_frag_netmem (page_pool_alloc_frag before 6.8): what a fragment's size is aligned to,
    dma_get_cache_alignment() ('dma') or the larger of it and __alignof__(struct skb_shared_info) ('dma_shinfo')."""
    file = "net/core/page_pool.c"
    try:
        function = tree.which(file, "page_pool_alloc_frag_netmem|page_pool_alloc_frag")
    except ProbeError:
        raise NotApplicable(f"{tree.label}: no page_pool fragments (page_pool_alloc_frag is 5.15)") from None
    assert function is not None
    fn = _fn(tree, file, function)
    for node, lhs, op, rhs in csyntax.assignments(fn):
        r = csyntax.strip(rhs)
        if lhs != "size" or op != "=" or r.type != "call_expression" or csyntax.canon(r).split("(")[0] != "ALIGN":
            continue
        args = csyntax._args(r)
        if len(args) != 2 or csyntax.canon(args[0]) != "size":
            break
        align = csyntax.canon(args[1])
        if align == "dma_get_cache_alignment()":
            return _found(probe, "dma", tree, file, node, function)
        if align == "max(__alignof__(structskb_shared_info),dma_get_cache_alignment())":
            return _found(probe, "dma_shinfo", tree, file, node, function)
        raise _undecided(tree, probe, f"{function} aligns a fragment to {args[1].text}")
    raise _undecided(tree, probe, f"{function} has no size = ALIGN(size, ...)")


# --- generic structural probes: calls, assignments and guarded statements, read from the function's syntax ----


def _calls(fn: csyntax.Node, name: str) -> list[csyntax.Node]:
    """The calls of ``name`` in ``fn`` (a call, not a mention in a comment, a string or another identifier)."""
    return [n for n in fn.walk() if n.type == "call_expression" and csyntax._callee(n) == name]


def _call_probe(callee: str) -> Callable[[Tree, Probe], Finding]:
    """True when the probe's function calls ``callee``."""
    def decide(tree: Tree, probe: Probe) -> Finding:
        file = probe.file_in(tree)
        function = tree.which(file, probe.function)
        assert function is not None
        hits = _calls(_fn(tree, file, function), callee)
        if hits:
            return _found(probe, True, tree, file, hits[0], function)
        return _absent(probe, False, tree, file, function, f"call of {callee}()")
    return decide


def _or_assign_probe(lhs: str, feature: str) -> Callable[[Tree, Probe], Finding]:
    """True when the probe's function ORs ``feature`` into ``lhs`` (lhs |= ... | feature | ...)."""
    def decide(tree: Tree, probe: Probe) -> Finding:
        file = probe.file_in(tree)
        function = tree.which(file, probe.function)
        assert function is not None
        for node, left, op, rhs in csyntax.assignments(_fn(tree, file, function)):
            if left == lhs and op == "|=" and feature in [csyntax.canon(t) for t in csyntax._chain(rhs, "|")]:
                return _found(probe, True, tree, file, node, function)
        return _absent(probe, False, tree, file, function, f"{lhs} |= ... {feature}")
    return decide


def _assigned_shape(function: str, lhs: str, shapes: dict[str, Any], *,
                    default: Any = None) -> Callable[[Tree, Probe], Finding]:
    """The value whose canonical right side ``lhs`` is assigned in ``function``; ``default`` when ``lhs`` is never
    assigned one of ``shapes`` (None: undecided)."""
    def decide(tree: Tree, probe: Probe) -> Finding:
        file = probe.file_in(tree)
        fn = _fn(tree, file, function)
        want = {csyntax.expr(k): v for k, v in shapes.items()}
        seen = []
        for node, left, op, rhs in csyntax.assignments(fn):
            if left == lhs and op == "=":
                c = csyntax.canon(rhs)
                if c in want:
                    return _found(probe, want[c], tree, file, node, function)
                seen.append(c)
        if default is not None:
            return _absent(probe, default, tree, file, function)
        raise _undecided(tree, probe, f"{function} assigns {lhs} = {seen or 'nothing'}, none of {sorted(shapes)}")
    return decide


def _page_to_skb_ast(tree: Tree, probe: Probe) -> Finding:
    """page_to_skb: the build_skb branch (build_skb or virtnet_build_skb on buf), else what the copy path copies."""
    fn = _fn(tree, VIRTIO, "page_to_skb")
    for name in ("virtnet_build_skb", "build_skb"):
        hits = [c for c in _calls(fn, name) if csyntax._args(c) and csyntax.canon(csyntax._args(c)[0]) == "buf"]
        if hits:
            return _found(probe, "build_skb", tree, VIRTIO, hits[0], "page_to_skb")
    for node, left, op, rhs in csyntax.assignments(fn):
        if left == "copy" and op == "=":
            c = csyntax.canon(rhs)
            if c in ("ETH_HLEN", "(ETH_HLEN+metasize)"):
                return _found(probe, "copy_eth_hlen", tree, VIRTIO, node, "page_to_skb")
            if c.startswith("min(") and "len" in c:
                return _found(probe, "copy128", tree, VIRTIO, node, "page_to_skb")
    raise _undecided(tree, probe, "page_to_skb has no build_skb(buf, ...) and no copy = ETH_HLEN / min(len, ...)")


def _mergeable_truesize_ast(tree: Tree, probe: Probe) -> Finding:
    fn = _fn(tree, VIRTIO, "add_recvbuf_mergeable")
    for c in _calls(fn, "mergeable_len_to_ctx"):
        first = csyntax.canon(csyntax._args(c)[0]) if csyntax._args(c) else ""
        value = {"(len+room)": "len_plus_room", "len": "len"}.get(first)
        if value is None:
            raise _undecided(tree, probe, f"the ctx stores mergeable_len_to_ctx({first}, ...)")
        return _found(probe, value, tree, VIRTIO, c, "add_recvbuf_mergeable")
    raise _undecided(tree, probe, "add_recvbuf_mergeable calls no mergeable_len_to_ctx")


def _mergeable_hole_ast(tree: Tree, probe: Probe) -> Finding:
    """Who gets the rest of the frag page: 'page_pool' (7.x), 'no_xdp' (len += hole only if !headroom), 'always'."""
    fn = _fn(tree, VIRTIO, "add_recvbuf_mergeable")
    pool = _calls(fn, "page_pool_alloc_va")
    if pool:
        return _found(probe, "page_pool", tree, VIRTIO, pool[0], "add_recvbuf_mergeable")
    for n in fn.walk():
        if n.type == "expression_statement" and csyntax.stmt_canon(n) == "len+=hole;":
            p, guards = n.parent, []
            while p is not None and p.type != "function_definition":
                if p.type == "if_statement":
                    guards.append(csyntax.canon(p.field("condition")))
                p = p.parent
            if guards == ["!headroom", "(hole<(len+room))"] or guards == ["!headroom"]:
                return _found(probe, "no_xdp", tree, VIRTIO, n, "add_recvbuf_mergeable")
            if guards in (["(hole<(len+room))"], []):
                return _found(probe, "always", tree, VIRTIO, n, "add_recvbuf_mergeable")
            raise _undecided(tree, probe, f"len += hole is guarded by {guards}")
    raise _undecided(tree, probe, "add_recvbuf_mergeable never gives the hole to len")


def _receive_big_bound_ast(tree: Tree, probe: Probe) -> Finding:
    """receive_big's drop test: 'padded' (len > (frags+1)*PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len),
    'pages' (len > (frags+1)*PAGE_SIZE), or 'none' (no test; page_to_skb bounds the remainder)."""
    fn = _fn(tree, VIRTIO, "receive_big")
    pages = csyntax.expr("(vi->big_packets_num_skbfrags + 1) * PAGE_SIZE")
    padded = csyntax.expr("(vi->big_packets_num_skbfrags + 1) * PAGE_SIZE - sizeof(struct padded_vnet_hdr) + "
                          "vi->hdr_len")
    bound = {left: (node, csyntax.canon(rhs)) for node, left, op, rhs in csyntax.assignments(fn) if op == "="}
    tests = {n.n.byte_range: (lo, op) for n, lo, op, hi in csyntax.comparisons(fn) if hi == "len"}
    for n, cond, _ in csyntax.ifs(fn):
        lo, op = tests.get(csyntax.strip(cond).n.byte_range, (None, None))
        if op != "<":  # len > bound, however written
            continue
        at, right = bound.get(lo, (n, lo))  # len > max_len: what max_len was assigned
        if right == pages:
            return _found(probe, "pages", tree, VIRTIO, at, "receive_big")
        if right == padded:
            return _found(probe, "padded", tree, VIRTIO, at, "receive_big")
        raise _undecided(tree, probe, f"receive_big drops len > {right}")
    return _absent(probe, "none", tree, VIRTIO, "receive_big")


def _gives_pages_ast(tree: Tree, probe: Probe) -> Finding:
    """page_to_skb: give_pages called inside the if that builds the skb around the buffer (big mode's rest)."""
    fn = _fn(tree, VIRTIO, "page_to_skb")
    for n, _, body in csyntax.ifs(fn):
        inside = [x for s in body for x in s.walk()]
        if any(x.type == "call_expression" and csyntax._callee(x) in ("build_skb", "virtnet_build_skb")
               for x in inside):
            gives = [x for x in inside if x.type == "call_expression" and csyntax._callee(x) == "give_pages"]
            if gives:
                return _found(probe, True, tree, VIRTIO, gives[0], "page_to_skb")
            return Finding(probe.table, probe.rule, False, _at(tree, VIRTIO, n), "page_to_skb", False,
                           "give_pages in the build_skb branch")
    return _absent(probe, False, tree, VIRTIO, "page_to_skb", "build_skb branch")


def _csum_offload_eio(tree: Tree, probe: Probe) -> Finding:
    """udp_send_skb: a UDP_SEGMENT skb not CHECKSUM_PARTIAL fails with -EIO (until 10154dbded6d)."""
    fn = _fn(tree, UDP_C, "udp_send_skb")
    for n, cond, body in csyntax.ifs(fn):
        if "(CHECKSUM_PARTIAL!=skb->ip_summed)" in [csyntax.canon(d) for d in csyntax.disjuncts(cond)]:
            if any(csyntax.stmt_canon(s) == "return-EIO;" for s in body):
                return _found(probe, True, tree, UDP_C, n, "udp_send_skb")
    return _absent(probe, False, tree, UDP_C, "udp_send_skb", "if (... skb->ip_summed != CHECKSUM_PARTIAL) "
                                                                 "return -EIO")


def _unexpected_gso_ast(tree: Tree, probe: Probe) -> Finding:
    """udp_unexpected_gso: False when its test names SKB_GSO_FRAGLIST (a UDP_GRO socket refuses a fraglist skb)."""
    file = "include/linux/udp.h"
    fn = _fn(tree, file, "udp_unexpected_gso")
    for n in fn.walk():
        if n.type == "identifier" and n.text == "SKB_GSO_FRAGLIST":
            return _found(probe, False, tree, file, n, "udp_unexpected_gso")
    return _absent(probe, True, tree, file, "udp_unexpected_gso", "SKB_GSO_FRAGLIST")


def _size_cap_ast(tree: Tree, probe: Probe) -> Finding:
    """skb_gro_receive's byte cap: 'dev_tcp' (netif_get_gro_max_size), 'dev_ipv6_tcp' (6.1: gro_max_size =
    p->dev->gro_max_size, 65536 unless IPv6 TCP) or 'constant' (p->len + len >= 65536)."""
    file = next((f for f in probe.files if tree.has(f) and tree.search(f, None, r"^int skb_gro_receive\(")), None)
    if file is None:
        raise ProbeError(f"{tree.label}: none of {', '.join(probe.files)} defines skb_gro_receive")
    fn = _fn(tree, file, "skb_gro_receive")
    for node, left, _, rhs in csyntax.assignments(fn):
        if left == "gro_max_size" and csyntax.canon(rhs) == "p->dev->gro_max_size":
            return _found(probe, "dev_ipv6_tcp", tree, file, node, "skb_gro_receive")
    for n, cond, _ in csyntax.ifs(fn):
        for d in csyntax.disjuncts(cond):
            c = csyntax.canon(d)
            if c == "(netif_get_gro_max_size(p->dev,p)<=(len+p->len))":
                return _found(probe, "dev_tcp", tree, file, n, "skb_gro_receive")
            if c == "(65536<=(len+p->len))":
                return _found(probe, "constant", tree, file, n, "skb_gro_receive")
    raise _undecided(tree, probe, "skb_gro_receive has no p->len + len >= cap test it knows")


def _consumed_truesize_ast(tree: Tree, probe: Probe) -> Finding:
    file = next((f for f in probe.files if tree.has(f) and tree.search(f, None, r"^int skb_gro_receive\(")), None)
    if file is None:
        raise ProbeError(f"{tree.label}: none of {', '.join(probe.files)} defines skb_gro_receive")
    fn = _fn(tree, file, "skb_gro_receive")
    for node, left, op, rhs in csyntax.assignments(fn):
        if left == "new_truesize" and op == "=":
            return _found(probe, "6.x", tree, file, node, "skb_gro_receive")
        if left == "skb->truesize" and op == "-=" and csyntax.canon(rhs) == "skb->data_len":
            return _found(probe, "5.x", tree, file, node, "skb_gro_receive")
    raise _undecided(tree, probe, "skb_gro_receive charges the merged truesize in no form it knows")


def _gso_features_ast(tree: Tree, probe: Probe) -> Finding:
    """virtnet_probe: what 'if (gso)' turns on: dev->features |= dev->hw_features [& NETIF_F_ALL_TSO]."""
    fn = _fn(tree, VIRTIO, "virtnet_probe")
    for node, left, op, rhs in csyntax.assignments(fn):
        if left == "dev->features" and op == "|=":
            c = csyntax.canon(rhs)
            if c == "(NETIF_F_ALL_TSO&dev->hw_features)":
                return _found(probe, "all_tso", tree, VIRTIO, node, "virtnet_probe")
            if c == "dev->hw_features":
                return _found(probe, "hw_features", tree, VIRTIO, node, "virtnet_probe")
    raise _undecided(tree, probe, "virtnet_probe never sets dev->features |= dev->hw_features[ & ...]")


def _hdr_padded_len(tree: Tree, probe: Probe) -> Finding:
    """page_to_skb: hdr_padded_len for mergeable buffers, sizeof(*hdr) (12, before v5.18) or hdr_len."""
    return _assigned_shape("page_to_skb", "hdr_padded_len", {"sizeof(*hdr)": "mrg_rxbuf", "hdr_len": "hdr_len"})(
        tree, probe)


def _xdp_truesize(tree: Tree, probe: Probe) -> Finding:
    """page_to_skb (6.1): truesize = headroom ? PAGE_SIZE : truesize; later kernels take the ctx's."""
    return _assigned_shape("page_to_skb", "truesize", {"headroom ? PAGE_SIZE : truesize": "page_size"},
                           default="ctx")(tree, probe)


def _file_root(tree: Tree, file: str) -> csyntax.Node:
    """The whole file (comments blanked) parsed once per tree."""
    cache = tree.__dict__.setdefault("_syntax", {})
    if file not in cache:
        lines = tree.lines(file)
        if lines is None:
            raise ProbeError(f"{tree.label}: {file} is not in the tree")
        cache[file] = csyntax.parse("\n".join(lines), 1)
    return cache[file]


def _xdp_pass_path_ast(tree: Tree, probe: Probe) -> Finding:
    """build_skb_from_xdp_buff's result assigned somewhere in the driver (XDP_PASS, 6.3+), else page_to_skb."""
    root = _file_root(tree, VIRTIO)
    for c in _calls(root, "build_skb_from_xdp_buff"):
        if c.parent is not None and c.parent.type == "assignment_expression":
            return _found(probe, "build_skb_from_xdp_buff", tree, VIRTIO, c, "build_skb_from_xdp_buff")
    return _absent(probe, "page_to_skb", tree, VIRTIO, None, "skb = build_skb_from_xdp_buff(...)")


def _names_in_file(name: str, value: Any, default: Any) -> Callable[[Tree, Probe], Finding]:
    """``value`` when the file's code (not a comment) uses identifier ``name``, else ``default``."""
    def decide(tree: Tree, probe: Probe) -> Finding:
        file = probe.file_in(tree)
        for n in _file_root(tree, file).walk():
            if n.type in ("identifier", "field_identifier") and n.text == name:
                return _found(probe, value, tree, file, n, name)
        return _absent(probe, default, tree, file, None, f"{name} in the code")
    return decide


def _host_uso_ast(tree: Tree, probe: Probe) -> Finding:
    """virtnet_probe: VIRTIO_NET_F_HOST_USO guards hw_features |= NETIF_F_GSO_UDP_L4."""
    fn = _fn(tree, VIRTIO, "virtnet_probe")
    for n, cond, body in csyntax.ifs(fn):
        if "VIRTIO_NET_F_HOST_USO" in csyntax.canon(cond) and any(
                re.fullmatch(r"dev->hw_features\|=.*NETIF_F_GSO_UDP_L4.*;", csyntax.stmt_canon(s)) for s in body):
            return _found(probe, True, tree, VIRTIO, n, "virtnet_probe")
    return _absent(probe, False, tree, VIRTIO, "virtnet_probe", "if (HOST_USO) hw_features |= NETIF_F_GSO_UDP_L4")


def _veth_xdp_gro_ast(tree: Tree, probe: Probe) -> Finding:
    """veth_enable_xdp: NETIF_F_GRO switched on dev->features / wanted_features with the XDP program."""
    file = "drivers/net/veth.c"
    for node, left, op, rhs in csyntax.assignments(_fn(tree, file, "veth_enable_xdp")):
        if left in ("dev->features", "dev->wanted_features") and op in ("|=", "&=") and \
                "NETIF_F_GRO" in re.findall(r"\w+", csyntax.canon(rhs)):
            return _found(probe, True, tree, file, node, "veth_enable_xdp")
    return _absent(probe, False, tree, file, "veth_enable_xdp")


def _vnet_hdr_lens_ast(tree: Tree, probe: Probe) -> Finding:
    """The hdr_len values virtnet_probe can choose (vi->hdr_len = sizeof(struct ...))."""
    sizes = {"virtio_net_hdr": 10, "virtio_net_hdr_mrg_rxbuf": 12, "virtio_net_hdr_v1_hash": 20,
             "virtio_net_hdr_v1_hash_tunnel": 24}  # include/uapi/linux/virtio_net.h
    got, first = [], None
    for node, left, op, rhs in csyntax.assignments(_fn(tree, VIRTIO, "virtnet_probe")):
        if left == "vi->hdr_len" and op == "=":
            m = re.fullmatch(r"sizeof\(struct(\w+)\)", csyntax.canon(rhs))
            if not m or m.group(1) not in sizes:
                raise _undecided(tree, probe, f"virtnet_probe sets vi->hdr_len = {rhs.text}")
            got.append(sizes[m.group(1)])
            first = first or node
    if first is None:
        raise _undecided(tree, probe, "virtnet_probe sets no vi->hdr_len")
    return _found(probe, sorted(set(got)), tree, VIRTIO, first, "virtnet_probe")


def _geometry_ast(tree: Tree, probe: Probe) -> Finding:
    """__udp_gso_segment: the list path taken only when the geometry held (skb_pagelen(gso_skb) - sizeof(*uh) ==
    gso_size), 3d010c8031e3; else every fraglist skb goes to __udp_gso_segment_list."""
    fn = _fn(tree, UDP_OFF, "__udp_gso_segment")
    for n, cond, body in reversed(list(csyntax.ifs(fn))):  # the innermost if around the call
        if any(x.type == "call_expression" and csyntax._callee(x) == "__udp_gso_segment_list"
               for s in body for x in s.walk()):
            if "skb_pagelen(gso_skb)" in csyntax.canon(cond):
                return _found(probe, True, tree, UDP_OFF, n, "__udp_gso_segment")
            return Finding(probe.table, probe.rule, False, _at(tree, UDP_OFF, n), "__udp_gso_segment", False,
                           probe.looks_for)
    raise _undecided(tree, probe, "__udp_gso_segment calls __udp_gso_segment_list under no if")


def _veth_disables_gro(tree: Tree, probe: Probe) -> Finding:
    """veth_newlink: veth_disable_gro on both ends (dev and peer): True; neither: False; one: undecided."""
    file = "drivers/net/veth.c"
    calls = _calls(_fn(tree, file, "veth_newlink"), "veth_disable_gro")
    who = {csyntax.canon(csyntax._args(c)[0]) for c in calls if csyntax._args(c)}
    if who == {"dev", "peer"}:
        return _found(probe, True, tree, file, calls[0], "veth_newlink")
    if not who:
        return _absent(probe, False, tree, file, "veth_newlink", "veth_disable_gro(dev) and (peer)")
    raise _undecided(tree, probe, f"veth_newlink turns GRO off on {sorted(who)} only")


def _bond_compute_ast(tree: Tree, probe: Probe) -> Finding:
    """How a bond's vlan/mpls features start: 'master_upper' (the driver calls
    netdev_compute_master_upper_features), 'base_features' (= netdev_base_features(...)) or 'all_for_all'
    (vlan_features &= NETIF_F_ALL_FOR_ALL) in bond_compute_features."""
    calls = _calls(_file_root(tree, BOND), "netdev_compute_master_upper_features")
    if calls:
        return _found(probe, "master_upper", tree, BOND, calls[0], "bond_enslave")
    for node, left, op, rhs in csyntax.assignments(_fn(tree, BOND, "bond_compute_features")):
        c = csyntax.canon(rhs)
        if op == "=" and c.startswith("netdev_base_features("):
            return _found(probe, "base_features", tree, BOND, node, "bond_compute_features")
        if left == "vlan_features" and op == "&=" and c == "NETIF_F_ALL_FOR_ALL":
            return _found(probe, "all_for_all", tree, BOND, node, "bond_compute_features")
    raise _undecided(tree, probe, "bond_compute_features starts vlan_features in no form it knows")


def _rq_dma_ast(tree: Tree, probe: Probe) -> Finding:
    """The struct virtnet_rq_dma virtnet_rq_alloc writes at a new frag's offset 0: 16 where it is written
    (unconditionally, or under rq->do_dma and something sets do_dma), 0 where only an unset do_dma gates it or
    there is no virtnet_rq_alloc."""
    file = VIRTIO
    try:
        fn = _fn(tree, file, "virtnet_rq_alloc")
    except ProbeError:
        return _absent(probe, 0, tree, file, None, "virtnet_rq_alloc (no premapped DMA header)")
    writes = [n for n, left, op, rhs in csyntax.assignments(fn)
              if left == "alloc_frag->offset" and op == "=" and csyntax.canon(rhs).startswith("sizeof(")]
    if not writes:
        return _absent(probe, 0, tree, file, "virtnet_rq_alloc", "alloc_frag->offset = sizeof(*dma)")
    size, _ = _sizeof_struct(tree, probe, file, "virtnet_rq_dma")
    gated = None
    p = writes[0].parent
    while p is not None:
        if p.type == "if_statement" and "rq->do_dma" in [csyntax.canon(c) for c in
                                                         csyntax.conjuncts(p.field("condition"))]:
            gated = p
        p = p.parent
    if gated is None:
        return _found(probe, size, tree, file, writes[0], "virtnet_rq_alloc")
    setters = [n for n, left, op, rhs in csyntax.assignments(_file_root(tree, file))
               if left.endswith("->do_dma") and op == "=" and csyntax.canon(rhs) not in ("false", "0")]
    if setters:
        return _found(probe, size, tree, file, setters[0], "virtnet_rq_alloc")
    return Finding(probe.table, probe.rule, 0, _at(tree, file, gated), "virtnet_rq_alloc", True,
                   "the header written only if rq->do_dma, which nothing sets")
