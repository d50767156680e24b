"""The kernel's net:* tracepoints through tracefs, in a trace instance of our own (:class:`TraceSession`).

Everything happens in ``instances/vnetlab-<pid>-<n>`` (Documentation/trace/ftrace.rst, "Instances"): the global
trace buffer, its events and its filters are never touched. Each event gets a filter on its ``name`` field (the
device, include/trace/events/net.h) so that only the workbook's own devices are recorded. Leaving the session
(normally, by an exception, Ctrl-C or SIGTERM) disables the events and removes the instance; a tracefs this
process had to mount is unmounted again.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from vnetlab.checks import public
from vnetlab.errors import ArgumentError, LiveError, LiveUnavailable

__all__ = ["NET_EVENTS", "EventFormat", "TraceSession", "find_tracefs", "instance_prefix", "leftover_instances"]

# The net:* events that carry an skb's sizes (include/trace/events/net.h): the receive entries (net_dev_rx_verbose
# _template: len, data_len, truesize, nr_frags, gso_size, gso_type), the transmit one (net_dev_start_xmit: len,
# data_len, gso_size, gso_segs, gso_type) and the ones with len only (netif_receive_skb, net_dev_xmit).
NET_EVENTS = ("napi_gro_receive_entry", "napi_gro_frags_entry", "netif_receive_skb_entry",
              "netif_receive_skb_list_entry", "netif_rx_entry", "netif_receive_skb", "netif_rx",
              "net_dev_start_xmit", "net_dev_xmit")

_MOUNTS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
_LOCK = threading.Lock()
_OPEN: set[str] = set()  # instance directories this process created and has not removed yet
_COUNTER = iter(range(1 << 30))


def instance_prefix() -> str:
    return f"vnetlab-{os.getpid()}-"


@public
def find_tracefs() -> str | None:
    """The directory tracefs is mounted on (with an ``events`` directory), or None."""
    for path in _MOUNTS:
        if os.path.isdir(os.path.join(path, "events")):
            return path
    try:
        with open("/proc/self/mounts") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "tracefs" and os.path.isdir(os.path.join(parts[1], "events")):
                    return parts[1]
    except OSError:
        pass
    return None


@public
def leftover_instances(root: str | None = None) -> list[str]:
    """Trace instances named ``vnetlab-*`` under tracefs (any process's): a clean machine has none."""
    root = root or find_tracefs()
    if root is None or not os.path.isdir(os.path.join(root, "instances")):
        return []
    return sorted(n for n in os.listdir(os.path.join(root, "instances")) if n.startswith("vnetlab-"))


@dataclass(frozen=True)
class EventFormat:
    """One event's fields as its ``format`` file lists them on this kernel: {name: (C type, offset, size)}."""

    system: str
    name: str
    id: int
    fields: dict[str, tuple[str, int, int]] = field(default_factory=dict)

    @classmethod
    @public
    def parse(cls, system: str, name: str, text: str) -> EventFormat:
        m = re.search(r"^ID:\s*(\d+)", text, re.M)
        fields = {}
        for f in re.finditer(r"field:(.+?)\s+(\w+)(\[\d*\])?;\s*offset:(\d+);\s*size:(\d+);", text):
            if not f[2].startswith("common_"):
                fields[f[2]] = (f[1] + (f[3] or ""), int(f[4]), int(f[5]))
        return cls(system, name, int(m[1]) if m else -1, fields)


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _filter_expr(devices: Sequence[str]) -> str:
    # kernel/trace/trace_events_filter.c: a __data_loc char[] field compares with == "string"
    return " || ".join(f'name == "{d}"' for d in devices)


class TraceSession:
    """``with TraceSession(["vt0", "vt1"]) as t: ...; t.text()`` : the net:* events of those devices only.

    Needs root (tracefs is mode 0700). ``events``: names of net:* events (default :data:`NET_EVENTS`, those the
    running kernel has); an event this kernel lacks raises LiveUnavailable naming it.
    """

    @public
    def __init__(self, devices: Sequence[str], events: Sequence[str] | None = None, *,
                 buffer_kb: int = 4096) -> None:
        from vnetlab.live.commands import check_ifname

        devices = list(devices)
        if not devices:
            raise ArgumentError("TraceSession: devices must name at least one device: nothing else is recorded",
                                function="live.TraceSession", param="devices")
        for d in devices:
            check_ifname(d, "devices")
        self.devices = devices
        self.requested = None if events is None else list(events)
        self.buffer_kb = buffer_kb
        self.root: str | None = None
        self.instance: str | None = None
        self.formats: dict[str, EventFormat] = {}
        self._mounted: str | None = None
        self._old_handlers: dict[int, object] = {}

    # -- set-up and tear-down ------------------------------------------------------------------------------

    def _mount(self) -> str:
        root = find_tracefs()
        if root is not None:
            return root
        # Not mounted: mount a private copy (same superblock) and unmount it afterwards; /sys/kernel/tracing
        # and everything else on the machine stay as they were.
        point = tempfile.mkdtemp(prefix="vnetlab-tracefs-")
        done = subprocess.run(["mount", "-t", "tracefs", "nodev", point], capture_output=True, text=True)
        if done.returncode != 0:
            os.rmdir(point)
            raise LiveUnavailable(f"tracefs is not mounted and mounting it failed: {done.stderr.strip()} "
                                  "(tracing needs root and CONFIG_TRACING)")
        self._mounted = point
        return point

    def __enter__(self) -> TraceSession:
        if os.geteuid() != 0:
            raise LiveUnavailable("capturing skbs reads the net:* tracepoints through tracefs, which only root may "
                                  "use; without root, read a recorded capture (live.read_capture)")
        self.root = self._mount()
        try:
            names = self.requested or [e for e in NET_EVENTS if os.path.isdir(self._event_dir(self.root, e))]
            missing = [e for e in names if not os.path.isdir(self._event_dir(self.root, e))]
            if missing or not names:
                raise LiveUnavailable(f"this kernel has no tracepoint net:{', net:'.join(missing or NET_EVENTS)} "
                                      f"(under {self.root}/events/net: CONFIG_TRACEPOINTS and the net events)")
            for e in names:
                with open(os.path.join(self._event_dir(self.root, e), "format")) as fh:
                    self.formats[e] = EventFormat.parse("net", e, fh.read())
                if "name" not in self.formats[e].fields:
                    raise LiveUnavailable(f"net:{e} has no name field on this kernel: it cannot be filtered by device")
            self.instance = os.path.join(self.root, "instances", f"{instance_prefix()}{next(_COUNTER)}")
            with _LOCK:
                _OPEN.add(self.instance)
            os.mkdir(self.instance)
            self._catch_signals()
            _write(os.path.join(self.instance, "buffer_size_kb"), str(self.buffer_kb))
            expr = _filter_expr(self.devices)
            for e in names:
                d = os.path.join(self.instance, "events", "net", e)
                _write(os.path.join(d, "filter"), expr)
                _write(os.path.join(d, "enable"), "1")
            _write(os.path.join(self.instance, "tracing_on"), "1")
        except BaseException:
            self.close()
            raise
        return self

    @staticmethod
    def _event_dir(root: str, event: str) -> str:
        return os.path.join(root, "events", "net", event)

    def _catch_signals(self) -> None:
        # SIGTERM would end the process without running `finally`: turn it into an exception that does.
        if threading.current_thread() is not threading.main_thread():
            return

        def stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt(f"signal {signum}: trace instance removed")

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, stop)
            except (ValueError, OSError):
                pass

    def _restore_signals(self) -> None:
        for sig, handler in self._old_handlers.items():
            try:
                signal.signal(sig, handler)  # type: ignore[arg-type]
            except (ValueError, OSError, TypeError):
                pass
        self._old_handlers.clear()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Disable every event of the instance, remove it, unmount a tracefs we mounted; idempotent."""
        try:
            if self.instance is not None:
                _remove_instance(self.instance)
                self.instance = None
        finally:
            self._restore_signals()
            if self._mounted is not None:
                subprocess.run(["umount", self._mounted], capture_output=True)
                try:
                    os.rmdir(self._mounted)
                except OSError:
                    pass
                self._mounted = None

    # -- reading -------------------------------------------------------------------------------------------

    @public
    def text(self) -> str:
        """The instance's trace so far (the ``trace`` file: ftrace's text, one event a line)."""
        if self.instance is None:
            raise LiveError("the trace session is not open; use `with TraceSession([...]) as t:`")
        with open(os.path.join(self.instance, "trace")) as fh:
            return fh.read()

    @public
    def enabled_events(self) -> list[str]:
        """Events enabled in this instance (its ``set_event``)."""
        if self.instance is None:
            return []
        with open(os.path.join(self.instance, "set_event")) as fh:
            return [line.strip() for line in fh if line.strip()]


def _remove_instance(path: str) -> None:
    if os.path.isdir(path):
        try:
            _write(os.path.join(path, "tracing_on"), "0")
            _write(os.path.join(path, "events", "enable"), "0")
        except OSError:
            pass
        try:
            os.rmdir(path)  # tracefs removes an instance (its buffers, events and filters) with rmdir
        except OSError as exc:
            raise LiveError(f"could not remove trace instance {path}: {exc.strerror}") from None
    with _LOCK:
        _OPEN.discard(path)


@atexit.register
def _remove_leftovers() -> None:
    with _LOCK:
        paths = sorted(_OPEN)
    for path in paths:
        try:
            _remove_instance(path)
        except LiveError:
            pass


