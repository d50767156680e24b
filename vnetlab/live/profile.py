"""The modelled kernel profile for a running kernel's release string, and how close it is.

A distribution's ``uname -r`` is not a kernel.org version: Debian's older ABI names (``5.10.0-32-amd64``,
``6.1.0-37-amd64``) and Ubuntu's (``6.8.0-45-generic``) end in ``.0`` whatever stable update they carry, RHEL's
``5.14.0-427.el9_4`` is 5.14 with much of later kernels backported; Debian's ``uname -v`` names the package
version ("#1 SMP Debian 5.10.223-1 (2024-08-10)"), newer Debian (``6.12.38+deb13-amd64``), Fedora
(``6.11.4-301.fc41.x86_64``) and plain stable releases carry the patch level in ``uname -r`` itself.

:func:`running_profile` picks a profile from ``vnetlab.profiles.known_kernels()`` (read at call time, so a
profile added to data/kernels.toml is found) and says how close it is: ``exact``, or ``nearest`` with the rules
of data/kernels.toml whose values differ between the neighbouring profiles (those that may differ here), or
``older`` / ``newer`` than every profile, where any rule may differ.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Annotated, Any

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError, LiveUnavailable

__all__ = ["DEBIAN_ABI_FIRST", "RunningProfile", "match_profile", "modelled_release", "parse_release",
           "running_profile"]

_CLOSENESS = ("exact", "nearest", "older", "newer")

# Debian kernel flavours (debian/config/*/defines of linux): the suffix of its uname -r.
_DEBIAN_FLAVOURS = re.compile(
    r"-(?:(?:cloud|rt)-)?(?:amd64|arm64|armmp|armmp-lpae|686|686-pae|powerpc64le|s390x|riscv64|loong64|"
    r"marvell|rpi|octeon|mips32r2el|mips64r2el|loongson-3|4kc-malta|5kc-malta)(?:-unsigned)?$")
# Ubuntu kernel flavours (the -generic family and the cloud/OEM kernels).
_UBUNTU_FLAVOURS = re.compile(r"-(?:generic(?:-64k|-lpae)?|lowlatency(?:-64k)?|aws|azure|gcp|gke|kvm|oracle|raspi|"
                              r"ibm|nvidia(?:-lowlatency)?|oem|intel-iotg|realtime|virtual)$")


class RunningProfile(str):
    """A profile name (a ``str``, so it goes wherever a kernel version goes) with how close it is.

    ``closeness``: "exact", "nearest", "older" (than every profile) or "newer"; ``may_differ``: the rules of
    data/kernels.toml that may differ from this kernel; ``why``: one sentence on how the release was read.
    """

    release: str
    closeness: str
    may_differ: tuple[str, ...]
    why: str

    def __new__(cls, profile: str, *, release: str, closeness: str, may_differ: tuple[str, ...] = (),
                why: str = "") -> RunningProfile:
        if closeness not in _CLOSENESS:
            raise ArgumentError(f"closeness must be one of {', '.join(_CLOSENESS)}, got {closeness!r}",
                                param="closeness")
        self = super().__new__(cls, profile)
        self.release, self.closeness, self.may_differ, self.why = release, closeness, tuple(may_differ), why
        return self

    @property
    def profile(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return (f"RunningProfile({self.profile!r}, release={self.release!r}, closeness={self.closeness!r}, "
                f"may_differ={self.may_differ!r})")

    @public
    def short(self, width: Annotated[int, In(1, None, "columns")] = 100) -> str:
        """The release, the profile, the closeness and the rules that may differ, wrapped at ``width``."""
        import textwrap

        if self.closeness == "exact":
            text = f"{self.release} -> {self.profile}, exact"
        else:
            differ = (", ".join(self.may_differ) or "none known") if self.closeness == "nearest" else (
                f"any of its {len(self.may_differ)}")
            text = f"{self.release} -> {self.profile}, {self.closeness}; rules that may differ: {differ}"
        return textwrap.fill(text, width, subsequent_indent="    ")

    def line(self) -> str:
        """One line for a reader: the release, the profile, exact or what may differ."""
        if self.closeness == "exact":
            how = "exact"
        elif self.closeness == "nearest":
            how = ("nearest: these rules may differ: " + ", ".join(self.may_differ) if self.may_differ else
                   "nearest: no neighbouring profile says which rules may differ")
        else:
            how = f"{self.closeness} than every profile: any of its {len(self.may_differ)} rules may differ"
        return f"kernel {self.release} -> model profile {self.profile} ({how}). {self.why}".rstrip()


def _key(version: str) -> tuple[int, int, int]:
    parts = [int(p) for p in version.split(".")] + [0, 0]
    return parts[0], parts[1], parts[2]


# Debian's ABI number -> the first upstream stable release packaged under it, from "Bump ABI to N" in the Debian
# changelog of linux (bookworm's linux-libc-dev 6.1.187-1, excerpt in tests/data/debian_abi_bumps_6.1.txt; from
# 6.1.148 the ABI name is generated, "Generate kernel ABI name suffix automatically if not configured") and from
# the lab's images (data/lab/5.10/*.json: linux-image-5.10.0-32-amd64 is 5.10.223-1; data/lab/6.1/*.json:
# linux-image-6.1.0-57-amd64 is 6.1.192-3). A later upload may keep the ABI, so this is a floor, never exact.
DEBIAN_ABI_FIRST: dict[tuple[int, int], dict[int, int]] = {
    (5, 10): {32: 223},
    (6, 1): {2: 7, 3: 8, 4: 11, 5: 12, 6: 15, 7: 20, 8: 25, 9: 27, 10: 37, 11: 38, 12: 52, 13: 55, 14: 64,
             15: 66, 16: 67, 17: 69, 18: 76, 19: 82, 20: 85, 21: 90, 22: 94, 23: 98, 24: 106, 25: 106, 26: 112,
             27: 115, 28: 119, 29: 123, 30: 124, 31: 128, 32: 129, 33: 133, 34: 135, 35: 137, 36: 139, 37: 140,
             38: 147, 57: 192},
}


@public
def parse_release(release: str, version: str | None = None) -> tuple[tuple[int, int, int | None], str, str]:
    """:func:`_parse` without its last item."""
    parsed, distro, why, _floor = _parse(release, version)
    return parsed, distro, why


def _parse(release: str, version: str | None) -> tuple[tuple[int, int, int | None], str, str, bool]:
    parsed, distro, why = _parse3(release, version)
    return parsed, distro, why, distro == "Debian" and "was first packaged from" in why


def _parse3(release: str, version: str | None) -> tuple[tuple[int, int, int | None], str, str]:
    """(major, minor, patch or None when the string does not tell), the distribution, and how it was read.

    ``version`` is ``uname -v``; Debian's names the package version ("Debian 5.10.223-1"), used when the
    release is one of Debian's ``X.Y.0-N-flavour`` ABI names; without it the ABI number gives the first stable
    release packaged under it (:data:`DEBIAN_ABI_FIRST`). A release candidate (``6.18.0-rc3``, ``6.18-rc3``)
    comes before X.Y.0: its patch is -1.
    """
    if not isinstance(release, str):
        raise ArgumentError(f"live.parse_release: release must be a `uname -r` string such as '6.1.0-37-amd64', got "
                            f"{release!r}", function="live.parse_release", param="release")
    if version is not None and not isinstance(version, str):
        raise ArgumentError(f"live.parse_release: version must be a `uname -v` string or None, got {version!r}",
                            function="live.parse_release", param="version")
    for param, text in (("release", release), ("version", version or "")):
        if not text.isascii():
            raise ArgumentError(f"live.parse_release: {param}={text!r} has non-ASCII characters; `uname -r` and "
                                "`uname -v` are ASCII (include/linux/utsname.h: the kernel prints its version with "
                                "ASCII digits)", function="live.parse_release", param=param)
    m = re.match(r"v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?", release.strip())
    if m is None:
        raise ArgumentError(f"live.parse_release: release={release!r} does not start with a kernel version such as "
                            "6.18 (`uname -r`)", function="live.parse_release", param="release")
    major, minor = int(m[1]), int(m[2])
    patch = None if m[3] is None else int(m[3])
    rest = release.strip()[m.end():]
    rc = re.match(r"-rc([0-9]+)", rest)
    if rc and patch in (None, 0):
        return (major, minor, -1), "", (
            f"{release} is a release candidate of {major}.{minor}: it comes before {major}.{minor}.0, and rules "
            "changed until the release may differ.")
    deb = re.search(r"Debian ([0-9]+)\.([0-9]+)\.([0-9]+)", version or "")
    abi = re.match(r"-([0-9]+)-", rest)
    if abi and patch == 0 and _DEBIAN_FLAVOURS.search(rest):
        if deb and (int(deb[1]), int(deb[2])) == (major, minor):
            return (major, minor, int(deb[3])), "Debian", (
                f"Debian's ABI name {release}; uname -v names the package {deb[0].split()[1]}.")
        first = DEBIAN_ABI_FIRST.get((major, minor), {}).get(int(abi[1]))
        if first is not None:
            return (major, minor, first), "Debian", (
                f"Debian's ABI name {release}: ABI {abi[1]} was first packaged from {major}.{minor}.{first} (Debian's "
                f"changelog); a later upload may keep it, so pass uname -v (\"Debian X.Y.Z-N\") to name it.")
        return (major, minor, None), "Debian", (
            f"Debian's ABI name {release} ends in .0 whatever stable update it carries; pass uname -v "
            "(\"Debian X.Y.Z-N\") to name it.")
    if re.search(r"\+(?:deb[0-9]+|bpo)", rest):
        return (major, minor, patch), "Debian", f"Debian's {major}.{minor}.{patch} (from {release})."
    if (re.match(r"-[0-9]+", rest) and patch == 0 and _UBUNTU_FLAVOURS.search(rest)) or "Ubuntu" in (version or ""):
        return (major, minor, None), "Ubuntu", (
            f"Ubuntu's {release} is {major}.{minor} with Ubuntu's stable updates; its patch level is not in the "
            "release string.")
    if re.search(r"\.el[0-9]+", rest):
        return (major, minor, None), "RHEL", (
            f"RHEL's {release} is {major}.{minor} with many changes of later kernels backported: rules beyond "
            "these may differ.")
    if re.search(r"\.fc[0-9]+", rest):
        return (major, minor, patch), "Fedora", f"Fedora's {release} is stable {major}.{minor}.{patch}."
    return (major, minor, patch or 0), "", ""


def _differing(rules: Mapping[str, Mapping[str, Any]], names: list[str]) -> tuple[str, ...]:
    """Rules whose value is not the same in every profile of ``names`` (``released`` is a date, not a rule)."""
    keys: set[str] = set()
    for n in names:
        keys |= set(rules[n])
    keys.discard("released")
    return tuple(sorted(k for k in keys if len({repr(rules[n].get(k)) for n in names}) > 1))


@public
def match_profile(release: str, rules: Mapping[str, Mapping[str, Any]], version: str | None = None,
                  models: Mapping[str, str] | None = None) -> RunningProfile:
    """:func:`running_profile` over ``rules`` ({profile version: {rule: value}}), so that it can be asked
    about any set of profiles. ``models`` maps a profile to the release its rules were read from where that is
    not its name (the "6.1" profile holds Debian 6.1.192's rules: {"6.1": "6.1.192"}); a release is placed among
    the profiles by those."""
    if not rules:
        raise ArgumentError("rules: give at least one profile", param="rules")
    (major, minor, patch), distro, why, floor = _parse(release, version)
    models = {n: (models or {}).get(n, n) for n in rules}

    def key(n: str) -> tuple[int, int, int]:
        return _key(models[n])

    names = sorted(rules, key=key)
    everything = tuple(sorted({k for n in names for k in rules[n]} - {"released"}))
    line = [n for n in names if key(n)[:2] == (major, minor)]
    pre = f"{distro}: " if distro else ""

    def named(n: str) -> str:
        return n if models[n] == n else f"{n} (the rules of {models[n]})"

    def result(profile: str, closeness: str, differ: tuple[str, ...], note: str) -> RunningProfile:
        text = " ".join(s for s in (pre + why if why else "", note) if s)
        return RunningProfile(profile, release=release, closeness=closeness, may_differ=differ, why=text)

    if line:
        if patch is None:
            # A distribution ships a stable update of the line: the stable profiles (X.Y.Z) if any, its newest.
            stable = [n for n in line if models[n].count(".") >= 2] or line
            chosen = stable[-1]
            if len(stable) == 1:
                return result(chosen, "nearest", (), f"{named(chosen)} is the only profile of the {major}.{minor} "
                              "line to compare it with.")
            return result(chosen, "nearest", _differing(rules, stable),
                          f"The newest of the {major}.{minor} line's profiles {', '.join(map(named, stable))}; these "
                          "rules differ among them.")
        run = (major, minor, patch)
        for n in line:
            if key(n) == run:
                if floor:
                    return result(n, "nearest", (), f"{named(n)} is that first upload.")
                return result(n, "exact", (), "" if models[n] == n else f"The {n} profile holds {models[n]}'s rules.")
        below = [n for n in line if key(n) < run]
        above = [n for n in line if key(n) > run]
        if below and above:
            return result(below[-1], "nearest", _differing(rules, [below[-1], above[0]]),
                          f"Between the profiles {named(below[-1])} and {named(above[0])}.")
        if below:
            return result(below[-1], "nearest", (), f"Newer than {named(below[-1])}, the {major}.{minor} line's "
                          "newest profile: stable updates since may have changed rules no profile records.")
        older = [n for n in names if key(n) < key(above[0]) and n not in line]
        differ = _differing(rules, [older[-1], above[0]]) if older else ()
        return result(above[0], "nearest", differ, f"Older than {named(above[0])}, the {major}.{minor} line's "
                      "oldest profile.")
    run_key = (major, minor, 1 << 30 if patch is None else patch)
    below = [n for n in names if key(n) < run_key]
    above = [n for n in names if key(n) > run_key]
    if not below:
        return result(names[0], "older", everything, f"Older than every profile (the oldest is {names[0]}).")
    if not above:
        return result(names[-1], "newer", everything, f"Newer than every profile (the newest is {names[-1]}).")
    return result(below[-1], "nearest", _differing(rules, [below[-1], above[0]]),
                  f"No {major}.{minor} profile: the newest older one, {below[-1]}; these rules differ between it and "
                  f"{above[0]}.")


@public
def modelled_release(profile: str, sources: Mapping[str, str]) -> str:
    """The release a profile's rules were read from: its name, or, for a profile named X.Y whose rules (most of
    them) cite one Debian tree ("Debian linux-source-6.1 (6.1.192-3)"), that tree's X.Y.Z."""
    if profile.count(".") >= 2:
        return profile
    trees = [m[1] for src in sources.values()
             if (m := re.search(r"Debian linux-source-[0-9.]+ \(([0-9]+\.[0-9]+\.[0-9]+)-", str(src)))]
    best = max(set(trees), key=trees.count) if trees else None
    if best is not None and trees.count(best) * 2 > len(sources) and best.startswith(profile + "."):
        return best
    return profile


@public
def running_profile(release: str | None = None, version: str | None = None) -> RunningProfile:
    """The modelled profile for the running kernel, or for ``release`` (``uname -r``; ``version``, ``uname -v``,
    helps read Debian's ABI names). A :class:`RunningProfile`: a ``str`` naming the profile, with
    ``closeness``, ``may_differ`` and ``why``; ``.line()`` says it in one sentence."""
    from vnetlab import profiles

    if release is None:
        if not sys.platform.startswith("linux"):
            raise LiveUnavailable(f"running_profile() reads the running Linux kernel, and this is {sys.platform}; "
                                  "pass a release string such as '6.1.0-37-amd64' to ask about one")
        uname = os.uname()
        release, version = uname.release, uname.version if version is None else version
    kernels = {v: profiles.kernel(v) for v in profiles.known_kernels()}
    rules = {v: dict(k.rules.values) for v, k in kernels.items()}
    models = {v: modelled_release(v, dict(k.rules.sources)) for v, k in kernels.items()}
    return match_profile(release, rules, version, models)
