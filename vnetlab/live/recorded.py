"""Recorded runs of the live labs, shown beside the model where the labs cannot run (no root, not Linux).

``data/live/<release>.json`` holds the kernel's side of :func:`~vnetlab.live.experiments.mirror_lab`,
:func:`~vnetlab.live.experiments.udp_segment_lab`, :func:`~vnetlab.live.experiments.veth_gro_lab` (a UDP_GRO and a
plain receiver) and :func:`~vnetlab.live.experiments.vxlan_lab` on one kernel, with its ``uname -r``, ``uname -v``,
``uname -m``, the date and how features were read. It is written as root by::

    python -m vnetlab.live record            # data/live/<uname -r>.json

Replaying a record computes the model's side now, for the profile :func:`~vnetlab.live.profile.running_profile`
gives the recorded release, so a change in the model shows against the recorded kernel as it would against a
live one. :func:`lab_runs` lists the lab's QEMU kernels (data/lab/) with their kernel and date, beside the model
the same way (vnetlab.labdata).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vnetlab.checks import public
from vnetlab.ethtool import FeatureState
from vnetlab.live.device_features import DeviceFeatures
from vnetlab.live.experiments import (
    MIRROR_DEVICES,
    MIRROR_STEPS,
    VETH_GRO_CONFIGS,
    VXLAN_RX_CONFIGS,
    MirrorRow,
    SideResult,
    TransferRow,
    _model_transfer,
    _model_vxlan,
    mirror_lab,
    mirror_replay,
    udp_segment_lab,
    veth_gro_lab,
    vxlan_lab,
)
from vnetlab.live.profile import RunningProfile, running_profile

__all__ = ["LabRun", "Reference", "Session", "lab_runs", "lab_runs_table", "record", "reference", "references",
           "session"]

SCHEMA = 1
#: The transfer experiments a record holds, by name: (function, keyword arguments) as notebook 60 runs them.
TRANSFERS = ("udp_segment", "veth_gro", "veth_gro_plain", "vxlan")


def _side(d: Mapping[str, Any]) -> SideResult:
    return SideResult(d["error"], tuple(d["sizes"]), tuple(d["gso_sizes"]), d["rx_skbs"], d["napi_skbs"],
                      d.get("inner_skbs"))


def _side_dict(r: SideResult) -> dict[str, Any]:
    return {"error": r.error, "sizes": list(r.sizes), "gso_sizes": list(r.gso_sizes), "rx_skbs": r.rx_skbs,
            "napi_skbs": r.napi_skbs, "inner_skbs": r.inner_skbs}


@dataclass(frozen=True)
class Reference:
    """One recorded run (a data/live/*.json document)."""

    doc: Mapping[str, Any]

    @property
    def release(self) -> str:
        return str(self.doc["kernel"]["release"])

    @property
    def version(self) -> str:
        return str(self.doc["kernel"]["version"])

    @property
    def machine(self) -> str:
        return str(self.doc["kernel"]["machine"])

    @property
    def recorded(self) -> str:
        return str(self.doc["recorded"])

    @property
    def profile(self) -> RunningProfile:
        """The model profile for the recorded kernel, chosen now (a profile added since is used)."""
        return running_profile(self.release, self.version)

    def label(self) -> str:
        return (f"Linux {self.release} ({self.version}, {self.machine}), recorded {self.recorded[:10]} as root; "
                f"model profile {self.profile}")

    def lo(self) -> DeviceFeatures:
        """The loopback device's features as recorded (the host namespace's ``lo``)."""
        states = {n: FeatureState.parse(text) for n, text in self.doc["lo"].items()}
        return DeviceFeatures(device="lo", states=states, netns=None, source="recorded")

    @public
    def mirror(self, *, fields: tuple[str, ...] = ("on", "fixed", "wanted")) -> list[MirrorRow]:
        """:func:`mirror_lab`'s rows: the recorded kernel beside the model of :attr:`profile`."""
        recorded = []
        for step in self.doc["mirror"]:
            ops = tuple((op[0], op[1], op[2]) if op[0] == "master" else (op[0], op[1], dict(op[2]))
                        for op in step["ops"])
            devices = {d: {n: FeatureState.parse(text) for n, text in step["devices"][d].items()}
                       for d in MIRROR_DEVICES}
            recorded.append((step["step"], ops, devices))
        return mirror_replay(recorded, kernel=self.profile, fields=fields)

    @public
    def transfers(self, name: str) -> list[TransferRow]:
        """The recorded rows of one transfer experiment (:data:`TRANSFERS`), the model's side computed now."""
        if name not in TRANSFERS:
            raise ValueError(f"name={name!r} must be one of {', '.join(TRANSFERS)}")
        kernel = self.profile
        rows = []
        for r in self.doc["transfers"][name]:
            if name == "vxlan":
                model = _model_vxlan(kernel, r["length"], r["gso_size"], r["config"], r["udp_gro"])
                if r["kernel"].get("inner_skbs") is None:  # recorded before vxlan_lab counted vx1: not compared
                    model = dataclasses.replace(model, inner_skbs=None)
            else:
                model = _model_transfer(kernel, r["config"], r["mtu"], r["length"], r["gso_size"], r["ip"],
                                        r["udp_gro"], r["sender"])
            rows.append(TransferRow(r["label"], r["length"], r["gso_size"], r["ip"], r["udp_gro"], _side(r["kernel"]),
                                    model))
        return rows


def _version_key(release: str) -> tuple[int, ...]:
    import re

    return tuple(int(p) for p in re.findall(r"\d+", release)[:3])


def references() -> list[Reference]:
    """Every recorded run shipped in vnetlab.data (data/live/), oldest kernel first."""
    root = resources.files("vnetlab.data").joinpath("live")
    docs = [json.loads(p.read_text()) for p in root.iterdir() if p.name.endswith(".json")] if root.is_dir() else []
    return sorted((Reference(d) for d in docs), key=lambda r: _version_key(r.release))


@public
def reference(release: str | None = None) -> Reference:
    """The recorded run of ``release`` (its ``uname -r``), or the newest kernel's."""
    runs = references()
    if not runs:
        raise LookupError("no recorded run in vnetlab.data (data/live/*.json)")
    if release is None:
        return runs[-1]
    for r in runs:
        if r.release == release:
            return r
    raise ValueError(f"release={release!r} has no recorded run; recorded: {', '.join(r.release for r in runs)}")


# -------------------------------------------------------------------------------------------------------------
# Recording (root, on the kernel to record)
# -------------------------------------------------------------------------------------------------------------


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


@public
def record(path: str | os.PathLike[str] | None = None) -> Path:
    """Run the four experiments on the running kernel (root) and write their kernel side to ``path``
    (default data/live/<uname -r>.json beside vnetlab.data's tables). Every row must agree with the model:
    a record is a reference, not a bug report."""
    from vnetlab.live.capability import require
    from vnetlab.live.device_features import read_features

    cap = require(labs=True)
    uname = os.uname()
    mirror = mirror_lab()
    bad = [f"{r.step} / {r.device}" for r in mirror if not r.agrees]
    steps = []
    for label, ops in MIRROR_STEPS:
        by_dev = {r.device: r.kernel_k for r in mirror if r.step == label}
        steps.append({"step": label, "ops": [list(op) for op in ops],
                      "devices": {d: {n: str(s) for n, s in sorted(by_dev[d].items())}
                                  for d in MIRROR_DEVICES}})
    lo = read_features("lo")
    configs = dict(VETH_GRO_CONFIGS)
    transfers = {
        "udp_segment": _transfer_dicts(udp_segment_lab()),
        "veth_gro": _transfer_dicts(veth_gro_lab(udp_gro=True), configs),
        "veth_gro_plain": _transfer_dicts(veth_gro_lab(udp_gro=False), configs),
        "vxlan": _transfer_dicts(vxlan_lab(), dict(VXLAN_RX_CONFIGS)),
    }
    doc = {
        "schema": SCHEMA,
        "description": "vnetlab.live's experiments on this kernel (notebook 60), the kernel's side only",
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "recorded": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tools": {"feature_backend": cap.feature_backend, "ethtool": _tool_version(["ethtool", "--version"]),
                  "ip": _tool_version(["ip", "-V"]), "python": sys.version.split()[0]},
        "lo": {n: str(s) for n, s in sorted(lo.states.items())},
        "mirror": steps,
        "transfers": transfers,
    }
    ref = Reference(doc)
    bad += [f"{name}: {r.label} {r.length}/{r.gso_size}" for name in TRANSFERS for r in ref.transfers(name)
            if not r.agrees]
    if bad:
        raise RuntimeError("the model disagrees with this kernel, fix that before recording: " + "; ".join(bad))
    if path is None:
        path = Path(str(resources.files("vnetlab.data"))) / "live" / f"{uname.release}.json"
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return out


# -------------------------------------------------------------------------------------------------------------
# The lab's QEMU kernels (data/lab/), labelled with kernel and date
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabRun:
    """One lab kernel's recorded runs: ``agree`` / ``total`` per comparison with the model (vnetlab.labdata)."""

    kernel: str
    release: str
    package: str
    dated: str  # "packaged YYYY-MM-DD" (Debian's image, from uname -v) or "built YYYY-MM-DD" (the lab's build)
    configs: tuple[str, ...]
    comparisons: tuple[tuple[str, int, int], ...]  # (what, agree, total)


def _dated(kernel: Mapping[str, Any]) -> str:
    import re

    proc = str(kernel.get("proc_version", ""))
    m = re.search(r"Debian \S+ \((\d{4}-\d\d-\d\d)\)", proc)
    if m:
        return f"packaged {m[1]}"
    m = re.search(r"(\w{3}) +(\d+) [\d:]+ \w+ (\d{4})$", proc.strip())
    if m:
        month = datetime.datetime.strptime(m[1], "%b").month
        return f"built {m[3]}-{month:02d}-{int(m[2]):02d}"
    return "undated"


def lab_runs() -> list[LabRun]:
    """Every lab kernel of data/lab/ with its kernel, package and date, and how its UDP GSO and NAT router runs
    compare with the model (labdata.gso_rows, labdata.router_rows: the comparisons notebooks 40 and 50 show)."""
    from vnetlab import labdata

    out = []
    router = labdata.router_rows()
    for k in labdata.lab_kernels():
        names = labdata.configs(k)
        doc = labdata.load(names[0], k)["kernel"]
        comparisons = []
        gso = [r for n in names for r in (labdata.gso_rows(n, k) if "gso" in labdata.load(n, k) else [])]
        if gso:
            comparisons.append(("GSO", sum(r.agrees for r in gso), len(gso)))
        nat = [r for r in router if r.kernel == k]
        if nat:
            comparisons.append(("NAT", sum(r.agrees for r in nat), len(nat)))
        out.append(LabRun(k, str(doc.get("uname_r", doc.get("release", "?"))),
                          f"{doc.get('package', '?')} {doc.get('package_version', '')}".strip(), _dated(doc),
                          tuple(names), tuple(comparisons)))
    return out


def lab_runs_table() -> str:
    """One line per lab kernel: its id, release, package and date, and what agrees with the model."""
    lines = [f"{'lab kernel':37} {'uname -r':19} {'date':19} agrees with the model"]
    for r in lab_runs():
        seen = ", ".join(f"{what} {a}/{n}" for what, a, n in r.comparisons) or "-"
        lines.append(f"{r.kernel:37} {r.release:19} {r.dated:19} {seen}")
    return "\n".join(lines)



# -------------------------------------------------------------------------------------------------------------
# This kernel or the recorded run: what notebook 60 runs
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """Where notebook 60's experiments run: on this kernel (``live``) or from the recorded run ``ref``, and the
    model profile they are compared with. Made by :func:`session`."""

    live: bool
    features_here: bool  # this kernel's device features are readable (no root needed for that)
    profile: str
    running: RunningProfile | None  # this kernel's profile, on Linux
    reason: str  # what the live path can or cannot do here
    ref: Reference | None

    def __str__(self) -> str:
        lines = [self.running.line() if self.running is not None else
                 f"Not Linux ({sys.platform}): no running kernel to ask."]
        if self.live:
            lines.append(f"Live labs: yes ({self.reason.rstrip('.')}). Sections 3-6 run on this kernel.")
        else:
            lines.append(f"Live labs: no. {self.reason}")
            assert self.ref is not None
            lines.append(f"Sections 3-6 show the run recorded on {self.ref.label()}.")
        # text outputs of the notebooks stay within 100 columns
        return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") for line in lines)

    def _ref(self) -> Reference:
        assert self.ref is not None
        return self.ref

    def lo(self) -> DeviceFeatures:
        """The loopback device's features: this kernel's, or the recorded ones."""
        from vnetlab.live.device_features import read_features

        return read_features("lo") if self.features_here else self._ref().lo()

    def mirror(self) -> list[MirrorRow]:
        return mirror_lab(kernel=self.profile) if self.live else self._ref().mirror()

    @public
    def transfers(self, name: str) -> list[TransferRow]:
        """One of :data:`TRANSFERS`, run as notebook 60 runs it, or its recorded rows."""
        if not self.live:
            return self._ref().transfers(name)
        run = {"udp_segment": lambda: udp_segment_lab(kernel=self.profile),
               "veth_gro": lambda: veth_gro_lab(udp_gro=True, kernel=self.profile),
               "veth_gro_plain": lambda: veth_gro_lab(udp_gro=False, kernel=self.profile),
               "vxlan": lambda: vxlan_lab(kernel=self.profile)}
        if name not in run:
            raise ValueError(f"name={name!r} must be one of {', '.join(TRANSFERS)}")
        return run[name]()


def session() -> Session:
    """This kernel when the labs can run here and it is not older than every profile (an older kernel lacks
    features the experiments switch); else the newest recorded run, with why."""
    from vnetlab.live.capability import available

    cap = available(labs=True)
    linux = sys.platform.startswith("linux")
    running = running_profile() if linux else None
    features_here = bool(available(labs=False))
    reason = cap.reason
    live = bool(cap)
    if live and running is not None and running.closeness == "older":
        live, reason = False, ("This kernel is older than every modelled profile; the experiments switch features "
                               "it may not have.")
    if live:
        assert running is not None
        return Session(True, features_here, str(running), running, reason, None)
    ref = reference()
    return Session(False, features_here, str(ref.profile), running, reason, ref)
