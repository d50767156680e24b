/* excerpt: Debian linux-source-5.10 (5.10.262-1) include/linux/udp.h lines 96-96 (#define UDP_MAX_SEGMENTS) */
#define UDP_MAX_SEGMENTS	(1 << 6UL)
