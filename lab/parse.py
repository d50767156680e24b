"""Parsing the guest's serial console (``@@BEGIN kind labels`` ... ``@@END`` blocks) into the data files."""

from __future__ import annotations

import json
import re

from lab.experiments import Config
from vnetlab import ethtool


def blocks(console: str) -> list[tuple[str, list[str], list[str]]]:
    """(kind, labels, lines) for every @@BEGIN kind labels... / @@END block of the console log. A block left open
    at the end (a boot that timed out) is dropped; a @@BEGIN inside an open block (lab/guest/init never nests
    them) raises ValueError naming both lines, as the first block's data would be lost."""
    out = []
    cur = None
    opened = 0
    for number, raw in enumerate(console.splitlines(), 1):
        line = raw.rstrip("\r")
        if line.startswith("@@BEGIN "):
            if cur is not None:
                raise ValueError(f"console: line {number} opens {line!r} inside the block opened on line {opened}")
            words = line.split()[1:]
            cur, opened = (words[0], words[1:], []), number
        elif line.startswith("@@END"):
            if cur:
                out.append(cur)
            cur = None
        elif cur is not None:
            cur[2].append(line)
    return out


_EV = re.compile(r"^\s*(?P<task>.+?)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>[\d.]+):\s+(?P<event>[\w/]+):\s+(?P<rest>.*)$")


def trace_events(lines: list[str]) -> list[dict]:
    evs = []
    for line in lines:
        m = _EV.match(line)
        if not m:
            continue
        rest = m.group("rest")
        name = m.group("event")
        fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', rest))
        for k, v in list(fields.items()):
            v = v.strip('"')
            try:
                fields[k] = int(v, 0)
            except ValueError:
                fields[k] = v
        evs.append({"event": name, "ts": float(m.group("ts")), **fields})
    return evs


def rx_packets(events: list[dict]) -> list[dict]:
    """One record per skb handed to napi_gro_receive on eth1: how the driver built it."""
    pkts: list[dict] = []
    cur: dict = {}
    for ev in events:
        e = ev["event"]
        if e == "p2s":
            # 5.10's page_to_skb has no headroom argument (0 without XDP); 6.12's has no hdr_valid/metasize
            cur = {"page_to_skb": {k: ev.get(k, 0 if k == "headroom" else None)
                                   for k in ("offset", "len", "truesize", "headroom", "hdr_valid", "metasize")}}
        elif e == "build_skb":
            cur.setdefault("alloc", "build_skb")
            cur["build_skb_frag_size"] = ev["frag_size"]
        elif e == "napi_alloc":
            cur.setdefault("alloc", "napi_alloc_skb")
            cur["napi_alloc_len"] = ev["len"]
        elif e == "p2s_ret":
            cur["page_to_skb_ret"] = {k: ev[k] for k in ("len", "data_len", "truesize", "head_frag")}
        elif e == "add_frag":
            cur.setdefault("add_rx_frag", []).append({k: ev[k] for k in ("i", "size", "truesize")})
        elif e == "gro":
            cur["gro"] = {k: ev[k] for k in ("dev", "len", "data_len", "truesize", "head_frag")}
        elif e == "napi_gro_receive_entry":
            if cur.get("gro", {}).get("dev") != "eth1":
                cur = {}
                continue
            cur["gro"]["nr_frags"] = ev.get("nr_frags")
            cur["gro"]["gso_size"] = ev.get("gso_size")
            cur["gro"]["ip_summed"] = ev.get("ip_summed")  # 3 = CHECKSUM_PARTIAL: the sender's NEEDS_CSUM
            # The path page_to_skb (or receive_small) took, as vnetlab.rx.RxResult.path names it.
            ret = cur.get("page_to_skb_ret")
            if cur.get("alloc") == "build_skb":
                cur["path"] = "build_skb"
            elif ret is not None:
                cur["path"] = "copy+frag" if ret["data_len"] else "copy"
            cur["frame_len"] = cur["gro"]["len"] + 14  # eth_type_trans pulled ETH_HLEN before napi_gro_receive
            pkts.append(cur)
            cur = {}
    return pkts


def parse_ethtool_k(lines: list[str]) -> dict[str, str]:
    """One ``ethtool -k`` block as the data files store it: {name as printed: value as printed}, e.g. "on",
    "off [fixed]", "off [requested on]" (vnetlab.ethtool.FeatureState), summary lines and legacy names kept
    (labdata.ethtool_k maps them to kernel strings). A line that is not ``ethtool -k`` output raises ValueError."""
    return {line.name: str(line.state) for line in ethtool.printed_lines("\n".join(lines))[1]}


def parse_netdev(lines: list[str]) -> dict:
    """/proc/net/dev per network namespace ("--- NS" lines separate them; the first is "a" if unnamed)."""
    out: dict = {}
    side = "a"
    for line in lines:
        if line.startswith("--- "):
            side = line[4:].strip()
            continue
        m = re.match(r"^\s*([^:\s]+):\s*(.*)$", line)
        if m and not line.lstrip().startswith(("Inter", "face")):
            nums = [int(x) for x in m.group(2).split()]
            if len(nums) != 16:  # net/core/net-procfs.c dev_seq_printf_stats: 8 receive + 8 transmit counters
                raise ValueError(f"/proc/net/dev: {m.group(1)} has {len(nums)} counters, not 16: {line!r}")
            out.setdefault(side, {})[m.group(1)] = {
                "rx_packets": nums[1], "tx_packets": nums[9], "rx_bytes": nums[0], "tx_bytes": nums[8],
                "rx_dropped": nums[3], "tx_dropped": nums[11]}
    return out


def netdev_delta(before: dict, after: dict) -> dict:
    """Counter deltas per "ns:dev" (only devices whose counters moved, lo excluded)."""
    delta = {}
    for side, devs in after.items():
        for dev, c in devs.items():
            b = before.get(side, {}).get(dev)
            if b and dev != "lo":
                d = {k: c[k] - b[k] for k in c}
                if any(d.values()):
                    delta[f"{side}:{dev}"] = d
    return delta


def parse_snmp(lines: list[str]) -> dict:
    """/proc/net/snmp: {"Udp": {"InDatagrams": n, ...}, ...} from its header/value line pairs."""
    out: dict = {}
    if len(lines) % 2:
        raise ValueError(f"/proc/net/snmp: {len(lines)} lines, not header/value pairs")
    for head, vals in zip(lines[::2], lines[1::2]):
        h, v = head.split(), vals.split()
        if not h or not v or h[0] != v[0] or len(h) != len(v):
            raise ValueError(f"/proc/net/snmp: {vals!r} is not the value line of {head!r}")
        out[h[0].rstrip(":")] = {k: int(x) for k, x in zip(h[1:], v[1:])}
    return out


def virtio_feature_bits(bitstring: str) -> list[int]:
    """/sys/bus/virtio/devices/*/features (drivers/virtio/virtio.c features_show: one '0'/'1' per bit, bit 0
    first) -> the set bits."""
    if not bitstring or set(bitstring) - {"0", "1"}:
        raise ValueError(f"virtio features: {bitstring!r} is not a string of 0 and 1")
    return [i for i, c in enumerate(bitstring) if c == "1"]


VIRTIO_NET_F = {0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC", 7: "GUEST_TSO4",
                8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO", 11: "HOST_TSO4", 12: "HOST_TSO6",
                13: "HOST_ECN", 14: "HOST_UFO", 15: "MRG_RXBUF", 16: "STATUS", 17: "CTRL_VQ", 18: "CTRL_RX",
                19: "CTRL_VLAN", 21: "GUEST_ANNOUNCE", 22: "MQ", 23: "CTRL_MAC_ADDR", 24: "NOTIFY_ON_EMPTY",
                27: "ANY_LAYOUT", 28: "RING_INDIRECT_DESC", 29: "RING_EVENT_IDX", 32: "VERSION_1",
                33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER", 36: "ORDER_PLATFORM",
                37: "SR_IOV", 38: "NOTIFICATION_DATA", 50: "DEVICE_STATS", 52: "VQ_NOTF_COAL",
                53: "NOTF_COAL", 54: "GUEST_USO4", 55: "GUEST_USO6", 56: "HOST_USO", 57: "HASH_REPORT",
                59: "GUEST_HDRLEN", 60: "RSS", 61: "RSC_EXT", 62: "STANDBY", 63: "SPEED_DUPLEX"}


def _lines(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()]


def parse_console(console: str, cfg: Config, plugin_log: str = "") -> dict:
    res: dict = {"rx": None, "features": [], "gso": [], "router": [], "rate": []}
    steps_done: list[dict] = []
    netdev: dict = {}
    snmp: dict = {}
    traces: dict = {}
    sender: dict = {}
    receiver: dict = {}
    gro_list: dict = {}
    qdisc: dict = {}
    for kind, labels, lines in blocks(console):
        label = labels[0] if labels else ""
        if kind == "kernel":
            res["uname_r"] = lines[0].strip() if lines else None
            res["proc_version"] = lines[1].strip() if len(lines) > 1 else None
        elif kind == "virtio_features":
            nics = {}
            for line in lines:
                parts = line.split()
                if len(parts) == 2:
                    bits = virtio_feature_bits(parts[1])
                    nics[parts[0]] = {"bits": parts[1], "names": [VIRTIO_NET_F.get(b, f"bit{b}") for b in bits]}
            res["virtio_features"] = nics
        elif kind in ("links", "mergeable_rx_buffer_size_after", "kprobe_events", "nft", "router_links",
                      "rate_setup", "rate_interrupts"):
            res[kind] = _lines(lines)
        elif kind == "slab":
            # "cache object_size" per line; no number where the kernel has no such cache (< 6.3) or no SLUB sysfs
            res["slab_object_size"] = {p[0]: int(p[1]) for p in (line.split() for line in lines)
                                       if len(p) == 2 and p[1].isdigit()}
        elif kind == "mergeable_rx_buffer_size":
            res["mergeable_rx_buffer_size_before"] = _lines(lines)
        elif kind == "router_ethtool":
            dev, cur = None, []
            res["router_ethtool"] = {}
            for line in lines + ["--- "]:
                if line.startswith("--- "):
                    if dev:
                        res["router_ethtool"][dev] = parse_ethtool_k(cur)
                    dev, cur = line[4:].strip(), []
                else:
                    cur.append(line)
        elif kind == "trace" and label == "rx":
            res["rx"] = rx_packets(trace_events(lines))
        elif kind == "trace":
            traces[" ".join(labels)] = trace_events(lines)
        elif kind == "udptool":
            sender[" ".join(labels)] = _lines(lines)
        elif kind == "receiver":
            receiver[label] = _lines(lines)
        elif kind == "gro_list":
            gro_list[label] = _lines(lines)
        elif kind == "ethtool_K":
            phase, _, n = label.partition(".")
            rc = next((int(line[3:]) for line in lines if line.startswith("rc=")), None)
            steps_done.append({"phase": phase, "step": int(n), "dev": labels[1],
                               "command": lines[0].strip() if lines else "",
                               "output": [line.strip() for line in lines[1:]
                                          if line.strip() and not line.startswith("rc=")],
                               "rc": rc})
        elif kind == "ethtool":
            phase, _, n = label.partition(".")
            res["features"].append({"phase": phase, "step": int(n), "dev": labels[1],
                                    "ethtool_k": parse_ethtool_k(lines)})
        elif kind == "netdev":
            netdev[label] = parse_netdev(lines)
        elif kind == "snmp":
            snmp[label] = parse_snmp(_lines(lines))
        elif kind == "qdisc":
            qdisc[label] = parse_qdisc(_lines(lines))
    res["ethtool_K"] = steps_done
    res["rx_sender"] = sender.get("rx")
    res["receiver_rx"] = receiver.get("rx")
    res["receiver_gso"] = receiver.get("gso")
    for case in [k.split()[1] for k in traces if k.startswith("gso ")]:
        evs = traces[f"gso {case}"]
        delta = netdev_delta(netdev.get(f"{case}.before", {}), netdev.get(f"{case}.after", {}))
        res["gso"].append({"route_dev": case, "sender": sender.get(f"gso {case}", []), "counters_delta": delta,
                           "start_xmit": _start_xmit(evs),
                           "skb_gso_segment": [{"dev": e.get("dev"), "len": e.get("len")}
                                               for e in evs if e["event"] == "gso"],
                           "segmented_at": sorted({e.get("dev") for e in evs if e["event"] == "gso"})})
    for key in [k for k in traces if k.startswith("router.")]:
        res["router"].append(router_case(key, traces[key], sender.get(key, []), receiver.get(key, []),
                                         gro_list.get(key, []), netdev, snmp, qdisc))
    res["rate"] = rate_runs(sender, netdev, snmp, plugin_log)
    res["done"] = "@@ done" in console
    return res


def _start_xmit(evs: list[dict]) -> list[dict]:
    return [{"dev": e.get("dev"), "len": e.get("len"), "gso_size": e.get("gso_size"),
             "gso_segs": e.get("gso_segs"), "gso_type": e.get("gso_type")}
            for e in evs if e["event"] == "net_dev_start_xmit"]


def parse_recvlog(lines: list[str]) -> dict:
    """udptool recvlog's summary: counts, the sources seen and the sequence numbers that arrived intact."""
    out: dict = {"sources": {}}
    for line in lines:
        if line.startswith("udptool received="):
            out.update({k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)})
        elif line.startswith("source "):
            _, src, n = line.split()
            out["sources"][src] = int(n)
        elif line.startswith("intact_seq"):
            out["intact_seq"] = [int(x) for x in line.split()[1:]]
    return out


def parse_qdisc(lines: list[str]) -> dict:
    """``tc -s qdisc show dev eth0``: the root qdisc's kind, its "Sent ... pkt (dropped N, overlimits M ...)"
    counters, and the raw lines."""
    out: dict = {"lines": lines}
    m = re.match(r"qdisc (\S+)", lines[0]) if lines else None
    if m:
        out["kind"] = m.group(1)
    for line in lines:
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)", line)
        if m:
            out.update(zip(("sent_bytes", "sent_packets", "dropped", "overlimits", "requeues"), map(int, m.groups())))
            break
    return out


def router_case(key: str, evs: list[dict], sent: list[str], recv: list[str], gro_list: list[str], netdev: dict,
                snmp: dict, qdisc: dict | None = None) -> dict:
    """One router case: what was sent, the GRO skbs the router's eth1 handed up, where they were segmented,
    what the receiving socket got."""
    name = key.split(".", 1)[1]
    m = re.search(r"sent=(\d+) failed=(\d+)", " ".join(sent))
    gro = [e.get("len") for e in evs if e["event"] == "netif_receive_skb" and e.get("dev") == "eth1"]
    rns = "rcv2" if "veth" in name else "rcv"
    before = snmp.get(f"{key}.before", {}).get("Udp", {})
    after = snmp.get(f"{key}.after", {}).get("Udp", {})
    return {
        "case": name, "sent": int(m.group(1)) if m else None, "send_failed": int(m.group(2)) if m else None,
        "rx_gro_list": gro_list,
        "gro_skb_lens": gro,  # skb->len (from the IP header) of every skb eth1's GRO handed up, in order
        # __skb_gso_segment(skb, features, tx_path): tx_path 0 is the receive side (udp_rcv_segment)
        "skb_gso_segment": [{"dev": e.get("dev"), "len": e.get("len"), "tx_path": e.get("tx_path")}
                            for e in evs if e["event"] == "gso"],
        "skb_segment_list": [{"dev": e.get("dev"), "len": e.get("len")} for e in evs if e["event"] == "seglist"],
        "start_xmit_gso": _start_xmit(evs),
        "segmented_at": sorted({e.get("dev") + ("" if e.get("tx_path") else " (rx)")
                                for e in evs if e["event"] == "gso"}),
        "counters_delta": netdev_delta(netdev.get(f"{key}.before", {}), netdev.get(f"{key}.after", {})),
        # the sender's eth0 qdisc (fq_codel by default) before and after: what it dropped never reached eth1
        "sender_qdisc": {"before": (qdisc or {}).get(f"{key}.before"), "after": (qdisc or {}).get(f"{key}.after")},
        "receiver_ns": rns,
        "receiver_udp_delta": {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)},
        "receiver": parse_recvlog(recv),
    }


def rate_runs(sender: dict, netdev: dict, snmp: dict, plugin_log: str) -> list[dict]:
    """The rate stage's runs: packets sent and received per second; with the plugin, instructions per vCPU."""
    marks = re.findall(r"insncount (start|stop) vcpu=(\d+) counts=([\d,]+)", plugin_log)
    pairs = []
    for i in range(0, len(marks) - 1, 2):
        if marks[i][0] == "start" and marks[i + 1][0] == "stop":
            a = [int(x) for x in marks[i][2].split(",")]
            b = [int(x) for x in marks[i + 1][2].split(",")]
            pairs.append([y - x for x, y in zip(a, b)])
    out = []
    for key in sorted((k for k in sender if k.startswith("rate")), key=lambda k: int(k[4:])):
        blasts = re.findall(r"sent=(\d+) seconds=([\d.]+)", " ".join(sender[key]))  # one line per sender
        delta = netdev_delta(netdev.get(f"{key}.before", {}), netdev.get(f"{key}.after", {}))
        rx = delta.get("b:eth1", {}).get("rx_packets", 0)
        secs = max(float(b[1]) for b in blasts) if blasts else None
        run = {"run": key, "senders": len(blasts), "sent": sum(int(b[0]) for b in blasts) if blasts else None,
               "seconds": secs, "rx_packets": rx,
               "rx_pps": round(rx / secs, 1) if secs else None, "counters_delta": delta}
        idx = int(key[4:]) - 1
        if idx < len(pairs):
            run["instructions_per_vcpu"] = pairs[idx]
            run["instructions_per_rx_packet_vcpu1"] = (round(pairs[idx][1] / rx, 1) if rx and len(pairs[idx]) > 1
                                                       else None)
        out.append(run)
    return out


# ---------------------------------------------------------------------------------------------------------
# driver

def dumps(obj, depth: int = 0) -> str:
    """JSON with one line per list item below the top levels: small diffs, readable, small files."""
    if depth >= 3 or not isinstance(obj, (dict, list)) or not obj:
        return json.dumps(obj, separators=(", ", ": "))
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(f"{inner}{dumps(v, depth + 1)}" for v in obj) + f"\n{pad}]"

