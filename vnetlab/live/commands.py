"""Running `ip` / `ethtool` with time limits, and entering network namespaces (the live path's plumbing).

Every command has its own limit (:data:`COMMAND_TIMEOUT`); netlink work runs in a short-lived thread so that a
Jupyter kernel's running asyncio loop and a thread's setns() never touch the caller's thread.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any

from vnetlab.checks import In, public
from vnetlab.errors import LiveError, LiveUnavailable

# Every namespace a Lab creates starts with this, so a leftover is recognisable as vnetlab's.
NETNS_PREFIX = "vnlive"
# Seconds any single `ip` / `ethtool` command may take before it is abandoned.
COMMAND_TIMEOUT = 10.0
# include/uapi/linux/if.h: IFNAMSIZ is 16 including the terminating NUL.
IFNAMSIZ = 16

#: Set by :func:`vnetlab.live.userns.enter` in the user-namespace child: every command it runs then asks to be
#: killed when the child dies (prctl PR_SET_PDEATHSIG, kernel/sys.c, through util-linux's ``setpriv
#: --pdeathsig``; it survives the exec). A SIGKILL'd child otherwise leaves an ``ip -n NS ...`` running for a
#: moment, holding a namespace the child promised was gone.
DIE_WITH_PARENT = False
_PDEATHSIG: bool | None = None


def _die_with_parent(argv: list[str]) -> list[str]:
    global _PDEATHSIG
    if not DIE_WITH_PARENT or shutil.which(argv[0]) is None:
        return argv  # a missing command keeps its own "not installed" message
    if _PDEATHSIG is None:  # util-linux 2.33 added --pdeathsig (Debian 11 has 2.36)
        try:
            helped = subprocess.run(["setpriv", "--help"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
            _PDEATHSIG = "--pdeathsig" in helped.stdout
        except (OSError, subprocess.TimeoutExpired):
            _PDEATHSIG = False
    return ["setpriv", "--pdeathsig", "KILL", "--", *argv] if _PDEATHSIG else argv


NOT_LINUX = (
    "vnetlab.live needs Linux: it reads netdev features from the running kernel and builds network "
    "namespaces, and this is {platform}. The model (vnetlab.features, vnetlab.netdev) works everywhere."
)


@public
def off_event_loop(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a short-lived thread and return its result (or raise its exception).

    pyroute2 0.9's synchronous sockets drive an asyncio loop with run_until_complete. In a thread that already
    runs a loop (a Jupyter kernel's main thread) that raises "This event loop is already running" and leaves
    the coroutine it created unawaited ("RuntimeWarning: coroutine 'AsyncNetlinkSocket.setup_endpoint' was
    never awaited", seen in notebook 60). A fresh thread has no running loop, so pyroute2 makes its own there.
    """
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread below
            out["error"] = exc

    worker = threading.Thread(target=run, name="vnetlab-netlink")
    worker.start()
    worker.join(COMMAND_TIMEOUT * 3)
    if "error" in out:
        raise out["error"]
    if "value" not in out and worker.is_alive():
        raise LiveError(f"a netlink request did not finish within {COMMAND_TIMEOUT * 3:.0f} s")
    return out.get("value")


@public
def run(argv: list[str], *, timeout: Annotated[float, In(0, None, "seconds", lo_excluded=True)],
        check: bool = True) -> subprocess.CompletedProcess[str]:
    if not sys.platform.startswith("linux"):
        raise LiveUnavailable(NOT_LINUX.format(platform=sys.platform))
    try:
        done = subprocess.run(_die_with_parent(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LiveError(f"`{argv[0]}` is not installed (needed for: {' '.join(argv)})") from None
    except subprocess.TimeoutExpired:
        raise LiveError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise LiveError(f"`{' '.join(argv)}` failed (exit {done.returncode}): {detail}")
    return done


@public
def netns_argv(netns: str | None, argv: list[str]) -> list[str]:
    return argv if netns is None else ["ip", "netns", "exec", netns, *argv]


@public
def check_netns_exists(netns: str | None) -> None:
    # pyroute2 would otherwise create a missing namespace (its default open flag is O_CREAT).
    if netns is not None and not os.path.exists(os.path.join("/run/netns", netns)):
        raise LiveError(f"network namespace {netns!r} does not exist (no /run/netns/{netns})")


# include/uapi/linux/sched.h
_CLONE_NEWNET = 0x40000000


@public
def enter_netns(netns: str) -> None:
    """setns(CLONE_NEWNET) of the calling thread into the named namespace (ip netns's /run/netns/NAME)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(os.path.join("/run/netns", netns), os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({netns}): {os.strerror(err)}")
    finally:
        os.close(fd)


@public
def in_netns(netns: str | None, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a short-lived thread that has entered ``netns`` (setns(CLONE_NEWNET) moves only the
    calling thread); sockets it opens stay in that namespace. None runs it in this namespace's thread."""

    def run() -> Any:
        if netns is not None:
            enter_netns(netns)
        return fn()

    return off_event_loop(run)


_IFNAME = re.compile(r"^[^\s/:]+$")


@public
def check_ifname(name: str, param: str) -> None:
    # net/core/dev.c dev_valid_name: non-empty, shorter than IFNAMSIZ, no '/', ':' or whitespace, not . or ..
    if not isinstance(name, str) or not _IFNAME.match(name) or len(name) >= IFNAMSIZ or name in (".", ".."):
        raise ValueError(f"{param}: {name!r} is not a valid interface name (1-15 chars, no '/', ':' or spaces)")


@public
def unique_netns_name(tag: str) -> str:
    return f"{NETNS_PREFIX}-{tag}-{os.getpid()}-{secrets.token_hex(3)}"
