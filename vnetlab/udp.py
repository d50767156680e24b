"""A UDP socket's view: udp_sendmsg with UDP_SEGMENT (GSO) and what recvmsg returns, per kernel.

- :func:`udp_sendmsg` follows net/ipv4/udp.c udp_sendmsg -> ip_make_skb (__ip_append_data) -> udp_send_skb,
  and net/ipv6/udp.c udpv6_sendmsg -> ip6_make_skb (__ip6_append_data) -> udp_v6_send_skb: it returns the
  errno the kernel returns, or the skb and what :func:`vnetlab.xmit.send` puts on the wire (the datagrams,
  their sizes, the short last one);
- :func:`udp_recv` is the receiving socket: udp_queue_rcv_skb / udpv6_queue_rcv_skb segment a GSO skb the
  socket did not ask for (udp_unexpected_gso -> udp_rcv_segment), and recvmsg returns one datagram per
  queued skb, with UDP_GRO's cmsg carrying gso_size (udp_cmsg_recv);
- :func:`send_over_veth` puts both together across a veth pair (:func:`vnetlab.xmit.veth_xmit` in between);
  :func:`send_over_vxlan` does it through a vxlan device on each end (:func:`vnetlab.xmit.vxlan_rcv` on the
  receiver: decapsulation and gro_cells' GRO).

The limits that differ per kernel are rules of data/kernels.toml, each with the line it was read from
(Debian linux-source-5.10 (5.10.223), linux-source-6.1 (6.1.192), linux-source-6.12 (6.12.95) and the ≈6.18
mirror Kingxukai/linux @ 0291023e7330):

- ``udp_max_segments``: UDP_MAX_SEGMENTS (include/linux/udp.h), 64 (1 << 6) up to 6.8, 128 (1 << 7) from
  1382e3b6a350 ("net: change maximum number of UDP segments to 128", v6.9; stable 6.8.y and 6.1.107, so in
  Debian 6.1.192; not in 5.10.y up to 5.10.262);
- ``udp_gso_mtu_check``: the gso_size-against-MTU check in udp_send_skb / udp_v6_send_skb,
  ``hlen + gso_size > fragsize`` -> EINVAL even for a datagram shorter than gso_size ("gso_size"), until
  235174b2bed8 ("udp: gso: do not drop small packets when PMTU reduces", 2025; stable 5.10.235, 6.1.129 and
  6.12.14, so Debian 5.10.262, 6.1.192 and 6.12.95, and 6.18): ``hlen + min(datalen, gso_size) > fragsize`` ->
  EMSGSIZE ("min_datalen");
- ``udp_segment_needs_csum_offload``: a route device without checksum offload makes udp_send_skb return EIO
  for a UDP_SEGMENT send (ip_summed not CHECKSUM_PARTIAL) until 10154dbded6d ("udp: Allow GSO transmit from
  devices with no checksum offload", v6.11), absent in 6.1.192, present in 6.12.95 and 6.18: there the skb is
  segmented in software instead;
- ``udp_gro_accepts_fraglist``: a UDP_GRO socket accepts a fraglist GSO skb whole until 78352f73dc50 ("udp:
  never accept GSO_FRAGLIST packets", v5.13; backported to Debian's 5.10.223): from then udp_unexpected_gso
  segments it.
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from vnetlab.checks import public
from vnetlab.errors import ArgumentError, TableError
from vnetlab.features import FeatureSet, can_checksum_protocol, mask
from vnetlab.headers import ETH_HLEN, IP_HLEN, IP_MAX_MTU, SOL_UDP, UDP_GRO, UDP_HLEN, UDP_SEGMENT
from vnetlab.netdev import Device, Vxlan
from vnetlab.profiles import DEFAULT_KERNEL, Kernel, device_kernel
from vnetlab.profiles import kernel as _kernel
from vnetlab.segment import check_ip, skb_gso_segment
from vnetlab.skb import GSO_L4, Frag, Page, Skb
from vnetlab.xmit import TxResult, VethRx, VxlanRx, send, vxlan_rcv

__all__ = [
    "SOL_UDP", "UDP_GRO", "UDP_SEGMENT", "UdpRecv", "UdpSend", "UdpTransfer", "send_over_veth", "send_over_vxlan",
    "udp_max_segments", "udp_recv", "udp_sendmsg",
]

IP6_MAX_MTU = IP_MAX_MTU + IP_HLEN[6]  # include/net/ip6_route.h: 0xFFFF + sizeof(struct ipv6hdr)
_PAGE_FRAG = 32768  # include/net/sock.h SKB_FRAG_PAGE_ORDER: sk_page_frag refills 32 KiB


@public
def udp_max_segments(kernel: str | Kernel = DEFAULT_KERNEL) -> int:
    """include/linux/udp.h UDP_MAX_SEGMENTS of ``kernel`` (kernel rule ``udp_max_segments``: 64, or 128 from
    1382e3b6a350, v6.9, also in 6.1.y from 6.1.107)."""
    return _max_segments(_kernel(kernel))


def _max_segments(k: Kernel) -> int:
    most = k.rules.typed("udp_max_segments", int)
    if most < 1:
        raise TableError(f"data/kernels.toml: [{k.version}].udp_max_segments must be a positive segment count, "
                         f"got {most!r}")
    return int(most)


_MTU_CHECKS = ("gso_size", "min_datalen")


def _mss_check_is_min(k: Kernel) -> bool:
    """net/ipv4/udp.c udp_send_skb: kernel rule ``udp_gso_mtu_check``, "min_datalen" from 235174b2bed8."""
    rule = k.rule("udp_gso_mtu_check")
    if rule not in _MTU_CHECKS:
        raise TableError(f"data/kernels.toml: [{k.version}].udp_gso_mtu_check must be one of {_MTU_CHECKS}, "
                         f"got {rule!r}")
    return rule == "min_datalen"


@dataclass(frozen=True)
class UdpSend:
    """What one sendmsg() of ``length`` payload bytes did.

    ``error``: None, or the errno name the call returns ("EMSGSIZE", "EINVAL", "EIO"), with ``reason`` (the
    kernel function and rule); ``skb``: the skb udp_send_skb handed to IP; ``tx``: :func:`vnetlab.xmit.send`
    of it; ``datagrams``: the UDP payload size of each datagram sent, in order: the segments of a GSO skb
    (also when a veth hands the skb to its peer whole; the receiver segments it or keeps it, see
    :func:`udp_recv`), one entry for a datagram that left as IP fragments.
    """

    length: int
    gso_size: int
    ip: int
    kernel: Kernel  # the kernel the send ran (a lab kernel with its patch's rules)
    error: str | None
    reason: str
    skb: Skb | None = None
    tx: TxResult | None = None

    @property
    def errno(self) -> int | None:
        return None if self.error is None else getattr(_errno, self.error)

    @property
    def datagrams(self) -> tuple[int, ...]:
        if self.skb is None:
            return ()
        # the datagram boundaries are fixed by gso_size at the sender: every segmentation on the way (a
        # device's skb_segment, the NIC's USO, the receiver's udp_rcv_segment) cuts at the same offsets
        step = self.skb.gso_size if self.skb.is_gso() else self.length
        return tuple(min(step, self.length - off) for off in range(0, self.length, step)) if step else (0,)

    @property
    def gso_segs(self) -> int:
        return self.skb.gso_segs if self.skb is not None else 0


def _fail(length: int, gso: int, ip: int, k: Kernel, name: str, reason: str) -> UdpSend:
    return UdpSend(length, gso, ip, k, name, reason)


def _udp_skb(length: int, gso_size: int, ip: int, partial: bool, paged: bool) -> Skb:
    """The skb __ip_append_data / __ip6_append_data builds, as dev_queue_xmit sees it (link header pushed).

    With gso_size (paged): the headers in the linear part and the payload in sk_page_frag pages, 32 KiB each
    (skb_copy_to_page_nocache); without: one linear skb (fraglen fits SKB_MAX_ALLOC)."""
    hdr = ETH_HLEN + IP_HLEN[ip] + UDP_HLEN
    headroom = 64
    if paged:
        frags = [Frag(Page(pfn=3000 + i, size=_PAGE_FRAG), 0, min(_PAGE_FRAG, length - off), 0)
                 for i, off in enumerate(range(0, length, _PAGE_FRAG))]
        skb = Skb(headlen=hdr, truesize=768 + length, head_frag=False, end_offset=headroom + hdr + 64,
                  headroom=headroom, frags=frags, l4="udp")
    else:
        skb = Skb(headlen=hdr + length, truesize=768 + hdr + length, head_frag=False,
                  end_offset=headroom + hdr + length, headroom=headroom, l4="udp")
    skb.ip_summed = "CHECKSUM_PARTIAL" if partial else "CHECKSUM_NONE"
    if gso_size and length > gso_size:
        skb.gso_size = gso_size
        skb.gso_type = frozenset({"UDP_L4"})
        skb.gso_segs = -(-length // gso_size)
    return skb


@public
def udp_sendmsg(dev: Device, length: int, *, gso_size: int = 0, ip: Literal[4, 6] = 4,
                kernel: str | Kernel | None = None, dontfrag: bool = False, no_check_tx: bool = False,
                peer_udp_gro: bool = False) -> UdpSend:
    """sendmsg() of ``length`` payload bytes on a UDP socket whose route leaves through ``dev`` (a
    vnetlab.netdev device; its ``mtu`` is the route MTU, its ``features`` decide checksum offload).

    ``gso_size``: setsockopt(SOL_UDP, UDP_SEGMENT) or the UDP_SEGMENT cmsg (0: no GSO). ``dontfrag``:
    IP_MTU_DISCOVER=IP_PMTUDISC_DO / IPV6_DONTFRAG. ``no_check_tx``: SO_NO_CHECK / UDP_NO_CHECK6_TX.
    ``peer_udp_gro``: when ``dev`` is a veth, whether the socket behind its peer set UDP_GRO (the peer's GRO
    step looks the socket up). The checks run in the order the kernel makes them, each citing its source.
    """
    return _sendmsg(dev, length, device_kernel(dev, kernel), gso_size=gso_size, ip=ip, dontfrag=dontfrag,
                    no_check_tx=no_check_tx, peer_udp_gro=peer_udp_gro)


def _sendmsg(dev: Device, length: int, kv: Kernel, *, gso_size: int, ip: int, dontfrag: bool = False,
             no_check_tx: bool = False, peer_udp_gro: bool = False) -> UdpSend:
    # udp_sendmsg's body, on the kernel its public caller resolved
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ArgumentError(f"length must be a non-negative int (bytes of UDP payload), got {length!r}",
                            function="udp.udp_sendmsg", param="length")
    if isinstance(gso_size, bool) or not isinstance(gso_size, int):
        raise ArgumentError(f"gso_size must be an int (UDP_SEGMENT), got {gso_size!r}", function="udp.udp_sendmsg",
                            param="gso_size")
    if not 0 <= gso_size <= 0xFFFF:
        # net/ipv4/udp.c udp_lib_setsockopt UDP_SEGMENT: val < 0 || val > USHRT_MAX -> -EINVAL
        return _fail(length, gso_size, ip, kv, "EINVAL", "udp_lib_setsockopt: UDP_SEGMENT outside 0..65535")
    if ip == 4 and length > 0xFFFF:
        # net/ipv4/udp.c udp_sendmsg: len > 0xFFFF -> -EMSGSIZE
        return _fail(length, gso_size, ip, kv, "EMSGSIZE", "udp_sendmsg: len > 0xFFFF")
    mtu = int(getattr(dev, "mtu", 1500))
    ulen = length + UDP_HLEN
    hlen = IP_HLEN[ip] + UDP_HLEN
    if ip == 4:
        # net/ipv4/ip_output.c __ip_append_data: mtu = gso_size ? IP_MAX_MTU : fragsize; maxnonfragsize is
        # IP_MAX_MTU unless IP_PMTUDISC_DO (ip_sk_ignore_df); length > maxnonfragsize - 20 -> -EMSGSIZE
        amtu = IP_MAX_MTU if gso_size else mtu
        maxnonfrag = amtu if dontfrag else IP_MAX_MTU
        if ulen > maxnonfrag - IP_HLEN[4]:
            return _fail(length, gso_size, ip, kv, "EMSGSIZE",
                         f"__ip_append_data: {ulen} B of UDP > {maxnonfrag} - 20 (maxnonfragsize - fragheaderlen)")
    else:
        amtu = IP6_MAX_MTU if gso_size else mtu
        # net/ipv6/ip6_output.c __ip6_append_data: with IPV6_DONTFRAG, length > mtu - headersize -> -EMSGSIZE
        if dontfrag and ulen > amtu - IP_HLEN[6]:
            return _fail(length, gso_size, ip, kv, "EMSGSIZE",
                         f"__ip6_append_data: dontfrag and {ulen} B of UDP > mtu {amtu} - 40")
        # __ip6_append_data: maxnonfragsize = sizeof(ipv6hdr) + IPV6_MAXPLEN (ip6_sk_ignore_df) -> 65535 of UDP
        if ulen > IP_MAX_MTU:
            return _fail(length, gso_size, ip, kv, "EMSGSIZE", f"__ip6_append_data: {ulen} B of UDP > IPV6_MAXPLEN")
    feats = FeatureSet.coerce(getattr(dev, "features", None), kv)
    # __ip_append_data / __ip6_append_data: CHECKSUM_PARTIAL when the first skb holds it all and the route
    # device offloads the checksum (IP_CSUM | HW_CSUM, IPV6_CSUM | HW_CSUM)
    partial = ulen + IP_HLEN[ip] <= amtu and can_checksum_protocol(feats & mask("CSUM_MASK", kv), ip)
    if gso_size:
        datalen = length
        if _mss_check_is_min(kv):
            # net/ipv4/udp.c udp_send_skb (235174b2bed8): hlen + min(datalen, gso_size) > fragsize -> -EMSGSIZE
            if hlen + min(datalen, gso_size) > mtu:
                return _fail(length, gso_size, ip, kv, "EMSGSIZE",
                             f"udp_send_skb: {hlen} + min({datalen}, {gso_size}) > fragsize {mtu}")
        elif hlen + gso_size > mtu:
            # net/ipv4/udp.c udp_send_skb (before 235174b2bed8): hlen + gso_size > fragsize -> -EINVAL
            return _fail(length, gso_size, ip, kv, "EINVAL", f"udp_send_skb: {hlen} + {gso_size} > fragsize {mtu}")
        most = _max_segments(kv)
        if datalen > gso_size * most:
            # udp_send_skb: datalen > gso_size * UDP_MAX_SEGMENTS -> -EINVAL
            return _fail(length, gso_size, ip, kv, "EINVAL",
                         f"udp_send_skb: {datalen} > {gso_size} * UDP_MAX_SEGMENTS ({most})")
        if no_check_tx:
            # udp_send_skb: sk->sk_no_check_tx (udp_v6_send_skb: udp_get_no_check6_tx) -> -EINVAL
            return _fail(length, gso_size, ip, kv, "EINVAL", "udp_send_skb: checksums off (SO_NO_CHECK)")
        if not partial and kv.rule("udp_segment_needs_csum_offload"):
            # udp_send_skb (6.1): skb->ip_summed != CHECKSUM_PARTIAL -> -EIO
            return _fail(length, gso_size, ip, kv, "EIO",
                         f"udp_send_skb: {getattr(dev, 'name', 'dev')} cannot checksum IPv{ip} (ip_summed not PARTIAL)")
    skb = _udp_skb(length, gso_size, ip, partial, paged=bool(gso_size))
    # net/ipv4/ip_output.c __ip_make_skb: DF is set under IP_PMTUDISC_DO, and under the default IP_PMTUDISC_WANT
    # on a datagram that fits the route's MTU (skb->len <= dst_mtu && ip_dont_fragment); a longer one (a GSO skb
    # too) leaves without DF and is fragmented (ip_fragment). A tunnel inheriting DF sees the difference.
    df = dontfrag or (ip == 4 and skb.network_len() <= mtu)
    tx = send(dev, skb, kernel=kv, ip=ip, df=df, local_udp=True, udp_gro=peer_udp_gro)
    reason = (f"GSO skb of {skb.gso_segs} segments of {gso_size} B" if skb.is_gso()
              else "one datagram" + (" (gso_size set, datalen <= gso_size: no GSO)" if gso_size else ""))
    return UdpSend(length, gso_size, ip, kv, None, reason, skb, tx)


# ---------------------------------------------------------------------------------------------------------
# The receiving socket


@dataclass(frozen=True)
class UdpRecv:
    """What recvmsg() returns, call by call: ``sizes`` (bytes of each datagram or GRO skb) and ``gso_sizes``
    (the UDP_GRO cmsg value, None when recvmsg carries none). ``segmented``: skbs udp_rcv_segment split;
    ``kept_headers``: datagrams of those that kept the IP/UDP header they arrived with, not the head's
    (:attr:`vnetlab.segment.SegmentResult.kept_headers`: untranslated after NAT on a forwarding host)."""

    sizes: tuple[int, ...]
    gso_sizes: tuple[int | None, ...]
    segmented: int = 0
    kept_headers: int = 0

    @property
    def calls(self) -> int:
        return len(self.sizes)

    @property
    def bytes(self) -> int:
        return sum(self.sizes)

    @property
    def datagrams(self) -> int:
        """Datagrams the payload stands for: a GRO skb counts its gso_size segments."""
        return sum(-(-s // g) if g else 1 for s, g in zip(self.sizes, self.gso_sizes))


def _unexpected_gso(skb: Skb, udp_gro: bool, k: Kernel) -> bool:
    # include/linux/udp.h udp_unexpected_gso (6.1): GSO UDP_L4 without accept_udp_l4 (set by UDP_GRO), or
    # FRAGLIST without accept_udp_fraglist (never set for a plain socket, from 78352f73dc50, v5.13)
    if not skb.is_gso():
        return False
    if "UDP_L4" in skb.gso_type and not udp_gro:
        return True
    # include/linux/udp.h udp_unexpected_gso: before 78352f73dc50 (v5.13) only !gro_enabled && UDP_L4
    return "FRAGLIST" in skb.gso_type and not k.rule("udp_gro_accepts_fraglist")


def _check_udp_skb(skb: object, i: int, hdr: int, ip: int) -> None:
    # What can reach udp_queue_rcv_skb: an skb (net/ipv4/ip_input.c ip_protocol_deliver_rcu demuxes on the IP
    # protocol, so a TCP skb never reaches a UDP socket) holding at least the UDP header (__udp4_lib_rcv drops
    # one whose pskb_may_pull(sizeof(struct udphdr)) fails, before any socket sees it).
    where = f"skbs[{i}]"
    if not isinstance(skb, Skb):
        raise ArgumentError(f"udp_recv: {where} must be an Skb (what the stack hands a UDP socket), got "
                            f"{type(skb).__name__}", function="udp.udp_recv", param="skbs")
    named = {GSO_L4[t] for t in skb.gso_type if t in GSO_L4}
    if "tcp" in ({skb.l4} if skb.l4 is not None else named):  # an skb that names no protocol is taken as UDP
        raise ArgumentError(f"udp_recv: {where} is a TCP skb; ip_protocol_deliver_rcu hands a "
                            "UDP socket only IPPROTO_UDP skbs", function="udp.udp_recv", param="skbs")
    if skb.ipfrag or skb.tunnel_hlen or skb.vlan_inband:
        raise ArgumentError(f"udp_recv: {where} still carries IP fragment, tunnel or VLAN headers; the stack "
                            "reassembles (ip_defrag), decapsulates and untags before udp_rcv", function="udp.udp_recv",
                            param="skbs")
    if skb.len < hdr:
        raise ArgumentError(f"udp_recv: {where} is {skb.len} B, shorter than the IPv{ip} and UDP headers ({hdr} B): "
                            "__udp4_lib_rcv drops it (pskb_may_pull of struct udphdr) before a socket sees it",
                            function="udp.udp_recv", param="skbs")


@public
def udp_recv(skbs: Iterable[Skb], *, udp_gro: bool = False, ip: Literal[4, 6] = 4,
             kernel: str | Kernel = DEFAULT_KERNEL) -> UdpRecv:
    """The skbs the stack hands a UDP socket (skb->data at the IP header, as after eth_type_trans) -> recvmsg.

    net/ipv4/udp.c udp_queue_rcv_skb (net/ipv6/udp.c udpv6_queue_rcv_skb): an unexpected GSO skb goes through
    udp_rcv_segment -> __skb_gso_segment(NETIF_F_SG | NETIF_F_GSO_SOFTWARE) and each segment is queued as a
    datagram; anything else is queued whole. udp_recvmsg: one skb per call; with UDP_GRO (GRO_ENABLED)
    udp_cmsg_recv adds the UDP_GRO cmsg = gso_size for a UDP_L4 GSO skb.
    """
    check_ip(ip)
    return _recv(skbs, _kernel(kernel), udp_gro=udp_gro, ip=ip)


def _recv(skbs: Iterable[Skb], k: Kernel, *, udp_gro: bool, ip: int) -> UdpRecv:
    # udp_recv's body, on the kernel its public caller resolved
    sizes: list[int] = []
    gsos: list[int | None] = []
    segmented = kept = 0
    hdr = IP_HLEN[ip] + UDP_HLEN  # after eth_type_trans the skb starts at the IP header
    feats = FeatureSet.from_names(["SG"], k) | mask("GSO_SOFTWARE", k)
    for i, skb in enumerate(skbs):
        _check_udp_skb(skb, i, hdr, ip)
        if _unexpected_gso(skb, udp_gro, k):
            segmented += 1
            res = skb_gso_segment(skb, feats, kernel=k, ip=ip, link_hlen=0)
            kept += res.kept_headers
            for seg in res.segs:
                sizes.append(seg.len - hdr)
                gsos.append(None)
            continue
        sizes.append(skb.len - hdr)
        gsos.append(skb.gso_size if udp_gro and "UDP_L4" in skb.gso_type and skb.is_gso() else None)
    return UdpRecv(tuple(sizes), tuple(gsos), segmented, kept)


@dataclass(frozen=True)
class UdpTransfer:
    """:func:`send_over_veth`: the send, the receiving veth's path and GRO, and the receiving socket;
    :func:`send_over_vxlan` adds ``vxlan``, the receiving vxlan device's decapsulation and GRO (``rx`` is then
    its underlay veth)."""

    send: UdpSend
    rx: VethRx | None
    recv: UdpRecv | None
    vxlan: VxlanRx | None = None


@public
def send_over_veth(dev: Device, length: int, *, gso_size: int = 0, udp_gro: bool = False, ip: Literal[4, 6] = 4,
                   kernel: str | Kernel | None = None, dontfrag: bool = False) -> UdpTransfer:
    """udp_sendmsg on veth ``dev`` into a UDP socket behind its peer (``udp_gro``: that socket set UDP_GRO).

    The peer's receive path is :func:`vnetlab.xmit.veth_xmit` (backlog or NAPI + GRO per kernel, XDP and the
    peer's ``gro``, ``rx-udp-gro-forwarding``, ``rx-gro-list`` settings); the socket is :func:`udp_recv`."""
    kv = device_kernel(dev, kernel)  # resolved once here and carried to the send and the receiving socket
    s = _sendmsg(dev, length, kv, gso_size=gso_size, ip=ip, dontfrag=dontfrag, peer_udp_gro=udp_gro)
    if s.error is not None or s.tx is None or s.tx.peer_rx is None:
        return UdpTransfer(s, None, None)
    rx = s.tx.peer_rx
    return UdpTransfer(s, rx, _recv(rx.delivered, kv, udp_gro=udp_gro, ip=ip))


@public
def send_over_vxlan(vx: Vxlan, peer_vx: Vxlan, length: int, *, gso_size: int = 0, udp_gro: bool = False,
                    ip: Literal[4, 6] = 4, kernel: str | Kernel | None = None) -> UdpTransfer:
    """udp_sendmsg on vxlan ``vx`` (its underlay a veth) into a UDP socket behind ``peer_vx``, the vxlan device
    on the veth's peer (``udp_gro``: that socket set UDP_GRO; ``ip``: the inner IP version).

    Down: :func:`vnetlab.xmit.send` (vxlan_xmit_one's encapsulation, the underlay's validate_xmit_skb with
    hw_enc_features); across: :func:`vnetlab.xmit.veth_xmit` (the underlay's NAPI and GRO: no L4 GRO for a
    locally encapsulated skb where the kernel rule udp_gro_skips_local_encap holds); up:
    :func:`vnetlab.xmit.vxlan_rcv` (decapsulation, gro_cells on ``peer_vx``) and :func:`udp_recv`."""
    kv = device_kernel(vx, kernel)  # resolved once here and carried down, across and up
    under = getattr(vx, "underlay", None)
    if getattr(vx, "kind", None) != "vxlan" or getattr(under, "kind", None) != "veth":
        raise ValueError(f"vx={getattr(vx, 'name', vx)!r} must be a vxlan device on a veth underlay")
    if getattr(peer_vx, "kind", None) != "vxlan" or getattr(peer_vx, "underlay", None) is not getattr(
            under, "peer", None):
        raise ValueError(f"peer_vx={getattr(peer_vx, 'name', peer_vx)!r} must be a vxlan device on the peer of "
                         f"{getattr(under, 'name', under)!r}")
    s = _sendmsg(vx, length, kv, gso_size=gso_size, ip=ip, peer_udp_gro=udp_gro)
    if s.error is not None or s.tx is None or s.tx.peer_rx is None:
        return UdpTransfer(s, None, None)
    rx = s.tx.peer_rx
    up = vxlan_rcv(peer_vx, rx.delivered, kernel=kv, ip=ip, udp_gro=udp_gro)
    return UdpTransfer(s, rx, _recv(up.delivered, kv, udp_gro=udp_gro, ip=ip), up)
