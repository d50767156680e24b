"""The recorded captures shipped in data/live/captures/ (:func:`recorded_capture`), and how they were made
(:func:`record_captures`, as root).

Each recorded experiment is one :func:`~vnetlab.live.capture.capture` run, written five ways: by the workbook's own
tracefs capture in ``perf script`` text form; by ``perf record`` + ``perf script`` and by a bpftrace script, both run
on the same devices during the same send where those tools are installed; and converted from the tracefs capture to
pwru's JSON and to a retis events file (neither tool could be installed here: they say so in their first line).
Every file's header carries the experiment, the device roles, the kernel and the date.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.live.capture import Capture
from vnetlab.live.capture_formats import read_capture, write_capture

__all__ = ["RECORDED", "RECORDED_FORMATS", "BPFTRACE_SCRIPT", "capture_or_recorded", "record_captures",
           "recorded_capture", "recorded_capture_path"]

# (experiment, config, segs): a veth receive with XDP (the copy the model does not make), a vxlan stack, and a
# macvlan over a veth without tx-udp-segmentation (where the GSO skb is cut).
RECORDED = (("veth", "xdp", 4), ("vxlan", "plain", 4), ("macvlan", "nouso", 4))
# format -> file suffix
RECORDED_FORMATS = {"tracefs": "tracefs.txt", "perf": "perf.txt", "bpftrace": "bpftrace.txt",
                    "pwru": "pwru.json", "retis": "retis.json"}
_READ_AS = {"tracefs": "perf", "perf": "perf", "bpftrace": "bpftrace", "pwru": "pwru", "retis": "retis"}
_EVENTS = ("net_dev_start_xmit", "netif_rx_entry", "napi_gro_receive_entry", "netif_receive_skb")

# The bpftrace program (0.17 syntax: no %#x) that prints the net:* events as `EVENT: key=value` lines; DEVICES is
# replaced by the filter on the devices' names.
BPFTRACE_SCRIPT = """\
tracepoint:net:net_dev_start_xmit /DEVICES/ { printf("net_dev_start_xmit: dev=%s len=%u data_len=%u gso_size=%u \
gso_segs=%u gso_type=0x%x\\n", str(args->name), args->len, args->data_len, args->gso_size, args->gso_segs, \
args->gso_type); }
tracepoint:net:netif_rx_entry /DEVICES/ { printf("netif_rx_entry: dev=%s len=%u data_len=%u truesize=%u nr_frags=%u \
gso_size=%u gso_type=0x%x\\n", str(args->name), args->len, args->data_len, args->truesize, args->nr_frags, \
args->gso_size, args->gso_type); }
tracepoint:net:napi_gro_receive_entry /DEVICES/ { printf("napi_gro_receive_entry: dev=%s len=%u data_len=%u \
truesize=%u nr_frags=%u gso_size=%u gso_type=0x%x\\n", str(args->name), args->len, args->data_len, args->truesize, \
args->nr_frags, args->gso_size, args->gso_type); }
"""


def _captures_dir() -> Any:
    return resources.files("vnetlab.data").joinpath("live").joinpath("captures")


@public
def recorded_capture_path(format: str = "tracefs", experiment: str = "veth", config: str = "xdp") -> str:
    """The shipped file of ``experiment`` / ``config`` in ``format`` (one of :data:`RECORDED_FORMATS`)."""
    if format not in RECORDED_FORMATS:
        raise ArgumentError(f"recorded_capture_path: format={format!r} is not one of {', '.join(RECORDED_FORMATS)}",
                            function="live.recorded_capture_path", param="format")
    known = [f"{e}-{c}" for e, c, _ in RECORDED]
    if f"{experiment}-{config}" not in known:
        raise ArgumentError(f"recorded_capture_path: no recorded capture of {experiment}-{config}; recorded: "
                            f"{', '.join(known)}", function="live.recorded_capture_path", param="experiment")
    return str(_captures_dir().joinpath(f"{experiment}-{config}.{RECORDED_FORMATS[format]}"))


def _meta(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        head = fh.read(4096)
    m = re.search(r"vnetlab: ([^\"\n]*)", head)
    if m is None:
        raise ArgumentError(f"{path} has no 'vnetlab: experiment=...' header line", function="live.recorded_capture",
                            param="path")
    return dict(re.findall(r"(\w+)=(\S+)", m[1]))


@public
def recorded_capture(format: str = "tracefs", experiment: str = "veth", config: str = "xdp", *,
                     path: str | None = None) -> Capture:
    """A shipped recording read back as a :class:`~vnetlab.live.capture.Capture`, with the model's skbs for the
    profile of the kernel it was recorded on; ``.label`` says "recorded on KERNEL, DATE (TOOL)"."""
    from vnetlab.live.capture import beside_model

    path = path or recorded_capture_path(format, experiment, config)
    meta = _meta(path)
    c = beside_model(read_capture(path, _READ_AS.get(format, None)), meta.get("experiment", experiment),
                     dict(part.split(":", 1) for part in meta.get("roles", "").split(",") if ":" in part),
                     config=meta.get("config", config), segs=int(meta.get("segs", 4)),
                     gso_size=int(meta.get("gso_size", 1400)), release=meta.get("kernel", ""),
                     label=f"recorded on {meta.get('kernel', '?')}, {meta.get('date', '?')} "
                           f"({meta.get('tool', format)})")
    c.meminfo_rmem = int(meta["meminfo_rmem"]) if meta.get("meminfo_rmem", "").isdigit() else None
    c.counters = {k: int(v) for k, v in (p.split(":") for p in meta.get("counters", "").split(",") if ":" in p)}
    return c


@public
def capture_or_recorded(experiment: str = "veth", config: str = "xdp", *, segs: int = 4,
                        gso_size: int = 1400) -> Capture:
    """:func:`~vnetlab.live.capture.capture` of ``experiment`` / ``config`` where this machine allows it (root,
    tracefs, namespaces), else the shipped recording of the same experiment (:func:`recorded_capture`).
    ``.label`` says which: "captured now on KERNEL, DATE (vnetlab-tracefs)" or "recorded on KERNEL, DATE (TOOL)",
    and for a recording ``.why`` says why nothing was captured here."""
    from vnetlab.errors import LiveUnavailable
    from vnetlab.live.capture import capture

    try:
        c = capture(experiment, config, segs=segs, gso_size=gso_size)
    except LiveUnavailable as exc:
        c = recorded_capture("tracefs", experiment, config)
        c.why = str(exc)
        return c
    c.label = f"captured now on {c.kernel}, {datetime.date.today().isoformat()} (vnetlab-tracefs)"
    c.why = ""
    return c


# ---------------------------------------------------------------------------------------------------------
# Making the recordings (as root, on the machine whose kernel they describe)


@contextlib.contextmanager
def _perf(devices: Sequence[str], data: str) -> Iterator[None]:
    filt = " || ".join(f'name == "{d}"' for d in devices)
    argv = ["perf", "record", "-q", "-a", "-o", data]
    for e in _EVENTS:
        argv += ["-e", f"net:{e}", "--filter", filt]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.5)
    try:
        yield
    finally:
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)


@contextlib.contextmanager
def _bpftrace(devices: Sequence[str], script: str, out: str) -> Iterator[None]:
    cond = " || ".join(f'str(args->name) == "{d}"' for d in devices)
    with open(script, "w") as fh:
        fh.write(BPFTRACE_SCRIPT.replace("DEVICES", cond))
    with open(out, "w") as fh:
        p = subprocess.Popen(["bpftrace", script], stdout=fh, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and p.poll() is None:  # attached once it says so
            with open(out) as check:
                if "Attaching" in check.read():
                    break
            time.sleep(0.2)
        time.sleep(1.0)
        try:
            yield
        finally:
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=60)


def _tool_version(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


@public
def record_captures(directory: str, *, tag: str = "a1b2c3") -> list[str]:
    """As root: run each of :data:`RECORDED` and write its files into ``directory`` (perf and bpftrace where
    installed; both read tracepoints from /sys/kernel/tracing, which is mounted for the run if it is not and
    unmounted after). Returns the files written."""
    import tempfile

    from vnetlab.live.capture import capture

    written = []
    mounted = False
    if not os.path.isdir("/sys/kernel/tracing/events"):
        mounted = subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"]).returncode == 0
    try:
        for n, (experiment, config, segs) in enumerate(RECORDED):
            devtag = tag[:5] + str(n)
            with tempfile.TemporaryDirectory() as tmp:
                tools = []
                have_perf, have_bt = shutil.which("perf"), shutil.which("bpftrace")

                @contextlib.contextmanager
                def around(devices: Sequence[str], tmp: str = tmp, have_perf: str | None = have_perf,
                           have_bt: str | None = have_bt) -> Iterator[None]:
                    with contextlib.ExitStack() as stack:
                        if have_perf:
                            stack.enter_context(_perf(devices, os.path.join(tmp, "perf.data")))
                        if have_bt:
                            stack.enter_context(_bpftrace(devices, os.path.join(tmp, "net.bt"),
                                                          os.path.join(tmp, "bpftrace.out")))
                        yield

                c = capture(experiment, config, segs=segs, tag=devtag, alongside=around)
                date = datetime.date.today().isoformat()
                roles = ",".join(f"{r}:{d}" for r, d in c.roles.items())
                counters = ",".join(f"{r}:{v}" for r, v in c.counters.items())
                meta = (f"experiment={experiment} config={config} segs={segs} gso_size=1400 kernel={c.kernel} "
                        f"date={date} roles={roles} meminfo_rmem={c.meminfo_rmem} counters={counters}")
                base = os.path.join(directory, f"{experiment}-{config}.")
                header = (f"vnetlab: {meta} tool=vnetlab-tracefs\nRecorded by vnetlab's own tracefs capture "
                          "(live.capture) and written in perf script's text form.")
                write_capture(c, base + RECORDED_FORMATS["tracefs"], "perf", header=header)
                written.append(base + RECORDED_FORMATS["tracefs"])
                for fmt, tool in (("pwru", "pwru"), ("retis", "retis")):
                    note = (f"vnetlab: {meta} tool=converted-to-{tool} -- CONVERTED by vnetlab from its tracefs "
                            f"capture into {tool}'s documented format; {tool} itself was not run (not installable "
                            "from Debian, PyPI or npm here, and it needs kprobes, which this kernel lacks)")
                    write_capture(c, base + RECORDED_FORMATS[fmt], fmt, header=note, kernel=c.kernel)
                    written.append(base + RECORDED_FORMATS[fmt])
                if have_perf and os.path.exists(os.path.join(tmp, "perf.data")):
                    text = subprocess.run(["perf", "script", "-i", os.path.join(tmp, "perf.data")],
                                          capture_output=True, text=True, timeout=120).stdout
                    tools.append(("perf", text, _tool_version(["perf", "--version"]),
                                  "perf record -a -e net:EVENT --filter 'name == \"DEV\" || ...' ...; perf script"))
                if have_bt and os.path.exists(os.path.join(tmp, "bpftrace.out")):
                    with open(os.path.join(tmp, "bpftrace.out")) as fh:
                        text = "".join(line for line in fh if not line.startswith("Attaching"))
                    tools.append(("bpftrace", text, _tool_version(["bpftrace", "--version"]),
                                  "bpftrace with live.capture_record.BPFTRACE_SCRIPT"))
                for fmt, text, version, how in tools:
                    with open(base + RECORDED_FORMATS[fmt], "w") as fh:
                        fh.write(f"# vnetlab: {meta} tool={fmt}\n# Recorded by {version} on the same devices "
                                 f"during the same send: {how}\n" + text)
                    written.append(base + RECORDED_FORMATS[fmt])
    finally:
        if mounted:
            subprocess.run(["umount", "/sys/kernel/tracing"])
    return written
