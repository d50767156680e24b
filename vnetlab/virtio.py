"""virtio-net's constants, header sizes and the argument rules every receive module shares.

drivers/net/virtio_net.c's constants and include/uapi/linux/virtio_net.h's header structs, the padded header
page_to_skb skips, and the checks of MTU and header length with their kernel meaning.
"""

from __future__ import annotations

from typing import Annotated, Literal

from vnetlab.checks import In, check_int, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, ETH_MIN_MTU, IP_HLEN, IP_MAX_MTU, TCP_HLEN_TS, UDP_HLEN, VLAN_HLEN
from vnetlab.profiles import Kernel

# drivers/net/virtio_net.c constants (unchanged from 5.10 to 6.18).
GOOD_COPY_LEN = 128
GOOD_PACKET_LEN = ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN
VIRTIO_XDP_HEADROOM = 256
# sizeof(struct padded_vnet_hdr) from v5.18 (c1ddc42da2b2): a v1_hash header (20) plus char padding[12]; before
# v5.18 it is a mrg_rxbuf header (12) plus char padding[4] = 16. Per kernel: padded_vnet_hdr_len(k).
PADDED_VNET_HDR_LEN = 32
# sizeof(struct virtio_net_hdr_mrg_rxbuf): the header MRG_RXBUF or VERSION_1 negotiates (virtnet_probe), the
# default hdr_len everywhere; also what 5.x get_mergeable_buf_len adds (drivers/net/virtio_net.c).
MRG_RXBUF_HDR_LEN = 12
# include/net/sock.h: SKB_FRAG_PAGE_ORDER = get_order(32768), the rq page frag skb_page_frag_refill tries first.
SKB_FRAG_PAGE_SIZE = 32768
# include/linux/netdevice.h NAPI_POLL_WEIGHT: virtnet_alloc_queues registers each rx NAPI with it.
NAPI_POLL_WEIGHT = 64
# QEMU hw/net/virtio-net.c VIRTIO_NET_RX_QUEUE_DEFAULT_SIZE: the rx virtqueue size a guest usually sees.
RX_QUEUE_SIZE = 256

# The virtio-net header sizes virtnet_probe can pick (include/uapi/linux/virtio_net.h), per struct.
VNET_HDR_STRUCTS = {
    10: "virtio_net_hdr (neither MRG_RXBUF nor VERSION_1)",
    12: "virtio_net_hdr_mrg_rxbuf / virtio_net_hdr_v1 (MRG_RXBUF or VERSION_1)",
    20: "virtio_net_hdr_v1_hash (HASH_REPORT)",
    24: "virtio_net_hdr_v1_hash_tunnel (UDP tunnel GSO)",
}

# mergeable_buf_lens / small_buf_lens carve one buffer object each (~10 us): 65536 stay within a second or so
# (10,000,000 took 2 minutes).
MAX_BUFFERS = 1 << 16

PATHS = ("copy", "copy+frag", "build_skb")
MODES = ("small", "big", "mergeable")

# Annotations @public enforces (vnetlab.checks): the names and ranges a caller meets everywhere in rx and gro.
L4 = Literal["udp", "tcp"]
IpVersion = Literal[4, 6]
Mode = Literal["small", "big", "mergeable"]
PayloadLen = Annotated[int, In(0, IP_MAX_MTU, "L4 payload bytes")]

L4_HDR_LEN = {"udp": UDP_HLEN, "tcp": TCP_HLEN_TS}  # TCP with the timestamp option, as Linux sends by default


# page_to_skb's three outcomes as small ints (classify's codes, the threshold maps' colours)
PATH_CODES = {"copy": 0, "copy+frag": 1, "build_skb": 2}

# --------------------------------------------------------------------------------------------------
# Argument checks: every bad value names the parameter, the allowed range and its kernel meaning.

# include/uapi/linux/if_ether.h ETH_MIN_MTU: virtnet_probe's dev->min_mtu; dev->max_mtu is MAX_MTU (ETH_MAX_MTU
# 65535) without VIRTIO_NET_F_MTU, the device's own mtu with it.
MTU_MEANING = ("the device MTU: virtnet_probe sets dev->min_mtu = ETH_MIN_MTU (68) and dev->max_mtu = MAX_MTU "
               "(65535, or the device's VIRTIO_NET_F_MTU value)")


Mtu = Annotated[int, In(ETH_MIN_MTU, IP_MAX_MTU, MTU_MEANING)]

# What the receive-buffer helpers take (rx's entry points check the kernel's own values first; a direct call of a
# helper meets these bounds). The header sizes any kernel negotiates (which ones a kernel has: check_hdr_len).
HdrLen = Annotated[int, In(min(VNET_HDR_STRUCTS), max(VNET_HDR_STRUCTS),
                           "virtio-net header bytes: virtio_net_hdr 10, _mrg_rxbuf 12, _v1_hash 20, "
                           "_v1_hash_tunnel 24")]
# drivers/net/virtio_net.c MRG_CTX_HEADER_SHIFT 22: mergeable_len_to_ctx keeps a buffer's truesize in 22 bits.
MAX_BUF_BYTES = 1 << 22
_BUF_MEANING = "bytes in one receive buffer: mergeable_len_to_ctx keeps a truesize in 22 bits"
BufBytes = Annotated[int, In(0, MAX_BUF_BYTES, _BUF_MEANING)]
BufSize = Annotated[int, In(1, MAX_BUF_BYTES, _BUF_MEANING)]
# add_recvbuf_mergeable: headroom = virtnet_get_headroom(vi), VIRTIO_XDP_HEADROOM with an XDP program, else 0.
XdpHeadroom = Literal[0, VIRTIO_XDP_HEADROOM]


@public
def check_mtu(mtu: object) -> int:
    return check_int("mtu", mtu, ETH_MIN_MTU, IP_MAX_MTU, MTU_MEANING)


@public
def check_hdr_len(hdr_len: object, k: Kernel) -> int:
    allowed = list(k.rule("vnet_hdr_lens"))
    if not isinstance(hdr_len, int) or isinstance(hdr_len, bool) or hdr_len not in allowed:
        names = "; ".join(f"{n} = {VNET_HDR_STRUCTS[n]}" for n in allowed)
        raise ArgumentError(
            f"hdr_len={hdr_len!r} is not a virtio-net header size kernel {k.version} can negotiate "
            f"(virtnet_probe): allowed {allowed} ({names})", param="hdr_len"
        )
    return hdr_len  # type: ignore[return-value]



@public
def padded_vnet_hdr_len(k: Kernel) -> int:
    """sizeof(struct padded_vnet_hdr) in drivers/net/virtio_net.c: 16 before v5.18, 32 from c1ddc42da2b2 (v5.18)."""
    return int(k.rule("padded_vnet_hdr_len"))


@public
def hdr_padded_len(mode: Mode, hdr_len: HdrLen, k: Kernel) -> int:
    """page_to_skb: hdr_padded_len = hdr_len (mergeable; 12 = sizeof(*hdr) before that) or sizeof(padded_vnet_hdr)."""
    if mode == "mergeable":
        return MRG_RXBUF_HDR_LEN if k.rule("mergeable_hdr_padded_len") == "mrg_rxbuf" else hdr_len
    return padded_vnet_hdr_len(k)


@public
def check_mergeable_hdr_len(hdr_len: object, k: Kernel) -> int:
    check_hdr_len(hdr_len, k)
    if hdr_len == 10:
        raise ArgumentError("hdr_len=10 (struct virtio_net_hdr) cannot go with mergeable buffers: "
                            "VIRTIO_NET_F_MRG_RXBUF makes virtnet_probe use virtio_net_hdr_mrg_rxbuf (12) or a larger "
                            "header", param="hdr_len")
    return hdr_len  # type: ignore[return-value]


@public
def frame_len_for(payload_len: PayloadLen, *, l4: L4 = "udp", ip: IpVersion = 4, vlan: bool = False) -> int:
    """The Ethernet frame (no FCS) carrying ``payload_len`` bytes of L4 payload (l4 and ip checked once, by their
    annotations)."""
    return ETH_HLEN + (VLAN_HLEN if vlan else 0) + IP_HLEN[ip] + L4_HDR_LEN[l4] + payload_len

