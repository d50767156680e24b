"""Figures of the models (matplotlib), one style for all of them.

Every labelled region of a figure is a matplotlib artist whose ``gid`` is the kernel's name for it
("headroom", "tailroom", "skb_shared_info", "frag0", ...), so tests can find a region and check that the
size drawn is the size the model computed. Submodules are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = frozenset({"style", "memory", "thresholds", "grofig", "stacks", "costfig", "featuregrid", "routerfig",
                         "labfig"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"vnetlab.viz.{name}")
    raise AttributeError(f"module 'vnetlab.viz' has no attribute {name!r}")
