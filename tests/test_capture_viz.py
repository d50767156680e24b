"""vnetlab.viz.captured: real skbs beside the model's to scale, and the BTF layout in the receive-buffer figure.

The sizes drawn are checked against the recorded capture (data/live/captures/veth-xdp.perf.txt, perf 6.1 on
6.18.44) and the model's own numbers; the layout drawing against SKB_DATA_ALIGN of the BTF size (include/linux/
skbuff.h), with a kernel whose CONFIG_MAX_SKB_FRAGS is 45 (net/Kconfig's maximum) so that it differs.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from vnetlab import live  # noqa: E402
from vnetlab.live import btf  # noqa: E402
from vnetlab.viz import captured  # noqa: E402
from vnetlab.viz.style import FAIL_COLOR, PASS_COLOR, regions  # noqa: E402


def _verdicts(fig) -> list[str]:  # noqa: ANN001
    return [t.get_text() for t in fig.texts if (t.get_gid() or "").startswith("verdict:")]


def test_each_captured_skb_is_drawn_to_scale_beside_the_models():
    c = live.recorded_capture("perf", "veth", "xdp")
    fig = captured.draw_capture(c, label=c.label)
    drawn = regions(fig)
    rows = captured.capture_rows(c)
    assert [n for _, n in rows] == [4, 4]  # four equal segments each way (segs=4 in the recording)
    for i, (r, _n) in enumerate(rows):
        s, m = r.captured, r.model
        assert drawn[f"kernel:{i}:linear"].get_width() == s.len - s.data_len
        if s.data_len:
            assert drawn[f"kernel:{i}:data_len"].get_width() == s.data_len
        if s.truesize is not None:
            assert drawn[f"kernel:{i}:truesize"].get_width() == s.truesize
            model_true = sum(v.get_width() for k, v in drawn.items() if k.startswith(f"model:{i}:truesize"))
            assert model_true == m["truesize"]
        assert drawn[f"model:{i}:linear"].get_width() == m["len"] - m["data_len"]
    verdicts = _verdicts(fig)
    assert verdicts[0] == "agree"
    assert verdicts[1].startswith("DIFFER") and "truesize: kernel 2304" in verdicts[1]  # source: veth-xdp.perf.txt
    colours = [t.get_color() for t in fig.texts if (t.get_gid() or "").startswith("verdict:")]
    assert colours == [PASS_COLOR, FAIL_COLOR]
    assert c.label in fig._suptitle.get_text()


def test_an_skb_without_a_model_says_so():
    """A tap device's skbs (tun_get_user): the model has no tun driver, and the figure says so."""
    c = live.Capture([live.CapturedSkb("netif_receive_skb_entry", "vtp", 1028, 0, 2304, 0, 0, None, 0,
                                       source="tracefs")])
    c.experiment, c.config, c.kernel, c.profile, c.roles, c.model = "tap", "plain", "test", "6.18", {"tap": "vtp"}, {}
    fig = captured.draw_capture(c)
    assert "no model of this skb" in _verdicts(fig)[-1]
    assert regions(fig)["kernel:0:truesize"].get_width() == 2304  # source: the CapturedSkb above


def test_btf_layout_drawn_with_the_kernels_sizes():
    """A kernel built with CONFIG_MAX_SKB_FRAGS=45: skb_shared_info is 48 + 45 * 16 = 768 bytes (the 6.18 layout,
    pahole), so build_skb needs 768 bytes of tailroom; the figure draws that size and says it differs."""
    layout = btf.BtfLayout(kernel="test", path="test", sizeof_sk_buff=224, sizeof_skb_shared_info=48 + 45 * 16,
                           max_skb_frags=45, sizeof_skb_frag=16, pointer_bytes=8, napi_page_small=False)
    fig = captured.draw_btf_layout(layout, profile="6.18")
    assert regions(fig)["skb_shared_info"].get_width() == 48 + 45 * 16
    said = next(t for t in fig.texts if t.get_gid() == "btf:said")
    assert "says sizeof(struct skb_shared_info) 768" in said.get_text()  # source: 48 + 45 * 16 above
    assert said.get_color() == FAIL_COLOR
    same = btf.BtfLayout(kernel="test", path="test", sizeof_sk_buff=224, sizeof_skb_shared_info=48 + 17 * 16,
                         max_skb_frags=17, sizeof_skb_frag=16, pointer_bytes=8, napi_page_small=False)
    fig = captured.draw_btf_layout(same, profile="6.18")
    assert next(t for t in fig.texts if t.get_gid() == "btf:said").get_color() == PASS_COLOR
