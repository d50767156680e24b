"""vnetlab.ethtool: ethtool's legacy names, `ethtool -k` text and `ethtool -K` words, checked against ethtool.

Evidence: ethtool's own source (common.c off_flag_def, netlink/features.c dump_features / fill_legacy_flag,
ethtool 6.1 as installed here), the `ethtool -k` samples in tests/data (captured with ethtool 6.1 on a 6.18
kernel, see tests/test_live.py), and the installed ethtool program itself on the running kernel.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vnetlab import ethtool, live
from vnetlab.errors import UnknownFeatureError

DATA = Path(__file__).parent / "data"
SAMPLES = ("veth", "veth_sg_off", "macvlan_on_sg_off_veth", "bridge", "lo")


def sample(name: str) -> str:
    return (DATA / f"ethtool_k_{name}_6.18.txt").read_text()


def test_legacy_table_is_ethtools_off_flag_def():
    # ethtool common.c off_flag_def (ethtool 5.x..6.x), short name / long name / kernel-name pattern, in order.
    assert [(f.short, f.long, f.pattern) for f in ethtool.LEGACY_FLAGS] == [
        ("rx", "rx-checksumming", "rx-checksum"),
        ("tx", "tx-checksumming", "tx-checksum-*"),
        ("sg", "scatter-gather", "tx-scatter-gather*"),
        ("tso", "tcp-segmentation-offload", "tx-tcp*-segmentation"),
        ("ufo", "udp-fragmentation-offload", "tx-udp-fragmentation"),
        ("gso", "generic-segmentation-offload", "tx-generic-segmentation"),
        ("gro", "generic-receive-offload", "rx-gro"),
        ("lro", "large-receive-offload", "rx-lro"),
        ("rxvlan", "rx-vlan-offload", "rx-vlan-hw-parse"),
        ("txvlan", "tx-vlan-offload", "tx-vlan-hw-insert"),
        ("ntuple", "ntuple-filters", "rx-ntuple-filter"),
        ("rxhash", "receive-hashing", "rx-hashing"),
    ]


def test_pattern_match_is_flag_pattern_match():
    # netlink/features.c flag_pattern_match: prefix and suffix around the one '*', name at least pattern-1 long
    assert ethtool.pattern_match("tx-tcp6-segmentation", "tx-tcp*-segmentation")
    assert ethtool.pattern_match("tx-tcp-segmentation", "tx-tcp*-segmentation")
    assert not ethtool.pattern_match("tx-udp-segmentation", "tx-tcp*-segmentation")
    assert ethtool.pattern_match("tx-scatter-gather-fraglist", "tx-scatter-gather*")
    assert not ethtool.pattern_match("rx-gro-list", "rx-gro")


@pytest.mark.parametrize("name", SAMPLES)
def test_format_k_reproduces_ethtool_output(name):
    # the samples are the real `ethtool -k` output; parsing then printing must give the same bytes back
    text = sample(name)
    parsed = ethtool.parse_k(text)
    assert ethtool.format_k(parsed.states, parsed.device, kernel="6.18") == text


def test_parse_k_names_every_kernel_feature_once():
    f = ethtool.parse_k(sample("veth"))
    assert f.device == "vc"
    # 64 feature bits in 6.18 minus the four unnamed slots (2, 12, 13, 32): 60 names (BTF 6.18, facts D.1).
    assert len(f) == 60
    for legacy in ("tx-checksumming", "scatter-gather", "tcp-segmentation-offload", "generic-receive-offload"):
        assert legacy not in f
    assert f["rx-gro"].active is False and f["rx-gro"].changeable  # veth: GRO off by default (5.13+)
    assert f["tx-generic-segmentation"].active  # "generic-segmentation-offload: on"
    assert f["rx-checksum"].active  # "rx-checksumming: on [fixed]"
    with pytest.raises(UnknownFeatureError, match="no-such"):
        f["no-such"]


def test_parse_k_requested_notes_give_wanted():
    f = ethtool.parse_k(sample("veth_sg_off"))
    tso = f["tx-tcp-segmentation"]
    # the sample line reads "tx-tcp-segmentation: off [requested on]"
    assert (tso.active, tso.wanted, tso.fixed) == (False, True, False)
    assert str(tso) == "off [requested on]"
    assert not f["tx-scatter-gather"].active and not f["tx-scatter-gather"].wanted
    # netdev_fix_features drops ALL_TSO and GSO without SG, but the wanted bits stay on
    gso = f["tx-generic-segmentation"]
    assert (gso.active, gso.wanted) == (False, True)
    # AccECN GSO is not in ALL_TSO, so it survives SG off in 6.18
    assert f["tx-tcp-accecn-segmentation"].active
    assert f["tx-udp-segmentation"].active is False and f["tx-udp-segmentation"].wanted is False


def test_parse_veth_gso_software_bits_are_on_and_changeable():
    f = ethtool.parse_k(sample("veth"))
    for name in ("tx-udp-segmentation", "tx-gso-list", "tx-tcp-segmentation", "tx-sctp-segmentation",
                 "tx-scatter-gather-fraglist"):
        assert f[name].active and not f[name].fixed, name
    # sample line "tx-checksum-ipv4: off [fixed]"; "vlan-challenged: off [fixed]"
    assert f["tx-checksum-ipv4"] == ethtool.FeatureState(False, True)
    assert f["vlan-challenged"] == (False, True)


def test_parse_macvlan_and_bridge_fixed_and_requested():
    mv = ethtool.parse_k(sample("macvlan_on_sg_off_veth"))
    assert mv.device == "mv"
    # sample lines "tx-udp-segmentation: on [fixed]", "large-receive-offload: off"
    assert mv["tx-udp-segmentation"] == (True, True)
    assert mv["rx-lro"] == (False, False)
    br = ethtool.parse_k(sample("bridge"))
    assert str(br["tx-gso-robust"]) == "off [requested on]"  # the sample's line, as printed
    assert br["rx-gro"].active


def test_parse_round_trips_the_value_text():
    text = sample("macvlan_on_sg_off_veth")
    f = ethtool.parse_k(text)
    shown = {}
    for line in text.splitlines()[1:]:
        name, value = line.strip().split(": ", 1)
        shown[name] = value
    for name, state in f.states.items():
        assert shown[ethtool.printed_name(name, f.states)] == str(state), name


def test_expand_legacy_names_over_a_devices_strings():
    names = ethtool.parse_k(sample("veth")).states
    assert ethtool.expand("sg", names) == ("tx-scatter-gather", "tx-scatter-gather-fraglist")
    assert ethtool.expand("tso", names) == (
        "tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
        "tx-tcp6-segmentation", "tx-tcp-accecn-segmentation",
    )
    assert ethtool.expand("generic-receive-offload", names) == ("rx-gro",)
    assert ethtool.expand("tx-udp-segmentation", names) == ("tx-udp-segmentation",)


def test_feature_state_prints_as_dump_feature():
    # netlink/features.c dump_feature (ethtool 6.x): "[fixed]" when not in hw or in nochange, tested before the
    # request, so a fixed feature never shows one; else "[requested on|off]" when wanted != active.
    S = ethtool.FeatureState
    assert [str(S(on, fixed, req)) for on, fixed, req in (
        (True, False, True), (False, False, False), (True, True, False), (False, True, True),
        (False, False, True), (True, False, False))] == [
        "on", "off", "on [fixed]", "off [fixed]", "off [requested on]", "on [requested off]"]
    for text in ("on", "off", "on [fixed]", "off [fixed]", "off [requested on]", "on [requested off]"):
        assert str(S.parse(text)) == text
        assert eval(repr(S.parse(text)), {"FeatureState": S}) == S.parse(text)


def test_feature_state_is_the_contracts_on_fixed_pair():
    # contract.md: ethtool_k() maps each feature name to (on, fixed); the state unpacks, indexes and compares so
    S = ethtool.FeatureState
    state = S.parse("off [requested on]")
    on, fixed = state
    assert (on, fixed) == (False, False) and state[0] is False and state[1] is False and len(state) == 2
    assert state == (False, False) and (False, False) == state and state != (False, True)
    assert hash(state) == hash((False, False))
    # == is that pair for two states as well (else state == (False, False) == "off" but state != "off"); what
    # ethtool prints, the request included where it is shown, is same_printed (or str)
    assert state == S.parse("off") and not state.same_printed(S.parse("off")) and str(state) != "off"
    assert S.parse("off [fixed]").same_printed(S(False, True, True))  # dump_feature shows no request when fixed
    assert (state.active, state.wanted, state.changeable) == (False, True, True)
    assert {S.parse("on"): 1}[(True, False)] == 1  # a dict keyed by states answers tuples
    with pytest.raises(AttributeError):
        state.on = True  # immutable, as the tuple it stands for


_STATE_TEXTS = ("on", "off", "on [fixed]", "off [fixed]", "off [requested on]", "on [requested off]")
# what a FeatureState meets in a comparison: states, the tuples the contract compares them with (and other
# tuples, ints standing for bools among them), bare bools and the printed text
_COMPARED = st.one_of(
    st.sampled_from(_STATE_TEXTS).map(ethtool.FeatureState.parse),
    st.builds(ethtool.FeatureState, st.booleans(), st.booleans(), st.none() | st.booleans()),
    st.lists(st.booleans() | st.integers(0, 1), max_size=3).map(tuple),
    st.booleans(),
    st.sampled_from(_STATE_TEXTS),
)
# every middle term a comparison can pass through: the six states, every tuple of up to three bools, the pairs
# written with ints, the bools and the texts
_MIDDLES = ([ethtool.FeatureState.parse(t) for t in _STATE_TEXTS]
            + [tuple(bits) for n in range(4) for bits in itertools.product((False, True), repeat=n)]
            + [(int(on), int(fixed)) for on in (False, True) for fixed in (False, True)]
            + [False, True, *_STATE_TEXTS])


@settings(max_examples=500, deadline=None)
@given(_COMPARED, _COMPARED)
def test_feature_state_equality_is_an_equivalence_consistent_with_hash(a, c):
    assert a == a and (a == c) == (c == a) and (a != c) == (not a == c)
    if a == c:
        assert hash(a) == hash(c), f"{a!r} == {c!r} but they hash differently"
    for b in _MIDDLES:  # transitive through any middle term, not only the ones drawn
        if a == b and b == c:
            assert a == c, f"{a!r} == {b!r} == {c!r} but {a!r} != {c!r}"
    if isinstance(a, ethtool.FeatureState):
        assert a == tuple(a) and hash(a) == hash(tuple(a))  # the contract's (on, fixed) pair


def test_feature_state_refuses_what_ethtool_never_prints():
    for text in ("", "On", "on  [fixed]", "on [requested]", "off [weird]", "on fixed", "yes"):
        with pytest.raises(ValueError, match="dump_feature"):
            ethtool.FeatureState.parse(text)
    with pytest.raises(TypeError, match="on must be True or False"):
        ethtool.FeatureState(1, False)
    with pytest.raises(TypeError):
        ethtool.FeatureState.of((True,))


def test_model_device_ethtool_k_is_the_same_type_and_prints_as_ethtool():
    # net/8021q/vlan_dev.c vlan_dev_fix_features (6.1): the VLAN keeps what its lower's vlan_features lack in
    # wanted, so a virtio_net lower without NETIF_F_FRAGLIST leaves eth0.10 "off [requested on]" there.
    from vnetlab import netdev

    net = netdev.Namespace(kernel="6.1")
    eth0 = net.nic("eth0", driver="virtio_net")
    vlan = net.vlan("eth0.10", lower=eth0, vid=10)
    k = vlan.ethtool_k()
    assert isinstance(k, ethtool.EthtoolK) and isinstance(k["tx-udp-segmentation"], ethtool.FeatureState)
    assert str(k["tx-scatter-gather-fraglist"]) == "off [requested on]"
    assert str(eth0.ethtool_k()["tx-scatter-gather-fraglist"]) == "off [fixed]"
    text = str(k)
    assert text.startswith("Features for eth0.10:\n") and "\ttx-scatter-gather-fraglist: off [requested on]\n" in text
    assert ethtool.parse_k(text).same_printed(k)  # printing and parsing give the same states back, requests too
    assert ethtool.parse_k(text.replace("off [requested on]", "off")) == k  # (on, fixed) the same ...
    assert not ethtool.parse_k(text.replace("off [requested on]", "off")).same_printed(k)  # ... not the request


def test_parse_k_rejects_other_text():
    with pytest.raises(ValueError, match="text: line 2"):
        ethtool.parse_k("Features for x:\nnot a feature line\n")
    with pytest.raises(ValueError, match="no feature lines"):
        ethtool.parse_k("")
    with pytest.raises(ValueError, match="unknown value"):
        ethtool.parse_k("rx-gro: on [weird]\n")


def test_printed_lines_keep_what_ethtool_printed():
    # The first lines of `ethtool -k eth0` on Debian 6.1.192 (the lab's console, lab/work/runs/6.1/
    # console-mergeable.log): a one-feature flag under its long name, a summary line and its tab-indented members.
    text = ("Features for eth0:\r\nrx-checksumming: on [fixed]\r\ntx-checksumming: on\r\n"
            "\ttx-checksum-ipv4: off [fixed]\r\n\ttx-checksum-ip-generic: on\r\n"
            "tx-tcp-segmentation: off [requested on]\r\n")
    device, lines = ethtool.printed_lines(text)
    assert device == "eth0"
    assert [(x.name, x.indented, str(x.state)) for x in lines] == [
        ("rx-checksumming", False, "on [fixed]"), ("tx-checksumming", False, "on"),
        ("tx-checksum-ipv4", True, "off [fixed]"), ("tx-checksum-ip-generic", True, "on"),
        ("tx-tcp-segmentation", False, "off [requested on]")]
    states = ethtool.parse_k(text)
    assert "tx-checksumming" not in states and states["rx-checksum"].fixed
    with pytest.raises(ValueError, match="line 2"):
        ethtool.printed_lines("Features for eth0:\nkernel: oops\n")


def test_printed_names_both_ways():
    # dump_features: one-feature flags print under the long name; several-feature flags print a summary line
    assert ethtool.printed_name("rx-gro", kernel="6.1") == "generic-receive-offload"
    assert ethtool.printed_name("tx-tcp6-segmentation", kernel="6.1") == "tx-tcp6-segmentation"
    assert ethtool.printed_name("tx-udp-segmentation", kernel="6.1") == "tx-udp-segmentation"
    assert ethtool.from_printed("generic-receive-offload", kernel="6.1") == "rx-gro"
    assert ethtool.from_printed("receive-hashing", kernel="6.1") == "rx-hashing"
    assert ethtool.from_printed("tx-checksumming", kernel="6.1") is None
    assert ethtool.from_printed("tx-gso-list", kernel="6.1") == "tx-gso-list"
    printed = {"generic-receive-offload": "off", "scatter-gather": "on", "tx-scatter-gather": "on"}
    assert ethtool.normalize_printed(printed, kernel="6.1") == {"rx-gro": "off", "tx-scatter-gather": "on"}


def test_expand_per_kernel():
    # net/ethtool/common.c netdev_features_strings: tx-tcp-accecn-segmentation exists only in 6.18
    tso = ("tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation")
    assert ethtool.expand("tso", kernel="5.10") == tso
    assert ethtool.expand("tcp-segmentation-offload", kernel="6.18") == tso + ("tx-tcp-accecn-segmentation",)
    assert ethtool.expand("gro", kernel="6.1") == ("rx-gro",)
    assert ethtool.expand("generic-receive-offload", kernel="6.1") == ("rx-gro",)
    assert ethtool.expand("sg", kernel="6.1") == ("tx-scatter-gather", "tx-scatter-gather-fraglist")
    assert ethtool.expand("tx", kernel="6.1") == ("tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6",
                                                  "tx-checksum-fcoe-crc", "tx-checksum-sctp")
    # no kernel since 4.14 has a tx-udp-fragmentation string: "ufo" stands for nothing
    assert ethtool.expand("ufo", kernel="6.1") == ()
    assert ethtool.expand("rx-udp-gro-forwarding", kernel="5.12") == ("rx-udp-gro-forwarding",)
    with pytest.raises(UnknownFeatureError, match="rx-udp-gro-forwarding"):
        ethtool.expand("rx-udp-gro-forwarding", kernel="5.11")  # NETIF_F_GRO_UDP_FWD arrived in 5.12
    with pytest.raises(UnknownFeatureError):
        ethtool.expand("tx-lockless", kernel="6.18")  # LLTX became dev->lltx in 6.18


def test_parse_K_args():
    assert ethtool.parse_K_args("gro off sg on", kernel="6.1") == [
        ("rx-gro", False), ("tx-scatter-gather", True), ("tx-scatter-gather-fraglist", True)]
    with pytest.raises(ValueError, match="'gro' must be followed by 'on' or 'off'"):
        ethtool.parse_K_args("gro", kernel="6.1")
    with pytest.raises(ValueError, match="args"):
        ethtool.parse_K_args("gro maybe", kernel="6.1")


# --- the installed ethtool on the running kernel ----------------------------------------------------------

@pytest.mark.live
@pytest.mark.parametrize("flag", ethtool.LEGACY_FLAGS, ids=lambda f: f.short)
def test_every_legacy_name_sets_what_ethtool_sets(flag):
    """`ethtool -K v0 NAME off|on` with the short and the long name changes exactly the wanted bits that
    vnetlab.ethtool.expand names (within what the device can change), on a fresh veth of the running kernel."""
    cap = live.available(labs=True)
    if not cap or not shutil.which("ethtool"):
        pytest.skip(cap.reason if not cap else "the ethtool program is not installed")
    for word in (flag.short, flag.long):
        with live.Lab(tag="alias") as lab:
            v0, _ = lab.veth("v0", "v1")
            before = v0.features()
            members = ethtool.expand(word, before.states)
            for value in ("off", "on"):
                subprocess.run(["ip", "netns", "exec", lab.netns, "ethtool", "-K", "v0", word, value],
                               capture_output=True, text=True, timeout=10)
                after = v0.features()
                moved = {n for n in after if after[n].wanted != before[n].wanted}
                expect = {m for m in members if before[m].changeable and before[m].wanted != (value == "on")}
                assert moved == expect, (word, value)
                before = after


def test_public_functions_refuse_wrong_types_by_name():
    # @public names the function and the parameter (vnetlab.checks)
    from vnetlab.errors import ArgumentError

    with pytest.raises(ArgumentError, match=r"parse_k: text must be"):
        ethtool.parse_k(b"Features for x:\nrx-gro: on\n")
    with pytest.raises(ArgumentError, match=r"expand: word must be"):
        ethtool.expand(3, kernel="6.1")
    with pytest.raises(ArgumentError, match=r"FeatureState.parse: text must be"):
        ethtool.FeatureState.parse(True)


# What ethtool netlink/features.c dump_features can print: one "Features for DEV:" header; each legacy flag with
# several features as a summary line ("on" when any member is active, no note) followed by its members, tab-indented;
# a flag with one feature under its long name; a flag with none as "LONG: off" alone; every other feature once under
# its kernel name. Text outside that shape is not ethtool's, and parse_k refuses it rather than guess.
_PLAIN = "Features for x:\nscatter-gather: on\n\ttx-scatter-gather: on\n\ttx-scatter-gather-fraglist: off\n"


@pytest.mark.parametrize("text, message", [
    ("Features for x:\nrx-gro-hw: on\n\ttx-gso-list: on\n", "not a legacy long name"),
    ("Features for x:\n\ttx-scatter-gather: on\n", "does not follow a legacy summary"),
    ("Features for x:\nscatter-gather: on\n\trx-gro-hw: on\n", "not one of its features"),
    ("Features for x:\nrx-gro-hw: on\nrx-gro-hw: off\n", "printed twice"),
    (_PLAIN + _PLAIN, "second device"),
    (_PLAIN + _PLAIN.replace("Features for x:\n", ""), "out of place"),
    ("Features for x:\nrx-gro-hw: on\nscatter-gather: on\n\ttx-scatter-gather: on\n", "out of place"),
    ("Features for x:\ngeneric-receive-offload: on\nscatter-gather: on\n\ttx-scatter-gather: on\n", "out of place"),
    ("Features for x:\nscatter-gather: off\n\ttx-scatter-gather: on\n", "members are on"),
    ("Features for x:\nscatter-gather: on\n\ttx-scatter-gather: off\n", "all off"),
    ("Features for x:\nscatter-gather: on [fixed]\n\ttx-scatter-gather: on\n", "no \\[fixed\\]"),
])
def test_parse_k_refuses_what_ethtool_never_prints(text, message):
    with pytest.raises(ValueError, match=message):
        ethtool.parse_k(text)


def test_parse_k_keeps_every_line_ethtool_prints():
    # A summary with its members, a one-feature flag under its long name, a flag with no feature ("off" alone:
    # dump_features' n_match == 0) and a kernel-named feature: every feature line is kept, none dropped.
    text = _PLAIN + "tcp-segmentation-offload: off\ngeneric-receive-offload: off\nrx-gro-hw: off [fixed]\n"
    states = ethtool.parse_k(text)
    assert sorted(states) == ["rx-gro", "rx-gro-hw", "tx-scatter-gather", "tx-scatter-gather-fraglist"]
    assert not states["rx-gro"].on and states["rx-gro-hw"].fixed


def test_parse_k_reads_this_machines_ethtool(tmp_path):
    # The machine's own `ethtool -k` for every device it has: the real program's output always parses, and every
    # feature the kernel names (netdev_features_strings, from `ethtool --show-features` = -k) is in it once.
    if shutil.which("ethtool") is None:
        pytest.skip("ethtool is not installed")
    for dev in sorted(p.name for p in Path("/sys/class/net").iterdir()):
        done = subprocess.run(["ethtool", "-k", dev], capture_output=True, text=True, check=False)
        if done.returncode:
            continue
        states = ethtool.parse_k(done.stdout)
        printed = [ln for ln in done.stdout.splitlines()[1:] if ln.strip()]
        summaries = [ln for ln in printed if not ln.startswith("\t") and printed.index(ln) + 1 < len(printed)
                     and printed[printed.index(ln) + 1].startswith("\t")]
        assert len(states) == len(printed) - len(summaries), dev


_MUTATIONS = ("drop", "duplicate", "indent", "unindent", "swap", "flip", "paste")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SAMPLES), st.lists(st.tuples(st.sampled_from(_MUTATIONS), st.integers(1, 80),
                                                    st.integers(1, 80)), min_size=1, max_size=3))
def test_whatever_parse_k_accepts_ethtool_could_print(name, edits):
    # The oracle is dump_features' own layout (format_k): every line of a text parse_k accepts is one ethtool
    # prints for those states, in its order (an excerpt leaves lines out); otherwise parse_k refuses it.
    lines = sample(name).splitlines()
    for kind, i, j in edits:
        body = len(lines) - 1
        if body < 2:
            break
        i, j = 1 + i % body, 1 + j % body
        if kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "indent" and not lines[i].startswith("\t"):
            lines[i] = "\t" + lines[i]
        elif kind == "unindent":
            lines[i] = lines[i].lstrip("\t")
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "flip":
            lines[i] = lines[i].replace(": on", ": %%").replace(": off", ": on").replace(": %%", ": off")
        elif kind == "paste":
            lines += sample(SAMPLES[j % len(SAMPLES)]).splitlines()
    text = "\n".join(lines) + "\n"
    try:
        states = ethtool.parse_k(text)
    except ValueError:
        return
    # An excerpt can keep one member of a several-feature flag: print it with its full flag, as ethtool would.
    full = ethtool.parse_k(sample(name))
    shown = dict(states) | {n: s for n, s in full.items() if n not in states and any(
        ethtool.pattern_match(n, f.pattern) and any(ethtool.pattern_match(m, f.pattern) for m in states)
        for f in ethtool.LEGACY_FLAGS)}
    # (the kernel-named features' order is the kernel's bit order, which parse_k is not told: the text's is kept)
    printed = iter(ethtool.format_k(shown, states.device, list(states) + [n for n in shown if n not in states])
                   .splitlines())
    assert all(any(ln == p for p in printed) for ln in lines if ln.strip()), \
        "parse_k accepted a text dump_features cannot print"
