/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv4/route.c lines 111-111 (the minimum PMTU) */
#define DEFAULT_MIN_PMTU (512 + 20 + 20)
/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv4/route.c lines 1044-1064 (__ip_rt_update_pmtu) */
static void __ip_rt_update_pmtu(struct rtable *rt, struct flowi4 *fl4, u32 mtu)
{
	struct dst_entry *dst = &rt->dst;
	struct fib_result res;
	bool lock = false;
	struct net *net;
	u32 old_mtu;

	if (ip_mtu_locked(dst))
		return;

	old_mtu = ipv4_mtu(dst);
	if (old_mtu < mtu)
		return;

	rcu_read_lock();
	net = dst_dev_net_rcu(dst);
	if (mtu < net->ipv4.ip_rt_min_pmtu) {
		lock = true;
		mtu = min(old_mtu, net->ipv4.ip_rt_min_pmtu);
	}
