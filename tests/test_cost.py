"""Packet-rate model tests: each expectation follows from the kernel behaviour the rx and GRO models encode."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vnetlab import cost, rx

SEED = cost.seed_traffic()


@pytest.fixture(scope="module")
def cal():
    return cost.calibrate()


# ---------------------------------------------------------------- table


def test_table_has_every_operation_with_a_source():
    c = cost.load_costs()
    assert set(c.ns) == set(cost.OPS)
    for op in cost.OPS:
        assert c.sources[op].strip()
        assert c[op] >= 0
    # Priors are estimates and say so; nothing claims a measurement made here.
    assert all("not measured here" in c.sources[op] for op in cost.OPS)


def test_seed_measurement_is_the_commit_message():
    m = cost.seed_measurement()
    # patch mail of fb32856b16ad (seed 000_7063d0f53c889dd1): sockperf -m 1000, no port, 956864 / 1158465 rxpck/s
    assert (m.baseline_pps, m.patched_pps) == (956864.0, 1158465.0)
    assert (m.baseline_kernel, m.patched_kernel) == ("5.11", "5.13")
    assert m.traffic.payloads == (1000,) and m.traffic.destination == "no_socket"


# ---------------------------------------------------------------- paths come from the rx model


def test_seed_paths_and_counts_follow_page_to_skb():
    base = cost.op_counts(SEED, "5.11").counts
    new = cost.op_counts(SEED, "5.13").counts
    # drivers/net/virtio_net.c page_to_skb (5.11): napi_alloc_skb(128) kmalloc head, copy min(1042, 128), 1 frag,
    # headers already linear.
    assert base["napi_alloc_skb/kmalloc"] == 1 and base["build_skb"] == 0
    assert base["memcpy/byte"] == 128 and base["skb_add_rx_frag"] == 1 and base["__pskb_pull_tail"] == 0
    # head lines [64, 192) = 2 plus its shinfo line; freed by kfree + put_page of the frag.
    assert base["cache_line_miss"] == 3
    assert base["skb_free_head/kmalloc"] == 1 and base["put_page"] == 1
    # 5.13: tailroom 482 >= 320 -> build_skb, nothing copied, only the shinfo line in the buffer's tailroom.
    assert new["build_skb"] == 1 and new["napi_alloc_skb/kmalloc"] == 0
    assert new["memcpy/byte"] == 0 and new["skb_add_rx_frag"] == 0 and new["cache_line_miss"] == 1
    assert new["skb_free_head/page_frag"] == 1 and new["put_page"] == 0


def test_eth_hlen_copy_path_pulls_headers():
    # 5.12 page_to_skb copies ETH_HLEN: the IP+UDP headers sit in frag 0 and are pulled into the head.
    c = cost.op_counts(SEED, "5.12").counts
    assert c["__pskb_pull_tail"] == 1 and c["memcpy/byte"] == rx.ETH_HLEN + 28


@pytest.mark.parametrize("kernel, op", [("5.10", "napi_alloc_skb/napi_page_frag"), ("5.11", "napi_alloc_skb/kmalloc"),
                                        ("6.1", "napi_alloc_skb/napi_page_frag_1k"),
                                        ("6.18", "napi_alloc_skb/small_head_cache")])
def test_copy_path_head_kind_per_kernel(kernel, op):
    t = cost.Traffic("UDP 1472", (1472,))
    counts = cost.op_counts(t, kernel).counts
    assert counts[op] > 0
    assert cost.op_counts(t, kernel).head_kind == rx.napi_alloc_skb(128, kernel=kernel).kind


# ---------------------------------------------------------------- calibration


def test_one_param_fit_reproduces_baseline_exactly(cal):
    m = cal.measurement
    b, p = cal.predicted_pps(cal.one_param)
    assert b == pytest.approx(m.baseline_pps, rel=1e-12)
    assert cal.one_param[cost.STACK_OP] > 0
    assert cal.one_param_residual_pps == pytest.approx(p - m.patched_pps)
    # Only the stack cost moved.
    assert {op for op in cost.OPS if cal.one_param[op] != cal.prior[op]} <= {cost.STACK_OP}


def test_two_param_fit_reproduces_both(cal):
    b, p = cal.predicted_pps(cal.two_param)
    assert b == pytest.approx(cal.measurement.baseline_pps, rel=1e-12)
    assert p == pytest.approx(cal.measurement.patched_pps, rel=1e-12)
    assert cal.two_param[cost.STACK_OP] > 0 and cal.two_param[cost.MISS_OP] > 0
    assert {op for op in cost.OPS if cal.two_param[op] != cal.prior[op]} <= {cost.STACK_OP, cost.MISS_OP}


def test_calibration_report_states_fitted_values_and_residuals(cal):
    text = cal.report()
    assert "1-parameter" in text and "2-parameter" in text
    assert f"{cal.two_param[cost.MISS_OP]:.1f}" in text and f"{cal.one_param[cost.STACK_OP]:.1f}" in text
    assert "residual" in text


def test_fit_that_needs_a_negative_cost_is_refused():
    huge = {cost.MISS_OP: 1000.0}
    with pytest.raises(ValueError, match="stack/udp_no_socket"):
        cost.calibrate(huge)


# ---------------------------------------------------------------- GRO versus allocation and copy


def test_seed_gain_has_exactly_zero_gro_share(cal):
    b = cost.breakdown(SEED, "5.11", "5.13", cal.two_param)
    assert b.saved_ns["gro"] == 0.0 and b.saved_ns["stack"] == 0.0 and b.gro_saved_ns == 0.0
    assert b.alloc_copy_saved_ns == pytest.approx(b.total_saved_ns)
    for k in ("5.11", "5.13"):
        o = cost.op_counts(SEED, k)
        # udp4_gro_receive: no UDP_GRO socket, no GRO_UDP_FWD, no GRO_FRAGLIST -> each packet goes up alone.
        assert not o.aggregates and o.packets_per_gro_skb == 1.0 and o.sk_buffs == o.packets
    assert "does not apply here" in b.report()


def test_gain_breakdown_text(cal):
    text = cost.gain_breakdown(cal.two_param)
    assert "GRO (incl. stack amortisation): +0.0 ns (0.0% of the gain)" in text
    # docs/kernel/rx.md#a5: TCP at MTU 1500 has MSS 1448
    assert "UDP_GRO socket" in text and "TCP MSS 1448" in text


def test_udp_gro_socket_amortises_the_stack(cal):
    t = cost.prediction_cases()["udp1000_udp_gro"]
    for k in ("5.11", "5.13"):
        r = cost.rx_cost(t, k, cal.two_param)
        # net/ipv4/udp_offload.c UDP_GRO_CNT_MAX 64 and a NAPI budget of 64 (NAPI_POLL_WEIGHT): 64 packets per GRO skb.
        assert r.ops.aggregates and r.ops.packets_per_gro_skb == 64.0
        per_skb = cal.two_param[cost.STACK_OP] + cal.two_param["stack/udp_socket_extra"]
        assert r.group_ns("stack") == pytest.approx(per_skb / 64)
    # 5.11's kmalloc 128-byte heads go to frag_list for every packet (case 3); 5.13's build_skb heads are stolen.
    old, new = cost.op_counts(t, "5.11"), cost.op_counts(t, "5.13")
    assert old.sk_buffs == old.packets and old.counts["skb_gro_receive/frags"] == 0
    assert new.first_skb_packets == 18
    assert new.counts["skb_gro_receive/frag_list"] < old.counts["skb_gro_receive/frag_list"]
    assert cost.breakdown(t, "5.11", "5.13", cal.two_param).gro_saved_ns > 0


def test_tcp_stream_gro_case3_on_5_11():
    t = cost.prediction_cases()["tcp1448_gro"]
    old, new = cost.op_counts(t, "5.11"), cost.op_counts(t, "5.13")
    merges = (old.packets - old.gro_skbs) / old.packets
    assert old.counts["skb_gro_receive/frag_list"] == pytest.approx(merges)
    # MSS 1448 at MTU 1500: build_skb only in the hole-extended buffer, 1 in 21.
    assert new.path_counts["build_skb"] * 21 == new.packets


# ---------------------------------------------------------------- 1472-byte UDP


def test_1472_udp_gains_almost_nothing_from_build_skb(cal):
    t = cost.Traffic("UDP 1472", (1472,))
    a, b = cost.op_counts(t, "5.12"), cost.op_counts(t, "5.13")
    assert a.path_counts["build_skb"] == 0 and b.path_counts["build_skb"] * 21 == b.packets
    # The path changes exactly in the hole-extended buffers (2048 instead of 1536).
    bufs = np.asarray(rx.mergeable_buf_lens(21 * 4, kernel="5.13"))
    frames = np.full(bufs.size, rx.frame_len_for(1472))
    codes = rx.classify(frames, bufs, kernel="5.13")[0]
    # docs/kernel/rx.md#a5: only the hole-extended 2048 buffers (not the 1536 ones) leave 1514-byte frames >= 320
    # tailroom
    assert np.array_equal(codes == rx.PATH_CODES["build_skb"], bufs > 1536)
    gain_1472 = cost.rx_cost(t, "5.13", cal.two_param).pps / cost.rx_cost(t, "5.12", cal.two_param).pps - 1
    gain_1000 = cost.rx_cost(SEED, "5.13", cal.two_param).pps / cost.rx_cost(SEED, "5.12", cal.two_param).pps - 1
    assert 0 < gain_1472 < 0.01 and gain_1000 > 0.10


# ---------------------------------------------------------------- predictions


def test_predictions_cover_every_kernel_and_case(cal):
    res = cost.predictions(cal.two_param)
    assert set(res) == {(c, k) for c in cost.prediction_cases() for k in cost.KERNELS}
    assert all(r.pps > 0 and math.isfinite(r.pps) for r in res.values())
    # The seed figures come back on the seed kernels.
    # patch mail of fb32856b16ad (seed 000_7063d0f53c889dd1): the calibration reproduces 956864 / 1158465 rxpck/s
    assert res[("udp1000", "5.11")].pps == pytest.approx(956864.0)
    assert res[("udp1000", "5.13")].pps == pytest.approx(1158465.0)
    table = cost.predictions_table(cal.two_param)
    for k in cost.KERNELS:
        assert k in table
    assert "IMIX" in table


def test_imix_is_7_4_1_of_64_576_1500_ip_bytes():
    t = cost.imix()
    ip = [p + 28 for p in t.payloads]
    # source: data/rx_costs.toml [imix], the workbook's own IMIX choice (IP 64/576/1500 at 7:4:1)
    assert sorted(set(ip)) == [64, 576, 1500] and [ip.count(s) for s in (64, 576, 1500)] == [7, 4, 1]


# ---------------------------------------------------------------- monotonicity (hypothesis)

_CASES = list(cost.prediction_cases().values())


@given(op=st.sampled_from(cost.OPS), delta=st.floats(0, 500, allow_nan=False), case=st.sampled_from(_CASES),
       kernel=st.sampled_from(cost.KERNELS))
def test_raising_a_cost_never_speeds_up_a_path(op, delta, case, kernel):
    base = cost.load_costs()
    up = base.with_values({op: base[op] + delta})
    before, after = cost.rx_cost(case, kernel, base), cost.rx_cost(case, kernel, up)
    count = before.ops.counts[op]
    assert count >= 0
    assert after.ns_per_packet - before.ns_per_packet == pytest.approx(delta * count, abs=1e-6)
    assert after.pps <= before.pps * (1 + 1e-12)


@given(delta=st.floats(1, 500, allow_nan=False))
def test_a_cost_slows_only_the_path_that_uses_it(delta):
    base = cost.load_costs()
    for op, slower, same in (("build_skb", "5.13", "5.11"), ("napi_alloc_skb/kmalloc", "5.11", "5.13"),
                             ("skb_add_rx_frag", "5.11", "5.13")):
        up = base.with_values({op: base[op] + delta})
        assert cost.rx_cost(SEED, slower, up).ns_per_packet > cost.rx_cost(SEED, slower, base).ns_per_packet
        assert cost.rx_cost(SEED, same, up).ns_per_packet == cost.rx_cost(SEED, same, base).ns_per_packet


@given(frames=st.lists(st.integers(rx.ETH_HLEN + 28, 1514), min_size=1, max_size=40),
       kernel=st.sampled_from(cost.KERNELS))
def test_per_packet_counts_match_the_path(frames, kernel):
    bufs = np.resize(np.asarray(rx.mergeable_buf_lens(21, kernel=kernel)), len(frames))
    counts, codes = cost.packet_op_counts(frames, bufs, kernel=kernel, headers=28)
    build = codes == rx.PATH_CODES["build_skb"]
    assert all((v >= 0).all() for v in counts.values())
    assert np.array_equal(counts["build_skb"] == 1, build)
    assert (counts["memcpy/byte"][build] == 0).all() and (counts["cache_line_miss"][build] == 1).all()
    # Every packet allocates exactly one sk_buff and frees it once.
    alloc = counts["build_skb"] + sum(counts[f"napi_alloc_skb/{k}"] for k in
                                      ("napi_page_frag", "kmalloc", "napi_page_frag_1k", "small_head_cache"))
    assert (alloc == 1).all() and (counts["kfree_skbmem"] == 1).all()


@settings(max_examples=20)  # each example runs two 40k-packet streams
@given(payload=st.integers(87, 1162))
def test_build_skb_window_is_cheaper_than_the_copy_path(payload):
    # 1536-byte buffers: UDP payload 87..1162 takes build_skb on 5.13 (docs/kernel/rx.md#a5), the copy path on 5.12.
    t = cost.Traffic("u", (payload,))
    assert cost.op_counts(t, "5.13").path_counts["build_skb"] == cost.op_counts(t, "5.13").packets
    assert cost.rx_cost(t, "5.13").ns_per_packet < cost.rx_cost(t, "5.12").ns_per_packet


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("values, match", [
    ({"build_skb": -1.0}, r"costs\['build_skb'\]=-1.0: must be a finite number of ns in \[0, inf\)"),
    ({"build_skb": float("nan")}, "finite number of ns"),
    ({"build_skb": "40"}, "finite number of ns"),
    ({"alloc_skb": 3.0}, "unknown operation 'alloc_skb'; allowed: virtqueue_get_buf"),
])
def test_bad_costs(values, match):
    with pytest.raises(ValueError, match=match):
        cost.load_costs().with_values(values)
    with pytest.raises(ValueError, match=match):
        cost.rx_cost(SEED, "5.13", values)


def test_bad_traffic():
    with pytest.raises(ValueError, match="payloads must not be empty"):
        cost.Traffic("x", ())
    with pytest.raises(ValueError, match=r"weights must be a non-empty mapping"):
        cost.mix({})
    with pytest.raises(ValueError, match="positive sum"):
        cost.mix({100: 0})
    with pytest.raises(ValueError, match=r"weights\[100\]=-1: must be an int >= 0"):
        cost.mix({100: -1})
    with pytest.raises(ValueError, match=r"payloads\[0\]=1473: must be an int in 0..1472"):
        cost.Traffic("x", (1473,))
    with pytest.raises(ValueError, match=r"payloads\[0\]=1449: must be an int in 0..1448"):
        cost.Traffic("x", (1449,), l4="tcp", destination="socket")
    with pytest.raises(ValueError, match="destination='nowhere' is not one of"):
        cost.Traffic("x", (100,), destination="nowhere")
    with pytest.raises(ValueError, match="needs l4='udp'"):
        cost.Traffic("x", (100,), l4="tcp", destination="udp_gro_socket")
    with pytest.raises(ValueError, match="frame_lens must be a non-empty"):
        cost.packet_op_counts([], [], kernel="5.13", headers=28)


def test_bad_kernel_and_measurement():
    with pytest.raises(ValueError, match="kernel='4.19' is not a known kernel"):
        cost.rx_cost(SEED, "4.19")
    with pytest.raises(ValueError, match=r"baseline_pps=0: must be a packet rate > 0"):
        cost.Measurement(0, 1.0, "5.11", "5.13", SEED)
    with pytest.raises(ValueError, match="cases must not be empty"):
        cost.predictions(cost.load_costs(), cases={})


def test_mix_interleaves_deterministically():
    t = cost.mix({100: 2, 1000: 1})
    assert t.payloads == (100, 1000, 100)
    assert cost.mix({100: 4, 1000: 2}).payloads == t.payloads


def test_pattern_is_bounded_by_its_exact_period():
    # op_counts runs lcm(pattern, 672 carved buffers (docs/kernel/rx.md#a5), NAPI_POLL_WEIGHT 64) packets: 780 * 1344
    # <= MAX_PERIOD (1 << 20); the mix had a 100004-packet pattern, a 33.6M-packet period.
    assert cost.MAX_PATTERN == (1 << 20) // 1344 == 780
    with pytest.raises(ValueError, match=r"weights sum to 100004 after dividing by their gcd 1: .* at most 780"):
        cost.mix({100: 100003, 200: 1})
    with pytest.raises(ValueError, match=r"payloads has 781 packets; a traffic pattern holds at most 780"):
        cost.Traffic("long", (100,) * 781)
    with pytest.raises(ValueError, match=r"napi_budget=1000 with a 779-packet pattern needs a period of 65436000"):
        cost.op_counts(cost.Traffic("x", (100,) * 779), "5.13", napi_budget=1000)
    with pytest.raises(ValueError, match=r"weights key '100': must be an int"):
        cost.mix({"100": 1})
    with pytest.raises(ValueError, match=r"cost.rx_cost: gro_on must be a bool"):
        cost.rx_cost(SEED, "5.13", gro_on="no")


def test_merged_must_match_frames():
    with pytest.raises(ValueError, match=r"merged must have one bool per frame \(2\)"):
        cost.packet_op_counts([1042, 1042], [1536, 1536], kernel="5.13", headers=28, merged=[False])


def test_report_has_all_three_parts(cal):
    text = cost.report()
    assert text.startswith("Calibration to fb32856b16ad")
    assert "Predicted receive rate" in text and "What GRO itself buys" in text


def test_op_counts_honours_a_lab_kernels_rules():
    # data/lab kernel 6.1-no-build-skb: 6.1 with page_to_skb's build_skb branch reverted (vnetlab.labkernels), so
    # the seed's 1000-byte frames take the copy path there and build_skb on plain 6.1 (docs/kernel/rx.md#a5: 1536
    # buffers).
    from vnetlab.labkernels import model_kernel
    plain, reverted = cost.op_counts(SEED, "6.1"), cost.op_counts(SEED, model_kernel("6.1-no-build-skb"))
    assert plain.path_counts["build_skb"] > 0 and reverted.path_counts["build_skb"] == 0
    assert cost.rx_cost(SEED, model_kernel("6.1-no-build-skb")).ops is reverted
