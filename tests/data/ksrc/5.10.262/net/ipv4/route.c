/* excerpt: Debian linux-source-5.10 (5.10.262-1) net/ipv4/route.c lines 128-128 (the minimum PMTU) */
static u32 ip_rt_min_pmtu __read_mostly		= 512 + 20 + 20;
/* excerpt: Debian linux-source-5.10 (5.10.262-1) net/ipv4/route.c lines 1053-1071 (__ip_rt_update_pmtu) */
static void __ip_rt_update_pmtu(struct rtable *rt, struct flowi4 *fl4, u32 mtu)
{
	struct dst_entry *dst = &rt->dst;
	struct net *net = dev_net(dst->dev);
	struct fib_result res;
	bool lock = false;
	u32 old_mtu;

	if (ip_mtu_locked(dst))
		return;

	old_mtu = ipv4_mtu(dst);
	if (old_mtu < mtu)
		return;

	if (mtu < ip_rt_min_pmtu) {
		lock = true;
		mtu = min(old_mtu, ip_rt_min_pmtu);
	}
