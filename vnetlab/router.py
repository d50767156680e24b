"""The VLAN NAT router of commit 2e4ef10f5850 and its throughput model.

2e4ef10f5850 ("net: add GSO UDP L4 and GSO fraglists to the list of software-backed types", Alexander
Lobakin, v5.11) put GSO_UDP_L4 and GSO_FRAGLIST into NETIF_F_GSO_SOFTWARE. :func:`router_scenario` receives
one flow with GRO, routes it as one skb and sends it out through a VLAN (or macvlan, bond, bridge) on a NIC
with :func:`vnetlab.xmit.send`; :func:`router_throughput` turns the operations counted there into goodput
under per-operation costs from data/router_costs.toml (order-of-magnitude assumptions, see LIMITATIONS).

NAT rewrites the head of a fraglist GRO skb only. Wherever that skb is segmented -- at a device that lacks
GSO_FRAGLIST, or by the receiving socket when a veth hands it over whole -- __udp_gso_segment_list copies the
head's addresses and ports into the other segments only on kernels with the rule ``udp_gso_list_nat_fix``
(``udp6_gso_list_nat_fix`` for IPv6); :attr:`RouterResult.nat_translated` counts what arrives translated.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from vnetlab import features as _features
from vnetlab import udp as _udp
from vnetlab.checks import In, IpVersion, UdpPayloadLen, check_choice, check_float, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, IP_HLEN, UDP_GRO_CNT_MAX, UDP_HLEN
from vnetlab.profiles import DEFAULT_KERNEL, Kernel
from vnetlab.profiles import kernel as _kernel
from vnetlab.segment import check_ip, gso_skb, max_gro_segs
from vnetlab.stack import UPPERS as STACK_UPPERS
from vnetlab.stack import Stack, build_stack
from vnetlab.xmit import Hop, TxResult, send

__all__ = [
    "COST_OF_OP", "GRO_MODES", "LIMITATIONS", "UPPERS", "RouterCosts", "RouterResult", "RouterThroughput",
    "LostSegments", "route_device", "router_stack", "lost_segments", "router_gap", "router_gap_requirements",
    "router_scenario", "router_throughput", "sensitivity",
]


GRO_MODES = ("fraglist", "udp_fwd", "off")
# every stack vnetlab.stack builds, and the bridge crossed port to port (br_forward: the frame leaves by eth0)
UPPERS = (*STACK_UPPERS, "bridge_forward")
#: ``nic=VETH``: eth0 is a veth whose peer (PEER) leads to the receiving host's UDP socket (the lab's vlan_veth).
VETH, PEER = "veth", "peer0"


@dataclass(frozen=True)
class RouterResult:
    """One GRO batch forwarded by the router: how it was received, where it was segmented, what left.

    ``packets_in``: UDP packets received; ``gro_skbs``: skbs handed to IP (1 when GRO aggregated them all);
    ``tx``: the :class:`TxResult` of each skb sent; ``received``: with a veth egress, what the UDP socket
    behind its peer gets (:func:`vnetlab.udp.udp_recv`), else None; ``stack``: the :class:`vnetlab.stack.Stack`
    the skbs were sent down; ``nat_translated``: datagrams out
    (:attr:`datagrams_out`) that carry the NATed addresses and ports (see :data:`LIMITATIONS` and the notes);
    ``notes``: kernel-specific remarks.
    """

    kernel: Kernel | str  # the kernel the scenario ran (a lab kernel keeps its patch rules)
    nic: str
    gro: str
    upper: str
    packets_in: int
    gso_size: int
    gro_skbs: int
    egress: str
    tx: tuple[TxResult, ...]
    nat_translated: int
    notes: tuple[str, ...] = ()
    ip: int = 4
    received: _udp.UdpRecv | None = None
    stack: Stack | None = field(default=None, compare=False, repr=False)  # the devices it went down

    @property
    def segmented_at(self) -> str | None:
        return next((t.segmented_at for t in self.tx if t.segmented_at), None)

    @property
    def wire_packets(self) -> int:
        return sum(t.wire_packets for t in self.tx)

    @property
    def payload_bytes(self) -> int:
        return sum(t.payload_bytes for t in self.tx)

    @property
    def datagrams_out(self) -> int:
        """Datagrams leaving the router: wire packets of a NIC, or what the socket behind a veth peer reads."""
        return self.received.calls if self.received is not None else self.wire_packets

    @property
    def hops(self) -> tuple[Hop, ...]:
        """The hops of the first skb sent (all skbs of a batch take the same path)."""
        return self.tx[0].hops if self.tx else ()

    @property
    def ops(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for t in self.tx:
            total.update(t.ops)
        total["rx_packets"] = self.packets_in
        total["gro_packets"] = self.packets_in if self.gro != "off" and self.gro_skbs < self.packets_in else 0
        total["route_nat_skbs"] = self.gro_skbs
        return dict(total)

    def describe(self) -> str:
        head = (f"kernel {self.kernel}, nic {self.nic}, GRO {self.gro}, egress {self.egress} ({self.upper}): "
                f"{self.packets_in} packets in, {self.gro_skbs} skb(s) routed, {self.wire_packets} out, "
                f"segmented at {self.segmented_at or 'no device (hardware or none)'}")
        return "\n".join([head, *(str(h) for h in self.hops), *self.notes])


@public
def router_stack(*, kernel: str | Kernel, upper: str, nic: str = "router",
                 nic_params: Mapping[str, Any] | None = None, port_nic: str | None = None) -> Stack:
    """The router's egress stack, made by vnetlab.stack.build_stack: eth0 (``nic``, a key of vnetlab.stack.NICS)
    and ``upper`` on it.

    "vlan" eth0.10 on eth0; "macvlan" mv0 on eth0; "bond" bond0 with eth0 enslaved; "bridge" br0 with eth0
    as port (egress br0); "bridge_forward" the same stack with egress eth0; "none" eth0 itself; any other key of
    vnetlab.stack.UPPERS (e.g. "vlan_on_bond": bond0.10 on bond0 on eth0) the same way. ``port_nic`` adds
    eth1 of that driver as another bond slave or bridge port. ``nic=VETH`` makes eth0 a veth with peer PEER (the
    lab's vlan_veth).
    """
    if upper not in UPPERS:
        raise ArgumentError(f"upper must be one of {UPPERS}, got {upper!r}", param="upper")
    return build_stack(kernel=kernel, upper="bridge" if upper == "bridge_forward" else upper, nic=nic,
                       nic_params=nic_params, port_nic=port_nic, lower_name="eth0", peer_name=PEER)


@public
def route_device(stack: Stack, upper: str) -> Any:
    """The route device: a bridged frame (bridge_forward) leaves through the port, the rest through the top."""
    return stack.port if upper == "bridge_forward" else stack.egress


@public
def router_scenario(
    *,
    kernel: str | Kernel = DEFAULT_KERNEL,
    nic: str = "router",
    nic_params: Mapping[str, Any] | None = None,
    gro: str = "fraglist",
    upper: str = "vlan",
    segs: Annotated[int, In(1, UDP_GRO_CNT_MAX, "datagrams per GRO skb: UDP_GRO_CNT_MAX")] | None = None,
    gso_size: UdpPayloadLen | None = None,
    port_nic: str | None = None,
    ip: IpVersion = 4,
) -> RouterResult:
    """UDP received with GRO, routed and NATed as one skb, sent out through ``upper`` on a NIC.

    ``gro``: "fraglist" (rx-gro-list, NETIF_F_GRO_FRAGLIST, 5.6+), "udp_fwd" (rx-udp-gro-forwarding,
    NETIF_F_GRO_UDP_FWD, ~5.12+; on older kernels the packets are forwarded one by one) or "off".
    ``upper``: "vlan" (eth0.10 on eth0), "macvlan", "bond" (eth0 enslaved), "bridge" (routed out through
    br0 with eth0 as port), "bridge_forward" (bridged port-to-port: br_forward -> dev_queue_xmit on the
    port, br0's own validate never runs), "none" (eth0 directly), or a nested stack of vnetlab.stack.UPPERS
    ("vlan_on_bond", "macvlan_on_vlan", ...: routed out through the top device). ``nic``/``nic_params`` choose the
    lower device (a key of vnetlab.stack.NICS: "router", "virtio_net", "ixgbe", ...), or ``nic="veth"``: eth0
    is a veth and :attr:`RouterResult.received` is the UDP socket behind its peer. ``port_nic``: a second NIC
    (a key of vnetlab.stack.NICS) to add as another bridge port or bond slave (the ONE_FOR_ALL subtlety needs
    some port's features).
    ``ip``: 4 or 6; ``gso_size`` defaults to the largest UDP payload the egress MTU carries (1472 for IPv4,
    1452 for IPv6 at MTU 1500); ``segs`` to what one GRO skb holds (:func:`vnetlab.segment.max_gro_segs`).
    ``kernel``: a version or a :class:`vnetlab.profiles.Kernel` whose rules apply (e.g. a lab kernel's).
    """
    where = "router.router_scenario"
    check_choice("gro", gro, GRO_MODES, "rx-gro-list, rx-udp-gro-forwarding or neither", function=where)
    check_choice("upper", upper, UPPERS, "the device the routed skb leaves through", function=where)
    k = _kernel(kernel)
    kv = k.version
    check_ip(ip)
    notes: list[str] = []
    stack = router_stack(kernel=k, upper=upper, nic=nic, nic_params=nic_params, port_nic=port_nic)
    egress, eth = route_device(stack, upper), stack.port
    if gso_size is None:
        gso_size = getattr(egress, "mtu", ETH_DATA_LEN) - IP_HLEN[ip] - UDP_HLEN
    if segs is None:
        segs = max_gro_segs(gso_size, ip=ip)
    check_int("segs", segs, 1, UDP_GRO_CNT_MAX, "UDP GRO merges at most UDP_GRO_CNT_MAX packets", function=where)
    if upper == "bridge_forward":
        notes.append("bridged port to port: br_forward -> br_dev_queue_push_xmit -> dev_queue_xmit(eth0); "
                     "br0's features are never consulted (net/bridge/br_forward.c, 6.1)")
    aggregate = gro == "fraglist" or (gro == "udp_fwd" and "GRO_UDP_FWD" in _features.table(k).bits)
    if gro == "udp_fwd" and not aggregate:
        notes.append(f"kernel {kv} has no NETIF_F_GRO_UDP_FWD (added ~5.12): packets are forwarded one by one")
    if aggregate and segs > 1:
        skbs = [gso_skb(segs=segs, gso_size=gso_size, fraglist=gro == "fraglist", ip=ip)]
    else:
        skbs = [gso_skb(segs=1, gso_size=gso_size, ip=ip) for _ in range(segs)]
    # a routed packet leaves through the route device's IP output; a bridged frame only through the port
    route = upper != "bridge_forward"
    tx = tuple(send(egress, s, kernel=k, port=eth, ip=ip, route=route) for s in skbs)
    # net/ipv4/udp.c udp_queue_rcv_skb -> udp_rcv_segment: the socket behind a veth segments a GSO skb it gets
    recv = [_udp.udp_recv(t.peer_rx.delivered, ip=ip, kernel=k) for t in tx if t.peer_rx is not None]
    received = (_udp.UdpRecv(tuple(x for r in recv for x in r.sizes), tuple(x for r in recv for x in r.gso_sizes),
                             sum(r.segmented for r in recv), sum(r.kept_headers for r in recv)) if recv else None)
    kept_tx = sum(t.ops.get("kept_header_segs", 0) for t in tx)
    kept_rx = received.kept_headers if received is not None else 0
    out = received.calls if received is not None else sum(t.wire_packets for t in tx)
    translated = out - kept_tx - kept_rx
    if "skb_segment_list" in {h.method for t in tx for h in t.hops}:
        notes.append("fraglist GRO skb segmented with skb_segment_list: no new skbs; each segment keeps the IP/UDP "
                     "header it arrived with, only the head's link header is copied in front of it")
    if received is not None and received.segmented:
        notes.append(f"{eth.name} handed the GRO skb to {PEER} whole; the receiving socket segments it "
                     "(udp_queue_rcv_skb -> udp_rcv_segment -> __udp_gso_segment_list)")
    if kept_tx or kept_rx:
        rule = "udp_gso_list_nat_fix" if ip == 4 else "udp6_gso_list_nat_fix"
        notes.append(f"kernel {kv}: skb_segment_list copies only the MAC header to each frag_list segment and "
                     f"nothing rewrites their IP/UDP headers, so after NAT only the head segment of each GRO skb "
                     f"carries the translated addresses and ports ({rule} = false: {k.source(rule)})")
    return RouterResult(k, nic, gro, upper, segs, gso_size, len(skbs), egress.name, tx, translated, tuple(notes),
                        ip, received, stack)


# ---------------------------------------------------------------------------------------------------------
# Throughput model

LIMITATIONS = """\
What this throughput model can and cannot tell you.

- Every per-operation cost in data/router_costs.toml is an order-of-magnitude assumption for an in-order
  MIPS32 core (MT7621-class, 880 MHz). None was measured on the patch author's board, whose SoC, NIC
  driver (a work-in-progress, never merged) and traffic generator are unknown.
- The model counts operations the kernel code really performs (dev_queue_xmit calls, skbs allocated by
  skb_segment, segments built by skb_segment_list, bytes copied) and multiplies them by those costs. It has
  no caches, no contention, no interrupts or NAPI budget, no qdisc or TX-ring limits, no drops, no
  retransmissions and no receiver. Any effect that lives there (ring overflow when a GRO batch becomes
  44 packets at once, cache misses on 44 fresh skbs, a receiver discarding packets) is invisible to it.
- "20 Mbps -> 1 Gbps" is one measurement quoted in a commit message. A 50x gap needs the slow path to
  cost about 50x the fast path per packet (when the fast path is at link speed), i.e. hundreds of
  thousands of cycles per packet on an 880 MHz core. Software segmentation, even with plausible costs
  several times higher than assumed here, is nowhere near that; see router_gap_requirements().
- One mechanism that gives a gap of that size without CPU cost: in mainline 5.10 skb_segment_list copied
  only the MAC header to each segment, so after NAT only the head segment of each fraglist GRO skb carried
  translated addresses (kernel rule udp_gso_list_nat_fix; the lab measured exactly one translated datagram
  per GRO skb on Debian 5.10 with the fix reverted, lab/README.md). If the receiver discarded the rest,
  goodput would be about the link's UDP goodput / segments per GRO skb: lost_segments() computes it (the
  one number the workbook quotes). Whether that happened on the author's setup is inferred, not measured.
"""


_COST_MEANING = "cycles per operation or per byte, bytes for ethernet_overhead_bytes; 0 takes it as free"
_COST_RATES = {"cpu_hz": "the router CPU's clock, Hz", "link_bps": "the link rate, bit/s"}  # divisors: > 0


@dataclass(frozen=True)
class RouterCosts:
    """Per-operation costs (cycles unless the name says per_byte) and the CPU/link they run on.

    Defaults come from data/router_costs.toml; :meth:`from_table` reads it and keyword overrides replace
    single values. ``sources`` keeps the provenance of every value.
    """

    values: Mapping[str, float]
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every value finite and >= 0 (0: an operation taken as free); the CPU clock and the link rate divide.
        for name, value in self.values.items():
            if name in _COST_RATES:
                check_float(name, value, 0, None, _COST_RATES[name], lo_excluded=True, function="router.RouterCosts")
            else:
                check_float(name, value, 0, None, _COST_MEANING, function="router.RouterCosts")
        missing = sorted(_COST_NAMES - set(self.values))
        if missing:
            raise ArgumentError(f"router.RouterCosts: values lacks {', '.join(missing)} (data/router_costs.toml "
                                "has them all; RouterCosts.from_table(**overrides) starts from it)",
                                function="router.RouterCosts", param="values")

    @classmethod
    @public
    def from_table(cls, **overrides: Annotated[float, In(0, None, _COST_MEANING)]) -> RouterCosts:
        from vnetlab.tables import load_table

        table = load_table("router_costs")
        values: dict[str, float] = {}
        sources: dict[str, str] = {}
        for sec in table:
            section = table[sec]
            for name in section.values:
                values[name] = float(section.typed(name, (int, float)))
                sources[name] = section.source(name)
        for name, value in overrides.items():
            if name not in values:
                raise ArgumentError(f"router.RouterCosts.from_table: unknown cost parameter {name!r}; known: "
                                    f"{', '.join(sorted(values))}", function="router.RouterCosts.from_table",
                                    param=name)
            values[name] = float(value)
            sources[name] = "override"
        return cls(values, sources)  # __post_init__ checks the ranges

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    @public
    def with_(self, **overrides: Annotated[float, In(0, None, _COST_MEANING)]) -> RouterCosts:
        merged = dict(self.values)
        for name, value in overrides.items():
            if name not in merged:
                raise ArgumentError(f"router.RouterCosts.with_: unknown cost parameter {name!r}; known: "
                                    f"{', '.join(sorted(merged))}", function="router.RouterCosts.with_", param=name)
            merged[name] = float(value)
        return RouterCosts(merged, {**self.sources, **{n: "override" for n in overrides}})


COST_OF_OP = {
    # ops key -> cost parameter (cycles per unit)
    "rx_packets": "rx_per_packet",
    "gro_packets": "gro_per_packet",
    "route_nat_skbs": "route_nat_per_skb",
    "dev_queue_xmit": "dev_queue_xmit_per_skb",
    "validate_xmit_skb": "validate_xmit_per_skb",
    "vlan_start_xmit": "upper_start_xmit_per_skb",
    "macvlan_start_xmit": "upper_start_xmit_per_skb",
    "bond_start_xmit": "upper_start_xmit_per_skb",
    "bridge_start_xmit": "upper_start_xmit_per_skb",
    "skb_segment_segs": "skb_segment_per_seg",
    "skb_segment_list_segs": "skb_segment_list_per_seg",
    "vlan_tag_insert_sw": "sw_vlan_insert_per_skb",
    "driver_xmit_skbs": "driver_tx_per_skb",
    "wire_packets": "tx_complete_per_packet",
    "segment_copied_bytes": "copy_per_byte",
    "linearized_bytes": "copy_per_byte",
}
_COST_NAMES = frozenset(COST_OF_OP.values()) | {"cpu_hz", "link_bps", "ethernet_overhead_bytes", "dma_cache_per_byte"}


@dataclass(frozen=True)
class RouterThroughput:
    """Throughput of one :func:`router_scenario` under :class:`RouterCosts`."""

    cycles_per_batch: float
    cycles_by_op: Mapping[str, float]
    packets_per_batch: int
    cpu_pps: float
    link_pps: float
    goodput_bps: float
    bound: str  # "cpu" or "link"
    translated_fraction: float

    @property
    def cycles_per_packet(self) -> float:
        return self.cycles_per_batch / self.packets_per_batch


@public
def router_throughput(result: RouterResult, costs: RouterCosts | None = None, *,
                      drop_untranslated: bool = False) -> RouterThroughput:
    """UDP goodput (payload bits per second) of the router in ``result``: the CPU-bound packet rate
    (cpu_hz / cycles per packet) or the link-bound rate (link_bps / wire bits per frame), whichever is
    lower. ``drop_untranslated`` counts only wire packets carrying the NATed header (before c3df39ac9b0e the
    segments after the head keep their un-NATed header: the kernel rule udp_gso_list_nat_fix, measured in the
    lab). See LIMITATIONS for what the numbers mean."""
    c = costs or RouterCosts.from_table()
    ops = result.ops
    by_op: dict[str, float] = {}
    for op, param in COST_OF_OP.items():
        if ops.get(op):
            by_op[op] = ops[op] * c[param]
    wire_bytes = ops.get("wire_bytes", 0)
    by_op["dma_cache_bytes"] = 2 * wire_bytes * c["dma_cache_per_byte"]  # received and transmitted once
    total = sum(by_op.values())
    n = max(1, result.wire_packets)
    cpu_pps = c["cpu_hz"] / (total / n) if total else math.inf  # every cost 0: the CPU is free, the link bounds
    frame = wire_bytes / n + c["ethernet_overhead_bytes"]
    link_pps = c["link_bps"] / (8 * frame) if frame else math.inf
    pps = min(cpu_pps, link_pps)
    fraction = result.nat_translated / max(1, result.datagrams_out) if drop_untranslated else 1.0
    payload = result.payload_bytes / n
    goodput = pps * payload * 8 * fraction if payload and fraction else 0.0  # nothing forwarded: 0, not inf * 0
    return RouterThroughput(total, by_op, n, cpu_pps, link_pps, goodput,
                            "cpu" if cpu_pps < link_pps else "link", fraction)


@public
def router_gap(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
               drop_untranslated: bool = False) -> float:
    """goodput(after) / goodput(before) under the same costs."""
    a = router_throughput(after, costs, drop_untranslated=drop_untranslated)
    b = router_throughput(before, costs, drop_untranslated=drop_untranslated)
    if not b.goodput_bps:
        raise ArgumentError("router.router_gap: before forwards no UDP payload (goodput 0), so no ratio exists; "
                            f"{before.describe()}", function="router.router_gap", param="before")
    return a.goodput_bps / b.goodput_bps


@public
def sensitivity(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
                factors: Sequence[float] = (0.5, 2.0)) -> dict[str, tuple[float, ...]]:
    """How the gap moves when one cost at a time is scaled by each of ``factors`` (a tornado table):
    parameter -> gap at each factor. CPU and link parameters are scaled too."""
    c = costs or RouterCosts.from_table()
    out: dict[str, tuple[float, ...]] = {}
    for name in sorted(c.values):
        out[name] = tuple(router_gap(before, after, c.with_(**{name: c[name] * f})) for f in factors)
    return out


@public
def router_gap_requirements(before: RouterResult, after: RouterResult, costs: RouterCosts | None = None, *,
                            target: Annotated[float, In(0, None, "goodput after / before", lo_excluded=True)] = 50.0,
                            max_factor: Annotated[float, In(1, None, "times the default value")] = 1e6,
                            ) -> dict[str, float | None]:
    """For each cost parameter alone: the value it would need for goodput(after)/goodput(before) to reach
    ``target`` (None if no value up to ``max_factor`` times the default gets there). This is the "what
    has to be true for a 50x gap" question; compare each answer with what the operation could cost."""
    c = costs or RouterCosts.from_table()
    if not target > 0:
        raise ArgumentError(f"target must be a positive ratio, got {target!r}", param="target")
    out: dict[str, float | None] = {}
    for name in sorted(c.values):
        base = c[name] if c[name] > 0 else 1.0

        def gap(f: float, name: str = name, base: float = base) -> float:
            return router_gap(before, after, c.with_(**{name: base * f}))

        lo, hi = 0.0, max_factor
        if gap(hi) < target:
            out[name] = None
            continue
        for _ in range(100):
            mid = (lo + hi) / 2 if hi / max(lo, 1e-12) < 4 else math.sqrt(max(lo, 1e-12) * hi)
            if gap(mid) >= target:
                hi = mid
            else:
                lo = mid
        out[name] = base * hi
    return out


# ---------------------------------------------------------------------------------------------------------
# The "1 Gbps / N" number: one function, quoted everywhere


@dataclass(frozen=True)
class LostSegments:
    """The delivery the untranslated-segment mechanism leaves (:func:`lost_segments`).

    ``n``: datagrams per fraglist GRO skb (max_gro_segs); ``delivered``: NATed / sent, from router_scenario
    (1/N without the NAT fix); ``link_bps``: the link (data/router_costs.toml); ``full_goodput_bps``: the
    model's UDP payload goodput with every datagram counted (link-bound); ``goodput_bps``: the same with only
    the NATed datagrams counted (router_throughput(drop_untranslated=True)).
    """

    kernel: str
    gso_size: int
    n: int
    delivered: float
    link_bps: float
    full_goodput_bps: float
    goodput_bps: float

    @property
    def mbps(self) -> int:
        """``goodput_bps`` in whole Mbps: the number every notebook quotes."""
        return round(self.goodput_bps / 1e6)

    def describe(self) -> str:
        """One line that says how the number is made (an inference from the model, not a measurement)."""
        return (f"kernel {self.kernel}: 1 in {round(1 / self.delivered)} datagrams NATed (N = {self.n} per GRO skb of "
                f"{self.gso_size}-byte datagrams)\n{self.full_goodput_bps / 1e6:,.0f} Mbps of UDP payload on a "
                f"{self.link_bps / 1e9:g} Gbps link / {round(1 / self.delivered)} = {self.mbps} Mbps")


@public
def lost_segments(*, kernel: str | Kernel = "5.10", nic: str = "router", upper: str = "vlan",
                  gso_size: UdpPayloadLen = 1472, ip: IpVersion = 4, costs: RouterCosts | None = None) -> LostSegments:
    """Goodput of the seed's VLAN NAT router when only the NATed datagrams count: the workbook's "1 Gbps / N".

    Before c3df39ac9b0e (v5.11-rc7; 3d6df63a5cbe in 5.10.15) __udp_gso_segment_list() (net/ipv4/udp_offload.c)
    left every segment but the head with its un-NATed header (kernel rule udp_gso_list_nat_fix), so a router
    that fills its link delivers 1 datagram in N usable. The default is mainline 5.10 with 1472-byte datagrams,
    N = 44: the link-bound goodput (UDP payload, not the link's raw 1 Gbps) divided by 44.
    """
    c = costs or RouterCosts.from_table()
    r = router_scenario(kernel=kernel, nic=nic, gro="fraglist", upper=upper, gso_size=gso_size, ip=ip)
    full = router_throughput(r, c)
    lost = router_throughput(r, c, drop_untranslated=True)
    return LostSegments(r.kernel, r.gso_size, r.packets_in, lost.translated_fraction, c["link_bps"],
                        full.goodput_bps, lost.goodput_bps)
