"""What the live path can do on this machine: Linux, a way to read features, and the rights to build labs."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import dataclass

from vnetlab.checks import public
from vnetlab.errors import LiveError, LiveUnavailable
from vnetlab.live.commands import COMMAND_TIMEOUT, NOT_LINUX, run, unique_netns_name
from vnetlab.live.netlink import netlink_error, pyroute2_error


@dataclass(frozen=True)
class Capability:
    """What the live path can do here. Truthy when everything asked for is possible; ``reason`` says why not."""

    ok: bool
    reason: str
    feature_backend: str | None = None
    labs: bool = False
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.ok


@public
def diagnose(
    *,
    platform: str,
    euid: int | None,
    cap_net_admin: bool,
    cap_sys_admin: bool,
    have_ip: bool,
    have_ethtool: bool,
    pyroute2_error: str | None,
    netlink_error: str | None,
    netns_error: str | None,
    need_labs: bool = True,
) -> Capability:
    """Decide from observed facts; pure, so that the messages are tested on every platform."""
    if not platform.startswith("linux"):
        return Capability(False, NOT_LINUX.format(platform=platform))
    notes: list[str] = []
    if pyroute2_error is None and netlink_error is None:
        backend: str | None = "netlink"
    else:
        why = pyroute2_error or netlink_error
        notes.append(f"ethtool netlink via pyroute2 unavailable ({why})")
        backend = "ethtool" if have_ethtool else None
    if backend is None:
        return Capability(
            False,
            "vnetlab.live cannot read device features: "
            + "; ".join(notes)
            + ", and the `ethtool` program is not on PATH. Install pyroute2 (a dependency of vnetlab on Linux: "
            "pip install pyroute2) or ethtool (apt-get install ethtool).",
            notes=tuple(notes),
        )
    labs_reason = None
    if not (cap_net_admin and cap_sys_admin):
        if euid == 0:
            fix = "this process is root but lacks them (a container or sandbox that drops them?)"
        else:
            fix = (f"this process runs as uid {euid}; run as root (sudo) or grant those capabilities, or let "
                   "live.session() run the labs in user namespaces of its own")
        labs_reason = f"building network namespaces needs CAP_SYS_ADMIN and CAP_NET_ADMIN: {fix}"
    elif not have_ip:
        labs_reason = "the `ip` program (iproute2) is not on PATH; apt-get install iproute2"
    elif netns_error is not None:
        labs_reason = f"creating a network namespace failed here ({netns_error})"
    if labs_reason is not None:
        notes.append(labs_reason)
        if need_labs:
            return Capability(
                False, f"vnetlab.live cannot build labs: {labs_reason}.", backend, False, tuple(notes)
            )
        return Capability(True, f"features readable via {backend}; no labs: {labs_reason}.", backend, False,
                          tuple(notes))
    return Capability(True, f"features via {backend}; network namespace labs available.", backend, True,
                      tuple(notes))


def _capabilities() -> tuple[bool, bool]:
    """(CAP_NET_ADMIN, CAP_SYS_ADMIN) in the effective set (include/uapi/linux/capability.h: bits 12, 21)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    eff = int(line.split()[1], 16)
                    return bool(eff >> 12 & 1), bool(eff >> 21 & 1)
    except OSError:
        pass
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return root, root


def _netns_error() -> str | None:
    name = unique_netns_name("probe")
    try:
        run(["ip", "netns", "add", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        return str(exc)
    try:
        run(["ip", "netns", "delete", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        return f"created {name} but could not delete it: {exc}"
    return None


_CAPABILITY_CACHE: dict[bool, Capability] = {}
_CACHE_LOCK = threading.Lock()


@public
def available(*, labs: bool = True, refresh: bool = False) -> Capability:
    """Whether the live path works here: truthy, or falsy with ``.reason`` explaining what is missing.

    ``labs=False`` asks only whether features can be read (no root needed for that).
    """
    with _CACHE_LOCK:
        if not refresh and labs in _CAPABILITY_CACHE:
            return _CAPABILITY_CACHE[labs]
        if not sys.platform.startswith("linux"):
            cap = diagnose(platform=sys.platform, euid=None, cap_net_admin=False, cap_sys_admin=False,
                           have_ip=False, have_ethtool=False, pyroute2_error=None, netlink_error=None,
                           netns_error=None, need_labs=labs)
        else:
            net_admin, sys_admin = _capabilities()
            have_ip = shutil.which("ip") is not None
            no_pyroute2 = pyroute2_error()
            no_netlink = netlink_error() if no_pyroute2 is None else None
            probe = labs and net_admin and sys_admin and have_ip
            cap = diagnose(
                platform=sys.platform,
                euid=os.geteuid(),
                cap_net_admin=net_admin,
                cap_sys_admin=sys_admin,
                have_ip=have_ip,
                have_ethtool=shutil.which("ethtool") is not None,
                pyroute2_error=no_pyroute2,
                netlink_error=no_netlink,
                netns_error=_netns_error() if probe else None,
                need_labs=labs,
            )
        _CAPABILITY_CACHE[labs] = cap
        return cap


@public
def require(*, labs: bool = True) -> Capability:
    """:func:`available`, raising :class:`LiveUnavailable` with its reason when the answer is no."""
    cap = available(labs=labs)
    if not cap:
        raise LiveUnavailable(cap.reason)
    return cap
