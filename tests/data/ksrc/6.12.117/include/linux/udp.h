/* excerpt: Debian linux-source-6.12 (6.12.117-1~deb12u1) include/linux/udp.h lines 111-111 (#define UDP_MAX_SEGMENTS) */
#define UDP_MAX_SEGMENTS	(1 << 7UL)
