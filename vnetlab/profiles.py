"""Kernel versions and architecture profiles, read from data/kernels.toml and data/arches.toml.

``kernel("6.1")`` gives a :class:`Kernel` (ordered by version) carrying that kernel's rules;
``arch("x86_64", kernel="6.1")`` gives an :class:`Arch` with the sizes the skb code computes from them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError, TableError, UnknownArchError, UnknownKernelError
from vnetlab.tables import Section, TableName, load_table

DEFAULT_KERNEL = "6.1"
DEFAULT_ARCH = "x86_64"


def known_kernels() -> tuple[str, ...]:
    """The kernel versions with rules in data/kernels.toml, oldest first."""
    table = load_table("kernels")
    return tuple(sorted(table, key=_version_key))


@public
def kernel_section(table: TableName, version: str, part: str = "") -> Section | None:
    """The section of data/<table>.toml for kernel ``version`` (and ``part``), None if it has none.

    The one place a per-kernel table section is found by version: Kernel.table asks it, nothing else does."""
    t = load_table(table)
    name = f"{version}.{part}" if part else version
    return t[name] if name in t else None


@public
def table_kernels(table: TableName) -> tuple[str, ...]:
    """The kernel versions data/<table>.toml has sections for, oldest first."""
    versions = {s for s in load_table(table) if s.replace(".", "").isdigit()}
    return tuple(sorted(versions, key=_version_key))


def known_arches() -> tuple[str, ...]:
    return tuple(load_table("arches"))


def _version_key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        raise TableError(f"data/kernels.toml: section [{version!r}] is not a version like \"6.1\"") from None


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Kernel:
    """One kernel release and the rules it really had (data/kernels.toml).

    ``name`` is empty for a profile as data/kernels.toml has it, and a lab kernel's id
    (``"5.10-revert-3d6df63a5cbe"``) for that profile with its patch's rule overrides
    (:meth:`with_overrides`); two kernels are equal when version and name are.
    """

    version: str
    rules: Section = field(repr=False)
    name: str = ""
    # what modules derive from this kernel's tables (features.FeatureTable, ...), built once per object
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def key(self) -> tuple[int, ...]:
        return _version_key(self.version)

    @property
    def label(self) -> str:
        """The version, and the lab kernel's id where a patch's overrides apply ("5.10.223 (5.10-plain)")."""
        return f"{self.version} ({self.name})" if self.name else self.version

    @public
    def with_overrides(self, name: str, overrides: Mapping[str, tuple[Any, str]]) -> Kernel:
        """This profile with ``overrides`` (rule -> (value, source)) replacing its rules, named ``name`` (any
        non-empty lab kernel id); no overrides is the same rules under that name."""
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"name must be a non-empty lab kernel id, got {name!r}", param="name")
        values, sources = dict(self.rules.values), dict(self.rules.sources)
        for rule, override in overrides.items():
            if rule not in values:  # an override replaces a rule the profile has; a new name is a typo
                raise ArgumentError(f"with_overrides: overrides[{rule!r}] is not a rule of kernel {self.version}; "
                                    f"its rules: {', '.join(sorted(values))}", param="overrides")
            if not (isinstance(override, tuple) and len(override) == 2 and isinstance(override[1], str)):
                raise ArgumentError(f"with_overrides: overrides[{rule!r}] must be (value, source), got {override!r}",
                                    param="overrides")
            value, source = override
            _check_rule_value(rule, value)
            values[rule], sources[rule] = value, source
        return Kernel(self.version, Section(self.rules.table, f"{self.rules.name} ({name})", values, sources), name)

    @public
    def rule(self, name: str) -> Any:
        return self.rules[name]

    @public
    def table(self, table: TableName, part: str = "") -> Section:
        """This kernel's section ``part`` of data/<table>.toml ("gro"; "netdev_features" with part "", "ethtool",
        "masks", "skb_gso"): what modules read instead of looking a version string up themselves."""
        key = f"table:{table}:{part}"
        if key in self._derived:
            return self._derived[key]
        sec = kernel_section(table, self.version, part)
        if sec is None:
            where = f"[{self.version}{'.' + part if part else ''}]"
            raise UnknownKernelError(f"kernel={self.version!r} has no section {where} in data/{table}.toml; "
                                     f"known: {', '.join(table_kernels(table))}")
        self._derived[key] = sec
        return sec

    @public
    def has_table(self, table: TableName) -> bool:
        return kernel_section(table, self.version) is not None

    @public
    def derived(self, key: str, build: Callable[[Kernel], Any]) -> Any:
        """``build(self)``, computed on first use and kept on this object (a module's view of its tables)."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = build(self)
            return value

    @public
    def source(self, name: str) -> str:
        return self.rules.source(name)

    @property
    def rules_key(self) -> tuple[tuple[str, str], ...]:
        """The rules as a hashable value: what a cache of this kernel's answers must be keyed by (two lab kernels
        of one name and version with other overrides answer differently)."""
        key = self._derived.get("rules_key")
        if key is None:
            key = self._derived["rules_key"] = tuple(sorted((n, repr(v)) for n, v in self.rules.values.items()))
        return key

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Kernel):
            if self.key != other.key or self.name != other.name:
                return False
            return self is other or not self.name or self.rules_key == other.rules_key
        other_key = _coerce_key(other)
        return NotImplemented if other_key is None else self.key == other_key and not self.name

    def __lt__(self, other: object) -> bool:
        other_key = _coerce_key(other)
        if other_key is None:
            return NotImplemented
        return self.key < other_key

    def __hash__(self) -> int:
        # equal to its version string (a profile) hashes like it, so {"6.1": ...}[kernel("6.1")] finds it
        return hash((self.version, self.name)) if self.name else hash(self.version)

    def __str__(self) -> str:
        return self.version

    def __format__(self, spec: str) -> str:
        return format(self.version, spec)  # f"{k:8}" pads like the version string it replaced


@functools.cache
def _rule_domains() -> dict[str, tuple[type, frozenset[Any] | None]]:
    """Per rule of data/kernels.toml: the type its values have and, for a word-valued rule, the words some kernel
    has (the models branch on exactly those; another word would fall through to a default silently)."""
    domains: dict[str, tuple[type, set[Any] | None]] = {}
    for version in known_kernels():
        for rule, value in load_table("kernels")[version].values.items():
            kind = type(value)
            words = domains.setdefault(rule, (kind, set() if kind is str else None))[1]
            if words is not None and isinstance(value, str):
                words.add(value)
    return {r: (t, None if w is None or r == "released" else frozenset(w)) for r, (t, w) in domains.items()}


def _check_rule_value(rule: str, value: object) -> None:
    kind, words = _rule_domains().get(rule, (type(value), None))
    ok = type(value) is kind and (words is None or value in words)
    if kind is int and ok:
        ok = value >= 0  # sizes, counts and page orders
    if kind is list and ok:
        ok = all(type(v) is int and v >= 0 for v in value)  # type: ignore[union-attr]
    if not ok:
        what = f"one of {sorted(words)}" if words else f"a {kind.__name__}" + (" >= 0" if kind is int else "")
        raise ArgumentError(f"with_overrides: overrides[{rule!r}] must be {what} (the values the models know for "
                            f"this rule in data/kernels.toml), got {value!r}", param="overrides")


def _coerce_key(other: object) -> tuple[int, ...] | None:
    if isinstance(other, Kernel):
        return other.key
    if isinstance(other, str):
        try:
            return tuple(int(p) for p in other.split("."))
        except ValueError:
            return None
    return None


@functools.cache
def _kernel(version: str) -> Kernel:
    table = load_table("kernels")
    if version not in table:
        raise UnknownKernelError(
            f"kernel={version!r} is not a known kernel; known: {', '.join(known_kernels())}"
        )
    return Kernel(version, table[version])


@public
def kernel(version: str | Kernel) -> Kernel:
    """The :class:`Kernel` for ``version`` ("5.10", "5.11", "5.12", "5.13", "6.1", "6.18", ...)."""
    if isinstance(version, Kernel):
        return version
    if not isinstance(version, str):
        raise UnknownKernelError(
            f"kernel must be a version string such as '6.1', got {version!r}; known: {', '.join(known_kernels())}"
        )
    return _kernel(version.removeprefix("v"))


@public
def device_kernel(dev: Any, kernel: str | Kernel | None = None) -> Kernel:
    """The Kernel an operation on ``dev`` runs: ``kernel`` if given, else the device's ``kernel`` (or its
    namespace's), else the default. A version string naming the device's own version means the device's
    Kernel, so a lab kernel's rules (labkernels.model_kernel) are kept."""
    if not hasattr(dev, "kernel") and not hasattr(getattr(dev, "ns", None), "kernel"):
        raise ArgumentError(f"dev must be a netdev device (or its namespace), got {dev!r}", param="dev")
    own = None
    for obj in (dev, getattr(dev, "ns", None)):
        k = getattr(obj, "kernel", None)
        if k is not None:
            own = k if isinstance(k, Kernel) else _resolve_kernel(str(k))
            break
    if kernel is None:
        return own if own is not None else _resolve_kernel(DEFAULT_KERNEL)
    if isinstance(kernel, Kernel):
        return kernel
    k = _resolve_kernel(kernel)
    return own if own is not None and own.version == k.version else k


_resolve_kernel = kernel  # arch() takes a parameter named kernel


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


@dataclass(frozen=True)
class Arch:
    """An architecture profile resolved for one kernel (MAX_SKB_FRAGS and so sizeof(shinfo) depend on both)."""

    name: str
    kernel: str
    page_size: int
    l1_cache_bytes: int
    net_ip_align: int
    net_skb_pad: int
    pointer_bytes: int
    max_skb_frags: int
    skb_frag_size: int
    skb_shared_info_size: int
    shinfo_size: int
    sk_buff_size: int
    dma_cache_alignment: int = 1  # dma_get_cache_alignment(): ARCH_DMA_MINALIGN where the arch defines it, else 1
    description: str = ""
    shinfo_align: int = 8  # __alignof__(struct skb_shared_info): its widest member (pointers, the s64 hwtstamps)
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def smp_cache_bytes(self) -> int:
        # include/linux/cache.h: SMP_CACHE_BYTES defaults to L1_CACHE_BYTES on every arch modelled here.
        return self.l1_cache_bytes

    def skb_data_align(self, size: int) -> int:
        """SKB_DATA_ALIGN(X) = ALIGN(X, SMP_CACHE_BYTES) (include/linux/skbuff.h)."""
        return _align(size, self.smp_cache_bytes)

    def skb_truesize(self, size: int) -> int:
        """SKB_TRUESIZE(X) = X + SKB_DATA_ALIGN(sizeof(sk_buff)) + SKB_DATA_ALIGN(sizeof(shinfo))."""
        return size + self.skb_data_align(self.sk_buff_size) + self.shinfo_size

    def skb_with_overhead(self, size: int) -> int:
        """SKB_WITH_OVERHEAD(X) = X - SKB_DATA_ALIGN(sizeof(struct skb_shared_info))."""
        return size - self.shinfo_size

    def skb_head_align(self, size: int) -> int:
        """SKB_HEAD_ALIGN(X) = SKB_DATA_ALIGN(X) + SKB_DATA_ALIGN(sizeof(shinfo)) (6.3+ skbuff.h)."""
        return self.skb_data_align(size) + self.shinfo_size


def _max_skb_frags(page_size: int, k: Kernel, config_max_skb_frags: int | None) -> int:
    rule = k.rule("max_skb_frags_rule")
    if rule == "page_size":
        # include/linux/skbuff.h (< 6.3): 16 if 65536/PAGE_SIZE + 1 < 16, else 65536/PAGE_SIZE + 1.
        if config_max_skb_frags is not None:
            raise ValueError(
                f"max_skb_frags={config_max_skb_frags} cannot be set for kernel {k.version}: "
                "CONFIG_MAX_SKB_FRAGS exists from 6.3 on; before it MAX_SKB_FRAGS follows PAGE_SIZE"
            )
        return max(16, 65536 // page_size + 1)
    if rule == "config":
        # include/linux/skbuff.h (6.3+): MAX_SKB_FRAGS = CONFIG_MAX_SKB_FRAGS, net/Kconfig range 17..45, default 17.
        if config_max_skb_frags is None:
            return int(k.rule("config_max_skb_frags_default"))
        if not isinstance(config_max_skb_frags, int) or not 17 <= config_max_skb_frags <= 45:
            raise ValueError(
                f"max_skb_frags must be CONFIG_MAX_SKB_FRAGS in 17..45 (net/Kconfig), got {config_max_skb_frags!r}"
            )
        return config_max_skb_frags
    raise TableError(f"data/kernels.toml: [{k.version}].max_skb_frags_rule has unknown value {rule!r}")


def _skb_shared_info_size(pointer_bytes: int, s64_align: int, max_skb_frags: int) -> tuple[int, int]:
    """sizeof(struct skb_shared_info) and sizeof(skb_frag_t), laid out as the C compiler does.

    Layout of include/linux/skbuff.h struct skb_shared_info, the same from 5.4 to 6.18 (BTF 6.18):
    u8 flags, meta_len, nr_frags, tx_flags; u16 gso_size, gso_segs; frag_list*; hwtstamps (s64);
    u32 gso_type, tskey; atomic_t dataref; destructor_arg* (union); skb_frag_t frags[MAX_SKB_FRAGS],
    skb_frag_t being {page*/netmem, u32 len, u32 offset}.
    """
    members = [(1, 1)] * 4 + [(2, 2)] * 2 + [(pointer_bytes, pointer_bytes), (8, s64_align)]
    members += [(4, 4)] * 3 + [(pointer_bytes, pointer_bytes)]
    frag_size = _align(pointer_bytes + 8, pointer_bytes)
    offset = 0
    struct_align = 1
    for size, align in members:
        offset = _align(offset, align) + size
        struct_align = max(struct_align, align)
    offset = _align(offset, pointer_bytes) + frag_size * max_skb_frags
    return _align(offset, struct_align), frag_size


@functools.cache
def _arch(name: str, k: Kernel, config_max_skb_frags: int | None) -> Arch:
    table = load_table("arches")
    if name not in table:
        raise UnknownArchError(f"arch={name!r} is not a known architecture; known: {', '.join(table)}")
    sec = table[name]
    page_size = sec.typed("page_size", int)
    l1 = sec.typed("l1_cache_bytes", int)
    pointer_bytes = sec.typed("pointer_bytes", int)
    s64_align = sec.typed("s64_align", int)
    max_frags = _max_skb_frags(page_size, k, config_max_skb_frags)
    shinfo, frag_size = _skb_shared_info_size(pointer_bytes, s64_align, max_frags)
    return Arch(
        name=name,
        kernel=k.version,
        page_size=page_size,
        l1_cache_bytes=l1,
        net_ip_align=sec.typed("net_ip_align", int),
        # include/linux/skbuff.h: NET_SKB_PAD = max(32, L1_CACHE_BYTES); only s390 overrides it.
        net_skb_pad=max(32, l1),
        pointer_bytes=pointer_bytes,
        max_skb_frags=max_frags,
        skb_frag_size=frag_size,
        skb_shared_info_size=shinfo,
        shinfo_size=_align(shinfo, l1),
        # sizeof(struct sk_buff) is config- and version-dependent: a kernel's own 64-bit figure wins where known.
        sk_buff_size=(k.rules.typed("sk_buff_size_64", int) if pointer_bytes == 8 and "sk_buff_size_64" in k.rules
                      else sec.typed("sk_buff_size", int)),
        dma_cache_alignment=sec.typed("dma_cache_alignment", int),
        description=str(sec.get("description", "")),
        sources=dict(sec.sources),
        # _skb_shared_info_size's members: u8, u16, u32, pointers and the s64 hwtstamps
        shinfo_align=max(4, pointer_bytes, s64_align),
    )


@public
def arch(name: str | Arch, kernel: str | Kernel = DEFAULT_KERNEL, *,
         max_skb_frags: Annotated[int, In(17, 45, "CONFIG_MAX_SKB_FRAGS, net/Kconfig, 6.3+")] | None = None) -> Arch:
    """The :class:`Arch` profile ``name`` ("x86_64", "arm64", "arm64-64k", "ppc64le", "ppc64le-4k", "mips32")
    for ``kernel``; ``max_skb_frags`` sets CONFIG_MAX_SKB_FRAGS on 6.3+ kernels."""
    if isinstance(name, Arch):
        if max_skb_frags is None and name.kernel == _resolve_kernel(kernel).version:
            return name
        name = name.name
    if not isinstance(name, str):
        raise UnknownArchError(f"arch must be a name such as 'x86_64', got {name!r}; "
                               f"known: {', '.join(known_arches())}")
    k = _resolve_kernel(kernel)
    return _arch(name, k, max_skb_frags)  # the Kernel itself: a lab kernel's rules reach the sizes too


@public
def resolve(kernel: str | Kernel, arch_name: str | Arch) -> tuple[Kernel, Arch]:
    """The kernel and arch profile a public entry point works with, resolved once and handed on."""
    k = _resolve_kernel(kernel)
    return k, arch(arch_name, k)
