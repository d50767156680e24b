"""Captured skbs: one type (:class:`CapturedSkb`) read from tracefs, ``perf script``, bpftrace, pwru and retis.

- ftrace / ``perf script`` / bpftrace text: one event a line, ``EVENT: dev=NAME key=value ...`` as the net:*
  tracepoints print themselves (include/trace/events/net.h TP_printk); ``perf script`` prefixes the event with its
  system (``net:net_dev_start_xmit:``), a bpftrace script prints the same ``key=value`` words (see
  data/live/captures/README.md for the one-liner).
- pwru ``--output-json``: one JSON object a line (cilium/pwru internal/pwru/output.go, jsonPrinter): ``func``,
  ``iface``, ``len`` (with --output-meta), ``skb_shared_info`` (--output-shinfo: the BTF dump of struct
  skb_shared_info) and ``skb_metadata`` (--output-skb: the BTF dump of struct sk_buff).
- retis events file (``retis collect -o``): one JSON event a line (retis-org/retis retis-events/src): sections
  ``common`` (timestamp, smp_id), ``kernel`` (symbol, probe_type), ``skb`` with ``dev`` (name), ``meta`` (len,
  data_len) and ``gso`` (frags, size, segs, type); a ``startup`` event names the machine's kernel.

A file the readers do not recognise, or one cut short, raises ArgumentError naming ``path`` / ``format``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from vnetlab.checks import public
from vnetlab.errors import ArgumentError
from vnetlab.skb import SKB_GSO_NAMES

__all__ = ["FORMATS", "CapturedSkb", "gso_type_names", "parse_trace_text", "read_capture", "write_capture"]

FORMATS = ("perf", "bpftrace", "ftrace", "pwru", "retis")

# include/trace/events/net.h records gso_type as a u16: SKB_GSO_UDP_L4 (bit 17) and SKB_GSO_FRAGLIST (bit 18)
# cannot be seen through the tracepoints.
TRACEPOINT_GSO_TYPE_BITS = 16
# The retis version whose event layout write_capture() follows (retis-events/src: skb.dev, skb.meta, skb.gso).
RETIS_FORMAT_VERSION = "1.7.0"

_INT = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")


@public
def gso_type_names(bits: int) -> frozenset[str]:
    """SKB_GSO_* names (without the prefix) of a gso_type value (include/linux/skbuff.h enum skb_gso_type)."""
    # include/linux/skbuff.h enum skb_gso_type: bit i is SKB_GSO_NAMES[i] (live.btf_layout reads any kernel's)
    return frozenset(name for i, name in enumerate(SKB_GSO_NAMES) if bits >> i & 1)


@dataclass(frozen=True)
class CapturedSkb:
    """One skb as a tracepoint, pwru or retis saw it at one place. None: that source does not record the field.

    ``event``: the tracepoint or kernel function ("napi_gro_receive_entry", "net_dev_start_xmit", ...);
    ``dev``: the device; ``len``, ``data_len`` (skb->len, skb->data_len: the linear part is len - data_len);
    ``truesize``; ``nr_frags``, ``gso_size``, ``gso_segs``, ``gso_type`` (the SKB_GSO_* bits as recorded: a
    tracepoint keeps only the low 16, see :data:`TRACEPOINT_GSO_TYPE_BITS`); ``source``: which tool;
    ``fields``: every other field it printed.
    """

    event: str
    dev: str
    len: int
    data_len: int | None = None
    truesize: int | None = None
    nr_frags: int | None = None
    gso_size: int | None = None
    gso_segs: int | None = None
    gso_type: int | None = None
    skbaddr: str | None = None
    time: float | None = None
    source: str = ""
    fields: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def headlen(self) -> int | None:
        """skb_headlen(): the bytes in the linear part."""
        return None if self.data_len is None else self.len - self.data_len

    @property
    def gso_names(self) -> frozenset[str]:
        return gso_type_names(self.gso_type or 0)

    @property
    def gso_type_complete(self) -> bool:
        """False where the source truncates gso_type (the net:* tracepoints' u16)."""
        return self.source not in ("ftrace", "perf", "bpftrace", "tracefs") and not self.source.endswith("-converted")

    def to_json(self) -> dict:
        out = asdict(self)
        out["fields"] = dict(self.fields)
        return out


def _int(text: str) -> int:
    return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)


# ftrace:      "   python-27450   [000] b....  1098.103574: net_dev_start_xmit: dev=vt0 ..."
# perf script: "   python 27450 [000]  1098.103574: net:net_dev_start_xmit: dev=vt0 ..."
# bpftrace:    "net_dev_start_xmit: dev=vt0 len=14042 ..." (what the script prints)
_LINE = re.compile(r"(?:^|\s)(?:(?P<time>\d+\.\d+):\s+)?(?:(?P<system>net):)?(?P<event>[a-z_]+):\s+(?P<rest>dev=\S.*)$")
_KV = re.compile(r"(\w+)=(\S*)")


def _from_kv(event: str, kv: Mapping[str, str], source: str, time: float | None) -> CapturedSkb:
    def get(name: str) -> int | None:
        v = kv.get(name)
        return _int(v) if v is not None and _INT.match(v) else None

    length = get("len")
    if length is None or "dev" not in kv:
        raise ValueError(f"event {event} has no dev= and len=")
    known = {"dev", "len", "data_len", "truesize", "nr_frags", "gso_size", "gso_segs", "gso_type", "skbaddr"}
    return CapturedSkb(event, kv["dev"], length, get("data_len"), get("truesize"), get("nr_frags"), get("gso_size"),
                       get("gso_segs"), get("gso_type"), kv.get("skbaddr"), time, source,
                       {k: v for k, v in kv.items() if k not in known})


@public
def parse_trace_text(text: str, *, source: str = "ftrace", path: str = "<text>") -> list[CapturedSkb]:
    """The net:* events of an ftrace ``trace`` file, a ``perf script`` dump or a bpftrace printout.

    Comment lines (``#``) and lines that are not an event are skipped; a last line cut mid-event (no newline
    and a field without its value) raises ArgumentError: the file is truncated.
    """
    out = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.search(line)
        if m is None:
            continue
        kv = dict(_KV.findall(m["rest"]))
        if number == len(lines) and not text.endswith("\n") and (m["rest"].rstrip().endswith("=") or "len" not in kv):
            raise ArgumentError(f"path: {path} is truncated: its last line ends inside an event ({line.strip()!r})",
                                function="live.read_capture", param="path")
        try:
            out.append(_from_kv(m["event"], kv, source, float(m["time"]) if m["time"] else None))
        except ValueError as exc:
            raise ArgumentError(f"path: {path} line {number}: {exc}", function="live.read_capture",
                                param="path") from None
    return out


_BTF_FIELD = r"\.{name}\s*=\s*\([^)]*\)\s*(-?\d+)"


def _btf_dump_int(text: str | None, name: str) -> int | None:
    """A field of a bpf_snprintf_btf() dump ("(struct sk_buff){ ... .len = (unsigned int)1514, ...}")."""
    if not text:
        return None
    m = re.search(_BTF_FIELD.format(name=name), text)
    return int(m[1]) if m else None


def _pwru(obj: Mapping, n: int, path: str) -> CapturedSkb:
    if "func" not in obj:
        raise ArgumentError(f"path: {path} line {n} is not a pwru event (no \"func\")", function="live.read_capture",
                            param="path")
    skb_dump, shinfo = obj.get("skb_metadata"), obj.get("skb_shared_info")
    length = obj.get("len", _btf_dump_int(skb_dump, "len"))
    if length is None:
        raise ArgumentError(f"path: {path} line {n}: a pwru event without len (run pwru with --output-meta or "
                            "--output-skb)", function="live.read_capture", param="path")
    func = str(obj["func"])
    return CapturedSkb(func, str(obj.get("iface", "")), int(length), _btf_dump_int(skb_dump, "data_len"),
                       _btf_dump_int(skb_dump, "truesize"), _btf_dump_int(shinfo, "nr_frags"),
                       _btf_dump_int(shinfo, "gso_size"), _btf_dump_int(shinfo, "gso_segs"),
                       _btf_dump_int(shinfo, "gso_type"), obj.get("skb"),
                       float(obj["time"]) if isinstance(obj.get("time"), (int, float)) else None, "pwru",
                       {k: str(v) for k, v in obj.items() if k in ("cpu", "process", "netns", "mark", "proto", "mtu")})


def _retis(obj: Mapping, n: int, path: str) -> CapturedSkb | None:
    if "startup" in obj or "skb" not in obj:
        return None
    skb = obj["skb"]
    # the device: a "dev" section (retis 1.7, retis-events/src/dev.rs) or skb.dev (older retis-events skb.rs)
    meta, gso, dev = skb.get("meta") or {}, skb.get("gso") or {}, obj.get("dev") or skb.get("dev") or {}
    if "len" not in meta:
        raise ArgumentError(f"path: {path} line {n}: a retis skb event without skb.meta.len (collect with "
                            "--skb-sections meta,gso,dev)", function="live.read_capture", param="path")
    kernel = obj.get("kernel") or {}
    common = obj.get("common") or {}
    ts = common.get("timestamp")
    symbol = str(kernel.get("symbol", ""))
    return CapturedSkb(symbol.split(":", 1)[-1], str(dev.get("name", "")), int(meta["len"]),
                       meta.get("data_len"), None, gso.get("frags"), gso.get("size"), gso.get("segs"),
                       gso.get("type"), None, ts / 1e9 if isinstance(ts, (int, float)) else None, "retis",
                       {"probe_type": str(kernel.get("probe_type", ""))})


def _apply_note(skbs: list[CapturedSkb], note: str) -> list[CapturedSkb]:
    """A converted file's header: fields its source never recorded become None again, and its source is marked
    converted (a tracepoint's gso_type stays 16 bits wide in any format)."""
    import dataclasses

    unrecorded: dict[str, list[str]] = {}
    m = re.search(r"unrecorded=(\S+)", note)
    if m:
        for part in m[1].split(";"):
            event, _, names = part.partition(":")
            unrecorded[event] = names.split("+")
    converted = "CONVERTED" in note
    out = []
    for s in skbs:
        change: dict[str, object] = {name: None for name in unrecorded.get(s.event, [])}
        if converted:
            change["source"] = f"{s.source}-converted"
        out.append(dataclasses.replace(s, **change) if change else s)
    return out


def _json_lines(text: str, path: str) -> list[tuple[int, dict]]:
    out = []
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            cut = n == len(lines) and not text.endswith("\n")
            raise ArgumentError(f"path: {path} {'is truncated: its last line' if cut else f'line {n}'} is not "
                                f"complete JSON ({exc.msg})", function="live.read_capture", param="path") from None
        if not isinstance(obj, dict):
            raise ArgumentError(f"path: {path} line {n} is JSON but not an event object",
                                function="live.read_capture", param="path")
        out.append((n, obj))
    return out


def _detect(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    if first.lstrip().startswith("{"):
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            return "json?"
        if "vnetlab" in obj:  # a header line of a converted file: look at the next one
            rest = text.split("\n", 1)[1] if "\n" in text else ""
            return _detect(rest)
        if "func" in obj:
            return "pwru"
        if "common" in obj or "startup" in obj or "skb" in obj:
            return "retis"
        return "json?"
    if " net:" in text or re.search(r"^\s*\S+\s+\d+\s+\[\d+\]", text, re.M) and ": net:" in text:
        return "perf"
    if re.search(r"\[\d{3}\]\s+\S{4,5}\s+\d+\.\d+: \w+:", text):
        return "ftrace"
    if re.search(r"^[a-z_]+: dev=", text, re.M):
        return "bpftrace"
    return "unknown"


@public
def read_capture(path: str, format: str | None = None, *, dev: str | None = None) -> list[CapturedSkb]:
    """The captured skbs of a pwru JSON file, a retis events file, a ``perf script`` / bpftrace / ftrace text
    dump of the net:* tracepoints (``format``: one of :data:`FORMATS`, or None to detect it), each a
    :class:`CapturedSkb`; ``dev`` keeps one device's."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"live.read_capture: path must be a file name, got {path!r}", function="live.read_capture",
                            param="path")
    if format is not None and format not in FORMATS:
        raise ArgumentError(f"live.read_capture: format={format!r} is not one of {', '.join(FORMATS)} (or None to "
                            "detect it)", function="live.read_capture", param="format")
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ArgumentError(f"live.read_capture: path {path!r} does not exist", function="live.read_capture",
                            param="path") from None
    except UnicodeDecodeError:
        raise ArgumentError(f"live.read_capture: path {path!r} is not text (a pwru JSON file, a retis events file "
                            "or a perf script / bpftrace text dump)", function="live.read_capture",
                            param="path") from None
    found = _detect(text)
    fmt = format or found
    if fmt not in FORMATS:
        raise ArgumentError(f"live.read_capture: {path} is none of the formats read here ({', '.join(FORMATS)}): "
                            "no pwru or retis JSON event, no net:* tracepoint line", function="live.read_capture",
                            param="path")
    if format is not None and found in FORMATS and {format, found} - {"perf", "bpftrace", "ftrace"} and format != found:
        raise ArgumentError(f"live.read_capture: format={format!r}, but {path} looks like {found}",
                            function="live.read_capture", param="format")
    if fmt in ("pwru", "retis"):
        objs = _json_lines(text, path)
        note = next((str(o.get("vnetlab") or (o.get("startup") or {}).get("cmdline", "")) for _n, o in objs
                     if "vnetlab" in o or "startup" in o), "")
        if fmt == "pwru":
            skbs = [_pwru(o, n, path) for n, o in objs if "vnetlab" not in o]
        else:
            skbs = [s for n, o in objs for s in [_retis(o, n, path)] if s]
        skbs = _apply_note(skbs, note)
    else:
        skbs = parse_trace_text(text, source=fmt, path=path)
    if not skbs:
        raise ArgumentError(f"live.read_capture: {path} holds no skb event of the {fmt} format",
                            function="live.read_capture", param="path")
    if dev is not None:
        names = sorted({s.dev for s in skbs})
        if dev not in names:
            raise ArgumentError(f"live.read_capture: dev={dev!r} is not in {path}; its devices: {', '.join(names)}",
                                function="live.read_capture", param="dev")
        skbs = [s for s in skbs if s.dev == dev]
    return skbs


def _perf_line(s: CapturedSkb, t: float) -> str:
    keys = ["dev"] + [k for k in ("skbaddr",) if s.skbaddr] + list(s.fields)
    values = {"dev": s.dev, "skbaddr": s.skbaddr, **s.fields}
    words = [f"{k}={values[k]}" for k in keys]
    for name in ("len", "data_len", "truesize", "nr_frags", "gso_size", "gso_segs"):
        v = getattr(s, name)
        if v is not None:
            words.append(f"{name}={v}")
    if s.gso_type is not None:
        words.append(f"gso_type={s.gso_type:#x}")
    return f"{'python':>16} {0:>6} [000] {t:12.6f}: net:{s.event}: " + " ".join(words)


def _shinfo_dump(s: CapturedSkb) -> str:
    parts = [f".nr_frags = (__u8){s.nr_frags}" if s.nr_frags is not None else "",
             f".gso_size = (short unsigned int){s.gso_size}" if s.gso_size is not None else "",
             f".gso_segs = (short unsigned int){s.gso_segs}" if s.gso_segs is not None else "",
             f".gso_type = (unsigned int){s.gso_type}" if s.gso_type is not None else ""]
    return "(struct skb_shared_info){" + ",".join(p for p in parts if p) + ",}"


def _skb_dump(s: CapturedSkb) -> str:
    parts = [f".len = (unsigned int){s.len}"]
    if s.data_len is not None:
        parts.append(f".data_len = (unsigned int){s.data_len}")
    if s.truesize is not None:
        parts.append(f".truesize = (unsigned int){s.truesize}")
    return "(struct sk_buff){" + ",".join(parts) + ",}"


@public
def write_capture(skbs: Sequence[CapturedSkb], path: str, format: str, *, header: str = "",
                  kernel: str = "") -> None:
    """Write ``skbs`` as ``format`` ("perf", "pwru" or "retis"), with ``header`` (why and how it was made) as
    comment lines (perf) or a first ``{"vnetlab": ...}`` JSON line (pwru, retis)."""
    if format not in ("perf", "pwru", "retis"):
        raise ArgumentError(f"write_capture: format={format!r} must be perf, pwru or retis",
                            function="live.write_capture", param="format")
    t0 = min((s.time for s in skbs if s.time is not None), default=0.0)
    lines: list[str] = []
    if format != "perf":
        # what the source did not record, so that a reader does not take the format's zeros for measurements
        missing: dict[str, set[str]] = {}
        for s in skbs:
            for name in ("data_len", "truesize", "nr_frags", "gso_size", "gso_segs", "gso_type"):
                if getattr(s, name) is None:
                    missing.setdefault(s.event, set()).add(name)
        if missing:
            header += " unrecorded=" + ";".join(f"{e}:{'+'.join(sorted(f))}" for e, f in sorted(missing.items()))
    if format == "perf":
        lines += [f"# {line}" for line in header.splitlines()]
        lines += [_perf_line(s, s.time if s.time is not None else t0) for s in skbs]
    elif format == "pwru":
        lines.append(json.dumps({"vnetlab": header}))
    else:
        # retis reads the collection's version from a first "startup" event (retis-events compat guess_version)
        lines.append(json.dumps({"startup": {
            "retis_version": RETIS_FORMAT_VERSION, "cmdline": header,
            "clock_monotonic_offset": {"sec": 0, "nsec": 0},
            "machine": {"kernel_release": kernel, "kernel_version": "", "hardware_name": os.uname().machine}}}))
    if format != "perf":
        for s in skbs:
            ns = int(round((s.time or t0) * 1e9))
            if format == "pwru":
                obj = {"skb": s.skbaddr or "0x0", "cpu": 0, "process": "python", "func": s.event, "time": ns,
                       "iface": s.dev, "len": s.len, "skb_shared_info": _shinfo_dump(s),
                       "skb_metadata": _skb_dump(s)}
            else:
                # retis 1.7 (retis-events/src/dev.rs): the device is a section of its own, "dev"
                obj = {"common": {"timestamp": ns, "smp_id": 0},
                       "kernel": {"symbol": f"net:{s.event}", "probe_type": "raw_tracepoint"},
                       "dev": {"name": s.dev, "ifindex": 0},
                       "skb": {
                               # retis-events skb.rs SkbMetaEvent: every field is required
                               "meta": {"len": s.len, "data_len": s.data_len or 0,
                                        "hash": _int(s.fields.get("hash", "0")),
                                        "ip_summed": _int(s.fields.get("ip_summed", "0")), "csum": 0,
                                        "csum_level": 0, "priority": 0},
                               **({"gso": {"flags": 0, "frags": s.nr_frags or 0, "size": s.gso_size or 0,
                                           "segs": s.gso_segs or 0, "type": s.gso_type or 0}}
                                  if s.gso_size is not None or s.nr_frags is not None else {})}}
            lines.append(json.dumps(obj))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


