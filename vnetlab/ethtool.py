"""ethtool's view of netdev features: the kernel's feature strings, ethtool's legacy names, `-k` text, `-K` words.

The kernel names every feature bit in net/ethtool/common.c netdev_features_strings (per kernel, read from
data/netdev_features.toml through :mod:`vnetlab.features`). ethtool userspace adds twelve legacy names on top
(ethtool common.c off_flag_def, unchanged from ethtool 5.x to 6.x): each has a short name ("gro"), a long name
("generic-receive-offload") and a kernel-name pattern with at most one '*'. What ethtool does with them:

- ``ethtool -K dev NAME on|off`` (netlink/features.c fill_sfeatures_bitmap -> fill_legacy_flag): a short or long
  legacy name sets every kernel feature its pattern matches; any other word is sent as a kernel feature string
  (the kernel answers "bit name not found" when it has none);
- ``ethtool -k dev`` (netlink/features.c dump_features): each kernel feature belongs to the first legacy flag
  whose pattern matches it. A flag matching exactly one feature prints that feature under the legacy long name
  ("generic-receive-offload: off"); a flag matching several prints a summary line (long name, on if any member
  is on) followed by the members indented by a tab; UFO is skipped; the rest print under their kernel names.
  A feature is "[fixed]" when it is not in hw_features or is in NETIF_F_NEVER_CHANGE, "[requested on|off]"
  when wanted and active differ (dump_feature).

This module is the one place those rules live; :mod:`vnetlab.netdev` (``ethtool_K``), :mod:`vnetlab.live`
and the lab's parsers use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from vnetlab.errors import UnknownFeatureError
from vnetlab.profiles import DEFAULT_KERNEL, Kernel

__all__ = [
    "LEGACY_FLAGS", "LegacyFlag", "FeatureState", "EthtoolK", "pattern_match", "feature_strings",
    "legacy_flag", "legacy_members", "printed_name", "from_printed", "expand", "parse_K_args", "PrintedLine",
    "printed_lines", "parse_k", "normalize_printed", "format_k",
]


@dataclass(frozen=True)
class LegacyFlag:
    """One entry of ethtool's off_flag_def: short name, long name, kernel-name pattern (at most one '*')."""

    short: str
    long: str
    pattern: str


# ethtool common.c off_flag_def (ethtool 5.x..6.x), in table order: the order decides which flag a feature
# belongs to (the first match) and the order of `ethtool -k` output.
LEGACY_FLAGS: tuple[LegacyFlag, ...] = (
    LegacyFlag("rx", "rx-checksumming", "rx-checksum"),
    LegacyFlag("tx", "tx-checksumming", "tx-checksum-*"),
    LegacyFlag("sg", "scatter-gather", "tx-scatter-gather*"),
    LegacyFlag("tso", "tcp-segmentation-offload", "tx-tcp*-segmentation"),
    LegacyFlag("ufo", "udp-fragmentation-offload", "tx-udp-fragmentation"),
    LegacyFlag("gso", "generic-segmentation-offload", "tx-generic-segmentation"),
    LegacyFlag("gro", "generic-receive-offload", "rx-gro"),
    LegacyFlag("lro", "large-receive-offload", "rx-lro"),
    LegacyFlag("rxvlan", "rx-vlan-offload", "rx-vlan-hw-parse"),
    LegacyFlag("txvlan", "tx-vlan-offload", "tx-vlan-hw-insert"),
    LegacyFlag("ntuple", "ntuple-filters", "rx-ntuple-filter"),
    LegacyFlag("rxhash", "receive-hashing", "rx-hashing"),
)
_UFO = "ufo"  # netlink/features.c dump_features: "no kernel with netlink interface supports UFO"


def pattern_match(name: str, pattern: str) -> bool:
    """ethtool netlink/features.c flag_pattern_match: an exact match, or prefix + suffix around one '*'."""
    star = pattern.find("*")
    if star < 0:
        return name == pattern
    prefix, suffix = pattern[:star], pattern[star + 1:]
    return len(name) + 1 >= len(pattern) and name.startswith(prefix) and name.endswith(suffix)


def feature_strings(kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """netdev_features_strings of ``kernel`` in bit order (unnamed bits left out, as ethtool skips them)."""
    from vnetlab import features

    t = features.table(kernel)
    return tuple(t.ethtool[n] for n in sorted(t.ethtool, key=t.bits.get))


def _strings(strings: Iterable[str] | None, kernel: str | Kernel) -> tuple[str, ...]:
    return tuple(strings) if strings is not None else feature_strings(kernel)


def legacy_flag(word: str) -> LegacyFlag | None:
    """The off_flag_def entry whose short or long name is ``word`` (ethtool -K accepts both), else None."""
    for flag in LEGACY_FLAGS:
        if word in (flag.short, flag.long):
            return flag
    return None


def _owner(name: str) -> LegacyFlag | None:
    # netlink/features.c dump_features: a feature belongs to the first off_flag_def whose pattern matches.
    return next((f for f in LEGACY_FLAGS if pattern_match(name, f.pattern)), None)


def legacy_members(flag: LegacyFlag | str, strings: Iterable[str] | None = None, *,
                   kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """The kernel feature strings a legacy flag stands for (fill_legacy_flag: every pattern match, in bit order)."""
    f = legacy_flag(flag) if isinstance(flag, str) else flag
    if f is None:
        raise UnknownFeatureError(f"flag={flag!r} is not an ethtool legacy name; valid: "
                                  f"{', '.join(n for x in LEGACY_FLAGS for n in (x.short, x.long))}")
    return tuple(s for s in _strings(strings, kernel) if pattern_match(s, f.pattern))


def printed_name(feature: str, strings: Iterable[str] | None = None, *,
                 kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """The name ``ethtool -k`` prints for a kernel feature string: the legacy long name when its flag matches
    that feature alone ("rx-gro" -> "generic-receive-offload"), else the kernel string itself."""
    names = _strings(strings, kernel)
    flag = _owner(feature)
    if flag is not None and flag.short != _UFO and sum(_owner(s) is flag for s in names) == 1:
        return flag.long
    return feature


def from_printed(printed: str, strings: Iterable[str] | None = None, *,
                 kernel: str | Kernel = DEFAULT_KERNEL) -> str | None:
    """The kernel feature string behind a name as ``ethtool -k`` prints it at the top level; None for a
    summary line of a multi-feature legacy flag ("tx-checksumming", "scatter-gather", ...)."""
    names = _strings(strings, kernel)
    flag = legacy_flag(printed)
    if flag is None or printed != flag.long:
        return printed
    members = [s for s in names if _owner(s) is flag]
    return members[0] if len(members) == 1 else None


def expand(word: str, strings: Iterable[str] | None = None, *,
           kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """The kernel feature strings one ``ethtool -K`` word sets (netlink/features.c fill_sfeatures_bitmap):
    a legacy short or long name gives every feature its pattern matches (possibly none: "ufo"); a kernel
    feature string gives itself; anything else raises UnknownFeatureError as the kernel's "bit name not found".
    """
    names = _strings(strings, kernel)
    flag = legacy_flag(word)
    if flag is not None:
        return legacy_members(flag, names)
    if word in names:
        return (word,)
    where = f"kernel {kernel}" if strings is None else "this device"
    raise UnknownFeatureError(
        f"{word!r} is neither an ethtool legacy name nor a feature string of {where} (ethtool -K would fail: "
        f"bit name not found); legacy: {', '.join(f.short for f in LEGACY_FLAGS)}"
    )


def parse_K_args(args: str | Sequence[str], strings: Iterable[str] | None = None, *,  # noqa: N802
                 kernel: str | Kernel = DEFAULT_KERNEL) -> list[tuple[str, bool]]:
    """``"gro off sg on"`` (or its words) -> [(kernel feature string, on), ...] in order, legacy names expanded,
    as ethtool -K builds its request. A word not followed by on/off raises ValueError as ethtool does."""
    words = args.split() if isinstance(args, str) else list(args)
    names = _strings(strings, kernel)
    out: list[tuple[str, bool]] = []
    for i in range(0, len(words), 2):
        if i + 1 >= len(words) or words[i + 1] not in ("on", "off"):
            got = words[i + 1] if i + 1 < len(words) else "nothing"
            raise ValueError(f"args: flag {words[i]!r} must be followed by 'on' or 'off', got {got!r}")
        out.extend((name, words[i + 1] == "on") for name in expand(words[i], names))
    return out


# ------------------------------------------------------------------------------------------------------------
# `ethtool -k` text
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureState:
    """One feature of one device as the kernel reports it (ETHTOOL_A_FEATURES_ACTIVE / WANTED / HW & ~NOCHANGE)."""

    name: str
    active: bool
    wanted: bool
    changeable: bool

    @property
    def on(self) -> bool:
        return self.active

    @property
    def fixed(self) -> bool:
        return not self.changeable

    def ethtool_text(self) -> str:
        """The value part of an ``ethtool -k`` line (netlink/features.c dump_feature), e.g. "off [requested on]"."""
        text = "on" if self.active else "off"
        if self.fixed:
            return text + " [fixed]"
        if self.wanted != self.active:
            return text + (" [requested on]" if self.wanted else " [requested off]")
        return text


@dataclass(frozen=True)
class EthtoolK:
    """Every feature of one device, by kernel feature string, as ``ethtool -k`` shows it."""

    device: str
    states: Mapping[str, FeatureState]

    def __getitem__(self, name: str) -> FeatureState:
        try:
            return self.states[name]
        except KeyError:
            raise UnknownFeatureError(f"{self.device}: no feature named {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.states

    def __iter__(self) -> Iterator[str]:
        return iter(self.states)

    def __len__(self) -> int:
        return len(self.states)

    def ethtool_k(self) -> dict[str, tuple[bool, bool]]:
        """{kernel feature string: (on, fixed)}, the shape of a model device's ``ethtool_k()``."""
        return {name: (s.active, s.fixed) for name, s in self.states.items()}


_HEADER = re.compile(r"^Features for (?P<dev>\S+):\s*$")
_LINE = re.compile(r"^(?P<indent>\t| +)?(?P<name>[^\s:][^:]*):\s+(?P<value>on|off)(?:\s+\[(?P<note>[^\]]+)\])?\s*$")


@dataclass(frozen=True)
class PrintedLine:
    """One feature line of ``ethtool -k`` as printed (netlink/features.c dump_feature): the name as shown (a
    legacy long name, a summary line or a kernel string), tab-indented or not, on/off and its [note]."""

    name: str
    indented: bool
    active: bool
    note: str | None  # "fixed", "requested on", "requested off" or None

    @property
    def value(self) -> str:
        """"on"/"off", plus " fixed" for a [fixed] feature (the lab's data files store this)."""
        return ("on" if self.active else "off") + (" fixed" if self.note == "fixed" else "")


def printed_lines(text: str) -> tuple[str | None, list[PrintedLine]]:
    """``ethtool -k DEV`` output -> (DEV from its "Features for DEV:" header or None, its feature lines as
    printed). A line that is neither raises ValueError naming its number."""
    device: str | None = None
    parsed: list[PrintedLine] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        match = _HEADER.match(raw)
        if match:
            device = device or match["dev"]
            continue
        match = _LINE.match(raw)
        if match is None:
            raise ValueError(f"text: line {number} is not an `ethtool -k` feature line: {raw!r}")
        parsed.append(PrintedLine(match["name"].strip(), bool(match["indent"]), match["value"] == "on",
                                  match["note"]))
    return device, parsed


def parse_k(text: str, *, device: str | None = None) -> EthtoolK:
    """Parse ``ethtool -k DEV`` output into kernel feature strings with active / wanted / changeable.

    Summary lines of multi-feature legacy flags (a line followed by tab-indented members) are dropped; a
    legacy long name printed for a single feature is renamed to that feature. For a ``[fixed]`` feature ethtool
    does not show what is wanted, so ``wanted`` is taken equal to ``active``.
    """
    header, parsed = printed_lines(text)
    device = device or header
    if not parsed:
        raise ValueError("text: no feature lines found; is this `ethtool -k` output?")
    states: dict[str, FeatureState] = {}
    for i, line in enumerate(parsed):
        name, note = line.name, line.note
        if not line.indented and i + 1 < len(parsed) and parsed[i + 1].indented:
            continue  # a summary line; its members follow, indented
        flag = legacy_flag(name)
        if not line.indented and flag is not None and name == flag.long:
            # dump_features printed this flag's only feature under the long name: which one is the pattern's
            # only match, and a pattern without '*' names it outright.
            if "*" in flag.pattern:
                raise ValueError(f"text: {name!r} stands for several features but has no indented members")
            name = flag.pattern
        if note in (None, "fixed"):
            wanted = line.active
        elif note in ("requested on", "requested off"):
            wanted = note == "requested on"
        else:
            raise ValueError(f"text: feature {name!r} has an unknown note [{note}]")
        states[name] = FeatureState(name=name, active=line.active, wanted=wanted, changeable=note != "fixed")
    return EthtoolK(device=device or "?", states=states)


def normalize_printed(printed: Mapping[str, object], strings: Iterable[str] | None = None, *,
                      kernel: str | Kernel = DEFAULT_KERNEL) -> dict[str, object]:
    """{name as ``ethtool -k`` printed it: value} -> {kernel feature string: value}, summary lines dropped."""
    names = _strings(strings, kernel)
    out: dict[str, object] = {}
    for name, value in printed.items():
        feature = from_printed(name, names)
        if feature is not None:
            out[feature] = value
    return out


def format_k(states: Mapping[str, FeatureState], device: str, strings: Iterable[str] | None = None, *,
             kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """``ethtool -k`` text for ``states`` (netlink/features.c dump_features layout), e.g. for a model device."""
    names = [s for s in _strings(strings, kernel) if s in states]
    lines = [f"Features for {device}:"]
    for flag in LEGACY_FLAGS:
        if flag.short == _UFO:
            continue
        members = [s for s in names if _owner(s) is flag]
        if len(members) == 1:
            lines.append(f"{flag.long}: {states[members[0]].ethtool_text()}")
            continue
        lines.append(f"{flag.long}: {'on' if any(states[m].active for m in members) else 'off'}")
        lines.extend(f"\t{m}: {states[m].ethtool_text()}" for m in members)
    lines.extend(f"{s}: {states[s].ethtool_text()}" for s in names if _owner(s) is None)
    return "\n".join(lines) + "\n"
