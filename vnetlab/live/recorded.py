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
from vnetlab.errors import ArgumentError
from vnetlab.ethtool import FeatureState
from vnetlab.live.device_features import DeviceFeatures
from vnetlab.live.experiments import (
    MIRROR_DEVICES,
    MIRROR_STEPS,
    MirrorRow,
    SideResult,
    TransferRow,
    mirror_lab,
    mirror_replay,
    model_transfer,
    model_vxlan,
    udp_segment_lab,
    veth_gro_lab,
    vxlan_lab,
)
from vnetlab.live.measure import EXPERIMENTS, TRANSFERS, kernel_doc
from vnetlab.live.profile import RunningProfile, running_profile

__all__ = ["EXPERIMENTS", "MODES", "LabRun", "Reference", "Session", "kernel_doc", "lab_runs", "lab_runs_table",
           "record", "reference", "references", "session"]

def _side(d: Mapping[str, Any]) -> SideResult:
    return SideResult(d["error"], tuple(d["sizes"]), tuple(d["gso_sizes"]), d["rx_skbs"], d["napi_skbs"],
                      d.get("inner_skbs"))


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
        how = "as root" if self.doc.get("privilege", "root") == "root" else "in an ordinary user's namespaces"
        return (f"Linux {self.release} ({self.version}, {self.machine}), recorded {self.recorded[:10]} {how}; "
                f"model profile {self.profile}")

    def recorded_on(self) -> str:
        """"recorded on Linux RELEASE, DATE": what stands beside every table shown from this record."""
        return f"recorded on Linux {self.release}, {self.recorded[:10]}"

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
            raise ArgumentError(f"name={name!r} must be one of {', '.join(TRANSFERS)}", param="name")
        kernel = self.profile
        rows = []
        for r in self.doc["transfers"][name]:
            if name == "vxlan":
                model = model_vxlan(kernel, r["length"], r["gso_size"], r["config"], r["udp_gro"])
                if r["kernel"].get("inner_skbs") is None:  # recorded before vxlan_lab counted vx1: not compared
                    model = dataclasses.replace(model, inner_skbs=None)
            else:
                model = model_transfer(kernel, r["config"], r["mtu"], r["length"], r["gso_size"], r["ip"],
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
    raise ArgumentError(f"release={release!r} has no recorded run; recorded: {', '.join(r.release for r in runs)}",
                        param="release")


# -------------------------------------------------------------------------------------------------------------
# Recording (root, on the kernel to record)
# -------------------------------------------------------------------------------------------------------------


@public
def record(path: str | os.PathLike[str] | None = None) -> Path:
    """Run the four experiments on the running kernel (root) and write their kernel side to ``path``
    (default data/live/<uname -r>.json beside vnetlab.data's tables). Every row must agree with the model:
    a record is a reference, not a bug report."""
    from vnetlab.live.capability import require

    require(labs=True)
    doc = kernel_doc()
    doc.pop("not_run")
    ref = Reference(doc)
    bad = [f"{r.step} / {r.device}" for r in ref.mirror() if not r.agrees]
    bad += [f"{name}: {r.label} {r.length}/{r.gso_size}" for name in TRANSFERS for r in ref.transfers(name)
            if not r.agrees]
    if bad:
        raise RuntimeError("the model disagrees with this kernel, fix that before recording: " + "; ".join(bad))
    if path is None:
        path = Path(str(resources.files("vnetlab.data"))) / "live" / f"{os.uname().release}.json"
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
    """One line per lab kernel: its id, release, the model profile the lab compares it with
    (vnetlab.labkernels.model_kernel: for a Debian image, the profile :func:`running_profile` gives its release; a
    one-patch build's rules follow its patch), the date (Debian's package, or the lab's build), and what agrees."""
    from vnetlab import labkernels

    lines = [f"{'lab kernel':37} {'uname -r':19} {'model':8} {'date':10} agrees with the model"]
    for r in lab_runs():
        model = labkernels.model_kernel(r.kernel).version
        seen = ", ".join(f"{what} {a}/{n}" for what, a, n in r.comparisons) or "-"
        lines.append(f"{r.kernel:37} {r.release:19} {model:8} {r.dated.split()[-1]:10} {seen}")
    return "\n".join(lines)



# -------------------------------------------------------------------------------------------------------------
# This kernel or the recorded run: what notebook 60 runs
# -------------------------------------------------------------------------------------------------------------


_MEASURED_TOGETHER = (("veth_gro", "veth_gro_plain"),)

#: Where notebook 60's experiments run (:attr:`Session.mode`).
MODES = ("root", "userns", "recorded")


@dataclass(frozen=True)
class Session:
    """Where notebook 60's experiments run, and the model profile they are compared with (made by
    :func:`session`). ``mode``: "root" (labs in network namespaces, as root), "userns" (an ordinary user: the labs
    run in a child process's user and network namespaces, :mod:`vnetlab.live.userns`) or "recorded" (neither: the
    recorded run ``ref`` is shown, labelled); ``why`` says in one line why this mode."""

    mode: str
    why: str
    features_here: bool  # this kernel's device features are readable (no root needed for that)
    profile: str
    running: RunningProfile | None  # this kernel's profile, on Linux
    ref: Reference | None  # the recorded run: everything in "recorded" mode, the XDP rows in "userns" mode
    _cache: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def live(self) -> bool:
        """The experiments run on this kernel (as root or in user namespaces)."""
        return self.mode != "recorded"

    @property
    def reason(self) -> str:
        return self.why

    def __str__(self) -> str:
        lines = [self.running.line() if self.running is not None else
                 f"Not Linux ({sys.platform}): no running kernel to ask."]
        if self.mode == "root":
            lines.append(f"Live labs: yes, as root ({self.why.rstrip('.')}). Sections 3-6 run on this kernel.")
        elif self.mode == "userns":
            lines.append(f"Live labs: yes, without root: {self.why.rstrip('.')}. Sections 3-6 run on this kernel.")
        else:
            lines.append(f"Live labs: no. {self.why}")
            ref = self._ref()
            lines.append(f"Sections 3-6 show the run {ref.recorded_on()} as root ({ref.version}, {ref.machine}), "
                         "each table labelled so.")
        # text outputs of the notebooks stay within 100 columns
        return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") for line in lines)

    def _ref(self) -> Reference:
        if self.ref is None:
            raise LookupError("no recorded run in vnetlab.data (data/live/*.json)")
        return self.ref

    def source(self) -> str:
        """The line printed above every table of this session: this kernel and how the labs ran, or
        "recorded on Linux RELEASE, DATE" when the tables come from the recorded run."""
        if self.mode == "recorded":
            return f"[{self._ref().recorded_on()}, as root; not this machine's kernel]"
        release = self.running.release if self.running is not None else os.uname().release
        how = "as root" if self.mode == "root" else f"as uid {os.getuid()} in user and network namespaces"
        return f"[this kernel, Linux {release}, run now {how}]"

    def _userns(self, name: str) -> Reference:
        """The userns child's measurement of ``name`` (once per session), as a record of this kernel."""
        from vnetlab.live.userns import run_experiments

        if name not in self._cache:
            # the two veth GRO tables are printed together: one child measures both
            group = [n for n in _MEASURED_TOGETHER if name in n][0] if any(name in n for n in _MEASURED_TOGETHER) \
                else (name,)
            ref = Reference(run_experiments(group))
            self._cache.update(dict.fromkeys(group, ref))
        return self._cache[name]

    def lo(self) -> DeviceFeatures:
        """The loopback device's features: this kernel's, or the recorded ones."""
        from vnetlab.live.device_features import read_features

        return read_features("lo") if self.features_here else self._ref().lo()

    def mirror(self) -> list[MirrorRow]:
        if self.mode == "root":
            return mirror_lab(kernel=self.profile)
        return (self._userns("mirror") if self.mode == "userns" else self._ref()).mirror()

    @public
    def not_run(self, name: str) -> tuple[str, ...]:
        """The configurations of ``name`` this session could not run here (XDP in user namespaces)."""
        if self.mode != "userns":
            return ()
        return tuple(self._userns(name).doc.get("not_run", {}).get(name, ()))

    @public
    def transfers(self, name: str) -> list[TransferRow]:
        """One of :data:`TRANSFERS`, run as notebook 60 runs it (in user namespaces: without the rows that need
        root, :meth:`not_run`), or its recorded rows."""
        if name not in TRANSFERS:
            raise ArgumentError(f"name={name!r} must be one of {', '.join(TRANSFERS)}", param="name")
        if self.mode == "recorded":
            return self._ref().transfers(name)
        if self.mode == "userns":
            return self._userns(name).transfers(name)
        run = {"udp_segment": lambda: udp_segment_lab(kernel=self.profile),
               "veth_gro": lambda: veth_gro_lab(udp_gro=True, kernel=self.profile),
               "veth_gro_plain": lambda: veth_gro_lab(udp_gro=False, kernel=self.profile),
               "vxlan": lambda: vxlan_lab(kernel=self.profile)}
        return run[name]()

    @public
    def send(self, cases: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> str:
        """:func:`~vnetlab.live.experiments.udp_segment_lab` of your own (length, gso_size) ``cases`` on this kernel
        (as root, or in user namespaces), as a table under :meth:`source`; a recorded session cannot send."""
        from vnetlab.errors import LiveUnavailable
        from vnetlab.live.experiments import transfer_table

        cases = [(c[0], c[1]) for c in cases]
        for length, gso in cases:
            for what, v in (("length", length), ("gso_size", gso)):
                if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 65535:
                    raise ArgumentError(f"cases: {what} {v!r} must be a whole number of bytes in 0..65535 (a UDP "
                                        "payload and UDP_SEGMENT's gso_size)", param="cases")
        if not cases:
            raise ArgumentError("cases: give at least one (length, gso_size) pair", param="cases")
        if self.mode == "recorded":
            raise LiveUnavailable(f"no live labs here, so nothing can be sent: {self.why}")
        if self.mode == "root":
            rows = udp_segment_lab(cases, kernel=self.profile)
        else:
            from vnetlab.live.userns import run_experiments

            rows = Reference(run_experiments(["udp_segment"], cases=cases)).transfers("udp_segment")
        return f"{self.source()}\n{transfer_table(rows)}"

    # what notebook 60 prints: every table with its source line above it ----------------------------------------

    @public
    def table(self, name: str, *, by: str = "send") -> str:
        """:func:`transfer_table` of :meth:`transfers` (``name`` in :data:`TRANSFERS`) or :func:`mirror_table`
        ("mirror"), under :meth:`source`. In user namespaces, rows that need root come from the recorded run,
        each marked ``*`` and named below the table with the reason and "recorded on KERNEL, DATE"."""
        from vnetlab.live.experiments import mirror_table, transfer_table

        if name == "mirror":
            return f"{self.source()}\n{mirror_table(self.mirror())}"
        rows = self.transfers(name)
        text = f"{self.source()}\n{transfer_table(rows, by=by)}"
        missing = self.not_run(name)
        if missing:
            ref = self._ref()
            extra = [dataclasses.replace(r, label=r.label + " *") for r in ref.transfers(name) if r.label in missing]
            why = self._userns(name).doc.get("no_xdp") or "needs root"
            body = transfer_table(extra, by=by).splitlines()[1:]
            text += ("\n" + "\n".join(body) + "\n" + textwrap.fill(
                f"* {ref.recorded_on()}, as root: not run here, an XDP program needs CAP_BPF in the initial user "
                f"namespace ({why})", 100, subsequent_indent="  "))
        return text

    @public
    def features(self, names: tuple[str, ...] | list[str], *, device: str | tuple[str, ...] = "lo",
                 step: str | None = None) -> str:
        """The ``ethtool -k`` lines of ``names`` for ``lo`` (the host's loopback device), or for devices of the
        feature lab (``device``: one name or several) after ``step`` (a label of :data:`MIRROR_STEPS`), under
        :meth:`source`."""
        devices = (device,) if isinstance(device, str) else tuple(device)
        if step is None:
            if devices != ("lo",):
                raise ArgumentError(f"device={device!r}: without a step only the host's lo is read", param="device")
            states: dict[str, Mapping[str, FeatureState]] = {"lo": self.lo()}
            if self.features_here:
                src = f"[this kernel, Linux {os.uname().release}, read now]"
            else:
                src = f"[{self._ref().recorded_on()}, as root; this machine's features are not readable here]"
        else:
            if step not in dict(MIRROR_STEPS):
                raise ArgumentError(f"step={step!r} is not a label of live.MIRROR_STEPS", param="step")
            bad = [d for d in devices if d not in MIRROR_DEVICES]
            if bad or not devices:
                raise ArgumentError(f"device={device!r}: each must be one of {', '.join(MIRROR_DEVICES)}",
                                    param="device")
            rows = {r.device: r.kernel_k for r in self.mirror() if r.step == step}
            states = {d: rows[d] or {} for d in devices}
            src = self.source()
        width = max(map(len, devices))
        lines = [src] + [f"{d:{width}} {n:24} {states[d].get(n, '(absent on this kernel)')}"
                         for d in devices for n in names]
        return "\n".join(lines)

    @public
    def layout(self) -> str:
        """This kernel's struct sizes read from its BTF (:func:`vnetlab.live.btf.btf_layout`, no root needed) beside
        the profile :func:`running_profile` gives it, "your kernel says X, the profile says Y", under a source line;
        where there is no BTF to read, that source line says why."""
        from vnetlab.errors import LiveError
        from vnetlab.live.btf import btf_layout

        if self.running is None:
            return f"[no running Linux kernel here ({sys.platform}): no BTF to read]"
        try:
            layout = btf_layout()
        except LiveError as exc:
            return f"[this kernel, Linux {self.running.release}: {exc}]"
        return f"[this kernel, Linux {self.running.release}, its BTF read now]\n{layout.table(str(self.running))}"

    @public
    def bridge(self) -> str:
        """:func:`~vnetlab.live.experiments.bridge_ports` of :meth:`mirror`, under :meth:`source`."""
        from vnetlab.live.experiments import bridge_ports

        return f"{self.source()}\n{bridge_ports(self.mirror(), kernel=self.profile)}"


@public
def session(mode: str | None = None) -> Session:
    """Where notebook 60 runs: as root when this process can build network namespaces; else, as an ordinary
    user, in user namespaces where the kernel allows them (:func:`vnetlab.live.userns.userns_error`); else the
    newest recorded run, with why. ``mode`` forces one of :data:`MODES` (LiveUnavailable if it cannot run here).
    A kernel older than every profile gets the recorded run: the experiments switch features it may lack."""
    from vnetlab.errors import LiveUnavailable
    from vnetlab.live.capability import available
    from vnetlab.live.userns import userns_error

    if mode is not None and mode not in MODES:
        raise ArgumentError(f"mode={mode!r} must be one of {', '.join(MODES)} (or None: the best this machine allows)",
                            param="mode")
    linux = sys.platform.startswith("linux")
    running = running_profile() if linux else None
    features_here = bool(available(labs=False))
    refs = references()
    ref = refs[-1] if refs else None
    cap = available(labs=True)
    old = running is not None and running.closeness == "older"
    chosen, why = "recorded", cap.reason
    if old:
        why = ("This kernel is older than every modelled profile; the experiments switch features it may not "
               "have.")
    elif mode in (None, "root") and cap:
        chosen, why = "root", cap.reason
    elif mode in (None, "userns") and linux:
        no_userns = userns_error()
        if no_userns is None:
            chosen = "userns"
            why = (f"uid {os.getuid()} builds the labs in user and network namespaces of its own, removed when "
                   "each experiment ends")
        else:
            if os.geteuid() != 0:  # the one thing that could have helped is what refused
                why = f"uid {os.getuid()} is not root, and user namespaces are refused here: {no_userns}."
            else:
                why = f"{cap.reason.rstrip('.')}; and no user namespaces: {no_userns}."
    elif mode == "recorded":
        why = "the recorded run was asked for (session(mode='recorded'))."
    if mode is not None and mode != chosen:
        raise LiveUnavailable(f"session(mode={mode!r}) cannot run here: {why}")
    if chosen == "recorded" and ref is None:
        raise LiveUnavailable(f"no live labs here ({why}) and no recorded run in vnetlab.data (data/live/*.json)")
    if chosen != "recorded":
        assert running is not None
        return Session(chosen, why, features_here, str(running), running, ref)
    assert ref is not None
    return Session("recorded", why, features_here, str(ref.profile), running, ref)
