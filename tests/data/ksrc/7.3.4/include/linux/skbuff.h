/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) include/linux/skbuff.h lines 3305-3307 */
#ifndef NET_IP_ALIGN
#define NET_IP_ALIGN	2
#endif
