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

__all__ = ["RunningProfile", "match_profile", "parse_release", "running_profile"]

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
            raise ValueError(f"closeness must be one of {', '.join(_CLOSENESS)}, got {closeness!r}")
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


@public
def parse_release(release: str, version: str | None = None) -> tuple[tuple[int, int, int | None], str, str]:
    """(major, minor, patch or None when the string does not tell), the distribution, and how it was read.

    ``version`` is ``uname -v``; Debian's names the package version ("Debian 5.10.223-1"), used when the
    release is one of Debian's ``X.Y.0-N-flavour`` ABI names.
    """
    if not isinstance(release, str):
        raise ValueError(f"release must be a `uname -r` string such as '6.1.0-37-amd64', got {release!r}")
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", release.strip())
    if m is None:
        raise ArgumentError(f"live.parse_release: release={release!r} does not start with a kernel version such as "
                            "6.18 (`uname -r`)", function="live.parse_release", param="release")
    major, minor = int(m[1]), int(m[2])
    patch = None if m[3] is None else int(m[3])
    rest = release.strip()[m.end():]
    if version is not None and not isinstance(version, str):
        raise ValueError(f"version must be a `uname -v` string or None, got {version!r}")
    deb = re.search(r"Debian (\d+)\.(\d+)\.(\d+)", version or "")
    if re.match(r"-\d+-", rest) and patch == 0 and _DEBIAN_FLAVOURS.search(rest):
        if deb and (int(deb[1]), int(deb[2])) == (major, minor):
            return (major, minor, int(deb[3])), "Debian", (
                f"Debian's ABI name {release}; uname -v names the package {deb[0].split()[1]}.")
        return (major, minor, None), "Debian", (
            f"Debian's ABI name {release} ends in .0 whatever stable update it carries; pass uname -v "
            "(\"Debian X.Y.Z-N\") to name it.")
    if re.search(r"\+(?:deb\d+|bpo)", rest):
        return (major, minor, patch), "Debian", f"Debian's {major}.{minor}.{patch} (from {release})."
    if (re.match(r"-\d+", rest) and patch == 0 and _UBUNTU_FLAVOURS.search(rest)) or "Ubuntu" in (version or ""):
        return (major, minor, None), "Ubuntu", (
            f"Ubuntu's {release} is {major}.{minor} with Ubuntu's stable updates; its patch level is not in the "
            "release string.")
    if re.search(r"\.el\d+", rest):
        return (major, minor, None), "RHEL", (
            f"RHEL's {release} is {major}.{minor} with many changes of later kernels backported: rules beyond "
            "these may differ.")
    if re.search(r"\.fc\d+", rest):
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
def match_profile(release: str, rules: Mapping[str, Mapping[str, Any]], version: str | None = None
                  ) -> RunningProfile:
    """:func:`running_profile` over ``rules`` ({profile version: {rule: value}}), so that it can be asked
    about any set of profiles."""
    if not rules:
        raise ValueError("rules: give at least one profile")
    (major, minor, patch), distro, why = parse_release(release, version)
    names = sorted(rules, key=_key)
    everything = tuple(sorted({k for n in names for k in rules[n]} - {"released"}))
    line = [n for n in names if _key(n)[:2] == (major, minor)]
    pre = f"{distro}: " if distro else ""

    def result(profile: str, closeness: str, differ: tuple[str, ...], note: str) -> RunningProfile:
        text = " ".join(s for s in (pre + why if why else "", note) if s)
        return RunningProfile(profile, release=release, closeness=closeness, may_differ=differ, why=text)

    if line:
        if patch is None:
            # A distribution ships a stable update of the line: the stable profiles (X.Y.Z) if any, its newest.
            stable = [n for n in line if n.count(".") >= 2] or line
            chosen = stable[-1]
            if len(stable) == 1:
                return result(chosen, "nearest", (), f"{chosen} is the only profile of the {major}.{minor} line "
                              "to compare it with.")
            return result(chosen, "nearest", _differing(rules, stable),
                          f"The newest of the {major}.{minor} line's profiles {', '.join(stable)}; these rules "
                          "differ among them.")
        run = (major, minor, patch)
        for n in line:
            if _key(n) == run:
                return result(n, "exact", (), "")
        below = [n for n in line if _key(n) < run]
        above = [n for n in line if _key(n) > run]
        if below and above:
            return result(below[-1], "nearest", _differing(rules, [below[-1], above[0]]),
                          f"Between the profiles {below[-1]} and {above[0]}.")
        if below:
            return result(below[-1], "nearest", (), f"Newer than {below[-1]}, the {major}.{minor} line's newest "
                          "profile: stable updates since may have changed rules no profile records.")
        older = [n for n in names if _key(n) < _key(above[0]) and n not in line]
        differ = _differing(rules, [older[-1], above[0]]) if older else ()
        return result(above[0], "nearest", differ, f"Older than {above[0]}, the {major}.{minor} line's oldest "
                      "profile.")
    run_key = (major, minor, 1 << 30 if patch is None else patch)
    below = [n for n in names if _key(n) < run_key]
    above = [n for n in names if _key(n) > run_key]
    if not below:
        return result(names[0], "older", everything, f"Older than every profile (the oldest is {names[0]}).")
    if not above:
        return result(names[-1], "newer", everything, f"Newer than every profile (the newest is {names[-1]}).")
    return result(below[-1], "nearest", _differing(rules, [below[-1], above[0]]),
                  f"No {major}.{minor} profile: the newest older one, {below[-1]}; these rules differ between it and "
                  f"{above[0]}.")


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
    rules = {v: dict(profiles.kernel(v).rules.values) for v in profiles.known_kernels()}
    return match_profile(release, rules, version)
