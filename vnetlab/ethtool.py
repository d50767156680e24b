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
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError, UnknownFeatureError
from vnetlab.profiles import DEFAULT_KERNEL, Kernel

__all__ = [
    "LEGACY_FLAGS", "LegacyFlag", "FeatureState", "EthtoolK", "pattern_match", "feature_strings",
    "legacy_flag", "legacy_members", "printed_name", "from_printed", "expand", "parse_K_args", "PrintedLine",
    "printed_lines", "parse_k", "normalize_printed", "format_k", "device_states",
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


@public
def pattern_match(name: str, pattern: str) -> bool:
    """ethtool netlink/features.c flag_pattern_match: an exact match, or prefix + suffix around one '*'."""
    star = pattern.find("*")
    if star < 0:
        return name == pattern
    prefix, suffix = pattern[:star], pattern[star + 1:]
    return len(name) + 1 >= len(pattern) and name.startswith(prefix) and name.endswith(suffix)


@public
def feature_strings(kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """netdev_features_strings of ``kernel`` in bit order (unnamed bits left out, as ethtool skips them)."""
    from vnetlab import features

    t = features.table(kernel)
    return tuple(t.ethtool[n] for n in sorted(t.ethtool, key=t.bits.get))


def _strings(strings: Iterable[str] | None, kernel: str | Kernel) -> tuple[str, ...]:
    return tuple(strings) if strings is not None else feature_strings(kernel)


@public
def legacy_flag(word: str) -> LegacyFlag | None:
    """The off_flag_def entry whose short or long name is ``word`` (ethtool -K accepts both), else None."""
    for flag in LEGACY_FLAGS:
        if word in (flag.short, flag.long):
            return flag
    return None


def _owner(name: str) -> LegacyFlag | None:
    # netlink/features.c dump_features: a feature belongs to the first off_flag_def whose pattern matches.
    return next((f for f in LEGACY_FLAGS if pattern_match(name, f.pattern)), None)


@public
def legacy_members(flag: LegacyFlag | str, strings: Iterable[str] | None = None, *,
                   kernel: str | Kernel = DEFAULT_KERNEL) -> tuple[str, ...]:
    """The kernel feature strings a legacy flag stands for (fill_legacy_flag: every pattern match, in bit order)."""
    f = legacy_flag(flag) if isinstance(flag, str) else flag
    if f is None:
        raise UnknownFeatureError(f"flag={flag!r} is not an ethtool legacy name; valid: "
                                  f"{', '.join(n for x in LEGACY_FLAGS for n in (x.short, x.long))}")
    return tuple(s for s in _strings(strings, kernel) if pattern_match(s, f.pattern))


@public
def printed_name(feature: str, strings: Iterable[str] | None = None, *,
                 kernel: str | Kernel = DEFAULT_KERNEL) -> str:
    """The name ``ethtool -k`` prints for a kernel feature string: the legacy long name when its flag matches
    that feature alone ("rx-gro" -> "generic-receive-offload"), else the kernel string itself."""
    names = _strings(strings, kernel)
    flag = _owner(feature)
    if flag is not None and flag.short != _UFO and sum(_owner(s) is flag for s in names) == 1:
        return flag.long
    return feature


@public
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


@public
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


@public
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
            raise ArgumentError(f"args: flag {words[i]!r} must be followed by 'on' or 'off', got {got!r}", param="args")
        out.extend((name, words[i + 1] == "on") for name in expand(words[i], names))
    return out


# ------------------------------------------------------------------------------------------------------------
# `ethtool -k` text
# ------------------------------------------------------------------------------------------------------------


# netlink/features.c dump_feature (ethtool 6.x; ethtool.c dump_one_feature for ioctl): the value part of a line.
_VALUE = re.compile(r"^(?P<on>on|off)(?: \[(?P<note>fixed|requested on|requested off)\])?$")


class FeatureState:
    """One feature of one device as ``ethtool -k`` shows it: on or off, ``[fixed]``, ``[requested on|off]``.

    The one ``ethtool -k`` type: the model (``Device.ethtool_k()``), the lab data (``labdata.ethtool_k``) and the
    live kernel (``live.read_features``) all give it. ``str()`` is the value exactly as ethtool prints it
    (netlink/features.c dump_feature, ethtool 6.x): "[fixed]" when the feature is outside hw_features or in
    NETIF_F_NEVER_CHANGE, else "[requested on|off]" when wanted and active differ. A state is the contract's
    (on, fixed) pair: it unpacks, indexes, hashes and compares (``==``) as that tuple, with states and tuples
    alike, so ``ethtool_k()[name] == (on, fixed)`` holds and ``==`` is an equivalence. The request is outside that
    pair: to compare what ethtool prints, request included, compare ``str()`` (or :meth:`same_printed`).
    """

    __slots__ = ("on", "fixed", "requested")
    on: bool
    fixed: bool
    requested: bool

    def __new__(cls, on: bool, fixed: bool, requested: bool | None = None) -> FeatureState:
        if type(on) is bool and type(fixed) is bool and (requested is None or type(requested) is bool):
            # dump_feature tests [fixed] first: a fixed feature shows no request, so what it "requests" is its state.
            return _STATES[on, fixed, on if fixed or requested is None else requested]
        bad = next(n for n, v in (("on", on), ("fixed", fixed), ("requested", requested))
                   if type(v) is not bool and not (n == "requested" and v is None))
        raise TypeError(f"FeatureState: {bad} must be True or False, got {locals()[bad]!r}")

    @classmethod
    def _make(cls, on: bool, fixed: bool, requested: bool) -> FeatureState:
        self = object.__new__(cls)
        for name, value in (("on", on), ("fixed", fixed), ("requested", requested)):
            object.__setattr__(self, name, value)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("FeatureState is immutable")

    @classmethod
    @public
    def parse(cls, text: str) -> FeatureState:
        """The value part of an ``ethtool -k`` line ("on", "off [fixed]", "off [requested on]", ...)."""
        match = _VALUE.match(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise ArgumentError(f"text={text!r} is not an `ethtool -k` value: on|off, optionally followed by "
                                "[fixed], [requested on] or [requested off] (netlink/features.c dump_feature)",
                                param="text")
        on, note = match["on"] == "on", match["note"]
        if note in ("requested on", "requested off") and (note == "requested on") == on:
            # dump_feature prints [requested ...] only when wanted and active differ
            raise ArgumentError(f"text={text!r}: ethtool prints [requested on|off] only when the request differs from "
                                "the state (netlink/features.c dump_feature)", param="text")
        return cls(on, note == "fixed", None if note in (None, "fixed") else note == "requested on")

    @classmethod
    @public
    def of(cls, value: FeatureState | tuple[bool, ...]) -> FeatureState:
        """A state from itself, (on, fixed) or (on, fixed, wanted)."""
        if isinstance(value, FeatureState):
            return value
        if isinstance(value, tuple) and len(value) in (2, 3):
            return cls(*(bool(v) for v in value))
        raise TypeError(f"value={value!r} must be a FeatureState, (on, fixed) or (on, fixed, wanted)")

    # the netlink words (ETHTOOL_A_FEATURES_ACTIVE / WANTED, HW & ~NOCHANGE)
    active = property(lambda self: self.on)
    wanted = property(lambda self: self.requested)
    changeable = property(lambda self: not self.fixed)

    def __iter__(self) -> Iterator[bool]:
        return iter((self.on, self.fixed))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> bool:
        return (self.on, self.fixed)[index]

    def __eq__(self, other: object) -> bool:
        # one key for states and tuples alike, (on, fixed): comparing a request as well between two states while
        # a tuple has none would make "off [requested on]" == (False, False) == "off" but not the two states
        if isinstance(other, FeatureState):
            return (self.on, self.fixed) == (other.on, other.fixed)
        if isinstance(other, tuple):
            return (self.on, self.fixed) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.on, self.fixed))  # equal to its (on, fixed) tuple, so hashes as that tuple

    @public
    def same_printed(self, other: FeatureState) -> bool:
        """Whether ``ethtool -k`` prints the two states alike: on, [fixed] and the request where one is shown."""
        return (self.on, self.fixed, self.requested) == (other.on, other.fixed, other.requested)

    def __str__(self) -> str:
        text = "on" if self.on else "off"
        if self.fixed:
            return text + " [fixed]"
        if self.requested != self.on:
            return text + (" [requested on]" if self.requested else " [requested off]")
        return text

    def __repr__(self) -> str:
        return f"FeatureState.parse({str(self)!r})"


# The six values ethtool can print, made once: a state is immutable, so every device shares them.
_STATES = {(on, fixed, req): FeatureState._make(on, fixed, req)
           for on in (False, True) for fixed in (False, True) for req in (False, True) if not fixed or req == on}


@public
def device_states(named_bits: Iterable[tuple[str, int]], active: int, wanted: int,
                  changeable: int) -> dict[str, FeatureState]:
    """{feature string: state} from a device's words as net/ethtool/features.c features_prepare_data reports them:
    features (active), wanted_features and hw_features & ~NETIF_F_NEVER_CHANGE (changeable); ``named_bits`` gives
    each feature string with its bit mask, in the order to list them. Hot: the model calls it on every ethtool_k()."""
    states = {}
    for name, b in named_bits:
        on, fixed = bool(active & b), not changeable & b
        states[name] = _STATES[on, fixed, on if fixed else bool(wanted & b)]
    return states


@dataclass(frozen=True, eq=False)
class EthtoolK(Mapping[str, FeatureState]):
    """Every feature of one device, by kernel feature string, as ``ethtool -k`` shows it; ``str()`` is the whole
    ``ethtool -k DEVICE`` output (:func:`format_k`). Two are ``==`` when every feature's (on, fixed) is (as a state's
    ``==``); :meth:`same_printed` compares the requests too."""

    device: str
    states: Mapping[str, FeatureState]

    def __getitem__(self, name: str) -> FeatureState:
        try:
            return self.states[name]
        except KeyError:
            raise UnknownFeatureError(f"{self.device}: no feature named {name!r}") from None

    @public
    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]  # noqa: ANN401 (any default, as Mapping.get)
        return self.states.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.states

    def __iter__(self) -> Iterator[str]:
        return iter(self.states)

    def __len__(self) -> int:
        return len(self.states)

    def __str__(self) -> str:
        return format_k(self.states, self.device, self.states)

    @public
    def same_printed(self, other: Mapping[str, FeatureState]) -> bool:
        """Whether ``ethtool -k`` shows the same features with the same values, [requested on|off] included."""
        return self.keys() == other.keys() and all(s.same_printed(other[n]) for n, s in self.items())


_HEADER = re.compile(r"^Features for (?P<dev>\S+):\s*$")
_LINE = re.compile(r"^(?P<indent>\t| +)?(?P<name>[^\s:][^:]*):\s+(?P<value>(?:on|off)(?: \[[^\]]*\])?)\s*$")


@dataclass(frozen=True)
class PrintedLine:
    """One feature line of ``ethtool -k`` as printed (netlink/features.c dump_features / dump_feature): the name
    as shown (a legacy long name, a summary line or a kernel string), tab-indented or not, and its state."""

    name: str
    indented: bool
    state: FeatureState


@public
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
            if device is not None or parsed:
                raise ArgumentError(f"text: line {number} starts a second device ({match['dev']!r}); "
                                    "ethtool -k prints one \"Features for DEV:\" header, first", param="text")
            device = match["dev"]
            continue
        match = _LINE.match(raw)
        if match is None:
            raise ArgumentError(f"text: line {number} is not an `ethtool -k` feature line: {raw!r}", param="text")
        try:
            state = FeatureState.parse(match["value"])
        except ValueError:
            raise ArgumentError(f"text: line {number} has an unknown value: {raw!r}", param="text") from None
        parsed.append(PrintedLine(match["name"].strip(), bool(match["indent"]), state))
    return device, parsed


@public
def parse_k(text: str, *, device: str | None = None) -> EthtoolK:
    """Parse ``ethtool -k DEV`` output into {kernel feature string: FeatureState}.

    Summary lines of multi-feature legacy flags (a line followed by tab-indented members) are dropped; a
    legacy long name printed for a single feature is renamed to that feature. Text ethtool cannot print is refused
    (ValueError): an indented line outside a legacy flag, a summary that disagrees with its members, a feature or
    a legacy flag twice, flags out of off_flag_def order or after kernel-named features, two device headers. A
    part of the output (lines left out, as when a reader pastes an excerpt) is read as the features it shows. For
    a ``[fixed]`` feature ethtool does not show what is wanted, so its request is its state (as FeatureState
    takes it).
    """
    header, parsed = printed_lines(text)
    device = device or header
    if not parsed:
        raise ArgumentError("text: no feature lines found; is this `ethtool -k` output?", param="text")
    states: dict[str, FeatureState] = {}
    summary: tuple[LegacyFlag, PrintedLine, list[bool]] | None = None  # the flag whose indented members follow

    def close_summary() -> None:
        # dump_features prints a multi-feature flag's summary as "on" when any member is active, else "off".
        if summary is not None:
            flag, line, members = summary
            if line.state.on != any(members) or line.state.fixed or line.state.requested != line.state.on:
                raise ValueError(f"text: {flag.long!r} reads {line.state} but its members are "
                                 f"{'on' if any(members) else 'all off'}; ethtool prints a summary as on when "
                                 "any member is on, with no [fixed] or [requested] note")

    def put(name: str, state: FeatureState) -> None:
        if name in states:
            raise ValueError(f"text: feature {name!r} is printed twice ({states[name]} and {state}); "
                             "ethtool -k prints each feature once (is this two devices pasted together?)")
        states[name] = state

    flags_seen: list[LegacyFlag] = []
    kernel_named = False  # dump_features prints every legacy flag first, in off_flag_def order, then the rest
    for i, line in enumerate(parsed):
        name = line.name
        flag = legacy_flag(name)
        if not line.indented and flag is not None and name == flag.long:
            if kernel_named or (flags_seen and LEGACY_FLAGS.index(flag) <= LEGACY_FLAGS.index(flags_seen[-1])):
                raise ArgumentError(f"text: {name!r} is out of place; ethtool -k prints the legacy flags first, once "
                                    f"each, in this order: "
                                    f"{', '.join(f.long for f in LEGACY_FLAGS if f.short != _UFO)}",
                                    param="text")
            flags_seen.append(flag)
        elif not line.indented:
            kernel_named = True
        if line.indented:
            # dump_features indents only the members of the multi-feature legacy flag just summarised.
            if summary is None:
                raise ArgumentError(f"text: indented line {name!r} does not follow a legacy summary line "
                                    "(ethtool indents only the members of a legacy flag such as scatter-gather)",
                                    param="text")
            if not pattern_match(name, summary[0].pattern):
                raise ArgumentError(f"text: {name!r} is indented under {summary[0].long!r} but is not one of its "
                                    f"features (pattern {summary[0].pattern!r})", param="text")
            summary[2].append(line.state.on)
            put(name, line.state)
            continue
        close_summary()
        summary = None
        followed = i + 1 < len(parsed) and parsed[i + 1].indented
        if followed:
            if flag is None or name != flag.long:
                raise ArgumentError(f"text: {name!r} is followed by indented lines but is not a legacy long name "
                                    f"({', '.join(f.long for f in LEGACY_FLAGS)})", param="text")
            summary = (flag, line, [])
            continue
        if flag is not None and name == flag.long:
            # dump_features printed this flag's only feature under the long name: which one is the pattern's
            # only match, and a pattern without '*' names it outright.
            if "*" in flag.pattern:
                if str(line.state) == "off":
                    continue  # n_match == 0: the flag's summary alone, "off", for a kernel with none of its features
                raise ArgumentError(f"text: {name!r} stands for several features but has no indented members",
                                    param="text")
            name = flag.pattern
        put(name, line.state)
    close_summary()
    return EthtoolK(device=device or "?", states=states)


@public
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


@public
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
            lines.append(f"{flag.long}: {states[members[0]]}")
            continue
        lines.append(f"{flag.long}: {'on' if any(states[m].on for m in members) else 'off'}")
        lines.extend(f"\t{m}: {states[m]}" for m in members)
    lines.extend(f"{s}: {states[s]}" for s in names if _owner(s) is None)
    return "\n".join(lines) + "\n"
