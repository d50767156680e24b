/* excerpt: Debian linux-source-6.1 (6.1.192-3) net/ipv6/ip6_output.c lines 896-897 (ip6_fragment: no fragmenting without ignore_df) */
	if (unlikely(!skb->ignore_df && skb->len > mtu))
		goto fail_toobig;
/* excerpt: Debian linux-source-6.1 (6.1.192-3) net/ipv6/ip6_output.c lines 1044-1052 (ip6_fragment: fail_toobig) */
fail_toobig:
	if (skb->sk && dst_allfrag(skb_dst(skb)))
		sk_gso_disable(skb->sk);

	icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
	err = -EMSGSIZE;

fail:
	IP6_INC_STATS(net, ip6_dst_idev(skb_dst(skb)),
