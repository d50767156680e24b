"""What the lab measures: the boot configurations, which kernels run which, and the guest's lab.conf.

One boot per (kernel, configuration). A configuration chooses the virtio-net-pci properties (receive mode,
MTU), the wiring and the guest stages (lab/guest/init): ``rx`` (kprobe sweep of UDP sizes), ``features``
(``ethtool -k`` through ``ethtool -K`` steps on vlan/macvlan/bridge), ``gso`` (where a UDP_SEGMENT skb is
segmented), ``router`` (four NICs: rx-gro-list + NAT + VLAN egress, datagrams counted at the receiver) and
``rate`` (1000-byte UDP receive rate, optionally with the instruction-counting TCG plugin).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.qemu import MACS

# ethtool -K steps on the virtio NIC, each followed by ethtool -k of every device. Kept here so the test
# replays exactly the same steps in vnetlab.netdev (it reads them from the data).
STEPS = [
    ("eth0", "tso off"),
    ("eth0", "tx off"),
    ("eth0", "tx on"),
    ("eth0", "sg off"),
    ("eth0", "sg on tso on"),
    ("eth0", "gso off"),
    ("eth0", "gso on"),
    ("eth0", "rx-gro-hw off"),
    ("eth0", "rx-gro-hw on"),
    ("eth0", "tx-udp-segmentation on"),
]
RESET_K = "tso on tx on sg on gso on rx-gro-hw on"

STEP50 = list(range(64, 1473, 50))
BOUNDARY = [18, 86, 87, 1162, 1163, 1472]
SWEEP_1500 = sorted(set(STEP50 + BOUNDARY))
# MTU 9000: big mode's build_skb bound is frame 3744 = payload 3702; mergeable's follows the EWMA-sized buffer.
SWEEP_9000 = sorted(set(list(range(64, 8973, 400)) + [86, 87, 1162, 1163, 1472, 3702, 3703, 4054, 8972]))

GSO_SIZE = 1000
GSO_PAYLOADS = "4000 4000 4000"  # 3 datagrams of 4 segments each

# The router: 1472-byte datagrams (a full 1500-byte IPv4 packet), 40 GRO skbs' worth at the 64 KiB cap.
ROUTER_SIZE = 1472
ROUTER_COUNT = 1760
# name:egress:rx-gro-list. vlan_virtio: the seed's VLAN on the NIC (virtio_net has no GSO_FRAGLIST);
# vlan_veth: the VLAN on a veth, which has FRAGLIST and (with 2e4ef10f5850) GSO_FRAGLIST; nogro: the control.
ROUTER_CASES = "vlan_virtio:virtio:on vlan_veth:veth:on vlan_virtio_nogro:virtio:off"
# napi_complete_done arms a 2 ms timer instead of flushing GRO: emulates a busy router's NAPI, whose polls
# run back to back, so GRO skbs reach the 64 KiB cap under TCG too. Recorded in the data.
GRO_FLUSH_TIMEOUT_NS = 2_000_000
NFT_RULES = """table ip nat {
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    oifname "eth2.10" ip protocol udp masquerade to :40000
    oifname "vl0.10" ip protocol udp masquerade to :40000
  }
}"""

RATE_SIZE = 1000
RATE_SECONDS = [10, 10, 10]


@dataclass
class Config:
    name: str
    description: str
    device_props: str = ""
    rx_sizes: list[int] = field(default_factory=list)
    repeat: int = 2
    features: bool = False
    gso: bool = False
    router: bool = False
    rate: bool = False
    plugin: bool = False  # the instruction-counting TCG plugin (lab/tcg/insncount.c)
    smp: int = 1
    tcg_single_thread: bool = False  # -accel tcg,thread=single: vCPUs take turns on one host thread
    backend: str | None = None  # None: the command-line backend

    @property
    def nics(self) -> int:
        return 4 if self.router else 2

    @property
    def stages(self) -> list[str]:
        return [s for s, on in (("rx", bool(self.rx_sizes)), ("features", self.features), ("gso", self.gso),
                                ("router", self.router), ("rate", self.rate)) if on]


GUEST_OFF = "guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off"
CONFIGS = {c.name: c for c in [
    Config("mergeable", "MRG_RXBUF (QEMU default), MTU 1500; receive sweep, ethtool steps, UDP GSO",
           "", SWEEP_1500, features=True, gso=True),
    Config("small", "small mode: mrg_rxbuf=off and no guest GSO, MTU 1500",
           f"mrg_rxbuf=off,{GUEST_OFF}", SWEEP_1500),
    Config("big", "big mode: mrg_rxbuf=off with guest TSO (virtnet_set_big_packets), MTU 1500",
           "mrg_rxbuf=off", SWEEP_1500),
    Config("mergeable_mtu9000", "MRG_RXBUF with VIRTIO_NET_F_MTU host_mtu=9000",
           "host_mtu=9000", SWEEP_9000),
    Config("big_mtu9000", "big mode with host_mtu=9000 and no guest GSO (DIV_ROUND_UP(mtu, PAGE_SIZE) frags)",
           f"mrg_rxbuf=off,{GUEST_OFF},host_mtu=9000", SWEEP_9000),
    Config("hub_mergeable", "QEMU hub backend (no vnet header: no offloads negotiated); ethtool steps. QEMU answers "
           "VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET with VIRTIO_NET_ERR without a vnet header, so 'rx-gro-hw on' fails "
           "here although CTRL_GUEST_OFFLOADS puts GRO_HW in hw_features; UDP_SEGMENT sends fail with EIO "
           "out of eth0 and eth0.10 (no checksum offload there) but not out of mv0 and br0 (HW_CSUM always on)",
           "", [], features=True, gso=True, backend="hub"),
    Config("gso", "MRG_RXBUF, MTU 1500: ethtool steps and UDP GSO only (no receive sweep)",
           "", [], features=True, gso=True),
    Config("router", "four NICs: sender -> router (rx-gro-list on eth1, nft masquerade, VLAN egress on the virtio "
           "NIC eth2 or on a veth) -> receiver; 1472-byte datagrams with sequence numbers counted intact at the "
           "receiving socket", "", router=True),
    Config("rate", "1000-byte UDP blasted from eth0 by two senders (vCPUs 0 and 2) to eth1 (its interrupt on "
           "vCPU 1), no listener (as in fb32856b16ad's benchmark): eth1 rx packets per second under TCG, one host "
           "thread per vCPU (with thread=single the senders never outran the receiver)",
           "", rate=True, smp=3),
    Config("insn", "as rate, with the lab's TCG plugin counting guest instructions per vCPU between markers: "
           "instructions on the receiving vCPU per received packet", "", rate=True, smp=3, plugin=True),
]}

RX_CONFIGS = ["mergeable", "small", "big", "mergeable_mtu9000", "big_mtu9000"]
# Which configurations `python -m lab run` boots on each kernel when --only is not given.
PLAN = {
    "5.10": RX_CONFIGS + ["hub_mergeable", "router"],
    "6.1": RX_CONFIGS + ["hub_mergeable", "router"],
    "6.12": RX_CONFIGS + ["hub_mergeable", "router"],
    "7.2.12": RX_CONFIGS + ["hub_mergeable", "router"],
    "7.3.4": RX_CONFIGS + ["hub_mergeable", "router"],
    "6.1-plain": RX_CONFIGS + ["rate", "insn"],
    "6.1-no-build-skb": RX_CONFIGS + ["rate", "insn"],
    "5.10-plain": ["gso", "router"],
    "5.10-revert-3d6df63a5cbe": ["router"],
    "5.10-2e4ef10f5850": ["gso", "router"],
    "5.10-2e4ef10f5850-revert-3d6df63a5cbe": ["router"],
}


def guest_conf(cfg: Config, offsets: dict, probes: dict, guest_timeout: int) -> str:
    sizes = " ".join(str(s) for s in cfg.rx_sizes * cfg.repeat)
    steps = "\n".join(f"{d} {a}" for d, a in STEPS)
    macs = MACS[:cfg.nics]
    lines = [f"MAC_{i}={m}" for i, m in enumerate(macs)] + [
        f"MACS='{' '.join(macs)}'", f"GUEST_TIMEOUT={guest_timeout}",
        f"RX_SIZES='{sizes}'", "RX_DELAY_US=3000",
        f"RUN_FEATURES={int(cfg.features)}", f"RUN_GSO={int(cfg.gso)}", f"RUN_ROUTER={int(cfg.router)}",
        f"RATE_SECONDS='{' '.join(str(s) for s in RATE_SECONDS) if cfg.rate else ''}'", f"RATE_SIZE={RATE_SIZE}",
        f"RATE_SENDER_MASKS='{' '.join(str(1 << c) for c in range(cfg.smp) if c != 1)}'",
        f"STEPS='{steps}'", f"RESET_K='{RESET_K}'",
        f"GSO_SIZE={GSO_SIZE}", f"GSO_PAYLOADS='{GSO_PAYLOADS}'",
        f"ROUTER_SIZE={ROUTER_SIZE}", f"ROUTER_COUNT={ROUTER_COUNT}", f"ROUTER_CASES='{ROUTER_CASES}'",
        "ROUTER_RECV_IDLE=8", f"GRO_FLUSH_TIMEOUT={GRO_FLUSH_TIMEOUT_NS}", f"NFT_RULES='{NFT_RULES}'",
        f"OFF_DEV={offsets['sk_buff.dev']}", f"OFF_NAME={offsets['net_device.name']}",
        f"OFF_LEN={offsets['sk_buff.len']}",
        f"OFF_DATA_LEN={offsets['sk_buff.data_len']}", f"OFF_TRUESIZE={offsets['sk_buff.truesize']}",
        f"OFF_HEAD_FRAG_BYTE={offsets['sk_buff.head_frag.byte']}",
        f"OFF_HEAD_FRAG_BIT={offsets['sk_buff.head_frag.bit']}",
        f"P2S_ARGS='{probes['P2S_ARGS']}'", f"ADD_FRAG_FNS='{probes['ADD_FRAG_FNS']}'",
        f"NAPI_ALLOC_FNS='{probes['NAPI_ALLOC_FNS']}'", f"GRO_FNS='{probes['GRO_FNS']}'", "",
    ]
    return "\n".join(lines)
