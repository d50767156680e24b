"""The kernel's side of notebook 60's experiments, measured here now, as a data/live/*.json document.

Used by ``python -m vnetlab.live record`` (as root, vnetlab.live.recorded) and by the user-namespace child
(vnetlab.live.userns); the model's side is computed when a document is shown (vnetlab.live.recorded.Reference).
"""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Mapping
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.live.experiments import (
    MIRROR_DEVICES,
    MIRROR_STEPS,
    VETH_GRO_CONFIGS,
    VXLAN_RX_CONFIGS,
    SideResult,
    TransferRow,
    mirror_lab,
    udp_segment_lab,
    veth_gro_lab,
    vxlan_lab,
)

__all__ = ["EXPERIMENTS", "SCHEMA", "TRANSFERS", "kernel_doc"]

SCHEMA = 1
#: The transfer experiments a record holds, by name: (function, keyword arguments) as notebook 60 runs them.
TRANSFERS = ("udp_segment", "veth_gro", "veth_gro_plain", "vxlan")


def _side_dict(r: SideResult) -> dict[str, Any]:
    return {"error": r.error, "sizes": list(r.sizes), "gso_sizes": list(r.gso_sizes), "rx_skbs": r.rx_skbs,
            "napi_skbs": r.napi_skbs, "inner_skbs": r.inner_skbs}


def _transfer_dicts(rows: list[TransferRow], configs: Mapping[str, Mapping[str, bool]] | None = None,
                    mtu: int = 1500) -> list[dict[str, Any]]:
    return [{"label": r.label, "length": r.length, "gso_size": r.gso_size, "ip": r.ip, "udp_gro": r.udp_gro,
             "mtu": mtu, "config": dict((configs or {}).get(r.label, {})), "sender": None,
             "kernel": _side_dict(r.kernel)} for r in rows]


def _tool_version(argv: list[str]) -> str:
    import subprocess

    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else ""


#: What a record can hold, by name: the feature steps and the transfer experiments.
EXPERIMENTS = ("mirror", *TRANSFERS)


@public
def kernel_doc(names: list[str] | tuple[str, ...] = EXPERIMENTS, *, xdp: bool = True,
               privilege: str = "root", cases: list[tuple[int, int]] | None = None) -> dict[str, Any]:
    """The kernel's side of the experiments ``names`` (:data:`EXPERIMENTS`) run here now, as a data/live/*.json
    document; ``xdp=False`` leaves out the receive configurations that attach an XDP program (listed under
    ``not_run``); ``privilege`` says how the labs ran ("root", or "userns": an ordinary user's namespaces);
    ``cases``: the (length, gso_size) sends of "udp_segment" (default: the selftest's)."""
    from vnetlab.live.capability import require
    from vnetlab.live.device_features import read_features

    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown or not names:
        raise ArgumentError(f"names={list(names)!r}: each must be one of {', '.join(EXPERIMENTS)}", param="names")
    if privilege not in ("root", "userns"):
        raise ArgumentError(f"privilege={privilege!r} must be 'root' or 'userns'", param="privilege")
    cap = require(labs=True)
    uname = os.uname()
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "description": "vnetlab.live's experiments on this kernel (notebook 60), the kernel's side only",
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "privilege": privilege,
        "tools": {"feature_backend": cap.feature_backend, "ethtool": _tool_version(["ethtool", "--version"]),
                  "ip": _tool_version(["ip", "-V"]), "python": sys.version.split()[0]},
        "lo": {n: str(s) for n, s in sorted(read_features("lo").states.items())},
        "transfers": {},
        "not_run": {},
    }
    if "mirror" in names:
        mirror = mirror_lab()
        steps = []
        for label, ops in MIRROR_STEPS:
            by_dev = {r.device: r.kernel_k for r in mirror if r.step == label}
            steps.append({"step": label, "ops": [list(op) for op in ops],
                          "devices": {d: {n: str(s) for n, s in sorted(by_dev[d].items())}
                                      for d in MIRROR_DEVICES}})
        doc["mirror"] = steps
    veth_configs = [c for c in VETH_GRO_CONFIGS if xdp or not c[1].get("xdp")]
    left_out = [label for label, c in VETH_GRO_CONFIGS if not xdp and c.get("xdp")]
    configs = dict(VETH_GRO_CONFIGS)
    runs = {
        "udp_segment": lambda: _transfer_dicts(udp_segment_lab(cases)),
        "veth_gro": lambda: _transfer_dicts(veth_gro_lab(veth_configs, udp_gro=True), configs),
        "veth_gro_plain": lambda: _transfer_dicts(veth_gro_lab(veth_configs, udp_gro=False), configs),
        "vxlan": lambda: _transfer_dicts(vxlan_lab(), dict(VXLAN_RX_CONFIGS)),
    }
    for name in TRANSFERS:
        if name in names:
            doc["transfers"][name] = runs[name]()
            if name.startswith("veth_gro") and left_out:
                doc["not_run"][name] = left_out
    return doc
