"""vnetlab: kernel-faithful models of virtio-net's receive buffers, GRO and netdev GSO features.

``import vnetlab`` stays light: submodules (rx, skb, gro, cost, features, netdev, xmit, stack, live, viz,
widgets) are imported on first use, so matplotlib and Jupyter load only when a figure or widget is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from vnetlab.errors import TableError, UnknownArchError, UnknownKernelError
from vnetlab.profiles import Arch, Kernel, arch, kernel, known_arches, known_kernels

__version__ = "0.1.0"

_SUBMODULES = frozenset(
    {"rx", "skb", "gro", "cost", "features", "netdev", "xmit", "live", "viz", "widgets", "tables", "profiles",
     "exercises", "errors", "headers", "ethtool", "segment", "router", "udp", "stack"}
)

__all__ = [
    "Arch",
    "Kernel",
    "TableError",
    "UnknownArchError",
    "UnknownKernelError",
    "arch",
    "kernel",
    "known_arches",
    "known_kernels",
    *sorted(_SUBMODULES),
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"vnetlab.{name}")
    raise AttributeError(f"module 'vnetlab' has no attribute {name!r}")
