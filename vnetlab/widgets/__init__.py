"""ipywidgets panels, one function per panel, each over a plain computation function tested without a frontend.

Imported on first use: ``from vnetlab.widgets import packet_panel``.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("base", "rxpanels", "gropanels", "stackpanels", "explorer")


def __getattr__(name: str) -> Any:  # noqa: ANN401
    if name in _SUBMODULES:
        return importlib.import_module(f"vnetlab.widgets.{name}")
    if not name.startswith("_"):
        for mod in _SUBMODULES:
            try:
                module = importlib.import_module(f"vnetlab.widgets.{mod}")
            except ModuleNotFoundError as exc:
                if exc.name != f"vnetlab.widgets.{mod}":
                    raise
                continue
            if name in getattr(module, "__all__", ()):
                return getattr(module, name)
    raise AttributeError(f"module 'vnetlab.widgets' has no attribute {name!r}")
