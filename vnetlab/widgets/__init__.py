"""ipywidgets panels, one function per panel, each over a plain computation function tested without a frontend.

Imported on first use: ``from vnetlab.widgets import buffer_panel``.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = frozenset({"base", "rxpanels", "gropanels", "stackpanels"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"vnetlab.widgets.{name}")
    for mod in ("base", "rxpanels", "gropanels", "stackpanels"):
        try:
            module = importlib.import_module(f"vnetlab.widgets.{mod}")
        except ModuleNotFoundError:
            continue
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module 'vnetlab.widgets' has no attribute {name!r}")
