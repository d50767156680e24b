"""A model device's ``ethtool -k`` beside a real device's, feature by feature."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vnetlab.ethtool import FeatureState
from vnetlab.live.device_features import read_features
from vnetlab.live.lab import LiveDevice


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


def model_ethtool_k(model_device: Any, with_wanted: bool) -> dict[str, tuple[bool, ...]]:
    """A model device's ``ethtool_k()``, with its wanted bit as a third item when ``with_wanted``."""
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
    model_k = model_ethtool_k(model_device, with_wanted)
    real = read_features(name, netns=ns, backend=backend)
    kernel_k = {n: (s.active, s.fixed, s.wanted) if with_wanted else (s.active, s.fixed)
                for n, s in real.states.items()}
    label = getattr(model_device, "name", None)
    device = name if label in (None, name) else f"{label} (model) / {name} (kernel)"
    return compare_k(model_k, kernel_k, device=device, fields=fields)


# ---------------------------------------------------------------------------------------------------------
