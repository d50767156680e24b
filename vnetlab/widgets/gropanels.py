"""GRO panel: packets of one flow through GRO, the first GRO skb's frags[] and frag_list redrawn in place.

``gro_panel_state(**params)`` is the plain, tested computation (rx.receive per packet, gro.aggregate_trace,
grofig.draw_gro_fill); ``gro_panel(**initial)`` wraps it in a widgets.base.Panel (controls, summary, PNG image).
A model ValueError (e.g. GRO_UDP_FWD on a kernel before 5.12) is shown as text instead of the figure.
"""

from __future__ import annotations

import html
from typing import Annotated

from matplotlib.figure import Figure

from vnetlab import gro, rx
from vnetlab.checks import In, public
from vnetlab.groflow import gro_rules
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, known_arches, known_kernels
from vnetlab.profiles import kernel as kernel_profile
from vnetlab.virtio import L4, PayloadLen
from vnetlab.viz import grofig
from vnetlab.widgets.base import Panel, PanelState, checkbox, choice, size_slider
from vnetlab.widgets.rxpanels import max_payload

__all__ = ["gro_panel_state", "gro_panel", "gro_features", "no_merge_reason", "inert_features", "FLOW_PACKETS"]

# A flow is at most one receive ring of packets (every packet takes one descriptor or more): QEMU's default rx
# virtqueue, rx.RX_QUEUE_SIZE. The panel rebuilds every packet at each update, so this is also what stays quick.
FLOW_PACKETS = In(1, rx.RX_QUEUE_SIZE, f"packets of one flow, at most one virtio-net receive ring "
                  f"({rx.RX_QUEUE_SIZE} descriptors, QEMU's default rx queue size)")
_LISTED_SKBS = 8  # GRO skbs whose packet counts the summary lists one by one


def _per_skb_text(per: list[int]) -> str:
    """'64, 64, 10' or, for a long flow, the first counts and how many GRO skbs there were."""
    if len(per) <= _LISTED_SKBS:
        return ", ".join(map(str, per))
    return f"{', '.join(map(str, per[:_LISTED_SKBS - 2]))}, ... {per[-1]} ({len(per)} GRO skbs)"


@public
def gro_features(*, kernel: str, gro_fraglist: bool = False, gro_udp_fwd: bool = False) -> frozenset[str]:
    """The receiving device's GRO features: NETIF_F_GRO plus rx-gro-list / rx-udp-gro-forwarding if set.

    A set of names, not a FeatureSet: gro.aggregate asks ``"GRO_UDP_FWD" in features``, which a 5.10/5.11
    FeatureSet answers with UnknownFeatureError instead of False (reported as a model bug)."""
    del kernel  # the model checks the names against the kernel (GRO_UDP_FWD needs 5.12+)
    return frozenset(["GRO"] + (["GRO_FRAGLIST"] if gro_fraglist else []) + (["GRO_UDP_FWD"] if gro_udp_fwd else []))


@public
def gro_panel_state(*, payload_len: PayloadLen = 1000, l4: str = "udp", kernel: str = DEFAULT_KERNEL,
                    arch: str = DEFAULT_ARCH, udp_gro: bool = True, gro_fraglist: bool = False,
                    gro_udp_fwd: bool = False, n_packets: Annotated[int, FLOW_PACKETS] = gro.UDP_GRO_CNT_MAX,
                    fig: Figure | None = None) -> PanelState:
    """``n_packets`` identical packets (rx.receive on ``kernel``) through GRO; the first GRO skb drawn."""
    if udp_gro and l4 != "udp":
        raise ValueError("udp_gro (setsockopt UDP_GRO) needs l4='udp'; untick it for TCP")
    feats = gro_features(kernel=kernel, gro_fraglist=gro_fraglist, gro_udp_fwd=gro_udp_fwd)
    fill = grofig.receive_fill(payload_len, l4=l4, kernel=kernel, arch=arch, n_packets=n_packets, udp_gro=udp_gro,
                               features=feats)
    figure = grofig.draw_gro_fill(fill, fig=fig, key=False)
    per = fill.trace.packets_per_skb()
    s = fill.skb
    if len(per) == n_packets:
        why = no_merge_reason(fill.trace, n_packets=n_packets, l4=l4, udp_gro=udp_gro, gro_fraglist=gro_fraglist,
                              gro_udp_fwd=gro_udp_fwd)
        went = "a single packet went up alone" if n_packets == 1 else f"{n_packets} packets went up one by one"
        text = f"<b>GRO did not aggregate</b>: {went} ({html.escape(why)})."
    else:
        text = (f"<b>{n_packets} packets → {len(per)} GRO skb(s)</b> of {_per_skb_text(per)} packets; "
                f"first: {html.escape(s.describe())}<br>first sk_buff holds {fill.first_skb_packets} packets "
                f"(nr_frags {s.nr_frags}/{fill.max_skb_frags}); frag_list {fill.frag_list_len} sk_buffs")
    text += f"<br>{html.escape(fill.label)}; {html.escape(grofig.GRO_FILL_KEY)}"
    inert = inert_features(udp_gro=udp_gro, gro_fraglist=gro_fraglist, gro_udp_fwd=gro_udp_fwd, l4=l4, kernel=kernel)
    text += "".join(f"<br><b>Note:</b> {html.escape(n)}" for n in inert)
    return PanelState(dict(payload_len=payload_len, l4=l4, kernel=kernel, arch=arch, udp_gro=udp_gro,
                           gro_fraglist=gro_fraglist, gro_udp_fwd=gro_udp_fwd, n_packets=n_packets),
                      figure, text, fill, extra={"packets_per_skb": per})


@public
def inert_features(*, udp_gro: bool, gro_fraglist: bool, gro_udp_fwd: bool, l4: L4 = "udp",
                   kernel: str = DEFAULT_KERNEL) -> list[str]:
    """Why a ticked GRO feature changes nothing for the panel's flow, which ends at a local socket: for a UDP_GRO
    socket, net/ipv4/udp_offload.c udp_gro_receive (is_flist = sk ? !gro_enabled : 1; GRO_UDP_FWD counts only
    where no socket matches); for TCP, udp_gro_receive never runs, and tcp4_check_fraglist_gro (data/gro.toml
    tcp_fraglist) chains on a frag_list only where no established socket matches."""
    notes = []
    if l4 == "tcp":
        if gro_fraglist:
            notes.append("rx-gro-list changes nothing here: tcp4_check_fraglist_gro() chains a TCP flow on a "
                         "frag_list only when no established socket matches, and this flow ends at a local socket"
                         if gro_rules(kernel_profile(kernel))["tcp_fraglist"] else
                         f"rx-gro-list changes nothing for TCP on kernel {kernel}: its fraglist GRO is UDP's alone "
                         "(udp_gro_receive; tcp_gro_receive has no is_flist before ~6.10)")
        if gro_udp_fwd:
            notes.append("rx-udp-gro-forwarding changes nothing for TCP: only udp_gro_receive() reads it")
        return notes
    if udp_gro and gro_fraglist:
        notes.append("rx-gro-list changes nothing here: with a UDP_GRO socket udp_gro_receive() sets is_flist = "
                     "!gro_enabled = 0, so the flow is merged into frags by udp_gro_receive_segment(), not chained "
                     "on a frag_list; untick the UDP_GRO socket to see fraglist GRO")
    if udp_gro and gro_udp_fwd:
        notes.append("rx-udp-gro-forwarding changes nothing here: udp_gro_receive() uses it only for packets no "
                     "local socket takes (!sk); this flow has a UDP_GRO socket, which merges it anyway")
    return notes


@public
def no_merge_reason(trace: gro.GroTrace, *, n_packets: int, l4: str, udp_gro: bool, gro_fraglist: bool,
                    gro_udp_fwd: bool) -> str:
    """Why GRO handed every packet up on its own, from what dev_gro_receive() did with each (GroTrace.events)."""
    if n_packets == 1 and trace.events and trace.events[0].action == "held":
        # net/core/gro.c: the first packet of a flow is held (GRO_HELD) and napi_gro_complete() passes it up at
        # the end of the poll; merging needs a second packet of the same flow
        return "one packet: dev_gro_receive() holds it and napi_gro_complete() passes it up at the end of the poll; " \
               "there is no second packet of the flow to merge with it"
    if l4 == "udp" and not (udp_gro or gro_fraglist or gro_udp_fwd):
        # net/ipv4/udp_offload.c udp_gro_receive: no UDP_GRO socket, no NETIF_F_GRO_FRAGLIST, no GRO_UDP_FWD
        return "no UDP_GRO socket, no GRO_FRAGLIST, no GRO_UDP_FWD: udp4_gro_receive flushes every packet"
    if all(e.action == "normal" for e in trace.events):
        return ("dev_gro_receive() passed every packet up unheld (GRO_NORMAL): a protocol handler refused it, e.g. "
                "udp_gro_receive_segment() for a datagram with no payload (ulen <= sizeof(struct udphdr))"
                if l4 == "udp" else "dev_gro_receive() passed every packet up unheld (GRO_NORMAL)")
    return "each packet was held and then flushed before the next one could merge into it"


_MTU = 1500  # grofig.receive_fill's MTU: the flow's packets are full-MTU at most


def _follow_l4(panel: Panel) -> None:
    c = panel.controls
    c["payload_len"].set_range(0, max_payload(_MTU, c["l4"].value))  # type: ignore[attr-defined]
    c["payload_len"].slider.description = f"{c['l4'].value.upper()} payload (B)"  # type: ignore[attr-defined]
    # setsockopt(UDP_GRO) is a UDP socket option
    if c["l4"].value != "udp":
        c["udp_gro"].value = False
    c["udp_gro"].disabled = c["l4"].value != "udp"


@public
def gro_panel(*, payload_len: int = 1000, l4: str = "udp", kernel: str = DEFAULT_KERNEL, arch: str = DEFAULT_ARCH,
              udp_gro: bool = True, gro_fraglist: bool = False, gro_udp_fwd: bool = False,
              n_packets: Annotated[int, FLOW_PACKETS] = gro.UDP_GRO_CNT_MAX) -> Panel:
    """The GRO fill of the first GRO skb for a flow chosen with the controls."""
    return Panel(gro_panel_state, {
        "payload_len": size_slider(payload_len, 0, max_payload(_MTU, l4), f"{l4.upper()} payload (B)"),
        "n_packets": size_slider(n_packets, FLOW_PACKETS.lo, 2 * gro.UDP_GRO_CNT_MAX, "packets in the flow"),
        "l4": choice(l4, ("udp", "tcp"), "L4"),
        "kernel": choice(kernel, known_kernels(), "kernel"),
        "arch": choice(arch, known_arches(), "arch"),
        "udp_gro": checkbox(udp_gro, "UDP_GRO socket (udp_gro)"),
        "gro_fraglist": checkbox(gro_fraglist, "rx-gro-list (GRO_FRAGLIST)"),
        "gro_udp_fwd": checkbox(gro_udp_fwd, "rx-udp-gro-forwarding (GRO_UDP_FWD)"),
    }, rows=[["payload_len", "n_packets"], ["l4", "kernel", "arch"], ["udp_gro", "gro_fraglist", "gro_udp_fwd"]],
        constrain=_follow_l4)
