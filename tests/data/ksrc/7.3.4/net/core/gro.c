/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) net/core/gro.c lines 234-268 (skb_gro_receive_list) */
int skb_gro_receive_list(struct sk_buff *p, struct sk_buff *skb)
{
	/* make sure to check flush flag and to not merge */
	if (unlikely(p->len + skb->len >= 65536 ||
		     NAPI_GRO_CB(skb)->flush))
		return -E2BIG;

	if (!pskb_may_pull(skb, skb_gro_offset(skb))) {
		NAPI_GRO_CB(skb)->flush = 1;
		return -ENOMEM;
	}

	if (NAPI_GRO_CB(p)->last == p)
		skb_shinfo(p)->frag_list = skb;
	else
		NAPI_GRO_CB(p)->last->next = skb;

	skb_pull(skb, skb_gro_offset(skb));

	NAPI_GRO_CB(p)->last = skb;
	NAPI_GRO_CB(p)->count++;
	p->data_len += skb->len;

	/* sk ownership - if any - completely transferred to the aggregated packet */
	skb->destructor = NULL;
	skb->sk = NULL;
	p->truesize += skb->truesize;
	p->len += skb->len;

	skb_shinfo(p)->flags |= skb_shinfo(skb)->flags & SKBFL_SHARED_FRAG;

	NAPI_GRO_CB(skb)->same_flow = 1;

	return 0;
}
