"""Every exception vnetlab raises, in one place.

Model errors are ValueErrors (bad input: the message names the parameter, its range and what it means in kernel
terms); the live path's are RuntimeErrors (the running kernel or a command failed).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ArgumentError", "TableError", "UnknownKernelError", "UnknownArchError", "UnknownFeatureError", "FixedFeatureError",
    "DeviceError", "LiveError", "LiveUnavailable", "LabTimeout",
]


class ArgumentError(ValueError, TypeError):
    """A public function's argument of the wrong type or outside the kernel's range (vnetlab.checks raises it).

    Both a ValueError (what the models always raised for bad input) and a TypeError (what Python raises for a
    wrong type), so either ``except`` catches it. ``function`` is "module.name" (None from a bare check_* call),
    ``param`` the parameter's name.
    """

    def __init__(self, message: str, *, function: str | None = None, param: str = "") -> None:
        super().__init__(message)
        self.function = function
        self.param = param


class TableError(ValueError):
    """A kernel table in data/ is missing or malformed."""


class UnknownKernelError(ArgumentError):
    """A kernel version the models have no rules for (the message lists the known ones)."""

    def __init__(self, message: str, *, function: str | None = None, param: str = "kernel") -> None:
        super().__init__(message, function=function, param=param)


class UnknownArchError(ArgumentError):
    """An architecture the models have no profile for (the message lists the known ones)."""

    def __init__(self, message: str, *, function: str | None = None, param: str = "arch") -> None:
        super().__init__(message, function=function, param=param)


class UnknownFeatureError(ArgumentError):
    """A feature, mask or ethtool name that the kernel in question does not have (ethtool: "bit name not found")."""

    def __init__(self, message: str, *, function: str | None = None, param: str = "name") -> None:
        super().__init__(message, function=function, param=param)


class FixedFeatureError(ValueError):
    """``ethtool -K`` asked to change a feature that ``ethtool -k`` shows as ``[fixed]`` on that device.

    ``device`` and ``names`` (the ethtool names refused) are kept for callers; ``detail`` adds what stays.
    """

    def __init__(self, device: str, names: Iterable[str], detail: str = "") -> None:
        self.device = device
        self.names = tuple(sorted(names))
        msg = f"{device}: cannot change fixed feature(s): {', '.join(self.names)}"
        super().__init__(f"{msg} ({detail})" if detail else msg)


class DeviceError(ArgumentError):
    """A device operation the kernel would refuse (bad name, bad vid, wrong master type, ...): an ArgumentError, so
    ``param`` names the argument the kernel's -EINVAL / -EEXIST / -EBUSY is about."""


class LiveError(RuntimeError):
    """A command or netlink request against the running kernel failed."""


class LiveUnavailable(LiveError):
    """The live path cannot run here; ``reason`` says why in one readable paragraph."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LabTimeout(LiveError):
    """A namespace lab ran past its time budget; it still deletes what it made on exit."""
