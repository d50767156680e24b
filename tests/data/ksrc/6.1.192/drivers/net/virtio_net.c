/* excerpt: Debian linux-source-6.1 (6.1.192-3) drivers/net/virtio_net.c lines 292-300 (struct padded_vnet_hdr) */
struct padded_vnet_hdr {
	struct virtio_net_hdr_v1_hash hdr;
	/*
	 * hdr is in a separate sg buffer, and data sg buffer shares same page
	 * with this header sg. This padding makes next sg 16 byte aligned
	 * after the header.
	 */
	char padding[12];
};

/* excerpt: Debian linux-source-6.1 (6.1.192-3) drivers/net/virtio_net.c lines 940-975 (receive_big) */
static struct sk_buff *receive_big(struct net_device *dev,
				   struct virtnet_info *vi,
				   struct receive_queue *rq,
				   void *buf,
				   unsigned int len,
				   struct virtnet_rq_stats *stats)
{
	struct page *page = buf;
	unsigned long max_len;
	struct sk_buff *skb;

	max_len = (vi->big_packets_num_skbfrags + 1) * PAGE_SIZE -
		  sizeof(struct padded_vnet_hdr) + vi->hdr_len;

	/* Make sure that len does not exceed the size allocated in
	 * add_recvbuf_big.
	 */
	if (unlikely(len > max_len)) {
		pr_debug("%s: rx error: len %u exceeds allocated size %lu\n",
			 dev->name, len, max_len);
		goto err;
	}

	skb = page_to_skb(vi, rq, page, 0, len, PAGE_SIZE, true, 0, 0);

	stats->bytes += len - vi->hdr_len;
	if (unlikely(!skb))
		goto err;

	return skb;

err:
	stats->drops++;
	give_pages(rq, page);
	return NULL;
}
