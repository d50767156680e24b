"""Measurements of a real kernel (the lab, see lab/README.md), to show beside the model.

The lab boots Debian's own 6.1 kernel in QEMU with two virtio-net NICs and records, per received packet,
which way virtio_net built the skb (kprobes on page_to_skb, build_skb, __napi_alloc_skb, skb_add_rx_frag and
napi_gro_receive), ``ethtool -k`` of a VLAN, a macvlan and a bridge on the virtio NIC through ``ethtool -K``
steps, and where UDP GSO traffic was segmented. Each configuration is one file ``data/lab/<config>.json``
(installed as ``vnetlab.data/lab/``), with the kernel version and the exact QEMU command line.

    >>> from vnetlab import labdata
    >>> labdata.configs()                      # doctest: +SKIP
    ['big', 'big_mtu9000', 'hub_mergeable', 'mergeable', 'mergeable_mtu9000', 'small']
    >>> rows = labdata.rx_rows("mergeable")    # measured packets with the model's answer beside each
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

ETH_HLEN = 14
#: virtio_net_hdr_to_skb with VIRTIO_NET_HDR_F_NEEDS_CSUM pulls csum_start + csum_offset + 2 bytes into the
#: head: 14 + 20 + 6 + 2 for UDP over IPv4 (include/linux/virtio_net.h, 6.1).
UDP4_CSUM_PULL = 42
#: vnetlab.netdev's virtio_net probe parameter for each VIRTIO_NET_F_* feature it depends on.
PROBE_PARAMS = {"csum": "CSUM", "host_tso4": "HOST_TSO4", "host_tso6": "HOST_TSO6", "host_ecn": "HOST_ECN",
                "ctrl_guest_offloads": "CTRL_GUEST_OFFLOADS", "ctrl_vlan": "CTRL_VLAN"}
#: ethtool's legacy option names (ethtool.c off_flag_def): each sets every feature its pattern matches.
ETHTOOL_ALIASES = {
    "rx": ("rx-checksum",),
    "tx": ("tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6", "tx-checksum-fcoe-crc",
           "tx-checksum-sctp"),
    "sg": ("tx-scatter-gather", "tx-scatter-gather-fraglist"),
    "tso": ("tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation"),
    "ufo": ("tx-udp-fragmentation",),
    "gso": ("tx-generic-segmentation",),
    "gro": ("rx-gro",),
    "lro": ("rx-lro",),
    "rxvlan": ("rx-vlan-hw-parse",),
    "txvlan": ("tx-vlan-hw-insert",),
    "ntuple": ("rx-ntuple-filter",),
    "rxhash": ("rx-hashing",),
}


def _dir():
    return resources.files("vnetlab.data").joinpath("lab")


def configs() -> list[str]:
    """The lab configurations that have a shipped measurement file."""
    d = _dir()
    if not d.is_dir():
        return []
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".json"))


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    path = _dir().joinpath(f"{name}.json")
    if not path.is_file():
        raise ValueError(f"no lab measurement {name!r}; shipped: {configs()}")
    return path.read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """The whole measurement file of one configuration (a fresh copy each call)."""
    return json.loads(_load(name))


def virtio_features(doc: Mapping[str, Any], nic: str = "eth0") -> frozenset[str]:
    """The VIRTIO_NET_F_* names the guest's driver negotiated on ``nic``."""
    return frozenset(doc["guest"]["virtio_features"][nic]["names"])


def probe_params(doc: Mapping[str, Any], nic: str = "eth0") -> dict[str, bool]:
    """``Namespace.nic(..., driver="virtio_net", **params)`` for the offloads the guest negotiated."""
    f = virtio_features(doc, nic)
    params = {p: bit in f for p, bit in PROBE_PARAMS.items()}
    params["guest_tso"] = bool(f & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"})
    return params


def mode(doc: Mapping[str, Any], nic: str = "eth1") -> str:
    """virtio-net receive mode: mergeable with MRG_RXBUF, big with guest GSO or MTU > 1500, else small."""
    f = virtio_features(doc, nic)
    if "MRG_RXBUF" in f:
        return "mergeable"
    if f & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"} or mtu(doc) > 1500:
        return "big"
    return "small"


def mtu(doc: Mapping[str, Any]) -> int:
    props = doc["qemu"]["device_props"]
    for p in props.split(","):
        if p.startswith("host_mtu="):
            return int(p.split("=", 1)[1])
    return 1500


def hdr_len(doc: Mapping[str, Any], nic: str = "eth1") -> int:
    """virtnet_probe: 12 with MRG_RXBUF or VERSION_1, else 10 (no hash report in these runs)."""
    f = virtio_features(doc, nic)
    return 12 if f & {"MRG_RXBUF", "VERSION_1"} else 10


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


def model_for_packet(doc: Mapping[str, Any], pkt: Mapping[str, Any], kernel: str = "6.1"):
    """vnetlab.rx's RxResult for one measured packet, fed the buffer the real driver used."""
    from vnetlab import rx

    m = mode(doc)
    hl = hdr_len(doc)
    frame = pkt["frame_len"]
    if m == "small":
        return rx.receive_small(frame, hdr_len=hl, kernel=kernel)
    if m == "big":
        guest_gso = bool(virtio_features(doc, "eth1") & {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"})
        return rx.receive_big(frame, hdr_len=hl, mtu=mtu(doc), guest_gso=guest_gso, kernel=kernel)
    p2s = pkt["page_to_skb"]
    first = p2s["len"] - hl
    if first == frame:
        return rx.page_to_skb(frame, p2s["truesize"], mode="mergeable", hdr_len=hl, headroom=p2s["headroom"],
                              kernel=kernel)
    # num_buffers > 1: the ring holds buffers in carve order, so the buffers after the measured first one are
    # the next ones add_recvbuf_mergeable carved from the same 32 KiB page frag (then from a new page) at the
    # EWMA floor -- the state the whole ring was filled in at probe time.
    k, a = rx._resolve(kernel, "x86_64")
    min_len = rx.mergeable_min_buf_len(mtu=mtu(doc), hdr_len=hl, big_packets=True)
    frag = rx.PageFrag(32768, a)
    carved = [rx.carve_mergeable_buffer(frag, 0, min_buf_len=min_len, hdr_len=hl, xdp=False, k=k, a=a)
              for _ in range(2 * 32768 // 1024)]
    start = next((i for i, b in enumerate(carved) if b.page is carved[0].page
                  and b.offset == p2s["offset"] % 32768 and b.truesize == p2s["truesize"]), None)
    if start is None:
        raise ValueError(f"the first buffer (offset {p2s['offset']}, truesize {p2s['truesize']}) is not on the "
                         "model's carve of a page frag at the EWMA floor")
    bufs, need = [], frame + hl
    for b in carved[start:]:
        bufs.append(b)
        need -= b.len
        if need <= 0:
            break
    return rx.receive_mergeable(frame, bufs, hdr_len=hl, kernel=kernel)


def rx_rows(name: str, kernel: str = "6.1") -> list[RxRow]:
    """Every measured packet of a configuration beside vnetlab.rx's answer for the same frame and buffer."""
    doc = load(name)
    out = []
    for sent, pkt in zip(doc["rx"]["payload_sizes_sent"], doc["rx"]["packets"]):
        r = model_for_packet(doc, pkt, kernel)
        out.append(RxRow(sent, pkt["frame_len"], pkt.get("page_to_skb", {}).get("truesize"), pkt["path"],
                         pkt["gro"]["truesize"], pkt["gro"]["nr_frags"], r.path, r.skb.truesize, r.skb.nr_frags))
    return out


#: ``ethtool -k`` prints these single features under their legacy names (ethtool.c off_flag_def).
ETHTOOL_LEGACY_NAMES = {
    "rx-checksumming": "rx-checksum", "generic-segmentation-offload": "tx-generic-segmentation",
    "generic-receive-offload": "rx-gro", "large-receive-offload": "rx-lro", "rx-vlan-offload": "rx-vlan-hw-parse",
    "tx-vlan-offload": "tx-vlan-hw-insert", "ntuple-filters": "rx-ntuple-filter", "receive-hashing": "rx-hashing",
}
#: ... and these as group headers whose value summarises the features listed under them.
ETHTOOL_GROUP_HEADERS = ("tx-checksumming", "scatter-gather", "tcp-segmentation-offload")


def normalize_ethtool_k(printed: Mapping[str, str]) -> dict[str, str]:
    """``ethtool -k`` as printed -> {kernel feature string: value}: legacy names mapped, group headers dropped."""
    return {ETHTOOL_LEGACY_NAMES.get(k, k): v for k, v in printed.items() if k not in ETHTOOL_GROUP_HEADERS}


def ethtool_k(doc: Mapping[str, Any], phase: str, step: int, dev: str) -> dict[str, str]:
    """The measured ``ethtool -k`` of one device at one step, by kernel feature string:
    {name: "on" | "off" | "on fixed" | "off fixed"}."""
    for rec in doc["features"]["ethtool_k"]:
        if (rec["phase"], rec["step"], rec["dev"]) == (phase, step, dev):
            return normalize_ethtool_k(rec["ethtool_k"])
    raise KeyError(f"no ethtool -k of {dev} at {phase}.{step}")


def expand_ethtool_args(args: str) -> list[tuple[str, bool]]:
    """``"sg on tso on"`` -> [(feature, on), ...] with ethtool's legacy names expanded."""
    words = args.split()
    out = []
    for name, val in zip(words[::2], words[1::2]):
        for feat in ETHTOOL_ALIASES.get(name, (name,)):
            out.append((feat, val == "on"))
    return out


def gso_model(doc: Mapping[str, Any], route_dev: str, kernel: str = "6.1"):
    """vnetlab.xmit's TxResult for the lab's UDP_SEGMENT datagram sent through ``route_dev`` on the virtio NIC."""
    from vnetlab import xmit
    from vnetlab.netdev import Namespace

    ns = Namespace(kernel=kernel)
    eth0 = ns.nic("eth0", driver="virtio_net", **probe_params(doc, "eth0"))
    if route_dev == "eth0.10":
        ns.vlan("eth0.10", lower=eth0, vid=10)
    elif route_dev == "mv0":
        ns.macvlan("mv0", lower=eth0)
    elif route_dev == "br0":
        ns.set_master(eth0, ns.bridge("br0"))
    elif route_dev != "eth0":
        raise ValueError(f"route_dev={route_dev!r}: the lab sends through eth0, eth0.10, mv0 or br0")
    gso_size, payload = doc["gso"]["gso_size"], doc["gso"]["payloads"][0]
    skb = xmit.gso_skb(l4="udp", segs=-(-payload // gso_size), gso_size=gso_size)
    return ns, xmit.send(ns[route_dev], skb, kernel=kernel)


def gso_table(name: str, kernel: str = "6.1") -> str:
    """Where the real kernel segmented the lab's UDP GSO datagrams, beside the model, one line per route."""
    doc = load(name)
    lines = [f"{'sent through':13} {'real kernel':14} model"]
    for case in doc["gso"]["cases"]:
        real = ", ".join(case["segmented_at"]) or "send failed (EIO)"
        _ns, tx = gso_model(doc, case["route_dev"], kernel)
        lines.append(f"{case['route_dev']:13} {real:14} {tx.segmented_at or 'nowhere'}")
    return "\n".join(lines)


def rx_table(name: str, payloads=None, kernel: str = "6.1") -> str:
    """Measured receive paths beside vnetlab.rx for the chosen UDP payloads (all measured ones if None)."""
    rows = rx_rows(name, kernel)
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
    agree = sum(r.agrees for r in rx_rows(name, kernel))
    lines.append(f"{agree} of {len(rx_rows(name, kernel))} measured packets agree with the model "
                 f"({load(name)['kernel']['release']}, {load(name)['qemu']['accel']})")
    return "\n".join(lines)
