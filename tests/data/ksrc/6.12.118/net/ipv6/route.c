/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv6/route.c lines 2935-2938 (__ip6_rt_update_pmtu) */
	if (mtu < IPV6_MIN_MTU)
		return;
	if (mtu >= dst6_mtu(dst))
		return;
