"""Every name of ../shared/reference/contract.md, called the way the contract writes it."""

import vnetlab
from vnetlab import features, gro, netdev, rx, xmit
from vnetlab.skb import Skb


def test_profiles():
    a = vnetlab.arch("x86_64")
    for attr in ("page_size", "l1_cache_bytes", "net_ip_align", "net_skb_pad", "skb_shared_info_size", "shinfo_size",
                 "max_skb_frags", "sk_buff_size"):
        assert isinstance(getattr(a, attr), int)
    assert vnetlab.kernel("5.10") < vnetlab.kernel("6.1")
    for v in ("5.10", "5.11", "5.12", "5.13", "6.1", "6.18"):
        vnetlab.kernel(v)
    for name in ("x86_64", "arm64", "ppc64le", "mips32"):
        vnetlab.arch(name)


def test_skb_fields():
    s = rx.receive(1472).skb
    assert isinstance(s, Skb)
    # docs/kernel/rx.md#a5: a 1472-byte UDP payload (frame 1514) in a 1536 buffer takes the copy path: 14-byte head
    # (ETH_HLEN copied, 0f6925b3e8da) and one 1500-byte frag of truesize 1536, no GSO
    assert (s.len, s.headlen, s.data_len, s.nr_frags) == (1514, 14, 1500, 1)
    assert isinstance(s.head_frag, bool) and s.frag_list == [] and s.tailroom == 0
    assert (s.gso_size, s.gso_segs, s.truesize > 1536, s.headroom >= 0) == (0, 0, True, True)
    f = s.frags[0]
    # docs/kernel/rx.md#a5 table, row 1472: the 1500-byte frag carries the 1536 buffer's truesize
    assert f.size == 1500 and f.truesize == 1536 and f.offset >= 0 and f.page is not None
    assert isinstance(s.gso_type, (set, frozenset))


def test_rx():
    # docs/kernel/rx.md#a5: 1000-B UDP, frame 1042, tailroom 482 -> build_skb, 0 frags, truesize 1792
    r = rx.page_to_skb(1042, 1536, mode="mergeable", hdr_len=12, headroom=0, kernel="6.1", arch="x86_64")
    assert r.path == "build_skb" and r.tailroom == 482 and isinstance(r.skb, Skb)
    assert r.skb.nr_frags == 0 and r.skb.truesize == 1792
    assert rx.page_to_skb(1042, 1536, kernel="5.12").tailroom is None  # no build_skb branch there
    r = rx.receive(1000, l4="udp", ip=4, vlan=False, mode="mergeable", mtu=1500, xdp=False, kernel="6.1",
                   arch="x86_64", buf_len=None)
    assert r.path == "build_skb"
    assert rx.mergeable_buf_lens(21, avg_pkt_len=None, mtu=1500, frag_size=32768, hdr_len=12, xdp=False,
                                 kernel="6.1", arch="x86_64")[-1] == 2048


def test_gro():
    skbs = [rx.receive(1448, l4="tcp", buf_len=2048).skb for _ in range(4)]
    out = gro.aggregate(skbs, l4="tcp", udp_gro=False, features=None, kernel="6.1", arch="x86_64",
                        gro_max_size=65536)
    assert len(out) == 1 and out[0].gso_segs == 4
    udp = [rx.receive(1000).skb for _ in range(4)]
    assert len(gro.aggregate(udp, l4="udp")) == 4  # no UDP_GRO socket, no GRO_FRAGLIST/GRO_UDP_FWD
    fs = features.FeatureSet.from_names(["GRO", "GRO_FRAGLIST"], kernel="6.1")
    assert len(gro.aggregate(udp, l4="udp", features=fs)) == 1


def test_features():
    fs = features.FeatureSet.from_names(["SG", "GSO_UDP_L4"], kernel="6.1")
    assert "SG" in fs and len(fs) == 2 and set(fs) == {"SG", "GSO_UDP_L4"}
    assert (fs | fs) == fs and (fs & fs) == fs and len(fs - fs) == 0
    # docs/kernel/gso-features.md#d1 (BTF 6.18): NETIF_F_SG_BIT 0, NETIF_F_GSO_UDP_L4_BIT 33 (the same since 4.18)
    assert fs.bits == (1 << 0) | (1 << 33)
    assert fs.to_ethtool()["tx-udp-segmentation"] is True
    assert features.FeatureSet.from_bits(fs.bits, kernel="6.1") == fs
    assert features.FeatureSet.from_ethtool(fs.to_ethtool(), kernel="6.1") == fs
    assert features.bit("GSO_UDP_L4", kernel="6.1") == 33
    assert features.ethtool_name("GSO_UDP_L4", kernel="6.1") == "tx-udp-segmentation"
    assert features.from_ethtool_name("tx-udp-segmentation", kernel="6.1") == "GSO_UDP_L4"
    for m in ("GSO_SOFTWARE", "GSO_MASK", "ALL_TSO", "ONE_FOR_ALL", "ALL_FOR_ALL", "CSUM_MASK", "GSO_ENCAP_ALL",
              "SOFT_FEATURES"):
        assert isinstance(features.mask(m, kernel="6.1"), features.FeatureSet)


def test_netdev_and_xmit():
    net = netdev.Namespace(kernel="6.18")
    a, b = net.veth("v0", "v1")
    net.macvlan("mv0", lower=a)
    net.vlan("v0.10", lower=a, vid=10)
    br = net.bridge("br0")
    net.bond("bond0")
    net.set_master(b, br)
    eth = net.nic("eth0", driver="virtio_net")
    for dev in (a, br, eth):
        assert isinstance(dev.name, str)
        for attr in ("features", "hw_features", "wanted_features", "vlan_features", "hw_enc_features"):
            assert isinstance(getattr(dev, attr), features.FeatureSet), attr
        on, fixed = dev.ethtool_k()["tx-udp-segmentation"]
        assert isinstance(on, bool) and isinstance(fixed, bool)
    # 6.18 veth_setup: GSO_SOFTWARE (with UDP_L4) changeable; virtio_net without HOST_USO: off [fixed]
    assert a.ethtool_k()["tx-udp-segmentation"] == (True, False)
    assert eth.ethtool_k()["tx-udp-segmentation"] == (False, True)
    b.ethtool_K({"tx-udp-segmentation": False})
    assert "GSO_UDP_L4" not in b.features
    skb = xmit.gso_skb(l4="udp", segs=8, gso_size=1000, fraglist=False, vlan_tag=None)
    tx = xmit.send(a, skb)
    # veth_xmit hands the GSO skb to the peer unsegmented: one skb on the pair, 8000 payload bytes
    # drivers/net/veth.c veth_xmit; 8000 = the input above, 8 segments of gso_size 1000
    assert tx.segmented_at is None and len(tx.segments) == 1 and tx.segments[0].payload_len == 8000
    assert [h.name for h in tx.hops] == ["v0"] and tx.hops[0].action == "passed"
