/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) arch/x86/include/asm/processor.h line 46 */
#define NET_IP_ALIGN	0
