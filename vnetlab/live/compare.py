"""A model device's ``ethtool -k`` beside a real device's, feature by feature."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.ethtool import FeatureState
from vnetlab.live.device_features import read_features
from vnetlab.live.lab import LiveDevice


@dataclass(frozen=True)
class FeatureDiff:
    """One feature where model and kernel disagree: each side's state as ``ethtool -k`` shows it (without the
    request unless "wanted" was compared), or None when that side lacks the feature altogether."""

    name: str
    model: FeatureState | None
    kernel: FeatureState | None

    def __str__(self) -> str:
        def show(v: FeatureState | None) -> str:
            return "(absent)" if v is None else str(v)

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


def _shown(state: FeatureState, fields: tuple[str, ...]) -> FeatureState:
    # without "wanted" the request is not compared, so it is not shown either
    return state if "wanted" in fields else FeatureState(state.on, state.fixed)


@public
def compare_k(
    model_k: Mapping[str, FeatureState | tuple[bool, ...]],
    kernel_k: Mapping[str, FeatureState | tuple[bool, ...]],
    *,
    device: str = "?",
    fields: Iterable[str] = ("on", "fixed"),
) -> Comparison:
    """Compare two ``ethtool_k()`` results, {name: FeatureState} (or (on, fixed) / (on, fixed, wanted) tuples).

    ``fields`` picks what counts: "on", "fixed", "wanted". "wanted" is what ``ethtool -k`` shows as
    ``[requested on|off]``, so it counts only where both sides call the feature changeable; a 2-tuple has no
    request to compare.
    """
    fields = tuple(fields)
    if not fields or any(f not in _FIELDS for f in fields):
        raise ArgumentError(f"fields must be a non-empty subset of {_FIELDS!r}, got {fields!r}", param="fields")
    agreed, diffs = [], []
    for name in sorted(set(model_k) | set(kernel_k)):
        m, k = model_k.get(name), kernel_k.get(name)
        if "wanted" in fields:
            for side, v in (("model_k", m), ("kernel_k", k)):
                if isinstance(v, tuple) and len(v) < 3:
                    raise ValueError(f"{side}[{name!r}] needs (on, fixed, wanted) to compare 'wanted', got {v!r}")
        m = None if m is None else FeatureState.of(m)
        k = None if k is None else FeatureState.of(k)
        same = m is not None and k is not None
        if same and "on" in fields:
            same = m.on == k.on
        if same and "fixed" in fields:
            same = m.fixed == k.fixed
        if same and "wanted" in fields and not m.fixed and not k.fixed:
            same = m.requested == k.requested
        if same:
            agreed.append(name)
        else:
            diffs.append(FeatureDiff(name, None if m is None else _shown(m, fields),
                                     None if k is None else _shown(k, fields)))
    return Comparison(device=device, agreed=tuple(agreed), differences=tuple(diffs), fields=fields)


@public
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
    ``fields`` the requests are compared too (what ``[requested on|off]`` shows).
    """
    if isinstance(real_device, LiveDevice):
        name, ns = real_device.name, real_device.netns if netns is None else netns
    else:
        name, ns = real_device, netns
    model_k = model_device.ethtool_k() if hasattr(model_device, "ethtool_k") else dict(model_device)
    real = read_features(name, netns=ns, backend=backend)
    label = getattr(model_device, "name", None)
    device = name if label in (None, name) else f"{label} (model) / {name} (kernel)"
    return compare_k(model_k, real, device=device, fields=fields)


# ---------------------------------------------------------------------------------------------------------
