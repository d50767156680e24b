/* excerpt: Debian linux-source-6.1 (6.1.192-3) net/ipv6/route.c lines 2914-2917 (__ip6_rt_update_pmtu) */
	if (mtu < IPV6_MIN_MTU)
		return;
	if (mtu >= dst_mtu(dst))
		return;
