"""lab/parse.py, which writes the data files CI trusts, on the lab's console output.

The console excerpt tests/data/lab_console_6.1_mergeable.log is rebuilt from the run of data/lab/6.1/mergeable.json
(Debian 6.1.192-3; its header says which lines are verbatim and which are re-printed in their program's format);
each test parses it and demands what that data file holds. Expected values are the data file's, unless a comment
names another source.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import parse
from lab.experiments import CONFIGS
from vnetlab import ethtool, labdata

HERE = Path(__file__).parent
CONSOLE = (HERE / "data" / "lab_console_6.1_mergeable.log").read_text()
DOC = json.loads((HERE.parent / "data" / "lab" / "6.1" / "mergeable.json").read_text())


@pytest.fixture(scope="module")
def parsed():
    return parse.parse_console(CONSOLE, CONFIGS["mergeable"])


def test_blocks_split_the_console_and_refuse_nesting():
    kinds = [(kind, labels) for kind, labels, _ in parse.blocks(CONSOLE)]
    assert kinds[:3] == [("kernel", []), ("virtio_features", []), ("kprobe_events", [])]
    assert ("ethtool", ["vlan_macvlan.0", "eth0"]) in kinds and ("trace", ["gso", "eth0.10"]) in kinds
    # \r\n from the serial console is dropped; lines outside blocks and an unterminated last block are not kept
    assert parse.blocks("noise\r\n@@BEGIN a x\r\none\r\n@@END a\r\n@@BEGIN b\r\ncut off") == [("a", ["x"], ["one"])]
    with pytest.raises(ValueError, match="line 3 opens '@@BEGIN b' inside the block opened on line 1"):
        parse.blocks("@@BEGIN a\none\n@@BEGIN b\n@@END b\n")


def test_kernel_virtio_bits_and_kprobes_are_the_runs(parsed):
    assert parsed["uname_r"] == DOC["kernel"]["uname_r"] == "6.1.0-57-amd64"
    assert parsed["proc_version"] == DOC["kernel"]["proc_version"]
    assert parsed["virtio_features"] == DOC["guest"]["virtio_features"]
    assert parsed["kprobe_events"] == DOC["guest"]["kprobe_events"]
    assert parsed["done"] is True


def test_virtio_feature_bits():
    # drivers/virtio/virtio.c features_show: one character per feature bit, bit 0 first;
    # include/uapi/linux/virtio_net.h: VIRTIO_NET_F_CSUM 0, GUEST_CSUM 1, MRG_RXBUF 15
    bits = parse.virtio_feature_bits(DOC["guest"]["virtio_features"]["eth0"]["bits"])
    assert {0, 1, 15} <= set(bits)
    assert [parse.VIRTIO_NET_F[b] for b in bits[:3]] == ["CSUM", "GUEST_CSUM", "CTRL_GUEST_OFFLOADS"]
    for bad in ("", "10x1", "1 0"):
        with pytest.raises(ValueError, match="not a string of 0 and 1"):
            parse.virtio_feature_bits(bad)


def test_trace_events_read_ftrace_lines():
    lines = [line for kind, labels, block in parse.blocks(CONSOLE) if labels == ["rx"] and kind == "trace"
             for line in block]
    events = parse.trace_events(lines + ["CPU:1 [LOST 3 EVENTS]"])  # kernel/trace/trace.c: not an event line
    assert [e["event"] for e in events[:5]] == ["p2s", "napi_alloc", "p2s_ret", "gro", "napi_gro_receive_entry"]
    assert events[0] == {"event": "p2s", "ts": 12.000012, "offset": 0, "len": 72, "truesize": 1536, "hdr_valid": 1,
                         "metasize": 0, "headroom": 0}
    assert events[3]["dev"] == "eth1"  # a kprobe string fetch arg prints quoted
    # include/uapi/linux/if_ether.h ETH_P_IP 0x0800, the protocol in the CONSOLE excerpt's trace line
    assert events[4]["protocol"] == 0x0800 and events[4]["skbaddr"] == "00000000f3c2a1b7"  # hex, or kept as text


def test_rx_packets_are_the_data_files(parsed):
    # packets 0, 3 and 26: a whole copy, a build_skb and an ETH_HLEN copy with one frag (docs/kernel/rx.md#a5)
    assert parsed["rx"] == [DOC["rx"]["packets"][i] for i in (0, 3, 26)]
    assert [p["path"] for p in parsed["rx"]] == ["copy", "build_skb", "copy+frag"]
    assert parsed["rx_sender"] == DOC["rx"]["sender"] and parsed["receiver_rx"] == DOC["rx"]["receiver"]


def test_rx_packets_skip_skbs_of_other_devices():
    events = [{"event": "gro", "dev": "eth0", "len": 1, "data_len": 0, "truesize": 1, "head_frag": 1},
              {"event": "napi_gro_receive_entry", "nr_frags": 0}]
    assert parse.rx_packets(events) == []


def test_ethtool_k_block_is_stored_as_printed_and_reads_back_as_the_file(parsed):
    rec = parsed["features"][0]
    assert (rec["phase"], rec["step"], rec["dev"]) == ("vlan_macvlan", 0, "eth0")
    stored = next(r for r in DOC["features"]["ethtool_k"]
                  if (r["phase"], r["step"], r["dev"]) == ("vlan_macvlan", 0, "eth0"))
    assert list(rec["ethtool_k"]) == list(stored["ethtool_k"])  # every line, in order, summary lines included
    assert rec["ethtool_k"]["rx-checksumming"] == "on [fixed]"  # as ethtool printed it, no longer "on fixed"
    # the stored file kept (on, fixed) only: the requests the new form adds are not compared
    assert {n: tuple(labdata.stored_state(v)) for n, v in rec["ethtool_k"].items()} == \
        {n: tuple(labdata.stored_state(v)) for n, v in stored["ethtool_k"].items()}
    assert labdata.requests_recorded({"features": {"ethtool_k": [rec]}})
    assert not labdata.requests_recorded(DOC)  # the shipped file predates it
    # labdata reads the new form like the old: one FeatureState per kernel feature string
    doc = {"kernel": DOC["kernel"], "features": {"ethtool_k": [rec]}}
    new, old = labdata.ethtool_k(doc, "vlan_macvlan", 0, "eth0"), labdata.ethtool_k(DOC, "vlan_macvlan", 0, "eth0")
    assert {n: (s.on, s.fixed) for n, s in new.items()} == {n: (s.on, s.fixed) for n, s in old.items()}


def test_parse_ethtool_k_keeps_requests_and_refuses_other_text():
    # tests/data/ethtool_k_veth_sg_off_6.18.txt is real `ethtool -k` output (ethtool 6.1, kernel 6.18)
    text = (HERE / "data" / "ethtool_k_veth_sg_off_6.18.txt").read_text().splitlines()
    got = parse.parse_ethtool_k(text)
    # lines 12-13 of the sample: the summary "tcp-segmentation-offload: on", its member "off [requested on]"
    assert got["tx-tcp-segmentation"] == "off [requested on]" and got["tcp-segmentation-offload"] == "on"
    assert ethtool.FeatureState.parse(got["tx-tcp-segmentation"]).wanted is True
    with pytest.raises(ValueError, match="line 2"):
        parse.parse_ethtool_k(["Features for eth0:", "Cannot get device feature names: No such device"])


def test_ethtool_K_step(parsed):  # noqa: N802 (ethtool's own spelling)
    step = next(s for s in DOC["features"]["ethtool_K"] if (s["phase"], s["step"]) == ("vlan_macvlan", 3))
    assert parsed["ethtool_K"] == [step]
    assert step["output"][1] == "tx-checksum-ipv4: off [requested on]"  # ethtool -K's "Actual changes:"


def test_gso_case_is_the_data_files(parsed):
    (case,) = parsed["gso"]
    want = next(c for c in DOC["gso"]["cases"] if c["route_dev"] == "eth0.10")
    assert case["route_dev"] == "eth0.10" and case["sender"] == want["sender"]
    # the file predates the rx_dropped counter: compare the counters it has
    assert {dev: {k: c[k] for k in want["counters_delta"][dev]} for dev, c in case["counters_delta"].items()} == \
        want["counters_delta"]
    assert case["start_xmit"] == want["start_xmit"][:6]
    assert case["skb_gso_segment"] == want["skb_gso_segment"][:1]
    # Debian 6.1: eth0.10 hands the UDP_SEGMENT skb to eth0, which segments it (lab/README.md)
    assert case["segmented_at"] == want["segmented_at"] == ["eth0"]


def test_netdev_counters_and_deltas():
    # net/core/net-procfs.c dev_seq_printf_stats (6.1): 8 receive then 8 transmit counters per device
    lines = ["--- a", "Inter-|   Receive", " face |bytes    packets errs drop",
             "  eth0:  100 2 0 1 0 0 0 0  300 4 0 5 0 0 0 0", "    lo:  9 9 0 0 0 0 0 0 9 9 0 0 0 0 0 0",
             "--- b", "  eth1:  7 1 0 0 0 0 0 0  0 0 0 0 0 0 0 0"]
    before = parse.parse_netdev(lines)
    assert before["a"]["eth0"] == {"rx_packets": 2, "tx_packets": 4, "rx_bytes": 100, "tx_bytes": 300,
                                   "rx_dropped": 1, "tx_dropped": 5}
    after = parse.parse_netdev([line.replace("  7 1 ", " 17 2 ").replace(" 9 9 0", " 10 10 0") for line in lines])
    assert parse.netdev_delta(before, after) == {"b:eth1": {"rx_packets": 1, "tx_packets": 0, "rx_bytes": 10,
                                                            "tx_bytes": 0, "rx_dropped": 0, "tx_dropped": 0}}
    with pytest.raises(ValueError, match="eth0 has 15 counters, not 16"):
        parse.parse_netdev(["  eth0:  1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"])


def test_snmp_pairs():
    # net/ipv4/proc.c snmp_seq_show: a header line and a value line per protocol
    lines = ["Udp: InDatagrams NoPorts InErrors", "Udp: 70 0 0", "Ip: Forwarding", "Ip: 1"]
    assert parse.parse_snmp(lines) == {"Udp": {"InDatagrams": 70, "NoPorts": 0, "InErrors": 0}, "Ip": {"Forwarding": 1}}
    with pytest.raises(ValueError, match="not the value line"):
        parse.parse_snmp(["Udp: InDatagrams NoPorts", "Ip: 70 0"])
    with pytest.raises(ValueError, match="not header/value pairs"):
        parse.parse_snmp(["Udp: InDatagrams"])


def test_recvlog_and_qdisc():
    # lab/guest/udptool.c recvlog's summary lines; tc -s qdisc's "Sent ... pkt (dropped ...)" (iproute2 tc/tc_util.c)
    got = parse.parse_recvlog(["udptool received=3 intact=2 bytes=4416", "source 198.18.1.1:40000 2",
                               "intact_seq 0 44"])
    assert got == {"sources": {"198.18.1.1:40000": 2}, "received": 3, "intact": 2, "bytes": 4416,
                   "intact_seq": [0, 44]}
    with pytest.raises(ValueError):
        parse.parse_recvlog(["source 198.18.1.1:40000"])
    q = parse.parse_qdisc(["qdisc fq_codel 0: root refcnt 2 limit 10240p flows 1024",
                           " Sent 2594432 bytes 1760 pkt (dropped 0, overlimits 0 requeues 0)"])
    assert (q["kind"], q["sent_packets"], q["dropped"]) == ("fq_codel", 1760, 0)


def test_router_case_and_rate_runs():
    evs = [{"event": "netif_receive_skb", "dev": "eth1", "len": 64812},
           {"event": "gso", "dev": "eth3.10", "len": 64812, "tx_path": 1},
           {"event": "gso", "dev": "vl1.10", "len": 64812, "tx_path": 0}]
    case = parse.router_case("router.vlan_veth", evs, ["udptool sent=1760 failed=0"], ["udptool received=1760"],
                             [], {}, {})
    # source: the udptool lines passed just above (this test's input), read back by lab/parse.py
    assert (case["case"], case["sent"], case["send_failed"], case["receiver_ns"]) == ("vlan_veth", 1760, 0, "rcv2")
    # __skb_gso_segment's tx_path 0 is the receive side (udp_rcv_segment), marked "(rx)"
    assert case["gro_skb_lens"] == [64812] and case["segmented_at"] == ["eth3.10", "vl1.10 (rx)"]
    sender = {"rate1": ["udptool sent=100000 seconds=10.0", "udptool sent=50000 seconds=9.5"]}
    netdev = {"rate1.before": {"b": {"eth1": dict.fromkeys(("rx_packets", "tx_packets", "rx_bytes", "tx_bytes",
                                                                "rx_dropped", "tx_dropped"), 0)}},
              "rate1.after": {"b": {"eth1": {"rx_packets": 120000, "tx_packets": 0, "rx_bytes": 0, "tx_bytes": 0,
                                             "rx_dropped": 0, "tx_dropped": 0}}}}
    plugin = "insncount start vcpu=0 counts=0,0,0\ninsncount stop vcpu=0 counts=5,1200000,7\n"
    # source: the input above, read by lab/parse.py: sent 100000 + 50000, rx_pps 120000 / 10.0 s, vcpu1 1200000 / 120000
    (run,) = parse.rate_runs(sender, netdev, {}, plugin)
    assert (run["senders"], run["sent"], run["seconds"], run["rx_pps"]) == (2, 150000, 10.0, 12000.0)
    assert run["instructions_per_vcpu"] == [5, 1200000, 7] and run["instructions_per_rx_packet_vcpu1"] == 10.0


def test_dumps_is_json_with_one_line_per_item():
    obj = {"a": {"b": [1, 2], "c": {"d": {"e": [3]}}}}
    text = parse.dumps(obj)
    assert json.loads(text) == obj
    assert '   "d": {"e": [3]}' in text  # below three levels an item stays on one line
