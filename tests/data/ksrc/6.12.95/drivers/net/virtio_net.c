/* excerpt: Debian linux-source-6.12 (6.12.95-1~bpo12+1) drivers/net/virtio_net.c lines 475-483 (struct padded_vnet_hdr) */
struct padded_vnet_hdr {
	struct virtio_net_hdr_v1_hash hdr;
	/*
	 * hdr is in a separate sg buffer, and data sg buffer shares same page
	 * with this header sg. This padding makes next sg 16 byte aligned
	 * after the header.
	 */
	char padding[12];
};

/* excerpt: Debian linux-source-6.12 (6.12.95-1~bpo12+1) drivers/net/virtio_net.c lines 1890-1921 (receive_big) */
static struct sk_buff *receive_big(struct net_device *dev,
				   struct virtnet_info *vi,
				   struct receive_queue *rq,
				   void *buf,
				   unsigned int len,
				   struct virtnet_rq_stats *stats)
{
	struct page *page = buf;
	struct sk_buff *skb;

	/* Make sure that len does not exceed the size allocated in
	 * add_recvbuf_big.
	 */
	if (unlikely(len > (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE)) {
		pr_debug("%s: rx error: len %u exceeds allocated size %lu\n",
			 dev->name, len,
			 (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE);
		goto err;
	}

	skb = page_to_skb(vi, rq, page, 0, len, PAGE_SIZE, 0);
	u64_stats_add(&stats->bytes, len - vi->hdr_len);
	if (unlikely(!skb))
		goto err;

	return skb;

err:
	u64_stats_inc(&stats->drops);
	give_pages(rq, page);
	return NULL;
}
