/* excerpt: Debian linux-source-5.10 (5.10.262-1) net/ipv6/route.c lines 2740-2743 (__ip6_rt_update_pmtu) */
	if (mtu < IPV6_MIN_MTU)
		return;
	if (mtu >= dst_mtu(dst))
		return;
