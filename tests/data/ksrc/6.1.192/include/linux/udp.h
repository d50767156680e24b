/* excerpt: Debian linux-source-6.1 (6.1.192-3) include/linux/udp.h lines 105-105 (#define UDP_MAX_SEGMENTS) */
#define UDP_MAX_SEGMENTS	(1 << 7UL)
