"""Read and set a real device's features: ethtool netlink (vnetlab.live.netlink) or the `ethtool` program.

ethtool prints a feature as ``[fixed]`` when it is not in ``hw`` or is in ``nochange``, and
``[requested on|off]`` when wanted and active differ (ethtool netlink/features.c, dump_feature).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vnetlab import ethtool
from vnetlab.checks import public
from vnetlab.errors import ArgumentError, FixedFeatureError, LiveError, LiveUnavailable, UnknownFeatureError
from vnetlab.ethtool import EthtoolK
from vnetlab.live.capability import available
from vnetlab.live.commands import COMMAND_TIMEOUT, check_ifname, check_netns_exists, netns_argv, run
from vnetlab.live.netlink import read_netlink, set_netlink
from vnetlab.live.profile import running_profile


@dataclass(frozen=True, eq=False)
class DeviceFeatures(EthtoolK):
    """All features of one real device (vnetlab.ethtool.EthtoolK) with where they were read: ``netns`` and
    ``source`` ("netlink", "ethtool", or "recorded" for a recorded run's device)."""

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

    @public
    def to_featureset(self, kernel: str | None = None) -> Any:
        """The active features as a ``vnetlab.features.FeatureSet`` for ``kernel`` (default: the modelled
        profile of the running kernel, :func:`running_profile`)."""
        from vnetlab import features

        return features.FeatureSet.from_ethtool({n: s.active for n, s in self.states.items()},
                                                kernel=kernel or running_profile())


@public
def read_ethtool(device: str, netns: str | None) -> DeviceFeatures:
    done = run(netns_argv(netns, ["ethtool", "-k", device]), timeout=COMMAND_TIMEOUT)
    parsed = ethtool.parse_k(done.stdout, device=device)
    return DeviceFeatures(device=parsed.device, states=parsed.states, netns=netns, source="ethtool")


@public
def set_ethtool(device: str, netns: str | None, wanted: Mapping[str, bool]) -> None:
    argv = ["ethtool", "-K", device]
    for name, on in wanted.items():
        argv += [name, "on" if on else "off"]
    done = run(netns_argv(netns, argv), timeout=COMMAND_TIMEOUT, check=False)
    text = done.stdout + done.stderr
    # ethtool exits non-zero when the kernel kept some request off ("Could not change any device features");
    # the caller re-reads and reports that, so only other failures are errors.
    if done.returncode != 0 and "Could not change" not in text and "Actual changes" not in text:
        raise LiveError(f"`{' '.join(netns_argv(netns, argv))}` failed (exit {done.returncode}): {text.strip()}")


# --------------------------------------------------------------------------------------------------------
# Public read / set
# --------------------------------------------------------------------------------------------------------


def _backend(backend: str) -> str:
    if backend not in ("auto", "netlink", "ethtool"):
        raise ArgumentError(f"backend must be 'auto', 'netlink' or 'ethtool', got {backend!r}", param="backend")
    if backend != "auto":
        return backend
    cap = available(labs=False)
    if not cap:
        raise LiveUnavailable(cap.reason)
    assert cap.feature_backend is not None
    return cap.feature_backend


@public
def read_features(device: str, *, netns: str | None = None, backend: str = "auto") -> DeviceFeatures:
    """Every feature of a real device, as ``ethtool -k`` would show it, with wanted and changeable."""
    check_ifname(device, "device")
    check_netns_exists(netns)
    if _backend(backend) == "netlink":
        return DeviceFeatures(device=device, netns=netns, source="netlink", states=read_netlink(device, netns))
    return read_ethtool(device, netns)


@public
def ethtool_k(device: str, *, netns: str | None = None, backend: str = "auto") -> DeviceFeatures:
    """{kernel feature name: FeatureState} for a real device, the type of the model's ``ethtool_k()``."""
    return read_features(device, netns=netns, backend=backend)


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
            lines.append(f"  {name}: {self.after[name]}")
        return "\n".join(lines)


@public
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
        raise ArgumentError("changes: give at least one feature to set", param="changes")
    backend = _backend(backend)
    before = read_features(device, netns=netns, backend=backend)
    wanted: dict[str, bool] = {}
    refused: list[str] = []
    for name, on in changes.items():
        if not isinstance(on, bool):
            raise ArgumentError(f"changes[{name!r}] must be True or False, got {on!r}", param="changes")
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
            set_netlink(device, netns, settable)
        else:
            set_ethtool(device, netns, settable)
    after = read_features(device, netns=netns, backend=backend)
    changed = {
        n: (before[n].active, after[n].active)
        for n in after
        if n in before and before[n].active != after[n].active
    }
    not_applied = tuple(sorted(n for n, on in wanted.items() if after[n].active != on))
    return SetResult(device=device, requested=dict(wanted), changed=changed, not_applied=not_applied, after=after)
