"""The running kernel beside the model: read and set real devices' features, build namespace labs, compare.

What ``ethtool -k`` shows comes from the kernel's ETHTOOL_MSG_FEATURES_GET reply (net/ethtool/features.c,
features_fill_reply): four bitsets over netdev_features_strings, ``hw`` (dev->hw_features), ``wanted``
(dev->wanted_features), ``active`` (dev->features) and ``nochange`` (NETIF_F_NEVER_CHANGE). ethtool prints a
feature as ``[fixed]`` when it is not in ``hw`` or is in ``nochange``, and ``[requested on|off]`` when wanted
and active differ (ethtool netlink/features.c, dump_feature). This module reads the same four sets:

- over ethtool generic netlink with pyroute2 (``backend="netlink"``), the message built here because
  pyroute2 0.9's NlEthtool has no FEATURES_GET;
- or by parsing ``ethtool -k`` (``backend="ethtool"``), when pyroute2 or the netlink family is missing.

Devices inside a named network namespace are reached with a pyroute2 socket opened in that namespace, or
with ``ip netns exec``. :class:`Lab` builds veth / macvlan / bridge stacks in namespaces it creates and
deletes them again; :func:`compare` puts a model device's ``ethtool_k()`` beside the kernel's.

Nothing here runs at import time and pyroute2 is imported only when the netlink path is used.
"""

from __future__ import annotations

import atexit
import errno
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vnetlab import ethtool
from vnetlab.errors import FixedFeatureError, LabTimeout, LiveError, LiveUnavailable, UnknownFeatureError
from vnetlab.ethtool import EthtoolK, FeatureState

__all__ = [
    "Capability",
    "Comparison",
    "DeviceFeatures",
    "FeatureDiff",
    "Lab",
    "LiveDevice",
    "SetResult",
    "SideResult",
    "TransferRow",
    "available",
    "compare",
    "compare_k",
    "ethtool_k",
    "read_features",
    "require",
    "running_profile",
    "set_features",
    "transfer_table",
]

# Every namespace a Lab creates starts with this, so a leftover is recognisable as vnetlab's.
NETNS_PREFIX = "vnlive"
# Seconds any single `ip` / `ethtool` command may take before it is abandoned.
COMMAND_TIMEOUT = 10.0
# include/uapi/linux/if.h: IFNAMSIZ is 16 including the terminating NUL.
IFNAMSIZ = 16

# include/uapi/linux/ethtool_netlink.h (the generated uapi header from 6.x): message and attribute ids.
_ETHTOOL_GENL_NAME = "ethtool"
_ETHTOOL_GENL_VERSION = 1
_ETHTOOL_MSG_FEATURES_GET = 11
_ETHTOOL_MSG_FEATURES_SET = 12
_ETHTOOL_FLAG_OMIT_REPLY = 1 << 1


# --------------------------------------------------------------------------------------------------------
# Feature states
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceFeatures(EthtoolK):
    """All features of one real device (vnetlab.ethtool.EthtoolK) with where they were read: ``netns`` and
    ``source`` ("netlink" or "ethtool")."""

    netns: str | None = None
    source: str = "netlink"

    @property
    def active(self) -> frozenset[str]:
        return frozenset(n for n, s in self.states.items() if s.active)

    @property
    def wanted(self) -> frozenset[str]:
        return frozenset(n for n, s in self.states.items() if s.wanted)

    @property
    def changeable(self) -> frozenset[str]:
        return frozenset(n for n, s in self.states.items() if s.changeable)

    def to_featureset(self, kernel: str | None = None) -> Any:
        """The active features as a ``vnetlab.features.FeatureSet`` for ``kernel`` (default: the modelled
        profile of the running kernel, :func:`running_profile`)."""
        from vnetlab import features

        return features.FeatureSet.from_ethtool({n: s.active for n, s in self.states.items()},
                                                kernel=kernel or running_profile())


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


# --------------------------------------------------------------------------------------------------------
# Capability checks
# --------------------------------------------------------------------------------------------------------

_NOT_LINUX = (
    "vnetlab.live needs Linux: it reads netdev features from the running kernel and builds network "
    "namespaces, and this is {platform}. The model (vnetlab.features, vnetlab.netdev) works everywhere."
)


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
        return Capability(False, _NOT_LINUX.format(platform=platform))
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
            + ", and the `ethtool` program is not on PATH. Install pyroute2 (a dependency of vnetlab on Linux: pip install pyroute2) "
            "or ethtool (apt-get install ethtool).",
            notes=tuple(notes),
        )
    labs_reason = None
    if not (cap_net_admin and cap_sys_admin):
        if euid == 0:
            fix = "this process is root but lacks them (a container or sandbox that drops them?)"
        else:
            fix = f"this process runs as uid {euid}; run as root (sudo) or grant those capabilities"
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


def _off_event_loop(fn: Callable[[], Any]) -> Any:
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


def _pyroute2_error() -> str | None:
    try:
        import pyroute2.netlink.generic  # noqa: F401
        import pyroute2.netlink.generic.ethtool  # noqa: F401
    except ImportError as exc:
        return f"pyroute2 is not importable: {exc}"
    return None


def _netlink_error() -> str | None:
    try:
        _off_event_loop(lambda: _genl_socket(None).close())
    except Exception as exc:  # any failure here only means "use the fallback"
        return f"the kernel's ethtool generic netlink family did not answer: {exc}"
    return None


def _netns_error() -> str | None:
    name = _unique_netns_name("probe")
    try:
        _run(["ip", "netns", "add", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        return str(exc)
    try:
        _run(["ip", "netns", "delete", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        return f"created {name} but could not delete it: {exc}"
    return None


_CAPABILITY_CACHE: dict[bool, Capability] = {}
_CACHE_LOCK = threading.Lock()


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
            pyroute2_error = _pyroute2_error()
            netlink_error = _netlink_error() if pyroute2_error is None else None
            probe = labs and net_admin and sys_admin and have_ip
            cap = diagnose(
                platform=sys.platform,
                euid=os.geteuid(),
                cap_net_admin=net_admin,
                cap_sys_admin=sys_admin,
                have_ip=have_ip,
                have_ethtool=shutil.which("ethtool") is not None,
                pyroute2_error=pyroute2_error,
                netlink_error=netlink_error,
                netns_error=_netns_error() if probe else None,
                need_labs=labs,
            )
        _CAPABILITY_CACHE[labs] = cap
        return cap


def require(*, labs: bool = True) -> Capability:
    """:func:`available`, raising :class:`LiveUnavailable` with its reason when the answer is no."""
    cap = available(labs=labs)
    if not cap:
        raise LiveUnavailable(cap.reason)
    return cap


# --------------------------------------------------------------------------------------------------------
# Running commands
# --------------------------------------------------------------------------------------------------------


def _run(argv: list[str], *, timeout: float, check: bool = True) -> subprocess.CompletedProcess[str]:
    if not sys.platform.startswith("linux"):
        raise LiveUnavailable(_NOT_LINUX.format(platform=sys.platform))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LiveError(f"`{argv[0]}` is not installed (needed for: {' '.join(argv)})") from None
    except subprocess.TimeoutExpired:
        raise LiveError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise LiveError(f"`{' '.join(argv)}` failed (exit {done.returncode}): {detail}")
    return done


def _in_netns(netns: str | None, argv: list[str]) -> list[str]:
    return argv if netns is None else ["ip", "netns", "exec", netns, *argv]


def _check_netns_exists(netns: str | None) -> None:
    # pyroute2 would otherwise create a missing namespace (its default open flag is O_CREAT).
    if netns is not None and not os.path.exists(os.path.join("/run/netns", netns)):
        raise LiveError(f"network namespace {netns!r} does not exist (no /run/netns/{netns})")


# --------------------------------------------------------------------------------------------------------
# ethtool netlink through pyroute2
# --------------------------------------------------------------------------------------------------------

_MSG_CLASS: Any = None


def _features_msg_class() -> Any:
    """genlmsg for ETHTOOL_MSG_FEATURES_GET/SET (ETHTOOL_A_FEATURES_*), on top of pyroute2's bitset nla."""
    global _MSG_CLASS
    if _MSG_CLASS is None:
        from pyroute2.netlink import genlmsg
        from pyroute2.netlink.generic.ethtool import ethtoolbitset, ethtoolheader

        class ethtool_features_msg(genlmsg):
            nla_map = (
                ("ETHTOOL_A_FEATURES_UNSPEC", "none"),
                ("ETHTOOL_A_FEATURES_HEADER", "ethtoolheader"),
                ("ETHTOOL_A_FEATURES_HW", "ethtoolbitset"),
                ("ETHTOOL_A_FEATURES_WANTED", "ethtoolbitset"),
                ("ETHTOOL_A_FEATURES_ACTIVE", "ethtoolbitset"),
                ("ETHTOOL_A_FEATURES_NOCHANGE", "ethtoolbitset"),
            )

        ethtool_features_msg.ethtoolheader = ethtoolheader
        ethtool_features_msg.ethtoolbitset = ethtoolbitset
        _MSG_CLASS = ethtool_features_msg
    return _MSG_CLASS


# include/uapi/linux/sched.h and linux/netlink.h.
_CLONE_NEWNET = 0x40000000
_NETLINK_GENERIC = 16


def _raw_netlink_socket_in(netns: str) -> Any:
    """A NETLINK_GENERIC socket opened inside ``netns``.

    A socket belongs to the namespace it is created in, and setns(CLONE_NEWNET) moves only the calling
    thread, so a throwaway thread enters the namespace and opens it; this process stays where it was.
    That is about ten times faster than pyroute2's netns= path, which forks a helper process per socket.
    """
    import socket

    out: dict[str, Any] = {}

    def enter_and_open() -> None:
        try:
            _enter_netns(netns)
            out["sock"] = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_GENERIC)
        except BaseException as exc:  # handed to the caller's thread below
            out["error"] = exc

    worker = threading.Thread(target=enter_and_open, name=f"vnetlab-setns-{netns}")
    worker.start()
    worker.join(COMMAND_TIMEOUT)
    if "error" in out:
        raise out["error"]
    if "sock" not in out:
        raise LiveError(f"opening a netlink socket in {netns} did not finish within {COMMAND_TIMEOUT:.0f} s")
    return out["sock"]


def _enter_netns(netns: str) -> None:
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


def in_netns(netns: str | None, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a short-lived thread that has entered ``netns`` (setns(CLONE_NEWNET) moves only the
    calling thread); sockets it opens stay in that namespace. None runs it in this namespace's thread."""

    def run() -> Any:
        if netns is not None:
            _enter_netns(netns)
        return fn()

    return _off_event_loop(run)


def _genl_socket(netns: str | None) -> Any:
    from pyroute2.netlink.generic import GenericNetlinkSocket

    kwargs: dict[str, Any] = {"ext_ack": True}
    if netns is not None:
        try:
            kwargs["use_socket"] = _raw_netlink_socket_in(netns)
        except OSError:
            # pyroute2 opens it from a helper process instead; flags=0 so that a missing netns is not created.
            kwargs.update(netns=netns, flags=0)
    sock = GenericNetlinkSocket(**kwargs)
    try:
        sock.bind(_ETHTOOL_GENL_NAME, _features_msg_class())
    except BaseException:
        sock.close()
        raise
    return sock


def _bitset_bits(bitset: Any) -> list[tuple[int, str, bool]]:
    """(index, name, value) for each bit listed in a verbose ethtool bitset (net/ethtool/bitset.c)."""
    nomask = bool(bitset.get_attr("ETHTOOL_A_BITSET_NOMASK"))
    bits = bitset.get_attr("ETHTOOL_A_BITSET_BITS")
    if bits is None:
        return []
    out = []
    for bit in bits.get_attrs("ETHTOOL_A_BITSET_BITS_BIT"):
        # With NOMASK only set bits are listed; otherwise every bit of the mask, VALUE marking the set ones.
        value = nomask or bool(bit.get_attr("ETHTOOL_A_BITSET_BIT_VALUE"))
        out.append((bit.get_attr("ETHTOOL_A_BITSET_BIT_INDEX"), bit.get_attr("ETHTOOL_A_BITSET_BIT_NAME") or "",
                    value))
    return out


def _header(device: str, flags: int = 0) -> dict[str, Any]:
    attrs: list[list[Any]] = [["ETHTOOL_A_HEADER_DEV_NAME", device]]
    if flags:
        attrs.append(["ETHTOOL_A_HEADER_FLAGS", flags])
    return {"attrs": attrs}


def _netlink_error_text(exc: Exception, device: str, netns: str | None) -> str:
    code = getattr(exc, "code", None)
    where = f" in netns {netns}" if netns else ""
    if code == errno.ENODEV:
        return f"no device {device!r}{where}"
    return f"ethtool netlink request for {device!r}{where} failed: {exc}"


def _read_netlink(device: str, netns: str | None) -> DeviceFeatures:
    return _off_event_loop(lambda: _read_netlink_here(device, netns))


def _read_netlink_here(device: str, netns: str | None) -> DeviceFeatures:
    from pyroute2.netlink import NLM_F_REQUEST

    msg_class = _features_msg_class()
    sock = _genl_socket(netns)
    try:
        msg = msg_class()
        msg["cmd"] = _ETHTOOL_MSG_FEATURES_GET
        msg["version"] = _ETHTOOL_GENL_VERSION
        msg["attrs"].append(("ETHTOOL_A_FEATURES_HEADER", _header(device)))
        try:
            (reply,) = list(sock.nlm_request(msg, msg_type=sock.prid, msg_flags=NLM_F_REQUEST))
        except Exception as exc:
            raise LiveError(_netlink_error_text(exc, device, netns)) from exc
    finally:
        sock.close()
    sets = {}
    for part in ("HW", "WANTED", "ACTIVE", "NOCHANGE"):
        bitset = reply.get_attr(f"ETHTOOL_A_FEATURES_{part}")
        sets[part] = {} if bitset is None else {i: (n, v) for i, n, v in _bitset_bits(bitset)}
    states: dict[str, FeatureState] = {}
    # The HW bitset carries the full mask of feature bits, so it names every feature; unnamed bits are
    # unused slots (e.g. 2, 12, 13, 32 in 6.18) that ethtool does not print either.
    for index in sorted(sets["HW"]):
        name, in_hw = sets["HW"][index]
        if not name:
            continue
        nochange = index in sets["NOCHANGE"] and sets["NOCHANGE"][index][1]
        states[name] = FeatureState(
            name=name,
            active=index in sets["ACTIVE"] and sets["ACTIVE"][index][1],
            wanted=index in sets["WANTED"] and sets["WANTED"][index][1],
            changeable=in_hw and not nochange,
        )
    return DeviceFeatures(device=device, netns=netns, source="netlink", states=states)


def _set_netlink(device: str, netns: str | None, wanted: Mapping[str, bool]) -> None:
    _off_event_loop(lambda: _set_netlink_here(device, netns, wanted))


def _set_netlink_here(device: str, netns: str | None, wanted: Mapping[str, bool]) -> None:
    from pyroute2.netlink import NLM_F_ACK, NLM_F_REQUEST

    msg_class = _features_msg_class()
    bits = []
    for name, on in wanted.items():
        attrs: list[list[Any]] = [["ETHTOOL_A_BITSET_BIT_NAME", name]]
        if on:
            attrs.append(["ETHTOOL_A_BITSET_BIT_VALUE", True])
        bits.append(["ETHTOOL_A_BITSET_BITS_BIT", {"attrs": attrs}])
    msg = msg_class()
    msg["cmd"] = _ETHTOOL_MSG_FEATURES_SET
    msg["version"] = _ETHTOOL_GENL_VERSION
    msg["attrs"].append(("ETHTOOL_A_FEATURES_HEADER", _header(device, _ETHTOOL_FLAG_OMIT_REPLY)))
    # Without NOMASK the listed bits are the mask: only they change (net/ethtool/features.c, ethnl_set_features).
    msg["attrs"].append(("ETHTOOL_A_FEATURES_WANTED", {"attrs": [["ETHTOOL_A_BITSET_BITS", {"attrs": bits}]]}))
    sock = _genl_socket(netns)
    try:
        list(sock.nlm_request(msg, msg_type=sock.prid, msg_flags=NLM_F_REQUEST | NLM_F_ACK))
    except Exception as exc:
        raise LiveError(_netlink_error_text(exc, device, netns)) from exc
    finally:
        sock.close()


# --------------------------------------------------------------------------------------------------------
# The ethtool program
# --------------------------------------------------------------------------------------------------------


def _read_ethtool(device: str, netns: str | None) -> DeviceFeatures:
    done = _run(_in_netns(netns, ["ethtool", "-k", device]), timeout=COMMAND_TIMEOUT)
    parsed = ethtool.parse_k(done.stdout, device=device)
    return DeviceFeatures(device=parsed.device, states=parsed.states, netns=netns, source="ethtool")


def _set_ethtool(device: str, netns: str | None, wanted: Mapping[str, bool]) -> None:
    argv = ["ethtool", "-K", device]
    for name, on in wanted.items():
        argv += [name, "on" if on else "off"]
    done = _run(_in_netns(netns, argv), timeout=COMMAND_TIMEOUT, check=False)
    text = done.stdout + done.stderr
    # ethtool exits non-zero when the kernel kept some request off ("Could not change any device features");
    # the caller re-reads and reports that, so only other failures are errors.
    if done.returncode != 0 and "Could not change" not in text and "Actual changes" not in text:
        raise LiveError(f"`{' '.join(_in_netns(netns, argv))}` failed (exit {done.returncode}): {text.strip()}")


# --------------------------------------------------------------------------------------------------------
# Public read / set
# --------------------------------------------------------------------------------------------------------


def _backend(backend: str) -> str:
    if backend not in ("auto", "netlink", "ethtool"):
        raise ValueError(f"backend must be 'auto', 'netlink' or 'ethtool', got {backend!r}")
    if backend != "auto":
        return backend
    cap = available(labs=False)
    if not cap:
        raise LiveUnavailable(cap.reason)
    assert cap.feature_backend is not None
    return cap.feature_backend


def read_features(device: str, *, netns: str | None = None, backend: str = "auto") -> DeviceFeatures:
    """Every feature of a real device, as ``ethtool -k`` would show it, with wanted and changeable."""
    _check_ifname(device, "device")
    _check_netns_exists(netns)
    if _backend(backend) == "netlink":
        return _read_netlink(device, netns)
    return _read_ethtool(device, netns)


def ethtool_k(device: str, *, netns: str | None = None, backend: str = "auto") -> dict[str, tuple[bool, bool]]:
    """{kernel feature name: (on, fixed)} for a real device, the shape of the model's ``ethtool_k()``."""
    return read_features(device, netns=netns, backend=backend).ethtool_k()


@dataclass(frozen=True)
class SetResult:
    """What ``ethtool -K`` did: ``changed`` maps each feature whose state moved to (before, after);
    ``not_applied`` lists the requested features the kernel left different from the request."""

    device: str
    requested: Mapping[str, bool]
    changed: Mapping[str, tuple[bool, bool]]
    not_applied: tuple[str, ...]
    after: DeviceFeatures

    def __str__(self) -> str:
        lines = [f"{self.device}: actual changes:"]
        for name, (_before, now) in sorted(self.changed.items()):
            note = "" if name in self.requested else " [not requested]"
            lines.append(f"  {name}: {'on' if now else 'off'}{note}")
        for name in self.not_applied:
            lines.append(f"  {name}: {self.after[name].ethtool_text()}")
        return "\n".join(lines)


def set_features(
    device: str, changes: Mapping[str, bool], *, netns: str | None = None, backend: str = "auto"
) -> SetResult:
    """Like ``ethtool -K device name on|off ...`` on the running kernel.

    Names are what ``ethtool -K`` accepts (vnetlab.ethtool.expand over this device's feature strings):
    kernel feature strings or the legacy names (``tx``, ``sg``, ``gro``, ``generic-receive-offload``), which
    stand for every feature they group. An unknown name raises UnknownFeatureError; a ``[fixed]`` feature asked
    to change raises FixedFeatureError before anything is changed (a legacy name only when every member it
    would change is fixed, as ethtool's "Could not change any device features").
    """
    if not changes:
        raise ValueError("changes: give at least one feature to set")
    backend = _backend(backend)
    before = read_features(device, netns=netns, backend=backend)
    wanted: dict[str, bool] = {}
    refused: list[str] = []
    for name, on in changes.items():
        if not isinstance(on, bool):
            raise ValueError(f"changes[{name!r}] must be True or False, got {on!r}")
        try:
            members = ethtool.expand(name, before.states)
        except UnknownFeatureError:
            raise UnknownFeatureError(f"{device}: no feature named {name!r}") from None
        fixed = [m for m in members if before[m].fixed and before[m].active != on]
        if fixed and (len(members) == 1 or all(before[m].fixed for m in members)):
            refused.extend(fixed)
        for member in members:
            wanted[member] = on
    if refused:
        raise FixedFeatureError(device, refused)
    settable = {n: on for n, on in wanted.items() if not before[n].fixed}
    if settable:
        if backend == "netlink":
            _set_netlink(device, netns, settable)
        else:
            _set_ethtool(device, netns, settable)
    after = read_features(device, netns=netns, backend=backend)
    changed = {
        n: (before[n].active, after[n].active)
        for n in after
        if n in before and before[n].active != after[n].active
    }
    not_applied = tuple(sorted(n for n, on in wanted.items() if after[n].active != on))
    return SetResult(device=device, requested=dict(wanted), changed=changed, not_applied=not_applied, after=after)


# --------------------------------------------------------------------------------------------------------
# Labs in network namespaces
# --------------------------------------------------------------------------------------------------------

_IFNAME = re.compile(r"^[^\s/:]+$")


def _check_ifname(name: str, param: str) -> None:
    # net/core/dev.c dev_valid_name: non-empty, shorter than IFNAMSIZ, no '/', ':' or whitespace, not . or ..
    if not isinstance(name, str) or not _IFNAME.match(name) or len(name) >= IFNAMSIZ or name in (".", ".."):
        raise ValueError(f"{param}: {name!r} is not a valid interface name (1-15 chars, no '/', ':' or spaces)")


def _unique_netns_name(tag: str) -> str:
    return f"{NETNS_PREFIX}-{tag}-{os.getpid()}-{secrets.token_hex(3)}"


# Namespaces created by this process and not yet deleted; atexit deletes any a crash left behind.
_OWNED_NETNS: set[str] = set()
_OWNED_LOCK = threading.Lock()


def _delete_netns(name: str) -> str | None:
    try:
        _run(["ip", "netns", "delete", name], timeout=COMMAND_TIMEOUT)
    except LiveError as exc:
        if os.path.exists(os.path.join("/run/netns", name)):
            return str(exc)
    with _OWNED_LOCK:
        _OWNED_NETNS.discard(name)
    return None


@atexit.register
def _delete_leftovers() -> None:
    with _OWNED_LOCK:
        names = sorted(_OWNED_NETNS)
    for name in names:
        _delete_netns(name)


@dataclass(frozen=True)
class LiveDevice:
    """A real device inside a lab namespace, with the same feature calls as a model device."""

    name: str
    netns: str | None
    kind: str = "device"

    def features(self, *, backend: str = "auto") -> DeviceFeatures:
        return read_features(self.name, netns=self.netns, backend=backend)

    def ethtool_k(self) -> dict[str, tuple[bool, bool]]:
        return self.features().ethtool_k()

    def ethtool_K(self, changes: Mapping[str, bool]) -> SetResult:  # noqa: N802 (ethtool's own spelling)
        return set_features(self.name, changes, netns=self.netns)


@dataclass
class Lab:
    """Network namespaces for experiments, deleted again on exit (only the ones this Lab created).

    >>> with Lab() as lab:                                   # doctest: +SKIP
    ...     v0, v1 = lab.veth("v0", "v1")
    ...     mv0 = lab.macvlan("mv0", lower=v0)
    ...     lab.set_master(v1, lab.bridge("br0"))
    ...     v0.ethtool_K({"tx-udp-segmentation": False})

    ``timeout`` (seconds) bounds the whole lab: a step started after it raises :class:`LabTimeout`, and
    every command has its own limit of :data:`COMMAND_TIMEOUT`. Deleting a namespace destroys the devices
    in it, so cleanup is one ``ip netns delete`` per namespace.
    """

    timeout: float = 120.0
    tag: str = "lab"
    namespaces: list[str] = field(default_factory=list, init=False)
    _deadline: float | None = field(default=None, init=False, repr=False)
    _devices: dict[tuple[str, str], LiveDevice] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if not re.fullmatch(r"[a-z0-9]{1,12}", self.tag):
            raise ValueError(f"tag must be 1-12 lowercase letters or digits, got {self.tag!r}")

    # context management ---------------------------------------------------------------------------------

    def __enter__(self) -> Lab:
        require(labs=True)
        self._deadline = time.monotonic() + self.timeout
        try:
            self.add_namespace()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete every namespace this lab created; raises LiveError naming any that would not go."""
        failures = []
        while self.namespaces:
            name = self.namespaces.pop()
            err = _delete_netns(name)
            if err is not None:
                failures.append(f"{name}: {err}")
        self._devices.clear()
        if failures:
            raise LiveError("could not delete lab namespaces: " + "; ".join(failures))

    # building -------------------------------------------------------------------------------------------

    @property
    def netns(self) -> str:
        """The lab's first namespace, where devices go unless told otherwise."""
        if not self.namespaces:
            raise LiveError("the lab is not open; use `with Lab() as lab:`")
        return self.namespaces[0]

    def _remaining(self) -> float:
        if self._deadline is None:
            raise LiveError("the lab is not open; use `with Lab() as lab:`")
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise LabTimeout(f"lab ran past its {self.timeout:.0f} s budget; namespaces are deleted on exit")
        return min(left, COMMAND_TIMEOUT)

    def _ip(self, netns: str | None, *args: str) -> None:
        argv = ["ip"] + (["-n", netns] if netns else []) + list(args)
        _run(argv, timeout=self._remaining())

    def add_namespace(self) -> str:
        """Create one more uniquely named namespace owned by this lab and return its name."""
        self._remaining()
        name = _unique_netns_name(self.tag)
        with _OWNED_LOCK:
            _OWNED_NETNS.add(name)
        try:
            _run(["ip", "netns", "add", name], timeout=self._remaining())
        except BaseException:
            _delete_netns(name)
            raise
        self.namespaces.append(name)
        self._ip(name, "link", "set", "dev", "lo", "up")
        return name

    def _own_netns(self, netns: str | None) -> str:
        netns = netns or self.netns
        if netns not in self.namespaces:
            raise ValueError(f"netns: {netns!r} was not created by this lab")
        return netns

    def _register(self, name: str, netns: str, kind: str) -> LiveDevice:
        dev = LiveDevice(name=name, netns=netns, kind=kind)
        self._devices[(netns, name)] = dev
        return dev

    def _resolve(self, dev: LiveDevice | str, param: str, netns: str | None = None) -> LiveDevice:
        if isinstance(dev, LiveDevice):
            if dev.netns not in self.namespaces:
                raise ValueError(f"{param}: {dev.name!r} is not in this lab")
            return dev
        _check_ifname(dev, param)
        ns = self._own_netns(netns)
        return self._devices.get((ns, dev)) or LiveDevice(name=dev, netns=ns)

    def veth(self, name: str, peer: str, *, netns: str | None = None, peer_netns: str | None = None,
             up: bool = True) -> tuple[LiveDevice, LiveDevice]:
        """A veth pair; ``peer_netns`` puts the peer in another namespace of this lab."""
        _check_ifname(name, "name")
        _check_ifname(peer, "peer")
        ns = self._own_netns(netns)
        peer_ns = self._own_netns(peer_netns)
        args = ["link", "add", "name", name, "type", "veth", "peer", "name", peer]
        if peer_ns != ns:
            args += ["netns", peer_ns]
        self._ip(ns, *args)
        a, b = self._register(name, ns, "veth"), self._register(peer, peer_ns, "veth")
        if up:
            self.up(a)
            self.up(b)
        return a, b

    def macvlan(self, name: str, *, lower: LiveDevice | str, mode: str = "bridge", up: bool = True) -> LiveDevice:
        """A macvlan device on ``lower`` (in the lower device's namespace)."""
        _check_ifname(name, "name")
        if mode not in ("private", "vepa", "bridge", "passthru", "source"):
            raise ValueError(f"mode must be a macvlan mode (private, vepa, bridge, passthru, source), got {mode!r}")
        low = self._resolve(lower, "lower")
        assert low.netns is not None
        self._ip(low.netns, "link", "add", "name", name, "link", low.name, "type", "macvlan", "mode", mode)
        dev = self._register(name, low.netns, "macvlan")
        if up:
            self.up(dev)
        return dev

    def bridge(self, name: str, *, netns: str | None = None, up: bool = True) -> LiveDevice:
        _check_ifname(name, "name")
        ns = self._own_netns(netns)
        self._ip(ns, "link", "add", "name", name, "type", "bridge")
        dev = self._register(name, ns, "bridge")
        if up:
            self.up(dev)
        return dev

    def set_master(self, port: LiveDevice | str, master: LiveDevice | str) -> None:
        """Enslave ``port`` to ``master`` (a bridge), as ``ip link set PORT master MASTER``."""
        p = self._resolve(port, "port")
        m = self._resolve(master, "master", p.netns)
        if p.netns != m.netns:
            raise ValueError(f"master: {m.name!r} is in {m.netns}, port {p.name!r} in {p.netns}")
        assert p.netns is not None
        self._ip(p.netns, "link", "set", "dev", p.name, "master", m.name)

    def up(self, dev: LiveDevice | str) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "link", "set", "dev", d.name, "up")

    def vxlan(self, name: str, *, vni: int, underlay: LiveDevice | str, local: str = "10.0.0.1",
              up: bool = True) -> LiveDevice:
        """ip link add NAME type vxlan id VNI dstport 4789 dev UNDERLAY local LOCAL (in the underlay's netns)."""
        _check_ifname(name, "name")
        low = self._resolve(underlay, "underlay")
        assert low.netns is not None
        self._ip(low.netns, "link", "add", name, "type", "vxlan", "id", str(vni), "dstport", "4789", "dev",
                 low.name, "local", local)
        dev = self._register(name, low.netns, "vxlan")
        if up:
            self.up(dev)
        return dev

    def mtu(self, dev: LiveDevice | str) -> int:
        """The device's MTU (ip -j link show)."""
        return int(self.link_json(dev)["mtu"])

    def set_mtu(self, dev: LiveDevice | str, mtu: int) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "link", "set", "dev", d.name, "mtu", str(int(mtu)))

    def link_json(self, dev: LiveDevice | str) -> dict[str, Any]:
        """``ip -j -s link show DEV`` (with the stats64 counters)."""
        import json

        d = self._resolve(dev, "dev")
        done = _run(["ip", "-n", str(d.netns), "-j", "-s", "link", "show", "dev", d.name], timeout=self._remaining())
        return json.loads(done.stdout)[0]

    def rx_packets(self, dev: LiveDevice | str) -> int:
        """rx packets of ``dev`` (for a veth: veth_get_stats64, the skbs it received by either path)."""
        return int(self.link_json(dev)["stats64"]["rx"]["packets"])

    def ethtool_stats(self, dev: LiveDevice | str) -> dict[str, int]:
        """``ethtool -S DEV`` as {name: value} (a veth: rx_queue_N_xdp_packets counts its NAPI path)."""
        d = self._resolve(dev, "dev")
        done = _run(_in_netns(d.netns, ["ethtool", "-S", d.name]), timeout=self._remaining())
        out = {}
        for line in done.stdout.splitlines()[1:]:
            name, _, value = line.strip().partition(":")
            if value.strip().lstrip("-").isdigit():
                out[name.strip()] = int(value)
        return out

    def sysctl(self, netns: str, key: str, value: str) -> None:
        _run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", f"{key}={value}"], timeout=self._remaining())

    def addr(self, dev: LiveDevice | str, cidr: str) -> None:
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        extra = ["nodad"] if ":" in cidr else []
        self._ip(d.netns, "addr", "add", cidr, "dev", d.name, *extra)

    def neigh(self, dev: LiveDevice | str, ip_addr: str, lladdr: str) -> None:
        """A permanent neighbour entry, so no ARP / ND packet crosses the link during a measurement."""
        d = self._resolve(dev, "dev")
        assert d.netns is not None
        self._ip(d.netns, "neigh", "replace", ip_addr, "lladdr", lladdr, "dev", d.name, "nud", "permanent")

    def attach_xdp_pass(self, dev: LiveDevice | str) -> None:
        """Attach a two-instruction XDP_PASS program in native mode (r0 = XDP_PASS; exit), loaded with the
        bpf() syscall and attached over rtnetlink (IFLA_XDP_FD); it lives as long as the device does."""
        d = self._resolve(dev, "dev")
        fd = load_xdp_pass()

        def attach() -> None:
            from pyroute2 import IPRoute

            with IPRoute() as ipr:
                index = ipr.link_lookup(ifname=d.name)[0]
                ipr.link("set", index=index, xdp_fd=fd)

        try:
            in_netns(d.netns, attach)
        finally:
            os.close(fd)  # the attached program holds its own reference

    def device(self, name: str, *, netns: str | None = None) -> LiveDevice:
        return self._resolve(name, "name", netns)

    def devices(self) -> list[LiveDevice]:
        return list(self._devices.values())


# --------------------------------------------------------------------------------------------------------
# Model versus kernel
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureDiff:
    """One feature where model and kernel disagree: each side is (on, fixed) or (on, fixed, wanted), or
    None when that side lacks the feature altogether."""

    name: str
    model: tuple[bool, ...] | None
    kernel: tuple[bool, ...] | None

    def __str__(self) -> str:
        def show(v: tuple[bool, ...] | None) -> str:
            if v is None:
                return "(absent)"
            if len(v) > 2:
                return FeatureState(self.name, active=v[0], wanted=v[2], changeable=not v[1]).ethtool_text()
            return ("on" if v[0] else "off") + (" [fixed]" if v[1] else "")

        return f"{self.name}: model {show(self.model)}, kernel {show(self.kernel)}"


@dataclass(frozen=True)
class Comparison:
    """Feature-by-feature result of :func:`compare`; truthy when nothing differs."""

    device: str
    agreed: tuple[str, ...]
    differences: tuple[FeatureDiff, ...]
    fields: tuple[str, ...] = ("on", "fixed")

    def __bool__(self) -> bool:
        return not self.differences

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.differences)

    def __str__(self) -> str:
        if not self.differences:
            return f"{self.device}: model and kernel agree on all {len(self.agreed)} features"
        lines = [f"{self.device}: {len(self.differences)} of {len(self.agreed) + len(self.differences)} "
                 f"features differ ({', '.join(self.fields)}):"]
        lines += [f"  {d}" for d in self.differences]
        return "\n".join(lines)


_FIELDS = ("on", "fixed", "wanted")


def compare_k(
    model_k: Mapping[str, tuple[bool, ...]],
    kernel_k: Mapping[str, tuple[bool, ...]],
    *,
    device: str = "?",
    fields: Iterable[str] = ("on", "fixed"),
) -> Comparison:
    """Compare two ``ethtool_k()`` dicts, {name: (on, fixed)} or {name: (on, fixed, wanted)}.

    ``fields`` picks what counts: "on", "fixed", "wanted". "wanted" needs the 3-tuples and, like
    ``ethtool -k``'s ``[requested on|off]``, counts only where both sides call the feature changeable.
    """
    fields = tuple(fields)
    if not fields or any(f not in _FIELDS for f in fields):
        raise ValueError(f"fields must be a non-empty subset of {_FIELDS!r}, got {fields!r}")
    width = 3 if "wanted" in fields else 2
    agreed, diffs = [], []
    for name in sorted(set(model_k) | set(kernel_k)):
        m, k = model_k.get(name), kernel_k.get(name)
        for side, v in (("model_k", m), ("kernel_k", k)):
            if v is not None and len(v) < width:
                raise ValueError(f"{side}[{name!r}] needs (on, fixed, wanted) to compare 'wanted', got {v!r}")
        same = m is not None and k is not None
        if same and "on" in fields:
            same = bool(m[0]) == bool(k[0])
        if same and "fixed" in fields:
            same = bool(m[1]) == bool(k[1])
        if same and "wanted" in fields and not m[1] and not k[1]:
            same = bool(m[2]) == bool(k[2])
        if same:
            agreed.append(name)
        else:
            diffs.append(FeatureDiff(name, None if m is None else tuple(bool(x) for x in m[:width]),
                                     None if k is None else tuple(bool(x) for x in k[:width])))
    return Comparison(device=device, agreed=tuple(agreed), differences=tuple(diffs), fields=fields)


def _model_k(model_device: Any, with_wanted: bool) -> dict[str, tuple[bool, ...]]:
    k = model_device.ethtool_k() if hasattr(model_device, "ethtool_k") else dict(model_device)
    if not with_wanted:
        return k
    if not hasattr(model_device, "wanted_features"):
        raise ValueError("fields: 'wanted' needs a model device with wanted_features")
    wanted = model_device.wanted_features.to_ethtool()
    return {name: (on, fixed, bool(wanted.get(name, False))) for name, (on, fixed) in k.items()}


def compare(
    model_device: Any,
    real_device: LiveDevice | str,
    *,
    netns: str | None = None,
    fields: Iterable[str] = ("on", "fixed"),
    backend: str = "auto",
) -> Comparison:
    """Compare a model device (anything with ``ethtool_k()``) with a real device of the running kernel.

    ``real_device`` is a :class:`LiveDevice` or a device name (looked up in ``netns``). With "wanted" in
    ``fields`` the model's ``wanted_features`` are compared too (what ``[requested on|off]`` shows).
    """
    if isinstance(real_device, LiveDevice):
        name, ns = real_device.name, real_device.netns if netns is None else netns
    else:
        name, ns = real_device, netns
    fields = tuple(fields)
    with_wanted = "wanted" in fields
    model_k = _model_k(model_device, with_wanted)
    real = read_features(name, netns=ns, backend=backend)
    kernel_k = {n: (s.active, s.fixed, s.wanted) if with_wanted else (s.active, s.fixed)
                for n, s in real.states.items()}
    label = getattr(model_device, "name", None)
    device = name if label in (None, name) else f"{label} (model) / {name} (kernel)"
    return compare_k(model_k, kernel_k, device=device, fields=fields)


# ---------------------------------------------------------------------------------------------------------
# The model (vnetlab.netdev) against this kernel, step by step (notebook 60 and tests/test_live.py)
# ---------------------------------------------------------------------------------------------------------

# One topology built both ways: veth v0-v1 with macvlan mv0 on v0; veth v2-v3; bridge br0 with ports v1, v3;
# macvlan mv1 on br0, so that a port's change must travel two levels up (port -> bridge -> macvlan).
MIRROR_DEVICES = ("v0", "v1", "mv0", "v2", "v3", "br0", "mv1")

# Cumulative steps: (label, operations). An operation is ("master", port, bridge) or ("K", device, changes),
# the latter applied as `ethtool -K` to the kernel and as ethtool_K() to the model.
MIRROR_STEPS: tuple[tuple[str, tuple[tuple, ...]], ...] = (
    ("built, bridge without ports", ()),
    ("v1 and v3 enslaved to br0", (("master", "v1", "br0"), ("master", "v3", "br0"))),
    ("v0 tx-udp-segmentation off", (("K", "v0", {"tx-udp-segmentation": False}),)),
    ("v0 tx-gso-list off", (("K", "v0", {"tx-gso-list": False}),)),
    ("v0 scatter-gather off", (("K", "v0", {"tx-scatter-gather": False, "tx-scatter-gather-fraglist": False}),)),
    ("v0 tx-checksumming off", (("K", "v0", {"tx-checksum-ip-generic": False, "tx-checksum-sctp": False}),)),
    ("v1 tx-udp-segmentation off (one bridge port)", (("K", "v1", {"tx-udp-segmentation": False}),)),
    ("v3 tx-udp-segmentation off (both bridge ports)", (("K", "v3", {"tx-udp-segmentation": False}),)),
    ("v1 tx-gso-list and rx-gro-list toggled", (("K", "v1", {"tx-gso-list": False, "rx-gro-list": True}),)),
    ("v3 scatter-gather off (bridge port)", (("K", "v3", {"tx-scatter-gather": False}),)),
    ("v1 scatter-gather off too (all bridge ports)", (("K", "v1", {"tx-scatter-gather": False}),)),
    ("v0 and v3 back on", (
        ("K", "v0", {"tx-udp-segmentation": True, "tx-gso-list": True, "tx-scatter-gather": True,
                     "tx-scatter-gather-fraglist": True, "tx-checksum-ip-generic": True,
                     "tx-checksum-sctp": True}),
        ("K", "v3", {"tx-scatter-gather": True, "tx-udp-segmentation": True}),
        ("K", "v1", {"tx-scatter-gather": True}),
    )),
    ("v0 rx-gro on, mv0 rx-lro on", (("K", "v0", {"rx-gro": True}), ("K", "mv0", {"rx-lro": True}))),
    ("mv0 rx-gro off, br0 tx-udp-segmentation off", (
        ("K", "mv0", {"rx-gro": False}),
        ("K", "br0", {"tx-udp-segmentation": False}),
    )),
    ("br0 back on, v1 tx-gso-list on, v3 tx-checksumming off", (
        ("K", "br0", {"tx-udp-segmentation": True}),
        ("K", "v1", {"tx-gso-list": True}),
        ("K", "v3", {"tx-checksum-ip-generic": False, "tx-checksum-sctp": False}),
    )),
    # ethtool's legacy names (vnetlab.ethtool): the same words on both sides, each expanded per device
    ("legacy names: v0 sg off, v2 gro on, v3 tx on", (
        ("K", "v0", {"sg": False}), ("K", "v2", {"gro": True}), ("K", "v3", {"tx": True}),
    )),
    ("legacy names: v0 scatter-gather on, v2 generic-receive-offload off, mv0 gro on", (
        ("K", "v0", {"scatter-gather": True}), ("K", "v2", {"generic-receive-offload": False}),
        ("K", "mv0", {"gro": True}),
    )),
)



@dataclass(frozen=True)
class MirrorRow:
    """One device after one step: the comparison, or why the model could not follow the kernel."""

    step: str
    device: str
    result: Comparison | str

    @property
    def agrees(self) -> bool:
        return not isinstance(self.result, str) and bool(self.result)


def mirror_lab(*, kernel: str | None = None, steps: Iterable[tuple[str, tuple[tuple, ...]]] | None = None,
               fields: Iterable[str] = ("on", "fixed", "wanted")) -> list[MirrorRow]:
    """Build MIRROR_DEVICES in a namespace lab and in the model (``kernel``, default the running kernel's
    profile), apply each step to both, compare every feature."""
    from vnetlab import netdev

    kernel = kernel or running_profile()
    steps = MIRROR_STEPS if steps is None else steps
    rows: list[MirrorRow] = []
    with Lab(tag="mirror") as lab:
        net = netdev.Namespace(kernel=kernel)
        model: dict[str, Any] = {}
        real: dict[str, LiveDevice] = {}
        model["v0"], model["v1"] = net.veth("v0", "v1")
        model["v2"], model["v3"] = net.veth("v2", "v3")
        model["mv0"] = net.macvlan("mv0", lower=model["v0"])
        model["br0"] = net.bridge("br0")
        model["mv1"] = net.macvlan("mv1", lower=model["br0"])
        real["v0"], real["v1"] = lab.veth("v0", "v1")
        real["v2"], real["v3"] = lab.veth("v2", "v3")
        real["mv0"] = lab.macvlan("mv0", lower=real["v0"])
        real["br0"] = lab.bridge("br0")
        real["mv1"] = lab.macvlan("mv1", lower=real["br0"])
        broken: str | None = None
        for label, operations in steps:
            for op in operations:
                if op[0] == "master":
                    lab.set_master(real[op[1]], real[op[2]])
                else:
                    real[op[1]].ethtool_K(op[2])
                if broken is None:
                    try:
                        if op[0] == "master":
                            net.set_master(model[op[1]], model[op[2]])
                        else:
                            model[op[1]].ethtool_K(op[2])
                    except Exception as exc:  # the model refused what the kernel did: every later step fails
                        broken = f"model failed at {label!r}, {op}: {type(exc).__name__}: {exc}"
            for name in MIRROR_DEVICES:
                rows.append(MirrorRow(label, name, broken or compare(model[name], real[name], fields=fields)))
    return rows


# ---------------------------------------------------------------------------------------------------------
# XDP without a compiler
# ---------------------------------------------------------------------------------------------------------

# arch/*/include/uapi/asm/unistd*.h __NR_bpf
_NR_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351, "riscv64": 280}
_BPF_PROG_LOAD = 5  # include/uapi/linux/bpf.h enum bpf_cmd
_BPF_PROG_TYPE_XDP = 6  # include/uapi/linux/bpf.h enum bpf_prog_type
_XDP_PASS = 2  # include/uapi/linux/bpf.h enum xdp_action


def load_xdp_pass() -> int:
    """bpf(BPF_PROG_LOAD) of "r0 = XDP_PASS; exit" (BPF_MOV64_IMM 0xb7, BPF_EXIT 0x95) as an XDP program;
    returns its fd. Needs CAP_BPF (root); raises LiveUnavailable where the syscall is refused."""
    import ctypes
    import struct

    nr = _NR_BPF.get(os.uname().machine)
    if nr is None:
        raise LiveUnavailable(f"no bpf() syscall number known for {os.uname().machine}")
    code = struct.pack("<BBhi", 0xB7, 0, 0, _XDP_PASS) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    insns = ctypes.create_string_buffer(code)
    license_ = ctypes.create_string_buffer(b"GPL")
    # union bpf_attr, BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, log_level, log_size, log_buf,
    # kern_version, prog_flags, prog_name[16]
    attr = ctypes.create_string_buffer(struct.pack(
        "<IIQQIIQII16s", _BPF_PROG_TYPE_XDP, 2, ctypes.addressof(insns), ctypes.addressof(license_), 0, 0, 0, 0, 0,
        b"vnetlab_pass"), 128)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(nr, _BPF_PROG_LOAD, attr, 128)
    if fd < 0:
        err = ctypes.get_errno()
        raise LiveUnavailable(f"bpf(BPF_PROG_LOAD) of an XDP_PASS program failed: {os.strerror(err)}")
    return int(fd)


# ---------------------------------------------------------------------------------------------------------
# UDP_SEGMENT and GRO across a veth pair: the running kernel beside vnetlab.udp / vnetlab.xmit
# ---------------------------------------------------------------------------------------------------------

_SOL_UDP, _UDP_SEGMENT, _UDP_GRO = 17, 103, 104  # include/linux/socket.h, include/uapi/linux/udp.h
_ADDR = {4: ("10.77.0.1", "10.77.0.2", 24), 6: ("fd77::1", "fd77::2", 64)}
_PORT = 9000


@dataclass(frozen=True)
class SideResult:
    """One side of a UDP transfer: the send's errno name (or None), what recvmsg returned (bytes per call and
    the UDP_GRO cmsg, None when absent), and the skbs the receiving veth took in by each path."""

    error: str | None
    sizes: tuple[int, ...] = ()
    gso_sizes: tuple[int | None, ...] = ()
    rx_skbs: int | None = None
    napi_skbs: int | None = None

    def key(self) -> tuple:
        return (self.error, self.sizes, self.gso_sizes, self.rx_skbs, self.napi_skbs)


@dataclass(frozen=True)
class TransferRow:
    """One UDP send across a veth pair, kernel beside model."""

    label: str
    length: int
    gso_size: int
    ip: int
    udp_gro: bool
    kernel: SideResult
    model: SideResult

    @property
    def agrees(self) -> bool:
        return self.kernel.key() == self.model.key()

    def __str__(self) -> str:
        def show(r: SideResult) -> str:
            if r.error:
                return r.error
            calls = len(r.sizes)
            head = f"{calls} recvmsg" + (f" {r.sizes[0]}" + ("..." if calls > 1 else "") if calls else "")
            gso = sorted({g for g in r.gso_sizes if g})
            return (head + (f" gso_size {gso}" if gso else "") +
                    (f", {r.rx_skbs} skb(s) in ({r.napi_skbs} by NAPI)" if r.rx_skbs is not None else ""))

        mark = "agree " if self.agrees else "DIFFER"
        sock = "UDP_GRO" if self.udp_gro else "plain"
        return (f"{mark} {self.label}: IPv{self.ip} {self.length} B, UDP_SEGMENT {self.gso_size}, {sock} receiver: "
                f"kernel {show(self.kernel)} | model {show(self.model)}")


_TABLE_BY = ("send", "receiver")


def _side_text(r: SideResult) -> str:
    """The errno, or "N recv ×first size [gso G], S skb (P NAPI)"."""
    if r.error:
        return r.error
    gso = sorted({g for g in r.gso_sizes if g})
    text = f"{len(r.sizes)} recv" + (f" ×{r.sizes[0]}" if r.sizes else "") + (f" gso {gso[0]}" if gso else "")
    if r.rx_skbs is not None:
        text += f", {r.rx_skbs} skb" + ("" if r.napi_skbs is None else f" ({r.napi_skbs} NAPI)")
    return text


def transfer_table(rows: Iterable[TransferRow], *, by: str = "send") -> str:
    """One line per transfer of :func:`udp_segment_lab`, :func:`veth_gro_lab` or :func:`vxlan_lab`: ``agree``
    or ``DIFFER``, the case, then the running kernel's result beside the model's.

    A result is the send's errno, or the datagrams the receiver read (recvmsg calls × the first one's size, and
    UDP_GRO's gso_size cmsg) and the skbs the receiving veth took in (how many through its NAPI poll).
    ``by``: "send" names each case by its payload and UDP_SEGMENT, "receiver" by the receiver's configuration
    (the row's label, as :func:`veth_gro_lab` varies it).
    """
    if by not in _TABLE_BY:
        raise ValueError(f"by={by!r} must be one of {', '.join(_TABLE_BY)}: name each line by the send (payload "
                         "and UDP_SEGMENT) or by the receiver's configuration")
    lines = [f"{'':6} {by:33} {'kernel':39} model"]
    for r in rows:
        if not isinstance(r, TransferRow):
            raise ValueError(f"rows must hold live.TransferRow (from udp_segment_lab, veth_gro_lab or vxlan_lab), "
                             f"got {type(r).__name__}")
        case = r.label if by == "receiver" else f"{r.length} B, UDP_SEGMENT {r.gso_size}"
        lines.append(f"{'agree' if r.agrees else 'DIFFER':6} {case:33} {_side_text(r.kernel):39} {_side_text(r.model)}")
    return "\n".join(lines)


def _socket_in(netns: str, ip: int) -> Any:
    import socket

    family = socket.AF_INET if ip == 4 else socket.AF_INET6
    return in_netns(netns, lambda: socket.socket(family, socket.SOCK_DGRAM))


def _drain(sock: Any, want_bytes: int, timeout: float = 1.0) -> tuple[list[int], list[int | None]]:
    import select
    import struct

    sizes: list[int] = []
    gsos: list[int | None] = []
    got = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if not ready:
            if got >= want_bytes:
                break
            continue
        data, anc, _flags, _addr = sock.recvmsg(1 << 17, 64)
        gso = None
        for level, kind, value in anc:
            if level == _SOL_UDP and kind == _UDP_GRO:
                gso = struct.unpack("i", value[:4])[0]
        sizes.append(len(data))
        gsos.append(gso)
        got += len(data)
        if got >= want_bytes:
            deadline = min(deadline, time.monotonic() + 0.05)
    return sizes, gsos


@dataclass
class _Pair:
    lab: Lab
    tx_ns: str
    rx_ns: str
    v0: LiveDevice
    v1: LiveDevice
    ip: int


def _udp_pair(lab: Lab, ip: int, mtu: int) -> _Pair:
    """v0 in one namespace, v1 in another, addressed, with permanent neighbours (no ARP/ND while measuring);
    IPv6 off for an IPv4 pair so no router solicitation or MLD report is counted."""
    tx_ns = lab.netns
    rx_ns = lab.add_namespace()
    for ns in (tx_ns, rx_ns):
        if ip == 4:
            lab.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            lab.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        else:
            # no router solicitation, no DAD probe of the link-local address while measuring
            for key, value in (("router_solicitations", "0"), ("accept_ra", "0"), ("accept_dad", "0"),
                               ("dad_transmits", "0")):
                lab.sysctl(ns, f"net.ipv6.conf.default.{key}", value)
            # MLD reports (and their repeats) within a millisecond of each group join, i.e. while the lab is built
            lab.sysctl(ns, "net.ipv6.conf.default.mldv1_unsolicited_report_interval", "1")
            lab.sysctl(ns, "net.ipv6.conf.default.mldv2_unsolicited_report_interval", "1")
    v0, v1 = lab.veth("v0", "v1", peer_netns=rx_ns, up=False)
    for d in (v0, v1):
        lab.set_mtu(d, mtu)
        # no MLD reports (IPv6 joins its solicited-node groups by multicast) in the middle of a measurement
        lab._ip(d.netns, "link", "set", "dev", d.name, "multicast", "off")
    a0, a1, plen = _ADDR[ip]
    lab.addr(v0, f"{a0}/{plen}")
    lab.addr(v1, f"{a1}/{plen}")
    lab.up(v0)
    lab.up(v1)
    lab.neigh(v0, a1, lab.link_json(v1)["address"])
    lab.neigh(v1, a0, lab.link_json(v0)["address"])
    if ip == 6:
        time.sleep(0.1)  # let the last MLD report of the group joins pass before anything is counted
    return _Pair(lab, tx_ns, rx_ns, v0, v1, ip)


def _kernel_transfer(pair: _Pair, length: int, gso_size: int, udp_gro: bool) -> SideResult:
    import socket

    a0, a1, _ = _ADDR[pair.ip]
    rx = _socket_in(pair.rx_ns, pair.ip)
    tx = _socket_in(pair.tx_ns, pair.ip)
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        if udp_gro:
            rx.setsockopt(_SOL_UDP, _UDP_GRO, 1)
        rx.bind((a1, _PORT))
        tx.connect((a1, _PORT))
        if gso_size:
            tx.setsockopt(_SOL_UDP, _UDP_SEGMENT, gso_size)
        rx_before, napi_before = pair.lab.rx_packets(pair.v1), _napi_packets(pair)
        try:
            tx.send(bytes(length))
        except OSError as exc:
            return SideResult(errno.errorcode.get(exc.errno, str(exc.errno)))
        sizes, gsos = _drain(rx, length)
        rx_skbs = pair.lab.rx_packets(pair.v1) - rx_before
        return SideResult(None, tuple(sizes), tuple(gsos), rx_skbs, _napi_packets(pair) - napi_before)
    finally:
        tx.close()
        rx.close()


def _napi_packets(pair: _Pair) -> int:
    stats = pair.lab.ethtool_stats(pair.v1)
    return sum(v for k, v in stats.items() if re.fullmatch(r"rx_queue_\d+_xdp_packets", k))


def _model_transfer(kernel: str, config: Mapping[str, bool], mtu: int, length: int, gso_size: int, ip: int,
                    udp_gro: bool, sender: Mapping[str, bool] | None = None) -> SideResult:
    from vnetlab import netdev, udp

    net = netdev.Namespace(kernel=kernel)
    v0, v1 = net.veth("v0", "v1")
    for d in (v0, v1):
        d.set_mtu(mtu)
    if sender:
        v0.ethtool_K(sender)
    _configure_model_rx(v1, config)
    t = udp.send_over_veth(v0, length, gso_size=gso_size, udp_gro=udp_gro, ip=ip)
    if t.send.error is not None:
        return SideResult(t.send.error)
    assert t.rx is not None and t.recv is not None
    return SideResult(None, t.recv.sizes, t.recv.gso_sizes, len(t.rx.paths),
                      sum(p == "napi" for p in t.rx.paths))


def _rx_settings(config: Mapping[str, bool]) -> dict[str, bool]:
    """The receiving veth's `ethtool -K` for one configuration, the same words for the model and the kernel."""
    settings = {"rx-gro": config.get("gro", False)}
    if config.get("udp_gro_fwd"):
        settings["rx-udp-gro-forwarding"] = True
    if config.get("gro_list"):
        settings["rx-gro-list"] = True
    return settings


def _configure_model_rx(v1: Any, config: Mapping[str, bool]) -> None:
    v1.ethtool_K(_rx_settings(config))
    if config.get("xdp"):
        v1.set_xdp(True)


def _configure_kernel_rx(pair: _Pair, config: Mapping[str, bool]) -> None:
    pair.v1.ethtool_K(_rx_settings(config))
    if config.get("xdp"):
        pair.lab.attach_xdp_pass(pair.v1)


# The kernel's own selftest cases (tools/testing/selftests/net/udpgso.c testcases_v4 / _v6, MTU 1500), as
# (payload length, UDP_SEGMENT) with the IPv4 / IPv6 MSS 1472 / 1452 written out per IP version.
def udp_segment_cases(ip: int = 4, kernel: str | None = None) -> tuple[tuple[int, int], ...]:
    """(length, gso_size) pairs of the selftest for ``ip`` at MTU 1500, with UDP_MAX_SEGMENTS of ``kernel``."""
    from vnetlab import udp

    mss = 1500 - (28 if ip == 4 else 48)
    most = 65535 - 28 if ip == 4 else 65535 + 40 - 48  # ETH_MAX_MTU - hdrs / IP6_MAX_MTU - hdrs
    segs = udp.udp_max_segments(kernel or running_profile())
    return ((1, 0), (mss, 0), (mss + 1, 0), (mss, mss), (mss, mss + 1), (mss + 1, mss + 2), (mss + 1, mss),
            (2 * mss, mss), (2 * mss + 1, mss), (most // mss * mss, mss), (most, mss), (most + 1, mss),
            (1, 1), (2, 1), (5, 2), (segs, 1), (segs + 1, 1))


def udp_segment_lab(cases: Iterable[tuple[int, int]] | None = None, *, ip: int = 4, mtu: int = 1500,
                    udp_gro: bool = False, sender: Mapping[str, bool] | None = None,
                    kernel: str | None = None) -> list[TransferRow]:
    """Each (length, gso_size) sent with a real UDP_SEGMENT socket over a veth pair into a socket in another
    namespace (UDP_GRO set when ``udp_gro``), beside vnetlab.udp for the running kernel's profile.
    ``sender``: ``ethtool -K`` settings of the sending veth first (e.g. {"tx": False}: no checksum offload)."""
    kernel = kernel or running_profile()
    rows = []
    label = "udpgso" + (" " + " ".join(f"{k} {'on' if v else 'off'}" for k, v in sender.items()) if sender else "")
    with Lab(tag="udpgso", timeout=300) as lab:
        pair = _udp_pair(lab, ip, mtu)
        if sender:
            pair.v0.ethtool_K(sender)
        for length, gso in (udp_segment_cases(ip, kernel) if cases is None else cases):
            k = _kernel_transfer(pair, length, gso, udp_gro)
            m = _model_transfer(kernel, {}, mtu, length, gso, ip, udp_gro, sender)
            rows.append(TransferRow(label, length, gso, ip, udp_gro, k, m))
    return rows


# Receive-side configurations of the veth v1 (the receiver): (label, settings)
VETH_GRO_CONFIGS: tuple[tuple[str, Mapping[str, bool]], ...] = (
    ("default (GRO off, no XDP)", {}),
    ("gro on", {"gro": True}),
    ("gro on, rx-udp-gro-forwarding on", {"gro": True, "udp_gro_fwd": True}),
    ("gro on, rx-gro-list on", {"gro": True, "gro_list": True}),
    ("XDP_PASS attached, gro off", {"xdp": True}),
    ("XDP_PASS attached, gro on", {"xdp": True, "gro": True}),
)


def veth_gro_lab(configs: Iterable[tuple[str, Mapping[str, bool]]] | None = None, *, segs: int = 10,
                 gso_size: int = 1400, ip: int = 4, udp_gro: bool = True,
                 kernel: str | None = None) -> list[TransferRow]:
    """A UDP_SEGMENT send of ``segs`` x ``gso_size`` across a veth pair per receive configuration of the
    peer (GRO, rx-udp-gro-forwarding, rx-gro-list, an XDP_PASS program), kernel beside vnetlab: recvmsg calls
    and UDP_GRO cmsg of the receiving socket, and the skbs the peer took in (rx_packets) and by NAPI
    (ethtool -S rx_queue_N_xdp_packets)."""
    kernel = kernel or running_profile()
    rows = []
    for label, config in (VETH_GRO_CONFIGS if configs is None else configs):
        with Lab(tag="vethgro", timeout=120) as lab:
            pair = _udp_pair(lab, ip, 1500)
            _configure_kernel_rx(pair, config)
            time.sleep(0.05)
            k = _kernel_transfer(pair, segs * gso_size, gso_size, udp_gro)
            m = _model_transfer(kernel, config, 1500, segs * gso_size, gso_size, ip, udp_gro)
            rows.append(TransferRow(label, segs * gso_size, gso_size, ip, udp_gro, k, m))
    return rows


def vxlan_lab(lengths: Iterable[tuple[int, int]] = ((14000, 1400), (1400, 0)), *,
              kernel: str | None = None) -> list[TransferRow]:
    """UDP_SEGMENT sends through a vxlan device (vx0 over veth v0, peer v1 with vx1 in another namespace):
    the skbs that cross the veth (v1's rx_packets) and the datagrams the socket behind vx1 reads, kernel
    beside vnetlab (netdev.Namespace.vxlan, xmit.send's encapsulation and hw_enc_features rule)."""
    from vnetlab import netdev, udp

    kernel = kernel or running_profile()
    rows = []
    with Lab(tag="vxlan", timeout=120) as lab:
        pair = _udp_pair(lab, 4, 1500)
        inner = ("10.88.0.1", "10.88.0.2")
        vxs = []
        for dev, local, remote, addr in ((pair.v0, "10.77.0.1", "10.77.0.2", inner[0]),
                                         (pair.v1, "10.77.0.2", "10.77.0.1", inner[1])):
            name = "vx0" if dev is pair.v0 else "vx1"
            lab._ip(str(dev.netns), "link", "add", name, "type", "vxlan", "id", "42", "dstport", "4789", "dev",
                    dev.name, "local", local, "remote", remote)
            vx = lab._register(name, str(dev.netns), "vxlan")
            lab._ip(str(dev.netns), "link", "set", "dev", name, "multicast", "off")
            lab.addr(vx, f"{addr}/24")
            lab.up(vx)
            vxs.append(vx)
        lab.neigh(vxs[0], inner[1], lab.link_json(vxs[1])["address"])
        lab.neigh(vxs[1], inner[0], lab.link_json(vxs[0])["address"])
        for length, gso in lengths:
            import socket

            rx = _socket_in(pair.rx_ns, 4)
            tx = _socket_in(pair.tx_ns, 4)
            try:
                rx.bind((inner[1], _PORT))
                tx.connect((inner[1], _PORT))
                if gso:
                    tx.setsockopt(_SOL_UDP, _UDP_SEGMENT, gso)
                before = lab.rx_packets(pair.v1)
                err = None
                try:
                    tx.send(bytes(length))
                except OSError as exc:
                    err = errno.errorcode.get(exc.errno, str(exc.errno))
                sizes, gsos = _drain(rx, 0 if err else length)
                k = SideResult(err, tuple(sizes), tuple(gsos), lab.rx_packets(pair.v1) - before, None)
            finally:
                tx.close()
                rx.close()
            net = netdev.Namespace(kernel=kernel)
            v0, _v1 = net.veth("v0", "v1")
            vx0 = net.vxlan("vx0", vni=42, underlay=v0)
            s = udp.udp_sendmsg(vx0, length, gso_size=gso)
            if s.error or s.tx is None or s.tx.peer_rx is None:
                m = SideResult(s.error)
            else:
                # the socket behind vx1 reads one datagram per segment (a plain socket segments a GSO skb)
                m = SideResult(None, s.datagrams, (None,) * len(s.datagrams), len(s.tx.peer_rx.paths), None)
            rows.append(TransferRow("vxlan over veth", length, gso, 4, False, k, m))
            del socket
    return rows
