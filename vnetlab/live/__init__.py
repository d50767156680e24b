"""The running kernel beside the model: read and set real devices' features, build namespace labs, compare.

One concern per module:

- :mod:`~vnetlab.live.commands`: running `ip` / `ethtool` with time limits, entering network namespaces;
- :mod:`~vnetlab.live.netlink`: the ethtool netlink FEATURES_GET / SET message (pyroute2, imported lazily);
- :mod:`~vnetlab.live.capability`: what this machine allows (:func:`available`, :func:`require`);
- :mod:`~vnetlab.live.device_features`: a device's features read and set, over netlink or with the `ethtool`
  program when pyroute2 or the netlink family is missing (:func:`read_features`, :func:`set_features`);
- :mod:`~vnetlab.live.xdp`: an XDP_PASS program loaded with bpf() and attached over rtnetlink;
- :mod:`~vnetlab.live.lab`: namespaces and devices (:class:`Lab`);
- :mod:`~vnetlab.live.compare`: model against kernel (:func:`compare`, :func:`compare_k`);
- :mod:`~vnetlab.live.experiments`: :func:`mirror_lab`, :func:`udp_segment_lab`, :func:`veth_gro_lab`,
  :func:`vxlan_lab`;
- :mod:`~vnetlab.live.profile`: the modelled profile of a running kernel (:func:`running_profile`);
- :mod:`~vnetlab.live.userns`: the labs as an ordinary user, in a child's user and network namespaces;
- :mod:`~vnetlab.live.recorded`: recorded runs (data/live/, the lab's data/lab/) to show where labs cannot run,
  and :func:`session`: root, user namespaces or the recorded run, whichever this machine allows.

Nothing here runs at import time and pyroute2 is imported only when the netlink path is used.
"""

from __future__ import annotations

from vnetlab.live.capability import Capability, available, diagnose, require
from vnetlab.live.commands import COMMAND_TIMEOUT, IFNAMSIZ, NETNS_PREFIX, in_netns
from vnetlab.live.compare import Comparison, FeatureDiff, compare, compare_k
from vnetlab.live.device_features import DeviceFeatures, SetResult, ethtool_k, read_features, set_features
from vnetlab.live.experiments import (
    MIRROR_DEVICES,
    MIRROR_STEPS,
    VETH_GRO_CONFIGS,
    VXLAN_RX_CONFIGS,
    MirrorRow,
    SideResult,
    TransferRow,
    bridge_ports,
    mirror_lab,
    mirror_table,
    transfer_table,
    udp_segment_cases,
    udp_segment_lab,
    veth_gro_lab,
    vxlan_lab,
)
from vnetlab.live.lab import Lab, LiveDevice
from vnetlab.live.profile import RunningProfile, match_profile, running_profile
from vnetlab.live.recorded import (
    MODES,
    Reference,
    Session,
    lab_runs,
    lab_runs_table,
    reference,
    references,
    session,
)
from vnetlab.live.userns import userns_error
from vnetlab.live.xdp import attach_xdp_pass, load_xdp_pass

__all__ = [
    "COMMAND_TIMEOUT",
    "IFNAMSIZ",
    "MIRROR_DEVICES",
    "MIRROR_STEPS",
    "MODES",
    "NETNS_PREFIX",
    "VETH_GRO_CONFIGS",
    "Capability",
    "Comparison",
    "DeviceFeatures",
    "FeatureDiff",
    "Lab",
    "LiveDevice",
    "MirrorRow",
    "Reference",
    "RunningProfile",
    "Session",
    "SetResult",
    "SideResult",
    "TransferRow",
    "attach_xdp_pass",
    "available",
    "bridge_ports",
    "compare",
    "compare_k",
    "diagnose",
    "ethtool_k",
    "in_netns",
    "lab_runs",
    "lab_runs_table",
    "load_xdp_pass",
    "match_profile",
    "mirror_lab",
    "mirror_table",
    "read_features",
    "reference",
    "references",
    "require",
    "running_profile",
    "session",
    "set_features",
    "transfer_table",
    "udp_segment_cases",
    "udp_segment_lab",
    "userns_error",
    "veth_gro_lab",
    "VXLAN_RX_CONFIGS",
    "vxlan_lab",
]
from vnetlab.live.btf import BtfLayout, LayoutRow, btf_layout  # noqa: E402

__all__ += ["BtfLayout", "LayoutRow", "btf_layout"]
from vnetlab.live.capture import (  # noqa: E402
    EXPERIMENTS,
    VETH_CONFIGS,
    Capture,
    SkbComparison,
    beside_model,
    capture,
    model_skbs,
)
from vnetlab.live.capture_formats import CapturedSkb, read_capture, write_capture  # noqa: E402
from vnetlab.live.capture_tracefs import TraceSession  # noqa: E402

__all__ += ["EXPERIMENTS", "VETH_CONFIGS", "Capture", "CapturedSkb", "SkbComparison", "TraceSession", "beside_model",
            "capture", "model_skbs", "read_capture", "write_capture"]
from vnetlab.live.capture_record import (  # noqa: E402
    capture_or_recorded,
    record_captures,
    recorded_capture,
    recorded_capture_path,
)

__all__ += ["record_captures", "recorded_capture", "recorded_capture_path"]
__all__ += ["capture_or_recorded"]
