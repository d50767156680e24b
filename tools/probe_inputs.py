#!/usr/bin/env python3
"""Bad-input probe over every public callable of vnetlab (vnetlab/widgets excepted: its own probe covers it).

For each public function and method (each module's ``__all__``, or its public names, and the public methods of
those classes, as tests/test_boundary.py walks them), the probe first makes one *valid* call (the package's own
defaults, a fixture by parameter name or type, or a call written below), then replaces one argument at a time with
bad values built from that parameter's annotation and kind: wrong types (None, str, float for int, bool for int,
bytes, list, dict, numpy scalars and arrays of the wrong dtype or shape, NaN, inf), values out of range (just
outside each ``In`` range, negative, 0, 2**31, 2**64), empty containers, unknown kernel versions, arches and
names, and objects of another kernel than the call's (mismatched combinations). Every other argument stays valid,
so the body runs. Each outcome is classified:

  good       ArgumentError naming the parameter (a **kwargs value: its key);
  documented the value is valid in kernel terms and the docstring says what it means (ACCEPTED below);
  hole       anything else: another exception type (numpy, KeyError, AttributeError, ...), an ArgumentError
             naming another parameter, a timeout, or the value accepted without a documented meaning.

    .venv/bin/python tools/probe_inputs.py                 # the table of counts per module
    .venv/bin/python tools/probe_inputs.py --holes         # and every hole: callable, parameter, input, outcome
    .venv/bin/python tools/probe_inputs.py --module rx     # only vnetlab.rx (a prefix: "live" takes live.*)

Callables that change the machine (create namespaces, run the lab, write files, attach XDP) or read sys.argv are
not called: SKIP lists them with why. Exit status: 0, or 1 with --fail-on-holes when a hole is left.
"""

from __future__ import annotations

import argparse
import collections
import collections.abc as cabc
import contextlib
import importlib
import inspect
import io
import math
import os
import pkgutil
import resource
import signal
import sys
import time
import types
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

import vnetlab
from vnetlab.checks import In, is_public, param_annotations
from vnetlab.errors import ArgumentError

# -- what is not called ---------------------------------------------------------------------------------------

# Each with why: these act on the machine (namespaces, devices, files, XDP, tracefs, the lab), so a probe that
# calls them with bad values would change the system; their argument checks are the annotations test_boundary
# sweeps, and tests/test_live*.py run them.
SKIP = {
    "vnetlab.widgets": "the widget panels: probed by their own round",
    "vnetlab.checks": "the decorator and its helpers: anything is valid input to a checker",
    "vnetlab.errors": "exception classes, raised by the package with its own message",
    "vnetlab.live.lab": "creates network namespaces and devices",
    "vnetlab.live.commands.run": "runs a command",
    "vnetlab.live.commands.enter_netns": "enters a network namespace",
    "vnetlab.live.commands.in_netns": "runs a function in a network namespace",
    "vnetlab.live.commands.off_event_loop": "runs a function on a thread",
    "vnetlab.live.experiments.mirror_lab": "runs the live lab",
    "vnetlab.live.experiments.udp_segment_lab": "runs the live lab",
    "vnetlab.live.experiments.veth_gro_lab": "runs the live lab",
    "vnetlab.live.experiments.vxlan_lab": "runs the live lab",
    "vnetlab.live.userns": "starts user-namespace children",
    "vnetlab.live.device_features.set_ethtool": "changes a device's features",
    "vnetlab.live.device_features.set_features": "changes a device's features",
    "vnetlab.live.netlink.set_netlink": "changes a device's features",
    "vnetlab.live.netlink.genl_socket": "opens a netlink socket in a namespace",
    "vnetlab.live.xdp": "attaches an XDP program",
    "vnetlab.live.capture.capture": "runs the live lab under tracefs",
    "vnetlab.live.capture_record": "runs the live lab or writes recordings",
    "vnetlab.live.capture_tracefs.TraceSession": "creates a tracefs instance",
    "vnetlab.live.capture_tracefs.leftover_instances": "reads tracefs",
    "vnetlab.live.capture_formats.write_capture": "writes a file",
    "vnetlab.live.recorded.record": "runs the live lab and writes a file",
    "vnetlab.live.measure": "runs the live lab",
    "vnetlab.live.capability.available": "probes the machine (namespaces)",
    "vnetlab.live.capability.require": "probes the machine (namespaces)",
    "vnetlab.room.report": "writes the board spool",
    "vnetlab.room.reported": "a decorator: takes a function",
    "vnetlab.viz.style.ShownFigure.set": "matplotlib's Artist.set",
    "vnetlab.features.FeatureSet.of_checked_bits": "the set operators' own constructor (exempt in test_boundary)",
    "vnetlab.profiles.Arch.skb_": "the kernel's size macros, element-wise over ints or arrays (exempt in "
                                 "test_boundary)",
    "vnetlab.profiles.Kernel.derived": "a cache: takes a key and a builder function",
}

# -- values the probe accepts: valid in kernel terms, with the meaning the docstring gives ----------------------

# (callable, parameter, input label) -> the documented meaning ("*": any callable, parameter or label).
ACCEPTED: dict[tuple[str, str, str], str] = {
    ("*", "label", "*"): "free text (a figure's or table's label)",
    ("*", "title", "*"): "free text (a figure's title)",
    ("vnetlab.cost.*", "costs", "empty-mapping"): "no overrides: the measured costs of data/rx_costs.toml",
    ("vnetlab.cost.predictions*", "kernels", "empty"): "no kernels: an empty table",
    ("vnetlab.gro.aggregate*", "skbs", "empty"): "no packets: GRO hands nothing up",
    ("vnetlab.gro*", "features", "empty"): "an empty feature set: NETIF_F_GRO off, every packet handed up alone",
    ("vnetlab.groflow.*", "features", "empty"): "an empty feature set: NETIF_F_GRO off",
    ("vnetlab.gro*", "gro_max_size", "zero"): "dev->gro_max_size 0 (ip link set gro_max_size 0, rtnetlink allows "
                                              "it): skb_gro_receive's p->len + len >= gro_max_size, nothing merges",
    ("vnetlab.gro_stream.simulate_stream", "seed", "*"): "any int seeds numpy's generator",
    ("vnetlab.gro_stream.simulate_stream", "payload_len", "zero"): "a 0-byte UDP payload (PayloadLen 0..IP_MAX_MTU)",
    ("vnetlab.rxbuf.*_buf_lens", "count", "zero"): "no buffers: an empty list",
    ("vnetlab.rxbuf.mergeable_buf_lens", "avg_pkt_len", "zero"): "the EWMA before any packet: min_buf_len",
    ("vnetlab.skbuff.napi_alloc_skb", "length", "zero"): "napi_alloc_skb(napi, 0): a head with only the headroom",
    ("vnetlab.profiles.Kernel.with_overrides", "name", "*"): "any non-empty lab kernel id names the variant",
    ("vnetlab.profiles.Kernel.with_overrides", "overrides", "empty-mapping"): "no overrides: the profile renamed",
    ("vnetlab.profiles.kernel_section", "*", "*"): "None: data/<table>.toml has no such section (documented)",
    ("vnetlab.exercises.check", "answer", "*"): "any answer gets a Verdict: the wrong kind is the 'kind' hint",
    ("vnetlab.tables.parse_table", "name", "*"): "the table's name, used in its messages only",
    ("vnetlab.netdev.namespace.*", "*", "unknown-name"): "a valid interface name (dev_valid_name)",
    ("vnetlab.netdev.namespace.*", "*", "upper"): "a valid interface name (dev_valid_name)",
    ("vnetlab.netdev.core.NetCore.has", "name", "*"): "False: this kernel has no such NETIF_F bit",
    ("vnetlab.netdev.core.NetCore.m_opt", "name", "*"): "0: this kernel has no such NETIF_F bit (documented)",
    ("vnetlab.netdev.core.Device.set_gso_max", "*", "zero"): "0 is in do_setlink's range (0..GSO_MAX_SIZE/SEGS)",
    ("vnetlab.netdev.*", "features", "zero"): "no NETIF_F bit set",
    ("vnetlab.netdev.*", "skbs", "empty"): "nothing to send",
    ("vnetlab.netdev.core.Device.ethtool_K", "settings", "empty-mapping"): "ethtool -K with no change",
    ("*", "skb", "skb-tcp-for-udp"): "a TCP GSO skb is an skb this function takes",
}

# (callable, parameter) -> the other parameters an error about a combination may name instead.
COMBINATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("vnetlab.gro_stream.simulate_stream", "payload_len"): ("n_packets",),  # one payload per packet, or a mix
    ("vnetlab.rx.receive_mergeable", "buffers"): ("frame_len",),  # the frame must fit the buffers
    ("vnetlab.gro.head_case_flow", "payload_len"): ("case",),  # the case arises for some frame sizes only
    ("vnetlab.rx_classify.classify", "frame_lens"): ("truesizes",),  # one truesize or one per frame
    # vnetlab.kernel / vnetlab.arch raise the UnknownKernelError / UnknownArchError every kernel= / arch= gets
    ("vnetlab.profiles.kernel", "version"): ("kernel",),
    ("vnetlab.profiles.arch", "name"): ("arch",),
    ("vnetlab.profiles.resolve", "arch_name"): ("arch",),
}


def _match(pattern: str, name: str) -> bool:
    return pattern == "*" or pattern == name or (pattern.endswith("*") and name.startswith(pattern[:-1]))


def accepted(qual: str, pname: str, label: str) -> str | None:
    for (q, p, lab), meaning in ACCEPTED.items():
        if _match(q, qual) and _match(p, pname) and _match(lab, label):
            return meaning
    return None


# -- fixtures: one valid value of each kind the package takes -------------------------------------------------

class Fixtures:
    """Lazily built valid arguments (each built once; the probe never mutates them in place)."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._cache:
            self._cache[name] = getattr(self, "_make_" + name)()
        return self._cache[name]

    # profiles
    def _make_kernel(self):
        from vnetlab import profiles
        return profiles.kernel("6.1")

    def _make_kernel510(self):
        from vnetlab import profiles
        return profiles.kernel("5.10")

    def _make_arch(self):
        from vnetlab import profiles
        return profiles.arch("x86_64")

    def _make_arch_mips(self):
        from vnetlab import profiles
        return profiles.arch("mips32")

    # sk_buffs
    def _make_skb(self):
        from vnetlab import segment
        return segment.gso_skb(segs=4, gso_size=1400)

    def _make_tcp_skb(self):
        from vnetlab import segment
        return segment.gso_skb(l4="tcp", segs=4, gso_size=1448)

    def _make_rx_result(self):
        from vnetlab import rx
        return rx.receive(1000)

    def _make_rx_skbs(self):
        from vnetlab import gro
        return gro.receive_flow(1000, 4, l4="udp")

    # features and devices
    def _make_featureset(self):
        from vnetlab import features
        return features.FeatureSet.from_names(["SG", "HW_CSUM"], kernel="6.1")

    def _make_featureset510(self):
        from vnetlab import features
        return features.FeatureSet.from_names(["SG", "HW_CSUM"], kernel="5.10")

    def _make_ns(self):
        from vnetlab import netdev
        return netdev.Namespace(kernel="6.1")

    def _make_veth(self):
        return self.ns.veth("pv0", "pv1")[0]

    def _make_veth_pair(self):
        return self.ns.veth("pw0", "pw1")

    def _make_vxlans(self):
        from vnetlab import netdev
        ns = netdev.Namespace(kernel="6.1")
        a, b = ns.veth("u0", "u1")
        return ns.vxlan("vx0", vni=42, underlay=a), ns.vxlan("vx1", vni=42, underlay=b)

    def _make_ns510(self):
        from vnetlab import netdev
        return netdev.Namespace(kernel="5.10")

    def _make_veth510(self):
        return self.ns510.veth("qv0", "qv1")[0]

    # higher-level objects
    def _make_traffic(self):
        from vnetlab import cost
        return cost.mix({1000: 1})

    def _make_costs(self):
        from vnetlab import cost
        return cost.load_costs()

    def _make_stack(self):
        from vnetlab import stack
        return stack.build_stack(kernel="5.11")

    def _make_router_before(self):
        from vnetlab import router
        return router.router_scenario(kernel="5.10")

    def _make_router_after(self):
        from vnetlab import router
        return router.router_scenario(kernel="5.11")

    def _make_router_costs(self):
        from vnetlab import router
        return router.RouterCosts.from_table()

    def _make_doc(self):
        from vnetlab import labdata
        return labdata.load("mergeable", "6.1")

    def _make_gro_trace(self):
        from vnetlab import gro
        return gro.aggregate_trace(self.rx_skbs, l4="udp", udp_gro=True)

    def _make_figure(self):
        from vnetlab.viz import style
        return style.new_figure()


FX = Fixtures()


def fixture_for(pname: str, tp: Any, qual: str) -> Any:
    """A valid value for a required parameter, by its name, then its annotation; KeyError if none."""
    from vnetlab import features, netdev, profiles, skb
    by_name = {
        "kernel": "6.1", "version": "6.1", "arch": "x86_64", "arch_name": "x86_64", "k": FX.kernel, "a": FX.arch,
        "kv": FX.kernel, "payload_len": 1000, "frame_len": 1042, "truesize": 2048, "length": 1000,
        "count": 4, "n_packets": 4, "segs": 4, "gso_size": 1400, "skb": FX.skb, "skbs": FX.rx_skbs,
        "features": FX.featureset, "traffic": FX.traffic, "stack": FX.stack, "doc": FX.doc,
        "before": FX.router_before, "after": FX.router_after, "result": FX.rx_result, "trace": FX.gro_trace,
        "dev": FX.veth, "rcv": FX.veth, "fig": FX.figure, "key": "10.1", "name": "mergeable",
    }
    if pname in by_name:
        return by_name[pname]
    for base in _members(tp):
        base = _base(base)
        if base is profiles.Kernel:
            return FX.kernel
        if base is profiles.Arch:
            return FX.arch
        if base is skb.Skb:
            return FX.skb
        if base is features.FeatureSet:
            return FX.featureset
        if inspect.isclass(base) and issubclass(base, netdev.Device):
            return FX.veth
    raise KeyError(pname)


# Valid calls written out where names and types are not enough: qualname -> () -> (args, kwargs).
def _calls() -> dict[str, Callable[[], tuple[tuple, dict]]]:
    from vnetlab import ethtool, exercises, features, rxbuf, segment
    c: dict[str, Callable[[], tuple[tuple, dict]]] = {}
    c["vnetlab.cost.Calibration.predicted_pps"] = lambda: ((FX.costs,), {})
    c["vnetlab.cost.Costs.with_values"] = lambda: (({next(iter(FX.costs.values)): 10.0},), {})
    c["vnetlab.cost.RxCost.group_ns"] = lambda: (("ring",), {})
    c["vnetlab.cost.breakdown"] = lambda: ((FX.traffic, "5.12", "5.13"), {})
    c["vnetlab.cost.check_costs"] = lambda: ((dict(FX.costs.values),), {})
    c["vnetlab.cost.max_payload"] = lambda: (("udp",), {})
    c["vnetlab.cost.mix"] = lambda: (({1000: 1, 100: 3},), {})
    c["vnetlab.cost.op_counts"] = lambda: ((FX.traffic, "6.1"), {})
    c["vnetlab.cost.packet_op_counts"] = lambda: (([1042, 1042], [2048, 2048]), {"kernel": "6.1", "headers": 28})
    c["vnetlab.cost.rx_cost"] = lambda: ((FX.traffic, "6.1"), {})
    c["vnetlab.ethtool.EthtoolK.get"] = lambda: (("rx-checksumming",), {})
    c["vnetlab.ethtool.FeatureState.of"] = lambda: (((True, False),), {})
    c["vnetlab.ethtool.FeatureState.parse"] = lambda: (("on [fixed]",), {})
    c["vnetlab.ethtool.device_states"] = lambda: (([("tx-scatter-gather", 0)], 1, 1, 1), {})
    c["vnetlab.ethtool.expand"] = lambda: (("tso",), {})
    c["vnetlab.ethtool.format_k"] = lambda: (({"tx-scatter-gather": ethtool.FeatureState.of((True, False))},
                                              "eth0"), {})
    c["vnetlab.ethtool.from_printed"] = lambda: (("scatter-gather",), {})
    c["vnetlab.ethtool.legacy_flag"] = lambda: (("sg",), {})
    c["vnetlab.ethtool.legacy_members"] = lambda: (("sg",), {})
    c["vnetlab.ethtool.normalize_printed"] = lambda: (({"tx-scatter-gather": "on"},), {})
    c["vnetlab.ethtool.parse_K_args"] = lambda: (("sg off",), {})
    c["vnetlab.ethtool.parse_k"] = lambda: (("Features for eth0:\nrx-checksumming: on\n",), {})
    c["vnetlab.ethtool.pattern_match"] = lambda: (("tx-tcp-segmentation", "tx-tcp*-segmentation"), {})
    c["vnetlab.ethtool.printed_lines"] = lambda: (("Features for eth0:\nrx-checksumming: on\n",), {})
    c["vnetlab.ethtool.printed_name"] = lambda: (("tx-scatter-gather",), {})
    c["vnetlab.exercises.Verdict.__init__"] = lambda: ((True, "ok"), {})
    c["vnetlab.exercises.check"] = lambda: (("10.1", exercises.solution("10.1")), {})
    c["vnetlab.features.FeatureSet.__init__"] = lambda: ((features.bit("SG"),), {})
    c["vnetlab.features.FeatureSet.coerce"] = lambda: ((["SG"],), {})
    c["vnetlab.features.FeatureSet.from_bits"] = lambda: ((features.bit("SG"),), {})
    c["vnetlab.features.FeatureSet.from_ethtool"] = lambda: (({"tx-scatter-gather": True},), {})
    c["vnetlab.features.FeatureSet.from_names"] = lambda: ((["SG"],), {})
    c["vnetlab.features.add_tso_bits"] = lambda: ((FX.featureset.bits, FX.featureset.bits, "6.1"), {})
    c["vnetlab.features.bit"] = lambda: (("SG",), {})
    c["vnetlab.features.can_checksum_protocol"] = lambda: ((FX.featureset, 4), {})
    c["vnetlab.features.ethtool_name"] = lambda: (("SG",), {})
    c["vnetlab.features.from_ethtool_name"] = lambda: (("tx-scatter-gather",), {})
    c["vnetlab.features.gso_feature"] = lambda: (("UDP_L4",), {})
    c["vnetlab.features.gso_type_features"] = lambda: ((["UDP_L4"],), {})
    c["vnetlab.features.increment_bits"] = lambda: ((FX.featureset.bits, FX.featureset.bits,
                                                     FX.featureset.bits, "6.1"), {})
    c["vnetlab.features.intersect_bits"] = lambda: ((FX.featureset.bits, FX.featureset.bits, "6.1"), {})
    c["vnetlab.features.mask"] = lambda: (("GSO_SOFTWARE",), {})
    c["vnetlab.features.net_gso_ok"] = lambda: ((FX.featureset, ["UDP_L4"]), {})
    c["vnetlab.features.netdev_add_tso_features"] = lambda: ((FX.featureset, FX.featureset), {})
    c["vnetlab.features.netdev_increment_features"] = lambda: ((FX.featureset, FX.featureset, FX.featureset), {})
    c["vnetlab.features.netdev_intersect_features"] = lambda: ((FX.featureset, FX.featureset), {})
    c["vnetlab.features.skb_gso_bit"] = lambda: (("UDP_L4",), {})
    c["vnetlab.features.skb_gso_ok"] = lambda: ((FX.featureset, ["UDP_L4"]), {"has_frag_list": False})
    c["vnetlab.gro.GroTrace.packets_in_first_skb"] = lambda: ((), {})
    c["vnetlab.gro.aggregate"] = lambda: ((FX.rx_skbs,), {"l4": "udp", "udp_gro": True})
    c["vnetlab.gro.aggregate_trace"] = lambda: ((FX.rx_skbs,), {"l4": "udp", "udp_gro": True})
    c["vnetlab.gro.gro_segs"] = lambda: ((FX.skb,), {})
    c["vnetlab.gro.head_case_flow"] = lambda: (("build_skb", 1000, 4), {})
    c["vnetlab.gro.receive_flow"] = lambda: ((1000, 4), {})
    c["vnetlab.gro_stream.simulate_stream"] = lambda: ((64,), {})
    c["vnetlab.groflow.check_features"] = lambda: ((FX.featureset, None, FX.kernel), {})
    c["vnetlab.groflow.flag_bits"] = lambda: ((None, 0), {})
    c["vnetlab.groflow.has_feature"] = lambda: ((FX.featureset, "SG"), {})
    c["vnetlab.labdata.ethtool_k"] = lambda: _lab_ethtool_k()
    c["vnetlab.labdata.gro_skb_segs"] = lambda: (({"gro_skb_lens": [28 + 4 * 1472]}, 1472), {})
    c["vnetlab.labdata.gso_model"] = lambda: _lab_gso_model()
    c["vnetlab.labdata.kernel_label"] = lambda: (("6.1",), {})
    c["vnetlab.labdata.model_for_packet"] = lambda: ((FX.doc, _a_packet()), {})
    c["vnetlab.labdata.model_profile"] = lambda: (("6.1",), {})
    c["vnetlab.labdata.packets_per_gro_skb"] = lambda: (("5.10-plain", 1472), {})
    c["vnetlab.labdata.predicted_intact"] = lambda: _lab_predicted_intact()
    c["vnetlab.labdata.router_case_prediction"] = lambda: (("5.10-plain", "vlan_virtio", 4), {"payload": 1472})
    c["vnetlab.labdata.router_prediction"] = lambda: (("5.10-plain",), {})
    c["vnetlab.labdata.rule"] = lambda: (("6.1", "page_to_skb"), {})
    c["vnetlab.labdata.rx_rows"] = lambda: (("mergeable",), {})
    c["vnetlab.labdata.rx_table"] = lambda: (("mergeable",), {})
    c["vnetlab.labdata.stored_state"] = lambda: (("on",), {})
    c["vnetlab.labkernels.lab_kernel"] = lambda: (("6.1",), {})
    c["vnetlab.labkernels.model_kernel"] = lambda: (("6.1",), {})
    c["vnetlab.rx.RxQueue.receive"] = lambda: ((1000,), {})
    c["vnetlab.rx.build_skb_tailroom"] = lambda: ((1042, 2048), {"mode": "mergeable", "hdr_len": 12,
                                                               "headroom": 0, "k": FX.kernel, "a": FX.arch})
    c["vnetlab.rx.head_case"] = lambda: ((FX.rx_result.skb,), {})
    c["vnetlab.rx.page_to_skb"] = lambda: ((1042, 2048), {})
    c["vnetlab.rx.receive"] = lambda: ((1000,), {})
    c["vnetlab.rx.receive_big"] = lambda: ((1042,), {})
    c["vnetlab.rx.receive_mergeable"] = lambda: ((1042, _buffers()), {})
    c["vnetlab.rx.receive_small"] = lambda: ((1042,), {})
    c["vnetlab.rx_classify.classify"] = lambda: (([1042, 200], [2048, 2048]), {})
    c["vnetlab.rxbuf.Ewma.__init__"] = lambda: ((0,), {})
    c["vnetlab.rxbuf.Ewma.add"] = lambda: ((1000,), {})
    c["vnetlab.rxbuf.PageFrag.__init__"] = lambda: ((32768, FX.arch), {})
    c["vnetlab.rxbuf.PageFrag.refill"] = lambda: ((1536,), {})
    c["vnetlab.rxbuf.PagePool.__init__"] = lambda: ((4096, FX.arch), {})
    c["vnetlab.rxbuf.PagePool.alloc"] = lambda: ((1536,), {})
    c["vnetlab.rxbuf.big_max_frame"] = lambda: ((17, 12, FX.kernel, FX.arch), {})
    c["vnetlab.rxbuf.big_pages_range"] = lambda: ((FX.arch,), {})
    c["vnetlab.rxbuf.carve_mergeable_buffer"] = lambda: (
        (rxbuf.rx_page_allocator(FX.kernel, FX.arch), 1518),
        {"min_buf_len": 1536, "hdr_len": 12, "xdp": False, "k": FX.kernel, "a": FX.arch})
    c["vnetlab.rxbuf.frag_size_for"] = lambda: ((None, FX.kernel, FX.arch), {})
    c["vnetlab.rxbuf.get_mergeable_buf_len"] = lambda: ((1518,), {"min_buf_len": 1536, "hdr_len": 12, "room": 0,
                                                                 "a": FX.arch})
    c["vnetlab.rxbuf.mergeable_buf_lens"] = lambda: ((4,), {})
    c["vnetlab.rxbuf.mergeable_room"] = lambda: ((0, FX.arch), {})
    c["vnetlab.rxbuf.mergeable_truesize_max"] = lambda: ((0, FX.kernel, FX.arch), {})
    c["vnetlab.rxbuf.new_page"] = lambda: ((4096, "page"), {})
    c["vnetlab.rxbuf.receive_big_max_frame"] = lambda: ((17, 12, FX.kernel, FX.arch), {})
    c["vnetlab.rxbuf.small_buf_lens"] = lambda: ((4,), {})
    c["vnetlab.segment.check_ip"] = lambda: ((4,), {})
    c["vnetlab.segment.gso_skb"] = lambda: ((), {"segs": 4, "gso_size": 1400})
    c["vnetlab.segment.max_gro_segs"] = lambda: ((1400,), {})
    c["vnetlab.segment.skb_gso_segment"] = lambda: ((FX.skb, FX.featureset), {})
    c["vnetlab.segment.skb_segment"] = lambda: ((FX.skb, FX.featureset), {})
    c["vnetlab.segment.skb_segment_list"] = lambda: ((segment.gso_skb(segs=4, gso_size=1400, fraglist=True),
                                                      FX.featureset), {})
    c["vnetlab.skb.Skb.copy"] = lambda: ((), {"gso_size": 1000})
    c["vnetlab.skb.Skb.encapsulate"] = lambda: ((50, "UDP_TUNNEL"), {"vni": 42})
    c["vnetlab.skb.Skb.segments"] = lambda: ((), {})
    c["vnetlab.skbuff.alloc_skb_head"] = lambda: ((128, FX.kernel, FX.arch), {})
    c["vnetlab.skbuff.build_skb_truesize"] = lambda: ((2048, FX.arch), {})
    c["vnetlab.skbuff.kmalloc_size_roundup"] = lambda: ((100,), {})
    c["vnetlab.skbuff.napi_alloc_skb"] = lambda: ((128,), {})
    c["vnetlab.virtio.check_hdr_len"] = lambda: ((12, FX.kernel), {})
    c["vnetlab.virtio.check_mergeable_hdr_len"] = lambda: ((12, FX.kernel), {})
    c["vnetlab.virtio.check_mtu"] = lambda: ((1500,), {})
    c["vnetlab.virtio.frame_len_for"] = lambda: ((1000,), {})
    c["vnetlab.virtio.hdr_padded_len"] = lambda: (("mergeable", 12, FX.kernel), {})
    c["vnetlab.profiles.Kernel.has_table"] = lambda: (("gro",), {})
    c["vnetlab.profiles.Kernel.rule"] = lambda: ((_a_rule(),), {})
    c["vnetlab.profiles.Kernel.source"] = lambda: ((_a_rule(),), {})
    c["vnetlab.profiles.Kernel.table"] = lambda: (("gro",), {})
    c["vnetlab.profiles.Kernel.with_overrides"] = lambda: (("6.1-probe", {_a_bool_rule(): (False, "probe")}), {})
    c["vnetlab.profiles.arch"] = lambda: (("x86_64",), {})
    c["vnetlab.profiles.device_kernel"] = lambda: ((FX.veth,), {})
    c["vnetlab.profiles.kernel"] = lambda: (("6.1",), {})
    c["vnetlab.profiles.kernel_section"] = lambda: (("gro", "6.1"), {})
    c["vnetlab.profiles.resolve"] = lambda: (("6.1", "x86_64"), {})
    c["vnetlab.profiles.table_kernels"] = lambda: (("gro",), {})
    c["vnetlab.tables.load_table"] = lambda: (("gro",), {})
    c["vnetlab.tables.parse_table"] = lambda: (("probe", _TOML), {})
    c["vnetlab.tables.Section.get"] = lambda: (("x",), {})
    c["vnetlab.tables.Section.source"] = lambda: (("x",), {})
    c["vnetlab.tables.Section.typed"] = lambda: (("x", int), {})
    c["vnetlab.router.route_device"] = lambda: ((FX.stack, "vlan"), {})
    c["vnetlab.router.router_stack"] = lambda: ((), {"kernel": "5.11", "upper": "vlan"})
    c["vnetlab.router.router_throughput"] = lambda: ((FX.router_after,), {})
    c["vnetlab.stack.FeatureGrid.row"] = lambda: ((_grid_row(),), {})
    c["vnetlab.stack.FeatureGrid.segmented_at"] = lambda: (("udp",), {})
    c["vnetlab.stack.device_cells"] = lambda: ((FX.veth, ["SG"]), {})
    c["vnetlab.stack.feature_states"] = lambda: ((FX.veth,), {})
    c["vnetlab.netdev.namespace.Namespace.bond"] = lambda: (("bondp",), {})
    c["vnetlab.netdev.namespace.Namespace.bridge"] = lambda: (("brp",), {})
    c["vnetlab.netdev.namespace.Namespace.macvlan"] = lambda: (("mvp",), {"lower": _cur_lower()})
    c["vnetlab.netdev.namespace.Namespace.nic"] = lambda: (("ethp",), {})
    c["vnetlab.netdev.namespace.Namespace.set_master"] = lambda: ((_cur_lower(), FX._cache["cur_ns"].bridge(
        "sbr")), {})
    c["vnetlab.netdev.namespace.Namespace.veth"] = lambda: (("pa", "pb"), {})
    c["vnetlab.netdev.namespace.Namespace.vlan"] = lambda: (("vlp",), {"lower": _cur_lower(), "vid": 10})
    c["vnetlab.netdev.namespace.Namespace.vxlan"] = lambda: (("vxp",), {"vni": 7, "underlay": _cur_lower()})
    c["vnetlab.netdev.core.NetCore.choice"] = lambda: (("page_to_skb", ("copy128", "build_skb", "copy_pull")), {})
    c["vnetlab.netdev.core.NetCore.mask"] = lambda: (("GSO_SOFTWARE",), {})
    c["vnetlab.netdev.core.NetCore.rule"] = lambda: (("page_to_skb",), {})
    c["vnetlab.netdev.core.NetCore.netdev_fix_features"] = lambda: ((_cur_lower(), FX.featureset.bits), {})
    c["vnetlab.netdev.core.Device.fix_features"] = lambda: ((FX.featureset.bits,), {})
    for cls in ("bond.Bond", "bridge.Bridge", "macvlan.Macvlan", "vlan.Vlan", "veth.Veth"):
        c[f"vnetlab.netdev.{cls}.fix_features"] = lambda: ((FX.featureset.bits,), {})
        c[f"vnetlab.netdev.{cls}.start_xmit"] = lambda: (([FX.skb],), {})
        c[f"vnetlab.netdev.{cls}.on_lower_feat_change"] = lambda: ((_cur_lower(),), {})
        c[f"vnetlab.netdev.{cls}.on_lower_mtu_change"] = lambda: ((_cur_lower(),), {})
        c[f"vnetlab.netdev.{cls}.set_mtu"] = lambda: ((1500,), {})
    c["vnetlab.netdev.core.Device.ethtool_K"] = lambda: (({"tx-scatter-gather": True},), {})
    c["vnetlab.netdev.core.Device.set_mtu"] = lambda: ((1500,), {})
    c["vnetlab.netdev.core.Device.set_gso_max"] = lambda: ((), {"size": 65536})
    c["vnetlab.netdev.core.Device.features_check"] = lambda: ((FX.skb, FX.featureset), {})
    c["vnetlab.netdev.core.Device.start_xmit"] = lambda: (([FX.skb],), {})
    c["vnetlab.netdev.core.is_skb_forwardable"] = lambda: ((FX.veth, FX.skb), {})
    c["vnetlab.netdev.core.port_of"] = lambda: ((_dev("bridge"), None), {})
    c["vnetlab.netdev.veth.Veth.set_xdp"] = lambda: ((False,), {})
    c["vnetlab.udp.send_over_vxlan"] = lambda: ((FX.vxlans[0], FX.vxlans[1], 1000), {})
    c["vnetlab.udp.udp_recv"] = lambda: ((FX.rx_skbs,), {})
    c["vnetlab.virtual_rx.veth_receive"] = lambda: ((FX.veth, [FX.skb], FX.kernel),
                                                   {"ip": 4, "local_udp": True, "udp_gro": False,
                                                    "local_socket": True})
    c["vnetlab.virtual_rx.veth_xmit"] = lambda: ((FX.veth, [FX.skb]), {})
    c["vnetlab.virtual_rx.vxlan_rcv"] = lambda: ((FX.vxlans[1], [FX.skb]), {})
    c["vnetlab.xmit.TxResult.hop"] = lambda: ((_a_hop(),), {})
    c["vnetlab.xmit.ip_fragment_sizes"] = lambda: ((3000, 1500), {})
    c["vnetlab.xmit.ip_output_mtu"] = lambda: ((FX.skb, 1500), {})
    c["vnetlab.xmit.netif_needs_gso"] = lambda: ((FX.skb, FX.featureset), {})
    c["vnetlab.xmit.skb_needs_linearize"] = lambda: ((FX.skb, FX.featureset), {})
    c["vnetlab.live.btf.btf_layout"] = lambda: ((), {})
    c["vnetlab.live.btf.profile_arch_name"] = lambda: (("x86_64", 4096), {})
    c["vnetlab.live.capability.diagnose"] = lambda: ((), dict(
        platform="linux", euid=0, cap_net_admin=True, cap_sys_admin=True, have_ip=True, have_ethtool=True,
        pyroute2_error=None, netlink_error=None, netns_error=None))
    c["vnetlab.live.capture_formats.gso_type_names"] = lambda: ((1,), {})
    c["vnetlab.live.capture_formats.parse_trace_text"] = lambda: ((_trace_text(),), {})
    c["vnetlab.live.capture_formats.read_capture"] = lambda: ((_capture_file(),), {})
    c["vnetlab.live.capture.model_skbs"] = lambda: (("veth",), {})
    c["vnetlab.live.commands.check_ifname"] = lambda: (("eth0", "name"), {})
    c["vnetlab.live.commands.check_netns_exists"] = lambda: ((None,), {})
    c["vnetlab.live.commands.netns_argv"] = lambda: ((None, ["ip", "link"]), {})
    c["vnetlab.live.commands.unique_netns_name"] = lambda: (("probe",), {})
    c["vnetlab.live.compare.compare_k"] = lambda: (({"tx-scatter-gather": (True, False)},
                                                    {"tx-scatter-gather": (True, False)}), {})
    c["vnetlab.live.compare.compare"] = lambda: ((FX.veth, "lo"), {})
    c["vnetlab.live.device_features.ethtool_k"] = lambda: (("lo",), {})
    c["vnetlab.live.device_features.read_ethtool"] = lambda: (("lo", None), {})
    c["vnetlab.live.device_features.read_features"] = lambda: (("lo",), {})
    c["vnetlab.live.netlink.read_netlink"] = lambda: (("lo", None), {})
    c["vnetlab.live.experiments.mirror_table"] = lambda: ((_mirror_rows(),), {})
    c["vnetlab.live.experiments.bridge_ports"] = lambda: ((_mirror_rows(),), {"kernel": "6.1"})
    c["vnetlab.live.experiments.mirror_replay"] = lambda: _mirror_replay()
    c["vnetlab.live.experiments.transfer_table"] = lambda: ((_transfer_rows(),), {})
    c["vnetlab.live.profile.match_profile"] = lambda: _match_profile()
    c["vnetlab.live.profile.modelled_release"] = lambda: _modelled_release()
    c["vnetlab.live.profile.parse_release"] = lambda: (("6.1.0-57-amd64",), {})
    c["vnetlab.live.profile.running_profile"] = lambda: (("6.1.0-57-amd64",), {})
    c["vnetlab.live.recorded.Reference.transfers"] = lambda: (("veth_gro",), {})
    c["vnetlab.live.recorded.Session.features"] = lambda: ((("SG",),), {})
    c["vnetlab.live.recorded.Session.not_run"] = lambda: (("veth_gro",), {})
    c["vnetlab.live.recorded.Session.send"] = lambda: ((((1400, 0),),), {})
    c["vnetlab.live.recorded.Session.table"] = lambda: (("veth_gro",), {})
    c["vnetlab.live.recorded.Session.transfers"] = lambda: (("veth_gro",), {})
    c["vnetlab.live.recorded.reference"] = lambda: ((), {})
    c["vnetlab.live.recorded.session"] = lambda: (("recorded",), {})
    c["vnetlab.live.capture.Capture.at"] = lambda: ((_capture().roles and next(iter(_capture().roles.values()))
                                                     if hasattr(_capture(), "roles") else "sender",), {})
    c["vnetlab.live.capture.Capture.role"] = lambda: ((_capture().skbs[0].dev if _capture().skbs else "v0",), {})
    c["vnetlab.live.capture.beside_model"] = lambda: (([], "veth", {}), {})
    c["vnetlab.live.capture_tracefs.EventFormat.parse"] = lambda: _event_format()
    c["vnetlab.live.btf.BtfTypes.__init__"] = lambda: ((_btf_bytes(),), {})
    c["vnetlab.live.btf.BtfTypes.struct_id"] = lambda: (("sk_buff",), {})
    c["vnetlab.live.btf.BtfTypes.has_member"] = lambda: (("sk_buff", "len"), {})
    c["vnetlab.live.btf.BtfTypes.member"] = lambda: (("sk_buff", "len"), {})
    c["vnetlab.live.btf.BtfTypes.enum_with"] = lambda: (("SKB_GSO_TCPV4",), {})
    c["vnetlab.live.btf.BtfTypes.sizeof"] = lambda: ((_btf().struct_id("sk_buff"),), {})
    c["vnetlab.live.btf.BtfTypes.members"] = lambda: ((_btf().struct_id("sk_buff"),), {})
    c["vnetlab.live.btf.BtfTypes.array_len"] = lambda: ((_btf_array_id(),), {})
    c["vnetlab.live.profile.RunningProfile.short"] = lambda: ((), {})
    c["vnetlab.room.outcome"] = lambda: ((exercises.check("10.1", exercises.solution("10.1")),), {})
    c["vnetlab.viz.captured.capture_rows"] = lambda: ((_capture(),), {})
    c["vnetlab.viz.captured.draw_capture"] = lambda: ((_capture(),), {"fig": FX.figure})
    c["vnetlab.viz.captured.draw_btf_layout"] = lambda: ((_btf_layout(),), {"fig": FX.figure})
    c["vnetlab.viz.featurecells.cell_label"] = lambda: _cell_label()
    c["vnetlab.viz.featurecells.cell_style"] = lambda: ((_a_cell(),), {})
    c["vnetlab.viz.featurecells.hatch_color"] = lambda: (("#ffffff",), {})
    c["vnetlab.viz.grofig.fill_from_trace"] = lambda: ((FX.gro_trace, [1, 1, 1, 1]), {"offset": 0})
    c["vnetlab.viz.grofig.gro_fill"] = lambda: (("mergeable",), {})
    c["vnetlab.viz.grofig.receive_fill"] = lambda: ((1000,), {})
    c["vnetlab.viz.grofig.packet_color"] = lambda: ((0,), {})
    c["vnetlab.viz.labfig.profile_check"] = lambda: (("5.10", "5.10.223"), {})
    c["vnetlab.viz.labfig.rx_bands"] = lambda: (("6.1",), {})
    c["vnetlab.viz.labfig.rx_marks"] = lambda: (("6.1-plain",), {})
    c["vnetlab.viz.labfig.seven_x_note"] = lambda: (("gro",), {})
    c["vnetlab.viz.memory.BufferLayout.span"] = lambda: ((_a_span(),), {})
    c["vnetlab.viz.memory.frame_parts"] = lambda: ((1042,), {})
    c["vnetlab.viz.memory.rx_buffer_caption"] = lambda: ((FX.rx_result, _layout()), {})
    c["vnetlab.viz.memory.truesize_parts"] = lambda: ((FX.rx_result.skb,), {"kernel": "6.1", "arch": "x86_64"})
    c["vnetlab.viz.routerfig.router_run"] = lambda: ((), {"kernel": "5.11"})
    c["vnetlab.viz.routerfig.draw_router_panel"] = lambda: _router_panel()
    c["vnetlab.viz.stacks.draw_stack"] = lambda: _draw_stack()
    c["vnetlab.viz.stacks.hop_text"] = lambda: ((_send().hops[0],), {})
    c["vnetlab.viz.stacks.wire_summary"] = lambda: ((_send(),), {})
    c["vnetlab.viz.style.axes_column"] = lambda: ((FX.figure, [(0.5, 0.4)]), {})
    c["vnetlab.viz.style.bare_axes"] = lambda: ((FX.figure.add_subplot(),), {})
    c["vnetlab.viz.style.fast_region"] = lambda: ((FX.figure.add_subplot(), "g", 0.0, 0.0, 1.0, 1.0), {})
    c["vnetlab.viz.style.path_region"] = lambda: ((FX.figure.add_subplot(), "g", "a/b", 0.0, 0.0, 1.0, 1.0), {})
    c["vnetlab.viz.style.region"] = lambda: ((FX.figure.add_subplot(), "g", 0.0, 0.0, 1.0, 1.0), {})
    c["vnetlab.viz.style.reuse_axes"] = lambda: ((None, ("probe",), 4.0, 2.0, lambda f: [f.add_subplot()]), {})
    c["vnetlab.viz.style.target_figure"] = lambda: ((None, 4.0, 2.0), {})
    c["vnetlab.viz.style.text_px"] = lambda: (("text",), {})
    c["vnetlab.viz.thresholds.PayloadSweep.window"] = lambda: ((), {})
    c["vnetlab.viz.thresholds.threshold_grid"] = lambda: (([1042, 200], [2048, 4096]), {})
    c["vnetlab.viz.featuregrid.draw_feature_grid"] = lambda: ((_grid(),), {"fig": FX.figure})
    c["vnetlab.viz.grofig.draw_gro_fill"] = lambda: ((_fill(),), {"fig": FX.figure})
    c["vnetlab.viz.memory.draw_rx_buffer"] = lambda: ((FX.rx_result,), {"fig": FX.figure})
    c["vnetlab.viz.memory.draw_skb"] = lambda: ((FX.rx_result,), {"fig": FX.figure})
    c["vnetlab.viz.memory.draw_paths_side_by_side"] = lambda: ((1000,), {"fig": FX.figure})
    c["vnetlab.viz.memory.rx_buffer_layout"] = lambda: ((FX.rx_result,), {})
    c["vnetlab.viz.memory.skb_caption"] = lambda: ((FX.rx_result,), {})
    c["vnetlab.viz.costfig.rx_costs"] = lambda: ((FX.traffic, ["6.1"], FX.costs), {})
    c["vnetlab.viz.style.regions"] = lambda: ((FX.figure,), {})
    c["vnetlab.viz.style.wipe"] = lambda: ((FX.figure,), {})
    for name in ("rx_page_allocator", "rq_frag_size", "rx_frag_sizes", "page_pool_frag_align"):
        c[f"vnetlab.rxbuf.{name}"] = lambda: ((FX.kernel, FX.arch), {})
    c["vnetlab.skbuff.small_head_cache_size"] = lambda: ((FX.kernel, FX.arch), {})
    c["vnetlab.virtio.padded_vnet_hdr_len"] = lambda: ((FX.kernel,), {})
    c["vnetlab.groflow.gro_rules"] = lambda: ((FX.kernel,), {})
    c["vnetlab.groflow.cmp_mask"] = lambda: ((_flow_params(),), {})
    c["vnetlab.groflow.cwr_flush_mask"] = lambda: ((_flow_params(),), {})
    c["vnetlab.labdata.hdr_len"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.mode"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.mtu"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.kernel_of"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.requests_recorded"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.probe_params"] = lambda: ((FX.doc,), {})
    c["vnetlab.labdata.virtio_features"] = lambda: ((FX.doc,), {})
    return c


# helpers for the written calls ---------------------------------------------------------------------------------

def _buffers():
    from vnetlab import rxbuf
    k, a = FX.kernel, FX.arch
    alloc = rxbuf.rx_page_allocator(k, a)
    return [rxbuf.carve_mergeable_buffer(alloc, 1518, min_buf_len=1536, hdr_len=12, xdp=False, k=k, a=a)]


def _a_rule():
    return next(iter(_rules()))


def _a_bool_rule():
    return next(n for n, v in _rules().items() if isinstance(v, bool))


def _rules():
    return FX.kernel.rules.values


_TOML = '[meta]\ndescription = "probe"\n["6.1"]\nx = { value = 1, source = "probe" }\n'


def _a_packet():
    rx = FX.doc["rx"]
    for v in rx.values():
        if isinstance(v, list) and v and isinstance(v[0], cabc.Mapping):
            return v[0]
    raise KeyError("no packet in the lab file")


def _lab_rule():
    from vnetlab import labdata
    names = [n for n in _rules()]
    return (("6.1", names[0]), {}) if labdata else None


def _lab_ethtool_k():
    from vnetlab import labdata
    doc = labdata.load("gso", "5.10-plain") if "gso" in labdata.configs("5.10-plain") else FX.doc
    phase = next(iter(doc["ethtool"])) if "ethtool" in doc else "before"
    dev = next(iter(doc["ethtool"][phase][0])) if "ethtool" in doc else "eth0"
    return ((doc, phase, 0, dev), {})


def _lab_gro_case():
    from vnetlab import labdata
    doc = labdata.load("router", "5.10-plain")
    case = next(iter(doc["cases"].values())) if isinstance(doc.get("cases"), dict) else doc["cases"][0]
    return ((case, 1472), {})


def _lab_gso_model():
    from vnetlab import labdata
    doc = labdata.load("gso", "5.10-plain")
    return ((doc, doc.get("route_dev", "eth0.10")), {})


def _lab_predicted_intact():
    from vnetlab import labdata
    case = labdata.router_case_prediction("5.10-plain", "vlan_virtio", 4, payload=1472)
    return (([4, 4], case), {})


def _fresh_ns():
    from vnetlab import netdev
    FX._cache["cur_ns"] = ns = netdev.Namespace(kernel="6.1")
    FX._cache.pop("cur_lower", None)
    return ns


def _cur_lower():
    if "cur_lower" not in FX._cache:
        FX._cache["cur_lower"] = FX._cache["cur_ns"].veth("la", "lb")[0]
    return FX._cache["cur_lower"]


def _dev(kind: str):
    ns = _fresh_ns()
    lower = _cur_lower()
    if kind == "veth":
        return lower
    if kind == "bond":
        dev = ns.bond("bond0")
    elif kind == "bridge":
        dev = ns.bridge("br0")
    elif kind == "macvlan":
        dev = ns.macvlan("mv0", lower=lower)
    elif kind == "vlan":
        dev = ns.vlan("vl0", lower=lower, vid=10)
    else:
        dev = ns.vxlan("vx0", vni=42, underlay=lower)
    if kind in ("bond", "bridge"):
        ns.set_master(lower, dev)
    return dev


def _grid():
    from vnetlab import stack
    return stack.feature_grid(FX.stack)


def _grid_row():
    g = _grid()
    return g.rows[0].name if hasattr(g.rows[0], "name") else g.rows[0][0]


def _fill():
    from vnetlab.viz import grofig
    return grofig.gro_fill("mergeable")


def _send():
    from vnetlab import stack
    return stack.send_gso(FX.stack)[1]


def _a_hop():
    return _send().hops[0].name


def _flow_params():
    from vnetlab import groflow
    return groflow.flow_params()


def _layout():
    from vnetlab.viz import memory
    return memory.rx_buffer_layout(FX.rx_result)


def _a_span():
    lay = _layout()
    spans = getattr(lay, "spans", None)
    return spans[0].gid if spans else "head"


def _a_cell():
    from vnetlab import stack
    return stack.device_cells(FX.veth, ["SG"])[0]


def _cell_label():
    fig = FX.figure
    ax = fig.add_subplot()
    from matplotlib.patches import Rectangle
    rect = Rectangle((0, 0), 1, 1)
    ax.add_patch(rect)
    return ((ax, rect, "SG"), {})


def _router_panel():
    from vnetlab.viz import routerfig
    result, throughput = routerfig.router_run(kernel="5.11")
    return ((result.stack, result.skb, result, throughput), {"fig": FX.figure})


def _draw_stack():
    from vnetlab import stack
    skb, tx = stack.send_gso(FX.stack)
    return ((FX.stack, skb, tx), {"fig": FX.figure})


def _capture():
    if "capture" not in FX._cache:
        from vnetlab.live import capture_record
        FX._cache["capture"] = capture_record.recorded_capture()
    return FX._cache["capture"]


def _capture_file():
    from vnetlab.live import capture_record
    return capture_record.recorded_capture_path()


def _trace_text():
    with open(_capture_file(), encoding="utf-8") as f:
        return f.read()


def _btf_bytes():
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return f.read()


def _btf():
    if "btf" not in FX._cache:
        from vnetlab.live import btf
        FX._cache["btf"] = btf.BtfTypes(_btf_bytes())
    return FX._cache["btf"]


def _btf_layout():
    from vnetlab.live import btf
    return btf.btf_layout()


def _btf_array_id():
    b = _btf()
    sid = b.struct_id("skb_shared_info")
    for name, tid, _off in b.members(sid):
        if name == "frags":
            return tid
    raise KeyError("frags")


def _mirror_rows():
    from vnetlab.live import recorded
    return recorded.reference().mirror()


def _mirror_replay():
    from vnetlab.live import recorded
    ref = recorded.reference()
    rec = getattr(ref, "recorded_steps", None)
    if rec is None:
        raise KeyError("no recorded steps")
    return ((rec,), {"kernel": "6.1"})


def _transfer_rows():
    from vnetlab.live import recorded
    return recorded.reference().transfers("veth_gro")


def _match_profile():
    from vnetlab import profiles
    return (("6.1.0-57-amd64", {"6.1": {}}), {}) if profiles else None


def _modelled_release():
    return (("6.1", {"6.1": "6.1.0-57-amd64"}), {})


def _event_format():
    text = ("name: netif_receive_skb\nID: 1\nformat:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
            "\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n")
    return (("net", "netif_receive_skb", text), {})


# instances for methods: class qualname -> builder
def _instances() -> dict[str, Callable[[], Any]]:
    from vnetlab import cost, ethtool, rx, rxbuf, stack, tables
    from vnetlab.live import recorded
    return {
        "vnetlab.cost.Calibration": lambda: cost.calibrate(),
        "vnetlab.cost.Costs": lambda: FX.costs,
        "vnetlab.cost.RxCost": lambda: cost.rx_cost(FX.traffic, "6.1"),
        "vnetlab.ethtool.EthtoolK": lambda: ethtool.parse_k("Features for eth0:\nrx-checksumming: on\n"),
        "vnetlab.gro.GroTrace": lambda: FX.gro_trace,
        "vnetlab.rx.RxQueue": lambda: rx.RxQueue(),
        "vnetlab.rxbuf.Ewma": lambda: rxbuf.Ewma(),
        "vnetlab.rxbuf.PageFrag": lambda: rxbuf.PageFrag(32768, FX.arch),
        "vnetlab.rxbuf.PagePool": lambda: rxbuf.PagePool(4096, FX.arch),
        "vnetlab.skb.Skb": lambda: FX.skb,
        "vnetlab.profiles.Kernel": lambda: FX.kernel,
        "vnetlab.tables.Section": lambda: tables.parse_table("probe", _TOML)["6.1"],
        "vnetlab.stack.FeatureGrid": lambda: stack.feature_grid(FX.stack),
        "vnetlab.netdev.namespace.Namespace": _fresh_ns,
        "vnetlab.netdev.core.NetCore": _fresh_ns,
        "vnetlab.netdev.core.Device": lambda: _dev("veth"),
        "vnetlab.netdev.veth.Veth": lambda: _dev("veth"),
        "vnetlab.netdev.bond.Bond": lambda: _dev("bond"),
        "vnetlab.netdev.bridge.Bridge": lambda: _dev("bridge"),
        "vnetlab.netdev.macvlan.Macvlan": lambda: _dev("macvlan"),
        "vnetlab.netdev.vlan.Vlan": lambda: _dev("vlan"),
        "vnetlab.netdev.vxlan.Vxlan": lambda: _dev("vxlan"),
        "vnetlab.netdev.core.StackedDevice": lambda: _dev("vlan"),
        "vnetlab.xmit.TxResult": lambda: _send(),
        "vnetlab.live.recorded.Reference": lambda: recorded.reference(),
        "vnetlab.live.recorded.Session": lambda: recorded.session("recorded"),
        "vnetlab.live.capture.Capture": lambda: _capture(),
        "vnetlab.live.btf.BtfTypes": lambda: _btf(),
        "vnetlab.live.btf.BtfLayout": lambda: _btf_layout(),
        "vnetlab.live.profile.RunningProfile": lambda: __import__("vnetlab.live.profile", fromlist=["x"])
        .running_profile("6.1.0-57-amd64"),
        "vnetlab.live.device_features.DeviceFeatures": lambda: __import__(
            "vnetlab.live.device_features", fromlist=["x"]).read_features("lo"),
        "vnetlab.viz.thresholds.PayloadSweep": lambda: __import__("vnetlab.viz.thresholds", fromlist=["x"])
        .payload_sweep(),
        "vnetlab.viz.memory.BufferLayout": lambda: _layout(),
    }


# -- the walk ---------------------------------------------------------------------------------------------------

def _skipped(qual: str) -> str | None:
    for prefix, why in SKIP.items():
        if qual == prefix or qual.startswith(prefix + ".") or (prefix.endswith("_") and qual.startswith(prefix)):
            return why
    return None


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(vnetlab.__path__, "vnetlab.")
                  if not m.name.endswith("__main__"))


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items() if not n.startswith("_") and callable(o)
                 and getattr(o, "__module__", None) == module.__name__]
    return [n for n in names if callable(getattr(module, n, None)) and not inspect.ismodule(getattr(module, n))]


def public_callables() -> list[tuple[str, Any, type | None, str]]:
    """(qualified name, function, owning class or None, module) for every public callable taking arguments."""
    found: dict[str, tuple[str, Any, type | None, str]] = {}
    for name in _modules() + ["vnetlab"]:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional dependency missing: reported as a module that did not load
            continue
        for attr in _public_names(module):
            obj = getattr(module, attr)
            home = getattr(obj, "__module__", name)
            if not isinstance(home, str) or not home.startswith("vnetlab"):
                continue
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue
                for meth, raw in vars(obj).items():
                    if isinstance(raw, property) or (meth.startswith("_") and meth != "__init__"):
                        continue
                    fn = getattr(raw, "__func__", raw)
                    if not inspect.isfunction(fn):
                        continue
                    if meth == "__init__" and getattr(fn.__code__, "co_filename", "") == "<string>":
                        continue
                    qual = f"{obj.__module__}.{obj.__qualname__}.{meth}"
                    found.setdefault(qual, (qual, raw, obj, obj.__module__))
            elif callable(obj):
                qual = f"{home}.{getattr(obj, '__qualname__', attr)}"
                found.setdefault(qual, (qual, obj, None, home))
    return sorted(found.values(), key=lambda t: t[0])


def _members(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _base(tp: Any) -> Any:
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _ranges(tp: Any) -> list[In]:
    out = []
    for m in _members(tp):
        if typing.get_origin(m) is typing.Annotated:
            out += [x for x in m.__metadata__ if isinstance(x, In)]
    return out


# -- bad values from an annotation --------------------------------------------------------------------------

class Odd:
    """An object of no kind the package knows."""

    def __repr__(self) -> str:
        return "Odd()"


def bad_values(pname: str, tp: Any, good: Any) -> list[tuple[str, Any]]:
    """(label, value) pairs the parameter must refuse (or accept with a documented meaning)."""
    from vnetlab import features, netdev, profiles, skb
    members = _members(tp)
    bases = [_base(m) for m in members]
    allows_none = type(None) in bases or None in bases
    ranges = _ranges(tp)
    out: list[tuple[str, Any]] = []

    def add(label: str, value: Any) -> None:
        if any(lab == label for lab, _ in out):
            return
        if value is None and allows_none:
            return
        if ranges and _is_intlike(value) and any(value in r for r in ranges) and all(value in r for r in ranges):
            return  # inside the declared range: valid by the annotation
        out.append((label, value))

    add("None", None)
    add("object", Odd())
    kinds = {"int": int in bases, "float": float in bases, "bool": bool in bases,
             "str": str in bases or profiles.Kernel in bases or profiles.Arch in bases}
    literal = [typing.get_args(b) for b in bases if typing.get_origin(b) is typing.Literal]
    seq = [b for b in bases if typing.get_origin(b) in (cabc.Sequence, cabc.Iterable, list, tuple, cabc.Collection)
           or b in (list, tuple, cabc.Sequence, cabc.Iterable)]
    mapping = [b for b in bases if typing.get_origin(b) in (cabc.Mapping, dict) or b in (dict, cabc.Mapping)]
    untyped = any(b in (typing.Any, object) for b in bases) or "ArrayLike" in repr(tp) or tp is typing.Any
    if kinds["int"] or kinds["float"] or (untyped and _is_intlike(good)):
        add("str-number", "1")
        add("float-for-int", 1.5) if not kinds["float"] else None
        add("bool-for-number", True)
        add("bytes", b"1")
        add("list", [1])
        add("dict", {})
        add("np.float64", np.float64(1.5))
        add("np.array", np.array([1, 2]))
        add("nan", math.nan)
        add("inf", math.inf)
        add("-inf", -math.inf)
        add("negative", -1)
        add("zero", 0)
        add("2**31", 2 ** 31)
        add("2**64", 2 ** 64)
        for r in ranges:
            if r.lo is not None:
                add("below-range", (r.lo if r.lo_excluded else r.lo - 1) if isinstance(r.lo, int) else r.lo - 0.5)
            if r.hi is not None:
                add("above-range", r.hi + 1)
    if kinds["bool"]:
        for label, v in (("str-bool", "no"), ("int-0", 0), ("int-1", 1), ("np.array-bool", np.array([True])),
                         ("str-False", "False")):
            add(label, v)
    if kinds["str"] or (untyped and isinstance(good, str)):
        add("int-for-str", 1)
        add("bytes", b"x")
        add("list-of-str", [good] if isinstance(good, str) else ["x"])
        add("empty-str", "")
        add("unknown-name", "no-such-name")
        if isinstance(good, str):
            add("padded", f" {good} ")
            add("upper", good.upper() if good.upper() != good else good + "X")
        if pname in ("kernel", "version", "profile", "release", "before", "after") or profiles.Kernel in bases:
            add("unknown-kernel", "9.9")
            add("kernel-0", "0")
            add("kernel-neg", "-1")
            add("kernel-long", "6.1.0.0.0")
        if pname in ("arch", "arch_name") or profiles.Arch in bases:
            add("unknown-arch", "sparc")
            add("arch-variant", "x86")
    for values in literal:
        add("literal-other", "no-such" if all(isinstance(v, str) for v in values) else 5)
        v0 = values[0]
        if isinstance(v0, str):
            add("literal-upper", v0.upper())
        if isinstance(v0, int) and not isinstance(v0, bool):
            add("literal-as-str", str(v0))
            add("literal-as-float", float(v0))
    if seq or (untyped and isinstance(good, (list, tuple, np.ndarray))):
        add("int-for-seq", 1)
        add("str-for-seq", "abc")
        add("empty", [])
        add("list-None", [None])
        add("list-object", [Odd()])
        add("dict-for-seq", {"a": 1})
        if _holds_numbers(good):
            add("list-negative", [-1] * max(1, _length(good)))
            add("list-float", [1.5] * max(1, _length(good)))
            add("list-bool", [True] * max(1, _length(good)))
            add("list-nan", [math.nan] * max(1, _length(good)))
            add("np.float-array", np.full(max(1, _length(good)), 1.5))
            add("np.2d-array", np.ones((2, 2), dtype=int))
            add("np.str-array", np.array(["a"] * max(1, _length(good))))
            add("list-2**64", [2 ** 64] * max(1, _length(good)))
            add("list-shorter", list(_as_list(good))[:-1] or [])
    if mapping or (untyped and isinstance(good, cabc.Mapping)):
        add("list-for-mapping", [1])
        add("str-for-mapping", "abc")
        add("empty-mapping", {})
        add("mapping-unknown-key", {"no-such-name": True})
        add("mapping-int-key", {1: True})
        if isinstance(good, cabc.Mapping) and good:
            k0 = next(iter(good))
            add("mapping-None-value", {**good, k0: None})
            add("mapping-str-value", {**good, k0: "no"})
            add("mapping-nan-value", {**good, k0: math.nan})
            add("mapping-negative-value", {**good, k0: -1})
    classes = [b for b in bases if inspect.isclass(b) and b.__module__.startswith("vnetlab")]
    for cls in classes:
        add("str-for-object", "x")
        add("int-for-object", 1)
        if cls is features.FeatureSet:
            add("featureset-other-kernel", FX.featureset510)
        if issubclass(cls, netdev.Device) or cls is netdev.Device:
            add("device-other-kernel", FX.veth510)
        if cls is skb.Skb:
            add("skb-tcp-for-udp", FX.tcp_skb)
    if untyped and not out[2:]:
        for label, v in (("str", "x"), ("int", 1), ("negative", -1), ("nan", math.nan), ("list", []),
                         ("dict", {})):
            add(label, v)
    return out


def _is_intlike(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and (
        not isinstance(v, float) or math.isfinite(v))


def _holds_numbers(v: Any) -> bool:
    try:
        items = list(_as_list(v))
    except TypeError:
        return False
    return bool(items) and all(_is_intlike(x) for x in items)


def _as_list(v: Any) -> list:
    return list(v.tolist()) if isinstance(v, np.ndarray) else list(v)


def _length(v: Any) -> int:
    try:
        return len(v)
    except TypeError:
        return 1


# -- calling ------------------------------------------------------------------------------------------------

class Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise Timeout()


def _invoke(fn: Callable, args: tuple, kwargs: dict, seconds: float) -> Any:
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def baseline(qual: str, fn: Any, owner: type | None, calls: dict, instances: dict) -> tuple[tuple, dict, Any]:
    """The valid call (args without self, kwargs) and the bound callable; raises when none can be built."""
    raw = getattr(fn, "__func__", fn)
    sig = inspect.signature(raw)
    params = list(sig.parameters.values())
    target: Any
    if owner is not None:
        cls_q = f"{owner.__module__}.{owner.__qualname__}"
        if isinstance(fn, classmethod):
            target = getattr(owner, raw.__name__)
            params = params[1:]
        elif isinstance(fn, staticmethod):
            target = getattr(owner, raw.__name__)
        elif raw.__name__ == "__init__":
            target = owner
            params = params[1:]
        else:
            if cls_q not in instances:
                # the nearest base class with a builder
                for base in owner.__mro__[1:]:
                    bq = f"{base.__module__}.{base.__qualname__}"
                    if bq in instances:
                        cls_q = bq
                        break
                else:
                    raise KeyError(f"no instance of {cls_q}")
            inst = instances[cls_q]()
            if not isinstance(inst, owner):
                raise KeyError(f"no instance of {owner.__qualname__}")
            target = getattr(inst, raw.__name__)
            params = params[1:]
    else:
        target = fn
    if qual in calls:
        args, kwargs = calls[qual]()
        return tuple(args), dict(kwargs), target
    hints = param_annotations(raw)
    args, kwargs = [], {}
    for p in params:
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        value = fixture_for(p.name, hints.get(p.name, typing.Any), qual)
        if p.kind is p.POSITIONAL_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD:
            args.append(value)
        else:
            kwargs[p.name] = value
    return tuple(args), kwargs, target


def _with(fn_params: list[inspect.Parameter], args: tuple, kwargs: dict, pname: str, value: Any
          ) -> tuple[tuple, dict]:
    """args/kwargs with ``pname`` set to ``value`` (positional where it was positional)."""
    names = [p.name for p in fn_params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    args = list(args)
    if pname in names and names.index(pname) < len(args):
        args[names.index(pname)] = value
        return tuple(args), dict(kwargs)
    kw = dict(kwargs)
    kw[pname] = value
    return tuple(args), kw


def _good_value(fn_params, args, kwargs, pname):
    names = [p.name for p in fn_params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if pname in names and names.index(pname) < len(args):
        return args[names.index(pname)]
    if pname in kwargs:
        return kwargs[pname]
    for p in fn_params:
        if p.name == pname and p.default is not p.empty:
            return p.default
    return None


Outcome = collections.namedtuple("Outcome", "module qual param label value verdict detail")


def probe(qual: str, fn: Any, owner: type | None, module: str, calls: dict, instances: dict,
          seconds: float) -> tuple[list[Outcome], str | None]:
    try:
        args, kwargs, target = baseline(qual, fn, owner, calls, instances)
        _invoke(target, args, kwargs, seconds * 3)
    except Exception as e:  # noqa: BLE001 - no valid call: reported, not probed
        return [], f"{type(e).__name__}: {str(e)[:160]}"
    raw = getattr(fn, "__func__", fn)
    params = list(inspect.signature(raw).parameters.values())
    if owner is not None and not isinstance(fn, staticmethod):
        params = params[1:]
    hints = param_annotations(raw)
    outcomes = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            continue
        tp = hints.get(p.name, typing.Any)
        if p.kind is p.VAR_KEYWORD:
            continue  # **kwargs: probed through the parameters they stand for (test_boundary sweeps the keys)
        good = _good_value(params, args, kwargs, p.name)
        for label, value in bad_values(p.name, tp, good):
            if p.default is not p.empty and _same(value, p.default):
                continue  # the parameter's own default is valid
            # a fresh valid call each time: a method's instance (and a namespace's devices) may have changed
            try:
                a0, k0, fresh = baseline(qual, fn, owner, calls, instances)
            except Exception:  # noqa: BLE001 - the first baseline worked; keep its arguments
                a0, k0, fresh = args, kwargs, target
            a2, k2 = _with(params, a0, k0, p.name, value)
            verdict, detail = _classify(qual, p.name, label, fresh, a2, k2, seconds)
            outcomes.append(Outcome(module, qual, p.name, label, _short(value), verdict, detail))
    return outcomes, None


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - arrays compare element-wise
        return False


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _classify(qual: str, pname: str, label: str, target: Any, args: tuple, kwargs: dict, seconds: float
              ) -> tuple[str, str]:
    try:
        _invoke(target, args, kwargs, seconds)
    except Timeout:
        return "hole", f"timeout after {seconds} s"
    except ArgumentError as e:
        if e.param == pname or e.param in COMBINATIONS.get((qual, pname), ()):
            return "good", str(e)[:200]
        return "hole", f"ArgumentError blaming {e.param!r}: {str(e)[:160]}"
    except MemoryError:
        return "hole", "MemoryError"
    except Exception as e:  # noqa: BLE001 - every other exception is a hole
        where = _where(e)
        return "hole", f"{type(e).__name__}: {str(e)[:140]}{where}"
    meaning = accepted(qual, pname, label)
    if meaning:
        return "documented", meaning
    return "hole", "accepted"


def _where(e: BaseException) -> str:
    tb = e.__traceback__
    last = None
    while tb is not None:
        if "vnetlab" in tb.tb_frame.f_code.co_filename or "numpy" in tb.tb_frame.f_code.co_filename:
            last = tb
        tb = tb.tb_next
    if last is None:
        return ""
    path = last.tb_frame.f_code.co_filename
    short = path[path.rfind("vnetlab/"):] if "vnetlab/" in path else os.path.basename(path)
    return f" [{short}:{last.tb_lineno}]"


# -- the report -----------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", default=[], help="only modules with this prefix (vnetlab. "
                    "optional); repeatable")
    ap.add_argument("--holes", action="store_true", help="list every hole")
    ap.add_argument("--documented", action="store_true", help="list the values accepted with a meaning")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per call before it counts as a hole")
    ap.add_argument("--fail-on-holes", action="store_true")
    ns = ap.parse_args(argv)
    # A bad count (2**31 packets) must end in MemoryError, not in the machine's OOM killer.
    limit = 6 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import matplotlib
    matplotlib.use("Agg")
    import warnings
    warnings.simplefilter("ignore")
    prefixes = [m if m.startswith("vnetlab") else f"vnetlab.{m}" for m in ns.module]
    calls, instances = _calls(), _instances()
    rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    all_outcomes: list[Outcome] = []
    unbuilt: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    start = time.monotonic()
    for qual, fn, owner, module in public_callables():
        if prefixes and not any(module == p or module.startswith(p + ".") for p in prefixes):
            continue
        why = _skipped(qual)
        if why:
            skipped.append((qual, why))
            continue
        if not is_public(fn) and not qual.startswith("vnetlab.profiles."):
            pass
        outcomes, err = probe(qual, fn, owner, module, calls, instances, ns.timeout)
        if err:
            unbuilt.append((qual, err))
            rows[module]["no valid call"] += 1
            continue
        rows[module]["callables"] += 1
        for o in outcomes:
            rows[module]["inputs"] += 1
            rows[module][o.verdict] += 1
            if o.verdict == "hole":
                rows[module]["hole:" + _kind(o.detail)] += 1
        all_outcomes += outcomes
    kinds = sorted({k for c in rows.values() for k in c if k.startswith("hole:")})
    head = f"{'module':34} {'fns':>4} {'inputs':>6} {'good':>5} {'doc':>4} {'holes':>5}  holes by kind"
    print(head)
    print("-" * len(head))
    total: collections.Counter = collections.Counter()
    for module in sorted(rows):
        c = rows[module]
        total.update(c)
        holes = c["hole"]
        by_kind = ", ".join(f"{k[5:]} {c[k]}" for k in kinds if c[k])
        print(f"{module[8:] or 'vnetlab':34} {c['callables']:4} {c['inputs']:6} {c['good']:5} {c['documented']:4} "
              f"{holes:5}  {by_kind}")
    print("-" * len(head))
    print(f"{'total':34} {total['callables']:4} {total['inputs']:6} {total['good']:5} {total['documented']:4} "
          f"{total['hole']:5}  " + ", ".join(f"{k[5:]} {total[k]}" for k in kinds if total[k]))
    print(f"\n{len(skipped)} callables not called (they act on the machine; see SKIP), "
          f"{len(unbuilt)} without a valid call, {time.monotonic() - start:.0f} s")
    for qual, err in unbuilt:
        print(f"  no valid call: {qual}: {err}")
    if ns.holes:
        print("\nholes:")
        for o in all_outcomes:
            if o.verdict == "hole":
                print(f"  {o.qual}({o.param}={o.value}) [{o.label}]: {o.detail}")
    if ns.documented:
        print("\naccepted with a documented meaning:")
        for o in all_outcomes:
            if o.verdict == "documented":
                print(f"  {o.qual}({o.param}={o.value}) [{o.label}]: {o.detail}")
    return 1 if ns.fail_on_holes and total["hole"] else 0


def _kind(detail: str) -> str:
    if detail == "accepted":
        return "accepted"
    if detail.startswith("ArgumentError blaming"):
        return "misblamed"
    if detail.startswith("timeout"):
        return "timeout"
    return detail.split(":", 1)[0]


if __name__ == "__main__":
    sys.exit(main())
