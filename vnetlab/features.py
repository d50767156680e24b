"""NETIF_F feature bits, composite masks and ethtool names of each modelled kernel, and FeatureSet.

The numbers live in data/netdev_features.toml (one set of sections per kernel, each value with its source);
this module only reads them. Bits move between versions: LLTX/NETNS_LOCAL sit at 12/13 until 6.18 made
them unused, GRO_UDP_FWD (59) arrives in 5.12, the HSR bits (60-63) after it, and 6.18 inserts GSO_ACCECN
at 35, pushing FCOE_CRC/SCTP_CRC up by one and dropping FCOE_MTU.

Every function takes ``kernel=`` as a version string or a resolved :class:`~vnetlab.profiles.Kernel` (a lab
kernel keeps its patch's rules); the table is built once per Kernel object and kept on it (Kernel.derived), and a
FeatureSet keeps both, so operations on it never resolve a version again.

The feature algebra of include/linux/netdevice.h and net/core/dev.c (netdev_intersect_features,
netdev_increment_features, netdev_add_tso_features, net_gso_ok, skb_gso_ok) is here too, on FeatureSets.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError, TableError, UnknownFeatureError, UnknownKernelError
from vnetlab.profiles import DEFAULT_KERNEL, Kernel, table_kernels
from vnetlab.profiles import kernel as _kernel

# include/linux/netdev_features.h: NETIF_F_GSO_SHIFT = NETIF_F_TSO_BIT = 16 in every modelled version.
GSO_SHIFT = 16

MASK_NAMES = (
    "GSO_MASK", "CSUM_MASK", "ALL_TSO", "ALL_FCOE", "GSO_SOFTWARE", "ONE_FOR_ALL", "ALL_FOR_ALL",
    "UPPER_DISABLES", "SOFT_FEATURES", "SOFT_FEATURES_OFF", "VLAN_FEATURES", "GSO_ENCAP_ALL", "NEVER_CHANGE",
)


@dataclass(frozen=True)
class FeatureTable:
    """Everything data/netdev_features.toml says about one kernel."""

    kernel: str  # the version whose sections these are
    bits: Mapping[str, int]
    by_bit: Mapping[int, str]
    ethtool: Mapping[str, str]
    from_ethtool: Mapping[str, str]
    masks: Mapping[str, int]
    skb_gso: Mapping[str, int]
    sources: Mapping[str, str]
    all_bits: int = 0


def known_kernels() -> tuple[str, ...]:
    """Kernel versions with a feature table, oldest first."""
    return table_kernels("netdev_features")


@public
def resolve(kernel: str | Kernel) -> Kernel:
    """The Kernel that ``kernel`` names (a Kernel is itself: a lab kernel keeps its patch's rules)."""
    if isinstance(kernel, Kernel):
        return kernel
    if not isinstance(kernel, str):
        raise UnknownKernelError(
            f"kernel must be a version string such as '6.18', got {kernel!r}; known: {', '.join(known_kernels())}"
        )
    return _kernel(kernel)


def _resolve_mask(version: str, name: str, raw: Mapping[str, object], bits: Mapping[str, int],
                  seen: tuple[str, ...] = ()) -> int:
    if name in seen:
        raise TableError(f"data/netdev_features.toml: [\"{version}.masks\"].{name} is defined in terms of itself")
    value = raw[name]
    if isinstance(value, dict):
        first, last = bits[value["first"]], bits[value["last"]]
        return (1 << (last + 1)) - (1 << first)
    result = 0
    for member in value:  # type: ignore[union-attr]
        if member in bits:
            result |= 1 << bits[member]
        elif member in raw:
            result |= _resolve_mask(version, member, raw, bits, seen + (name,))
        else:
            raise TableError(f"data/netdev_features.toml: [\"{version}.masks\"].{name} has unknown member {member!r}")
    return result


def _build_table(k: Kernel) -> FeatureTable:
    version = k.version
    if not k.has_table("netdev_features"):
        raise UnknownKernelError(f"kernel={version!r} has no NETIF_F table; known: {', '.join(known_kernels())}")
    bits_sec = k.table("netdev_features")
    bits = {name: bits_sec.typed(name, int) for name in bits_sec.values}
    by_bit = {b: n for n, b in bits.items()}
    if len(by_bit) != len(bits):
        raise TableError(f"data/netdev_features.toml: [\"{version}\"] gives two features the same bit")
    eth_sec = k.table("netdev_features", "ethtool")
    ethtool = {name: eth_sec.typed(name, str) for name in eth_sec.values}
    for name in ethtool:
        if name not in bits:
            raise TableError(f"data/netdev_features.toml: [\"{version}.ethtool\"].{name} is not a feature of {version}")
    mask_sec = k.table("netdev_features", "masks")
    masks = {name: _resolve_mask(version, name, mask_sec.values, bits) for name in mask_sec.values}
    gso_sec = k.table("netdev_features", "skb_gso")
    skb_gso = {name: gso_sec.typed(name, int) for name in gso_sec.values}
    sources = {name: bits_sec.source(name) for name in bits}
    sources.update({f"mask:{n}": mask_sec.source(n) for n in masks})
    return FeatureTable(
        kernel=version, bits=bits, by_bit=by_bit, ethtool=ethtool,
        from_ethtool={v: k for k, v in ethtool.items()}, masks=masks, skb_gso=skb_gso, sources=sources,
        all_bits=functools.reduce(lambda acc, b: acc | (1 << b), bits.values(), 0),
    )


@public
def table(kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureTable:
    """The :class:`FeatureTable` of ``kernel`` (built once per Kernel object and kept on it)."""
    return resolve(kernel).derived("netdev_features", _build_table)


@public
@functools.cache
def any_kernel_features() -> frozenset[str]:
    """Every feature name some modelled kernel has (a name outside it is a typo, not an absent bit)."""
    return frozenset(n for v in known_kernels() for n in table(v).bits)


def _strip(name: str) -> str:
    return name.removeprefix("NETIF_F_").removesuffix("_BIT") if isinstance(name, str) else name


def _unknown(param: str, value: object, version: str, valid: Iterable[str]) -> UnknownFeatureError:
    return UnknownFeatureError(f"{param}={value!r} is not known in kernel {version}; valid: {', '.join(valid)}")


@public
def bit(name: str, kernel: str | Kernel = DEFAULT_KERNEL) -> int:
    """The bit number of NETIF_F_<name>_BIT in ``kernel`` ("SG" -> 0, "GSO_UDP_L4" -> 33)."""
    t = table(kernel)
    key = _strip(name)
    if key not in t.bits:
        raise _unknown("name", name, t.kernel, t.bits)
    return t.bits[key]


@public
def names(kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """Every feature name of ``kernel`` in bit order."""
    t = table(kernel)
    return tuple(t.by_bit[b] for b in sorted(t.by_bit))


@public
def ethtool_name(name: str, kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """The netdev_features_strings entry for feature ``name`` ("GSO_UDP_L4" -> "tx-udp-segmentation")."""
    t = table(kernel)
    key = _strip(name)
    if key not in t.ethtool:
        raise _unknown("name", name, t.kernel, t.ethtool)
    return t.ethtool[key]


@public
def from_ethtool_name(ethtool: str, kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """The feature name for an ethtool feature string ("tx-gso-list" -> "GSO_FRAGLIST")."""
    t = table(kernel)
    if ethtool not in t.from_ethtool:
        raise _unknown("ethtool", ethtool, t.kernel, t.from_ethtool)
    return t.from_ethtool[ethtool]


@public
def mask(name: str, kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
    """A composite macro NETIF_F_<name> ("GSO_SOFTWARE", "ONE_FOR_ALL", ...) as a FeatureSet."""
    t = table(kernel)
    key = _strip(name)
    if key not in t.masks:
        raise _unknown("name", name, t.kernel, t.masks)
    return FeatureSet(t.masks[key], kernel)


# An `ethtool -k` value as netlink/features.c dump_feature prints it (vnetlab.ethtool.FeatureState parses the same)
_ETHTOOL_VALUE = re.compile(r"(on|off)(?: \[(?:fixed|requested on|requested off)\])?")


def _on(state: object, where: str) -> bool:
    """A feature's on/off from a bool, a FeatureState or (on, fixed[, wanted]) tuple, or an `ethtool -k` value."""
    if isinstance(state, bool):
        return state
    if isinstance(state, str):
        match = _ETHTOOL_VALUE.fullmatch(state.strip())
        if match:
            return match[1] == "on"
    elif isinstance(state, tuple) and len(state) in (2, 3) and all(isinstance(v, bool) for v in state):
        return state[0]
    elif isinstance(getattr(state, "on", None), bool) and isinstance(getattr(state, "fixed", None), bool):
        return state.on  # type: ignore[attr-defined]  # an ethtool.FeatureState
    raise ArgumentError(f"{where}={state!r}: a feature is on or off: True/False, a FeatureState, (on, fixed), or the "
                        "value `ethtool -k` prints (\"on\", \"off [fixed]\", ...)", param=where)


class FeatureSet:
    """An immutable set of NETIF_F features (names without the prefix) of one kernel.

    ``"X" in fs`` is True or False for every feature of fs's kernel. For a feature that exists in another
    modelled kernel but not in this one (GRO_UDP_FWD before 5.12, GSO_ACCECN before 6.18, LLTX in 6.18) it is
    False: that kernel's netdev_features_t has no such bit, so no device of it can have it (net/core/gro.c and
    udp_offload.c ask exactly this). A name that no modelled kernel has is a typo and raises
    UnknownFeatureError, as do ``|``, ``&``, ``-`` with such a name and every constructor given a feature the
    kernel lacks (``from_names(["GSO_ACCECN"], kernel="6.1")``).

    ``kernel`` is the resolved :class:`~vnetlab.profiles.Kernel` the set was made for (a lab kernel keeps its
    patch's rules); sets of kernels with the same feature table combine and compare equal.
    """

    __slots__ = ("_bits", "_k", "_t")

    @public
    def __init__(self, bits: int, kernel: str | Kernel = DEFAULT_KERNEL) -> None:
        k = resolve(kernel)
        t = table(k)
        if not isinstance(bits, int) or isinstance(bits, bool) or bits < 0:
            raise ValueError(f"bits must be a non-negative int, got {bits!r}")
        stray = bits & ~t.all_bits
        if stray:
            raise ValueError(
                f"bits={bits:#x} sets bit(s) {[b for b in range(stray.bit_length()) if stray >> b & 1]} "
                f"that are unused in kernel {t.kernel}"
            )
        object.__setattr__(self, "_bits", bits)
        object.__setattr__(self, "_k", k)
        object.__setattr__(self, "_t", t)

    @classmethod
    def of_checked_bits(cls, bits: int, like: FeatureSet) -> FeatureSet:
        """A set of ``like``'s kernel from bits already checked against its table (the operators' fast path)."""
        fs = object.__new__(cls)
        object.__setattr__(fs, "_bits", bits)
        object.__setattr__(fs, "_k", like._k)
        object.__setattr__(fs, "_t", like._t)
        return fs

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("FeatureSet is immutable")

    # -- constructors --------------------------------------------------------------------------
    @classmethod
    @public
    def from_names(cls, names: Iterable[str], kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
        if isinstance(names, str):
            names = [names]
        elif isinstance(names, Mapping):
            names = [name for name, on in names.items() if _on(on, f"names[{name!r}]")]
        k = resolve(kernel)
        value = 0
        for name in names:
            value |= 1 << bit(name, k)
        return cls(value, k)

    @classmethod
    @public
    def from_bits(cls, bits: Annotated[int, In(0, 2**64 - 1, "netdev_features_t, a u64")],
                  kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
        return cls(bits, kernel)

    @classmethod
    @public
    def from_ethtool(cls, settings: Mapping[str, object], kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
        """From {ethtool name: on}: a bool, ethtool_k()'s FeatureState or (on, fixed), or the value as ``ethtool -k``
        prints it ("on", "off [fixed]", ...); the 'on' ones are kept."""
        k = resolve(kernel)
        value = 0
        for eth, state in settings.items():
            if _on(state, f"settings[{eth!r}]"):
                value |= 1 << bit(from_ethtool_name(eth, k), k)
        return cls(value, k)

    @classmethod
    @public
    def empty(cls, kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
        return cls(0, kernel)

    @classmethod
    @public
    def coerce(cls, value: object, kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
        """``value`` as a FeatureSet of ``kernel``: a FeatureSet (of that kernel), a netdev_features_t int, or
        an iterable of NETIF_F names (the prefix may be given)."""
        k = resolve(kernel)
        if isinstance(value, FeatureSet):
            if value._t.kernel != table(k).kernel:
                raise ValueError(f"features are of kernel {value._t.kernel}, expected kernel {k.version}")
            return value
        if value is None:
            return cls(0, k)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(value, k)
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise ValueError(f"features must be a FeatureSet, an int or an iterable of NETIF_F names, got {value!r}")
        if isinstance(value, Mapping):
            value = [n for n, on in value.items() if _on(on, f"features[{n!r}]")]
        return cls.from_names([_strip(str(n)) for n in value], k)

    # -- properties ----------------------------------------------------------------------------
    @property
    def bits(self) -> int:
        return self._bits

    @property
    def kernel(self) -> Kernel:
        return self._k

    @property
    def table(self) -> FeatureTable:
        return self._t

    @property
    def names(self) -> tuple[str, ...]:
        t = self._t
        return tuple(t.by_bit[b] for b in sorted(t.by_bit) if self._bits >> b & 1)

    def to_ethtool(self) -> dict[str, bool]:
        """{ethtool name: on} for every feature that has an ethtool string in this kernel."""
        t = self._t
        return {t.ethtool[n]: bool(self._bits >> t.bits[n] & 1) for n in sorted(t.ethtool, key=t.bits.get)}

    # -- set protocol --------------------------------------------------------------------------
    def _other(self, other: object) -> int:
        if isinstance(other, FeatureSet):
            if other._t is not self._t and other._t.kernel != self._t.kernel:
                raise ValueError(f"cannot combine features of kernel {self._t.kernel} with kernel {other._t.kernel}")
            return other._bits
        if isinstance(other, str):
            return 1 << bit(other, self._k)
        if isinstance(other, (set, frozenset, list, tuple)):
            return FeatureSet.from_names(other, self._k)._bits
        return NotImplemented  # type: ignore[return-value]

    def __or__(self, other: object) -> FeatureSet:
        o = self._other(other)
        return NotImplemented if o is NotImplemented else FeatureSet.of_checked_bits(self._bits | o, self)

    def __and__(self, other: object) -> FeatureSet:
        o = self._other(other)
        return NotImplemented if o is NotImplemented else FeatureSet.of_checked_bits(self._bits & o, self)

    def __sub__(self, other: object) -> FeatureSet:
        o = self._other(other)
        return NotImplemented if o is NotImplemented else FeatureSet.of_checked_bits(self._bits & ~o, self)

    def __xor__(self, other: object) -> FeatureSet:
        o = self._other(other)
        return NotImplemented if o is NotImplemented else FeatureSet.of_checked_bits(self._bits ^ o, self)

    __ror__ = __or__
    __rand__ = __and__

    def __contains__(self, item: object) -> bool:
        if isinstance(item, FeatureSet):
            o = self._other(item)
            return self._bits & o == o
        if not isinstance(item, str):
            return False
        t = self._t
        key = _strip(item)
        b = t.bits.get(key)
        if b is None:
            if key in any_kernel_features():
                return False  # a feature this kernel does not have (e.g. GRO_UDP_FWD before 5.12)
            raise _unknown("name", item, t.kernel, t.bits)
        return bool(self._bits >> b & 1)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return bin(self._bits).count("1")

    def __bool__(self) -> bool:
        return self._bits != 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FeatureSet):
            return self._t.kernel == other._t.kernel and self._bits == other._bits
        if isinstance(other, (set, frozenset)):
            return set(self.names) == other
        return NotImplemented

    def __le__(self, other: FeatureSet) -> bool:
        return self._bits & ~self._other(other) == 0

    def __ge__(self, other: FeatureSet) -> bool:
        o = self._other(other)
        return o & ~self._bits == 0

    def __hash__(self) -> int:
        return hash((self._t.kernel, self._bits))

    def __repr__(self) -> str:
        return f"FeatureSet({{{', '.join(self.names)}}}, kernel={self._k.label!r})"


# --- SKB_GSO <-> NETIF_F_GSO ------------------------------------------------------------------------

@public
def skb_gso_bit(name: str, kernel: str | Kernel = DEFAULT_KERNEL) -> int:
    """The bit number of SKB_GSO_<name> (include/linux/skbuff.h)."""
    t = table(kernel)
    key = name.removeprefix("SKB_GSO_")
    if key not in t.skb_gso:
        raise _unknown("name", name, t.kernel, t.skb_gso)
    return t.skb_gso[key]


@public
def gso_feature(skb_gso: str, kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """The NETIF_F name that carries SKB_GSO_<skb_gso>: NETIF_F_x == SKB_GSO_x << NETIF_F_GSO_SHIFT."""
    t = table(kernel)
    key = skb_gso.removeprefix("SKB_GSO_")
    b = skb_gso_bit(key, kernel)
    # include/linux/skbuff.h (6.18): SKB_GSO_TCP_FIXEDID{,_INNER} (bits 30/31) are outside the shift range;
    # they mean "IPv4 ID may be mangled" and so need TSO_MANGLEID (= __SKB_GSO_TCP_FIXEDID << 16). UNVERIFIED
    # against net_gso_ok of 6.18, which was not read.
    if key in ("TCP_FIXEDID", "TCP_FIXEDID_INNER") and "__TCP_FIXEDID" in t.skb_gso:
        b = t.skb_gso["__TCP_FIXEDID"]
    feature = t.by_bit.get(b + GSO_SHIFT)
    if feature is None or not t.masks["GSO_MASK"] >> (b + GSO_SHIFT) & 1:
        raise _unknown("skb_gso", skb_gso, t.kernel, t.skb_gso)
    return feature


@public
def gso_type_features(gso_type: Iterable[str], kernel: str | Kernel = DEFAULT_KERNEL) -> FeatureSet:
    """(netdev_features_t)gso_type << NETIF_F_GSO_SHIFT, for a set of SKB_GSO names."""
    if isinstance(gso_type, str):
        gso_type = [gso_type]
    return FeatureSet.from_names([gso_feature(g, kernel) for g in gso_type], kernel)


@public
def net_gso_ok(features: FeatureSet, gso_type: Iterable[str]) -> bool:
    """include/linux/netdevice.h net_gso_ok: every bit of gso_type << 16 is in features."""
    return gso_type_features(gso_type, features.kernel) <= features


@public
def skb_gso_ok(features: FeatureSet, gso_type: Iterable[str], *, has_frag_list: bool) -> bool:
    """include/linux/netdevice.h skb_gso_ok: net_gso_ok, and a frag_list needs NETIF_F_FRAGLIST."""
    return net_gso_ok(features, gso_type) and (not has_frag_list or "FRAGLIST" in features)


@public
def can_checksum_protocol(features: FeatureSet, ip: int) -> bool:
    """include/linux/netdevice.h can_checksum_protocol (5.10..6.18) for IPv4 / IPv6: HW_CSUM covers every
    protocol; otherwise IP_CSUM for ETH_P_IP, IPV6_CSUM for ETH_P_IPV6."""
    if ip not in (4, 6):
        raise ValueError(f"ip must be 4 or 6, got {ip!r}")
    return "HW_CSUM" in features or ("IP_CSUM" if ip == 4 else "IPV6_CSUM") in features


# --- feature algebra (include/linux/netdevice.h, net/core/dev.c) -----------------------------------

def _tab(kernel: FeatureTable | str | Kernel) -> FeatureTable:
    return kernel if isinstance(kernel, FeatureTable) else table(kernel)


def _m(name: str, t: FeatureTable) -> int:
    return t.masks[name]


def _b(name: str, t: FeatureTable) -> int:
    return 1 << t.bits[name]


@public
def intersect_bits(f1: int, f2: int, kernel: FeatureTable | str | Kernel) -> int:
    """include/linux/netdevice.h netdev_intersect_features (same 5.10..6.18)."""
    t = _tab(kernel)
    hw, ip = _b("HW_CSUM", t), _b("IP_CSUM", t) | _b("IPV6_CSUM", t)
    if (f1 ^ f2) & hw:
        if f1 & hw:
            f1 |= ip
        else:
            f2 |= ip
    return f1 & f2


@public
def increment_bits(all_: int, one: int, mask_: int, kernel: FeatureTable | str | Kernel) -> int:
    """net/core/dev.c netdev_increment_features (same 5.10..6.18)."""
    t = _tab(kernel)
    csum, hw = _m("CSUM_MASK", t), _b("HW_CSUM", t)
    if mask_ & hw:
        mask_ |= csum
    mask_ |= _b("VLAN_CHALLENGED", t)
    all_ |= one & (_m("ONE_FOR_ALL", t) | csum) & mask_
    all_ &= one | ~_m("ALL_FOR_ALL", t)
    if all_ & hw:
        all_ &= ~(csum & ~hw)
    return all_


@public
def add_tso_bits(features: int, mask_: int, kernel: FeatureTable | str | Kernel) -> int:
    """include/linux/netdevice.h netdev_add_tso_features."""
    t = _tab(kernel)
    return increment_bits(features, _m("ALL_TSO", t) | _m("ALL_FOR_ALL", t), mask_, t)


@public
def netdev_intersect_features(f1: FeatureSet, f2: FeatureSet) -> FeatureSet:
    return FeatureSet.of_checked_bits(intersect_bits(f1.bits, f1._other(f2), f1._t), f1)


@public
def netdev_increment_features(all_: FeatureSet, one: FeatureSet, mask_: FeatureSet) -> FeatureSet:
    return FeatureSet.of_checked_bits(increment_bits(all_.bits, all_._other(one), all_._other(mask_), all_._t), all_)


@public
def netdev_add_tso_features(features: FeatureSet, mask_: FeatureSet) -> FeatureSet:
    return FeatureSet.of_checked_bits(add_tso_bits(features.bits, features._other(mask_), features._t), features)
