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

_C_SIZES = {"char": 1, "u8": 1, "__u8": 1, "u16": 2, "__u16": 2, "__le16": 2, "__virtio16": 2, "u32": 4, "__u32": 4,
            "__le32": 4}
# include/uapi/linux/virtio_net.h (every version): the headers padded_vnet_hdr is built from.
_VNET_HDR = {"virtio_net_hdr_mrg_rxbuf": 12, "virtio_net_hdr_v1_hash": 20}


def _padded_vnet_hdr(tree: Tree, probe: Probe) -> Finding:
    """sizeof(struct padded_vnet_hdr): its header member's size plus char padding[N] (drivers/net/virtio_net.c)."""
    file = probe.file_in(tree)
    start, lines = tree.body(file, "struct padded_vnet_hdr")
    text = "\n".join(lines)
    hdr = re.search(r"struct\s+(virtio_net_hdr\w*)\s+\w+;", text)
    pad = re.search(r"char\s+padding\[(\d+)\]", text)
    if not hdr or not pad or hdr.group(1) not in _VNET_HDR:
        raise ProbeError(f"{tree.label}: {file} struct padded_vnet_hdr is not header + char padding[N]")
    k = next(i for i, ln in enumerate(lines) if "padding[" in ln)
    m = Match(file, start + k, tree.raw_line(file, start + k))
    return Finding(probe.table, probe.rule, _VNET_HDR[hdr.group(1)] + int(pad.group(1)), m, "struct padded_vnet_hdr",
                   True, probe.looks_for)


def _udp_max_segments(tree: Tree, probe: Probe) -> Finding:
    m = tree.search("include/linux/udp.h", None, r"#define\s+UDP_MAX_SEGMENTS\s+\(1\s*<<\s*(\d+)UL\)")
    if m is None:
        raise ProbeError(f"{tree.label}: include/linux/udp.h has no UDP_MAX_SEGMENTS (1 << N)")
    shift = int(re.search(r"<<\s*(\d+)", m.text).group(1))  # type: ignore[union-attr]
    return Finding(probe.table, probe.rule, 1 << shift, m, "UDP_MAX_SEGMENTS", True, probe.looks_for)


def _vnet_hdr_lens(tree: Tree, probe: Probe) -> Finding:
    """The hdr_len values virtnet_probe can choose (vi->hdr_len = sizeof(struct ...))."""
    file = "drivers/net/virtio_net.c"
    start, lines = tree.body(file, "virtnet_probe")
    sizes = {"virtio_net_hdr": 10, "virtio_net_hdr_mrg_rxbuf": 12, "virtio_net_hdr_v1_hash": 20,
             "virtio_net_hdr_v1_hash_tunnel": 24}
    got: list[int] = []
    first: Match | None = None
    for k, ln in enumerate(lines):
        m = re.search(r"vi->hdr_len\s*=\s*sizeof\(struct\s+(\w+)\)", ln)
        if m and m.group(1) in sizes:
            got.append(sizes[m.group(1)])
            first = first or Match(file, start + k, tree.raw_line(file, start + k))
    if not got or first is None:
        raise ProbeError(f"{tree.label}: virtnet_probe sets no vi->hdr_len = sizeof(struct ...)")
    return Finding(probe.table, probe.rule, sorted(set(got)), first, "virtnet_probe", True, probe.looks_for)


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
    raise ProbeError(f"{tree.label}: net/Kconfig has no config MAX_SKB_FRAGS default")


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


def _receive_big_bound(tree: Tree, probe: Probe) -> Finding:
    """receive_big's drop test: 'padded' (len > (frags+1)*PAGE_SIZE - sizeof(padded_vnet_hdr) + hdr_len),
    'pages' (len > (frags+1)*PAGE_SIZE), or 'none' (no test; page_to_skb bounds the remainder)."""
    file = "drivers/net/virtio_net.c"
    m = tree.search(file, "receive_big", r"max_len\s*=|big_packets_num_skbfrags\s*\+\s*1\)\s*\*\s*PAGE_SIZE")
    if m is None:
        return Finding(probe.table, probe.rule, "none", tree.head(file, "receive_big"), "receive_big", False,
                       probe.looks_for)
    start, lines = tree.body(file, "receive_big")
    k = m.line - start
    stmt = " ".join(lines[k:k + 3])
    value = "padded" if "padded_vnet_hdr" in stmt.split(";")[0] else "pages"
    return Finding(probe.table, probe.rule, value, m, "receive_big", True, probe.looks_for)


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
       [(r"(virtnet_)?build_skb\(buf", "build_skb"), (r"copy\s*=\s*ETH_HLEN", "copy_eth_hlen"),
        (r"copy\s*=\s*min_t?\(.*len", "copy128")], required=True),
    _p(K, "napi_head", SKBUFF_C, "napi_alloc_skb|__napi_alloc_skb", "which head napi_alloc_skb(GOOD_COPY_LEN) gets",
       [(r"(?<!!)NAPI_HAS_SMALL_PAGE_FRAG\s*&&\s*len\s*<=\s*SKB_WITH_OVERHEAD\(1024\)", "page_frag_1k"),
        (r"len\s*<=\s*SKB_WITH_OVERHEAD\(SKB_SMALL_HEAD_CACHE_SIZE\)", "small_head_cache"),
        (r"len\s*<=\s*SKB_WITH_OVERHEAD\(1024\)", "kmalloc")], "page_frag"),
    _p(K, "mergeable_truesize", VIRTIO, "add_recvbuf_mergeable", "the truesize stored in the buffer's ctx",
       [(r"mergeable_len_to_ctx\(len \+ room", "len_plus_room"), (r"mergeable_len_to_ctx\(len,", "len")],
       required=True),
    _p(K, "mergeable_hole", VIRTIO, "add_recvbuf_mergeable", "who gets the rest of the frag page",
       [(r"page_pool_alloc_va\(", "page_pool"), (r"if \(!headroom\)", "no_xdp"), (r"len \+= hole", "always")],
       required=True),
    _p(K, "rq_dma_header", VIRTIO, "virtnet_rq_alloc", "a struct virtnet_rq_dma written at a new frag's offset 0",
       [(r"if \(rq->do_dma\)|do_dma", 0), (r"sizeof\(\*dma\)|sizeof\(struct virtnet_rq_dma\)", 16)], 0,
       decide=lambda t, p: _rq_dma(t, p)),
    _p(K, "max_skb_frags_rule", "include/linux/skbuff.h", None, "how MAX_SKB_FRAGS is defined",
       [(r"#define\s+MAX_SKB_FRAGS\s+CONFIG_MAX_SKB_FRAGS", "config"),
        (r"#define\s+MAX_SKB_FRAGS\s+\(65536/PAGE_SIZE", "page_size")], required=True),
    _p(K, "config_max_skb_frags_default", "net/Kconfig", None, "config MAX_SKB_FRAGS default",
       decide=_config_max_skb_frags),
    _p(K, "mergeable_hdr_padded_len", VIRTIO, "page_to_skb", "hdr_padded_len for mergeable buffers",
       [(r"hdr_padded_len\s*=\s*sizeof\(\*hdr\)", "mrg_rxbuf"), (r"hdr_padded_len\s*=\s*hdr_len", "hdr_len")],
       required=True),
    _p(K, "padded_vnet_hdr_len", VIRTIO, "struct padded_vnet_hdr", "sizeof(struct padded_vnet_hdr)",
       decide=_padded_vnet_hdr),
    _p(K, "receive_big_len_check", VIRTIO, "receive_big", "receive_big's len > max_len drop test",
       decide=_receive_big_bound),
    _p(K, "vnet_hdr_lens", VIRTIO, "virtnet_probe", "vi->hdr_len = sizeof(struct ...)", decide=_vnet_hdr_lens),
    _p(K, "xdp_truesize", VIRTIO, "page_to_skb", "truesize = headroom ? PAGE_SIZE : truesize",
       [(r"truesize\s*=\s*headroom\s*\?\s*PAGE_SIZE", "page_size")], "ctx"),
    _p(K, "xdp_pass_path", VIRTIO, None, "build_skb_from_xdp_buff (XDP_PASS)",
       [(r"=\s*build_skb_from_xdp_buff\(", "build_skb_from_xdp_buff")], "page_to_skb"),
    _p(K, "big_build_skb_gives_pages", VIRTIO, "page_to_skb", "give_pages after the build_skb branch",
       decide=lambda t, p: _gives_pages(t, p)),
    _p(K, "guest_uso", VIRTIO, None, "VIRTIO_NET_F_GUEST_USO4", [(r"VIRTIO_NET_F_GUEST_USO4", True)], False),
    _p(K, "udp_gso_list_nat_fix", UDP_OFF, "__udp_gso_segment_list", "__udpv4_gso_segment_list_csum",
       [(r"__udpv4_gso_segment_list_csum\(", True)], False),
    _p(K, "udp6_gso_list_nat_fix", UDP_OFF, "__udp_gso_segment_list", "__udpv6_gso_segment_list_csum",
       [(r"__udpv6_gso_segment_list_csum\(", True)], False),
    _p(K, "udp_segment_needs_csum_offload", UDP_C, "udp_send_skb", "ip_summed != CHECKSUM_PARTIAL -> -EIO",
       [(r"ip_summed\s*!=\s*CHECKSUM_PARTIAL", True)], False),
    _p(K, "uso_needs_csum", "net/core/dev.c", "netdev_fix_features", "GSO_UDP_L4 dropped without a csum feature",
       [(r"NETIF_F_GSO_UDP_L4", True)], False),
    _p(K, "udp_gro_accepts_fraglist", "include/linux/udp.h", "udp_unexpected_gso", "who refuses a FRAGLIST skb",
       [(r"SKB_GSO_FRAGLIST", False)], True),
    _p(K, "udp_gro_skips_local_encap", UDP_OFF, "udp_gro_receive", "skb->encapsulation test (no L4 GRO)",
       [(r"if\s*\(skb->encapsulation\)", True)], False),
    _p(K, "gso_max_size_check", "net/core/dev.c", "gso_features_check", "skb->len >= gso_max_size",
       [(r"skb->len\s*>=\s*(READ_ONCE\(dev->gso_max_size\)|netif_get_gso_max_size)", True)], False),
    _p(K, "udp_max_segments", "include/linux/udp.h", None, "UDP_MAX_SEGMENTS", decide=_udp_max_segments),
    _p(K, "udp_gso_mtu_check", UDP_C, "udp_send_skb", "the UDP_SEGMENT size test against cork->fragsize",
       [(r"hlen\s*\+\s*min(_t\(int,)?\s*\(?\s*datalen,\s*cork->gso_size\)\s*>\s*cork->fragsize", "min_datalen"),
        (r"hlen\s*\+\s*cork->gso_size\s*>\s*cork->fragsize", "gso_size")], required=True),
    _p(K, "udp_gso_list_geometry_check", UDP_OFF, "__udp_gso_segment", "'Detect modified geometry' before the list",
       [(r"skb_shinfo\(gso_skb\)->gso_size\s*!=|gso_skb->len\s*-\s*\w+\s*!=|skb_headlen\(gso_skb\)", True)],
       False, decide=lambda t, p: _geometry(t, p)),
    _p(K, "veth_gro_off_by_default", "drivers/net/veth.c", "veth_newlink", "veth_disable_gro",
       [(r"veth_disable_gro\(", True)], False),
    _p(K, "veth_napi_for_gro", "drivers/net/veth.c", "veth_xmit", "veth_skb_is_eligible_for_gro",
       [(r"veth_skb_is_eligible_for_gro\(", True)], False),
    _p(K, "veth_xdp_toggles_gro", "drivers/net/veth.c", "veth_enable_xdp", "NETIF_F_GRO switched with XDP",
       [(r"NETIF_F_GRO\b", True)], False),
    _p(K, "vlan_hw_macsec", "net/8021q/vlan_dev.c", "vlan_dev_init", "NETIF_F_HW_MACSEC",
       [(r"NETIF_F_HW_MACSEC", True)], False),
    _p(K, "vxlan_fraglist", VXLAN, "vxlan_setup", "NETIF_F_FRAGLIST in hw_features",
       [(r"hw_features\s*\|=.*NETIF_F_FRAGLIST", True)], False),
    _p(K, "virtio_host_uso", VIRTIO, "virtnet_probe", "VIRTIO_NET_F_HOST_USO -> GSO_UDP_L4",
       [(r"VIRTIO_NET_F_HOST_USO", True)], False),
    _p(K, "virtio_gso_features", VIRTIO, "virtnet_probe", "what 'if (gso)' turns on",
       [(r"features\s*\|=\s*dev->hw_features\s*&\s*NETIF_F_ALL_TSO", "all_tso"),
        (r"features\s*\|=\s*dev->hw_features;", "hw_features")], required=True),
    _p(K, "virtio_gro_hw_needs_guest_gso", VIRTIO, "virtnet_probe", "GRO_HW only with a guest offload",
       [(r"guest_offloads_capable\s*&\s*GUEST_OFFLOAD_GRO_HW_MASK", True)], False),
    _p(K, "bond_gso_software", BOND, "#define BOND_VLAN_FEATURES", "NETIF_F_GSO_SOFTWARE in BOND_VLAN_FEATURES",
       [(r"NETIF_F_GSO_SOFTWARE", True), (r"NETIF_F_ALL_TSO", False)], True,
       decide=lambda t, p: _bond_gso_software(t, p)),
    _p(K, "bond_gso_partial", BOND, "bond_setup", "features |= NETIF_F_GSO_PARTIAL",
       [(r"NETIF_F_GSO_PARTIAL", True)], False),
    _p(K, "bond_compute", BOND, "bond_compute_features", "how vlan/mpls features start",
       decide=lambda t, p: _bond_compute(t, p)),
    _p(K, "rx_page_pool", VIRTIO, "add_recvbuf_mergeable", "page_pool_alloc_va (virtio-net rx on a page_pool)",
       [(r"page_pool_alloc_va\(", True)], False),
    _p(K, "rx_frag_order", VIRTIO, None, "the order of the pages rx buffers are carved from",
       decide=lambda t, p: _rx_frag_order(t, p)),
    # gro.toml
    _p("gro", "skb_gro_receive_file", GRO_FILES, "skb_gro_receive", "where skb_gro_receive lives",
       decide=lambda t, p: _where(t, p, "skb_gro_receive")),
    _p("gro", "size_cap", GRO_FILES, "skb_gro_receive", "the byte cap",
       [(r"netif_get_gro_max_size\(", "dev_tcp"), (r"gro_max_size\s*=\s*READ_ONCE\(p->dev->gro_max_size\)",
                                                   "dev_ipv6_tcp"), (r">=\s*65536", "constant")], required=True),
    _p("gro", "consumed_truesize", GRO_FILES, "skb_gro_receive", "how the merged skb's truesize is charged",
       [(r"new_truesize\s*=", "6.x"), (r"skb->truesize\s*-=\s*skb->data_len", "5.x")], required=True),
    _p("gro", "gro_udp_fwd", UDP_OFF, "udp_gro_receive", "NETIF_F_GRO_UDP_FWD",
       [(r"NETIF_F_GRO_UDP_FWD", True)], False),
    _p("gro", "tcp_fraglist", "net/ipv4/tcp_offload.c", None, "is_flist",
       [(r"is_flist", True)], False),
    _p("gro", "gso_skb_gro", DEV_GRO, "dev_gro_receive", "the flush rule for a GSO skb",
       [(r"flush\s*=\s*skb_is_gso\(skb\)", "flush"), (r"skb_is_gso_tcp\(skb\)", "tcp_not_dodgy")], required=True),
    _p("gro", "receive_list_checks_flush", GRO_FILES, "skb_gro_receive_list", "NAPI_GRO_CB(skb)->flush refused",
       decide=lambda t, p: _receive_list_flush(t, p)),
    _p("gro", "tcp_flags_not_compared", "net/ipv4/tcp_offload.c", "tcp_gro_receive", "flags masked out",
       [(r"~\(TCP_FLAG_CWR \| TCP_FLAG_FIN \| TCP_FLAG_PSH\)", ["CWR", "FIN", "PSH"]),
        (r"~\(TCP_FLAG_FIN \| TCP_FLAG_PSH\)", ["FIN", "PSH"])], required=True),
)

# Rules no probe decides, and why (python -m lab profile keeps their committed value).
HAND_WRITTEN = {
    "sk_buff_size_64": "sizeof(struct sk_buff) depends on the config: read from the kernel's BTF (pahole on the "
                       "image's vmlinux, or the QEMU lab's btf_offsets), not from the source",
    "small_head_request": "SKB_SMALL_HEAD_CACHE_SIZE depends on MAX_HEADER, i.e. on the config: read from "
                          "/sys/kernel/slab/skbuff_small_head/object_size of a running kernel",
}


def _rq_dma(tree: Tree, probe: Probe) -> Finding:
    file = VIRTIO
    try:
        tree.body(file, "virtnet_rq_alloc")
    except ProbeError:
        m = tree.search(file, None, r"^#include")
        return Finding(probe.table, probe.rule, 0, m or tree.head(file, None), file, False,
                       "virtnet_rq_alloc (no premapped DMA header)")
    gate = tree.search(file, "virtnet_rq_alloc", r"if\s*\(\s*rq->do_dma\s*\)")
    if gate is not None:
        setter = tree.search(file, None, r"rq->do_dma\s*=\s*true|->do_dma\s*=\s*1")
        if setter is None:
            return Finding(probe.table, probe.rule, 0, gate, "virtnet_rq_alloc", True,
                           "the header written only if rq->do_dma, which nothing sets")
        return Finding(probe.table, probe.rule, 16, setter, "virtnet_rq_alloc", True, probe.looks_for)
    m = tree.search(file, "virtnet_rq_alloc", r"sizeof\(\*dma\)|sizeof\(struct virtnet_rq_dma\)")
    if m is not None:
        return Finding(probe.table, probe.rule, 16, m, "virtnet_rq_alloc", True, probe.looks_for)
    return Finding(probe.table, probe.rule, 0, tree.head(file, "virtnet_rq_alloc"), "virtnet_rq_alloc", False,
                   probe.looks_for)


def _gives_pages(tree: Tree, probe: Probe) -> Finding:
    start, lines = tree.body(VIRTIO, "page_to_skb")
    b = next((k for k, ln in enumerate(lines) if re.search(r"build_skb\(buf", ln)), None)
    if b is None:
        return Finding(probe.table, probe.rule, False, tree.head(VIRTIO, "page_to_skb"), "page_to_skb", False,
                       "build_skb branch")
    c = next((k for k, ln in enumerate(lines) if "napi_alloc_skb(" in ln), len(lines))
    for k in range(b, c):
        if "give_pages(" in lines[k]:
            return Finding(probe.table, probe.rule, True, Match(VIRTIO, start + k, tree.raw_line(VIRTIO, start + k)),
                           "page_to_skb", True, probe.looks_for)
    return Finding(probe.table, probe.rule, False, Match(VIRTIO, start + b, tree.raw_line(VIRTIO, start + b)),
                   "page_to_skb", False, "give_pages between build_skb and the copy path")


def _geometry(tree: Tree, probe: Probe) -> Finding:
    m = tree.search(UDP_OFF, "__udp_gso_segment", r"Detect modified geometry")
    if m is None:
        # the comment is stripped; look for the code it introduces: the list path is taken only if geometry held
        m = tree.search(UDP_OFF, "__udp_gso_segment", r"skb_pagelen\(gso_skb\)\s*-\s*sizeof\(\*uh\)\s*==")
    if m is not None:
        return Finding(probe.table, probe.rule, True, m, "__udp_gso_segment", True, probe.looks_for)
    return Finding(probe.table, probe.rule, False, tree.head(UDP_OFF, "__udp_gso_segment"), "__udp_gso_segment",
                   False, probe.looks_for)


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


def _bond_compute(tree: Tree, probe: Probe) -> Finding:
    m = tree.search(BOND, None, r"netdev_compute_master_upper_features\(")
    if m is not None:
        return Finding(probe.table, probe.rule, "master_upper", m, "bond_enslave", True, probe.looks_for)
    m = tree.search(BOND, "bond_compute_features", r"=\s*netdev_base_features\(")
    if m is not None:
        return Finding(probe.table, probe.rule, "base_features", m, "bond_compute_features", True, probe.looks_for)
    m = tree.search(BOND, "bond_compute_features", r"vlan_features\s*&=\s*NETIF_F_ALL_FOR_ALL")
    if m is not None:
        return Finding(probe.table, probe.rule, "all_for_all", m, "bond_compute_features", True, probe.looks_for)
    raise ProbeError(f"{tree.label}: bond_compute_features matches none of the known forms")


def _rx_frag_order(tree: Tree, probe: Probe) -> Finding:
    """3 (skb_page_frag_refill's 32 KiB compound page, SKB_FRAG_PAGE_ORDER) or 0 (a page_pool of order-0 pages)."""
    m = tree.search(VIRTIO, "virtnet_create_page_pools", r"pp_params\.order\s*=\s*(\d+)") \
        if tree.search(VIRTIO, None, r"^static int virtnet_create_page_pools\(") else None
    if m is not None and tree.search(VIRTIO, "add_recvbuf_mergeable", r"page_pool_alloc_va\("):
        order = int(re.search(r"=\s*(\d+)", m.text).group(1))  # type: ignore[union-attr]
        return Finding(probe.table, probe.rule, order, m, "virtnet_create_page_pools", True, probe.looks_for)
    m = tree.search(VIRTIO, "add_recvbuf_mergeable", r"skb_page_frag_refill\(")
    if m is None:
        raise ProbeError(f"{tree.label}: add_recvbuf_mergeable uses neither skb_page_frag_refill nor a page_pool")
    return Finding(probe.table, probe.rule, 3, m, "add_recvbuf_mergeable", True,
                   "skb_page_frag_refill (SKB_FRAG_PAGE_ORDER = get_order(32768))")


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


def _receive_list_flush(tree: Tree, probe: Probe) -> Finding:
    file = next((f for f in probe.files if tree.has(f) and tree.search(f, None, r"^int skb_gro_receive_list\(")), None)
    if file is None:
        raise ProbeError(f"{tree.label}: none of {', '.join(probe.files)} defines skb_gro_receive_list")
    start, lines = tree.body(file, "skb_gro_receive_list")
    for k, ln in enumerate(lines):
        if "65536" in ln:
            stmt = " ".join(lines[k:k + 3]).split(")) {")[0].split("))\n")[0]
            test = stmt.split("return")[0]
            found = "NAPI_GRO_CB(skb)->flush" in test
            return Finding(probe.table, probe.rule, found, Match(file, start + k, tree.raw_line(file, start + k)),
                           "skb_gro_receive_list", True, probe.looks_for)
    raise ProbeError(f"{tree.label}: skb_gro_receive_list has no 65536 cap")


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
