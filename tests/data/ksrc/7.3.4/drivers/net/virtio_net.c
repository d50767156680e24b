/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) drivers/net/virtio_net.c lines 482-490 (struct padded_vnet_hdr) */
struct padded_vnet_hdr {
	struct virtio_net_hdr_v1_hash hdr;
	/*
	 * hdr is in a separate sg buffer, and data sg buffer shares same page
	 * with this header sg. This padding makes next sg 16 byte aligned
	 * after the header.
	 */
	char padding[12];
};

/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) drivers/net/virtio_net.c lines 1988-2022 (receive_big) */
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

/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) drivers/net/virtio_net.c lines 2709-2743 (add_recvbuf_mergeable) */
static int add_recvbuf_mergeable(struct virtnet_info *vi,
				 struct receive_queue *rq, gfp_t gfp)
{
	unsigned int headroom = virtnet_get_headroom(vi);
	unsigned int tailroom = headroom ? sizeof(struct skb_shared_info) : 0;
	unsigned int room = SKB_DATA_ALIGN(headroom + tailroom);
	unsigned int len, alloc_len;
	char *buf;
	void *ctx;
	int err;

	/* Extra tailroom is needed to satisfy XDP's assumption. This
	 * means rx frags coalescing won't work, but consider we've
	 * disabled GSO for XDP, it won't be a big issue.
	 */
	len = get_mergeable_buf_len(rq, &rq->mrg_avg_pkt_len, room);

	alloc_len = len + room;
	buf = page_pool_alloc_va(rq->page_pool, &alloc_len, gfp);
	if (unlikely(!buf))
		return -ENOMEM;

	buf += headroom; /* advance address leaving hole at front of pkt */

	if (!headroom)
		len = alloc_len - room;

	ctx = mergeable_len_to_ctx(len + room, headroom);

	err = virtnet_rq_submit(rq, buf, len, ctx, gfp);

	if (err < 0)
		page_pool_put_page(rq->page_pool, virt_to_head_page(buf), -1, false);
	return err;
}

/* excerpt: Debian linux-source-7.3 (7.3.4-1~bpo13+1) drivers/net/virtio_net.c lines 3106-3166 (virtnet_create_page_pools) */
static int virtnet_create_page_pools(struct virtnet_info *vi)
{
	int i, err;

	if (vi->big_packets && !vi->mergeable_rx_bufs)
		return 0;

	for (i = 0; i < vi->max_queue_pairs; i++) {
		struct receive_queue *rq = &vi->rq[i];
		struct page_pool_params pp_params = { 0 };
		struct device *dma_dev;

		if (rq->page_pool)
			continue;

		if (rq->xsk_pool)
			continue;

		pp_params.order = 0;
		pp_params.pool_size = virtqueue_get_vring_size(rq->vq);
		pp_params.nid = dev_to_node(vi->vdev->dev.parent);
		pp_params.netdev = vi->dev;
		pp_params.napi = &rq->napi;

		/* Use page_pool DMA mapping if backend supports DMA API.
		 * DMA_SYNC_DEV is needed for non-coherent archs on recycle.
		 */
		dma_dev = virtqueue_dma_dev(rq->vq);
		if (dma_dev) {
			pp_params.dev = dma_dev;
			pp_params.flags = PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV;
			pp_params.dma_dir = DMA_FROM_DEVICE;
			pp_params.max_len = PAGE_SIZE;
			pp_params.offset = 0;
			rq->use_page_pool_dma = true;
		} else {
			/* No DMA API (e.g., VDUSE): page_pool for allocation only. */
			pp_params.flags = 0;
			rq->use_page_pool_dma = false;
		}

		rq->page_pool = page_pool_create(&pp_params);
		if (IS_ERR(rq->page_pool)) {
			err = PTR_ERR(rq->page_pool);
			rq->page_pool = NULL;
			goto err_cleanup;
		}
	}
	return 0;

err_cleanup:
	while (--i >= 0) {
		struct receive_queue *rq = &vi->rq[i];

		if (rq->page_pool) {
			page_pool_destroy(rq->page_pool);
			rq->page_pool = NULL;
		}
	}
	return err;
}
