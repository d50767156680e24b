"""The packet-rate model behind the build_skb result (fb32856b16ad): CPU ns per received packet.

Every packet's cost is a sum of kernel operations, each counted from what the receive model really does
with that packet (``rx.classify``: path, bytes copied, frags, head kind) and what GRO does with the flow
(``gro.simulate_stream``: packets per GRO skb, merge case). Costs per operation are in data/rx_costs.toml,
each with its provenance; they are estimates, and :func:`calibrate` refits the per-skb stack cost and the
cache-line-miss cost to the one measurement we have (the commit message: 956,864 -> 1,158,465 pps, one
CPU at 100% softirq, so ns per packet = 1e9 / pps).

The model is linear: ns/packet = sum over operations of (mean count per packet) x (ns per operation).
Counts depend only on the kernel rules and the traffic, so calibration is exact linear algebra.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from vnetlab import gro, rx
from vnetlab.checks import In, check_choice, int_array, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, IP_HLEN
from vnetlab.profiles import DEFAULT_ARCH, Arch, Kernel, known_kernels
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _kernel
from vnetlab.tables import load_table

# Operations by what they stand for; a gain is split along these groups.
OP_GROUPS: dict[str, tuple[str, ...]] = {
    "ring": ("virtqueue_get_buf", "add_recvbuf_mergeable"),
    "alloc_copy": (
        "napi_alloc_skb/napi_page_frag", "napi_alloc_skb/kmalloc", "napi_alloc_skb/napi_page_frag_1k",
        "napi_alloc_skb/small_head_cache", "build_skb", "memcpy/byte", "skb_add_rx_frag", "__pskb_pull_tail",
        "cache_line_miss", "skb_free_head/kmalloc", "skb_free_head/small_head_cache", "skb_free_head/page_frag",
        "put_page", "kfree_skbmem",
    ),
    "gro": ("dev_gro_receive", "napi_gro_complete", "skb_gro_receive/frags", "skb_gro_receive/frag_list",
            "skb_gro_receive_list"),
    "stack": ("stack/udp_no_socket", "stack/udp_socket_extra", "stack/tcp_established_extra"),
}
OPS: tuple[str, ...] = tuple(op for ops in OP_GROUPS.values() for op in ops)
GROUP_NAMES = {
    "ring": "virtqueue ring (get_buf + refill)",
    "alloc_copy": "skb allocation, copy, cache lines and freeing",
    "gro": "GRO (dev_gro_receive, merges, napi_gro_complete)",
    "stack": "stack per skb handed up (amortised over GRO skbs)",
}
STACK_OP = "stack/udp_no_socket"
MISS_OP = "cache_line_miss"
Destination = Literal["no_socket", "socket", "udp_gro_socket"]
DESTINATIONS: tuple[str, ...] = typing.get_args(Destination)
# The kernels the cost figures compare (one column each): every profile but the Debian point releases whose receive
# path repeats another's (5.10.262 = 5.10.223, 6.12.117 = 6.12 and 7.2.12 = 7.3.4 in every rx rule; lab/probes.py).
KERNELS = tuple(k for k in known_kernels() if k not in ("5.10.262", "6.12.117", "7.2.12"))

# Head kind of the copy path (rx.Head.kind) -> the allocation and the free it costs.
_ALLOC_OP = {kind: f"napi_alloc_skb/{kind}" for kind in ("napi_page_frag", "kmalloc", "napi_page_frag_1k",
                                                         "small_head_cache")}
# net/core/skbuff.c skb_free_head: head_frag heads go back by skb_free_frag, others by kfree / kmem_cache_free.
_FREE_OP = {"napi_page_frag": "skb_free_head/page_frag", "napi_page_frag_1k": "skb_free_head/page_frag",
            "kmalloc": "skb_free_head/kmalloc", "small_head_cache": "skb_free_head/small_head_cache",
            "build_skb": "skb_free_head/page_frag"}
_BUF_PERIOD = 32 * 21  # carving repeats every 21 buffers per 32 KiB frag (docs/kernel/rx.md#a5)
# op_counts runs one exact period, lcm(pattern, carving, NAPI budget) packets: at most MAX_PERIOD (about 2 s and
# 250 MiB on one core; tests/test_cost.py runs the worst pattern under limits), so a pattern holds at most
# MAX_PERIOD // lcm(672, 64) = 780 packets.
MAX_PERIOD = 1 << 20
MAX_PATTERN = MAX_PERIOD // math.lcm(_BUF_PERIOD, rx.NAPI_POLL_WEIGHT)


# --------------------------------------------------------------------------------------------------
# Costs

@public
def check_costs(values: Mapping[str, Any], *, name: str = "costs") -> dict[str, float]:
    """Validate op -> ns: known op names only, finite numbers >= 0."""
    if not isinstance(values, Mapping):
        raise ArgumentError(f"{name} must be a mapping of operation name -> ns, got {type(values).__name__}",
                            param=name)
    out: dict[str, float] = {}
    for op, v in values.items():
        if op not in OPS:
            raise ArgumentError(f"{name}: unknown operation {op!r}; allowed: {', '.join(OPS)}", param=name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) \
                or v < 0:
            raise ArgumentError(f"{name}[{op!r}]={v!r}: must be a finite number of ns in [0, inf)", param=name)
        out[op] = float(v)
    return out


@dataclass(frozen=True)
class Costs:
    """ns per operation (``memcpy/byte``: ns per byte), with where each number comes from."""

    ns: Mapping[str, float]
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked = check_costs(self.ns)
        missing = [op for op in OPS if op not in checked]
        if missing:
            raise ValueError(f"costs: missing operations {missing}; every one of {', '.join(OPS)} needs a value")

    def __getitem__(self, op: str) -> float:
        if op not in OPS:
            raise ValueError(f"unknown operation {op!r}; allowed: {', '.join(OPS)}")
        return self.ns[op]

    @public
    def with_values(self, values: Mapping[str, Any], source: str = "set by caller") -> Costs:
        """A copy with some operations changed (checked like the table)."""
        new = check_costs(values)
        return Costs({**self.ns, **new}, {**self.sources, **{op: source for op in new}})


@lru_cache(maxsize=1)
def load_costs() -> Costs:
    """The prior costs of data/rx_costs.toml [ops]."""
    sec = load_table("rx_costs")["ops"]
    unknown = [op for op in sec.values if op not in OPS]
    if unknown:
        raise ValueError(f"data/rx_costs.toml [ops]: unknown operations {unknown}; allowed: {', '.join(OPS)}")
    return Costs({op: sec.values[op] for op in sec.values}, {op: sec.source(op) for op in sec.values})


# --------------------------------------------------------------------------------------------------
# Traffic

@dataclass(frozen=True)
class Traffic:
    """One receive workload: a repeating pattern of L4 payload sizes, one flow, and where it ends."""

    label: str
    payloads: tuple[int, ...]
    l4: str = "udp"
    destination: str = "no_socket"  # "no_socket" (dropped, ICMP), "socket", "udp_gro_socket" (setsockopt UDP_GRO)

    def __post_init__(self) -> None:
        if self.l4 not in rx.L4_HDR_LEN:
            raise ValueError(f"l4={self.l4!r} is not one of {list(rx.L4_HDR_LEN)}")
        if self.destination not in DESTINATIONS:
            raise ValueError(f"destination={self.destination!r} is not one of {list(DESTINATIONS)}")
        if self.destination == "udp_gro_socket" and self.l4 != "udp":
            raise ValueError("destination='udp_gro_socket' needs l4='udp' (UDP_GRO is a UDP socket option)")
        if len(self.payloads) == 0:
            raise ValueError("payloads must not be empty: give at least one L4 payload size in bytes")
        if len(self.payloads) > MAX_PATTERN:
            raise ValueError(f"payloads has {len(self.payloads)} packets; a traffic pattern holds at most "
                             f"{MAX_PATTERN}: "
                             f"op_counts runs one exact period, lcm(pattern, {_BUF_PERIOD} carved buffers, NAPI budget "
                             f"{rx.NAPI_POLL_WEIGHT}) <= MAX_PERIOD {MAX_PERIOD} packets")
        hi = max_payload(self.l4)
        for i, p in enumerate(self.payloads):
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p <= hi:
                raise ValueError(f"payloads[{i}]={p!r}: must be an int in 0..{hi} ({self.l4} payload of one "
                                 f"MTU-1500 frame, single mergeable buffer)")

    @property
    def frame_lens(self) -> tuple[int, ...]:
        return tuple(rx.frame_len_for(p, l4=self.l4) for p in self.payloads)


@public
def max_payload(l4: rx.L4) -> int:
    """Largest L4 payload of one IPv4 packet at MTU 1500 (TCP with the 12-byte timestamp option)."""
    return ETH_DATA_LEN - IP_HLEN[4] - rx.L4_HDR_LEN[l4]


@public
def mix(weights: Mapping[int, int], *, label: str = "", l4: rx.L4 = "udp",
        destination: Destination = "no_socket") -> Traffic:
    """A size mix {payload: integer weight}, interleaved deterministically (each size spread evenly)."""
    if not isinstance(weights, Mapping) or len(weights) == 0:
        raise ArgumentError("weights must be a non-empty mapping {payload_len: integer weight}", param="weights")
    for p, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0:
            raise ArgumentError(f"weights[{p!r}]={w!r}: must be an int >= 0", param="weights")
    total = sum(int(w) for w in weights.values())
    if total == 0:
        raise ArgumentError("weights must have a positive sum", param="weights")
    for p in weights:
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise ValueError(f"weights key {p!r}: must be an int L4 payload size in bytes")
    g = math.gcd(*(int(w) for w in weights.values() if w))
    if total // g > MAX_PATTERN:
        raise ValueError(f"weights sum to {total // g} after dividing by their gcd {g}: a traffic pattern holds at "
                         f"most {MAX_PATTERN} packets (op_counts runs one exact period of pattern, carving and NAPI "
                         "budget); "
                         "round the weights to a smaller ratio")
    slots = sorted(((i + 0.5) / (int(w) // g), int(p)) for p, w in weights.items() if w for i in range(int(w) // g))
    name = label or "mix " + ":".join(f"{p}x{w}" for p, w in weights.items())
    return Traffic(name, tuple(p for _, p in slots), l4=l4, destination=destination)


@public
def imix() -> Traffic:
    """The IMIX of data/rx_costs.toml [imix]: IPv4 packets of 64/576/1500 bytes, 7:4:1, as UDP (payload = IP - 28)."""
    sec = load_table("rx_costs")["imix"]
    sizes, weights = sec["ip_sizes"], sec["weights"]
    hdr = IP_HLEN[4] + rx.L4_HDR_LEN["udp"]
    t = mix({s - hdr: w for s, w in zip(sizes, weights)}, label="IMIX 7:4:1 (IP 64/576/1500), UDP, no socket")
    return t


@public
def seed_traffic() -> Traffic:
    """The commit's benchmark: sockperf 1000-byte UDP to a port with no socket."""
    sec = load_table("rx_costs")["seed"]
    return Traffic(f"UDP {sec['payload_len']} B, no socket (seed)", (int(sec["payload_len"]),), l4=sec["l4"],
                   destination=sec["destination"])


@public
def prediction_cases() -> dict[str, Traffic]:
    """The workloads the calibrated model is asked about."""
    return {
        "udp1000": seed_traffic(),
        "udp100": Traffic("UDP 100 B, no socket", (100,)),
        "udp1472": Traffic("UDP 1472 B, no socket", (1472,)),
        "imix": imix(),
        "tcp1448_gro": Traffic("TCP MSS 1448, GRO, to a socket", (1448,), l4="tcp", destination="socket"),
        "udp1000_udp_gro": Traffic("UDP 1000 B to a UDP_GRO socket", (1000,), destination="udp_gro_socket"),
    }


# --------------------------------------------------------------------------------------------------
# Operation counts (independent of the costs)

@dataclass(frozen=True)
class OpCounts:
    """Mean count of each operation per received packet for one traffic on one kernel, plus the shapes."""

    traffic: Traffic
    kernel: str
    arch: str
    gro: bool
    packets: int
    counts: Mapping[str, float]
    path_counts: Mapping[str, int]
    head_kind: str  # the copy path's napi_alloc_skb head
    aggregates: bool  # does GRO aggregate this flow at all
    gro_skbs: int
    sk_buffs: int  # sk_buffs handed up (GRO skbs plus their frag_list members)
    first_skb_packets: float  # mean packets in the first sk_buff of a GRO skb

    @property
    def packets_per_gro_skb(self) -> float:
        return self.packets / self.gro_skbs


@public
def packet_op_counts(frame_lens: ArrayLike, buf_truesizes: ArrayLike, *, kernel: str | Kernel,
                     arch: str | Arch = DEFAULT_ARCH,
                     headers: Annotated[int, In(0, 65535, "L3 + L4 header bytes the stack needs linear")],
                     merged: ArrayLike | None = None,
                     hdr_len: int = rx.MRG_RXBUF_HDR_LEN) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-packet operation counts of the receive path up to (not including) GRO and the stack, vectorised.

    ``headers``: L3+L4 header bytes the stack needs in the linear part; ``merged``: bool per packet, True
    where GRO merged the packet into a held one (its headers are read in place, never pulled).
    Returns (op -> count array, path codes).
    """
    k = _kernel(kernel)
    a = _arch(arch, k)
    frames = int_array("frame_lens", frame_lens, "Ethernet frame lengths in bytes")
    if frames.ndim != 1 or frames.size == 0:
        raise ArgumentError(f"frame_lens must be a non-empty 1-D array of frame lengths, got shape {frames.shape}",
                            param="frame_lens")
    truesizes = int_array("buf_truesizes", buf_truesizes, "receive buffer truesizes in bytes, one int or one per frame")
    codes, _tail, frags, copied = rx.classify(frames, truesizes, hdr_len=hdr_len, kernel=k, arch=a)
    build = codes == rx.PATH_CODES["build_skb"]
    head = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=k, arch=a)
    merged = np.zeros(frames.shape, bool) if merged is None else np.asarray(merged, bool)
    if merged.shape != frames.shape:
        raise ArgumentError(f"merged must have one bool per frame ({frames.size}), got shape {merged.shape}",
                            param="merged")
    # Counts that are the same for every packet are read-only broadcasts (no per-packet memory).
    one = np.broadcast_to(np.int64(1), frames.shape)
    zero = np.broadcast_to(np.int64(0), frames.shape)
    b = build.astype(np.int64)
    nb = 1 - b
    c: dict[str, np.ndarray] = {op: zero for op in OP_GROUPS["ring"] + OP_GROUPS["alloc_copy"]}
    # virtnet_receive -> virtqueue_get_buf, then try_fill_recv -> add_recvbuf_mergeable: one buffer per packet.
    c["virtqueue_get_buf"] = one
    c["add_recvbuf_mergeable"] = one
    # page_to_skb: build_skb(buf, truesize) on the build_skb path, napi_alloc_skb(GOOD_COPY_LEN) otherwise.
    c["build_skb"] = b
    c[_ALLOC_OP[head.kind]] = nb
    # eth_type_trans pulls ETH_HLEN; the stack (or gro_pull_from_frag0) needs `headers` bytes in the head.
    headlen = np.where(build, frames, copied) - ETH_HLEN
    pulled = np.where(~merged & (frags > 0), np.maximum(headers - headlen, 0), 0)
    # __pskb_pull_tail / gro_pull_from_frag0: headers that sit in frag 0 are copied into the head.
    c["__pskb_pull_tail"] = (pulled > 0).astype(np.int64)
    # page_to_skb skb_put_data(skb, p, copy), plus the pulled header bytes.
    c["memcpy/byte"] = copied + pulled
    # page_to_skb skb_add_rx_frag(skb, 0, page, offset, len, truesize): one per frag.
    c["skb_add_rx_frag"] = frags
    # Cache lines first touched: a fresh napi head is written from skb->data (after the NET_SKB_PAD reserve,
    # which stays unwritten) for copied + pulled bytes; every head's shinfo is initialised by
    # __build_skb_around / __alloc_skb (memset up to dataref) and skb_add_rx_frag writes frags[0..n).
    line = a.l1_cache_bytes
    frags_at = a.skb_shared_info_size - a.max_skb_frags * a.skb_frag_size  # offsetof(skb_shared_info, frags)
    shinfo_lines = -(-(frags_at + frags * a.skb_frag_size) // line)
    hi = head.reserve + copied + pulled
    data_lines = np.where(build | (hi <= head.reserve), 0, -(-hi // line) - head.reserve // line)
    c[MISS_OP] = shinfo_lines + data_lines
    # skb_release_data -> skb_free_head by head kind; __skb_frag_unref -> put_page per frag; page_to_skb
    # put_page()s a buffer whose frame it copied whole; kfree_skbmem for the sk_buff itself.
    if _FREE_OP[head.kind] == _FREE_OP["build_skb"]:
        c[_FREE_OP["build_skb"]] = one
    else:
        c[_FREE_OP["build_skb"]] = b
        c[_FREE_OP[head.kind]] = nb
    c["put_page"] = frags + (nb & (frags == 0))
    c["kfree_skbmem"] = one
    return c, codes


def _shares(counts: Mapping[str, int]) -> str:
    total = sum(counts.values()) or 1
    return ", ".join(f"{path} {100 * c / total:.1f}%" for path, c in counts.items())


def _buffers(n: int, k: Kernel, a: Arch) -> np.ndarray:
    # add_recvbuf_mergeable carving at the EWMA floor (min_buf_len 1518), repeated like gro.simulate_stream.
    period = np.asarray(rx.mergeable_buf_lens(_BUF_PERIOD, kernel=k, arch=a), dtype=np.int64)
    return np.resize(period, n)


@public
def op_counts(traffic: Traffic, kernel: str | Kernel, arch: str = DEFAULT_ARCH, *, gro_on: bool = True,
              napi_budget: Annotated[int, In(1, 65536, "the NAPI budget (packets per poll)")] = rx.NAPI_POLL_WEIGHT
              ) -> OpCounts:
    """Mean operation counts per packet for ``traffic`` received by virtio-net (mergeable, MTU 1500) on ``kernel``."""
    return _op_counts(traffic, _kernel(kernel), arch, gro_on, napi_budget)


@lru_cache(maxsize=256)
def _op_counts(traffic: Traffic, k: Kernel, arch: str, gro_on: bool, napi_budget: int) -> OpCounts:
    # keyed by the Kernel object (version and lab name): a lab kernel's patched rules are its own entry
    a = _arch(arch, k)
    pattern = np.asarray(traffic.payloads, dtype=np.int64)
    # One exact period: the buffer carving repeats every _BUF_PERIOD packets and GRO holds nothing across a
    # NAPI poll (napi_complete_done flushes), so the per-packet means of n packets are those of any longer run.
    n = math.lcm(pattern.size, _BUF_PERIOD, napi_budget)
    if n > MAX_PERIOD:
        raise ArgumentError(f"napi_budget={napi_budget} with a {pattern.size}-packet pattern needs a period of {n} "
                            "packets "
                            f"(lcm with the {_BUF_PERIOD}-buffer carving), above MAX_PERIOD {MAX_PERIOD}: choose a "
                            f"budget dividing {_BUF_PERIOD * pattern.size}", param="napi_budget")
    payloads = np.resize(pattern, n)
    bufs = _buffers(n, k, a)
    udp_gro = traffic.destination == "udp_gro_socket"
    local = traffic.destination != "no_socket"
    features = frozenset({"GRO"}) if gro_on else frozenset()
    fp = gro.flow_params(l4=traffic.l4, udp_gro=udp_gro, local_socket=local, features=features, kernel=k, arch=a)
    stats = gro.simulate_stream(None, payloads, l4=traffic.l4, udp_gro=udp_gro, local_socket=local,
                                features=features, kernel=k, arch=a, napi_budget=napi_budget, buf_lens=bufs)
    segs = np.asarray(stats.segs_per_skb, dtype=np.int64)
    merged = np.ones(n, bool)
    merged[np.concatenate(([0], np.cumsum(segs)[:-1]))] = False  # the first packet of each skb handed up
    frames = ETH_HLEN + fp.offset + payloads
    per, _codes = packet_op_counts(frames, bufs, kernel=k, arch=a, headers=fp.offset, merged=merged)
    counts = {op: float(v.mean()) for op, v in per.items()}
    chains = int((np.asarray(stats.sk_buffs_per_skb) - 1).sum())
    for op in OP_GROUPS["gro"] + OP_GROUPS["stack"]:
        counts[op] = 0.0
    if gro_on:
        # napi_gro_receive -> dev_gro_receive for every packet; napi_gro_complete / gro_normal_one per skb up.
        counts["dev_gro_receive"] = 1.0
        counts["napi_gro_complete"] = stats.gro_skbs / n
        merges = n - stats.gro_skbs
        if fp.is_flist:
            # skb_gro_receive_list: every merged packet is chained whole.
            counts["skb_gro_receive_list"] = merges / n
        else:
            # skb_gro_receive: case 3 chains a new frag_list sk_buff, cases 1/2 move frags into lp.
            counts["skb_gro_receive/frag_list"] = chains / n
            counts["skb_gro_receive/frags"] = (merges - chains) / n
    # netif_receive_skb -> ip_rcv -> l4 rcv once per skb handed up (a GRO skb counts once).
    per_skb = stats.gro_skbs / n
    counts[STACK_OP] = per_skb
    if traffic.l4 == "tcp" and local:
        counts["stack/tcp_established_extra"] = per_skb
    elif local:
        counts["stack/udp_socket_extra"] = per_skb
    head = rx.napi_alloc_skb(rx.GOOD_COPY_LEN, kernel=k, arch=a)
    return OpCounts(traffic, k.version, a.name, gro_on, n, counts, dict(stats.path_counts), head.kind,
                    fp.aggregates, stats.gro_skbs, stats.gro_skbs + chains, float(np.mean(stats.first_skb_packets)))


# --------------------------------------------------------------------------------------------------
# Costed results

@dataclass(frozen=True)
class RxCost:
    """ns per packet for one traffic on one kernel, by operation."""

    ops: OpCounts
    costs: Costs

    @property
    def per_op_ns(self) -> dict[str, float]:
        return {op: self.ops.counts[op] * self.costs[op] for op in OPS}

    @property
    def ns_per_packet(self) -> float:
        return float(sum(self.per_op_ns.values()))

    @property
    def pps(self) -> float:
        """Packets per second with one CPU at 100% softirq doing nothing else."""
        return 1e9 / self.ns_per_packet

    @public
    def group_ns(self, group: str) -> float:
        if group not in OP_GROUPS:
            raise ArgumentError(f"group={group!r} is not one of {list(OP_GROUPS)}", param="group")
        per = self.per_op_ns
        return float(sum(per[op] for op in OP_GROUPS[group]))


def _costs(costs: Costs | Mapping[str, Any] | None) -> Costs:
    if costs is None:
        return load_costs()
    if isinstance(costs, Costs):
        return costs
    return load_costs().with_values(costs)


@public
def rx_cost(traffic: Traffic, kernel: str | Kernel, costs: Costs | Mapping[str, Any] | None = None, *,
            arch: str = DEFAULT_ARCH, gro_on: bool = True) -> RxCost:
    """ns per packet of ``traffic`` on ``kernel`` with ``costs`` (default: the table's priors; a mapping of
    operation -> ns overrides those it names, so {} overrides none)."""
    return RxCost(op_counts(traffic, kernel, arch, gro_on=gro_on), _costs(costs))


# --------------------------------------------------------------------------------------------------
# Calibration to the commit's measurement

@dataclass(frozen=True)
class Measurement:
    baseline_pps: float
    patched_pps: float
    baseline_kernel: str
    patched_kernel: str
    traffic: Traffic

    def __post_init__(self) -> None:
        for name in ("baseline_pps", "patched_pps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name}={v!r}: must be a packet rate > 0 (packets/s)")
        for name in ("baseline_kernel", "patched_kernel"):
            _kernel(getattr(self, name))


@public
def seed_measurement() -> Measurement:
    sec = load_table("rx_costs")["seed"]
    return Measurement(float(sec["baseline_pps"]), float(sec["patched_pps"]), sec["baseline_kernel"],
                       sec["patched_kernel"], seed_traffic())


@dataclass(frozen=True)
class Calibration:
    measurement: Measurement
    prior: Costs
    one_param: Costs  # stack/udp_no_socket fitted on the baseline
    two_param: Costs  # stack/udp_no_socket and cache_line_miss fitted on both

    @public
    def predicted_pps(self, costs: Costs) -> tuple[float, float]:
        m = self.measurement
        return (rx_cost(m.traffic, m.baseline_kernel, costs).pps, rx_cost(m.traffic, m.patched_kernel, costs).pps)

    @property
    def one_param_residual_pps(self) -> float:
        """Predicted minus measured patched rate, 1-parameter fit."""
        return self.predicted_pps(self.one_param)[1] - self.measurement.patched_pps

    def report(self) -> str:
        m = self.measurement
        lines = [f"Calibration to fb32856b16ad's measurement: {m.traffic.label},",
                 f"  kernel rules {m.baseline_kernel} -> {m.patched_kernel}, one CPU at 100% softirq "
                 "(ns/packet = 1e9/pps)",
                 f"  measured: {m.baseline_pps:,.0f} pps ({1e9 / m.baseline_pps:.1f} ns) -> {m.patched_pps:,.0f} pps "
                 f"({1e9 / m.patched_pps:.1f} ns), +{100 * (m.patched_pps / m.baseline_pps - 1):.1f}%"]
        for name, costs, fitted in (("1-parameter fit (baseline only)", self.one_param, (STACK_OP,)),
                                    ("2-parameter fit (both, exact)", self.two_param, (STACK_OP, MISS_OP))):
            b, p = self.predicted_pps(costs)
            lines.append(f"  {name}:")
            lines.extend(f"    {op} = {costs[op]:.1f} ns (prior {self.prior[op]:.1f})" for op in fitted)
            lines.append(f"    baseline {b:,.0f} pps (residual {b - m.baseline_pps:+,.0f})")
            lines.append(f"    patched {p:,.0f} pps (residual {p - m.patched_pps:+,.0f} pps, "
                         f"{100 * (p / m.patched_pps - 1):+.2f}%, {1e9 / p - 1e9 / m.patched_pps:+.1f} ns/packet)")
        return "\n".join(lines)


@public
def calibrate(costs: Costs | Mapping[str, Any] | None = None, measurement: Measurement | None = None) -> Calibration:
    """Fit the per-skb stack cost to the baseline (1 parameter), then stack + cache-line miss to both (2)."""
    prior = _costs(costs)
    m = measurement or seed_measurement()
    cb = op_counts(m.traffic, _kernel(m.baseline_kernel).version, DEFAULT_ARCH).counts
    cp = op_counts(m.traffic, _kernel(m.patched_kernel).version, DEFAULT_ARCH).counts
    tb, tp = 1e9 / m.baseline_pps, 1e9 / m.patched_pps

    def rest(c: Mapping[str, float], skip: tuple[str, ...]) -> float:
        return sum(c[op] * prior[op] for op in OPS if op not in skip)

    # ns = c_stack * stack + rest: solve for stack on the baseline.
    stack1 = (tb - rest(cb, (STACK_OP,))) / cb[STACK_OP]
    if stack1 < 0:
        raise ValueError(f"1-parameter fit gives {STACK_OP} = {stack1:.1f} ns < 0: the other priors already "
                         f"exceed the measured {tb:.1f} ns/packet")
    one = prior.with_values({STACK_OP: stack1}, "fitted: 1-parameter fit to the seed baseline")
    # [c_stack, c_miss] . [stack, miss] = t - rest, for baseline and patched.
    A = np.array([[cb[STACK_OP], cb[MISS_OP]], [cp[STACK_OP], cp[MISS_OP]]])
    y = np.array([tb - rest(cb, (STACK_OP, MISS_OP)), tp - rest(cp, (STACK_OP, MISS_OP))])
    if abs(np.linalg.det(A)) < 1e-12:
        raise ValueError("2-parameter fit is singular: both kernels touch as many cache lines per skb")
    stack2, miss2 = np.linalg.solve(A, y)
    if stack2 < 0 or miss2 < 0:
        raise ValueError(f"2-parameter fit gives {STACK_OP} = {stack2:.1f} ns, {MISS_OP} = {miss2:.1f} ns: a "
                         "negative cost means the other priors cannot explain the measured gain")
    two = prior.with_values({STACK_OP: float(stack2), MISS_OP: float(miss2)},
                            "fitted: 2-parameter exact fit to the seed baseline and patched rates")
    return Calibration(m, prior, one, two)


# --------------------------------------------------------------------------------------------------
# Predictions and the gain breakdown

@public
def predictions(costs: Costs | Mapping[str, Any] | None = None, *, kernels: Sequence[str] = KERNELS,
                cases: Mapping[str, Traffic] | None = None) -> dict[tuple[str, str], RxCost]:
    """{(case, kernel): RxCost} with ``costs`` (default: the 2-parameter calibration)."""
    c = calibrate().two_param if costs is None else _costs(costs)
    cases = prediction_cases() if cases is None else cases
    if not cases:
        raise ArgumentError("cases must not be empty", param="cases")
    for name, t in cases.items():
        if not isinstance(t, Traffic):
            raise ArgumentError(f"cases[{name!r}] must be a cost.Traffic (cost.mix), got {t!r}", param="cases")
    for k in kernels:  # named here: rx_cost would blame its own "kernel"
        if not isinstance(k, Kernel):
            check_choice("kernels", k, known_kernels(), "kernel versions (vnetlab.known_kernels())",
                         function="cost.predictions")
    return {(name, k): rx_cost(t, k, c) for name, t in cases.items() for k in kernels}


@public
def predictions_table(costs: Costs | Mapping[str, Any] | None = None, *, kernels: Sequence[str] = KERNELS) -> str:
    """Text table: kpps per case and kernel, with the path mix and packets per GRO skb; each case's label on a
    line of its own so that eight kernels fit in 100 columns."""
    res = predictions(costs, kernels=kernels)
    cases = prediction_cases()
    lines = ["Predicted receive rate, kpps on one CPU (2-parameter calibration unless given costs)",
             f"{'':20}" + "".join(f"{k:>9s}" for k in kernels)]
    for name, t in cases.items():
        lines.append(t.label)
        lines.append(f"{'  kpps':20}" + "".join(f"{res[(name, k)].pps / 1e3:9.0f}" for k in kernels))
        shares = [100 * res[(name, k)].ops.path_counts["build_skb"] / res[(name, k)].ops.packets for k in kernels]
        lines.append(f"{'  build_skb share %':20}" + "".join(f"{v:9.1f}" for v in shares))
        lines.append(f"{'  packets/GRO skb':20}"
                     + "".join(f"{res[(name, k)].ops.packets_per_gro_skb:9.2f}" for k in kernels))
    return "\n".join(lines)


@dataclass(frozen=True)
class Breakdown:
    """Where the gain from ``base`` to ``new`` comes from, by operation group (ns per packet saved)."""

    traffic: Traffic
    base: RxCost
    new: RxCost

    @property
    def saved_ns(self) -> dict[str, float]:
        """ns per packet saved, per group (positive = cheaper on the new kernel)."""
        return {g: self.base.group_ns(g) - self.new.group_ns(g) for g in OP_GROUPS}

    @property
    def total_saved_ns(self) -> float:
        return self.base.ns_per_packet - self.new.ns_per_packet

    @property
    def gro_saved_ns(self) -> float:
        """GRO's share: GRO operations plus the stack cost GRO amortises (the stack runs once per skb handed up)."""
        s = self.saved_ns
        return s["gro"] + s["stack"]

    @property
    def alloc_copy_saved_ns(self) -> float:
        return self.saved_ns["alloc_copy"]

    def report(self) -> str:
        b, n = self.base, self.new
        total = self.total_saved_ns
        lines = [f"{self.traffic.label}: {b.ops.kernel} -> {n.ops.kernel}: {b.pps:,.0f} -> {n.pps:,.0f} pps "
                 f"({100 * (n.pps / b.pps - 1):+.1f}%), {total:+.1f} ns/packet saved"]
        for kernel_cost in (b, n):
            o = kernel_cost.ops
            lines.append(f"  {o.kernel}: paths {_shares(o.path_counts)}, copy-path head {o.head_kind}; GRO aggregates: "
                         f"{'yes' if o.aggregates else 'no'}; {o.packets_per_gro_skb:.2f} packets per GRO skb, "
                         f"{o.sk_buffs / o.gro_skbs:.2f} sk_buffs per GRO skb, stack "
                         f"{kernel_cost.group_ns('stack'):.1f} ns/packet")
        for g, v in self.saved_ns.items():
            share = f"{100 * v / total:6.1f}%" if total else "   n/a"
            lines.append(f"  {GROUP_NAMES[g]:52s} {v:+8.1f} ns  {share}")
        gshare = f"{100 * self.gro_saved_ns / total:.1f}%" if total else "n/a"
        lines.append(f"  => allocation and copy: {self.alloc_copy_saved_ns:+.1f} ns; GRO (incl. stack amortisation): "
                     f"{self.gro_saved_ns:+.1f} ns ({gshare} of the gain)")
        if not (b.ops.aggregates or n.ops.aggregates) and b.ops.gro:
            lines.append("  GRO does not aggregate this flow on either kernel (udp4_gro_receive: no UDP_GRO socket, "
                         "so udp_encap_needed_key is off and sk = NULL; no NETIF_F_GRO_UDP_FWD; no "
                         "NETIF_F_GRO_FRAGLIST): every packet is flushed alone, so the frag slot build_skb saves is "
                         "never used and 'friendly to GRO' does not apply here")
        return "\n".join(lines)


@public
def breakdown(traffic: Traffic, base: str | Kernel, new: str | Kernel,
              costs: Costs | Mapping[str, Any] | None = None) -> Breakdown:
    """What ``new`` saves over ``base`` (two kernels: a version or a Kernel) for ``traffic``, per operation."""
    for name, value in (("base", base), ("new", new)):
        if isinstance(value, str):  # named here: rx_cost would blame its own "kernel"
            check_choice(name, value, known_kernels(), "a kernel version (vnetlab.known_kernels())",
                         function="cost.breakdown")
    c = calibrate().two_param if costs is None else _costs(costs)
    return Breakdown(traffic, rx_cost(traffic, base, c), rx_cost(traffic, new, c))


@public
def gain_breakdown(costs: Costs | Mapping[str, Any] | None = None) -> str:
    """Which part of build_skb's gain is allocation and copy, which is GRO: the seed, then GRO-friendly flows."""
    c = calibrate().two_param if costs is None else _costs(costs)
    m = seed_measurement()
    cases = prediction_cases()
    parts = ["Seed benchmark (the commit's own measurement):",
             breakdown(m.traffic, m.baseline_kernel, m.patched_kernel, c).report(), "",
             "Where 'friendly to GRO' does apply (flows GRO aggregates):"]
    for key in ("tcp1448_gro", "udp1000_udp_gro"):
        t = cases[key]
        for base in (m.baseline_kernel, rx.HEAD_CASES["eth_hlen"].kernels[0]):
            parts.append(breakdown(t, base, m.patched_kernel, c).report())
    parts += ["", f"What GRO itself buys on {m.patched_kernel} (same flows with NETIF_F_GRO off):"]
    for key in ("udp1000", "tcp1448_gro", "udp1000_udp_gro"):
        t = cases[key]
        on, off = rx_cost(t, m.patched_kernel, c), rx_cost(t, m.patched_kernel, c, gro_on=False)
        parts.append(f"  {t.label:36s} GRO off {off.pps / 1e3:7.0f} kpps (stack {off.group_ns('stack'):6.1f} ns/packet)"
                     f" -> GRO on {on.pps / 1e3:7.0f} kpps (stack {on.group_ns('stack'):6.1f} ns/packet, "
                     f"{on.ops.packets_per_gro_skb:.2f} packets per GRO skb)")
    return "\n".join(parts)


@public
def report(costs: Costs | Mapping[str, Any] | None = None) -> str:
    """Everything the notebook prints: calibration, predictions per kernel, and the gain breakdown."""
    cal = calibrate(costs)
    return "\n\n".join((cal.report(), predictions_table(cal.two_param), gain_breakdown(cal.two_param)))
