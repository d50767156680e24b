"""The receiving end of a virtual link: what a veth's peer and a vxlan device hand up their stack.

- :func:`veth_xmit` is drivers/net/veth.c veth_xmit seen from the peer: __dev_forward_skb, then the backlog
  (netif_rx) or the peer's NAPI and GRO (:func:`vnetlab.gro.aggregate`), per kernel;
- :func:`vxlan_rcv` is drivers/net/vxlan/vxlan_core.c vxlan_rcv and gro_cells on the vxlan device;
- IP fragments are put together as ip_defrag / ipv6_frag_rcv would above them.

vnetlab.xmit.send hands a veth's skbs here (:func:`veth_receive`, with the kernel it resolved); the names are
also reachable as ``xmit.veth_xmit``, ``xmit.vxlan_rcv``, ``xmit.VethRx`` and ``xmit.VxlanRx``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from vnetlab import gro
from vnetlab.checks import In, public
from vnetlab.features import FeatureSet, mask
from vnetlab.headers import ETH_HLEN, IP_HLEN, VLAN_HLEN
from vnetlab.netdev import Device, Vxlan
from vnetlab.netdev.core import is_skb_forwardable
from vnetlab.profiles import Kernel, device_kernel
from vnetlab.segment import check_skb
from vnetlab.skb import FRAG_HDR_LEN, Skb


def _fs(dev: Device, attr: str, kernel: Kernel) -> FeatureSet:
    return FeatureSet.coerce(getattr(dev, attr), kernel)


@dataclass(eq=False)
class OuterFragment(Skb):
    """One IP fragment of a tunnel's outer packet (net/ipv4/ip_output.c ip_do_fragment on the skb
    udp_tunnel_xmit_skb handed to ip_local_out; net/ipv6/ip6_output.c ip6_fragment for an IPv6 outer header).

    Its bytes: the outer IP header (and for IPv6 the fragment header), then ``data`` bytes of the outer IP
    payload from ``offset`` on; only the first fragment carries the outer UDP, VXLAN, inner Ethernet and inner
    IP headers. ``datagram`` is the whole outer packet: the receiver's ip_defrag puts it back together before
    vxlan's UDP socket sees it (:func:`_defrag`). :meth:`header_len` counts everything in front of the inner
    L4 payload bytes the fragment holds, so ``payload_len`` is those bytes and they add up over the fragments.
    """

    datagram: Skb | None = None
    offset: int = 0
    outer_ip: int = 4

    def _hdr_after_outer_ip(self, ip: int) -> int:
        # the whole outer packet's bytes between its outer IP header and the inner L4 payload
        d = self.datagram
        assert d is not None
        return d.header_len(ip=ip) - ETH_HLEN - VLAN_HLEN * len(d.vlan_inband) - IP_HLEN[self.outer_ip]

    @public
    def data_bytes(self, link_hlen: Annotated[int, In(0, 255, "link header bytes still in front")] = ETH_HLEN) -> int:
        """Bytes of the outer IP payload in this fragment."""
        frag_hdr = FRAG_HDR_LEN if self.outer_ip == 6 else 0
        return self.len - link_hlen - VLAN_HLEN * len(self.vlan_inband) - IP_HLEN[self.outer_ip] - frag_hdr

    @public
    def header_len(self, *, ip: int = 4, link_hlen: int = ETH_HLEN) -> int:
        """Bytes of this fragment that are not inner L4 payload (its share of the datagram's payload is the rest)."""
        d = self.datagram
        if d is None:
            return super().header_len(ip=ip, link_hlen=link_hlen)
        start, n = self.offset, self.data_bytes(link_hlen)
        payload_from = self._hdr_after_outer_ip(ip)
        payload_to = payload_from + d.payload_len(ip=ip)
        inner = max(0, min(start + n, payload_to) - max(start, payload_from))
        return self.len - inner


@dataclass(frozen=True)
class VethRx:
    """The receive side of a veth pair for the skbs veth_xmit handed over (drivers/net/veth.c).

    ``paths``: per skb "napi" (the peer's ptr_ring, veth_poll, napi_gro_receive) or "backlog" (__netif_rx,
    no GRO); ``gro``: whether napi_gro_receive aggregated (the peer has NETIF_F_GRO: netif_elide_gro);
    ``delivered``: the skbs handed up the peer's stack, in order; ``dropped``: skbs refused by
    is_skb_forwardable (too long for the peer's MTU).
    """

    device: str
    kernel: Kernel  # the kernel the send ran (a lab kernel with its patch's rules)
    paths: tuple[str, ...]
    gro: bool
    delivered: tuple[Skb, ...]
    dropped: int = 0
    reason: str = ""

    @property
    def skbs(self) -> int:
        return len(self.delivered)


# ---------------------------------------------------------------------------------------------------------
# veth: the peer's receive side


@public
def veth_napi_active(rcv: Device, kernel: str | Kernel | None = None) -> bool:
    """Whether the receiving veth has NAPI instances (rq->napi set), per kernel (drivers/net/veth.c):

    - without the kernel rule veth_napi_for_gro (5.10..5.12, Debian 5.10.223) veth_xmit uses NAPI only with an XDP
      program on the receiver (rcv_xdp = rq->xdp_prog);
    - with it (5.13+, d3256efd8e8b "veth: allow enabling NAPI even without XDP"): an XDP program, or GRO requested
      (veth_gro_requested: NETIF_F_GRO in wanted_features) on the receiver, when it is up.
    """
    return _veth_napi_active(rcv, device_kernel(rcv, kernel))


def _veth_napi_active(rcv: Device, k: Kernel) -> bool:
    xdp = bool(getattr(rcv, "xdp", False))
    if not k.rule("veth_napi_for_gro"):
        return xdp
    return xdp or "GRO" in FeatureSet.coerce(getattr(rcv, "wanted_features", None), k)


def _eligible_for_gro(dev: Device, rcv: Device, local_udp: bool, kernel: Kernel) -> bool:
    # drivers/net/veth.c veth_skb_is_eligible_for_gro (47e550e0105b, 5.13; same in 6.1 and ≈6.18): the xmit
    # device without ALL_TSO, or a local UDP skb (destructor sock_wfree) towards GRO_FRAGLIST | GRO_UDP_FWD.
    xmit_feats = _fs(dev, "features", kernel)
    rcv_feats = _fs(rcv, "features", kernel)
    return not (xmit_feats & mask("ALL_TSO", kernel)) or (
        local_udp and ("GRO_FRAGLIST" in rcv_feats or "GRO_UDP_FWD" in rcv_feats))


def _reassemble(group: Sequence[Skb], ip: int) -> Skb | None:
    """net/ipv4/ip_fragment.c ip_defrag (net/ipv6/reassembly.c ipv6_frag_rcv): one datagram from its fragments
    (skb->data at the network header), charged every fragment's truesize (inet_frag_reasm_prepare). A tunnel's
    outer fragments give back the outer packet (still encapsulated, for vxlan_rcv), or None while a fragment is
    missing (the queue waits and times out: ReasmFails)."""
    first = group[0]
    if isinstance(first, OuterFragment) and first.datagram is not None:
        d = first.datagram
        l3 = d.network_len()
        got = sum(s.data_bytes(0) for s in group if isinstance(s, OuterFragment) and s.datagram is d)
        if got != l3 - IP_HLEN[first.outer_ip]:
            return None
        return d.copy(headlen=l3, frags=[], frag_list=[], truesize=sum(s.truesize for s in group), head_frag=False,
                      head_kind="kmalloc", head_page=None, head_offset=0, end_offset=64 + l3, headroom=64,
                      note="outer packet reassembled by ip_defrag", vlan_tag=None, vlan_inband=())
    if first.ipfrag != "first":
        return None  # the offset-0 fragment never came (dropped on the way): the queue times out
    l3 = sum(s.len - IP_HLEN[ip] - (FRAG_HDR_LEN if ip == 6 else 0) for s in group) + IP_HLEN[ip]
    return Skb(headlen=l3, truesize=sum(s.truesize for s in group), head_frag=False, end_offset=64 + l3,
               headroom=64, note="reassembled by ip_defrag", l4=group[0].transport, vlan_tag=group[0].vlan_tag)


def _defrag(skbs: Sequence[Skb], ip: int) -> list[Skb]:
    """The IP layer of the receiving stack: a first fragment and the ones after it become one datagram; an
    encapsulated skb's fragments are inner ones, reassembled above the tunnel device (vxlan_rcv)."""
    out: list[Skb] = []
    group: list[Skb] = []
    for s in [*skbs, None]:
        if group and (s is None or s.ipfrag != "next" or s.tunnel_hlen):
            whole = _reassemble(group, ip)
            if whole is not None:
                out.append(whole)
            group = []
        if s is None:
            break
        if s.ipfrag and not s.tunnel_hlen:
            group.append(s)
        else:
            out.append(s)
    return out


@public
def veth_xmit(dev: Device, skbs: Iterable[Skb], *, kernel: str | Kernel | None = None, ip: Literal[4, 6] = 4,
              local_udp: bool = False, udp_gro: bool = False, local_socket: bool = True) -> VethRx:
    """drivers/net/veth.c veth_xmit for ``skbs`` sent on veth ``dev``: what its peer's stack receives.

    Per skb: __dev_forward_skb drops it if is_skb_forwardable fails (non-GSO longer than the peer's MTU);
    it takes the NAPI path (veth_xdp_rx -> veth_poll -> XDP_PASS -> napi_gro_receive) when the peer's rq has
    NAPI (:func:`veth_napi_active`) and, from 5.13, veth_skb_is_eligible_for_gro; else __netif_rx (the
    backlog: no GRO). napi_gro_receive aggregates only when the peer has NETIF_F_GRO (netif_elide_gro,
    include/linux/netdevice.h 6.1); GRO is :func:`vnetlab.gro.aggregate` on the NAPI skbs (one flow, one
    poll; an in-band tagged flow through vlan_gro_receive), with the peer's features and the receiving socket
    given by ``udp_gro`` / ``local_socket``. Then __netif_receive_skb_core moves an in-band tag out of the data
    (skb_vlan_untag). IP fragments (``skb.ipfrag``) are left alone by GRO (inet_gro_receive flushes them) and
    ip_defrag hands up one reassembled datagram per first fragment and its followers.
    A locally encapsulated UDP skb (a vxlan's, skb->encapsulation) gets no GRO where the kernel rule
    udp_gro_skips_local_encap holds (net/ipv4/udp_offload.c udp_gro_receive, Debian 6.1.192 on); :func:`vxlan_rcv`
    is the vxlan device above.
    """
    return veth_receive(dev, skbs, device_kernel(dev, kernel), ip=ip, local_udp=local_udp, udp_gro=udp_gro,
                        local_socket=local_socket)


@public
def veth_receive(dev: Device, skbs: Iterable[Skb], kv: Kernel, *, ip: Literal[4, 6], local_udp: bool,
                 udp_gro: bool, local_socket: bool) -> VethRx:
    """:func:`veth_xmit` with the kernel already resolved (vnetlab.xmit.send resolves it once for a whole send)."""
    k = kv
    rcv = getattr(dev, "peer", None)
    if rcv is None:
        raise ValueError(f"dev={dev.name!r} is not a veth with a peer")
    skbs = [check_skb(s, "skbs[]") for s in skbs]
    napi = _veth_napi_active(rcv, kv)
    paths: list[str] = []
    kept: list[Skb] = []
    dropped = 0
    for s in skbs:
        if not is_skb_forwardable(rcv, s):
            dropped += 1
            continue
        use_napi = napi and (not k.rule("veth_napi_for_gro") or _eligible_for_gro(dev, rcv, local_udp, kv))
        paths.append("napi" if use_napi else "backlog")
        kept.append(s)
    rcv_feats = _fs(rcv, "features", kv)
    gro_on = "GRO" in rcv_feats
    napi_skbs = [s for s, p in zip(kept, paths) if p == "napi"]
    # __dev_forward_skb -> eth_type_trans: what the peer's stack sees starts at the network header
    delivered = [s.copy(headroom=s.headroom + ETH_HLEN, headlen=s.headlen - ETH_HLEN) for s in kept]
    fragments = any(s.ipfrag and not s.tunnel_hlen for s in kept)
    # net/ipv4/udp_offload.c udp_gro_receive (kernel rule udp_gro_skips_local_encap): a locally encapsulated
    # skb (skb->encapsulation, kept across veth) found no tunnel GRO and gets no L4 GRO either: each goes up
    local_encap = bool(napi_skbs) and napi_skbs[0].encapsulation and napi_skbs[0].transport == "udp" and bool(
        k.rule("udp_gro_skips_local_encap"))
    # The outer flow of a UDP tunnel (vxlan's headers still on, as vxlan_rcv above takes it): udp4_gro_receive's
    # lookup finds the tunnel's socket (setup_udp_tunnel_sock turned udp_encap_needed_key on), never the inner
    # socket, so the inner socket's UDP_GRO does not apply here (net/ipv4/udp_offload.c udp_gro_receive, Debian
    # 5.10.223: `if ((sk && udp_sk(sk)->gro_enabled) || NAPI_GRO_CB(skb)->is_flist)`; the tunnel socket has no
    # gro_enabled, so only GRO_FRAGLIST's is_flist aggregates). What the tunnel's own GRO (vxlan_gro_receive) does
    # is not drawn at this hop: vxlan_rcv's gro_cells merges the same inner packets.
    tunnel = bool(napi_skbs) and napi_skbs[0].tunnel_hlen > 0 and napi_skbs[0].transport == "udp"
    if napi_skbs and gro_on and not fragments and not local_encap:
        l4 = napi_skbs[0].transport
        sock = dict(udp_gro=False, local_socket=True, udp_encap_needed=True) if tunnel else dict(
            udp_gro=udp_gro and l4 == "udp", local_socket=local_socket)
        merged = gro.aggregate([copy.deepcopy(s) for s in napi_skbs], l4=l4, features=rcv_feats, kernel=kv, ip=ip,
                               vlan=bool(napi_skbs[0].vlan_inband), **sock)
        # the backlog is processed after this NAPI poll's GRO flush; one flow takes one path per send
        delivered = [s for s, p in zip(delivered, paths) if p == "backlog"] + list(merged)
    # net/core/dev.c __netif_receive_skb_core: skb_vlan_untag, the in-band tag becomes vlan_tci
    delivered = _defrag([s.vlan_untag() for s in delivered], ip)
    reason = "longer than the peer's MTU (is_skb_forwardable)" if dropped else ""
    return VethRx(rcv.name, kv, tuple(paths), bool(napi_skbs) and gro_on, tuple(delivered), dropped, reason)


# ---------------------------------------------------------------------------------------------------------
# vxlan: the receive side (decapsulation and the vxlan device's own GRO)


@dataclass(frozen=True)
class VxlanRx:
    """What a vxlan device hands up for the skbs its underlay delivered (:func:`vxlan_rcv`).

    ``decapsulated``: the inner skbs vxlan_rcv made (one per outer skb: vxlan counts them in its rx_packets);
    ``delivered``: what gro_cells' NAPI poll handed up the inner stack (network header first); ``gro``: whether
    that poll aggregated (the vxlan device has NETIF_F_GRO)."""

    device: str
    kernel: Kernel
    decapsulated: tuple[Skb, ...]
    gro: bool
    delivered: tuple[Skb, ...]
    dropped: tuple[tuple[Skb, str], ...] = ()  # what never reached this vxlan device, each with the kernel's reason

    @property
    def rx_packets(self) -> int:
        return len(self.decapsulated)


@public
def vxlan_rcv(vx: Vxlan, skbs: Iterable[Skb], *, kernel: str | Kernel | None = None, ip: Literal[4, 6] = 4,
              udp_gro: bool = False, local_socket: bool = True) -> VxlanRx:
    """drivers/net/vxlan/vxlan_core.c vxlan_udp_encap_recv -> vxlan_rcv (6.1; same in 6.12 and 7.2) for the
    skbs the underlay handed to vxlan's UDP socket (``skbs``: each starting at the outer IP header, as
    :attr:`VethRx.delivered` holds them), then net/core/gro_cells.c gro_cells_receive -> the vxlan device's
    NAPI poll -> napi_gro_receive. ``ip``: the inner IP version (the vxlan device's ``ip`` is the outer one).

    Per outer skb: __iptunnel_pull_header pulls the outer IP + UDP + VXLAN headers, eth_type_trans the inner
    Ethernet header; the skb is no longer encapsulated (vxlan's socket takes GSO skbs whole: udp_allow_gso in
    vxlan_socket_create, so a GRO skb of the underlay is decapsulated as one skb, its tunnel GSO bits gone).
    gro_cells_receive queues it for the vxlan device's NAPI, whose GRO is :func:`vnetlab.gro.aggregate` with
    the vxlan device's features and the inner socket (``udp_gro``: UDP_GRO set; ``local_socket``: found).
    """
    kv = device_kernel(vx, kernel)
    outer = vx.headroom() - ETH_HLEN  # include/net/vxlan.h vxlan_headroom: outer IP + UDP + VXLAN header
    decap: list[Skb] = []
    dropped: list[tuple[Skb, str]] = []
    for i, s in enumerate(skbs):
        if not isinstance(s, Skb):
            raise ValueError(f"skbs[{i}] must be a vnetlab.skb.Skb, got {type(s).__name__}")
        why = _vxlan_drop(vx, s, outer)
        if why:
            dropped.append((s, why))
            continue
        if s.headlen < outer + ETH_HLEN:
            raise ValueError(f"skbs[{i}] has {s.headlen} B linear, less than the outer headers and inner Ethernet "
                             f"header ({outer + ETH_HLEN} B) vxlan_rcv pulls (pskb_may_pull)")
        gso_type = s.gso_type - {"UDP_TUNNEL", "UDP_TUNNEL_CSUM"}
        decap.append(s.copy(headroom=s.headroom + outer + ETH_HLEN, headlen=s.headlen - outer - ETH_HLEN,
                            encapsulation=bool(s.tunnels[1:]), gso_type=frozenset(gso_type),
                            tunnel_hlen=s.tunnel_hlen - s.tunnels[0][2] if s.tunnels[1:] else 0,
                            tunnels=s.tunnels[1:]))
    feats = _fs(vx, "features", kv)
    gro_on = "GRO" in feats and bool(decap)
    delivered = _defrag(decap, ip)  # inet_gro_receive flushes fragments; ip_defrag reassembles them above
    if gro_on and not any(s.ipfrag for s in decap):
        # gro_cells_receive -> napi_gro_receive on the vxlan device: the skb starts at the inner IP header
        # there, so GRO sees it with the Ethernet header in front again (eth_gro_receive)
        withmac = [s.copy(headroom=s.headroom - ETH_HLEN, headlen=s.headlen + ETH_HLEN) for s in decap]
        l4 = withmac[0].transport
        merged = gro.aggregate(withmac, l4=l4, udp_gro=udp_gro and l4 == "udp", features=feats, kernel=kv,
                               ip=ip, local_socket=local_socket)
        delivered = list(merged)  # aggregate hands them up past eth_gro_receive: network header first
    return VxlanRx(getattr(vx, "name", "?"), kv, tuple(decap), gro_on, tuple(delivered), tuple(dropped))


def _vxlan_drop(vx: Vxlan, s: Skb, outer: int) -> str:
    """Why vxlan's receive path drops ``s`` before any vxlan device takes it ("" when it does not).

    drivers/net/vxlan/vxlan_core.c (6.1): vxlan_socket_create binds one UDP socket per (port, family), an IPv6
    one with ipv6_v6only, so an outer header of the other family finds no vxlan socket (__udp4_lib_rcv /
    __udp6_lib_rcv: no port, counted in UdpNoPorts); vxlan_rcv drops a packet with no VXLAN header (the VNI flag
    unset, or too short to hold one: pskb_may_pull(VXLAN_HLEN)) and one whose VNI no device of that socket has
    (vxlan_vs_find_vni)."""
    if s.tunnels:  # an skb made by the model's vxlan_xmit_one says which socket and VNI it is for
        ip, vni, _ = s.tunnels[0]
        if ip != vx.ip:
            return (f"outer IPv{ip}, but {vx.name}'s vxlan socket is IPv{vx.ip} only (vxlan_socket_create): "
                    "no socket on the port, UdpNoPorts")
        if vni != vx.vni:
            return f"VNI {vni}, but {vx.name} has VNI {vx.vni} (vxlan_vs_find_vni finds no device)"
    if not s.encapsulation or s.tunnel_hlen < outer + ETH_HLEN:
        return "no VXLAN header (vxlan_rcv: pskb_may_pull(VXLAN_HLEN) or the VNI flag fails)"
    return ""
