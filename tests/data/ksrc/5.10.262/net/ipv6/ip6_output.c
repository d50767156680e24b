/* excerpt: Debian linux-source-5.10 (5.10.262-1) net/ipv6/ip6_output.c lines 848-849 (ip6_fragment: no fragmenting without ignore_df) */
	if (unlikely(!skb->ignore_df && skb->len > mtu))
		goto fail_toobig;
/* excerpt: Debian linux-source-5.10 (5.10.262-1) net/ipv6/ip6_output.c lines 996-1004 (ip6_fragment: fail_toobig) */
fail_toobig:
	if (skb->sk && dst_allfrag(skb_dst(skb)))
		sk_nocaps_add(skb->sk, NETIF_F_GSO_MASK);

	icmpv6_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
	err = -EMSGSIZE;

fail:
	IP6_INC_STATS(net, ip6_dst_idev(skb_dst(skb)),
