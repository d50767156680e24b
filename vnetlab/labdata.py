"""Measurements of real kernels (the QEMU lab, see lab/README.md), shown beside the model.

The lab boots Debian's kernels in QEMU with virtio-net NICs: the stock 5.10 (bullseye), 6.1 (bookworm) and
6.12 (bookworm-backports) images, and one-patch pairs built from Debian's source with one small config
(6.1 with and without page_to_skb's build_skb branch; 5.10 with and without 2e4ef10f5850 and the NAT fraglist
fix 3d6df63a5cbe). Each (kernel, configuration) is one file ``data/lab/<kernel>/<config>.json`` (installed as
``vnetlab.data/lab/``), naming the kernel package, version (and for builds the patches, config and compiler)
and the exact QEMU command line.

Each lab kernel is checked against a vnetlab kernel profile (the catalogue vnetlab.labkernels, here
:data:`LAB_KERNELS`): the stock kernels against the profile of that Debian kernel, a one-patch build against its
base profile with the rules its patch changes (:func:`model_kernel`).

    >>> from vnetlab import labdata
    >>> labdata.lab_kernels()                              # doctest: +SKIP
    ['5.10', '6.1', '6.12', '6.1-plain', '6.1-no-build-skb', '5.10-plain', ...]
    >>> print(labdata.rx_table("mergeable", kernel="6.12"))  # doctest: +SKIP
    >>> print(labdata.rx_pair_table((86, 1014, 1472)))     # doctest: +SKIP   seed 1, before/after, one base
    >>> print(labdata.router_table())                      # doctest: +SKIP   seed 2: datagrams intact after NAT
    >>> print(labdata.rate_table())                        # doctest: +SKIP   seed 1's rate under TCG
"""

from __future__ import annotations

import json
import math
import re
import statistics
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from vnetlab import ethtool
from vnetlab.checks import In, UdpPayloadLen, check_choice, public
from vnetlab.errors import ArgumentError
from vnetlab.labkernels import DEFAULT_LAB_KERNEL, KERNELS, LabKernel, lab_kernel, model_kernel
from vnetlab.profiles import Kernel, resolve

if TYPE_CHECKING:  # the models are imported where used: importing labdata stays light
    from vnetlab.netdev import Namespace
    from vnetlab.rx import RxResult
    from vnetlab.xmit import TxResult

#: virtio_net_hdr_to_skb with VIRTIO_NET_HDR_F_NEEDS_CSUM pulls csum_start + csum_offset + 2 bytes into the
#: head: 14 + 20 + 6 + 2 for UDP over IPv4 (include/linux/virtio_net.h, 6.1).
UDP4_CSUM_PULL = 42
#: vnetlab.netdev's virtio_net probe parameter for each VIRTIO_NET_F_* feature it depends on.
PROBE_PARAMS = {"csum": "CSUM", "host_tso4": "HOST_TSO4", "host_tso6": "HOST_TSO6", "host_ecn": "HOST_ECN",
                "ctrl_guest_offloads": "CTRL_GUEST_OFFLOADS", "ctrl_vlan": "CTRL_VLAN"}


# --------------------------------------------------------------------------------------------------
# The lab's kernels and the model profile each one is checked against (the catalogue: vnetlab.labkernels)

#: Every lab kernel and its model (vnetlab.labkernels.KERNELS, the one catalogue).
LAB_KERNELS: Mapping[str, LabKernel] = KERNELS
# a lab kernel id as a parameter's annotation (before=/after=): refused by that parameter's own name
LabKernelId = Literal[tuple(KERNELS)]  # type: ignore[valid-type]


def _lab_kernel(kernel: str) -> LabKernel:
    return lab_kernel(kernel)


def _section(doc: Mapping[str, Any], key: str) -> Any:
    """``doc[key]`` of a lab measurement file; a mapping without it is not one (labdata.load gives them)."""
    if not isinstance(doc, Mapping) or key not in doc:
        have = sorted(doc)[:8] if isinstance(doc, Mapping) else type(doc).__name__
        raise ArgumentError(f"doc must be a lab measurement file (labdata.load) with a {key!r} section, got {have}",
                            param="doc")
    return doc[key]


@public
def model_profile(kernel: str) -> str:
    """The vnetlab profile version a lab kernel is checked against (without its patch's rule changes)."""
    return _lab_kernel(kernel).model


@public
def rule(kernel: str, name: str) -> Any:
    """A kernel rule of a lab kernel (its patch's override if it has one)."""
    return model_kernel(kernel).rule(name)


# --------------------------------------------------------------------------------------------------
# The shipped files

def _root() -> Traversable:
    return resources.files("vnetlab.data").joinpath("lab")


def lab_kernels() -> list[str]:
    """The lab kernels that have shipped measurements, in :data:`LAB_KERNELS` order."""
    root = _root()
    have = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
    return [k for k in LAB_KERNELS if k in have]


def _lab_kernel_id(kernel: str, function: str) -> str:
    """A lab kernel id from the catalogue (labkernels.KERNELS), never a path: "6.1/../5.10" is refused."""
    return check_choice("kernel", kernel, LAB_KERNELS, "a lab kernel (labkernels.KERNELS)", function=function)


@public
def configs(kernel: str = DEFAULT_LAB_KERNEL) -> list[str]:
    """The configurations measured on a lab kernel ([] for a catalogued kernel with none shipped)."""
    d = _root().joinpath(_lab_kernel_id(kernel, "labdata.configs"))
    if not d.is_dir():
        return []
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".json"))


@cache
def _load(kernel: str, name: str) -> str:
    kernel = _lab_kernel_id(kernel, "labdata.load")
    # The name is looked up among the shipped files, never joined as given: no "../" walks out of data/lab.
    shipped = configs(kernel)
    if name not in shipped:
        raise ArgumentError(f"labdata.load: no lab measurement {name!r} for kernel {kernel!r}; shipped: {shipped} "
                            f"(kernels: {lab_kernels()})", function="labdata.load", param="name")
    return _root().joinpath(kernel, f"{name}.json").read_text(encoding="utf-8")


@public
def load(name: str, kernel: str = DEFAULT_LAB_KERNEL) -> dict[str, Any]:
    """The whole measurement file of one configuration on one lab kernel (a fresh copy each call)."""
    return json.loads(_load(kernel, name))


@public
def kernel_of(doc: Mapping[str, Any]) -> str:
    """The lab kernel id a measurement file belongs to."""
    return _section(doc, "kernel").get("id", DEFAULT_LAB_KERNEL)


# --------------------------------------------------------------------------------------------------
# virtio-net as the guest negotiated it

@public
def virtio_features(doc: Mapping[str, Any], nic: str = "eth0") -> frozenset[str]:
    """The VIRTIO_NET_F_* names the guest's driver negotiated on ``nic``."""
    return frozenset(_section(doc, "guest")["virtio_features"][nic]["names"])


@public
def probe_params(doc: Mapping[str, Any], nic: str = "eth0") -> dict[str, bool]:
    """``Namespace.nic(..., driver="virtio_net", **params)`` for the offloads the guest negotiated."""
    f = virtio_features(doc, nic)
    params = {p: bit in f for p, bit in PROBE_PARAMS.items()}
    params["guest_tso"] = bool(f & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"})
    return params


@public
def mode(doc: Mapping[str, Any], nic: str = "eth1") -> str:
    """virtio-net receive mode: mergeable with MRG_RXBUF, big with guest GSO or MTU > 1500, else small."""
    f = virtio_features(doc, nic)
    if "MRG_RXBUF" in f:
        return "mergeable"
    if f & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"} or mtu(doc) > 1500:
        return "big"
    return "small"


@public
def mtu(doc: Mapping[str, Any]) -> int:
    props = _section(doc, "qemu")["device_props"]
    for p in props.split(","):
        if p.startswith("host_mtu="):
            return int(p.split("=", 1)[1])
    return 1500


@public
def hdr_len(doc: Mapping[str, Any], nic: str = "eth1") -> int:
    """virtnet_probe: 12 with MRG_RXBUF or VERSION_1, else 10 (no hash report in these runs)."""
    f = virtio_features(doc, nic)
    return 12 if f & {"MRG_RXBUF", "VERSION_1"} else 10


# --------------------------------------------------------------------------------------------------
# Receive path

@dataclass(frozen=True)
class RxRow:
    """One received packet: what the real kernel did and what vnetlab.rx says for the same input."""

    payload: int
    frame_len: int
    buf_truesize: int | None  # the truesize page_to_skb was passed (None in small mode)
    real_path: str
    real_truesize: int  # skb->truesize at napi_gro_receive
    real_nr_frags: int
    model_path: str
    model_truesize: int
    model_nr_frags: int

    @property
    def agrees(self) -> bool:
        return (self.real_path, self.real_truesize, self.real_nr_frags) == (
            self.model_path, self.model_truesize, self.model_nr_frags)


@public
def model_for_packet(doc: Mapping[str, Any], pkt: Mapping[str, Any], kernel: str | Kernel | None = None
                     ) -> RxResult:
    """vnetlab.rx's RxResult for one measured packet, fed the buffer the real driver used.

    ``kernel``: a lab kernel id or a vnetlab Kernel (default: the file's own lab kernel)."""
    from vnetlab import rx

    k = model_kernel(kernel_of(doc) if kernel is None else kernel) if not isinstance(kernel, Kernel) else kernel
    m = mode(doc)
    hl = hdr_len(doc)
    frame = pkt["frame_len"]
    if m == "small":
        # build_skb's frag_size is the buffer the driver used (7.x page_pool: 1920 or the page's rest, 2176).
        return rx.receive_small(frame, hdr_len=hl, kernel=k, buflen=pkt.get("build_skb_frag_size"))
    if m == "big":
        guest_gso = bool(virtio_features(doc, "eth1") & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"})
        return rx.receive_big(frame, hdr_len=hl, mtu=mtu(doc), guest_gso=guest_gso, kernel=k)
    p2s = pkt["page_to_skb"]
    first = p2s["len"] - hl
    if first == frame:
        return rx.page_to_skb(frame, p2s["truesize"], mode="mergeable", hdr_len=hl, headroom=p2s["headroom"],
                              kernel=k)
    # num_buffers > 1: the ring holds buffers in carve order, so the buffers after the measured first one are
    # the next ones add_recvbuf_mergeable carved from the same page frag (32 KiB; 7.x: a page_pool page), then
    # from a new page, at the EWMA floor -- the state the whole ring was filled in at probe time.
    k, a = resolve(k, "x86_64")
    min_len = rx.mergeable_min_buf_len(mtu=mtu(doc), hdr_len=hl, big_packets=True)
    frag = rx.rx_page_allocator(k, a)
    carved = [rx.carve_mergeable_buffer(frag, 0, min_buf_len=min_len, hdr_len=hl, xdp=False, k=k, a=a)
              for _ in range(2 * frag.size // 1024)]
    start = next((i for i, b in enumerate(carved) if b.page is carved[0].page
                  and b.offset == p2s["offset"] % frag.size and b.truesize == p2s["truesize"]), None)
    if start is None:
        raise ValueError(f"the first buffer (offset {p2s['offset']}, truesize {p2s['truesize']}) is not on the "
                         "model's carve of a page frag at the EWMA floor")
    bufs, need = [], frame + hl
    for b in carved[start:]:
        bufs.append(b)
        need -= b.len
        if need <= 0:
            break
    return rx.receive_mergeable(frame, bufs, hdr_len=hl, kernel=k)


@public
def rx_rows(name: str, kernel: str = DEFAULT_LAB_KERNEL) -> list[RxRow]:
    """Every measured packet of a configuration beside vnetlab.rx's answer for the same frame and buffer."""
    doc = load(name, kernel)
    out = []
    for sent, pkt in zip(_section(doc, "rx")["payload_sizes_sent"], _section(doc, "rx")["packets"]):
        r = model_for_packet(doc, pkt, kernel)
        out.append(RxRow(sent, pkt["frame_len"], pkt.get("page_to_skb", {}).get("truesize"), pkt["path"],
                         pkt["gro"]["truesize"], pkt["gro"]["nr_frags"], r.path, r.skb.truesize, r.skb.nr_frags))
    return out


@public
def rx_table(name: str, payloads: Iterable[int] | None = None, kernel: str = DEFAULT_LAB_KERNEL) -> str:
    """Measured receive paths beside vnetlab.rx for the chosen UDP payloads (all measured ones if None)."""
    all_rows = rx_rows(name, kernel)
    rows = all_rows
    if payloads is not None:
        wanted = set(payloads)
        rows = [r for r in rows if r.payload in wanted]
    lines = [f"{'payload':>7} {'frame':>5} {'buffer':>6}  {'real kernel':27} model"]
    seen = set()
    for r in rows:
        if r in seen:  # the sweep sends each size more than once; identical rows are shown once
            continue
        seen.add(r)
        real = f"{r.real_path} ts {r.real_truesize} frags {r.real_nr_frags}"
        model = f"{r.model_path} ts {r.model_truesize} frags {r.model_nr_frags}"
        lines.append(f"{r.payload:7} {r.frame_len:5} {r.buf_truesize or '-':>6}  {real:27} "
                     f"{model}{'' if r.agrees else '   <- differs'}")
    doc = load(name, kernel)
    lines.append(f"{sum(r.agrees for r in all_rows)} of {len(all_rows)} measured packets agree with the model "
                 f"({doc['kernel']['release']}, {doc['qemu']['accel']})")
    return "\n".join(lines)


@dataclass(frozen=True)
class RxPairRow:
    """One UDP payload on both kernels of a one-patch pair: measured and modelled, before and after."""

    payload: int
    frame_len: int
    before: RxRow
    after: RxRow


@public
def rx_pair_rows(payloads: Iterable[int] | None = None, *, name: str = "mergeable",
                 before: LabKernelId = "6.1-no-build-skb", after: LabKernelId = "6.1-plain") -> list[RxPairRow]:
    """The same payloads received by both kernels of a pair (first measured packet of each size, in the
    EWMA-floor 1536-byte buffer where mergeable): seed 1 before and after on one base."""
    def first_by_payload(kernel: str) -> dict[int, RxRow]:
        out: dict[int, RxRow] = {}
        for r in rx_rows(name, kernel):
            if r.payload not in out or (r.buf_truesize == 1536 and out[r.payload].buf_truesize != 1536):
                out[r.payload] = r
        return out

    b, a = first_by_payload(before), first_by_payload(after)
    keys = sorted(set(b) & set(a)) if payloads is None else [p for p in payloads if p in b and p in a]
    return [RxPairRow(p, a[p].frame_len, b[p], a[p]) for p in keys]


@public
def rx_pair_table(payloads: Iterable[int] | None = (86, 87, 114, 1014, 1162, 1163, 1472), *,
                  name: str = "mergeable", before: LabKernelId = "6.1-no-build-skb",
                  after: LabKernelId = "6.1-plain") -> str:
    """Text table of :func:`rx_pair_rows`: path / truesize / frags measured (and modelled where different)."""
    def cell(r: RxRow) -> str:
        s = f"{r.real_path} ts {r.real_truesize} fr {r.real_nr_frags}"
        return s if r.agrees else s + f" (model {r.model_path} ts {r.model_truesize})"

    rows = rx_pair_rows(payloads, name=name, before=before, after=after)
    lines = [f"{'payload':>7} {'frame':>5}  {before + ' (before)':34} {after + ' (after)'}"]
    for r in rows:
        lines.append(f"{r.payload:7} {r.frame_len:5}  {cell(r.before):34} {cell(r.after)}")
    agree = sum(r.before.agrees and r.after.agrees for r in rows)
    lines.append(f"measured = modelled on both kernels for {agree} of {len(rows)} payloads ({name} mode;")
    lines.append("one Debian 6.1.192 source and config, the build_skb branch the only difference)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# ethtool -k as measured (the data files keep the lines as printed; vnetlab.ethtool maps them)

@public
def stored_state(value: str) -> ethtool.FeatureState:
    """One value of a data file's ``ethtool -k`` record: as ethtool printed it ("off [requested on]", lab/parse.py
    since it keeps requests) or as lab/parse.py stored it before: "on" | "off", + " fixed" for "[fixed]", with
    any "[requested on|off]" dropped."""
    if isinstance(value, str) and value.endswith(" fixed"):
        value = value[: -len(" fixed")] + " [fixed]"
    return ethtool.FeatureState.parse(value)


@public
def requests_recorded(doc: Mapping[str, Any]) -> bool:
    """Whether a file's ``ethtool -k`` records keep ethtool's [requested on|off] (printed values, "[fixed]"
    included); files stored before drop it, so only (on, fixed) of theirs can be compared."""
    return any("[" in str(v) for rec in _section(doc, "features")["ethtool_k"] for v in rec["ethtool_k"].values())


@public
def ethtool_k(doc: Mapping[str, Any], phase: str, step: Annotated[int, In(0, None, "step of the lab script")],
              dev: str) -> ethtool.EthtoolK:
    """The measured ``ethtool -k`` of one device at one step, {kernel feature string: FeatureState} (legacy names
    mapped and summary lines dropped by vnetlab.ethtool on the lab kernel's model profile), the type of the
    model's ``Device.ethtool_k()``; see :func:`requests_recorded` for what an older file lacks."""
    for rec in _section(doc, "features")["ethtool_k"]:
        if (rec["phase"], rec["step"], rec["dev"]) == (phase, step, dev):
            printed = ethtool.normalize_printed(rec["ethtool_k"], kernel=model_kernel(kernel_of(doc)))
            return ethtool.EthtoolK(dev, {name: stored_state(value) for name, value in printed.items()})
    raise KeyError(f"no ethtool -k of {dev} at {phase}.{step}")


# --------------------------------------------------------------------------------------------------
# Where a UDP GSO skb is segmented

@public
def gso_model(doc: Mapping[str, Any], route_dev: str, kernel: str | None = None) -> tuple[Namespace, TxResult]:
    """vnetlab.xmit's TxResult for the lab's UDP_SEGMENT datagram sent through ``route_dev`` on the virtio NIC.

    ``kernel``: a lab kernel id (default: the file's own); its model kernel (profile and patch rules) is used."""
    from vnetlab import xmit
    from vnetlab.netdev import Namespace

    ns = Namespace(kernel=model_kernel(kernel_of(doc) if kernel is None else kernel))
    eth0 = ns.nic("eth0", driver="virtio_net", **probe_params(doc, "eth0"))
    if route_dev == "eth0.10":
        ns.vlan("eth0.10", lower=eth0, vid=10)
    elif route_dev == "mv0":
        ns.macvlan("mv0", lower=eth0)
    elif route_dev == "br0":
        ns.set_master(eth0, ns.bridge("br0"))
    elif route_dev != "eth0":
        raise ArgumentError(f"route_dev={route_dev!r}: the lab sends through eth0, eth0.10, mv0 or br0",
                            param="route_dev")
    gso_size, payload = _section(doc, "gso")["gso_size"], _section(doc, "gso")["payloads"][0]
    skb = xmit.gso_skb(l4="udp", segs=-(-payload // gso_size), gso_size=gso_size)
    return ns, xmit.send(ns[route_dev], skb)


@dataclass(frozen=True)
class GsoRow:
    kernel: str
    route_dev: str
    real: str  # the device(s) whose validate_xmit_skb segmented, or "send failed (EIO)"
    model: str

    @property
    def agrees(self) -> bool:
        return self.real == self.model or (self.real.startswith("send failed") and self.model == "refused")


@public
def gso_rows(name: str = "mergeable", kernel: str = DEFAULT_LAB_KERNEL) -> list[GsoRow]:
    doc = load(name, kernel)
    rows = []
    for case in _section(doc, "gso")["cases"]:
        failed = any(line.startswith("udptool") and "failed=0" not in line for line in case["sender"])
        real = "send failed (EIO)" if failed else (", ".join(case["segmented_at"]) or "nowhere")
        ns, tx = gso_model(doc, case["route_dev"], kernel)
        csum = {"HW_CSUM", "IP_CSUM"} & set(ns[case["route_dev"]].features)
        # net/ipv4/udp.c udp_send_skb: -EIO for a non-CHECKSUM_PARTIAL UDP_SEGMENT skb until v6.11
        refused = rule(kernel, "udp_segment_needs_csum_offload") and not csum
        model = "refused" if refused else (tx.segmented_at or "nowhere")
        rows.append(GsoRow(kernel, case["route_dev"], real, model))
    return rows


@public
def gso_table(name: str = "mergeable", kernel: str = DEFAULT_LAB_KERNEL) -> str:
    """Where the real kernel segmented the lab's UDP GSO datagrams, beside the model, one line per route."""
    lines = [f"{'sent through':13} {'real kernel':14} model"]
    for r in gso_rows(name, kernel):
        lines.append(f"{r.route_dev:13} {r.real:14} {r.model}")
    return "\n".join(lines)


@public
def gso_pair_table(before: LabKernelId = "5.10-plain", after: LabKernelId = "5.10-2e4ef10f5850",
                   name: str = "gso") -> str:
    """Where UDP GSO is segmented on both kernels of the 2e4ef10f5850 pair (seed 2 before/after, one base)."""
    b, a = gso_rows(name, before), gso_rows(name, after)
    lines = [f"{'sent through':13} {before + ' (before)':30} {after + ' (after)'}"]
    for rb, ra in zip(b, a):
        cb = rb.real + ("" if rb.agrees else f" (model {rb.model})")
        ca = ra.real + ("" if ra.agrees else f" (model {ra.model})")
        lines.append(f"{rb.route_dev:13} {cb:30} {ca}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The NAT router: datagrams intact after rx-gro-list + NAT + VLAN

#: The router cases of lab/experiments.py ROUTER_CASES: egress upper/lower and rx-gro-list.
ROUTER_CASES = {"vlan_virtio": ("virtio_net", True), "vlan_veth": ("veth", True),
                "vlan_virtio_nogro": ("virtio_net", False)}
#: The virtio_net offloads QEMU 7.2 negotiates on a tap with vnet_hdr=on (the prediction's assumption
#: before the run; the tests redo it with the features each run recorded).
QEMU_TAP_PARAMS = {"csum": True, "host_tso4": True, "host_tso6": True, "host_ecn": True,
                   "ctrl_guest_offloads": True, "ctrl_vlan": True, "guest_tso": True}


@dataclass(frozen=True)
class RouterCasePrediction:
    case: str
    egress: str  # the lower device under the VLAN: virtio_net or veth
    rx_gro_list: bool
    segmented_at: str | None  # the device whose validate_xmit_skb segments (vnetlab.xmit), None: passed whole
    rx_device: str  # the receiver's VLAN device, where udp_rcv_segment segments a skb that arrived whole
    segmenter: str  # what segments the fraglist skb in the end
    nat_fix: bool  # kernel rule udp_gso_list_nat_fix
    intact_per_gro_skb: int  # datagrams of a full GRO skb that arrive with the translated header
    packets_per_gro_skb: int

    @property
    def ratio(self) -> float:
        return self.intact_per_gro_skb / self.packets_per_gro_skb

    @property
    def trace_segmented_at(self) -> str:
        """Where the lab's __skb_gso_segment kprobe should fire: "dev" on transmit, "dev (rx)" on receive."""
        if not self.rx_gro_list:
            return "nowhere"
        return self.segmented_at or f"{self.rx_device} (rx)"


@dataclass(frozen=True)
class RouterPrediction:
    """The model's answer before the run: N packets per full GRO skb and the datagrams intact per case."""

    kernel: str
    model: str
    payload: int
    count: int
    packets_per_gro_skb: int
    cases: tuple[RouterCasePrediction, ...]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cases"] = list(d["cases"])  # as JSON stores it
        for c, pc in zip(d["cases"], self.cases):
            c["ratio"] = round(pc.ratio, 5)
            c["trace_segmented_at"] = pc.trace_segmented_at
            c["predicted_intact_if_full"] = predicted_intact([self.packets_per_gro_skb] * math.ceil(
                self.count / self.packets_per_gro_skb), pc)
        return d


@public
def packets_per_gro_skb(kernel: str, payload: UdpPayloadLen) -> int:
    """N: packets one fraglist GRO skb holds for a flow of ``payload``-byte UDP datagrams (vnetlab.gro:
    skb_gro_receive_list's 64 KiB cap, UDP_GRO_CNT_MAX), on the lab kernel's model."""
    from vnetlab import gro

    k = model_kernel(kernel)
    skbs = gro.receive_flow(payload, 80, l4="udp", kernel=k)  # the frames as the receive path hands them to GRO
    out = gro.aggregate(skbs, l4="udp", features={"GRO", "GRO_FRAGLIST"}, local_socket=False, kernel=k)
    return gro.gro_segs(out[0])


@public
def router_case_prediction(kernel: str, case: str, packets: Annotated[int, In(1, None, "datagrams per GRO skb")],
                           params: Mapping[str, bool] | None = None, *, payload: UdpPayloadLen) -> RouterCasePrediction:
    """One router case on one lab kernel: vnetlab.netdev + vnetlab.xmit for where the skb is segmented,
    vnetlab.udp for the receiving socket when the VLAN passes it whole, and what the segments carry from
    vnetlab.segment (the kernel's udp_gso_list_nat_fix rule, as in vnetlab.router).

    ``payload``: the UDP payload of each datagram the lab sent (the measurement file's ``router.payload``): the
    fraglist GRO skb's gso_size, as skb_gro_receive_list / udp_gro_complete leave it."""
    from vnetlab import udp, xmit
    from vnetlab.netdev import Namespace

    if case not in ROUTER_CASES:
        raise ArgumentError(f"case={case!r}: one of {', '.join(ROUTER_CASES)}", param="case")
    egress, gro_list = ROUTER_CASES[case]
    k = model_kernel(kernel)
    fix = bool(k.rule("udp_gso_list_nat_fix"))
    rx_device = "eth3.10" if egress == "virtio_net" else "vl1.10"
    if not gro_list:
        # no fraglist GRO: each datagram is routed and NATed on its own (1 per skb)
        return RouterCasePrediction(case, egress, False, None, rx_device, "nothing (no GRO skb)", fix, packets,
                                    packets)
    ns = Namespace(kernel=k)
    if egress == "virtio_net":
        lower = ns.nic("eth2", driver="virtio_net", **dict(params or QEMU_TAP_PARAMS))
    else:
        lower, _peer = ns.veth("vl0", "vl1")
    vlan = ns.vlan(f"{lower.name}.10", lower=lower, vid=10)
    tx = xmit.send(vlan, xmit.gso_skb(segs=packets, gso_size=payload, fraglist=True))  # the devices carry k
    kept = tx.ops.get("kept_header_segs", 0)
    if tx.segmented_at:
        how = next(h.method for h in tx.hops if h.name == tx.segmented_at)
        segmenter = f"{tx.segmented_at} ({how})"
    else:
        # include/linux/udp.h udp_unexpected_gso (Debian 5.10.223, 6.1, 6.12): no plain socket accepts a fraglist
        # skb, so udp_queue_rcv_skb -> udp_rcv_segment -> __udp_gso_segment_list segments it
        recv = udp.udp_recv(tx.peer_rx.delivered if tx.peer_rx else (), kernel=k)
        if not recv.segmented:
            raise ValueError(f"{case} on {kernel}: the GRO skb passed {vlan.name} whole and the receiver did not "
                             "segment it; the lab's trace has no such case")
        kept += recv.kept_headers
        segmenter = "the receiving socket (udp_rcv_segment -> skb_segment_list)"
    return RouterCasePrediction(case, egress, True, tx.segmented_at, rx_device, segmenter, fix, packets - kept,
                                packets)


@public
def router_prediction(kernel: str, payload: UdpPayloadLen = 1472,
                      count: Annotated[int, In(1, None, "datagrams the lab sends")] = 1760) -> RouterPrediction:
    """The model's prediction for the lab's router run on ``kernel``, made before the run."""
    n = packets_per_gro_skb(kernel, payload)
    cases = tuple(router_case_prediction(kernel, c, n, payload=payload) for c in ROUTER_CASES)
    return RouterPrediction(kernel, model_profile(kernel), payload, count, n, cases)


@public
def predicted_intact(gro_skb_segs: Sequence[int], case: RouterCasePrediction) -> int:
    """Datagrams predicted intact for the GRO skbs the router really built (segments per skb)."""
    if not case.rx_gro_list or case.nat_fix:
        return int(sum(gro_skb_segs))
    return sum(1 for _ in gro_skb_segs)  # one intact head per GRO skb, a lone packet is its own head


@public
def gro_skb_segs(case: Mapping[str, Any], payload: UdpPayloadLen) -> list[int]:
    """Packets in each skb the router's eth1 GRO handed up, from the traced skb->len (IP header on):
    the head is 20 + 8 + payload, each frag_list member adds its payload."""
    return [1 + (length - 28 - payload) // payload for length in case["gro_skb_lens"]]


@dataclass(frozen=True)
class RouterRow:
    """One router case on one lab kernel: predicted (before the run) and measured delivery."""

    kernel: str
    case: str
    sent: int
    forwarded: int  # datagrams the router's eth1 received
    gro_skbs: int
    mean_packets_per_gro_skb: float
    segmented_at: str  # devices whose __skb_gso_segment ran (trace; "(rx)": on receive, udp_rcv_segment)
    model_segmented_at: str
    intact: int
    other_source: int
    predicted_intact: int  # for the GRO skbs measured
    predicted_ratio_full: float  # 1/N (or 1) for full GRO skbs, as recorded before the run
    packets_per_gro_skb: int  # N of the prediction

    @property
    def measured_ratio(self) -> float:
        return self.intact / self.forwarded if self.forwarded else float("nan")

    @property
    def agrees(self) -> bool:
        return self.intact == self.predicted_intact and self.segmented_at == self.model_segmented_at


@public
def router_rows(kernels: Iterable[str] | None = None) -> list[RouterRow]:
    """Every measured router case, beside the prediction stored with it and the model for the measured
    GRO skbs."""
    rows = []
    for k in (lab_kernels() if kernels is None else kernels):
        if "router" not in configs(k):
            continue
        doc = load("router", k)
        pred = doc["prediction"]
        by_case = {c["case"]: c for c in pred["cases"]}
        params = probe_params(doc, "eth2") if "eth2" in _section(doc, "guest")["virtio_features"] else None
        for case in doc["router"]["cases"]:
            segs = gro_skb_segs(case, doc["router"]["payload"])
            pc = router_case_prediction(k, case["case"], pred["packets_per_gro_skb"], params,
                                        payload=doc["router"]["payload"])
            forwarded = case["counters_delta"].get("rtr:eth1", {}).get("rx_packets", 0)
            r = case["receiver"]
            rows.append(RouterRow(
                k, case["case"], case["sent"] or 0, forwarded, len(segs),
                round(sum(segs) / len(segs), 2) if segs else 0.0,
                ", ".join(case["segmented_at"]) or "nowhere", pc.trace_segmented_at,
                r.get("intact", 0), r.get("other_source", 0),
                predicted_intact(segs, pc) if segs else forwarded,
                by_case[case["case"]]["ratio"], pred["packets_per_gro_skb"]))
    return rows


@public
def kernel_label(kernel: str) -> str:
    """How the tables name a lab kernel: a stock one by its Debian release ("Debian 5.10.223", never a bare "5.10",
    which in the workbook means mainline v5.10), a built one by its id and what it is."""
    lk = _lab_kernel(kernel)
    if lk.kind == "stock":
        m = re.search(r"\((\d+\.\d+\.\d+)", lk.description)
        return f"Debian {m[1] if m else lk.model} (stock image)"
    # a built kernel is Debian's source of the stock kernel its id starts with (5.10-plain: Debian 5.10.223's)
    base = LAB_KERNELS.get(lk.id.split("-", 1)[0])
    source = kernel_label(base.id).split(" (", 1)[0] + " source, " if base and base.kind == "stock" else ""
    return f"{lk.id} ({source}built): {lk.description}"


@public
def router_table(kernels: Iterable[str] | None = None) -> str:
    """Datagrams arriving intact after the NAT router, measured beside predicted: one block per kernel (its label
    on a line of its own), one row per case, at most 100 columns."""
    head = (f"  {'case':18} {'sent':>5} {'fwd':>5} {'GRO skbs':>8} {'N':>5} {'seg. at':12} {'intact':>6} "
            f"{'pred.':>6} {'ratio':>6} {'pred. 1/N':>9}")
    lines = [head]
    last = None
    for r in router_rows(kernels):
        if r.kernel != last:
            lines.append(textwrap.shorten(kernel_label(r.kernel), width=100, placeholder=" ..."))
            last = r.kernel
        lines.append(f"  {r.case:18} {r.sent:5} {r.forwarded:5} {r.gro_skbs:8} "
                     f"{r.mean_packets_per_gro_skb:5.1f} {r.segmented_at[:12]:12} {r.intact:6} {r.predicted_intact:6} "
                     f"{r.measured_ratio:6.3f} {r.predicted_ratio_full:9.3f}{'' if r.agrees else '  <- differs'}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Seed 1's rate: 1000-byte UDP received per second (and instructions per packet) under TCG

@dataclass(frozen=True)
class RateRow:
    """One kernel's rate runs; medians, since TCG runs on an oversubscribed host have outliers."""

    kernel: str
    config: str  # "rate" (no plugin) or "insn" (TCG instruction counter)
    runs: int
    rx_pps: float  # median over the runs
    rx_pps_runs: tuple[float, ...]
    insn_per_packet: float | None  # median guest instructions on the receiving vCPU per received packet
    insn_per_packet_runs: tuple[float, ...] = ()
    rx_loss: tuple[float, ...] = ()  # share of the sent frames the receiver never got (> 0: receiver saturated)


@public
def rate_rows(kernels: Iterable[str] = ("6.1-no-build-skb", "6.1-plain")) -> list[RateRow]:
    rows = []
    for k in kernels:
        for cfg in ("rate", "insn"):
            if cfg not in configs(k):
                continue
            runs = load(cfg, k)["rate"]["runs"]
            pps = tuple(r["rx_pps"] for r in runs if r["rx_pps"])
            ipp = tuple(r["instructions_per_rx_packet_vcpu1"] for r in runs
                        if r.get("instructions_per_rx_packet_vcpu1"))
            loss = tuple(round(1 - r["rx_packets"] / r["sent"], 3) for r in runs if r.get("sent"))
            rows.append(RateRow(k, cfg, len(runs), statistics.median(pps) if pps else float("nan"), pps,
                                statistics.median(ipp) if ipp else None, ipp, loss))
    return rows


def model_rate_ratio() -> dict[str, float]:
    """vnetlab.cost's pps ratios for the seed's traffic (1000-byte UDP, no socket), calibrated costs:
    6.1 over the lab's 6.1-no-build-skb (the derived profile) and 5.13 over 5.12 (the seed's own pair)."""
    from vnetlab import cost

    c = cost.calibrate().two_param
    t = cost.seed_traffic()

    def pps(k: str | Kernel) -> float:
        if isinstance(k, Kernel):  # op_counts caches by version string; the derived profile needs its rules
            return cost.RxCost(cost.op_counts.__wrapped__(t, k), c).pps
        return cost.rx_cost(t, k, c).pps

    return {"6.1 / 6.1-no-build-skb": pps("6.1") / pps(model_kernel("6.1-no-build-skb")),
            "5.13 / 5.12": pps("5.13") / pps("5.12")}


@public
def rate_table(before: LabKernelId = "6.1-no-build-skb", after: LabKernelId = "6.1-plain") -> str:
    rows = {(r.kernel, r.config): r for r in rate_rows((before, after))}
    lines = [f"{'kernel':18} {'rx pps (TCG)':>13} {'insn/packet':>12}   (medians of the runs)"]
    for k in (before, after):
        r, i = rows.get((k, "rate")), rows.get((k, "insn"))
        lines.append(f"{k:18} {r.rx_pps if r else float('nan'):13.0f} "
                     f"{(i.insn_per_packet or float('nan')) if i else float('nan'):12.0f}")
    m = model_rate_ratio()
    rb, ra = rows.get((before, "rate")), rows.get((after, "rate"))
    ib, ia = rows.get((before, "insn")), rows.get((after, "insn"))
    if rb and ra:
        lines.append(f"measured pps ratio after/before under TCG: {ra.rx_pps / rb.rx_pps:.3f}")
    if ib and ia and ib.insn_per_packet and ia.insn_per_packet:
        lines.append(f"instructions per packet before/after: {ib.insn_per_packet / ia.insn_per_packet:.3f}")
    lines.append(f"model (vnetlab.cost, calibrated): {m['6.1 / 6.1-no-build-skb']:.3f} for this pair, "
                 f"{m['5.13 / 5.12']:.3f} for 5.13/5.12;")
    lines.append("the seed measured 1,158,465 / 956,864 = 1.211")
    return "\n".join(lines)
