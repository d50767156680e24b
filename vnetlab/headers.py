"""Protocol header and frame sizes in bytes, as the kernel's UAPI headers define them (the same 5.10..6.18)."""

from __future__ import annotations

ETH_HLEN = 14  # include/uapi/linux/if_ether.h
ETH_DATA_LEN = 1500  # include/uapi/linux/if_ether.h
VLAN_HLEN = 4  # include/linux/if_vlan.h
IP_HLEN = {4: 20, 6: 40}  # struct iphdr without options / struct ipv6hdr (include/uapi/linux/ip.h, ipv6.h)
IPV4_HLEN = IP_HLEN[4]
UDP_HLEN = 8  # struct udphdr (include/uapi/linux/udp.h)
TCP_HLEN_MIN = 20  # struct tcphdr without options (include/uapi/linux/tcp.h)
TCP_HLEN_MAX = 60  # doff is 4 bits of 32-bit words
TCP_HLEN_TS = 32  # 20-byte header + 12 bytes of timestamp option, as most TCP flows carry
IP_MAX_MTU = 65535  # include/net/ip.h; also the 16-bit iphdr tot_len bound
