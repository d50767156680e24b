"""The model against every shipped real-kernel measurement (data/lab/<kernel>/*.json, made by ``python -m lab run``).

No QEMU here: the lab's results are versioned files; these tests replay each measured input through vnetlab
(rx for the receive path, netdev for ethtool -k, xmit for where GSO is segmented, gro + xmit + the kernel's
NAT rule for the router) on the model profile of each lab kernel (labdata.LAB_KERNELS) and demand the same
answer. Expected values come from the measurements; the model is what is under test.
"""

from __future__ import annotations

import functools

import pytest

from vnetlab import ethtool, features, labdata, rx
from vnetlab.headers import ETH_HLEN
from vnetlab.netdev import Namespace
from vnetlab.profiles import arch as _arch
from vnetlab.profiles import kernel as _profile
from vnetlab.profiles import resolve
from vnetlab.tables import load_table

KERNELS = labdata.lab_kernels()
CASES = [(k, c) for k in KERNELS for c in labdata.configs(k)]
RX_CASES = [(k, c) for k, c in CASES if "rx" in labdata.load(c, k)]
FEATURE_CASES = [(k, c) for k, c in CASES if "features" in labdata.load(c, k)]
GSO_CASES = [(k, c) for k, c in CASES if "gso" in labdata.load(c, k)]
ROUTER_KERNELS = [k for k, c in CASES if c == "router"]


def test_every_lab_kernel_has_a_model_and_the_stock_kernels_are_shipped():
    assert {"5.10", "6.1", "6.12", "7.2.12", "7.3.4"} <= set(KERNELS)
    for k in KERNELS:
        assert labdata.model_kernel(k).version == labdata.model_profile(k)


@pytest.mark.parametrize("kernel,name", CASES)
def test_lab_data_describes_its_run(kernel, name):
    doc = labdata.load(name, kernel)
    assert doc["config"] == name and doc["schema"] in (1, 2)
    k = doc["kernel"]
    assert k["uname_r"].startswith(k["release"])
    lk = labdata.LAB_KERNELS[kernel]
    if doc["schema"] >= 2:
        assert k["id"] == kernel and k["kind"] == lk.kind and k["model"] == lk.model
        if lk.kind == "stock":
            assert k["package"] == f"linux-image-{k['release']}"
        else:
            # the source package, patches, config and compiler of the build are on record
            assert k["package"].startswith("linux-source-") and k["build"]["compiler"].startswith("gcc")
            assert k["build"]["config_fragment"] == "lab/configs/lab.config"
    assert doc["qemu"]["argv"][0] == "qemu-system-x86_64" and "-kernel" in doc["qemu"]["argv"]
    assert doc["qemu"]["accel"] in ("kvm", "tcg")


@pytest.mark.parametrize("kernel", KERNELS)
def test_btf_sizes_match_the_model_profile(kernel):
    """sizeof(skb_shared_info) and SKB_DATA_ALIGN(sizeof(sk_buff)) from the kernel's own BTF (pahole) are what
    the model's arch profile computes; for stock kernels sizeof(sk_buff) is exact."""
    doc = labdata.load(labdata.configs(kernel)[0], kernel)
    btf = doc["kernel"]["btf_offsets"]
    a = _arch("x86_64", labdata.model_profile(kernel))
    assert btf["sizeof(skb_shared_info)"] == a.skb_shared_info_size
    assert a.skb_data_align(btf["sizeof(sk_buff)"]) == a.skb_data_align(a.sk_buff_size)
    if labdata.LAB_KERNELS[kernel].kind == "stock":
        assert btf["sizeof(sk_buff)"] == a.sk_buff_size


def test_one_patch_pairs_differ_only_by_their_patch():
    """Both kernels of a pair: same Debian source version, same .config (sha256), same compiler; the
    patch lists differ by exactly one patch."""
    for kid in KERNELS:
        lk = labdata.LAB_KERNELS[kid]
        if lk.kind != "built" or lk.pair not in KERNELS:
            continue
        a = labdata.load(labdata.configs(kid)[0], kid)["kernel"]
        b = labdata.load(labdata.configs(lk.pair)[0], lk.pair)["kernel"]
        assert a["package_version"] == b["package_version"]
        assert a["build"]["config_sha256"] == b["build"]["config_sha256"]
        assert a["build"]["compiler"] == b["build"]["compiler"]
        pa = {p["file"] for p in a["build"]["patches"]}
        pb = {p["file"] for p in b["build"]["patches"]}
        assert len(pa ^ pb) == 1, (kid, lk.pair, pa, pb)


def test_the_2e4ef10f5850_builds_are_modelled_by_a_profile_that_differs_only_there():
    """LAB_KERNELS models 5.10 + 2e4ef10f5850 with the 5.11 tables: they must differ from 5.10.223's only in
    NETIF_F_GSO_SOFTWARE (+GSO_UDP_L4, +GSO_FRAGLIST, the patch) and not at all in GRO."""
    nf = load_table("netdev_features")
    for suffix in ("", ".ethtool", ".masks", ".skb_gso"):
        a, b = nf[f"5.10.223{suffix}"].values, nf[f"5.11{suffix}"].values
        diff = {key for key in set(a) | set(b) if a.get(key) != b.get(key)}
        assert diff == ({"GSO_SOFTWARE"} if suffix == ".masks" else set())
    assert set(features.mask("GSO_SOFTWARE", "5.11").names) - set(features.mask("GSO_SOFTWARE", "5.10.223").names) \
        == {"GSO_UDP_L4", "GSO_FRAGLIST"}
    g = load_table("gro")
    assert g["5.10.223"].values == g["5.11"].values
    assert labdata.rule("5.10-2e4ef10f5850", "udp_gso_list_nat_fix") is True


# --------------------------------------------------------------------------------------------------
# receive path

@pytest.mark.parametrize("kernel,name", RX_CASES)
def test_every_datagram_was_received_once_in_order(kernel, name):
    doc = labdata.load(name, kernel)
    sent = doc["rx"]["payload_sizes_sent"]
    pkts = doc["rx"]["packets"]
    assert len(pkts) == len(sent), "one napi_gro_receive on eth1 per datagram sent"
    for payload, pkt in zip(sent, pkts):
        assert pkt["frame_len"] == rx.frame_len_for(payload, l4="udp", ip=4)


@pytest.mark.parametrize("kernel,name", RX_CASES)
def test_receive_mode_is_what_the_config_selects(kernel, name):
    doc = labdata.load(name, kernel)
    mode = labdata.mode(doc)
    want = {"small": "small", "big": "big", "big_mtu9000": "big"}.get(name, "mergeable")
    assert mode == want
    for pkt in doc["rx"]["packets"]:
        if mode == "small":
            assert "page_to_skb" not in pkt and pkt["alloc"] == "build_skb"
        elif mode == "big":
            # drivers/net/virtio_net.c receive_big: page_to_skb(..., PAGE_SIZE, ...) (docs/kernel/rx.md#a1)
            assert pkt["page_to_skb"]["truesize"] == 4096  # receive_big passes PAGE_SIZE
        else:
            assert pkt["page_to_skb"]["headroom"] == 0  # no XDP


@pytest.mark.parametrize("kernel,name", RX_CASES)
def test_path_truesize_and_frags_per_packet_match_the_model(kernel, name):
    doc = labdata.load(name, kernel)
    bad = []
    for i, (payload, pkt) in enumerate(zip(doc["rx"]["payload_sizes_sent"], doc["rx"]["packets"])):
        r = labdata.model_for_packet(doc, pkt, kernel)
        real = (pkt.get("path", "build_skb"), pkt["gro"]["truesize"], pkt["gro"]["nr_frags"],
                pkt["gro"]["len"] + ETH_HLEN, pkt["gro"]["data_len"])
        data_len = r.skb.data_len
        if pkt["gro"].get("ip_summed") == 3:
            # The sending guest's CHECKSUM_PARTIAL arrives as VIRTIO_NET_HDR_F_NEEDS_CSUM (tap vnet header):
            # receive_buf -> virtio_net_hdr_to_skb pskb_may_pull()s up to csum_start + csum_offset + 2 =
            # 14 + 20 + 6 + 2 = 42 bytes (Ethernet + IPv4 + UDP) into the head before napi_gro_receive.
            data_len = r.skb.len - max(r.skb.headlen, labdata.UDP4_CSUM_PULL)
        model = (r.path, r.skb.truesize, r.skb.nr_frags, r.skb.len, data_len)
        if real != model:
            bad.append(f"packet {i} payload {payload} frame {pkt['frame_len']} buffer truesize "
                       f"{pkt.get('page_to_skb', {}).get('truesize')}: real (path, truesize, nr_frags, len, data_len) "
                       f"{real} model {model}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kernel,name", [(k, c) for k, c in RX_CASES
                                         if labdata.mode(labdata.load(c, k)) != "small"])
def test_page_to_skb_return_matches_the_model(kernel, name):
    """skb->len/data_len/truesize/head_frag as page_to_skb returned it (kretprobe), first buffer only."""
    doc = labdata.load(name, kernel)
    hl = labdata.hdr_len(doc)
    k = labdata.model_kernel(kernel)
    for pkt in doc["rx"]["packets"]:
        p2s, ret = pkt["page_to_skb"], pkt["page_to_skb_ret"]
        first = p2s["len"] - hl
        if labdata.mode(doc) == "mergeable":
            r = rx.page_to_skb(first, p2s["truesize"], mode="mergeable", hdr_len=hl, kernel=k)
        else:
            r = labdata.model_for_packet(doc, pkt, kernel)
        assert (ret["len"], ret["data_len"], ret["truesize"], bool(ret["head_frag"])) == (
            r.skb.len, r.skb.data_len, r.skb.truesize, r.skb.head_frag), (pkt, r.reason)


@pytest.mark.parametrize("kernel", [k for k, c in RX_CASES if c == "mergeable"])
def test_mergeable_boundaries_at_the_ewma_floor(kernel):
    """86/87 and 1162/1163 bytes of UDP payload: the GOOD_COPY_LEN and tailroom edges with 1536-byte buffers
    on kernels with page_to_skb's build_skb branch (docs/kernel/rx.md#a5); the copy path at every size without it."""
    rows = {(r.payload, r.buf_truesize): r for r in labdata.rx_rows("mergeable", kernel)}
    k = labdata.model_kernel(kernel)
    if k.rule("page_to_skb") == "build_skb":
        assert rows[(86, 1536)].real_path == "copy" and rows[(87, 1536)].real_path == "build_skb"
        assert rows[(1162, 1536)].real_path == "build_skb" and rows[(1163, 1536)].real_path == "copy+frag"
    else:
        assert {r.real_path for r in rows.values()} <= {"copy", "copy+frag"}
    for payload in (86, 87, 1162, 1163):
        model = rx.receive(payload, mode="mergeable", kernel=k)  # fresh frag, EWMA floor: 1536-byte buffers
        assert model.path == rows[(payload, 1536)].real_path


@pytest.mark.parametrize("kernel", [k for k, c in RX_CASES if c == "mergeable"])
def test_mergeable_buffer_carving_matches_the_model(kernel):
    """add_recvbuf_mergeable: the (offset, truesize) of every buffer the real driver used lies on the model's
    carve at the EWMA floor: of a 32 KiB page frag up to 6.18 (20 x 1536, then 1536 + the 512-byte hole = 2048),
    of an order-0 page_pool page on 7.x (1536, then 1536 + the page's rest = 2560: page_pool_alloc_netmem)."""
    doc = labdata.load("mergeable", kernel)
    k, arch = resolve(labdata.model_kernel(kernel), "x86_64")
    frag = rx.rx_page_allocator(k, arch)
    carve = set()
    for _ in range(21):
        b = rx.carve_mergeable_buffer(frag, 0, min_buf_len=rx.mergeable_min_buf_len(big_packets=True), hdr_len=12,
                                      xdp=False, k=k, a=arch)
        carve.add((b.offset % frag.size, b.truesize))
    seen = {(p["page_to_skb"]["offset"] % frag.size, p["page_to_skb"]["truesize"]) for p in doc["rx"]["packets"]}
    assert seen <= carve, sorted(seen - carve)
    hole = (1536, 2560) if k.rule("rx_page_pool") else (30720, 2048)
    assert hole in seen, "the sweep crosses a page end, so a hole buffer was measured"
    sysfs = doc["guest"]["mergeable_rx_buffer_size_after"]
    assert sysfs == [str(rx.get_mergeable_buf_len(0, min_buf_len=1518, hdr_len=12, room=0, a=arch))]


def test_debian_5_10_is_not_mainline_5_10():
    """Debian's 5.10.223 carries 3226b158e67c (kmalloc'ed napi_alloc_skb heads, head_frag 0) and 0f6925b3e8da
    (copy ETH_HLEN, not 128 bytes): page_to_skb's returned skb shows both, so the mainline 5.10 profile
    mispredicts head_frag on every packet and data_len on every frame longer than the copy, while the
    5.10.223 profile (data/kernels.toml) gets every packet right."""
    if "5.10" not in KERNELS:
        pytest.skip("Debian 5.10 not shipped")
    doc = labdata.load("mergeable", "5.10")

    def returned(profile):
        k = _profile(profile)
        out = []
        for pkt in doc["rx"]["packets"]:
            p2s = pkt["page_to_skb"]
            r = rx.page_to_skb(p2s["len"] - 12, p2s["truesize"], mode="mergeable", hdr_len=12, kernel=k)
            out.append((r.skb.len, r.skb.data_len, r.skb.truesize, r.skb.head_frag))
        return out

    real = [(p["page_to_skb_ret"]["len"], p["page_to_skb_ret"]["data_len"], p["page_to_skb_ret"]["truesize"],
             bool(p["page_to_skb_ret"]["head_frag"])) for p in doc["rx"]["packets"]]
    assert returned("5.10.223") == real
    mainline = returned("5.10")
    assert all(m[3] != r[3] for m, r in zip(mainline, real)), "head_frag: page-frag head in v5.10, kmalloc in 5.10.223"
    assert any(m[1] != r[1] for m, r in zip(mainline, real)), "data_len: 128-byte copy in v5.10, ETH_HLEN in 5.10.223"


def test_debian_6_12_still_has_the_1k_napi_page_frag():
    """Debian's 6.12.95 napi_alloc_skb still takes small heads from the 1 KiB page frag (NAPI_HAS_SMALL_PAGE_FRAG;
    the revert of dbae2b062824 came in 6.14): a fully copied small frame is truesize 1280 there, as the 6.12
    profile says, not the skb_small_head_cache size of the 6.18 profile."""
    if "6.12" not in KERNELS:
        pytest.skip("Debian 6.12 not shipped")
    doc = labdata.load("mergeable", "6.12")
    copies = [p for p in doc["rx"]["packets"] if p["path"] == "copy"]
    assert copies and {p["gro"]["truesize"] for p in copies} == {1280}
    for prof, ok in (("6.12", True), ("6.18", False)):
        model = {labdata.model_for_packet(doc, p, _profile(prof)).skb.truesize for p in copies}
        assert (model == {1280}) is ok, (prof, model)


def test_seed_1_before_and_after_on_one_base():
    """6.1-plain and 6.1-no-build-skb: the pair differs in page_to_skb only, so a 1014-byte datagram in a
    1536-byte buffer is build_skb (0 frags) on one and the ETH_HLEN copy (1 frag) on the other (A.5)."""
    if not {"6.1-plain", "6.1-no-build-skb"} <= set(KERNELS):
        pytest.skip("the 6.1 pair is not shipped")
    rows = {r.payload: r for r in labdata.rx_pair_rows((86, 1014, 1472))}
    assert (rows[1014].after.real_path, rows[1014].after.real_nr_frags) == ("build_skb", 0)
    assert (rows[1014].before.real_path, rows[1014].before.real_nr_frags) == ("copy+frag", 1)
    assert rows[86].before.real_path == rows[86].after.real_path == "copy"


# --------------------------------------------------------------------------------------------------
# ethtool -k of vlan / macvlan / bridge over the virtio NIC, step by step

def _apply(ns, dev, args):
    """ethtool -K dev args on the model; returns ethtool's exit code.

    Legacy names (tx, sg, tso, gso, ...) expand to every feature they match; the kernel ignores requests for
    features outside hw_features (ethnl_set_features), so those are not passed on. ethtool fails ("Could not
    change any device features", exit 1) when a requested value was not reached and nothing changed."""
    d = ns[dev]
    before = d.ethtool_k()
    req = {f: on for f, on in ethtool.parse_K_args(args, kernel=ns.kernel) if f in before}
    d.ethtool_K({f: on for f, on in req.items() if not before[f].fixed})
    after = d.ethtool_k()
    missed = any(after[f].on != on for f, on in req.items())
    changed = any(after[f].on != before[f].on for f in after)
    return 1 if missed and not changed else 0


def _replay(doc, phase, kv):
    """The guest's sequence in the model: yields (step, namespace) after each step of ``phase``."""
    ns = Namespace(kernel=kv)
    eth0 = ns.nic("eth0", driver="virtio_net", **labdata.probe_params(doc, "eth0"))
    steps = doc["features"]["ethtool_K"]
    if phase == "vlan_macvlan":
        ns.vlan("eth0.10", lower=eth0, vid=10)
        ns.macvlan("mv0", lower=eth0)
    else:
        # the bridge phase follows the vlan_macvlan steps and the reset on the same eth0 (uppers deleted)
        for s in steps:
            if s["phase"] == "vlan_macvlan":
                _apply(ns, s["dev"], s["command"].split(None, 3)[3])
        _apply(ns, "eth0", doc["features"]["reset"])
        ns.set_master(eth0, ns.bridge("br0"))
    yield 0, ns, None
    for s in (s for s in steps if s["phase"] == phase):
        args = s["command"].split(None, 3)[3]
        yield s["step"], ns, (args, s["rc"], _apply(ns, s["dev"], args))


@functools.cache
def _feature_diffs(kernel, name, phase):
    """Every disagreement of the model with the lab's ``ethtool -k`` / ``ethtool -K`` in one phase, as
    ((lab kernel, configuration, phase, device, feature), message). A file that keeps ethtool's [requested ...]
    (labdata.requests_recorded) is compared as printed; an older one on (on, fixed), all it recorded."""
    doc = labdata.load(name, kernel)
    whole = labdata.requests_recorded(doc)
    diffs = []
    for step, ns, ran in _replay(doc, phase, labdata.model_profile(kernel)):
        if ran and (ran[1] == 0) != (ran[2] == 0):
            words = ethtool.parse_K_args(ran[0], kernel=ns.kernel)
            diffs.append(((kernel, name, phase, "eth0", words[0][0] if words else ran[0]),
                          f"{phase}.{step} 'ethtool -K eth0 {ran[0]}': real exit {ran[1]}, model {ran[2]}"))
        for rec in (r for r in doc["features"]["ethtool_k"] if r["phase"] == phase and r["step"] == step
                    and r["dev"] in ns.devices):  # not the lab's: sit0 of a kernel built with IPv6 tunnels
            dev = rec["dev"]
            real = labdata.ethtool_k(doc, phase, step, dev)
            model = ns[dev].ethtool_k()
            # both ways: a lab record that lost lines fails as surely as a model that lacks a feature
            assert set(real) == set(model), (f"{phase}.{step} {dev}: features the model lacks: "
                                             f"{sorted(set(real) - set(model))}; features the lab record lacks: "
                                             f"{sorted(set(model) - set(real))}")
            for feat, state in model.items():
                # as printed, [requested on|off] included, where the file kept it; else the (on, fixed) it kept
                same = (state.same_printed(real[feat]) if whole
                        else (state.on, state.fixed) == (real[feat].on, real[feat].fixed))
                if not same:
                    diffs.append(((kernel, name, phase, dev, feat),
                                  f"{phase}.{step} {dev} {feat}: real {str(real[feat])!r} model {str(state)!r}"))
    return tuple(diffs)


def _feature_cases():
    out = []
    for kernel, name in FEATURE_CASES:
        doc = labdata.load(name, kernel)
        for phase in sorted({r["phase"] for r in doc["features"]["ethtool_k"]}):
            out.append((kernel, name, phase))
    return out


# The hub backend has no vnet header, so no guest offloads, yet CTRL_GUEST_OFFLOADS is negotiated: GRO_HW is in
# hw_features (drivers/net/virtio_net.c virtnet_probe, Debian 5.10.223 / 6.1.192 / 6.12.95), but
# 'ethtool -K eth0 rx-gro-hw on' fails (exit 1) and it stays off: virtnet_set_features -> virtnet_set_guest_offloads
# sends VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, which QEMU answers with VIRTIO_NET_ERR without a vnet header.
HUB_GRO_HW = ("QEMU's answer, not a kernel rule: hw/net/virtio-net.c virtio_net_handle_offloads refuses "
              "GUEST_OFFLOADS_SET without a vnet header, so rx-gro-hw stays off where the model turns it on")

# Disagreements between the model and a lab kernel, each keyed by (lab kernel, configuration, phase, device,
# feature): test_ethtool_k_matches_the_model excuses exactly these, and test_known_ethtool_k_disagreement expects
# each to fail (strict xfail), so a key the model starts to match, or that the data no longer shows, fails too.
KNOWN_FEATURE_DISAGREEMENTS = {
    (kernel, "hub_mergeable", phase, "eth0", "rx-gro-hw"): HUB_GRO_HW
    for kernel in ("5.10", "6.1", "6.12") for phase in ("bridge", "vlan_macvlan")
}


@pytest.mark.parametrize("kernel,name,phase", _feature_cases())
def test_ethtool_k_matches_the_model(kernel, name, phase):
    """Every feature of every device at every step, and ethtool -K's exit code, as the lab measured them
    (data/lab/<kernel>/<config>.json), except the keyed disagreements above."""
    unknown = [msg for key, msg in _feature_diffs(kernel, name, phase) if key not in KNOWN_FEATURE_DISAGREEMENTS]
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("key", [
    pytest.param(key, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=why), id="/".join(key))
    for key, why in KNOWN_FEATURE_DISAGREEMENTS.items()
])
def test_known_ethtool_k_disagreement(key):
    diffs = [msg for k, msg in _feature_diffs(*key[:3]) if k == key]
    assert not diffs, "\n".join(diffs)


def test_uso_follows_checksum_offload_as_measured_on_612():
    """The lab's one kernel-rule finding: after 'ethtool -K eth0 tx off' Debian 6.12.95 turned the VLAN's
    tx-udp-segmentation off and 6.1.192 kept it on (data/lab/<kernel>/mergeable.json, step vlan_macvlan.2);
    net/core/dev.c netdev_fix_features has 'Dropping USO feature since no CSUM feature' (2b2bc3bab158,
    v6.11) in Debian's 6.12 source and not in 6.1's: the kernel rule uso_needs_csum."""
    for kernel, real in (("6.12", "off"), ("6.1", "on")):
        if kernel not in KERNELS:
            pytest.skip(f"Debian {kernel} not shipped")
        doc = labdata.load("mergeable", kernel)
        step = next(s for s in doc["features"]["ethtool_K"] if s["command"].endswith("eth0 tx off"))
        assert str(labdata.ethtool_k(doc, step["phase"], step["step"], "eth0.10")["tx-udp-segmentation"]) == real
        for n, ns, _ran in _replay(doc, step["phase"], labdata.model_profile(kernel)):
            if n == step["step"]:  # the replay goes on mutating the namespace: read it at this step
                assert ns["eth0.10"].ethtool_k()["tx-udp-segmentation"].on is (real == "on")
                break
        else:
            raise AssertionError(f"step {step['step']} not replayed")


@pytest.mark.parametrize("kernel", [k for k, c in CASES if c == "hub_mergeable" and k.startswith("7.")])
def test_7x_gro_hw_is_fixed_off_without_guest_offloads(kernel):
    """Debian 7.x virtnet_probe gives GRO_HW to hw_features only with a GUEST_OFFLOAD_GRO_HW_MASK offload
    negotiated (rule virtio_gro_hw_needs_guest_gso): on the hub (no vnet header, no guest offloads) the kernel
    shows rx-gro-hw 'off [fixed]' (data/lab/7.x/hub_mergeable.json) and the model agrees at every step, so the
    known hub disagreement of 5.10..6.12 (which keep GRO_HW changeable and then fail to set it) does not arise."""
    doc = labdata.load("hub_mergeable", kernel)
    assert str(labdata.ethtool_k(doc, "vlan_macvlan", 0, "eth0")["rx-gro-hw"]) == "off [fixed]"
    for phase in ("vlan_macvlan", "bridge"):
        assert not [m for key, m in _feature_diffs(kernel, "hub_mergeable", phase) if key[-1] == "rx-gro-hw"]


# --------------------------------------------------------------------------------------------------
# where UDP GSO (UDP_SEGMENT) is segmented

def _gso_cases():
    return [(k, name, c["route_dev"]) for k, name in GSO_CASES for c in labdata.load(name, k)["gso"]["cases"]]


@pytest.mark.parametrize("kernel,name,route_dev", _gso_cases())
def test_udp_gso_segmentation_point_matches_the_model(kernel, name, route_dev):
    doc = labdata.load(name, kernel)
    case = next(c for c in doc["gso"]["cases"] if c["route_dev"] == route_dev)
    gso_size = doc["gso"]["gso_size"]
    payload = doc["gso"]["payloads"][0]
    ns, res = labdata.gso_model(doc, route_dev, kernel)
    sender_failed = any(line.startswith("udptool") and "failed=0" not in line for line in case["sender"])
    csum = {"HW_CSUM", "IP_CSUM"} & set(ns[route_dev].features)
    # udp_send_skb refuses a UDP_SEGMENT datagram with -EIO unless it is CHECKSUM_PARTIAL, which
    # __ip_append_data only picks when the route device has NETIF_F_HW_CSUM or NETIF_F_IP_CSUM -- until
    # 10154dbded6d (v6.11); the kernel rule udp_segment_needs_csum_offload says which.
    refused = labdata.rule(kernel, "udp_segment_needs_csum_offload") and not csum
    if sender_failed:
        assert any("Input/output error" in line for line in case["sender"])
        assert not case["segmented_at"]
        assert refused, f"the model gives {route_dev} {sorted(csum)}, the real kernel refused with EIO"
        return
    assert not refused, f"the real kernel sent UDP_SEGMENT via {route_dev}; the model would refuse it (EIO)"
    assert case["segmented_at"] == [res.segmented_at or "nowhere"], res.describe()
    # the segmenting device's driver got gso_segs segments per datagram; the devices above it got one skb
    segs = -(-payload // gso_size)
    big = [x for x in case["start_xmit"] if x["gso_segs"]]
    assert all(x["gso_segs"] == segs for x in big)
    assert {x["dev"] for x in big} == {h.name for h in res.hops if h.name != res.segmented_at
                                       and res.hops.index(h) < [g.name for g in res.hops].index(res.segmented_at)}


# --------------------------------------------------------------------------------------------------
# the NAT router: rx-gro-list + masquerade + VLAN egress, datagrams counted at the receiving socket

@pytest.mark.parametrize("kernel", ROUTER_KERNELS)
def test_router_prediction_was_made_by_todays_model(kernel):
    """The prediction stored before the run is what the model (gro for N, netdev/xmit for where, the kernel
    rule for what the segments carry) still predicts."""
    doc = labdata.load("router", kernel)
    r = doc["router"]
    assert doc["prediction"] == labdata.router_prediction(kernel, r["payload"], r["count"]).as_dict()


@pytest.mark.parametrize("kernel", ["5.10", "6.1", "6.12"])
def test_router_prediction_follows_the_payload_sent(kernel):
    """The GRO skb's gso_size is the datagram size the lab sent, not a fixed 1472: 1000-byte datagrams make
    GRO skbs of 64 packets (net/ipv4/udp_offload.c:530 UDP_GRO_CNT_MAX 64 in Debian 6.1.192; the 64 KiB cap
    would allow 65), and 64 x 1472 could not even be one skb."""
    pred = labdata.router_prediction(kernel, payload=1000)
    assert pred.payload == 1000 and pred.packets_per_gro_skb == 64
    assert [c.packets_per_gro_skb for c in pred.cases] == [64, 64, 64]
    # Debian 5.10.223, 6.1.192 and 6.12.95 all rewrite each segment's header (udp_gso_list_nat_fix)
    assert [c.intact_per_gro_skb for c in pred.cases] == [64, 64, 64]
    with pytest.raises(ValueError, match="payload must be an int in 1..65507"):
        labdata.router_case_prediction(kernel, "vlan_veth", 44, payload=0)
    with pytest.raises(ValueError, match="payload must be an int in 1..65507"):
        labdata.router_case_prediction(kernel, "vlan_veth", 44, payload=65508)


def _router_cases():
    return [(k, c["case"]) for k in ROUTER_KERNELS for c in labdata.load("router", k)["router"]["cases"]]


@pytest.mark.parametrize("kernel,case", _router_cases())
def test_router_delivery_matches_the_model(kernel, case):
    """Every datagram sent reached the router; GRO built what the trace says; the device that segmented and
    the number of datagrams that arrived with the translated address and port are what the model says for
    those GRO skbs (1 per GRO skb without the NAT fix, all with it)."""
    row = next(r for r in labdata.router_rows([kernel]) if r.case == case)
    doc = labdata.load("router", kernel)
    c = next(x for x in doc["router"]["cases"] if x["case"] == case)
    # What the sender's own qdisc dropped (fq_codel's CoDel under TCG, `tc -s qdisc`, recorded since the 7.x runs)
    # never reaches the router: not a router or model question.
    q = c.get("sender_qdisc") or {}
    dropped = q["after"]["dropped"] - q["before"]["dropped"] if q.get("after") and q.get("before") else 0
    assert row.sent == doc["router"]["count"] and row.forwarded == row.sent - dropped
    segs = labdata.gro_skb_segs(c, doc["router"]["payload"])
    assert sum(segs) == row.forwarded, "every packet eth1 received went up in exactly one GRO skb"
    assert max(segs) <= doc["prediction"]["packets_per_gro_skb"], "no GRO skb beyond the model's N"
    assert row.segmented_at == row.model_segmented_at
    assert row.intact == row.predicted_intact
    received = c["receiver"]["received"]
    assert received == row.intact + row.other_source + c["receiver"]["bad_payload"]


# --------------------------------------------------------------------------------------------------
# seed 1's rate under TCG: instructions per received packet on the receiving vCPU

def test_build_skb_executes_fewer_instructions_per_packet():
    """fb32856b16ad removes work per packet (napi_alloc_skb head, page frag, GRO header pull, head free): in
    every TCG-counted run the copy path executed more guest instructions per received 1000-byte packet than
    any run of the build_skb path, and the receiver was saturated (frames lost) in all of them."""
    rows = {(r.kernel, r.config): r for r in labdata.rate_rows()}
    before, after = rows.get(("6.1-no-build-skb", "insn")), rows.get(("6.1-plain", "insn"))
    if before is None or after is None:
        pytest.skip("the 6.1 pair's insn runs are not shipped")
    assert before.insn_per_packet_runs and after.insn_per_packet_runs
    assert min(before.insn_per_packet_runs) > max(after.insn_per_packet_runs)
    assert all(loss > 0 for loss in before.rx_loss + after.rx_loss)


def test_the_lab_reads_debian_7x_split_image_packages():
    """lab/kernels.py: Debian 7.x's linux-image-<abi> only depends on linux-binary- (vmlinuz), linux-modules- and
    linux-base-<abi> (Depends of linux-image-7.2.12+deb14-amd64 7.2.12-1 in forky, as apt-cache shows it); the
    5.10..6.12 images hold their files themselves (their Depends name linux-base, the unversioned helper)."""
    from lab import kernels

    forky = ("dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, linux-base-7.2.12+deb14-amd64 "
             "(= 7.2.12-1), linux-binary-7.2.12+deb14-amd64 (= 7.2.12-1), linux-modules-7.2.12+deb14-amd64 "
             "(= 7.2.12-1)")
    assert kernels.split_packages(forky, "7.2.12+deb14-amd64") == [
        "linux-binary-7.2.12+deb14-amd64", "linux-modules-7.2.12+deb14-amd64", "linux-base-7.2.12+deb14-amd64"]
    assert kernels.split_packages("kmod, linux-base (>= 4.3~), initramfs-tools (>= 0.120+deb8u2) | "
                                  "linux-initramfs-tool", "6.12.95+deb12-amd64") == []
    with pytest.raises(SystemExit, match="expected all of"):
        kernels.split_packages("linux-binary-7.2.12+deb14-amd64 (= 7.2.12-1)", "7.2.12+deb14-amd64")


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k.startswith("7.")])
def test_7x_skb_small_head_cache_is_what_the_profile_says(kernel):
    """/sys/kernel/slab/skbuff_small_head/object_size read in the guest = SKB_SMALL_HEAD_CACHE_SIZE the profile's
    small_head_request gives (704 with Debian's config: GRO_MAX_HEAD_PAD 368)."""
    k, a = resolve(labdata.model_kernel(kernel), "x86_64")
    seen = {labdata.load(c, kernel)["guest"].get("slab_object_size", {}).get("skbuff_small_head")
            for c in labdata.configs(kernel)} - {None}
    assert seen == {rx.small_head_cache_size(k, a)}
