"""vnetlab.features: NETIF_F bit tables per kernel, masks, ethtool names, FeatureSet, the SKB_GSO relation."""

from __future__ import annotations

import array
import fcntl
import os
import re
import shutil
import socket
import struct
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vnetlab import features as F
from vnetlab.errors import ArgumentError, UnknownFeatureError
from vnetlab.features import FeatureSet
from vnetlab.live import running_profile

KERNELS = ("5.10", "5.10.223", "5.10.262", "5.11", "5.12", "5.13", "6.1", "6.12", "6.12.117", "6.18", "7.2.12", "7.3.4")


def test_known_kernels():
    assert F.known_kernels() == KERNELS


@pytest.mark.parametrize("k", KERNELS)
def test_fixed_bits_every_version(k):
    # include/linux/netdev_features.h: the low bits and the GSO range start never moved.
    assert F.bit("SG", kernel=k) == 0
    assert F.bit("HW_CSUM", kernel=k) == 3
    assert F.bit("FRAGLIST", kernel=k) == 6
    assert F.bit("TSO", kernel=k) == F.GSO_SHIFT == 16
    assert F.bit("GSO_UDP_L4", kernel=k) == 33
    assert F.bit("GSO_FRAGLIST", kernel=k) == 34
    assert F.bit("NTUPLE", kernel=k) == 38
    assert F.bit("GRO_FRAGLIST", kernel=k) == 57


def test_bits_that_move():
    # include/linux/netdev_features.h per version (each entry's source in data/netdev_features.toml): 6.18 has no
    # LLTX / NETNS_LOCAL / FCOE_MTU bits (dev->lltx, dev->netns_immutable) and GSO_ACCECN at 35, shifting FCOE_CRC
    # and SCTP_CRC up one; GRO_UDP_FWD arrives in 5.12, the HSR bits in 5.13. Name counts: the entries of
    # net/ethtool/common.c netdev_features_strings of that version (facts D.1).
    assert F.bit("LLTX", kernel="6.1") == 12 and F.bit("NETNS_LOCAL", kernel="6.1") == 13
    for name in ("LLTX", "NETNS_LOCAL", "FCOE_MTU"):
        with pytest.raises(ValueError, match="name="):
            F.bit(name, kernel="6.18")
    assert F.bit("FCOE_CRC", kernel="6.1") == 35 and F.bit("FCOE_CRC", kernel="6.18") == 36
    assert F.bit("SCTP_CRC", kernel="6.1") == 36 and F.bit("SCTP_CRC", kernel="6.18") == 37
    assert F.bit("FCOE_MTU", kernel="6.1") == 37
    assert F.bit("GSO_ACCECN", kernel="6.18") == 35
    with pytest.raises(ValueError):
        F.bit("GSO_ACCECN", kernel="6.1")
    with pytest.raises(ValueError):
        F.bit("GRO_UDP_FWD", kernel="5.11")
    assert F.bit("GRO_UDP_FWD", kernel="5.12") == 59
    with pytest.raises(ValueError):
        F.bit("HW_HSR_TAG_INS", kernel="5.12")
    assert F.bit("HW_HSR_DUP", kernel="5.13") == 63
    assert len(F.names("5.10")) == 58 and len(F.names("6.1")) == 63 and len(F.names("6.18")) == 61


def test_gso_software_before_and_after_the_patch():
    tso = {"TSO", "TSO6", "TSO_ECN", "TSO_MANGLEID"}
    assert F.mask("GSO_SOFTWARE", kernel="5.10") == tso | {"GSO_SCTP"}
    assert F.mask("GSO_SOFTWARE", kernel="5.11") == tso | {"GSO_SCTP", "GSO_UDP_L4", "GSO_FRAGLIST"}
    assert F.mask("GSO_SOFTWARE", kernel="6.1") == tso | {"GSO_SCTP", "GSO_UDP_L4", "GSO_FRAGLIST"}
    assert F.mask("GSO_SOFTWARE", kernel="6.18") == tso | {"GSO_SCTP", "GSO_UDP_L4", "GSO_FRAGLIST", "GSO_ACCECN"}
    # ONE_FOR_ALL inherits the change: UDP_L4 and GSO_FRAGLIST become one-for-all from 5.11.
    assert "GSO_UDP_L4" not in F.mask("ONE_FOR_ALL", kernel="5.10")
    assert "GSO_UDP_L4" in F.mask("ONE_FOR_ALL", kernel="5.11")
    # facts D.1 / numbers table: pre 16,18,19,20,30; post + 33, 34; 6.18 + 35.
    bits = lambda k: sorted(b for b in range(64) if F.mask("GSO_SOFTWARE", kernel=k).bits >> b & 1)  # noqa: E731
    assert bits("5.10") == [16, 18, 19, 20, 30]
    assert bits("5.11") == [16, 18, 19, 20, 30, 33, 34]
    assert bits("6.18") == [16, 18, 19, 20, 30, 33, 34, 35]


@pytest.mark.parametrize("k,last", [(k, 35 if k in ("6.18", "7.2.12", "7.3.4") else 34) for k in KERNELS])
def test_gso_mask_range(k, last):
    # include/linux/netdev_features.h NETIF_F_GSO_MASK = GENMASK_ULL(NETIF_F_GSO_LAST, NETIF_F_GSO_SHIFT): the last
    # GSO bit is GSO_FRAGLIST (34), GSO_ACCECN (35) from 6.18
    assert F.mask("GSO_MASK", kernel=k).bits == (1 << (last + 1)) - (1 << 16)


def test_other_masks():
    # include/linux/netdev_features.h, v6.1 and 6.18 (the macros as data/netdev_features.toml cites them):
    # NETIF_F_VLAN_FEATURES and NETIF_F_GSO_ENCAP_ALL have six members each in 6.1
    k = "6.1"
    assert F.mask("CSUM_MASK", kernel=k) == {"IP_CSUM", "IPV6_CSUM", "HW_CSUM"}
    assert F.mask("ALL_FOR_ALL", kernel=k) == {"NOCACHE_COPY", "FSO"}
    assert F.mask("SOFT_FEATURES", kernel=k) == {"GSO", "GRO"}
    assert F.mask("SOFT_FEATURES_OFF", kernel="5.10") == {"GRO_FRAGLIST"}
    assert F.mask("SOFT_FEATURES_OFF", kernel=k) == {"GRO_FRAGLIST", "GRO_UDP_FWD"}
    assert F.mask("UPPER_DISABLES", kernel=k) == {"LRO"}
    assert F.mask("NEVER_CHANGE", kernel=k) == {"VLAN_CHALLENGED", "LLTX", "NETNS_LOCAL"}
    assert F.mask("NEVER_CHANGE", kernel="6.18") == {"VLAN_CHALLENGED"}
    assert len(F.mask("VLAN_FEATURES", kernel=k)) == 6
    assert len(F.mask("GSO_ENCAP_ALL", kernel=k)) == 6
    for name in ("GSO_SOFTWARE", "GSO_MASK", "ALL_TSO", "ONE_FOR_ALL", "ALL_FOR_ALL", "CSUM_MASK",
                 "GSO_ENCAP_ALL", "SOFT_FEATURES", "NETIF_F_GSO_SOFTWARE"):
        assert isinstance(F.mask(name, kernel="6.18"), FeatureSet)


def test_ethtool_names_both_directions():
    # net/ethtool/common.c netdev_features_strings (5.10, 6.1, 6.18)
    assert F.ethtool_name("GSO_UDP_L4", kernel="6.1") == "tx-udp-segmentation"
    assert F.ethtool_name("GSO_FRAGLIST", kernel="5.10") == "tx-gso-list"
    assert F.from_ethtool_name("tx-gso-list", kernel="6.18") == "GSO_FRAGLIST"
    assert F.ethtool_name("GSO_ACCECN", kernel="6.18") == "tx-tcp-accecn-segmentation"
    assert F.ethtool_name("LLTX", kernel="6.1") == "tx-lockless"
    with pytest.raises(ValueError, match="ethtool="):
        F.from_ethtool_name("tx-lockless", kernel="6.18")
    # net/ethtool/common.c has no string for NETIF_F_GSO_UDP (UFO).
    with pytest.raises(ValueError):
        F.ethtool_name("GSO_UDP", kernel="6.1")
    for k in KERNELS:
        for name in F.table(k).ethtool:
            assert F.from_ethtool_name(F.ethtool_name(name, kernel=k), kernel=k) == name


def test_errors_name_parameter_and_list_valid():
    with pytest.raises(ValueError, match=r"name='NOPE'.*valid: SG"):
        F.bit("NOPE", kernel="6.1")
    with pytest.raises(ValueError, match=r"kernel='4.19'.*5.10"):
        F.bit("SG", kernel="4.19")
    with pytest.raises(ValueError, match=r"name='BOGUS'.*GSO_SOFTWARE"):
        F.mask("BOGUS", kernel="6.1")
    with pytest.raises(ValueError, match="bits="):
        FeatureSet.from_bits(1 << 12, kernel="6.18")
    with pytest.raises(ValueError, match="kernel"):
        FeatureSet.from_names(["SG"], kernel="6.1") | FeatureSet.from_names(["SG"], kernel="6.18")


def test_featureset_protocol():
    a = FeatureSet.from_names(["SG", "HW_CSUM", "TSO"], kernel="6.18")
    b = FeatureSet.from_names(["TSO", "GSO_UDP_L4"], kernel="6.18")
    assert a | b == {"SG", "HW_CSUM", "TSO", "GSO_UDP_L4"}
    assert a & b == {"TSO"}
    assert a - b == {"SG", "HW_CSUM"}
    assert "SG" in a and "GSO_UDP_L4" not in a
    assert len(a) == 3 and list(a) == ["SG", "HW_CSUM", "TSO"]
    assert a.bits == 1 | 8 | 1 << 16  # netdev_features.h: NETIF_F_SG_BIT 0, HW_CSUM_BIT 3, TSO_BIT 16
    assert FeatureSet.from_bits(a.bits, kernel="6.18") == a
    eth = a.to_ethtool()
    assert eth["tx-scatter-gather"] is True and eth["tx-udp-segmentation"] is False
    assert FeatureSet.from_ethtool(eth, kernel="6.18") == a
    with pytest.raises(AttributeError):
        a._bits = 0  # type: ignore[misc]
    assert hash(a) == hash(FeatureSet.from_names(["TSO", "SG", "HW_CSUM"], kernel="6.18"))


@given(st.sampled_from(KERNELS), st.data())
def test_featureset_matches_int_algebra(k, data):
    names = F.names(k)
    xs = data.draw(st.lists(st.sampled_from(names), max_size=12))
    ys = data.draw(st.lists(st.sampled_from(names), max_size=12))
    a, b = FeatureSet.from_names(xs, kernel=k), FeatureSet.from_names(ys, kernel=k)
    assert (a | b).bits == a.bits | b.bits
    assert (a & b).bits == a.bits & b.bits
    assert (a - b).bits == a.bits & ~b.bits
    assert set(a) == set(xs) and len(a) == len(set(xs))
    # every feature but GSO_UDP (no netdev_features_strings entry) survives the ethtool round trip
    assert FeatureSet.from_ethtool(a.to_ethtool(), kernel=k) == a - "GSO_UDP"


@pytest.mark.parametrize("k", KERNELS)
def test_skb_gso_shift_relation(k):
    # include/linux/netdev_features.h BUILD_BUG_ONs: NETIF_F_x == SKB_GSO_x << NETIF_F_GSO_SHIFT.
    assert F.gso_feature("UDP_L4", kernel=k) == "GSO_UDP_L4"
    assert F.gso_feature("FRAGLIST", kernel=k) == "GSO_FRAGLIST"
    assert F.gso_feature("TCPV4", kernel=k) == "TSO"
    assert F.gso_feature("DODGY", kernel=k) == "GSO_ROBUST"
    t = F.table(k)
    for name, b in t.skb_gso.items():
        if b < 20 and not name.startswith("__") and (b + 16) in t.by_bit:
            assert F.bit(F.gso_feature(name, kernel=k), kernel=k) == b + F.GSO_SHIFT
    # include/linux/skbuff.h: SKB_GSO_UDP_L4 = 1 << 17, SKB_GSO_FRAGLIST = 1 << 18
    assert F.skb_gso_bit("UDP_L4", kernel=k) == 17 and F.skb_gso_bit("FRAGLIST", kernel=k) == 18


def test_net_gso_ok_and_skb_gso_ok():
    k = "6.1"
    virtio = FeatureSet.from_names(["SG", "HW_CSUM", "TSO", "TSO6", "GSO_UDP_L4"], kernel=k)
    assert F.net_gso_ok(virtio, {"UDP_L4"})
    assert not F.net_gso_ok(virtio, {"UDP_L4", "FRAGLIST"})
    both = virtio | {"GSO_FRAGLIST"}
    # skb_gso_ok: a fraglist GSO skb needs NETIF_F_FRAGLIST too (facts D.2).
    assert not F.skb_gso_ok(both, {"UDP_L4", "FRAGLIST"}, has_frag_list=True)
    assert F.skb_gso_ok(both | {"FRAGLIST"}, {"UDP_L4", "FRAGLIST"}, has_frag_list=True)


def test_increment_and_intersect():
    k = "6.1"
    fs = lambda *n: FeatureSet.from_names(n, kernel=k)  # noqa: E731
    # netdev_intersect_features: HW_CSUM on one side stands for IP_CSUM|IPV6_CSUM.
    assert F.netdev_intersect_features(fs("HW_CSUM"), fs("IP_CSUM")) == {"IP_CSUM"}
    # netdev_increment_features: ONE_FOR_ALL bits are ORed in (within the mask), ALL_FOR_ALL ANDed.
    all_ = fs("NOCACHE_COPY")
    got = F.netdev_increment_features(all_, fs("SG", "GSO_UDP_L4"), F.mask("GSO_MASK", kernel=k) | fs("SG"))
    assert got == {"SG", "GSO_UDP_L4"}
    got5 = FeatureSet(F.increment_bits(0, fs("SG").bits | (1 << 33), (1 << 33) | 1, "5.10"), "5.10")
    assert got5 == {"SG"}  # pre-patch GSO_UDP_L4 is not one-for-all
    # netdev_add_tso_features re-adds ALL_TSO within the mask, keeps ALL_FOR_ALL.
    assert F.netdev_add_tso_features(fs("SG"), F.mask("ALL_TSO", kernel=k)) == {"SG", "TSO", "TSO6", "TSO_ECN",
                                                                                  "TSO_MANGLEID"}


# --- the running kernel ----------------------------------------------------------------------------
# Expectations per kernel profile: the running kernel is mapped to its modelled profile (live.running_profile),
# so a CI kernel that the tables do not match fails here instead of skipping.

BTF = "/sys/kernel/btf/vmlinux"


def _btf_enum(pattern: str) -> dict[str, int]:
    if not shutil.which("bpftool") or not os.path.exists(BTF):
        pytest.skip("bpftool or /sys/kernel/btf/vmlinux not available")
    out = subprocess.run(["bpftool", "btf", "dump", "file", BTF, "format", "c"], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(rf"^\s*({pattern}) = (-?\d+),", out, re.M)}


@pytest.mark.btf
def test_bits_match_running_kernel_btf():
    # BTF of the running kernel: enum netdev_features (NETIF_F_*_BIT, __UNUSED_NETIF_F_*, NETDEV_FEATURE_COUNT)
    profile = running_profile()
    enum = _btf_enum(r"NETIF_F_\w+_BIT|__UNUSED_NETIF_F_\d+|NETDEV_FEATURE_COUNT|NETIF_F_GSO_SHIFT|NETIF_F_GSO_LAST")
    named = {k.removeprefix("NETIF_F_").removesuffix("_BIT"): v for k, v in enum.items() if k.endswith("_BIT")}
    assert named == dict(F.table(profile).bits), profile
    assert enum["NETDEV_FEATURE_COUNT"] == 64 and enum["NETIF_F_GSO_SHIFT"] == F.GSO_SHIFT
    assert F.mask("GSO_MASK", kernel=profile).bits == (1 << (enum["NETIF_F_GSO_LAST"] + 1)) - (1 << 16)
    unused = {v for k, v in enum.items() if k.startswith("__UNUSED")}
    assert unused == set(range(64)) - set(named.values())


@pytest.mark.btf
def test_skb_gso_match_running_kernel_btf():
    # BTF of the running kernel: the SKB_GSO_* enum (bits, as 1 << n)
    profile = running_profile()
    enum = _btf_enum(r"_*SKB_GSO_\w+")
    got = {k.replace("SKB_GSO_", ""): v & 0xFFFFFFFF for k, v in enum.items()}
    assert got == {k: 1 << b for k, b in F.table(profile).skb_gso.items()}, profile


def _kernel_feature_strings(dev: str = "lo") -> list[str]:
    """ETH_SS_FEATURES strings via the SIOCETHTOOL ioctl (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS)."""
    siocethtool, gsset_info, gstrings, ss_features = 0x8946, 0x37, 0x1B, 4
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        def ioctl(buf: array.array) -> None:
            fcntl.ioctl(s.fileno(), siocethtool, struct.pack("16sP", dev.encode(), buf.buffer_info()[0]))

        info = array.array("B", struct.pack("IIQI", gsset_info, 0, 1 << ss_features, 0))
        ioctl(info)
        count = struct.unpack_from("IIQI", info)[3]
        buf = array.array("B", struct.pack("III", gstrings, ss_features, count) + bytes(32 * count))
        ioctl(buf)
    return [buf[12 + 32 * i:44 + 32 * i].tobytes().rstrip(b"\0").decode() for i in range(count)]


@pytest.mark.live
def test_ethtool_names_match_running_kernel():
    # the running kernel's netdev_features_strings, bit by bit (SIOCETHTOOL ETHTOOL_GSTRINGS on lo)
    profile = running_profile()
    strings = _kernel_feature_strings()
    t = F.table(profile)
    assert strings == [t.ethtool.get(t.by_bit.get(b, ""), "") for b in range(64)], profile


def test_membership_of_a_feature_this_kernel_lacks_is_false():
    # GRO_UDP_FWD arrived in 5.12: a 5.10 device simply does not have it (gro.aggregate asks this).
    fs = FeatureSet.from_names(["GRO", "GRO_FRAGLIST"], kernel="5.10")
    assert "GRO_UDP_FWD" not in fs
    assert "GRO_FRAGLIST" in fs
    with pytest.raises(ValueError, match="NO_SUCH_FEATURE"):
        "NO_SUCH_FEATURE" in fs  # noqa: B015 - a name no kernel has is a typo, not a missing feature
    # a feature of another modelled kernel is absent here: False, not an error (FeatureSet docstring)
    assert "GSO_ACCECN" not in F.mask("GSO_MASK", kernel="6.1")  # NETIF_F_GSO_ACCECN arrived in 6.18
    assert "LLTX" not in FeatureSet.from_names(["SG"], kernel="6.18")  # 6.18: dev->lltx, no feature bit
    with pytest.raises(UnknownFeatureError, match="GSO_ACCECN"):
        FeatureSet.from_names(["GSO_ACCECN"], kernel="6.1")  # building one with it is an error


def test_coerce():
    fs = FeatureSet.coerce(["NETIF_F_SG", "HW_CSUM"], kernel="6.1")
    assert fs == {"SG", "HW_CSUM"} and fs.kernel == "6.1"
    assert FeatureSet.coerce(fs.bits, kernel="6.1") == fs
    assert FeatureSet.coerce(None, kernel="6.1") == set()
    with pytest.raises(ValueError, match="kernel 6.1, expected kernel 6.18"):
        FeatureSet.coerce(fs, kernel="6.18")
    with pytest.raises(ValueError, match="features must be"):
        FeatureSet.coerce("SG", kernel="6.1")


def test_can_checksum_protocol():
    # include/linux/netdevice.h can_checksum_protocol: HW_CSUM covers all, IP_CSUM only IPv4, IPV6_CSUM only IPv6
    fs = lambda *n: FeatureSet.from_names(n, kernel="6.1")  # noqa: E731
    assert F.can_checksum_protocol(fs("HW_CSUM"), 4) and F.can_checksum_protocol(fs("HW_CSUM"), 6)
    assert F.can_checksum_protocol(fs("IP_CSUM"), 4) and not F.can_checksum_protocol(fs("IP_CSUM"), 6)
    assert F.can_checksum_protocol(fs("IPV6_CSUM"), 6) and not F.can_checksum_protocol(fs("IPV6_CSUM"), 4)
    assert not F.can_checksum_protocol(fs("SG"), 4)
    with pytest.raises(ValueError, match="ip must be 4 or 6"):
        F.can_checksum_protocol(fs("SG"), 5)


def test_public_functions_check_their_arguments():
    # include/linux/netdev_features.h: typedef u64 netdev_features_t, so a bit set is 0..2**64-1 (vnetlab.checks)
    from vnetlab.errors import ArgumentError

    assert FeatureSet.from_bits(1, kernel="6.1").names == ("SG",)  # NETIF_F_SG_BIT is bit 0
    with pytest.raises(ArgumentError, match=r"from_bits: bits must be an int in 0\.\.18446744073709551615 "
                                            r"\(netdev_features_t, a u64\)"):
        FeatureSet.from_bits(2**64, kernel="6.1")
    with pytest.raises(ArgumentError, match="from_bits: bits"):
        FeatureSet.from_bits(1.0, kernel="6.1")
    with pytest.raises(ArgumentError, match="skb_gso_ok: has_frag_list must be"):
        F.skb_gso_ok(FeatureSet.empty("6.1"), ["UDP_L4"], has_frag_list=1)


@pytest.mark.parametrize("value, on", [
    (False, False), (True, True), ("off", False), ("on", True), ("off [fixed]", False), ("on [requested off]", True),
    ((False, True), False), ((True, False, True), True)])
def test_from_ethtool_reads_every_way_a_state_is_written(value, on):
    # "off" as `ethtool -k` prints it (netlink/features.c dump_feature) is off: a non-empty string is not "on".
    fs = FeatureSet.from_ethtool({"rx-gro": value}, kernel="6.1")
    assert ("GRO" in fs) is on


@pytest.mark.parametrize("value", ["maybe", 1, 0, None, 2.0, ("on",)])
def test_from_ethtool_refuses_what_is_not_a_state(value):
    with pytest.raises(ArgumentError, match=r"settings\['rx-gro'\]"):
        FeatureSet.from_ethtool({"rx-gro": value}, kernel="6.1")


def test_a_mappings_false_is_off_everywhere():
    # {name: False} means the feature is off: from_names and coerce keep only the True ones.
    gro = FeatureSet.from_names(["GRO"], kernel="6.1")
    assert FeatureSet.from_names({"SG": False, "GRO": True}, kernel="6.1") == gro
    assert FeatureSet.coerce({"SG": False, "GRO": True}, kernel="6.1") == gro
    with pytest.raises(ArgumentError, match=r"names\['SG'\]"):
        FeatureSet.from_names({"SG": "yes"}, kernel="6.1")
