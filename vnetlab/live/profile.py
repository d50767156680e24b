"""The modelled kernel profile for a running kernel's release string."""

from __future__ import annotations

import os
import re


def running_profile(release: str | None = None) -> str:
    """The modelled kernel profile for the running kernel (or ``release``, a `uname -r` string): the profile
    with the same major.minor, else the newest profile older than it (its rules are the ones certainly in)."""
    from vnetlab.profiles import known_kernels

    release = release or os.uname().release
    match = re.match(r"(\d+)\.(\d+)", release)
    if match is None:
        raise ValueError(f"release={release!r} does not start with a kernel version such as 6.18")
    have = (int(match[1]), int(match[2]))
    versions = sorted(known_kernels(), key=lambda v: tuple(int(p) for p in v.split(".")))
    older = [v for v in versions if tuple(int(p) for p in v.split(".")) <= have]
    if not older:
        raise ValueError(f"release={release!r} is older than every modelled kernel ({', '.join(versions)})")
    return older[-1]

