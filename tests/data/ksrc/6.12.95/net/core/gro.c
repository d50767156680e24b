/* excerpt: Debian linux-source-6.12 (6.12.95-1~bpo12+1) net/core/gro.c lines 231-263 (skb_gro_receive_list) */
int skb_gro_receive_list(struct sk_buff *p, struct sk_buff *skb)
{
	if (unlikely(p->len + skb->len >= 65536))
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
