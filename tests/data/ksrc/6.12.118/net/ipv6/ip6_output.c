/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv6/ip6_output.c lines 903-904 (ip6_fragment: no fragmenting without ignore_df) */
	if (unlikely(!skb->ignore_df && skb->len > mtu))
		goto fail_toobig;
/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv6/ip6_output.c lines 1053-1061 (ip6_fragment: fail_toobig) */
fail_toobig:
	icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
	err = -EMSGSIZE;

fail:
	IP6_INC_STATS(net, ip6_dst_idev(skb_dst(skb)),
		      IPSTATS_MIB_FRAGFAILS);
	kfree_skb(skb);
	return err;
