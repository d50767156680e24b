"""What GRO looks at per flow, resolved and checked once: the inputs both GRO engines share.

The kernel's data/gro.toml rules for the flow's protocol (net/ipv4/tcp_offload.c, net/ipv4/udp_offload.c),
whether and how it aggregates (UDP_GRO socket, GRO_FRAGLIST, GRO_UDP_FWD), the size cap (net/core/gro.c
skb_gro_receive) and the TCP flag rules of tcp_gro_receive. vnetlab.gro (per skb) and vnetlab.gro_stream
(numpy) both start from :func:`flow_params`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vnetlab import features as _features
from vnetlab.checks import check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import (
    GRO_LEGACY_MAX_SIZE,
    GRO_MAX_SIZE,
    IP_HLEN,
    TCP_HLEN_MAX,
    TCP_HLEN_MIN,
    TCP_HLEN_TS,
    UDP_HLEN,
    VLAN_HLEN,
)
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve
from vnetlab.virtio import L4, IpVersion

# GRO_LEGACY_MAX_SIZE, GRO_MAX_SIZE, UDP_GRO_CNT_MAX, TCP_FRAGLIST_CNT_MAX: vnetlab.headers (shared with GSO).
# net/core/gro.c (6.1, 6.18), net/core/dev.c (5.x): MAX_GRO_SKBS 8 held skbs per bucket.
MAX_GRO_SKBS = 8

TCP_FLAGS = ("FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR")
TCP_FLAG_BIT = {name: 1 << i for i, name in enumerate(TCP_FLAGS)}


@public
def cmp_mask(fp: FlowParams) -> int:
    """tcp_gro_receive: the flag bits that must equal p's (6.1: all but CWR|FIN|PSH; 6.18: all but FIN|PSH)."""
    return 0xFF & ~sum(TCP_FLAG_BIT[name] for name in fp.rules["tcp_flags_not_compared"])


@public
def cwr_flush_mask(fp: FlowParams) -> int:
    """tcp_gro_receive: the bit whose presence alone refuses the merge: CWR up to 6.18 (flush = flags &
    TCP_FLAG_CWR), none in 7.x (ab4c8b6f7fcb compares CWR like the other flags instead); gro rule tcp_cwr_flush."""
    return TCP_FLAG_BIT["CWR"] if fp.rules["tcp_cwr_flush"] else 0


# tcp_gro_receive out_check_final (6.1): URG|PSH|RST|SYN|FIN force a flush.
FINAL_FLUSH = sum(TCP_FLAG_BIT[name] for name in ("URG", "PSH", "RST", "SYN", "FIN"))

# ---------------------------------------------------------------- parameters

@public
def gro_rules(k: Kernel) -> Any:
    """The kernel's data/gro.toml section, asked of the Kernel object (Kernel.table)."""
    return k.table("gro")


@public
def has_feature(features: Any, name: str) -> bool:
    return name in features


@public
def check_features(features: Any, rules: Any, k: Kernel) -> Any:
    if features is None:
        return frozenset({"GRO"})
    # a str or a mapping answers 'in' too ("GRO" in "x" is False): it would silently mean "GRO off"
    if isinstance(features, (str, bytes, Mapping)) or not hasattr(type(features), "__contains__") or (
            not isinstance(features, _features.FeatureSet) and not all(isinstance(n, str) for n in features)):
        raise ArgumentError(f"features must be the receiving device's FeatureSet or a set of NETIF_F names such as "
                            f"{{'GRO', 'GRO_FRAGLIST'}}, got {features!r}", param="features")
    if has_feature(features, "GRO_UDP_FWD") and not rules["gro_udp_fwd"] \
            and "GRO_UDP_FWD" not in _features.table(k).bits:
        raise ArgumentError(f"features: GRO_UDP_FWD does not exist in kernel {k.version} (added in 5.12)",
                            param="features")
    # A kernel with the bit but no test of it in udp_gro_receive (Debian 5.10.262, 5.10.231's backport): the
    # feature can be on and merges nothing (gro rule gro_udp_fwd false, the flow's `fwd` below).
    return features


@dataclass(frozen=True)
class FlowParams:
    """The per-flow inputs GRO looks at, resolved and checked."""

    l4: str
    ip: int
    vlan: bool
    tcp_hdr_len: int
    offset: int  # skb_gro_offset() at the payload: VLAN + IP + L4 header, after eth_type_trans
    kernel: Kernel
    arch: Arch
    gro_max_size: int
    gro_on: bool
    is_flist: bool
    aggregates: bool
    cap_limit: int  # refuse when p->len + len >= cap_limit

    @property
    def max_skb_frags(self) -> int:
        return self.arch.max_skb_frags

    @property
    def l3_offset(self) -> int:
        """skb_gro_offset() once inet_gro_receive / ipv6_gro_receive pulled the (VLAN and) IP header."""
        return self.offset - (self.tcp_hdr_len if self.l4 == "tcp" else UDP_HLEN)

    @property
    def rules(self) -> Any:
        return gro_rules(self.kernel)


@public
def flow_params(*, l4: L4 = "tcp", ip: IpVersion = 4, vlan: bool = False, tcp_hdr_len: int = TCP_HLEN_TS,
                udp_gro: bool = False, local_socket: bool | None = None, udp_encap_needed: bool | None = None,
                features: Any = None, kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                gro_max_size: int = GRO_LEGACY_MAX_SIZE) -> FlowParams:
    """Check the flow parameters and decide whether (and how) this flow aggregates."""
    tcp_hdr_len = check_int("tcp_hdr_len", tcp_hdr_len, TCP_HLEN_MIN, TCP_HLEN_MAX, "doff*4, a multiple of 4")
    if tcp_hdr_len % 4:
        raise ArgumentError(f"tcp_hdr_len must be a multiple of 4 in 20..60 (doff*4), got {tcp_hdr_len}",
                            param="tcp_hdr_len")
    k, a = resolve(kernel, arch)
    rules = gro_rules(k)
    feats = check_features(features, rules, k)
    cap_rule = rules["size_cap"]
    if cap_rule == "constant":
        # net/core/skbuff.c skb_gro_receive (5.10): the constant 65536, no dev->gro_max_size yet.
        if gro_max_size != GRO_LEGACY_MAX_SIZE:
            raise ArgumentError(f"gro_max_size must be {GRO_LEGACY_MAX_SIZE} for kernel {k.version} "
                                f"(dev->gro_max_size exists from 5.19), got {gro_max_size!r}", param="gro_max_size")
    else:
        check_int("gro_max_size", gro_max_size, 0, GRO_MAX_SIZE, "ip link set gro_max_size, GRO_MAX_SIZE = 8*65535")
    if udp_gro and l4 != "udp":
        raise ArgumentError("udp_gro=True needs l4='udp'", param="udp_gro")
    if local_socket is None:
        local_socket = True
    if udp_gro and not local_socket:
        raise ArgumentError("udp_gro=True means the flow ends at a local UDP_GRO socket; local_socket must be True",
                            param="udp_gro")
    # net/ipv4/udp.c udp_setsockopt UDP_GRO (6.1): enabling UDP_GRO turns udp_encap_needed_key on.
    encap_key = bool(udp_gro) if udp_encap_needed is None else bool(udp_encap_needed)
    if udp_gro and not encap_key:
        raise ArgumentError("udp_encap_needed must be True when udp_gro=True (setsockopt(UDP_GRO) enables the key)",
                            param="udp_encap_needed")
    gro_on = has_feature(feats, "GRO")
    offset = (VLAN_HLEN if vlan else 0) + IP_HLEN[ip] + (tcp_hdr_len if l4 == "tcp" else UDP_HLEN)
    is_flist = False
    if l4 == "udp":
        # net/ipv4/udp_offload.c udp4_gro_receive (5.10, 6.1): the socket is looked up only if udp_encap_needed_key.
        sk = local_socket and encap_key
        # udp_gro_receive (5.10, 6.1): is_flist = sk ? !udp_gro : 1 when NETIF_F_GRO_FRAGLIST.
        if has_feature(feats, "GRO_FRAGLIST"):
            is_flist = (not udp_gro) if sk else True
        fwd = (not sk) and rules["gro_udp_fwd"] and has_feature(feats, "GRO_UDP_FWD")
        aggregates = gro_on and (fwd or (sk and udp_gro) or is_flist)
    else:
        # net/ipv4/tcp_offload.c tcp4_check_fraglist_gro (~6.10+): fraglist when no established socket.
        if rules["tcp_fraglist"] and has_feature(feats, "GRO_FRAGLIST"):
            is_flist = not local_socket
        aggregates = gro_on
    if cap_rule == "constant":
        cap = GRO_LEGACY_MAX_SIZE
    elif cap_rule == "dev_ipv6_tcp":
        # net/core/gro.c skb_gro_receive (6.1): above 65536 only IPv6 TCP (BIG TCP).
        cap = gro_max_size if (l4 == "tcp" and ip == 6) else min(gro_max_size, GRO_LEGACY_MAX_SIZE)
    else:
        # net/core/gro.c skb_gro_receive (6.18): above 65536 only TCP.
        cap = gro_max_size if l4 == "tcp" else min(gro_max_size, GRO_LEGACY_MAX_SIZE)
    return FlowParams(l4, ip, vlan, tcp_hdr_len, offset, k, a, gro_max_size, gro_on, is_flist, bool(aggregates), cap)


@public
def flag_bits(flags: str | Iterable[object] | None, index: int) -> int:
    if flags is None:
        return TCP_FLAG_BIT["ACK"]
    if isinstance(flags, str):
        flags = {f for f in flags.replace("|", ",").split(",") if f}
    bits = 0
    for name in flags:  # type: ignore[union-attr]
        key = str(name).upper().strip()
        if key not in TCP_FLAG_BIT:
            raise ArgumentError(f"tcp_flags[{index}] has unknown flag {name!r}; allowed: {', '.join(TCP_FLAGS)}",
                                param="tcp_flags")
        bits |= TCP_FLAG_BIT[key]
    return bits
