"""The threshold map with XDP headroom sweeps the truesizes the driver carves, and no further (a
regression: rx.classify refuses truesize > rx.mergeable_truesize_max)."""

import pytest

from vnetlab import rx
from vnetlab.viz import thresholds


@pytest.mark.parametrize(("kernel", "top"), [
    # drivers/net/virtio_net.c get_mergeable_buf_len (v6.1): with XDP, len = PAGE_SIZE - room, room =
    # VIRTIO_XDP_HEADROOM 256 + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) 320 on x86_64 -> 3520, and the
    # ctx holds len (docs/kernel/rx.md#a5); from v6.3 the ctx holds len + room = PAGE_SIZE (rule mergeable_truesize).
    ("6.1", 4096 - 256 - 320),
    ("6.18", 4096),
])
def test_xdp_map_ends_at_the_largest_buffer_the_driver_carves(kernel, top):
    fig = thresholds.draw_threshold_map(kernel, "x86_64", headroom=rx.VIRTIO_XDP_HEADROOM)
    ax = fig.axes[0]
    assert ax.get_ylim()[1] == top
    assert max(ax.get_yticks()) == top


def test_without_xdp_the_map_keeps_the_asked_axis():
    fig = thresholds.draw_threshold_map("6.1", "x86_64", max_truesize=4096)
    assert fig.axes[0].get_ylim()[1] == 4096
