"""The ethtool generic netlink messages ETHTOOL_MSG_FEATURES_GET / SET, through pyroute2 (imported lazily).

What ``ethtool -k`` shows comes from the kernel's ETHTOOL_MSG_FEATURES_GET reply (net/ethtool/features.c,
features_fill_reply): four bitsets over netdev_features_strings, ``hw`` (dev->hw_features), ``wanted``
(dev->wanted_features), ``active`` (dev->features) and ``nochange`` (NETIF_F_NEVER_CHANGE). The message is
built here because pyroute2 0.9's NlEthtool has no FEATURES_GET. Without pyroute2 vnetlab.live uses the
`ethtool` program instead (vnetlab.live.device_features).
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Mapping
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import LiveError
from vnetlab.ethtool import FeatureState
from vnetlab.live.commands import COMMAND_TIMEOUT, enter_netns, off_event_loop

# include/uapi/linux/ethtool_netlink.h (the generated uapi header from 6.x): message and attribute ids.
_ETHTOOL_GENL_NAME = "ethtool"
_ETHTOOL_GENL_VERSION = 1
_ETHTOOL_MSG_FEATURES_GET = 11
_ETHTOOL_MSG_FEATURES_SET = 12
_ETHTOOL_FLAG_OMIT_REPLY = 1 << 1


def pyroute2_error() -> str | None:
    try:
        import pyroute2.netlink.generic  # noqa: F401
        import pyroute2.netlink.generic.ethtool  # noqa: F401
    except ImportError as exc:
        return f"pyroute2 is not importable: {exc}"
    return None


def netlink_error() -> str | None:
    try:
        off_event_loop(lambda: genl_socket(None).close())
    except Exception as exc:  # any failure here only means "use the fallback"
        return f"the kernel's ethtool generic netlink family did not answer: {exc}"
    return None


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


# include/uapi/linux/netlink.h
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
            enter_netns(netns)
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


@public
def genl_socket(netns: str | None) -> Any:
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


@public
def read_netlink(device: str, netns: str | None) -> dict[str, FeatureState]:
    """{name: FeatureState} of ``device`` from one ETHTOOL_MSG_FEATURES_GET (in ``netns``)."""
    return off_event_loop(lambda: _read_netlink_here(device, netns))


def _read_netlink_here(device: str, netns: str | None) -> dict[str, FeatureState]:
    from pyroute2.netlink import NLM_F_REQUEST

    msg_class = _features_msg_class()
    sock = genl_socket(netns)
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
        # ethtool netlink/features.c dump_feature: [fixed] when not in hw or in nochange
        states[name] = FeatureState(
            bool(index in sets["ACTIVE"] and sets["ACTIVE"][index][1]),
            bool(not in_hw or nochange),
            bool(index in sets["WANTED"] and sets["WANTED"][index][1]),
        )
    return states


@public
def set_netlink(device: str, netns: str | None, wanted: Mapping[str, bool]) -> None:
    off_event_loop(lambda: _set_netlink_here(device, netns, wanted))


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
    sock = genl_socket(netns)
    try:
        list(sock.nlm_request(msg, msg_type=sock.prid, msg_flags=NLM_F_REQUEST | NLM_F_ACK))
    except Exception as exc:
        raise LiveError(_netlink_error_text(exc, device, netns)) from exc
    finally:
        sock.close()


# --------------------------------------------------------------------------------------------------------
# The ethtool program
# --------------------------------------------------------------------------------------------------------
