"""Protocol header and frame sizes in bytes, as the kernel's UAPI headers define them (the same 5.10..6.18), the
size and count limits the GRO and GSO code share (one home for both the receive and transmit models), and the
UDP socket options the models and the live experiments name."""

from __future__ import annotations

ETH_HLEN = 14  # include/uapi/linux/if_ether.h
ETH_DATA_LEN = 1500  # include/uapi/linux/if_ether.h
# include/uapi/linux/if_ether.h ETH_MIN_MTU / ETH_MAX_MTU: ether_setup's dev->min_mtu, and the widest max_mtu
ETH_MIN_MTU = 68
ETH_MAX_MTU = 65535
VLAN_HLEN = 4  # include/linux/if_vlan.h
VLAN_VID_MASK = 0xFFF  # include/linux/if_vlan.h: the 12-bit VLAN id of a tag
# include/net/vxlan.h VXLAN_N_VID: the 24-bit VXLAN network identifier space
VXLAN_N_VID = 1 << 24
IP_HLEN = {4: 20, 6: 40}  # struct iphdr without options / struct ipv6hdr (include/uapi/linux/ip.h, ipv6.h)
IPV4_HLEN = IP_HLEN[4]
UDP_HLEN = 8  # struct udphdr (include/uapi/linux/udp.h)
TCP_HLEN_MIN = 20  # struct tcphdr without options (include/uapi/linux/tcp.h)
TCP_HLEN_MAX = 60  # doff is 4 bits of 32-bit words
TCP_HLEN_TS = 32  # 20-byte header + 12 bytes of timestamp option, as most TCP flows carry
IP_MAX_MTU = 65535  # include/net/ip.h; also the 16-bit iphdr tot_len bound

SOL_UDP = 17  # include/linux/socket.h
UDP_SEGMENT = 103  # include/uapi/linux/udp.h: setsockopt / cmsg, the gso_size of a send
UDP_GRO = 104  # include/uapi/linux/udp.h: setsockopt, and the cmsg recvmsg returns gso_size in

# include/linux/netdevice.h (6.1): GRO_LEGACY_MAX_SIZE 65536u (also dev->gso_max_size's default, GSO_MAX_SIZE
# before 6.2); GRO_MAX_SIZE (8 * 65535u); GSO_MAX_SEGS 65535 (dev->gso_max_segs default), 5.10..6.18.
GRO_LEGACY_MAX_SIZE = 65536
GRO_MAX_SIZE = 8 * 65535
GSO_MAX_SIZE = GRO_LEGACY_MAX_SIZE
GSO_MAX_SEGS = 65535
# net/ipv4/udp_offload.c udp_gro_receive_segment (5.10, 6.1, 6.18): UDP_GRO_CNT_MAX 64.
UDP_GRO_CNT_MAX = 64
# net/ipv4/tcp_offload.c tcp_gro_receive (6.10+, mirror 6.18): a TCP fraglist flow completes at count >= 64.
TCP_FRAGLIST_CNT_MAX = 64
